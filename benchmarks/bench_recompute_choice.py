"""Recompute or store, measured: with tuning on (numfuse.config(tune=...)),
a window in which the cost model recomputes cheap intermediates at their
readers runs both ways on its live runs and keeps the faster
(pipeline/tuning.h, RecomputeChoice). This runs bench_stages' stencil
workloads that way, each in a fresh schedule store, and reports per workload
what was chosen and the ratio the tuner measured (the fastest of 3 runs
each way, recomputed and stored in turn in one process).

    python benchmarks/bench_recompute_choice.py [--quick] [--only NAME[,NAME...]]

Every run's result is checked against NumPy's.
"""

import argparse
import os
import sys
import tempfile

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numfuse  # noqa: E402
from bench_stages import check, workloads  # noqa: E402

STENCILS = ("blur", "diffusion", "hdiff", "hdiff3d")


def tuned_choice(wl, fn, arrays):
    """Runs fn until the recompute choice is made (or nothing is to
    choose); returns explain()'s text for it ('' where the model recomputes
    nothing)."""
    text = ""
    for _ in range(60):
        got = fn(*arrays)
        numfuse.flush()
        ok, why = check(numpy.asarray(got), wl["fn"](numpy, *wl["args"], **wl["consts"]), wl["rtol"])
        if not ok:
            raise SystemExit(f"{wl['name']}: numfuse differs from NumPy: {why}")
        text = numfuse.explain().report["recompute_choice"]
        if "being tuned" not in text:
            break
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=",".join(STENCILS))
    args = ap.parse_args()
    rows = []
    for wl in workloads(args.quick):
        if wl["name"] not in args.only.split(","):
            continue
        arrays = [numfuse.asarray(a) for a in wl["args"]]

        def fn(*a, wl=wl):
            return wl["fn"](numfuse, *a, **wl["consts"])

        with tempfile.TemporaryDirectory() as d, numfuse.config(tune=0.05, cache_dir=d):
            text = tuned_choice(wl, fn, arrays)
            numfuse.tuning.wait()
        rows.append((wl["name"], text or "(nothing recomputed: no choice)"))
    print("| workload | recompute or store (explain) |")
    print("|---|---|")
    for name, text in rows:
        print(f"| {name} | {text} |")


if __name__ == "__main__":
    main()

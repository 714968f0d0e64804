"""The workloads of bench_stages.py under two builds of numfuse, in one run:

    python benchmarks/ab_stages.py --against /path/to/other/venv/bin/python [--rounds 2] [--only blur,softmax]

Each round runs every workload once in a process of this interpreter and
once in a process of the other one (alternating, so a slow spell of the
machine does not land on one build only); the best time of each build over
the rounds is reported with NumPy's (measured in the same processes) and the
speedup of this build over the other. This is how the multi-stage kernels'
targets ("1.5x today's numfuse") are measured against the build before them.

Besides bench_stages.py's workloads, the ones below, which only an A/B run
needs (they show one change each; no peer implementations):

  * rescaled_blur  min-max rescaling feeding the blur, the range d = hi - lo
                   also returned (a scalar prologue that stores, recorded
                   after a - lo), 2048x2048 float64
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rescaled_blur(lib, a):
    from bench_stages import blur

    lo, hi = a.min(), a.max()
    n = a - lo
    d = hi - lo
    return blur(lib, n / d), d


def extra_workloads():
    import numpy

    rng = numpy.random.default_rng(0)
    return [dict(name="rescaled_blur", fn=rescaled_blur, args=(rng.random((2048, 2048)),), consts={})]


def measure(only, repeats):
    sys.path.insert(0, HERE)
    import numpy

    import numfuse
    from bench_stages import workloads
    from common import best_of

    out = {}
    for wl in workloads(False) + extra_workloads():
        if only and wl["name"] not in only:
            continue
        fn, args, consts = wl["fn"], wl["args"], wl["consts"]
        t_np = best_of(lambda: fn(numpy, *args, **consts), repeats, warmup=1)
        nargs = [numfuse.asarray(a) for a in args]

        def run():
            r = fn(numfuse, *nargs, **consts)
            numfuse.flush()
            return r

        for _ in range(2):  # compile, then wait for background compiles and -O3 upgrades
            run()
            numfuse.wait_background()
        t_nf = best_of(run, repeats, warmup=1)
        out[wl["name"]] = {"numpy_ms": t_np * 1e3, "numfuse_ms": t_nf * 1e3}
        time.sleep(0.2)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", help="the other build's Python interpreter")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", default="")
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    only = [x for x in a.only.split(",") if x]
    if a.measure:
        print(json.dumps(measure(only, a.repeats)))
        return
    if not a.against:
        sys.exit("ab_stages: --against PYTHON is required")
    builds = {"this build": sys.executable, "other build": a.against}
    best = {b: {} for b in builds}
    for _ in range(a.rounds):
        for b, py in builds.items():
            cmd = [py, os.path.abspath(__file__), "--measure", "--repeats", str(a.repeats), "--only", a.only]
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=HERE).stdout)
            for w, r in res.items():
                cur = best[b].setdefault(w, dict(r))
                for k in r:
                    cur[k] = min(cur[k], r[k])
    print("| workload | other build: NumPy / numfuse | this build: NumPy / numfuse | this build vs other (numfuse time) |")
    print("|---|---:|---:|---:|")
    for w in best["this build"]:
        n, o = best["this build"][w], best["other build"][w]
        print(f"| {w} | {o['numpy_ms'] / o['numfuse_ms']:.2f}x | {n['numpy_ms'] / n['numfuse_ms']:.2f}x | "
              f"**{o['numfuse_ms'] / n['numfuse_ms']:.2f}x** |")


if __name__ == "__main__":
    main()

"""numfuse with and without exact division by loop invariants (the CPU
compiler's ExactDivisionPass; numfuse.config(exact_division=...)), in one
process, alternating, best of each:

    python benchmarks/ab_division.py [--rounds 6] [--repeats 10] [--threads N] [--only blur,norm]

Workloads: those of bench_stages.py (their divisions are by constants and by
row reductions) and a few plain ones -- `x / 3` over an array in memory and
over one in the cache, a row normalization, float32 and complex division by
a scalar. Prints NumPy's time, both of numfuse's and the ratio (divider time
/ exact-division time: above 1, the pass is faster).
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy  # noqa: E402

import numfuse  # noqa: E402
from bench_stages import workloads  # noqa: E402
from common import best_of  # noqa: E402


def scaled(lib, x):
    return (x + 1.0) / 3.0


def normalized(lib, x):
    return x / x.sum(axis=1, keepdims=True)


def jacobi(lib, u):
    """One Jacobi sweep's update: a power-of-two divisor (exact reciprocal)."""
    return (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4


def row_means(lib, x):
    """A mean over rows of 1024: the sums divided by 1024."""
    return x - x.mean(axis=1, keepdims=True)


def plain_workloads():
    rng = numpy.random.default_rng(1)
    return [
        dict(name="x/3 (32 MiB)", fn=scaled, args=(rng.standard_normal(1 << 22),)),
        dict(name="x/3 (256 KiB)", fn=scaled, args=(rng.standard_normal(1 << 15),)),
        dict(name="x/3 float32 (16 MiB)", fn=scaled, args=(rng.standard_normal(1 << 22).astype(numpy.float32),)),
        dict(name="x/3 complex (8 MiB)", fn=scaled,
             args=(rng.standard_normal(1 << 19) + 1j * rng.standard_normal(1 << 19),)),
        dict(name="x / x.sum(axis=1)", fn=normalized, args=(rng.random((4096, 1024)),)),
        dict(name="Jacobi (...) / 4, 2048²", fn=jacobi, args=(rng.random((2048, 2048)),)),
        dict(name="x - x.mean(axis=1)", fn=row_means, args=(rng.random((4096, 1024)),)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="threads per kernel (default: numfuse's)")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    if a.threads:
        numfuse.set_option("threads", a.threads)
    if not numfuse.get_option("exact_division"):
        sys.exit("ab_division: this CPU has no fused multiply-add; numfuse always uses the divider here")
    only = [x for x in a.only.split(",") if x]
    wls = [dict(name=w["name"], fn=w["fn"], args=w["args"], consts=w["consts"]) for w in workloads(False)]
    wls += [dict(w, consts={}) for w in plain_workloads()]
    wls = [w for w in wls if not only or w["name"] in only]
    best = {}
    for w in wls:
        best[(w["name"], "numpy")] = best_of(lambda: w["fn"](numpy, *w["args"], **w["consts"]), a.repeats)
    for r in range(a.rounds):
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            numfuse.set_option("exact_division", on)  # drops the compiled kernels: each setting compiles its own
            for w in wls:
                nargs = [numfuse.asarray(x) for x in w["args"]]

                def run():
                    res = w["fn"](numfuse, *nargs, **w["consts"])
                    numfuse.flush()
                    return res

                for _ in range(2):  # compile, then wait for background compiles and -O3 upgrades
                    run()
                    numfuse.wait_background()
                t = best_of(run, a.repeats, warmup=1)
                key = (w["name"], on)
                best[key] = min(best.get(key, t), t)
    numfuse.set_option("exact_division", True)
    print(f"threads per kernel: {numfuse.get_option('threads')}; best of {a.rounds} rounds x {a.repeats}")
    print("| workload | NumPy ms | numfuse, divider ms | numfuse, exact division ms | divider / exact |")
    print("|---|---:|---:|---:|---:|")
    for w in wls:
        n, d, e = (best[(w["name"], k)] * 1e3 for k in ("numpy", False, True))
        print(f"| {w['name']} | {n:.3f} | {d:.3f} | {e:.3f} | **{d / e:.2f}x** |")


if __name__ == "__main__":
    main()

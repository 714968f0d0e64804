"""The NumPy functions numfuse gained natively (issue 10): sorting and
searching, set operations, quantiles, gathers and scatters, and a few of the
functions composed of native operations -- each against NumPy on the same
inputs in the same run, results checked equal.

    python benchmarks/bench_coverage.py [--quick]

Prints a table of times and NumPy/numfuse ratios (> 1: numfuse faster),
writes benchmarks/results/coverage.{json,md,png}.
"""

import json
import os
import sys
import time

import numpy

import numfuse

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def best(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = fn()
        numfuse.flush()
        ts.append(time.perf_counter() - t0)
        del r
    return min(ts)


def as_numpy(r):
    if isinstance(r, tuple):
        return tuple(as_numpy(x) for x in r)
    return numpy.asarray(r)


def workloads(scale):
    rng = numpy.random.default_rng(0)
    n = int(4_000_000 * scale)
    x = rng.standard_normal(n)
    m2 = rng.standard_normal((int(2000 * scale ** 0.5), 2000))
    ints = rng.integers(0, 10_000, n)
    srt = numpy.sort(rng.standard_normal(100_000))
    idx = rng.integers(0, m2.shape[0], m2.shape[0])
    bins = rng.integers(0, 1000, n)
    xp = numpy.sort(rng.random(1000) * 10)
    fp = rng.standard_normal(1000)
    xi = rng.random(n) * 10
    ch = rng.standard_normal((int(300 * scale ** 0.5), 300))
    yield "sort (1-D)", lambda m, a: m.sort(a["x"]), {"x": x}
    yield "sort rows (2-D)", lambda m, a: m.sort(a["m2"], axis=1), {"m2": m2}
    yield "argsort stable", lambda m, a: m.argsort(a["x"], kind="stable"), {"x": x}
    yield "unique + counts", lambda m, a: m.unique(a["i"], return_counts=True), {"i": ints}
    yield "median rows", lambda m, a: m.median(a["m2"], axis=1), {"m2": m2}
    yield "percentile 5/50/95", lambda m, a: m.percentile(a["x"], [5, 50, 95]), {"x": x}
    yield "searchsorted", lambda m, a: m.searchsorted(a["s"], a["x"]), {"s": srt, "x": x}
    yield "isin", lambda m, a: m.isin(a["i"], a["s"]), {"i": ints, "s": ints[:5000]}
    yield "interp", lambda m, a: m.interp(a["xi"], a["xp"], a["fp"]), {"xi": xi, "xp": xp, "fp": fp}
    yield "gather rows A[I]", lambda m, a: a["m2"][a["idx"]], {"m2": m2, "idx": idx}
    yield "a[a > 0] * 2", lambda m, a: a["x"][a["x"] > 0] * 2.0, {"x": x}
    yield "np.add.at histogram", lambda m, a: _add_at(m, a["b"]), {"b": bins}
    yield "nanmax / nanstd rows", lambda m, a: (m.nanmax(a["m2"], axis=1), m.nanstd(a["m2"], axis=1)), {"m2": m2}
    yield "cov", lambda m, a: m.cov(a["ch"]), {"ch": ch}
    yield "pad reflect", lambda m, a: m.pad(a["m2"], 3, mode="reflect"), {"m2": m2}
    yield "roll + tril", lambda m, a: m.tril(m.roll(a["m2"], 5, axis=1)), {"m2": m2}
    yield "nonzero", lambda m, a: m.nonzero(a["m2"] > 1.0), {"m2": m2}
    yield "argsort (default kind)", lambda m, a: m.argsort(a["m2"], axis=1), {"m2": m2}


def _add_at(m, bins):
    c = m.zeros(1000, dtype=numpy.int64)
    m.add.at(c, bins, 1)
    return c


def main():
    quick = "--quick" in sys.argv
    scale = 0.1 if quick else 1.0
    repeats = 3 if quick else 5
    rows = []
    print(f"{'workload':28s} {'numpy ms':>10s} {'numfuse ms':>11s} {'ratio':>7s}  same")
    for name, fn, args in workloads(scale):
        nargs = {k: numfuse.asarray(v.copy()) for k, v in args.items()}
        want = fn(numpy, args)
        got = as_numpy(fn(numfuse, nargs))
        want = want if isinstance(want, tuple) else want
        ok = all(numpy.allclose(g, w, equal_nan=True) for g, w in
                 zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)))
        t_np = best(lambda: fn(numpy, args), repeats)
        t_nf = best(lambda: fn(numfuse, nargs), repeats)
        rows.append(dict(name=name, numpy_ms=t_np * 1e3, numfuse_ms=t_nf * 1e3, ratio=t_np / t_nf, same=bool(ok)))
        print(f"{name:28s} {t_np * 1e3:10.2f} {t_nf * 1e3:11.2f} {t_np / t_nf:6.2f}x  {ok}")
    geo = numpy.exp(numpy.mean(numpy.log([r["ratio"] for r in rows])))
    print(f"geometric mean ratio: {geo:.2f}x (NumPy time / numfuse time, same run)")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "coverage.json"), "w") as f:
        json.dump(dict(rows=rows, geomean=geo, scale=scale), f, indent=1)
    with open(os.path.join(RESULTS, "coverage.md"), "w") as f:
        f.write("| workload | NumPy ms | numfuse ms | NumPy / numfuse | same result |\n|---|---:|---:|---:|---|\n")
        for r in rows:
            f.write(f"| {r['name']} | {r['numpy_ms']:.2f} | {r['numfuse_ms']:.2f} | {r['ratio']:.2f}x | {r['same']} |\n")
        f.write(f"\ngeometric mean {geo:.2f}x\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5))
        ax.barh([r["name"] for r in rows], [r["ratio"] for r in rows])
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_xlabel("NumPy time / numfuse time (same run)")
        ax.set_title("numfuse: natively covered NumPy functions")
        fig.tight_layout()
        fig.savefig(os.path.join(RESULTS, "coverage.png"), dpi=120)
    except ImportError:
        pass
    if not all(r["same"] for r in rows):
        sys.exit("a numfuse result differs from NumPy's")


if __name__ == "__main__":
    main()

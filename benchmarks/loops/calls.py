"""The calls Python loops make, one at a time: element reads and stores,
views, small arrays from lists, random numbers, iteration, methods,
reductions and ufuncs on 16-element arrays. Each statement is timed with
NumPy and with numfuse in the same process, interleaved (best of --repeat
repeats of --number calls), and printed sorted by the time ratio numfuse /
NumPy (> 1: numfuse slower), so the calls where numfuse still costs more
than NumPy come first.

    python benchmarks/loops/calls.py [--number N] [--repeat R] [--json-out FILE]

Timings on a shared machine move by 10-20% from run to run; a ratio is only
meaningful within one run. For a measurement that does not move, count
instructions with callgrind (see benchmarks/instructions.py).
"""

import argparse
import json
import timeit

import numpy

import numfuse

STATEMENTS = [
    "a[i]", "A[i, j]", "A[i][j]", "a[i] = 2.0", "a[i] = s", "A[i, j] = s", "A[i, j] = k", "a[i] += 1.0",
    "A[i, j] += s", "float(a[i])", "int(ia[i])", "a[i] * 2.0", "a[i] < a[j]", "A[i]", "A[:, j]", "A[i, 1:5]",
    "a[1:5]", "a[::-1]", "a[i:i+4].sum()", "np.sum(a[i:i+4])", "a.sum()", "A[i].sum()", "np.dot(a[:8], b[:8])",
    "a[:8] @ b[:8]", "len(a)", "a.shape[0]", "A.T", "A.reshape(-1)", "a.reshape(4, 4)", "a.tolist()", "A.tolist()",
    "list(a)", "for r in A: pass", "for v in a: pass", "a[ia[i]]", "a[[1, 2, 3]]", "a[a > 0.5]", "np.max(a)",
    "a.max()", "a.argmax()", "np.argmax(a)", "np.abs(a)", "a + b", "a + 1.0", "a * s", "np.sqrt(s)", "np.exp(a[i])",
    "abs(a[i])", "np.zeros(16)", "np.empty(16)", "np.zeros_like(a)", "a.copy()", "np.array([1.0, 2.0, 3.0])",
    "np.array([[1.0, 2.0], [3.0, 4.0]])", "np.asarray([1, 2, 3])", "np.arange(16)", "np.linspace(0, 1, 16)",
    "np.random.rand(4)", "np.random.rand()", "rng.random()", "rng.normal(size=8)", "rng.integers(0, 10)",
    "np.where(a > 0.5, a, 0.0)", "np.minimum(a, b)", "np.any(a > 0.9)", "np.allclose(a, b)", "np.linalg.norm(a)",
    "np.mean(a)", "np.outer(a[:4], b[:4])", "np.concatenate([a, b])", "np.stack([a, b])", "a.astype(np.float32)",
    "np.cumsum(a)", "np.sort(a)", "np.isnan(s)", "np.round(a, 2)", "a == b", "np.array_equal(a, b)", "A @ a",
    "A @ A", "np.clip(a, 0.2, 0.8)", "np.flip(a)", "np.roll(a, 1)", "np.diff(a)",
]


def namespace(np):
    g = numpy.random.default_rng(0)
    a = np.asarray(g.random(16))
    b = np.asarray(g.random(16))
    A = np.asarray(g.random((16, 16)))
    ia = np.arange(16)
    return dict(np=np, a=a, b=b, A=A, ia=ia, s=a[3], k=ia[2], i=5, j=7, rng=np.random.default_rng(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    spaces = {numpy: namespace(numpy), numfuse: namespace(numfuse)}
    rows = []
    for st in STATEMENTS:
        best = {numpy: float("inf"), numfuse: float("inf")}
        for _ in range(args.repeat):  # (interleaved: both see the same machine)
            for mod in (numpy, numfuse):
                t = timeit.timeit(st, globals=spaces[mod], number=args.number) / args.number * 1e9
                best[mod] = min(best[mod], t)
        numfuse.flush()
        rows.append((st, best[numpy], best[numfuse]))
    rows.sort(key=lambda r: -r[2] / r[1])
    print(f"{'statement':42s} {'NumPy ns':>9s} {'numfuse ns':>10s} {'numfuse/NumPy':>14s}")
    for st, tn, tf in rows:
        print(f"{st:42s} {tn:9.0f} {tf:10.0f} {tf / tn:14.2f}")
    ratios = [tf / tn for _, tn, tf in rows]
    geo = numpy.exp(numpy.mean(numpy.log(ratios)))
    slower = sum(r > 1.0 for r in ratios)
    print(f"\n{len(rows)} statements: geometric mean time ratio {geo:.2f}; numfuse slower on {slower}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"rows": [dict(statement=s, numpy_ns=tn, numfuse_ns=tf) for s, tn, tf in rows],
                       "geomean_ratio": geo}, f, indent=1)


if __name__ == "__main__":
    main()

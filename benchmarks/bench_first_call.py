"""First calls: each program once in a fresh process with an empty kernel
cache, as a person who swaps the import and runs a script (or a new
notebook cell) sees it, against NumPy's first call; the second call in the
same process beside it; Numba's first call (the same NumPy code under
``numba.njit``, where Numba compiles it) for reference. JAX where installed.

Every measurement is its own process (import excluded: it is reported once
per implementation); the implementations take turns within each round, the
rounds repeat the whole sweep, and the tables show medians. numfuse's
results are compared with NumPy's (a mismatch is reported and fails the
run).

    python benchmarks/bench_first_call.py [--rounds 3] [--only a,b] [--impls numpy,numfuse,numba,jax]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (inputs: an expression of `rng` giving a tuple of float64/int64
# NumPy arrays, the program: a function of those, written against `np`).
# Sizes are the ones such scripts use: large enough that NumPy takes a few
# milliseconds, small enough that a compile (tens of ms) would dominate.
PROGRAMS = {
    "statistic (var/sum)": ("(rng.random((600, 600)),)", """
def f(x):
    n = x.shape[1]
    return n / (n - 1) * (1 - x.var(axis=1, ddof=1).sum() / x.sum(axis=0).var(ddof=1))
"""),
    "pairwise distances": ("(rng.random((300, 3)),)", """
def f(x):
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
"""),
    "5-point stencil": ("(rng.random((1000, 1000)),)", """
def f(u):
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]
"""),
    "softmax rows": ("(rng.random((1000, 500)),)", """
def f(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""),
    "log-sum-exp rows": ("(rng.random((1000, 500)),)", """
def f(x):
    m = x.max(axis=1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=1))
"""),
    "Rosenbrock": ("(rng.random(1_000_000),)", """
def f(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
"""),
    "where log/exp mean": ("(rng.random(1_000_000),)", """
def f(x):
    return np.where(x > 0.5, np.log(x), np.exp(-x)).mean()
"""),
    "reversed cumsum": ("(rng.random(1_000_000),)", """
def f(x):
    return np.cumsum(x[::-1])[::-1]
"""),
    "standardize columns": ("(rng.random((1000, 500)),)", """
def f(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)
"""),
    "row norms": ("(rng.random((2000, 300)),)", """
def f(x):
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))
"""),
    "elementwise chain": ("(rng.random(1_000_000), rng.random(1_000_000))", """
def f(x, y):
    return np.sin(x) ** 2 + np.cos(y) ** 2 - 2.0 * x * y
"""),
    "Black-Scholes": ("(rng.random(200_000) * 50 + 50, rng.random(200_000) * 50 + 50, rng.random(200_000) + 0.1)", """
def f(s, k, t):
    r, v = 0.02, 0.3
    d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    n1 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d1 + 0.044715 * d1 ** 3)))
    n2 = 0.5 * (1.0 + np.tanh(0.7978845608 * (d2 + 0.044715 * d2 ** 3)))
    return s * n1 - k * np.exp(-r * t) * n2
"""),
    "Gaussian kernel matrix": ("(rng.random(1000), rng.random(1000))", """
def f(x, y):
    return np.exp(-((x[:, None] - y[None, :]) ** 2) / 0.1)
"""),
    "clip and sum": ("(rng.random(1_000_000),)", """
def f(x):
    return np.clip(x, 0.2, 0.8).sum()
"""),
    "arc length": ("(rng.random(1_000_000),)", """
def f(y):
    return np.sqrt(1.0 + np.diff(y) ** 2).sum()
"""),
    "count multiples (int64)": ("(rng.integers(0, 1000, 1_000_000),)", """
def f(i):
    return (i % 7 == 0).sum()
"""),
    "dense layer (matmul, bias, relu)": ("(rng.random((256, 256)), rng.random((256, 256)), rng.random(256))", """
def f(a, w, b):
    return np.maximum(a @ w + b, 0.0)
"""),
    "cosine similarity": ("(rng.random((300, 64)), rng.random((400, 64)))", """
def f(a, b):
    na = np.sqrt((a * a).sum(axis=1))
    nb = np.sqrt((b * b).sum(axis=1))
    return (a @ b.T) / (na[:, None] * nb[None, :])
"""),
    "broadcast product sum": ("(rng.random((200, 10)), rng.random((200, 10)))", """
def f(a, b):
    return (a[:, None, :] * b[None, :, :]).sum(-1)
"""),
    "column means of a product": ("(rng.random((1000, 400)), rng.random((1000, 400)))", """
def f(a, b):
    return (a * b + a).mean(axis=0)
"""),
    "Jacobi sweeps (loop)": ("(rng.random((200, 200)),)", """
def f(u):
    u = u.copy()
    for _ in range(20):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u
"""),
    "Mandelbrot iterations (loop)": ("(rng.random((200, 200)) - 0.5, rng.random((200, 200)) - 0.5)", """
def f(cr, ci):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    for _ in range(10):
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
    return zr * zr + zi * zi
"""),
    "rows in a Python loop (loop)": ("(rng.random((100, 50)),)", """
def f(x):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        row = x[i]
        out[i] = (row * row).sum() - row.mean()
    return out
"""),
}

IMPLS = ("numpy", "numfuse", "numba", "jax")


def child(impl, name, out_path):
    """One first call and one second call of `name` with `impl`, in this
    process; writes {import_s, first_s, second_s, skip} and the result."""
    t0 = time.perf_counter()
    import numpy
    rec = {"first_s": None, "second_s": None, "skip": None}
    if impl == "numfuse":
        import numfuse as np
        sync = numpy.asarray
    elif impl == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as np
        sync = numpy.asarray
    else:
        np = numpy
        sync = numpy.asarray
    rec["import_s"] = time.perf_counter() - t0
    setup, src = PROGRAMS[name]
    rng = numpy.random.default_rng(0)
    args = eval(setup, {"rng": rng})
    ns = {"np": np}
    exec(src, ns)
    fn = ns["f"]
    if impl == "numfuse":
        args = tuple(np.asarray(a) for a in args)
    elif impl == "jax":
        fn = jax.jit(fn)
        args = tuple(np.asarray(a) for a in args)
    elif impl == "numba":
        import numba
        fn = numba.njit(fn)

    def call():
        r = fn(*args)
        return sync(r)

    try:
        t0 = time.perf_counter()
        r = call()
        rec["first_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        call()
        rec["second_s"] = time.perf_counter() - t0
        numpy.save(out_path + ".npy", numpy.asarray(r))
    except Exception as e:  # noqa: BLE001 (a peer that cannot compile the program)
        rec["skip"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    with open(out_path, "w") as f:
        json.dump(rec, f)


def run_one(impl, name, tmp):
    out = os.path.join(tmp, "rec.json")
    env = dict(os.environ)
    if impl == "numfuse":
        env["NUMFUSE_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp)  # an empty kernel cache
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child", impl, name, out], env=env, check=True)
    with open(out) as f:
        rec = json.load(f)
    rec["result"] = out + ".npy" if rec["skip"] is None else None
    if rec["result"]:
        final = os.path.join(tmp, f"{impl}.{abs(hash(name))}.npy")
        os.replace(rec["result"], final)
        rec["result"] = final
    return rec


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--impls", default="numpy,numfuse,numba,jax")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "first_call"))
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    import numpy
    names = [n for n in PROGRAMS if not a.only or any(s.strip().lower() in n.lower() for s in a.only.split(","))]
    impls = []
    for i in a.impls.split(","):
        if i in ("numba", "jax"):
            try:
                __import__(i)
            except ImportError:
                print(f"({i} is not installed: n/a)")
                continue
        impls.append(i)
    recs = {(n, i): [] for n in names for i in impls}
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for n in names:
                for i in impls:
                    rec = run_one(i, n, tmp)
                    recs[(n, i)].append(rec)
                    if r == 0 and i == "numfuse" and rec["result"]:
                        ref = [x for x in recs[(n, "numpy")] if x["result"]] if "numpy" in impls else []
                        if ref:
                            got, want = numpy.load(rec["result"]), numpy.load(ref[0]["result"])
                            if got.shape != want.shape or not numpy.allclose(got, want, rtol=1e-9, atol=1e-12):
                                bad.append(n)
            print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
    med = {k: {f: median([x[f] for x in v]) for f in ("first_s", "second_s", "import_s")} for k, v in recs.items()}
    skips = {k: v[0]["skip"] for k, v in recs.items() if v and v[0]["skip"]}

    def ratio(n, i, f):
        base, t = med[(n, "numpy")][f], med[(n, i)][f]
        return base / t if base and t else None

    others = [i for i in impls if i != "numpy"]
    head = "| program | NumPy first (ms) | " + " | ".join(f"{i} first" for i in others) + " | " + \
        " | ".join(f"{i} second" for i in others if i == "numfuse") + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    cols = {(i, f): [] for i in others for f in ("first_s", "second_s")}
    for n in names:
        cells = [n, f"{1e3 * med[(n, 'numpy')]['first_s']:.2f}"]
        for i in others:
            x = ratio(n, i, "first_s")
            cols[(i, "first_s")].append(x)
            cells.append((f"{x:.2f}x" if x >= 0.1 else f"{x:.3f}x") if x else ("n/a" if (n, i) in skips else "-"))
        x = ratio(n, "numfuse", "second_s") if "numfuse" in others else None
        if "numfuse" in others:
            cols[("numfuse", "second_s")].append(x)
            cells.append(f"{x:.2f}x" if x else "-")
        lines.append("| " + " | ".join(cells) + " |")
    gm = ["**geometric mean**", ""] + [f"**{geomean(cols[(i, 'first_s')]):.3g}x**" if geomean(cols[(i, 'first_s')])
                                       else "-" for i in others]
    if "numfuse" in others:
        gm.append(f"**{geomean(cols[('numfuse', 'second_s')]):.2f}x**")
    lines.append("| " + " | ".join(gm) + " |")
    print("\nRatios: NumPy's time / the implementation's (higher is faster), medians of "
          f"{a.rounds} rounds, each call in a fresh process with an empty kernel cache.\n")
    print("\n".join(lines))
    worst = min((x for x in cols.get(("numfuse", "first_s"), []) if x), default=None)
    if worst:
        print(f"\nnumfuse first calls: worst {worst:.2f}x NumPy")
    for i in impls:
        print(f"import {i}: {1e3 * median([med[(n, i)]['import_s'] for n in names]):.0f} ms")
    for (n, i), why in sorted(skips.items()):
        print(f"  {i} {n}: {why}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(a.out + ".json", "w") as f:
        json.dump({f"{n} | {i}": v for (n, i), v in med.items()}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(10, 6))
        ys = range(len(names))
        for k, i in enumerate(others):
            vals = [ratio(n, i, "first_s") or 0 for n in names]
            ax.barh([y + 0.8 * k / len(others) for y in ys], vals, height=0.8 / len(others), label=f"{i} first call")
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yticks(list(ys))
        ax.set_yticklabels(names, fontsize=7)
        ax.set_xlabel("NumPy first call / first call (higher is faster)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.out + ".png", dpi=100)
    except ImportError:
        pass
    if bad:
        print("numfuse's results differ from NumPy's: " + ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

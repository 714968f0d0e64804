"""Native complex numbers: two workloads written as plain NumPy code (the
module is a parameter, `xp`), run side by side on NumPy and numfuse, and on
Numba and numexpr where they are importable (hand-written in each one's
idiom), on the same inputs in the same process; results checked against
NumPy's.

  * Mandelbrot, the classic NumPy version (z**2 + c, z*conj(z) > 4, masked
    assignment), complex128 and complex64; and a variant with abs and where.
  * A radix-2 Stockham (self-sorting) FFT, vectorized over the butterflies
    of each stage: one signal of 2**20 points and a batch of 64 x 2**14;
    checked against numpy.fft.fft.

    python benchmarks/bench_complex.py [--quick] [--numpy-only] [--no-peers] [--out DIR]

Times are warm (one run first: compiles, caches), best of several runs; a
numfuse run ends with numfuse.flush(). Prints a table of times and the ratio
NumPy time / implementation time (> 1: faster than NumPy), writes
bench_complex.{json,md,png} to benchmarks/results/ (or DIR). --numpy-only
runs NumPy and the peers without importing numfuse (and writes nothing
unless --out is given).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# -- the workloads, as plain NumPy code ---------------------------------------------------


def grid(xp, h, w, dtype=complex):
    """c = x + iy over [-2, 0.8] x [-1.4, 1.4]. (numpy.ogrid[-1.4:1.4:h*1j,
    -2:0.8:w*1j] gives the same grid; linspace + reshape is the form every
    array module takes.)"""
    x = xp.linspace(-2, 0.8, w).reshape(1, w)
    y = xp.linspace(-1.4, 1.4, h).reshape(h, 1)
    c = x + y * 1j
    return c if c.dtype == dtype else c.astype(dtype)


def mandelbrot(xp, h, w, maxit, dtype=complex):
    """numpy.org's Mandelbrot: the iteration count at which |z| > 2 (maxit if never)."""
    c = grid(xp, h, w, dtype)
    z = c
    divtime = maxit + xp.zeros(z.shape, dtype=int)
    for i in range(maxit):
        z = z ** 2 + c
        diverge = z * xp.conj(z) > 2 ** 2
        div_now = diverge & (divtime == maxit)
        divtime[div_now] = i
        z[diverge] = 2
    return divtime


def mandelbrot_where(xp, h, w, maxit, dtype=complex):
    """The same with abs and where instead of masked assignment (z keeps its shape, no copies in place)."""
    c = grid(xp, h, w, dtype)
    z = xp.zeros(c.shape, dtype=dtype)
    divtime = xp.full(c.shape, maxit)
    for i in range(maxit):
        z = z * z + c
        diverge = xp.abs(z) > 2
        divtime = xp.where(diverge & (divtime == maxit), i, divtime)
        z = xp.where(diverge, 2, z)
    return divtime


def fft_stockham(xp, x):
    """Radix-2 Stockham FFT over the last axis (its length a power of two).

    The signal is held as an (L, M) array per batch entry, L * M = n: row k,
    column j is bin k of the length-L DFT of the subsequence x[j::M].
    A stage pairs column j with column j + M/2 (the subsequences x[j::M] and
    x[j+M/2::M], the even and odd samples of x[j::M/2]) and combines them
    with the twiddles w_k = exp(-i pi k / L) into the length-2L DFTs:
    X[k] = E[k] + w_k O[k], X[k + L] = E[k] - w_k O[k]. After log2(n)
    stages the array is (n, 1), in natural order (no bit reversal)."""
    n = x.shape[-1]
    assert n > 0 and n & (n - 1) == 0, "length must be a power of two"
    if x.dtype.kind != "c":
        x = x.astype(complex)
    batch = tuple(x.shape[:-1])
    X = x.reshape(batch + (1, n))
    L = 1
    while L < n:
        half = X.shape[-1] // 2
        even = X[..., :half]
        odd = X[..., half:]
        w = xp.exp((-1j * math.pi / L) * xp.arange(L)).reshape(L, 1)
        if w.dtype != x.dtype:
            w = w.astype(x.dtype)
        t = w * odd
        X = xp.concatenate([even + t, even - t], axis=-2)
        L *= 2
    return X.reshape(batch + (n,))


# -- the peers, each in its own idiom ---------------------------------------------------------


def numba_impls():
    try:
        import numba
        from numba import prange
    except Exception:
        return None

    @numba.njit(parallel=True, cache=False)
    def mandel(c, maxit, start_at_c):
        h, w = c.shape
        div = numpy.full((h, w), maxit, numpy.int64)
        for r in prange(h):
            for q in range(w):
                cc = c[r, q]
                z = cc if start_at_c else cc * 0
                for i in range(maxit):
                    z = z * z + cc
                    if z.real * z.real + z.imag * z.imag > 4.0:
                        div[r, q] = i
                        break
        return div

    @numba.njit(parallel=True, cache=False)
    def stockham(x2):  # (batch, n) complex
        B, n = x2.shape
        a = x2.copy()
        b = numpy.empty_like(a)
        L = 1
        while L < n:
            M = n // L
            half = M // 2
            tw = numpy.exp((-1j * numpy.pi / L) * numpy.arange(L)).astype(a.dtype)
            for idx in prange(L * half):
                k = idx // half
                j = idx - k * half
                wk = tw[k]
                for bb in range(B):
                    e = a[bb, k * M + j]
                    t = wk * a[bb, k * M + j + half]
                    b[bb, k * half + j] = e + t
                    b[bb, (k + L) * half + j] = e - t
            a, b = b, a
            L *= 2
        return a

    def run_mandel(h, w, maxit, dtype, variant):
        c = grid(numpy, h, w, dtype)
        return mandel(c, maxit, variant == "classic")

    def run_fft(x):
        return stockham(x.reshape(-1, x.shape[-1])).reshape(x.shape)

    return run_mandel, run_fft


def numexpr_impls():
    try:
        import numexpr as ne
    except Exception:
        return None
    try:  # numexpr's complex functions: conj, real, abs (complex -> complex modulus)
        z = numpy.array([1 + 2j])
        ne.evaluate("real(z * conj(z))")
        ne.evaluate("real(abs(z)) > 2")
    except Exception:
        return None

    def run_mandel(h, w, maxit, dtype, variant):
        c = grid(numpy, h, w, dtype)
        if variant == "classic":
            z = c.copy()
            divtime = maxit + numpy.zeros(z.shape, dtype=int)
            for i in range(maxit):
                z = ne.evaluate("z * z + c")
                diverge = ne.evaluate("real(z * conj(z)) > 4")
                div_now = ne.evaluate("diverge & (divtime == maxit)")
                divtime[div_now] = i
                z[diverge] = 2
            return divtime
        z = numpy.zeros(c.shape, dtype=dtype)
        divtime = numpy.full(c.shape, maxit)
        two = numpy.array(2, dtype=dtype)
        for i in range(maxit):
            z = ne.evaluate("z * z + c")
            diverge = ne.evaluate("real(abs(z)) > 2")
            divtime = ne.evaluate("where(diverge & (divtime == maxit), i, divtime)")
            z = ne.evaluate("where(diverge, two, z)")
        return divtime

    def run_fft(x):
        n = x.shape[-1]
        x = x.astype(complex) if x.dtype.kind != "c" else x
        batch = tuple(x.shape[:-1])
        X = x.reshape(batch + (1, n))
        L = 1
        while L < n:
            half = X.shape[-1] // 2
            even = X[..., :half]
            odd = X[..., half:]
            w = numpy.exp((-1j * math.pi / L) * numpy.arange(L)).reshape(L, 1).astype(x.dtype)
            X = numpy.concatenate([ne.evaluate("even + w * odd"), ne.evaluate("even - w * odd")], axis=-2)
            L *= 2
        return X.reshape(batch + (n,))

    return run_mandel, run_fft


# -- harness ---------------------------------------------------------------------------------


def best(fn, repeats, sync=None):
    """Warm (one run first), then the best of `repeats` runs; `sync` ends a run (numfuse.flush)."""
    r = fn()
    if sync:
        sync()
    del r
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = fn()
        if sync:
            sync()
        ts.append(time.perf_counter() - t0)
        del r
    return min(ts)


def mandel_check(ref):
    """Iteration counts equal to NumPy's, but for a handful of points on the
    set's boundary (their orbits are chaotic: an fma or a different rounding
    in z**2 can move one across |z| = 2 an iteration earlier or later)."""
    def ok(got):
        bad = int(numpy.count_nonzero(numpy.asarray(got) != ref))
        return bad <= max(2, ref.size // 10_000), f"{bad} of {ref.size} counts differ"
    return ok


def fft_check(x):
    ref = numpy.fft.fft(x)
    tol = 1e-4 if x.dtype == numpy.complex64 else 1e-9
    scale = float(numpy.abs(ref).max())

    def ok(got):
        g = numpy.asarray(got)
        err = float(numpy.abs(g - ref).max()) / scale
        return g.shape == ref.shape and err <= tol, f"max error {err:.1e} of max |X|"
    return ok


def workloads(quick):
    h, w, maxit = (200, 300, 20) if quick else (1000, 1500, 20)
    n = 2 ** 14 if quick else 2 ** 20
    batch = (8, 2 ** 10) if quick else (64, 2 ** 14)
    rng = numpy.random.default_rng(0)
    x1 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    xb = rng.standard_normal(batch) + 1j * rng.standard_normal(batch)
    for name, fn, dtype, variant in (
            (f"mandelbrot {h}x{w}, {maxit} it (complex128)", mandelbrot, numpy.complex128, "classic"),
            (f"mandelbrot {h}x{w}, {maxit} it (complex64)", mandelbrot, numpy.complex64, "classic"),
            (f"mandelbrot abs/where {h}x{w} (complex128)", mandelbrot_where, numpy.complex128, "where")):
        ref = fn(numpy, h, w, maxit, dtype)
        yield dict(name=name, kind="mandel", args=(h, w, maxit, dtype, variant), ref=ref, check=mandel_check(ref),
                   run=lambda xp, fn=fn, dtype=dtype: fn(xp, h, w, maxit, dtype))
    for name, x in ((f"stockham fft n=2**{int(math.log2(n))}", x1),
                    (f"stockham fft batch {batch[0]}x2**{int(math.log2(batch[1]))}", xb)):
        held = {}  # the input as each module's array, converted once (outside the timed runs)

        def run(xp, x=x, held=held):
            if xp.__name__ not in held:
                held[xp.__name__] = x if xp is numpy else xp.asarray(x)
            return fft_stockham(xp, held[xp.__name__])

        yield dict(name=name, kind="fft", args=(x,), ref=None, check=fft_check(x), run=run)


def plot(rows, impls, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # matplotlib is optional
        print(f"(no plot: {e})")
        return
    others = [i for i in impls if i != "NumPy"]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.9 * len(rows)))
    height = 0.8 / max(len(others), 1)
    for k, impl in enumerate(others):
        ys, xs = [], []
        for j, r in enumerate(rows):
            t = r["ms"].get(impl)
            if t:
                ys.append(j + k * height)
                xs.append(r["ms"]["NumPy"] / t)
        ax.barh(ys, xs, height, label=impl)
        for y, v in zip(ys, xs):
            ax.text(v, y, f" {v:.2f}x", va="center", fontsize=7)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([j + height * (len(others) - 1) / 2 for j in range(len(rows))])
    ax.set_yticklabels([r["name"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("NumPy time / implementation time (same run, log scale; > 1: faster than NumPy)")
    ax.set_title(f"complex workloads ({os.cpu_count()} cores)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not for reporting)")
    ap.add_argument("--numpy-only", action="store_true", help="do not import numfuse (NumPy and the peers only)")
    ap.add_argument("--no-peers", action="store_true", help="skip Numba and numexpr")
    ap.add_argument("--repeats", type=int, default=None, help="timed runs per implementation (best is kept)")
    ap.add_argument("--out", default=None, help=f"folder for bench_complex.{{json,md,png}} (default {RESULTS}; "
                                                "with --numpy-only nothing is written unless given)")
    args = ap.parse_args()
    repeats = args.repeats or (2 if args.quick else 3)

    impls = {"NumPy": (lambda wl: (lambda: wl["run"](numpy)), None)}
    if not args.numpy_only:
        import numfuse

        impls["numfuse"] = (lambda wl: (lambda: wl["run"](numfuse)), numfuse.flush)
    if not args.no_peers:
        for label, make in (("Numba", numba_impls), ("numexpr", numexpr_impls)):
            got = make()
            if got is None:
                print(f"({label} not importable: skipped)")
                continue
            run_mandel, run_fft = got
            impls[label] = (lambda wl, rm=run_mandel, rf=run_fft:
                            (lambda: rm(*wl["args"]) if wl["kind"] == "mandel" else rf(*wl["args"])), None)

    names = list(impls)
    head = f"{'workload':44s} " + " ".join(f"{n + ' ms':>12s} {'ratio':>6s}" for n in names)
    print(head)
    rows, failed = [], []
    for wl in workloads(args.quick):
        row = dict(name=wl["name"], ms={}, ratio={}, check={})
        for impl, (make, sync) in impls.items():
            fn = make(wl)
            r = fn()
            if sync:
                sync()
            ok, why = wl["check"](r)
            row["check"][impl] = why
            if not ok:
                failed.append(f"{wl['name']} / {impl}: {why}")
            del r
            row["ms"][impl] = best(fn, repeats, sync) * 1e3
        for impl in names:
            row["ratio"][impl] = row["ms"]["NumPy"] / row["ms"][impl]
        rows.append(row)
        print(f"{wl['name']:44s} " + " ".join(f"{row['ms'][n]:12.1f} {row['ratio'][n]:5.2f}x" for n in names),
              flush=True)
    for impl in names[1:]:
        geo = math.exp(sum(math.log(r["ratio"][impl]) for r in rows) / len(rows))
        print(f"geometric mean NumPy / {impl}: {geo:.2f}x")

    out = args.out if args.out else (None if args.numpy_only else RESULTS)
    if out:
        os.makedirs(out, exist_ok=True)
        meta = dict(quick=args.quick, repeats=repeats, cores=os.cpu_count(), numpy=numpy.__version__)
        with open(os.path.join(out, "bench_complex.json"), "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
        with open(os.path.join(out, "bench_complex.md"), "w") as f:
            f.write("| workload | " + " | ".join(f"{n} ms" for n in names) + " | "
                    + " | ".join(f"NumPy / {n}" for n in names[1:]) + " |\n")
            f.write("|---|" + "---:|" * (2 * len(names) - 1) + "\n")
            for r in rows:
                f.write(f"| {r['name']} | " + " | ".join(f"{r['ms'][n]:.1f}" for n in names) + " | "
                        + " | ".join(f"{r['ratio'][n]:.2f}x" for n in names[1:]) + " |\n")
            f.write(f"\n{meta}\n")
        plot(rows, names, os.path.join(out, "bench_complex.png"))
    if failed:
        sys.exit("results differ from NumPy's:\n  " + "\n  ".join(failed))


if __name__ == "__main__":
    main()

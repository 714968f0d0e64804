"""Black-Scholes option pricing, the same code run by NumPy and by numfuse.

    make demo          (or: python examples/black_scholes.py [N])

The pricing function is written once against a module `np`; numfuse records
its ~50 array operations, fuses them into one kernel that makes a single pass
over the data, and compiles it (clang + LLVM ORC, OpenMP, vector math).
"""

import sys
import time

import numpy

import numfuse


def cnd(np, d):
    """Cumulative normal distribution (Abramowitz & Stegun 26.2.17)."""
    A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    RSQRT2PI = 0.39894228040143267793994605993438
    K = 1.0 / (1.0 + 0.2316419 * np.absolute(d))
    c = RSQRT2PI * np.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    return np.where(d > 0, 1.0 - c, c)


def black_scholes(np, S, X, T, R, V):
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrt_t)
    d2 = d1 - V * sqrt_t
    cnd_d1 = cnd(np, d1)
    cnd_d2 = cnd(np, d2)
    exp_rt = np.exp(-R * T)
    call = S * cnd_d1 - X * exp_rt * cnd_d2
    put = X * exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
    return call, put


def inputs(n, seed=42):
    rng = numpy.random.default_rng(seed)
    S = rng.uniform(5.0, 30.0, n)
    X = rng.uniform(1.0, 100.0, n)
    T = rng.uniform(0.25, 10.0, n)
    R = rng.uniform(0.01, 0.05, n)
    V = rng.uniform(0.1, 0.5, n)
    return S, X, T, R, V


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(n=10_000_000, repeats=5):
    host = inputs(n)
    dev = [numfuse.array(a) for a in host]
    numfuse.flush()

    # Correctness: the same function on both, compared element by element.
    ref_call, ref_put = black_scholes(numpy, *host)
    with numfuse.profile() as first:
        call, put = black_scholes(numfuse, *dev)
        numfuse.flush()
    err = max(numpy.max(numpy.abs(numpy.asarray(call) - ref_call) / (1 + numpy.abs(ref_call))),
              numpy.max(numpy.abs(numpy.asarray(put) - ref_put) / (1 + numpy.abs(ref_put))))
    ok = numpy.allclose(numpy.asarray(call), ref_call, rtol=1e-9, atol=1e-9) and \
        numpy.allclose(numpy.asarray(put), ref_put, rtol=1e-9, atol=1e-9)
    ex = numfuse.explain()

    def run_numfuse():
        c, p = black_scholes(numfuse, *dev)
        numfuse.flush()

    t_numpy = best_of(lambda: black_scholes(numpy, *host), repeats)
    t_numfuse = best_of(run_numfuse, repeats)

    print(f"Black-Scholes, {n:,} options, float64, {numfuse.get_option('threads')} threads")
    print(f"  result check : max relative difference vs NumPy {err:.2e} -> {'OK' if ok else 'MISMATCH'}")
    print(f"  kernels      : {len(ex.groups)} fused kernel(s) for {ex.report['tasks']} recorded operations")
    how = (f"{first['kernels_compiled']} kernel(s) compiled" if first["kernels_compiled"] else
           f"{first['disk_hits']} kernel(s) loaded from the disk cache" if first["disk_hits"] else
           "kernel(s) already in memory")
    print(f"  first run    : {how} in {first['compile_ms']:.1f} ms, run {first['run_ms']:.1f} ms")
    print(f"  NumPy        : {t_numpy * 1e3:8.1f} ms")
    print(f"  numfuse      : {t_numfuse * 1e3:8.1f} ms")
    print(f"  speedup      : {t_numpy / t_numfuse:8.2f}x  (same run, best of {repeats})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000))

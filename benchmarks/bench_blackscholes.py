"""Black-Scholes, the Diffuse micro-benchmark (67 fusable operations).

numfuse fuses all of it into one kernel that makes a single pass over the
data. Compared, in one run, with NumPy, numfuse unfused (one kernel per
operation), NumExpr, Numba, JAX and a hand-written fused C/OpenMP loop.
"""

import math
import os
import subprocess
import sys

import numpy

import numfuse
from common import CKernel, best_of, peer, table, timed

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from black_scholes import black_scholes, inputs  # noqa: E402

C_SOURCE = r"""
double exp(double); double log(double); double sqrt(double); double fabs(double);
static inline double cnd(double d) {
  const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = 1.330274429;
  const double RSQRT2PI = 0.39894228040143267793994605993438;
  double K = 1.0 / (1.0 + 0.2316419 * fabs(d));
  double c = RSQRT2PI * exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
  return d > 0 ? 1.0 - c : c;
}
void bs(char** p, const long long* ip, const double* fp) {
  const double *S = (const double*)p[0], *X = (const double*)p[1], *T = (const double*)p[2];
  const double *R = (const double*)p[3], *V = (const double*)p[4];
  double *call = (double*)p[5], *put = (double*)p[6];
  long long n = ip[0];
  #pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < n; ++i) {
    double sqrt_t = sqrt(T[i]);
    double d1 = (log(S[i] / X[i]) + (R[i] + 0.5 * V[i] * V[i]) * T[i]) / (V[i] * sqrt_t);
    double d2 = d1 - V[i] * sqrt_t;
    double c1 = cnd(d1), c2 = cnd(d2);
    double e = exp(-R[i] * T[i]);
    call[i] = S[i] * c1 - X[i] * e * c2;
    put[i] = X[i] * e * (1.0 - c2) - S[i] * (1.0 - c1);
  }
}
"""


def numexpr_bs(ne, S, X, T, R, V):
    cnd = ("where({d} > 0, 1.0 - {c}, {c})")
    c_of = ("(0.39894228040143267793994605993438 * exp(-0.5 * {d} * {d}) * "
            "((1.0 / (1.0 + 0.2316419 * abs({d}))) * (0.31938153 + (1.0 / (1.0 + 0.2316419 * abs({d}))) * "
            "(-0.356563782 + (1.0 / (1.0 + 0.2316419 * abs({d}))) * (1.781477937 + (1.0 / (1.0 + 0.2316419 * "
            "abs({d}))) * (-1.821255978 + (1.0 / (1.0 + 0.2316419 * abs({d}))) * 1.330274429))))))")
    d1 = ne.evaluate("(log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrt(T))")
    d2 = ne.evaluate("d1 - V * sqrt(T)")
    c1 = ne.evaluate(cnd.format(d="d1", c=c_of.format(d="d1")))
    c2 = ne.evaluate(cnd.format(d="d2", c=c_of.format(d="d2")))
    call = ne.evaluate("S * c1 - X * exp(-R * T) * c2")
    put = ne.evaluate("X * exp(-R * T) * (1.0 - c2) - S * (1.0 - c1)")
    return call, put


def numba_bs(numba):
    @numba.njit(fastmath=False)
    def cnd(d):
        K = 1.0 / (1.0 + 0.2316419 * abs(d))
        c = 0.39894228040143267793994605993438 * math.exp(-0.5 * d * d) * (
            K * (0.31938153 + K * (-0.356563782 + K * (1.781477937 + K * (-1.821255978 + K * 1.330274429)))))
        return 1.0 - c if d > 0 else c

    @numba.njit(parallel=True, fastmath=False)
    def bs(S, X, T, R, V, call, put):
        for i in numba.prange(S.shape[0]):
            sqrt_t = math.sqrt(T[i])
            d1 = (math.log(S[i] / X[i]) + (R[i] + 0.5 * V[i] * V[i]) * T[i]) / (V[i] * sqrt_t)
            d2 = d1 - V[i] * sqrt_t
            c1, c2 = cnd(d1), cnd(d2)
            e = math.exp(-R[i] * T[i])
            call[i] = S[i] * c1 - X[i] * e * c2
            put[i] = X[i] * e * (1.0 - c2) - S[i] * (1.0 - c1)

    return bs


def peak_memory_mb(mode, n):
    """Peak array memory of a fresh process running one Black-Scholes:
    NumPy's allocations as traced by tracemalloc, numfuse's live buffers
    (its own accounting, which includes every temporary it materializes)."""
    code = f"""
import sys, tracemalloc, numpy
sys.path.insert(0, {os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples')!r})
from black_scholes import black_scholes
import numfuse
lib = numpy if {mode!r} == 'numpy' else numfuse
rng = lib.random.default_rng(42)  # numfuse adopts NumPy's arrays: no copy
n = {n}
S, X, T = rng.uniform(5.0, 30.0, n), rng.uniform(1.0, 100.0, n), rng.uniform(0.25, 10.0, n)
R, V = rng.uniform(0.01, 0.05, n), rng.uniform(0.1, 0.5, n)
if lib is numpy:
    tracemalloc.start()
    c, p = black_scholes(lib, S, X, T, R, V)
    peak = tracemalloc.get_traced_memory()[1]
else:
    numfuse._core.reset_peak_memory()
    base = numfuse._core.memory()['live_bytes']
    c, p = black_scholes(lib, S, X, T, R, V)
    numfuse.flush()
    peak = numfuse._core.memory()['peak_bytes'] - base
print(peak)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return int(out[-1]) / 2**20


def run(n=10_000_000, repeats=5):
    host = inputs(n)
    dev = [numfuse.array(a) for a in host]
    numfuse.flush()
    ref_call, ref_put = black_scholes(numpy, *host)

    def check(call, put):
        return numpy.allclose(numpy.asarray(call), ref_call, rtol=1e-9, atol=1e-9) and numpy.allclose(
            numpy.asarray(put), ref_put, rtol=1e-9, atol=1e-9)

    rows = []
    extra = {}
    rows.append(("NumPy", best_of(lambda: black_scholes(numpy, *host), repeats), "one operation at a time"))

    # numfuse: first call compiles; report it, then steady state.
    with numfuse.profile() as prof:
        c, p = black_scholes(numfuse, *dev)
        numfuse.flush()
    ok = check(c, p)
    extra["first_run_ms"] = prof["total_ms"]
    extra["compile_ms"] = prof["compile_ms"]
    extra["kernels"] = len(numfuse.explain().groups)
    extra["ops"] = numfuse.explain().report["tasks"]

    def nf_run():
        c, p = black_scholes(numfuse, *dev)
        numfuse.flush()

    t_nf = best_of(nf_run, repeats)
    rows.append(("numfuse", t_nf, f"{extra['ops']} ops -> {extra['kernels']} kernel(s); results "
                                  f"{'match' if ok else 'DIFFER'}"))
    with numfuse.config(fusion=False):
        t_unf = best_of(nf_run, repeats)
    rows.append(("numfuse, fusion off", t_unf, "one kernel per operation"))

    ne = peer("numexpr")
    if ne:
        S, X, T, R, V = host
        c, p = numexpr_bs(ne, S, X, T, R, V)
        rows.append(("NumExpr", best_of(lambda: numexpr_bs(ne, S, X, T, R, V), repeats),
                     "6 evaluate() calls" + ("" if check(c, p) else "; results DIFFER")))
    else:
        rows.append(("NumExpr", None, "not installed"))
    nb = peer("numba")
    if nb:
        f = numba_bs(nb)
        call, put = numpy.empty(n), numpy.empty(n)
        _, t_compile = timed(lambda: f(*host, call, put))
        rows.append(("Numba (parallel)", best_of(lambda: f(*host, call, put), repeats),
                     f"compile {t_compile * 1e3:.0f} ms" + ("" if check(call, put) else "; results DIFFER")))
    else:
        rows.append(("Numba", None, "not installed"))
    jax = peer("jax")
    if jax:
        import jax.numpy as jnp

        jdev = [jnp.asarray(a) for a in host]
        jf = jax.jit(lambda S, X, T, R, V: black_scholes(jnp, S, X, T, R, V))
        out, t_compile = timed(lambda: [o.block_until_ready() for o in jf(*jdev)])
        rows.append(("JAX (jit, CPU)", best_of(lambda: [o.block_until_ready() for o in jf(*jdev)], repeats),
                     f"compile {t_compile * 1e3:.0f} ms" + ("" if check(*out) else "; results DIFFER")))
    else:
        rows.append(("JAX", None, "not installed"))
    ck = CKernel(C_SOURCE, "bs")
    call, put = numpy.empty(n), numpy.empty(n)
    arrays = list(host) + [call, put]
    rows.append(("hand-written C/OpenMP", best_of(lambda: ck(arrays, [n]), repeats),
                 "fused loop, same clang flags, libmvec" + ("" if check(call, put) else "; results DIFFER")))

    inputs_mb, outputs_mb = 5 * n * 8 / 2**20, 2 * n * 8 / 2**20
    mem = {mode: peak_memory_mb(mode, n) for mode in ("numpy", "numfuse")}
    extra["peak_mb_beyond_inputs"] = mem
    t_np = rows[0][1]
    extra["speedup"] = t_np / t_nf
    extra["vs_c"] = t_nf / [r for r in rows if r[0] == "hand-written C/OpenMP"][0][1]
    extra["break_even_iterations"] = math.ceil(extra["compile_ms"] / 1e3 / max(t_np - t_nf, 1e-9)) \
        if extra["compile_ms"] > 0 else 1
    text = table(f"Black-Scholes, {n:,} options, float64", rows)
    text += (f"\n\nfirst run {extra['first_run_ms']:.0f} ms (compile {extra['compile_ms']:.1f} ms); "
             f"break-even after {extra['break_even_iterations']} iteration(s); "
             f"numfuse / hand-written C = {extra['vs_c']:.2f}\n")
    text += (f"peak array memory (inputs {inputs_mb:.0f} MiB + what the computation allocates): "
             f"NumPy {(inputs_mb + mem['numpy']) / (inputs_mb + outputs_mb):.2f}x, numfuse "
             f"{(inputs_mb + mem['numfuse']) / (inputs_mb + outputs_mb):.2f}x of inputs + outputs "
             f"(allocated beyond inputs: NumPy {mem['numpy']:.0f} MiB, numfuse {mem['numfuse']:.0f} MiB)\n")
    return text, rows, extra


if __name__ == "__main__":
    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)[0])

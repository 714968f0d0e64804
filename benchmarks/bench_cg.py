"""Conjugate gradient on a dense symmetric positive definite matrix, written
the natural way (a convergence test every iteration, so every iteration
syncs). Dominated by the matrix-vector product (BLAS GEMV in both NumPy and
numfuse); the vector updates fuse.
"""

import sys

import numpy

import numfuse
from common import best_of, peak_memory_mb, table


def make_spd(n, seed=0):
    rng = numpy.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    a = m @ m.T / n + numpy.eye(n)
    b = rng.standard_normal(n)
    return a, b


def cg(np, A, b, iters, tol=1e-12):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs_old = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs_old / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        if np.sqrt(rs_new) < tol:
            break
        p = r + (rs_new / rs_old) * p
        rs_old = rs_new
    return x


def run(n=3000, iters=50, repeats=3):
    A, b = make_spd(n)
    An, bn = numfuse.array(A), numfuse.array(b)
    numfuse.flush()
    ref = cg(numpy, A, b, iters)
    rows = [("NumPy", best_of(lambda: cg(numpy, A, b, iters), repeats), f"{iters} iterations, OpenBLAS GEMV")]

    def nf_run():
        x = cg(numfuse, An, bn, iters)
        numfuse.flush()
        return x

    with numfuse.profile() as prof:
        x = nf_run()
    ok = numpy.allclose(numpy.asarray(x), ref, rtol=1e-8, atol=1e-10)
    t_nf = best_of(nf_run, repeats)
    rows.append(("numfuse", t_nf, "GEMV + fused vector updates; results " + ("match" if ok else "DIFFER")))
    with numfuse.config(fusion=False):
        rows.append(("numfuse, fusion off", best_of(nf_run, repeats), "one kernel per operation"))
    mem = peak_memory_mb("from bench_cg import cg, make_spd\nA0, b0 = make_spd(%d)\n"
                         "A1, b1 = lib.asarray(A0), lib.asarray(b0)\nnumfuse.flush()" % n,
                         f"cg(lib, A1, b1, {iters})")
    extra = {"speedup": rows[0][1] / t_nf, "compile_ms": prof["compile_ms"], "peak_mb": mem}
    text = table(f"Conjugate gradient, dense SPD {n}x{n}, {iters} iterations", rows)
    text += (f"\n\npeak array memory: NumPy {mem['numpy']:.0f} MiB, numfuse {mem['numfuse']:.0f} MiB "
             f"(matrix {n * n * 8 / 2**20:.0f} MiB)")
    return text + "\n", rows, extra


if __name__ == "__main__":
    print(run(*(int(a) for a in sys.argv[1:3]))[0])

"""The five-point Jacobi stencil of the Diffuse paper (Figure 2), written
with slices of one grid:

    work = 0.2 * (center + north + east + west + south)
    center[:] = work

numfuse fuses the five-point expression into one kernel; the write-back is a
second kernel (anti-dependence: it overwrites what the first one reads).
"""

import sys

import numpy

import numfuse
from common import CKernel, best_of, peak_memory_mb, peer, table

C_SOURCE = r"""
void jacobi(char** p, const long long* ip, const double* fp) {
  double* g = (double*)p[0];
  double* work = (double*)p[1];
  const long long n = ip[0], iters = ip[1], w = n + 2;
  for (long long it = 0; it < iters; ++it) {
    #pragma omp parallel for schedule(static)
    for (long long i = 1; i <= n; ++i) {
      #pragma omp simd
      for (long long j = 1; j <= n; ++j)
        work[(i - 1) * n + (j - 1)] = 0.2 * (g[i * w + j] + g[(i - 1) * w + j] + g[i * w + j + 1] +
                                             g[i * w + j - 1] + g[(i + 1) * w + j]);
    }
    #pragma omp parallel for schedule(static)
    for (long long i = 1; i <= n; ++i) {
      #pragma omp simd
      for (long long j = 1; j <= n; ++j) g[i * w + j] = work[(i - 1) * n + (j - 1)];
    }
  }
}
"""


def init_grid(lib, n):
    grid = lib.zeros((n + 2, n + 2))
    grid[0, :] = 1.0  # hot top edge
    grid[:, 0] = 0.5
    return grid


def jacobi(lib, grid, iters):
    n = grid.shape[0] - 2
    center = grid[1:-1, 1:-1]
    north = grid[0:-2, 1:-1]
    east = grid[1:-1, 2:]
    west = grid[1:-1, 0:-2]
    south = grid[2:, 1:-1]
    for _ in range(iters):
        work = 0.2 * (center + north + east + west + south)
        center[:] = work
    return grid


def run(n=2000, iters=50, repeats=3):
    rows = []
    extra = {}
    ref = jacobi(numpy, init_grid(numpy, n), iters)

    def np_run():
        jacobi(numpy, init_grid(numpy, n), iters)

    rows.append(("NumPy", best_of(np_run, repeats), f"{iters} iterations"))

    def nf_run():
        g = jacobi(numfuse, init_grid(numfuse, n), iters)
        numfuse.flush()
        return g

    with numfuse.profile() as prof:
        g = nf_run()
    extra["first_run_ms"] = prof["total_ms"]
    extra["compile_ms"] = prof["compile_ms"]
    ok = numpy.allclose(numpy.asarray(g), ref, rtol=1e-12, atol=1e-12)
    # What one iteration ran as (explain() of a single-iteration flush).
    # Tier 'lazy': a 64x64 grid is small enough for the auto tier to run it
    # operation by operation, and explain() would then describe the last flush.
    with numfuse.config(tier="lazy"):
        gg = init_grid(numfuse, 64)
        numfuse.flush()
        jacobi(numfuse, gg, 1)
        numfuse.flush()
        ex = numfuse.explain()
    extra["explain"] = str(ex)
    extra["kernels_per_iteration"] = len(ex.groups)
    t_nf = best_of(nf_run, repeats)
    rows.append(("numfuse", t_nf, f"{extra['kernels_per_iteration']} kernels per iteration; results "
                                  f"{'match' if ok else 'DIFFER'}"))
    with numfuse.config(fusion=False):
        rows.append(("numfuse, fusion off", best_of(nf_run, repeats), "one kernel per operation"))

    ne = peer("numexpr")
    if ne:
        def ne_run():
            grid = init_grid(numpy, n)
            c, no, e, w, s = grid[1:-1, 1:-1], grid[0:-2, 1:-1], grid[1:-1, 2:], grid[1:-1, 0:-2], grid[2:, 1:-1]
            work = numpy.empty((n, n))
            for _ in range(iters):
                ne.evaluate("0.2 * (c + no + e + w + s)", out=work)
                c[:] = work
            return grid

        ok_ne = numpy.allclose(ne_run(), ref)
        rows.append(("NumExpr", best_of(ne_run, repeats), "evaluate() on the five views" +
                     ("" if ok_ne else "; results DIFFER")))
    nb = peer("numba")
    if nb:
        @nb.njit(parallel=True)
        def nb_iter(grid, work, iters):
            n = grid.shape[0] - 2
            for _ in range(iters):
                for i in nb.prange(1, n + 1):
                    for j in range(1, n + 1):
                        work[i - 1, j - 1] = 0.2 * (grid[i, j] + grid[i - 1, j] + grid[i, j + 1] + grid[i, j - 1] +
                                                    grid[i + 1, j])
                for i in nb.prange(1, n + 1):
                    for j in range(1, n + 1):
                        grid[i, j] = work[i - 1, j - 1]

        def nb_run():
            grid = init_grid(numpy, n)
            nb_iter(grid, numpy.empty((n, n)), iters)
            return grid

        ok_nb = numpy.allclose(nb_run(), ref)
        rows.append(("Numba (parallel)", best_of(nb_run, repeats), "hand-written prange loops" +
                     ("" if ok_nb else "; results DIFFER")))
    jax = peer("jax")
    if jax:
        import jax.numpy as jnp

        @jax.jit
        def jx(grid):
            def body(_, g):
                work = 0.2 * (g[1:-1, 1:-1] + g[0:-2, 1:-1] + g[1:-1, 2:] + g[1:-1, 0:-2] + g[2:, 1:-1])
                return g.at[1:-1, 1:-1].set(work)
            return jax.lax.fori_loop(0, iters, body, grid)

        g0 = jnp.asarray(init_grid(numpy, n))
        ok_jx = numpy.allclose(numpy.asarray(jx(g0).block_until_ready()), ref)
        rows.append(("JAX (jit, CPU)", best_of(lambda: jx(g0).block_until_ready(), repeats),
                     "fori_loop with functional .at[].set" + ("" if ok_jx else "; results DIFFER")))
    ck = CKernel(C_SOURCE, "jacobi")

    def c_run():
        grid = init_grid(numpy, n)
        ck([grid, numpy.empty((n, n))], [n, iters])
        return grid

    ok_c = numpy.allclose(c_run(), ref)
    rows.append(("hand-written C/OpenMP", best_of(c_run, repeats), "two passes per iteration" +
                 ("" if ok_c else "; results DIFFER")))
    t_np = rows[0][1]
    extra["speedup"] = t_np / t_nf
    per_iter_gain = (t_np - t_nf) / iters
    extra["break_even_iterations"] = int(numpy.ceil(extra["compile_ms"] / 1e3 / per_iter_gain)) \
        if per_iter_gain > 0 else None
    mem = peak_memory_mb("from bench_stencil import init_grid, jacobi", f"jacobi(lib, init_grid(lib, {n}), {iters})")
    extra["peak_mb"] = mem
    text = table(f"Five-point Jacobi stencil (Diffuse Fig. 2), {n}x{n} grid, {iters} iterations", rows)
    text += (f"\n\nfirst run {extra['first_run_ms']:.0f} ms (compile {extra['compile_ms']:.1f} ms); "
             f"break-even after {extra['break_even_iterations']} iteration(s)\n"
             f"peak array memory: NumPy {mem['numpy']:.0f} MiB, numfuse {mem['numfuse']:.0f} MiB "
             f"(grid {(n + 2) ** 2 * 8 / 2**20:.0f} MiB)\n")
    return text, rows, extra


if __name__ == "__main__":
    text, rows, extra = run(*(int(a) for a in sys.argv[1:3]))
    print(text)
    print(extra["explain"])

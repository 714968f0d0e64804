"""Multi-stage workloads: stencil chains, and reductions whose results feed
their consumers. Every workload is plain NumPy code (the module is a
parameter, `lib`), run side by side in one process on the same inputs:

  * blur       separable 3-point blur chain, rows then columns (bx feeds by)
  * diffusion  3-stage fourth-order diffusion: Laplacian -> fluxes -> update
  * hdiff      COSMO / GridTools horizontal diffusion with flux limiters, 2-D
  * hdiff3d    the same on a (k, j, i) field, every k-plane independent
  * softmax    over rows: max -> exp, sum -> divide
  * logsoftmax over rows: max -> sum of exp -> x - m - log(s)
  * layernorm  over rows: mean -> variance -> standardize
  * cg         a few conjugate-gradient iterations on the 2-D 5-point
               Laplacian, applied matrix-free with slices

Implementations: NumPy (the baseline), numfuse with multi-stage kernels off
(numfuse.config(stages=False); where this numfuse has no 'stages' option,
plain numfuse, labelled so), numfuse (default), numfuse with cheap
intermediates stored rather than recomputed at their readers
(numfuse.config(recompute=False), where the option exists), hand-written fused
C/OpenMP loops (common.CKernel: one pass computing the last stage from the
inputs, for blur, diffusion, hdiff and the row reductions), and the peers
where they are importable: Numba (@njit(parallel=True) loops), JAX (jit, CPU)
and, for the blur, scipy.ndimage.uniform_filter1d (its edges differ: only the
interior is compared and it computes the full image).

    python benchmarks/bench_stages.py [--quick] [--only NAME[,NAME...]] [--repeats N]
                                      [--no-peers] [--out DIR]

Every implementation's result is checked against NumPy's (numpy.allclose)
before anything is timed; a mismatch aborts. Times are warm (one run first:
compiles, caches), best of several runs; a numfuse run ends with
numfuse.flush(), a JAX run with block_until_ready(). Prints a table per
workload (time, NumPy time / implementation time), numfuse's speedup over
numfuse with stages off, numfuse's time over the hand-written C's, and the
memory traffic a fused multi-stage kernel saves: the bytes of the
intermediate arrays (each stage's result that a later stage reads, and each
reduction's input array) that NumPy and a stage-at-a-time execution write and
read back. Writes bench_stages.{json,md,png} to benchmarks/results/ (or DIR).
--quick: small sizes, 1 timed run (a smoke run, not for reporting; written as
bench_stages_quick.{json,md,png}, next to the reporting run's files).
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numfuse  # noqa: E402
from common import RESULTS, CKernel, best_of, machine, peer  # noqa: E402

F64 = 8  # bytes per float64


# -- the workloads, as plain NumPy code --------------------------------------------------------


def blur(lib, a):
    """Separable 3-point box blur: rows, then columns of the row-blurred image."""
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    by = (bx[:-2, :] + bx[1:-1, :] + bx[2:, :]) / 3
    return by


def diffusion(lib, u, alpha):
    """Fourth-order diffusion in three stages: the Laplacian (n-2, n-2), its
    differences along x (n-2, n-3) and y (n-3, n-2), and the update from their
    divergence (n-4, n-4): out = u - alpha * lap(lap(u)) on the inner points."""
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    flux_x = lap[:, 1:] - lap[:, :-1]
    flux_y = lap[1:, :] - lap[:-1, :]
    out = u[2:-2, 2:-2] - alpha * (flux_x[1:-1, 1:] - flux_x[1:-1, :-1] + flux_y[1:, 1:-1] - flux_y[:-1, 1:-1])
    return out


def hdiff(lib, inp, coeff):
    """COSMO / GridTools horizontal diffusion over the last two axes (y, x),
    any leading axes (k-planes) independent. lap on (ny-2, nx-2); the fluxes
    between neighbouring Laplacians, zeroed where they run up the gradient of
    `inp` (the limiter); the update on (ny-4, nx-4)."""
    lap = 4 * inp[..., 1:-1, 1:-1] - (inp[..., 1:-1, 2:] + inp[..., 1:-1, :-2] + inp[..., 2:, 1:-1] +
                                      inp[..., :-2, 1:-1])
    flx = lap[..., :, 1:] - lap[..., :, :-1]  # between x and x+1: (ny-2, nx-3)
    flx = lib.where(flx * (inp[..., 1:-1, 2:-1] - inp[..., 1:-1, 1:-2]) > 0, 0, flx)
    fly = lap[..., 1:, :] - lap[..., :-1, :]  # between y and y+1: (ny-3, nx-2)
    fly = lib.where(fly * (inp[..., 2:-1, 1:-1] - inp[..., 1:-2, 1:-1]) > 0, 0, fly)
    return inp[..., 2:-2, 2:-2] - coeff[..., 2:-2, 2:-2] * (flx[..., 1:-1, 1:] - flx[..., 1:-1, :-1] +
                                                           fly[..., 1:, 1:-1] - fly[..., :-1, 1:-1])


def softmax(lib, x):
    m = x.max(axis=1, keepdims=True)
    e = lib.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def log_softmax(lib, x):
    m = x.max(axis=1, keepdims=True)
    return x - m - lib.log(lib.exp(x - m).sum(axis=1, keepdims=True))


def layernorm(lib, x):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / lib.sqrt(var + 1e-5)


def cg(lib, b, iters):
    """`iters` conjugate-gradient iterations for A x = b, A the 5-point
    Laplacian with zero Dirichlet boundary, x0 = 0. The vectors are grids
    with a zero halo ((n+2, n+2)); A is applied to the interior with slices."""
    x = lib.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = (r * r).sum()
    for _ in range(iters):
        Ap = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
        alpha = rr / (p[1:-1, 1:-1] * Ap).sum()
        x += alpha * p
        r[1:-1, 1:-1] -= alpha * Ap
        rr_new = (r * r).sum()
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def cg_jax(jnp, b, iters):
    """cg() for JAX: its arrays are immutable (the residual's update is .at[].add)."""
    x = jnp.zeros_like(b)
    r = b
    p = r
    rr = (r * r).sum()
    for _ in range(iters):
        Ap = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
        alpha = rr / (p[1:-1, 1:-1] * Ap).sum()
        x = x + alpha * p
        r = r.at[1:-1, 1:-1].add(-(alpha * Ap))
        rr_new = (r * r).sum()
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


# -- hand-written fused C/OpenMP: one pass from the inputs to the last stage --------------------
# Same operations in the same order as the NumPy code (no fast-math, no contraction), so the
# results agree with NumPy's to the last bit or nearly (libm's exp and log against NumPy's).

C_SOURCE = r"""
double exp(double); double log(double); double sqrt(double);

/* blur: a (nr, nc) -> out (nr-2, nc-2). Each block of B output rows keeps the
   last three row-blurred rows in a per-thread ring (3 rows, in cache): every
   row of a is read once per block, bx is never written to memory. */
void blur(char** p, const long long* ip, const double* fp) {
  const double* a = (const double*)p[0];
  double* out = (double*)p[1];
  const long long nr = ip[0], nc = ip[1], B = ip[2];
  const long long m = nc - 2, orows = nr - 2, nblk = (orows + B - 1) / B;
  #pragma omp parallel
  {
    double ring[3 * m];
    #pragma omp for schedule(static)
    for (long long b = 0; b < nblk; ++b) {
      const long long i0 = b * B, i1 = i0 + B < orows ? i0 + B : orows;
      for (long long r = i0; r < i1 + 2; ++r) {
        double* dst = ring + (r % 3) * m;
        const double* src = a + r * nc;
        #pragma omp simd
        for (long long j = 0; j < m; ++j) dst[j] = (src[j] + src[j + 1] + src[j + 2]) / 3.0;
        if (r >= i0 + 2) {
          const long long i = r - 2;
          const double* r0 = ring + (i % 3) * m;
          const double* r1 = ring + ((i + 1) % 3) * m;
          const double* r2 = ring + ((i + 2) % 3) * m;
          double* o = out + i * m;
          #pragma omp simd
          for (long long j = 0; j < m; ++j) o[j] = (r0[j] + r1[j] + r2[j]) / 3.0;
        }
      }
    }
  }
}

/* diffusion: u (n, n) -> out (n-4, n-4), the five Laplacians each point
   needs recomputed from u (no lap, flux_x, flux_y arrays). */
#define U(i, j) u[(i) * n + (j)]
static inline double lap5(const double* u, long long n, long long i, long long j) {
  return U(i - 1, j) + U(i + 1, j) + U(i, j - 1) + U(i, j + 1) - 4.0 * U(i, j);
}
void diffusion(char** p, const long long* ip, const double* fp) {
  const double* u = (const double*)p[0];
  double* out = (double*)p[1];
  const long long n = ip[0];
  const double alpha = fp[0];
  #pragma omp parallel for schedule(static)
  for (long long i = 2; i < n - 2; ++i) {
    double* o = out + (i - 2) * (n - 4);
    #pragma omp simd
    for (long long j = 2; j < n - 2; ++j) {
      const double c = lap5(u, n, i, j);
      const double fx1 = lap5(u, n, i, j + 1) - c, fx0 = c - lap5(u, n, i, j - 1);
      const double fy1 = lap5(u, n, i + 1, j) - c, fy0 = c - lap5(u, n, i - 1, j);
      o[j - 2] = U(i, j) - alpha * (fx1 - fx0 + fy1 - fy0);
    }
  }
}
#undef U

/* hdiff: inp, coeff (nk, ny, nx) -> out (nk, ny-4, nx-4), limited fluxes
   recomputed per point from inp. */
#define IN(i, j) in[(i) * nx + (j)]
static inline double hlap(const double* in, long long nx, long long i, long long j) {
  return 4.0 * IN(i, j) - (IN(i, j + 1) + IN(i, j - 1) + IN(i + 1, j) + IN(i - 1, j));
}
static inline double flx(const double* in, long long nx, long long i, long long j) { /* x: j -> j+1 */
  const double f = hlap(in, nx, i, j + 1) - hlap(in, nx, i, j);
  return f * (IN(i, j + 1) - IN(i, j)) > 0 ? 0.0 : f;
}
static inline double fly(const double* in, long long nx, long long i, long long j) { /* y: i -> i+1 */
  const double f = hlap(in, nx, i + 1, j) - hlap(in, nx, i, j);
  return f * (IN(i + 1, j) - IN(i, j)) > 0 ? 0.0 : f;
}
void hdiff(char** p, const long long* ip, const double* fp) {
  const double* in0 = (const double*)p[0];
  const double* coeff0 = (const double*)p[1];
  double* out0 = (double*)p[2];
  const long long nk = ip[0], ny = ip[1], nx = ip[2];
  #pragma omp parallel for collapse(2) schedule(static)
  for (long long k = 0; k < nk; ++k)
    for (long long i = 2; i < ny - 2; ++i) {
      const double* in = in0 + k * ny * nx;
      const double* co = coeff0 + k * ny * nx + i * nx;
      double* o = out0 + k * (ny - 4) * (nx - 4) + (i - 2) * (nx - 4);
      #pragma omp simd
      for (long long j = 2; j < nx - 2; ++j)
        o[j - 2] = IN(i, j) - co[j] * (flx(in, nx, i, j) - flx(in, nx, i, j - 1) + fly(in, nx, i, j) -
                                       fly(in, nx, i - 1, j));
    }
}
#undef IN

/* Row reductions: x (R, C) -> out (R, C), one row per iteration, the row in cache. */
void softmax(char** p, const long long* ip, const double* fp) {
  const double* x = (const double*)p[0];
  double* out = (double*)p[1];
  const long long R = ip[0], C = ip[1];
  #pragma omp parallel for schedule(static)
  for (long long i = 0; i < R; ++i) {
    const double* xi = x + i * C;
    double* oi = out + i * C;
    double m = xi[0], s = 0.0;
    #pragma omp simd reduction(max : m)
    for (long long j = 0; j < C; ++j) m = xi[j] > m ? xi[j] : m;
    #pragma omp simd reduction(+ : s)
    for (long long j = 0; j < C; ++j) { const double e = exp(xi[j] - m); oi[j] = e; s += e; }
    #pragma omp simd
    for (long long j = 0; j < C; ++j) oi[j] = oi[j] / s;
  }
}

void log_softmax(char** p, const long long* ip, const double* fp) {
  const double* x = (const double*)p[0];
  double* out = (double*)p[1];
  const long long R = ip[0], C = ip[1];
  #pragma omp parallel for schedule(static)
  for (long long i = 0; i < R; ++i) {
    const double* xi = x + i * C;
    double* oi = out + i * C;
    double m = xi[0], s = 0.0;
    #pragma omp simd reduction(max : m)
    for (long long j = 0; j < C; ++j) m = xi[j] > m ? xi[j] : m;
    #pragma omp simd reduction(+ : s)
    for (long long j = 0; j < C; ++j) s += exp(xi[j] - m);
    const double ls = log(s);
    #pragma omp simd
    for (long long j = 0; j < C; ++j) oi[j] = xi[j] - m - ls;
  }
}

void layernorm(char** p, const long long* ip, const double* fp) {
  const double* x = (const double*)p[0];
  double* out = (double*)p[1];
  const long long R = ip[0], C = ip[1];
  #pragma omp parallel for schedule(static)
  for (long long i = 0; i < R; ++i) {
    const double* xi = x + i * C;
    double* oi = out + i * C;
    double s = 0.0, v = 0.0;
    #pragma omp simd reduction(+ : s)
    for (long long j = 0; j < C; ++j) s += xi[j];
    const double mu = s / (double)C;
    #pragma omp simd reduction(+ : v)
    for (long long j = 0; j < C; ++j) { const double d = xi[j] - mu; v += d * d; }
    const double sd = sqrt(v / (double)C + 1e-5);
    #pragma omp simd
    for (long long j = 0; j < C; ++j) oi[j] = (xi[j] - mu) / sd;
  }
}
"""


def c_impls():
    """name -> callable(*arrays, **consts) running the hand-written fused loop."""
    ks = {k: CKernel(C_SOURCE, k) for k in ("blur", "diffusion", "hdiff", "softmax", "log_softmax", "layernorm")}

    def c_blur(a):
        out = numpy.empty((a.shape[0] - 2, a.shape[1] - 2))
        ks["blur"]([a, out], [a.shape[0], a.shape[1], 32])
        return out

    def c_diffusion(u, alpha):
        n = u.shape[0]
        out = numpy.empty((n - 4, n - 4))
        ks["diffusion"]([u, out], [n], [alpha])
        return out

    def c_hdiff(inp, coeff):
        ny, nx = inp.shape[-2:]
        nk = inp.size // (ny * nx)
        out = numpy.empty(inp.shape[:-2] + (ny - 4, nx - 4))
        ks["hdiff"]([inp, coeff, out], [nk, ny, nx])
        return out

    def rows(kernel):
        def run(x):
            out = numpy.empty_like(x)
            ks[kernel]([x, out], list(x.shape))
            return out
        return run

    return {"blur": c_blur, "diffusion": c_diffusion, "hdiff": c_hdiff, "hdiff3d": c_hdiff,
            "softmax": rows("softmax"), "logsoftmax": rows("log_softmax"), "layernorm": rows("layernorm")}


# -- the peers, each in its own idiom ----------------------------------------------------------


def numba_impls(nb):
    """name -> callable(*arrays, **consts): @njit(parallel=True) loops, every
    stage computed per point from the inputs (Numba's natural fused form).
    Numba compiles each on its first call."""
    njit, prange = nb.njit, nb.prange

    @njit(parallel=True)
    def nb_blur(a):
        nr, nc = a.shape
        out = numpy.empty((nr - 2, nc - 2))
        for i in prange(nr - 2):
            for j in range(nc - 2):
                b0 = (a[i, j] + a[i, j + 1] + a[i, j + 2]) / 3
                b1 = (a[i + 1, j] + a[i + 1, j + 1] + a[i + 1, j + 2]) / 3
                b2 = (a[i + 2, j] + a[i + 2, j + 1] + a[i + 2, j + 2]) / 3
                out[i, j] = (b0 + b1 + b2) / 3
        return out

    @njit(inline="always")
    def lap5(u, i, j):
        return u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4 * u[i, j]

    @njit(parallel=True)
    def nb_diffusion(u, alpha):
        n = u.shape[0]
        out = numpy.empty((n - 4, n - 4))
        for i in prange(2, n - 2):
            for j in range(2, n - 2):
                c = lap5(u, i, j)
                d = (lap5(u, i, j + 1) - c) - (c - lap5(u, i, j - 1)) + (lap5(u, i + 1, j) - c) - \
                    (c - lap5(u, i - 1, j))
                out[i - 2, j - 2] = u[i, j] - alpha * d
        return out

    @njit(inline="always")
    def hlap(a, k, i, j):
        return 4 * a[k, i, j] - (a[k, i, j + 1] + a[k, i, j - 1] + a[k, i + 1, j] + a[k, i - 1, j])

    @njit(inline="always")
    def hflx(a, k, i, j):
        f = hlap(a, k, i, j + 1) - hlap(a, k, i, j)
        return 0.0 if f * (a[k, i, j + 1] - a[k, i, j]) > 0 else f

    @njit(inline="always")
    def hfly(a, k, i, j):
        f = hlap(a, k, i + 1, j) - hlap(a, k, i, j)
        return 0.0 if f * (a[k, i + 1, j] - a[k, i, j]) > 0 else f

    @njit(parallel=True)
    def nb_hdiff3(a, co):
        nk, ny, nx = a.shape
        out = numpy.empty((nk, ny - 4, nx - 4))
        for ki in prange(nk * (ny - 4)):
            k = ki // (ny - 4)
            i = ki % (ny - 4) + 2
            for j in range(2, nx - 2):
                out[k, i - 2, j - 2] = a[k, i, j] - co[k, i, j] * (
                    hflx(a, k, i, j) - hflx(a, k, i, j - 1) + hfly(a, k, i, j) - hfly(a, k, i - 1, j))
        return out

    def nb_hdiff(inp, coeff):
        if inp.ndim == 2:
            return nb_hdiff3(inp[None], coeff[None])[0]
        return nb_hdiff3(inp, coeff)

    @njit(parallel=True)
    def nb_softmax(x):
        R, C = x.shape
        out = numpy.empty_like(x)
        for i in prange(R):
            m = x[i, 0]
            for j in range(C):
                m = max(m, x[i, j])
            s = 0.0
            for j in range(C):
                e = numpy.exp(x[i, j] - m)
                out[i, j] = e
                s += e
            for j in range(C):
                out[i, j] /= s
        return out

    @njit(parallel=True)
    def nb_log_softmax(x):
        R, C = x.shape
        out = numpy.empty_like(x)
        for i in prange(R):
            m = x[i, 0]
            for j in range(C):
                m = max(m, x[i, j])
            s = 0.0
            for j in range(C):
                s += numpy.exp(x[i, j] - m)
            ls = numpy.log(s)
            for j in range(C):
                out[i, j] = x[i, j] - m - ls
        return out

    @njit(parallel=True)
    def nb_layernorm(x):
        R, C = x.shape
        out = numpy.empty_like(x)
        for i in prange(R):
            s = 0.0
            for j in range(C):
                s += x[i, j]
            mu = s / C
            v = 0.0
            for j in range(C):
                v += (x[i, j] - mu) ** 2
            sd = numpy.sqrt(v / C + 1e-5)
            for j in range(C):
                out[i, j] = (x[i, j] - mu) / sd
        return out

    @njit(parallel=True)
    def nb_cg(b, iters):
        N = b.shape[0]
        x = numpy.zeros_like(b)
        r = b.copy()
        p = r.copy()
        Ap = numpy.empty((N - 2, N - 2))
        rr = 0.0
        for i in prange(N):
            for j in range(N):
                rr += r[i, j] * r[i, j]
        for _ in range(iters):
            pAp = 0.0
            for i in prange(1, N - 1):
                for j in range(1, N - 1):
                    v = 4 * p[i, j] - p[i - 1, j] - p[i + 1, j] - p[i, j - 1] - p[i, j + 1]
                    Ap[i - 1, j - 1] = v
                    pAp += p[i, j] * v
            alpha = rr / pAp
            rr_new = 0.0
            for i in prange(N):
                for j in range(N):
                    x[i, j] += alpha * p[i, j]
                    if 0 < i < N - 1 and 0 < j < N - 1:
                        r[i, j] -= alpha * Ap[i - 1, j - 1]
                    rr_new += r[i, j] * r[i, j]
            beta = rr_new / rr
            for i in prange(N):
                for j in range(N):
                    p[i, j] = r[i, j] + beta * p[i, j]
            rr = rr_new
        return x

    return {"blur": nb_blur, "diffusion": nb_diffusion, "hdiff": nb_hdiff, "hdiff3d": nb_hdiff,
            "softmax": nb_softmax, "logsoftmax": nb_log_softmax, "layernorm": nb_layernorm, "cg": nb_cg}


def jax_impl(jax, wl):
    """callable(*arrays) for workload `wl`: the same NumPy code on jax.numpy, jitted."""
    import jax.numpy as jnp

    fn = cg_jax if wl["fn"] is cg else wl["fn"]
    consts = wl["consts"]
    jf = jax.jit(lambda *arrays: fn(jnp, *arrays, **consts))
    held = {}

    def run(*arrays):
        if "args" not in held:  # the inputs as JAX arrays, converted once (outside the timed runs)
            held["args"] = [jnp.asarray(a) for a in arrays]
        return jf(*held["args"]).block_until_ready()

    return run


def scipy_blur():
    """The blur with scipy.ndimage: uniform_filter1d over axis 1, then axis 0
    (full-size output, edges by reflection; its interior is the chain's result)."""
    try:
        from scipy.ndimage import uniform_filter1d
    except Exception:
        return None

    def run(a):
        return uniform_filter1d(uniform_filter1d(a, 3, axis=1), 3, axis=0)[1:-1, 1:-1]

    return run


# -- workloads and sizes -----------------------------------------------------------------------


def workloads(quick):
    rng = numpy.random.default_rng(0)
    nb_ = 256 if quick else 2048  # blur, diffusion
    nh = 128 if quick else 1024  # hdiff 2-D
    h3 = (4, 64, 64) if quick else (64, 256, 256)
    rows, cols = (256, 128) if quick else (4096, 1024)
    ncg, iters = (128, 5) if quick else (1024, 10)

    def shapes_bytes(d):
        return {k: int(numpy.prod(s)) * F64 for k, s in d.items()}

    out = []
    n = nb_
    out.append(dict(name="blur", title=f"separable blur chain, {n}x{n} float64", fn=blur,
                    args=(rng.random((n, n)),), consts={}, rtol=1e-12,
                    inter=shapes_bytes({"bx": (n, n - 2)})))
    out.append(dict(name="diffusion", title=f"3-stage fourth-order diffusion, {n}x{n} float64", fn=diffusion,
                    args=(rng.random((n, n)),), consts=dict(alpha=0.01), rtol=1e-12,
                    inter=shapes_bytes({"lap": (n - 2, n - 2), "flux_x": (n - 2, n - 3),
                                        "flux_y": (n - 3, n - 2)})))
    for name, shp in (("hdiff", (nh, nh)), ("hdiff3d", h3)):
        lead, (ny, nx) = shp[:-2], shp[-2:]
        out.append(dict(name=name, title=f"horizontal diffusion with flux limiters, {'x'.join(map(str, shp))} "
                                         f"float64", fn=hdiff,
                        args=(rng.random(shp), 0.025 * (1 + rng.random(shp))), consts={}, rtol=1e-12,
                        inter=shapes_bytes({"lap": lead + (ny - 2, nx - 2), "flx": lead + (ny - 2, nx - 3),
                                            "fly": lead + (ny - 3, nx - 2)})))
    x = 3.0 * rng.standard_normal((rows, cols))
    red = (rows, 1)
    out.append(dict(name="softmax", title=f"softmax over rows, {rows}x{cols} float64", fn=softmax, args=(x,),
                    consts={}, rtol=1e-12, inter=shapes_bytes({"m": red, "e": (rows, cols), "e.sum": red})))
    out.append(dict(name="logsoftmax", title=f"log-softmax over rows, {rows}x{cols} float64", fn=log_softmax,
                    args=(x,), consts={}, rtol=1e-12,
                    inter=shapes_bytes({"m": red, "exp(x - m)": (rows, cols), "sum": red})))
    out.append(dict(name="layernorm", title=f"layer-norm standardization over rows, {rows}x{cols} float64",
                    fn=layernorm, args=(1.0 + 2.0 * rng.standard_normal((rows, cols)),), consts={}, rtol=1e-12,
                    inter=shapes_bytes({"mu": red, "(x - mu)**2": (rows, cols), "var": red})))
    b = numpy.zeros((ncg + 2, ncg + 2))
    b[1:-1, 1:-1] = rng.standard_normal((ncg, ncg))
    # Per iteration: Ap, and the two reductions' inputs p*Ap and r*r.
    out.append(dict(name="cg", title=f"conjugate gradient, 5-point Laplacian {ncg}x{ncg}, {iters} iterations",
                    fn=cg, args=(b,), consts=dict(iters=iters), rtol=1e-9,
                    inter={f"{k} x{iters}": v * iters for k, v in shapes_bytes({
                        "Ap": (ncg, ncg), "p*Ap": (ncg, ncg), "r*r": (ncg + 2, ncg + 2)}).items()}))
    return out


NAMES = ("blur", "diffusion", "hdiff", "hdiff3d", "softmax", "logsoftmax", "layernorm", "cg")


# -- harness -----------------------------------------------------------------------------------


def has_option(name):
    """True where this numfuse has the option `name`."""
    try:
        numfuse.get_option(name)
        return True
    except ValueError:
        return False


def stages_option():
    """True where this numfuse has the 'stages' option (numfuse.config(stages=False))."""
    return has_option("stages")


# numfuse with cheap intermediates stored instead of recomputed at their readers
RECOMPUTE_OFF = "numfuse, recompute off"


def check(got, ref, rtol):
    g = numpy.asarray(got)
    if g.shape != ref.shape:
        return False, f"shape {g.shape}, NumPy's {ref.shape}"
    scale = float(numpy.abs(ref).max()) or 1.0
    ok = numpy.allclose(g, ref, rtol=rtol, atol=rtol * scale)
    err = float(numpy.abs(g - ref).max()) / scale
    return ok, f"max error {err:.1e} of max |ref| (rtol {rtol:g})"


def mib(b):
    return b / 2**20


def run_workload(wl, impls, repeats):
    """Checks every implementation against NumPy, then times them all.
    Returns the result row; exits on a mismatch (before any timing)."""
    ref = numpy.asarray(wl["fn"](numpy, *wl["args"], **wl["consts"]))
    ready = []  # (label, fn, ctx, note)
    recomputed = None  # intermediates numfuse recomputed in the workload's last flush
    for label, make, rtol_of in impls:
        got = make(wl)
        if got is None:
            continue
        fn, ctx, note = got
        with ctx():
            ok, why = check(fn(), ref, rtol_of(wl))
            if label == "numfuse" and hasattr(numfuse, "explain"):
                recomputed = numfuse.explain().report.get("recomputed")
        if not ok:
            sys.exit(f"bench_stages: {wl['name']} / {label}: result differs from NumPy's: {why}")
        ready.append((label, fn, ctx, note + ("; " if note else "") + why))
    row = dict(name=wl["name"], title=wl["title"], ms={}, ratio={}, notes={}, kernels={},
               intermediate_bytes=wl["inter"], saved_bytes=sum(wl["inter"].values()), recomputed=recomputed)
    for label, fn, ctx, note in ready:
        if label.startswith(("Numba", "JAX")):
            time.sleep(0.3)  # let the previous implementation's thread pool go to sleep
        with ctx():
            if label.startswith("numfuse"):
                # The steady state: the first runs of a kernel go to numfuse's interpreter (tier 0) while it
                # compiles in the background; wait for those compiles (and -O3 upgrades) before timing.
                for _ in range(2):
                    fn()
                    numfuse.wait_background()
            t = best_of(fn, repeats, warmup=1)
            if label.startswith("numfuse"):
                with numfuse.profile() as prof:
                    fn()
                k, t0 = prof["kernels_run"], prof.get("tier0_groups", 0)
                row["kernels"][label] = k + t0
                # (kernels_run counts launches: a multi-stage kernel once)
                note = (f"{k + t0} kernel{'s' if k + t0 != 1 else ''}"
                        f"{f' ({t0} on the interpreter)' if t0 else ''}; " + note)
        row["ms"][label] = t * 1e3
        row["notes"][label] = note
    time.sleep(0.3)
    t_np = row["ms"]["NumPy"]
    row["ratio"] = {k: t_np / v for k, v in row["ms"].items()}
    return row


def implementations(args, have_stages):
    """(label, make(wl) -> (fn, ctx, note) or None, rtol(wl)) for every implementation run."""
    nothing = contextlib.nullcontext
    exact = lambda wl: wl["rtol"]  # noqa: E731
    loose = lambda wl: max(wl["rtol"], 1e-9)  # noqa: E731

    def np_make(wl):
        return (lambda: wl["fn"](numpy, *wl["args"], **wl["consts"])), nothing, ""

    held = {}  # the inputs as numfuse arrays, converted once (outside the timed runs)

    def nf_args(wl):
        if wl["name"] not in held:
            held[wl["name"]] = [numfuse.array(a) for a in wl["args"]]
            numfuse.flush()
        return held[wl["name"]]

    def nf_make(stages_off):
        def make(wl):
            a = nf_args(wl)

            def fn():
                r = wl["fn"](numfuse, *a, **wl["consts"])
                numfuse.flush()
                return r

            if not stages_off:
                return fn, nothing, "multi-stage kernels on" if have_stages else "default settings"
            if have_stages:
                return fn, (lambda: numfuse.config(stages=False)), "numfuse.config(stages=False)"
            return fn, nothing, "no 'stages' option in this numfuse: default settings"
        return make

    off_label = "numfuse, stages off" if have_stages else "numfuse (no stages option)"
    out = [("NumPy", np_make, exact), (off_label, nf_make(True), exact), ("numfuse", nf_make(False), exact)]
    if has_option("recompute"):
        def rc_off(wl):
            fn, _, _ = nf_make(False)(wl)
            return fn, (lambda: numfuse.config(recompute=False)), "numfuse.config(recompute=False)"
        out.append((RECOMPUTE_OFF, rc_off, exact))

    cks = c_impls()

    def c_make(wl):
        f = cks.get(wl["name"])
        if f is None:
            return None
        return (lambda: f(*wl["args"], **wl["consts"])), nothing, "one fused pass"
    out.append(("hand-written C/OpenMP", c_make, exact))
    if args.no_peers:
        return out, off_label

    sp = scipy_blur()
    if sp is None:
        print("(scipy not importable: skipped)")
    else:
        out.append(("scipy.ndimage", lambda wl: ((lambda: sp(*wl["args"])), nothing,
                                                  "uniform_filter1d x2, full image")
                    if wl["name"] == "blur" else None, lambda wl: 1e-10))
    nb = peer("numba")
    if nb is None:
        print("(Numba not importable: skipped)")
    else:
        nbs = numba_impls(nb)
        out.append(("Numba (parallel)", lambda wl: ((lambda: nbs[wl["name"]](*wl["args"], *wl["consts"].values())),
                                                    nothing, "prange loops, fused per point")
                    if wl["name"] in nbs else None, loose))
    jax = peer("jax")
    if jax is None:
        print("(JAX not importable: skipped)")
    else:
        def jx_make(wl):
            f = jax_impl(jax, wl)
            return (lambda: f(*wl["args"])), nothing, "jit, same NumPy code on jax.numpy"
        out.append(("JAX (jit, CPU)", jx_make, loose))
    return out, off_label


def table(title, rows, baseline="NumPy"):
    """common.table's layout, with the times' precision following their size (the quick sizes run in
    tens of microseconds). rows: (implementation, milliseconds, note)."""
    base = dict((r[0], r[1]) for r in rows)[baseline]
    lines = [f"### {title}", "", "| implementation | time (ms) | speedup vs NumPy | note |", "|---|---:|---:|---|"]
    for name, ms, note in rows:
        t = f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.3g}"
        lines.append(f"| {name} | {t} | {base / ms:.2f}x | {note} |")
    return "\n".join(lines)


def same_kernels(row):
    """A note for the recompute-off ratio of a workload where nothing was recomputed."""
    if row.get("recomputed") == 0:
        return " (nothing recomputed: the same kernels ran both ways, the difference is noise)"
    return ""


def report(row, off_label):
    text = table(row["title"], [(k, row["ms"][k], row["notes"][k]) for k in row["ms"]])
    r = row["ms"]
    lines = []
    if "numfuse" in r and off_label in r:
        row["stages_speedup"] = r[off_label] / r["numfuse"]
        lines.append(f"numfuse vs {off_label}: {row['stages_speedup']:.2f}x")
    if "numfuse" in r and RECOMPUTE_OFF in r:
        row["recompute_speedup"] = r[RECOMPUTE_OFF] / r["numfuse"]
        lines.append(f"numfuse vs {RECOMPUTE_OFF}: {row['recompute_speedup']:.2f}x{same_kernels(row)}")
    c = "hand-written C/OpenMP"
    if c in r and "numfuse" in r:
        row["numfuse_over_c"] = r["numfuse"] / r[c]
        lines.append(f"numfuse time / hand-written fused C time: {row['numfuse_over_c']:.2f} "
                     f"(1.00: as fast as the fused loop)")
    parts = ", ".join(f"{k} {mib(v):.1f}" for k, v in row["intermediate_bytes"].items())
    lines.append(f"memory traffic saved: {mib(row['saved_bytes']):.1f} MiB of intermediates ({parts} MiB) "
                 f"that a fused multi-stage kernel never writes nor reads back")
    return text + "\n\n" + "\n".join(lines) + "\n"


def plot(rows, impls, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # matplotlib is optional
        print(f"(no plot: {e})")
        return
    others = [i for i in impls if i != "NumPy"]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 1.1 * len(rows)))
    height = 0.8 / max(len(others), 1)
    for k, impl in enumerate(others):
        ys, xs = [], []
        for j, r in enumerate(rows):
            if impl in r["ratio"]:
                ys.append(j + k * height)
                xs.append(r["ratio"][impl])
        ax.barh(ys, xs, height, label=impl)
        for y, v in zip(ys, xs):
            ax.text(v, y, f" {v:.2f}x", va="center", fontsize=6)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([j + height * (len(others) - 1) / 2 for j in range(len(rows))])
    ax.set_yticklabels([r["name"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("NumPy time / implementation time (same run, log scale; > 1: faster than NumPy)")
    ax.set_title(f"multi-stage workloads ({os.cpu_count()} cores)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def run(quick=False, only=None, repeats=None, no_peers=False, out=RESULTS):
    """Runs the benchmark; returns (markdown text, [], extra) like the other
    benchmarks' run() (its own tables: no rows for run.py's plot)."""
    args = argparse.Namespace(no_peers=no_peers)
    repeats = repeats or (1 if quick else 5)
    want = [w.strip() for w in only.split(",")] if only else list(NAMES)
    bad = [w for w in want if w not in NAMES]
    if bad:
        sys.exit(f"bench_stages: unknown workload(s) {bad}; choose from {list(NAMES)}")
    have_stages = stages_option()
    if not have_stages:
        print("(this numfuse has no 'stages' option: the stages-off column runs numfuse's defaults)")
    impls, off_label = implementations(args, have_stages)
    texts, rows = [], []
    for wl in workloads(quick):
        if wl["name"] not in want:
            continue
        row = run_workload(wl, impls, repeats)
        text = report(row, off_label)
        print(text, flush=True)
        texts.append(text)
        rows.append(row)
    names = []
    for r in rows:
        names += [k for k in r["ms"] if k not in names]
    summary = ["### Summary: NumPy time / implementation time", "",
               "| workload | " + " | ".join(names) + " | numfuse vs stages off | numfuse / C | intermediates (MiB) |",
               "|---|" + "---:|" * (len(names) + 3)]
    for r in rows:
        cells = [f"{r['ratio'][n]:.2f}x" if n in r["ratio"] else "" for n in names]
        sv = f"{r['stages_speedup']:.2f}x" if "stages_speedup" in r else ""
        vc = f"{r['numfuse_over_c']:.2f}" if "numfuse_over_c" in r else ""
        summary.append(f"| {r['name']} | " + " | ".join(cells) + f" | {sv} | {vc} | {mib(r['saved_bytes']):.1f} |")
    for impl in names[1:]:
        got = [r["ratio"][impl] for r in rows if impl in r["ratio"]]
        if got:
            geo = math.exp(sum(math.log(v) for v in got) / len(got))
            summary.append(f"\ngeometric mean NumPy / {impl}: {geo:.2f}x over {len(got)} workload(s)")
    su = [r["stages_speedup"] for r in rows if "stages_speedup" in r]
    if su:
        summary.append(f"\ngeometric mean numfuse vs {off_label}: "
                       f"{math.exp(sum(math.log(v) for v in su) / len(su)):.2f}x")
    for r in rows:
        if "recompute_speedup" in r:
            summary.append(f"numfuse vs {RECOMPUTE_OFF} on {r['name']}: {r['recompute_speedup']:.2f}x{same_kernels(r)}")
    text = "\n".join(summary) + "\n"
    print(text)
    meta = dict(machine(), quick=quick, repeats=repeats, stages_option=have_stages,
                run=time.strftime("%Y-%m-%d %H:%M"))
    texts = [f"# Multi-stage workloads\n\n{meta}\n"] + texts + [text]
    if out:
        os.makedirs(out, exist_ok=True)
        stem = os.path.join(out, "bench_stages_quick" if quick else "bench_stages")
        with open(stem + ".json", "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1, default=str)
        with open(stem + ".md", "w") as f:
            f.write("\n\n".join(texts))
        plot(rows, names, stem + ".png")
    return "\n\n".join(texts), [], dict(meta=meta, rows=rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 timed run (a smoke run, not for reporting)")
    ap.add_argument("--only", default=None, help=f"comma-separated workloads to run, of {', '.join(NAMES)}")
    ap.add_argument("--repeats", type=int, default=None, help="timed runs per implementation (best is kept)")
    ap.add_argument("--no-peers", action="store_true", help="skip scipy, Numba and JAX")
    ap.add_argument("--out", default=RESULTS, help=f"folder for bench_stages.{{json,md,png}} (default {RESULTS}; "
                                                   "with --quick: bench_stages_quick.*)")
    args = ap.parse_args()
    run(quick=args.quick, only=args.only, repeats=args.repeats, no_peers=args.no_peers, out=args.out)


if __name__ == "__main__":
    main()

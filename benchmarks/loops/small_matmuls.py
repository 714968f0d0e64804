"""A loop of many small matrix products, as in applying one small dense layer
to a batch of blocks one at a time: for each of m blocks,
out[k] = tanh(W @ X[k] + b) with W 16x16, X[k] 16x8, b a 16x1 column
(broadcast), each result scattered into its slot of out; then a reduction of
every block, out.sum(axis=(1, 2)). Returns (out, sums)."""

import numpy

SIZES = {"m": 2000, "d": 16, "w": 8}
QUICK = {"m": 10, "d": 16, "w": 8}
RTOL, ATOL = 1e-9, 1e-12


def make_inputs(np, m, d, w):
    rng = np.random.default_rng(17)
    W = rng.standard_normal((d, d)) / np.sqrt(d)
    X = rng.standard_normal((m, d, w))
    b = 0.1 * rng.standard_normal((d, 1))
    return W, X, b


def run(np, W, X, b):
    m, d, w = X.shape
    out = np.empty((m, d, w))
    for k in range(m):
        out[k] = np.tanh(W @ X[k] + b)
    return out, out.sum(axis=(1, 2))


def numba_version(W, X, b):
    m, d, w = X.shape
    out = numpy.empty((m, d, w))
    sums = numpy.zeros(m)
    for k in range(m):
        for i in range(d):
            for j in range(w):
                s = 0.0
                for l in range(d):
                    s += W[i, l] * X[k, l, j]
                out[k, i, j] = numpy.tanh(s + b[i, 0])
        t = 0.0
        for i in range(d):
            for j in range(w):
                t += out[k, i, j]
        sums[k] = t
    return out, sums


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def small_matmuls(W, X, b):
        m, d, w = X.shape

        def block(k, out):
            return out.at[k].set(jnp.tanh(W @ X[k] + b))

        out = jax.lax.fori_loop(0, m, block, jnp.zeros((m, d, w), X.dtype))
        return out, out.sum(axis=(1, 2))

    return small_matmuls

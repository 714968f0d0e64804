"""Softmax of every row of a matrix, one row at a time in a Python loop
(max-shifted for stability)."""

import numpy

SIZES = {"rows": 256, "cols": 64}
QUICK = {"rows": 16, "cols": 16}
RTOL, ATOL = 1e-9, 1e-15


def make_inputs(np, rows, cols):
    rng = np.random.default_rng(12)
    return (3.0 * rng.standard_normal((rows, cols)),)


def run(np, X):
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        row = X[i]
        e = np.exp(row - row.max())
        out[i] = e / e.sum()
    return out


def numba_version(X):
    out = numpy.empty_like(X)
    for i in range(X.shape[0]):
        m = X[i, 0]
        for j in range(1, X.shape[1]):
            if X[i, j] > m:
                m = X[i, j]
        s = 0.0
        for j in range(X.shape[1]):
            out[i, j] = numpy.exp(X[i, j] - m)
            s += out[i, j]
        for j in range(X.shape[1]):
            out[i, j] = out[i, j] / s
    return out


def jax_version():
    import jax
    import jax.numpy as jnp

    def row_softmax(row):
        e = jnp.exp(row - row.max())
        return e / e.sum()

    return jax.jit(jax.vmap(row_softmax))

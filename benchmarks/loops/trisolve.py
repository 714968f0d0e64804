"""Two triangular solves, the textbook way: forward substitution L y = b one
row at a time (np.dot of a row slice of L with the solved part of y), then
back substitution U x = y on the result, a second Python loop running
backwards. Returns (y, x)."""

import numpy

SIZES = {"n": 1000}
QUICK = {"n": 16}
RTOL, ATOL = 1e-9, 1e-12


def make_inputs(np, n):
    rng = np.random.default_rng(13)
    L = np.tril(rng.random((n, n))) + n * np.eye(n)  # diagonally dominant: well conditioned
    U = np.triu(rng.random((n, n))) + n * np.eye(n)
    b = rng.standard_normal(n)
    return L, U, b


def run(np, L, U, b):
    n = b.shape[0]
    y = np.zeros(n)
    for i in range(n):
        y[i] = (b[i] - np.dot(L[i, :i], y[:i])) / L[i, i]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - np.dot(U[i, i + 1:], x[i + 1:])) / U[i, i]
    return y, x


def numba_version(L, U, b):
    n = b.shape[0]
    y = numpy.zeros(n)
    for i in range(n):
        s = 0.0
        for j in range(i):
            s += L[i, j] * y[j]
        y[i] = (b[i] - s) / L[i, i]
    x = numpy.zeros(n)
    for i in range(n - 1, -1, -1):
        s = 0.0
        for j in range(i + 1, n):
            s += U[i, j] * x[j]
        x[i] = (y[i] - s) / U[i, i]
    return y, x


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def trisolve(L, U, b):
        n = b.shape[0]
        idx = jnp.arange(n)

        def forward(i, y):
            return y.at[i].set((b[i] - jnp.dot(jnp.where(idx < i, L[i], 0.0), y)) / L[i, i])

        y = jax.lax.fori_loop(0, n, forward, jnp.zeros(n, b.dtype))

        def backward(t, x):
            i = n - 1 - t
            return x.at[i].set((y[i] - jnp.dot(jnp.where(idx > i, U[i], 0.0), x)) / U[i, i])

        return y, jax.lax.fori_loop(0, n, backward, jnp.zeros(n, b.dtype))

    return trisolve

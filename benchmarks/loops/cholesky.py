"""Cholesky factorization A = L L^T, row by row, the textbook way: two Python
loops over (i, j) and np.dot on row slices of L for the inner sum."""

import numpy

SIZES = {"n": 120}
QUICK = {"n": 16}
RTOL, ATOL = 1e-7, 1e-9


def make_inputs(np, n):
    rng = np.random.default_rng(0)
    m = rng.random((n, n))
    return (m @ m.T + n * np.eye(n),)  # symmetric positive definite


def run(np, A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = np.dot(L[i, :j], L[j, :j])
            if i == j:
                L[i, i] = np.sqrt(A[i, i] - s)
            else:
                L[i, j] = (A[i, j] - s) / L[j, j]
    return L


def numba_version(A):
    n = A.shape[0]
    L = numpy.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(j):
                s += L[i, k] * L[j, k]
            if i == j:
                L[i, i] = numpy.sqrt(A[i, i] - s)
            else:
                L[i, j] = (A[i, j] - s) / L[j, j]
    return L


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def cholesky(A):
        n = A.shape[0]
        idx = jnp.arange(n)

        def row(i, L):
            def off_diagonal(j, L):  # j < i
                s = jnp.dot(jnp.where(idx < j, L[i], 0.0), L[j])  # L[i, :j] . L[j, :j]
                return L.at[i, j].set((A[i, j] - s) / L[j, j])

            L = jax.lax.fori_loop(0, i, off_diagonal, L)
            s = jnp.dot(jnp.where(idx < i, L[i], 0.0), L[i])  # j == i
            return L.at[i, i].set(jnp.sqrt(A[i, i] - s))

        return jax.lax.fori_loop(0, n, row, jnp.zeros_like(A))

    return cholesky

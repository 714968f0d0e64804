"""Symmetric rank-k update C = alpha * A @ A.T + beta * C (BLAS syrk, as in
PolyBench) on the lower triangle, one row at a time: a Python loop over the
rows, each row's part up to the diagonal updated with a matrix-vector product
A[:i+1] @ A[i]. Returns C (the lower triangle is the result; the strict upper
triangle keeps C's input values and is compared too)."""

import numpy

SIZES = {"n": 600, "k": 64}
QUICK = {"n": 16, "k": 8}
RTOL, ATOL = 1e-9, 1e-12


def make_inputs(np, n, k):
    rng = np.random.default_rng(15)
    return rng.random((n, k)), rng.random((n, n)), 1.5, 1.2  # A, C, alpha, beta


def run(np, A, C0, alpha, beta):
    C = C0.copy()
    n = C.shape[0]
    for i in range(n):
        C[i, :i + 1] = beta * C[i, :i + 1] + alpha * (A[:i + 1] @ A[i])
    return C


def numba_version(A, C0, alpha, beta):
    C = C0.copy()
    n, m = A.shape
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(m):
                s += A[j, k] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * s
    return C


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def syrk_rows(A, C, alpha, beta):
        n = C.shape[0]
        idx = jnp.arange(n)

        def row(i, C):
            # the row's part :i + 1 (masked: the whole row is computed, the rest kept)
            new = beta * C[i] + alpha * (A @ A[i])
            return C.at[i].set(jnp.where(idx <= i, new, C[i]))

        return jax.lax.fori_loop(0, n, row, C)

    return syrk_rows

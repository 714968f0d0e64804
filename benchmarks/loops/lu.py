"""LU decomposition without pivoting (Doolittle): row i of U, then column i of
L, one element at a time with np.dot on a row slice of L and a column slice
of U. Returns (L, U)."""

import numpy

SIZES = {"n": 120}
QUICK = {"n": 16}
RTOL, ATOL = 1e-7, 1e-9


def make_inputs(np, n):
    rng = np.random.default_rng(1)
    return (rng.random((n, n)) + n * np.eye(n),)  # diagonally dominant: no pivoting needed


def run(np, A):
    n = A.shape[0]
    L = np.eye(n)
    U = np.zeros_like(A)
    for i in range(n):
        for k in range(i, n):
            U[i, k] = A[i, k] - np.dot(L[i, :i], U[:i, k])
        for k in range(i + 1, n):
            L[k, i] = (A[k, i] - np.dot(L[k, :i], U[:i, i])) / U[i, i]
    return L, U


def numba_version(A):
    n = A.shape[0]
    L = numpy.eye(n)
    U = numpy.zeros_like(A)
    for i in range(n):
        for k in range(i, n):
            s = 0.0
            for j in range(i):
                s += L[i, j] * U[j, k]
            U[i, k] = A[i, k] - s
        for k in range(i + 1, n):
            s = 0.0
            for j in range(i):
                s += L[k, j] * U[j, i]
            L[k, i] = (A[k, i] - s) / U[i, i]
    return L, U


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def lu(A):
        n = A.shape[0]
        idx = jnp.arange(n)

        def step(i, LU):
            L, U = LU
            head = idx < i  # the slices :i

            def u_elem(k, U):
                return U.at[i, k].set(A[i, k] - jnp.dot(jnp.where(head, L[i], 0.0), U[:, k]))

            U = jax.lax.fori_loop(i, n, u_elem, U)

            def l_elem(k, L):
                return L.at[k, i].set((A[k, i] - jnp.dot(jnp.where(head, L[k], 0.0), U[:, i])) / U[i, i])

            return jax.lax.fori_loop(i + 1, n, l_elem, L), U

        return jax.lax.fori_loop(0, n, step, (jnp.eye(n, dtype=A.dtype), jnp.zeros_like(A)))

    return lu

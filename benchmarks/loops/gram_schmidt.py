"""Modified Gram-Schmidt QR of an m x n matrix: a Python loop over the
columns; each step normalizes column k and removes its component from the
remaining columns. Returns (Q, R)."""

import numpy

SIZES = {"m": 200, "n": 60}
QUICK = {"m": 24, "n": 8}
RTOL, ATOL = 1e-7, 1e-9


def make_inputs(np, m, n):
    rng = np.random.default_rng(6)
    return (rng.random((m, n)),)


def run(np, A):
    m, n = A.shape
    Q = A.copy()
    R = np.zeros((n, n))
    for k in range(n):
        R[k, k] = np.linalg.norm(Q[:, k])
        Q[:, k] = Q[:, k] / R[k, k]
        R[k, k + 1:] = Q[:, k] @ Q[:, k + 1:]
        Q[:, k + 1:] -= np.outer(Q[:, k], R[k, k + 1:])
    return Q, R


def numba_version(A):
    m, n = A.shape
    Q = A.copy()
    R = numpy.zeros((n, n))
    for k in range(n):
        s = 0.0
        for i in range(m):
            s += Q[i, k] * Q[i, k]
        R[k, k] = numpy.sqrt(s)
        for i in range(m):
            Q[i, k] = Q[i, k] / R[k, k]
        for j in range(k + 1, n):
            s = 0.0
            for i in range(m):
                s += Q[i, k] * Q[i, j]
            R[k, j] = s
            for i in range(m):
                Q[i, j] -= Q[i, k] * s
    return Q, R


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def gram_schmidt(A):
        m, n = A.shape
        idx = jnp.arange(n)

        def step(k, QR):
            Q, R = QR
            rkk = jnp.linalg.norm(Q[:, k])
            qk = Q[:, k] / rkk
            Q = Q.at[:, k].set(qk)
            rest = idx > k  # the columns k + 1:
            rk = jnp.where(rest, qk @ Q, 0.0)
            R = R.at[k].set(rk).at[k, k].set(rkk)
            return Q - jnp.outer(qk, rk), R

        return jax.lax.fori_loop(0, n, step, (A, jnp.zeros((n, n), A.dtype)))

    return gram_schmidt

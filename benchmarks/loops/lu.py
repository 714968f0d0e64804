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

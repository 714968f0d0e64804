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

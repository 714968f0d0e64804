"""The PolyBench seidel-2d stencil (a 9-point average, in place), written the
way people write it in NumPy: a Python loop over the time steps and the rows,
each row's interior updated at once from slices of the previous row (already
updated this step), the row itself and the next row (not yet updated).
Within a row the right-hand side is evaluated before the assignment, so the
row's own neighbours are its old values (PolyBench's C loop would use the
new left neighbour); the Numba version computes exactly this, reading the
row's old values from a copy."""

import numpy

SIZES = {"n": 100, "tsteps": 10}
QUICK = {"n": 12, "tsteps": 2}
RTOL, ATOL = 1e-12, 1e-14


def make_inputs(np, n, tsteps):
    rng = np.random.default_rng(14)
    return rng.random((n, n)), tsteps


def run(np, A0, tsteps):
    A = A0.copy()
    n = A.shape[0]
    for _ in range(tsteps):
        for i in range(1, n - 1):
            A[i, 1:-1] = (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:]
                          + A[i, :-2] + A[i, 1:-1] + A[i, 2:]
                          + A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:]) / 9.0
    return A


def numba_version(A0, tsteps):
    A = A0.copy()
    n = A.shape[0]
    row = numpy.empty(n)
    for _ in range(tsteps):
        for i in range(1, n - 1):
            for j in range(n):
                row[j] = A[i, j]
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + row[j - 1] + row[j] + row[j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0
    return A


def jax_version():
    import functools

    import jax

    @functools.partial(jax.jit, static_argnums=(1,))
    def seidel2d(A, tsteps):
        n = A.shape[0]

        def row(i, A):
            up, mid, down = A[i - 1], A[i], A[i + 1]
            return A.at[i, 1:-1].set((up[:-2] + up[1:-1] + up[2:]
                                      + mid[:-2] + mid[1:-1] + mid[2:]
                                      + down[:-2] + down[1:-1] + down[2:]) / 9.0)

        return jax.lax.fori_loop(0, tsteps, lambda _, A: jax.lax.fori_loop(1, n - 1, row, A), A)

    return seidel2d

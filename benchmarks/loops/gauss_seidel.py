"""Red-black Gauss-Seidel sweeps for the 2-D Poisson equation -lap(u) = f on
an n x n grid (zero boundary): a Python loop over the rows, each row's points
of one colour updated at once with strided slices."""

import numpy

SIZES = {"n": 64, "sweeps": 10}
QUICK = {"n": 12, "sweeps": 2}
RTOL, ATOL = 1e-9, 1e-12


def make_inputs(np, n, sweeps):
    rng = np.random.default_rng(4)
    return np.zeros((n, n)), rng.random((n, n)), sweeps  # u0, f, sweeps


def run(np, u0, f, sweeps):
    u = u0.copy()
    n = u.shape[0]
    h2 = (1.0 / (n - 1)) ** 2
    for _ in range(sweeps):
        for color in (0, 1):
            for i in range(1, n - 1):
                s = 1 if (i + 1) % 2 == color else 2  # first interior column with (i + j) % 2 == color
                u[i, s:n - 1:2] = 0.25 * (u[i - 1, s:n - 1:2] + u[i + 1, s:n - 1:2] + u[i, s - 1:n - 2:2]
                                          + u[i, s + 1:n:2] + h2 * f[i, s:n - 1:2])
    return u


def numba_version(u0, f, sweeps):
    u = u0.copy()
    n = u.shape[0]
    h2 = (1.0 / (n - 1)) ** 2
    for _ in range(sweeps):
        for color in (0, 1):
            for i in range(1, n - 1):
                for j in range(1, n - 1):
                    if (i + j) % 2 == color:
                        u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] + h2 * f[i, j])
    return u


def jax_version():
    import functools

    import jax
    import jax.numpy as jnp

    @functools.partial(jax.jit, static_argnums=(2,))
    def gauss_seidel(u0, f, sweeps):
        n = u0.shape[0]
        h2 = (1.0 / (n - 1)) ** 2
        j = jnp.arange(1, n - 1)

        def sweep(_, u):
            for color in (0, 1):
                def row(i, u):
                    # the row's interior, updated where (i + j) % 2 == color (a strided slice
                    # whose start depends on i: a mask over the whole interior)
                    new = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:] + h2 * f[i, 1:-1])
                    return u.at[i, 1:-1].set(jnp.where((i + j) % 2 == color, new, u[i, 1:-1]))

                u = jax.lax.fori_loop(1, n - 1, row, u)
            return u

        return jax.lax.fori_loop(0, sweeps, sweep, u0)

    return gauss_seidel

"""1-D heat equation, explicit finite differences: one slice update per time
step in a Python loop over many steps (small array, many tiny operations)."""

import numpy

SIZES = {"n": 200, "steps": 20000}
QUICK = {"n": 50, "steps": 500}
RTOL, ATOL = 1e-7, 1e-12


def make_inputs(np, n, steps):
    rng = np.random.default_rng(11)
    u = rng.random(n)
    u[0] = u[-1] = 0.0
    return u, 0.4, steps  # u0, r = alpha dt / dx^2 (stable: r <= 0.5), steps


def run(np, u0, r, steps):
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def numba_version(u0, r, steps):
    u = u0.copy()
    n = u.shape[0]
    new = u.copy()
    for _ in range(steps):
        for i in range(1, n - 1):
            new[i] = u[i] + r * (u[i + 1] - 2 * u[i] + u[i - 1])
        for i in range(1, n - 1):
            u[i] = new[i]
    return u


def jax_version():
    import functools

    import jax

    @functools.partial(jax.jit, static_argnums=(2,))
    def heat(u0, r, steps):
        def step(_, u):
            return u.at[1:-1].set(u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2]))

        return jax.lax.fori_loop(0, steps, step, u0)

    return heat

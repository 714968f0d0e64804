"""Gravitational n-body (softened, semi-implicit Euler): every step is
vectorized over all pairs of particles; a Python loop over the time steps.
Returns the final positions."""

import numpy

SIZES = {"n": 64, "steps": 200}
QUICK = {"n": 16, "steps": 20}
RTOL, ATOL = 1e-6, 1e-9


def make_inputs(np, n, steps):
    rng = np.random.default_rng(9)
    pos = rng.standard_normal((n, 3))
    vel = 0.1 * rng.standard_normal((n, 3))
    mass = rng.uniform(0.5, 1.5, n) / n
    return pos, vel, mass, 1e-3, 0.01, steps  # ..., dt, softening^2, steps


def run(np, pos0, vel0, mass, dt, soft2, steps):
    pos = pos0.copy()
    vel = vel0.copy()
    for _ in range(steps):
        dx = pos[None, :, :] - pos[:, None, :]          # dx[i, j] = pos[j] - pos[i]
        r2 = (dx * dx).sum(axis=2) + soft2
        w = mass[None, :] * r2 ** -1.5
        acc = (dx * w[:, :, None]).sum(axis=1)
        vel = vel + dt * acc
        pos = pos + dt * vel
    return pos


def numba_version(pos0, vel0, mass, dt, soft2, steps):
    pos = pos0.copy()
    vel = vel0.copy()
    n = pos.shape[0]
    acc = numpy.zeros((n, 3))
    for _ in range(steps):
        for i in range(n):
            ax = 0.0
            ay = 0.0
            az = 0.0
            for j in range(n):
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                r2 = dx * dx + dy * dy + dz * dz + soft2
                w = mass[j] * r2 ** -1.5
                ax += dx * w
                ay += dy * w
                az += dz * w
            acc[i, 0] = ax
            acc[i, 1] = ay
            acc[i, 2] = az
        for i in range(n):
            for c in range(3):
                vel[i, c] = vel[i, c] + dt * acc[i, c]
                pos[i, c] = pos[i, c] + dt * vel[i, c]
    return pos


def jax_version():
    import functools

    import jax
    import jax.numpy as jnp

    @functools.partial(jax.jit, static_argnums=(5,))
    def nbody(pos, vel, mass, dt, soft2, steps):
        def step(_, state):
            pos, vel = state
            dx = pos[None, :, :] - pos[:, None, :]
            r2 = (dx * dx).sum(axis=2) + soft2
            w = mass[None, :] * r2 ** -1.5
            acc = (dx * w[:, :, None]).sum(axis=1)
            vel = vel + dt * acc
            return pos + dt * vel, vel

        return jax.lax.fori_loop(0, steps, step, (pos, vel))[0]

    return nbody

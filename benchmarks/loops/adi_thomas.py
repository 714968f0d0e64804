"""ADI (Peaceman-Rachford) for the 2-D heat equation on an n x n grid with
zero Dirichlet boundaries: each half step is explicit in one direction and
implicit in the other, the implicit part solved by the Thomas algorithm
(tridiagonal elimination) -- a Python loop along the line, vectorized over
all lines at once; the second half step sweeps the columns (the transpose)."""

import numpy

SIZES = {"n": 64, "sweeps": 4}
QUICK = {"n": 12, "sweeps": 2}
RTOL, ATOL = 1e-7, 1e-10


def make_inputs(np, n, sweeps):
    rng = np.random.default_rng(2)
    return rng.random((n, n)), 0.5, sweeps  # u0, r = dt / h^2, sweeps


def thomas(np, a, b, c, d):
    """Solves the tridiagonal systems (a, b, c constant sub-, main and
    super-diagonal) along axis 0 of d, one system per column."""
    n = d.shape[0]
    cp = np.empty(n)
    dp = np.empty_like(d)
    cp[0] = c / b
    dp[0] = d[0] / b
    for i in range(1, n):
        m = 1.0 / (b - a * cp[i - 1])
        cp[i] = c * m
        dp[i] = (d[i] - a * dp[i - 1]) * m
    x = np.empty_like(d)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def run(np, u0, r, sweeps):
    u = u0.copy()
    h = 0.5 * r
    for _ in range(sweeps):
        # implicit along axis 0, explicit along axis 1
        rhs = (1 - r) * u
        rhs[:, 1:] += h * u[:, :-1]
        rhs[:, :-1] += h * u[:, 1:]
        u = thomas(np, -h, 1 + r, -h, rhs)
        # implicit along axis 1 (a sweep over the columns of the transpose)
        rhs = (1 - r) * u
        rhs[1:, :] += h * u[:-1, :]
        rhs[:-1, :] += h * u[1:, :]
        u = thomas(np, -h, 1 + r, -h, rhs.T).T
    return u


def numba_version(u0, r, sweeps):
    n, m = u0.shape
    u = u0.copy()
    h = 0.5 * r
    a = -h
    b = 1 + r
    c = -h
    rhs = numpy.empty_like(u)
    cp = numpy.empty(max(n, m))
    dp = numpy.empty_like(u)
    for _ in range(sweeps):
        # explicit along axis 1
        for i in range(n):
            for j in range(m):
                v = (1 - r) * u[i, j]
                if j > 0:
                    v += h * u[i, j - 1]
                if j < m - 1:
                    v += h * u[i, j + 1]
                rhs[i, j] = v
        # Thomas along axis 0
        cp[0] = c / b
        for j in range(m):
            dp[0, j] = rhs[0, j] / b
        for i in range(1, n):
            mm = 1.0 / (b - a * cp[i - 1])
            cp[i] = c * mm
            for j in range(m):
                dp[i, j] = (rhs[i, j] - a * dp[i - 1, j]) * mm
        for j in range(m):
            u[n - 1, j] = dp[n - 1, j]
        for i in range(n - 2, -1, -1):
            for j in range(m):
                u[i, j] = dp[i, j] - cp[i] * u[i + 1, j]
        # explicit along axis 0
        for i in range(n):
            for j in range(m):
                v = (1 - r) * u[i, j]
                if i > 0:
                    v += h * u[i - 1, j]
                if i < n - 1:
                    v += h * u[i + 1, j]
                rhs[i, j] = v
        # Thomas along axis 1
        cp[0] = c / b
        for i in range(n):
            dp[i, 0] = rhs[i, 0] / b
        for j in range(1, m):
            mm = 1.0 / (b - a * cp[j - 1])
            cp[j] = c * mm
            for i in range(n):
                dp[i, j] = (rhs[i, j] - a * dp[i, j - 1]) * mm
        for i in range(n):
            u[i, m - 1] = dp[i, m - 1]
        for j in range(m - 2, -1, -1):
            for i in range(n):
                u[i, j] = dp[i, j] - cp[j] * u[i, j + 1]
    return u


def jax_version():
    import functools

    import jax
    import jax.numpy as jnp

    def thomas(a, b, c, d):
        n = d.shape[0]
        cp = jnp.zeros(n, d.dtype).at[0].set(c / b)
        dp = jnp.zeros_like(d).at[0].set(d[0] / b)

        def forward(i, s):
            cp, dp = s
            m = 1.0 / (b - a * cp[i - 1])
            return cp.at[i].set(c * m), dp.at[i].set((d[i] - a * dp[i - 1]) * m)

        cp, dp = jax.lax.fori_loop(1, n, forward, (cp, dp))

        def backward(t, x):
            i = n - 2 - t
            return x.at[i].set(dp[i] - cp[i] * x[i + 1])

        return jax.lax.fori_loop(0, n - 1, backward, jnp.zeros_like(d).at[n - 1].set(dp[n - 1]))

    @functools.partial(jax.jit, static_argnums=(2,))
    def adi(u0, r, sweeps):
        h = 0.5 * r

        def sweep(_, u):
            rhs = (1 - r) * u
            rhs = rhs.at[:, 1:].add(h * u[:, :-1])
            rhs = rhs.at[:, :-1].add(h * u[:, 1:])
            u = thomas(-h, 1 + r, -h, rhs)
            rhs = (1 - r) * u
            rhs = rhs.at[1:, :].add(h * u[:-1, :])
            rhs = rhs.at[:-1, :].add(h * u[1:, :])
            return thomas(-h, 1 + r, -h, rhs.T).T

        return jax.lax.fori_loop(0, sweeps, sweep, u0)

    return adi

"""Levinson-Durbin recursion: the AR (linear prediction) coefficients of
order p from an autocorrelation sequence r[0..p]. A Python loop over the
order, np.dot on a reversed slice, the coefficient update on slices.
Returns (a, prediction error)."""

import numpy

SIZES = {"order": 64}
QUICK = {"order": 12}
RTOL, ATOL = 1e-6, 1e-10


def make_inputs(np, order):
    rng = np.random.default_rng(5)
    x = np.zeros(4096)
    e = rng.standard_normal(4096)
    for t in range(1, 4096):  # AR(1) signal
        x[t] = 0.6 * x[t - 1] + e[t]
    r = np.array([np.dot(x[: 4096 - k], x[k:]) for k in range(order + 1)]) / 4096  # biased: positive definite
    return (r,)


def run(np, r):
    p = r.shape[0] - 1
    a = np.zeros(p + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, p + 1):
        acc = r[k] + np.dot(a[1:k], r[k - 1:0:-1])
        lam = -acc / e
        a[1:k] = a[1:k] + lam * a[k - 1:0:-1]
        a[k] = lam
        e = e * (1.0 - lam * lam)
    return a, e


def numba_version(r):
    p = r.shape[0] - 1
    a = numpy.zeros(p + 1)
    tmp = numpy.zeros(p + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, p + 1):
        acc = 0.0
        for j in range(1, k):
            acc += a[j] * r[k - j]
        acc = r[k] + acc
        lam = -acc / e
        for j in range(1, k):
            tmp[j] = a[j] + lam * a[k - j]
        for j in range(1, k):
            a[j] = tmp[j]
        a[k] = lam
        e = e * (1.0 - lam * lam)
    return a, e


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def levinson(r):
        p = r.shape[0] - 1
        j = jnp.arange(p + 1)

        def step(k, state):
            a, e = state
            inner = (j >= 1) & (j < k)  # the slice 1:k; a[k - j] and r[k - j] are the reversed slices
            acc = r[k] + jnp.dot(jnp.where(inner, a, 0.0), r[k - j])
            lam = -acc / e
            a = jnp.where(inner, a + lam * a[k - j], a).at[k].set(lam)
            return a, e * (1.0 - lam * lam)

        return jax.lax.fori_loop(1, p + 1, step, (jnp.zeros(p + 1, r.dtype).at[0].set(1.0), r[0]))

    return levinson

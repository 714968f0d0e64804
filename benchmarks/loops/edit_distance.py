"""Levenshtein edit distance of two integer sequences: the dynamic program
filled one cell at a time with element access and Python's builtin `min`
(the Wagner-Fischer recurrence, as in textbooks and published notebooks).
Returns the distance and the table."""

import numpy

SIZES = {"n": 120, "m": 100}
QUICK = {"n": 12, "m": 10}
EXACT = True


def make_inputs(np, n, m):
    rng = np.random.default_rng(17)
    return rng.integers(0, 4, n), rng.integers(0, 4, m)


def run(np, a, b):
    n, m = a.shape[0], b.shape[0]
    d = np.zeros((n + 1, m + 1), dtype=np.int64)
    d[:, 0] = np.arange(n + 1)
    d[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return d[n, m], d


def numba_version(a, b):
    n, m = a.shape[0], b.shape[0]
    d = numpy.zeros((n + 1, m + 1), dtype=numpy.int64)
    for i in range(n + 1):
        d[i, 0] = i
    for j in range(m + 1):
        d[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return d[n, m], d


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def edit_distance(a, b):
        n, m = a.shape[0], b.shape[0]
        d = jnp.zeros((n + 1, m + 1), dtype=jnp.int64)
        d = d.at[:, 0].set(jnp.arange(n + 1))
        d = d.at[0, :].set(jnp.arange(m + 1))

        def row(i, d):
            def cell(j, d):
                sub = d[i - 1, j - 1] + (a[i - 1] != b[j - 1]).astype(d.dtype)
                return d.at[i, j].set(jnp.minimum(jnp.minimum(d[i - 1, j] + 1, d[i, j - 1] + 1), sub))

            return jax.lax.fori_loop(1, m + 1, cell, d)

        d = jax.lax.fori_loop(1, n + 1, row, d)
        return d[n, m], d

    return edit_distance

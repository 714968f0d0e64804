"""Nussinov RNA folding: maximum number of nested base pairs, a dynamic
program over the upper triangle of an n x n table filled with Python loops
and element access (PolyBench's nussinov)."""

import numpy

SIZES = {"n": 60}
QUICK = {"n": 14}
EXACT = True


def make_inputs(np, n):
    rng = np.random.default_rng(10)
    return (rng.integers(0, 4, n),)  # bases A, C, G, U as 0, 1, 2, 3: pairs sum to 3


def run(np, seq):
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = max(table[i, j - 1], table[i + 1, j])
            if i < j - 1:
                pair = 1 if seq[i] + seq[j] == 3 else 0
                best = max(best, table[i + 1, j - 1] + pair)
            else:
                best = max(best, table[i + 1, j - 1])
            for k in range(i + 1, j):
                best = max(best, table[i, k] + table[k + 1, j])
            table[i, j] = best
    return table


def numba_version(seq):
    n = seq.shape[0]
    table = numpy.zeros((n, n), dtype=numpy.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = max(table[i, j - 1], table[i + 1, j])
            if i < j - 1:
                pair = 1 if seq[i] + seq[j] == 3 else 0
                best = max(best, table[i + 1, j - 1] + pair)
            else:
                best = max(best, table[i + 1, j - 1])
            for k in range(i + 1, j):
                best = max(best, table[i, k] + table[k + 1, j])
            table[i, j] = best
    return table


def jax_version():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def nussinov(seq):
        n = seq.shape[0]

        def row(t, table):
            i = n - 1 - t

            def cell(j, table):
                best = jnp.maximum(table[i, j - 1], table[i + 1, j])
                pair = jnp.where((i < j - 1) & (seq[i] + seq[j] == 3), 1, 0)
                best = jnp.maximum(best, table[i + 1, j - 1] + pair)
                best = jax.lax.fori_loop(i + 1, j, lambda k, best: jnp.maximum(best, table[i, k] + table[k + 1, j]),
                                         best)
                return table.at[i, j].set(best)

            return jax.lax.fori_loop(i + 1, n, cell, table)

        return jax.lax.fori_loop(0, n, row, jnp.zeros((n, n), dtype=jnp.int64))

    return nussinov

"""Power iteration with a sparse matrix in CSR form (indptr, indices, data),
the way people write it without scipy: a Python loop over the rows, each row
an np.dot of its slice of data with x gathered at its slice of indices
(fancy indexing); then x = y / ||y||, repeated `iters` times. indptr is turned
into a Python list first (`indptr.tolist()`, as people do), so the slice
bounds are Python ints. Returns x."""

import numpy

SIZES = {"n": 500, "nnz_per_row": 8, "iters": 8}
QUICK = {"n": 20, "nnz_per_row": 4, "iters": 2}
RTOL, ATOL = 1e-9, 1e-12


def make_inputs(np, n, nnz_per_row, iters):
    rng = np.random.default_rng(16)
    counts = rng.integers(nnz_per_row // 2, 3 * nnz_per_row // 2 + 1, n)  # about nnz_per_row a row on average
    counts = np.minimum(counts, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(counts)
    indices = np.concatenate([np.sort(rng.choice(n, c, replace=False)) for c in counts]).astype(np.int64)
    data = rng.random(int(indptr[-1]))
    x0 = rng.random(n)
    return indptr, indices, data, x0, iters


def run(np, indptr, indices, data, x0, iters):
    indptr = indptr.tolist()
    n = len(indptr) - 1
    x = x0
    for _ in range(iters):
        y = np.zeros(n)
        for i in range(n):
            lo, hi = indptr[i], indptr[i + 1]
            y[i] = np.dot(data[lo:hi], x[indices[lo:hi]])
        x = y / np.linalg.norm(y)
    return x


def numba_version(indptr, indices, data, x0, iters):
    n = indptr.shape[0] - 1
    x = x0.copy()
    y = numpy.zeros(n)
    for _ in range(iters):
        for i in range(n):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += data[p] * x[indices[p]]
            y[i] = s
        nrm = 0.0
        for i in range(n):
            nrm += y[i] * y[i]
        nrm = numpy.sqrt(nrm)
        for i in range(n):
            x[i] = y[i] / nrm
    return x


def jax_version():
    import functools

    import jax
    import jax.numpy as jnp

    @functools.partial(jax.jit, static_argnums=(4, 5))
    def power_iteration(indptr, indices, data, x0, iters, width):
        n = indptr.shape[0] - 1
        # padded so that a window of `width` entries from any row start stays in bounds
        indices = jnp.concatenate([indices, jnp.zeros(width, indices.dtype)])
        data = jnp.concatenate([data, jnp.zeros(width, data.dtype)])
        lane = jnp.arange(width)

        def iteration(_, x):
            def row(i, y):
                lo, hi = indptr[i], indptr[i + 1]
                d = jax.lax.dynamic_slice(data, (lo,), (width,))  # data[lo:hi], masked to the row
                c = jax.lax.dynamic_slice(indices, (lo,), (width,))
                return y.at[i].set(jnp.dot(jnp.where(lane < hi - lo, d, 0.0), x[c]))

            y = jax.lax.fori_loop(0, n, row, jnp.zeros(n, x.dtype))
            return y / jnp.linalg.norm(y)

        return jax.lax.fori_loop(0, iters, iteration, x0)

    def spmv_csr(indptr, indices, data, x0, iters):
        # the widest row, a static shape (read on the host, as run() reads indptr with tolist())
        width = int(numpy.diff(numpy.asarray(indptr)).max())
        return power_iteration(indptr, indices, data, x0, iters, width)

    return spmv_csr

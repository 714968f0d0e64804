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

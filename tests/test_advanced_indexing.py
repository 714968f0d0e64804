"""Advanced indexing as numfuse's gather and scatter, against NumPy: integer
and boolean array keys, alone or among slices, several adjacent integer
arrays, assignment (a repeated index keeps the last value), `a[idx] += v`
and numpy.add.at (every repeated index adds). Native: a FallbackWarning
fails these tests (conftest) unless marked."""

import numpy as onp
import pytest

import numfuse as nf

RNG = onp.random.default_rng(11)


def arr(shape, dtype="float64"):
    x = RNG.standard_normal(shape) * 10
    return x.astype(dtype) if dtype != "bool" else x > 0


def same(got, want):
    assert isinstance(got, nf.ndarray), type(got)
    g = onp.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    onp.testing.assert_array_equal(g, want)


X = arr((5, 6, 7))
KEYS = [
    [0, 4, -1, 2, 2],
    onp.array([[1, 0], [3, 3]]),
    (slice(None), [5, 0, -6]),
    (Ellipsis, [6, 0]),
    (slice(1, 4), slice(None), onp.array([2, 2, 1])),
    (2, [1, 5]),
    ([0, 4], 3),
    (slice(None), 1, [0, 6]),
    ([0, 1, 4], [2, 3, 5]),
    (onp.array([[0], [4]]), onp.array([1, 2, 3])),
    (slice(None), [0, 5], [6, 6]),
    ([1, 2], [3, 4], [5, 6]),
    X[:, 0, 0] > 0,
    X[..., 0] > 0,
    X > 0,
    (slice(None), X[0, :, 0] > 0),
    (Ellipsis, X[0, 0] > 0),
    [],
    (slice(None), []),
    onp.zeros(5, dtype=bool),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
@pytest.mark.parametrize("layout", ["c", "transposed", "strided"])
def test_getitem(k, layout):
    key = KEYS[k]
    x = {"c": X, "transposed": X.transpose(2, 1, 0).copy().transpose(2, 1, 0), "strided": arr((10, 6, 14))[::2, :, ::2]}[layout]
    a = nf.asarray(x)
    same(a[key], x[key])


def test_index_arrays_of_every_kind(fusion):
    x = arr((8, 3))
    a = nf.asarray(x)
    for idx in ([1, 7], onp.array([1, 7], dtype=onp.int32), onp.array([1, 7], dtype=onp.uint8),
                nf.asarray([1, 7]), nf.arange(8) % 3 == 0, onp.arange(8) % 3 == 0):
        same(a[idx], x[onp.asarray(idx)])
    same((a * 2.0)[nf.asarray([0, 0])] + 1.0, (x * 2.0)[[0, 0]] + 1.0)  # pending inputs


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint16", "float32", "bool"])
def test_dtypes(dtype):
    x = arr((9, 4), dtype)
    a = nf.asarray(x)
    same(a[[8, 0, 3]], x[[8, 0, 3]])
    same(a[x[:, 0] > 0] if dtype == "bool" else a[onp.asarray(x[:, 0]) > 0], x[x[:, 0] > 0])


def test_index_errors():
    a = nf.asarray(X)
    for key in ([5], (slice(None), [6, 7]), ([0, 1], [1, 2, 3]), X[:3, 0, 0] > 0, [1.0], (X[0, :, 0] > 0, [1])):
        with pytest.raises(IndexError) as e_np:
            X[key]
        with pytest.raises(IndexError) as e_nf:
            a[key]
        assert str(e_nf.value) == str(e_np.value), key


@pytest.mark.fallback
def test_apart_advanced_indices_run_numpys():
    a = nf.asarray(X)
    key = (0, slice(None), [1, 2])
    same(a[key], X[key])


SET_KEYS = [
    [0, 3, 0, 4],
    (slice(None), [5, 1, 5]),
    (Ellipsis, [0, 6, 0]),
    ([0, 1, 4], [2, 3, 2]),
    X[:, 0, 0] > 0,
    X > 0,
    (slice(None), X[0, :, 0] > 0),
    (2, [1, 5]),
]


@pytest.mark.parametrize("k", range(len(SET_KEYS)))
def test_setitem_scalar_array_and_broadcast(k):
    key = SET_KEYS[k]
    shape = X[key].shape
    for value in (7.5, RNG.standard_normal(shape), RNG.standard_normal(shape[-1:]) if shape else 1.0,
                  onp.arange(int(onp.prod(shape))).reshape(shape)):
        x = X.copy()
        a = nf.asarray(X.copy())
        x[key] = value
        a[key] = nf.asarray(value) if isinstance(value, onp.ndarray) else value
        same(a, x)


def test_setitem_repeated_index_keeps_the_last_and_iadd():
    x = onp.zeros(6)
    a = nf.asarray(x.copy())
    idx = [1, 1, 4, 1]
    x[idx] = [1.0, 2.0, 3.0, 4.0]
    a[idx] = nf.asarray([1.0, 2.0, 3.0, 4.0])
    same(a, x)
    x[idx] += 10.0
    a[idx] += 10.0
    same(a, x)
    x[onp.array([0, 0])] -= onp.array([1.0, 5.0])
    a[nf.asarray([0, 0])] -= nf.asarray([1.0, 5.0])
    same(a, x)


def test_setitem_casts_and_keeps_pending_readers_right(fusion):
    x = onp.arange(10)
    a = nf.asarray(x.copy())
    before = a * 2  # pending, reads a before the scatter
    a[[1, 3]] = 2.7  # cast to int as NumPy's setitem does
    x[[1, 3]] = 2.7
    same(a, x)
    same(before, onp.arange(10) * 2)


def test_setitem_with_overlapping_value():
    x = onp.arange(8.0)
    a = nf.asarray(x.copy())
    x[[0, 1, 2, 3]] = x[::-1][:4]
    a[[0, 1, 2, 3]] = a[::-1][:4]
    same(a, x)


def test_setitem_errors():
    a = nf.asarray(onp.zeros((3, 4)))
    with pytest.raises(ValueError):
        a[[0, 1]] = onp.ones(5)
    with pytest.raises(IndexError):
        a[[3]] = 1.0
    r = nf.asarray(onp.zeros(3))
    r.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        r[[0]] = 1.0


@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "uint8"])
def test_add_at(dtype):
    x = arr((6, 5), dtype) if dtype != "uint8" else RNG.integers(0, 100, (6, 5)).astype(dtype)
    a = nf.asarray(x.copy())
    idx = [0, 0, 5, 2, 0]
    vals = arr((5, 5), dtype) if dtype != "uint8" else RNG.integers(0, 100, (5, 5)).astype(dtype)
    onp.add.at(x, idx, vals)
    nf.add.at(a, idx, nf.asarray(vals))
    same(a, x)
    onp.add.at(x, (slice(None), [1, 1, 4]), 3)
    nf.add.at(a, (slice(None), [1, 1, 4]), 3)
    same(a, x)
    onp.subtract.at(x, [2, 2], 1)
    nf.subtract.at(a, [2, 2], 1)
    same(a, x)


def test_add_at_histogram_like_loop(fusion):
    """The idiom `np.add.at(counts, bins, 1)`: every repeated bin counts."""
    bins = RNG.integers(0, 10, 1000)
    c = nf.zeros(10, dtype=onp.int64)
    nf.add.at(c, nf.asarray(bins), 1)
    same(c, onp.bincount(bins, minlength=10).astype(onp.int64))


def test_zero_d_integer_array_indexes_as_an_integer(fusion):
    x = arr((6,))
    a = nf.asarray(x)
    got, want = a[a.argmax()], x[x.argmax()]
    assert type(got) is type(want) and got == want
    a2, x2 = nf.asarray(arr((4, 3))), None
    x2 = onp.asarray(a2).copy()
    same(a2[nf.asarray(onp.int64(2))], x2[onp.int64(2)])
    a2[a2[:, 0].argmax()] = 0.0
    x2[x2[:, 0].argmax()] = 0.0
    same(a2, x2)


@pytest.mark.parametrize("source", ["list", "numpy", "numfuse", "pending"])
def test_gather_and_scatter_index_sources(source, fusion):
    x = arr((50, 4))
    a = nf.asarray(x.copy())
    idx = [3, -1, 0, 3, 49]
    k = {"list": idx, "numpy": onp.array(idx), "numfuse": nf.asarray(idx),
         "pending": nf.asarray(onp.array(idx) * 2) // 2}[source]
    same(a[k], x[idx])
    same(a[:, k[:2] if source != "list" else idx[:2]], x[:, idx[:2]])
    a[k] = 1.5
    x[idx] = 1.5
    same(a, x)
    vals = arr((5, 4))
    a[k] = nf.asarray(vals)
    x[idx] = vals
    same(a, x)


def test_mask_assignment_values(fusion):
    x = arr((7, 5))
    a = nf.asarray(x.copy())
    m = x > 0
    a[nf.asarray(m)] = 0.0
    x[m] = 0.0
    same(a, x)
    n = int((x < 0).sum())
    vals = arr((n,))
    a[a < 0] = nf.asarray(vals)
    x[x < 0] = vals
    same(a, x)
    with pytest.raises(ValueError):
        a[a > -100] = nf.asarray(arr((3,)))


BIG = arr((40, 6000))
BIG_KEYS = [
    (slice(3, 30), RNG.integers(-6000, 6000, 5000)),
    (7, RNG.integers(0, 6000, 5000)),
    (RNG.integers(0, 40, 5000), RNG.integers(0, 6000, 5000)),
    (RNG.integers(0, 40, (50, 100)), RNG.integers(0, 6000, (1, 100))),
    (BIG[:, 0] > 0, slice(None, None, 2)),
    (BIG[:, 0] > 0, RNG.integers(0, 6000, int((BIG[:, 0] > 0).sum()))),
    (Ellipsis, RNG.integers(0, 6000, 4500)),
]


@pytest.mark.parametrize("k", range(len(BIG_KEYS)))
def test_large_keys_are_numfuses_gather_and_scatter(k):
    """Index arrays beyond 4096 elements: numfuse's gather/scatter
    (python/numfuse/_indexing.py); smaller ones run NumPy's kernel."""
    key = BIG_KEYS[k]
    a = nf.asarray(BIG.copy())
    same(a[key], BIG[key])
    x = BIG.copy()
    vals = RNG.standard_normal(x[key].shape)
    x[key] = vals
    a[key] = nf.asarray(vals)
    same(a, x)


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("n", [0, 7, 8, 64, 1001])
def test_mask_gather_scatter_and_nonzero_by_words(dtype, n):
    """A contiguous mask is read 8 bytes at a time: runs of false, runs of
    true, mixed words and a tail shorter than a word, for every item size;
    masks made by views of other bytes (values other than 0 and 1)."""
    rng = onp.random.default_rng(n)
    base = (rng.random(n) * 100).astype(dtype)
    masks = [onp.zeros(n, bool), onp.ones(n, bool), rng.random(n) < 0.5,
             (onp.arange(n) // 16) % 2 == 0, onp.arange(n) >= n - 3]
    raw = rng.integers(0, 4, n).astype(onp.uint8)
    for k, m in enumerate(masks + [raw]):
        a = base.copy()
        x = nf.asarray(base.copy())
        mk = nf.asarray(raw).view(bool) if k == len(masks) else nf.asarray(m)
        m = raw.view(bool) if k == len(masks) else m
        same(x[mk], a[m])
        same(nf.nonzero(mk)[0], onp.nonzero(m)[0])
        vals = a[m][::-1].copy()
        x[mk] = nf.asarray(vals)
        a[m] = vals
        same(x, a)
        x[mk] = onp.dtype(dtype).type(1)
        a[m] = onp.dtype(dtype).type(1)
        same(x, a)
    m2 = (rng.random((3, n)) < 0.3)
    for g, w in zip(nf.nonzero(nf.asarray(m2)), onp.nonzero(m2)):
        same(g, w)


_LAYOUT_KEYS = {
    "a[:, [0, 2]]": lambda x: x[:, [0, 2]],
    "a[[0, 2]]": lambda x: x[[0, 2]],
    "a[:, :, [1, 3]]": lambda x: x[:, :, [1, 3]],
    "a[[0, 2], :, [1, 3]]": lambda x: x[[0, 2], :, [1, 3]],
    "a[..., [0]]": lambda x: x[..., [0]],
    "a[:, [0, 2], 1:3]": lambda x: x[:, [0, 2], 1:3],
    "a[:, [[0], [2]]]": lambda x: x[:, [[0], [2]]],
    "a[:, [0, 2], [1, 3]]": lambda x: x[:, [0, 2], [1, 3]],
    "a[1:, [0, 2]]": lambda x: x[1:, [0, 2]],
    "a[::-1, [0, 2]]": lambda x: x[::-1, [0, 2]],
    "a[1][:, [0, 2, 5]]": lambda x: x[1][:, [0, 2, 5]],
    "a[mask2d]": lambda x: x[onp.eye(3, 4, dtype=bool)],
    "a[:, mask]": lambda x: x[:, onp.array([True, False, True, False])],
}


@pytest.mark.parametrize("layout", ["C", "F", "transposed", "sliced"])
@pytest.mark.parametrize("key", sorted(_LAYOUT_KEYS))
def test_advanced_index_result_laid_out_as_numpys(key, layout):
    """NumPy lays out an advanced index's result with the index dimensions
    outermost in memory and the other dimensions in the source's K order
    (a[:, [0, 2]] of a C array is (idx, rows, columns) in memory); numfuse's
    result has NumPy's strides, so a later reshape or ravel is a view or a
    copy where NumPy's is."""
    base = onp.arange(120.0).reshape(3, 4, 10)
    # (every source of shape (3, 4, 10))
    src = {"C": base, "F": onp.asfortranarray(base),
           "transposed": onp.ascontiguousarray(base.transpose(2, 0, 1)).transpose(1, 2, 0),
           "sliced": onp.arange(240.0).reshape(3, 4, 20)[:, :, ::2]}[layout]
    f = _LAYOUT_KEYS[key]
    expected = f(src)
    got = f(nf.asarray(src))
    assert onp.array_equal(onp.asarray(got), expected)
    assert [s for s, n in zip(got.strides, got.shape) if n > 1] == \
        [s for s, n in zip(expected.strides, expected.shape) if n > 1], (got.strides, expected.strides)

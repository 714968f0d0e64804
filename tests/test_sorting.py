"""Sorting and searching against NumPy: sort, argsort, partition,
searchsorted, nonzero, argwhere, flatnonzero, take, compress, extract,
take_along_axis, unique, median, percentile, quantile. Native: a
FallbackWarning fails these tests (conftest)."""

import numpy as onp
import pytest

import numfuse as nf

RNG = onp.random.default_rng(7)
DTYPES = ["float64", "float32", "int64", "int32", "uint8", "bool", "int8", "uint64"]


def data(shape, dtype, nan=False, ties=False):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if onp.dtype(dtype).kind in "iu":
        hi = 5 if ties else 100
        return RNG.integers(0, hi, size=shape).astype(dtype)
    x = RNG.standard_normal(shape).astype(dtype)
    if ties:
        x = onp.round(x)
    if nan and x.size:
        x.flat[:: max(1, x.size // 5)] = onp.nan
    return x


def same(got, want):
    assert isinstance(got, nf.ndarray), type(got)
    g = onp.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    onp.testing.assert_array_equal(g, want)


SHAPES = [(0,), (1,), (17,), (5, 7), (3, 0, 4), (4, 3, 6), (300_001,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sort_every_axis(dtype, shape):
    x = data(shape, dtype, nan=True, ties=True)
    a = nf.asarray(x)
    for axis in list(range(-len(shape), len(shape))) + [None]:
        same(nf.sort(a, axis=axis), onp.sort(x, axis=axis))
        same(nf.sort(a, axis=axis, kind="stable"), onp.sort(x, axis=axis, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_argsort_stable_is_numpys(dtype, shape):
    x = data(shape, dtype, nan=True, ties=True)
    a = nf.asarray(x)
    for axis in list(range(-len(shape), len(shape))) + [None]:
        same(nf.argsort(a, axis=axis, kind="stable"), onp.argsort(x, axis=axis, kind="stable"))
        same(nf.argsort(a, axis=axis, stable=True), onp.argsort(x, axis=axis, stable=True))
        # The default kind: a valid sorting permutation (NumPy leaves ties unordered).
        got = onp.asarray(nf.argsort(a, axis=axis))
        ax = -1 if axis is None else axis
        xx = x.ravel() if axis is None else x
        onp.testing.assert_array_equal(onp.take_along_axis(xx, got, ax), onp.sort(xx, axis=ax))


def test_sort_views_and_pending_inputs(fusion):
    x = data((40, 30), "float64")
    a = nf.asarray(x)
    same(nf.sort(a.T[::2] * 2.0 + 1.0, axis=0), onp.sort(x.T[::2] * 2.0 + 1.0, axis=0))
    same(nf.argsort(-a[:, ::3], axis=1, kind="stable"), onp.argsort(-x[:, ::3], axis=1, kind="stable"))


def test_ndarray_sort_in_place(fusion):
    x = data((20, 13), "float64", nan=True)
    a = nf.asarray(x.copy())
    b = a * 1.0  # pending, reads a: must see it unsorted
    v = a[:, 1:]  # a view sorts the memory it sees
    v.sort(axis=0)
    want = x.copy()
    want[:, 1:].sort(axis=0)
    onp.testing.assert_array_equal(onp.asarray(a), want)
    onp.testing.assert_array_equal(onp.asarray(b), x)
    a.sort(kind="stable")
    want.sort(kind="stable")
    onp.testing.assert_array_equal(onp.asarray(a), want)


def test_sort_errors():
    a = nf.asarray(onp.arange(5.0))
    for fn in (onp.sort, onp.argsort):
        for bad in (dict(kind="foo"), dict(axis=1)):
            with pytest.raises(Exception) as e_np:
                fn(onp.arange(5.0), **bad)
            with pytest.raises(type(e_np.value), match=str(e_np.value)[:20]):
                getattr(nf, fn.__name__)(a, **bad)
    with pytest.raises(onp.exceptions.AxisError):
        nf.sort(nf.asarray(onp.float64(1.0)))
    with pytest.raises(ValueError):
        nf.sort(a, kind="stable", stable=True)


@pytest.mark.parametrize("dtype", ["float64", "int64", "float32"])
def test_partition_puts_kth_in_place(dtype):
    x = data((9, 31), dtype, ties=True)
    a = nf.asarray(x)
    for kth in (0, 5, -1, [2, 20]):
        p = onp.asarray(nf.partition(a, kth, axis=1))
        want = onp.partition(x, kth, axis=1)
        for k in onp.atleast_1d(kth):
            onp.testing.assert_array_equal(p[:, k], want[:, k])
            assert (p[:, :k % 31] <= p[:, [k]]).all() and (p[:, k % 31:] >= p[:, [k]]).all()
        ip = onp.asarray(nf.argpartition(a, kth, axis=1))
        onp.testing.assert_array_equal(onp.take_along_axis(x, ip, 1)[:, onp.atleast_1d(kth)],
                                       want[:, onp.atleast_1d(kth)])
    with pytest.raises(ValueError):
        nf.partition(a, 31, axis=1)
    c = nf.asarray(x.copy())
    c.partition(4)
    onp.testing.assert_array_equal(onp.asarray(c)[:, 4], want[:, 4] if False else onp.partition(x, 4)[:, 4])


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "uint8"])
def test_searchsorted(side, dtype):
    s = onp.sort(data((50,), dtype, ties=True, nan=True))
    v = data((4, 9), dtype, ties=True, nan=True)
    same(nf.searchsorted(nf.asarray(s), nf.asarray(v), side=side), onp.searchsorted(s, v, side=side))
    got = nf.searchsorted(nf.asarray(s), v.flat[0], side=side)
    want = onp.searchsorted(s, v.flat[0], side=side)
    assert type(got) is type(want) and got == want
    perm = onp.argsort(-onp.arange(50))
    rev = s[::-1].copy()
    same(nf.searchsorted(nf.asarray(rev), nf.asarray(v), side=side, sorter=nf.asarray(perm)),
         onp.searchsorted(rev, v, side=side, sorter=perm))
    same(nf.asarray(s).searchsorted(nf.asarray(v), side=side), s.searchsorted(v, side=side))


def test_searchsorted_mixed_types_and_errors():
    s = onp.arange(10)
    same(nf.searchsorted(nf.asarray(s), nf.asarray([2.5, -1.0, 9.5])), onp.searchsorted(s, [2.5, -1.0, 9.5]))
    with pytest.raises(ValueError):
        nf.searchsorted(nf.asarray(s), 3, side="middle")
    with pytest.raises(ValueError):
        nf.searchsorted(nf.asarray(onp.ones((2, 2))), 3)


@pytest.mark.parametrize("shape", [(0,), (13,), (4, 5), (2, 3, 4), (100_003,)])
def test_nonzero_family(shape):
    x = data(shape, "float64")
    x[x < 0.3] = 0
    a = nf.asarray(x)
    got, want = nf.nonzero(a), onp.nonzero(x)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w)
    same(nf.argwhere(a), onp.argwhere(x))
    same(nf.flatnonzero(a), onp.flatnonzero(x))
    same(nf.argwhere(nf.asarray(onp.float64(2.0))), onp.argwhere(onp.float64(2.0)))
    with pytest.raises(ValueError):
        nf.nonzero(nf.asarray(onp.float64(1.0)))


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_take_compress_extract(dtype):
    x = data((6, 7, 3), dtype)
    a = nf.asarray(x)
    for idx, axis in (([0, -1, 2, 2], 1), (onp.array([[1, 0], [5, 5]]), 0), (2, 2), ([4, 100 % 84], None)):
        same(nf.take(a, idx, axis=axis) if onp.ndim(idx) else nf.take(a, nf.asarray([idx]), axis=axis)[..., 0],
             onp.take(x, idx, axis=axis) if onp.ndim(idx) else onp.take(x, [idx], axis=axis)[..., 0])
    same(a.take([1, 2], axis=0), x.take([1, 2], axis=0))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 7"):
        nf.take(a, [7], axis=1)
    cond = onp.array([True, False, True, True, False, False, True])
    same(nf.compress(cond, a, axis=1), onp.compress(cond, x, axis=1))
    same(nf.compress(cond[:3], a), onp.compress(cond[:3], x))
    same(nf.extract(x.astype(float) > 0.5, a), onp.extract(x.astype(float) > 0.5, x))


def test_take_along_axis():
    x = data((5, 8), "float64")
    a = nf.asarray(x)
    for axis in (0, 1, -1):
        idx = onp.argsort(x, axis=axis)
        same(nf.take_along_axis(a, nf.asarray(idx), axis), onp.take_along_axis(x, idx, axis))
    idx = onp.array([[0], [7], [-1], [3], [2]])
    same(nf.take_along_axis(a, nf.asarray(idx), 1), onp.take_along_axis(x, idx, 1))
    with pytest.raises(IndexError):
        nf.take_along_axis(a, nf.asarray(onp.array([[8]] * 5)), 1)


@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "bool", "uint8"])
@pytest.mark.parametrize("shape", [(0,), (1,), (50,), (6, 9)])
def test_unique(dtype, shape):
    x = data(shape, dtype, nan=True, ties=True)
    a = nf.asarray(x)
    same(nf.unique(a), onp.unique(x))
    for flags in ((True, False, False), (False, True, False), (False, False, True), (True, True, True)):
        got = nf.unique(a, *flags)
        want = onp.unique(x, *flags)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    same(nf.unique(a, equal_nan=False), onp.unique(x, equal_nan=False))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8"])
@pytest.mark.parametrize("shape", [(1,), (10,), (11,), (4, 7), (3, 4, 5)])
def test_median_quantile_percentile(dtype, shape):
    x = data(shape, dtype, nan=dtype.startswith("float") and shape == (4, 7))
    a = nf.asarray(x)
    axes = [None] + list(range(-len(shape), len(shape))) + ([(0, 2)] if len(shape) == 3 else [])
    for axis in axes:
        for keepdims in (False, True):
            w = onp.median(x, axis=axis, keepdims=keepdims)
            g = nf.median(a, axis=axis, keepdims=keepdims)
            onp.testing.assert_allclose(onp.asarray(g), w, rtol=1e-6 if dtype == "float32" else 1e-15)
            assert onp.asarray(g).dtype == onp.asarray(w).dtype and onp.shape(g) == onp.shape(w)
            for q in (0.0, 0.3, 0.5, 1.0, [0.1, 0.9], onp.array([[0.25], [0.75]])):
                w = onp.quantile(x, q, axis=axis, keepdims=keepdims)
                g = nf.quantile(a, q, axis=axis, keepdims=keepdims)
                onp.testing.assert_allclose(onp.asarray(g), w, rtol=1e-6 if dtype == "float32" else 1e-14)
                assert onp.asarray(g).dtype == onp.asarray(w).dtype and onp.shape(g) == onp.shape(w), (q, axis)
            w = onp.percentile(x, [5, 50], axis=axis, keepdims=keepdims)
            g = nf.percentile(a, [5, 50], axis=axis, keepdims=keepdims)
            onp.testing.assert_allclose(onp.asarray(g), w, rtol=1e-6 if dtype == "float32" else 1e-14)
    with pytest.raises(ValueError, match="Percentiles must be in the range"):
        nf.percentile(a, 101)
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        nf.quantile(a, -0.1)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint8"])
def test_quantile_percentile_bit_for_bit_as_numpy(dtype):
    # NumPy's own steps: the neighbours' difference in a's dtype (int8 wraps,
    # float32 rounds), gamma weak for a Python q and of the virtual index's
    # dtype otherwise, an integer q taking the element in a's dtype, NaN and
    # inf slices, a 0-d result of a NaN slice in a's dtype, scalar overflow
    # warnings: values, dtypes and warnings exactly as NumPy's.
    import warnings
    rng = onp.random.default_rng(7)
    qs = [0.0, 0.3, 0.5, 0.7, 1.0, 0, 1, [0.1, 0.9], onp.array([[0.25], [0.75]]), onp.float64(0.3),
          onp.array(0.6), [0, 1], onp.float32(0.35)]
    ps = [5, 50, 99.5, 100, [5, 50], onp.float64(30.0), 30.0]
    for trial, shape in enumerate([(1,), (2,), (10,), (11,), (4, 7), (3, 4, 5)] * 2):
        if dtype.startswith("float"):
            x = rng.standard_normal(shape).astype(dtype)
            if trial >= 6:
                x.flat[:: 3] = onp.inf
                x.flat[:: 5] = onp.nan
        else:
            info = onp.iinfo(dtype)
            x = rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, size=shape).astype(dtype)
        a = nf.asarray(x)
        for axis in [None] + list(range(x.ndim)):
            for fn, qlist in (("quantile", qs), ("percentile", ps)):
                for q in qlist:
                    with warnings.catch_warnings(record=True) as w1:
                        warnings.simplefilter("always")
                        want = onp.asarray(getattr(onp, fn)(x, q, axis=axis))
                    with warnings.catch_warnings(record=True) as w2:
                        warnings.simplefilter("always")
                        got = onp.asarray(getattr(nf, fn)(a, q, axis=axis))
                    what = (fn, shape, axis, q)
                    assert got.dtype == want.dtype and got.shape == want.shape, what
                    assert onp.atleast_1d(got).tobytes() == onp.atleast_1d(want).tobytes(), (what, got, want)
                    # (the same warnings; NumPy's say "scalar" where its operands were scalars)
                    assert ({str(m.message).replace("scalar ", "") for m in w2}
                            == {str(m.message).replace("scalar ", "") for m in w1}), what


def test_median_of_pending_work_fuses_after_the_sort(lazy):
    x = data((64, 64), "float64")
    a = nf.asarray(x)
    m = nf.median(a * 2.0 - 1.0, axis=1) + 1.0
    onp.testing.assert_allclose(onp.asarray(m), onp.median(x * 2.0 - 1.0, axis=1) + 1.0)


SET_OPS = ["intersect1d", "union1d", "setdiff1d", "setxor1d"]


@pytest.mark.parametrize("dtype", ["int64", "float64", "int8", "bool"])
@pytest.mark.parametrize("sizes", [(0, 5), (5, 0), (40, 25), (3, 3)])
def test_set_operations(dtype, sizes):
    x, y = data((sizes[0],), dtype, ties=True, nan=True), data((sizes[1],), dtype, ties=True, nan=True)
    a, b = nf.asarray(x), nf.asarray(y)
    for name in SET_OPS:
        same(getattr(nf, name)(a, b), getattr(onp, name)(x, y))
    ux, uy = onp.unique(x), onp.unique(y)
    for name in ("intersect1d", "setdiff1d", "setxor1d"):
        same(getattr(nf, name)(nf.asarray(ux), nf.asarray(uy), assume_unique=True),
             getattr(onp, name)(ux, uy, assume_unique=True))
    same(nf.isin(a, b), onp.isin(x, y))
    same(nf.isin(a, b, invert=True), onp.isin(x, y, invert=True))
    same(nf.isin(nf.asarray(x.reshape(-1, 1) if x.size else x), b), onp.isin(x.reshape(-1, 1) if x.size else x, y))


def test_set_operations_mixed_types():
    same(nf.isin(nf.asarray(onp.arange(6)), nf.asarray([1.5, 2.0, 4.0])), onp.isin(onp.arange(6), [1.5, 2.0, 4.0]))
    same(nf.union1d(nf.asarray([1, 2]), nf.asarray([2.5])), onp.union1d([1, 2], [2.5]))


@pytest.mark.parametrize("shape", [(12,), (4, 9)])
def test_lexsort(shape):
    keys = [data(shape, "int64", ties=True) for _ in range(3)]
    for axis in range(-len(shape), len(shape)):
        same(nf.lexsort(tuple(nf.asarray(k) for k in keys), axis=axis), onp.lexsort(tuple(keys), axis=axis))
    same(nf.lexsort(nf.asarray(onp.stack(keys))), onp.lexsort(onp.stack(keys)))
    with pytest.raises(ValueError):
        nf.lexsort((nf.asarray(keys[0]), nf.asarray(keys[1][..., :2])))


@pytest.mark.parametrize("right", [False, True])
def test_digitize(right):
    x = data((7, 11), "float64", nan=True)
    bins = onp.sort(data((9,), "float64"))
    same(nf.digitize(nf.asarray(x), nf.asarray(bins), right=right), onp.digitize(x, bins, right=right))
    same(nf.digitize(nf.asarray(x), nf.asarray(bins[::-1].copy()), right=right), onp.digitize(x, bins[::-1], right=right))
    with pytest.raises(ValueError, match="monotonically"):
        nf.digitize(nf.asarray(x), nf.asarray([1.0, 0.0, 2.0]))


def test_interp():
    xp = onp.sort(RNG.random(15) * 10)
    fp = RNG.standard_normal(15)
    x = onp.concatenate([RNG.random(200) * 12 - 1, xp, [onp.nan, onp.inf, -onp.inf]])
    same(nf.interp(nf.asarray(x), nf.asarray(xp), nf.asarray(fp)), onp.interp(x, xp, fp))
    same(nf.interp(nf.asarray(x), nf.asarray(xp), nf.asarray(fp), left=-5.0, right=5.0),
         onp.interp(x, xp, fp, left=-5.0, right=5.0))
    g, w = nf.interp(2.5, nf.asarray(xp), nf.asarray(fp)), onp.interp(2.5, xp, fp)
    assert type(g) is type(w) and g == w
    same(nf.interp(nf.asarray(x), nf.asarray(xp[:1]), nf.asarray(fp[:1])), onp.interp(x, xp[:1], fp[:1]))
    same(nf.interp(nf.asarray(onp.arange(5)), nf.asarray(onp.arange(0, 10, 2)), nf.asarray(onp.arange(5))),
         onp.interp(onp.arange(5), onp.arange(0, 10, 2), onp.arange(5)))
    with pytest.raises(ValueError):
        nf.interp(nf.asarray(x), nf.asarray(xp), nf.asarray(fp[:3]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nan_quantiles(dtype):
    x = data((6, 9), dtype)
    x[x < -0.3] = onp.nan
    x[2] = onp.nan  # an all-NaN row
    a = nf.asarray(x)
    rtol = 1e-6 if dtype == "float32" else 1e-14
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            for fn, args in ((onp.nanmedian, ()), (onp.nanquantile, (0.3,)), (onp.nanpercentile, ([10, 50, 95],))):
                with pytest.warns(RuntimeWarning, match="All-NaN slice") if axis in (1, -1) else _nothing():
                    w = fn(x, *args, axis=axis, keepdims=keepdims)
                with pytest.warns(RuntimeWarning, match="All-NaN slice") if axis in (1, -1) else _nothing():
                    g = getattr(nf, fn.__name__)(a, *args, axis=axis, keepdims=keepdims)
                onp.testing.assert_allclose(onp.asarray(g), w, rtol=rtol)
                assert onp.asarray(g).dtype == onp.asarray(w).dtype and onp.shape(g) == onp.shape(w)
    ints = data((5, 5), "int64")
    onp.testing.assert_array_equal(onp.asarray(nf.nanmedian(nf.asarray(ints), axis=0)), onp.nanmedian(ints, axis=0))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.mark.parametrize("dtype", ["bool", "int32", "float64", "uint8"])
@pytest.mark.parametrize("shape", [(0,), (7,), (3, 4), (2, 3, 2)])
def test_where_of_one_argument_is_nonzero_natively(dtype, shape):
    # (A NumPy fallback would warn, which fails the test: conftest.)
    x = (onp.arange(int(onp.prod(shape))).reshape(shape) % 3).astype(dtype)
    got = nf.where(nf.asarray(x))
    want = onp.where(x)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is nf.ndarray
        onp.testing.assert_array_equal(onp.asarray(g), w)
        assert onp.asarray(g).dtype == w.dtype


@pytest.mark.parametrize("c", [True, 1.5, 0])
def test_where_of_one_0d_argument_raises_numpy_s_error(c):
    with pytest.raises(ValueError) as e:
        onp.where(onp.asarray(c))
    with pytest.raises(ValueError) as g:
        nf.where(nf.asarray(c))
    assert str(g.value) == str(e.value)


@pytest.mark.parametrize("view", ["T", "every other", "transposed reversed", "C"])
def test_sort_result_laid_out_as_a_copy_in_k_order(view):
    """NumPy's sort is a.copy(order="K") sorted in place: a transposed
    input's result is transposed in memory too (its strides are NumPy's)."""
    a = onp.random.default_rng(3).standard_normal((3, 4, 5))
    views = {"T": lambda x: x.T, "every other": lambda x: x[:, ::2], "transposed reversed":
             lambda x: x.transpose(1, 0, 2)[::-1], "C": lambda x: x}
    v = views[view]
    for axis in (0, 1, -1, None):
        expected = onp.sort(v(a), axis=axis)
        got = nf.sort(v(nf.asarray(a)), axis=axis)
        assert got.strides == expected.strides, (axis, got.strides, expected.strides)
        assert onp.array_equal(onp.asarray(got), expected)

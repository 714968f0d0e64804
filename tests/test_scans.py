"""cumsum / cumprod: MDH scans (the prefix-sum combine operator), checked
against NumPy exactly (both accumulate sequentially in the result type)."""

import numpy as onp
import pytest

import numfuse as nf
from conftest import ALL_DTYPES, assert_same, sum_rtol

rng = onp.random.default_rng(3)


def data(shape, dtype):
    dt = onp.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-2, 2, shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "u":
        return rng.integers(0, 4, shape).astype(dt)
    return rng.integers(-3, 4, shape).astype(dt)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dtypes_and_axes(fn, dtype):
    a = data((4, 5, 6), dtype)
    for axis in (None, 0, 1, 2, -1):
        got = getattr(nf, fn)(nf.asarray(a), axis=axis)
        assert_same(got, getattr(onp, fn)(a, axis=axis), rtol=0)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_methods_dtype_argument_and_views(fn):
    a = data((7, 9), "float64")
    x = nf.asarray(a)
    assert_same(getattr(x, fn)(axis=0), getattr(a, fn)(axis=0), rtol=0)
    assert_same(getattr(x, fn)(1, dtype=onp.float32), getattr(a, fn)(1, dtype=onp.float32), rtol=0)
    assert_same(getattr(nf, fn)(x.T[::-1, 2:], axis=1), getattr(onp, fn)(a.T[::-1, 2:], axis=1), rtol=0)
    assert_same(getattr(nf, fn)(x[::2, ::-3]), getattr(onp, fn)(a[::2, ::-3]), rtol=0)
    i = data((6, 4), "int32")
    assert_same(getattr(nf, fn)(nf.asarray(i), axis=0, dtype=onp.int8), getattr(onp, fn)(i, axis=0, dtype=onp.int8))


def test_out_in_place_and_overlapping():
    a = data((5, 8), "float64")
    x = nf.asarray(a.copy())
    r = nf.cumsum(x, axis=1, out=x)
    assert r is x
    assert_same(x, onp.cumsum(a, axis=1), rtol=0)
    # Output overlapping the input through another view: NumPy's result.
    y = nf.asarray(a.copy())
    e = a.copy()
    nf.cumsum(y[:, :-1], axis=1, out=y[:, 1:])
    onp.cumsum(e[:, :-1], axis=1, out=e[:, 1:])
    assert_same(y, e, rtol=0)
    o = nf.zeros((5, 8))
    assert nf.cumprod(nf.asarray(a), axis=0, out=o) is o
    assert_same(o, onp.cumprod(a, axis=0), rtol=0)


def test_empty_zero_d_and_negative_zero():
    assert_same(nf.cumsum(nf.zeros((0, 3)), axis=0), onp.cumsum(onp.zeros((0, 3)), axis=0))
    assert_same(nf.cumsum(nf.zeros((3, 0)), axis=1), onp.cumsum(onp.zeros((3, 0)), axis=1))
    assert_same(nf.cumsum(nf.asarray(onp.float64(2.5))), onp.cumsum(onp.float64(2.5)))
    assert_same(nf.cumprod(nf.asarray(onp.int32(3)), axis=0), onp.cumprod(onp.int32(3), axis=0))
    z = onp.array([-0.0, -0.0])
    got = onp.asarray(nf.cumsum(nf.asarray(z)))
    assert onp.signbit(got[0]) and onp.signbit(got[1]) == onp.signbit(onp.cumsum(z)[1])


def test_errors_keep_earlier_results():
    a = nf.asarray(data((3, 4), "float64"))
    pending = a * 2.0
    with pytest.raises(onp.exceptions.AxisError):
        nf.cumsum(a, axis=2)
    with pytest.raises(ValueError):
        nf.cumsum(a, axis=1, out=nf.zeros((4, 3)))
    with pytest.raises(ValueError):
        nf.cumsum(a, out=nf.zeros((3, 4)))  # axis=None needs a 1-d out
    assert_same(pending, onp.asarray(a) * 2.0)


def test_scan_fuses_with_its_producer_and_is_expressed_as_prefix_sum(lazy):
    a = data((64, 100), "float64")
    x = nf.asarray(a)
    r = nf.cumsum(x * 2.0 + 1.0, axis=1)
    nf.flush()
    groups = nf.explain().groups
    assert len(groups) == 1 and "ps(+)" in groups[0]["mdh"]
    assert_same(r, onp.cumsum(a * 2.0 + 1.0, axis=1), rtol=0)
    # A consumer of the scan runs in a later group (constraint 4).
    s = nf.cumprod(x, axis=0) + 1.0
    nf.flush()
    assert len(nf.explain().groups) == 2
    assert_same(s, onp.cumprod(a, axis=0) + 1.0, rtol=0)


def test_long_scans():
    a = data(100_003, "float32")
    if sum_rtol() == 0:  # (the CPU: NumPy's sequential sum, to the bit)
        assert_same(nf.cumsum(nf.asarray(a)), onp.cumsum(a), rtol=0)
    else:  # a GPU's chunks reassociate it: within a few eps of the sum of |a| so far
        got = onp.asarray(nf.cumsum(nf.asarray(a))).astype(onp.float64)
        bound = 8 * onp.finfo(onp.float32).eps * onp.cumsum(onp.abs(a).astype(onp.float64))
        assert onp.all(onp.abs(got - onp.cumsum(a)) <= bound)
    b = data((3, 20_001), "int64")
    assert_same(nf.cumsum(nf.asarray(b), axis=1), onp.cumsum(b, axis=1))

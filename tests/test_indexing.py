"""Differential tests: basic and advanced indexing (get and set) against NumPy."""

import sys

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same, to_np


def pair(shape=(4, 5), dtype="int64", start=0):
    n = int(onp.prod(shape))
    e = (onp.arange(n, dtype="int64") + start).astype(dtype).reshape(shape)
    return nf.array(e), e


def assert_view(got, expected):
    """Same values, and the same strides NumPy gives the view."""
    assert isinstance(got, nf.ndarray)
    assert_same(got, expected)
    assert tuple(got.strides) == expected.strides, f"strides {got.strides} != {expected.strides}"


# ---------------------------------------------------------------------------
# Basic indexing: reading

INT_KEYS = [0, 3, -1, -4, (1, 2), (-1, -1), (0, -5), (2,)]


@pytest.mark.parametrize("key", INT_KEYS, ids=repr)
def test_integer_index(key):
    a, e = pair()
    got = a[key]
    exp = e[key]
    if onp.ndim(exp) == 0:
        # Full integer indexing gives a scalar in NumPy.
        assert to_np(got).shape == () or onp.isscalar(got)
        assert onp.asarray(got).item() == exp.item()
        assert onp.asarray(got).dtype == exp.dtype
    else:
        assert_view(got, exp)


def test_integer_index_scalar_values_all_dtypes():
    for dt in ["bool", "int8", "uint16", "int32", "uint64", "float32", "float64"]:
        a, e = pair((3, 4), dt)
        g = a[2, -1]
        assert onp.asarray(g).dtype == e.dtype
        assert onp.asarray(g).item() == e[2, -1].item()
        assert float(a[1, 1]) == float(e[1, 1])
        assert int(a[-1, 0]) == int(e[-1, 0])


SLICE_KEYS = [
    slice(None),
    slice(1, 3),
    slice(None, None, 2),
    slice(1, None, 3),
    slice(None, None, -1),
    slice(-1, None, -2),
    slice(3, 0, -1),
    slice(-2, -7, -1),
    slice(-100, 100),
    slice(100, -100, -1),
    slice(5, 100, 1),
    slice(3, 1),
    slice(2, 2),
    slice(0, 0, -1),
    slice(2, 5, -1),
    slice(None, -100, -3),
]


@pytest.mark.parametrize("s", SLICE_KEYS, ids=repr)
def test_slice_1d(s):
    a, e = pair((7,))
    assert_view(a[s], e[s])


@pytest.mark.parametrize("key", [
    (slice(None), slice(1, 4)),
    (slice(None, None, -1), slice(None, None, 2)),
    (slice(1, 3), -1),
    (-2, slice(None, None, -2)),
    (slice(None, None, 3), slice(4, 0, -2)),
    (slice(0, 0), slice(None)),
    (slice(None), slice(10, 20)),
    (Ellipsis, 1),
    (1, Ellipsis),
    (Ellipsis,),
    (Ellipsis, slice(None, None, -1)),
    (None, slice(None), None, 2),
    (slice(None), None),
    (None, None),
    (nf.newaxis, Ellipsis, nf.newaxis),
    (slice(1, 3), None, slice(None, None, -1)),
    (1, None, -1),
], ids=repr)
def test_basic_key_2d(key):
    a, e = pair((4, 5))
    got, exp = a[key], e[key]
    if onp.ndim(exp) == 0:
        assert onp.asarray(got).item() == exp.item()
    else:
        assert_view(got, exp)


@pytest.mark.parametrize("key", [
    (Ellipsis, 0),
    (0, Ellipsis, 0),
    (slice(None, None, -1), Ellipsis, slice(1, None, 2)),
    (None, Ellipsis, None, 1),
    (1, slice(None), None, slice(None, None, -2)),
    (slice(0, 1), slice(2, 3), slice(None, None, -1)),
], ids=repr)
def test_basic_key_3d(key):
    a, e = pair((3, 4, 5), "float32")
    assert_view(a[key], e[key])


def test_zero_d_array_indexing():
    e = onp.array(7.5)
    a = nf.array(e)
    assert a.shape == ()
    g = a[()]
    assert onp.asarray(g).item() == 7.5
    assert onp.asarray(g).dtype == onp.float64
    assert_view(a[...], e[...])
    assert_view(a[None], e[None])
    assert_view(a[..., None], e[..., None])
    with pytest.raises(IndexError):
        a[0]
    with pytest.raises(IndexError):
        e[0]


def test_zero_d_assign():
    e = onp.array(3, dtype="int32")
    a = nf.array(e)
    a[()] = 9
    e[()] = 9
    assert_same(a, e)
    a[...] = 2.7
    e[...] = 2.7
    assert_same(a, e)


def test_chain_of_views():
    a, e = pair((6, 8, 5), "float64")
    ga = a[1:, ::-1][..., ::2][::2, 1:-1][:, None][-1]
    ge = e[1:, ::-1][..., ::2][::2, 1:-1][:, None][-1]
    assert_view(ga, ge)
    ga2 = a.T[::-2][1:3].T[..., 0]
    ge2 = e.T[::-2][1:3].T[..., 0]
    assert_view(ga2, ge2)


def test_view_of_transposed_and_reshaped():
    a, e = pair((4, 6), "int32")
    assert_view(a.T[1:4, ::-1], e.T[1:4, ::-1])
    assert_view(a.reshape(2, 12)[:, 3::4], e.reshape(2, 12)[:, 3::4])
    assert_view(a[::2].reshape(2, 2, 3)[:, ::-1], e[::2].reshape(2, 2, 3)[:, ::-1])


def test_view_of_lazy_expression():
    a, e = pair((5, 6), "float64")
    ga = (a * 2 + 1)[1:-1, ::-2]
    ge = (e * 2 + 1)[1:-1, ::-2]
    assert_same(ga, ge)
    assert_same((a[::2] - a[1::2][:2].sum(axis=0))[..., 1], (e[::2] - e[1::2][:2].sum(axis=0))[..., 1])


def test_view_shares_memory_with_base():
    a, e = pair((4, 4), "int64")
    v = a[1:3, 1:3]
    v[...] = -1
    e[1:3, 1:3] = -1
    assert_same(a, e)
    w = a.T[::-1]
    w[0] = 100
    e.T[::-1][0] = 100
    assert_same(a, e)


def test_empty_slices_shapes():
    a, e = pair((4, 5))
    for key in [(slice(2, 2),), (slice(None), slice(5, None)), (slice(3, 1), slice(None, None, -1)),
                (slice(0, 0), None, 0)]:
        assert_view(a[key], e[key])
    assert_same(a[2:2].sum(axis=0), e[2:2].sum(axis=0))


@pytest.mark.fallback
def test_index_with_numpy_integer_types():
    a, e = pair((5, 5))
    assert_view(a[onp.int32(2)], e[onp.int32(2)])
    assert_view(a[onp.uint8(1):onp.int64(4)], e[onp.uint8(1):onp.int64(4)])
    assert onp.asarray(a[onp.int16(-1), onp.uint32(0)]).item() == e[-1, 0]


@pytest.mark.fallback
def test_index_with_0d_numfuse_int_array():
    a, e = pair((5, 5))
    i = nf.array(3)
    assert_same(a[i], e[3])


# ---------------------------------------------------------------------------
# Errors

@pytest.mark.parametrize("key", [5, -6, (0, 5), (0, -6), (4, 4, 0)], ids=repr)
def test_index_error_out_of_bounds_or_too_many(key):
    a, e = pair((5, 5))
    with pytest.raises(IndexError):
        e[key]
    with pytest.raises(IndexError):
        a[key]


def test_index_error_too_many_indices_with_slices():
    a, e = pair((5,))
    with pytest.raises(IndexError):
        e[1:2, :]
    with pytest.raises(IndexError):
        a[1:2, :]


def test_index_error_two_ellipses():
    a, e = pair((3, 3))
    with pytest.raises(IndexError):
        e[..., ...]
    with pytest.raises(IndexError):
        a[..., ...]


def test_setitem_index_error():
    a, e = pair((3, 3))
    with pytest.raises(IndexError):
        e[3] = 1
    with pytest.raises(IndexError):
        a[3] = 1
    with pytest.raises(IndexError):
        a[0, 0, 0] = 1


def test_slice_step_zero_raises():
    a, e = pair((5,))
    with pytest.raises(ValueError):
        e[::0]
    with pytest.raises(ValueError):
        a[::0]


@pytest.mark.fallback
def test_float_index_raises():
    a, e = pair((5,))
    with pytest.raises(IndexError):
        e[1.0]
    with pytest.raises(IndexError):
        a[1.0]


# ---------------------------------------------------------------------------
# Assignment into views

def test_assign_interior_expression(fusion):
    a, e = pair((6, 7), "float64")
    a[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    e[1:-1, 1:-1] = 0.25 * (e[:-2, 1:-1] + e[2:, 1:-1] + e[1:-1, :-2] + e[1:-1, 2:])
    assert_same(a, e)


def test_assign_overlapping_self(fusion):
    # The right-hand side reads memory the assignment writes: NumPy semantics
    # are "evaluate the RHS fully, then write".
    a, e = pair((10,), "int64")
    a[1:] = a[:-1]
    e[1:] = e[:-1]
    assert_same(a, e)
    a, e = pair((10,), "int64")
    a[:-1] = a[1:] * 2
    e[:-1] = e[1:] * 2
    assert_same(a, e)
    a, e = pair((10,), "int64")
    a[::-1] = a + 1
    e[::-1] = e + 1
    assert_same(a, e)


def test_assign_overlapping_transpose(fusion):
    a, e = pair((5, 5), "float64")
    a[...] = a.T + 1
    e[...] = e.T + 1
    assert_same(a, e)


def test_assign_scalar_to_view(fusion):
    a, e = pair((4, 6), "int32")
    a[::2, 1::2] = 7
    e[::2, 1::2] = 7
    a[-1] = -3
    e[-1] = -3
    a[:, -1] = 0
    e[:, -1] = 0
    a[1, 1] = 42
    e[1, 1] = 42
    assert_same(a, e)


def test_assign_broadcast_row_and_column(fusion):
    a, e = pair((4, 5), "float64")
    row = onp.arange(5, dtype="float64") * 10
    col = onp.arange(4, dtype="float64")[:, None] * -1
    a[...] = nf.array(row)
    e[...] = row
    assert_same(a, e)
    a[1:3] = nf.array(col[1:3])
    e[1:3] = col[1:3]
    assert_same(a, e)
    a[:, ::2] = [1.5, 2.5, 3.5]
    e[:, ::2] = [1.5, 2.5, 3.5]
    assert_same(a, e)


def test_assign_numpy_array_value():
    a, e = pair((3, 4), "int16")
    v = onp.array([[9], [8], [7]], dtype="int64")
    a[:, 1:3] = v
    e[:, 1:3] = v
    assert_same(a, e)


def test_assign_with_none_and_ellipsis_keys():
    a, e = pair((3, 4), "float32")
    a[None, ..., 1] = 5
    e[None, ..., 1] = 5
    a[..., None, ::-1][0] = onp.arange(4)
    e[..., None, ::-1][0] = onp.arange(4)
    a[..., None, ::-1][:, 0] = onp.arange(3)[:, None] * 10
    e[..., None, ::-1][:, 0] = onp.arange(3)[:, None] * 10
    assert_same(a, e)


def test_assign_into_view_of_view(fusion):
    a, e = pair((6, 6), "int64")
    v = a[1:, ::-1][::2]
    ve = e[1:, ::-1][::2]
    v[:, 1:3] = v[:, 3:5] * 10
    ve[:, 1:3] = ve[:, 3:5] * 10
    assert_same(a, e)


def test_assign_lazy_then_read_original(fusion):
    a, e = pair((5,), "float64")
    b = a * 2  # recorded before the write: must see the old values
    be = e * 2
    a[2] = 100.0
    e[2] = 100.0
    assert_same(b, be)
    assert_same(a, e)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "int64", "uint64"])
def test_assign_float_into_int_truncates(dtype):
    a, e = pair((6,), dtype)
    vals = onp.array([1.9, 2.1, 0.5, 3.999, 7.0, 0.0])
    a[...] = nf.array(vals)
    e[...] = vals
    assert_same(a, e)
    a[0] = 5.7
    e[0] = 5.7
    a[1:3] = 2.99
    e[1:3] = 2.99
    assert_same(a, e)


def test_assign_negative_float_into_signed_int_truncates_toward_zero():
    a, e = pair((4,), "int32")
    vals = [-1.9, -0.5, -2.5, 3.7]
    a[...] = vals
    e[...] = vals
    assert_same(a, e)


def test_assign_into_bool():
    a, e = pair((5,), "bool")
    a[...] = nf.array([0.0, 0.1, -2.0, 0.0, 3.0])
    e[...] = onp.array([0.0, 0.1, -2.0, 0.0, 3.0])
    assert_same(a, e)
    a[1] = 0
    e[1] = 0
    assert_same(a, e)


def test_assign_int_into_float32():
    a, e = pair((3,), "float32")
    a[...] = nf.array([16777217, 2, -3], dtype="int64")
    e[...] = onp.array([16777217, 2, -3], dtype="int64")
    assert_same(a, e)


@pytest.mark.parametrize("dtype,value", [("int8", 128), ("int8", -129), ("uint8", 256), ("uint8", -1),
                                         ("int16", 2**15), ("uint32", 2**32), ("int64", 2**63),
                                         ("uint64", -1)])
def test_assign_python_int_out_of_range_overflowerror(dtype, value):
    a, e = pair((3,), dtype)
    with pytest.raises(OverflowError):
        e[0] = value
    with pytest.raises(OverflowError):
        a[0] = value
    with pytest.raises(OverflowError):
        a[1:] = value
    assert_same(a, e)  # unchanged


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_assign_nan_into_int_valueerror(dtype):
    a, e = pair((3,), dtype)
    with pytest.raises(ValueError):
        e[0] = float("nan")
    with pytest.raises(ValueError):
        a[0] = float("nan")
    with pytest.raises(ValueError):
        a[...] = nf.nan
    assert_same(a, e)


def test_assign_broadcast_error_valueerror():
    a, e = pair((4, 5), "float64")
    with pytest.raises(ValueError):
        e[:, 1:3] = onp.ones(3)
    with pytest.raises(ValueError):
        a[:, 1:3] = nf.ones(3)
    with pytest.raises(ValueError):
        a[...] = nf.ones((2, 5))
    with pytest.raises(ValueError):
        a[0] = [1, 2]
    assert_same(a, e)


def test_assign_size1_leading_dims_dropped():
    # NumPy allows assigning a value with extra leading length-1 axes.
    a, e = pair((3, 4), "int64")
    a[1] = nf.ones((1, 1, 4), dtype="int64") * 5
    e[1] = onp.ones((1, 1, 4), dtype="int64") * 5
    assert_same(a, e)


# ---------------------------------------------------------------------------
# Advanced indexing: get

ADV_GET_KEYS = [
    [0, 2, -1],
    onp.array([3, 0, 0, 1]),
    (onp.array([0, 1, 3]), onp.array([4, -1, 0])),
    (slice(1, 3), [0, 4]),
    ([2, 0], slice(None, None, -2)),
    (Ellipsis, [1, 1, 3]),
    (onp.array([[0, 1], [2, 3]]), 1),
    (onp.array([[0], [3]]), onp.array([1, 2, 4])),
    (None, [0, 2]),
    onp.array([True, False, True, False]),
    (slice(None), onp.array([False, True, True, False, True])),
    onp.array([], dtype=onp.intp),
]


@pytest.mark.fallback
@pytest.mark.parametrize("key", ADV_GET_KEYS, ids=lambda k: repr(k).replace("\n", ""))
def test_advanced_get(key):
    a, e = pair((4, 5), "float64")
    assert_same(a[key], e[key])


@pytest.mark.fallback
def test_advanced_get_with_numfuse_index_arrays():
    a, e = pair((4, 5), "int32")
    ie = onp.array([3, 1, 1])
    assert_same(a[nf.array(ie)], e[ie])
    assert_same(a[nf.array(ie), nf.array(ie)], e[ie, ie])
    m = e % 3 == 0
    assert_same(a[nf.array(m)], e[m])
    assert_same(a[a % 3 == 0], e[m])  # a lazy mask


@pytest.mark.fallback
def test_advanced_get_is_copy():
    a, e = pair((5,), "int64")
    b = a[[0, 1, 2]]
    b[...] = -1
    assert_same(a, e)
    assert_same(b, onp.full(3, -1))


@pytest.mark.fallback
def test_advanced_get_on_strided_view_and_lazy_values():
    a, e = pair((6, 6), "float64")
    va = (a * 3)[::-1, 1::2]
    ve = (e * 3)[::-1, 1::2]
    assert_same(va[[0, 4], [2, 0]], ve[[0, 4], [2, 0]])
    assert_same(va[va > 50], ve[ve > 50])


@pytest.mark.fallback
def test_boolean_mask_all_dims_and_0d_bool():
    a, e = pair((3, 4), "int16")
    m = e > 4
    assert_same(a[nf.array(m)], e[m])
    assert_same(a[True], e[True])
    assert_same(a[False], e[False])


def test_advanced_indexing_warns_once_at_the_users_line():
    import warnings

    # (Advanced indices apart from each other: NumPy's indexing; the keys that
    # are one gather are native, tests/test_advanced_indexing.py.)
    # (Small keys run NumPy's indexing kernel as a routine, without a warning.)
    nf._fallback._warned.discard("advanced (integer/boolean array) indexing")
    a = nf.arange(2 * 3 * 5000.0).reshape(2, 3, 5000)
    x = onp.arange(2 * 3 * 5000.0).reshape(2, 3, 5000)
    big = onp.arange(4200) % 5000
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        b = a[0, :, nf.array(big)]; line = sys._getframe().f_lineno  # noqa: E702
        a[1, :, big] = b
    fw = [m for m in w if issubclass(m.category, nf.FallbackWarning)]
    assert len(fw) == 1 and fw[0].filename == __file__ and fw[0].lineno == line, [(m.filename, m.lineno) for m in fw]
    assert type(b) is nf.ndarray
    xb = x[0, :, big]
    x[1, :, big] = xb
    assert_same(a, x)


@pytest.mark.fallback
def test_advanced_get_index_errors():
    a, e = pair((4, 5))
    with pytest.raises(IndexError):
        e[[0, 4]]
    with pytest.raises(IndexError):
        a[[0, 4]]
    with pytest.raises(IndexError):
        a[:, [-6]]
    with pytest.raises(IndexError):
        a[onp.array([True, False])]


# ---------------------------------------------------------------------------
# Advanced indexing: set

@pytest.mark.fallback
def test_advanced_set_int_array(fusion):
    a, e = pair((4, 5), "float64")
    a[[0, 2]] = 1.5
    e[[0, 2]] = 1.5
    a[[1, 3], [4, 0]] = nf.array([7.0, 8.0])
    e[[1, 3], [4, 0]] = [7.0, 8.0]
    a[:, [1, -1]] = a[:, [0, 2]] * 2
    e[:, [1, -1]] = e[:, [0, 2]] * 2
    assert_same(a, e)


@pytest.mark.fallback
def test_advanced_set_bool_mask(fusion):
    a, e = pair((4, 5), "int64")
    a[a % 2 == 0] = -a[a % 2 == 0]
    e[e % 2 == 0] = -e[e % 2 == 0]
    assert_same(a, e)
    a[a < -5] = 0
    e[e < -5] = 0
    assert_same(a, e)
    m = onp.array([True, False, False, True])
    a[nf.array(m), 1:3] = nf.array([[10, 11], [12, 13]])
    e[m, 1:3] = [[10, 11], [12, 13]]
    assert_same(a, e)


@pytest.mark.fallback
def test_advanced_set_then_lazy_ops(fusion):
    a, e = pair((8,), "float64")
    b = a + 1  # recorded before the fancy write
    be = e + 1
    a[[1, 5]] = 0
    e[[1, 5]] = 0
    c = a * 2
    ce = e * 2
    assert_same(b, be)
    assert_same(c, ce)


@pytest.mark.fallback
def test_advanced_set_into_view(fusion):
    a, e = pair((5, 6), "int32")
    v = a[1:, ::2]
    ve = e[1:, ::2]
    v[[0, 2], [1, 2]] = 99
    ve[[0, 2], [1, 2]] = 99
    assert_same(a, e)


@pytest.mark.fallback
def test_advanced_set_repeated_indices_last_wins():
    a, e = pair((5,), "int64")
    a[[1, 1, 1]] = nf.array([4, 5, 6])
    e[[1, 1, 1]] = [4, 5, 6]
    assert_same(a, e)


@pytest.mark.fallback
def test_advanced_set_casting_and_errors():
    a, e = pair((5,), "int8")
    a[[0, 1]] = [2.7, -3.9]
    e[[0, 1]] = [2.7, -3.9]
    assert_same(a, e)
    with pytest.raises(IndexError):
        a[[5]] = 1
    with pytest.raises(ValueError):
        a[[0, 1]] = [1, 2, 3]


def test_advanced_set_on_broadcast_view_readonly():
    a = nf.broadcast_to(nf.arange(3), (2, 3))
    e = onp.broadcast_to(onp.arange(3), (2, 3))
    with pytest.raises(ValueError):
        e[[0], [1]] = 5
    with pytest.raises(ValueError):
        a[[0], [1]] = 5
    with pytest.raises(ValueError):
        a[0, 1] = 5


# ---------------------------------------------------------------------------
# Edge cases found while probing

def test_slice_huge_step():
    import sys

    a, e = pair((5,))
    assert_same(a[::sys.maxsize], e[::sys.maxsize])
    assert_same(a[::-sys.maxsize], e[::-sys.maxsize])


def test_slice_large_steps():
    a, e = pair((5,))
    for st in (5, 100, 2**31, 2**40):
        assert_same(a[::st], e[::st])
        assert_same(a[::-st], e[::-st])
        assert_same(a[1::st], e[1::st])


@pytest.mark.parametrize("nan", [onp.float64("nan"), onp.float32("nan")], ids=["float64", "float32"])
def test_assign_numpy_nan_scalar_into_int(nan):
    a, e = pair((4,), "int16")
    with pytest.raises(ValueError):
        e[1:] = nan
    with pytest.raises(ValueError):
        a[1:] = nan


@pytest.mark.parametrize("dtype,value", [("int16", onp.int64(300000)), ("int64", onp.uint64(2**64 - 1))],
                         ids=["int64->int16", "uint64->int64"])
def test_assign_numpy_int_scalar_out_of_range(dtype, value):
    a, e = pair((4,), dtype)
    with pytest.raises(OverflowError):
        e[0] = value
    with pytest.raises(OverflowError):
        a[0] = value


@pytest.mark.parametrize("dtype,value", [("int32", 1e10), ("int8", 1000.0), ("uint8", -1.0), ("int64", 1e19)])
def test_assign_python_float_out_of_int_range(dtype, value):
    a, e = pair((4,), dtype)
    with pytest.raises(OverflowError):
        e[0] = value
    with pytest.raises(OverflowError):
        a[0] = value


def test_assign_python_float_in_int_range():
    for dtype, value in [("int8", 127.9), ("int8", -128.9), ("uint8", 255.5), ("int32", -2.0e9)]:
        a, e = pair((3,), dtype)
        a[1] = value
        e[1] = value
        assert_same(a, e)


def test_assign_numpy_int_scalar_in_range():
    a, e = pair((4,), "int16")
    a[1:] = onp.int64(300)
    e[1:] = onp.int64(300)
    a[0] = onp.uint8(7)
    e[0] = onp.uint8(7)
    assert_same(a, e)


def test_assign_array_values_wrap_like_numpy():
    # Array (not scalar) values are cast unsafely on assignment.
    for dt, vals in [("int8", [300, -1, 5, 128, 1000]), ("uint8", [-1, -2, 5, 128, 1000]),
                     ("uint64", [-1, -2, 5, 128, 1000])]:
        a, e = pair((5,), dt)
        src = onp.array(vals, dtype="int64")
        a[...] = nf.array(src)
        e[...] = src
        assert_same(a, e)


def test_assign_big_python_ints_at_the_limits():
    a, e = pair((3,), "uint64")
    a[0] = 2**64 - 1
    e[0] = 2**64 - 1
    assert_same(a, e)
    a, e = pair((3,), "int64")
    a[0] = -2**63
    e[0] = -2**63
    a[1] = 2**63 - 1
    e[1] = 2**63 - 1
    assert_same(a, e)
    a, e = pair((3,), "float32")
    a[0] = 2**70
    e[0] = 2**70
    assert_same(a, e)


def test_assign_inf_into_int_overflowerror():
    a, e = pair((3,), "int32")
    with pytest.raises(OverflowError):
        e[0] = float("inf")
    with pytest.raises(OverflowError):
        a[0] = float("inf")


@pytest.mark.fallback
def test_nonadjacent_advanced_indices_move_to_front():
    a, e = pair((2, 3, 4))
    assert_same(a[[0, 1], :, [1, 2]], e[[0, 1], :, [1, 2]])
    assert_same(a[:, [0, 1], [1, 2]], e[:, [0, 1], [1, 2]])
    assert_same(a[:, [[0], [1]], [1, 2]], e[:, [[0], [1]], [1, 2]])
    a[[0, 1], :, [1, 2]] = 9
    e[[0, 1], :, [1, 2]] = 9
    assert_same(a, e)


def test_size1_slice_strides():
    a, e = pair((3, 4))
    assert_view(a[1:2], e[1:2])
    assert_view(a[:, 0:1], e[:, 0:1])
    assert_view(a[0:1, None], e[0:1, None])
    a3, e3 = pair((3, 4, 5), "int16")
    assert_view(a3[::2, ::-3], e3[::2, ::-3])
    assert_view(a3.T[1], e3.T[1])
    assert_view(a3[..., 0:1], e3[..., 0:1])


def test_iteration_yields_views():
    a, e = pair((3, 4), "float32")
    rows = list(a)
    assert len(rows) == 3
    for r, re_ in zip(rows, e):
        assert_view(r, re_)
    assert a[-1:-4:-1, 2].tolist() == e[-1:-4:-1, 2].tolist()


@pytest.mark.parametrize("value", [[0], [], [1, 2], (0,), onp.array([0]), onp.array([[5]]), onp.array([0.5]),
                                   onp.array([]), onp.array([1, 2])],
                         ids=["list0", "empty_list", "list2", "tuple", "arr0", "arr11", "arrf", "empty_arr", "arr2"])
@pytest.mark.parametrize("dtype", ["bool", "int64", "uint8", "float64", "complex128"])
def test_element_assignment_of_a_sequence(dtype, value):
    # NumPy 2.4: an element takes a scalar or a 0-d array; a bool element
    # also takes the truth of a list or tuple or of a one-element array
    # (`flags[i] &= mask_of_one`), and anything else is "setting an array
    # element with a sequence".
    outcomes = []
    for lib in (onp, nf):
        a = lib.zeros(4, dtype)
        v = nf.asarray(value) if lib is nf and isinstance(value, onp.ndarray) else value
        try:
            a[1] = v
            outcomes.append(("ok", onp.asarray(a).tolist()))
        except Exception as e:  # noqa: BLE001 -- the type is what is compared
            outcomes.append((type(e).__name__,))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("tier", ["auto", "lazy"])
def test_integer_scalar_result_stored_out_of_range(tier):
    # `s + 1` on a 0-d array is a NumPy scalar, and a scalar out of an
    # integer array's range is an OverflowError -- even when numfuse keeps
    # the result lazy (a 0-d array acting as the scalar); a real 0-d array
    # is cast (wrapping), as NumPy does.
    base = onp.arange(6, dtype=onp.int32).reshape(2, 3) * 10_000_000
    with nf.config(tier=tier, max_window=1):
        for lib in (onp, nf):
            s = lib.asarray(base)[1, 2, ...]
            a = lib.zeros(5, onp.int8)
            with pytest.raises(OverflowError, match="out of bounds for int8"):
                a[None] = s + 1
            a[1:3] = s - 49_999_990
            a[0] = lib.asarray(onp.array(50_000_001, onp.int32))
            assert onp.asarray(a).tolist() == [-127, 10, 10, 0, 0]

"""The C fast paths of the array type (element access and stores with an int
key, iteration, `@`, `.T`) against NumPy: values, result types, exceptions."""
import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_result_kind, assert_same, same_bits


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.int64, onp.uint8, onp.bool_, onp.int8])
def test_int_key_element_read_and_store(dtype):
    ref = onp.arange(10).astype(dtype)
    a = nf.asarray(ref.copy())
    for i in [0, 3, 9, -1, -10]:
        got, exp = a[i], ref[i]
        assert type(got) is type(exp) and got == exp
    for i, v in [(2, 1), (-3, 0), (4, True), (5, onp.int8(1)), (0, onp.float32(1.0))]:
        a[i] = v
        ref[i] = v
    assert_same(a, ref)
    for i in [10, -11, 2**63, -(2**70)]:
        with pytest.raises(IndexError):
            a[i]
        with pytest.raises(IndexError):
            a[i] = 1


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.int64, onp.int32, onp.uint8, onp.bool_, onp.complex128])
def test_element_store_of_a_numpy_scalar_of_the_arrays_type(dtype):
    """`d[i, j] = d[i - 1, j] + 1`: a NumPy scalar of the array's own type is
    stored as its bytes (-0.0 and NaN payloads kept), other types converted as
    NumPy converts them."""
    ref = onp.zeros((3, 4), dtype=dtype)
    a = nf.zeros((3, 4), dtype=dtype)
    t = onp.dtype(dtype).type
    values = [t(1), t(0)] + ([t(-0.0), t(onp.nan), t(onp.inf)] if onp.dtype(dtype).kind in "fc" else [])
    for k, v in enumerate(values):
        i, j = divmod(k, 4)
        a[i, j] = v
        ref[i, j] = v
        a[k % 3][j] = v  # (a 1-D row, int key)
        ref[k % 3][j] = v
    a[2, 3] = onp.float16(2.5)  # (another type: NumPy's conversion)
    ref[2, 3] = onp.float16(2.5)
    assert onp.asarray(a).tobytes() == ref.tobytes()


@pytest.mark.fallback
def test_int_key_store_errors_and_casts_match_numpy():
    a, ref = nf.zeros(4, dtype=onp.uint8), onp.zeros(4, dtype=onp.uint8)
    with pytest.raises(OverflowError):
        ref[0] = 300
    with pytest.raises(OverflowError):
        a[0] = 300
    a[1] = onp.int64(300)  # NumPy scalars cast (wrap)
    ref[1] = onp.int64(300)
    # (NumPy converts a list for an integer element as int() would)
    with pytest.raises(TypeError):
        ref[2] = [1, 2]
    with pytest.raises(TypeError):
        a[2] = [1, 2]
    with pytest.raises(ValueError):
        a[2] = nf.ones(1)
    with pytest.raises(ValueError):
        a[2] = "x"
    assert_same(a, ref)
    ro = nf.broadcast_to(nf.arange(3.0), (3,))
    with pytest.raises(ValueError, match="read-only"):
        ro[0] = 1.0


def test_int_key_sees_pending_writes(lazy):
    a = nf.arange(8.0)
    a[1:] = a[:-1] * 2.0  # pending in the lazy tier
    assert a[3] == 4.0 and type(a[3]) is onp.float64
    a *= 3.0
    a[0] = 7.0  # a store into memory a pending operation writes: ordered after it
    ref = onp.arange(8.0)
    ref[1:] = ref[:-1] * 2.0
    ref *= 3.0
    ref[0] = 7.0
    assert_same(a, ref)


def test_int_key_on_views_and_nd_arrays():
    ref = onp.arange(24.0).reshape(4, 6)
    a = nf.asarray(ref.copy())
    assert_same(a[2], ref[2])          # a row: a view, not an element
    col = a[:, 3]
    assert col[-1] == ref[:, 3][-1]     # strided 1-D view
    rev = a[1, ::-1]
    assert rev[0] == ref[1, ::-1][0]
    rev[0] = -1.0
    ref[1, ::-1][0] = -1.0
    assert_same(a, ref)


@pytest.mark.fallback
@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.int64, onp.uint8, onp.bool_, onp.int32])
@pytest.mark.parametrize("shape", [(4, 6), (3, 4, 5)])
def test_tuple_key_element_read_and_store(dtype, shape):
    ref = onp.arange(int(onp.prod(shape))).reshape(shape).astype(dtype)
    a = nf.asarray(ref.copy())
    keys = [tuple(0 for _ in shape), tuple(s - 1 for s in shape), tuple(-1 for _ in shape),
            tuple(-s for s in shape), tuple(1 for _ in shape)]
    for k in keys:
        got, exp = a[k], ref[k]
        assert type(got) is type(exp) and got == exp
    for k, v in zip(keys, [1, 2.5, True, onp.int8(3), 7]):
        a[k] = v
        ref[k] = v
    assert_same(a, ref)
    bad = [tuple(s for s in shape), tuple(-s - 1 for s in shape), (2**63,) + (0,) * (len(shape) - 1)]
    for k in bad:
        with pytest.raises(IndexError):
            a[k]
        with pytest.raises(IndexError):
            a[k] = 1
    # fewer indices than dimensions: a view; non-int indices: NumPy's rules
    assert_same(a[(1,) * (len(shape) - 1)], ref[(1,) * (len(shape) - 1)])
    k = (onp.int64(1),) + (1,) * (len(shape) - 1)
    assert a[k] == ref[k] and type(a[k]) is type(ref[k])
    with pytest.raises(IndexError):
        a[(1.0,) * len(shape)]
    assert_same(a, ref)


def test_tuple_key_on_strided_views_and_fortran_arrays():
    ref = onp.asfortranarray(onp.arange(30.0).reshape(5, 6))
    a = nf.asarray(ref.copy(order="F"))
    va, vr = a[1:, ::-2], ref[1:, ::-2]
    for k in [(0, 0), (3, 2), (-1, -1), (2, -3)]:
        assert va[k] == vr[k]
        va[k] = -va[k]
        vr[k] = -vr[k]
    t, tr = a.T, ref.T
    t[5, 4] = 99.0
    tr[5, 4] = 99.0
    assert t[0, 1] == tr[0, 1]
    assert_same(a, ref)


@pytest.mark.fallback
def test_tuple_key_store_conversions_match_numpy():
    for dtype, values in [(onp.int64, [5, -(2**63), 2**63 - 1, 1.9, onp.float64(-2.5), True]),
                          (onp.float64, [5, 1.5, 2**70, -0.0, onp.float32(0.1), False])]:
        a, ref = nf.zeros((3, 3), dtype=dtype), onp.zeros((3, 3), dtype=dtype)
        for n, v in enumerate(values):
            a[n % 3, n // 3] = v
            ref[n % 3, n // 3] = v
        assert_same(a, ref)
        assert onp.signbit(onp.asarray(a)).tolist() == onp.signbit(ref).tolist()
    a, ref = nf.zeros((2, 2), dtype=onp.int64), onp.zeros((2, 2), dtype=onp.int64)
    for v in [2**63, -(2**63) - 1, 2**100]:
        with pytest.raises(OverflowError):
            ref[0, 1] = v
        with pytest.raises(OverflowError):
            a[0, 1] = v
    f = nf.zeros((2, 2))
    with pytest.raises(OverflowError):
        f[1, 1] = 10**400
    with pytest.raises(ValueError):
        f[1, 1] = "x"
    assert_same(a, ref)
    assert_same(f, onp.zeros((2, 2)))


def test_tuple_key_sees_pending_writes(lazy):
    ref = onp.arange(12.0).reshape(3, 4)
    a = nf.asarray(ref.copy())
    a[1:, :] = a[:-1, :] * 2.0  # pending in the lazy tier
    ref[1:, :] = ref[:-1, :] * 2.0
    assert a[2, 3] == ref[2, 3]
    a *= 3.0
    a[0, 0] = 7.0  # ordered after the pending multiply
    ref *= 3.0
    ref[0, 0] = 7.0
    a[1, 1] = 5  # a Python int into float64
    ref[1, 1] = 5
    assert_same(a, ref)


@pytest.mark.parametrize("dtype", [onp.float64, onp.uint8, onp.int32, onp.bool_])
def test_iteration(dtype):
    ref = (onp.arange(7) % 3).astype(dtype)
    a = nf.asarray(ref.copy())
    it = iter(a)
    assert it.__length_hint__() == 7
    got = list(it)
    assert [type(x) for x in got] == [type(x) for x in ref] and got == list(ref)
    assert it.__length_hint__() == 0 and list(it) == []
    m = nf.asarray(onp.arange(6.0).reshape(2, 3))
    rows = list(m)
    assert len(rows) == 2 and all(isinstance(r, nf.ndarray) for r in rows)
    assert_same(rows[1], onp.arange(6.0).reshape(2, 3)[1])
    with pytest.raises(TypeError, match="0-d"):
        iter(nf.asarray(onp.float64(1.0)).reshape(()))
    # rows of 3-D, F-ordered, strided and read-only arrays: views as NumPy's
    ref3 = onp.arange(24.0).reshape(2, 3, 4)
    for x, r in [(nf.asarray(ref3), ref3), (nf.asfortranarray(nf.asarray(ref3)), onp.asfortranarray(ref3)),
                 (nf.asarray(ref3)[:, ::-2, 1:], ref3[:, ::-2, 1:]), (nf.asarray(ref3).T, ref3.T),
                 (nf.broadcast_to(nf.arange(3.0), (2, 3)), onp.broadcast_to(onp.arange(3.0), (2, 3)))]:
        got = list(x)
        assert len(got) == len(r)
        for g, e in zip(got, r):
            assert type(g) is nf.ndarray and g.strides == e.strides and g.flags.writeable == e.flags.writeable
            assert_same(g, e)
    m = nf.zeros((3, 2))
    for k, row in enumerate(m):
        row[:] = k  # (a view: writes reach the array)
    assert_same(m, onp.repeat(onp.arange(3.0)[:, None], 2, axis=1))


@pytest.mark.parametrize("dtype", [onp.int8, onp.uint8])
def test_byte_scalars_every_value(dtype):
    # The 256 byte values are made once and shared (NumPy scalars are
    # immutable): every value, its type and its arithmetic as NumPy's.
    ref = onp.arange(256).astype(dtype)
    a = nf.asarray(ref.copy())
    for got, want in ((list(a), list(ref)), ([a[i] for i in range(256)], [ref[i] for i in range(256)])):
        assert [type(x) for x in got] == [type(x) for x in want]
        assert [int(x) for x in got] == [int(x) for x in want]
        assert [type(x + x) for x in got] == [type(x + x) for x in want]
        assert [int(x - 1) for x in got] == [int(x - 1) for x in want]
    a[3] = 200 if dtype == onp.uint8 else -100  # a later write gives the new value, not a stale object
    assert int(a[3]) == (200 if dtype == onp.uint8 else -100) and int(list(a)[3]) == int(a[3])


def test_iteration_syncs_pending_work_and_later_writes(lazy):
    a = nf.arange(5.0)
    b = a * 2.0
    it = iter(b)
    assert next(it) == 0.0
    b[2] = 100.0   # written while iterating: seen, as with NumPy
    b += 1.0       # recorded while iterating: synced at the next step
    assert list(it) == [3.0, 101.0, 7.0, 9.0]


def test_matmul_operator_and_transpose():
    ra, rb = onp.arange(12.0).reshape(3, 4), onp.arange(8.0).reshape(4, 2)
    a, b = nf.asarray(ra), nf.asarray(rb)
    assert_same(a @ b, ra @ rb)
    assert_same(a @ [1.0, 2.0, 3.0, 4.0], ra @ [1.0, 2.0, 3.0, 4.0])
    assert_same([1.0, 2.0, 3.0] @ a, [1.0, 2.0, 3.0] @ ra)
    v = nf.arange(4.0)
    r = v @ v
    assert_result_kind(r, onp.arange(4.0) @ onp.arange(4.0))  # NumPy's scalar when computed at the call
    assert float(r) == 14.0
    assert_same(ra @ b, ra @ rb)  # a NumPy array on the left
    with pytest.raises(ValueError):
        a @ a
    with pytest.raises(ValueError):
        ra @ onp.float64(2.0)
    with pytest.raises(ValueError):
        a @ onp.float64(2.0)  # matmul takes no scalars
    t = a.T
    assert_same(t, ra.T)
    assert t.strides == ra.T.strides and t.flags["F_CONTIGUOUS"]
    t[0, 1] = -5.0
    assert a[1, 0] == -5.0  # a view
    assert nf.asarray(onp.float64(2.0)).T.shape == ()


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.int64, onp.uint8, onp.int8, onp.bool_])
@pytest.mark.parametrize("exponent", [2, 0.5, -1, 1, 0, 3, 2.0, -1.0, True, onp.float64(2.0), onp.int8(2)])
def test_power_operator(dtype, exponent):
    ref = onp.array([-2.0, -0.0, 0.0, 0.5, 1.0, 3.0, onp.inf, -onp.inf, onp.nan]).astype(dtype) \
        if onp.dtype(dtype).kind == "f" else onp.array([0, 1, 2, 3, 5]).astype(dtype)
    a = nf.asarray(ref.copy())
    try:
        with onp.errstate(all="ignore"):
            exp = ref ** exponent
    except Exception as e:
        with pytest.raises(type(e)):
            nf.flush() or a ** exponent
        return
    got = a ** exponent
    assert got.dtype == exp.dtype
    if exponent in (2, 0.5, -1, 1, 0, 2.0, -1.0, True) or onp.dtype(dtype).kind != "f":
        assert_same(got, exp)  # NumPy's special cases and integer loops: exact, signed zeros included
    else:
        onp.testing.assert_allclose(onp.asarray(got), exp, rtol=1e-6 if dtype == onp.float32 else 1e-14)
    r = a ** 1
    if r.size:
        r[0] = 7
        assert_same(a, ref)  # a copy, never a view


def test_reflected_and_ternary_power():
    i, ri = nf.arange(4), onp.arange(4)
    assert_same(2 ** i, 2 ** ri)
    assert_same(2.0 ** nf.arange(4.0), 2.0 ** onp.arange(4.0))
    with pytest.raises(ValueError, match="negative integer powers"):
        i ** -1
    with pytest.raises(ValueError, match="negative integer powers"):
        i ** nf.asarray(onp.array([1, -1, 2, 3]))
    with pytest.raises(TypeError):
        pow(nf.arange(3.0), 2, 3)
    with pytest.raises(TypeError):
        pow(2, nf.arange(3.0), 3)


@pytest.mark.parametrize("args", [(16,), (0,), (-3,), (3, 9), (9, 3), (9, 3, -2), (1, 10, 4), (5, 5), (2**40, 2**40 + 5),
                                  (2**62, 2**62 + 3), (-(2**63), -(2**63) + 2)])
def test_arange_int_arguments(args):
    got, exp = nf.arange(*args), onp.arange(*args)
    assert got.dtype == exp.dtype
    assert_same(got, exp)


def test_arange_zero_step_and_bad_calls():
    with pytest.raises(ZeroDivisionError):
        onp.arange(3, 5, 0)
    with pytest.raises(ZeroDivisionError):
        nf.arange(3, 5, 0)
    with pytest.raises(TypeError):
        nf.arange(3, stop=5, start=1)


def test_ravel_flatten_item():
    ref = onp.arange(12.0).reshape(3, 4)
    a = nf.asarray(ref.copy())
    for order in "CFAK":
        assert_same(a.ravel(order), ref.ravel(order))
        assert_same(a.T.ravel(order), ref.T.ravel(order))
        assert_same(a.flatten(order), ref.flatten(order))
        assert_same(a.T.flatten(order), ref.T.flatten(order))
    v = a.ravel()
    v[0] = -1.0  # a view of C-contiguous data
    assert a[0, 0] == -1.0
    f = a.flatten()
    f[1] = -2.0  # a copy
    assert a[0, 1] == 1.0
    b = nf.arange(5.0)
    for i in [0, 4, -1, -5]:
        assert b.item(i) == onp.arange(5.0).item(i) and type(b.item(i)) is float
    for bad in [5, -6]:
        with pytest.raises(IndexError):
            b.item(bad)
    assert a.item(5) == ref.item(5) and a.item((1, 2)) == ref.item((1, 2))
    assert nf.asarray(onp.float64(3.5)).reshape(()).item() == 3.5
    with pytest.raises(ValueError):
        b.item()


def test_fallback_functions_are_cached_and_still_warn():
    import warnings
    nf._fallback._warned.discard("numpy.trim_zeros")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s1 = nf.trim_zeros(nf.asarray(onp.array([0.0, 1.0, 2.0, 3.0, 0.0])))
    assert any(issubclass(x.category, nf.FallbackWarning) for x in w)
    assert "trim_zeros" in vars(nf)  # the wrapper is kept: the next lookup is a plain global
    assert_same(s1, onp.array([1.0, 2.0, 3.0]))
    assert_same(nf.trim_zeros(nf.asarray(onp.array([2, 1, 0]))), onp.array([2, 1]))


def test_array_from_sequences():
    a = nf.arange(3.0)
    for obj in ([1.0, 2.0, 3.0], (1, 2, 3), [[1, 2], [3, 4]], [True, False], [a, a * 2], (a, [7.0, 8.0, 9.0]),
                [onp.float32(1), 2], [[1.5]]):
        ref = onp.array([onp.asarray(x) if isinstance(x, nf.ndarray) else x for x in obj])
        got = nf.array(obj)
        assert type(got) is nf.ndarray
        assert_same(got, ref)
    got = nf.array([1, 2, 3], dtype=onp.float32, ndmin=2)
    assert_same(got, onp.array([1, 2, 3], dtype=onp.float32, ndmin=2))
    src = [1.0, 2.0]
    got = nf.array(src)
    got[0] = 5.0
    assert src == [1.0, 2.0]
    with pytest.raises(ValueError):
        nf.array([[1, 2], [3]])
    big = onp.arange(4, dtype=">f8")  # non-native byte order: copied, values kept
    assert_same(nf.array(big), onp.array(big).astype("=f8"))


_SEQUENCES = [[1.0, 2.0, 3.0], [1, 2, 3], [True, False], [1, 2.5], [True, 2], [True, 2.5], [], [[]], [[], []],
              [[1, 2], [3, 4]], ((1, 2), (3, 4)), [[1, 2], (3, 4)], [[[1.0]], [[2.0]]], (5,), [[1, 2], [3, 4.0]],
              [[True], [False]], [[1], [True]], [onp.float64(1.5), 2], [onp.int64(3), 4], [onp.int64(3), 4.5],
              [onp.bool_(True), False], [-2**63, 2**63 - 1], [1.0, 2**62], [float("nan"), -0.0, float("inf")],
              # (NumPy decides these: ragged, uint64, object, other types)
              [[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [2**63], [2**64], [1.0, 2**70], [onp.float32(1), 2.0],
              [onp.int32(3), 4], [1j, 2], ["a", 1], [None], [onp.array(1.0), 2.0]]
_NATIVE = 24  # the first _NATIVE sequences are built in C (with dtype None, float64 or int64 where they convert)


@pytest.mark.fallback
@pytest.mark.parametrize("dtype", [None, float, onp.float64, "float64", int, onp.int64, onp.float32, bool, "no-such"])
@pytest.mark.parametrize("fname", ["array", "asarray"])
def test_array_of_python_numbers_built_in_c_as_numpy(fname, dtype):
    from numfuse import _core, _creation
    calls = []

    def counting(*args, **kwargs):
        calls.append(args[0])
        return getattr(_creation, fname)(*args, **kwargs)

    _core._set_call_fallbacks({fname: counting})
    try:
        for k, obj in enumerate(_SEQUENCES):
            kw = {} if dtype is None else {"dtype": dtype}
            try:
                exp = getattr(onp, fname)(obj, **kw)
            except Exception as e:  # noqa: BLE001
                with pytest.raises(type(e)):
                    getattr(nf, fname)(obj, **kw)
                continue
            del calls[:]
            got = getattr(nf, fname)(obj, **kw)
            if not nf._core.supported_dtype(exp.dtype):  # (NumPy's array, with a FallbackWarning)
                assert type(got) is onp.ndarray and got.tolist() == exp.tolist()
                continue
            assert type(got) is nf.ndarray and got.flags.c_contiguous and got.flags.writeable and got.flags.owndata
            assert got.strides == exp.strides
            assert_same(got, exp)
            native = k < _NATIVE and (dtype is None or (onp.dtype(dtype) in (onp.float64, onp.int64) and
                                                         not (onp.dtype(dtype) == onp.int64 and exp.size and
                                                              onp.array(obj).dtype == onp.float64)))
            assert (not calls) == native, (obj, dtype, "built by NumPy" if calls else "built in C")
    finally:
        _core._set_call_fallbacks({fname: getattr(_creation, fname)})
    a = nf.arange(3.0)
    assert nf.asarray(a) is a and nf.asarray(a, dtype=onp.float64) is a
    assert nf.asarray(a, onp.float32).dtype == onp.float32


def test_concatenate_dtypes():
    a, b = nf.arange(3), nf.arange(3.0)
    for arrays in ([a, a], [a, b], [b, b], [a.astype(onp.int8), a.astype(onp.uint8)]):
        ref = onp.concatenate([onp.asarray(x) for x in arrays])
        got = nf.concatenate(arrays)
        assert got.dtype == ref.dtype
        assert_same(got, ref)
    with pytest.raises(TypeError):
        nf.concatenate([b, b], dtype=onp.int64, casting="same_kind")
    assert_same(nf.concatenate([b, b], dtype=onp.float32), onp.concatenate([onp.arange(3.0)] * 2, dtype=onp.float32))


def test_clip_loop_cache_keeps_types():
    for x, lo, hi in [(nf.arange(5.0), 1, 3), (nf.arange(5), 1, 3), (nf.arange(5), 1.5, 3), (nf.arange(5.0), 1, 3),
                      (nf.arange(5).astype(onp.int8), 1, 300), (nf.arange(5.0).astype(onp.float32), 1.0, 2.0)]:
        ref = onp.clip(onp.asarray(x), lo, hi)
        got = nf.clip(x, lo, hi)
        assert got.dtype == ref.dtype
        assert_same(got, ref)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32, onp.int8, onp.int64, onp.uint64, onp.uint8, onp.bool_])
def test_tolist_and_item_give_python_scalars(dtype):
    ref = (onp.arange(6) % 4).astype(dtype)
    a = nf.asarray(ref.copy())
    for x, r in [(a, ref), (a[::-2], ref[::-2]), (a.reshape(2, 3), ref.reshape(2, 3)), (a[:0], ref[:0]),
                 (a.reshape(3, 2).T, ref.reshape(3, 2).T), (a.reshape(1, 2, 3)[:, :, ::-1], ref.reshape(1, 2, 3)[:, :, ::-1]),
                 (a.reshape(2, 3)[:, :0], ref.reshape(2, 3)[:, :0]), (a[:1].reshape(()), ref[:1].reshape(()))]:
        got, exp = x.tolist(), r.tolist()
        assert got == exp
        flat = lambda v: [y for z in v for y in flat(z)] if isinstance(v, list) else [v]  # noqa: E731
        assert [type(y) for y in flat(got)] == [type(y) for y in flat(exp)]
    for i in [0, 5, -1, -6]:
        assert a.item(i) == ref.item(i) and type(a.item(i)) is type(ref.item(i))
    assert a.reshape(2, 3).item(4) == ref.reshape(2, 3).item(4)


def test_tolist_and_item_see_pending_writes(lazy):
    a = nf.arange(4.0)
    a *= 3.0
    assert a.tolist() == [0.0, 3.0, 6.0, 9.0]
    a += 1.0
    assert a.item(2) == 7.0


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concatenate_same_dtype_layouts(axis):
    ref = onp.arange(12.0).reshape(3, 4)
    cases = [(ref, ref), (ref.T.copy().T, ref), (onp.asfortranarray(ref), onp.asfortranarray(ref)),
             (ref[:, ::2].repeat(2, axis=1), ref), (ref[:0, :0].reshape(0, 4) if axis in (0, -2) else ref[:, :0], ref)]
    for parts in cases:
        if any(p.shape[1 - (axis % 2)] != parts[0].shape[1 - (axis % 2)] for p in parts):
            continue
        nparts = [nf.asarray(p) for p in parts]
        exp = onp.concatenate([onp.asarray(p) for p in nparts], axis=axis)  # NumPy on the same layouts
        got = nf.concatenate(nparts, axis=axis)
        assert_same(got, exp)
        assert got.strides == exp.strides and got.flags["C_CONTIGUOUS"] == exp.flags["C_CONTIGUOUS"]


def test_concatenate_of_pending_parts(lazy):
    x = nf.arange(5.0) * 2
    y = nf.concatenate((x, x + 1, x[:0]))
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 1.0, 3.0, 5.0, 7.0, 9.0]
    x += 100.0  # the result is a copy
    assert y.tolist()[0] == 0.0


def test_concatenate_result_recorded_part_by_part(lazy):
    """Every part recorded in its own window (max_window=1): the result must
    be held by Python before anything is recorded into it, or its pending
    writes look dead to the next flush (found by the fuzzer)."""
    v = nf.asfortranarray(onp.float64(2.5))
    with nf.config(max_window=1):
        x = nf.arange(5.0) * 2
        y = nf.concatenate([x, x + 1])
        z = nf.concatenate([v.T, v.T])
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 1.0, 3.0, 5.0, 7.0, 9.0]
    assert z.tolist() == [2.5, 2.5]


def test_missing_attributes_fail_fast_and_ndarray_methods_fall_back():
    """Attribute lookup is the C type's: a missing dunder (NumPy probes
    __array_struct__ on conversions) raises AttributeError without calling
    Python; other names fall back to NumPy's ndarray method of that name, or
    raise AttributeError."""
    import pickle
    import warnings

    a = nf.arange(6.0)
    with pytest.raises(AttributeError, match="has no attribute '__array_struct__'"):
        a.__array_struct__
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        a.nonexistent
    assert not hasattr(a, "__array_struct__")
    assert onp.asarray(a).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert pickle.loads(a.dumps()).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


# -- calls loops make: item(i) of any rank, ufuncs with default keywords or out=,
# clip between Python numbers, ravel of a strided vector, swapaxes, squeeze() --

def _outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001
        return (type(e), str(e))


@pytest.mark.parametrize("dtype", [onp.float64, onp.int32, onp.bool_, onp.complex128])
def test_item_of_any_rank(dtype):
    ref = (onp.arange(60) % 7).astype(dtype).reshape(4, 5, 3)
    A = nf.asarray(ref.copy())
    for r, a in ((ref, A), (ref.transpose(2, 0, 1), A.transpose(2, 0, 1)), (ref[::2, ::-1], A[::2, ::-1]),
                 (ref[1], A[1])):
        n = r.size
        keys = [(0,), (n - 1,), (-1,), (-n,), (n,), (-n - 1,), (True,), (onp.int64(2),), (2**70,)]
        keys += [tuple([0] * r.ndim), tuple([-1] * r.ndim), tuple(r.shape), tuple([1] * (r.ndim - 1))]
        for k in keys:
            g, e = _outcome(lambda: a.item(*k)), _outcome(lambda: r.item(*k))
            assert g[0] == e[0], (r.shape, k, g, e)
            if e[0] == "ok":
                assert type(g[1]) is type(e[1]) and g[1] == e[1], (k, g, e)


def test_ufunc_keywords_at_their_defaults_and_out_run_natively():
    x = onp.linspace(-2, 2, 12).reshape(3, 4)
    X = nf.asarray(x)
    o = nf.empty((3, 4))
    for kw in (dict(out=None), dict(where=True), dict(casting="same_kind", order="K", dtype=None, subok=True),
               dict(out=(None,))):
        assert_same(nf.add(X, 1.5, **kw), onp.add(x, 1.5, **kw))
        assert_same(nf.sqrt(nf.absolute(X), **kw), onp.sqrt(onp.absolute(x), **kw))
    r = nf.multiply(X, X, out=o)
    assert r is o
    assert_same(o, x * x)
    r = nf.negative(X, out=(o,))
    assert r is o
    assert_same(o, -x)
    i = nf.arange(4, dtype=onp.int32)
    with pytest.raises(onp._core._exceptions._UFuncOutputCastingError):
        nf.add(i, 1.5, out=i)
    assert_same(i, onp.arange(4, dtype=onp.int32))  # (untouched)
    with pytest.raises(ValueError):
        nf.add(X, 1.0, out=nf.empty(5))
    assert nf.add(2, 3, out=None) == 5 and type(nf.add(2, 3, out=None)) is onp.int64
    with pytest.raises(TypeError, match="signature"):  # (NumPy refuses signature=None)
        nf.add(X, 1.0, signature=None)


@pytest.mark.parametrize("dtype", [onp.float64, onp.float32])
def test_clip_between_python_numbers(dtype):
    x = onp.array([0.0, -0.0, onp.nan, 1.0, 0.5, -onp.inf, onp.inf, 2.0, -3.0], dtype=dtype)
    X = nf.asarray(x)
    for lo, hi in [(-0.0, 1.0), (0.0, 0.0), (0, 1), (0.5, 0.2), (-1, -0.0), (2**70, 3), (1e-50, 0.7)]:
        g, e = onp.asarray(nf.clip(X, lo, hi)), onp.clip(x, lo, hi)
        assert g.dtype == e.dtype
        assert onp.array_equal(g, e, equal_nan=True) and (onp.signbit(g) == onp.signbit(e)).all(), (lo, hi, g, e)


def test_ravel_swapaxes_squeeze_as_numpy():
    ref = onp.arange(24.0).reshape(4, 6)
    a = nf.asarray(ref.copy())
    for r, v in ((ref[:, 2], a[:, 2]), (ref[::-2, 1], a[::-2, 1]), (ref[1], a[1])):
        for order in ("C", "F", "A", "K"):
            g, e = v.ravel(order), r.ravel(order)
            assert_same(g, e)
            assert g.flags.c_contiguous and onp.shares_memory(e, r) == nf.shares_memory(g, v)
            assert_same(nf.ravel(v, order), onp.ravel(r, order))
    b, rb = nf.asarray(ref.reshape(1, 4, 1, 6)), ref.reshape(1, 4, 1, 6)
    assert b.squeeze().shape == rb.squeeze().shape and b.squeeze().strides == rb.squeeze().strides
    assert a.squeeze() is a  # (NumPy: the array itself when nothing goes)
    assert_same(b.squeeze(axis=2), rb.squeeze(axis=2))
    with pytest.raises(ValueError):
        b.squeeze(axis=1)
    assert_same(a.swapaxes(0, 1), ref.swapaxes(0, 1))
    assert a.swapaxes(-1, 0).strides == ref.swapaxes(-1, 0).strides
    for bad in ((0, 2), (0, 1.0)):
        g, e = _outcome(lambda: a.swapaxes(*bad)), _outcome(lambda: ref.swapaxes(*bad))
        assert g[0] == e[0], (g, e)


def test_einsum_calls_repeated_with_other_shapes_layouts_and_types():
    """einsum remembers a call's layout and plan by its subscripts and its
    operands' shapes, strides and dtypes: repeated calls that differ in any
    of them are planned anew (values, dtypes and strides as NumPy's)."""
    rng = onp.random.default_rng(3)
    for _ in range(2):
        for shape, t, f32 in (((4, 5), False, False), ((4, 5), True, False), ((3, 5), False, True),
                              ((4, 5), False, False)):
            x = rng.random(shape)
            x = x.T.copy().T if t else x
            x = x.astype(onp.float32) if f32 else x
            X = nf.asarray(x)
            for sub in ("ij,ij->i", "ij,kj->ki", "ij->j", "ij,ij->"):
                ops = (x,) if sub.count(",") == 0 else (x, x)
                g = nf.einsum(sub, *[X] * len(ops))
                e = onp.einsum(sub, *ops)
                assert_same(g, e, rtol=1e-5 if f32 else 1e-12)
                if e.ndim:
                    assert onp.asarray(g).strides == e.strides or g.strides == e.strides, (sub, shape, t)
    with pytest.raises(ValueError):
        nf.einsum("ij,ij->i", nf.ones((2, 3)), nf.ones((3, 2)))


def test_vdot_inner_of_vectors_and_float_arange_as_numpy():
    from conftest import same_bits

    rng = onp.random.default_rng(4)
    for n in (1, 7, 50, 1000):
        v, w = rng.random(n) * 1e3, rng.random(n)
        V, W = nf.asarray(v), nf.asarray(w)
        same_bits(onp.asarray(nf.vdot(V, W)), onp.asarray(onp.vdot(v, w)))
        same_bits(onp.asarray(nf.inner(V, W)), onp.asarray(onp.inner(v, w)))
        same_bits(onp.asarray(nf.vdot(V[::2], W[::2])), onp.asarray(onp.vdot(v[::2], w[::2])))
    for args in [(50.0,), (0.0, 1.0, 0.1), (0, 5.5), (5.5,), (1.0, 0.0), (1.0, 0.0, -0.3), (0.1, 0.35, 0.05),
                 (3, 1.5, -0.25), (-2.5, 7), (1e10, 1e10 + 5.5), (0.0, 1.0, 1e-3), (2.0, 2**40 + 0.5, 2**37)]:
        g, e = nf.arange(*args), onp.arange(*args)
        assert_same(g, e, rtol=0)
    for args in [(0.0, float("inf")), (0.0, float("nan")), (0.0, 1.0, 0.0)]:
        with pytest.raises((ValueError, ZeroDivisionError)) as got:
            nf.arange(*args)
        with pytest.raises((ValueError, ZeroDivisionError)) as want:
            onp.arange(*args)
        assert got.type is want.type and str(got.value) == str(want.value)


# -- small-array calls: NumPy's kernel on a view, its result adopted ---------

def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - compared with NumPy's
        return ("raise", type(e), str(e))


def _same_outcome(got, exp):
    assert got[0] == exp[0], (got, exp)
    if exp[0] == "raise":
        assert got[1:] == exp[1:]
        return
    g, e = got[1], exp[1]
    if isinstance(e, onp.ndarray) and e.ndim > 0:
        assert isinstance(g, nf.ndarray)
        assert g.strides == e.strides and g.flags.writeable == e.flags.writeable
    else:
        assert type(g) is type(e)
    same_bits(onp.asarray(g), e)


_LAYOUTS = {
    "vector": lambda: onp.array([3.0, -1.0, onp.nan, 2.0, 2.0, -0.0, 0.0, 7.5]),
    "reversed": lambda: onp.array([3, -1, 4, 1, 5, 9, 2, 6])[::-1],
    "F 2-D": lambda: onp.asfortranarray(onp.arange(12.0).reshape(3, 4) % 5),
    "transposed": lambda: (onp.arange(12, dtype=onp.int32).reshape(3, 4) * 7 % 5).T,
    "0-d": lambda: onp.array(2.5),
    "empty": lambda: onp.zeros((0, 3)),
    "bool": lambda: onp.array([True, False, True, True]),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_small_sort_argsort_match_numpy(layout, axis):
    base = _LAYOUTS[layout]()
    for fn in ("sort", "argsort"):
        got = _outcome(lambda: getattr(nf, fn)(nf.asarray(base), axis))
        exp = _outcome(lambda: getattr(onp, fn)(base.copy(order="K"), axis))
        _same_outcome(got, exp)


def test_small_searchsorted_and_interp_match_numpy():
    a = onp.array([-1.5, 0.0, 0.0, 2.0, 3.5, 10.0])
    na = nf.asarray(a)
    for v in (0.0, 2, -7, 11.0, onp.array([0.0, 3.5, -2.0]), onp.array([[1, 2], [3, 40]])):
        nv = nf.asarray(v) if isinstance(v, onp.ndarray) else v
        for side in ("left", "right"):
            _same_outcome(_outcome(lambda: nf.searchsorted(na, nv, side)), _outcome(lambda: onp.searchsorted(a, v, side)))
    _same_outcome(_outcome(lambda: nf.searchsorted(na, 1.0, "middle")), _outcome(lambda: onp.searchsorted(a, 1.0, "middle")))
    x = onp.array([-3.0, 0.0, 1.0, 2.5, 4.0, onp.nan])
    xp, fp = onp.array([0.0, 1.0, 2.0, 3.0]), onp.array([0.0, 10.0, 5.0, -1.0])
    got = nf.interp(nf.asarray(x), nf.asarray(xp), nf.asarray(fp))
    _same_outcome(("ok", got), ("ok", onp.interp(x, xp, fp)))
    _same_outcome(_outcome(lambda: nf.interp(nf.asarray(x), nf.asarray(xp), nf.asarray(fp[:3]))),
                  _outcome(lambda: onp.interp(x, xp, fp[:3])))


def test_count_nonzero_of_a_mask_and_flips():
    m = onp.array([[True, False, True], [False, False, True]])
    r = nf.count_nonzero(nf.asarray(m))
    assert type(r) is type(onp.count_nonzero(m)) and r == onp.count_nonzero(m)
    assert_same(nf.count_nonzero(nf.asarray(m), axis=0), onp.count_nonzero(m, axis=0))
    a = onp.arange(6.0).reshape(2, 3)
    for fn in ("fliplr", "flipud"):
        got, exp = getattr(nf, fn)(nf.asarray(a)), getattr(onp, fn)(a)
        assert got.strides == exp.strides
        assert_same(got, exp)
    for bad, fn in ((onp.ones(3), "fliplr"), (onp.array(1.0), "flipud")):
        _same_outcome(_outcome(lambda: getattr(nf, fn)(nf.asarray(bad))), _outcome(lambda: getattr(onp, fn)(bad)))
    assert_same(nf.fliplr([[1, 2], [3, 4]]), onp.fliplr([[1, 2], [3, 4]]))


@pytest.mark.parametrize("args", [(50.0,), (0, 1, 0.1), (0.0, 1.0, 0.1), (10.5,), (-3, 2.5, 0.5), (5.0, -2, -0.75),
                                  (1.0, 1.0), (2.0, 1.0), (0, 2**53, 2.0**50), (0.5, 3), (-0.0,), (1e-300, 2e-300, 1e-301)])
def test_float_arange_in_c_matches_numpy(args):
    same_bits(onp.asarray(nf.arange(*args)), onp.arange(*args))


def test_float_arange_edge_cases_take_the_general_path():
    for args in ((0, 2**60, 0.5), (float("inf"),), (0.0, 1.0, 0.0), (0, 10**20, 1.5)):
        got, exp = _outcome(lambda: onp.asarray(nf.arange(*args))), _outcome(lambda: onp.arange(*args))
        assert got[0] == exp[0] and (got[0] == "ok" or got[1] is exp[1]), (args, got, exp)
        if got[0] == "ok":
            same_bits(got[1], exp[1])


@pytest.mark.parametrize("make", [
    lambda: onp.arange(12.0).reshape(3, 4),
    lambda: onp.asfortranarray(onp.arange(12.0).reshape(3, 4)),
    lambda: onp.arange(12.0).reshape(3, 4)[:, ::-1],
    lambda: onp.arange(24, dtype=onp.int16).reshape(2, 3, 4).transpose(2, 0, 1),
    lambda: onp.arange(6, dtype=">f8"),
    lambda: onp.array([True, False, True]),
    lambda: onp.arange(10.0)[::3],
    lambda: onp.zeros((2, 0, 3), order="F"),
    lambda: onp.array(7, dtype=onp.uint8),
])
def test_asarray_of_a_numpy_array_copies_its_layout(make):
    src = make()
    got = nf.asarray(src)
    exp = onp.array(src, order="K")  # (numfuse's asarray of NumPy memory is a copy: NumPy's K-order copy)
    assert got.dtype == onp.dtype(exp.dtype.name) and got.shape == exp.shape
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (exp.flags.c_contiguous, exp.flags.f_contiguous) \
        or exp.size == 0
    assert_same(got, exp.astype(exp.dtype.name))
    if src.size:  # a copy: the NumPy array's later changes do not show
        src.flat[0] = 1
        assert onp.asarray(got).flat[0] == make().flat[0]
    ro = make()
    ro.setflags(write=False)
    assert nf.asarray(ro).flags.writeable is False


@pytest.mark.parametrize("shape", [5, (2, 3), (), (0, 4), (3, 0, 2)])
@pytest.mark.parametrize("value", [2.5, -0.0, float("nan"), True, 7, -(2**63), 2**63 - 1])
def test_full_of_a_python_number_matches_numpy(shape, value):
    got, exp = nf.full(shape, value), onp.full(shape, value)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    same_bits(onp.asarray(got), exp)


@pytest.mark.fallback
def test_full_and_eye_general_cases_match_numpy():
    for args in (((3,), 2**63), ((2,), 1 + 2j), ((-1, 2), 1.0), ((2.0,), 1.0), ((2,), None)):
        got, exp = _outcome(lambda: nf.full(*args)), _outcome(lambda: onp.full(*args))
        assert got[0] == exp[0], (args, got, exp)
        if exp[0] == "raise":
            assert got[1:] == exp[1:]
        else:
            g = onp.asarray(got[1])
            assert g.dtype == exp[1].dtype and g.tolist() == exp[1].tolist()
    for args in ((0,), (4,), (3, 4, 1), (-1,), (2.0,), (True,)):
        _same_outcome(_outcome(lambda: nf.eye(*args)), _outcome(lambda: onp.eye(*args)))


def test_small_unique_and_atleast_1d_match_numpy():
    for a in (onp.array([3.0, onp.nan, 1.0, onp.nan, 3.0, -0.0, 0.0]), onp.array([[4, 1], [4, 2]], dtype=onp.int8),
              onp.zeros(0), onp.array(5), onp.array([True, False, True])[::-1]):
        _same_outcome(("ok", nf.unique(nf.asarray(a))), ("ok", onp.unique(a)))
    v = nf.arange(3.0)
    assert nf.atleast_1d(v) is v
    assert_same(nf.atleast_1d(nf.asarray(2.0)), onp.atleast_1d(2.0))
    got = nf.atleast_1d(v, 1.5, [[1]])
    assert isinstance(got, tuple) and len(got) == 3
    for g, e in zip(got, onp.atleast_1d(onp.arange(3.0), 1.5, [[1]])):
        assert_same(g, e)


@pytest.mark.parametrize("n", [3, 40, 1000])
@pytest.mark.parametrize("k", [2, 3, 7])
def test_short_inner_broadcasts_match_numpy(n, k):
    """Tier 0 walks a short innermost line (k columns) and a long next one
    the other way round: results, NaN rules and in-place forms unchanged."""
    g = onp.random.default_rng(n * 10 + k)
    col = g.standard_normal((n, 1))
    col[::7] = onp.nan
    row = g.standard_normal(k)
    row[0] = -0.0
    C, R = nf.asarray(col), nf.asarray(row)
    for name in ("add", "maximum", "fmax", "minimum", "copysign", "multiply"):
        same_bits(onp.asarray(getattr(nf, name)(C, R)), getattr(onp, name)(col, row))
    same_bits(onp.asarray(nf.repeat(C[:, 0], k)), onp.repeat(col[:, 0], k))
    same_bits(onp.asarray(nf.repeat(nf.asarray(col.reshape(-1, 1) * row), 2, axis=1)),
              onp.repeat(col.reshape(-1, 1) * row, 2, axis=1))
    a, b = onp.zeros((n, k)), nf.zeros((n, k))
    a += col
    b += C
    a[:, 1:] += a[:, :1]
    b[:, 1:] += b[:, :1]
    same_bits(onp.asarray(b), a)
    ints = onp.arange(n, dtype=onp.int16)[:, None] * onp.arange(k, dtype=onp.int16)
    same_bits(onp.asarray(nf.asarray(onp.arange(n, dtype=onp.int16))[:, None] * nf.arange(k).astype(onp.int16)), ints)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_small_bincount_and_fill_diagonal_match_numpy():
    for x in (onp.array([1, 3, 3, 0]), onp.array([1, -1]), onp.array([1.5]), onp.array([], dtype=onp.int64),
              onp.array([[1]]), onp.array([2, 0], dtype=onp.uint8), onp.array([True, False, True])):
        got, exp = _outcome(lambda: nf.bincount(nf.asarray(x))), _outcome(lambda: onp.bincount(x))
        _same_outcome(got, exp)
    for dt, val in ((onp.int8, 300), (onp.int8, 2.7), (onp.uint8, -1), (onp.float64, True), (onp.float32, 1e40),
                    (onp.int64, 2**63)):
        for shape in ((3, 3), (4, 2), (2, 2, 2)):
            a = onp.zeros(shape, dt)
            b = nf.asarray(a.copy())
            got = _outcome(lambda: nf.fill_diagonal(b, val))
            exp = _outcome(lambda: onp.fill_diagonal(a, val))
            assert got[0] == exp[0] and got[1:] == exp[1:] if exp[0] == "raise" else got == exp, (dt, val, got, exp)
            same_bits(onp.asarray(b), a)

"""Differential tests: numfuse type promotion against NumPy 2 (NEP 50).

Result dtypes are known when an operation is recorded, so most checks here
compile nothing; values are compared where a kernel is cheap to share.
Former numfuse bugs are regression tests at the end of the file.
"""

import operator

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_result_kind, ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_same

SIGNED = ["int8", "int16", "int32", "int64"]
# The dtypes numfuse computes in: the 11 real ones and the two complex ones.
NATIVE = ALL_DTYPES + ["complex64", "complex128"]
OPS = {  # name -> (NumPy callable, numfuse callable)
    "+": (operator.add, operator.add),
    "*": (operator.mul, operator.mul),
    "/": (operator.truediv, operator.truediv),
    "//": (operator.floordiv, operator.floordiv),
    "-": (operator.sub, operator.sub),
    "%": (operator.mod, operator.mod),
    "**": (operator.pow, operator.pow),
    "&": (operator.and_, operator.and_),
    "<<": (operator.lshift, operator.lshift),
    "<": (operator.lt, operator.lt),
    "add": (onp.add, nf.add),
    "multiply": (onp.multiply, nf.multiply),
    "true_divide": (onp.true_divide, nf.true_divide),
    "floor_divide": (onp.floor_divide, nf.floor_divide),
    "maximum": (onp.maximum, nf.maximum),
    "arctan2": (onp.arctan2, nf.arctan2),
    "logaddexp": (onp.logaddexp, nf.logaddexp),
    "copysign": (onp.copysign, nf.copysign),
}


def sample(dt):
    """A small array of dtype `dt` (positive values: no integer-power errors)."""
    return onp.array([1, 2, 3], dtype=dt)


def A(x):
    return nf.asarray(x)


def outcome(f):
    """('ok', dtype) or ('raises', exception class); TypeError stands for
    NumPy's UFuncTypeError / UFuncNoLoopError."""
    try:
        with onp.errstate(all="ignore"):
            r = f()
    except Exception as ex:  # noqa: BLE001 - exception classes are compared
        return ("raises", TypeError if isinstance(ex, TypeError) else type(ex))
    return ("ok", onp.asarray(r).dtype if not hasattr(r, "dtype") else onp.dtype(r.dtype))


def assert_same_outcome(tag, f_np, f_nf, failures):
    e, g = outcome(f_np), outcome(f_nf)
    if e != g:
        failures.append(f"{tag}: numfuse {g}, NumPy {e}")


# ---------------------------------------------------------------------------
# array op array, all ordered pairs of the 11 dtypes

@pytest.mark.fallback
@pytest.mark.parametrize("d1", NATIVE)
def test_array_array_promotion(d1):
    failures = []
    a = sample(d1)
    for d2 in NATIVE:
        b = sample(d2)
        for name, (f_np, f_nf) in OPS.items():
            assert_same_outcome(f"{d1} {name} {d2}", lambda: f_np(a, b), lambda: f_nf(A(a), A(b)), failures)
            # a NumPy array on one side dispatches to numfuse
            assert_same_outcome(f"{d1} {name} np.{d2}", lambda: f_np(a, b), lambda: f_nf(A(a), b), failures)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("d1", NATIVE)
def test_array_array_promotion_values(d1):
    """Values of + * / // for every pair (recorded first, one flush)."""
    a = onp.array([0, 1, 2, 3, 100, 127], dtype=d1) if d1 != "bool" else onp.array([0, 1, 1, 0, 1, 0], "?")
    results = []
    for d2 in NATIVE:
        b = onp.array([1, 3, 1, 2, 7, 5], dtype=d2) if d2 != "bool" else onp.array([1, 1, 1, 1, 1, 1], "?")
        for name in ("+", "*", "/", "//"):
            f_np, f_nf = OPS[name]
            try:
                with onp.errstate(all="ignore"):
                    expected = f_np(a, b)
            except TypeError:
                with pytest.raises(TypeError):
                    f_nf(A(a), A(b))
                continue
            results.append((f"{d1} {name} {d2}", f_nf(A(a), A(b)), expected))
    assert results
    failures = []
    for tag, got, expected in results:
        try:
            assert_same(got, expected)
        except AssertionError as e:
            failures.append(f"{tag}: {e}")
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------
# array op Python scalar (weak) and NumPy scalar (strong)

PY_SCALARS = [True, False, 0, 1, -1, 100, 300, 70000, 2**31, 2**40, 2**63 - 1, 2**63, 1.5, -0.0, 1e300, float("inf"),
              float("nan"), 1j, 2.5 - 0.5j]
NP_SCALARS = [onp.float32(2), onp.float64(2), onp.int8(2), onp.int16(2), onp.int32(2), onp.int64(2),
              onp.uint8(2), onp.uint16(2), onp.uint32(2), onp.uint64(2), onp.bool_(True), onp.complex64(2 - 1j),
              onp.complex128(2 + 1j)]


@pytest.mark.fallback
@pytest.mark.parametrize("dt", NATIVE)
def test_python_scalar_promotion(dt):
    """NEP 50: a Python int/float takes the array's dtype when its kind
    allows (OverflowError when an int does not fit), both operand orders."""
    failures = []
    a = sample(dt)
    for s in PY_SCALARS:
        for name, (f_np, f_nf) in OPS.items():
            assert_same_outcome(f"{dt} {name} {s!r}", lambda: f_np(a, s), lambda: f_nf(A(a), s), failures)
            assert_same_outcome(f"{s!r} {name} {dt}", lambda: f_np(s, a), lambda: f_nf(s, A(a)), failures)
    assert not failures, "\n".join(failures)


@pytest.mark.fallback
@pytest.mark.parametrize("dt", NATIVE)
def test_numpy_scalar_promotion(dt):
    failures = []
    a = sample(dt)
    for s in NP_SCALARS:
        for name, (f_np, f_nf) in OPS.items():
            assert_same_outcome(f"{dt} {name} {s!r}", lambda: f_np(a, s), lambda: f_nf(A(a), s), failures)
            assert_same_outcome(f"{s!r} {name} {dt}", lambda: f_np(s, a), lambda: f_nf(s, A(a)), failures)
    assert not failures, "\n".join(failures)


def test_scalar_promotion_values():
    """A few value checks of NEP 50 results (int8 + 1 stays int8 and wraps,
    float32 * 1.5 stays float32, uint8 + -1 raises, ...)."""
    i8 = onp.array([127, -128, 5], dtype="int8")
    f4 = onp.array([1.5, -2.0, 3.0], dtype="float32")
    u1 = onp.array([0, 255, 7], dtype="uint8")
    u8 = onp.array([0, 2**64 - 1, 7], dtype="uint64")
    assert_same(A(i8) + 1, i8 + 1)
    assert_same(1 - A(i8), 1 - i8)
    assert_same(A(f4) * 1.5, f4 * 1.5)
    assert_same(A(f4) / 3, f4 / 3)
    assert_same(A(i8) / 3, i8 / 3)
    assert_same(A(i8) * 2.5, i8 * 2.5)
    assert_same(A(u1) + 255, u1 + 255)
    assert_same(A(u8) + 1, u8 + 1)
    assert_same(A(u8) // 2, u8 // 2)
    assert_same(A(u1) * onp.float32(0.5), u1 * onp.float32(0.5))
    assert_same(A(i8) + onp.int16(300), i8 + onp.int16(300))
    assert_same(A(u8) + onp.int8(1), u8 + onp.int8(1))
    with pytest.raises(OverflowError):
        A(u1) + -1
    with pytest.raises(OverflowError):
        A(i8) * 128
    with pytest.raises(OverflowError):
        A(u8) - 2**64


# ---------------------------------------------------------------------------
# numfuse.where

COND = onp.array([True, False, True, False, True, False])


@pytest.mark.parametrize("d1", NATIVE)
def test_where_dtype_pairs(d1):
    a = onp.resize(onp.array([1, 0, 7, 3], dtype=d1), 6)
    C = A(COND)
    results = []
    for d2 in NATIVE:
        b = onp.resize(onp.array([5, 1, 0, 2, 100], dtype=d2), 6)
        expected = onp.where(COND, a, b)
        got = nf.where(C, A(a), A(b))
        assert got.dtype == expected.dtype, f"where({d1}, {d2}): {got.dtype} != {expected.dtype}"
        results.append((got, expected))
        got_np_b = nf.where(C, A(a), b)
        assert got_np_b.dtype == expected.dtype
        results.append((got_np_b, expected))
    for got, expected in results:
        assert_same(got, expected)


@pytest.mark.parametrize("dt", NATIVE)
def test_where_scalars(dt):
    a = onp.resize(onp.array([1, 0, 7, 3], dtype=dt), 6)
    C = A(COND)
    results = []
    for s in (0, 1, 100, -1, 1.5, float("nan"), True, False, onp.float32(2.5), onp.int8(-3), onp.uint16(9),
              onp.float64(0.25)):
        if type(s) is int and dt in INT_DTYPES and not onp.iinfo(dt).min <= s <= onp.iinfo(dt).max:
            continue  # NumPy casts out-of-range Python ints unsafely: see test_where_out_of_range_python_int
        for f_np, f_nf in ((lambda: onp.where(COND, a, s), lambda: nf.where(C, A(a), s)),
                           (lambda: onp.where(COND, s, a), lambda: nf.where(C, s, A(a)))):
            with onp.errstate(all="ignore"):
                expected = f_np()
            got = f_nf()
            assert got.dtype == expected.dtype, f"where with {s!r} and {dt}: {got.dtype} != {expected.dtype}"
            results.append((got, expected))
    # condition of another dtype (truthiness), both values scalars
    results.append((nf.where(A(a), 1, 2.5), onp.where(a, 1, 2.5)))
    results.append((nf.where(A(a), 1, 2), onp.where(a, 1, 2)))
    results.append((nf.where(A(a), True, False), onp.where(a, True, False)))
    results.append((nf.where(C, onp.float32(1), 2), onp.where(COND, onp.float32(1), 2)))
    # broadcasting of condition and values
    results.append((nf.where(A(COND[:, None]), A(a[:3]), A(a[3:6]).reshape(1, 3)),
                    onp.where(COND[:, None], a[:3], a[3:6].reshape(1, 3))))
    for got, expected in results:
        assert_same(got, expected)


# ---------------------------------------------------------------------------
# numfuse.result_type / promote_types

@pytest.mark.fallback
def test_result_type_dtypes():
    for d1 in NATIVE:
        for d2 in NATIVE:
            assert nf.result_type(d1, d2) == onp.result_type(d1, d2)
            assert nf.result_type(onp.dtype(d1), onp.dtype(d2)) == onp.result_type(d1, d2)
            assert nf.promote_types(d1, d2) == onp.promote_types(d1, d2)
            assert nf.result_type(A(sample(d1)), A(sample(d2))) == onp.result_type(sample(d1), sample(d2))
            assert nf.result_type(A(sample(d1)), sample(d2)) == onp.result_type(sample(d1), sample(d2))


@pytest.mark.fallback
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_result_type_with_scalars(dt):
    a = sample(dt)
    for s in (True, 1, -1, 300, 2**40, 1.5, onp.float32(1), onp.int8(1), onp.uint64(1)):
        try:
            expected = onp.result_type(a, s)
        except Exception as ex:  # noqa: BLE001
            with pytest.raises(TypeError if isinstance(ex, TypeError) else type(ex)):
                nf.result_type(A(a), s)
            continue
        assert nf.result_type(A(a), s) == expected, (dt, s)
        assert nf.result_type(s, A(a)) == onp.result_type(s, a), (dt, s)
    assert nf.result_type(A(a), A(a), 1.0) == onp.result_type(a, a, 1.0)
    assert nf.result_type(A(a), onp.float32) == onp.result_type(a, onp.float32)


@pytest.mark.fallback
def test_result_type_matches_operations():
    """numfuse.result_type(a, b) is the dtype numfuse's own a + b gets."""
    for d1 in NATIVE:
        for d2 in NATIVE:
            a, b = A(sample(d1)), A(sample(d2))
            assert (a * b).dtype == nf.result_type(a, b) == onp.result_type(sample(d1), sample(d2))


# ---------------------------------------------------------------------------
# reductions

def red_values(dt):
    """(3, 4) values whose sums are exact in any order."""
    if dt == "bool":
        return onp.array([[True, False, True, True], [False, False, True, False], [True, True, True, True]])
    if dt in FLOAT_DTYPES:
        return onp.array([[0.5, -1.0, 2.0, 3.0], [4.0, -0.25, 1.5, 2.0], [-3.0, 8.0, 1.0, 0.75]], dtype=dt)
    v = onp.array([[1, 2, 3, 4], [5, 6, 7, 100], [2, 3, 9, 1]])
    if dt in SIGNED:
        v[0, 1] = -2
    return v.astype(dt)


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_reduction_dtypes(dt):
    """sum/prod promote small ints to int64/uint64, mean of ints -> float64,
    float32 mean stays float32, any/all -> bool, argmax/argmin -> int64."""
    m = red_values(dt)
    M = A(m)
    results = []
    for name in ("sum", "prod", "mean", "any", "all", "argmax", "argmin", "max", "min", "std", "var"):
        f_np, f_nf = getattr(onp, name), getattr(nf, name)
        r = f_nf(M)
        assert_result_kind(r, f_np(m))
        results.append((name, r, f_np(m)))
        results.append((f"{name} axis=0", f_nf(M, axis=0), f_np(m, axis=0)))
        results.append((f"{name} axis=1 method", getattr(M, name)(axis=1), getattr(m, name)(axis=1)))
        if name not in ("argmax", "argmin"):
            results.append((f"{name} keepdims", f_nf(M, axis=1, keepdims=True), f_np(m, axis=1, keepdims=True)))
    for name in ("sum", "prod", "mean"):
        for dtype in ("float64", "int8", "uint32", "float32"):
            if name == "mean" and dtype in ("int8", "uint32"):
                continue
            results.append((f"{name} dtype={dtype}", getattr(nf, name)(M, axis=0, dtype=dtype),
                            getattr(onp, name)(m, axis=0, dtype=dtype)))
    results.append(("add.reduce", nf.add.reduce(M, axis=1), onp.add.reduce(m, axis=1)))
    results.append(("multiply.reduce", nf.multiply.reduce(M, axis=0), onp.multiply.reduce(m, axis=0)))
    for tag, got, expected in results:
        expected = onp.asarray(expected)
        assert onp.dtype(got.dtype) == expected.dtype, f"{tag}[{dt}]: {got.dtype} != {expected.dtype}"
    for tag, got, expected in results:
        assert_same(got, expected, rtol=1e-5 if onp.asarray(expected).dtype == onp.float32 else 1e-12)


def test_reduction_dtype_table():
    """The promotion rules, spelled out."""
    for dt in ("bool", "int8", "int16", "int32", "int64"):
        assert nf.sum(A(red_values(dt))).dtype == onp.int64
        assert nf.prod(A(red_values(dt))).dtype == onp.int64
    for dt in ("uint8", "uint16", "uint32", "uint64"):
        assert nf.sum(A(red_values(dt))).dtype == onp.uint64
        assert nf.prod(A(red_values(dt))).dtype == onp.uint64
    for dt in ALL_DTYPES:
        x = A(red_values(dt))
        assert nf.mean(x).dtype == onp.mean(red_values(dt)).dtype
        assert nf.any(x).dtype == nf.all(x).dtype == onp.bool_
        assert nf.argmax(x).dtype == nf.argmin(x, axis=0).dtype == onp.int64
        assert nf.max(x).dtype == onp.dtype(dt)
    assert nf.mean(A(red_values("float32"))).dtype == onp.float32
    assert nf.mean(A(red_values("int16"))).dtype == onp.float64
    assert nf.sum(A(red_values("float32"))).dtype == onp.float32
    assert_same(nf.mean(A(red_values("float32"))), onp.mean(red_values("float32")))


# ---------------------------------------------------------------------------
# Regression tests for disagreements with NumPy found (and fixed) earlier

@pytest.mark.parametrize("dt,s", [("int8", 300), ("uint8", -1), ("uint16", -1), ("int16", 2**40)])
def test_where_out_of_range_python_int(dt, s):
    a = onp.resize(onp.array([1, 0, 7, 3], dtype=dt), 6)
    with onp.errstate(all="ignore"):
        expected = onp.where(COND, a, s)
    assert_same(nf.where(A(COND), A(a), s), expected)


SEQUENCES = [(1, 2, 0, 4), [True, False, True, True], (1.5, 2, -0.0, 7), [True, 2, 3, 4], (True, 0.5, 2, 1),
             [2**62, -(2**62), 1, 0], (2**63, 1, 2, 3), [2**70, 1.0, 2, 3], ((1, 2), (3, 4)), (1, 2, None, 4),
             [1 + 2j, 1, 2, 3], (onp.int8(3), 1, 2, 3), [-1, 2, -3, 4]]


@pytest.mark.fallback  # (an int beyond 64 bits or None in the list: NumPy computes, as before)
@pytest.mark.parametrize("seq", SEQUENCES, ids=repr)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float32", "float64"])
@pytest.mark.parametrize("op", ["+", "&", "<", "add", "maximum"])
def test_list_and_tuple_operands_convert_as_numpy_s(seq, dtype, op):
    """A short flat list or tuple of Python numbers is an array operand
    (numfuse converts bools, ints and floats itself, NumPy's asarray
    anything else): the same dtype, values, broadcasting and errors."""
    import warnings

    npf, nff = OPS[op]
    x = (onp.arange(4) % 3).astype(dtype)
    plain = all(type(v) in (bool, int, float) and abs(v) < 2**63 for v in seq)
    if plain:  # (converted natively: no NumPy fallback)
        warnings.simplefilter("error", nf.FallbackWarning)
    for a, b in ((x, seq), (seq, x)):
        try:
            want = npf(a, b)
        except Exception as e:  # noqa: BLE001 - the same error, then
            with pytest.raises(type(e)):
                with onp.errstate(all="ignore"):
                    nff(nf.asarray(a) if a is x else a, nf.asarray(b) if b is x else b)
            continue
        got = nff(nf.asarray(a) if a is x else a, nf.asarray(b) if b is x else b)
        assert_same(got, want)

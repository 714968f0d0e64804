"""Differential tests: reductions (sum, prod, min, max, mean, std, var, any,
all, argmin, argmax, and friends) against NumPy."""

import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_result_kind, ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_same, to_np


def data(dtype, shape, seed=0, lo=None, hi=None):
    """Deterministic test data for a dtype (small integers so ties occur)."""
    rng = onp.random.default_rng(seed)
    dt = onp.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "u":
        return rng.integers(0 if lo is None else lo, 7 if hi is None else hi, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-6 if lo is None else lo, 7 if hi is None else hi, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def tol(dtype, op=None):
    """Tolerance for reduction results (reassociation is allowed)."""
    dt = onp.dtype(dtype)
    if dt == onp.float32:
        return dict(rtol=2e-4, atol=2e-5)
    return dict(rtol=1e-10, atol=1e-12)


def check(got, exp, **kw):
    """numfuse reductions return what NumPy does (see assert_result_kind)."""
    assert_result_kind(got, exp)
    exp = onp.asarray(exp)
    k = dict(kw)
    if exp.dtype.kind == "f" and "rtol" not in k:
        k.update(tol(exp.dtype))
    assert_same(got, exp, **k)


OPS = ["sum", "prod", "min", "max", "mean", "std", "var", "any", "all", "argmin", "argmax"]


def axes_for(op, ndim):
    if op in ("argmin", "argmax"):
        return [None, 1]
    return [None, -1, (0, 1)]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_reduction_dtypes_axes(op, dtype):
    e = data(dtype, (3, 4, 5), seed=1, lo=-2 if op == "prod" else None, hi=3 if op == "prod" else None)
    a = nf.array(e)
    for axis in axes_for(op, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            exp = getattr(onp, op)(e, axis=axis)
        got = getattr(nf, op)(a, axis=axis)
        check(got, exp, **tol(exp.dtype if hasattr(exp, "dtype") else dtype, op))


@pytest.mark.parametrize("op", OPS)
def test_reduction_keepdims_more_axes(op):
    e = data("float64", (3, 4, 5), seed=2)
    a = nf.array(e)
    axes = [None, 0, -2] if op.startswith("arg") else [None, 0, (1, 2), (0, 2), (-1, 0), (0, 1, 2), ()]
    for axis in axes:
        exp = getattr(onp, op)(e, axis=axis, keepdims=True)
        got = getattr(nf, op)(a, axis=axis, keepdims=True)
        check(got, exp)
        check(getattr(nf, op)(a, axis=axis), getattr(onp, op)(e, axis=axis))


@pytest.mark.parametrize("dtype", ["bool"] + INT_DTYPES + FLOAT_DTYPES)
def test_sum_nonadjacent_axes(dtype):
    e = data(dtype, (3, 4, 5), seed=2, lo=0, hi=50)
    a = nf.array(e)
    check(nf.sum(a, axis=(0, 2)), onp.sum(e, axis=(0, 2)))


@pytest.mark.parametrize("op", ["prod", "min", "max"])
def test_int_reductions_nonadjacent_axes(op):
    e = onp.arange(1, 31, dtype="int64").reshape(2, 3, 5)[..., ::-1] % 7 + 1
    a = nf.array(e)
    check(getattr(nf, op)(a, axis=(0, 2)), getattr(onp, op)(e, axis=(0, 2)))


def test_int_reductions_nonadjacent_axes_4d():
    e = onp.arange(120, dtype="int32").reshape(2, 3, 4, 5)
    a = nf.array(e)
    check(nf.sum(a, axis=(0, 2)), onp.sum(e, axis=(0, 2)))  # last axis kept: fine
    check(nf.sum(a.transpose(1, 0, 2, 3), axis=1), onp.sum(e.transpose(1, 0, 2, 3), axis=1))


def test_int_sum_axes_1_3_4d():
    e = onp.arange(120, dtype="int32").reshape(2, 3, 4, 5)
    check(nf.sum(nf.array(e), axis=(1, 3)), onp.sum(e, axis=(1, 3)))


@pytest.mark.parametrize("op", OPS)
def test_reduction_keepdims(op):
    e = data("float64", (3, 4, 5), seed=2)
    a = nf.array(e)
    for axis in axes_for(op, 3):
        exp = getattr(onp, op)(e, axis=axis, keepdims=True)
        got = getattr(nf, op)(a, axis=axis, keepdims=True)
        check(got, exp)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["transposed", "strided", "negative", "lazy"])
def test_reduction_noncontiguous(op, layout):
    e0 = data("float64", (6, 8, 5), seed=3)
    a0 = nf.array(e0)
    view = {
        "transposed": lambda x: x.transpose(2, 0, 1),
        "strided": lambda x: x[::2, 1::3, ::2],
        "negative": lambda x: x[::-1, :, ::-2],
        "lazy": lambda x: (x * 2.0 - 1.0).T[1:, ::-1],
    }[layout]
    e, a = view(e0), view(a0)
    for axis in [None, -1] + ([0] if op.startswith("arg") else [(0, 2)]):
        check(getattr(nf, op)(a, axis=axis), getattr(onp, op)(e, axis=axis))


def test_reductions_of_fused_expressions(fusion):
    e = data("float64", (20, 30), seed=4)
    a = nf.array(e)
    check(((a * 2 + 1) ** 2).sum(axis=0), ((e * 2 + 1) ** 2).sum(axis=0))
    check(nf.sqrt(nf.abs(a)).mean(axis=1), onp.sqrt(onp.abs(e)).mean(axis=1))
    check((a > 0).sum(), (e > 0).sum())
    check((a - a.mean(axis=0)).std(axis=0), (e - e.mean(axis=0)).std(axis=0))
    check(nf.exp(a).max(axis=1) - a.min(axis=1), onp.exp(e).max(axis=1) - e.min(axis=1))
    check(a.sum() / a.size, e.sum() / e.size)
    check((a[:, None, :] * a[None, :, :]).sum(axis=-1), (e[:, None, :] * e[None, :, :]).sum(axis=-1))


def test_reduction_chain_reusing_result(fusion):
    e = data("float32", (50, 40), seed=5)
    a = nf.array(e)
    s = a.sum(axis=1, keepdims=True)
    got = (a / s).sum(axis=1)
    exp = (e / e.sum(axis=1, keepdims=True)).sum(axis=1)
    check(got, exp, rtol=1e-3, atol=1e-3)
    m = a.max()
    check(a - m, e - e.max())


@pytest.mark.parametrize("tier", ["eager", "lazy"])
def test_full_reduction_is_numpys_scalar_or_a_pending_0d_array(tier):
    """NumPy returns scalars from full reductions; numfuse does too when it
    computed the value at once (tier 0), and a 0-d array holding the pending
    value when it recorded the reduction."""
    e = data("int32", (4, 5))
    a = nf.array(e)
    with nf.config(tier=tier):
        for op in OPS:
            r = getattr(nf, op)(a)
            exp = getattr(onp, op)(e)
            if tier == "eager":
                assert type(r) is type(exp), (op, type(r), type(exp))
            else:
                assert isinstance(r, nf.ndarray) and r.shape == (), op
            assert onp.asarray(r).dtype == onp.asarray(exp).dtype, op
            assert onp.asarray(r).item() == pytest.approx(onp.asarray(exp).item()), op


def test_methods():
    e = data("float64", (4, 6), seed=6)
    a = nf.array(e)
    check(a.sum(axis=1), e.sum(axis=1))
    check(a.sum(1), e.sum(1))
    check(a.prod(keepdims=True), e.prod(keepdims=True))
    check(a.max(), e.max())
    check(a.min(axis=0), e.min(axis=0))
    check(a.mean(0), e.mean(0))
    check(a.std(ddof=1), e.std(ddof=1))
    check(a.var(axis=1, ddof=2), e.var(axis=1, ddof=2))
    check(a.argmax(axis=0), e.argmax(axis=0))
    check(a.argmin(), e.argmin())
    check(a.any(axis=1), e.any(axis=1))
    check((a > 0).all(axis=0), (e > 0).all(axis=0))
    check(a.ptp(axis=1), onp.ptp(e, axis=1))
    check(a.min(initial=-10.0), e.min(initial=-10.0))
    check(a.sum(axis=(0, 1), dtype="float32"), e.sum(axis=(0, 1), dtype="float32"), rtol=1e-5, atol=1e-5)
    check(a.T.cumsum(axis=0), e.T.cumsum(axis=0))


def test_sum_prod_dtype_promotion():
    for dt in INT_DTYPES + ["bool"]:
        e = data(dt, (5, 6), seed=7, lo=0, hi=3)
        a = nf.array(e)
        check(nf.sum(a), onp.sum(e))
        check(nf.sum(a, axis=0), onp.sum(e, axis=0))
        check(nf.prod(a, axis=1), onp.prod(e, axis=1))
        check(nf.max(a, axis=1), onp.max(e, axis=1))


@pytest.mark.parametrize("src,dst", [("int8", "int8"), ("int32", "int16"), ("uint8", "uint8"),
                                     ("float32", "float64"), ("int64", "float32"), ("float64", "float32"),
                                     ("bool", "int8"), ("float64", "int32"), ("uint16", "int8")])
def test_sum_prod_dtype_argument(src, dst):
    e = data(src, (4, 50), seed=8, lo=0, hi=100) if onp.dtype(src).kind in "iu" else data(src, (4, 50), seed=8)
    a = nf.array(e)
    check(nf.sum(a, dtype=dst), onp.sum(e, dtype=dst), rtol=1e-4, atol=1e-4)
    check(nf.sum(a, axis=1, dtype=dst), onp.sum(e, axis=1, dtype=dst), rtol=1e-4, atol=1e-4)
    small = e[:, :3]
    check(nf.prod(nf.array(small), axis=1, dtype=dst), onp.prod(small, axis=1, dtype=dst), rtol=1e-4)


def test_sum_int8_dtype_wraps():
    e = onp.full(100, 100, dtype="int8")
    a = nf.array(e)
    check(nf.sum(a, dtype="int8"), onp.sum(e, dtype="int8"))
    check(nf.sum(a), onp.sum(e))


def test_mean_var_std_dtype_argument():
    e = data("int16", (6, 7), seed=9)
    a = nf.array(e)
    check(nf.mean(a, dtype="float32"), onp.mean(e, dtype="float32"))
    check(nf.mean(a, axis=0, dtype="float32"), onp.mean(e, axis=0, dtype="float32"))
    check(nf.var(a, axis=1, dtype="float32"), onp.var(e, axis=1, dtype="float32"))
    check(nf.std(a, dtype="float64"), onp.std(e, dtype="float64"))
    f = data("float32", (6, 7), seed=9)
    check(nf.mean(nf.array(f)), onp.mean(f))
    check(nf.mean(nf.array(f), dtype="float64"), onp.mean(f, dtype="float64"), rtol=1e-6)
    check(nf.std(nf.array(f), axis=0, dtype="float64"), onp.std(f, axis=0, dtype="float64"), rtol=1e-6)


def test_initial():
    e = data("int32", (4, 5), seed=10)
    a = nf.array(e)
    check(nf.sum(a, initial=100), onp.sum(e, initial=100))
    check(nf.sum(a, axis=0, initial=-3), onp.sum(e, axis=0, initial=-3))
    check(nf.prod(a, axis=1, initial=2), onp.prod(e, axis=1, initial=2))
    check(nf.max(a, axis=1, initial=3), onp.max(e, axis=1, initial=3))
    check(nf.min(a, initial=-100), onp.min(e, initial=-100))
    check(nf.max(a, initial=1000), onp.max(e, initial=1000))
    f = data("float64", (4, 5), seed=10)
    check(nf.sum(nf.array(f), axis=1, initial=0.5), onp.sum(f, axis=1, initial=0.5))
    check(nf.max(nf.array(f), axis=0, initial=0.0), onp.max(f, axis=0, initial=0.0))


def test_initial_on_empty():
    e = onp.zeros((0, 3))
    a = nf.array(e)
    check(nf.max(a, initial=-1.5), onp.max(e, initial=-1.5))
    check(nf.max(a, axis=0, initial=7.0), onp.max(e, axis=0, initial=7.0))
    check(nf.min(a, axis=0, initial=2.0), onp.min(e, axis=0, initial=2.0))
    check(nf.sum(a, axis=0, initial=5.0), onp.sum(e, axis=0, initial=5.0))


def test_out_argument():
    e = data("float64", (4, 5), seed=11)
    a = nf.array(e)
    out = nf.zeros(5)
    oe = onp.zeros(5)
    r = nf.sum(a, axis=0, out=out)
    onp.sum(e, axis=0, out=oe)
    assert r is out
    check(out, oe)
    out = nf.empty(4)
    oe = onp.empty(4)
    r = nf.max(a, axis=1, out=out)
    onp.max(e, axis=1, out=oe)
    assert r is out
    check(out, oe)
    out = nf.zeros((4, 1))
    r = nf.mean(a, axis=1, keepdims=True, out=out)
    assert r is out
    check(out, onp.mean(e, axis=1, keepdims=True))
    out = nf.zeros((), dtype="float64")
    r = nf.sum(a, out=out)
    assert r is out
    check(out, onp.asarray(onp.sum(e)))


@pytest.mark.parametrize("op", ["sum", "max"])
def test_out_argument_float_into_int(op):
    e = data("float64", (4, 5), seed=12) * 10
    a = nf.array(e)
    out = nf.zeros(5, dtype="int32")
    oe = onp.zeros(5, dtype="int32")
    getattr(onp, op)(e, axis=0, out=oe)
    getattr(nf, op)(a, axis=0, out=out)
    check(out, oe)


def test_mean_out_float_into_int():
    e = data("float64", (4, 5), seed=12) * 10
    out = nf.zeros(5, dtype="int32")
    oe = onp.zeros(5, dtype="int32")
    onp.mean(e, axis=0, out=oe)
    nf.mean(nf.array(e), axis=0, out=out)
    check(out, oe)


def test_out_argument_casts():
    e = data("float64", (4, 5), seed=12) * 10
    a = nf.array(e)
    out = nf.zeros(4, dtype="int8")
    oe = onp.zeros(4, dtype="int8")
    nf.sum(nf.array(e.astype("int64") * 10), axis=1, out=out)
    onp.sum(e.astype("int64") * 10, axis=1, out=oe)
    check(out, oe)
    out = nf.zeros(5, dtype="float64")
    oe = onp.zeros(5, dtype="float64")
    nf.sum(nf.array(e.astype("int16")), axis=0, out=out)
    onp.sum(e.astype("int16"), axis=0, out=oe)
    check(out, oe)
    out = nf.zeros(4, dtype="float32")
    oe = onp.zeros(4, dtype="float32")
    nf.min(a, axis=1, out=out)
    onp.min(e, axis=1, out=oe)
    check(out, oe)


def test_out_argument_argmax_and_view():
    e = data("int16", (4, 5), seed=13)
    a = nf.array(e)
    out = nf.zeros(5, dtype="int64")
    r = nf.argmax(a, axis=0, out=out)
    assert r is out
    check(out, onp.argmax(e, axis=0))
    big = nf.zeros((3, 8))
    bige = onp.zeros((3, 8))
    nf.sum(nf.array(data("float64", (4, 4), seed=14)), axis=0, out=big[1, ::2])
    onp.sum(data("float64", (4, 4), seed=14), axis=0, out=bige[1, ::2])
    check(big, bige)


def test_out_wrong_shape_raises():
    e = data("float64", (4, 5))
    a = nf.array(e)
    with pytest.raises(ValueError):
        onp.sum(e, axis=0, out=onp.zeros(4))
    with pytest.raises(ValueError):
        nf.sum(a, axis=0, out=nf.zeros(4))


# ---------------------------------------------------------------------------
# Empty arrays

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_empty_sum_prod_mean_any_all():
    e = onp.zeros((0, 3))
    a = nf.array(e)
    for op in ["sum", "prod", "mean", "any", "all", "std", "var"]:
        for axis in [None, 0, 1]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                exp = getattr(onp, op)(e, axis=axis)
                got = getattr(nf, op)(a, axis=axis)
                check(got, exp)
    ei = onp.zeros((0,), dtype="int32")
    ai = nf.array(ei)
    check(nf.sum(ai), onp.sum(ei))
    check(nf.prod(ai), onp.prod(ei))
    check(nf.count_nonzero(ai), onp.count_nonzero(ei))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_mean_of_empty_is_nan():
    a = nf.array([], dtype="float64")
    r = onp.asarray(nf.mean(a))
    assert r.shape == () and onp.isnan(r) and r.dtype == onp.float64
    r = onp.asarray(nf.mean(nf.zeros(0, dtype="int32")))
    assert onp.isnan(r) and r.dtype == onp.float64


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "ptp", "amax", "amin"])
def test_empty_max_raises_valueerror(op):
    e = onp.zeros((0, 3))
    a = nf.array(e)
    with pytest.raises(ValueError):
        getattr(onp, op)(e)
    with pytest.raises(ValueError):
        getattr(nf, op)(a)
    with pytest.raises(ValueError):
        getattr(nf, op)(a, axis=0)
    # Reducing a non-empty axis of an empty array is fine: the result is empty.
    check(getattr(nf, op)(a, axis=1), getattr(onp, op)(e, axis=1))


# ---------------------------------------------------------------------------
# NaN handling

NAN_DATA = onp.array([[1.0, onp.nan, 3.0, -onp.inf],
                      [onp.inf, 2.0, -1.0, 0.5],
                      [onp.nan, onp.nan, 5.0, onp.nan]])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "sum", "prod", "mean", "ptp", "nansum",
                                "nanmean", "any", "all", "count_nonzero", "std"])
def test_nan_propagation(op, dtype):
    e = NAN_DATA.astype(dtype)
    a = nf.array(e)
    for axis in [None, 0, 1]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            exp = getattr(onp, op)(e, axis=axis)
            got = getattr(nf, op)(a, axis=axis)
            check(got, exp)


def test_nan_first_position_argmax_argmin():
    e = onp.array([3.0, 1.0, onp.nan, 7.0, onp.nan, -2.0])
    a = nf.array(e)
    check(nf.argmax(a), onp.argmax(e))
    check(nf.argmin(a), onp.argmin(e))
    check(nf.max(a), onp.max(e))
    check(nf.min(a[3:]), onp.min(e[3:]))
    check(nf.argmax(a[::-1]), onp.argmax(e[::-1]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_inf_handling():
    e = onp.array([-onp.inf, -onp.inf, -5.0])
    a = nf.array(e)
    check(nf.max(a), onp.max(e))
    check(nf.argmax(a), onp.argmax(e))
    check(nf.argmin(a), onp.argmin(e))
    e = onp.array([onp.inf, -onp.inf])
    check(nf.sum(nf.array(e)), onp.sum(e))
    e = onp.full(3, -onp.inf)
    check(nf.argmax(nf.array(e)), onp.argmax(e))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op,fill", [("max", -onp.inf), ("min", onp.inf)])
def test_max_min_all_infinite(op, fill, dtype):
    e = onp.full((2, 3), fill, dtype=dtype)
    a = nf.array(e)
    check(getattr(nf, op)(a, axis=1), getattr(onp, op)(e, axis=1))
    check(getattr(nf, op)(a), getattr(onp, op)(e))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nanmean_all_nan_and_nansum_ints():
    e = onp.full((2, 3), onp.nan)
    a = nf.array(e)
    check(nf.nanmean(a), onp.nanmean(e))
    check(nf.nanmean(a, axis=0), onp.nanmean(e, axis=0))
    check(nf.nansum(a), onp.nansum(e))
    ei = data("int16", (3, 4))
    check(nf.nansum(nf.array(ei), axis=1), onp.nansum(ei, axis=1))
    check(nf.nanmean(nf.array(ei), axis=0), onp.nanmean(ei, axis=0))
    f = NAN_DATA.astype("float32")
    check(nf.nanmean(nf.array(f), axis=1), onp.nanmean(f, axis=1))
    check(nf.nanmean(nf.array(f), axis=1, keepdims=True), onp.nanmean(f, axis=1, keepdims=True))
    check(nf.nansum(nf.array(f), axis=0, keepdims=True), onp.nansum(f, axis=0, keepdims=True))


# ---------------------------------------------------------------------------
# Ties and the first-occurrence rule

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float32"])
def test_argmax_argmin_ties_first_occurrence(dtype):
    e = data(dtype, (7, 9), seed=15, lo=0, hi=2)
    a = nf.array(e)
    for axis in [None, 0, 1, -1]:
        check(nf.argmax(a, axis=axis), onp.argmax(e, axis=axis))
        check(nf.argmin(a, axis=axis), onp.argmin(e, axis=axis))
        check(nf.argmax(a.T, axis=axis), onp.argmax(e.T, axis=axis))
        check(nf.argmin(a[::-1], axis=axis), onp.argmin(e[::-1], axis=axis))


def test_argmax_keepdims_and_extremes():
    e = onp.array([[0, 127, -128, 127], [-128, -128, 5, 0]], dtype="int8")
    a = nf.array(e)
    check(nf.argmax(a, axis=1, keepdims=True), onp.argmax(e, axis=1, keepdims=True))
    check(nf.argmin(a, keepdims=True), onp.argmin(e, keepdims=True))
    check(nf.max(a, axis=0), onp.max(e, axis=0))
    u = onp.array([0, 2**64 - 1, 2**63, 1], dtype="uint64")
    check(nf.max(nf.array(u)), onp.max(u))
    check(nf.argmax(nf.array(u)), onp.argmax(u))
    check(nf.min(nf.array(u)[1:]), onp.min(u[1:]))
    i = onp.array([-2**63, 2**63 - 1, 0], dtype="int64")
    check(nf.min(nf.array(i)), onp.min(i))
    check(nf.argmin(nf.array(i)), onp.argmin(i))


# ---------------------------------------------------------------------------
# count_nonzero, ptp, amax/amin, nansum

def test_count_nonzero():
    e = data("int32", (5, 6), seed=16, lo=-1, hi=2)
    a = nf.array(e)
    check(nf.count_nonzero(a), onp.count_nonzero(e))
    check(nf.count_nonzero(a, axis=0), onp.count_nonzero(e, axis=0))
    check(nf.count_nonzero(a, axis=(0, 1)), onp.count_nonzero(e, axis=(0, 1)))
    check(nf.count_nonzero(a, axis=1, keepdims=True), onp.count_nonzero(e, axis=1, keepdims=True))
    b = e > 0
    check(nf.count_nonzero(nf.array(b), axis=-1), onp.count_nonzero(b, axis=-1))
    f = onp.array([0.0, -0.0, onp.nan, 1e-300])
    check(nf.count_nonzero(nf.array(f)), onp.count_nonzero(f))


def test_count_nonzero_full_returns_python_int_compatible():
    e = data("int32", (5, 6), seed=16, lo=-1, hi=2)
    r = nf.count_nonzero(nf.array(e))
    assert int(r) == onp.count_nonzero(e)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float32", "float64"])
def test_ptp(dtype):
    e = data(dtype, (4, 6), seed=17, lo=0, hi=100) if dtype[0] in "iu" else data(dtype, (4, 6), seed=17)
    a = nf.array(e)
    for axis in [None, 0, 1, (0, 1)]:
        check(nf.ptp(a, axis=axis), onp.ptp(e, axis=axis))
    check(nf.ptp(a, axis=1, keepdims=True), onp.ptp(e, axis=1, keepdims=True))


def test_ptp_int8_overflow_wraps_like_numpy():
    e = onp.array([-100, 100], dtype="int8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        exp = onp.ptp(e)
    check(nf.ptp(nf.array(e)), exp)


def test_amax_amin():
    e = data("float32", (3, 4, 5), seed=18)
    a = nf.array(e)
    check(nf.amax(a), onp.amax(e))
    check(nf.amin(a, axis=(1, 2)), onp.amin(e, axis=(1, 2)))
    check(nf.amax(a, axis=-2, keepdims=True), onp.amax(e, axis=-2, keepdims=True))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nansum_variants():
    e = NAN_DATA.copy()
    a = nf.array(e)
    for axis in [None, 0, 1, (0, 1)]:
        check(nf.nansum(a, axis=axis), onp.nansum(e, axis=axis))
    check(nf.nansum(a, axis=1, keepdims=True), onp.nansum(e, axis=1, keepdims=True))
    check(nf.nansum(a[:, ::-2], axis=0), onp.nansum(e[:, ::-2], axis=0))
    check(nf.nanmean(a.T, axis=0), onp.nanmean(e.T, axis=0))
    check(nf.nansum(a, dtype="float32"), onp.nansum(e, dtype="float32"))


# ---------------------------------------------------------------------------
# var / std

def test_var_std_ddof():
    e = data("float64", (5, 4), seed=19)
    a = nf.array(e)
    for ddof in [0, 1, 3]:
        for axis in [None, 0, 1]:
            check(nf.var(a, axis=axis, ddof=ddof), onp.var(e, axis=axis, ddof=ddof))
            check(nf.std(a, axis=axis, ddof=ddof), onp.std(e, axis=axis, ddof=ddof))
    check(nf.std(a, axis=1, keepdims=True), onp.std(e, axis=1, keepdims=True))
    check(nf.var(a, correction=1), onp.var(e, correction=1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_var_ddof_too_large():
    e = data("float64", (3, 2), seed=20)
    a = nf.array(e)
    check(nf.var(a, axis=1, ddof=2), onp.var(e, axis=1, ddof=2))
    check(nf.var(a, axis=1, ddof=5), onp.var(e, axis=1, ddof=5))


def test_var_large_offset_precision():
    # Two-pass variance: data far from zero must not lose all precision.
    e = 1e8 + data("float64", (1000,), seed=21)
    a = nf.array(e)
    check(nf.var(a), onp.var(e), rtol=1e-6)
    check(nf.std(a), onp.std(e), rtol=1e-6)


# ---------------------------------------------------------------------------
# Errors

def test_axis_errors():
    e = data("float64", (3, 4))
    a = nf.array(e)
    for op in ["sum", "max", "mean", "any", "argmax", "std"]:
        with pytest.raises(onp.exceptions.AxisError):
            getattr(onp, op)(e, axis=2)
        with pytest.raises(onp.exceptions.AxisError):
            getattr(nf, op)(a, axis=2)
        with pytest.raises(onp.exceptions.AxisError):
            getattr(nf, op)(a, axis=-3)


def test_duplicate_axes_raise():
    e = data("float64", (3, 4))
    a = nf.array(e)
    with pytest.raises(ValueError):
        onp.sum(e, axis=(0, 0))
    with pytest.raises(ValueError):
        nf.sum(a, axis=(0, 0))
    with pytest.raises(ValueError):
        nf.max(a, axis=(1, -1))


def test_argmax_tuple_axis_raises():
    e = data("float64", (3, 4))
    a = nf.array(e)
    with pytest.raises(TypeError):
        onp.argmax(e, axis=(0, 1))
    with pytest.raises(TypeError):
        nf.argmax(a, axis=(0, 1))


# ---------------------------------------------------------------------------
# ufunc.reduce and NumPy entry points

def test_ufunc_reduce():
    e = data("int32", (4, 5), seed=22)
    a = nf.array(e)
    check(nf.add.reduce(a), onp.add.reduce(e))
    check(nf.add.reduce(a, axis=1), onp.add.reduce(e, axis=1))
    check(nf.multiply.reduce(a, axis=None), onp.multiply.reduce(e, axis=None))
    check(nf.maximum.reduce(a, axis=-1, keepdims=True), onp.maximum.reduce(e, axis=-1, keepdims=True))
    check(nf.minimum.reduce(a.T), onp.minimum.reduce(e.T))
    check(onp.add.reduce(a, axis=0), onp.add.reduce(e, axis=0))
    check(nf.logical_or.reduce(a > 3, axis=0), onp.logical_or.reduce(e > 3, axis=0))


def test_numpy_functions_on_numfuse_arrays():
    e = data("float64", (4, 5), seed=23)
    a = nf.array(e)
    check(onp.sum(a, axis=0), onp.sum(e, axis=0))
    check(onp.mean(a), onp.mean(e))
    check(onp.std(a, axis=1, ddof=1), onp.std(e, axis=1, ddof=1))
    check(onp.argmax(a, axis=1), onp.argmax(e, axis=1))
    check(onp.max(a, axis=(0, 1)), onp.max(e, axis=(0, 1)))
    check(onp.count_nonzero(a > 0, axis=0), onp.count_nonzero(e > 0, axis=0))


# ---------------------------------------------------------------------------
# Large arrays: the parallel path with per-thread partials

N = 1_000_000


def test_large_sum_mean_std_float64():
    e = data("float64", (N,), seed=24)
    a = nf.array(e)
    check(nf.sum(a), onp.sum(e), rtol=1e-9, atol=1e-9)
    check(nf.mean(a), onp.mean(e), rtol=1e-9, atol=1e-12)
    check(nf.std(a), onp.std(e), rtol=1e-9)
    check(nf.sum(a * a), onp.sum(e * e), rtol=1e-9)


def test_large_sum_float32():
    e = onp.full(N, 0.1, dtype="float32")
    a = nf.array(e)
    # NumPy's pairwise sum is accurate; a naive serial float32 sum would be off by ~1%.
    check(nf.sum(a), onp.sum(e), rtol=1e-4)
    check(nf.mean(a), onp.mean(e), rtol=1e-4)


def test_large_int_sum_exact():
    e = data("int64", (N,), seed=25, lo=-1000, hi=1000)
    a = nf.array(e)
    check(nf.sum(a), onp.sum(e))
    check(nf.sum(a.astype("int32")), onp.sum(e.astype("int32")))
    u = e.astype("uint8")
    check(nf.sum(nf.array(u)), onp.sum(u))
    check(nf.count_nonzero(a > 500), onp.count_nonzero(e > 500))


def test_large_max_min_arg_with_ties():
    e = data("int32", (N,), seed=26, lo=-1000, hi=1000)
    e[123457] = 5000
    e[876543] = 5000  # tie: the first one wins
    e[500001] = -5000
    e[999999] = -5000
    a = nf.array(e)
    check(nf.max(a), onp.max(e))
    check(nf.min(a), onp.min(e))
    check(nf.argmax(a), onp.argmax(e))
    check(nf.argmin(a), onp.argmin(e))
    check(nf.argmax(a[::-1]), onp.argmax(e[::-1]))


def test_large_nan_propagation():
    e = data("float64", (N,), seed=27)
    e[777777] = onp.nan
    e[888888] = onp.nan
    a = nf.array(e)
    check(nf.max(a), onp.max(e))
    check(nf.min(a), onp.min(e))
    check(nf.argmax(a), onp.argmax(e))
    check(nf.argmin(a), onp.argmin(e))
    check(nf.nansum(a), onp.nansum(e), rtol=1e-9, atol=1e-9)


def test_large_any_all():
    e = onp.zeros(N, dtype=bool)
    a = nf.array(e)
    check(nf.any(a), onp.any(e))
    e2 = e.copy()
    e2[N - 1] = True
    check(nf.any(nf.array(e2)), onp.any(e2))
    e3 = onp.ones(N, dtype=bool)
    e3[N // 2 + 1] = False
    check(nf.all(nf.array(e3)), onp.all(e3))
    check(nf.all(nf.array(e3)[N // 2 + 2:]), onp.all(e3[N // 2 + 2:]))


def test_large_2d_axis_reductions():
    e = data("float64", (1000, 1000), seed=28)
    a = nf.array(e)
    check(nf.sum(a, axis=0), onp.sum(e, axis=0), rtol=1e-9, atol=1e-12)
    check(nf.sum(a, axis=1), onp.sum(e, axis=1), rtol=1e-9, atol=1e-12)
    check(nf.max(a.T, axis=1), onp.max(e.T, axis=1))
    check(nf.argmin(a, axis=0), onp.argmin(e, axis=0))
    check(nf.mean(a[::2, ::3], axis=1), onp.mean(e[::2, ::3], axis=1), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------
# where=

@pytest.mark.fallback
def test_where_argument_sum_mean_prod():
    e = data("float64", (4, 5), seed=29)
    m = e > 0
    a = nf.array(e)
    assert_same(nf.sum(a, where=m), onp.sum(e, where=m))
    check(nf.sum(a, axis=0, where=nf.array(m)), onp.sum(e, axis=0, where=m))
    check(nf.mean(a, axis=1, where=m), onp.mean(e, axis=1, where=m))
    check(nf.prod(a, axis=1, where=m), onp.prod(e, axis=1, where=m))


@pytest.mark.fallback
def test_where_full_reduction_returns_numpys_scalar():
    e = data("float64", (4, 5), seed=29)
    check(nf.sum(nf.array(e), where=e > 0), onp.sum(e, where=e > 0))


@pytest.mark.fallback
@pytest.mark.parametrize("op", ["max", "min", "any", "all"])
def test_where_argument_max_min_any_all(op):
    e = data("int32", (4, 5), seed=30)
    m = e > 0
    kw = dict(initial=0) if op in ("max", "min") else {}
    check(getattr(nf, op)(nf.array(e), axis=0, where=m, **kw), getattr(onp, op)(e, axis=0, where=m, **kw))


# ---------------------------------------------------------------------------
# Fusion: several reductions of the same elementwise expression in one kernel

@pytest.mark.parametrize("expr", ["sum+sum", "sum+max", "var"])
def test_fused_two_reductions_of_division_axes_0_2(expr):
    e = onp.arange(24.0).reshape(2, 3, 4)
    f = {"sum+sum": lambda m, x: m.sum(x / 7, axis=(0, 2)) + m.sum(x / 7, axis=(0, 2)),
         "sum+max": lambda m, x: m.sum(x / 7, axis=(0, 2)) + m.max(x / 7, axis=(0, 2)),
         "var": lambda m, x: m.var(x / 7 - 1, axis=(0, 2))}[expr]
    with nf.config(fusion=True):
        check(f(nf, nf.array(e)), f(onp, e))


@pytest.mark.parametrize("expr", ["sum+sum", "sum+max", "var"])
def test_two_reductions_of_division_axes_0_2_unfused(expr):
    e = onp.arange(24.0).reshape(2, 3, 4)
    f = {"sum+sum": lambda m, x: m.sum(x / 7, axis=(0, 2)) + m.sum(x / 7, axis=(0, 2)),
         "sum+max": lambda m, x: m.sum(x / 7, axis=(0, 2)) + m.max(x / 7, axis=(0, 2)),
         "var": lambda m, x: m.var(x / 7 - 1, axis=(0, 2))}[expr]
    with nf.config(fusion=False):
        check(f(nf, nf.array(e)), f(onp, e))


def test_two_reductions_of_same_expression(fusion):
    e = onp.arange(24.0).reshape(2, 3, 4)
    for axis in [None, 0, 1, 2, (0, 1), (1, 2)]:
        a = nf.array(e)
        check(nf.sum(a / 7, axis=axis) + nf.max(a / 7, axis=axis), onp.sum(e / 7, axis=axis) + onp.max(e / 7, axis=axis))
        check(nf.sum(a * 3, axis=axis) - nf.min(a * 3, axis=axis), onp.sum(e * 3, axis=axis) - onp.min(e * 3, axis=axis))


def test_count_nonzero_nonadjacent_axes():
    e = onp.arange(24.0).reshape(2, 3, 4) / 7 - 1
    check(nf.count_nonzero(nf.array(e), axis=(0, 2)), onp.count_nonzero(e, axis=(0, 2)))


def test_reductions_of_0d_and_broadcast_views():
    z = onp.array(3.5)
    for op in ["sum", "max", "mean", "argmax", "any"]:
        check(getattr(nf, op)(nf.array(z)), getattr(onp, op)(z))
    b = onp.broadcast_to(onp.arange(4.0), (1000, 4))
    nb = nf.broadcast_to(nf.arange(4.0), (1000, 4))
    check(nf.sum(nb, axis=0), onp.sum(b, axis=0))
    check(nf.sum(nb), onp.sum(b))
    check(nf.argmax(nf.broadcast_to(nf.arange(4.0)[:, None], (4, 5)), axis=0),
          onp.argmax(onp.broadcast_to(onp.arange(4.0)[:, None], (4, 5)), axis=0))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "int16", "uint8", "uint64"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_in_registers_match_numpy_bits(op, dtype):
    """Tier 0 reduces max / min in registers (several lanes) when that is
    exact: over whole arrays and along the last axis, with NaNs and signed
    zeros (where the lanes' order would show) at several positions."""
    rng = onp.random.default_rng(5)
    for n in (1, 3, 4, 7, 255, 256, 257, 1000):
        e = (rng.random(n) * 200 - 100).astype(dtype) if dtype.startswith("float") else \
            rng.integers(onp.iinfo(dtype).min, onp.iinfo(dtype).max, n, dtype=dtype, endpoint=True)
        cases = [e, e[::-1], e[::3]]
        if dtype.startswith("float"):
            for k in {0, n // 2, n - 1}:
                z = onp.zeros(n, dtype)
                z[k:] = -0.0
                w = e.copy()
                w[k] = onp.nan
                cases += [z, -z, w]
        for c in cases:
            m = onp.stack([c, c[::-1]])
            for got, exp in ((getattr(nf, op)(nf.array(c)), getattr(onp, op)(c)),
                             (getattr(nf, op)(nf.array(m), axis=1), getattr(onp, op)(m, axis=1))):
                check(got, exp)
                g, x = onp.asarray(got), onp.asarray(exp)
                # NaN payloads too; not the sign of a zero maximum, which
                # NumPy's own SIMD blocking decides (max of 257 zeros with
                # a -0.0 last is +0.0, of 256 or 258 it is -0.0).
                nz = x != 0
                assert g[nz].tobytes() == x[nz].tobytes(), (c, g, x)


def check_rows_and_columns(op, c):
    """`op` (a reduction's name) of c's first len(c) // 8 * 8 values as 8
    rows: along rows, along the columns of the transpose, and the whole of a
    transposed matrix both ways (there the loop over memory, the vectorized
    one, is not the flat index's innermost dimension, so a register carries
    points of later indices from one row of memory to the next)."""
    m = c[: (len(c) // 8) * 8].reshape(8, -1)
    check(getattr(nf, op)(nf.array(m), axis=1), getattr(onp, op)(m, axis=1))
    check(getattr(nf, op)(nf.array(m).T, axis=0), getattr(onp, op)(m.T, axis=0))
    check(getattr(nf, op)(nf.array(m).T), getattr(onp, op)(m.T))
    check(getattr(nf, op)(nf.array(m.T.copy()).T), getattr(onp, op)(m))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_compiled_float_max_min_on_lanes_match_numpy(op, dtype):
    """Compiled kernels reduce float max / min on vector lanes (a block of
    points, one lane each, folded in order at the end; the rest of the range
    serially). Lengths around the lane block, NaNs in the lanes, in the
    remainder and in both, infinities only, fused producers, along rows and
    columns, with initial=, and large enough for the parallel split."""
    rng = onp.random.default_rng(11)
    with nf.config(tier="lazy"), nf.profile() as p:
        for n in (1, 15, 63, 64, 65, 127, 128, 129, 200, 1000, 70001):
            e = (rng.random(n) * 200 - 100).astype(dtype)
            cases = [e]
            for ks in ({0}, {n // 2}, {n - 1}, {0, n - 1}):
                w = e.copy()
                w[list(ks)] = onp.nan
                cases.append(w)
            cases.append(onp.full(n, -onp.inf if op == "max" else onp.inf, dtype))
            for c in cases:
                x = nf.array(c)
                check(getattr(nf, op)(x), getattr(onp, op)(c))
                check(getattr(nf, op)(x * 2 - 1), getattr(onp, op)(c * 2 - 1))
                check(getattr(x, op)(initial=50.0), getattr(c, op)(initial=50.0))
                if n >= 64:
                    check_rows_and_columns(op, c)
    assert p["kernels_run"] > 0 and p["tier0_groups"] == 0, p


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_tier0_integer_sums_products_any_all_in_registers(dtype):
    """Tier 0 (tier eager) sums and multiplies integers and combines any/all
    in registers, in four chains: wrapping arithmetic in the accumulator's
    type as NumPy's (dtype= forces a narrow accumulator), contiguous,
    strided and reversed, across blocks of 256 and the rest, along rows and
    columns."""
    rng = onp.random.default_rng(5)
    with nf.config(tier="eager"), nf.profile() as p:
        for n in (1, 5, 255, 256, 257, 1031):
            e = rng.integers(0, 120, n).astype(dtype)
            x = nf.array(e)
            for view, ref in ((x, e), (x[::-1], e[::-1]), (x[::3], e[::3])):
                check(nf.sum(view), onp.sum(ref))
                check(nf.sum(view, dtype=dtype), onp.sum(ref, dtype=dtype))      # wraps in the narrow type
                check(nf.prod(view % 7 + 1, dtype=dtype), onp.prod(ref % 7 + 1, dtype=dtype))
                check(nf.prod(view), onp.prod(ref))
                for k in (0, n // 2, n - 1):
                    b = onp.zeros(len(ref), bool)
                    b[min(k, len(ref) - 1)] = True
                    check(nf.any(nf.array(b)), onp.any(b))
                    check(nf.all(nf.array(~b)), onp.all(~b))
                    check(nf.any(view > 119), onp.any(ref > 119))
                    check(nf.all(view >= 0), onp.all(ref >= 0))
            if n >= 256:
                m = e[: (n // 8) * 8].reshape(8, -1)
                for axis in (0, 1, None):
                    check(nf.sum(nf.array(m), axis=axis, dtype=dtype), onp.sum(m, axis=axis, dtype=dtype))
                    check(nf.prod(nf.array(m) % 5 + 1, axis=axis), onp.prod(m % 5 + 1, axis=axis))
                    check(nf.any(nf.array(m) > 110, axis=axis), onp.any(m > 110, axis=axis))
                    check(nf.all(nf.array(m) < 110, axis=axis), onp.all(m < 110, axis=axis))
    assert p["kernels_run"] == 0 and p["kernels_compiled"] == 0, p


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_tier0_arg_reductions_find_the_first_best(op, dtype):
    """Tier 0 (tier eager: nothing compiled) finds a block's best point
    before combining it (on AVX2 for contiguous floats): the first best
    point and the first NaN win within a vector, across vectors, blocks of
    256 and the scalar rest, for contiguous, strided and reversed operands
    and along rows and columns."""
    rng = onp.random.default_rng(21)
    with nf.config(tier="eager"), nf.profile() as p:
        for n in (1, 3, 16, 17, 255, 256, 257, 1000, 4099):
            if dtype.startswith("float"):
                e = (rng.random(n) * 200 - 100).astype(dtype)
            else:
                e = rng.integers(0, 50, n).astype(dtype)
            best = e.max() if op == "argmax" else e.min()
            cases = [e]
            for ks in ({n - 1}, {n // 2, n - 1}, {0, n // 3, n - 1}, {n // 4, min(n // 4 + 1, n - 1)}):
                t = e.copy()
                t[list(ks)] = best
                cases.append(t)
                if dtype.startswith("float"):
                    w = e.copy()
                    w[list(ks)] = onp.nan
                    cases.append(w)
            for c in cases:
                x = nf.array(c)
                check(getattr(nf, op)(x), getattr(onp, op)(c))
                check(getattr(nf, op)(x[::-1]), getattr(onp, op)(c[::-1]))
                check(getattr(nf, op)(x[::2]), getattr(onp, op)(c[::2]))
                if n >= 256:
                    check_rows_and_columns(op, c)
    assert p["kernels_run"] == 0 and p["kernels_compiled"] == 0, p


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_compiled_arg_reductions_on_lanes_find_the_first_best(op, dtype):
    """Compiled arg-reductions run on vector lanes too (value and index per
    lane, folded by (value, index)): the first best point wins across lanes,
    blocks and the serial rest, a NaN wins (the first NaN), along rows and
    columns, of reversed views, and split over threads."""
    rng = onp.random.default_rng(12)
    with nf.config(tier="lazy"), nf.profile() as p:
        for n in (1, 31, 32, 33, 100, 1000, 70001):
            if dtype.startswith("float"):
                e = (rng.random(n) * 200 - 100).astype(dtype)
            else:
                e = rng.integers(0, 50, n).astype(dtype)  # many ties
            best = e.max() if op == "argmax" else e.min()
            cases = [e, e[::-1].copy()]
            for ks in ({n - 1}, {n // 2, n - 1}, {0, n // 3, n - 1}):
                t = e.copy()
                t[list(ks)] = best  # ties in other lanes / blocks / the rest
                cases.append(t)
                if dtype.startswith("float"):
                    w = e.copy()
                    w[list(ks)] = onp.nan
                    cases.append(w)
            for c in cases:
                x = nf.array(c)
                check(getattr(nf, op)(x), getattr(onp, op)(c))
                check(getattr(nf, op)(x[::-1]), getattr(onp, op)(c[::-1]))
                if n >= 64:
                    check_rows_and_columns(op, c)
    assert p["kernels_run"] > 0 and p["tier0_groups"] == 0, p


def test_eager_tier_runs_recorded_forms_at_the_call():
    """Tier eager computes every operation at the call, also a form tier 0
    has no direct loop for (an int8 array compared with a Python int beyond
    int8): nothing stays pending, and a full reduction of it is a NumPy
    scalar, as NumPy gives it."""
    e = onp.arange(5).astype("int8")
    with nf.config(tier="eager"):
        x = nf.array(e)
        y = x > 1000
        assert nf._core.pending() == 0
        r = nf.any(y)
        assert type(r) is type(onp.any(e > 1000)) and not r
        s = nf.sum(x < -1000)
        assert type(s) is type(onp.sum(e < -1000)) and s == 0
        assert nf._core.pending() == 0

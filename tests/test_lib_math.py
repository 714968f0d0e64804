"""Differential tests of numfuse._lib_math (NumPy functions composed of
numfuse operations) against NumPy: values, dtypes, shapes, result kinds,
warnings and exceptions. A FallbackWarning fails a test (conftest), so every
test here also proves the function ran natively."""

import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_result_kind, assert_same

NAN, INF = onp.nan, onp.inf
SPECIAL = onp.array([-10.0, -8.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 8.0, 9.0, 30.0, NAN, INF, -INF])


def _nf(x):
    """numfuse form of an argument: NumPy arrays become numfuse arrays."""
    if isinstance(x, onp.ndarray):
        return nf.asarray(x)
    return x


def _kind(got, exp):
    if isinstance(exp, onp.ndarray):
        assert isinstance(got, nf.ndarray), f"expected a numfuse array, got {type(got)}"
    elif isinstance(exp, onp.generic):
        assert_result_kind(got, exp)
    else:
        assert type(got) is type(exp), f"expected {type(exp)}, got {type(got)}"


def compare(got, exp, rtol=None, atol=0.0):
    if isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp)
        for g, e in zip(got, exp):
            compare(g, e, rtol, atol)
        return
    _kind(got, exp)
    assert_same(got, exp, rtol=rtol, atol=atol)


def check(name, *args, rtol=None, atol=0.0, **kwargs):
    """numfuse.<name> on numfuse forms of `args` equals numpy.<name>, and
    warns the RuntimeWarnings NumPy warns."""
    with warnings.catch_warnings(record=True) as w_np:
        warnings.simplefilter("always")
        exp = getattr(onp, name)(*args, **kwargs)
    with warnings.catch_warnings(record=True) as w_nf:
        warnings.simplefilter("always")
        warnings.simplefilter("error", nf.FallbackWarning)
        got = getattr(nf, name)(*[_nf(a) for a in args], **{k: _nf(v) for k, v in kwargs.items()})
        compare(got, exp, rtol, atol)  # (syncs: recorded operations report their warnings)
    msgs = lambda ws: sorted({str(x.message) for x in ws if issubclass(x.category, RuntimeWarning)})  # noqa: E731
    assert msgs(w_nf) == msgs(w_np)
    return got, exp


def check_raises(name, *args, **kwargs):
    with pytest.raises(Exception) as e_np:
        getattr(onp, name)(*args, **kwargs)
    with pytest.raises(type(e_np.value)):
        getattr(nf, name)(*[_nf(a) for a in args], **{k: _nf(v) for k, v in kwargs.items()})


def test_all_exported_and_documented():
    from numfuse import _lib_math

    assert len(_lib_math.__all__) >= 50
    for name in _lib_math.__all__:
        f = getattr(nf, name)
        assert f is getattr(_lib_math, name)
        assert f.__doc__ and "numfuse" in f.__doc__


# -- window functions ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["hamming", "hanning", "bartlett", "blackman"])
@pytest.mark.parametrize("M", [-3, 0, 1, 2, 5, 12, 7.5, onp.int32(9), onp.float32(6)])
def test_windows(name, M):
    check(name, M, atol=1e-15)


@pytest.mark.parametrize("name", ["hamming", "blackman"])
def test_windows_fused(name, fusion):
    check(name, 64, atol=1e-15)


@pytest.mark.parametrize("M,beta", [(0, 3.0), (1, 3.0), (2, 0.0), (12, 14.0), (51, 5), (7, 8.6), (-2, 1.0)])
def test_kaiser(M, beta):
    check("kaiser", M, beta, rtol=1e-13, atol=1e-15)


def test_kaiser_fused(fusion):
    check("kaiser", 40, 6.5, rtol=1e-13)


def test_windows_bad():
    check_raises("hamming", "x")
    check_raises("kaiser", 5, "b")


# -- i0, sinc ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
def test_i0(dtype):
    x = SPECIAL if dtype in ("float64", "float32") else onp.array([-9, -3, 0, 1, 5, 8, 20])
    x = x.astype(dtype)
    with onp.errstate(all="ignore"), nf.errstate(all="ignore"):
        got = nf.i0(_nf(x))
        exp = onp.i0(x)
        compare(got, exp, rtol=1e-6 if exp.dtype == onp.float32 else 1e-13)


def test_i0_shapes(fusion):
    x = onp.linspace(-20, 20, 24).reshape(2, 3, 4)
    check("i0", x, rtol=1e-13)
    check("i0", onp.zeros((0, 3)))
    check("i0", onp.array(2.5), rtol=1e-13)  # 0-d: NumPy gives a 0-d array
    check("i0", 0.5, rtol=1e-13)
    check("i0", [1.0, 9.0], rtol=1e-13)


def test_i0_complex_raises():
    with pytest.raises(TypeError):
        nf.i0(onp.array([1 + 1j]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_sinc(dtype):
    x = (SPECIAL[:-3] if dtype[0] == "f" else onp.array([-3, 0, 1, 2])).astype(dtype)
    check("sinc", x, rtol=1e-6 if dtype == "float32" else 1e-13, atol=1e-15)
    check("sinc", x.reshape(1, -1)[:, :0])


def test_sinc_scalars(fusion):
    check("sinc", onp.float32(1.0), rtol=1e-5, atol=1e-7)
    check("sinc", 0.0)
    check("sinc", onp.linspace(-4, 4, 33).reshape(3, 11), rtol=1e-13, atol=1e-15)


# -- ufunc-likes ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool"])
def test_fix(dtype):
    x = SPECIAL.astype(dtype) if dtype[0] == "f" else onp.array([0, 1, 3, 7]).astype(dtype)
    check("fix", x)


def test_fix_out_and_scalar(fusion):
    x = onp.array([-2.5, 2.5, -0.5, NAN])
    out_np = onp.empty(4)
    out_nf = nf.empty(4)
    assert nf.fix(nf.asarray(x), out=out_nf) is out_nf
    onp.fix(x, out=out_np)
    assert_same(out_nf, out_np)
    check("fix", -3.7)
    check("fix", x.reshape(2, 2))


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_isposinf_isneginf(name, dtype):
    x = SPECIAL.astype(dtype) if dtype[0] == "f" else onp.array([0, 1, 1]).astype(dtype)
    check(name, x)
    check(name, x.reshape(-1, 1)[:0])


def test_isposinf_scalar_out_complex(fusion):
    check("isposinf", INF)
    check("isneginf", -INF)
    check("isneginf", onp.array([[-INF, 1.0], [INF, NAN]]))
    out = nf.zeros(3, bool)
    r = nf.isposinf(nf.asarray([INF, -INF, 1.0]), out=out)
    assert r is out
    assert onp.asarray(out).tolist() == [True, False, False]
    with pytest.raises(TypeError):
        nf.isposinf(onp.array([1 + 1j]))


@pytest.mark.parametrize("x_dtype,h_dtype", [("float64", "float64"), ("float32", "float32"), ("int64", "int64"),
                                             ("float32", "float64"), ("bool", "int32")])
def test_heaviside(x_dtype, h_dtype):
    x = SPECIAL.astype(x_dtype) if x_dtype[0] == "f" else onp.array([-2, 0, 3, 0]).astype(x_dtype)
    h = onp.linspace(-1, 1, x.size).astype(h_dtype)
    check("heaviside", x, h)


def test_heaviside_broadcast_scalars(fusion):
    check("heaviside", SPECIAL, 0.5)
    check("heaviside", SPECIAL.reshape(-1, 1), onp.array([0.0, NAN, 1.0]))
    check("heaviside", 0.0, 0.5)
    check("heaviside", onp.float32(-1.0), onp.float32(0.5))
    check("heaviside", onp.zeros((0, 2)), 1.0)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
def test_nan_to_num(dtype):
    x = SPECIAL.astype(dtype) if dtype[0] == "f" else onp.array([-5, 0, 1, 1]).astype(dtype)
    check("nan_to_num", x)
    check("nan_to_num", x, nan=-1.5, posinf=7, neginf=-9.0)
    check("nan_to_num", x.reshape(-1, 1)[:0])


def test_nan_to_num_scalars_copy(fusion):
    check("nan_to_num", NAN)
    check("nan_to_num", onp.float32(INF))
    check("nan_to_num", 3)
    check("nan_to_num", onp.array(-INF))
    a = nf.asarray(SPECIAL)
    r = nf.nan_to_num(a, copy=False)
    assert r is a
    assert_same(a, onp.nan_to_num(SPECIAL))
    b = nf.asarray(SPECIAL)
    r = nf.nan_to_num(b)
    assert r is not b
    assert onp.isnan(onp.asarray(b)).any()
    c = nf.asarray([1, 2])
    assert nf.nan_to_num(c) is not c


@pytest.mark.parametrize("d1,d2", [("float64", "float64"), ("float32", "float32"), ("int64", "int64"),
                                   ("int8", "float32"), ("bool", "bool")])
def test_float_power(d1, d2):
    x = onp.array([0.5, 1.0, 2.0, 3.0, 4.0, 0.0]).astype(d1)
    y = onp.array([2.0, -1.0, 3.0, 0.5, 1.0, 0.0]).astype(d2)
    check("float_power", x, y, rtol=1e-13)


def test_float_power_scalars(fusion):
    check("float_power", onp.arange(6.0).reshape(2, 3), 2, rtol=1e-13)
    check("float_power", 2, onp.array([1, 2, 3]), rtol=1e-13)
    check("float_power", 2, 3)
    check("float_power", onp.array([-8.0, 4.0]), 3, rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_modf(dtype):
    x = SPECIAL.astype(dtype) if dtype[0] == "f" else onp.array([-3, 0, 1, 7]).astype(dtype)
    if dtype == "bool":  # NumPy's result is float16: run by NumPy (no warning)
        assert_same(nf.modf(nf.asarray(x)), onp.modf(x))
        return
    got, exp = check("modf", x)
    # signs of zeros are NumPy's (modf(-3.0) is (-0.0, -3.0))
    onp.testing.assert_array_equal(onp.signbit(onp.asarray(got[0])), onp.signbit(exp[0]))


def test_modf_scalars(fusion):
    check("modf", -2.5)
    check("modf", onp.float32(7.25))
    check("modf", onp.linspace(-3, 3, 12).reshape(3, 4))
    check("modf", onp.zeros((0,)))


# -- type checks ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("name", ["real", "imag", "iscomplex", "isreal", "real_if_close"])
def test_real_imag(name, dtype):
    x = onp.array([[1, 0, 2], [3, 1, 0]]).astype(dtype)
    check(name, x)
    check(name, x[:0])
    check(name, x[0, 0].reshape(()))


def test_real_imag_scalars_lists():
    check("real", 2.5)
    check("imag", 2.5)
    check("isreal", 2.5)
    check("iscomplex", 2.5)
    check("iscomplex", [1.0, 2.0])
    check("real", [1.0, 2.0])
    check("real_if_close", [1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "int16", "bool"])
def test_angle(dtype):
    x = onp.array([-2, -1, 0, 1, 3]).astype(dtype) if dtype != "bool" else onp.array([True, False])
    if dtype in ("int8", "bool"):  # NumPy's result is float16: run by NumPy, no warning
        exp = onp.angle(x)
        got = nf.angle(x)
        assert_same(got, exp)
        return
    check("angle", x)
    check("angle", x, deg=True, rtol=1e-13)


def test_angle_special(fusion):
    check("angle", SPECIAL, deg=True, rtol=1e-13)
    check("angle", -1.0)
    check("angle", onp.zeros((2, 0)))


def test_iscomplexobj_isrealobj():
    for x in (onp.ones(3), onp.ones(2, onp.int8), [1.0, 2.0], 3, onp.ones(2, complex), 1j, [1j]):
        y = x if onp.iscomplexobj(x) else _nf(x)
        assert nf.iscomplexobj(y) == onp.iscomplexobj(x)
        assert nf.isrealobj(y) == onp.isrealobj(x)
    assert nf.isrealobj(nf.ones(3)) is True
    assert nf.iscomplexobj(nf.ones(3)) is False


def test_complex_inputs_run_numpy():
    z = onp.array([1 + 2j, -1 - 1e-20j])
    assert_same(nf.real(z), onp.real(z))
    assert_same(nf.imag(z), onp.imag(z))
    assert_same(nf.angle(z), onp.angle(z))
    assert_same(nf.iscomplex(z), onp.iscomplex(z))
    assert_same(nf.isreal(z), onp.isreal(z))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_asarray_chkfinite(dtype):
    check("asarray_chkfinite", onp.array([1, 2, 3]).astype(dtype))
    check("asarray_chkfinite", [1, 2], dtype=dtype)
    check("asarray_chkfinite", onp.zeros((0, 2), dtype))
    if dtype[0] == "f":
        for bad in (NAN, INF, -INF):
            check_raises("asarray_chkfinite", onp.array([1, bad]).astype(dtype))


def test_array_equiv():
    cases = [([1, 2], [[1, 2], [1, 2]]), ([1, 2], [[1, 2], [1, 3]]), ([1, 2], [1, 2, 3]), ([1.0, NAN], [1.0, NAN]),
             (onp.arange(6).reshape(2, 3), onp.arange(3)), (onp.zeros(0), onp.zeros((2, 0))), (3, [3, 3]),
             ([True, False], [1, 0])]
    for a, b in cases:
        r = nf.array_equiv(_nf(onp.asarray(a)), _nf(onp.asarray(b)))
        assert type(r) is bool and r == onp.array_equiv(a, b), (a, b)


# -- statistics ----------------------------------------------------------------------

A = onp.arange(24.0).reshape(2, 3, 4) ** 1.5 - 20
B = (onp.arange(12).reshape(3, 4) * 7) % 5


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_average(dtype, axis):
    a = A.astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check("average", a, axis=axis, rtol=rtol)
    check("average", a, axis=axis, keepdims=True, rtol=rtol)
    check("average", a, axis=axis, returned=True, rtol=rtol)
    w = onp.arange(1, 25).reshape(2, 3, 4).astype(dtype if dtype != "bool" else "int64")
    check("average", a, axis=axis, weights=w, returned=True, rtol=rtol)


def test_average_weights_along_axis(fusion):
    check("average", B, axis=1, weights=onp.array([1, 2, 3, 4]))
    check("average", A, axis=(0, 2), weights=onp.arange(8.0).reshape(2, 4), returned=True)
    check("average", A.astype("float32"), axis=-1, weights=onp.array([0.5, 1, 1, 2], "float32"), rtol=1e-5)
    check("average", onp.array(3.0))
    check("average", [1, 2, 4])


def test_average_errors():
    check_raises("average", B, weights=onp.array([1, 2, 3]))  # TypeError: no axis
    check_raises("average", B, axis=1, weights=onp.array([1, 2, 3]))  # ValueError: wrong shape
    check_raises("average", B, axis=1, weights=onp.array([1, -1, 1, -1]))  # ZeroDivisionError
    check_raises("average", B, axis=2)  # AxisError


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("rowvar", [True, False])
def test_cov(dtype, rowvar):
    x = B.astype(dtype)
    check("cov", x, rowvar=rowvar)
    check("cov", x, rowvar=rowvar, bias=True)
    check("cov", x, x[::-1] if rowvar else x[:, ::-1], rowvar=rowvar)
    check("cov", x[0], rowvar=rowvar)
    check("cov", x, rowvar=rowvar, ddof=0)


def test_cov_weights(fusion):
    check("cov", A[0], fweights=onp.array([1, 2, 1, 3]))
    check("cov", A[0], aweights=onp.array([0.5, 2.0, 1.0, 1.0]))
    check("cov", A[0], fweights=onp.array([1, 2, 1, 3]), aweights=onp.array([0.5, 2.0, 1.0, 1.0]), ddof=2)
    check("cov", A[0], fweights=onp.array([1, 2, 1, 3]), ddof=0)
    check("cov", B, dtype=onp.float32)
    check("cov", onp.array([1.0, 2.0, 4.0]), onp.array([2.0, 0.0, 1.0]))
    check("cov", onp.ones((0, 3)))
    check("cov", onp.array([[1.0], [2.0]]))  # one observation: Degrees of freedom warning, NaN/inf


def test_cov_errors():
    check_raises("cov", onp.ones((2, 2, 2)))
    check_raises("cov", B, ddof=1.5)
    check_raises("cov", B, fweights=onp.array([1.5, 1, 1, 1]))
    check_raises("cov", B, fweights=onp.array([1, 1, 1]))
    check_raises("cov", B, fweights=onp.ones((2, 4)))
    check_raises("cov", B, aweights=onp.array([1, -1, 1, 1]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_corrcoef(dtype, fusion):
    x = (A[0] ** 2 % 7).astype(dtype)
    check("corrcoef", x, rtol=1e-5 if dtype == "float32" else 1e-12)
    check("corrcoef", x, rowvar=False, rtol=1e-5 if dtype == "float32" else 1e-12)
    check("corrcoef", x[0], x[1], rtol=1e-5 if dtype == "float32" else 1e-12)
    check("corrcoef", x[0])  # a scalar: c / c


def test_corrcoef_constant_row():
    check("corrcoef", onp.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]))  # NumPy's invalid-value warning, NaNs


# -- NaN functions -------------------------------------------------------------------

AN = A.copy()
AN[0, 1, 2] = NAN
AN[1, :, 3] = NAN
AN[:, 2, :] = NAN  # all-NaN slices along axis 2


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_nanmax_nanmin(name, dtype, axis):
    a = AN.astype(dtype) if dtype[0] == "f" else A.astype(dtype)
    check(name, a, axis=axis)
    check(name, a, axis=axis, keepdims=True)


def test_nanmax_special(fusion):
    check("nanmax", onp.full(4, NAN))  # All-NaN slice encountered (warned), NaN
    check("nanmin", AN, axis=2)
    check("nanmax", AN, axis=2, initial=-5.0)
    check("nanmin", onp.array([NAN, INF, -INF, 1.0]))
    check("nanmax", onp.array(2.5))
    check("nanmax", [1.0, NAN, 3.0])
    out = nf.empty((3, 4))
    r = nf.nanmax(nf.asarray(AN[0]), axis=0, out=nf.empty(4))
    assert_same(r, onp.nanmax(AN[0], axis=0))
    assert out.shape == (3, 4)


def test_nanmax_errors():
    check_raises("nanmax", onp.zeros(0))
    check_raises("nanmin", onp.zeros((2, 0)), axis=1)
    check_raises("nanmax", A, axis=3)


AN2 = A.copy()  # NaNs, no all-NaN slice along any axis
AN2[0, 1, 2] = AN2[1, 0, 0] = AN2[1, 2, 3] = AN2[0, 0, 1] = NAN


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_nanargmax_nanargmin(name, dtype, axis):
    a = AN2.astype(dtype) if dtype[0] == "f" else A.astype(dtype)
    check(name, a, axis=axis)
    check(name, a, axis=axis, keepdims=True)


def test_nanargmax_all_nan(fusion):
    check_raises("nanargmax", AN, axis=2)
    check_raises("nanargmin", onp.full(3, NAN))
    check_raises("nanargmax", onp.zeros(0))
    check("nanargmin", AN2, axis=1)
    check("nanargmax", AN2[0, 0])
    check("nanargmax", [1.0, NAN, 3.0])


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_nanvar_nanstd(name, dtype, axis):
    a = AN.astype(dtype) if dtype[0] == "f" else A.astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check(name, a, axis=axis, rtol=rtol)
    check(name, a, axis=axis, ddof=1, keepdims=True, rtol=rtol)


def test_nanvar_options(fusion):
    check("nanvar", AN, axis=1, ddof=2)  # dof <= 0 on some slices: NumPy's warning, NaN there
    check("nanstd", AN, axis=0, correction=1)
    check("nanvar", AN.astype("float32"), axis=0, dtype=onp.float64, rtol=1e-6)
    check("nanvar", AN, axis=-1, dtype=onp.float32, rtol=1e-5)
    check("nanstd", onp.full(3, NAN))
    check("nanvar", onp.zeros((2, 0)), axis=1)
    check("nanvar", [1.0, NAN, 4.0])
    check_raises("nanvar", AN, dtype=onp.int64)
    check_raises("nanvar", AN, ddof=1, correction=1)


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_nancumsum_nancumprod(name, dtype, axis):
    a = (AN / 10).astype(dtype) if dtype[0] == "f" else (A % 3).astype(dtype)
    check(name, a, axis=axis, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_nancum_more(fusion):
    check("nancumsum", AN, axis=1, dtype=onp.float32, rtol=1e-5)
    check("nancumprod", onp.array([NAN, 2.0, NAN, 3.0]))
    check("nancumsum", onp.array(NAN))
    check("nancumsum", onp.zeros((0, 3)), axis=0)
    check_raises("nancumsum", A, axis=3)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint16", "bool"])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative(name, dtype, include_initial):
    a = (A % 3 + 1).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for axis in (0, 1, -1):
        check(name, a, axis=axis, include_initial=include_initial, rtol=rtol)
    check(name, a[0, 0], include_initial=include_initial, rtol=rtol)
    check(name, a[0, :0], axis=1, include_initial=include_initial)
    check(name, a[0, 0], include_initial=include_initial, dtype=onp.float64, rtol=rtol)


def test_cumulative_more(fusion):
    check("cumulative_sum", onp.array(3.5))
    check("cumulative_prod", onp.array([1.5, 2.0, -3.0]), include_initial=True)
    check("cumulative_sum", onp.arange(6).reshape(2, 3), axis=0, include_initial=True)
    check_raises("cumulative_sum", A)  # axis required
    check_raises("cumulative_prod", A, axis=3)


# -- differences and integrals -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
def test_ediff1d(dtype):
    a = (A % 7).astype(dtype)
    check("ediff1d", a)
    if dtype == "uint8":  # a Python int is an int64 array to NumPy's same_kind check
        check_raises("ediff1d", a[0, 0], to_begin=onp.array([5, 6]).astype(dtype), to_end=3)
    else:
        check("ediff1d", a[0, 0], to_begin=onp.array([5, 6]).astype(dtype), to_end=3)
    check("ediff1d", a[0, 0], to_end=onp.array([1, 2, 3]).astype(dtype))
    check("ediff1d", onp.zeros(0, dtype), to_begin=onp.ones(1, dtype))
    check("ediff1d", onp.ones(1, dtype))


def test_ediff1d_errors(fusion):
    check_raises("ediff1d", onp.array([1, 2, 3]), to_begin=1.5)  # same_kind
    check_raises("ediff1d", onp.array([True, False]))  # boolean subtract
    check("ediff1d", onp.array([1.0, 4.0, 2.0]), to_begin=onp.array([1, 2]), to_end=onp.array([NAN]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(dtype, edge_order):
    f = (onp.arange(60.0).reshape(3, 4, 5) ** 2 % 17).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check("gradient", f, edge_order=edge_order, rtol=rtol)
    check("gradient", f, 0.5, edge_order=edge_order, rtol=rtol)
    check("gradient", f, axis=-1, edge_order=edge_order, rtol=rtol)
    check("gradient", f, 2.0, onp.array([0.0, 1.0, 3.0, 3.5]), axis=(0, 1), edge_order=edge_order, rtol=rtol)
    check("gradient", f, 1, 2, onp.array([0, 1, 3, 7, 8]), edge_order=edge_order, rtol=rtol)
    check("gradient", f, onp.array([1.0, 2.0, 4.0]), onp.array([0, 2, 4, 6]), onp.array([1.0, 1.5, 3.0, 3.5, 5.0]),
          edge_order=edge_order, rtol=rtol)


def test_gradient_more(fusion):
    check("gradient", onp.array([1.0, 2.0, 4.0, 7.0, 11.0]))
    check("gradient", [1, 4, 9, 16], edge_order=2)
    check("gradient", onp.array([1.0, 2.0, 4.0, 7.0]), onp.array([0.0, 0.5, 2.0, 2.5]), edge_order=2)
    check_raises("gradient", onp.array([1.0]))
    check_raises("gradient", onp.array([1.0, 2.0]), edge_order=2)
    check_raises("gradient", onp.ones(4), edge_order=3)
    check_raises("gradient", onp.ones(4), onp.ones(3))
    check_raises("gradient", onp.ones((4, 3)), 1.0, 2.0, 3.0)
    check_raises("gradient", onp.ones(4), onp.ones((2, 2)))
    check_raises("gradient", onp.array([True, False, True]))
    check_raises("gradient", onp.ones(4), axis=1)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_trapezoid(dtype, axis):
    y = (A % 5).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check("trapezoid", y, axis=axis, rtol=rtol)
    check("trapezoid", y, dx=0.25, axis=axis, rtol=rtol)
    n = y.shape[axis]
    check("trapezoid", y, x=onp.linspace(0, 2, n) ** 2, axis=axis, rtol=rtol)
    check("trapezoid", y, x=onp.cumsum(onp.ones(y.shape), axis=axis), axis=axis, rtol=rtol)


def test_trapezoid_more(fusion):
    check("trapezoid", onp.array([1.0, 2.0, 4.0]))
    check("trapezoid", [1, 2, 3], x=[0.0, 1.0, 3.0])
    check("trapezoid", onp.zeros((3, 0)))
    check("trapezoid", onp.ones(1))
    check_raises("trapezoid", A, axis=3)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("axis", [0, -1])
def test_unwrap(dtype, axis):
    p = (onp.cumsum(onp.linspace(0, 3, 24)).reshape(4, 6) % (2 * onp.pi) * 3).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check("unwrap", p, axis=axis, rtol=rtol)
    check("unwrap", p, axis=axis, discont=4, rtol=rtol)
    check("unwrap", p, axis=axis, period=6, rtol=rtol)
    check("unwrap", p, axis=axis, period=5, discont=1, rtol=rtol)


def test_unwrap_more(fusion):
    check("unwrap", onp.array([0.0, onp.pi, 2 * onp.pi, -onp.pi, 0.0]))  # ambiguous boundary
    check("unwrap", onp.array([0, 4, 8, 2, 6, 0]), period=4)
    check("unwrap", onp.array([1, 5, 13, 14]), period=255)
    check("unwrap", onp.zeros(0))
    check("unwrap", [0.0, 7.0, 1.0])
    check_raises("unwrap", onp.array(1.0))


# -- products ------------------------------------------------------------------------

V = onp.array([[1.0, -2.0, 3.5], [4.0, 0.0, -6.0], [0.5, 0.25, 2.0]])
W = onp.array([[7.0, 8.0, -9.0], [1.0, 0.0, -1.0], [2.0, 3.0, 4.0]])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "int8"])
def test_cross(dtype):
    a, b = (V * 2).astype(dtype), (W % 5).astype(dtype)
    check("cross", a, b)
    check("cross", a.T, b.T, axis=0)
    check("cross", a, b, axisc=0)
    check("cross", a, b.T, axisb=0)
    check("cross", a[0], b)
    check("cross", a[:, None, :], b[None, :2, :])
    check("cross", a[:0], b[:0])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_cross_2d_vectors(fusion):
    check("cross", V[:, :2], W[:, :2])
    check("cross", V[0, :2], W[0, :2])  # 0-d array
    check("cross", V[:, :2], W)
    check("cross", V, W[:, :2])
    check("cross", V[0, :2], W[1])


def test_cross_errors():
    check_raises("cross", V[:, :1], W)
    check_raises("cross", onp.ones(4), onp.ones(3))
    check_raises("cross", onp.ones(3, bool), onp.ones(3, bool))
    check_raises("cross", V, W, axisa=2)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_kron(dtype):
    a = (B % 3).astype(dtype)
    b = onp.array([[1, 0], [2, 3]]).astype(dtype)
    check("kron", a, b)
    check("kron", a[0], b)
    check("kron", b, a[0])
    check("kron", a.reshape(3, 1, 4), b)
    check("kron", a, b[:0])
    check("kron", a, b[0, 1].reshape(()))


def test_kron_mixed(fusion):
    check("kron", onp.array([1, 2]), onp.array([0.5, 1.5]))
    check("kron", 3, onp.arange(4.0).reshape(2, 2))
    check("kron", onp.arange(6.0).reshape(2, 3), onp.ones((2, 2), "float32"))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_vecdot(dtype):
    a, b = (V * 2).astype(dtype), (W % 5).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check("vecdot", a, b, rtol=rtol)
    check("vecdot", a, b, axis=0, rtol=rtol)
    check("vecdot", a[0], b[1], rtol=rtol)  # scalar
    check("vecdot", a[:, None, :], b[None], rtol=rtol)
    check("vecdot", a[:, :0], b[:, :0])


def test_vecdot_errors():
    check_raises("vecdot", V, W[:, :2])
    check_raises("vecdot", onp.array(1.0), W)
    check_raises("vecdot", V, W, axis=2)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_matvec_vecmat(dtype, fusion):
    a, b = (V * 2).astype(dtype), (W % 5).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    check("matvec", a, b[0], rtol=rtol)
    check("matvec", a, b, rtol=rtol)
    check("matvec", onp.stack([a, b]), b[:, None, :], rtol=rtol)
    check("vecmat", b[0], a, rtol=rtol)
    check("vecmat", b, a, rtol=rtol)
    check("vecmat", b[:, None, :], onp.stack([a, b, a]), rtol=rtol)
    check("matvec", a[:, :0], b[0, :0])


def test_matvec_vecmat_errors():
    check_raises("matvec", V[0], W[0])
    check_raises("matvec", V, W[0, :2])
    check_raises("vecmat", V[0], W[0])
    check_raises("vecmat", V[0, :2], W)


# -- polynomials ---------------------------------------------------------------------

@pytest.mark.parametrize("pdtype,xdtype", [("float64", "float64"), ("int64", "int64"), ("int64", "float32"),
                                           ("float32", "float32"), ("int8", "int8"), ("bool", "float64")])
def test_polyval(pdtype, xdtype):
    p = onp.array([3, -1, 0, 2]).astype(pdtype)
    x = onp.array([[-2, -1, 0], [1, 2, 3]]).astype(xdtype)
    rtol = 1e-5 if "float32" in (pdtype, xdtype) else 1e-12
    check("polyval", p, x, rtol=rtol)
    check("polyval", p, x[0, 0], rtol=rtol)
    check("polyval", p[:0], x)
    check("polyval", p, x[:0])


def test_polyval_fused(fusion):
    check("polyval", onp.array([1.5, -2.0, 0.5, 3.0]), onp.linspace(-2, 2, 17))
    check("polyval", [1, 2, 3], 2.5)


@pytest.mark.parametrize("name", ["polyadd", "polysub", "polymul"])
@pytest.mark.parametrize("d1,d2", [("float64", "float64"), ("int64", "int64"), ("int64", "float32"),
                                   ("bool", "bool") ])
def test_polyadd_sub_mul(name, d1, d2):
    if d1 == "bool" and name == "polysub":
        check_raises(name, onp.array([True, False]), onp.array([True]))
        return
    a = onp.array([1, 0, 2, 3]).astype(d1)
    b = onp.array([2, 1]).astype(d2)
    check(name, a, b)
    check(name, b, a)
    check(name, a, a)
    check(name, a[0].reshape(()), b)


def test_poly_scalars(fusion):
    check("polyadd", 3, [1, 2])
    check("polysub", [1.5, 2.0], 4.0)
    check("polymul", [1, 2, 3], [4.5])
    check("polymul", [2.0], 3)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("m", [0, 1, 2, 5])
def test_polyder(dtype, m):
    p = onp.array([3, -1, 4, 2, 5]).astype(dtype)
    check("polyder", p, m)
    check("polyder", p[:1], m)


def test_polyder_errors():
    check_raises("polyder", onp.array([1.0, 2.0]), -1)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("m,k", [(0, None), (1, None), (2, None), (1, 3.0), (2, [1.0, 2.0]), (3, 5), (2, [1, 2, 3])])
def test_polyint(dtype, m, k):
    p = onp.array([3, -1, 4, 2]).astype(dtype)
    check("polyint", p, m, k, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_polyint_errors(fusion):
    check_raises("polyint", onp.array([1.0, 2.0]), -1)
    check_raises("polyint", onp.array([1.0, 2.0]), 3, [1.0, 2.0])
    check("polyint", [1, 2, 3], 2)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint8", "bool"])
@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(dtype, N, increasing):
    x = onp.array([-2, -1, 0, 1, 2, 3]).astype(dtype)
    check("vander", x, N, increasing, rtol=1e-12)
    check("vander", x[:0], N, increasing)


def test_vander_fused(fusion):
    check("vander", onp.linspace(-1, 1, 9), 6, rtol=1e-12)
    check_raises("vander", onp.ones((2, 2)))
    check_raises("vander", onp.ones(3), -1)


# -- geomspace -----------------------------------------------------------------------

@pytest.mark.parametrize("start,stop", [(1, 1000), (2.0, 3.0), (-1, -1000), (1000, 1), (1e-3, 1e5), (3, 3)])
@pytest.mark.parametrize("num", [0, 1, 2, 4, 50])
@pytest.mark.parametrize("endpoint", [True, False])
def test_geomspace(start, stop, num, endpoint):
    check("geomspace", start, stop, num, endpoint, rtol=1e-13)


def test_geomspace_dtypes(fusion):
    check("geomspace", 1, 256, 9, dtype=int)
    check("geomspace", onp.float32(1), 8, 4, dtype=onp.float32, rtol=1e-6)
    check("geomspace", onp.int8(2), onp.int8(64), 6, rtol=1e-13)
    check("geomspace", 1.0, 1e10, 11, dtype=onp.float32, rtol=1e-6)


def test_geomspace_errors():
    check_raises("geomspace", 0, 10)
    check_raises("geomspace", 1, 0)
    check_raises("geomspace", 1, 10, -1)

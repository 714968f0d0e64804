"""Differential tests: native complex64 / complex128 in numfuse against NumPy.

Every test runs the same code on NumPy and on numfuse and compares dtype,
shape, result type (a numfuse array where NumPy gives an array) and values.
A FallbackWarning fails a test (conftest), so a test passes only if numfuse
computed the complex values itself. FFT, eigenvalues and large complex
products are NumPy's routines (pocketfft, LAPACK, BLAS) run as library calls
on numfuse's memory: they must not warn either, and must return numfuse
arrays.

Tolerances (relative to the modulus |expected| for complex values):

* exact: add, subtract, negative, positive, conjugate, real, imag,
  comparisons, maximum/minimum, isnan/isinf/isfinite, logical ops,
  construction, casts, indexing (real and imaginary parts compared bit for bit
  up to NaN payloads; zeros carry NumPy's sign where the operation is exact);
* arithmetic (multiply, divide, square, reciprocal, absolute, sign, integer
  powers): 1e-6 for complex64, 1e-14 for complex128;
* transcendental functions and non-integer powers: 1e-5 / 1e-12.

Where NumPy's result is not finite (inf or nan in a part), the real and
imaginary parts are compared separately with NaN equal to NaN and inf equal
to inf of the same sign.
"""

import operator
import warnings
from contextlib import contextmanager

import numpy as onp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numfuse as nf
from conftest import ALL_DTYPES, TIERS, assert_result_kind

CDTYPES = ["complex64", "complex128"]
NAN, INF = onp.nan, onp.inf

# -- tolerances ---------------------------------------------------------------------


def _single(dt):
    return onp.dtype(dt) in (onp.complex64, onp.float32)


def arith_tol(dt):
    return 1e-6 if _single(dt) else 1e-14


def trans_tol(dt):
    return 1e-5 if _single(dt) else 1e-12


def red_tol(dt):
    """Reductions: the summation order is numfuse's own (NumPy sums pairwise)."""
    return 1e-5 if _single(dt) else 1e-13


# -- values ---------------------------------------------------------------------------

# Finite values off every branch cut (the transcendental functions are
# compared on these; NumPy itself is accurate to a few ulps on all of them).
GENERIC = [0.5 + 0.5j, -2.5 + 3.7j, 3 - 4j, 1e-3 + 2j, -0.75 - 0.25j, 4 + 0.1j, 0.2 - 3j, 0 - 0.5j, 1.5 + 1.5j,
           0.9999 - 0.01j, 0.3 + 0.05j, -0.1 - 0.9j, 0.7 + 2.2j, -2 - 2j, -0.6 + 1.1j, 2.5 - 0.4j, 12 - 7j,
           -9 + 15j]

# Values for the exact operations: signed zeros, infinities, NaNs in either
# part, and values whose sum overflows complex64.
SPECIAL = GENERIC[:6] + [0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0), 1 + 0j, -1 + 0j,
                         1j, 0.5 + 0j, 0.5 - 0.5j, complex(INF, 0), complex(-INF, 1), complex(0, INF),
                         complex(1, -INF), complex(INF, INF), complex(NAN, 0), complex(0, NAN),
                         complex(INF, NAN), complex(NAN, -INF), complex(NAN, NAN), complex(3e38, 3e38),
                         complex(-3e38, 1)]

# SPECIAL without the values whose products overflow complex64: there NumPy's
# own result depends on the machine (its SIMD loops use fma: fma(a, b, -inf)
# is -inf where a*b - inf is NaN).
SPECIAL_PRODUCTS = [v for v in SPECIAL if abs(v) < 1e30 or not onp.isfinite(v)]

# Points on the branch cuts, on both sides (signed zeros choose the side).
BRANCH = [complex(-3, 0.0), complex(-3, -0.0), complex(-1.25, 0.0), complex(-1.25, -0.0), complex(3, 0.0),
          complex(3, -0.0), complex(-0.5, 0.0), complex(-0.5, -0.0), complex(0.0, 2), complex(-0.0, 2),
          complex(0.0, -2), complex(-0.0, -2), complex(0.0, -1.5), complex(-0.0, 1.5)]

EXACT_UNARY = ["negative", "positive", "conjugate", "conj", "isnan", "isinf", "isfinite", "logical_not", "real",
               "imag"]
ARITH_UNARY = ["square", "reciprocal", "absolute", "abs", "sign"]
TRANS_UNARY = ["sqrt", "exp", "log", "log10", "log2", "expm1", "log1p", "exp2", "sin", "cos", "tan", "sinh",
               "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]
CUT_UNARY = ["sqrt", "log", "log10", "log2", "log1p", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
             "arctanh"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
MINMAX = ["maximum", "minimum", "fmax", "fmin"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]


def carr(values, dt, shape=None):
    """A NumPy array of `values` with dtype `dt` (overflowing complex64 values become inf)."""
    with onp.errstate(over="ignore"):
        a = onp.array(values, dtype=dt)
    return a if shape is None else onp.resize(a, shape)


def rand_c(rng, shape, dt, scale=1.0):
    return ((rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)) * scale).astype(dt)


# -- comparison ----------------------------------------------------------------------


def _nf(x):
    """numfuse form of an argument: NumPy arrays become numfuse arrays (copies)."""
    if isinstance(x, onp.ndarray):
        return nf.array(x)
    return x


def _parts(a):
    if a.dtype.kind == "c":
        return [("real", a.real), ("imag", a.imag)]
    return [("", a)]


def check(got, exp, rtol=0.0, atol=0.0, zero_sign=True):
    """numfuse's `got` is NumPy's `exp`: result kind, shape, dtype, values.
    rtol == atol == 0: exact (parts bit for bit up to NaN payloads, signed
    zeros as NumPy's unless zero_sign=False); otherwise finite entries within
    rtol * |exp| + atol (complex modulus), non-finite ones part by part."""
    if isinstance(exp, onp.ndarray):
        assert type(got) is nf.ndarray, f"expected a numfuse.ndarray, got {type(got)}"
    elif isinstance(exp, onp.generic):
        assert_result_kind(got, exp)
    g = onp.asarray(got)
    e = onp.asarray(exp)
    assert g.shape == e.shape, f"shape {g.shape} != {e.shape}"
    assert g.dtype == e.dtype, f"dtype {g.dtype} != {e.dtype}"
    if e.dtype.kind not in "fc":
        onp.testing.assert_array_equal(g, e)
        return
    if rtol == 0 and atol == 0:
        for (name, gp), (_, ep) in zip(_parts(g), _parts(e)):
            onp.testing.assert_array_equal(gp, ep, err_msg=f"{name} parts differ")
            if zero_sign:
                z = ep == 0
                assert onp.array_equal(onp.signbit(gp[z]), onp.signbit(ep[z])), (
                    f"sign of zero in the {name} parts differs: got {gp[z]}, expected {ep[z]}")
        return
    fin = onp.isfinite(e)
    if fin.any():
        onp.testing.assert_allclose(g[fin], e[fin], rtol=rtol, atol=atol)
    if (~fin).any():
        for (name, gp), (_, ep) in zip(_parts(g[~fin]), _parts(e[~fin])):
            onp.testing.assert_allclose(gp, ep, rtol=rtol, atol=atol, equal_nan=True,
                                        err_msg=f"non-finite entries: {name} parts differ")


def _compute(got):
    for g in got if isinstance(got, tuple) else (got,):
        if isinstance(g, nf.ndarray):
            onp.asarray(g)


def _warning_kinds(caught):
    return {str(w.message).split(" encountered")[0] for w in caught if issubclass(w.category, RuntimeWarning)}


def both(fn, *arrays, ignore=False):
    """fn(module, *arrays) on NumPy and numfuse, each on its own copies of the
    NumPy `arrays` (fn may modify its arguments). With ignore=True both run
    under errstate(all='ignore'); otherwise numfuse may not raise a
    floating-point warning (divide by zero, invalid, overflow) NumPy does not."""
    nf_args = [_nf(a) for a in arrays]
    np_args = [a.copy() if isinstance(a, onp.ndarray) else a for a in arrays]
    if ignore:
        with onp.errstate(all="ignore"):
            exp = fn(onp, *np_args)
        with nf.errstate(all="ignore"):
            got = fn(nf, *nf_args)
            _compute(got)  # inside the block
        return got, exp
    with warnings.catch_warnings(record=True) as w_np:
        warnings.simplefilter("always", RuntimeWarning)
        with onp.errstate(all="warn"):
            exp = fn(onp, *np_args)
    with warnings.catch_warnings(record=True) as w_nf:
        warnings.simplefilter("always", RuntimeWarning)  # (a FallbackWarning still raises)
        got = fn(nf, *nf_args)
        _compute(got)
    extra = _warning_kinds(w_nf) - _warning_kinds(w_np)
    assert not extra, f"numfuse warns {sorted(extra)} where NumPy does not"
    return got, exp


@contextmanager
def allow_fallback():
    """Only the calls inside may run through NumPy (what follows must be native)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nf.FallbackWarning)
        yield


# -- creation, casts, properties --------------------------------------------------------


def test_creation():
    check(nf.zeros(5, dtype=complex), onp.zeros(5, dtype=complex))
    check(nf.zeros((2, 3), dtype="complex64"), onp.zeros((2, 3), dtype="complex64"))
    check(nf.ones((3, 2), nf.complex64), onp.ones((3, 2), onp.complex64))
    check(nf.ones(4, dtype=nf.complex128), onp.ones(4, dtype=onp.complex128))
    check(nf.full(6, 1 + 2j), onp.full(6, 1 + 2j))
    check(nf.full((2, 2), onp.complex64(1 - 2j)), onp.full((2, 2), onp.complex64(1 - 2j)))
    check(nf.full(3, 2.5, dtype=complex), onp.full(3, 2.5, dtype=complex))
    check(nf.array([1 + 2j, 3]), onp.array([1 + 2j, 3]))
    check(nf.array([[1, 2j], [-0.0, 3]], dtype=nf.complex64), onp.array([[1, 2j], [-0.0, 3]], dtype=onp.complex64))
    check(nf.array([1, 2, 3], dtype=complex), onp.array([1, 2, 3], dtype=complex))
    check(nf.arange(5) * 1j, onp.arange(5) * 1j)
    check(nf.linspace(0, 1, 5) + 0j, onp.linspace(0, 1, 5) + 0j)


@pytest.mark.parametrize("dt", CDTYPES)
def test_asarray_roundtrip_and_attributes(dt):
    x = carr(SPECIAL, dt).reshape(3, -1)
    z = nf.asarray(x)
    check(z, x)
    assert z.dtype == onp.dtype(dt)
    assert (z.shape, z.ndim, z.size, z.itemsize, z.nbytes) == (x.shape, x.ndim, x.size, x.itemsize, x.nbytes)
    assert nf.asarray(z) is z
    assert onp.asarray(z).dtype == onp.dtype(dt)
    assert z.tolist() == x.tolist() or onp.array_equal(onp.array(z.tolist()), x, equal_nan=True)
    assert nf.iscomplexobj(z) and not nf.isrealobj(z)
    assert complex(z[0, 0]) == complex(x[0, 0])
    assert complex(z[:1, :1].reshape(())) == complex(x[0, 0])


@pytest.mark.parametrize("dt", CDTYPES)
def test_like_creation(dt):
    x = carr(GENERIC, dt).reshape(2, -1)
    z = nf.asarray(x)
    e = nf.empty_like(z)
    assert type(e) is nf.ndarray and e.dtype == x.dtype and e.shape == x.shape
    check(nf.zeros_like(z), onp.zeros_like(x))
    check(nf.ones_like(z), onp.ones_like(x))
    check(nf.full_like(z, 3 - 1j), onp.full_like(x, 3 - 1j))
    check(nf.zeros_like(nf.ones(3), dtype=dt), onp.zeros_like(onp.ones(3), dtype=dt))
    check(z.copy(), x.copy())


@pytest.mark.parametrize("src", ["bool", "int8", "int32", "int64", "uint16", "float32", "float64", "complex64",
                                 "complex128"])
@pytest.mark.parametrize("dt", CDTYPES)
def test_astype_to_complex(src, dt, fusion):
    x = onp.array([0, 1, 2, 5, 100, 7]).astype(src) if src[0] != "c" else carr(SPECIAL, src)
    check(nf.asarray(x).astype(dt), x.astype(dt))
    check(nf.asarray(x).astype(complex), x.astype(complex))


@pytest.mark.parametrize("to", ["float64", "float32", "int64", "int16"])
@pytest.mark.parametrize("dt", CDTYPES)
def test_astype_from_complex_warns(dt, to, fusion):
    x = carr(GENERIC, dt)
    with pytest.warns(onp.exceptions.ComplexWarning):
        exp = x.astype(to)
    with pytest.warns(onp.exceptions.ComplexWarning) as caught:
        got = nf.asarray(x).astype(to)  # warned at the call, as NumPy does
    # (pytest.warns records every warning: a fallback inside must still fail)
    assert not [w for w in caught if issubclass(w.category, nf.FallbackWarning)]
    check(got, exp)


@pytest.mark.parametrize("dt", CDTYPES)
def test_astype_bool_and_between_complex(dt, fusion):
    x = carr(SPECIAL, dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither warns
        check(nf.asarray(x).astype(bool), x.astype(bool))
        other = "complex64" if dt == "complex128" else "complex128"
        with onp.errstate(over="ignore"), nf.errstate(over="ignore"):
            check(nf.asarray(x).astype(other), x.astype(other))


# -- arithmetic and promotion -------------------------------------------------------------

ARITH = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv}


def _arith_tol(op, dt):
    return 0.0 if op in ("add", "subtract") else arith_tol(dt)


@pytest.mark.parametrize("op", list(ARITH))
@pytest.mark.parametrize("dt2", CDTYPES)
@pytest.mark.parametrize("dt", CDTYPES)
def test_complex_complex(op, dt, dt2, fusion):
    a = carr(GENERIC, dt)
    b = carr(GENERIC[::-1], dt2)
    res_dt = onp.result_type(dt, dt2)
    f = ARITH[op]
    got, exp = both(lambda m, x, y: f(x, y), a, b)
    check(got, exp, rtol=_arith_tol(op, res_dt))
    got, exp = both(lambda m, x, y: getattr(m, op)(x[:, None], y[None, :]), a, b)  # broadcast outer
    check(got, exp, rtol=_arith_tol(op, res_dt))


@pytest.mark.parametrize("other", ALL_DTYPES)
@pytest.mark.parametrize("op", list(ARITH))
@pytest.mark.parametrize("dt", CDTYPES)
def test_promotion_with_real_arrays(dt, op, other, fusion):
    """complex64 + float64 -> complex128, complex64 + int16 -> complex64, ... as NumPy."""
    z = carr(GENERIC[:8], dt)
    r = (onp.array([1, 2, 3, 5, 7, 1, 4, 6]) if other != "bool" else onp.array([1, 0, 1, 1, 0, 1, 1, 1])).astype(other)
    f = ARITH[op]
    res_dt = onp.result_type(z, r)
    got, exp = both(lambda m, x, y: f(x, y), z, r, ignore=True)
    check(got, exp, rtol=_arith_tol(op, res_dt))
    got, exp = both(lambda m, x, y: f(y, x), z, r, ignore=True)
    check(got, exp, rtol=_arith_tol(op, res_dt))


REAL_DTYPES = ["bool", "int8", "int16", "int64", "uint8", "uint64", "float32", "float64"]


@pytest.mark.parametrize("src", REAL_DTYPES + CDTYPES)
def test_python_complex_scalars(src, fusion):
    """float32 * 1j -> complex64, int64 * 1j -> complex128, ... as NumPy."""
    x = onp.array([0, 1, 2, 3, 5, 1]).astype(src) if src[0] != "c" else carr(GENERIC[:6], src)
    rt = arith_tol(onp.result_type(x, 1j))
    cases = [
        ("x * 1j", lambda m, x: x * 1j, rt),
        ("1j * x", lambda m, x: 1j * x, rt),
        ("x + (2-3j)", lambda m, x: x + (2 - 3j), 0.0),
        ("(2-3j) - x", lambda m, x: (2 - 3j) - x, 0.0),
        ("x - 0.5j", lambda m, x: x - 0.5j, 0.0),
        ("x / (1+1j)", lambda m, x: x / (1 + 1j), rt),
        ("(1+1j) / (x + 1)", lambda m, x: (1 + 1j) / (x + 1), rt),
        ("m.multiply(x, 2j)", lambda m, x: m.multiply(x, 2j), rt),
        ("m.add(1j, x)", lambda m, x: m.add(1j, x), 0.0),
    ]
    if src[0] == "c":
        cases += [
            ("x * 2.0", lambda m, x: x * 2.0, 0.0),
            ("x + 1", lambda m, x: x + 1, 0.0),
            ("3 - x", lambda m, x: 3 - x, 0.0),
            ("x / 2", lambda m, x: x / 2, rt),
            ("x * True", lambda m, x: x * True, 0.0),
        ]
    for name, f, tol in cases:
        got, exp = both(f, x)
        assert onp.asarray(got).dtype == exp.dtype, f"{name}: dtype {onp.asarray(got).dtype} != {exp.dtype}"
        check(got, exp, rtol=tol)


@pytest.mark.parametrize("src", ["int16", "int64", "float32", "float64"] + CDTYPES)
@pytest.mark.parametrize("scalar", [onp.complex64(1 - 2j), onp.complex128(0.5 + 3j)], ids=["c64", "c128"])
def test_numpy_complex_scalars(src, scalar, fusion):
    x = onp.array([1, 2, 3, -4]).astype(src) if src[0] != "c" else carr(GENERIC[:4], src)
    for op in ("add", "subtract", "multiply", "divide"):
        f = ARITH[op]
        rt = _arith_tol(op, onp.result_type(x, scalar))
        got, exp = both(lambda m, a: f(a, scalar), x)
        check(got, exp, rtol=rt)
        got, exp = both(lambda m, a: f(scalar, a), x)
        check(got, exp, rtol=rt)


@pytest.mark.parametrize("dt", CDTYPES)
def test_inplace_operators(dt, fusion):
    rng = onp.random.default_rng(1)
    z0, w0 = rand_c(rng, (4, 6), dt, 3), rand_c(rng, (6,), dt, 3)
    f0 = rng.uniform(-2, 2, (4, 6)).astype("float32" if _single(dt) else "float64")

    def program(m, z, w, f):
        z += 1j
        z *= w
        z[::2] -= 1 - 1j
        z[:, 1:3] /= w[1:3]
        z += f
        z -= z.T.T * 0.5
        return z

    got, exp = both(program, z0, w0, f0)
    check(got, exp, rtol=arith_tol(dt) * 10)


def test_inplace_complex_into_real_raises():
    for m in (onp, nf):
        f = m.ones(3)
        with pytest.raises(TypeError):
            f += 1j
        with pytest.raises(TypeError):
            f *= m.ones(3, dtype=complex)
        i = m.arange(3)
        with pytest.raises(TypeError):
            i += m.asarray(onp.array([1j, 2, 3]))


# -- unary ufuncs ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", EXACT_UNARY)
@pytest.mark.parametrize("dt", CDTYPES)
def test_unary_exact(name, dt, fusion):
    x = carr(SPECIAL, dt)
    got, exp = both(lambda m, a: getattr(m, name)(a), x)
    check(got, exp)
    got, exp = both(lambda m, a: getattr(m, name)(a.reshape(3, -1)[:, ::-2]), x)  # strided, reversed
    check(got, exp)


@pytest.mark.parametrize("name", ARITH_UNARY)
@pytest.mark.parametrize("dt", CDTYPES)
def test_unary_arith(name, dt, fusion):
    x = carr(GENERIC + [0j, 1 + 0j, -1j, 1e-15 + 1e-15j], dt)
    got, exp = both(lambda m, a: getattr(m, name)(a), x, ignore=True)
    check(got, exp, rtol=arith_tol(dt))
    if name in ("absolute", "abs"):
        assert onp.asarray(got).dtype == onp.dtype("float32" if _single(dt) else "float64")
    got, exp = both(lambda m, a: abs(a), x)
    check(got, exp, rtol=arith_tol(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_unary_arith_special(dt, fusion):
    """absolute of infinities and NaNs (hypot: inf wins over nan), square, sign."""
    for name in ("absolute", "square", "sign"):
        x = carr(SPECIAL_PRODUCTS if name == "square" else SPECIAL, dt)
        got, exp = both(lambda m, a: getattr(m, name)(a), x, ignore=True)
        check(got, exp, rtol=arith_tol(dt))


@pytest.mark.parametrize("name", TRANS_UNARY)
@pytest.mark.parametrize("dt", CDTYPES)
def test_unary_transcendental(name, dt, fusion):
    x = carr(GENERIC, dt)
    got, exp = both(lambda m, a: getattr(m, name)(a), x)
    check(got, exp, rtol=trans_tol(dt))
    got, exp = both(lambda m, a: getattr(m, name)(a.reshape(2, -1).T[::-1]), x)
    check(got, exp, rtol=trans_tol(dt))


@pytest.mark.parametrize("name", CUT_UNARY)
@pytest.mark.parametrize("dt", CDTYPES)
def test_branch_cuts(name, dt, fusion):
    """On a branch cut the sign of the zero part picks the side, as in NumPy (C99)."""
    x = carr(BRANCH, dt)
    got, exp = both(lambda m, a: getattr(m, name)(a), x)
    check(got, exp, rtol=trans_tol(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_log_of_zero(dt, fusion):
    x = carr([0j, complex(-0.0, 0.0), complex(0.0, -0.0), 1 + 0j], dt)
    for name in ("log", "log10", "log2"):
        got, exp = both(lambda m, a: getattr(m, name)(a), x, ignore=True)
        check(got, exp, rtol=trans_tol(dt))


# -- binary ufuncs ---------------------------------------------------------------------------


@pytest.mark.parametrize("dt", CDTYPES)
def test_add_subtract_special(dt, fusion):
    """Every pair of special values: inf - inf, signed zeros, NaNs, overflow."""
    x = carr(SPECIAL, dt)
    for name in ("add", "subtract"):
        got, exp = both(lambda m, a, b: getattr(m, name)(a[:, None], b[None, :]), x, x, ignore=True)
        check(got, exp)


@pytest.mark.parametrize("name", COMPARISONS + MINMAX + LOGICAL)
@pytest.mark.parametrize("dt", CDTYPES)
def test_compare_minmax_logical(name, dt, fusion):
    """NumPy's lexicographic order on (real, imag); NaNs compare False and
    propagate through maximum/minimum (the first NaN operand wins), fmax/fmin
    prefer the non-NaN operand."""
    vals = SPECIAL + [1 + 1j, 1 - 1j, 1 + complex(0, NAN), complex(1, -INF)]
    x = carr(vals, dt)
    got, exp = both(lambda m, a, b: getattr(m, name)(a[:, None], b[None, :]), x, x, ignore=True)
    check(got, exp, zero_sign=name not in MINMAX)  # (NumPy's own sign of zero there depends on the loop)


@pytest.mark.parametrize("dt", CDTYPES)
def test_compare_with_real_and_scalars(dt, fusion):
    z = carr([4 + 0j, 4 + 1j, 4 - 1j, 3 + 5j, 5 - 5j, 1j, 0j, complex(NAN, 0)], dt)
    f = onp.array([4, 4, 4, 3.5, 5, 0, -0.0, 1], dtype="float32" if _single(dt) else "float64")
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        for fn in (lambda m, a, b: op(a, b), lambda m, a, b: op(b, a), lambda m, a, b: op(a, 4),
                   lambda m, a, b: op(a, 4 + 1j), lambda m, a, b: op(2 ** 2, a), lambda m, a, b: op(a, 1j)):
            got, exp = both(fn, z, f, ignore=True)  # (NumPy flags 'invalid' for NaNs compared in order)
            check(got, exp)


@pytest.mark.parametrize("dt", CDTYPES)
def test_divide_bit_for_bit_with_signed_zeros(dt, fusion):
    """Smith's algorithm as NumPy computes it, each branch's own formula: the
    same bits, signed zeros included (0j / 1j is +0j: ai*rat - ar, not the
    negation of ar - ai*rat)."""
    parts = [0.0, -0.0, 1.0, -1.0, 2.5, INF, NAN, 1e-300, 1e300]
    x = carr([complex(a, b) for a in parts for b in parts], dt)
    got, exp = both(lambda m, a, b: m.divide(a[:, None], b[None, :]), x, x, ignore=True)
    check(got, exp)


@pytest.mark.parametrize("op", ["multiply", "divide"])
@pytest.mark.parametrize("dt", CDTYPES)
def test_multiply_divide_special(op, dt, fusion):
    """Non-finite operands and division by zero: NumPy's results (and NaNs) part by part."""
    x = carr(SPECIAL_PRODUCTS, dt)
    got, exp = both(lambda m, a, b: getattr(m, op)(a[:, None], b[None, :]), x, x, ignore=True)
    check(got, exp, rtol=arith_tol(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_divide_by_zero(dt, fusion):
    z = carr([1 + 1j, 1 + 0j, 0 + 1j, 0j, -2 - 3j, complex(NAN, 1), complex(INF, 0)], dt)
    zeros = onp.zeros_like(z)
    cases = [lambda m, a, b: a / b, lambda m, a, b: a / 0, lambda m, a, b: a / 0j, lambda m, a, b: a / 0.0,
             lambda m, a, b: 1 / b, lambda m, a, b: m.reciprocal(b), lambda m, a, b: a / b.real,
             lambda m, a, b: m.divide(a, m.zeros(a.shape, dtype=a.real.dtype))]
    for fn in cases:
        got, exp = both(fn, z, zeros, ignore=True)
        check(got, exp, rtol=arith_tol(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_divide_by_zero_warns_as_numpy(dt, fusion):
    z = carr([1 + 1j, 0j, 2 + 0j], dt)
    zeros = onp.zeros_like(z)

    def warned(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            r = fn()
            if isinstance(r, nf.ndarray):
                onp.asarray(r)
        return {str(w.message).split(" encountered")[0] for w in caught if issubclass(w.category, RuntimeWarning)}

    w_np = warned(lambda: z / zeros)
    w_nf = warned(lambda: nf.asarray(z) / nf.asarray(zeros))
    assert w_np and w_nf == w_np
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with nf.errstate(all="ignore"):
            r = nf.asarray(z) / nf.asarray(zeros)
        onp.asarray(r)


POW_BASE = [0.5 + 0.5j, -2.5 + 3.7j, 3 - 4j, 1e-3 + 2j, -0.75 - 0.25j, 4 + 0.1j, 0.2 - 3j, 0 - 0.5j, 1.5 + 1.5j,
            -2 - 2j, -0.6 + 1.1j, 1 + 0j]
POW_EXP = [0.5 + 0.5j, -1.5 + 0.7j, 2 - 1j, 0.3 + 0j, -0.75 - 0.25j, 1j, 3 + 0j, 0j, -1 + 0j, 2.5 - 0.4j]


@pytest.mark.parametrize("dt", CDTYPES)
def test_power(dt, fusion):
    z = carr(POW_BASE, dt)
    e = carr(POW_EXP, dt)
    at, tt = arith_tol(dt), trans_tol(dt)
    cases = [
        ("z**2", lambda m, a, b: a ** 2, at),
        ("z**3", lambda m, a, b: a ** 3, at),
        ("z**-1", lambda m, a, b: a ** -1, at),
        ("z**0", lambda m, a, b: a ** 0, 0.0),
        ("z**1", lambda m, a, b: a ** 1, 0.0),
        ("z**0.5", lambda m, a, b: a ** 0.5, tt),
        ("z**2.5", lambda m, a, b: a ** 2.5, tt),
        ("z**(1+1j)", lambda m, a, b: a ** (1 + 1j), tt),
        ("2**z", lambda m, a, b: 2 ** a, tt),
        ("(0.5-1j)**z", lambda m, a, b: (0.5 - 1j) ** a, tt),
        ("power(z, 2)", lambda m, a, b: m.power(a, 2), at),
        ("array**array", lambda m, a, b: a[:, None] ** b[None, :], tt),
        ("float array**complex", lambda m, a, b: abs(a)[:, None] ** b[None, :], tt),
        ("complex**float array", lambda m, a, b: a[:, None] ** b.real[None, :], tt),
    ]
    for name, fn, tol in cases:
        got, exp = both(fn, z, e)
        try:
            check(got, exp, rtol=tol)
        except AssertionError as ex:
            raise AssertionError(f"{name}: {ex}") from None


# -- real, imag, angle, conj -------------------------------------------------------------------


@pytest.mark.parametrize("dt", CDTYPES)
def test_real_imag_values(dt, fusion):
    x = carr(SPECIAL, dt).reshape(3, -1)
    for fn in (lambda m, a: a.real, lambda m, a: a.imag, lambda m, a: m.real(a), lambda m, a: m.imag(a),
               lambda m, a: (a * 2).real, lambda m, a: (a * 2).imag[::-1], lambda m, a: a.T.real,
               lambda m, a: a.real + a.imag):
        got, exp = both(fn, x, ignore=True)
        check(got, exp)
    fdt = "float32" if _single(dt) else "float64"
    assert nf.asarray(x).real.dtype == onp.dtype(fdt) and nf.asarray(x).imag.dtype == onp.dtype(fdt)


@pytest.mark.parametrize("dt", CDTYPES)
def test_real_imag_are_writable_views(dt, fusion):
    x0 = carr(GENERIC[:8], dt)

    def program(m, z):
        z.real[...] = 5
        z.imag[::2] = -1
        r = z.real
        r += 1.5  # through a view of a view
        z.imag[1:3] *= 3
        w = z * 2  # a computed (pending) array's views
        w.imag[...] = 0
        v = z + 0  # property assignment
        v.imag = 7
        v.real = m.arange(8)
        u = z.copy()
        u.real[u.imag > 0] = 0  # masked assignment through a view
        return z, w, v, u

    got, exp = both(program, x0)
    for g, e in zip(got, exp):
        check(g, e)


@pytest.mark.parametrize("dt", CDTYPES)
def test_real_imag_of_real_arrays(dt):
    f = onp.array([1.5, -2.0, 0.0], dtype="float32" if _single(dt) else "float64")
    check(nf.real(nf.asarray(f)), onp.real(f))
    check(nf.imag(nf.asarray(f)), onp.imag(f))
    check(nf.asarray(f).imag, f.imag)


@pytest.mark.parametrize("dt", CDTYPES)
def test_angle_conj_iscomplex(dt, fusion):
    x = carr(GENERIC + [0j, 1 + 0j, -1 + 0j, complex(-1, -0.0), 2 + 1e-30j], dt)
    got, exp = both(lambda m, a: m.angle(a), x)
    check(got, exp, rtol=arith_tol(dt))
    got, exp = both(lambda m, a: m.angle(a, deg=True), x)
    check(got, exp, rtol=trans_tol(dt))
    for fn in (lambda m, a: m.conj(a), lambda m, a: a.conj(), lambda m, a: a.conjugate(),
               lambda m, a: m.conjugate(a * 1j), lambda m, a: m.isreal(a), lambda m, a: m.iscomplex(a),
               lambda m, a: m.isreal(a - a.imag * 1j)):
        got, exp = both(fn, x)
        check(got, exp)
    assert nf.iscomplexobj(nf.asarray(x)) is True
    assert nf.isrealobj(nf.asarray(x)) is False
    assert nf.iscomplexobj(nf.asarray(x).real) is False
    got, exp = both(lambda m, a: m.real_if_close(a.real + 0j), x)
    check(got, exp)


# -- reductions -----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", CDTYPES)
def test_reductions(dt, fusion):
    rng = onp.random.default_rng(2)
    x = rand_c(rng, (5, 9), dt, 2.0)
    scale = onp.abs(x).astype(onp.float64)
    tol = red_tol(dt)
    cases = [
        (lambda m, a: a.sum(), scale.sum()),
        (lambda m, a: m.sum(a), scale.sum()),
        (lambda m, a: a.sum(axis=0), scale.sum(axis=0)),
        (lambda m, a: a.sum(axis=1), scale.sum(axis=1)),
        (lambda m, a: a.sum(axis=1, keepdims=True), scale.sum(axis=1, keepdims=True)),
        (lambda m, a: a.mean(), scale.mean()),
        (lambda m, a: m.mean(a, axis=0), scale.mean(axis=0)),
        (lambda m, a: a.mean(axis=1), scale.mean(axis=1)),
        (lambda m, a: (a * 1j + 1).sum(axis=0), (scale + 1).sum(axis=0)),
        (lambda m, a: a.T[::-1].sum(axis=1), scale.T.sum(axis=1)[::-1]),
    ]
    for fn, s in cases:
        got, exp = both(fn, x)
        check(got, exp, atol=tol * onp.asarray(s).max(), rtol=tol)


@pytest.mark.parametrize("dt", CDTYPES)
def test_prod_cumsum(dt, fusion):
    rng = onp.random.default_rng(3)
    # near the unit circle, so that products stay O(1)
    x = (onp.exp(1j * rng.uniform(-3, 3, (4, 7))) * rng.uniform(0.9, 1.1, (4, 7))).astype(dt)
    tol = red_tol(dt)
    for fn in (lambda m, a: a.prod(), lambda m, a: m.prod(a, axis=0), lambda m, a: a.prod(axis=1)):
        got, exp = both(fn, x)
        check(got, exp, rtol=tol, atol=tol)
    for fn, axis in ((lambda m, a: a.cumsum(), None), (lambda m, a: m.cumsum(a, axis=0), 0),
                     (lambda m, a: a.cumsum(axis=1), 1)):
        got, exp = both(fn, x)
        s = onp.cumsum(onp.abs(x).astype(onp.float64), axis=axis)
        check(got, exp, atol=tol * s.max(), rtol=tol)


@pytest.mark.parametrize("dt", CDTYPES)
def test_reduction_of_expression(dt, fusion):
    """A reduction over a fused complex expression, and its result reused."""
    rng = onp.random.default_rng(4)
    a, b = rand_c(rng, (6, 50), dt), rand_c(rng, (50,), dt)

    def program(m, a, b):
        e = a * m.conj(b) + 1j
        s = e.sum(axis=1)
        return s, (e - s[:, None] / 50).mean(axis=0), m.abs(e).sum()

    got, exp = both(program, a, b)
    tol = red_tol(dt)
    for g, e in zip(got, exp):
        check(g, e, rtol=tol, atol=tol * 100)


# -- indexing ------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", CDTYPES)
def test_getitem(dt, fusion):
    x = carr(SPECIAL, dt)
    z = nf.asarray(x)
    s = z[3]
    assert type(s) is type(x[3]) and s == x[3]
    with onp.errstate(invalid="ignore"), nf.errstate(invalid="ignore"):
        s = (z * 1)[-2]  # (inf * 0 in the other elements)
    assert type(s) is type(x[-2]) and onp.array_equal(s, x[-2], equal_nan=True)
    check(z[1:5], x[1:5])
    check(z[::-3], x[::-3])
    idx = onp.array([0, 5, 2, 2, -1])
    check(z[idx], x[idx])
    check(z[nf.asarray(idx)], x[idx])
    mask = onp.abs(onp.nan_to_num(x, nan=0.0, posinf=9.0, neginf=9.0)) > 1
    check(z[mask], x[mask])
    check(z[nf.asarray(mask)], x[mask])
    check(z[z.real > 0], x[x.real > 0])
    x2 = x[:24].reshape(4, 6)
    z2 = nf.asarray(x2)
    s = z2[1, 2]
    assert type(s) is type(x2[1, 2]) and s == x2[1, 2]
    check(z2[:, 1], x2[:, 1])
    check(z2[1], x2[1])
    check(z2[[0, 3], 1:], x2[[0, 3], 1:])
    check(z2[..., None], x2[..., None])


@pytest.mark.parametrize("dt", CDTYPES)
def test_setitem(dt, fusion):
    x0 = carr(GENERIC, dt)

    def program(m, z):
        z[0] = 1 + 1j
        z[1] = 2.5
        z[2] = onp.complex64(-1j)
        z[3:6] = 7j
        z[6:9] = z[:3] * 2
        z[z.real > 2] = 2
        z[m.asarray([9, 11])] = -5 + 0.5j
        z[[12, 13]] = m.asarray(onp.array([1j, -1j]))
        z[-1:] = m.ones(1)  # a real array into a complex one
        return z

    got, exp = both(program, x0)
    check(got, exp, rtol=arith_tol(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_where(dt, fusion):
    x = carr(GENERIC, dt)
    y = carr(GENERIC[::-1], dt)
    for fn in (lambda m, a, b: m.where(m.abs(a) > 2, 2, a), lambda m, a, b: m.where(a.real > 0, a, b),
               lambda m, a, b: m.where(a.imag > 0, a, 0.5), lambda m, a, b: m.where(a.real < b.real, 1j, b.real),
               lambda m, a, b: m.nonzero(a.imag > 0)[0]):
        got, exp = both(fn, x, y)
        check(got, exp)


@pytest.mark.parametrize("dt", CDTYPES)
def test_shape_functions(dt, fusion):
    x = carr(GENERIC, dt).reshape(3, 6)
    for fn in (lambda m, a: a.reshape(6, 3), lambda m, a: a.T, lambda m, a: m.concatenate([a, a * 1j]),
               lambda m, a: m.stack([a, a], axis=1), lambda m, a: a.ravel(), lambda m, a: m.flip(a, 1),
               lambda m, a: m.transpose(a)[1:], lambda m, a: m.broadcast_to(a[0], (2, 6)),
               lambda m, a: m.expand_dims(a, 0), lambda m, a: m.ascontiguousarray(a.T)):
        got, exp = both(fn, x)
        check(got, exp)


# -- fused expressions, Mandelbrot -------------------------------------------------------------


@pytest.mark.parametrize("dt", CDTYPES)
def test_fused_expression(dt, fusion):
    rng = onp.random.default_rng(5)
    z0, c0 = rand_c(rng, (30, 40), dt), rand_c(rng, (40,), dt)

    def program(m, z, c):
        w = z * z + c
        w = w * m.conj(w)
        v = m.exp(1j * m.angle(z)) * m.abs(z) - z  # ~0
        u = (w.real + 1) * (z - c) / (1 + m.abs(c) ** 2)
        return w, v, u

    got, exp = both(program, z0, c0)
    at = arith_tol(dt)  # (values are O(1): cancellations make absolute errors of a few eps)
    check(got[0], exp[0], rtol=4 * at, atol=20 * at)
    check(got[1], exp[1], atol=2 * trans_tol(dt))
    check(got[2], exp[2], rtol=4 * at, atol=50 * at)


def mandelbrot(xp, h, w, maxit, dt):
    """The classic NumPy Mandelbrot (numpy.org's user guide), with the grid
    from linspace and the complex dtype chosen."""
    x = xp.linspace(-2, 0.8, w).reshape(1, w)
    y = xp.linspace(-1.4, 1.4, h).reshape(h, 1)
    c = (x + y * 1j).astype(dt)
    z = c
    divtime = maxit + xp.zeros(z.shape, dtype=int)
    for i in range(maxit):
        z = z ** 2 + c
        diverge = z * xp.conj(z) > 2 ** 2
        div_now = diverge & (divtime == maxit)
        divtime[div_now] = i
        z[diverge] = 2
    return divtime, z


def mandelbrot_abs(xp, h, w, maxit, dt):
    """Variant: |z| > 2 and where instead of masked assignment."""
    x = xp.linspace(-2, 0.8, w).reshape(1, w)
    y = xp.linspace(-1.4, 1.4, h).reshape(h, 1)
    c = (x + y * 1j).astype(dt)
    z = xp.zeros(c.shape, dtype=dt)
    divtime = xp.full(c.shape, maxit)
    for i in range(maxit):
        z = z * z + c
        diverge = xp.abs(z) > 2
        divtime = xp.where(diverge & (divtime == maxit), i, divtime)
        z = xp.where(diverge, 2, z)
    return divtime, z


@pytest.mark.parametrize("variant", [mandelbrot, mandelbrot_abs])
@pytest.mark.parametrize("dt", CDTYPES)
def test_mandelbrot(variant, dt, fusion):
    exp_div, exp_z = variant(onp, 40, 60, 20, dt)
    got_div, got_z = variant(nf, 40, 60, 20, dt)
    check(got_div, exp_div)  # exactly
    assert type(got_z) is nf.ndarray and got_z.dtype == exp_z.dtype
    inside = exp_div == 20
    assert inside.any() and (~inside).any()
    # clamped points are exactly 2 (or the next iterate of 2), the orbits inside stay bounded
    assert (onp.abs(onp.asarray(got_z)[inside]) <= 2 + 1e-5).all()


# -- FFT and eigenvalues (NumPy's routines as library calls; their results are numfuse arrays) --


@pytest.mark.parametrize("dt", ["float64", "float32", "complex64", "complex128"])
def test_fft_returns_numfuse_arrays(dt):
    rng = onp.random.default_rng(6)
    x = rng.standard_normal((4, 32)).astype(dt) if dt[0] == "f" else rand_c(rng, (4, 32), dt)
    z = nf.asarray(x)
    tol = 1e-5 if _single(dt) else 1e-12
    for name in ("fft", "ifft"):
        got = getattr(nf.fft, name)(z)
        exp = getattr(onp.fft, name)(x)
        check(got, exp, rtol=tol, atol=tol * 10)
    got = nf.fft.ifft(nf.fft.fft(z, axis=0), axis=0)
    check(got, onp.fft.ifft(onp.fft.fft(x, axis=0), axis=0), rtol=tol, atol=tol)


def test_eigvals_return_numfuse_arrays():
    a = onp.array([[0.0, -2.0, 0.1], [2.0, 0.0, 0.3], [0.0, 0.5, 1.0]])  # a pair of complex eigenvalues
    got = nf.linalg.eigvals(nf.asarray(a))
    exp = onp.linalg.eigvals(a)
    assert exp.dtype.kind == "c"
    check(got, exp, rtol=1e-12, atol=1e-14)
    b = a + 1j * a.T
    check(nf.linalg.eigvals(nf.asarray(b)), onp.linalg.eigvals(b), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dt", CDTYPES)
def test_fft_results_feed_native_operations(dt, fusion):
    """What comes back from NumPy's FFT is an ordinary numfuse complex array:
    the arithmetic on it is native."""
    rng = onp.random.default_rng(7)
    x = rand_c(rng, (64,), dt)
    F = nf.fft.fft(nf.asarray(x))
    assert type(F) is nf.ndarray and F.dtype == onp.dtype(dt)
    Fn = onp.fft.fft(x)
    power = (F * nf.conj(F)).real
    shifted = F * nf.exp(-2j * onp.pi * nf.arange(64) / 64)
    tol = 1e-5 if _single(dt) else 1e-12
    check(power, (Fn * onp.conj(Fn)).real, rtol=tol, atol=tol * 10)
    check(shifted, Fn * onp.exp(-2j * onp.pi * onp.arange(64) / 64), rtol=tol, atol=tol * 10)
    check(nf.abs(F).max(), onp.abs(Fn).max(), rtol=tol)


# -- random chains of operations (hypothesis) --------------------------------------------------

SCALARS = [0.5 - 0.5j, 1j, -0.75 + 0.1j, 0.3, 2]
# Each step keeps the values bounded: after it the chain applies z / (1 + |z|),
# so |z| < 1 and every error stays O(eps) in absolute terms.
CHAIN_OPS = [
    ("add", lambda m, z, y, f, s: z + y),
    ("sub_scaled", lambda m, z, y, f, s: z - y * s),
    ("mul", lambda m, z, y, f, s: z * y),
    ("mul_scalar", lambda m, z, y, f, s: z * s),
    ("scalar_div", lambda m, z, y, f, s: s / (z + 2)),
    ("div", lambda m, z, y, f, s: z / (y + 2)),
    ("square", lambda m, z, y, f, s: m.square(z)),
    ("conj", lambda m, z, y, f, s: m.conj(z)),
    ("negative", lambda m, z, y, f, s: -z),
    ("rotate", lambda m, z, y, f, s: z * 1j),
    ("sqrt", lambda m, z, y, f, s: m.sqrt(z + 2)),
    ("exp", lambda m, z, y, f, s: m.exp(z)),
    ("log", lambda m, z, y, f, s: m.log(z + 2)),
    ("sin", lambda m, z, y, f, s: m.sin(z)),
    ("tanh", lambda m, z, y, f, s: m.tanh(z)),
    ("reciprocal", lambda m, z, y, f, s: m.reciprocal(z - 2)),
    ("times_abs", lambda m, z, y, f, s: z * m.abs(y)),
    ("real_imag", lambda m, z, y, f, s: m.real(z) - 1j * m.imag(y)),
    ("where", lambda m, z, y, f, s: m.where(m.abs(z) > 0.5, z, y)),
    ("pow2", lambda m, z, y, f, s: z ** 2),
    ("pow_half", lambda m, z, y, f, s: (z + 2) ** 0.5),
    ("pow_complex", lambda m, z, y, f, s: (z + 2) ** (0.5 + 0.25j)),
    ("minus_mean", lambda m, z, y, f, s: z - z.mean()),
    ("times_float", lambda m, z, y, f, s: z * f),
    ("float_plus", lambda m, z, y, f, s: f + z * 0.5),
    ("arctan", lambda m, z, y, f, s: m.arctan(z)),
    ("expm1", lambda m, z, y, f, s: m.expm1(z)),
    ("conj_prod", lambda m, z, y, f, s: z * m.conj(y)),
    ("inplace", lambda m, z, y, f, s: _inplace(z, y)),
    ("real_view_write", lambda m, z, y, f, s: _real_write(z)),
]
CHAIN_SHAPES = [(7,), (3, 5), (33,), (2, 3, 4)]


def _inplace(z, y):
    z = z * 1  # (a new array: the chain's input arrays stay untouched)
    z += y
    z[::2] *= 0.5j
    return z


def _real_write(z):
    z = z + 0
    z.real[..., :1] = 0.25
    return z


def run_chain(m, ops, z, y, f):
    for k, s in ops:
        z = CHAIN_OPS[k][1](m, z, y, f, s)
        z = z / (1 + m.abs(z))
    return z


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.integers(0, len(CHAIN_OPS) - 1), st.sampled_from(SCALARS)), min_size=1,
                    max_size=10),
       seed=st.integers(0, 20), shape=st.sampled_from(CHAIN_SHAPES), dt=st.sampled_from(CDTYPES),
       tier=st.sampled_from(list(TIERS)))
def test_random_chains(ops, seed, shape, dt, tier):
    from numfuse import _fallback

    _fallback._warned.clear()  # (a fallback warns in every example, not only in the first)
    rng = onp.random.default_rng(seed)
    z = rand_c(rng, shape, dt, 0.7)
    y = rand_c(rng, shape[-1:], dt, 0.7)
    f = rng.uniform(-1, 1, shape[-1:]).astype("float32" if _single(dt) else "float64")
    exp = run_chain(onp, ops, z, y, f)
    with nf.config(**TIERS[tier]):
        got = run_chain(nf, ops, nf.array(z), nf.array(y), nf.array(f))
        names = [CHAIN_OPS[k][0] for k, _ in ops]
        assert type(got) is nf.ndarray, names
        tol = 2e-6 if _single(dt) else 1e-13
        try:
            check(got, exp, rtol=tol, atol=tol)
        except AssertionError as ex:
            raise AssertionError(f"chain {names} ({tier}): {ex}") from None


# -- library calls, grids, linspace, products ----------------------------------------------------


@pytest.mark.parametrize("dt", CDTYPES)
@pytest.mark.parametrize("n", [3, 40, 130])
def test_complex_matmul_dot_vdot(dt, n):
    """Small products are compiled contractions, large ones NumPy's BLAS
    (zgemm/cgemm) as a library call: both without a fallback, both numfuse
    arrays; vdot conjugates its first operand."""
    rng = onp.random.default_rng(11)
    a, b = rand_c(rng, (n, n), dt), rand_c(rng, (n, n), dt)
    A, B = nf.asarray(a), nf.asarray(b)
    tol = 1e-4 if _single(dt) else 1e-11
    for got, exp in ((A @ B, a @ b), (nf.matmul(A, B), onp.matmul(a, b)), (nf.dot(A, B), onp.dot(a, b)),
                     (A @ B[:, 0], a @ b[:, 0])):
        assert type(got) is nf.ndarray
        check(got, exp, rtol=tol, atol=tol * n)
    check(nf.vdot(A, B), onp.vdot(a, b), rtol=tol, atol=tol * n)


def test_complex_correlate_conjugates_convolve_does_not():
    a = onp.array([1 + 1j, 2, 3j, -1 - 2j])
    v = onp.array([0.5 - 1j, 2j])
    check(nf.correlate(nf.asarray(a), nf.asarray(v), "full"), onp.correlate(a, v, "full"), rtol=1e-14, atol=1e-14)
    check(nf.convolve(nf.asarray(a), nf.asarray(v)), onp.convolve(a, v), rtol=1e-14, atol=1e-14)


def test_grids_and_concatenators_stay_numfuse():
    y, x = nf.ogrid[-1.4:1.4:7j, -2:0.8:5j]
    ey, ex = onp.ogrid[-1.4:1.4:7j, -2:0.8:5j]
    assert type(x) is nf.ndarray and type(y) is nf.ndarray
    check(x + y * 1j, ex + ey * 1j, rtol=0, atol=0)
    g = nf.mgrid[0:3, 0:4:0.5]
    assert type(g) is nf.ndarray
    check(g, onp.mgrid[0:3, 0:4:0.5], rtol=0, atol=0)
    r = nf.r_[nf.arange(3), 7, nf.asarray(onp.array([1j]))]
    assert type(r) is nf.ndarray
    check(r, onp.r_[onp.arange(3), 7, onp.array([1j])], rtol=0, atol=0)
    check(nf.c_[nf.arange(3), nf.arange(3)], onp.c_[onp.arange(3), onp.arange(3)], rtol=0, atol=0)


@pytest.mark.parametrize("args", [(0, 1 + 1j, 5), (1j, -2 + 0.5j, 7), (0.5, 2j, 1), (1 + 1j, 3, 4)])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_complex_endpoints(args, endpoint):
    got = nf.linspace(*args, endpoint=endpoint)
    exp = onp.linspace(*args, endpoint=endpoint)
    assert type(got) is nf.ndarray
    check(got, exp, rtol=0, atol=0)
    g2, s2 = nf.linspace(*args, endpoint=endpoint, retstep=True)
    e2, t2 = onp.linspace(*args, endpoint=endpoint, retstep=True)
    check(g2, e2, rtol=0, atol=0)
    assert complex(s2) == complex(t2) or (onp.isnan(s2) and onp.isnan(t2))


def test_argmax_of_complex_runs_numpys_kernel():
    """Complex arg-reductions (NumPy's lexicographic order) are NumPy's; the
    only part of this suite allowed to fall back."""
    z = onp.array([1 + 5j, 3 - 1j, 3 + 2j, -4j])
    with allow_fallback():
        assert int(nf.argmax(nf.asarray(z))) == int(onp.argmax(z))
        assert int(nf.argmin(nf.asarray(z))) == int(onp.argmin(z))


@pytest.mark.parametrize("dt", CDTYPES)
def test_complex_memory_shared_the_standard_ways(dt):
    """Buffer protocol ('Zd'/'Zf'), __array_interface__ ('<c16'/'<c8') and
    DLPack (kDLComplex) carry complex arrays both ways, without copies."""
    z = onp.array([1 + 2j, 3 - 1j, -0.5j], dtype=dt)
    Z = nf.asarray(z) * 1  # a numfuse array of its own memory
    mv = memoryview(Z)
    assert mv.format == ("Zd" if dt == "complex128" else "Zf") and mv.itemsize == onp.dtype(dt).itemsize
    onp.testing.assert_array_equal(onp.asarray(mv), z)
    assert onp.asarray(Z).__array_interface__["typestr"] == onp.dtype(dt).str
    d = onp.from_dlpack(Z)
    onp.testing.assert_array_equal(d, z)
    back = nf.from_dlpack(onp.array(z))
    assert type(back) is nf.ndarray and back.dtype == onp.dtype(dt)
    check(back, z, rtol=0, atol=0)
    view = onp.asarray(Z)  # a NumPy view observes numfuse's writes
    Z[1] = 5 - 5j
    assert view[1] == 5 - 5j

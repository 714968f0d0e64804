"""Differential tests: numfuse ufuncs and array operators against NumPy.

Every supported unary and binary ufunc is run over every supported dtype with
special values (signed zeros, NaN, +/-inf, integer extremes, division by zero)
and compared with NumPy: dtype, shape and values, or the same exception class
where NumPy raises.

To stay fast, many checks are recorded lazily in one `Recorder` and compared
after a single flush, so numfuse fuses them into a few kernels (each distinct
kernel is compiled once and cached).

Former numfuse bugs are kept as regression tests at the end of the file.
"""

import math
import operator

import numpy as onp
import pytest

import numfuse as nf
from conftest import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_same, to_np

UNARY = list(nf._core.UNARY_OPS)
BINARY = list(nf._core.BINARY_OPS)
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
# NumPy itself returns either zero for max/min(+0.0, -0.0) depending on the
# memory layout (SIMD vs scalar loop), so the sign of zero is not compared.
MINMAX = {"maximum", "minimum", "fmax", "fmin"}
LOGICAL = ["logical_and", "logical_or", "logical_xor"]


# ---------------------------------------------------------------------------
# helpers

def special_values(dt):
    """1-D NumPy array of interesting values of dtype `dt`."""
    dt = onp.dtype(dt)
    if dt.kind == "b":
        return onp.array([False, True, True, False])
    if dt.kind in "iu":
        ii = onp.iinfo(dt)
        vals = [0, 1, 2, 3, 5, 7, 100, int(ii.max), int(ii.max) - 1, int(ii.min)]
        if dt.kind == "i":
            vals += [-1, -2, -7, -100, int(ii.min) + 1]
        return onp.array([v for v in vals if ii.min <= v <= ii.max], dtype=dt)
    fi = onp.finfo(dt)
    return onp.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.7, 1e-30, 100.0, -100.0, 1e30,
                      onp.inf, -onp.inf, onp.nan, 0.9999, 1.5, 700.0, -700.0, fi.max, -fi.smallest_subnormal,
                      3 * fi.smallest_subnormal], dtype=dt)


def nonneg(x):
    """`x` without negative values (integer exponents that NumPy accepts)."""
    return x[x >= 0] if x.dtype.kind == "i" else x


def check(got, expected, zero_sign=True, rtol=None):
    """assert_same, plus: zeros of float results carry NumPy's sign."""
    assert_same(got, expected, rtol=rtol)
    e = onp.asarray(expected)
    if zero_sign and e.dtype.kind == "f":
        g = onp.asarray(to_np(got))
        z = e == 0
        assert onp.array_equal(onp.signbit(g[z]), onp.signbit(e[z])), (
            f"sign of zero differs: got {g[z]}, expected {e[z]}")


def np_call(f):
    with onp.errstate(all="ignore"):
        return f()


def same_outcome(f_np, f_nf, zero_sign=True, rtol=None):
    """Run NumPy and numfuse; both raise the same exception class (TypeError
    for NumPy's UFuncTypeError), or both return equal results."""
    try:
        expected = np_call(f_np)
    except Exception as ex:  # noqa: BLE001 - we compare exception classes
        want = TypeError if isinstance(ex, TypeError) else type(ex)
        with pytest.raises(want):
            to_np(np_call(f_nf))
        return
    got = np_call(f_nf)
    check(got, expected, zero_sign=zero_sign, rtol=rtol)
    return got


class Recorder:
    """Records many numfuse calls, then compares them after one flush (so
    numfuse fuses them). Exceptions are compared immediately (numfuse raises
    them when the operation is recorded)."""

    def __init__(self):
        self.pending = []
        self.failures = []
        self.count = 0

    def __call__(self, tag, f_np, f_nf, zero_sign=True, rtol=None):
        self.count += 1
        try:
            expected = np_call(f_np)
        except Exception as ex:  # noqa: BLE001
            want = TypeError if isinstance(ex, TypeError) else type(ex)
            try:
                to_np(np_call(f_nf))
            except want:
                return
            except Exception as other:  # noqa: BLE001
                self.failures.append(f"{tag}: NumPy raised {want.__name__}, numfuse raised {other!r}")
                return
            self.failures.append(f"{tag}: NumPy raised {want.__name__} ({ex}), numfuse did not")
            return
        try:
            got = np_call(f_nf)
        except Exception as ex:  # noqa: BLE001
            self.failures.append(f"{tag}: numfuse raised {ex!r}, NumPy returned {expected!r}")
            return
        self.pending.append((tag, got, expected, zero_sign, rtol))

    def check(self):
        assert self.count > 0, "nothing was compared"
        pending, self.pending = self.pending, []
        for tag, got, expected, zs, rtol in pending:
            try:
                check(got, expected, zero_sign=zs, rtol=rtol)
            except AssertionError as e:
                self.failures.append(f"{tag}: {e}")
        assert not self.failures, f"{len(self.failures)} mismatches:\n" + "\n".join(self.failures[:40])


def A(x):
    return nf.asarray(x)


# ---------------------------------------------------------------------------
# unary ufuncs

@pytest.mark.fallback
@pytest.mark.parametrize("name", [n for n in UNARY if n != "erf"])
def test_unary_all_dtypes(name):
    rec = Recorder()
    for dt in ALL_DTYPES:
        x = special_values(dt)
        rec(f"{name}[{dt}]", lambda: getattr(onp, name)(x), lambda: getattr(nf, name)(A(x)))
        rec.check()


@pytest.mark.fallback
def test_unary_noncontiguous(fusion):
    """All unary ops on a negatively-strided, transposed 2-D view."""
    rec = Recorder()
    for dt in ALL_DTYPES:
        base = onp.resize(special_values(dt), (6, 8))
        nbase = A(base)
        view_np = base[::-2, 1::3].T
        view_nf = nbase[::-2, 1::3].T
        for name in UNARY:
            if name == "erf":
                if dt in FLOAT_DTYPES:
                    rec(f"erf[{dt}]", lambda: onp.vectorize(math.erf, otypes=[dt])(view_np),
                        lambda: nf.erf(view_nf))
                continue
            v_np, v_nf = view_np, view_nf
            if name == "reciprocal" and dt in ("bool", "int8", "int16"):
                v_np, v_nf = base[::-2, 1:2].T, nbase[::-2, 1:2].T  # no zeros there
                assert (v_np != 0).all()
            rec(f"{name}[{dt}]", lambda: getattr(onp, name)(v_np), lambda: getattr(nf, name)(v_nf))
        rec.check()


@pytest.mark.fallback
def test_unary_0d_and_empty():
    rec = Recorder()
    for dt in ALL_DTYPES:
        x = special_values(dt)
        zero_d = onp.asarray(x[-1])
        for name in ("negative", "absolute", "sqrt", "sin", "exp", "isnan", "logical_not", "invert", "floor",
                     "sign", "square"):
            rec(f"{name}[{dt}] 0-d", lambda: getattr(onp, name)(zero_d), lambda: getattr(nf, name)(A(zero_d)))
            rec(f"{name}[{dt}] empty", lambda: getattr(onp, name)(x[:0].reshape(0, 3)),
                lambda: getattr(nf, name)(A(x[:0].reshape(0, 3))))
    rec.check()


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_erf_matches_math_erf(dt):
    x = special_values(dt)
    got = onp.asarray(nf.erf(A(x)))
    expected = onp.array([math.erf(float(v)) for v in x])
    if dt in FLOAT_DTYPES:
        assert got.dtype == onp.dtype(dt)
        expected = expected.astype(dt)
    else:
        assert got.dtype.kind == "f"
        expected = expected.astype(got.dtype)
    check(got, expected, rtol=1e-5 if got.dtype == onp.float32 else 1e-12)


@pytest.mark.fallback
def test_unary_aliases_and_operators():
    """Aliases (abs, acos, ...) and the unary operators - + ~ abs()."""
    rec = Recorder()
    for alias, target in (("abs", "absolute"), ("acos", "arccos"), ("asin", "arcsin"), ("atan", "arctan"),
                          ("acosh", "arccosh"), ("asinh", "arcsinh"), ("atanh", "arctanh"),
                          ("bitwise_not", "invert"), ("degrees", "rad2deg"), ("radians", "deg2rad")):
        for dt in ("int16", "float64", "bool"):
            x = special_values(dt)
            rec(f"{alias}[{dt}]", lambda: getattr(onp, target)(x), lambda: getattr(nf, alias)(A(x)))
    for dt in ALL_DTYPES:
        x = special_values(dt)
        for op in (operator.neg, operator.pos, operator.invert, abs):
            rec(f"{op.__name__}[{dt}]", lambda: op(x), lambda: op(A(x)))
    rec.check()


# ---------------------------------------------------------------------------
# binary ufuncs: same dtype, all combinations of special values (broadcast grid)

@pytest.mark.fallback
@pytest.mark.parametrize("name", BINARY)
def test_binary_same_dtype(name):
    rec = Recorder()
    for dt in ALL_DTYPES:
        x = special_values(dt)
        y = nonneg(x) if name == "power" else x  # negative integer powers raise (tested separately)
        X, Y = x[:, None], y[None, :]
        rec(f"{name}[{dt}]", lambda: getattr(onp, name)(X, Y), lambda: getattr(nf, name)(A(X), A(Y)),
            zero_sign=name not in MINMAX)
        rec.check()


@pytest.mark.fallback
@pytest.mark.parametrize("d1", ALL_DTYPES)
def test_binary_mixed_dtypes(d1):
    """Every binary op for (d1, d2), d2 != d1 (one fused kernel per pair)."""
    rec = Recorder()
    for d2 in ALL_DTYPES:
        if d2 == d1:
            continue
        x, y = special_values(d1)[:, None], special_values(d2)[None, :]
        X, Y = A(x), A(y)
        # power with an integer loop: no negative exponents (negative exponents raise; see test_errors.py)
        yp = nonneg(y) if d1 not in FLOAT_DTYPES else y
        YP = A(yp)
        for name in BINARY:
            b, B = (yp, YP) if name == "power" else (y, Y)
            rec(f"{name}[{d1},{d2}]", lambda: getattr(onp, name)(x, b), lambda: getattr(nf, name)(X, B),
                zero_sign=name not in MINMAX)
        rec.check()


def test_binary_operators_mixed():
    """The Python operators on numfuse arrays (both operands numfuse, and
    numfuse with a NumPy array) agree with the ufuncs / NumPy."""
    ops = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
           operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
           operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
    rec = Recorder()
    for d1, d2 in [("int8", "int8"), ("uint8", "int16"), ("int32", "float32"), ("float64", "float64"),
                   ("bool", "bool"), ("bool", "float32"), ("uint32", "int64"), ("float32", "int8")]:
        x = nonneg(special_values(d1))[:, None]
        y = nonneg(special_values(d2))
        for op in ops:
            rec(f"{op.__name__}[{d1},{d2}]", lambda: op(x, y), lambda: op(A(x), A(y)))
            rec(f"{op.__name__}[{d1},{d2}] nf-np", lambda: op(x, y), lambda: op(A(x), y))
            rec(f"{op.__name__}[{d1},{d2}] np-nf", lambda: op(x, y), lambda: op(x, A(y)))
        rec.check()


def test_divmod():
    rec = Recorder()
    for dt in ("int8", "uint16", "int64", "float32", "float64"):
        x = special_values(dt)
        y = onp.resize(x[::-1], x.shape)
        rec(f"divmod[{dt}]//", lambda: divmod(x, y)[0], lambda: divmod(A(x), A(y))[0])
        rec(f"divmod[{dt}]%", lambda: divmod(x, y)[1], lambda: divmod(A(x), A(y))[1])
        rec(f"nf.divmod[{dt}]//", lambda: onp.divmod(x, 3)[0], lambda: nf.divmod(A(x), 3)[0])
        rec(f"nf.divmod[{dt}]%", lambda: onp.divmod(x, 3)[1], lambda: nf.divmod(A(x), 3)[1])
    rec.check()


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_division_by_zero(dt):
    x = special_values(dt)
    z = onp.zeros_like(x)
    rec = Recorder()
    for name in ("divide", "floor_divide", "remainder", "fmod"):
        rec(f"{name}[{dt}] x/0", lambda: getattr(onp, name)(x, z), lambda: getattr(nf, name)(A(x), A(z)))
        rec(f"{name}[{dt}] x/scalar0", lambda: getattr(onp, name)(x, 0), lambda: getattr(nf, name)(A(x), 0))
        rec(f"{name}[{dt}] 0/x", lambda: getattr(onp, name)(z, x), lambda: getattr(nf, name)(A(z), A(x)))
    for op in (operator.truediv, operator.floordiv, operator.mod):
        rec(f"{op.__name__}[{dt}] x op 0", lambda: op(x, z), lambda: op(A(x), A(z)))
        rec(f"{op.__name__}[{dt}] x op 0.0", lambda: op(x, 0.0), lambda: op(A(x), 0.0))
    rec.check()


# ---------------------------------------------------------------------------
# Python and NumPy scalars (NEP 50: Python scalars are weak)

PY_BOOLS = [True, False]
PY_INTS = [0, 1, -1, 2, 7, 100, 127, 128, 255, 256, 300, -129, 2**31, 2**40, 2**63 - 1, 2**63, 2**64 - 1,
           -2**63]
PY_FLOATS = [0.0, -0.0, 2.5, -1.5, 1e300, onp.inf, -onp.inf, onp.nan]
NP_SCALARS = [onp.float32(2.0), onp.float64(-0.5), onp.int8(-3), onp.uint8(200), onp.int16(300),
              onp.int64(5), onp.uint64(3), onp.uint32(7), onp.float32(onp.nan)]


@pytest.mark.fallback
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_scalar_operands(dt):
    """array op scalar and scalar op array for every binary op, with Python
    bool/int/float scalars (weak) and NumPy scalars (strong)."""
    x = special_values(dt)
    X = A(x)
    xp = nonneg(x)
    XP = A(xp)
    rec = Recorder()
    for s in PY_BOOLS + PY_INTS + PY_FLOATS + NP_SCALARS:
        for name in BINARY:
            # power: the array holds no negative integer exponents (negative
            # exponents raise, tested separately); a negative integer scalar
            # exponent must raise ValueError
            a, A_ = (xp, XP) if name == "power" else (x, X)
            f_np, f_nf = getattr(onp, name), getattr(nf, name)
            zs = name not in MINMAX
            rec(f"{name}[{dt}](arr, {s!r})", lambda: f_np(a, s), lambda: f_nf(A_, s), zs)
            rec(f"{name}[{dt}]({s!r}, arr)", lambda: f_np(s, a), lambda: f_nf(s, A_), zs)
        rec.check()


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_scalar_operators(dt):
    """The operators with Python scalars on either side (reflected ops)."""
    x = special_values(dt)
    X = A(x)
    ops = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
           operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift, operator.eq,
           operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
    rec = Recorder()
    for s in (3, -2, 2.5, True, onp.float32(2), onp.int16(-3)):
        for op in ops:
            rec(f"{op.__name__}[{dt}](arr, {s!r})", lambda: op(x, s), lambda: op(X, s))
            rec(f"{op.__name__}[{dt}]({s!r}, arr)", lambda: op(s, x), lambda: op(s, X))
        rec.check()


@pytest.mark.parametrize("dt", ["uint8", "int8", "uint16", "int16", "uint32", "int32"])
def test_python_int_out_of_range(dt):
    """NumPy 2: arithmetic with a Python int that does not fit the array dtype
    raises OverflowError; comparisons with it still work. (int64/uint64:
    see test_compare_64bit_with_out_of_range_python_int.)"""
    x = special_values(dt)
    ii = onp.iinfo(dt)
    rec = Recorder()
    for s in (int(ii.max) + 1, int(ii.min) - 1, 300, -1, 2**64, -2**64):
        for name in ("add", "subtract", "multiply", "floor_divide", "maximum", "bitwise_and"):
            rec(f"{name}[{dt}](arr, {s})", lambda: getattr(onp, name)(x, s), lambda: getattr(nf, name)(A(x), s))
            rec(f"{name}[{dt}]({s}, arr)", lambda: getattr(onp, name)(s, x), lambda: getattr(nf, name)(s, A(x)))
        for name in COMPARISONS:
            rec(f"{name}[{dt}](arr, {s})", lambda: getattr(onp, name)(x, s), lambda: getattr(nf, name)(A(x), s))
            rec(f"{name}[{dt}]({s}, arr)", lambda: getattr(onp, name)(s, x), lambda: getattr(nf, name)(s, A(x)))
        rec.check()
    # The exact cases from the NumPy 2 migration guide.
    if dt == "uint8":
        with pytest.raises(OverflowError):
            A(x) + 300
        with pytest.raises(OverflowError):
            300 + A(x)
        assert_same(A(x) < 300, x < 300)
        assert_same(A(x) == -1, x == -1)
        assert_same(A(x) >= -1, x >= -1)
        assert_same(A(x) + 255, x + 255)


def test_python_bool_scalar_operators():
    """Python bools are valid scalar operands (operators and in-place)."""
    b = special_values("bool")
    i = special_values("int16")
    f = special_values("float32")
    assert_same(A(b) + True, b + True)
    assert_same(A(b) == False, b == False)  # noqa: E712
    assert_same(True - A(i), True - i)
    assert_same(A(f) * False, np_call(lambda: f * False))
    assert_same(A(i) & True, i & True)
    assert_same(nf.logical_xor(A(f), True), onp.logical_xor(f, True))
    a = A(b)
    a |= True
    assert_same(a, b | True)
    a = A(i)
    a += True
    assert_same(a, i + True)
    with pytest.raises(TypeError):
        A(b) - True  # bool - bool
    with pytest.raises(TypeError):
        nf.bitwise_or(A(f), True)


def test_numpy_scalar_promotion_values():
    rec = Recorder()
    for dt in ("int8", "int16", "int32", "uint8", "float32", "float64", "bool"):
        x = special_values(dt)
        for s in (onp.float32(2), onp.float64(2), onp.int8(-3), onp.uint16(3), onp.int64(-5), onp.bool_(True)):
            for name in ("add", "multiply", "true_divide", "subtract", "maximum"):
                rec(f"{name}[{dt}](arr, {s!r})", lambda: getattr(onp, name)(x, s),
                    lambda: getattr(nf, name)(A(x), s))
                rec(f"{name}[{dt}]({s!r}, arr)", lambda: getattr(onp, name)(s, x),
                    lambda: getattr(nf, name)(s, A(x)))
    rec.check()


# ---------------------------------------------------------------------------
# broadcasting, 0-d, empty, non-contiguous

SHAPE_OPS = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power", "maximum",
             "less", "bitwise_xor", "arctan2", "right_shift", "logical_and", "hypot"]
SHAPE_DTYPES = ["bool", "int8", "uint16", "int64", "float32", "float64"]


@pytest.mark.fallback
def test_broadcasting_shapes(fusion):
    rec = Recorder()
    for dt in SHAPE_DTYPES:
        v = nonneg(special_values(dt))
        col = onp.resize(v, (3, 1))
        row = onp.resize(v[::-1], (4,))
        zero_d = onp.asarray(v[1])
        m = onp.resize(v, (2, 3))
        cases = [
            ("(3,1)x(4,)", col, row),
            ("(4,)x(3,1)", row, col),
            ("0d x (2,3)", zero_d, m),
            ("(2,3) x 0d", m, zero_d),
            ("0d x 0d", zero_d, onp.asarray(v[2])),
            ("(0,) x (1,)", v[:0], v[:1]),
            ("(2,0) x (2,1)", m[:, :0], m[:, :1]),
            ("(0,3) x (3,)", m[:0], m[0]),
            ("(2,1,3) x (4,1)", m.reshape(2, 1, 3), onp.resize(v, (4, 1))),
        ]
        for name in SHAPE_OPS:
            for tag, a, b in cases:
                rec(f"{name}[{dt}] {tag}", lambda: getattr(onp, name)(a, b),
                    lambda: getattr(nf, name)(A(a), A(b)), zero_sign=name not in MINMAX)
    rec.check()


def test_broadcasting_incompatible_shapes():
    for name in ("add", "less", "arctan2"):
        with pytest.raises(ValueError):
            onp.asarray(getattr(nf, name)(nf.ones((3,)), nf.ones((4,))))
        with pytest.raises(ValueError):
            onp.asarray(getattr(nf, name)(nf.ones((2, 3)), nf.ones((3, 2))))
    with pytest.raises(ValueError):
        nf.ones((3,)) + nf.ones((2,))


@pytest.mark.fallback
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_binary_noncontiguous(dt, fusion):
    """Slices with steps, transposes and negative steps, on both sides."""
    base = onp.resize(special_values(dt), (6, 8))
    other = onp.resize(special_values(dt)[::-1], (8, 6))
    nb, no = A(base), A(other)
    views = [
        ("step", lambda a: a[::2, 1::3], lambda a: a[1::2, ::3]),
        ("transpose", lambda a: a.T, None),
        ("negative", lambda a: a[::-1, ::-2], lambda a: a[:, 1::2]),
        ("neg-both", lambda a: a[::-2, ::-1], lambda a: a[::2, :]),
    ]
    # power of signed ints: exponents without negatives (negative exponents raise; see test_errors.py)
    pbase, pother = onp.maximum(base, 0), onp.maximum(other, 0)
    npb, npo = A(pbase), A(pother)
    rec = Recorder()
    for name in ("add", "subtract", "multiply", "true_divide", "floor_divide", "maximum", "less", "bitwise_xor",
                 "arctan2", "power"):
        f_np, f_nf = getattr(onp, name), getattr(nf, name)
        eb, eo, neb, neo = (pbase, pother, npb, npo) if name == "power" else (base, other, nb, no)
        for tag, va, vb in views:
            if vb is None:  # transpose of one against the other (same shape)
                a_np, b_np, a_nf, b_nf = va(base), eo, va(nb), neo
            else:
                a_np, b_np, a_nf, b_nf = va(base), vb(eb), va(nb), vb(neb)
            rec(f"{name}[{dt}] {tag}", lambda: f_np(a_np, b_np), lambda: f_nf(a_nf, b_nf),
                zero_sign=name not in MINMAX)
    rec.check()


def random_values(dt, shape, seed):
    rng = onp.random.default_rng(seed)
    dt = onp.dtype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        ii = onp.iinfo(dt)
        return rng.integers(ii.min, ii.max, size=shape, dtype=dt, endpoint=True)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=shape)).astype(dt)
    x.flat[::97] = onp.nan
    x.flat[5::101] = onp.inf
    return x


@pytest.mark.fallback
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_larger_arrays(dt, fusion):
    """Sizes that are not multiples of the SIMD width and are split across
    threads; random data over the dtype's whole range."""
    x = random_values(dt, (37, 29), 1)
    y = random_values(dt, (37, 29), 2)
    v = random_values(dt, (1031,), 3)
    X, Y, V = A(x), A(y), A(v)
    rec = Recorder()
    for name in ("add", "multiply", "true_divide", "floor_divide", "remainder", "maximum", "less", "right_shift",
                 "bitwise_and", "arctan2", "hypot"):
        f_np, f_nf = getattr(onp, name), getattr(nf, name)
        zs = name not in MINMAX
        rec(f"{name}[{dt}] 2-d", lambda: f_np(x, y), lambda: f_nf(X, Y), zs)
        rec(f"{name}[{dt}] 2-d T/step", lambda: f_np(x[::3].T, y[:, :13]), lambda: f_nf(X[::3].T, Y[:, :13]), zs)
        rec(f"{name}[{dt}] 1-d", lambda: f_np(v, v[::-1]), lambda: f_nf(V, V[::-1]), zs)
        rec(f"{name}[{dt}] scalar", lambda: f_np(v, 7), lambda: f_nf(V, 7), zs)
    for name in ("sqrt", "sin", "exp", "log1p", "negative", "absolute", "isfinite", "floor", "square"):
        rec(f"{name}[{dt}] 2-d", lambda: getattr(onp, name)(x), lambda: getattr(nf, name)(X))
        rec(f"{name}[{dt}] 1-d", lambda: getattr(onp, name)(v[1::2]), lambda: getattr(nf, name)(V[1::2]))
    rec.check()


# ---------------------------------------------------------------------------
# out=, dtype=, in-place operators

def test_out_same_kind_casts():
    """out= of a different dtype that the result casts to with same_kind."""
    cases = [  # (input dtype, op, out dtype)
        ("float32", "add", "float64"), ("float64", "add", "float32"), ("int8", "add", "float32"),
        ("int32", "multiply", "int8"), ("int8", "multiply", "int64"), ("uint8", "subtract", "uint16"),
        ("uint32", "add", "int64"), ("bool", "logical_and", "int32"), ("bool", "add", "bool"),
        ("int16", "less", "int8"), ("float64", "equal", "float32"), ("int64", "true_divide", "float32"),
        ("float64", "sqrt", "float32"), ("int16", "negative", "int64"), ("float32", "sin", "float64"),
        ("int64", "maximum", "float64"), ("uint16", "right_shift", "uint64"),
    ]
    for dt, name, odt in cases:
        x = special_values(dt)
        args = (x,) if name in UNARY else (x, x[::-1])
        out_np = onp.zeros(x.shape, dtype=odt)
        out_nf = nf.zeros(x.shape, dtype=odt)
        expected = np_call(lambda: getattr(onp, name)(*args, out=out_np))
        r = np_call(lambda: getattr(nf, name)(*[A(a) for a in args], out=out_nf))
        assert r is out_nf, f"{name}: out= must return the out array"
        assert expected is out_np
        check(out_nf, out_np, rtol=1e-5 if "float32" in (dt, odt) else None)


def test_out_not_same_kind_raises():
    cases = [  # NumPy raises (UFunc)TypeError for all of these
        ("float64", "add", "int64"), ("float32", "multiply", "int32"), ("int32", "add", "uint8"),
        ("int64", "add", "bool"), ("float64", "sqrt", "int32"), ("int8", "true_divide", "int8"),
        ("int16", "sin", "int16"), ("uint8", "subtract", "bool"), ("float32", "floor_divide", "uint8"),
    ]
    for dt, name, odt in cases:
        x = special_values(dt)
        args = (x,) if name in UNARY else (x, x[::-1])
        with pytest.raises(TypeError):
            np_call(lambda: getattr(onp, name)(*args, out=onp.zeros(x.shape, dtype=odt)))
        out = nf.zeros(x.shape, dtype=odt)
        with pytest.raises(TypeError):
            to_np(np_call(lambda: getattr(nf, name)(*[A(a) for a in args], out=out)))
        assert_same(out, onp.zeros(x.shape, dtype=odt))  # left untouched


def test_out_forms_and_layouts(fusion):
    x = special_values("float64")
    y = x[::-1].copy()
    # positional out, out as a 1-tuple
    o = nf.zeros(x.shape)
    assert nf.add(A(x), A(y), o) is o
    check(o, onp.add(x, y))
    o = nf.zeros(x.shape)
    r = nf.multiply(A(x), A(y), out=(o,))
    check(o, onp.multiply(x, y))
    check(r, onp.multiply(x, y))
    o = nf.zeros(x.shape)
    nf.sqrt(A(x), o)
    check(o, np_call(lambda: onp.sqrt(x)))
    # out bigger than the inputs (broadcast into out)
    o_np, o_nf = onp.zeros((3, x.size)), nf.zeros((3, x.size))
    onp.add(x, 1.0, out=o_np)
    nf.add(A(x), 1.0, out=o_nf)
    check(o_nf, o_np)
    # out that is a strided / transposed view of a larger array
    big_np, big_nf = onp.full((4, 2 * x.size), 7.0), nf.full((4, 2 * x.size), 7.0)
    np_call(lambda: onp.subtract(x, y, out=big_np[1, ::2]))
    np_call(lambda: nf.subtract(A(x), A(y), out=big_nf[1, ::2]))
    check(big_nf, big_np)
    m = onp.resize(x, (4, 5))
    t_np, t_nf = onp.zeros((5, 4)), nf.zeros((5, 4))
    np_call(lambda: onp.multiply(m.T, 2.0, out=t_np))
    np_call(lambda: nf.multiply(A(m).T, 2.0, out=t_nf))
    check(t_nf, t_np)
    # out aliasing an input (NumPy buffers overlapping operands)
    a_np, a_nf = x.copy(), A(x)
    np_call(lambda: onp.add(a_np, a_np[::-1], out=a_np))
    np_call(lambda: nf.add(a_nf, a_nf[::-1], out=a_nf))
    check(a_nf, a_np)
    i_np, i_nf = onp.arange(12, dtype="int32"), nf.arange(12, dtype="int32")
    onp.subtract(i_np[:-1], i_np[1:], out=i_np[1:])
    nf.subtract(i_nf[:-1], i_nf[1:], out=i_nf[1:])
    check(i_nf, i_np)
    # wrong out shape
    with pytest.raises(ValueError):
        onp.add(x, 1.0, out=onp.zeros(3))
    with pytest.raises(ValueError):
        to_np(nf.add(A(x), 1.0, out=nf.zeros(3)))


def test_dtype_argument():
    rec = Recorder()
    cases = [  # (op, input dtype, dtype=)
        ("add", "int32", "float32"), ("add", "int32", "int8"), ("add", "float32", "float64"),
        ("add", "uint8", "int64"), ("multiply", "int8", "int16"), ("true_divide", "int32", "float32"),
        ("true_divide", "int8", "float64"), ("subtract", "int64", "float64"), ("maximum", "uint16", "float32"),
        ("sqrt", "int32", "float32"), ("sqrt", "float32", "float64"), ("exp", "int16", "float64"),
        ("negative", "int8", "int64"), ("add", "bool", "bool"), ("power", "uint8", "float64"),
        ("floor_divide", "float32", "float64"), ("arctan2", "int8", "float32"),
        ("logical_and", "float64", "bool"),
    ]
    for name, dt, dtype in cases:
        x = special_values(dt)
        args = (x,) if name in UNARY else (x, x[::-1])
        rec(f"{name}[{dt}] dtype={dtype}", lambda: getattr(onp, name)(*args, dtype=dtype),
            lambda: getattr(nf, name)(*[A(a) for a in args], dtype=dtype))
        rec(f"{name}[{dt}] dtype={dtype} np.dtype", lambda: getattr(onp, name)(*args, dtype=onp.dtype(dtype)),
            lambda: getattr(nf, name)(*[A(a) for a in args], dtype=onp.dtype(dtype)))
    # with Python scalars
    x = special_values("uint8")
    rec("add[uint8]+300 dtype=int64", lambda: onp.add(x, 300, dtype="int64"),
        lambda: nf.add(A(x), 300, dtype="int64"))
    rec("multiply[int32]*2**40 dtype=float32", lambda: onp.multiply(x.astype("int32"), 2**40, dtype="float32"),
        lambda: nf.multiply(A(x.astype("int32")), 2**40, dtype="float32"))
    rec("true_divide[int8]/3 dtype=float32", lambda: onp.true_divide(x.astype("int8"), 3, dtype="float32"),
        lambda: nf.true_divide(A(x.astype("int8")), 3, dtype="float32"))
    rec.check()


INPLACE_OPS = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
               operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift]


@pytest.mark.parametrize("d1", ALL_DTYPES)
def test_inplace_operators(d1):
    """a op= b for every dtype pair: same result as NumPy (cast back with
    same_kind), or TypeError where NumPy cannot cast (e.g. int += float)."""
    rec = Recorder()
    for d2 in ALL_DTYPES:
        x = special_values(d1)
        y = onp.resize(special_values(d2)[::-1], x.shape)
        for op in INPLACE_OPS:
            # negative integer exponents raise (tested separately)
            yy = onp.maximum(y, 0) if (op is operator.ipow and d2 in SIGNED) else y

            def do_np(op=op, yy=yy):
                a = x.copy()
                r = op(a, yy)
                assert r is a
                return a

            def do_nf(op=op, yy=yy):
                a = A(x)
                r = op(a, A(yy))
                assert r is a, "in-place operator must return the same array"
                return a

            rec(f"{op.__name__}[{d1},{d2}]", do_np, do_nf)
        rec.check()


def test_inplace_scalars_and_views():
    rec = Recorder()

    def inplace(lib, x, op, s, view=None):
        def run():
            a = lib.asarray(x).copy()
            tgt = a if view is None else view(a)
            op(tgt, s)
            return a
        return run

    for dt in ALL_DTYPES:
        x = special_values(dt)
        for s in (1, -1, 300, 1.5, True, False, onp.float32(2), onp.int16(3), 2**64):
            for op in (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                       operator.iand, operator.ilshift):
                rec(f"{op.__name__}[{dt}] {s!r}", inplace(onp, x, op, s), inplace(nf, x, op, s))
        # in-place on views: the base sees the update
        rec(f"iadd view[{dt}]", inplace(onp, x, operator.iadd, 1, lambda a: a[::2]),
            inplace(nf, x, operator.iadd, 1, lambda a: a[::2]))
        rec(f"imul reversed view[{dt}]", inplace(onp, x, operator.imul, 3, lambda a: a[::-3]),
            inplace(nf, x, operator.imul, 3, lambda a: a[::-3]))
    rec.check()
    # explicit: int += float raises TypeError, like NumPy
    for dt in INT_DTYPES:
        a = A(special_values(dt))
        with pytest.raises(TypeError):
            a += 1.5
        with pytest.raises(TypeError):
            a += A(special_values("float32"))
        with pytest.raises(TypeError):
            a /= 2
        assert_same(a, special_values(dt))  # unchanged
    # overlapping in-place operands: NumPy reads the old values
    x_np, x_nf = onp.arange(12, dtype="int32"), nf.arange(12, dtype="int32")
    x_np[1:] += x_np[:-1]
    x_nf[1:] += x_nf[:-1]
    assert_same(x_nf, x_np)
    # lazy semantics: a result taken before an in-place update keeps the old values
    x_nf = nf.arange(6, dtype="float64")
    y_nf = x_nf * 2
    v_nf = x_nf[2:5]
    x_nf += 10
    assert_same(y_nf, onp.arange(6.0) * 2)
    assert_same(v_nf, onp.arange(6.0)[2:5] + 10)


# ---------------------------------------------------------------------------
# power

@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_power_operator_special_exponents(dt):
    """x ** 2, x ** 0.5, x ** -1 (NumPy's fast paths square/sqrt/reciprocal
    for float arrays) and friends, with NaN/inf/-0.0 in x."""
    x = special_values(dt)
    rec = Recorder()
    exps = [2, 0.5, -1.0, 0, 1, 3, 2.0, -0.5, 1.0, 0.0, -2.0, onp.nan, onp.inf, -onp.inf, onp.float32(2)]
    if dt in FLOAT_DTYPES:
        exps.append(-1)
    for e in exps:
        rec(f"[{dt}] x ** {e!r}", lambda: x ** e, lambda: A(x) ** e)
        rec(f"[{dt}] power(x, {e!r})", lambda: onp.power(x, e), lambda: nf.power(A(x), e))
    xp = nonneg(x)
    for b in (2, 2.0, -1.5, 0, 0.0, onp.inf, onp.nan, onp.float32(0.5)):
        rec(f"[{dt}] {b!r} ** x", lambda: b ** xp, lambda: b ** A(xp))
    rec.check()


# ---------------------------------------------------------------------------
# TypeErrors NumPy raises

def test_bool_subtract_and_negative_raise():
    b = onp.array([True, False, True])
    for f_np, f_nf in [
        (lambda: b - b, lambda: A(b) - A(b)),
        (lambda: onp.subtract(b, b), lambda: nf.subtract(A(b), A(b))),
        (lambda: onp.negative(b), lambda: nf.negative(A(b))),
        (lambda: -b, lambda: -A(b)),
    ]:
        with pytest.raises(TypeError):
            f_np()
        with pytest.raises(TypeError):
            to_np(f_nf())
    a = A(b)
    with pytest.raises(TypeError):
        a -= A(b)
    # but bool - int works (promotes)
    assert_same(A(b) - 1, b - 1)
    assert_same(A(b) - A(b.astype("int8")), b - b.astype("int8"))


@pytest.mark.parametrize("name", ["invert", "bitwise_and", "left_shift", "right_shift", "bitwise_xor",
                                  "bitwise_or"])
def test_bitwise_on_floats_raise(name):
    for dt in FLOAT_DTYPES:
        x = special_values(dt)
        args = (x,) if name == "invert" else (x, x)
        with pytest.raises(TypeError):
            getattr(onp, name)(*args)
        with pytest.raises(TypeError):
            to_np(getattr(nf, name)(*[A(a) for a in args]))
        if name != "invert":
            with pytest.raises(TypeError):
                to_np(getattr(nf, name)(A(x), 1))
            with pytest.raises(TypeError):
                to_np(getattr(nf, name)(A(special_values("int32")), 1.5))
    with pytest.raises(TypeError):
        ~A(special_values("float32"))


# ---------------------------------------------------------------------------
# ufunc.reduce / ufunc.outer

def reduce_values(dt):
    """Values whose sums/products are exact in any order (so the float
    results do not depend on the summation order)."""
    dt = onp.dtype(dt)
    if dt.kind == "f":
        return onp.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 2.0, -0.25, 4.0, -2.0, 1.5, 0.75, -3.0, 8.0],
                         dtype=dt)
    return onp.resize(special_values(dt), 15)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum"])
def test_ufunc_reduce(name):
    rec = Recorder()
    for dt in ALL_DTYPES:
        m = reduce_values(dt).reshape(3, 5)
        M = A(m)
        f_np, f_nf = getattr(onp, name).reduce, getattr(nf, name).reduce
        for axis in (0, 1, -1, None, (0, 1)):
            rec(f"{name}.reduce[{dt}] axis={axis}", lambda: f_np(m, axis=axis), lambda: f_nf(M, axis=axis))
        rec(f"{name}.reduce[{dt}] default axis", lambda: f_np(m), lambda: f_nf(M))
        rec(f"{name}.reduce[{dt}] keepdims", lambda: f_np(m, axis=1, keepdims=True),
            lambda: f_nf(M, axis=1, keepdims=True))
        rec(f"{name}.reduce[{dt}] dtype=float64", lambda: f_np(m, axis=0, dtype="float64"),
            lambda: f_nf(M, axis=0, dtype="float64"))
        rec(f"{name}.reduce[{dt}] initial", lambda: f_np(m, axis=1, initial=1),
            lambda: f_nf(M, axis=1, initial=1))
        rec(f"{name}.reduce[{dt}] transposed", lambda: f_np(m.T[::-1], axis=0), lambda: f_nf(M.T[::-1], axis=0))
        rec(f"{name}.reduce[{dt}] 1-d", lambda: f_np(m[1]), lambda: f_nf(M[1]))
        rec(f"{name}.reduce[{dt}] empty 1-d", lambda: f_np(m[0, :0]), lambda: f_nf(M[0, :0]))
        rec(f"{name}.reduce[{dt}] (0,5) axis=1", lambda: f_np(m[:0], axis=1), lambda: f_nf(M[:0], axis=1))
        rec(f"{name}.reduce[{dt}] (0,5) axis=0", lambda: f_np(m[:0], axis=0), lambda: f_nf(M[:0], axis=0))
        if dt in FLOAT_DTYPES:
            s = special_values(dt)  # NaN and infinities propagate
            for sl in (slice(None), slice(0, 15), slice(12, 15), slice(13, 15)):
                rec(f"{name}.reduce[{dt}] special {sl}", lambda: f_np(s[sl]), lambda: f_nf(A(s)[sl]),
                    zero_sign=name not in MINMAX)
        rec.check()
    # NumPy's np.add.reduce etc. on a numfuse array dispatch to numfuse
    m = reduce_values("int16").reshape(3, 5)
    check(getattr(onp, name).reduce(A(m), axis=1), getattr(onp, name).reduce(m, axis=1))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum"])
def test_ufunc_outer(name):
    rec = Recorder()
    for dt in ALL_DTYPES:
        x = special_values(dt)
        m = onp.resize(x, (2, 3))
        f_np, f_nf = getattr(onp, name).outer, getattr(nf, name).outer
        rec(f"{name}.outer[{dt}] 1-d", lambda: f_np(x, x[:5]), lambda: f_nf(A(x), A(x[:5])),
            zero_sign=name not in MINMAX)
        rec(f"{name}.outer[{dt}] 2-d x 1-d", lambda: f_np(m, x[:4]), lambda: f_nf(A(m), A(x[:4])),
            zero_sign=name not in MINMAX)
        rec(f"{name}.outer[{dt}] scalar", lambda: f_np(x, 3), lambda: f_nf(A(x), 3), zero_sign=name not in MINMAX)
        rec(f"{name}.outer[{dt}] mixed", lambda: f_np(x, special_values("float32")[:4]),
            lambda: f_nf(A(x), A(special_values("float32")[:4])), zero_sign=name not in MINMAX)
    rec.check()


def test_numpy_ufuncs_dispatch_to_numfuse():
    """np.<ufunc>(numfuse array) goes through __array_ufunc__ and returns a
    numfuse array with NumPy's result."""
    x = special_values("float32")
    X = A(x)
    for name in ("add", "multiply", "arctan2", "less", "maximum"):
        r = np_call(lambda: getattr(onp, name)(X, 2))
        assert isinstance(r, nf.ndarray)
        check(r, np_call(lambda: getattr(onp, name)(x, 2)), zero_sign=name not in MINMAX)
    for name in ("sin", "sqrt", "negative", "isnan"):
        r = np_call(lambda: getattr(onp, name)(X))
        assert isinstance(r, nf.ndarray)
        check(r, np_call(lambda: getattr(onp, name)(x)))
    o = nf.zeros(x.shape, dtype="float64")
    np_call(lambda: onp.add(X, X, out=o))
    check(o, np_call(lambda: x + x).astype("float64"))


# ---------------------------------------------------------------------------
# Regression tests for disagreements with NumPy found (and fixed) earlier

@pytest.mark.parametrize("name", COMPARISONS)
def test_compare_signed_with_uint64(name):
    x = special_values("int64")[:, None]
    y = special_values("uint64")
    check(getattr(nf, name)(A(x), A(y)), getattr(onp, name)(x, y))
    check(getattr(nf, name)(A(y), A(x)), getattr(onp, name)(y, x))
    check(getattr(nf, name)(A(y), onp.int8(-3)), getattr(onp, name)(y, onp.int8(-3)))
    check(getattr(nf, name)(A(x), onp.uint64(3)), getattr(onp, name)(x, onp.uint64(3)))


def test_integer_power_negative_scalar_exponent_raises():
    x = A(onp.array([1, 2, 3], dtype="int32"))
    for f_np, f_nf in [
        (lambda: onp.power(onp.int32(2), -1), lambda: nf.power(x, -1)),
        (lambda: onp.array([2]) ** -2, lambda: x ** -2),
        (lambda: onp.array([2], "u1") ** onp.int8(-3), lambda: A(onp.array([2], "u1")) ** onp.int8(-3)),
        (lambda: onp.power(onp.array([2], "i1"), -1), lambda: nf.power(A(onp.array([2], "i1")), -1)),
    ]:
        with pytest.raises(ValueError):
            f_np()
        with pytest.raises(ValueError):
            to_np(f_nf())
    with pytest.raises(ValueError):
        x **= -1
    # float results: fine
    assert_same(A(onp.array([1, 2], "int8")) ** -1.0, onp.array([1, 2], "int8") ** -1.0)
    assert_same(A(onp.array([1, 2], "int64")) ** onp.float32(-1), onp.array([1, 2], "int64") ** onp.float32(-1))


@pytest.mark.parametrize("case", ["array_exponent", "reflected", "inplace", "mixed_uint8_int8", "int64_view",
                                  "fine_float_loop", "fine_nonnegative"])
def test_integer_power_negative_exponent_array(case):
    """Negative values in an integer exponent array: ValueError like NumPy
    (only when the loop is an integer loop)."""
    x = onp.array([1, 2, 3], dtype="int32")
    y = onp.array([2, -1, 0], dtype="int32")
    u = onp.array([1, 2, 3], dtype="uint8")
    i8 = onp.array([0, 1, -3], dtype="int8")
    big = onp.array([[2, 5], [-1, 3]], dtype="int64")
    f_np, f_nf = {
        "array_exponent": (lambda: onp.power(x, y), lambda: nf.power(A(x), A(y))),
        "reflected": (lambda: 2 ** y, lambda: 2 ** A(y)),
        "inplace": (lambda: operator.ipow(x.copy(), y), lambda: operator.ipow(A(x), A(y))),
        "mixed_uint8_int8": (lambda: u ** i8, lambda: A(u) ** A(i8)),
        "int64_view": (lambda: onp.power(big[:, 0], big.T[0]), lambda: nf.power(A(big)[:, 0], A(big).T[0])),
        "fine_float_loop": (lambda: i8.astype("float32") ** y, lambda: A(i8).astype("float32") ** A(y)),
        "fine_nonnegative": (lambda: x ** onp.abs(y), lambda: A(x) ** A(onp.abs(y))),
    }[case]
    if case.startswith("fine"):
        check(f_nf(), np_call(f_np))
        return
    with pytest.raises(ValueError):
        f_np()
    with pytest.raises(ValueError):
        to_np(f_nf())


@pytest.mark.parametrize("case", ["logical_and_int8", "logical_or_float64", "logical_xor_uint64",
                                  "bool_equal", "bool_less_reflected", "bool_iadd"])
def test_huge_python_int_raises_overflow(case):
    b, i8, f8, u8 = (special_values(d) for d in ("bool", "int8", "float64", "uint64"))

    def iadd(lib, x, s):
        a = lib.asarray(x).copy()
        a += s
        return a

    f_np, f_nf = {
        "logical_and_int8": (lambda: onp.logical_and(i8, 2**63), lambda: nf.logical_and(A(i8), 2**63)),
        "logical_or_float64": (lambda: onp.logical_or(f8, 2**64), lambda: nf.logical_or(A(f8), 2**64)),
        "logical_xor_uint64": (lambda: onp.logical_xor(u8, 2**64 - 1),
                               lambda: nf.logical_xor(A(u8), 2**64 - 1)),
        "bool_equal": (lambda: b == 2**63, lambda: A(b) == 2**63),
        "bool_less_reflected": (lambda: onp.less(-2**63 - 1, b), lambda: nf.less(-2**63 - 1, A(b))),
        "bool_iadd": (lambda: iadd(onp, b, 2**64), lambda: iadd(nf, b, 2**64)),
    }[case]
    with pytest.raises(OverflowError):
        f_np()
    with pytest.raises(OverflowError):
        to_np(f_nf())


@pytest.mark.parametrize("dt,s", [("int64", 2**63), ("int64", -2**63 - 1), ("uint64", 2**64),
                                  ("uint64", 2**64 + 1)])
def test_compare_64bit_with_out_of_range_python_int(dt, s):
    ii = onp.iinfo(dt)
    x = onp.array([ii.min, ii.min + 1, 0, ii.max - 1, ii.max], dtype=dt)
    for name in COMPARISONS:
        check(getattr(nf, name)(A(x), s), getattr(onp, name)(x, s))
        check(getattr(nf, name)(s, A(x)), getattr(onp, name)(s, x))


@pytest.mark.parametrize("name", ["less", "equal", "greater_equal"])
def test_comparison_dtype_bool(name):
    x = special_values("int8")
    y = x[::-1].copy()
    check(getattr(nf, name)(A(x), A(y), dtype=bool), getattr(onp, name)(x, y, dtype=bool))


@pytest.mark.parametrize("dt", ["bool", "int8", "int16"])
def test_reciprocal_int_zero(dt):
    x = onp.array([0, 1], dtype=dt)
    check(nf.reciprocal(A(x)), np_call(lambda: onp.reciprocal(x)))


def test_bool_array_pow_2():
    b = special_values("bool")
    check(A(b) ** 2, b ** 2)


@pytest.mark.parametrize("case", ["add_float_to_int", "less_float_out", "sqrt_float_to_int"])
def test_dtype_argument_invalid_raises(case):
    f = special_values("float64")
    i = special_values("int32")
    f_np, f_nf = {
        "add_float_to_int": (lambda: onp.add(f, f, dtype="int64"), lambda: nf.add(A(f), A(f), dtype="int64")),
        "less_float_out": (lambda: onp.less(i, 1, dtype="float32"), lambda: nf.less(A(i), 1, dtype="float32")),
        "sqrt_float_to_int": (lambda: onp.sqrt(f, dtype="int32"), lambda: nf.sqrt(A(f), dtype="int32")),
    }[case]
    with pytest.raises(TypeError):
        np_call(f_np)
    with pytest.raises(TypeError):
        to_np(np_call(f_nf))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"])
def test_integer_arithmetic_wraps_around_like_numpy(dtype):
    # Overflowing +, -, *, negative, abs, square and power wrap modulo 2**bits
    # (the kernels compute them in unsigned arithmetic).
    info = onp.iinfo(dtype)
    vals = onp.array([info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 1, info.max - 1, info.max] * 3,
                     dtype=dtype)
    other = onp.roll(vals, 3)
    a, b = nf.array(vals), nf.array(other)
    with onp.errstate(over="ignore"):
        cases = [
            (a + b, vals + other), (a - b, vals - other), (a * b, vals * other),
            (-a, -vals), (abs(a), abs(vals)), (nf.square(a), onp.square(vals)),
            (a ** 3, vals ** 3), (a * 3 + b * b - a, vals * 3 + other * other - vals),
            (nf.cumsum(a), onp.cumsum(vals)), (nf.cumprod(a), onp.cumprod(vals)),
            (a.sum(), vals.sum()), (a.prod(), vals.prod()),
        ]
        if info.min < 0:
            cases.append((a // -1, vals // -1))
    for got, want in cases:
        got = onp.asarray(got)
        assert got.dtype == want.dtype
        onp.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["fmax", "fmin", "maximum", "minimum"])
@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_minmax_of_equal_zeros_is_numpys_second_operand(name, dt):
    """fmax/fmin/maximum/minimum of 0.0 and -0.0: NumPy's vector loops (all
    of a contiguous array but a few elements) give the second operand, as
    x86's maxpd/minpd do; numfuse gives it on every path -- tier 0, a
    compiled kernel, fused with a producer. (fmax/fmin gave the first.)"""
    z = onp.zeros(64, dtype=dt)
    nz = -z
    f_np, f_nf = getattr(onp, name), getattr(nf, name)
    for a, b in ((z, nz), (nz, z)):
        expected = f_np(a, b)
        for opts in ({"tier": "eager"}, {"tier": "lazy"}):
            with nf.config(**opts):
                got = onp.asarray(f_nf(nf.asarray(a), nf.asarray(b)))
                fused = onp.asarray(f_nf(nf.asarray(a) * 1.0, nf.asarray(b) * 1.0) * 1.0)
            for g in (got, fused):
                assert onp.array_equal(onp.signbit(g), onp.signbit(expected)), (name, opts, g[:4], expected[:4])

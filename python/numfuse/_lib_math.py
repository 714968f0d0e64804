"""NumPy functions numfuse implements by composing its native operations
(recorded, fused and compiled like any other): see docs/coverage.md.

Each function mirrors NumPy's own algorithm (numpy/lib/_function_base_impl.py,
_nanfunctions_impl.py, _polynomial_impl.py, _type_check_impl.py,
_ufunclike_impl.py, numpy/_core/numeric.py) with numfuse operations, so that
dtypes, NaN handling, empty inputs and exceptions are NumPy's. Inputs numfuse
cannot hold (complex, float16, object, ...) run NumPy's function; so do a few
rare keywords (with a FallbackWarning)."""

import builtins as _builtins
import inspect
import operator
import warnings

import numpy as np

from . import _core, _fallback  # noqa: F401
from ._creation import arange, array, asarray, empty, empty_like, ones, zeros, zeros_like
from ._manip import broadcast_to, concatenate, diagonal, diff, moveaxis, swapaxes, where
from ._reductions import all as _all, any as _any, argmax as _argmax, argmin as _argmin
from ._reductions import cumprod as _cumprod, cumsum as _cumsum, max as _max, mean as _mean, min as _min
from ._reductions import sum as _sum, var as _var
from ._signal import convolve as _convolve
from .linalg import dot as _dot, _matmul
from ._ufuncs import UFUNCS as U, _descriptor

ndarray = _core.ndarray
_NoValue = np._NoValue
_normalize_axis_tuple = np.lib.array_utils.normalize_axis_tuple
_normalize_axis_index = np.lib.array_utils.normalize_axis_index

__all__ = [
    "hamming", "hanning", "bartlett", "blackman", "kaiser", "i0", "sinc", "fix", "isposinf", "isneginf",
    "heaviside", "nan_to_num", "float_power", "modf", "real", "imag", "angle", "iscomplex", "isreal",
    "iscomplexobj", "isrealobj", "real_if_close", "average", "cov", "corrcoef", "nanmax", "nanmin", "nanargmax",
    "nanargmin", "nanvar", "nanstd", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod", "ediff1d",
    "gradient", "trapezoid", "unwrap", "cross", "kron", "vecdot", "matvec", "vecmat", "polyval", "polyadd",
    "polysub",
    "polymul", "polyder", "polyint", "vander", "geomspace", "asarray_chkfinite", "array_equiv", "fabs",
]


# -- helpers -----------------------------------------------------------------------

def _arr(x):
    """A numfuse array for `x`, or a NumPy array where numfuse cannot hold
    its dtype (then the caller runs NumPy's function; no warning here)."""
    if type(x) is ndarray:
        return x
    if isinstance(x, (list, tuple)):
        x = _fallback.to_numpy(x, [], writeable=False)
    n = np.asarray(x)
    return asarray(n) if _core.supported_dtype(n.dtype) else n


def _numpy(func, args, kwargs=None, why=None, warn=False):
    """NumPy's `func` on arguments numfuse cannot compute (warn=False: an
    input numfuse does not hold; warn=True: a rare keyword)."""
    name = f"numpy.{func.__name__}" + (f" ({why})" if why else "")
    return _fallback.call_numpy(func, tuple(args), kwargs or {}, name, warn=warn)


def _doc(f, npf):
    f.__doc__ = ("numfuse: NumPy's function composed of numfuse operations (recorded and fused).\n\n"
                 + (npf.__doc__ or ""))
    return f


def _scalar_if_0d(r, *inputs):
    """NumPy's ufuncs return a scalar where every operand is 0-d."""
    if type(r) is ndarray and r.ndim == 0 and _builtins.all(np.ndim(x) == 0 for x in inputs):
        return r[()]
    return r


def _to_out(r, out):
    if out is None:
        return r
    out[...] = r
    return out



def _loop(npufunc, args):
    """NumPy's loop (input and output dtypes) of ufunc `npufunc` for `args`,
    or None where it does not resolve to dtypes numfuse holds."""
    try:
        loop = npufunc.resolve_dtypes(tuple(_descriptor(a) for a in args) + (None,) * npufunc.nout)
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    return loop if _builtins.all(_core.supported_dtype(t) for t in loop) else None


def _cast(x, t):
    if isinstance(x, (bool, int, float)):
        return x
    return x if x.dtype == t else x.astype(t)


# -- window functions ----------------------------------------------------------------

def _window(npf, M, body):
    values = np.array([0.0, M])
    if not _core.supported_dtype(values.dtype):
        return _numpy(npf, (M,), why=str(values.dtype))
    M = values[1]
    if M < 1:
        return array([], dtype=values.dtype)
    if M == 1:
        return ones(1, dtype=values.dtype)
    n = arange(1 - M, M, 2)
    return body(n, M)


def hamming(M):
    return _window(np.hamming, M, lambda n, M: 0.54 + 0.46 * U["cos"](np.pi * n / (M - 1)))


def hanning(M):
    return _window(np.hanning, M, lambda n, M: 0.5 + 0.5 * U["cos"](np.pi * n / (M - 1)))


def bartlett(M):
    return _window(np.bartlett, M, lambda n, M: where(U["less_equal"](n, 0), 1 + n / (M - 1), 1 - n / (M - 1)))


def blackman(M):
    return _window(np.blackman, M, lambda n, M: (0.42 + 0.5 * U["cos"](np.pi * n / (M - 1))
                                                 + 0.08 * U["cos"](2.0 * np.pi * n / (M - 1))))


def kaiser(M, beta):
    values = np.array([0.0, M, beta])
    if not _core.supported_dtype(values.dtype):
        return _numpy(np.kaiser, (M, beta), why=str(values.dtype))
    M = values[1]
    beta = values[2]
    if M == 1:
        return ones(1, dtype=values.dtype)
    n = arange(0, M)
    alpha = (M - 1) / 2.0
    return i0(beta * U["sqrt"](1 - ((n - alpha) / alpha) ** 2.0)) / i0(beta)


# Chebyshev coefficients of cephes' i0 (NumPy's _i0A, _i0B).
_i0A = np.lib._function_base_impl._i0A
_i0B = np.lib._function_base_impl._i0B


def _chbevl(x, vals):
    b0 = vals[0]
    b1 = 0.0
    for i in range(1, len(vals)):
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + vals[i]
    return 0.5 * (b0 - b2)


def i0(x):
    x = _arr(x)
    if type(x) is not ndarray:
        return _numpy(np.i0, (x,), why=str(x.dtype))
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    if x.dtype.kind != "f":
        x = x.astype(float)
    x = U["absolute"](x)
    small = U["less_equal"](x, 8.0)
    # NumPy's piecewise evaluates each branch on its own elements only: the
    # other branch sees a harmless value instead.
    x1 = where(small, x, 0.0)
    x2 = where(small, 32.0, x)
    r1 = U["exp"](x1) * _chbevl(x1 / 2.0 - 2, _i0A)
    r2 = U["exp"](x2) * _chbevl(32.0 / x2 - 2.0, _i0B) / U["sqrt"](x2)
    r = where(small, r1, r2)
    return r if type(r) is ndarray else asarray(r)


def sinc(x):
    x = _arr(x)
    if type(x) is not ndarray:
        return _numpy(np.sinc, (x,), why=str(x.dtype))
    x = np.pi * x
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = where(U["not_equal"](x, 0), x, eps)
    return U["sin"](y) / y


# -- ufunc-like ----------------------------------------------------------------------

def fix(x, out=None):
    return U["trunc"](x, out=out)


def _isinf_sign(npf, x, out, neg):
    a = _arr(x)
    if type(a) is not ndarray or (out is not None and type(out) is not ndarray):
        return _numpy(npf, (a, out), why="complex" if type(a) is not ndarray else "out")
    if a.dtype.kind == "c":
        raise TypeError("This operation is not supported for complex values because it would be ambiguous.")
    if a.dtype.kind != "f":  # never infinite (NumPy's loops for bool are float16's)
        r = U["not_equal"](a, a)
        return _scalar_if_0d(r, x) if out is None else U["not_equal"](a, a, out=out)
    sb = U["signbit"](a)
    if not neg:
        sb = U["logical_not"](sb)
    r = U["logical_and"](U["isinf"](a), sb)
    if out is not None:
        return U["logical_and"](U["isinf"](a), sb, out=out)
    return _scalar_if_0d(r, x)


def isposinf(x, out=None):
    return _isinf_sign(np.isposinf, x, out, False)


def isneginf(x, out=None):
    return _isinf_sign(np.isneginf, x, out, True)


def _ufunc_args(npuf, args, out, kwargs):
    """numfuse operands cast to NumPy's loop types for ufunc `npuf`, or None
    (then NumPy's ufunc runs)."""
    if kwargs or (out is not None and not (type(out) is ndarray
                                           or (isinstance(out, tuple) and _builtins.all(
                                               o is None or type(o) is ndarray for o in out)))):
        return None, None
    ops = []
    for a in args:
        if not isinstance(a, (bool, int, float)):
            a = _arr(a)
            if type(a) is not ndarray:
                return None, None
        ops.append(a)
    loop = _loop(npuf, ops)
    if loop is None:
        return None, None
    return [_cast(a, loop[i]) for i, a in enumerate(ops)], loop


def _loop_operand(a, t):
    """An operand of a resolved loop as a numfuse value of the loop's type
    (a Python scalar too: ``fabs(2)`` is float64)."""
    return asarray(a, dtype=t) if isinstance(a, (bool, int, float)) else _cast(a, t)


def _out_arg(name, nin, positional, out):
    """NumPy's conversion of a ufunc-like function's output: given once, by
    position or as ``out=``; a positional output is an array (or None),
    never a tuple (TypeError as NumPy raises)."""
    if not positional:
        return out
    if len(positional) > 1:
        raise TypeError(f"{name}() takes from {nin} to {nin + 1} positional arguments but "
                        f"{nin + len(positional)} were given")
    if out is not None:
        raise TypeError("cannot specify 'out' as both a positional and keyword argument")
    o = positional[0]
    if o is not None and not isinstance(o, (ndarray, np.ndarray)):
        raise TypeError("return arrays must be of ArrayType")
    return o


def fabs(x, /, *out_, out=None, **kwargs):
    """numpy.fabs: the absolute value in NumPy's float loop for the input
    (float16 for bool/int8/uint8, which numfuse does not hold: NumPy's;
    complex input: NumPy's TypeError)."""
    out = _out_arg("fabs", 1, out_, out)
    ops, loop = _ufunc_args(np.fabs, (x,), out, kwargs)
    if ops is None:
        return _numpy(np.fabs, (x,), dict(out=out, **kwargs), why="arguments", warn=bool(kwargs))
    r = U["absolute"](_loop_operand(ops[0], loop[0]), out=out)
    return r if out is not None else _scalar_if_0d(r, x)


def heaviside(x1, x2, /, *out_, out=None, **kwargs):
    out = _out_arg("heaviside", 2, out_, out)
    ops, loop = _ufunc_args(np.heaviside, (x1, x2), out, kwargs)
    if ops is None:
        return _numpy(np.heaviside, (x1, x2), dict(out=out, **kwargs), why="arguments", warn=True)
    a, h = ops
    a = asarray(a) if not isinstance(a, ndarray) else a
    t = loop[-1]
    r = where(U["isnan"](a), np.nan, where(U["equal"](a, 0), h, where(U["less"](a, 0), 0.0, 1.0)))
    r = _cast(r, t)
    if out is not None:
        out = out[0] if isinstance(out, tuple) else out
        return _to_out(r, out)
    return _scalar_if_0d(r, x1, x2)


def float_power(x1, x2, /, *out_, out=None, **kwargs):
    out = _out_arg("float_power", 2, out_, out)
    ops, loop = _ufunc_args(np.float_power, (x1, x2), out, kwargs)
    if ops is None:
        return _numpy(np.float_power, (x1, x2), dict(out=out, **kwargs), why="arguments", warn=True)
    a, b = ops
    if isinstance(a, (bool, int, float)) and isinstance(b, (bool, int, float)):
        return np.float_power(a, b)
    a = float(a) if isinstance(a, (bool, int)) else a
    b = float(b) if isinstance(b, (bool, int)) else b
    out = out[0] if isinstance(out, tuple) else out
    r = U["power"](a, b)
    # float_power's loop is libm's pow: a NaN base gives itself, sign
    # included (power's SIMD loop may flip it), but a positive NaN for an
    # exponent of +-1, and pow(x, 0) is 1.
    if isinstance(a, ndarray) and a.dtype.kind == "f":
        r = where(U["isnan"](a) & (b != 0), where(U["absolute"](b) == 1, U["absolute"](a), a), r)
    if out is not None:
        return _to_out(r, out)
    return r


def modf(x, /, *outs, out=(None, None), **kwargs):
    if outs:  # NumPy's positional outputs
        if len(outs) > 2:
            raise TypeError(f"modf() takes from 1 to 3 positional arguments but {len(outs) + 1} were given")
        out = tuple(outs) + (None,) * (2 - len(outs))
    elif type(out) is ndarray or isinstance(out, np.ndarray):
        out = (out, None)
    if out is None or _builtins.all(o is None for o in out):
        out = None
    ops, loop = _ufunc_args(np.modf, (x,), out, kwargs)
    if ops is None or out is not None:
        kw = dict(kwargs)
        if out is not None:
            kw["out"] = out
        return _numpy(np.modf, (x,), kw, why="arguments", warn=out is not None or bool(kwargs))
    a = _loop_operand(ops[0], loop[0])
    d = where(U["isinf"](a), 0.0, a)
    ip = U["trunc"](a)
    frac = U["copysign"](d - U["trunc"](d), a)
    return _scalar_if_0d(frac, x), _scalar_if_0d(ip, x)


# -- type checks ---------------------------------------------------------------------

def real(val):
    if type(val) is ndarray:
        return val.real
    if isinstance(val, (np.ndarray, list, tuple)):
        a = _arr(val)
        return a.real if type(a) is ndarray else _numpy(np.real, (a,), why=str(a.dtype))
    try:
        return val.real
    except AttributeError:
        a = _arr(val)
        return a.real if type(a) is ndarray else _numpy(np.real, (a,), why=str(a.dtype))


def imag(val):
    if type(val) is ndarray:
        return val.imag
    if isinstance(val, (np.ndarray, list, tuple)):
        a = _arr(val)
        return a.imag if type(a) is ndarray else _numpy(np.imag, (a,), why=str(a.dtype))
    try:
        return val.imag
    except AttributeError:
        a = _arr(val)
        return a.imag if type(a) is ndarray else _numpy(np.imag, (a,), why=str(a.dtype))


def angle(z, deg=False):
    a = _arr(z)
    if type(a) is ndarray and a.dtype.kind == "c":
        r = U["arctan2"](a.imag, a.real)
        return r * (180 / np.pi) if deg else r
    loop = _loop(np.arctan2, (0, a)) if type(a) is ndarray else None
    if loop is None:
        return _numpy(np.angle, (a, deg), why=str(a.dtype))
    r = U["arctan2"](0, a)
    if deg:
        r = r * (180 / np.pi)
    return r


def iscomplex(x):
    ax = _arr(x)
    if type(ax) is not ndarray:
        return _numpy(np.iscomplex, (ax,), why=str(ax.dtype))
    if ax.dtype.kind == "c":
        return ax.imag != 0
    res = zeros(ax.shape, bool)
    return res[()]


def isreal(x):
    return imag(x) == 0


def iscomplexobj(x):
    try:
        dtype = x.dtype
        type_ = dtype.type
    except AttributeError:
        type_ = _arr(x).dtype.type
    return issubclass(type_, np.complexfloating)


def isrealobj(x):
    return not iscomplexobj(x)


def real_if_close(a, tol=100):
    a = _arr(a)
    if type(a) is not ndarray:
        return _numpy(np.real_if_close, (a, tol), why=str(a.dtype))
    if a.dtype.kind == "c":
        if tol > 1:
            tol = np.finfo(a.dtype.type).eps * tol
        if bool(U["absolute"](a.imag).__lt__(tol).all()):
            a = a.real
    return a


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    a = _arr(x)
    vals = (nan, posinf, neginf)
    if type(a) is not ndarray or not _builtins.all(
            v is None or isinstance(v, (bool, int, float, np.integer, np.floating)) for v in vals):
        return _numpy(np.nan_to_num, (x,), dict(copy=copy, nan=nan, posinf=posinf, neginf=neginf),
                      why=str(a.dtype) if type(a) is not ndarray else "arguments", warn=type(a) is ndarray)
    isscalar = a.ndim == 0
    if a.dtype.kind != "f":
        if copy and a is x:
            a = a.copy()
        return a[()] if isscalar else a
    info = np.finfo(a.dtype)
    maxf = info.max if posinf is None else posinf
    minf = info.min if neginf is None else neginf
    t = a.dtype.type
    with np.errstate(over="ignore"):
        nan, maxf, minf = t(nan), t(maxf), t(minf)
    isn = U["isnan"](a)
    r = where(isn, nan, where(isposinf(a), maxf, where(isneginf(a), minf, a)))
    if r.dtype != a.dtype:
        r = r.astype(a.dtype)
    if not copy and a is x:
        a[...] = r
        r = a
    return r[()] if isscalar else r


def asarray_chkfinite(a, dtype=None, order=None):
    r = asarray(a, dtype=dtype, order=order)
    if type(r) is not ndarray:
        return _numpy(np.asarray_chkfinite, (r,), dict(dtype=dtype, order=order), why=str(r.dtype))
    if r.dtype.char in np.typecodes["AllFloat"] and not _all(U["isfinite"](r)):
        raise ValueError("array must not contain infs or NaNs")
    return r


def array_equiv(a1, a2):
    try:
        a1, a2 = _arr(a1), _arr(a2)
    except Exception:
        return False
    if type(a1) is not ndarray or type(a2) is not ndarray:
        return _numpy(np.array_equiv, (a1, a2), why="dtype")
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except Exception:
        return False
    return _builtins.bool(_all(U["equal"](a1, a2)))


# -- statistics ----------------------------------------------------------------------

def average(a, axis=None, weights=None, returned=False, *, keepdims=_NoValue):
    a = _arr(a)
    w = None if weights is None else _arr(weights)
    if type(a) is not ndarray or (w is not None and type(w) is not ndarray):
        return _numpy(np.average, (a, axis, w, returned), dict(keepdims=keepdims), why="dtype")
    if axis is not None:
        axis = _normalize_axis_tuple(axis, a.ndim, argname="axis")
    kw = {} if keepdims is _NoValue else {"keepdims": keepdims}
    if w is None:
        avg = _mean(a, axis, **kw)
        avg_as_array = asarray(avg)
        scl = avg_as_array.dtype.type(a.size / avg_as_array.size)
    else:
        wgt = w
        if a.shape != wgt.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if wgt.shape != tuple(a.shape[ax] for ax in axis):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            wgt = wgt.transpose(tuple(np.argsort(axis)))
            wgt = wgt.reshape(tuple((s if ax in axis else 1) for ax, s in enumerate(a.shape)))
        if a.dtype.kind in "biu":
            result_dtype = np.result_type(a.dtype, wgt.dtype, "f8")
        else:
            result_dtype = np.result_type(a.dtype, wgt.dtype)
        scl = _sum(wgt, axis=axis, dtype=result_dtype, **kw)
        if _any(U["equal"](scl, 0.0)):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = avg_as_array = _sum(U["multiply"](a, wgt, dtype=result_dtype), axis, **kw) / scl
        avg_as_array = asarray(avg_as_array)
    if returned:
        if np.shape(scl) != avg_as_array.shape:
            scl = broadcast_to(scl, avg_as_array.shape).copy()
        return avg, scl
    return avg


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _arr(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _arr(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else np.result_type(m.dtype, y.dtype, np.float64)
    if (not _core.supported_dtype(np.dtype(dtype)) or type(m) is not ndarray
            or (y is not None and type(y) is not ndarray)):
        return _numpy(np.cov, (m, y, rowvar, bias, ddof, fweights, aweights), dict(dtype=dtype), why="dtype")
    X = array(m, ndmin=2, dtype=dtype)
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return zeros((0, 0))
    if y is not None:
        y = array(y, copy=None, ndmin=2, dtype=dtype)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        X = concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        fweights = asarray(fweights, dtype=float)
        if not _all(U["equal"](fweights, U["rint"](fweights))):
            raise TypeError("fweights must be integer")
        if fweights.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if fweights.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if _any(U["less"](fweights, 0)):
            raise ValueError("fweights cannot be negative")
        w = fweights
    if aweights is not None:
        aweights = asarray(aweights, dtype=float)
        if aweights.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aweights.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and aweights")
        if _any(U["less"](aweights, 0)):
            raise ValueError("aweights cannot be negative")
        w = aweights if w is None else w * aweights
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * _sum(w * aweights) / w_sum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = X - avg[:, None]
    X_T = X.T if w is None else (X * w).T
    if X_T.dtype.kind == "c":
        X_T = X_T.conj()
    c = _dot(X, X_T)
    c = U["multiply"](c, U["divide"](1, fact)).astype(c.dtype, copy=False)  # NumPy's c *= (in c's type)
    return c.squeeze()


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if type(c) is not ndarray:
        return _numpy(np.corrcoef, (x, y, rowvar), dict(dtype=dtype), why="dtype")
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    stddev = U["sqrt"](d.real)
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if c.dtype.kind == "c":  # each part clipped to [-1, 1], as NumPy does
        c = c.copy()
        c.real = U["minimum"](U["maximum"](c.real, -1), 1)
        c.imag = U["minimum"](U["maximum"](c.imag, -1), 1)
        return c
    return U["minimum"](U["maximum"](c, -1), 1)


# -- NaN functions -------------------------------------------------------------------

def _nanextreme(npf, red, fill, a, axis, out, keepdims, initial, where_):
    a = _arr(a)
    if type(a) is not ndarray or where_ is not _NoValue or (out is not None and type(out) is not ndarray):
        kw = dict(axis=axis, out=out)
        for k, v in (("keepdims", keepdims), ("initial", initial), ("where", where_)):
            if v is not _NoValue:
                kw[k] = v
        return _numpy(npf, (a,), kw, why=str(a.dtype) if type(a) is not ndarray else "where=",
                      warn=type(a) is ndarray)
    kw = {"keepdims": _builtins.bool(keepdims) if keepdims is not _NoValue else False}
    if initial is not _NoValue:
        kw["initial"] = initial
    if a.dtype.kind != "f":
        return red(a, axis=axis, out=out, **kw)
    isn = U["isnan"](a)
    res = red(where(isn, fill, a), axis=axis, **kw)
    if initial is _NoValue:
        allnan = _all(isn, axis=axis, keepdims=kw["keepdims"])
        res = where(allnan, np.nan, res)
        if res.ndim == 0 and axis is None and not kw["keepdims"]:
            res = res[()]
    if _any(U["isnan"](res)):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    return _to_out(res, out)


def nanmax(a, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
    return _nanextreme(np.nanmax, _max, -np.inf, a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
    return _nanextreme(np.nanmin, _min, np.inf, a, axis, out, keepdims, initial, where)


def _nanarg(npf, red, fill, a, axis, out, keepdims):
    a = _arr(a)
    if type(a) is not ndarray or (out is not None and type(out) is not ndarray):
        return _numpy(npf, (a, axis, out), dict(keepdims=keepdims), why=str(a.dtype))
    kd = False if keepdims is _NoValue else keepdims
    if a.dtype.kind == "f":
        mask = U["isnan"](a)
        if mask.size:
            if _any(_all(mask, axis=axis)):
                raise ValueError("All-NaN slice encountered")
        a = where(mask, fill, a)
    return red(a, axis=axis, out=out, keepdims=kd)


def nanargmax(a, axis=None, out=None, *, keepdims=_NoValue):
    return _nanarg(np.nanargmax, _argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=_NoValue):
    return _nanarg(np.nanargmin, _argmin, np.inf, a, axis, out, keepdims)


def _safe_divide(a, b):
    """a / b cast to a's type, where b <= 0 never divides (those results are
    replaced by the caller), so no floating-point flag is raised."""
    r = U["divide"](a, where(U["less_equal"](b, 0), 1, b))
    t = a.dtype
    return r.astype(t) if r.dtype != t else r


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue, mean=_NoValue,
           correction=_NoValue):
    return _nanvar(np.nanvar, a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NoValue, *, where=_NoValue, mean=_NoValue,
           correction=_NoValue):
    return _nanvar(np.nanstd, a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


def _nanvar(npf, a, axis, dtype, out, ddof, keepdims, where_, mean_, correction, std):
    arr = _arr(a)
    if (type(arr) is not ndarray or where_ is not _NoValue or mean_ is not _NoValue
            or (out is not None and type(out) is not ndarray)
            or (dtype is not None and not _core.supported_dtype(np.dtype(dtype)))):
        kw = dict(axis=axis, dtype=dtype, out=out, ddof=ddof)
        for k, v in (("keepdims", keepdims), ("where", where_), ("mean", mean_), ("correction", correction)):
            if v is not _NoValue:
                kw[k] = v
        return _numpy(npf, (arr,), kw, why=str(arr.dtype) if type(arr) is not ndarray else "arguments",
                      warn=type(arr) is ndarray)
    kd = False if keepdims is _NoValue else keepdims
    if arr.dtype.kind != "f":
        kw = {} if correction is _NoValue else {"correction": correction}
        v = _var(arr, axis=axis, dtype=dtype, ddof=ddof, keepdims=kd, **kw)
        return _to_out(U["sqrt"](v) if std else v, out)
    if dtype is not None:
        dtype = np.dtype(dtype)
    if dtype is not None and not issubclass(dtype.type, np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")
    if out is not None and not issubclass(out.dtype.type, np.inexact):
        raise TypeError("If a is inexact, then out must be inexact")
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    mask = U["isnan"](arr)
    arr = where(mask, 0, arr)
    cnt = _sum(U["logical_not"](mask), axis=axis, dtype=np.intp, keepdims=True)
    avg = _sum(arr, axis=axis, dtype=dtype, keepdims=True)
    avg = _safe_divide(avg, cnt)
    d = U["subtract"](arr, avg)
    if d.dtype != arr.dtype:
        d = d.astype(arr.dtype)
    d = where(mask, 0, d)
    sqr = U["multiply"](d, d)
    var = _sum(sqr, axis=axis, dtype=dtype, keepdims=kd)
    var = asarray(var)
    if var.ndim < cnt.ndim:
        cnt = cnt.squeeze(axis)
    dof = cnt - ddof
    isbad = U["less_equal"](dof, 0)
    var = _safe_divide(var, dof)
    if _any(isbad):
        warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=3)
        var = where(isbad, np.nan, var)
    if std:
        var = U["sqrt"](var)
    if var.ndim == 0:
        var = var[()]
    return _to_out(var, out)


def _nan_acc(npf, acc, fill, a, axis, dtype, out):
    a = _arr(a)
    if type(a) is not ndarray:
        return _numpy(npf, (a, axis, dtype, out), why=str(a.dtype))
    if a.dtype.kind == "f":
        a = where(U["isnan"](a), fill, a)
    return acc(a, axis=axis, dtype=dtype, out=out)


def nancumsum(a, axis=None, dtype=None, out=None):
    return _nan_acc(np.nancumsum, _cumsum, 0, a, axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return _nan_acc(np.nancumprod, _cumprod, 1, a, axis, dtype, out)


def _cumulative(npf, acc, identity, x, axis, dtype, out, include_initial):
    x = _arr(x)
    if type(x) is not ndarray or out is not None:
        return _numpy(npf, (x,), dict(axis=axis, dtype=dtype, out=out, include_initial=include_initial),
                      why=str(x.dtype) if type(x) is not ndarray else "out=", warn=type(x) is ndarray)
    if x.ndim == 0:
        x = x.reshape(1)  # NumPy's atleast_1d
    if axis is None:
        if x.ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    axis = _normalize_axis_index(axis, x.ndim)
    r = acc(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(r.shape)
        shape[axis] = 1
        r = concatenate((zeros(tuple(shape), r.dtype) + identity if identity else zeros(tuple(shape), r.dtype),
                         r), axis=axis)
    return r


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative(np.cumulative_sum, _cumsum, 0, x, axis, dtype, out, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative(np.cumulative_prod, _cumprod, 1, x, axis, dtype, out, include_initial)


# -- differences and integrals -------------------------------------------------------

def gradient(f, *varargs, axis=None, edge_order=1):
    f = _arr(f)
    if type(f) is not ndarray or f.dtype.kind not in "biuf" or _builtins.any(
            type(_arr(v)) is not ndarray for v in varargs):
        return _numpy(np.gradient, (f,) + varargs, dict(axis=axis, edge_order=edge_order), why="dtype")
    N = f.ndim
    axes = tuple(range(N)) if axis is None else _normalize_axis_tuple(axis, N)
    len_axes = len(axes)
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len_axes
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len_axes
    elif n == len_axes:
        dx = list(varargs)
        for i, distances in enumerate(dx):
            if np.ndim(distances) == 0:
                continue
            distances = _arr(distances)
            if distances.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(distances) != f.shape[axes[i]]:
                raise ValueError("when 1d, distances must match the length of the corresponding dimension")
            if distances.dtype.kind in "iu":
                distances = distances.astype(np.float64)
            diffx = diff(distances)
            if _all(U["equal"](diffx, diffx[0:1])):
                diffx = diffx[0]
            dx[i] = diffx
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    outvals = []
    slice1 = [slice(None)] * N
    slice2 = [slice(None)] * N
    slice3 = [slice(None)] * N
    slice4 = [slice(None)] * N
    otype = f.dtype
    if otype.kind != "f":
        if otype.kind in "iu":
            f = f.astype(np.float64)
        otype = np.dtype(np.float64)
    for ax, ax_dx in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                             "elements are required.")
        out = empty_like(f, dtype=otype)  # f's memory order, as NumPy's
        uniform_spacing = np.ndim(ax_dx) == 0
        slice1[ax] = slice(1, -1)
        slice2[ax] = slice(None, -2)
        slice3[ax] = slice(1, -1)
        slice4[ax] = slice(2, None)
        if uniform_spacing:
            out[tuple(slice1)] = (f[tuple(slice4)] - f[tuple(slice2)]) / (2. * ax_dx)
        else:
            dx1 = ax_dx[0:-1]
            dx2 = ax_dx[1:]
            a = -(dx2) / (dx1 * (dx1 + dx2))
            b = (dx2 - dx1) / (dx1 * dx2)
            c = dx1 / (dx2 * (dx1 + dx2))
            shape = [1] * N
            shape[ax] = -1
            a = a.reshape(shape)
            b = b.reshape(shape)
            c = c.reshape(shape)
            out[tuple(slice1)] = a * f[tuple(slice2)] + b * f[tuple(slice3)] + c * f[tuple(slice4)]
        if edge_order == 1:
            slice1[ax] = slice(0, 1)
            slice2[ax] = slice(1, 2)
            slice3[ax] = slice(0, 1)
            dx_0 = ax_dx if uniform_spacing else ax_dx[0:1]
            out[tuple(slice1)] = (f[tuple(slice2)] - f[tuple(slice3)]) / dx_0
            slice1[ax] = slice(-1, None)
            slice2[ax] = slice(-1, None)
            slice3[ax] = slice(-2, -1)
            dx_n = ax_dx if uniform_spacing else ax_dx[-1:]
            out[tuple(slice1)] = (f[tuple(slice2)] - f[tuple(slice3)]) / dx_n
        else:
            slice1[ax] = slice(0, 1)
            slice2[ax] = slice(0, 1)
            slice3[ax] = slice(1, 2)
            slice4[ax] = slice(2, 3)
            if uniform_spacing:
                a = -1.5 / ax_dx
                b = 2. / ax_dx
                c = -0.5 / ax_dx
            else:
                dx1 = ax_dx[0:1]
                dx2 = ax_dx[1:2]
                a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
                b = (dx1 + dx2) / (dx1 * dx2)
                c = - dx1 / (dx2 * (dx1 + dx2))
            out[tuple(slice1)] = a * f[tuple(slice2)] + b * f[tuple(slice3)] + c * f[tuple(slice4)]
            slice1[ax] = slice(-1, None)
            slice2[ax] = slice(-3, -2)
            slice3[ax] = slice(-2, -1)
            slice4[ax] = slice(-1, None)
            if uniform_spacing:
                a = 0.5 / ax_dx
                b = -2. / ax_dx
                c = 1.5 / ax_dx
            else:
                dx1 = ax_dx[-2:-1]
                dx2 = ax_dx[-1:]
                a = (dx2) / (dx1 * (dx1 + dx2))
                b = - (dx2 + dx1) / (dx1 * dx2)
                c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
            out[tuple(slice1)] = a * f[tuple(slice2)] + b * f[tuple(slice3)] + c * f[tuple(slice4)]
        outvals.append(out)
        slice1[ax] = slice(None)
        slice2[ax] = slice(None)
        slice3[ax] = slice(None)
        slice4[ax] = slice(None)
    if len_axes == 1:
        return outvals[0]
    return tuple(outvals)


def ediff1d(ary, to_end=None, to_begin=None):
    a = _arr(ary)
    if type(a) is not ndarray:
        return _numpy(np.ediff1d, (a, to_end, to_begin), why=str(a.dtype))
    a = a.reshape(-1)
    dtype_req = a.dtype
    if to_begin is None and to_end is None:
        return a[1:] - a[:-1]
    parts = []
    for extra, name in ((to_begin, "to_begin"), (to_end, "to_end")):
        if extra is None:
            parts.append(None)
            continue
        e = _arr(extra)
        if type(e) is not ndarray:
            return _numpy(np.ediff1d, (a, to_end, to_begin), why=str(e.dtype))
        if not np.can_cast(e.dtype, dtype_req, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        parts.append(e.reshape(-1))
    d = U["subtract"](a[1:], a[:-1])
    seq = [p.astype(dtype_req) for p in (parts[0],) if p is not None] + [d] + \
          [p.astype(dtype_req) for p in (parts[1],) if p is not None]
    return concatenate(seq)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _arr(y)
    xa = None if x is None else _arr(x)
    if type(y) is not ndarray or (xa is not None and type(xa) is not ndarray):
        return _numpy(np.trapezoid, (y, xa, dx, axis), why="dtype")
    if xa is None:
        d = dx
    else:
        if xa.ndim == 1:
            d = diff(xa)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(xa, axis=axis)
    nd = y.ndim
    slice1 = [slice(None)] * nd
    slice2 = [slice(None)] * nd
    slice1[axis] = slice(1, None)
    slice2[axis] = slice(None, -1)
    return _sum(d * (y[tuple(slice1)] + y[tuple(slice2)]) / 2.0, axis)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    p = _arr(p)
    if type(p) is not ndarray or not isinstance(period, (int, float, np.integer, np.floating)) or not (
            discont is None or isinstance(discont, (int, float, np.integer, np.floating))):
        return _numpy(np.unwrap, (p, discont, axis), dict(period=period),
                      why=str(p.dtype) if type(p) is not ndarray else "arguments", warn=type(p) is ndarray)
    nd = p.ndim
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    slice1 = [slice(None, None)] * nd
    slice1[axis] = slice(1, None)
    slice1 = tuple(slice1)
    dtype = np.result_type(dd.dtype, period)
    if not _core.supported_dtype(dtype):
        return _numpy(np.unwrap, (p, discont, axis), dict(period=period), why=str(dtype))
    if np.issubdtype(dtype, np.integer):
        interval_high, rem = divmod(period, 2)
        boundary_ambiguous = rem == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    ddmod = U["remainder"](dd - interval_low, period) + interval_low
    if boundary_ambiguous:
        ddmod = where(U["logical_and"](U["equal"](ddmod, interval_low), U["greater"](dd, 0)),
                      interval_high, ddmod).astype(ddmod.dtype)
    ph_correct = ddmod - dd
    ph_correct = where(U["less"](U["absolute"](dd), discont), 0, ph_correct).astype(ph_correct.dtype)
    up = array(p, copy=True, dtype=dtype)
    up[slice1] = p[slice1] + _cumsum(ph_correct, axis)
    return up


# -- products ------------------------------------------------------------------------

def kron(a, b):
    b = _arr(b)
    a = _arr(a)
    if type(a) is not ndarray or type(b) is not ndarray:
        return _numpy(np.kron, (a, b), why="dtype")
    if a.ndim < b.ndim:
        a = a.reshape((1,) * (b.ndim - a.ndim) + a.shape)
    ndb, nda = b.ndim, a.ndim
    nd = _builtins.max(ndb, nda)
    if nda == 0 or ndb == 0:
        return U["multiply"](a, b)
    as_ = a.shape
    bs = b.shape
    as_ = (1,) * _builtins.max(0, ndb - nda) + as_
    bs = (1,) * _builtins.max(0, nda - ndb) + bs
    a_arr = a.reshape(as_)
    b_arr = b.reshape(bs)
    # interleave: a on the even axes of a (2*nd)-d product, b on the odd ones
    a_arr = a_arr.reshape(tuple(s for n in as_ for s in (n, 1)))
    b_arr = b_arr.reshape(tuple(s for n in bs for s in (1, n)))
    result = U["multiply"](a_arr, b_arr)
    return result.reshape(tuple(int(x) * int(y) for x, y in zip(as_, bs)))


def _gufunc_check(npf, args, kwargs):
    arrs = [_arr(x) for x in args]
    if kwargs or _builtins.any(type(x) is not ndarray for x in arrs):
        return None
    return arrs


def vecdot(x1, x2, /, *out_, out=None, **kwargs):
    out = _out_arg("vecdot", 2, out_, out)
    kw = dict(kwargs)
    axis = kw.pop("axis", -1)
    arrs = _gufunc_check(np.vecdot, (x1, x2), kw)
    if arrs is None or (out is not None and type(out) is not ndarray):
        return _numpy(np.vecdot, (x1, x2), dict(out=out, **kwargs), why="arguments", warn=True)
    a, b = arrs
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(f"vecdot: Input operand {i} does not have enough dimensions (has 0, gufunc core with "
                             "signature (n),(n)->() requires 1)")
    a = moveaxis(a, _normalize_axis_index(axis, a.ndim), -1)
    b = moveaxis(b, _normalize_axis_index(axis, b.ndim), -1)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"vecdot: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n),(n)->() (size {b.shape[-1]} is different from {a.shape[-1]})")
    if a.dtype.kind == "c":  # vecdot conjugates the first vector
        a = a.conj()
    r = _matmul(a[..., None, :], b[..., :, None])[..., 0, 0]
    return _to_out(_scalar_if_0d(r, r), out)


def _check_core(name, signature, a, b, need_a, need_b, b_axis):
    """NumPy's gufunc errors: an operand with too few dimensions, or a core
    dimension n that differs (a's last, b's `b_axis`)."""
    if a.ndim < need_a or b.ndim < need_b:
        i, n, need = (0, a.ndim, need_a) if a.ndim < need_a else (1, b.ndim, need_b)
        raise ValueError(f"{name}: Input operand {i} does not have enough dimensions (has {n}, gufunc core with "
                         f"signature {signature} requires {need})")
    if a.shape[-1] != b.shape[b_axis]:
        raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"{signature} (size {b.shape[b_axis]} is different from {a.shape[-1]})")


def matvec(x1, x2, /, *out_, out=None, **kwargs):
    out = _out_arg("matvec", 2, out_, out)
    arrs = _gufunc_check(np.matvec, (x1, x2), kwargs)
    if arrs is None or (out is not None and type(out) is not ndarray):
        return _numpy(np.matvec, (x1, x2), dict(out=out, **kwargs), why="arguments", warn=True)
    a, b = arrs
    _check_core("matvec", "(m,n),(n)->(m)", a, b, 2, 1, -1)
    r = _matmul(a, b[..., :, None])[..., 0]
    return _to_out(r, out)


def vecmat(x1, x2, /, *out_, out=None, **kwargs):
    out = _out_arg("vecmat", 2, out_, out)
    arrs = _gufunc_check(np.vecmat, (x1, x2), kwargs)
    if arrs is None or (out is not None and type(out) is not ndarray):
        return _numpy(np.vecmat, (x1, x2), dict(out=out, **kwargs), why="arguments", warn=True)
    a, b = arrs
    _check_core("vecmat", "(n),(n,m)->(m)", a, b, 1, 2, -2)
    r = _matmul(a[..., None, :], b)[..., 0, :]
    return _to_out(r, out)



# The three take NumPy's gufunc arguments (out, axes, axis, keepdims, casting,
# order, dtype, subok, signature): their signatures are NumPy's.
for _f in (vecdot, matvec, vecmat):
    _f.__signature__ = inspect.signature(getattr(np, _f.__name__))
del _f

def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a = _arr(a)
    b = _arr(b)
    if type(a) is not ndarray or type(b) is not ndarray:
        return _numpy(np.cross, (a, b, axisa, axisb, axisc, axis), why="dtype")
    if axis is not None:
        axisa, axisb, axisc = (axis,) * 3
    axisa = _normalize_axis_index(axisa, a.ndim, msg_prefix="axisa")
    axisb = _normalize_axis_index(axisb, b.ndim, msg_prefix="axisb")
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    msg = "incompatible dimensions for cross product\n(dimension must be 2 or 3)"
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(msg)
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                      "instead. (deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=2)
    shape = np.broadcast_shapes(a[..., 0].shape, b[..., 0].shape)
    if a.shape[-1] == 3 or b.shape[-1] == 3:
        shape += (3,)
        axisc = _normalize_axis_index(axisc, len(shape), msg_prefix="axisc")
    dtype = np.promote_types(a.dtype, b.dtype)
    if dtype.kind == "b":
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    # (..., 1) slices keep every operand an array (no NumPy scalar arithmetic)
    a0, a1 = a[..., 0:1], a[..., 1:2]
    a2 = a[..., 2:3] if a.shape[-1] == 3 else None
    b0, b1 = b[..., 0:1], b[..., 1:2]
    b2 = b[..., 2:3] if b.shape[-1] == 3 else None

    def mul(x, y):
        return U["multiply"](x, y).astype(dtype, copy=False)

    def sub(x, y):
        return U["subtract"](x, y).astype(dtype, copy=False)

    if a.shape[-1] == 2 and b.shape[-1] == 2:
        r = sub(mul(a0, b1), mul(a1, b0))
        return broadcast_to(r, shape + (1,)).reshape(shape)
    if a.shape[-1] == 2:
        c0 = mul(a1, b2)
        c1 = U["negative"](mul(a0, b2))
        c2 = sub(mul(a0, b1), mul(a1, b0))
    elif b.shape[-1] == 2:
        c0 = U["negative"](mul(a2, b1))
        c1 = mul(a2, b0)
        c2 = sub(mul(a0, b1), mul(a1, b0))
    else:
        c0 = sub(mul(a1, b2), mul(a2, b1))
        c1 = sub(mul(a2, b0), mul(a0, b2))
        c2 = sub(mul(a0, b1), mul(a1, b0))
    cs = [broadcast_to(c, shape[:-1] + (1,)) for c in (c0, c1, c2)]
    cp = concatenate(cs, axis=-1)
    return moveaxis(cp, -1, axisc)


# -- polynomials ---------------------------------------------------------------------

def _is_poly1d(*ps):
    return _builtins.any(isinstance(p, np.poly1d) for p in ps)


def polyval(p, x):
    if _is_poly1d(p, x):
        return _numpy(np.polyval, (p, x), why="poly1d")
    p = _arr(p)
    x = _arr(x)
    if type(p) is not ndarray or type(x) is not ndarray:
        return _numpy(np.polyval, (p, x), why="dtype")
    y = zeros_like(x)
    for i in range(len(p)):
        y = y * x + p[i]
    return y


def _atleast_1d(a):
    a = _arr(a)
    if type(a) is ndarray and a.ndim == 0:
        a = a.reshape(1)
    return a


def _polyaddsub(npf, op, a1, a2):
    if _is_poly1d(a1, a2):
        return _numpy(npf, (a1, a2), why="poly1d")
    a1 = _atleast_1d(a1)
    a2 = _atleast_1d(a2)
    if type(a1) is not ndarray or type(a2) is not ndarray:
        return _numpy(npf, (a1, a2), why="dtype")
    diff_ = len(a2) - len(a1)
    if diff_ == 0:
        return op(a1, a2)
    if diff_ > 0:
        zr = zeros(diff_, a1.dtype)
        a1 = concatenate((zr, a1))
    else:
        zr = zeros(abs(diff_), a2.dtype)
        a2 = concatenate((zr, a2))
    return op(a1, a2)


def polyadd(a1, a2):
    return _polyaddsub(np.polyadd, U["add"], a1, a2)


def polysub(a1, a2):
    return _polyaddsub(np.polysub, U["subtract"], a1, a2)


def polymul(a1, a2):
    if _is_poly1d(a1, a2):
        return _numpy(np.polymul, (a1, a2), why="poly1d")
    a1, a2 = _atleast_1d(a1), _atleast_1d(a2)
    if type(a1) is not ndarray or type(a2) is not ndarray:
        return _numpy(np.polymul, (a1, a2), why="dtype")
    return _convolve(_poly_trim(a1), _poly_trim(a2))


def _poly_trim(p):
    """poly1d's coefficients: leading zeros dropped ([0] if all are)."""
    nz = np.flatnonzero(np.asarray(p))
    if len(nz) == 0:
        return zeros(1, dtype=p.dtype) if p.ndim == 1 else p
    return p[int(nz[0]):] if nz[0] else p


def polyder(p, m=1):
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    if _is_poly1d(p):
        return _numpy(np.polyder, (p, m), why="poly1d")
    p = _arr(p)
    if type(p) is not ndarray:
        return _numpy(np.polyder, (p, m), why=str(p.dtype))
    n = len(p) - 1
    y = p[:-1] * arange(n, 0, -1)
    if m == 0:
        return p
    return polyder(y, m - 1)


def polyint(p, m=1, k=None):
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if _is_poly1d(p):
        return _numpy(np.polyint, (p, m, k), why="poly1d")
    if k is None:
        k = np.zeros(m, float)
    k = np.atleast_1d(np.asarray(_fallback.to_numpy(k, [])))
    if len(k) == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _arr(p)
    if type(p) is not ndarray or not _core.supported_dtype(k.dtype):
        return _numpy(np.polyint, (p, m, k), why="dtype")
    if m == 0:
        return p
    q = U["divide"](p, arange(len(p), 0, -1))
    y = concatenate((q, asarray(k[:1]).astype(np.result_type(q.dtype, k.dtype))))
    return polyint(y, m - 1, k=k[1:])


def vander(x, N=None, increasing=False):
    x = _arr(x)
    if x.ndim != 1:  # (NumPy checks x before it reads N)
        raise ValueError("x must be a one-dimensional array or sequence.")
    if N is not None:
        N = operator.index(N)
    if type(x) is not ndarray:
        return _numpy(np.vander, (x, N, increasing), why=str(x.dtype))
    if N is None:
        N = len(x)
    dt = np.promote_types(x.dtype, int)
    n = len(x)
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    if N == 0:
        return empty((n, 0), dt)
    cols = [ones((n, 1), dt)]
    if N > 1:
        xs = broadcast_to(x.astype(dt)[:, None], (n, N - 1))
        powers = _cumprod(xs, axis=1)
        cols.append(powers if increasing else powers[:, ::-1])
    if not increasing:
        cols.reverse()
    # a fresh C-ordered result, as NumPy's
    return concatenate(cols, axis=1) if len(cols) > 1 else cols[0]


# -- ranges --------------------------------------------------------------------------

def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    s0, s1 = _arr(start), _arr(stop)
    dt = None
    if type(s0) is ndarray and type(s1) is ndarray:
        dt = np.result_type(s0.dtype if s0.ndim else np.asarray(s0)[()], s1.dtype if s1.ndim else
                            np.asarray(s1)[()], float(num), np.zeros((), dtype))
    if (dt is None or not _core.supported_dtype(dt) or s0.ndim or s1.ndim or axis != 0
            or (dtype is not None and not _core.supported_dtype(np.dtype(dtype)))):
        return _numpy(np.geomspace, (start, stop, num, endpoint, dtype, axis),
                      why="arguments" if dt is not None and _core.supported_dtype(dt) else "dtype",
                      warn=dt is not None and _core.supported_dtype(dt))
    # scalars: NumPy's algorithm on the two values, then one recorded power
    a, b = np.asarray(s0)[()], np.asarray(s1)[()]
    if a == 0 or b == 0:
        raise ValueError("Geometric sequence cannot include zero")
    dtype = dt if dtype is None else np.dtype(dtype)
    a = np.asarray(a).astype(dt)[()]
    b = np.asarray(b).astype(dt)[()]
    out_sign = np.sign(a)
    a = a / out_sign
    b = b / out_sign
    log_start = np.log10(a)
    log_stop = np.log10(b)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    y = arange(0, num, dtype=dt)
    delta = log_stop - log_start
    if div > 0:
        step = delta / div
        y = (y / div) * delta if step == 0 else y * step
    else:
        y = y * delta
    y = y + log_start
    if endpoint and num > 1:
        y[-1] = log_stop
    result = U["power"](dt.type(10.0), y)
    if num > 0:
        result[0] = a
        if num > 1 and endpoint:
            result[-1] = b
    result = result * out_sign
    return result.astype(dtype, copy=False)


for _name in __all__:
    _doc(globals()[_name], getattr(np, _name))
del _name


# numpy.linalg's array-API forms (the package installs them in numfuse.linalg).
def linalg_vecdot(x1, x2, /, *, axis=-1):
    """numpy.linalg.vecdot: the dot products of the vectors along `axis`
    (the first conjugated)."""
    return vecdot(x1, x2, axis=axis)


def linalg_cross(x1, x2, /, *, axis=-1):
    """numpy.linalg.cross: cross products of 3-element vectors only."""
    x1, x2 = asarray(x1), asarray(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
                         f"{x1.shape[axis]} and {x2.shape[axis]} dimensional instead.")
    return cross(x1, x2, axis=axis)


for _f in (linalg_vecdot, linalg_cross):
    _f.__name__ = _f.__qualname__ = _f.__name__[len("linalg_"):]
    _f.__module__ = "numfuse.linalg"
del _f

"""Reductions. Each is one MDH point-wise combine (sum, prod, max, min, any,
all, argmax, argmin); mean/var/std compose them as NumPy does, so their
elementwise parts fuse into the reductions."""

import operator
import warnings

import numpy as np

from . import _core, _fallback
from ._creation import asarray
from ._manip import diagonal, where as _where
from ._ufuncs import UFUNCS

ndarray = _core.ndarray
_BOOL = np.dtype(bool)
_R = _core.REDUCE_OPS
_NoValue = np._NoValue


def _axes(axis, ndim):
    if axis is None:
        return None
    if isinstance(axis, tuple):
        return tuple(operator.index(a) for a in axis)
    return (operator.index(axis),)


def _native(a):
    return type(a) is ndarray or isinstance(a, (list, tuple, int, float, bool, np.ndarray, np.generic))


def _reduce_fallback(op, a, axis, dtype, out, keepdims, initial, where):
    kw = dict(axis=axis, out=out, keepdims=keepdims)
    if op in ("sum", "prod"):
        kw["dtype"] = dtype
    if initial is not _NoValue:
        kw["initial"] = initial
    if where is not True:
        kw["where"] = where
    return _fallback.call_numpy(getattr(np, op), (a,), kw, f"numpy.{op}" + (" (where=)" if where is not True else ""))


def _zero_d_axis(a, axis):
    """ufunc.reduce accepts axis=0 or -1 (an int, not a tuple) on a 0-d array."""
    if a.ndim == 0 and axis is not None and not isinstance(axis, tuple) and operator.index(axis) in (0, -1):
        return None
    return axis


def _keepdims(k):
    """NumPy's reductions' keepdims: an integer (a bool is one), checked
    before the axis; a float or anything else is a TypeError."""
    if type(k) is bool:
        return k
    if isinstance(k, float):
        raise TypeError("integer argument expected, got float")
    return operator.index(k) != 0


def reduce_op(op, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    keepdims = _keepdims(keepdims)
    a = asarray(a)
    axis = _zero_d_axis(a, axis)
    if type(a) is not ndarray or where is not True or (out is not None and type(out) is not ndarray):
        return _reduce_fallback(op, a, axis, dtype, out, keepdims, initial, where)
    init = None if initial is _NoValue else initial
    r = _core.reduce(_R[op], a, _axes(axis, a.ndim), bool(keepdims), dtype, out, init)
    if r is NotImplemented:
        return _reduce_fallback(op, a, axis, dtype, out, keepdims, initial, where)
    return r


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return reduce_op("sum", a, axis, dtype, out, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return reduce_op("prod", a, axis, dtype, out, keepdims, initial, where)


def max(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return reduce_op("max", a, axis, None, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return reduce_op("min", a, axis, None, out, keepdims, initial, where)


amax = max
amin = min


def any(a, axis=None, out=None, keepdims=False, *, where=True):
    return reduce_op("any", a, axis, None, out, keepdims, _NoValue, where)


def all(a, axis=None, out=None, keepdims=False, *, where=True):
    return reduce_op("all", a, axis, None, out, keepdims, _NoValue, where)


def _arg(op, a, axis, out, keepdims):
    a = asarray(a)
    axis = _zero_d_axis(a, axis)
    if type(a) is not ndarray or (out is not None and type(out) is not ndarray) or a.dtype.kind == "c":
        return _fallback.call_numpy(getattr(np, op), (a,), dict(axis=axis, out=out, keepdims=keepdims),
                                    f"numpy.{op}" + (" (complex)" if type(a) is ndarray else ""))
    if axis is None:
        r = _core.reduce(_R[op], a, None, False, None, None, None)
        if keepdims:
            r = asarray(r).reshape((1,) * a.ndim)
        if out is not None:
            out[...] = r
            return out
        return r
    return _core.reduce(_R[op], a, (operator.index(axis),), bool(keepdims), None, out, None)


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg("argmin", a, axis, out, keepdims)


def _count(a, axis):
    if axis is None:
        return a.size
    n = 1
    for ax in _axes(axis, a.ndim):
        if not -a.ndim <= ax < a.ndim:
            raise np.exceptions.AxisError(ax, a.ndim)
        n *= a.shape[ax]
    return n


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    a = asarray(a)
    if type(a) is not ndarray or where is not True:
        return _fallback.call_numpy(np.mean, (a,), dict(axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                                                        where=where), "numpy.mean")
    rcount = _count(a, axis)
    if rcount == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    if dtype is None and a.dtype.kind in "biu":
        dtype = np.float64
    s = sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    r = UFUNCS["divide"](s, rcount)
    if dtype is not None and r.dtype != np.dtype(dtype):
        r = r.astype(dtype)
    if out is not None:
        out[...] = r
        return out
    return r


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    a = asarray(a)
    if type(a) is not ndarray or where is not True or mean is not _NoValue:
        kw = dict(axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where)
        if mean is not _NoValue:
            kw["mean"] = mean
        return _fallback.call_numpy(np.var, (a,), kw, "numpy.var")
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    rcount = _count(a, axis)
    if not isinstance(ddof, (int, float, np.number)):
        np.less_equal(np.intp(rcount), ddof)  # (NumPy's comparison: its error for a ddof it cannot compare)
    if ddof >= rcount:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
    if dtype is None and a.dtype.kind in "biu":
        dtype = np.float64
    arrmean = sum(a, axis=axis, dtype=dtype, keepdims=True)
    arrmean = UFUNCS["divide"](arrmean, rcount)
    x = UFUNCS["subtract"](a, arrmean)
    if x.dtype.kind == "c":  # |x|^2, as NumPy: re*re + im*im, a real sum
        re, im = x.real, x.imag
        x = UFUNCS["add"](UFUNCS["multiply"](re, re), UFUNCS["multiply"](im, im))
        if dtype is not None and np.dtype(dtype).kind == "c":
            dtype = np.dtype(dtype).type(0).real.dtype
    else:
        x = UFUNCS["multiply"](x, x)
    ret = sum(x, axis=axis, dtype=dtype, keepdims=keepdims)
    ret = UFUNCS["divide"](ret, builtin_max(rcount - ddof, 0))
    if dtype is not None and ret.dtype != np.dtype(dtype):
        ret = ret.astype(dtype)
    if out is not None:
        out[...] = ret
        return out
    return ret


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    a = asarray(a)
    if type(a) is not ndarray or where is not True or mean is not _NoValue:
        kw = dict(axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where)
        if mean is not _NoValue:
            kw["mean"] = mean
        return _fallback.call_numpy(np.std, (a,), kw, "numpy.std")
    v = var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, correction=correction)
    r = UFUNCS["sqrt"](v)
    if out is not None:
        out[...] = r
        return out
    return r


def count_nonzero(a, axis=None, *, keepdims=False):
    if type(a) is ndarray and a.dtype is _BOOL and axis is None and keepdims is False:
        return a.sum()  # (a mask: its sum, in int64)
    a = asarray(a)
    r = sum(UFUNCS["not_equal"](a, 0), axis=axis, keepdims=keepdims)
    return r


def ptp(a, axis=None, out=None, keepdims=False):
    a = asarray(a)
    r = UFUNCS["subtract"](max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))
    if out is not None:
        out[...] = r
        return out
    return r


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    a = asarray(a)
    if a.dtype.kind == "f":
        a = _where_nan(a, 0)
    return sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    a = asarray(a)
    if a.dtype.kind == "f":
        a = _where_nan(a, 1)
    return prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    a = asarray(a)
    if a.dtype.kind != "f" or where is not True:
        return mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    valid = UFUNCS["logical_not"](UFUNCS["isnan"](a))
    s = sum(_where_nan(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)
    n = sum(valid, axis=axis, keepdims=keepdims)
    # An empty (or all-NaN) slice is NaN with NumPy's own warning, not a 0/0
    # (NumPy divides with invalid ignored): the division never sees a 0.
    empty = UFUNCS["equal"](n, 0)
    r = _where(empty, np.nan, UFUNCS["divide"](s, _where(empty, 1, n)))
    if bool(any(empty)):
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    if r.dtype != a.dtype and dtype is None:
        r = r.astype(a.dtype)
    if out is not None:
        out[...] = r
        return out
    return r


def _where_nan(a, value):
    return _where(UFUNCS["isnan"](a), value, a)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    a = asarray(a)
    if type(a) is not ndarray:
        return _fallback.call_numpy(np.trace, (a, offset, axis1, axis2, dtype, out), {},
                                    f"numpy.trace ({a.dtype})", warn=False)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


import builtins as _builtins  # noqa: E402

builtin_max = _builtins.max


def _accumulate_dtype(a, op, dtype):
    """NumPy's result type for cumsum/cumprod: `dtype`, else the input's,
    with booleans and integers narrower than the platform integer widened."""
    if dtype is not None:
        return np.dtype(dtype)
    t = a.dtype
    if t.kind == "b" or (t.kind == "i" and t.itemsize < 8):
        return np.dtype(np.int64)
    if t.kind == "u" and t.itemsize < 8:
        return np.dtype(np.uint64)
    return t


def _accumulate(op, npname, a, axis=None, dtype=None, out=None):
    """cumsum / cumprod: one MDH scan (prefix-sum combine along `axis`)."""
    a = asarray(a)
    if type(a) is not ndarray or (out is not None and type(out) is not ndarray):
        return _fallback.call_numpy(getattr(np, npname), (a,), dict(axis=axis, dtype=dtype, out=out),
                                    f"numpy.{npname}")
    t = _accumulate_dtype(a, op, dtype)
    # out= of another type: NumPy's casting rules for accumulate apply.
    if not _core.supported_dtype(t) or (out is not None and out.dtype != t):
        return _fallback.call_numpy(getattr(np, npname), (a,), dict(axis=axis, dtype=dtype, out=out),
                                    f"numpy.{npname}")
    if axis is None:
        if out is not None and out.ndim != 1:
            raise ValueError("provided out is the wrong size for the accumulation.")
        a = a.reshape(-1)
        axis = 0
    elif a.ndim == 0:
        # NumPy treats a 0-d input as 1-d (and reports axis errors against ndim 1).
        a = a.reshape(1)
    axis = operator.index(axis)
    r = _core.accumulate(_R[op], a, axis, t, out)
    if r is NotImplemented:
        return _fallback.call_numpy(getattr(np, npname), (a,), dict(axis=axis, dtype=dtype, out=out),
                                    f"numpy.{npname}")
    return r


def cumsum(a, axis=None, dtype=None, out=None):
    return _accumulate("sum", "cumsum", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    return _accumulate("prod", "cumprod", a, axis, dtype, out)


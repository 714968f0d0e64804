"""numfuse.linalg: products are recorded (matmul is an MDH reduction over k,
or a BLAS routine for floating types); factorizations and solvers run with
NumPy/LAPACK through the fallback."""

import operator

import numpy as np

from . import _core, _fallback
from ._creation import asarray

ndarray = _core.ndarray
LinAlgError = np.linalg.LinAlgError


def _result_dtype(a, b):
    return np.result_type(a.dtype, b.dtype)


def matmul(x1, x2, /, out=None, *, casting="same_kind", order="K", dtype=None, subok=True, axes=None, axis=None):
    # Fast path: two numfuse arrays, NumPy's defaults (1-D handling in C++).
    if (type(x1) is ndarray and type(x2) is ndarray and dtype is None and casting == "same_kind"
            and axes is None and axis is None):
        r = _core.matmul_any(x1, x2, out)
        if r is not NotImplemented:
            return r
    a, b = asarray(x1), asarray(x2)
    if (type(a) is not ndarray or type(b) is not ndarray or casting != "same_kind" or axes is not None
            or axis is not None or (out is not None and type(out) is not ndarray)):
        return _fallback.call_numpy(np.matmul, (a, b), dict(out=out, casting=casting, dtype=dtype, axes=axes),
                                    "numpy.matmul")
    if a.ndim == 0 or b.ndim == 0:
        which = 0 if a.ndim == 0 else 1
        raise ValueError(f"matmul: Input operand {which} does not have enough dimensions (has 0, gufunc core "
                         "with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    dt = np.dtype(dtype) if dtype is not None else _result_dtype(a, b)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.matmul, (a, b), dict(out=out, dtype=dtype), "numpy.matmul")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    squeeze = []
    if a.ndim == 1:
        squeeze.append(-2)
    if b.ndim == 1:
        squeeze.append(-1)
    out2 = out
    if out is not None and squeeze:
        out2 = out._reshape(_full_shape(a, b), False)  # a view: only adds size-1 axes
    r = _core.matmul(a2, b2, dt, out2)
    if r is NotImplemented:
        return _fallback.call_numpy(np.matmul, (a, b), dict(out=out, dtype=dtype), "numpy.matmul")
    if out is not None:
        return out
    if squeeze:
        r = r._squeeze(tuple(r.ndim + s for s in squeeze))
    return r


def _full_shape(a, b):
    a2 = a.shape if a.ndim > 1 else (1,) + a.shape
    b2 = b.shape if b.ndim > 1 else b.shape + (1,)
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    return batch + (a2[-2], b2[-1])


def dot(a, b, out=None):
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        from ._ufuncs import UFUNCS

        return UFUNCS["multiply"](a, b, out=out)
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, out=out)
    if b.ndim == 1:
        return matmul(a, b, out=out)
    return _fallback.call_numpy(np.dot, (a, b), dict(out=out), "numpy.dot (N-d)")


def vdot(a, b):
    a, b = asarray(a), asarray(b)
    return matmul(a.reshape(-1), b.reshape(-1))


def inner(a, b):
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        from ._ufuncs import UFUNCS

        return UFUNCS["multiply"](a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != "
                         f"{b.shape[-1]} (dim {b.ndim - 1})")
    if a.ndim <= 2 and b.ndim <= 2:
        bt = b if b.ndim == 1 else b.T
        return matmul(a, bt)
    return _fallback.call_numpy(np.inner, (a, b), {}, "numpy.inner (N-d)")


def outer(a, b, out=None):
    from ._ufuncs import UFUNCS

    a, b = asarray(a).reshape(-1), asarray(b).reshape(-1)
    return UFUNCS["multiply"](a[:, None], b[None, :], out=out)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector 2-norm and Frobenius norm are recorded; other norms fall back."""
    from ._reductions import sum as _sum
    from ._ufuncs import UFUNCS

    x = asarray(x)
    if type(x) is ndarray and ord in (None, "fro", 2) and x.dtype.kind in "biuf":
        if ord == 2 and (axis is None and x.ndim == 2 or isinstance(axis, tuple) and len(axis) == 2):
            return _fallback.call_numpy(np.linalg.norm, (x,), dict(ord=ord, axis=axis, keepdims=keepdims),
                                        "numpy.linalg.norm (matrix 2-norm)")
        if ord == "fro" and (axis is None and x.ndim != 2):
            return _fallback.call_numpy(np.linalg.norm, (x,), dict(ord=ord, axis=axis, keepdims=keepdims),
                                        "numpy.linalg.norm")
        if x.dtype.kind != "f":
            x = x.astype(np.float64)
        s = _sum(UFUNCS["multiply"](x, x), axis=axis, keepdims=keepdims)
        return UFUNCS["sqrt"](s)
    return _fallback.call_numpy(np.linalg.norm, (x,), dict(ord=ord, axis=axis, keepdims=keepdims),
                                "numpy.linalg.norm")


def tensordot(a, b, axes=2):
    return _fallback.call_numpy(np.tensordot, (a, b), dict(axes=axes), "numpy.tensordot")


def matrix_power(a, n):
    a = asarray(a)
    n = operator.index(n)
    if n < 0 or a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        return _fallback.call_numpy(np.linalg.matrix_power, (a, n), {}, "numpy.linalg.matrix_power")
    from ._creation import eye

    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result if result is not None else eye(a.shape[-1], dtype=a.dtype)


__getattr__ = _fallback.module_getattr(np.linalg, "numfuse.linalg")

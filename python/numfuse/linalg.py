"""numfuse.linalg: products are recorded (matmul is an MDH reduction over k,
or a BLAS routine for floating types); factorizations and solvers are
NumPy's LAPACK routines run as library calls on numfuse's memory (pending
inputs computed and passed as zero-copy views, results numfuse arrays)."""

import operator

import numpy as np

from . import _core, _fallback
from ._creation import asarray, eye
from ._manip import diagonal as _diagonal, moveaxis as _moveaxis, swapaxes as _swapaxes
from ._reductions import max as _max, min as _min, sum as _sum, trace as _trace
from ._ufuncs import UFUNCS

ndarray = _core.ndarray
_SQRT, _DOT = UFUNCS["sqrt"], _core.FAST_FUNCTIONS["dot"]
_normalize_axis_index = np.lib.array_utils.normalize_axis_index
_normalize_axis_tuple = np.lib.array_utils.normalize_axis_tuple
LinAlgError = np.linalg.LinAlgError


def _result_dtype(a, b):
    return np.result_type(a.dtype, b.dtype)


def _matmul(x1, x2, /, out=None, *, casting="same_kind", order="K", dtype=None, subok=True, axes=None, axis=None):
    # Fast path: two numfuse arrays, NumPy's defaults (1-D handling in C++).
    if (type(x1) is ndarray and type(x2) is ndarray and dtype is None and casting == "same_kind"
            and axes is None and axis is None):
        try:
            r = _core.matmul_any(x1, x2, out)
        except ValueError as e:
            # NumPy broadcasts the result into a larger `out` (1-D @ 1-D into a vector)
            if out is None or not str(e).startswith("matmul: Output operand 0"):
                raise
            r = _matmul(x1, x2)
            if np.broadcast_shapes(np.shape(r), out.shape) != out.shape:
                raise
            out[...] = r
            return out
        if r is not NotImplemented:
            return r
    a, b = asarray(x1), asarray(x2)
    if (type(a) is not ndarray or type(b) is not ndarray or casting != "same_kind" or axes is not None
            or axis is not None or (out is not None and type(out) is not ndarray)):
        kw = {k: v for k, v in dict(out=out, casting=casting, dtype=dtype, axes=axes, axis=axis).items()
              if v is not None and not (k == "casting" and v == "same_kind")}
        return _fallback.call_numpy(np.matmul, (a, b), kw, "numpy.matmul")
    # The 1-D rules, the 0-d error and broadcasting: record_matmul_any (C++), their one owner.
    dt = np.dtype(dtype) if dtype is not None else _result_dtype(a, b)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.matmul, (a, b), dict(out=out, dtype=dtype), "numpy.matmul")
    r = _core.matmul_any(a, b, out, False, dt)
    if r is NotImplemented:
        # Complex products of some size: NumPy's BLAS (zgemm/cgemm) as a
        # library call, as BLAS serves float products.
        return _fallback.call_numpy(np.matmul, (a, b), dict(out=out, dtype=dtype), "numpy.matmul",
                                    warn=dt.kind != "c")
    return r


def _np_shape(shape):
    """A shape as NumPy writes it in messages: (2,3), (4,)."""
    return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _native(*arrays):
    return all(type(x) is ndarray for x in arrays)


def _multiply(a, b, out=None):
    return UFUNCS["multiply"](a, b, out=out)


def _contract(ops, op_ids, out_ids, extents, dt, out=None):
    """One recorded contraction (an MDH reduction), or NotImplemented when
    the core does not compute in `dt`."""
    if not _core.supported_dtype(dt):
        return NotImplemented
    return _core.contract(list(ops), op_ids, out_ids, list(extents), dt, out)


def _check_dot_out(out, shape, dt):
    if out is None:
        return
    if (type(out) is not ndarray or out.dtype != dt or tuple(out.shape) != tuple(shape)
            or not out._c_contiguous or out._readonly):
        raise ValueError("output array is not acceptable (must have the right datatype, number of dimensions, "
                         "and be a C-Array)")


def dot(a, b, out=None):
    """numpy.dot. 2-D @ 2-D (and 1-D cases) is matmul; N-d is one contraction:
    dot(a, b)[i,j,k,m] = sum(a[i,j,:] * b[k,:,m])."""
    # Fast path (Python loops call dot on row slices): two numfuse arrays of
    # at most 2 dimensions that align are a matmul.
    if out is None and type(a) is ndarray and type(b) is ndarray:
        na, nb = a.ndim, b.ndim
        if 0 < na <= 2 and 0 < nb <= 2 and a.shape[-1] == b.shape[0 if nb == 1 else -2]:
            r = _core.matmul_any(a, b, None, True)
            if r is not NotImplemented:
                return r
    a, b = asarray(a), asarray(b)
    if not _native(a, b) or (out is not None and type(out) is not ndarray):
        return _fallback.call_numpy(np.dot, (a, b), dict(out=out), "numpy.dot")
    if a.ndim == 0 or b.ndim == 0:
        return _multiply(a, b, out=out)
    ka = a.ndim - 1
    kb = b.ndim - 2 if b.ndim >= 2 else 0
    if a.shape[ka] != b.shape[kb]:
        raise ValueError(f"shapes {_np_shape(a.shape)} and {_np_shape(b.shape)} not aligned: "
                         f"{a.shape[ka]} (dim {ka}) != {b.shape[kb]} (dim {kb})")
    dt = _result_dtype(a, b)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.dot, (a, b), dict(out=out), "numpy.dot")
    bkeep = [d for i, d in enumerate(b.shape) if i != kb]
    shape = a.shape[:-1] + tuple(bkeep)
    _check_dot_out(out, shape, dt)
    if a.ndim <= 2 and b.ndim <= 2:
        return _matmul(a, b, out=out)
    # labels: a's free axes, then b's free axes, then the summed one
    na = a.ndim - 1
    nbk = len(bkeep)
    s = na + nbk
    a_ids = list(range(na)) + [s]
    b_ids = list(range(na, na + nbk))
    b_ids.insert(kb, s)
    extents = list(a.shape[:-1]) + bkeep + [a.shape[-1]]
    r = _contract([a, b], [a_ids, b_ids], list(range(s)), extents, dt, out)
    if r is NotImplemented:
        return _fallback.call_numpy(np.dot, (a, b), dict(out=out), "numpy.dot")
    return out if out is not None else r


def _dot_of_vectors(a, b):
    """Two float vectors of one type and length: vdot and inner are then
    NumPy's dot of them (its C vdot does not copy a strided vector: BLAS's
    sums over the strides, NumPy's bits), numfuse's C entry point."""
    return (type(a) is ndarray and type(b) is ndarray and a.ndim == 1 and b.ndim == 1 and a.dtype == b.dtype
            and a.dtype.kind == "f" and a.shape == b.shape)


def vdot(a, b, /):
    """numpy.vdot: the dot product of the flattened arrays (one contraction),
    the first conjugated."""
    if _dot_of_vectors(a, b):
        return _DOT(a, b)
    a, b = asarray(a), asarray(b)
    if not _native(a, b):
        return _fallback.call_numpy(np.vdot, (a, b), {}, "numpy.vdot")
    if a.dtype.kind == "c":
        a = a.conj()
    if a.size != b.size:
        raise ValueError(f"cannot reshape array of size {b.size} into shape ({a.size},)")
    dt = _result_dtype(a, b)
    a1, b1 = a.reshape(-1), b.reshape(-1)
    r = _contract([a1, b1], [[0], [0]], [], [a.size], dt)
    if r is NotImplemented:
        return _fallback.call_numpy(np.vdot, (a, b), {}, "numpy.vdot")
    return _core.scalar_result(r)


def inner(a, b, /):
    """numpy.inner: sum over the last axes of both (one contraction):
    inner(a, b)[i..., j...] = sum(a[i..., :] * b[j..., :])."""
    if _dot_of_vectors(a, b):
        return _DOT(a, b)
    a, b = asarray(a), asarray(b)
    if not _native(a, b):
        return _fallback.call_numpy(np.inner, (a, b), {}, "numpy.inner")
    if a.ndim == 0 or b.ndim == 0:
        return _multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        # NumPy reports b with its last axis moved to the second-to-last place.
        bs = b.shape[:-2] + (b.shape[-1], b.shape[-2]) if b.ndim >= 2 else b.shape
        raise ValueError(f"shapes {_np_shape(a.shape)} and {_np_shape(bs)} not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-1]} (dim {max(b.ndim - 2, 0)})")
    dt = _result_dtype(a, b)
    na, nb = a.ndim - 1, b.ndim - 1
    s = na + nb
    a_ids = list(range(na)) + [s]
    b_ids = list(range(na, s)) + [s]
    extents = list(a.shape[:-1]) + list(b.shape[:-1]) + [a.shape[-1]]
    r = _contract([a, b], [a_ids, b_ids], list(range(s)), extents, dt)
    if r is NotImplemented:
        return _fallback.call_numpy(np.inner, (a, b), {}, "numpy.inner")
    return _core.scalar_result(r)


def _outer(a, b, out=None):
    """numpy.outer (numfuse.outer): the inputs flattened."""
    a, b = asarray(a).reshape(-1), asarray(b).reshape(-1)
    return UFUNCS["multiply"](a[:, None], b[None, :], out=out)


_outer.__name__ = _outer.__qualname__ = "outer"


def outer(x1, x2, /):
    """numpy.linalg.outer: the outer product of two 1-D arrays (the array
    API's; numfuse.outer flattens its inputs)."""
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={x1.ndim} and "
                         f"x2.ndim={x2.ndim}.")
    return _outer(x1, x2)


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm, NumPy's definitions computed by numfuse: vector
    norms of every order and the matrix norms 1, -1, inf, -inf and Frobenius
    are reductions; the matrix 2-norm, -2-norm and nuclear norm reduce the
    singular values (LAPACK's, numfuse.linalg.svd)."""
    if type(x) is ndarray and ord is None and axis is None and not keepdims and x.ndim == 1 and x.dtype.kind == "f":
        # (the loops' call: a vector's 2-norm, as below without the checks)
        flat = x if x._c_contiguous else x.copy()
        return _SQRT(_DOT(flat, flat))
    x = asarray(x)
    if type(x) is not ndarray:
        return _fallback.call_numpy(np.linalg.norm, (x,), dict(ord=ord, axis=axis, keepdims=keepdims),
                                    "numpy.linalg.norm")
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    if axis is None:
        nd = x.ndim
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            # NumPy's x.ravel(order="K"): a 1-D view as it is when contiguous,
            # else a copy -- its dot products are then NumPy's (BLAS sums a
            # contiguous vector otherwise than a strided one)
            flat = (x if x._c_contiguous else x.copy()) if nd == 1 else x.ravel(order="K")
            if x.dtype.kind == "c":
                re, im = flat.real, flat.imag
                sq = _core.FAST_FUNCTIONS["dot"](re, re) + _core.FAST_FUNCTIONS["dot"](im, im)
            else:
                sq = _core.FAST_FUNCTIONS["dot"](flat, flat)
            r = UFUNCS["sqrt"](sq)
            if keepdims:
                r = asarray(r).reshape((1,) * nd)
            return r
    nd = x.ndim
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)
    absolute, add = UFUNCS["absolute"], _sum
    if len(axis) == 1:
        if ord == np.inf:
            return _max(absolute(x), axis=axis, keepdims=keepdims, initial=0)
        if ord == -np.inf:
            return _min(absolute(x), axis=axis, keepdims=keepdims)
        if ord == 0:
            return add(UFUNCS["not_equal"](x, 0).astype(x.real.dtype), axis=axis, keepdims=keepdims)
        if ord == 1:
            return add(absolute(x), axis=axis, keepdims=keepdims)
        if ord is None or ord == 2:
            s = UFUNCS["multiply"](UFUNCS["conjugate"](x), x).real
            return UFUNCS["sqrt"](add(s, axis=axis, keepdims=keepdims))
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        # NumPy's `absx **= ord` and `ret **= reciprocal(ord)`: in place, in
        # x's type whatever ord's is
        absx = absolute(x)
        absx = UFUNCS["power"](absx, ord, dtype=absx.dtype)
        r = add(absx, axis=axis, keepdims=keepdims)
        return UFUNCS["power"](r, UFUNCS["reciprocal"](ord, dtype=r.dtype), dtype=r.dtype)
    if len(axis) == 2:
        row_axis, col_axis = (_normalize_axis_index(a, nd) for a in axis)
        if row_axis == col_axis:
            raise ValueError("Duplicate axes given.")
        if ord in (2, -2, "nuc"):
            sv = svd(_moveaxis(x, (row_axis, col_axis), (-2, -1)), compute_uv=False)
            r = (_max(sv, axis=-1, initial=0) if ord == 2 else _min(sv, axis=-1) if ord == -2
                 else add(sv, axis=-1, initial=0))
        elif ord in (1, -1):
            if col_axis > row_axis:
                col_axis -= 1
            s = add(absolute(x), axis=row_axis)
            r = _max(s, axis=col_axis, initial=0) if ord == 1 else _min(s, axis=col_axis)
        elif ord in (np.inf, -np.inf):
            if row_axis > col_axis:
                row_axis -= 1
            s = add(absolute(x), axis=col_axis)
            r = _max(s, axis=row_axis, initial=0) if ord == np.inf else _min(s, axis=row_axis)
        elif ord in (None, "fro", "f"):
            r = UFUNCS["sqrt"](add(UFUNCS["multiply"](UFUNCS["conjugate"](x), x).real, axis=axis))
        else:
            raise ValueError("Invalid norm order for matrices.")
        if keepdims:
            shape = list(x.shape)
            shape[axis[0]] = 1
            shape[axis[1]] = 1
            r = asarray(r).reshape(shape)
        return r
    raise ValueError("Improper number of dimensions to norm.")


# -- the array API's linear algebra (numpy.linalg's 2.x additions) ------------------
# (vecdot and cross are numfuse._lib_math's, installed here by the package.)

def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """numpy.linalg.vector_norm: the norm over `axis` (None: all axes; a
    tuple: those axes as one) of any order."""
    x = asarray(x)
    shape = list(x.shape)
    if axis is None:
        x, along = x.ravel(), 0
    elif isinstance(axis, tuple):
        axes = _normalize_axis_tuple(axis, x.ndim)
        rest = tuple(i for i in range(x.ndim) if i not in axes)
        n = 1
        for i in axis:
            n *= x.shape[i]
        x, along = x.transpose(axis + rest).reshape((n, *[x.shape[i] for i in rest])), 0
    else:
        along = axis
    r = norm(x, axis=along, ord=ord)
    if keepdims:
        for i in _normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        r = asarray(r).reshape(tuple(shape))
    return r


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """numpy.linalg.matrix_norm: the norm of the matrices in the last two axes."""
    return norm(asarray(x), axis=(-2, -1), keepdims=keepdims, ord=ord)


def matrix_transpose(x, /):
    """numpy.linalg.matrix_transpose (and numpy.matrix_transpose): the last
    two axes swapped (a view)."""
    x = asarray(x)
    if type(x) is not ndarray:
        return _fallback.call_numpy(np.matrix_transpose, (x,), {}, "numpy.matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return _swapaxes(x, -1, -2)


def diagonal(x, /, *, offset=0):
    """numpy.linalg.diagonal: the diagonals of the matrices in the last two axes."""
    return _diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    """numpy.linalg.trace: the traces of the matrices in the last two axes."""
    return _trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def _tensordot(a, b, axes=2):
    """numpy.tensordot as one contraction (NumPy's argument handling and
    errors; the result is a's free axes followed by b's)."""
    try:
        iter(axes)
    except Exception:
        axes_a = list(range(-axes, 0))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
    try:
        na = len(axes_a)
        axes_a = list(axes_a)
    except TypeError:
        axes_a = [axes_a]
        na = 1
    try:
        nb = len(axes_b)
        axes_b = list(axes_b)
    except TypeError:
        axes_b = [axes_b]
        nb = 1
    if len(set(axes_a)) != len(axes_a):
        raise ValueError("duplicate axes are not allowed in tensordot")
    if len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")

    a, b = asarray(a), asarray(b)
    if not _native(a, b):
        return _fallback.call_numpy(np.tensordot, (a, b), dict(axes=axes), "numpy.tensordot")
    as_, bs = a.shape, b.shape
    nda, ndb = a.ndim, b.ndim
    equal = na == nb
    if equal:
        for k in range(na):
            if as_[axes_a[k]] != bs[axes_b[k]]:
                equal = False
                break
            if axes_a[k] < 0:
                axes_a[k] += nda
            if axes_b[k] < 0:
                axes_b[k] += ndb
    if not equal:
        raise ValueError("shape-mismatch for sum")
    if len(set(axes_a)) != na or len(set(axes_b)) != nb:
        raise ValueError("axes don't match array")  # NumPy's transpose: e.g. axes ([-1, 1], ...) on 2-D

    notin_a = [k for k in range(nda) if k not in axes_a]
    notin_b = [k for k in range(ndb) if k not in axes_b]
    nfree = len(notin_a) + len(notin_b)
    a_ids = [0] * nda
    b_ids = [0] * ndb
    extents = []
    for i, k in enumerate(notin_a):
        a_ids[k] = i
        extents.append(as_[k])
    for i, k in enumerate(notin_b):
        b_ids[k] = len(notin_a) + i
        extents.append(bs[k])
    for i, (ka, kb) in enumerate(zip(axes_a, axes_b)):
        a_ids[ka] = b_ids[kb] = nfree + i
        extents.append(as_[ka])
    dt = _result_dtype(a, b)
    r = _contract([a, b], [a_ids, b_ids], list(range(nfree)), extents, dt)
    if r is NotImplemented:
        return _fallback.call_numpy(np.tensordot, (a, b), dict(axes=axes), "numpy.tensordot")
    return r


def matrix_power(a, n):
    a = asarray(a)
    # NumPy's order: the matrix (LinAlgError), then the exponent (TypeError)
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n < 0:
        return _fallback.call_numpy(np.linalg.matrix_power, (a, n), {}, "numpy.linalg.matrix_power")

    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else _matmul(result, base)
        n >>= 1
        if n:
            base = _matmul(base, base)
    return result if result is not None else eye(a.shape[-1], dtype=a.dtype)


# LAPACK-backed routines: NumPy's, as library calls (no FallbackWarning).
_LAPACK = ("solve", "inv", "det", "slogdet", "eig", "eigh", "eigvals", "eigvalsh", "svd", "svdvals", "qr",
           "cholesky", "lstsq", "pinv", "matrix_rank", "cond", "tensorsolve", "tensorinv", "multi_dot")
for _name in _LAPACK:
    if hasattr(np.linalg, _name):
        globals()[_name] = _fallback.numpy_kernel(getattr(np.linalg, _name), f"numpy.linalg.{_name}")
del _name

__getattr__ = _fallback.module_getattr(np.linalg, "numfuse.linalg", globals())


# numpy.matmul and numpy.tensordot (the package's names) and the array API's
# numpy.linalg.matmul(x1, x2, /) and tensordot(x1, x2, /, *, axes=2).
_matmul.__name__ = _matmul.__qualname__ = "matmul"
_tensordot.__name__ = _tensordot.__qualname__ = "tensordot"


def matmul(x1, x2, /):
    return _matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return _tensordot(x1, x2, axes)


matmul.__doc__ = np.linalg.matmul.__doc__
tensordot.__doc__ = np.linalg.tensordot.__doc__

"""Shape manipulation: views where NumPy returns views (metadata only, no
task), copies recorded as tasks where NumPy copies (concatenate, stack)."""

import operator

import warnings

import numpy as np

from . import _core, _fallback
from ._creation import asarray, empty, order_arg

ndarray = _core.ndarray


def _numpy(func, a, *args, **kwargs):
    """Runs NumPy's `func` on `a`, an array numfuse does not hold (a dtype it
    does not compute in, e.g. a float16 or complex result of the fallback)."""
    return _fallback.call_numpy(func, (a,) + args, kwargs, f"numpy.{func.__name__} ({a.dtype})", warn=False)


def _shape_arg(shape):
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(s) for s in shape)


def reshape(a, /, shape, order="C", *, copy=None):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.reshape, a, shape, order=order, copy=copy)
    order = order_arg(order, "C")
    if order == "K":
        raise ValueError("order 'K' is not permitted for reshaping")
    if order == "A":
        order = "F" if a._f_contiguous and not a._c_contiguous else "C"
    if order not in ("C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A' (got {order!r})")
    if copy:
        a = a.copy(order=order)
    r = a._reshape(_shape_arg(shape), order == "F")
    if copy is False and not r._same_buffer(a):
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    return r


def ravel(a, order="C"):
    """numpy.ravel: a view when the data is contiguous in the requested
    order, else a copy."""
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.ravel, a, order)
    if a.ndim == 1 and order in ("C", "F", "A", "K"):  # (a vector: itself when contiguous, else a copy)
        return a.reshape(-1) if a._c_contiguous else a.copy()
    order = order_arg(order, "C")
    if order == "A":
        order = "F" if a._f_contiguous and not a._c_contiguous else "C"
    if order == "K":
        # Memory order: axes by decreasing |stride| (negative-stride axes are
        # not reversed, as in NumPy).
        axes = sorted(range(a.ndim), key=lambda k: -abs(a.strides[k]))
        b = a._transpose(tuple(axes)) if a.ndim > 1 else a
        return ravel(b, "C")
    if order not in ("C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    contiguous = a._c_contiguous if order == "C" else a._f_contiguous
    if not contiguous:
        a = a.copy(order=order)
    return a._reshape((a.size,), order == "F")


def transpose(a, axes=None):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.transpose, a, axes)
    if axes is not None:
        if not isinstance(axes, (tuple, list)) and np.ndim(axes) == 0:
            axes = (axes,)  # (NumPy: one axis for a 1-D array; AxisError otherwise)
        axes = tuple(operator.index(x) for x in axes)
        if len(axes) != a.ndim:
            raise ValueError("axes don't match array")
        axes = tuple(_norm_axis(x, a.ndim) for x in axes)
    return a._transpose(axes)


def permute_dims(a, axes=None):
    return transpose(a, axes)


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.swapaxes, a, axis1, axis2)
    return a._swapaxes(operator.index(axis1), operator.index(axis2))


def moveaxis(a, source, destination):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.moveaxis, a, source, destination)
    nd = a.ndim
    src = np.lib.array_utils.normalize_axis_tuple(source, nd, "source")
    dst = np.lib.array_utils.normalize_axis_tuple(destination, nd, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a._transpose(tuple(order))


def _norm_axis(ax, nd):
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(ax, nd)
    return ax % nd


def expand_dims(a, axis):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.expand_dims, a, axis)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return a._expand_dims(tuple(operator.index(x) for x in axes))


def squeeze(a, axis=None):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.squeeze, a, axis)
    if axis is not None:
        axis = tuple(operator.index(x) for x in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    r = a._squeeze(axis)
    # NumPy returns the array itself when no dimension goes (a later
    # `a.shape = ...` then shows through the result too).
    return a if r.ndim == a.ndim else r


def broadcast_to(array, shape, subok=False):
    a = asarray(array)
    if type(a) is not ndarray:
        return _numpy(np.broadcast_to, a, shape)
    return a._broadcast_to(_shape_arg(shape))


def broadcast_shapes(*shapes):
    return np.broadcast_shapes(*shapes)


def broadcast_arrays(*args, subok=False):
    arrs = [asarray(a) for a in args]
    if any(type(a) is not ndarray for a in arrs):
        return _fallback.call_numpy(np.broadcast_arrays, tuple(arrs), {}, "numpy.broadcast_arrays", warn=False)
    shape = np.broadcast_shapes(*[a.shape for a in arrs])
    return tuple(a if a.shape == shape else a._broadcast_to(shape) for a in arrs)


def atleast_1d(*arys):
    if len(arys) == 1 and type(arys[0]) is ndarray and arys[0].ndim >= 1:
        return arys[0]
    res = []
    for a in arys:
        a = asarray(a)
        res.append(a if a.ndim >= 1 else a.reshape((1,)))
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = a.reshape((1, 1))
        elif a.ndim == 1:
            a = a[None, :]
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


def atleast_3d(*arys):
    res = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = a.reshape((1, 1, 1))
        elif a.ndim == 1:
            a = a[None, :, None]
        elif a.ndim == 2:
            a = a[:, :, None]
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


def where(condition, x=None, y=None, /):
    if x is None and y is None:
        # asarray(condition).nonzero(), natively.
        a = asarray(condition)
        if type(a) is not _core.ndarray:
            return _fallback.call_numpy(np.nonzero, (a,), {}, "numpy.where (one argument, a dtype numfuse does not hold)")
        if a.ndim == 0:
            msg = "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead."
            if a.dtype == np.bool_:  # (NumPy's bool path says more)
                msg += " If the context of this error is of the form `arr[nonzero(cond)]`, just use `arr[cond]`."
            raise ValueError(msg)
        return _core.nonzero(a)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    r = _core.where(condition, x, y)
    if r is NotImplemented:
        return _fallback.call_numpy(np.where, (condition, x, y), {}, "numpy.where")
    return r


def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is None and dtype is None and type(axis) is int and casting == "same_kind":
        r = _core.concat_same(arrays, axis)  # numfuse arrays of one dtype and rank: in C++
        if r is not NotImplemented:
            return r
    if axis is not None:
        axis = operator.index(axis)  # (NumPy converts the axis first: TypeError before anything else)
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if any(type(a) is not ndarray for a in arrays) or casting != "same_kind":
        return _fallback.call_numpy(np.concatenate, (arrays,), dict(axis=axis, out=out, dtype=dtype,
                                                                    casting=casting), "numpy.concatenate")
    if axis is None:
        arrays = [a.reshape(-1) for a in arrays]
        axis = 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = operator.index(axis)
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(ax, nd)
    ax %= nd
    for i, a in enumerate(arrays[1:], 1):
        if a.ndim != nd:
            raise ValueError("all the input arrays must have same number of dimensions, but the array at index 0 "
                             f"has {nd} dimension(s) and the array at index {i} has {a.ndim} dimension(s)")
        for d in range(nd):
            if d != ax and a.shape[d] != arrays[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size "
                                 f"{arrays[0].shape[d]} and the array at index {i} has size {a.shape[d]}")
    dts = {a.dtype for a in arrays}
    if dtype is None and len(dts) == 1:
        rt = next(iter(dts))  # one dtype: the result's, and no cast to check
    else:
        rt = np.dtype(dtype) if dtype is not None else np.result_type(*[a.dtype for a in arrays])
        for a in arrays:
            if not np.can_cast(a.dtype, rt, casting):
                raise TypeError(f"Cannot cast array data from {a.dtype!r} to {rt!r} according to the rule "
                                f"'{casting}'")
    shape = list(arrays[0].shape)
    shape[ax] = sum(a.shape[ax] for a in arrays)
    if out is not None:
        if tuple(out.shape) != tuple(shape):
            raise ValueError("Output array has wrong dimensionality")
        res = out
    else:
        res = _core.empty_concat(tuple(shape), rt, arrays)
    pos = 0
    for a in arrays:
        n = a.shape[ax]
        if n:
            idx = (slice(None),) * ax + (slice(pos, pos + n),)
            res[idx] = a
        pos += n
    return res


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is None and dtype is None and type(axis) is int and casting == "same_kind":
        r = _core.concat_same(arrays, axis, True)  # numfuse arrays of one dtype and shape: in C++
        if r is not NotImplemented:
            return r
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if any(type(a) is not ndarray for a in arrays):
        return _fallback.call_numpy(np.stack, (arrays,), dict(axis=axis, out=out, dtype=dtype, casting=casting),
                                    "numpy.stack", warn=False)
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    nd = arrays[0].ndim + 1
    ax = _norm_axis(operator.index(axis), nd)
    expanded = [a._expand_dims((ax,)) for a in arrays]
    return concatenate(expanded, axis=ax, out=out, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_2d(a) for a in tup]
    return concatenate(arrs, axis=0, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def column_stack(tup):
    arrs = []
    for a in tup:
        a = asarray(a)
        if a.ndim < 2:
            a = a.reshape((-1, 1))
        arrs.append(a)
    return concatenate(arrs, axis=1)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    """numpy.row_stack: vstack's deprecated alias (NumPy's DeprecationWarning)."""
    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2)
    return vstack(tup, dtype=dtype, casting=casting)


_REVERSED = slice(None, None, -1)


def flip(m, axis=None):
    if axis is None and type(m) is ndarray:  # (loops flip slices: no more than the view)
        return m[(_REVERSED,) * m.ndim]
    m = asarray(m)
    if type(m) is not ndarray:
        return _numpy(np.flip, m, axis)
    if axis is None:
        axes = range(m.ndim)
    else:
        axes = np.lib.array_utils.normalize_axis_tuple(axis, m.ndim)
    idx = [slice(None)] * m.ndim
    for a in axes:
        idx[a] = slice(None, None, -1)
    return m[tuple(idx)]


def fliplr(m):
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return m[:, ::-1] if type(m) is ndarray else _numpy(np.fliplr, m)


def flipud(m):
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return m[::-1, ...] if type(m) is ndarray else _numpy(np.flipud, m)


def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, strict=False)


def _split(ary, ios, axis, strict):
    a = asarray(ary)
    if type(a) is not ndarray:
        return _numpy(np.split if strict else np.array_split, a, ios, axis)
    ax = _norm_axis(operator.index(axis), a.ndim)
    n = a.shape[ax]
    if np.ndim(ios) == 0 and not isinstance(ios, (int, np.integer)):
        # NumPy: anything without a len() is a number of sections, checked
        # for an equal division as given (5 % 2.5 == 0), then made an int
        if strict and n % ios:
            raise ValueError("array split does not result in an equal division")
        ios, strict = int(ios), False
    if isinstance(ios, (int, np.integer)):
        sections = operator.index(ios)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if strict and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = [0]
        for s in sizes:
            bounds.append(bounds[-1] + s)
    else:
        bounds = [0] + [operator.index(i) for i in ios] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx = (slice(None),) * ax + (slice(lo, hi),)
        out.append(a[idx])
    return out


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.diagonal, a, offset, axis1, axis2)
    return a._diagonal(operator.index(offset), operator.index(axis1), operator.index(axis2))


def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.diff, a, n, axis, prepend, append)
    if prepend is not np._NoValue or append is not np._NoValue:
        return _fallback.call_numpy(np.diff, (a,), dict(n=n, axis=axis, prepend=prepend, append=append),
                                    "numpy.diff (prepend/append)")
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    ax = _norm_axis(operator.index(axis), a.ndim)
    for _ in range(n):
        hi = (slice(None),) * ax + (slice(1, None),)
        lo = (slice(None),) * ax + (slice(None, -1),)
        a = a[hi] != a[lo] if a.dtype == np.bool_ else a[hi] - a[lo]
    return a


def shape(a):
    return asarray(a).shape if not hasattr(a, "shape") else tuple(a.shape)


def ndim(a):
    return a.ndim if hasattr(a, "ndim") else np.ndim(a)


def size(a, axis=None):
    if axis is None:
        return a.size if hasattr(a, "size") else np.size(a)
    s = shape(a)
    if not isinstance(axis, (tuple, list)) and np.ndim(axis) > 0:
        axis = tuple(np.asarray(axis))
    if isinstance(axis, (tuple, list)):
        axis = tuple(operator.index(x) for x in axis)
        axes = np.lib.array_utils.normalize_axis_tuple(axis, len(s))
        n = 1
        for ax in axes:
            n *= s[ax]
        return n
    return s[np.lib.array_utils.normalize_axis_index(operator.index(axis), len(s))]

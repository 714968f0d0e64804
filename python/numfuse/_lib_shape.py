"""NumPy functions numfuse implements by composing its native operations
(recorded, fused and compiled like any other): see docs/coverage.md.

Shape and index functions (twodim_base, shape_base, index_tricks, arraypad,
function_base): each mirrors NumPy's own algorithm with numfuse's views,
slicing, setitem into views, broadcasting, ``where`` and concatenation, so
results (values, dtypes, views vs copies, memory layouts) and exceptions are
NumPy's. Inputs numfuse cannot hold (complex, float16, object, ...) run NumPy
itself; the few rare keywords or data-dependent cases that cannot be native
run NumPy through the fallback (with a ``FallbackWarning``)."""

import itertools
import operator

import numpy as np

from . import _core, _fallback  # noqa: F401
from ._array_api import check_device
from .linalg import matrix_transpose  # noqa: F401 (numpy.matrix_transpose is numpy.linalg's)
from ._creation import _dtype, array, asarray, arange, empty, empty_like, full, zeros, zeros_like
from ._manip import (broadcast_arrays, broadcast_to, concatenate, flip, moveaxis, split, swapaxes, transpose,
                     where, _norm_axis)

_where = where
from ._reductions import any as _any
from ._ufuncs import UFUNCS
from .lib import stride_tricks as _stride_tricks

ndarray = _core.ndarray
_U = UFUNCS
_PYSCALARS = (int, float, complex, bool)

__all__ = [
    "tri", "tril", "triu", "meshgrid", "indices", "ix_", "diag", "diagflat", "diag_indices", "diag_indices_from",
    "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from", "roll", "tile", "repeat", "rot90",
    "rollaxis", "append", "block", "delete", "insert", "hsplit", "vsplit", "dsplit", "unstack",
    "matrix_transpose", "resize", "pad", "select", "piecewise", "copyto", "fill_diagonal", "astype", "require",
    "isfortran", "choose",
]


def _numpy(func, args, kwargs=None, why="", warn=False):
    """NumPy's `func` through the fallback: warn=False for inputs numfuse
    does not hold (NumPy's own dtypes), warn=True for a case numfuse does not
    compile."""
    name = f"numpy.{func.__name__}" + (f" ({why})" if why else "")
    return _fallback.call_numpy(func, tuple(args), kwargs or {}, name, warn=warn)



def _fnc(a):
    """NumPy's flags.fnc: Fortran-contiguous and not C-contiguous (an empty
    array is both in NumPy)."""
    return bool(a._f_contiguous and not a._c_contiguous) and a.size != 0


def _slice_at_axis(sl, axis):
    return (slice(None),) * axis + (sl,) + (Ellipsis,)


def _normalize_axis_tuple(axis, nd, allow_duplicate=False):
    if type(axis) not in (tuple, list):
        try:
            axis = [operator.index(axis)]
        except TypeError:
            pass
    axis = tuple(_norm_axis(operator.index(ax), nd) for ax in axis)
    if not allow_duplicate and len(set(axis)) != len(axis):
        raise ValueError("repeated axis")
    return axis


# --------------------------------------------------------------------- twodim

def tri(N, M=None, k=0, dtype=float, *, like=None):
    if M is None:
        M = N
    dt = np.dtype(dtype)
    if not _core.supported_dtype(dt):
        return _numpy(np.tri, (N, M, k, dtype))
    m = _U["greater_equal"](arange(N)[:, None], arange(-k, M - k)[None, :])
    return m if dt == np.bool_ else m.astype(dt)


def tril(m, k=0):
    m = asarray(m)
    if type(m) is not ndarray:
        return _numpy(np.tril, (m, k))
    mask = tri(*m.shape[-2:], k=k, dtype=bool)
    return where(mask, m, zeros(1, m.dtype))


def triu(m, k=0):
    m = asarray(m)
    if type(m) is not ndarray:
        return _numpy(np.triu, (m, k))
    mask = tri(*m.shape[-2:], k=k - 1, dtype=bool)
    return where(mask, zeros(1, m.dtype), m)


def _diag_fill(v, k):
    """A zero (n, n) matrix with the 1-D `v` on its k-th diagonal."""
    s = v.shape[0]
    n = s + abs(k)
    res = zeros((n, n), v.dtype)
    if s:
        i = k if k >= 0 else -k * n
        res.reshape(-1)[i:i + s * (n + 1):n + 1] = v
    return res


def diag(v, k=0):
    v = asarray(v)
    if type(v) is not ndarray:
        return _numpy(np.diag, (v, k))
    k = operator.index(k)
    if v.ndim == 1:
        return _diag_fill(v, k)
    if v.ndim == 2:
        return v._diagonal(k, 0, 1)
    raise ValueError("Input must be 1- or 2-d.")


def diagflat(v, k=0):
    v = asarray(v)
    if type(v) is not ndarray:
        return _numpy(np.diagflat, (v, k))
    return _diag_fill(v.reshape(-1), operator.index(k))


def diag_indices(n, ndim=2):
    idx = arange(n)
    return (idx,) * ndim


def diag_indices_from(arr):
    if not arr.ndim >= 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(arr.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(arr.shape[0], arr.ndim)


def tril_indices(n, k=0, m=None):
    # Index arrays that depend only on the integers n, k, m: made like arange.
    return tuple(asarray(x) for x in np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    return tuple(asarray(x) for x in np.triu_indices(n, k, m))


def tril_indices_from(arr, k=0):
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(arr.shape[-2], k=k, m=arr.shape[-1])


def triu_indices_from(arr, k=0):
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(arr.shape[-2], k=k, m=arr.shape[-1])


# ---------------------------------------------------------------- index tricks

def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    ndim = len(xi)
    if indexing not in ["xy", "ij"]:
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    arrs = [asarray(x) for x in xi]
    if any(type(a) is not ndarray for a in arrs):
        return _numpy(np.meshgrid, arrs, dict(copy=copy, sparse=sparse, indexing=indexing))
    s0 = (1,) * ndim
    output = [a.reshape(s0[:i] + (-1,) + s0[i + 1:]) for i, a in enumerate(arrs)]
    if indexing == "xy" and ndim > 1:
        output[0] = output[0].reshape((1, -1) + s0[2:])
        output[1] = output[1].reshape((-1, 1) + s0[2:])
    if not sparse:
        output = broadcast_arrays(*output)
    if copy:
        output = tuple(x.copy() for x in output)
    return output


def indices(dimensions, dtype=int, sparse=False):
    dimensions = tuple(dimensions)
    sparse = bool(sparse)  # (NumPy tests it before it reads the dtype)
    dt = _dtype(dtype)  # (an array is no dtype: TypeError, as NumPy's)
    if not _core.supported_dtype(dt):
        return _numpy(np.indices, (dimensions, dtype, sparse))
    N = len(dimensions)
    shape = (1,) * N
    res = () if sparse else empty((N,) + dimensions, dtype=dt)
    for i, dim in enumerate(dimensions):
        idx = arange(dim, dtype=dt).reshape(shape[:i] + (dim,) + shape[i + 1:])
        if sparse:
            res = res + (idx,)
        else:
            res[i] = idx
    return res


def ix_(*args):
    out = []
    nd = len(args)
    for k, new in enumerate(args):
        if type(new) is ndarray:
            if new.dtype == np.bool_ and new.ndim == 1:  # nonzero: a shape that depends on the data
                return _numpy(np.ix_, args, why="boolean arrays", warn=True)
        else:
            # Host data (lists, NumPy arrays): NumPy's conversions, then adopted.
            is_np = isinstance(new, np.ndarray)
            new = np.asarray(new)
            if new.size == 0 and not is_np:
                new = new.astype(np.intp)
            if new.ndim == 1 and new.dtype == np.bool_:
                new, = new.nonzero()
            new = asarray(new)
            if type(new) is not ndarray:
                return _numpy(np.ix_, args)
        if new.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        out.append(new.reshape((1,) * k + (new.size,) + (1,) * (nd - k - 1)))
    return tuple(out)


def fill_diagonal(a, val, wrap=False):
    if type(a) is not ndarray:
        return np.fill_diagonal(a, val, wrap)  # (NumPy's arrays and NumPy's errors)
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    end = None
    if a.ndim == 2:
        step = a.shape[1] + 1
        if not wrap:
            end = a.shape[1] * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + sum(int(np.prod(a.shape[:i + 1])) for i in range(a.ndim - 1))
    count = len(range(0, a.size if end is None else min(end, a.size), step))
    if a._c_contiguous:
        target = a.reshape(-1)[:end:step]
    elif not wrap or a.ndim > 2 or count <= min(a.shape):
        # a.flat's diagonal elements a[i, i, ...]: one strided view.
        target = _stride_tricks.as_strided(a, shape=(count,), strides=(sum(a.strides),))
    else:
        return _numpy(np.fill_diagonal, (a, val, wrap), why="wrap=True, non-contiguous", warn=True)
    if count == 0:
        return
    if type(val) in (int, float, bool):
        target[...] = val  # (NumPy's a.flat[...] = val: a Python number's own checks)
        return
    v = asarray(val)
    if type(v) is not ndarray:
        return _numpy(np.fill_diagonal, (a, val, wrap))
    if v.ndim and v.size != 1:
        # a.flat = v cycles v's elements over the targets.
        v = v.reshape(-1)
        if v.size == 0:
            return
        v = resize(v, count)
    elif v.ndim:
        v = v.reshape(())
    target[...] = v


# ----------------------------------------------------------------- shape_base

def roll(a, shift, axis=None):
    if type(a) is ndarray and type(shift) is int and type(axis) is int and a.ndim:
        # The common call (an int shift along one axis): NumPy's two slice
        # copies into a new array, without its general shift/axis broadcasting.
        ax = axis + a.ndim if axis < 0 else axis
        if not 0 <= ax < a.ndim:
            raise np.exceptions.AxisError(axis, a.ndim)
        offset = shift % (a.shape[ax] or 1)
        result = empty_like(a)
        if not offset:
            result[...] = a
            return result
        pre = (slice(None),) * ax
        result[pre + (slice(offset, None),)] = a[pre + (slice(None, -offset),)]
        result[pre + (slice(None, offset),)] = a[pre + (slice(-offset, None),)]
        return result
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.roll, (a, shift, axis))
    if axis is None:
        return roll(a.reshape(-1) if a._c_contiguous else a.copy().reshape(-1), shift, 0).reshape(a.shape)
    axis = _normalize_axis_tuple(axis, a.ndim, allow_duplicate=True)
    broadcasted = np.broadcast(np.asarray(shift), axis)
    if broadcasted.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(a.ndim), 0)
    for sh, ax in broadcasted:
        shifts[ax] += int(sh)
    rolls = [((slice(None), slice(None)),)] * a.ndim
    for ax, offset in shifts.items():
        offset %= a.shape[ax] or 1
        if offset:
            rolls[ax] = ((slice(None, -offset), slice(offset, None)),
                         (slice(-offset, None), slice(None, offset)))
    result = empty_like(a)
    for idx in itertools.product(*rolls):
        arr_index, res_index = zip(*idx)
        result[res_index] = a[arr_index]
    return result


def tile(A, reps):
    try:
        tup = tuple(reps)
    except TypeError:
        tup = (reps,)
    tup = tuple(int(t) if isinstance(t, np.bool_) else operator.index(t) for t in tup)
    d = len(tup)
    is_array = type(A) is ndarray or isinstance(A, np.ndarray)
    if is_array and all(x == 1 for x in tup):
        c = asarray(A)
        if type(c) is not ndarray:
            return _numpy(np.tile, (c, reps))
        return array(c, copy=True, ndmin=d)
    c = array(A, copy=None, ndmin=d) if type(A) is ndarray else asarray(array(A, ndmin=d))
    if type(c) is not ndarray:
        return _numpy(np.tile, (c, reps))
    if d < c.ndim:
        tup = (1,) * (c.ndim - d) + tup
    for t in tup:
        if t < 0:
            raise ValueError("negative dimensions are not allowed")
    shape_out = tuple(s * t for s, t in zip(c.shape, tup))
    inter = []
    for s, t in zip(c.shape, tup):
        inter += [t, s]
    expanded = c.reshape(tuple(x for s in c.shape for x in (1, s)))
    if not c.size:
        return zeros(shape_out, c.dtype)
    return broadcast_to(expanded, tuple(inter)).copy().reshape(shape_out)


_MAX_REPEAT_LIST = 256


def repeat(a, repeats, axis=None):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.repeat, (a, repeats, axis))
    if type(repeats) is ndarray:  # counts in array data: the output shape depends on it
        return _numpy(np.repeat, (a, repeats, axis), why="array repeats", warn=True)
    if type(repeats) is int and -2**62 < repeats < 2**62:
        reps = None  # (one count, as it is)
    else:
        reps = np.asarray(repeats).astype(np.intp)  # (NumPy's cast: floats truncate, strings raise)
        if reps.ndim > 1:
            raise ValueError("object too deep for desired array")
    if axis is None:
        a = a.reshape(-1) if a._c_contiguous else a.copy().reshape(-1)
        ax = 0
    else:
        if a.ndim == 0:
            a = a.reshape((1,))
        ax = _norm_axis(operator.index(axis), a.ndim)
    n = a.shape[ax]
    if reps is None or reps.ndim == 0 or reps.size == 1:
        r = repeats if reps is None else int(reps.reshape(-1)[0]) if reps.size == 1 else int(reps)
        if r < 0:
            raise ValueError("repeats may not contain negative values.")
        shape = a.shape[:ax] + (n * r,) + a.shape[ax + 1:]
        if a.size == 0 or r == 0:
            return zeros(shape, a.dtype)
        b = a[(slice(None),) * (ax + 1) + (None,)]
        return b._broadcast_to(a.shape[:ax + 1] + (r,) + a.shape[ax + 1:]).copy().reshape(shape)
    if reps.size != n:
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({reps.size},)")
    if (reps < 0).any():
        raise ValueError("repeats may not contain negative values.")
    if n > _MAX_REPEAT_LIST:
        return _numpy(np.repeat, (a, repeats, axis), why="long repeats list", warn=True)
    total = int(reps.sum())
    shape = a.shape[:ax] + (total,) + a.shape[ax + 1:]
    res = empty(shape, a.dtype)
    pos = 0
    for i, r in enumerate(reps.tolist()):
        if r:
            src = a[(slice(None),) * ax + (slice(i, i + 1),)]
            res[(slice(None),) * ax + (slice(pos, pos + r),)] = src
            pos += r
    return res


def rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    m = asarray(m)
    if type(m) is not ndarray:
        return _numpy(np.rot90, (m, k, axes))
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= m.ndim or axes[0] < -m.ndim or axes[1] >= m.ndim or axes[1] < -m.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return m[:]
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    axes_list = list(range(m.ndim))
    axes_list[axes[0]], axes_list[axes[1]] = axes_list[axes[1]], axes_list[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), axes_list)
    return flip(transpose(m, axes_list), axes[1])


def rollaxis(a, axis, start=0):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.rollaxis, (a, axis, start))
    n = a.ndim
    axis = _norm_axis(operator.index(axis), n)
    if start < 0:
        start += n
    msg = "'%s' arg requires %d <= %s < %d, but %d was passed in"
    if not (0 <= start < n + 1):
        raise np.exceptions.AxisError(msg % ("start", -n, "start", n + 1, start))
    if axis < start:
        start -= 1
    if axis == start:
        return a[...]
    axes = list(range(0, n))
    axes.remove(axis)
    axes.insert(start, axis)
    return a._transpose(tuple(axes))


def append(arr, values, axis=None):
    arr = asarray(arr)
    if type(arr) is not ndarray:
        return _numpy(np.append, (arr, values, axis))
    if axis is None:
        if arr.ndim != 1:
            arr = arr.reshape(-1) if arr._c_contiguous else arr.copy().reshape(-1)
        v = asarray(values)
        if type(v) is not ndarray:
            return _numpy(np.append, (arr, values, axis))
        values = v.reshape(-1) if v._c_contiguous else v.copy().reshape(-1)
        axis = arr.ndim - 1
    return concatenate((arr, values), axis=axis)


def _block_format_index(index):
    return "arrays" + "".join(f"[{i}]" for i in index if i is not None)


def _block_check_depths_match(arrays, parent_index=[]):
    if type(arrays) is tuple:
        raise TypeError(f"{_block_format_index(parent_index)} is a tuple. Only lists can be used to arrange "
                        "blocks, and np.block does not allow implicit conversion from tuple to ndarray.")
    elif type(arrays) is list and len(arrays) > 0:
        idxs_ndims = (_block_check_depths_match(arr, parent_index + [i]) for i, arr in enumerate(arrays))
        first_index, max_arr_ndim, final_size = next(idxs_ndims)
        for index, nd, size in idxs_ndims:
            final_size += size
            if nd > max_arr_ndim:
                max_arr_ndim = nd
            if len(index) != len(first_index):
                raise ValueError(
                    "List depths are mismatched. First element was at depth {}, but there is an element at depth "
                    "{} ({})".format(len(first_index), len(index), _block_format_index(index)))
            if index[-1] is None:
                first_index = index
        return first_index, max_arr_ndim, final_size
    elif type(arrays) is list and len(arrays) == 0:
        return parent_index + [None], 0, 0
    else:
        return parent_index, np.ndim(arrays) if type(arrays) is not ndarray else arrays.ndim, (
            np.size(arrays) if type(arrays) is not ndarray else arrays.size)


def _block(arrays, max_depth, result_ndim, depth=0):
    if depth < max_depth:
        arrs = [_block(arr, max_depth, result_ndim, depth + 1) for arr in arrays]
        return concatenate(arrs, axis=-(max_depth - depth))
    a = asarray(arrays)
    if type(a) is not ndarray:
        raise _BlockForeign
    return a if a.ndim >= result_ndim else a.reshape((1,) * (result_ndim - a.ndim) + a.shape)


class _BlockForeign(Exception):
    pass


def block(arrays):
    bottom_index, arr_ndim, final_size = _block_check_depths_match(arrays)
    list_ndim = len(bottom_index)
    if bottom_index and bottom_index[-1] is None:
        raise ValueError(f"List at {_block_format_index(bottom_index)} cannot be empty")
    result_ndim = max(arr_ndim, list_ndim)
    try:
        result = _block(arrays, list_ndim, result_ndim)
    except _BlockForeign:
        return _numpy(np.block, (arrays,))
    if list_ndim == 0:
        result = result.copy()
    return result


def _split_ndim_check(ary, n, name):
    nd = ary.ndim if type(ary) is ndarray else np.ndim(ary)
    if nd < n:
        raise ValueError(f"{name} only works on arrays of {n} or more dimensions")
    return nd


def hsplit(ary, indices_or_sections):
    if (ary.ndim if type(ary) is ndarray else np.ndim(ary)) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    a = asarray(ary)
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    _split_ndim_check(ary, 2, "vsplit")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    _split_ndim_check(ary, 3, "dsplit")
    return split(ary, indices_or_sections, 2)


def unstack(x, /, *, axis=0):
    if not hasattr(x, "ndim"):  # (NumPy's unstack takes arrays only: x.ndim)
        raise AttributeError(f"'{type(x).__name__}' object has no attribute 'ndim'")
    x = asarray(x)
    if type(x) is not ndarray:
        return _numpy(np.unstack, (x,), dict(axis=axis))
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    m = moveaxis(x, axis, 0)
    return tuple(m[i] for i in range(m.shape[0]))


def resize(a, new_shape):
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.resize, (a, new_shape))
    a = a.reshape(-1) if a._c_contiguous else a.copy().reshape(-1)
    new_size = 1
    for dim_length in new_shape:
        new_size *= dim_length
        if dim_length < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
    if a.size == 0 or new_size == 0:
        return zeros_like(a, shape=new_shape)
    repeats = -(-new_size // a.size)
    b = broadcast_to(a[None, :], (repeats, a.size)).copy().reshape(-1)[:new_size]
    return b.reshape(new_shape)


# ------------------------------------------------------------ function_base

def _del_ins_setup(arr, axis):
    ndim = arr.ndim
    arrorder = "F" if _fnc(arr) else "C"
    if axis is None:
        if ndim != 1:
            arr = arr.reshape(-1) if arr._c_contiguous else arr.copy().reshape(-1)
        ndim = arr.ndim
        axis = ndim - 1
    else:
        axis = _norm_axis(operator.index(axis), ndim)
    return arr, ndim, arrorder, axis


def _copy_kept(new, arr, axis, keep):
    """new[..., :, ...] = arr[..., keep, ...] for a host boolean mask `keep`
    along `axis`: one slice assignment per run of kept positions."""
    ndim = arr.ndim
    pos = 0
    n = len(keep)
    i = 0
    while i < n:
        if not keep[i]:
            i += 1
            continue
        j = i
        while j < n and keep[j]:
            j += 1
        sl = [slice(None)] * ndim
        sl2 = [slice(None)] * ndim
        sl[axis] = slice(pos, pos + j - i)
        sl2[axis] = slice(i, j)
        new[tuple(sl)] = arr[tuple(sl2)]
        pos += j - i
        i = j


_MAX_INDEX_LIST = 256


def delete(arr, obj, axis=None):
    arr = asarray(arr)
    if type(arr) is not ndarray:
        return _numpy(np.delete, (arr, obj, axis))
    if type(obj) is ndarray:  # indices in array data
        return _numpy(np.delete, (arr, obj, axis), why="array indices", warn=True)
    arr, ndim, arrorder, axis = _del_ins_setup(arr, axis)
    slobj = [slice(None)] * ndim
    N = arr.shape[axis]
    newshape = list(arr.shape)
    if isinstance(obj, slice):
        start, stop, step = obj.indices(N)
        xr = range(start, stop, step)
        numtodel = len(xr)
        if numtodel <= 0:
            return arr.copy(order=arrorder)
        if step < 0:
            step = -step
            start = xr[-1]
            stop = xr[0] + 1
        newshape[axis] -= numtodel
        new = empty(newshape, arr.dtype, arrorder)
        if start != 0:
            slobj[axis] = slice(None, start)
            new[tuple(slobj)] = arr[tuple(slobj)]
        if stop != N:
            slobj[axis] = slice(stop - numtodel, None)
            slobj2 = [slice(None)] * ndim
            slobj2[axis] = slice(stop, None)
            new[tuple(slobj)] = arr[tuple(slobj2)]
        if step != 1:
            keep = np.ones(stop - start, dtype=bool)
            keep[:stop - start:step] = False
            slobj2 = [slice(None)] * ndim
            slobj2[axis] = slice(start, stop)
            sub = arr[tuple(slobj2)]
            slobj[axis] = slice(start, stop - numtodel)
            _copy_kept(new[tuple(slobj)], sub, axis, keep)
        return new
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
        single_value = True
    else:
        single_value = False
        _obj = obj
        obj = np.asarray(obj)
        if obj.size == 0 and not isinstance(_obj, np.ndarray):
            obj = obj.astype(np.intp)
        elif obj.size == 1 and obj.dtype.kind in "ui":
            obj = obj.item()
            single_value = True
    if single_value:
        if obj < -N or obj >= N:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {N}")
        if obj < 0:
            obj += N
        newshape[axis] -= 1
        new = empty(newshape, arr.dtype, arrorder)
        slobj[axis] = slice(None, obj)
        new[tuple(slobj)] = arr[tuple(slobj)]
        slobj[axis] = slice(obj, None)
        slobj2 = [slice(None)] * ndim
        slobj2[axis] = slice(obj + 1, None)
        new[tuple(slobj)] = arr[tuple(slobj2)]
        return new
    if obj.size > _MAX_INDEX_LIST:
        return _numpy(np.delete, (arr, obj, axis), why="long index list", warn=True)
    if obj.dtype == bool:
        if obj.shape != (N,):
            raise ValueError("boolean array argument obj to delete must be one dimensional and match the axis "
                             f"length of {N}")
        keep = ~obj
    else:
        keep = np.ones(N, dtype=bool)
        keep[obj, ] = False  # (NumPy's index checks and errors)
    newshape[axis] = int(keep.sum())
    # NumPy's arr[..., keep, ...] is laid out with `axis` outermost, then
    # the other axes in the input's memory order.
    others = sorted((d for d in range(ndim) if d != axis), key=lambda d: -abs(arr.strides[d]))
    perm = [axis] + others
    buf = empty([newshape[d] for d in perm], arr.dtype)
    new = buf._transpose(tuple(perm.index(d) for d in range(ndim)))
    _copy_kept(new, arr, axis, keep)
    return new


def insert(arr, obj, values, axis=None):
    arr = asarray(arr)
    if type(arr) is not ndarray:
        return _numpy(np.insert, (arr, obj, values, axis))
    if type(obj) is ndarray:  # indices in array data
        return _numpy(np.insert, (arr, obj, values, axis), why="array indices", warn=True)
    arr, ndim, arrorder, axis = _del_ins_setup(arr, axis)
    slobj = [slice(None)] * ndim
    N = arr.shape[axis]
    newshape = list(arr.shape)
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(N), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            if obj.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(obj)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    if indices.size == 1:
        index = indices.item()
        if index < -N or index > N:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {N}")
        if index < 0:
            index += N
        values = array(values, copy=None, ndmin=arr.ndim, dtype=arr.dtype)
        if type(values) is not ndarray:
            return _numpy(np.insert, (arr, obj, values, axis))
        if indices.ndim == 0:
            values = moveaxis(values, 0, axis)
        numnew = values.shape[axis]
        newshape[axis] += numnew
        new = empty(newshape, arr.dtype, arrorder)
        slobj[axis] = slice(None, index)
        new[tuple(slobj)] = arr[tuple(slobj)]
        slobj[axis] = slice(index, index + numnew)
        new[tuple(slobj)] = values
        slobj[axis] = slice(index + numnew, None)
        slobj2 = [slice(None)] * ndim
        slobj2[axis] = slice(index, None)
        new[tuple(slobj)] = arr[tuple(slobj2)]
        return new
    elif indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    if indices.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if indices.size > _MAX_INDEX_LIST:
        return _numpy(np.insert, (arr, obj, values, axis), why="long index list", warn=True)
    indices = indices.astype(np.intp)
    indices[indices < 0] += N
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    newshape[axis] += numnew
    old_mask = np.ones(newshape[axis], dtype=bool)
    old_mask[indices] = False  # (NumPy's index checks and errors)
    v = asarray(values)
    if type(v) is not ndarray:
        return _numpy(np.insert, (arr, obj, values, axis))
    new = empty(newshape, arr.dtype, arrorder)
    # new[..., indices, ...] = values: values broadcast to the indexed shape.
    ishape = list(newshape)
    ishape[axis] = numnew
    vb = broadcast_to(v, tuple(ishape))
    for j, i in enumerate(indices.tolist()):
        sl = [slice(None)] * ndim
        sl2 = [slice(None)] * ndim
        sl[axis] = i
        sl2[axis] = j
        new[tuple(sl)] = vb[tuple(sl2)]
    # new[..., old_mask, ...] = arr
    pos = 0
    n = len(old_mask)
    i = 0
    while i < n:
        if not old_mask[i]:
            i += 1
            continue
        j = i
        while j < n and old_mask[j]:
            j += 1
        sl = [slice(None)] * ndim
        sl2 = [slice(None)] * ndim
        sl[axis] = slice(i, j)
        sl2[axis] = slice(pos, pos + j - i)
        new[tuple(sl)] = arr[tuple(sl2)]
        pos += j - i
        i = j
    return new


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [c if type(c) in (int, float, complex) else asarray(c) for c in choicelist]
    choices.append(default if type(default) in (int, float, complex) else asarray(default))
    conds = [asarray(c) for c in condlist]
    if any(type(c) not in (int, float, complex, ndarray) for c in choices) or any(
            type(c) is not ndarray for c in conds):
        return _numpy(np.select, (condlist, choicelist, default))
    try:
        dtype = np.result_type(*[c.dtype if type(c) is ndarray else c for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    if not _core.supported_dtype(dtype):
        return _numpy(np.select, (condlist, choicelist, default))
    conds = broadcast_arrays(*conds)
    choices = broadcast_arrays(*[c if type(c) is ndarray else full((), c, dtype) for c in choices])
    for i, cond in enumerate(conds):
        if cond.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    if choices[0].ndim == 0:
        result_shape = conds[0].shape
    else:
        result_shape = np.broadcast_shapes(conds[0].shape, choices[0].shape)
    result = broadcast_to(choices[-1].astype(dtype, copy=False), result_shape)
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        c = broadcast_to(choice.astype(dtype, copy=False), result_shape)
        result = where(broadcast_to(cond, result_shape), c, result)
    if not result._c_contiguous:
        result = result.copy(order="C")  # (NumPy fills a new C-ordered array)
    return result


def piecewise(x, condlist, funclist, *args, **kw):
    x = asarray(x)
    if type(x) is not ndarray:
        return _numpy(np.piecewise, (x, condlist, funclist) + args, kw)
    n2 = len(funclist)
    if type(condlist) is ndarray:
        if condlist.ndim == 0:
            condlist = [condlist]
        elif condlist.ndim == 1 and x.ndim != 0:
            condlist = [condlist]
    elif np.isscalar(condlist) or (not isinstance(condlist[0], (list, ndarray, np.ndarray)) and x.ndim != 0):
        condlist = [condlist]
    if type(condlist) is ndarray:
        conds = condlist if condlist.dtype == np.bool_ else condlist.astype(bool)
    else:
        parts = [asarray(c) for c in condlist]
        if any(type(p) is not ndarray for p in parts):
            return _numpy(np.piecewise, (x, condlist, funclist) + args, kw)
        conds = _stack_same([p if p.dtype == np.bool_ else p.astype(bool) for p in parts])
    n = conds.shape[0] if conds.ndim else 0
    if conds.ndim == 0:
        raise TypeError("len() of unsized object")
    if n == n2 - 1:
        condelse = _U["logical_not"](_any(conds, axis=0, keepdims=True))
        conds = concatenate([conds, condelse], axis=0)
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    cshape = conds.shape[1:]
    if len(cshape) > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {len(cshape)} were "
                         "indexed")
    for d, (c, s) in enumerate(zip(cshape, x.shape)):
        if c != s:
            raise IndexError(f"boolean index did not match indexed array along axis {d}; size of axis is {s} "
                             f"but size of corresponding boolean axis is {c}")
    if len(cshape) < x.ndim:  # a boolean index over the leading axes
        conds = conds[(Ellipsis,) + (None,) * (x.ndim - len(cshape))]
    from ._errstate import errstate
    from ._ufuncs import ufunc

    y = zeros_like(x)
    for k, func in enumerate(funclist):
        cond = conds[k]
        if not callable(func):
            v = asarray(func)
            if type(v) is not ndarray or v.ndim != 0:
                return _numpy(np.piecewise, (x, condlist, funclist) + args, kw, why="array values", warn=True)
        elif isinstance(func, ufunc):
            # Elementwise: computed on all of x and selected (NumPy computes it
            # on the selected elements only, so errors elsewhere are ignored).
            with errstate(all="ignore"):
                v = func(x, *args, **kw)
            if type(v) is not ndarray or v.shape != x.shape:
                return _numpy(np.piecewise, (x, condlist, funclist) + args, kw, why="function", warn=True)
        else:
            return _numpy(np.piecewise, (x, condlist, funclist) + args, kw, why="Python functions", warn=True)
        if v.dtype != y.dtype:
            v = v.astype(y.dtype)
        y = where(cond, v, y)
    ref = empty_like(x)  # zeros_like(x)'s layout, as NumPy's result
    if tuple(ref.strides) != tuple(y.strides):
        ref[...] = y
        return ref
    return y


def _stack_same(parts):
    shapes = {p.shape for p in parts}
    if len(shapes) != 1:
        raise ValueError("setting an array element with a sequence. The requested array has an inhomogeneous "
                         "shape after 1 dimensions.")
    return concatenate([p[None] for p in parts], axis=0)


def copyto(dst, src, casting="same_kind", where=True):
    if type(dst) is not ndarray:
        if isinstance(dst, np.ndarray):
            return np.copyto(dst, src, casting=casting, where=where)
        raise TypeError(f"copyto() argument 1 must be numpy.ndarray, not {type(dst).__name__}")
    w = where
    if type(src) in _PYSCALARS:
        # NumPy's rules for a Python scalar (NEP 50), checked on a 0-d array.
        probe = np.empty((), dst.dtype)
        np.copyto(probe, src, casting=casting)
        s = asarray(probe)
    else:
        s = asarray(src)
        if type(s) is not ndarray:
            return _numpy(np.copyto, (dst, s), dict(casting=casting, where=where))
        if not np.can_cast(s.dtype, dst.dtype, casting):
            raise TypeError(f"Cannot cast array data from {s.dtype!r} to {dst.dtype!r} according to the rule "
                            f"{casting!r}")
        if s.dtype != dst.dtype:
            s = s.astype(dst.dtype)
    if w is True:
        dst[...] = broadcast_to(s, dst.shape) if s.shape != dst.shape else s
        return
    wa = asarray(w)
    if type(wa) is not ndarray:
        return _numpy(np.copyto, (dst, src), dict(casting=casting, where=where))
    if wa.dtype != np.bool_:
        if not np.can_cast(wa.dtype, np.bool_, "safe"):
            raise TypeError(f"Cannot cast array data from {wa.dtype!r} to dtype('bool') according to the rule "
                            "'safe'")
    s = broadcast_to(s, dst.shape)
    wa = broadcast_to(wa, dst.shape)
    dst[...] = _where(wa, s, dst)


def astype(x, dtype, /, *, copy=True, device=None):
    if type(x) is not ndarray:
        if not (isinstance(x, np.ndarray) or np.isscalar(x)):
            raise TypeError(f"Input should be a NumPy array or scalar. It is a {type(x)} instead.")
        if not isinstance(x, np.ndarray):
            return np.astype(x, dtype, copy=copy, device=device)
        x = asarray(x)
    check_device(device)
    return x.astype(dtype, copy=copy)


_POSSIBLE_FLAGS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
                   "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O",
                   "E": "E", "ENSUREARRAY": "E"}


def require(a, dtype=None, requirements=None, *, like=None):
    if not requirements:
        return asarray(a, dtype=dtype)
    requirements = {_POSSIBLE_FLAGS[x.upper()] for x in requirements}
    requirements.discard("E")
    order = "A"
    if requirements >= {"C", "F"}:
        raise ValueError('Cannot specify both "C" and "F" order')
    elif "C" in requirements:
        order = "C"
        requirements.remove("C")
    elif "F" in requirements:
        order = "F"
        requirements.remove("F")
    if type(a) is ndarray:
        arr = a
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            arr = arr.astype(dtype, order="F" if (order == "F" or order == "A" and _fnc(arr)) else "C")
        elif order == "C" and not arr._c_contiguous:
            arr = arr.copy(order="C")
        elif order == "F" and not arr._f_contiguous:
            arr = arr.copy(order="F")
    else:
        arr = array(a, dtype=dtype, order=order, copy=None)
        if type(arr) is not ndarray:
            return np.require(arr, dtype, requirements)
    for prop in requirements:
        if not arr.flags[prop]:
            return arr.copy(order)
    return arr


def isfortran(a):
    if type(a) is not ndarray:
        return np.isfortran(a)
    return _fnc(a)


def choose(a, choices, out=None, mode="raise"):
    a = asarray(a)
    if type(a) is not ndarray:
        return _numpy(np.choose, (a, choices), dict(out=out, mode=mode))
    if type(choices) is ndarray:
        chs = [choices[i] for i in range(choices.shape[0])] if choices.ndim else None
    else:
        chs = [asarray(c) for c in choices]
    if chs is None or any(type(c) is not ndarray for c in chs) or (out is not None and type(out) is not ndarray):
        return _numpy(np.choose, (a, choices), dict(out=out, mode=mode), why="choices", warn=True)
    n = len(chs)
    if n == 0:
        raise ValueError("0-length sequence.")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if not np.can_cast(a.dtype, np.intp, "safe"):
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to dtype('int64') according to the rule 'safe'")
    dtype = np.result_type(*[c.dtype for c in chs])
    shape = np.broadcast_shapes(a.shape, *[c.shape for c in chs])
    idx = a.astype(np.intp) if a.dtype != np.intp else a
    if mode == "raise":
        if bool(_any(_U["logical_or"](_U["less"](idx, 0), _U["greater_equal"](idx, n)))):
            raise ValueError("invalid entry in choice array")
    elif mode == "clip":
        idx = _U["minimum"](_U["maximum"](idx, 0), n - 1)
    else:
        idx = _U["remainder"](idx, n)
    r = broadcast_to(chs[-1].astype(dtype, copy=False), shape)
    for i in range(n - 2, -1, -1):
        r = where(_U["equal"](idx, i), chs[i].astype(dtype, copy=False), r)
    if r.shape != shape or n == 1:
        r = broadcast_to(r, shape).copy()
    if out is not None:
        if out.shape != shape:
            raise ValueError("choose: invalid shape for output array.")
        out[...] = r
        return out
    return r if r._c_contiguous else r.copy(order="C")


# ------------------------------------------------------------------------ pad

def _as_pairs(x, ndim, as_index=False):
    if x is None:
        return ((None, None),) * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x < 0:
                raise ValueError("index can't contain negative values")
            return ((x[0], x[0]),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return ((x[0], x[1]),) * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _view_roi(a, original_area_slice, axis):
    axis += 1
    sl = (slice(None),) * axis + original_area_slice[axis:]
    return a[sl]


def _pad_simple(a, pad_width):
    new_shape = tuple(int(left) + size + int(right) for size, (left, right) in zip(a.shape, pad_width))
    padded = empty(new_shape, a.dtype, "F" if _fnc(a) else "C")
    original_area_slice = tuple(slice(int(left), int(left) + size) for size, (left, right) in zip(a.shape, pad_width))
    padded[original_area_slice] = a
    return padded, original_area_slice


def _set_pad_area(padded, axis, width_pair, value_pair):
    padded[_slice_at_axis(slice(None, width_pair[0]), axis)] = value_pair[0]
    padded[_slice_at_axis(slice(padded.shape[axis] - width_pair[1], None), axis)] = value_pair[1]


def _get_edges(padded, axis, width_pair):
    left_index = width_pair[0]
    left_edge = padded[_slice_at_axis(slice(left_index, left_index + 1), axis)]
    right_index = padded.shape[axis] - width_pair[1]
    right_edge = padded[_slice_at_axis(slice(right_index - 1, right_index), axis)]
    return left_edge, right_edge


def _linspace_to(start, stop, num, dtype, axis):
    """np.linspace(start, stop, num, endpoint=False, dtype=dtype, axis=axis)
    for a scalar start and an array stop, with NumPy's formula."""
    dt = np.result_type(start, stop.dtype, 1.0)
    delta = _U["subtract"](stop, start, dtype=dt)
    y = arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if num > 0:
        step = delta / num
        any_zero = _any(_U["equal"](step, 0))
        y = where(any_zero, (y / num) * delta, y * step)
    else:
        y = y * delta
    y = y + start
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if np.issubdtype(dtype, np.integer):
        y = _U["floor"](y)
    return y.astype(dtype, copy=False)


def _get_linear_ramps(padded, axis, width_pair, end_value_pair):
    edge_pair = _get_edges(padded, axis, width_pair)
    left_ramp, right_ramp = (
        _linspace_to(end_value, edge.squeeze(axis), width, padded.dtype, axis)
        for end_value, edge, width in zip(end_value_pair, edge_pair, width_pair))
    right_ramp = right_ramp[_slice_at_axis(slice(None, None, -1), axis)]
    return left_ramp, right_ramp


def _set_reflect_both(padded, axis, width_pair, method, original_period, include_edge=False):
    left_pad, right_pad = width_pair
    old_length = padded.shape[axis] - right_pad - left_pad
    if include_edge:
        old_length = old_length // original_period * original_period
        edge_offset = 1
    else:
        old_length = (old_length - 1) // (original_period - 1) * (original_period - 1) + 1
        edge_offset = 0
        old_length -= 1
    if left_pad > 0:
        chunk_length = min(old_length, left_pad)
        stop = left_pad - edge_offset
        start = stop + chunk_length
        left_chunk = padded[_slice_at_axis(slice(start, stop, -1), axis)]
        if method == "odd":
            edge_slice = _slice_at_axis(slice(left_pad, left_pad + 1), axis)
            left_chunk = 2 * padded[edge_slice] - left_chunk
        padded[_slice_at_axis(slice(left_pad - chunk_length, left_pad), axis)] = left_chunk
        left_pad -= chunk_length
    if right_pad > 0:
        chunk_length = min(old_length, right_pad)
        start = -right_pad + edge_offset - 2
        stop = start - chunk_length
        right_chunk = padded[_slice_at_axis(slice(start, stop, -1), axis)]
        if method == "odd":
            edge_slice = _slice_at_axis(slice(-right_pad - 1, -right_pad), axis)
            right_chunk = 2 * padded[edge_slice] - right_chunk
        start = padded.shape[axis] - right_pad
        padded[_slice_at_axis(slice(start, start + chunk_length), axis)] = right_chunk
        right_pad -= chunk_length
    return left_pad, right_pad


def _set_wrap_both(padded, axis, width_pair, original_period):
    left_pad, right_pad = width_pair
    period = padded.shape[axis] - right_pad - left_pad
    period = period // original_period * original_period
    new_left_pad = 0
    new_right_pad = 0
    if left_pad > 0:
        slice_end = left_pad + period
        slice_start = slice_end - min(period, left_pad)
        right_chunk = padded[_slice_at_axis(slice(slice_start, slice_end), axis)]
        if left_pad > period:
            pad_area = _slice_at_axis(slice(left_pad - period, left_pad), axis)
            new_left_pad = left_pad - period
        else:
            pad_area = _slice_at_axis(slice(None, left_pad), axis)
        padded[pad_area] = right_chunk
    if right_pad > 0:
        slice_start = -right_pad - period
        slice_end = slice_start + min(period, right_pad)
        left_chunk = padded[_slice_at_axis(slice(slice_start, slice_end), axis)]
        if right_pad > period:
            pad_area = _slice_at_axis(slice(-right_pad, -right_pad + period), axis)
            new_right_pad = right_pad - period
        else:
            pad_area = _slice_at_axis(slice(-right_pad, None), axis)
        padded[pad_area] = left_chunk
    return new_left_pad, new_right_pad


_PAD_KWARGS = {
    "empty": [], "edge": [], "wrap": [], "constant": ["constant_values"], "linear_ramp": ["end_values"],
    "maximum": ["stat_length"], "mean": ["stat_length"], "median": ["stat_length"], "minimum": ["stat_length"],
    "reflect": ["reflect_type"], "symmetric": ["reflect_type"],
}


def pad(array, pad_width, mode="constant", **kwargs):
    a = asarray(array)
    if type(a) is not ndarray:
        return _numpy(np.pad, (a, pad_width, mode), kwargs)
    if not callable(mode) and not isinstance(pad_width, dict):
        pw = np.asarray(pad_width)  # (converted before the mode is read, as NumPy does)
        if not pw.dtype.kind == "i":
            raise TypeError("`pad_width` must be of integral type.")
    if callable(mode) or isinstance(pad_width, dict) or (isinstance(mode, str) and mode in (
            "maximum", "mean", "median", "minimum")):
        return _numpy(np.pad, (a, pad_width, mode), kwargs, why="mode" if not isinstance(pad_width, dict)
                      else "dict pad_width", warn=True)
    pw = _as_pairs(pw, a.ndim, as_index=True)
    try:
        unsupported_kwargs = set(kwargs) - set(_PAD_KWARGS[mode])
    except KeyError:  # (an unhashable mode: NumPy's TypeError)
        raise ValueError(f"mode '{mode}' is not supported") from None
    if unsupported_kwargs:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported_kwargs}")
    pw = [(int(lo), int(hi)) for lo, hi in pw]
    padded, original_area_slice = _pad_simple(a, pw)
    axes = range(padded.ndim)
    if mode == "constant":
        values = _as_pairs(kwargs.get("constant_values", 0), padded.ndim)
        for axis, width_pair, value_pair in zip(axes, pw, values):
            roi = _view_roi(padded, original_area_slice, axis)
            _set_pad_area(roi, axis, width_pair, value_pair)
    elif mode == "empty":
        pass
    elif a.size == 0:
        for axis, width_pair in zip(axes, pw):
            if a.shape[axis] == 0 and any(width_pair):
                raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    elif mode == "edge":
        for axis, width_pair in zip(axes, pw):
            roi = _view_roi(padded, original_area_slice, axis)
            _set_pad_area(roi, axis, width_pair, _get_edges(roi, axis, width_pair))
    elif mode == "linear_ramp":
        end_values = _as_pairs(kwargs.get("end_values", 0), padded.ndim)
        for axis, width_pair, value_pair in zip(axes, pw, end_values):
            roi = _view_roi(padded, original_area_slice, axis)
            _set_pad_area(roi, axis, width_pair, _get_linear_ramps(roi, axis, width_pair, value_pair))
    elif mode in {"reflect", "symmetric"}:
        method = kwargs.get("reflect_type", "even")
        include_edge = mode == "symmetric"
        for axis, (left_index, right_index) in zip(axes, pw):
            if a.shape[axis] == 1 and (left_index > 0 or right_index > 0):
                edge_pair = _get_edges(padded, axis, (left_index, right_index))
                _set_pad_area(padded, axis, (left_index, right_index), edge_pair)
                continue
            roi = _view_roi(padded, original_area_slice, axis)
            while left_index > 0 or right_index > 0:
                left_index, right_index = _set_reflect_both(roi, axis, (left_index, right_index), method,
                                                            a.shape[axis], include_edge)
    elif mode == "wrap":
        for axis, (left_index, right_index) in zip(axes, pw):
            roi = _view_roi(padded, original_area_slice, axis)
            original_period = padded.shape[axis] - right_index - left_index
            while left_index > 0 or right_index > 0:
                left_index, right_index = _set_wrap_both(roi, axis, (left_index, right_index), original_period)
    return padded


for _name in __all__:
    _f = globals()[_name]
    _npf = getattr(np, _name, None)
    if _npf is not None and not _f.__doc__:
        _f.__doc__ = _npf.__doc__
del _name, _f, _npf

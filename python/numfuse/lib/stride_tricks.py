"""numpy.lib.stride_tricks for numfuse arrays: strided views recorded as
views (no copy, no task), so a contraction over a sliding window is one MDH
expression (``einsum('ijkl,kl->ij', sliding_window_view(img, (5, 5)), f)`` is
a 2-D convolution in one kernel)."""

import operator

import numpy as np

from .. import _core, _fallback
from .._creation import asarray
from .._manip import broadcast_arrays, broadcast_to  # noqa: F401

ndarray = _core.ndarray
broadcast_shapes = np.broadcast_shapes


def _to_array(x, subok):
    a = asarray(x)
    if type(a) is not ndarray:
        return None
    return a


def _element_strides(x, strides):
    item = x.itemsize
    out = []
    for s in strides:
        s = operator.index(s)
        if s % item:
            raise ValueError(f"as_strided: stride {s} is not a multiple of the item size ({item} bytes); numfuse "
                             "views address whole elements")
        out.append(s // item)
    return tuple(out)


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """numpy.lib.stride_tricks.as_strided on a numfuse array.

    Strides are in bytes, as in NumPy; they must be multiples of the item
    size. Unlike NumPy, the view is bounds-checked: a view that would reach
    outside the array's memory raises ValueError. The view is read-only if
    ``writeable=False`` or `x` is read-only."""
    a = _to_array(x, subok)
    if a is None:
        return _fallback.call_numpy(np.lib.stride_tricks.as_strided, (x,),
                                    dict(shape=shape, strides=strides, subok=subok, writeable=writeable),
                                    "numpy.lib.stride_tricks.as_strided")
    shp = tuple(a.shape) if shape is None else tuple(operator.index(s) for s in shape)
    if strides is None:
        if shape is None or not a._c_contiguous:
            st = tuple(a.strides)
        else:
            # NumPy's array interface has no strides for a C-contiguous array,
            # so the new shape gets C-contiguous strides.
            st, acc = [], a.itemsize
            for d in reversed(shp):
                st.append(acc)
                acc *= max(d, 1)
            st = tuple(reversed(st))
    else:
        st = tuple(strides)
    if len(st) != len(shp):
        raise ValueError("mismatch in length of strides and shape")
    for d in shp:
        if d < 0:
            raise ValueError("negative dimensions are not allowed")
    est = _element_strides(a, st)
    # How far the view reaches, in exact integers: beyond 2**62 bytes is
    # outside any buffer (and would overflow the core's 64-bit bounds check).
    if 0 not in shp and sum((d - 1) * abs(s) for d, s in zip(shp, est)) * a.itemsize >= 2**62:
        raise ValueError("as_strided: the view would reach outside the array's memory")
    return _core.as_strided(a, shp, est, bool(a._readonly) or not writeable)


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """numpy.lib.stride_tricks.sliding_window_view on a numfuse array: a view
    (read-only unless ``writeable=True``) with the window axes appended."""
    window_shape = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    a = _to_array(x, subok)
    if a is None:
        return _fallback.call_numpy(np.lib.stride_tricks.sliding_window_view, (x, window_shape),
                                    dict(axis=axis, subok=subok, writeable=writeable),
                                    "numpy.lib.stride_tricks.sliding_window_view")
    window_shape_array = np.array(window_shape)
    if np.any(window_shape_array < 0):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        axis = tuple(range(a.ndim))
        if len(window_shape) != len(axis):
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                             f"{len(window_shape)} window_shape elements and `x.ndim` is {a.ndim}.")
    else:
        axis = np.lib.array_utils.normalize_axis_tuple(axis, a.ndim, allow_duplicate=True)
        if len(window_shape) != len(axis):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(window_shape)} "
                             f"window_shape elements and {len(axis)} axes elements.")
    item = a.itemsize
    estr = tuple(s // item for s in a.strides)
    out_strides = estr + tuple(estr[ax] for ax in axis)
    trimmed = list(a.shape)
    for ax, dim in zip(axis, window_shape):
        if trimmed[ax] < dim:
            raise ValueError("window shape cannot be larger than input array shape")
        trimmed[ax] -= dim - 1
    out_shape = tuple(trimmed) + tuple(operator.index(w) for w in window_shape)
    return _core.as_strided(a, out_shape, out_strides, bool(a._readonly) or not writeable)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _fallback.module_getattr(np.lib.stride_tricks, "numfuse.lib.stride_tricks")(name)

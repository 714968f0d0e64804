"""Sorting, searching and what is built on them: sort, argsort, partition,
searchsorted, nonzero, take, unique, median, percentile, quantile.

The sorts, searches and gathers are numfuse's own parallel routines
(src/extern/sort.cc, gather.cc), computed at the call on the inputs'
computed memory (a sort needs every element of a row, so it is a sync point
for its input); what is built on them (unique's masks, median's and
quantile's interpolation) is recorded and fused like any other operation.
Order is NumPy's: ascending, NaNs last. argsort is stable whatever `kind`
says (NumPy's default kind leaves the order of equal elements unspecified).
"""

import operator

import numpy as np

from . import _core, _fallback
from ._core import ndarray
from ._creation import asarray
from ._manip import concatenate, moveaxis, where

_KINDS = {None, "quicksort", "quick", "mergesort", "merge", "heapsort", "heap", "stable"}


def _kind_is_stable(kind, stable):
    if kind not in _KINDS:
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")
    if stable is not None and kind is not None:
        raise ValueError("`kind` and `stable` parameters can't be provided at the same time. Use only one of them.")
    return bool(stable) or kind in ("stable", "mergesort", "merge")


def _axis(axis, nd):
    ax = operator.index(axis)
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(ax, nd)
    return ax % nd


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    a = asarray(a)
    if type(a) is not ndarray or order is not None:
        return _fallback.call_numpy(np.sort, (a,), dict(axis=axis, kind=kind, order=order, stable=stable),
                                    "numpy.sort (order= or a dtype numfuse does not hold)")
    st = _kind_is_stable(kind, stable)
    if axis is None:
        a, axis = a.ravel(), 0
    return _core.sort(a, _axis(axis, a.ndim), st)


def sort_inplace(a, axis=-1, kind=None, order=None, stable=None):
    """ndarray.sort."""
    if order is not None:
        a._to_numpy(True).sort(axis=axis, kind=kind, order=order)
        return
    st = _kind_is_stable(kind, stable)
    _core.sort_inplace(a, _axis(axis, a.ndim), st)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    a = asarray(a)
    if type(a) is not ndarray or order is not None:
        return _fallback.call_numpy(np.argsort, (a,), dict(axis=axis, kind=kind, order=order, stable=stable),
                                    "numpy.argsort (order= or a dtype numfuse does not hold)")
    _kind_is_stable(kind, stable)
    if axis is None:
        a, axis = a.ravel(), 0
    return _core.argsort(a, _axis(axis, a.ndim))


def _kth(kth, n):
    ks = np.atleast_1d(np.asarray(kth))
    if ks.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    for k in ks.ravel():
        if not -n <= k < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.partition: a fully sorted result is one of the arrangements NumPy's
    specification allows (the kth element in its sorted place, smaller ones
    before, larger ones after)."""
    a = asarray(a)
    if type(a) is not ndarray or order is not None or kind != "introselect":
        return _fallback.call_numpy(np.partition, (a, kth), dict(axis=axis, kind=kind, order=order),
                                    "numpy.partition (order=, kind= or a dtype numfuse does not hold)")
    if axis is None:
        a, axis = a.ravel(), 0
    ax = _axis(axis, a.ndim)
    _kth(kth, a.shape[ax])
    return _core.sort(a, ax, False)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.argpartition, as a full (stable) argsort: see partition."""
    a = asarray(a)
    if type(a) is not ndarray or order is not None or kind != "introselect":
        return _fallback.call_numpy(np.argpartition, (a, kth), dict(axis=axis, kind=kind, order=order),
                                    "numpy.argpartition (order=, kind= or a dtype numfuse does not hold)")
    if axis is None:
        a, axis = a.ravel(), 0
    ax = _axis(axis, a.ndim)
    _kth(kth, a.shape[ax])
    return _core.argsort(a, ax)


def searchsorted(a, v, side="left", sorter=None):
    a = asarray(a)
    scalar = np.ndim(v) == 0 and not isinstance(v, ndarray)
    vv = asarray(v)
    if type(a) is not ndarray or type(vv) is not ndarray:
        return _fallback.call_numpy(np.searchsorted, (a, v), dict(side=side, sorter=sorter),
                                    "numpy.searchsorted (a dtype numfuse does not hold)")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    dt = np.result_type(a.dtype, v if scalar else vv.dtype)
    if dt != a.dtype:
        a = a.astype(dt)
    if vv.dtype != dt:
        vv = vv.astype(dt)
    if sorter is not None:
        sorter = asarray(sorter)
        if sorter.shape != a.shape:
            raise ValueError("sorter.size must equal a.size")
        if sorter.dtype != np.int64:
            sorter = sorter.astype(np.int64)
        s = np.asarray(sorter)
        if s.size and (s.min() < 0 or s.max() >= a.shape[0]):
            raise ValueError("Sorter index out of range.")
    r = _core.searchsorted(a, vv, side == "right", sorter)
    return np.int64(r.item()) if scalar else r


def nonzero(a):
    a = asarray(a)
    if type(a) is not ndarray:
        return _fallback.call_numpy(np.nonzero, (a,), {}, "numpy.nonzero (a dtype numfuse does not hold)")
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead. "
                         "If the context of this error is of the form `arr[nonzero(cond)]`, just use `arr[cond]`.")
    return _core.nonzero(a)


def flatnonzero(a):
    return nonzero(asarray(a).ravel())[0]


def argwhere(a):
    a = asarray(a)
    if type(a) is not ndarray:
        return _fallback.call_numpy(np.argwhere, (a,), {}, "numpy.argwhere (a dtype numfuse does not hold)")
    if a.ndim == 0:
        return _argwhere_0d(a.reshape(1))
    idx = _core.nonzero(a)
    from ._manip import stack
    return stack(idx, axis=1)


def _argwhere_0d(a):
    from ._creation import zeros
    n = int(bool(a[0]))
    return zeros((n, 0), dtype=np.int64)


def take(a, indices, axis=None, out=None, mode="raise"):
    a = asarray(a)
    if type(a) is not ndarray or out is not None or mode != "raise":
        return _fallback.call_numpy(np.take, (a, indices), dict(axis=axis, out=out, mode=mode),
                                    "numpy.take (out=, mode= or a dtype numfuse does not hold)")
    if axis is None:
        a, axis = a.ravel(), 0
    ax = _axis(axis, a.ndim)
    idx = asarray(indices)
    if type(idx) is not ndarray or idx.dtype.kind not in "iub":
        if np.asarray(indices).dtype.kind not in "iu":
            raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule 'safe'"
                            if np.asarray(indices).dtype.kind == "f" else "index array must be integers")
    if idx.dtype.kind == "b":
        raise TypeError("Cannot cast array data from dtype('bool') to dtype('int64') according to the rule 'safe'")
    if idx.dtype != np.int64:
        idx = idx.astype(np.int64)
    return _core.take(a, idx, ax)


def compress(condition, a, axis=None, out=None):
    a = asarray(a)
    cond = asarray(condition)
    if type(a) is not ndarray or type(cond) is not ndarray or out is not None or cond.ndim != 1:
        return _fallback.call_numpy(np.compress, (condition, a), dict(axis=axis, out=out),
                                    "numpy.compress (out=, a dtype numfuse does not hold)")
    if axis is None:
        a, axis = a.ravel(), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if cond.shape[0] > n:
        raise IndexError(f"index {n} is out of bounds for axis {ax} with size {n}")
    return _core.take(a, nonzero(cond)[0], ax)


def extract(condition, arr):
    return take(asarray(arr).ravel(), nonzero(asarray(condition).ravel())[0])


def take_along_axis(arr, indices, axis=-1):
    arr = asarray(arr)
    idx = asarray(indices)
    if type(arr) is not ndarray or type(idx) is not ndarray:
        return _fallback.call_numpy(np.take_along_axis, (arr, indices), dict(axis=axis),
                                    "numpy.take_along_axis (a dtype numfuse does not hold)")
    if idx.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return take(arr.ravel(), idx)
    if idx.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ax = _axis(axis, arr.ndim)
    n = arr.shape[ax]
    shape = np.broadcast_shapes(tuple(1 if d == ax else s for d, s in enumerate(arr.shape)),
                                tuple(1 if d == ax else s for d, s in enumerate(idx.shape)))
    out_shape = tuple(idx.shape[d] if d == ax else shape[d] for d in range(arr.ndim))
    from ._manip import broadcast_to
    from ._creation import arange
    src = broadcast_to(arr, tuple(n if d == ax else shape[d] for d in range(arr.ndim))).copy()
    ix = broadcast_to(idx, out_shape).astype(np.int64)
    if ix.size:
        lo, hi = int(ix.min()), int(ix.max())
        if hi >= n or lo < -n:
            bad = hi if hi >= n else lo
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
    ix = where(ix < 0, ix + n, ix)
    # Flat positions in src (C order): the index along `axis` plus each
    # point's offset over the other axes.
    strides = [1] * arr.ndim
    for d in range(arr.ndim - 2, -1, -1):
        strides[d] = strides[d + 1] * src.shape[d + 1]
    flat = ix * strides[ax]
    for d in range(arr.ndim):
        if d == ax or out_shape[d] == 1:
            continue
        shp = [1] * arr.ndim
        shp[d] = out_shape[d]
        flat = flat + (arange(out_shape[d], dtype=np.int64) * strides[d]).reshape(shp)
    return _core.take(src.ravel(), flat, 0)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    a = asarray(ar)
    if type(a) is not ndarray or axis is not None:
        return _fallback.call_numpy(np.unique, (ar,), dict(return_index=return_index, return_inverse=return_inverse,
                                                             return_counts=return_counts, axis=axis,
                                                             equal_nan=equal_nan),
                                    "numpy.unique (axis= or a dtype numfuse does not hold)")
    shape = a.shape
    flat = a.ravel()
    n = flat.size
    need_perm = return_index or return_inverse
    if need_perm:
        perm = _core.argsort(flat, 0)
        aux = _core.take(flat, perm, 0)
    else:
        aux = _core.sort(flat, 0, False)
    if n == 0:
        mask = aux.astype(bool)
    else:
        differs = aux[1:] != aux[:-1]
        if equal_nan and a.dtype.kind == "f":
            # NaNs sort last: they are one value (differs is True between NaNs).
            nan = aux != aux
            differs = differs & ~(nan[1:] & nan[:-1])
        from ._creation import ones
        mask = concatenate([ones(1, dtype=bool), differs])
    first = nonzero(mask)[0]
    uniq = _core.take(aux, first, 0)
    out = [uniq]
    if return_index:
        out.append(_core.take(perm, first, 0))
    if return_inverse:
        from ._reductions import cumsum
        imask = cumsum(mask) - 1
        inv = _core.take(imask, _core.argsort(perm, 0), 0)
        out.append(inv.reshape(shape) if len(shape) > 1 or axis is None else inv)
    if return_counts:
        from ._creation import full
        ends = concatenate([first[1:], full(1, n, dtype=np.int64)]) if first.size else first
        out.append(ends - first)
    return out[0] if len(out) == 1 else tuple(out)


def _sorted_along(a, axis):
    """a sorted along `axis` (None: flattened) with that axis moved last."""
    if axis is None:
        return _core.sort(a.ravel(), 0, False), None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(_axis(x, a.ndim) for x in axes)
    if len(axes) > 1:
        rest = [d for d in range(a.ndim) if d not in axes]
        a = a.transpose(rest + list(axes)).reshape(tuple(a.shape[d] for d in rest) + (-1,))
        return _core.sort(a, a.ndim - 1, False), axes
    return moveaxis(_core.sort(a, axes[0], False), axes[0], -1), axes


def _quantile(a, q, axis, keepdims, name, scale):
    """Linear-method quantiles of a along axis: NumPy's algorithm (virtual
    index q*(n-1), its floor and next, and NumPy's _lerp)."""
    qa = np.asarray(q, dtype=np.float64) / scale if scale != 1 else np.asarray(q)
    qa_f = np.asarray(qa, dtype=np.float64)
    if not (np.all(0 <= qa_f) and np.all(qa_f <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100
                         else "Quantiles must be in the range [0, 1]")
    s, axes = _sorted_along(a, axis)
    n = s.shape[-1]
    dt = np.result_type(a.dtype, q if np.ndim(q) == 0 and not isinstance(q, np.ndarray) else np.asarray(q).dtype)
    if dt.kind not in "f":
        dt = np.dtype(np.float64)
    s = s.astype(dt) if s.dtype != dt else s
    results = []
    for qq in np.atleast_1d(qa_f).ravel():
        vi = qq * (n - 1)
        lo = int(np.floor(vi))
        hi = min(lo + 1, n - 1)
        lo = max(min(lo, n - 1), 0)
        g = dt.type(vi - np.floor(vi))
        av, bv = s[..., lo], s[..., hi]
        diff = bv - av
        r = where(g >= 0.5, bv - diff * (1 - g), av + diff * g)
        # A NaN anywhere in the slice gives NaN (sorted last).
        last = s[..., n - 1]
        r = where(last != last, last, r)
        results.append(r)
    if np.ndim(q) == 0:
        out = results[0]
    else:
        from ._manip import stack
        out = stack(results).reshape(np.shape(q) + results[0].shape)
    if keepdims:
        if axes is None:
            out = out.reshape(out.shape + (1,) * a.ndim)
        else:
            lead = out.ndim - (a.ndim - len(axes))
            shp = list(out.shape[:lead])
            rest = iter(out.shape[lead:])
            for d in range(a.ndim):
                shp.append(1 if d in axes else next(rest))
            out = out.reshape(tuple(shp))
    return out


def _checked(a, fn, args, kwargs, name):
    a = asarray(a)
    if type(a) is not ndarray or a.size == 0 or a.dtype.kind not in "iuf":
        return None, _fallback.call_numpy(fn, (a,) + args, kwargs, f"{name} (empty, or a dtype numfuse does not hold)")
    return a, None


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
             interpolation=None):
    arr, done = _checked(a, np.quantile, (q,), dict(axis=axis, out=out, overwrite_input=overwrite_input,
                                                    method=method, keepdims=keepdims, weights=weights),
                         "numpy.quantile")
    if arr is None:
        return done
    if out is not None or method != "linear" or weights is not None or interpolation is not None:
        return _fallback.call_numpy(np.quantile, (arr, q), dict(axis=axis, out=out, method=method, keepdims=keepdims,
                                                                weights=weights), "numpy.quantile (method=/out=)")
    return _quantile(arr, q, axis, keepdims, "quantile", 1)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               interpolation=None):
    arr, done = _checked(a, np.percentile, (q,), dict(axis=axis, out=out, overwrite_input=overwrite_input,
                                                      method=method, keepdims=keepdims, weights=weights),
                         "numpy.percentile")
    if arr is None:
        return done
    if out is not None or method != "linear" or weights is not None or interpolation is not None:
        return _fallback.call_numpy(np.percentile, (arr, q), dict(axis=axis, out=out, method=method,
                                                                  keepdims=keepdims, weights=weights),
                                    "numpy.percentile (method=/out=)")
    return _quantile(arr, q, axis, keepdims, "percentile", 100)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    arr, done = _checked(a, np.median, (), dict(axis=axis, out=out, overwrite_input=overwrite_input,
                                                keepdims=keepdims), "numpy.median")
    if arr is None:
        return done
    if out is not None:
        return _fallback.call_numpy(np.median, (arr,), dict(axis=axis, out=out, keepdims=keepdims),
                                    "numpy.median (out=)")
    s, axes = _sorted_along(arr, axis)
    n = s.shape[-1]
    if n % 2:
        mid = s[..., n // 2]
        r = mid.astype(np.float64) if s.dtype.kind in "iub" else mid
        r = r.copy() if r.ndim else r
    else:
        lo, hi = s[..., n // 2 - 1], s[..., n // 2]
        if s.dtype.kind in "iub":
            lo, hi = lo.astype(np.float64), hi.astype(np.float64)
        r = (lo + hi) / 2
    last = s[..., n - 1]
    if s.dtype.kind == "f":
        r = where(last != last, last, r)
    if keepdims:
        if axes is None:
            r = r.reshape((1,) * arr.ndim)
        else:
            r = r.reshape(tuple(1 if d in axes else arr.shape[d] for d in range(arr.ndim)))
    return r


__all__ = ["sort", "argsort", "partition", "argpartition", "searchsorted", "nonzero", "flatnonzero", "argwhere",
           "take", "compress", "extract", "take_along_axis", "unique", "quantile", "percentile", "median"]

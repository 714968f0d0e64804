"""Sorting, searching and what is built on them: sort, argsort, partition,
searchsorted, nonzero, take, unique, median, percentile, quantile, the set
operations, lexsort, digitize, interp.

Two kinds of routine do the work, as BLAS does for matmul (Fern: black boxes
at a sync point, their results feeding fused kernels):

- numfuse's own (src/extern/sort.cc, gather.cc): stable argsort (parallel
  chunks merged), searchsorted, nonzero, take and the scatters;
- NumPy's own kernels, run on numfuse's memory without copies where they
  are the fastest there is (its SIMD sort and partition; isin's table;
  interp's loop): a value sort copies the input into the result's buffer and
  sorts it there in place, rows split over the configured threads (NumPy's
  sorts release the GIL). Results are NumPy's, bit for bit.

Order is NumPy's: ascending, NaNs last. Each is computed at the call on the
inputs' computed memory (a sort needs every element of a row: it is a sync
point for its input); what is built on them (unique's masks, quantile's
interpolation) is recorded and fused like any other operation.
"""

import collections
import operator
import threading
import warnings

import numpy as np

from . import _core, _fallback
from ._core import ndarray
from ._creation import arange, ascontiguousarray, asarray, empty, empty_like, full, ones, zeros
from ._manip import broadcast_to, concatenate, moveaxis, stack, where
from ._reductions import cumsum, sum as _sum
from ._ufuncs import UFUNCS

def _numpy_kernel(fn):
    """Marks a function whose work is NumPy's own kernel run on numfuse's
    memory (a library routine, like BLAS for matmul): docs/coverage.md lists
    it as such."""
    fn._numpy_kernel = True
    return fn


def _kind_arg(kind):
    """NumPy's conversion of a sort ``kind``: a str (or bytes) whose first
    letter, in either case, names it: 'q', 'h', 'm' or 's' (None stays None);
    TypeError for a non-str, ValueError for another letter."""
    if kind is None:
        return None
    k = kind.decode("latin-1") if isinstance(kind, bytes) else kind
    if not isinstance(k, str):
        raise TypeError(f"sort kind must be str, not {type(kind).__name__}")
    k = k[:1].lower()
    if k not in ("q", "h", "m", "s"):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")
    return k


def _kind_is_stable(kind, stable):
    """Whether the sort must be stable (`kind` converted first, as NumPy does)."""
    k = _kind_arg(kind)
    if stable is not None and k is not None:
        raise ValueError("`kind` and `stable` parameters can't be provided at the same time. Use only one of them.")
    return bool(stable) or k in ("m", "s")


def _axis(axis, nd):
    ax = operator.index(axis)
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(ax, nd)
    return ax % nd


def _threads():
    return _core.get_num_threads()


def _in_rows(o, axis, fn):
    """fn(part) over parts of the NumPy view `o` split along a dimension other
    than `axis`, on the configured threads (NumPy's sorts release the GIL)."""
    n = _threads()
    other = [d for d in range(o.ndim) if d != axis]
    if n <= 1 or not other or o.size < (1 << 16):
        fn(o)
        return
    d = max(other, key=lambda k: o.shape[k])
    m = o.shape[d]
    if m < 2:
        fn(o)
        return
    _in_rows_slices(lambda sl: fn(o[sl]), _row_slices(m, n, d))


def _sorted_copy(a, axis, kind=None):
    """a sorted along axis into a new array laid out as a.copy(order="K")
    (NumPy's sort copies so, then sorts in place): NumPy's sort, in place in
    the result's memory."""
    out = empty_like(a)
    o = out._to_numpy(True)
    np.copyto(o, a._to_numpy(False))
    _in_rows(o, axis, lambda part: part.sort(axis=axis, kind=kind))
    return out


# Below this many elements a sort runs on this thread: NumPy's own call on
# a view, its fresh result adopted (no copy, no split into rows).
_SMALL_SORT = 1 << 16


@_numpy_kernel
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if (type(a) is ndarray and type(axis) is int and kind is None and order is None and stable is None
            and a.size < _SMALL_SORT):
        # (numpy.sort's own steps, without its dispatch: a copy in the
        # array's memory order, sorted in place by NumPy's sort)
        r = a.copy(order="K")
        r._to_numpy(True).sort(axis)
        return r
    a = asarray(a)
    if type(a) is not ndarray or order is not None:
        return _fallback.call_numpy(np.sort, (a,), dict(axis=axis, kind=kind, order=order, stable=stable),
                                    "numpy.sort (order= or a dtype numfuse does not hold)")
    axis = axis if axis is None else operator.index(axis)  # (converted before kind, as NumPy does)
    st = _kind_is_stable(kind, stable)
    if axis is None:
        a, axis = a.ravel(), 0
    return _sorted_copy(a, _axis(axis, a.ndim), "stable" if st else kind)


def sort_inplace(a, axis=-1, kind=None, order=None, stable=None):
    """ndarray.sort: NumPy's sort on the array's own memory (what is pending on
    it runs first, so pending readers see it unsorted)."""
    if order is not None:
        a._to_numpy(True).sort(axis=axis, kind=kind, order=order)
        return
    st = _kind_is_stable(kind, stable)
    ax = _axis(axis, a.ndim)
    if a.flags.writeable is False:
        raise ValueError("assignment destination is read-only")
    o = a._to_numpy(True)
    _in_rows(o, ax, lambda part: part.sort(axis=ax, kind="stable" if st else kind))


@_numpy_kernel
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """numpy.argsort: stable kinds run numfuse's parallel stable argsort; the
    default kind NumPy's SIMD argsort (rows over the threads), so ties come
    out as NumPy orders them."""
    if (type(a) is ndarray and type(axis) is int and kind is None and order is None and stable is None
            and a.size < _SMALL_SORT and a.ndim > 0):
        return _fallback.adopt(np.argsort(a._to_numpy(False), axis))
    a = asarray(a)
    if type(a) is not ndarray or order is not None:
        return _fallback.call_numpy(np.argsort, (a,), dict(axis=axis, kind=kind, order=order, stable=stable),
                                    "numpy.argsort (order= or a dtype numfuse does not hold)")
    axis = axis if axis is None else operator.index(axis)  # (converted before kind, as NumPy does)
    st = _kind_is_stable(kind, stable)
    if axis is None:
        a, axis = a.ravel(), 0
    elif a.ndim == 0:  # (NumPy: a 0-d array sorts as one element, the axis checked against it)
        a = a.ravel()
    ax = _axis(axis, a.ndim)
    if st:
        return _core.argsort(a, ax)
    out = empty(a.shape, dtype=np.int64)
    o, src = out._to_numpy(True), a._to_numpy(False)
    if o.ndim == 0:
        o[()] = 0
        return out
    other = [d for d in range(o.ndim) if d != ax]
    d = max(other, key=lambda k: o.shape[k]) if other else None

    def part(sl):
        o[sl] = np.argsort(src[sl], axis=ax, kind=kind)

    n = _threads()
    if d is None or n <= 1 or o.size < (1 << 16) or o.shape[d] < 2:
        part(Ellipsis)
    else:
        _in_rows_slices(part, _row_slices(o.shape[d], n, d))
    return out


def _row_slices(m, n, d):
    """Index tuples cutting dimension d (of extent m) into n nearly equal parts."""
    cuts = [m * i // n for i in range(n + 1)]
    return [(slice(None),) * d + (slice(cuts[i], cuts[i + 1]),) for i in range(n) if cuts[i] < cuts[i + 1]]


def _in_rows_slices(fn, slices):
    """fn(sl) for each index tuple, the first on this thread, the others on threads of their own."""
    errors = []

    def run(sl):
        try:
            fn(sl)
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=run, args=(sl,)) for sl in slices[1:]]
    for t in ts:
        t.start()
    run(slices[0])
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def _kth(kth, n):
    ks = np.asarray(kth)
    if ks.dtype.kind == "b":
        raise ValueError("Booleans unacceptable as partition index")
    if ks.ndim > 1:
        raise ValueError("object too deep for desired array")
    ks = np.atleast_1d(ks)
    if ks.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    for k in ks.ravel():
        if not -n <= k < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")


def _partition_args(fn, a, kth, axis, kind, order):
    """(array, normalized axis, None), or (.., .., NumPy's result) for what numfuse does not take."""
    a = asarray(a)
    if type(a) is not ndarray or order is not None or kind != "introselect":
        return a, None, _fallback.call_numpy(fn, (a, kth), dict(axis=axis, kind=kind, order=order),
                                             f"numpy.{fn.__name__} (order=, kind= or a dtype numfuse does not hold)")
    if axis is None:
        a, axis = a.ravel(), 0
    ax = _axis(axis, a.ndim)
    _kth(kth, a.shape[ax])
    return a, ax, None


@_numpy_kernel
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.partition: NumPy's introselect on the result's memory."""
    a, ax, done = _partition_args(np.partition, a, kth, axis, kind, order)
    if done is not None:
        return done
    out = empty_like(a)  # (NumPy partitions a.copy(order="K"))
    o = out._to_numpy(True)
    np.copyto(o, a._to_numpy(False))
    _in_rows(o, ax, lambda part: part.partition(kth, axis=ax))
    return out


@_numpy_kernel
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """numpy.argpartition: NumPy's introselect, its result in numfuse's memory."""
    a, ax, done = _partition_args(np.argpartition, a, kth, axis, kind, order)
    if done is not None:
        return done
    out = empty(a.shape, dtype=np.int64)
    out._to_numpy(True)[...] = np.argpartition(a._to_numpy(False), kth, axis=ax)
    return out


def searchsorted(a, v, side="left", sorter=None):
    if type(a) is ndarray and sorter is None and a.ndim == 1 and a.size < _SMALL_SORT:
        # small: NumPy's own search on a view (its promotion, its errors)
        tv = type(v)
        if tv is float or tv is int:
            return np.searchsorted(a._to_numpy(False), v, side)
        if tv is ndarray and v.size < _SMALL_SORT:
            r = np.searchsorted(a._to_numpy(False), v._to_numpy(False), side)
            return _fallback.adopt(r) if type(r) is np.ndarray else r
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
    # NumPy's transpose(nonzero(a)): an F-ordered (n, ndim) result
    return stack(_core.nonzero(a), axis=0).T


def _argwhere_0d(a):
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
    # NumPy casts indices 'same_kind' to intp: bool and integer arrays, and
    # any Python or NumPy scalar (converted as int() does), are indices.
    if isinstance(indices, (int, float, bool, np.generic)) and not (type(idx) is ndarray and idx.dtype.kind in "iub"):
        try:
            idx = asarray(np.int64(int(np.asarray(indices))))
        except (TypeError, ValueError, OverflowError):
            pass
    if type(idx) is not ndarray or idx.dtype.kind not in "iub":
        if np.asarray(indices).dtype.kind not in "iub":
            raise TypeError(f"Cannot cast array data from dtype('{np.asarray(indices).dtype}') to dtype('int64') "
                            "according to the rule 'same_kind'")
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
    if not hasattr(indices, "dtype"):  # (NumPy reads indices.dtype first)
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'dtype'")
    if axis is not None:
        axis = operator.index(axis)
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
    if (type(ar) is ndarray and axis is None and not (return_index or return_inverse or return_counts)
            and equal_nan is True and sorted is True and ar.size < _SMALL_SORT):
        return _fallback.adopt(np.unique(ar._to_numpy(False)))  # small: NumPy's own, its result adopted
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
        aux = _sorted_copy(flat, 0)
    if n == 0:
        mask = aux.astype(bool)
    else:
        differs = aux[1:] != aux[:-1]
        if equal_nan and a.dtype.kind == "f":
            # NaNs sort last: they are one value (differs is True between NaNs).
            nan = aux != aux
            differs = differs & ~(nan[1:] & nan[:-1])
        mask = concatenate([ones(1, dtype=bool), differs])
    first = nonzero(mask)[0]
    uniq = _core.take(aux, first, 0)
    out = [uniq]
    if return_index:
        out.append(_core.take(perm, first, 0))
    if return_inverse:
        imask = cumsum(mask) - 1
        inv = _core.take(imask, _core.argsort(perm, 0), 0)
        out.append(inv.reshape(shape) if len(shape) > 1 or axis is None else inv)
    if return_counts:
        ends = concatenate([first[1:], full(1, n, dtype=np.int64)]) if first.size else first
        out.append(ends - first)
    return out[0] if len(out) == 1 else tuple(out)


# The array API's forms of unique (NumPy 2's unique_all, unique_counts,
# unique_inverse, unique_values): NaNs are distinct values (equal_nan=False),
# the inverse indices have the input's shape, the indices are of first
# occurrences; the values come sorted (the standard leaves their order open).
UniqueAllResult = collections.namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", ["values", "inverse_indices"])
for _t in (UniqueAllResult, UniqueCountsResult, UniqueInverseResult):
    _t.__module__ = "numfuse"
del _t


def unique_all(x):
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False,
                                   sorted=False))


def unique_counts(x):
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, sorted=False))


def unique_inverse(x):
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, sorted=False))


# NumPy's hash-set kernel for unique values in no particular order (None
# where this NumPy has none: its unique_values sorts, as numfuse's does).
_unique_hash = getattr(getattr(np.lib, "_arraysetops_impl", None), "_unique_hash", None)


def unique_values(x):
    """numpy.unique_values. NumPy 2.4 collects integer, bool and complex
    values in a hash set and returns them in its order ("may vary"): that
    order is NumPy's kernel's, so numfuse runs the same kernel on its memory
    (a library call, as for LAPACK); other dtypes are sorted here."""
    a = asarray(x)
    if _unique_hash is not None and type(a) is ndarray:
        r = _unique_hash(a.ravel()._to_numpy(False), equal_nan=False)
        if r is not NotImplemented:
            return _fallback.adopt(r)
    return unique(a, equal_nan=False, sorted=False)


def _sorted_along(a, axis):
    """a sorted along `axis` (None: flattened) with that axis moved last."""
    if axis is None:
        return _sorted_copy(a.ravel(), 0), None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(_axis(x, a.ndim) for x in axes)
    if len(axes) > 1:
        rest = [d for d in range(a.ndim) if d not in axes]
        a = a.transpose(rest + list(axes)).reshape(tuple(a.shape[d] for d in rest) + (-1,))
        return _sorted_copy(a, a.ndim - 1), axes
    return moveaxis(_sorted_copy(a, axes[0]), axes[0], -1), axes


def _laid_out_like(r, a, axes):
    """`r`, the reduction of `a` over `axes`, in the memory order of a's
    remaining axes (the order NumPy's reductions give their results)."""
    if r.ndim < 2 or axes is None:
        return r
    proto = a[tuple(0 if d in axes else slice(None) for d in range(a.ndim))]
    out = empty_like(proto, dtype=r.dtype)
    if out.shape != r.shape or out.strides == r.strides:
        return r
    out[...] = r
    return out


def _stacked(results, q, a, axes, keepdims):
    """The quantiles for each q (q's shape first), with the reduced axes kept
    as length 1 when keepdims."""
    if np.ndim(q) == 0:
        out = results[0]
    else:
        out = stack(results).reshape(np.shape(q) + results[0].shape)
    if not keepdims:
        return out
    if axes is None:
        return out.reshape(out.shape + (1,) * a.ndim)
    lead = out.ndim - (a.ndim - len(axes))
    shp = list(out.shape[:lead])
    rest = iter(out.shape[lead:])
    for d in range(a.ndim):
        shp.append(1 if d in axes else next(rest))
    return out.reshape(tuple(shp))


def _quantile(a, q, axis, keepdims, name, scale):
    """Linear-method quantiles of a along axis, as NumPy computes them
    (numpy.lib._function_base_impl._quantile): the virtual index (n - 1) * q;
    an integer q (quantile's) takes the element as it is, in a's dtype;
    otherwise NumPy's _lerp of the neighbours in a's dtype (their difference
    too), weighted by gamma -- a Python float when q is a Python number
    (weak: a float32 a stays float32), else the virtual index's dtype."""
    weak = type(q) in (int, float)
    qa = np.true_divide(q, 100) if scale == 100 else q
    qa = np.asanyarray(qa.__array__() if isinstance(qa, ndarray) else qa)
    if not (np.all(0 <= qa) and np.all(qa <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100
                         else "Quantiles must be in the range [0, 1]")
    s, axes = _sorted_along(a, axis)
    n = s.shape[-1]
    virtual = (n - 1) * qa
    last = s[..., n - 1]
    results = []
    for v in virtual.ravel():  # (NumPy scalars of the virtual index's dtype)
        if virtual.dtype.kind in "iu":
            r = s[..., int(v)]  # (no interpolation: the element, in a's dtype)
        else:
            if v >= n - 1:  # NumPy's index -1 for both neighbours, gamma from it
                lo = hi = n - 1
                gamma = v - virtual.dtype.type(-1)
            else:
                lo = int(np.floor(v))
                hi = lo + 1
                gamma = v - np.floor(v)
            t = float(gamma) if weak else gamma
            av, bv = s[..., lo], s[..., hi]
            if av.ndim == 0 and virtual.ndim == 0:  # (NumPy's neighbours are then scalars: integer overflow warns)
                av, bv = av[()], bv[()]
            diff = bv - av
            r = bv - diff * (1 - t) if t >= 0.5 else av + diff * t
        if s.dtype.kind == "f":  # a NaN anywhere in the slice gives NaN (sorted last)
            if r.ndim == 0 and np.ndim(q) == 0:
                r = last if last != last else r  # (NumPy's 0-d result is then a's last element, its dtype)
            else:
                r = where(last != last, last, r)
        # NumPy's quantiles come from a C-ordered copy of a: a C result
        results.append(r if r.ndim < 2 else ascontiguousarray(r))
    return _stacked(results, q, a, axes, keepdims)


def _checked(a, fn, args, kwargs, name):
    a = asarray(a)
    if type(a) is not ndarray or a.size == 0 or a.dtype.kind not in "iuf":
        return None, _fallback.call_numpy(fn, (a,) + args, kwargs, f"{name} (empty, or a dtype numfuse does not hold)")
    return a, None


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    arr, done = _checked(a, np.quantile, (q,), dict(axis=axis, out=out, overwrite_input=overwrite_input,
                                                    method=method, keepdims=keepdims, weights=weights),
                         "numpy.quantile")
    if arr is None:
        return done
    if out is not None or method != "linear" or weights is not None:
        return _fallback.call_numpy(np.quantile, (arr, q), dict(axis=axis, out=out, method=method, keepdims=keepdims,
                                                                weights=weights), "numpy.quantile (method=/out=)")
    return _quantile(arr, q, axis, keepdims, "quantile", 1)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    arr, done = _checked(a, np.percentile, (q,), dict(axis=axis, out=out, overwrite_input=overwrite_input,
                                                      method=method, keepdims=keepdims, weights=weights),
                         "numpy.percentile")
    if arr is None:
        return done
    if out is not None or method != "linear" or weights is not None:
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
        r = r.copy(order="K") if r.ndim else r  # (NumPy's mean of the middle: a's order)
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
           "take", "compress", "extract", "take_along_axis", "unique", "unique_all", "unique_counts",
           "unique_inverse", "unique_values", "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult",
           "quantile", "percentile", "median"]


# ---------------------------------------------------------------------------
# Built on the sort and the search: set operations, lexsort, digitize, interp,
# NaN-ignoring quantiles.

def _flat(a):
    a = asarray(a)
    return a.ravel() if type(a) is ndarray else a


def _all_native(*arrays):
    return all(type(x) is ndarray for x in arrays)


@_numpy_kernel
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """numpy.isin: NumPy's kernel (a lookup table for integers, a sort
    otherwise) on numfuse's memory, the result in numfuse's."""
    e, t = asarray(element), _flat(test_elements)
    if not _all_native(e, t):
        return _fallback.call_numpy(np.isin, (element, test_elements),
                                    dict(assume_unique=assume_unique, invert=invert, kind=kind),
                                    "numpy.isin (a dtype numfuse does not hold)")
    r = np.isin(e._to_numpy(False), t._to_numpy(False), assume_unique=assume_unique, invert=invert, kind=kind)
    return asarray(r)  # (NumPy's new array: numfuse uses its memory)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    a1, a2 = _flat(ar1), _flat(ar2)
    if not _all_native(a1, a2) or return_indices:
        return _fallback.call_numpy(np.intersect1d, (ar1, ar2),
                                    dict(assume_unique=assume_unique, return_indices=return_indices),
                                    "numpy.intersect1d (return_indices= or a dtype numfuse does not hold)")
    if not assume_unique:
        a1, a2 = unique(a1), unique(a2)
    aux = _sorted_copy(concatenate((a1, a2)), 0)
    if aux.size == 0:
        return aux
    mask = aux[1:] == aux[:-1]
    return _core.take(aux[:-1], nonzero(mask)[0], 0)


def union1d(ar1, ar2):
    a1, a2 = _flat(ar1), _flat(ar2)
    if not _all_native(a1, a2):
        return _fallback.call_numpy(np.union1d, (ar1, ar2), {}, "numpy.union1d (a dtype numfuse does not hold)")
    return unique(concatenate((a1, a2)))


def setdiff1d(ar1, ar2, assume_unique=False):
    a1, a2 = _flat(ar1), _flat(ar2)
    if not _all_native(a1, a2):
        return _fallback.call_numpy(np.setdiff1d, (ar1, ar2), dict(assume_unique=assume_unique),
                                    "numpy.setdiff1d (a dtype numfuse does not hold)")
    if not assume_unique:
        a1 = unique(a1)
    keep = isin(a1, a2, assume_unique=True, invert=True)
    return _core.take(a1, nonzero(keep)[0], 0)


def setxor1d(ar1, ar2, assume_unique=False):
    a1, a2 = _flat(ar1), _flat(ar2)
    if not _all_native(a1, a2):
        return _fallback.call_numpy(np.setxor1d, (ar1, ar2), dict(assume_unique=assume_unique),
                                    "numpy.setxor1d (a dtype numfuse does not hold)")
    if not assume_unique:
        a1, a2 = unique(a1), unique(a2)
    aux = _sorted_copy(concatenate((a1, a2)), 0)
    if aux.size == 0:
        return aux
    edge = ones(1, dtype=bool)
    flag = concatenate((edge, aux[1:] != aux[:-1], edge))
    return _core.take(aux, nonzero(flag[1:] & flag[:-1])[0], 0)


def lexsort(keys, axis=-1):
    """numpy.lexsort: stable argsorts from the first key to the last (the last
    key sorts primarily)."""
    ks = [asarray(k) for k in keys] if isinstance(keys, (tuple, list)) else None
    if ks is None:
        ka = asarray(keys)
        ks = [ka[i] for i in range(ka.shape[0])] if type(ka) is ndarray and ka.ndim >= 1 else None
    if not ks or not _all_native(*ks):
        return _fallback.call_numpy(np.lexsort, (keys,), dict(axis=axis),
                                    "numpy.lexsort (a dtype numfuse does not hold)")
    if all(k.ndim == 0 for k in ks):  # scalar keys: one element, index 0
        return np.intp(0)
    shape = ks[0].shape
    if any(k.shape != shape for k in ks):
        raise ValueError("all keys need to be the same shape")
    if len(shape) == 0:
        raise np.exceptions.AxisError(axis, 0)
    ax = _axis(axis, len(shape))
    perm = None
    for k in ks:
        if perm is None:
            perm = _core.argsort(k, ax)
        else:
            kk = take_along_axis(k, perm, ax)
            perm = take_along_axis(perm, _core.argsort(kk, ax), ax)
    return perm


def digitize(x, bins, right=False):
    xa, b = asarray(x), asarray(bins)
    if xa.dtype.kind == "c":
        raise TypeError("x may not be complex")
    if not _all_native(xa, b):
        return _fallback.call_numpy(np.digitize, (x, bins), dict(right=right),
                                    "numpy.digitize (a dtype numfuse does not hold)")
    if b.ndim != 1:
        raise ValueError("object too deep for desired array" if b.ndim > 1 else "object of too small depth for desired array")
    bn = np.asarray(b)
    # (neighbours compared, not differences: those wrap for unsigned types
    # and are `!=` for bools)
    inc, dec = bool(np.all(bn[1:] >= bn[:-1])), bool(np.all(bn[1:] <= bn[:-1]))
    if bn.size > 1 and not (inc or dec):
        raise ValueError("bins must be monotonically increasing or decreasing")
    if bn.size > 1 and dec and not inc:
        n = bn.size
        r = searchsorted(b[::-1].copy(), xa, side="left" if right else "right")
        return n - r
    return searchsorted(b, xa, side="left" if right else "right")


@_numpy_kernel
def interp(x, xp, fp, left=None, right=None, period=None):
    """numpy.interp: NumPy's loop (a binary search per point, its arithmetic)
    on numfuse's memory, the result in numfuse's."""
    if type(x) is ndarray and type(xp) is ndarray and type(fp) is ndarray and left is None and right is None \
            and period is None:
        r = np.interp(x._to_numpy(False), xp._to_numpy(False), fp._to_numpy(False))
        return r if type(r) is not np.ndarray or r.ndim == 0 else _fallback.adopt(r)
    xa, xpa, fpa = asarray(x), asarray(xp), asarray(fp)
    if not _all_native(xa, xpa, fpa):
        return _fallback.call_numpy(np.interp, (x, xp, fp), dict(left=left, right=right, period=period),
                                    "numpy.interp (complex or a dtype numfuse does not hold)")
    r = np.interp(xa._to_numpy(False), xpa._to_numpy(False), fpa._to_numpy(False), left=left, right=right,
                  period=period)
    if type(r) is not np.ndarray or r.ndim == 0:
        return r
    return _fallback.adopt(r)  # (NumPy's new array: numfuse adopts its memory)


def _nanquantile(a, q, axis, keepdims, scale, median):
    qa = np.asarray(q, dtype=np.float64) / scale if scale != 1 else np.asarray(q, dtype=np.float64)
    if not (np.all(0 <= qa) and np.all(qa <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100
                         else "Quantiles must be in the range [0, 1]")
    s, axes = _sorted_along(a, axis)  # NaNs last
    dt = np.result_type(a.dtype, q if np.ndim(q) == 0 and not isinstance(q, np.ndarray) else np.asarray(q).dtype)
    if dt.kind != "f":
        dt = np.dtype(np.float64)
    s = s.astype(dt) if s.dtype != dt else s
    c = _sum(~(s != s), axis=-1, keepdims=True)  # valid values per row
    if bool((np.asarray(c) == 0).any()):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=4)
    cm1 = where(c > 0, c - 1, 0)
    results = []
    for qq in np.atleast_1d(qa).ravel():
        if median:
            lo_i = cm1 // 2
            hi_i = cm1 - lo_i
            av = take_along_axis(s, lo_i, -1)[..., 0]
            bv = take_along_axis(s, hi_i, -1)[..., 0]
            r = where(lo_i[..., 0] == hi_i[..., 0], av, (av + bv) / 2)
        else:
            vi = cm1 * qq
            lo_f = U_floor(vi)
            lo_i = lo_f.astype(np.int64)
            hi_i = where(lo_i + 1 > cm1, cm1, lo_i + 1)
            g = (vi - lo_f)[..., 0].astype(dt)
            av = take_along_axis(s, lo_i, -1)[..., 0]
            bv = take_along_axis(s, hi_i, -1)[..., 0]
            diff = bv - av
            r = where(g >= 0.5, bv - diff * (1 - g), av + diff * g)
        r = where(c[..., 0] == 0, dt.type(np.nan), r)
        # NumPy's nanmedian reduces a copy of a (np.median or np.ma.median):
        # its result is laid out as a's remaining axes are
        results.append(_laid_out_like(r, a, axes) if median else r)
    return _stacked(results, q, a, axes, keepdims is True)


def U_floor(x):
    return UFUNCS["floor"](x)


def _nan_checked(a, fn, args, kwargs, name):
    arr = asarray(a)
    if type(arr) is not ndarray or arr.size == 0 or arr.dtype.kind not in "iuf" or kwargs.get("out") is not None:
        return None, _fallback.call_numpy(fn, (a,) + args, kwargs, f"{name} (out=, empty, or a dtype numfuse does not hold)")
    if kwargs.get("method", "linear") != "linear" or kwargs.get("weights") is not None:
        return None, _fallback.call_numpy(fn, (arr,) + args, kwargs, f"{name} (method=/weights=)")
    return arr, None


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    arr, done = _nan_checked(a, np.nanmedian, (), dict(axis=axis, out=out, keepdims=keepdims), "numpy.nanmedian")
    if arr is None:
        return done
    if arr.dtype.kind in "iu":
        return median(arr, axis=axis, keepdims=keepdims is True)
    return _nanquantile(arr, 0.5, axis, keepdims, 1, True)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=np._NoValue, *,
                weights=None):
    arr, done = _nan_checked(a, np.nanquantile, (q,), dict(axis=axis, out=out, method=method, keepdims=keepdims,
                                                           weights=weights), "numpy.nanquantile")
    if arr is None:
        return done
    return _nanquantile(arr, q, axis, keepdims, 1, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=np._NoValue, *,
                  weights=None):
    arr, done = _nan_checked(a, np.nanpercentile, (q,), dict(axis=axis, out=out, method=method, keepdims=keepdims,
                                                             weights=weights), "numpy.nanpercentile")
    if arr is None:
        return done
    return _nanquantile(arr, q, axis, keepdims, 100, False)


for _f in (sort, argsort, partition, argpartition, searchsorted, nonzero, flatnonzero, argwhere, take, compress,
           extract, take_along_axis, unique, quantile, percentile, median, isin, intersect1d, union1d, setdiff1d,
           setxor1d, lexsort, digitize, interp, nanmedian, nanquantile, nanpercentile):
    if not _f.__doc__:
        _f.__doc__ = getattr(np, _f.__name__).__doc__

__all__ += ["isin", "intersect1d", "union1d", "setdiff1d", "setxor1d", "lexsort", "digitize", "interp", "nanmedian",
            "nanquantile", "nanpercentile"]

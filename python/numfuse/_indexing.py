"""Advanced (integer and boolean array) indexing as numfuse's gather and
scatter (src/extern/gather.cc), for the keys that are one gather along one
axis of a basic view:

- one integer or boolean array among slices, Ellipsis and newaxis (and
  integers next to it): ``a[idx]``, ``a[:, idx]``, ``a[mask]``, ``a[i, idx]``;
- several integer arrays next to each other: ``a[rows, cols]`` (their
  broadcast shape replaces the dimensions they index, as in NumPy).

``a[key] = v`` scatters with the same keys (a repeated index keeps the last
value, as NumPy's), so ``a[idx] += v`` is NumPy's too; ``numpy.add.at`` adds
every repeated index (``add_at``). The C++ core calls :func:`getitem` and
:func:`setitem` before falling back to NumPy; they return NotImplemented for
the keys they do not take (advanced indices apart from each other, boolean
scalars, fields), which then run NumPy's indexing on the memory.
"""

import numpy as np

from . import _core
from ._core import ndarray
from ._creation import asarray
from ._manip import broadcast_to, where
from ._sorting import flatnonzero

_BASIC = (slice, type(None), type(Ellipsis))


def _as_index_array(k):
    """An index item as (kind, array): kind 'int' or 'bool'; None if it is not an array index."""
    if isinstance(k, ndarray):
        arr = k
    elif isinstance(k, (list, tuple, np.ndarray)):
        n = np.asarray(k)
        if n.dtype == object:
            return None
        if n.size == 0 and n.dtype.kind == "f":
            n = n.astype(np.intp)
        arr = asarray(n)
        if type(arr) is not ndarray:
            return None
    else:
        return None
    kind = arr.dtype.kind
    if kind == "b":
        return "bool", arr
    if kind in "iu":
        return "int", arr
    if isinstance(k, (list, tuple)):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                         "boolean arrays are valid indices")
    raise IndexError("arrays used as indices must be of integer (or boolean) type")


def _zero_d_ints(key):
    """The key with 0-d integer arrays as integers (NumPy indexes with them
    as with integers: a[x.argmax()] is an element); None if it has none."""
    items = key if type(key) is tuple else (key,)
    if not any(isinstance(k, ndarray) and k.ndim == 0 and k.dtype.kind in "iu" for k in items):
        return None
    out = tuple(int(k) if isinstance(k, ndarray) and k.ndim == 0 and k.dtype.kind in "iu" else k for k in items)
    return out if type(key) is tuple else out[0]


def _plan(a, key):
    """The gather a key means: (basic key, axis in the basic view, number of
    the view's dimensions merged there, int64 flat indices, gathered shape
    of the indices), or None."""
    items = key if type(key) is tuple else (key,)
    kinds = []
    for k in items:
        if isinstance(k, _BASIC):
            kinds.append(("basic", k))
        elif isinstance(k, (bool, np.bool_)):
            return None
        elif isinstance(k, (int, np.integer)):
            kinds.append(("scalar", k))
        else:
            ia = _as_index_array(k)
            if ia is None:
                return None
            kinds.append(ia)
    arrays = [i for i, (t, _) in enumerate(kinds) if t in ("int", "bool")]
    if not arrays or kinds.count(("basic", Ellipsis)) > 1:
        return None
    bools = [i for i in arrays if kinds[i][0] == "bool"]
    # Integers count as advanced indices next to arrays: the run of array
    # and integer items must be contiguous (NumPy puts the broadcast
    # dimensions there; apart, it puts them first).
    adv = [i for i, (t, _) in enumerate(kinds) if t != "basic"]
    if adv != list(range(adv[0], adv[-1] + 1)):
        return None
    # Dimensions of `a` each item consumes.
    consumed = [0 if t == "basic" and k is None else (kinds[i][1].ndim if t == "bool" else 1)
                for i, (t, k) in enumerate(kinds)]
    ell = [i for i, (t, k) in enumerate(kinds) if t == "basic" and k is Ellipsis]
    explicit = sum(c for i, c in enumerate(consumed) if i not in ell)
    if explicit > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but {explicit} were indexed")
    if ell:
        consumed[ell[0]] = a.ndim - explicit
    # Dimension of `a` where each item starts.
    start, dim = [], 0
    for c in consumed:
        start.append(dim)
        dim += c
    for i in bools:
        mask = kinds[i][1]
        d0 = start[i]
        for j in range(mask.ndim):
            if mask.shape[j] != a.shape[d0 + j]:
                raise IndexError(f"boolean index did not match indexed array along axis {d0 + j}; size of axis is "
                                 f"{a.shape[d0 + j]} but size of corresponding boolean axis is {mask.shape[j]}")
    if bools and len(arrays) > 1:
        # Among other arrays, a boolean array is its nonzero() integer arrays (NumPy's rule).
        from ._sorting import nonzero
        new = []
        for i, (t, k) in enumerate(kinds):
            new += list(nonzero(k)) if t == "bool" else [k]
        return _plan(a, tuple(new))
    first = adv[0]
    # The basic view: arrays become full slices, integers stay.
    basic = []
    for i, (t, k) in enumerate(kinds):
        if t == "bool":
            basic += [slice(None)] * k.ndim
        elif t == "int":
            basic.append(slice(None))
        else:
            basic.append(k)
    # Axis of the view where the advanced run lands: output dimensions of the items before it.
    axis = 0
    for i in range(first):
        t, k = kinds[i]
        axis += consumed[i] if t == "basic" and k is not None else (1 if k is None else 0)
    if bools:
        (i,) = bools
        mask = kinds[i][1]
        flat = flatnonzero(mask)
        return tuple(basic), axis, mask.ndim, flat, flat.shape
    ints = [i for i in arrays]
    if len(ints) == 1 and start[ints[0]] == axis:
        # One integer array whose axis keeps its number in the view: the
        # gather/scatter wraps negative indices and reports NumPy's
        # out-of-bounds error itself.
        arr = kinds[ints[0]][1]
        return tuple(basic), axis, 1, arr.astype(np.int64) if arr.dtype != np.int64 else arr, arr.shape
    shapes = [kinds[i][1].shape for i in ints]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(s).replace(" ", "") for s in shapes) + " ") from None
    # Flat index over the indexed dimensions (C order), bounds checked against
    # each array's own dimension, as NumPy reports them.
    flat = None
    for i in ints:
        arr = kinds[i][1]
        d = start[i]
        n = a.shape[d]
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if hi >= n or lo < -n:
                flat_arr = arr.ravel()
                first = int(flatnonzero((flat_arr >= n) | (flat_arr < -n))[0])  # NumPy names the first
                raise IndexError(f"index {int(flat_arr[first])} is out of bounds for axis {d} with size {n}")
        idx = arr.astype(np.int64) if arr.dtype != np.int64 else arr
        idx = where(idx < 0, idx + n, idx)
        flat = idx if flat is None else flat * n + idx
    flat = broadcast_to(flat, bshape)
    return tuple(basic), axis, len(ints), flat, bshape


def _merged(view, axis, count):
    """view with dimensions [axis, axis+count) as one: a view of the same
    memory, or None where those dimensions do not merge (not contiguous
    across each other)."""
    if count == 1:
        return view
    shp, st = view.shape, view.strides
    for j in range(axis, axis + count - 1):
        if shp[j + 1] != 1 and st[j] != st[j + 1] * shp[j + 1]:
            return None
    return view.reshape(shp[:axis] + (-1,) + shp[axis + count:])


def getitem(a, key):
    k = _zero_d_ints(key)
    if k is not None:
        return a[k]
    plan = _plan(a, key)
    if plan is None:
        return NotImplemented
    basic, axis, count, flat, ishape = plan
    view = a[basic]
    src = _merged(view, axis, count)
    if src is None:
        shp = view.shape
        src = view.copy().reshape(shp[:axis] + (-1,) + shp[axis + count:])
    return _take_laid_out_as_numpy(src, flat, axis)


def _take_laid_out_as_numpy(src, flat, axis):
    """src gathered at flat along axis, laid out as NumPy's advanced
    indexing lays it out: the index dimensions outermost in memory, then
    the other dimensions in src's K order (x[:, [0, 2]] of a C array is
    (idx, rows, columns) in memory, transposed back to (rows, idx, columns));
    a later reshape or ravel is then a view or a copy where NumPy's is."""
    sub = [d for d in range(src.ndim) if d != axis]
    sub_k = sorted(sub, key=lambda d: -abs(src.strides[d]) if src.shape[d] != 1 else 0)
    if axis == 0 and sub_k == sub:
        return _core.take(src, flat, axis)
    r = _core.take(src.transpose([axis] + sub_k), flat, 0)
    k = flat.ndim
    perm = ([k + sub_k.index(d) for d in sub if d < axis] + list(range(k))
            + [k + sub_k.index(d) for d in sub if d > axis])
    return r.transpose(perm)


def _scatter_target(a, key):
    """(target view with the indexed dimensions merged, axis, int64 indices,
    the gathered shape) for a scatter through `key`, or None."""
    plan = _plan(a, key)
    if plan is None:
        return None
    basic, axis, count, flat, ishape = plan
    view = a[basic]
    target = _merged(view, axis, count)
    if target is None:
        return None  # (dimensions that do not merge into one: NumPy's indexing)
    return target, axis, flat, view.shape[:axis] + tuple(ishape) + view.shape[axis + count:]


def _scatter(a, target, axis, flat, values, source, accumulate):
    """Scatter `values` (a's type, the gathered shape); `source` is what the
    caller gave (a numfuse array overlapping `a` is read whole first)."""
    if isinstance(source, ndarray) and source._may_share_memory(a):
        values = values.copy()
    _core.put(target, flat, axis, values, accumulate)


def setitem(a, key, value):
    k = _zero_d_ints(key)
    if k is not None:
        a[k] = value
        return None
    t = _scatter_target(a, key)
    v = asarray(value)
    if t is None or type(v) is not ndarray:
        return NotImplemented
    target, axis, flat, gathered = t
    if v.dtype != a.dtype:
        v = v.astype(a.dtype)  # (assignment casts as NumPy's setitem does)
    try:
        v = broadcast_to(v, gathered)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {tuple(np.shape(value))} could not be broadcast to "
                         f"indexing result of shape {tuple(gathered)}") from None
    _scatter(a, target, axis, flat, v, value, False)
    return None


def add_at(a, indices, b):
    """numpy.add.at(a, indices, b) for the keys getitem takes: unbuffered,
    every repeated index adds."""
    t = _scatter_target(a, indices)
    v = asarray(b)
    if t is None or type(v) is not ndarray:
        return NotImplemented
    target, axis, flat, gathered = t
    weak = isinstance(b, (bool, int, float)) and not isinstance(b, np.generic)
    rt = np.result_type(a.dtype, b if weak else v.dtype)
    if rt != a.dtype and not np.can_cast(rt, a.dtype, "same_kind"):
        return NotImplemented  # (NumPy raises its casting error)
    v = broadcast_to(v.astype(a.dtype) if v.dtype != a.dtype else v, gathered)
    _scatter(a, target, axis, flat, v, b, True)
    return None

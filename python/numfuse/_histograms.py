"""numpy.histogram and numpy.bincount.

histogram with at most ``MAX_BINS`` bins is one fused MDH kernel over a
(bins, n) domain: a comparison of every value with every bin's edges and a
sum over n,

    counts[b] = sum_i (x_i >= lo[b]) & ((x_i < hi[b]) | (last[b] & (x_i == hi[b])))

(the last bin is closed, as in NumPy); it fuses with what produces x, and
weights sum with ``where`` (so a NaN weight only touches its own bin). Bin
edges are NumPy's own (``numpy.histogram_bin_edges``, run on the range); the
range of the data needs one sync (a.min(), a.max()). More equal-width bins
are counted by numfuse's histogram routine (src/extern/histogram.cc: one
pass, NumPy's bins and sums to the bit). bincount is numfuse's bincount
routine (its input's values decide the result's size: it is computed at the
call). String bin estimators ('auto', ...), complex data or weights, and
more than ``MAX_BINS`` bins at explicit edges run with NumPy through the
fallback.
"""

import operator
import warnings

import numpy as np

from . import _core, _fallback
from ._creation import asarray
from ._reductions import max as _max, min as _min, sum as _sum
from ._ufuncs import UFUNCS as U
from ._manip import where

ndarray = _core.ndarray
MAX_BINS = 64
_intp = np.dtype(np.intp)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _nf(x):
    """A numfuse array holding a copy of a (small) NumPy array."""
    return _core.from_numpy(np.array(x, copy=True, order="C"), True)


def _sync_scalars(*arrays):
    """Values of 0-d numfuse arrays (one flush for all)."""
    return [np.asarray(a)[()] for a in arrays]


def _bin_sum(mask, weights, ntype):
    """Sum over axis 1 of a (bins, n) bool mask, weighted or not."""
    if weights is None:
        return _sum(mask, axis=1)  # bool -> int64 (intp), as NumPy's counts
    w = weights
    if ntype.kind in "iu":
        # exact integer sums (wrapping into the weights' type like NumPy's astype)
        w64 = w.astype(np.int64) if w.dtype != np.int64 else w
        s = _sum(where(mask, w64[None, :], np.int64(0)), axis=1)
    elif ntype.kind == "c":
        wc = w.astype(np.complex128) if w.dtype != np.complex128 else w
        s = _sum(where(mask, wc[None, :], 0j), axis=1)
    else:
        w64 = w.astype(np.float64) if w.dtype != np.float64 else w
        s = _sum(where(mask, w64[None, :], 0.0), axis=1)
    return s.astype(ntype) if s.dtype != ntype else s


# -- histogram ---------------------------------------------------------------------

def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram (see the module docstring). Returns (hist, bin_edges)
    as numfuse arrays: hist int64 counts, the weights' dtype with weights,
    float64 with density."""
    def fallback(x, w):
        return _fallback.call_numpy(np.histogram, (x,), dict(bins=bins, range=range, density=density, weights=w),
                                    "numpy.histogram")

    x = asarray(a)
    w = None if weights is None else asarray(weights)
    if type(x) is not ndarray or (w is not None and type(w) is not ndarray) or x.dtype.kind == "c":
        return fallback(x, w)  # (complex data: NumPy's lexicographic range and bins)
    # NumPy's _ravel_and_check_weights
    if x.dtype == np.bool_:
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.", RuntimeWarning,
                      stacklevel=2)
        x = x.astype(np.uint8)
    if w is not None:
        if w.shape != x.shape:
            raise ValueError("weights should have the same shape as a.")
        w = w.reshape(-1)
    x = x.reshape(-1)
    if isinstance(bins, str):
        return fallback(x, w)

    # Bin edges: NumPy's own, computed on a stand-in with a's dtype and range.
    given = None
    if type(bins) is ndarray:
        given, bins = bins, np.asarray(bins)
    proxy = np.empty(0, x.dtype)
    if range is None and np.ndim(bins) == 0 and x.size > 0:
        lo, hi = _sync_scalars(_min(x), _max(x))
        proxy = np.array([lo, hi], dtype=x.dtype)
    edges = np.histogram_bin_edges(proxy, bins=bins, range=range)
    # NumPy returns an array of edges it was given as it is (the same memory)
    edges_nf = given if given is not None and edges is bins else _nf(edges)
    nb = len(edges) - 1
    ntype = _intp if w is None else w.dtype
    uniform = np.ndim(bins) == 0
    if uniform and nb > MAX_BINS:
        n = _equal_bins(x, w, edges, edges_nf, proxy, range, ntype)
        if n is not None:
            if density:
                db = _nf(np.array(np.diff(edges), float))
                return U["divide"](U["divide"](n, db), _sum(n)), edges_nf
            return n, edges_nf
    if nb > MAX_BINS or nb < 1 or not _core.supported_dtype(edges.dtype) or (
            w is not None and ntype.kind == "b" and not uniform):
        return fallback(x, w)

    ct = np.result_type(x.dtype, edges.dtype)  # the comparison type (NumPy's cast / searchsorted)
    xs = x if x.dtype == ct else x.astype(ct)
    e = edges.astype(ct, copy=False)
    lo_b = _nf(e[:-1])[:, None]
    hi_b = _nf(e[1:])[:, None]
    last = np.zeros(nb, dtype=bool)
    last[-1] = True
    last_b = _nf(last)[:, None]
    xv = xs[None, :]
    inside = U["bitwise_and"](U["greater_equal"](xv, lo_b),
                              U["bitwise_or"](U["less"](xv, hi_b),
                                              U["bitwise_and"](last_b, U["equal"](xv, hi_b))))
    n = _bin_sum(inside, w, ntype)
    if density:
        db = _nf(np.array(np.diff(edges), float))
        return U["divide"](U["divide"](n, db), _sum(n)), edges_nf
    return n, edges_nf


def _equal_bins(x, w, edges, edges_nf, proxy, range, ntype):
    """numpy.histogram's equal-width path for any number of bins: numfuse's
    routine (src/extern/histogram.cc) with NumPy's range, denominator and
    arithmetic types, so every value lands in NumPy's bin and weights sum
    to NumPy's bits. None where the types are ones it does not take."""
    t = edges.dtype
    if t not in (_F32, _F64) or x.dtype.kind not in "biuf" or (w is not None and w.dtype.kind not in "iuf"):
        return None
    # numpy's _get_outer_edges (on the data's synced min and max)
    if range is not None:
        first, last = range
    elif proxy.size:
        first, last = proxy.min(), proxy.max()
    else:
        first, last = 0, 1
    if first == last:
        first, last = first - 0.5, last + 0.5
    # The types NumPy computes the bin guess in: the data minus `first` (a
    # Python number keeps float32 data float32), divided by last - first
    # (_unsigned_subtract: integers subtract exactly).
    diff_t = np.result_type(t, first)
    if diff_t != t or np.result_type(t, last) != t:
        return None  # (float32 data with a float64 range: compared in float64)
    span_t = np.result_type(last, first)
    if span_t.kind in "iub":
        denom = float(int(last) - int(first))
    else:
        denom = float(np.subtract(last, first, dtype=span_t))
    guess_in_type = np.result_type(diff_t, span_t) == t and t == _F32
    xs = x if x.dtype == t else x.astype(t)
    ws = None if w is None else (w if w.dtype == _F64 else w.astype(_F64))  # (numpy.bincount's weights)
    return _core.histogram_uniform(xs, ws, edges_nf, float(first), float(last), denom, guess_in_type, ntype)


# -- bincount ----------------------------------------------------------------------

def _as_index_array(x):
    """NumPy's conversion of bincount's input (1-D, safely castable to intp)."""
    if x.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if x.ndim > 1:
        raise ValueError("object too deep for desired array")
    # integer arrays are force-cast to intp (uint64 values >= 2**63 become
    # negative and are rejected later); anything else must cast safely
    if x.dtype.kind not in "iu" and not np.can_cast(x.dtype, _intp, "safe"):
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to {_intp!r} according to the rule 'safe'")


_SMALL_BINCOUNT = 4096


def bincount(x, /, weights=None, minlength=0):
    """numpy.bincount (see the module docstring): int64 counts, float64 with
    weights, by numfuse's bincount routine (its input is computed at the
    call: its values decide the result's size)."""
    if type(x) is ndarray and weights is None and minlength == 0 and x.size < _SMALL_BINCOUNT:
        # a few values: NumPy's own count on a view (its checks, its errors;
        # a writeable view: NumPy copies a read-only one first), the fresh
        # result adopted
        return _fallback.adopt(np.bincount(x._to_numpy(True)))

    def fallback():
        return _fallback.call_numpy(np.bincount, (x,), dict(weights=weights, minlength=minlength),
                                    "numpy.bincount")

    if type(x) is ndarray or isinstance(x, np.ndarray):
        xa = x
    else:
        probe = np.asarray(x)
        if probe.dtype.kind not in "biu":  # e.g. [] or floats: NumPy's own rules
            return fallback()
        xa = probe
    if isinstance(xa, np.ndarray):
        _as_index_array(xa)
        xa = asarray(xa)
        if type(xa) is not ndarray:
            return fallback()
    _as_index_array(xa)
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if xa.size == 0:
        return _nf(np.zeros(minlength, _intp))
    mn, mx = _core.index_range(xa)  # (as intp: uint64 above INT64_MAX is negative, NumPy's force-cast)
    if mn < 0:
        raise ValueError("'list' argument must have no negative elements")
    size = max(mx + 1, minlength)
    w = None
    if weights is not None:
        w = asarray(weights)
        wd = w.dtype
        if wd.kind == "c" or not np.can_cast(wd, np.float64, "safe"):
            raise TypeError(f"Cannot cast array data from {wd!r} to dtype('float64') according to the rule 'safe'")
        if w.ndim == 0:
            raise ValueError("object of too small depth for desired array")
        if w.ndim > 1:
            raise ValueError("object too deep for desired array")
        if w.size != xa.size:
            raise ValueError("The weights and list don't have the same length.")
        if type(w) is not ndarray:
            return fallback()
    # numfuse's bincount routine (src/extern/histogram.cc): one pass, the
    # weights summed in index order as NumPy's loop adds them (its bits).
    return _core.bincount(xa, w, size)

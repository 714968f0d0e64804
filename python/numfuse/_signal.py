"""numpy.convolve and numpy.correlate for 1-D real arrays.

Each is one MDH contraction over a sliding window: the longer operand,
zero-padded for the 'same' and 'full' modes (a zeros fill and a slice
assignment, recorded), is viewed as (length, n) windows and contracted with
the kernel ('ij,j->i'; the kernel reversed for convolve). Argument handling,
the swap rules, errors and result dtypes are NumPy's. Complex operands run
with NumPy through the fallback.
"""

import operator

import numpy as np

from . import _core, _fallback
from ._creation import asarray, zeros

ndarray = _core.ndarray

_MODES = {"valid": 0, "same": 1, "full": 2}


def _mode(mode):
    """NumPy's PyArray_CorrelatemodeConverter."""
    if isinstance(mode, str):
        if mode in _MODES:
            return _MODES[mode]
        if mode and mode[0] in "vVsSfF":
            raise ValueError("Use one of 'valid', 'same', or 'full' for convolve/correlate mode")
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    try:
        m = operator.index(mode)
    except TypeError:
        raise TypeError("convolve/correlate mode not understood") from None
    if not 0 <= m <= 2:
        raise ValueError("integer convolve/correlate mode must be 0, 1, or 2")
    return m


def _check_1d(x):
    if x.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if x.ndim > 1:
        raise ValueError("object too deep for desired array")


def _correlate(a, v, mode, dt):
    """NumPy's _pyarray_correlate: out[k] = sum_j a[k + j - n_left] * v[j]
    (a zero outside its range), with a and v swapped, and the result reversed,
    when a is the shorter."""
    n1, n2 = a.shape[0], v.shape[0]
    if n1 == 0:
        raise ValueError("first array argument cannot be empty")
    if n2 == 0:
        raise ValueError("second array argument cannot be empty")
    inverted = n1 < n2
    if inverted:
        a, v = v, a
        n1, n2 = n2, n1
    n = n2
    if mode == 0:
        length, n_left, n_right = n1 - n + 1, 0, 0
    elif mode == 1:
        n_left = n // 2
        n_right = n - n_left - 1
        length = n1
    else:
        n_left = n_right = n - 1
        length = n1 + n - 1
    if n_left or n_right:
        padded = zeros(n1 + n_left + n_right, dtype=dt)
        padded[n_left:n_left + n1] = a
        a = padded
    # (length, n) windows of a: element strides (s, s)
    s = a.strides[0] // a.itemsize
    windows = _core.as_strided(a, (length, n), (s, s), True)
    r = _core.contract([windows, v], [[0, 1], [1]], [0], [length, n], dt, None)
    if r is NotImplemented:
        return NotImplemented
    return r[::-1] if inverted else r


def correlate(a, v, mode="valid"):
    """numpy.correlate (1-D): out[k] = sum_n a[n + k] * conj(v[n]), one
    contraction over a sliding window."""
    m = _mode(mode)
    x, y = asarray(a), asarray(v)
    if type(x) is not ndarray or type(y) is not ndarray:
        return _fallback.call_numpy(np.correlate, (a, v), dict(mode=mode), "numpy.correlate")
    dt = np.result_type(x.dtype, y.dtype)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.correlate, (x, y), dict(mode=mode), "numpy.correlate")
    _check_1d(x)
    _check_1d(y)
    if y.dtype.kind == "c":  # NumPy's correlate conjugates v (convolve does not)
        y = y.conj()
    r = _correlate(x, y, m, dt)
    if r is NotImplemented:
        return _fallback.call_numpy(np.correlate, (x, y), dict(mode=mode), "numpy.correlate")
    return r


def convolve(a, v, mode="full"):
    """numpy.convolve (1-D): the longer operand is correlated with the
    reversed shorter one, one contraction over a sliding window."""
    x, y = asarray(a), asarray(v)
    if type(x) is not ndarray or type(y) is not ndarray:
        return _fallback.call_numpy(np.convolve, (a, v), dict(mode=mode), "numpy.convolve")
    if x.ndim == 0:
        x = x.reshape((1,))
    if y.ndim == 0:
        y = y.reshape((1,))
    if len(x) == 0:
        raise ValueError("a cannot be empty")
    if len(y) == 0:
        raise ValueError("v cannot be empty")
    if len(y) > len(x):
        x, y = y, x
    m = _mode(mode)
    dt = np.result_type(x.dtype, y.dtype)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.convolve, (x, y), dict(mode=mode), "numpy.convolve")
    _check_1d(x)
    _check_1d(y)
    r = _correlate(x, y[::-1], m, dt)
    if r is NotImplemented:
        return _fallback.call_numpy(np.convolve, (x, y), dict(mode=mode), "numpy.convolve")
    return r

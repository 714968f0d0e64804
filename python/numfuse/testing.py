"""numfuse.testing: NumPy's assertions, accepting numfuse arrays."""

import numpy as np
import numpy.testing as _npt

from . import _core, _fallback


def _conv(x):
    if type(x) is _core.ndarray:
        return x._to_numpy(False)
    if isinstance(x, (list, tuple)):
        return type(x)(_conv(v) for v in x)
    return x


def _wrap(fn):
    def f(*args, **kwargs):
        return fn(*[_conv(a) for a in args], **{k: _conv(v) for k, v in kwargs.items()})

    f.__name__ = fn.__name__
    f.__doc__ = fn.__doc__
    return f


assert_allclose = _wrap(_npt.assert_allclose)
assert_array_equal = _wrap(_npt.assert_array_equal)
assert_equal = _wrap(_npt.assert_equal)
assert_array_almost_equal = _wrap(_npt.assert_array_almost_equal)
assert_almost_equal = _wrap(_npt.assert_almost_equal)
assert_array_less = _wrap(_npt.assert_array_less)
assert_approx_equal = _wrap(_npt.assert_approx_equal)
assert_array_max_ulp = _wrap(_npt.assert_array_max_ulp)
assert_raises = _npt.assert_raises
assert_raises_regex = _npt.assert_raises_regex
assert_warns = _npt.assert_warns


def __getattr__(name):
    attr = getattr(_npt, name)
    return _wrap(attr) if callable(attr) and not isinstance(attr, type) else attr

"""Running NumPy on numfuse arrays: the fallback for everything numfuse does
not implement natively.

A fallback flushes pending work, hands NumPy zero-copy views of the numfuse
arrays (writeable, so NumPy functions that modify an argument in place work),
runs NumPy, and wraps array results back into numfuse arrays. It warns once
per function with ``FallbackWarning``.
"""

import functools
import os
import warnings

import numpy as np

from . import _core

ndarray = _core.ndarray


class FallbackWarning(UserWarning):
    """numfuse ran a function with NumPy instead of compiling it."""


_warned = set()
_enabled = os.environ.get("NUMFUSE_FALLBACK_WARNINGS", "1") not in ("0", "false", "no", "off")


def set_warnings(on):
    global _enabled
    _enabled = bool(on)


def warnings_enabled():
    return _enabled


def warn_once(name, stacklevel=4):
    """Warns once per name. `stacklevel` is warnings.warn's, counted from
    here: 4 names the user's line when the user called a wrapper that called
    call_numpy (which calls this); a hook the C++ core calls from the user's
    line passes 3."""
    if _enabled and name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"numfuse: {name} is not compiled by numfuse; it ran with NumPy "
            "(inputs were flushed and converted). This warning is shown once per function.",
            FallbackWarning,
            stacklevel=stacklevel,
        )


class Sources(list):
    """The NumPy arrays a fallback call was handed (its arguments' memory),
    with the numfuse array each view was made of (`origin`): a result that
    is a view of an argument comes back as the same view of the numfuse
    array (NumPy's view-or-copy, and `out=` returns the `out` array)."""

    __slots__ = ("origin",)

    def __init__(self):
        super().__init__()
        self.origin = {}

    def add(self, view, array):
        self.append(view)
        self.origin[id(view)] = (view, array)


def _add_source(sources, view, array):
    if type(sources) is Sources:
        sources.add(view, array)
    else:
        sources.append(view)


def to_numpy(x, sources, writeable=True):
    """Recursively replace numfuse arrays by NumPy views."""
    t = type(x)
    if t is ndarray:
        a = x._to_numpy(writeable)
        _add_source(sources, a, x)
        return a
    if t is tuple or t is list:
        conv = [to_numpy(v, sources, writeable) for v in x]
        return conv if t is list else tuple(conv)
    if t is dict:
        return {k: to_numpy(v, sources, writeable) for k, v in x.items()}
    if t in _PLAIN:
        return x
    if isinstance(x, np.ndarray):
        sources.append(x)
        return x
    if isinstance(x, (list, tuple)):
        conv = [to_numpy(v, sources, writeable) for v in x]
        return type(x)(conv) if isinstance(x, list) else tuple(conv)
    if isinstance(x, dict):
        return {k: to_numpy(v, sources, writeable) for k, v in x.items()}
    return x


_PLAIN = frozenset([int, float, bool, complex, str, type(None), slice, type(Ellipsis)])


def adopt(res):
    """A NumPy function's array result (computed on views of numfuse memory)
    as a numfuse array: fresh memory is adopted as it is, a view of anything
    is copied (numfuse must not hold a second buffer over its own memory)."""
    return _core.from_numpy(res, res.base is None)


def _address(a):
    return a.__array_interface__["data"][0]


def _view_of(res, sources):
    """`res` (a NumPy result sharing memory with an argument) as the same
    view of the numfuse array the argument was made of; None when it is no
    such view (another dtype, an unaligned offset, a NumPy argument)."""
    origin = getattr(sources, "origin", None)
    if not origin:
        return None
    for s in sources:
        if not np.may_share_memory(res, s):
            continue
        entry = origin.get(id(s))
        if entry is None or entry[0] is not s:
            return None
        array = entry[1]
        if res is s and tuple(res.strides) == tuple(array.strides):
            return array
        if res.dtype != s.dtype:  # frombuffer, view(dtype): the same bytes as another type
            try:
                array = array.view(res.dtype)
            except (TypeError, ValueError):
                return None
        item = res.itemsize
        delta = _address(res) - _address(s)
        if delta % item or any(st % item for st in res.strides):
            return None
        try:
            return _core.as_strided(array, res.shape, tuple(st // item for st in res.strides),
                                    not res.flags.writeable, delta // item)
        except ValueError:  # reaches outside the numfuse array's buffer
            return None
    return None


def wrap(res, sources=()):
    """Wrap NumPy results as numfuse arrays: a view of an argument made of a
    numfuse array is the same view of that array, another result that
    aliases an input is copied."""
    t = type(res)
    if t is np.ndarray:
        if not _core.supported_dtype(res.dtype):
            return res
        # An array that owns its memory (base None) aliases nothing.
        aliases = res.base is not None and any(np.may_share_memory(res, s) for s in sources)
        if aliases:
            view = _view_of(res, sources)
            if view is not None:
                return view
        return _core.from_numpy(res, not aliases)
    if t is tuple or isinstance(res, tuple):
        if hasattr(res, "_fields"):  # namedtuple results (e.g. linalg.eigh)
            return type(res)(*(wrap(r, sources) for r in res))
        return tuple(wrap(r, sources) for r in res)
    if isinstance(res, list):
        return [wrap(r, sources) for r in res]
    return res


def _args_to_numpy(args, sources):
    # to_numpy over the top level of an argument tuple, inline (hot: every
    # fallback call converts its arguments).
    out = []
    for x in args:
        t = type(x)
        if t is ndarray:
            v = x._to_numpy(True)
            sources.add(v, x)
            x = v
        elif t not in _PLAIN:
            x = to_numpy(x, sources, True)
        out.append(x)
    return out


def call_numpy(func, args, kwargs, name=None, warn=True):
    if warn and _enabled:
        warn_once(name or getattr(func, "__name__", repr(func)))
    sources = Sources()
    nargs = _args_to_numpy(args, sources)
    if kwargs:
        keys = list(kwargs)
        nkwargs = dict(zip(keys, _args_to_numpy([kwargs[k] for k in keys], sources)))
    else:
        nkwargs = {}
    return wrap(func(*nargs, **nkwargs), sources)


def numpy_function(func, name=None):
    """A numfuse wrapper that runs `func` (a NumPy callable) through the fallback."""
    label = name or f"numpy.{getattr(func, '__name__', 'function')}"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return call_numpy(func, args, kwargs, label)

    wrapper._numfuse_fallback = True
    return wrapper


def numpy_kernel(func, name=None):
    """A numfuse function whose work is NumPy's own routine (pocketfft,
    LAPACK) run as a library call, like BLAS for matmul: pending inputs are
    computed and handed over as zero-copy views, and array results come back
    as numfuse arrays adopting NumPy's memory. No FallbackWarning: this is
    how numfuse computes it (docs/coverage.md lists it as NumPy's kernel)."""
    label = name or f"numpy.{getattr(func, '__name__', 'function')}"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return call_numpy(func, args, kwargs, label, warn=False)

    wrapper._numpy_kernel = True
    return wrapper


def module_getattr(np_module, module_name, namespace=None):
    """A module ``__getattr__`` that falls back to the NumPy module's attribute.

    With `namespace` (the module's globals), the wrapper made for a NumPy
    function is kept there, so later lookups of the name are plain global
    lookups (a loop calling numfuse.sort pays for the wrapper once)."""

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            obj = getattr(np_module, name)
        except AttributeError:
            raise AttributeError(f"module '{module_name}' has no attribute '{name}'") from None
        if callable(obj) and not isinstance(obj, type):
            obj = numpy_function(obj, f"{np_module.__name__}.{name}")
            if namespace is not None:
                namespace[name] = obj
        return obj

    return __getattr__

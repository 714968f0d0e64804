"""Floating-point errors as NumPy reports them.

NumPy reads the CPU's floating-point status after each ufunc loop and acts on
the flags set -- divide by zero, overflow, underflow, invalid value -- as
``numpy.geterr()`` says: ignore them, warn (``RuntimeWarning``), raise
(``FloatingPointError``), call ``numpy.geterrcall()``, print, or log.

numfuse reads the same flags after each kernel and each operation it runs at
once (``src/core/fpe.h``). The core hands the flags over with the operations
the kernel computed; :func:`report` names the first operation that can raise
each flag, so the message is NumPy's ("divide by zero encountered in
divide"), and applies NumPy's error state:

- an operation computed at the call reports there, as in NumPy;
- a recorded operation reports at the sync that computes it, with the error
  state in force at that sync. :class:`errstate` and :func:`seterr` therefore
  flush pending work on entry and exit, so that work recorded inside
  ``with numfuse.errstate(...)`` is computed -- and its flags judged -- under
  that state. (``numpy.errstate`` itself, used around numfuse code, applies at
  the sync it encloses.)
"""

import functools
import sys
import warnings

import numpy as np

from . import _core

# (flag bit, numpy.geterr() key, NumPy's words), in the order NumPy checks them.
_FLAGS = ((1, "divide", "divide by zero"), (2, "over", "overflow"), (4, "under", "underflow"),
          (8, "invalid", "invalid value"))

# The operations whose NumPy loops can raise each flag (NumPy's ufunc names;
# "cast", "reduce" and "matmul" as NumPy names them in its messages).
_DIVIDE = {"divide", "floor_divide", "remainder", "reciprocal", "log", "log2", "log10", "log1p", "arctanh",
           "power", "fmod"}
_OVER = {"add", "subtract", "multiply", "divide", "floor_divide", "power", "square", "exp", "exp2", "expm1",
         "sinh", "cosh", "cast", "reduce", "matmul", "hypot", "reciprocal", "ldexp", "logaddexp", "logaddexp2",
         "deg2rad", "rad2deg", "tan", "negative"}
_UNDER = {"multiply", "divide", "power", "square", "exp", "exp2", "expm1", "cast", "reduce", "matmul", "erf",
          "subtract", "add", "reciprocal", "deg2rad", "rad2deg", "hypot", "arctan2", "sin", "tan", "sinh", "tanh"}
_INVALID = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "sqrt", "log",
            "log2", "log10", "log1p", "arcsin", "arccos", "arccosh", "arctanh", "sin", "cos", "tan", "cast",
            "reduce", "matmul", "floor", "ceil", "trunc", "rint", "exp", "expm1", "sinh", "cosh"}
_CAN = {1: _DIVIDE, 2: _OVER, 4: _UNDER, 8: _INVALID}


# Among a fused kernel's operations, those that usually raise each flag are
# named before the rest (exp(1000 * x) overflows in exp, as NumPy says).
_FIRST = {1: {"divide", "floor_divide", "remainder", "reciprocal", "log", "log2", "log10", "log1p", "arctanh"},
          2: {"exp", "exp2", "expm1", "sinh", "cosh", "power", "square", "cast"},
          4: {"exp", "exp2", "expm1", "power", "cast"},
          8: {"sqrt", "log", "log2", "log10", "log1p", "arcsin", "arccos", "arccosh", "arctanh", "cast"}}


def _culprit(bit, ops):
    """The operation NumPy would name for flag `bit` among a kernel's `ops`."""
    for names in (_FIRST[bit], _CAN[bit]):
        for op in ops:
            if op in names:
                return op
    return ops[0] if ops else "operation"


def _stacklevel():
    """warnings.warn's stacklevel, from report()'s caller, of the user's frame."""
    f = sys._getframe(2)
    level = 2
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "numfuse" or mod.startswith("numfuse.")):
            return level
        f = f.f_back
        level += 1
    return 2


def report(events):
    """Called by the core with [(flags, ops), ...]: each kernel or operation
    that raised floating-point flags, and the operations it computed."""
    modes = np.geterr()
    for flags, ops in events:
        # In the order NumPy would meet them: by operation (program order),
        # then by flag.
        raised = [(bit, key, words, _culprit(bit, ops)) for bit, key, words in _FLAGS if flags & bit]
        raised.sort(key=lambda r: ops.index(r[3]) if r[3] in ops else len(ops))
        for bit, key, words, op in raised:
            mode = modes[key]
            if mode == "ignore":
                continue
            msg = f"{words} encountered in {op}"
            if mode == "warn":
                warnings.warn(msg, RuntimeWarning, stacklevel=_stacklevel())
            elif mode == "raise":
                raise FloatingPointError(msg)
            elif mode == "call":
                fn = np.geterrcall()
                if fn is None:
                    raise NameError(f"python callback specified for {words} (in  {op}) "
                                    "but no function found.")
                fn(words, flags)
            elif mode == "print":
                sys.stderr.write(f"Warning: {msg}\n")
            elif mode == "log":
                fn = np.geterrcall()
                if fn is None:
                    raise NameError(f"log specified for {words} (in {op}) but no object "
                                    "with write method found.")
                fn.write(f"Warning: {msg}\n")


def _flush():
    _core.flush_now()


class errstate(np.errstate):
    """Context manager (and decorator) for floating-point error handling:
    ``numpy.errstate`` whose entry and exit are sync points, so that the
    operations recorded inside the block are computed -- and their
    divide/overflow/underflow/invalid flags reported -- under the block's
    settings.

    Keywords as NumPy's: ``all``, ``divide``, ``over``, ``under``,
    ``invalid`` (each 'ignore', 'warn', 'raise', 'call', 'print' or 'log')
    and ``call``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = kwargs

    def __enter__(self):
        _flush()
        return super().__enter__()

    def __exit__(self, *exc_info):
        try:
            if exc_info[0] is None:
                _flush()
        finally:
            super().__exit__(*exc_info)

    def __call__(self, func):
        kwargs = self._kwargs

        @functools.wraps(func)
        def inner(*args, **kw):
            with errstate(**kwargs):
                return func(*args, **kw)

        return inner


def seterr(all=None, divide=None, over=None, under=None, invalid=None):
    """numpy.seterr, after computing what is pending under the old settings."""
    _flush()
    return np.seterr(all=all, divide=divide, over=over, under=under, invalid=invalid)


def seterrcall(func):
    """numpy.seterrcall, after computing what is pending under the old callback."""
    _flush()
    return np.seterrcall(func)


geterr = np.geterr
geterrcall = np.geterrcall

_core._set_fp_report(report)

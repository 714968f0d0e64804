"""numfuse: a NumPy that fuses.

``import numfuse as np`` and run NumPy code. Operations are recorded lazily;
at a sync point (printing a value, converting to NumPy, ``bool()``, or an
explicit ``numfuse.flush()``) the recorded stream is fused into kernels,
expressed as Multi-Dimensional Homomorphisms, compiled in process with clang
and LLVM ORC (OpenMP on the CPU), cached, and run.

Anything numfuse does not implement runs with NumPy (with a one-time
``FallbackWarning``). See ``numfuse.explain()`` for what the last flush did.
"""

import builtins as _builtins
import operator as _operator

import numpy as _np

# The OpenBLAS numfuse links (a fallback: numfuse shares NumPy's BLAS, see
# _hooks.share_numpy_blas) would start a pool of threads of its own when
# _core loads, which spin for a tenth of a second -- beside the program's
# first calls, on a machine with few cores. It loads with one thread (NumPy's
# BLAS, loaded above, has read the environment already).
import os as _os

_blas_env = _os.environ.get("OPENBLAS_NUM_THREADS")
_os.environ["OPENBLAS_NUM_THREADS"] = "1"
try:
    from . import _core
except ImportError as _e:  # a shared library missing: name the package that has it
    from ._install_help import explain as _explain

    raise ImportError(_explain(_e)) from _e
finally:
    if _blas_env is None:
        del _os.environ["OPENBLAS_NUM_THREADS"]
    else:
        _os.environ["OPENBLAS_NUM_THREADS"] = _blas_env
    del _blas_env
from ._hooks import NumfuseWarning
from ._fallback import FallbackWarning
from ._errstate import errstate, seterr, geterr, seterrcall, geterrcall  # noqa: F401

from ._version import __version__  # noqa: E402,F401

ndarray = _core.ndarray

# Types and constants are NumPy's own objects (so dtype=np.float32 works both ways).
from numpy import (  # noqa: E402,F401
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, intp, uintp, float16, float32, float64,
    complex64, complex128, longlong, ulonglong, byte, ubyte, short, ushort, intc, uintc, half, single, double,
    longdouble, csingle, cdouble, clongdouble, generic, number, integer, signedinteger, unsignedinteger, inexact,
    floating, complexfloating, dtype, finfo, iinfo, pi, e, inf, nan, newaxis, euler_gamma, result_type,
    can_cast, promote_types, min_scalar_type, issubdtype, isscalar, iterable, broadcast_shapes, index_exp, s_,
    get_printoptions, set_printoptions, printoptions, little_endian, exceptions,
    isdtype,  # (the array API's dtype predicate: numfuse's dtypes are NumPy's)
)

# The array API standard's entry points (ndarray.__array_namespace__ and
# ndarray.to_device are methods of the array).
from ._array_api import __array_api_version__, __array_namespace_info__  # noqa: E402,F401

bool = _np.bool  # numpy 2 name
int_ = _np.int_
float_ = _np.float64
object_ = _np.object_
str_ = _np.str_

from ._ufuncs import UFUNCS as _UFUNCS, ufunc, divmod_ as divmod  # noqa: E402

globals().update(_UFUNCS)

from ._creation import (  # noqa: E402,F401
    array, asarray, asanyarray, ascontiguousarray, asfortranarray, empty, empty_like, zeros, zeros_like, ones,
    ones_like, full, full_like, arange, linspace, logspace, eye, identity, copy, from_dlpack, mgrid, ogrid, r_, c_,
)
from ._reductions import (  # noqa: E402,F401
    sum, prod, max, min, amax, amin, any, all, argmax, argmin, mean, var, std, count_nonzero, ptp, nansum,
    nanprod, nanmean, cumsum, cumprod, trace,
)
from ._manip import (  # noqa: E402,F401
    reshape, ravel, transpose, permute_dims, swapaxes, moveaxis, expand_dims, squeeze, broadcast_to,
    broadcast_arrays, atleast_1d, atleast_2d, atleast_3d, where, concatenate, stack, vstack, hstack, dstack,
    column_stack, row_stack, flip, fliplr, flipud, split, array_split, diagonal, diff, shape, ndim, size,
)
from . import linalg, fft, lib  # noqa: E402,F401

# numfuse.random and numfuse.testing load on first use (as numpy.random
# and numpy.testing do: together they were a third of `import numfuse`).
_LAZY_SUBMODULES = ("random", "testing")
from .linalg import _matmul as matmul, dot, vdot, inner, _tensordot as tensordot, _outer as outer  # noqa: E402,F401
from . import _array, _creation as _cr0, _reductions as _red0, _ufuncs as _uf0  # noqa: E402

# The ufuncs' methods call into modules above _ufuncs (imports go downward only).
_uf0.wire(reduce_op=_red0.reduce_op, asarray=_cr0.asarray, check_int_power=_array._check_int_power,
          matmul=linalg._matmul)

# The functions loops call most enter C directly (src/python/calls.cc); any
# call form those entry points do not take goes on to the Python
# implementation, which handles NumPy's whole signature.
from . import _reductions as _red  # noqa: E402

_core._set_call_fallbacks({name: getattr(_red, name)
                           for name in ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin")})
_core._set_call_fallbacks({"dot": linalg.dot})
sum, prod, max, min, any, all, argmax, argmin, dot = (
    _core.FAST_FUNCTIONS[n] for n in ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "dot"))
amax, amin = max, min
from . import _creation as _cr  # noqa: E402

_core._set_call_fallbacks({n: getattr(_cr, n) for n in ("empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                                                         "ones_like", "arange", "array", "asarray")})
empty, zeros, ones, full, empty_like, zeros_like, ones_like, arange, array, asarray = (
    _core.FAST_FUNCTIONS[n] for n in ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
                                      "arange", "array", "asarray"))
from ._einsum import einsum  # noqa: E402,F401
from ._signal import convolve, correlate  # noqa: E402,F401
from ._histograms import histogram, bincount  # noqa: E402,F401
from ._config import config, explain, profile, set_option, get_option, options, show_config, benchmark  # noqa: E402,F401
from ._config import set_target, get_target, targets  # noqa: E402,F401
from ._tuning import tune, TuneReport  # noqa: E402,F401
from ._jit import jit, JitFunction  # noqa: E402,F401
from . import _tuning as tuning  # noqa: E402,F401
from . import _fallback, _hooks, _array  # noqa: E402

concat = concatenate

# Not compiled yet: NumPy through the fallback (flush, run, wrap, warn once).
nonzero = _fallback.numpy_function(_np.nonzero, "numpy.nonzero")
argsort = _fallback.numpy_function(_np.argsort, "numpy.argsort")


# flush(): block until every pending operation has been computed (a C
# function: a loop that syncs every iteration calls it once per iteration).
flush = _core.flush_now


def wait_background():
    """Block until the kernels numfuse compiles (or tunes) in the background
    are ready. Kernels of operations tier 0 ran while they were not worth
    compiling at once are compiled in the background when their code runs
    again; a benchmark that wants the steady state waits for them."""
    _core.tune_wait()


def round(a, decimals=0, out=None):
    """numpy.round: round half to even, scaling by 10**decimals like NumPy."""
    decimals = _operator.index(decimals)  # (NumPy's TypeError for 0.5)
    a = asarray(a)
    if a.dtype.kind == "b":  # NumPy rounds booleans in float16
        return _fallback.call_numpy(_np.round, (a, decimals), dict(out=out), "numpy.round (bool)")
    if a.dtype.kind in "iu":
        if decimals >= 0:
            r = a.copy() if out is None else _UFUNCS["positive"](a, out=out)
            return r
        return _fallback.call_numpy(_np.round, (a, decimals), dict(out=out), "numpy.round (integer, decimals<0)")
    if decimals == 0:
        return _UFUNCS["rint"](a, out=out)
    if decimals > 0:
        f = float(10.0 ** decimals)
        y = _UFUNCS["multiply"](a, f)
        return _UFUNCS["divide"](_UFUNCS["rint"](y), f, out=out)
    f = float(10.0 ** -decimals)
    y = _UFUNCS["divide"](a, f)
    return _UFUNCS["multiply"](_UFUNCS["rint"](y), f, out=out)


around = round


def clip(a, a_min=_np._NoValue, a_max=_np._NoValue, out=None, *, min=_np._NoValue, max=_np._NoValue, **kwargs):
    """numpy.clip: NumPy's argument rules, types (the clip ufunc's loop) and
    signed-zero behaviour, recorded as one fused elementwise pass."""
    # The common call first: a float array between two Python numbers (not
    # NaN; weak, so the array's type is the loop's): _clip_both's last form
    # without its type resolution (x kept where it is NaN or equals a bound).
    if (type(a) is ndarray and type(a_min) in (float, int) and type(a_max) in (float, int) and out is None
            and not kwargs and min is _np._NoValue and max is _np._NoValue and a.dtype.kind == "f"
            and a_min == a_min and a_max == a_max):
        m = where(_CLIP_LESS(a, a_min), a_min, a)
        return where(_CLIP_GREATER(m, a_max), a_max, m)
    if a_min is _np._NoValue and a_max is _np._NoValue:
        a_min = None if min is _np._NoValue else min
        a_max = None if max is _np._NoValue else max
    elif a_min is _np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    elif a_max is _np._NoValue:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    elif min is not _np._NoValue or max is not _np._NoValue:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` are provided is "
                         "forbidden.")
    lo, hi = a_min, a_max
    r = asarray(a)
    if kwargs or type(r) is not ndarray or (out is not None and type(out) is not ndarray):
        return _fallback.call_numpy(_np.clip, (r, lo, hi), dict(out=out, **kwargs), "numpy.clip")
    if r.dtype.kind in "iu":
        # NumPy drops Python-int bounds that cannot clip anything.
        info = _np.iinfo(r.dtype)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
    U = _UFUNCS
    if lo is None and hi is None:
        return U["positive"](r, out=out)
    if lo is None:
        return U["minimum"](r, hi, out=out)
    if hi is None:
        return U["maximum"](r, lo, out=out)
    return _clip_both(r, lo, hi, out)


_CLIP_LOOPS = {}  # (x dtype, bound types) -> NumPy's clip loop (resolve_dtypes is slow)
_CLIP_LESS, _CLIP_GREATER = _UFUNCS["less"], _UFUNCS["greater"]


def _clip_both(x, lo, hi, out):
    """NumPy's clip ufunc with both bounds. Its loop type comes from NumPy's
    own type resolution. For floats, NumPy's loop with scalar bounds keeps x
    when it equals a bound (clip(0.0, -0.0, 1) is 0.0), while its loop with
    array bounds is minimum(maximum(x, lo), hi) (returning the bound)."""
    def desc(v):
        if type(v) is _builtins.bool:
            return _np.dtype(_np.bool_)
        if type(v) in (int, float, complex):
            return type(v)
        return v.dtype if hasattr(v, "dtype") else _np.asarray(v).dtype

    def uniform(v, shape):
        # NumPy's clip loop takes its scalar-bounds path when the bound's
        # stride is 0 in every iterated dimension (extent > 1): a Python
        # scalar, a 0-d array, or an array broadcast along every such axis.
        # A size-1 result is iterated over the bound's own stride.
        if type(v) is not ndarray or v.ndim == 0:
            return True
        if _builtins.all(n <= 1 for n in shape):
            return False
        off = len(shape) - v.ndim
        for k, n in enumerate(shape):
            j = k - off
            if n > 1 and j >= 0 and v.shape[j] != 1 and v.strides[j] != 0:
                return False
        return True

    lo = lo if type(lo) in (_builtins.bool, int, float) else asarray(lo)
    hi = hi if type(hi) in (_builtins.bool, int, float) else asarray(hi)
    key = (x.dtype, desc(lo), desc(hi))
    try:
        loop = _CLIP_LOOPS.get(key)
        if loop is None:
            loop = _CLIP_LOOPS[key] = _np._core.umath.clip.resolve_dtypes(key + (None,))
    except TypeError:
        return _fallback.call_numpy(_np.clip, (x, lo, hi), dict(out=out), "numpy.clip")
    if not _builtins.all(_core.supported_dtype(t) for t in loop) or _builtins.any(type(v) not in (_builtins.bool, int, float, ndarray)
                                                              for v in (lo, hi)):
        return _fallback.call_numpy(_np.clip, (x, lo, hi), dict(out=out), "numpy.clip")
    U = _UFUNCS
    t = loop[-1]
    xs = x if x.dtype == t else x._astype(t, 2)  # cast as the clip ufunc casts: its result's layout
    lo = lo if type(lo) is not ndarray or lo.dtype == t else lo._astype(t, 2)
    hi = hi if type(hi) is not ndarray or hi.dtype == t else hi._astype(t, 2)
    shape = _np.broadcast_shapes(x.shape, _np.shape(lo), _np.shape(hi))
    if t.kind != "f" or not (uniform(lo, shape) and uniform(hi, shape)):
        return U["minimum"](U["maximum"](xs, lo), hi, out=out)
    if type(lo) in (int, float) and type(hi) in (int, float) and lo == lo and hi == hi:
        # (The same for bounds that are not NaN: x kept where it is NaN or
        # equals a bound. Two operations fewer per bound.)
        m = where(U["less"](xs, lo), lo, xs)
        r = where(U["greater"](m, hi), hi, m)
    else:
        m = where(U["logical_or"](U["isnan"](xs), U["greater_equal"](xs, lo)), xs, lo)
        r = where(U["logical_or"](U["isnan"](m), U["less_equal"](m, hi)), m, hi)
    if out is not None:
        return U["positive"](r, out=out)
    return r


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.isclose (NumPy 2's formula, recorded)."""
    x = a if isinstance(a, (int, float)) else asarray(a)
    y = b if isinstance(b, (int, float)) else asarray(b)
    if hasattr(y, "dtype"):
        dt = _np.result_type(y.dtype, 1.0)
        y = y.astype(dt, copy=False)
    elif isinstance(y, int):
        y = float(y)
    U = _UFUNCS
    result = U["bitwise_or"](U["bitwise_and"](U["less_equal"](U["absolute"](U["subtract"](x, y)),
                                                              U["add"](atol, U["multiply"](rtol, U["absolute"](y)))),
                                              U["isfinite"](y)),
                             U["equal"](x, y))
    if equal_nan:
        result = U["bitwise_or"](result, U["bitwise_and"](U["isnan"](x), U["isnan"](y)))
    return result


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _builtins.bool(all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return False
    eq = _UFUNCS["equal"](a1, a2)
    if equal_nan:
        eq = _UFUNCS["bitwise_or"](eq, _UFUNCS["bitwise_and"](_UFUNCS["isnan"](a1), _UFUNCS["isnan"](a2)))
    return _builtins.bool(all(eq))


def may_share_memory(a, b, max_work=None):
    if max_work is not None and not isinstance(max_work, (int, _np.integer)):
        raise ValueError("max_work must be an integer")
    if type(a) is ndarray and type(b) is ndarray:
        return a._may_share_memory(b)
    return _fallback.call_numpy(_np.may_share_memory, (a, b), {}, "numpy.may_share_memory", warn=False)


shares_memory = may_share_memory


def _fancy_warn():
    # Advanced indexing runs NumPy's on views of the memory (src/python/array.cc).
    _fallback.warn_once("advanced (integer/boolean array) indexing", stacklevel=3)


def _ufunc_fallback(name, args, out):
    uf = _UFUNCS[name]
    from ._ufuncs import _np_fallback

    r = _np_fallback(uf, args, out, None, {})
    return out if out is not None else r


_OPERATORS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv", "floor_divide": "floordiv",
    "remainder": "mod", "power": "pow", "bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor",
    "left_shift": "lshift", "right_shift": "rshift", "equal": "eq", "not_equal": "ne", "less": "lt",
    "less_equal": "le", "greater": "gt", "greater_equal": "ge",
}


def _operator_fallback(name, a, b, reflected, inplace):
    """`a op b` (or `b op a`, or `a op= b`) computed by NumPy's own operator,
    for operands numfuse does not hold: NumPy's results and NumPy's errors."""
    import operator

    op = _OPERATORS[name]
    sources = []
    x = _fallback.to_numpy(a, sources, writeable=inplace)
    y = _fallback.to_numpy(b, sources, writeable=False)
    if inplace:
        getattr(operator, "i" + op.rstrip("_"))(x, y)
        return a
    r = getattr(operator, op)(y, x) if reflected else getattr(operator, op)(x, y)
    if isinstance(r, _np.ndarray):
        _fallback.warn_once(f"operator {name} with a {type(b).__name__} operand")
    return _fallback.wrap(r, sources)


_core._set_index_hooks(_fancy_warn, _ufunc_fallback, _operator_fallback)
from . import _indexing  # noqa: E402

_core._set_fancy_hooks(_indexing.getitem, _indexing.setitem)
from . import _ufuncs as _uf  # noqa: E402

_uf._AT[0] = _indexing.add_at

import atexit as _atexit  # noqa: E402

# At exit: stop background tuning and the compiler's warm-up, let running
# flushes end, and park threads that are still inside numfuse (see
# _core._shutdown), so interpreter exit never aborts under a daemon thread.
_atexit.register(_core._shutdown)

# fork(): no flush or tuning work may be half-done in the child (see
# _core._before_fork); the child forgets the threads it does not have.
import os as _os  # noqa: E402

_os.register_at_fork(before=_core._before_fork, after_in_parent=_core._fork_abandoned)
_hooks.install()
_array._install(globals())
_core._set_matmul(matmul)  # `a @ b` with an operand other than a numfuse array

from ._config import apply_environment as _apply_environment  # noqa: E402

_apply_environment()

from ._sorting import *  # noqa: E402,F401,F403
from . import _sorting  # noqa: E402,F401
from ._lib_math import *  # noqa: E402,F401,F403
from . import _lib_math as _lm  # noqa: E402

# numpy.linalg's array-API vecdot and cross are _lib_math's (a module above linalg).
linalg.vecdot, linalg.cross = _lm.linalg_vecdot, _lm.linalg_cross
from ._lib_shape import *  # noqa: E402,F401,F403


def load_ipython_extension(ipython):
    """``%load_ext numfuse``: adds the ``%nftimeit`` magic (timing with results
    kept alive until computed; see numfuse._ipython)."""
    from ._ipython import load

    load(ipython)


from . import _docs  # noqa: E402

_docs.install(globals(), ndarray)

_numpy_attribute = _fallback.module_getattr(_np, "numfuse", globals())


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")  # (sets the module's attribute)
    return _numpy_attribute(name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))

"""Array creation. Constant fills, ranges and identity matrices are recorded
as tasks (so they fuse and are never materialized if temporary); arrays built
from Python data go through NumPy once and are adopted without a copy."""

import math
import operator

import numpy as np

from . import _core, _fallback
from ._array_api import check_device
from ._ufuncs import UFUNCS

ndarray = _core.ndarray


def _shape_ints(shape):
    """The shape as a tuple of ints (NumPy's argument conversion: TypeError
    for what is no integer or sequence of integers); not yet checked."""
    if isinstance(shape, (bool, np.bool_)):  # (NumPy refuses a bool as a shape)
        raise TypeError(f"expected a sequence of integers or a single integer, got '{shape!r}'")
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    if shape is None:
        raise TypeError("Use () not None as shape arguments")
    try:
        items = iter(shape)
    except TypeError:
        raise TypeError(f"expected a sequence of integers or a single integer, got '{shape!r}'") from None
    out = []
    for s in items:
        try:
            out.append(operator.index(s))
        except TypeError:
            t = type(s)
            name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
            raise TypeError(f"'{name}' object cannot be interpreted as an integer") from None
    return tuple(out)


def _check_dims(shape):
    """ValueError for a dimension NumPy refuses (after every argument converted)."""
    for s in shape:
        if not -2**63 <= s < 2**63:
            raise ValueError("Maximum allowed dimension exceeded")
        if s < 0:
            raise ValueError("negative dimensions are not allowed")
    return shape


def _shape(shape):
    return _check_dims(_shape_ints(shape))


def _pyint_to(v, dt):
    """NumPy's check of a Python int stored into integer type `dt` (through
    a C long, an unsigned long for uint32/uint64, then the type's range)."""
    wide = dt in (np.dtype(np.uint32), np.dtype(np.uint64))
    if not -2**63 <= v < 2**64 or (v >= 2**63 and not wide):
        raise OverflowError("Python int too large to convert to C long")
    info = np.iinfo(dt)
    if not info.min <= v <= info.max:
        raise OverflowError(f"Python integer {v} out of bounds for {dt}")


def _dtype(dtype, default=np.float64):
    if isinstance(dtype, (ndarray, np.ndarray)):  # (np.dtype would read a numfuse array's .dtype)
        raise TypeError("Cannot construct a dtype from an array")
    return np.dtype(default if dtype is None else dtype)


def order_arg(order, default=None):
    """NumPy's conversion of an ``order=`` argument: None gives `default`; a
    str (or bytes) names 'C', 'F', 'A' or 'K' in either case; TypeError for
    anything that is no str, ValueError for another str."""
    if order is None:
        return default
    if isinstance(order, bytes):
        order = order.decode("latin-1")
    if not isinstance(order, str):
        raise TypeError(f"order must be str, not {type(order).__name__}")
    o = order.upper()
    if o not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return o


def _creation_args(shape, dtype, order):
    """(dims, dtype, order) of empty/full/zeros/ones, converted in NumPy's
    order -- shape, dtype, order -- before the dims are checked (the first
    argument that does not convert decides the exception type)."""
    dims = _shape_ints(shape)
    dt = _dtype(dtype)
    order = order_arg(order)
    return _check_dims(dims), dt, order


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """numpy.array: a numfuse array holding a copy of `object` (or `object`
    itself when copy=False allows it)."""
    if type(object) is ndarray:
        r = object
        if dtype is not None and np.dtype(dtype) != r.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            r = r.astype(dtype)
        elif copy is True:
            r = r.copy(order=order or "K")
        if ndmin > r.ndim:
            r = r.reshape((1,) * (ndmin - r.ndim) + r.shape)
        return r
    if copy is False and not isinstance(object, np.ndarray):
        # NumPy 2: anything that is not already an array needs a copy.
        raise ValueError("Unable to avoid copy while creating an array as requested.\n"
                         "If using `np.array(obj, copy=False)` replace it with `np.asarray(obj)` to allow a copy "
                         "when needed (no behavior change in NumPy 1.x).\n"
                         "For more details, see https://numpy.org/devdocs/numpy_2_0_migration_guide.html"
                         "#adapting-to-changes-in-the-copy-keyword.")
    if copy is not False and (type(object) is list or type(object) is tuple):
        # A fresh NumPy array from a sequence (numfuse arrays inside convert
        # through __array__, synced; NumPy copies a sequence whatever `copy`
        # says): it aliases nothing, numfuse adopts it.
        a = np.array(object, dtype=dtype, order=order, ndmin=ndmin)
        if _core.supported_dtype(a.dtype):
            return _core.from_numpy(a, True)
        _fallback.warn_once(f"arrays of dtype {a.dtype}")
        return a
    sources = []
    obj = _fallback.to_numpy(object, sources, writeable=False) if isinstance(object, (list, tuple)) else object
    a = np.array(obj, dtype=dtype, copy=copy if copy is not False else None, order=order, ndmin=ndmin)
    if not _core.supported_dtype(a.dtype):
        _fallback.warn_once(f"arrays of dtype {a.dtype}")
        return a
    owned = a is not object and not any(np.may_share_memory(a, s) for s in sources) and not (
        isinstance(object, np.ndarray) and np.may_share_memory(a, object))
    r = _core.from_numpy(a, owned)
    if a is object and not a.flags.writeable:
        r.setflags(write=False)  # asarray of a read-only array stays read-only
    return r


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """numpy.asarray. A NumPy array argument is copied (numfuse computes
    lazily, so sharing memory with an array NumPy may change would be unsafe)."""
    check_device(device)
    if type(a) is ndarray:
        if (dtype is None or np.dtype(dtype) == a.dtype) and copy is not True:
            return a
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return a.astype(dtype) if dtype is not None else a.copy()
    if type(a) is list and dtype is None and copy is None and order is None:
        r = np.array(a)  # (a list: NumPy's fresh array, adopted)
        if _core.supported_dtype(r.dtype):
            return _core.from_numpy(r, True)
    if (type(a) is np.ndarray and dtype is None and copy is None and order is None and like is None
            and _core.supported_dtype(a.dtype)):
        # (array()'s path for this call, without its general handling)
        r = _core.from_numpy(a, False)
        if not a.flags.writeable:
            r.setflags(write=False)
        return r
    return array(a, dtype=dtype, copy=copy if copy is not None else None, order=order or "K")


def from_dlpack(x, /, *, device=None, copy=None):
    """numpy.from_dlpack: an array sharing the memory of `x`, any object with
    ``__dlpack__`` (a PyTorch, JAX or CuPy CPU tensor, a NumPy array, a
    numfuse array). The memory is used in place (copy=None or False; NumPy's
    rules decide when a copy is needed) and counts as shared: numfuse
    operations on it run at once, in program order with the other library's
    reads and writes. With copy=True numfuse gets its own copy."""
    if type(x) is ndarray:
        return x.copy() if copy is True else x
    a = np.from_dlpack(x, device=device, copy=copy)
    if not _core.supported_dtype(a.dtype):
        _fallback.warn_once(f"arrays of dtype {a.dtype}")
        return a
    if copy is True:
        return _core.from_numpy(a, True)  # (a fresh NumPy copy: numfuse adopts it)
    return _core.from_numpy_shared(a)


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    return asarray(a, dtype=dtype, order=order, device=device, copy=copy)


def ascontiguousarray(a, dtype=None, *, like=None):
    a = asarray(a, dtype=dtype)
    if type(a) is not ndarray:
        return np.ascontiguousarray(a)
    if a.ndim == 0:
        a = a.reshape((1,))
    return a if a._c_contiguous else a.copy(order="C")


def asfortranarray(a, dtype=None, *, like=None):
    a = asarray(a, dtype=dtype)
    if type(a) is not ndarray:
        return np.asfortranarray(a)
    if a.ndim == 0:
        a = a.reshape((1,))  # ndim >= 1, as NumPy's
    return a if a._f_contiguous else a.copy(order="F")


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    check_device(device)
    dims, dt, order = _creation_args(shape, dtype, order)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.empty, (shape,), dict(dtype=dtype, order=order), "numpy.empty")
    r = _core.empty(dims, dt)
    return r if order != "F" else _fortran(r)


def _fortran(r):
    return r._astype(r.dtype, _core.CAST_LAYOUTS["F"])  # (a Fortran-ordered copy: record_astype's rule)


_PY_FILL_DTYPES = {float: np.dtype(np.float64), bool: np.dtype(np.bool_), int: np.dtype(np.int64)}


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    if dtype is None and order == "C" and device is None:
        # a Python number into a shape of Python ints: NumPy's dtype of the
        # number (an int within int64), without the general conversions
        t = _PY_FILL_DTYPES.get(type(fill_value))
        dims = (shape,) if type(shape) is int else shape
        if (t is not None and type(dims) is tuple and all(type(d) is int and d >= 0 for d in dims)
                and (t.kind != "i" or -2**63 <= fill_value < 2**63)):
            r = _core.full(dims, fill_value, t)
            if r is not NotImplemented:
                return r
    check_device(device)
    if dtype is None:
        dtype = np.array(fill_value).dtype if not isinstance(fill_value, ndarray) else fill_value.dtype
    dims, dt, order = _creation_args(shape, dtype, order)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.full, (shape, fill_value), dict(dtype=dtype, order=order), "numpy.full")
    r = _core.full(dims, fill_value, dt)
    if r is NotImplemented:
        return _fallback.call_numpy(np.full, (shape, fill_value), dict(dtype=dtype, order=order), "numpy.full")
    return r if order != "F" else _fortran(r)


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    return full(shape, 0, float if dtype is None else dtype, order, device=device)


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    return full(shape, 1, float if dtype is None else dtype, order, device=device)


def _like_shape(a, shape):
    if shape is None:
        return a.shape if hasattr(a, "shape") else np.shape(a)
    return _shape(shape)


def _like_dtype(a, dtype):
    if dtype is not None:
        return _dtype(dtype)
    return a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Like NumPy, order='K' keeps the prototype's memory layout."""
    check_device(device)
    dt = _like_dtype(prototype, dtype)
    if type(prototype) is ndarray and order in ("K", "A") and _core.supported_dtype(dt):
        if order == "K" or prototype._f_contiguous:
            r = prototype._empty_like(dt, None if shape is None else _shape(shape))
            if r is not NotImplemented:
                return r
    r = empty(_like_shape(prototype, shape), dt, order="F" if order == "F" else "C")
    return r


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    check_device(device)
    r = empty_like(a, dtype=dtype, order=order, shape=shape)
    if type(r) is ndarray:
        r[...] = fill_value  # (NumPy's copyto: an array broadcasts)
        return r
    return _fallback.call_numpy(np.full_like, (a, fill_value), dict(dtype=dtype, order=order, shape=shape),
                                "numpy.full_like")


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like(a, 0, dtype=dtype, order=order, shape=shape, device=device)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like(a, 1, dtype=dtype, order=order, shape=shape, device=device)


_INT64 = np.dtype(np.int64)
_F64_DT = np.dtype(np.float64)


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def arange(*args, start=None, stop=None, step=None, dtype=None, device=None, like=None):
    """numpy.arange([start,] stop[, step], dtype=None). Integer ranges compute
    exactly in int64; float ranges fill ``start + i*delta`` as NumPy does."""
    check_device(device)
    # The common calls -- arange(n), arange(a, b), arange(a, b, step) with
    # Python ints -- without the general argument handling below.
    if (0 < len(args) <= 3 and start is None and stop is None and step is None and dtype is None
            and like is None and all(type(x) is int for x in args)):
        r = range(*args) if len(args) < 3 or args[2] != 0 else None  # (step 0: the general path raises)
        if r is not None and -2**62 < r.start < 2**62 and -2**62 < r.stop < 2**62 and -2**62 < r.step < 2**62:
            return _core.arange(float(r.start), float(r.step), len(r), _INT64, True, r.start, r.step)
    if len(args) > 4:
        raise TypeError(f"arange() takes from 1 to 4 positional arguments but {len(args)} were given")
    if len(args) == 4:
        dtype = args[3]
        args = args[:3]
    names = ("start", "stop", "step")
    if len(args) == 1 and stop is None:
        given = {"stop": args[0]}  # arange(stop)
    else:
        given = dict(zip(names, args))
    for k, v in (("start", start), ("stop", stop), ("step", step)):
        if v is not None:
            if k in given:
                raise TypeError(f"arange() got multiple values for argument '{k}'")
            given[k] = v
    if given.get("stop") is None:  # arange(5, None): NumPy's start is then the stop
        if given.get("start") is None:
            raise TypeError("arange() requires stop to be specified.")
        given["stop"], given["start"] = given["start"], 0
    start, stop, step = given.get("start", 0), given["stop"], given.get("step", 1)
    if step is None:
        step = 1
    args = (start, stop, step)
    if any(isinstance(x, tuple) for x in args):
        raise TypeError("arange: scalar arguments expected instead of a tuple.")
    if any(isinstance(x, ndarray) for x in args):
        args = tuple(x.item() if isinstance(x, ndarray) else x for x in args)
        start, stop, step = args

    def numpy_arange():
        return _fallback.call_numpy(np.arange, args, dict(dtype=dtype), "numpy.arange")

    if any(isinstance(x, (complex, np.complexfloating)) for x in args):
        return numpy_arange()
    integral = all(_is_int(x) or isinstance(x, (bool, np.bool_)) for x in args)
    if step == 0:
        raise ZeroDivisionError("division by zero" if integral else "float division by zero")
    # NumPy: integer (and bool) arguments give int64, anything else float64.
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.int64 if integral else np.float64)
    if not _core.supported_dtype(dt) or (not integral and dt.kind in "iub"):
        return numpy_arange()
    if integral:
        n = len(range(int(start), int(stop), int(step)))
        if dt == np.bool_ and n > 2:
            raise TypeError("arange() is only supported for booleans when the result has at most length 2.")
        if dt.kind in "iu":
            # NumPy stores the first two values as Python ints and extrapolates
            # the rest in the type (wrapping): only those two are checked.
            for v in (int(start), int(start) + int(step))[:min(n, 2)]:
                _pyint_to(v, dt)
        if not all(-2**63 <= int(v) < 2**63 for v in args):
            return numpy_arange()
        if n > 2**63 - 1:
            raise ValueError("Maximum allowed size exceeded")
        return _core.arange(float(start), float(step), n, dt, True, int(start), int(step))
    q = (stop - start) / step
    if q != q:
        raise ValueError("arange: cannot compute length")  # (NumPy's, for a NaN)
    if math.isinf(q) or q > 2**63 - 1:
        raise ValueError("Maximum allowed size exceeded")
    n = max(int(math.ceil(q)), 0)
    return _core.arange(float(start), float(step), n, dt, False, 0, 0)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """numpy.linspace, recorded lazily with NumPy's exact formula."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_device(device)
    if not (np.isscalar(start) and np.isscalar(stop)) or axis != 0:
        return _fallback.call_numpy(np.linspace, (start, stop, num), dict(endpoint=endpoint, retstep=retstep,
                                                                         dtype=dtype, axis=axis), "numpy.linspace")
    div = (num - 1) if endpoint else num
    if isinstance(start, (complex, np.complexfloating)) or isinstance(stop, (complex, np.complexfloating)):
        # Complex endpoints: NumPy's arithmetic on complex128 scalars (its
        # delta / div is Smith's division), then the same steps.
        start_f, stop_f = np.complex128(start), np.complex128(stop)
        dt = np.dtype(complex) if dtype is None else np.dtype(dtype)
    else:
        start_f, stop_f = float(start), float(stop)
        dt = np.dtype(float) if dtype is None else np.dtype(dtype)
    if dt == _F64_DT and type(start_f) is float:
        y = _core.linspace_now(start_f, stop_f, num, endpoint)  # (a small array: computed at the call)
        if y is not None:
            return (y, np.float64((stop_f - start_f) / div) if div > 0 else math.nan) if retstep else y
    y = arange(0, num, dtype=np.float64)
    delta = stop_f - start_f
    if type(delta) is float and not math.isfinite(delta):
        delta = np.subtract(stop_f, start_f)  # (NumPy's warning: overflow or invalid in subtract)
    if div > 0:
        step = delta / div
        if step == 0:
            y = (y / div) * delta
        else:
            y = y * step
    else:
        step = math.nan
        y = y * delta
    y = y + start_f
    if endpoint and num > 1:
        y[-1] = stop_f
    if dt.kind in "iu":
        y = UFUNCS["floor"](y)
    y = y.astype(dt, copy=False)
    if retstep and div > 0 and type(step) in (float, np.float64):
        step = np.float64(step)  # (NumPy's step is its arithmetic's: a float64 scalar; nan is a Python float)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not (np.isscalar(start) and np.isscalar(stop) and np.isscalar(base)) or axis != 0:
        return _fallback.call_numpy(np.logspace, (start, stop, num), dict(endpoint=endpoint, base=base, dtype=dtype,
                                                                         axis=axis), "numpy.logspace")
    y = linspace(start, stop, num=num, endpoint=endpoint)
    r = UFUNCS["power"](float(base), y)
    return r if dtype is None else r.astype(dtype, copy=False)


def _count_arg(n):
    """An integer count (N, M): NumPy's TypeError for a bool or a float."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError("an integer is required")
    return operator.index(n)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    if type(N) is int and M is None and type(k) is int and k == 0 and dtype is float and order == "C" and device is None \
            and N >= 0:
        return _core.eye(N, N, 0, _F64_DT)
    check_device(device)
    N = _count_arg(N)
    M = N if M is None else _count_arg(M)
    dt = _dtype(dtype)
    if not _core.supported_dtype(dt):
        return _fallback.call_numpy(np.eye, (N, M, k), dict(dtype=dtype, order=order), "numpy.eye")
    N, M, k = operator.index(N), operator.index(M), operator.index(k)
    order = order_arg(order, "C")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    # a diagonal outside the matrix (any Python int, 2**63 too): all zeros
    k = max(-N, min(M, k))
    if order == "F":  # the transpose of the C-ordered (M, N) eye of diagonal -k
        return _core.eye(M, N, -k, dt).T
    return _core.eye(N, M, k, dt)


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=float if dtype is None else dtype)


def copy(a, order="K", subok=False):
    if not isinstance(order, str) and order is not None:
        raise TypeError(f"order must be str, not {type(order).__name__}")
    a = asarray(a)
    if type(a) is not ndarray:
        return np.copy(a, order=order)
    return a.copy(order=order)


class _IndexTricks:
    """numpy.mgrid / ogrid / r_ / c_ as numfuse objects: NumPy's own
    construction of the (small, or index-built) arrays, whose results come
    back as numfuse arrays, so that a program that starts from
    ``np.ogrid[...]`` or ``np.r_[...]`` stays in numfuse (NumPy's objects
    would hand it NumPy arrays)."""

    _numpy_kernel = True

    def __init__(self, np_obj, name):
        self._np = np_obj
        self._name = name

    def __getitem__(self, key):
        if isinstance(key, tuple):
            key = tuple(x._to_numpy(False) if type(x) is ndarray else x for x in key)
        elif type(key) is ndarray:
            key = key._to_numpy(False)
        r = self._np[key]
        if isinstance(r, (tuple, list)):
            return type(r)(asarray(x) if isinstance(x, np.ndarray) else x for x in r)
        return asarray(r) if isinstance(r, np.ndarray) else r

    def __len__(self):
        return len(self._np)

    def __repr__(self):
        return f"numfuse.{self._name}"


mgrid = _IndexTricks(np.mgrid, "mgrid")
ogrid = _IndexTricks(np.ogrid, "ogrid")
r_ = _IndexTricks(np.r_, "r_")
c_ = _IndexTricks(np.c_, "c_")

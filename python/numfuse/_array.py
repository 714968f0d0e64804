"""Methods of numfuse.ndarray written in Python (the operators and views that
must be fast live in C++, src/python/array.cc).

Sync points (values leave numfuse): repr/str, bool/int/float, item, tolist,
__array__, iteration over values, and any NumPy fallback.
"""

import builtins
import copy as _copy
import operator
import warnings

import numpy as np

from . import _array_api, _core, _fallback

_trace_capturing = _core._trace_capturing

ndarray = _core.ndarray
_NoValue = np._NoValue


def _install(ns):
    """Attach methods to ndarray. `ns` is the numfuse namespace (functions)."""
    U = ns["_UFUNCS"]
    C = ndarray

    # -- conversion / sync points ---------------------------------------------
    def __array__(self, dtype=None, copy=None):
        # A view of numfuse's memory, writeable like the array itself; while
        # it lives, numfuse runs operations on that memory eagerly, so NumPy
        # and numfuse see each other's writes in program order.
        a = self._to_numpy(True)
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return a.astype(dtype)
        if copy:
            return a.copy(order="K")  # NumPy's copy keeps the memory layout
        return a

    def __repr__(self):
        return repr(self._to_numpy(False))

    def __str__(self):
        return str(self._to_numpy(False))

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._to_numpy(False).item(), spec)
        return format(str(self), spec)

    def __bool__(self):
        return bool(self._to_numpy(False))

    def __float__(self):
        return float(self._to_numpy(False))

    def __int__(self):
        return int(self._to_numpy(False))

    def __complex__(self):
        return complex(self._to_numpy(False))

    def __index__(self):
        if _trace_capturing():  # (numfuse.jit: a slice bound or an index read from an argument)
            v = _core._trace_int(self)
            if v is not None:
                return operator.index(v)
        return operator.index(self._to_numpy(False))

    # item and tolist are C methods (src/python/array.cc) for the common
    # forms; these are the general ones they call.
    def _py_item(self, *args):
        return self._to_numpy(False).item(*args)

    def _py_tolist(self):
        return self._to_numpy(False).tolist()

    _core._set_item_tolist(_py_item, _py_tolist)

    def tobytes(self, order="C"):
        return self._to_numpy(False).tobytes(order)

    # iter(a) is the C slot tp_iter (src/python/array.cc): a native iterator
    # of NumPy scalars (1-D) or rows (views).

    def __contains__(self, value):
        return bool((self == value).any())

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        # NumPy pickles a Fortran-contiguous array in Fortran order, anything else in C order.
        f = self.flags.f_contiguous and not self.flags.c_contiguous
        return (_from_numpy_copy, (self._to_numpy(False).copy(order="F" if f else "C"),))

    # -- operators that need Python-level dispatch --------------------------------
    # a ** b is the C slot nb_power (src/python/array.cc): float arrays to a
    # Python scalar power directly, everything else through these two.
    def _py_pow(self, other, mod=None):
        if mod is not None:
            return NotImplemented
        # NumPy's `**` computes x**2 as square(x) for every numeric type
        # (so bool**2 is int8, like square(bool)).
        if type(other) is int and other == 2 and self.dtype.kind in "biu":
            return U["square"](self)
        _check_int_power(self, other)
        return self._pow(other)

    def _py_rpow(self, other, mod=None):
        if mod is not None:
            return NotImplemented
        _check_int_power(other, self)
        return self._rpow(other)

    _core._set_pow(_py_pow, _py_rpow)

    def __ipow__(self, other):
        _check_int_power(self, other)
        return self._ipow(other)

    # a @ b is the C slot nb_matrix_multiply (src/python/array.cc), which
    # calls numfuse.matmul for operands other than two numfuse arrays.

    def __imatmul__(self, other):
        r = ns["matmul"](self, other)
        self[...] = r
        return self

    def __divmod__(self, other):
        return U["floor_divide"](self, other), U["remainder"](self, other)

    def __rdivmod__(self, other):
        return U["floor_divide"](other, self), U["remainder"](other, self)

    def __round__(self, ndigits=None):
        # numpy.ndarray has no __round__ (round(arr) raises); numpy.round and
        # ndarray.round are the array versions. A 0-d array rounds like the
        # NumPy scalar it stands for (full reductions return 0-d arrays where
        # NumPy returns scalars, and round(np.mean(x), 2) must work).
        if self.ndim == 0:
            return builtins.round(self[()], ndigits)
        raise TypeError("type numpy.ndarray doesn't define __round__ method")

    # -- NumPy protocols ------------------------------------------------------------
    # __array_ufunc__ is defined in C++ (src/python/array.cc): plain calls of
    # the ufuncs numfuse computes record directly, the rest goes to
    # numfuse._ufuncs.array_ufunc.

    def __array_function__(self, func, types, args, kwargs):
        from ._dispatch import array_function

        return array_function(func, types, args, kwargs)

    def __array_namespace__(self, /, *, api_version=None):
        return _array_api.namespace(api_version)

    def to_device(self, device, /, *, stream=None):
        return _array_api.to_device(self, device, stream)

    # -- properties ---------------------------------------------------------------
    C.mT = property(lambda self: self._swapaxes(-1, -2))
    def _real(self):
        if self.dtype.kind == "c":  # a float view of every other float of the memory
            return self._part(0)
        return self  # a real array's real part is the array itself, as in NumPy

    def _set_real(self, value):
        if self.dtype.kind == "c":
            self._part(0)[...] = value
        else:
            self[...] = value

    def _imag(self):
        if self.dtype.kind == "c":
            return self._part(1)
        # a real array's imaginary part: read-only zeros, C-ordered unless the
        # array is Fortran-ordered (as NumPy allocates it)
        z = ns["zeros"](self.shape, self.dtype, order="F" if self._f_contiguous and not self._c_contiguous else "C")
        z._set_writeable(False)
        return z

    def _set_imag(self, value):
        if self.dtype.kind == "c":
            self._part(1)[...] = value
            return
        raise TypeError("array does not have imaginary part to set")

    C.real = property(_real, _set_real)
    C.imag = property(_imag, _set_imag)
    C.flags = property(lambda self: _Flags(self))
    C.flat = property(lambda self: self.reshape(-1))
    C.device = property(lambda self: "cpu")
    C.__array_priority__ = 100.0

    # -- methods delegating to the numfuse functions --------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        from ._creation import order_arg  # (a module that imports this one)
        order = order_arg(order, "K")
        dt = np.dtype(dtype)
        if casting != "unsafe" and not np.can_cast(self.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dt!r} according to the rule "
                            f"'{casting}'")
        if dt == self.dtype and not copy:
            return self
        if self.dtype.kind == "c" and dt.kind not in "cb":
            warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                          stacklevel=2)
        if order == "A":
            order = "F" if self._f_contiguous and not self._c_contiguous else "C"
        r = self._astype(dt, _LAYOUT[order])
        if r is NotImplemented:
            _fallback.warn_once(f"astype to {dt}")
            return self._to_numpy(False).astype(dt, order=order)
        return r

    def copy(self, order="C"):
        if type(order) is not str or order not in _ORDERS:
            order = ns["_creation"].order_arg(order, "C")
        if order == "A":
            order = "F" if self._f_contiguous and not self._c_contiguous else "C"
        return self._astype(self.dtype, _LAYOUT[order])

    def fill(self, value):
        if type(value) not in _SCALARS and np.ndim(value) != 0:
            raise ValueError("setting an array element with a sequence.")
        self[...] = value

    def reshape(self, *shape, order="C", copy=None):
        if not shape:
            raise TypeError("reshape() takes exactly 1 argument (0 given)")
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return ns["reshape"](self, shape, order=order, copy=copy)

    def transpose(self, *axes):
        if len(axes) == 1:
            ax = axes[0]
            if ax is None or isinstance(ax, (tuple, list)):
                axes = ax
            elif not isinstance(ax, (int, np.integer)):
                # NumPy's conversion: one integer, or a sequence of them
                try:
                    axes = (operator.index(ax),)
                except TypeError:
                    if not hasattr(ax, "__len__") or isinstance(ax, (str, bytes)) or np.ndim(ax) == 0:
                        raise TypeError(f"expected a sequence of integers or a single integer, got {ax!r:.40}")
                    axes = tuple(ax)
        if axes:
            axes = tuple(a if type(a) is int else operator.index(a) for a in axes)
        return self._transpose(axes if axes else None)

    def conj(self, out=None):
        # NumPy's ndarray.conj: the array itself unless it is complex (or a
        # copy into `out`)
        if self.dtype.kind == "c":
            return U["conjugate"](self) if out is None else U["conjugate"](self, out)
        if out is None:
            return self
        ns["copyto"](out, self, casting="same_kind")
        return out

    def flatten(self, order="C"):
        if order == "C" or (order in ("A", "K") and self._c_contiguous):
            return self.copy("C").reshape(-1)  # a fresh C-ordered copy, seen 1-D
        return ns["ravel"](self, order).copy()

    def view(self, dtype=None, type=None):
        if isinstance(dtype, builtins.type) and issubclass(dtype, (np.ndarray, ndarray)) and type is None:
            dtype, type = None, dtype  # a.view(ndarray_subclass)
        if type is not None and type is not ndarray:
            return _fallback.call_numpy(lambda a: a.view(dtype, type) if dtype is not None else a.view(type=type),
                                        (self,), {}, "ndarray.view(type=)")
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self[...]
        r = self._view(np.dtype(dtype))
        if r is NotImplemented:
            # A dtype numfuse does not hold, or a layout that is not a whole
            # number of elements of the new type: NumPy's view of the data.
            return _fallback.call_numpy(lambda a: a.view(dtype), (self,), {}, "ndarray.view(dtype)")
        return r

    def dot(self, b, out=None):
        if out is None:
            return ns["dot"](self, b)
        return ns["dot"](self, b, out=out)

    def clip(self, min=None, max=None, out=None, **kwargs):
        return ns["clip"](self, min, max, out=out, **kwargs)

    def round(self, decimals=0, out=None):
        return ns["round"](self, decimals, out=out)


    def nonzero(self):
        return ns["nonzero"](self)

    def setflags(self, write=None, align=None, uic=None):
        if write is not None:
            self._set_writeable(bool(write))

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        ns["_sorting"].sort_inplace(self, axis, kind, order, stable)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return ns["argsort"](self, axis=axis, kind=kind, order=order, stable=stable)

    def searchsorted(self, v, side="left", sorter=None):
        return ns["searchsorted"](self, v, side=side, sorter=sorter)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return ns["take"](self, indices, axis=axis, out=out, mode=mode)

    def compress(self, condition, axis=None, out=None):
        return ns["compress"](condition, self, axis=axis, out=out)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        if order is not None or kind != "introselect":
            self._to_numpy(True).partition(kth, axis=axis, kind=kind, order=order)
            return
        ns["_sorting"]._kth(kth, self.shape[ns["_sorting"]._axis(axis, self.ndim)])
        ns["_sorting"].sort_inplace(self, axis)

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        return ns["argpartition"](self, kth, axis=axis, kind=kind, order=order)

    local = dict(locals())
    # copy, astype and reshape are C methods (src/python/calls.cc); these are
    # their full forms, for the call forms the C methods do not take.
    _core._set_call_fallbacks({"copy": local.pop("copy"), "astype": local.pop("astype"),
                               "reshape": local.pop("reshape")})
    for name, fn in local.items():
        if callable(fn) and name not in ("ns", "U", "C"):
            setattr(C, name, fn)
    conj_name = "conjugate"
    setattr(C, conj_name, C.conj)

    def method(fname, npname=None):
        f = ns[fname]

        def m(self, *args, **kwargs):
            return f(self, *args, **kwargs)

        m.__name__ = npname or fname
        m.__doc__ = getattr(f, "__doc__", None)
        return m

    # (sum, prod, max, min, any, all, argmax, argmin are C methods: calls.cc)
    for name in ("mean", "var", "std", "ptp", "squeeze", "swapaxes", "ravel", "diagonal", "trace", "cumsum", "cumprod", "repeat", "take",
                 "searchsorted", "compress", "choose", "put", "argpartition", "partition"):
        if name in ns:
            setattr(C, name, method(name))

    general_ravel = C.ravel

    def ravel(self, order="C"):
        if type(order) is not str:
            order = ns["_creation"].order_arg(order, "C")
        # C-contiguous data ravels to a view in every order but "F" (as NumPy):
        # the C reshape entry point, without the Python function's checks.
        if self._c_contiguous and (order != "F" or self.ndim <= 1):
            return self.reshape(-1)
        if self.ndim == 1 and order in ("C", "F", "A", "K"):  # (a strided vector: a contiguous copy)
            return self.copy()
        return general_ravel(self, order)

    ravel.__doc__ = general_ravel.__doc__
    C.ravel = ravel

    # swapaxes and squeeze() as methods: the view directly (loops call them).
    general_swapaxes, general_squeeze = C.swapaxes, C.squeeze

    def swapaxes(self, axis1, axis2):
        return self._swapaxes(operator.index(axis1), operator.index(axis2))

    def squeeze(self, axis=None):
        if axis is not None:
            return general_squeeze(self, axis)
        r = self._squeeze(None)
        return self if r.ndim == self.ndim else r  # (NumPy: the array itself when nothing goes)

    swapaxes.__doc__, squeeze.__doc__ = general_swapaxes.__doc__, general_squeeze.__doc__
    C.swapaxes, C.squeeze = swapaxes, squeeze

    # Every other ndarray method (byteswap, dump, tofile, ...): NumPy's, run
    # on the flushed data. Installed on the type, so attribute lookup is
    # Python's own (CPython specializes `a.sum()` only for types with the
    # generic lookup) and a name NumPy does not have raises AttributeError.
    def numpy_method(name, meth):
        def call(self, *args, **kwargs):
            return _fallback.call_numpy(meth, (self,) + args, kwargs, f"ndarray.{name}")

        call.__name__ = call.__qualname__ = name
        call.__doc__ = meth.__doc__
        call.__wrapped__ = meth  # (NumPy's: what the coverage report counts as a fallback)
        return call

    for name in dir(np.ndarray):
        if not name.startswith("__") and not hasattr(C, name) and callable(getattr(np.ndarray, name)):
            setattr(C, name, numpy_method(name, getattr(np.ndarray, name)))


def _ndarray_new(shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
    """numfuse.ndarray(shape, dtype=float, buffer=None, offset=0, strides=None,
    order=None), as numpy.ndarray: without a buffer, an uninitialized array
    (numpy.empty); with one, an array viewing that memory."""
    from ._creation import empty

    if buffer is None and strides is None:
        return empty(shape, dtype, order=order or "C")
    if isinstance(buffer, ndarray):
        buffer = buffer._to_numpy(True)
    arr = np.ndarray(shape, dtype, buffer, offset, strides, order)
    if not _core.supported_dtype(arr.dtype):
        raise TypeError(f"numfuse.ndarray cannot hold dtype {arr.dtype}")
    return _core.from_numpy(arr, True)


_core._set_ndarray_new(_ndarray_new)


def _check_int_power(base, exponent):
    """NumPy's integer power loops raise on negative integer exponents; with
    an array exponent that needs the exponent's values (a sync). Only an
    integer loop raises (uint64 ** int64 runs in float64), and only when it
    runs (not for an empty result)."""
    if type(exponent) is ndarray and exponent.dtype.kind == "i" and exponent.size:
        if hasattr(base, "dtype"):
            if base.size == 0:
                return
            loop = np.result_type(base.dtype, exponent.dtype)
        elif isinstance(base, (bool, int, float)):
            loop = np.result_type(base, exponent.dtype)  # a weak Python scalar
        else:
            return
        if loop.kind in "biu" and bool((exponent < 0).any()):
            raise ValueError("Integers to negative integer powers are not allowed.")


class _Flags:
    def __init__(self, a):
        self._a = a

    @property
    def c_contiguous(self):
        return self._a._c_contiguous

    @property
    def f_contiguous(self):
        return self._a._f_contiguous

    @property
    def writeable(self):
        return not self._a._readonly

    @writeable.setter
    def writeable(self, value):
        self._a._set_writeable(bool(value))

    @property
    def owndata(self):
        return self._a.base is None  # (NumPy's rule: a view's memory belongs to its base)

    aligned = True

    def __getitem__(self, k):
        key = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
               "F": "f_contiguous", "WRITEABLE": "writeable", "W": "writeable", "OWNDATA": "owndata",
               "O": "owndata", "ALIGNED": "aligned", "A": "aligned"}[k.upper()]
        return getattr(self, key)

    def __repr__(self):
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
                f"  OWNDATA : {self.owndata}\n  WRITEABLE : {self.writeable}\n  ALIGNED : True")


# CastLayout (src/stream/stream.h) of each NumPy order; Fortran copies are
# record_astype's (the one owner of that rule).
_LAYOUT = dict(_core.CAST_LAYOUTS)
_ORDERS = ("C", "F", "A", "K")
_SCALARS = (int, float, bool, complex)
_LAYOUT[None] = _LAYOUT["K"]


def _from_numpy_copy(arr):
    return _core.from_numpy(arr, True)

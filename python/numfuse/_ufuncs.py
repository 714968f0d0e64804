"""Universal functions: NumPy-compatible ufunc objects that record tasks.

``numfuse.add(a, b, out=...)`` and ``numpy.add(a_numfuse, b)`` (through
``__array_ufunc__``) both land in :func:`ufunc_call`. Anything numfuse cannot
compute natively (``where=``, unusual ``casting=``, complex inputs, loops in
float16) runs with NumPy through the fallback.
"""

import warnings

import numpy as np

from . import _core, _fallback

ndarray = _core.ndarray
_U = _core.UNARY_OPS
_B = _core.BINARY_OPS
_POWER = _B["power"]
_R = _core.REDUCE_OPS


class _UfuncMethods:
    """The Python half of :class:`numfuse.ufunc` (mirroring
    :class:`numpy.ufunc`): calling is C (src/python/ufunc.cc) for plain
    positional calls; keywords and everything else come to ``_call``."""

    __slots__ = ()

    def __repr__(self):
        return f"<numfuse ufunc '{self.__name__}'>"

    @property
    def nout(self):
        return 1

    @property
    def nargs(self):
        return self.nin + 1

    @property
    def identity(self):
        return self._np.identity if self._np is not None else None

    @property
    def types(self):
        return self._np.types if self._np is not None else []

    @property
    def ntypes(self):
        return len(self.types)

    signature = None

    def _call(self, *args, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True,
              signature=np._NoValue):
        if len(args) == self.nin + 1 and out is None:
            if self.__name__ in ("maximum", "minimum"):
                warnings.warn("Passing more than 2 positional arguments to np.maximum and np.minimum is deprecated. "
                              "If you meant to use the third argument as an output, use the `out` keyword argument "
                              "instead. If you hoped to work with more than 2 inputs, combine them into a single "
                              "array and get the extrema for the relevant axis.", DeprecationWarning, stacklevel=2)
            args, out = args[:-1], args[-1]
            if out is not None and type(out) is not ndarray and not isinstance(out, np.ndarray):
                raise TypeError("return arrays must be of ArrayType")  # (NumPy: a positional output is an array)
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes from {self.nin} to {self.nin + 1} positional arguments "
                            f"but {len(args)} were given")
        kwargs = {}
        if where is not True:
            kwargs["where"] = where
        if casting != "same_kind":
            kwargs["casting"] = casting
        if order != "K":
            kwargs["order"] = order
        if signature is None:
            raise TypeError("the signature object to ufunc must be a string or a tuple.")  # (NumPy's)
        if signature is not np._NoValue:
            kwargs["signature"] = signature
        return ufunc_call(self, args, out, dtype, kwargs)

    # -- methods --------------------------------------------------------------
    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
        op = _REDUCE_OF.get(self.__name__)
        if op is None or where is not True or (out is not None and type(out) is not ndarray):
            kw = dict(axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
            if initial is not np._NoValue:
                kw["initial"] = initial
            return _fallback.call_numpy(self._np.reduce, (array,), kw, f"{self.__name__}.reduce")
        return _impl["reduce_op"](op, array, axis, dtype, out, keepdims, initial)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        return _fallback.call_numpy(self._np.accumulate, (array,), dict(axis=axis, dtype=dtype, out=out),
                                    f"{self.__name__}.accumulate")

    def outer(self, A, B, **kwargs):
        if self.nin != 2 or kwargs:
            return _fallback.call_numpy(self._np.outer, (A, B), kwargs, f"{self.__name__}.outer")
        a, b = _impl["asarray"](A), _impl["asarray"](B)
        a2 = a.reshape(a.shape + (1,) * b.ndim)
        return self(a2, b)

    def reduceat(self, *args, **kwargs):
        return _fallback.call_numpy(self._np.reduceat, args, kwargs, f"{self.__name__}.reduceat")

    def at(self, *args, **kwargs):
        # add.at / subtract.at on numfuse arrays: numfuse's scatter-add
        # (installed by the package: _indexing.add_at); others run NumPy's.
        if (_AT[0] is not None and self.__name__ in ("add", "subtract") and len(args) == 3 and not kwargs
                and type(args[0]) is _core.ndarray and args[0].dtype != np.bool_):
            b = args[2]
            if self.__name__ == "subtract":
                b = (UFUNCS["negative"](b) if isinstance(b, _core.ndarray) else
                     -b if isinstance(b, (int, float)) and not isinstance(b, bool) else -np.asarray(b))
            if _AT[0](args[0], args[1], b) is not NotImplemented:
                return None
        return _fallback.call_numpy(self._np.at, args, kwargs, f"{self.__name__}.at")


# The scatter-add ufunc.at uses (set by the package once _indexing is loaded).
_AT = [None]

ufunc = _core._make_ufunc_type(_UfuncMethods)


def _new_ufunc(name, np_ufunc, nin, op_id):
    u = ufunc(nin, op_id)
    u.__name__ = name
    u._np = np_ufunc
    u.__doc__ = getattr(np_ufunc, "__doc__", None) if np_ufunc is not None else None
    return u


_REDUCE_OF = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}


def _np_fallback(uf, args, out, dtype, kwargs):
    kw = dict(kwargs)
    if out is not None:
        kw["out"] = out
    if dtype is not None:
        kw["dtype"] = dtype
    if uf._np is None:  # erf: SciPy-free reference via math.erf, vectorized
        import math

        res = np.vectorize(math.erf, otypes=[np.float64])(*[np.asarray(a) for a in _fallback.to_numpy(args, [])])
        return _fallback.wrap(res)
    return _fallback.call_numpy(uf._np, args, kw, uf.__name__)


def _scalar(x):
    return isinstance(x, (bool, int, float, complex, np.generic))


def ufunc_call(uf, args, out, dtype, kwargs):
    if out is None and uf._np is not None and all(_scalar(a) for a in args):
        # Scalars only: NumPy's scalar arithmetic (what NumPy returns, at its speed).
        return uf._np(*args, **kwargs) if dtype is None else uf._np(*args, dtype=dtype, **kwargs)
    if uf._op == _POWER and len(args) == 2:
        _impl["check_int_power"](args[0], args[1])
    if isinstance(out, tuple):
        if len(out) != 1:
            return _np_fallback(uf, args, out, dtype, kwargs)
        out = out[0]
    if kwargs or (out is not None and type(out) is not ndarray):
        return _np_fallback(uf, args, out, dtype, kwargs)
    if dtype is not None:
        return _call_with_dtype(uf, args, out, np.dtype(dtype), kwargs)
    if uf.nin == 1:
        r = _core.unary(uf._op, args[0], out)
    else:
        r = _core.binary(uf._op, args[0], args[1], out)
    if r is NotImplemented:
        return _np_fallback(uf, args, out, dtype, kwargs)
    return r


def _descriptor(x):
    """What ufunc.resolve_dtypes takes for an operand: the dtype of arrays and
    NumPy scalars (np.float64 is a float subclass, but strong), the type of
    Python int/float/complex (weak scalars)."""
    if hasattr(x, "dtype"):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if type(x) in (int, float, complex):
        return type(x)
    return np.asarray(x).dtype


def _call_with_dtype(uf, args, out, dt, kwargs):
    """dtype= fixes the ufunc's output type; NumPy picks the loop (and
    raises if the inputs cannot be cast to it with same_kind casting)."""
    if uf._np is None or not _core.supported_dtype(dt):
        return _np_fallback(uf, args, out, dt, kwargs)
    asarray = _impl["asarray"]
    loop = uf._np.resolve_dtypes(tuple(_descriptor(a) for a in args) + (None,),
                                 signature=(None,) * uf.nin + (dt,))
    if not all(_core.supported_dtype(t) for t in loop):
        return _np_fallback(uf, args, out, dt, kwargs)
    cast = tuple(a if _is_pyscalar(a) else asarray(a).astype(loop[i], copy=False) for i, a in enumerate(args))
    r = _core.unary(uf._op, cast[0], None) if uf.nin == 1 else _core.binary(uf._op, cast[0], cast[1], None)
    if r is NotImplemented:
        return _np_fallback(uf, args, out, dt, kwargs)
    if r.dtype != loop[-1]:
        r = r.astype(loop[-1])
    if out is not None:
        out[...] = r
        return out
    return r


def _is_pyscalar(x):
    return isinstance(x, (bool, int, float))


def _make(name, np_name=None, nin=None):
    np_name = np_name or name
    np_uf = getattr(np, np_name, None)
    if np_name in _U and (nin in (None, 1)):
        return _new_ufunc(name, np_uf, 1, _U[np_name])
    return _new_ufunc(name, np_uf, 2, _B[np_name])


UFUNCS = {}
for _name in list(_U) + list(_B):
    UFUNCS[_name] = _make(_name)
# NumPy's other names for the same ufuncs.
_ALIASES = {
    "abs": "absolute",
    "true_divide": "divide",
    "mod": "remainder",
    "pow": "power",
    "bitwise_not": "invert",
    "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift",
    "bitwise_invert": "invert",
    "acos": "arccos",
    "asin": "arcsin",
    "atan": "arctan",
    "atan2": "arctan2",
    "acosh": "arccosh",
    "asinh": "arcsinh",
    "atanh": "arctanh",
    "degrees": "rad2deg",
    "radians": "deg2rad",
}
for _alias, _target in _ALIASES.items():
    UFUNCS[_alias] = UFUNCS[_target]
UFUNCS["conj"] = UFUNCS["conjugate"]

# __array_ufunc__'s fast path (C++) records plain calls of these NumPy ufuncs
# (power is left to array_ufunc for its integer-power checks).
for _uf in UFUNCS.values():
    if _uf._np is not None and _uf._op != _POWER and _uf._np.nin == _uf.nin and _uf.nin in (1, 2):
        _core._register_array_ufunc(_uf._np, _uf.nin, _uf._op)
# `numpy_scalar op array` (alpha * A[i, k] * row) takes that fast path too,
# without NumPy's detour through the ufunc (src/python/scalar_slots.cc).
_core._install_scalar_operators()


# ---------------------------------------------------------------------------
# __array_ufunc__: NumPy ufuncs applied to numfuse arrays.

def array_ufunc(self, np_ufunc, method, inputs, kwargs):
    name = np_ufunc.__name__
    uf = UFUNCS.get(name)
    if uf is not None and uf._np is np_ufunc:
        if method == "__call__":
            out = kwargs.pop("out", None)
            dtype = kwargs.pop("dtype", None)
            kwargs.pop("subok", None)
            if "where" in kwargs and kwargs["where"] is True:
                kwargs.pop("where")
            for k, default in (("casting", "same_kind"), ("order", "K")):
                if isinstance(kwargs.get(k), str) and kwargs[k] == default:
                    kwargs.pop(k)
            return ufunc_call(uf, inputs, out, dtype, kwargs)
        if method == "reduce":
            return uf.reduce(*inputs, **kwargs)
        if method == "outer" and not kwargs:
            return uf.outer(*inputs)
    if name == "divmod" and method == "__call__" and not kwargs:
        return divmod_(*inputs)
    if name == "matmul" and method == "__call__":
        return _impl["matmul"](*inputs, **kwargs)
    if method == "__call__":
        return _fallback.call_numpy(np_ufunc, inputs, kwargs, name)
    return _fallback.call_numpy(getattr(np_ufunc, method), inputs, kwargs, f"{name}.{method}")


def divmod_(x1, x2, *outs, out=(None, None)):
    if outs:  # NumPy's positional outputs
        if len(outs) > 2:
            raise TypeError(f"divmod() takes from 2 to 4 positional arguments but {len(outs) + 2} were given")
        out = tuple(outs) + (None,) * (2 - len(outs))
    elif out is None:
        out = (None, None)
    elif not isinstance(out, tuple):
        out = (out, None)
    if any(o is not None for o in out):
        return _fallback.call_numpy(np.divmod, (x1, x2), dict(out=out), "divmod")
    return UFUNCS["floor_divide"](x1, x2), UFUNCS["remainder"](x1, x2)


_core._set_array_ufunc_hook(array_ufunc)

# What the ufunc methods call that lives in modules above this one (they
# import it: UFUNCS): given by the package once they are loaded (wire), so
# imports only go downward.
_impl = {}


def wire(*, reduce_op, asarray, check_int_power, matmul):
    _impl.update(reduce_op=reduce_op, asarray=asarray, check_int_power=check_int_power, matmul=matmul)

"""Docstrings: numfuse's functions and methods that implement a NumPy
function with NumPy's semantics carry NumPy's documentation, under a first
paragraph saying how numfuse runs it. (Where numfuse's behaviour differs,
the function's own docstring says so and is kept.)"""

import numpy as np

_HEADER = ("numfuse's {what}: NumPy's semantics, recorded lazily and fused with neighbouring operations "
           "into compiled kernels (computed at the call for small arrays whose inputs are computed). "
           "Results, dtypes and memory layouts are NumPy's; see numfuse's README, 'Differences from NumPy', "
           "for the few places they are not. NumPy's documentation follows.\n\n")


def _with_numpy_doc(obj, np_obj, what):
    doc = getattr(np_obj, "__doc__", None)
    if not doc or (getattr(obj, "__doc__", None) or "").strip():
        return
    try:
        obj.__doc__ = _HEADER.format(what=what) + doc
    except (AttributeError, TypeError):
        pass  # (an immutable builtin: it has its own)


NDARRAY = """numfuse's N-dimensional array, numpy.ndarray's counterpart.

ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None)

Operations on numfuse arrays are recorded and computed at a sync point
(printing, conversion to NumPy, element access, ``bool()``,
``numfuse.flush()``), fused into compiled kernels; small arrays whose inputs
are computed run at the call. Attributes (shape, dtype, strides, flags,
base, data, ctypes), indexing, views and methods follow NumPy. The memory is
shared the standard ways: the buffer protocol, ``__array_interface__`` and
DLPack, so ``numpy.asarray(a)`` is a view of it.
"""

UFUNC = """numfuse's universal function, numpy.ufunc's counterpart (numfuse.add,
numfuse.sqrt, ...).

Calling one records (or, small, computes) the elementwise operation with
NumPy's type resolution, broadcasting and ``out=``/``where=``/``dtype=``
keywords; ``reduce``, ``accumulate``, ``outer``, ``at`` and the attributes
(nin, nout, types, identity) are NumPy's interface.
"""


OWN = {
    "erf": "erf(x, /, out=None)\n\nThe error function, elementwise (scipy.special.erf's values; NumPy has no "
           "erf ufunc). Floats keep their type; integers and bools compute in float64.",
}
OWN_METHODS = {
    "ptp": "a.ptp(axis=None, out=None, keepdims=False)\n\nRange of values (maximum - minimum) along an axis: "
           "numpy.ptp(a, ...). (NumPy 2 removed the method; numfuse keeps it for NumPy 1 code.)",
}


def install(namespace, ndarray_type):
    for name, doc in OWN.items():
        obj = namespace.get(name)
        if obj is not None and not (obj.__doc__ or "").strip():
            obj.__doc__ = doc
    for name, doc in OWN_METHODS.items():
        obj = vars(ndarray_type).get(name)
        if obj is not None and not (obj.__doc__ or "").strip():
            obj.__doc__ = doc
    for t, doc in ((ndarray_type, NDARRAY), (namespace.get("ufunc"), UFUNC)):
        if t is not None and not (t.__doc__ or "").strip():
            try:
                t.__doc__ = doc
            except (AttributeError, TypeError):
                pass
    for name, obj in list(namespace.items()):
        if name.startswith("_") or not callable(obj) or isinstance(obj, type):
            continue
        np_obj = getattr(np, name, None)
        if np_obj is not None and np_obj is not obj:
            _with_numpy_doc(obj, np_obj, f"numpy.{name}")
    for klass in ndarray_type.__mro__:
        if klass is object:
            break
        for name, obj in vars(klass).items():
            if name.startswith("_") or not callable(obj):
                continue
            np_obj = getattr(np.ndarray, name, None)
            if np_obj is not None:
                _with_numpy_doc(obj, np_obj, f"ndarray.{name}")

"""Differential coverage sweep: every public NumPy top-level function that
numfuse defines (native, partial, NumPy kernel or fallback; see
``numfuse._coverage``), called with the same generic candidate arguments on
NumPy and on numfuse.

For each function and each candidate argument list:

- NumPy runs first on fresh NumPy arrays (warnings recorded, exceptions caught).
- If NumPy raises, numfuse must raise an exception of the same type (an
  ``isinstance`` of NumPy's); numfuse returning a value is ``no-error``, another
  exception ``exception``. A TypeError/ValueError disagreement, or NumPy's
  AttributeError (an accident of missing validation) where numfuse raises
  TypeError/ValueError, is ``error-type``: reported as a
  ``SweepErrorTypeWarning``, a failure only with ``NUMFUSE_SWEEP_STRICT=1``.
- If NumPy returns, numfuse runs on fresh numfuse arrays holding the same
  values (never the same memory), and the results must agree: the same kind
  (array, scalar, tuple, list, None, ...), dtype, shape and values (NaN equals
  NaN, NaT equals NaT; float64/complex128 to rtol 1e-12, float32/complex64 to
  1e-5, both with an atol of 1e-3 * rtol * the largest finite magnitude;
  integers, bools and everything else exactly). Array arguments must also be
  left with the same values (``copyto``, ``place``, ``put``, ``fill_diagonal``
  ... modify them).
- Array results must be laid out as NumPy's (a later reshape/ravel is a view
  or a copy by the layout, and a write through it shows up or not): C and F
  contiguity, strides over the axes longer than 1, the writeable flag, and
  which arguments the result shares memory with (``View`` arguments hand both
  sides transposed, sliced and reversed views).
- Warnings must agree: floating-point errors by kind (divide by zero,
  overflow, underflow, invalid; not the operation named), any other warning by
  category and message. numfuse's result (and its array arguments) are
  computed inside the check, so a recorded operation reports at its sync; a
  warning numfuse only reports at the *next* operation is ``late-warning``.

Not mismatches (documented or by design): a 0-d numfuse array where NumPy
returns a NumPy scalar of the same dtype and value (README, "Differences from
NumPy you may notice"); a NumPy array where the result's dtype is one numfuse
does not hold (float16, datetime64: ``numfuse._fallback.wrap``). Calls whose
NumPy result is not defined (``PRECONDITION``: ``searchsorted`` on unsorted
input, ``tril``/``triu`` with a fractional ``k``) are not made.

The candidate arguments are a fixed, seeded pool (see ``CANDIDATES``); most
candidates are invalid for most functions, which checks that numfuse rejects
them as NumPy does. ``EXTRA`` adds a few calls for functions the generic pool
cannot reach (string subscripts, keyword-only parameters).

Each function runs twice: with numfuse's default tier (these small operands
run at the call, on tier 0) and with ``tier="lazy"`` (recorded, fused,
compiled).
"""

import math
import os
import re
import warnings

import numpy as np
import pytest

import numfuse as nf
from numfuse import _core, _coverage

# --------------------------------------------------------------------------
# What is not swept, and why.

SKIP = {
    # I/O: files, buffers of text.
    "load": "I/O (files)",
    "save": "I/O (files)",
    "savez": "I/O (files)",
    "savez_compressed": "I/O (files)",
    "savetxt": "I/O (files)",
    "loadtxt": "I/O (files)",
    "genfromtxt": "I/O (files)",
    "fromfile": "I/O (files)",
    "fromregex": "I/O (files, regex strings)",
    "fromstring": "needs a string",
    # Printing and formatting.
    "array2string": "printing",
    "array_repr": "printing (repr names the class)",
    "array_str": "printing",
    "format_float_positional": "printing",
    "format_float_scientific": "printing",
    "info": "printing (writes to stdout)",
    "show_config": "printing (writes to stdout)",
    "show_runtime": "printing (writes to stdout)",
    "typename": "needs a type-code string",
    "datetime_as_string": "strings / datetimes",
    # Global state.
    "seterr": "global error state",
    "seterrcall": "global error state",
    "setbufsize": "global buffer-size state",
    "getbufsize": "global buffer-size state",
    "get_include": "build path, not a computation",
    "test": "runs NumPy's test suite",
    # Callables, subscript strings.
    "apply_along_axis": "needs a callable",
    "apply_over_axes": "needs a callable",
    "fromfunction": "needs a callable",
    "frompyfunc": "needs a callable",
    "fromiter": "needs an iterable and a dtype (iterators are consumed)",
    "piecewise": "needs callables",
    "mask_indices": "needs a callable",
    "einsum_path": "needs a subscripts string",
    "nested_iters": "returns NumPy iterators over op_axes lists",
}

# Functions whose result values are not defined (uninitialized memory):
# only kind, dtype and shape are compared.
VALUES_UNDEFINED = {"empty", "empty_like"}


def swept_functions():
    names = []
    for name, cat in _coverage.table()[0].items():
        if name in SKIP or cat in (_coverage.SHARED, _coverage.MISSING):
            continue
        if getattr(nf, name) is getattr(np, name):
            continue
        names.append(name)
    return sorted(names)


# --------------------------------------------------------------------------
# The argument pool (NumPy arrays, built once; every call gets copies).

_rng = np.random.default_rng(20240611)

A1 = np.array([1.5, -2.0, 0.0, 3.25, 0.75, -0.5, 2.0])            # 1-D float64, a negative and a zero
A1B = np.round(_rng.uniform(-3, 3, 7), 3)                          # same shape, other values
A2 = np.round(_rng.uniform(-4, 4, (3, 4)), 3)                      # 2-D float64 (3, 4)
A2[1, 2] = 0.0
A2B = np.round(_rng.uniform(-4, 4, (3, 4)), 3)
SQ = np.round(_rng.uniform(-2, 2, (4, 4)), 3) + 4 * np.eye(4)      # square, well conditioned
SQB = np.round(_rng.uniform(-2, 2, (4, 4)), 3)
I1 = np.array([3, -1, 0, 5, 2, 7, -4], dtype=np.int64)             # 1-D int64 with negatives
I2 = np.array([0, 0, 1, 2, 2, 3, 5], dtype=np.int64)               # non-negative, sorted: indices, bins, counts
B1 = np.array([True, False, True, True, False, False, True])       # bool, 7 like A1
C1 = np.array([1 + 2j, -0.5j, 0j, 3 - 1j, -2 + 0.25j])             # complex128
C1B = np.array([0.5 - 1j, 2 + 0j, -1 + 1j, 0.25j, -3 - 2j])
F32 = np.array([0.5, -1.25, 0.0, 2.5, 3.0], dtype=np.float32)      # float32
E0 = np.zeros((0,), dtype=np.float64)                              # empty
Z0 = np.array(2.5)                                                 # 0-d float64
A3 = np.round(_rng.uniform(-4, 4, (2, 3, 4)), 3)                   # 3-D float64
AF = np.asfortranarray(np.round(_rng.uniform(-4, 4, (4, 3)), 3))   # Fortran-ordered (copied with order='K')
I32 = np.array([4, -3, 0, 1, 9, -7, 2], dtype=np.int32)
U8 = np.array([0, 1, 7, 128, 255, 3, 64], dtype=np.uint8)
B1N = ~B1
DT = np.array(["2024-01-01", "NaT", "2024-03-15"], dtype="datetime64[D]")
DT2 = np.array(["2024-02-01", "2024-01-05", "2024-12-31"], dtype="datetime64[D]")


def _c(desc, *args, **kwargs):
    return (desc, args, kwargs)


class View:
    """An argument that is a view of a NumPy array (transposed, sliced,
    reversed): each side gets a fresh copy of `base` and the same view of it
    (`make`), so numfuse is handed the layout NumPy is."""

    def __init__(self, base, make):
        self.base, self.make = base, make

    def numpy(self):
        return self.make(self.base)


# Layouts (the result's layout decides whether a later reshape/ravel is a view
# or a copy, so it is compared with NumPy's: flags, strides, view-or-copy).
A2T = View(A2, lambda x: x.T)                                     # (4, 3), F-contiguous view
A2S = View(A2, lambda x: x[:, ::2])                               # (3, 2), strided view
A2R = View(A2, lambda x: x[::-1, 1:])                             # (3, 3), negative stride
A1R = View(A1, lambda x: x[::-1])                                 # (7,), reversed
A1S = View(np.concatenate([A1, A1B]), lambda x: x[::2])           # (7,), stride 2
A3P = View(A3, lambda x: x.transpose(2, 0, 1))                    # (4, 2, 3), permuted
SQT = View(SQ, lambda x: x.T)
I2S = View(np.repeat(I2, 2), lambda x: x[::2])                    # i64[7]>=0, stride 2
A3N = A3.copy()
A3N[1, 2, 0] = np.nan
A3PN = View(A3N, lambda x: x.transpose(2, 0, 1))                  # (4, 2, 3), permuted, one NaN
AFN = AF.copy(order="K")
AFN[2, 1] = np.nan                                                # F-ordered, one NaN


CANDIDATES = [
    _c("f64[7]", A1),
    _c("f64[3,4]", A2),
    _c("f64[4,4]", SQ),
    _c("i64[7]", I1),
    _c("i64[7]>=0", I2),
    _c("bool[7]", B1),
    _c("c128[5]", C1),
    _c("f32[5]", F32),
    _c("f64[0]", E0),
    _c("f64[] 0-d", Z0),
    _c("2", 2),
    _c("0.5", 0.5),
    _c("True", True),
    _c("f64[7], f64[7]", A1, A1B),
    _c("f64[3,4], f64[3,4]", A2, A2B),
    _c("f64[4,4], f64[4,4]", SQ, SQB),
    _c("c128[5], c128[5]", C1, C1B),
    _c("i64[7], i64[7]>=0", I1, I2),
    _c("f64[7], i64[7]>=0", A1, I2),
    _c("f32[5], f64[] 0-d", F32, Z0),
    _c("f64[7], 2", A1, 2),
    _c("f64[7], 0.5", A1, 0.5),
    _c("i64[7], 2", I1, 2),
    _c("f64[3,4], 1", A2, 1),
    _c("f64[3,4], axis=0", A2, axis=0),
    _c("f64[3,4], axis=1", A2, axis=1),
    _c("f64[3,4], axis=-1", A2, axis=-1),
    _c("f64[3,4], (4, 3)", A2, (4, 3)),
    _c("(3, 4)", (3, 4)),
    _c("[f64[7], f64[7]]", [A1, A1B]),
    _c("f64[7], i64[7]>=0, 0.5", A1, I2, 0.5),
    _c("bool[7], f64[7], f64[7]", B1, A1, A1B),
    _c("f64[2,3,4]", A3),
    _c("f64[4,3] F-order", AF),
    _c("u8[7]", U8),
    _c("bool[7], bool[7]", B1, B1N),
    _c("i32[7], i64[7]", I32, I1),
    _c("f64[3,4], axis=1, keepdims=True", A2, axis=1, keepdims=True),
    _c("i64[7], dtype=float32", I1, dtype=np.float32),
    _c("f64[4,3] = f64[3,4].T", A2T),
    _c("f64[3,2] = f64[3,4][:, ::2]", A2S),
    _c("f64[3,3] = f64[3,4][::-1, 1:]", A2R),
    _c("f64[7] reversed", A1R),
    _c("f64[7] stride 2", A1S),
    _c("f64[4,2,3] = f64[2,3,4].transpose(2, 0, 1)", A3P),
    _c("f64[4,3] F-order, axis=0", AF, axis=0),
    _c("f64[4,3] = f64[3,4].T, axis=1", A2T, axis=1),
    _c("f64[4,2,3] permuted, axis=1", A3P, axis=1),
    _c("f64[4,4].T, f64[4,4]", SQT, SQB),
    _c("f64[4,3] F-order, f64[3,4].T", AF, A2T),
    _c("f64[7] reversed, i64[7]>=0 stride 2", A1R, I2S),
    _c("f64[4,3] = f64[3,4].T, (3, 4)", A2T, (3, 4)),
]

# Calls the generic pool cannot reach: (function, description, args, kwargs).
EXTRA = {
    "einsum": [_c("'ij,jk->ik', f64[3,4], f64[4,4]", "ij,jk->ik", A2, SQ),
               _c("'ii', f64[4,4]", "ii", SQ),
               _c("'i,i->', f64[7], f64[7]", "i,i->", A1, A1B),
               _c("'ij->j', f64[3,4]", "ij->j", A2)],
    "percentile": [_c("f64[3,4], 30, axis=0", A2, 30, axis=0),
                   _c("f64[4,2,3] permuted, [10, 70], axis=2", A3P, [10, 70], axis=2)],
    "quantile": [_c("f64[7], [0.25, 0.9]", A1, [0.25, 0.9]),
                 _c("f64[4,2,3] permuted, 0.3, axis=1", A3P, 0.3, axis=1),
                 _c("f64[4,3] F-order, 0.3, axis=0", AF, 0.3, axis=0),
                 _c("f64[4,3] = f64[3,4].T, 0.6, axis=1, keepdims=True", A2T, 0.6, axis=1, keepdims=True)],
    "nanpercentile": [_c("f64[3,4], 30, axis=1", A2, 30, axis=1),
                      _c("f64[4,2,3] permuted with NaN, 30, axis=1", A3PN, 30, axis=1)],
    "nanquantile": [_c("f64[7], 0.3", A1, 0.3),
                    _c("f64[4,2,3] permuted, 0.3, axis=1", A3P, 0.3, axis=1)],
    "nanmedian": [_c("f64[4,2,3] permuted with NaN, axis=1", A3PN, axis=1),
                  _c("f64[4,2,3] permuted with NaN, axis=2", A3PN, axis=2),
                  _c("f64[4,3] F-order with NaN, axis=0", AFN, axis=0),
                  _c("f64[4,3] F-order, axis=1", AF, axis=1)],
    "median": [_c("f64[4,2,3] permuted, axis=2", A3P, axis=2),
               _c("f64[4,3] = f64[3,4].T, axis=0", A2T, axis=0)],
    "histogram": [_c("f64[7], bins=3", A1, bins=3),
                  _c("f64[7], bins=3, range=(-1, 2)", A1, bins=3, range=(-1, 2))],
    "pad": [_c("f64[3,4], 1, mode='reflect'", A2, 1, mode="reflect"),
            _c("f64[7], (2, 1), mode='edge'", A1, (2, 1), mode="edge")],
    "full": [_c("(3, 4), 2.5", (3, 4), 2.5)],
    "full_like": [_c("i64[7], 0.5", I1, 0.5)],
    "clip": [_c("f64[3,4], -1, 1", A2, -1, 1)],
    "linspace": [_c("0, 1, 5", 0, 1, 5)],
    "logspace": [_c("0, 1, 5", 0, 1, 5)],
    "geomspace": [_c("1, 8, 4", 1, 8, 4)],
    "eye": [_c("3, 4, k=1", 3, 4, k=1)],
    "tri": [_c("3, 4, -1", 3, 4, -1)],
    "diff": [_c("f64[3,4], n=2, axis=0", A2, n=2, axis=0)],
    "polyfit": [_c("f64[7], f64[7], 2", A1, A1B, 2)],
    "polydiv": [_c("f64[7], [1, -2]", A1, np.array([1.0, -2.0]))],
    "unravel_index": [_c("i64[7]>=0, (3, 4)", I2, (3, 4))],
    "ravel_multi_index": [_c("(i64[3], i64[3]), (3, 4)", (np.array([0, 1, 2]), np.array([3, 0, 1])), (3, 4))],
    "histogram2d": [_c("f64[7], f64[7], bins=2", A1, A1B, bins=2)],
    "gradient": [_c("f64[3,4], 0.5, axis=1", A2, 0.5, axis=1)],
    "interp": [_c("f64[7], i64[7]>=0, f64[7]", A1, I2.astype(float), A1B)],
    "astype": [_c("f64[3,4], int32", A2, np.int32), _c("i64[7], bool", I1, np.bool_),
               _c("f32[5], float64", F32, np.float64), _c("bool[7], uint8", B1, np.uint8)],
    "broadcast_to": [_c("f64[7], (3, 7)", A1, (3, 7)), _c("f64[] 0-d, (2, 3)", Z0, (2, 3))],
    "cross": [_c("f64[3], f64[3]", A1[:3], A1B[:3]), _c("f64[3,3], f64[3,3]", A2[:, :3], A2B[:, :3]),
              _c("f64[4,3] F-order, f64[3]", AF, A1B[:3])],
    "dsplit": [_c("f64[2,3,4], 2", A3, 2), _c("f64[2,3,4], [1, 3]", A3, [1, 3])],
    "isnat": [_c("datetime64[3]", DT)],
    "busday_count": [_c("datetime64[3], datetime64[3]", DT2, DT2[::-1])],
    "busday_offset": [_c("datetime64[3], 2", DT2, 2)],
    "is_busday": [_c("datetime64[3]", DT2)],
    "datetime_data": [_c("dtype datetime64[D]", DT.dtype)],
    "kaiser": [_c("5, 2.5", 5, 2.5)],
    "moveaxis": [_c("f64[2,3,4], 0, -1", A3, 0, -1)],
    "swapaxes": [_c("f64[2,3,4], 0, 2", A3, 0, 2), _c("f64[3,4], 0, 1", A2, 0, 1)],
    "put_along_axis": [_c("f64[3,4], argsort(axis=1), 0.5, axis=1", A2, np.argsort(A2, axis=1)[:, :2], 0.5, axis=1)],
    "take_along_axis": [_c("f64[3,4], argsort(axis=1), axis=1", A2, np.argsort(A2, axis=1), axis=1)],
    "unpackbits": [_c("u8[7]", U8), _c("u8[7], count=10", U8, count=10)],
    "choose": [_c("bool[7]->i64, [f64[7], f64[7]]", B1.astype(np.int64), [A1, A1B])],
    "insert": [_c("f64[7], 2, 0.5", A1, 2, 0.5), _c("f64[3,4], 1, f64[4], axis=0", A2, 1, A2B[0], axis=0)],
    "matvec": [_c("f64[3,4], f64[4]", A2, A2B[0])],
    "vecmat": [_c("f64[3], f64[3,4]", A1[:3], A2)],
    "place": [_c("f64[7], bool[7], [9, 8]", A1, B1, [9.0, 8.0])],
    "put": [_c("f64[7], [0, 3], [9, 8]", A1, [0, 3], [9.0, 8.0])],
    "putmask": [_c("f64[7], bool[7], f64[7]", A1, B1, A1B)],
    "reshape": [_c("f64[3,4], (2, -1)", A2, (2, -1)), _c("f64[3,4], (4, 3), order='F'", A2, (4, 3), order="F")],
    "select": [_c("[bool[7], ~bool[7]], [f64[7], f64[7]], 0.5", [B1, B1N], [A1, A1B], 0.5)],
    "tensordot": [_c("f64[3,4], f64[4,4], axes=1", A2, SQ, axes=1),
                  _c("f64[3,4], f64[3,4], axes=([1], [1])", A2, A2B, axes=([1], [1]))],
    "vsplit": [_c("f64[4,4], 2", SQ, 2)],
    "gcd": [_c("i64[7], 6", I1, 6)],
    "lcm": [_c("i64[7], 6", I1, 6)],
}


# Calls whose result NumPy does not define are not made: function -> a test
# of (args, kwargs) the call must pass.

def _sorted_1d(x):
    return isinstance(x, np.ndarray) and x.ndim == 1 and bool(np.all(x[:-1] <= x[1:]))


def _integer_k(args, kwargs):
    k = args[1] if len(args) > 1 else kwargs.get("k", 0)
    return isinstance(k, (int, np.integer))


PRECONDITION = {
    # a binary search in an unsorted array: the result is unspecified
    "searchsorted": lambda args, kwargs: len(args) > 0 and _sorted_1d(args[0]),
    # NumPy's result for a fractional diagonal offset comes from arange's
    # integer truncation (np.tri's mask), not from a definition
    "tril": _integer_k,
    "triu": _integer_k,
}

PRECONDITION["ndarray.searchsorted"] = PRECONDITION["searchsorted"]
A1_SORTED = np.sort(A1)
EXTRA["searchsorted"] = [  # the generic pool's first arrays are unsorted
    _c("sorted f64[7], f64[7]", A1_SORTED, A1B),
    _c("sorted f64[7], f64[7], side='right'", A1_SORTED, A1, side="right"),
    _c("i64[7]>=0, f64[7]", I2, A1),
    _c("i64[7]>=0, i64[7]", I2, I1),
]


# --------------------------------------------------------------------------
# Copying arguments to each side.

def _to_side(x, side, memo):
    """The argument `x` for one side: each NumPy array copied (NumPy side) or
    copied into a fresh numfuse array (numfuse side), a `View` the same view
    of such a copy; the same object twice in the arguments stays the same
    object."""
    if isinstance(x, View):
        if id(x) not in memo:
            c = x.base.copy(order="K")
            memo[id(x)] = (x.make(c if side == "np" else nf.asarray(c)), x.numpy())
        return memo[id(x)][0]
    if isinstance(x, np.ndarray):
        if id(x) not in memo:
            c = x.copy(order="K")
            memo[id(x)] = (c if side == "np" else nf.asarray(c), x)
        return memo[id(x)][0]
    if isinstance(x, list):
        return [_to_side(v, side, memo) for v in x]
    if isinstance(x, tuple):
        return tuple(_to_side(v, side, memo) for v in x)
    if isinstance(x, dict):
        return {k: _to_side(v, side, memo) for k, v in x.items()}
    return x


_FP_ERRORS = ("divide by zero", "overflow", "underflow", "invalid value")


def _warning_key(w):
    """What is compared of a warning: its category, and for floating-point
    errors which error (not the operation named: a fused kernel names the
    first operation that can raise it, and NumPy says "scalar divide" where
    numfuse's loop divides arrays; README)."""
    msg = str(w.message)
    for kind in _FP_ERRORS:
        if msg.startswith(kind + " encountered"):
            return f"{w.category.__name__}: {kind}"
    return f"{w.category.__name__}: {msg}"


def _materialize(x):
    """Computes what numfuse left pending in `x` (a sync reports the
    floating-point errors of recorded operations)."""
    if isinstance(x, nf.ndarray):
        np.asarray(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _materialize(v)


def _call(fn, args, kwargs, memo=None):
    """(result, exception, warnings), the warnings as sorted keys."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", nf.FallbackWarning)
        try:
            res, exc = fn(*args, **kwargs), None
            _materialize(res)
            if memo:
                _materialize([v[0] for v in memo.values()])
        except Exception as e:  # noqa: BLE001 - every exception is compared
            res, exc = None, e
    return res, exc, sorted({_warning_key(w) for w in caught if not issubclass(w.category, nf.FallbackWarning)})


def _late_warnings():
    """Warnings numfuse reports at the next operation (any numfuse call
    reports what an earlier one left unreported): they belong to the call
    just made, not to the next candidate's."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nf.zeros(1)
    return sorted({_warning_key(w) for w in caught if not issubclass(w.category, nf.FallbackWarning)})


# --------------------------------------------------------------------------
# Comparing results.

def _rtol(dt):
    return 1e-5 if dt in (np.float32, np.complex64, np.float16) else 1e-12


def _cmp_arrays(e, g, values=True):
    if g.dtype != e.dtype:
        return f"dtype: NumPy {e.dtype}, numfuse {g.dtype}"
    if g.shape != e.shape:
        return f"shape: NumPy {e.shape}, numfuse {g.shape}"
    if not values or e.size == 0:
        return None
    if e.dtype.kind in "fc":
        rtol = _rtol(e.dtype)
        finite = np.isfinite(e)
        scale = float(np.max(np.abs(e[finite]))) if finite.any() else 0.0
        ok = np.isclose(g, e, rtol=rtol, atol=rtol * scale * 1e-3, equal_nan=True)
        # infinities must match exactly (isclose does that), NaN == NaN
        if ok.all():
            return None
    elif e.dtype.kind in "mM":  # NaT equals NaT
        if np.array_equal(g.view(np.int64), e.view(np.int64)):
            return None
    elif e.dtype.kind in "OUSV":
        if all(_same_obj(a, b) for a, b in zip(e.ravel().tolist(), g.ravel().tolist())):
            return None
    else:
        if np.array_equal(g, e):
            return None
    return f"values: NumPy {_short(e)}, numfuse {_short(g)}"


def _same_obj(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return repr(a) == repr(b)


def _short(x):
    with np.printoptions(precision=17, threshold=40, linewidth=1000):
        return repr(x).replace("\n", "")


def _kind(x):
    if isinstance(x, nf.ndarray):
        return f"numfuse.ndarray{x.shape} {x.dtype}"
    if isinstance(x, np.ndarray):
        return f"{type(x).__module__}.{type(x).__name__}{x.shape} {x.dtype}"
    return type(x).__name__


def compare(e, g, values=True):
    """None when numfuse's `g` matches NumPy's `e`, else what differs."""
    if e is None:
        return None if g is None else f"kind: NumPy None, numfuse {_kind(g)}"
    if isinstance(e, (tuple, list)):
        if type(g) is not type(e) and not (isinstance(e, tuple) and isinstance(g, tuple)
                                           and type(g).__name__ == type(e).__name__):
            return f"kind: NumPy {type(e).__name__}, numfuse {_kind(g)}"
        if len(g) != len(e):
            return f"length: NumPy {len(e)}, numfuse {len(g)}"
        for i, (ei, gi) in enumerate(zip(e, g)):
            d = compare(ei, gi, values)
            if d:
                return f"[{i}] {d}"
        return None
    if isinstance(e, np.ndarray):
        if type(e) is np.ndarray:
            # numfuse holds only the dtypes it computes in; a result in another
            # (float16, datetime64, ...) is NumPy's array (numfuse._fallback.wrap)
            if not isinstance(g, nf.ndarray) and not (type(g) is np.ndarray
                                                       and not _core.supported_dtype(e.dtype)):
                return f"kind: NumPy {_kind(e)}, numfuse {_kind(g)}"
        elif not isinstance(g, (np.ndarray, nf.ndarray)):  # a subclass (matrix)
            return f"kind: NumPy {type(e).__name__}, numfuse {_kind(g)}"
        return _cmp_arrays(e, np.asarray(g), values)
    if isinstance(e, np.generic):
        if isinstance(g, nf.ndarray):
            if g.ndim != 0:
                return f"kind: NumPy {type(e).__name__}, numfuse {_kind(g)}"
            # documented: a 0-d numfuse array stands for a NumPy scalar
            return _cmp_arrays(np.asarray(e), np.asarray(g), values)
        if type(g) is not type(e):
            return f"kind: NumPy {type(e).__name__} {e!r}, numfuse {_kind(g)} {g!r}"
        return _cmp_arrays(np.asarray(e), np.asarray(g), values)
    if isinstance(e, (bool, int, float, complex)):
        if type(g) is not type(e):
            return f"kind: NumPy Python {type(e).__name__} {e!r}, numfuse {_kind(g)} {g!r}"
        if values and not _same_obj(e, g) and not (isinstance(e, (float, complex))
                                                   and abs(e - g) <= 1e-12 * abs(e)):
            return f"values: NumPy {e!r}, numfuse {g!r}"
        return None
    if isinstance(e, (np.dtype, type, str, bytes)):
        return None if (type(g) is type(e) and g == e) else f"NumPy {e!r}, numfuse {g!r}"
    # anything else: equality, else repr
    return None if _same_obj(e, g) else f"NumPy {e!r}, numfuse {g!r}"


def _array_pairs(e, g, path=""):
    """(path, NumPy's array, numfuse's array) for every array position of a
    result the value comparison accepted (tuples and lists walked)."""
    if isinstance(e, (tuple, list)) and isinstance(g, (tuple, list)):
        for i, (ei, gi) in enumerate(zip(e, g)):
            yield from _array_pairs(ei, gi, f"{path}[{i}] ")
    elif isinstance(e, np.ndarray) and isinstance(g, (np.ndarray, nf.ndarray)):
        yield path, e, g


def _shared_with(x, args, may_share):
    return [i for i, a in enumerate(args) if may_share(x, a)]


# Documented layout differences (README, "Differences from NumPy you may
# notice"): function -> flags not compared, with the reason.
LAYOUT_DIFFERENCES = {
    # NumPy's broadcast operands are writeable with a DeprecationWarning on a
    # write ("future versions will not create a writeable array"); numfuse's
    # are read-only, as broadcast_to's are in both.
    "broadcast_arrays": {"writeable"},
}


def compare_layout(e, g, np_args, nf_args, name=None):
    """None when every array of numfuse's result is laid out as NumPy's:
    the same C/F contiguity, strides (over the axes longer than 1), writeable
    flag and the same arguments whose memory it shares (view or copy)."""
    skip = LAYOUT_DIFFERENCES.get(name, ())
    for path, ea, ga in _array_pairs(e, g):
        ef, gf = ea.flags, ga.flags
        for flag in ("c_contiguous", "f_contiguous", "writeable"):
            if flag in skip:
                continue
            if bool(getattr(ef, flag)) != bool(getattr(gf, flag)):
                return f"{path}layout: flags.{flag} NumPy {bool(getattr(ef, flag))}, numfuse {bool(getattr(gf, flag))}"
        if ea.size > 0 and any(n > 1 and se != sg for n, se, sg in zip(ea.shape, ea.strides, ga.strides)):
            return f"{path}layout: strides NumPy {ea.strides}, numfuse {ga.strides} (shape {ea.shape})"
        es = _shared_with(ea, np_args, np.may_share_memory)
        gs = _shared_with(ga, nf_args, nf.may_share_memory)
        if es != gs:
            return f"{path}layout: shares memory with arguments NumPy {es}, numfuse {gs}"
    return None


def _exc(e):
    msg = str(e).split("\n")[0]
    return f"{type(e).__name__}({msg[:100]!r})"


def _category(d):
    """The category of a difference text such as "[0] dtype: ..."."""
    head = re.sub(r"^(\[\d+\] )+", "", d).split(":")[0]
    return head if head in ("kind", "dtype", "shape", "values", "length", "layout") else "result"


def check_call(name, desc, args, kwargs, np_fn=None, nf_fn=None):
    """(the mismatch for one call, as (category, function, arguments, what),
    or None; whether NumPy returned a value). `name` is a numpy function's
    unless the two callables are given."""
    if np_fn is None:
        np_fn, nf_fn = getattr(np, name), getattr(nf, name)
    np_memo, nf_memo = {}, {}
    np_args, np_kw = _to_side(args, "np", np_memo), _to_side(kwargs, "np", np_memo)
    e, e_exc, e_warn = _call(np_fn, np_args, np_kw)
    nf_args, nf_kw = _to_side(args, "nf", nf_memo), _to_side(kwargs, "nf", nf_memo)
    g, g_exc, g_warn = _call(nf_fn, nf_args, nf_kw, nf_memo)
    late = _late_warnings()
    if e_exc is not None:
        if g_exc is None and "Cannot construct a dtype from an array" in str(e_exc):
            # NumPy refuses its own ndarray as a dtype but takes any other object's
            # `.dtype` (np.zeros(3, dtype=numfuse_array) works in NumPy itself): a
            # numfuse array in a dtype position is such an object, for both.
            return None, False
        if g_exc is None:
            return ("no-error", name, desc, f"NumPy raised {_exc(e_exc)}, numfuse returned {_kind(g)}"), False
        if isinstance(g_exc, type(e_exc)):
            return None, False
        # TypeError for ValueError or the reverse, or any exception where NumPy's
        # AttributeError is an accident of its implementation (no validation)
        soft = {type(e_exc), type(g_exc)} <= {TypeError, ValueError} or (
            type(e_exc) is AttributeError and isinstance(g_exc, (TypeError, ValueError)))
        cat = "error-type" if soft else "exception"
        return (cat, name, desc, f"NumPy raised {_exc(e_exc)}, numfuse raised {_exc(g_exc)}"), False
    if g_exc is not None:
        return ("raised", name, desc, f"NumPy returned {_kind(e)}, numfuse raised {_exc(g_exc)}"), True
    try:
        d = compare(e, g, values=name not in VALUES_UNDEFINED)
    except Exception as exc:  # noqa: BLE001 - e.g. converting the result back fails
        d = f"comparing raised {_exc(exc)}"
    if d:
        return (_category(d), name, desc, d), True
    d = compare_layout(e, g, [v[0] for v in np_memo.values()], [v[0] for v in nf_memo.values()], name)
    if d:
        return ("layout", name, desc, d), True
    # in-place modifications of the arguments
    for key, (np_c, orig) in np_memo.items():
        d = _cmp_arrays(np_c, np.asarray(nf_memo[key][0]))
        if d:
            return ("argument", name, desc, f"argument {_short(orig)} after the call: {d}"), True
    if late:
        return ("late-warning", name, desc, f"warnings: NumPy {e_warn}, numfuse {g_warn} at the call and "
                f"{late} at its next operation"), True
    if e_warn != g_warn:
        return ("warnings", name, desc, f"warnings: NumPy {e_warn}, numfuse {g_warn}"), True
    return None, True


# Mismatch categories that fail the sweep; "error-type" (NumPy and numfuse
# disagree between TypeError and ValueError for an invalid call) is reported as
# a warning instead, and fails only with NUMFUSE_SWEEP_STRICT=1.
SOFT = {"error-type"}


class SweepErrorTypeWarning(UserWarning):
    """numfuse rejects a call NumPy rejects, with TypeError for ValueError or
    the reverse."""


def sweep(name, candidates=None, np_fn=None, nf_fn=None):
    """(mismatches, calls made, calls NumPy answered with a value)."""
    found, calls, compared = [], 0, 0
    pre = PRECONDITION.get(name)
    for desc, args, kwargs in (CANDIDATES + EXTRA.get(name, []) if candidates is None else candidates):
        if pre is not None and not pre(args, kwargs):
            continue
        calls += 1
        m, numpy_returned = check_call(name, desc, args, kwargs, np_fn, nf_fn)
        compared += numpy_returned
        if m:
            found.append(m)
    return found, calls, compared


# --------------------------------------------------------------------------
# ndarray methods, numpy.linalg and numpy.fft: the same checks, the same pool.

METHOD_SKIP = {
    "dump": "I/O (files)",
    "dumps": "pickles (bytes differ by class)",
    "tofile": "I/O (files)",
    "resize": "NumPy refuses to resize an array another object refers to (the sweep's own copies)",
}


def swept_methods():
    return sorted(n for n, cat in _coverage.table()[2].items()
                  if n not in METHOD_SKIP and cat not in (_coverage.SHARED, _coverage.MISSING))


def _method(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    return call


def _is_array_arg(x):
    return isinstance(x, (np.ndarray, View))


# A method's candidates: the pool's calls whose first argument is an array
# (the array the method is called on), and these.
EXTRA_METHODS = {
    "reshape": [_c("f64[4,3] = f64[3,4].T, (2, 6)", A2T, (2, 6)), _c("f64[3,4], -1, order='F'", A2, -1, order="F"),
                _c("f64[4,3] F-order, (3, 4), order='A'", AF, (3, 4), order="A"),
                _c("f64[4,2,3] permuted, (4, 6)", A3P, (4, 6))],
    "transpose": [_c("f64[2,3,4], (1, 0, 2)", A3, (1, 0, 2)), _c("f64[4,2,3] permuted, 2, 0, 1", A3P, 2, 0, 1)],
    "swapaxes": [_c("f64[4,2,3] permuted, 0, 2", A3P, 0, 2), _c("f64[4,3] F-order, 0, 1", AF, 0, 1)],
    "ravel": [_c("f64[4,3] F-order, 'F'", AF, "F"), _c("f64[4,3] = f64[3,4].T, 'K'", A2T, "K"),
              _c("f64[3,3] = f64[3,4][::-1, 1:], 'K'", A2R, "K"), _c("f64[4,2,3] permuted, 'A'", A3P, "A")],
    "flatten": [_c("f64[4,3] F-order, 'F'", AF, "F"), _c("f64[4,2,3] permuted, 'K'", A3P, "K")],
    "copy": [_c("f64[4,3] = f64[3,4].T, 'F'", A2T, "F"), _c("f64[4,2,3] permuted, 'K'", A3P, "K"),
             _c("f64[3,2] = f64[3,4][:, ::2], 'A'", A2S, "A")],
    "astype": [_c("f64[4,3] F-order, int32", AF, np.int32), _c("f64[4,2,3] permuted, float32", A3P, np.float32),
               _c("f64[4,3] = f64[3,4].T, float32, order='C'", A2T, np.float32, order="C"),
               _c("f64[4,3] F-order, float64, copy=False", AF, np.float64, copy=False)],
    "view": [_c("f64[3,4], int64", A2, np.int64), _c("f64[4,3] F-order, int64", AF, np.int64)],
    "take": [_c("f64[4,3] F-order, [0, 2], axis=1", AF, [0, 2], axis=1),
             _c("f64[4,2,3] permuted, [1, 0], axis=1", A3P, [1, 0], axis=1)],
    "repeat": [_c("f64[4,3] F-order, 2, axis=0", AF, 2, axis=0), _c("f64[4,2,3] permuted, 2, axis=2", A3P, 2, axis=2)],
    "diagonal": [_c("f64[2,3,4], 0, 0, 2", A3, 0, 0, 2), _c("f64[4,2,3] permuted, 1, 1, 2", A3P, 1, 1, 2)],
    "sort": [_c("f64[4,3] = f64[3,4].T, axis=0", A2T, axis=0)],
    "argsort": [_c("f64[4,3] = f64[3,4].T, axis=0", A2T, axis=0), _c("f64[4,2,3] permuted, axis=1", A3P, axis=1)],
    "partition": [_c("f64[4,3] F-order, 1, axis=0", AF, 1, axis=0)],
    "argpartition": [_c("f64[4,3] F-order, 1, axis=0", AF, 1, axis=0)],
    "cumsum": [_c("f64[4,2,3] permuted, axis=1", A3P, axis=1)],
    "cumprod": [_c("f64[4,3] F-order, axis=1", AF, axis=1)],
    "clip": [_c("f64[4,3] F-order, -1, 1", AF, -1, 1), _c("f64[4,2,3] permuted, 0, None", A3P, 0, None)],
    "round": [_c("f64[4,3] = f64[3,4].T, 1", A2T, 1)],
    "compress": [_c("f64[4,3] F-order, [True, False, True], axis=1", AF, [True, False, True], axis=1)],
    "dot": [_c("f64[4,3] F-order, f64[3,4].T.T", AF, A2)],
    "searchsorted": [_c("sorted f64[7], f64[3,2] strided", A1_SORTED, A2S)],
    "choose": [_c("i64[7]>=0 % 2, [f64[7], f64[7]]", I2 % 2, [A1, A1B])],
    "getfield": [_c("f64[4,3] F-order, float64", AF, np.float64)],
    "fill": [_c("f64[4,3] = f64[3,4].T, 0.5", A2T, 0.5)],
    "put": [_c("f64[4,3] F-order, [0, 5], [9, 8]", AF, [0, 5], [9.0, 8.0])],
}

# numpy.linalg and numpy.fft: the functions numfuse defines.
LA_SQ = np.array([[4.0, 1.0, -0.5], [1.0, 3.0, 0.25], [-0.5, 0.25, 2.0]])       # symmetric positive definite
LA_SQT = View(np.round(_rng.uniform(-2, 2, (3, 3)), 3) + 3 * np.eye(3), lambda x: x.T)
LA_STACK = View(np.round(_rng.uniform(-2, 2, (3, 2, 2)), 3) + 2 * np.eye(2), lambda x: x.transpose(0, 2, 1))
LA_B = np.array([1.0, -2.0, 0.5])
LA_BF = View(np.round(_rng.uniform(-2, 2, (2, 3)), 3), lambda x: x.T)             # (3, 2), F-ordered
MODULE_CANDIDATES = [
    _c("spd f64[3,3]", LA_SQ),
    _c("f64[3,3] = f64[3,3].T", LA_SQT),
    _c("f64[3,2,2] stack, transposed", LA_STACK),
    _c("spd f64[3,3], f64[3]", LA_SQ, LA_B),
    _c("f64[3,3].T, f64[3,2] F-order", LA_SQT, LA_BF),
    _c("f64[4,3] F-order, axis=0", AF, axis=0),
    _c("f64[4,2,3] permuted, axis=1", A3P, axis=1),
    _c("f64[3,3] = f64[3,4][::-1, 1:], 2", A2R, 2),
    _c("f64[4,3] = f64[3,4].T, f64[3,4]", A2T, A2),
    _c("f64[4,3] = f64[3,4].T, (4, 4)", A2T, (4, 4)),
    _c("f64[4,3] = f64[3,4].T, s=(4, 4), axes=(0, 1)", A2T, s=(4, 4), axes=(0, 1)),
    _c("f64[4,2,3] permuted, axes=(0, 2)", A3P, axes=(0, 2)),
    _c("c128[5]", C1),
    _c("f64[7] reversed", A1R),
    _c("f64[7] stride 2, 10", A1S, 10),
    _c("f64[3,4]", A2),
    _c("f64[4,4]", SQ),
    _c("f64[4,4].T, f64[4,4]", SQT, SQB),
    _c("f64[4,4], f64[4,4]", SQ, SQB),
    _c("[f64[4,4], f64[4,4].T, f64[4,4]]", [SQ, SQT, SQB]),
    _c("f64[3,4], 'fro'", A2, "fro"),
    _c("f64[4,3] F-order, ord=1, axis=0", AF, ord=1, axis=0),
    _c("7, 0.5", 7, 0.5),
    _c("f64[2,3,4]", A3),
]
MODULES = {"linalg": (np.linalg, nf.linalg), "fft": (np.fft, nf.fft)}


def swept_module_functions():
    out = []
    for mod, (npm, nfm) in MODULES.items():
        for n in sorted(dir(npm)):
            obj = getattr(npm, n)
            if n.startswith("_") or not callable(obj) or isinstance(obj, type):
                continue
            if hasattr(nfm, n) and getattr(nfm, n) is not obj:
                out.append(f"{mod}.{n}")
    return out


# --------------------------------------------------------------------------

FUNCTIONS = swept_functions()

# Where numfuse computes: its default (small operands: tier 0 at the call) and
# everything recorded, fused and compiled (or interpreted, by the cost model).
TIERS = {"default": {}, "lazy": {"tier": "lazy"}}


METHODS = swept_methods()
MODULE_FUNCTIONS = swept_module_functions()


@pytest.mark.fallback
@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("name", METHODS)
def test_sweep_method(name, tier):
    """ndarray methods: every pool call whose first argument is an array,
    made as a method of that array."""
    cands = [c for c in CANDIDATES if c[1] and _is_array_arg(c[1][0])] + EXTRA_METHODS.get(name, [])
    call = _method(name)
    with nf.config(**TIERS[tier]):
        found, calls, _ = sweep(f"ndarray.{name}", cands, call, call)
    assert calls > 0
    _report(found, f"ndarray.{name}", tier)


@pytest.mark.fallback
@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("name", MODULE_FUNCTIONS)
def test_sweep_module(name, tier):
    """numpy.linalg and numpy.fft functions numfuse defines."""
    mod, fn = name.split(".")
    npm, nfm = MODULES[mod]
    with nf.config(**TIERS[tier]):
        found, _, _ = sweep(name, MODULE_CANDIDATES + CANDIDATES, getattr(npm, fn), getattr(nfm, fn))
    _report(found, f"numpy.{name}", tier)


def test_sweep_covers_methods_and_modules():
    assert set(EXTRA_METHODS) <= set(METHODS)
    assert set(METHOD_SKIP) <= set(_coverage.table()[2])
    assert len(MODULE_FUNCTIONS) > 20 and "linalg.solve" in MODULE_FUNCTIONS and "fft.fft" in MODULE_FUNCTIONS


def _report(found, label, tier):
    strict = os.environ.get("NUMFUSE_SWEEP_STRICT", "") not in ("", "0")
    hard = [m for m in found if strict or m[0] not in SOFT]
    soft = [m for m in found if m not in hard]
    if soft:
        warnings.warn(SweepErrorTypeWarning(f"{label} ({tier}): {len(soft)} call(s) rejected with another "
                                            "exception type than NumPy's:\n" + "\n".join(
                                                f"  {fn}({desc}): {what}" for _, fn, desc, what in soft)))
    assert not hard, f"{len(hard)} mismatch(es) for {label} ({tier} tier):\n" + "\n".join(
        f"  [{cat}] {fn}({desc}): {what}" for cat, fn, desc, what in hard)


def test_sweep_covers_numfuse():
    """The sweep reaches every function numfuse defines other than NumPy's own
    objects and the SKIP list, and SKIP and EXTRA name only real functions."""
    funcs = _coverage.table()[0]
    shared = {n for n, c in funcs.items() if c == _coverage.SHARED}
    assert set(SKIP) <= set(funcs) - shared
    assert set(FUNCTIONS) | set(SKIP) | shared == set(funcs)
    assert set(EXTRA) <= set(FUNCTIONS)


@pytest.mark.fallback
@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("name", FUNCTIONS)
def test_sweep(name, tier):
    with nf.config(**TIERS[tier]):
        found, _, _ = sweep(name)
    _report(found, f"numpy.{name}", tier)

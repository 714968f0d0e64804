"""NumPy scalars on the left of an operator with a numfuse array
(src/python/scalar_slots.cc): `s * x` with `s` a numpy.float64 (an element
read, `alpha * A[i, k]`) takes __array_ufunc__'s fast path directly, and
gives exactly what NumPy's ufunc detour gave; NumPy's own scalar arithmetic
is unchanged by the slots numfuse installs."""

import json
import operator
import subprocess
import sys
import warnings

import numpy
import pytest

import numfuse as nf
from numfuse import _core

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
    "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, ">=": operator.ge,
}
SCALARS = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "uint64", "float16", "float32",
           "float64", "complex64", "complex128"]
ARRAYS = ["bool", "int8", "int32", "int64", "uint16", "uint64", "float32", "float64", "complex128"]


def _outcome(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f()
        except Exception as e:  # noqa: BLE001 - the type is the point
            return ("raises", type(e).__name__), sorted({type(x.message).__name__ for x in w})
    # (numfuse's own notes -- "ran with NumPy" -- are not NumPy's warnings)
    return r, sorted({str(x.message) for x in w if not str(x.message).startswith("numfuse:")})


def _values(dtype):
    if dtype == "bool":
        return numpy.array([True, False, True, True])
    if dtype.startswith("uint"):
        return numpy.array([0, 1, 3, 200], dtype=dtype)
    if dtype.startswith("int"):
        return numpy.array([-3, 0, 2, 100], dtype=dtype)
    return numpy.array([-1.5, 0.0, 2.0, 7.25], dtype=dtype)


def _scalar(dtype):
    return {"bool": numpy.True_}.get(dtype) or numpy.dtype(dtype).type(3 if "int" in dtype else 2.5)


@pytest.mark.parametrize("sdtype", SCALARS)
@pytest.mark.parametrize("adtype", ARRAYS)
def test_numpy_scalar_left_matches_numpy(sdtype, adtype):
    s = _scalar(sdtype)
    x = _values(adtype)
    for name, op in BINARY.items():
        want, want_w = _outcome(lambda: op(s, x))
        got, got_w = _outcome(lambda: op(s, nf.asarray(x)))
        where = f"{sdtype} {name} {adtype} array"
        if isinstance(want, tuple):
            assert got == want, where
            continue
        assert not isinstance(got, tuple), (where, got)
        got = numpy.asarray(got)
        assert got.dtype == want.dtype, where
        numpy.testing.assert_array_equal(got, want, err_msg=where)
        assert got_w == want_w, where


def test_numpy_scalar_left_takes_the_fast_path():
    x = nf.arange(8.0)
    s = numpy.float64(2.0)
    before = _core._scalar_operator_hits()
    r = s * x
    assert _core._scalar_operator_hits() == before + 1
    assert isinstance(r, nf.ndarray)
    r2 = s < x
    assert _core._scalar_operator_hits() == before + 2
    numpy.testing.assert_array_equal(numpy.asarray(r2), 2.0 < numpy.arange(8.0))
    # The reflected form (`x op s`) is the array's own operator.
    x * s
    assert _core._scalar_operator_hits() == before + 2


def test_numpy_scalar_left_errors_and_broadcasting():
    s = numpy.float64(1.5)
    with pytest.raises(ValueError):
        numpy.float64(1.0) + nf.ones((2, 3)) + nf.ones(4)
    with pytest.raises(TypeError):
        numpy.float64(1.0) & nf.ones(3)  # NumPy: ufunc 'bitwise_and' not supported for floats
    r = s * nf.ones((2, 1)) * nf.ones(3)
    assert r.shape == (2, 3)
    with numpy.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            numpy.asarray(numpy.float64(1.0) / nf.zeros(3))
    # An earlier result survives the failed call.
    y = numpy.float64(2.0) * nf.arange(3.0)
    with pytest.raises(ValueError):
        numpy.float64(1.0) * nf.ones(2) + nf.ones(5)
    numpy.testing.assert_array_equal(numpy.asarray(y), [0.0, 2.0, 4.0])


# NumPy's scalar arithmetic among themselves and with other objects, run
# once in a process without numfuse and once here (slots installed).
_PROGRAM = r'''
import json, sys, warnings, numpy as np
if sys.argv[1] == "with": import numfuse
class Sub(np.float64):
    pass
class RSub(np.float64):
    def __rmul__(self, other): return "RSub.__rmul__"
    def __radd__(self, other): return "RSub.__radd__"
class Other:
    def __rmul__(self, other): return "Other.__rmul__"
    def __radd__(self, other): return "Other.__radd__"
    def __lt__(self, other): return "Other.__lt__"
    def __gt__(self, other): return "Other.__gt__"
exprs = [
    "np.float32(1.5) * np.float64(2)", "np.float64(2) * np.float32(1.5)", "np.int8(100) + np.int8(100)",
    "np.int8(3) + 300", "np.uint8(3) - np.int64(5)", "np.float64(1) / np.float16(3)", "np.int64(7) // np.uint64(2)",
    "np.int32(7) % np.int8(-3)", "np.True_ & np.False_", "np.int16(5) << np.uint8(2)", "np.int64(-8) >> 1",
    "np.complex64(1+2j) * np.float64(2)", "1.5 * np.float64(2)", "np.float64(2) * 1.5", "2 * np.int32(3)",
    "np.float64(2) * [1, 2]", "[1, 2] * np.int64(2)", "np.int64(2) * (1, 2)", "np.float64(3) * np.array([1, 2])",
    "np.array([1, 2]) * np.float32(3)", "np.float64(2) * Sub(3)", "Sub(3) * np.float64(2)", "np.float64(2) * RSub(3)",
    "np.float64(2) + RSub(3)", "np.float64(2) * Other()", "np.int8(1) + Other()", "np.float64(2) < Other()",
    "np.float64(2) < np.int8(3)", "np.float64(2) == 2", "np.int64(3) > 2.5", "np.uint64(2**63) + 1",
    "np.float64(2) ** 3", "np.float32(2) ** np.float64(0.5)", "divmod(np.int64(7), 2)", "np.float64(1) / np.float64(0)",
    "np.int64(1) // np.int64(0)", "np.float64('nan') < 1.0", "np.float64(2) @ np.float64(3)", "np.str_('a') * 2",
    "np.float64(1) + 'a'", "np.int64(2) * None", "np.float16(65504) * np.float16(2)", "np.bool_(True) + np.bool_(True)",
]
out = {}
for e in exprs:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = eval(e)
            out[e] = [repr(r), type(r).__name__, sorted(str(x.message) for x in w)]
        except Exception as ex:
            out[e] = ["raises", type(ex).__name__, sorted(str(x.message) for x in w)]
print(json.dumps(out))
'''


def test_numpy_scalar_arithmetic_unchanged():
    runs = [json.loads(subprocess.run([sys.executable, "-c", _PROGRAM, mode], capture_output=True, text=True,
                                      check=True).stdout) for mode in ("without", "with")]
    for e, want in runs[0].items():
        assert runs[1][e] == want, e

"""Robustness in one process: the numeric edges of the robustness campaign
(NaN signs of every math function, variance of constants, scalar operands
with dtype=, element assignment from arrays, sizes that overflow, huge work
refused at the call) and a memo bounded by bytes."""

import json
import os
import subprocess
import sys
import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same, sum_rtol

# ---------------------------------------------------------------------------
# The sign of NaN results: NumPy's loops give NaNs of definite signs (the
# libm result, the propagated operand, or the x86 default NaN, which is
# negative); signbit, copysign and .view() show them.

VALUES = [-3.0, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 3.0, onp.inf, -onp.inf, onp.nan, -onp.nan, 1e300,
          -1e300]
UNARY = ["sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
         "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "cbrt", "square", "reciprocal",
         "negative", "absolute", "floor", "ceil", "rint", "trunc", "sign", "deg2rad", "rad2deg", "positive",
         "spacing", "fabs"]
BINARY = ["power", "divide", "remainder", "fmod", "floor_divide", "arctan2", "hypot", "logaddexp", "logaddexp2",
          "maximum", "minimum", "fmax", "fmin", "add", "subtract", "multiply", "copysign", "nextafter",
          "float_power", "true_divide"]


def same_nan_signs(expected, got, unsettled=None):
    """NaN where NumPy has NaN, with NumPy's sign bit; `unsettled` masks the
    elements where NumPy's own loops disagree on the sign (those are not checked)."""
    e, g = onp.asarray(expected), onp.asarray(got)
    assert e.shape == g.shape
    assert (onp.isnan(e) == onp.isnan(g)).all()
    m = onp.isnan(e) if unsettled is None else onp.isnan(e) & ~unsettled
    assert (onp.signbit(e[m]) == onp.signbit(g[m])).all(), (e, g)


@pytest.mark.fallback
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY)
def test_nan_signs_of_unary_functions(name, dtype):
    if not hasattr(nf, name):
        pytest.fail(f"numfuse lacks {name}")
    x = onp.array(VALUES).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = getattr(onp, name)(x)
    g = getattr(nf, name)(nf.array(x))
    same_nan_signs(e, g)
    # ...also when fused into a longer expression (the sign must survive it)
    same_nan_signs(onp.copysign(1.0, e).astype(e.dtype), nf.copysign(1.0, getattr(nf, name)(nf.array(x))))


@pytest.mark.fallback
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", BINARY)
def test_nan_signs_of_binary_functions(name, dtype):
    y = onp.array([0.0, -0.0, 1.0, -1.0, onp.inf, -onp.inf, onp.nan, -onp.nan, 2.5], dtype=dtype)
    X, Y = onp.meshgrid(y, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = getattr(onp, name)(X, Y)
        # NumPy's array loop and its 0-d loop do not always agree on the sign of
        # a NaN (NumPy 2.4: power(-nan, 1.0) is +nan in the array loop, -nan on
        # 0-d operands); there neither sign is wrong.
        f = getattr(onp, name)
        e0 = onp.array([[f(X.dtype.type(a), Y.dtype.type(b)) for a, b in zip(r, s)] for r, s in zip(X, Y)], dtype=e.dtype)
    unsettled = onp.isnan(e) & (onp.signbit(e) != onp.signbit(e0))
    same_nan_signs(e, getattr(nf, name)(nf.array(X), nf.array(Y)), unsettled)


def test_signbit_of_log10_of_negative():
    assert bool(nf.signbit(nf.log10(nf.array([-1.0])))[0]) == bool(onp.signbit(onp.log10(onp.array([-1.0])))[0])


# ---------------------------------------------------------------------------
# Other edges.

@pytest.mark.parametrize("n", [3, 32, 1000, 4097])
@pytest.mark.parametrize("v", [0.1, 1 / 3, 1e10 + 0.7])
def test_variance_of_a_constant_array_is_zero(n, v):
    # Exactly NumPy's on the CPU (its pairwise sums); a GPU's blocks
    # reassociate the mean's sum, which may then miss v by an ulp or so:
    # the variance is at most that squared.
    tol = 0.0 if sum_rtol() == 0 else (64 * onp.finfo(onp.float64).eps * abs(v))
    assert_same(nf.var(nf.full(n, v)), onp.var(onp.full(n, v)), rtol=0, atol=tol * tol)
    assert_same(nf.std(nf.full((n, 3), v), axis=0), onp.std(onp.full((n, 3), v), axis=0), rtol=0, atol=tol)


def test_numpy_scalar_operand_with_dtype():
    arr = onp.arange(3.0)
    assert_same(nf.add(nf.array(arr), onp.float64(0.25), dtype="float64"),
                onp.add(arr, onp.float64(0.25), dtype="float64"))
    assert_same(nf.multiply(onp.float32(2), nf.array(arr), dtype=onp.float32),
                onp.multiply(onp.float32(2), arr, dtype=onp.float32))


def raises_like(np_call, nf_call):
    with pytest.raises(Exception) as e:
        np_call()
    with pytest.raises(type(e.value)) as g:
        nf_call()
    assert str(g.value) == str(e.value)


def test_element_assignment_from_a_one_element_array():
    def assign(m):
        a = m.ones(5)
        a[3] = m.ones(1)
    raises_like(lambda: assign(onp), lambda: assign(nf))
    a = nf.ones(5)
    a[3] = nf.ones(())  # a 0-d array is an element
    a[3:4] = nf.full(1, 7.0)
    assert_same(a, onp.array([1, 1, 1, 7, 1.0]))


def test_shapes_that_overflow():
    raises_like(lambda: onp.zeros((3, 2 ** 62)), lambda: nf.zeros((3, 2 ** 62)))
    raises_like(lambda: onp.zeros_like(onp.ones(3), shape=(-1,)), lambda: nf.zeros_like(nf.ones(3), shape=(-1,)))
    raises_like(lambda: onp.empty_like(onp.ones(3), shape=(2 ** 62, 4)),
                lambda: nf.empty_like(nf.ones(3), shape=(2 ** 62, 4)))


@pytest.mark.parametrize("work", [
    lambda m: m.outer(m.ones(10 ** 6), m.ones(10 ** 6)).sum(),
    lambda m: m.zeros((10 ** 8, 10 ** 8)).sum(axis=0),
    lambda m: (m.ones((10 ** 5, 1)) * m.ones(10 ** 7)).max(),
])
def test_huge_work_is_refused_at_the_call(work):
    """Temporaries that fusion would eliminate are still allocated-or-refused
    with NumPy's rules: MemoryError at once, not minutes of work."""
    raises_like(lambda: work(onp), lambda: work(nf))
    x = nf.arange(4.0)  # ...and numfuse goes on working
    assert_same(x * 2, onp.arange(4.0) * 2)


# ---------------------------------------------------------------------------
# The memo is bounded by bytes: a loop whose windows never repeat (slice
# extents change every iteration) must not grow memory without bound.

MEMO_LOOP = r"""
import json, resource, numpy as onp, numfuse as np
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
a = np.zeros(5000); b = np.ones(5000)
ra = onp.zeros(5000); rb = onp.ones(5000)
np.flush()
r0 = rss()
for i in range(1, 24000):
    k = 1 + (i * 7919) % 4999
    a[:k] += b[-k:] * 0.5
    ra[:k] += rb[-k:] * 0.5
np.flush()
print(json.dumps({"growth_mb": rss() - r0, "memo_bytes": np._core.memo_bytes(), "memo": np._core.memo_size(),
                  "ok": bool(onp.array_equal(onp.asarray(a), ra))}))
"""


def test_memo_is_bounded_by_bytes(tmp_path):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", MEMO_LOOP], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["ok"]
    assert 24 << 20 < r["memo_bytes"] <= 32 << 20, r  # filled, and evicted from
    assert r["growth_mb"] < 150, r

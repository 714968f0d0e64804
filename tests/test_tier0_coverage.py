"""Tier 0 covers what numfuse compiles (issue 52): every ufunc on every
dtype NumPy defines it for, reductions with `ddof`/`keepdims`/`where=`,
`var`/`std`, arg-reductions, scans, `where`, concatenation, stencil slices,
broadcasting with `[:, None, :]`, casts and matmul (BLAS, as the compiled
tier hands it too) -- so no group is forced to compile on a first call
because the interpreter has no loop for it. Each program runs as a recorded
group with tier 0 forced wherever it can run (a test hook of the flush); a
group that would have to compile fails the test, and the values are
NumPy's."""

import warnings

import numpy as onp
import pytest

import numfuse as nf
from numfuse import _core

from conftest import to_np

DTYPES = ["float64", "float32", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool",
          "complex128", "complex64"]
UNARY = ["negative", "positive", "absolute", "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
         "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
         "floor", "ceil", "trunc", "rint", "sign", "square", "reciprocal", "isnan", "isinf", "isfinite", "signbit",
         "logical_not", "invert", "deg2rad", "rad2deg", "conjugate", "fabs", "spacing"]
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power", "maximum",
          "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2", "nextafter",
          "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
          "logical_xor", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "heaviside", "gcd",
          "lcm", "float_power", "ldexp"]
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "any", "all", "cumsum", "cumprod"]


def programs():
    for u in UNARY:
        yield u, (lambda xp, x, y, u=u: getattr(xp, u)(x))
    for u in BINARY:
        yield u, (lambda xp, x, y, u=u: getattr(xp, u)(x, y))
    for r in REDUCTIONS:
        for axis in (0, 1):
            yield f"{r}(axis={axis})", (lambda xp, x, y, r=r, axis=axis: getattr(xp, r)(x, axis=axis))
    yield "var(ddof=1, keepdims)", lambda xp, x, y: xp.var(x, axis=1, ddof=1, keepdims=True)
    yield "std(ddof=1)", lambda xp, x, y: xp.std(x, axis=0, ddof=1)
    yield "sum(where=)", lambda xp, x, y: xp.sum(x, axis=1, where=y > 0)
    yield "where", lambda xp, x, y: xp.where(x > y, x, y)
    yield "concatenate", lambda xp, x, y: xp.concatenate([x, y])
    yield "stencil", lambda xp, x, y: x[1:-1, 1:-1] + x[:-2, 1:-1] - x[2:, 1:-1]
    yield "broadcast [:, None, :]", lambda xp, x, y: (x[:, None, :] - x[None, :, :]).sum(-1)
    yield "matmul", lambda xp, x, y: x @ y.T
    yield "astype", lambda xp, x, y: x.astype(xp.float32) * 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_operation_runs_on_tier0(dtype):
    rng = onp.random.default_rng(len(dtype))
    if dtype == "bool":
        x, y = rng.random((50, 40)) > 0.5, rng.random((50, 40)) > 0.5
    else:
        x = (rng.standard_normal((50, 40)) * 3).astype(dtype)
        y = (rng.standard_normal((50, 40)) * 3 + 1).astype(dtype)
    ran, compiled = 0, []
    _core._interpret_groups(True)
    try:
        for name, f in programs():
            with warnings.catch_warnings(), onp.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    want = onp.asarray(f(onp, x, y))
                except (TypeError, ValueError, AttributeError):
                    continue  # (NumPy does not define it for this dtype)
                with nf.config(tier="auto", eager_max_elements=0), nf.errstate(all="ignore"):
                    got = to_np(f(nf, nf.asarray(x), nf.asarray(y)))
                    nf.flush()
                    groups = nf.explain().groups
            ran += 1
            if any(not (g["tier0"] or g["routine"] or g["dead"] == len(g["ops"])) for g in groups):
                compiled.append(name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            if got.dtype.kind in "fc":
                tol = 1e-5 if got.dtype in (onp.float32, onp.complex64) else 1e-12
                onp.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=name)
            else:
                onp.testing.assert_array_equal(got, want, err_msg=name)
    finally:
        _core._interpret_groups(False)
    assert ran > 40
    assert not compiled, f"groups tier 0 cannot run ({dtype}): {compiled}"

"""Callbacks the C++ core makes into Python.

- ``resolve``: NumPy's ufunc type resolution (``ufunc.resolve_dtypes``), so
  numfuse picks exactly the loop NumPy would. The core caches the answers.
- ``sync_site``: the user's source line that forced a flush (for explain()).
- ``warn`` / ``dump``: warnings and kernel dumps raised during a flush.
"""

import sys
import warnings

import numpy as np

from . import _core

DTYPES = [np.dtype(name) for name in _core.DTYPES]
_INDEX = {dt: i for i, dt in enumerate(DTYPES)}
# Python bool is the weakest kind: promoting with it is promoting with the bool
# dtype (resolve_dtypes accepts only int/float/complex as abstract scalars).
_WEAK = {16: np.dtype(bool), 17: int, 18: float, 19: complex}
UNSUPPORTED = 255  # the loop needs a dtype numfuse does not compute in


class NumfuseWarning(UserWarning):
    """A warning about numfuse itself (e.g. a kernel that fell back to unfused)."""


def _erf_loop(descs):
    d = descs[0]
    if d >= 16:
        t = np.dtype(np.float64)
    else:
        t = DTYPES[d]
        if t.kind != "f":
            t = np.dtype(np.float64)
    i = _INDEX[t]
    return (i, i, i)


def resolve(name, descs):
    if name == "erf":
        return _erf_loop(descs)
    uf = getattr(np, name)
    args = tuple(DTYPES[d] if d < 16 else _WEAK[d] for d in descs) + (None,)
    res = uf.resolve_dtypes(args)
    ins = [_INDEX.get(t, UNSUPPORTED) for t in res[: len(descs)]]
    out = _INDEX.get(res[-1], UNSUPPORTED)
    if len(ins) == 1:
        ins.append(ins[0])
    return (ins[0], ins[1], out)


def sync_site():
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "numfuse" or mod.startswith("numfuse.")):
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return "?"


def warn(message):
    warnings.warn(message, NumfuseWarning, stacklevel=3)


def dump(text):
    print(text, file=sys.stderr)


def share_numpy_blas():
    """Route numfuse's BLAS calls to the OpenBLAS NumPy bundles (ILP64,
    'scipy_' prefix), so one BLAS and one thread pool serve both."""
    import glob
    import os

    root = os.path.dirname(os.path.dirname(np.__file__))
    for path in sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so*"))):
        if _core._use_blas(path, "scipy_", "64_"):
            return path
    # The linked OpenBLAS serves: with the threads it would have had (it was
    # loaded with one, numfuse/__init__.py).
    _core._linked_blas_threads(int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count() or 1))
    return None


_NAN_UNARY = ["sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
              "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh"]
_NAN_BINARY = ["power", "remainder", "fmod", "arctan2", "hypot", "logaddexp", "logaddexp2"]


def nan_rules():
    """How NumPy signs the NaNs its math functions return, on this machine
    and NumPy build (its SIMD code, libm): for each operation and float type,
    the sign for NaN arguments and for invalid ones. See
    codegen::set_nan_rules for the encoding."""
    rules = []
    n = 32  # long enough for NumPy's SIMD loops
    for dt in (np.float32, np.float64):
        pos, neg = dt(np.nan), -dt(np.nan)
        invalid = np.array([-3.0, -1.5, -0.5, 1.5, 3.0, np.inf, -np.inf, 1e30, -1e30], dtype=dt)
        with np.errstate(all="ignore"):
            for name in _NAN_UNARY:
                f = getattr(np, name)
                r = f(np.array([pos, neg] * (n // 2), dtype=dt))[:2]
                if not np.isnan(r).all():
                    continue
                sp, sn = bool(np.signbit(r[0])), bool(np.signbit(r[1]))
                a = "x" if (sp, sn) == (False, True) else "X" if (sp, sn) == (True, False) else "-" if sp else "+"
                rv = f(np.tile(invalid, 4))[: len(invalid)]
                bad = rv[np.isnan(rv)]
                b = "-" if bad.size == 0 or bool(np.signbit(bad).sum() * 2 >= bad.size) else "+"
                rules.append((False, name, np.dtype(dt).name, a + b))
            for name in _NAN_BINARY:
                f = getattr(np, name)

                def sign_rule(xs, ys, xv, yv):
                    r = f(np.array(xs * (n // len(xs)), dtype=dt), np.array(ys * (n // len(ys)), dtype=dt))[: len(xs)]
                    if not np.isnan(r).all():
                        return "+"
                    got = [bool(s) for s in np.signbit(r)]
                    sx, sy = [bool(np.signbit(v)) for v in xv], [bool(np.signbit(v)) for v in yv]
                    for c, want in (("x", sx), ("y", sy), ("X", [not v for v in sx]), ("Y", [not v for v in sy]),
                                    ("a", [p and q for p, q in zip(sx, sy)]), ("o", [p or q for p, q in zip(sx, sy)])):
                        if got == want:
                            return c
                    return "-" if all(got) else "+"

                both = sign_rule([pos, neg, pos, neg], [pos, pos, neg, neg], [pos, neg, pos, neg], [pos, pos, neg, neg])
                xn = sign_rule([pos, neg], [dt(1.5), dt(1.5)], [pos, neg], [dt(1.5), dt(1.5)])
                yn = sign_rule([dt(1.5), dt(1.5)], [pos, neg], [dt(1.5), dt(1.5)], [pos, neg])
                xs, ys = np.meshgrid(invalid, invalid)
                rv = f(xs.ravel(), ys.ravel())
                bad = rv[np.isnan(rv)]
                inv = "-" if bad.size == 0 or bool(np.signbit(bad).sum() * 2 >= bad.size) else "+"
                rules.append((True, name, np.dtype(dt).name, both + xn + yn + inv))
    return rules


def install():
    _core._set_hooks(resolve, sync_site, warn, dump)
    _core._set_nan_rules(nan_rules())
    share_numpy_blas()

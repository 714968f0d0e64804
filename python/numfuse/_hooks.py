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
_WEAK = {16: np.dtype(bool), 17: int, 18: float}
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
    return None


def install():
    _core._set_hooks(resolve, sync_site, warn, dump)
    share_numpy_blas()

"""The array API standard's namespace entry points (spec 2024.12, as NumPy
2.4 has them): the version, ``ndarray.__array_namespace__``, the
inspection namespace ``__array_namespace_info__`` and ``ndarray.to_device``.

An array's device is "cpu", NumPy's one device: numfuse moves memory
between the host and a GPU itself (the CUDA target keeps results on the
device until the host reads them), so every array is usable where a NumPy
array is. The `device=` of every creation function is checked here
(check_device)."""

import sys

import numpy as _np


__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def check_device(device):
    """The `device=` of a creation function (the array API's keyword): numfuse's
    arrays live in host memory, so "cpu" or None; anything else raises NumPy's
    ValueError."""
    if device is not None and not (type(device) is str and device == "cpu"):
        raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: {device}')


def namespace(api_version=None):
    """``ndarray.__array_namespace__(api_version=...)``: the numfuse module for
    any version of the standard NumPy 2.4 supports, NumPy's ValueError else."""
    if api_version is not None:
        if not isinstance(api_version, str):
            raise ValueError(f"Only None and strings are allowed as the Array API version, but received: "
                             f"{api_version}.")
        if api_version not in _VERSIONS:
            raise ValueError(f'Version "{api_version}" of the Array API Standard is not supported.')
    return sys.modules["numfuse"]


def to_device(x, device, stream):
    """``ndarray.to_device(device, /, *, stream=None)``: the array itself on
    "cpu" (NumPy's errors for anything else)."""
    if stream is not None:
        raise ValueError("The stream argument in to_device() is not supported")
    if not isinstance(device, str):
        raise TypeError(f"to_device() argument 1 must be str, not "
                        f"{'None' if device is None else type(device).__name__}")
    if device != "cpu":
        raise ValueError(f"Unsupported device: {device}. Only 'cpu' is accepted.")
    return x


class __array_namespace_info__:
    """The array API's inspection namespace (``numfuse.__array_namespace_info__()``):
    what numfuse supports -- its capabilities, devices and data types, which
    are NumPy's (numfuse arrays hold NumPy dtypes, on the host)."""

    __module__ = "numfuse"

    def capabilities(self):
        """Boolean indexing and data-dependent output shapes (``unique_*``,
        ``nonzero``) are supported; arrays have at most 64 dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        check_device(device)
        return {"real floating": _np.dtype(_np.float64), "complex floating": _np.dtype(_np.complex128),
                "integral": _np.dtype(_np.intp), "indexing": _np.dtype(_np.intp)}

    def dtypes(self, *, device=None, kind=None):
        """The data types of `kind` (None: all; a kind name of the standard:
        "bool", "signed integer", "unsigned integer", "integral",
        "real floating", "complex floating", "numeric"; or a tuple of them)."""
        check_device(device)
        if kind is None:
            kind = ("bool", "numeric")
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out = {}
        for k in kinds:
            names = _KINDS.get(k) if isinstance(k, str) else None
            if names is None:
                raise ValueError(f"unsupported kind: {k!r}")
            for n in names:
                out[n] = _np.dtype(n)
        return out


_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_REAL = ("float32", "float64")
_COMPLEX = ("complex64", "complex128")
_KINDS = {"bool": ("bool",), "signed integer": _SIGNED, "unsigned integer": _UNSIGNED,
          "integral": _SIGNED + _UNSIGNED, "real floating": _REAL, "complex floating": _COMPLEX,
          "numeric": _SIGNED + _UNSIGNED + _REAL + _COMPLEX}

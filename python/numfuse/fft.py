"""numfuse.fft: the discrete Fourier transforms.

The transforms are NumPy's pocketfft run as a library routine on numfuse's
memory (as matmul runs BLAS): pending inputs are computed and passed as
zero-copy views, and the results are numfuse arrays (complex64/complex128
are native types), so the rest of a program stays in numfuse. The helper
functions (fftfreq, rfftfreq, fftshift, ifftshift) are composed of native
operations."""

import operator

import numpy as np

from . import _array_api, _fallback
from ._creation import arange, asarray
from ._lib_shape import roll

_TRANSFORMS = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
               "irfftn", "hfft", "ihfft")
for _name in _TRANSFORMS:
    globals()[_name] = _fallback.numpy_kernel(getattr(np.fft, _name), f"numpy.fft.{_name}")
del _name


def _length(n, d, device, bool_ok):
    """NumPy's checks of fftfreq's n (in its order), and 1 / (n * d)."""
    if not isinstance(n, (int, np.integer)):
        raise ValueError("n should be an integer")
    val = 1.0 / (n * d)
    if isinstance(n, bool) and not bool_ok:  # (fftfreq's empty(n) refuses a bool length)
        raise TypeError(f"expected a sequence of integers or a single integer, got '{n!r}'")
    if n < 0:
        raise ValueError("negative dimensions are not allowed")
    _array_api.check_device(device)
    return operator.index(n), val


def fftfreq(n, d=1.0, device=None):
    """numpy.fft.fftfreq: the sample frequencies of a length-n transform."""
    n, val = _length(n, d, device, False)
    N = (n - 1) // 2 + 1
    k = arange(n)
    k = k - n * (k >= N)  # 0, 1, ..., N-1, -(n//2), ..., -1
    return k * val


def rfftfreq(n, d=1.0, device=None):
    """numpy.fft.rfftfreq: the sample frequencies of rfft's output."""
    n, val = _length(n, d, device, True)
    return arange(n // 2 + 1) * val


def _shift(x, axes, sign):
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [sign * (dim // 2) for dim in x.shape]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    return roll(x, shift, axes)


def fftshift(x, axes=None):
    """numpy.fft.fftshift: the zero-frequency term moved to the center."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    """numpy.fft.ifftshift: fftshift's inverse."""
    return _shift(x, axes, -1)


__getattr__ = _fallback.module_getattr(np.fft, "numfuse.fft", globals())

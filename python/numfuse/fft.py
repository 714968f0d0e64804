"""numfuse.fft: NumPy's FFTs through the fallback (inputs are flushed)."""

import numpy as np

from . import _fallback

__getattr__ = _fallback.module_getattr(np.fft, "numfuse.fft", globals())

"""numfuse.lib: ``numfuse.lib.stride_tricks`` is numfuse's own (views of
numfuse arrays); every other attribute is numpy.lib's (functions run with
NumPy through the fallback)."""

import numpy as _np

from .. import _fallback
from . import stride_tricks  # noqa: F401

__getattr__ = _fallback.module_getattr(_np.lib, "numfuse.lib", globals())

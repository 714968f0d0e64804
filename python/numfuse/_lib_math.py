"""NumPy functions numfuse implements by composing its native operations
(recorded, fused and compiled like any other): see docs/coverage.md."""

import numpy as np

from . import _core, _fallback  # noqa: F401

__all__ = []

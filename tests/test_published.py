"""Published NumPy kernels (benchmarks/published/kernels.py: NPBench's NumPy
implementations, run unchanged with numfuse bound to `np`) give NumPy's
results: what they return and what they leave in the arrays they write, on
every tier, at small sizes."""

import importlib.util
import os

import numpy as onp
import pytest

import numfuse as nf

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "published",
                     "kernels.py")
_spec = importlib.util.spec_from_file_location("published_kernels", _PATH)
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)


def _check(expected, got, rtol):
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        e = onp.asarray(e)
        g = onp.asarray(g)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        scale = max(1.0, float(onp.abs(e).max(initial=0)))
        onp.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("tier", ["auto", "lazy", "eager"])
@pytest.mark.parametrize("name", K.NAMES)
def test_a_published_kernel_gives_numpys_results(name, tier):
    args = K.inputs(name, quick=True)
    _, _, rtol = K.SPECS[name]
    np_args = [a.copy() if isinstance(a, onp.ndarray) else a for a in args]
    f = getattr(K, name)
    expected = f(onp, *np_args)
    with nf.config(tier=tier):
        for _ in range(2):  # the second call: memoized windows, compiled kernels
            call_args = [nf.array(a) if isinstance(a, onp.ndarray) else a for a in args]
            got = f(nf, *call_args)
            _check(expected, got, rtol)
            for a, b in zip(np_args, call_args):  # what the kernel wrote into its arguments
                if isinstance(a, onp.ndarray):
                    _check(a, b, rtol)

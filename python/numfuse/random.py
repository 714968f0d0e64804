"""numfuse.random: NumPy's generators (identical values for the same seed);
results become numfuse arrays without a copy."""

import functools

import numpy as np

from . import _core, _fallback

ndarray = _core.ndarray
_np_random = np.random


def _wrapped(fn):
    @functools.wraps(fn)  # (NumPy's name, documentation and signature: inspect follows __wrapped__)
    def f(*args, **kwargs):
        return _fallback.wrap(fn(*_fallback.to_numpy(args, []), **_fallback.to_numpy(kwargs, [])))

    f.__module__ = __name__
    return f


# The legacy global-state API (np.random.seed / rand / randn / ...).
seed = np.random.seed
get_state = np.random.get_state
set_state = np.random.set_state
rand = _wrapped(np.random.rand)
randn = _wrapped(np.random.randn)
random = _wrapped(np.random.random)
random_sample = _wrapped(np.random.random_sample)
ranf = sample = random_sample
uniform = _wrapped(np.random.uniform)
normal = _wrapped(np.random.normal)
standard_normal = _wrapped(np.random.standard_normal)
randint = _wrapped(np.random.randint)
integers = randint
choice = _wrapped(np.random.choice)
permutation = _wrapped(np.random.permutation)
exponential = _wrapped(np.random.exponential)
poisson = _wrapped(np.random.poisson)
binomial = _wrapped(np.random.binomial)
beta = _wrapped(np.random.beta)
gamma = _wrapped(np.random.gamma)
lognormal = _wrapped(np.random.lognormal)
multivariate_normal = _wrapped(np.random.multivariate_normal)


def shuffle(x):
    """Shuffle a numfuse (or NumPy) array in place along its first axis."""
    if type(x) is ndarray:
        np.random.shuffle(x._to_numpy(True))
    else:
        np.random.shuffle(x)


class Generator:
    """numpy.random.Generator producing numfuse arrays: Generator(bit_generator)
    as NumPy's (e.g. Generator(PCG64(seed)): the same values as NumPy's for the
    same bit generator)."""

    def __init__(self, bit_generator):
        if isinstance(bit_generator, np.random.Generator):
            self._gen = bit_generator  # (default_rng's: already a NumPy Generator)
        else:
            self._gen = np.random.Generator(bit_generator)  # NumPy's TypeError for anything else

    @property
    def bit_generator(self):
        return self._gen.bit_generator

    def shuffle(self, x, axis=0):
        if type(x) is ndarray:
            self._gen.shuffle(x._to_numpy(True), axis=axis)
        else:
            self._gen.shuffle(x, axis=axis)

    def __getattr__(self, name):
        attr = getattr(self._gen, name)
        return _wrapped(attr) if callable(attr) else attr

    def __repr__(self):
        return "numfuse " + repr(self._gen)


def default_rng(seed=None):
    """numpy.random.default_rng producing numfuse arrays (a Generator passed in
    is returned unaltered, as NumPy's)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(np.random.default_rng(seed))


class RandomState:
    """numpy.random.RandomState producing numfuse arrays."""

    def __init__(self, seed=None):
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        attr = getattr(self._rs, name)
        return _wrapped(attr) if callable(attr) else attr


def __getattr__(name):
    attr = getattr(_np_random, name)
    return _wrapped(attr) if callable(attr) and not isinstance(attr, type) else attr

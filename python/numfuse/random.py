"""numfuse.random: NumPy's generators (identical values for the same seed);
results become numfuse arrays without a copy."""

import functools

import numpy as np

from . import _core, _fallback

ndarray = _core.ndarray
_np_random = np.random


_PLAIN = frozenset([int, float, bool, type(None)])


def _result(res):
    """NumPy's result as numfuse's: a fresh array adopted without a copy, a
    Python or NumPy scalar as it is."""
    t = type(res)
    if t is np.ndarray:
        if res.base is None and _core.supported_dtype(res.dtype):
            return _core.from_numpy(res, True)
    elif t is float or t is int:
        return res
    return _fallback.wrap(res)


def _wrapped(fn):
    @functools.wraps(fn)  # (NumPy's name, documentation and signature: inspect follows __wrapped__)
    def f(*args, **kwargs):
        # Python numbers only (`rng.random()`, `np.random.normal(0, 1, 8)`,
        # the calls of a Monte Carlo loop): straight to NumPy.
        if (not args or all(type(a) in _PLAIN for a in args)) and (not kwargs or all(
                type(v) in _PLAIN for v in kwargs.values())):
            return _result(fn(*args, **kwargs))
        return _fallback.wrap(fn(*_fallback.to_numpy(args, []), **_fallback.to_numpy(kwargs, [])))

    f.__module__ = __name__
    # The call as a C object: Python-number arguments go to NumPy without a
    # Python frame of numfuse's (the loops' `rng.random()`); `f` takes the rest.
    attrs = {k: getattr(f, k) for k in ("__name__", "__qualname__", "__module__", "__doc__", "__wrapped__")}
    return _core.numpy_call(fn, f, _result, attrs)


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
        if name == "_gen" or name.startswith("__"):  # (unpickling: before __dict__ is set)
            raise AttributeError(name)
        attr = getattr(self._gen, name)
        if not callable(attr):
            return attr
        f = self.__dict__[name] = _wrapped(attr)  # (made once per generator and method)
        return f

    def __getstate__(self):
        return {"_gen": self._gen}  # (not the methods made for it)

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
        if name == "_rs" or name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._rs, name)
        if not callable(attr):
            return attr
        f = self.__dict__[name] = _wrapped(attr)
        return f

    def __getstate__(self):
        return {"_rs": self._rs}


def __getattr__(name):
    attr = getattr(_np_random, name)
    if not callable(attr) or isinstance(attr, type):
        return attr
    f = globals()[name] = _wrapped(attr)  # (made once: the module's attribute from now on)
    return f

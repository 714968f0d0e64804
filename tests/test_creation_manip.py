"""Differential tests: array creation, shape manipulation, linear algebra
products, conversions and the NumPy protocols, against NumPy."""

import subprocess
import sys
import textwrap
import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_result_kind, ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_same, to_np


def pair(shape=(3, 4), dtype="float64", start=0):
    n = int(onp.prod(shape))
    e = (onp.arange(n, dtype="int64") + start).astype(dtype).reshape(shape)
    return nf.array(e), e


def rnd(shape, dtype="float64", seed=0):
    rng = onp.random.default_rng(seed)
    dt = onp.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -5, 6, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def check(got, exp, **kw):
    assert_result_kind(got, exp)
    assert_same(got, exp, **kw)


def check_view(got, exp):
    check(got, exp)
    assert tuple(got.strides) == exp.strides, f"strides {got.strides} != {exp.strides}"


# ---------------------------------------------------------------------------
# array / asarray

@pytest.mark.parametrize("obj", [
    [1, 2, 3],
    [1, 2.5],
    [[1, 2], [3, 4]],
    [[True, False], [False, True]],
    [[[1.0], [2.0]], [[3.0], [4.0]]],
    [],
    [[], []],
    3,
    2.5,
    True,
    [1, -2**40],
    [0, 2**63],
    (1, 2, 3),
    [(1, 2), (3, 4)],
    [onp.int8(3), onp.int8(4)],
    [onp.float32(1.5), 2],
], ids=repr)
def test_array_from_python(obj):
    check(nf.array(obj), onp.array(obj))
    check(nf.asarray(obj), onp.asarray(obj))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_array_dtype_argument(dtype):
    obj = [[0, 1, 2], [3, 4, 5]]
    check(nf.array(obj, dtype=dtype), onp.array(obj, dtype=dtype))
    check(nf.asarray([0.0, 1.5, 2.9], dtype=dtype), onp.asarray([0.0, 1.5, 2.9], dtype=dtype))
    check(nf.array(onp.arange(4), dtype=dtype), onp.array(onp.arange(4), dtype=dtype))


def test_array_from_numpy_and_numfuse():
    for e in [onp.arange(6).reshape(2, 3), onp.arange(12.0).reshape(3, 4).T, onp.arange(10, dtype="int8")[::-2],
              onp.array(5.0), onp.zeros((0, 3))]:
        check(nf.array(e), e)
        check(nf.asarray(e), e)
        a = nf.array(e)
        check(nf.array(a), e)
        check(nf.asarray(a), e)
        check(nf.array(a, dtype="float32"), onp.array(e, dtype="float32"))


def test_array_ndmin_and_nested_numfuse():
    e = onp.array([[1, 2], [3, 4]])
    check(nf.array(e, ndmin=4), onp.array(e, ndmin=4))
    check(nf.array([nf.array([1, 2]), nf.array([3, 4])]), onp.array([[1, 2], [3, 4]]))
    check(nf.array([nf.array(1.5), 2]), onp.array([1.5, 2]))


def test_array_copies_numpy_source():
    src = onp.arange(5.0)
    a = nf.array(src)
    src[0] = 100.0
    src[1:] *= -1
    check(a, onp.arange(5.0))


def test_array_copies_strided_numpy_source():
    base = onp.arange(20.0).reshape(4, 5)
    src = base[::2, ::-1]
    a = nf.array(src)
    base[...] = 0
    check(a, onp.arange(20.0).reshape(4, 5)[::2, ::-1])


def test_array_copies_numfuse_source():
    b = nf.arange(4)
    c = nf.array(b)
    b[0] = 99
    check(c, onp.arange(4))
    check(b, onp.array([99, 1, 2, 3]))
    d = b.copy()
    b[...] = 0
    check(d, onp.array([99, 1, 2, 3]))


def test_array_from_numpy_then_lazy_ops_then_source_modified():
    src = onp.arange(6.0)
    a = nf.array(src)
    b = a * 2  # lazy: must use the values at array() time
    src[:] = -1
    check(b, onp.arange(6.0) * 2)


def test_asarray_of_numfuse_is_identity():
    a = nf.arange(3)
    assert nf.asarray(a) is a
    assert nf.asarray(a, dtype="int64") is a
    check(nf.array(a, dtype="float64"), onp.array(onp.arange(3), dtype="float64"))


def test_asarray_numfuse_with_other_dtype():
    a = nf.arange(3)
    check(nf.asarray(a, dtype="float64"), onp.asarray(onp.arange(3), dtype="float64"))


def test_asarray_copies_numpy_source():
    # Documented difference (README): numfuse computes lazily, so it never
    # aliases memory that NumPy code may still modify; asarray copies.
    src = onp.arange(5.0)
    a = nf.asarray(src)
    b = a * 2  # pending
    src[0] = 100.0
    check(a, onp.arange(5.0))
    check(b, onp.arange(5.0) * 2)


# ---------------------------------------------------------------------------
# zeros / ones / full / empty / *_like

@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
def test_zeros_ones_full(dtype):
    for shape in [3, (2, 3), (0,), (), (2, 0, 4)]:
        check(nf.zeros(shape, dtype=dtype) if dtype else nf.zeros(shape),
              onp.zeros(shape, dtype=dtype) if dtype else onp.zeros(shape))
        check(nf.ones(shape, dtype=dtype), onp.ones(shape, dtype=dtype))
        check(nf.full(shape, 7, dtype=dtype), onp.full(shape, 7, dtype=dtype))


def test_full_inferred_dtype_and_casting():
    for fill in [5, 2.5, True, onp.float32(1.5), onp.int8(-3), onp.uint16(9)]:
        check(nf.full((2, 3), fill), onp.full((2, 3), fill))
    check(nf.full(3, 2.7, dtype=int), onp.full(3, 2.7, dtype=int))
    check(nf.full(3, -2.7, dtype="int8"), onp.full(3, -2.7, dtype="int8"))
    check(nf.full(3, onp.nan, dtype="float32"), onp.full(3, onp.nan, dtype="float32"))
    check(nf.full((2, 3), [1, 2, 3]), onp.full((2, 3), [1, 2, 3]))
    check(nf.full(2, 0.0, dtype=bool), onp.full(2, 0.0, dtype=bool))


def test_full_out_of_range_fill_overflowerror():
    with pytest.raises(OverflowError):
        onp.full(3, 300, dtype="int8")
    with pytest.raises(OverflowError):
        nf.full(3, 300, dtype="int8")


def test_empty_shape_and_dtype():
    for shape, dtype in [((2, 3), None), (5, "int32"), ((0, 2), "uint8"), ((), "bool")]:
        a = nf.empty(shape, dtype=dtype) if dtype else nf.empty(shape)
        e = onp.empty(shape, dtype=dtype) if dtype else onp.empty(shape)
        assert isinstance(a, nf.ndarray)
        assert a.shape == e.shape and a.dtype == e.dtype
        assert onp.asarray(a).shape == e.shape


def test_like_functions():
    a, e = pair((2, 3), "int16")
    check(nf.zeros_like(a), onp.zeros_like(e))
    check(nf.ones_like(a, dtype="float32"), onp.ones_like(e, dtype="float32"))
    check(nf.full_like(a, 2.9), onp.full_like(e, 2.9))
    check(nf.full_like(a, 5, shape=(4,)), onp.full_like(e, 5, shape=(4,)))
    check(nf.zeros_like([[1.0, 2.0]]), onp.zeros_like([[1.0, 2.0]]))
    check(nf.ones_like(e), onp.ones_like(e))
    em = nf.empty_like(a)
    assert em.shape == e.shape and em.dtype == e.dtype
    em = nf.empty_like(a.T, dtype="float64")
    assert em.shape == e.T.shape and em.dtype == onp.float64


# ---------------------------------------------------------------------------
# arange / linspace / eye / identity

@pytest.mark.parametrize("args,kw", [
    ((5,), {}),
    ((2, 10), {}),
    ((10, 2, -3), {}),
    ((-3, 3), {"dtype": "int8"}),
    ((5,), {"dtype": "uint8"}),
    ((5,), {"dtype": "float32"}),
    ((0, 1, 0.1), {}),
    ((1, 0, -0.25), {}),
    ((2, 10.5), {}),
    ((0.5, 5), {}),
    ((0, 1, 0.1), {"dtype": "float32"}),
    ((0, 5, 1), {"dtype": "float64"}),
    ((5, 2), {}),
    ((0,), {}),
    ((-1.5, -10, -2.5), {}),
    ((0, 2**40, 2**38), {}),
    ((2,), {"dtype": "bool"}),
    ((True,), {}),
    # stop=None: the start is the stop (array API tests' calls)
    ((5, None), {}),
    ((0, None, 1), {"dtype": "float32"}),
    ((3.5, None), {}),
], ids=repr)
def test_arange(args, kw):
    check(nf.arange(*args, **kw), onp.arange(*args, **kw))


def test_arange_large():
    check(nf.arange(1_000_000), onp.arange(1_000_000))
    check(nf.arange(0.0, 100.0, 1e-4), onp.arange(0.0, 100.0, 1e-4))
    check(nf.arange(2, stop=8, step=2), onp.arange(2, stop=8, step=2))


def test_arange_keyword_start():
    check(nf.arange(start=2, stop=8, step=2), onp.arange(start=2, stop=8, step=2))
    check(nf.arange(start=4, stop=None), onp.arange(start=4, stop=None))


def test_arange_without_stop_raises():
    for args, kw in (((None,), {}), ((), {"start": None}), ((None, None), {})):
        try:
            onp.arange(*args, **kw)
        except TypeError:
            with pytest.raises(TypeError):
                nf.arange(*args, **kw)
        else:
            raise AssertionError(f"NumPy accepted arange{args} {kw}")


def test_arange_bool_too_long_raises():
    with pytest.raises(TypeError):
        onp.arange(10, dtype=bool)
    with pytest.raises(TypeError):
        nf.arange(10, dtype=bool)


def test_arange_step_zero_raises():
    with pytest.raises(ZeroDivisionError):
        onp.arange(0, 5, 0)
    with pytest.raises(ZeroDivisionError):
        nf.arange(0, 5, 0)


@pytest.mark.parametrize("args,kw", [
    ((0, 1, 5), {}),
    ((0, 1, 5), {"endpoint": False}),
    ((-2.5, 7, 11), {}),
    ((3, -3, 4), {}),
    ((0, 1, 0), {}),
    ((2, 3, 1), {}),
    ((2, 3, 1), {"endpoint": False}),
    ((1, 1, 5), {}),
    ((0, 10, 7), {"dtype": int}),
    ((-5, 5, 4), {"dtype": int}),
    ((-5.5, 5, 9), {"dtype": "int8"}),
    ((0, 1, 6), {"dtype": "float32"}),
    ((0, 1e-3, 50), {}),
    ((0, 1), {}),
], ids=repr)
def test_linspace(args, kw):
    check(nf.linspace(*args, **kw), onp.linspace(*args, **kw))


def test_linspace_retstep():
    for args, kw in [((0, 1, 5), {}), ((0, 1, 5), {"endpoint": False}), ((2, 3, 1), {}), ((-1, 1, 0), {})]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            g, gs = nf.linspace(*args, retstep=True, **kw)
            e, es = onp.linspace(*args, retstep=True, **kw)
        check(g, e)
        assert (onp.isnan(gs) and onp.isnan(es)) or gs == pytest.approx(es, rel=1e-15)


def test_linspace_negative_num_raises():
    with pytest.raises(ValueError):
        onp.linspace(0, 1, -1)
    with pytest.raises(ValueError):
        nf.linspace(0, 1, -1)


@pytest.mark.parametrize("args,kw", [
    ((3,), {}),
    ((3, 5), {"k": 1}),
    ((4, 3), {"k": -2, "dtype": int}),
    ((2,), {"k": 5}),
    ((3, 4), {"k": -3}),
    ((0,), {}),
    ((3, 2), {"dtype": bool}),
    ((4,), {"k": -1, "dtype": "float32"}),
    ((1, 6), {"k": 3, "dtype": "uint8"}),
    # a diagonal beyond any int64 (a Python int): zeros
    ((2,), {"k": 2**63}),
    ((2, 3), {"k": -2**70}),
    ((3,), {"k": 3}),
    ((3,), {"k": -3}),
], ids=repr)
def test_eye(args, kw):
    check(nf.eye(*args, **kw), onp.eye(*args, **kw))


@pytest.mark.parametrize("shape", [(3,), (2, 3), (3, 2)])
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_eye_order(shape, k):
    for order in ("C", "F", "f"):
        got, expected = nf.eye(*shape, k=k, order=order), onp.eye(*shape, k=k, order=order)
        check(got, expected)
        assert got.strides == expected.strides and got.flags.f_contiguous == expected.flags.f_contiguous
    for order in ("K", "A"):
        with pytest.raises(ValueError):
            onp.eye(*shape, order=order)
        with pytest.raises(ValueError, match="only 'C' or 'F'"):
            nf.eye(*shape, order=order)


def test_identity():
    check(nf.identity(4), onp.identity(4))
    check(nf.identity(3, dtype=bool), onp.identity(3, dtype=bool))
    check(nf.identity(2, dtype="int16"), onp.identity(2, dtype="int16"))


# ---------------------------------------------------------------------------
# random: same seed, same values

def test_random_legacy_api_matches_numpy():
    calls = [
        ("rand", (3, 4), {}),
        ("randn", (5,), {}),
        ("random", ((2, 3),), {}),
        ("random_sample", (4,), {}),
        ("uniform", (1.0, 2.0), {"size": 5}),
        ("normal", (0.0, 2.0, (3, 2)), {}),
        ("randint", (0, 10), {"size": (3, 3)}),
        ("randint", (5,), {"size": 4, "dtype": "int16"}),
        ("choice", (10, 4), {}),
        ("permutation", (6,), {}),
        ("exponential", (1.5, 4), {}),
    ]
    for name, args, kw in calls:
        nf.random.seed(1234)
        g = getattr(nf.random, name)(*args, **kw)
        onp.random.seed(1234)
        e = getattr(onp.random, name)(*args, **kw)
        check(g, e)


def test_random_sequence_after_one_seed():
    nf.random.seed(7)
    g = [nf.random.rand(3), nf.random.randn(2, 2), nf.random.randint(0, 100, 5)]
    onp.random.seed(7)
    e = [onp.random.rand(3), onp.random.randn(2, 2), onp.random.randint(0, 100, 5)]
    for x, y in zip(g, e):
        check(x, y)


def test_random_default_rng_matches_numpy():
    for name, args, kw in [("random", (5,), {}), ("random", ((2, 3),), {"dtype": "float32"}),
                           ("integers", (0, 10, 6), {}), ("normal", (1.0, 2.0, 4), {}),
                           ("standard_normal", ((2, 2),), {}), ("uniform", (-1, 1, 3), {}),
                           ("choice", (5, 3), {"replace": False}), ("permutation", (5,), {})]:
        g = getattr(nf.random.default_rng(42), name)(*args, **kw)
        e = getattr(onp.random.default_rng(42), name)(*args, **kw)
        check(g, e)


def test_random_shuffle_in_place():
    a, e = pair((6,), "int64")
    nf.random.seed(3)
    nf.random.shuffle(a)
    onp.random.seed(3)
    onp.random.shuffle(e)
    check(a, e)
    a, e = pair((5, 2), "int64")
    nf.random.default_rng(5).shuffle(a)
    onp.random.default_rng(5).shuffle(e)
    check(a, e)


def test_random_randomstate_and_scalar_results():
    check(nf.random.RandomState(9).rand(4), onp.random.RandomState(9).rand(4))
    nf.random.seed(0)
    g = nf.random.rand()
    onp.random.seed(0)
    assert g == onp.random.rand()


def test_random_calls_with_python_numbers_run_from_c_and_match_numpy():
    import inspect
    import pickle

    g, e = nf.random.default_rng(11), onp.random.default_rng(11)
    calls = [("random", (), {}), ("random", (4,), {}), ("normal", (0.0, 2.0, 8), {}), ("normal", (), {"size": (2, 3)}),
             ("integers", (0, 10), {}), ("integers", (0, 10), {"size": 3}), ("standard_normal", (None,), {}),
             ("random", (0,), {}), ("uniform", (True, 2), {}), ("random", (3,), {"dtype": onp.float32})]
    for name, args, kw in calls:
        got, exp = getattr(g, name)(*args, **kw), getattr(e, name)(*args, **kw)
        assert type(getattr(g, name)) is type(nf.random.rand) and type(nf.random.rand).__name__ == "numpy_function"
        if isinstance(exp, onp.ndarray):
            assert type(got) is nf.ndarray and got.flags.writeable and got.flags.c_contiguous
            check(got, exp)
            got[...] = 0  # (its own memory: NumPy's generator does not see it)
        else:
            assert type(got) is type(exp) and got == exp
    # numfuse arrays and other objects as arguments: the Python path, the same values
    for name, args in [("normal", (nf.zeros(3), 1.0)), ("choice", (nf.arange(5), 2)), ("random", (nf.int64(3),))]:
        ref = [onp.asarray(a) if isinstance(a, nf.ndarray) else a for a in args]
        check(getattr(g, name)(*args), getattr(e, name)(*ref))
    with pytest.raises(ValueError, match="scale < 0"):
        g.normal(0.0, -1.0)  # (NumPy's exception, raised by NumPy's generator)
    with pytest.raises(ValueError, match="scale < 0"):
        e.normal(0.0, -1.0)
    check(g.random(3), e.random(3))
    # generators with their methods made still pickle; signatures are NumPy's
    g2 = pickle.loads(pickle.dumps(g))
    check(g2.random(2), e.random(2))
    rs = nf.random.RandomState(2)
    rs.rand(1)
    check(pickle.loads(pickle.dumps(rs)).rand(3), (lambda r: (r.rand(1), r.rand(3))[1])(onp.random.RandomState(2)))
    assert inspect.signature(g.normal) == inspect.signature(e.normal)
    assert inspect.signature(nf.random.rand) == inspect.signature(onp.random.rand)
    assert nf.random.rand.__name__ == "rand" and "Random values" in nf.random.rand.__doc__
    assert nf.random.rand.__wrapped__ == onp.random.rand


@pytest.mark.parametrize("num", [0, 1, 2, 3, 7, 50])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_bits_steps_and_warnings_as_numpy(num, endpoint):
    import itertools
    import warnings
    vals = [0, 1, -1, 0.1, 1e-300, -2.5, 1e300, 7.3, -0.0, 5e-324, 1e308, -1e308, float("inf"), float("nan")]
    for a, b in itertools.product(vals, vals):
        out = []
        for mod in (onp, nf):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                y, step = mod.linspace(a, b, num, endpoint=endpoint, retstep=True)
            out.append((onp.asarray(y).tobytes(), onp.asarray(y).dtype, repr(step), type(y).__module__.split(".")[0],
                        sorted({str(x.message) for x in w})))
        e, g = out
        assert g[:3] == e[:3] and g[3] == "numfuse", (a, b)
        if nf.get_option("tier") != "lazy":  # (fused: an invalid flag raised by two operations is one warning)
            assert g[4] == e[4], (a, b)
    # a small array is computed at the call in C; a large one, or a tier that records, is recorded
    y = nf._core.linspace_now(0.0, 1.0, num, endpoint)
    assert (y is not None) == (nf.get_option("tier") in ("auto", "eager")), y
    assert nf._core.linspace_now(0.0, float("inf"), num, endpoint) is None


# ---------------------------------------------------------------------------
# reshape / ravel / flatten

@pytest.mark.parametrize("shape", [(12,), (3, 4), (2, -1), (-1,), (2, 3, 2), (1, 12, 1), (-1, 1)], ids=repr)
def test_reshape_contiguous_is_view(shape):
    a, e = pair((4, 3), "int32")
    check_view(a.reshape(shape), e.reshape(shape))
    check_view(nf.reshape(a, shape), onp.reshape(e, shape))


def test_reshape_varargs_and_order_f():
    a, e = pair((4, 3), "float64")
    check(a.reshape(2, 6), e.reshape(2, 6))
    check(a.reshape((6, 2), order="F"), e.reshape((6, 2), order="F"))
    check(nf.reshape(a, (3, -1), order="F"), onp.reshape(e, (3, -1), order="F"))
    check(nf.reshape(a.T, (2, 6), order="F"), onp.reshape(e.T, (2, 6), order="F"))


@pytest.mark.parametrize("view", ["T", "strided", "negative", "lazy"])
def test_reshape_noncontiguous_needs_copy(view):
    a0, e0 = pair((4, 6), "int64")
    f = {"T": lambda x: x.T, "strided": lambda x: x[::2, 1::2], "negative": lambda x: x[::-1, ::-1],
         "lazy": lambda x: (x * 3)[1:, ::2]}[view]
    a, e = f(a0), f(e0)
    for shape in [(-1,), (e.shape[1], -1), (e.shape[1], 1, e.shape[0])]:
        check(a.reshape(shape), e.reshape(shape))
        check(a.reshape(shape, order="F"), e.reshape(shape, order="F"))
    # writing to the reshaped result changes the source exactly when NumPy's is a view
    r = a.reshape(-1)
    re_ = e.reshape(-1)
    r[...] = -1
    re_[...] = -1
    check(a0, e0)


def test_reshape_view_of_transposed_splits_axis():
    a, e = pair((4, 6), "float32")
    check_view(a.T.reshape(3, 2, 4), e.T.reshape(3, 2, 4))
    check_view(a[:, ::2].reshape(4, 3, 1), e[:, ::2].reshape(4, 3, 1))


def test_reshape_writes_through_view():
    a, e = pair((4, 6), "float64")
    v = a.reshape(2, 12)
    ve = e.reshape(2, 12)
    v[1, ::3] = -5
    ve[1, ::3] = -5
    check(a, e)


def test_reshape_errors():
    a, e = pair((4, 3))
    for shape in [(5, 2), (-1, -1), (5, -1)]:
        with pytest.raises(ValueError):
            e.reshape(shape)
        with pytest.raises(ValueError):
            a.reshape(shape)


def test_ravel_order_a():
    a, e = pair((3, 4), "int16")
    check(nf.ravel(a.T, order="A"), onp.ravel(e.T, order="A"))


def test_ravel_order_k_contiguous():
    a, e = pair((3, 4), "int16")
    for x, y in [(a, e), (a.T, e.T), (a[:, ::2], e[:, ::2]), (a[::-1], e[::-1])]:
        check(nf.ravel(x, order="K"), onp.ravel(y, order="K"))


def test_ravel_order_k_noncontiguous():
    a, e = pair((3, 4), "int16")
    check(nf.ravel(a.T[::-1], order="K"), onp.ravel(e.T[::-1], order="K"))
    check(nf.ravel(a.T[:, ::2], order="K"), onp.ravel(e.T[:, ::2], order="K"))


def test_ravel_flatten():
    a0, e0 = pair((3, 4), "int16")
    for a, e in [(a0, e0), (a0.T, e0.T), (a0[:, ::2], e0[:, ::2]), (a0[::-1], e0[::-1])]:
        for order in ["C", "F"]:
            check(nf.ravel(a, order=order), onp.ravel(e, order=order))
            check(a.flatten(order) if order in "CF" else a.flatten(), e.flatten(order) if order in "CF"
                  else e.flatten())
        check(a.ravel(), e.ravel())
    check_view(nf.ravel(a0), onp.ravel(e0))
    check_view(nf.ravel(a0.T, order="K"), onp.ravel(e0.T, order="K"))
    f = a0.flatten()
    f[0] = 100
    check(a0, e0)


# ---------------------------------------------------------------------------
# transpose, swapaxes, moveaxis, expand_dims, squeeze, broadcast_to

def test_transpose_family():
    a, e = pair((2, 3, 4), "int32")
    check_view(a.T, e.T)
    check_view(a.transpose(), e.transpose())
    check_view(a.transpose(1, 0, 2), e.transpose(1, 0, 2))
    check_view(a.transpose((2, 0, 1)), e.transpose((2, 0, 1)))
    check_view(nf.transpose(a, (-1, 0, 1)), onp.transpose(e, (-1, 0, 1)))
    check_view(nf.permute_dims(a, (1, 2, 0)), onp.permute_dims(e, (1, 2, 0)))
    check_view(nf.swapaxes(a, 0, 2), onp.swapaxes(e, 0, 2))
    check_view(a.swapaxes(-1, 1), e.swapaxes(-1, 1))
    check_view(nf.moveaxis(a, 0, -1), onp.moveaxis(e, 0, -1))
    check_view(nf.moveaxis(a, [0, 1], [-1, -2]), onp.moveaxis(e, [0, 1], [-1, -2]))
    check_view(nf.moveaxis(a, 2, 0), onp.moveaxis(e, 2, 0))
    check_view(a.mT, e.mT)
    v = nf.arange(4)
    check_view(v.T, onp.arange(4).T)


def test_transpose_errors():
    a, e = pair((2, 3, 4))
    with pytest.raises(ValueError):
        e.transpose(0, 1)
    with pytest.raises(ValueError):
        a.transpose(0, 1)
    with pytest.raises((ValueError, onp.exceptions.AxisError)):
        a.transpose(0, 1, 1)
    with pytest.raises(onp.exceptions.AxisError):
        nf.swapaxes(a, 0, 3)
    with pytest.raises(onp.exceptions.AxisError):
        nf.moveaxis(a, 3, 0)


def test_expand_dims():
    a, e = pair((2, 3), "float32")
    for axis in [0, 1, 2, -1, -3, (0, 1), (0, -1), (1, 3)]:
        check(nf.expand_dims(a, axis), onp.expand_dims(e, axis))
    with pytest.raises(onp.exceptions.AxisError):
        onp.expand_dims(e, 3)
    with pytest.raises(onp.exceptions.AxisError):
        nf.expand_dims(a, 3)


def test_expand_dims_strides():
    a, e = pair((2, 3), "float32")
    check_view(nf.expand_dims(a, 0), onp.expand_dims(e, 0))


def test_squeeze():
    a, e = pair((1, 3, 1, 2), "int64")
    check_view(nf.squeeze(a), onp.squeeze(e))
    check_view(a.squeeze(axis=0), e.squeeze(axis=0))
    check_view(nf.squeeze(a, axis=(0, 2)), onp.squeeze(e, axis=(0, 2)))
    check_view(nf.squeeze(a, axis=-2), onp.squeeze(e, axis=-2))
    z = nf.array([[5]])
    check(nf.squeeze(z), onp.squeeze(onp.array([[5]])))
    with pytest.raises(ValueError):
        onp.squeeze(e, axis=1)
    with pytest.raises(ValueError):
        nf.squeeze(a, axis=1)
    with pytest.raises(onp.exceptions.AxisError):
        nf.squeeze(a, axis=4)


def test_broadcast_to_and_readonly():
    a, e = pair((3,), "int32")
    b = nf.broadcast_to(a, (2, 3))
    be = onp.broadcast_to(e, (2, 3))
    check_view(b, be)
    check_view(nf.broadcast_to(nf.array(5.0), (2, 2)), onp.broadcast_to(onp.array(5.0), (2, 2)))
    check_view(nf.broadcast_to(a[:, None], (3, 4)), onp.broadcast_to(e[:, None], (3, 4)))
    assert b.flags.writeable is False and be.flags.writeable is False
    with pytest.raises(ValueError):
        be[0, 0] = 1
    with pytest.raises(ValueError):
        b[0, 0] = 1
    with pytest.raises(ValueError):
        b[...] = 0
    with pytest.raises(ValueError):
        b += 1
    with pytest.raises(ValueError):
        nf.add(a, 1, out=b)
    with pytest.raises(ValueError):
        nf.broadcast_to(a, (3, 2))
    check(a, e)  # unchanged


def test_broadcast_arrays_and_atleast():
    a, e = pair((3, 1), "float64")
    b, be = pair((4,), "float64")
    for g, x in zip(nf.broadcast_arrays(a, b), onp.broadcast_arrays(e, be)):
        check(g, x)
    for f in ["atleast_1d", "atleast_2d", "atleast_3d"]:
        for x in [onp.array(2.0), onp.arange(3.0), onp.ones((2, 2))]:
            check(getattr(nf, f)(nf.array(x)), getattr(onp, f)(x))


# ---------------------------------------------------------------------------
# astype / copy

ASTYPE_VALUES = {
    "b": [True, False, True, True, False, True],
    "i": [-5, 0, 1, 127, 300, -129],
    "u": [0, 1, 2, 127, 255, 1000],
    "f": [-3.7, -0.5, 0.0, 0.5, 1.9, 100.99],
}


@pytest.mark.parametrize("src", ALL_DTYPES)
def test_astype_all_pairs(src):
    kind = onp.dtype(src).kind
    e = onp.array(ASTYPE_VALUES[kind]).astype(src)
    a = nf.array(e)
    for dst in ALL_DTYPES:
        ee = e
        if kind == "f" and onp.dtype(dst).kind == "u":
            ee = onp.abs(e)  # negative float -> unsigned is undefined in C
        aa = nf.array(ee)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            exp = ee.astype(dst)
        check(aa.astype(dst), exp)
    check(a.T.astype("float64"), e.T.astype("float64"))


def test_astype_float_to_int_truncates_and_nan_to_bool():
    e = onp.array([-2.9, -1.1, -0.9, 0.9, 1.1, 2.9, 1e9])
    check(nf.array(e).astype("int32"), e.astype("int32"))
    check(nf.array(e).astype("int64"), e.astype("int64"))
    f = onp.array([onp.nan, 0.0, -0.0, onp.inf, 1e-320])
    check(nf.array(f).astype(bool), f.astype(bool))
    check(nf.array(f).astype("float32"), f.astype("float32"))


def test_astype_options():
    a, e = pair((2, 3), "int32")
    assert a.astype("int32", copy=False) is a
    c = a.astype("int32")
    assert c is not a
    c[0, 0] = 99
    check(a, e)
    with pytest.raises(TypeError):
        e.astype("int8", casting="safe")
    with pytest.raises(TypeError):
        a.astype("int8", casting="safe")
    check(a.astype("int64", casting="safe"), e.astype("int64", casting="safe"))
    check(a.T.astype("float32", order="C"), e.T.astype("float32", order="C"))
    check(a.astype(float), e.astype(float))
    check(a.astype(onp.uint8), e.astype(onp.uint8))


def test_copy():
    a, e = pair((3, 4), "float32")
    for x, y in [(a, e), (a.T, e.T), (a[::2, ::-1], e[::2, ::-1])]:
        c = x.copy()
        ce = y.copy()
        check_view(c, ce)
        c[...] = 0
    check(a, e)
    check(nf.copy(a.T), onp.copy(e.T))
    cf = a.copy(order="F")
    cfe = e.copy(order="F")
    check_view(cf, cfe)


# ---------------------------------------------------------------------------
# concatenate / stack / split / flip

def test_concatenate():
    a, e = pair((2, 3), "int32")
    b, be = pair((4, 3), "int32", start=100)
    check(nf.concatenate([a, b]), onp.concatenate([e, be]))
    check(nf.concatenate([a, b.T[:2]], axis=1), onp.concatenate([e, be.T[:2]], axis=1))
    check(nf.concatenate([a, b], axis=-2), onp.concatenate([e, be], axis=-2))
    check(nf.concatenate([a, b], axis=None), onp.concatenate([e, be], axis=None))
    check(nf.concat([a, a]), onp.concat([e, e]))
    c, ce = pair((2, 3), "float32")
    check(nf.concatenate([a, c]), onp.concatenate([e, ce]))
    check(nf.concatenate([a, a * 2, a[:0]], axis=0), onp.concatenate([e, e * 2, e[:0]], axis=0))
    check(nf.concatenate([a, e]), onp.concatenate([e, e]))
    check(nf.concatenate(([1, 2], [3])), onp.concatenate(([1, 2], [3])))
    check(nf.concatenate([a, b], dtype="float64"), onp.concatenate([e, be], dtype="float64"))
    out = nf.zeros((6, 3), dtype="int64")
    oute = onp.zeros((6, 3), dtype="int64")
    r = nf.concatenate([a, b], out=out)
    onp.concatenate([e, be], out=oute)
    assert r is out
    check(out, oute)


def test_concatenate_errors():
    a, e = pair((2, 3))
    with pytest.raises(ValueError):
        onp.concatenate([e, e.T])
    with pytest.raises(ValueError):
        nf.concatenate([a, a.T])
    with pytest.raises(ValueError):
        nf.concatenate([a, a[0]])
    with pytest.raises(ValueError):
        nf.concatenate([])
    with pytest.raises(onp.exceptions.AxisError):
        nf.concatenate([a, a], axis=2)


def test_concatenate_with_overlap_source_and_out():
    a, e = pair((2, 3), "float64")
    c = nf.concatenate([a, a[::-1]])
    a[...] = 0  # concatenate copied
    check(c, onp.concatenate([e, e[::-1]]))


def test_stack_family():
    a, e = pair((2, 3), "int64")
    b, be = pair((2, 3), "int64", start=50)
    for axis in [0, 1, 2, -1]:
        check(nf.stack([a, b], axis=axis), onp.stack([e, be], axis=axis))
    check(nf.vstack([a, b]), onp.vstack([e, be]))
    check(nf.vstack([a[0], b[1]]), onp.vstack([e[0], be[1]]))
    check(nf.hstack([a, b]), onp.hstack([e, be]))
    check(nf.hstack([a[0], b[1]]), onp.hstack([e[0], be[1]]))
    check(nf.column_stack([a[0], b[1]]), onp.column_stack([e[0], be[1]]))
    check(nf.column_stack([a.T, b[0]]), onp.column_stack([e.T, be[0]]))
    check(nf.dstack([a, b]), onp.dstack([e, be]))
    with pytest.raises(ValueError):
        nf.stack([a, b.T])
    with pytest.raises(ValueError):
        onp.stack([e, be.T])


def test_stack_in_cpp_as_numpy():
    # numpy.stack of numfuse arrays of one dtype and shape runs in C++
    # (concat_same with stack): every axis, 0-d and empty parts, tuples,
    # transposed and strided parts (layout as NumPy's), NumPy's errors; other
    # calls (mixed dtypes, shapes) through the general path.
    x = onp.arange(24.0).reshape(2, 3, 4)
    cases = [([x, x + 1], {}), ((x[0], x[1]), {"axis": 1}), ([x, x.T.T, x * 2], {"axis": -1}), ([x], {"axis": 3}),
             ([x.transpose(2, 0, 1), x.transpose(2, 0, 1) + 1], {"axis": 1}), ([x[..., ::2], x[..., 1::2]], {"axis": 2}),
             ([onp.float64(1.0) * onp.ones(()), onp.zeros(())], {}), ([x[:, :0], x[:, :0]], {"axis": 1}),
             ([x.astype(onp.int32), x.astype(onp.int32)], {"axis": -4}), ([x, x.astype(onp.float32)], {}),
             ([x.T, x.T], {"axis": 0})]
    for arrays, kw in cases:
        want = onp.stack(arrays, **kw)
        got = nf.stack(type(arrays)(nf.asarray(a) for a in arrays), **kw)
        check(got, want)
        assert got.strides == want.strides, (kw, got.strides, want.strides)
        fast = nf._core.concat_same([nf.asarray(a) for a in arrays], kw.get("axis", 0), True)
        assert (fast is NotImplemented) == (len({a.dtype for a in arrays}) > 1), kw  # (the C++ path taken)
    for arrays, kw in [([x, x], {"axis": 4}), ([x, x], {"axis": -5}), ([x, x[0]], {}), ([], {})]:
        with pytest.raises(Exception) as w:
            onp.stack(arrays, **kw)
        with pytest.raises(type(w.value)) as e:
            nf.stack([nf.asarray(a) for a in arrays], **kw)
        assert str(e.value) == str(w.value)


def test_split_family():
    a, e = pair((6, 4), "float64")
    for g, x in zip(nf.split(a, 3), onp.split(e, 3)):
        check_view(g, x)
    for g, x in zip(nf.split(a, [1, 4], axis=0), onp.split(e, [1, 4], axis=0)):
        check_view(g, x)
    for g, x in zip(nf.split(a, 2, axis=1), onp.split(e, 2, axis=1)):
        check_view(g, x)
    for g, x in zip(nf.split(a, [3, 10]), onp.split(e, [3, 10])):
        check(g, x)
    gs, xs = nf.array_split(a, 4), onp.array_split(e, 4)
    assert len(gs) == len(xs)
    for g, x in zip(gs, xs):
        check_view(g, x)
    gs, xs = nf.array_split(a, 3, axis=-1), onp.array_split(e, 3, axis=-1)
    assert len(gs) == len(xs)
    for g, x in zip(gs, xs):
        check_view(g, x)
    with pytest.raises(ValueError):
        onp.split(e, 4)
    with pytest.raises(ValueError):
        nf.split(a, 4)


def test_split_unsorted_indices():
    a, e = pair((6,), "int32")
    gs, xs = nf.split(a, [4, 2]), onp.split(e, [4, 2])
    assert len(gs) == len(xs)
    for g, x in zip(gs, xs):
        check(g, x)


def test_flip():
    a, e = pair((2, 3, 4), "int16")
    check_view(nf.flip(a), onp.flip(e))
    check_view(nf.flip(a, 1), onp.flip(e, 1))
    check_view(nf.flip(a, (0, -1)), onp.flip(e, (0, -1)))
    check_view(nf.fliplr(a), onp.fliplr(e))
    check_view(nf.flipud(a), onp.flipud(e))


# ---------------------------------------------------------------------------
# where / clip / round / isclose / diff

@pytest.mark.fallback
def test_where():
    c = rnd((3, 4), "bool", seed=1)
    x = rnd((3, 4), "int32", seed=2)
    y = rnd((4,), "float32", seed=3)
    nc, nx, ny = nf.array(c), nf.array(x), nf.array(y)
    check(nf.where(nc, nx, ny), onp.where(c, x, y))
    check(nf.where(nc, nx, 0), onp.where(c, x, 0))
    check(nf.where(nc, nx, 0.5), onp.where(c, x, 0.5))
    check(nf.where(nc, 1, 2), onp.where(c, 1, 2))
    check(nf.where(nx > 0, nx, -nx), onp.where(x > 0, x, -x))
    check(nf.where(nx, 1.0, 0.0), onp.where(x, 1.0, 0.0))
    check(nf.where(True, nx, ny), onp.where(True, x, y))
    check(nf.where(nc[:, :1], nx, ny[None, :]), onp.where(c[:, :1], x, y[None, :]))
    check(nf.where(nc, nx.astype("uint8"), nx.astype("int8")), onp.where(c, x.astype("uint8"), x.astype("int8")))
    g = nf.where(nx > 0)
    e = onp.where(x > 0)
    assert len(g) == len(e)
    for gg, ee in zip(g, e):
        assert_same(gg, ee)
    with pytest.raises(ValueError):
        nf.where(nc, nx)
    with pytest.raises(ValueError):
        nf.where(nc, nx, nf.ones(3))


def test_clip():
    x = rnd((4, 5), "float64", seed=4)
    a = nf.array(x)
    check(nf.clip(a, -0.5, 0.5), onp.clip(x, -0.5, 0.5))
    check(nf.clip(a, None, 0.1), onp.clip(x, None, 0.1))
    check(nf.clip(a, -0.1, None), onp.clip(x, -0.1, None))
    check(a.clip(-1, 1), x.clip(-1, 1))
    check(a.clip(min=0), x.clip(min=0))
    lo = rnd((5,), "float64", seed=5) - 1
    check(nf.clip(a, nf.array(lo), 1.0), onp.clip(x, lo, 1.0))
    i = rnd((4, 5), "int16", seed=6)
    check(nf.clip(nf.array(i), -2, 3), onp.clip(i, -2, 3))
    check(nf.clip(nf.array(i), -2.5, 3), onp.clip(i, -2.5, 3))
    check(nf.clip(nf.array(i).astype("uint8"), 1, 3), onp.clip(i.astype("uint8"), 1, 3))
    n = onp.array([onp.nan, 1.0, -5.0])
    check(nf.clip(nf.array(n), 0, 2), onp.clip(n, 0, 2))
    out = nf.zeros((4, 5))
    r = nf.clip(a, 0, 1, out=out)
    assert r is out
    check(out, onp.clip(x, 0, 1))


def test_clip_min_greater_than_max():
    x = onp.arange(5.0)
    check(nf.clip(nf.array(x), 3, 1), onp.clip(x, 3, 1))


@pytest.mark.fallback
@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round(decimals):
    x = onp.array([0.5, 1.5, 2.5, -0.5, -1.5, 123.456, -987.654, 0.125, 1e-3, 3.14159, 15.0, 25.0, 155.0])
    check(nf.round(nf.array(x), decimals), onp.round(x, decimals))
    check(nf.around(nf.array(x), decimals=decimals), onp.around(x, decimals=decimals))
    check(nf.array(x).round(decimals), x.round(decimals))
    f = x.astype("float32")
    check(nf.round(nf.array(f), decimals), onp.round(f, decimals))
    i = onp.array([-155, -15, 0, 5, 14, 15, 25, 149, 150, 999], dtype="int32")
    check(nf.round(nf.array(i), decimals), onp.round(i, decimals))


def test_isclose_allclose_array_equal():
    x = onp.array([1.0, 1.0 + 1e-9, onp.nan, onp.inf, -onp.inf, 0.0, 1e-10])
    y = onp.array([1.0, 1.0, onp.nan, onp.inf, onp.inf, 1e-9, 0.0])
    a, b = nf.array(x), nf.array(y)
    check(nf.isclose(a, b), onp.isclose(x, y))
    check(nf.isclose(a, b, equal_nan=True), onp.isclose(x, y, equal_nan=True))
    check(nf.isclose(a, b, rtol=0, atol=0), onp.isclose(x, y, rtol=0, atol=0))
    check(nf.isclose(a, 1.0), onp.isclose(x, 1.0))
    check(nf.isclose(nf.arange(3), 1), onp.isclose(onp.arange(3), 1))
    assert nf.allclose(a[:2], b[:2]) == onp.allclose(x[:2], y[:2])
    assert nf.allclose(a, b) == onp.allclose(x, y)
    assert nf.allclose(a, b, equal_nan=True) == onp.allclose(x, y, equal_nan=True)
    assert nf.allclose(a[2:4], b[2:4], equal_nan=True) == onp.allclose(x[2:4], y[2:4], equal_nan=True)
    assert nf.array_equal(a, a) == onp.array_equal(x, x)
    assert nf.array_equal(a, a, equal_nan=True) == onp.array_equal(x, x, equal_nan=True)
    assert nf.array_equal(a, a[:3]) == onp.array_equal(x, x[:3])
    assert nf.array_equal(nf.arange(3), [0, 1, 2]) == onp.array_equal(onp.arange(3), [0, 1, 2])
    assert nf.array_equal(nf.arange(3), nf.arange(3.0)) == onp.array_equal(onp.arange(3), onp.arange(3.0))
    assert type(nf.allclose(a, b)) is bool and type(nf.array_equal(a, b)) is bool


def test_isclose_integer_inputs():
    x = onp.array([0, 1, 2, 100], dtype="int64")
    y = onp.array([0, 2, 2, 101], dtype="int32")
    check(nf.isclose(nf.array(x), nf.array(y), rtol=0.01), onp.isclose(x, y, rtol=0.01))


@pytest.mark.fallback
def test_diff():
    x = rnd((4, 6), "float64", seed=7)
    a = nf.array(x)
    check(nf.diff(a), onp.diff(x))
    check(nf.diff(a, n=2), onp.diff(x, n=2))
    check(nf.diff(a, axis=0), onp.diff(x, axis=0))
    check(nf.diff(a.T, n=3, axis=-1), onp.diff(x.T, n=3, axis=-1))
    check(nf.diff(a, n=0), onp.diff(x, n=0))
    check(nf.diff(a, n=10), onp.diff(x, n=10))
    i = rnd((7,), "uint8", seed=8)
    check(nf.diff(nf.array(i)), onp.diff(i))
    b = rnd((7,), "bool", seed=9)
    check(nf.diff(nf.array(b)), onp.diff(b))
    check(nf.diff(a, prepend=0), onp.diff(x, prepend=0))
    with pytest.raises(ValueError):
        nf.diff(a, n=-1)


# ---------------------------------------------------------------------------
# matmul / dot / inner / outer / vdot / norm

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 7), (7, 1)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),
    ((4,), (2, 4, 3)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=repr)
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_matmul_shapes(sa, sb, dtype):
    x, y = rnd(sa, dtype, 1), rnd(sb, dtype, 2)
    check(nf.matmul(nf.array(x), nf.array(y)), onp.matmul(x, y))
    check(nf.array(x) @ nf.array(y), x @ y)


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("int64", "int64"), ("int8", "int8"),
                                   ("int32", "float32"), ("bool", "bool"), ("uint8", "int8"),
                                   ("float32", "float64"), ("uint16", "uint16")])
def test_matmul_dtypes(da, db):
    x, y = rnd((4, 5), da, 3), rnd((5, 3), db, 4)
    exp = x @ y
    check(nf.array(x) @ nf.array(y), exp, rtol=1e-5 if exp.dtype == onp.float32 else None)


def test_matmul_int8_overflow_wraps():
    x = onp.full((2, 8), 100, dtype="int8")
    y = onp.full((8, 2), 3, dtype="int8")
    check(nf.array(x) @ nf.array(y), x @ y)


def test_matmul_transposed_and_strided_operands(fusion):
    x, y = rnd((5, 4), "float64", 5), rnd((5, 6), "float64", 6)
    a, b = nf.array(x), nf.array(y)
    check(a.T @ b, x.T @ y)
    check(b.T @ a, y.T @ x)
    check(a[::2].T @ b[::2], x[::2].T @ y[::2])
    check((a * 2 + 1).T @ b[:, ::-1], (x * 2 + 1).T @ y[:, ::-1])
    check(a.T @ a, x.T @ x)
    i, j = rnd((3, 4), "int64", 7), rnd((5, 4), "int64", 8)
    check(nf.array(i) @ nf.array(j).T, i @ j.T)
    check((a @ a.T).sum(axis=0), (x @ x.T).sum(axis=0))


def test_matmul_out_and_errors():
    x, y = rnd((3, 4), "float64", 9), rnd((4, 2), "float64", 10)
    out = nf.zeros((3, 2))
    r = nf.matmul(nf.array(x), nf.array(y), out=out)
    assert r is out
    check(out, x @ y)
    with pytest.raises(ValueError):
        x @ x
    with pytest.raises(ValueError):
        nf.array(x) @ nf.array(x)
    with pytest.raises(ValueError):
        nf.matmul(nf.array(x), nf.array(2.0))
    with pytest.raises(ValueError):
        nf.array(rnd((2, 3, 4), "float64")) @ nf.array(rnd((3, 4, 2), "float64"))


def test_matmul_inplace_operator():
    x, y = rnd((3, 3), "float64", 11), rnd((3, 3), "float64", 12)
    a = nf.array(x)
    a @= nf.array(y)
    x = x @ y
    check(a, x)


def test_matmul_large_float():
    x, y = rnd((128, 96), "float64", 13), rnd((96, 80), "float64", 14)
    check(nf.array(x) @ nf.array(y), x @ y, rtol=1e-10, atol=1e-12)
    xf, yf = x.astype("float32"), y.astype("float32")
    check(nf.array(xf) @ nf.array(yf), xf @ yf, rtol=1e-4, atol=1e-4)


def test_dot():
    x, y = rnd((3, 4), "float64", 15), rnd((4, 2), "float64", 16)
    v = rnd((4,), "float64", 17)
    a, b, w = nf.array(x), nf.array(y), nf.array(v)
    check(nf.dot(a, b), onp.dot(x, y))
    check(nf.dot(a, w), onp.dot(x, v))
    check(nf.dot(w, w), onp.dot(v, v))
    check(nf.dot(a, 2.0), onp.dot(x, 2.0))
    check(nf.dot(3, w), onp.dot(3, v))
    check(a.dot(b), x.dot(y))
    t = rnd((2, 3, 4), "float64", 18)
    check(nf.dot(nf.array(t), w), onp.dot(t, v))
    check(nf.dot(nf.array(t), b), onp.dot(t, y))
    i = rnd((3, 4), "int16", 19)
    check(nf.dot(nf.array(i), nf.array(i).T), onp.dot(i, i.T))


def test_inner_outer_vdot():
    x, y = rnd((3, 4), "float64", 20), rnd((2, 4), "float64", 21)
    v, w = rnd((4,), "float64", 22), rnd((5,), "int32", 23)
    check(nf.inner(nf.array(x), nf.array(y)), onp.inner(x, y))
    check(nf.inner(nf.array(v), nf.array(v)), onp.inner(v, v))
    check(nf.inner(nf.array(x), nf.array(v)), onp.inner(x, v))
    check(nf.inner(nf.array(x), 2.0), onp.inner(x, 2.0))
    with pytest.raises(ValueError):
        nf.inner(nf.array(x), nf.array(w))
    check(nf.outer(nf.array(v), nf.array(w)), onp.outer(v, w))
    check(nf.outer(nf.array(x), nf.array(w)), onp.outer(x, w))
    check(nf.outer(nf.array(w), nf.array(w)), onp.outer(w, w))
    check(nf.vdot(nf.array(x), nf.array(x)), onp.vdot(x, x))
    check(nf.vdot(nf.array(w), nf.array(w)), onp.vdot(w, w))


def test_tensordot_and_trace_diagonal():
    x, y = rnd((3, 4, 5), "float64", 24), rnd((4, 5, 2), "float64", 25)
    check(nf.tensordot(nf.array(x), nf.array(y)), onp.tensordot(x, y))
    m = rnd((4, 5), "int32", 26)
    check(nf.trace(nf.array(m)), onp.trace(m))
    check(nf.trace(nf.array(m), offset=1), onp.trace(m, offset=1))
    check_view(nf.diagonal(nf.array(m), -1), onp.diagonal(m, -1))
    check(nf.array(m).trace(), m.trace())


@pytest.mark.parametrize("shape,kw", [
    ((5,), {}),
    ((3, 4), {}),
    ((3, 4), {"axis": 1}),
    ((3, 4), {"axis": 0, "keepdims": True}),
    ((3, 4), {"ord": "fro"}),
    ((2, 3, 4), {}),
    ((2, 3, 4), {"axis": (1, 2)}),
    ((5,), {"ord": 1}),
    ((5,), {"ord": onp.inf}),
    ((3, 4), {"ord": 2}),
    ((3, 4), {"ord": 1}),
], ids=repr)
@pytest.mark.fallback
def test_linalg_norm(shape, kw):
    x = rnd(shape, "float64", 27)
    # ords computed by NumPy's fallback may come back as NumPy scalars, as NumPy's own do
    assert_same(nf.linalg.norm(nf.array(x), **kw), onp.linalg.norm(x, **kw))


def test_linalg_norm_int_and_float32():
    i = rnd((4, 5), "int32", 28)
    check(nf.linalg.norm(nf.array(i)), onp.linalg.norm(i))
    f = rnd((6,), "float32", 29)
    check(nf.linalg.norm(nf.array(f)), onp.linalg.norm(f))


@pytest.mark.fallback
def test_linalg_fallbacks():
    x = rnd((4, 4), "float64", 30) + 4 * onp.eye(4)
    b = rnd((4,), "float64", 31)
    check(nf.linalg.solve(nf.array(x), nf.array(b)), onp.linalg.solve(x, b), rtol=1e-10)
    check(nf.linalg.inv(nf.array(x)), onp.linalg.inv(x), rtol=1e-10, atol=1e-14)
    assert float(nf.linalg.det(nf.array(x))) == pytest.approx(onp.linalg.det(x), rel=1e-10)
    check(nf.linalg.matrix_power(nf.array(x), 3), onp.linalg.matrix_power(x, 3), rtol=1e-10)
    check(nf.linalg.matrix_power(nf.array(x), 0), onp.linalg.matrix_power(x, 0))


# ---------------------------------------------------------------------------
# Conversions: tolist, item, len, iteration, repr, str, __array__

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tolist_item(dtype):
    e = rnd((2, 3), dtype, 32)
    a = nf.array(e)
    assert a.tolist() == e.tolist()
    assert type(a.tolist()[0][0]) is type(e.tolist()[0][0])
    assert a.T.tolist() == e.T.tolist()
    assert a[1].tolist() == e[1].tolist()
    assert a.item(4) == e.item(4)
    assert a.item(1, 2) == e.item(1, 2)
    assert type(a.item(0)) is type(e.item(0))
    assert a[0, 0].item() == e[0, 0].item()
    z = nf.array(e[0, 0])
    assert z.tolist() == e[0, 0].tolist()
    assert (a * 2).tolist() == (e * 2).tolist()
    with pytest.raises(ValueError):
        a.item()


def test_iter_0d_raises_immediately():
    with pytest.raises(TypeError):
        iter(onp.array(1.0))
    with pytest.raises(TypeError):
        iter(nf.array(1.0))


def test_scalar_conversions():
    a, e = pair((3,), "float64", start=1)
    assert float(a[1]) == float(e[1])
    assert int(a[2]) == int(e[2])
    assert bool(a[0]) == bool(e[0])
    assert bool(nf.array([0.0])) == bool(onp.array([0.0]))
    with pytest.raises(ValueError):
        bool(e)
    with pytest.raises(ValueError):
        bool(a)
    assert onp.arange(5)[nf.array(3)] == 3  # __index__
    assert [10, 20, 30][nf.array(1)] == 20
    assert f"{a[1]:.2f}" == f"{e[1]:.2f}"
    assert round(nf.array(2.5)) == round(onp.float64(2.5)) == 2
    assert round(nf.array(3.5)) == 4
    assert complex(a[0]) == complex(e[0])


def test_len_and_iteration():
    a, e = pair((3, 2), "int32")
    assert len(a) == len(e)
    rows = [r.tolist() for r in a]
    assert rows == [r.tolist() for r in e]
    for ra, re_ in zip(a, e):
        check(ra, re_)
    assert [float(v) for v in a[:, 0]] == [float(v) for v in e[:, 0]]
    with pytest.raises(TypeError):
        len(onp.array(1))
    with pytest.raises(TypeError):
        len(nf.array(1))
    with pytest.raises(TypeError):
        list(nf.array(1.0))
    assert 3 in a and 100 not in a
    assert (3 in e) and (100 not in e)


@pytest.mark.parametrize("make", [
    lambda m: m.arange(6).reshape(2, 3),
    lambda m: m.arange(6.0).reshape(3, 2).T / 3,
    lambda m: m.array([True, False]),
    lambda m: m.zeros((2, 0)),
    lambda m: m.array([1.5, m.nan, m.inf], dtype="float32"),
    lambda m: m.arange(2000),
    lambda m: m.arange(3, dtype="uint8"),
    lambda m: m.array(3.25),
    lambda m: m.array(7, dtype="int16"),
    lambda m: m.eye(3, dtype="int64")[::-1],
], ids=["int2d", "float_t", "bool", "empty", "nan_inf_f32", "long", "uint8", "0d_float", "0d_int16", "eye"])
def test_repr_str(make):
    a, e = make(nf), make(onp)
    assert repr(a) == repr(e)
    assert str(a) == str(e)


def test_repr_0d_reduction_result():
    a, e = pair((2, 3), "int64")
    with nf.config(tier="eager"):  # computed: NumPy's scalar
        assert repr(nf.sum(a)) == repr(onp.sum(e))
        assert str(nf.sum(a)) == str(onp.sum(e))
    with nf.config(tier="lazy"):  # pending: a 0-d array
        assert repr(nf.sum(a)) == repr(onp.asarray(onp.sum(e)))
        assert str(nf.sum(a)) == str(onp.sum(e))


def test_dunder_array():
    a, e = pair((3, 4), "float32")
    onp.testing.assert_array_equal(onp.asarray(a), e)
    assert onp.asarray(a).dtype == e.dtype
    onp.testing.assert_array_equal(onp.asarray(a.T), e.T)
    d = onp.asarray(a, dtype="float64")
    assert d.dtype == onp.float64
    onp.testing.assert_array_equal(d, e.astype("float64"))
    c = onp.array(a)
    c[0, 0] = 100
    assert float(a[0, 0]) == 0.0
    onp.testing.assert_array_equal(onp.asarray(a * 2 + 1), e * 2 + 1)
    assert onp.asarray(a).shape == (3, 4)


def test_shape_ndim_size_attributes():
    a, e = pair((2, 3, 4), "int8")
    assert a.shape == e.shape and a.ndim == e.ndim and a.size == e.size
    assert a.itemsize == e.itemsize and a.nbytes == e.nbytes
    assert a.dtype == e.dtype
    assert nf.shape(a) == onp.shape(e) and nf.ndim(a) == onp.ndim(e) and nf.size(a) == onp.size(e)
    assert nf.size(a, 1) == onp.size(e, 1)
    assert a.T.flags.f_contiguous == e.T.flags.f_contiguous
    assert a.flags.c_contiguous == e.flags.c_contiguous
    assert a[:, ::2].flags.c_contiguous == e[:, ::2].flags.c_contiguous


# ---------------------------------------------------------------------------
# NumPy protocols

def test_array_function_protocol():
    a, e = pair((3, 4), "float64")
    b, be = pair((3, 4), "float64", start=5)
    cases = [
        (onp.sum, (a,), (e,), {}),
        (onp.sum, (a,), (e,), {"axis": 1}),
        (onp.mean, (a,), (e,), {"axis": 0}),
        (onp.max, (a,), (e,), {}),
        (onp.concatenate, ([a, b],), ([e, be],), {}),
        (onp.stack, ([a, b],), ([e, be],), {"axis": 1}),
        (onp.reshape, (a, (4, 3)), (e, (4, 3)), {}),
        (onp.transpose, (a,), (e,), {}),
        (onp.where, (a > 3, a, b), (e > 3, e, be), {}),
        (onp.clip, (a, 1, 5), (e, 1, 5), {}),
        (onp.dot, (a, b.T), (e, be.T), {}),
        (onp.std, (a,), (e,), {"ddof": 1}),
        (onp.linalg.norm, (a,), (e,), {}),
        (onp.round, (a / 3, 2), (e / 3, 2), {}),
        (onp.zeros_like, (a,), (e,), {}),
        (onp.copy, (a,), (e,), {}),
        (onp.ravel, (a,), (e,), {}),
        (onp.diff, (a,), (e,), {}),
        (onp.isclose, (a, b), (e, be), {}),
    ]
    for f, nargs, eargs, kw in cases:
        got = f(*nargs, **kw)
        exp = f(*eargs, **kw)
        check(got, exp)
    assert onp.allclose(a, a + 1e-12) == onp.allclose(e, e + 1e-12)
    assert onp.array_equal(a, b) == onp.array_equal(e, be)
    assert onp.shape(a) == e.shape
    gs, xs = onp.split(a, 2, axis=1), onp.split(e, 2, axis=1)
    for g, x in zip(gs, xs):
        check(g, x)


@pytest.mark.fallback
def test_array_ufunc_protocol():
    a, e = pair((3, 4), "int32")
    f, fe = pair((3, 4), "float32")
    check(onp.add(a, 1), onp.add(e, 1))
    check(e + a, e + e)
    check(a + e, e + e)
    check(e * a - a, e * e - e)
    check(onp.float64(2.5) * a, onp.float64(2.5) * e)
    check(onp.sin(f), onp.sin(fe))
    check(onp.maximum(a, e[0]), onp.maximum(e, e[0]))
    check(onp.multiply(a, f), onp.multiply(e, fe))
    check(onp.add(a, 1, dtype="float64"), onp.add(e, 1, dtype="float64"))
    check(onp.divmod(a, 3)[0], onp.divmod(e, 3)[0])
    check(onp.add.reduce(a, axis=1), onp.add.reduce(e, axis=1))
    check(onp.multiply.outer(a[0], a[1]), onp.multiply.outer(e[0], e[1]))
    check(onp.add.accumulate(a, axis=0), onp.add.accumulate(e, axis=0))
    check(onp.matmul(a, a.T), onp.matmul(e, e.T))
    out = nf.zeros((3, 4), dtype="int32")
    r = onp.add(a, a, out=out)
    assert r is out
    check(out, e + e)
    check(e > a, e > e)
    check(nf.negative(a, where=e > 3, out=nf.zeros((3, 4), dtype="int32")),
          onp.negative(e, where=e > 3, out=onp.zeros((3, 4), dtype="int32")))


@pytest.mark.fallback
@pytest.mark.parametrize("mask_kind", ["numpy", "numfuse"])
def test_array_ufunc_where_array(mask_kind):
    a, e = pair((3, 4), "int32")
    m = e > 3
    mask = m if mask_kind == "numpy" else nf.array(m)
    check(onp.negative(a, where=mask, out=nf.zeros((3, 4), dtype="int32")),
          onp.negative(e, where=m, out=onp.zeros((3, 4), dtype="int32")))


BOOL_SCALAR_OPS = [
    ("eq", lambda x: x == True),  # noqa: E712
    ("ne", lambda x: x != False),  # noqa: E712
    ("and", lambda x: x & True),
    ("add", lambda x: x + True),
    ("maximum", lambda x, m=None: (nf if isinstance(x, nf.ndarray) else onp).maximum(x, False)),
]


@pytest.mark.parametrize("name,f", BOOL_SCALAR_OPS, ids=[n for n, _ in BOOL_SCALAR_OPS])
@pytest.mark.parametrize("dtype", ["bool", "int64"])
def test_python_bool_scalar_operand(name, f, dtype):
    a, e = pair((5,), dtype)
    check(f(a), f(e))


def test_python_int_and_float_scalar_operands():
    a, e = pair((5,), "bool")
    check(a == 1, e == 1)
    check(a * 2.5, e * 2.5)
    check(a + 1, e + 1)


@pytest.mark.fallback
def test_numpy_ufunc_out_numpy_array_with_numfuse_input():
    a, e = pair((4,), "float64")
    out = onp.zeros(4)
    onp.multiply(a, 2, out=out)
    onp.testing.assert_array_equal(out, e * 2)


@pytest.mark.fallback
def test_fallback_functions_values():
    x = rnd((4, 5), "int32", 33)
    a = nf.array(x)
    check(onp.cumsum(a), onp.cumsum(x))
    check(onp.cumsum(a, axis=1), onp.cumsum(x, axis=1))
    check(nf.cumsum(a, axis=0), onp.cumsum(x, axis=0))
    check(onp.sort(a, axis=1), onp.sort(x, axis=1))
    check(nf.sort(a.T), onp.sort(x.T))
    check(onp.unique(a), onp.unique(x))
    check(nf.unique(a), onp.unique(x))
    g, c = onp.unique(a, return_counts=True)
    ge, ce = onp.unique(x, return_counts=True)
    check(g, ge)
    check(c, ce)
    check(nf.argsort(a, axis=0, kind="stable"), onp.argsort(x, axis=0, kind="stable"))
    check(a.cumsum(), x.cumsum())
    check(nf.cumprod(a[:, :3] % 3 + 1, axis=1), onp.cumprod(x[:, :3] % 3 + 1, axis=1))
    b = nf.array(x)
    b.sort(axis=0)
    check(b, onp.sort(x, axis=0))
    nz = nf.nonzero(a)
    nze = onp.nonzero(x)
    for g, e in zip(nz, nze):
        assert_same(g, e)


@pytest.mark.fallback
def test_fallback_result_does_not_alias_later_writes():
    a, e = pair((5,), "int64")
    r = onp.sort(a[::-1])
    a[...] = 0
    check(r, onp.sort(e[::-1]))


def _run_fresh(code):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_fallback_warning_emitted_once_per_function():
    out = _run_fresh("""
        import warnings
        import numpy as onp
        import numfuse as nf
        x = onp.array([3, 1, 2, 3])
        a = nf.array(x)
        res = {}
        for name, f in [("packbits", lambda: onp.packbits(a)), ("trim_zeros", lambda: onp.trim_zeros(a)),
                        ("unpackbits", lambda: onp.unpackbits(a.astype(onp.uint8))),
                        ("nf.packbits", lambda: nf.packbits(a))]:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r1 = f()
                r2 = f()
            fw = [m for m in w if issubclass(m.category, nf.FallbackWarning)]
            res[name] = (len(fw), type(r1).__name__, onp.asarray(r1).tolist(), onp.asarray(r2).tolist())
        print(res)
    """)
    res = eval(out)
    x = onp.array([3, 1, 2, 3])
    packed = onp.packbits(x).tolist()
    assert res["packbits"] == (1, "ndarray", packed, packed)
    assert res["trim_zeros"] == (1, "ndarray", onp.trim_zeros(x).tolist(), onp.trim_zeros(x).tolist())
    unpacked = onp.unpackbits(x.astype(onp.uint8)).tolist()
    assert res["unpackbits"] == (1, "ndarray", unpacked, unpacked)
    # nf.packbits and numpy.packbits are the same function: already warned.
    assert res["nf.packbits"][0] == 0 and res["nf.packbits"][2] == packed


def test_fallback_warning_category():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nf._fallback._warned.discard("numpy.trim_zeros")
        r = onp.trim_zeros(nf.array([0, 2, 4, 5, 0]))
    assert any(issubclass(m.category, nf.FallbackWarning) for m in w)
    assert issubclass(nf.FallbackWarning, UserWarning)
    assert isinstance(r, nf.ndarray)
    assert onp.asarray(r).tolist() == [2, 4, 5]  # (trim_zeros: a view of the middle)


def test_unsupported_dtype_falls_back():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = nf.array([1, 2, 3], dtype="float16")
        e = onp.array([1, 2, 3], dtype="float16")
        assert_same(g, e)
        assert_same(nf.zeros(3, dtype="complex128") + 1j, onp.zeros(3, dtype="complex128") + 1j)
        assert_same(nf.arange(4).astype("float16") * 2, onp.arange(4).astype("float16") * 2)


# ---------------------------------------------------------------------------
# More discrepancies found while probing

@pytest.mark.parametrize("view", ["1d_step2", "2d_cols"])
def test_ravel_noncontiguous_is_copy(view):
    a0, e0 = pair((3, 4), "int64")
    f = {"1d_step2": lambda x: x.reshape(-1)[::2], "2d_cols": lambda x: x[:, ::2]}[view]
    r, re_ = nf.ravel(f(a0)), onp.ravel(f(e0))
    r[0] = 99
    re_[0] = 99
    check(a0, e0)


def test_reshape_copy_false_raises():
    a, e = pair((3, 4), "int64")
    with pytest.raises(ValueError):
        e.T.reshape(12, copy=False)
    with pytest.raises(ValueError):
        a.T.reshape(12, copy=False)


def test_reshape_copy_true_and_false_on_contiguous():
    a, e = pair((3, 4), "int64")
    r = a.reshape(12, copy=True)
    r[0] = 5
    check(a, e)
    check_view(a.reshape(4, 3, copy=False), e.reshape(4, 3, copy=False))


@pytest.mark.fallback
def test_arange_uint64_above_int64():
    check(nf.arange(2**63, 2**63 + 3, dtype="uint64"), onp.arange(2**63, 2**63 + 3, dtype="uint64"))


def test_arange_negative_into_unsigned_raises():
    with pytest.raises(OverflowError):
        onp.arange(-3, 3, dtype="uint8")
    with pytest.raises(OverflowError):
        nf.arange(-3, 3, dtype="uint8")


@pytest.mark.parametrize("f", ["zeros_like", "empty_like", "ones_like", "copyA"])
def test_like_and_copy_keep_layout(f):
    a, e = pair((3, 4), "int64")
    g = a.T.copy(order="A") if f == "copyA" else getattr(nf, f)(a.T)
    x = e.T.copy(order="A") if f == "copyA" else getattr(onp, f)(e.T)
    assert g.flags.f_contiguous == x.flags.f_contiguous
    assert tuple(g.strides) == x.strides


def test_concatenate_same_kind_casting_error():
    with pytest.raises(TypeError):
        onp.concatenate([onp.arange(3.0), onp.arange(2)], dtype="int64")
    with pytest.raises(TypeError):
        nf.concatenate([nf.arange(3.0), nf.arange(2)], dtype="int64")


@pytest.mark.fallback
def test_concatenate_unsafe_casting():
    check(nf.concatenate([nf.arange(3.5), nf.arange(2)], dtype="int64", casting="unsafe"),
          onp.concatenate([onp.arange(3.5), onp.arange(2)], dtype="int64", casting="unsafe"))


@pytest.mark.parametrize("dtype,lo,hi", [("uint8", -1, 3), ("int8", 0, 300)])
def test_clip_out_of_range_python_int_bounds(dtype, lo, hi):
    e = onp.arange(5, dtype=dtype)
    check(nf.clip(nf.array(e), lo, hi), onp.clip(e, lo, hi))


@pytest.mark.fallback
def test_round_bool_dtype():
    # NumPy rounds booleans in float16, a dtype numfuse does not compute in:
    # the fallback returns NumPy's float16 array.
    e = onp.array([True, False])
    r = nf.round(nf.array(e))
    assert isinstance(r, onp.ndarray) and r.dtype == onp.float16
    onp.testing.assert_array_equal(r, onp.round(e))


@pytest.mark.fallback
def test_eq_none_elementwise():
    a, e = pair((2, 3), "int64")
    check(a == None, e == None)  # noqa: E711


def test_int_negative_power_raises():
    with pytest.raises(ValueError):
        onp.arange(1, 3) ** -1
    with pytest.raises(ValueError):
        nf.arange(1, 3) ** -1


@pytest.mark.parametrize("tier", ["auto", "eager", "lazy"])
def test_arange_of_python_ints_every_length_and_sign(tier):
    """numpy.arange of Python ints (numfuse's C entry point, computed at the
    call when small): every length, empty and reversed ranges, large values."""
    cases = [(0,), (1,), (17,), (5000,), (-3,), (3, 3), (3, 2), (-7, 9), (9, -7, -2), (10, 0, -3), (0, 10, 4),
             (0, 10, -1), (-5, -1, 1), (2**61, 2**61 + 9, 3), (-(2**61), -(2**61) + 20, 7), (0, 4097), (1, 9000, 2)]
    with nf.config(tier=tier):
        for args in cases:
            got = nf.arange(*args)
            check(got, onp.arange(*args))
            assert got.flags["C_CONTIGUOUS"] and got.dtype == onp.int64


@pytest.mark.parametrize("tier", ["auto", "eager", "lazy"])
def test_fills_and_copies_of_contiguous_arrays(tier):
    """zeros / ones / full and copies of C-contiguous arrays (memset and
    memcpy when computed at the call) give NumPy's values for every type,
    around the size below which tier 0 computes them."""
    with nf.config(tier=tier):
        for dt in ALL_DTYPES:
            for shape in [(1,), (3, 5), (4096,), (4097,), (65, 64)]:
                check(nf.zeros(shape, dtype=dt), onp.zeros(shape, dtype=dt))
                check(nf.ones(shape, dtype=dt), onp.ones(shape, dtype=dt))
                value = -1.5 if onp.dtype(dt).kind == "f" else (True if dt == "bool" else 7)
                check(nf.full(shape, value, dtype=dt), onp.full(shape, value, dtype=dt))
                a = onp.arange(int(onp.prod(shape))).reshape(shape).astype(dt)
                x = nf.array(a)
                c = x.copy()
                check(c, a.copy())
                a[...] = 1
                x[...] = 1  # (after the copy was taken)
                check(c, onp.arange(int(onp.prod(shape))).reshape(shape).astype(dt))
                y = nf.empty(shape, dtype=dt)
                y[...] = x
                check(y, a)
        z = nf.full((3, 4), -0.0)
        assert onp.signbit(to_np(z)).all()
        n = nf.full(5, onp.nan, dtype="float32")
        assert onp.isnan(to_np(n)).all()

"""The array API standard's surface (spec 2024.12, as NumPy 2.4 has it),
checked against NumPy's own: the version and namespace entry points, the
inspection namespace, `device=` on every creation function NumPy gives one,
`to_device`, real signatures for the functions implemented in C, and the
array-API functions computed natively (a FallbackWarning fails a test,
conftest) with NumPy's values, shapes, dtypes and errors.

(array-api-tests, the standard's own suite, is not on PyPI, so it cannot run
in CI; these are its checks for what numfuse adds to NumPy's namespace.)"""

import inspect
import pickle
import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001
        return ("raise", type(e), str(e))


RAISED = object()


def same_outcome(got_fn, exp_fn, message=True):
    """Both raise the same exception type with the same message (RAISED,
    RAISED), or both return: (numfuse's result, NumPy's). Both warn the
    same categories of warnings."""
    with warnings.catch_warnings(record=True) as gw:
        warnings.simplefilter("always")
        g = outcome(got_fn)
    with warnings.catch_warnings(record=True) as ew:
        warnings.simplefilter("always")
        e = outcome(exp_fn)
    assert g[0] == e[0], f"numfuse {g}, NumPy {e}"
    assert {w.category for w in gw} == {w.category for w in ew}, (
        f"numfuse warned {[str(w.message) for w in gw]}, NumPy {[str(w.message) for w in ew]}")
    if e[0] == "raise":
        assert g[1:] == e[1:] if message else g[1] == e[1], f"numfuse {g}, NumPy {e}"
        return RAISED, RAISED
    return g[1], e[1]


# -- version, namespace, inspection namespace -------------------------------------------

def test_api_version_is_numpys():
    assert nf.__array_api_version__ == onp.__array_api_version__ == "2024.12"


@pytest.mark.parametrize("version", [None, "2021.12", "2022.12", "2023.12", "2024.12", "2025.12", "2024", "",
                                     1, 2024.12, b"2024.12"])
def test_array_namespace_versions_as_numpy(version):
    x, y = nf.ones(3), onp.ones(3)
    got, exp = same_outcome(lambda: x.__array_namespace__(api_version=version),
                            lambda: y.__array_namespace__(api_version=version))
    if exp is onp:
        assert got is nf


def test_array_namespace_of_views_scalars_and_results():
    x = nf.arange(6.0).reshape(2, 3)
    for a in (x, x.T, x[1:], x + 1, x.sum(axis=0), nf.asarray(2.5)):
        assert a.__array_namespace__() is nf
    with pytest.raises(TypeError):
        x.__array_namespace__("2024.12")  # keyword-only, as NumPy's
    assert str(inspect.signature(nf.ndarray.__array_namespace__)).endswith("*, api_version=None)")


def test_namespace_info_equals_numpys():
    info, ninfo = nf.__array_namespace_info__(), onp.__array_namespace_info__()
    assert type(info).__module__ == "numfuse"
    assert info.capabilities() == ninfo.capabilities()
    assert info.default_device() == ninfo.default_device() == "cpu"
    assert info.devices() == ninfo.devices()
    for device in (None, "cpu"):
        assert info.default_dtypes(device=device) == ninfo.default_dtypes(device=device)
        assert info.dtypes(device=device) == ninfo.dtypes(device=device)
    kinds = [None, "bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
             "numeric", ("integral", "bool"), ("real floating", "complex floating"), (), "bogus", ("bool", "x"),
             ["bool"], 1]
    for kind in kinds:
        got, exp = same_outcome(lambda: info.dtypes(kind=kind), lambda: ninfo.dtypes(kind=kind))
        if isinstance(exp, dict):
            assert list(got) == list(exp) and got == exp, kind
            assert all(isinstance(v, onp.dtype) for v in got.values())
    for device in ("gpu", 0, "cuda"):
        same_outcome(lambda: info.dtypes(device=device), lambda: ninfo.dtypes(device=device))
        same_outcome(lambda: info.default_dtypes(device=device), lambda: ninfo.default_dtypes(device=device))
    for name in ("capabilities", "default_device", "default_dtypes", "devices", "dtypes"):
        assert inspect.signature(getattr(info, name)) == inspect.signature(getattr(ninfo, name)), name


def test_every_dtype_the_info_lists_makes_arrays():
    for name, dt in nf.__array_namespace_info__().dtypes().items():
        a = nf.zeros(3, dtype=dt)
        assert type(a) is nf.ndarray and a.dtype == dt, name  # (a NumPy fallback would warn: conftest)


# -- devices --------------------------------------------------------------------------

X = onp.arange(6.0).reshape(2, 3)
# Arguments for each creation function NumPy gives a `device` keyword.
DEVICE_CALLS = {
    "empty": ((3,), {}),
    "zeros": (((2, 3),), {"dtype": onp.int32}),
    "ones": ((4,), {}),
    "full": ((3,), {"fill_value": 2.5}),
    "asarray": (([1.0, 2.0],), {}),
    "asanyarray": (([1, 2],), {}),
    "arange": ((5,), {}),
    "linspace": ((0.0, 1.0, 5), {}),
    "eye": ((3,), {"k": 1}),
    "empty_like": ((X,), {}),
    "zeros_like": ((X,), {}),
    "ones_like": ((X,), {"dtype": onp.float32}),
    "full_like": ((X, 7), {}),
    "astype": ((X, onp.int64), {}),
}


def test_device_calls_cover_every_numpy_function_with_device():
    numpy_device = set()
    for name in dir(onp):
        try:
            sig = inspect.signature(getattr(onp, name))
        except (TypeError, ValueError):
            continue
        if "device" in sig.parameters:
            numpy_device.add(name)
    assert numpy_device - {"from_dlpack"} == set(DEVICE_CALLS), "a NumPy function with device= is not tested"
    for name in numpy_device:
        assert "device" in inspect.signature(getattr(nf, name)).parameters, name


def _args(args, mod):
    return tuple(mod.asarray(a) if isinstance(a, onp.ndarray) else a for a in args)


@pytest.mark.parametrize("name", sorted(DEVICE_CALLS))
@pytest.mark.parametrize("device", ["cpu", None])
def test_device_cpu_is_accepted(name, device):
    args, kw = DEVICE_CALLS[name]
    got = getattr(nf, name)(*_args(args, nf), device=device, **kw)
    exp = getattr(onp, name)(*args, device=device, **kw)
    assert type(got) is nf.ndarray and got.device == "cpu"
    if name not in ("empty", "empty_like"):
        assert_same(got, exp)
    assert got.shape == exp.shape and got.dtype == exp.dtype


@pytest.mark.parametrize("name", sorted(DEVICE_CALLS))
@pytest.mark.parametrize("device", ["gpu", "cuda", "CPU", 0, 1.5])
def test_other_devices_raise_numpys_error(name, device):
    args, kw = DEVICE_CALLS[name]
    same_outcome(lambda: getattr(nf, name)(*_args(args, nf), device=device, **kw),
                 lambda: getattr(onp, name)(*args, device=device, **kw))


def test_bad_device_raises_before_anything_is_recorded():
    x = nf.arange(4.0)
    y = x * 2
    with pytest.raises(ValueError, match="Device not understood"):
        nf.full(3, 1.0, device="gpu")
    assert_same(y, onp.arange(4.0) * 2)  # (earlier results intact)


def test_device_attribute_and_to_device():
    x = nf.arange(6.0).reshape(2, 3)
    y = onp.arange(6.0).reshape(2, 3)
    assert x.device == y.device == "cpu"
    assert x.T.device == "cpu" and (x + 1).device == "cpu"
    assert x.to_device("cpu") is x
    assert x.to_device("cpu", stream=None) is x
    for call in (lambda a: a.to_device("gpu"), lambda a: a.to_device("cpu", stream=0),
                 lambda a: a.to_device("gpu", stream=1), lambda a: a.to_device(None), lambda a: a.to_device(3)):
        same_outcome(lambda: call(x), lambda: call(y))
    for call in (lambda a: a.to_device(device="cpu"), lambda a: a.to_device()):  # (Python's own binding errors)
        same_outcome(lambda: call(x), lambda: call(y), message=False)
    assert (inspect.signature(nf.ndarray.to_device).parameters.keys()
            == {"self", "device", "stream"})


# -- signatures -----------------------------------------------------------------------

C_FUNCTIONS = ["sum", "prod", "max", "min", "amax", "amin", "any", "all", "argmax", "argmin", "dot", "empty",
               "zeros", "ones", "empty_like", "zeros_like", "ones_like", "arange"]
ARRAY_API_FUNCTIONS = ["unique_all", "unique_counts", "unique_inverse", "unique_values", "isdtype", "vecdot",
                       "matrix_transpose", "permute_dims", "full", "asarray", "linspace", "eye", "full_like",
                       "astype", "concat", "concatenate", "reshape", "where", "bincount", "percentile", "quantile",
                       "nanpercentile", "nanquantile", "matvec", "vecmat"]
LINALG_FUNCTIONS = ["cross", "diagonal", "matrix_norm", "matrix_transpose", "outer", "trace", "vecdot",
                    "vector_norm", "svdvals"]


def _shape_of(sig):
    return [(p.name, p.kind) for p in sig.parameters.values()]


@pytest.mark.parametrize("name", C_FUNCTIONS + ARRAY_API_FUNCTIONS)
def test_signature_is_numpys(name):
    got = inspect.signature(getattr(nf, name))
    exp = inspect.signature(getattr(onp, name))
    assert _shape_of(got) == _shape_of(exp), f"{name}{got} != {name}{exp}"


@pytest.mark.parametrize("name", LINALG_FUNCTIONS)
def test_linalg_signature_is_numpys(name):
    got = inspect.signature(getattr(nf.linalg, name))
    exp = inspect.signature(getattr(onp.linalg, name))
    assert _shape_of(got) == _shape_of(exp), f"{name}{got} != {name}{exp}"


@pytest.mark.parametrize("call", [
    "M.reshape(M.arange(6), newshape=(2, 3))",  # (removed in NumPy 2.4)
    "M.percentile(M.arange(6.0), 50, interpolation='linear')",
    "M.quantile(M.arange(6.0), 0.5, interpolation='linear')",
    "M.where(condition=M.arange(3) > 0, x=1, y=2)",
    "M.bincount(x=M.arange(3))",
    "M.concatenate(arrays=[M.ones(2)])",
    "M.reshape(M.arange(6))",
])
def test_calls_numpy_refuses_are_refused(call):
    got = outcome(lambda: eval(call.replace("M.", "nf.")))
    exp = outcome(lambda: eval(call.replace("M.", "onp.")))
    assert got[0] == exp[0] == "raise" and got[1] is exp[1], (got, exp)


def test_every_public_function_has_a_signature():
    missing = []
    for mod, nmod in ((nf, onp), (nf.linalg, onp.linalg), (nf.fft, onp.fft), (nf.random, onp.random)):
        for name in dir(nmod):
            f = getattr(mod, name, None) if not name.startswith("_") else None
            if not callable(f) or isinstance(f, (type, onp.ufunc, nf.ufunc)):
                continue
            try:
                inspect.signature(getattr(nmod, name))
            except (TypeError, ValueError):
                continue  # (NumPy has none either)
            try:
                inspect.signature(f)
            except (TypeError, ValueError):
                missing.append(f"{mod.__name__}.{name}")
    assert not missing, missing


def test_methods_have_numpys_signatures():
    """The methods implemented in C too (their text signatures are NumPy's)."""
    for name in dir(onp.ndarray):
        if name.startswith("_") and name not in ("__array_namespace__", "__array_ufunc__"):
            continue
        exp_m, got_m = getattr(onp.ndarray, name), getattr(nf.ndarray, name, None)
        if got_m is None or not callable(exp_m):
            continue
        try:
            exp = inspect.signature(exp_m)
        except (TypeError, ValueError):
            continue
        got = inspect.signature(got_m)  # (raises if numfuse has none)
        if name in ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "copy", "astype", "reshape",
                    "item", "tolist", "to_device", "__array_namespace__"):
            assert [p.name for p in got.parameters.values()] == [p.name for p in exp.parameters.values()], name


def test_c_functions_keep_their_behaviour():
    """The C entry points are objects of numfuse's own type now: named,
    documented, pickled by reference, called as before."""
    x = nf.arange(12.0).reshape(3, 4)
    for name in C_FUNCTIONS:
        f = getattr(nf, name)
        assert type(f).__name__ == "function" and f.__module__ == "numfuse"
        assert f.__name__ == ("max" if name == "amax" else "min" if name == "amin" else name)
        assert f.__doc__ and repr(f) == f"<function numfuse.{f.__name__}>"
        assert pickle.loads(pickle.dumps(f)) is f
    assert_same(nf.sum(x, axis=1), onp.arange(12.0).reshape(3, 4).sum(axis=1))
    assert_same(nf.argmax(x, 0, keepdims=True), onp.argmax(onp.arange(12.0).reshape(3, 4), 0, keepdims=True))
    assert_same(nf.zeros((2, 2), "f4", "F"), onp.zeros((2, 2), "f4", "F"))
    assert_same(nf.arange(1, 10, 3), onp.arange(1, 10, 3))
    assert_same(nf.arange(start=2, stop=7, step=2, dtype=nf.float32), onp.arange(2, 7, 2, dtype=onp.float32))
    assert_same(nf.dot(x, x.T), onp.dot(onp.arange(12.0).reshape(3, 4), onp.arange(12.0).reshape(3, 4).T))
    with pytest.raises(TypeError):
        nf.zeros(3, bogus=1)


# -- native array-API functions ---------------------------------------------------------

UNIQUE_INPUTS = [
    onp.array([3, 1, 2, 3, 7, 5, 5, 0, -4]),
    onp.array([[3, 1], [2, 3]], dtype=onp.int8),
    onp.array([3.0, onp.nan, 1.0, onp.nan, -0.0, 0.0]),
    onp.array([2.5, 2.5, 1.0], dtype=onp.float32),
    onp.array([True, False, True]),
    onp.array([1 + 2j, 1 + 2j, 0j]),
    onp.zeros((0,), dtype=onp.int64),
    onp.zeros((2, 0)),
    onp.array(7),
    onp.arange(24).reshape(2, 3, 4) % 5,
]


@pytest.mark.parametrize("i", range(len(UNIQUE_INPUTS)))
@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse"])
def test_unique_forms_as_numpy(name, i):
    x = UNIQUE_INPUTS[i]
    got, exp = getattr(nf, name)(nf.asarray(x)), getattr(onp, name)(x)
    assert type(got).__name__ == type(exp).__name__ and got._fields == exp._fields
    assert type(got).__module__ == "numfuse"
    for field in exp._fields:
        g, e = getattr(got, field), getattr(exp, field)
        assert type(g) is nf.ndarray, field
        assert_same(g, e)


@pytest.mark.parametrize("i", range(len(UNIQUE_INPUTS)))
def test_unique_values_as_numpy(i):
    """NumPy 2.4's unique_values hashes integers, bools and complex numbers
    (its order "may vary" but is its hash set's): numfuse gives that order."""
    x = UNIQUE_INPUTS[i]
    y = nf.asarray(x)
    got, exp = nf.unique_values(y.copy()), onp.unique_values(x)  # (a pending input)
    assert type(got) is nf.ndarray
    assert_same(got, exp)


def test_unique_accepts_array_likes():
    assert_same(nf.unique_counts([2, 1, 2]).counts, onp.unique_counts([2, 1, 2]).counts)


def test_isdtype_as_numpy():
    kinds = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
             "numeric", ("integral", "real floating"), nf.float32, onp.int8]
    for dt in (nf.bool, nf.int8, nf.uint64, nf.float32, nf.float64, nf.complex64, nf.dtype("int16")):
        for kind in kinds:
            assert nf.isdtype(dt, kind) == onp.isdtype(dt, kind)
    for bad in ((nf.float64, "bogus"), ("f8", "numeric"), (nf.float64, 1)):
        same_outcome(lambda: nf.isdtype(*bad), lambda: onp.isdtype(*bad))


NORM_INPUTS = [
    onp.array([3.0, -4.0, 0.0, 12.0]),
    onp.array([[1.5, -2.0, 0.0], [4.0, 0.25, -8.0]]),
    onp.arange(24, dtype=onp.float32).reshape(2, 3, 4) - 11,
    onp.array([[1, -2], [3, 4]]),
    onp.array([[1 + 1j, -2j], [3, 4 - 1j]]),
    onp.zeros((0, 3)),
]
VECTOR_ORDS = [2, 1, 0, onp.inf, -onp.inf, 3, -1.5, 0.5]


@pytest.mark.parametrize("i", range(len(NORM_INPUTS)))
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm_as_numpy(i, ord):
    x = NORM_INPUTS[i]
    axes = [None, -1, 0] + ([(0, 1), (-1, 0)] if x.ndim >= 2 else [])
    for axis in axes:
        for keepdims in (False, True):
            kw = dict(axis=axis, keepdims=keepdims, ord=ord)
            got, exp = same_outcome(lambda: nf.linalg.vector_norm(nf.asarray(x), **kw),
                                    lambda: onp.linalg.vector_norm(x, **kw))
            if exp is not RAISED:
                assert_same(got, exp, rtol=2e-6 if exp.dtype == onp.float32 else 1e-13)


MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, onp.inf, -onp.inf, 3, "bogus"]


@pytest.mark.parametrize("i", range(len(NORM_INPUTS)))
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm_as_numpy(i, ord):
    x = NORM_INPUTS[i]
    for keepdims in (False, True):
        got, exp = same_outcome(lambda: nf.linalg.matrix_norm(nf.asarray(x), ord=ord, keepdims=keepdims),
                                lambda: onp.linalg.matrix_norm(x, ord=ord, keepdims=keepdims))
        if exp is not RAISED:
            assert_same(got, exp, rtol=2e-6 if exp.dtype == onp.float32 else 1e-13)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, onp.inf, -onp.inf, 0, 3, "f"])
def test_norm_every_order_as_numpy(ord):
    for x in NORM_INPUTS[:5]:
        for axis in (None, 0, -1, (0, 1), (1, 0), (0, 0)):
            if x.ndim < 2 and isinstance(axis, tuple):
                continue
            got, exp = same_outcome(lambda: nf.linalg.norm(nf.asarray(x), ord=ord, axis=axis),
                                    lambda: onp.linalg.norm(x, ord=ord, axis=axis))
            if exp is not RAISED:
                assert_same(got, exp, rtol=2e-6 if onp.asarray(exp).dtype == onp.float32 else 1e-13)


def test_linalg_vector_functions_as_numpy():
    a = onp.arange(24.0).reshape(2, 3, 4) - 7
    b = onp.arange(12.0).reshape(4, 3)
    c = onp.array([[1 + 2j, 3, -1j], [2, 0.5j, 1]])
    cases = [
        ("matrix_transpose", (a,), {}), ("matrix_transpose", (b,), {}), ("matrix_transpose", (onp.ones(3),), {}),
        ("diagonal", (a,), {}), ("diagonal", (a,), {"offset": 1}), ("diagonal", (b,), {"offset": -2}),
        ("trace", (a,), {}), ("trace", (b,), {"offset": 1}), ("trace", (b.astype(onp.int32),), {"dtype": onp.int8}),
        ("vecdot", (a, a), {}), ("vecdot", (b, b), {"axis": 0}), ("vecdot", (c, c), {}),
        ("vecdot", (a, b), {}),
        ("cross", (b[:, :3], b[::-1, :3]), {}), ("cross", (b.T, b.T), {"axis": 0}), ("cross", (c, c[::-1]), {}),
        ("cross", (a, a), {}), ("cross", (a[..., :2], a[..., :2]), {}),
        ("outer", (onp.arange(3.0), onp.arange(4)), {}), ("outer", (b, b), {}),
    ]
    for name, args, kw in cases:
        got, exp = same_outcome(lambda: getattr(nf.linalg, name)(*[nf.asarray(x) for x in args], **kw),
                                lambda: getattr(onp.linalg, name)(*args, **kw))
        if exp is not RAISED:
            assert type(got) in (nf.ndarray,) or onp.isscalar(got), name
            assert_same(got, exp)


def test_top_level_outer_still_flattens():
    a, b = onp.arange(4.0).reshape(2, 2), onp.array([1, -1])
    assert_same(nf.outer(nf.asarray(a), nf.asarray(b)), onp.outer(a, b))
    assert nf.outer.__name__ == "outer"


def test_norm_of_strided_vectors_is_numpys_to_the_bit():
    """NumPy's 2-norm of a vector ravels it (a copy when strided) and takes
    BLAS's dot of the contiguous copy: a strided dot sums in another order."""
    from conftest import same_bits

    rng = onp.random.default_rng(5)
    q = rng.random((300, 40)) * 1e3
    Q = nf.asarray(q)
    for k in range(40):
        same_bits(onp.asarray(nf.linalg.norm(Q[:, k])), onp.asarray(onp.linalg.norm(q[:, k])))
        same_bits(onp.asarray(nf.linalg.norm(Q[::-3, k])), onp.asarray(onp.linalg.norm(q[::-3, k])))
    same_bits(onp.asarray(nf.linalg.norm(Q[:, 1:3])), onp.asarray(onp.linalg.norm(q[:, 1:3])))


# --------------------------------------------------------------------------
# Hypothesis's array-API strategies (hypothesis.extra.array_api) take numfuse
# as a namespace -- make_strategies_namespace checks the namespace's surface
# (version, dtypes, finfo/iinfo, the creation functions it builds arrays
# with) -- and the arrays they build through numfuse's own functions, with
# NaN, infinities, signed zeros and subnormals among the values, give NumPy's
# bits under the standard's exact elementwise functions and reductions.
# (The data-apis/array-api-tests suite itself is not on PyPI.)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import array_api as _hxa  # noqa: E402

from conftest import same_bits  # noqa: E402

XPS = _hxa.make_strategies_namespace(nf)

_EXACT_UNARY = ["abs", "negative", "positive", "square", "sqrt", "floor", "ceil", "trunc", "round", "sign",
                "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_invert"]
_EXACT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "not_equal", "less",
                 "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "bitwise_and",
                 "bitwise_or", "bitwise_xor", "copysign", "nextafter", "hypot"]
_REDUCTIONS = ["max", "min", "any", "all", "cumulative_sum", "argmax", "argmin", "sort", "argsort"]


def test_hypothesis_accepts_numfuse_as_an_array_api_namespace():
    assert XPS.api_version == nf.__array_api_version__


def _np_call(name, *args):
    fn = getattr(onp, name)
    with onp.errstate(all="ignore"):
        return fn(*args)


def _outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", fn())
        except Exception as e:  # noqa: BLE001 - compared with NumPy's
            return ("raise", type(e))


def _compare(got, exp, what):
    assert got[0] == exp[0], f"{what}: numfuse {got}, NumPy {exp}"
    if exp[0] == "raise":
        assert got[1] is exp[1] or issubclass(got[1], exp[1]), f"{what}: {got[1]} vs {exp[1]}"
    else:
        same_bits(got[1], exp[1])


_shapes = XPS.array_shapes(min_dims=0, max_dims=3, max_side=5)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), name=st.sampled_from(_EXACT_UNARY))
def test_array_api_strategy_unary(data, name):
    x = data.draw(XPS.arrays(dtype=XPS.scalar_dtypes(), shape=_shapes), label="x")
    xn = onp.asarray(x)
    _compare(_outcome(lambda: getattr(nf, name)(x)), _outcome(lambda: _np_call(name, xn)), f"{name}({xn!r})")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), name=st.sampled_from(_EXACT_BINARY))
def test_array_api_strategy_binary(data, name):
    shape = data.draw(_shapes, label="shape")
    dt = data.draw(XPS.scalar_dtypes(), label="dtype")
    x = data.draw(XPS.arrays(dtype=dt, shape=shape), label="x")
    y = data.draw(XPS.arrays(dtype=data.draw(st.sampled_from([dt, nf.float64, nf.int32]), label="dt2"),
                             shape=shape[data.draw(st.integers(0, len(shape)), label="drop"):]), label="y")
    xn, yn = onp.asarray(x), onp.asarray(y)
    _compare(_outcome(lambda: getattr(nf, name)(x, y)), _outcome(lambda: _np_call(name, xn, yn)),
             f"{name}({xn!r}, {yn!r})")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), name=st.sampled_from(_REDUCTIONS))
def test_array_api_strategy_reductions(data, name):
    x = data.draw(XPS.arrays(dtype=XPS.real_dtypes(), shape=XPS.array_shapes(min_dims=1, max_dims=3, max_side=5)),
                  label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    xn = onp.asarray(x)
    kw = {"axis": axis}
    if name in ("sort", "argsort"):
        kw["stable"] = True
    _compare(_outcome(lambda: getattr(nf, name)(x, **kw)), _outcome(lambda: _np_call_kw(name, xn, kw)),
             f"{name}({xn!r}, axis={axis})")


def _np_call_kw(name, x, kw):
    with onp.errstate(all="ignore"):
        return getattr(onp, name)(x, **kw)

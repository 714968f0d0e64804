"""Shared helpers for the differential tests: numfuse against NumPy."""

import functools
import warnings

import numpy as onp
import pytest

import numfuse as nf

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
              "float64"]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float32", "float64"]


def to_np(x):
    """A NumPy value for a numfuse (or NumPy / Python) value."""
    if isinstance(x, nf.ndarray):
        return onp.asarray(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_np(v) for v in x)
    return x


def sum_rtol():
    """The rtol a test that checks NumPy's float sums to the bit passes: 0 on
    the CPU, whose sums are NumPy's pairwise sums; on a GPU target a block's
    threads reassociate them (README: GPU schedules), within NumPy's bound."""
    return 0 if nf.get_target() == "cpu" else None


def assert_same(got, expected, rtol=None, atol=0.0, check_dtype=True):
    """numfuse result `got` equals NumPy result `expected`: same type of
    container, shape, dtype, and values (exactly for integers/bools, to rtol
    for floats; NaNs must match NaNs)."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e, rtol, atol, check_dtype)
        return
    g = to_np(got)
    e = onp.asarray(expected)
    g = onp.asarray(g)
    assert g.shape == e.shape, f"shape {g.shape} != {e.shape}"
    if check_dtype:
        assert g.dtype == e.dtype, f"dtype {g.dtype} != {e.dtype}"
    if e.dtype.kind == "f":
        if rtol is None:
            rtol = 1e-5 if e.dtype == onp.float32 else 1e-12
        onp.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    else:
        onp.testing.assert_array_equal(g, e)


def same_bits(got, expected):
    """Equal bit for bit: same dtype and shape; floats equal with the same
    sign of zero, NaN where NaN (any NaN matches any NaN); complex numbers
    part by part; other dtypes equal."""
    g, e = onp.asarray(got), onp.asarray(expected)
    assert g.dtype == e.dtype and g.shape == e.shape, f"{g.dtype}{g.shape} != {e.dtype}{e.shape}"
    if e.dtype.kind == "c":
        same_bits(g.real, e.real)
        same_bits(g.imag, e.imag)
        return
    if e.dtype.kind != "f":
        onp.testing.assert_array_equal(g, e)
        return
    nan = onp.isnan(e)
    assert (onp.isnan(g) == nan).all(), "NaN where NumPy has none, or none where it has one"
    bits = onp.dtype(f"u{e.dtype.itemsize}")
    bad = (g.view(bits) != e.view(bits)) & ~nan
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} differ, e.g. got {g[bad][:4]!r} "
                           f"expected {e[bad][:4]!r}")


def outcome(fn):
    """("ok", the result as a NumPy array) or ("raise", exception class,
    message) for fn(); warnings are ignored (errstate decides what raises)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", onp.asarray(fn()))
        except Exception as e:  # noqa: BLE001
            return ("raise", type(e), str(e))


def assert_same_outcome(got, exp, what):
    """Both raised the same exception with the same message, or both gave the same bits."""
    assert got[0] == exp[0], f"{what}: numfuse {got}, NumPy {exp}"
    if exp[0] == "raise":
        assert got[1:] == exp[1:], f"{what}: numfuse {got}, NumPy {exp}"
    else:
        same_bits(got[1], exp[1])


@pytest.fixture(autouse=True)
def _fallbacks_are_errors(request):
    """A silent fallback to NumPy is not a pass for a native feature: a
    FallbackWarning fails the test unless the test is marked
    ``@pytest.mark.fallback`` (it exercises a fallback on purpose). Every test
    starts with numfuse's once-per-function record cleared, so a fallback is
    seen by each test that reaches it, whatever ran before."""
    from numfuse import _fallback

    _fallback._warned.clear()
    with warnings.catch_warnings():
        allowed = request.node.get_closest_marker("fallback") is not None
        warnings.simplefilter("ignore" if allowed else "error", nf.FallbackWarning)
        yield


def pytest_addoption(parser):
    parser.addoption("--tier", default=None, choices=["auto", "eager", "lazy"],
                     help="where numfuse runs operations in tests that do not choose (default: numfuse's "
                          "default, or NUMFUSE_TIER): auto, eager (tier 0 whenever inputs are computed) or "
                          "lazy (always recorded, fused and compiled)")
    parser.addoption("--target", default=None, choices=["cpu", "cuda", "cuda-emulated"],
                     help="the target kernels are compiled for (default: numfuse's, or NUMFUSE_TARGET); "
                          "cuda-emulated runs the CUDA target's kernels on the emulated device")
    parser.addoption("--cuda-check", default="", metavar="ARCHS",
                     help="with a CUDA target: also compile every kernel with NVRTC for these architectures "
                          "(comma-separated, e.g. 80,90) and fail on an error or a register spill")


def pytest_configure(config):
    config.addinivalue_line("markers", "fallback: the test exercises a NumPy fallback on purpose "
                                       "(FallbackWarning is allowed; elsewhere it fails the test)")
    config.addinivalue_line("markers", "cpu_only: the test is about the CPU target's own kernels (multi-stage "
                                       "kernels, its schedules, its generated C): it runs on the CPU target "
                                       "whatever --target says")
    tier = config.getoption("--tier")
    if tier:
        nf.set_option("tier", tier)
    archs = [int(a) for a in config.getoption("--cuda-check").split(",") if a.strip()]
    if archs:
        nf._core.set_cuda_check(archs)
    target = config.getoption("--target")
    if target:
        nf.set_target(target)


def pytest_sessionfinish(session):
    # A pytest-xdist worker hands its NVRTC check counts to the controller.
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["numfuse_cuda_check"] = dict(nf._core.cuda_check_stats())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    s = getattr(node, "workeroutput", {}).get("numfuse_cuda_check")
    if s is not None:
        node.config.__dict__.setdefault("_numfuse_cuda_checks", []).append(s)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if nf.get_target() != "cpu" or config.getoption("--target"):
        # This process's counts, or with pytest-xdist its workers' together.
        parts = config.__dict__.get("_numfuse_cuda_checks") or [nf._core.cuda_check_stats()]
        s = {k: sum(p[k] for p in parts) for k in ("kernels", "compiles")}
        s.update({k: max(p[k] for p in parts) for k in ("max_registers", "max_spill_bytes", "max_shared_bytes")})
        s["archs"] = sorted({a for p in parts for a in p["archs"]})
        terminalreporter.write_line(
            f"numfuse target {nf.get_target()}: {s['kernels']} kernels compiled by NVRTC for sm_"
            f"{', sm_'.join(map(str, s['archs'])) or '-'} ({s['compiles']} compiles; most registers "
            f"{s['max_registers']}, most spill bytes {s['max_spill_bytes']}, most shared memory {s['max_shared_bytes']} bytes)")


@pytest.fixture(autouse=True)
def _target_of_the_test(request):
    """Tests marked cpu_only run on the CPU target."""
    if request.node.get_closest_marker("cpu_only") is None or nf.get_target() == "cpu":
        yield
        return
    with nf.config(target="cpu"):
        yield


# The three ways numfuse computes: tier 0 at once (the interpreter), and the
# recorded window compiled with and without fusion.
TIERS = {"eager": dict(tier="eager"), "fused": dict(tier="lazy", fusion=True),
         "unfused": dict(tier="lazy", fusion=False)}


@pytest.fixture(params=list(TIERS))
def fusion(request):
    """Run a test on every tier: tier 0 (eager), fused kernels, unfused kernels."""
    with nf.config(**TIERS[request.param]):
        yield request.param


@pytest.fixture
def lazy():
    """For tests of the recorded path itself (fusion, memo, caches, explain):
    every operation is recorded, whatever its size."""
    with nf.config(tier="lazy"):
        yield


def assert_result_kind(got, expected):
    """numfuse returns what NumPy returns: an array where NumPy gives an
    array; where NumPy gives a scalar (a full reduction, a ufunc of 0-d
    operands, a vector dot product), the same NumPy scalar when the value was
    computed at once (tier 0), or a 0-d numfuse array holding the pending
    value (the recorded tiers)."""
    if isinstance(expected, onp.generic):
        tier = nf.get_option("tier")
        if isinstance(got, nf.ndarray):
            assert tier != "eager", f"tier 0 computed a 0-d array {got!r} where NumPy gives {type(expected)}"
            assert got.ndim == 0, f"expected a 0-d array standing for a scalar, got shape {got.shape}"
        else:  # (also from the recorded tiers: a value NumPy's fallback computed)
            assert type(got) is type(expected), f"expected {type(expected)}, got {type(got)}"
    else:
        assert isinstance(got, nf.ndarray), f"expected a numfuse array, got {type(got)}"


def raises_like(fn_np, fn_nf):
    """Both raise: the same exception type and message."""
    with pytest.raises(Exception) as e_np:
        fn_np()
    with pytest.raises(type(e_np.value)) as e_nf:
        fn_nf()
    assert type(e_nf.value) is type(e_np.value)
    assert str(e_nf.value) == str(e_np.value)


def lazy_tier(fn):
    """Decorator form of the `lazy` fixture (for hypothesis tests)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with nf.config(tier="lazy"):
            return fn(*args, **kwargs)
    return run

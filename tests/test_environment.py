"""numfuse as a citizen of the ecosystem: its configuration report and
NumPy's random Generator API."""

import io
import contextlib
import os

import numpy as onp
import pytest

import numfuse as nf


def test_show_config_describes_numfuse():
    info = nf.show_config(mode="dicts")
    assert info["numfuse"]["version"] == nf.__version__
    c = info["Compiler"]
    assert c["llvm version"].startswith("19.")
    assert c["target triple"] and c["target cpu"]
    assert "sse2" in c["cpu features"] or not c["target triple"].startswith("x86_64")
    assert c["tier-0 loops"] == nf._core.tier0_isa()
    r = info["Runtime"]
    assert r["threads"] == nf.get_option("threads")
    assert r["kernel cache"]["directory"] == nf._core.cache_info()["directory"]
    assert info["Python Information"]["numpy"] == onp.__version__
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert nf.show_config() is None
    text = out.getvalue()
    assert "numfuse:" in text and c["llvm version"] in text and c["target cpu"] in text
    with pytest.raises(AttributeError):
        nf.show_config(mode="json")


def test_numfuse_checks_turns_the_cores_checks_on_at_load():
    # NUMFUSE_CHECKS (src/core/checks.h) is read when the core loads; `make
    # check-test` runs the suite so. show_config reports it.
    import subprocess
    import sys
    prog = ("import numfuse as nf, numpy as onp; a = nf.arange(10.0); b = (a * 2 + 1).sum(); "
            "assert float(b) == float((onp.arange(10.0) * 2 + 1).sum()); "
            "print(nf._core.checks_on(), nf.show_config(mode='dicts')['Runtime']['checks'])")
    seen = {}
    for value in ["1", "0", ""]:
        env = dict(os.environ, NUMFUSE_CHECKS=value)
        r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, check=True)
        seen[value] = r.stdout.split()
    assert seen["1"] == ["True", "True"] and seen["0"] == ["False", "False"]
    assert seen[""] == seen["0"]  # unset or empty: off (the core is built with NDEBUG)
    was = nf._core.checks_on()
    try:
        nf._core.set_checks(not was)
        assert nf._core.checks_on() is (not was)
        assert nf.show_config(mode="dicts")["Runtime"]["checks"] is (not was)
    finally:
        nf._core.set_checks(was)


def test_generator_takes_a_bit_generator_like_numpys():
    g = nf.random.Generator(nf.random.PCG64(1))
    want = onp.random.Generator(onp.random.PCG64(1))
    a = g.random((2, 3))
    assert type(a) is nf.ndarray and a.tolist() == want.random((2, 3)).tolist()
    assert g.integers(0, 10, 5).tolist() == want.integers(0, 10, 5).tolist()
    assert nf.random.default_rng(g) is g
    assert nf.random.default_rng(5).standard_normal(4).tolist() == onp.random.default_rng(5).standard_normal(4).tolist()
    assert isinstance(g.bit_generator, onp.random.PCG64)
    with pytest.raises(type(_numpy_error(lambda: onp.random.Generator(123)))):
        nf.random.Generator(123)


def _numpy_error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (the type NumPy raises)
        return e
    raise AssertionError("NumPy accepted it")


def test_an_unmarked_fallback_fails_the_test():
    """The suite's guard (conftest): a NumPy fallback in a test not marked
    `fallback` raises, so a native feature cannot pass silently through NumPy."""
    with pytest.raises(nf.FallbackWarning, match="trim_zeros is not compiled by numfuse"):
        nf.trim_zeros(nf.arange(3.0))


@pytest.mark.fallback
def test_a_marked_fallback_runs_numpys():
    assert nf.trim_zeros(nf.array([0.0, 3.0, 0.0])).tolist() == [3.0]


def test_benchmark_computes_what_each_call_returns():
    def kept(x):
        return nf.sin(x) * 2.0 + x * x

    def discarded(x):
        nf.sin(x) * 2.0 + x * x  # noqa: B018 (a result nobody can read: dead code)

    x = nf.arange(50_000.0)
    with nf.config(tier="lazy"):
        r = nf.benchmark(kept, (x,), n_repeat=4, n_warmup=1)
        assert len(r.times) == 4 and r.cold > 0 and r.min <= r.mean
        assert r.profile["flushes"] == 4
        assert r.profile["kernels_run"] + r.profile["tier0_groups"] >= 4  # the work ran every call
        assert r.profile["tasks"] >= 4 * 3
        d = nf.benchmark(discarded, (x,), n_repeat=4)
        assert d.profile["kernels_run"] + d.profile["tier0_groups"] == 0  # recorded, never computed
    text = repr(r)
    assert text.startswith("kept: cold ") and "warm" in text and "n=4" in text
    assert nf.benchmark(lambda: nf.ones(3).sum(), n_repeat=2, name="tiny").name == "tiny"
    with pytest.raises(ValueError):
        nf.benchmark(kept, (x,), n_repeat=0)


def test_core_static_tls_stays_small():
    """numfuse's module has static TLS (initial-exec thread-local variables):
    its whole TLS segment is taken from the surplus glibc reserves for
    libraries loaded later, and scikit-learn's libgomp failed to load
    ("cannot allocate memory in static TLS block") once numfuse used ~1.6 KB
    of it. Large per-thread state goes on the heap behind a pointer."""
    import struct

    from numfuse import _core

    with open(_core.__file__, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2  # ELF64
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    tls = 0
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", data, phoff + i * phentsize)
        if p_type == 7:  # PT_TLS
            tls, = struct.unpack_from("<Q", data, phoff + i * phentsize + 0x28)  # p_memsz
    assert tls < 512, f"numfuse._core has {tls} bytes of static TLS"

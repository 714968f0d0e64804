"""Division by a loop-invariant divisor without the divider (the CPU
compiler's ExactDivisionPass, src/jit/exact_division.h): the quotient must be
NumPy's, bit for bit, for every dividend and every divisor -- the
reciprocal-and-correction path where its checks pass, the product by an
exact reciprocal for powers of two, the true division wherever the checks
fail (infinities, NaN, subnormal and huge quotients, divisors outside the
safe range, zeros divided by a negative divisor)."""

import numpy as onp
import pytest

import numfuse as nf

# ExactDivisionPass is the CPU compiler's (jit/exact_division.h).
pytestmark = pytest.mark.cpu_only
from conftest import assert_same_outcome, outcome, same_bits
from numfuse import _core

F64_DIVISORS = [3.0, 7.0, 10.0, 0.1, -3.0, 1 / 3, 1.5, 12345.678, 1 - 2.0 ** -53, 1 + 2.0 ** -52, -(1 + 2.0 ** -52),
                2.0 ** -1000, 2.0 ** 1000, 2.0 ** -1002, 2.0 ** 1003, 2.0 ** -1010, 2.0 ** 1010, 5e-324, 1e-310,
                onp.finfo(onp.float64).max, onp.finfo(onp.float64).tiny, 0.0, -0.0, onp.inf, -onp.inf, onp.nan,
                2.0, 0.25, 2.0 ** -1074 * 3]
F32_DIVISORS = [3.0, 7.0, 10.0, 0.1, -3.0, 1 / 3, 1.5, 12345.678, 1 - 2.0 ** -24, 1 + 2.0 ** -23,
                2.0 ** -100, 2.0 ** 100, 2.0 ** -106, 2.0 ** 107, 2.0 ** -120, 2.0 ** 120, 1e-45, 1e-40,
                float(onp.finfo(onp.float32).max), float(onp.finfo(onp.float32).tiny), 0.0, -0.0, onp.inf,
                -onp.inf, onp.nan, 2.0, 0.25]


def special_values(dt):
    fi = onp.finfo(dt)
    v = [0.0, -0.0, onp.inf, -onp.inf, onp.nan, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal,
         fi.tiny / 3, 1.0, -1.0, 3.0, fi.eps, 1 - fi.eps / 2]
    p = 24 if dt == onp.float32 else 53
    emin, emax = int(onp.log2(fi.tiny)), int(onp.log2(fi.max))
    # Around the pass's bounds (dividend 2^(emin+2p+2) and 2^(emax-4) times
    # powers of 2 of the divisor; divisor 2^(emin+20) and 2^(emax-20)).
    for e in (emin + 2 * p + 2, emin + 2 * p + 3, emax - 4, emax - 1, emin + 20, emax - 20, emin + p, emin + 1):
        x = dt(2.0 ** e) if e > -1000 or dt == onp.float64 else dt(0)
        v += [x, onp.nextafter(x, dt(0)), onp.nextafter(x, dt(onp.inf)), -x]
    return onp.array(v, dtype=dt)


def dividends(dt, divisor, rng):
    """Random bit patterns (every exponent), ordinary values, the special
    values, and dividends whose quotient by `divisor` lies next to a midpoint
    between two neighbouring floats (the hard cases of correct rounding)."""
    it = onp.uint64 if dt == onp.float64 else onp.uint32
    bits = rng.integers(0, onp.iinfo(it).max, size=1 << 14, dtype=it, endpoint=True).view(dt)
    ordinary = rng.standard_normal(1 << 13).astype(dt) * dt(rng.choice([1e-3, 1.0, 1e3], 1 << 13))
    t = (1 + rng.random(1 << 13)).astype(dt)
    ulp = onp.spacing(t)
    wide = onp.longdouble if dt == onp.float64 else onp.float64
    with onp.errstate(all="ignore"):
        mid = (wide(divisor) * (t.astype(wide) + ulp.astype(wide) / 2)).astype(dt)
    near = onp.concatenate([mid, onp.nextafter(mid, dt(onp.inf)), onp.nextafter(mid, dt(-onp.inf))])
    return onp.concatenate([bits, ordinary, near, special_values(dt)]).astype(dt)


@pytest.fixture
def fresh_kernels(tmp_path):
    """Kernels compiled now, at -O3 (the pass runs in Full compiles only), in
    a cache of their own, so the test sees the pass run."""
    with nf.config(cache_dir=str(tmp_path), tier="lazy", quick_compile=False, exact_division=True):
        _core.clear_kernel_cache()
        yield
    _core.clear_kernel_cache()


def divisions_rewritten():
    return _core.profile()["exact_divisions_total"]


@pytest.mark.parametrize("dt", [onp.float64, onp.float32])
def test_division_by_a_scalar_is_numpys_bit_for_bit(fresh_kernels, dt):
    if not nf.get_option("exact_division"):
        pytest.skip("this CPU has no fused multiply-add: the pass never runs")
    rng = onp.random.default_rng(7)
    before = divisions_rewritten()
    for c in (F64_DIVISORS if dt == onp.float64 else F32_DIVISORS):
        a = dividends(dt, c, rng)
        with onp.errstate(all="ignore"):
            same_bits(nf.asarray(a) / dt(c), a / dt(c))
        assert not any(g["tier0"] for g in _core.last_report()["groups"]), "ran on tier 0, not in a kernel"
    # One kernel, compiled once (the divisor is its parameter), every
    # divisor value above run through it.
    assert divisions_rewritten() > before


@pytest.mark.parametrize("dt", [onp.float64, onp.float32])
def test_division_by_row_values_is_numpys_bit_for_bit(fresh_kernels, dt):
    """A reduction feeding its consumer: each row's divisor is invariant in
    the loop over the row (a normalization, a softmax), including rows whose
    sums are 0, subnormal, huge, infinite or NaN."""
    if not nf.get_option("exact_division"):
        pytest.skip("this CPU has no fused multiply-add: the pass never runs")
    rng = onp.random.default_rng(11)
    fi = onp.finfo(dt)
    x = rng.standard_normal((64, 300)).astype(dt)
    x[1] = 0
    x[2] = fi.smallest_subnormal
    x[3, :2] = [fi.max, fi.max]
    x[4, 7] = onp.inf
    x[5, 9] = onp.nan
    x[6] *= fi.tiny
    x[7] *= 2 ** 60
    x[8, ::3] = -0.0
    x[9] = fi.tiny * 4
    x[10, 0] = -onp.inf
    x[10, 1] = onp.inf
    def softmax(v, exp):
        e = exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    before = divisions_rewritten()
    with onp.errstate(all="ignore"):
        m = nf.asarray(x)
        same_bits(m / m.sum(axis=1, keepdims=True), x / x.sum(axis=1, keepdims=True))
        got = onp.asarray(softmax(m, nf.exp))
        assert divisions_rewritten() > before
        # exp is libmvec's, not NumPy's (within an ulp): the oracle of the
        # division is the same kernel with the divider, and NumPy to rtol.
        with nf.config(exact_division=False):
            same_bits(got, onp.asarray(softmax(m, nf.exp)))
        onp.testing.assert_allclose(got, softmax(x, onp.exp), rtol=1e-5 if dt == onp.float32 else 1e-13,
                                   equal_nan=True)


@pytest.mark.parametrize("dt", [onp.float64, onp.float32])
def test_zero_dividends_take_the_quotients_sign(fresh_kernels, dt):
    """+-0 / c is the zero of sign(x) xor sign(c), among ordinary values in
    the same vectors and in vectors of zeros alone: zeros pass the checks
    where c > 0 (the corrections add -0 and keep the quotient's sign) and
    take the true division where c < 0 (they would add +0)."""
    if not nf.get_option("exact_division"):
        pytest.skip("this CPU has no fused multiply-add: the pass never runs")
    rng = onp.random.default_rng(13)
    x = rng.standard_normal(1 << 14).astype(dt)
    x[rng.random(x.size) < 0.3] = 0.0
    x[rng.random(x.size) < 0.3] = -0.0
    x[:64] = 0.0
    x[64:128] = -0.0
    x[128:256:2] = -0.0
    before = divisions_rewritten()
    for c in (3.0, -3.0, 0.1, -0.1, 1e-30, -1e30, 1.0, -1.0):
        got = onp.asarray(nf.asarray(x) / dt(c))
        same_bits(got, x / dt(c))
        assert onp.signbit(got[x == 0]).tolist() == (onp.signbit(x[x == 0]) ^ (c < 0)).tolist()
    assert divisions_rewritten() > before


def test_a_divisor_that_varies_keeps_the_divider(fresh_kernels):
    rng = onp.random.default_rng(3)
    a, b = rng.standard_normal((2, 4096))
    before = divisions_rewritten()
    same_bits(nf.asarray(a) / nf.asarray(b), a / b)
    same_bits(3.0 / nf.asarray(b), 3.0 / b)
    assert divisions_rewritten() == before


def test_turned_off_the_divider_gives_the_same_bits(tmp_path):
    rng = onp.random.default_rng(5)
    a = onp.concatenate([rng.standard_normal(10000), special_values(onp.float64)])
    with nf.config(cache_dir=str(tmp_path), tier="lazy", quick_compile=False, exact_division=False):
        _core.clear_kernel_cache()
        before = divisions_rewritten()
        with onp.errstate(all="ignore"):
            same_bits((nf.asarray(a) + 1) / 7.0, (a + 1) / 7.0)
        assert divisions_rewritten() == before
        assert nf.get_option("exact_division") is False
    _core.clear_kernel_cache()


def test_a_cleared_kernel_cache_compiles_again(tmp_path):
    """After clear_kernel_cache (and so after a change of exact_division) a
    window whose kernel was compiled in the background before is compiled
    again, not left to tier 0 for good."""
    x = nf.asarray(onp.ones((512, 1024)))
    with nf.config(cache_dir=str(tmp_path / "a"), quick_compile=False):
        for on in (True, False, True):
            nf.set_option("exact_division", on)
            for _ in range(3):  # tier 0 runs it, and asks for a kernel in the background
                y = (x + 1.0) / 3.0
                nf.flush()
            nf.wait_background()
            y = (x + 1.0) / 3.0
            nf.flush()
            assert not _core.last_report()["groups"][0]["tier0"], f"exact_division={on}: still on tier 0"
            onp.testing.assert_array_equal(onp.asarray(y), onp.full((512, 1024), 2 / 3))
    nf.set_option("exact_division", True)


@pytest.mark.parametrize("dt", [onp.float64, onp.float32])
def test_numpys_floating_point_errors_and_no_others(fresh_kernels, dt):
    """A lane the checks refuse must not raise what NumPy's division does not
    (an infinite dividend would make the residual inf - inf, a tiny one a
    subnormal residual, a zero divisor 1/0 in the reciprocal), and the true
    division of a refused vector raises exactly NumPy's."""
    if not nf.get_option("exact_division"):
        pytest.skip("this CPU has no fused multiply-add: the pass never runs")
    fi = onp.finfo(dt)
    fill = onp.linspace(1, 2, 4096).astype(dt)
    cases = {"inf": onp.inf, "-inf": -onp.inf, "nan": onp.nan, "tiny": fi.tiny * 64, "subnormal": fi.smallest_subnormal,
             "max": fi.max, "zero": 0.0, "-zero": -0.0}
    divisors = [3.0, 0.5, float(fi.tiny) * 2 ** 30, 2.0 ** (fi.maxexp - 30), 0.0, -0.0, onp.inf, onp.nan, 1e-40]
    before = divisions_rewritten()
    for name, v in cases.items():
        x = fill.copy()
        x[100] = v
        for c in divisors:
            c = dt(c)
            with onp.errstate(all="raise"):
                got, exp = outcome(lambda: nf.asarray(x) / c), outcome(lambda: x / c)
            assert_same_outcome(got, exp, f"x containing {name}, c = {c!r}")
    # All zeros divided by zero: NumPy says "invalid" only (no 1/0 anywhere).
    z = onp.zeros(4096, dt)
    with onp.errstate(all="raise"):
        assert_same_outcome(outcome(lambda: nf.asarray(z) / dt(0)), outcome(lambda: z / dt(0)), "0 / 0")
    assert divisions_rewritten() > before

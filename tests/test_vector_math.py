"""Compiled kernels and tier 0's loops call vector math for every function
glibc's libmvec provides, at the widest vector width the CPU prefers for
numfuse (512 bits with AVX-512), and the results keep NumPy's special
values and stay within a few ulp of NumPy's.

LLVM's own libmvec table names only sin, cos, tan, pow, exp and log at 128
and 256 bits; numfuse maps every function to vector forms of its own
(runtime/vmath.h: _ZGVdN4v_nf_m_tanh, ... , jit/cpu_compiler.cc vmath_table),
so tanh, log1p, arcsin, cbrt, hypot, ... run vectorized instead of one
scalar libm call per element. Every form, and the scalar nf_m_tanh of a
loop's remainder, computes through one implementation per function and
process: equal inputs give equal bits on every path (the second half of
this file).
"""

import os
import platform
import re
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same, same_bits

UNARY = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
         "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt"]
BINARY = ["arctan2", "hypot", "power"]
# numfuse's ufunc -> the C library function its kernels call.
LIBM = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
        "arctanh": "atanh", "arctan2": "atan2", "power": "pow"}
# libmvec is accurate to 4 ulp (glibc's manual); float32 log measured 6.
MAX_ULP = {onp.float64: 4, onp.float32: 8}


def inputs(dt, seed, n=3001):
    rng = onp.random.default_rng(seed)
    fi = onp.finfo(dt)
    special = [0.0, -0.0, onp.inf, -onp.inf, onp.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30, -1e-30, 88.0, 89.0,
               710.0, -745.0, 1e30, -1e30, fi.max, -fi.max, fi.smallest_subnormal, -fi.smallest_subnormal]
    # 3001 elements (256-bit kernels) or 70001 (wide ones): vector loops,
    # their remainders and both threads' parts.
    m = n - len(special)
    x = onp.concatenate([rng.uniform(-3, 3, m - m // 3), rng.uniform(-800, 800, m // 3), special]).astype(dt)
    return x, rng.permutation(x)


def ulps(got, expected):
    """Largest distance in ulp of `expected` over the elements both give as
    finite numbers; the rest must be identical (NaN where NumPy has NaN,
    the same infinities, zeros of the same sign)."""
    g, e = onp.asarray(got), onp.asarray(expected)
    assert g.dtype == e.dtype and g.shape == e.shape
    assert onp.array_equal(onp.isnan(g), onp.isnan(e)), "NaN at other positions than NumPy's"
    finite = onp.isfinite(e) & onp.isfinite(g)
    exact = ~onp.isnan(e) & ~finite
    assert onp.array_equal(g[exact], e[exact]), f"infinities differ: {g[exact]} vs {e[exact]}"
    zero = e == 0
    assert onp.array_equal(onp.signbit(g[zero]), onp.signbit(e[zero])), "sign of zero differs"
    d = onp.abs(g[finite].astype(onp.float64) - e[finite].astype(onp.float64))
    with onp.errstate(over="ignore"):  # the spacing of the largest float is inf: no ulp to count there
        ulp = onp.spacing(onp.abs(e[finite])).astype(onp.float64)
    return float(onp.max(d / ulp, initial=0.0))


@pytest.mark.parametrize("n", [3001, 70001])
@pytest.mark.parametrize("dt", [onp.float64, onp.float32])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_compiled_vector_math_matches_numpy(name, dt, n):
    x, y = inputs(dt, 7, n)
    X, Y = nf.array(x), nf.array(y)
    f_np, f_nf = getattr(onp, name), getattr(nf, name)
    with nf.config(tier="lazy"), nf.profile() as p:  # compiled kernels, never tier 0
        got = f_nf(X * 1.0, Y) if name in BINARY else f_nf(X * 1.0)
        got = onp.asarray(got)
    assert p["kernels_run"] >= 1 and p["tier0_ops"] == 0
    with onp.errstate(all="ignore"):
        expected = f_np(x * 1.0, y) if name in BINARY else f_np(x * 1.0)
    assert ulps(got, expected) <= MAX_ULP[dt]


def _vector_calls(tmp_path, env_extra, n):
    """The vector math functions the kernels of a fresh process call on
    arrays of n elements, read off the optimized IR numfuse keeps
    (NUMFUSE_KEEP_IR)."""
    ir = tmp_path / f"ir{n}"
    ir.mkdir()
    code = textwrap.dedent(f"""
        import numpy, numfuse
        numfuse.set_option("tier", "lazy")
        for dt in ("float64", "float32"):
            x = numfuse.array(numpy.linspace(0.1, 0.9, {n}).astype(dt))
            for name in {UNARY!r}:
                numpy.asarray(getattr(numfuse, name)(x * 1.0))
            for name in {BINARY!r}:
                numpy.asarray(getattr(numfuse, name)(x * 1.0, x))
    """)
    env = dict(os.environ, NUMFUSE_KEEP_IR=str(ir), NUMFUSE_CACHE_DIR=str(tmp_path / f"cache{n}"), **env_extra)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    text = "".join(p.read_text() for p in ir.glob("*.ll"))
    return set(re.findall(r"call <\d+ x (?:double|float)> @(_ZGV[bde]N\d+v+_nf_m_\w+)\(", text))


def _has_avx512():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return all(re.search(rf"\b{f}\b", flags) for f in ("avx512f", "avx512dq", "avx512vl"))


def _missing(calls, isa):
    width = {"e": (8, 16), "d": (4, 8)}[isa]
    missing = []
    for name in UNARY + BINARY:
        fn = LIBM.get(name, name)
        params = "vv" if name in BINARY else "v"
        for vf, suffix in zip(width, ("", "f")):
            if f"_ZGV{isa}N{vf}{params}_nf_m_{fn}{suffix}" not in calls:
                missing.append(f"_ZGV{isa}N{vf}{params}_nf_m_{fn}{suffix}")
    return missing


def test_every_libmvec_function_is_called_vectorized(tmp_path):
    """Kernels calling the math functions use the CPU's widest vectors, small
    ones too: every form computes through the widest (runtime/vmath.h), so a
    narrower call would pay for the lanes it does not use."""
    isa = "e" if _has_avx512() else "d"
    for n in (4099, 70001):
        calls = _vector_calls(tmp_path, {}, n)
        assert not _missing(calls, isa), f"kernels of {n} points call these scalar: {_missing(calls, isa)}"
        # (A narrower form may remain in a loop's vectorized remainder only.)
        narrow = {c for c in calls if c.startswith("_ZGVd") and not c.endswith("f")}
        assert isa == "d" or not narrow, f"kernels of {n} points call 4-lane float64 forms: {narrow}"


@pytest.mark.skipif(not _has_avx512(), reason="needs a CPU with AVX-512")
def test_vector_bits_256_keeps_clangs_width(tmp_path):
    calls = _vector_calls(tmp_path, {"NUMFUSE_VECTOR_BITS": "256"}, 70001)
    assert calls and not any(c.startswith("_ZGVe") for c in calls)
    assert "_ZGVdN4v_nf_m_tanh" in calls


@pytest.mark.cpu_only  # (the CPU's vectors: device schedules have no SIMD lanes)
def test_wide_vectors_are_a_schedule_choice():
    """The default schedule asks for wide vectors from 2**16 points on, and
    explain() shows it; the schedule's text form round-trips it."""
    big = nf.array(onp.linspace(0.0, 1.0, 1 << 17))
    small = nf.array(onp.linspace(0.0, 1.0, 1 << 13))
    with nf.config(tier="lazy"):
        onp.asarray(nf.exp(big * 2.0))
        big_schedule = nf.explain().groups[0]["schedule"]
        onp.asarray(nf.exp(small * 2.0))
        small_schedule = nf.explain().groups[0]["schedule"]
    if _has_avx512() and os.environ.get("NUMFUSE_VECTOR_BITS") != "256":
        assert "512-bit vectors" in big_schedule
    else:
        assert "bit vectors" not in big_schedule
    assert "bit vectors" not in small_schedule


def _cpu_levels():
    """The tier-0 instruction-set levels this CPU runs (NUMFUSE_TIER0_ISA)."""
    levels = ["base"]
    try:
        flags = set(open("/proc/cpuinfo").read().split())
    except OSError:
        return levels
    if {"avx2", "fma", "bmi2", "movbe"} <= flags:
        levels.append("v3")
        if {"avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512cd"} <= flags:
            levels.append("v4")
    return levels


@pytest.mark.fallback
@pytest.mark.parametrize("level", ["base", "v3", "v4"])
def test_tier0_loop_library_at_every_isa_level(level):
    """Tier 0's loop library is compiled for three x86-64 levels and the best
    the CPU has is used; each level, forced with NUMFUSE_TIER0_ISA, passes
    the differential ufunc tests computed at the call (tier eager)."""
    if level not in _cpu_levels():
        pytest.skip(f"the CPU does not run x86-64-{level}")
    env = dict(os.environ, NUMFUSE_TIER0_ISA=level)
    name = subprocess.run([sys.executable, "-c", "import numfuse; print(numfuse._core.tier0_isa())"], env=env,
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    if platform.machine() in ("x86_64", "AMD64"):
        assert name == ("base" if level == "base" else f"x86-64-{level}")
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--tier=eager",
                        os.path.join(here, "test_ufuncs.py"), "-k",
                        "unary_all_dtypes or binary_same_dtype or binary_mixed or larger_arrays or division_by_zero"],
                       env=env, cwd=here, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout


def test_tier0_uses_the_cpus_best_level():
    levels = _cpu_levels()
    if platform.machine() not in ("x86_64", "AMD64"):
        assert nf._core.tier0_isa() == "base"
        return
    want = {"base": "base", "v3": "x86-64-v3", "v4": "x86-64-v4"}[levels[-1]]
    if os.environ.get("NUMFUSE_TIER0_ISA"):
        pytest.skip("NUMFUSE_TIER0_ISA is set")
    assert nf._core.tier0_isa() == want


# ---------------------------------------------------------------------------
# One implementation per function and process: the same bits on every path.
#
# One implementation of each transcendental function per process
# (runtime/vmath.h): equal inputs give equal bits wherever numfuse computes
# them -- in a contiguous loop's vector body and in its remainder, in a
# strided or reversed loop, for one element, a 0-d array, a Python scalar,
# in tier 0's loops and in compiled kernels (narrow and 512-bit wide).
#
# Before, a kernel's vector body called libmvec and its remainder scalar libm,
# which differ by an ulp on 20-60% of inputs: `e = exp(x)` then
# `where(e[::-1] > e, e[::-1], e * 0.5)` found one of two equal values greater
# (a program tests/test_random_programs.py found).

SAME_BITS_UNARY = {
    "sin": (-10, 10), "cos": (-10, 10), "tan": (-1.5, 1.5), "arcsin": (-1, 1), "arccos": (-1, 1),
    "arctan": (-10, 10), "sinh": (-5, 5), "cosh": (-5, 5), "tanh": (-5, 5), "arcsinh": (-10, 10),
    "arccosh": (1, 20), "arctanh": (-0.99, 0.99), "exp": (-20, 20), "exp2": (-20, 20), "expm1": (-5, 5),
    "log": (0.01, 100), "log2": (0.01, 100), "log10": (0.01, 100), "log1p": (-0.9, 10), "cbrt": (-10, 10),
    "sqrt": (0, 100),
}
SAME_BITS_BINARY = {"power": ((0.1, 4), (-3, 3)), "arctan2": ((-5, 5), (-5, 5)), "hypot": ((-5, 5), (-5, 5))}

N_SB = 37  # not a multiple of any vector width: every loop has a remainder


def _inputs(lo, hi, dtype, seed):
    rng = onp.random.default_rng(seed)
    # a few values repeated, so equal inputs land in the vector body and in the remainder
    x = rng.uniform(lo, hi, N_SB)
    x[N_SB - 2] = x[3]
    x[N_SB - 1] = x[0]
    return x.astype(dtype)


def _paths_unary(name, x):
    """The same function of the same values, computed on numfuse's paths."""
    f = getattr(nf, name)
    n = nf.asarray(x)
    out = {"contiguous": onp.asarray(f(n))}
    out["reversed"] = onp.asarray(f(n[::-1]))[::-1]
    wide = nf.asarray(onp.repeat(x, 3))
    out["strided"] = onp.asarray(f(wide[1::3]))
    out["one by one"] = onp.array([onp.asarray(f(n[i:i + 1]))[0] for i in range(N_SB)], dtype=x.dtype)
    out["0-d"] = onp.array([onp.asarray(f(nf.asarray(x[i]))) for i in range(N_SB)], dtype=x.dtype)
    out["scalar"] = onp.array([f(v) for v in x], dtype=x.dtype)  # NumPy scalars: float64 or float32
    if x.dtype == onp.float64:
        out["python scalar"] = onp.array([float(f(float(v))) for v in x])
    out["element"] = onp.array([f(n[i]) for i in range(N_SB)], dtype=x.dtype)
    with nf.config(tier="lazy"):
        # a compiled kernel: small (narrow vectors) and large (wide vectors on AVX-512)
        out["kernel"] = onp.asarray(f(n) + 0)
        big = nf.asarray(onp.tile(x, 2048))
        out["wide kernel"] = onp.asarray(f(big) * 1)[:N_SB]
        # the last N - 5 elements of big[:-5] are x[:N_SB - 5], in the kernel's remainder
        out["wide kernel, tail"] = onp.asarray(f(big[:-5]) * 1)[-(N_SB - 5):]
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(SAME_BITS_UNARY))
def test_unary_same_bits_on_every_path(name, dtype):
    x = _inputs(*SAME_BITS_UNARY[name], dtype, seed=len(name))
    paths = _paths_unary(name, x)
    ref = paths["contiguous"]
    # the repeated inputs give the repeated results
    assert ref[N_SB - 2].tobytes() == ref[3].tobytes() and ref[N_SB - 1].tobytes() == ref[0].tobytes()
    for what, got in paths.items():
        if what == "wide kernel, tail":
            same_bits(got, ref[:N_SB - 5])
        else:
            same_bits(got, ref)
    # and every path is NumPy's function (to a few ulps)
    assert_same(ref, getattr(onp, name)(x), rtol=4e-6 if dtype == "float32" else 4e-15)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(SAME_BITS_BINARY))
def test_binary_same_bits_on_every_path(name, dtype):
    (alo, ahi), (blo, bhi) = SAME_BITS_BINARY[name]
    a, b = _inputs(alo, ahi, dtype, 1), _inputs(blo, bhi, dtype, 2)
    f = getattr(nf, name)
    na, nb = nf.asarray(a), nf.asarray(b)
    ref = onp.asarray(f(na, nb))
    same_bits(onp.asarray(f(na[::-1], nb[::-1]))[::-1], ref)
    same_bits(onp.array([onp.asarray(f(na[i:i + 1], nb[i:i + 1]))[0] for i in range(N_SB)], dtype=dtype), ref)
    if name != "power":  # (NumPy scalars' power is NumPy's, as x ** y of them is)
        same_bits(onp.array([f(a[i], b[i]) for i in range(N_SB)], dtype=dtype), ref)
        same_bits(onp.array([f(na[i], b[i]) for i in range(N_SB)], dtype=dtype), ref)
    with nf.config(tier="lazy"):
        same_bits(onp.asarray(f(na, nb) + 0), ref)
        big_a, big_b = nf.asarray(onp.tile(a, 2048)), nf.asarray(onp.tile(b, 2048))
        same_bits(onp.asarray(f(big_a, big_b) * 1)[:N_SB], ref)
    assert_same(ref, getattr(onp, name)(a, b), rtol=4e-6 if dtype == "float32" else 4e-15)


def test_equal_values_compare_equal_after_exp():
    """The program hypothesis found: e = exp(clip(x)) has equal values at
    [0, 5] and [4, 5] (x there is 2.75 twice); e[::-1] > e is then false
    there, as in NumPy, on every path."""
    x = onp.zeros((5, 7))
    x[0, 5] = x[4, 5] = 2.75
    x[1:4] = onp.linspace(-6, 6, 21).reshape(3, 7)
    expected = onp.exp(onp.clip(x, -5.0, 5.0))
    expected = onp.where(expected[::-1] > expected, expected[::-1], expected * 0.5)
    for opts in (dict(fusion=True), dict(fusion=False), dict(tier="lazy")):
        with nf.config(**opts):
            e = nf.exp(nf.clip(nf.asarray(x), -5.0, 5.0))
            got = nf.where(e[::-1] > e, e[::-1], e * 0.5)
            assert_same(got, expected, rtol=1e-15)
            assert onp.asarray(got)[4, 5] == onp.asarray(e)[4, 5] * 0.5


def test_one_implementation_is_reported():
    """show_config names the implementation each function has in this process."""
    name, lanes = nf._core.vmath_implementation("exp")
    assert lanes >= 1 and name
    if lanes > 1:
        assert name.startswith("_ZGV") and name.endswith("_exp")
    assert nf._core.vmath_implementation("expf")[0].endswith("expf")
    assert nf._core.vmath_implementation("floor") == (None, 0)
    assert nf.show_config(mode="dicts")["Compiler"]["vector math"] == f"{name} ({lanes} lanes of float64)"


def _hypot_inputs(dt, seed, n=20011):
    """Uniform values, small integers (hypot(3, 4), |1+1j|), random bit
    patterns (subnormals, values near the overflow and underflow bounds)
    and the special values, in every pairing."""
    rng = onp.random.default_rng(seed)
    idt = onp.uint64 if dt == onp.float64 else onp.uint32
    bits = rng.integers(0, onp.iinfo(idt).max, n, dtype=idt, endpoint=True).view(dt)
    bits = onp.where(onp.isnan(bits), dt(1.5), bits)
    sp = onp.array([0.0, -0.0, onp.inf, -onp.inf, onp.nan, 1.0, 3.0, 4.0, onp.finfo(dt).max,
                    onp.finfo(dt).tiny, onp.finfo(dt).smallest_subnormal, 2.0 ** (onp.finfo(dt).maxexp - 12)], dt)
    a, b = onp.meshgrid(sp, sp)
    x = onp.concatenate([rng.random(n).astype(dt), rng.integers(-20, 20, n).astype(dt), bits, a.ravel()])
    y = onp.concatenate([rng.random(n).astype(dt), rng.integers(-20, 20, n).astype(dt), bits[::-1], b.ravel()])
    return x, y


@pytest.mark.parametrize("dt", [onp.float64, onp.float32])
def test_hypot_is_numpys_bit_for_bit(dt):
    """hypot is glibc's algorithm (NumPy calls glibc's hypot), in every form:
    large kernels, tier 0's loops, strided operands, single elements."""
    x, y = _hypot_inputs(dt, 3)
    with onp.errstate(all="ignore"):
        want = onp.hypot(x, y)
        same_bits(nf.hypot(nf.asarray(x), nf.asarray(y)), want)                    # a compiled kernel
        same_bits(nf.hypot(nf.asarray(x[:999]), nf.asarray(y[:999])), want[:999])  # tier 0
        same_bits(nf.hypot(nf.asarray(x[::7]), nf.asarray(y[::7])), want[::7])    # strided
        for k in range(0, len(x), 997):
            same_bits(nf.hypot(nf.asarray(x[k:k + 1]), nf.asarray(y[k:k + 1])), want[k:k + 1])


@pytest.mark.parametrize("dt", [onp.complex128, onp.complex64])
def test_complex_absolute_value_is_numpys_bit_for_bit(dt):
    """NumPy's complex absolute value is its SIMD formula, not hypot (they
    differ in the last bit on about a third of inputs); numfuse computes
    NumPy's on every path."""
    rt = onp.float64 if dt == onp.complex128 else onp.float32
    x, y = _hypot_inputs(rt, 4)
    z = onp.empty(len(x), dt)
    z.real, z.imag = x, y  # (x + 1j * y would make NaN real parts of infinite y)
    with onp.errstate(all="ignore"):
        want = onp.abs(z)
        same_bits(nf.abs(nf.asarray(z)), want)
        same_bits(nf.abs(nf.asarray(z[:999])), want[:999])
        same_bits(nf.abs(nf.asarray(z[::5])), want[::5])
        same_bits(nf.abs(nf.asarray(onp.array(1 + 1j, dt))), onp.abs(onp.array(1 + 1j, dt)))
        for k in range(0, len(z), 1009):
            same_bits(nf.abs(nf.asarray(z[k:k + 1])), want[k:k + 1])


def test_sqrt_of_scalars_computed_without_numpy_as_numpy():
    # np.sqrt of a float scalar (a loop's s = np.sqrt(a[i])) is computed at the
    # call (correctly rounded: NumPy's bits); NumPy's ufunc only where NumPy
    # warns or the input is not finite.
    import warnings
    calls = []
    real = nf.sqrt._np

    def counted(*a, **k):
        calls.append(a)
        return real(*a, **k)

    values = [0.0, -0.0, 1e-310, 2.0, 3.0, 1e308, 0.5, 7.25]
    nf.sqrt._np = counted
    try:
        for v in values:
            for x in (v, onp.float64(v), onp.float32(v) if v < 1e38 else onp.float32(3e38)):
                got = nf.sqrt(x)
                want = onp.sqrt(x)
                assert type(got) is type(want) and onp.asarray(got).tobytes() == onp.asarray(want).tobytes(), (x, got)
        assert calls == []
        for x in (-1.0, onp.float64(-2.0), onp.float32(-0.5), onp.inf, onp.float64(onp.nan), onp.float32(-onp.inf)):
            with warnings.catch_warnings(record=True) as w1:
                warnings.simplefilter("always")
                got = nf.sqrt(x)
            with warnings.catch_warnings(record=True) as w2:
                warnings.simplefilter("always")
                want = onp.sqrt(x)
            assert type(got) is type(want) and onp.asarray(got).tobytes() == onp.asarray(want).tobytes(), (x, got)
            assert [str(m.message) for m in w1] == [str(m.message) for m in w2], x
        assert len(calls) == 6
    finally:
        nf.sqrt._np = real

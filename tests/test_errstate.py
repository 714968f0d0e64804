"""Floating-point errors as NumPy reports them: RuntimeWarnings for divide by
zero, overflow and invalid values, and numpy.errstate / numfuse.errstate
(ignore, warn, raise, call, print, log), on every tier (an operation computed
at the call, a recorded one computed at a sync, fused or not)."""

import io
import sys
import warnings

import numpy as onp
import pytest

import numfuse as nf


def runtime_warnings(fn):
    """The RuntimeWarnings fn() gives, as a set of messages, and its result
    (numfuse arrays converted, which syncs them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fn()
        if isinstance(r, nf.ndarray):
            r = onp.asarray(r)
    return {str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)}, r


def both(program, *arrays):
    """program(mod, *arrays) under NumPy and numfuse: their warning sets and results."""
    w_np, r_np = runtime_warnings(lambda: program(onp, *arrays))
    w_nf, r_nf = runtime_warnings(lambda: program(nf, *[nf.asarray(a) for a in arrays]))
    return w_np, w_nf, r_np, r_nf


def kinds(messages):
    return {m.split(" encountered")[0] for m in messages}


CASES = {
    "divide by zero": (lambda m, a, b: a / b, [1.0, 2.0], [0.0, 1.0]),
    "0/0": (lambda m, a, b: a / b, [0.0, 1.0], [0.0, 1.0]),
    "sqrt(-1)": (lambda m, a, b: m.sqrt(a - b), [1.0, 2.0], [2.0, 1.0]),
    "log(0)": (lambda m, a, b: m.log(a * b), [0.0, 1.0], [1.0, 1.0]),
    "exp overflow": (lambda m, a, b: m.exp(a * b), [800.0, 1.0], [1.0, 1.0]),
    "multiply overflow": (lambda m, a, b: a * b, [1e300, 1.0], [1e300, 1.0]),
    "inf - inf": (lambda m, a, b: (a * 1e300 * 1e300) - (b * 1e300 * 1e300), [1.0, 0.0], [1.0, 0.0]),
    "cast nan to int": (lambda m, a, b: (a / b).astype(m.int64), [0.0, 1.0], [0.0, 1.0]),
    "cast to float32 overflow": (lambda m, a, b: (a * b).astype(m.float32), [1e300, 1.0], [1.0, 1.0]),
    "fused chain": (lambda m, a, b: m.sqrt(m.log(a / b) + 1.0) * 2.0, [1.0, 0.0], [0.0, 1.0]),
    "reduction of divide": (lambda m, a, b: (a / b).sum(), [1.0, 2.0], [0.0, 1.0]),
    "float32 divide": (lambda m, a, b: a.astype(m.float32) / b.astype(m.float32), [1.0, 2.0], [0.0, 1.0]),
    "int floor_divide": (lambda m, a, b: a.astype(m.int64) // b.astype(m.int64), [7.0, 2.0], [0.0, 3.0]),
    "int remainder": (lambda m, a, b: a.astype(m.int32) % b.astype(m.int32), [7.0, 2.0], [0.0, 3.0]),
    "uint8 floor_divide": (lambda m, a, b: a.astype(m.uint8) // b.astype(m.uint8), [7.0, 2.0], [0.0, 3.0]),
    "int fmod": (lambda m, a, b: m.fmod(a.astype(m.int16), b.astype(m.int16)), [-7.0, 2.0], [0.0, 3.0]),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("n", [4, 5000])  # tier 0 at the call / recorded (auto tier)
def test_warnings_match_numpy(name, n, fusion):
    fn, a, b = CASES[name]
    a = onp.resize(onp.array(a), n)
    b = onp.resize(onp.array(b), n)
    w_np, w_nf, r_np, r_nf = both(fn, a, b)
    assert w_np, f"NumPy gives no warning for {name}: the case tests nothing"
    if fusion == "fused":
        # A fused kernel reports each kind of error once, naming the first of
        # its operations that can raise it (NumPy: once per operation).
        assert kinds(w_nf) == kinds(w_np)
    else:
        assert w_nf == w_np
    onp.testing.assert_allclose(r_nf, r_np, rtol=1e-6)


QUIET = {
    "nan compared": lambda m, x, y: (x < y) | (x >= y),
    "nan maximum": lambda m, x, y: m.maximum(x, y) + m.minimum(x, y) + m.fmax(x, y),
    "nan max": lambda m, x, y: x.max() + y.min(),
    "nan argmax": lambda m, x, y: x.argmax(),
    "where on nan": lambda m, x, y: m.where(x > 0, x, y),
    "nan arithmetic": lambda m, x, y: (x + y) * 2 - x / 3,
    "nan exp/sin": lambda m, x, y: m.exp(x) + m.sin(y) + m.tanh(x),
    "isnan": lambda m, x, y: m.isnan(x) & m.isfinite(y) | m.isinf(x),
    "sign of nan": lambda m, x, y: m.sign(x),
    "clip nan": lambda m, x, y: m.clip(x, -1, 1),
    "floor_divide nan": lambda m, x, y: x // 2.0,
    "hypot zeros": lambda m, x, y: m.hypot(x * 0, y * 0),
    "arctan2 zeros": lambda m, x, y: m.arctan2(x * 0, y * 0),
    "inf arithmetic": lambda m, x, y: (y * m.inf) + 1.0,
}


@pytest.mark.parametrize("name", list(QUIET))
@pytest.mark.parametrize("n", [4, 5000])
def test_no_warning_where_numpy_gives_none(name, n, fusion):
    x = onp.resize(onp.array([onp.nan, 1.0, -2.0, 0.5]), n)
    y = onp.resize(onp.array([0.5, onp.nan, 3.0, -1.0]), n)
    w_np, w_nf, r_np, r_nf = both(QUIET[name], x, y)
    assert w_nf == w_np == set()
    onp.testing.assert_allclose(r_nf, r_np, rtol=1e-6)


UNARY = ["negative", "absolute", "sign", "sqrt", "cbrt", "square", "reciprocal", "exp", "exp2", "expm1", "log",
         "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit",
         "deg2rad", "rad2deg"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "maximum",
          "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2", "equal", "not_equal",
          "less", "less_equal", "greater", "greater_equal"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e308, -1e308, 1e-308, 5e-324, onp.inf, -onp.inf, onp.nan, 710.0, -750.0,
           3.0, -3.0]


def known_spurious(dt, op, args, message):
    """Flags numfuse's implementations raise that NumPy's do not, for values
    at the edge of a type's range: sinh/cosh (exp(|x|) / 2) overflow within
    0.7 of NumPy's overflow threshold (710.0 is in that band)."""
    return op in ("sinh", "cosh") and message.startswith("overflow") and abs(args[0]) == 710.0


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("n", [7, 3000])
def test_sweep_reports_no_flag_numpy_does_not(dt, n):
    """Every operation over special values: numfuse never warns where NumPy
    does not (it may miss a few of NumPy's warnings for non-finite operands;
    those are listed in the docstring of src/pipeline/fpe.cc's table)."""
    wrong = []
    with onp.errstate(over="ignore"):
        arrays = {v: onp.full(n, v, dtype=dt) for v in SPECIAL}
    for op in UNARY:
        for v in SPECIAL:
            w_np, _ = runtime_warnings(lambda: getattr(onp, op)(arrays[v]))
            w_nf, _ = runtime_warnings(lambda: getattr(nf, op)(nf.asarray(arrays[v])))
            wrong += [(op, v, m) for m in w_nf - w_np if not known_spurious(dt, op, (v,), m)]
    for op in BINARY:
        for v in SPECIAL:
            for u in SPECIAL:
                w_np, _ = runtime_warnings(lambda: getattr(onp, op)(arrays[v], arrays[u]))
                w_nf, _ = runtime_warnings(lambda: getattr(nf, op)(nf.asarray(arrays[v]), nf.asarray(arrays[u])))
                wrong += [(op, v, u, m) for m in w_nf - w_np if not known_spurious(dt, op, (v, u), m)]
    assert not wrong, f"{len(wrong)} warnings NumPy does not give, e.g. {wrong[:10]}"


def test_sweep_finds_the_common_warnings():
    """The sweep's counterpart: the warnings programs meet most are given."""
    x = onp.array([0.0, 1.0, -1.0, 1000.0] * 1000)
    cases = [("divide", (1.0, x)), ("log", (x,)), ("sqrt", (x,)), ("exp", (x,)), ("log10", (x,)),
             ("reciprocal", (x,)), ("multiply", (x * 1e305, x))]
    for op, args in cases:
        w_np, _ = runtime_warnings(lambda: getattr(onp, op)(*args))
        w_nf, _ = runtime_warnings(lambda: getattr(nf, op)(*[nf.asarray(a) if isinstance(a, onp.ndarray) else a
                                                              for a in args]))
        assert w_np and w_nf == w_np, (op, w_np, w_nf)


def test_warning_points_at_the_users_line(lazy):
    a = nf.asarray(onp.ones(3000))
    b = nf.asarray(onp.zeros(3000))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = a / b
        nf.flush()
    assert [str(w.message) for w in caught] == ["divide by zero encountered in divide"]
    assert caught[0].filename == __file__
    assert caught[0].category is RuntimeWarning
    assert onp.isinf(onp.asarray(r)).all()


def test_warning_once_per_line_by_default(lazy):
    """Python's default filter shows a RuntimeWarning once per source line, as for NumPy's."""
    a = nf.asarray(onp.ones(3000))
    b = nf.asarray(onp.zeros(3000))
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for _ in range(5):
            r = a / b
            nf.flush()
    assert len(caught) == 1
    del r


@pytest.mark.parametrize("n", [4, 5000])
def test_errstate_ignore_applies_to_work_recorded_inside(n, fusion):
    a = nf.asarray(onp.ones(n))
    b = nf.asarray(onp.zeros(n))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with nf.errstate(divide="ignore"):
            r = a / b
        out = onp.asarray(r)  # computed after the block
    assert onp.isinf(out).all()


@pytest.mark.parametrize("n", [4, 5000])
def test_errstate_raise(n, fusion):
    a = nf.asarray(onp.ones(n))
    b = nf.asarray(onp.zeros(n))
    keep = a + 1.0  # recorded before: must survive the error
    with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
        with nf.errstate(all="raise"):
            r = a / b
            onp.asarray(r)
    onp.testing.assert_array_equal(onp.asarray(keep), onp.full(n, 2.0))
    # Outside the block the default is back: a warning, not an error.
    w, _ = runtime_warnings(lambda: a / b)
    assert w == {"divide by zero encountered in divide"}


def test_errstate_raise_in_a_fused_kernel(lazy):
    """A fused kernel raising two kinds of error raises FloatingPointError for
    one NumPy meets too (which one is first depends on the kernel's
    operation order: NumPy's is per operation)."""
    a0 = onp.array([0.0, 1.0] * 2000)
    w_np, _ = runtime_warnings(lambda: a0 / a0 * 0 + onp.log(a0))
    assert kinds(w_np) == {"divide by zero", "invalid value"}
    a = nf.asarray(a0)
    with pytest.raises(FloatingPointError) as e_nf, nf.errstate(all="raise"):
        onp.asarray(a / a * 0 + nf.log(a))
    assert kinds([str(e_nf.value)]) <= kinds(w_np)


def test_numpys_errstate_applies_at_the_sync(lazy):
    a = nf.asarray(onp.ones(3000))
    b = nf.asarray(onp.zeros(3000))
    with onp.errstate(divide="raise"), pytest.raises(FloatingPointError):
        onp.asarray(a / b)


def test_errstate_as_decorator(lazy):
    @nf.errstate(divide="ignore")
    def f(x, y):
        return x / y

    a = nf.asarray(onp.ones(3000))
    b = nf.asarray(onp.zeros(3000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(a, b)
    w, r = runtime_warnings(lambda: out)
    assert w == set() and onp.isinf(r).all()


def test_call_print_and_log_modes(lazy, capsys):
    a = nf.asarray(onp.array([1.0, 0.0] * 2000))
    b = nf.asarray(onp.zeros(4000))
    calls = []
    with nf.errstate(all="call", call=lambda kind, flags: calls.append((kind, flags))):
        nf.flush()
        onp.asarray(a / b)
    assert calls == [("divide by zero", 9), ("invalid value", 9)]  # NumPy's arguments: (words, all flags)

    with nf.errstate(divide="print", invalid="ignore"):
        onp.asarray(a / b)
    assert capsys.readouterr().err == "Warning: divide by zero encountered in divide\n"

    log = io.StringIO()
    with nf.errstate(all="log", call=log):
        onp.asarray(a / b)
    assert log.getvalue() == ("Warning: divide by zero encountered in divide\n"
                              "Warning: invalid value encountered in divide\n")


def test_seterr_geterr():
    old = nf.seterr(divide="raise")
    try:
        assert nf.geterr()["divide"] == "raise"
        assert onp.geterr()["divide"] == "raise"  # one state, NumPy's
        a = nf.asarray(onp.ones(5000))
        with pytest.raises(FloatingPointError):
            onp.asarray(a / 0.0)
    finally:
        nf.seterr(**old)
    assert nf.geterr() == old


def test_seterr_computes_pending_work_under_the_old_setting(lazy):
    a = nf.asarray(onp.ones(3000))
    old = nf.seterr(divide="ignore")
    try:
        r = a / 0.0
        nf.seterr(divide="raise")  # r was recorded under 'ignore'
        assert onp.isinf(onp.asarray(r)).all()
    finally:
        nf.seterr(**old)


def test_warnings_as_errors_keep_the_result(lazy):
    """A warning turned into an error raises at the sync; the values computed
    there are not lost."""
    a = nf.asarray(onp.ones(3000))
    r = a / 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning):
            nf.flush()
    assert onp.isinf(onp.asarray(r)).all()


def test_integer_arithmetic_without_zero_divisors_raises_no_flags(fusion):
    a = onp.arange(-50, 50)
    w_np, w_nf, r_np, r_nf = both(lambda m, x: (x * 3 + 7) // 2 - x % 5, a)
    assert w_np == w_nf == set()
    onp.testing.assert_allclose(r_nf, r_np, rtol=1e-6)


def test_threads_carry_flags_to_the_caller(lazy):
    """A kernel parallel over threads reports a flag raised on a worker thread."""
    n = 1 << 20
    x = onp.ones(n)
    x[-1] = 0.0  # only the last thread's slice divides by zero
    w, _ = runtime_warnings(lambda: 1.0 / nf.asarray(x))
    assert w == {"divide by zero encountered in divide"}


def test_profile_of_a_clean_loop_has_no_cost_from_flags(lazy):
    """No flag raised: nothing queued, no Python call per flush."""
    a = nf.asarray(onp.ones(100))
    seen = []
    from numfuse import _core, _errstate
    _core._set_fp_report(lambda ev: seen.append(ev))
    try:
        for _ in range(10):
            a = a * 1.0001
            nf.flush()
    finally:
        _core._set_fp_report(_errstate.report)
    assert seen == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.parametrize("op", ["maximum", "minimum", "greater", "less_equal"])
def test_comparisons_of_mixed_types_flag_nothing_at_any_length(op, lazy):
    # A float array against an int64 one: the compiled loop converts and
    # compares; in its scalar remainder the x86 backend compares with packed
    # ordered compares whose upper lanes hold the previous iteration's mask
    # (a NaN pattern), which raises `invalid` for lengths 6 and 7 on AVX2
    # machines. NumPy raises nothing for these operations at all.
    fn = getattr(nf, op)
    for n in range(1, 40):
        a = onp.linspace(-2, 3, n)
        b = onp.arange(n) % 5
        w_nf, r_nf = runtime_warnings(lambda: fn(nf.asarray(a), nf.asarray(b)))
        assert w_nf == set(), (n, w_nf)
        onp.testing.assert_array_equal(r_nf, getattr(onp, op)(a, b))

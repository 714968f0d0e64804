"""numfuse.jit: whole functions traced, rerolled into loops, compiled as one
program. Every result is compared with NumPy's and with numfuse's own
un-jitted run, and every test checks that the program really ran (a plain
run would pass the comparisons too: the stats say which ran)."""

import os
import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same


def _loop_program(name):
    """The `run(np, ...)` of benchmarks/loops/<name>.py: the tests run the
    benchmarked programs themselves."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "loops",
                        name + ".py")
    spec = importlib.util.spec_from_file_location(f"loops_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run


cholesky = _loop_program("cholesky")
lu = _loop_program("lu")
levinson = _loop_program("levinson")
edit_distance = _loop_program("edit_distance")


@pytest.fixture(autouse=True)
def _on_the_cpu():
    """Programs are CPU kernels: the tests run them there whatever target the
    suite runs on (test_on_a_device_target_it_runs_plainly covers the rest)."""
    with nf.config(target="cpu"):
        yield


def test_on_a_device_target_it_runs_plainly_and_says_why():
    if nf._core.target_unavailable("cuda-emulated"):
        pytest.skip("the emulated device is not available here")
    j = nf.jit(lambda x: heat(nf, x, 5, 0.1))
    x0 = onp.linspace(0, 1, 12)
    with nf.config(target="cuda-emulated"):
        got = j(nf.asarray(x0.copy()))
    assert_same(got, heat(onp, x0.copy(), 5, 0.1))
    assert j.stats["compiled_runs"] == 0 and "not the CPU" in j.explain()


def run_both(fn, *make_args, expect_compiled=True, **kw):
    """fn under NumPy, plain numfuse and jit (twice: the traced call and a
    compiled one); returns the jit function."""
    args_np = [a() if callable(a) else a for a in make_args]
    with warnings.catch_warnings(record=True) as numpy_warned:
        warnings.simplefilter("always")
        expected = fn(onp, *[a.copy() if isinstance(a, onp.ndarray) else a for a in args_np], **kw)
    if not any(issubclass(w.category, RuntimeWarning) for w in numpy_warned):
        # NumPy warned of nothing: neither may the program (no flag of a
        # lane past a loop's end, for instance).
        warnings.simplefilter("error", RuntimeWarning)
    plain = fn(nf, *[nf.asarray(a.copy()) if isinstance(a, onp.ndarray) else a for a in args_np], **kw)
    assert_same(plain, expected)
    j = nf.jit(lambda *a, **k: fn(nf, *a, **k))
    for call in range(2):
        args_nf = [nf.asarray(a.copy()) if isinstance(a, onp.ndarray) else a for a in args_np]
        got = j(*args_nf, **kw)
        assert_same(got, expected)
    if expect_compiled:
        assert j.stats["compiled_runs"] == 2, j.explain()
        assert j.stats["traces"] == 1, j.explain()
    return j


def spd(n):
    m = onp.random.default_rng(0).random((n, n))
    return m @ m.T + n * onp.eye(n)


@pytest.mark.parametrize("n", [1, 2, 5, 24])
def test_cholesky_is_one_program_of_loops(n):
    j = run_both(cholesky, spd(n))
    (p,) = j.programs()
    if n >= 5:
        # Rerolled: the program's size does not grow with n.
        assert p.loops >= 2 and p.ops < 40, p.description
        assert p.traced > p.ops


def test_the_program_size_does_not_grow_with_the_trip_count():
    sizes = []
    for n in (12, 40):
        j = run_both(cholesky, spd(n))
        sizes.append((j.programs()[0].ops, j.programs()[0].loops))
    assert sizes[0] == sizes[1]


def test_lu_with_column_slices_and_two_results():
    j = run_both(lu, spd(16))
    assert j.programs()[0].ops < 60


def gauss_seidel(np, u, f, sweeps):
    n = u.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:] - f[i, 1:-1])
    return u


def test_gauss_seidel_writes_its_argument_in_place_on_every_call():
    rng = onp.random.default_rng(1)
    u0, f0 = rng.random((12, 12)), rng.random((12, 12))
    expected = gauss_seidel(onp, u0.copy(), f0, 3)
    j = nf.jit(lambda u, f, s: gauss_seidel(nf, u, f, s))
    for _ in range(3):
        u = nf.asarray(u0.copy())
        r = j(u, nf.asarray(f0), 3)
        assert r is u  # the argument itself, as Python returns it
        assert_same(u, expected)
    assert j.stats["compiled_runs"] == 3 and j.stats["traces"] == 1


def heat(np, u, steps, c):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def test_heat_loop_of_in_place_slices():
    j = run_both(heat, onp.linspace(0, 1, 50) ** 2, 200, 0.2)
    assert j.programs()[0].loops == 1 and j.programs()[0].ops <= 8


def softmax_rows(np, x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        row = x[i] - x[i].max()
        e = np.exp(row)
        out[i] = e / e.sum()
    return out


def test_softmax_one_row_at_a_time():
    run_both(softmax_rows, onp.random.default_rng(2).standard_normal((20, 33)))


def floyd(np, d):
    n = d.shape[0]
    for k in range(n):
        d = np.minimum(d, d[:, k, None] + d[None, k, :])
    return d


def test_floyd_warshall_rebinding_a_name_each_iteration():
    # Each iteration makes a new array from the last one: the loop keeps
    # the value in a carry (one allocation) instead of a buffer per iteration.
    d = onp.random.default_rng(3).random((10, 10))
    j = run_both(floyd, d)
    assert j.programs()[0].ops < 12 and j.programs()[0].loops >= 1


def nbody_like(np, x, v, steps, dt):
    for _ in range(steps):
        d = x[:, None, :] - x[None, :, :]
        r2 = (d * d).sum(-1) + 0.01
        a = (d / r2[:, :, None] ** 1.5).sum(1)
        v = v - dt * a
        x = x + dt * v
    return x, v


def test_state_rebound_every_step_is_carried():
    rng = onp.random.default_rng(7)
    j = run_both(nbody_like, rng.random((6, 3)), rng.random((6, 3)) * 0.1, 30, 0.01)
    assert j.programs()[0].ops * 5 < j.programs()[0].traced


def test_levinson_carries_scalars_between_iterations():
    x = onp.random.default_rng(8).standard_normal(400)
    r = onp.array([onp.dot(x[:400 - k], x[k:]) for k in range(9)]) / 400
    j = run_both(levinson, r)
    assert isinstance(j(nf.asarray(r))[1], onp.float64)


def test_large_operations_run_plainly_and_say_why():
    d = onp.random.default_rng(3).random((150, 150))
    j = run_both(floyd, d, expect_compiled=False)
    assert j.stats["compiled_runs"] == 0
    assert "operations are large" in j.explain()


def irregular(np, x):
    ops = [np.sin, np.cos, np.exp, np.tanh, np.sqrt]
    for i in range(x.shape[0]):
        x[:3] = ops[i * i % 5](x[:3])  # iterations of no common structure: nothing rerolls
    return x


def test_a_loop_that_does_not_reroll_is_not_compiled_whole():
    j = run_both(irregular, onp.linspace(0.1, 0.5, 600), expect_compiled=False)
    assert j.stats["compiled_runs"] == 0
    assert "do not reroll" in j.explain()


def tri_solve(np, L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_triangular_solve(dtype):
    L = onp.tril(spd(15)).astype(dtype)
    b = onp.arange(15, dtype=dtype)
    run_both(tri_solve, L, b)


def int_prefix(np, a):
    out = np.zeros_like(a)
    out[0] = a[0]
    for i in range(1, a.shape[0]):
        out[i] = (out[i - 1] * 3 + a[i] // 2 - (i % 5)) % 1009
    return out


def test_integer_recurrence_with_the_loop_counter_in_constants():
    run_both(int_prefix, onp.arange(40, dtype="int64") - 7)


def returns_scalar(np, x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i]
    return s, x.sum()


def test_scalar_results_are_numpy_scalars():
    x = onp.linspace(-1, 2, 17)
    j = run_both(returns_scalar, x, expect_compiled=False)
    got = j(nf.asarray(x))
    assert isinstance(got[1], onp.float64)


def test_a_new_shape_retraces_and_an_old_one_does_not():
    j = nf.jit(lambda A: cholesky(nf, A))
    for n in (6, 8, 6, 8, 6):
        assert_same(j(nf.asarray(spd(n))), cholesky(onp, spd(n)))
    assert j.stats["traces"] == 2
    assert j.stats["compiled_runs"] == 5


def test_a_new_scalar_value_retraces():
    j = nf.jit(lambda u, s, c: heat(nf, u, s, c))
    u0 = onp.linspace(0, 1, 20)
    for steps in (3, 3, 5):
        assert_same(j(nf.asarray(u0.copy()), steps, 0.1), heat(onp, u0.copy(), steps, 0.1))
    assert j.stats["traces"] == 2


def test_a_float_that_only_feeds_arithmetic_is_a_parameter():
    """heat's coefficient reaches only numfuse operations: a new value runs
    the same program (no retrace) with the new value."""
    j = nf.jit(lambda u, s, c: heat(nf, u, s, c))
    u0 = onp.linspace(0, 1, 20)
    for c in (0.1, 0.25, -0.3, 0.1):
        assert_same(j(nf.asarray(u0.copy()), 4, c), heat(onp, u0.copy(), 4, c))
    assert j.stats["traces"] == 1 and j.stats["compiled_runs"] == 4, j.explain()
    assert "a parameter" in j.explain()


def axpy_rows(np, alpha, x, y, beta=1.0):
    for i in range(x.shape[0]):
        y[i] = beta * y[i] + alpha * x[i]
    return y


def test_parameters_in_a_rerolled_loop_and_as_keywords():
    rng = onp.random.default_rng(3)
    x, y = rng.random((5, 3)), rng.random((5, 3))
    j = nf.jit(lambda *a, **k: axpy_rows(nf, *a, **k))
    for alpha, beta in ((2.0, 1.0), (-0.5, 0.25), (1e300, 1e-300)):
        got = j(alpha, nf.asarray(x), nf.asarray(y.copy()), beta=beta)
        assert_same(got, axpy_rows(onp, alpha, x, y.copy(), beta=beta))
    assert j.stats["traces"] == 1 and j.stats["compiled_runs"] == 3, j.explain()
    assert j.programs()[0].loops == 1


def test_a_float_used_in_python_is_a_guard():
    """Its value reaches the program through Python arithmetic (or math, or
    a format): a new value must retrace, the same one must not."""
    import math

    def f(np, x, a):
        s = a * 2.0
        return x * s + math.sqrt(a), f"{a:.1f}"

    j = nf.jit(lambda x, a: f(nf, x, a))
    x = onp.arange(4.0)
    for a in (1.0, 2.0, 1.0, 2.0, 3.0):
        got, label = j(nf.asarray(x), a)
        want, wlabel = f(onp, x, a)
        assert_same(got, want)
        assert label == wlabel
    assert j.stats["traces"] == 3 and j.stats["compiled_runs"] == 5, j.explain()
    assert "guarded by value" in j.explain()


def test_a_float_deciding_an_operation_is_a_guard():
    """x ** 2.0 is NumPy's square, x ** 0.5 its sqrt: the exponent's value
    decides the operation, so it is guarded; an integer array stored from a
    float truncates it (the value is used as an integer): guarded too."""
    def f(np, x, e, k):
        n = np.zeros(3, dtype=np.int64)
        n[1] = k
        return x ** e, n

    j = nf.jit(lambda x, e, k: f(nf, x, e, k))
    x = onp.array([0.0, -0.0, 2.0, onp.inf, 3.5])
    for e, k in ((2.0, 1.5), (0.5, 1.5), (3.0, 2.7), (2.0, 1.5)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (NumPy warns of nothing here: neither may the program)
            got = j(nf.asarray(x), e, k)
        want = f(onp, x, e, k)
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])
    assert j.stats["traces"] == 3 and j.stats["compiled_runs"] == 4, j.explain()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex128"])
def test_parameters_take_numpy_s_weak_scalar_rules(dtype):
    """A Python float is weakly typed: float32 * a stays float32 (the value
    rounded to float32 first), int32 * a is float64, complex stays complex."""
    def f(np, x, a):
        if x.dtype.kind == "c":  # (a program does not view complex memory as its real part)
            return x * a + 1.0, x == a
        return x * a + 1.0, np.where(x > 1, a, x), x < a, np.maximum(x, a)

    x = (onp.arange(5) * 0.7).astype(dtype)
    j = nf.jit(lambda x, a: f(nf, x, a))
    for a in (0.1, 1.3, -7.25):
        got = j(nf.asarray(x), a)
        for g, w in zip(got, f(onp, x, a)):
            assert_same(g, w)
    assert j.stats["compiled_runs"] == 3, j.explain()
    if dtype != "complex128":  # (a complex operand keeps the value as a constant: a guard)
        assert j.stats["traces"] == 1, j.explain()


def test_a_parameter_looks_like_its_float():
    seen = []

    def f(np, x, a):
        seen.append((isinstance(a, float), a == 0.5))
        return x + a, a

    j = nf.jit(lambda x, a: f(nf, x, a))
    got, back = j(nf.ones(2), 0.5)
    assert seen == [(True, True)]
    assert back == 0.5 and type(back) is float
    got, back = j(nf.ones(2), 0.5)  # (a == 0.5 used its value: a guard, same value)
    assert back == 0.5 and j.stats["traces"] == 1
    got, back = j(nf.ones(2), 0.75)
    assert_same(got, onp.full(2, 1.75))
    assert back == 0.75 and j.stats["traces"] == 2


def test_a_division_by_a_zero_parameter_warns_as_numpy_does():
    j = nf.jit(lambda x, a: x / a)
    x = onp.array([1.0, 0.0, -1.0])
    assert_same(j(nf.asarray(x), 2.0), x / 2.0)
    with pytest.warns(RuntimeWarning) as got:
        r = j(nf.asarray(x), 0.0)
    with pytest.warns(RuntimeWarning) as want:
        e = x / 0.0
    assert_same(r, e)
    assert sorted(str(w.message) for w in got) == sorted(str(w.message) for w in want)
    assert j.stats["traces"] == 1 and j.stats["compiled_runs"] == 2


# -- int parameters -------------------------------------------------------------------

def scale_rows(np, x, k, shift):
    for i in range(x.shape[0]):
        x[i] = x[i] * k + shift
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint16"])
def test_an_int_that_only_feeds_arithmetic_is_a_parameter(dtype):
    """An int reaching only numfuse operations is read at each run, with
    NumPy's weak-int rule (the array's type) -- no retrace for a new value."""
    x = (onp.arange(12) % 7).reshape(4, 3).astype(dtype)
    j = nf.jit(lambda x, k, s: scale_rows(nf, x, k, s))
    for k, shift in ((2, 1), (3, 0), (7, 5), (2, 1), (0, 9)):
        got = j(nf.asarray(x.copy()), k, shift)
        assert_same(got, scale_rows(onp, x.copy(), k, shift))
    assert j.stats["traces"] == 1 and j.stats["compiled_runs"] == 5, j.explain()
    assert "int (a parameter: any value)" in j.explain()


def test_an_int_parameter_that_does_not_fit_raises_numpy_s_error():
    """int8 * 100 runs compiled; int8 * 300 is NumPy's OverflowError (the
    program refuses the value, the ordinary run raises); later calls that
    fit run compiled again."""
    x = onp.arange(5, dtype=onp.int8)
    j = nf.jit(lambda x, k: x * k)
    assert_same(j(nf.asarray(x), 100), x * 100)
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        j(nf.asarray(x), 300)
    with pytest.raises(OverflowError):
        x * 300
    assert_same(j(nf.asarray(x), -3), x * -3)
    u = onp.arange(5, dtype=onp.uint8)
    ju = nf.jit(lambda x, k: x + k)
    assert_same(ju(nf.asarray(u), 4), u + 4)
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        ju(nf.asarray(u), -1)
    assert j.stats["traces"] == 1 and ju.stats["traces"] == 1, (j.explain(), ju.explain())


def test_an_int_used_as_a_count_or_an_index_is_a_guard():
    """range(k), x[:k] and x[k] need the value in Python: guarded by value
    (a new value retraces, the same one runs compiled)."""
    def f(np, x, k):
        y = x[:k] * 2
        for i in range(k):
            y[i] += x[k]
        return y

    j = nf.jit(lambda x, k: f(nf, x, k))
    x = onp.arange(10.0)
    for k in (3, 3, 5, 3):
        assert_same(j(nf.asarray(x), k), f(onp, x, k))
    assert j.stats["traces"] == 2 and j.stats["compiled_runs"] == 4, j.explain()
    assert "guarded by value" in j.explain()


def test_an_int_exponent_is_a_guard_and_negative_ones_raise():
    x = onp.arange(1, 6)
    j = nf.jit(lambda x, k: x ** k)
    for k in (2, 3, 2):
        assert_same(j(nf.asarray(x), k), x ** k)
    with pytest.raises(ValueError, match="negative integer powers"):
        j(nf.asarray(x), -1)
    assert j.stats["traces"] == 3, j.explain()  # (2, 3, and the raising call's trace)


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_an_integer_division_by_a_zero_int_parameter_as_numpy(op):
    x = onp.array([7, -7, 0, 5])
    j = nf.jit(lambda x, k: getattr(nf, op)(x, k))
    assert_same(j(nf.asarray(x), 2), getattr(onp, op)(x, 2))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = j(nf.asarray(x), 0)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        e = getattr(onp, op)(x, 0)
    assert_same(r, e)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    assert j.stats["traces"] == 1 and j.stats["compiled_runs"] == 2, j.explain()


def test_ints_that_are_not_parameters():
    """Beyond 2**53 (parameters are read as float64), bools, and an int
    returned as it came (an int, with the call's value)."""
    x = onp.arange(4, dtype=onp.int64)
    j = nf.jit(lambda x, k: x + k)
    for k in (2**60, 2**60 + 1, 5):
        assert_same(j(nf.asarray(x), k), x + k)
    assert j.stats["traces"] == 3, j.explain()  # (each big value its own trace; 5 a parameter)
    jb = nf.jit(lambda x, b: x * b)
    for b in (True, False, True):
        assert_same(jb(nf.asarray(x), b), x * b)
    assert jb.stats["traces"] == 2
    jr = nf.jit(lambda x, k: (x * k, k))
    for k in (3, 4):
        got, back = jr(nf.asarray(x), k)
        assert back == k and type(back) is int
        assert_same(got, x * k)
    assert jr.stats["traces"] == 1


def test_a_float_parameter_is_not_an_index():
    j = nf.jit(lambda x, a: x[:a])
    with pytest.raises(TypeError):
        j(nf.arange(4.0), 2.0)
    with pytest.raises(TypeError):
        onp.arange(4.0)[:2.0]


SHIFT = nf.asarray(onp.arange(6.0))


def add_shift(x):
    for i in range(3):
        x = x + SHIFT
    return x


def test_a_global_array_replaced_retraces():
    global SHIFT
    j = nf.jit(add_shift)
    x = onp.ones(6)
    assert_same(j(nf.asarray(x)), x + 3 * onp.arange(6.0))
    assert_same(j(nf.asarray(x)), x + 3 * onp.arange(6.0))
    old = SHIFT
    try:
        SHIFT = nf.asarray(onp.full(6, 10.0))
        assert_same(j(nf.asarray(x)), x + 30)
    finally:
        SHIFT = old
    assert j.stats["traces"] == 2
    assert "global 'SHIFT' changed" in j.explain()


def test_arguments_sharing_memory_are_a_different_signature():
    def axpy(x, y):
        for i in range(1, x.shape[0]):
            y[i] = y[i] + 2 * x[i - 1]
        return y

    j = nf.jit(axpy)
    a = onp.arange(8.0)
    e = axpy(a.copy(), a.copy())
    assert_same(j(nf.asarray(a.copy()), nf.asarray(a.copy())), e)
    b = nf.asarray(a.copy())
    e2 = a.copy()
    axpy(e2, e2)
    assert_same(j(b, b), e2)
    assert j.stats["traces"] == 2


def data_dependent(np, x):
    found = []
    for i in range(x.shape[0]):
        if x[i] > 0.5:  # a value Python needs (the branch does more than assign)
            found.append(i)
    return len(found)


def test_control_flow_on_values_runs_plainly_and_says_why():
    x = onp.random.default_rng(4).random(30)
    j = nf.jit(lambda a: data_dependent(nf, a))
    for _ in range(2):
        assert j(nf.asarray(x)) == data_dependent(onp, x)
    assert j.stats["compiled_runs"] == 0 and j.stats["traces"] == 1
    assert "runs plainly" in j.explain() and "Python needs a value" in j.explain()


def test_an_error_raised_while_tracing_is_raised_by_the_call():
    def bad(x, y):
        x[0] = 5.0
        return x + y

    j = nf.jit(bad)
    x = nf.asarray(onp.zeros(3))
    with pytest.raises(ValueError):
        j(x, nf.asarray(onp.zeros(4)))
    assert float(x[0]) == 5.0  # the effects before the error happened, as without jit


def test_floating_point_warnings_are_numpy_s():
    def div(x):
        for i in range(x.shape[0]):
            x[i] = 1.0 / x[i]
        return x

    j = nf.jit(div)
    j(nf.asarray(onp.ones(4)))
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        r = j(nf.asarray(onp.array([1.0, 0.0, 2.0])))
    assert_same(r, onp.array([1.0, onp.inf, 0.5]))
    assert j.stats["compiled_runs"] == 2


def test_numpy_array_arguments_run_plainly():
    j = nf.jit(lambda x: x * 2)
    assert_same(j(onp.arange(3.0)), onp.arange(3.0) * 2)
    assert "NumPy array" in j.explain()


def test_jit_as_a_decorator_with_options():
    @nf.jit(max_traces=2)
    def prefix(u):
        for i in range(1, u.shape[0]):
            u[i] = u[i] + u[i - 1]
        return u

    for n in (4, 5, 6, 4):
        x = onp.arange(float(n))
        assert_same(prefix(nf.asarray(x.copy())), onp.cumsum(x))
    assert len(prefix.programs()) == 2  # bounded: the oldest was dropped
    assert prefix.stats["traces"] == 4


def test_a_method_runs_plainly_and_says_why():
    class Solver:
        @nf.jit
        def run(self, u):
            u[1:] = u[1:] + u[:-1]
            return u

    x = onp.arange(5.0)
    e = x.copy()
    e[1:] = e[1:] + e[:-1]
    assert_same(Solver().run(nf.asarray(x)), e)
    assert "an argument of type Solver" in Solver.run.explain()


def test_random_loop_programs_match_numpy():
    rng = onp.random.default_rng(5)
    for trial in range(12):
        n = int(rng.integers(4, 12))
        ops = rng.integers(0, 5, size=int(rng.integers(1, 4)))
        c = float(rng.uniform(0.1, 0.9))

        def prog(np, x, y, ops=ops, c=c):
            for i in range(1, x.shape[0] - 1):
                for op in ops:
                    if op == 0:
                        x[i] = x[i - 1] * c + y[i + 1]
                    elif op == 1:
                        y[i, :i] = np.maximum(y[i, :i], x[i, :i] - c)
                    elif op == 2:
                        x[i, 1:] = x[i, 1:] + np.sqrt(np.abs(y[i - 1, :-1]))
                    elif op == 3:
                        y[i] = y[i] - x[:i + 1].sum(axis=0) * 0.01
                    else:
                        x[i, i] = np.dot(x[i, :i], y[i, :i]) * 0.1
            return x, y

        x = rng.standard_normal((n, n))
        y = rng.standard_normal((n, n))
        run_both(prog, x, y)


def test_products_large_enough_for_blas_run_plainly():
    def rows(np, A, C):
        for i in range(A.shape[0]):
            C[i, :i + 1] = 0.5 * C[i, :i + 1] + A[:i + 1] @ A[i]
        return C

    rng = onp.random.default_rng(9)
    j = run_both(rows, rng.random((200, 96)), rng.random((200, 200)), expect_compiled=False)
    assert "BLAS" in j.explain()
    j = run_both(rows, rng.random((20, 8)), rng.random((20, 20)))  # small: compiled


def mixed_dtypes(np, a, b, c):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 3 + a[i]          # int8: wraps as NumPy's does
        b[i] = (b[i - 1] * (0.5 + 0.25j)) + b[i]
        c[i] = c[i - 1] ^ (a[i] > 0)
    return a, b, c, a[1:-1].sum(), b.sum()


@pytest.mark.filterwarnings("ignore:overflow encountered in scalar multiply")  # (NumPy's scalars)
def test_integer_wraparound_complex_and_bool_programs():
    a = (onp.arange(12) - 5).astype("int8")
    b = (onp.arange(12) * (1 - 1j)).astype("complex128")
    c = (onp.arange(12) % 3 == 0)
    run_both(mixed_dtypes, a, b, c)


def empty_and_views(np, x):
    for i in range(x.shape[0]):
        x[i, :i] = x[i, :i] * 2  # the first row's slice is empty
    return x[1:, ::2], x.T


def test_empty_slices_and_returned_views():
    j = run_both(empty_and_views, onp.arange(20.0).reshape(4, 5))
    x = nf.asarray(onp.arange(20.0).reshape(4, 5))
    v, t = j(x)
    assert t.shape == (5, 4) and v.strides == (40, 16)


# ---------------------------------------------------------------------------
# Random programs (the interpreter of test_random_programs: overlapping
# in-place updates through views, reductions feeding updates, assignments,
# explicit flushes), each the body of a jitted function over its arrays:
# NumPy's results on the traced call and on a compiled one. (A program with
# a flush runs the ordinary way: its results must be NumPy's all the same.)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import test_random_programs as rp  # noqa: E402


class _ArgsInterp(rp.Interp):
    def __init__(self, m, arrays):
        self.m = m
        self.vars = list(arrays)
        self.trace = []


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(rp.step_st, min_size=1, max_size=10), seed=st.integers(0, 3),
       main=st.integers(0, len(rp.SHAPES) - 1), loop=st.integers(1, 4))
def test_random_programs_in_a_loop_match_numpy(steps, seed, main, loop):
    bases = rp._bases(seed)

    def body(m, *arrays):
        out = []
        for _ in range(loop):  # the same steps again: a loop to reroll
            it = _ArgsInterp(m, arrays)
            out = it.run(steps, main)
        return tuple(out)

    expected = body(onp, *[b.copy() for b in bases])
    j = nf.jit(lambda *a: body(nf, *a))
    for _ in range(2):
        got = j(*[nf.asarray(b.copy()) for b in bases])
        rp._compare(list(got), list(expected), [f"loop {loop}"] + [str(s) for s in steps])
    flushes = any(s[0] == 5 and s[1] % 2 == 0 for s in steps)
    if not flushes:
        assert j.stats["traces"] == 1


@pytest.mark.parametrize("tier", ["lazy", "eager"])
def test_loop_programs_on_every_tier(tier):
    # The traced call captures the same whatever the tier; the ordinary
    # run (run_both's plain run) and the programs' results are NumPy's.
    with nf.config(tier=tier):
        run_both(cholesky, spd(9))
        run_both(gauss_seidel, onp.random.default_rng(1).random((8, 8)), onp.random.default_rng(2).random((8, 8)), 2)
        run_both(levinson, onp.array([2.0, 0.9, 0.4, 0.1, 0.05]))
        run_both(data_dependent, onp.random.default_rng(4).random(9), expect_compiled=False)
        # Bounds and gather indices read from the arguments (tables, content guards).
        j = run_both(_loop_program("spmv_csr"), *csr(12, 3, 4), 2)
        assert "the values of argument 0" in j.explain()
        # Choices on array values and Python numbers (traced again rewritten).
        rng = onp.random.default_rng(5)
        for fn, make in ((nussinov, lambda: rng.integers(0, 4, 9)),
                         (crc16, lambda: rng.integers(0, 256, 12, dtype=onp.uint8)),
                         (relax, lambda: rng.integers(0, 30, (5, 5)).astype(onp.float64))):
            _select_calls(nf.jit(lambda a, fn=fn: fn(nf, a)), make(), fn, make())


@pytest.mark.parametrize("chunk", range(10))
def test_fuzz_programs_under_jit_match_numpy(chunk):
    """The differential fuzzer's random programs (tests/fuzz: creation,
    elementwise, indexing, layouts, reductions, error probes, interop), each
    run as one jit function twice (traced, then the compiled program where
    the trace became one): results, raised exceptions, dtypes and layouts
    (flags, strides) as NumPy's. Programs that need values in Python run
    plainly; a good share must compile, or the test proves nothing."""
    import sys
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fuzz import programs, runner

    failing, compiled = [], 0
    seeds = range(40 * chunk, 40 * chunk + 40)
    for seed in seeds:
        prog = programs.generate(seed)
        want = runner.run_program(prog, onp)
        got, fn = runner.run_program_jit(prog)
        compiled += fn.stats["compiled_runs"] == 2
        ms = runner.compare(want, got, prog)
        if ms:
            failing.append(f"seed {seed} ({fn.stats}):\n" + "\n".join(str(m) for m in ms[:4]) +
                           "\nprogram:\n" + prog.text())
    assert not failing, "\n\n".join(failing[:3])
    assert compiled >= len(seeds) // 5, f"only {compiled} of {len(seeds)} programs compiled"


def test_an_element_read_while_tracing_is_a_scalar():
    """a[i] is a NumPy scalar: `s += 1` rebinds it (another name keeps the
    old value) and item assignment raises, traced or not."""
    def f(np, a):
        b = a * 2
        s = b[2]
        t = s
        s += 1
        try:
            s[...] = 7
            err = None
        except TypeError as e:
            err = str(e)
        return t, s, err

    x = onp.arange(5.0)
    want = f(onp, x)
    j = nf.jit(lambda a: f(nf, a))
    for _ in range(2):
        got = j(nf.asarray(x))
        assert got[0] == want[0] and got[1] == want[1] and got[2] == want[2]
        assert type(got[0]) is type(want[0])
    assert j.stats["compiled_runs"] == 2, j.explain()


def sweeps(np, d, a):
    """Row and column recurrences (each row or column from the previous one,
    through a temporary: the program computes it in place of the copy, the
    rows being apart in memory), shifted in-place updates (`+=` on slices:
    the copy back is a no-op) and an overlapping shift (x[1:] from x[:-1],
    which must read the old values)."""
    n = d.shape[0]
    for i in range(1, n):
        d[i] = (d[i] - a * d[i - 1]) * 0.5
    for j in range(1, n):
        d[:, j] = d[:, j] - a * d[:, j - 1]
    for i in range(n - 2, -1, -1):
        d[i] = d[i] - 0.25 * d[i + 1]
    for k in range(2):
        d[1:, :] += 0.125 * d[:-1, :]
        t = d[0] * 1.0
        d[0, 1:] = t[:-1] + 1.0
    return d


def test_recurrences_over_rows_and_columns_fused_in_place():
    j = run_both(sweeps, onp.random.default_rng(5).random((9, 9)), 0.3)
    src = j.programs()[0].source
    assert src.count("for (") <= 13, src  # (18 with a loop per temporary and per no-op copy)


def scans_and_args(np, x, y):
    rows = []
    for i in range(x.shape[0]):
        rows.append(np.cumsum(x[i]))
    s = 0
    for i in range(y.shape[0]):
        s = s + np.argmax(y[i]) - np.argmin(y[i])
    return (rows, np.cumprod(y, axis=0), np.cumsum(y, axis=1), np.cumsum(x.astype(np.int8), axis=0),
            np.argmax(y, axis=0), np.argmin(y, axis=1), np.argmax(x), y.argmin(), s)


@pytest.mark.parametrize("nan", [False, True])
def test_cumulative_and_arg_reductions_in_programs(nan):
    """cumsum/cumprod (each point from the one before, in the result's type)
    and argmax/argmin (the first of equal values; a NaN wins) compile into
    programs."""
    rng = onp.random.default_rng(1)
    x = rng.random((4, 7)) * 300
    y = rng.integers(0, 3, (5, 6)).astype(float)
    if nan:
        y[2, 3] = y[4, 0] = onp.nan
    run_both(scans_and_args, x, y)


def test_a_dynamic_program_with_min_of_elements_compiles():
    """min/max of element values (of one dtype) inside a traced function is
    the select Python's builtin makes, so the table fills in the program."""
    rng = onp.random.default_rng(4)
    j = run_both(edit_distance, rng.integers(0, 4, 13), rng.integers(0, 4, 9))
    assert j.programs()[0].loops == 2


def extremes(np, x):
    out = []
    for i in range(x.shape[0] - 1):
        out.append(max(x[i], x[i + 1]))
        out.append(min(x[i + 1], x[i], x[0]))
    return out


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_builtin_max_and_min_of_elements_pick_as_python_does(dtype):
    """NaN only where Python's comparisons keep it (max(nan, 1) is nan,
    max(1, nan) is 1), the first of equal values (max(0.0, -0.0) is 0.0),
    NumPy scalars of the elements' type; a Python number among the
    arguments is the builtin's business (the trace stops: a plain run)."""
    x = onp.array([0.0, -0.0, onp.nan, 1.0, onp.nan, -2.0, 0.0]).astype(dtype) if dtype == "float64" else \
        onp.array([3, 1, 1, 0, 5, 5, 2]).astype(dtype)
    j = nf.jit(lambda a: extremes(nf, a))
    want = extremes(onp, x)
    for _ in range(2):
        got = j(nf.asarray(x))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert type(g) is type(w)
            assert onp.array_equal(g, w, equal_nan=True) and onp.signbit(g) == onp.signbit(w)
    assert j.stats["compiled_runs"] == 2, j.explain()
    k = nf.jit(lambda a: max(a[0], 1))  # (a Python int among them: the builtin, which needs the value)
    assert k(nf.asarray(x)) == max(x[0], 1)
    assert k.stats["plain_runs"] == 1


# -- conditional expressions on array values ---------------------------------

nussinov = _loop_program("nussinov")


def _select_calls(j, x, fn, *more, compiled=True):
    """j(x) against fn(numpy, x) for the traced call, a compiled one, and
    calls with other data of the same signature (no retrace)."""
    for data in (x,) + more:
        want = fn(onp, data.copy())
        got = j(nf.asarray(data.copy()))
        assert_same(got, want)
    if compiled:
        assert j.stats["plain_runs"] == 0 and j.stats["compiled_runs"] == 1 + len(more), j.explain()
    return j


def test_nussinov_selects_on_element_values_compile():
    """`1 if seq[i] + seq[j] == 3 else 0` needs an element's value: the
    function (here called from the jitted one, as the benchmark does) is
    traced again with its conditional expressions as selects, and the whole
    dynamic program is one compiled program; other data, no retrace."""
    rng = onp.random.default_rng(3)
    j = nf.jit(lambda s: nussinov(nf, s))
    code = nussinov.__code__
    _select_calls(j, rng.integers(0, 4, 14), nussinov, rng.integers(0, 4, 14), rng.integers(0, 4, 14))
    assert j.stats["traces"] == 2  # (the first stopped at the condition)
    assert nussinov.__code__ is code  # (the rewritten code ran for the trace only)
    assert "choices on values as selects" in j.explain()
    assert nussinov(onp, onp.array([0, 1, 1, 3]))[0, 3] == 1  # (the plain function is unchanged: 0-3 pair)


def pick_elements(np, x, y):
    out = np.zeros(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        out[i] = x[i] if x[i] > y[i] else y[i] - x[i]
    return out


def weak_int(np, x):
    t = np.zeros(x.shape[0], dtype=x.dtype)
    for i in range(1, x.shape[0]):
        t[i] = t[i - 1] + (2 if x[i] > x[i - 1] else 1) * 3
    return t


def weak_float(np, x):
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + x[i] * (0.5 if x[i] < 2 else -1.5)
    return acc


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint8", "int64"])
def test_selects_keep_numpy_s_types(dtype):
    """Branches that are element values give a value of their dtype; branches
    that are Python scalars stay Python scalars for NumPy's promotion (int8
    + a Python int is int8, float32 * a Python float is float32)."""
    rng = onp.random.default_rng(5)
    x, y = (rng.integers(0, 4, 9).astype(dtype) for _ in range(2))
    j = nf.jit(lambda a, b: pick_elements(nf, a, b))
    for _ in range(2):
        assert_same(j(nf.asarray(x), nf.asarray(y)), pick_elements(onp, x, y))
    assert j.stats["plain_runs"] == 0, j.explain()
    for fn in (weak_int, weak_float):
        j = nf.jit(lambda a, fn=fn: fn(nf, a))
        _select_calls(j, x, fn, rng.integers(0, 4, 9).astype(dtype))


def out_of_range(np, x):
    t = np.zeros(x.shape[0], dtype=np.uint8)
    for i in range(x.shape[0]):
        t[i] = x[i] + (-1 if x[i] > 100 else 1)  # (NumPy raises only where -1 is chosen)
    return t


def raises_in_a_branch(np, x):
    t = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        t[i] = 1.0 if x[i] > 0 else 1 // 0
    return t


def value_in_python(np, x):
    n = 0
    for i in range(x.shape[0]):
        n += [10, 20, 30][1 if x[i] > 0 else 2]  # (a list index: Python needs the number)
    return n


def test_selects_that_are_not_exact_run_plainly():
    """A branch NumPy would type or check differently, a branch that raises
    where the other is taken, a select whose value Python needs: the call
    runs the ordinary way, with NumPy's results and errors."""
    x = onp.array([3, 5, 7], dtype=onp.uint8)
    j = nf.jit(lambda a: out_of_range(nf, a))
    assert_same(j(nf.asarray(x)), out_of_range(onp, x))
    assert j.stats["plain_runs"] == 1 and "dtype may not hold it" in j.explain()
    x[1] = 200
    with pytest.raises(OverflowError):
        out_of_range(onp, x)
    with pytest.raises(OverflowError):
        j(nf.asarray(x))
    k = nf.jit(lambda a: raises_in_a_branch(nf, a))
    assert_same(k(nf.asarray(onp.ones(3))), raises_in_a_branch(onp, onp.ones(3)))
    assert k.stats["plain_runs"] == 1 and "raised ZeroDivisionError" in k.explain()
    with pytest.raises(ZeroDivisionError):
        k(nf.asarray(-onp.ones(3)))
    v = nf.jit(lambda a: value_in_python(nf, a))
    x = onp.array([1.0, -1.0, 2.0])
    assert v(nf.asarray(x)) == value_in_python(onp, x)
    assert v.stats["plain_runs"] == 1 and "Python needs the value of a number" in v.explain()


def test_select_stand_in_behaves_as_its_type():
    seen = []

    def f(np, x):
        p = 3 if x[0] > 0 else 4
        seen.append((isinstance(p, int), isinstance(p, float)))
        q = (p + 1) * 2 - p  # (Python arithmetic: both branches)
        return x * q

    j = nf.jit(lambda a: f(nf, a))
    for data in ([1.0, 2.0], [-1.0, 2.0]):
        x = onp.array(data, dtype=onp.float32)
        assert_same(j(nf.asarray(x)), f(onp, x))
    assert j.stats["plain_runs"] == 0, j.explain()
    assert (True, False) in seen


def test_closures_and_python_conditions_with_selects():
    """A rewritten function keeps its closure; a condition on Python values
    still takes one branch only (the other may fail)."""
    scale = 2

    def f(np, x, idx):
        out = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = (x[i] * scale if x[i] > 0 else -x[i]) + (x[idx[i]] if i < 3 else 0.0)
        return out

    x = onp.array([1.0, -2.0, 3.0, -4.0])
    j = nf.jit(lambda a: f(nf, a, [1, 2, 3, 99]))
    _select_calls(j, x, lambda np, a: f(np, a, [1, 2, 3, 99]), -x)


def relax(np, d):
    n = d.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if d[i, k] + d[k, j] < d[i, j]:
                    d[i, j] = d[i, k] + d[k, j]
    return d


def bubble(np, a):
    n = a.shape[0]
    for i in range(n):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
    return a


def running(np, x):
    lo = hi = x[0]
    s = x[0] * 0
    for i in range(1, x.shape[0]):
        if x[i] < lo:
            lo = x[i]
        if x[i] > hi:
            hi = x[i]
        if x[i] > 0:
            s = s + x[i]
        else:
            s -= x[i] * 2
    return lo, hi, s


def counting(np, x):
    count = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            count += 2
        else:
            count += 1
    return count


def chain(np, x):
    out = np.zeros(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        if x[i] > 1:
            out[i] = 1
        elif x[i] < -1:  # (an `elif` on an array value: a nested choice)
            out[i] = -1
    return out


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_if_statements_that_assign_are_selects(dtype):
    """`if` on an element value whose branches assign names, elements or a
    swap of elements: traced again with the `if` as selects, compiled, and
    later data (other branches taken) without a retrace."""
    rng = onp.random.default_rng(9)
    mk = (lambda *s: rng.integers(0, 50, s).astype(dtype))
    j = nf.jit(lambda d: relax(nf, d))
    _select_calls(j, mk(7, 7), relax, mk(7, 7))
    assert "choices on values as selects" in j.explain()
    j = nf.jit(lambda a: bubble(nf, a))
    _select_calls(j, mk(9), bubble, mk(9), onp.arange(9).astype(dtype))
    x = (rng.standard_normal(12) * 10).astype(dtype)
    j = nf.jit(lambda a: running(nf, a))
    _select_calls(j, x, running, -x, x[::-1].copy())
    # `count`, a Python int each `if` chooses anew: a Python number the
    # program computes (returned as a Python int); an `elif` chain.
    j = nf.jit(lambda a: counting(nf, a))
    _select_calls(j, x, counting, -x)
    assert type(j(nf.asarray(x))) is int
    j = nf.jit(lambda a: chain(nf, a))
    _select_calls(j, x, chain, -x, x[::-1].copy())


def unbound(np, x):
    for i in range(x.shape[0]):
        if x[i] > 0:
            y = x[i]
    return y


def stores_other_dtype(np, x):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        if x[i] > 0:
            out[i] = 2.5  # (NumPy truncates: a conversion the select does not make)
    return out


def in_place_array(np, x):
    acc = np.zeros(3)
    for i in range(x.shape[0]):
        if x[i] > 0:
            acc += x[i]  # (in place: acc is an array)
    return acc


def python_condition(np, x, flags):
    out = x * 0
    for i in range(x.shape[0]):
        if flags[i]:  # (a Python value: one branch runs, the other may fail)
            out[i] = x[i]
        else:
            out[i] = x[i + 100]
    return out


def test_if_statements_that_cannot_be_selects_run_plainly():
    x = onp.array([1.0, -2.0, 3.0])
    for fn in (unbound, stores_other_dtype, in_place_array):
        j = nf.jit(lambda a, fn=fn: fn(nf, a))
        for data in (x, -x):
            try:
                want = fn(onp, data.copy())
            except UnboundLocalError:
                with pytest.raises(UnboundLocalError):
                    j(nf.asarray(data.copy()))
                continue
            assert_same(j(nf.asarray(data.copy())), want)
        assert j.stats["compiled_runs"] == 0 and j.stats["plain_runs"] == 2, j.explain()
    flags = [True, True, True]
    j = nf.jit(lambda a: python_condition(nf, a, flags))
    _select_calls(j, x, lambda np, a: python_condition(np, a, flags), -x)


def rows_and_elements(np, A, v):
    out = []
    for i, row in enumerate(A):
        out.append(row.sum() * i)
    total = v[0] * 0
    for x in v:
        total = total + x * 2
    return out, total


def test_iterating_arrays_is_a_marked_loop():
    """`for row in A` / `for x in v` inside a trace reads rows and elements
    (NumPy scalars) by indexing, the loop rerolled as a range loop is."""
    rng = onp.random.default_rng(2)
    A, v = rng.random((5, 3)), rng.integers(0, 9, 40).astype(onp.uint32)
    j = run_both(rows_and_elements, A, v)
    import re
    trips = [int(t) for t in re.findall(r"in range\((\d+)\)", j.programs()[0].description)]
    assert max(trips) >= 30, j.programs()[0].description  # (the 40 elements: one loop, not 40 copies)


def prologue(np, v):
    from numfuse import _jit
    out = []
    for x in _jit._MarkedIter(v[i] for i in range(v.shape[0])):  # (reads before each iteration's mark)
        out.append(x + 1)
    return out


def test_work_an_iterator_records_before_its_first_iteration_runs_first():
    x = onp.random.default_rng(990374).integers(0, 20, size=(16,)).astype("uint32")
    j = nf.jit(lambda a: prologue(nf, a))
    for _ in range(2):
        got = j(nf.asarray(x))
        assert [int(g) for g in got] == [int(w) for w in x + 1]
    assert j.stats["compiled_runs"] == 2, j.explain()


crc16 = _loop_program("crc16")


def test_python_ints_computed_from_elements_compile():
    """CRC-16 bit by bit: `int(b)` of each byte, `if (crc & 1) ^ (b & 1)`,
    shifts and xors of Python ints -- numbers the program computes, each
    with bounds that keep int64 exact; the result is a Python int."""
    rng = onp.random.default_rng(8)
    j = nf.jit(lambda d: crc16(nf, d))
    data = [rng.integers(0, 256, 50, dtype=onp.uint8) for _ in range(3)]
    for d in data:
        got = j(nf.asarray(d))
        assert type(got) is int and got == crc16(onp, d)
    assert j.stats["compiled_runs"] == 3 and j.stats["traces"] == 2, j.explain()


def numbers(np, x, y, out):
    total, hist, fsum = 0, 0, 0.0
    for i in range(x.shape[0]):
        k = int(x[i])           # (an int from a uint8 element: 0..255)
        total += k * 3 - (k >> 2)
        hist = hist | (1 << (k % 8))
        fsum = fsum + float(y[i]) * 0.5 + x[i].item() / 4
        out[i] = total % 1000    # (a Python int stored: NumPy's conversion)
    return total, hist, fsum, (total > 10) & (fsum < 1e9)


def test_python_numbers_the_program_computes_follow_python():
    rng = onp.random.default_rng(3)
    mk = lambda: (rng.integers(0, 256, 20, dtype=onp.uint8), rng.standard_normal(20),  # noqa: E731
                  onp.zeros(20, dtype=onp.int32))
    j = nf.jit(lambda a, b, c: numbers(nf, a, b, c))
    for _ in range(3):
        x, y, out = mk()
        want_out = out.copy()
        want = numbers(onp, x, y, want_out)
        got_out = nf.asarray(out)
        got = j(nf.asarray(x), nf.asarray(y), got_out)
        assert [type(g) for g in got] == [type(w) for w in want]
        assert got[:3] == want[:3] and got[3] == want[3]
        assert_same(got_out, want_out)
    assert j.stats["plain_runs"] == 0, j.explain()


def grows(np, x):
    p = 1
    for i in range(x.shape[0]):
        p = p * int(x[i])  # (a Python int beyond int64 after a few: not exact in int64)
    return p


def narrow(np, x, small):
    n = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            n += 1
    return small + n  # (int8 + a Python int NumPy range-checks: n may reach 200)


def divides(np, x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + 1.0 / float(x[i])  # (a division by a number that may be 0: Python raises)
    return s


def indexes(np, x, t):
    return t[int(x[0])]  # (a Python int used as an index: Python needs it)


def test_python_numbers_that_would_not_be_exact_run_plainly():
    big = onp.full(30, 2**40, dtype=onp.int64)
    j = nf.jit(lambda a: grows(nf, a))
    assert j(nf.asarray(big)) == grows(onp, big) and j.stats["plain_runs"] == 1
    assert "could leave int64" in j.explain() or "not exact in int64" in j.explain()
    x = onp.ones(200)
    small = onp.zeros(1, dtype=onp.int8)
    j = nf.jit(lambda a, s: narrow(nf, a, s))
    with pytest.raises(OverflowError):
        narrow(onp, x, small)
    with pytest.raises(OverflowError):
        j(nf.asarray(x), nf.asarray(small))
    assert_same(j(nf.asarray(x[:100]), nf.asarray(small)), narrow(onp, x[:100], small))
    j = nf.jit(lambda a: divides(nf, a))
    with pytest.raises(ZeroDivisionError):
        j(nf.asarray(onp.array([1.0, 0.0])))
    assert j(nf.asarray(onp.array([1.0, 4.0]))) == divides(onp, onp.array([1.0, 4.0]))
    assert j.stats["compiled_runs"] == 0
    t = onp.arange(5.0)
    j = nf.jit(lambda a, b: indexes(nf, a, b))
    assert_same(j(nf.asarray(onp.array([3])), nf.asarray(t)), indexes(onp, onp.array([3]), t))
    assert j.stats["compiled_runs"] == 0 and "Python needs" in j.explain()


# Random loop bodies of choices and Python numbers (differential: NumPy's
# results and types, or NumPy's exception, whatever jit makes of them).
_STMTS = [
    "a = a {op} int(x[i])",
    "a = (a {op} 3) % 1000",
    "if x[i] {cmp} 3:\n        a = a + 1\n    else:\n        b = b * 0.5",
    "v = x[i] if y[i] > 0 else x[i - 1]\n    a = a + int(v)",
    "out[i] = a % 100",
    "if y[i] > b:\n        b = y[i]",
    "b = b + float(y[i]) * 0.25",
    "a = a if x[i] {cmp} 5 else a + 2",
    "k = x[i].item()\n    a = a ^ k",
    "if x[i] {cmp} x[i - 1]:\n        out[i], out[i - 1] = out[i - 1], out[i]",
    "c = 1.5 if y[i] {cmp} 0 else -2.0\n    b = b - c",
    "a += 7 if x[i] & 1 else 1",
    "out[i] = out[i] + (1 if y[i] > 0 else 0)",
    "b = b + a / 8",
    "if x[i] > 2 and y[i] < 0:\n        a = a + 1\n    elif x[i] {cmp} 0:\n        b = b - 1.0",
    "if not x[i] > 4 or y[i] > 1:\n        out[i] = x[i]",
    "if y[i] > 0:\n        if x[i] {cmp} 3:\n            a = a + 2\n        else:\n            out[i] = 1\n"
    "    else:\n        b = b + 1.0",
    "a = a + (1 if x[i] > 1 and x[i] < 7 else 0)",
    "a = max(a, int(x[i]) * 2 - 5)",
    "a = min(a + 3, int(x[i]), 6)",
]


def _random_body(draw_stmts):
    lines = []
    for k, op, cmp in draw_stmts:
        lines.append("    " + _STMTS[k].format(op=op, cmp=cmp))
    src = ("def body(np, x, y, out):\n    a, b = 0, y[0] * 1.0\n    for i in range(1, x.shape[0]):\n"
           + "\n".join("    " + ln for ln in "\n".join(lines).split("\n")) + "\n    return a, b, out\n")
    return src


def _check_random_body(stmts, dtype, seed, folder):
    """One random body under NumPy and jit (two calls, other data each):
    the same values and types, or the same exception. Returns the jit
    function."""
    src = _random_body(stmts)
    path = os.path.join(folder, f"body_{abs(hash((tuple(stmts), dtype, seed)))}.py")
    with open(path, "w") as f:  # (a file: jit rewrites a function from its source)
        f.write(src)
    ns = {}
    exec(compile(src, path, "exec"), ns)
    body = ns["body"]
    j = nf.jit(lambda x, y, out: body(nf, x, y, out))
    rng = onp.random.default_rng(seed)
    for _ in range(2):
        x, y = rng.integers(0, 10, 12).astype(dtype), rng.standard_normal(12)
        try:
            want = body(onp, x.copy(), y.copy(), onp.zeros(12, dtype=dtype))
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                j(nf.asarray(x), nf.asarray(y), nf.asarray(onp.zeros(12, dtype=dtype)))
            continue
        got = j(nf.asarray(x), nf.asarray(y), nf.asarray(onp.zeros(12, dtype=dtype)))
        assert [type(g) for g in got[:2]] == [type(w) for w in want[:2]], src
        assert got[0] == want[0], src
        assert onp.array_equal(got[1], want[1], equal_nan=True), src
        assert_same(got[2], want[2])
    return j


_ops = st.sampled_from(["+", "-", "*", "&", "|", "^"])
_cmps = st.sampled_from(["<", ">", "==", "!=", ">="])


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(stmts=st.lists(st.tuples(st.integers(0, len(_STMTS) - 1), _ops, _cmps), min_size=1, max_size=5),
       dtype=st.sampled_from(["uint8", "int32", "int64"]), seed=st.integers(0, 3))
def test_random_choices_and_python_numbers_match_numpy(stmts, dtype, seed, tmp_path_factory):
    _check_random_body(stmts, dtype, seed, str(tmp_path_factory.mktemp("bodies")))


def test_most_random_choice_programs_compile(tmp_path):
    """The same programs, 40 drawn with a fixed seed: at least half become
    programs (the others stop where an int's bounds would leave int64)."""
    import random
    r = random.Random(0)
    compiled = 0
    for n in range(40):
        stmts = [(r.randrange(len(_STMTS)), r.choice("+-*&|^"), r.choice(["<", ">", "==", "!=", ">="]))
                 for _ in range(r.randint(1, 5))]
        j = _check_random_body(stmts, r.choice(["uint8", "int32", "int64"]), n % 4, str(tmp_path))
        compiled += j.stats["compiled_runs"] > 0
    assert compiled >= 20, compiled


def nested(np, x, y):
    out = np.zeros(x.shape[0], dtype=x.dtype)
    best = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > 2 and not y[i] < 0:
            if y[i] > 0.5:
                out[i] = x[i]
                best = best + x[i]
            elif i % 2 == 0:   # (a Python condition inside a choice on an array value)
                out[i - 1] = x[i - 1]
            else:
                best = best - 1
        elif x[i] == 0 or y[i] < -1:
            out[i] = 7
        else:
            pass
    return out, best


def test_nested_ifs_elif_chains_and_boolean_operators_are_choices():
    rng = onp.random.default_rng(12)
    for dtype in ("int64", "float32"):
        x, y = rng.integers(0, 6, 30).astype(dtype), rng.standard_normal(30)
        j = nf.jit(lambda a, b: nested(nf, a, b))
        for k in range(3):
            xx, yy = (x, y) if k == 0 else (rng.integers(0, 6, 30).astype(dtype), rng.standard_normal(30))
            want = nested(onp, xx.copy(), yy.copy())
            assert_same(j(nf.asarray(xx), nf.asarray(yy)), want)
        assert j.stats["compiled_runs"] == 3 and j.stats["plain_runs"] == 0, j.explain()


def test_a_function_whose_source_changed_is_not_rewritten(tmp_path):
    """The rewrite compiles the function's source: where the file no longer
    holds the function's code (edited since the import, a notebook cell run
    again), the function runs the ordinary way, as it is."""
    import importlib.util
    import linecache
    path = tmp_path / "edited.py"
    path.write_text("def f(np, x):\n    t = 0\n    for i in range(x.shape[0]):\n"
                    "        t = t + (1 if x[i] > 0 else 0)\n    return t\n")
    spec = importlib.util.spec_from_file_location("edited_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path.write_text("def f(np, x):\n    t = 0\n    for i in range(x.shape[0]):\n"
                    "        t = t + (5 if x[i] > 0 else 0)\n    return t\n")
    linecache.checkcache(str(path))
    x = onp.array([1.0, -1.0, 2.0])
    j = nf.jit(lambda a: mod.f(nf, a))
    assert j(nf.asarray(x)) == mod.f(onp, x) == 2
    assert j.stats["plain_runs"] == 1 and j.stats["traces"] == 1, j.explain()


class _Scaler:
    def __init__(self, k):
        self.k = k

    def pick(self, np, x, i):
        return x[i] * self.k if x[i] > 0 else -x[i]


_scaler = _Scaler(3.0)


@nf.jit
def _decorated(x):
    out = x * 0
    counter = [0]

    def bump(v):
        nonlocal counter
        return v + 1.0 if v > 1 else v  # (a closure of the traced function: rewritten too)

    for i in range(x.shape[0]):
        out[i] = bump(_scaler.pick(nf, x, i))
    counter[0] += 1
    return out


def test_choices_in_methods_closures_and_decorated_functions():
    """The rewrite compiles the function it stopped in from its source with
    its free variables kept free: a method (self read from the call), a
    closure defined in the traced function (made again by the rewritten
    code), a function decorated with numfuse.jit."""
    rng = onp.random.default_rng(4)

    def expected(x):
        out = x * 0
        for i in range(x.shape[0]):
            v = x[i] * 3.0 if x[i] > 0 else -x[i]
            out[i] = v + 1.0 if v > 1 else v
        return out

    for _ in range(3):
        x = rng.standard_normal(8)
        assert_same(_decorated(nf.asarray(x)), expected(x))
    assert _decorated.stats["compiled_runs"] == 3, _decorated.explain()
    assert _Scaler.pick.__code__.co_qualname == "_Scaler.pick"  # (restored)


def extremes_of_numbers(np, x):
    best, worst, acc = 0, 10**6, 0.0
    for i in range(x.shape[0]):
        k = int(x[i])
        best = max(best, k * 2 - 3)
        worst = min(k, worst, 7)
        acc = max(acc, float(x[i]) / 2)
    return best, worst, acc


def test_builtin_max_and_min_of_python_numbers_the_program_computes():
    rng = onp.random.default_rng(7)
    j = nf.jit(lambda a: extremes_of_numbers(nf, a))
    for _ in range(3):
        x = rng.integers(0, 50, 20).astype(onp.int32)
        got, want = j(nf.asarray(x)), extremes_of_numbers(onp, x)
        assert got == want and [type(g) for g in got] == [type(w) for w in want]
    assert j.stats["compiled_runs"] == 3, j.explain()


# ---------------------------------------------------------------------------
# Bounds and indices read from the arguments (content guards), and loops
# whose numbers do not move affinely (tables).

spmv_csr = _loop_program("spmv_csr")


def spmv_elements(np, indptr, indices, data, x0, iters):
    """SpMV with the row bounds read as elements (`indptr[i]`, as Numba
    code writes it) and `int(...)` of them."""
    n = indptr.shape[0] - 1
    x = x0
    for _ in range(iters):
        y = np.zeros(n)
        for i in range(n):
            lo, hi = int(indptr[i]), indptr[i + 1]
            y[i] = np.dot(data[lo:hi], x[indices[lo:hi]])
        x = y / np.linalg.norm(y)
    return x


def csr(n, per_row, seed, fixed=False):
    rng = onp.random.default_rng(seed)
    counts = onp.full(n, per_row) if fixed else rng.integers(2, 2 * per_row, n)  # (rows of 2 or more)
    indices = onp.concatenate([onp.sort(rng.choice(n, min(c, n), replace=False)) for c in counts]).astype(onp.int64)
    indptr = onp.concatenate([[0], onp.cumsum([min(c, n) for c in counts])]).astype(onp.int64)
    return indptr, indices, rng.random(int(indptr[-1])), rng.random(n)


@pytest.mark.parametrize("fn", [spmv_csr, spmv_elements], ids=["tolist", "elements"])
def test_slices_bounded_by_an_argument_s_values_compile(fn):
    """The row loop of a CSR product: slice bounds read from indptr (a
    content read: indptr and indices are guarded by their values), the
    gather x[indices[lo:hi]] a task of the program, the bounds a table of
    the rerolled loop -- one loop of a few operations, whatever n is."""
    indptr, indices, data, x0 = csr(60, 5, 1)
    j = run_both(fn, indptr, indices, data, x0, 3, expect_compiled=False)
    assert j.stats["compiled_runs"] == 2, j.explain()
    t0 = j.stats["traces"]  # (2 for int(...): traced again with int() rewritten, _jit_select)
    (p,) = j.programs()
    assert p.ops < 40 and p.traced > 10 * p.ops and "range(60)" in p.description, p.description
    assert "the values of argument 0" in j.explain() and "argument 1" in j.explain(), j.explain()
    # Other values of the guarded arguments: traced again, right results.
    other = csr(60, 5, 2)
    got = j(*[nf.asarray(a) for a in other], 3)
    assert_same(got, fn(onp, *other, 3))
    assert j.stats["traces"] == t0 + 1 and j.stats["compiled_runs"] == 3, j.explain()
    # The first values again: the first trace, not a third.
    got = j(*[nf.asarray(a) for a in (indptr, indices, data, x0)], 3)
    assert_same(got, fn(onp, indptr, indices, data, x0, 3))
    assert j.stats["traces"] == t0 + 1 and j.stats["compiled_runs"] == 4, j.explain()


def test_arguments_whose_values_keep_changing_stop_being_read():
    """A function whose traces read an argument's values, called with new
    values every time: after a few traces it is traced without reading them
    (here: it runs plainly, saying why) -- not a trace per call."""
    j = nf.jit(lambda *a: spmv_csr(nf, *a))
    for seed in range(6):
        args = csr(20, 3, seed, fixed=True)  # (the same shapes: other indices)
        assert_same(j(*[nf.asarray(a) for a in args], 2), spmv_csr(onp, *args, 2))
    assert j.stats["traces"] <= 4, j.explain()
    assert "keep changing" in j.explain() and j.stats["plain_runs"] >= 2, j.explain()


def test_an_argument_written_after_its_values_were_read_is_guarded_at_each_call():
    def f(np, idx, x):
        bounds = idx.tolist()
        s = np.zeros(len(bounds) - 1)
        for i in range(len(bounds) - 1):
            s[i] = x[bounds[i]:bounds[i + 1]].sum()
        idx[1] += 1  # (its values change: the next call sees other values)
        return s

    idx0, x = onp.array([0, 2, 5, 9, 10]), onp.arange(12.0)
    j = nf.jit(lambda *a: f(nf, *a))
    i_nf, i_np = nf.asarray(idx0.copy()), idx0.copy()
    for _ in range(3):
        assert_same(j(i_nf, nf.asarray(x)), f(onp, i_np, x))
        assert_same(i_nf, i_np)
    assert j.stats["compiled_runs"] >= 2, j.explain()


def gather_rows(np, idx, x):
    out = np.zeros(idx.shape[0] // 2)
    for i in range(idx.shape[0] // 2):
        out[i] = x[idx[2 * i:2 * i + 2]].sum()
    return out


def test_a_gather_at_an_argument_s_indices_checks_them_as_numpy():
    x = onp.arange(10.0)
    j = run_both(gather_rows, onp.array([0, 3, 9, 2, 4, 4]), x)
    assert j.programs()[0].ops < 8, j.programs()[0].description
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
        j(nf.asarray(onp.array([0, 3, 10, 2])), nf.asarray(x))


def computed_gather(np, idx, x):
    k = idx + 1  # (indices the call computes)
    out = np.zeros(3)
    for i in range(3):
        out[i] = x[k[i:i + 2]].sum()
    return out


def test_a_gather_at_indices_the_call_computes_runs_plainly_and_says_why():
    x = onp.random.default_rng(5).random(8)
    j = run_both(computed_gather, onp.array([3, 0, 4, 1, 2]), x, expect_compiled=False)
    assert j.stats["compiled_runs"] == 0 and "indices the call computes" in j.explain(), j.explain()


def square_offsets(np, x):
    out = np.zeros(40)
    for i in range(20):
        out[(i * i) % 37] += x[i] * 3
    return out


def test_offsets_that_do_not_move_affinely_are_a_table():
    """(i*i) % 37: no affine run covers the loop; the offsets are a table
    the rerolled loop reads (one loop, not 20 copies of its body)."""
    j = run_both(square_offsets, onp.random.default_rng(6).random(40))
    (p,) = j.programs()
    assert p.loops == 1 and p.ops < 8 and "slot" in p.description.split("range(20)")[1], p.description


def windows(np, x, bounds, idx, y, mode, from_argument):
    """A loop over windows [lo, hi) of x and y whose bounds come from a
    Python list or from an argument's values (bounds.tolist() / elements):
    in no affine order, overlapping, some empty."""
    b = bounds.tolist() if from_argument == 1 else bounds
    for i in range(len(idx) // 2):
        if from_argument == 2:
            lo, hi = bounds[2 * i], bounds[2 * i + 1]
        else:
            lo, hi = b[2 * i], b[2 * i + 1]
        if mode == 0:
            y[i] = x[lo:hi].sum()
        elif mode == 1:
            y[lo:hi] += x[i] * 0.5
        elif mode == 2:
            y[i] = np.dot(x[lo:hi], x[idx[2 * i:2 * i + 2]].sum() + x[lo:hi])
        else:
            x[lo:hi] = x[lo:hi] * 0.5 + y[i]
    return x, y


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_windows_with_bounds_from_lists_and_arguments(data):
    """Differential: loops whose slice bounds are a Python list's or an
    argument's values (tables, content guards), every kind of window use --
    reductions, in-place updates of overlapping windows, gathers -- jitted,
    against NumPy; a second call with other bounds of the same shape."""
    rng = onp.random.default_rng(data.draw(st.integers(0, 2**31)))
    n = data.draw(st.integers(2, 16))
    mode = data.draw(st.integers(0, 3))
    from_argument = data.draw(st.integers(0, 2))
    size = 24
    x0, y0 = rng.random(size), rng.random(size)
    idx = rng.integers(0, size, 2 * n)

    def bounds():
        b = []
        for _ in range(n):
            lo = int(rng.integers(0, size - 1))
            b += [lo, lo if rng.random() < 0.03 else int(rng.integers(lo + 1, min(size, lo + 6) + 1))]  # (a few empty)
        return b

    j = nf.jit(lambda *a: windows(nf, *a, mode, from_argument))
    rerolled = True
    for _ in range(2):
        bl = bounds()
        rerolled &= n >= 8 and all(lo < hi for lo, hi in zip(bl[::2], bl[1::2]))
        bb = onp.array(bl) if from_argument else bl
        expected = windows(onp, x0.copy(), bb, idx, y0.copy(), mode, from_argument)
        if from_argument:
            got = j(nf.asarray(x0.copy()), nf.asarray(bb), nf.asarray(idx), nf.asarray(y0.copy()))
        else:
            # (a list argument is guarded by value: the next list traces again)
            got = j(nf.asarray(x0.copy()), bl, nf.asarray(idx), nf.asarray(y0.copy()))
        assert_same(got, expected)
    assert j.stats["compiled_runs"] == 2, j.explain()
    if rerolled:  # (windows of no affine order: the loop read its bounds from tables)
        p = j.programs()[-1]
        assert p.ops * 3 < p.traced and "slot" in p.description, p.description


def column_products(np, data):
    M = data.shape[1]
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr


def test_contractions_along_strided_columns_accumulate_rows_in_place():
    """`data[:, i] @ data[:, i + 1:]` (correlation's loop): the program runs
    the reduced dimension outside and accumulates the unit-stride row in
    place (vectorized) -- each element still summed in order, so the result
    equals a sequential sum bit for bit."""
    import re
    data = onp.random.default_rng(7).random((30, 12))
    j = run_both(column_products, data)
    src = j.programs()[0].source
    assert re.search(r"(p\d+)\[[^\]]*\] = \(\(double\)\(\1\[", src), src  # (a row accumulated in memory)
    got = onp.asarray(j(nf.asarray(data)))
    for i in range(11):
        for k in range(i + 1, 12):
            s = 0.0
            for r in range(30):
                s += data[r, i] * data[r, k]
            assert got[k, i] == s and got[i, k] == s


def clamp_small(np, x, t, v):
    y = x * 2
    y[y <= t] = v
    x[x > 0.9] = -1.0
    return y


def test_a_masked_store_of_a_scalar_is_a_select_of_the_program():
    """`y[y <= t] = v` inside a trace: a select in place (where(mask, v, y)),
    with t and v parameters (new values run the same program)."""
    x = onp.random.default_rng(8).random(40)
    j = run_both(clamp_small, x, 0.5, 7.0)
    for t, v in ((0.3, -2.0), (1.5, 0.25)):
        xn = nf.asarray(x.copy())
        got = j(xn, t, v)
        xe = x.copy()
        assert_same(got, clamp_small(onp, xe, t, v))
        assert_same(xn, xe)
    assert j.stats["traces"] == 1 and j.stats["compiled_runs"] == 4, j.explain()


def test_a_masked_selection_runs_plainly_and_says_why():
    j = run_both(lambda np, x: x[x > 0.5].sum(), onp.linspace(0, 1, 20), expect_compiled=False)
    assert j.stats["compiled_runs"] == 0 and "boolean mask" in j.explain(), j.explain()


def spmv_transposed(np, indptr, indices, data, x):
    """y = A.T @ x for A in CSR form: each row scattered into y."""
    n = indptr.shape[0] - 1
    y = np.zeros(x.shape[0])
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        y[indices[lo:hi]] += data[lo:hi] * x[i]
    return y


def test_a_scatter_at_an_argument_s_indices_is_a_task_of_the_program():
    """`y[indices[lo:hi]] += ...` (CSR's transposed product): the gather,
    the addition and the scatter at the argument's indices, in one rerolled
    loop whose bounds are a table."""
    indptr, indices, data, x0 = csr(40, 4, 3)
    j = run_both(spmv_transposed, indptr, indices, data, x0)
    (p,) = j.programs()
    assert p.ops < 10 and p.traced > 5 * p.ops, p.description


def scatter_kinds(np, idx, a, v):
    a[idx[:4]] = v[:4]          # repeated indices: the last store wins, as in NumPy
    a[idx[4:6]] = 2.5           # a scalar
    a[idx[6:9]] = v[8:9]        # one element, broadcast
    for i in range(3):
        a[idx[i:i + 2]] = v[i:i + 2] * i
    return a


def test_scatters_of_every_value_kind_store_as_numpy():
    idx = onp.array([3, 1, 3, 0, 5, 7, 2, 2, 6, 4])
    rng = onp.random.default_rng(9)
    run_both(scatter_kinds, idx, rng.random(8), rng.random(10))
    j = nf.jit(lambda *a: scatter_kinds(nf, *a))
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 8"):
        j(nf.asarray(onp.array([8, 1, 3, 0, 5, 7, 2, 2, 6, 4])), nf.asarray(rng.random(8)), nf.asarray(rng.random(10)))

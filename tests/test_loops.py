"""The fast paths Python loops go through: NumPy scalars combined with
numfuse arrays (NumPy hands those to ``__array_ufunc__``), ``np.dot`` on row
slices, NumPy ufuncs called on numfuse arrays, and the sync site that
``explain()`` reports. Each is checked against NumPy, and checked to be
recorded natively (a fallback to NumPy would warn)."""

import inspect
import os
import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same
from numfuse._fallback import FallbackWarning


@pytest.fixture
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        yield


SCALARS = [onp.float64(2.5), onp.float32(-1.5), onp.int64(3), onp.int8(-2), onp.uint8(7), onp.bool_(True)]
OPS = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "less", "equal", "arctan2",
       "floor_divide", "remainder", "copysign", "logaddexp"]


@pytest.mark.parametrize("s", SCALARS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
def test_numpy_scalar_with_numfuse_array(s, dtype, no_fallback):
    x = onp.arange(1, 7).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for left in (True, False):
            e = s - x if left else x - s
            g = s - nf.array(x) if left else nf.array(x) - s
            assert type(g) is nf.ndarray
            assert_same(g, e)
            e = s * x[2] if left else x[2] * s   # 0-d: both scalars in NumPy
            g = s * nf.array(x)[2] if left else nf.array(x)[2] * s
            assert_same(onp.asarray(g), onp.asarray(e))
    for name in OPS:
        uf = getattr(onp, name)
        if dtype.startswith("u") and name == "copysign" and isinstance(s, onp.bool_):
            continue
        with onp.errstate(all="ignore"):
            try:
                e = uf(s, x)
            except TypeError:
                continue
            if e.dtype == onp.float16:  # numfuse does not compute in float16 (a fallback)
                continue
            g = uf(s, nf.array(x))
        assert type(g) is nf.ndarray, name
        assert_same(g, e)


def test_numpy_ufuncs_on_numfuse_arrays(no_fallback):
    x = onp.linspace(-2, 2, 9)
    for name in ["sqrt", "exp", "sin", "absolute", "negative", "floor", "isnan", "signbit", "square"]:
        with onp.errstate(all="ignore"):
            e = getattr(onp, name)(x)
            g = getattr(onp, name)(nf.array(x))
        assert type(g) is nf.ndarray
        assert_same(g, e)
    # keyword arguments and methods take the general path, with NumPy's results
    out = nf.zeros(9)
    r = onp.add(nf.array(x), 1.0, out=out)
    assert r is out
    assert_same(out, x + 1.0)
    assert_same(onp.add.reduce(nf.array(x)), onp.add.reduce(x))
    assert_same(onp.power(nf.array(x), 2), x ** 2)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        onp.power(nf.arange(3), -1)


@pytest.mark.fallback
def test_operands_numfuse_cannot_take_go_the_general_way():
    assert_same(onp.add(nf.arange(3), [1, 2, 3]), onp.add(onp.arange(3), [1, 2, 3]))
    with pytest.raises(Exception) as e:
        onp.add(onp.arange(3), "x")
    with pytest.raises(type(e.value)):
        onp.add(nf.arange(3), "x")


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)), ((0,), (0,)),
                                   ((1, 5), (5, 1))])
@pytest.mark.parametrize("ta,tb", [("float64", "float64"), ("int64", "float32"), ("bool", "bool"),
                                   ("int32", "int32")])
def test_dot_on_slices(sa, sb, ta, tb, no_fallback):
    rng = onp.random.default_rng(0)
    a = (rng.random(sa) * 10).astype(ta)
    b = (rng.random(sb) * 10).astype(tb)
    assert_same(nf.dot(nf.array(a), nf.array(b)), onp.asarray(onp.dot(a, b)))


def test_dot_misaligned_message():
    for sa, sb in [((3,), (4,)), ((2, 3), (4,)), ((3,), (4, 2)), ((2, 3), (4, 5))]:
        with pytest.raises(ValueError) as e:
            onp.dot(onp.ones(sa), onp.ones(sb))
        with pytest.raises(ValueError) as g:
            nf.dot(nf.ones(sa), nf.ones(sb))
        assert str(g.value) == str(e.value)


def test_cholesky_by_rows_matches_numpy():
    def chol(np, A):
        n = A.shape[0]
        L = np.zeros_like(A)
        for i in range(n):
            for j in range(i + 1):
                s = np.dot(L[i, :j], L[j, :j])
                if i == j:
                    L[i, j] = np.sqrt(A[i, i] - s)
                else:
                    L[i, j] = (A[i, j] - s) / L[j, j]
        return L
    rng = onp.random.default_rng(1)
    M = rng.random((12, 12))
    A = M @ M.T + 12 * onp.eye(12)
    assert_same(chol(nf, nf.array(A)), chol(onp, A), rtol=1e-12)


def test_explain_names_the_sync_site(lazy):
    x = nf.arange(10.0) * 2
    line = inspect.currentframe().f_lineno + 1
    float(x.sum())
    text = str(nf.explain())
    assert f"{__file__}:{line}" in text, text


def _row_sweep(np, u, f):
    """One red-black Gauss-Seidel colour, row by row: each row update reads
    the previous row's new values and fuses with it."""
    n = u.shape[1]
    for i in range(1, u.shape[0] - 1):
        s = 1 if i % 2 else 2
        u[i, s:n - 1:2] = 0.25 * (u[i - 1, s:n - 1:2] + u[i + 1, s:n - 1:2] + u[i, s - 1:n - 2:2]
                                  + u[i, s + 1:n:2] + f[i, s:n - 1:2])
    return u


def _sweep_groups(u0, f):
    """Runs one sweep under numfuse; returns the result and the groups of its flush."""
    u = nf.array(u0)
    fa = nf.array(f)
    nf.flush()
    _row_sweep(nf, u, fa)
    nf.flush()
    return u, nf._core.last_report()["groups"]


def test_fused_row_sweeps_are_split_into_bounded_kernels(lazy):
    """A Python loop whose iterations all fuse (each row update reads the row
    the previous one wrote) must not become one kernel of hundreds of
    statements: groups stop at max_kernel_ops accesses to visible arrays."""
    rng = onp.random.default_rng(3)
    u0, f = rng.random((40, 16)), rng.random((40, 16))
    want = _row_sweep(onp, u0.copy(), f)
    limit = nf.get_option("max_kernel_ops")
    u, groups = _sweep_groups(u0, f)
    assert_same(u, want, rtol=1e-13)
    assert len(groups) > 1
    assert any("kernel size limit" in g["stop_reason"] for g in groups)
    for g in groups:
        live = [o for o in g["ops"] if not o.endswith("(dead)")]
        assert len(live) <= 8 * limit
    # A larger limit fuses more of the sweep into each kernel (same results).
    with nf.config(max_kernel_ops=100000):
        u, fewer = _sweep_groups(u0, f)
    assert_same(u, want, rtol=1e-13)
    assert len(fewer) < len(groups)


def test_long_expressions_stay_one_kernel():
    x = nf.linspace(0.1, 2.0, 1000)
    nf.flush()
    y = x
    for k in range(60):  # 120 element-wise operations on one input
        y = nf.sqrt(y * 1.0001 + k * 1e-3)
    r = onp.asarray(y)
    groups = nf._core.last_report()["groups"]
    assert len(groups) == 1, [g["stop_reason"] for g in groups]
    ref = onp.linspace(0.1, 2.0, 1000)
    for k in range(60):
        ref = onp.sqrt(ref * 1.0001 + k * 1e-3)
    onp.testing.assert_allclose(r, ref, rtol=1e-13)


def test_max_kernel_ops_is_validated():
    with pytest.raises(ValueError):
        nf.set_option("max_kernel_ops", 0)


def test_scalar_element_stores_to_untouched_memory_are_immediate():
    """a[i, j] = scalar with no pending operation on a's memory is written at
    once (no task, no later sync); with one pending it is recorded in order."""
    a = nf.zeros((3, 4))
    nf.flush()
    with nf.profile() as p:
        a[1, 2] = 5.0
        a[0, 0] = onp.float32(1.5)
        a[2, 3] = 7
        assert a[1, 2] == 5.0 and a[0, 0] == 1.5 and a[2, 3] == 7.0
    assert p["tasks"] == 0, p
    # a pending read of a: the store must come after it (not be written now)
    b = a * 2
    a[1, 2] = 100.0
    assert float(b[1, 2]) == 10.0 and float(a[1, 2]) == 100.0
    # a pending write through another view of the same memory
    d = nf.zeros(6)
    nf.flush()
    dv = d[2:]
    dv += 5
    d[3] = -1.0
    assert list(d) == [0.0, 0.0, 5.0, -1.0, 5.0, 5.0]
    # NumPy's conversions and errors
    for dt, v in (("int8", 300), ("uint8", -1), ("int32", float("nan")), ("bool", 2 ** 64), ("uint8", onp.int64(300))):
        e = onp.zeros(3, dt)
        g = nf.zeros(3, dt)
        nf.flush()
        try:
            e[1] = v
        except Exception as exc:
            with pytest.raises(type(exc)):
                g[1] = v
            continue
        g[1] = v
        assert_same(g, e)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint64", "float32", "float64"])
def test_iteration_yields_numpy_scalars(dtype):
    x = (onp.arange(7) % 3).astype(dtype)
    got = list(nf.array(x))
    want = list(x)
    assert [type(g) for g in got] == [type(w) for w in want]
    assert got == want
    assert list(nf.array(x)[::-2]) == list(x[::-2])
    assert list(nf.array(x)[:0]) == []


def test_iteration_sees_writes_made_during_the_loop():
    for m in (onp, nf):
        a = m.arange(5.0)
        seen = []
        for k, v in enumerate(a):
            seen.append(float(v))
            if k + 1 < len(a):
                a[k + 1] += 10 * (k + 1)
        assert seen == [0.0, 11.0, 22.0, 33.0, 44.0], m
    b = nf.arange(1000.0)
    c = nf.ones(3)
    nf.flush()
    with nf.profile() as p:
        total = sum(float(v) for v in b)  # nothing pending: no sync
    assert total == 499500.0
    assert p["flushes"] == 0, p
    d = c * 2
    assert [float(v) for v in d] == [2.0, 2.0, 2.0]
    rows = list(nf.arange(6.0).reshape(2, 3))  # n-d: rows are arrays
    assert type(rows[0]) is nf.ndarray and rows[1].shape == (3,)


def test_explain_after_a_memoized_flush_that_tier0_ran(tmp_path):
    # A loop's second flush reuses the memoized plan, and a group whose kernel
    # is still compiling runs on tier 0 without binding its template: its
    # report has no sizes. explain() used to read them anyway (a crash).
    # In a subprocess, with a fresh kernel cache so the kernels do compile
    # (this program crashed 3fb35da).
    import subprocess, sys, textwrap, os
    program = textwrap.dedent("""
        import numpy, numfuse as np
        a = np.asarray(numpy.random.default_rng(0).standard_normal((258, 258)))
        texts = []
        for it in range(4):
            s = (a[1:-1, 1:-1] * a[:-2, 1:-1]).sum()
            a = a + (s / (s + 1.0)) * a
            np.flush()
            texts.append(str(np.explain()))
        print(sum("memoized" in t for t in texts), all("kernel 0" in t for t in texts))
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="auto")
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    memo_hits, described = r.stdout.split()
    assert int(memo_hits) >= 2 and described == "True"


def test_a_repeated_kernel_compiles_in_the_background_while_tier0_runs_its_window(tmp_path):
    # Floyd-Warshall's loop records 200 repetitions of one new kernel in one
    # window. Each repetition is cheap on tier 0, all of them together cost
    # more than a compile: the kernel is queued for the background compiler
    # as the plan is made, and tier 0 runs the repetitions meanwhile (no
    # repetition waits for a synchronous compile). Held here, so the whole
    # window runs on tier 0 and says so; once released, the next run of the
    # window takes the kernel for every repetition. In a subprocess with a
    # fresh kernel cache, so the kernel is new.
    import os
    import subprocess
    import sys
    import textwrap
    program = textwrap.dedent("""
        import numpy, numfuse as np
        from numfuse import _core
        d0 = numpy.random.default_rng(3).uniform(1.0, 10.0, (200, 200))
        d0[numpy.random.default_rng(4).random((200, 200)) > 0.1] = numpy.inf
        def run(lib, d):
            for k in range(d.shape[0]):
                d = lib.minimum(d, d[:, k, None] + d[None, k, :])
            return d
        ref = run(numpy, d0)
        x = np.asarray(d0)
        np.flush()
        _core.tune_background_hold(True)
        r = run(np, x)
        np.flush()
        steps = [g for g in np.explain().groups if "minimum" in g["ops"]]
        print(len(steps), all(g["tier0"] and g["compiling"] for g in steps),
              numpy.array_equal(numpy.asarray(r), ref), "compiling in the background" in str(np.explain()))
        _core.tune_background_hold(False)
        _core.tune_wait()
        r = run(np, x)
        np.flush()
        steps = [g for g in np.explain().groups if "minimum" in g["ops"]]
        print(len(steps), sum(g["tier0"] for g in steps), numpy.array_equal(numpy.asarray(r), ref))
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="auto")
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    first, second = r.stdout.split("\n")[:2]
    assert first == "200 True True True", r.stdout
    assert second == "200 0 True", r.stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="per-thread nice values are read from Linux's /proc")
def test_background_compiles_run_below_the_programs_threads(tmp_path):
    # The compile thread runs at nice 10 (worker.h): on a machine whose
    # cores the program uses, a compile must not take a core's time from the
    # calls it compiles for. The program's own thread keeps its priority.
    import subprocess
    import sys
    import textwrap
    program = textwrap.dedent("""
        import os, numpy, numfuse as np
        from numfuse import _core
        def nice(tid):
            with open(f"/proc/self/task/{tid}/stat") as f:
                return int(f.read().rsplit(")", 1)[1].split()[16])
        d = np.asarray(numpy.random.default_rng(3).uniform(1.0, 10.0, (200, 200)))
        for k in range(200):  # (a kernel tier 0 runs while it compiles: test_loops above)
            d = np.minimum(d, d[:, k, None] + d[None, k, :])
        np.flush()
        np.wait_background()
        values = {int(t): nice(t) for t in os.listdir("/proc/self/task")}
        print(values[os.getpid()], sorted(set(values.values())))
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="auto")
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    main, values = r.stdout.split(" ", 1)
    assert main == "0" and "10" in values, r.stdout

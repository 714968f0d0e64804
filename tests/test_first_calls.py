"""First calls: a recorded group seen for the first time runs on tier 0 when
that is cheaper than compiling its kernel (pipeline/tiers.h), the
multi-stage kernels included (flush.cc, choose_chain_tier), and tier 0
computes a large group's chains of elementwise operations in one pass,
each intermediate spliced into its one reader (pipeline/tier0.cc).

The splice is checked bit for bit against tier 0 without it (the eager
tier runs every operation at its call, one pass each) and against NumPy,
and each test checks from explain() that the splice (or its refusal) really
happened."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st

import numfuse as nf
from numfuse import _core

from conftest import to_np

# Splicing starts at 2**14 points in a group.
N = 40_000


@pytest.fixture
def tier0_groups():
    """Every recorded group tier 0 can run runs there, whatever the kernel
    caches hold (a test hook of the flush)."""
    _core._interpret_groups(True)
    try:
        with nf.config(tier="auto", eager_max_elements=0):
            yield
    finally:
        _core._interpret_groups(False)


def eager(fn, *args):
    """The reference: the same program on tier 0, one operation per pass."""
    with nf.config(tier="eager"):
        return to_np(fn(nf, *[nf.asarray(a) for a in args]))


def spliced(fn, *args):
    """fn on tier 0 as a recorded group; (result, the groups' reports)."""
    r = fn(nf, *[nf.asarray(a) for a in args])
    nf.flush()
    groups = nf.explain().groups
    return to_np(r), groups


def same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    onp.testing.assert_array_equal(got, want)


def passes(groups):
    """(operations, passes) over the tier-0 groups of the last flush."""
    ops = sum(len(g["ops"]) - g["dead"] for g in groups if g["tier0"])
    return ops, sum(g["tier0_passes"] for g in groups if g["tier0"])


def stencil(lib, u):
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]


def test_a_stencil_is_one_pass(tier0_groups):
    u = onp.random.default_rng(0).random((300, 300))
    got, groups = spliced(stencil, u)
    assert passes(groups) == (5, 1), nf.explain()
    text = str(nf.explain())
    assert "5 operations in 1 pass, intermediates spliced" in text
    assert "ms on tier 0 against a" in text and "ms compile, took" in text  # (the tier decision's figures)
    g = [g for g in groups if g["tier0"]][0]
    assert g["tier0_estimate_ms"] > 0 and g["compile_estimate_ms"] > 0
    same(got, eager(stencil, u))
    same(got, stencil(onp, u))


def test_a_reduction_reads_its_spliced_values(tier0_groups):
    x = onp.random.default_rng(1).random((400, 300))

    def f(lib, x):
        m = x.mean(axis=1, keepdims=True)
        return ((x - m) * (x - m)).sum(axis=1)

    got, groups = spliced(f, x)
    ops, n = passes(groups)
    assert n < ops, nf.explain()
    same(got, eager(f, x))
    onp.testing.assert_allclose(got, f(onp, x), rtol=1e-13)


def test_arg_reductions_and_index_expressions(tier0_groups):
    a = onp.random.default_rng(2).random(N)
    b = onp.random.default_rng(3).random(N)

    def f(lib, a, b):
        return ((a - b) * (a + b)).argmax(), lib.abs(a - 0.5 * b).argmin()

    r = f(nf, nf.asarray(a), nf.asarray(b))
    nf.flush()
    ops, n = passes(nf.explain().groups)
    assert n < ops
    assert [int(x) for x in r] == [int(x) for x in f(onp, a, b)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8"])
def test_dtypes_and_casts(tier0_groups, dtype):
    rng = onp.random.default_rng(4)
    a = (rng.random(N) * 100).astype(dtype)
    b = (rng.random(N) * 100 + 1).astype(dtype)

    def f(lib, a, b):
        t = a * 3 + b          # the array's own type
        u = t.astype("float64") / 7.0  # a cast, then float
        return lib.maximum(u - b, 2) + (a > b)

    got, groups = spliced(f, a, b)
    ops, n = passes(groups)
    assert n < ops, nf.explain()
    same(got, eager(f, a, b))
    same(got, f(onp, a, b))


def test_a_write_between_producer_and_reader_is_not_crossed(tier0_groups):
    # t reads a; a is written before t's reader runs: t is computed first.
    a = onp.random.default_rng(5).random(N)

    def f(lib, a):
        a = a.copy()
        t = a * 2.0
        a *= 10.0
        return t + a

    got, _ = spliced(f, a)
    same(got, f(onp, a))


def test_a_reader_that_writes_what_the_producer_reads(tier0_groups):
    # NumPy computes a[:-1] * 2 before writing a[1:]: not spliced into the store.
    a = onp.random.default_rng(6).random(N)

    def f(lib, a):
        a = a.copy()
        t = a[:-1] * 2.0
        a[1:] = t + 1.0
        return a

    got, _ = spliced(f, a)
    same(got, f(onp, a))


def test_a_small_result_read_twice_is_computed_in_each_reader_a_live_one_is_stored(tier0_groups):
    a = onp.random.default_rng(7).random(N)

    def two(lib, a):
        t = a * 2.0
        return (t + 1.0) * (t - 1.0) + lib.sqrt(t)

    got, groups = spliced(two, a)
    assert passes(groups) == (6, 1), nf.explain()
    same(got, eager(two, a))
    same(got, two(onp, a))
    x = nf.asarray(a)
    t = x * 2.0
    r = (t + 1.0).sum()
    nf.flush()
    assert passes(nf.explain().groups) == (3, 2), nf.explain()
    same(to_np(t), a * 2.0)  # (t is seen by Python: stored, and spliced into nothing)
    assert float(r) == pytest.approx(float((a * 2.0 + 1.0).sum()), rel=1e-13)


def test_a_costly_result_read_twice_is_stored_not_computed_twice(tier0_groups):
    # Computed again in each of two readers only while the copy's nodes
    # stay within what a store and a load cost (tier0.cc, kRecomputeBudget):
    # a longer expression read twice is stored once, in its own pass (a
    # Mandelbrot iteration's zr and zi, copied into copies, took twice the
    # time of storing them).
    a = onp.random.default_rng(13).random(N)

    def costly(lib, a):
        t = ((a * 2.0 + 1.0) * a - 3.0) * a
        return t * t + lib.sqrt(lib.abs(t))

    got, groups = spliced(costly, a)
    assert passes(groups) == (9, 2), nf.explain()
    same(got, eager(costly, a))
    same(got, costly(onp, a))


def test_a_result_read_by_many_is_stored(tier0_groups):
    a = onp.random.default_rng(11).random(N)

    def many(lib, a):
        t = a * 2.0
        return (t + 1.0) * (t - 1.0) * (t + 3.0) * (t - 3.0)

    got, groups = spliced(many, a)
    ops, n = passes(groups)
    assert 1 < n < ops, nf.explain()
    same(got, eager(many, a))


def test_broadcast_readers_are_not_spliced_but_same_domain_ones_are(tier0_groups):
    x = onp.random.default_rng(8).random(300)
    y = onp.random.default_rng(9).random(200)

    def f(lib, x, y):
        d = x[:, None] - y[None, :]
        return lib.exp(-(d * d) / 0.1)

    got, groups = spliced(f, x, y)
    ops, n = passes(groups)
    assert n < ops
    same(got, eager(f, x, y))


def test_floating_point_warnings_as_numpy(tier0_groups):
    a = onp.random.default_rng(10).random(N)
    b = a.copy()
    b[::7] = 0.0

    def f(lib, a, b):
        return (a / b) * 2.0 - 1.0

    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got, groups = spliced(f, a, b)
    ops, n = passes(groups)
    assert n < ops
    with onp.errstate(divide="ignore"):
        same(got, f(onp, a, b))
    with nf.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            spliced(f, a, b)


OPS = [
    lambda lib, x, y: x + y, lambda lib, x, y: x - y, lambda lib, x, y: x * y,
    lambda lib, x, y: x / (lib.abs(y) + 1), lambda lib, x, y: lib.maximum(x, y), lambda lib, x, y: lib.minimum(x, y),
    lambda lib, x, y: lib.where(x > y, x, y * 2), lambda lib, x, y: lib.sqrt(lib.abs(x)),
    lambda lib, x, y: -x, lambda lib, x, y: x * 3.0 + 1.0,
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=8),
       st.sampled_from(["float64", "float32", "int64"]),
       st.sampled_from(["none", "sum", "sum0", "max", "mean1"]),
       st.booleans())
def test_random_chains_equal_tier0_and_numpy(prog, dtype, tail, strided):
    rng = onp.random.default_rng(len(prog))
    shape = (160, 130)
    base = (rng.random((2 * shape[0], shape[1])) * 10 - 5).astype(dtype)
    b = (rng.random(shape) * 10 - 5).astype(dtype)

    def terms(lib, a, b):
        a = a[::2] if strided else a[:shape[0]]
        vals = [a, b]
        for op, i, j in prog:
            r = OPS[op](lib, vals[i % len(vals)], vals[j % len(vals)])
            vals.append(r)
        return vals[-1]

    def f(lib, a, b):
        r = terms(lib, a, b)
        if tail == "sum":
            r = r.sum(axis=1)
        elif tail == "sum0":
            r = r.sum(axis=0)
        elif tail == "max":
            r = r.max(axis=1)
        elif tail == "mean1":
            r = r.mean(axis=-1)
        return r

    _core._interpret_groups(True)
    try:
        with nf.config(tier="auto", eager_max_elements=0), onp.errstate(all="ignore"), nf.errstate(all="ignore"):
            got, groups = spliced(f, base, b)
            want = eager(f, base, b)
    finally:
        _core._interpret_groups(False)
    # (every group on tier 0, but a library routine -- `(x * y).sum(axis=1)`
    # is a row-wise dot product -- and a group whose operations are all dead)
    assert all(g["tier0"] or g["routine"] or g["dead"] == len(g["ops"]) for g in groups), groups
    if any(g["routine"] for g in groups):
        # BLAS's dot sums in its own order, not NumPy's pairwise one: equal to
        # reassociation's bound, n * eps * (the sum of the terms' magnitudes)
        # -- relative to the result itself the difference is unbounded under
        # cancellation (a float32 row of terms near 25 summing to -0.15 was
        # 6e-5 apart).
        assert got.dtype == want.dtype and got.shape == want.shape
        with onp.errstate(all="ignore"):
            mag = onp.abs(terms(onp, base, b).astype(onp.float64))
        axis = 0 if tail == "sum0" else 1
        bound = mag.shape[axis] * onp.finfo(dtype).eps * mag.sum(axis=axis)
        if tail == "mean1":
            bound = bound / mag.shape[axis]
        with onp.errstate(all="ignore"):
            ref = onp.asarray(f(onp, base, b))
        assert got.dtype == ref.dtype
        for other in (want, ref):
            assert onp.all(onp.abs(got.astype(onp.float64) - other) <= bound), (got, other, bound)
        return
    same(got, want)
    with onp.errstate(all="ignore"):
        ref = onp.asarray(f(onp, base, b))
    assert got.dtype == ref.dtype
    onp.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_first_calls_do_not_compile_and_later_calls_take_the_kernels(tmp_path):
    # In a fresh process with an empty kernel cache: the first call of a
    # variance (a multi-stage kernel: mean, then the squared deviations
    # summed) and of a stencil run on tier 0 with nothing compiled at the
    # call, and so does the second; their kernels then compile in the
    # background and later calls run them.
    program = textwrap.dedent("""
        import numpy, numfuse as np
        x = np.asarray(numpy.random.default_rng(0).random((600, 600)))
        u = np.asarray(numpy.random.default_rng(1).random((700, 700)))
        def f(x, u):
            v = x.var(axis=1, ddof=1)
            s = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]
            return v, s
        with np.profile() as p:
            v, s = f(x, u)
            np.flush()
        e = np.explain()
        first = (p["kernels_compiled"], all(g["tier0"] for g in e.groups),
                 any(g["tier0_passes"] < len(g["ops"]) for g in e.groups))
        ok = numpy.allclose(numpy.asarray(v), numpy.asarray(x).var(axis=1, ddof=1), rtol=1e-12)
        with np.profile() as p:  # (seen again: queued for the background compiler as the flush ends)
            v, s = f(x, u)
            np.flush()
        second = (p["kernels_compiled"], all(g["tier0"] for g in np.explain().groups))
        np.wait_background()
        v, s = f(x, u)
        np.flush()
        e = np.explain()
        later = (any(g["stages"] for g in e.groups), not any(g["tier0"] for g in e.groups))
        ok = ok and numpy.allclose(numpy.asarray(v), numpy.asarray(x).var(axis=1, ddof=1), rtol=1e-12)
        print(first, second, later, ok)
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="auto")
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[0] == "(0, True, True) (0, True) (True, True) True", r.stdout


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [7, 128, 129, 1000, 100_003, 1_000_001])
def test_sums_of_computed_values_are_numpys_pairwise_sums(tier0_groups, dtype, n):
    # Tier 0 sums a line of computed values as they are computed, leaf by
    # leaf of NumPy's pairwise tree (never storing the line): bit for bit
    # NumPy's sum of the stored values, at the call and in a group.
    x = onp.random.default_rng(n).standard_normal(n).astype(dtype)

    def f(lib, x):
        return (x * 1.5 + 0.25).sum(), (x * x).sum(axis=-1, keepdims=True)

    want = [onp.asarray(v) for v in f(onp, x)]
    got = [to_np(v) for v in f(nf, nf.asarray(x))]
    nf.flush()
    for g, w in zip(got, want):
        same(g, w)
    with nf.config(tier="eager"):
        for g, w in zip(f(nf, nf.asarray(x)), want):
            same(to_np(g), w)


# Tier 0 cuts a large task into pieces, one per thread (runtime/tier0.cc,
# run_split and add_pairwise_split): each output element computed by one
# piece from the same points in the same order, so the values are NumPy's
# bit for bit on any number of threads.
SPLIT_PROGRAMS = {
    "2-D map (rows cut)": lambda xp, x: xp.sqrt(x * x + 1.0) - x,
    "1-D map (the line cut)": lambda xp, x: xp.where(x.ravel() > 0.1, x.ravel(), -1.0) * 2.0,
    "row sums (rows cut)": lambda xp, x: (x * 3.0 - 1.0).sum(axis=1),
    "column sums (columns cut)": lambda xp, x: (x * 3.0 - 1.0).sum(axis=0),
    "column max (columns cut)": lambda xp, x: (x - 0.5).max(axis=0),
    "a whole sum (the tree's halves)": lambda xp, x: (x * x - 0.5 * x).sum(),
    "a whole sum, float32": lambda xp, x: (x.astype(xp.float32) * 1.5).sum(),
    "argmax of rows": lambda xp, x: (x * -2.0).argmax(axis=1),
    "row cumsum (rows cut)": lambda xp, x: xp.cumsum(x * 2.0, axis=1),
    "column cumsum (columns cut)": lambda xp, x: xp.cumsum(x + 1.0, axis=0),
    "int64 sums": lambda xp, x: ((x * 1000).astype(xp.int64) % 7).sum(axis=1),
}


@pytest.mark.parametrize("name", list(SPLIT_PROGRAMS))
@pytest.mark.parametrize("shape", [(800, 700), (3, 200_001)])
def test_large_tasks_are_cut_across_threads_with_numpys_values(tier0_groups, name, shape):
    f = SPLIT_PROGRAMS[name]
    x = onp.random.default_rng(3).standard_normal(shape)
    want = onp.asarray(f(onp, x))
    splits = {}
    for threads in (1, 2):
        with nf.config(threads=threads):
            before = _core._tier0_splits()
            got = to_np(f(nf, nf.asarray(x)))
            nf.flush()
            splits[threads] = _core._tier0_splits() - before
            assert all(g["tier0"] for g in nf.explain().groups)
        same(got, want)
    assert splits[1] == 0
    assert splits[2] >= 1, "a task of 2**19 points or more ran on one thread"


# where(a OP b, c, d) runs as one loop of tier 0's library (kind 4: the
# comparison's bytes never stored), choosing c's or d's bits: NumPy's values
# bit for bit (signed zeros, NaNs), every comparison and real dtype, scalars
# on either side.
SELECT_DTYPES = ["float64", "float32", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint8"]
COMPARISONS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
               ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


@pytest.mark.parametrize("dtype", SELECT_DTYPES)
@pytest.mark.parametrize("op", list(COMPARISONS))
def test_a_select_of_a_comparison_is_one_loop_with_numpys_values(tier0_groups, dtype, op):
    rng = onp.random.default_rng(len(op) + len(dtype))
    n = 40_001  # (a group tier 0 splices: 2**14 points or more; not a multiple of a vector width)
    if dtype.startswith("float"):
        a = rng.choice(onp.array([-0.0, 0.0, onp.nan, 1.5, -2.0, onp.inf], dtype), n)
        b = rng.standard_normal(n).astype(dtype)
    else:
        info = onp.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        a[::7] = b[::7]  # (equal values, for == and <=)
    s = a.dtype.type(a[5])
    cmp = COMPARISONS[op]

    def f(xp, a, b):
        return (xp.where(cmp(a, b), a, b),            # arrays
                xp.where(cmp(a, s), s, a),            # clip's form: compared with a scalar, choosing it
                xp.where(cmp(a, s), a, b.dtype.type(0)),  # relu's form
                xp.where(cmp(b, s), s, a.dtype.type(1)),  # scalars both
                xp.where(cmp(a[-2::-2], b[:-1:2]), b[:-1:2], a[1::2]))  # strided

    want = f(onp, a, b)
    before = _core._tier0_fused_selects()
    got = f(nf, nf.asarray(a), nf.asarray(b))
    nf.flush()
    assert _core._tier0_fused_selects() - before >= len(want), "a where(a op b, c, d) ran as two loops"
    for g, w in zip(got, want):
        g = to_np(g)
        same(g, w)
        if g.dtype.kind == "f":
            onp.testing.assert_array_equal(onp.signbit(g), onp.signbit(w))


def test_explain_says_why_a_kernel_compiled_on_the_critical_path(tmp_path):
    # A group whose tier-0 estimate is above a compile's is compiled before
    # it runs, and explain() says so with both figures; tier="lazy" says
    # that it compiles everything; a group tier 0 ran says nothing of it.
    program = textwrap.dedent("""
        import numpy, numfuse as np
        x = np.asarray(numpy.random.default_rng(0).random(8_000_000))
        r = np.sin(np.exp(x) * np.cos(x)) + np.log1p(x) * np.arctan2(x, 1.5 - x) + x ** 1.7
        np.flush()
        big = np.explain()
        with np.config(tier="lazy"):
            y = np.asarray(numpy.ones(7)) * 3.0 - 1.0
            np.flush()
            lazy = np.explain()
        z = np.asarray(numpy.ones(50_000)) * 2.0 + 1.0
        np.flush()
        small = np.explain()
        print(repr(big.groups[0]["why_compiled"]), big.groups[0]["tier0_estimate_ms"] > big.groups[0]["compile_estimate_ms"] > 0)
        print(repr(lazy.groups[0]["why_compiled"]))
        print(small.groups[0]["tier0"], repr(small.groups[0]["why_compiled"]))
        print(str(big).splitlines()[0])
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="auto")
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "\"its estimate on tier 0 is above the compile's\" True", r.stdout
    assert lines[1] == "'tier=\"lazy\" compiles every kernel'", r.stdout
    assert lines[2] == "True None", r.stdout
    assert "compiled on the critical path: its estimate on tier 0 is above the compile's" in lines[3], r.stdout


def test_a_kernel_missed_on_disk_is_found_once_it_is_there(tmp_path):
    # A kernel missed in memory and on disk is remembered as missing (a
    # loop body's groups share one kernel: each asked the disk again), but
    # not past what can put it there: clearing the in-memory kernels (what
    # this process compiled is on disk), or another cache directory.
    program = textwrap.dedent("""
        import os, subprocess, sys, numpy, numfuse as np
        from numfuse import _core
        x = np.asarray(numpy.random.default_rng(0).random(50_000))
        def f(x):
            return np.sin(x) * 2.0 + 1.0
        def g(x):
            return np.cos(x) * 3.0 - 0.5
        def run(fn):
            _core.clear_memo()
            with np.profile() as p:
                r = fn(x)
                np.flush()
            e = np.explain()
            return [gr["tier0"] for gr in e.groups], p["disk_hits"], p["kernels_compiled"], r
        first = run(f)[:3]               # first sight: tier 0, nothing compiled
        run(f)                           # wanted again: compiled in the background
        np.wait_background()
        _core.clear_kernel_cache()       # in memory no more; on disk
        after_clear = run(f)[:3]
        # g misses here, then another process puts g's kernel in another directory.
        run(g)
        other = sys.argv[1]
        subprocess.run([sys.executable, "-c",
                        "import numpy, numfuse as np; x = np.asarray(numpy.random.default_rng(0).random(50_000)); "
                        "r = np.cos(x) * 3.0 - 0.5; np.flush(); np.wait_background()"],
                       env=dict(os.environ, NUMFUSE_CACHE_DIR=other, NUMFUSE_TIER="lazy"), check=True)
        np.set_option("cache_dir", other)
        moved = run(g)
        # (the compiled cos may differ from NumPy's by an ulp)
        ok = numpy.allclose(numpy.asarray(moved[3]), numpy.cos(numpy.asarray(x)) * 3.0 - 0.5, rtol=1e-14, atol=1e-15)
        print(first, after_clear, moved[:3], ok)
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path / "a"), NUMFUSE_TIER="auto")
    r = subprocess.run([sys.executable, "-c", program, str(tmp_path / "b")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "([True], 0, 0) ([False], 1, 0) ([False], 1, 0) True", r.stdout


def test_tier0_replays_its_first_decisions_on_memoized_windows(tier0_groups):
    # A loop body on tier 0: the first run of its plan decides the splices
    # and the shared blocks; the memo's later runs replay them (no analysis)
    # with the same passes and the same values, and the windows' own
    # buffers (a different input each call) are the ones computed.
    rng = onp.random.default_rng(5)
    us = [rng.random((210, 190)) for _ in range(4)]

    def body(lib, u):
        for _ in range(3):
            u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        m = (u * u + 1.0) * 0.5 - u
        return u, m.sum(axis=0)

    seen = []
    for u0 in us:
        u = nf.asarray(u0.copy())
        r = body(nf, u)
        nf.flush()
        e = nf.explain()
        seen.append((bool(e.report.get("memo_hit")), passes(e.groups)))
        ref = body(onp, u0.copy())
        same(to_np(r[0]), ref[0])
        same(to_np(r[1]), ref[1])
    assert [s[0] for s in seen] == [False, True, True, True], seen
    assert all(s[1] == seen[0][1] for s in seen), seen
    ops, npasses = seen[0][1]
    assert npasses < ops, seen


def test_a_programs_first_mid_size_blocks_come_with_their_pages(tmp_path):
    # The import's background thread touches the pages of a reserve
    # (Buffer::prefault): the first temporaries and results of 64 KiB-4 MiB
    # are carved from it, without a page fault (and the kernel's zeroing)
    # per 4 KiB on the program's path. Six 320 KB results fresh from malloc
    # would fault about 480 times.
    program = textwrap.dedent("""
        import resource, numpy, numfuse as np
        np._core._wait_warm_up()
        x = numpy.random.default_rng(0).random((200, 200))
        a = np.asarray(x)
        np.flush()
        r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        ys = [a * float(i) + 1.0 for i in range(6)]
        for y in ys:
            y[0, 0]
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0
        ok = all(numpy.array_equal(numpy.asarray(y), x * float(i) + 1.0) for i, y in enumerate(ys))
        print(faults, ok)
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    faults, ok = r.stdout.split()
    assert ok == "True", r.stdout
    assert int(faults) < 150, r.stdout


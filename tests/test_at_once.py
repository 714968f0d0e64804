"""Tier 0's decision to run an operation at once or record it
(pipeline/tier0.cc). Small operations run at once, by the interpreter, line
by line; an operation of many short lines costs the interpreter more than
its points say, and once the same one (kind, extents, strides) has run at
once a few times -- a loop's operation -- it is recorded instead, so that
the loop's window is memoized and compiled (the product and the sum after
it one kernel). Results are NumPy's either way."""

import importlib.util
import os

import numpy as onp
import pytest

import numfuse as nf


def _loop_module(name):
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "loops",
                        name + ".py")
    spec = importlib.util.spec_from_file_location(f"loops_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _window_sum(xp, x, w, i, j):
    return xp.sum(x[:, i:i + 5, j:j + 5, :, xp.newaxis] * w[xp.newaxis], axis=(1, 2, 3))


def _per_iteration(x, w, n):
    """tier0_ops and recorded tasks of each of n window sums (the operation
    stays the same: only the window's offset moves)."""
    X, W = nf.asarray(x), nf.asarray(w)
    out = []
    for k in range(n):
        i, j = k % 3, (k * 2) % 4
        with nf.config(tier="auto"), nf.profile() as p:
            r = _window_sum(nf, X, W, i, j)
            got = onp.asarray(r)
        onp.testing.assert_allclose(got, _window_sum(onp, x, w, i, j), rtol=2e-6)
        out.append((p["tier0_ops"], p["tasks"]))
    return out


def test_a_repeated_line_bound_operation_is_recorded_after_its_first_runs():
    # (batch, 5, 5, 1, 6): 200 lines of 6 points -- a distinct batch per
    # test, so that no earlier test has counted this operation.
    rng = onp.random.default_rng(0)
    x = rng.random((7, 9, 9, 1), dtype=onp.float32)
    w = rng.random((5, 5, 1, 6), dtype=onp.float32)
    runs = _per_iteration(x, w, 10)
    # New: the product and the sum run at once, nothing is recorded.
    assert runs[0][0] >= 2 and runs[0][1] == 0, runs
    # Repeated: recorded (the product, and the sum reading it), not run at once.
    for tier0_ops, tasks in runs[6:]:
        assert tier0_ops == 0 and tasks >= 2, runs


def test_an_operation_of_few_lines_runs_at_once_however_often():
    rng = onp.random.default_rng(1)
    a, b = rng.random((8, 64)), rng.random(64)  # 1 line (contiguous), then 8 lines of 64
    A, B = nf.asarray(a), nf.asarray(b)
    for _ in range(12):
        with nf.config(tier="auto"), nf.profile() as p:
            got = onp.asarray(A * B)
        onp.testing.assert_array_equal(got, a * b)
        assert p["tier0_ops"] >= 1 and p["tasks"] == 0


def test_a_line_bound_operation_seen_a_few_times_runs_at_once():
    rng = onp.random.default_rng(2)
    x = rng.random((5, 9, 9, 1), dtype=onp.float32)
    w = rng.random((5, 5, 1, 6), dtype=onp.float32)
    runs = _per_iteration(x, w, 3)
    for tier0_ops, tasks in runs:
        assert tier0_ops >= 2 and tasks == 0, runs


def test_tier_eager_still_runs_line_bound_operations_at_once():
    rng = onp.random.default_rng(3)
    x = rng.random((6, 9, 9, 1), dtype=onp.float32)
    w = rng.random((5, 5, 1, 6), dtype=onp.float32)
    X, W = nf.asarray(x), nf.asarray(w)
    for k in range(8):
        with nf.config(tier="eager"), nf.profile() as p:
            got = onp.asarray(_window_sum(nf, X, W, 1, 2))
        onp.testing.assert_allclose(got, _window_sum(onp, x, w, 1, 2), rtol=2e-6)
        assert p["tier0_ops"] >= 2 and p["tasks"] == 0


@pytest.mark.parametrize("tier", ["auto", "lazy", "eager"])
def test_the_pixel_by_pixel_convolution_layer_gives_numpys_values(tier):
    mod = _loop_module("conv2d_pixels")
    args = mod.make_inputs(onp, **mod.QUICK)
    expected = mod.run(onp, *args)
    with nf.config(tier=tier):
        for _ in range(2):  # the second call: the operations have repeated
            got = onp.asarray(mod.run(nf, *[nf.asarray(a) for a in args]))
            assert got.dtype == expected.dtype and got.shape == expected.shape
            onp.testing.assert_allclose(got, expected, rtol=mod.RTOL, atol=mod.ATOL)


def test_operations_of_long_lines_and_matrix_products_run_at_once_however_often():
    # ADI's `rhs[:, 1:] += h * u[:, :-1]` (64 lines of 63: recorded, it would
    # make the Thomas sweeps after it pending) and small matrix products
    # (BLAS calls, no lines) stay at once.
    rng = onp.random.default_rng(4)
    u, rhs = rng.random((64, 64)), rng.random((64, 64))
    w, x = rng.random((16, 16)), rng.random((16, 8))
    U, R, Wn, Xn = (nf.asarray(a) for a in (u, rhs, w, x))
    for _ in range(10):
        with nf.config(tier="auto"), nf.profile() as p:
            R[:, 1:] += 0.25 * U[:, :-1]
            prod = Wn @ Xn
        assert p["tier0_ops"] >= 3 and p["tasks"] == 0, p
        rhs[:, 1:] += 0.25 * u[:, :-1]
        onp.testing.assert_array_equal(onp.asarray(prod), w @ x)
    onp.testing.assert_array_equal(onp.asarray(R), rhs)


# -- settling: small operations after large pending ones --------------------


def test_a_loop_of_small_operations_after_large_ones_runs_at_once():
    # covariance (NPBench): `data -= mean` is large and pending when the loop
    # over columns starts; its first small operation has the window flushed
    # as its call ends, and the loop's operations after it run at once
    # instead of each being recorded and launched as a kernel.
    rng = onp.random.default_rng(5)
    d0 = rng.random((101, 79))
    per_iteration = []
    with nf.config(tier="auto"):
        data = nf.array(d0)
        nf.flush()
        mean = nf.mean(data, axis=0)
        data -= mean  # (7,979 points: recorded)
        got = nf.zeros((79, 79))
        for i in range(6):
            before = nf._core.pending()
            col = data[:, i] @ data[:, i:79] / 100.0
            got[i:79, i] = got[i, i:79] = col
            per_iteration.append((before, nf._core.pending()))
    cov = onp.zeros((79, 79))
    d = d0 - d0.mean(axis=0)
    for i in range(6):
        cov[i:79, i] = cov[i, i:79] = d[:, i] @ d[:, i:79] / 100.0
    onp.testing.assert_allclose(onp.asarray(got), cov, rtol=1e-13, atol=1e-15)
    assert per_iteration[0][0] >= 1, per_iteration  # the prologue was pending
    for before, after in per_iteration[1:]:  # nothing recorded once settled
        assert before == 0 and after == 0, per_iteration


def test_a_small_result_between_large_operations_is_not_flushed():
    # A variance's mean along rows is small (one value per row) and read
    # whole by the large deviations after it: no settle, one flush, one
    # multi-stage kernel.
    rng = onp.random.default_rng(6)
    x0 = rng.random((613, 601))
    x = nf.array(x0)
    nf.flush()
    with nf.config(tier="auto"), nf.profile() as p:
        v = x.var(axis=1, ddof=1)
        nf.flush()
    assert p["flushes"] == 1, p
    onp.testing.assert_allclose(onp.asarray(v), x0.var(axis=1, ddof=1), rtol=1e-12)


def test_a_settle_that_does_not_pay_is_not_asked_again():
    # FDTD-2D: every step updates large arrays, then writes a boundary row of
    # one of them (small, its memory pending). Flushing there runs nothing
    # at once after it; after the first such settle, the row's write is
    # recorded with the steps, which stay in a few windows.
    rng = onp.random.default_rng(7)
    ex0, ey0, hz0, f0 = rng.random((97, 131)), rng.random((97, 131)), rng.random((97, 131)), rng.random(40)
    ex, ey, hz = (nf.array(a) for a in (ex0, ey0, hz0))
    nf.flush()
    with nf.config(tier="auto"), nf.profile() as p:
        for t in range(40):
            ey[0, :] = f0[t]
            ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
            ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
            hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        nf.flush()
    # (About 600 operations: the window's own cuts at 512 tasks make 2
    # flushes; the first settle 1 more -- flushing every step would be 40.)
    assert p["flushes"] <= 4, p
    for t in range(40):
        ey0[0, :] = f0[t]
        ey0[1:, :] -= 0.5 * (hz0[1:, :] - hz0[:-1, :])
        ex0[:, 1:] -= 0.5 * (hz0[:, 1:] - hz0[:, :-1])
        hz0[:-1, :-1] -= 0.7 * (ex0[:-1, 1:] - ex0[:-1, :-1] + ey0[1:, :-1] - ey0[:-1, :-1])
    for a, b in ((ex, ex0), (ey, ey0), (hz, hz0)):
        onp.testing.assert_allclose(onp.asarray(a), b, rtol=1e-13)


def test_small_matrix_products_run_at_once_large_ones_are_recorded():
    rng = onp.random.default_rng(8)
    a, b = rng.random(103), rng.random((103, 77))  # 7,931 multiply-adds: at once (BLAS)
    A, B = nf.asarray(a), nf.asarray(b)
    with nf.config(tier="auto"), nf.profile() as p:
        r = A @ B
        assert nf._core.pending() == 0
    onp.testing.assert_allclose(onp.asarray(r), a @ b, rtol=1e-13)
    assert p["tier0_ops"] >= 1 and p["tasks"] == 0, p
    # An integer product (no BLAS: the interpreter would run it) of as many
    # points is recorded like any operation over eager_max_elements.
    ai, bi = rng.integers(0, 9, 103), rng.integers(0, 9, (103, 77))
    AI, BI = nf.asarray(ai), nf.asarray(bi)
    with nf.config(tier="auto"):
        r = AI @ BI
        assert nf._core.pending() >= 1
    onp.testing.assert_array_equal(onp.asarray(r), ai @ bi)
    c, d = rng.random((131, 127)), rng.random((127, 129))  # 2.1M: recorded
    C, D = nf.asarray(c), nf.asarray(d)
    with nf.config(tier="auto"):
        r = C @ D
        assert nf._core.pending() >= 1
    onp.testing.assert_allclose(onp.asarray(r), c @ d, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float32", "float64", "complex64",
                                   "complex128"])
def test_fills_and_copies_of_small_arrays_run_at_once_with_numpys_values(dtype):
    # zeros/ones/full and x.copy()/astype(x.dtype) of small C-contiguous
    # arrays: computed at the call (nothing recorded), bit for bit NumPy's.
    for shape in [(1,), (16,), (3, 5), (2, 3, 4), (0,), ()]:
        with nf.config(tier="auto"), nf.profile() as p:
            z, o, f = nf.zeros(shape, dtype), nf.ones(shape, dtype), nf.full(shape, 7, dtype)
        assert p["tasks"] == 0 and p["flushes"] == 0, (shape, p["tasks"], p["flushes"])
        for got, want in [(z, onp.zeros(shape, dtype)), (o, onp.ones(shape, dtype)), (f, onp.full(shape, 7, dtype))]:
            assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
            onp.testing.assert_array_equal(onp.asarray(got), want)
        x = onp.arange(int(onp.prod(shape)), dtype=dtype).reshape(shape) if dtype != "bool" else \
            (onp.arange(int(onp.prod(shape))) % 3 == 0).reshape(shape)
        X = nf.asarray(x)
        with nf.config(tier="auto"), nf.profile() as p:
            c, d = X.copy(), X.astype(dtype)
        assert p["tasks"] == 0
        if x.size:
            assert p["tier0_ops"] == 2, p["tier0_ops"]
        onp.testing.assert_array_equal(onp.asarray(c), x)
        onp.testing.assert_array_equal(onp.asarray(d), x)
        # The copy owns new memory: writing it leaves the original alone.
        if x.size:
            c[(0,) * x.ndim] = 1
            onp.testing.assert_array_equal(onp.asarray(X), x)


def test_a_copy_of_a_pending_or_strided_array_takes_the_general_path():
    a = onp.arange(32.0)
    A = nf.asarray(a)
    with nf.config(tier="lazy"):
        B = A * 2.0  # pending
    with nf.config(tier="auto"):
        C = B.copy()       # reads a pending result
        D = A[::2].copy()  # strided source
        E = A.reshape(4, 8).T.copy()
    onp.testing.assert_array_equal(onp.asarray(C), a * 2.0)
    onp.testing.assert_array_equal(onp.asarray(D), a[::2])
    onp.testing.assert_array_equal(onp.asarray(E), a.reshape(4, 8).T.copy())
    assert onp.asarray(E).flags.c_contiguous


@pytest.mark.parametrize("fill", [0, 1, -3, 2**62, True, False, 2.5, -0.0, float("nan"), 1 + 2j])
def test_full_of_a_python_number_has_numpys_type_and_values(fill):
    for shape in [5, (2, 3), (), 0, (4000,), (70, 70)]:
        got, want = nf.full(shape, fill), onp.full(shape, fill)
        assert got.dtype == want.dtype and got.shape == want.shape
        onp.testing.assert_array_equal(onp.asarray(got), want)
        if want.size:
            assert onp.signbit(onp.asarray(got).real).ravel()[0] == onp.signbit(want.real).ravel()[0]


def test_full_falls_back_to_numpys_rules_for_other_forms():
    # dtype=, NumPy scalars, arrays and Python ints beyond int64 take the general path
    onp.testing.assert_array_equal(onp.asarray(nf.full(3, 2.7, dtype=onp.int32)), onp.full(3, 2.7, dtype=onp.int32))
    assert nf.full(3, onp.float32(1.5)).dtype == onp.float32
    onp.testing.assert_array_equal(onp.asarray(nf.full((2, 3), nf.arange(3))), onp.full((2, 3), onp.arange(3)))
    with pytest.raises(ValueError, match="negative dimensions"):
        nf.full(-1, 2.0)
    with pytest.raises(TypeError):
        nf.full((2, "a"), 2.0)
    with pytest.raises(TypeError):
        nf.full(3, 1.0, bogus=1)

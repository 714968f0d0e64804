"""A loop body whose window recompute_producers rewrites (fusion.h) is
memoized as recorded: after the first iteration the memo matches the window
as it was recorded, before the rewrite, and binds the rewritten window's plan
straight to it (flush.cc: Recorded; fusion::Source says where each operand of
a rewritten task comes from), so nothing is rewritten or decided again.

Every case is compared with NumPy exactly, and the report must show which
path ran: `memo_recorded` (the plan bound to the recorded window) and
`rewrite_replayed` (the rewrite replayed because tier 0, the floating-point
flags' analysis or a failure's restore needed the rewritten tasks). A silent
return to rewriting every iteration fails the path assertions; a wrong
translation of a recipe fails the values.
"""

import warnings

import numpy as onp
import pytest

import numfuse as nf

from conftest import assert_same, sum_rtol

RNG = onp.random.default_rng(11)


def reports(body, state, iters, **cfg):
    """Runs state = body(lib, state, k) for k < iters under numfuse (flushed
    each iteration) and NumPy; returns the final states and the reports."""
    got = tuple(nf.asarray(s) for s in state)
    ref = tuple(onp.array(s) for s in state)
    reps = []
    with nf.config(**{"tier": "lazy", **cfg}):
        for k in range(iters):
            got = body(nf, got, k)
            nf.flush()
            reps.append(nf.explain().report)
            ref = body(onp, ref, k)
    return got, ref, reps


def assert_recorded_path(reps, recomputed):
    assert reps[0]["recomputed"] == recomputed and not reps[0]["memo_recorded"]
    for r in reps[1:]:
        assert r["memo_hit"] and r["memo_recorded"] and not r["rewrite_replayed"], r
        assert r["recomputed"] == recomputed


def heat(lib, state, k):
    # The fluxes are recomputed at the update (one subtraction each, read at
    # two offsets); the coefficient changes every iteration (a parameter).
    (u,) = state
    alpha = 0.05 + 0.01 * k
    flux = u[1:] - u[:-1]
    u = u.copy()
    u[1:-1] = u[1:-1] + alpha * (flux[1:] - flux[:-1])
    return (u,)


def test_heat_loop_binds_the_recorded_window():
    got, ref, reps = reports(heat, (RNG.standard_normal(300),), 6)
    assert_recorded_path(reps, 1)
    assert_same(got[0], ref[0], rtol=0)


def diffusion(lib, state, k):
    # The fluxes recomputed, the Laplacian stored: a chain of two stages
    # (a multi-stage kernel) launched with the translated bindings.
    u, acc = state
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    fx = lap[:, 1:] - lap[:, :-1]
    fy = lap[1:, :] - lap[:-1, :]
    return u, u[2:-2, 2:-2] - (0.1 / (k + 1)) * (fx[1:-1, 1:] - fx[1:-1, :-1] + fy[1:, 1:-1] - fy[:-1, 1:-1])


@pytest.mark.cpu_only
def test_diffusion_loop_with_multi_stage_kernels():
    got, ref, reps = reports(diffusion, (RNG.standard_normal((40, 37)), onp.zeros((36, 33))), 5,
                             stage_min_bytes=0)
    assert_recorded_path(reps, 2)
    assert [g["stages"] for g in nf.explain().groups if g["stage"] == 1] == [2]
    assert_same(got[1], ref[1], rtol=0)


def moving(lib, state, k):
    # The producer reads a window of `x` that moves every iteration; its
    # result is read at three offsets, one of them by a reduction. The
    # rewritten readers' inputs are `x` shifted from where the producer read
    # it: the translated recipes must add the shift to the moving offset.
    x, acc = state
    b = x[k:k + 50] * 0.5 + x[k + 1:k + 51]
    d = b[2:] - 2 * b[1:-1] + b[:-2]
    acc = acc + d
    s = (b[1:] * b[:-1]).sum()
    return x, acc + s


def test_moving_slices_shift_the_translated_views():
    got, ref, reps = reports(moving, (RNG.standard_normal(80), onp.zeros(48)), 8)
    assert_recorded_path(reps, 2)
    assert_same(got[1], ref[1], rtol=sum_rtol())


def index_and_consts(lib, state, k):
    # A producer with its own constants and a broadcast read, recomputed
    # into a reader with constants of its own: each constant must come from
    # its own task as recorded (they change every iteration).
    a, out = state
    c = float(k) + 0.25
    b = lib.where(a > c / 10, a * c, a - c)
    out = out + (b[:, 1:] * (k + 1) - b[:, :-1]) / 3
    return a, out


def test_constants_of_the_producer_and_the_reader_are_rebound():
    got, ref, reps = reports(index_and_consts, (RNG.standard_normal((20, 31)), onp.zeros((20, 30))), 6)
    assert_recorded_path(reps, 4)
    assert_same(got[1], ref[1], rtol=0)


def two_offsets(lib, state, k):
    # The input is read at two offsets that move by different amounts
    # (i and 2i): no common shift, so the recorded form does not match
    # (window_matches); the window is rewritten and found by its signature.
    x, acc = state
    i = k % 3
    b = x[i:i + 40] + x[2 * i:2 * i + 40]
    return x, acc + (b[1:] - b[:-1])


def test_views_moving_apart_take_the_rewritten_path():
    got, ref, reps = reports(two_offsets, (RNG.standard_normal(60), onp.zeros(39)), 7)
    assert all(r["recomputed"] == 1 for r in reps)
    # k = 3 repeats k = 0's offsets exactly: that one matches as recorded.
    assert [r["memo_recorded"] for r in reps] == [False, False, False, True, True, True, True]
    assert_same(got[1], ref[1], rtol=0)


def cone(lib, state, k):
    # (a > 0) and the subtraction are the product's cone: 3 recomputed with
    # the default budget, none with a budget of 3.
    a, acc = state
    d = a[:, 1:] - a[:, :-1]
    e = d * (a[:, 1:] > k / 10)
    return a, acc + (e[1:] + e[:-1])


def test_a_budget_change_is_not_answered_by_the_recorded_form():
    state = (RNG.standard_normal((17, 23)), onp.zeros((16, 22)))
    _, _, reps = reports(cone, state, 3)
    assert_recorded_path(reps, 3)
    got, ref, reps = reports(cone, state, 2, recompute=3)
    assert [r["recomputed"] for r in reps] == [0, 0] and not any(r["memo_recorded"] for r in reps)
    assert_same(got[1], ref[1], rtol=0)


def test_tier0_replays_the_rewrite(tmp_path):
    # Auto tier, kernels in no cache and the background compiler held: the
    # rewritten window's groups run on tier 0 -- on the rewritten tasks, so
    # the rewrite is replayed on the recorded window.
    x = RNG.standard_normal(5000)
    nf._core.clear_kernel_cache()
    nf._core.tune_background_hold(True)
    try:
        with nf.config(eager_max_elements=64, cache_dir=tmp_path):
            got, ref, reps = reports(heat, (x,), 4, tier="auto")
    finally:
        nf._core.tune_background_hold(False)
    for r in reps[1:]:
        assert r["memo_recorded"] and r["tier0_groups"] > 0 and r["rewrite_replayed"], r
    assert "replayed for tier 0" in str(nf.explain())
    assert_same(got[0], ref[0], rtol=0)


def test_floating_point_flags_replay_the_rewrite():
    # The reader divides by zero in some lanes: NumPy's warning, every
    # iteration, from the flags' analysis of the rewritten tasks.
    def div(lib, state, k):
        a, z, out = state
        b = a * (k + 2)
        return a, z, out + (b[1:] - b[:-1]) / z

    a = RNG.standard_normal(64)
    z = onp.ones(63)
    z[::7] = 0
    got = (nf.asarray(a), nf.asarray(z), nf.zeros(63))
    ref = (a, z, onp.zeros(63))
    with nf.config(tier="lazy"):
        for k in range(4):
            with pytest.warns(RuntimeWarning, match="divide by zero"):
                got = div(nf, got, k)
                nf.flush()
            r = nf.explain().report
            assert r["recomputed"] == 1 and r["memo_recorded"] == (k > 0) and r["rewrite_replayed"] == (k > 0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = div(onp, ref, k)
    assert_same(got[2], ref[2], rtol=0)


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_failure_restores_the_rewritten_tasks(fail_at):
    # The window fails part-way (an allocation): the tasks that did not run
    # go back to the stream as rewritten -- the recomputed producer never
    # ran, so a reader put back as recorded would read memory nobody wrote.
    def body(lib, x, k):
        b = x * 2 + k
        d1 = b[1:] - b[:-1]
        m = d1.sum()
        d2 = (b[2:] - b[:-2]) * m
        return d1, d2

    x = RNG.standard_normal(200)
    with nf.config(tier="lazy"):
        X = nf.asarray(x)
        for k in range(2):
            d1, d2 = body(nf, X, k)  # (the same window: both results live)
            nf.flush()
        assert nf.explain().report["memo_recorded"] and nf.explain().report["recomputed"] == 2
        del d1, d2
        d1, d2 = body(nf, X, 5)
        nf._core._inject_allocation_failure(fail_at)
        try:
            with pytest.raises(MemoryError):
                nf.flush()
        finally:
            nf._core._inject_allocation_failure(-1)
        e1, e2 = body(onp, x, 5)
        assert_same(d2, e2, rtol=sum_rtol())
        assert_same(d1, e1, rtol=0)


def test_random_stencil_loops():
    # Random bodies: a producer of random cheap operations on a moving
    # window, read by random shifted slices, with per-iteration constants.
    ops = [lambda lib, v, c: v * c, lambda lib, v, c: v + c, lambda lib, v, c: lib.abs(v) - c,
           lambda lib, v, c: lib.maximum(v, c), lambda lib, v, c: -v]
    rng = onp.random.default_rng(5)
    recorded = 0
    for case in range(12):
        chain = [ops[i] for i in rng.integers(0, len(ops), rng.integers(1, 4))]
        shifts = sorted(set(int(s) for s in rng.integers(0, 4, rng.integers(2, 4))))
        step = int(rng.integers(0, 3))
        n = 40

        def body(lib, state, k, chain=chain, shifts=shifts, step=step):
            x, acc = state
            b = x[step * k:step * k + n]
            for j, op in enumerate(chain):
                b = op(lib, b, 0.5 + 0.1 * k + j)
            m = n - shifts[-1]
            t = sum(b[s:s + m] * (s + 1) for s in shifts)
            return x, acc + t[: n - 3]

        x = rng.standard_normal(n + 3 * 8)
        got, ref, reps = reports(body, (x, onp.zeros(n - 3)), 6)
        recorded += sum(r["memo_recorded"] for r in reps)
        assert_same(got[1], ref[1], rtol=0)
    assert recorded >= 12 * 4, recorded

"""Multi-stage kernels (fusion.h, Chain; runtime.h, ChainPlan): stencil chains
and reductions feeding their consumers run as one kernel over tiles of rows,
their intermediates in per-thread tile buffers.

Every workload is checked against NumPy and against numfuse's own separate
kernels (stages=False) -- bit for bit, except where exp/log are involved
(libmvec's vector exp and glibc's scalar one differ in the last bit at some
points) -- under every tile size and storage the launcher offers, and each
test also checks from explain() that the multi-stage kernel really ran: a
silent return to separate kernels fails.
"""

import collections
import itertools
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st

import numfuse as nf

# Multi-stage kernels are the CPU target's (pipeline/target.h: Target::chains).
pytestmark = pytest.mark.cpu_only

from conftest import to_np

# Intermediates must reach numfuse's threshold (256 KiB) to form a chain.
N = 300


@pytest.fixture(autouse=True)
def _compiled_tier():
    # A multi-stage kernel seen for the first time runs its stages on tier 0
    # when that is cheaper than its compile (flush.cc, choose_chain_tier; its
    # own tests are in test_first_calls.py): these tests are about the
    # kernels, so they run on the compiled tier.
    with nf.config(tier="lazy"):
        yield


def blur(lib, a):
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    return (bx[:-2, :] + bx[1:-1, :] + bx[2:, :]) / 3


def blur_weighted(lib, a):
    bx = 0.25 * a[:, :-2] + 0.5 * a[:, 1:-1] + 0.25 * a[:, 2:]
    return 0.25 * bx[:-2] + 0.5 * bx[1:-1] + 0.25 * bx[2:]


def diffusion(lib, u, alpha=0.1):
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    fx = lap[:, 1:] - lap[:, :-1]
    fy = lap[1:, :] - lap[:-1, :]
    return u[2:-2, 2:-2] - alpha * (fx[1:-1, 1:] - fx[1:-1, :-1] + fy[1:, 1:-1] - fy[:-1, 1:-1])


def hdiff(lib, inp, coeff=0.025):
    # The COSMO horizontal diffusion: Laplacian, limited fluxes, update.
    lap = 4 * inp[1:-1, 1:-1] - (inp[2:, 1:-1] + inp[:-2, 1:-1] + inp[1:-1, 2:] + inp[1:-1, :-2])
    flx = lap[1:-1, 1:] - lap[1:-1, :-1]
    flx = lib.where(flx * (inp[2:-2, 2:-1] - inp[2:-2, 1:-2]) > 0, 0.0, flx)
    fly = lap[1:, 1:-1] - lap[:-1, 1:-1]
    fly = lib.where(fly * (inp[2:-1, 2:-2] - inp[1:-2, 2:-2]) > 0, 0.0, fly)
    return inp[2:-2, 2:-2] - coeff * (flx[:, 1:] - flx[:, :-1] + fly[1:, :] - fly[:-1, :])


def hfav_laplacian_chain(lib, u):
    # HFAV's running example: a Laplacian of a Laplacian (biharmonic), each
    # a five-point stencil over the previous result.
    l1 = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    return l1[:-2, 1:-1] + l1[2:, 1:-1] + l1[1:-1, :-2] + l1[1:-1, 2:] - 4 * l1[1:-1, 1:-1]


def softmax(lib, x):
    m = x.max(axis=1, keepdims=True)
    e = lib.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def log_softmax(lib, x):
    m = x.max(axis=1, keepdims=True)
    return x - m - lib.log(lib.exp(x - m).sum(axis=1, keepdims=True))


def softmax_squares(lib, x):
    # (Only the launch-tuning test tunes these operations: the background
    # tuner takes a kernel once per process.)
    e = lib.exp(x - x.max(axis=1, keepdims=True))
    return e / (e * e).sum(axis=1, keepdims=True)


def logsumexp(lib, x):
    m = x.max(axis=1)
    return m + lib.log(lib.exp(x - m[:, None]).sum(axis=1))


def standardize(lib, x):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / lib.sqrt(var + 1e-5)


def normalize(lib, x):
    return x / x.sum(axis=1, keepdims=True)


def center_max(lib, x):
    return x - x.max(axis=1, keepdims=True)


def center_mean(lib, x):
    return x - x.mean(axis=1, keepdims=True)


def blur3d(lib, a):
    bx = (a[:, :, :-2] + a[:, :, 1:-1] + a[:, :, 2:]) / 3
    by = (bx[:, :-2] + bx[:, 1:-1] + bx[:, 2:]) / 3
    return (by[:-2] + by[1:-1] + by[2:]) / 3


STENCILS = [blur, blur_weighted, diffusion, hdiff, hfav_laplacian_chain]
ROWWISE = [softmax, log_softmax, logsumexp, standardize, normalize, center_max, center_mean]


def stages_ran():
    """The stage counts of the last flush's multi-stage kernels."""
    return [g["stages"] for g in nf.explain().groups if g["stage"] == 1]


def run(fn, *args):
    r = fn(nf, *args)
    nf.flush()
    return r


def same(got, expected, exact=True):
    g, e = to_np(got), onp.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype
    if exact:
        onp.testing.assert_array_equal(g, e)
    else:  # exp and log are numfuse's (glibc's), within an ulp or two of NumPy's
        onp.testing.assert_allclose(g, e, rtol=1e-13, atol=0)


# Workloads with transcendental functions: bit-exact against numfuse's own
# separate kernels, close to NumPy.
TRANSCENDENTAL = {"softmax", "softmax_squares", "log_softmax", "logsumexp", "standardize"}


def check(fn, got, args):
    """got == what the separate kernels give, bit for bit, and NumPy's result."""
    exact = fn.__name__ not in TRANSCENDENTAL
    with nf.config(stages=False):
        ref = run(fn, *[nf.asarray(a) for a in args])
    # (libmvec's vector exp and glibc's scalar one differ in the last bit at
    # some points, and which points take which depends on the loop shape.)
    same(got, to_np(ref), exact=exact)
    same(got, fn(onp, *args), exact=exact)


@pytest.fixture
def data():
    rng = onp.random.default_rng(7)
    return rng.standard_normal((N, N + 17))


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 5, 16])
@pytest.mark.parametrize("storage", ["rolling", "recompute", "ring"])
@pytest.mark.parametrize("fn", STENCILS + ROWWISE, ids=lambda f: f.__name__)
def test_chain_equals_numpy(fn, storage, rows, data):
    x = nf.asarray(data)
    with nf.config(stage_rows=rows, stage_storage=storage):
        got = run(fn, x)
        assert stages_ran(), f"{fn.__name__}: no multi-stage kernel ran\n{nf.explain()}"
    check(fn, got, [data])


@pytest.mark.parametrize("cols", [1, 3, 8, 64])
@pytest.mark.parametrize("storage", ["recompute", "ring"])
@pytest.mark.parametrize("fn", STENCILS, ids=lambda f: f.__name__)
def test_column_strips_equal_numpy(fn, storage, cols, data):
    # Each thread walks its rows once per strip of columns; every stage
    # computes the columns its consumers read (column halos, inferred like
    # the rows'). 2-d chains run in strips, others (hdiff's k-planes) whole.
    x = nf.asarray(data)
    with nf.config(stage_storage=storage, stage_cols=cols):
        got = run(fn, x)
        assert stages_ran()
        text = nf.explain().groups[0]["chain"]
        if data.ndim == 2 and fn is not hdiff:
            assert f"in strips of {cols} of its" in text, text
            assert "columns [c0" in text
    check(fn, got, [data])


def test_stencil_chains_run_over_whole_rows_unless_strips_are_asked_for(data):
    # Strips are not faster on every machine: by default (no tuning) each
    # stage call covers its whole rows; stage_cols or the launch's tuning
    # (test_tuning_measures_the_launch_choices_on_live_runs) choose strips.
    with nf.config(stage_storage="ring"):
        got = run(blur, nf.asarray(data))
        text = nf.explain().groups[0]["chain"]
    assert "ring buffers" in text and "in strips of" not in text, text
    check(blur, got, [data])


def test_column_strips_turn_rolling_into_ring(data):
    with nf.config(stage_storage="rolling", stage_cols=16):
        got = run(blur, nf.asarray(data))
        text = nf.explain().groups[0]["chain"]
    assert "ring buffers" in text and "in strips of 16" in text, text
    check(blur, got, [data])


@pytest.mark.parametrize("fn", STENCILS + ROWWISE, ids=lambda f: f.__name__)
def test_memoized_chain_reruns(fn, data):
    # The second and third calls reuse the memoized plan: rebound stages.
    x = nf.asarray(data)
    for k in range(3):
        y = data * (k + 1)
        got = run(fn, nf.asarray(y))
        assert stages_ran()
        check(fn, got, [y])
    del x


@pytest.mark.parametrize("fn", [blur, diffusion, softmax, standardize], ids=lambda f: f.__name__)
def test_stages_off_gives_the_same(fn, data):
    x = nf.asarray(data)
    with nf.config(stages=False):
        off = run(fn, x)
        assert stages_ran() == []
    on = run(fn, x)
    assert stages_ran()
    same(on, to_np(off))


@pytest.mark.parametrize("fn", [diffusion, softmax], ids=lambda f: f.__name__)
def test_tuning_measures_the_launch_choices_on_live_runs(fn, data, tmp_path):
    # With tuning on, the launch tries tile rows {auto, 4, 16, 64} x {rolling,
    # recomputed halos} and rings of one row (whole rows, column strips) on
    # its first 20 runs (each twice), then keeps the fastest; every run computes the same values as NumPy and as separate
    # kernels. (A cache directory of its own: the choice is stored there.)
    # (A plan made after the choice was stored -- the background tuner's
    # schedule for a stage re-plans the window -- starts with it.)
    def chosen(text):
        return "tuned on its first 20 runs" in text or "tuned by an earlier run" in text

    texts, results = [], []
    deadline = time.monotonic() + 300  # (the stages' own tuning, in the background, comes first)
    with nf.config(tune=0.05, cache_dir=str(tmp_path)):
        for k in itertools.count():
            assert time.monotonic() < deadline, texts[-3:]
            y = data * (1 + k / 8)
            got = run(fn, nf.asarray(y))
            assert stages_ran()
            texts.append(nf.explain().groups[0]["chain"])
            if k % 7 == 0 or chosen(texts[-1]):
                results.append((got, y))  # (checked after: check() re-plans)
            if len(texts) >= 3 and all(chosen(t) for t in texts[-3:]):
                break
        nf.wait_background()  # (its tuned schedules go to this test's store, not the default one)
    for got, y in results:
        check(fn, got, [y])
    # The launch is tuned once its stages' schedules are settled (their
    # background tuning done; until then it waits): its 20 runs in a row,
    # whatever re-plans the window meanwhile.
    waited = [k for k, t in enumerate(texts) if "launch choices wait" in t]
    runs = [int(t.split("launch being tuned: run ")[1].split()[0]) for t in texts if "being tuned" in t]
    assert runs == list(range(1, 21)), runs
    assert all(k < texts.index(next(t for t in texts if "being tuned" in t)) for k in waited)
    tuned = texts[-3:]
    assert all(chosen(t) for t in tuned), tuned
    # The choice stays once made, and the recompute candidates really ran
    # (each launch says which halos it used).
    assert len({t.split("launch tuned ")[1].split(": ", 1)[1] for t in tuned}) == 1
    measured = [t for t in texts if "launch being tuned" in t]
    assert any("recomputed" in t for t in measured)
    assert any("rolling" in t for t in measured)
    assert any("ring buffers" in t for t in measured)
    assert any("ring buffers" in t and "in strips of" not in t for t in measured)


def test_launch_tuning_waits_for_its_stages_and_outlives_a_plan(data, tmp_path):
    # The launch is measured on the chain kernel its stages' tuned schedules
    # make: while a stage's schedule is being tuned in the background, the
    # launch runs its default choices and says it waits. Once they are
    # settled its runs count on, across plans rebuilt meanwhile (the memo is
    # cleared whenever any kernel's schedule is tuned).
    def launch(text):
        return text.splitlines()[-1]

    with nf.config(tune=0.05, cache_dir=str(tmp_path)):
        nf._core.tune_background_hold(True)
        try:
            for k in range(3):
                got = run(softmax_squares, nf.asarray(data * (1 + k)))
                assert stages_ran()
                assert launch(nf.explain().groups[0]["chain"]) == (
                    "launch choices wait for the stages' schedules (searched in the background)")
                check(softmax_squares, got, [data * (1 + k)])
        finally:
            nf._core.tune_background_hold(False)
        nf.wait_background()
        texts = []
        for k in range(25):
            if k == 5:
                nf._core.clear_memo()  # (a new plan: the launch's measurement goes on)
            run(softmax_squares, nf.asarray(data))
            texts.append(launch(nf.explain().groups[0]["chain"]))
    assert texts[:20] == [f"launch being tuned: run {r} of 20" for r in range(1, 21)], texts
    assert all(t.startswith("launch tuned on its first 20 runs: ") for t in texts[20:]), texts


def test_launch_tuning_tries_column_strips_on_a_wide_stencil_chain(tmp_path):
    # Rows wider than a strip whose ring rows fill half of L1: one of the
    # tuned candidates runs in column strips, the other rings over whole rows.
    y0 = onp.random.default_rng(3).standard_normal((64, 4096))
    texts, results = [], collections.deque(maxlen=40)  # (the last runs: checked after)
    deadline = time.monotonic() + 300  # (the stages' own tuning, in the background, comes first)
    with nf.config(tune=0.05, cache_dir=str(tmp_path)):
        for k in itertools.count():
            assert time.monotonic() < deadline, texts[-3:]
            y = y0 * (1 + k / 8)
            results.append((run(diffusion, nf.asarray(y)), y))  # (checked after: check() re-plans)
            texts.append(nf.explain().groups[0]["chain"])
            if any("in strips of" in t for t in texts) and any(
                    "ring buffers" in t and "in strips of" not in t for t in texts):
                break
        nf.wait_background()
    for got, y in results:
        check(diffusion, got, [y])
    assert any("launch being tuned" in t and "in strips of" in t for t in texts), texts
    assert any("ring buffers" in t and "in strips of" not in t for t in texts), texts


def test_explain_describes_the_stages(data):
    run(blur, nf.asarray(data))
    text = str(nf.explain())
    assert "stage 1 of 2 of one multi-stage kernel" in text
    assert "rows [r0 + 0, r1 + 2)" in text  # the producer's halo for the consumer's 3 rows
    assert "tile buffer" in text and "never in memory" in text
    assert "intermediates never written to memory" in text
    assert "flush: 6 operations -> 1 kernels" in text
    g = nf.explain().groups
    assert g[0]["chain"] and not g[1]["chain"]


def test_3d_stencil_chain():
    a = onp.random.default_rng(1).standard_normal((40, 60, 70))
    for rows in (0, 1, 4):
        with nf.config(stage_rows=rows):
            got = run(blur3d, nf.asarray(a))
            assert stages_ran() == [3]
        same(got, blur3d(onp, a))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_other_dtypes(dtype):
    a = (onp.random.default_rng(2).standard_normal((N, N)) * 100).astype(dtype)

    def chain(lib, a):
        t = a[:, 1:] - a[:, :-1]
        return t[1:] * 3 + t[:-1]

    # (Recomputed at its two readers' rows, t would not be stored at all.)
    with nf.config(recompute=False):
        got = run(chain, nf.asarray(a))
        assert stages_ran()
    same(got, chain(onp, a))
    got = run(chain, nf.asarray(a))
    assert not stages_ran() and nf.explain().report["recomputed"] == 1
    same(got, chain(onp, a))


def test_odd_shapes_and_few_rows():
    rng = onp.random.default_rng(3)
    for shape in [(5, 40000), (3, 30000), (4, 20001), (1000, 37), (2000, 3)]:
        a = rng.standard_normal(shape)
        for fn in (softmax, center_mean):
            got = run(fn, nf.asarray(a))
            check(fn, got, [a])
        if shape[0] >= 3 and shape[1] >= 3:
            same(run(blur, nf.asarray(a)), blur(onp, a))


def test_visible_intermediates_of_zero_halo_chains(data):
    # At top level a script keeps its intermediates: they are written in full
    # (Full links), and the chain still runs with them.
    x = nf.asarray(data)
    m = x.max(axis=1, keepdims=True)
    e = nf.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    out = e / s
    nf.flush()
    assert stages_ran()
    mn = data.max(axis=1, keepdims=True)
    en = onp.exp(data - mn)
    sn = en.sum(axis=1, keepdims=True)
    same(m, mn)
    same(e, en, exact=False)
    same(s, sn, exact=False)
    same(out, en / sn, exact=False)


@pytest.mark.parametrize("rows", [0, 1, 3])
@pytest.mark.parametrize("storage", ["rolling", "recompute", "ring"])
def test_visible_intermediate_with_halo_is_copied_out(data, rows, storage):
    # bx stays visible (a script's top level): its rows live in tile buffers
    # for the consumer, and each tile also writes the rows it owns to bx --
    # every row exactly once, whatever the halo.
    # (Copy links save no traffic: such a chain forms by default only when
    # something else is saved, here forced.)
    a = nf.asarray(data)
    with nf.config(stage_rows=rows, stage_storage=storage, stage_min_bytes=0):
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
        by = (bx[:-2, :] + bx[1:-1, :] + bx[2:, :]) / 3
        nf.flush()
        assert stages_ran() == [2]
        assert "copying the rows it owns" in str(nf.explain())
    bxn = (data[:, :-2] + data[:, 1:-1] + data[:, 2:]) / 3
    same(bx, bxn)
    same(by, (bxn[:-2] + bxn[1:-1] + bxn[2:]) / 3)
    # ... and later code reads bx as written
    same(run(lambda lib, b: b[::-1] * 2, bx), bxn[::-1] * 2)


def test_copy_links_alone_do_not_make_a_chain(data):
    # By default a chain whose only link is visible saves nothing: separate
    # kernels (as fast, without the tile copies).
    a = nf.asarray(data)
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    by = (bx[:-2, :] + bx[1:-1, :] + bx[2:, :]) / 3
    nf.flush()
    assert stages_ran() == []
    bxn = (data[:, :-2] + data[:, 1:-1] + data[:, 2:]) / 3
    same(by, (bxn[:-2] + bxn[1:-1] + bxn[2:]) / 3)


def test_visible_stencil_chain_at_top_level(data):
    # The 3-stage diffusion with every intermediate kept by the caller.
    u = nf.asarray(data)
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    fx = lap[:, 1:] - lap[:, :-1]
    fy = lap[1:, :] - lap[:-1, :]
    out = u[2:-2, 2:-2] - 0.1 * (fx[1:-1, 1:] - fx[1:-1, :-1] + fy[1:, 1:-1] - fy[:-1, 1:-1])
    nf.flush()
    assert stages_ran()
    d = data
    lapn = d[:-2, 1:-1] + d[2:, 1:-1] + d[1:-1, :-2] + d[1:-1, 2:] - 4 * d[1:-1, 1:-1]
    fxn = lapn[:, 1:] - lapn[:, :-1]
    fyn = lapn[1:, :] - lapn[:-1, :]
    same(lap, lapn)
    same(fx, fxn)
    same(fy, fyn)
    same(out, d[2:-2, 2:-2] - 0.1 * (fxn[1:-1, 1:] - fxn[1:-1, :-1] + fyn[1:, 1:-1] - fyn[:-1, 1:-1]))


@pytest.mark.parametrize("rows", [0, 1, 4])
def test_intermediate_rows_no_consumer_reads_are_still_written(data, rows):
    # t has 300 rows but the consumer reads only rows 5..294: a visible t
    # still gets all of them (the first and last tiles compute the rest).
    a = nf.asarray(data)
    with nf.config(stage_rows=rows, stage_min_bytes=0):
        t = a[:, 1:] - a[:, :-1]
        u = t[5:-5] * 2
        nf.flush()
        assert stages_ran() == [2]
    tn = data[:, 1:] - data[:, :-1]
    same(t, tn)
    same(u, tn[5:-5] * 2)
    del t, u
    with nf.config(recompute=False):
        got = run(lambda lib, a: (a[:, 1:] - a[:, :-1])[5:-5] * 2, a)
        assert stages_ran() == [2]
    same(got, tn[5:-5] * 2)
    got = run(lambda lib, a: (a[:, 1:] - a[:, :-1])[5:-5] * 2, a)
    assert stages_ran() == [] and nf.explain().report["recomputed"] == 1
    same(got, tn[5:-5] * 2)


def test_jacobi_write_back(data):
    # a[1:-1, 1:-1] = stencil(a): the stencil's stages chain, the write-back
    # (which overwrites rows other tiles read) runs after them.
    g = data.copy()
    a = nf.asarray(g)
    for _ in range(3):
        lap = a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]
        sm = 0.5 * lap[:, 1:-1] + 0.125 * (lap[:, :-2] + lap[:, 2:])
        a[1:-1, 2:-2] = sm
        lapn = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]
        g[1:-1, 2:-2] = 0.5 * lapn[:, 1:-1] + 0.125 * (lapn[:, :-2] + lapn[:, 2:])
    nf.flush()
    same(a, g)


def test_in_place_consumer_of_its_own_reduction(data):
    # x -= x.max(...): the subtraction writes what the reduction read, so it
    # may not join a chain with it (tiles would read overwritten rows).
    x = nf.asarray(data.copy())
    x -= x.max(axis=1, keepdims=True)
    x /= x.sum(axis=1, keepdims=True)
    nf.flush()
    d = data.copy()
    d -= d.max(axis=1, keepdims=True)
    d /= d.sum(axis=1, keepdims=True)
    same(x, d)


def test_reduction_along_the_tiled_dimension_is_not_tiled(data):
    # A column reduction combines across rows: such a group is no stage.
    x = nf.asarray(data)
    got = run(lambda lib, x: x - x.mean(axis=0), x)
    assert stages_ran() == []
    # (a sum across rows is reassociated over the threads: README, last bits)
    onp.testing.assert_allclose(to_np(got), data - data.mean(axis=0), rtol=1e-13, atol=1e-15)
    got = run(lambda lib, x: lib.cumsum(x[:, 1:] - x[:, :-1], axis=0) * 2, x)
    assert stages_ran() == []
    same(got, onp.cumsum(data[:, 1:] - data[:, :-1], axis=0) * 2)


def scaled_blur(lib, a):
    # 2 / max|a| is a 0-d operation: the scalar prologue of the group over a.
    return blur(lib, a * (2 / abs(a).max()))


def scaled_blur_keeps_scale(lib, a):
    # The same, the scale also returned: the prologue stores it.
    t = 2 / abs(a).max()
    return blur(lib, a * t), t


def rescaled_blur(lib, a):
    # hi - lo is recorded after a - lo: a 0-d map in the middle of the group.
    lo, hi = a.min(), a.max()
    return blur(lib, (a - lo) / (hi - lo))


def rescaled_blur_keeps_range(lib, a):
    lo, hi = a.min(), a.max()
    d = hi - lo
    return blur(lib, (a - lo) / d), d


def prologue_stages():
    """The stage numbers of the last flush's stages that have a scalar prologue."""
    return [g["stage"] for g in nf.explain().groups if g.get("stages") and g.get("prologue")]


@pytest.mark.parametrize("fn, recomputed", [(scaled_blur, 2), (rescaled_blur, 3)])
def test_a_scalar_prologue_that_stores_nothing_runs_in_its_stage(data, fn, recomputed):
    # [2 / s, a * t] and [a - lo, hi - lo, divide]: their prologues compute
    # values only the group reads, so the groups are stages as they are,
    # their prologues run at each tile (a few scalar operations), and no
    # 0-d kernel runs before the chain. Three stages, or two where the first
    # group is recomputed at the row sum's three reads (a * t is; the
    # rescaling reads the results of reductions of its own window, which
    # recompute_producers leaves stored).
    a = nf.asarray(data)
    for recompute, stages in ((False, 3), (True, recomputed)):
        with nf.config(recompute=recompute):
            got = run(fn, a)
            assert stages_ran() == [stages]
            assert prologue_stages() == [1]
            groups = nf.explain().groups
            assert not any("scalar prologue of the multi-stage kernel" in g["stop_reason"] for g in groups)
            assert "computed at each tile" in str(nf.explain())
            check(fn, got, (data,))
            got = run(fn, a)  # memoized
            assert stages_ran() == [stages] and prologue_stages() == [1]
            check(fn, got, (data,))


def rescaled_blur_keeps_range_late(lib, a):
    lo, hi = a.min(), a.max()
    n = a - lo
    d = hi - lo
    return blur(lib, n / d), d


def stored_once_stages():
    """The stage numbers of the last flush's stages whose prologue stores."""
    return [g["stage"] for g in nf.explain().groups if g.get("stages") and g.get("stores_once")]


@pytest.mark.parametrize("fn, recomputed", [(scaled_blur_keeps_scale, 2), (rescaled_blur_keeps_range_late, 3)])
def test_a_scalar_prologue_that_stores_runs_in_its_stage(data, fn, recomputed):
    # t (d) is returned: the prologue [2 / s] ([hi - lo], recorded after
    # a - lo) stores it. Its group is still the chain's first stage, which
    # computes the prologue at each tile; the chain's kernel stores it once,
    # before the tiles (MdHom::once_guard): no 0-d kernel runs. Each
    # run scales the input anew, so a store that never happened would
    # leave another run's value (or none) behind.
    for recompute, stages in ((False, 3), (True, recomputed)):
        with nf.config(recompute=recompute):
            for scale in (1.0, 3.0, 0.5):
                x = data * scale
                got, t = run(fn, nf.asarray(x))
                assert stages_ran() == [stages], nf.explain()
                assert prologue_stages() == [1] and stored_once_stages() == [1], nf.explain()
                assert not [g for g in nf.explain().groups if not g.get("domain")], nf.explain()
                assert "stored once, before the tiles" in str(nf.explain())
                want, want_t = fn(onp, x)
                same(got, want)
                same(t, want_t)


def test_a_scalar_recorded_before_the_group_is_a_kernel_of_its_own(data):
    # d = hi - lo recorded before a - lo, which does not read it: a scalar
    # never joins an unrelated kernel, so d is computed first, alone, and
    # the rescaling starts the chain with no prologue.
    got, d = run(rescaled_blur_keeps_range, nf.asarray(data))
    assert stages_ran() == [3] and prologue_stages() == [], nf.explain()
    assert [g["ops"] for g in nf.explain().groups if not g.get("domain")] == [["subtract"]], nf.explain()
    want, want_d = rescaled_blur_keeps_range(onp, data)
    same(got, want)
    same(d, want_d)


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 5, 16])
@pytest.mark.parametrize("storage", ["rolling", "recompute", "ring"])
def test_a_stored_prologue_is_stored_under_every_launch(data, storage, rows):
    # Every tile size and storage, with and without column strips.
    for cols in (0, 5):
        with nf.config(stage_rows=rows, stage_storage=storage, stage_cols=cols):
            got, d = run(rescaled_blur_keeps_range_late, nf.asarray(data))
            assert stages_ran() == [3] and stored_once_stages() == [1], nf.explain()
        want, want_d = rescaled_blur_keeps_range_late(onp, data)
        same(got, want)
        same(d, want_d)


@pytest.mark.parametrize("shape", [(0, 9), (1, 9), (3, 9), (4, 5), (5, 4), (7, 3), (300, 3), (3, 0)])
def test_a_stored_prologue_of_a_small_or_empty_chain(shape):
    # Few rows (fewer than threads, rows only halos cover) or none: the
    # value is stored all the same, before the tiles (or by the groups run
    # one by one where no chain forms). Recorded whatever the size.
    rng = onp.random.default_rng(3)
    data = rng.standard_normal(shape) + 1.0
    with nf.config(stage_min_bytes=0, tier="lazy"):
        a = nf.asarray(data)
        lo, hi = (a.min(), a.max()) if data.size else (nf.asarray(0.0), nf.asarray(2.0))
        n = a - lo
        d = hi - lo
        got = blur(nf, n / d)
        nf.flush()
        if shape in ((4, 5), (5, 4), (7, 3), (300, 3)):
            assert stages_ran() == [3] and stored_once_stages() == [2], nf.explain()
    if data.size:
        lo_, hi_ = data.min(), data.max()
    else:
        lo_, hi_ = onp.float64(0.0), onp.float64(2.0)
    same(d, hi_ - lo_)
    same(n, data - lo_)
    same(got, blur(onp, (data - lo_) / (hi_ - lo_)))


def blur_times_range(lib, a):
    lo, hi = a.min(), a.max()
    n = a - lo
    d = hi - lo
    return blur(lib, n / d) * d, d


def test_a_later_stage_reads_a_stored_prologue(data):
    # The last stage reads d, which the first stage's prologue stores: the
    # store runs before the tiles, so every tile's last stage finds d in
    # memory. One kernel of three stages; NumPy's values.
    for scale in (1.0, 4.0):
        x = data * scale
        got, d = run(blur_times_range, nf.asarray(x))
        assert stages_ran() == [3] and stored_once_stages() == [1], nf.explain()
        last = [g for g in nf.explain().groups if g.get("stages") and g["stage"] == 3]
        assert "multiply" in last[0]["ops"], nf.explain()
        want, want_d = blur_times_range(onp, x)
        same(got, want)
        same(d, want_d)


def test_a_scalar_prologue_stays_in_its_group_without_a_chain(data):
    a = nf.asarray(data)
    got = run(lambda lib, a: a * (2 / abs(a).max()) + 1, a)
    assert stages_ran() == []
    groups = nf.explain().groups
    assert [g["ops"] for g in groups if g.get("prologue")] == [["divide", "multiply", "add"]]
    same(got, data * (2 / abs(data).max()) + 1)


def test_floating_point_warnings_of_a_stage(data):
    d = data.copy()
    d[5, :] = 0.0
    x = nf.asarray(d)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = run(normalize, x)
    assert stages_ran()
    assert any("invalid value" in str(m.message) for m in w), [str(m.message) for m in w]
    with onp.errstate(all="ignore"):
        same(got, normalize(onp, d))


def test_errors_in_options():
    with pytest.raises(ValueError, match="stage_storage"):
        nf.set_option("stage_storage", "spiral")
    with pytest.raises(ValueError, match="stage_rows"):
        nf.set_option("stage_rows", -1)
    assert nf.get_option("stage_storage") == "ring"
    assert nf.get_option("stages") is True


def test_random_schedules_draw_the_launch(data):
    x = nf.asarray(data)
    for seed in range(6):
        with nf.config(random_schedules=seed):
            for fn in (blur, diffusion, softmax):
                got = run(fn, x)
                assert stages_ran()
                check(fn, got, [data])


# Random stencil chains: each stage reads the previous results through random
# shifts of rows and columns; the last result is compared with NumPy's.
@st.composite
def chains(draw):
    depth = draw(st.integers(2, 4))
    steps = []
    for _ in range(depth):
        shifts = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=3))
        op = draw(st.sampled_from(["add", "mul", "sub", "max", "where"]))
        steps.append((shifts, op))
    rows = draw(st.sampled_from([0, 1, 2, 7]))
    storage = draw(st.sampled_from(["rolling", "recompute", "ring"]))
    cols = draw(st.sampled_from([0, 1, 5, 64]))
    return steps, rows, storage, cols


def apply_chain(lib, a, steps):
    cur = a
    for shifts, op in steps:
        n0, n1 = cur.shape
        views = [cur[i:n0 - 2 + i, j:n1 - 2 + j] for i, j in shifts]
        acc = views[0] * 0.5
        for v in views[1:]:
            if op == "add":
                acc = acc + v
            elif op == "mul":
                acc = acc * v
            elif op == "sub":
                acc = acc - v
            elif op == "max":
                acc = lib.maximum(acc, v)
            else:
                acc = lib.where(acc > v, acc, v - 1.0)
        cur = acc + 1.0
    return cur


@settings(max_examples=25, deadline=None)
@given(chains())
def test_random_stencil_chains(case):
    steps, rows, storage, cols = case
    a = onp.random.default_rng(len(steps)).standard_normal((260, 290))
    with nf.config(stage_rows=rows, stage_storage=storage, stage_cols=cols):
        got = run(lambda lib, a: apply_chain(lib, a, steps), nf.asarray(a))
    same(got, apply_chain(onp, a, steps))


# The same with scalars: a step may divide by t = (hi - lo) * (k + 1), a 0-d
# operation on the input's range recorded before the step's first operation
# or after it (its group's scalar prologue either way), dropped after the
# step or kept (returned: a prologue that stores); the last result may also
# be multiplied by the first kept scalar (a later stage reading it).
@st.composite
def scalar_chains(draw):
    steps, rows, storage, cols = draw(chains())
    modes = [draw(st.sampled_from([None, "dropped", "kept", "kept_late"])) for _ in steps]
    return steps, modes, draw(st.booleans()), rows, storage, cols


def apply_scalar_chain(lib, a, steps, modes, reuse):
    lo, hi = a.min(), a.max()
    kept = []
    cur = a
    for k, ((shifts, op), mode) in enumerate(zip(steps, modes)):
        n0, n1 = cur.shape
        views = [cur[i:n0 - 2 + i, j:n1 - 2 + j] for i, j in shifts]
        if mode in ("dropped", "kept"):
            t = (hi - lo) * (k + 1)
        acc = views[0] * 0.5
        if mode == "kept_late":
            t = (hi - lo) * (k + 1)
        for v in views[1:]:
            acc = {"add": lambda: acc + v, "mul": lambda: acc * v, "sub": lambda: acc - v,
                   "max": lambda: lib.maximum(acc, v), "where": lambda: lib.where(acc > v, acc, v - 1.0)}[op]()
        if mode:
            acc = acc / t
            if mode != "dropped":
                kept.append(t)
        cur = acc + 1.0
    if reuse and kept:
        cur = cur * kept[0]
    return cur, kept


@settings(max_examples=25, deadline=None)
@given(scalar_chains())
def test_random_stencil_chains_with_scalars(case):
    steps, modes, reuse, rows, storage, cols = case
    a = onp.random.default_rng(len(steps)).standard_normal((260, 290))
    with nf.config(stage_rows=rows, stage_storage=storage, stage_cols=cols):
        got, kept = run(lambda lib, a: apply_scalar_chain(lib, a, steps, modes, reuse), nf.asarray(a))
    want, want_kept = apply_scalar_chain(onp, a, steps, modes, reuse)
    same(got, want)
    assert len(kept) == len(want_kept)
    for g, w in zip(kept, want_kept):
        same(g, w)


def test_chain_refused_by_the_views_runs_parallel_kernels(data, tmp_path):
    # The consumer reads every second row of the intermediate: its rows step
    # by two of the producer's, so the launch refuses the chain (halo
    # inference is over row shifts) and the plan prepares the groups again
    # as parallel kernels of their own (their default schedules: an empty
    # schedule store, not one where another test's tuning left a serial one).
    def fn(lib, a):
        t = a[:, 1:] - a[:, :-1]
        return t[::2] * 2 + t[1::2]

    with nf.config(cache_dir=str(tmp_path), recompute=False):
        got = run(fn, nf.asarray(data))
    assert stages_ran() == []
    assert all("[cores]" in g["schedule"] for g in nf.explain().groups), str(nf.explain())
    same(got, fn(onp, data))


def test_transposed_consumer_tiles_its_own_outer_axis(data):
    # The consumer's outer loop runs over the intermediate's rows (its
    # output is written transposed): tiles of those rows chain.
    def fn(lib, a):
        t = a[:, 1:] - a[:, :-1]
        return t.T[1:] * 2 + t.T[:-1]

    for rows in (0, 3):
        with nf.config(stage_rows=rows, recompute=False):
            got = run(fn, nf.asarray(data))
            assert stages_ran() == [2]
        same(got, fn(onp, data))


# Fuzz programs (tests/fuzz) with every chain a multi-stage kernel, however
# small its intermediates: seed 43986 once copied out the rows of an
# in-place producer (`v4 /= s5`) that a shifted reader's other tiles then
# recomputed from (fusion.h, Copy).
FUZZ_SEEDS = [43986] + list(range(60000, 60300))


def test_fuzz_programs_with_every_chain_a_kernel():
    from fuzz import programs, runner

    failing = []
    nf.set_option("stage_min_bytes", 0)
    try:
        for seed in FUZZ_SEEDS:
            chk = runner.check_program(programs.generate(seed))
            if not chk.ok:
                failing.append(f"seed {seed}:\n{chk.report()}")
    finally:
        nf.set_option("stage_min_bytes", 256 << 10)
    assert not failing, "\n\n".join(failing[:3])


def test_reduction_over_an_empty_axis_in_a_chain():
    # A stage reducing over zero columns still writes its identity for every
    # row (the kernel once skipped stages with no columns: the mean came out
    # as whatever the scratch held divided by 0).
    d = onp.zeros((1, 5, 0))
    with nf.config(stage_min_bytes=0, tier="lazy"), onp.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = nf.asarray(d).mean(axis=2)
        nf.flush()
        assert stages_ran() == [2]
        want = d.mean(axis=2)
    same(got, want)


def test_a_refused_launch_runs_the_stages_alone(data):
    # A multi-stage plan compiles only its composed kernel; a stage gets a
    # kernel of its own only when it runs alone -- here a memoized launch
    # is refused (as when the bound views do not fit the chain), so its
    # stages' kernels are compiled then, and the results are NumPy's.
    x = nf.asarray(data)
    with nf.config(stage_min_bytes=0):
        for refuse in (0, 1, 0):
            nf._core._refuse_chain_launches(refuse)
            y = data * (2 + refuse)
            got = run(blur, nf.asarray(y))
            assert (stages_ran() == []) == bool(refuse), nf.explain()
            # (kernels of their own, not tier 0's loops)
            assert not any(g["tier0"] for g in nf.explain().groups), nf.explain()
            check(blur, got, [y])
    nf._core._refuse_chain_launches(0)
    del x


def hdiff_planes(lib, inp, coeff):
    # The horizontal diffusion over the last two axes of k-planes (the
    # benchmark's 3-d form): stages are 3-d, strips run along the rows of
    # each plane.
    lap = 4 * inp[:, 1:-1, 1:-1] - (inp[:, 1:-1, 2:] + inp[:, 1:-1, :-2] + inp[:, 2:, 1:-1] + inp[:, :-2, 1:-1])
    flx = lap[:, :, 1:] - lap[:, :, :-1]
    flx = lib.where(flx * (inp[:, 1:-1, 2:-1] - inp[:, 1:-1, 1:-2]) > 0, 0, flx)
    fly = lap[:, 1:, :] - lap[:, :-1, :]
    fly = lib.where(fly * (inp[:, 2:-1, 1:-1] - inp[:, 1:-2, 1:-1]) > 0, 0, fly)
    return inp[:, 2:-2, 2:-2] - coeff[:, 2:-2, 2:-2] * (flx[:, 1:-1, 1:] - flx[:, 1:-1, :-1] +
                                                      fly[:, 1:, 1:-1] - fly[:, :-1, 1:-1])


@pytest.mark.parametrize("cols", [0, 1, 3, 8])
@pytest.mark.parametrize("storage", ["recompute", "ring", "rolling"])
def test_plane_stencils_run_in_strips_of_rows(storage, cols):
    rng = onp.random.default_rng(5)
    inp, coeff = rng.random((6, 40, 37)), 0.025 * (1 + rng.random((6, 40, 37)))
    with nf.config(stage_storage=storage, stage_cols=cols, stage_min_bytes=0):
        got = run(hdiff_planes, nf.asarray(inp), nf.asarray(coeff))
        assert stages_ran()
        text = nf.explain().groups[0]["chain"]
        if cols:
            assert f"in strips of {cols} of its 36 columns" in text, text
    same(got, hdiff_planes(onp, inp, coeff))


def test_a_tuned_launch_choice_is_stored_for_later_processes(tmp_path):
    # The first process tunes the diffusion chain's launch on its first 20
    # runs and stores the choice in the schedule store (in its cache
    # directory); a second process with that directory starts with it.
    program = textwrap.dedent("""
        import itertools, sys, time, numpy as onp, numfuse as nf
        u = onp.random.default_rng(0).random((300, 300))
        def diffusion(u, alpha=0.1):
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
            fx = lap[:, 1:] - lap[:, :-1]
            fy = lap[1:, :] - lap[:-1, :]
            return u[2:-2, 2:-2] - alpha * (fx[1:-1, 1:] - fx[1:-1, :-1] + fy[1:, 1:-1] - fy[:-1, 1:-1])
        with nf.config(tune=0.05):
            # (Until tuned, at most argv[1] s: the stages' own tuning, in
            # the background, comes first.)
            deadline = time.monotonic() + float(sys.argv[1])
            for k in itertools.count():
                y = onp.asarray(diffusion(nf.asarray(u * (1 + k))))
                assert onp.allclose(y, diffusion(u * (1 + k)), rtol=1e-13)
                text = nf.explain().groups[0]["chain"]
                if ("tuned" in text and "being tuned" not in text) or time.monotonic() > deadline:
                    break
            print(text.splitlines()[-1])
            # A plan rebuilt in the same process (the memo is cleared whenever
            # a group's schedule is tuned) finds the choice again in the
            # store; who tuned it is still told right.
            nf._core.clear_memo()
            y = onp.asarray(diffusion(nf.asarray(u)))
            print(nf.explain().groups[0]["chain"].splitlines()[-1])
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="lazy", NUMFUSE_STAGE_MIN_BYTES="0")
    first = subprocess.run([sys.executable, "-c", program, "300"], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    lines = first.stdout.splitlines()
    assert len(lines) == 2 and all("launch tuned on its first 20 runs: " in t for t in lines), first.stdout
    assert "launch=" in (tmp_path / "schedules.txt").read_text()
    second = subprocess.run([sys.executable, "-c", program, "0"], env=env, capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    again = second.stdout.splitlines()
    assert len(again) == 2 and all("launch tuned by an earlier run (from the schedule store): " in t
                                   for t in again), second.stdout
    # The same choice.
    assert len({t.split(": ", 1)[1] for t in lines + again}) == 1, lines + again


@pytest.mark.parametrize("fn", [blur, diffusion, softmax], ids=lambda f: f.__name__)
def test_a_multi_stage_kernel_counts_as_one_kernel_run(fn, data):
    # profile()'s kernels_run and explain()'s kernel count are launches: a
    # multi-stage kernel once, however many stages (groups) it has.
    x = nf.asarray(data)
    with nf.config(stages=False):
        run(fn, x)
        with nf.profile() as off:
            run(fn, x)
        separate = len([g for g in nf.explain().groups if not g["tier0"] and not g["routine"]])
    run(fn, x)
    with nf.profile() as on:
        run(fn, x)
    e = nf.explain()
    stages = stages_ran()
    assert len(stages) == 1 and stages[0] >= 2, stages
    assert off["kernels_run"] == separate >= stages[0], (off, separate)
    # (groups outside the chain -- none for these -- would each count once)
    outside = len([g for g in e.groups if not g["stages"] and not g["tier0"]])
    assert on["kernels_run"] == 1 + outside, on
    assert e.kernels() == 1 + outside
    assert f"-> {e.kernels()} kernels" in str(e) and f"&rarr; {e.kernels()} kernels" in e._repr_html_()

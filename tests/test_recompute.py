"""Recompute instead of store (fusion.h, recompute_producers): a cheap map
whose result only later operations read, some through shifted slices (a
stencil's fluxes), is evaluated again where each reader reads it, and its
result is never stored.

Every case is compared with NumPy exactly (the recomputed expression is the
same operations on the same values), and with numfuse's own result with
recomputation off. The report's `recomputed` count must say the rewrite
happened where it should (a silent return to storing the intermediate
fails) and did not where it must not: a costly producer, a broadcast read,
a read that wraps around rows, inputs overwritten before the reader runs.
"""

import os
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import numfuse as nf

from conftest import assert_same, to_np, sum_rtol

RNG = onp.random.default_rng(7)
U = RNG.standard_normal((37, 41))


def run(fn, *args, **cfg):
    """fn(nf, ...) flushed; its result and the flush's report."""
    with nf.config(tier="lazy", **cfg):
        got = fn(nf, *[nf.asarray(a) if isinstance(a, onp.ndarray) else a for a in args])
        nf.flush()
        report = nf.explain().report
    return got, report


def check(fn, *args, recomputed=None, rtol=0, **cfg):
    """fn against NumPy (exactly: rtol only where a transcendental's last
    bit may differ from NumPy's), with recomputation as configured and off."""
    expected = fn(onp, *args)
    got, rep = run(fn, *args, **cfg)
    if recomputed is not None:
        assert rep["recomputed"] == recomputed, str(nf.explain())
    assert_same(got, expected, rtol=rtol)
    off, rep_off = run(fn, *args, **{**cfg, "recompute": False})
    assert rep_off["recomputed"] == 0
    assert_same(off, expected, rtol=rtol)
    if rtol == 0:
        assert onp.array_equal(to_np(off), to_np(got), equal_nan=True)
    return rep


def diffusion(lib, u, alpha=0.1):
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    flux_x = lap[:, 1:] - lap[:, :-1]
    flux_y = lap[1:, :] - lap[:-1, :]
    return u[2:-2, 2:-2] - alpha * (flux_x[1:-1, 1:] - flux_x[1:-1, :-1] + flux_y[1:, 1:-1] - flux_y[:-1, 1:-1])


def stages_ran():
    return [g["stages"] for g in nf.explain().groups if g["stage"] == 1]


@pytest.mark.cpu_only
def test_diffusion_fluxes_are_recomputed_at_the_update():
    # Each flux is one subtraction read at two offsets: recomputed (one
    # more subtraction per point) rather than stored and loaded. The
    # Laplacian (five reads, five operations, read at five offsets: 20 more
    # a point) stays stored: the chain has two stages, not four.
    rep = check(diffusion, U, recomputed=2, stage_min_bytes=0)
    got, _ = run(diffusion, U, stage_min_bytes=0)
    assert stages_ran() == [2], str(nf.explain())
    assert "2 intermediates (read through shifted slices, or after a matrix product) recomputed" in str(nf.explain())
    _, _ = run(diffusion, U, stage_min_bytes=0, recompute=False)
    assert stages_ran() == [4]
    # memoized: the same rewrite, the same plan
    with nf.config(tier="lazy", stage_min_bytes=0):
        u = nf.asarray(U)
        for k in range(2):
            got = diffusion(nf, u)
            nf.flush()
            rep = nf.explain().report
            assert rep["memo_hit"] == (k == 1) and rep["recomputed"] == 2 and stages_ran() == [2]
            assert_same(got, diffusion(onp, U), rtol=0)


def diff1(lib, a):
    b = a * 2 + 1
    return b[1:] - b[:-1]


def diff2(lib, a):
    b = a - 0.5
    return b[1:, 1:] * b[:-1, :-1]


def reversed_read(lib, a):
    b = a * 3
    return b[::-1, :] + b[:, ::-1]


def strided(lib, a):
    b = abs(a)
    return b[:-1:2, 1::3] - b[1::2, ::3]


def transposed(lib, a):
    b = a - 1
    return b.T[1:, :] + b.T[:-1, :]


def reduce_reader(lib, a):
    b = a * a
    return (b[1:] * 0.5 + b[:-1]).sum(axis=0)


def where_producer(lib, a):
    b = lib.where(a > 0, a, 0.0)
    return b[:, 2:] + b[:, :-2]


def index_producer(lib, a):
    b = lib.arange(a.shape[1]) * 0.25
    c = b[1:] - b[:-1]
    return a[:, 1:] * c


def cast_producer(lib, a):
    b = (a * 100).astype(lib.int32)
    return b[1:] - b[:-1]


def cone(lib, a):
    # (a > 0) and the subtraction are the product's cone: read only by it,
    # through the views that wrote them; all three are recomputed at once.
    d = a[:, 1:] - a[:, :-1]
    e = d * (a[:, 1:] > 0)
    return e[1:] + e[:-1]


def three_d(lib, a):
    a3 = a[:36].reshape(6, 6, 41)
    b = a3 + 1
    return b[1:, :-1, 2:] - b[:-1, 1:, :-2]


def single_shifted_read(lib, a):
    # One view, however costly the producer: nothing is evaluated twice.
    b = lib.exp(a) / 3
    return b[2:, 1:] * 2


# (The count is of recomputed operations: `a * 2 + 1` is two.)
@pytest.mark.parametrize("fn,n", [(diff1, 2), (diff2, 1), (reversed_read, 1), (strided, 1), (transposed, 1),
                                  (reduce_reader, 1), (where_producer, 2), (cast_producer, 2), (three_d, 1),
                                  (single_shifted_read, 2)],
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_shifted_reads_are_recomputed(fn, n):
    check(fn, U, recomputed=n, rtol=1e-12 if fn is single_shifted_read else sum_rtol() if fn is reduce_reader else 0)


def test_a_cone_goes_whole_or_not_at_all():
    # subtract, greater, multiply (and the bool's cast): 4 additions a point
    # more -- all three recomputed, none of their results stored; with a
    # budget of 3, all stored.
    check(cone, U, recomputed=3)
    check(cone, U, recomputed=0, recompute=3)


def test_index_producer_moves_its_index_function():
    # arange's values at the shifted points: the index function's offset
    # moves. (arange's start + i * step and the scaling cost more than the
    # default budget: a larger one.)
    check(index_producer, U, recomputed=2, recompute=16)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int16", "complex128", "bool"])
def test_dtypes(dtype):
    a = (U * 50).astype(dtype) if dtype != "bool" else U > 0

    def fn(lib, a):
        b = a + a if dtype != "bool" else a ^ True
        return b[1:, :-1] == b[:-1, 1:] if dtype == "bool" else b[1:, :-1] - b[:-1, 1:]

    check(fn, a, recomputed=1)


def costly(lib, a):
    b = lib.exp(a)  # a transcendental at two offsets: stored
    return b[1:] - b[:-1]


def hdiff_flux(lib, a):
    # hdiff's limited flux: five operations read at two offsets, 5 more a
    # point -- recomputed by default, stored with a budget of 4
    lap = 4 * a[1:-1, 1:-1] - (a[1:-1, 2:] + a[1:-1, :-2] + a[2:, 1:-1] + a[:-2, 1:-1])
    flx = lap[:, 1:] - lap[:, :-1]
    flx = lib.where(flx * (a[1:-1, 2:-1] - a[1:-1, 1:-2]) > 0, 0, flx)
    return a[2:-2, 2:-2] - 0.1 * (flx[1:-1, 1:] - flx[1:-1, :-1])


def blur_rows(lib, a):
    # a row sum read at three offsets: two more sums and divisions a point
    # cost more than the store it saves -- kept
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    return (bx[:-2] + bx[1:-1] + bx[2:]) / 3


def broadcast_read(lib, a):
    b = a[0] * 2  # read along a new axis twice: each value would be computed 41 times
    return b[:, None] + b[None, :]


def wraps_rows(lib, a):
    # ravel()[3:...]: a flat read of a 2-d intermediate that crosses rows --
    # not a shift of its points
    b = a[:4, :5] * 2
    return b.ravel()[3:13] + b.ravel()[4:14]


@pytest.mark.parametrize("fn", [costly, blur_rows, broadcast_read, wraps_rows], ids=lambda f: f.__name__)
def test_not_recomputed(fn):
    check(fn, U, recomputed=0, rtol=1e-12 if fn is costly else 0)


def test_limited_flux_within_the_budget():
    rep = check(hdiff_flux, U, stage_min_bytes=0)
    assert rep["recomputed"] >= 5, str(nf.explain())
    check(hdiff_flux, U, recomputed=0, recompute=4)


def test_visible_intermediate_is_stored():
    a = nf.asarray(U)
    with nf.config(tier="lazy"):
        b = a * 2
        c = b[1:] - b[:-1]
        nf.flush()
        assert nf.explain().report["recomputed"] == 0
    assert_same(c, (U * 2)[1:] - (U * 2)[:-1], rtol=0)
    assert_same(b, U * 2, rtol=0)


def test_inputs_written_before_the_reader_runs():
    # The producer's input changes between it and its reader: recomputing
    # there would read the new values.
    def fn(lib, a):
        a = a.copy()
        b = a * 2
        a[...] = 7
        return b[1:] - b[:-1] + a[1:]

    check(fn, U, recomputed=0)


def test_reader_writing_the_producers_input():
    # add(b[:-1], b[1:], out=u[1:]) with b = u * 2: recomputed, the add
    # would read u[:-1] while writing u[1:] -- overlapping views of one task.
    def fn(lib, u):
        u = u.copy()
        b = u * 2
        lib.add(b[:-1], b[1:], out=u[1:])
        return u

    check(fn, U, recomputed=0)

    # Through the very view it writes, element by element: legal.
    def same_view(lib, u):
        u = u.copy()
        b = u * 2
        lib.multiply(b[:-1], 3, out=u[:-1])
        return u

    check(same_view, U, recomputed=1)

    # A later reader of b after u changed: stored.
    def later(lib, u):
        u = u.copy()
        b = u * 2
        lib.multiply(b[:-1], 3, out=u[:-1])
        return u + b[1:].sum()

    check(later, U, recomputed=0, rtol=sum_rtol())  # (a full sum: a GPU's blocks reassociate it)

    # The sum is a temporary that u[1:] = ... copies afterwards: legal.
    def assigned(lib, u):
        u = u.copy()
        b = u * 2
        u[1:] = b[:-1] + b[1:]
        return u

    check(assigned, U, recomputed=1)


A64 = RNG.standard_normal((40, 16))
C40 = RNG.standard_normal((40, 40))
B16 = RNG.standard_normal((16, 40))


def syrk_rows(lib, A, C0):
    C = C0.copy()
    for i in range(A.shape[0]):
        C[i, :i + 1] = 1.2 * C[i, :i + 1] + 1.5 * (A[:i + 1] @ A[i])
    return C


def test_a_map_before_a_matrix_product_is_computed_by_its_reader():
    # beta * C[i, :i + 1] is recorded before the product it is added to;
    # the product runs on its own, so stored it would be a kernel of its
    # own per row. Substituted, each row is two: the product and the
    # update that computes beta * C itself.
    rep = check(syrk_rows, A64, C40, recomputed=40, rtol=1e-12)
    ops = [[o for o in g["ops"] if not o.endswith("(dead)")] for g in rep["groups"]]
    assert sum(o == ["matmul"] for o in ops) == 40, str(nf.explain())
    # (beside the copy of C0) every multiply is in a row's update
    updates = [o for o in ops if "multiply" in o]
    assert len(updates) == 40 and all("__setitem__" in o and "add" in o for o in updates), str(nf.explain())

    def gemm_epilogue(lib, A, B, C):
        return 0.5 * C + 2.0 * (A @ B)

    check(gemm_epilogue, A64, B16, C40, recomputed=1, rtol=1e-12)

    # A chain of maps read only after the product: both move.
    def two_maps(lib, A, B, C):
        t = 2.0 * C
        u = t + 1.0
        return u * (A @ B) + t

    check(two_maps, A64, B16, C40, recomputed=2, rtol=1e-12)


def test_a_map_before_a_matrix_product_stays_stored_where_it_must():
    # The product overwrites what the map read: computed after it, the map
    # would read the new values.
    def overwritten(lib, A, B, C):
        C = C.copy()
        t = 2.0 * C
        lib.matmul(A, B, out=C)
        return t + C

    check(overwritten, A64, B16, C40, recomputed=0, rtol=1e-12)

    # Read before the product too: it is computed there, once.
    def read_before(lib, A, B, C):
        t = 2.0 * C
        u = t + 1.0
        return u, t * (A @ B)

    check(read_before, A64, B16, C40, recomputed=0, rtol=1e-12)

    # Seen by Python: stored, and the same values.
    def visible(lib, A, B, C):
        t = 2.0 * C
        return t, t + A @ B

    check(visible, A64, B16, C40, recomputed=0, rtol=1e-12)


def test_jacobi_write_back_through_a_recomputed_flux():
    def fn(lib, a):
        a = a.copy()
        for _ in range(3):
            f = a[:, 1:] - a[:, :-1]
            a[1:-1, 1:-1] = a[1:-1, 1:-1] + 0.2 * (f[1:-1, 1:] - f[1:-1, :-1])
        return a

    check(fn, U, recomputed=3)


def test_random_stencil_programs():
    # Chains of cheap and costly maps over shifted slices of intermediates,
    # in random dtypes and shapes, against NumPy exactly; across them the
    # rewrite must fire (and must not change a bit).
    rng = onp.random.default_rng(2026)
    ops = [lambda lib, x, y: x + y, lambda lib, x, y: x - y, lambda lib, x, y: x * y,
           lambda lib, x, y: lib.maximum(x, y), lambda lib, x, y: lib.where(x > y, x, y),
           lambda lib, x, y: x / (abs(y) + 1), lambda lib, x, y: lib.sqrt(abs(x)) + y]
    fired = 0
    for case in range(40):
        shape = (int(rng.integers(6, 30)), int(rng.integers(6, 30)))
        dtype = ["float64", "float32"][case % 2]
        base = rng.standard_normal(shape).astype(dtype)
        plan = []
        for _ in range(int(rng.integers(2, 6))):
            plan.append((int(rng.integers(len(ops))), int(rng.integers(0, 3)), int(rng.integers(0, 3)),
                         int(rng.integers(0, 2)), int(rng.integers(0, 2))))

        def prog(lib, a, plan=plan):
            vals = [a]
            for op, dr, dc, src1, src2 in plan:
                x = vals[-1 - src1 % len(vals)]
                y = vals[-1 - src2 % len(vals)]
                r = min(x.shape[0], y.shape[0]) - dr
                c = min(x.shape[1], y.shape[1]) - dc
                vals.append(ops[op](lib, x[dr:dr + r, dc:dc + c], y[:r, :c]))
            return vals[-1]

        expected = prog(onp, base)
        got, rep = run(prog, base, stage_min_bytes=0)
        fired += rep["recomputed"]
        assert_same(got, expected, rtol=0)
        off, _ = run(prog, base, recompute=False, stage_min_bytes=0)
        assert onp.array_equal(to_np(off), to_np(got), equal_nan=True)
    assert fired >= 10


def test_option():
    assert nf.get_option("recompute") == nf._core.RECOMPUTE_BUDGET == 8
    with nf.config(recompute=8):
        assert nf.get_option("recompute") == 8
        # the blur's row sums (cost 2 sums + a division = 6, 2 more reads: 12)
        # are recomputed only past that
        _, rep = run(blur_rows, U)
        assert rep["recomputed"] == 0
    with nf.config(recompute=12):
        _, rep = run(blur_rows, U)
        assert rep["recomputed"] == 3  # the two additions and the division
    with nf.config(recompute=False):
        assert nf.get_option("recompute") is False
    with pytest.raises(ValueError, match="recompute"):
        nf.set_option("recompute", -2)


# Recompute or store, measured (pipeline/tuning.h, RecomputeChoice): with
# tuning on, a window where the model recomputes runs both ways in turn on
# its live runs until each way has 3 runs that compiled nothing, then keeps
# the faster; random schedules draw the way.

def tuned_runs(fn, u, n, **cfg):
    """fn on n scaled copies of u with tuning on: per run (result, input,
    report, explain text of the first kernel's launch)."""
    out = []
    # (One configuration throughout: a change of configuration forgets the
    # memoized plans.)
    with nf.config(tune=0.05, tier="lazy", stage_min_bytes=0, **cfg):
        for k in range(n):
            y = u * (1 + k / 8)
            got = fn(nf, nf.asarray(y))
            nf.flush()
            out.append((to_np(got), y, nf.explain().report, nf.explain().groups[0].get("chain") or ""))
        nf.wait_background()
    return out


@pytest.mark.cpu_only
def test_tuning_measures_recompute_or_store_on_live_runs(tmp_path):
    runs = tuned_runs(diffusion, U, 30, cache_dir=str(tmp_path))
    for got, y, rep, _ in runs:  # both ways compute NumPy's values
        assert_same(got, diffusion(onp, y), rtol=0)
    texts = [rep["recompute_choice"] for _, _, rep, _ in runs]
    measuring = [k for k, t in enumerate(texts) if "being tuned" in t]
    # It starts measuring on the first run, recomputed and stored in turn
    # (the report's count says which way really ran) ...
    assert measuring and measuring == list(range(len(measuring))), texts
    assert [runs[k][2]["recomputed"] > 0 for k in measuring] == [k % 2 == 0 for k in measuring], texts
    assert all(("this one recomputed" in texts[k]) == (k % 2 == 0) for k in measuring), texts
    # ... at least 3 runs each that compiled nothing ...
    decided = len(measuring)
    assert decided >= 7, texts
    # ... then keeps one way, and says which, with the ratio it measured.
    chosen = texts[decided:]
    assert chosen and all("tuned on its first 6 measured runs: " in t for t in chosen), texts
    ways = {t.split(": ", 1)[1].split(" (")[0] for t in chosen[1:]}
    assert len(ways) == 1 and ways <= {"recomputed", "stored"}, texts
    way = ways.pop()
    assert all((rep["recomputed"] > 0) == (way == "recomputed") for _, _, rep, _ in runs[decided + 1:])
    # The multi-stage kernels' launches were not tuned while it measured.
    assert all("launch being tuned" not in runs[k][3] and "launch tuned" not in runs[k][3] for k in measuring)
    assert any("launch being tuned" in c or "launch choices wait" in c for _, _, _, c in runs[decided + 1:]), \
        [c for *_, c in runs]
    assert "  recompute or store tuned on its first 6 measured runs: " in str(nf.explain())


def test_nothing_to_choose_where_nothing_is_recomputed(tmp_path):
    # The model recomputes nothing (a row sum is too costly): no choice is
    # measured, and the launch is tuned from the first run.
    runs = tuned_runs(blur_rows, U, 3, cache_dir=str(tmp_path))
    for got, y, rep, _ in runs:
        assert_same(got, blur_rows(onp, y), rtol=0)
        assert rep["recomputed"] == 0 and rep["recompute_choice"] == ""


def test_the_recompute_choice_is_stored_for_later_processes(tmp_path):
    # The first process measures both ways and stores its choice in the
    # schedule store of its cache directory; a second process with that
    # directory runs the chosen way from its first run, without measuring.
    program = textwrap.dedent(f"""
        import sys, numpy as onp, numfuse as nf
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from test_recompute import diffusion
        u = onp.random.default_rng(0).random((90, 120))
        with nf.config(tune=0.05):
            for k in range(int(sys.argv[1])):
                y = onp.asarray(diffusion(nf, nf.asarray(u * (1 + k))))
                assert onp.array_equal(y, diffusion(onp, u * (1 + k)))
                text = nf.explain().report["recompute_choice"]
                if "being tuned" not in text:
                    break
            print(text, nf.explain().report["recomputed"] > 0, sep="|")
    """)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="lazy", NUMFUSE_STAGE_MIN_BYTES="0")
    first = subprocess.run([sys.executable, "-c", program, "40"], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    text, _ = first.stdout.strip().split("|")
    assert "tuned on its first 6 measured runs: " in text, first.stdout
    way = text.split("measured runs: ")[1].split(" (")[0]
    second = subprocess.run([sys.executable, "-c", program, "1"], env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    text2, recomputed = second.stdout.strip().split("|")
    assert text2 == "recompute or store tuned by an earlier run (from the schedule store): " + way, second.stdout
    assert (recomputed == "True") == (way == "recomputed")


def test_random_schedules_draw_recompute_or_store():
    # Each seed draws the way per window: both are drawn, and every draw
    # computes NumPy's values.
    counts = set()
    for seed in range(12):
        got, rep = run(diffusion, U, random_schedules=seed, stage_min_bytes=0)
        assert_same(got, diffusion(onp, U), rtol=0)
        counts.add(rep["recomputed"])
        assert rep["recompute_choice"] == ""  # (drawn, not tuned)
    assert counts == {0, 2}, counts


def test_a_seed_draws_the_same_ways_in_every_process():
    # (The draw hashes the window with its operations' names spelled out, not
    # their addresses: a random-schedule failure reproduces in a new process.)
    program = textwrap.dedent(f"""
        import sys, numpy as onp, numfuse as nf
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from test_recompute import diffusion
        u = nf.asarray(onp.random.default_rng(0).random((40, 50)))
        ways = []
        for seed in range(16):
            with nf.config(random_schedules=seed, tier="lazy", stage_min_bytes=0):
                y = diffusion(nf, u)
                nf.flush()
                ways.append(nf.explain().report["recomputed"])
        print(ways)
    """)
    outs = [subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600)
            for _ in range(2)]
    assert all(o.returncode == 0 for o in outs), outs[0].stderr[-3000:]
    assert outs[0].stdout == outs[1].stdout and "0" in outs[0].stdout and "2" in outs[0].stdout, outs

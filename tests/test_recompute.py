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

import numpy as onp
import pytest

import numfuse as nf

from conftest import assert_same, to_np

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


def test_diffusion_fluxes_are_recomputed_at_the_update():
    # Each flux is one subtraction read at two offsets: recomputed (one
    # more subtraction per point) rather than stored and loaded. The
    # Laplacian (five reads, five operations, read at five offsets: 20 more
    # a point) stays stored: the chain has two stages, not four.
    rep = check(diffusion, U, recomputed=2, stage_min_bytes=0)
    got, _ = run(diffusion, U, stage_min_bytes=0)
    assert stages_ran() == [2], str(nf.explain())
    assert "2 intermediates read through shifted slices recomputed" in str(nf.explain())
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
    check(fn, U, recomputed=n, rtol=1e-12 if fn is single_shifted_read else 0)


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

    check(later, U, recomputed=0)

    # The sum is a temporary that u[1:] = ... copies afterwards: legal.
    def assigned(lib, u):
        u = u.copy()
        b = u * 2
        u[1:] = b[:-1] + b[1:]
        return u

    check(assigned, U, recomputed=1)


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

"""Scalar prologues (fusion.h; mdh.h, MdHom::prologue): 0-d operations --
CG's alpha = rr / (p @ Ap) and beta = rr' / rr, a norm, a scale factor --
run inside the kernel that consumes them, once before its loop, instead of
as kernels of their own.

Each case is checked against NumPy, and against numfuse's unfused kernels;
explain() must show that no 0-d kernel ran on its own where the value
feeds a larger one (a silent return to separate kernels fails), and the
cases that must not fuse (a later operation writes what the prologue read,
or reads what it wrote through an overlapping view) must give NumPy's
values.
"""

import numpy as onp
import pytest

import numfuse as nf

from conftest import assert_same


def groups():
    return nf.explain().groups


def scalar_kernels(gs):
    """Kernels over a single value (a 0-d operation run on its own)."""
    return [g for g in gs if not g["routine"] and g.get("domain") == []]


def prologue_kernels(gs):
    return [g for g in gs if g.get("prologue")]


def cg(lib, A, b, iters):
    x = lib.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rr = r @ r
    alpha = beta = None
    for _ in range(iters):
        Ap = A @ p
        alpha = rr / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rr_new = r @ r
        beta = rr_new / rr
        p = r + beta * p
        rr = rr_new
    return x, r, p, alpha, beta


@pytest.mark.parametrize("n", [1, 7, 300])
def test_cg_scalars_run_in_their_consumers(lazy, n):
    rng = onp.random.default_rng(n)
    M = rng.random((n, n))
    A = M @ M.T + n * onp.eye(n)
    b = rng.random(n)
    expected = cg(onp, A, b, 4)
    got = cg(nf, nf.asarray(A), nf.asarray(b), 4)
    nf.flush()
    gs = groups()
    for g_, e in zip(got, expected):  # (BLAS's dot products round differently)
        assert_same(g_, e, rtol=1e-8, atol=1e-10)
    # alpha and beta: no kernel of their own; each is the prologue of the
    # update that reads it (x, r and p).
    # (With n = 1 every operation is 0-d: one kernel per run of them.)
    assert not [g for g in scalar_kernels(gs) if g["ops"] == ["divide"]], nf.explain()
    if n == 1:
        return
    pro = prologue_kernels(gs)
    assert len(pro) == 2 * 4, nf.explain()
    assert all(g["ops"][0] == "divide" for g in pro)
    assert "0-d operations (scalars) computed once before the pass" in str(nf.explain())
    assert "are computed once, before every point" in pro[0]["mdh"]
    with nf.config(fusion=False):
        unfused = cg(nf, nf.asarray(A), nf.asarray(b), 4)
        for g_, e in zip(unfused, got):
            assert_same(g_, onp.asarray(e), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint16", "complex128", "bool"])
def test_prologue_stores_its_result_once(lazy, dtype):
    # The 0-d result stays visible to Python (a script's variable): the
    # kernel stores it once, and the consumer reads the value.
    def prog(lib, x):
        if dtype == "bool":
            s, t = x.any(), x.all()
            a = (s & t) | ~t
            return a, x ^ a, s
        s = x.sum(dtype=x.dtype)
        t = x.max()
        a = s * t + t
        y = x * a - t
        return a, y, s

    xn = (onp.arange(1, 12) % 5).astype(dtype)
    expected = prog(onp, xn)
    got = prog(nf, nf.asarray(xn))
    nf.flush()
    for g_, e in zip(got, expected):
        assert_same(g_, e, rtol=1e-6 if dtype == "float32" else None)
    assert prologue_kernels(groups()), nf.explain()


def test_in_place_scalar_update_runs_once(lazy):
    # s *= 2 reads and writes s: evaluated at every point it would double s
    # once per point; the prologue does it once.
    xn = onp.arange(1.0, 1001.0)
    x = nf.asarray(xn)
    s = x.sum()
    s *= 2
    s += 1
    y = x + s
    nf.flush()
    sn = xn.sum() * 2 + 1
    assert_same(s, onp.asarray(sn))
    assert_same(y, xn + sn)
    assert prologue_kernels(groups()), nf.explain()


def test_a_later_write_to_what_the_prologue_read_is_not_fused(lazy):
    # v[0] * 2 reads v; v += first then writes v: the scalar must see the old v.
    vn = onp.arange(1.0, 7.0)
    v = nf.asarray(vn)
    nf.flush()
    first = v[0, ...] * 2
    v += first
    nf.flush()
    assert_same(first, onp.asarray(vn[0] * 2))
    assert_same(v, vn + vn[0] * 2)
    assert any("scalar prologue" in g["stop_reason"] for g in groups()), nf.explain()


def test_a_read_overlapping_the_prologue_write_is_not_fused(lazy):
    # a[0] = s writes one element of a; a * 2 then reads all of a, through a
    # view overlapping that write: not a value the prologue can forward.
    an = onp.arange(5.0)
    a = nf.asarray(an)
    x = nf.asarray(onp.ones(5))
    nf.flush()
    s = x.sum()
    a[0] = s * 3
    b = a * 2
    nf.flush()
    an[0] = 15.0
    assert_same(a, an)
    assert_same(b, an * 2)


def test_prologue_of_an_empty_pass_still_runs(lazy):
    # The consumer has no points, but the 0-d result is a live variable.
    x = nf.asarray(onp.arange(4.0))
    e = nf.asarray(onp.zeros((0,)))
    nf.flush()
    s = x.sum()
    a = s / 4
    y = e * a
    nf.flush()
    assert_same(a, onp.asarray(1.5))
    assert_same(y, onp.zeros((0,)))


def test_prologue_feeding_a_reduction_and_two_dimensions(lazy):
    # A norm computed in the prologue of a 2-d row reduction.
    rng = onp.random.default_rng(3)
    Xn = rng.random((64, 48))
    X = nf.asarray(Xn)
    nf.flush()
    norm = nf.sqrt((X * X).sum())
    scale = 1 / norm
    rows = (X * scale).sum(axis=1)
    nf.flush()
    ns = 1 / onp.sqrt((Xn * Xn).sum())
    assert_same(scale, onp.asarray(ns))
    assert_same(rows, (Xn * ns).sum(axis=1))
    assert prologue_kernels(groups()), nf.explain()


@pytest.mark.parametrize("seed", range(6))
def test_random_schedules_with_a_prologue(lazy, seed):
    rng = onp.random.default_rng(seed)
    Xn = rng.random((37, 29))
    with nf.config(random_schedules=seed + 1):
        X = nf.asarray(Xn)
        m = X.mean()
        c = m * 2 - 1
        Y = (X - c) * (X + m)
        Z = Y.sum(axis=0)
        nf.flush()
        assert prologue_kernels(groups()), nf.explain()
    # A random schedule may sum the mean in another order than NumPy's
    # (within rounding); c = 2m - 1 cancels, so the prologue is checked
    # exactly against numfuse's own m, and m against NumPy's.
    m_ = float(onp.asarray(m))
    assert_same(m, onp.asarray(Xn.mean()))
    c_ = m_ * 2 - 1
    Y_ = (Xn - c_) * (Xn + m_)
    assert_same(c, onp.asarray(c_), rtol=0)
    assert_same(Y, Y_, rtol=0)
    assert_same(Z, Y_.sum(axis=0))


@pytest.mark.cpu_only
def test_a_scalar_does_not_join_an_unrelated_kernel(lazy):
    # x.std()'s 0-d tail (divide, sqrt) is followed by a row-wise chain that
    # does not read it: the chain's first stage stays a stage (the scalar
    # would make it a plain kernel), and the scalar runs on its own.
    rng = onp.random.default_rng(5)
    xn, Mn = rng.random(300000), rng.random((600, 500))
    x, M = nf.asarray(xn), nf.asarray(Mn)
    nf.flush()
    s = x.std()
    y = nf.exp(M - M.max(axis=1, keepdims=True)).sum(axis=1)
    nf.flush()
    gs = groups()
    assert_same(s, onp.asarray(xn.std()))
    assert_same(y, onp.exp(Mn - Mn.max(axis=1, keepdims=True)).sum(axis=1))
    assert not [g for g in prologue_kernels(gs) if "max" in g["ops"]], nf.explain()
    assert [g["stages"] for g in gs if g["stage"] == 1] == [2], nf.explain()


def test_a_scalar_met_in_the_middle_joins_the_prologue(lazy):
    # (a - lo) / (hi - lo): hi - lo is recorded after a - lo. It joins the
    # group's prologue (computed first, once): one kernel over a's points,
    # a - lo never stored, and no 0-d kernel of its own.
    rng = onp.random.default_rng(11)
    an = rng.random((50, 40))
    a = nf.asarray(an)
    nf.flush()
    lo, hi = a.min(), a.max()
    b = (a - lo) / (hi - lo)
    nf.flush()
    assert_same(b, (an - an.min()) / (an.max() - an.min()), rtol=0)
    gs = groups()
    assert not scalar_kernels(gs), nf.explain()
    assert [g["ops"] for g in prologue_kernels(gs)] == [["subtract", "subtract", "divide"]], nf.explain()
    # A run of two scalars (hi - lo, then its reciprocal) joins too.
    c = (a - lo) * (1 / (hi - lo))
    nf.flush()
    assert_same(c, (an - an.min()) * (1 / (an.max() - an.min())), rtol=0)
    gs = groups()
    assert not scalar_kernels(gs), nf.explain()
    assert [g["ops"] for g in prologue_kernels(gs)] == [["subtract", "subtract", "divide", "multiply"]], nf.explain()


def test_a_scalar_in_the_middle_reading_what_the_group_wrote_stays_out(lazy):
    # The 0-d operation reads an element the group's first task wrote: it
    # must see the new value, so it may not be computed before that task.
    an = onp.arange(1.0, 13.0).reshape(3, 4)
    a = nf.asarray(an)
    nf.flush()
    b = a * 2
    s = b[1, 2] + 1
    c = b * s
    nf.flush()
    sn = an[1, 2] * 2 + 1
    assert_same(c, an * 2 * sn)
    assert_same(s, onp.asarray(sn))
    # ... and one writing what the group read must come after the group.
    vn = an.copy()
    v = nf.asarray(vn)
    nf.flush()
    d = v * 3
    v[0, 0] = 100.0
    e = d + v[0, 0]
    nf.flush()
    assert_same(e, an * 3 + 100.0)
    vn[0, 0] = 100.0
    assert_same(v, vn)


def test_a_scalar_in_the_middle_whose_result_nobody_reads_next_stays_out(lazy):
    rng = onp.random.default_rng(12)
    an = rng.random((30, 20))
    a = nf.asarray(an)
    nf.flush()
    m = a.max()
    b = a * 2
    k = m * 3
    c = b + 1
    nf.flush()
    assert_same(c, an * 2 + 1)
    assert_same(k, onp.asarray(an.max() * 3))
    assert not prologue_kernels(groups()), nf.explain()


def random_scalar_program(lib, an, rng):
    """Array operations with 0-d ones in random places: reductions to 0-d,
    arithmetic on them, element reads and writes, in-place updates."""
    a = lib.asarray(an.copy()) if lib is nf else an.copy()
    arrays, scalars = [a], []
    for _ in range(24):
        op = rng.choice([0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 6])
        if op == 0 or not scalars:
            src = arrays[rng.integers(len(arrays))]
            scalars.append(src.max() if rng.integers(2) else src.sum())
        elif op == 1:
            s = scalars[rng.integers(len(scalars))]
            scalars.append(s * 0.5 - 1.25 if rng.integers(2) else 1 / (abs(s) + 1))
        elif op == 2:
            src = arrays[rng.integers(len(arrays))]
            i, j = rng.integers(src.shape[0]), rng.integers(src.shape[1])
            scalars.append(src[i, j, ...] * 2 + 1)  # a 0-d view: no sync
        elif op == 3:
            src = arrays[rng.integers(len(arrays))]
            arrays.append(src * 1.5 - scalars[rng.integers(len(scalars))])
        elif op == 4:
            x, y = arrays[rng.integers(len(arrays))], arrays[rng.integers(len(arrays))]
            arrays.append(x - y * scalars[rng.integers(len(scalars))])
        elif op == 5:
            dst = arrays[rng.integers(len(arrays))]
            i, j = rng.integers(dst.shape[0]), rng.integers(dst.shape[1])
            dst[i, j] = scalars[rng.integers(len(scalars))]
        else:
            dst = arrays[rng.integers(len(arrays))]
            dst += scalars[rng.integers(len(scalars))]
    return arrays + scalars


@pytest.mark.parametrize("seed", range(30))
def test_random_programs_with_scalars_in_the_middle(lazy, seed):
    an = onp.random.default_rng(seed).standard_normal((23, 19))
    expected = random_scalar_program(onp, an, onp.random.default_rng(1000 + seed))
    got = random_scalar_program(nf, an, onp.random.default_rng(1000 + seed))
    nf.flush()
    # (sums of 437 points: numfuse's order of additions may differ from
    # NumPy's in the last bits, and differences of such values cancel)
    for g, e in zip(got, expected):
        assert_same(g, onp.asarray(e), rtol=1e-12, atol=1e-11 * max(1.0, float(onp.abs(e).max())))

"""Hypothesis-generated random array programs, run on numfuse (fused and
unfused) and on NumPy, and compared.

A program is a list of abstract steps (small tuples of integers); an
interpreter runs the same steps against a module `m` (numfuse or numpy). All
choices are resolved deterministically from the integers, so both runs take
exactly the same path.

The state is a pool of 2-D float64 arrays of shape (5, 7) (the "bases", which
in-place updates write through views of), plus every result computed so far
(elementwise results and reductions), which later steps read.
"""

import numpy as onp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numfuse as nf
from conftest import assert_same, lazy_tier

BASE_SHAPE = (5, 7)
N_BASES = 3

# Views of a (5, 7) array, grouped by the shape they produce. Several views of
# each shape overlap each other (shifted, strided, reversed, transposed), so
# `x[v1] op= x[v2]` exercises every kind of aliasing the fusion analysis must
# get right.
VIEWS = {
    (5, 7): [
        ("[:]", lambda x: x[:]),
        ("[::-1]", lambda x: x[::-1]),
        ("[:, ::-1]", lambda x: x[:, ::-1]),
        ("[::-1, ::-1]", lambda x: x[::-1, ::-1]),
        ("[...]", lambda x: x[...]),
    ],
    (4, 7): [
        ("[1:]", lambda x: x[1:]),
        ("[:-1]", lambda x: x[:-1]),
        ("[::-1][1:]", lambda x: x[::-1][1:]),
        ("[-2::-1]", lambda x: x[-2::-1]),
    ],
    (5, 6): [
        ("[:, 1:]", lambda x: x[:, 1:]),
        ("[:, :-1]", lambda x: x[:, :-1]),
        ("[:, :0:-1]", lambda x: x[:, :0:-1]),
    ],
    (4, 6): [
        ("[1:, 1:]", lambda x: x[1:, 1:]),
        ("[:-1, :-1]", lambda x: x[:-1, :-1]),
        ("[1:, :-1]", lambda x: x[1:, :-1]),
        ("[:-1, 1:]", lambda x: x[:-1, 1:]),
        ("[::-1, ::-1][1:, 1:]", lambda x: x[::-1, ::-1][1:, 1:]),
    ],
    (3, 7): [
        ("[::2]", lambda x: x[::2]),
        ("[1:4]", lambda x: x[1:4]),
        ("[2:]", lambda x: x[2:]),
        ("[:3]", lambda x: x[:3]),
        ("[::-2]", lambda x: x[::-2]),
    ],
    (5, 4): [
        ("[:, ::2]", lambda x: x[:, ::2]),
        ("[:, 3:]", lambda x: x[:, 3:]),
        ("[:, :4]", lambda x: x[:, :4]),
        ("[:, ::-2]", lambda x: x[:, ::-2]),
        ("[:, 1:5]", lambda x: x[:, 1:5]),
    ],
    (5, 5): [
        ("[:, :5]", lambda x: x[:, :5]),
        ("[:, 2:]", lambda x: x[:, 2:]),
        ("[:, 1:6]", lambda x: x[:, 1:6]),
        (".T[:5]", lambda x: x.T[:5]),
        (".T[2:]", lambda x: x.T[2:]),
        (".T[::-1][1:6]", lambda x: x.T[::-1][1:6]),
    ],
    (3, 3): [
        ("[::2, ::3]", lambda x: x[::2, ::3]),
        ("[1:4, 2:5]", lambda x: x[1:4, 2:5]),
        ("[2:, 4:]", lambda x: x[2:, 4:]),
        ("[::-2, ::-3]", lambda x: x[::-2, ::-3]),
        (".T[::3, ::2]", lambda x: x.T[::3, ::2]),
    ],
}
SHAPES = list(VIEWS)

UNARY = [
    ("negative", lambda m, x: m.negative(x)),
    ("sqrt(abs)", lambda m, x: m.sqrt(m.abs(x))),
    ("exp(clip)", lambda m, x: m.exp(m.clip(x, -5.0, 5.0))),
    ("abs", lambda m, x: m.abs(x)),
    ("square", lambda m, x: x * x),
    ("tanh", lambda m, x: m.tanh(x)),
]
BINARY = [
    ("add", lambda m, x, y: m.add(x, y)),
    ("subtract", lambda m, x, y: m.subtract(x, y)),
    ("multiply", lambda m, x, y: m.multiply(x, y)),
    ("maximum", lambda m, x, y: m.maximum(x, y)),
    ("minimum", lambda m, x, y: m.minimum(x, y)),
    ("where", lambda m, x, y: m.where(x > y, x, y * 0.5)),
    ("add-op", lambda m, x, y: x + y),
    ("mul-op", lambda m, x, y: x * y - 1.0),
]
INPLACE = ["+=", "-=", "*=", "max-out", "min-out"]
REDUCTIONS = [
    ("sum", lambda x: x.sum()),
    ("sum0", lambda x: x.sum(axis=0)),
    ("sum1", lambda x: x.sum(axis=1)),
    ("sum1k", lambda x: x.sum(axis=1, keepdims=True)),
    ("max", lambda x: x.max()),
    ("max0", lambda x: x.max(axis=0)),
    ("min1k", lambda x: x.min(axis=1, keepdims=True)),
    ("mean", lambda x: x.mean()),
    ("mean0k", lambda x: x.mean(axis=0, keepdims=True)),
    ("mean1", lambda x: x.mean(axis=1)),
]
SCALARS = [0.5, -1.25, 2.0, 3.0, -0.75]


def _broadcasts_to(shape, target):
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != 1 and s != t:
            return False
    return True


class Interp:
    """Runs a program against module m; records a readable trace."""

    def __init__(self, m, bases):
        self.m = m
        self.vars = [m.array(b) for b in bases]  # first N_BASES are the writeable bases
        self.trace = []

    def full_view(self, shape, i, j):
        """A value of exactly `shape`: a view of a (5, 7) array, or a whole
        array that already has that shape."""
        cands = [k for k, v in enumerate(self.vars) if v.shape == BASE_SHAPE or v.shape == shape]
        k = cands[i % len(cands)]
        v = self.vars[k]
        if v.shape == BASE_SHAPE:
            name, f = VIEWS[shape][j % len(VIEWS[shape])]
            return f"v{k}{name}", f(v)
        return f"v{k}", v

    def operand(self, shape, i, j, kind):
        """A value that broadcasts to `shape`: usually a same-shape view, else
        a reduction result or a Python scalar."""
        if kind % 5 == 3:
            bc = [k for k, v in enumerate(self.vars) if v.shape != shape and _broadcasts_to(v.shape, shape)]
            if bc:
                k = bc[i % len(bc)]
                return f"v{k}", self.vars[k]
        if kind % 5 == 4:
            s = SCALARS[i % len(SCALARS)]
            return repr(s), s
        return self.full_view(shape, i, j)

    def run(self, steps, main=0):
        """`main` picks the shape most steps work on (same-shape steps are
        the ones that can fuse, so they are where aliasing hazards matter)."""
        m = self.m
        for step in steps:
            op, a, b, c, d, e, f = step
            shape = SHAPES[main % len(SHAPES)] if a % 4 else SHAPES[(a // 4) % len(SHAPES)]
            kind = op % 6
            if kind == 0:  # unary
                name, fn = UNARY[b % len(UNARY)]
                xn, x = self.full_view(shape, c, d)
                self.vars.append(fn(m, x))
                self.trace.append(f"v{len(self.vars) - 1} = {name}({xn})")
            elif kind == 1:  # binary
                name, fn = BINARY[b % len(BINARY)]
                xn, x = self.full_view(shape, c, d)
                yn, y = self.operand(shape, e, f, e + f)
                self.vars.append(fn(m, x, y))
                self.trace.append(f"v{len(self.vars) - 1} = {name}({xn}, {yn})")
            elif kind == 2:  # in-place update through a view of a base
                base = b % N_BASES
                name, vf = VIEWS[shape][c % len(VIEWS[shape])]
                t = vf(self.vars[base])
                yn, y = self.operand(shape, d, e, f)
                opn = INPLACE[f % len(INPLACE)]
                if opn == "+=":
                    t += y
                elif opn == "-=":
                    t -= y
                elif opn == "*=":
                    t *= y
                elif opn == "max-out":
                    m.maximum(t, y, out=t)
                else:
                    m.minimum(y, t, out=t)
                self.trace.append(f"v{base}{name} {opn} {yn}")
            elif kind == 3:  # assignment into a view of a base
                base = b % N_BASES
                name, vf = VIEWS[shape][c % len(VIEWS[shape])]
                yn, y = self.operand(shape, d, e, f)
                if f % 3 == 0:
                    vf(self.vars[base])[...] = y
                    self.trace.append(f"v{base}{name}[...] = {yn}")
                else:
                    s = SCALARS[f % len(SCALARS)]
                    vf(self.vars[base])[...] = m.multiply(y, s) + 1.0
                    self.trace.append(f"v{base}{name}[...] = {yn} * {s} + 1")
            elif kind == 4:  # reduction
                name, fn = REDUCTIONS[b % len(REDUCTIONS)]
                xn, x = self.full_view(shape, c, d)
                self.vars.append(fn(x))
                self.trace.append(f"v{len(self.vars) - 1} = {xn}.{name}")
            else:  # an explicit flush (every other such step; the rest are no-ops)
                if b % 2 == 0:
                    if m is nf:
                        nf.flush()
                    self.trace.append("numfuse.flush()")
        return self.vars


def _bases(seed):
    rng = onp.random.default_rng(seed)
    # quarter-integers keep most arithmetic exact, so reassociated
    # reductions rarely differ at all
    return [rng.integers(-12, 13, size=BASE_SHAPE).astype(onp.float64) / 4.0 for _ in range(N_BASES)]


def _compare(got_vars, exp_vars, trace):
    assert len(got_vars) == len(exp_vars)
    for k, (g, e) in enumerate(zip(got_vars, exp_vars)):
        e = onp.asarray(e)
        finite = e[onp.isfinite(e)]
        scale = max(1.0, float(onp.max(onp.abs(finite)))) if finite.size else 1.0
        try:
            # reductions may be reassociated; everything downstream of them
            # inherits a few ulps of difference, hence the scaled atol
            assert_same(g, e, rtol=1e-9, atol=1e-9 * scale)
        except AssertionError as err:
            raise AssertionError(f"v{k} differs\nprogram:\n  " + "\n  ".join(trace) + f"\n{err}") from None


step_st = st.tuples(*([st.integers(0, 5)] + [st.integers(0, 30)] * 6))


def _run_both_ways(steps, seed, main=0):
    bases = _bases(seed)
    ref = Interp(onp, bases)
    expected = ref.run(steps, main)
    # fused, unfused, and fused with a tiny window (automatic flushes in the
    # middle of the program, splitting dependent steps across windows)
    # ... and recorded lazily with every chain of groups a multi-stage kernel
    # (fusion.h, Chain: normally only for intermediates of 256 KiB and more),
    # tiles of 1 or 2 rows, rolling, recomputed or ring-buffered halos; for
    # half the programs compiled at -O3 at once (the code a kernel runs once
    # it has run 2 ms, with exact division by loop invariants).
    stages = dict(fusion=True, tier="lazy", stage_min_bytes=0, stage_rows=1 + seed % 2,
                  stage_storage=("rolling", "recompute", "ring")[main % 3], quick_compile=seed % 2 == 0)
    for opts in (dict(fusion=True), dict(fusion=False), dict(fusion=True, max_window=3), stages):
        with nf.config(**opts):
            it = Interp(nf, bases)
            got = it.run(steps, main)
            _compare(got, expected, [str(opts)] + it.trace)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step_st, min_size=1, max_size=14), seed=st.integers(0, 3),
       main=st.integers(0, len(SHAPES) - 1))
def test_random_program_matches_numpy(steps, seed, main):
    _run_both_ways(steps, seed, main)


# A few hand-picked programs that always run (regardless of what hypothesis
# draws): each a mixture of overlapping in-place updates and reductions.
FIXED_PROGRAMS = [
    # v0[1:] += v0[:-1]; v0[:-1] -= v0[1:]; r = v0.sum0; v1[...] = v1 + r
    [(2, 1, 0, 0, 0, 0, 0), (2, 1, 0, 1, 0, 0, 1), (4, 0, 1, 0, 0, 0, 0), (1, 0, 0, 1, 0, 3, 0)],
    # transposed square views written while read
    [(2, 6, 0, 3, 0, 0, 0), (3, 6, 0, 4, 0, 0, 1), (4, 6, 7, 0, 0, 0, 0)],
    # reversed full views, assignment, then a reduction feeding an update
    [(3, 0, 1, 1, 0, 0, 0), (4, 0, 4, 1, 0, 0, 0), (2, 0, 1, 0, 0, 3, 0)],
]


def test_fixed_programs_match_numpy():
    for steps in FIXED_PROGRAMS:
        for seed in range(2):
            _run_both_ways(steps, seed, main=0)


def test_equal_values_after_exp_compare_equal():
    """Found by hypothesis: v3 = exp(clip(v1)); v5 = where(v3[::-1] > v3,
    v3[::-1], v3 * 0.5). v1 holds 2.75 at [0, 5] and [4, 5]; their exps were
    computed one in a vector loop's body (libmvec) and one in its remainder
    (scalar libm), an ulp apart, so one compared greater. Every path now
    computes exp with one implementation (runtime/vmath.h)."""
    for main in (0, 3, 7):
        _run_both_ways([(0, 0, 8, 1, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0), (1, 0, 5, 3, 1, 18, 0)], 3, main)


# ---------------------------------------------------------------------------
# Long elementwise chains: NumPy's result, and one fused kernel.

CHAIN_OPS = [
    ("+a", lambda m, x, a, c: x + a),
    ("-c", lambda m, x, a, c: x - c),
    ("*c", lambda m, x, a, c: x * c),
    ("max", lambda m, x, a, c: m.maximum(x, a)),
    ("min", lambda m, x, a, c: m.minimum(x, c)),
    ("sqrt|x|", lambda m, x, a, c: m.sqrt(m.abs(x))),
    ("exp(clip)", lambda m, x, a, c: m.exp(m.clip(x, -3.0, 3.0))),
    ("tanh", lambda m, x, a, c: m.tanh(x)),
    ("where", lambda m, x, a, c: m.where(x > a, x, a * c)),
    ("-a[::-1]", lambda m, x, a, c: x - a[::-1]),
    ("neg", lambda m, x, a, c: -x),
    ("x*x", lambda m, x, a, c: m.minimum(x * x * 0.25, a)),
]


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.integers(0, len(CHAIN_OPS) - 1), st.sampled_from(SCALARS)),
                    min_size=20, max_size=60),
       seed=st.integers(0, 3))
@lazy_tier
def test_long_chain_is_one_kernel(ops, seed):
    a_np = _bases(seed)[0]
    x_np = a_np
    for i, c in ops:
        x_np = CHAIN_OPS[i][1](onp, x_np, a_np, c)

    a = nf.array(a_np)
    nf.flush()
    x = a
    for i, c in ops:
        x = CHAIN_OPS[i][1](nf, x, a, c)
    nf.flush()
    rep = nf.explain()
    names = [CHAIN_OPS[i][0] for i, _ in ops]
    assert rep.report["tasks"] >= len(ops)
    assert len(rep.groups) == 1, f"chain {names} ran as {len(rep.groups)} kernels:\n{rep}"
    # every intermediate but the final result was kept in registers
    assert len(rep.groups[0]["temporaries"]) == rep.report["tasks"] - 1
    # exp/tanh may differ from NumPy's by an ulp and later steps can amplify
    # that (squaring doubles relative error), hence rtol 1e-9
    assert_same(x, x_np, rtol=1e-9, atol=1e-9)

    # the same chain unfused: one kernel per operation, same values
    with nf.config(fusion=False):
        y = a
        for i, c in ops:
            y = CHAIN_OPS[i][1](nf, y, a, c)
        nf.flush()
        rep = nf.explain()
        assert len(rep.groups) == rep.report["tasks"]
        assert_same(y, x_np, rtol=1e-9, atol=1e-9)


@lazy_tier
def test_long_chain_with_inplace_updates_of_a_temporary():
    """x op= ... on a fresh temporary keeps identical views: still one kernel."""
    a_np = _bases(1)[0]
    a = nf.array(a_np)
    nf.flush()
    x_np = a_np * 1.0
    x = a * 1.0
    for k in range(30):
        c = SCALARS[k % len(SCALARS)]
        for m, xx, aa in ((onp, x_np, a_np), (nf, x, a)):
            if k % 3 == 0:
                xx += aa
            elif k % 3 == 1:
                xx *= c
            else:
                m.maximum(xx, -4.0, out=xx)
    nf.flush()
    rep = nf.explain()
    assert len(rep.groups) == 1, str(rep)
    assert_same(x, x_np)

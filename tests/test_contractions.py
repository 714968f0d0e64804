"""Contractions: einsum, tensordot, dot, inner, vdot, outer, and the strided
views (sliding_window_view, as_strided) they run over. Differential against
NumPy: same values, dtypes, shapes, views, and the same errors (type and
message) raised at the call, leaving earlier pending results intact."""

import warnings

import numpy as onp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numfuse as nf
from conftest import assert_result_kind, assert_same, raises_like, to_np

DTYPES = ["bool", "int32", "int64", "uint8", "float32", "float64"]


def rand(shape, dtype, seed=0):
    rng = onp.random.default_rng(seed)
    dt = onp.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind == "u":
        return rng.integers(0, 6, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-4, 5, shape).astype(dt)
    return (rng.random(shape) * 2 - 1).astype(dt)


def both(*arrays):
    """The NumPy arrays and numfuse copies of them."""
    return list(arrays), [nf.asarray(a) for a in arrays]


def rtol_for(dtype, k=1):
    return None if onp.dtype(dtype).kind != "f" else (1e-5 if dtype == "float32" else 1e-12) * max(k, 1)


# -- einsum: a table of specs x dtypes ---------------------------------------------

SPECS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(3, 4), (2, 4, 5)]),
    ("i...->...", [(3, 2, 2)]),
    ("i,i", [(5,), (5,)]),
    ("i,i->i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("Ab,bC->AC", [(3, 4), (4, 5)]),
    ("bA", [(2, 3)]),
    ("iij->j", [(3, 3, 4)]),
    ("i...i", [(3, 2, 3)]),
    ("iji->ij", [(3, 2, 3)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    (",", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("ij,jk", [(3, 1), (4, 5)]),  # size-1 axis broadcasts against the label (c_einsum does)
    ("ij,j->i", [(5, 3), (3,)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("i,i", [(0,), (0,)]),
    ("ij,jk", [(0, 4), (4, 5)]),
    ("ij,jk", [(3, 0), (0, 5)]),
    ("ij->", [(0, 3)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec,shapes", SPECS, ids=[f"{s}:{i}" for i, (s, _) in enumerate(SPECS)])
def test_einsum_table(spec, shapes, dtype, fusion):
    arrs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
    a_np, a_nf = both(*arrs)
    expected = onp.einsum(spec, *a_np)
    got = nf.einsum(spec, *a_nf)
    assert_result_kind(got, expected)
    assert_same(got, expected, rtol=rtol_for(dtype, 8))


@pytest.mark.parametrize("dtype", ["int64", "float64", "bool"])
def test_einsum_views_of_operands(dtype):
    """Transposed, reversed, strided and offset views as operands."""
    base = rand((6, 8), dtype, 1)
    b2 = rand((8, 6), dtype, 2)
    x_np, y_np = base, b2
    x, y = nf.asarray(base), nf.asarray(b2)
    cases = [
        ("ij,jk->ik", lambda m, x, y: (x[:, ::-1], y[::-1, :])),
        ("ij,jk->ik", lambda m, x, y: (x.T.T[1:5, :], y[:, 2:5])),
        ("ij,jk->ik", lambda m, x, y: (y.T.T[::2, ::-2].T, x[::-2, 1::2].T)),
        ("ij,ij->i", lambda m, x, y: (x, y.T)),
        ("ii->i", lambda m, x, y: (x[:, 1:7][::-1],)),
        ("ij->", lambda m, x, y: (x[::-3, ::3],)),
        ("i,i", lambda m, x, y: (x[2, ::-1], y[::-1, 3])),
    ]
    for spec, make in cases:
        ops_np = make(onp, x_np, y_np)
        ops_nf = make(nf, x, y)
        assert_same(nf.einsum(spec, *ops_nf), onp.einsum(spec, *ops_np))


def test_einsum_pending_operands_and_chains():
    """Operands that are pending results, and results used by later operations."""
    a_np = onp.arange(12.0).reshape(3, 4)
    b_np = onp.arange(20.0).reshape(4, 5) / 7
    for m, arrs in ((onp, (a_np, b_np)), (nf, (nf.asarray(a_np), nf.asarray(b_np)))):
        a, b = arrs
        c = m.sqrt(a) + 1
        d = m.einsum("ij,jk->ik", c, b * 2)
        e = m.einsum("ik,ik->k", d, d) - d.sum(axis=0)
        if m is onp:
            exp = (d, e)
        else:
            got = (d, e)
    assert_same(got, exp)


def test_einsum_returns_views_like_numpy():
    a_np = onp.arange(16.0).reshape(4, 4)
    a = nf.asarray(a_np.copy())
    d_np, d = onp.einsum("ii->i", a_np), nf.einsum("ii->i", a)
    assert onp.shares_memory(d_np, a_np)
    assert nf.may_share_memory(d, a)
    d[...] = -1.0  # writes through to the diagonal, like NumPy's view
    d_np[...] = -1.0
    assert_same(a, a_np)
    t = nf.einsum("ij->ji", a)
    assert nf.may_share_memory(t, a)
    assert_same(t, a_np.T)
    # a read-only operand gives a read-only view
    r = nf.einsum("ij->ji", a._readonly_view())
    assert not r.flags.writeable
    # NumPy ignores dtype= for such a view; so do we
    v = nf.einsum("ij->ij", a, dtype=onp.float32)
    assert v.dtype == onp.float64 and nf.may_share_memory(v, a)


EINSUM_LAYOUT_SPECS = ["ij,jk->ki", "ik,kj->ji", "ij,jk->ik", "ijk,kl->lji", "ijk,kl->lij", "ij,kl->lkji",
                       "ij,kl->kilj", "i,j->ji", "ij,j->ji", "ijk->kj", "ij,ij->ji", "ijk,ijk->kji", "ij,jk,kl->li",
                       "ijk,jl->lk", "ji,jk->ki", "ij,jk->jik", "ll,im->mi"]


@pytest.mark.parametrize("layout", ["C", "F", "transposed"])
@pytest.mark.parametrize("spec", EINSUM_LAYOUT_SPECS)
def test_einsum_result_laid_out_as_numpys(spec, layout):
    """NumPy's einsum allocates its result in its iterator's order over the
    operands' strides ('ij,jk->ki' of C arrays: (i, k) in memory, the
    transpose returned, F-ordered); numfuse's result has NumPy's strides,
    so a later reshape or ravel is a view or a copy where NumPy's is."""
    sizes = {"i": 3, "j": 4, "k": 5, "l": 4, "m": 7}
    rng = onp.random.default_rng(len(spec))
    ops = []
    for s in spec.split("->")[0].split(","):
        x = rng.standard_normal([sizes[c] for c in s])
        if layout == "F":
            x = onp.asfortranarray(x)
        elif layout == "transposed" and x.ndim == 2:
            x = onp.ascontiguousarray(x.T).T
        ops.append(x)
    expected = onp.einsum(spec, *ops)
    got = nf.einsum(spec, *[nf.asarray(o) for o in ops])
    assert_same(got, expected, rtol=1e-12)
    assert [s for s, n in zip(got.strides, got.shape) if n > 1] == \
        [s for s, n in zip(expected.strides, expected.shape) if n > 1], (got.strides, expected.strides)
    assert got.flags.c_contiguous == expected.flags.c_contiguous
    assert got.flags.f_contiguous == expected.flags.f_contiguous


def test_einsum_interleaved_form():
    a_np, b_np = rand((3, 4), "float64", 1), rand((4, 5), "float64", 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    assert_same(nf.einsum(a, [0, 1], b, [1, 2]), onp.einsum(a_np, [0, 1], b_np, [1, 2]))
    assert_same(nf.einsum(a, [0, 1], b, [1, 2], [2, 0]), onp.einsum(a_np, [0, 1], b_np, [1, 2], [2, 0]))
    c_np = rand((2, 3, 4), "float64", 3)
    c = nf.asarray(c_np)
    assert_same(nf.einsum(c, [Ellipsis, 0, 1], b, [1, 2], [Ellipsis, 2, 0]),
                onp.einsum(c_np, [Ellipsis, 0, 1], b_np, [1, 2], [Ellipsis, 2, 0]))
    assert_same(nf.einsum(a, [30, 51], [51]), onp.einsum(a_np, [30, 51], [51]))
    raises_like(lambda: onp.einsum(a_np, [0, 60]), lambda: nf.einsum(a, [0, 60]))
    raises_like(lambda: onp.einsum(a_np, [0, -1]), lambda: nf.einsum(a, [0, -1]))


def test_einsum_python_scalars_and_lists():
    """Operands are converted like NumPy's c_einsum (no weak scalars)."""
    x = onp.ones(3, onp.float32)
    assert_same(nf.einsum("i,->i", nf.asarray(x), 2.0), onp.einsum("i,->i", x, 2.0))
    assert_same(nf.einsum("i,->i", nf.asarray(x.astype(onp.int8)), 3), onp.einsum("i,->i", x.astype(onp.int8), 3))
    assert_same(nf.einsum("i,i", [1, 2, 3], [4, 5, 6]), onp.einsum("i,i", [1, 2, 3], [4, 5, 6]))


def test_einsum_integer_wraparound_and_bool_semiring():
    a = onp.full(5, 100, onp.int8)
    assert_same(nf.einsum("i,i", nf.asarray(a), nf.asarray(a)), onp.einsum("i,i", a, a))
    u = onp.array([200, 100, 7], onp.uint8)
    assert_same(nf.einsum("i,i->", nf.asarray(u), nf.asarray(u)), onp.einsum("i,i->", u, u))
    b1 = onp.array([[True, False], [False, False]])
    b2 = onp.array([[False, True], [True, True]])
    assert_same(nf.einsum("ij,jk->ik", nf.asarray(b1), nf.asarray(b2)), onp.einsum("ij,jk->ik", b1, b2))
    assert_same(nf.einsum("ij->", nf.asarray(b1)), onp.einsum("ij->", b1))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "bool"])
def test_einsum_dtype_and_casting(dtype):
    a_np, b_np = rand((3, 4), dtype, 1), rand((4, 2), dtype, 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    for kw in (dict(dtype="float64"), dict(dtype="int64", casting="unsafe"), dict(dtype="float32", casting="unsafe"),
               dict(dtype="int32", casting="same_kind"), dict(dtype="uint8", casting="unsafe")):
        try:
            exp = onp.einsum("ij,jk->ik", a_np, b_np, **kw)
        except TypeError:
            raises_like(lambda: onp.einsum("ij,jk->ik", a_np, b_np, **kw),
                        lambda: nf.einsum("ij,jk->ik", a, b, **kw))
            continue
        assert_same(nf.einsum("ij,jk->ik", a, b, **kw), exp, rtol=1e-5)


def test_einsum_casting_errors():
    a_np = rand((3, 4), "float64")
    a = nf.asarray(a_np)
    i_np = rand((3, 4), "int64")
    i = nf.asarray(i_np)
    cases = [
        (lambda m, a, i: m.einsum("ij->j", a, dtype=m.int32)),
        (lambda m, a, i: m.einsum("ij->j", a, out=m.zeros(4, m.int32))),
        (lambda m, a, i: m.einsum("ij->j", i, out=m.zeros(4, m.int32))),
        (lambda m, a, i: m.einsum("ij,ij->j", a, i, dtype=m.float32)),
        (lambda m, a, i: m.einsum("ij->j", i, casting="no", dtype=m.float64)),
        (lambda m, a, i: m.einsum("ij->j", a, out=m.zeros(4), dtype=m.int32, casting="same_kind")),
    ]
    for fn in cases:
        raises_like(lambda: fn(onp, a_np, i_np), lambda: fn(nf, a, i))
    # allowed with the right rule
    assert_same(nf.einsum("ij->j", i, out=nf.zeros(4, nf.int32), casting="same_kind"),
                onp.einsum("ij->j", i_np, out=onp.zeros(4, onp.int32), casting="same_kind"))


def test_einsum_out():
    a_np, b_np = rand((3, 4), "float64", 1), rand((4, 5), "float64", 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    o_np, o = onp.zeros((3, 5)), nf.zeros((3, 5))
    r = nf.einsum("ij,jk->ik", a, b, out=o)
    assert r is o
    onp.einsum("ij,jk->ik", a_np, b_np, out=o_np)
    assert_same(o, o_np)
    # out of another dtype (computed in the common type of inputs and out)
    o_np, o = onp.zeros((3, 5), onp.float32), nf.zeros((3, 5), nf.float32)
    nf.einsum("ij,jk->ik", a, b, out=o, casting="same_kind")
    onp.einsum("ij,jk->ik", a_np, b_np, out=o_np, casting="same_kind")
    assert_same(o, o_np)
    ai = onp.full(3, 100, onp.int8)
    o_np, o = onp.zeros((), onp.float64), nf.zeros((), nf.float64)
    nf.einsum("i,i", nf.asarray(ai), nf.asarray(ai), out=o)
    onp.einsum("i,i", ai, ai, out=o_np)
    assert_same(o, o_np)
    # a strided, reversed view as out
    big_np, big = onp.zeros((6, 10)), nf.zeros((6, 10))
    nf.einsum("ij,jk->ik", a, b, out=big[::2, ::-2])
    onp.einsum("ij,jk->ik", a_np, b_np, out=big_np[::2, ::-2])
    assert_same(big, big_np)
    # out larger than a size-1 input axis broadcasts the input
    o_np, o = onp.zeros(3), nf.zeros(3)
    nf.einsum("i->i", nf.ones(1), out=o)
    onp.einsum("i->i", onp.ones(1), out=o_np)
    assert_same(o, o_np)
    # three operands into out
    c_np = rand((5, 2), "float64", 3)
    o_np, o = onp.zeros((3, 2)), nf.zeros((3, 2))
    nf.einsum("ij,jk,kl->il", a, b, nf.asarray(c_np), out=o)
    onp.einsum("ij,jk,kl->il", a_np, b_np, c_np, out=o_np)
    assert_same(o, o_np)


def test_einsum_out_aliases_input(fusion):
    """NumPy copies when out overlaps an input; the result is as if computed
    into a temporary."""
    for spec, nops in (("ij,jk->ik", 2), ("ij->ji", 1), ("ij,jk->ik", 2), ("ii->i", 1)):
        a_np = onp.arange(9.0).reshape(3, 3) - 4
        a = nf.asarray(a_np.copy())
        if spec == "ii->i":
            r = nf.einsum(spec, a, out=a[0])
            onp.einsum(spec, a_np, out=a_np[0])
        else:
            ops = (a,) * nops
            r = nf.einsum(spec, *ops, out=a)
            onp.einsum(spec, *(a_np,) * nops, out=a_np)
            assert r is a
        assert_same(a, a_np)
    a_np = onp.arange(12.0).reshape(3, 4)
    a = nf.asarray(a_np.copy())
    nf.einsum("ij,jk->ik", a[:, :3], a[:, 1:], out=a[:, 1:])
    onp.einsum("ij,jk->ik", a_np[:, :3], a_np[:, 1:], out=a_np[:, 1:])
    assert_same(a, a_np)


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal"])
def test_einsum_many_operands(optimize):
    shapes = [(2, 3), (3, 4), (4, 5), (5, 2)]
    arrs = [rand(s, "float64", i) for i, s in enumerate(shapes)]
    a_np, a_nf = both(*arrs)
    for spec, ops in (("ab,bc,cd,de->ae", slice(0, 4)), ("ab,bc,cd->", slice(0, 3)), ("ab,bc,cd", slice(0, 3)),
                      ("ab,ab,ab->b", None)):
        if ops is None:
            o_np, o_nf = [a_np[0]] * 3, [a_nf[0]] * 3
        else:
            o_np, o_nf = a_np[ops], a_nf[ops]
        assert_same(nf.einsum(spec, *o_nf, optimize=optimize), onp.einsum(spec, *o_np, optimize=optimize))
    i_np = [rand(s, "int64", i) for i, s in enumerate(shapes)]
    path = ["einsum_path", (2, 3), (0, 1), (0, 1)]
    assert_same(nf.einsum("ab,bc,cd,de->ae", *[nf.asarray(x) for x in i_np], optimize=path),
                onp.einsum("ab,bc,cd,de->ae", *i_np, optimize=path))


def test_einsum_one_recorded_contraction(lazy):
    a = nf.asarray(rand((16, 8), "float64", 1))
    b = nf.asarray(rand((8, 12), "float64", 2))
    nf.flush()
    r = nf.einsum("ij,jk->ik", a, b)
    nf.flush()
    groups = nf.explain().groups
    assert len(groups) == 1 and groups[0]["ops"] == ["einsum"]
    assert_same(r, onp.einsum("ij,jk->ik", to_np(a), to_np(b)))
    x = nf.asarray(rand((5, 6, 7), "int32", 3))
    nf.flush()
    t = nf.einsum("iji->j", x[:5, :, :5])
    nf.flush()
    groups = nf.explain().groups
    assert len(groups) == 1 and "md_hom" in groups[0]["mdh"]
    assert_same(t, onp.einsum("iji->j", to_np(x)[:5, :, :5]))


SUBSCRIPT_ERRORS = [
    ("ij,jk->kk", [(3, 4), (4, 5)]),
    ("ij->k", [(3, 4)]),
    ("ij->ii", [(3, 4)]),
    ("i1", [(3,)]),
    ("i.j", [(3, 4)]),
    ("i..j", [(3, 4)]),
    ("ij-", [(3, 4)]),
    ("ij>i", [(3, 4)]),
    ("ij", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4)]),
    ("ijk", [(3, 4)]),
    ("i", [(3, 4)]),
    ("ij->i->j", [(3, 4)]),
    ("ij->...k", [(3, 4)]),
    ("...ij->ij", [(2, 3, 4)]),
    ("ij->.j", [(3, 4)]),
    ("ij,jk", [(3, 4), (5, 5)]),
    ("...ij,...jk", [(2, 3, 4), (3, 4, 5)]),
    ("...i,...i", [(2, 3), (4, 3)]),
    ("ij,jk,kl", [(3, 4), (4, 5), (6, 2)]),
    ("ii", [(3, 4)]),
    ("ii->i", [(3, 4)]),
    ("iij->j", [(1, 3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 5)]),
]


@pytest.mark.parametrize("spec,shapes", SUBSCRIPT_ERRORS, ids=[f"{s}:{i}" for i, (s, _) in
                                                              enumerate(SUBSCRIPT_ERRORS)])
def test_einsum_errors_like_numpy(spec, shapes):
    arrs = [rand(s, "float64", i) for i, s in enumerate(shapes)]
    a_np, a_nf = both(*arrs)
    raises_like(lambda: onp.einsum(spec, *a_np), lambda: nf.einsum(spec, *a_nf))


def test_einsum_argument_errors_like_numpy():
    a_np = rand((3, 4), "float64")
    a = nf.asarray(a_np)
    cases = [
        (lambda m, a: m.einsum("ij->j", a, out=m.zeros(5))),
        (lambda m, a: m.einsum("ij->j", a, out=m.zeros((1, 4)))),
        (lambda m, a: m.einsum("i->i", m.ones(3), out=m.zeros(1))),
        (lambda m, a: m.einsum("ij", a, order="Q")),
        (lambda m, a: m.einsum("ij", a, casting="bad")),
        (lambda m, a: m.einsum("ij")),
        (lambda m, a: m.einsum()),
        (lambda m, a: m.einsum(a, [0, Ellipsis, Ellipsis])),
        (lambda m, a: m.einsum(a, [0, 1.5])),
    ]
    for fn in cases:
        raises_like(lambda: fn(onp, a_np), lambda: fn(nf, a))
    ro = nf.zeros(4)._readonly_view()
    ro_np = onp.zeros(4)
    ro_np.flags.writeable = False
    raises_like(lambda: onp.einsum("ij->j", a_np, out=ro_np), lambda: nf.einsum("ij->j", a, out=ro))


def test_einsum_error_leaves_pending_results_intact(fusion):
    def program(m, fail):
        a = m.arange(12.0).reshape(3, 4) * 0.5
        a[1:] += a[:-1]
        s = m.einsum("ij,kj->ik", a, a)  # pending contraction
        t = m.sqrt(a) + s.sum()
        if fail:
            with pytest.raises(ValueError):
                m.einsum("ij,jk->ik", a, a)  # (3,4) @ (3,4): shapes don't broadcast
            with pytest.raises(TypeError):
                m.einsum("ij->i", a, out=m.zeros(3, m.int64))
            with pytest.raises(ValueError):
                m.einsum("ij,jk", a)
        u = m.einsum("ij->j", a) + t[0]
        return a, s, t, u

    exp = program(onp, True)
    got = program(nf, True)
    assert_same(got, exp)


def test_einsum_complex_falls_back():
    a = onp.array([[1 + 2j, 3], [4, 5j]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nf.FallbackWarning)
        got = nf.einsum("ij,jk->ik", a, a)
        assert_same(got, onp.einsum("ij,jk->ik", a, a))
        f16 = onp.ones((2, 2), onp.float16)
        assert_same(nf.einsum("ij->", f16), onp.einsum("ij->", f16))


def test_einsum_through_numpy_dispatch():
    a_np, b_np = rand((3, 4), "float64", 1), rand((4, 5), "float64", 2)
    r = onp.einsum("ij,jk", nf.asarray(a_np), nf.asarray(b_np))
    assert isinstance(r, nf.ndarray)
    assert_same(r, onp.einsum("ij,jk", a_np, b_np))


# -- hypothesis: random einsum specs ---------------------------------------------------

LETTERS = "abcdeAB"


@st.composite
def einsum_case(draw):
    nop = draw(st.integers(1, 3))
    sizes = {c: draw(st.integers(0, 4)) for c in LETTERS}
    ops = []
    for _ in range(nop):
        nd = draw(st.integers(0, 3))
        labels = draw(st.lists(st.sampled_from(LETTERS), min_size=nd, max_size=nd))
        # some axes of size 1 broadcast against their label
        shape = tuple(1 if draw(st.integers(0, 5)) == 0 else sizes[c] for c in labels)
        # a repeated label within an operand must have equal sizes (diagonal)
        seen = {}
        shape = list(shape)
        for k, c in enumerate(labels):
            if c in seen:
                shape[k] = shape[seen[c]]
            else:
                seen[c] = k
        ops.append(("".join(labels), tuple(shape)))
    used = sorted({c for lab, _ in ops for c in lab})
    if draw(st.booleans()):
        out = None
    else:
        out = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    dtype = draw(st.sampled_from(["float64", "int64", "bool", "float32"]))
    view = draw(st.sampled_from(["plain", "reversed", "transposed"]))
    return ops, out, dtype, view


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(einsum_case(), st.integers(0, 2**16))
def test_einsum_random_specs(case, seed):
    ops, out, dtype, view = case
    spec = ",".join(lab for lab, _ in ops) + ("" if out is None else "->" + out)
    arrs = [rand(shape, dtype, seed + i) for i, (_, shape) in enumerate(ops)]
    a_np, a_nf = both(*arrs)
    if view == "reversed":
        a_np = [x[(slice(None, None, -1),) * x.ndim] for x in a_np]
        a_nf = [x[(slice(None, None, -1),) * x.ndim] for x in a_nf]
    elif view == "transposed":  # a transposed copy, transposed back: a non-contiguous view
        a_np = [onp.ascontiguousarray(x.T).T for x in a_np]
        a_nf = [nf.asarray(onp.ascontiguousarray(to_np(x).T)).T for x in a_nf]
    try:
        exp = onp.einsum(spec, *a_np)
    except ValueError:
        raises_like(lambda: onp.einsum(spec, *a_np), lambda: nf.einsum(spec, *a_nf))
        return
    got = nf.einsum(spec, *a_nf)
    assert_same(got, exp, rtol=rtol_for(dtype, 16), atol=1e-6 if dtype == "float32" else 1e-12)


# -- tensordot, dot, inner, vdot, outer ----------------------------------------------

TENSORDOT = [
    ((3, 4, 5), (4, 5, 2), 2),
    ((3, 4), (4, 5), 1),
    ((3, 4), (2, 5), 0),
    ((3, 4), (3, 4), ([0, 1], [0, 1])),
    ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])),
    ((3, 4, 5), (5, 3, 2), ([-3, -1], [-2, 0])),
    ((3, 4), (4, 2), (1, 0)),
    ((3, 4), (4, 2), ([1], [0])),
    ((4,), (4,), 1),
    ((2, 3), (3, 2), -1),
    ((0, 3), (3, 2), 1),
    ((), (3,), 0),
]


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "float32"])
@pytest.mark.parametrize("sa,sb,axes", TENSORDOT, ids=[str(i) for i in range(len(TENSORDOT))])
def test_tensordot(sa, sb, axes, dtype):
    a_np, b_np = rand(sa, dtype, 1), rand(sb, dtype, 2)
    got = nf.tensordot(nf.asarray(a_np), nf.asarray(b_np), axes)
    assert_same(got, onp.tensordot(a_np, b_np, axes), rtol=rtol_for(dtype, 8))


def test_tensordot_records_one_contraction_over_views(lazy):
    a_np = rand((4, 5, 6), "float64", 1)
    b_np = rand((6, 5, 3), "float64", 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    nf.flush()
    r = nf.tensordot(a[::-1], b[:, ::-1], axes=([1, 2], [1, 0]))
    nf.flush()
    assert len(nf.explain().groups) == 1
    assert_same(r, onp.tensordot(a_np[::-1], b_np[:, ::-1], axes=([1, 2], [1, 0])))


def test_tensordot_errors_like_numpy():
    a_np, b_np = rand((2, 3), "float64", 1), rand((3, 5), "float64", 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    for axes in (3, ([0, 0], [0, 1]), ([5], [0]), ([0], [0]), ([0, 1], [0]), [[1], [0], [1]], ([-1, 1], [0, 1])):
        raises_like(lambda: onp.tensordot(a_np, b_np, axes), lambda: nf.tensordot(a, b, axes))
    sq_np = rand((3, 3), "float64", 3)
    sq = nf.asarray(sq_np)
    raises_like(lambda: onp.tensordot(sq_np, sq_np, ([-1, 1], [0, 1])), lambda: nf.tensordot(sq, sq, ([-1, 1], [0, 1])))


DOT = [
    ((3, 4), (4, 5)),
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((2, 3, 4), (5, 4, 6)),
    ((2, 3, 4), (4,)),
    ((3, 4), (2, 4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 3, 4), (4, 2)),
    ((), (3, 4)),
    ((3,), ()),
    ((2, 0, 3), (4, 3, 2)),
]


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint8", "bool", "float32"])
@pytest.mark.parametrize("sa,sb", DOT, ids=[str(i) for i in range(len(DOT))])
def test_dot(sa, sb, dtype):
    a_np, b_np = rand(sa, dtype, 1), rand(sb, dtype, 2)
    assert_same(nf.dot(nf.asarray(a_np), nf.asarray(b_np)), onp.dot(a_np, b_np), rtol=rtol_for(dtype, 8))


def test_dot_nd_views_and_out():
    a_np, b_np = rand((3, 4, 5), "float64", 1), rand((2, 5, 3), "float64", 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    assert_same(nf.dot(a[:, ::-1], b[::-1, :, ::2]), onp.dot(a_np[:, ::-1], b_np[::-1, :, ::2]))
    o_np, o = onp.zeros((3, 4, 2, 3)), nf.zeros((3, 4, 2, 3))
    r = nf.dot(a, b, out=o)
    assert r is o
    onp.dot(a_np, b_np, out=o_np)
    assert_same(o, o_np)
    raises_like(lambda: onp.dot(a_np, b_np, out=onp.zeros((3, 4, 2, 3), onp.float32)),
                lambda: nf.dot(a, b, out=nf.zeros((3, 4, 2, 3), nf.float32)))
    raises_like(lambda: onp.dot(a_np, b_np, out=onp.zeros((3, 4, 3, 2)).transpose(0, 1, 3, 2)),
                lambda: nf.dot(a, b, out=nf.zeros((3, 4, 3, 2)).transpose(0, 1, 3, 2)))
    ro_np = onp.zeros((3, 4, 2, 3))
    ro_np.flags.writeable = False
    raises_like(lambda: onp.dot(a_np, b_np, out=ro_np), lambda: nf.dot(a, b, out=nf.zeros((3, 4, 2, 3))._readonly_view()))
    # 2-D @ 2-D stays the matmul path (BLAS for floats)
    m_np, n_np = rand((6, 7), "float64", 3), rand((7, 8), "float64", 4)
    o_np, o = onp.zeros((6, 8)), nf.zeros((6, 8))
    nf.dot(nf.asarray(m_np), nf.asarray(n_np), out=o)
    onp.dot(m_np, n_np, out=o_np)
    assert_same(o, o_np)


def test_dot_inner_errors_like_numpy():
    cases = [
        ((2, 3), (4, 5)), ((2, 3), (4,)), ((2, 3, 4), (2, 5, 3)), ((3,), (4,)),
    ]
    for sa, sb in cases:
        a_np, b_np = onp.ones(sa), onp.ones(sb)
        raises_like(lambda: onp.dot(a_np, b_np), lambda: nf.dot(nf.asarray(a_np), nf.asarray(b_np)))
    for sa, sb in [((2, 3), (2, 4)), ((2, 3, 5), (4,)), ((2, 3), (2, 5, 4)), ((3,), (4,))]:
        a_np, b_np = onp.ones(sa), onp.ones(sb)
        raises_like(lambda: onp.inner(a_np, b_np), lambda: nf.inner(nf.asarray(a_np), nf.asarray(b_np)))
    raises_like(lambda: onp.vdot(onp.ones(3), onp.ones(4)), lambda: nf.vdot(nf.ones(3), nf.ones(4)))


INNER = [((3, 4), (5, 4)), ((4,), (4,)), ((2, 3, 4), (4,)), ((2, 3, 4), (5, 2, 4)), ((), (3,)), ((3, 0), (2, 0))]


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@pytest.mark.parametrize("sa,sb", INNER, ids=[str(i) for i in range(len(INNER))])
def test_inner(sa, sb, dtype):
    a_np, b_np = rand(sa, dtype, 1), rand(sb, dtype, 2)
    assert_same(nf.inner(nf.asarray(a_np), nf.asarray(b_np)), onp.inner(a_np, b_np))


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint8", "bool", "float32"])
def test_vdot_outer(dtype):
    a_np, b_np = rand((3, 4), dtype, 1), rand((2, 6), dtype, 2)
    a, b = nf.asarray(a_np), nf.asarray(b_np)
    assert_same(nf.vdot(a, b), onp.vdot(a_np, b_np), rtol=rtol_for(dtype, 4))
    assert_same(nf.vdot(a.T, b[:, ::-1]), onp.vdot(a_np.T, b_np[:, ::-1]), rtol=rtol_for(dtype, 4))
    assert_same(nf.outer(a, b[0]), onp.outer(a_np, b_np[0]))
    assert_same(nf.vdot(nf.asarray(a_np[0, 0]), nf.asarray(b_np[0, 0])), onp.vdot(a_np[0, 0], b_np[0, 0]))


def test_vdot_complex_falls_back():
    a = onp.array([1 + 1j, 2 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nf.FallbackWarning)
        assert_same(nf.vdot(a, a), onp.vdot(a, a))


# -- sliding_window_view, as_strided ------------------------------------------------

SWV = [
    ((10,), 3, None),
    ((10,), (10,), None),
    ((10,), 1, None),
    ((6, 7), (2, 3), None),
    ((6, 7), 3, 0),
    ((6, 7), 3, -1),
    ((6, 7), (2, 2), (0, 0)),
    ((4, 5, 6), (2, 3), (2, 0)),
    ((5,), 0, None),
]


@pytest.mark.parametrize("shape,window,axis", SWV, ids=[str(i) for i in range(len(SWV))])
def test_sliding_window_view(shape, window, axis):
    swv_np = onp.lib.stride_tricks.sliding_window_view
    swv = nf.lib.stride_tricks.sliding_window_view
    x_np = onp.arange(int(onp.prod(shape)), dtype=onp.float64).reshape(shape)
    x = nf.asarray(x_np)
    for make in (lambda v: v, lambda v: v[::-1], lambda v: v.T):
        v_np = swv_np(make(x_np), window, axis=axis)
        v = swv(make(x), window, axis=axis)
        assert v.shape == v_np.shape and v.strides == v_np.strides
        assert not v.flags.writeable
        assert_same(v, v_np)
        assert_same(v.sum(axis=-1), v_np.sum(axis=-1))


def test_sliding_window_view_errors_and_writes():
    swv_np = onp.lib.stride_tricks.sliding_window_view
    swv = nf.lib.stride_tricks.sliding_window_view
    x_np = onp.arange(12.0).reshape(3, 4)
    x = nf.asarray(x_np)
    for args, kw in [((5,), {}), ((2,), {}), ((-1, 2), {}), ((2, 2), dict(axis=0)), ((2,), dict(axis=2)),
                     ((5, 2), {})]:
        raises_like(lambda: swv_np(x_np, *args, **kw), lambda: swv(x, *args, **kw))
    v = swv(x, (2, 2))
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0, 0, 0] = 1.0
    # writeable=True writes through to x, like NumPy
    y_np, y = onp.arange(6), nf.arange(6)
    w_np, w = swv_np(y_np, 3, writeable=True), swv(y, 3, writeable=True)
    w_np[0, 1] = 10
    w[0, 1] = 10
    assert_same(y, y_np)
    assert_same(w, w_np)
    # a read-only input stays read-only
    assert not swv(nf.arange(5)._readonly_view(), 2, writeable=True).flags.writeable
    # through numpy's namespace (array function dispatch) and numfuse's
    r = onp.lib.stride_tricks.sliding_window_view(x, 2, axis=1)
    assert isinstance(r, nf.ndarray)
    assert_same(r, swv_np(x_np, 2, axis=1))
    assert nf.lib.stride_tricks.sliding_window_view is swv
    assert_same(nf.lib.stride_tricks.broadcast_to(x, (2, 3, 4)), onp.broadcast_to(x_np, (2, 3, 4)))


def test_as_strided():
    as_np = onp.lib.stride_tricks.as_strided
    as_nf = nf.lib.stride_tricks.as_strided
    x_np = onp.arange(20, dtype=onp.int32)
    x = nf.asarray(x_np)
    for shape, strides in [((4, 3), (16, 4)), ((5,), (-4,)), ((3, 3), (0, 4)), ((2, 5), None), (None, None),
                           ((0, 7), (4, 100))]:
        base_np, base = (x_np[::-1], x[::-1]) if strides == (-4,) else (x_np, x)
        v_np = as_np(base_np, shape, strides)
        v = as_nf(base, shape, strides)
        assert v.shape == v_np.shape and v.strides == v_np.strides
        assert_same(v, v_np)
    # non-contiguous input without new strides keeps its strides
    assert as_nf(x[::2], (10,)).strides == as_np(x_np[::2], (10,)).strides
    with pytest.raises(ValueError, match="multiple of the item size"):
        as_nf(x, (3,), (2,))
    with pytest.raises(ValueError):
        as_nf(x, (30,), (4,))  # outside the buffer: numfuse checks bounds
    with pytest.raises(ValueError):
        as_nf(x, (2**40,), (2**42,))  # reach overflows 64 bits: still out of bounds
    with pytest.raises(ValueError):
        as_nf(x, (3,), (2**62,))
    with pytest.raises(ValueError, match="mismatch in length"):
        as_nf(x, (3, 2), (4,))
    assert not as_nf(x, (3,), (4,), writeable=False).flags.writeable
    v = as_nf(x, (5,), (8,))
    v[...] = -1
    x_np = x_np.copy()
    as_np(x_np, (5,), (8,))[...] = -1
    assert_same(x, x_np)


def test_conv2d_is_one_contraction():
    """The MDH paper's Conv2D: einsum over a sliding window, one md_hom."""
    img_np = rand((20, 30), "float32", 1)
    filt_np = rand((5, 5), "float32", 2)
    img, filt = nf.asarray(img_np), nf.asarray(filt_np)
    nf.flush()
    r = nf.einsum("ijkl,kl->ij", nf.lib.stride_tricks.sliding_window_view(img, (5, 5)), filt)
    nf.flush()
    groups = nf.explain().groups
    assert len(groups) == 1 and "md_hom" in groups[0]["mdh"]
    exp = onp.einsum("ijkl,kl->ij", onp.lib.stride_tricks.sliding_window_view(img_np, (5, 5)), filt_np)
    assert_same(r, exp, rtol=1e-5, atol=1e-6)
    # with import numfuse as np spelling
    np = nf
    r2 = np.einsum("ijkl,kl->ij", np.lib.stride_tricks.sliding_window_view(img[::-1], (3, 4)), filt[:3, :4])
    exp2 = onp.einsum("ijkl,kl->ij", onp.lib.stride_tricks.sliding_window_view(img_np[::-1], (3, 4)),
                      filt_np[:3, :4])
    assert_same(r2, exp2, rtol=1e-5, atol=1e-6)


def test_lib_falls_back_to_numpy_lib():
    assert nf.lib.NumpyVersion is onp.lib.NumpyVersion
    assert nf.lib.stride_tricks.broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(AttributeError):
        nf.lib.no_such_thing


def test_main_paths_are_native():
    """No NumPy fallback on the main paths of the contraction functions."""
    a = nf.asarray(rand((4, 5), "float64", 1))
    b = nf.asarray(rand((5, 3), "int32", 2))
    c = nf.asarray(rand((2, 4, 5), "float32", 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", nf.FallbackWarning)
        results = [
            nf.einsum("ij,jk->ik", a, b), nf.einsum("...ij,jk", c, b), nf.einsum("ii", a[:, :4]),
            nf.einsum("ij,jk,kl->il", a, b, b.T, optimize=True), nf.tensordot(c, a, ([1, 2], [0, 1])),
            nf.dot(c, b), nf.inner(c, a), nf.vdot(a, a), nf.outer(a, b),
            nf.lib.stride_tricks.sliding_window_view(a, (2, 2)),
            nf.lib.stride_tricks.as_strided(a, (2, 2), (8, 8)),
        ]
        nf.flush()
    assert len(results) == 11


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 7, 100, 3000])
def test_small_dot_products_give_numpys_bits(dtype, n):
    """A dot product of two float vectors computed at the call gives NumPy's
    bits: NumPy's BLAS (shared) where NumPy calls it, NumPy's own loop where
    its strides keep it from BLAS (matmul on reversed views), and numpy.dot's
    contiguous copy of such operands."""
    rng = onp.random.default_rng(n)
    x, y = rng.random(n).astype(dtype), rng.random(n).astype(dtype)
    X, Y = nf.array(x), nf.array(y)
    cases = {"contiguous": ((x, y), (X, Y)), "reversed": ((x[::-1], y), (X[::-1], Y)),
             "step 2": ((x[::2], y[::2]), (X[::2], Y[::2])),
             "mixed types": ((x, y.astype("float64")), (X, Y.astype("float64")))}
    for name, ((a, b), (A, B)) in cases.items():
        for how, f in (("numpy.dot", lambda lib, u, v: lib.dot(u, v)), ("@", lambda lib, u, v: u @ v),
                       ("ndarray.dot", lambda lib, u, v: u.dot(v))):
            expected = f(onp, a, b)
            with nf.config(tier="auto"):  # (computed at the call: tier lazy records them)
                got = f(nf, A, B)
            assert type(got) is type(expected), (name, how)
            assert got.tobytes() == expected.tobytes(), (name, how, got, expected)


def test_levinson_durbin_float32_is_numpys():
    """npbench's durbin in float32: an ill-conditioned recurrence whose dot
    products of reversed views decide the result (any other summation order
    diverges by 150%)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "published",
                        "kernels.py")
    spec = importlib.util.spec_from_file_location("published_kernels", path)
    kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels)
    kernel = kernels.durbin  # (the published text, also benchmarked there)
    n = 400
    r = onp.fromfunction(lambda i: n + 1 - i, (n,), dtype=onp.float32)
    expected = kernel(onp, r.copy())
    with nf.config(tier="auto"):
        got = to_np(kernel(nf, nf.array(r)))
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()

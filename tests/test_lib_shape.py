"""numfuse._lib_shape (tri/tril/triu, meshgrid, indices, diag, roll, tile,
repeat, rot90, block, delete/insert, pad, select, piecewise, copyto, choose,
...) against NumPy: values, dtypes, shapes, views vs copies, memory layout
and exceptions. Every test runs natively (a FallbackWarning fails it)."""

import numpy as onp
import pytest

import numfuse as nf

DTYPES = ["float64", "int64", "bool", "float32"]

VIEWS = {
    "plain": lambda a: a,
    "step": lambda a: a[::2],
    "T": lambda a: a.T,
}


def _data(shape, dtype, seed=0):
    rng = onp.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def pair(shape, dtype="float64", view="plain", seed=0):
    """(numfuse array, NumPy array): equal data, the same view of it."""
    x = _data(shape, dtype, seed)
    a = nf.asarray(x.copy())
    return VIEWS[view](a), VIEWS[view](x)


def same(got, exp, base=None, base_np=None, layout=True):
    """numfuse result `got` is NumPy's `exp`: type, dtype, shape, values,
    C/F contiguity where NumPy's is, and memory shared with `base` exactly
    when NumPy's result shares memory with `base_np`."""
    if isinstance(exp, (tuple, list)):
        assert type(got) is type(exp) and len(got) == len(exp)
        for g, e in zip(got, exp):
            same(g, e, base, base_np, layout)
        return
    assert isinstance(got, nf.ndarray), type(got)
    g = onp.asarray(got)
    assert g.dtype == exp.dtype, (g.dtype, exp.dtype)
    assert g.shape == exp.shape, (g.shape, exp.shape)
    onp.testing.assert_array_equal(g, exp)
    if layout and exp.size:  # (numfuse's flags of empty arrays are not NumPy's)
        if exp.flags.c_contiguous:
            assert got.flags.c_contiguous
        if exp.flags.f_contiguous:
            assert got.flags.f_contiguous
    if base is not None:
        assert bool(nf.shares_memory(got, base)) == bool(onp.shares_memory(exp, base_np))


# ---------------------------------------------------------------- tri & co

@pytest.mark.parametrize("args", [(3,), (3, 4), (4, 3, 1), (4, 3, -2), (0,), (3, 0), (2, 5, 10), (3, 3, -5)])
@pytest.mark.parametrize("dtype", [float, "int64", bool, "float32", "uint8"])
def test_tri(args, dtype):
    same(nf.tri(*args, dtype=dtype), onp.tri(*args, dtype=dtype))


def test_tri_default_and_errors():
    same(nf.tri(4, k=1), onp.tri(4, k=1))
    same(nf.tri(2.5), onp.tri(2.5))
    same(nf.tri(-2, 3), onp.tri(-2, 3))
    with pytest.raises(TypeError):
        onp.tri(3, dtype="int64", k="a")
    with pytest.raises(TypeError):
        nf.tri(3, dtype="int64", k="a")


@pytest.mark.parametrize("func", ["tril", "triu"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,view", [((4, 5), "plain"), ((6, 3), "step"), ((4, 5), "T"), ((2, 3, 4), "plain"),
                                        ((5,), "plain"), ((0, 3), "plain"), ((3, 4, 2), "T")])
@pytest.mark.parametrize("k", [0, 1, -2])
def test_tril_triu(func, dtype, shape, view, k):
    a, x = pair(shape, dtype, view)
    same(getattr(nf, func)(a, k), getattr(onp, func)(x, k), a, x)


def test_tril_triu_fusion(fusion):
    a, x = pair((5, 6), "float64")
    same(nf.tril(a * 2, -1) + nf.triu(a, 1), onp.tril(x * 2, -1) + onp.triu(x, 1))


def test_tril_errors():
    with pytest.raises(TypeError):
        onp.tril(onp.float64(1.0))
    with pytest.raises(TypeError):
        nf.tril(nf.asarray(1.0))


# ---------------------------------------------------------- meshgrid, indices

@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_meshgrid(indexing, sparse, copy, n):
    pairs = [pair((k + 2,), dt, seed=k) for k, dt in zip(range(n), ["float64", "int64", "float32"])]
    got = nf.meshgrid(*[p[0] for p in pairs], indexing=indexing, sparse=sparse, copy=copy)
    exp = onp.meshgrid(*[p[1] for p in pairs], indexing=indexing, sparse=sparse, copy=copy)
    same(got, exp, pairs[0][0], pairs[0][1])


def test_meshgrid_2d_input_and_errors(fusion):
    a, x = pair((2, 3), "int64")
    b, y = pair((4,), "bool")
    same(nf.meshgrid(a, b), onp.meshgrid(x, y))
    same(nf.meshgrid(), onp.meshgrid())
    with pytest.raises(ValueError):
        nf.meshgrid(b, indexing="yx")


@pytest.mark.parametrize("dims", [(2, 3), (4,), (2, 0, 3), (), (3, 1, 2)])
@pytest.mark.parametrize("dtype", [int, "int32", float, "uint8"])
@pytest.mark.parametrize("sparse", [False, True])
def test_indices(dims, dtype, sparse):
    same(nf.indices(dims, dtype=dtype, sparse=sparse), onp.indices(dims, dtype=dtype, sparse=sparse))


def test_indices_errors():
    with pytest.raises(TypeError):
        onp.indices(3)
    with pytest.raises(TypeError):
        nf.indices(3)


def test_ix():
    a, x = pair((3,), "int64")
    same(nf.ix_(a, [1, 2], onp.array([True, False, True]), []),
         onp.ix_(x, [1, 2], onp.array([True, False, True]), []), a, x)
    same(nf.ix_(), onp.ix_())
    b, y = pair((2, 2), "int64")
    with pytest.raises(ValueError):
        nf.ix_(b)
    with pytest.raises(ValueError):
        onp.ix_(y)


# ---------------------------------------------------------------------- diag

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [0, 2, -1, -4, 7])
def test_diag_1d(dtype, k):
    a, x = pair((4,), dtype)
    same(nf.diag(a, k), onp.diag(x, k), a, x)
    same(nf.diag(a[::-2], k), onp.diag(x[::-2], k))
    same(nf.diag(a[:0], k), onp.diag(x[:0], k))


@pytest.mark.parametrize("view", ["plain", "step", "T"])
@pytest.mark.parametrize("k", [0, 1, -2, 9])
def test_diag_2d_is_view(view, k):
    a, x = pair((6, 4), "float32", view)
    r, e = nf.diag(a, k), onp.diag(x, k)
    same(r, e, a, x)
    assert r.flags.writeable == e.flags.writeable


def test_diag_errors():
    with pytest.raises(ValueError):
        onp.diag(onp.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        nf.diag(nf.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        nf.diag(nf.asarray(1.0))


@pytest.mark.parametrize("shape,view", [((2, 3), "plain"), ((2, 3), "T"), ((5,), "step"), ((), "plain"),
                                        ((0,), "plain")])
@pytest.mark.parametrize("k", [0, 1, -3])
def test_diagflat(shape, view, k, fusion):
    a, x = pair(shape, "int64", view)
    same(nf.diagflat(a, k), onp.diagflat(x, k), a, x)


def test_diag_indices():
    same(nf.diag_indices(4), onp.diag_indices(4))
    same(nf.diag_indices(3, 3), onp.diag_indices(3, 3))
    same(nf.diag_indices(0), onp.diag_indices(0))
    a, x = pair((3, 3, 3))
    same(nf.diag_indices_from(a), onp.diag_indices_from(x))
    for bad in [nf.zeros(3), nf.zeros((3, 4))]:
        with pytest.raises(ValueError):
            nf.diag_indices_from(bad)
        with pytest.raises(ValueError):
            onp.diag_indices_from(onp.asarray(bad))


@pytest.mark.parametrize("args", [(4,), (4, 1), (4, -1, 6), (3, 0, 2), (0,), (5, 10)])
def test_tri_indices(args):
    same(nf.tril_indices(*args), onp.tril_indices(*args))
    same(nf.triu_indices(*args), onp.triu_indices(*args))


@pytest.mark.parametrize("k", [0, 1, -2])
def test_tri_indices_from(k):
    a, x = pair((3, 5))
    same(nf.tril_indices_from(a, k), onp.tril_indices_from(x, k))
    same(nf.triu_indices_from(a, k), onp.triu_indices_from(x, k))
    a, x = pair((3, 5, 2))
    for f in ("tril_indices_from", "triu_indices_from"):
        with pytest.raises(ValueError):
            getattr(nf, f)(a)
        with pytest.raises(ValueError):
            getattr(onp, f)(x)


def test_tri_indices_roundtrip():
    a, x = pair((4, 4), "int64")
    i, j = nf.triu_indices(4, 1)
    assert isinstance(i, nf.ndarray)
    onp.testing.assert_array_equal(onp.asarray(i), onp.triu_indices(4, 1)[0])


# ---------------------------------------------------------------------- roll

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,view", [((7,), "plain"), ((6, 4), "step"), ((3, 5), "T"), ((2, 3, 4), "plain"),
                                        ((0, 3), "plain"), ((3, 4, 2), "T")])
@pytest.mark.parametrize("shift,axis", [(2, None), (-3, None), (1, 0), (5, -1), ((1, 2), (0, -1)),
                                        (3, (0, 0)), (0, None), (-13, 0)])
def test_roll(dtype, shape, view, shift, axis):
    a, x = pair(shape, dtype, view)
    if isinstance(axis, tuple) and max(axis) >= x.ndim or axis is not None and not isinstance(axis, tuple) \
            and axis >= x.ndim:
        return
    same(nf.roll(a, shift, axis), onp.roll(x, shift, axis), a, x)


def test_roll_fusion_and_errors(fusion):
    a, x = pair((4, 5), "float64")
    same(nf.roll(a + 1, (1, -2), (0, 1)) * 2, onp.roll(x + 1, (1, -2), (0, 1)) * 2)
    for axis in (2, -3):
        with pytest.raises(onp.exceptions.AxisError) as e:
            nf.roll(a, 1, axis)
        with pytest.raises(onp.exceptions.AxisError) as w:
            onp.roll(x, 1, axis)
        assert str(e.value) == str(w.value)
    with pytest.raises(ValueError):
        nf.roll(a, [[1, 2]], 0)
    with pytest.raises(ValueError):
        onp.roll(x, [[1, 2]], 0)


# ---------------------------------------------------------------------- tile

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,view", [((3,), "plain"), ((4, 3), "step"), ((2, 3), "T"), ((), "plain"),
                                        ((0, 2), "plain"), ((2, 1, 3), "plain")])
@pytest.mark.parametrize("reps", [2, (2, 1), (1, 1), 1, (2, 0, 3), (3, 2, 1, 2), 0])
def test_tile(dtype, shape, view, reps):
    a, x = pair(shape, dtype, view)
    same(nf.tile(a, reps), onp.tile(x, reps), a, x)


def test_tile_list_and_fusion(fusion):
    same(nf.tile([1, 2], (2, 2)), onp.tile([1, 2], (2, 2)))
    same(nf.tile([[1.5]], 1), onp.tile([[1.5]], 1))
    a, x = pair((2, 3))
    same(nf.tile(a * 3, (2, 2)) - 1, onp.tile(x * 3, (2, 2)) - 1)
    with pytest.raises(ValueError):
        nf.tile(a, -1)
    with pytest.raises(ValueError):
        onp.tile(x, -1)


# -------------------------------------------------------------------- repeat

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,view", [((4,), "plain"), ((6, 3), "step"), ((2, 3), "T"), ((), "plain"),
                                        ((0, 2), "plain"), ((2, 3, 2), "plain")])
@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), (2, -1), (0, 0), ([2], 0), ([1, 0], 0),
                                          ([1, 2, 0], -1), ([3, 1], None)])
def test_repeat(dtype, shape, view, repeats, axis):
    a, x = pair(shape, dtype, view)
    try:
        e = onp.repeat(x, repeats, axis)
    except Exception as err:
        with pytest.raises(type(err)):
            nf.repeat(a, repeats, axis)
        return
    same(nf.repeat(a, repeats, axis), e, a, x)


def test_repeat_errors(fusion):
    a, x = pair((2, 3))
    same(nf.repeat(a * 2, 2, 1) + 1, onp.repeat(x * 2, 2, 1) + 1)
    same(nf.repeat(a, 1.5, 0), onp.repeat(x, 1.5, 0))
    same(nf.repeat(a, [1.5, 2.7], 0), onp.repeat(x, [1.5, 2.7], 0))
    for bad, exc in [(-1, ValueError), ([1, -1], ValueError), ([1, 2, 3], ValueError), ("x", ValueError)]:
        with pytest.raises(exc):
            onp.repeat(x, bad, 0)
        with pytest.raises(exc):
            nf.repeat(a, bad, 0)
    with pytest.raises(onp.exceptions.AxisError):
        nf.repeat(a, 2, 2)


@pytest.mark.fallback
def test_repeat_array_counts_fallback():
    a, x = pair((3,))
    with pytest.warns(nf.FallbackWarning):
        r = nf.repeat(a, nf.asarray([1, 2, 0]))
    same(r, onp.repeat(x, [1, 2, 0]))


# ------------------------------------------------------- rot90, rollaxis, ...

@pytest.mark.parametrize("shape,view", [((3, 4), "plain"), ((6, 4), "step"), ((3, 4), "T"), ((2, 3, 4), "plain")])
@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (-1, 0)])
def test_rot90(shape, view, k, axes):
    a, x = pair(shape, "int64", view)
    same(nf.rot90(a, k, axes), onp.rot90(x, k, axes), a, x)


def test_rot90_errors():
    a, x = pair((3, 4))
    for axes in [(0, 0), (0,), (0, 2), (0, -2)]:
        with pytest.raises(ValueError):
            onp.rot90(x, 1, axes)
        with pytest.raises(ValueError):
            nf.rot90(a, 1, axes)


@pytest.mark.parametrize("axis,start", [(0, 0), (2, 0), (0, 3), (-1, 1), (1, -1), (1, 2), (1, 1)])
def test_rollaxis(axis, start):
    a, x = pair((2, 3, 4), "float32")
    same(nf.rollaxis(a, axis, start), onp.rollaxis(x, axis, start), a, x)


def test_rollaxis_errors():
    a, x = pair((2, 3))
    for axis, start, exc in [(2, 0, onp.exceptions.AxisError), (0, 3, onp.exceptions.AxisError),
                             (0, -3, onp.exceptions.AxisError)]:
        with pytest.raises(exc):
            onp.rollaxis(x, axis, start)
        with pytest.raises(exc):
            nf.rollaxis(a, axis, start)


@pytest.mark.parametrize("dtype", DTYPES)
def test_append(dtype, fusion):
    a, x = pair((2, 3), dtype)
    b, y = pair((2, 3), dtype, seed=1)
    same(nf.append(a, b), onp.append(x, y))
    same(nf.append(a, b, 0), onp.append(x, y, 0))
    same(nf.append(a.T, b.T, -1), onp.append(x.T, y.T, -1))
    same(nf.append(a[0], [1, 2]), onp.append(x[0], [1, 2]))
    same(nf.append(a, 7.5), onp.append(x, 7.5))
    with pytest.raises(ValueError):
        nf.append(a, b[0], 0)
    with pytest.raises(ValueError):
        onp.append(x, y[0], 0)


# --------------------------------------------------------------------- block

def test_block():
    a, x = pair((2, 2), "float64")
    b, y = pair((2, 3), "int64", seed=1)
    c, z = pair((1, 5), "float32", seed=2)
    same(nf.block([[a, b], [c]]), onp.block([[x, y], [z]]))
    same(nf.block([a, b]), onp.block([x, y]))
    same(nf.block([1, 2, 3]), onp.block([1, 2, 3]))
    same(nf.block([[1, 2], [3, 4]]), onp.block([[1, 2], [3, 4]]))
    same(nf.block(a), onp.block(x), a, x)
    same(nf.block(3.5), onp.block(3.5))
    same(nf.block([[[a]], [[a.T]]]), onp.block([[[x]], [[x.T]]]))
    d, w = pair((3,), "bool")
    same(nf.block([[d], [d]]), onp.block([[w], [w]]))


def test_block_errors():
    a, x = pair((2, 2))
    for arg_nf, arg_np, exc in [((a, a), (x, x), TypeError), ([[a], a], [[x], x], ValueError),
                                ([], [], ValueError), ([[a], []], [[x], []], ValueError),
                                ([[a, a[:1]]], [[x, x[:1]]], ValueError)]:
        with pytest.raises(exc):
            onp.block(arg_np)
        with pytest.raises(exc):
            nf.block(arg_nf)


# ------------------------------------------------------------ delete, insert

DEL_OBJS = [0, -1, 2, slice(1, 3), slice(None, None, 2), slice(None, None, -2), slice(3, 1), [0, 2], [],
            [2, 2, 0], onp.array([1]), [True, False, True, False]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,view,axis", [((4,), "plain", None), ((4, 3), "plain", 0), ((3, 4), "T", 1),
                                             ((8, 4), "step", 1), ((4, 3, 2), "plain", None),
                                             ((2, 4), "plain", -1), ((4, 2), "T", None), ((4, 3, 4), "T", 1),
                                             ((4, 3, 4), "T", 0)])
@pytest.mark.parametrize("obj", DEL_OBJS, ids=range(len(DEL_OBJS)))
def test_delete(dtype, shape, view, axis, obj):
    a, x = pair(shape, dtype, view)
    try:
        e = onp.delete(x, obj, axis)
    except Exception as err:
        with pytest.raises(type(err)):
            nf.delete(a, obj, axis)
        return
    same(nf.delete(a, obj, axis), e, a, x)


def test_delete_errors(fusion):
    a, x = pair((3, 4))
    same(nf.delete(a * 2, [0, 3], 1), onp.delete(x * 2, [0, 3], 1))
    for obj, axis, exc in [(5, 0, IndexError), ([0, 9], 1, IndexError), (0, 2, onp.exceptions.AxisError),
                           ([True, False], 0, ValueError), ([1.5], 0, IndexError)]:
        with pytest.raises(exc):
            onp.delete(x, obj, axis)
        with pytest.raises(exc):
            nf.delete(a, obj, axis)


INS_CASES = [(1, 9), (0, [7, 8]), (-1, 5), (4, 1.5), ([1], 3), ([0, 2], [6, 7]), ([2, 2, 0], 4), (slice(1, 3), 8),
             ([], 5), ([3, 1], [[1], [2]])]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,view,axis", [((4,), "plain", None), ((4, 3), "plain", 0), ((3, 4), "T", 1),
                                             ((8, 4), "step", 0), ((4, 2), "T", None), ((2, 4), "plain", -1)])
@pytest.mark.parametrize("case", INS_CASES, ids=range(len(INS_CASES)))
def test_insert(dtype, shape, view, axis, case):
    obj, values = case
    a, x = pair(shape, dtype, view)
    try:
        e = onp.insert(x, obj, values, axis)
    except Exception as err:
        with pytest.raises(type(err)):
            nf.insert(a, obj, values, axis)
        return
    same(nf.insert(a, obj, values, axis), e, a, x)


def test_insert_arrays_and_errors(fusion):
    a, x = pair((3, 4))
    b, y = pair((3,), seed=4)
    same(nf.insert(a, 1, b, 1), onp.insert(x, 1, y, 1))
    same(nf.insert(a, [1], b[:, None], 1), onp.insert(x, [1], y[:, None], 1))
    same(nf.insert(a + 1, [0, 4], b[:, None], 1), onp.insert(x + 1, [0, 4], y[:, None], 1))
    for obj, axis, exc in [(9, 0, IndexError), ([0, 9], 1, IndexError), (0, 3, onp.exceptions.AxisError),
                           ([[0]], 0, ValueError)]:
        with pytest.raises(exc):
            onp.insert(x, obj, 1.0, axis)
        with pytest.raises(exc):
            nf.insert(a, obj, 1.0, axis)


# --------------------------------------------------------------------- split

@pytest.mark.parametrize("ios", [2, [1, 3], [], [0, 5, 2]])
def test_hvd_split(ios):
    a, x = pair((4, 6, 4), "int64")
    for f in ("hsplit", "vsplit", "dsplit"):
        try:
            e = getattr(onp, f)(x, ios)
        except ValueError:
            with pytest.raises(ValueError):
                getattr(nf, f)(a, ios)
            continue
        same(getattr(nf, f)(a, ios), e, a, x)
    b, y = pair((6,), "float32")
    same(nf.hsplit(b, ios if ios != 2 else 3), onp.hsplit(y, ios if ios != 2 else 3), b, y)


def test_split_errors():
    b, y = pair((6,))
    c, z = pair((4, 4))
    for f, arg_nf, arg_np in [("hsplit", nf.asarray(1.0), onp.float64(1.0)), ("vsplit", b, y), ("dsplit", c, z),
                              ("hsplit", c, z)]:
        with pytest.raises(ValueError):
            getattr(onp, f)(arg_np, 3)
        with pytest.raises(ValueError):
            getattr(nf, f)(arg_nf, 3)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
@pytest.mark.parametrize("view", ["plain", "T"])
def test_unstack(axis, view):
    a, x = pair((2, 3, 4), "bool", view)
    same(nf.unstack(a, axis=axis), onp.unstack(x, axis=axis), a, x)


def test_unstack_matrix_transpose_errors():
    with pytest.raises(ValueError):
        nf.unstack(nf.asarray(1.0))
    with pytest.raises(onp.exceptions.AxisError):
        nf.unstack(nf.zeros((2, 2)), axis=2)
    with pytest.raises(ValueError):
        nf.matrix_transpose(nf.zeros(3))
    with pytest.raises(ValueError):
        onp.matrix_transpose(onp.zeros(3))


@pytest.mark.parametrize("shape,view", [((2, 3), "plain"), ((2, 3, 4), "plain"), ((6, 4), "step"), ((3, 2), "T")])
def test_matrix_transpose(shape, view):
    a, x = pair(shape, "float32", view)
    same(nf.matrix_transpose(a), onp.matrix_transpose(x), a, x)


# -------------------------------------------------------------------- resize

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("new_shape", [7, (2, 5), (0,), (3, 0), (1,), (4, 4, 2), ()])
@pytest.mark.parametrize("shape,view", [((2, 3), "plain"), ((6, 2), "step"), ((2, 3), "T"), ((0,), "plain")])
def test_resize(dtype, new_shape, shape, view, fusion):
    a, x = pair(shape, dtype, view)
    same(nf.resize(a, new_shape), onp.resize(x, new_shape), a, x)


def test_resize_errors():
    with pytest.raises(ValueError):
        nf.resize(nf.zeros(3), (2, -1))
    with pytest.raises(ValueError):
        onp.resize(onp.zeros(3), (2, -1))


# ----------------------------------------------------------------------- pad

PAD_WIDTHS = [1, (2, 3), ((1, 2), (0, 3)), ((0, 0), (4, 1)), 7, ((3, 0), (0, 9))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,kw", [("constant", {}), ("constant", {"constant_values": (4, -1)}),
                                     ("constant", {"constant_values": ((1, 2), (3, 4))}), ("edge", {}),
                                     ("reflect", {}), ("symmetric", {}), ("wrap", {}),
                                     ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"}),
                                     ("linear_ramp", {}), ("linear_ramp", {"end_values": (5, -3)})])
@pytest.mark.parametrize("pw", PAD_WIDTHS, ids=range(len(PAD_WIDTHS)))
@pytest.mark.parametrize("view", ["plain", "T"])
def test_pad_2d(dtype, mode, kw, pw, view):
    a, x = pair((3, 4), dtype, view)
    try:
        e = onp.pad(x, pw, mode, **kw)
    except Exception as err:
        with pytest.raises(type(err)):
            nf.pad(a, pw, mode, **kw)
        return
    r = nf.pad(a, pw, mode, **kw)
    if e.dtype.kind == "f" and mode == "linear_ramp":
        onp.testing.assert_allclose(onp.asarray(r), e, rtol=1e-6 if e.dtype == onp.float32 else 1e-13)
        assert r.dtype == e.dtype and r.shape == e.shape
    else:
        same(r, e, a, x)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "empty"])
@pytest.mark.parametrize("shape,view,pw", [((5,), "plain", (3, 11)), ((1,), "plain", 4), ((8,), "step", (0, 2)),
                                           ((2, 3, 2), "plain", 2), ((0,), "plain", 0), ((0, 2), "plain", (0, 1)),
                                           ((0, 2), "plain", 1), ((2, 1), "T", ((1, 2), (3, 1)))])
def test_pad_shapes(mode, shape, view, pw):
    a, x = pair(shape, "int64", view)
    try:
        e = onp.pad(x, pw, mode)
    except Exception as err:
        with pytest.raises(type(err)):
            nf.pad(a, pw, mode)
        return
    r = nf.pad(a, pw, mode)
    if mode == "empty":
        assert r.dtype == e.dtype and r.shape == e.shape
        sl = tuple(slice(lo, lo + n) for (lo, _), n in zip(onp.broadcast_to(pw, (x.ndim, 2)), x.shape))
        onp.testing.assert_array_equal(onp.asarray(r)[sl], x)
    else:
        same(r, e)


def test_pad_fusion(fusion):
    a, x = pair((4, 5), "float64")
    for mode in ("reflect", "wrap", "edge", "symmetric"):
        same(nf.pad(a * 2, (2, 3), mode) + 1, onp.pad(x * 2, (2, 3), mode) + 1)


def test_pad_errors():
    a, x = pair((3, 4))
    for pw, mode, kw, exc in [(1.5, "constant", {}, TypeError), (-1, "constant", {}, ValueError),
                              (1, "nope", {}, ValueError), (1, "edge", {"constant_values": 1}, ValueError),
                              (((1, 2), (1, 2), (1, 2)), "constant", {}, ValueError)]:
        with pytest.raises(exc):
            onp.pad(x, pw, mode, **kw)
        with pytest.raises(exc):
            nf.pad(a, pw, mode, **kw)
    with pytest.raises(ValueError):
        nf.pad(nf.zeros((0, 2)), 1, "edge")


@pytest.mark.fallback
def test_pad_stat_mode_fallback():
    a, x = pair((3, 4))
    with pytest.warns(nf.FallbackWarning):
        r = nf.pad(a, 2, "maximum")
    same(r, onp.pad(x, 2, "maximum"))


# ---------------------------------------------------------- select, piecewise

def test_select(fusion):
    a, x = pair((3, 4), "float64")
    b, y = pair((3, 4), "int64", seed=1)
    same(nf.select([a > 0, a < -1], [a, b]), onp.select([x > 0, x < -1], [x, y]))
    same(nf.select([a > 0, b > 0], [a * 2, 5], default=-1.5), onp.select([x > 0, y > 0], [x * 2, 5], default=-1.5))
    same(nf.select([a > 0], [b.astype("int8")], default=3), onp.select([x > 0], [y.astype("int8")], default=3))
    same(nf.select([a[0] > 0], [b]), onp.select([x[0] > 0], [y]))
    same(nf.select([a.T > 0], [a.T]), onp.select([x.T > 0], [x.T]))
    c, z = pair((3, 4), "bool", seed=2)
    same(nf.select([c, ~c], [c, c]), onp.select([z, ~z], [z, z]))


def test_select_errors():
    a, x = pair((3, 4))
    for cl, chl, exc in [([True], [1, 2], ValueError), ([], [], ValueError), (["int"], ["choice"], TypeError)]:
        cln = [x > 0 if c == "int" else c for c in cl]
        clf = [a > 0 if c == "int" else c for c in cl]
        with pytest.raises(exc):
            onp.select(cln if cl != ["int"] else [onp.ones(2, int)], chl if chl != ["choice"] else [x])
        with pytest.raises(exc):
            nf.select(clf if cl != ["int"] else [nf.ones(2, int)], chl if chl != ["choice"] else [a])


@pytest.mark.parametrize("dtype", ["float64", "int64", "float32"])
@pytest.mark.parametrize("view", ["plain", "T"])
def test_piecewise(dtype, view, fusion):
    a, x = pair((3, 4), dtype, view)
    same(nf.piecewise(a, [a < 0, a > 1], [-1, 2.5]), onp.piecewise(x, [x < 0, x > 1], [-1, 2.5]))
    same(nf.piecewise(a, [a < 0], [nf.negative, nf.positive]), onp.piecewise(x, [x < 0], [onp.negative, onp.positive]))
    same(nf.piecewise(a[0], a[0] > 0, [1, 0]), onp.piecewise(x[0], x[0] > 0, [1, 0]))
    same(nf.piecewise(a, [a[:, 0] > 0], [1, 0]), onp.piecewise(x, [x[:, 0] > 0], [1, 0]))
    with pytest.raises(IndexError):
        onp.piecewise(x, x > 0, [1, 0, 3, 4])
    with pytest.raises(IndexError):
        nf.piecewise(a, a > 0, [1, 0, 3, 4])
    same(nf.piecewise(a, [a > 0, a > 0.5], [1, 2]), onp.piecewise(x, [x > 0, x > 0.5], [1, 2]))


def test_piecewise_sqrt_and_errors():
    a, x = pair((10,), "float64")
    same(nf.piecewise(a, [a < 0], [0, nf.sqrt]), onp.piecewise(x, [x < 0], [0, onp.sqrt]))
    same(nf.piecewise(nf.asarray(2.0), True, [3.0]), onp.piecewise(onp.asarray(2.0), True, [3.0]))
    with pytest.raises(ValueError):
        onp.piecewise(x, [x < 0], [1, 2, 3])
    with pytest.raises(ValueError):
        nf.piecewise(a, [a < 0], [1, 2, 3])


@pytest.mark.fallback
def test_piecewise_lambda_fallback():
    a, x = pair((5,))
    with pytest.warns(nf.FallbackWarning):
        r = nf.piecewise(a, [a < 0], [lambda v: v.sum(), 1])
    same(r, onp.piecewise(x, [x < 0], [lambda v: v.sum(), 1]))


# -------------------------------------------------------------------- copyto

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", ["plain", "step", "T"])
def test_copyto(dtype, view, fusion):
    a, x = pair((6, 4), "float64", view)
    b, y = pair((6, 4), dtype, view, seed=1)
    nf.copyto(a, b)
    onp.copyto(x, y)
    same(a, x)
    c, z = pair(x.shape[1:], "float32", seed=2)
    nf.copyto(a, c, where=c > 0)
    onp.copyto(x, z, where=z > 0)
    same(a, x)
    nf.copyto(a, 2, where=[True] + [False] * (x.shape[1] - 1))
    onp.copyto(x, 2, where=[True] + [False] * (x.shape[1] - 1))
    same(a, x)
    nf.copyto(a, 1.5)
    onp.copyto(x, 1.5)
    same(a, x)


def test_copyto_casting_and_errors():
    a, x = pair((3, 4), "int64")
    b, y = pair((3, 4), "float64", seed=1)
    nf.copyto(a, b, casting="unsafe")
    onp.copyto(x, y, casting="unsafe")
    same(a, x)
    nf.copyto(a, 2.7, casting="unsafe")
    onp.copyto(x, 2.7, casting="unsafe")
    same(a, x)
    i8 = nf.zeros(3, "int8")
    for src, kw, exc in [(b, {}, TypeError), (1.5, {}, TypeError), (b[:, 0], {"casting": "unsafe"}, ValueError),
                         (b[:, :2], {"casting": "unsafe"}, ValueError),
                         (1, {"where": nf.asarray([1, 0, 1, 1])}, TypeError)]:
        with pytest.raises(exc):
            onp.copyto(x, onp.asarray(src) if isinstance(src, nf.ndarray) else src,
                       **{k: onp.asarray(v) for k, v in kw.items()} if "where" in kw else kw)
        with pytest.raises(exc):
            nf.copyto(a, src, **kw)
    with pytest.raises(OverflowError):
        onp.copyto(onp.zeros(3, "int8"), 300)
    with pytest.raises(OverflowError):
        nf.copyto(i8, 300)
    with pytest.raises(TypeError):
        nf.copyto([1, 2], 1)
    with pytest.raises(TypeError):
        onp.copyto([1, 2], 1)


def test_copyto_overlap():
    a, x = pair((6,), "int64")
    nf.copyto(a[1:], a[:-1])
    onp.copyto(x[1:], x[:-1])
    same(a, x)


# ------------------------------------------------------------- fill_diagonal

@pytest.mark.parametrize("shape,view", [((4, 4), "plain"), ((5, 3), "plain"), ((3, 5), "plain"), ((8, 3), "step"),
                                        ((3, 5), "T"), ((3, 3, 3), "plain"), ((3, 3, 3), "T"), ((0, 0), "plain")])
@pytest.mark.parametrize("val", [7, [1, 2], -1.5, [[3, 4, 5, 6]], []])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal(shape, view, val, wrap):
    a, x = pair(shape, "float64", view)
    if wrap and view != "plain" and not (x.flags.c_contiguous or len(shape) > 2):
        return  # (a fallback, tested below)
    r = nf.fill_diagonal(a, val, wrap)
    onp.fill_diagonal(x, val, wrap)
    assert r is None
    same(a, x)


def test_fill_diagonal_dtypes_and_errors(fusion):
    for dt in DTYPES:
        a, x = pair((5, 4), dt)
        nf.fill_diagonal(a, 1, True)
        onp.fill_diagonal(x, 1, True)
        same(a, x)
    with pytest.raises(ValueError):
        nf.fill_diagonal(nf.zeros(3), 1)
    with pytest.raises(ValueError):
        nf.fill_diagonal(nf.zeros((3, 3, 2)), 1)
    with pytest.raises(ValueError):
        onp.fill_diagonal(onp.zeros((3, 3, 2)), 1)


@pytest.mark.fallback
def test_fill_diagonal_wrap_noncontiguous_fallback():
    a, x = pair((20, 3), "float64", "step")
    with pytest.warns(nf.FallbackWarning):
        nf.fill_diagonal(a, 5, True)
    onp.fill_diagonal(x, 5, True)
    same(a, x)


# --------------------------------------------------- astype, require, isfortran

@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES + ["uint16"])
@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("view", ["plain", "T"])
def test_astype(src, dst, copy, view):
    a, x = pair((3, 4), src, view)
    same(nf.astype(a, dst, copy=copy), onp.astype(x, dst, copy=copy), a, x)


def test_astype_errors():
    with pytest.raises(TypeError):
        nf.astype([1, 2], "int64")
    with pytest.raises(TypeError):
        onp.astype([1, 2], "int64")
    with pytest.raises(ValueError):
        nf.astype(nf.zeros(3), "int64", device="gpu")
    assert nf.astype(onp.float64(1.5), "int64") == onp.astype(onp.float64(1.5), "int64")


@pytest.mark.parametrize("req", [None, "C", "F", ["A", "W"], ["O"], ["C", "O"], "FW", ["E", "C"], ["fortran"],
                                 ["CONTIGUOUS", "ALIGNED"]])
@pytest.mark.parametrize("view", ["plain", "step", "T"])
@pytest.mark.parametrize("dtype", [None, "float32"])
def test_require(req, view, dtype):
    a, x = pair((6, 4), "float64", view)
    same(nf.require(a, dtype, req), onp.require(x, dtype, req), a, x)
    b = nf.require([[1, 2], [3, 4]], dtype, req)
    same(b, onp.require([[1, 2], [3, 4]], dtype, req))


def test_require_errors():
    a, x = pair((2, 2))
    with pytest.raises(ValueError):
        onp.require(x, None, "CF")
    with pytest.raises(ValueError):
        nf.require(a, None, "CF")
    with pytest.raises(KeyError):
        nf.require(a, None, ["Z"])


def test_isfortran():
    for view in VIEWS:
        for shape in [(3, 4), (4,), (1, 3), (6, 4), (0, 3)]:
            a, x = pair(shape, "int64", view)
            assert nf.isfortran(a) == onp.isfortran(x)
    assert nf.isfortran(nf.asarray(1.0)) == onp.isfortran(onp.asarray(1.0))
    with pytest.raises(AttributeError):
        nf.isfortran([1, 2])


# -------------------------------------------------------------------- choose

@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose(mode, fusion):
    idx = nf.asarray([[0, 1, 2, 1], [2, 0, 1, 0], [1, 1, 0, 2]])
    ix = onp.asarray(idx)
    c = [pair((3, 4), dt, seed=k) for k, dt in enumerate(["float64", "int64", "float32"])]
    same(nf.choose(idx, [p[0] for p in c], mode=mode), onp.choose(ix, [p[1] for p in c], mode=mode))
    same(nf.choose(idx[0], [p[0] for p in c], mode=mode), onp.choose(ix[0], [p[1] for p in c], mode=mode))
    same(nf.choose(idx.T, [p[0].T for p in c], mode=mode), onp.choose(ix.T, [p[1].T for p in c], mode=mode))
    if mode != "raise":
        same(nf.choose(idx * 3 - 4, [p[0] for p in c[:2]], mode=mode),
             onp.choose(ix * 3 - 4, [p[1] for p in c[:2]], mode=mode))
    stacked, st = pair((3, 4), "bool", seed=5)
    same(nf.choose(idx[0], stacked, mode=mode), onp.choose(ix[0], st, mode=mode))
    out = nf.zeros((3, 4))
    r = nf.choose(idx, [p[0] for p in c], out=out, mode=mode)
    assert r is out
    same(out, onp.choose(ix, [p[1] for p in c], mode=mode))


def test_choose_errors():
    idx = nf.asarray([0, 3])
    with pytest.raises(ValueError):
        onp.choose(onp.asarray([0, 3]), [onp.zeros(2), onp.ones(2)])
    with pytest.raises(ValueError):
        nf.choose(idx, [nf.zeros(2), nf.ones(2)])
    with pytest.raises(TypeError):
        onp.choose(onp.asarray([0.0]), [onp.zeros(1)])
    with pytest.raises(TypeError):
        nf.choose(nf.asarray([0.0]), [nf.zeros(1)])
    with pytest.raises(ValueError):
        nf.choose(nf.asarray([0]), [nf.zeros(1)], mode="bad")


def test_all_listed_native():
    from numfuse import _lib_shape

    for name in _lib_shape.__all__:
        f = getattr(nf, name)
        assert f is getattr(_lib_shape, name)
        assert f.__doc__


@pytest.mark.parametrize("shape,axis", [((8, 4), None), ((8, 4), ()), ((1, 4), ()), ((1, 4), None), ((1, 4), 0)])
def test_squeeze_returns_the_array_itself_when_nothing_goes(shape, axis):
    # NumPy's squeeze gives back the very array when it removes no dimension
    # (fuzz seed 218839: a later `a.shape = ...` showed through the result).
    for lib in (onp, nf):
        a = lib.zeros(shape)
        r = a.squeeze(axis=axis)
        assert (r is a) == (onp.zeros(shape).squeeze(axis=axis).ndim == len(shape))
        assert (lib.squeeze(a, axis) is a) == (r is a)

"""convolve / correlate (a contraction over a sliding window) and histogram /
bincount (a fused compare-and-sum over a (bins, n) domain), against NumPy."""

import warnings

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same, raises_like, same_bits

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "float32", "float64"]


def rand(n, dtype, seed=0, lo=-5, hi=6):
    rng = onp.random.default_rng(seed)
    dt = onp.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) > 0.5
    if dt.kind == "u":
        return rng.integers(0, hi, n).astype(dt)
    if dt.kind == "i":
        return rng.integers(lo, hi, n).astype(dt)
    return (rng.random(n) * 2 - 1).astype(dt)


# -- convolve / correlate --------------------------------------------------------

SIZES = [(10, 3), (3, 10), (5, 5), (1, 1), (7, 4), (4, 7), (6, 1), (1, 6), (9, 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["convolve", "correlate"])
def test_convolve_correlate_modes(fn, dtype, fusion):
    for i, (n1, n2) in enumerate(SIZES):
        a, v = rand(n1, dtype, i), rand(n2, dtype, 100 + i)
        for mode in ("valid", "same", "full", 0, 1, 2):
            exp = getattr(onp, fn)(a, v, mode)
            got = getattr(nf, fn)(nf.asarray(a), nf.asarray(v), mode)
            assert isinstance(got, nf.ndarray)
            assert_same(got, exp, rtol=1e-5 if dtype == "float32" else None, atol=1e-6)


def test_convolve_correlate_default_modes_mixed_types_and_views():
    a, v = rand(12, "float64", 1), rand(4, "float32", 2)
    A, V = nf.asarray(a), nf.asarray(v)
    assert_same(nf.convolve(A, V), onp.convolve(a, v))
    assert_same(nf.correlate(A, V), onp.correlate(a, v))
    u8 = rand(8, "uint8", 3)
    i8 = rand(3, "int8", 4)
    assert_same(nf.convolve(nf.asarray(u8), nf.asarray(i8), "same"), onp.convolve(u8, i8, "same"))
    assert_same(nf.correlate(nf.asarray(u8), nf.asarray(v), "full"), onp.correlate(u8, v, "full"), rtol=1e-5)
    # reversed and strided views, and pending inputs
    assert_same(nf.convolve(A[::-1], V[::2], "full"), onp.convolve(a[::-1], v[::2], "full"))
    assert_same(nf.correlate(A[1::3], V[::-1], "same"), onp.correlate(a[1::3], v[::-1], "same"))
    B = nf.sqrt(nf.abs(A)) + 1
    assert_same(nf.convolve(B, V * 2, "same"), onp.convolve(onp.sqrt(onp.abs(a)) + 1, v * 2, "same"))
    # python sequences and scalars (convolve takes 0-d as 1-element)
    assert_same(nf.convolve([1, 2, 3], [0, 1, 0.5]), onp.convolve([1, 2, 3], [0, 1, 0.5]))
    assert_same(nf.convolve(3, [1, 2]), onp.convolve(3, [1, 2]))
    assert_same(nf.correlate([1, 2, 3], [1, 1], mode=2), onp.correlate([1, 2, 3], [1, 1], mode=2))
    # wrapping integer arithmetic like NumPy's
    big = onp.array([100, 120, 90], onp.int8)
    assert_same(nf.correlate(nf.asarray(big), nf.asarray(big), "full"), onp.correlate(big, big, "full"))


def test_convolve_is_one_contraction(lazy):
    a, v = rand(1000, "float64", 1), rand(7, "float64", 2)
    A, V = nf.asarray(a), nf.asarray(v)
    nf.flush()
    r = nf.correlate(A, V)  # valid: no padding, one contraction over the windows of A
    nf.flush()
    groups = nf.explain().groups
    assert len(groups) == 1 and groups[0]["ops"] == ["einsum"] and "md_hom" in groups[0]["mdh"]
    assert_same(r, onp.correlate(a, v))
    r = nf.convolve(A, V, "same")
    nf.flush()
    assert any("einsum" in g["ops"] for g in nf.explain().groups)
    assert_same(r, onp.convolve(a, v, "same"))


def test_convolve_correlate_errors_like_numpy():
    a, v = onp.array([1.0, 2, 3]), onp.array([1.0, 1])
    A, V = nf.asarray(a), nf.asarray(v)
    E, E2 = onp.array([]), onp.ones((2, 2))
    cases = [
        lambda m, a, v: m.correlate(a, v, mode="x"),
        lambda m, a, v: m.correlate(a, v, mode="f"),
        lambda m, a, v: m.correlate(a, v, mode="Valid"),
        lambda m, a, v: m.correlate(a, v, mode=5),
        lambda m, a, v: m.correlate(a, v, mode=None),
        lambda m, a, v: m.convolve(a, v, mode="bad"),
        lambda m, a, v: m.convolve(a, v, mode=3),
        lambda m, a, v: m.correlate(m.asarray(E), v),
        lambda m, a, v: m.correlate(a, m.asarray(E)),
        lambda m, a, v: m.convolve(m.asarray(E), v),
        lambda m, a, v: m.convolve(a[:1], m.asarray(E)),
        lambda m, a, v: m.correlate(a[0], v),
        lambda m, a, v: m.correlate(m.asarray(E2), v),
        lambda m, a, v: m.convolve(m.asarray(E2), v),
    ]
    for fn in cases:
        raises_like(lambda: fn(onp, a, v), lambda: fn(nf, A, V))


def test_convolve_error_leaves_pending_results_intact(fusion):
    def program(m):
        a = m.arange(10.0) * 0.5
        a[1:] += a[:-1]
        c = m.convolve(a, a[:3], "same")
        s = m.sqrt(a) + c
        with pytest.raises(ValueError):
            m.convolve(a, a[:0])
        with pytest.raises(ValueError):
            m.correlate(a, a[:3], mode="bogus")
        return a, c, s, m.correlate(s, c[:4], "full")

    assert_same(program(nf), program(onp))


def test_convolve_complex_falls_back():
    a = onp.array([1 + 1j, 2, 3j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nf.FallbackWarning)
        assert_same(nf.convolve(a, a), onp.convolve(a, a))
        assert_same(nf.correlate(a, a[:2], "same"), onp.correlate(a, a[:2], "same"))


# -- histogram ------------------------------------------------------------------------

def _hist_both(x, **kw):
    kw_nf = {k: (nf.asarray(v) if isinstance(v, onp.ndarray) else v) for k, v in kw.items()}
    exp = onp.histogram(x, **kw)
    got = nf.histogram(nf.asarray(x), **kw_nf)
    return got, exp


HIST_CASES = [
    dict(),
    dict(bins=1),
    dict(bins=7),
    dict(bins=64),
    dict(bins=5, range=(-0.5, 0.5)),
    dict(bins=4, range=(0, 10)),
    dict(bins=[-1, -0.5, 0, 0.25, 1]),
    dict(bins=[-0.3, 0.1, 0.2]),
    dict(density=True),
    dict(bins=6, density=True, range=(-1, 1)),
    dict(bins=[-1, 0, 0.1, 1], density=True),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "int8"])
@pytest.mark.parametrize("case", range(len(HIST_CASES)))
def test_histogram(case, dtype):
    kw = HIST_CASES[case]
    x = rand(500, dtype, case, lo=-20, hi=21)
    if onp.dtype(dtype).kind == "f":
        x[::50] = 0.5  # values exactly on (uniform) edges
    got, exp = _hist_both(x, **kw)
    assert isinstance(got, tuple) and len(got) == 2
    assert isinstance(got[0], nf.ndarray) and isinstance(got[1], nf.ndarray)
    assert_same(got, exp)


@pytest.mark.parametrize("wdtype", ["float64", "float32", "int32", "int64", "uint8", "bool"])
def test_histogram_weights(wdtype, fusion):
    x = rand(400, "float64", 1)
    w = rand(400, wdtype, 2, lo=-3, hi=4)
    for kw in (dict(bins=8), dict(bins=[-1, -0.2, 0.3, 1]), dict(bins=5, density=True), dict(range=(0, 1))):
        if wdtype == "bool" and not isinstance(kw.get("bins", 10), int):
            continue  # NumPy itself fails (cumsum of bool into a bool histogram)
        got, exp = _hist_both(x, weights=w, **kw)
        assert_same(got, exp, rtol=1e-5 if wdtype == "float32" or kw.get("density") else 1e-12)
    # uint8 weights that wrap in their own type, like NumPy's astype
    w8 = onp.full(400, 200, onp.uint8)
    got, exp = _hist_both(x, weights=w8, bins=3)
    assert_same(got, exp)
    # NaN weights only touch their own bin
    wn = rand(400, "float64", 3)
    wn[5] = onp.nan
    got, exp = _hist_both(x, weights=wn, bins=4)
    assert_same(got, exp)


def test_histogram_special_inputs():
    # 2-D input and weights are raveled; views and pending inputs
    x = rand(60, "float64", 1).reshape(6, 10)
    X = nf.asarray(x)
    assert_same(nf.histogram(X[::-1, ::2], bins=5), onp.histogram(x[::-1, ::2], bins=5))
    assert_same(nf.histogram(X * 2 + 1, bins=3, weights=X.T.T), onp.histogram(x * 2 + 1, bins=3, weights=x))
    # constant data (range widened by 0.5), empty data, single value
    for data in (onp.ones(10), onp.array([]), onp.array([3.0]), onp.array([1, 2, 2, 3], onp.int64)):
        assert_same(nf.histogram(nf.asarray(data)), onp.histogram(data))
        assert_same(nf.histogram(nf.asarray(data), bins=3, range=(0, 4)), onp.histogram(data, bins=3, range=(0, 4)))
    # NaN and inf outside an explicit range are not counted
    y = onp.array([0.1, onp.nan, 0.5, onp.inf, -onp.inf, 0.9, 1.0])
    assert_same(nf.histogram(nf.asarray(y), bins=4, range=(0, 1)), onp.histogram(y, bins=4, range=(0, 1)))
    # bool data: NumPy warns and counts as uint8
    b = onp.array([True, False, True, True])
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        got = nf.histogram(nf.asarray(b), bins=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        exp = onp.histogram(b, bins=2)
    assert_same(got, exp)
    # python lists, and numpy dispatch
    assert_same(nf.histogram([1, 2, 2, 5], bins=2), onp.histogram([1, 2, 2, 5], bins=2))
    r = onp.histogram(nf.asarray(x), bins=3)
    assert isinstance(r[0], nf.ndarray)
    assert_same(r, onp.histogram(x, bins=3))
    # large int64 values (edges in float64)
    big = onp.array([1, 2**60, 2**59, 7], onp.int64)
    assert_same(nf.histogram(nf.asarray(big), bins=3), onp.histogram(big, bins=3))


def test_histogram_is_one_fused_kernel(lazy):
    x = rand(5000, "float64", 7)
    X = nf.asarray(x)
    nf.flush()
    h, edges = nf.histogram(X, bins=16, range=(-1, 1))
    nf.flush()
    groups = nf.explain().groups
    assert len(groups) == 1
    ops = groups[0]["ops"]
    assert "sum" in ops and "greater_equal" in ops and "less" in ops and "md_hom" in groups[0]["mdh"]
    assert_same((h, edges), onp.histogram(x, bins=16, range=(-1, 1)))


def test_histogram_fallbacks():
    x = rand(300, "float64", 1)
    X = nf.asarray(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nf.FallbackWarning)
        for kw in (dict(bins="auto"), dict(bins="fd", range=(0, 1)), dict(bins=onp.linspace(-1, 1, 80)),
                   dict(bins=100, range=(onp.float32(-1), onp.float64(1)))):
            got = nf.histogram(X, **kw)
            exp = onp.histogram(x, **kw)
            assert_same(got, exp)
        c = onp.array([1.0, 2, 3])
        assert_same(nf.histogram(c, weights=c * 1j, bins=2), onp.histogram(c, weights=c * 1j, bins=2))


def test_histogram_errors_like_numpy():
    x = onp.array([1.0, 2, 3])
    X = nf.asarray(x)
    nan = onp.array([1.0, onp.nan])
    cases = [
        lambda m, x: m.histogram(x, bins=0),
        lambda m, x: m.histogram(x, bins=-3),
        lambda m, x: m.histogram(x, bins=[3, 1]),
        lambda m, x: m.histogram(x, bins=[[3, 1]]),
        lambda m, x: m.histogram(x, bins=2.5),
        lambda m, x: m.histogram(x, range=(3, 1)),
        lambda m, x: m.histogram(x, range=(0, onp.inf)),
        lambda m, x: m.histogram(x, weights=m.ones(2)),
        lambda m, x: m.histogram(m.asarray(nan)),
    ]
    for fn in cases:
        raises_like(lambda: fn(onp, x), lambda: fn(nf, X))


# -- bincount ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "uint32", "uint64", "bool"])
def test_bincount(dtype, fusion):
    x = rand(300, dtype, 1, lo=0, hi=20)
    X = nf.asarray(x)
    for kw in (dict(), dict(minlength=5), dict(minlength=40), dict(minlength=64)):
        got = nf.bincount(X, **kw)
        assert isinstance(got, nf.ndarray)
        assert_same(got, onp.bincount(x, **kw))
    w = rand(300, "float64", 2)
    assert_same(nf.bincount(X, weights=nf.asarray(w)), onp.bincount(x, weights=w))
    w32 = rand(300, "int32", 3)
    assert_same(nf.bincount(X, weights=nf.asarray(w32), minlength=30), onp.bincount(x, weights=w32, minlength=30))
    assert_same(nf.bincount(X[::-3]), onp.bincount(x[::-3]))


def test_bincount_special_inputs():
    assert_same(nf.bincount([1, 1, 3]), onp.bincount([1, 1, 3]))
    assert_same(nf.bincount(onp.array([0, 5, 5])), onp.bincount(onp.array([0, 5, 5])))
    assert_same(nf.bincount(nf.zeros(0, nf.int64), minlength=3), onp.bincount(onp.zeros(0, onp.int64), minlength=3))
    assert_same(nf.bincount(nf.zeros(0, nf.int64), weights=nf.zeros(0)), onp.bincount(onp.zeros(0, onp.int64),
                                                                                     weights=onp.zeros(0)))
    x = onp.array([2, 0, 2])
    w = onp.array([1.0, onp.nan, 2.0])
    assert_same(nf.bincount(nf.asarray(x), weights=nf.asarray(w)), onp.bincount(x, weights=w))
    # pending input
    X = nf.arange(12) % 5
    assert_same(nf.bincount(X * 2), onp.bincount((onp.arange(12) % 5) * 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nf.FallbackWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        assert_same(nf.bincount([]), onp.bincount([]))



def test_bincount_is_numfuse_s_routine(lazy):
    """bincount runs at the call (its values decide its size) as numfuse's
    routine: after it, nothing is pending and no kernel ran for it."""
    x = rand(2000, "int64", 3, lo=0, hi=30)
    X = nf.asarray(x)
    nf.flush()
    with nf.profile() as p:
        got = nf.bincount(X)
    assert p["tasks"] == 0 and p["kernels_run"] == 0 and p["tier0_ops"] == 0, dict(p)
    assert type(got) is nf.ndarray
    assert_same(got, onp.bincount(x))
    Y = X * 2  # a pending input is computed first
    assert_same(nf.bincount(Y, weights=Y), onp.bincount(x * 2, weights=x * 2))


@pytest.mark.fallback
def test_bincount_errors_like_numpy():
    x = onp.array([1, 2, 3])
    X = nf.asarray(x)
    cases = [
        lambda m, x: m.bincount(m.asarray(onp.array([-1, 2]))),
        lambda m, x: m.bincount(m.asarray(onp.array([1.0, 2.0]))),
        lambda m, x: m.bincount(m.asarray(onp.array([[1, 2]]))),
        lambda m, x: m.bincount(m.asarray(onp.array(3))),
        lambda m, x: m.bincount(m.asarray(onp.array([1, 2**63], onp.uint64))),
        lambda m, x: m.bincount(x, minlength=-1),
        lambda m, x: m.bincount(x, minlength=None),
        lambda m, x: m.bincount(x, minlength=2.0),
        lambda m, x: m.bincount(x, weights=m.ones(2)),
        lambda m, x: m.bincount(x, weights=m.ones((3, 1))),
        lambda m, x: m.bincount(x, weights=onp.ones(3) * 1j),
        lambda m, x: m.bincount([-1, 2]),
    ]
    for fn in cases:
        raises_like(lambda: fn(onp, x), lambda: fn(nf, X))


def test_bincount_error_leaves_pending_results_intact():
    def program(m):
        a = m.arange(10) % 4
        a[1:] += a[:-1]
        b = m.bincount(a)
        c = b * 2 + a.sum()
        with pytest.raises(ValueError):
            m.bincount(a - 5)
        with pytest.raises(TypeError):
            m.bincount(a * 0.5)
        return a, b, c, m.bincount(a, minlength=20)

    assert_same(program(nf), program(onp))


def test_main_paths_are_native():
    x = nf.asarray(rand(100, "float64", 1))
    i = nf.asarray(rand(100, "int64", 2, lo=0, hi=10))
    with warnings.catch_warnings():
        warnings.simplefilter("error", nf.FallbackWarning)
        results = [nf.convolve(x, x[:5]), nf.correlate(x, x[:5], "same"), nf.histogram(x, bins=8),
                   nf.histogram(x, bins=[-1, 0, 0.5, 1], weights=x, density=True), nf.bincount(i),
                   nf.bincount(i, weights=x, minlength=12)]
        nf.flush()
    assert len(results) == 6


# -- many bins: numfuse's histogram routine and scatter-add -------------------------------

def _edge_heavy(n, dtype, seed, bins, lo=-3.0, hi=5.0):
    """Data with many values exactly on the bin edges, at the range's ends,
    NaN and +-inf (outside any finite range)."""
    rng = onp.random.default_rng(seed)
    dt = onp.dtype(dtype)
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -50, 120, n).astype(dt)
    x = (rng.random(n) * (hi - lo) + lo).astype(dt)
    edges = onp.linspace(lo, hi, bins + 1).astype(dt)
    x[::7] = edges[rng.integers(0, bins + 1, x[::7].size)]
    x[1::97] = onp.nan
    x[2::101] = onp.inf
    x[3::103] = -onp.inf
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16", "uint8"])
@pytest.mark.parametrize("bins", [65, 100, 1000, 4097])
@pytest.mark.parametrize("n", [1000, 150_000])  # (one block of NumPy's 65,536, three)
def test_histogram_many_equal_bins_to_the_bit(dtype, bins, n):
    x = _edge_heavy(n, dtype, bins, bins)
    X = nf.asarray(x)
    ranges = [(-3, 5), (-2.75, 4.5), (0.1, 0.7)]
    if onp.dtype(dtype).kind in "iu":
        ranges = [(0, 100), (-10.5, 99.5)]
    else:
        ranges.append(None)  # (range from the data: NaN and inf make NumPy refuse, so the finite part)
    for r in ranges:
        data, D = (x, X) if r is not None else (x[onp.isfinite(x)], X[nf.isfinite(X)])
        if r is None and data.size == 0:
            continue
        got = nf.histogram(D, bins=bins, range=r)
        exp = onp.histogram(data, bins=bins, range=r)
        assert type(got[0]) is nf.ndarray
        same_bits(got[0], exp[0])
        same_bits(got[1], exp[1])


@pytest.mark.parametrize("wdtype", ["float64", "float32", "int32", "uint8"])
def test_histogram_many_bins_weights_to_the_bit(wdtype):
    """Weight sums in NumPy's order: each block of 65,536 values summed in
    float64 in order, cast to the weights' type, added in block order."""
    n = 200_000
    x = _edge_heavy(n, "float64", 5, 300)
    w = rand(n, wdtype, 6, lo=-50, hi=50) * (1 if wdtype[0] in "iu" else 1000)
    if wdtype[0] == "f":
        w = (w + onp.float64(1e-3) * onp.arange(n)).astype(wdtype)  # (sums that round)
    for kw in (dict(bins=300, range=(-3, 5)), dict(bins=777, range=(-1.0, 1.0), density=True)):
        got = nf.histogram(nf.asarray(x), weights=nf.asarray(w), **kw)
        exp = onp.histogram(x, weights=w, **kw)
        same_bits(got[0], exp[0])
        same_bits(got[1], exp[1])


def test_histogram_many_bins_float32_guess_precision():
    """float32 data, range from the data (NumPy's float32 scalars: the bin
    guess in float32) and from Python floats (float64 guess)."""
    rng = onp.random.default_rng(11)
    x = (rng.random(300_000) * 1e4).astype(onp.float32)
    x[::3] = onp.float32(1e4) * (rng.integers(0, 2001, x[::3].size) / onp.float32(2000))  # (near edges)
    for kw in (dict(bins=2000), dict(bins=2000, range=(0.0, 1e4)), dict(bins=999, range=(5, 9000))):
        got = nf.histogram(nf.asarray(x), **kw)
        exp = onp.histogram(x, **kw)
        same_bits(got[0], exp[0])
        same_bits(got[1], exp[1])


def test_histogram_many_bins_pending_views_and_special_inputs():
    x = rand(9000, "float64", 4)
    X = nf.asarray(x)
    assert_same(nf.histogram(X[::-3] * 2 + 1, bins=500), onp.histogram(x[::-3] * 2 + 1, bins=500))
    c = onp.full(100, 2.5)
    assert_same(nf.histogram(nf.asarray(c), bins=200), onp.histogram(c, bins=200))  # (range 2.0 .. 3.0)
    assert_same(nf.histogram(nf.zeros(0), bins=100), onp.histogram(onp.zeros(0), bins=100))
    b = onp.array([True, False, True] * 40)
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        got = nf.histogram(nf.asarray(b), bins=70)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(got, onp.histogram(b, bins=70))
    y = X * 3
    nf.histogram(X, bins=1000)  # (an earlier pending result stays right)
    assert_same(y, x * 3)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "uint16", "bool"])
def test_bincount_many_bins(dtype):
    x = rand(100_000, dtype, 7, lo=0, hi=300)
    X = nf.asarray(x)
    for kw in (dict(), dict(minlength=1000)):
        got = nf.bincount(X, **kw)
        assert type(got) is nf.ndarray
        assert_same(got, onp.bincount(x, **kw))
    w = rand(100_000, "float64", 8) * 1e3 + onp.arange(100_000) * 1e-4  # (sums that round: NumPy's order)
    same_bits(nf.bincount(X, weights=nf.asarray(w), minlength=500), onp.bincount(x, weights=w, minlength=500))
    w16 = rand(100_000, "int16", 9, lo=-100, hi=100)
    same_bits(nf.bincount(X[::-1], weights=nf.asarray(w16)[::-1]), onp.bincount(x[::-1], weights=w16[::-1]))
    big = onp.array([0, 100, 3])
    assert_same(nf.bincount(nf.asarray(big)), onp.bincount(big))
    assert_same(nf.bincount(nf.asarray(big) * 2, weights=nf.ones(3)), onp.bincount(big * 2, weights=onp.ones(3)))

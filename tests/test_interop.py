"""numfuse arrays in the libraries around NumPy: scipy, matplotlib,
scikit-learn, pickle and copy (pandas, numba, DLPack and the buffer
protocol: tests/test_sharing.py). Each takes a numfuse array where it
takes a NumPy array, computes what it computes for the NumPy array, and
pending work is computed first."""

import copy
import io
import pickle

import numpy as onp
import pytest

import numfuse as nf

RNG = onp.random.default_rng(3)


def test_pickle_round_trip_keeps_values_dtype_and_layout(fusion):
    for x in (RNG.standard_normal((4, 5)), onp.arange(12, dtype=onp.int32).reshape(3, 4).T,
              onp.array([True, False]), onp.float32(2.5) * onp.ones(3, dtype=onp.float32)):
        a = nf.asarray(x) * 1  # pending: pickling computes it
        want = x * 1
        b = pickle.loads(pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(b) is nf.ndarray and b.dtype == want.dtype and b.shape == want.shape
        assert b.flags.c_contiguous == want.flags.c_contiguous and b.flags.f_contiguous == want.flags.f_contiguous
        onp.testing.assert_array_equal(onp.asarray(b), want)
        c = copy.deepcopy(a)
        assert type(c) is nf.ndarray and not nf.shares_memory(c, a)
        onp.testing.assert_array_equal(onp.asarray(c), x * 1)


def test_scipy_functions_take_numfuse_arrays():
    import scipy.linalg
    import scipy.ndimage
    import scipy.signal
    import scipy.stats

    x = RNG.standard_normal((6, 6))
    a = nf.asarray(x) + 0.0
    onp.testing.assert_allclose(scipy.linalg.inv(a + 6 * nf.eye(6)), scipy.linalg.inv(x + 6 * onp.eye(6)))
    onp.testing.assert_allclose(scipy.ndimage.gaussian_filter(a, 1.0), scipy.ndimage.gaussian_filter(x, 1.0))
    onp.testing.assert_allclose(scipy.signal.convolve(a[0], a[1]), scipy.signal.convolve(x[0], x[1]))
    assert scipy.stats.describe(a.ravel()).mean == pytest.approx(scipy.stats.describe(x.ravel()).mean)


def test_matplotlib_plots_numfuse_arrays():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = nf.linspace(0.0, 1.0, 200)
    y = nf.sin(2 * nf.pi * t) * nf.exp(-t)  # pending when plotted
    fig, ax = plt.subplots()
    (line,) = ax.plot(t, y)
    ax.imshow(nf.outer(y, y))
    ax.hist(nf.asarray(RNG.standard_normal(500)), bins=10)
    onp.testing.assert_allclose(line.get_ydata(), onp.sin(2 * onp.pi * onp.linspace(0, 1, 200)) *
                                onp.exp(-onp.linspace(0, 1, 200)))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scikit_learn_fits_on_numfuse_arrays():
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import StandardScaler

    x = RNG.standard_normal((100, 3))
    y = x @ onp.array([1.0, -2.0, 0.5]) + 3.0
    X, Y = nf.asarray(x) * 1.0, nf.asarray(y) + 0.0
    model = LinearRegression().fit(X, Y)
    onp.testing.assert_allclose(model.coef_, [1.0, -2.0, 0.5], atol=1e-10)
    assert model.intercept_ == pytest.approx(3.0)
    onp.testing.assert_allclose(model.predict(X[:5]), y[:5])
    onp.testing.assert_allclose(StandardScaler().fit_transform(X), StandardScaler().fit_transform(x))

"""Sharing numfuse's memory the standard ways: the buffer protocol,
__array_interface__, DLPack, .data / .ctypes, and the libraries that use
them (NumPy, pandas, numba, ctypes).

Every test checks both directions of NumPy's semantics for a view: the
consumer sees numfuse's current values (pending operations ran first), and
numfuse sees the consumer's writes, in program order: an operation recorded
before the export reads the values from before the consumer's write, one
recorded while the memory is shared runs at once.
"""

import ctypes
import gc

import numpy as onp
import pytest

import numfuse as nf
from numfuse import _core

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


def _values(dtype, n=6):
    return (onp.arange(n) % 2 == 1) if dtype == "bool" else onp.arange(1, n + 1).astype(dtype)


# ---------------------------------------------------------------------------
# Buffer protocol


@pytest.mark.parametrize("dtype", DTYPES)
def test_memoryview_describes_the_array_like_numpys(dtype):
    want = _values(dtype).reshape(2, 3)
    x = nf.array(want)
    m, n = memoryview(x), memoryview(want)
    assert (m.format, m.itemsize, m.shape, m.strides, m.readonly, m.ndim) == (
        n.format, n.itemsize, n.shape, n.strides, n.readonly, n.ndim)
    assert m.tolist() == n.tolist()


def test_memoryview_of_strided_and_read_only_views():
    base = onp.arange(24.0).reshape(4, 6)
    x = nf.array(base)
    for index in [(slice(None, None, 2), slice(1, None, 3)), (slice(None), slice(None, None, -1)), (1,)]:
        m, n = memoryview(x[index]), memoryview(base[index])
        assert (m.shape, m.strides) == (n.shape, n.strides)
        assert m.tolist() == n.tolist()
    t = memoryview(x.T)
    assert t.strides == memoryview(base.T).strides and t.tolist() == base.T.tolist()
    r = nf.broadcast_to(nf.arange(3.0), (2, 3))
    mr = memoryview(r)
    assert mr.readonly and mr.strides == (0, 8) and mr.tolist() == [[0.0, 1.0, 2.0]] * 2
    # a writable buffer of read-only memory is refused, as NumPy refuses it
    with pytest.raises(TypeError):
        ctypes.c_double.from_buffer(r)
    # a C-contiguous buffer of a strided view is refused
    with pytest.raises(TypeError):
        ctypes.c_double.from_buffer(x[:, ::2])


@pytest.mark.parametrize("tier", ["lazy", "auto"])
def test_buffer_export_runs_pending_work_and_keeps_program_order(tier):
    with nf.config(tier=tier):
        x = nf.arange(8.0) * 2.0          # pending in tier lazy
        before = x + 1.0                  # reads x: recorded before the export
        m = memoryview(x)                 # the export runs both first
        assert m.tolist() == [2.0 * i for i in range(8)]
        m[0] = 100.0                      # an outside write...
        assert float(before[0]) == 1.0    # ...does not reach a read recorded before it
        after = x + 1.0                   # ...and is seen by one recorded after it
        assert float(after[0]) == 101.0
        x += 1.0                          # numfuse's write, while shared: visible at once
        assert m[0] == 101.0 and m[7] == 15.0
        assert _core.pending() == 0
        del m
        gc.collect()
    # released: operations on x are recorded (and fused) again
    with nf.config(tier="lazy"):
        x *= 2.0
        assert _core.pending() == 1
        nf.flush()
    assert x.tolist()[:2] == [202.0, 6.0]


def test_ctypes_writes_and_data_memoryview():
    x = nf.arange(6.0)
    p = x.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
    p[2] = 42.0
    assert x.tolist() == [0.0, 1.0, 42.0, 3.0, 4.0, 5.0]
    assert isinstance(x.data, memoryview) and x.data.tolist() == x.tolist()
    c = ctypes.c_double.from_buffer(x)   # a writable buffer of numfuse's memory
    c.value = -1.0
    assert float(x[0]) == -1.0


# ---------------------------------------------------------------------------
# NumPy views and __array_interface__


def test_numpy_view_observes_numfuse_writes_and_numfuse_sees_numpy_writes():
    with nf.config(tier="lazy"):
        x = nf.zeros(5)
        v = onp.asarray(x)
        assert v.flags.writeable and not v.flags.owndata
        x[2] = 7.0
        assert v[2] == 7.0
        x *= 3.0
        assert v.tolist() == [0.0, 0.0, 21.0, 0.0, 0.0]
        v[0] = 1.0
        assert (x + 0.0).tolist() == [1.0, 0.0, 21.0, 0.0, 0.0]
        assert onp.shares_memory(v, onp.asarray(x))


def test_array_interface():
    x = nf.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ai = x.__array_interface__
    assert ai["shape"] == (2, 3) and ai["typestr"] == "<f8" and ai["strides"] is None and ai["version"] == 3
    assert ai["data"][1] is False
    t = x.T.__array_interface__
    assert t["strides"] == (8, 24)

    class Holder:  # an object exposing only the interface, as other libraries do
        def __init__(self, a):
            self.__array_interface__ = a.__array_interface__
            self.keep = a

    y = nf.arange(4, dtype=nf.int32) + 1
    h = onp.asarray(Holder(y))
    assert h.dtype == onp.int32 and h.tolist() == [1, 2, 3, 4]
    h[1] = 20
    assert y.tolist() == [1, 20, 3, 4]
    y += 1    # shared for good: runs at once, visible through the interface
    assert h.tolist() == [2, 21, 4, 5]


# ---------------------------------------------------------------------------
# DLPack


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_to_numpy_shares_memory(dtype):
    x = nf.array(_values(dtype))
    y = onp.from_dlpack(x)
    assert y.dtype == onp.dtype(dtype) and y.tolist() == _values(dtype).tolist()
    assert onp.shares_memory(y, onp.asarray(x))
    assert x.__dlpack_device__() == (1, 0)


def test_dlpack_both_ways_strided_readonly_copy():
    with nf.config(tier="lazy"):
        x = nf.arange(12.0).reshape(3, 4)
        pending = x * 2.0                           # not computed yet
        y = onp.from_dlpack(pending)
        assert y.tolist() == (onp.arange(12.0).reshape(3, 4) * 2).tolist()
        y[0, 0] = -5.0
        assert float(pending[0, 0]) == -5.0
        s = onp.from_dlpack(x[:, ::2])               # strided
        assert s.strides == (32, 16) and s.tolist() == onp.arange(12.0).reshape(3, 4)[:, ::2].tolist()
        c = onp.from_dlpack(x, copy=True)            # its own copy
        c[0, 1] = 99.0
        assert float(x[0, 1]) == 1.0
        r = nf.broadcast_to(nf.arange(3.0), (2, 3))  # read-only: versioned capsules say so
        ro = onp.from_dlpack(r)
        assert not ro.flags.writeable and ro.tolist() == [[0.0, 1.0, 2.0]] * 2
        with pytest.raises(BufferError):
            r.__dlpack__()                           # an unversioned capsule cannot
        with pytest.raises(ValueError):
            x.__dlpack__(stream=1)
        with pytest.raises(BufferError):
            x.__dlpack__(dl_device=(2, 0))


def test_from_dlpack_shares_foreign_memory():
    a = onp.arange(6.0)
    x = nf.from_dlpack(a)
    assert type(x) is nf.ndarray and x.tolist() == a.tolist()
    a[0] = 10.0                      # the owner writes: numfuse reads it
    assert float((x + 1.0)[0]) == 11.0
    x *= 2.0                         # numfuse writes: the owner sees it at once
    assert a.tolist() == [20.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    c = nf.from_dlpack(a, copy=True)
    a[1] = -1.0
    assert float(c[1]) == 2.0
    assert nf.from_dlpack(x) is x
    # a numfuse array through DLPack and back: the same memory
    z = nf.from_dlpack(onp.from_dlpack(x))
    z[3] = 0.5
    assert float(x[3]) == 0.5 and a[3] == 0.5


def test_unconsumed_capsules_release_their_export():
    with nf.config(tier="lazy"):
        x = nf.arange(4.0)
        nf.flush()
        for kw in ({}, {"max_version": (1, 0)}):
            cap = x.__dlpack__(**kw)
            x += 1.0
            assert _core.pending() == 0      # shared while the capsule lives
            del cap
            gc.collect()
            x += 1.0
            assert _core.pending() == 1      # released: recorded again
            nf.flush()
        assert x.tolist() == [4.0, 5.0, 6.0, 7.0]


# ---------------------------------------------------------------------------
# Libraries


def test_pandas_writes_through():
    pd = pytest.importorskip("pandas")
    x = nf.arange(5.0)
    s = pd.Series(x)
    s.iloc[0] = 42.0
    assert float(x[0]) == 42.0
    df = pd.DataFrame({"a": nf.arange(3.0)})
    assert df["a"].tolist() == [0.0, 1.0, 2.0]


def test_numba_function_writes_into_a_numfuse_array():
    numba = pytest.importorskip("numba")

    @numba.njit(cache=False)
    def fill(a, k):
        for i in range(a.shape[0]):
            a[i] = a[i] * k + i

    with nf.config(tier="lazy"):
        x = nf.arange(6.0) + 1.0         # pending
        fill(onp.asarray(x), 10.0)
        assert x.tolist() == [10.0, 21.0, 32.0, 43.0, 54.0, 65.0]
        y = x * 2.0                       # recorded after the outside writes: sees them
        assert y.tolist() == [20.0, 42.0, 64.0, 86.0, 108.0, 130.0]


# ---------------------------------------------------------------------------
# .base and flags.owndata


BASE_CASES = [
    ("slice", lambda m, x: x[2:]),
    ("slice of slice", lambda m, x: x[2:][1:]),
    ("reshape", lambda m, x: x.reshape(3, 4)),
    ("transpose of reshape", lambda m, x: x.reshape(3, 4).T),
    ("ravel", lambda m, x: x.ravel()),
    ("element view", lambda m, x: x.reshape(3, 4)[1]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 12))),
    ("copy", lambda m, x: x.copy()),
    ("arithmetic", lambda m, x: x + 1.0),
    ("astype", lambda m, x: x.astype(m.float32)),
    ("reduction", lambda m, x: x.reshape(3, 4).sum(axis=0)),
    ("fancy copy of transposed", lambda m, x: m.ascontiguousarray(x.reshape(3, 4).T)),
]


@pytest.mark.parametrize("name,f", BASE_CASES, ids=[c[0] for c in BASE_CASES])
def test_base_and_owndata_like_numpy(name, f):
    n = onp.arange(12.0)
    x = nf.arange(12.0)
    rn, rx = f(onp, n), f(nf, x)
    assert (rx.base is None) == (rn.base is None), name
    assert rx.flags.owndata == rn.flags.owndata, name
    if rn.base is n:
        assert rx.base is x  # the owner, also for views of views
    assert rx.tolist() == rn.tolist()


def test_base_keeps_its_owner_alive():
    x = nf.arange(6.0)
    y = x[1:]
    del x
    gc.collect()
    assert y.base is not None and y.base.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert y.base.base is None

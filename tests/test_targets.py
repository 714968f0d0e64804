"""Targets (pipeline/target.h): choosing one, what happens where one is
unavailable, and the CUDA target's kernels run on the emulated device --
the same CUDA text NVRTC compiles, with device memory of its own -- against
NumPy and against the CPU target.

The CUDA target cannot run here (no GPU, no driver): what can be proven
without one is (1) every kernel's text compiles with NVRTC for sm_80 and
sm_90 with no register spill (the check, on for the tests here that make
kernels), and (2) the same text, run on the emulated device, computes
NumPy's results, with device memory that is not the host's: a copy to or
from the device that is missing shows as wrong values (the emulated device
fills fresh device memory, and a host copy that goes stale, with 0xff
bytes: NaN in floats, -1 in integers).
"""

import os
import re
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import numfuse as nf

from conftest import assert_same

RNG = onp.random.default_rng(3)


@pytest.fixture
def emulated(tmp_path):
    """The emulated CUDA target, every kernel compiled now (an empty kernel
    cache) and also by NVRTC for sm_80 and sm_90 (where NVRTC is installed)."""
    check = nf._core.nvrtc_info()["available"]
    old = nf._core.cuda_check_stats()["archs"]
    if check:
        nf._core.set_cuda_check([80, 90])
    nf._core.clear_kernel_cache()
    try:
        with nf.config(target="cuda-emulated", tier="lazy", cache_dir=tmp_path):
            yield check
    finally:
        nf._core.set_cuda_check(old)


def device():
    return nf._core.device_stats("cuda-emulated")


# -- choosing a target --------------------------------------------------------

def test_targets_and_their_availability():
    t = nf.targets()
    assert list(t) == ["cpu", "cuda", "cuda-emulated"]
    assert t["cpu"] == "" and t["cuda-emulated"] == ""
    info = nf._core.cuda_info()
    assert (t["cuda"] == "") == (info["available"] and nf._core.nvrtc_info()["available"])
    if not info["available"]:
        assert t["cuda"] and ("driver" in t["cuda"] or "GPU" in t["cuda"]), t["cuda"]


def test_unknown_target_is_an_error_and_changes_nothing():
    before = nf.get_target()
    with pytest.raises(ValueError, match="unknown numfuse target 'gpu'.*cpu, cuda, cuda-emulated"):
        nf.set_target("gpu")
    with pytest.raises(ValueError):
        nf.set_option("target", "tpu")
    assert nf.get_target() == before


@pytest.mark.skipif(nf.targets()["cuda"] == "", reason="a GPU is here: the CUDA target is available")
def test_unavailable_cuda_says_why_and_changes_nothing():
    before = nf.get_target()
    with pytest.raises(RuntimeError, match="cannot run here: " + nf.targets()["cuda"][:20]):
        nf.set_target("cuda")
    assert nf.get_target() == before
    a = nf.arange(10.0)
    assert_same(a * 2, onp.arange(10.0) * 2)


def test_config_context_manager_sets_and_restores_the_target():
    before = nf.get_target()
    for t in ("cuda-emulated", "cpu"):
        with nf.config(target=t):
            assert nf.get_target() == t and nf.get_option("target") == t
        assert nf.get_target() == before


def test_show_config_reports_the_targets():
    d = nf.show_config(mode="dicts")
    assert d["Targets"]["target"] == nf.get_target()
    assert d["Targets"]["cpu"] == "available" and d["Targets"]["cuda-emulated"] == "available"
    assert d["Targets"]["cuda"].startswith("available") or d["Targets"]["cuda"].startswith("unavailable: ")
    assert "nvrtc" in d["CUDA"] and "device" in d["CUDA"]


def _run(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True, text=True,
                          timeout=120)


def test_environment_variable_selects_the_target_and_refuses_unknown_names(tmp_path):
    r = _run("import numfuse as nf; print(nf.get_target())", NUMFUSE_TARGET="cuda-emulated",
             NUMFUSE_CACHE_DIR=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "cuda-emulated", r.stderr
    r = _run("import numfuse", NUMFUSE_TARGET="anything", NUMFUSE_CACHE_DIR=str(tmp_path))
    assert r.returncode != 0 and "unknown numfuse target 'anything'" in r.stderr


# -- the emulated device -------------------------------------------------------

def program(lib, x, y, k):
    # maps, broadcasting, slices, a reduction fused with its producer, an
    # axis reduction, integer arithmetic, where, comparison, casts
    a = lib.sqrt(x * y + 1.5) - lib.exp(-x) * k
    b = a[1:, :] - a[:-1, :]
    s = (b * b).sum()
    m = lib.maximum(a, 0.25).max(axis=0)
    i = (x > 0.5).astype(lib.int32) * 7 // 3 - (y < 0.25)
    w = lib.where(b > 0, b, -b / 2)
    return a, s, m, i, w.mean(axis=1)


def test_emulated_kernels_match_numpy_and_the_cpu(emulated):
    x, y = RNG.random((37, 53)), RNG.random((37, 53))
    expected = program(onp, x, y, 2.5)
    got = program(nf, nf.asarray(x), nf.asarray(y), 2.5)
    nf.flush()
    groups = nf.explain().groups
    assert groups and all(g["target"] == "cuda-emulated" for g in groups if g["target"]), groups
    assert "on cuda-emulated" in str(nf.explain())
    for g, e in zip(got, expected):
        assert_same(g, e, atol=1e-14)  # (exp's last bit is not NumPy's: the differences cancel)
    with nf.config(target="cpu"):
        cpu = program(nf, nf.asarray(x), nf.asarray(y), 2.5)
    for g, c in zip(got, cpu):
        # (exp is libm's on the emulated device, libmvec's vector form on the
        # CPU: their last bits may differ; everything else is the same bits)
        assert_same(g, onp.asarray(c), atol=1e-14)
    assert onp.array_equal(onp.asarray(got[3]), onp.asarray(cpu[3]))
    if emulated:
        assert nf._core.cuda_check_stats()["kernels"] > 0


def test_results_stay_on_the_device_until_the_host_reads_them(emulated):
    x = RNG.random(10_000)
    a = nf.asarray(x.copy())
    nf.flush()
    d0 = device()
    for k in range(5):
        a = a * 1.5 + k  # each flush reads the previous one's result on the device
        nf.flush()
    d1 = device()
    assert d1["launches"] > d0["launches"]
    # The input is uploaded once; the results never come back until read.
    assert d1["uploads"] - d0["uploads"] == 1, (d0, d1)
    assert d1["downloads"] == d0["downloads"]
    ref = x.copy()
    for k in range(5):
        ref = ref * 1.5 + k
    assert_same(a, ref)
    assert device()["downloads"] == d1["downloads"] + 1


def test_an_input_is_uploaded_once_not_per_kernel(emulated):
    x = RNG.random(5_000)
    X = nf.asarray(x)  # (a copy: numfuse's own memory)
    d0 = device()
    outs = [X * k for k in range(4)] + [X.sum(), (X - 1).max()]  # several kernels reading X
    nf.flush()
    outs2 = [X + k for k in range(3)]  # and the next flush's
    nf.flush()
    d1 = device()
    assert d1["uploads"] - d0["uploads"] == 1, (d0, d1)
    for o, e in zip(outs + outs2, [x * k for k in range(4)] + [x.sum(), (x - 1).max()] + [x + k for k in range(3)]):
        assert_same(o, e)


def test_a_map_kernel_is_one_launch(emulated):
    # The extents and share counts every phase computes itself: a map kernel
    # launches its grid phase alone, with no frame; a full reduction has five
    # phases: the partials' allocation and start value (one thread), the
    # other shares' start values (a grid), the shares (a block each), their
    # fold (a block), the result's store (one thread).
    x = RNG.random(5_000)
    X = nf.asarray(x)
    nf.flush()
    cases = [("map", lambda m, a: m.sqrt(a) * 2 + 1, 1),
             ("reduction", lambda m, a: (a * 2).sum(), 5)]
    for name, f, launches in cases:
        d0 = device()
        got = f(nf, X)
        nf.flush()
        d1 = device()
        assert d1["launches"] - d0["launches"] == launches, (name, d0, d1)
        assert d1["block_launches"] - d0["block_launches"] == (2 if name == "reduction" else 0)
        assert_same(got, f(onp, x))


def test_device_memory_comes_back_from_the_pool(emulated):
    # A loop's temporaries take the blocks the last iteration's freed: after
    # the first iteration nothing more is taken from the device.
    x = RNG.random(20_000)
    X = nf.asarray(x)
    acc = nf.zeros_like(X)
    e = onp.zeros_like(x)
    nf.flush()
    allocs = []
    for k in range(5):
        acc = acc + nf.sqrt(X * k + 1) * 2  # (a temporary each iteration, freed by the next)
        nf.flush()
        e = e + onp.sqrt(x * k + 1) * 2
        allocs.append(device()["device_allocs"])
    assert allocs[1] == allocs[-1], allocs
    assert device()["pool_hits"] > 0
    assert_same(acc, e)
    # trim gives the free blocks back; the results stay.
    nf._core.device_trim("cuda-emulated")
    assert device()["pool_bytes"] == 0
    assert_same(acc, e)


def test_out_of_device_memory_is_a_memory_error_with_nothing_lost(emulated):
    x = RNG.random(3_000)
    X = nf.asarray(x)
    y = X * 2
    nf.flush()
    z = y + 1
    nf._core._inject_allocation_failure(0)
    try:
        with pytest.raises(MemoryError):
            nf.flush()
    finally:
        nf._core._inject_allocation_failure(-1)
    assert_same(y, x * 2)
    assert_same(z, x * 2 + 1)  # (put back by the failed flush, computed now)


def test_memory_numpy_sees_is_brought_again_at_every_flush(emulated):
    # NumPy may write exported memory whenever Python runs: operations on it
    # run at once (each its own flush), and each flush brings it again.
    X = nf.asarray(RNG.random(5_000)) + 0
    nf.flush()
    v = onp.asarray(X)  # exported: NumPy's view of X's memory
    x0 = v.copy()
    d0 = device()
    with nf.profile() as p:
        outs = [X * k for k in range(4)] + [X.sum(), (X - 1).max()]
    d1 = device()
    assert p["flushes"] >= 6 and d1["uploads"] - d0["uploads"] == 6, (dict(p), d0, d1)  # once per kernel
    for o, e in zip(outs, [x0 * k for k in range(4)] + [x0.sum(), (x0 - 1).max()]):
        assert_same(o, e)
    v[:] = 7.0  # NumPy writes the memory: the next operation sees it
    assert_same(X + 1, onp.full(5_000, 8.0))


def test_writes_to_memory_numpy_sees_come_back_at_once(emulated):
    X = nf.asarray(onp.arange(12.0)) * 1
    v = onp.asarray(X)  # exported
    X *= 2
    X[3:6] += X[6:9]
    nf.flush()
    e = onp.arange(12.0) * 2
    e[3:6] += e[6:9]
    assert onp.array_equal(v, e)  # NumPy's view of the memory, without a read through numfuse
    X += 1
    nf.flush()
    assert onp.array_equal(v, e + 1)


def test_a_stale_host_copy_shows_if_read_without_the_copy_back(emulated):
    # The emulated device poisons the host copy of a buffer the device wrote
    # (0xff bytes): the values below are right only because every host read
    # brings the device copy back first.
    a = nf.asarray(RNG.random(1000)) * 3
    nf.flush()
    b = a + 1  # the device reads a again (no copy needed)
    nf.flush()
    assert not onp.isnan(onp.asarray(b)).any()
    assert float(a[10]) == float(onp.asarray(a)[10])
    assert a.tolist()[0] == onp.asarray(a)[0]


def test_tier0_runs_on_the_host_with_device_results_and_a_matmul_stays_on_the_device(emulated):
    a = nf.asarray(RNG.random((30, 30))) + 1  # a kernel on the device
    nf.flush()
    with nf.config(tier="eager"):
        b = a * 2  # tier 0 reads the device's result on the host
    d0 = device()
    c = a @ a  # not the host's BLAS: the device's tiles (gpu_tiles)
    nf.flush()
    groups = [g for g in nf.explain().groups if g["ops"]]
    assert all(g["target"] == "cuda-emulated" and not g["target_note"] for g in groups), groups
    assert _tile_launches(d0) == 1
    text = str(nf.explain())
    (tile,) = _block_tiles()
    assert f"on the device: 2 launches: a thread per iteration; then a block of {tile[-1]} threads per " \
           "iteration, sharing memory" in text, text  # (the output's start values, then the tiles)
    e = onp.asarray(a)
    assert_same(b, e * 2)
    assert_same(c, e @ e)


_TILES = re.compile(r"block tiles \(grid loops in (\d+) x (\d+) tiles, (\d+) threads of (\d+) x (\d+), "
                    r"k (\d+) deep in shared memory\)")


def _block_tiles():
    # The block tiles of the last flush's groups, from their schedules
    # (tune::GpuTile): [(bm, bn, bk, tm, tn, threads)].
    out = []
    for g in nf.explain().groups:
        m = _TILES.search(g["schedule"] or "")
        if m:
            bm, bn, t, tm, tn, bk = map(int, m.groups())
            assert t == (bm // tm) * (bn // tn), g["schedule"]
            out.append((bm, bn, bk, tm, tn, t))
    return out


def _tile_launches(d0, threads=None):
    # Cooperative launches since d0 of blocks of `threads` (default: the
    # threads of the last flush's one block-tiled group, gpu_tiles; a
    # gpu_blocks reduction's have 128): checked from both counts.
    if threads is None:
        (tile,) = _block_tiles()
        threads = tile[-1]
    d1 = device()
    n = d1["block_launches"] - d0["block_launches"]
    assert d1["block_threads"] - d0["block_threads"] == threads * n, (d0, d1)
    return n


def _within_matmul_bound(got, a, b):
    # |got - a @ b| <= k eps (|a| @ |b|) elementwise (any order of the k
    # products, fused multiply-adds or not), the exact product in float64
    # or, for float64 operands, in float128 where the platform has one.
    got = onp.asarray(got)
    k = a.shape[-1]
    eps = onp.finfo(got.dtype).eps
    wide = onp.longdouble if got.dtype == onp.float64 else onp.float64
    exact = a.astype(wide) @ b.astype(wide)
    bound = (onp.abs(a).astype(wide) @ onp.abs(b).astype(wide)) * (k + 1) * eps
    assert got.shape == exact.shape and got.dtype == (a @ b).dtype
    assert onp.all(onp.abs(got.astype(wide) - exact) <= bound + onp.finfo(got.dtype).tiny)


def test_contractions_run_as_tiles_in_shared_memory(emulated):
    # gpu_tiles: a matmul (and any contraction: batched, transposed, an
    # einsum) is a block of threads per bm x bn tile of the output, the
    # operands' bk-deep tiles in shared memory, tm x tn outputs per thread
    # in registers (the sizes from the model, tune/gpu_model.cc) -- one
    # cooperative launch -- where the extents make it pay
    # (tune::block_tiles_pay: both output extents >= 16, 1 <= k <= 16 times
    # the larger); otherwise a thread or (reading along k) a block of 128
    # per output, as before. Integers exact (partial tiles, k not a multiple
    # of 16); floats within the error bound of any order of the k products.
    shapes = [  # (m, k, n, dtypes)
        (64, 48, 40, ["int64", "int32", "float64", "float32"]),
        (129, 64, 127, ["int64", "int32", "float64", "float32"]),
        (1, 5, 7, ["int64", "float64"]), (130, 17, 65, ["int32", "float32"]), (3, 0, 4, ["float64"]),
        (70, 33, 1, ["int64", "float32"]), (2, 3, 2, ["float64"]), (16, 600, 16, ["int64", "float64"]),
        (16, 256, 16, ["int64", "float32"]), (300, 16, 17, ["int32", "float64"]),
    ]
    nf._core.mark_cuda_check_stats()
    shared = 0  # the most shared memory a tile needs
    for m, k, n, dtypes in shapes:
        tiles = m >= 16 and n >= 16 and 1 <= k <= 16 * max(m, n)
        for dt in dtypes:
            a = (RNG.standard_normal((m, k)) * 50).astype(dt)
            b = (RNG.standard_normal((k, n)) * 50).astype(dt)
            d0 = device()
            got = nf.asarray(a) @ nf.asarray(b)
            nf.flush()
            schedules = [g["schedule"] for g in nf.explain().groups if g["ops"]]
            assert any("block tiles" in t for t in schedules) == tiles, (m, k, n, dt, schedules)
            if tiles:
                assert _tile_launches(d0) == 1, (m, k, n, dt)
                bm, bn, bk = _block_tiles()[0][:3]
                shared = max(shared, (bm + bn) * bk * onp.dtype(dt).itemsize)
            else:  # (blocks of gpu_blocks' 128 threads, if any)
                _tile_launches(d0, 128)
            if dt.startswith("int"):
                assert_same(got, a @ b)
            else:
                _within_matmul_bound(got, a, b)
    x = RNG.standard_normal((5, 30, 20))
    y = RNG.standard_normal((5, 20, 70))
    p = RNG.standard_normal((70, 20))
    cases = [  # (name, program)
        ("batched", lambda m, x, y, p: m.matmul(x, y)),
        ("a @ b.T", lambda m, x, y, p: x[2] @ p.T),
        ("einsum", lambda m, x, y, p: m.einsum("ik,jk->ij", x[1], p)),
        ("fused operands and epilogue", lambda m, x, y, p: m.maximum((x[0] * 2) @ (y[1] + 1) - 3, 0)),
    ]
    X, Y, P = nf.asarray(x), nf.asarray(y), nf.asarray(p)
    for name, f in cases:
        d0 = device()
        got = f(nf, X, Y, P)
        nf.flush()
        assert _tile_launches(d0) == 1, name
        assert_same(got, f(onp, x, y, p), rtol=1e-12, atol=1e-12)  # (cancellation: 20 products of ~1)
    k = RNG.integers(-1000, 1000, (37, 21))
    assert_same(nf.asarray(k) @ nf.asarray(k.T.copy()), k @ k.T)
    # Two combined dimensions (tensordot over two axes): not gpu_tiles'
    # form (one loop over k), so no block tiles in the schedule either.
    a3, b3 = RNG.standard_normal((30, 4, 5)), RNG.standard_normal((4, 5, 40))
    got = nf.tensordot(nf.asarray(a3), nf.asarray(b3), axes=2)
    nf.flush()
    assert not any("block tiles" in g["schedule"] for g in nf.explain().groups)
    assert_same(got, onp.tensordot(a3, b3, 2), rtol=1e-12, atol=1e-12)
    if emulated:  # every kernel above also went through NVRTC and ptxas, without spills
        st = nf._core.cuda_check_stats(since_mark=True)
        assert 0 < shared <= st["max_shared_bytes"] <= 48 << 10, (shared, st)
        assert st["max_spill_bytes"] == 0, st


def test_a_contraction_tile_combines_each_output_in_order_of_k(emulated):
    # Each output's products are combined in k order from 0, then into the
    # output's start value: the association of one thread's loop. Integers
    # wrap around as NumPy's do; a max-plus "matmul" (max over k of
    # a + b: a contraction with another combine) is exact.
    a = RNG.integers(-2**62, 2**62, (70, 45))
    b = RNG.integers(-3, 4, (45, 66))
    assert_same(nf.asarray(a) @ nf.asarray(b), a @ b)
    u = RNG.standard_normal((70, 45))
    v = RNG.standard_normal((45, 66))
    d0 = device()
    got = (nf.asarray(u)[:, :, None] + nf.asarray(v)[None, :, :]).max(axis=1)
    nf.flush()
    assert _tile_launches(d0) == 1
    assert onp.array_equal(onp.asarray(got), (u[:, :, None] + v[None, :, :]).max(axis=1))


def test_contraction_tiles_of_many_shapes_compute_the_same(emulated):
    # The schedule space's tiles (random schedules draw bm, bn, bk, tm, tn;
    # tune/gpu_model.cc): every shape gives NumPy's integers exactly, floats
    # within the matmul bound; NVRTC and ptxas take each without spills.
    a = RNG.integers(-2**40, 2**40, (75, 61))
    b = RNG.integers(-50, 50, (61, 90))
    u, v = RNG.standard_normal((75, 61)).astype(onp.float32), RNG.standard_normal((61, 90)).astype(onp.float32)
    nf._core.mark_cuda_check_stats()
    seen = set()
    for seed in range(8):
        with nf.config(random_schedules=seed):
            got_i = nf.asarray(a) @ nf.asarray(b)
            got_f = nf.asarray(u) @ nf.asarray(v)
            nf.flush()
            seen.update(_block_tiles())
        assert_same(got_i, a @ b)
        _within_matmul_bound(got_f, u, v)
    assert len(seen) >= 5, seen
    if emulated:
        st = nf._core.cuda_check_stats(since_mark=True)
        assert st["max_spill_bytes"] == 0 and st["max_shared_bytes"] <= 48 << 10, st


def test_device_kernels_are_tuned_on_the_device(emulated, tmp_path):
    # numfuse.tune on a device target measures the device's candidates (its
    # tiles and reduction blocks; the emulated device runs them here) and
    # stores the winner under the device's machine; later plans use it.
    x = RNG.standard_normal((96, 80))
    y = RNG.standard_normal((80, 112))
    X, Y = nf.asarray(x), nf.asarray(y)

    def f(p, q):
        return nf.sqrt(nf.abs(p @ q)) + (p * 2).sum(axis=1)[:, None]

    with nf.config(cache_dir=str(tmp_path)):
        assert nf.tuning.store_info()["device"] == "gpu emulated x132"
        report = nf.tune(f, X, Y, budget=20.0, evals=5, progress=False)
        assert report and all(k["target"] == "cuda-emulated" for k in report), report
        for k in report:  # (a map has no device parameters to search: its default alone)
            assert k["stored"] and 1 <= k["evals"] <= 5 and k["failures"] == 0, k
            assert k["best_ms"] <= k["default_ms"]
        (mm,) = [k for k in report if "block tiles" in k["default_schedule"]]
        assert mm["evals"] >= 2, mm
        r = f(X, Y)
        nf.flush()
        groups = [g for g in nf.explain().groups if g["ops"]]
        assert groups and all(g["tuned"] and g["target"] == "cuda-emulated" for g in groups), groups
        assert mm["best_schedule"] in [g["schedule"] for g in groups]
        assert_same(r, onp.sqrt(onp.abs(x @ y)) + (x * 2).sum(axis=1)[:, None], rtol=1e-12, atol=1e-12)
    # The host's plans do not take the device's schedules (another machine).
    with nf.config(cache_dir=str(tmp_path), target="cpu"):
        assert nf.tuning.store_info()["device"] != "gpu emulated x132"
        r = f(X, Y)
        nf.flush()
        assert not any(g["tuned"] for g in nf.explain().groups if g["ops"])


def test_dlpack_hands_a_device_result_to_a_consumer_of_that_device(emulated):
    # A result computed on the device and not read on the host since: its
    # DLPack device is the device's, and __dlpack__ gives that device's
    # consumer a copy in device memory (nothing comes back to the host);
    # a CPU consumer (dl_device=(1, 0)) gets the host's memory. Run here
    # with the emulated device saying it is a CUDA device (2, 0): its
    # memory is the host's, so the capsule is read with ctypes.
    import ctypes

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                    ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

    class Versioned(ctypes.Structure):
        pass

    Versioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("ctx", ctypes.c_void_p),
                          ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(Versioned))),
                          ("flags", ctypes.c_uint64), ("t", DLTensor)]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    rename = ctypes.pythonapi.PyCapsule_SetName
    rename.argtypes = [ctypes.py_object, ctypes.c_char_p]

    a = RNG.standard_normal((6, 8))
    nf._core.set_emulated_dlpack_type(2)
    try:
        x = nf.asarray(a) * 3 - 1
        view = x[1:, ::2]
        assert x.__dlpack_device__() == (2, 0)  # (computes it: on the device)
        d0 = device()
        cap = view.__dlpack__(max_version=(1, 0), stream=1)
        m = Versioned.from_address(get(cap, b"dltensor_versioned"))
        t = m.t
        assert (t.device_type, t.device_id, t.ndim, t.code, t.bits) == (2, 0, 2, 2, 64)
        assert m.flags & 2  # kDLFlagIsCopied
        shape, strides = [t.shape[i] for i in range(2)], [t.strides[i] for i in range(2)]
        assert shape == [5, 4] and strides == [8, 2]
        got = onp.ctypeslib.as_array(ctypes.cast(t.data, ctypes.POINTER(ctypes.c_double)), (5 * 8,))
        assert onp.array_equal(onp.lib.stride_tricks.as_strided(got, (5, 4), (64, 16)), (a * 3 - 1)[1:, ::2])
        d1 = device()
        assert d1["downloads"] == d0["downloads"]  # (a copy on the device, not through the host)
        # The consumer takes it and frees it: the copy goes back to the device's pool.
        rename(cap, b"used_dltensor_versioned")
        m.deleter(ctypes.pointer(m))
        assert device()["pool_bytes"] >= d1["pool_bytes"] + x.nbytes
        with pytest.raises(BufferError, match="copy=False"):
            x.__dlpack__(copy=False)
        with pytest.raises(BufferError):
            x.__dlpack__(dl_device=(2, 1))
        # A CPU consumer: the host's memory, shared, brought back once.
        h = onp.from_dlpack(x, device="cpu")
        assert onp.array_equal(h, a * 3 - 1) and device()["downloads"] == d1["downloads"] + 1
        h[0, 0] = 7.0
        assert float(x[0, 0]) == 7.0 and x.__dlpack_device__() == (1, 0)
        with pytest.raises(ValueError, match="stream"):
            x.__dlpack__(stream=1)
    finally:
        nf._core.set_emulated_dlpack_type(1)
    # As it is: the emulated device's memory is the host's, so every
    # consumer is a CPU one (NumPy shares the host copy).
    y = nf.asarray(a) + 1
    assert y.__dlpack_device__() == (1, 0)
    z = onp.from_dlpack(y)
    z[2, 3] = -4.0
    assert float(y[2, 3]) == -4.0


def test_complex_arithmetic_runs_on_the_device(emulated):
    # Complex numbers in the device's kernels are structs of their parts
    # (NVRTC has no _Complex; codegen: complex structs), each operation a
    # function: NumPy's multiplication (fused parts) and Smith's division,
    # absolute values, comparisons, max/min, casts, truth values, sums,
    # products and a contraction give NumPy's results -- bit for bit where
    # NumPy's association is kept, special values included (an absolute
    # value is libm's hypot, which NumPy's complex64 loop may miss by an
    # ulp: compared within a few ulps, as sums are).
    n = 257
    z = RNG.standard_normal(n) + 1j * RNG.standard_normal(n)
    w = RNG.standard_normal(n) + 1j * RNG.standard_normal(n)
    z[:6] = [complex(onp.inf, 1), complex(onp.nan, 0), 0j, complex(0, -0.0), complex(1e308, 1e308), 1 + 1j]
    w[:6] = [2 + 0j, 1j, 0j, complex(onp.inf, onp.inf), complex(1e-308, 3), complex(onp.nan, onp.nan)]
    with onp.errstate(over="ignore"):  # (1e308 is inf in complex64)
        z64, w64 = z.astype(onp.complex64), w.astype(onp.complex64)
    Z, W, Z64, W64 = nf.asarray(z), nf.asarray(w), nf.asarray(z64), nf.asarray(w64)
    a = RNG.standard_normal((20, 31)) + 1j * RNG.standard_normal((20, 31))
    b = RNG.standard_normal((31, 24)) - 2j * RNG.standard_normal((31, 24))
    cases = [  # (name, program, exact)
        ("z * w + 1", lambda m, p, q: p * q + 1, True),
        ("z / w", lambda m, p, q: p / q, True),
        ("abs, conj, negative", lambda m, p, q: m.abs(p) + m.conj(q).real - (-p).imag, False),
        ("comparisons", lambda m, p, q: (p == q) | (p != 0) & (p < q) | m.logical_not(q), True),
        ("maximum, square, reciprocal", lambda m, p, q: m.maximum(p, q) + m.square(q) + m.reciprocal(p), True),
        ("casts", lambda m, p, q: p.astype(m.complex64) * 2 + q.real.astype(m.complex128), True),
        ("expm1, log1p, sign", lambda m, p, q: m.expm1(p[6:] / 100) + m.log1p(q[6:] / 100) + m.sign(p[6:]), True),
        ("where, isnan", lambda m, p, q: m.where(m.isnan(p) | m.isinf(q), 0, p + q), True),
        ("sum", lambda m, p, q: (p[6:] * q[6:]).sum(), False),
        ("prod", lambda m, p, q: (p[6:20] / 2).prod(), False),
        ("any, all", lambda m, p, q: m.logical_or(m.any(p * 0), m.all(q[6:])), True),
    ]
    for name, f, exact in cases:
        for p, q, P, Q in [(z, w, Z, W), (z64, w64, Z64, W64)]:
            with nf.errstate(all="ignore"):
                got = f(nf, P, Q)
                nf.flush()
            groups = [g for g in nf.explain().groups if g["ops"]]
            assert groups and all(g["target"] == "cuda-emulated" for g in groups), (name, groups)
            with onp.errstate(all="ignore"):
                want = f(onp, p, q)
            if exact:
                assert_same(got, want)
            else:
                tol = 1e-5 if p.dtype == onp.complex64 else 1e-12
                onp.testing.assert_allclose(onp.asarray(got), want, rtol=tol, atol=tol * 1e-1)
    got = nf.asarray(a) @ nf.asarray(b)
    nf.flush()
    assert [g["target"] for g in nf.explain().groups if g["ops"]] == ["cuda-emulated"]
    onp.testing.assert_allclose(onp.asarray(got), a @ b, rtol=1e-12, atol=1e-12)


def test_complex_functions_that_are_glibc_s_run_on_the_cpu_and_say_why(emulated):
    z = nf.asarray(RNG.random(64) + 1j * RNG.random(64))
    for f, name in [(nf.sqrt, "sqrt"), (nf.exp, "exp"), (lambda v: v ** 1.5, "power")]:
        w = f(z * 2) + 1
        nf.flush()
        g = [g for g in nf.explain().groups if g["ops"]][0]
        assert g["target"] == "cpu" and name in g["target_note"], g
        assert "on the CPU (" in str(nf.explain())
        with onp.errstate(all="ignore"):
            assert_same(w, {"sqrt": onp.sqrt, "exp": onp.exp, "power": lambda v: v ** 1.5}[name](onp.asarray(z) * 2) + 1)


def test_random_schedules_on_the_emulated_device(emulated):
    x = RNG.standard_normal((23, 19))
    for seed in range(6):
        with nf.config(random_schedules=seed):
            got = program(nf, nf.asarray(x), nf.asarray(x.T.copy().T), 1.25)
            nf.flush()
        for g, e in zip(got, program(onp, x, x, 1.25)):
            assert_same(g, e, atol=1e-14)


def test_a_thread_per_point_of_the_dimensions_nothing_combines(emulated):
    # The device's schedules (tune::grid_schedule): every dimension no output
    # combines is a grid loop, one thread per point of them; the combined
    # dimensions run below (float32 sums to the bit where a thread adds them
    # in NumPy's order: the rows of a sum over axis 0; a sum along the
    # innermost axis is a block's, reassociated: NumPy's error bound). A full
    # reduction keeps shares and their partials.
    x = RNG.standard_normal((31, 29, 7)).astype(onp.float32)
    X = nf.asarray(x)
    # (name, program, scanned dimensions): the grid loops are the group's
    # dimensions (after coalescing) less the reduced and scanned ones.
    cases = [
        ("map", lambda m, a: m.sqrt(a * a + 1) * 2, 0),
        ("map of a strided view", lambda m, a: m.sqrt(a[:, ::2, :] * a[:, ::2, :] + 1) * 2, 0),
        ("sum over axis 0", lambda m, a: (a * 2).sum(axis=0), 0),
        ("sum over axis 1", lambda m, a: (a * 2).sum(axis=1), 0),
        ("sum over axis 2", lambda m, a: (a * 2).sum(axis=2), 0),
        ("max over axes 0 and 2", lambda m, a: (a + 1).max(axis=(0, 2)), 0),
        ("argmax over axis 1", lambda m, a: m.argmax(a * 3, axis=1), 0),
        ("cumsum along axis 1", lambda m, a: m.cumsum(a * 2, axis=1), 1),
        ("map of a transposed view", lambda m, a: m.sqrt(a.transpose(2, 0, 1) + 5) - a.transpose(2, 0, 1), 0),
        ("full sum", lambda m, a: (a * 2).sum(), 0),
    ]
    seen = set()
    for name, f, scans in cases:
        got = f(nf, X)
        nf.flush()
        (g,) = [g for g in nf.explain().groups if g["target"]]
        assert g["target"] == "cuda-emulated", name
        grid = len(g["domain"]) - g["reduced_dims"] - scans
        assert g["schedule"].count("[grid]") == grid, (name, g["domain"], g["schedule"])
        seen.add(grid)
        want = f(onp, x)
        if "sum over axis 2" in name or "full sum" in name:
            # within NumPy's bound for a sum: a few eps times the sum of |terms|
            ax = 2 if "axis 2" in name else None
            bound = 4 * onp.finfo(onp.float32).eps * onp.abs(x * 2).astype(onp.float64).sum(axis=ax)
            assert onp.all(onp.abs(onp.asarray(got, onp.float64) - want) <= bound), name
        else:
            assert onp.array_equal(onp.asarray(got), want), name
        assert onp.asarray(got).strides == want.strides, name
    assert {0, 1, 2, 3} <= seen, seen


def test_a_block_per_row_for_reductions_along_memory(emulated):
    # gpu_blocks: a reduction whose loop reads memory along itself (a row of
    # a C-ordered array, a share's part of a full reduction) runs a block of
    # threads per output element (thread t takes points t, t + 128, ..., a
    # tree in shared memory); one down a column stays one thread per
    # column. Exact for integers, max/min and arg-reductions (the first best
    # index, ties and NaNs included); float sums within NumPy's error bound.
    x = RNG.standard_normal((37, 300))
    x[5, 7] = x[5, 200] = x[5].max() + 1  # a tie: the first index wins
    x[9, 250] = onp.nan
    x[9, 11] = onp.nan  # the first NaN wins
    k = RNG.integers(-2**40, 2**40, (37, 300))
    X, K = nf.asarray(x), nf.asarray(k)
    cases = [  # (name, program, blocks launched, exact)
        ("row sums", lambda m, a, i: (a * 2).sum(axis=1), 1, False),
        ("row maxima", lambda m, a, i: (a + 1).max(axis=1), 1, True),
        ("row argmax", lambda m, a, i: m.argmax(a * 3, axis=1), 1, True),
        ("row argmin with NaNs", lambda m, a, i: m.argmin(a - 1, axis=-1), 1, True),
        ("integer row sums", lambda m, a, i: (i * 3).sum(axis=1), 1, True),
        ("row norms", lambda m, a, i: m.sqrt((a * a).sum(axis=1)), 1, False),
        ("mean of rows, then scaled", lambda m, a, i: (a + 2).mean(axis=1) * 3, 1, False),
        ("column sums", lambda m, a, i: (a * 2).sum(axis=0), 0, True),
        ("integer full sum", lambda m, a, i: (i + 1).sum(), 2, True),
        ("full max", lambda m, a, i: (a * 2).max(), 2, True),
        ("full argmax", lambda m, a, i: m.argmax(a * 2), 2, True),
        ("float full sum", lambda m, a, i: (a * 2).sum(), 2, False),
    ]
    for name, f, blocks, exact in cases:
        d0 = device()
        got = f(nf, X, K)
        nf.flush()
        d1 = device()
        assert d1["block_launches"] - d0["block_launches"] == blocks, name
        want = f(onp, x, k)
        if exact:
            assert onp.array_equal(onp.asarray(got), want, equal_nan=want.dtype.kind == "f"), name
        else:
            assert_same(got, want)
    if emulated:  # every kernel above also went through NVRTC and ptxas
        st = nf._core.cuda_check_stats()
        assert 2 * 128 * 8 <= st["max_shared_bytes"] <= 48 << 10, st


def _block_sum(row, threads=128):
    # A block's float sum as gpu_blocks writes it: thread t adds points t,
    # t + 128, ... in order from 0, then the tree (half the threads add the
    # other half's), then the start value 0 plus the root.
    s = [0.0] * threads
    for t in range(threads):
        for v in row[t::threads]:
            s[t] = s[t] + float(v)
    h = threads // 2
    while h >= 1:
        for t in range(h):
            s[t] = s[t] + s[t + h]
        h //= 2
    return 0.0 + s[0]


def test_long_rows_are_a_blocks_and_short_rows_a_threads(emulated):
    # A row of at least a block's 128 points is summed by a block (the
    # association above, to the bit); a shorter one by one thread, as NumPy
    # sums it (pairwise, to the bit). The kernel holds both and the extents
    # choose: the same program on the two shapes.
    for cols, blocked in [(300, True), (100, False)]:
        x = RNG.standard_normal((23, cols)) * 10.0 ** RNG.integers(-8, 8, (23, cols))
        got = onp.asarray(nf.asarray(x).sum(axis=1))
        want = x.sum(axis=1)
        block = onp.array([_block_sum(r) for r in x])
        assert not onp.array_equal(block, want)  # (the two associations differ on this data)
        assert onp.array_equal(got, block if blocked else want), cols


def test_a_kernel_that_does_not_compile_for_cuda_fails_the_check():
    # The check is real: CUDA C++ that NVRTC refuses raises with its log.
    if not nf._core.nvrtc_info()["available"]:
        pytest.skip("NVRTC is not installed")
    with pytest.raises(RuntimeError, match="NVRTC"):
        nf._core.cuda_compile("NF_KERNEL void k() { undefined_function(); }", 90)
    r = nf._core.cuda_compile("NF_KERNEL void k(double* p) { p[threadIdx.x] = sqrt(p[0]); }", 80, ptx=True,
                              verbose=True)
    assert len(r["cubin"]) > 0 and ".target sm_80" in r["ptx"] and "registers" in r["log"]


def test_reductions_down_few_columns_are_cut_into_chunks(emulated):
    # gpu_split: a reduction down columns (one thread per column, reading
    # coalesced) with few columns would leave the device idle; its rows are
    # cut into chunks (R = min(MaxThreads, 32 MaxThreads / columns, rows / 8):
    # the emulated device's MaxThreads is 5), each a thread per column and
    # chunk, then each column's chunks are combined in order. Exact for
    # integers, max/min and arg-reductions; a float sum within NumPy's bound
    # (the chunks' partials added in order, each chunk's rows in order).
    x = RNG.standard_normal((203, 6))
    x[17, 2] = x[150, 2] = x[:, 2].max() + 1  # a tie across chunks: the first index wins
    x[120, 4] = onp.nan
    x[190, 4] = onp.nan
    k = RNG.integers(-2**40, 2**40, (203, 6))
    X, K = nf.asarray(x), nf.asarray(k)
    rows = x.shape[0]
    R = max(1, min(5, 32 * 5 // 6, rows // 8))
    assert R == 5

    def chunked_sum(col):  # the association gpu_split makes
        parts = [0.0] * R
        for c in range(R):
            for v in col[rows * c // R:rows * (c + 1) // R]:
                parts[c] = parts[c] + float(v)
        acc = 0.0
        for p in parts:
            acc = acc + p
        return acc

    cases = [  # (name, program, exact)
        ("column sums", lambda m, a, i: (a * 2).sum(axis=0), False),
        ("column maxima", lambda m, a, i: (a + 1).max(axis=0), True),
        ("column argmax", lambda m, a, i: m.argmax(a * 3, axis=0), True),
        ("column argmin with NaNs", lambda m, a, i: m.argmin(a - 1, axis=0), True),
        ("integer column sums", lambda m, a, i: (i * 3).sum(axis=0), True),
        ("column means, scaled", lambda m, a, i: a.mean(axis=0) * 3, False),
        ("standardized columns", lambda m, a, i: (a - a.mean(axis=0)) / a.std(axis=0), False),
    ]
    for name, f, exact in cases:
        got = f(nf, X, K)
        want = f(onp, x, k)
        if exact:
            assert onp.array_equal(onp.asarray(got), want, equal_nan=want.dtype.kind == "f"), name
        else:
            assert_same(got, want)
    got = onp.asarray((X * 2).sum(axis=0))
    want = onp.array([chunked_sum(c) for c in (x * 2).T])
    assert not onp.array_equal(want, (x * 2).sum(axis=0))  # (NumPy adds the rows in order: not this)
    assert onp.array_equal(got, want, equal_nan=True)


def test_a_scan_over_every_point_runs_in_chunks(emulated):
    # gpu_scan: np.cumsum of a vector (nothing for the grid) is cut into
    # Q = min(MaxThreads, n / 64) chunks (the emulated device's MaxThreads is
    # 5): each chunk's total, the totals' running sums on one thread, then
    # each chunk's scan from the chunks before it. Exact for integer sums and
    # products; a float cumsum reassociated within NumPy's bound.
    n = 1000
    x = RNG.standard_normal(n)
    k = RNG.integers(-2**40, 2**40, n)
    X, K = nf.asarray(x), nf.asarray(k)
    Q = max(1, min(5, n // 64))
    assert Q == 5
    cases = [  # (name, program, exact)
        ("integer cumsum", lambda m, a, i: m.cumsum(i * 3), True),
        ("integer cumprod (wrapping around)", lambda m, a, i: m.cumprod(i % 5 + 1), True),
        ("float cumsum", lambda m, a, i: m.cumsum(a * 2), False),
        ("float cumprod", lambda m, a, i: m.cumprod(1 + a / 1000), False),
    ]
    for name, f, exact in cases:
        d0 = device()
        got = f(nf, X, K)
        nf.flush()
        d1 = device()
        assert d1["launches"] - d0["launches"] >= 3, name  # (the chunks' phases)
        want = f(onp, x, k)
        if exact:
            assert onp.array_equal(onp.asarray(got), want), name
        else:
            assert_same(got, want)
    # The float cumsum's association, to the bit: each chunk's points in order,
    # the running totals of the chunks, then each chunk from the total before it.
    y = x * 2
    want = _chunked_scan(y, Q)
    assert not onp.array_equal(want, onp.cumsum(y))  # (NumPy's sequential sum: not this)
    got = onp.asarray(nf.cumsum(X * 2))
    assert onp.array_equal(got, want), onp.nonzero(got != want)[0][:20]


def _chunked_scan(y, Q):
    # gpu_scan's association for one row: each chunk's points in order, the
    # chunks' running totals, each chunk from the total before it.
    n = len(y)
    bounds = [n * c // Q for c in range(Q + 1)]
    tot, run = [], None
    for c in range(Q):
        r = None
        for v in y[bounds[c]:bounds[c + 1]]:
            r = float(v) if r is None else r + float(v)
        run = r if run is None else run + r
        tot.append(run)
    out = []
    for c in range(Q):
        acc = None
        for v in y[bounds[c]:bounds[c + 1]]:
            acc = (float(v) if c == 0 else tot[c - 1] + float(v)) if acc is None else acc + float(v)
            out.append(acc)
    return onp.array(out)


def test_scans_along_few_long_rows_or_columns_run_in_chunks(emulated):
    # A scan the grid gives a thread per row (or column) is cut per row into
    # Q = min(MaxThreads, 32 MaxThreads / rows, length / 64) chunks (5 here):
    # the (row, chunk) pairs' totals, their running totals a thread per row,
    # each chunk scanned from the total before it. Integers exact; a float
    # cumsum to the bit of that association.
    x = RNG.standard_normal((3, 1000))
    k = RNG.integers(-2**40, 2**40, (3, 1000))
    X, K = nf.asarray(x), nf.asarray(k)
    assert onp.array_equal(onp.asarray(nf.cumsum(K * 3, axis=1)), onp.cumsum(k * 3, axis=1))
    assert onp.array_equal(onp.asarray(nf.cumsum(K.T * 3, axis=0)), onp.cumsum(k.T * 3, axis=0))
    want = onp.array([_chunked_scan(r, 5) for r in x * 2])
    assert not onp.array_equal(want, onp.cumsum(x * 2, axis=1))
    got = onp.asarray(nf.cumsum(X * 2, axis=1))
    assert onp.array_equal(got, want), (got != want).sum()
    xt = onp.ascontiguousarray(x.T)
    got = onp.asarray(nf.cumsum(nf.asarray(xt) * 2, axis=0))
    assert onp.array_equal(got, want.T)

"""The persistent kernel cache and the analysis memo.

Disk-cache tests run numfuse in fresh subprocesses with NUMFUSE_CACHE_DIR
pointing at a temporary directory, so "a second process compiles nothing"
is observed, not assumed.
"""

import json
import os
import stat
import subprocess
import sys

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same, to_np

# A small program with a few distinct kernels; prints its profile as JSON.
PROGRAM = r"""
import json, numpy
import numfuse as np
x = np.arange(1000.0)
y = np.sin(x) * 2.5 + np.exp(-x / 100.0)
s = (y * y).sum()
m = np.maximum(y, 0.5)[::2].max()
with np.profile() as p:
    a = np.sin(x) * 2.5 + np.exp(-x / 100.0)
    b = (a * a).sum()
    c = np.maximum(a, 0.5)[::2].max()
    np.flush()
ref_b = float(((numpy.sin(numpy.arange(1000.0)) * 2.5 + numpy.exp(-numpy.arange(1000.0) / 100.0)) ** 2).sum())
info = np._core.cache_info()
print(json.dumps({"compiled": p["kernels_compiled"], "disk": p["disk_hits"], "memory": p["memory_hits"],
                  "b": float(b), "ref_b": ref_b, "status": info["status"], "enabled": info["enabled"]}))
"""


def run_program(cache_dir, extra_env=None):
    env = dict(os.environ)
    env["NUMFUSE_CACHE_DIR"] = str(cache_dir)
    env["NUMFUSE_TIER"] = "lazy"  # every operation compiled: these programs test the kernel cache
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def entries(cache_dir):
    return sorted(p for p in os.listdir(cache_dir) if p.endswith(".nfk"))


def check_result(r):
    assert abs(r["b"] - r["ref_b"]) <= 1e-9 * abs(r["ref_b"])


def test_second_process_compiles_nothing(tmp_path):
    cache = tmp_path / "cache"
    first = run_program(cache)
    check_result(first)
    assert first["compiled"] > 0 and first["disk"] == 0
    assert entries(cache), "compiled kernels were written to the cache"
    second = run_program(cache)
    check_result(second)
    assert second["compiled"] == 0
    assert second["disk"] == first["compiled"]


def test_cache_directory_and_entries_are_owner_only(tmp_path):
    cache = tmp_path / "cache"
    run_program(cache)
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    for name in entries(cache):
        assert stat.S_IMODE(os.stat(cache / name).st_mode) & 0o077 == 0
    # No temporary files are left behind by the atomic writes.
    assert not [p for p in os.listdir(cache) if p.startswith(".tmp")]


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_directories_others_can_write_are_refused(tmp_path, mode):
    """Kernel objects are code numfuse runs: a cache directory that group or
    others can write to is not used (with a warning); numfuse compiles in
    memory and computes the same results."""
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, mode)
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(cache), NUMFUSE_TIER="lazy")
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    check_result(r)
    assert not r["enabled"] and "writable by other users" in r["status"]
    assert "NumfuseWarning" in out.stderr and "not used" in out.stderr
    assert entries(cache) == [] and stat.S_IMODE(os.stat(cache).st_mode) == mode


@pytest.mark.parametrize("damage", ["corrupt", "truncate", "empty", "garbage_header", "wrong_key"])
def test_damaged_entries_degrade_to_compiling(tmp_path, damage):
    cache = tmp_path / "cache"
    first = run_program(cache)
    names = entries(cache)
    assert names
    for name in names:
        path = cache / name
        data = path.read_bytes()
        if damage == "corrupt":  # flip bytes in the object code
            data = data[:-40] + bytes(b ^ 0xFF for b in data[-40:])
        elif damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "empty":
            data = b""
        elif damage == "garbage_header":
            data = b"XXXX" + data[4:]
        elif damage == "wrong_key":  # a valid entry moved to another key's file name
            other = cache / names[(names.index(name) + 1) % len(names)]
            data = other.read_bytes() if other != path else b"NFK1" + data[4:]
        path.write_bytes(data)
    second = run_program(cache)
    check_result(second)
    if damage != "wrong_key" or len(names) > 1:
        assert second["compiled"] == first["compiled"], "every damaged entry was rejected and recompiled"
    # ...and the recompiled kernels repaired the cache.
    third = run_program(cache)
    check_result(third)
    assert third["compiled"] == 0


# Directory permissions do not restrain root, so that variant runs only for
# other users; NUMFUSE_CACHE_MODE=readonly exercises the same code path.
@pytest.mark.parametrize("how", ["mode"] + (["permissions"] if os.geteuid() != 0 else []))
def test_read_only_cache_is_used_but_not_written(tmp_path, how):
    """A read-only cache (no write permission, or NUMFUSE_CACHE_MODE=readonly
    for a shared pre-built cache) is loaded from but never written."""
    cache = tmp_path / "cache"
    first = run_program(cache)
    env = {"NUMFUSE_CACHE_MODE": "readonly"} if how == "mode" else {}
    if how == "permissions":
        os.chmod(cache, 0o500)
    try:
        r = run_program(cache, env)  # loads existing entries
        check_result(r)
        assert r["compiled"] == 0 and r["disk"] == first["compiled"]
        assert "read-only" in r["status"]
        os.chmod(cache, 0o700)
        for name in entries(cache):
            os.unlink(cache / name)
        if how == "permissions":
            os.chmod(cache, 0o500)
        r = run_program(cache, env)  # nothing cached, nothing writable: compiles, no crash
        check_result(r)
        assert r["compiled"] == first["compiled"]
        assert entries(cache) == []
    finally:
        os.chmod(cache, 0o700)


def test_unusable_cache_location_degrades_to_compiling(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = run_program(blocker / "cache")  # parent is a file: cannot be created
    check_result(r)
    assert not r["enabled"] and "off" in r["status"]
    assert r["compiled"] > 0


def test_cache_info_and_option():
    info = nf._core.cache_info()
    assert set(info) >= {"directory", "enabled", "status"}
    assert nf.get_option("cache_dir") == info["directory"]


# ---------------------------------------------------------------------------
# Memoization of the analysis

def test_loop_over_moving_slices_is_analysed_and_compiled_once(lazy):
    n, width = 400, 64
    base = onp.random.default_rng(0).random(n + width)
    a = nf.array(base)
    out = nf.zeros(width)
    ref = onp.zeros(width)
    nf.flush()
    with nf.profile() as p:
        for i in range(0, n, 7):
            out += nf.sqrt(a[i:i + width]) * 0.5 + a[i + 1:i + 1 + width]
            nf.flush()
    for i in range(0, n, 7):
        ref += onp.sqrt(base[i:i + width]) * 0.5 + base[i + 1:i + 1 + width]
    assert_same(out, ref)
    iterations = len(range(0, n, 7))
    assert p["flushes"] == iterations
    assert p["kernels_compiled"] <= 1
    assert p["memo_hits"] >= iterations - 1, p  # every iteration after the first reuses the analysis


@pytest.mark.parametrize("syncs", [1, 3, 7])
def test_a_body_that_syncs_several_times_matches_recent_plans(lazy, syncs):
    """A loop body with several windows (it syncs `syncs` times per
    iteration, each window different): from the second iteration on, every
    window is recognized by matching it against the recent plans, without
    building its signature (that cost the square of a window's writes to one
    buffer: lenet's three windows per call took 4 of its 12 ms)."""
    n = 24
    x = nf.array(onp.linspace(0.0, 1.0, 64 * n).reshape(n, 64))
    out = nf.zeros((n, 64))
    ref_x, ref = to_np(x).copy(), onp.zeros((n, 64))
    nf.flush()
    # Each window of an iteration has its own operation: windows differ.
    ops = ["add", "subtract", "maximum", "minimum", "hypot", "arctan2", "fmax"][:syncs]
    iterations = 5
    with nf.profile() as p:
        for _ in range(iterations):
            for name in ops:
                for i in range(n):  # many writes to distinct rows of one buffer
                    out[i] = getattr(nf, name)(x[i] * 0.5, out[i])
                out.sum(axis=0)[3].item()  # a sync
    for _ in range(iterations):
        for name in ops:
            for i in range(n):
                ref[i] = getattr(onp, name)(ref_x[i] * 0.5, ref[i])
    assert_same(out, ref)
    assert p["flushes"] == iterations * syncs, p
    assert p["memo_hits"] >= (iterations - 1) * syncs, p
    assert p["memo_matched"] >= (iterations - 1) * syncs, p  # no signature built for a window seen before


@pytest.mark.parametrize("max_window", [64, 100, 37])
def test_windows_cut_by_max_window_follow_the_loop_period(lazy, max_window):
    """A loop that never syncs: the automatic cuts fall at multiples of the
    body's period (7 operations, which divides none of these windows), so
    every steady-state window has the same signature and hits the memo."""
    def body(np, u, w):
        t = u * 0.5 + w          # 2
        t = np.sqrt(np.abs(t))   # 4
        u = t - w * 0.25         # 6
        w = w + 1.0              # 7
        return u, w

    u, w = nf.arange(16.0), nf.ones(16)
    ru, rw = onp.arange(16.0), onp.ones(16)
    nf.flush()
    with nf.config(max_window=max_window), nf.profile() as p:
        for _ in range(300):
            u, w = body(nf, u, w)
        nf.flush()
    for _ in range(300):
        ru, rw = body(onp, ru, rw)
    assert_same(u, ru)
    assert_same(w, rw)
    windows = p["flushes"]
    assert windows >= 2100 // max_window, p
    assert p["memo_hits"] >= windows - 3, p  # the first, a second phase, the last


def test_windows_without_a_period_are_cut_at_max_window(lazy):
    ops = onp.random.default_rng(3).integers(0, 3, 1000)  # no period
    x, ref = nf.arange(8.0), onp.arange(8.0)
    with nf.config(max_window=32), nf.profile() as p:
        for k in ops:
            x = x + 1.0 if k == 0 else (x * 0.5 if k == 1 else nf.sqrt(x))
        nf.flush()
    for k in ops:
        ref = ref + 1.0 if k == 0 else (ref * 0.5 if k == 1 else onp.sqrt(ref))
    assert_same(x, ref)
    # cut at 32, or (where a random stretch looks periodic, p <= 8) at 24 or more
    assert 1000 // 32 + 1 <= p["flushes"] <= 1000 // 24 + 2, p


def test_memo_respects_changed_aliasing():
    """Same operations, but the second time the views overlap: the memoized
    plan must not be reused blindly."""
    def body(a, lo_src, lo_dst):
        a[lo_dst:lo_dst + 5] = a[lo_src:lo_src + 5] * 2.0

    a = nf.arange(20.0)
    e = onp.arange(20.0)
    for lo_src, lo_dst in [(0, 10), (0, 2), (10, 0), (3, 5)]:
        body(a, lo_src, lo_dst)
        body(e, lo_src, lo_dst)
        nf.flush()
        assert_same(a, e)


def test_memo_tells_views_with_the_same_start_from_views_that_only_overlap(lazy):
    """Two reads of one buffer, (4,) and (1, 4): starting at the same element
    they are one access of the fused kernel; the memoized plan of that window
    must not be reused when the second view starts elsewhere."""
    a, e = nf.arange(10.0), onp.arange(10.0)
    nf.flush()
    with nf.profile() as p:
        for off in (0, 1, 2, 1, 0):
            y = a[0:4] + 1.0
            z = a[off:off + 4].reshape(1, 4) * 2.0
            nf.flush()
            assert_same(y, e[0:4] + 1.0)
            assert_same(z, e[off:off + 4].reshape(1, 4) * 2.0)
    assert p["memo_hits"] >= 2, p  # the repeated offsets still hit


def test_memo_of_a_loop_over_rows_and_columns_of_a_written_matrix(lazy):
    """Floyd-Warshall: each step reads a row and a column of the matrix it
    rewrites whole. The window of 40 steps is memoized and reused for other
    rows and columns (relations are recorded where a view is written: the
    signature no longer grows with the square of the views read)."""
    def run(xp, m, k0):
        for k in range(k0, k0 + 40):
            m[:] = xp.minimum(m, xp.add.outer(m[:, k], m[k, :]))

    r = onp.random.default_rng(2).integers(1, 100, (60, 60)).astype(onp.int32)
    m = nf.array(r)
    with nf.profile() as p:
        for k0 in (0, 0, 20):
            run(nf, m, k0)
            run(onp, r, k0)
            nf.flush()
            assert_same(m, r)
    assert p["memo_hits"] >= 1, p


def test_memo_reuses_a_plan_whether_reads_overlap_or_not(lazy):
    """Reads that overlap other reads decide nothing: one plan serves both."""
    a, e = nf.arange(12.0), onp.arange(12.0)
    nf.flush()
    with nf.profile() as p:
        for off in (2, 6, 2, 6):
            y = a[0:4] * 3.0 + a[off:off + 4]
            nf.flush()
            assert_same(y, e[0:4] * 3.0 + e[off:off + 4])
    assert p["memo_hits"] >= 3, p


def test_memo_can_be_disabled():
    x = nf.arange(10.0)
    with nf.config(memo=False):
        with nf.profile() as p:
            for _ in range(3):
                y = x * 2 + 1
                nf.flush()
    assert p["memo_hits"] == 0
    assert_same(y, onp.arange(10.0) * 2 + 1)


def _memo_program(xp, a, ops, offs):
    """One instantiation of a program template over a 1-D buffer `a`: each op
    reads two length-4 views of `a` (the second reshaped to (1, 4) or not) at
    the offsets `offs` in tasks of their own, and writes fresh arrays or a
    view of `a`."""
    outs = []
    for (kind, shaped, c), (o1, o2, o3) in zip(ops, offs):
        u = a[o1:o1 + 4]
        v = a[o2:o2 + 4].reshape(1, 4) if shaped else a[o2:o2 + 4]
        r = u * c
        s = v + c  # its own task: domain (1, 4) or (4,)
        t = xp.maximum(u, v.reshape(4)) - c if kind == 2 else None
        if kind == 1:
            a[o3:o3 + 4] = r
        else:
            outs.append(r)
        outs.append(s)
        if t is not None:
            outs.append(t)
    return outs


@pytest.mark.parametrize("seed", range(40))
def test_memo_is_sound_for_random_aliasing(lazy, seed):
    """Differential: one program template run with different view offsets
    back to back (same operations, shapes and strides; different sameness,
    same starts and overlaps between views): whenever the memo reuses a plan,
    results must still be NumPy's."""
    rng = onp.random.default_rng(seed)
    ops = [(int(rng.integers(0, 3)), bool(rng.integers(0, 2)), float(rng.integers(1, 4)))
           for _ in range(int(rng.integers(1, 4)))]
    a, e = nf.arange(24.0), onp.arange(24.0)
    nf.flush()
    for _ in range(8):
        # Offsets 0 and 2 of length-4 views: every two overlap, and whether
        # they are the same or start at the same element varies.
        offs = [tuple(int(x) for x in rng.integers(0, 2, 3) * 2) for _ in ops]
        got = _memo_program(nf, a, ops, offs)
        want = _memo_program(onp, e, ops, offs)
        nf.flush()
        assert_same(a, e)
        for g, w in zip(got, want):
            assert_same(g, w)


# Quick compiles and their upgrade. A kernel a flush waits for is compiled
# with LLVM's fast code generation; once it has run long enough it is
# recompiled with full optimization in the background and its entry point
# swapped, and the disk cache keeps the better object.
UPGRADE_PROGRAM = r"""
import json, sys, numpy
import numfuse as np
n = int(sys.argv[1]); runs = int(sys.argv[2])
xn = numpy.linspace(-3.0, 3.0, n)
x = np.array(xn)
ref = numpy.tanh(xn) * 0.75 - numpy.cos(xn * 1.5) / 3.25
# Quick and Full code compute the same bits (same optimized module; the
# code generator does not change floating-point semantics).
outs = []
for _ in range(runs):
    outs.append(numpy.asarray(np.tanh(x) * 0.75 - np.cos(x * 1.5) / 3.25).copy())
np.wait_background()
outs.append(numpy.asarray(np.tanh(x) * 0.75 - np.cos(x * 1.5) / 3.25))
res = [numpy.allclose(outs[0], ref, rtol=1e-12, atol=1e-15)] + [o.tobytes() == outs[0].tobytes() for o in outs]
s = np._core.profile()
print(json.dumps({"ok": all(res), "compiles": s["compiles_total"], "quick": s["quick_compiles_total"],
                  "upgrades": s["upgrades_total"], "disk": s["disk_hits_total"]}))
"""


def run_upgrade_program(cache_dir, n, runs, extra_env=None):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(cache_dir), NUMFUSE_TIER="lazy")
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", UPGRADE_PROGRAM, str(n), str(runs)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_quick_kernels_are_upgraded_once_hot_and_the_disk_keeps_the_upgrade(tmp_path):
    cache = tmp_path / "cache"
    # Run once on a smaller array (2**16 points and more: the same wide
    # schedule, the same kernel, as below): compiled quick, never hot
    # enough to upgrade (a kernel's first launch, which pays for what is
    # cold, does not count towards the 2 ms that make it hot).
    first = run_upgrade_program(cache, 66_000, 0)
    assert first["ok"] and first["compiles"] == 1 and first["quick"] == 1 and first["upgrades"] == 0, first
    # A new process loads the quick object (and its source) from disk, runs
    # it long enough, and upgrades it from the source on disk.
    second = run_upgrade_program(cache, 400_000, 40)
    assert second["ok"] and second["compiles"] == 0 and second["disk"] == 1 and second["upgrades"] == 1, second
    # The third finds the upgraded object: nothing compiled, nothing to upgrade.
    third = run_upgrade_program(cache, 400_000, 40)
    assert third["ok"] and third["compiles"] == 0 and third["disk"] == 1 and third["upgrades"] == 0, third


def test_quick_compile_can_be_turned_off(tmp_path):
    r = run_upgrade_program(tmp_path / "cache", 1000, 1, {"NUMFUSE_QUICK_COMPILE": "0"})
    assert r["ok"] and r["compiles"] == 1 and r["quick"] == 0 and r["upgrades"] == 0, r
    assert nf.get_option("quick_compile") is True
    with nf.config(quick_compile=False):
        assert nf.options()["quick_compile"] is False
    assert nf.get_option("quick_compile") is True


# Many new kernels at once: one flush compiles its independent groups on
# several threads, while two more threads compile kernels of their own.
CONCURRENT = r"""
import json, threading
import numpy as onp
import numfuse as np
bad = []
def window(tag, extra):
    # Distinct lengths: each expression is a group of its own; `extra` more
    # operations make each thread's kernels its own.
    xs = [np.arange(1000.0 + 7 * i) / 10.0 for i in range(10)]
    exprs = [lambda m, x: m.sin(x) * 2.0 + 1.0, lambda m, x: m.sqrt(x + 1.0) - x, lambda m, x: m.exp(-x) * x,
             lambda m, x: m.maximum(x, 3.0) / (x + 1.0), lambda m, x: m.abs(x - 5.0) ** 2]
    def f(m, i, x):
        y = exprs[i % 5](m, x) * (i + 1)
        for _ in range(extra):
            y = m.tanh(y) * 0.5 + y
        return y
    outs = [f(np, i, x) for i, x in enumerate(xs)]
    np.flush()
    for i, x in enumerate(xs):
        if not onp.allclose(onp.asarray(outs[i]), f(onp, i, onp.asarray(x)), rtol=1e-13, atol=0):
            bad.append((tag, i))
threads = [threading.Thread(target=window, args=("t%d" % k, k)) for k in (1, 2)]
for t in threads:
    t.start()
window("main", 0)
for t in threads:
    t.join()
prof = np._core.profile()
print(json.dumps({"bad": bad, "compiled": prof["compiles_total"], "each": prof["compile_ms_each"]}))
"""


def test_kernels_compiled_concurrently_are_all_correct(tmp_path):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TIER="lazy")
    out = subprocess.run([sys.executable, "-c", CONCURRENT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["bad"] == []
    # Five kernels per thread, compiled (not found) while the others compile.
    assert r["compiled"] >= 15, r
    assert len(entries(tmp_path)) >= 15
    # Every compile's own time is kept (bench_compile's median per kernel).
    assert len(r["each"]) == r["compiled"] and all(ms > 0 for ms in r["each"])

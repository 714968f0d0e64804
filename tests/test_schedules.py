"""Correct by construction: every legal schedule computes what NumPy computes.

With ``numfuse.config(random_schedules=seed)`` each kernel gets a random legal
schedule from the whole space (tiles that do not divide the extents, any loop
order, parallel loops over concatenated or combined dimensions, local tile
buffers with any layout and packing, unrolling, vectorization, FMA, the BLAS
routine where it applies). For each computation class we run programs under
many seeds and compare with NumPy; then we check the tuner and its store.
"""

import json
import os
import subprocess
import sys

import numpy as onp
import pytest

import numfuse as nf
from conftest import assert_same

SEEDS = range(6)
rng = onp.random.default_rng(7)


def rand(shape, dtype="float64"):
    if onp.dtype(dtype).kind == "f":
        return rng.uniform(-1, 1, shape).astype(dtype)
    if onp.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-9, 10, shape).astype(dtype)


def run_both(program, *arrays, seed, routines=False, rtol=None, atol=0.0):
    """program(m, *arrays) with numfuse under random schedules and NumPy.
    Schedules are the compiled tier's: the program is recorded (tier lazy)
    whatever tier the suite runs on."""
    expected = program(onp, *[a.copy() for a in arrays])
    with nf.config(random_schedules=seed, routines=routines, tier="lazy"):
        got = program(nf, *[nf.asarray(a.copy()) for a in arrays])
        got = nf.asarray(got) if not isinstance(got, tuple) else tuple(nf.asarray(g) for g in got)
        nf.flush()
        groups = nf.explain().groups
    assert_same(got, expected, rtol=rtol, atol=atol)
    return groups


# --- elementwise maps and stencils --------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_map_with_broadcast_and_transposed_views(seed):
    def prog(m, a, b, c):
        return m.sqrt(m.abs(a * 2.0 + b.T)) - c[:, None] * 0.5
    run_both(prog, rand((37, 53)), rand((53, 37)), rand(37), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_stencil_2d(seed):
    def prog(m, a):
        out = m.zeros_like(a)
        out[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        return out
    run_both(prog, rand((45, 70), "float32"), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_stencil_3d_in_place(seed):
    def prog(m, a):
        a[1:-1, 1:-1, 1:-1] = (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1] +
                               a[1:-1, 2:, 1:-1] + a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:]) / 6.0
        return a
    run_both(prog, rand((12, 19, 23)), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_map(seed):
    def prog(m, a, b):
        return (a * 3 + b) // 2 - (a ^ b)
    run_both(prog, rand((29, 31), "int32"), rand((29, 31), "int32"), seed=seed)


# --- reductions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("axis", [0, 1, 2, (0, 2), None])
def test_sum_over_axes(seed, axis):
    def prog(m, a):
        return m.sum(a * a, axis=axis)
    run_both(prog, rand((13, 40, 27)), seed=seed, rtol=1e-11)


@pytest.mark.parametrize("seed", SEEDS)
def test_max_min_argmax_prod(seed):
    def prog(m, a, b):
        return m.max(a, axis=1), m.min(b, axis=0), m.argmax(a, axis=1), m.prod(b[:5] * 0.5 + 1.0, axis=0)
    run_both(prog, rand((33, 47)), rand((21, 33)), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_and_bool_reductions(seed):
    def prog(m, a, b):
        return m.sum(a, axis=0), m.any(b, axis=1), m.all(b, axis=0), m.argmin(a, axis=0)
    run_both(prog, rand((50, 19), "int64"), rand((17, 40), "bool"), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_fused_mean_and_variance(seed):
    def prog(m, a):
        mu = a.mean(axis=1)
        return mu, ((a - mu[:, None]) ** 2).mean(axis=1)
    run_both(prog, rand((64, 300)), seed=seed)


# --- scans (prefix-sum combine) ------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scans(seed, axis):
    def prog(m, a, b):
        return m.cumsum(a * 2.0, axis=axis), m.cumprod(b, axis=axis)
    # Sequential along the scan whatever the schedule: exact.
    run_both(prog, rand((11, 30, 17)), rand((6, 5, 7), "int64"), seed=seed, rtol=0)


# --- contractions -------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_matmul(seed, dtype):
    def prog(m, a, b):
        return a @ b
    # Sums of 129 products: absolute rounding error ~ sqrt(129) ulp of the terms.
    groups = run_both(prog, rand((70, 129), dtype), rand((129, 45), dtype), seed=seed,
                      rtol=1e-4 if dtype == "float32" else 1e-11, atol=1e-5 if dtype == "float32" else 1e-13)
    assert any("md_hom" in g["mdh"] for g in groups)


@pytest.mark.parametrize("seed", SEEDS)
def test_matmul_transposed_views_and_routines(seed):
    def prog(m, a, b):
        return a.T @ b[::-1]
    run_both(prog, rand((64, 33)), rand((64, 20)), seed=seed, routines=True, atol=1e-13)


@pytest.mark.parametrize("seed", SEEDS)
def test_batched_matmul(seed):
    def prog(m, a, b):
        return m.matmul(a, b)
    run_both(prog, rand((6, 17, 40), "float32"), rand((6, 40, 9), "float32"), seed=seed, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_matvec_vecmat_and_dot(seed):
    def prog(m, a, x, y):
        return a @ x, y @ a, m.dot(x, x)
    run_both(prog, rand((150, 77)), rand(77), rand(150), seed=seed, atol=1e-13)


@pytest.mark.parametrize("seed", SEEDS)
def test_bool_matmul(seed):
    def prog(m, a, b):
        return a @ b
    run_both(prog, rand((20, 30), "bool"), rand((30, 25), "bool"), seed=seed)


# --- the tuner ----------------------------------------------------------------------------------

def test_tune_improves_or_keeps_default_and_is_used(lazy, tmp_path):
    """numfuse.tune measures candidates, stores the best, and later flushes
    use it (explain says so); the results stay exact."""
    a = nf.asarray(rand((96, 64)))
    b = nf.asarray(rand((64, 80)))

    def f(x, y):
        return nf.sqrt(nf.abs(x @ y)) + 1.0

    with nf.config(cache_dir=str(tmp_path), routines=False):
        report = nf.tune(f, a, b, budget=3.0, evals=12, progress=False)
        assert len(report) == 2  # the contraction and the elementwise kernel
        for k in report:
            assert k["stored"] and 1 <= k["evals"] <= 12
            assert k["best_ms"] <= k["default_ms"]
            assert k["failures"] == 0, k["errors"]
        assert "default" in str(report) and "tuned" in str(report)
        assert nf.tuning.store_info()["entries"] == 2
        r = f(a, b)
        nf.flush()
        assert all(g["tuned"] for g in nf.explain().groups)
        assert "tuned schedule" in str(nf.explain())
        assert_same(r, onp.sqrt(onp.abs(onp.asarray(a) @ onp.asarray(b))) + 1.0)


def test_tune_rejects_bad_arguments():
    with pytest.raises(ValueError):
        nf.tune(lambda: None, budget=-1)
    with pytest.raises(ValueError):
        nf.tune(lambda: None, evals=0)
    assert len(nf.tune(lambda: None, budget=0.1, progress=False)) == 0


SCRIPT = """
import json, sys
import numpy as onp
import numfuse as nf
a = nf.asarray(onp.arange(120 * 77, dtype=onp.float64).reshape(120, 77) % 7)
b = nf.asarray(onp.arange(77 * 50, dtype=onp.float64).reshape(77, 50) % 5)
mode = sys.argv[1]
if mode == "tune":
    nf.tune(lambda x, y: x @ y, a, b, budget=2.0, evals=8, progress=False)
elif mode == "background":
    c = a @ b
    nf.flush()
    nf.tuning.wait()
c = a @ b
nf.flush()
g = nf.explain().groups[0]
ok = bool(onp.array_equal(onp.asarray(c), onp.asarray(a) @ onp.asarray(b)))
rep = nf._core.last_report()
info = nf.tuning.store_info()
try:
    store_text = open(info["path"]).read()
except OSError as e:
    store_text = repr(e)
print(json.dumps({"tuned": g["tuned"], "ok": ok, "entries": info["entries"],
                  "memo_hit": rep["memo_hit"], "warnings": rep["warnings"], "tuned_jobs": nf._core.tune_background_done(),
                  "schedule": g["schedule"],
                  "groups": [[x["ops"], x["tuned"], x["tier0"], x["schedule"]] for x in rep["groups"]],
                  "device": info["device"], "store": store_text, "sync": rep["sync_reason"],
                  "options": {k: str(nf.get_option(k)) for k in ("tier", "memo", "routines", "max_window")}}))
"""


def _run(mode, env):
    env = dict(env, NUMFUSE_TIER=env.get("NUMFUSE_TIER", "auto"))  # the default tier: a tuned kernel is compiled
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["stderr"] = out.stderr[-2000:]
    r["env"] = {k: v for k, v in env.items() if k.startswith("NUMFUSE")}
    return r


def test_store_is_used_across_processes(tmp_path):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_ROUTINES="0")
    env.pop("NUMFUSE_TUNE", None)
    first = _run("plain", env)
    assert not first["tuned"] and first["ok"] and first["entries"] == 0
    tuned = _run("tune", env)
    _check(tuned["tuned"] and tuned["ok"] and tuned["entries"] == 1, tuned)
    later = _run("plain", env)  # a new process: the stored schedule, no tuning
    _check(later["tuned"] and later["ok"] and later["schedule"] == tuned["schedule"], {"tuned": tuned, "later": later})


def _check(cond, report):
    """assert cond, with the whole report (pytest would truncate it)."""
    if not cond:
        pytest.fail("subprocess report:\n" + json.dumps(report, indent=1, default=str), pytrace=False)


def test_background_tuning_swaps_the_kernel_in(tmp_path):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), NUMFUSE_TUNE="1.5", NUMFUSE_ROUTINES="0")
    r = _run("background", env)
    _check(r["tuned"] and r["ok"] and r["entries"] == 1, r)

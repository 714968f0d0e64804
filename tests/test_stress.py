"""Stress: threads, fork and signals at once (the robustness campaign's
process-level scenario in one run, a few seconds long).

Several threads record and sync different programs (sharing one array read
only), a SIGALRM handler syncs on every tick, the main thread forks children
in the middle of all that (each child computes, checks and exits), and the
interpreter exits with the threads still running. Nothing may hang or crash,
and every value computed anywhere must equal NumPy's.
"""

import json
import os
import subprocess
import sys

import pytest

STRESS = r"""
import json, os, signal, sys, threading, time
import numpy as onp, numfuse as np

seconds = float(sys.argv[1])
shared_np = onp.linspace(-2.0, 2.0, 4096)
shared = np.asarray(shared_np)
np.flush()
bad = []
counts = {}
lock = threading.Lock()

def check(tag, got, want):
    g = onp.asarray(got)
    if g.shape != onp.shape(want) or not onp.allclose(g, want, rtol=1e-12, atol=0, equal_nan=True):
        with lock:
            bad.append(tag)

PROGRAMS = [
    lambda m, x, k: (m.sin(x * k) ** 2 + m.cos(x * k) ** 2).sum(),
    lambda m, x, k: m.cumsum(m.where(x > 0, x, -x * k))[-7:],
    lambda m, x, k: (x.reshape(64, 64) @ x.reshape(64, 64)[:, :8] * k).max(axis=0),
    lambda m, x, k: m.sqrt(m.abs(x[1:] - x[:-1]) + k).mean(),
    lambda m, x, k: m.maximum(x[::3], k / 10.0).astype(m.float32).sum(),
]

def small_loop(m, x, k):
    # A loop body over a small array, synced every iteration: its windows
    # repeat, so each flush after the first runs a memoized plan of small
    # kernels without giving up the GIL (pipeline::flush's quick path).
    for j in range(8):
        x = m.sqrt(m.abs(x * 0.5 - k)) + x[::-1]
        x[1:-1] = x[:-2] * 0.25 + x[2:] * 0.75
        if m is np:
            np.flush()
    return x

def worker(w, daemon):
    k = 0
    while daemon or time.time() < stop_at:
        k += 1
        f = PROGRAMS[(w + k) % len(PROGRAMS)]
        local_np = onp.arange(4096.0) / (w + 1)
        local = np.arange(4096.0) / (w + 1)
        check("t%d" % w, f(np, shared, k % 17 + 1), f(onp, shared_np, k % 17 + 1))
        check("t%d" % w, f(np, local, k % 5 + 1), f(onp, local_np, k % 5 + 1))
        with np.config(tier="lazy"):
            check("small%d" % w, small_loop(np, local[: 16 + w], k % 3), small_loop(onp, local_np[: 16 + w], k % 3))
        with lock:
            counts[w] = counts.get(w, 0) + 1

ticks = 0
def handler(signum, frame):
    global ticks
    ticks += 1
    t = ticks
    check("signal", (np.arange(100.0) * t).sum(), (onp.arange(100.0) * t).sum())

stop_at = time.time() + seconds
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.003, 0.003)
threads = [threading.Thread(target=worker, args=(w, False)) for w in range(3)]
threads += [threading.Thread(target=worker, args=(3, True), daemon=True)]
for t in threads:
    t.start()

children = []
time.sleep(seconds / 3)
for i in range(4):
    pid = os.fork()
    if pid == 0:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        ok = True
        for j in range(3):
            f = PROGRAMS[(i + j) % len(PROGRAMS)]
            g = onp.asarray(f(np, shared, i + 1))
            ok = ok and onp.allclose(g, f(onp, shared_np, i + 1), rtol=1e-12, atol=0)
        g = float(np.tanh(np.arange(300.0) / (i + 7)).sum())   # a kernel compiled in the child
        ok = ok and abs(g - float(onp.tanh(onp.arange(300.0) / (i + 7)).sum())) < 1e-9
        os._exit(0 if ok else 3)
    deadline = time.time() + 30
    while True:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r:
            children.append("ok" if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 else "status %d" % st)
            break
        if time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            children.append("hung")
            break
        time.sleep(0.02)
    time.sleep(seconds / 12)

for t in threads[:3]:
    t.join()
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print(json.dumps({"bad": bad[:20], "children": children, "counts": counts, "ticks": ticks}), flush=True)
# The daemon thread is still recording and syncing: the interpreter exits now.
"""


def test_threads_fork_signals_and_exit(tmp_path):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=str(tmp_path), PYTHONFAULTHANDLER="1")
    try:
        out = subprocess.run([sys.executable, "-c", STRESS, "8"], env=env, capture_output=True, text=True,
                             timeout=50)
    except subprocess.TimeoutExpired as t:
        pytest.fail(f"hung\nstdout: {t.stdout}\nstderr: {t.stderr}")
    assert out.returncode == 0, f"return code {out.returncode}\n{out.stderr[-4000:]}"
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["bad"] == []
    assert r["children"] == ["ok"] * 4
    assert all(r["counts"].get(str(w), 0) > 3 for w in range(4)), r["counts"]
    assert r["ticks"] > 20

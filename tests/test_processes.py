"""Process-level robustness: interpreter exit, fork, multiprocessing, signal
handlers, and a cache directory that holds anything at all.

Every scenario runs in a fresh interpreter with a time limit, so a deadlock
fails its test (with the child's output) instead of stalling the suite, and a
crash shows up as a signal in the return code.
"""

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

# Where the scenarios import numfuse from: the same package this suite tests.
_PYTHONPATH = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(__import__("numfuse").__file__)),
                                          os.environ.get("PYTHONPATH", "")] if p)


def run_script(code, *args, timeout=60, env=None, cache=None, preexec_fn=None):
    """Runs `code` in a new interpreter; returns the CompletedProcess. A run
    past `timeout` seconds is a hang and fails the calling test."""
    # Every operation recorded and compiled: these scenarios exercise flushes,
    # compile threads and the kernel cache, whatever their arrays' sizes.
    e = dict(os.environ, PYTHONPATH=_PYTHONPATH, PYTHONFAULTHANDLER="1", NUMFUSE_TIER="lazy")
    if cache is not None:
        e["NUMFUSE_CACHE_DIR"] = str(cache)
    e.update(env or {})
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=e,
                              capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired as t:
        pytest.fail(f"hung: no exit within {timeout} s\nstdout: {t.stdout}\nstderr: {t.stderr}")


def last_json(out):
    assert out.returncode == 0, f"return code {out.returncode}\n{out.stderr[-4000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------
# Interpreter exit, fork, multiprocessing, signals
# ---------------------------------------------------------------------------

DAEMON_EXIT = """
import threading, time, numfuse as np
def work():
    k = 0
    while True:
        k += 1
        x = np.arange(5000.0) * k
        float(x.sum())
for _ in range(2):
    threading.Thread(target=work, daemon=True).start()
time.sleep(0.3)
print("main returns")
"""


@pytest.mark.parametrize("run", range(3))
def test_interpreter_exit_while_daemon_threads_use_numfuse(tmp_path, run):
    out = run_script(DAEMON_EXIT, cache=tmp_path, timeout=60)
    assert out.returncode == 0, f"return code {out.returncode}: {out.stderr[-3000:]}"
    assert "terminate called" not in out.stderr
    assert out.stdout.strip() == "main returns"


FORK_WHILE_FLUSHING = """
import json, os, sys, threading, time
import numpy as onp, numfuse as np
stop = False
def work():
    k = 0
    while not stop:
        k += 1
        x = np.arange(200000.0) * k + np.sqrt(np.arange(200000.0)) ** (1 + k % 7) - k % 13
        float(x.sum())
t = threading.Thread(target=work)
t.start()
time.sleep(0.3)
status = []
for i in range(int(sys.argv[1])):
    time.sleep(0.01 * (i % 5))
    pid = os.fork()
    if pid == 0:
        y = float((np.arange(1000.0) * 2 + i).sum())        # a kernel the parent has compiled
        z = float(np.cos(np.arange(50.0) * (i + 1)).sum())   # a new one: compiled in the child
        zr = float(onp.cos(onp.arange(50.0) * (i + 1)).sum())
        # a kernel with a parallel loop (the parent's threads do not exist here)
        w = float((np.arange(200000.0) * 2).max())
        os._exit(0 if y == 999000.0 + 1000 * i and abs(z - zr) <= 1e-12 * max(1, abs(zr)) and w == 399998.0 else 3)
    for _ in range(400):
        r, st = os.waitpid(pid, os.WNOHANG)
        if r:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        status.append("hung")
        continue
    status.append("ok" if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 else "status %d" % st)
stop = True
t.join()
# The parent goes on working after the forks.
p = float((np.arange(3000.0) * 3).sum())
print(json.dumps({"children": status, "parent": p}))
"""


def test_fork_while_another_thread_flushes(tmp_path):
    r = last_json(run_script(FORK_WHILE_FLUSHING, 8, cache=tmp_path, timeout=120))
    assert r["children"] == ["ok"] * 8
    assert r["parent"] == 3.0 * 2999 * 3000 / 2


MULTIPROCESSING = """
import json, sys, threading, multiprocessing as mp
import numpy as onp, numfuse as np

def task(i):
    x = np.arange(1000.0) * (i + 1)
    y = np.where(x > 500, np.sqrt(x), -x)
    return float(y.sum()), float(np.cumsum(y)[-1])

def ref(i):
    x = onp.arange(1000.0) * (i + 1)
    y = onp.where(x > 500, onp.sqrt(x), -x)
    return float(y.sum()), float(onp.cumsum(y)[-1])

if __name__ == "__main__":
    method = sys.argv[1]
    warm = [task(i) for i in range(2)]    # kernels have run in the parent
    stop = False
    def busy():
        k = 0
        while not stop:
            k += 1
            float((np.arange(50000.0) * k).sum())
    t = threading.Thread(target=busy)
    t.start()                                 # ...and another thread is flushing
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        got = pool.map(task, range(6))
    stop = True
    t.join()
    want = [ref(i) for i in range(6)]
    ok = all(abs(g[k] - w[k]) <= 1e-9 * max(1.0, abs(w[k])) for g, w in zip(got, want) for k in range(2))
    print(json.dumps({"ok": ok, "n": len(got)}))
"""


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_start_methods(tmp_path, method):
    script = tmp_path / "mp_program.py"  # spawn and forkserver import the main module by path
    script.write_text(textwrap.dedent(MULTIPROCESSING))
    e = dict(os.environ, PYTHONPATH=_PYTHONPATH, NUMFUSE_CACHE_DIR=str(tmp_path / "cache"), NUMFUSE_TIER="lazy")
    try:
        out = subprocess.run([sys.executable, str(script), method], env=e, capture_output=True, text=True,
                             timeout=180)
    except subprocess.TimeoutExpired as t:
        pytest.fail(f"hung with start method {method}: {t.stderr}")
    r = last_json(out)
    assert r == {"ok": True, "n": 6}


SIGNAL_HANDLER_SYNCS = """
import json, signal, time
import numpy as onp, numfuse as np
hits = 0
bad = 0
def handler(signum, frame):
    global hits, bad
    hits += 1
    h = hits   # handlers nest: another signal may arrive during this one's sync
    v = float((np.arange(100.0) * h).sum())   # syncs inside the handler
    bad += v != 4950.0 * h
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
t0 = time.time()
k = 0
while time.time() - t0 < float(__import__("sys").argv[1]):
    k += 1
    x = np.arange(3000.0) * k
    s = float(np.sqrt(x).sum())
    bad += abs(s - float(onp.sqrt(onp.arange(3000.0) * k).sum())) > 1e-9 * s
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print(json.dumps({"iterations": k, "hits": hits, "bad": bad}))
"""


def test_signal_handler_that_syncs(tmp_path):
    r = last_json(run_script(SIGNAL_HANDLER_SYNCS, 2.0, cache=tmp_path, timeout=60))
    assert r["bad"] == 0 and r["iterations"] > 10 and r["hits"] > 10


# ---------------------------------------------------------------------------
# The cache directory is input
# ---------------------------------------------------------------------------

PROGRAM = """
import json, numpy as onp, numfuse as np
np.set_option("routines", False)   # the matmul is a generated kernel with a tunable schedule
a = np.asarray(onp.arange(120 * 77, dtype=onp.float64).reshape(120, 77) % 7)
b = np.asarray(onp.arange(77 * 50, dtype=onp.float64).reshape(77, 50) % 5)
x = np.arange(1000.0)
with np.profile() as p:
    c = a @ b
    y = (np.sin(x) * 2.5 + np.exp(-x / 100.0)).sum()
    np.flush()
ok = bool(onp.array_equal(onp.asarray(c), onp.asarray(a) @ onp.asarray(b)))
yr = float((onp.sin(onp.arange(1000.0)) * 2.5 + onp.exp(-onp.arange(1000.0) / 100.0)).sum())
ok = ok and abs(float(y) - yr) <= 1e-12 * abs(yr)
print(json.dumps({"ok": ok, "compiled": p["kernels_compiled"], "disk": p["disk_hits"],
                  "enabled": np._core.cache_info()["enabled"], "tuned": np.explain().groups[0]["tuned"]}))
"""

TUNE = PROGRAM.replace("with np.profile()", "np.tune(lambda u, v: u @ v, a, b, budget=1.0, evals=4, progress=False)\n"
                       "with np.profile()")


def kernel_entries(cache):
    return sorted(p for p in os.listdir(cache) if p.endswith(".nfk"))


def fill(cache, tune=False):
    """A cache directory with this program's kernels (and a tuned schedule)."""
    out = run_script(TUNE if tune else PROGRAM, cache=cache)
    r = last_json(out)
    if tune and not r["tuned"]:
        # Seen in some full-suite runs of the developers' tree, never alone
        # (see test_schedules.py): one more try, both outputs on failure.
        again = run_script(TUNE, cache=cache)
        r = last_json(again)
        r["first_try"] = out.stderr[-2000:]
    assert r["ok"] and (tune or r["compiled"] > 0) and kernel_entries(cache), r
    return r


def test_hostile_schedule_entry_is_ignored_with_a_warning(tmp_path):
    """A well-formed, legal schedules.txt entry whose tile size is 4e9 (for a
    matmul with a cached operand) must not reach the compiler."""
    cache = tmp_path / "cache"
    filled = fill(cache, tune=True)
    assert filled["tuned"], filled
    store = cache / "schedules.txt"
    lines = store.read_text().splitlines()
    assert lines
    hostile = []
    for line in lines:
        f = line.split("\t")
        tiles = f[3].split("|")[0]
        assert tiles.startswith("t")
        dims = tiles[1:].split(";")
        dims[0] = ",".join(["4000000000"] + dims[0].split(",")[1:])
        f[3] = "t" + ";".join(dims) + f[3][len(tiles):]
        hostile.append("\t".join(f))
    store.write_text("\n".join(hostile) + "\n")
    out = run_script(PROGRAM, cache=cache)
    r = last_json(out)
    assert r["ok"] and not r["tuned"]
    assert "ignoring a tuned schedule" in out.stderr and "4000000000" in out.stderr


def test_fifos_named_like_cache_entries_do_not_block(tmp_path):
    cache = tmp_path / "cache"
    first = fill(cache)
    fill(cache, tune=True)
    names = kernel_entries(cache) + ["schedules.txt", "schedules.txt.lock"]
    for name in names:
        os.unlink(cache / name)
        os.mkfifo(cache / name, 0o600)
    r = last_json(run_script(PROGRAM, cache=cache, timeout=90))
    assert r["ok"] and r["disk"] == 0 and r["compiled"] == first["compiled"] and not r["tuned"]
    for name in names:  # never opened; an entry may have been written over by rename
        mode = os.lstat(cache / name).st_mode
        assert stat.S_ISFIFO(mode) or (stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_cache_of_another_owner_is_refused(tmp_path):
    cache = tmp_path / "cache"
    fill(cache)
    os.chown(cache, 65534, 65534)
    out = run_script(PROGRAM, cache=cache)
    r = last_json(out)
    assert r["ok"] and not r["enabled"] and r["disk"] == 0
    assert "NumfuseWarning" in out.stderr and "owned by" in out.stderr


def test_entries_of_another_owner_or_writable_by_others_are_skipped(tmp_path):
    cache = tmp_path / "cache"
    first = fill(cache)
    names = kernel_entries(cache)
    for k, name in enumerate(names):
        if k % 2 == 0 and os.geteuid() == 0:
            os.chown(cache / name, 65534, 65534)
        else:
            os.chmod(cache / name, 0o666)
    r = last_json(run_script(PROGRAM, cache=cache))
    assert r["ok"] and r["disk"] == 0 and r["compiled"] == first["compiled"]


def test_symlinks(tmp_path):
    """A symlinked cache directory is followed (it is the user's choice); a
    symlink named like an entry is never followed (it may point anywhere)."""
    real = tmp_path / "real"
    first = fill(real)
    link = tmp_path / "link"
    os.symlink(real, link)
    r = last_json(run_script(PROGRAM, cache=link))
    assert r["ok"] and r["enabled"] and r["compiled"] == 0 and r["disk"] == first["compiled"]
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    for name in kernel_entries(real):
        os.rename(real / name, other / name)
        os.symlink(other / name, real / name)
    r = last_json(run_script(PROGRAM, cache=real))
    assert r["ok"] and r["disk"] == 0 and r["compiled"] == first["compiled"]


def _small_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_full_disk(tmp_path):
    """Writes that fail part way (here: a file-size limit of 2000 bytes) leave
    no entry and no temporary file behind, and the results are right."""
    cache = tmp_path / "cache"
    r = last_json(run_script(TUNE, cache=cache, preexec_fn=_small_files))
    assert r["ok"] and r["compiled"] > 0
    left = os.listdir(cache)
    assert not [n for n in left if n.startswith(".tmp") or n.endswith(".nfk")], left
    r = last_json(run_script(PROGRAM, cache=cache))  # and the cache still works afterwards
    assert r["ok"] and r["disk"] == 0 and kernel_entries(cache)


def test_two_processes_filling_one_cache(tmp_path):
    cache = tmp_path / "cache"
    e = dict(os.environ, PYTHONPATH=_PYTHONPATH, NUMFUSE_CACHE_DIR=str(cache), NUMFUSE_TIER="lazy")
    procs = [subprocess.Popen([sys.executable, "-c", TUNE], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    for p in procs:
        try:
            out, err = p.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("hung: two processes writing one cache")
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["ok"]
    r = last_json(run_script(PROGRAM, cache=cache))
    store = (cache / "schedules.txt").read_text()
    assert r["ok"] and r["compiled"] == 0 and r["tuned"], (r, store, sorted(os.listdir(cache)))
    assert len(store.splitlines()) == 1, store


def test_oversized_entries_are_not_read(tmp_path):
    cache = tmp_path / "cache"
    first = fill(cache)
    filled = fill(cache, tune=True)
    assert filled["tuned"], filled
    for name in kernel_entries(cache) + ["schedules.txt"]:
        with open(cache / name, "r+b") as f:  # sparse: huge on paper, no disk used
            f.truncate(1 << 34)
    r = last_json(run_script(PROGRAM, cache=cache))
    assert r["ok"] and r["disk"] == 0 and r["compiled"] == first["compiled"] and not r["tuned"]


# ---------------------------------------------------------------------------
# libomp's registration file
# ---------------------------------------------------------------------------

STALE_REGISTRATION = """
import glob, json, os, sys
# What a process killed (or refused by a file-size limit) while libomp
# registered itself leaves behind, under the pid this process now has.
names = [f"{d}/__KMP_REGISTERED_LIB_{os.getpid()}_{os.getuid()}" for d in ("/dev/shm", "/tmp")]
for n in names[: int(sys.argv[1])]:
    open(n, "w").close()
import numpy as onp, numfuse as np
x = np.arange(100000.0)
v = float((np.sin(x) * 2 + 1).sum())
print(json.dumps({"ok": v == float((onp.sin(onp.arange(100000.0)) * 2 + 1).sum()),
                  "empty_left": [n for n in names if os.path.exists(n) and os.path.getsize(n) == 0]}))
"""


@pytest.mark.parametrize("where", [1, 2])
def test_empty_openmp_registration_of_a_dead_process(tmp_path, where):
    """An empty __KMP_REGISTERED_LIB_<pid>_<uid> file named for our pid made
    libomp die with SIGBUS at its first parallel region."""
    r = last_json(run_script(STALE_REGISTRATION, where, cache=tmp_path))
    assert r["ok"] and r["empty_left"] == []


def test_failed_openmp_registration_leaves_nothing_behind(tmp_path):
    """A file-size limit makes libomp's registration fail half way; the empty
    file it leaves would kill the next process given the same pid."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    code = "import os, numfuse as np; print(os.getpid()); print(float((np.arange(1e5) * 2).sum()))"
    out = run_script(code, cache=tmp_path, preexec_fn=limit)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    left = [f"{d}/__KMP_REGISTERED_LIB_{pid}_{os.getuid()}" for d in ("/dev/shm", "/tmp")]
    assert not [n for n in left if os.path.exists(n) and os.path.getsize(n) == 0]

"""The cache-directory campaign: whatever is in numfuse's cache directory is
input, so every round damages a copy of a real cache in one seeded way and
runs a victim process on it, which must finish in time, not crash, and
compute the right results (checked against NumPy inside the victim).

    python -m tests.fuzz.cache_campaign --rounds 300 --seed 0 [--workers 2] [--report out.json]
    python -m tests.fuzz.cache_campaign --attack fifo --rounds 5    # one kind of attack only

Attacks (ATTACKS): corrupted, truncated, empty, garbage and swapped entries;
oversized (sparse) files; FIFOs, directories and symlinks named like entries
or schedules.txt; adversarial schedules.txt lines (huge, negative or zero
tiles, junk, binary, long lines, wrong fields); group/world-writable
directories and entries; entries and directories of another owner (as
root); a symlinked cache directory; a read-only cache; a full disk
(RLIMIT_FSIZE); a lock file held by another process; several processes
filling one cache at once. After the damaged run, a clean run on the same
directory must also be right (the cache was not poisoned for later).

Exit status 0 only when every round ended with right results.
"""

import argparse
import concurrent.futures
import fcntl
import json
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

# The victim: kernels of several kinds (element-wise, reductions, a scan, a
# tunable matmul), each result checked against NumPy.
VICTIM = r"""
import json, sys, numpy as onp, numfuse as np
np.set_option("routines", False)
if len(sys.argv) > 1 and sys.argv[1] == "tune":
    a0 = np.ones((96, 40)); b0 = np.ones((40, 72))
    np.tune(lambda u, v: u @ v, a0, b0, budget=0.5, evals=3, progress=False)
an = onp.arange(96 * 40, dtype=onp.float64).reshape(96, 40) % 7
bn = onp.arange(40 * 72, dtype=onp.float64).reshape(40, 72) % 5
xn = onp.linspace(-3, 3, 2000)
a, b, x = np.asarray(an), np.asarray(bn), np.asarray(xn)
with np.profile() as p:
    got = [a @ b, (np.sin(x) * 2.5 + np.exp(-x / 10.0)).sum(), np.cumsum(np.where(x > 0, x, -2 * x))[-5:],
           np.sqrt(np.abs(x[1:] - x[:-1])).max(), (x.reshape(40, 50) ** 2).mean(axis=0)[:4]]
    np.flush()
want = [an @ bn, (onp.sin(xn) * 2.5 + onp.exp(-xn / 10.0)).sum(), onp.cumsum(onp.where(xn > 0, xn, -2 * xn))[-5:],
        onp.sqrt(onp.abs(xn[1:] - xn[:-1])).max(), (xn.reshape(40, 50) ** 2).mean(axis=0)[:4]]
ok = all(onp.allclose(onp.asarray(g), w, rtol=1e-12, atol=0) for g, w in zip(got, want))
print(json.dumps({"ok": bool(ok), "compiled": p["kernels_compiled"], "disk": p["disk_hits"],
                  "enabled": np._core.cache_info()["enabled"]}))
"""

ATTACKS = ("corrupt", "truncate", "empty", "garbage", "swap", "oversized", "fifo", "directory", "symlink_entry",
           "schedules_junk", "schedules_hostile", "dir_mode", "entry_mode", "foreign_dir", "foreign_entry",
           "symlink_dir", "readonly", "full_disk", "lock_held", "concurrent")

ROOT = os.geteuid() == 0


def _pythonpath():
    """The victims import the numfuse this process would import (an
    installed one, or the source tree on PYTHONPATH with its built core)."""
    import importlib.util

    spec = importlib.util.find_spec("numfuse")
    parts = [os.environ.get("PYTHONPATH", "")]
    if spec is not None and spec.origin:
        parts.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(spec.origin))))
    return os.pathsep.join(p for p in parts if p)


def run_victim(cache, timeout, env=None, args=(), preexec_fn=None):
    """Runs the victim; returns (status, detail, result): status is ok,
    wrong, crash (signal or error exit) or hang."""
    # Victims compile every operation (the cache is what is under attack).
    e = dict(os.environ, NUMFUSE_CACHE_DIR=str(cache), PYTHONPATH=_pythonpath(), PYTHONFAULTHANDLER="1",
             NUMFUSE_TIER="lazy")
    e.update(env or {})
    try:
        out = subprocess.run([sys.executable, "-c", VICTIM, *args], env=e, capture_output=True, text=True,
                             timeout=timeout, preexec_fn=preexec_fn)
    except subprocess.TimeoutExpired as t:
        return "hang", f"no exit within {timeout} s; stderr: {(t.stderr or '')[-1500:]}", None
    if out.returncode != 0:
        return "crash", f"return code {out.returncode}; stderr: {out.stderr[-1500:]}", None
    try:
        r = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "crash", f"no result; stdout: {out.stdout[-500:]}", None
    r["stderr"] = out.stderr
    return ("ok" if r["ok"] else "wrong"), out.stderr[-1500:], r


def pristine(workdir, timeout):
    """A real cache: kernels and a tuned schedule, written by the victim."""
    cache = os.path.join(workdir, "pristine")
    status, detail, r = run_victim(cache, timeout, args=("tune",))
    if status != "ok" or not r["compiled"]:
        raise RuntimeError(f"could not fill a cache: {status} {detail}")
    return cache


def entries(cache):
    return sorted(n for n in os.listdir(cache) if n.endswith(".nfk"))


def _some(rng, names):
    k = rng.randint(1, len(names))
    return rng.sample(names, k)


def _hostile_line(rng, line):
    f = line.split("\t")
    if len(f) < 4:
        return line
    tiles = f[3].split("|")[0]
    choice = rng.choice(["huge", "negative", "zero", "many", "nan_time", "overflow", "fields"])
    if choice == "huge":
        f[3] = f[3].replace(tiles, "t" + ";".join("4000000000" for _ in tiles[1:].split(";")), 1)
    elif choice == "negative":
        f[3] = f[3].replace(tiles, "t-8;" + ";".join(tiles[1:].split(";")[1:]), 1)
    elif choice == "zero":
        f[3] = f[3].replace(tiles, "t0,0;" + ";".join(tiles[1:].split(";")[1:]), 1)
    elif choice == "many":
        f[3] = f[3].replace(tiles, tiles + ",2" * 500, 1)
    elif choice == "overflow":
        f[3] = f[3].replace(tiles, "t99999999999999999999999;" + ";".join(tiles[1:].split(";")[1:]), 1)
    elif choice == "nan_time" and len(f) > 4:
        f[4] = "nan"
    else:
        f = f[:3] + ["|".join(["o9.9"] * 50)] + f[4:]
    return "\t".join(f)


def attack(kind, rng, cache, scratch):
    """Damages `cache` (a copy of a pristine one) in place. Returns what the
    victim needs: (cache path to use, env, preexec_fn, cleanup, note, victim args)."""
    names = entries(cache)
    sched = os.path.join(cache, "schedules.txt")
    env, preexec, cleanup, note, args = {}, None, None, "", ()
    use = cache
    if kind == "corrupt":
        for n in _some(rng, names):
            p = os.path.join(cache, n)
            data = bytearray(open(p, "rb").read())
            for _ in range(rng.randint(1, 64)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            open(p, "wb").write(bytes(data))
    elif kind == "truncate":
        for n in _some(rng, names + ["schedules.txt"]):
            p = os.path.join(cache, n)
            os.truncate(p, rng.randrange(max(1, os.path.getsize(p))))
    elif kind == "empty":
        for n in _some(rng, names + ["schedules.txt"]):
            open(os.path.join(cache, n), "wb").close()
    elif kind == "garbage":
        for n in _some(rng, names):
            head = rng.choice([b"", b"NFK1", open(os.path.join(cache, n), "rb").read(64)])
            open(os.path.join(cache, n), "wb").write(head + rng.randbytes(rng.randrange(1, 20000)))
    elif kind == "swap":
        chosen = _some(rng, names)
        data = [open(os.path.join(cache, n), "rb").read() for n in chosen]
        rng.shuffle(data)
        for n, d in zip(chosen, data):
            open(os.path.join(cache, n), "wb").write(d)
        note = "entries moved to other keys' names"
    elif kind == "oversized":
        for n in _some(rng, names + ["schedules.txt"]):
            os.truncate(os.path.join(cache, n), rng.choice([1 << 27, 1 << 34, 1 << 40]))
    elif kind in ("fifo", "directory"):
        for n in _some(rng, names + ["schedules.txt", "schedules.txt.lock"]):
            p = os.path.join(cache, n)
            if os.path.lexists(p):
                os.unlink(p)
            os.mkfifo(p, 0o600) if kind == "fifo" else os.mkdir(p, 0o700)
    elif kind == "symlink_entry":
        targets = ["/dev/zero", "/dev/urandom", "/nonexistent", "/etc", os.path.join(scratch, "elsewhere")]
        shutil.copy(os.path.join(cache, names[0]), os.path.join(scratch, "elsewhere"))
        for n in _some(rng, names + ["schedules.txt", "schedules.txt.lock"]):
            p = os.path.join(cache, n)
            if os.path.lexists(p):
                os.unlink(p)
            os.symlink(rng.choice(targets), p)
    elif kind == "schedules_junk":
        junk = rng.choice([rng.randbytes(rng.randrange(1, 5000)), b"\t" * 10000, b"x" * (1 << 20) + b"\n",
                           b"\n".join(rng.randbytes(40) for _ in range(200)), b"\0" * 100])
        with open(sched, "ab") as f:
            f.write(junk)
    elif kind == "schedules_hostile":
        lines = open(sched).read().splitlines()
        open(sched, "w").write("\n".join(_hostile_line(rng, ln) for ln in lines) + "\n")
    elif kind == "dir_mode":
        os.chmod(cache, rng.choice([0o777, 0o770, 0o757, 0o722, 0o1777]))
        note = "refused: compiles in memory"
    elif kind == "entry_mode":
        for n in _some(rng, names + ["schedules.txt"]):
            os.chmod(os.path.join(cache, n), rng.choice([0o666, 0o646, 0o620, 0o602]))
    elif kind == "foreign_dir":
        os.chown(cache, 65534, 65534)
    elif kind == "foreign_entry":
        for n in _some(rng, names + ["schedules.txt"]):
            os.chown(os.path.join(cache, n), 65534, 65534)
    elif kind == "symlink_dir":
        use = os.path.join(scratch, "link")
        os.symlink(cache, use)
    elif kind == "readonly":
        env["NUMFUSE_CACHE_MODE"] = "readonly"
        for n in _some(rng, names):
            os.unlink(os.path.join(cache, n))
    elif kind == "full_disk":
        for n in _some(rng, names):
            os.unlink(os.path.join(cache, n))
        limit = rng.choice([0, 1, 512, 4096, 9000, 20000])

        def preexec():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        note = f"file size limit {limit} bytes"
    elif kind == "lock_held":
        fd = os.open(os.path.join(cache, "schedules.txt.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        cleanup = lambda: os.close(fd)  # noqa: E731
        note = "schedules.txt.lock held by another process while the victim tunes"
        args = ("tune",)
    return use, env, preexec, cleanup, note, args


def one_round(kind, seed, pristine_dir, workdir, timeout):
    rng = random.Random(seed)
    scratch = tempfile.mkdtemp(prefix=f"r{seed}-", dir=workdir)
    cache = os.path.join(scratch, "cache")
    shutil.copytree(pristine_dir, cache, symlinks=True)
    result = {"seed": seed, "attack": kind, "status": "ok", "detail": ""}
    try:
        if kind == "concurrent":
            for n in _some(rng, entries(cache)) + ["schedules.txt"]:
                os.unlink(os.path.join(cache, n))
            with concurrent.futures.ThreadPoolExecutor(3) as ex:
                runs = list(ex.map(lambda i: run_victim(cache, timeout, args=("tune",) if i % 2 else ()), range(3)))
            bad = [r for r in runs if r[0] != "ok"]
            if bad:
                result.update(status=bad[0][0], detail=bad[0][1])
                return result
        else:
            use, env, preexec, cleanup, note, args = attack(kind, rng, cache, scratch)
            result["note"] = note
            try:
                status, detail, r = run_victim(use, timeout, env=env, args=args, preexec_fn=preexec)
            finally:
                if cleanup:
                    cleanup()
            if status != "ok":
                result.update(status=status, detail=detail)
                return result
            if kind == "lock_held" and "held by another process" not in r["stderr"]:
                result.update(status="wrong", detail="no warning about the held lock")
                return result
            if kind == "symlink_dir" and not r["disk"]:
                result.update(status="wrong", detail="a symlinked cache directory was not used")
                return result
            if kind == "full_disk":
                left = [n for n in os.listdir(cache) if n.startswith(".tmp")]
                if left:
                    result.update(status="wrong", detail=f"temporary files left behind: {left}")
                    return result
        # Afterwards the directory (repaired, refused or untouched) still
        # gives right results to a clean process.
        if kind in ("foreign_dir", "dir_mode"):
            os.chmod(cache, 0o700)
        status, detail, r = run_victim(cache, timeout)
        if status != "ok":
            result.update(status=status, detail="after the attack: " + detail)
    except Exception as exc:  # the harness itself
        result.update(status="harness_error", detail=f"{type(exc).__name__}: {exc}")
    finally:
        _remove(scratch)
    return result


def _remove(path):
    for root, dirs, files in os.walk(path):
        for d in dirs:
            p = os.path.join(root, d)
            if not os.path.islink(p):
                os.chmod(p, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def kinds_for(seeds, only=None):
    usable = [k for k in ATTACKS if ROOT or not k.startswith("foreign")]
    if only:
        usable = [k for k in usable if k in only]
    return [(usable[i % len(usable)], s) for i, s in enumerate(seeds)]


def run_campaign(rounds, seed=0, workers=2, timeout=90.0, only=None, progress=True):
    workdir = tempfile.mkdtemp(prefix="nf-cache-campaign-")
    t0 = time.time()
    try:
        base = pristine(workdir, timeout)
        plan = kinds_for(range(seed, seed + rounds), only)
        results = []
        with concurrent.futures.ThreadPoolExecutor(workers) as ex:
            futs = [ex.submit(one_round, k, s, base, workdir, timeout) for k, s in plan]
            for i, f in enumerate(concurrent.futures.as_completed(futs)):
                results.append(f.result())
                if progress and (i + 1) % 20 == 0:
                    bad = sum(r["status"] != "ok" for r in results)
                    print(f"[cache] {i + 1} rounds  failures {bad}", flush=True)
    finally:
        _remove(workdir)
    per = {}
    for r in results:
        d = per.setdefault(r["attack"], {"rounds": 0, "ok": 0})
        d["rounds"] += 1
        d["ok"] += r["status"] == "ok"
    return {"rounds": len(results), "seconds": round(time.time() - t0, 1), "per_attack": per,
            "failures": [r for r in results if r["status"] != "ok"]}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.cache_campaign", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2 * len(ATTACKS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per victim before it is a hang")
    ap.add_argument("--attack", action="append", choices=ATTACKS, help="only this kind (repeatable)")
    ap.add_argument("--report", help="write a JSON summary here")
    args = ap.parse_args(argv)
    print(f"[cache] {args.rounds} rounds from seed {args.seed}, {args.workers} workers", flush=True)
    s = run_campaign(args.rounds, args.seed, args.workers, args.timeout, args.attack)
    for kind, d in sorted(s["per_attack"].items()):
        print(f"[cache]   {kind:18s} {d['ok']:4d}/{d['rounds']} right")
    for f in s["failures"][:30]:
        print(f"[cache] FAILED seed {f['seed']} {f['attack']} ({f.get('note', '')}): {f['status']}: "
              f"{f['detail'][:800]}")
    print(f"[cache] {s['rounds']} rounds, {len(s['failures'])} failures, {s['seconds']} s", flush=True)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(s, f, indent=1)
    return 1 if s["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""The differential fuzz campaign: many seeded programs, numfuse against NumPy.

    python -m tests.fuzz.campaign --programs 20000 --seed 0 --workers 2 --timeout 60 [--report out.json]
    python tests/fuzz/campaign.py --only SEED        # rerun one program verbosely, in-process
    python tests/fuzz/campaign.py --minimize SEED    # shrink a failing program (--focus mismatch/layout ...)
    python tests/fuzz/campaign.py --show SEED        # print a program (and a runnable script with --script)

Worker processes (multiprocessing, 'spawn') import NumPy and numfuse once and
run programs one after another. A program that does not finish within
--timeout seconds is a *hang* (the worker is killed and replaced); a worker
that dies (signal, abort) is a *crash*; both are reported with the seed, the
statement it was at and the program text. An exception escaping the harness
itself is a *harness error*, reported separately.

Exit status: 0 only with no mismatch, no wrong exception, no crash, no hang
(and no harness error).
"""

import argparse
import collections
import json
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait

if __package__:
    from . import programs, runner
else:  # python tests/fuzz/campaign.py (and its spawned workers)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.fuzz import programs, runner

KINDS = ("mismatch", "wrong_exception", "crash", "hang", "harness_error")
KIND_TITLES = {"mismatch": "mismatches", "wrong_exception": "wrong exceptions", "crash": "crashes",
               "hang": "hangs", "harness_error": "harness errors"}


# ---------------------------------------------------------------------------
# worker side


def _where(progress):
    """Human-readable location from the worker's progress counter."""
    if progress < 0:
        return "generating the program"
    if progress >= 1000:
        return f"numfuse run, statement [{progress - 1000}]"
    return f"NumPy run, statement [{progress}]"


def _worker_main(conn, progress, fault_path, threads, cache_dir, memory_limit=None):
    import faulthandler

    if memory_limit:
        # a runaway allocation becomes a MemoryError (a reported difference)
        # instead of taking the machine's memory
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        except (ImportError, ValueError, OSError):
            pass

    if cache_dir:
        os.environ["NUMFUSE_CACHE_DIR"] = cache_dir  # read when numfuse's core starts

    fault = open(fault_path, "w")
    faulthandler.enable(file=fault, all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=fault, all_threads=True)
    try:
        nf = runner.numfuse()
        if threads:
            nf.set_option("threads", threads)
        if cache_dir:
            nf.set_option("cache_dir", cache_dir)
    except BaseException:  # noqa: BLE001
        conn.send(("start_error", traceback.format_exc()))
        return
    conn.send(("ready", os.getpid()))

    def on_stmt(i):
        progress.value = i

    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        task_id, task = msg
        progress.value = -1
        try:
            prog = programs.generate(task) if isinstance(task, int) else programs.Program.from_dict(task)
            chk = runner.check_program(prog, on_stmt=on_stmt)
            res = {"id": task_id, "status": "ok" if chk.ok else "fail", "config": chk.config,
                   "mismatches": [dict(kind=m.kind, category=m.category, cls=m.cls, stmt=m.stmt, var=m.var,
                                       detail=m.detail) for m in chk.mismatches],
                   "seconds": [chk.np_outcome.seconds, chk.nf_outcome.seconds],
                   "numpy_overlap_bug": bool(chk.numpy_overlap_bugs)}
        except Exception:  # noqa: BLE001 - the harness itself failed
            res = {"id": task_id, "status": "harness_error", "traceback": traceback.format_exc()}
        conn.send(res)


# ---------------------------------------------------------------------------
# parent side


class _Worker:
    def __init__(self, ctx, tmpdir, threads, n, cache_dir=None, memory_limit=None):
        self.fault_path = os.path.join(tmpdir, f"worker{n}.fault")
        self.progress = ctx.Value("i", -2, lock=False)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, self.progress, self.fault_path, threads, cache_dir,
                                                                memory_limit),
                                daemon=True)
        self.proc.start()
        child.close()
        self.started = time.monotonic()
        self.ready = False
        self.task = None        # (task_id, task)
        self.task_started = None
        self.done = 0

    def send(self, task_id, task):
        self.task = (task_id, task)
        self.task_started = time.monotonic()
        self.conn.send((task_id, task))

    def fault_text(self, limit=4000):
        try:
            with open(self.fault_path) as f:
                s = f.read()
        except OSError:
            return ""
        return s[-limit:]

    def stop(self, kill=False):
        try:
            if kill:
                self.proc.kill()
            else:
                try:
                    self.conn.send(None)
                except (OSError, ValueError):
                    pass
                self.proc.join(5)
                if self.proc.is_alive():
                    self.proc.kill()
            self.proc.join(5)
        finally:
            try:
                self.conn.close()
            except OSError:
                pass
            try:
                os.unlink(self.fault_path)
            except OSError:
                pass


class Summary:
    def __init__(self):
        self.programs = 0
        self.passed = 0
        self.counts = collections.Counter()          # kind -> programs
        self.items = collections.Counter()           # kind -> individual differences
        self.by_class = collections.Counter()        # (kind, class) -> programs
        self.failures = collections.defaultdict(list)  # kind -> [entry]
        self.seeds = collections.defaultdict(list)     # kind -> [seed]
        self.seconds = 0.0
        self.nf_seconds = 0.0
        self.slowest = (0.0, None)                     # (seconds, seed) of the slowest finished program
        self.numpy_overlap_bugs = []                   # seeds where only NumPy broke its overlap rule (runner.py)
        self.interrupted = False

    @property
    def failed(self):
        return any(self.counts[k] for k in KINDS)

    def add(self, kind, entry, keep):
        self.counts[kind] += 1
        self.by_class[(kind, entry.get("cls", "?"))] += 1
        self.seeds[kind].append(entry["seed"])
        if len(self.failures[kind]) < keep:
            if callable(entry.get("program")):
                entry["program"] = entry["program"]()
            self.failures[kind].append(entry)

    def line(self):
        rate = self.programs / self.seconds if self.seconds else 0.0
        return (f"{self.programs} programs  mismatches {self.counts['mismatch']}  wrong exceptions "
                f"{self.counts['wrong_exception']}  crashes {self.counts['crash']}  hangs {self.counts['hang']}  "
                f"harness errors {self.counts['harness_error']}  {rate:.1f} programs/s")

    def to_json(self):
        return {"programs": self.programs, "passed": self.passed, "numpy_overlap_bugs": self.numpy_overlap_bugs,
                "counts": {k: self.counts[k] for k in KINDS},
                "differences": {k: self.items[k] for k in ("mismatch", "wrong_exception")},
                "by_class": {f"{k}/{c}": n for (k, c), n in sorted(self.by_class.items())},
                "seconds": round(self.seconds, 2),
                "programs_per_second": round(self.programs / self.seconds, 2) if self.seconds else None,
                "slowest_program": {"seconds": round(self.slowest[0], 3), "seed": self.slowest[1]},
                "failing_seeds": {k: v for k, v in self.seeds.items()},
                "failures": {k: v for k, v in self.failures.items()}}


def _label(task):
    return task if isinstance(task, int) else task.seed


def _program_of(task):
    return programs.generate(task) if isinstance(task, int) else task


class WorkerPool:
    """Worker processes that run programs with a time limit; replaced when
    they crash, hang, or have run `restart_every` programs. Reusable across
    several `run_campaign` calls (``with WorkerPool(...) as pool:``)."""

    def __init__(self, workers=2, threads=None, restart_every=1000, start_timeout=300.0, cache_dir=None,
                 memory_limit=8 << 30):
        """cache_dir: numfuse's kernel cache for the workers; None: a fresh
        temporary one, removed at the end (fuzzing compiles many one-off
        kernels: ~20 cache files per program); "default": numfuse's own."""
        self.ctx = mp.get_context("spawn")
        self.tmpdir = tempfile.mkdtemp(prefix="numfuse-fuzz-")
        self.own_cache = cache_dir is None
        if cache_dir is None:
            cache_dir = os.path.join(self.tmpdir, "kernel-cache")
        self.cache_dir = None if cache_dir == "default" else cache_dir
        self.memory_limit = memory_limit
        self.threads = threads
        self.restart_every = restart_every
        self.start_timeout = start_timeout
        self.serial = 0
        self.workers = [self._new() for _ in range(max(1, workers))]

    def _new(self):
        self.serial += 1
        return _Worker(self.ctx, self.tmpdir, self.threads, self.serial, self.cache_dir, self.memory_limit)

    def replace(self, i, kill=True):
        self.workers[i].stop(kill=kill)
        self.workers[i] = self._new()

    def close(self):
        for w in self.workers:
            w.stop(kill=w.task is not None)
        self.workers = []
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_campaign(tasks, workers=2, timeout=60.0, progress_every=500, out=sys.stdout, keep=30, threads=None,
                 restart_every=1000, start_timeout=300.0, pool=None, on_result=None, cache_dir=None,
                 memory_limit=8 << 30):
    """Run `tasks` (seeds, or Program objects for custom programs) in worker
    processes; returns a Summary. The internal API the tests use.
    `on_result(index, result)`: called per task with its result dict
    (status ok / fail / crash / hang / harness_error, and the mismatches)."""
    tasks = list(tasks)
    summary = Summary()
    if not tasks:
        return summary
    own = pool is None
    if own:
        pool = WorkerPool(min(workers, len(tasks)), threads, restart_every, start_timeout, cache_dir, memory_limit)
    queue = collections.deque(enumerate(tasks))
    t0 = time.monotonic()
    next_report = progress_every

    def emit(s):
        if out is not None:
            print(s, file=out, flush=True)

    def record_result(tid, task, res):
        summary.programs += 1
        secs = res.get("seconds", [0, 0])
        summary.nf_seconds += secs[1]
        if sum(secs) > summary.slowest[0]:
            summary.slowest = (sum(secs), _label(task))
        if on_result is not None:
            on_result(tid, res)
        if res["status"] == "ok":
            summary.passed += 1
            if res.get("numpy_overlap_bug"):
                summary.numpy_overlap_bugs.append(_label(task))
            return
        if res["status"] == "harness_error":
            summary.add("harness_error", {"seed": _label(task), "cls": "harness",
                                          "program": lambda: _program_text(task), "details": res["traceback"]}, keep)
            return
        by_cat = collections.defaultdict(list)
        for m in res["mismatches"]:
            by_cat[m["category"]].append(m)
        for cat, ms in by_cat.items():
            summary.items[cat] += len(ms)
            first = min(ms, key=lambda m: m["stmt"] if m["stmt"] is not None else 10**6)
            summary.add(cat, {"seed": _label(task), "config": res["config"], "cls": first["cls"],
                              "program": lambda: _program_text(task),
                              "details": [_fmt_mismatch(m) for m in ms[:12]],
                              "more": max(0, len(ms) - 12)}, keep)

    def record_dead(kind, tid, task, w, detail):
        summary.programs += 1
        prog = None
        try:
            prog = _program_of(task)
        except Exception:  # noqa: BLE001
            pass
        p = w.progress.value
        cls = "?"
        where = _where(p)
        if prog is not None:
            k = p - 1000 if p >= 1000 else p
            if 0 <= k < len(prog.stmts):
                cls = prog.stmts[k].cls
            elif k >= len(prog.stmts):
                cls = "end"
                where = ("numfuse" if p >= 1000 else "NumPy") + " run, end-of-program snapshot (sync)"
        if on_result is not None:
            on_result(tid, {"status": kind, "cls": cls, "where": where, "detail": detail})
        summary.add(kind, {"seed": _label(task), "config": prog.config if prog else None, "cls": cls,
                           "program": prog.text() if prog else "?", "where": where, "details": detail}, keep)

    def loop():
        nonlocal next_report
        while queue or any(w.task is not None for w in pool.workers):
            for w in pool.workers:
                if w.ready and w.task is None and queue:
                    tid, task = queue.popleft()
                    w.send(tid, task if isinstance(task, int) else task.to_dict())
            waitables = [w.conn for w in pool.workers] + [w.proc.sentinel for w in pool.workers]
            deadlines = [w.task_started + timeout for w in pool.workers if w.task is not None]
            deadlines += [w.started + pool.start_timeout for w in pool.workers if not w.ready]
            wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else 1.0
            wait(waitables, timeout=min(wait_s, 1.0) + 0.01)
            now = time.monotonic()
            for i, w in enumerate(pool.workers):
                tid = w.task[0] if w.task is not None else None
                task = tasks[tid] if tid is not None else None
                msg = None
                dead = False
                try:
                    if w.conn.poll():
                        msg = w.conn.recv()
                except (EOFError, OSError):
                    dead = True
                if msg is not None:
                    if isinstance(msg, tuple) and msg[0] == "ready":
                        w.ready = True
                    elif isinstance(msg, tuple) and msg[0] == "start_error":
                        raise RuntimeError("a fuzz worker could not start:\n" + msg[1])
                    else:
                        w.task = None
                        w.done += 1
                        record_result(tid, task, msg)
                        if w.done >= pool.restart_every:
                            pool.replace(i, kill=False)
                    continue
                if dead or not w.proc.is_alive():
                    w.proc.join(2)
                    code = w.proc.exitcode
                    if code is not None and code < 0:
                        try:
                            how = f"killed by signal {signal.Signals(-code).name}"
                        except ValueError:
                            how = f"killed by signal {-code}"
                    else:
                        how = f"exited with status {code}"
                    if task is None:
                        raise RuntimeError(f"a fuzz worker died while idle ({how}):\n{w.fault_text()}")
                    record_dead("crash", tid, task, w, f"worker {how}\n{w.fault_text()}")
                    pool.replace(i)
                    continue
                if w.task is not None and now - w.task_started > timeout:
                    if hasattr(signal, "SIGUSR1"):
                        try:
                            os.kill(w.proc.pid, signal.SIGUSR1)  # faulthandler: where it is stuck
                            time.sleep(0.5)
                        except OSError:
                            pass
                    record_dead("hang", tid, task, w, f"no answer after {timeout:g} s\n{w.fault_text()}")
                    pool.replace(i)
                    continue
                if not w.ready and now - w.started > pool.start_timeout:
                    raise RuntimeError(f"a fuzz worker did not start within {pool.start_timeout:g} s")
            summary.seconds = time.monotonic() - t0
            if progress_every and summary.programs >= next_report:
                next_report += progress_every
                emit("[fuzz] " + summary.line())

    try:
        try:
            loop()
        except KeyboardInterrupt:
            summary.interrupted = True
            emit("[fuzz] interrupted; summary of the programs that finished:")
    finally:
        if own:
            pool.close()
    summary.seconds = time.monotonic() - t0
    return summary


def _program_text(task):
    try:
        return _program_of(task).text()
    except Exception:  # noqa: BLE001
        return "<program could not be regenerated>"


def _fmt_mismatch(m):
    return str(runner.Mismatch(m["kind"], m["cls"], m["stmt"], m["var"], m["detail"]))


def print_summary(summary, out=sys.stdout, per_kind=30):
    p = lambda s="": print(s, file=out)
    p("=" * 78)
    p("numfuse differential fuzz campaign")
    p(f"  programs          {summary.programs}  (passed {summary.passed})")
    p(f"  mismatches        {summary.counts['mismatch']} programs ({summary.items['mismatch']} differences)")
    p(f"  wrong exceptions  {summary.counts['wrong_exception']} programs ({summary.items['wrong_exception']} statements)")
    p(f"  crashes           {summary.counts['crash']}")
    p(f"  hangs             {summary.counts['hang']}")
    p(f"  harness errors    {summary.counts['harness_error']}")
    if summary.numpy_overlap_bugs:
        p(f"  passed where NumPy broke its own overlap rule (numfuse kept it): "
          f"{len(summary.numpy_overlap_bugs)}, seeds {summary.numpy_overlap_bugs[:10]}")
    rate = summary.programs / summary.seconds if summary.seconds else 0
    p(f"  time              {summary.seconds:.1f} s ({rate:.1f} programs/s; slowest finished program "
      f"{summary.slowest[0]:.2f} s, seed {summary.slowest[1]!r})")
    if summary.by_class:
        p("  by statement class (programs):")
        for (k, c), n in sorted(summary.by_class.items(), key=lambda kv: (KINDS.index(kv[0][0]), -kv[1])):
            p(f"    {KIND_TITLES[k]:<17} {c:<15} {n}")
    for kind in KINDS:
        entries = summary.failures.get(kind, [])
        if not entries:
            continue
        p()
        p("=" * 78)
        p(f"{KIND_TITLES[kind]}: {summary.counts[kind]} programs (first {len(entries)} shown, by statement class)")
        groups = collections.defaultdict(list)
        for e in entries:
            groups[e.get("cls", "?")].append(e)
        for cls in sorted(groups, key=lambda c: -len(groups[c])):
            p(f"--- {kind} / {cls} ({len(groups[cls])}) " + "-" * 40)
            for e in groups[cls][:per_kind]:
                p(f"seed {e['seed']!r}  config {e.get('config')}" + (f"  at {e['where']}" if e.get("where") else ""))
                p(f"  reproduce: python -m tests.fuzz.campaign --only {e['seed']!r}")
                p("  program:")
                for l in e["program"].split("\n"):
                    p("    " + l)
                p("  difference:")
                det = e["details"]
                if isinstance(det, list):
                    for d in det:
                        p("    - " + d.replace("\n", "\n      "))
                    if e.get("more"):
                        p(f"    ... and {e['more']} more")
                else:
                    for l in str(det).rstrip().split("\n"):
                        p("    " + l)
                p()


# ---------------------------------------------------------------------------
# developer tools: --only, --minimize, --show


def run_only(seed, config=None, out=sys.stdout):
    prog = programs.generate(seed)
    p = lambda s="": print(s, file=out, flush=True)
    cfg = runner.resolve_config(prog, config)
    p(f"# seed {seed}  config {cfg}")
    chk = runner.check_program(prog, config=cfg, trace=p)
    p("--- comparison ---")
    if chk.ok:
        p("no differences")
        return 0
    for m in chk.mismatches:
        p("- " + str(m))
    return 1


def _signatures(res):
    """The failures of one result, as (category, statement class) pairs; the
    first of them (by statement) first."""
    st = res["status"]
    if st == "ok":
        return []
    if st in ("crash", "hang", "harness_error"):
        return [(st, res.get("cls", "?"))]
    ms = sorted(res["mismatches"], key=lambda m: m["stmt"] if m["stmt"] is not None else 10**6)
    out = []
    for m in ms:
        if (m["category"], m["cls"]) not in out:
            out.append((m["category"], m["cls"]))
    return out


def minimize(program, config=None, out=sys.stdout, workers=2, timeout=30.0, focus=None):
    """Drop statements (and simplify the options) while the program keeps
    failing the same way: a failure of the same category (mismatch, wrong
    exception, crash, hang) attributed to the same statement class (`focus`:
    "category/class", default the first failure). The candidates run in worker
    processes, so crashes and hangs can be minimized too."""
    cfg = runner.resolve_config(program, config)
    say = lambda s: print(s, file=out, flush=True)
    sig = None

    with WorkerPool(workers) as pool:
        def evaluate(cands):
            """cands: [(statement indices, config)] -> ([keeps the failure], {index: result})"""
            res = {}
            run_campaign([program.subset(keep, c) for keep, c in cands], timeout=timeout, progress_every=0,
                         out=None, pool=pool, on_result=lambda i, r: res.__setitem__(i, r))
            return [sig in _signatures(res[i]) if i in res else False for i in range(len(cands))], res

        keep = list(range(len(program.stmts)))
        _, res0 = evaluate([(keep, cfg)])
        found = _signatures(res0[0])
        if not found:
            say("the program passes; nothing to minimize")
            return program, cfg
        sig = tuple(focus.split("/", 1)) if focus else found[0]
        if sig not in found:
            say(f"no failure {sig} in this program; it has {found}")
            return program, cfg
        say(f"# failure signature {sig}; minimizing {len(program.stmts)} statements")
        while len(keep) > 1:
            cands = [keep[:i] + keep[i + 1:] for i in range(len(keep))]
            oks, _ = evaluate([(c, cfg) for c in cands])
            drop = [keep[i] for i, ok in enumerate(oks) if ok]
            if not drop:
                break
            # try dropping every statement that could be dropped alone, else just the last one
            together = [i for i in keep if i not in drop]
            if len(drop) > 1 and together and evaluate([(together, cfg)])[0][0]:
                keep = together
            else:
                keep = [i for i in keep if i != drop[-1]]
            say(f"#   {len(keep)} statements")
        for k, v in (("random_schedules", None), ("max_window", 512), ("memo", True), ("fusion", True), ("tier", "auto")):
            if cfg.get(k, v) != v:
                c2 = dict(cfg, **{k: v})
                if evaluate([(keep, c2)])[0][0]:
                    cfg = c2
        _, res = evaluate([(keep, cfg)])
    prog = program.subset(keep, cfg)
    say(f"# minimized seed {program.seed!r}: {len(program.stmts)} -> {len(keep)} statements, config {cfg}")
    say(prog.text())
    r = res.get(0, {})
    say("# differences:")
    for m in r.get("mismatches", []):
        say("- " + _fmt_mismatch(m))
    if r.get("status") in ("crash", "hang"):
        say(f"- {r['status']} at {r.get('where')}: {r.get('detail', '').splitlines()[0]}")
    return prog, cfg


# ---------------------------------------------------------------------------
# CLI


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.campaign", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=20000, help="number of programs (seeds SEED..SEED+N-1)")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--workers", type=int, default=2, help="worker processes")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per program before it is a hang")
    ap.add_argument("--report", help="write a JSON summary here")
    ap.add_argument("--show-failures", type=int, default=30, help="failures shown per kind")
    ap.add_argument("--progress-every", type=int, default=500)
    ap.add_argument("--threads", type=int, default=None, help="numfuse threads per worker (default: numfuse's)")
    ap.add_argument("--restart-every", type=int, default=1000, help="programs per worker before it is replaced")
    ap.add_argument("--cache-dir", help="numfuse kernel cache for the workers (default: a temporary one; "
                    "'default': numfuse's own)")
    ap.add_argument("--memory-limit", type=float, default=8.0,
                    help="address-space limit per worker in GiB (0: none)")
    ap.add_argument("--only", type=int, metavar="SEED", help="rerun one program verbosely, in-process")
    ap.add_argument("--minimize", type=int, metavar="SEED", help="shrink a failing program (candidates run in a worker)")
    ap.add_argument("--show", type=int, metavar="SEED", help="print the program for SEED")
    ap.add_argument("--script", action="store_true", help="with --show: print a runnable reproducer script")
    ap.add_argument("--focus", help="with --minimize: the failure to keep, as category/class "
                    "(e.g. mismatch/reduction); default: the first one")
    ap.add_argument("--config", help="with --only/--minimize: numfuse options as JSON instead of the seed's")
    args = ap.parse_args(argv)
    config = json.loads(args.config) if args.config else None
    if args.show is not None:
        prog = programs.generate(args.show)
        print(prog.script() if args.script else f"# seed {args.show}  config {prog.config}\n{prog.text()}")
        return 0
    if args.only is not None:
        return run_only(args.only, config)
    if args.minimize is not None:
        minimize(programs.generate(args.minimize), config, workers=args.workers, timeout=min(args.timeout, 30.0),
                 focus=args.focus)
        return 0
    seeds = range(args.seed, args.seed + args.programs)
    print(f"[fuzz] {args.programs} programs from seed {args.seed}, {args.workers} workers, timeout {args.timeout:g} s",
          flush=True)
    summary = run_campaign(seeds, workers=args.workers, timeout=args.timeout, progress_every=args.progress_every,
                           keep=args.show_failures, threads=args.threads, restart_every=args.restart_every,
                           cache_dir=args.cache_dir, memory_limit=int(args.memory_limit * (1 << 30)) or None)
    print_summary(summary, per_kind=args.show_failures)
    print("[fuzz] " + summary.line(), flush=True)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(summary.to_json(), f, indent=1, default=str)
    if summary.interrupted:
        return 130
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())

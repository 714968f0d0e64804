"""Real NumPy programs with Python loops: NumPy, numfuse, Numba and JAX.

    python benchmarks/loops/run.py                  full sizes, every implementation
    python benchmarks/loops/run.py --quick          small sizes (a smoke test, not for reporting)
    python benchmarks/loops/run.py --only lu,crc16 --impls numpy,numfuse --repeats 3
    python benchmarks/loops/run.py --perop          also the per-operation micro-benchmark (perop.py)

Every (benchmark, implementation) pair runs in its own fresh subprocess:
cold = the first call in that process (numfuse: with an empty kernel cache,
NUMFUSE_CACHE_DIR set to a new temporary directory; Numba and JAX: compile
included), warm = the best of the next --repeats calls. numfuse calls end
with numfuse.flush() and numpy.asarray() of the result, inside the timing.
Between the cold and the warm calls numfuse is given the time to finish the
kernels it compiles in the background (numfuse.wait_background()). Each pair
runs in --rounds fresh processes (default 3), the implementations of one
benchmark interleaved, and the best cold and best warm time of the rounds are
reported: on a shared 2-core machine host noise only ever slows a process
down, and one process's bad luck would otherwise decide a ratio.

Ratios are NumPy time / implementation time (> 1: faster than NumPy); the
cold ratio uses NumPy's cold time, the warm ratio NumPy's warm time. Every
result (cold and last warm call) is checked against NumPy's; a mismatch or
an error is a failure (exit status 1). Timeouts and peers that are not
installed are reported, not failures.

Writes <out>.json, <out>.md and <out>.png (if matplotlib is importable);
<out> is benchmarks/results/loops (benchmarks/results/loops_quick with --quick).
"""

import argparse
import contextlib
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
RESULTS = os.path.join(BENCH, "results")

BENCHMARKS = ["cholesky", "lu", "adi_thomas", "gauss_seidel", "levinson", "gram_schmidt", "floyd_warshall",
              "crc16", "nbody", "nussinov", "heat1d", "softmax_rows", "trisolve", "seidel2d", "syrk_rows", "spmv_csr",
              "small_matmuls", "edit_distance", "conv2d_pixels"]
IMPLS = ["numpy", "numfuse", "jit", "numba", "jax"]
LABEL = {"numpy": "NumPy", "numfuse": "numfuse", "jit": "numfuse.jit", "numba": "Numba", "jax": "JAX"}
RESULT_MARK = "@@LOOPS-RESULT@@"


# ---------------------------------------------------------------- the worker


def _to_numpy(numpy, r):
    """The result as a tuple of NumPy arrays (a tuple result element-wise)."""
    if isinstance(r, (tuple, list)):
        return tuple(numpy.asarray(x) for x in r)
    return (numpy.asarray(r),)


def _prepare(impl, mod, inputs):
    """(function to time, extra info) for one implementation, or raises
    _NotAvailable. The function returns the result as NumPy arrays."""
    import numpy

    if impl == "numpy":
        return (lambda: _to_numpy(numpy, mod.run(numpy, *inputs))), {}
    if impl == "numfuse":
        import numfuse

        args = [numfuse.array(x) if isinstance(x, numpy.ndarray) else x for x in inputs]
        numfuse.flush()

        def call():
            r = mod.run(numfuse, *args)
            numfuse.flush()
            return _to_numpy(numpy, r)

        return call, {"threads": numfuse.get_option("threads"), "cache_dir": numfuse.get_option("cache_dir")}
    if impl == "jit":
        # The same NumPy code, the whole call compiled by numfuse.jit.
        import numfuse

        args = [numfuse.array(x) if isinstance(x, numpy.ndarray) else x for x in inputs]
        numfuse.flush()
        f = numfuse.jit(lambda *a: mod.run(numfuse, *a))

        def call():
            r = f(*args)
            numfuse.flush()
            return _to_numpy(numpy, r)

        call.jit = f
        return call, {"threads": numfuse.get_option("threads")}
    if impl == "numba":
        if not hasattr(mod, "numba_version"):
            raise _NotAvailable("no Numba version")
        numba = _peer("numba")
        if numba is None:
            raise _NotAvailable("numba not installed")
        f = numba.njit(mod.numba_version)
        return (lambda: _to_numpy(numpy, f(*inputs))), {"numba": numba.__version__}
    if impl == "jax":
        if not hasattr(mod, "jax_version"):
            raise _NotAvailable("no JAX version")
        jax = _peer("jax")
        if jax is None:
            raise _NotAvailable("jax not installed")
        f = mod.jax_version()
        args = [jax.numpy.asarray(x) if isinstance(x, numpy.ndarray) else x for x in inputs]

        def call():
            r = jax.block_until_ready(f(*args))
            return _to_numpy(numpy, r)

        return call, {"jax": jax.__version__, "backend": jax.default_backend()}
    raise ValueError(f"unknown implementation {impl!r}")


class _NotAvailable(Exception):
    pass


def _peer(name):
    """common.peer (JAX: CPU, 64-bit), or None; checks first that the peer is
    installed at all, so an absent peer costs no import of common (numfuse)."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        return None
    sys.path.insert(0, BENCH)
    from common import peer

    return peer(name)


def worker(name, impl, quick, repeats, out_prefix):
    """Runs one benchmark with one implementation; returns its status and
    times, and writes the results of the cold call and of the last warm call
    to <out_prefix>.cold.npz / .warm.npz."""
    import warnings

    import numpy

    info = {"benchmark": name, "impl": impl, "status": "ok"}
    try:
        mod = importlib.import_module(name)
        sizes = dict(mod.QUICK if quick else mod.SIZES)
        info["sizes"] = sizes
        inputs = mod.make_inputs(numpy, **sizes)
        try:
            call, extra = _prepare(impl, mod, inputs)
        except _NotAvailable as e:
            info.update(status="n/a", note=str(e))
            return info
        info.update(extra)
        if impl in ("numfuse", "jit"):
            import numfuse

            profile = numfuse.profile  # flushes on entry and exit, outside the timed region
        else:
            profile = lambda: contextlib.nullcontext({})  # noqa: E731
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # cold: the first call in this process
            with profile() as p:
                t0 = time.perf_counter()
                res = call()
                cold = time.perf_counter() - t0
            if p:
                info["profile_cold"] = dict(p)
            numpy.savez(out_prefix + ".cold.npz", *[numpy.array(x, copy=True) for x in res])
            del res  # (a NumPy view of numfuse memory must not outlive the call)
            if impl in ("numfuse", "jit"):
                # kernels compiled in the background after the cold call ran
                # on tier 0 (the steady state of a longer-running program)
                numfuse.wait_background()
            # warm: the best of the next `repeats` calls
            times = []
            with profile() as p:
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    res = call()
                    times.append(time.perf_counter() - t0)
                    last = [numpy.array(x, copy=True) for x in res]
                    del res
            if p:
                info["profile_warm"] = {k: v / repeats if isinstance(v, (int, float)) else v for k, v in p.items()}
            numpy.savez(out_prefix + ".warm.npz", *last)
        info.update(cold=cold, warm=min(times), times=times)
        if impl == "jit":
            j = call.jit
            info["jit"] = {"compiled_runs": j.stats["compiled_runs"], "plain_runs": j.stats["plain_runs"],
                           "why": [ln.strip() for ln in j.explain().splitlines() if "runs plainly" in ln][:1],
                           "program": [f"{p.traced} ops traced, {p.ops} in the program, {p.loops} loops, "
                                       f"compile {p.compile_ms:.0f} ms" for p in j.programs()][:1]}
        msgs = []
        for w in caught:
            m = f"{w.category.__name__}: {w.message}"
            if m not in msgs:
                msgs.append(m)
        if msgs:
            info["warnings"] = msgs[:10]
    except Exception:
        info.update(status="error", note=traceback.format_exc()[-3000:])
    return info


# ---------------------------------------------------------------- the parent


def child_env(**extra):
    """The environment of a worker process: this one's, with PYTHONPATH made
    absolute (workers run in this directory) and the numfuse this process
    imports first on it, so every worker measures the same build."""
    env = dict(os.environ, **extra)
    paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    try:
        import numfuse

        here = os.path.dirname(os.path.dirname(os.path.abspath(numfuse.__file__)))
        paths.insert(0, here)
    except ImportError:
        pass
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def run_one(name, impl, args, tmp):
    """Runs one (benchmark, implementation) in a fresh subprocess."""
    prefix = os.path.join(tmp, f"{name}.{impl}")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, impl, "--repeats", str(args.repeats),
           "--worker-out", prefix] + (["--quick"] if args.quick else [])
    env = child_env()
    cache = None
    if impl in ("numfuse", "jit"):
        cache = tempfile.mkdtemp(prefix="numfuse-loops-cache-")
        env["NUMFUSE_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout, cwd=HERE)
    except subprocess.TimeoutExpired:
        return {"benchmark": name, "impl": impl, "status": "timeout",
                "note": f"no result within {args.timeout:g} s"}, prefix
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith(RESULT_MARK)]
    if not lines:
        return {"benchmark": name, "impl": impl, "status": "error",
                "note": f"worker exited with status {p.returncode} after {time.perf_counter() - t0:.1f} s:\n"
                        + (p.stderr[-3000:] or p.stdout[-3000:])}, prefix
    return json.loads(lines[-1][len(RESULT_MARK):]), prefix


def _load(path):
    import numpy

    with numpy.load(path) as z:
        return [z[f"arr_{i}"] for i in range(len(z.files))]


def compare(mod, ref, got):
    """None if `got` matches NumPy's `ref`, else a description."""
    import numpy

    if len(ref) != len(got):
        return f"{len(got)} result arrays, NumPy has {len(ref)}"
    exact = getattr(mod, "EXACT", False)
    rtol, atol = getattr(mod, "RTOL", 1e-7), getattr(mod, "ATOL", 1e-9)
    for i, (a, b) in enumerate(zip(ref, got)):
        where = f"result[{i}]" if len(ref) > 1 else "result"
        if a.shape != b.shape:
            return f"{where}: shape {b.shape}, NumPy's is {a.shape}"
        if exact or (a.dtype.kind in "biu" and b.dtype.kind in "biu"):
            if not numpy.array_equal(a, b):
                bad = numpy.flatnonzero(a.ravel() != b.ravel())
                return f"{where}: {bad.size} of {a.size} elements differ (exact comparison; first at flat index {bad[0]}: {b.ravel()[bad[0]]} vs NumPy {a.ravel()[bad[0]]})"
        elif not numpy.allclose(b, a, rtol=rtol, atol=atol, equal_nan=True):
            with numpy.errstate(invalid="ignore"):
                err = numpy.nanmax(numpy.abs(b.astype(float) - a.astype(float)))
            return f"{where}: not allclose(rtol={rtol:g}, atol={atol:g}); max abs difference {err:.3g}"
    return None


def ratio(base, t):
    return base / t if base and t else None


def fmt_ratio(r):
    if r is None:
        return "n/a"
    return f"{r:.2f}x" if r >= 0.095 else f"{r:.3f}x" if r >= 0.00095 else f"{r:.1e}x"


def fmt_ms(t):
    ms = t * 1e3
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def cell(entry, which, base):
    st = entry.get("status")
    if st == "ok":
        if entry.get("mismatch"):
            return "MISMATCH"
        return fmt_ratio(ratio(base, entry[which]))
    return {"n/a": "n/a", "timeout": "timeout"}.get(st, "ERROR")


def build_table(results, impls):
    peers = [i for i in impls if i != "numpy"]
    head = ["benchmark", "size", "NumPy cold ms", "NumPy warm ms"]
    for i in peers:
        head += [f"{LABEL[i]} cold", f"{LABEL[i]} warm"]
    rows = []
    warm_ratios = {i: [] for i in peers}
    cold_ratios = {i: [] for i in peers}
    for name, per in results.items():
        ref = per.get("numpy", {})
        ok = ref.get("status") == "ok"
        sizes = ref.get("sizes") or next((e.get("sizes") for e in per.values() if e.get("sizes")), {})
        row = [name, ",".join(f"{k}={v}" for k, v in sizes.items()),
               fmt_ms(ref["cold"]) if ok else ref.get("status", "-").upper(),
               fmt_ms(ref["warm"]) if ok else ref.get("status", "-").upper()]
        for i in peers:
            e = per.get(i, {"status": "n/a"})
            row += [cell(e, "cold", ref.get("cold")), cell(e, "warm", ref.get("warm"))]
            if ok and e.get("status") == "ok" and not e.get("mismatch"):
                warm_ratios[i].append(ratio(ref["warm"], e["warm"]))
                cold_ratios[i].append(ratio(ref["cold"], e["cold"]))
        rows.append(row)
    gm = ["geometric mean", "", "", ""]
    for i in peers:
        gc, gw = geomean(cold_ratios[i]), geomean(warm_ratios[i])
        gm += [fmt_ratio(gc) + (f" ({len(cold_ratios[i])})" if gc else ""),
               fmt_ratio(gw) + (f" ({len(warm_ratios[i])})" if gw else "")]
    rows.append(gm)
    geo = {i: {"cold": geomean(cold_ratios[i]), "warm": geomean(warm_ratios[i]), "count": len(warm_ratios[i])}
           for i in peers}
    return head, rows, geo


def text_table(head, rows):
    widths = [max(len(str(r[c])) for r in [head] + rows) for c in range(len(head))]
    out = ["  ".join(str(h).ljust(w) if c < 2 else str(h).rjust(w) for c, (h, w) in enumerate(zip(head, widths)))]
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        out.append("  ".join(str(x).ljust(w) if c < 2 else str(x).rjust(w) for c, (x, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def notes(results):
    out = []
    for name, per in results.items():
        for impl, e in per.items():
            st = e.get("status")
            if e.get("mismatch"):
                out.append(f"MISMATCH {name} / {LABEL[impl]}: {e['mismatch']}")
            elif st in ("error", "timeout"):
                tail = "\n    ".join(e.get("note", "").strip().splitlines()[-6:])  # the whole note is in the JSON
                out.append(f"{st.upper()} {name} / {LABEL[impl]}: {tail}")
            if impl == "numfuse" and st == "ok":
                pc, pw = e.get("profile_cold", {}), e.get("profile_warm", {})
                out.append(f"numfuse {name}: cold {pc.get('flushes', 0)} flushes, {pc.get('kernels_compiled', 0)} kernels "
                           f"compiled (compile {pc.get('compile_ms', 0):.0f} ms), {pc.get('memo_hits', 0)} memo hits; "
                           f"warm (mean per call) {pw.get('flushes', 0):.0f} flushes, {pw.get('tasks', 0):.0f} ops, "
                           f"{pw.get('kernels_run', 0):.0f} kernels run, {pw.get('memo_hits', 0):.0f} memo hits, "
                           f"record {pw.get('record_ms', 0):.1f} / analyse {pw.get('analyse_ms', 0):.1f} / "
                           f"compile {pw.get('compile_ms', 0):.1f} / run {pw.get('run_ms', 0):.1f} ms")
            if impl == "jit" and st == "ok" and "jit" in e:
                j = e["jit"]
                what = "; ".join(j.get("program", []) + j.get("why", []))
                out.append(f"numfuse.jit {name}: {j['compiled_runs']} compiled runs, {j['plain_runs']} plain runs"
                           + (f" ({what})" if what else ""))
            for w in e.get("warnings", [])[:3]:
                out.append(f"  warning ({name} / {LABEL[impl]}): {w}")
    return out


def plot(results, impls, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # matplotlib is optional
        print(f"(no plot: {e})")
        return False
    peers = [i for i in impls if i != "numpy"]
    names = list(results)
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(names)), 5))
    width = 0.8 / max(2 * len(peers), 1)
    k = 0
    for i in peers:
        for which, hatch in (("warm", None), ("cold", "//")):
            xs, ys = [], []
            for j, name in enumerate(names):
                ref, e = results[name].get("numpy", {}), results[name].get(i, {})
                if ref.get("status") == "ok" and e.get("status") == "ok" and not e.get("mismatch"):
                    xs.append(j + k * width)
                    ys.append(ratio(ref[which], e[which]))
            if xs:
                ax.bar(xs, ys, width, label=f"{LABEL[i]} {which}", hatch=hatch, color=f"C{peers.index(i)}",
                       alpha=1.0 if which == "warm" else 0.5)
            k += 1
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + width * (k - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("NumPy time / time (log scale, > 1 is faster)")
    ax.set_title("NumPy programs with Python loops")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")
    return True


def machine_info():
    info = {"python": sys.version.split()[0], "cores": os.cpu_count()}
    try:
        sys.path.insert(0, BENCH)
        from common import machine

        info.update(machine())
    except Exception as e:  # numfuse not importable here: still run the others
        import platform

        import numpy

        info.update(cpu=platform.processor() or platform.machine(), numpy=numpy.__version__, note=str(e))
    return info


def run_perop(args):
    """perop.py in its own process (fresh cache); returns (text, data)."""
    cache = tempfile.mkdtemp(prefix="numfuse-loops-cache-")
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        env = child_env(NUMFUSE_CACHE_DIR=cache)
        cmd = [sys.executable, os.path.join(HERE, "perop.py"), "--json-out", out] + (["--quick"] if args.quick else [])
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return f"perop: TIMEOUT after {args.timeout:g} s", {"status": "timeout"}
        if p.returncode != 0:
            return "perop: ERROR\n" + p.stderr[-3000:], {"status": "error", "note": p.stderr[-3000:]}
        with open(out) as f:
            data = json.load(f)
        return p.stdout.rstrip(), data
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        os.unlink(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated benchmarks (default: all): " + ",".join(BENCHMARKS))
    ap.add_argument("--quick", action="store_true", help="small sizes (each module's QUICK): a smoke test")
    ap.add_argument("--impls", default=",".join(IMPLS), help="comma-separated subset of " + ",".join(IMPLS))
    ap.add_argument("--repeats", type=int, default=5, help="warm calls after the cold one (best is reported)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="fresh processes per benchmark and implementation, interleaved (best cold and best warm "
                         "time are reported; default 3)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per subprocess (default 600)")
    ap.add_argument("--perop", action="store_true", help="also run the per-operation micro-benchmark (perop.py)")
    ap.add_argument("--out", help="output prefix (default benchmarks/results/loops, or loops_quick with --quick)")
    ap.add_argument("--worker", nargs=2, metavar=("BENCHMARK", "IMPL"), help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        sys.path.insert(0, HERE)
        info = worker(*args.worker, args.quick, max(args.repeats, 1), args.worker_out)
        print(RESULT_MARK + json.dumps(info, default=str), flush=True)
        return 0

    names = BENCHMARKS if not args.only else [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    impls = [s.strip() for s in args.impls.split(",") if s.strip()]
    bad = [i for i in impls if i not in IMPLS]
    if unknown or bad:
        ap.error(f"unknown benchmark(s) {unknown} / implementation(s) {bad}")
    if "numpy" not in impls:
        impls.insert(0, "numpy")  # the reference every result is checked against
    impls.sort(key=IMPLS.index)
    args.repeats = max(args.repeats, 1)
    out = args.out or os.path.join(RESULTS, "loops_quick" if args.quick else "loops")

    sys.path.insert(0, HERE)
    results = {}
    failed = False
    tmp = tempfile.mkdtemp(prefix="numfuse-loops-")
    try:
        for name in names:
            mod = importlib.import_module(name)
            per = results[name] = {}
            for rnd, impl in [(r, i) for r in range(max(args.rounds, 1)) for i in impls]:
                print(f"  {name:15s} {LABEL[impl]:8s} ... ", end="", flush=True)
                e, prefix = run_one(name, impl, args, tmp)
                if e["status"] == "ok":
                    if impl == "numpy":
                        ref = _load(prefix + ".cold.npz")
                        per["_ref"] = ref
                        # NumPy itself must be deterministic across calls
                        e["mismatch"] = compare(mod, ref, _load(prefix + ".warm.npz"))
                    elif "_ref" in per:
                        e["mismatch"] = (compare(mod, per["_ref"], _load(prefix + ".cold.npz"))
                                         or compare(mod, per["_ref"], _load(prefix + ".warm.npz")))
                        if e["mismatch"] is None:
                            e["verified"] = True
                    else:
                        e["mismatch"] = None
                        e["note"] = "not verified: no NumPy result"
                    if e.get("mismatch"):
                        failed = True
                        print(f"MISMATCH: {e['mismatch']}", flush=True)
                    else:
                        print(f"cold {e['cold'] * 1e3:9.2f} ms  warm {e['warm'] * 1e3:9.2f} ms"
                              + ("  (verified)" if e.get("verified") else ""), flush=True)
                else:
                    if e["status"] == "error":
                        failed = True
                    print(e["status"].upper() + (f": {e['note'].strip().splitlines()[-1]}" if e.get("note") else ""),
                          flush=True)
                prev = per.get(impl)
                if prev is not None and prev["status"] == "ok" and e["status"] == "ok" and not e.get("mismatch"):
                    # rounds: the best cold and the best warm time of all rounds
                    # (host noise only ever makes a run slower)
                    for k in ("cold", "warm"):
                        if prev[k] < e[k]:
                            e[k] = prev[k]
                if prev is None or prev["status"] == "ok":
                    per[impl] = e
            per.pop("_ref", None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    head, rows, geo = build_table(results, impls)
    mach = machine_info()
    title = (f"NumPy programs with Python loops ({'quick sizes' if args.quick else 'default sizes'}; "
             f"cold = first call in a fresh process, warm = best of {args.repeats} later calls; best of "
             f"{args.rounds} interleaved rounds of processes; ratio = NumPy time / time)")
    print()
    print(title)
    print(text_table(head, rows))
    nts = notes(results)
    if nts:
        print()
        print("\n".join(nts))
    md = [f"# {title}", "", f"machine: {mach}; run {time.strftime('%Y-%m-%d %H:%M')}; "
          f"command: `python benchmarks/loops/run.py {' '.join(argv if argv is not None else sys.argv[1:])}`", "",
          md_table(head, rows), ""]
    if nts:
        md += ["## Notes", ""] + [f"- {n}" for n in nts] + [""]
    perop = None
    if args.perop:
        print("\n== per-operation costs (perop.py)", flush=True)
        text, perop = run_perop(args)
        print(text)
        md += ["## Per-operation costs (perop.py)", "", "```", text, "```", ""]
    payload = {"machine": mach, "args": vars(args), "date": time.strftime("%Y-%m-%d %H:%M"), "results": results,
               "geomean": geo, "perop": perop, "failed": failed}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".json", "w") as f:
        json.dump(payload, f, indent=2, default=str)
    with open(out + ".md", "w") as f:
        f.write("\n".join(md))
    print(f"\nwrote {out}.json, {out}.md")
    plot(results, impls, out + ".png")
    if failed:
        print("\nFAILED: a result did not match NumPy's or an implementation raised (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

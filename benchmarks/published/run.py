"""Published NumPy kernels (kernels.py: NPBench's NumPy implementations)
under NumPy and numfuse, only the module bound to `np` differing.

    python benchmarks/published/run.py                 every kernel, 2 rounds
    python benchmarks/published/run.py --only syrk,mvt --rounds 3
    python benchmarks/published/run.py --quick         tiny sizes: a smoke test
    python benchmarks/published/run.py --impls numpy,numfuse,jit
                                                       also each kernel as one numfuse.jit function

Every (kernel, implementation) pair runs in its own fresh process, the two
implementations of a kernel alternating (`jit`: the kernel wrapped in
numfuse.jit, its first call tracing and compiling), --rounds times: cold = the first
call (numfuse: an empty kernel cache), warm = the best of the later calls
(numfuse: after numfuse.wait_background(), so the kernels compiled in the
background are in). Inputs are copied before each call (the kernels write
their arguments) outside the timing; numfuse's calls end with
numfuse.flush() inside it. The best cold and warm time of the rounds is
reported (host noise only slows a process down). Ratios are NumPy time /
numfuse time (> 1: numfuse faster). numfuse's results are checked against
NumPy's (exit status 1 on a mismatch or an error).

Writes benchmarks/results/published.json and published.md (--out PREFIX to
write elsewhere)."""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "results")
MARK = "@@PUBLISHED-RESULT@@"


def worker(name, impl, quick):
    import numpy

    sys.path.insert(0, HERE)
    import kernels

    args0 = kernels.inputs(name, quick)
    _, repeats, _ = kernels.SPECS[name]
    f = getattr(kernels, name)
    if impl == "numpy":
        np = numpy
        conv = lambda a: a.copy() if isinstance(a, numpy.ndarray) else a  # noqa: E731
        finish = lambda r: r  # noqa: E731
    else:
        import numfuse as np

        conv = lambda a: np.array(a) if isinstance(a, numpy.ndarray) else a  # noqa: E731
        if impl == "jit":
            kernel = f
            jitted = np.jit(lambda *a: kernel(np, *a))
            f = lambda _np, *a: jitted(*a)  # noqa: E731

        def finish(r):
            np.flush()
            return r

    def call():
        args = [conv(a) for a in args0]
        if impl != "numpy":
            np.flush()
        t = time.perf_counter()
        r = finish(f(np, *args))
        return time.perf_counter() - t, r

    cold, r = call()
    if impl != "numpy":
        np.wait_background()
    warm = min(call()[0] for _ in range(repeats))
    out = r if isinstance(r, tuple) else (r,)
    path = os.path.join(tempfile.mkdtemp(), "result.npz")
    numpy.savez(path, *[numpy.asarray(x) for x in out])
    print(MARK + json.dumps({"cold": cold, "warm": warm, "result": path}))


def run_pair(name, impl, quick, timeout):
    env = dict(os.environ)
    if impl != "numpy":
        env["NUMFUSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="numfuse-published-")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, impl] + (["--quick"] if quick else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    for line in p.stdout.splitlines():
        if line.startswith(MARK):
            d = json.loads(line[len(MARK):])
            d["status"] = "ok"
            return d
    return {"status": "error", "error": (p.stderr or p.stdout)[-2000:]}


def same(a_path, b_path, rtol):
    import numpy

    a, b = numpy.load(a_path), numpy.load(b_path)
    if list(a.keys()) != list(b.keys()):
        return False
    for k in a.keys():
        x, y = a[k], b[k]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not numpy.allclose(x, y, rtol=rtol, atol=rtol * max(1.0, float(numpy.abs(x).max(initial=0))), equal_nan=True):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", default="")
    ap.add_argument("--impls", default="numpy,numfuse", help="numpy,numfuse[,jit]")
    ap.add_argument("--worker", nargs=2, metavar=("KERNEL", "IMPL"))
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker[0], a.worker[1], a.quick)
    sys.path.insert(0, HERE)
    import kernels

    names = a.only.split(",") if a.only else kernels.NAMES
    unknown = [n for n in names if n not in kernels.SPECS]
    if unknown:
        ap.error(f"unknown kernels: {', '.join(unknown)} (known: {', '.join(kernels.NAMES)})")
    impls = ["numpy"] + [i for i in a.impls.split(",") if i and i != "numpy"]
    bad = [i for i in impls if i not in ("numpy", "numfuse", "jit")]
    if bad:
        ap.error(f"unknown implementations: {', '.join(bad)} (known: numpy, numfuse, jit)")
    others = impls[1:]
    res = {n: {i: [] for i in impls} for n in names}
    failed = []
    for r in range(a.rounds):
        for n in names:
            for impl in impls:
                d = run_pair(n, impl, a.quick, a.timeout)
                res[n][impl].append(d)
                if d["status"] != "ok":
                    failed.append(f"{n} {impl}: {d['status']} {d.get('error', '')[-300:]}")
                    print(failed[-1], file=sys.stderr)
                elif impl != "numpy" and res[n]["numpy"][-1]["status"] == "ok" and not same(
                        res[n]["numpy"][-1]["result"], d["result"], kernels.SPECS[n][2]):
                    failed.append(f"{n}: {impl}'s result differs from NumPy's")
                    print(failed[-1], file=sys.stderr)
    rows = []
    gc, gw = {i: [] for i in others}, {i: [] for i in others}
    for n in names:
        if any(d["status"] != "ok" for i in impls for d in res[n][i]):
            rows.append((n, None))
            continue
        best = {i: {k: min(d[k] for d in res[n][i]) for k in ("cold", "warm")} for i in impls}
        ratios = []
        for i in others:
            c = best["numpy"]["cold"] / best[i]["cold"]
            w = best["numpy"]["warm"] / best[i]["warm"]
            gc[i].append(c)
            gw[i].append(w)
            ratios += [c, w]
        rows.append((n, (best["numpy"]["cold"] * 1e3, best["numpy"]["warm"] * 1e3, ratios)))
    geo = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")  # noqa: E731
    label = {"numfuse": "numfuse", "jit": "numfuse.jit"}
    cols = "".join(f" {label[i]} cold | {label[i]} warm |" for i in others)
    head = (f"# Published NumPy kernels ({'quick' if a.quick else 'default'} sizes; best of {a.rounds} rounds of fresh "
            f"processes; ratio = NumPy time / time)\n\ncommand: `python benchmarks/published/run.py "
            f"{' '.join(sys.argv[1:])}`; run {time.strftime('%Y-%m-%d %H:%M')}\n\n"
            f"| kernel | NumPy cold ms | NumPy warm ms |{cols}\n|---|---:|---:|" + "---:|---:|" * len(others))
    lines = [head]
    for n, v in rows:
        lines.append(f"| {n} | failed | |" + " |" * (2 * len(others)) if v is None else
                     f"| {n} | {v[0]:.3f} | {v[1]:.3f} |" + "".join(f" {x:.2f}x |" for x in v[2]))
    lines.append("| **geometric mean** | | |" + "".join(f" **{geo(gc[i]):.2f}x** | **{geo(gw[i]):.2f}x** |"
                                                      for i in others))
    text = "\n".join(lines) + "\n"
    print(text)
    out = a.out or os.path.join(RESULTS, "published_quick" if a.quick else "published")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".md", "w") as fh:
        fh.write(text)
    with open(out + ".json", "w") as fh:
        json.dump({"command": sys.argv[1:], "results": {n: {i: [{k: v for k, v in d.items() if k != "result"}
                                                               for d in res[n][i]] for i in res[n]} for n in names}},
                  fh, indent=1)
    if failed:
        print("\n".join(["FAILURES:"] + failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

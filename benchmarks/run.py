"""Runs every benchmark, prints the tables, and writes
benchmarks/results/results.md, results.json, speedups.png and (MDH classes) mdh.png.

    make bench                 (installs the peers, builds, runs this)
    python benchmarks/run.py [--quick]

--quick uses small sizes (a smoke run, not for reporting).
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_overhead  # noqa: E402
from common import RESULTS, machine  # noqa: E402


def plot(results, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # matplotlib is optional
        print(f"(no plot: {e})")
        return
    workloads = [w for w in results if results[w]["rows"]]
    impls = []
    for w in workloads:
        for name, t, _ in results[w]["rows"]:
            if t is not None and name != "NumPy" and name not in impls:
                impls.append(name)
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.8 / max(len(impls), 1)
    for i, impl in enumerate(impls):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            rows = {r[0]: r[1] for r in results[w]["rows"]}
            if rows.get(impl) and rows.get("NumPy"):
                xs.append(j + i * width)
                ys.append(rows["NumPy"] / rows[impl])
        ax.bar(xs, ys, width, label=impl)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + width * (len(impls) - 1) / 2 for j in range(len(workloads))])
    ax.set_xticklabels(workloads)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over NumPy (same run, log scale)")
    ax.set_title(f"numfuse benchmarks ({machine()['cores']} cores)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def in_subprocess(module, kwargs):
    """Runs module.run(**kwargs) in a fresh process: the peers' thread pools
    (Numba, JAX/XLA) keep spinning after they run, and must not steal the
    cores from the next workload."""
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import {module}; text, rows, extra = {module}.run(**{kwargs!r}); "
            f"print('@@RESULT@@' + json.dumps([text, rows, extra], default=str))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{out.stderr[-4000:]}")
    line = [l for l in out.stdout.splitlines() if l.startswith("@@RESULT@@")][-1]
    text, rows, extra = json.loads(line[len("@@RESULT@@"):])
    return text, [tuple(r) for r in rows], extra


def perop_table(quick):
    """benchmarks/loops/perop.py's loop body (20 operations on 16-element
    arrays, flushed every iteration) per operation, in a fresh process, and
    the hot paths' instruction counts (benchmarks/instructions.py, when
    valgrind is installed)."""
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "perop.json")
        env = dict(os.environ, NUMFUSE_CACHE_DIR=os.path.join(tmp, "cache"))
        subprocess.run([sys.executable, os.path.join(here, "loops", "perop.py"), "--json-out", out]
                       + (["--quick"] if quick else []), env=env, check=True, capture_output=True)
        with open(out) as f:
            d = json.load(f)
    t_np = d["numpy_body_us"]
    lines = [f"### A loop body of {d['body_ops']} operations on 16-element arrays, flushed every iteration "
             f"(benchmarks/loops/perop.py: microseconds per operation, {d['iters']} iterations)", "",
             "| tier | record | flush | total | total / NumPy | flush / NumPy |", "|---|---:|---:|---:|---:|---:|",
             f"| NumPy (execution) | | | {t_np:.3f} | 1.00x | |"]
    for label, key in (("numfuse auto", "auto"), ("numfuse lazy, memo on", "memo_on"),
                       ("numfuse lazy, memo off", "memo_off")):
        r = d[key]
        lines.append(f"| {label} | {r['record_us']:.3f} | {r['flush_us']:.3f} | {r['total_us']:.3f} | "
                     f"{r['total_us'] / t_np:.2f}x | {r['flush_us'] / t_np:.2f}x |")
    lines.append(f"\nresults match NumPy: {d['match']}")
    try:
        import instructions

        m = instructions.measure()
        lines += ["", f"instructions per operation (callgrind, {m['build']} build; "
                  "tests/test_instruction_counts.py holds them within 25% of tests/instruction_baseline.json):", "",
                  "| hot path | instructions |", "|---|---:|"]
        lines += [f"| {k} | {m['instructions'][k]:.0f} |" for k in instructions.METRICS]
        d["instructions"] = m
    except Exception as e:  # valgrind missing: the timings stand alone
        lines.append(f"\n(no instruction counts: {e})")
    return "\n".join(lines) + "\n", d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = ap.parse_args()
    q = args.quick
    plan = [
        ("Black-Scholes", "bench_blackscholes", dict(n=1_000_000 if q else 10_000_000)),
        ("Jacobi stencil", "bench_stencil", dict(n=500 if q else 2000, iters=20 if q else 50)),
        ("Channel flow", "bench_cfd", dict(n=256 if q else 1024, nt=3 if q else 10, nit=5 if q else 20)),
        ("Conjugate gradient", "bench_cg", dict(n=1000 if q else 3000, iters=20 if q else 50)),
        ("Compile / warm start", "bench_compile", {}),
        ("MDH computation classes", "bench_mdh", dict(quick=q, budget=2.0 if q else 15.0)),
    ]
    results = {}
    texts = [f"# numfuse benchmarks\n\nmachine: {machine()}; run {time.strftime('%Y-%m-%d %H:%M')}\n"]
    for name, module, kwargs in plan:
        print(f"== {name}", flush=True)
        text, rows, extra = in_subprocess(module, kwargs)
        print(text, flush=True)
        texts.append(text)
        # The compile and MDH benchmarks have their own tables (and plot: mdh.png).
        results[name] = {"rows": rows if module not in ("bench_compile", "bench_mdh") else [], "extra": extra}
    print("== recording overhead", flush=True)
    lines = ["### Per-operation cost with every result kept alive in a list (16-element arrays, microseconds "
             "per operation, best of 5; the default tier computes operations this small at the call)", "",
             "| operation | NumPy | numfuse | ratio |", "|---|---:|---:|---:|"]
    for op, t_np, t_nf in bench_overhead.record_overhead(n=50_000 if q else 200_000):
        lines.append(f"| {op} | {t_np:.3f} | {t_nf:.3f} | {t_nf / t_np:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    texts.append(text)
    print("== loop body per operation", flush=True)
    text, perop = perop_table(q)
    print(text)
    texts.append(text)
    results["per-operation"] = {"rows": [], "extra": perop}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "results.md"), "w") as f:
        f.write("\n\n".join(texts))
    with open(os.path.join(RESULTS, "results.json"), "w") as f:
        json.dump({"machine": machine(), "results": results}, f, indent=2, default=str)
    plot(results, os.path.join(RESULTS, "speedups.png"))


if __name__ == "__main__":
    main()

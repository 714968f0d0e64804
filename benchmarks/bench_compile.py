"""Compile time per fused kernel, and a warm start from the disk cache.

Each measurement runs in a fresh process with its own cache directory:
  cold - empty cache: every kernel is rendered, compiled by clang and linked
         by ORC (the time per kernel is the pipeline's compile time divided by
         the kernels it compiled);
  warm - the same program in a new process over the cache the cold run left:
         every kernel is loaded from disk (the time per kernel is the load
         time divided by the kernels loaded).
The workloads are the other benchmarks' programs at small sizes (what is
compiled does not depend on the size), run with tier="lazy" (at these sizes
the default tier would compute them at the call, compiling nothing), and 60
distinct small kernels (three operations each), reported apart from the
median.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

PROGRAM = r"""
import json, sys, time
sys.path.insert(0, {here!r}); sys.path.insert(0, {examples!r})
import numpy, numfuse
which = {which!r}
t0 = time.perf_counter()
with numfuse.profile() as p:
    if which == "blackscholes":
        from black_scholes import black_scholes, inputs
        dev = [numfuse.array(a) for a in inputs(1000)]
        keep = black_scholes(numfuse, *dev)
    elif which == "stencil":
        from bench_stencil import init_grid, jacobi
        keep = jacobi(numfuse, init_grid(numfuse, 64), 3)
    elif which == "cfd":
        from bench_cfd import channel_flow
        keep = channel_flow(numfuse, 41, 41, 2, 3)
    elif which == "small":
        # 60 distinct small kernels (three operations each on 1000 elements),
        # one flush each: the compile time of a kernel that has little in it.
        import itertools
        x = numfuse.arange(1000.0); y = numfuse.arange(1000.0) + 1; numfuse.flush()
        ops = [lambda v: v + y, lambda v: v * y, numfuse.sqrt, lambda v: v - 1.5, numfuse.abs,
               lambda v: numfuse.maximum(v, y)]
        for combo in itertools.islice(itertools.product(range(len(ops)), repeat=3), 60):
            keep = x
            for i in combo: keep = ops[i](keep)
            numfuse.flush()
    elif which == "cg":
        from bench_cg import cg, make_spd
        A, b = make_spd(64)
        keep = cg(numfuse, numfuse.array(A), numfuse.array(b), 5)
    numfuse.flush()
total = time.perf_counter() - t0
stats = numfuse._core.profile()
print(json.dumps({{"compiled": p["kernels_compiled"], "each_ms": stats["compile_ms_each"], "disk": p["disk_hits"], "compile_ms": p["compile_ms"],
                  "compile_ns_total": stats["compile_ns_total"], "compiles_total": stats["compiles_total"],
                  "disk_load_ns_total": stats["disk_load_ns_total"], "disk_hits_total": stats["disk_hits_total"],
                  "total_ms": total * 1e3}}))
"""


def run_once(which, cache_dir):
    env = dict(os.environ, NUMFUSE_CACHE_DIR=cache_dir, NUMFUSE_TIER="lazy")
    code = PROGRAM.format(here=HERE, examples=os.path.join(HERE, "..", "examples"), which=which)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run():
    rows = []
    per_kernel = []
    each = []  # every kernel of the four programs
    warm_per_kernel = []
    for which in ("blackscholes", "stencil", "cfd", "cg", "small"):
        with tempfile.TemporaryDirectory() as d:
            cold = run_once(which, d)
            warm = run_once(which, d)
        ms_cold = cold["compile_ns_total"] / 1e6 / max(cold["compiles_total"], 1)
        ms_warm = warm["disk_load_ns_total"] / 1e6 / max(warm["disk_hits_total"], 1)
        if which != "small":  # (the medians are over the four programs; "small" is reported apart)
            each += cold["each_ms"]
            per_kernel.append(ms_cold)
            warm_per_kernel.append(ms_warm)
        else:
            small = ms_cold
        rows.append((which, cold["compiles_total"], ms_cold, cold["total_ms"], warm["disk_hits_total"], ms_warm,
                     warm["compiled"], warm["total_ms"]))
    lines = ["### Compile time and warm start (fresh processes, fresh cache directories)", "",
             "| program | kernels compiled (cold) | ms per kernel | cold run (ms) | kernels loaded (warm) | "
             "ms per kernel | compiled in warm run | warm run (ms) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.0f} | {r[4]} | {r[5]:.2f} | {r[6]} | {r[7]:.0f} |")
    import statistics

    text = "\n".join(lines)
    text += (f"\n\nmedian compile time per kernel {statistics.median(each):.1f} ms (over the {len(each)} kernels "
             f"of the four programs, first compiles of each process included; median of the four programs' "
             f"means {statistics.median(per_kernel):.1f} ms); median warm start "
             f"{statistics.median(warm_per_kernel):.2f} ms per kernel (load from disk + link); "
             f"60 small kernels: {small:.1f} ms each\n")
    extra = {"compile_ms_per_kernel": per_kernel, "compile_ms_each": each, "warm_ms_per_kernel": warm_per_kernel, "rows": rows}
    return text, rows, extra


if __name__ == "__main__":
    print(run()[0])

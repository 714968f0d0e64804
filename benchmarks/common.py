"""Shared helpers for the benchmarks: timing, peers, the hand-written C
reference, result tables and plots.

Every benchmark runs all implementations in one process, one after another
on the same inputs, and reports ratios against NumPy measured in that run.
"""

import ctypes
import json
import os
import platform
import statistics
import time

import numpy

import numfuse

RESULTS = os.path.join(os.path.dirname(__file__), "results")


def best_of(fn, repeats=5, warmup=1):
    """Best wall time of `fn()` over `repeats` runs, after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0


def peer(name):
    """Import an optional peer library, or None if pip could not provide it."""
    try:
        if name == "numexpr":
            import numexpr
            return numexpr
        if name == "numba":
            import numba
            return numba
        if name == "jax":
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
            import jax
            jax.config.update("jax_enable_x64", True)
            return jax
        if name == "dask":
            import dask.array
            return dask.array
    except Exception:
        return None
    return None


class CKernel:
    """A hand-written C function compiled in process with the same clang and
    flags numfuse uses for its kernels (the 'what the hardware can do'
    reference). ABI: void f(char** p, const long long* ip, const double* fp)."""

    def __init__(self, source, name):
        self.addr = numfuse._core._jit_c(source, name)
        self.fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong),
                                   ctypes.POINTER(ctypes.c_double))(self.addr)

    def __call__(self, arrays, ints=(), floats=()):
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        ip = (ctypes.c_longlong * max(len(ints), 1))(*ints)
        fp = (ctypes.c_double * max(len(floats), 1))(*floats)
        self.fn(ptrs, ip, fp)


def peak_memory_mb(setup, expr):
    """Peak array memory (MiB) of evaluating `expr` in a fresh process, for
    NumPy (allocations traced by tracemalloc) and numfuse (its buffer
    accounting: every array it materializes, temporaries included).
    `setup` prepares what `expr` needs (with `lib`, the module under test,
    already bound); only what `expr` allocates is measured."""
    import subprocess
    import sys

    out = {}
    for mode in ("numpy", "numfuse"):
        code = f"""
import sys, tracemalloc, numpy, numfuse
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
sys.path.insert(0, {os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples')!r})
lib = {mode}
{setup}
if lib is numpy:
    tracemalloc.start()
    keep = {expr}
    peak = tracemalloc.get_traced_memory()[1]
else:
    numfuse._core.reset_peak_memory()
    base = numfuse._core.memory()['live_bytes']
    keep = {expr}
    numfuse.flush()
    peak = numfuse._core.memory()['peak_bytes'] - base
print(peak)
"""
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        out[mode] = int(r.stdout.split()[-1]) / 2**20
    return out


def machine():
    return {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "numpy": numpy.__version__,
        "numfuse_threads": numfuse.get_option("threads"),
    }


def table(title, rows, baseline="NumPy"):
    """rows: list of (implementation, seconds or None, note). Returns text."""
    base = dict((r[0], r[1]) for r in rows).get(baseline)
    lines = [f"### {title}", "", "| implementation | time (ms) | speedup vs NumPy | note |", "|---|---:|---:|---|"]
    for name, t, note in rows:
        if t is None:
            lines.append(f"| {name} | n/a |  | {note} |")
        else:
            lines.append(f"| {name} | {t * 1e3:.1f} | {base / t:.2f}x | {note} |")
    return "\n".join(lines)


def save(name, payload):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(payload, f, indent=2, default=str)


def median(xs):
    return statistics.median(xs) if xs else float("nan")

"""Per-operation overhead and compile time.

- recording: the Python cost of recording one operation in numfuse, against
  NumPy's cost of executing the same operation on a 16-element array (the
  dispatch-overhead benchmark of the peers survey, cuPyNumeric#1178);
- compile: clang + ORC time per new kernel (median over distinct kernels);
- cache: time to run an already-compiled kernel shape again.

    python benchmarks/bench_overhead.py
"""

import statistics
import tempfile
import time

import numpy

import numfuse


def per_op(fn, n):
    t0 = time.perf_counter()
    fn(n)
    return (time.perf_counter() - t0) / n * 1e6


def record_overhead(n=200_000, repeats=5):
    a = numpy.ones(16)
    b = numpy.ones(16)
    A, B = numfuse.array(a), numfuse.array(b)
    numfuse.flush()
    cases = {
        "a + b": (lambda k: [a + b for _ in range(k)], lambda k: [A + B for _ in range(k)]),
        "a * 2.0": (lambda k: [a * 2.0 for _ in range(k)], lambda k: [A * 2.0 for _ in range(k)]),
        "np.sqrt(a)": (lambda k: [numpy.sqrt(a) for _ in range(k)], lambda k: [numfuse.sqrt(A) for _ in range(k)]),
        "a[1:-1]": (lambda k: [a[1:-1] for _ in range(k)], lambda k: [A[1:-1] for _ in range(k)]),
    }
    rows = []
    for name, (np_fn, nf_fn) in cases.items():
        t_np = min(per_op(np_fn, n) for _ in range(repeats))
        # Keep recording separate from running: a window large enough to hold
        # every operation (all dead, so the flush afterwards does no work).
        old = numfuse.get_option("max_window")
        numfuse.set_option("max_window", 10 * n)
        t_nf = []
        for _ in range(repeats):
            t_nf.append(per_op(nf_fn, n))
            numfuse.flush()
        numfuse.set_option("max_window", old)
        rows.append((name, t_np, min(t_nf)))
    return rows


def compile_times(count=24):
    """Compile `count` structurally different kernels; median wall time each.
    Tier 'lazy' (the default tier would compute 1000 elements at the call,
    compiling nothing) and a fresh cache directory (else a second run would
    time loads from disk)."""
    with tempfile.TemporaryDirectory() as d, numfuse.config(tier="lazy", cache_dir=d):
        return _compile_times(count)


def _compile_times(count):
    x = numfuse.array(numpy.random.rand(1000))
    numfuse.flush()
    times = []
    for k in range(count):
        # Each k builds an expression tree (k and k + 6 give the same one: a
        # cache hit, not counted); the time is the compiler's own, per kernel.
        y = x
        for j in range(k % 6 + 1):
            y = numfuse.sin(y) * (j + 1.5) if (k + j) % 2 else numfuse.exp(-y) + j
        if k >= 12:
            y = y.sum()
        before = numfuse._core.profile()
        numfuse.flush()
        after = numfuse._core.profile()
        n = after["compiles_total"] - before["compiles_total"]
        if n:
            times.append((after["compile_ns_total"] - before["compile_ns_total"]) / n / 1e6)
        del y
    return times


def main():
    print("recording overhead (16-element arrays, us per operation, best of 5)")
    print(f"  {'operation':14s} {'NumPy':>8s} {'numfuse':>8s} {'ratio':>7s}")
    for name, t_np, t_nf in record_overhead():
        print(f"  {name:14s} {t_np:8.3f} {t_nf:8.3f} {t_nf / t_np:6.2f}x")
    times = compile_times()
    print(f"compile time per new kernel (clang + ORC): median {statistics.median(times):.1f} ms, "
          f"min {min(times):.1f} ms, max {max(times):.1f} ms over {len(times)} kernels")
    x = numfuse.array(numpy.random.rand(1000))
    y = numfuse.exp(-x) + 1.0
    numfuse.flush()
    t = []
    for _ in range(200):
        t0 = time.perf_counter()
        y = numfuse.exp(-x) + 1.0
        numfuse.flush()
        t.append((time.perf_counter() - t0) * 1e6)
    print(f"cached kernel, record + flush + run on 1000 elements: median {statistics.median(t):.1f} us")


if __name__ == "__main__":
    main()

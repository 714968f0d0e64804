"""Per-operation costs on 16-element float64 arrays, where the Python loop,
not the arithmetic, is the work (microseconds per operation):

  (a) NumPy: executing the operation;
  (b) numfuse, default tier (auto): arrays this small are computed at the
      call by tier 0 (no recording, no kernel);
  (c) numfuse, tier="lazy": recording the operation, in windows of the
      default size (max_window operations; each window is recorded, timed,
      and then flushed, untimed: what recording costs a program), and in
      one long window of `number` operations (max_window = 10**7), where the
      window's task records (about 1 KB each) no longer fit in the cache;
  (d) a loop body of 20 small operations, per tier: auto (computed at each
      call), and lazy flushed every iteration with the memo on (every flush
      after the first hits the memo: analysis memoized, kernels from the
      in-memory cache) and off (the analysis runs each flush).

    python benchmarks/loops/perop.py [--quick] [--json-out FILE]

(also run by `python benchmarks/loops/run.py --perop`). Run it with
NUMFUSE_CACHE_DIR set to an empty directory for a cold kernel cache; the
kernels compiled in the warm-up iterations of (d) are not timed either way.
"""

import argparse
import json
import sys
import time
import timeit

import numpy

import numfuse

CASES = ["a + b", "a * 2.0", "np.sqrt(a)", "a[1:-1]", "a[3]", "a[3] = 1.0",
         # a NumPy scalar (an element read: alpha * A[i, k] * row) on the left
         "s * a", "s < a",
         # a slice stored from an array, a copy, a new zeroed array, a mean
         "a[2:10] = b[3:11]", "a.copy()", "np.zeros(16)", "a.mean()"]

BODY_OPS = 20  # operations in body(), counted as NumPy calls (views and element stores included)


def body(np, u, a, b):
    t = u + a                  # 1
    t = t * 0.5                # 2
    t = np.abs(t)              # 3
    t = np.sqrt(t)             # 4
    m = t[1:-1]                # 5
    left = u[:-2]              # 6
    right = u[2:]              # 7
    m = m + left               # 8
    m = m - right              # 9
    m = m * 0.25               # 10
    c = b[1:-1]                # 11
    m = m * c                  # 12
    m = np.sin(m)              # 13
    u = u * 0.5                # 14
    mid = u[1:-1]              # 15
    mid = mid + m              # 16
    u[1:-1] = mid              # 17
    s = u.sum()                # 18
    s = s * 1e-3               # 19
    u = u - s                  # 20
    return u


def _per_op(stmt, env, number, repeats):
    """Best-of-`repeats` microseconds per execution of `stmt`, minus the
    cost of an empty timeit loop iteration."""
    t = min(timeit.Timer(stmt, globals=env).repeat(repeat=repeats, number=number)) / number
    empty = min(timeit.Timer("pass", globals=env).repeat(repeat=repeats, number=number)) / number
    return max(t - empty, 0.0) * 1e6


def _windowed(stmt, env, number, repeats):
    """Microseconds per recorded `stmt` (tier lazy, nothing flushed while
    timed): best of `repeats` windows of `number` operations."""
    best = None
    for _ in range(repeats):
        numfuse.flush()
        t = min(timeit.Timer(stmt, globals=env).repeat(repeat=1, number=number)) / number
        numfuse.flush()  # runs (or drops) what was recorded, untimed
        best = t if best is None else min(best, t)
    empty = min(timeit.Timer("pass", globals=env).repeat(repeat=repeats, number=number)) / number
    return max(best - empty, 0.0) * 1e6


def single_ops(number, repeats):
    """(a)-(c): rows of (operation, NumPy us, numfuse auto us, numfuse lazy record us)."""
    a, b = numpy.linspace(1.0, 2.0, 16), numpy.linspace(2.0, 3.0, 16)
    A, B = numfuse.array(a), numfuse.array(b)
    numfuse.flush()
    rows = []
    for stmt in CASES:
        env = {"np": numfuse, "a": A, "b": B, "s": A[2]}
        t_np = _per_op(stmt, {"np": numpy, "a": a, "b": b, "s": a[2]}, number, repeats)
        t_auto = _per_op(stmt, env, number, repeats)
        window = numfuse.get_option("max_window")  # (the default: a program's windows)
        with numfuse.config(tier="lazy", max_window=10**7):
            t_lazy = _windowed(stmt, env, window, max(repeats, 3 * number // window))
            t_long = _windowed(stmt, env, number, repeats)
        rows.append({"op": stmt, "numpy_us": t_np, "numfuse_auto_us": t_auto, "numfuse_record_us": t_lazy,
                     "numfuse_record_long_us": t_long, "window": window})
    return rows


def loop_body(iters, warmup, memo, tier="lazy"):
    """(d): record and flush microseconds per operation of body(), flushed
    every iteration, and the profile of the timed iterations."""
    a, b = numpy.linspace(1.0, 2.0, 16), numpy.linspace(2.0, 3.0, 16)
    A, B = numfuse.array(a), numfuse.array(b)
    u = numfuse.array(numpy.linspace(0.0, 1.0, 16))
    numfuse.flush()
    old = numfuse.get_option("memo"), numfuse.get_option("tier")
    numfuse.set_option("memo", memo)
    numfuse.set_option("tier", tier)
    try:
        for _ in range(warmup):  # compiles the kernels (and fills the memo)
            u = body(numfuse, u, A, B)
            numfuse.flush()
        rec = fl = 0.0
        with numfuse.profile() as p:
            for _ in range(iters):
                t0 = time.perf_counter()
                u = body(numfuse, u, A, B)
                t1 = time.perf_counter()
                numfuse.flush()
                t2 = time.perf_counter()
                rec += t1 - t0
                fl += t2 - t1
        final = numpy.asarray(u).copy()
    finally:
        numfuse.set_option("memo", old[0])
        numfuse.set_option("tier", old[1])
    n = iters * BODY_OPS
    return {"record_us": rec / n * 1e6, "flush_us": fl / n * 1e6, "total_us": (rec + fl) / n * 1e6,
            "profile": dict(p), "final": final}


def numpy_body(iters):
    a, b = numpy.linspace(1.0, 2.0, 16), numpy.linspace(2.0, 3.0, 16)
    u = numpy.linspace(0.0, 1.0, 16)
    best = None
    for _ in range(3):
        v = u.copy()
        t0 = time.perf_counter()
        for _ in range(iters):
            v = body(numpy, v, a, b)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best / (iters * BODY_OPS) * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer operations (a smoke test)")
    ap.add_argument("--json-out", help="also write the numbers as JSON to this file")
    args = ap.parse_args(argv)
    # operations per recording window: flushing a window of 2*10**4 element
    # stores already takes over a second (it grows faster than linearly), so
    # a window holds 10**4 operations and the best of `repeats` windows counts
    number, repeats = (2_000, 3) if args.quick else (10_000, 7)
    iters, warmup = (200, 5) if args.quick else (2_000, 10)

    rows = single_ops(number, repeats)
    window = rows[0]["window"]
    print(f"per-operation cost, 16-element float64 arrays (us per operation; lazy record: best of windows of "
          f"{window} operations, the default max_window, and of {repeats} windows of {number})")
    print(f"  {'operation':18s} {'NumPy exec':>11s} {'numfuse auto':>13s} {'ratio':>7s} {'lazy record':>12s} "
          f"{'ratio':>7s} {f'record, {number}':>14s}")
    for r in rows:
        r["ratio_auto"] = r["numfuse_auto_us"] / r["numpy_us"] if r["numpy_us"] else float("nan")
        r["ratio_record"] = r["numfuse_record_us"] / r["numpy_us"] if r["numpy_us"] else float("nan")
        print(f"  {r['op']:18s} {r['numpy_us']:11.3f} {r['numfuse_auto_us']:13.3f} {r['ratio_auto']:6.2f}x "
              f"{r['numfuse_record_us']:12.3f} {r['ratio_record']:6.2f}x {r['numfuse_record_long_us']:14.3f}")
    print("  (ratio: numfuse time / NumPy time, < 1 is faster; a[3] under numfuse is a read: a sync point,")
    print("   reading memory directly when nothing is pending; the last column records one window of")
    print(f"   {number} operations, whose ~1 KB task records outgrow the cache)")

    t_np = numpy_body(iters)
    auto = loop_body(iters, warmup, True, tier="auto")
    memo_on = loop_body(iters, warmup, True)
    memo_off = loop_body(iters, warmup, False)
    ref = numpy.linspace(0.0, 1.0, 16)
    a, b = numpy.linspace(1.0, 2.0, 16), numpy.linspace(2.0, 3.0, 16)
    for _ in range(warmup + iters):
        ref = body(numpy, ref, a, b)
    match = all(bool(numpy.allclose(d.pop("final"), ref)) for d in (auto, memo_on, memo_off))
    print()
    print(f"loop body of {BODY_OPS} operations, flushed every iteration ({iters} timed iterations after "
          f"{warmup} warm-up; us per operation)")
    print(f"  NumPy execution                      {t_np:8.3f}")
    for label, d in (("numfuse auto          ", auto), ("numfuse lazy, memo on ", memo_on),
                     ("numfuse lazy, memo off", memo_off)):
        p = d["profile"]
        print(f"  {label}: record {d['record_us']:7.3f} + flush {d['flush_us']:7.3f} = {d['total_us']:7.3f} "
              f"({d['total_us'] / t_np:6.2f}x NumPy; flush alone {d['flush_us'] / t_np:6.2f}x)  "
              f"[{p['flushes']} flushes, {p['memo_hits']} memo hits, {p['kernels_compiled']} compiled, "
              f"{p['kernels_run']} kernels run]")
    print(f"  results match NumPy: {match}")
    data = {"single_ops": rows, "body_ops": BODY_OPS, "iters": iters, "numpy_body_us": t_np,
            "auto": auto, "memo_on": memo_on, "memo_off": memo_off, "match": match, "number": number, "repeats": repeats}
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(data, f, indent=2, default=str)
    return 0 if match else 1


if __name__ == "__main__":
    sys.exit(main())

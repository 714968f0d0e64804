"""The CUDA target on a GPU, in one run that fits a ten-minute lease:

  1. the differential tests' CUDA subset: pytest --target=cuda on the test
     files that exercise kernels (their results against NumPy's);
  2. timings, side by side in the same process: NumPy on the host, numfuse
     on the GPU, CuPy (one kernel per operation; cuBLAS for matmul) and a
     hand-written fused CUDA kernel (cupy.RawKernel) where one applies:
     Black-Scholes (10M options), the 5-point stencil, the separable blur
     chain, row softmax, a full reduction, and matmul 4096^2 in float32 and
     float64 (CuPy's matmul is cuBLAS);
  3. matmul float32 tuned on the device (numfuse.tune: block tiles and
     threads searched by running them), against the model's default and
     cuBLAS; and a result handed to CuPy through DLPack (device to device,
     nothing through the host).

Ratios are printed against NumPy and against CuPy / the hand-written
kernel; every result is checked against NumPy's first (allclose). Prints a
table and writes gpu.json and gpu.md to --out.

    python benchmarks/gpu/run.py [--quick] [--target cuda|cuda-emulated] [--out DIR] [--no-tests]

--target cuda-emulated runs the same script where there is no GPU (the
emulated device is slow: use --quick; CuPy columns are empty without CuPy).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

TEST_FILES = ["test_targets.py", "test_ufuncs.py", "test_reductions.py", "test_random_programs.py",
              "test_aliasing.py", "test_indexing.py", "test_memo_rewrite.py", "test_loops.py"]


def run_tests(target, timeout):
    """pytest --target on the CUDA subset; (passed, failed, seconds, tail)."""
    t0 = time.time()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--target={target}", "--tb=line",
           *TEST_FILES]
    try:
        r = subprocess.run(cmd, cwd=os.path.join(ROOT, "tests"), capture_output=True, text=True, timeout=timeout)
        out = r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += "\n(timed out)"
    tail = "\n".join(out.strip().splitlines()[-25:])
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error)", out)}
    return counts.get("passed", 0), counts.get("failed", 0) + counts.get("error", 0), time.time() - t0, tail


def best(fn, sync, repeats):
    """Best time of fn() with its result computed (held until sync() returns:
    a result nobody holds is never computed by numfuse)."""
    out = fn()
    sync()
    del out
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        sync()
        ts.append(time.perf_counter() - t0)
        del out
    return min(ts)


# -- the workloads: plain NumPy code, the module a parameter ------------------

def black_scholes(lib, s, x, t, r, v):
    d1 = (lib.log(s / x) + (r + 0.5 * v * v) * t) / (v * lib.sqrt(t))
    d2 = d1 - v * lib.sqrt(t)
    cdf1 = 0.5 * (1 + lib.tanh(d1 * 0.7071067811865476))  # erf-free normal CDF surrogate, same on every library
    cdf2 = 0.5 * (1 + lib.tanh(d2 * 0.7071067811865476))
    return s * cdf1 - x * lib.exp(-r * t) * cdf2


def stencil(lib, u):
    return 0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def blur(lib, u):
    bx = (u[:, :-2] + u[:, 1:-1] + u[:, 2:]) / 3
    return (bx[:-2, :] + bx[1:-1, :] + bx[2:, :]) / 3


def softmax(lib, x):
    e = lib.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def reduction(lib, x):
    return (x * x).sum()


def row_norms(lib, x):
    # short rows (3-D points): one thread per row
    return lib.sqrt((x * x).sum(axis=1))


def column_means(lib, x):
    # a tall array's few columns: the rows cut into chunks (gpu_split)
    return (x - x.mean(axis=0)).sum(axis=0)


def row_argmax(lib, x):
    # long rows: a block per row (gpu_blocks), the index along
    return lib.argmax(x, axis=1)


def matmul(lib, a, b):
    return a @ b


RAW = {
    "black_scholes": r'''
extern "C" __global__ void k(const double* s, const double* x, const double* t, double r, double v, double* out, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    double st = sqrt(t[i]);
    double d1 = (log(s[i] / x[i]) + (r + 0.5 * v * v) * t[i]) / (v * st);
    double d2 = d1 - v * st;
    out[i] = s[i] * 0.5 * (1 + tanh(d1 * 0.7071067811865476)) - x[i] * exp(-r * t[i]) * 0.5 * (1 + tanh(d2 * 0.7071067811865476));
  }
}''',
    "stencil": r'''
extern "C" __global__ void k(const double* u, double* out, long n, long m) {
  long total = (n - 2) * (m - 2);
  for (long q = blockIdx.x * (long)blockDim.x + threadIdx.x; q < total; q += (long)gridDim.x * blockDim.x) {
    long i = q / (m - 2) + 1, j = q % (m - 2) + 1;
    out[q] = 0.2 * (u[i * m + j] + u[(i - 1) * m + j] + u[(i + 1) * m + j] + u[i * m + j - 1] + u[i * m + j + 1]);
  }
}''',
    "blur": r'''
extern "C" __global__ void k(const double* u, double* out, long n, long m) {
  long total = (n - 2) * (m - 2);
  for (long q = blockIdx.x * (long)blockDim.x + threadIdx.x; q < total; q += (long)gridDim.x * blockDim.x) {
    long i = q / (m - 2), j = q % (m - 2);
    double acc = 0;
    for (int di = 0; di < 3; ++di) {
      const double* row = u + (i + di) * m + j;
      acc += (row[0] + row[1] + row[2]) / 3;
    }
    out[q] = acc / 3;
  }
}''',
}


def tuned_matmul(nf, rng, n, budget, cp, repeats):
    """matmul float32 n x n: the model's tiles, then numfuse.tune's on the
    device, timed in the same process (and cuBLAS through CuPy)."""
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    A, B = nf.asarray(a), nf.asarray(b)
    out = {"n": n, "budget_s": budget}
    out["default_s"] = best(lambda: A @ B, nf.flush, repeats)
    out["default_schedule"] = [g["schedule"] for g in nf.explain().groups if g["ops"]]
    rep = nf.tune(lambda x, y: x @ y, A, B, budget=budget, progress=False)
    out["report"] = str(rep)
    out["tuned_s"] = best(lambda: A @ B, nf.flush, repeats)
    out["tuned_schedule"] = [g["schedule"] for g in nf.explain().groups if g["ops"]]
    got = np.asarray(A @ B)
    out["match"] = bool(np.allclose(got, a @ b, rtol=1e-4))
    if cp is not None:
        ca, cb = cp.asarray(a), cp.asarray(b)
        out["cublas_s"] = best(lambda: ca @ cb, cp.cuda.Device().synchronize, repeats)
    print(f"  matmul f32 {n}: model's tiles {out['default_s'] * 1e3:.2f} ms, tuned {out['tuned_s'] * 1e3:.2f} ms"
          + (f", cuBLAS {out['cublas_s'] * 1e3:.2f} ms (tuned {out['cublas_s'] / out['tuned_s']:.2f}x cuBLAS)"
             if "cublas_s" in out else "") + f"\n    {out['tuned_schedule']}", flush=True)
    return out


def dlpack_to_cupy(nf, rng, target, cp):
    """A result on the device handed to CuPy through DLPack: a copy on the
    device (no download), equal to NumPy's."""
    if cp is None:
        return {"skipped": "no CuPy"}
    x = rng.random((1000, 300))
    y = nf.asarray(x) * 2 + 1
    dev = y.__dlpack_device__()
    d0 = nf._core.device_stats(target)
    c = cp.from_dlpack(y)
    d1 = nf._core.device_stats(target)
    out = {"device": list(dev), "downloads": d1["downloads"] - d0["downloads"],
           "match": bool(np.array_equal(cp.asnumpy(c), x * 2 + 1))}
    print(f"  DLPack to CuPy: device {dev}, {out['downloads']} downloads, match {out['match']}", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--target", default="cuda", choices=["cuda", "cuda-emulated"])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    ap.add_argument("--no-tests", action="store_true", help="timings only")
    ap.add_argument("--test-timeout", type=float, default=240)
    args = ap.parse_args(argv)

    import numfuse as nf

    why = nf.targets()[args.target]
    if why:
        print(f"numfuse cannot run the {args.target} target here: {why}")
        return 2
    nf.show_config()
    report = {"target": args.target, "config": nf.show_config(mode="dicts")}
    if not args.no_tests:
        print(f"\n== differential tests, --target={args.target}: {' '.join(TEST_FILES)}", flush=True)
        p, f, secs, tail = run_tests(args.target, args.test_timeout)
        print(tail)
        report["tests"] = {"passed": p, "failed": f, "seconds": secs}
        print(f"tests: {p} passed, {f} failed in {secs:.0f} s", flush=True)

    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001
        cp = None
        print(f"(no CuPy: {e})")
    nf.set_target(args.target)
    q = args.quick
    rng = np.random.default_rng(0)
    n_bs = 100_000 if q else 10_000_000
    n2 = 512 if q else 4096
    nmm = 256 if q else 4096
    cases = [
        ("Black-Scholes", black_scholes, [rng.uniform(5, 30, n_bs), rng.uniform(1, 100, n_bs),
                                          rng.uniform(0.25, 10, n_bs), 0.02, 0.3], "black_scholes"),
        ("5-point stencil", stencil, [rng.random((n2, n2))], "stencil"),
        ("blur chain", blur, [rng.random((n2, n2))], "blur"),
        ("row softmax", softmax, [rng.random((n2, 1024))], None),
        ("reduction", reduction, [rng.random(n_bs)], None),
        ("row norms (3)", row_norms, [rng.random((n_bs // 3, 3))], None),
        ("column means", column_means, [rng.random((n_bs // 8, 8))], None),
        ("row argmax", row_argmax, [rng.random((n2, 2048))], None),
        ("matmul f32", matmul, [rng.random((nmm, nmm), dtype=np.float32), rng.random((nmm, nmm), dtype=np.float32)],
         None),
        ("matmul f64", matmul, [rng.random((nmm, nmm)), rng.random((nmm, nmm))], None),
    ]
    rows = []
    repeats = 3 if q else 10
    for name, fn, host_args, raw in cases:
        expected = fn(np, *host_args)
        t_np = best(lambda: fn(np, *host_args), lambda: None, 1 if not q else 1)
        nf_args = [nf.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args]
        got = fn(nf, *nf_args)
        ok = bool(np.allclose(np.asarray(got), expected, rtol=1e-5 if expected.dtype == np.float32 else 1e-9))
        t_nf = best(lambda: fn(nf, *nf_args), nf.flush, repeats)
        row = {"workload": name, "numpy_s": t_np, "numfuse_s": t_nf, "match": ok}
        if cp is not None:
            cargs = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args]
            sync = cp.cuda.Device().synchronize
            row["cupy_s"] = best(lambda: fn(cp, *cargs), sync, repeats)
            if raw:
                kern = cp.RawKernel(RAW[raw], "k")
                if raw == "black_scholes":
                    out = cp.empty(n_bs)
                    call = lambda: kern((1024,), (256,), (cargs[0], cargs[1], cargs[2], np.float64(0.02),  # noqa: E731
                                                           np.float64(0.3), out, np.int64(n_bs)))
                else:
                    out = cp.empty((n2 - 2) * (n2 - 2))
                    call = lambda: kern((1024,), (256,), (cargs[0], out, np.int64(n2), np.int64(n2)))  # noqa: E731
                row["hand_s"] = best(call, sync, repeats)
                row["hand_match"] = bool(np.allclose(cp.asnumpy(out).reshape(expected.shape), expected, rtol=1e-9))
        rows.append(row)
        print(f"  {name:16s} NumPy {t_np * 1e3:9.2f} ms  numfuse {t_nf * 1e3:9.2f} ms ({t_np / t_nf:7.2f}x NumPy)"
              + (f"  CuPy {row['cupy_s'] * 1e3:8.2f} ms (numfuse {row['cupy_s'] / t_nf:5.2f}x CuPy)" if "cupy_s" in row
                 else "")
              + (f"  hand-written {row['hand_s'] * 1e3:8.2f} ms ({row['hand_s'] / t_nf:5.2f}x)" if "hand_s" in row
                 else "")
              + ("" if ok else "  RESULT MISMATCH"), flush=True)
    report["rows"] = rows
    report["tuned"] = tuned_matmul(nf, rng, nmm, 5.0 if q else 60.0, cp, repeats)
    report["dlpack"] = dlpack_to_cupy(nf, rng, args.target, cp)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpu.json"), "w") as f:
        json.dump(report, f, indent=2, default=str)
    lines = [f"# numfuse on {args.target}", "", "| workload | NumPy ms | numfuse ms | vs NumPy | CuPy ms | vs CuPy | "
             "hand-written ms | vs hand-written | match |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    def ms(t):
        return "" if t is None else f"{t * 1e3:.2f}"

    def vs(t, r):
        return "" if t is None else f"{t / r:.2f}x"

    for r in rows:
        t = r["numfuse_s"]
        lines.append(f"| {r['workload']} | {ms(r['numpy_s'])} | {ms(t)} | {vs(r['numpy_s'], t)} | "
                     f"{ms(r.get('cupy_s'))} | {vs(r.get('cupy_s'), t)} | {ms(r.get('hand_s'))} | "
                     f"{vs(r.get('hand_s'), t)} | {r['match']} |")
    with open(os.path.join(args.out, "gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {os.path.join(args.out, 'gpu.json')} and gpu.md")
    return 0 if all(r["match"] for r in rows) and report["tuned"]["match"] else 1


if __name__ == "__main__":
    sys.exit(main())

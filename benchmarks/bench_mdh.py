"""The MDH seed's computation classes, side by side: matrix products, matrix-
vector and dot products, a 3-D Jacobi stencil, a 2-D convolution and one
ResNet-50 layer as a multi-channel convolution, in float32 and float64.

For each workload and dtype, in one process, one after the other:
  NumPy                 the best of the NumPy formulations listed
  scipy                 where scipy has the same operation
  numfuse default       the default schedule (a BLAS routine where one applies)
  generated default     the default schedule of numfuse's own generated code
                        (library routines off)
  tuned (generated)     after numfuse.tune(..., budget) with routines off:
                        the best generated schedule found
  tuned                 after a short numfuse.tune with routines on, which
                        resumes from the generated winner and also measures
                        the routine: what a tuned numfuse program runs

Memory-bound workloads (MatVec, Dot) also report GB/s against a plain copy
loop and a read loop compiled with the same compiler; matrix products report
GFLOP/s. PyTorch is not compared: pip's torch wheel for Linux pulls the CUDA
stack (gigabytes), and there is no CPU-only index reachable here.

    python benchmarks/bench_mdh.py [--quick] [--budget SECONDS] [--only NAME ...]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numfuse  # noqa: E402
from common import RESULTS, CKernel, machine, save  # noqa: E402


def swv(m, x, shape, axis=None):
    return m.lib.stride_tricks.sliding_window_view(x, shape, axis=axis)


# ---------------------------------------------------------------------------
# Workloads: (name, description, make(rng, dtype) -> inputs,
#             {numpy formulation: fn(numpy, *inputs)}, numfuse fn(numfuse, *inputs),
#             {peer: fn(*numpy inputs)}, (unit, amount of work))


def matmul(m, a, b):
    return a @ b


def jacobi3d(m, x):
    c = x.dtype.type(1.0 / 7.0)
    return c * (x[1:-1, 1:-1, 1:-1] + x[:-2, 1:-1, 1:-1] + x[2:, 1:-1, 1:-1] + x[1:-1, :-2, 1:-1]
                + x[1:-1, 2:, 1:-1] + x[1:-1, 1:-1, :-2] + x[1:-1, 1:-1, 2:])


def jacobi3d_inplace(m, x):
    """NumPy with one temporary, updated in place."""
    out = x[1:-1, 1:-1, 1:-1] + x[:-2, 1:-1, 1:-1]
    out += x[2:, 1:-1, 1:-1]
    out += x[1:-1, :-2, 1:-1]
    out += x[1:-1, 2:, 1:-1]
    out += x[1:-1, 1:-1, :-2]
    out += x[1:-1, 1:-1, 2:]
    out *= x.dtype.type(1.0 / 7.0)
    return out


def conv2d_einsum(m, img, w):
    return m.einsum("pqrs,rs->pq", swv(m, img, w.shape), w)


def conv2d_shifts(m, img, w):
    """NumPy: one multiply-add of a shifted slice per filter tap."""
    kr, ks = w.shape
    p, q = img.shape[0] - kr + 1, img.shape[1] - ks + 1
    out = img[:p, :q] * w[0, 0]
    for r in range(kr):
        for s in range(ks):
            if r or s:
                out += img[r:r + p, s:s + q] * w[r, s]
    return out


def mcc_einsum(m, img, flt):
    """out[n,p,q,k] = sum_{c,r,s} img[n, 2p+r, 2q+s, c] * flt[k,r,s,c]."""
    win = swv(m, img, flt.shape[1:3], axis=(1, 2))[:, ::2, ::2]
    return m.einsum("npqcrs,krsc->npqk", win, flt)


def mcc_im2col(m, img, flt):
    """NumPy: gather the windows into a matrix, one GEMM (im2col)."""
    win = swv(m, img, flt.shape[1:3], axis=(1, 2))[:, ::2, ::2]  # n,p,q,c,r,s
    n, p, q = win.shape[:3]
    cols = numpy.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(n * p * q, -1)
    return (cols @ flt.reshape(flt.shape[0], -1).T).reshape(n, p, q, flt.shape[0])


def peers_conv2d():
    try:
        import scipy.signal
    except ImportError:
        return {}
    return {"scipy.signal.correlate2d": lambda img, w: scipy.signal.correlate2d(img, w, mode="valid")}


def peers_jacobi():
    try:
        import scipy.ndimage
    except ImportError:
        return {}

    def nd(x):
        k = numpy.zeros((3, 3, 3), x.dtype)
        k[1, 1, :] = k[1, :, 1] = k[:, 1, 1] = 1.0 / 7.0
        return scipy.ndimage.correlate(x, k, mode="constant")[1:-1, 1:-1, 1:-1]

    return {"scipy.ndimage.correlate": nd}


def peers_blas(kind):
    try:
        import scipy.linalg.blas as sb
    except ImportError:
        return {}

    def gemm(a, b):
        f = sb.dgemm if a.dtype == numpy.float64 else sb.sgemm
        return f(1.0, a, b)

    def gemv(a, x):
        f = sb.dgemv if a.dtype == numpy.float64 else sb.sgemv
        return f(1.0, a, x)

    def dot(x, y):
        f = sb.ddot if x.dtype == numpy.float64 else sb.sdot
        return f(x, y)

    return {"gemm": {"scipy.linalg.blas gemm": gemm}, "gemv": {"scipy.linalg.blas gemv": gemv},
            "dot": {"scipy.linalg.blas dot": dot}}.get(kind, {})


def workloads(quick):
    s = (lambda full, small: small if quick else full)
    n = s(1024, 256)
    mv = s(4096, 1024)
    dn = s(2 ** 24, 2 ** 20)
    jn = s(256, 64)
    cn = s(224, 64)
    mc = s(230, 38)

    def R(rng, dt, *shape):
        return rng.standard_normal(shape).astype(dt)

    return [
        ("MatMul", f"{n}x{n} @ {n}x{n}", lambda g, d: (R(g, d, n, n), R(g, d, n, n)),
         {"a @ b": matmul}, matmul, peers_blas("gemm"), ("GFLOP/s", 2 * n ** 3)),
        ("MatMul 16x1000x2048", "16x2048 @ 2048x1000", lambda g, d: (R(g, d, 16, 2048), R(g, d, 2048, 1000)),
         {"a @ b": matmul}, matmul, peers_blas("gemm"), ("GFLOP/s", 2 * 16 * 1000 * 2048)),
        ("MatMul 1x1000x2048", "1x2048 @ 2048x1000", lambda g, d: (R(g, d, 1, 2048), R(g, d, 2048, 1000)),
         {"a @ b": matmul}, matmul, peers_blas("gemm"), ("GFLOP/s", 2 * 1000 * 2048)),
        ("Batched MatMul", "16 x (10x64 @ 64x500)", lambda g, d: (R(g, d, 16, 10, 64), R(g, d, 16, 64, 500)),
         {"a @ b": matmul}, matmul, {}, ("GFLOP/s", 2 * 16 * 10 * 500 * 64)),
        ("MatVec", f"{mv}x{mv} @ {mv}", lambda g, d: (R(g, d, mv, mv), R(g, d, mv)),
         {"a @ x": matmul}, matmul, peers_blas("gemv"), ("GB/s", mv * mv)),
        ("Dot", f"2^{dn.bit_length() - 1}", lambda g, d: (R(g, d, dn), R(g, d, dn)),
         {"x @ y": matmul}, matmul, peers_blas("dot"), ("GB/s", 2 * dn)),
        ("Jacobi3D", f"{jn}^3, 7-point", lambda g, d: (R(g, d, jn, jn, jn),),
         {"slices": jacobi3d, "slices, in place": jacobi3d_inplace}, jacobi3d, peers_jacobi(),
         ("GB/s", jn ** 3 + (jn - 2) ** 3)),
        ("Conv2D", f"{cn}^2, 5x5 filter", lambda g, d: (R(g, d, cn, cn), R(g, d, 5, 5)),
         {"einsum(sliding_window_view)": conv2d_einsum, "shifted slices": conv2d_shifts}, conv2d_einsum,
         peers_conv2d(), ("GFLOP/s", 2 * 25 * (cn - 4) ** 2)),
        ("MCC (ResNet-50 L1)", f"N=1, {mc}^2, K=64, 7x7, C=3, stride 2",
         lambda g, d: (R(g, d, 1, mc, mc, 3), R(g, d, 64, 7, 7, 3)),
         {"einsum(sliding_window_view)": mcc_einsum, "im2col + GEMM": mcc_im2col}, mcc_einsum, {},
         ("GFLOP/s", 2 * 64 * 147 * ((mc - 7) // 2 + 1) ** 2)),
    ]


# ---------------------------------------------------------------------------


def timeit(fn, target_s=0.6, min_repeats=3, max_repeats=25):
    """Best wall time of fn() after one warm-up run, repeated until about
    target_s seconds have been spent (at least min_repeats times)."""
    fn()
    times = []
    spent = 0.0
    while len(times) < min_repeats or (spent < target_s and len(times) < max_repeats):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return min(times)


_BW_TEMPLATE = r"""
void NAME_copy(char** p, const long long* ip, const double* fp) {
  const ELEM* restrict a = (const ELEM*)p[0]; ELEM* restrict b = (ELEM*)p[1]; long long n = ip[0];
  #pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < n; i++) b[i] = a[i];
}
void NAME_read(char** p, const long long* ip, const double* fp) {
  const ELEM* restrict a = (const ELEM*)p[0]; ELEM* restrict b = (ELEM*)p[1]; long long n = ip[0]; ELEM s = 0;
  #pragma omp parallel for simd reduction(+:s) schedule(static)
  for (long long i = 0; i < n; i++) s += a[i];
  b[0] = s;
}
"""


def bandwidth(dtype, nbytes=256 << 20):
    """GB/s of a plain parallel copy loop (bytes read + written) and read loop."""
    dt = numpy.dtype(dtype)
    n = nbytes // dt.itemsize
    a = numpy.ones(n, dt)
    b = numpy.empty(n, dt)
    pre = "f64" if dt == numpy.float64 else "f32"
    src = _BW_TEMPLATE.replace("NAME", pre).replace("ELEM", "double" if pre == "f64" else "float")
    copy, read = CKernel(src, pre + "_copy"), CKernel(src, pre + "_read")
    t_copy = timeit(lambda: copy([a, b], [n]), min_repeats=5)
    t_read = timeit(lambda: read([a, b], [n]), min_repeats=5)
    return 2 * nbytes / t_copy / 1e9, nbytes / t_read / 1e9


def close(x, ref, dtype):
    x = numpy.asarray(x, dtype=numpy.float64)
    ref = numpy.asarray(ref, dtype=numpy.float64)
    scale = max(1.0, float(numpy.max(numpy.abs(ref)))) if ref.size else 1.0
    tol = 1e-4 if numpy.dtype(dtype) == numpy.float32 else 1e-10
    return x.shape == ref.shape and float(numpy.max(numpy.abs(x - ref))) <= tol * scale


def schedule_kind(report):
    s = report[0]["best_schedule"] if report else "?"
    return "BLAS routine" if "library routine" in s else "generated"


def bench_one(w, dtype, budget, log, default_dir, gen_dir, tuned_dir):
    name, desc, make, np_forms, nf_fn, peers, (unit, work) = w
    rng = numpy.random.default_rng(0)
    inputs = make(rng, dtype)
    itemsize = numpy.dtype(dtype).itemsize
    nf_inputs = [numfuse.array(x) for x in inputs]
    numfuse.flush()
    ref = next(iter(np_forms.values()))(numpy, *inputs)
    res = {"workload": name, "size": desc, "dtype": numpy.dtype(dtype).name, "unit": unit, "ok": True}

    # NumPy formulations and peers.
    res["numpy_forms"] = {}
    for label, f in np_forms.items():
        res["ok"] &= close(f(numpy, *inputs), ref, dtype)
        res["numpy_forms"][label] = timeit(lambda: f(numpy, *inputs))
    res["numpy_best_form"] = min(res["numpy_forms"], key=res["numpy_forms"].get)
    res["numpy"] = res["numpy_forms"][res["numpy_best_form"]]
    res["peers"] = {}
    for label, f in peers.items():
        try:
            r = f(*inputs)
        except Exception as e:  # a peer that cannot run this dtype/size
            log(f"  {label}: {e}")
            continue
        res["ok"] &= close(r, ref, dtype)
        res["peers"][label] = timeit(lambda: f(*inputs))

    def nf_run():
        r = nf_fn(numfuse, *nf_inputs)
        numfuse.flush()
        return r

    def nf_check(**cfg):
        with numfuse.config(**cfg):
            res["ok"] &= close(nf_run(), ref, dtype)

    nf_check()
    nf_check(routines=False)
    # Tune the generated code alone, then let the tuner weigh the library
    # routine against the generated winner (it resumes from the stored one).
    with numfuse.config(cache_dir=gen_dir, routines=False):
        rep = numfuse.tune(nf_run, budget=budget, progress=False)
    shutil.copy(os.path.join(gen_dir, "schedules.txt"), os.path.join(tuned_dir, "schedules.txt"))
    with numfuse.config(cache_dir=tuned_dir):
        rep2 = numfuse.tune(nf_run, budget=min(budget, 4.0), progress=False)
    res["tune_s"] = sum(k["tune_s"] for k in rep) + sum(k["tune_s"] for k in rep2)
    res["tune_evals"] = sum(k["evals"] for k in rep) + sum(k["evals"] for k in rep2)
    res["generated_schedule"] = rep[0]["best_schedule"] if rep else ""
    res["tuned_schedule"] = rep2[0]["best_schedule"] if rep2 else ""
    res["tuned_kind"] = schedule_kind(rep2)
    nf_check(cache_dir=tuned_dir)
    # Measure the variants round-robin (several rounds, best of each), so a
    # slow spell of this shared machine does not land on one variant only.
    # Defaults run with an empty schedule store, tuned ones with the store
    # the tuner wrote.
    variants = {
        "default": dict(cache_dir=default_dir),
        "generated_default": dict(cache_dir=default_dir, routines=False),
        "tuned_generated": dict(cache_dir=gen_dir, routines=False),
        "tuned": dict(cache_dir=tuned_dir),
    }
    best = {k: float("inf") for k in variants}
    np_best = np_forms[res["numpy_best_form"]]
    for _ in range(3):
        res["numpy"] = min(res["numpy"], timeit(lambda: np_best(numpy, *inputs), target_s=0.25))
        for key, cfg in variants.items():
            with numfuse.config(**cfg):
                best[key] = min(best[key], timeit(nf_run, target_s=0.25))
    res.update(best)
    res["work"] = work * (itemsize if unit == "GB/s" else 1)
    return res


def rate(r, t):
    return r["work"] / t / 1e9


def fmt(r, key):
    t = r[key]
    return f"{t * 1e3:.3f} ({r['numpy'] / t:.2f}x)"


def render(results, bw):
    lines = ["### MDH computation classes: NumPy vs numfuse default and tuned schedules", "",
             "Times in ms (speedup over the best NumPy formulation in parentheses), best of repeated runs, "
             "all in one process. *generated* = numfuse's own code with library routines off; "
             "*tuned* = after `numfuse.tune` (routines on; the winner is shown).", "",
             "| workload | dtype | NumPy (best form) | peer | numfuse default | generated default | "
             "tuned (generated) | tuned | tuned rate | tuning |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        peer = ""
        if r["peers"]:
            label, t = min(r["peers"].items(), key=lambda kv: kv[1])
            peer = f"{label}: {t * 1e3:.3f} ({r['numpy'] / t:.2f}x)"
        best = min(r["tuned"], r["default"])
        lines.append(
            f"| {r['workload']} ({r['size']}) | {r['dtype']} | {r['numpy'] * 1e3:.3f} [{r['numpy_best_form']}] | "
            f"{peer} | {fmt(r, 'default')} | {fmt(r, 'generated_default')} | {fmt(r, 'tuned_generated')} | "
            f"{fmt(r, 'tuned')} {r['tuned_kind']} | {rate(r, best):.1f} {r['unit']} "
            f"(NumPy {rate(r, r['numpy']):.1f}) | {r['tune_s']:.1f} s, {r['tune_evals']} schedules |"
            + ("" if r["ok"] else " **RESULTS DIFFER**"))
    lines.append("")
    for dt, (copy, read) in bw.items():
        lines.append(f"Memory bandwidth, {dt}: plain copy loop {copy:.1f} GB/s (read+write), "
                     f"read loop {read:.1f} GB/s (same compiler, all cores).")
    lines.append("")
    lines.append("NumPy formulations measured (ms): " + "; ".join(
        f"{r['workload']} {r['dtype']}: " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in r["numpy_forms"].items())
        for r in results if len(r["numpy_forms"]) > 1))
    lines.append("")
    lines.append("Tuned schedules: " + "; ".join(
        f"{r['workload']} {r['dtype']}: `{r['tuned_schedule']}`" for r in results))
    return "\n".join(lines) + "\n"


def plot(results, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        print(f"(no plot: {e})")
        return
    dtypes = sorted({r["dtype"] for r in results}, reverse=True)
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(12, 4.5 * len(dtypes)), squeeze=False)
    cols = [("default", "numfuse default"), ("generated_default", "generated default"),
            ("tuned_generated", "tuned (generated)"), ("tuned", "tuned")]
    for ax, dt in zip(axes[:, 0], dtypes):
        rs = [r for r in results if r["dtype"] == dt]
        width = 0.8 / len(cols)
        for i, (key, label) in enumerate(cols):
            ax.bar([j + i * width for j in range(len(rs))], [r["numpy"] / r[key] for r in rs], width, label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([j + width * (len(cols) - 1) / 2 for j in range(len(rs))])
        ax.set_xticklabels([r["workload"] for r in rs], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("speedup over best NumPy")
        ax.set_title(f"MDH computation classes, {dt}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def run(quick=False, budget=15.0, only=None, dtypes=("float64", "float32")):
    """Returns (markdown text, [], extra) like the other benchmarks."""
    # Private caches and schedule stores: one stays empty (defaults), one
    # holds the generated-code winners, one the final winners.
    default_dir = tempfile.mkdtemp(prefix="numfuse-bench-mdh-default-")
    gen_dir = tempfile.mkdtemp(prefix="numfuse-bench-mdh-generated-")
    tuned_dir = tempfile.mkdtemp(prefix="numfuse-bench-mdh-tuned-")
    numfuse.set_option("cache_dir", default_dir)
    log = (lambda s: print(s, file=sys.stderr, flush=True))
    results = []
    bw = {}
    for dt in dtypes:
        bw[dt] = bandwidth(dt, (32 << 20) if quick else (256 << 20))
        for w in workloads(quick):
            if only and w[0] not in only:
                continue
            t0 = time.perf_counter()
            r = bench_one(w, dt, budget, log, default_dir, gen_dir, tuned_dir)
            log(f"{w[0]} {dt}: NumPy {r['numpy'] * 1e3:.3f} ms, default {r['numpy'] / r['default']:.2f}x, "
                f"generated {r['numpy'] / r['generated_default']:.2f}x, tuned(gen) "
                f"{r['numpy'] / r['tuned_generated']:.2f}x, tuned {r['numpy'] / r['tuned']:.2f}x "
                f"[{r['tuned_kind']}] ({time.perf_counter() - t0:.0f} s){'' if r['ok'] else ' RESULTS DIFFER'}")
            results.append(r)
    text = render(results, bw)
    save("mdh", {"machine": machine(), "bandwidth": bw, "results": results})
    os.makedirs(RESULTS, exist_ok=True)
    plot(results, os.path.join(RESULTS, "mdh.png"))
    return text, [], {"results": results, "bandwidth": bw}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=15.0, help="tuning seconds per kernel")
    ap.add_argument("--only", nargs="*", help="workload names")
    ap.add_argument("--dtype", nargs="*", default=["float64", "float32"])
    a = ap.parse_args()
    text = run(a.quick, a.budget, a.only, tuple(a.dtype))[0]
    print(text)
    with open(os.path.join(RESULTS, "mdh.md"), "w") as f:
        f.write(text)

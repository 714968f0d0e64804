"""2-D channel flow with the Navier-Stokes equations, written with slices
(Barba's "CFD Python: 12 steps to Navier-Stokes", step 12), the application
the Diffuse evaluation calls "CFD". The same function runs on NumPy and on
numfuse.
"""

import sys

import numpy

import numfuse
from common import best_of, peak_memory_mb, table


def channel_flow(np, nx, ny, nt, nit):
    dx = 2.0 / (nx - 1)
    dy = 2.0 / (ny - 1)
    rho, nu, F, dt = 1.0, 0.1, 1.0, 0.001
    u = np.zeros((ny, nx))
    v = np.zeros((ny, nx))
    p = np.ones((ny, nx))
    b = np.zeros((ny, nx))

    for _ in range(nt):
        # build_up_b, interior and the periodic edges x = 2 and x = 0
        b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) +
                                          (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                                ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx)) ** 2 -
                                2 * ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                                     (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) -
                                ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) ** 2))
        b[1:-1, -1] = (rho * (1 / dt * ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx) +
                                        (v[2:, -1] - v[0:-2, -1]) / (2 * dy)) -
                              ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx)) ** 2 -
                              2 * ((u[2:, -1] - u[0:-2, -1]) / (2 * dy) *
                                   (v[1:-1, 0] - v[1:-1, -2]) / (2 * dx)) -
                              ((v[2:, -1] - v[0:-2, -1]) / (2 * dy)) ** 2))
        b[1:-1, 0] = (rho * (1 / dt * ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx) +
                                       (v[2:, 0] - v[0:-2, 0]) / (2 * dy)) -
                             ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx)) ** 2 -
                             2 * ((u[2:, 0] - u[0:-2, 0]) / (2 * dy) *
                                  (v[1:-1, 1] - v[1:-1, -1]) / (2 * dx)) -
                             ((v[2:, 0] - v[0:-2, 0]) / (2 * dy)) ** 2))
        # pressure Poisson with periodic x
        for _ in range(nit):
            pn = p.copy()
            p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy ** 2 +
                              (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx ** 2) /
                             (2 * (dx ** 2 + dy ** 2)) -
                             dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, 1:-1])
            p[1:-1, -1] = (((pn[1:-1, 0] + pn[1:-1, -2]) * dy ** 2 +
                            (pn[2:, -1] + pn[0:-2, -1]) * dx ** 2) /
                           (2 * (dx ** 2 + dy ** 2)) -
                           dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, -1])
            p[1:-1, 0] = (((pn[1:-1, 1] + pn[1:-1, -1]) * dy ** 2 +
                           (pn[2:, 0] + pn[0:-2, 0]) * dx ** 2) /
                          (2 * (dx ** 2 + dy ** 2)) -
                          dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, 0])
            p[-1, :] = p[-2, :]
            p[0, :] = p[1, :]
        un = u.copy()
        vn = v.copy()
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] -
                         un[1:-1, 1:-1] * dt / dx * (un[1:-1, 1:-1] - un[1:-1, 0:-2]) -
                         vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1]) -
                         dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2]) +
                         nu * (dt / dx ** 2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) +
                               dt / dy ** 2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])) +
                         F * dt)
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] -
                         un[1:-1, 1:-1] * dt / dx * (vn[1:-1, 1:-1] - vn[1:-1, 0:-2]) -
                         vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[0:-2, 1:-1]) -
                         dt / (2 * rho * dy) * (p[2:, 1:-1] - p[0:-2, 1:-1]) +
                         nu * (dt / dx ** 2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2]) +
                               dt / dy ** 2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))
        # periodic BC u, v @ x = 2 and x = 0 (interior rows)
        u[1:-1, -1] = (un[1:-1, -1] - un[1:-1, -1] * dt / dx * (un[1:-1, -1] - un[1:-1, -2]) -
                       vn[1:-1, -1] * dt / dy * (un[1:-1, -1] - un[0:-2, -1]) -
                       dt / (2 * rho * dx) * (p[1:-1, 0] - p[1:-1, -2]) +
                       nu * (dt / dx ** 2 * (un[1:-1, 0] - 2 * un[1:-1, -1] + un[1:-1, -2]) +
                             dt / dy ** 2 * (un[2:, -1] - 2 * un[1:-1, -1] + un[0:-2, -1])) + F * dt)
        u[1:-1, 0] = (un[1:-1, 0] - un[1:-1, 0] * dt / dx * (un[1:-1, 0] - un[1:-1, -1]) -
                      vn[1:-1, 0] * dt / dy * (un[1:-1, 0] - un[0:-2, 0]) -
                      dt / (2 * rho * dx) * (p[1:-1, 1] - p[1:-1, -1]) +
                      nu * (dt / dx ** 2 * (un[1:-1, 1] - 2 * un[1:-1, 0] + un[1:-1, -1]) +
                            dt / dy ** 2 * (un[2:, 0] - 2 * un[1:-1, 0] + un[0:-2, 0])) + F * dt)
        v[1:-1, -1] = (vn[1:-1, -1] - un[1:-1, -1] * dt / dx * (vn[1:-1, -1] - vn[1:-1, -2]) -
                       vn[1:-1, -1] * dt / dy * (vn[1:-1, -1] - vn[0:-2, -1]) -
                       dt / (2 * rho * dy) * (p[2:, -1] - p[0:-2, -1]) +
                       nu * (dt / dx ** 2 * (vn[1:-1, 0] - 2 * vn[1:-1, -1] + vn[1:-1, -2]) +
                             dt / dy ** 2 * (vn[2:, -1] - 2 * vn[1:-1, -1] + vn[0:-2, -1])))
        v[1:-1, 0] = (vn[1:-1, 0] - un[1:-1, 0] * dt / dx * (vn[1:-1, 0] - vn[1:-1, -1]) -
                      vn[1:-1, 0] * dt / dy * (vn[1:-1, 0] - vn[0:-2, 0]) -
                      dt / (2 * rho * dy) * (p[2:, 0] - p[0:-2, 0]) +
                      nu * (dt / dx ** 2 * (vn[1:-1, 1] - 2 * vn[1:-1, 0] + vn[1:-1, -1]) +
                            dt / dy ** 2 * (vn[2:, 0] - 2 * vn[1:-1, 0] + vn[0:-2, 0])))
        # wall boundary conditions
        u[0, :] = 0
        u[-1, :] = 0
        v[0, :] = 0
        v[-1, :] = 0
    return u, v, p


def run(n=1024, nt=10, nit=20, repeats=3):
    rows = []
    extra = {}
    ref = channel_flow(numpy, n, n, nt, nit)
    rows.append(("NumPy", best_of(lambda: channel_flow(numpy, n, n, nt, nit), repeats, warmup=0),
                 f"{nt} steps x {nit} pressure iterations"))

    def nf_run():
        r = channel_flow(numfuse, n, n, nt, nit)
        numfuse.flush()
        return r

    with numfuse.profile() as prof:
        got = nf_run()
    extra["first_run_ms"] = prof["total_ms"]
    extra["compile_ms"] = prof["compile_ms"]
    extra["kernels_compiled"] = prof["kernels_compiled"] + prof["disk_hits"]
    ok = all(numpy.allclose(numpy.asarray(g), r, rtol=1e-9, atol=1e-9) for g, r in zip(got, ref))
    with numfuse.profile() as steady:
        t_nf = best_of(nf_run, repeats, warmup=0)
    ops_per_run = steady["tasks"] / repeats
    kernels_per_run = steady["kernels_run"] / repeats
    rows.append(("numfuse", t_nf, f"{ops_per_run:.0f} ops -> {kernels_per_run:.0f} kernels per run; results "
                                  f"{'match' if ok else 'DIFFER'}"))
    with numfuse.config(fusion=False):
        rows.append(("numfuse, fusion off", best_of(nf_run, repeats, warmup=0), "one kernel per operation"))
    t_np = rows[0][1]
    extra["speedup"] = t_np / t_nf
    per_step = (t_np - t_nf) / nt
    extra["break_even_iterations"] = int(numpy.ceil(extra["compile_ms"] / 1e3 / per_step)) if per_step > 0 else None
    mem = peak_memory_mb("from bench_cfd import channel_flow", f"channel_flow(lib, {n}, {n}, {nt}, {nit})")
    extra["peak_mb"] = mem
    text = table(f"Channel flow (CFD Python step 12), {n}x{n} grid, {nt} steps x {nit} pressure iterations", rows)
    text += (f"\n\nfirst run {extra['first_run_ms']:.0f} ms ({extra['kernels_compiled']} kernels, compile "
             f"{extra['compile_ms']:.0f} ms); break-even after {extra['break_even_iterations']} time step(s)\n"
             f"peak array memory: NumPy {mem['numpy']:.0f} MiB, numfuse {mem['numfuse']:.0f} MiB "
             f"(u, v, p, b: {4 * n * n * 8 / 2**20:.0f} MiB)\n")
    return text, rows, extra


if __name__ == "__main__":
    print(run(*(int(a) for a in sys.argv[1:4]))[0])

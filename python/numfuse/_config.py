"""Configuration (``numfuse.config`` and ``NUMFUSE_*`` environment variables)
and diagnostics (``numfuse.explain``, ``numfuse.profile``)."""

import contextlib
import os
import time

from . import _core, _fallback

_ENV = {
    "NUMFUSE_NUM_THREADS": "threads",
    "NUMFUSE_DUMP": "dump",
    "NUMFUSE_FUSION": "fusion",
    "NUMFUSE_MAX_WINDOW": "max_window",
    "NUMFUSE_MAX_KERNEL_OPS": "max_kernel_ops",
    "NUMFUSE_FALLBACK_WARNINGS": "fallback_warnings",
    "NUMFUSE_MEMO": "memo",
    "NUMFUSE_TUNE": "tune",
    "NUMFUSE_ROUTINES": "routines",
    "NUMFUSE_RANDOM_SCHEDULES": "random_schedules",
    "NUMFUSE_TIER": "tier",
    "NUMFUSE_EAGER_MAX_ELEMENTS": "eager_max_elements",
    "NUMFUSE_QUICK_COMPILE": "quick_compile",
    "NUMFUSE_STAGES": "stages",
    "NUMFUSE_STAGE_ROWS": "stage_rows",
    "NUMFUSE_STAGE_COLS": "stage_cols",
    "NUMFUSE_STAGE_STORAGE": "stage_storage",
    "NUMFUSE_STAGE_MIN_BYTES": "stage_min_bytes",
    "NUMFUSE_RECOMPUTE": "recompute",
    "NUMFUSE_EXACT_DIVISION": "exact_division",
    "NUMFUSE_TARGET": "target",
}
# NUMFUSE_CACHE_DIR is read by the C++ core when it starts.


def _truthy(v):
    return str(v).lower() not in ("0", "false", "no", "off", "")


def _set_dump(v):
    # dump="passes" also prints each kernel's loop nest after every lowering pass.
    _core.set_dump_passes(isinstance(v, str) and v.lower() == "passes")
    _core.set_dump(_truthy(v))


_SETTERS = {
    "threads": (lambda v: _core.set_num_threads(int(v)), _core.get_num_threads),
    "dump": (lambda v: _set_dump(v), lambda: "passes" if _core.get_dump_passes() else _core.get_dump()),
    "fusion": (lambda v: _core.set_fusion(_truthy(v)), _core.get_fusion),
    "memo": (lambda v: _core.set_memo(_truthy(v)), _core.get_memo),
    "max_window": (lambda v: _core.set_max_window(int(v)), _core.get_max_window),
    "max_kernel_ops": (lambda v: _core.set_max_kernel_ops(int(v)), _core.get_max_kernel_ops),
    "fallback_warnings": (lambda v: _fallback.set_warnings(_truthy(v)), _fallback.warnings_enabled),
    "cache_dir": (lambda v: _set_cache_dir(str(v)), lambda: _core.cache_info()["directory"]),
    "tune": (lambda v: _core.set_tune_seconds(_seconds(v)), _core.get_tune_seconds),
    "routines": (lambda v: _core.set_routines(_truthy(v)), _core.get_routines),
    "random_schedules": (lambda v: _core.set_random_schedules(_seed(v)), _core.get_random_schedules),
    "tier": (lambda v: _core.set_tier(str(v)), _core.get_tier),
    "eager_max_elements": (lambda v: _core.set_eager_max_elements(int(v)), _core.get_eager_max_elements),
    "quick_compile": (lambda v: _core.set_quick_compile(_truthy(v)), _core.get_quick_compile),
    "stages": (lambda v: _core.set_stages(_truthy(v)), _core.get_stages),
    "stage_rows": (lambda v: _core.set_stage_rows(int(v)), _core.get_stage_rows),
    "stage_cols": (lambda v: _core.set_stage_cols(int(v)), _core.get_stage_cols),
    "stage_storage": (lambda v: _core.set_stage_storage(str(v)), _core.get_stage_storage),
    "stage_min_bytes": (lambda v: _core.set_stage_min_bytes(int(v)), _core.get_stage_min_bytes),
    "exact_division": (lambda v: _core.set_exact_division(_truthy(v)), _core.get_exact_division),
    "recompute": (lambda v: _core.set_recompute(_recompute_budget(v)),
                  lambda: False if _core.get_recompute() < 0 else _core.get_recompute()),
    "target": (lambda v: set_target(v), lambda: _core.get_target()),
}


_cuda_ready = [False]


def _cuda_libraries():
    """Tells the core where the nvidia-cuda-nvrtc wheel's NVRTC is, if it is
    installed (`pip install numfuse[cuda]`): it is preferred to the CUDA
    toolkit's. Once, before anything loads NVRTC."""
    if _cuda_ready[0]:
        return
    _cuda_ready[0] = True
    import glob
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia.cuda_nvrtc")
    except (ImportError, ValueError):
        spec = None
    for d in (spec.submodule_search_locations or []) if spec else []:
        libs = [p for p in sorted(glob.glob(os.path.join(d, "lib", "libnvrtc.so*")))
                if "builtins" not in p and ".alt." not in p]
        if libs:
            _core.set_nvrtc_library(libs[0])
            return


def targets():
    """The targets numfuse can compile for, each with "" where it can run
    here or the reason it cannot: {"cpu": "", "cuda": "...", "cuda-emulated": ""}."""
    _cuda_libraries()
    return {t: _core.target_unavailable(t) for t in _core.target_names()}


def set_target(name):
    """Compile new kernels for `name`: "cpu" (the default), "cuda" (an NVIDIA
    GPU, through NVRTC and the driver) or "cuda-emulated" (the CUDA target's
    kernels run on the host by an emulated device). Pending operations run
    first, where they were recorded. An unknown name raises ValueError; a
    target that cannot run here (no GPU, no driver, no NVRTC) raises
    RuntimeError saying why, and nothing changes. For a while:
    ``with numfuse.config(target="cuda"):``; for a process: NUMFUSE_TARGET."""
    key = str(name).strip().lower()
    names = _core.target_names()
    if key not in names:
        raise ValueError(f"unknown numfuse target {name!r}; the targets are {', '.join(names)}")
    _cuda_libraries()
    _core.flush("set_target")
    _core.set_target(key)


def get_target():
    """The target new kernels are compiled for (see set_target)."""
    return _core.get_target()


def _recompute_budget(v):
    # True: the default budget (_core.RECOMPUTE_BUDGET additions per point);
    # False or 0: never; a positive int: that budget.
    if isinstance(v, str):
        v = v.strip().lower()
        v = int(v) if v.lstrip("-").isdigit() else _truthy(v)
    if isinstance(v, bool):
        return _core.RECOMPUTE_BUDGET if v else -1
    if not isinstance(v, int) or v < 0:
        raise ValueError(f"recompute: expected True, False or a budget >= 0 (additions per point), got {v!r}")
    return v if v > 0 else -1


def _seconds(v):
    if v is None or v is False:
        return 0.0
    s = float(v)
    if not s >= 0:
        raise ValueError(f"tune: expected a number of seconds >= 0, got {v!r}")
    return s


def _seed(v):
    if v is None or v is False:
        return -1
    s = int(v)
    if s < -1:
        raise ValueError(f"random_schedules: expected a seed >= 0 (or None), got {v!r}")
    return s


def set_option(name, value):
    """Set numfuse option `name` (see :func:`config` for the options) to `value`
    for the rest of the program. Unknown names raise ValueError."""
    if name not in _SETTERS:
        raise ValueError(f"unknown numfuse option {name!r}; options are {sorted(_SETTERS)}")
    _SETTERS[name][0](value)


def get_option(name):
    """The current value of numfuse option `name` (see :func:`config`)."""
    if name not in _SETTERS:
        raise ValueError(f"unknown numfuse option {name!r}; options are {sorted(_SETTERS)}")
    return _SETTERS[name][1]()


def options():
    """All numfuse options and their current values, as a dict."""
    return {k: g() for k, (_, g) in _SETTERS.items()}


@contextlib.contextmanager
def config(**opts):
    """Temporarily change numfuse options, e.g. ``with numfuse.config(dump=True):``.

    Options: threads (threads per kernel), dump (print generated
    kernels and cache hits; "passes" also prints each new kernel's loop nest
    after every lowering pass, to stderr), fusion (False runs one operation per kernel),
    max_window (tasks recorded before an automatic flush), max_kernel_ops
    (reads and writes of Python-visible arrays per fused kernel at most;
    8x that many operations in all), fallback_warnings,
    cache_dir (kernel cache and tuned-schedule store), tune (seconds of
    background tuning per new kernel, 0 = off; it also measures a
    multi-stage kernel's launch choices and recompute-or-store on their
    first live runs; NUMFUSE_TUNE), routines
    (False: never hand a group to a library routine such as BLAS),
    random_schedules (a seed: every kernel gets a random legal schedule --
    for testing; None = off), tier ('auto': operations over at most
    eager_max_elements points whose inputs are computed run at once, without
    compiling, everything else is recorded and fused; 'eager': at once
    whenever the inputs are computed; 'lazy': always recorded),
    eager_max_elements (the 'auto' size limit; NUMFUSE_EAGER_MAX_ELEMENTS),
    quick_compile (True: a kernel a flush waits for is compiled with a short
    pass pipeline and fast code generation, and recompiled at -O3 in the
    background once it has run 2 ms; False: always -O3; NUMFUSE_QUICK_COMPILE),
    stages (True: consecutive kernels linked by intermediates -- stencil
    chains, reductions feeding their consumers -- run as one multi-stage
    kernel over tiles of rows, the intermediates kept in per-thread tile
    buffers instead of memory; NUMFUSE_STAGES), stage_rows (rows per tile of
    such a kernel, 0 = chosen from the cache size), stage_storage
    ('ring', the default: rows live in ring buffers and every stage runs
    row by row, each row computed once -- tiles of one row unless
    stage_rows says more; 'rolling': the halo rows a tile's stencils need
    are kept from the thread's previous tile; 'recompute': each tile
    recomputes them),
    stage_cols (columns per strip: each thread walks its rows once per strip
    of columns -- of rows of each plane for 3-d stages -- so a strip's rows
    of the tile buffers stay in the first-level cache; stencil chains that
    neither reduce nor scan; rolling storage then becomes ring; 0 = whole
    rows unless tuning chose strips sized from the cache; NUMFUSE_STAGE_COLS),
    stage_min_bytes (a multi-stage kernel forms when it keeps at least this
    many bytes of intermediates and repeated reads out of memory; default
    256 KiB, 0 makes every chain one kernel -- for testing),
    recompute (True: a cheap intermediate read through shifted slices --
    a stencil's fluxes, `f[:, 1:] - f[:, :-1]` -- or only after a matrix
    product (`beta * C + alpha * (A @ B)`: beta * C is computed before the
    product) is computed again where each reader needs it instead of stored, where that costs at most 8
    additions more per point; a positive int sets that budget, False or 0
    never; NUMFUSE_RECOMPUTE. With tune on, a window where that happens is
    run both ways on its first runs and keeps the faster: explain() says
    which), exact_division (True, the default: a division by a value that
    is the same for the whole loop -- `x / 3`, `e / e.sum(axis=1,
    keepdims=True)` -- multiplies by the reciprocal and corrects the
    quotient with fused multiply-adds, which gives the correctly rounded
    quotient NumPy's division does, without the divider; False keeps the
    divider; NUMFUSE_EXACT_DIVISION).
    Pending work is flushed on entry and exit so options apply cleanly.
    """
    _core.flush("config")
    old = {k: get_option(k) for k in opts}
    try:
        for k, v in opts.items():
            set_option(k, v)
        yield
    finally:
        _core.flush("config")
        for k, v in old.items():
            set_option(k, v)


def apply_environment():
    for env, opt in _ENV.items():
        if env in os.environ:
            set_option(opt, os.environ[env])
    warn_cache()


def _set_cache_dir(path):
    _core.set_cache_dir(path)
    warn_cache()


def warn_cache():
    """A cache directory refused as unsafe is worth a warning (numfuse then
    compiles in memory)."""
    w = _core.cache_warning()
    if w:
        import warnings

        from ._hooks import NumfuseWarning

        warnings.warn(w, NumfuseWarning, stacklevel=3)


class Explanation:
    """What the last flush did: its groups (fused kernels), why each group
    ended, which arrays were never materialized, and which line synced."""

    def __init__(self, report):
        self.report = report
        self.groups = report["groups"]

    def kernels(self):
        """The kernels the flush ran: a multi-stage kernel once, however many
        stages (groups) it has; a group nobody reads from none."""
        return sum(1 for g in self.groups if not _dead(g) and g.get("stage", 0) <= 1)

    @staticmethod
    def plain(i, g):
        """One line in plain words: what kernel i computes and how."""
        ops = [o for o in g["ops"] if not o.endswith("(dead)")]
        dead = len(g["ops"]) - len(ops)
        what = ", ".join(ops[:6]) + (f" and {len(ops) - 6} more" if len(ops) > 6 else "")
        if g["routine"]:
            how = f"the BLAS library computes {g['routine']}"
        else:
            dom = g.get("domain") or []
            if dom:
                how = f"one pass over {'×'.join(f'{n:,}' for n in dom)} points"
            else:
                how = "one computation of a single value"
            if g.get("reduced_dims"):
                how += f", reducing {g['reduced_dims']} of its {len(dom)} dimensions"
            if g.get("prologue"):
                how += (", its 0-d operations (scalars) computed at each tile, before its points" if g.get("stages")
                        else ", its 0-d operations (scalars) computed once before the pass")
                if g.get("stages") and g.get("stores_once"):
                    how += ", their results stored once, before the tiles"
            if "reads" in g:
                how += (f"; reads {g['reads']} array{'s' if g['reads'] != 1 else ''}, "
                        f"writes {g['writes']}")
            if g["tier0"]:
                how += (" (run by the interpreter while its kernel compiles in the background"
                        if g.get("compiling") else " (run by the interpreter: its kernel is not worth compiling yet")
                live = len(g["ops"]) - g.get("dead", 0)
                passes = g.get("tier0_passes", live)
                if 0 < passes < live:
                    how += f"; {live} operations in {passes} pass{'es' if passes != 1 else ''}, intermediates spliced"
                if g.get("compile_estimate_ms"):
                    how += (f"; estimated {g['tier0_estimate_ms']:.3g} ms on tier 0 against a "
                            f"{g['compile_estimate_ms']:.3g} ms compile, took {g['run_ms']:.3g} ms")
                how += ")"
            elif g.get("why_compiled") and not g["cache_hit"] and not g["disk_hit"]:
                how += f" (compiled on the critical path: {g['why_compiled']}"
                if g.get("compile_estimate_ms"):
                    how += (f", {g['tier0_estimate_ms']:.3g} ms against a {g['compile_estimate_ms']:.3g} ms compile")
                how += ")"
        if g.get("stages"):
            how += f" (stage {g['stage']} of {g['stages']} of one multi-stage kernel)"
        if g.get("target") and g["target"] != "cpu":
            how += f" on {g['target']}"
        elif g.get("target_note"):
            how += f" on the CPU ({g['target_note']})"
        line = f"kernel {i}: {what} -- {how}"
        if g["temporaries"]:
            n = len(g["temporaries"])
            line += f"; {n} intermediate array{'s' if n != 1 else ''} never stored"
        if dead:
            line += f"; {dead} unused result{'s' if dead != 1 else ''} not computed"
        return line + f" [{g['run_ms']:.3f} ms]"

    def __str__(self):
        r = self.report
        plain, k = [], -1
        for g in self.groups:
            if _dead(g):
                n = len(g["ops"])
                plain.append(f"not run: {', '.join(o[:-len(' (dead)')] for o in g['ops'])} -- "
                             f"{n} result{'s' if n != 1 else ''} nobody reads")
                continue
            k += 0 if g.get("stage", 0) > 1 else 1
            plain.append(self.plain(k, g))
            if g.get("chain"):
                plain += ["  " + l for l in g["chain"].splitlines()]
        kernels = self.kernels()
        lines = plain + ([""] if plain else []) + [f"flush: {r['tasks']} operations -> {kernels} kernels "
                 f"(synced by {r['sync_reason']} at {r['sync_site']})"
                 + (" [analysis memoized]" if r.get("memo_hit") else "")]
        if r.get("recomputed"):
            n = r["recomputed"]
            lines.append(f"  {n} intermediate{'s' if n != 1 else ''} (read through shifted slices, or "
                         f"after a matrix product) recomputed where {'they are' if n != 1 else 'it is'} read, "
                         f"never stored"
                         + (" (the memoized rewrite: the plan bound to the operations as recorded"
                            + ("; replayed for tier 0 or the floating-point flags)" if r.get("rewrite_replayed") else ")")
                            if r.get("memo_recorded") else ""))
        if r.get("recompute_choice"):
            lines.append("  " + r["recompute_choice"])
        lines += [
                 f"  analyse {r['analyse_ms']:.3f} ms, compile {r['compile_ms']:.3f} ms "
                 f"({r['kernels_compiled']} compiled, {r['memory_hits']} from memory, {r['disk_hits']} from disk), "
                 f"run {r['run_ms']:.3f} ms"]
        for i, g in enumerate(self.groups):
            kind = ("library routine" if g["routine"] else
                    ("tier 0, its kernel compiling in the background" if g.get("compiling") else "tier 0")
                    if g["tier0"] else "cache hit" if g["cache_hit"] else
                    "loaded from disk cache" if g["disk_hit"] else "compiled")
            if g.get("tuned"):
                kind += ", tuned schedule"
            if g.get("stages"):
                kind += f", stage {g['stage']} of {g['stages']}"
            lines.append(f"group {i}: {len(g['ops'])} ops [{kind}, {g['run_ms']:.3f} ms]: " + ", ".join(g["ops"]))
            if g["temporaries"]:
                lines.append(f"  temporaries never allocated: {len(g['temporaries'])} "
                             f"(buffers {', '.join('#' + str(t) for t in g['temporaries'])})")
            lines.append(f"  ended by: {g['stop_reason']}")
            for l in g["mdh"].splitlines():
                lines.append("  " + l)
            if g["schedule"]:
                lines.append("  schedule: " + g["schedule"])
            if g.get("launches"):
                lines.append("  on the device: " + g["launches"])
        for w in r["warnings"]:
            lines.append("warning: " + w)
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _repr_html_(self):
        import html

        r = self.report
        rows = "".join(
            f"<tr><td>{i}</td><td>{html.escape(self.plain(i, g).split(' -- ', 1)[1].rsplit(' [', 1)[0])}</td>"
            f"<td>{html.escape(', '.join(g['ops']))}</td><td>{g['run_ms']:.3f}</td>"
            f"<td><details><summary>MDH</summary><pre>{html.escape(g['mdh'])}\nschedule: "
            f"{html.escape(g['schedule'])}</pre></details></td></tr>"
            for i, g in enumerate(self.groups))
        head = (f"<p><b>numfuse flush</b>: {r['tasks']} operations &rarr; {self.kernels()} kernels "
                f"(synced by {html.escape(str(r['sync_reason']))} at {html.escape(str(r['sync_site']))}); "
                f"analyse {r['analyse_ms']:.3f} ms, compile {r['compile_ms']:.3f} ms, run {r['run_ms']:.3f} ms</p>")
        warn = "".join(f"<p>warning: {html.escape(w)}</p>" for w in r["warnings"])
        return (head + "<table><tr><th>kernel</th><th>how</th><th>operations</th><th>ms</th><th></th></tr>"
                + rows + "</table>" + warn)


def _dead(g):
    """A group whose results nobody reads: it never ran."""
    return bool(g["ops"]) and all(o.endswith("(dead)") for o in g["ops"])


def _html_table(title, items):
    import html

    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in items)
    return f"<p><b>{html.escape(title)}</b></p><table>{rows}</table>"


def explain():
    """Describe the last flush (see :class:`Explanation`)."""
    return Explanation(_core.last_report())


class Profile(dict):
    def __str__(self):
        return ("numfuse profile: "
                f"record {self['record_ms']:.1f} ms, analyse {self['analyse_ms']:.1f} ms, "
                f"compile {self['compile_ms']:.1f} ms, run {self['run_ms']:.1f} ms; "
                f"{self['flushes']} flushes, {self['tasks']} ops, {self['kernels_run']} kernels run, "
                f"{self['kernels_compiled']} compiled, {self['memory_hits']} memory-cache hits, "
                f"{self['disk_hits']} disk-cache hits, {self['memo_hits']} memoized analyses")

    __repr__ = __str__

    def _repr_html_(self):
        keys = ("record_ms", "analyse_ms", "compile_ms", "run_ms", "total_ms", "flushes", "tasks", "kernels_run",
                "kernels_compiled", "memory_hits", "disk_hits", "memo_hits")
        return _html_table("numfuse profile", [(k, round(self[k], 3) if isinstance(self[k], float) else self[k])
                                               for k in keys if k in self])


@contextlib.contextmanager
def profile():
    """Profile a block: ``with numfuse.profile() as p: ...; print(p)``.

    Splits time into record (Python + recording), analyse (fusion + MDH),
    compile and run, and counts cache hits."""
    _core.flush("profile")
    _core.reset_profile()
    p = Profile()
    t0 = time.perf_counter()
    try:
        yield p
    finally:
        _core.flush("profile")
        total = (time.perf_counter() - t0) * 1e3
        d = _core.profile()
        d["record_ms"] = max(total - d["analyse_ms"] - d["compile_ms"] - d["run_ms"], 0.0)
        d["total_ms"] = total
        p.update(d)


def show_config(mode="stdout"):
    """numpy.show_config for numfuse: what kernels are compiled with and for
    (numfuse's version, LLVM, the target CPU and its features, the tier-0
    loops' instruction set), the threads a kernel uses, the kernel cache,
    the BLAS library that contractions may call, and the NumPy numfuse
    follows. mode="stdout" prints it; mode="dicts" returns it as a dict."""
    import platform
    import sys

    import numpy as np

    from ._version import __version__

    if mode not in ("stdout", "dicts"):
        raise AttributeError(f"Invalid `mode`, use one of: stdout, dicts (got {mode!r})")
    t = _core.target_info()
    cache = _core.cache_info()
    avail = targets()
    nvrtc = _core.nvrtc_info()
    cuda = _core.cuda_info()
    info = {
        "numfuse": {"version": __version__},
        "Targets": {
            "target": _core.get_target(),
            **{t: ("available" if not why else "unavailable: " + why) for t, why in avail.items()},
        },
        "CUDA": {
            "nvrtc": (f"{nvrtc['version']} ({nvrtc['path']})" if nvrtc["available"] else "unavailable: " + nvrtc["why"]),
            "device": (f"{cuda['device']}, sm_{cuda['arch']}, {cuda['multiprocessors']} multiprocessors, driver "
                       f"{cuda['driver']}" if cuda["available"] else "none: " + cuda["why"]),
        },
        "Compiler": {
            "name": "clang + LLVM ORC JIT (in process)",
            "llvm version": t["llvm_version"],
            "target triple": t["triple"],
            "target cpu": t["cpu"],
            "cpu features": t["features"],
            "tier-0 loops": _core.tier0_isa(),
            # one implementation per function, on every path (runtime/vmath.h)
            "vector math": "{} ({} lanes of float64)".format(*_core.vmath_implementation("exp")),
        },
        "Runtime": {
            "threads": _core.get_num_threads(),
            "tier": _core.get_tier(),
            "kernel cache": {"directory": cache["directory"], "enabled": cache["enabled"],
                             "status": cache["status"], "kernels in memory": cache["memory_entries"]},
            "blas": _core.blas_name() or "none found (contractions run numfuse's own kernels)",
            # the core's internal consistency checks (NUMFUSE_CHECKS=1; src/core/checks.h)
            "checks": _core.checks_on(),
        },
        "Python Information": {"numpy": np.__version__, "python": sys.version.split()[0],
                               "machine": platform.machine(), "system": platform.system()},
    }
    if mode == "dicts":
        return info

    def show(d, indent):
        for k, v in d.items():
            if isinstance(v, dict):
                print(" " * indent + f"{k}:")
                show(v, indent + 2)
            elif isinstance(v, list):
                print(" " * indent + f"{k}: " + " ".join(v))
            else:
                print(" " * indent + f"{k}: {v}")

    show(info, 0)


class BenchmarkResult:
    """What numfuse.benchmark measured, in seconds: `cold` (the first call,
    with its compiles), `times` (each timed warm call), and their mean, std
    and min; `profile` splits the warm calls' time like numfuse.profile()."""

    def __init__(self, name, cold, times, prof):
        self.name, self.cold, self.times, self.profile = name, cold, list(times), prof

    @property
    def mean(self):
        return sum(self.times) / len(self.times)

    @property
    def std(self):
        m = self.mean
        return (sum((t - m) ** 2 for t in self.times) / len(self.times)) ** 0.5

    @property
    def min(self):
        return min(self.times)

    def __repr__(self):
        def us(t):
            return f"{t * 1e3:.3f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} us"

        return (f"{self.name}: cold {us(self.cold)} | warm {us(self.mean)} +/- {us(self.std)} "
                f"(min {us(self.min)}, n={len(self.times)})")

    def _repr_html_(self):
        def us(t):
            return f"{t * 1e3:.3f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} us"

        return _html_table(f"numfuse.benchmark: {self.name}",
                           [("cold (first call, compiles)", us(self.cold)), ("warm mean", us(self.mean)),
                            ("warm std", us(self.std)), ("warm min", us(self.min)), ("warm calls", len(self.times))])


def benchmark(fn, args=(), kwargs=None, *, n_repeat=10, n_warmup=1, name=None):
    """Time ``fn(*args, **kwargs)`` the way numfuse computes it: each call's
    result is kept alive until numfuse.flush() has computed it, so the
    timing includes the work. (Timing ``fn(); numfuse.flush()`` with the
    result discarded measures almost nothing: a result nobody can read is
    dead code, and numfuse never computes it.) The first call is timed on
    its own as `cold` (it compiles what is new), then `n_warmup` calls run
    untimed and `n_repeat` calls are timed. Returns a BenchmarkResult
    (printable; `.cold`, `.times`, `.mean`, `.std`, `.min`, `.profile`)."""
    if n_repeat < 1:
        raise ValueError(f"n_repeat must be at least 1 (got {n_repeat})")
    if n_warmup < 0:
        raise ValueError(f"n_warmup must be at least 0 (got {n_warmup})")
    kwargs = kwargs or {}

    def timed():
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)  # kept alive across the flush: computed, not dead
        _core.flush("benchmark")
        t = time.perf_counter() - t0
        del out
        return t

    _core.flush("benchmark")
    cold = timed()
    for _ in range(n_warmup):
        timed()
    with profile() as p:
        times = [timed() for _ in range(n_repeat)]
    return BenchmarkResult(name or getattr(fn, "__name__", "function"), cold, times, dict(p))

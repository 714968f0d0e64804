"""Auto-tuning: ``numfuse.tune(fn, *args)`` and background tuning
(``NUMFUSE_TUNE=<seconds>``).

The tuner searches each kernel's schedule space (tile sizes, loop order,
parallel loop, local tile buffers and their layouts, unrolling, vector and
FMA use, and library routines where one applies) by measuring candidates on
synthetic data of the kernel's sizes; the best schedule goes to a store next
to the kernel cache, keyed by (kernel, size class, machine), so later runs in
any process use it.
"""

import atexit
import math
import sys
import time

from . import _core


class TuneReport(list):
    """One entry per tuned kernel: its operations, sizes, default and best
    time per run, the speedup, evaluations, and the schedules."""

    def __str__(self):
        if not self:
            return "numfuse.tune: no kernels ran"
        lines = [f"numfuse.tune: {len(self)} kernel(s), "
                 f"{sum(k['tune_s'] for k in self):.1f} s, {sum(k['evals'] for k in self)} schedules measured"]
        for i, k in enumerate(self):
            lines.append(f"kernel {i}: {k['ops']}  [{k['size_class']}, x{k['occurrences']}]")
            lines.append(f"  default {k['default_ms']:.3f} ms -> tuned {k['best_ms']:.3f} ms "
                         f"({k['speedup']:.2f}x) after {k['evals']} evaluations in {k['tune_s']:.1f} s"
                         + (f", {k['failures']} failed" if k["failures"] else ""))
            lines.append(f"  default: {k['default_schedule']}")
            lines.append(f"  tuned:   {k['best_schedule']}")
            for e in k["errors"]:
                lines.append(f"  failure: {e}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


class _Bar:
    """A one-line progress bar on stderr (works in terminals and notebooks)."""

    def __init__(self, stream):
        self.stream = stream
        self.last = 0.0
        self.width = 0

    def __call__(self, k, n, ops, evals, max_evals, elapsed, budget, default_s, best_s):
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        frac = min(1.0, elapsed / budget) if budget > 0 else 1.0
        if max_evals:
            frac = max(frac, min(1.0, evals / max_evals))
        bar = "#" * int(20 * frac) + "-" * (20 - int(20 * frac))
        ok = 0 < best_s < math.inf and 0 < default_s < math.inf
        speed = f"{default_s / best_s:.2f}x" if ok else "-"
        name = ops if len(ops) <= 40 else ops[:37] + "..."
        line = f"\rnumfuse.tune kernel {k + 1}/{n} [{bar}] {evals} schedules, best {speed} vs default  {name}"
        self.width = max(self.width, len(line))
        self.stream.write(line.ljust(self.width))
        self.stream.flush()

    def close(self):
        if self.width:
            self.stream.write("\n")
            self.stream.flush()


def tune(fn, *args, budget=10.0, evals=None, progress=True, **kwargs):
    """Tune the kernels that ``fn(*args, **kwargs)`` runs.

    Calls ``fn`` once (computing its result as usual), then spends about
    ``budget`` seconds in total (split among its kernels by their run time)
    searching schedules, at most ``evals`` measurements per kernel if given.
    The winners are stored, and every later run -- in this process or any
    other using the same cache directory -- uses them. Returns a
    :class:`TuneReport`; ``progress=False`` silences the progress bar.
    """
    budget = float(budget)
    if not budget >= 0:
        raise ValueError(f"budget must be a number of seconds >= 0, got {budget!r}")
    if evals is not None:
        evals = int(evals)
        if evals < 1:
            raise ValueError(f"evals must be >= 1, got {evals!r}")
    _core.flush("tune")
    _core.tune_capture(True)
    try:
        result = fn(*args, **kwargs)  # kept alive so its kernels run
        _core.flush("tune")
        del result
    finally:
        _core.tune_capture(False)
    bar = _Bar(sys.stderr) if progress else None
    try:
        kernels = _core.tune_captured(budget, evals or 0, bar)
    finally:
        if bar:
            bar.close()
    for k in kernels:
        k["speedup"] = k["default_ms"] / k["best_ms"] if k["best_ms"] > 0 else 1.0
    return TuneReport(kernels)


def wait():
    """Block until background tuning (``NUMFUSE_TUNE``) has finished the
    kernels queued so far."""
    _core.tune_wait()


def store_info():
    """Where tuned schedules are stored, how many, and the machine key."""
    return _core.schedule_store_info()


def clear_store():
    """Forget every tuned schedule (in memory and on disk)."""
    _core.flush("clear_store")
    _core.clear_schedule_store()


atexit.register(_core.tune_shutdown)

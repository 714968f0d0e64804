"""A short, deterministic slice of the differential fuzz campaign (``make fuzz``
runs the long one: ``python -m tests.fuzz.campaign``).

Seeds 0..199 run in-process through ``fuzz.runner`` (NumPy, then numfuse with
the options the seed picks) in chunks of 25; a failing chunk prints every
failing program with its differences. Reproduce one with
``python -m tests.fuzz.campaign --only SEED`` (from the repository root), or
shrink it with ``--minimize SEED``.

A hang inside numfuse's native code cannot be interrupted in-process, so a
watchdog thread ends the test run (printing the seed and the program) if one
program runs longer than PROGRAM_TIMEOUT seconds.

Also here: the harness checks itself (NumPy against NumPy gives no
difference; deliberately wrong outcomes are reported) and the campaign's
worker machinery reports crashes and hangs.
"""

import copy
import faulthandler
import io
import os
import sys
import threading
import time

import numpy as onp
import pytest

from fuzz import campaign, programs, runner

SLICE_SEEDS = 200
CHUNK = 25
PROGRAM_TIMEOUT = 30.0
MAX_REPORTS = 8


class _Watchdog:
    """Ends the process if one program runs too long (after printing it,
    bypassing pytest's output capture)."""

    def __init__(self, capfd, seconds):
        self.capfd = capfd
        self.seconds = seconds
        self.deadline = None
        self.what = ""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def arm(self, what):
        self.what = what
        self.deadline = time.monotonic() + self.seconds

    def disarm(self):
        self.deadline = None

    def _run(self):
        while not self.stop.wait(0.5):
            if self.deadline is not None and time.monotonic() > self.deadline:
                msg = (f"\n\nFUZZ SLICE HANG: no result after {self.seconds:g} s; ending the test run.\n"
                       f"{self.what}\n")
                try:
                    with self.capfd.disabled():
                        sys.stderr.write(msg)
                        sys.stderr.flush()
                        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                except Exception:  # noqa: BLE001
                    os.write(2, msg.encode())
                os._exit(3)

    def close(self):
        self.stop.set()
        self.thread.join(2)


@pytest.fixture
def watchdog(capfd):
    w = _Watchdog(capfd, PROGRAM_TIMEOUT)
    yield w
    w.close()


@pytest.mark.parametrize("start", range(0, SLICE_SEEDS, CHUNK), ids=lambda s: f"seeds{s}-{s + CHUNK - 1}")
def test_fuzz_slice(start, watchdog):
    failing, reports = [], []
    for seed in range(start, start + CHUNK):
        prog = programs.generate(seed)
        watchdog.arm(f"seed {seed}, config {prog.config}\n{prog.text()}\n"
                     f"reproduce: python -m tests.fuzz.campaign --only {seed}")
        chk = runner.check_program(prog)
        watchdog.disarm()
        if not chk.ok:
            failing.append(seed)
            if len(reports) < MAX_REPORTS:
                reports.append(chk.report() + f"\n  reproduce: python -m tests.fuzz.campaign --only {seed}")
    assert not failing, (f"{len(failing)} of {CHUNK} fuzz programs differ from NumPy: seeds {failing}\n\n"
                         + "\n\n".join(reports))


# ---------------------------------------------------------------------------
# the generator


def test_generation_is_deterministic():
    for seed in (0, 7, 12345):
        a, b = programs.generate(seed), programs.generate(seed)
        assert a.text() == b.text() and a.config == b.config
        assert a.to_dict() == programs.Program.from_dict(a.to_dict()).to_dict()


def test_generator_reaches_every_statement_class_and_option():
    seen = set()
    opts = {"fusion": set(), "max_window": set(), "memo": set(), "random_schedules": set()}
    for seed in range(SLICE_SEEDS):
        p = programs.generate(seed)
        assert 5 <= len(p.stmts) <= 25
        seen |= {s.cls for s in p.stmts}
        for k in opts:
            v = p.config[k]
            opts[k].add(v if k != "random_schedules" else v is not None)
    assert seen >= set(programs.CLASSES), set(programs.CLASSES) - seen
    assert opts["fusion"] == {True, False} and opts["memo"] == {True, False}
    assert opts["random_schedules"] == {True, False}
    assert opts["max_window"] >= {1, 2, 3, 4, 512}


# ---------------------------------------------------------------------------
# the comparator checks itself


def test_numpy_against_numpy_has_no_differences():
    """The harness is deterministic and compares NumPy with itself cleanly
    (no false positives from snapshots, tolerances, flags or exceptions)."""
    for seed in range(0, SLICE_SEEDS, 3):
        p = programs.generate(seed)
        a, b = runner.run_program(p, onp), runner.run_program(p, onp)
        diffs = runner.compare(a, b, p, self_check=True)
        assert not diffs, f"seed {seed}\n{p.text()}\n" + "\n".join(map(str, diffs))


def _reference_outcomes():
    p = programs.Program.from_sources([
        ("v0 = np.arange(12, dtype=np.float64).reshape(3, 4) / 4", "creation"),
        ("v1 = v0.T + 1", "layout"),
        ("s2 = v0[1, 2]", "element_access"),
        ("v3 = np.array([-0.0, 0.0, 1.5])", "signed_zero"),
        ("v4 = v0.sum()", "reduction"),
        ("v5 = np.zeros(10**15)", "alloc"),
        ("items6 = list(v0[0])", "element_access"),
    ], seed="reference")
    p.meta = {n: programs.VarMeta(cls=c) for n, c in
              [("v0", "creation"), ("v1", "layout"), ("s2", "element_access"), ("v3", "signed_zero"),
               ("v4", "reduction"), ("items6", "element_access")]}
    p.meta["v4"].red = p.meta["v4"].zero_d_ok = True
    return p, runner.run_program(p, onp)


def test_comparator_reports_wrong_outcomes():
    p, ref = _reference_outcomes()
    assert ref.stmts[5][0] == "err" and "MemoryError" in ref.stmts[5][1]
    assert not runner.compare(ref, copy.deepcopy(ref), p, self_check=True)

    def mutated(fn):
        o = copy.deepcopy(ref)
        fn(o)
        return runner.compare(ref, o, p, self_check=True)

    def set_value(o):
        o.vars["v1"]["values"][0, 0] += 1e-6
    def set_dtype(o):
        o.vars["v0"]["values"] = o.vars["v0"]["values"].astype(onp.float32)
        o.vars["v0"]["dtype"] = "float32"
    def set_strides(o):
        o.vars["v1"]["strides"] = (32, 8)
        o.vars["v1"]["c"], o.vars["v1"]["f"] = True, False
    def set_signed_zero(o):
        o.vars["v3"]["values"][0] = 0.0
    def set_nan(o):
        o.vars["v3"]["values"][2] = onp.nan
    def set_readonly(o):
        o.vars["v0"]["w"] = False
    def scalar_to_0d(o):
        o.vars["s2"] = runner.snapshot(onp.array(o.vars["s2"]["value"]))
    def list_item_type(o):
        o.vars["items6"]["items"][0] = runner.snapshot(1.0)
    def exception_message(o):
        o.stmts[5] = o.stmts[5][:2] + ("Unable to allocate 7 PiB",)
    def exception_type(o):
        o.stmts[5] = ("err", "ValueError", o.stmts[5][2])
    def no_exception(o):
        o.stmts[5] = ("ok",)
    def missing(o):
        del o.vars["v3"]
    def snapshot_error(o):
        o.vars["v1"] = {"k": "snap_error", "error": ("err", "MemoryError", "std::bad_alloc")}

    cases = [set_value, set_dtype, set_strides, set_signed_zero, set_nan, set_readonly, scalar_to_0d,
             list_item_type, exception_message, exception_type, no_exception, missing, snapshot_error]
    for fn in cases:
        diffs = mutated(fn)
        assert diffs, f"{fn.__name__}: the comparator found no difference"
    # a 0-d array for a reduction's scalar (numfuse's documented difference) is accepted ...
    o = copy.deepcopy(ref)
    o.vars["v4"] = dict(runner.snapshot(onp.array(ref.vars["v4"]["value"])), lib="numfuse")
    assert not [m for m in runner.compare(ref, o, p) if m.var == "v4"]
    # ... but not for element access, and not with a different value
    o.vars["s2"] = dict(runner.snapshot(onp.array(ref.vars["s2"]["value"])), lib="numfuse")
    assert [m for m in runner.compare(ref, o, p) if m.var == "s2" and m.kind == "type"]
    o.vars["v4"]["values"] = o.vars["v4"]["values"] + 1
    assert [m for m in runner.compare(ref, o, p) if m.var == "v4" and m.kind == "value"]
    # the numfuse run must produce numfuse arrays
    assert [m for m in runner.compare(ref, copy.deepcopy(ref), p) if m.var == "v0" and m.kind == "type"]


def test_comparator_on_a_real_numfuse_run():
    """End to end: numfuse's outcome for a small clean program matches, and
    a tampered one does not."""
    p = programs.Program.from_sources([
        ("v0 = np.array(onp.arange(12, dtype='float64').reshape(3, 4) / 4)", "creation"),
        ("v1 = v0 * 2 + 1", "elementwise"),
        ("v0[1:] += v0[:-1]", "elementwise"),
        ("v2 = np.asfortranarray(v1)", "layout"),
    ], seed="e2e", config={"fusion": True})
    p.meta = {n: programs.VarMeta() for n in ("v0", "v1", "v2")}
    chk = runner.check_program(p)
    assert chk.ok, chk.report()
    bad = copy.deepcopy(chk.nf_outcome)
    bad.vars["v1"]["values"][2, 3] = 0.0
    assert runner.compare(chk.np_outcome, bad, p)


def test_numpys_own_overlap_rule_is_the_second_reference():
    """Where numfuse differs from NumPy, the harness asks NumPy with its
    documented overlap rule enforced (ufunc inputs copied when an output
    shares their memory). NumPy 2.4 breaks that rule for the in-place
    `negative` of 4-byte values in a strided column view (campaign seed
    321662); numfuse keeps it. Such a program passes, with NumPy's
    difference recorded; a difference from both references still fails."""
    src = [("v0 = np.array(onp.arange(32, dtype='float32').reshape(2, 4, 4))", "creation"),
           ("v1 = v0[0:1, :, 1:2]", "indexing"),
           ("np.negative(v1, out=v1)", "elementwise"),
           ("v2 = v1 * 2", "elementwise")]
    p = programs.Program.from_sources(src, seed="overlap", config={"fusion": False})
    p.meta = {n: programs.VarMeta() for n in ("v0", "v1", "v2")}
    # The reference itself: the rule, whatever NumPy does.
    safe = runner.run_program(p, runner.OVERLAP_SAFE_NUMPY)
    assert onp.array_equal(safe.vars["v1"]["values"].ravel(), -onp.arange(1, 16, 4, dtype=onp.float32))
    assert runner.OVERLAP_SAFE_NUMPY.add.reduce(onp.ones(3)) == 3.0  # ufunc methods pass through
    chk = runner.check_program(p)
    assert chk.ok, chk.report()
    plain = runner.run_program(p, onp)
    # NumPy's own difference from its rule (if this NumPy has the bug) is recorded.
    assert bool(chk.numpy_overlap_bugs) == bool(runner.compare(plain, safe, p, self_check=True))
    # numfuse wrong against both references: a failure.
    bad = copy.deepcopy(chk.nf_outcome)
    bad.vars["v2"]["values"][0, 0, 0] = 7.0
    assert runner.compare(safe, bad, p) and runner.compare(chk.np_outcome, bad, p)


# ---------------------------------------------------------------------------
# the campaign's worker machinery


def test_campaign_reports_crash_and_hang():
    progs = [
        programs.Program.from_sources(["v0 = np.arange(3.0)",
                                       "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                                      seed="crash-program"),
        programs.Program.from_sources(["v0 = np.arange(3.0) + 1"], seed="ok-program"),
        programs.Program.from_sources(["v0 = np.ones(3)", "import time; time.sleep(100)"], seed="hang-program"),
        programs.Program.from_sources(["v0 = np.arange(4) * 2"], seed="ok-program-2"),
    ]
    for pr in progs:
        pr.meta = {"v0": programs.VarMeta()}
    results = {}
    out = io.StringIO()
    summary = campaign.run_campaign(progs, workers=1, timeout=2.0, progress_every=0, out=None,
                                    on_result=lambda i, r: results.__setitem__(i, r))
    campaign.print_summary(summary, out=out)
    text = out.getvalue()
    assert summary.programs == 4 and summary.passed == 2, text
    assert summary.counts["crash"] == 1 and summary.counts["hang"] == 1, text
    assert summary.failed
    assert results[0]["status"] == "crash" and "SIGSEGV" in results[0]["detail"]
    assert results[2]["status"] == "hang"
    crash = summary.failures["crash"][0]
    assert crash["seed"] == "crash-program" and "os.kill" in crash["program"] and "statement [1]" in crash["where"]
    hang = summary.failures["hang"][0]
    assert hang["seed"] == "hang-program" and "time.sleep(100)" in hang["program"]
    assert "crash-program" in text and "hang-program" in text and "SIGSEGV" in text

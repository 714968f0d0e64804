"""Instructions per operation on numfuse's hot paths, counted by callgrind
(valgrind): repeatable for one binary and one input, whatever else the
machine is doing, so a regression shows without timing anything
(tests/test_instruction_counts.py compares them with a baseline kept in the
repository). 16-element float64 arrays, where the interpreter and the core,
not the arithmetic, are the work:

  record         recording one operation (c = a + b, tier "lazy")
  memo_flush     a memoized flush of perop.py's 20-operation loop body, per
                 operation (the body's window rewritten by recompute_producers
                 and bound as recorded, flush.cc)
  unmemo_flush   the same flush with the memo off (the analysis every time),
                 per operation
  tier0_op       one operation computed at the call by tier 0 (tier "auto")

Each region runs in a loop with counting toggled on around it (client
requests, numfuse._core.callgrind) and the cost of an empty region is taken
off. The kernels are compiled first in a run without valgrind, into a
cache directory of this run's own, and loaded from it under valgrind.

    python benchmarks/instructions.py [--json-out FILE] [--update-baseline]

--update-baseline writes the counts into tests/instruction_baseline.json
for the core's kind of run (release, or its checks on, NUMFUSE_CHECKS=1:
`make test` runs both):
do it on purpose, saying why in the commit.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "loops"))

METRICS = ["record", "memo_flush", "unmemo_flush", "tier0_op"]
BASELINE = os.path.join(HERE, "..", "tests", "instruction_baseline.json")
TOLERANCE = 1.25  # a count more than 25% over its baseline fails the test
UNITS = {"record": 200, "memo_flush": 20, "unmemo_flush": 4, "tier0_op": 200}  # repetitions counted


def _inside():
    """The regions (run under valgrind; also run once without it, to
    compile the kernels into the cache)."""
    import gc

    import numpy

    import numfuse as nf
    from perop import BODY_OPS, body

    counting = nf._core.on_valgrind()
    cg = nf._core.callgrind if counting else (lambda what, name="": None)
    a, b = numpy.linspace(1.0, 2.0, 16), numpy.linspace(2.0, 3.0, 16)
    A, B = nf.array(a), nf.array(b)
    nf.flush()
    gc.collect()
    gc.disable()

    def region(name, step, reps):
        # (Counted: step() `reps` times, each between two toggles.)
        cg("zero")
        for _ in range(reps):
            cg("toggle")
            step()
            cg("toggle")
        cg("dump", name)

    region("empty", lambda: None, 50)

    def loop(n):
        def run():
            for _ in range(n):
                pass
        return run

    n = UNITS["record"]
    with nf.config(tier="lazy", max_window=10**6):
        def record():
            c = None
            for _ in range(n):
                c = A + B
            return c
        record()
        nf.flush()
        region("record_loop", loop(n), 1)
        region("record", record, 1)
        nf.flush()

    def flushes(memo, reps):
        u = nf.array(numpy.linspace(0.0, 1.0, 16))
        nf.flush()
        with nf.config(tier="lazy", memo=memo):
            for _ in range(5):  # compiles the kernels, fills the memo
                u = body(nf, u, A, B)
                nf.flush()
            cg("zero")
            for _ in range(reps):
                u = body(nf, u, A, B)
                cg("toggle")
                nf.flush()
                cg("toggle")
            cg("dump", "memo_flush" if memo else "unmemo_flush")
        return u

    flushes(True, UNITS["memo_flush"])
    flushes(False, UNITS["unmemo_flush"])

    n = UNITS["tier0_op"]
    with nf.config(tier="auto"):
        def tier0():
            c = None
            for _ in range(n):
                c = A + B
            return c
        tier0()
        region("tier0_loop", loop(n), 1)
        region("tier0_op", tier0, 1)
    gc.enable()
    assert BODY_OPS == 20


def _totals(outdir):
    """{dump name: instructions} from callgrind's dump files."""
    out = {}
    for path in glob.glob(os.path.join(outdir, "cg.out*")):
        name, total = None, None
        with open(path) as f:
            for line in f:
                if line.startswith("desc: Trigger: Client Request: "):
                    name = line[len("desc: Trigger: Client Request: "):].strip()
                elif line.startswith("totals:") or line.startswith("summary:"):
                    total = int(line.split()[1])
        if name is not None and total is not None:
            out[name] = total
    return out


def measure(python=sys.executable):
    """{metric: instructions per unit} (and the build's kind), counted in
    a subprocess under valgrind."""
    if shutil.which("valgrind") is None:
        raise RuntimeError("valgrind is not installed (apt-get install valgrind; `make deps` does)")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMFUSE_CACHE_DIR=os.path.join(tmp, "cache"), PYTHONHASHSEED="0",
                   NUMFUSE_TARGET="cpu")
        for k in ("NUMFUSE_TIER", "NUMFUSE_MEMO", "NUMFUSE_RECOMPUTE", "NUMFUSE_THREADS"):
            env.pop(k, None)
        env["OMP_NUM_THREADS"] = "1"
        me = os.path.abspath(__file__)
        subprocess.run([python, me, "--inside"], env=env, check=True)  # compiles the kernels
        outdir = os.path.join(tmp, "cg")
        os.makedirs(outdir)
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--dump-instr=no",
               f"--callgrind-out-file={os.path.join(outdir, 'cg.out')}", python, me, "--inside"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"callgrind run failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
        t = _totals(outdir)
        probe = subprocess.run([python, "-c", "import numfuse._core as c; print(c.checks_on())"], env=env,
                               capture_output=True, text=True, check=True)
    missing = [k for k in ["empty", "record_loop", "record", "memo_flush", "unmemo_flush", "tier0_loop", "tier0_op"]
               if k not in t]
    if missing:
        raise RuntimeError(f"callgrind wrote no counts for {missing} (found {sorted(t)})")
    toggle = t["empty"] / 50  # one region's toggles (and an empty step)
    res = {
        "record": (t["record"] - t["record_loop"]) / UNITS["record"],
        "memo_flush": (t["memo_flush"] - UNITS["memo_flush"] * toggle) / (UNITS["memo_flush"] * 20),
        "unmemo_flush": (t["unmemo_flush"] - UNITS["unmemo_flush"] * toggle) / (UNITS["unmemo_flush"] * 20),
        "tier0_op": (t["tier0_op"] - t["tier0_loop"]) / UNITS["tier0_op"],
    }
    build = "checks" if probe.stdout.strip() == "True" else "release"
    return {"build": build, "instructions": {k: round(v, 1) for k, v in res.items()}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help="also write the counts as JSON to this file")
    ap.add_argument("--update-baseline", action="store_true",
                    help="write the counts into tests/instruction_baseline.json for this build's kind")
    args = ap.parse_args(argv)
    if args.inside:
        _inside()
        return 0
    m = measure()
    print(f"instructions per operation ({m['build']} build; callgrind)")
    for k in METRICS:
        print(f"  {k:14s} {m['instructions'][k]:12.1f}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(m, f, indent=2)
    if args.update_baseline:
        base = {}
        if os.path.exists(BASELINE):
            with open(BASELINE) as f:
                base = json.load(f)
        base[m["build"]] = m["instructions"]
        with open(BASELINE, "w") as f:
            json.dump(base, f, indent=2, sort_keys=True)
            f.write("\n")
        print(f"wrote the {m['build']} counts to {os.path.relpath(BASELINE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

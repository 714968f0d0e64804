"""The hot paths' instruction counts against the baseline kept in
tests/instruction_baseline.json: recording an operation, a memoized and an
unmemoized flush of a 20-operation loop body, a tier-0 operation
(benchmarks/instructions.py counts them under callgrind; the same binary and
input give the same count whatever the machine is doing, so this is not a
timing assertion). A count more than 25% over its baseline fails: a hot path
got slower. When that is on purpose, run

    python benchmarks/instructions.py --update-baseline

(once per kind of run: `make test` runs the suite with the core's checks on,
NUMFUSE_CHECKS=1, and off) and say why in the commit.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))

import instructions  # noqa: E402


def test_hot_paths_within_a_quarter_of_their_baseline():
    m = instructions.measure()
    with open(instructions.BASELINE) as f:
        base = json.load(f)
    assert m["build"] in base, (f"no baseline for the {m['build']} build in {instructions.BASELINE}: "
                                f"python benchmarks/instructions.py --update-baseline")
    grown = []
    for k in instructions.METRICS:
        b, c = base[m["build"]][k], m["instructions"][k]
        assert c > 0, f"{k}: counted {c} instructions (the region ran nothing?)"
        if c > instructions.TOLERANCE * b:
            grown.append(f"{k}: {b:.0f} -> {c:.0f} instructions per operation (+{100 * (c / b - 1):.0f}%)")
    assert not grown, ("hot paths grew more than 25% over tests/instruction_baseline.json:\n  " + "\n  ".join(grown)
                       + "\n(on purpose? python benchmarks/instructions.py --update-baseline, the reason in the commit)")

"""Every float32 dividend through numfuse's division by a scalar, bit for bit
against NumPy (the exhaustive check of src/jit/exact_division.h; minutes per
divisor, so not part of the suite):

    python tests/exhaustive_division.py [DIVISOR ...]

Exits 1 on the first difference."""

import sys
import tempfile

import numpy as onp

import numfuse as nf
from numfuse import _core

DEFAULT = [3.0, 7.0, 10.0, 0.1, 1.1, -9.0, 1e-3, 65537.0, 1 - 2.0 ** -24, 2.0 ** -100, 2.0 ** 100]
CHUNK = 1 << 26


def check(c):
    c = onp.float32(c)
    before = _core.profile()["exact_divisions_total"]
    for start in range(0, 1 << 32, CHUNK):
        a = onp.arange(start, start + CHUNK, dtype=onp.uint64).astype(onp.uint32).view(onp.float32)
        with onp.errstate(all="ignore"):
            got = onp.asarray(nf.asarray(a) / c)
            exp = a / c
        nan = onp.isnan(exp)
        bad = ((got.view(onp.uint32) != exp.view(onp.uint32)) & ~nan) | (onp.isnan(got) != nan)
        if bad.any():
            i = onp.flatnonzero(bad)[0]
            print(f"{float(c)!r}: {a[i]!r} / c gave {got[i]!r}, NumPy {exp[i]!r}")
            return False
    rewritten = _core.profile()["exact_divisions_total"] > before or not nf.get_option("exact_division")
    print(f"{float(c)!r}: all 2^32 dividends agree" + ("" if rewritten else " (kernel from an earlier divisor)"))
    return True


def main(argv):
    divisors = [float(v) for v in argv] or DEFAULT
    with tempfile.TemporaryDirectory() as d, nf.config(cache_dir=d, tier="lazy", quick_compile=False):
        if not nf.get_option("exact_division"):
            print("this CPU has no fused multiply-add: numfuse keeps the divider")
        return 0 if all(check(c) for c in divisors) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

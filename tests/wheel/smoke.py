"""Smoke test of an installed numfuse wheel with the system's LLVM hidden:
kernels compile (a fresh cache) and run, BLAS and threads work, and no
library is loaded from the system's LLVM/OpenMP/TBB/OpenBLAS files."""
import os
import sys

hidden = os.environ.get("NUMFUSE_HIDDEN_PATHS", "").split()
assert any("libLLVM" in h for h in hidden), f"the system's LLVM is not hidden: {hidden}"
for h in hidden:  # really hidden: empty
    if not h.endswith("/"):
        assert os.path.getsize(h) == 0, h
    else:
        assert os.listdir(h) == [], h

import numpy as onp

import numfuse as np

assert "site-packages" in np.__file__, np.__file__
x = onp.random.default_rng(0).random(200_000)
with np.config(tier="lazy"):
    a = np.asarray(x)
    r = np.sqrt(a * 2.0 + 1.0) - np.sin(a) * a
    s = float(r.sum())
    report = str(np.explain())
want = onp.sqrt(x * 2.0 + 1.0) - onp.sin(x) * x
assert abs(s - want.sum()) < 1e-6 * abs(want.sum()), (s, want.sum())
assert "compiled" in report, report
m = np.asarray(x[:40_000].reshape(200, 200))
onp.testing.assert_allclose(onp.asarray(m @ m), x[:40_000].reshape(200, 200) @ x[:40_000].reshape(200, 200))
with np.config(threads=2, tier="lazy"):
    big = np.ones(1 << 20) * 3.0
    assert float(big.sum()) == 3.0 * (1 << 20)
cfg = np.show_config(mode="dicts")

maps = open("/proc/self/maps").read()
loaded = sorted({line.split()[-1] for line in maps.splitlines() if ".so" in line.split()[-1]})
system = [p for p in loaded if any(p.startswith(h.rstrip("/")) for h in hidden)]
assert not system, f"loaded from the system: {system}"
ours = [p for p in loaded if "numfuse.libs" in p]
assert any("libLLVM" in p for p in ours) and any("libomp" in p for p in ours), ours
print("wheel smoke test passed:", len(ours), "libraries from numfuse.libs;", report.splitlines()[0])

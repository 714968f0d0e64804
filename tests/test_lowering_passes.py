"""Lowering as named passes over the target-neutral loop IR (src/lower/passes.h).

``NUMFUSE_DUMP=passes`` (or ``numfuse.config(dump="passes")``) prints each new
kernel's loop nest after every pass, and the core then also runs the IR
verifier after each pass (as it always does with its checks on:
NUMFUSE_CHECKS=1, `make check-test`).
These tests run programs in fresh processes with a fresh kernel cache, so
every kernel is lowered there, and read the dumps: the passes run in order,
the nest says what the IR promises (Cores loops, thread expressions,
barriers, allocation scopes), the CPU target's tail leaves no barrier, and
the results are NumPy's.
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest

import numfuse as nf

PASSES = ["build", "partials", "tile_buffers", "gpu_points", "gpu_tiles", "gpu_scan", "promote", "gpu_split", "gpu_blocks", "simd", "pairwise", "unroll", "vectorize", "storage", "simplify", "parallelize", "cpu_barriers", "math_blocks"]


def run_dumped(tmp_path, program, extra_env=None):
    env = dict(os.environ)
    env.update({"NUMFUSE_CACHE_DIR": str(tmp_path / "cache"), "NUMFUSE_DUMP": "passes", "NUMFUSE_TIER": "lazy"})
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(program)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return r.stdout, r.stderr


def nests(stderr):
    """[(pass, schedule, nest text)] from a dump, in order."""
    out = []
    for m in re.finditer(r"^-- (\S+) after (\S+) \(schedule ([^)]*)\) --\n(.*?)(?=^-- |^numfuse kernel|\Z)", stderr,
                         re.M | re.S):
        out.append((m.group(2), m.group(3), m.group(4)))
    return out


def by_kernel(dumps):
    """One {pass: nest} per lowered kernel (its build dump starts it; a
    kernel's dumps are written together), with its schedule under "schedule"."""
    kernels = []
    for p, sched, text in dumps:
        if p == "build":
            kernels.append({})
        kernels[-1][p] = text
        kernels[-1]["schedule"] = sched
    return kernels


def parallel(schedule):
    return any(f.startswith("p") for f in schedule.split("|"))


PROGRAM = """
    import numpy as onp
    import numfuse as np
    x = onp.linspace(-3, 3, 1_000_000)
    a = np.asarray(x)
    print(repr(float((a * 2.5).sum())), repr(float((x * 2.5).sum())))
    m = onp.arange(60000.0).reshape(300, 200) % 7
    b = np.asarray(m)
    print(onp.array_equal(onp.asarray((b * 3).max(axis=0)), (m * 3).max(axis=0)))
    print(int(np.argmax(a * a)), int(onp.argmax(x * x)))
    print(onp.array_equal(onp.asarray(b + 1), m + 1))
"""


def test_every_kernel_goes_through_the_passes_in_order(tmp_path):
    out, err = run_dumped(tmp_path, PROGRAM)
    lines = out.split()
    assert lines[0] == lines[1]  # the parallel pairwise sum is NumPy's to the bit
    assert lines[2] == "True" and lines[3] == lines[4] and lines[5] == "True"
    dumps = nests(err)
    kernels = by_kernel(dumps)
    assert len(kernels) >= 4
    for k in kernels:
        assert [p for p in k if p != "schedule"] == PASSES
    # Every dump starts with the kernel's signature.
    assert all(text.startswith("kernel kernel(p0: ") for _, _, text in dumps)


def test_parallel_reductions_combine_their_shares_after_a_parallel_loop_the_cpu_maps_to_threads(tmp_path):
    _, err = run_dumped(tmp_path, PROGRAM)
    kernels = by_kernel(nests(err))
    shared = [k for k in kernels if re.search(r"^  for nf_s in \[0, nf_shares\) step 1 parallel if ", k["build"], re.M)]
    assert shared, "no kernel had a Parallel loop"
    combined = [k for k in shared if " combining " in k["build"]]
    assert combined, "no parallel reduction combined partials"
    for k in shared:
        build = k["build"]
        # Built: no thread in sight, the shares are the units of work.
        assert "thread_" not in build and "cores" not in build and "barrier" not in build, build
        # Every pass up to the target's keeps the Parallel loop; parallelize
        # makes it a Cores loop whose threads run contiguous runs of shares.
        for p in PASSES[:PASSES.index("parallelize")]:
            assert " parallel if " in k[p] and "cores" not in k[p], (p, k[p])
        after = k["parallelize"]
        assert " parallel" not in after and re.search(r"^  cores if ", after, re.M), after
        assert re.search(r"for nf_s in \[\(\(nf_shares \* thread_index\) / thread_count\), "
                         r"\(\(nf_shares \* \(thread_index \+ 1\)\) / thread_count\)\) step 1:", after), after
    for k in combined:
        build, private = k["build"], k["partials"]
        # Built as a serial loop would combine: the shares into one Kernel
        # array, which the Parallel loop lists; no share indexes it yet.
        loop = re.search(r"^  for nf_s in .* combining (.*):$", build, re.M)
        assert loop, build
        arrays = re.findall(r"(\w+):\w+", loop.group(1))
        for a in arrays:
            assert re.search(rf"alloc kernel \w+ {a}\[", build), (a, build)
        assert "[nf_s]" not in build and "(nf_s * " not in build, build
        # The partials pass: one copy per share (indexed by the share), or
        # for a pairwise sum the tree's node sums, which the shares take in
        # turn (the pairwise pass); the loop lists nothing any more.
        assert " combining " not in private, private
        pairwise = re.search(r" pairwise \w+ -> (\w+):", private)
        assert " pairwise " not in loop.group(1) or pairwise, private
        if pairwise:
            assert re.search(rf"alloc kernel \w+ {pairwise.group(1)}\[\(2 \* nf_shares\)\]", private), private
            assert f"{pairwise.group(1)}[pw_k] = " in k["pairwise"], k["pairwise"]
            assert "for pw_k in [nf_s, pw_P) step nf_shares" in k["pairwise"], k["pairwise"]
        else:
            for a in arrays:
                assert re.search(rf"alloc kernel \w+ {a}\[(\(.* \* )?nf_shares\)?\]", private), (a, private)
                assert re.search(rf"{a}\[\(*nf_s[ )\]]", private), (a, private)
        # The copies (or nodes) combined after the loop, in share order (or
        # up the tree): no barrier, the statements after a loop run after it.
        rest = re.split(r"^  for nf_s in .*\n", private, maxsplit=1, flags=re.M)[1]
        after = re.split(r"^(?=  \S)", rest, maxsplit=1, flags=re.M)  # the statements after the loop's body
        assert len(after) == 2, private
        assert "for t in [1, nf_shares)" in after[1] or "for pw_w in [1, pw_P)" in after[1], private
        assert "free " not in private  # releases are the storage pass's
        for a in arrays:
            assert f"free {a}" in k["storage"], k["storage"]
        assert "barrier" not in k["cpu_barriers"]
    # Thread expressions never appear outside a Cores loop's body.
    for k in kernels:
        for p in PASSES:
            for line in k[p].splitlines():
                if not line.startswith("    ") and ("thread_index" in line or "thread_count" in line):
                    pytest.fail(f"thread expression at the top level after {p}: {line}")


def test_numpys_pairwise_sums_are_marked_by_build_and_written_out_by_their_pass(tmp_path):
    # A row sum (the innermost loop over the reduced axis: serial form) and
    # a long 1-d sum (parallel: the shares take the tree's nodes); both
    # NumPy's to the bit.
    out, err = run_dumped(tmp_path, """
        import numpy as onp
        import numfuse as np
        rng = onp.random.default_rng(5)
        m = rng.standard_normal((300, 1000)) * 10.0 ** rng.integers(-6, 6, (300, 1000))
        x = rng.standard_normal(1_000_000) * 10.0 ** rng.integers(-6, 6, 1_000_000)
        b, a = np.asarray(m), np.asarray(x)
        print(onp.array_equal(onp.asarray((b * 2).sum(axis=1)), (m * 2).sum(axis=1)),
              float((a * 3).sum()) == float((x * 3).sum()))
    """)
    assert out.split() == ["True", "True"]
    kernels = by_kernel(nests(err))
    marked = [k for k in kernels if re.search(r"^ *for \w+ in \[0, n\d\) step 1( vectorized)? pairwise\b", k["build"], re.M)]
    # (The parallel form: build lists the sum's register with the Parallel
    # loop; the partials pass gives the marked loop its node sums.)
    forms = {"nodes" if " -> " in re.search(r" pairwise.*:$", k["partials"], re.M).group(0) else "serial"
             for k in marked}
    assert forms == {"serial", "nodes"}, [k["partials"] for k in kernels]
    for k in marked:
        assert " -> " not in k["build"], k["build"]
        nodes = " -> " in re.search(r" pairwise.*:$", k["partials"], re.M).group(0)
        assert nodes == bool(re.search(r" combining \w+:sum \(pairwise racc\d+\):", k["build"])), k["build"]
    for k in marked:
        # build leaves the loop whole (the point's body once, no tree);
        # the pass writes out the tree walk and the blocks of 8.
        assert "pw_go" not in k["build"] and "pw_r_" not in k["build"], k["build"]
        after = k["pairwise"]
        assert not re.search(r" pairwise\b", after) and "for pw_go in [0, 1) step 0:" in after, after
        assert re.search(r"for pw_j in \[0, 8\) step 1 vectorized:", after), after
        for p in PASSES[PASSES.index("pairwise"):]:
            assert not re.search(r"^ *for .* pairwise\b", k[p], re.M), (p, k[p])


def test_memory_combines_are_kept_in_registers_by_the_promote_pass(tmp_path):
    # Sums and ordered products over the outer and inner axes of a 3-d
    # array: the kept axis's loop sits between the reduced ones, so build
    # combines into memory (set to the identity first), each combine marked;
    # the promote pass keeps the element in a register over the inner
    # reduced loop(s) and folds it in after them. All NumPy's.
    out, err = run_dumped(tmp_path, """
        import numpy as onp
        import numfuse as np
        x = (onp.arange(4 * 60 * 500.0).reshape(4, 60, 500) * 7919) % 1009 / 1009 + 0.5
        i = (x * 100).astype(onp.int64)
        a, ia = np.asarray(x), np.asarray(i)
        print(onp.allclose(onp.asarray((a * 2).sum(axis=(0, 2))), (x * 2).sum(axis=(0, 2)), rtol=1e-13),
              onp.array_equal(onp.asarray((ia + 1).sum(axis=(0, 2))), (i + 1).sum(axis=(0, 2))),
              onp.array_equal(onp.asarray((a[:, :, :40] * 1.01).prod(axis=(0, 2))), (x[:, :, :40] * 1.01).prod(axis=(0, 2))))
    """)
    assert out.split() == ["True"] * 3
    kernels = by_kernel(nests(err))
    promoted = []
    for k in kernels:
        for reg in re.findall(r"^ *\S+\[.*\] = .*  accumulates .*\(register (racc\d+)\)$", k["build"], re.M):
            # build: a memory combine, no register; promote: the register,
            # declared as an accumulator, the combine gone from memory.
            assert not re.search(rf"^ *\w+ {reg} = ", k["build"], re.M), k["build"]
            decl = re.search(rf"^ *\w+ {reg} = (.*)  accumulates (\w+)( in order)?$", k["promote"], re.M)
            if decl:
                promoted.append((decl.group(2), decl.group(3), k))
                assert f"(register {reg})" not in k["promote"], k["promote"]
                assert re.search(rf"= (sum|prod)\(.*, {reg}\)$|= {reg}$", k["promote"], re.M), k["promote"]
    ops = {(op, bool(order)) for op, order, _ in promoted}
    assert ("sum", False) in ops and ("prod", True) in ops, [k["build"] for k in kernels]
    for op, order, k in promoted:
        if order:  # an ordered product starts from the element itself
            assert re.search(r"float64 racc\d+ = (acc|p)\d+\[.*\]  accumulates prod in order", k["promote"]), k["promote"]


def test_what_vectorized_loops_carry_is_decided_by_the_simd_pass(tmp_path):
    # Row maxima (float max: lanes), row sums of integers (a simd clause),
    # an argmax over a long vector (lanes with the index) and a cumulative
    # sum along rows (a scan: the loop stays serial); all NumPy's.
    out, err = run_dumped(tmp_path, """
        import numpy as onp
        import numfuse as np
        m = (onp.arange(60000.0).reshape(300, 200) * 7919) % 1009 - 500
        i = m.astype(onp.int64)
        x = onp.sin(onp.arange(1_000_000.0))
        b, ib, a = np.asarray(m), np.asarray(i), np.asarray(x)
        print(onp.array_equal(onp.asarray((b * 3).max(axis=1)), (m * 3).max(axis=1)),
              onp.array_equal(onp.asarray((ib * 3).sum(axis=1)), (i * 3).sum(axis=1)),
              int(np.argmax(a * a)) == int(onp.argmax(x * x)),
              onp.array_equal(onp.asarray(np.cumsum(ib + 1, axis=1)), onp.cumsum(i + 1, axis=1)))
    """)
    assert out.split() == ["True"] * 4
    kernels = by_kernel(nests(err))
    for k in kernels:
        # build and promote declare each register with what it combines and
        # decide nothing about lanes.
        for p in ("build", "promote"):
            assert " reducing " not in k[p] and " splitting " not in k[p], k[p]
    def after_simd(pattern):  # (registers: build's, or the promote pass's)
        return [k for k in kernels if re.search(pattern, k["promote"], re.M)]
    maxes = after_simd(r"float64 racc\d+ = .* accumulates max$")
    sums = after_simd(r"int64 racc\d+ = .* accumulates sum$")
    args = after_simd(r"accumulates argmax index ridx\d+$")
    assert maxes and sums and args, [k["build"] for k in kernels]
    for k in maxes:
        assert re.search(r"vectorized splitting racc\d+:max", k["simd"]), k["simd"]
    for k in sums:
        assert re.search(r"vectorized reducing racc\d+:\+", k["simd"]), k["simd"]
        assert " splitting " not in k["simd"], k["simd"]  # integers add exactly: no blocks
    for k in args:
        assert re.search(r"vectorized splitting racc\d+:argmax", k["simd"]), k["simd"]
    scans = [k for k in kernels if "if (0 < i1_" in k["build"]]
    assert scans, [k["build"] for k in kernels]
    for k in scans:
        assert not re.search(r"for i1_\d+ in .* vectorized", k["simd"]), k["simd"]


def test_random_schedules_keep_the_ir_valid_after_every_pass(tmp_path):
    # With dumping on, release builds verify the nest after each pass and a
    # violation raises at the compile; random schedules reach tile buffers,
    # heap tiles, unrolling, lanes and parallel partials.
    out, err = run_dumped(tmp_path, """
        import numpy as onp
        import numfuse as np
        rng = onp.random.default_rng(3)
        x = rng.uniform(-1, 1, (67, 45))
        y = rng.uniform(-1, 1, (45, 31))
        bad = 0
        for seed in range(12):
            with np.config(random_schedules=seed, routines=False):
                a, b = np.asarray(x), np.asarray(y)
                got = [a.sum(axis=0), a.max(axis=1), np.argmin(a, axis=0), np.cumsum(a, axis=1), a @ b,
                       (a * a).mean(), np.where(a > 0, a, -a).sum(axis=1)]
                want = [x.sum(axis=0), x.max(axis=1), onp.argmin(x, axis=0), onp.cumsum(x, axis=1), x @ y,
                        (x * x).mean(), onp.where(x > 0, x, -x).sum(axis=1)]
                for g, w in zip(got, want):
                    if not onp.allclose(onp.asarray(g), w, rtol=1e-12, atol=1e-12):
                        bad += 1
        print(bad)
    """)
    assert out.split() == ["0"]
    # Unrolled schedules: build emits the nest below the split once (a
    # FullSplit, with the bounds of both paths); the unroll pass makes the two
    # copies, the full path with literal, unrolled trip counts.
    kernels = by_kernel(nests(err))
    split = [k for k in kernels if "full-tile split, full path if" in k["build"]]
    assert split, "no random schedule unrolled a loop"
    for k in split:
        assert "(full: " in k["build"] and "(full path: " in k["build"], k["build"]
        after = k["unroll"]
        assert "full-tile split" not in after and "(full: " not in after and "(full path: " not in after, after
        assert re.search(r"^ *if .*:$", after, re.M) and re.search(r"^ *else:$", after, re.M), after
        # the full path's unrolled loops run over literal tile sizes
        assert re.search(r"for \w+ in \[(\w+), \(\1 \+ \d+\)\)", after), after
    for k in kernels:
        for p in PASSES[PASSES.index("unroll"):]:
            assert "full-tile split" not in k[p], (p, k[p])
    # Input tile buffers: build requests them (a TileIn, every read still of
    # memory); the tile_buffers pass allocates each, copies the input's part
    # in and has the loops after it read the copy.
    requested = [k for k in kernels if re.search(r"^ *tile tile\d+: \w+ <- p\d+ \[", k["build"], re.M)]
    assert requested, "no random schedule cached an input"
    for k in requested:
        for m in re.finditer(r"^ *tile (tile\d+): (\w+) <- (p\d+) \[", k["build"], re.M):
            name, dtype, ptr = m.groups()
            assert f"{name}[" not in k["build"], k["build"]
            after = k["tile_buffers"]
            assert re.search(rf"alloc local {dtype} {name}\[", after), after
            assert re.search(rf"^ *{name}\[.*\] = {ptr}\[", after, re.M), after  # the copy
            assert re.search(rf"= {name}\[", after), after  # a read of the copy
    # Output tiles: requested by build too (each combine still into memory,
    # marked); the pass allocates the tile, sets it to the identity, has
    # the combines after the request take it and folds it into memory after
    # them.
    outs = [k for k in kernels if re.search(r"^ *tile tile\d+: \w+ -> \w+ \[", k["build"], re.M)]
    assert outs, "no random schedule cached an output"
    for k in outs:
        for m in re.finditer(r"^ *tile (tile\d+): (\w+) -> (\w+) \[", k["build"], re.M):
            name, dtype, target = m.groups()
            assert f"{name}[" not in k["build"], k["build"]
            assert re.search(rf"^ *{target}\[.*\] = .*  accumulates ", k["build"], re.M), k["build"]
            after = k["tile_buffers"]
            assert re.search(rf"alloc local {dtype} {name}\[", after), after
            assert re.search(rf"^ *{name}\[.*\] = \w+\({name}\[.*\], ", after, re.M), after  # combines into it
            assert re.search(rf"^ *{target}\[.*\] = \w+\({target}\[.*\], {name}\[", after, re.M), after  # the fold
            assert not re.search(rf"^ *{name}\[.*  accumulates ", after, re.M), after
    for k in kernels:
        for p in PASSES[PASSES.index("tile_buffers"):]:
            assert not re.search(r"^ *tile tile\d+:", k[p], re.M), (p, k[p])
    kernels = by_kernel(nests(err))
    assert len(kernels) >= 40
    text = "\n".join(k["cpu_barriers"] for k in kernels)
    assert "alloc local" in text  # tile buffers or lanes on the stack
    assert "cores" in text and "vectorized" in text
    # Serial schedules make nests without threads; parallel ones, one
    # Parallel loop until the target's parallelize pass, one Cores loop per
    # region from it on.
    serial = [k for k in kernels if not parallel(k["schedule"])]
    assert serial and len(serial) < len(kernels)
    for k in kernels:
        for i, p in enumerate(PASSES):
            mapped = i >= PASSES.index("parallelize")
            threads = "cores" in k[p] or "thread_" in k[p]
            shares = " parallel if " in k[p]
            assert threads == (mapped and parallel(k["schedule"])), (p, k["schedule"], k[p])
            assert shares == (not mapped and parallel(k["schedule"])), (p, k["schedule"], k[p])


def test_dump_option_round_trips():
    before = nf.options()["dump"]
    with nf.config(dump="passes"):
        assert nf.options()["dump"] == "passes"
        assert nf._core.get_dump_passes() and nf._core.get_dump()
    assert nf.options()["dump"] == before
    with nf.config(dump=True):
        assert nf.options()["dump"] is True
        assert not nf._core.get_dump_passes()


CHAIN_PROGRAM = """
    import numpy as onp
    import numfuse as np
    rng = onp.random.default_rng(3)
    x = rng.standard_normal((300, 257))
    def blur(lib, a):
        bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
        return (bx[:-2, :] + bx[1:-1, :] + bx[2:, :]) / 3
    def diffusion(lib, u):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        fx = lap[:, 1:] - lap[:, :-1]
        fy = lap[1:, :] - lap[:-1, :]
        return u[2:-2, 2:-2] - 0.1 * (fx[1:-1, 1:] - fx[1:-1, :-1] + fy[1:, 1:-1] - fy[:-1, 1:-1])
    for fn in (blur, diffusion):
        for storage in ("rolling", "recompute", "ring"):
            with np.config(stage_storage=storage):
                got = onp.asarray(fn(np, np.asarray(x)))
                print(fn.__name__, storage, onp.array_equal(got, fn(onp, x)),
                      [g["stages"] for g in np.explain().groups])
"""


def test_a_multi_stage_kernel_is_one_composed_nest(tmp_path):
    # Each stage is built serial and goes through unroll, vectorize, storage and simplify; then
    # compose makes the one nest the kernel is: a Cores loop at the top over
    # tiles of rows, a Stage statement per stage (its nest, with its
    # pointers moved to the tile's rows in memory or in the thread's tile
    # buffers), and the target's tail.
    # (Fluxes stored, not recomputed at the update: diffusion keeps its 4 stages.)
    out, err = run_dumped(tmp_path, CHAIN_PROGRAM, {"NUMFUSE_STAGE_MIN_BYTES": "0", "NUMFUSE_RECOMPUTE": "0"})
    rows = [line.split(" ", 2) for line in out.strip().splitlines()]
    assert len(rows) == 6
    for name, storage, rest in rows:
        assert rest.startswith("True"), (name, storage, rest)
    # blur ran as one kernel of 2 stages, diffusion as one of 4
    assert "[2, 2]" in rows[0][2] and "[4, 4, 4, 4]" in rows[3][2], rows
    dumps = nests(err)
    composed = [(i, text) for i, (p, _, text) in enumerate(dumps) if p == "compose"]
    assert len(composed) == 2, [p for p, _, _ in dumps]
    for i, text in composed:
        # the stages' own passes came first, in order, then the chain's
        n_stages = text.count("stage(")
        stage_passes = [p for p, _, _ in dumps[max(0, i - (len(PASSES) - 3) * n_stages):i]]
        assert stage_passes[-(len(PASSES) - 3) * n_stages:] == PASSES[:-3] * n_stages
        assert [p for p, _, _ in dumps[i + 1:i + 5]] == ["simplify", "parallelize", "cpu_barriers", "math_blocks"]
        top = [line for line in text.splitlines()[1:] if not line.startswith("    ")]
        assert len(top) == 1 and top[0].startswith("  cores if"), top
        assert "thread_index" in text and "barrier" not in text
        # the stages' bodies read only their own pointers
        assert n_stages in (2, 4)
        assert text.count("for r0 in [first, last)") == 1
    assert composed[0][1].count("stage(") == 2 and composed[1][1].count("stage(") == 4


def test_a_scalar_prologue_is_computed_once_before_the_threads(tmp_path):
    # alpha = rr / pAp feeds x + alpha * p: one kernel whose nest computes
    # the division and stores alpha at its top level, before the Cores loop,
    # and whose loop body reads the value (no load, no division per point).
    out, err = run_dumped(tmp_path, """
        import numpy as onp
        import numfuse as np
        pn = onp.linspace(0, 1, 1_000_000)
        p = np.asarray(pn)
        rr, pap = (p * p).sum(), (p * 3).sum()
        np.flush()
        alpha = rr / pap
        x = p + alpha * p
        a, xv = float(alpha), onp.asarray(x)
        an = (pn * pn).sum() / (pn * 3).sum()
        print(onp.isclose(a, an, rtol=1e-13), onp.allclose(xv, pn + an * pn, rtol=1e-13))
    """)
    assert out.split() == ["True", "True"]
    kernels = [k for k in by_kernel(nests(err)) if "cores if" in k["cpu_barriers"] and "divide(" in k["build"]]
    assert len(kernels) == 1, err[-3000:]
    nest = kernels[0]["cpu_barriers"]
    top, region = nest.split("cores if", 1)
    assert re.search(r"^  float64 v\d+ = divide\(v\d+, v\d+\)", top, re.M), nest
    assert re.search(r"^  p\d+\[0\] = ", top, re.M), nest  # alpha stored once
    assert "divide(" not in region, nest


def test_a_stages_stored_prologue_is_stored_before_the_threads(tmp_path):
    # d = hi - lo is a script's variable, computed in the prologue of the
    # chain's second stage (recorded after a - lo). The composed kernel
    # stores it once, before its Cores loop (build_stores' nest as a Stage
    # of its own); in the threads the stage computes d at each tile, its
    # store guarded by a parameter each thread clears.
    out, err = run_dumped(tmp_path, """
        import time
        import numpy as onp
        import numfuse as np
        an = onp.random.default_rng(1).standard_normal((400, 400))
        a = np.asarray(an)
        def blur(x):
            bx = (x[:, :-2] + x[:, 1:-1] + x[:, 2:]) / 3
            return bx[:-2] + bx[1:-1] + bx[2:]
        for i in range(20):
            lo, hi = a.min(), a.max()
            n = a - lo
            d = hi - lo
            y = blur(n / d)
            np.flush()
            if any(g.get("stores_once") for g in np.explain().groups):
                break
            time.sleep(0.2)
        dn = an.max() - an.min()
        print(float(d) == dn, onp.array_equal(onp.asarray(y), blur((an - an.min()) / dn)))
    """)
    assert out.split() == ["True", "True"], err[-3000:]
    composed = [text for p, _, text in nests(err) if p == "cpu_barriers" and "iq" in text]
    assert len(composed) == 1, err[-3000:]
    top, region = composed[0].split("  cores if", 1)
    # before the threads: the stage's parameters, then a Stage that only
    # computes and stores the prologue (no loop)
    pre = top.split("  stage(", 1)[1]
    assert re.search(r"^    float64 v\d+ = subtract\(v\d+, v\d+\)\n    p\d+\[0\] = v\d+\n?$", pre, re.M), top
    assert " for " not in pre, top
    # in the threads: the guard cleared, and the stage's store under it
    m = re.search(r"^ +if \(0 < ip\[(\d+)\]\):\n +p\d+\[0\] = v\d+$", region, re.M)
    assert m, region
    assert re.search(rf"^ +ip\d+\[{m.group(1)}\] = 0$", region, re.M), region
    assert region.count("if (0 < ip[") == 1


def test_math_blocks_buffers_strided_operands_of_math_calls(tmp_path):
    """math_blocks: a simd loop calling a math function on a strided operand
    (x[::3], every other column, a strided output) runs in blocks of
    64: the block's strided reads copied into a Local array, the simd loop
    reading that (its math calls vector calls), strided stores copied out;
    a contiguous loop, and a strided loop without a math call, are left
    alone. The values are the contiguous loop's, bit for bit."""
    out, err = run_dumped(tmp_path, """
        import numpy as onp
        import numfuse as np
        x = onp.random.default_rng(0).uniform(-3, 3, 300_001)
        a = np.asarray(x)
        ref = onp.asarray(np.exp(a[::3] * 0.5))            # (the contiguous kernel below)
        cont = onp.asarray(np.exp(np.asarray(x[::3].copy()) * 0.5))
        print(onp.array_equal(ref, cont))
        m = np.asarray(x[:300_000].reshape(1000, 300))
        every2 = onp.asarray(np.tanh(m[:, ::2]) + 1.0)      # strided along the inner loop
        dense = np.asarray(onp.ascontiguousarray(x[:300_000].reshape(1000, 300)[:, ::2]))
        print(onp.array_equal(every2, onp.asarray(np.tanh(dense) + 1.0)))
        out = np.zeros(200_000)
        out[::2] = np.sin(a[:100_000])                      # a strided store
        print(onp.array_equal(onp.asarray(out)[::2], onp.asarray(np.sin(a[:100_000]))))
        print(onp.array_equal(onp.asarray(a[::3] * 0.5 + 1), x[::3] * 0.5 + 1))  # no math call
        # in place: the strided array read (buffered) and written (in the simd loop) by one kernel
        b = np.asarray(x.copy())
        e = np.exp(np.clip(b[::2], -5.0, 5.0))
        b[::2] += b[::2]
        want = x.copy()
        want[::2] += want[::2]
        print(onp.array_equal(onp.asarray(b), want), onp.array_equal(onp.asarray(e), onp.asarray(np.exp(np.clip(np.asarray(x[::2].copy()), -5.0, 5.0)))))
        c = np.asarray(x.copy())
        c[::3] = np.sin(c[::3]) * 2.0
        print(onp.array_equal(onp.asarray(c)[::3], onp.asarray(np.sin(np.asarray(x[::3].copy())) * 2.0)), onp.array_equal(onp.asarray(c)[1::3], x[1::3]))
    """)
    assert out.split() == ["True"] * 8, err[-3000:]
    blocked = [text for p, _, text in nests(err) if p == "math_blocks" and "_mb" in text]
    plain = [text for p, _, text in nests(err) if p == "math_blocks" and "_mb" not in text]
    # exp(a[::3] * 0.5), tanh(m[:, ::2]) + 1 and the strided store of sin are blocked
    assert len(blocked) >= 3, err[-3000:]
    for text in blocked:
        assert re.search(r"alloc local float64 \w+_mb\d+_\d+\[64\]", text), text
        assert re.search(r"step 64:", text) and "vectorized" in text, text
    assert any(re.search(r"^ +p\d+\[\(.*\* ip\[\d+\]\)\] = \w+_mb\d+_\d+\[", t, re.M) for t in blocked), blocked
    # the contiguous exp and the strided affine map are not
    assert any("exp(" in t for t in plain) and any("exp(" not in t and "ip[" in t for t in plain), plain

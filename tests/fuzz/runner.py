"""Run one fuzz program under NumPy and under numfuse, in-process, and compare.

``run_program(program, module, config=None) -> Outcome`` executes the
statements one by one in a fresh namespace ``{np: module, onp: numpy}``. A
statement that raises is recorded (exception type and message) and execution
goes on with the next one. Only at the end is every variable snapshotted into
plain NumPy/Python data (taking a snapshot of a numfuse array syncs it, so
doing it earlier would hide laziness bugs). Plain NumPy objects are
snapshotted first, before anything makes numfuse flush, which is what a user
reading them at that point would see (e.g. ``w = onp.asarray(v); v += 10``).

``compare(np_outcome, nf_outcome, program) -> [Mismatch]``.
``check_program(program) -> Check``: both runs plus the comparison.
"""

import builtins
import contextlib
import math
import re
import time
import types
import warnings
from dataclasses import dataclass, field

import numpy as onp

from .programs import Program, VarMeta

SNAPSHOT_MAX_BYTES = 64 << 20   # larger arrays: metadata only (and never materialized)
LIST_MAX = 4096

_nf = None


def numfuse():
    global _nf
    if _nf is None:
        import numfuse as nf

        _nf = nf
    return _nf


# ---------------------------------------------------------------------------
# outcomes


def type_name(t):
    mod = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", getattr(t, "__name__", repr(t)))
    return name if mod == "builtins" else f"{mod}.{name}"


_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


def normalize_message(msg):
    """Only what cannot be the same: the class name of the array type in
    messages that quote it, and object addresses."""
    msg = msg.replace("numfuse._core.ndarray", "numpy.ndarray").replace("numfuse.ndarray", "numpy.ndarray")
    return _ADDR.sub("0x?", msg)


def _exc_summary(e):
    try:
        msg = str(e)
    except Exception as e2:  # noqa: BLE001
        msg = f"<str() raised {type(e2).__name__}>"
    return ("err", type_name(type(e)), normalize_message(msg))


@dataclass
class Outcome:
    module: str
    stmts: list = field(default_factory=list)      # ("ok",) | ("err", type, message)
    vars: dict = field(default_factory=dict)       # name -> snapshot
    exit_error: tuple = None                       # raised by the final flush / config exit
    seconds: float = 0.0


def _contains_nf(x, nfmod, depth=0):
    if nfmod is None or depth > 4:
        return False
    if isinstance(x, nfmod.ndarray):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_nf(e, nfmod, depth + 1) for e in x[:LIST_MAX])
    return False


def snapshot(x, nfmod=None, depth=0):
    """Plain data for one value (see module docstring)."""
    try:
        lib = None
        if nfmod is not None and isinstance(x, nfmod.ndarray):
            lib = "numfuse"
        elif isinstance(x, onp.ndarray):
            lib = "numpy"
        if lib is not None:
            shape = tuple(int(s) for s in x.shape)
            dtype = onp.dtype(x.dtype)
            size = math.prod(shape)
            fl = x.flags
            snap = {"k": "array", "lib": lib, "dtype": str(dtype), "shape": shape,
                    "c": bool(fl.c_contiguous), "f": bool(fl.f_contiguous), "w": bool(fl.writeable),
                    "strides": tuple(int(s) for s in x.strides), "values": None}
            if size * dtype.itemsize <= SNAPSHOT_MAX_BYTES:
                snap["values"] = onp.array(x, copy=True)
            return snap
        if isinstance(x, onp.generic):
            return {"k": "npscalar", "type": type_name(type(x)), "dtype": str(x.dtype), "value": x}
        if type(x) in (bool, int, float, complex, str, bytes, type(None)):
            return {"k": "py", "type": type(x).__name__, "value": x}
        if isinstance(x, (list, tuple)) and depth < 6:
            return {"k": type(x).__name__, "len": len(x),
                    "items": [snapshot(e, nfmod, depth + 1) for e in x[:LIST_MAX]]}
        if isinstance(x, onp.dtype):
            return {"k": "dtype", "value": str(x)}
        if isinstance(x, type):
            return {"k": "class", "value": type_name(x)}
        return {"k": "other", "type": normalize_message(type_name(type(x)))}
    except Exception as e:  # noqa: BLE001 - e.g. a deferred numfuse error surfacing at the sync
        return {"k": "snap_error", "error": _exc_summary(e)}


def _snap_names(ns):
    out = []
    for k, v in ns.items():
        if k.startswith("_") or k in ("np", "onp") or isinstance(v, (types.ModuleType, types.FunctionType)):
            continue
        out.append(k)
    return sorted(out, key=_natural)


def _natural(name):
    m = re.match(r"([A-Za-z_]+)(\d+)$", name)
    return (int(m.group(2)), m.group(1)) if m else (10**9, name)


def resolve_config(program, config):
    if config is None:
        config = program.config
    return dict(config or {})


class _OverlapSafeUfunc:
    """A NumPy ufunc whose call copies its array inputs first when an output
    (``out=`` or positional) shares memory with one of them."""

    def __init__(self, uf):
        self._uf = uf

    def __getattr__(self, name):  # reduce, accumulate, at, nin, ...: NumPy's own
        return getattr(self._uf, name)

    def __call__(self, *args, **kw):
        outs = list(args[self._uf.nin:])
        out = kw.get("out")
        outs += list(out) if isinstance(out, tuple) else [out]
        ins = args[:self._uf.nin]
        if any(isinstance(o, onp.ndarray) and isinstance(a, onp.ndarray) and onp.shares_memory(a, o)
               for o in outs for a in ins):
            args = tuple(a.copy() if isinstance(a, onp.ndarray) else a for a in ins) + tuple(args[self._uf.nin:])
        return self._uf(*args, **kw)


class _OverlapSafeNumpy(types.ModuleType):
    """NumPy with its documented overlap rule enforced ("operations where ufunc
    input and output operands have memory overlap are defined to be the same
    as for equivalent operations where there is no memory overlap"): each
    module-level ufunc called with an output that shares memory with an
    input runs on copies of its inputs. The harness asks it only where
    numfuse and NumPy disagree: where it agrees with numfuse and not with
    NumPy, the difference is NumPy's breaking its own rule (NumPy 2.4's
    in-place `negative` of 4-byte values in a strided column view reads its
    input with the wrong stride), not numfuse's."""

    def __getattr__(self, name):
        attr = getattr(onp, name)
        return _OverlapSafeUfunc(attr) if isinstance(attr, onp.ufunc) else attr


OVERLAP_SAFE_NUMPY = _OverlapSafeNumpy("numpy")


def run_program(program, module, config=None, trace=None, on_stmt=None):
    """Run `program` with ``np = module``. `config`: numfuse options (None: the
    program's own, {}: numfuse's defaults; ignored for NumPy). `trace`: a
    print-like function for a verbose run. `on_stmt(i)`: called before each
    statement (the campaign's crash/hang locator)."""
    is_np = module is onp or module is OVERLAP_SAFE_NUMPY
    nfmod = None if is_np else module
    out = Outcome(module=module.__name__)
    cfg = resolve_config(program, config)
    ns = {"np": module, "onp": onp, "__builtins__": builtins, "__name__": "__fuzz__"}
    if not is_np:
        # hygiene: nothing left pending from a previous program (in the same process)
        try:
            module.flush()
        except Exception:  # noqa: BLE001
            pass
    t0 = time.perf_counter()
    ctx = contextlib.nullcontext() if is_np or not cfg else module.config(**cfg)
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            with ctx:
                for i, st in enumerate(program.stmts):
                    if on_stmt is not None:
                        on_stmt(i)
                    try:
                        code = compile(st.src, f"<fuzz stmt {i}>", "exec")
                        exec(code, ns)
                        res = ("ok",)
                    except Exception as e:  # noqa: BLE001 - recorded and compared
                        res = _exc_summary(e)
                    out.stmts.append(res)
                    if trace is not None:
                        trace(f"[{i}] {st.cls:>14}  {st.src}" if "\n" not in st.src else
                              f"[{i}] {st.cls:>14}  " + st.src.replace("\n", "\n" + " " * 21))
                        trace(f"{'':>21}-> " + ("ok" if res[0] == "ok" else f"raised {res[1]}: {res[2]}"))
                if on_stmt is not None:
                    on_stmt(len(program.stmts))
                names = _snap_names(ns)
                # plain NumPy data first: reading it must not depend on a numfuse sync
                later = []
                for n in names:
                    if _contains_nf(ns[n], nfmod):
                        later.append(n)
                    else:
                        out.vars[n] = snapshot(ns[n], nfmod)
                for n in later:
                    out.vars[n] = snapshot(ns[n], nfmod)
        except Exception as e:  # noqa: BLE001 - raised by the config's exit flush
            out.exit_error = _exc_summary(e)
    out.seconds = time.perf_counter() - t0
    ns.clear()
    return out


def run_program_jit(program, config=None, calls=2):
    """Run `program` under numfuse as one ``numfuse.jit`` function: its
    statements exec'd in turn (each exception recorded, as run_program does)
    in a namespace the function makes, the namespace's variables returned.
    The first call traces; later ones run the compiled program if the trace
    became one. Returns (outcome of the last call, the JitFunction)."""
    nf = numfuse()
    cfg = resolve_config(program, config)
    cfg["target"] = "cpu"  # (programs are CPU kernels)
    codes = [compile(st.src, f"<fuzz stmt {i}>", "exec") for i, st in enumerate(program.stmts)]

    def body():
        ns = {"np": nf, "onp": onp, "__builtins__": builtins, "__name__": "__fuzz__"}
        res = []
        for code in codes:
            try:
                exec(code, ns)
                res.append(("ok",))
            except Exception as e:  # noqa: BLE001 - recorded and compared
                res.append(_exc_summary(e))
        return res, {n: ns[n] for n in _snap_names(ns)}

    fn = nf.jit(body)
    out = None
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for _ in range(calls):
            nf.flush()
            out = Outcome(module="numfuse.jit")
            t0 = time.perf_counter()
            try:
                with nf.config(**cfg):
                    res, values = fn()
                    out.stmts = list(res)
                    for n in sorted(values, key=lambda n: _contains_nf(values[n], nf)):
                        out.vars[n] = snapshot(values[n], nf)
            except Exception as e:  # noqa: BLE001
                out.exit_error = _exc_summary(e)
            out.seconds = time.perf_counter() - t0
    return out, fn


# ---------------------------------------------------------------------------
# comparison


@dataclass
class Mismatch:
    kind: str          # exception | value | type | missing | snapshot | exit
    cls: str           # statement class it is attributed to
    stmt: int          # statement index it is attributed to (None: end of program)
    var: str
    detail: str

    @property
    def category(self):
        return "wrong_exception" if self.kind in ("exception", "exit") else "mismatch"

    def __str__(self):
        where = f"stmt [{self.stmt}]" if self.stmt is not None else "end"
        v = f" {self.var}" if self.var else ""
        return f"{self.kind} ({self.cls}, {where}){v}: {self.detail}"


RTOL = {  # (plain, downstream of a transcendental, downstream of a reduction)
    2: (2e-3, 4e-3, 1e-2),
    4: (1e-5, 5e-5, 1e-4),
    8: (1e-12, 1e-10, 1e-9),
    16: (1e-12, 1e-10, 1e-9),
}


def _fmt_arr(a, limit=12):
    a = onp.asarray(a)
    flat = a.ravel()
    s = onp.array2string(flat[:limit], precision=17, separator=", ", threshold=limit + 1)
    return s[:-1] + (", ...]" if flat.size > limit else "]")


def _diff_values(e, g, meta):
    """None if NumPy values `e` and numfuse values `g` (same dtype and shape) agree."""
    kind = e.dtype.kind
    if kind in "biuSUmM":
        if not onp.array_equal(e, g):
            bad = onp.argwhere(e != g)
            k = tuple(bad[0]) if bad.size else ()
            return (f"values differ at {len(bad)} of {e.size} positions, first {k}: numpy {e[k]!r} numfuse "
                    f"{g[k]!r}\n    numpy   {_fmt_arr(e)}\n    numfuse {_fmt_arr(g)}")
        return None
    if kind == "O":
        if e.tolist() != g.tolist():
            return f"values differ: numpy {e.tolist()!r:.200} numfuse {g.tolist()!r:.200}"
        return None
    if kind == "c":
        return _diff_values(e.real.copy(), g.real.copy(), meta) or _diff_values(e.imag.copy(), g.imag.copy(), meta)
    # floats
    item = e.dtype.itemsize
    if getattr(meta, "narrow", False):
        item = min(item, 4)  # computed in float32 somewhere upstream, then widened
    plain, tr, red = RTOL.get(item, RTOL[8])
    fuzzy = meta.red or meta.transc
    rtol = red if meta.red else tr if meta.transc else plain
    e64 = e.astype(onp.float64) if item <= 8 else e.astype(onp.longdouble)
    g64 = g.astype(onp.float64) if item <= 8 else g.astype(onp.longdouble)
    ne, ng = onp.isnan(e64), onp.isnan(g64)
    problems = []
    if not onp.array_equal(ne, ng):
        problems.append(f"NaN at {onp.count_nonzero(ne != ng)} positions differ")
    ie, ig = onp.isinf(e64), onp.isinf(g64)
    if not onp.array_equal(ie, ig) or not onp.array_equal(e64[ie], g64[ie]):
        problems.append("infinities differ")
    fin = onp.isfinite(e64) & onp.isfinite(g64)
    if fin.any():
        ef, gf = e64[fin], g64[fin]
        atol = 0.0
        if fuzzy:
            # reassociated arithmetic errs in proportion to the magnitudes that
            # went into it (x - mean(x) of huge x cancels to a few ulp of x)
            atol = rtol * max(1.0, float(onp.max(onp.abs(ef))), getattr(meta, "scale", 0.0))
        err = onp.abs(gf - ef)
        bad = err > atol + rtol * onp.abs(ef)
        if bad.any():
            k = int(onp.argmax(bad))
            problems.append(f"{int(bad.sum())} finite values differ beyond rtol {rtol:g}"
                            f"{f' atol {atol:.3g}' if atol else ''} (first: numpy {ef[k]!r} numfuse {gf[k]!r})")
        if not fuzzy and not meta.loose_sz:
            z = (ef == 0) & (gf == 0)
            if z.any() and not onp.array_equal(onp.signbit(ef[z]), onp.signbit(gf[z])):
                problems.append(f"sign of zero differs at {int((onp.signbit(ef[z]) != onp.signbit(gf[z])).sum())} "
                                "positions")
    if problems:
        return "; ".join(problems) + f"\n    numpy   {_fmt_arr(e)}\n    numfuse {_fmt_arr(g)}"
    return None


def _strides_differ(shape, se, sg):
    return any(a != b for n, a, b in zip(shape, se, sg) if n != 1)


def _cmp_array(e, g, meta, path):
    """e: NumPy-run array snapshot, g: numfuse-run array snapshot."""
    out = []
    if e["dtype"] != g["dtype"]:
        out.append(f"dtype numpy {e['dtype']} numfuse {g['dtype']}")
    if e["shape"] != g["shape"]:
        out.append(f"shape numpy {e['shape']} numfuse {g['shape']}")
    if out:
        return out
    if meta.lib != "onp_view" and e["w"] != g["w"]:
        out.append(f"flags.writeable numpy {e['w']} numfuse {g['w']}")
    if math.prod(e["shape"]) > 1:
        if e["c"] != g["c"] or e["f"] != g["f"]:
            out.append(f"contiguity (c, f) numpy {(e['c'], e['f'])} numfuse {(g['c'], g['f'])}")
        if _strides_differ(e["shape"], e["strides"], g["strides"]):
            out.append(f"strides numpy {e['strides']} numfuse {g['strides']} (shape {e['shape']})")
    if e["values"] is None or g["values"] is None:
        if (e["values"] is None) != (g["values"] is None):
            out.append("one side too large to snapshot")
        return out
    if getattr(meta, "noisy", False):
        return out  # NumPy's own value is not determined (see VarMeta.noisy)
    d = _diff_values(e["values"], g["values"], meta)
    if d:
        out.append(d)
    return out


# The dtypes numfuse computes in; results of other dtypes come back from its
# NumPy fallback as NumPy arrays (see README).
HELD_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
               "float64"}


def _scalar_as_array(s):
    return onp.asarray(s["value"]).reshape(())


def _cmp(e, g, meta, path, self_check=False):
    """Differences between snapshots e (NumPy run) and g (numfuse run;
    `self_check`: another NumPy run)."""
    ke, kg = e["k"], g["k"]
    if kg == "snap_error":
        return [("snapshot", f"reading the value raised {g['error'][1]}: {g['error'][2]}")]
    if ke == "snap_error":
        return [("snapshot", f"reading the NumPy value raised {e['error'][1]}: {e['error'][2]}")]
    if ke == "array":
        if kg != "array":
            return [("type", f"numpy gives an ndarray {e['dtype']}{list(e['shape'])}, numfuse {_describe(g)}")]
        out = []
        want = e["lib"] if self_check else "numfuse" if meta.lib == "np" else "numpy"
        if meta.lib == "foreign" and not self_check:
            want = g["lib"]  # from a dtype numfuse does not hold yet (float16, complex): either is by design
        elif want == "numfuse" and g["lib"] == "numpy" and e["dtype"] not in HELD_DTYPES:
            want = "numpy"  # a dtype numfuse does not hold yet: NumPy's array, by design
        if g["lib"] != want:
            out.append(("type", f"expected a {want} ndarray, numfuse run gives a {g['lib']} ndarray"))
        out += [("value", d) for d in _cmp_array(e, g, meta, path)]
        return out
    if ke == "npscalar":
        if kg == "npscalar":
            if e["type"] != g["type"]:
                return [("type", f"numpy scalar {e['type']}, numfuse {g['type']}")]
            d = _diff_values(_scalar_as_array(e), _scalar_as_array(g), meta)
            return [("value", d)] if d else []
        if kg == "array" and g["shape"] == () and g["lib"] == "numfuse":
            out = []
            if not meta.zero_d_ok:
                out.append(("type", f"numpy gives a scalar {e['type']}, numfuse a 0-d array {g['dtype']}"))
            if g["dtype"] != e["dtype"]:
                out.append(("value", f"dtype numpy {e['dtype']} numfuse {g['dtype']}"))
            elif g["values"] is not None:
                d = _diff_values(_scalar_as_array(e), g["values"], meta)
                if d:
                    out.append(("value", d))
            return out
        return [("type", f"numpy gives a scalar {e['type']}, numfuse {_describe(g)}")]
    if ke == "py":
        if kg != "py" or e["type"] != g["type"]:
            return [("type", f"numpy gives a Python {e['type']} {e['value']!r:.60}, numfuse {_describe(g)}")]
        ev, gv = e["value"], g["value"]
        if e["type"] in ("float", "complex"):
            d = _diff_values(onp.asarray(ev).reshape(()), onp.asarray(gv).reshape(()), meta)
            return [("value", d)] if d else []
        return [] if ev == gv else [("value", f"numpy {ev!r:.200} numfuse {gv!r:.200}")]
    if ke in ("list", "tuple"):
        if kg != ke:
            return [("type", f"numpy gives a {ke}, numfuse {_describe(g)}")]
        if e["len"] != g["len"]:
            return [("value", f"length numpy {e['len']} numfuse {g['len']}")]
        out = []
        for k, (a, b) in enumerate(zip(e["items"], g["items"])):
            for kind, d in _cmp(a, b, meta, f"{path}[{k}]", self_check):
                out.append((kind, f"[{k}] {d}"))
                if len(out) >= 3:
                    return out
        return out
    if ke in ("dtype", "class"):
        return [] if (kg == ke and e["value"] == g["value"]) else [("type", f"numpy {e}, numfuse {g}")]
    # other objects: the same kind of object
    return [] if (kg == ke and e.get("type") == g.get("type")) else [("type", f"numpy {e}, numfuse {g}")]


def _describe(s):
    k = s["k"]
    if k == "array":
        return f"a {s['lib']} ndarray {s['dtype']}{list(s['shape'])}"
    if k == "npscalar":
        return f"a NumPy scalar {s['type']}"
    if k == "py":
        return f"a Python {s['type']} {s['value']!r:.60}"
    if k in ("list", "tuple"):
        return f"a {k} of {s['len']}"
    return repr(s)[:100]


def _attribution(program, meta, name):
    if meta is not None and meta.stmts:
        i = meta.stmts[-1]
        if 0 <= i < len(program.stmts):
            return program.stmts[i].cls, i
    # not defined in the NumPy run: the first statement that binds the name
    pat = re.compile(rf"(^|[;\s]){re.escape(name)}\s*(=|\+=|-=)(?!=)", re.M)
    for i, st in enumerate(program.stmts):
        if pat.search(st.src):
            return st.cls, i
    return (meta.cls if meta is not None and meta.cls else "unknown"), None


def compare(np_outcome, nf_outcome, program, self_check=False):
    """Everything numfuse did differently from NumPy (an empty list: a pass).
    `self_check`: nf_outcome is a second NumPy run (the harness checking itself)."""
    out = []
    stmts = program.stmts
    for i, (a, b) in enumerate(zip(np_outcome.stmts, nf_outcome.stmts)):
        if a != b:
            da = "ok" if a[0] == "ok" else f"raised {a[1]}: {a[2]}"
            db = "ok" if b[0] == "ok" else f"raised {b[1]}: {b[2]}"
            out.append(Mismatch("exception", stmts[i].cls, i, "", f"numpy {da}\n    numfuse {db}"))
    if len(np_outcome.stmts) != len(nf_outcome.stmts):
        out.append(Mismatch("exception", "harness", None, "",
                            f"ran {len(np_outcome.stmts)} vs {len(nf_outcome.stmts)} statements"))
    if np_outcome.exit_error != nf_outcome.exit_error:
        out.append(Mismatch("exit", "end", None, "", f"end of program: numpy {np_outcome.exit_error}, "
                                                     f"numfuse {nf_outcome.exit_error}"))
    for name in sorted(set(np_outcome.vars) | set(nf_outcome.vars), key=_natural):
        meta = program.meta.get(name) or VarMeta()
        cls, idx = _attribution(program, program.meta.get(name), name)
        if name not in nf_outcome.vars:
            out.append(Mismatch("missing", cls, idx, name, "defined with NumPy, not with numfuse"))
            continue
        if name not in np_outcome.vars:
            out.append(Mismatch("missing", cls, idx, name, "defined with numfuse, not with NumPy"))
            continue
        diffs = _cmp(np_outcome.vars[name], nf_outcome.vars[name], meta, name, self_check)
        if diffs:
            kinds = [k for k, _ in diffs]
            kind = "snapshot" if "snapshot" in kinds else "value" if "value" in kinds else "type"
            out.append(Mismatch(kind, cls, idx, name, "\n    ".join(d for _, d in diffs)))
    return out


# ---------------------------------------------------------------------------
# one program, both ways


@dataclass
class Check:
    program: Program
    config: dict
    mismatches: list
    np_outcome: Outcome
    nf_outcome: Outcome
    # Where numfuse differed from NumPy only where NumPy broke its own
    # overlap rule (OVERLAP_SAFE_NUMPY agreed with numfuse): NumPy's
    # differences from that rule. Not a failure.
    numpy_overlap_bugs: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.mismatches

    def categories(self):
        return sorted({m.category for m in self.mismatches})

    def primary(self, category=None):
        ms = [m for m in self.mismatches if category is None or m.category == category]
        if not ms:
            return None
        return min(ms, key=lambda m: (m.stmt if m.stmt is not None else 10**6))

    def report(self, limit=12):
        lines = [f"seed {self.program.seed!r}  config {self.config}"]
        lines.append("program:")
        lines += ["    " + l for l in self.program.text().split("\n")]
        lines.append("differences:")
        for m in self.mismatches[:limit]:
            lines.append("  - " + str(m))
        if len(self.mismatches) > limit:
            lines.append(f"  ... and {len(self.mismatches) - limit} more")
        return "\n".join(lines)


def check_program(program, config=None, trace=None, on_stmt=None):
    """Run `program` with NumPy and with numfuse (options: `config`, default
    the program's own) and compare."""
    nf = numfuse()
    cfg = resolve_config(program, config)
    if trace:
        trace(f"--- numpy ---")
    np_out = run_program(program, onp, trace=trace, on_stmt=on_stmt)
    if trace:
        trace(f"--- numfuse {cfg} ---")
    nf_out = run_program(program, nf, config=cfg, trace=trace,
                         on_stmt=None if on_stmt is None else (lambda i: on_stmt(1000 + i)))
    mismatches = compare(np_out, nf_out, program)
    if mismatches:
        safe = run_program(program, OVERLAP_SAFE_NUMPY)
        numpy_bugs = compare(np_out, safe, program, self_check=True)
        if numpy_bugs and not compare(safe, nf_out, program):
            if trace:
                trace("--- numfuse agrees with NumPy's overlap rule, NumPy does not ---")
            return Check(program, cfg, [], np_out, nf_out, numpy_bugs)
    return Check(program, cfg, mismatches, np_out, nf_out)

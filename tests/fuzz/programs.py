"""Seeded random NumPy programs for differential fuzzing of numfuse.

``generate(seed) -> Program`` is deterministic in ``seed``. A program is a
list of Python source statements that use ``np`` (the module under test:
numpy or numfuse) and ``onp`` (always real numpy). All inputs are built inside
the program from literal data or ``onp.random.default_rng(SEED)``, so the text
alone reproduces the program.

While generating, every statement is executed with real NumPy (``np = numpy``)
in a scratch namespace. That tells the generator the shapes, dtypes, values and
memory sharing of every variable, so it can pick valid operands and track, per
variable, how strictly a later comparison may treat it:

- ``red``: downstream of a reduction or scan (NumPy and numfuse may associate
  sums differently: compare with a relative tolerance and a magnitude-scaled
  absolute tolerance, and ignore the sign of zeros);
- ``transc``: downstream of a transcendental function (exp, sin, ...: a few
  ulp of difference are allowed);
- ``zero_d_ok``: numfuse may return a 0-d array where NumPy returns a scalar
  (numfuse's documented difference for reductions, and arithmetic on them);
- ``loose_sz``: the sign of a zero result is not determined by NumPy itself
  (e.g. ``fmax(0.0, -0.0)`` depends on NumPy's SIMD code path);
- ``lib``: ``'np'`` for values the module under test produced, ``'onp'`` /
  ``'onp_view'`` for plain NumPy arrays obtained through interop
  (``onp.array(x)`` / ``onp.asarray(x)``).

The generator never produces operations whose NumPy result is itself not
reproducible (float -> int casts of NaN/inf/out-of-range values, integer
``reciprocal``, comparisons/floor/argmax of values that carry a rounding
tolerance, products long enough to overflow in one association order but not
another).
"""

import ast
import math
import random
import types
import warnings
from dataclasses import asdict, dataclass, field

import numpy as onp

SINT = ["int8", "int16", "int32", "int64"]
UINT = ["uint8", "uint16", "uint32", "uint64"]
INTS = SINT + UINT
FLOATS = ["float32", "float64"]
ALL_DTYPES = ["bool"] + INTS + FLOATS

CLASSES = ("creation", "elementwise", "indexing", "element_access", "layout", "reduction", "pyscalar_range",
           "signed_zero", "alloc", "error_probe", "interop", "routine")

# statement classes drawn after the initial inputs (weights)
WEIGHTS = {
    "elementwise": 22,
    "indexing": 12,
    "element_access": 11,
    "layout": 12,
    "reduction": 13,
    "creation": 5,
    "pyscalar_range": 5,
    "signed_zero": 5,
    "alloc": 2,
    "error_probe": 8,
    "interop": 4,
    "routine": 10,
}

# results of these carry a few ulp of implementation-defined error
TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan", "arcsin",
                  "arccos", "arctan2", "hypot", "power", "exp2", "log2", "log10"}

MAX_STATEMENTS = 25
MAX_INPUT_SIZE = 2000       # elements of a generated input
MAX_RESULT_SIZE = 6000      # elements of a broadcast result
FLOAT_SPECIALS = "[-0.0, 0.0, float('nan'), float('inf'), float('-inf'), 1.5, -2.25, 3.0, -0.5]"
EXTENTS = [0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 40]

# np.outer(np.ones(10**6), np.ones(10**6)) needs 7.3 TiB: NumPy raises MemoryError
# at once unless the kernel overcommits blindly (vm.overcommit_memory = 1), where
# it would really try to compute it. There, use a variant larger than any
# address space instead.
try:
    with open("/proc/sys/vm/overcommit_memory") as _f:
        _OVERCOMMIT_BLIND = _f.read().strip() == "1"
except OSError:
    _OVERCOMMIT_BLIND = False
OUTER_PROBE = ("np.outer(np.ones(2**24, dtype=np.int8), np.ones(2**24, dtype=np.int8))" if _OVERCOMMIT_BLIND else
               "np.outer(np.ones(10**6), np.ones(10**6))")

# allocations that must fail at the call, cheaply, with NumPy's exception
HUGE_ALLOCS = [
    "np.zeros(10**15)",
    "np.zeros((2**32, 2**32))",
    "np.empty(2**62)",
    "np.ones(2**63)",
    "np.ones((10**10, 10**10))",
    OUTER_PROBE,
    "np.full((10**8, 10**8), 1.5)",
    "np.empty((2**31, 2**31, 4), dtype=np.int8)",
    "np.zeros(-1)",
    "np.ones((3, -2))",
    "np.arange(2**62)",
    "np.zeros(10**15, dtype=np.int8)",
    "np.empty_like(np.broadcast_to(onp.float64(1), (10**8, 10**8)))",
]


# ---------------------------------------------------------------------------
# program representation


@dataclass
class Stmt:
    src: str
    cls: str


@dataclass
class VarMeta:
    red: bool = False
    transc: bool = False
    zero_d_ok: bool = False
    loose_sz: bool = False
    lib: str = "np"
    cls: str = ""
    stmts: list = field(default_factory=list)
    inexact: bool = False   # rounded (division, sqrt, ...): generation avoids discontinuous ops on it
    narrow: bool = False    # carries float32 rounding (compared with float32 tolerances even if widened)
    noisy: bool = False     # a zero of undetermined sign went through a sign-sensitive op: values not compared
    scale: float = 0.0      # largest finite magnitude that flowed into the value (scales the absolute tolerance)

    def fuzzy(self):
        return self.red or self.transc or self.inexact


@dataclass
class Program:
    seed: object
    stmts: list
    meta: dict
    config: dict

    def text(self, numbered=True):
        lines = []
        for i, st in enumerate(self.stmts):
            src = st.src.split("\n")
            tag = f"  # [{i}] {st.cls}" if numbered else ""
            if len(src) == 1:
                lines.append(src[0] + tag)
            else:
                lines.append(tag.strip() if tag else "")
                lines.extend(src)
        return "\n".join(l for l in lines if l != "")

    def script(self, module="numfuse"):
        """A runnable reproducer: every statement in try/except, printing
        what it raised, then every variable."""
        out = [f"# numfuse fuzz program, seed {self.seed!r}, config {self.config!r}",
               "import numpy as onp", f"import {module} as np", "import warnings",
               "warnings.simplefilter('ignore')"]
        if module == "numfuse":
            for k, v in self.config.items():
                out.append(f"np.set_option({k!r}, {v!r})")
        for i, st in enumerate(self.stmts):
            out.append(f"try:  # [{i}] {st.cls}")
            out.extend("    " + l for l in st.src.split("\n"))
            out.append(f"except Exception as e:\n    print('[{i}] raised', type(e).__name__, e)")
        out.append("import types as _types")
        out.append("for _k, _v in sorted(globals().items()):")
        out.append("    if _k.startswith('_') or isinstance(_v, _types.ModuleType):")
        out.append("        continue")
        out.append("    try:")
        out.append("        print(_k, '=', repr(_v))")
        out.append("    except Exception as e:")
        out.append("        print(_k, ': reading it raised', type(e).__name__, e)")
        return "\n".join(out)

    def subset(self, keep, config=None):
        """The program with only statements `keep` (indices), metadata renumbered."""
        keep = sorted(keep)
        pos = {old: new for new, old in enumerate(keep)}
        meta = {}
        for n, m in self.meta.items():
            st = [pos[i] for i in m.stmts if i in pos]
            if st:
                meta[n] = VarMeta(**dict(asdict(m), stmts=st))
        return Program(self.seed, [self.stmts[i] for i in keep], meta,
                       dict(self.config if config is None else config))

    def to_dict(self):
        return {"seed": self.seed, "stmts": [[s.src, s.cls] for s in self.stmts],
                "meta": {k: asdict(m) for k, m in self.meta.items()}, "config": dict(self.config)}

    @classmethod
    def from_dict(cls, d):
        return cls(seed=d.get("seed"), stmts=[Stmt(s, c) for s, c in d["stmts"]],
                   meta={k: VarMeta(**m) for k, m in d.get("meta", {}).items()}, config=dict(d.get("config", {})))

    @classmethod
    def from_sources(cls, sources, seed="custom", config=None, cls_name="custom"):
        """A hand-written program (statements as strings or (src, class) pairs)."""
        stmts = [Stmt(s, cls_name) if isinstance(s, str) else Stmt(*s) for s in sources]
        return cls(seed=seed, stmts=stmts, meta={}, config=dict(config or {}))


# ---------------------------------------------------------------------------
# numfuse options, chosen from the seed


def choose_config(seed):
    """numfuse options for program `seed` (deterministic): mostly the default
    configuration, with fusion off, tiny windows, memoization off and random
    schedules (which force compiles: ~15%), every chain of groups a
    multi-stage kernel (~30%) and -O3 compiles at once (~30%) mixed in; the tier decides where
    the (small) operations run: recorded and compiled (lazy, ~45%), at once
    by tier 0 (eager, ~20%), or numfuse's default mix of both (auto)."""
    r = random.Random(f"numfuse-fuzz-config/{seed}")
    cfg = {"fusion": r.random() < 0.75}
    x = r.random()
    cfg["max_window"] = 512 if x < 0.65 else r.choice([1, 2, 3, 4])
    cfg["memo"] = r.random() < 0.8
    cfg["random_schedules"] = r.randrange(1, 2**31) if r.random() < 0.15 else None
    x = r.random()
    cfg["tier"] = "lazy" if x < 0.45 else "eager" if x < 0.65 else "auto"
    # Multi-stage kernels (fusion.h, Chain) form only where they keep 256 KiB
    # out of memory, which these small programs never do: in ~30% of them
    # every chain of groups is one (drawn last: the draws above stay those
    # of earlier campaigns).
    if r.random() < 0.3:
        cfg["stage_min_bytes"] = 0
    # Kernels compile quickly first and at -O3 once they have run 2 ms, which
    # these programs never do: in ~30% of them every kernel is compiled at
    # -O3 at once (LLVM's full pipeline, exact division by loop invariants).
    if r.random() < 0.3:
        cfg["quick_compile"] = False
    return cfg


# ---------------------------------------------------------------------------
# static analysis of one statement


def _base_name(node):
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


WRITE_METHODS = {"fill", "sort", "put", "itemset", "resize", "partition", "setfield", "byteswap"}


def _analyze(tree):
    """(names read, names written in place, names bound, names augmented)."""
    loads, writes, binds, aug = set(), set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.add(node.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        binds.add(sub.id)
                if isinstance(t, (ast.Subscript, ast.Attribute)):
                    b = _base_name(t)
                    if b:
                        writes.add(b)
                if isinstance(node, ast.AugAssign):
                    b = _base_name(t)
                    if b:
                        writes.add(b)
                        loads.add(b)
                        if isinstance(t, ast.Name):
                            aug.add(b)
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "out":
                    for sub in ast.walk(kw.value):
                        if isinstance(sub, ast.Name):
                            writes.add(sub.id)
            if isinstance(node.func, ast.Attribute) and node.func.attr in WRITE_METHODS:
                b = _base_name(node.func.value)
                if b:
                    writes.add(b)
            if isinstance(node.func, ast.Attribute) and node.func.attr == "copyto" and node.args:
                b = _base_name(node.args[0])
                if b:
                    writes.add(b)
    return loads, writes, binds, aug


def _same_bytes(a, b):
    try:
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    except Exception:
        return True


def _shares(x, t):
    if isinstance(x, onp.ndarray) and isinstance(t, onp.ndarray):
        try:
            return onp.may_share_memory(x, t)
        except Exception:
            return False
    if isinstance(x, (list, tuple)):
        return any(_shares(e, t) for e in x[:64])
    return False


ARITH_CLASSES = {"elementwise", "signed_zero", "pyscalar_range", "reduction"}
# Functions whose value depends on the sign of a zero operand (arctan2(+-0, -1)
# is +-pi, 1/+-0 is +-inf).
SIGN_SENSITIVE_TOKENS = ("arctan2", "copysign", "/", "divide", "reciprocal", "**", "power", "signbit", "%", ".view(",
                         "remainder", "fmod", "floor_divide", "angle")
# Functions with a singularity or a branch cut: an ulp of difference in an
# operand that came from a transcendental (tanh(x) = -1 or -1 + eps) can
# change the result arbitrarily (log1p: -inf or -16.6).
SINGULAR_TOKENS = ("log", "arctanh", "arccosh", "arcsin", "arccos", "reciprocal", "/", "divide", "**", "power",
                   "tan(", "arctan2", "%", "remainder", "fmod")
INEXACT_TOKENS = ("/", "divide", "reciprocal", "sqrt", "**", "power", "hypot", "arctan", "exp", "log", "sin", "cos",
                  "tan", "mean", "std", "var", "linspace", "nextafter")


def _cast_defined(x, dtype, margin=0):
    """Whether assigning float array x (plus up to `margin`) into an integer
    array of `dtype` is defined (C leaves out-of-range conversions undefined,
    and NumPy's result then depends on the CPU)."""
    dtype = onp.dtype(dtype)
    if dtype.kind not in "iu" or x.dtype.kind != "f" or x.size == 0:
        return True
    if not onp.all(onp.isfinite(x)):
        return False
    info = onp.iinfo(dtype)
    return bool(x.min() - margin > info.min - 1 and x.max() + margin < info.max + 1)


def _magnitude(v):
    """The largest finite |value| of a float array or scalar (0 otherwise)."""
    if not isinstance(v, (onp.ndarray, onp.generic)) or v.dtype.kind != "f" or onp.size(v) == 0:
        return 0.0
    a = onp.abs(onp.asarray(v, dtype=onp.float64))
    a = a[onp.isfinite(a)]
    return float(a.max()) if a.size else 0.0


class _Gen:
    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self.ns = {"np": onp, "onp": onp}
        self.stmts = []
        self.meta = {}
        self.counter = 0
        self.pending = []  # [due, fn]

    # -- emitting --------------------------------------------------------

    def name(self, prefix="v"):
        n = f"{prefix}{self.counter}"
        self.counter += 1
        return n

    def emit(self, src, cls, red=False, transc=False, zero_d=False, loose_sz=False, lib="np"):
        """Append a statement and run it with NumPy; returns the exception it raised (or None)."""
        tree = ast.parse(src)
        loads, writes, binds, aug = _analyze(tree)
        ns = self.ns
        pre = {n: (v, v.copy()) for n, v in ns.items()
               if isinstance(v, onp.ndarray) and not n.startswith("_") and v.size <= 100000}
        lists = {n: v for n, v in ns.items() if isinstance(v, list) and not n.startswith("_")}
        before = {n: id(v) for n, v in ns.items()}
        err = None
        with warnings.catch_warnings(), onp.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                exec(compile(tree, "<fuzz-gen>", "exec"), ns)
            except Exception as e:  # noqa: BLE001 - the program decides
                err = e
        idx = len(self.stmts)
        self.stmts.append(Stmt(src, cls))
        ins = [self.meta[n] for n in loads if n in self.meta]
        # results that may carry rounding another correct implementation rounds differently
        # (e.g. a*b+c contracted to an FMA): never fed to comparisons, floor, int casts...
        t_inexact = (red or transc or any(m.inexact for m in ins) or any(t in src for t in INEXACT_TOKENS)
                     or ("*" in src and "float32" in src))
        t_red = red or any(m.red for m in ins)
        t_tr = transc or any(m.transc for m in ins)
        t_lsz = loose_sz or any(m.loose_sz for m in ins)
        t_narrow = any(m.narrow for m in ins)
        t_noisy = any(m.noisy for m in ins) or (any(m.loose_sz for m in ins) and
                                                any(t in src for t in SIGN_SENSITIVE_TOKENS)) or (
            any(m.transc for m in ins) and any(t in src for t in SINGULAR_TOKENS))
        zd = zero_d or (cls in ARITH_CLASSES and any(m.zero_d_ok for m in ins))
        defined = set()
        for n in set(binds) | {n for n in ns if n not in before or id(ns[n]) != before[n]}:
            if n.startswith("_") or n not in ns or isinstance(ns[n], types.ModuleType) or n in ("np", "onp"):
                continue
            if n in aug and n in self.meta and isinstance(ns[n], onp.ndarray) and id(ns[n]) == before.get(n):
                continue  # an in-place update of an array: handled as a write below
            v = ns[n]
            vlib = lib
            if lib == "np" and (any(m.lib == "foreign" for m in ins) or (
                    isinstance(v, (onp.ndarray, onp.generic)) and v.dtype.name not in ALL_DTYPES)):
                # a dtype numfuse does not hold (float16, complex): it is NumPy's
                # array there, and operations on it stay NumPy's
                vlib = "foreign"
            self.meta[n] = VarMeta(red=t_red, transc=t_tr, zero_d_ok=zd, loose_sz=t_lsz, lib=vlib, cls=cls,
                                   stmts=[idx], inexact=t_inexact)
            if isinstance(v, (onp.ndarray, onp.generic)) and v.dtype == onp.float32 and "*" in src:
                self.meta[n].inexact = True
            if isinstance(v, (onp.ndarray, onp.generic)) and v.dtype.kind == "f" and v.dtype.itemsize < 8 and \
                    (t_inexact or t_red or t_tr):
                t_narrow = True
            self.meta[n].narrow = t_narrow
            self.meta[n].noisy = t_noisy
            self.meta[n].scale = max([m.scale for m in ins] + [_magnitude(v)])
            if cls != "element_access" and isinstance(v, onp.generic) and "item(" not in src:
                # NumPy returns a scalar from a reduction or a ufunc of 0-d
                # operands; numfuse a 0-d array (its documented difference).
                # Element access (a[i], iteration, .item()) must give scalars.
                self.meta[n].zero_d_ok = True
            defined.add(n)
        targets = [ns[w] for w in writes if w in ns and isinstance(ns[w], onp.ndarray)]
        touched = set()
        for n, (obj, cp) in pre.items():
            if n in defined or ns.get(n) is not obj:
                continue
            if not _same_bytes(obj, cp) or any(_shares(obj, t) for t in targets) or n in writes:
                touched.add(n)
        for n, lst in lists.items():
            if n not in defined and ns.get(n) is lst and any(_shares(lst, t) for t in targets):
                touched.add(n)
        for n in touched:
            m = self.meta.get(n)
            if m is None:
                continue
            m.red |= t_red
            m.transc |= t_tr
            m.inexact |= t_inexact
            m.loose_sz |= t_lsz
            m.narrow |= t_narrow
            m.noisy |= t_noisy
            v = ns.get(n)
            if isinstance(v, onp.ndarray) and v.dtype.kind in "biu" and (t_tr or t_red or t_inexact):
                # float results (a few ulp apart between correct implementations)
                # written through a view of another type: their bits are
                # compared exactly as integers, so the values are not comparable
                m.noisy = True
            m.scale = max([m.scale] + [x.scale for x in ins] + [_magnitude(ns.get(n))])
            if idx not in m.stmts:
                m.stmts.append(idx)
        return err

    def later(self, fn, delay=None):
        if delay is None:
            delay = self.rng.randint(1, 4)
        self.pending.append([len(self.stmts) + delay, fn])

    # -- variables ---------------------------------------------------------

    def arrays(self, pred=None, lib="np", writeable=False):
        out = []
        for n, m in self.meta.items():
            v = self.ns.get(n)
            if (isinstance(v, onp.ndarray) and m.lib == lib and v.dtype.kind in "biuf" and v.size <= MAX_RESULT_SIZE
                    and (not writeable or v.flags.writeable) and (pred is None or pred(v))):
                out.append(n)
        return out

    def fuzzy(self, n):
        """n carries a tolerance (so discontinuous operations on it are not reproducible)."""
        m = self.meta.get(n)
        if m is None or not m.fuzzy():
            return False
        v = self.ns.get(n)
        if isinstance(v, (onp.ndarray, onp.generic)):
            return v.dtype.kind in "fc"
        return isinstance(v, (float, complex, list))

    def pick(self, pred=None, writeable=False, make=None, fresh=0.12, exact=False):
        cands = self.arrays(pred, writeable=writeable)
        if exact:
            cands = [c for c in cands if not self.fuzzy(c)]
        if not cands or self.rng.random() < fresh:
            n = (make or self.new_input)()
            if n is not None and n in self.ns and isinstance(self.ns[n], onp.ndarray) and (
                    pred is None or pred(self.ns[n])):
                return n
            cands = self.arrays(pred, writeable=writeable)
            if exact:
                cands = [c for c in cands if not self.fuzzy(c)]
            if not cands:
                return None
        return self.rng.choice(sorted(cands))

    # -- inputs ------------------------------------------------------------

    def rand_shape(self, ndim=None, nonempty=False, max_size=MAX_INPUT_SIZE):
        r = self.rng
        if ndim is None:
            ndim = r.choices([0, 1, 2, 3], [8, 35, 37, 20])[0]
        for _ in range(50):
            shape = tuple(r.choice(EXTENTS) for _ in range(ndim))
            size = math.prod(shape)
            if size <= max_size and (not nonempty or size > 0):
                return shape
        return tuple([2] * ndim)

    def data_expr(self, shape, dt, special=None):
        r = self.rng
        s = r.randrange(10**6)
        R = f"onp.random.default_rng({s})"
        if dt == "bool":
            return f"{R}.integers(0, 2, size={shape!r}).astype('bool')"
        if dt in INTS:
            mode = r.choices(["small", "full", "arange"], [70, 20, 10])[0]
            if mode == "full":
                info = onp.iinfo(dt)
                return f"{R}.integers({info.min}, {info.max}, size={shape!r}, dtype='{dt}', endpoint=True)"
            if mode == "arange":
                return f"(onp.arange({math.prod(shape)}) % {r.choice([7, 50, 100])}).astype('{dt}').reshape({shape!r})"
            if dt in UINT:
                return f"{R}.integers(0, 20, size={shape!r}).astype('{dt}')"
            return f"{R}.integers(-9, 10, size={shape!r}).astype('{dt}')"
        if special is None:
            special = r.random() < 0.15
        if special:
            return f"onp.array({FLOAT_SPECIALS})[{R}.integers(0, 9, size={shape!r})].astype('{dt}')"
        if r.random() < 0.1:
            n = math.prod(shape)
            return f"(onp.arange({n}, dtype='{dt}') / 4 - {n // 8}).reshape({shape!r})"
        return f"({R}.integers(-64, 65, size={shape!r}) / 4).astype('{dt}')"

    def new_input(self, dtype=None, shape=None, ndim=None, special=None, order=None, nonempty=False, name=None):
        r = self.rng
        if dtype is None:
            dtype = r.choices(ALL_DTYPES, [6, 5, 4, 5, 8, 5, 4, 4, 5, 10, 16])[0]
        if shape is None:
            shape = self.rand_shape(ndim, nonempty=nonempty)
        expr = self.data_expr(shape, dtype, special)
        if order is None:
            order = r.choices(["C", "F", "asarray", "fortran"], [65, 12, 13, 10])[0]
        if order == "F":
            src = f"np.array({expr}, order='F')"
        elif order == "fortran":
            src = f"np.asfortranarray({expr})"
        elif order == "asarray":
            src = f"np.asarray({expr})"
        else:
            src = f"np.array({expr})"
        n = name or self.name()
        self.emit(f"{n} = {src}", "creation")
        return n

    # -- operands ----------------------------------------------------------

    PY_INTS = [0, 1, 2, 3, 5, 7, -1, -2, -3, 9]
    PY_FLOATS = [0.5, -1.25, 2.0, 3.0, -0.75, 0.0, -0.0, 1.5, 1e-3, 100.0]
    NP_SCALARS = ["onp.float32(2)", "onp.int8(3)", "onp.uint8(7)", "onp.int64(-5)", "onp.float64(0.5)",
                  "onp.uint64(3)", "onp.bool_(True)", "onp.int16(-2)", "onp.float32(-1.5)", "onp.uint16(300)",
                  "onp.int32(4)"]

    def scalar_for(self, dt, weak=True):
        r = self.rng
        if not weak:
            return r.choice(self.NP_SCALARS)
        kind = onp.dtype(dt).kind
        x = r.random()
        if kind == "b":
            return r.choice(["True", "False", "1", "2", "0.5"]) if x < 0.3 else r.choice(["True", "False"])
        if kind == "u":
            if x < 0.1:
                return r.choice(["0.5", "2.0", "True", "-1"])
            return str(r.choice([0, 1, 2, 3, 5, 7, 9]))
        if kind == "i":
            if x < 0.1:
                return r.choice(["0.5", "-2.0", "True"])
            return str(r.choice(self.PY_INTS))
        return repr(r.choice(self.PY_FLOATS)) if x < 0.8 else str(r.choice(self.PY_INTS))

    def operand(self, a, exact=False, allow_scalar=True):
        """An operand to combine with array `a`: (source, is_fuzzy)."""
        r = self.rng
        A = self.ns[a]
        opts = ["self", "view", "var", "var", "var", "pyscalar", "pyscalar", "npscalar", "zerod"]
        if not allow_scalar:
            opts = ["self", "view", "var", "var"]
        for _ in range(8):
            o = r.choice(opts)
            if o == "self":
                return a, self.fuzzy(a)
            if o == "view" and A.ndim >= 1:
                views = [f"{a}[::-1]"]
                if A.ndim >= 2:
                    views.append(f"{a}[:, ::-1]")
                    if A.shape[0] == A.shape[1]:
                        views.append(f"{a}.swapaxes(0, 1)" if A.ndim == 3 else f"{a}.T")
                if A.ndim == 1 or all(s == A.shape[0] for s in A.shape):
                    views.append(f"{a}.T")
                return r.choice(views), self.fuzzy(a)
            if o == "var":
                cands = []
                for n in self.arrays():
                    if n == a or (exact and self.fuzzy(n)):
                        continue
                    try:
                        bs = onp.broadcast_shapes(A.shape, self.ns[n].shape)
                    except ValueError:
                        continue
                    if math.prod(bs) <= MAX_RESULT_SIZE:
                        cands.append(n)
                if cands:
                    n = r.choice(sorted(cands))
                    return n, self.fuzzy(n)
                if r.random() < 0.5 and A.ndim >= 1:
                    # make a partner of a broadcast-compatible shape
                    shp = list(A.shape)
                    k = r.randrange(A.ndim)
                    shp[k] = 1
                    if r.random() < 0.4:
                        shp = shp[k:]
                    n = self.new_input(shape=tuple(shp))
                    return n, False
            if o == "pyscalar":
                return self.scalar_for(A.dtype), False
            if o == "npscalar":
                return self.scalar_for(A.dtype, weak=False), False
            if o == "zerod":
                cands = [n for n, m in self.meta.items()
                         if isinstance(self.ns.get(n), (onp.generic, onp.ndarray)) and onp.ndim(self.ns[n]) == 0
                         and m.lib == "np" and onp.asarray(self.ns[n]).dtype.kind in "biuf"
                         and not (exact and self.fuzzy(n))]
                if cands:
                    n = r.choice(sorted(cands))
                    return n, self.fuzzy(n)
        return self.scalar_for(A.dtype), False

    # -- index expressions -------------------------------------------------

    def rand_slice(self, n):
        r = self.rng
        step = r.choice([None, None, 1, 2, 3, -1, -1, -2, -3])
        lo = r.choice([None, None, r.randint(-n - 2, n + 2), r.randint(0, max(n, 0))])
        hi = r.choice([None, None, r.randint(-n - 2, n + 2), r.randint(0, max(n, 0))])
        s = f"{'' if lo is None else lo}:{'' if hi is None else hi}"
        if step is not None:
            s += f":{step}"
        return s

    def rand_index(self, shape, ints=True, newaxis=True, ellipsis=True):
        r = self.rng
        parts = []
        for n in shape:
            x = r.random()
            if ints and n > 0 and x < 0.15:
                parts.append(str(r.randrange(-n, n)))
            elif x < 0.35:
                parts.append(":")
            else:
                parts.append(self.rand_slice(n))
        if parts and r.random() < 0.2:
            parts = parts[:r.randrange(len(parts))]
        if ellipsis and r.random() < 0.15:
            parts.insert(r.randint(0, len(parts)), "...")
        if newaxis and r.random() < 0.15:
            parts.insert(r.randint(0, len(parts)), "None")
        if not parts:
            return "..."
        return ", ".join(parts)

    def full_index(self, shape):
        return ", ".join(str(self.rng.randrange(-n, n)) if n > 0 else "0" for n in shape)

    def value_for(self, dt):
        """A Python scalar that fits dtype dt (an ordinary write)."""
        kind = onp.dtype(dt).kind
        r = self.rng
        if kind == "b":
            return r.choice(["True", "False"])
        if kind == "u":
            return str(r.choice([0, 1, 7, 9, 100]))
        if kind == "i":
            return str(r.choice([0, -1, 7, -9, 100]))
        return r.choice(["0.0", "-0.0", "7.5", "-3.25", "100.0", "float('nan')", "1e300"])

    # -- statement classes -------------------------------------------------

    UNARY = ["sqrt", "exp", "log", "sin", "cos", "tanh", "abs", "negative", "sign", "floor", "ceil", "square",
             "isnan", "isfinite", "isinf", "logical_not", "invert", "positive", "reciprocal", "log1p", "expm1",
             "arctan", "rint"]
    DISCONTINUOUS_UNARY = {"sign", "floor", "ceil", "logical_not", "rint", "invert"}
    ARITH_OPS = ["+", "-", "*", "/", "//", "%", "**"]
    CMP_OPS = ["<", "<=", ">", ">=", "==", "!="]
    BIT_OPS = ["&", "|", "^", "<<", ">>"]
    DISCONTINUOUS_OPS = {"//", "%", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^", "<<", ">>"}
    UFUNC2 = {"+": "add", "-": "subtract", "*": "multiply", "/": "true_divide", "//": "floor_divide",
              "%": "remainder", "**": "power", "<": "less", "<=": "less_equal", ">": "greater",
              ">=": "greater_equal", "==": "equal", "!=": "not_equal", "&": "bitwise_and", "|": "bitwise_or",
              "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift"}

    def binop_for(self, A, fuzzy):
        r = self.rng
        kind = A.dtype.kind
        if kind == "f":
            ops = self.ARITH_OPS * 3 + self.CMP_OPS + ["&"] * (r.random() < 0.05)
        elif kind == "b":
            ops = ["+", "*", "&", "|", "^", "==", "!=", "<", "/", "//"] + ["-"] * (r.random() < 0.1)
        else:
            ops = self.ARITH_OPS * 2 + self.CMP_OPS + self.BIT_OPS
        if fuzzy:
            ops = [o for o in ops if o not in self.DISCONTINUOUS_OPS] or ["+"]
        return r.choice(ops)

    def exponent_for(self, dt, a_fuzzy):
        r = self.rng
        if onp.dtype(dt).kind in "iub":
            return r.choice(["2", "3", "0", "1", "2", "onp.int8(2)"] + ["-1"] * (r.random() < 0.15))
        return r.choice(["2", "3", "0.5", "2.0", "-1", "1.5", "onp.float32(2)"])

    def g_elementwise(self):
        r = self.rng
        form = r.choices(["binop", "ufunc2", "unary", "inplace", "out", "overlap", "where", "clip", "minmax"],
                         [26, 10, 16, 12, 8, 12, 6, 5, 5])[0]
        if form in ("inplace", "overlap", "out"):
            a = self.pick(lambda v: v.ndim >= 1 if form == "overlap" else True, writeable=True)
        else:
            a = self.pick()
        if a is None:
            return
        A = self.ns[a]
        out = self.name()
        fa = self.fuzzy(a)
        if form == "binop":
            op = self.binop_for(A, fa)
            if op == "**":
                b, fb = self.exponent_for(A.dtype, fa), False
            else:
                b, fb = self.operand(a, exact=op in self.DISCONTINUOUS_OPS)
            if fb and op in self.DISCONTINUOUS_OPS:
                op = "+"
            tr = op == "**" and A.dtype.kind == "f"
            if r.random() < 0.2 and not b.startswith(a):
                lhs = f"({b})" if b.startswith("-") else b
                self.emit(f"{out} = {lhs} {op} {a}", "elementwise", transc=tr)
            elif r.random() < 0.15 and A.ndim >= 2:
                # transposed operand mixed with a C-ordered one
                self.emit(f"{out} = {a}.T {op} {a}.T", "elementwise", transc=tr)
            else:
                self.emit(f"{out} = {a} {op} {b}", "elementwise", transc=tr)
        elif form == "ufunc2":
            fn = r.choice(["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "arctan2",
                           "hypot", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                           "left_shift", "power", "fmod", "copysign", "nextafter"] if not fa else
                          ["add", "subtract", "multiply", "true_divide", "arctan2", "hypot"])
            exact = fn not in ("add", "subtract", "multiply", "true_divide", "arctan2", "hypot")
            b, fb = self.operand(a, exact=exact)
            if fn == "power":
                b = self.exponent_for(A.dtype, fa)
            self.emit(f"{out} = np.{fn}({a}, {b})", "elementwise", transc=fn in TRANSCENDENTAL)
        elif form == "unary":
            fns = [f for f in self.UNARY if not (fa and f in self.DISCONTINUOUS_UNARY)]
            if A.dtype.kind in "iu":
                fns = [f for f in fns if f != "reciprocal"]
            fn = r.choice(fns)
            style = r.random()
            if fn == "abs" and style < 0.4:
                src = f"abs({a})"
            elif fn == "negative" and style < 0.4:
                src = f"-{a}"
            elif fn == "invert" and style < 0.4:
                src = f"~{a}"
            else:
                src = f"np.{fn}({a})"
            if r.random() < 0.15 and A.ndim >= 1:
                src = src.replace(a, f"{a}[::-1]", 1)
            self.emit(f"{out} = {src}", "elementwise", transc=fn in TRANSCENDENTAL)
        elif form == "inplace":
            ops = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="]
            if A.dtype.kind == "f":
                ops = ["+=", "-=", "*=", "/=", "*=", "+="] + (["//=", "%="] if not fa else []) + ["**="] * (
                    r.random() < 0.2)
            elif A.dtype.kind == "b":
                ops = ["&=", "|=", "^=", "+=", "*=", "-="]
            op = r.choice(ops)
            if op == "**=":
                b, fb = self.exponent_for(A.dtype, fa), False
            else:
                b, fb = self.operand(a, exact=op[:-1] in self.DISCONTINUOUS_OPS)
            self.emit(f"{a} {op} {b}", "elementwise", transc=op == "**=" and A.dtype.kind == "f")
        elif form == "out":
            fn = r.choice(["add", "multiply", "subtract", "maximum", "minimum", "negative", "sqrt", "abs", "sin"])
            unary = fn in ("negative", "sqrt", "abs", "sin")
            tgt = r.choice([a, a] + ([f"{a}[::-1]"] if A.ndim >= 1 else []) +
                           ([f"{a}.T"] if A.ndim == 2 and A.shape[0] == A.shape[1] else []))
            if unary:
                src = f"np.{fn}({a}, out={tgt})"
            else:
                b, _ = self.operand(a)
                src = f"np.{fn}({a}, {b}, out={tgt})"
            if r.random() < 0.3:
                src = f"{out} = " + src
            self.emit(src, "elementwise", transc=fn == "sin", loose_sz=False)
        elif form == "overlap":
            n = A.shape[0]
            k = r.randint(1, max(1, min(3, n)))
            op = r.choice(["+=", "-=", "*="] if A.dtype.kind != "b" else ["|=", "&=", "^="])
            choices = [f"{a}[{k}:] {op} {a}[:-{k}]", f"{a}[:-{k}] {op} {a}[{k}:]", f"{a}[::-1] {op} {a}",
                       f"{a}[{k}:] = {a}[:-{k}]", f"{a}[:-{k}] = {a}[{k}:]", f"{a}[...] = {a}[::-1]",
                       f"np.add({a}[:-{k}], {a}[{k}:], out={a}[{k}:])" if A.dtype.kind != "b" else
                       f"np.logical_or({a}[:-{k}], {a}[{k}:], out={a}[{k}:])"]
            if A.ndim >= 2:
                choices += [f"{a}[:, {k}:] {op} {a}[:, :-{k}]", f"{a}[1:, ::-1] {op} {a}[:-1]"]
                if A.shape[0] == A.shape[1] and A.ndim == 2:
                    choices += [f"{a} {op} {a}.T", f"{a}[...] = {a}.T", f"{a}.T[...] = {a} + 1"]
            self.emit(r.choice(choices), "elementwise")
        elif form == "where":
            c = self.condition(a)
            x, fx = self.operand(a)
            y, fy = self.operand(a)
            self.emit(f"{out} = np.where({c}, {x}, {y})", "elementwise")
        elif form == "clip":
            lo = r.choice(["-1", "0", "2", "None", "0.5", "-2.5", "onp.float32(1)", "onp.int8(-3)"])
            hi = r.choice(["3", "5", "None", "2.5", "7", "onp.int16(4)"])
            if lo == "None" and hi == "None":
                hi = "4"
            if r.random() < 0.25:
                b, fb = self.operand(a, allow_scalar=False)
                lo = b
            self.emit(f"{out} = " + (f"np.clip({a}, {lo}, {hi})" if r.random() < 0.7 else f"{a}.clip({lo}, {hi})"),
                      "elementwise")
        else:  # minmax
            fn = r.choice(["maximum", "minimum", "fmax", "fmin"])
            b, _ = self.operand(a)
            self.emit(f"{out} = np.{fn}({a}, {b})", "elementwise", loose_sz=fn in ("fmax", "fmin") or not SZ_STRICT[fn])

    def condition(self, a):
        """A boolean array expression of a's shape (never on values with a tolerance)."""
        r = self.rng
        A = self.ns[a]
        if A.dtype.kind == "b" and r.random() < 0.5:
            return a
        if self.fuzzy(a):
            return f"np.isnan({a})" if r.random() < 0.5 else f"np.ones({A.shape!r}, dtype=bool)"
        op = r.choice(self.CMP_OPS)
        return f"{a} {op} {self.scalar_for(A.dtype)}"

    def g_indexing(self):
        r = self.rng
        a = self.pick(lambda v: v.ndim >= 1, writeable=True)
        if a is None:
            return
        A = self.ns[a]
        form = r.choices(["read", "read_expr", "write_scalar", "write_array", "view_write", "aug"],
                         [25, 10, 20, 20, 15, 10])[0]
        idx = self.rand_index(A.shape)
        out = self.name()
        if form == "read":
            self.emit(f"{out} = {a}[{idx}]", "indexing")
        elif form == "read_expr":
            self.emit(f"{out} = {a}[{idx}] * 2 + 1" if A.dtype.kind != "b" else f"{out} = ~{a}[{idx}]", "indexing")
        elif form == "write_scalar":
            self.emit(f"{a}[{idx}] = {self.value_for(A.dtype)}", "indexing")
        elif form == "write_array":
            try:
                tshape = A[eval(f"onp.s_[{idx}]")].shape
            except Exception:
                tshape = None
            srcs = []
            if tshape is not None:
                if len(tshape) >= 1:
                    srcs.append(f"{a}[{idx}][::-1]")
                if len(tshape) == 2 and tshape[0] == tshape[1]:
                    srcs.append(f"{a}[{idx}].T")
                for n in self.arrays():
                    s = self.ns[n].shape
                    try:
                        if (onp.broadcast_shapes(s, tshape) == tshape and _cast_defined(self.ns[n], A.dtype, 1)
                                and not (A.dtype.kind in "biu" and self.fuzzy(n))):
                            srcs.append(n)
                    except ValueError:
                        pass
            src = r.choice(sorted(srcs)) if srcs else self.value_for(A.dtype)
            if r.random() < 0.2 and srcs:
                src = f"{src} + 1" if A.dtype.kind != "b" else f"~{src}"
            self.emit(f"{a}[{idx}] = {src}", "indexing")
        elif form == "view_write":
            self.emit(f"{out} = {a}[{idx}]", "indexing")
            V = self.ns.get(out)
            if isinstance(V, onp.ndarray):
                w = r.choice([f"{out}[...] = {self.value_for(A.dtype)}", f"{out} *= 2" if A.dtype.kind != "b" else
                              f"{out} ^= True", f"{out}[::-1] = {out}" if V.ndim >= 1 else f"{out}[...] = {out}"])
                if r.random() < 0.5:
                    self.emit(w, "indexing")
                else:
                    self.later(lambda w=w: self.emit(w, "indexing"))
                if r.random() < 0.5:
                    self.later(lambda: self.emit(f"{self.name()} = {a} + {a}", "indexing"))
        else:
            op = r.choice(["+=", "-=", "*="]) if A.dtype.kind != "b" else r.choice(["|=", "&="])
            b, _ = self.operand(a)
            self.emit(f"{a}[{idx}] {op} {b if r.random() < 0.3 else self.value_for(A.dtype).replace('-', '')}",
                      "indexing")

    def later_write(self, a):
        """A write to array `a`, scheduled a few statements later."""
        A = self.ns[a]
        r = self.rng
        b = A.dtype.kind == "b"
        opts = [f"{a}[...] = 0" if not b else f"{a}[...] = False", f"{a} += 1" if not b else f"{a} ^= True",
                f"{a}.fill({self.value_for(A.dtype)})", f"{a} *= 3" if not b else f"{a} |= True"]
        if A.ndim >= 1 and A.shape[0] > 0:
            opts += [f"{a}[{r.randrange(A.shape[0])}] = {self.value_for(A.dtype)}",
                     f"{a}[{r.randrange(A.shape[0])}][...] = {'5' if not b else 'True'}"]
        w = r.choice(opts)
        self.later(lambda: self.emit(w, "element_access"))

    def g_element_access(self):
        r = self.rng
        a = self.pick(lambda v: v.ndim >= 1, writeable=True, exact=True)
        if a is None:
            return
        A = self.ns[a]
        s = self.name("s")
        forms = ["index0", "full", "full", "nested", "list", "loop", "loopexpr", "item", "tolist", "pyconv", "meta",
                 "probe", "argidx", "ellipsis", "store"]
        form = r.choice(forms)
        n0 = A.shape[0]
        i0 = r.randrange(-n0, n0) if n0 else 0
        if form == "index0":
            self.emit(f"{s} = {a}[{i0}]", "element_access")
        elif form == "full":
            self.emit(f"{s} = {a}[{self.full_index(A.shape)}]", "element_access")
        elif form == "nested":
            idx = self.full_index(A.shape).split(", ")
            self.emit(f"{s} = {a}" + "".join(f"[{i}]" for i in idx), "element_access")
        elif form == "list":
            s = self.name("items")
            self.emit(f"{s} = list({a})", "element_access")
        elif form == "loop":
            s = self.name("items")
            body = r.choice(["{s}.append(_x)", "{s}.append(_x + 1)" if A.dtype.kind != "b" else "{s}.append(~_x)",
                             "{s}.append(_x.copy())"])
            self.emit(f"{s} = []\nfor _x in {a}:\n    " + body.format(s=s), "element_access")
        elif form == "loopexpr":
            s = self.name("items")
            self.emit(f"{s} = [_x for _x in {a}[::-1]]" if r.random() < 0.5 else f"{s} = [_x * 2 for _x in {a}]",
                      "element_access")
        elif form == "item":
            if A.size == 1 and r.random() < 0.5:
                self.emit(f"{s} = {a}.item()", "element_access")
            elif r.random() < 0.5:
                self.emit(f"{s} = {a}.item({r.randrange(-2, A.size + 1) if A.size else 0})", "element_access")
            else:
                self.emit(f"{s} = {a}.item({self.full_index(A.shape)})", "element_access")
        elif form == "tolist":
            self.emit(f"{s} = {a}.tolist()", "element_access")
        elif form == "pyconv":
            conv = r.choice(["float", "int", "bool", "complex"])
            self.emit(f"{s} = {conv}({a}[{self.full_index(A.shape)}])", "element_access")
        elif form == "meta":
            attr = r.choice(["len({a})", "{a}.shape", "{a}.ndim", "{a}.size", "{a}.dtype", "{a}.nbytes",
                             "{a}.itemsize", "{a}.T.shape", "{a}[::2].shape"])
            self.emit(f"{s} = " + attr.format(a=a), "element_access")
        elif form == "probe":
            if A.ndim == 1 or r.random() < 0.5:
                self.emit(f"{a}[{i0}][...] = {'5' if A.dtype.kind != 'b' else 'True'}", "element_access")
            else:
                self.emit(f"{a}[{i0}][{self.full_index(A.shape[1:])}] = {self.value_for(A.dtype)}", "element_access")
            self.later(lambda: self.emit(f"{self.name('s')} = {a}.sum()", "reduction", red=True, zero_d=True), 1)
        elif form == "argidx":
            if A.ndim == 1 and A.size and A.dtype.kind != "b":
                self.emit(f"{s} = {a}[{a}.argmax()]", "element_access")
            else:
                self.emit(f"{s} = {a}[{i0}, ...]", "element_access")
        elif form == "store":  # one int per dimension (the C fast path), then a read of the element
            idx = self.full_index(A.shape)
            val = self.value_for(A.dtype) if A.dtype.kind != "f" or r.random() < 0.7 else str(r.choice([3, -2, 0]))
            self.emit(f"{a}[{idx}] = {val}\n{s} = {a}[{idx}]", "element_access")
        else:  # ellipsis: a full integer index plus ... gives a 0-d view in NumPy
            self.emit(f"{s} = {a}[{self.full_index(A.shape)}, ...]", "element_access")
        if r.random() < 0.8:
            self.later_write(a)

    def g_layout(self):
        r = self.rng
        form = r.choices(["relayout", "mixed", "concat", "ravel_write", "astype", "reshape", "like", "view_op"],
                         [22, 14, 10, 20, 10, 10, 8, 6])[0]
        out = self.name()
        if form == "relayout":
            a = self.pick(lambda v: v.ndim >= 2 or self.rng.random() < 0.3)
            if a is None:
                return
            A = self.ns[a]
            ch = [f"np.asfortranarray({a})", f"np.array({a}, order='F')", f"{a}.T", f"np.array({a}.T)",
                  f"np.ascontiguousarray({a}.T)", f"{a}.copy(order='K')", f"{a}.copy(order='F')",
                  f"{a}.copy(order='A')", f"{a}.T.copy(order='K')", f"np.copy({a}.T)", f"{a}.T.copy()",
                  f"np.array({a}[::-1], order='K')", f"np.asfortranarray({a}[::2])", f"{a}[::-1].copy(order='K')"]
            if A.ndim == 3:
                perm = list(range(3))
                r.shuffle(perm)
                ch += [f"np.transpose({a}, {tuple(perm)!r})", f"np.swapaxes({a}, 0, 2)",
                       f"np.transpose({a}, {tuple(perm)!r}).copy(order='K')"]
            if A.ndim >= 1:
                ch += [f"np.expand_dims({a}, {r.randint(0, A.ndim)})", f"{a}[:, None]" if A.ndim >= 1 else a,
                       f"np.broadcast_to({a}, (2,) + {a}.shape)"]
            self.emit(f"{out} = {r.choice(ch)}", "layout")
        elif form == "mixed":
            a = self.pick(lambda v: v.ndim >= 2)
            if a is None:
                return
            A = self.ns[a]
            tshape = A.T.shape
            partners = [n for n in self.arrays() if self.ns[n].shape == tshape and n != a]
            if partners and r.random() < 0.6:
                b = r.choice(sorted(partners))
            else:
                b = self.new_input(shape=tshape, order=r.choice(["C", "F"]))
            op = self.binop_for(A, self.fuzzy(a) or self.fuzzy(b))
            if op in ("**", "<<", ">>"):
                op = "+"
            if r.random() < 0.5:
                self.emit(f"{out} = {a}.T {op} {b}", "layout")
            else:
                self.emit(f"{out} = np.{r.choice(['add', 'multiply', 'maximum', 'subtract'])}({b}, {a}.T)", "layout")
        elif form == "concat":
            a = self.pick(lambda v: v.ndim >= 1)
            if a is None:
                return
            A = self.ns[a]
            ch = [f"np.concatenate([{a}.T, {a}.T])", f"np.concatenate([{a}, np.asfortranarray({a})])",
                  f"np.stack([{a}, {a}.T.T])", f"np.stack([{a}.T, np.asfortranarray({a}).T], axis=-1)",
                  f"np.concatenate([np.asfortranarray({a}), {a}[::-1]], axis={r.randrange(A.ndim)})",
                  f"np.stack([np.asfortranarray({a}), {a}], axis={r.randint(0, A.ndim)})"]
            same = [n for n in self.arrays() if self.ns[n].shape == A.shape and n != a and self.ns[n].dtype != A.dtype]
            if same:
                ch.append(f"np.concatenate([{a}, {r.choice(sorted(same))}])")
            self.emit(f"{out} = {r.choice(ch)}", "layout")
        elif form == "ravel_write":
            a = self.pick(lambda v: v.ndim >= 1 and v.size > 0, writeable=True)
            if a is None:
                return
            A = self.ns[a]
            rv = self.name("r")
            if r.random() < 0.35:
                # an operation first, then ravel its (layout-dependent) result
                fa = self.fuzzy(a)
                t = self.name()
                self.emit(f"{t} = {r.choice([f'{a} + 1', f'{a}.T * 2', f'np.sqrt(np.abs({a}))', f'{a}.T.copy()'])}"
                          if A.dtype.kind != "b" else f"{t} = ~{a}.T", "layout")
                a = t
                if not isinstance(self.ns.get(a), onp.ndarray) or self.ns[a].size == 0:
                    return
                A = self.ns[a]
            ch = [f"{a}.ravel()", f"{a}.reshape(-1)", f"np.ravel({a}, order='K')", f"{a}.T.ravel()",
                  f"{a}.T.reshape(-1)", f"np.ravel({a}, order='F')", f"np.ravel({a}, order='A')", f"{a}[::2].ravel()",
                  f"{a}[::-1].reshape(-1)", f"{a}.reshape({A.size})", f"np.reshape({a}, (-1,))"]
            if A.ndim >= 2:
                ch += [f"{a}.reshape({A.shape[0]}, -1)", f"{a}.reshape(-1, order='F')", f"{a}[:, ::2].ravel()"]
            self.emit(f"{rv} = {r.choice(ch)}", "layout")
            v = "True" if A.dtype.kind == "b" else "100"
            w = r.choice([f"{rv}[0] = {v}", f"{rv}[...] = {v}", f"{rv}[-1] = {v}",
                          f"{rv} += 1" if A.dtype.kind != "b" else f"{rv} ^= True"])
            if r.random() < 0.6:
                self.emit(w, "layout")
            else:
                self.later(lambda: self.emit(w, "layout"))
            if r.random() < 0.4:
                self.later(lambda: self.emit(f"{self.name()} = {a} * 1", "layout"))
        elif form == "astype":
            a = self.pick()
            if a is None:
                return
            A = self.ns[a]
            tgt = r.choice(ALL_DTYPES)
            if A.dtype.kind == "f" and onp.dtype(tgt).kind in "iu":
                vals = A[onp.isfinite(A)] if A.size else A
                info = onp.iinfo(tgt)
                if (self.fuzzy(a) or not onp.all(onp.isfinite(A)) or
                        (vals.size and (vals.min() <= info.min - 1 or vals.max() >= info.max + 1))):
                    tgt = r.choice(FLOATS + ["bool"])
            if self.fuzzy(a) and tgt == "bool":
                tgt = "float64"
            order = r.choice(["", "", ", order='K'", ", order='F'", ", order='A'", ", copy=False"])
            src = r.choice([f"{a}.astype('{tgt}'{order})", f"{a}.T.astype(np.{tgt})", f"{a}[::-1].astype('{tgt}')"])
            self.emit(f"{out} = {src}", "layout")
        elif form == "reshape":
            a = self.pick(lambda v: v.size > 0)
            if a is None:
                return
            A = self.ns[a]
            n = A.size
            divs = [d for d in range(1, n + 1) if n % d == 0]
            d = r.choice(divs)
            shape = r.choice([(n,), (d, n // d), (n // d, d), (d, -1), (-1,), (1, n), (n, 1)])
            order = r.choice(["", "", ", order='F'", ", order='C'", ", order='A'"])
            src = r.choice([f"{a}.reshape({shape!r}{order})", f"{a}.T.reshape({shape!r}{order})",
                            f"np.reshape({a}, {shape!r}{order})", f"{a}.squeeze()", f"{a}[::-1].reshape({shape!r})"])
            self.emit(f"{out} = {src}", "layout")
            if r.random() < 0.4 and isinstance(self.ns.get(out), onp.ndarray) and self.ns[out].flags.writeable:
                v = "True" if A.dtype.kind == "b" else "-7"
                w = f"{out}[...] = {v}" if r.random() < 0.5 else f"{out}[..., 0] = {v}"
                self.later(lambda: self.emit(w, "layout"))
        elif form == "like":
            a = self.pick()
            if a is None:
                return
            A = self.ns[a]
            fill = self.value_for(A.dtype) if A.dtype.kind != "f" else r.choice(["1.5", "-0.0", "7"])
            ch = [f"{out} = np.empty_like({a}); {out}.fill({fill})",
                  f"{out} = np.empty_like({a}.T, order='K'); {out}[...] = {fill}",
                  f"{out} = np.zeros_like({a}.T)", f"{out} = np.ones_like({a}, order='F')",
                  f"{out} = np.full_like({a}.T, {fill})", f"{out} = np.zeros_like({a}, dtype=np.float32)",
                  f"{out} = np.empty_like({a}, dtype=np.int16); {out}[...] = 3"]
            self.emit(r.choice(ch), "layout")
        else:  # view_op: an operation on a view, then a write through the view
            a = self.pick(lambda v: v.ndim >= 2, writeable=True)
            if a is None:
                return
            A = self.ns[a]
            v = self.name()
            self.emit(f"{v} = {a}.T[::-1]", "layout")
            self.emit(f"{out} = {v} + {v}" if A.dtype.kind != "b" else f"{out} = {v} | {v}", "layout")
            self.later(lambda: self.emit(f"{v}[0] = {'True' if A.dtype.kind == 'b' else '-1'}", "layout"))

    # -- routines: results whose layout a library decides ------------------

    def contraction_operands(self, widths, transposed=False):
        """(a, b, bt) for a contraction: `a` a 2-D float array of finite
        values far from overflow (a sum that overflows in one association
        order may not in another), `b` a fresh (k, n) right-hand side of its
        type without special values, `bt` a fresh (n, k) one (or None)."""
        r = self.rng
        a = self.pick(lambda v: v.ndim == 2 and v.dtype.kind == "f" and v.size > 0 and _magnitude(v) < 1e6)
        if a is None:
            return None
        A = self.ns[a]
        k, n = A.shape[1], r.choice(widths)
        b = self.new_input(dtype=str(A.dtype), shape=(k, n), order=r.choice(["C", "F"]), special=False)
        bt = self.new_input(dtype=str(A.dtype), shape=(n, k), order=r.choice(["C", "F"]),
                            special=False) if transposed else None
        return a, b, bt

    def g_routine(self):
        """A routine's result (einsum, matmul, tensordot, sort, take, fancy
        indexing, linalg, fft, shape routines), then usually a reshape/ravel
        of it and a write through that: the result's layout decides whether
        the write shows in the result (a view) or not (a copy), so a layout
        other than NumPy's shows up as a value difference."""
        r = self.rng
        form = r.choices(["einsum_view", "einsum", "matmul", "sort", "argsort", "take", "fancy", "linalg", "fft",
                          "shape"], [8, 10, 14, 10, 6, 8, 10, 10, 8, 16])[0]
        out = self.name()
        red = transc = False
        if form == "einsum_view":
            a = self.pick(lambda v: v.ndim in (2, 3), writeable=True)
            if a is None:
                return
            A = self.ns[a]
            if A.ndim == 2 and A.shape[0] == A.shape[1] and r.random() < 0.4:
                src = f"np.einsum('ii->i', {a})"
            elif A.ndim == 2:
                src = r.choice([f"np.einsum('ij->ji', {a})", f"np.einsum('ij', {a})", f"np.einsum('ji', {a})"])
            else:
                perm = "".join(r.sample("ijk", 3))
                src = f"np.einsum('ijk->{perm}', {a})"
        elif form == "einsum":
            picked = self.contraction_operands([1, 2, 3, 5])
            if picked is None:
                return
            a, b, _ = picked
            src = r.choice([f"np.einsum('ij,jk->ki', {a}, {b})", f"np.einsum('ij,jk->ik', {a}, {b})",
                            f"np.einsum('ij,ij->ji', {a}, {a})", f"np.einsum('ij->j', {a})",
                            f"np.einsum('ij,jk', {a}, {b})", f"np.einsum('ji,jk->ik', {a}.T, {b})"])
            red = "->ji" not in src
        elif form == "matmul":
            picked = self.contraction_operands([1, 2, 3, 4, 7], transposed=True)
            if picked is None:
                return
            a, b, bt = picked
            src = r.choice([f"{a} @ {b}", f"np.dot({a}, {b})", f"np.matmul({a}, {bt}.T)", f"{b}.T @ {a}.T",
                            f"np.tensordot({a}, {b}, axes=1)", f"np.tensordot({a}, {bt}, axes=([1], [1]))",
                            f"np.asfortranarray({a}) @ {b}", f"np.outer({a}[0], {b}[:, 0])", f"np.inner({a}, {bt})"])
            red = True
        elif form == "sort":
            a = self.pick(lambda v: v.ndim >= 1 and v.dtype.kind != "b")
            if a is None:
                return
            A = self.ns[a]
            ax = r.randrange(-A.ndim, A.ndim)
            src = r.choice([f"np.sort({a}, axis={ax})", f"np.sort({a}.T, axis=0)", f"np.sort({a}[::-1], axis={ax})",
                            f"np.partition({a}.T, 0, axis=0)" if A.size and A.T.shape[0] else f"np.sort({a}.T)",
                            f"np.sort({a}, axis=None)", f"np.sort(np.asfortranarray({a}), axis={ax})"])
        elif form == "argsort":
            a = self.pick(lambda v: v.ndim >= 1 and v.dtype.kind != "b", exact=True)
            if a is None:
                return
            A = self.ns[a]
            ax = r.randrange(-A.ndim, A.ndim)
            src = r.choice([f"np.argsort({a}, axis={ax}, kind='stable')", f"np.argsort({a}.T, axis=0, kind='stable')",
                            f"{a}.T.argsort(axis=-1, kind='stable')"])
        elif form in ("take", "fancy"):
            a = self.pick(lambda v: v.ndim >= 1 and v.size > 0)
            if a is None:
                return
            A = self.ns[a]
            ax = r.randrange(A.ndim)
            n = A.shape[ax]
            idx = [r.randrange(-n, n) for _ in range(r.randint(1, 4))]
            if form == "take":
                src = r.choice([f"np.take({a}, {idx}, axis={ax})", f"{a}.take({idx}, axis={ax})",
                                f"np.take({a}.T, {idx}, axis={A.ndim - 1 - ax})"])
            else:
                pre = ":, " * ax
                src = r.choice([f"{a}[{pre}{idx}]", f"np.asfortranarray({a})[{pre}{idx}]",
                                f"{a}.T[{', '.join([':'] * (A.ndim - 1 - ax) + [str(idx)])}]"])
        elif form == "linalg":
            n = r.choice([1, 2, 3, 4, 6])
            a = self.new_input(dtype="float64", shape=(n, n), order=r.choice(["C", "F"]), special=False)
            A = self.ns[a]
            if not onp.all(onp.isfinite(A)):
                return
            well = f"({a} + {float(2 * n + 1 + _magnitude(A) * n)} * np.eye({n}))"
            src = r.choice([f"np.linalg.inv({well})", f"np.linalg.solve({well}, {a}.T)", f"np.linalg.qr({well})[0]",
                            f"np.linalg.eigh({well} + {well}.T)[1]", f"np.linalg.svd({a})[2]",
                            f"np.linalg.pinv({a})", f"np.linalg.cholesky({well} @ {well}.T)",
                            f"np.linalg.matrix_power({a}.T, 2)", f"np.linalg.inv({well}.T)"])
            red = transc = True
        elif form == "fft":
            a = self.pick(lambda v: v.ndim in (1, 2) and v.dtype.kind in "fiu" and v.size > 0 and
                          bool(onp.all(onp.isfinite(v))))
            if a is None:
                return
            A = self.ns[a]
            ax = r.randrange(A.ndim)
            src = r.choice([f"np.fft.fft({a}, axis={ax}).real", f"np.abs(np.fft.rfft({a}, axis={ax}))",
                            f"np.fft.ifft({a}.T, axis=0).imag", f"np.fft.fftn({a}).real",
                            f"np.fft.irfft(np.fft.rfft({a}, axis={ax}), n={A.shape[ax]}, axis={ax})"])
            red = transc = True
        else:  # shape routines
            a = self.pick(lambda v: v.ndim >= 1 and v.size > 0)
            if a is None:
                return
            A = self.ns[a]
            ax = r.randrange(A.ndim)
            ch = [f"np.flip({a}, {ax})", f"np.roll({a}.T, 1, axis=0)", f"np.repeat({a}.T, 2, axis={ax})",
                  f"np.tile({a}, 2)", f"np.pad({a}, 1)", f"np.diff({a}, axis={ax})" if A.shape[ax] > 1 else f"{a}.T",
                  f"np.cumsum({a}.T, axis=0)" if A.dtype.kind != "b" else f"np.flip({a})", f"np.squeeze({a}[None])",
                  f"np.atleast_2d({a}).T", f"np.moveaxis({a}, 0, -1)", f"np.expand_dims({a}, 0).T"]
            if A.ndim >= 2:
                ch += [f"np.triu({a})", f"np.rot90({a})", f"np.fliplr({a})", f"np.diagonal({a})",
                       f"np.diagonal({a}).copy()", f"np.kron({a}.T, np.ones((2, 1), dtype={a}.dtype))",
                       f"np.swapaxes({a}, 0, -1)", f"np.transpose({a})[::-1]"]
            src = r.choice(ch)
            red = "cumsum" in src and A.dtype.kind == "f"
        self.emit(f"{out} = {src}", "routine", red=red, transc=transc)
        R = self.ns.get(out)
        if not isinstance(R, onp.ndarray) or R.size == 0 or r.random() < 0.2:
            return
        # a reshape/ravel of the result, and a write through it (or a later one)
        rv = self.name("r")
        ch = [f"{out}.ravel()", f"{out}.reshape(-1)", f"np.ravel({out}, order='K')", f"{out}.T.ravel()",
              f"{out}.reshape(-1, order='F')", f"np.ravel({out}, order='A')", f"{out}.T.reshape(-1)"]
        if R.ndim >= 2:
            ch += [f"{out}.reshape({R.shape[0]}, -1)", f"{out}.T.reshape(-1, {R.shape[0]})"]
        self.emit(f"{rv} = {r.choice(ch)}", "layout")
        RV = self.ns.get(rv)
        if not isinstance(RV, onp.ndarray) or not RV.flags.writeable or RV.size == 0:
            return
        v = "True" if RV.dtype.kind == "b" else ("100" if RV.dtype.kind in "iu" else "-2.5")
        w = r.choice([f"{rv}[0] = {v}", f"{rv}[...] = {v}", f"{rv}[-1] = {v}"])
        if r.random() < 0.5:
            self.emit(w, "layout")
        else:
            self.later(lambda: self.emit(w, "layout"))
        if R.flags.writeable and r.random() < 0.3:
            self.later_write(out)

    REDUCTIONS = ["sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "any", "all", "cumsum",
                  "cumprod"]

    def g_reduction(self):
        r = self.rng
        special = r.random()
        if special < 0.08:
            # float32 near overflow: short mixed-sign arrays and longer same-sign ones
            n = self.name()
            # Mixed signs: NumPy adds fewer than 8 values in order, and so
            # does numfuse's default schedule; a random schedule may
            # reassociate (inf - inf) legitimately, so only same-sign then.
            if r.random() < 0.5 and choose_config(self.seed)["random_schedules"] is None:
                k = r.randint(1, 7)
                vals = [r.choice(["3e38", "-3e38", "2.5e38", "-3.3e38", "1.0", "3.4e38"]) for _ in range(k)]
                self.emit(f"{n} = np.array(onp.array([{', '.join(vals)}], dtype=np.float32))", "creation")
            else:
                k = r.randint(8, 40)
                sgn = r.choice(["", "-"])
                self.emit(f"{n} = np.array(onp.full({k}, {sgn}{r.choice(['3e38', '1e38', '2e37'])}, dtype=np.float32))",
                          "creation")
            fn = r.choice(["sum", "mean", "cumsum", "sum", "max"])
            self.emit(f"{self.name('s')} = {n}.{fn}()" if fn != "cumsum" else f"{self.name()} = np.cumsum({n})",
                      "reduction", red=True, zero_d=True)
            return
        if special < 0.14:
            # products with zeros and huge values, in either order
            n = self.name()
            big = r.choice(["1e10", "1e200", "-1e10", "float('inf')"])
            k = r.choice([50, 9, 3, 33])
            parts = ["onp.zeros(1)", f"onp.full({k}, {big})"]
            if r.random() < 0.5:
                parts.reverse()
            self.emit(f"{n} = np.asarray(onp.concatenate([{', '.join(parts)}]))", "creation")
            fn = r.choice([f"{n}.prod()", f"np.prod({n})", f"np.cumprod({n})", f"{n}.prod(keepdims=True)"])
            self.emit(f"{self.name('s')} = {fn}", "reduction", red=True, zero_d=True)
            return
        fn = r.choice(self.REDUCTIONS)
        exact = fn in ("argmin", "argmax", "any", "all")
        a = self.pick(exact=exact)
        if a is None:
            return
        A = self.ns[a]
        if fn in ("prod", "cumprod") and A.dtype.kind == "f" and not A.size <= 16:
            if A.ndim == 0:
                return
            # keep float products short: reduce only along a short axis
            axes = [k for k in range(A.ndim) if A.shape[k] <= 16]
            if not axes:
                fn = "sum"
            else:
                ax = r.choice(axes)
                self.emit(f"{self.name()} = np.{fn}({a}, axis={ax - A.ndim if r.random() < 0.3 else ax})",
                          "reduction", red=True, zero_d=True)
                return
        args = []
        nd = A.ndim
        x = r.random()
        if fn in ("cumsum", "cumprod"):
            if x < 0.6 and nd:
                args.append(f"axis={r.randrange(-nd, nd)}")
            elif x < 0.65:
                args.append(f"axis={nd + 1}")
        elif fn in ("argmin", "argmax"):
            if x < 0.6 and nd:
                args.append(f"axis={r.randrange(-nd, nd)}")
            if r.random() < 0.2:
                args.append("keepdims=True")
        else:
            if x < 0.35:
                pass
            elif x < 0.7 and nd:
                args.append(f"axis={r.randrange(-nd, nd)}")
            elif x < 0.9 and nd >= 2:
                k = r.randint(1, nd)
                axes = sorted(r.sample(range(nd), k))
                axes = [ax - nd if r.random() < 0.3 else ax for ax in axes]
                args.append(f"axis={tuple(axes)!r}")
            elif x < 0.93:
                args.append(f"axis={r.choice([nd, -nd - 1, (0, 0)])!r}")
            else:
                args.append("axis=None")
            if r.random() < 0.3:
                args.append("keepdims=True")
        if fn in ("sum", "prod", "mean", "cumsum", "cumprod", "std", "var") and r.random() < 0.2:
            dt = r.choice(["np.float64", "np.float32", "np.int64", "np.int32", "'uint8'", "np.int16"])
            if A.dtype.kind == "f" and "int" in dt:
                dt = "np.float64"
            if fn in ("std", "var", "mean") and "int" in dt:
                dt = "np.float32"
            args.append(f"dtype={dt}")
        if fn in ("std", "var") and r.random() < 0.3:
            args.append("ddof=1")
        argstr = ", ".join(args)
        src = r.random()
        target = a
        if A.ndim >= 2 and r.random() < 0.25:
            target = f"{a}.T"
        elif A.ndim >= 1 and r.random() < 0.1:
            target = f"{a}[::-1]"
        if src < 0.5:
            expr = f"{target}.{fn}({argstr})"
        elif src < 0.92:
            expr = f"np.{fn}({target}{', ' if argstr else ''}{argstr})"
        else:
            expr = f"onp.{fn}({target}{', ' if argstr else ''}{argstr})"
        self.emit(f"{self.name('s' if not args or 'axis=None' in args else 'v')} = {expr}", "reduction", red=True,
                  zero_d=True)
        if r.random() < 0.25:
            # use the result later
            res = self.stmts[-1].src.split(" = ")[0]
            v = self.ns.get(res)
            if isinstance(v, (onp.ndarray, onp.generic)) and onp.asarray(v).dtype.kind in "biuf":
                self.emit(f"{self.name()} = {a} - {res}" if A.dtype.kind != "b" else f"{self.name()} = {res} + 1",
                          "elementwise")

    def g_creation(self):
        r = self.rng
        out = self.name()
        form = r.choices(["basic", "full_tricky", "arange", "linspace", "eye", "empty", "input"],
                         [20, 20, 15, 12, 8, 10, 15])[0]
        dt = r.choice(ALL_DTYPES)
        if form == "basic":
            shape = self.rand_shape()
            fn = r.choice(["zeros", "ones"])
            order = r.choice(["", "", ", order='F'"])
            self.emit(f"{out} = np.{fn}({shape!r}, dtype=np.{dt}{order})" if r.random() < 0.8 else
                      f"{out} = np.{fn}({shape!r})", "creation")
        elif form == "full_tricky":
            fills = ["float('nan')", "-1.0", "onp.int64(300)", "300", "2.5", "onp.float32(2.5)", "True", "-0.0",
                     "onp.uint8(255)", "-129", "float('inf')", "1e20", "onp.float64(-1.5)", "7", "onp.bool_(True)"]
            fill = r.choice(fills)
            tdt = r.choice(ALL_DTYPES)
            # float -> integer conversions of values the type cannot hold are undefined in C
            # and NumPy's result depends on the CPU: only the two the brief pins down (NumPy
            # on x86-64: INT_MIN and 255) are generated
            ub = ((fill in ("float('nan')", "float('inf')", "1e20") and tdt in INTS) or
                  (fill in ("-1.0", "onp.float64(-1.5)") and tdt in UINT))
            if ub and (fill, tdt) not in (("float('nan')", "int32"), ("-1.0", "uint8")):
                tdt = "float64"
            shape = r.choice(["3", "(2, 3)", "0", "(4, 1)"])
            self.emit(f"{out} = np.full({shape}, {fill}, dtype=np.{tdt})", "creation")
        elif form == "arange":
            ch = [f"np.arange(306, dtype=np.uint8)", f"np.arange({r.randint(0, 40)})",
                  f"np.arange({r.randint(-5, 5)}, {r.randint(5, 30)}, {r.choice([1, 2, 3])}, dtype=np.{dt})",
                  f"np.arange(0.5, {r.randint(1, 10)}, 0.25)", f"np.arange(200, dtype=np.int8)",
                  f"np.arange(10, 0, -1.5)", f"np.arange({r.randint(1, 30)}, dtype=np.float32)",
                  "np.arange(5, dtype=np.bool_)", "np.arange(2, dtype=np.bool_)"]
            self.emit(f"{out} = {r.choice(ch)}", "creation")
        elif form == "linspace":
            n = r.choice([0, 1, 2, 5, 7, 16, 33])
            a, b = r.choice([(0, 1), (-1, 1), (2.5, -2.5), (0, 10), (1e-3, 1e3)])
            extra = r.choice(["", ", endpoint=False", ", dtype=np.float32", ", dtype=np.int32"])
            self.emit(f"{out} = np.linspace({a}, {b}, {n}{extra})", "creation")
        elif form == "eye":
            n = r.randint(0, 6)
            m = r.randint(0, 6)
            k = r.randint(-2, 2)
            self.emit(r.choice([f"{out} = np.eye({n}, {m}, {k}, dtype=np.{dt})", f"{out} = np.identity({n})",
                                f"{out} = np.eye({n})"]), "creation")
        elif form == "empty":
            shape = self.rand_shape()
            fill = self.value_for(dt)
            self.emit(r.choice([f"{out} = np.empty({shape!r}, dtype=np.{dt}); {out}.fill({fill})",
                                f"{out} = np.empty({shape!r}, dtype=np.{dt}, order='F'); {out}[...] = {fill}"]),
                      "creation")
        else:
            self.new_input()

    def need(self, dtypes, ndim_min=1):
        cands = self.arrays(lambda v: str(v.dtype) in dtypes and v.ndim >= ndim_min and v.size > 0, writeable=True)
        if cands and self.rng.random() < 0.7:
            return self.rng.choice(sorted(cands))
        return self.new_input(dtype=self.rng.choice(dtypes), nonempty=True, ndim=self.rng.choice([1, 1, 2]))

    def g_pyscalar_range(self):
        r = self.rng
        out = self.name()
        form = r.choice(["arith", "setitem", "where", "compare", "clip", "full", "npscalar_set", "cast"])
        if form == "arith":
            a = self.need(["uint8", "int8", "uint16", "int16", "uint32", "int32"])
            dt = self.ns[a].dtype
            big = r.choice(["300", "-1", "2**70", "-200", "70000", "2**31", "-2**40", "255", "128", "2**64"])
            op = r.choice(["+", "-", "*", "//", "%", "&", "|"])
            self.emit(r.choice([f"{out} = {a} {op} {big}", f"{out} = {big} {op} {a}",
                                f"{out} = np.add({a}, {big})", f"{out} = np.maximum({a}, {big})"]), "pyscalar_range")
        elif form == "setitem":
            a = self.need(["int8", "uint8", "bool", "int16", "uint64", "int64"])
            big = r.choice(["300", "-1", "2**64", "2**63", "-2**63 - 1", "128", "-129", "256", "2**70", "1e300"])
            A = self.ns[a]
            if big == "1e300" and A.dtype.kind in "iu":
                big = "2**70"
            self.emit(r.choice([f"{a}[0] = {big}", f"{a}[...] = {big}", f"{a}[-1:] = {big}", f"{a}.fill({big})",
                                f"{a} += {big}"]), "pyscalar_range")
        elif form == "where":
            a = self.need(["bool"])
            c = a
            x, y = r.choice([("2**64", "3"), ("2**63", "3"), ("-2**63", "2**63 - 1"), ("300", "onp.int8(1)"),
                             ("2**64", "0.5"), ("1.5", "2**70"), ("-1", "onp.uint64(1)")])
            self.emit(f"{out} = np.where({c}, {x}, {y})", "pyscalar_range")
        elif form == "compare":
            a = self.need(SINT + UINT)
            big = r.choice(["2**70", "-2**70", "300", "-1", "2**64", "2**63", "-129"])
            op = r.choice(self.CMP_OPS)
            self.emit(r.choice([f"{out} = {a} {op} {big}", f"{out} = {big} {op} {a}",
                                f"{out} = np.equal({a}, {big})"]), "pyscalar_range")
        elif form == "clip":
            a = self.need(["int8", "uint8", "int16"])
            lo, hi = r.choice([("300", "np.inf"), ("-300", "5"), ("-1", "100"), ("0", "300"), ("-2**70", "2**70"),
                               ("None", "1000"), ("-0.5", "2.5")])
            self.emit(f"{out} = np.clip({a}, {lo}, {hi})", "pyscalar_range")
        elif form == "full":
            fill, dt = r.choice([("float('nan')", "int32"), ("-1.0", "uint8"), ("onp.int64(300)", "int8"),
                                 ("300", "int8"), ("-1", "uint16"), ("2**64", "uint64"), ("2**63", "int64"),
                                 ("onp.float64(1e10)", "float32"), ("onp.uint64(2**63)", "int64")])
            self.emit(f"{out} = np.full(3, {fill}, dtype=np.{dt})", "pyscalar_range")
        elif form == "npscalar_set":
            a = self.need(["uint8", "int8", "int16"])
            v = r.choice(["onp.int64(300)", "onp.int64(-1)", "onp.uint16(65535)", "onp.float32(2.5)", "onp.bool_(True)"])
            self.emit(r.choice([f"{a}[0] = {v}", f"{a}[...] = {v}", f"{a} += {v}"]), "pyscalar_range")
        else:
            a = self.need(["int8", "int64", "uint8", "int16", "uint32"])
            tgt = r.choice(["uint8", "int8", "uint64", "int16", "bool"])
            self.emit(f"{out} = {a}.astype(np.{tgt})", "pyscalar_range")

    def g_signed_zero(self):
        r = self.rng
        cands = [n for n in self.arrays(lambda v: v.dtype.kind == "f" and v.size > 0) if not self.fuzzy(n)]
        if cands and r.random() < 0.4:
            z = r.choice(sorted(cands))
        else:
            z = self.new_input(dtype=r.choice(FLOATS), special=True, nonempty=True)
        Z = self.ns[z]
        out = self.name()
        sc = lambda: r.choice(["-0.0", "0.0", "float('nan')", "float('inf')", "-float('inf')", "1.0", "-1.0"])
        form = r.choice(["clip", "clip", "where", "maxmin", "maxmin", "arith", "unary", "out"])
        if form == "clip":
            lo, hi = sc(), sc()
            if r.random() < 0.3 and Z.ndim >= 1:
                lo = f"{z}[::-1]"
            self.emit(f"{out} = np.clip({z}, {lo}, {hi})", "signed_zero", loose_sz=not SZ_STRICT["clip"])
        elif form == "where":
            c = r.choice([f"{z} < 0", f"np.signbit({z})", f"{z} == 0", f"np.isnan({z})", f"{z} >= -0.0"])
            self.emit(f"{out} = np.where({c}, {r.choice([z, sc()])}, {r.choice([sc(), f'-{z}', z])})", "signed_zero")
        elif form == "maxmin":
            fn = r.choice(["maximum", "minimum", "fmax", "fmin"])
            b = r.choice([sc(), f"{z}[::-1]" if Z.ndim >= 1 else sc(), f"-{z}", "onp.float32(-0.0)"])
            args = (z, b) if r.random() < 0.6 else (b, z)
            self.emit(f"{out} = np.{fn}({args[0]}, {args[1]})", "signed_zero", loose_sz=not SZ_STRICT[fn])
        elif form == "arith":
            ch = [f"{z} * -1", f"-{z}", f"{z} + 0.0", f"{z} - 0.0", f"{z} * 0.0", f"0.0 - {z}", f"{z} + -0.0",
                  f"{z} / -float('inf')"]
            self.emit(f"{out} = {r.choice(ch)}", "signed_zero")
        elif form == "unary":
            fn = r.choice(["abs", "sqrt", "floor", "ceil", "sign", "negative", "rint", "trunc", "square", "copysign"])
            if fn == "copysign":
                self.emit(f"{out} = np.copysign(1.0, {z})", "signed_zero")
            else:
                self.emit(f"{out} = np.{fn}({z})", "signed_zero")
        else:
            if not Z.flags.writeable:
                return
            fn = r.choice(["maximum", "minimum", "clip"])
            if fn == "clip":
                self.emit(f"np.clip({z}, -0.0, 0.0, out={z})", "signed_zero", loose_sz=not SZ_STRICT["clip"])
            else:
                self.emit(f"np.{fn}({z}, {sc()}, out={z})", "signed_zero", loose_sz=not SZ_STRICT[fn])

    def g_alloc(self):
        r = self.rng
        if r.random() < 0.5:
            a = self.pick(lambda v: v.ndim >= 1 and v.shape[0] >= 2 and v.dtype.kind in "iuf", writeable=True)
            if a is None:
                return
            v1 = self.name()
            self.emit(f"{v1} = {a} + 1", "elementwise")
            self.emit(f"{a}[1:] += {a}[:-1]", "elementwise")
            self.emit(f"{self.name('big')} = {r.choice(HUGE_ALLOCS[:6])}", "alloc")
            self.emit(f"{self.name()} = {a} * 2", "elementwise")
            if r.random() < 0.5:
                self.emit(f"{self.name('s')} = float({v1}.sum())", "reduction", red=True)
        else:
            self.emit(f"{self.name('big')} = {r.choice(HUGE_ALLOCS)}", "alloc")

    def g_error_probe(self):
        r = self.rng
        probes = ["broadcast", "axis", "readonly", "reshape", "zero_d_axis", "shape_attr", "strlist", "strin", "streq",
                  "round", "imag", "copy_false", "negpow", "view", "oob", "too_many", "astype_bad", "stack", "matmul",
                  "truth", "item_oob", "out_shape", "int_conv", "dup_axis", "concat_axis"]
        p = r.choice(probes)
        out = self.name()
        if p in ("copy_false", "negpow", "zero_d_axis"):
            src = {"copy_false": f"{out} = np.array([1, 2], copy=False)",
                   "negpow": r.choice([f"{out} = np.zeros(0, int) ** -1",
                                       f"{out} = np.arange(3, dtype=np.uint64) ** np.array([1, -1, 2])",
                                       f"{out} = np.arange(4) ** -1", f"{out} = np.arange(4, dtype=np.int8) ** np.arange(-1, 3)",
                                       f"{out} = np.arange(4.0) ** -1"]),
                   "zero_d_axis": r.choice([f"{out} = np.zeros(()).sum(axis=0)", f"{out} = np.ones(()).max(axis=-1)",
                                            f"{out} = np.cumsum(np.zeros(()), axis=0)"])}[p]
            self.emit(src, "error_probe")
            return
        a = self.pick(lambda v: v.ndim >= 1, exact=True)
        if a is None:
            return
        A = self.ns[a]
        nd = A.ndim
        if p == "broadcast":
            shp = tuple(s + 1 for s in A.shape)
            self.emit(r.choice([f"{out} = {a} + np.ones({shp!r})", f"{a} += np.ones({(2,) + A.shape!r})",
                                f"{out} = np.where({a}, np.ones({shp!r}), 0)"]), "error_probe")
        elif p == "axis":
            self.emit(r.choice([f"{out} = {a}.sum(axis={nd})", f"{out} = np.cumsum({a}, axis={-nd - 1})",
                                f"{out} = {a}.max(axis=({nd + 2},))", f"{out} = np.argmax({a}, axis={nd})"]),
                      "error_probe")
        elif p == "readonly":
            self.emit(r.choice([f"np.broadcast_to({a}, (2,) + {a}.shape)[0] = 1",
                                f"{out} = np.broadcast_to({a}, (3,) + {a}.shape); {out} += 1"]), "error_probe")
        elif p == "reshape":
            self.emit(r.choice([f"{out} = {a}.reshape(-2, 6)", f"{out} = {a}.reshape(7, -1)",
                                f"{out} = {a}.reshape(-1, -1)", f"{out} = {a}.reshape({A.size + 1})"]), "error_probe")
        elif p == "shape_attr":
            n = A.size
            # onp.asarray(x) of a NumPy array is x itself, so setting x.shape
            # also reshapes what asarray returned: an identity numfuse cannot
            # have (its arrays are not NumPy's). Only for arrays never exported.
            if any(m.lib == "onp_view" for m in self.meta.values()):
                return
            self.emit(r.choice([f"{a}.shape = ({n},)", f"{a}.T.shape = ({n},)", f"{a}[::2].shape = (-1,)",
                                f"{a}.shape = ({n + 1},)"]), "error_probe")
        elif p == "strlist":
            k = A.shape[-1]
            lst = [str(i) for i in range(k)]
            if lst:
                lst[r.randrange(k)] = "'x'"
            self.emit(f"{out} = {a} + [{', '.join(lst)}]", "error_probe")
        elif p == "strin":
            self.emit(f"{out} = 'x' in {a}", "error_probe")
        elif p == "streq":
            self.emit(r.choice([f"{out} = {a} == 'x'", f"{out} = {a} != 'x'"]), "error_probe")
        elif p == "round":
            self.emit(f"{out} = round({a})", "error_probe")
        elif p == "imag":
            self.emit(r.choice([f"{a}.imag[...] = 1", f"{out} = {a}.imag", f"{out} = {a}.real"]), "error_probe")
        elif p == "view":
            if A.dtype.itemsize == 8:
                v = r.choice(["onp.int64", "onp.float64", "onp.uint64"])
            elif A.dtype.itemsize == 4:
                v = r.choice(["onp.int32", "onp.float32"])
            else:
                v = r.choice(["onp.int8", "onp.uint8", "onp.int64"])
            if A.dtype.kind == "b" and v in ("onp.int64",):
                v = "onp.uint8"
            if not A.flags.writeable:
                return
            self.emit(f"{out} = {a}.view({v})", "error_probe")
            V = self.ns.get(out)
            if isinstance(V, onp.ndarray) and V.size and V.ndim:
                self.emit(f"{out}[0] = 1", "error_probe")
        elif p == "oob":
            self.emit(r.choice([f"{out} = {a}[{A.shape[0]}]", f"{out} = {a}[{-A.shape[0] - 1}]",
                                f"{a}[{A.shape[0] + 2}] = 1"]), "error_probe")
        elif p == "too_many":
            self.emit(f"{out} = {a}[{', '.join(['0'] * (nd + 1))}]", "error_probe")
        elif p == "astype_bad":
            self.emit(r.choice([f"{out} = {a}.astype('foo')", f"{out} = {a}.astype(np.float64, order='X')"]), "error_probe")
        elif p == "stack":
            self.emit(r.choice([f"{out} = np.stack([{a}, {a}[:-1]])", f"{out} = np.concatenate([{a}, {a}[None]])"]),
                      "error_probe")
        elif p == "matmul":
            self.emit(f"{out} = {a} @ np.ones(({A.shape[-1] + 1}, 2))", "error_probe")
        elif p == "truth":
            self.emit(r.choice([f"{out} = bool({a})", f"{out} = int({a})", f"{out} = float({a})",
                                f"{out} = 1 if {a} else 0"]), "error_probe")
        elif p == "item_oob":
            self.emit(f"{out} = {a}.item({A.size + 3})", "error_probe")
        elif p == "out_shape":
            self.emit(r.choice([f"np.add({a}, 1, out=np.zeros({A.size + 1}))",
                                f"{out} = {a}.sum(axis=0, out=np.zeros({(A.size + 2,)!r}))",
                                f"np.multiply({a}, 2, out=np.zeros({A.shape!r}, dtype=np.int8))"]), "error_probe")
        elif p == "int_conv":
            self.emit(r.choice([f"{out} = {a}.fill('x')", f"{out} = np.full(3, 'x', dtype=np.float64)",
                                f"{a}[0] = 'abc'", f"{a}[0] = None"]), "error_probe")
        elif p == "dup_axis":
            self.emit(f"{out} = {a}.mean(axis=(0, 0))", "error_probe")
        else:
            self.emit(f"{out} = np.concatenate([{a}, {a}], axis={nd + 1})", "error_probe")

    def g_interop(self):
        r = self.rng
        a = self.pick(writeable=True, exact=True)
        if a is None:
            return
        A = self.ns[a]
        form = r.choice(["asarray", "asarray", "array", "ufunc", "func"])
        if form in ("asarray", "array"):
            w = self.name("w")
            view = r.choice([a, a, f"{a}[::2]" if A.ndim else a, f"{a}.T"])
            if form == "asarray":
                self.emit(f"{w} = onp.asarray({view})", "interop", lib="onp_view")
            else:
                self.emit(f"{w} = onp.array({view})", "interop", lib="onp")
            b = A.dtype.kind == "b"
            upd = r.choice([f"{a} += 10" if not b else f"{a} ^= True", f"{a}[...] = 3" if not b else f"{a}[...] = True",
                            f"{a} *= 2" if not b else f"{a} &= False"])
            if r.random() < 0.5:
                self.emit(upd, "interop")
            else:
                self.later(lambda: self.emit(upd, "interop"))
        elif form == "ufunc":
            fn = r.choice(["add", "multiply", "maximum", "negative"])
            self.emit(f"{self.name()} = onp.{fn}({a}" + (")" if fn == "negative" else ", 1)"), "interop")
        else:
            fn = r.choice(["sum", "mean", "concatenate", "max"])
            if fn == "concatenate":
                self.emit(f"{self.name()} = onp.concatenate([{a}, {a}])" if A.ndim else
                          f"{self.name()} = onp.concatenate([{a}[None], {a}[None]])", "interop")
            else:
                self.emit(f"{self.name('s')} = onp.{fn}({a})", "reduction", red=True, zero_d=True)

    # -- driver ------------------------------------------------------------

    def run(self):
        r = self.rng
        target = r.randint(5, MAX_STATEMENTS)
        for _ in range(r.randint(1, 3)):
            self.new_input()
        classes = list(WEIGHTS)
        weights = [WEIGHTS[c] for c in classes]
        guard = 0
        while len(self.stmts) < target and guard < 200:
            guard += 1
            due = [p for p in self.pending if p[0] <= len(self.stmts)]
            if due:
                p = due[0]
                self.pending.remove(p)
                p[1]()
                continue
            cls = r.choices(classes, weights)[0]
            getattr(self, "g_" + cls)()
        for p in list(self.pending):
            if len(self.stmts) >= MAX_STATEMENTS:
                break
            p[1]()
        self.pending = []
        # only metadata of variables that exist at the end
        meta = {n: m for n, m in self.meta.items() if n in self.ns}
        prog = Program(seed=self.seed, stmts=self.stmts, meta=meta, config=choose_config(self.seed))
        if len(prog.stmts) > MAX_STATEMENTS:  # a multi-statement step at the end
            prog = prog.subset(range(MAX_STATEMENTS))
        return prog


def _signed_zero_consistency():
    """Whether NumPy's choice between +0.0 and -0.0 on ties is the same on all
    of its code paths (contiguous/strided, array/scalar operands, sizes below
    and above the SIMD width). Where it is not, the sign of such zeros is not
    compared (this varies with the CPU NumPy runs on)."""
    out = {}
    with warnings.catch_warnings(), onp.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name in ("maximum", "minimum", "fmax", "fmin", "clip"):
            seen = set()
            for n in (1, 2, 3, 5, 8, 15, 16, 17, 33):
                for stride in (1, 2, -1):
                    for first_neg in (False, True):
                        for dt in ("float64", "float32"):
                            a = onp.zeros(2 * n, dt)[::stride][:n]
                            b = -onp.zeros(2 * n, dt)[::stride][:n]
                            x, y = (b, a) if first_neg else (a, b)
                            if name == "clip":
                                res = [onp.clip(x, y, y), onp.clip(x, y[0], y[0]), onp.clip(x, y, y[0])]
                            else:
                                f = getattr(onp, name)
                                res = [f(x, y), f(x, y[0]), f(x[0], y)]
                            for k, rr in enumerate(res):
                                sb = set(onp.signbit(onp.atleast_1d(rr)).tolist())
                                if len(sb) > 1:
                                    seen.add("mixed")
                                else:
                                    seen.add((first_neg, k, sb.pop()))
            # consistent: for each (operand order, operand kind) one answer, never mixed
            keys = {(f, k) for f, k, _ in (s for s in seen if s != "mixed")}
            out[name] = "mixed" not in seen and len(keys) == len([s for s in seen if s != "mixed"])
    return out


SZ_STRICT = _signed_zero_consistency()


def generate(seed):
    """The random program for `seed` (deterministic)."""
    return _Gen(seed).run()


if __name__ == "__main__":  # print a few programs: python tests/fuzz/programs.py [seed ...]
    import sys

    for s in (sys.argv[1:] or ["0"]):
        p = generate(int(s))
        print(f"# seed {s} config {p.config}")
        print(p.text())
        print()

"""numfuse.jit: choices on array values inside a trace, as selects, and the
Python numbers computed from array values.

``a if c else b``, ``if c: ... elif ...: ... else: ...``, ``c and d``,
``not c`` where ``c`` is an array value (``1 if s[i] + s[j] == 3 else 0``,
``if d[i, k] + d[k, j] < d[i, j]: d[i, j] = d[i, k] + d[k, j]``), and
``int(a[i])``, ``float(a[i])``, ``a[i].item()``, need a value in Python,
which a trace does not have: the trace stops there (TraceAbort). Then the
function it stopped in (``stopped_in``: the innermost user frame, or the
function that defines it if it is a closure made by each call) is rewritten
from its source (``rewrite``: ``ast``, only where the source compiles to the
function's own code) and the call traced again with that code, swapped into
the function object for the trace only:

- ``a if c else b`` becomes ``_select(c, lambda: a, lambda: b)``;
- an ``if`` statement whose branches only assign (names, elements or slices
  ``X[idx]`` of arrays named by a name, with an index made of names and
  constants; ``x += ...``; tuple assignments such as a swap; ``if``s nested
  in them, an ``elif``) becomes::

      c_ = c
      b_ = _cond(c_)             # not None: a 0-d array inside a trace
      if b_ is not None:
          (both branches, each into its own temporaries, nested ``if``s
           as picks; then for every name either assigns: name =
           _pick(b_, then value, else value); for every element or slice
           either stores: X[idx] = _store(b_, value, X[idx], branch,
           nested conditions))
      elif c_:
          (the branch as written)
      else:
          (the other branch as written)

- ``and``/``or``/``not`` become _and/_or/_not (_and_truth/_or_truth where
  only the truth counts: a test); ``int``/``float``/``bool`` calls and
  ``.item()`` become _conv/_item; ``X[idx] = v`` becomes ``X[idx] = _val(X,
  v)``.

Outside a trace, or with Python values, the rewritten code does what the
original does (a condition evaluated and tested once, one branch run).
With an array condition both branches run and the program chooses, where
that is exact:

- two 0-d numfuse values (element reads) of one dtype: a deferred scalar
  of that dtype, as either is;
- two Python numbers of one type (``1`` / ``0``): a Num, which stands for a
  Python number the program computes (so do ``int(a[i])`` and the
  arithmetic on such numbers, with bounds that keep a Python int exact in
  int64) -- a weak operand: meeting an array of dtype D it is the value in
  the dtype NumPy gives that Python scalar next to D. A use of its value in
  Python (an index, ``range``, a format) stops the trace;
- a store: the value in the array's dtype exactly as NumPy would store it
  (the same dtype, or a Python number that converts exactly), else stop.

Anything else (values of different types or shapes, a branch that raises,
a name one branch leaves unbound, an in-place update of an array, a branch
doing more than assigning) stops the trace, and the function runs the
ordinary way, with NumPy's results.
"""

import ast
import copy
import gc
import inspect
import itertools
import math
import operator
import textwrap
import types
import warnings
import weakref

import numpy as _np

from . import _core

_ndarray = _core.ndarray
_PKG = __file__.rsplit("/", 1)[0] + "/"
_PY_SCALARS = (bool, int, float, complex)
# Where in its source a trace stopped: instruction positions (Python 3.11;
# on 3.10 nothing is rewritten and such choices run the ordinary way).
_POSITIONS = hasattr(types.CodeType, "co_positions")

# The rewritten code calls the helpers through constants (no name is added
# to the function's globals): these strings, replaced in the compiled code.
_SELECT, _COND, _PICK, _STORE, _FAIL, _IMM, _VAL, _CONV, _ITEM, _AND, _OR, _NOT, _TEST, _ANDT, _ORT = (
    "\x00numfuse.jit: " + n + "\x00" for n in ("select", "cond", "pick", "store", "fail", "imm", "val", "conv", "item",
                                                "and", "or", "not", "test", "and (truth)", "or (truth)"))
_UNSAFE_NAMES = frozenset(("super", "locals", "vars", "dir", "eval", "exec"))
_rewritten = weakref.WeakKeyDictionary()  # original code -> (rewritten code, condition spans) or None


def stop(why):
    _core._trace_abort(why)  # (raises TraceAbort)


# -- the rewrite ---------------------------------------------------------------


def _lambda_safe(e):
    """Whether expression e means the same inside a lambda or a temporary."""
    for n in ast.walk(e):
        if isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(n, ast.Name) and n.id in _UNSAFE_NAMES:
            return False
    return True


def _binds_names(e):
    """Whether e has a scope of its own that binds names (a lambda with
    arguments, a comprehension): renaming inside it is not safe."""
    return any(isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) or
               (isinstance(n, ast.Lambda) and (n.args.args or n.args.vararg or n.args.kwarg or n.args.kwonlyargs or
                                               n.args.posonlyargs))
               for n in ast.walk(e))


def _pure_index(e):
    return all(isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Slice, ast.Tuple, ast.operator,
                              ast.unaryop, ast.expr_context)) for n in ast.walk(e))


def _store_target(t):
    """Whether t is `X[idx]`, X a name, idx made of names and constants."""
    return isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and _pure_index(t.slice)


def _names(e):
    return {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}


def _load(t):
    """The target expression t read (a copy with a Load context)."""
    t = copy.deepcopy(t)
    t.ctx = ast.Load()
    return t


class _Rename(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        new = self.names.get(node.id, node.id)
        return ast.copy_location(ast.Name(new, ast.Load()), node)


def _call(const, *args):
    return ast.Call(func=ast.Constant(const), args=list(args), keywords=[])


def _thunk(e):
    """`lambda: e`."""
    return ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                    defaults=[]), e)


def _assign(name, value):
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


class _Branch:
    """One branch of an `if` as temporaries: `names` (each name assigned so
    far -> the temporary holding its value; it starts with the enclosing
    branch's), `stores` ((target, temporary, conditions): the conditions of
    the `if`s nested in this branch that lead to the store, as (temporary,
    taken) pairs) and the statements computing them; `ok` False if the
    branch does more than assign (an `if` inside one whose branches assign
    is a choice too)."""

    def __init__(self, stmts, prefix, names=None, stored=None):
        self.temps, self.names, self.stores, self.ok = [], dict(names or {}), [], True
        self.stored = set(stored or ())  # arrays stored into (not read after)
        k = itertools.count()
        for s in stmts:
            if isinstance(s, ast.Pass):
                continue
            if isinstance(s, ast.If):
                if not _lambda_safe(s.test) or _binds_names(s.test) or _names(s.test) & self.stored:
                    self.ok = False
                    return
                cond = f"{prefix}{next(k)}"
                self.temps.append(_assign(cond, _call(_TEST, _truth(_Rename(self.names).visit(s.test)))))
                sub = [_Branch(s.body, f"{prefix}{next(k)}a", self.names, self.stored),
                       _Branch(s.orelse, f"{prefix}{next(k)}b", self.names, self.stored)]
                if not all(x.ok for x in sub):
                    self.ok = False
                    return
                for x in sub:
                    self.temps.extend(x.temps)
                changed = [n for x in sub for n in x.names if x.names[n] != self.names.get(n)]
                for n in dict.fromkeys(changed):
                    tmp = f"{prefix}{next(k)}"
                    v = [ast.Name(x.names.get(n, self.names.get(n, n)), ast.Load()) for x in sub]
                    self.temps.append(_assign(tmp, _call(_PICK, ast.Name(cond, ast.Load()), *v)))
                    self.names[n] = tmp
                for x, taken in zip(sub, (True, False)):
                    self.stores.extend((t, tmp, ((cond, taken),) + conds) for t, tmp, conds in x.stores)
                    self.stored |= x.stored
                continue
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                target, value = s.targets[0], s.value
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Constant) and value.func.value == _VAL:
                    value = value.args[1]  # (the branch's store converts the value itself: _store)
            elif isinstance(s, ast.AugAssign) and (isinstance(s.target, ast.Name) or _store_target(s.target)):
                target = s.target
                value = ast.BinOp(_call(_IMM, _load(target)) if isinstance(target, ast.Name) else _load(target),
                                  s.op, s.value)
            else:
                self.ok = False
                return
            if not _lambda_safe(value) or _binds_names(value) or _names(value) & self.stored:
                self.ok = False
                return
            value = _Rename(self.names).visit(copy.deepcopy(value))
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if not all(isinstance(t, ast.Name) or _store_target(t) for t in elts):
                self.ok = False
                return
            temps = [f"{prefix}{next(k)}" for _ in elts]
            if isinstance(target, (ast.Tuple, ast.List)):
                self.temps.append(ast.Assign(targets=[ast.Tuple([ast.Name(t, ast.Store()) for t in temps],
                                                                 ast.Store())], value=value))
            else:
                self.temps.append(_assign(temps[0], value))
            for t, tmp in zip(elts, temps):
                if isinstance(t, ast.Name):
                    self.names[t.id] = tmp
                else:
                    self.stores.append((t, tmp, ()))
                    self.stored.add(t.value.id)


def _truth(e):
    """A rewritten test whose truth only counts (an `if`'s, a conditional
    expression's): its `and`/`or` (and theirs, inside) as _ANDT/_ORT."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Constant) and e.func.value in (_AND, _OR):
        e.func = ast.Constant(_ANDT if e.func.value == _AND else _ORT)
        e.args[0] = _truth(e.args[0])
        for lam in e.args[1:]:
            lam.body = _truth(lam.body)
    return e


class _Rewriter(ast.NodeTransformer):
    def __init__(self, indent):
        self.count = 0
        self.inner = 0  # (> 0: inside a copy whose `if`s stay statements)
        self.indent = indent
        self.spans = []  # the conditions' source spans: (line, column, end line, end column)

    def _span(self, t, start=None):
        """Where a stop means this node: t's source span (from `start`'s
        beginning: a jump on a condition carries the position of its test,
        or of its whole `if` or conditional expression)."""
        s = start or t
        self.spans.append((s.lineno, s.col_offset + self.indent, t.end_lineno, t.end_col_offset + self.indent))

    def visit_ClassDef(self, node):  # (a class body's scope: lambdas would not see its names)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return node
        if isinstance(f, ast.Name) and f.id in ("int", "float", "bool") and len(node.args) == 1:
            self.count += 1
            self._span(node)
            return ast.copy_location(_call(_CONV, f, node.args[0]), node)
        if isinstance(f, ast.Attribute) and f.attr == "item" and not node.args:
            self.count += 1
            self._span(node)
            return ast.copy_location(_call(_ITEM, f.value), node)
        return node

    def _stored_value(self, node, t):
        """`X[idx] = v` / `X[idx] op= v`: v as X's dtype takes it (_val)."""
        self.generic_visit(node)
        if t is not None and _store_target(t) and _lambda_safe(node.value):
            self.count += 1
            self._span(t)
            node.value = _call(_VAL, ast.Name(t.value.id, ast.Load()), node.value)
        return node

    def visit_Assign(self, node):
        return self._stored_value(node, node.targets[0] if len(node.targets) == 1 else None)

    def visit_AugAssign(self, node):
        return self._stored_value(node, node.target)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if not all(_lambda_safe(v) for v in node.values[1:]):
            return node
        self.count += 1
        self._span(node)
        rest = [_thunk(v) for v in node.values[1:]]
        return ast.copy_location(_call(_AND if isinstance(node.op, ast.And) else _OR, node.values[0], *rest), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.count += 1
        self._span(node)
        return ast.copy_location(_call(_NOT, node.operand), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        node.test = _truth(node.test)
        if not (_lambda_safe(node.body) and _lambda_safe(node.orelse)):
            return node
        self.count += 1
        self._span(node.test, node)
        call = _call(_SELECT, node.test, _thunk(node.body), _thunk(node.orelse))
        return ast.copy_location(call, node)

    def visit_If(self, node):
        # The code Python runs with a Python condition: this `if` with its
        # own choices rewritten (inner `if`s too, bottom up).
        py = copy.deepcopy(node)
        self.generic_visit(py)
        if self.inner:
            return py
        # With an array condition: both branches as temporaries, inner `if`s
        # (an `elif`) as nested choices -- from a copy whose inner `if`s are
        # kept as statements.
        arr = copy.deepcopy(node)
        self.inner += 1
        try:
            self.generic_visit(arr)
        finally:
            self.inner -= 1
        k = self.count
        then, other = _Branch(arr.body, f"__nf{k}t"), _Branch(arr.orelse, f"__nf{k}e")
        if not (then.ok and other.ok) or not (then.names or then.stores or other.names or other.stores):
            return py
        assigned = set(then.names) | set(other.names)
        if any(_names(t) & assigned for t, _, _ in then.stores + other.stores):
            return py  # (a store whose place a branch moves)
        self.count += 1
        self._span(node.test, node)
        c, b = f"__nf{k}c", f"__nf{k}b"
        work = then.temps + other.temps
        for name in list(then.names) + [n for n in other.names if n not in then.names]:
            tv, ev = then.names.get(name, name), other.names.get(name, name)
            work.append(_assign(f"__nf{k}v_{name}", _call(_PICK, ast.Name(b, ast.Load()), ast.Name(tv, ast.Load()),
                                                          ast.Name(ev, ast.Load()))))
        for branch, taken in ((then, True), (other, False)):
            for target, tmp, conds in branch.stores:
                nested = ast.Tuple([ast.Tuple([ast.Name(cn, ast.Load()), ast.Constant(t)], ast.Load())
                                    for cn, t in conds], ast.Load())
                work.append(ast.Assign(targets=[target], value=_call(
                    _STORE, ast.Name(b, ast.Load()), ast.Name(tmp, ast.Load()), _load(target), ast.Constant(taken),
                    nested)))
        fail = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=f"__nf{k}x",
                                 body=[ast.Expr(_call(_FAIL, ast.Name(f"__nf{k}x", ast.Load())))])
        chosen = [ast.Try(body=work, handlers=[fail], orelse=[], finalbody=[])]
        chosen += [_assign(n, ast.Name(f"__nf{k}v_{n}", ast.Load())) for n in
                   list(then.names) + [n for n in other.names if n not in then.names]]
        out = [
            _assign(c, _truth(py.test)),  # (the test as rewritten: its own choices and conversions)
            _assign(b, _call(_COND, ast.Name(c, ast.Load()))),
            ast.If(test=ast.Compare(ast.Name(b, ast.Load()), [ast.IsNot()], [ast.Constant(None)]), body=chosen,
                   orelse=[ast.If(test=ast.Name(c, ast.Load()), body=py.body, orelse=py.orelse)]),
        ]
        for s in out:
            ast.copy_location(s, node)
        return out


def _with_helpers(code):
    """code with the helpers in place of their constants (nested code too)."""
    consts = tuple(_HELPERS.get(c, c) if type(c) is str else
                   _with_helpers(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def _same_code(a, b):
    """Whether code objects a and b are the same program (bytecode, names,
    constants; nested code too), whatever their line numbers."""
    if a.co_code != b.co_code or a.co_names != b.co_names or a.co_varnames != b.co_varnames or \
            len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType) and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True


def _compiled(code, fdef):
    """fdef compiled as the function of `code` (its free variables kept free:
    defined in an outer function that has them as arguments)."""
    outer = ast.FunctionDef(
        name="__numfuse_outer__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in code.co_freevars], vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
    ast.copy_location(outer, fdef)
    mod = ast.fix_missing_locations(ast.Module(body=[outer], type_ignores=[]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ("'str' object is not callable")
        mcode = compile(mod, code.co_filename, "exec", dont_inherit=True)
    ocode = next(c for c in mcode.co_consts if isinstance(c, types.CodeType))
    return next((c for c in ocode.co_consts if isinstance(c, types.CodeType) and c.co_name == code.co_name), None)


def rewrite(code):
    """(the code of a function whose choices on values are selects -- same
    arguments, free variables and line numbers --, the conditions' source
    spans), or None when it has none or its source cannot be rewritten."""
    if code in _rewritten:
        return _rewritten[code]
    if not _POSITIONS:
        return None
    new = None
    try:
        if code.co_name != "<lambda>" and not code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                                                                  inspect.CO_ASYNC_GENERATOR):
            lines, first = inspect.getsourcelines(code)
            text = textwrap.dedent("".join(lines))
            indent = len(lines[0]) - len(lines[0].lstrip()) - (len(text) - len(text.lstrip()))
            tree = ast.parse(text)
            ast.increment_lineno(tree, first - 1)
            fdef = tree.body[0] if len(tree.body) == 1 else None
            # (Private names `__x` are mangled in a class body: a method's
            # source compiled alone would mean something else.)
            private = any(isinstance(n, ast.Name) and n.id.startswith("__") and not n.id.endswith("__") or
                          isinstance(n, ast.Attribute) and n.attr.startswith("__") and not n.attr.endswith("__")
                          for n in ast.walk(tree))
            if isinstance(fdef, ast.FunctionDef) and fdef.name == code.co_name and not private:
                fdef.decorator_list = []
                # The source must be the code's (a file edited since the
                # function was made, a notebook cell run again: linecache
                # holds the new text): compiled unchanged, it gives the
                # same bytecode.
                same = _compiled(code, copy.deepcopy(fdef))
                if same is not None and _same_code(same, code):
                    r = _Rewriter(indent)
                    fdef = r.visit(fdef)
                    fcode = _compiled(code, fdef) if r.count else None
                    if (fcode is not None and fcode.co_freevars == code.co_freevars and
                            fcode.co_argcount == code.co_argcount and
                            fcode.co_kwonlyargcount == code.co_kwonlyargcount and
                            fcode.co_posonlyargcount == code.co_posonlyargcount):
                        new = _with_helpers(fcode).replace(co_qualname=code.co_qualname), r.spans
    except (OSError, TypeError, SyntaxError, ValueError, StopIteration, IndexError, RecursionError):
        new = None
    _rewritten[code] = new
    return new


def rewritten(code):
    return _rewritten[code][0]


def functions_of(code):
    """The function objects running `code` (to swap it while a trace runs)."""
    return [f for f in gc.get_referrers(code) if type(f) is types.FunctionType and f.__code__ is code]


def _contains(outer, code):
    return any(c is code or (isinstance(c, types.CodeType) and _contains(c, code)) for c in outer.co_consts)


def stopped_in(tb):
    """The code of the function to rewrite for a traceback's stop in a
    choice the rewrite makes a select: the innermost frame outside numfuse
    -- or, where that function is defined inside another (a closure made
    anew by each call), the outermost frame's function that defines it,
    whose rewrite rewrites the closure's definition."""
    frames = []
    while tb is not None:
        c = tb.tb_frame.f_code
        if not c.co_filename.startswith(_PKG):
            frames.append((c, tb.tb_lasti))
        tb = tb.tb_next
    if not frames:
        return None
    code, lasti = frames[-1]
    try:
        line, _, col, _ = next(itertools.islice(code.co_positions(), lasti // 2, None))
    except (StopIteration, ValueError, AttributeError):
        return None
    if line is None or col is None:
        return None
    # The outermost frame whose function defines this code (itself, or
    # an enclosing function that makes it anew on each call).
    for c, _ in frames:
        if c is code or _contains(c, code):
            r = rewrite(c)
            if r is not None and c.co_filename == code.co_filename and any(
                    (l0, c0) <= (line, col) < (l1, c1) for l0, c0, l1, c1 in r[1]):
                return c
            return None
    return None


# -- the helpers the rewritten code calls --------------------------------------

_I64 = (-(1 << 63), (1 << 63) - 1)
_EXACT_FLOAT_INT = 1 << 53  # (ints within it convert to float64 exactly)


def _deferred(x):
    return type(x) is _ndarray and _core._is_deferred_scalar(x) and _core._trace_capturing()


def _cond(c):
    """c as a 0-d bool array when it is a value the program computes inside a
    trace (both branches run, the program chooses), else None (Python
    chooses)."""
    if type(c) is Num:
        return c._v if c._t is bool else c._v != 0
    if type(c) is not _ndarray or c.ndim != 0 or not _core._trace_capturing():
        return None
    return c if c.dtype == _np.bool_ else c != 0


def _num_of(x, t):
    """x (a Python scalar of type t, or a Num of type t) as a Num."""
    if type(x) is Num:
        return x
    if t is float:
        return Num(_np.float64(x), float)
    if t is bool:
        return Num(_np.bool_(x), bool, int(x), int(x))
    if not _I64[0] <= x <= _I64[1]:
        stop("a Python int beyond int64 in a choice on an array value")
    return Num(_np.int64(x), int, x, x)


def _ptype(x):
    """The Python number type x is or stands for (None: not one)."""
    t = type(x)
    if t is Num:
        return x._t
    return t if t in (bool, int, float) else None


def _choose(b, x, y):
    """The value the program chooses: x where b, else y."""
    if x is y:
        return x
    tx, ty = _ptype(x), _ptype(y)
    if tx is not None and tx is ty:
        if type(x) is not Num and type(y) is not Num and x == y and (
                tx is not float or math.copysign(1.0, x) == math.copysign(1.0, y)):
            return x
        u, v = _num_of(x, tx), _num_of(y, tx)
        r = _core._scalar_of(_core.where(b, u._v, v._v))
        if tx is float:
            return Num(r, float)
        return Num(r, tx, min(u._lo, v._lo), max(u._hi, v._hi))
    if type(x) is _ndarray and type(y) is _ndarray and _core._is_deferred_scalar(x) and \
            _core._is_deferred_scalar(y) and x.dtype == y.dtype:
        return _core._scalar_of(_core.where(b, x, y))
    stop("a choice on an array value between values that are not two values of one type")


def _select(c, x, y):
    """`x() if c else y()`."""
    b = _cond(c)
    if b is None:
        return x() if c else y()
    try:
        u = x()
        v = y()
    except Exception as e:  # noqa: BLE001 (the ordinary run raises it if that branch is taken)
        stop(f"a branch of a conditional expression on an array value raised {type(e).__name__}")
    return _choose(b, u, v)


def _pick(b, x, y):
    if type(b) is bool:  # (an inner `if` on a Python value: Python's choice)
        return x if b else y
    return _choose(b, x, y)


def _test(c):
    """The condition of an `if` inside a branch: a 0-d bool array (an array
    value) or a Python bool (the condition's truth, taken once)."""
    b = _cond(c)
    return bool(c) if b is None else b


def _stored(t, v):
    """v as `X[...] = v` stores it into an array of dtype t, where that is
    exact: a value of dtype t, or a Python number (or Num) NumPy converts
    to t without a check that depends on its value."""
    if type(v) is Num:
        return v.stored_as(t)
    if type(v) in _PY_SCALARS:
        try:
            if _np.result_type(t, v) != t:
                raise TypeError
            return _np.asarray(v, dtype=t)[()]
        except (TypeError, ValueError, OverflowError):
            stop("a choice on an array value storing a Python number NumPy would convert otherwise")
    if (type(v) is _ndarray or isinstance(v, _np.generic)) and v.dtype == t:
        return v
    stop("a choice on an array value storing a value of another type")


def _store(b, v, old, taken, nested=()):
    """The value `X[idx] = v` leaves at X[idx] when the branch storing it is
    `taken` (True: the `if` branch) as b says, and the `if`s nested in it as
    `nested` ((condition, taken) pairs) say: v converted as NumPy stores it,
    or old."""
    if v is old:
        return old
    if type(old) is not _ndarray:
        stop("a choice on an array value storing into something other than a numfuse array")
    mask = b if taken else ~b
    for c, t in nested:
        if type(c) is bool:
            if c != t:
                return old  # (a Python condition that leads elsewhere)
            continue
        mask = mask & (c if t else ~c)
    v = _stored(old.dtype, v)
    r = _core.where(mask, v, old)
    if r.shape != old.shape:
        stop("a choice on an array value storing a value of another shape")
    return _core._scalar_of(r) if r.ndim == 0 else r


def _val(x, v):
    """The value of `x[...] = v` in rewritten code: a Num stored into a
    numfuse array as NumPy stores the Python number it stands for."""
    if type(v) is Num and type(x) is _ndarray:
        return v.stored_as(x.dtype)
    return v


def _conv(f, x):
    """`int(x)`, `float(x)`, `bool(x)` in rewritten code: of a value the
    program computes, a Num."""
    if f is int or f is float or f is bool:
        if type(x) is Num:
            return x.as_type(f)
        if _deferred(x):
            return Num.of_scalar(x).as_type(f)
    return f(x)


def _item(x):
    """`x.item()` in rewritten code: of an element the program computes, a Num."""
    if _deferred(x):
        return Num.of_scalar(x)
    return x.item()


def extreme(args, greater):
    """Builtin max/min (`greater`) of Python numbers of one type, some of
    them Nums: Python's pick (the first, replaced by each later one that
    compares greater or less) as the program's choice."""
    t = _ptype(args[0])
    if t is None or any(_ptype(x) is not t for x in args[1:]):
        stop("max/min of a number the program computes with values of another type")
    best = args[0]
    for x in args[1:]:
        better = _num_of(x, t) > _num_of(best, t) if greater else _num_of(x, t) < _num_of(best, t)
        best = _choose(_cond(better), x, best)
    return best


def _fail(e):
    stop(f"a branch of a choice on an array value raised {type(e).__name__}")


def _imm(x):
    """x, for `x op= y` in a branch: only of values that op= rebinds."""
    t = type(x)
    if t in _PY_SCALARS or t is Num or isinstance(x, _np.generic) or (t is _ndarray and
                                                                      _core._is_deferred_scalar(x)):
        return x
    stop("an in-place update in a branch of a choice on an array value")


def _is_bool(x):
    """Whether x is a bool the program computes: a deferred np.bool_ (True),
    a Python bool (Num of bool: False), else None."""
    if type(x) is bool:
        return False
    if type(x) is Num:
        return False if x._t is bool else None
    if type(x) is _ndarray and x.dtype == _np.bool_ and _core._is_deferred_scalar(x):
        return True
    return None


def _logic(x, rest, is_and, truth):
    """`x and f()...` / `x or f()...` (rest: the later operands' lambdas).
    As a value (truth False) both operands must be bools of one kind (Python
    returns one of them); where only its truth counts (an `if` test), it is
    the truth as a 0-d bool array."""
    for f in rest:
        b = _cond(x)
        if b is None:  # (a Python value: Python decides, and stops here or goes on)
            if bool(x) != is_and:
                return x
            x = f()
            continue
        try:
            y = f()
        except Exception as e:  # noqa: BLE001 (the ordinary run raises it if it gets there)
            stop(f"an operand of `and`/`or` after an array value raised {type(e).__name__}")
        if truth:
            c = _cond(y)
            x, y = b, (_np.bool_(bool(y)) if c is None else c)
        else:
            kx, ky = _is_bool(x), _is_bool(y)
            if kx is None or kx != ky:
                stop("`and`/`or` of an array value with a value of another type (Python returns one of them)")
        x = (x & y) if is_and else (x | y)
    return x


def _and(x, *rest):
    return _logic(x, rest, True, False)


def _or(x, *rest):
    return _logic(x, rest, False, False)


def _and_truth(x, *rest):
    return _logic(x, rest, True, True)


def _or_truth(x, *rest):
    return _logic(x, rest, False, True)


def _not(x):
    """`not x`: of a value the program computes, a Python bool it computes."""
    b = _cond(x)
    if b is None:
        return not x
    return Num(b == False, bool, 0, 1)  # noqa: E712 (an array comparison)


_HELPERS = {_SELECT: _select, _COND: _cond, _PICK: _pick, _STORE: _store, _FAIL: _fail, _IMM: _imm, _VAL: _val,
            _CONV: _conv, _ITEM: _item, _AND: _and, _OR: _or, _NOT: _not, _TEST: _test, _ANDT: _and_truth,
            _ORT: _or_truth}


# -- Python numbers the program computes ----------------------------------------


def _fits(lo, hi, t):
    if t.kind == "b":
        return True
    if t.kind in "iu":
        info = _np.iinfo(t)
        return info.min <= lo and hi <= info.max
    return True


class Num:
    """A Python number (int, float or bool) the program computes: the value
    of `int(a[i])`, of `1 if c else 0`, of `crc >> 1` after those. ``_v`` is
    its value as a 0-d numfuse value (int64, float64 or bool), ``_t`` the
    Python type it stands for (``isinstance`` sees it), ``_lo``/``_hi`` the
    bounds of an int's value, kept so that every operation stays exact: a
    Python int never overflows, so an operation whose result could leave
    int64 (or a check NumPy makes on the value) stops the trace."""

    __slots__ = ("_v", "_t", "_lo", "_hi", "_src")
    __array_ufunc__ = None  # (an array's operators defer to ours)

    def __init__(self, v, t, lo=None, hi=None, src=None):
        self._v, self._t, self._lo, self._hi = v, t, lo, hi
        self._src = src  # (`int(a[i])` itself: the element read, for __index__)
        if t is not float and not (_I64[0] <= lo and hi <= _I64[1]):
            stop("a Python int the program computes could leave int64")

    @property
    def __class__(self):
        return self._t

    @staticmethod
    def of_scalar(x):
        """The Python number `x.item()` gives for a deferred scalar x."""
        k = x.dtype.kind
        if k == "b":
            return Num(x, bool, 0, 1)
        if k in "iu":
            info = _np.iinfo(x.dtype)
            if info.max > _I64[1]:
                stop("a uint64 element read as a Python int")
            return Num(x.astype(_np.int64), int, int(info.min), int(info.max), x)
        if k == "f":
            return Num(x.astype(_np.float64), float)
        stop(f"a {x.dtype} element read as a Python number")

    def as_type(self, f):
        """int(self), float(self), bool(self)."""
        if f is self._t:
            return self
        if f is float:
            return Num(self._v.astype(_np.float64), float)
        if f is bool:
            return Num(self._v != 0, bool, 0, 1)
        if self._t is bool:
            return Num(self._v.astype(_np.int64), int, 0, 1)
        stop("int() of a Python float the program computes (its range is not known)")

    def in_dtype(self, dtype):
        """The value as NumPy converts this Python number next to an array of
        `dtype` (a deferred scalar of the dtype the operation computes in)."""
        t = _np.result_type(dtype, self._t(0))
        if t.kind in "iu" and not _fits(self._lo, self._hi, t):
            stop("a Python int the program computes meets an array whose dtype may not hold it")
        return self._v if self._v.dtype == t else self._v.astype(t)

    def stored_as(self, t):
        """The value `X[...] = self` stores into an array of dtype t."""
        t = _np.dtype(t)
        if t.kind == "b":
            return self._v if self._t is bool else self._v != 0
        if t.kind in "iu":
            if self._t is float:
                stop("a Python float the program computes stored into an integer array")
            if not _fits(self._lo, self._hi, t):
                stop("a Python int the program computes stored into an array whose dtype may not hold it")
        elif t.kind not in "fc":
            stop(f"a Python number the program computes stored into a {t} array")
        return self._v.astype(t)

    def _needs_value(self, *args):
        stop("Python needs the value of a number the program computes (a choice on an array value, int(a[i]))")

    def _index(self):
        """`int(a[i])` as a slice bound, an index or a loop bound: an
        argument's element is read now (a content read: that argument is
        guarded by content, core trace.h); any other value stops the trace."""
        if self._src is not None:
            v = _core._trace_int(self._src)
            if v is not None:
                return v
        self._needs_value()

    def __array__(self, dtype=None, copy=None):
        self._needs_value()


def _bits(lo, hi):
    return max(abs(lo).bit_length(), abs(hi).bit_length())


def _int_bounds(op, a, b):
    """Bounds of `a op b` for int intervals a, b; None when not known exactly."""
    (l1, h1), (l2, h2) = a, b
    if op in ("add",):
        return l1 + l2, h1 + h2
    if op == "sub":
        return l1 - h2, h1 - l2
    if op == "mul":
        c = (l1 * l2, l1 * h2, h1 * l2, h1 * h2)
        return min(c), max(c)
    if op in ("floordiv", "mod"):
        if l2 <= 0 <= h2:
            return None  # (ZeroDivisionError for one value)
        if op == "mod":
            m = max(abs(l2), abs(h2))
            return (0 if l2 > 0 else -(m - 1)), (m - 1 if h2 > 0 else 0)
        c = (l1 // l2, l1 // h2, h1 // l2, h1 // h2)
        return min(c), max(c)
    if op in ("and", "or", "xor"):
        n = max(_bits(l1, h1), _bits(l2, h2))
        if l1 >= 0 and l2 >= 0:
            return 0, (min(h1, h2) if op == "and" else (1 << n) - 1)
        return -(1 << n), (1 << n) - 1
    if op in ("lshift", "rshift"):
        if not (0 <= l2 and h2 < 63):
            return None  # (a shift the program would compute differently: negative, or by 63 or more)
        c = [x << k if op == "lshift" else x >> k for x in (l1, h1) for k in (l2, h2)]
        return min(c), max(c)
    if op == "pow":
        if l2 != h2 or l2 < 0 or (l2 > 64 and max(abs(l1), abs(h1)) > 1):
            return None  # (a negative exponent is a float; a large one overflows int64)
        c = [l1 ** l2, h1 ** l2] + ([0] if l1 <= 0 <= h1 else [])
        return min(c), max(c)
    return None


_ARRAY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
              "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "and": operator.and_,
              "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
              "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
              "ge": operator.ge}
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def _num_binary(name, reflected):
    op = _ARRAY_OPS[name]

    def method(self, other):
        if isinstance(other, _ndarray) or isinstance(other, _np.generic):
            v = self.in_dtype(other.dtype)
            return op(other, v) if reflected else op(v, other)
        to = _ptype(other)
        if to is None:
            return NotImplemented
        x, y = (_num_of(other, to), self) if reflected else (self, _num_of(other, to))
        return _arith(name, x, y)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _arith(name, x, y):
    """`x op y` of two Nums as Python computes it on the numbers they stand for."""
    op = _ARRAY_OPS[name]
    tx, ty = x._t, y._t
    if float in (tx, ty):
        if name in _COMPARE:
            for n in (x, y):  # (Python compares an int with a float exactly; float64 does not above 2**53)
                if n._t is not float and not (-_EXACT_FLOAT_INT <= n._lo and n._hi <= _EXACT_FLOAT_INT):
                    stop("a Python int the program computes compared with a float beyond 2**53")
            return Num(op(x.as_type(float)._v, y.as_type(float)._v), bool, 0, 1)
        if name in ("truediv", "floordiv", "mod"):
            if y._t is float or y._lo <= 0 <= y._hi:
                stop("a division by a Python number the program computes that may be zero")
        elif name not in ("add", "sub", "mul"):
            stop(f"`{name}` of Python floats the program computes")  # (** overflows with OverflowError)
        return Num(op(x.as_type(float)._v, y.as_type(float)._v), float)
    if name in _COMPARE:
        return Num(op(x._v, y._v), bool, 0, 1)
    if name == "truediv":
        for n in (x, y):
            if not (-_EXACT_FLOAT_INT <= n._lo and n._hi <= _EXACT_FLOAT_INT):
                stop("a true division of Python ints the program computes beyond 2**53")
        if y._lo <= 0 <= y._hi:
            stop("a division by a Python number the program computes that may be zero")
        return Num(x.as_type(float)._v / y.as_type(float)._v, float)
    if tx is bool and ty is bool and name in ("and", "or", "xor"):
        return Num(op(x._v, y._v), bool, 0, 1)
    bounds = _int_bounds(name, (x._lo, x._hi), (y._lo, y._hi))
    if bounds is None:
        stop(f"`{name}` of Python ints the program computes, not exact in int64")
    xv = x._v if tx is int else x._v.astype(_np.int64)
    yv = y._v if ty is int else y._v.astype(_np.int64)
    return Num(op(xv, yv), int, *bounds)


def _num_unary(name):
    def method(self):
        if self._t is float:
            if name == "invert":
                stop("~ of a Python float")
            return Num({"neg": operator.neg, "pos": operator.pos, "abs": abs}[name](self._v), float)
        lo, hi = self._lo, self._hi
        v = self._v if self._t is int else self._v.astype(_np.int64)
        if name == "neg":
            return Num(-v, int, -hi, -lo)
        if name == "pos":
            return Num(v, int, lo, hi)
        if name == "abs":
            return Num(abs(v), int, 0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
        return Num(~v, int, -hi - 1, -lo - 1)

    method.__name__ = f"__{name}__"
    return method


for _n in _ARRAY_OPS:
    setattr(Num, f"__{_n}__", _num_binary(_n, False))
    if _n not in _COMPARE:  # (Python reflects comparisons itself)
        setattr(Num, f"__r{_n}__", _num_binary(_n, True))
for _n in ("neg", "pos", "abs", "invert"):
    setattr(Num, f"__{_n}__", _num_unary(_n))
Num.__index__ = Num._index
for _n in ("float", "int", "bool", "complex", "round", "trunc", "floor", "ceil", "hash", "repr", "str",
           "format", "divmod", "rdivmod", "getnewargs", "reduce", "reduce_ex", "copy", "deepcopy", "len", "iter",
           "getattr"):
    setattr(Num, f"__{_n}__", Num._needs_value)
del _n

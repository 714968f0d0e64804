"""numfuse.jit: choices on array values inside a trace, as selects.

``a if c else b`` and ``if c: ... else: ...`` where ``c`` is an array value
(``1 if s[i] + s[j] == 3 else 0``, ``if d[i, k] + d[k, j] < d[i, j]:
d[i, j] = d[i, k] + d[k, j]``) need the value of ``c`` in Python, which a
trace does not have: the trace stops there. Then the function it stopped in
is rewritten from its source (``ast``) and the call traced again with that
code (the function object's ``__code__`` swapped in for the trace only):

- ``a if c else b`` becomes ``_select(c, lambda: a, lambda: b)``;
- an ``if`` statement whose branches only assign (names, elements or slices
  ``X[idx]`` of arrays named by a name, with an index made of names and
  constants; ``x += ...``; tuple assignments such as a swap) becomes::

      c_ = c
      b_ = _cond(c_)             # not None: a 0-d array inside a trace
      if b_ is not None:
          (both branches, each into its own temporaries; then for every
           name either assigns: name = _pick(b_, then value, else value);
           for every element or slice either stores: X[idx] =
           _store(b_, value, X[idx], branch))
      elif c_:
          (the branch as written)
      else:
          (the other branch as written)

Outside a trace, or with a Python condition, the code does what the
original does (the condition evaluated and tested once, one branch run).
With an array condition both branches run and the program chooses, where
that is exact:

- two 0-d numfuse values (element reads) of one dtype: a deferred scalar
  of that dtype, as either is;
- two Python scalars of one type (``1`` / ``0``): a _Select, which stands for
  a Python scalar -- a weak operand: meeting an array of dtype D through an
  operator it becomes the select in the dtype NumPy gives the Python scalar
  next to D (with NumPy's range check for both values). A use of its value
  in Python stops the trace;
- a store: the value in the array's dtype exactly as NumPy would store it
  (the same dtype, or a Python scalar that converts exactly), else stop.

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

# The rewritten code calls the helpers through constants (no name is added
# to the function's globals): these strings, replaced in the compiled code.
_SELECT, _COND, _PICK, _STORE, _FAIL, _IMM = ("\x00numfuse.jit: " + n + "\x00"
                                              for n in ("select", "cond", "pick", "store", "fail", "imm"))
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


def _assign(name, value):
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


class _Branch:
    """One branch of an `if` as temporaries: `names` (each name it assigns ->
    the temporary holding its last value), `stores` ((target, temporary) in
    order) and the statements computing them; `ok` False if it does more."""

    def __init__(self, stmts, prefix):
        self.temps, self.names, self.stores, self.ok = [], {}, [], True
        stored = set()  # arrays this branch stores into (not read after)
        k = itertools.count()
        for s in stmts:
            if isinstance(s, ast.Pass):
                continue
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                target, value = s.targets[0], s.value
            elif isinstance(s, ast.AugAssign) and (isinstance(s.target, ast.Name) or _store_target(s.target)):
                target = s.target
                value = ast.BinOp(_call(_IMM, _load(target)) if isinstance(target, ast.Name) else _load(target),
                                  s.op, s.value)
            else:
                self.ok = False
                return
            if not _lambda_safe(value) or _binds_names(value) or _names(value) & stored:
                self.ok = False
                return
            value = _Rename(self.names).visit(value)
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
                    self.stores.append((t, tmp))
                    stored.add(t.value.id)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, indent):
        self.count = 0
        self.indent = indent
        self.spans = []  # the conditions' source spans: (line, column, end line, end column)

    def _span(self, t):
        self.spans.append((t.lineno, t.col_offset + self.indent, t.end_lineno, t.end_col_offset + self.indent))

    def visit_ClassDef(self, node):  # (a class body's scope: lambdas would not see its names)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if not (_lambda_safe(node.body) and _lambda_safe(node.orelse)):
            return node
        self.count += 1
        self._span(node.test)
        no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                defaults=[])
        call = _call(_SELECT, node.test, ast.Lambda(no_args, node.body), ast.Lambda(no_args, node.orelse))
        return ast.copy_location(call, node)

    def visit_If(self, node):
        test = node.test
        self.generic_visit(node)
        k = self.count
        then, other = (_Branch(copy.deepcopy(node.body), f"__nf{k}t"),
                       _Branch(copy.deepcopy(node.orelse), f"__nf{k}e"))
        if not (then.ok and other.ok) or not (then.names or then.stores or other.names or other.stores):
            return node
        assigned = set(then.names) | set(other.names)
        if any(_names(t) & assigned for t, _ in then.stores + other.stores):
            return node  # (a store whose place a branch moves)
        self.count += 1
        self._span(test)
        c, b = f"__nf{k}c", f"__nf{k}b"
        work = then.temps + other.temps
        for name in list(then.names) + [n for n in other.names if n not in then.names]:
            tv, ev = then.names.get(name, name), other.names.get(name, name)
            work.append(_assign(f"__nf{k}v_{name}", _call(_PICK, ast.Name(b, ast.Load()), ast.Name(tv, ast.Load()),
                                                          ast.Name(ev, ast.Load()))))
        for branch, taken in ((then, True), (other, False)):
            for target, tmp in branch.stores:
                work.append(ast.Assign(targets=[target], value=_call(
                    _STORE, ast.Name(b, ast.Load()), ast.Name(tmp, ast.Load()), _load(target), ast.Constant(taken))))
        fail = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=f"__nf{k}x",
                                 body=[ast.Expr(_call(_FAIL, ast.Name(f"__nf{k}x", ast.Load())))])
        chosen = [ast.Try(body=work, handlers=[fail], orelse=[], finalbody=[])]
        chosen += [_assign(n, ast.Name(f"__nf{k}v_{n}", ast.Load())) for n in
                   list(then.names) + [n for n in other.names if n not in then.names]]
        out = [
            _assign(c, test),
            _assign(b, _call(_COND, ast.Name(c, ast.Load()))),
            ast.If(test=ast.Compare(ast.Name(b, ast.Load()), [ast.IsNot()], [ast.Constant(None)]), body=chosen,
                   orelse=[ast.If(test=ast.Name(c, ast.Load()), body=node.body, orelse=node.orelse)]),
        ]
        for s in out:
            ast.copy_location(s, node)
        return out


def _with_helpers(code):
    """code with the helpers in place of their constants (nested code too)."""
    consts = tuple(_HELPERS.get(c, c) if type(c) is str else
                   _with_helpers(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_consts=consts)


def rewrite(code):
    """(the code of a function whose choices on values are selects -- same
    arguments, free variables and line numbers --, the conditions' source
    spans), or None when it has none or its source cannot be rewritten."""
    if code in _rewritten:
        return _rewritten[code]
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
                r = _Rewriter(indent)
                fdef = r.visit(fdef)
                if r.count:
                    # Free variables stay free: the function is defined in
                    # an outer one that has them as arguments.
                    outer = ast.FunctionDef(
                        name="__numfuse_outer__",
                        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in code.co_freevars],
                                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
                        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
                    ast.copy_location(outer, fdef)
                    mod = ast.fix_missing_locations(ast.Module(body=[outer], type_ignores=[]))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # ("'str' object is not callable")
                        mcode = compile(mod, code.co_filename, "exec", dont_inherit=True)
                    ocode = next(c for c in mcode.co_consts if isinstance(c, types.CodeType))
                    fcode = next(c for c in ocode.co_consts if isinstance(c, types.CodeType) and c.co_name == code.co_name)
                    if (fcode.co_freevars == code.co_freevars and fcode.co_argcount == code.co_argcount and
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


def stopped_in(tb):
    """The code of the innermost frame of a traceback outside numfuse, if it
    stopped in the condition of a choice its rewrite makes a select."""
    code = lasti = None
    while tb is not None:
        c = tb.tb_frame.f_code
        if not c.co_filename.startswith(_PKG):
            code, lasti = c, tb.tb_lasti
        tb = tb.tb_next
    r = rewrite(code) if code is not None else None
    if r is None:
        return None
    try:
        line, _, col, _ = next(itertools.islice(code.co_positions(), lasti // 2, None))
    except (StopIteration, ValueError):
        return None
    if line is None or col is None:
        return None
    for l0, c0, l1, c1 in r[1]:
        if (l0, c0) <= (line, col) < (l1, c1):
            return code
    return None


# -- the helpers the rewritten code calls --------------------------------------


def _cond(c):
    """c as a 0-d bool array when it is an array value inside a trace (both
    branches run, the program chooses), else None (Python chooses)."""
    if type(c) is not _ndarray or c.ndim != 0 or not _core._trace_capturing():
        return None
    return c if c.dtype == _np.bool_ else c != 0


def _choose(b, x, y):
    """The value the program chooses: x where b, else y."""
    if x is y:
        return x
    tx, ty = type(x), type(y)
    if tx is Select or ty is Select:
        stop("a choice on an array value between values chosen by another")
    if tx is ty and tx in _PY_SCALARS:
        if x == y and (tx is not float or math.copysign(1.0, x) == math.copysign(1.0, y)):
            return x
        return Select(b, x, y)
    if tx is _ndarray and ty is _ndarray and _core._is_deferred_scalar(x) and _core._is_deferred_scalar(y) \
            and x.dtype == y.dtype:
        return _core.where(b, x, y)[()]
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
    return _choose(b, x, y)


def _store(b, v, old, taken):
    """The value `X[idx] = v` leaves at X[idx] when the branch storing it is
    `taken` (True: the `if` branch) as b says: v converted as NumPy stores it,
    or old."""
    if v is old:
        return old
    if type(old) is not _ndarray:
        stop("a choice on an array value storing into something other than a numfuse array")
    t = old.dtype
    if type(v) is Select:
        v = v.in_dtype(t)
    elif type(v) in _PY_SCALARS:
        try:
            if _np.result_type(t, v) != t:
                raise TypeError
            v = _np.asarray(v, dtype=t)[()]
        except (TypeError, ValueError, OverflowError):
            stop("a choice on an array value storing a Python number NumPy would convert otherwise")
    if type(v) is _ndarray:
        if v.dtype != t:
            stop("a choice on an array value storing a value of another dtype")
    elif not isinstance(v, _np.generic) or v.dtype != t:
        stop("a choice on an array value storing a value of another type")
    r = _core.where(b, v, old) if taken else _core.where(b, old, v)
    if r.shape != old.shape:
        stop("a choice on an array value storing a value of another shape")
    return r[()] if r.ndim == 0 else r


def _fail(e):
    stop(f"a branch of a choice on an array value raised {type(e).__name__}")


def _imm(x):
    """x, for `x op= y` in a branch: only of values that op= rebinds."""
    t = type(x)
    if t in _PY_SCALARS or t is Select or isinstance(x, _np.generic) or (t is _ndarray and
                                                                         _core._is_deferred_scalar(x)):
        return x
    stop("an in-place update in a branch of a choice on an array value")


_HELPERS = {_SELECT: _select, _COND: _cond, _PICK: _pick, _STORE: _store, _FAIL: _fail, _IMM: _imm}


class Select:
    """A Python scalar chosen by an array value inside a trace (two values of
    one type; module docstring). ``isinstance`` sees that type."""

    __slots__ = ("_c", "_a", "_b")
    __array_ufunc__ = None  # (an array's operators defer to ours)

    def __init__(self, c, a, b):
        self._c, self._a, self._b = c, a, b

    @property
    def __class__(self):
        return type(self._a)

    def in_dtype(self, dtype):
        """The select as a 0-d numfuse value of the dtype NumPy gives this
        Python scalar next to an array of `dtype` (a deferred scalar)."""
        try:
            t = _np.result_type(dtype, self._a)
            if _np.result_type(dtype, self._b) != t:
                raise TypeError
            a, b = _np.asarray(self._a, dtype=t)[()], _np.asarray(self._b, dtype=t)[()]  # (NumPy scalars: constants)
        except (TypeError, ValueError, OverflowError):
            stop("a choice on an array value between Python numbers NumPy types differently next to an array")
        return _core.where(self._c, a, b)[()]

    def _needs_value(self, *args):
        stop("Python needs the value of a choice on an array value")

    def __array__(self, dtype=None, copy=None):
        self._needs_value()


def _select_binary(op, reflected):
    def method(self, other):
        if isinstance(other, _ndarray):
            s = self.in_dtype(other.dtype)
            return op(other, s) if reflected else op(s, other)
        if type(other) is Select:  # (of one condition: branch with branch)
            if other._c is not self._c:
                stop("two choices on array values combined")
            oa, ob = other._a, other._b
        elif type(other) in _PY_SCALARS:  # (a Python scalar: both values, in Python)
            oa = ob = other
        else:
            return NotImplemented
        try:
            a, b = (op(oa, self._a), op(ob, self._b)) if reflected else (op(self._a, oa), op(self._b, ob))
        except Exception as e:  # noqa: BLE001
            stop(f"a choice on an array value: {type(e).__name__} in one branch")
        if type(a) is not type(b) or type(a) not in _PY_SCALARS:
            stop("a choice on an array value whose branches' types part")
        return a if a == b and type(a) is not float else Select(self._c, a, b)

    return method


_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
        "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "and": operator.and_,
        "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
        "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
        "ge": operator.ge}
for _n, _op in _OPS.items():
    setattr(Select, f"__{_n}__", _select_binary(_op, False))
    if _n not in ("eq", "ne", "lt", "le", "gt", "ge"):  # (Python reflects comparisons itself)
        setattr(Select, f"__r{_n}__", _select_binary(_op, True))
for _n in ("neg", "pos", "abs", "invert", "float", "int", "index", "bool", "complex", "round", "trunc", "floor",
           "ceil", "hash", "repr", "str", "format", "divmod", "rdivmod", "getnewargs", "reduce", "reduce_ex",
           "copy", "deepcopy", "len", "iter", "getattr"):
    setattr(Select, f"__{_n}__", Select._needs_value)
del _n, _op

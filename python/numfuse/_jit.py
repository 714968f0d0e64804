"""``numfuse.jit``: a whole Python function as one compiled program.

The first call with a given signature traces the function: it runs once
with every numfuse operation recorded and none computed (the core's
capture, ``src/trace/trace.h``), the iterations of the ``range`` loops it
runs marked (``builtins.range`` is a marking range while the trace runs). The core rerolls the recorded operations into loops (iterations of
the same structure whose extents, offsets and integer constants move
affinely become one loop), lowers the program to one C kernel and compiles
it. That call and later ones whose guards hold run the kernel on their
arguments, without executing the Python body.

Parameters: a Python float or int argument that only reaches numfuse
operations is read by the program at each run (a new value does not
retrace). While the trace runs it is a stand-in (_Param); any use of its
value in Python (``range(n)``, a slice bound, an ``if``), or by an
operation that decides on it (``x ** e``), makes it a guard. An int
argument is a parameter while |n| < 2**53 (the program reads parameters as
float64); a run whose int does not fit the integer type an operation
converted it to runs the ordinary way (which raises NumPy's OverflowError).

Values of the arguments: an integer Python needs from an array argument
the call has not written yet (a slice bound ``data[indptr[i]:indptr[i +
1]]``, ``int(indptr[i])`` used as a bound, ``indptr.tolist()``, the indices
of a gather ``x[indices[lo:hi]]`` or a scatter ``y[indices[lo:hi]] += v``)
is read from the argument's memory (the
call's values: nothing runs while a trace records) and that argument is
guarded by its bytes from then on (``_cguard``). When such values differ
at three calls the function stops reading them (``_content``) instead of
tracing at every call.

Guards (a call that breaks one traces again, up to ``max_traces``
signatures per function): each array argument's dtype, shape, strides and
which arguments share memory; the type and value of every other argument
(Python scalars that are not parameters, strings, None, tuples of those);
the objects the function's globals and closure cells named in its code
held at the trace (arrays by identity); the bytes of the arrays whose values
a trace read.

A trace stops (TraceAbort) when the function needs a value in Python: an
element read as a Python number (``float(a[i])``, ``if a[i] > 0``), printing,
``.item()``, a conversion to NumPy, a NumPy fallback. The function then runs
the ordinary way -- now and for later calls with that signature -- and
``explain()`` says why. Its Python body has run twice on that first call
(once traced), as with ``jax.jit``. A trace that stops in the condition of a
conditional expression (``1 if a[i] == b[j] else 0``) or of an ``if`` whose
branches only assign is traced again with the function it stopped in
rewritten so that the choice is a select of the program (_jit_select).
"""

import builtins as _builtins
import collections
import functools
import itertools
import operator as _operator
import types
import weakref

import numpy as _np

from . import _core
from . import _jit_select


class TraceAbort(BaseException):
    """A trace stopped: the function needs what a compiled program cannot
    give ahead of the call. (A BaseException, so that a traced function's own
    ``except Exception`` does not swallow it.)"""


_core._set_trace_abort(TraceAbort)
_ndarray = _core.ndarray

_ids = itertools.count(1)
_range = _builtins.range  # (the name `range` is the marking one while a trace runs)
_LOOP_BEGIN, _ITER_BEGIN, _LOOP_END = 0, 1, 2


class _MarkedIter:
    """An iterator over a range that marks the loop's iterations in the
    capture (nothing when no capture runs)."""

    __slots__ = ("_it", "_id", "_state", "__weakref__")

    def __init__(self, it):
        self._it = it
        self._id = next(_ids)
        self._state = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._state == 0:
            _core._trace_mark(_LOOP_BEGIN, self._id)
            self._state = 1
        elif self._state == 2:
            raise StopIteration
        try:
            v = next(self._it)
        except StopIteration:
            self._state = 2
            _core._trace_mark(_LOOP_END, self._id)
            raise
        _core._trace_mark(_ITER_BEGIN, self._id)
        return v

    def __length_hint__(self):
        return self._it.__length_hint__()

    def __del__(self):
        # A loop left by `break` (CPython drops the iterator right there).
        if self._state == 1:
            self._state = 2
            try:
                _core._trace_mark(_LOOP_END, self._id)
            except BaseException:  # noqa: BLE001 (interpreter teardown)
                pass


class _ArrayIter(_MarkedIter):
    """iter(a) of a numfuse array inside a trace: its elements (NumPy scalars,
    deferred) or rows by indexing, each read after its iteration's mark (the
    read belongs to the iteration), the loop marked for rerolling."""

    __slots__ = ("_a",)

    def __init__(self, a):
        super().__init__(iter(_range(a.shape[0])))
        self._a = a

    def __next__(self):
        return self._a[super().__next__()]


_core._set_trace_iter(_ArrayIter)


class _Range:
    """``range`` as a traced function sees it: the same object in every
    respect, but iterating it marks the loop for rerolling."""

    __slots__ = ("_r",)

    def __init__(self, *args):
        self._r = args[0]._r if len(args) == 1 and isinstance(args[0], _Range) else _range(*args)

    @classmethod
    def _of(cls, r):
        x = cls.__new__(cls)
        x._r = r
        return x

    def __iter__(self):
        return _MarkedIter(iter(self._r))

    def __reversed__(self):
        return _MarkedIter(reversed(self._r))

    def __len__(self):
        return len(self._r)

    def __getitem__(self, k):
        v = self._r[k]
        return _Range._of(v) if isinstance(v, _range) else v

    def __contains__(self, x):
        return x in self._r

    def __eq__(self, other):
        return self._r == (other._r if isinstance(other, _Range) else other)

    def __hash__(self):
        return hash(self._r)

    def __repr__(self):
        return repr(self._r)

    def __bool__(self):
        return bool(self._r)

    def __reduce__(self):
        return (_range, (self._r.start, self._r.stop, self._r.step))

    start = property(lambda self: self._r.start)
    stop = property(lambda self: self._r.stop)
    step = property(lambda self: self._r.step)

    def count(self, x):
        return self._r.count(x)

    def index(self, x):
        return self._r.index(x)


_max, _min = _builtins.max, _builtins.min


_is_deferred, _where, _scalar_of = _core._is_deferred_scalar, _core.where, _core._scalar_of


def _traced_extreme(builtin, greater):
    """``max`` / ``min`` as a traced function sees them: of two or more 0-d
    numfuse values of one dtype (element reads, `a[i, j] + 1`), or of Python
    numbers of one type the program computes (_jit_select.Num), the value
    Python's would pick -- the first, replaced by each later one that
    compares greater (less) -- as a select the program computes, so a
    dynamic program's `max(t[i, j - 1], t[i + 1, j])` does not stop the
    trace. Anything else is the builtin's."""

    def extreme(*args, **kwargs):
        if kwargs or len(args) < 2:
            return builtin(*args, **kwargs)
        a = args[0]
        if not _is_deferred(a):
            if any(type(x) is _jit_select.Num for x in args):  # (Python numbers the program computes)
                return _jit_select.extreme(args, greater)
            return builtin(*args, **kwargs)
        dt = a.dtype
        for b in args[1:]:
            if not _is_deferred(b) or b.dtype != dt:
                return builtin(*args, **kwargs)
        best = a
        for b in args[1:]:
            best = _where(b > best if greater else b < best, b, best)
        return _scalar_of(best)  # (a scalar, as the builtin's pick is)

    extreme.__name__ = builtin.__name__
    extreme.__doc__ = builtin.__doc__
    return extreme


_traced_max = _traced_extreme(_max, True)
_traced_min = _traced_extreme(_min, False)


def _codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _global_names(code):
    names = set()
    for c in _codes(code):
        names.update(c.co_names)
    return sorted(names)


_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_FLOAT = ("F",)  # a float argument in a guard key: a parameter, any value
_INT = ("I",)  # an int argument in a guard key: a parameter, any value below 2**53
_INT_LIMIT = 2**53


def _param_kind(v):
    """_FLOAT or _INT for an argument that can be a parameter, else None."""
    t = type(v)
    if t is float:
        return _FLOAT
    if t is int and -_INT_LIMIT < v < _INT_LIMIT:
        return _INT
    return None


class _Param:
    """A Python float or int argument while its function is traced. It
    stands for the value of every later call: given to numfuse operations,
    it is a parameter the compiled program reads at each run. Any other use
    of its value in Python (arithmetic with Python numbers, a comparison,
    ``math`` functions, formatting, ``x ** 2.0``, ``range(n)``, a slice
    bound) gives the traced value and makes the argument a guard: a call
    with another value traces again. ``isinstance(x, float)`` (or ``int``)
    holds, as for the number it stands for."""

    __slots__ = ("_v", "_i", "_used")

    def __init__(self, v, i, used):
        self._v = v
        self._i = i
        self._used = used

    @property
    def __class__(self):
        return type(self._v)

    def _value(self):
        self._used.add(self._i)
        return self._v

    def __getattr__(self, name):  # real, imag, is_integer(), hex(), ...
        return getattr(self._value(), name)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (float, (self._value(),))

    def __array__(self, dtype=None, copy=None):
        return _np.asarray(self._value(), dtype=dtype)


def _param_binary(name):
    def method(self, other):
        if isinstance(other, _core.ndarray):
            return NotImplemented  # (the array's own operator takes the parameter)
        if type(other) is _Param:
            other = other._value()
        v = self._value()
        op = getattr(type(v), name, None)  # (a float has no __and__: NotImplemented, then Python's TypeError)
        return NotImplemented if op is None else op(v, other)

    method.__name__ = name
    return method


def _param_unary(name):
    def method(self, *args):
        v = self._value()
        op = getattr(type(v), name, None)
        if op is None:  # (~x of a float)
            raise TypeError(f"bad operand type for unary {name}: '{type(v).__name__}'")
        return op(v, *args)

    method.__name__ = name
    return method


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "divmod", "and", "or", "xor", "lshift",
           "rshift"):
    setattr(_Param, f"__{_n}__", _param_binary(f"__{_n}__"))
    setattr(_Param, f"__r{_n}__", _param_binary(f"__r{_n}__"))
for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(_Param, f"__{_n}__", _param_binary(f"__{_n}__"))
for _n in ("neg", "pos", "abs", "invert", "float", "int", "bool", "round", "trunc", "floor", "ceil", "hash",
           "repr", "str", "format", "getnewargs"):
    setattr(_Param, f"__{_n}__", _param_unary(f"__{_n}__"))
del _n


def _param_index(self):
    """range(n), a slice bound, an index: the traced int (a guard from now
    on); a float's TypeError, as the float would raise."""
    return _operator.index(self._value())


_Param.__index__ = _param_index
_core._set_param_type(_Param)


def _value_key(v):
    """The guard of a non-array argument: its type and value, or None when
    it is of a kind a trace cannot be keyed by."""
    t = type(v)
    if t in _SCALARS or isinstance(v, _np.generic):
        return (t, v)
    if t is tuple or t is list:
        ks = []
        for x in v:
            k = _value_key(x)
            if k is None:
                return None
            ks.append(k)
        return (t, tuple(ks))
    if isinstance(v, _np.dtype) or (isinstance(v, type) and issubclass(v, _np.generic)):
        return (t, v)
    return None


class _Guard:
    """The objects the function's globals and closure cells held at the trace."""

    __slots__ = ("names", "values", "cells", "items")

    def __init__(self, fn):
        g = fn.__globals__
        self.names = [n for n in _global_names(fn.__code__) if n in g]
        self.values = [g[n] for n in self.names]
        self.items = list(zip(self.names, self.values))
        self.cells = [c.cell_contents for c in (fn.__closure__ or ()) if _has_contents(c)]

    def broken(self, fn):
        """The first name whose object changed since the trace, or None."""
        g = fn.__globals__
        for n, v in self.items:
            w = g.get(n, _missing)
            if w is not v and not (type(w) is type(v) and type(v) in _SCALARS and w == v):
                return f"global {n!r} changed"
        closure = fn.__closure__
        if closure or self.cells:
            cells = [c.cell_contents for c in (closure or ()) if _has_contents(c)]
            if len(cells) != len(self.cells) or any(a is not b for a, b in zip(cells, self.cells)):
                return "a closure variable changed"
        return None


_missing = object()


def _has_contents(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


class _Trace:
    __slots__ = ("program", "template", "guard", "runs", "rebuild")

    def __init__(self, program, template, guard):
        self.program = program
        self.template = template
        self.guard = guard
        self.runs = 0
        self.rebuild = _rebuilder(template)


class _Refused:
    __slots__ = ("reason", "guard")

    def __init__(self, reason, guard):
        self.reason = reason
        self.guard = guard


def _flatten(out, args, leaves):
    """The returned value's template (leaves: the numfuse arrays it holds,
    in order), or a string saying why it cannot be rebuilt."""
    for k, a in enumerate(args):
        if out is a and isinstance(a, _core.ndarray):
            return ("arg", k)
    if type(out) is _Param:  # a float or int argument returned as it came
        return ("arg", out._i)
    if isinstance(out, _core.ndarray):
        leaves.append(out)
        return ("scalar" if _core._is_deferred_scalar(out) else "array", len(leaves) - 1)
    t = type(out)
    if t is _jit_select.Num:  # (a Python number the program computes)
        if not isinstance(out._v, _core.ndarray):  # (a constant after all)
            return ("const", out._t(out._v))
        leaves.append(out._v)
        return ("py", out._t, len(leaves) - 1)
    if t in _SCALARS or isinstance(out, (_np.generic, _np.dtype, type)):  # (immutable: the same object)
        return ("const", out)
    if t is tuple or t is list:
        parts = []
        for x in out:
            p = _flatten(x, args, leaves)
            if isinstance(p, str):
                return p
            parts.append(p)
        return ("seq", t, parts)
    if t is dict:
        parts = []
        for k, x in out.items():
            p = _flatten(x, args, leaves)
            if isinstance(p, str):
                return p
            parts.append((k, p))
        return ("dict", parts)
    return f"it returns a {t.__name__}, which a program cannot rebuild"


def _rebuilder(tmpl):
    """_rebuild for one template as a function of (args, results), the common
    shapes without the walk: an array, a scalar, a tuple of those."""
    kind = tmpl[0]
    if kind == "array":
        k = tmpl[1]
        return lambda args, results: results[k]
    if kind == "scalar":
        k = tmpl[1]
        return lambda args, results: _core.scalar_result(results[k])
    if kind == "seq" and tmpl[1] is tuple and all(p[0] in ("array", "scalar") for p in tmpl[2]):
        parts = [(p[0] == "scalar", p[1]) for p in tmpl[2]]
        scalar = _core.scalar_result
        return lambda args, results: tuple(scalar(results[k]) if s else results[k] for s, k in parts)
    return lambda args, results: _rebuild(tmpl, args, results)


def _rebuild(tmpl, args, results):
    kind = tmpl[0]
    if kind == "array":
        return results[tmpl[1]]
    if kind == "scalar":
        return _core.scalar_result(results[tmpl[1]])
    if kind == "arg":
        return args[tmpl[1]]
    if kind == "py":
        return tmpl[1](_core.scalar_result(results[tmpl[2]]))
    if kind == "const":
        return tmpl[1]
    if kind == "seq":
        return tmpl[1](_rebuild(p, args, results) for p in tmpl[2])
    return {k: _rebuild(p, args, results) for k, p in tmpl[1]}


class JitFunction:
    """A function compiled by :func:`numfuse.jit` (see its docstring)."""

    def __init__(self, fn, max_traces=8):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._max = max_traces
        self._traces = collections.OrderedDict()
        self._log = collections.deque(maxlen=32)
        self._fguard = set()  # positions of float/int arguments guarded by value (not parameters)
        self._cguard = set()  # positions of array arguments guarded by content (their values read in Python)
        self._content = True  # whether traces may read arguments' values (off once contents keep changing)
        self._content_misses = 0
        self._rewrites = []  # codes traced rewritten (conditional expressions as selects)
        self.stats = {"calls": 0, "compiled_runs": 0, "traces": 0, "plain_runs": 0}

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self):
        return f"<numfuse.jit {self._fn.__qualname__}>"

    # -- calls -------------------------------------------------------------

    def _key(self, args, kwargs):
        """(guard key, (the array arguments in order, the parameters by
        position)) or (None, why). A float argument is a parameter (any
        value) unless a trace used its value in Python (self._fguard)."""
        if kwargs:
            names = sorted(kwargs)
            flat = args + tuple(kwargs[n] for n in names)
            parts = [tuple(names)]
        else:
            flat, parts = args, [()]
        arrays = []
        params = None
        keys = _core._jit_array_keys(flat)  # (dtype, shape, strides and shared memory of the arrays)
        for pos, v in enumerate(flat):
            k = keys[pos]
            if k is not None:
                parts.append(k)
                arrays.append(v)
                continue
            pk = _param_kind(v)
            if pk is not None:  # (the program reads every parameter it uses, guarded or not)
                if params is None:
                    params = [0.0] * len(flat)
                params[pos] = float(v)
                if pos not in self._fguard:
                    parts.append(pk)
                    continue
            if isinstance(v, _core.ndarray):  # (a subclass: by its own type)
                return None, f"an argument of type {type(v).__name__}"
            if isinstance(v, _np.ndarray):
                return None, "a NumPy array argument (pass numfuse arrays: numfuse.asarray)"
            k = _value_key(v)
            if k is None:
                return None, f"an argument of type {type(v).__name__}"
            parts.append(k)
        for pos in sorted(self._cguard):  # arrays whose values a trace read: by their bytes
            if pos < len(flat) and keys[pos] is not None:
                parts.append(("C", pos, flat[pos].tobytes()))
        return tuple(parts), (arrays, params or ())

    def __call__(self, *args, **kwargs):
        stats = self.stats
        stats["calls"] += 1
        if _core._trace_capturing():  # called from a function being traced: part of its trace
            return self._fn(*args, **kwargs)
        if _core.get_target() != "cpu":
            return self._plain(args, kwargs, "the active target is not the CPU (programs are CPU kernels)")
        key, arrays = self._key(args, kwargs)
        if key is None:
            return self._plain(args, kwargs, arrays)
        arrays, params = arrays
        traces = self._traces
        entry = traces.get(key)
        if entry is not None:
            broken = entry.guard.broken(self._fn)
            if broken is None:
                if len(traces) > 1:
                    traces.move_to_end(key)
                if type(entry) is _Refused:
                    return self._plain(args, kwargs, None)
                results = entry.program.run(arrays, params)
                if results is not None:
                    entry.runs += 1
                    stats["compiled_runs"] += 1
                    return entry.rebuild(args + tuple(kwargs[n] for n in sorted(kwargs)) if kwargs else args, results)
                self._log.append("an argument's memory does not hold what the program touches: ran plainly")
                return self._plain(args, kwargs, None)
            self._log.append(f"retraced: {broken}")
            del self._traces[key]
        elif self._cguard:
            # Arrays whose values earlier traces read hold other values.
            self._content_misses += 1
            if self._content_misses > 2:
                self._log.append("the values of arguments earlier traces read keep changing: traced without "
                                 "reading them from now on")
                self._content = False
                self._cguard = set()
                self._traces.clear()
                key, (arrays, params) = self._key(args, kwargs)
            else:
                self._log.append("traced again: an argument whose values a trace read holds other values")
        elif self._traces:
            self._log.append("traced a new signature")
        return self._trace(key, arrays, params, args, kwargs)

    def _plain(self, args, kwargs, why):
        if why is not None:
            self._log.append(f"ran plainly: {why}")
        self.stats["plain_runs"] += 1
        return self._fn(*args, **kwargs)

    def _trace(self, key, arrays, params, args, kwargs):
        if len(self._traces) >= self._max:
            self._traces.popitem(last=False)
        guard = _Guard(self._fn)
        # The float and int arguments that are parameters run as stand-ins (_Param).
        used = set()
        targs, tkwargs = args, kwargs
        if params:
            names = sorted(kwargs)
            nargs = len(args)
            tkwargs = {n: (_Param(kwargs[n], nargs + j, used) if _param_kind(kwargs[n]) is not None and
                           nargs + j not in self._fguard else kwargs[n]) for j, n in enumerate(names)}
            targs = tuple(_Param(v, k, used) if _param_kind(v) is not None and k not in self._fguard else v
                          for k, v in enumerate(args))
        flat_args = args + tuple(kwargs[n] for n in sorted(kwargs))
        swapped = []  # (function, its code) while it runs rewritten (conditional expressions as selects)
        for _attempt in _range(4):
            for code in self._rewrites:
                for f in _jit_select.functions_of(code):
                    swapped.append((f, f.__code__))
                    f.__code__ = _jit_select.rewritten(code)
            try:
                program, tmpl, leaves, error, stopped, content = self._capture(arrays, targs, tkwargs)
            finally:
                for f, code in swapped:
                    f.__code__ = code
                swapped.clear()
            if program is None:  # (not traced now: see _capture)
                return self._plain(args, kwargs, tmpl)
            # A trace that stopped on the condition of a choice (`a if c else
            # b`, an `if` that assigns) in a function not yet rewritten is
            # traced again with that function rewritten (_jit_select).
            if (not isinstance(program, str) or stopped is None or stopped in self._rewrites or
                    not _jit_select.functions_of(stopped)):
                break
            self._rewrites.append(stopped)
            self._log.append(f"traced again: {stopped.co_qualname} (line {stopped.co_firstlineno}) with its "
                             "choices on values as selects")
        if isinstance(error, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise error
        if error is not None:
            # Raised while tracing (an error NumPy raises at the call): the
            # ordinary run raises it, after the same earlier effects.
            self._log.append(f"the trace raised {type(error).__name__}: ran plainly")
            del error
            return self._plain(args, kwargs, None)
        if isinstance(tmpl, str) and not isinstance(program, str):
            program = tmpl
        if isinstance(program, str):
            self._traces[key] = _Refused(program, guard)
            self._log.append(f"not compiled: {program}")
            return self._plain(args, kwargs, None)
        # Float arguments whose traced value the program bakes in (used in
        # Python, or by an operation that decides on it) are guarded by value
        # from now on: this trace is kept under a key holding their values.
        fixed = used.union(program.fixed_params)
        rekey = False
        if fixed - self._fguard:
            self._fguard |= fixed
            self._log.append("guarded by value from now on: argument" + ("s " if len(fixed) > 1 else " ") +
                             ", ".join(str(k) for k in sorted(fixed)) + " (its value is used in Python or decides an operation)")
            rekey = True
        # Arrays whose values the trace read in Python (slice bounds, indices,
        # tolist()) are guarded by content: later calls hit while they hold
        # the same values.
        if content:
            apos = [pos for pos, v in enumerate(flat_args) if isinstance(v, _core.ndarray)]
            cpos = {apos[k] for k in content}
            if cpos - self._cguard:
                self._cguard |= cpos
                self._log.append("guarded by content from now on: argument" + ("s " if len(cpos) > 1 else " ") +
                                 ", ".join(str(k) for k in sorted(cpos)) + " (" + ("their" if len(cpos) > 1 else "its") + " values are read in Python)")
                rekey = True
        if rekey:
            key, (arrays, params) = self._key(args, kwargs)
        entry = _Trace(program, tmpl, guard)
        self._traces[key] = entry
        self._log.append(f"compiled: {program.traced} operations traced, {program.ops} in the program, "
                         f"{program.loops} loops, compile {program.compile_ms:.1f} ms")
        results = program.run(arrays, params)
        if results is None:  # (cannot happen for the traced arguments themselves)
            return self._plain(args, kwargs, "the program refused its own arguments")
        entry.runs += 1
        self.stats["compiled_runs"] += 1
        return _rebuild(tmpl, flat_args, results)

    def _capture(self, arrays, targs, tkwargs):
        """One capture of the function: (program or why not, template,
        leaves, the exception it raised, the code it stopped in); (None,
        why, ...) when another thread captures."""
        try:
            _core._trace_begin(arrays, self._content)
        except RuntimeError as e:  # another capture runs (another thread)
            return None, str(e), [], None, None, ()
        self.stats["traces"] += 1
        out, error, leaves, tmpl, stopped = None, None, [], None, None
        # While it traces, `range` marks the loops it runs (in the function
        # and in everything it calls, on this thread: _MarkedIter).
        saved = _builtins.range, _builtins.max, _builtins.min
        _builtins.range, _builtins.max, _builtins.min = _Range, _traced_max, _traced_min
        try:
            out = self._fn(*targs, **tkwargs)
        except TraceAbort as e:
            stopped = _jit_select.stopped_in(e.__traceback__)
        except BaseException as e:  # noqa: BLE001 (ended below, then raised by the plain run)
            error = e
        finally:
            _builtins.range, _builtins.max, _builtins.min = saved
        if error is None and not _core._trace_aborted():
            tmpl = _flatten(out, targs + tuple(tkwargs[n] for n in sorted(tkwargs)), leaves)
            if isinstance(tmpl, str):
                leaves = []
        del out
        program = _core._trace_end(arrays, leaves)
        return program, tmpl, leaves, error, stopped, _core._trace_content_args()

    # -- reports -----------------------------------------------------------

    def programs(self):
        """The compiled programs of the traces kept, most recent last."""
        return [e.program for e in self._traces.values() if isinstance(e, _Trace)]

    def explain(self):
        """What jit did with this function: its traces (guards, the
        program's loops, or why there is none) and recent events."""
        lines = [f"numfuse.jit {self._fn.__qualname__}: {self.stats['calls']} calls, "
                 f"{self.stats['compiled_runs']} compiled runs, {self.stats['plain_runs']} plain runs, "
                 f"{self.stats['traces']} traces"]
        for n, (key, e) in enumerate(self._traces.items()):
            lines.append(f"  trace {n}: guards {_describe_key(key)}")
            if e.guard.names:
                lines.append(f"    and the globals {', '.join(e.guard.names)} (objects as traced)")
            if isinstance(e, _Refused):
                lines.append(f"    runs plainly: {e.reason}")
            else:
                lines.append(f"    compiled program ({e.runs} runs, compile {e.program.compile_ms:.1f} ms):")
                lines.extend("    " + ln for ln in e.program.description.rstrip().splitlines())
        if self._log:
            lines.append("  recent events:")
            lines.extend(f"    {x}" for x in self._log)
        return "\n".join(lines)


def _describe_key(key):
    parts = []
    for p in key[1:]:
        if p is _FLOAT:
            parts.append("float (a parameter: any value)")
        elif p is _INT:
            parts.append("int (a parameter: any value)")
        elif p[0] == "C":
            parts.append(f"the values of argument {p[1]} as traced ({len(p[2])} bytes)")
        elif p[0] == "A":
            _, dtype, shape, strides, first, delta = p
            s = f"array {dtype}{list(shape)} strides {strides}"
            if first != len([q for q in parts if q.startswith("array")]):
                s += f" (the memory of array argument {first}, {delta:+d} elements)"
            parts.append(s)
        else:
            parts.append(f"{p[0].__name__} {p[1]!r}")
    if key[0]:
        parts.append(f"keywords {', '.join(key[0])}")
    return "(" + "; ".join(parts) + ")"


def jit(fn=None, *, max_traces=8):
    """Compile a whole function as one program (decorator or function, as
    ``numba.njit`` / ``jax.jit``)::

        @numfuse.jit
        def cholesky(A):
            ...

    The first call with a new signature (array dtypes, shapes, strides and
    sharing; the values of other arguments, except Python floats and ints
    that only reach numfuse operations: those are parameters) traces the function and
    compiles its operations into one kernel, its ``range`` loops rerolled
    into loops of the kernel; later calls with the same signature run the
    kernel without running the Python body. A function whose control flow
    needs array values in Python (``if x.sum() > 0``, ``float(a[i])``) runs
    the ordinary way; ``f.explain()`` says why, and shows each trace's
    guards and program.
    """
    if fn is None:
        return lambda f: jit(f, max_traces=max_traces)
    if isinstance(fn, JitFunction):
        return fn
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"numfuse.jit: expected a Python function, not {type(fn).__name__}")
    return JitFunction(fn, max_traces=max_traces)


__all__ = ["jit", "JitFunction", "TraceAbort"]
del weakref

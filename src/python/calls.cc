// C entry points for the NumPy functions Python loops call most: the
// reductions (x.sum(), numpy.max(x, axis=0), ...) and dot products. A call
// in the common form -- a numfuse array, `axis`, `keepdims` -- records (or,
// for small computed arrays, computes) without entering Python; any other
// argument goes to the Python implementation the layer above registered,
// which handles NumPy's whole signature.
#include "core/error.h"
#include "python/bindings.h"

#include <structmember.h>  // after Python.h (via pybind11)

namespace nf::py_bind {

namespace {

constexpr int kReductions = static_cast<int>(ReduceOp::Count);
// The Python implementations (numfuse._reductions): function(a, *args, **kwargs).
py::handle g_reduce_fallback[kReductions];
py::handle g_dot_fallback;
// Creation functions and array methods: name -> Python implementation.
enum Other { Empty, Zeros, Ones, Full, EmptyLike, ZerosLike, OnesLike, Copy, Astype, Reshape, Arange, Array, Asarray, kOthers };
const char* const kOtherNames[kOthers] = {"empty",      "zeros",      "ones", "full",   "empty_like", "zeros_like",
                                          "ones_like",  "copy",       "astype", "reshape", "arange", "array", "asarray"};
py::handle g_other_fallback[kOthers];

bool is_arg(ReduceOp op) { return op == ReduceOp::ArgMax || op == ReduceOp::ArgMin; }

// A keyword the fast path can ignore: it has its default value.
bool is_default(PyObject* name, PyObject* value) {
  if (PyUnicode_CompareWithASCIIString(name, "out") == 0 || PyUnicode_CompareWithASCIIString(name, "dtype") == 0)
    return value == Py_None;
  if (PyUnicode_CompareWithASCIIString(name, "where") == 0) return value == Py_True;
  return false;
}

// `axis` and `keepdims` of a call whose array is args[0] (a method's self is
// passed as args[0] too); false if the call has any other argument.
bool parse_reduce(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** axis, bool* keepdims) {
  *axis = Py_None;
  *keepdims = false;
  if (nargs > 2) return false;
  if (nargs == 2) *axis = args[1];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    PyObject* value = args[nargs + i];
    if (PyUnicode_CompareWithASCIIString(name, "axis") == 0 && nargs < 2) {
      *axis = value;
    } else if (PyUnicode_CompareWithASCIIString(name, "keepdims") == 0) {
      // NumPy's: an integer (a bool is one), checked before the axis.
      if (PyFloat_Check(value)) throw py::type_error("integer argument expected, got float");
      PyObject* i = PyNumber_Index(value);
      if (!i) throw py::error_already_set();
      const int t = PyObject_IsTrue(i);
      Py_DECREF(i);
      if (t < 0) throw py::error_already_set();
      *keepdims = t != 0;
    } else if (!is_default(name, value)) {
      return false;
    }
  }
  // An integer axis or None; tuples and the rest: the full implementation.
  return *axis == Py_None || PyLong_CheckExact(*axis);
}

PyObject* call_fallback(py::handle f, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!f) {
    PyErr_SetString(PyExc_RuntimeError, "numfuse: reduction fallback not installed");
    return nullptr;
  }
  return PyObject_Vectorcall(f.ptr(), args, static_cast<size_t>(nargs), kwnames);
}

// args[0] is the array (self, or the function's first argument).
PyObject* reduce_call(ReduceOp op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* axis = nullptr;
  bool keepdims = false;
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    if (nargs < 1 || !is_ndarray(args[0]) || !parse_reduce(args, nargs, kwnames, &axis, &keepdims)) return nullptr;
    const View& v = as_ndarray(args[0]).v;
    if (v.ndim() == 0 || (is_arg(op) && keepdims)) return nullptr;  // (NumPy's special cases: the full path)
    py::object axes = axis == Py_None ? py::object(py::none()) : py::object(py::make_tuple(py::handle(axis)));
    py::object res = reduce_array(op, v, axes, keepdims, py::none(), py::none(), py::none());
    if (res.ptr() == Py_NotImplemented) return nullptr;  // (complex arg-reductions: the Python path)
    fast = true;
    return res.release().ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return call_fallback(g_reduce_fallback[static_cast<int>(op)], args, nargs, kwnames);
}

template <ReduceOp op>
PyObject* method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  // self first, as the function form has it.
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  PyObject* small[8];
  std::vector<PyObject*> big;
  PyObject** all = small;
  if (1 + nargs + nkw > 8) {
    big.resize(static_cast<size_t>(1 + nargs + nkw));
    all = big.data();
  }
  all[0] = self;
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) all[1 + i] = args[i];
  return reduce_call(op, all, nargs + 1, kwnames);
}

template <ReduceOp op>
PyObject* function(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return reduce_call(op, args, nargs, kwnames);
}

// numpy.dot(a, b): two numfuse arrays of at most 2 dimensions that align
// (the case loops use: rows and columns of matrices) are a matmul.
PyObject* dot(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i)
      if (!is_default(PyTuple_GET_ITEM(kwnames, i), args[nargs + i])) return nullptr;
    if (nargs != 2 || !is_ndarray(args[0]) || !is_ndarray(args[1])) return nullptr;
    const View& a = as_ndarray(args[0]).v;
    const View& b = as_ndarray(args[1]).v;
    const int na = a.ndim(), nb = b.ndim();
    if (na < 1 || na > 2 || nb < 1 || nb > 2 || a.shape[na - 1] != b.shape[nb == 1 ? 0 : nb - 2]) return nullptr;
    py::object m = matmul_arrays(a, b, py::none(), true);
    if (m.ptr() == Py_NotImplemented) return nullptr;  // (numfuse.dot: NumPy's BLAS)
    fast = true;
    return m.release().ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return call_fallback(g_dot_fallback, args, nargs, kwnames);
}

// ---------------------------------------------------------------------------
// Creation and copies.

// Keyword `name` of a fastcall, or nullptr.
PyObject* keyword(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const char* name) {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i)
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0) return args[nargs + i];
  return nullptr;
}

// Every keyword is one of `allowed`.
bool only_keywords(PyObject* kwnames, std::initializer_list<const char*> allowed) {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    bool ok = false;
    for (const char* a : allowed) ok |= PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), a) == 0;
    if (!ok) return false;
  }
  return true;
}

bool is_str(PyObject* o, const char* s) { return o && PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, s) == 0; }

// A shape given as an int or a tuple/list of ints, none negative; false for
// anything else (the Python implementation raises NumPy's errors).
bool parse_shape(PyObject* o, Dims* out, bool allow_minus_one = false) {
  auto one = [&](PyObject* x) {
    if (!PyLong_CheckExact(x)) return false;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow || v < (allow_minus_one ? -1 : 0)) return false;
    out->push_back(v);
    return true;
  };
  if (PyLong_CheckExact(o)) return one(o);
  if (PyTuple_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i)
      if (!one(PyTuple_GET_ITEM(o, i))) return false;
    return true;
  }
  if (PyList_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i)
      if (!one(PyList_GET_ITEM(o, i))) return false;
    return true;
  }
  return false;
}

Operand int_operand(int64_t v) {
  Operand o;
  o.kind = Operand::Kind::Weak;
  o.weak = WeakKind::Int;
  o.value = Scalar::of_int(DType::Int64, v);
  return o;
}

PyObject* other_fallback(Other which, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call_fallback(g_other_fallback[which], args, nargs, kwnames);
}

// empty / zeros / ones (shape, dtype=float, order='C')
template <Other which>
PyObject* create(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    if (nargs < 1 || nargs > 3 || !only_keywords(kwnames, {"dtype", "order"})) return nullptr;
    PyObject* dtype = nargs > 1 ? args[1] : keyword(args, nargs, kwnames, "dtype");
    PyObject* order = nargs > 2 ? args[2] : keyword(args, nargs, kwnames, "order");
    if (order && !is_str(order, "C")) return nullptr;
    Dims shape;
    if (!parse_shape(args[0], &shape)) return nullptr;
    DType t = DType::Float64;
    if (dtype && dtype != Py_None) {
      std::optional<DType> d = to_dtype(dtype);
      if (!d) return nullptr;
      t = *d;
    }
    fast = true;
    if (which == Empty) return wrap(View::fresh(t, shape)).release().ptr();
    if (global_stream().runs_now(shape_size(shape))) {  // (else recorded: no view made twice)
      View v = View::fresh(t, shape);
      if (fill_now(v, Scalar::of_int(DType::Int64, which == Ones ? 1 : 0))) return wrap(std::move(v)).release().ptr();
    }
    before_record();
    RecordGuard guard;
    return wrap(record_full(t, shape, int_operand(which == Ones ? 1 : 0))).release().ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return other_fallback(which, args, nargs, kwnames);
}

// full(shape, fill_value) with a Python bool, int (within int64), float or
// complex: an array of NumPy's type for the number (bool, int64, float64,
// complex128). Other forms (dtype=, order=, arrays, NumPy scalars) go to
// numfuse._creation.full.
PyObject* create_full(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    if (nargs != 2 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0)) return nullptr;
    PyObject* x = args[1];
    Scalar value;
    if (PyBool_Check(x)) {
      value = Scalar::of_bool(x == Py_True);
    } else if (PyLong_CheckExact(x)) {
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(x, &overflow);
      if (overflow) return nullptr;
      value = Scalar::of_int(DType::Int64, i);
    } else if (PyFloat_CheckExact(x)) {
      value = Scalar::of_float(DType::Float64, PyFloat_AS_DOUBLE(x));
    } else if (PyComplex_CheckExact(x)) {
      const Py_complex c = PyComplex_AsCComplex(x);
      value = Scalar::of_complex(DType::Complex128, c.real, c.imag);
    } else {
      return nullptr;
    }
    Dims shape;
    if (!parse_shape(args[0], &shape)) return nullptr;
    fast = true;
    if (global_stream().runs_now(shape_size(shape))) {
      View v = View::fresh(value.dtype, shape);
      if (fill_now(v, value)) return wrap(std::move(v)).release().ptr();
    }
    before_record();
    RecordGuard guard;
    Operand o;
    o.kind = Operand::Kind::Strong;  // (of the result's own type)
    o.value = value;
    return wrap(record_full(value.dtype, shape, o)).release().ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return other_fallback(Full, args, nargs, kwnames);
}

// array(seq) / asarray(seq), dtype None, float64 or int64 (positional or
// keyword), for a list or tuple of Python numbers (nested, rectangular):
// the array built at the call without NumPy (`np.array([x, y, z])` in a
// loop). asarray(a) of a numfuse array is `a`. Anything else goes to
// numfuse._creation.
template <Other which>
PyObject* from_sequence(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    if (nargs < 1 || nargs > 2 || !only_keywords(kwnames, {"dtype"})) return nullptr;
    PyObject* dtype = nargs > 1 ? args[1] : keyword(args, nargs, kwnames, "dtype");
    std::optional<DType> want;
    if (dtype && dtype != Py_None) {
      want = to_dtype(dtype);
      if (!want) return nullptr;
    }
    if (which == Asarray && is_ndarray(args[0])) {
      if (want && *want != as_ndarray(args[0]).v.dtype) return nullptr;
      fast = true;
      return Py_NewRef(args[0]);
    }
    View v;
    if (!sequence_array(args[0], want, &v)) return nullptr;
    fast = true;
    return wrap(std::move(v)).release().ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return other_fallback(which, args, nargs, kwnames);
}

// arange(stop), arange(start, stop), arange(start, stop, step) with Python
// ints (the loops' `for i in np.arange(n)`, index vectors): the general
// signature is numfuse._creation.arange.
// With a Python float among Python numbers: a float64 range of NumPy's
// length ceil((stop - start) / step) (ints exact as doubles, finite values).
PyObject* arange_float(PyObject* const* args, Py_ssize_t nargs) {
  double v[3] = {0.0, 0.0, 1.0};
  for (Py_ssize_t k = 0; k < nargs; ++k) {
    double x;
    if (PyFloat_CheckExact(args[k])) {
      x = PyFloat_AS_DOUBLE(args[k]);
    } else {
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(args[k], &overflow);
      if (overflow || i < -(1LL << 53) || i > (1LL << 53)) return nullptr;
      x = static_cast<double>(i);
    }
    v[nargs == 1 ? 1 : k] = x;
  }
  const double start = v[0], stop = v[1], step = v[2];
  if (step == 0) return nullptr;
  const double q = (stop - start) / step;
  if (!std::isfinite(q) || std::fabs(q) >= 4503599627370496.0) return nullptr;  // 2**52
  const int64_t n = q > 0 ? static_cast<int64_t>(std::ceil(q)) : 0;
  before_record();
  RecordGuard guard;
  return wrap(record_arange(start, step, n, DType::Float64, false, 0, 0)).release().ptr();
}

PyObject* arange_fast(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    if (nargs < 1 || nargs > 3 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0)) return nullptr;
    bool any_float = false, all_numbers = true;
    for (Py_ssize_t k = 0; k < nargs; ++k) {
      any_float |= PyFloat_CheckExact(args[k]);
      all_numbers &= PyFloat_CheckExact(args[k]) || PyLong_CheckExact(args[k]);
    }
    if (any_float) {
      if (!all_numbers) return nullptr;
      PyObject* f = arange_float(args, nargs);
      fast = f != nullptr;
      return f;
    }
    constexpr long long kLimit = 1LL << 62;  // (no overflow in the length below)
    long long v[3] = {0, 0, 1};
    for (Py_ssize_t k = 0; k < nargs; ++k) {
      if (!PyLong_CheckExact(args[k])) return nullptr;
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(args[k], &overflow);
      if (overflow || x <= -kLimit || x >= kLimit) return nullptr;
      v[nargs == 1 ? 1 : k] = x;
    }
    const long long start = v[0], stop = v[1], step = v[2];
    if (step == 0) return nullptr;  // (the general path raises NumPy's error)
    long long n = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
    if (n < 0) n = 0;
    fast = true;
    before_record();
    RecordGuard guard;
    return wrap(record_arange(static_cast<double>(start), static_cast<double>(step), n, DType::Int64, true, start,
                              step))
        .release()
        .ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return other_fallback(Arange, args, nargs, kwnames);
}

// empty_like / zeros_like / ones_like (a, dtype=None, order='K', subok=True, shape=None)
template <Other which>
PyObject* create_like(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  bool fast = false;
  PyObject* r = guarded([&]() -> PyObject* {
    if (nargs < 1 || nargs > 2 || !is_ndarray(args[0]) || !only_keywords(kwnames, {"dtype", "order", "subok"}))
      return nullptr;
    PyObject* dtype = nargs > 1 ? args[1] : keyword(args, nargs, kwnames, "dtype");
    PyObject* order = keyword(args, nargs, kwnames, "order");
    if (order && !is_str(order, "K")) return nullptr;
    const View& proto = as_ndarray(args[0]).v;
    DType t = proto.dtype;
    if (dtype && dtype != Py_None) {
      std::optional<DType> d = to_dtype(dtype);
      if (!d) return nullptr;
      t = *d;
    }
    fast = true;
    View v = alloc_new_like(t, proto);
    if (which != EmptyLike) {
      before_record();
      RecordGuard guard;
      record_assign(v, int_operand(which == OnesLike ? 1 : 0));
    }
    return wrap(std::move(v)).release().ptr();
  });
  if (fast || PyErr_Occurred()) return r;
  return other_fallback(which, args, nargs, kwnames);
}

// r, the result of a method of self: where self is a deferred scalar (a
// NumPy scalar still being computed) and r is 0-d, the scalar NumPy's
// scalar method returns (`np.float64(1).copy()` is a float64, not an array).
PyObject* scalar_like(PyObject* self, PyObject* r) {
  if (!r || !as_ndarray(self).deferred_scalar || !is_ndarray(r) || as_ndarray(r).v.ndim() != 0) return r;
  py::object o = py::reinterpret_steal<py::object>(r);
  return guarded([&] { return scalar_result(as_ndarray(o).v).release().ptr(); });
}

// The fast forms of three methods (self is passed first, as to the fallbacks).
PyObject* self_first(Other which, PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     PyObject* (*fast)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*, bool*)) {
  bool taken = false;
  PyObject* r = guarded([&] { return fast(self, args, nargs, kwnames, &taken); });
  if (taken || PyErr_Occurred()) return scalar_like(self, r);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  std::vector<PyObject*> all(static_cast<size_t>(1 + nargs + nkw));
  all[0] = self;
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) all[1 + i] = args[i];
  return scalar_like(self, other_fallback(which, all.data(), nargs + 1, kwnames));
}

// a.copy(order='C')
PyObject* copy_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, bool* taken) {
  if (nargs > 1 || !only_keywords(kwnames, {"order"})) return nullptr;
  PyObject* order = nargs ? args[0] : keyword(args, nargs, kwnames, "order");
  CastLayout layout;
  if (!order || is_str(order, "C")) layout = CastLayout::C;
  else if (is_str(order, "K")) layout = CastLayout::Keep;
  else return nullptr;
  *taken = true;
  const View& v = as_ndarray(self).v;
  before_record();
  RecordGuard guard;
  return wrap(record_astype(v, v.dtype, layout)).release().ptr();
}

// a.astype(dtype): a copy in NumPy's order 'K'
PyObject* astype_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, bool* taken) {
  if (nargs != 1 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0)) return nullptr;
  std::optional<DType> t = to_dtype(args[0]);
  if (!t) return nullptr;
  const View& v = as_ndarray(self).v;
  if (is_complex(v.dtype) && !is_complex(*t) && *t != DType::Bool) return nullptr;  // (the Python method: ComplexWarning)
  *taken = true;
  before_record();
  RecordGuard guard;
  return wrap(record_astype(v, *t, CastLayout::Keep)).release().ptr();
}

// a.reshape(shape) / a.reshape(d0, d1, ...) in C order
PyObject* reshape_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, bool* taken) {
  if (nargs < 1 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0)) return nullptr;
  Dims want;
  if (nargs == 1) {
    if (!parse_shape(args[0], &want, true)) return nullptr;
  } else {
    for (Py_ssize_t i = 0; i < nargs; ++i)
      if (!parse_shape(args[i], &want, true) || !PyLong_CheckExact(args[i])) return nullptr;
  }
  *taken = true;
  const View& v = as_ndarray(self).v;
  const Dims s = resolve_shape(want, v.size());
  View r;
  if (reshape_view(v, s, false, &r)) return wrap(std::move(r)).release().ptr();
  before_record();
  RecordGuard guard;
  View copy = record_astype(v, v.dtype, CastLayout::C);
  if (!reshape_view(copy, s, false, &r)) throw ValueError("reshape failed");
  return wrap(std::move(r)).release().ptr();
}

PyObject* m_copy(PyObject* self, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  return self_first(Copy, self, a, n, kw, copy_fast);
}
PyObject* m_astype(PyObject* self, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  return self_first(Astype, self, a, n, kw, astype_fast);
}
PyObject* m_reshape(PyObject* self, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  return self_first(Reshape, self, a, n, kw, reshape_fast);
}

#define NF_FAST(name, f, doc) \
  {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f)), METH_FASTCALL | METH_KEYWORDS, doc}

PyMethodDef g_functions[] = {
    NF_FAST("sum", function<ReduceOp::Sum>, "Sum of array elements over a given axis (numpy.sum)."),
    NF_FAST("prod", function<ReduceOp::Prod>, "Product of array elements over a given axis (numpy.prod)."),
    NF_FAST("max", function<ReduceOp::Max>, "The maximum of an array or maximum along an axis (numpy.max)."),
    NF_FAST("min", function<ReduceOp::Min>, "The minimum of an array or minimum along an axis (numpy.min)."),
    NF_FAST("any", function<ReduceOp::Any>, "Whether any array element along an axis is true (numpy.any)."),
    NF_FAST("all", function<ReduceOp::All>, "Whether all array elements along an axis are true (numpy.all)."),
    NF_FAST("argmax", function<ReduceOp::ArgMax>, "Indices of the maximum values along an axis (numpy.argmax)."),
    NF_FAST("argmin", function<ReduceOp::ArgMin>, "Indices of the minimum values along an axis (numpy.argmin)."),
    NF_FAST("dot", dot, "Dot product of two arrays (numpy.dot)."),
    NF_FAST("empty", create<Empty>, "A new array of the given shape and type, without initializing entries."),
    NF_FAST("zeros", create<Zeros>, "A new array of the given shape and type, filled with zeros."),
    NF_FAST("ones", create<Ones>, "A new array of the given shape and type, filled with ones."),
    NF_FAST("full", create_full, "A new array of the given shape and type, filled with fill_value."),
    NF_FAST("empty_like", create_like<EmptyLike>, "A new array with the shape and type of a given array."),
    NF_FAST("zeros_like", create_like<ZerosLike>, "An array of zeros with the shape and type of a given array."),
    NF_FAST("ones_like", create_like<OnesLike>, "An array of ones with the shape and type of a given array."),
    NF_FAST("arange", arange_fast, "Evenly spaced values within a given interval (numpy.arange)."),
    NF_FAST("array", from_sequence<Array>, "Create an array (numpy.array)."),
    NF_FAST("asarray", from_sequence<Asarray>, "Convert the input to an array (numpy.asarray)."),
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PyMethodDef g_reduction_methods[] = {
    // (The docstrings begin with NumPy's text signatures: inspect.signature reads them.)
    NF_FAST("sum", method<ReduceOp::Sum>, "sum($self, /, axis=None, dtype=None, out=None, **kwargs)\n--\n\n"
                                           "The sum of the elements (numpy.sum: keepdims, initial, where)."),
    NF_FAST("prod", method<ReduceOp::Prod>, "prod($self, /, axis=None, dtype=None, out=None, **kwargs)\n--\n\n"
                                             "The product of the elements (numpy.prod)."),
    NF_FAST("max", method<ReduceOp::Max>, "max($self, /, axis=None, out=None, **kwargs)\n--\n\n"
                                           "The maximum (numpy.max: keepdims, initial, where)."),
    NF_FAST("min", method<ReduceOp::Min>, "min($self, /, axis=None, out=None, **kwargs)\n--\n\n"
                                           "The minimum (numpy.min)."),
    NF_FAST("any", method<ReduceOp::Any>, "any($self, /, axis=None, out=None, keepdims=False, *, where=True)\n--\n\n"
                                           "Whether any element is true (numpy.any)."),
    NF_FAST("all", method<ReduceOp::All>, "all($self, /, axis=None, out=None, keepdims=False, *, where=True)\n--\n\n"
                                           "Whether all elements are true (numpy.all)."),
    NF_FAST("argmax", method<ReduceOp::ArgMax>, "argmax($self, /, axis=None, out=None, *, keepdims=False)\n--\n\n"
                                                 "Indices of the maxima (numpy.argmax)."),
    NF_FAST("argmin", method<ReduceOp::ArgMin>, "argmin($self, /, axis=None, out=None, *, keepdims=False)\n--\n\n"
                                                 "Indices of the minima (numpy.argmin)."),
    NF_FAST("copy", m_copy, "copy($self, /, order='C')\n--\n\nA copy of the array."),
    NF_FAST("astype", m_astype, "astype($self, /, dtype, order='K', casting='unsafe', subok=True, copy=True)\n--\n\n"
                                "A copy of the array, cast to a specified type."),
    NF_FAST("reshape", m_reshape, "reshape($self, /, *shape, order='C', copy=None)\n--\n\n"
                                  "The array with a new shape (a view when the data allow it)."),
    {nullptr, nullptr, 0, nullptr},
};
#undef NF_FAST

py::object reduce_array(ReduceOp op, const View& v, py::handle axes, bool keepdims, py::handle dtype, py::handle out,
                        py::handle initial) {
  ReductionArgs a;
  a.op = op;
  if (axes.is_none()) {
    for (int k = 0; k < v.ndim(); ++k) a.axes.push_back(k);
  } else {
    for (py::handle ax : axes) a.axes.push_back(normalize_axis(ax.cast<int64_t>(), v.ndim()));
    std::sort(a.axes.begin(), a.axes.end());
    if (std::adjacent_find(a.axes.begin(), a.axes.end()) != a.axes.end()) throw ValueError("duplicate value in 'axis'");
  }
  a.keepdims = keepdims;
  if (!dtype.is_none()) {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    a.has_dtype = true;
    a.dtype = *t;
  }
  a.out = out_view(out);
  if (!initial.is_none()) {
    if (!to_operand(initial, a.initial) || a.initial.kind == Operand::Kind::Array)
      throw TypeError("initial must be a scalar");
    a.has_initial = true;
  }
  try {
    Scalar value;
    if (reduce_to_scalar(v, a, &value)) return numpy_scalar(value);
    before_record();
    RecordGuard guard;
    View r = record_reduction(v, a);
    return out.is_none() ? scalar_result(std::move(r)) : py::reinterpret_borrow<py::object>(out);
  } catch (const FallbackRequired&) {
    return not_implemented();  // (the caller runs NumPy's reduction)
  }
}

py::object matmul_arrays(const View& a, const View& b, py::handle out, bool numpy_dot) {
  Scalar value;
  if (out.is_none() && dot_to_scalar(a, b, &value, numpy_dot)) return numpy_scalar(value);
  before_record();
  RecordGuard guard;
  try {
    View r = record_matmul_any(a, b, out_view(out));
    return out.is_none() ? scalar_result(std::move(r)) : py::reinterpret_borrow<py::object>(out);
  } catch (const FallbackRequired&) {
    return not_implemented();  // (numfuse.matmul runs NumPy's BLAS)
  }
}

// ---------------------------------------------------------------------------
namespace {

// Callables implemented in C, as objects of numfuse's own types: called
// through vectorcall as a builtin function is (no cost added), with a
// __dict__ for their attributes (__name__, __qualname__, __doc__, ...).
// `refs`: the Python objects one holds (dealt with by the garbage collector).
struct CCallable {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* dict;
  PyMethodDef* def;       // a module-level entry point's C function
  PyObject* refs[3];      // a NumPy call's function, slow path and result conversion
};

void ccallable_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  auto* f = reinterpret_cast<CCallable*>(self);
  for (PyObject*& r : f->refs) Py_CLEAR(r);
  Py_CLEAR(f->dict);
  PyObject_GC_Del(self);
}

int ccallable_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* f = reinterpret_cast<CCallable*>(self);
  for (PyObject* r : f->refs) Py_VISIT(r);
  Py_VISIT(f->dict);
  return 0;
}

int ccallable_clear(PyObject* self) {
  auto* f = reinterpret_cast<CCallable*>(self);
  for (PyObject*& r : f->refs) Py_CLEAR(r);
  Py_CLEAR(f->dict);
  return 0;
}

PyMemberDef g_ccallable_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(CCallable, dict), READONLY, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CCallable, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

// A type of callables named `name`, with its own repr, methods and
// attributes (either may be null).
PyTypeObject* ccallable_type(const char* name, reprfunc repr, PyMethodDef* methods, PyGetSetDef* getset) {
  std::vector<PyType_Slot> slots = {
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_dealloc, reinterpret_cast<void*>(ccallable_dealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(ccallable_traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(ccallable_clear)},
      {Py_tp_repr, reinterpret_cast<void*>(repr)},
      {Py_tp_members, g_ccallable_members},
  };
  if (methods) slots.push_back({Py_tp_methods, methods});
  if (getset) slots.push_back({Py_tp_getset, getset});
  slots.push_back({0, nullptr});
  PyType_Spec spec = {name, sizeof(CCallable), 0,
                      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, slots.data()};
  PyObject* o = PyType_FromSpec(&spec);  // (copies the slots)
  if (!o) throw py::error_already_set();
  return reinterpret_cast<PyTypeObject*>(o);
}

// A new callable of type `t`, its attributes a copy of `attrs` (or empty).
py::object make_ccallable(PyTypeObject* t, vectorcallfunc call, PyObject* attrs) {
  auto* f = PyObject_GC_New(CCallable, t);
  if (!f) throw py::error_already_set();
  f->vectorcall = call;
  f->def = nullptr;
  for (PyObject*& r : f->refs) r = nullptr;
  f->dict = attrs ? PyDict_Copy(attrs) : PyDict_New();
  py::object o = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(f));
  if (!f->dict) throw py::error_already_set();
  PyObject_GC_Track(o.ptr());
  return o;
}

// The module-level entry points (numfuse.sum, ...) with NumPy's signature
// (`inspect.signature(numfuse.sum)`: they take every argument NumPy's
// function does -- what the C code does not, its Python implementation
// does), numfuse's module and name.
PyObject* fast_function_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<CCallable*>(self);
  auto meth = reinterpret_cast<PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*)>(
      reinterpret_cast<void (*)()>(f->def->ml_meth));
  return meth(nullptr, args, PyVectorcall_NARGS(nargsf), kwnames);
}

PyObject* fast_function_repr(PyObject* self) {
  auto* f = reinterpret_cast<CCallable*>(self);
  return PyUnicode_FromFormat("<function numfuse.%s>", f->def->ml_name);
}

// Pickled by reference, as functions are (module.qualname).
PyObject* fast_function_reduce(PyObject* self, PyObject*) {
  PyObject* name = PyObject_GetAttrString(self, "__qualname__");
  return name;
}

// __signature__: NumPy's function's, looked up at the first request (not at
// import: inspect parses a C function's signature text, ~0.2 ms each).
PyObject* fast_function_signature(PyObject* self, void*) {
  auto* f = reinterpret_cast<CCallable*>(self);
  if (PyObject* sig = PyDict_GetItemString(f->dict, "_signature")) return Py_NewRef(sig);
  return guarded([&]() -> PyObject* {
    py::object np_fn = py::module_::import("numpy").attr(f->def->ml_name);
    py::object sig = py::module_::import("inspect").attr("signature")(np_fn);
    if (PyDict_SetItemString(f->dict, "_signature", sig.ptr()) < 0) throw py::error_already_set();
    return sig.release().ptr();
  });
}

int fast_function_set_signature(PyObject* self, PyObject* value, void*) {
  auto* f = reinterpret_cast<CCallable*>(self);
  return value ? PyDict_SetItemString(f->dict, "_signature", value) : PyDict_DelItemString(f->dict, "_signature");
}

PyGetSetDef g_fast_function_getset[] = {
    {"__signature__", fast_function_signature, fast_function_set_signature,
     "NumPy's signature of the function (inspect.signature)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef g_fast_function_methods[] = {
    {"__reduce__", fast_function_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

py::object make_fast_function(PyMethodDef* d) {
  static PyTypeObject* t =
      ccallable_type("numfuse._core.function", fast_function_repr, g_fast_function_methods, g_fast_function_getset);
  py::object o = make_ccallable(t, fast_function_call, nullptr);
  auto* f = reinterpret_cast<CCallable*>(o.ptr());
  f->def = d;
  py::dict dict = py::reinterpret_borrow<py::dict>(f->dict);
  dict["__name__"] = d->ml_name;
  dict["__qualname__"] = d->ml_name;
  dict["__module__"] = "numfuse";
  dict["__doc__"] = d->ml_doc;
  return o;
}

// A NumPy function numfuse calls as it is (numfuse.random's): called with
// Python numbers only (None, bools, ints, floats, tuples of ints: `rng.random()`,
// `np.random.normal(0, 1, 8)`, `size=(2, 3)`), NumPy's function runs
// straight from the C call and a fresh array result becomes a numfuse array
// (copied into numfuse's memory when small, adopted when large); a Python
// scalar is returned as it is. Other arguments and results: the Python
// wrapper. Attributes (__name__, __doc__, __wrapped__) live in the __dict__.
// (Bound to an instance, as a function stored on a class is not: the
// wrappers are made per generator and kept on it.)
enum NumpyCallRef { kNumpyFn, kSlowPath, kResultConversion };

bool plain_argument(PyObject* x) {
  if (x == Py_None || PyFloat_CheckExact(x) || PyLong_CheckExact(x) || PyBool_Check(x)) return true;
  if (!PyTuple_CheckExact(x)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(x); ++i)
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(x, i))) return false;
  return true;
}

PyObject* numpy_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* f = reinterpret_cast<CCallable*>(self);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!plain_argument(args[i])) return PyObject_Vectorcall(f->refs[kSlowPath], args, nargsf, kwnames);
  PyObject* r = PyObject_Vectorcall(f->refs[kNumpyFn], args, nargsf, kwnames);
  if (!r || PyFloat_CheckExact(r) || PyLong_CheckExact(r)) return r;
  if (is_numpy_generic_scalar(r)) return r;
  View v;
  if (adopt_fresh_array(r, &v)) {
    Py_DECREF(r);  // (the buffer holds it)
    return guarded([&]() -> PyObject* { return wrap(std::move(v)).release().ptr(); });
  }
  PyObject* w = PyObject_CallOneArg(f->refs[kResultConversion], r);
  Py_DECREF(r);
  return w;
}

PyObject* numpy_call_repr(PyObject* self) {
  PyObject* name = PyDict_GetItemString(reinterpret_cast<CCallable*>(self)->dict, "__qualname__");
  return name ? PyUnicode_FromFormat("<function numfuse.random.%U>", name) : PyUnicode_FromString("<function>");
}

py::object make_numpy_call(py::handle fn, py::handle slow, py::handle result, py::dict attrs) {
  static PyTypeObject* t = ccallable_type("numfuse._core.numpy_function", numpy_call_repr, nullptr, nullptr);
  py::object o = make_ccallable(t, numpy_call, attrs.ptr());
  auto* f = reinterpret_cast<CCallable*>(o.ptr());
  f->refs[kNumpyFn] = Py_NewRef(fn.ptr());
  f->refs[kSlowPath] = Py_NewRef(slow.ptr());
  f->refs[kResultConversion] = Py_NewRef(result.ptr());
  return o;
}

}  // namespace

void bind_calls(py::module_& m) {
  py::dict fast;
  for (PyMethodDef* d = g_functions; d->ml_name; ++d) fast[d->ml_name] = make_fast_function(d);
  m.attr("FAST_FUNCTIONS") = fast;
  m.def("numpy_call", &make_numpy_call, py::arg("fn"), py::arg("slow"), py::arg("result"), py::arg("attrs"),
        "A callable running NumPy's `fn` straight from C for Python-number arguments (numfuse.random).");
  // name -> Python implementation, for the calls the C entry points leave.
  m.def("_set_call_fallbacks", [](py::dict fallbacks) {
    for (auto [k, v] : fallbacks) {
      const std::string name = py::str(k);
      if (name == "dot") {
        g_dot_fallback = v.inc_ref();
        continue;
      }
      bool other = false;
      for (int k = 0; k < kOthers; ++k)
        if (name == kOtherNames[k]) {
          g_other_fallback[k] = v.inc_ref();
          other = true;
        }
      if (other) continue;
      std::optional<ReduceOp> op = reduce_from_name(name);
      if (!op) throw py::value_error("unknown reduction " + name);
      g_reduce_fallback[static_cast<int>(*op)] = v.inc_ref();
    }
  });
}

}  // namespace nf::py_bind

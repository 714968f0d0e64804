// numfuse.ndarray, the type: a CPython heap type whose instances hold an
// NdArray inline. The operators (number slots), comparisons, indexing
// (mapping slots), the common attributes (getset) and __array_ufunc__ are C
// functions CPython calls directly: a Python operator on arrays costs one
// C call, no argument parsing by pybind11 and no pybind11 instance
// registry. The view methods are in array_methods.cc; methods written in
// Python are added by python/numfuse/_array.py.
#include <cstring>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "pipeline/pipeline.h"
#include "extern/extern.h"
#include "python/bindings.h"
#include "trace/trace.h"

#include <algorithm>
#include <cstdlib>

#include <structmember.h>  // after Python.h (via pybind11)

namespace nf::py_bind {

PyTypeObject* g_ndarray_type = nullptr;

namespace {

py::handle g_fancy_get, g_fancy_set, g_fancy_warn, g_ufunc_fallback, g_operator_fallback, g_array_ufunc, g_ndarray_new,
    g_matmul, g_pow, g_rpow, g_item, g_tolist;
// NumPy ufunc object -> (nin, numfuse op) for __array_ufunc__'s fast path.
std::unordered_map<PyObject*, std::pair<int, int>> g_ufunc_ops;

// ---------------------------------------------------------------------------
// Allocation. Arrays carry no references to other Python objects, so they
// are not tracked by the cycle collector; freed objects are kept on a free
// list (the GIL guards it), which makes a temporary array cost no malloc.

constexpr int kFreeListMax = 512;
PyNdArray* g_free_list[kFreeListMax];
int g_free_count = 0;

void dealloc(PyObject* self) {
  auto* o = reinterpret_cast<PyNdArray*>(self);
  if (o->weakrefs) PyObject_ClearWeakRefs(self);
  if (o->arr.v.buffer->owner_object == self) o->arr.v.buffer->owner_object = nullptr;
  Py_CLEAR(o->base);
  o->arr.~NdArray();  // may release a buffer adopted from NumPy (needs the GIL: held)
  PyTypeObject* tp = Py_TYPE(self);
  if (g_free_count < kFreeListMax) g_free_list[g_free_count++] = o;
  else PyObject_Free(self);
  Py_DECREF(tp);
}

const View& view_of(PyObject* o) { return reinterpret_cast<PyNdArray*>(o)->arr.v; }

}  // namespace

py::object wrap(View&& v) {
  PyNdArray* o = g_free_count > 0 ? g_free_list[--g_free_count]
                                  : static_cast<PyNdArray*>(PyObject_Malloc(sizeof(PyNdArray)));
  if (!o) throw std::bad_alloc();
  PyObject_Init(reinterpret_cast<PyObject*>(o), g_ndarray_type);  // a new reference (and one to the type)
  o->weakrefs = nullptr;
  new (&o->arr) NdArray(std::move(v));
  // NumPy's `.base`: the array owning the memory, if one exists; else an
  // array over the buffer's whole extent becomes its owner.
  Buffer& b = *o->arr.v.buffer;
  if (b.owner_object) {
    o->base = Py_NewRef(static_cast<PyObject*>(b.owner_object));
  } else {
    o->base = nullptr;
    const View& w = o->arr.v;
    if (w.offset == 0 && w.size() * itemsize(w.dtype) == b.nbytes()) b.owner_object = o;
  }
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(o));
}

NdArray& as_ndarray(py::handle h) {
  if (!is_ndarray(h))
    throw TypeError(std::string("expected a numfuse.ndarray, got ") + Py_TYPE(h.ptr())->tp_name);
  return reinterpret_cast<PyNdArray*>(h.ptr())->arr;
}

namespace {

// ---------------------------------------------------------------------------
// Operators.

// Runs a unary operation with NumPy (via numfuse's fallback) when numfuse
// cannot compute in the loop's type.
py::object fallback(const char* ufunc, py::handle a) {
  return g_ufunc_fallback(ufunc, py::make_tuple(a), py::none());
}

// Runs `a op b` with NumPy's own operator (its type errors, its comparison
// rules: arr == "x" is all False) when numfuse cannot take an operand.
py::object operator_fallback(BinaryOp op, py::handle self, py::handle other, bool reflected, bool inplace) {
  return g_operator_fallback(binary_name(op), self, other, reflected, inplace);
}

// NumPy's binop_should_defer: `self op other` returns NotImplemented (so
// Python tries other's reflected operator) only for objects that opt out of
// NumPy (__array_ufunc__ = None) or outrank it by __array_priority__.
bool should_defer(py::handle self, py::handle other, bool inplace) {
  PyObject* o = other.ptr();
  PyTypeObject* t = Py_TYPE(o);
  if (t == Py_TYPE(self.ptr()) || o == Py_None || t == &PyLong_Type || t == &PyFloat_Type || t == &PyComplex_Type ||
      t == &PyBool_Type || t == &PyUnicode_Type || t == &PyBytes_Type || t == &PyList_Type || t == &PyTuple_Type ||
      t == &PyDict_Type || t == &PySet_Type || t == &PyFrozenSet_Type || t == &PySlice_Type)
    return false;
  PyObject* attr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(t), "__array_ufunc__");
  if (attr) {
    const bool none = attr == Py_None;
    Py_DECREF(attr);
    return !inplace && none;
  }
  PyErr_Clear();
  if (PyType_IsSubtype(t, Py_TYPE(self.ptr()))) return false;
  double prio = -1000000.0;  // NumPy's NPY_SCALAR_PRIORITY
  PyObject* p = PyObject_GetAttrString(o, "__array_priority__");
  if (p) {
    prio = PyFloat_AsDouble(p);
    Py_DECREF(p);
    if (prio == -1.0 && PyErr_Occurred()) PyErr_Clear();
  } else {
    PyErr_Clear();
  }
  return prio > 100.0;  // numfuse.ndarray.__array_priority__
}

// self op other (reflected: other op self).
py::object binary(BinaryOp op, py::handle self, py::handle other, bool reflected) {
  Operand b;
  if (!to_operand(other, b)) {
    if (!reflected && should_defer(self, other, false)) return not_implemented();
    return operator_fallback(op, self, other, reflected, false);
  }
  try {
    const Operand a = Operand::borrow(view_of(self.ptr()));
    const Operand& x = reflected ? b : a;
    const Operand& y = reflected ? a : b;
    View r;
    SimpleOp plain;
    if (binary_now(op, x, y, nullptr, &r, &plain)) return scalar_result(std::move(r));
    before_record();
    RecordGuard guard;
    if ((plain.view[0] || plain.view[1]) && record_simple(plain, &r)) return scalar_result(std::move(r));
    return scalar_result(record_binary(op, x, y, nullptr));
  } catch (const FallbackRequired&) {
    return operator_fallback(op, self, other, reflected, false);
  }
}

py::object inplace(BinaryOp op, py::handle self, py::handle other) {
  // An element read while numfuse.jit traces stands for a NumPy scalar,
  // which `s += 1` rebinds (s = s + 1): another name for it keeps its value.
  if (as_ndarray(self).deferred_scalar) return binary(op, self, other, false);
  Operand b;
  if (!to_operand(other, b)) {
    if (should_defer(self, other, true)) return not_implemented();
    return operator_fallback(op, self, other, false, true);
  }
  const View& v = view_of(self.ptr());
  try {
    const Operand a = Operand::borrow(v);
    View r;
    SimpleOp plain;
    if (!binary_now(op, a, b, &v, &r, &plain)) {
      before_record();
      RecordGuard guard;
      if (!(plain.view[0] || plain.view[1]) || !record_simple(plain, &r)) record_binary(op, a, b, &v);
    }
  } catch (const FallbackRequired&) {
    return operator_fallback(op, self, other, false, true);
  }
  return py::reinterpret_borrow<py::object>(self);
}

py::object unary(UnaryOp op, py::handle self) {
  try {
    const Operand x = Operand::borrow(view_of(self.ptr()));
    View r;
    SimpleOp plain;
    if (unary_now(op, x, nullptr, &r, &plain)) return scalar_result(std::move(r));
    before_record();
    RecordGuard guard;
    if (plain.view[0] && record_simple(plain, &r)) return scalar_result(std::move(r));
    return scalar_result(record_unary(op, x, nullptr));
  } catch (const FallbackRequired&) {
    return fallback(unary_name(op), self);
  }
}

// nb_<op>(a, b): CPython passes the operands in source order; the array is
// `a` (a op b) or, when `a`'s type declined, `b` (the reflected operation).
template <BinaryOp op>
PyObject* nb_binary(PyObject* a, PyObject* b) {
  return guarded([&] {
    const bool reflected = Py_TYPE(a) != g_ndarray_type;
    return (reflected ? binary(op, b, a, true) : binary(op, a, b, false)).release().ptr();
  });
}

template <BinaryOp op>
PyObject* nb_inplace(PyObject* a, PyObject* b) {
  return guarded([&] { return inplace(op, a, b).release().ptr(); });
}

template <UnaryOp op>
PyObject* nb_unary(PyObject* a) {
  return guarded([&] { return unary(op, a).release().ptr(); });
}

// a @ b: two numfuse arrays record (or run now) here; anything else goes to
// numfuse.matmul(a, b), which converts the other operand as NumPy does.
// CPython passes the operands in source order whichever one's slot it calls.
PyObject* nb_matmul(PyObject* a, PyObject* b) {
  return guarded([&] {
    if (Py_TYPE(a) == g_ndarray_type && Py_TYPE(b) == g_ndarray_type) {
      py::object r = matmul_arrays(view_of(a), view_of(b), py::none());
      if (r.ptr() != Py_NotImplemented) return r.release().ptr();  // (else: numfuse.matmul, NumPy's BLAS)
    }
    return g_matmul(py::handle(a), py::handle(b)).release().ptr();
  });
}

PyObject* richcompare(PyObject* self, PyObject* other, int cmp) {
  static constexpr BinaryOp ops[] = {BinaryOp::Less,     BinaryOp::LessEqual, BinaryOp::Equal,
                                     BinaryOp::NotEqual, BinaryOp::Greater,   BinaryOp::GreaterEqual};
  return guarded([&] { return binary(ops[cmp], self, other, false).release().ptr(); });
}

// `**` is ndarray.__pow__ (python/numfuse/_array.py: NumPy's checks for
// integer powers), which records through these.
PyObject* m_pow(PyObject* self, PyObject* other) {
  return guarded([&] { return binary(BinaryOp::Power, self, other, false).release().ptr(); });
}
PyObject* m_rpow(PyObject* self, PyObject* other) {
  return guarded([&] { return binary(BinaryOp::Power, self, other, true).release().ptr(); });
}
PyObject* m_ipow(PyObject* self, PyObject* other) {
  return guarded([&] { return inplace(BinaryOp::Power, self, other).release().ptr(); });
}

// a ** b (nb_power): a float array raised to a scalar needs none of the
// integer-power checks and records (or runs) here; every other case is
// numfuse._array's _py_pow / _py_rpow (NumPy's rules for integer powers).
PyObject* nb_power(PyObject* a, PyObject* b, PyObject* mod) {
  if (mod == Py_None && Py_TYPE(a) == g_ndarray_type && Py_TYPE(b) != g_ndarray_type &&
      is_float(view_of(a).dtype) && (PyFloat_CheckExact(b) || PyLong_CheckExact(b)))
    return m_pow(a, b);
  return guarded([&] {
    if (Py_TYPE(a) == g_ndarray_type) return g_pow(py::handle(a), py::handle(b), py::handle(mod)).release().ptr();
    return g_rpow(py::handle(b), py::handle(a), py::handle(mod)).release().ptr();
  });
}

// ---------------------------------------------------------------------------
// Indexing.

int64_t as_index(PyObject* o) {
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!i) throw py::error_already_set();
  Py_ssize_t v = PyLong_AsSsize_t(i.ptr());
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw IndexError("cannot fit 'int' into an index-sized integer");
  }
  return v;
}

// Whether a numfuse.jit parameter stand-in stands for an int.
bool is_int_param(PyObject* o) {
  py::object v = py::reinterpret_steal<py::object>(PyObject_GetAttrString(o, "_v"));
  if (!v) throw py::error_already_set();
  return PyLong_Check(v.ptr());
}

// Parses a basic index; false if the key needs advanced (fancy) indexing.
using IndexItems = SmallVector<IndexItem, 8>;

bool parse_item(PyObject* o, IndexItems& out) {
  IndexItem it;
  if (PyLong_CheckExact(o)) {
    it.kind = IndexItem::Kind::Int;
    int overflow = 0;
    it.i = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) throw IndexError("cannot fit 'int' into an index-sized integer");
  } else if (o == Py_Ellipsis) {
    it.kind = IndexItem::Kind::Ellipsis;
  } else if (o == Py_None) {
    it.kind = IndexItem::Kind::NewAxis;
  } else if (PySlice_Check(o)) {
    auto* s = reinterpret_cast<PySliceObject*>(o);
    it.kind = IndexItem::Kind::Slice;
    if (s->step != Py_None) it.step = as_index(s->step);
    if (s->start != Py_None) {
      it.start = as_index(s->start);
      it.has_start = true;
    }
    if (s->stop != Py_None) {
      it.stop = as_index(s->stop);
      it.has_stop = true;
    }
  } else if (is_numpy_integer(o) || (Py_TYPE(o) == g_jit_param_type && is_int_param(o))) {
    it.kind = IndexItem::Kind::Int;  // (it has __array__ too, but indexes as an integer)
    it.i = as_index(o);  // (a jit parameter's __index__: its value, a guard from now on)
  } else if (PyBool_Check(o) || PyList_Check(o) || PyTuple_Check(o) || is_ndarray(o) ||
             !PyIndex_Check(o) || PyObject_HasAttrString(o, "__array__")) {
    return false;
  } else {
    it.kind = IndexItem::Kind::Int;  // NumPy integers and other __index__ objects
    it.i = as_index(o);
  }
  out.push_back(it);
  return true;
}

bool parse_index(PyObject* key, IndexItems& items) {
  if (PyTuple_Check(key)) {
    Py_ssize_t n = PyTuple_GET_SIZE(key);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!parse_item(PyTuple_GET_ITEM(key, i), items)) return false;
    return true;
  }
  return parse_item(key, items);
}

// One integer per dimension (no `...`, no None): an element.
bool selects_element(const View& v, const IndexItems& items) {
  if (static_cast<int>(items.size()) != v.ndim()) return false;
  for (const IndexItem& it : items)
    if (it.kind != IndexItem::Kind::Int) return false;
  return true;
}

// One Python int index `key` into dimension `d` of v, counted from the end
// when negative: the offset it adds, or false (not an exact int, or out of
// range: the general path reports it as NumPy does).
inline bool int_index_offset(const View& v, int d, PyObject* key, int64_t* off) {
  if (!PyLong_CheckExact(key)) return false;
  int overflow = 0;
  long long i = PyLong_AsLongLongAndOverflow(key, &overflow);
  if (overflow || (i == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  if (i < 0) i += v.shape[d];
  if (i < 0 || i >= v.shape[d]) return false;
  *off += i * v.strides[d];
  return true;
}

// a[i] on a 1-D array, or a[i, j, ...] with one Python int per dimension:
// the flat offset of the element, or -1 (anything else, or an index out of
// range).
inline int64_t int_key_offset(const View& v, PyObject* key) {
  int64_t off = v.offset;
  if (PyLong_CheckExact(key)) return v.ndim() == 1 && int_index_offset(v, 0, key, &off) ? off : -1;
  if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != v.ndim() || v.ndim() == 0) return -1;
  for (int d = 0; d < v.ndim(); ++d)
    if (!int_index_offset(v, d, PyTuple_GET_ITEM(key, d), &off)) return -1;
  return off;
}

// The address of element `off` (an element index into v's buffer, as
// int_key_offset and element_offset give).
inline char* element_at(const View& v, int64_t off) {
  return static_cast<char*>(v.buffer->data()) + off * itemsize(v.dtype);
}

// Advanced (integer / boolean array) indexing is NumPy's, run here on NumPy
// views of the memory (to_numpy computes pending work first) without the
// Python fallback's conversions. The key's numfuse arrays (alone or in a
// tuple) become NumPy views too.
py::object numpy_key(PyObject* key) {
  if (is_ndarray(py::handle(key))) return to_numpy(view_of(key), false);
  if (PyTuple_CheckExact(key)) {
    const Py_ssize_t n = PyTuple_GET_SIZE(key);
    py::tuple out(n);
    for (Py_ssize_t i = 0; i < n; ++i) out[i] = numpy_key(PyTuple_GET_ITEM(key, i));
    return std::move(out);
  }
  return py::reinterpret_borrow<py::object>(key);
}

// An index array as an int64 or bool View: a numfuse array, a NumPy array
// (its memory used in place for the call) or a list of Python ints. False:
// anything else (python/numfuse/_indexing.py decides).
bool index_view(PyObject* key, View* k) {
  if (is_ndarray(py::handle(key))) {
    *k = view_of(key);
    return k->dtype == DType::Int64 || k->dtype == DType::Bool;
  }
  if (py::isinstance<py::array>(py::handle(key))) {
    const std::optional<DType> t = to_dtype(py::handle(numpy_array_descr(key)));
    if (!t || (*t != DType::Int64 && *t != DType::Bool)) return false;
    *k = from_numpy(py::handle(key), true);  // (read during this call only)
    return true;
  }
  if (PyList_CheckExact(key)) {
    const Py_ssize_t n = PyList_GET_SIZE(key);
    if (n == 0) return false;
    View v = View::fresh(DType::Int64, Dims{static_cast<int64_t>(n)});
    int64_t* p = static_cast<int64_t*>(v.buffer->data());
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* o = PyList_GET_ITEM(key, i);
      if (!PyLong_CheckExact(o)) return false;  // (bools, floats, nested lists: the general path)
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
      }
      p[i] = x;
    }
    *k = std::move(v);
    return true;
  }
  return false;
}

// The keys the fast paths take: one int64 index array among full slices
// (its axis), or a boolean array of a's shape (`mask`). False: any other key.
bool fast_fancy_key(const View& a, PyObject* key, int* axis, View* k, bool* mask) {
  if (a.ndim() == 0) return false;
  *axis = 0;
  PyObject* item = key;
  if (PyTuple_CheckExact(key)) {
    // Full slices around one index item: a[idx, :], a[:, idx], a[:, idx, :].
    const Py_ssize_t n = PyTuple_GET_SIZE(key);
    if (n == 0 || n > static_cast<Py_ssize_t>(a.ndim())) return false;
    item = nullptr;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* s = PyTuple_GET_ITEM(key, i);
      if (PySlice_Check(s)) {
        auto* sl = reinterpret_cast<PySliceObject*>(s);
        if (sl->start != Py_None || sl->stop != Py_None || sl->step != Py_None) return false;
        continue;
      }
      if (item) return false;  // (two index items: the Python path)
      item = s;
      *axis = static_cast<int>(i);
    }
    if (!item) return false;
  }
  // (A 0-d integer array indexes as an integer: the Python path.)
  if (!index_view(item, k) || k->ndim() == 0) return false;
  *mask = k->dtype == DType::Bool && *axis == 0 && k->shape == a.shape;
  return k->dtype == DType::Int64 || *mask;
}

// While numfuse.jit captures: the indices of a gather or a scatter along
// vector a, an argument's that the call has not written (a content read:
// the argument is guarded by its values), checked as NumPy checks them.
void checked_indices(const View& a, const View& k) {
  if (!trace::content_readable(k.buffer.get()))
    capture_abort("it gathers or scatters at indices the call computes (a program reads only an argument's indices)");
  trace::content_read(k.buffer.get());
  const int64_t n = a.shape[0], m = k.shape[0];
  trace::ContentReadScope scope;
  const int64_t* ip = static_cast<const int64_t*>(k.buffer->data()) + k.offset;
  for (int64_t j = 0; j < m; ++j) {
    const int64_t i = ip[j * k.strides[0]];
    if (i < -n || i >= n)
      throw IndexError("index " + std::to_string(i) + " is out of bounds for axis 0 with size " + std::to_string(n));
    if (i < 0) capture_abort("it gathers or scatters at negative indices");
  }
}

// a[idx] while numfuse.jit captures: a vector gathered at an argument's
// indices (a content read: the indices are the call's, checked now, and
// the argument is guarded by content) is a task of the program (an Input
// node indexed by another, core/expr.h). Any other gather stops the capture.
View captured_take(const View& a, const View& k, int axis, bool mask) {
  if (mask) capture_abort("it selects by a boolean mask (the result's size is a value of the call)");
  if (axis != 0 || a.ndim() != 1 || k.ndim() != 1 || k.dtype != DType::Int64)
    capture_abort("it indexes with an array other than a vector's gather at an argument's integer indices");
  checked_indices(a, k);
  const int64_t m = k.shape[0];
  View out = View::fresh(a.dtype, Dims{m});
  if (m == 0) return out;
  Task t;
  t.kind = Task::Kind::Map;
  t.name = "take";
  t.domain = {m};
  View src = a;  // (domain-shaped; the gather node reads it along its stride at the index)
  src.shape = {m};
  t.inputs.push_back(src);
  t.inputs.push_back(k);
  const int i = t.expr.input(1, DType::Int64);
  t.expr.gather(0, a.dtype, i);
  t.output = out;
  global_stream().record(std::move(t));
  return out;
}

// a[idx] = v while numfuse.jit captures: a vector stored at an argument's
// indices (a content read, checked now) from a scalar (`src`) or a vector
// of the indices' length or one element (`v`) is a task of the program
// (Task::scatter; in order, so the last of repeated indices wins, as in
// NumPy). Any other scatter stops the capture.
void captured_put(const View& a, const View& k, int axis, const Operand* src, const View* v) {
  if (axis != 0 || a.ndim() != 1 || k.ndim() != 1 || k.dtype != DType::Int64)
    capture_abort("it stores at an array's indices other than a vector's at an argument's integer indices");
  const int64_t m = k.shape[0];
  if (v && !(v->ndim() == 0 || (v->ndim() == 1 && (v->shape[0] == m || v->shape[0] == 1))))
    capture_abort("it stores at indices a value of another shape");
  if (k.buffer == a.buffer) capture_abort("it stores into the array that holds the indices");
  checked_indices(a, k);
  if (m == 0) return;
  Task t;
  t.kind = Task::Kind::Map;
  t.name = "__setitem__";
  t.domain = {m};
  if (v) {
    View vals = *v;
    if (vals.ndim() == 0 || vals.shape[0] == 1) {
      vals.shape = Dims{m};
      vals.strides = Dims{0};
    }
    t.inputs.push_back(vals);
    t.expr.input(0, a.dtype);
  } else {
    t.consts.push_back(element_value(*src, a.dtype));  // (NumPy's conversion and its errors, now)
    t.expr.constant(0, a.dtype);
  }
  t.inputs.push_back(k);
  t.scatter = static_cast<uint32_t>(t.inputs.size());
  View dst = a;  // (domain-shaped; the store goes along its stride to the position)
  dst.shape = {m};
  t.output = dst;
  global_stream().record(std::move(t));
}

// a[idx] / a[:, ..., idx] (full slices before one int64 index array) and
// a[mask] (a boolean array of a's shape): the gather, at the call, without
// Python. False: not such a key.
bool fast_fancy_get(PyObject* self, PyObject* key, PyObject** result) {
  const View& a = view_of(self);
  int axis = 0;
  View k;
  bool mask = false;
  if (!fast_fancy_key(a, key, &axis, &k, &mask)) return false;
  if (t_capturing) {
    *result = wrap(captured_take(a, k, axis, mask)).release().ptr();
    return true;
  }
  if (k.buffer->pending_write() || a.buffer->pending_write()) flush_all("advanced indexing");
  View out;
  if (mask) {
    out = View::fresh(a.dtype, Dims{ext::count_true(k)});
    ext::mask_gather(a, k, out);
  } else {
    Dims shape;
    for (int d = 0; d < axis; ++d) shape.push_back(a.shape[d]);
    for (int64_t n : k.shape) shape.push_back(n);
    for (size_t d = axis + 1; d < a.ndim(); ++d) shape.push_back(a.shape[d]);
    // Laid out as NumPy's advanced indexing lays it out: the index
    // dimensions outermost in memory, then a's other dimensions in a's K
    // order (a[:, idx] of a C array is (idx, rows, columns) in memory), so
    // a later reshape or ravel is a view or a copy where NumPy's is.
    const int ni = static_cast<int>(k.ndim()), nd = static_cast<int>(shape.size());
    std::vector<int> order, rest;
    for (int d = 0; d < ni; ++d) order.push_back(axis + d);
    for (int d = 0; d < nd; ++d)
      if (d < axis || d >= axis + ni) rest.push_back(d);
    auto a_dim = [&](int d) { return d < axis ? d : d - ni + 1; };
    auto key = [&](int d) { return a.shape[a_dim(d)] == 1 ? int64_t{0} : std::abs(a.strides[a_dim(d)]); };
    std::stable_sort(rest.begin(), rest.end(), [&](int x, int y) { return key(x) > key(y); });
    order.insert(order.end(), rest.begin(), rest.end());
    out = View::fresh_in_order(a.dtype, shape, order);
    ext::take(a, k, axis, out);
  }
  *result = wrap(std::move(out)).release().ptr();
  return true;
}

// a[idx] = v, a[:, ..., idx] = v and a[mask] = v (the keys of
// fast_fancy_get) for a Python or NumPy scalar v, or an array v of a's type
// and the gathered shape (a mask: of the mask's count): the scatter, at the
// call. False: anything else.
bool fast_fancy_set(PyObject* self, PyObject* key, PyObject* value) {
  const View& a = view_of(self);
  int axis = 0;
  View k;
  bool mask = false;
  if (!fast_fancy_key(a, key, &axis, &k, &mask)) return false;
  // The value: a scalar (stored once, read through stride 0) or an array.
  View v;
  const bool scalar = PyFloat_CheckExact(value) || PyLong_CheckExact(value) ||
                      (!is_ndarray(py::handle(value)) && !PyList_Check(value) && !PyTuple_Check(value) &&
                       !py::isinstance<py::array>(py::handle(value)));
  if (scalar) {
    Operand src;
    if (!to_operand(value, src) || src.kind == Operand::Kind::Array) return false;
    if (t_capturing && !mask) {
      captured_put(a, k, axis, &src, nullptr);
      return true;
    }
    if (t_capturing) {
      // numfuse.jit: a[mask] = scalar is a select of the program, in place
      // (a[...] = where(mask, scalar, a)).
      MapSpec spec;
      spec.name = "__setitem__";
      const int m = spec.expr.input(0, DType::Bool);
      spec.inputs.push_back(k);
      const int cur = spec.expr.input(1, a.dtype);
      spec.inputs.push_back(a);
      spec.consts.push_back(element_value(src, a.dtype));  // (NumPy's conversion and its errors, now)
      spec.expr.select(m, spec.expr.constant(0, a.dtype), cur);
      spec.out = &a;
      record_map(std::move(spec));
      return true;
    }
    // The value in a 0-d buffer, reused: the scatter below reads it during
    // this call only, which holds the GIL (a loop storing into a[idx]
    // allocates nothing). Not thread_local: numfuse's module has static TLS
    // (initial-exec variables), and every byte of it is taken from the
    // surplus that libraries loaded later (scikit-learn's libgomp) need.
    static std::vector<View>* scalar_value = new std::vector<View>(kNumDTypes);
    View& sv = (*scalar_value)[static_cast<int>(a.dtype)];
    if (!sv.buffer) sv = View::fresh(a.dtype, Dims{});
    v = sv;
    element_value(src, a.dtype).store(v.buffer->data());
  } else if (is_ndarray(py::handle(value))) {
    v = view_of(value);
    if (v.dtype != a.dtype || v.buffer == a.buffer) return false;  // (casts, overlap: the general path)
  } else {
    return false;
  }
  if (t_capturing) {
    if (mask) capture_abort("it stores an array by a boolean mask (the count is a value of the call)");
    captured_put(a, k, axis, nullptr, &v);
    return true;
  }
  if (k.buffer->pending_write() || v.buffer->pending_write() || a.buffer->pending()) flush_all("advanced assignment");
  if (mask) {
    const int64_t count = ext::count_true(k);
    View vals = v;
    if (scalar || (v.ndim() == 0)) {
      vals.shape = Dims{count};
      vals.strides = Dims{0};
    } else if (!(v.ndim() == 1 && (v.shape[0] == count || v.shape[0] == 1))) {
      return false;  // (NumPy's error, from the general path)
    } else if (v.shape[0] == 1) {
      vals.shape = Dims{count};
      vals.strides = Dims{0};
    }
    ext::mask_scatter(a, k, vals);
    return true;
  }
  Dims shape;
  for (int d = 0; d < axis; ++d) shape.push_back(a.shape[d]);
  for (int64_t n : k.shape) shape.push_back(n);
  for (size_t d = axis + 1; d < a.ndim(); ++d) shape.push_back(a.shape[d]);
  View vals = v;
  if (scalar || v.ndim() == 0) {
    vals.shape = shape;
    vals.strides = Dims(shape.size(), 0);
  } else if (v.shape != shape) {
    return false;  // (broadcasting: the general path)
  }
  ext::put(a, k, axis, vals, false);
  return true;
}

// Index arrays of at most this many elements (each): a key the fast paths do
// not take runs NumPy's indexing kernel on the array's memory (a library
// routine, ~1 us) rather than numfuse's general gather, whose analysis costs
// more than such a gather (python/numfuse/_indexing.py, for large keys).
constexpr int64_t kSmallIndex = 4096;

int64_t index_item_size(PyObject* o) {
  if (PyList_Check(o) || PyTuple_Check(o)) return PySequence_Size(o);
  if (is_ndarray(py::handle(o))) return view_of(o).size();
  if (py::isinstance<py::array>(py::handle(o))) return py::reinterpret_borrow<py::array>(o).size();
  return 0;
}

bool small_key(PyObject* key) {
  if (!PyTuple_CheckExact(key)) return index_item_size(key) <= kSmallIndex;
  for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(key); i < n; ++i)
    if (index_item_size(PyTuple_GET_ITEM(key, i)) > kSmallIndex) return false;
  return true;
}

PyObject* fancy_getitem(PyObject* self, PyObject* key) {
  if (PyObject* r = nullptr; fast_fancy_get(self, key, &r)) return r;
  const bool small = small_key(key);
  // numfuse's gather (python/numfuse/_indexing.py) takes the large keys that are one gather.
  if (!small && g_fancy_get) {
    py::object r = g_fancy_get(py::handle(self), py::handle(key));
    if (!r.is(py::handle(Py_NotImplemented))) return r.release().ptr();
  }
  if (!small) g_fancy_warn();
  py::object k = numpy_key(key);
  const View& v = view_of(self);
  py::array base = to_numpy(v, false);
  py::object res = py::reinterpret_steal<py::object>(PyObject_GetItem(base.ptr(), k.ptr()));
  if (!res) throw py::error_already_set();
  // A NumPy scalar, or an array of a dtype numfuse does not hold, as NumPy gave it.
  if (!py::isinstance<py::array>(res) || !to_dtype(py::handle(numpy_array_descr(res.ptr()))))
    return res.release().ptr();
  // Advanced indexing copies: the result is adopted, unless (never seen) it
  // lies in the array's own memory.
  py::array r = py::reinterpret_borrow<py::array>(res);
  const char* lo = static_cast<const char*>(v.buffer->data());
  const char* at = static_cast<const char*>(r.data());
  const bool inside = r.nbytes() > 0 && at + r.nbytes() > lo && at < lo + v.buffer->nbytes();
  return wrap(from_numpy(res, !inside)).release().ptr();
}

void fancy_setitem(PyObject* self, PyObject* key, PyObject* value) {
  if (fast_fancy_set(self, key, value)) return;
  const bool small = small_key(key);
  // numfuse's scatter (python/numfuse/_indexing.py) takes the large keys that are one gather.
  if (!small && g_fancy_set) {
    py::object r = g_fancy_set(py::handle(self), py::handle(key), py::handle(value));
    if (!r.is(py::handle(Py_NotImplemented))) return;
  }
  if (!small) g_fancy_warn();
  py::object k = numpy_key(key);
  py::object val = is_ndarray(py::handle(value)) ? py::object(to_numpy(view_of(value), false))
                                                  : py::reinterpret_borrow<py::object>(value);
  py::array base = to_numpy(view_of(self), true);
  if (PyObject_SetItem(base.ptr(), k.ptr(), val.ptr()) < 0) throw py::error_already_set();
}

PyObject* getitem(PyObject* self, PyObject* key) {
  {
    const View& v = view_of(self);
    const int64_t off = int_key_offset(v, key);
    if (off >= 0 && t_capturing) return guarded([&] { return captured_element(v, off).release().ptr(); });
    if (off >= 0 && !v.buffer->pending_write())
      return guarded([&] {
        return numpy_scalar(v.dtype, element_at(v, off))
            .release()
            .ptr();
      });
  }
  return guarded([&] {
    IndexItems items;
    if (!parse_index(key, items)) return fancy_getitem(self, key);
    const View& v = view_of(self);
    // An element is a NumPy scalar copy, not a view.
    const std::span<const IndexItem> list(items.data(), items.size());
    if (selects_element(v, items)) return element(v, list).release().ptr();
    return wrap(index_view(v, list)).release().ptr();
  });
}

void setitem(PyObject* self, PyObject* key, PyObject* value) {
  // NumPy refuses a read-only destination before looking at the index.
  if (view_of(self).readonly) throw ValueError("assignment destination is read-only");
  {
    // a[i] = scalar on a 1-D array, or a[i, j, ...] = scalar, with memory
    // that nothing pending uses: stored now.
    const View& v = view_of(self);
    const int64_t off = t_capturing ? -1 : int_key_offset(v, key);  // (a capture records every store)
    if (off >= 0 && !v.buffer->pending()) {
      // The commonest stores, without the general conversion.
      char* at = element_at(v, off);
      if (v.dtype == DType::Float64 && PyFloat_CheckExact(value)) {
        const double x = PyFloat_AS_DOUBLE(value);
        std::memcpy(at, &x, sizeof x);
        return;
      }
      if (v.dtype == DType::Int64 && PyLong_CheckExact(value)) {
        int overflow = 0;
        const long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (!overflow && !(x == -1 && PyErr_Occurred())) {
          const int64_t y = x;
          std::memcpy(at, &y, sizeof y);
          return;
        }
        PyErr_Clear();  // the general path raises NumPy's error
      }
      // A NumPy scalar of the array's own type (an element read elsewhere:
      // `d[i, j] = d[i - 1, j] + 1`): its bytes, no conversion.
      if (Scalar sc; !PyFloat_CheckExact(value) && !PyLong_CheckExact(value) && numpy_scalar_value(value, &sc) == 1 &&
                     sc.dtype == v.dtype) {
        sc.store(at);
        return;
      }
      PyErr_Clear();
    }
    Operand src;
    if (off >= 0 && !v.buffer->pending() && !is_ndarray(value) && !PyList_Check(value) && !PyTuple_Check(value) &&
        to_operand(value, src) &&
        src.kind != Operand::Kind::Array) {
      element_value(src, v.dtype).store(element_at(v, off));
      return;
    }
  }
  // (Of the same type it cannot be out of range: recorded as is.)
  if (is_ndarray(value) && as_ndarray(value).deferred_scalar && is_integer(view_of(self).dtype) &&
      is_integer(as_ndarray(value).v.dtype) && as_ndarray(value).v.dtype != view_of(self).dtype) {
    // The scalar NumPy would have had: its range is checked as a scalar's.
    const View& s = as_ndarray(value).v;
    if (s.buffer->pending_write()) flush_all("an integer scalar stored into an array");
    py::object sc = numpy_scalar(s.dtype, static_cast<const char*>(s.buffer->data()) + s.offset * itemsize(s.dtype));
    return setitem(self, key, sc.ptr());
  }
  IndexItems items;
  Operand src;
  if (!parse_index(key, items) || !to_operand(value, src)) {
    fancy_setitem(self, key, value);
    return;
  }
  const View& v = view_of(self);
  const std::span<const IndexItem> list(items.data(), items.size());
  // An element (one integer per dimension) takes a scalar or a 0-d array,
  // never a sequence (NumPy 2.4, even of one element).
  const bool element = selects_element(v, items);
  if (element && src.kind == Operand::Kind::Array && src.view().ndim() > 0) {
    element_offset(v, list);  // an out-of-bounds index is reported first
    // A bool element takes the truth of a list or tuple, or of an array's
    // one element (NumPy 2.4).
    if (v.dtype == DType::Bool &&
        (PyList_Check(value) || PyTuple_Check(value) || shape_size(src.view().shape) == 1)) {
      const int t = PyObject_IsTrue(value);
      if (t < 0) throw py::error_already_set();
      return setitem(self, key, t ? Py_True : Py_False);
    }
    // An integer or complex element converts a list or tuple as int() or
    // complex() would, a complex one an array as complex() would.
    if (PyList_Check(value) || PyTuple_Check(value)) {
      const std::string type = Py_TYPE(value)->tp_name;
      if (is_integer(v.dtype))
        throw TypeError("int() argument must be a string, a bytes-like object or a real number, not '" + type + "'");
      if (is_complex(v.dtype)) throw TypeError("must be real number, not " + type);
    } else if (is_complex(v.dtype)) {
      throw TypeError("only 0-dimensional arrays can be converted to Python scalars");
    }
    throw ValueError("setting an array element with a sequence.");
  }
  if (element && src.kind != Operand::Kind::Array && !v.buffer->pending() && !t_capturing) {
    // No pending operation reads or writes this memory: store the element
    // now, as NumPy does (a loop filling a table element by element never
    // syncs for its own writes).
    const int64_t off = element_offset(v, list);
    element_value(src, v.dtype).store(element_at(v, off));
    return;
  }
  const View dst = index_view(v, list);
  if (assign_now(dst, src)) return;
  before_record();
  RecordGuard guard;
  record_assign(dst, src);
}

int ass_subscript(PyObject* self, PyObject* key, PyObject* value) {
  PyObject* r = guarded([&]() -> PyObject* {
    if (as_ndarray(self).deferred_scalar)  // (a NumPy scalar's, see inplace)
      throw TypeError(std::string("'numpy.") + dtype_name(view_of(self).dtype) +
                      "' object does not support item assignment");
    if (!value) throw ValueError("cannot delete array elements");
    setitem(self, key, value);
    Py_RETURN_NONE;
  });
  if (!r) return -1;
  Py_DECREF(r);
  return 0;
}

Py_ssize_t length(PyObject* self) {
  const View& v = view_of(self);
  if (v.ndim() == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of unsized object");
    return -1;
  }
  return static_cast<Py_ssize_t>(v.shape[0]);
}

// ---------------------------------------------------------------------------
// Attributes.

PyObject* get_shape(PyObject* self, void*) {
  return guarded([&] { return tuple_of(view_of(self).shape).release().ptr(); });
}

int set_shape(PyObject* self, PyObject* shape, void*) {
  PyObject* r = guarded([&]() -> PyObject* {
    if (!shape) throw py::attribute_error("cannot delete array shape");
    // In place, as NumPy: only when the data allows a view.
    NdArray& a = reinterpret_cast<PyNdArray*>(self)->arr;
    Dims want;
    if (PyLong_Check(shape)) want.push_back(py::handle(shape).cast<int64_t>());
    else want = dims_of(shape);
    View r;
    if (!reshape_view(a.v, resolve_shape(want, a.v.size()), false, &r))
      throw py::attribute_error("Incompatible shape for in-place modification. Use `.reshape()` to make a copy "
                                "with the desired shape.");
    r.readonly = a.v.readonly;
    a.v = r;  // same buffer: the Python reference count is unchanged
    Py_RETURN_NONE;
  });
  if (!r) return -1;
  Py_DECREF(r);
  return 0;
}

PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLong(view_of(self).ndim()); }
PyObject* get_size(PyObject* self, void*) { return PyLong_FromLongLong(view_of(self).size()); }
PyObject* get_dtype(PyObject* self, void*) { return dtype_object(view_of(self).dtype).release().ptr(); }
PyObject* get_itemsize(PyObject* self, void*) { return PyLong_FromLongLong(itemsize(view_of(self).dtype)); }
PyObject* get_nbytes(PyObject* self, void*) {
  const View& v = view_of(self);
  return PyLong_FromLongLong(v.size() * itemsize(v.dtype));
}
PyObject* get_strides(PyObject* self, void*) {
  return guarded([&] {
    const View& v = view_of(self);
    return tuple_of(v.strides, itemsize(v.dtype)).release().ptr();
  });
}
PyObject* get_base(PyObject* self, void*) {
  PyObject* b = reinterpret_cast<PyNdArray*>(self)->base;
  return Py_NewRef(b ? b : Py_None);
}
PyObject* get_readonly(PyObject* self, void*) { return PyBool_FromLong(view_of(self).readonly); }
PyObject* get_c_contiguous(PyObject* self, void*) { return PyBool_FromLong(view_of(self).is_c_contiguous()); }
PyObject* get_f_contiguous(PyObject* self, void*) { return PyBool_FromLong(view_of(self).is_f_contiguous()); }
PyObject* get_buffer_id(PyObject* self, void*) { return PyLong_FromUnsignedLongLong(view_of(self).buffer->id()); }
PyObject* get_owns_data(PyObject* self, void*) {
  const View& v = view_of(self);
  return PyBool_FromLong(v.offset == 0 && v.size() * itemsize(v.dtype) == v.buffer->nbytes() && v.is_c_contiguous());
}

// iter(a): NumPy scalars for a 1-D array, rows (views) for more dimensions
// (a native iterator). While this thread
// captures (numfuse.jit), the elements or rows are read by indexing and the
// loop is marked (g_trace_iter).
PyObject* tp_iter(PyObject* self) {
  return guarded([&]() -> PyObject* {
    const View& v = view_of(self);
    if (v.ndim() == 0) throw TypeError("iteration over a 0-d array");
    if (t_capturing && g_trace_iter) return PyObject_CallOneArg(g_trace_iter, self);
    PyObject* it = make_element_iter(v);
    if (!it) throw py::error_already_set();
    return it;
  });
}

PyObject* get_T(PyObject* self, void*) {
  return guarded([&] {
    const View& v = view_of(self);
    std::vector<int> axes(v.ndim());
    for (int k = 0; k < v.ndim(); ++k) axes[k] = v.ndim() - 1 - k;
    return wrap(transpose_view(v, axes)).release().ptr();
  });
}

PyGetSetDef g_getset[] = {
    {"T", get_T, nullptr, "View of the transposed array (same as self.transpose()).", nullptr},
    {"shape", get_shape, set_shape, "Tuple of array dimensions (settable when a view allows it).", nullptr},
    {"ndim", get_ndim, nullptr, "Number of array dimensions.", nullptr},
    {"size", get_size, nullptr, "Number of elements in the array.", nullptr},
    {"dtype", get_dtype, nullptr, "Data-type of the array's elements.", nullptr},
    {"itemsize", get_itemsize, nullptr, "Length of one array element in bytes.", nullptr},
    {"nbytes", get_nbytes, nullptr, "Total bytes consumed by the elements of the array.", nullptr},
    {"strides", get_strides, nullptr, "Tuple of bytes to step in each dimension when traversing an array.",
     nullptr},
    {"__array_interface__", nd_array_interface, nullptr,
     "The array interface (version 3): a description of the array's memory, which other libraries "
     "read and write in place. The memory counts as shared from then on (operations on it run at once).",
     nullptr},
    {"data", nd_data, nullptr, "Python buffer object (a memoryview) over the array's memory.", nullptr},
    {"ctypes", nd_ctypes, nullptr, "An object to simplify the interaction of the array with the ctypes module "
     "(NumPy's, over the same memory).", nullptr},
    {"base", get_base, nullptr, "Base object if memory is from some other object (the numfuse array owning it).",
     nullptr},
    {"_readonly", get_readonly, nullptr, nullptr, nullptr},
    {"_c_contiguous", get_c_contiguous, nullptr, nullptr, nullptr},
    {"_f_contiguous", get_f_contiguous, nullptr, nullptr, nullptr},
    {"_buffer_id", get_buffer_id, nullptr, nullptr, nullptr},
    {"_owns_data", get_owns_data, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// ---------------------------------------------------------------------------
// __array_ufunc__: NumPy ufuncs called on numfuse arrays (numpy.sqrt(x), and
// every `numpy_scalar op x`, which NumPy turns into numpy.subtract(s, x)):
// plain calls of the ufuncs numfuse computes record directly; everything
// else (out=, dtype=, methods, power's checks, other ufuncs) goes to
// numfuse._ufuncs.array_ufunc.
PyObject* array_ufunc(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    if (nargs < 2) throw TypeError("__array_ufunc__ takes (ufunc, method, *inputs, **kwargs)");
    PyObject* ufunc = args[0];
    PyObject* method = args[1];
    const Py_ssize_t ninputs = nargs - 2;
    auto it = g_ufunc_ops.find(ufunc);
    if (it != g_ufunc_ops.end() && (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) && PyUnicode_Check(method) &&
        PyUnicode_CompareWithASCIIString(method, "__call__") == 0 && ninputs == it->second.first) {
      const int nin = it->second.first;
      py::handle y = nin == 2 ? py::handle(args[3]) : py::handle(Py_None);
      py::object r = record_ufunc(nin, it->second.second, args[2], y, py::none());
      if (r.ptr() != Py_NotImplemented) return r.release().ptr();
    }
    // The general path: hook(self, ufunc, method, inputs, kwargs).
    py::tuple inputs(ninputs);
    for (Py_ssize_t i = 0; i < ninputs; ++i) inputs[i] = py::handle(args[2 + i]);
    py::dict kwargs;
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i) kwargs[PyTuple_GET_ITEM(kwnames, i)] = py::handle(args[nargs + i]);
    return g_array_ufunc(py::handle(self), py::handle(ufunc), py::handle(method), inputs, kwargs).release().ptr();
  });
}

// a.item(i) on a 1-D array, a.item((i, j, ...)) with one int per dimension
// (indices in range) and a.item() on a 0-d array read the element directly;
// every other form is the Python method (numfuse._array).
// The element offset of item(i) (a flat C-order index of any array) or
// item(i, j, ...) (one index per dimension), Python ints in range counted
// from the end where negative; -1 for anything else (the Python path raises
// NumPy's errors).
int64_t item_offset(const View& v, PyObject* const* args, Py_ssize_t nargs) {
  const int nd = v.ndim();
  auto index = [](PyObject* o, int64_t n, int64_t* out) {
    if (!PyLong_CheckExact(o)) return false;
    int overflow = 0;
    long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return false;
    *out = i;
    return true;
  };
  int64_t off = v.offset;
  if (nargs == 1 && nd != 1) {
    int64_t flat;
    if (nd == 0 || !index(args[0], v.size(), &flat)) return -1;
    for (int d = nd - 1; d >= 0; --d) {
      off += (flat % v.shape[d]) * v.strides[d];
      flat /= v.shape[d];
    }
    return off;
  }
  if (nargs != nd || nd == 0) return -1;
  for (int d = 0; d < nd; ++d) {
    int64_t i;
    if (!index(args[d], v.shape[d], &i)) return -1;
    off += i * v.strides[d];
  }
  return off;
}

PyObject* m_item(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  const View& v = view_of(self);
  int64_t off = -1;
  if (nargs == 1 && v.ndim() == 1) off = int_key_offset(v, args[0]);
  else if (nargs == 0 && v.ndim() == 0) off = v.offset;
  else if (nargs > 0) off = item_offset(v, args, nargs);
  if (off >= 0)
    return guarded([&] {
      if (v.buffer->pending_write()) flush_all("item()");
      PyObject* r = python_scalar(v.dtype, element_at(v, off));
      if (!r) throw py::error_already_set();
      return r;
    });
  return guarded([&] {
    py::tuple t(nargs);
    for (Py_ssize_t i = 0; i < nargs; ++i) t[i] = py::handle(args[i]);
    return g_item(py::handle(self), *t).release().ptr();
  });
}

// a.tolist(): nested lists of Python scalars read directly (NumPy's types
// of Python scalar); a 0-d array's scalar through NumPy.
PyObject* m_tolist(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    const View& v = view_of(self);
    // (while capturing: an argument's values, a content read -- trace.h)
    const bool content = t_capturing && v.ndim() >= 1 && trace::content_readable(v.buffer.get());
    if (content) trace::content_read(v.buffer.get());
    std::optional<trace::ContentReadScope> scope;
    if (content) scope.emplace();
    if (v.ndim() == 0) return g_tolist(py::handle(self)).release().ptr();
    if (v.buffer->pending_write()) flush_all("tolist()");
    const int64_t is = itemsize(v.dtype);
    const char* base = static_cast<const char*>(v.buffer->data());
    // Nested lists, outer dimension first (each a new list, as NumPy's).
    auto level = [&](auto& self_, int d, int64_t off) -> PyObject* {
      const int64_t n = v.shape[d];
      PyObject* out = PyList_New(n);
      if (!out) throw py::error_already_set();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = off + i * v.strides[d];
        PyObject* x = d + 1 == v.ndim() ? python_scalar(v.dtype, base + at * is) : self_(self_, d + 1, at);
        if (!x) {
          Py_DECREF(out);
          throw py::error_already_set();
        }
        PyList_SET_ITEM(out, i, x);
      }
      return out;
    };
    return level(level, 0, v.offset);
  });
}

PyMethodDef g_methods[] = {
    {"item", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&m_item)), METH_FASTCALL,
     "item($self, /, *args)\n--\n\nThe element as a Python scalar (numpy.ndarray.item)."},
    {"tolist", m_tolist, METH_NOARGS, "tolist($self, /)\n--\n\nThe array as nested Python lists of Python scalars."},
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&nd_dlpack)),
     METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule sharing the "
     "array's memory (a copy's with copy=True); an array computed on a device and not read on the host since "
     "goes to a consumer of that device as a copy in its memory (copy=False: BufferError), to the CPU "
     "(dl_device=(1, 0)) as the host's memory; pending operations on it run first."},
    {"__dlpack_device__", nd_dlpack_device, METH_NOARGS,
     "__dlpack_device__(): where __dlpack__ exports the array by default: (2, ordinal), a CUDA device, where the "
     "array was computed there and not yet read on the host; else (1, 0), the CPU."},
    {"__array_ufunc__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&array_ufunc)),
     METH_FASTCALL | METH_KEYWORDS, "__array_ufunc__($self, ufunc, method, /, *inputs, **kwargs)\n--\n\nNumPy's ufunc protocol: NumPy ufuncs "
     "applied to numfuse arrays record lazily."},
    {"_pow", m_pow, METH_O, nullptr},
    {"_rpow", m_rpow, METH_O, nullptr},
    {"_ipow", m_ipow, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef g_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PyNdArray, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

// numfuse.ndarray(shape, dtype=float, buffer=None, offset=0, strides=None,
// order=None): numfuse/_array.py installs the Python function that builds it.
PyObject* tp_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  if (!g_ndarray_new) {
    PyErr_SetString(PyExc_TypeError, "numfuse.ndarray cannot be created before numfuse is imported");
    return nullptr;
  }
  return PyObject_Call(g_ndarray_new.ptr(), args, kwargs);
}

#define NF_SLOT(s, f) {s, reinterpret_cast<void*>(f)}
PyType_Slot g_slots[] = {
    NF_SLOT(Py_tp_dealloc, dealloc),
    NF_SLOT(Py_tp_new, tp_new),
    NF_SLOT(Py_tp_hash, PyObject_HashNotImplemented),
    NF_SLOT(Py_tp_richcompare, richcompare),
    NF_SLOT(Py_tp_getattro, PyObject_GenericGetAttr),  // (what CPython's method-call specializations need)
    NF_SLOT(Py_tp_getset, g_getset),
    NF_SLOT(Py_tp_iter, tp_iter),
    NF_SLOT(Py_tp_methods, g_methods),
    NF_SLOT(Py_tp_members, g_members),
    NF_SLOT(Py_bf_getbuffer, nd_getbuffer),
    NF_SLOT(Py_bf_releasebuffer, nd_releasebuffer),
    NF_SLOT(Py_mp_length, length),
    NF_SLOT(Py_mp_subscript, getitem),
    NF_SLOT(Py_mp_ass_subscript, ass_subscript),
    NF_SLOT(Py_nb_add, nb_binary<BinaryOp::Add>),
    NF_SLOT(Py_nb_subtract, nb_binary<BinaryOp::Subtract>),
    NF_SLOT(Py_nb_multiply, nb_binary<BinaryOp::Multiply>),
    NF_SLOT(Py_nb_true_divide, nb_binary<BinaryOp::TrueDivide>),
    NF_SLOT(Py_nb_floor_divide, nb_binary<BinaryOp::FloorDivide>),
    NF_SLOT(Py_nb_remainder, nb_binary<BinaryOp::Remainder>),
    NF_SLOT(Py_nb_and, nb_binary<BinaryOp::BitwiseAnd>),
    NF_SLOT(Py_nb_or, nb_binary<BinaryOp::BitwiseOr>),
    NF_SLOT(Py_nb_xor, nb_binary<BinaryOp::BitwiseXor>),
    NF_SLOT(Py_nb_lshift, nb_binary<BinaryOp::LeftShift>),
    NF_SLOT(Py_nb_rshift, nb_binary<BinaryOp::RightShift>),
    NF_SLOT(Py_nb_inplace_add, nb_inplace<BinaryOp::Add>),
    NF_SLOT(Py_nb_inplace_subtract, nb_inplace<BinaryOp::Subtract>),
    NF_SLOT(Py_nb_inplace_multiply, nb_inplace<BinaryOp::Multiply>),
    NF_SLOT(Py_nb_inplace_true_divide, nb_inplace<BinaryOp::TrueDivide>),
    NF_SLOT(Py_nb_inplace_floor_divide, nb_inplace<BinaryOp::FloorDivide>),
    NF_SLOT(Py_nb_inplace_remainder, nb_inplace<BinaryOp::Remainder>),
    NF_SLOT(Py_nb_inplace_and, nb_inplace<BinaryOp::BitwiseAnd>),
    NF_SLOT(Py_nb_inplace_or, nb_inplace<BinaryOp::BitwiseOr>),
    NF_SLOT(Py_nb_inplace_xor, nb_inplace<BinaryOp::BitwiseXor>),
    NF_SLOT(Py_nb_inplace_lshift, nb_inplace<BinaryOp::LeftShift>),
    NF_SLOT(Py_nb_inplace_rshift, nb_inplace<BinaryOp::RightShift>),
    NF_SLOT(Py_nb_matrix_multiply, nb_matmul),
    NF_SLOT(Py_nb_power, nb_power),
    NF_SLOT(Py_nb_negative, nb_unary<UnaryOp::Negative>),
    NF_SLOT(Py_nb_positive, nb_unary<UnaryOp::Positive>),
    NF_SLOT(Py_nb_absolute, nb_unary<UnaryOp::Absolute>),
    NF_SLOT(Py_nb_invert, nb_unary<UnaryOp::Invert>),
    {0, nullptr},
};
#undef NF_SLOT

}  // namespace

bool ufunc_fast_op(PyObject* ufunc, int* nin, int* op) {
  auto it = g_ufunc_ops.find(ufunc);
  if (it == g_ufunc_ops.end()) return false;
  *nin = it->second.first;
  *op = it->second.second;
  return true;
}

PyTypeObject* make_ndarray_type(py::module_& m) {
  // The methods: those above and the reductions (calls.cc).
  static std::vector<PyMethodDef> methods;
  for (PyMethodDef* d = g_methods; d->ml_name; ++d) methods.push_back(*d);
  for (PyMethodDef* d = g_reduction_methods; d->ml_name; ++d) methods.push_back(*d);
  methods.push_back({nullptr, nullptr, 0, nullptr});
  for (PyType_Slot& slot : g_slots)
    if (slot.slot == Py_tp_methods) slot.pfunc = methods.data();
  static PyType_Spec spec = {"numfuse.ndarray", static_cast<int>(sizeof(PyNdArray)), 0,
                             Py_TPFLAGS_DEFAULT, g_slots};
  PyObject* t = PyType_FromSpec(&spec);
  if (!t) throw py::error_already_set();
  g_ndarray_type = reinterpret_cast<PyTypeObject*>(t);
  m.add_object("ndarray", py::handle(t));  // steals the reference; the module keeps the type alive

  m.def("_register_array_ufunc", [](py::object np_ufunc, int nin, int op) {
    g_ufunc_ops[np_ufunc.release().ptr()] = {nin, op};
  });
  m.def("_set_array_ufunc_hook", [](py::object hook) { g_array_ufunc = hook.release(); });
  m.def("_set_ndarray_new", [](py::object f) { g_ndarray_new = f.release(); });
  m.def("_set_matmul", [](py::object f) { g_matmul = f.release(); });
  m.def("_set_item_tolist", [](py::object item, py::object tolist) {
    g_item = item.release();
    g_tolist = tolist.release();
  });
  m.def("_set_pow", [](py::object pow, py::object rpow) {
    g_pow = pow.release();
    g_rpow = rpow.release();
  });
  m.def("_set_fancy_hooks", [](py::object get, py::object set) {
    g_fancy_get = get.release();
    g_fancy_set = set.release();
  });
  m.def("_set_index_hooks", [](py::object fancy_warn, py::object ufunc_fallback, py::object op_fallback) {
    g_fancy_warn = fancy_warn.release();
    g_ufunc_fallback = ufunc_fallback.release();
    g_operator_fallback = op_fallback.release();
  });
  return g_ndarray_type;
}

}  // namespace nf::py_bind

// numfuse._core.ndarray: the operators and view methods that must be fast.
// Everything else is added to the class by python/numfuse/_array.py.
#include <pybind11/stl.h>

#include <unordered_map>

#include "core/error.h"
#include "pipeline/pipeline.h"
#include "python/bindings.h"

namespace nf::py_bind {

namespace {

py::handle g_fancy_getitem, g_fancy_setitem, g_ufunc_fallback, g_operator_fallback, g_array_ufunc;
// NumPy ufunc object -> (nin, numfuse op) for __array_ufunc__'s fast path.
std::unordered_map<PyObject*, std::pair<int, int>> g_ufunc_ops;

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

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

template <BinaryOp op>
py::object binop(py::handle self, py::handle other) {
  before_record();
  Operand b;
  if (!to_operand(other, b)) {
    if (should_defer(self, other, false)) return not_implemented();
    return operator_fallback(op, self, other, false, false);
  }
  try {
    RecordGuard guard;
    return wrap(record_binary(op, Operand::array(as_ndarray(self).v), b, nullptr));
  } catch (const FallbackRequired&) {
    return operator_fallback(op, self, other, false, false);
  }
}

// Called as other.__op__(self) failed: NumPy computes (no deferral).
template <BinaryOp op>
py::object rbinop(py::handle self, py::handle other) {
  before_record();
  Operand a;
  if (!to_operand(other, a)) return operator_fallback(op, self, other, true, false);
  try {
    RecordGuard guard;
    return wrap(record_binary(op, a, Operand::array(as_ndarray(self).v), nullptr));
  } catch (const FallbackRequired&) {
    return operator_fallback(op, self, other, true, false);
  }
}

template <BinaryOp op>
py::object ibinop(py::handle self, py::handle other) {
  before_record();
  Operand b;
  if (!to_operand(other, b)) {
    if (should_defer(self, other, true)) return not_implemented();
    return operator_fallback(op, self, other, false, true);
  }
  const View& v = as_ndarray(self).v;
  try {
    RecordGuard guard;
    record_binary(op, Operand::array(v), b, &v);
  } catch (const FallbackRequired&) {
    return operator_fallback(op, self, other, false, true);
  }
  return py::reinterpret_borrow<py::object>(self);
}

template <UnaryOp op>
py::object unop(py::handle self) {
  before_record();
  try {
    RecordGuard guard;
    return wrap(record_unary(op, Operand::array(as_ndarray(self).v), nullptr));
  } catch (const FallbackRequired&) {
    return fallback(unary_name(op), self);
  }
}

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

// Parses a basic index; false if the key needs advanced (fancy) indexing.
bool parse_item(PyObject* o, std::vector<IndexItem>& out) {
  IndexItem it;
  if (o == Py_Ellipsis) {
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
  } else if (PyLong_CheckExact(o)) {
    it.kind = IndexItem::Kind::Int;
    it.i = as_index(o);
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

bool parse_index(py::handle key, std::vector<IndexItem>& items) {
  if (PyTuple_Check(key.ptr())) {
    Py_ssize_t n = PyTuple_GET_SIZE(key.ptr());
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!parse_item(PyTuple_GET_ITEM(key.ptr(), i), items)) return false;
    return true;
  }
  return parse_item(key.ptr(), items);
}

std::vector<int> axes_list(const py::handle& axes, int ndim) {
  std::vector<int> out;
  for (py::handle a : axes) out.push_back(normalize_axis(a.cast<int64_t>(), ndim));
  return out;
}

Dims dims_of(const py::handle& seq) {
  Dims d;
  for (py::handle x : seq) d.push_back(x.cast<int64_t>());
  return d;
}

py::tuple tuple_of(const Dims& d, int64_t scale = 1) {
  py::tuple t(d.size());
  for (size_t i = 0; i < d.size(); ++i) t[i] = py::int_(d[i] * scale);
  return t;
}

}  // namespace

namespace {

struct ElementIter {
  View v;
  int64_t i = 0;
  uint64_t checked = ~uint64_t(0);  // stream's recorded_total at the last check
};

bool element_iter_current(const ElementIter& it) {
  return it.checked == global_stream().recorded_total() && pipeline::idle();
}

py::object element_iter_read(ElementIter& it) {
  const char* base = static_cast<const char*>(it.v.buffer->data());
  const int64_t at = it.v.offset + it.i * it.v.strides[0];
  ++it.i;
  return numpy_scalar(it.v.dtype, base + at * itemsize(it.v.dtype));
}

py::object element_iter_step(ElementIter& it) {
  if (it.i >= it.v.shape[0]) throw py::stop_iteration();
  if (!element_iter_current(it)) {
    flush_all("element access");  // as element access: whatever is pending (see element())
    it.checked = global_stream().recorded_total();
  }
  return element_iter_read(it);
}

PyObject* element_iter_next(PyObject* self) {
  ElementIter* it = nullptr;
  try {
    it = &py::handle(self).cast<ElementIter&>();
    if (it->i >= it->v.shape[0]) return nullptr;  // exhausted (no exception: StopIteration)
    if (element_iter_current(*it)) return element_iter_read(*it).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    // fall through to the translated path
  }
  return PyObject_CallMethod(self, "_next", nullptr);
}

}  // namespace

void bind_array(py::module_& m) {
  py::class_<NdArray> c(m, "ndarray");
  c.attr("__module__") = "numfuse";
  c.attr("__hash__") = py::none();
  c.def_property(
       "shape", [](const NdArray& a) { return tuple_of(a.v.shape); },
       [](NdArray& a, py::handle shape) {
         // In place, as NumPy: only when the data allows a view.
         Dims want;
         if (PyLong_Check(shape.ptr())) want.push_back(shape.cast<int64_t>());
         else want = dims_of(shape);
         View r;
         if (!reshape_view(a.v, resolve_shape(want, a.v.size()), false, &r))
           throw py::attribute_error("Incompatible shape for in-place modification. Use `.reshape()` to make a copy "
                                     "with the desired shape.");
         r.readonly = a.v.readonly;
         a.v = r;  // same buffer: the Python reference count is unchanged
       })
      .def_property_readonly("ndim", [](const NdArray& a) { return a.v.ndim(); })
      .def_property_readonly("size", [](const NdArray& a) { return a.v.size(); })
      .def_property_readonly("dtype", [](const NdArray& a) { return dtype_object(a.v.dtype); })
      .def_property_readonly("itemsize", [](const NdArray& a) { return itemsize(a.v.dtype); })
      .def_property_readonly("nbytes", [](const NdArray& a) { return a.v.size() * itemsize(a.v.dtype); })
      .def_property_readonly("strides", [](const NdArray& a) { return tuple_of(a.v.strides, itemsize(a.v.dtype)); })
      .def_property_readonly("_readonly", [](const NdArray& a) { return a.v.readonly; })
      .def_property_readonly("_c_contiguous", [](const NdArray& a) { return a.v.is_c_contiguous(); })
      .def_property_readonly("_f_contiguous", [](const NdArray& a) { return a.v.is_f_contiguous(); })
      .def_property_readonly("_buffer_id", [](const NdArray& a) { return a.v.buffer->id(); })
      .def_property_readonly("_owns_data", [](const NdArray& a) {
        return a.v.offset == 0 && a.v.size() * itemsize(a.v.dtype) == a.v.buffer->nbytes() && a.v.is_c_contiguous();
      })
      .def("__len__",
           [](const NdArray& a) {
             if (a.v.ndim() == 0) throw TypeError("len() of unsized object");
             return a.v.shape[0];
           })
#define NF_BIN(py, op)                                    \
  .def("__" py "__", &binop<BinaryOp::op>)                \
      .def("__r" py "__", &rbinop<BinaryOp::op>)          \
      .def("__i" py "__", &ibinop<BinaryOp::op>)
          NF_BIN("add", Add) NF_BIN("sub", Subtract) NF_BIN("mul", Multiply) NF_BIN("truediv", TrueDivide)
              NF_BIN("floordiv", FloorDivide) NF_BIN("mod", Remainder) NF_BIN("and", BitwiseAnd)
                  NF_BIN("or", BitwiseOr) NF_BIN("xor", BitwiseXor) NF_BIN("lshift", LeftShift)
                      NF_BIN("rshift", RightShift)
#undef NF_BIN
      .def("__eq__", &binop<BinaryOp::Equal>)
      .def("__ne__", &binop<BinaryOp::NotEqual>)
      .def("__lt__", &binop<BinaryOp::Less>)
      .def("__le__", &binop<BinaryOp::LessEqual>)
      .def("__gt__", &binop<BinaryOp::Greater>)
      .def("__ge__", &binop<BinaryOp::GreaterEqual>)
      .def("__neg__", &unop<UnaryOp::Negative>)
      .def("__pos__", &unop<UnaryOp::Positive>)
      .def("__abs__", &unop<UnaryOp::Absolute>)
      .def("__invert__", &unop<UnaryOp::Invert>)
      .def("_pow", &binop<BinaryOp::Power>)
      .def("_rpow", &rbinop<BinaryOp::Power>)
      .def("_ipow", &ibinop<BinaryOp::Power>)
      .def("__getitem__",
           [](py::handle self, py::handle key) -> py::object {
             std::vector<IndexItem> items;
             if (!parse_index(key, items)) return g_fancy_getitem(self, key);
             const View& v = as_ndarray(self).v;
             // One integer per dimension (no `...`, no None) selects an
             // element: a NumPy scalar copy, not a view.
             bool scalar = static_cast<int>(items.size()) == v.ndim();
             for (const IndexItem& it : items) scalar &= it.kind == IndexItem::Kind::Int;
             if (scalar) return element(v, items);
             return wrap(index_view(v, items));
           })
      .def("__setitem__",
           [](py::handle self, py::handle key, py::handle value) {
             // NumPy refuses a read-only destination before looking at the index.
             if (as_ndarray(self).v.readonly) throw ValueError("assignment destination is read-only");
             std::vector<IndexItem> items;
             Operand src;
             if (!parse_index(key, items) || !to_operand(value, src)) {
               g_fancy_setitem(self, key, value);
               return;
             }
             const View& v = as_ndarray(self).v;
             // An element (one integer per dimension) takes a scalar or a 0-d
             // array, never a sequence (NumPy 2.4, even of one element).
             bool element = static_cast<int>(items.size()) == v.ndim();
             for (const IndexItem& it : items) element &= it.kind == IndexItem::Kind::Int;
             if (element && src.kind == Operand::Kind::Array && src.view.ndim() > 0) {
               index_view(v, items);  // an out-of-bounds index is reported first
               throw ValueError("setting an array element with a sequence.");
             }
             if (element && src.kind != Operand::Kind::Array && pipeline::idle() &&
                 !global_stream().touches(v.buffer.get())) {
               // No pending operation reads or writes this memory: store the
               // element now, as NumPy does (a loop filling a table element
               // by element never syncs for its own writes).
               write_element(index_view(v, items), src);
               return;
             }
             before_record();
             RecordGuard guard;
             record_assign(index_view(v, items), src);
           })
      .def("_reshape",
           [](const NdArray& a, py::handle shape, bool fortran) {
             Dims s = resolve_shape(dims_of(shape), a.v.size());
             View r;
             if (reshape_view(a.v, s, fortran, &r)) return wrap(r);
             before_record();
             RecordGuard guard;
             View copy;
             if (!fortran) {
               copy = record_astype(a.v, a.v.dtype, CastLayout::C);
             } else {
               std::vector<int> f_order(a.v.ndim());  // Fortran order: the last axis outermost
               for (int k = 0; k < a.v.ndim(); ++k) f_order[k] = a.v.ndim() - 1 - k;
               copy = View::fresh_in_order(a.v.dtype, a.v.shape, f_order);
               record_assign(copy, Operand::array(a.v));
             }
             if (!reshape_view(copy, s, fortran, &r)) throw ValueError("reshape failed");
             return wrap(r);
           })
      .def("_transpose",
           [](const NdArray& a, py::handle axes) {
             std::vector<int> ax;
             if (axes.is_none()) {
               for (int k = a.v.ndim(); k-- > 0;) ax.push_back(k);
             } else {
               ax = axes_list(axes, a.v.ndim());
               if (static_cast<int>(ax.size()) != a.v.ndim()) throw ValueError("axes don't match array");
               std::vector<bool> seen(ax.size(), false);
               for (int x : ax) {
                 if (seen[x]) throw ValueError("repeated axis in transpose");
                 seen[x] = true;
               }
             }
             return wrap(transpose_view(a.v, ax));
           })
      .def("_swapaxes",
           [](const NdArray& a, int64_t x, int64_t y) {
             return wrap(swapaxes_view(a.v, normalize_axis(x, a.v.ndim()), normalize_axis(y, a.v.ndim())));
           })
      .def("_expand_dims",
           [](const NdArray& a, py::handle axes) {
             int nd = a.v.ndim() + static_cast<int>(py::len(axes));
             std::vector<int> ax = axes_list(axes, nd);
             std::sort(ax.begin(), ax.end());
             if (std::adjacent_find(ax.begin(), ax.end()) != ax.end()) throw ValueError("repeated axis");
             View r = expand_dims_view(a.v, ax);
             View s;  // NumPy computes the new axes' strides as a reshape does
             if (reshape_view(a.v, r.shape, false, &s)) {
               s.readonly = a.v.readonly;
               return wrap(s);
             }
             return wrap(r);
           })
      .def("_squeeze",
           [](const NdArray& a, py::handle axes) {
             if (axes.is_none()) return wrap(squeeze_view(a.v, {}, true));
             return wrap(squeeze_view(a.v, axes_list(axes, a.v.ndim()), false));
           })
      .def("_broadcast_to",
           [](const NdArray& a, py::handle shape) {
             Dims s = dims_of(shape);
             for (int64_t e : s)
               if (e < 0) throw ValueError("all elements of broadcast shape must be non-negative");
             View r;
             try {
               r = broadcast_view(a.v, s);
             } catch (const ValueError&) {
               throw ValueError("operands could not be broadcast together with remapped shapes "
                                "[original->remapped]: " + shape_str(a.v.shape) + "  and requested shape " +
                                shape_str(s));
             }
             r.readonly = true;
             return wrap(r);
           })
      .def("_diagonal",
           [](const NdArray& a, int64_t offset, int64_t a1, int64_t a2) {
             if (a.v.ndim() < 2) throw ValueError("diag requires an array of at least two dimensions");
             int x = normalize_axis(a1, a.v.ndim()), y = normalize_axis(a2, a.v.ndim());
             if (x == y) throw ValueError("axis1 and axis2 cannot be the same");
             return wrap(diagonal_view(a.v, offset, x, y));
           })
      .def("_astype",
           [](const NdArray& a, py::handle dtype, int layout) -> py::object {
             std::optional<DType> t = to_dtype(dtype);
             if (!t) return not_implemented();
             before_record();
             RecordGuard guard;
             return wrap(record_astype(a.v, *t, static_cast<CastLayout>(layout)));
           })
      .def("_empty_like",
           [](const NdArray& a, py::handle dtype, py::handle shape) -> py::object {
             std::optional<DType> t = to_dtype(dtype);
             if (!t) return not_implemented();
             if (shape.is_none()) return wrap(alloc_new_like(*t, a.v));
             return wrap(View::fresh(*t, dims_of(shape)));
           })
      .def("_view",
           [](const NdArray& a, py::handle dtype) -> py::object {
             // ndarray.view(dtype) over the same memory, with NumPy's rules
             // for a different itemsize (the last axis is resized).
             std::optional<DType> t = to_dtype(dtype);
             if (!t) return not_implemented();
             View r = a.v;
             r.dtype = *t;
             const int64_t old_is = itemsize(a.v.dtype), new_is = itemsize(*t);
             if (old_is != new_is) {
               const int nd = a.v.ndim();
               if (nd == 0)
                 throw ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged");
               const int ax = nd - 1;
               if (a.v.shape[ax] != 1 && a.v.size() != 0 && a.v.strides[ax] != 1)
                 throw ValueError("To change to a dtype of a different size, the last axis must be contiguous");
               if (new_is < old_is) {
                 if (old_is % new_is != 0)
                   throw ValueError("When changing to a smaller dtype, its size must be a divisor of the size of "
                                    "original dtype");
                 r.shape[ax] = a.v.shape[ax] * (old_is / new_is);
               } else {
                 const int64_t bytes = a.v.shape[ax] * old_is;
                 if (bytes % new_is != 0)
                   throw ValueError("When changing to a larger dtype, its size must be a divisor of the total size "
                                    "in bytes of the last axis of the array.");
                 r.shape[ax] = bytes / new_is;
               }
               // Offsets and strides count elements of the view's type: a
               // layout that is not a whole number of them cannot be a view.
               if ((a.v.offset * old_is) % new_is != 0) return not_implemented();
               for (int k = 0; k < ax; ++k)
                 if ((a.v.strides[k] * old_is) % new_is != 0) return not_implemented();
               r.offset = a.v.offset * old_is / new_is;
               for (int k = 0; k < ax; ++k) r.strides[k] = a.v.strides[k] * old_is / new_is;
               r.strides[ax] = 1;
             }
             return wrap(r);
           })
      .def("_set_writeable",
           [](NdArray& a, bool on) {
             if (on && a.v.readonly) {
               for (int k = 0; k < a.v.ndim(); ++k)
                 if (a.v.strides[k] == 0 && a.v.shape[k] > 1)
                   throw ValueError("cannot set WRITEABLE flag to True of this array");
             }
             a.v.readonly = !on;
           })
      .def("_readonly_view",
           [](const NdArray& a) {
             View r = a.v;
             r.readonly = true;
             return wrap(r);
           })
      .def("_to_numpy", [](const NdArray& a, bool writeable) { return to_numpy(a.v, writeable); })
      .def("_same_buffer", [](const NdArray& a, const NdArray& b) { return a.v.buffer == b.v.buffer; })
      .def("_may_share_memory", [](const NdArray& a, const NdArray& b) { return views_overlap(a.v, b.v); });

  // NumPy ufuncs called on numfuse arrays (numpy.sqrt(x), and every
  // `numpy_scalar op x`, which NumPy turns into numpy.subtract(s, x)): the
  // plain calls of the ufuncs numfuse computes record directly; everything
  // else (out=, dtype=, methods, power's checks, other ufuncs) goes to
  // numfuse._ufuncs.array_ufunc.
  m.def("_register_array_ufunc", [](py::object np_ufunc, int nin, int op) {
    g_ufunc_ops[np_ufunc.release().ptr()] = {nin, op};
  });
  m.def("_set_array_ufunc_hook", [](py::object hook) { g_array_ufunc = hook.release(); });
  c.def("__array_ufunc__", [](py::handle self, py::handle ufunc, py::handle method, py::args inputs,
                                py::kwargs kwargs) -> py::object {
    auto it = g_ufunc_ops.find(ufunc.ptr());
    if (it != g_ufunc_ops.end() && kwargs.empty() && PyUnicode_Check(method.ptr()) &&
        PyUnicode_CompareWithASCIIString(method.ptr(), "__call__") == 0 &&
        static_cast<int>(inputs.size()) == it->second.first) {
      const int nin = it->second.first;
      py::handle y = nin == 2 ? py::handle(inputs[1]) : py::handle(Py_None);
      py::object r = record_ufunc(nin, it->second.second, inputs[0], y, py::none());
      if (r.ptr() != Py_NotImplemented) return r;
    }
    return g_array_ufunc(self, ufunc, method, inputs, kwargs);
  });

  // Iterating a 1-D array yields NumPy scalars as NumPy does, each read from
  // memory; a sync happens when something is pending (checked again only
  // after new operations were recorded). The type's tp_iternext
  // is the fast path (element_iter_next); `_next` does the whole step,
  // syncing if needed, with pybind11's exception translation.
  py::class_<ElementIter> iter_cls(m, "_ElementIter");
  iter_cls.def("__iter__", [](py::object self) { return self; })
      .def("__next__", &element_iter_step)
      .def("_next", &element_iter_step);
  reinterpret_cast<PyTypeObject*>(iter_cls.ptr())->tp_iternext = &element_iter_next;
  PyType_Modified(reinterpret_cast<PyTypeObject*>(iter_cls.ptr()));
  c.def("_iter_elements", [](const NdArray& a) {
    if (a.v.ndim() != 1) throw py::value_error("_iter_elements: a 1-D array is required");
    return ElementIter{a.v};
  });

  m.def("_set_index_hooks", [](py::object get, py::object set, py::object ufunc_fallback, py::object op_fallback) {
    g_fancy_getitem = get.release();
    g_fancy_setitem = set.release();
    g_ufunc_fallback = ufunc_fallback.release();
    g_operator_fallback = op_fallback.release();
  });
}

}  // namespace nf::py_bind

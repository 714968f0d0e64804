// numfuse.ndarray's view and conversion methods (metadata operations that
// python/numfuse builds NumPy's methods from), and element iteration.
#include <pybind11/stl.h>

#include "core/error.h"
#include "pipeline/pipeline.h"
#include "python/bindings.h"

namespace nf::py_bind {

namespace {

// Adds f to the type as method `name` (what py::class_::def does).
template <typename F>
void def(py::handle cls, const char* name, F&& f) {
  py::cpp_function cf(std::forward<F>(f), py::name(name), py::is_method(cls),
                      py::sibling(py::getattr(cls, name, py::none())));
  py::setattr(cls, name, cf);
}

std::vector<int> axes_list(const py::handle& axes, int ndim) {
  std::vector<int> out;
  for (py::handle a : axes) out.push_back(normalize_axis(a.cast<int64_t>(), ndim));
  return out;
}

// Iterating a 1-D array yields NumPy scalars as NumPy does, each read from
// memory; a sync happens when something is pending (checked again only when
// the stream has recorded something since, or a flush is running). A native
// type: `for b in data:` costs what NumPy's iterator costs.
struct PyElementIter {
  PyObject_HEAD
  View v;  // constructed in place by make_element_iter, destroyed by iter_dealloc
  int64_t i;
  uint64_t checked;  // stream's recorded_total at the last check
};

PyTypeObject* g_element_iter_type = nullptr;

void iter_dealloc(PyObject* self) {
  PyTypeObject* tp = Py_TYPE(self);
  reinterpret_cast<PyElementIter*>(self)->v.~View();
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyObject* iter_next(PyObject* self) {
  auto* it = reinterpret_cast<PyElementIter*>(self);
  if (it->i >= it->v.shape[0]) return nullptr;  // exhausted (no exception: StopIteration)
  if (it->v.ndim() > 1) {
    // Rows of an array of more dimensions: the views a[0], a[1], ... (no
    // sync: a view reads nothing).
    return guarded([&] {
      IndexItem row;
      row.i = it->i++;
      return wrap(index_view(it->v, {row})).release().ptr();
    });
  }
  return guarded([&] {
    if (it->checked != global_stream().recorded_total() || !pipeline::idle()) {
      flush_all("element access");  // as element access: whatever is pending (see element())
      it->checked = global_stream().recorded_total();
    }
    const char* base = static_cast<const char*>(it->v.buffer->data());
    const int64_t at = it->v.offset + it->i * it->v.strides[0];
    ++it->i;
    return numpy_scalar(it->v.dtype, base + at * itemsize(it->v.dtype)).release().ptr();
  });
}

PyObject* iter_length_hint(PyObject* self, PyObject*) {
  auto* it = reinterpret_cast<PyElementIter*>(self);
  return PyLong_FromLongLong(std::max<int64_t>(it->v.shape[0] - it->i, 0));
}

PyMethodDef g_iter_methods[] = {
    {"__length_hint__", iter_length_hint, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot g_iter_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(iter_dealloc)},
    {Py_tp_iter, reinterpret_cast<void*>(PyObject_SelfIter)},
    {Py_tp_iternext, reinterpret_cast<void*>(iter_next)},
    {Py_tp_methods, g_iter_methods},
    {0, nullptr},
};

PyType_Spec g_iter_spec = {"numfuse._ElementIter", static_cast<int>(sizeof(PyElementIter)), 0, Py_TPFLAGS_DEFAULT,
                           g_iter_slots};

}  // namespace

PyObject* make_element_iter(const View& v) {
  auto* it = reinterpret_cast<PyElementIter*>(g_element_iter_type->tp_alloc(g_element_iter_type, 0));
  if (!it) return nullptr;
  new (&it->v) View(v);
  it->i = 0;
  it->checked = ~uint64_t(0);
  return reinterpret_cast<PyObject*>(it);
}

void bind_array(py::module_& m) {
  py::handle c(reinterpret_cast<PyObject*>(make_ndarray_type(m)));
  def(c, "_reshape", [](const NdArray& a, py::handle shape, bool fortran) {
    Dims s = resolve_shape(dims_of(shape), a.v.size());
    View r;
    if (reshape_view(a.v, s, fortran, &r)) return wrap(r);
    before_record();
    RecordGuard guard;
    View copy = record_astype(a.v, a.v.dtype, fortran ? CastLayout::F : CastLayout::C);
    if (!reshape_view(copy, s, fortran, &r)) throw ValueError("reshape failed");
    return wrap(r);
  });
  def(c, "_transpose", [](const NdArray& a, py::handle axes) {
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
  });
  def(c, "_swapaxes", [](const NdArray& a, int64_t x, int64_t y) {
    return wrap(swapaxes_view(a.v, normalize_axis(x, a.v.ndim()), normalize_axis(y, a.v.ndim())));
  });
  def(c, "_expand_dims", [](const NdArray& a, py::handle axes) {
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
  });
  def(c, "_squeeze", [](const NdArray& a, py::handle axes) {
    if (axes.is_none()) return wrap(squeeze_view(a.v, {}, true));
    return wrap(squeeze_view(a.v, axes_list(axes, a.v.ndim()), false));
  });
  def(c, "_broadcast_to", [](const NdArray& a, py::handle shape) {
    Dims s = dims_of(shape);
    for (int64_t e : s)
      if (e < 0) throw ValueError("all elements of broadcast shape must be non-negative");
    View r;
    try {
      r = broadcast_view(a.v, s);
    } catch (const ValueError&) {
      throw ValueError("operands could not be broadcast together with remapped shapes [original->remapped]: " +
                       shape_str(a.v.shape) + "  and requested shape " + shape_str(s));
    }
    r.readonly = true;
    return wrap(r);
  });
  def(c, "_diagonal", [](const NdArray& a, int64_t offset, int64_t a1, int64_t a2) {
    if (a.v.ndim() < 2) throw ValueError("diag requires an array of at least two dimensions");
    int x = normalize_axis(a1, a.v.ndim()), y = normalize_axis(a2, a.v.ndim());
    if (x == y) throw ValueError("axis1 and axis2 cannot be the same");
    return wrap(diagonal_view(a.v, offset, x, y));
  });
  def(c, "_astype", [](const NdArray& a, py::handle dtype, int layout) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    before_record();
    RecordGuard guard;
    return wrap(record_astype(a.v, *t, static_cast<CastLayout>(layout)));
  });
  def(c, "_empty_like", [](const NdArray& a, py::handle dtype, py::handle shape) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    if (shape.is_none()) return wrap(alloc_new_like(*t, a.v));
    return wrap(View::fresh(*t, dims_of(shape)));
  });
  def(c, "_view", [](const NdArray& a, py::handle dtype) -> py::object {
    // ndarray.view(dtype) over the same memory, with NumPy's rules for a
    // different itemsize (the last axis is resized).
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    View r = a.v;
    r.dtype = *t;
    const int64_t old_is = itemsize(a.v.dtype), new_is = itemsize(*t);
    if (old_is != new_is) {
      const int nd = a.v.ndim();
      if (nd == 0) throw ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged");
      const int ax = nd - 1;
      if (a.v.shape[ax] != 1 && a.v.size() != 0 && a.v.strides[ax] != 1)
        throw ValueError("To change to a dtype of a different size, the last axis must be contiguous");
      if (new_is < old_is) {
        if (old_is % new_is != 0)
          throw ValueError("When changing to a smaller dtype, its size must be a divisor of the size of original "
                           "dtype");
        r.shape[ax] = a.v.shape[ax] * (old_is / new_is);
      } else {
        const int64_t bytes = a.v.shape[ax] * old_is;
        if (bytes % new_is != 0)
          throw ValueError("When changing to a larger dtype, its size must be a divisor of the total size in bytes "
                           "of the last axis of the array.");
        r.shape[ax] = bytes / new_is;
      }
      // Offsets and strides count elements of the view's type: a layout
      // that is not a whole number of them cannot be a view.
      if ((a.v.offset * old_is) % new_is != 0) return not_implemented();
      for (int k = 0; k < ax; ++k)
        if ((a.v.strides[k] * old_is) % new_is != 0) return not_implemented();
      r.offset = a.v.offset * old_is / new_is;
      for (int k = 0; k < ax; ++k) r.strides[k] = a.v.strides[k] * old_is / new_is;
      r.strides[ax] = 1;
    }
    return wrap(r);
  });
  def(c, "_part", [](const NdArray& a, int part) {
    // z.real (part 0) / z.imag (part 1) of a complex array: a view of the
    // float type over every other float of the same memory.
    if (!is_complex(a.v.dtype) || (part != 0 && part != 1)) throw TypeError("_part: not a complex array");
    View r = a.v;
    r.dtype = real_part_type(a.v.dtype);
    r.offset = a.v.offset * 2 + part;
    for (int k = 0; k < r.ndim(); ++k) r.strides[k] = a.v.strides[k] * 2;
    return wrap(r);
  });
  def(c, "_set_writeable", [](NdArray& a, bool on) {
    if (on && a.v.readonly) {
      for (int k = 0; k < a.v.ndim(); ++k)
        if (a.v.strides[k] == 0 && a.v.shape[k] > 1) throw ValueError("cannot set WRITEABLE flag to True of this array");
    }
    a.v.readonly = !on;
  });
  def(c, "_readonly_view", [](const NdArray& a) {
    View r = a.v;
    r.readonly = true;
    return wrap(r);
  });
  def(c, "_to_numpy", [](const NdArray& a, bool writeable) { return to_numpy(a.v, writeable); });
  def(c, "_same_buffer", [](const NdArray& a, const NdArray& b) { return a.v.buffer == b.v.buffer; });
  def(c, "_may_share_memory", [](const NdArray& a, const NdArray& b) { return views_overlap(a.v, b.v); });

  PyObject* t = PyType_FromSpec(&g_iter_spec);
  if (!t) throw py::error_already_set();
  g_element_iter_type = reinterpret_cast<PyTypeObject*>(t);
  m.add_object("_ElementIter", py::handle(t));  // the module keeps the type alive
}

}  // namespace nf::py_bind

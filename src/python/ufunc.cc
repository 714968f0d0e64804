// numfuse._core.UfuncBase: the calling part of numfuse's ufunc objects
// (python/numfuse/_ufuncs.py subclasses it for everything else). A plain
// positional call -- numfuse.sqrt(x), numfuse.add(a, b) -- records in C++
// without entering Python; anything else (keywords, out=, dtype=, integer
// powers with array exponents, operands numfuse cannot take) goes to the
// subclass's `_call`.
#include "python/bindings.h"

#include <structmember.h>  // after Python.h (via pybind11)

namespace nf::py_bind {

namespace {

struct UfuncBase {
  PyObject_HEAD
  int nin;
  int op;
  PyObject* dict;  // the subclass instance's attributes
};

int init(PyObject* self, PyObject* args, PyObject* kwargs) {
  auto* u = reinterpret_cast<UfuncBase*>(self);
  int nin = 0, op = 0;
  static const char* names[] = {"nin", "op", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ii", const_cast<char**>(names), &nin, &op)) return -1;
  if (nin != 1 && nin != 2) {
    PyErr_SetString(PyExc_ValueError, "UfuncBase: nin must be 1 or 2");
    return -1;
  }
  u->nin = nin;
  u->op = op;
  return 0;
}

// power's integer loops raise for negative exponents: an integer array
// exponent needs its values checked, which the Python layer does.
bool needs_power_check(const UfuncBase* u, PyObject* exponent) {
  if (u->op != static_cast<int>(BinaryOp::Power) || !is_ndarray(exponent)) return false;
  return is_integer(reinterpret_cast<PyNdArray*>(exponent)->arr.v.dtype);
}

PyObject* call(PyObject* self, PyObject* args, PyObject* kwargs) {
  auto* u = reinterpret_cast<UfuncBase*>(self);
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  if ((!kwargs || PyDict_GET_SIZE(kwargs) == 0) && n == u->nin &&
      !(n == 2 && needs_power_check(u, PyTuple_GET_ITEM(args, 1)))) {
    PyObject* r = guarded([&] {
      py::handle x(PyTuple_GET_ITEM(args, 0));
      py::handle y = n == 2 ? py::handle(PyTuple_GET_ITEM(args, 1)) : py::handle(Py_None);
      return record_ufunc(u->nin, u->op, x, y, py::none()).release().ptr();
    });
    if (r != Py_NotImplemented) return r;  // a result, or an error raised at the call
    Py_DECREF(r);
  }
  PyObject* slow = PyObject_GetAttrString(self, "_call");
  if (!slow) return nullptr;
  PyObject* r = PyObject_Call(slow, args, kwargs);
  Py_DECREF(slow);
  return r;
}

void dealloc(PyObject* self) {
  PyTypeObject* tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(reinterpret_cast<UfuncBase*>(self)->dict);
  tp->tp_free(self);
  Py_DECREF(tp);
}

int traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<UfuncBase*>(self)->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<UfuncBase*>(self)->dict);
  return 0;
}

PyMemberDef g_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(UfuncBase, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

#define NF_SLOT(s, f) {s, reinterpret_cast<void*>(f)}
PyType_Slot g_slots[] = {
    NF_SLOT(Py_tp_init, init),
    NF_SLOT(Py_tp_call, call),
    NF_SLOT(Py_tp_dealloc, dealloc),
    NF_SLOT(Py_tp_traverse, traverse),
    NF_SLOT(Py_tp_clear, clear),
    NF_SLOT(Py_tp_members, g_members),
    NF_SLOT(Py_tp_new, PyType_GenericNew),
    {0, nullptr},
};
#undef NF_SLOT

}  // namespace

void bind_ufunc(py::module_& m) {
  static PyType_Spec spec = {"numfuse._core.UfuncBase", static_cast<int>(sizeof(UfuncBase)), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, g_slots};
  PyObject* t = PyType_FromSpec(&spec);
  if (!t) throw py::error_already_set();
  m.add_object("UfuncBase", py::handle(t));
  Py_DECREF(t);
}

}  // namespace nf::py_bind

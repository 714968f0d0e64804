// numfuse.ufunc: the type of numfuse's ufunc objects (numfuse.add,
// numfuse.sqrt, ...). Calling one is a C vectorcall: a plain positional call
// -- numfuse.sqrt(x), numfuse.add(a, b) -- records (or, small, computes) in
// C++ without entering Python; anything else (keywords, out=, dtype=, integer
// powers with array exponents, operands numfuse cannot take) goes to the
// Python method `_call`. The rest of the ufunc interface (reduce, outer,
// accumulate, attributes) is Python: python/numfuse/_ufuncs.py passes a
// class of methods that becomes this type's base.
#include "python/bindings.h"

#include <structmember.h>  // after Python.h (via pybind11)

#define PY_ARRAY_UNIQUE_SYMBOL numfuse_ARRAY_API
#define NO_IMPORT_ARRAY
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

namespace nf::py_bind {

namespace {

struct Ufunc {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int nin;
  int op;
  PyObject* np;    // the NumPy ufunc (or None)
  PyObject* dict;  // __name__, __doc__, ...
  PyObject* weakrefs;
};

// A Python or NumPy scalar (what NumPy's scalar arithmetic takes).
bool is_scalar(PyObject* o) {
  return PyFloat_Check(o) || PyLong_Check(o) || PyComplex_Check(o) || PyBool_Check(o) ||
         PyObject_TypeCheck(o, &PyGenericArrType_Type);
}

// power's integer loops raise for negative exponents: an integer array
// exponent needs its values checked, which the Python layer does.
bool needs_power_check(const Ufunc* u, PyObject* exponent) {
  if (u->op != static_cast<int>(BinaryOp::Power) || !is_ndarray(exponent)) return false;
  return is_integer(reinterpret_cast<PyNdArray*>(exponent)->arr.v.dtype);
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* u = reinterpret_cast<Ufunc*>(self);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if ((!kwnames || PyTuple_GET_SIZE(kwnames) == 0) && n == u->nin && !(n == 2 && needs_power_check(u, args[1]))) {
    // Scalars only (a loop over elements): NumPy's scalar arithmetic, as
    // NumPy gives it, without trying to record first.
    if (u->np && u->np != Py_None && is_scalar(args[0]) && (n == 1 || is_scalar(args[1])))
      return PyObject_Vectorcall(u->np, args, nargsf, kwnames);
    PyObject* r = guarded([&] {
      py::handle y = n == 2 ? py::handle(args[1]) : py::handle(Py_None);
      return record_ufunc(u->nin, u->op, args[0], y, py::none()).release().ptr();
    });
    if (r != Py_NotImplemented) return r;  // a result, or an error raised at the call
    Py_DECREF(r);
  }
  PyObject* slow = PyObject_GetAttrString(self, "_call");
  if (!slow) return nullptr;
  PyObject* r = PyObject_Vectorcall(slow, args, nargsf, kwnames);
  Py_DECREF(slow);
  return r;
}

int init(PyObject* self, PyObject* args, PyObject* kwargs) {
  auto* u = reinterpret_cast<Ufunc*>(self);
  int nin = 0, op = 0;
  static const char* names[] = {"nin", "op", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ii", const_cast<char**>(names), &nin, &op)) return -1;
  if (nin != 1 && nin != 2) {
    PyErr_SetString(PyExc_ValueError, "ufunc: nin must be 1 or 2");
    return -1;
  }
  u->nin = nin;
  u->op = op;
  u->vectorcall = call;
  return 0;
}

void dealloc(PyObject* self) {
  PyTypeObject* tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  auto* u = reinterpret_cast<Ufunc*>(self);
  if (u->weakrefs) PyObject_ClearWeakRefs(self);
  Py_CLEAR(u->dict);
  Py_CLEAR(u->np);
  tp->tp_free(self);
  Py_DECREF(tp);
}

int traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<Ufunc*>(self)->dict);
  Py_VISIT(reinterpret_cast<Ufunc*>(self)->np);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<Ufunc*>(self)->dict);
  Py_CLEAR(reinterpret_cast<Ufunc*>(self)->np);
  return 0;
}

PyMemberDef g_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Ufunc, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(Ufunc, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Ufunc, weakrefs), READONLY, nullptr},
    {"nin", T_INT, offsetof(Ufunc, nin), READONLY, "The number of inputs."},
    {"_op", T_INT, offsetof(Ufunc, op), READONLY, nullptr},
    {"_np", T_OBJECT, offsetof(Ufunc, np), 0, "The NumPy ufunc this one mirrors."},
    {nullptr, 0, 0, 0, nullptr},
};

#define NF_SLOT(s, f) {s, reinterpret_cast<void*>(f)}
PyType_Slot g_slots[] = {
    NF_SLOT(Py_tp_init, init),
    NF_SLOT(Py_tp_call, PyVectorcall_Call),
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
  // numfuse.ufunc, with the Python class `methods` (no instance layout of
  // its own: __slots__ = ()) as its base.
  m.def("_make_ufunc_type", [](py::object methods) {
    static PyType_Spec spec = {"numfuse.ufunc", static_cast<int>(sizeof(Ufunc)), 0,
                               Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, g_slots};
    PyObject* t = PyType_FromSpecWithBases(&spec, py::make_tuple(methods).ptr());
    if (!t) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(t);
  });
}

}  // namespace nf::py_bind

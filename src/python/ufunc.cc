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

#include <cfenv>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>

#include "runtime/vmath.h"

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

// The ufuncs computed by runtime/vmath.h's one implementation per function
// (libm names): of float scalars too, so that nf.exp(x[i]) is nf.exp(x)[i]
// to the bit, as in NumPy (power is not: x ** 2.0 of arrays is x * x); and
// sqrt, computed here without NumPy's ufunc machinery.
struct ScalarMath {
  void* f64 = nullptr;
  void* f32 = nullptr;
};
const ScalarMath* scalar_math(const Ufunc* u) {
  static const std::unordered_map<int, ScalarMath> table = [] {
    std::unordered_map<int, ScalarMath> t;
    auto add = [&](int key, const char* fn) {
      t[key] = {nf_vmath_function(fn), nf_vmath_function((std::string(fn) + "f").c_str())};
    };
    const std::pair<UnaryOp, const char*> unary[] = {
        {UnaryOp::Sin, "sin"},       {UnaryOp::Cos, "cos"},         {UnaryOp::Tan, "tan"},
        {UnaryOp::Arcsin, "asin"},   {UnaryOp::Arccos, "acos"},     {UnaryOp::Arctan, "atan"},
        {UnaryOp::Sinh, "sinh"},     {UnaryOp::Cosh, "cosh"},       {UnaryOp::Tanh, "tanh"},
        {UnaryOp::Arcsinh, "asinh"}, {UnaryOp::Arccosh, "acosh"},   {UnaryOp::Arctanh, "atanh"},
        {UnaryOp::Exp, "exp"},       {UnaryOp::Exp2, "exp2"},       {UnaryOp::Expm1, "expm1"},
        {UnaryOp::Log, "log"},       {UnaryOp::Log2, "log2"},       {UnaryOp::Log10, "log10"},
        {UnaryOp::Log1p, "log1p"},   {UnaryOp::Cbrt, "cbrt"}};
    for (const auto& [op, fn] : unary) add(static_cast<int>(op), fn);
    // sqrt is correctly rounded (IEEE 754): the instruction NumPy's loops
    // and numfuse's kernels use gives the same bits.
    t[static_cast<int>(UnaryOp::Sqrt)] = {reinterpret_cast<void*>(+[](double x) { return std::sqrt(x); }),
                                           reinterpret_cast<void*>(+[](float x) { return std::sqrt(x); })};
    add(1000 + static_cast<int>(BinaryOp::Arctan2), "atan2");
    add(1000 + static_cast<int>(BinaryOp::Hypot), "hypot");
    return t;
  }();
  auto it = table.find(u->nin == 1 ? u->op : 1000 + u->op);
  return it == table.end() || !it->second.f64 ? nullptr : &it->second;
}

// 0: not a float scalar; 64: Python float or numpy.float64; 32: numpy.float32.
int float_scalar_bits(PyObject* o, double* v) {
  if (Py_TYPE(o) == &PyFloat_Type || Py_TYPE(o) == &PyDoubleArrType_Type) {
    *v = PyFloat_AS_DOUBLE(o);
    return 64;
  }
  if (Py_TYPE(o) == &PyFloatArrType_Type) {
    *v = PyArrayScalar_VAL(o, Float);
    return 32;
  }
  return 0;
}

// u of float scalars through that implementation, NumPy's result type
// (float64; float32 for float32 operands, a Python float being weak);
// nullptr (no error) where an input or the result is not finite or a flag
// other than `inexact` was raised: NumPy's scalar path then gives its
// result and its warnings.
PyObject* vmath_scalar(const Ufunc* u, PyObject* const* args) {
  const ScalarMath* m = scalar_math(u);
  if (!m) return nullptr;
  double x = 0, y = 0;
  const int bx = float_scalar_bits(args[0], &x), by = u->nin == 2 ? float_scalar_bits(args[1], &y) : bx;
  if (!bx || !by) return nullptr;
  const bool single = (bx == 32 && by == 32) || (bx == 32 && Py_TYPE(args[1]) == &PyFloat_Type) ||
                      (by == 32 && Py_TYPE(args[0]) == &PyFloat_Type);
  if (!single && (bx == 32 || by == 32)) return nullptr;  // float32 with a float64 scalar: float64, NumPy's
  if (!std::isfinite(x) || !std::isfinite(y)) return nullptr;
  double r;
#if defined(__x86_64__)
  // The flags of SSE arithmetic (what the math functions use), saved and
  // restored around the call: invalid, divide-by-zero, overflow, underflow.
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr & ~0x3Fu);
#else
  constexpr int kFlags = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW;
  fenv_t env;
  std::feholdexcept(&env);
#endif
  if (single) {
    const float fx = static_cast<float>(x), fy = static_cast<float>(y);
    r = u->nin == 2 ? reinterpret_cast<float (*)(float, float)>(m->f32)(fx, fy)
                    : reinterpret_cast<float (*)(float)>(m->f32)(fx);
  } else {
    r = u->nin == 2 ? reinterpret_cast<double (*)(double, double)>(m->f64)(x, y)
                    : reinterpret_cast<double (*)(double)>(m->f64)(x);
  }
#if defined(__x86_64__)
  const bool raised = (_mm_getcsr() & 0x1Du) != 0;
  _mm_setcsr(csr);
#else
  const bool raised = std::fetestexcept(kFlags) != 0;
  std::fesetenv(&env);
#endif
  if (raised || !std::isfinite(r)) return nullptr;
  if (single) {
    PyObject* o = PyArrayScalar_New(Float);
    if (o) PyArrayScalar_ASSIGN(o, Float, static_cast<float>(r));
    return o;
  }
  PyObject* o = PyArrayScalar_New(Double);
  if (o) PyArrayScalar_ASSIGN(o, Double, r);
  return o;
}

// The keywords of a ufunc call the fast path takes: `out` (None, a numfuse
// array, or a tuple of one) into *out, and the others at their defaults
// (numfuse's own functions pass out=None through); false for anything else.
bool plain_keywords(PyObject* const* kwargs, PyObject* kwnames, PyObject** out) {
  *out = Py_None;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    PyObject* v = kwargs[i];
    if (PyUnicode_CompareWithASCIIString(name, "out") == 0) {
      if (PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) == 1) v = PyTuple_GET_ITEM(v, 0);
      if (v != Py_None && !is_ndarray(py::handle(v))) return false;
      *out = v;
    } else if (PyUnicode_CompareWithASCIIString(name, "where") == 0) {
      if (v != Py_True) return false;
    } else if (PyUnicode_CompareWithASCIIString(name, "casting") == 0) {
      if (!PyUnicode_Check(v) || PyUnicode_CompareWithASCIIString(v, "same_kind") != 0) return false;
    } else if (PyUnicode_CompareWithASCIIString(name, "order") == 0) {
      if (!PyUnicode_Check(v) || PyUnicode_CompareWithASCIIString(v, "K") != 0) return false;
    } else if (PyUnicode_CompareWithASCIIString(name, "dtype") == 0) {
      if (v != Py_None) return false;
    } else if (PyUnicode_CompareWithASCIIString(name, "subok") == 0) {
      if (v != Py_True) return false;
    } else {
      return false;
    }
  }
  return true;
}

PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* u = reinterpret_cast<Ufunc*>(self);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  PyObject* out = Py_None;
  if (n == u->nin && plain_keywords(args + n, kwnames, &out) && !(n == 2 && needs_power_check(u, args[1])) &&
      !(out != Py_None && is_scalar(args[0]) && (n == 1 || is_scalar(args[1])))) {
    // Scalars only (a loop over elements): NumPy's scalar arithmetic, as
    // NumPy gives it, without trying to record first.
    if (out == Py_None && u->np && u->np != Py_None && is_scalar(args[0]) && (n == 1 || is_scalar(args[1]))) {
      if (PyObject* r = vmath_scalar(u, args)) return r;
      if (PyErr_Occurred()) return nullptr;
      return PyObject_Vectorcall(u->np, args, nargsf, kwnames);
    }
    PyObject* r = guarded([&] {
      py::handle y = n == 2 ? py::handle(args[1]) : py::handle(Py_None);
      return record_ufunc(u->nin, u->op, args[0], y, py::handle(out)).release().ptr();
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

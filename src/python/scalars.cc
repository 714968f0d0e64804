// NumPy scalars (numpy.float64, numpy.uint8, ...) made the way NumPy makes
// them for element access: PyArray_Scalar on the element's bytes. The only
// file that uses NumPy's C API.
#define PY_ARRAY_UNIQUE_SYMBOL numfuse_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include <cstring>

#include "python/bindings.h"

namespace nf::py_bind {

void init_numpy_api() {
  if (_import_array() < 0) throw py::error_already_set();
}

bool is_numpy_integer(PyObject* o) { return PyArray_IsScalar(o, Integer); }

PyObject* numpy_array_descr(PyObject* arr) {
  return reinterpret_cast<PyObject*>(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(arr)));
}

PyObject* numpy_view(PyObject* descr, int nd, const int64_t* shape, const int64_t* byte_strides, void* data,
                     bool writeable, PyObject* base) {
  static_assert(sizeof(npy_intp) == sizeof(int64_t));
  Py_INCREF(descr);  // PyArray_NewFromDescr steals it
  PyObject* arr = PyArray_NewFromDescr(&PyArray_Type, reinterpret_cast<PyArray_Descr*>(descr), nd,
                                       reinterpret_cast<const npy_intp*>(shape),
                                       reinterpret_cast<const npy_intp*>(byte_strides), data,
                                       writeable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
  if (!arr) {
    Py_DECREF(base);
    return nullptr;
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), base) < 0) {  // steals base
    Py_DECREF(arr);
    return nullptr;
  }
  return arr;
}

bool numpy_array_native(PyObject* arr) {
  return PyArray_ISNBO(PyArray_DESCR(reinterpret_cast<PyArrayObject*>(arr))->byteorder);
}

int64_t numpy_array_nbytes(PyObject* arr) { return PyArray_NBYTES(reinterpret_cast<PyArrayObject*>(arr)); }

bool is_numpy_generic_scalar(PyObject* o) { return PyArray_IsScalar(o, Generic); }

bool numpy_fresh_array(PyObject* o) {
  return PyArray_CheckExact(o) && PyArray_BASE(reinterpret_cast<PyArrayObject*>(o)) == nullptr;
}

bool adopt_fresh_array(PyObject* o, View* out) {
  if (!numpy_fresh_array(o)) return false;
  auto* a = reinterpret_cast<PyArrayObject*>(o);
  if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder) ||
      !PyArray_ISWRITEABLE(a))
    return false;
  std::optional<DType> t = to_dtype(py::handle(reinterpret_cast<PyObject*>(PyArray_DESCR(a))));
  if (!t) return false;
  View v;
  v.dtype = *t;
  const int nd = PyArray_NDIM(a);
  for (int i = 0; i < nd; ++i) v.shape.push_back(PyArray_DIM(a, i));
  v.strides = c_strides(v.shape);
  v.offset = 0;
  Py_INCREF(o);
  v.buffer = Buffer::adopt(PyArray_DATA(a), std::max<int64_t>(PyArray_NBYTES(a), itemsize(*t)), [o] {
    const PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(o);
    PyGILState_Release(g);
  });
  *out = std::move(v);
  return true;
}

bool numpy_owns_memory(PyObject* arr) {
  PyObject* o = arr;
  for (int depth = 0; depth < 64; ++depth) {
    PyObject* base = PyArray_BASE(reinterpret_cast<PyArrayObject*>(o));
    if (!base) return true;
    if (!PyArray_Check(base)) return false;
    o = base;
  }
  return false;
}

namespace {
template <typename T>
T load_value(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A NumPy scalar of type `tp` holding the C value v (what PyArray_Scalar
// makes, without its descriptor handling: element access is hot).
template <typename T>
PyObject* make(PyTypeObject* tp, const void* data) {
  PyObject* o = tp->tp_alloc(tp, 0);
  if (!o) return nullptr;
  T v;
  std::memcpy(&v, data, sizeof v);
  std::memcpy(reinterpret_cast<char*>(o) + sizeof(PyObject), &v, sizeof v);
  return o;
}

// The 256 values of int8 and uint8 (kind 0, 1), made once: NumPy scalars are
// immutable, and a loop over bytes (`for b in data`) then allocates nothing.
// Returns a new reference.
PyObject* small_scalar(PyTypeObject* tp, int kind, unsigned char byte) {
  static PyObject* cache[2][256] = {};
  PyObject*& slot = cache[kind][byte];
  if (!slot) slot = make<unsigned char>(tp, &byte);  // (kept for the process's life)
  Py_XINCREF(slot);
  return slot;
}
}  // namespace

py::object numpy_scalar(DType t, const void* data) {
  PyObject* s = nullptr;
  switch (t) {
    case DType::Bool:
      s = *static_cast<const unsigned char*>(data) ? PyArrayScalar_True : PyArrayScalar_False;
      Py_INCREF(s);
      break;
    case DType::Int8: s = small_scalar(&PyByteArrType_Type, 0, *static_cast<const unsigned char*>(data)); break;
    case DType::Int16: s = make<npy_short>(&PyShortArrType_Type, data); break;
    case DType::Int32: s = make<npy_int>(&PyIntArrType_Type, data); break;
    case DType::Int64: s = make<npy_long>(&PyLongArrType_Type, data); break;
    case DType::UInt8: s = small_scalar(&PyUByteArrType_Type, 1, *static_cast<const unsigned char*>(data)); break;
    case DType::UInt16: s = make<npy_ushort>(&PyUShortArrType_Type, data); break;
    case DType::UInt32: s = make<npy_uint>(&PyUIntArrType_Type, data); break;
    case DType::UInt64: s = make<npy_ulong>(&PyULongArrType_Type, data); break;
    case DType::Float32: s = make<npy_float>(&PyFloatArrType_Type, data); break;
    case DType::Float64: s = make<npy_double>(&PyDoubleArrType_Type, data); break;
    case DType::Complex64: s = make<npy_cfloat>(&PyCFloatArrType_Type, data); break;
    case DType::Complex128: s = make<npy_cdouble>(&PyCDoubleArrType_Type, data); break;
  }
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(s);
}

PyObject* python_scalar(DType t, const void* data) {
  auto load = [&](auto v) {
    std::memcpy(&v, data, sizeof v);
    return v;
  };
  switch (t) {
    case DType::Bool: return PyBool_FromLong(*static_cast<const unsigned char*>(data) != 0);
    case DType::Int8: return PyLong_FromLong(load(int8_t{}));
    case DType::Int16: return PyLong_FromLong(load(int16_t{}));
    case DType::Int32: return PyLong_FromLong(load(int32_t{}));
    case DType::Int64: return PyLong_FromLongLong(load(int64_t{}));
    case DType::UInt8: return PyLong_FromUnsignedLong(load(uint8_t{}));
    case DType::UInt16: return PyLong_FromUnsignedLong(load(uint16_t{}));
    case DType::UInt32: return PyLong_FromUnsignedLong(load(uint32_t{}));
    case DType::UInt64: return PyLong_FromUnsignedLongLong(load(uint64_t{}));
    case DType::Float32: return PyFloat_FromDouble(load(float{}));
    case DType::Float64: return PyFloat_FromDouble(load(double{}));
    case DType::Complex64: {
      float v[2];
      std::memcpy(v, data, sizeof v);
      return PyComplex_FromDoubles(v[0], v[1]);
    }
    case DType::Complex128: {
      double v[2];
      std::memcpy(v, data, sizeof v);
      return PyComplex_FromDoubles(v[0], v[1]);
    }
  }
  return nullptr;
}

py::object numpy_scalar(const Scalar& value) {
  alignas(16) unsigned char bytes[16];
  value.store(bytes);
  return numpy_scalar(value.dtype, bytes);
}

int numpy_scalar_value(PyObject* o, Scalar* out) {
  // The common exact types first (a NumPy scalar stores its value right
  // after the object header).
  PyTypeObject* tp = Py_TYPE(o);
  const char* val = reinterpret_cast<const char*>(o) + sizeof(PyObject);
  if (tp == &PyDoubleArrType_Type) {
    *out = Scalar::of_float(DType::Float64, load_value<double>(val));
    return 1;
  }
  if (tp == &PyLongArrType_Type) {
    *out = Scalar::of_int(DType::Int64, load_value<npy_long>(val));
    return 1;
  }
  if (tp == &PyFloatArrType_Type) {
    *out = Scalar::of_float(DType::Float32, load_value<float>(val));
    return 1;
  }
  if (tp == &PyIntArrType_Type) {
    *out = Scalar::of_int(DType::Int32, load_value<npy_int>(val));
    return 1;
  }
  if (tp == &PyBoolArrType_Type) {
    *out = Scalar::of_bool(load_value<npy_bool>(val) != 0);
    return 1;
  }
  if (!PyArray_IsScalar(o, Generic)) return 0;
  PyArray_Descr* d = PyArray_DescrFromScalar(o);  // new reference
  if (!d) {
    PyErr_Clear();
    return -1;
  }
  const char kind = d->kind;
  const int64_t size = PyDataType_ELSIZE(d);
  Py_DECREF(d);
  alignas(16) unsigned char buf[32] = {};
  auto load = [&](auto v) {
    std::memcpy(&v, buf, sizeof v);
    return v;
  };
  if (kind == 'c' && (size == 8 || size == 16)) {
    PyArray_ScalarAsCtype(o, buf);
    if (size == 8) {
      float v[2];
      std::memcpy(v, buf, sizeof v);
      *out = Scalar::of_complex(DType::Complex64, v[0], v[1]);
    } else {
      double v[2];
      std::memcpy(v, buf, sizeof v);
      *out = Scalar::of_complex(DType::Complex128, v[0], v[1]);
    }
    return 1;
  }
  if ((kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') || size > 8) return -1;
  PyArray_ScalarAsCtype(o, buf);
  switch (kind) {
    case 'b':
      *out = Scalar::of_bool(buf[0] != 0);
      return 1;
    case 'f':
      if (size == 4) *out = Scalar::of_float(DType::Float32, load(float{}));
      else if (size == 8) *out = Scalar::of_float(DType::Float64, load(double{}));
      else return -1;  // float16
      return 1;
    case 'i':
      if (size == 1) *out = Scalar::of_int(DType::Int8, load(int8_t{}));
      else if (size == 2) *out = Scalar::of_int(DType::Int16, load(int16_t{}));
      else if (size == 4) *out = Scalar::of_int(DType::Int32, load(int32_t{}));
      else *out = Scalar::of_int(DType::Int64, load(int64_t{}));
      return 1;
    default:
      if (size == 1) *out = Scalar::of_uint(DType::UInt8, load(uint8_t{}));
      else if (size == 2) *out = Scalar::of_uint(DType::UInt16, load(uint16_t{}));
      else if (size == 4) *out = Scalar::of_uint(DType::UInt32, load(uint32_t{}));
      else *out = Scalar::of_uint(DType::UInt64, load(uint64_t{}));
      return 1;
  }
}

}  // namespace nf::py_bind

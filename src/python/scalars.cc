// NumPy scalars (numpy.float64, numpy.uint8, ...) made the way NumPy makes
// them for element access: PyArray_Scalar on the element's bytes. The only
// file that uses NumPy's C API.
#define PY_ARRAY_UNIQUE_SYMBOL numfuse_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>

#include <cstring>

#include "python/bindings.h"

namespace nf::py_bind {

void init_numpy_api() {
  if (_import_array() < 0) throw py::error_already_set();
}

py::object numpy_scalar(DType t, const void* data) {
  PyObject* descr = dtype_object(t).ptr();
  PyObject* s = PyArray_Scalar(const_cast<void*>(data), reinterpret_cast<PyArray_Descr*>(descr), nullptr);
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(s);
}

py::object numpy_scalar(const Scalar& value) {
  alignas(8) unsigned char bytes[8];
  value.store(bytes);
  return numpy_scalar(value.dtype, bytes);
}

int numpy_scalar_value(PyObject* o, Scalar* out) {
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

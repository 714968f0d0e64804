// NumPy scalars (numpy.float64, numpy.uint8, ...) made the way NumPy makes
// them for element access: PyArray_Scalar on the element's bytes. The only
// file that uses NumPy's C API.
#define PY_ARRAY_UNIQUE_SYMBOL numfuse_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>

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

}  // namespace nf::py_bind

// Errors raised while recording. The Python bindings translate each to the
// exception type NumPy raises for the same mistake.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace nf {

struct ValueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct IndexError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// numpy.exceptions.AxisError (a ValueError and an IndexError).
struct AxisError : std::runtime_error {
  AxisError(int64_t axis, int64_t ndim)
      : std::runtime_error("axis " + std::to_string(axis) + " is out of bounds for array of dimension " +
                           std::to_string(ndim)),
        axis(axis),
        ndim(ndim) {}
  int64_t axis, ndim;
};
// A ufunc result that cannot be cast to `out=` (NumPy's
// numpy._core._exceptions._UFuncOutputCastingError, a TypeError).
struct OutputCastingError : std::runtime_error {
  OutputCastingError(const std::string& msg, std::string ufunc, int from, int to)
      : std::runtime_error(msg), ufunc(std::move(ufunc)), from(from), to(to) {}
  std::string ufunc;
  int from, to;  // DType values
};
// Python-level OverflowError (a Python int that does not fit the array type).
struct OverflowError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An allocation NumPy would refuse (numpy._core._exceptions._ArrayMemoryError,
// "Unable to allocate 7.28 TiB for an array with shape (...) and data type
// float64"). `shape` is empty and `dtype` -1 when only the byte count is known
// (an allocation failing while a flush runs).
struct MemoryError : std::runtime_error {
  MemoryError(std::vector<int64_t> shape, int dtype, int64_t nbytes)
      : std::runtime_error("Unable to allocate " + std::to_string(nbytes) + " bytes"),
        shape(std::move(shape)),
        dtype(dtype),
        nbytes(nbytes) {}
  std::vector<int64_t> shape;
  int dtype;
  int64_t nbytes;
};

// The operation needs a type numfuse does not compute in (float16, complex,
// ...): the caller runs it with NumPy instead.
struct FallbackRequired : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Normalizes a possibly negative axis; throws AxisError.
inline int normalize_axis(int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim) throw AxisError(axis, ndim);
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

}  // namespace nf

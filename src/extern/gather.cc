// Gathers (numpy.take, take_along_axis; integer-array indexing along one
// axis) as a black-box routine on computed memory, rows in parallel.
#include <stdexcept>
#include <string>
#include <vector>

#include <tbb/parallel_for.h>

#include "core/error.h"
#include "extern/extern.h"

namespace nf::ext {

namespace {

// The element offsets of every point of `shape` in view v's layout (C
// order), for the dimensions listed in `dims` of v (the others fixed at 0).
std::vector<int64_t> offsets(const View& v, const std::vector<int>& dims) {
  int64_t count = 1;
  for (int d : dims) count *= v.shape[d];
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  if (count == 0) return out;
  const int n = static_cast<int>(dims.size());
  std::vector<int64_t> idx(n, 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t off = 0;
    for (int j = 0; j < n; ++j) off += idx[j] * v.strides[dims[j]];
    out.push_back(off);
    for (int j = n - 1; j >= 0; --j) {
      if (++idx[j] < v.shape[dims[j]]) break;
      idx[j] = 0;
    }
  }
  return out;
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> r;
  for (int d = lo; d < hi; ++d) r.push_back(d);
  return r;
}

}  // namespace

void take(const View& a, const View& indices, int axis, const View& out) {
  const int nd = static_cast<int>(a.ndim()), ni = static_cast<int>(indices.ndim());
  if (indices.dtype != DType::Int64) throw std::invalid_argument("take: indices must be int64");
  if (out.dtype != a.dtype || static_cast<int>(out.ndim()) != nd - 1 + ni)
    throw std::invalid_argument("take: output of the wrong type or rank");
  const int64_t size = a.shape[axis];
  // The indices, checked and wrapped as NumPy's mode='raise' does.
  const std::vector<int64_t> ioff = offsets(indices, range(0, ni));
  const int64_t* ip = static_cast<const int64_t*>(indices.buffer->data());
  std::vector<int64_t> idx(ioff.size());
  for (size_t k = 0; k < ioff.size(); ++k) {
    int64_t i = ip[indices.offset + ioff[k]];
    if (i < -size || i >= size)
      throw IndexError("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                       " with size " + std::to_string(size));
    idx[k] = i < 0 ? i + size : i;
  }
  // out[outer..., j..., inner...] = a[outer..., idx[j...], inner...]
  const std::vector<int64_t> a_outer = offsets(a, range(0, axis));
  const std::vector<int64_t> a_inner = offsets(a, range(axis + 1, nd));
  const std::vector<int64_t> o_outer = offsets(out, range(0, axis));
  const std::vector<int64_t> o_mid = offsets(out, range(axis, axis + ni));
  const std::vector<int64_t> o_inner = offsets(out, range(axis + ni, nd - 1 + ni));
  const int64_t is = itemsize(a.dtype);
  const char* src = static_cast<const char*>(a.buffer->data()) + a.offset * is;
  char* dst = static_cast<char*>(out.buffer->data()) + out.offset * is;
  const int64_t astride = a.strides[axis];
  tbb::parallel_for(size_t(0), a_outer.size(), [&](size_t o) {
    for (size_t j = 0; j < idx.size(); ++j) {
      const char* s = src + (a_outer[o] + idx[j] * astride) * is;
      char* d = dst + (o_outer[o] + o_mid[j]) * is;
      for (size_t k = 0; k < a_inner.size(); ++k) copy_element(d + o_inner[k] * is, s + a_inner[k] * is, static_cast<int>(is));
    }
  });
}

}  // namespace nf::ext

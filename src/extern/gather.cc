// Gathers (numpy.take, take_along_axis; integer-array indexing along one
// axis) as a black-box routine on computed memory, rows in parallel.
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/error.h"
#include "extern/dispatch.h"
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

// NumPy's mode='raise' error for index i along `axis` of extent `size`.
[[noreturn]] void out_of_bounds(int64_t i, int axis, int64_t size) {
  throw IndexError("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                   " with size " + std::to_string(size));
}

// A 1-D int64 index array's first element and stride, every index checked
// against `size` first (nothing is read or written before an error).
const int64_t* checked_vector(const View& indices, int64_t size, int axis, int64_t* stride) {
  const int64_t* ip = static_cast<const int64_t*>(indices.buffer->data()) + indices.offset;
  const int64_t n = indices.shape[0], st = indices.strides[0];
  for (int64_t j = 0; j < n; ++j)
    if (ip[j * st] < -size || ip[j * st] >= size) out_of_bounds(ip[j * st], axis, size);
  *stride = st;
  return ip;
}

// The indices (any shape, C order), checked and wrapped as NumPy's
// mode='raise' does: IndexError for the first out of range.
std::vector<int64_t> checked_indices(const View& indices, int64_t size, int axis) {
  const int64_t* ip = static_cast<const int64_t*>(indices.buffer->data()) + indices.offset;
  std::vector<int64_t> idx(static_cast<size_t>(indices.size()));
  auto check = [&](int64_t i) {
    if (i < -size || i >= size) out_of_bounds(i, axis, size);
    return i < 0 ? i + size : i;
  };
  if (indices.ndim() == 1) {
    const int64_t st = indices.strides[0];
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = check(ip[static_cast<int64_t>(k) * st]);
    return idx;
  }
  const std::vector<int64_t> ioff = offsets(indices, range(0, static_cast<int>(indices.ndim())));
  for (size_t k = 0; k < ioff.size(); ++k) idx[k] = check(ip[ioff[k]]);
  return idx;
}

}  // namespace

void take(const View& a, const View& indices, int axis, const View& out) {
  const int nd = static_cast<int>(a.ndim()), ni = static_cast<int>(indices.ndim());
  if (indices.dtype != DType::Int64) throw std::invalid_argument("take: indices must be int64");
  if (out.dtype != a.dtype || static_cast<int>(out.ndim()) != nd - 1 + ni)
    throw std::invalid_argument("take: output of the wrong type or rank");
  if (nd == 1 && ni == 1 && indices.shape[0] < 32768) {
    // a[idx] on a vector (loops gather a few elements at a time): no
    // offset tables, the indices checked first as NumPy does.
    const int64_t n = a.shape[0], m = indices.shape[0], is = itemsize(a.dtype);
    const int64_t ast = a.strides[0] * is, ost = out.strides[0] * is;
    int64_t ist;
    const int64_t* ip = checked_vector(indices, n, 0, &ist);
    const char* src = static_cast<const char*>(a.buffer->data()) + a.offset * is;
    char* dst = static_cast<char*>(out.buffer->data()) + out.offset * is;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = ip[j * ist];
      copy_element(dst + j * ost, src + (i < 0 ? i + n : i) * ast, static_cast<int>(is));
    }
    return;
  }
  const std::vector<int64_t> idx = checked_indices(indices, a.shape[axis], axis);
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
  // Inner points contiguous on both sides: one copy per gathered row.
  bool rows = !a_inner.empty();
  for (size_t k = 0; rows && k < a_inner.size(); ++k) rows = a_inner[k] == int64_t(k) && o_inner[k] == int64_t(k);
  const size_t row_bytes = a_inner.size() * static_cast<size_t>(is);
  auto body = [&](size_t o) {
    for (size_t j = 0; j < idx.size(); ++j) {
      const char* s = src + (a_outer[o] + idx[j] * astride) * is;
      char* d = dst + (o_outer[o] + o_mid[j]) * is;
      if (rows) {
        std::memcpy(d, s, row_bytes);
        continue;
      }
      for (size_t k = 0; k < a_inner.size(); ++k) copy_element(d + o_inner[k] * is, s + a_inner[k] * is, static_cast<int>(is));
    }
  };
  if (a_outer.size() * idx.size() * a_inner.size() < 32768) {  // small: no threads
    for (size_t o = 0; o < a_outer.size(); ++o) body(o);
    return;
  }
  if (a_outer.size() == 1) {  // one outer point: the gathered rows in parallel
    tbb::parallel_for(tbb::blocked_range<size_t>(0, idx.size()), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t j = r.begin(); j < r.end(); ++j) {
        const char* s = src + (a_outer[0] + idx[j] * astride) * is;
        char* d = dst + (o_outer[0] + o_mid[j]) * is;
        if (rows) {
          std::memcpy(d, s, row_bytes);
          continue;
        }
        for (size_t k = 0; k < a_inner.size(); ++k)
          copy_element(d + o_inner[k] * is, s + a_inner[k] * is, static_cast<int>(is));
      }
    });
    return;
  }
  tbb::parallel_for(size_t(0), a_outer.size(), body);
}

namespace {

// Contiguous masks are read 8 bytes at a time (NumPy's own way): a word of
// false skips 8 elements, a word of true moves 8 as one block, only mixed
// words go element by element.
constexpr uint64_t kAllTrue = 0x0101010101010101ull;

uint64_t mask_word(const uint8_t* m) {
  uint64_t w;
  std::memcpy(&w, m, 8);
  return w;
}

// The number of nonzero bytes of w.
int nonzero_bytes(uint64_t w) {
  constexpr uint64_t lo7 = 0x7f7f7f7f7f7f7f7full;
  const uint64_t ones = ((((w & lo7) + lo7) | w) & ~lo7) >> 7;  // 1 in each nonzero byte
  return static_cast<int>((ones * kAllTrue) >> 56);  // (their sum; no popcnt in the baseline ISA)
}

template <int IS>
int64_t gather_contiguous(const char* src, const uint8_t* m, int64_t n, char* dst) {
  int64_t k = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = mask_word(m + i);
    if (w == 0) continue;
    if (w == kAllTrue) {
      std::memcpy(dst + k * IS, src + i * IS, 8 * IS);
      k += 8;
      continue;
    }
    for (int j = 0; j < 8; ++j)
      if (m[i + j]) std::memcpy(dst + (k++) * IS, src + (i + j) * IS, IS);
  }
  for (; i < n; ++i)
    if (m[i]) std::memcpy(dst + (k++) * IS, src + i * IS, IS);
  return k;
}

// vstep: the values' step in bytes (0: one value for every element).
template <int IS>
void scatter_contiguous(char* dst, const uint8_t* m, int64_t n, const char* src, int64_t vstep) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = mask_word(m + i);
    if (w == 0) continue;
    if (w == kAllTrue && vstep == IS) {
      std::memcpy(dst + i * IS, src, 8 * IS);
      src += 8 * IS;
      continue;
    }
    for (int j = 0; j < 8; ++j)
      if (m[i + j]) {
        std::memcpy(dst + (i + j) * IS, src, IS);
        src += vstep;
      }
  }
  for (; i < n; ++i)
    if (m[i]) {
      std::memcpy(dst + i * IS, src, IS);
      src += vstep;
    }
}

}  // namespace

int64_t count_true(const View& mask) {
  if (mask.is_c_contiguous()) {
    const uint8_t* m = static_cast<const uint8_t*>(mask.buffer->data()) + mask.offset;
    const int64_t e = mask.size();
    int64_t n = 0, i = 0;
    for (; i + 8 <= e; i += 8) n += nonzero_bytes(mask_word(m + i));
    for (; i < e; ++i) n += m[i] != 0;
    return n;
  }
  const int nd = static_cast<int>(mask.ndim());
  const std::vector<int64_t> mo = offsets(mask, range(0, nd));
  const uint8_t* m = static_cast<const uint8_t*>(mask.buffer->data()) + mask.offset;
  int64_t n = 0;
  for (int64_t o : mo) n += m[o] != 0;
  return n;
}

void mask_scatter(const View& a, const View& mask, const View& values) {
  if (mask.shape != a.shape || mask.dtype != DType::Bool || values.dtype != a.dtype || values.ndim() != 1)
    throw std::invalid_argument("mask_scatter: mask of the array's shape, 1-D values of its type");
  if (a.is_c_contiguous() && mask.is_c_contiguous()) {
    const int64_t is = itemsize(a.dtype);
    char* dst = static_cast<char*>(a.buffer->data()) + a.offset * is;
    const uint8_t* m = static_cast<const uint8_t*>(mask.buffer->data()) + mask.offset;
    const char* src = static_cast<const char*>(values.buffer->data()) + values.offset * is;
    const int64_t vstep = (values.strides.empty() ? 0 : values.strides[0]) * is;
    with_dtype(a.dtype, [&](auto t) { scatter_contiguous<sizeof t>(dst, m, a.size(), src, vstep); });
    return;
  }
  const int nd = static_cast<int>(a.ndim());
  const std::vector<int64_t> ao = offsets(a, range(0, nd)), mo = offsets(mask, range(0, nd));
  const int64_t is = itemsize(a.dtype);
  char* dst = static_cast<char*>(a.buffer->data()) + a.offset * is;
  const uint8_t* m = static_cast<const uint8_t*>(mask.buffer->data()) + mask.offset;
  const char* src = static_cast<const char*>(values.buffer->data()) + values.offset * is;
  const int64_t vstride = values.strides.empty() ? 0 : values.strides[0];
  int64_t n = 0;
  for (size_t k = 0; k < ao.size(); ++k)
    if (m[mo[k]]) copy_element(dst + ao[k] * is, src + (n++) * vstride * is, static_cast<int>(is));
}

void mask_gather(const View& a, const View& mask, const View& out) {
  if (mask.shape != a.shape || mask.dtype != DType::Bool || out.dtype != a.dtype || out.ndim() != 1)
    throw std::invalid_argument("mask_gather: mask of the array's shape, 1-D output of its type");
  const int64_t is = itemsize(a.dtype);
  if (a.is_c_contiguous() && mask.is_c_contiguous() && (out.ndim() == 1 && (out.shape[0] <= 1 || out.strides[0] == 1))) {
    const char* src = static_cast<const char*>(a.buffer->data()) + a.offset * is;
    const uint8_t* m = static_cast<const uint8_t*>(mask.buffer->data()) + mask.offset;
    char* dst = static_cast<char*>(out.buffer->data()) + out.offset * is;
    int64_t n = 0;
    with_dtype(a.dtype, [&](auto t) { n = gather_contiguous<sizeof t>(src, m, a.size(), dst); });
    if (n != out.shape[0]) throw std::logic_error("mask_gather: the output's length is not the mask's count");
    return;
  }
  const int nd = static_cast<int>(a.ndim());
  const std::vector<int64_t> ao = offsets(a, range(0, nd)), mo = offsets(mask, range(0, nd));
  const char* src = static_cast<const char*>(a.buffer->data()) + a.offset * is;
  const uint8_t* m = static_cast<const uint8_t*>(mask.buffer->data()) + mask.offset;
  char* dst = static_cast<char*>(out.buffer->data()) + out.offset * is;
  const int64_t ostride = out.strides.empty() ? 1 : out.strides[0];
  int64_t n = 0;
  for (size_t k = 0; k < ao.size(); ++k)
    if (m[mo[k]]) copy_element(dst + (n++) * ostride * is, src + ao[k] * is, static_cast<int>(is));
  if (n != out.shape[0]) throw std::logic_error("mask_gather: the output's length is not the mask's count");
}

namespace {
template <typename T>
void add_into(char* d, const char* s) {
  T x, y;
  std::memcpy(&x, d, sizeof x);
  std::memcpy(&y, s, sizeof y);
  if constexpr (std::is_same_v<T, bool>) x = x || y;
  else x = static_cast<T>(x + y);
  std::memcpy(d, &x, sizeof x);
}


using AddFn = void (*)(char*, const char*);
AddFn adder(DType t) {
  switch (t) {
    case DType::Bool: return add_into<bool>;
    case DType::Int8: return add_into<int8_t>;
    case DType::Int16: return add_into<int16_t>;
    case DType::Int32: return add_into<int32_t>;
    case DType::Int64: return add_into<int64_t>;
    case DType::UInt8: return add_into<uint8_t>;
    case DType::UInt16: return add_into<uint16_t>;
    case DType::UInt32: return add_into<uint32_t>;
    case DType::UInt64: return add_into<uint64_t>;
    case DType::Float32: return add_into<float>;
    case DType::Float64: return add_into<double>;
    case DType::Complex64: return add_into<std::complex<float>>;
    case DType::Complex128: return add_into<std::complex<double>>;
  }
  return nullptr;
}
}  // namespace

void put(const View& target, const View& indices, int axis, const View& values, bool accumulate) {
  const int nd = static_cast<int>(target.ndim()), ni = static_cast<int>(indices.ndim());
  if (indices.dtype != DType::Int64) throw std::invalid_argument("put: indices must be int64");
  if (values.dtype != target.dtype || static_cast<int>(values.ndim()) != nd - 1 + ni)
    throw std::invalid_argument("put: values of the wrong type or rank");
  if (nd == 1 && ni == 1 && !accumulate && indices.shape[0] < 32768) {
    // a[idx] = v on a vector (loops store a few elements at a time): no
    // offset tables; the indices checked first, then stored in order (a
    // repeated index keeps the last value, as NumPy's).
    const int64_t size = target.shape[0], n = indices.shape[0], is = itemsize(target.dtype);
    const int64_t tst = target.strides[0] * is, vst = values.strides[0] * is;
    int64_t ist;
    const int64_t* ip = checked_vector(indices, size, 0, &ist);
    char* dst = static_cast<char*>(target.buffer->data()) + target.offset * is;
    const char* src = static_cast<const char*>(values.buffer->data()) + values.offset * is;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = ip[j * ist];
      copy_element(dst + (i < 0 ? i + size : i) * tst, src + j * vst, static_cast<int>(is));
    }
    return;
  }
  const std::vector<int64_t> t_outer = offsets(target, range(0, axis));
  const std::vector<int64_t> t_inner = offsets(target, range(axis + 1, nd));
  const std::vector<int64_t> v_outer = offsets(values, range(0, axis));
  // One 1-D index array into a target without inner dimensions (a histogram's
  // add.at): checked in one pass, applied in a second, nothing materialized.
  if (ni == 1 && t_inner.size() == 1 && t_inner[0] == 0 && axis == nd - 1) {
    const int64_t size = target.shape[axis], n = indices.shape[0];
    int64_t ist;
    const int64_t* ip = checked_vector(indices, size, axis, &ist);
    const int64_t is = itemsize(target.dtype);
    const int64_t tstride = target.strides[axis], vstep = values.strides[axis];
    with_dtype(target.dtype, [&](auto t) {
      using T = decltype(t);
      for (size_t o = 0; o < t_outer.size(); ++o) {
        T* d = reinterpret_cast<T*>(static_cast<char*>(target.buffer->data()) + target.offset * is) + t_outer[o];
        const T* sv =
            reinterpret_cast<const T*>(static_cast<const char*>(values.buffer->data()) + values.offset * is) +
            v_outer[o];
        for (int64_t j = 0; j < n; ++j) {
          int64_t i = ip[j * ist];
          i += i < 0 ? size : 0;
          T& x = d[i * tstride];
          if (!accumulate) x = sv[j * vstep];
          else if constexpr (std::is_same_v<T, bool>) x = x || sv[j * vstep];
          else x = static_cast<T>(x + sv[j * vstep]);
        }
      }
    });
    return;
  }
  const std::vector<int64_t> idx = checked_indices(indices, target.shape[axis], axis);
  // (One index dimension: the values' offsets along it are j * stride.)
  const std::vector<int64_t> v_mid = ni == 1 ? std::vector<int64_t>() : offsets(values, range(axis, axis + ni));
  const int64_t v_step = ni == 1 ? values.strides[axis] : 0;
  auto vmid = [&](size_t j) { return ni == 1 ? static_cast<int64_t>(j) * v_step : v_mid[j]; };
  const std::vector<int64_t> v_inner = offsets(values, range(axis + ni, nd - 1 + ni));
  const int64_t is = itemsize(target.dtype);
  char* dst = static_cast<char*>(target.buffer->data()) + target.offset * is;
  const char* src = static_cast<const char*>(values.buffer->data()) + values.offset * is;
  const int64_t tstride = target.strides[axis];
  // No inner dimensions (a 1-D target, or the last axis): typed loops, one
  // element per index (numpy.add.at(counts, bins, 1) at memory speed).
  if (t_inner.size() == 1 && t_inner[0] == 0 && v_inner.size() == 1 && v_inner[0] == 0) {
    with_dtype(target.dtype, [&](auto t) {
      using T = decltype(t);
      T* d0 = reinterpret_cast<T*>(dst);
      const T* s0 = reinterpret_cast<const T*>(src);
      for (size_t o = 0; o < t_outer.size(); ++o) {
        T* d = d0 + t_outer[o];
        const T* sv = s0 + v_outer[o];
        if (accumulate) {
          for (size_t j = 0; j < idx.size(); ++j) {
            if constexpr (std::is_same_v<T, bool>) d[idx[j] * tstride] = d[idx[j] * tstride] || sv[vmid(j)];
            else d[idx[j] * tstride] = static_cast<T>(d[idx[j] * tstride] + sv[vmid(j)]);
          }
        } else {
          for (size_t j = 0; j < idx.size(); ++j) d[idx[j] * tstride] = sv[vmid(j)];
        }
      }
    });
    return;
  }
  const AddFn add = adder(target.dtype);
  // Rows (outer points) in parallel; within a row the indices in order, so a
  // repeated index keeps the last value (assignment) or every value (add.at).
  tbb::parallel_for(size_t(0), t_outer.size(), [&](size_t o) {
    for (size_t j = 0; j < idx.size(); ++j) {
      char* d = dst + (t_outer[o] + idx[j] * tstride) * is;
      const char* s = src + (v_outer[o] + vmid(j)) * is;
      for (size_t k = 0; k < t_inner.size(); ++k) {
        if (accumulate) add(d + t_inner[k] * is, s + v_inner[k] * is);
        else copy_element(d + t_inner[k] * is, s + v_inner[k] * is, static_cast<int>(is));
      }
    }
  });
}

}  // namespace nf::ext

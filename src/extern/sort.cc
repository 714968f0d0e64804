// Stable argsort, searchsorted and nonzero as black-box routines on
// computed memory (value sorts run NumPy's SIMD sort:
// python/numfuse/_sorting.py). For argsort each row along the axis is
// gathered into a contiguous scratch row and sorted there; rows run in
// parallel on TBB's threads, and a single long row is sorted in parallel
// chunks merged pairwise (faster than NumPy's stable argsort, whose ties it
// orders the same way: by index).
//
// Order is NumPy's: ascending, NaNs last (a float NaN compares after
// everything, as NumPy's sort puts NaNs at the end).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "extern/dispatch.h"
#include "extern/extern.h"

namespace nf::ext {

namespace {


// NumPy's order: NaN after everything.
// Complex numbers: lexicographic, NaNs last (NumPy's npysort CLT).
template <typename T>
inline bool less(T a, T b) {
  if constexpr (is_complex_v<T>) {
    const auto ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
    if (ar < br) return ai == ai || bi != bi;
    if (ar > br) return bi != bi && ai == ai;
    if (ar == br || (ar != ar && br != br)) return ai < bi || (bi != bi && ai == ai);
    return br != br;
  } else if constexpr (std::is_floating_point_v<T>) {
    return a < b || (std::isnan(b) && !std::isnan(a));
  } else {
    return a < b;
  }
}

// The rows of `v` along `axis`: the element offset of each row's first
// element (in v's elements, from its buffer start) and the row's stride.
struct Rows {
  std::vector<int64_t> starts;
  int64_t len = 0, stride = 0;
};

Rows rows_of(const View& v, int axis) {
  Rows r;
  const int nd = static_cast<int>(v.ndim());
  r.len = nd ? v.shape[axis] : 1;
  r.stride = nd ? v.strides[axis] : 0;
  int64_t count = 1;
  for (int d = 0; d < nd; ++d)
    if (d != axis) count *= v.shape[d];
  if (r.len == 0) count = 0;
  r.starts.reserve(static_cast<size_t>(count));
  SmallVector<int64_t, 8> idx(nd, 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t off = v.offset;
    for (int d = 0; d < nd; ++d) off += idx[d] * v.strides[d];
    r.starts.push_back(off);
    for (int d = nd - 1; d >= 0; --d) {
      if (d == axis) continue;
      if (++idx[d] < v.shape[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

// The permutation that sorts `keys` stably (index order among equals), in
// parallel chunks merged pairwise: for one long row. `index` holds the
// positions on entry (0..n-1) and the permutation on return.
template <typename T>
void parallel_stable_argsort(const std::vector<T>& keys, std::vector<int64_t>& index) {
  const size_t n = keys.size();
  const size_t chunks = std::max<size_t>(1, std::min<size_t>(64, n / 65536));
  if (chunks == 1) {
    std::stable_sort(index.begin(), index.end(), [&](int64_t a, int64_t b) { return less(keys[a], keys[b]); });
    return;
  }
  // Pairs (key, original position) sorted by key then position: stable.
  struct P {
    T k;
    int64_t i;
  };
  std::vector<P> p(n), tmp(n);
  for (size_t i = 0; i < n; ++i) p[i] = {keys[i], index[i]};
  auto lt = [](const P& a, const P& b) { return less(a.k, b.k) || (!less(b.k, a.k) && a.i < b.i); };
  std::vector<size_t> bounds(chunks + 1);
  for (size_t c = 0; c <= chunks; ++c) bounds[c] = n * c / chunks;
  tbb::parallel_for(size_t(0), chunks, [&](size_t c) { std::sort(p.begin() + bounds[c], p.begin() + bounds[c + 1], lt); });
  for (size_t width = 1; width < chunks; width *= 2) {
    tbb::parallel_for(size_t(0), (chunks + 2 * width - 1) / (2 * width), [&](size_t m) {
      const size_t lo = bounds[std::min(chunks, 2 * width * m)];
      const size_t mid = bounds[std::min(chunks, 2 * width * m + width)];
      const size_t hi = bounds[std::min(chunks, 2 * width * m + 2 * width)];
      std::merge(p.begin() + lo, p.begin() + mid, p.begin() + mid, p.begin() + hi, tmp.begin() + lo, lt);
    });
    p.swap(tmp);
  }
  for (size_t i = 0; i < n; ++i) index[i] = p[i].i;
}

// argsort of every row along `axis`: rows in parallel, or one long row in
// parallel chunks.
template <typename T>
void argsort_rows(const View& in, const View& out, int axis) {
  const Rows ri = rows_of(in, axis), ro = rows_of(out, axis);
  const T* src = static_cast<const T*>(in.buffer->data());
  int64_t* dst = static_cast<int64_t*>(out.buffer->data());
  const int64_t len = ri.len;
  const size_t nrows = ri.starts.size();
  auto one_row = [&](size_t r, bool parallel) {
    std::vector<T> keys(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) keys[i] = src[ri.starts[r] + i * ri.stride];
    std::vector<int64_t> ix(static_cast<size_t>(len));
    std::iota(ix.begin(), ix.end(), 0);
    if (parallel) parallel_stable_argsort(keys, ix);
    else std::stable_sort(ix.begin(), ix.end(), [&](int64_t a, int64_t b) { return less(keys[a], keys[b]); });
    for (int64_t i = 0; i < len; ++i) dst[ro.starts[r] + i * ro.stride] = ix[i];
  };
  if (nrows == 1) {
    one_row(0, len >= (1 << 17));
    return;
  }
  const size_t grain = std::max<size_t>(1, static_cast<size_t>((1 << 14) / std::max<int64_t>(len, 1)));
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nrows, grain), [&](const tbb::blocked_range<size_t>& br) {
    for (size_t r = br.begin(); r < br.end(); ++r) one_row(r, false);
  });
}

void check_same_rows(const View& in, const View& out, int axis) {
  if (in.shape != out.shape) throw std::invalid_argument("sort: output shape differs from the input's");
  if (axis < 0 || (in.ndim() > 0 && axis >= static_cast<int>(in.ndim())) || (in.ndim() == 0 && axis != 0))
    throw std::invalid_argument("sort: bad axis");
}

}  // namespace

void argsort(const View& in, const View& out, int axis) {
  check_same_rows(in, out, axis);
  if (out.dtype != DType::Int64) throw std::invalid_argument("argsort: the output must be int64");
  with_dtype(in.dtype, [&](auto t) { argsort_rows<decltype(t)>(in, out, axis); });
}

void searchsorted(const View& sorted, const View* sorter, const View& values, const View& out, bool right) {
  if (sorted.ndim() != 1) throw std::invalid_argument("searchsorted: the sorted array must be 1-D");
  if (out.dtype != DType::Int64 || out.shape != values.shape)
    throw std::invalid_argument("searchsorted: the output must be int64 of the values' shape");
  if (sorted.dtype != values.dtype) throw std::invalid_argument("searchsorted: the values must be of the array's type");
  with_dtype(sorted.dtype, [&](auto t) {
    using T = decltype(t);
    const int64_t n = sorted.shape[0];
    const T* s = static_cast<const T*>(sorted.buffer->data());
    std::vector<T> keys(static_cast<size_t>(n));
    const int64_t* perm = nullptr;
    if (sorter) perm = static_cast<const int64_t*>(sorter->buffer->data());
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = perm ? perm[sorter->offset + i * sorter->strides[0]] : i;
      keys[i] = s[sorted.offset + j * sorted.strides[0]];
    }
    const Rows rv = rows_of(values, values.ndim() ? static_cast<int>(values.ndim()) - 1 : 0);
    const Rows ro = rows_of(out, out.ndim() ? static_cast<int>(out.ndim()) - 1 : 0);
    const T* v = static_cast<const T*>(values.buffer->data());
    int64_t* o = static_cast<int64_t*>(out.buffer->data());
    tbb::parallel_for(size_t(0), rv.starts.size(), [&](size_t r) {
      for (int64_t i = 0; i < rv.len; ++i) {
        const T x = v[rv.starts[r] + i * rv.stride];
        auto it = right ? std::upper_bound(keys.begin(), keys.end(), x, less<T>)
                        : std::lower_bound(keys.begin(), keys.end(), x, less<T>);
        o[ro.starts[r] + i * ro.stride] = it - keys.begin();
      }
    });
  });
}

std::vector<int64_t> nonzero_flat(const View& in) {
  std::vector<int64_t> out;
  if (in.dtype == DType::Bool) out.reserve(static_cast<size_t>(count_true(in)));  // (one allocation)
  const int nd = static_cast<int>(in.ndim());
  const int axis = nd ? nd - 1 : 0;
  const Rows r = rows_of(in, axis);
  with_dtype(in.dtype, [&](auto t) {
    using T = decltype(t);
    const T* p = static_cast<const T*>(in.buffer->data());
    int64_t flat = 0;
    for (int64_t start : r.starts)
      for (int64_t i = 0; i < r.len; ++i, ++flat)
        if (p[start + i * r.stride] != T(0)) out.push_back(flat);
  });
  return out;
}

}  // namespace nf::ext

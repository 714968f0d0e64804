// Histograms with equal-width bins (numpy.histogram's fast path) as a
// black-box routine on computed memory: NumPy's results to the bit, in one
// pass over the data instead of NumPy's ten.
#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>
#include <stdexcept>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include "extern/dispatch.h"
#include "extern/extern.h"

namespace nf::ext {

namespace {

constexpr int64_t kBlock = 65536;  // NumPy's BLOCK

// The bin of a value NumPy keeps (first <= a <= last), by NumPy's rule: the
// guess ((a - first) / denom) * nb truncated -- the difference in the data's
// type, the rest in float64 or, where NumPy's scalar promotion keeps it
// (float32 data with float32 edges and range), in float32 -- the right edge
// folded into the last bin, then moved by one where the guess and the edges
// disagree (every bin half-open but the last).
template <typename T, bool kGuessInT>
int64_t bin_of(T a, T first, double denom, int64_t nb, const T* edges) {
  const T diff = static_cast<T>(a - first);
  int64_t i;
  if constexpr (kGuessInT)
    i = static_cast<int64_t>(static_cast<T>(static_cast<T>(diff / static_cast<T>(denom)) * static_cast<T>(nb)));
  else
    i = static_cast<int64_t>(static_cast<double>(diff) / denom * static_cast<double>(nb));
  if (i == nb) --i;
  if (a < edges[i]) --i;
  if (a >= edges[i + 1] && i != nb - 1) ++i;
  return i;
}

}  // namespace

void histogram_uniform(const View& x, const View* weights, const View& edges, double first, double last,
                       double denom, bool guess_in_type, const View& out) {
  const int64_t n = x.shape[0], nb = edges.shape[0] - 1;
  if (x.dtype != edges.dtype || (x.dtype != DType::Float32 && x.dtype != DType::Float64) || nb < 1 ||
      out.shape[0] != nb || (weights && (weights->dtype != DType::Float64 || weights->shape[0] != n)))
    throw std::invalid_argument("histogram_uniform: float data of the edges' type, float64 weights, nb bins");
  const int64_t nblocks = (n + kBlock - 1) / kBlock;
  with_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const int64_t xs = x.strides[0];
      const T* xp = static_cast<const T*>(x.buffer->data()) + x.offset;
      std::vector<T> e(static_cast<size_t>(nb + 1));
      const T* ep = static_cast<const T*>(edges.buffer->data()) + edges.offset;
      for (int64_t k = 0; k <= nb; ++k) e[k] = ep[k * edges.strides[0]];
      const T tf = static_cast<T>(first), tl = static_cast<T>(last);  // (keep: compared in the data's type)
      // Each block's counts (or float64 weight sums, as numpy.bincount adds
      // them: in order) by itself; blocks in parallel, in groups, each
      // group's partials then added to the result in block order -- NumPy's
      // `n += bincount(block).astype(ntype)`, so float sums keep its bits.
      const int64_t budget = int64_t(1) << 22;  // partial sums held at once (32 MiB)
      const int64_t group = std::max<int64_t>(1, std::min<int64_t>({nblocks, 64, budget / nb}));
      std::vector<double> part(static_cast<size_t>(group * nb));
      with_dtype(out.dtype, [&](auto otag) {
        using O = decltype(otag);
        if constexpr (is_complex_v<O> || std::is_same_v<O, bool>) {
          throw std::invalid_argument("histogram_uniform: complex or bool histogram");
        } else {
          O* op = static_cast<O*>(out.buffer->data()) + out.offset;
          const int64_t os = out.strides[0];
          for (int64_t b = 0; b < nb; ++b) op[b * os] = O(0);
          const double* wp = weights ? static_cast<const double*>(weights->buffer->data()) + weights->offset : nullptr;
          const int64_t ws = weights ? weights->strides[0] : 0;
          for (int64_t g0 = 0; g0 < nblocks; g0 += group) {
            const int64_t g1 = std::min(nblocks, g0 + group);
            std::fill(part.begin(), part.end(), 0.0);
            tbb::parallel_for(g0, g1, [&](int64_t blk) {
              double* p = part.data() + (blk - g0) * nb;
              const int64_t j1 = std::min(n, (blk + 1) * kBlock);
              for (int64_t j = blk * kBlock; j < j1; ++j) {
                const T a = xp[j * xs];
                if (!(a >= tf && a <= tl)) continue;  // (NaN too)
                const int64_t i = guess_in_type ? bin_of<T, true>(a, tf, denom, nb, e.data())
                                                : bin_of<T, false>(a, tf, denom, nb, e.data());
                p[i] += wp ? wp[j * ws] : 1.0;
              }
            });
            for (int64_t blk = g0; blk < g1; ++blk) {
              const double* p = part.data() + (blk - g0) * nb;
              for (int64_t b = 0; b < nb; ++b) op[b * os] = static_cast<O>(op[b * os] + static_cast<O>(p[b]));
            }
          }
        }
      });
    }
  });
}

namespace {

// Calls f(const I* data) with x's element type I (bool and the integers).
template <typename F>
void with_index_type(const View& x, F&& f) {
  with_dtype(x.dtype, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I>)
      f(static_cast<const I*>(x.buffer->data()) + x.offset);
    else
      throw std::invalid_argument("bincount: bool or integer indices expected");
  });
}

// As numpy.bincount reads an index: cast to intp (uint64 above INT64_MAX
// becomes negative, as NumPy's force-cast makes it).
template <typename I>
int64_t as_intp(I v) {
  return static_cast<int64_t>(v);
}

}  // namespace

bool index_range(const View& x, int64_t* lo, int64_t* hi) {
  const int64_t n = x.shape[0], xs = x.strides[0];
  if (n == 0) return false;
  with_index_type(x, [&](auto* p) {
    struct R {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
    };
    auto scan = [&](int64_t j0, int64_t j1, R r) {
      // (NumPy's minmax loop: after the first values a new extreme is rare)
      if (xs == 1) {
        // Four running extremes (independent chains the core overlaps).
        int64_t lo[4] = {r.lo, r.lo, r.lo, r.lo}, hi[4] = {r.hi, r.hi, r.hi, r.hi};
        int64_t j = j0;
        for (; j + 4 <= j1; j += 4) {
          for (int u = 0; u < 4; ++u) {
            const int64_t v = as_intp(p[j + u]);
            lo[u] = v < lo[u] ? v : lo[u];
            hi[u] = v > hi[u] ? v : hi[u];
          }
        }
        for (; j < j1; ++j) {
          const int64_t v = as_intp(p[j]);
          lo[0] = v < lo[0] ? v : lo[0];
          hi[0] = v > hi[0] ? v : hi[0];
        }
        r.lo = std::min({lo[0], lo[1], lo[2], lo[3]});
        r.hi = std::max({hi[0], hi[1], hi[2], hi[3]});
      } else {
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t v = as_intp(p[j * xs]);
          if (v < r.lo) r.lo = v;
          if (v > r.hi) r.hi = v;
        }
      }
      return r;
    };
    if (n < 4 * kBlock) {  // (one thread: no task to start)
      const R r = scan(0, n, R{});
      *lo = r.lo;
      *hi = r.hi;
      return;
    }
    R r = tbb::parallel_reduce(
        tbb::blocked_range<int64_t>(0, n, kBlock), R{},
        [&](const tbb::blocked_range<int64_t>& b, R acc) { return scan(b.begin(), b.end(), acc); },
        [](R a, R b) { return R{std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; });
    *lo = r.lo;
    *hi = r.hi;
  });
  return true;
}

void bincount(const View& indices, const View* weights, const View& out) {
  const int64_t n = indices.shape[0], nb = out.shape[0];
  if ((weights && weights->shape[0] != n) || out.dtype != (weights ? DType::Float64 : DType::Int64))
    throw std::invalid_argument("bincount: int64 or float64 counts expected");
  const int64_t is = indices.strides[0], os = out.strides[0];
  with_index_type(indices, [&](auto* ip) {
    if (weights) {
      // In index order, as NumPy's loop adds (the sums keep its bits), the
      // weights converted to float64 as NumPy converts them.
      double* op = static_cast<double*>(out.buffer->data()) + out.offset;
      for (int64_t b = 0; b < nb; ++b) op[b * os] = 0.0;
      with_dtype(weights->dtype, [&](auto wtag) {
        using W = decltype(wtag);
        if constexpr (is_complex_v<W>) {
          throw std::invalid_argument("bincount: real weights expected");
        } else {
          const W* wp = static_cast<const W*>(weights->buffer->data()) + weights->offset;
          const int64_t ws = weights->strides[0];
          for (int64_t j = 0; j < n; ++j) op[as_intp(ip[j * is]) * os] += static_cast<double>(wp[j * ws]);
        }
      });
      return;
    }
    int64_t* op = static_cast<int64_t*>(out.buffer->data()) + out.offset;
    // Counts: chunks in parallel, each into counts of its own, then added
    // (integers: any order) -- where the chunks' counts fit in 32 MiB.
    const int64_t chunks = std::min<int64_t>(n / kBlock, (int64_t(1) << 22) / std::max<int64_t>(nb, 1));
    if (chunks < 2) {
      for (int64_t b = 0; b < nb; ++b) op[b * os] = 0;
      if (is == 1 && os == 1) {
        for (int64_t j = 0; j < n; ++j) ++op[as_intp(ip[j])];
      } else {
        for (int64_t j = 0; j < n; ++j) ++op[as_intp(ip[j * is]) * os];
      }
      return;
    }
    std::vector<int64_t> part(static_cast<size_t>(chunks * nb), 0);
    tbb::parallel_for(int64_t(0), chunks, [&](int64_t c) {
      int64_t* p = part.data() + c * nb;
      const int64_t j0 = n * c / chunks, j1 = n * (c + 1) / chunks;
      for (int64_t j = j0; j < j1; ++j) ++p[as_intp(ip[j * is])];
    });
    tbb::parallel_for(int64_t(0), nb, [&](int64_t b) {
      int64_t sum = 0;
      for (int64_t c = 0; c < chunks; ++c) sum += part[static_cast<size_t>(c * nb + b)];
      op[b * os] = sum;
    });
  });
}

}  // namespace nf::ext

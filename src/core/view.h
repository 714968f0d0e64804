// Views: a buffer seen through an affine index function.
//
// element(i_0..i_{n-1}) = buffer[offset + sum_k strides[k] * i_k]
// Offsets and strides count elements of the view's dtype (numfuse never makes
// a view whose byte offset is not a multiple of its itemsize).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"
#include "core/small_vector.h"

namespace nf {

using Dims = SmallVector<int64_t, 6>;

int64_t shape_size(const Dims& shape);
// Bytes of an array of this shape; ValueError when NumPy's size computation
// overflows ("array is too big") or an extent is negative.
int64_t checked_nbytes(DType dtype, const Dims& shape);
// A shape as NumPy prints it in error messages: "(4,5)", "(3,)", "()";
// negative extents print as "newaxis" (leading ones are left out).
std::string shape_str(const Dims& shape);
// C-order (row-major) strides of a shape, in elements.
Dims c_strides(const Dims& shape);

struct View {
  BufferPtr buffer;
  DType dtype = DType::Float64;
  int64_t offset = 0;
  Dims shape;
  Dims strides;
  bool readonly = false;  // broadcast_to, diagonal and read-only NumPy views

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t size() const { return shape_size(shape); }
  bool is_c_contiguous() const;
  bool is_f_contiguous() const;
  // Lowest and highest element index touched (only meaningful if size() > 0).
  int64_t lo() const;
  int64_t hi() const;
  // Same buffer, dtype, offset, shape and strides (ignoring strides of
  // extent-1 dimensions, which select nothing).
  bool same_as(const View& o) const;
  // A fresh C-contiguous view over a new (unallocated) buffer. Refuses what
  // NumPy refuses: negative extents and sizes past int64 (ValueError), and
  // allocations the system would not grant (MemoryError) -- at the call,
  // even for buffers fusion may never allocate.
  static View fresh(DType dtype, const Dims& shape);
  // fresh(), built in `out` (recording builds an operator's result where it
  // is kept, rather than moving a View there).
  static void fresh_into(View& out, DType dtype, const Dims& shape);
  // The same, laid out with axes `order` (a permutation, outer to inner).
  static View fresh_in_order(DType dtype, const Dims& shape, const std::vector<int>& order);
};

// ---------------------------------------------------------------------------
// View transformations (metadata only; all raise NumPy's errors).

// One item of a basic index: an integer, a slice, None (new axis) or `...`.
struct IndexItem {
  enum class Kind : uint8_t { Int, Slice, NewAxis, Ellipsis };
  Kind kind = Kind::Int;
  int64_t i = 0;  // Int
  // Slice, as Python gives it; a missing bound is has_* == false.
  int64_t start = 0, stop = 0, step = 1;
  bool has_start = false, has_stop = false;
};
// a[items] for basic indexing; throws IndexError.
View index_view(const View& v, std::span<const IndexItem> items);
inline View index_view(const View& v, std::initializer_list<IndexItem> items) {
  return index_view(v, std::span<const IndexItem>(items.begin(), items.size()));
}
// The element offset of a[i0, i1, ...] (one integer per dimension), with
// index_view's bounds checks and errors.
int64_t element_offset(const View& v, std::span<const IndexItem> items);
// Length of range(start, stop, step) after Python's slice.indices(n).
void adjust_slice(const IndexItem& s, int64_t n, int64_t* start, int64_t* step, int64_t* len);

// Resolve a requested shape (one entry may be -1) against a size; throws ValueError.
Dims resolve_shape(const Dims& requested, int64_t size);
// A view with the new shape if the data allows it without copying
// (NumPy's attempt_nocopy_reshape), in C or Fortran index order.
bool reshape_view(const View& v, const Dims& shape, bool fortran, View* out);
View transpose_view(const View& v, const std::vector<int>& axes);  // axes normalized, a permutation
View swapaxes_view(const View& v, int a, int b);
View expand_dims_view(const View& v, const std::vector<int>& axes);  // axes normalized for the result
View squeeze_view(const View& v, const std::vector<int>& axes, bool all);
View diagonal_view(const View& v, int64_t offset, int a1, int a2);

// Exact test for whether two views share at least one byte. Views of
// different buffers never overlap. Strided views are decided by solving the
// bounded linear Diophantine equation offA + sA.x == offB + sB.y (in bytes);
// if the search exceeds its work budget the answer is a conservative `true`.
bool views_overlap(const View& a, const View& b);

// Overlap between translates: views of one dtype, shape and strides at other
// offsets (a loop's rows, columns and blocks of one array). They overlap iff
// their offset difference is sum_k s_k d_k with |d_k| < e_k; when every
// |stride| exceeds twice the reach of the smaller ones ("nested", as blocks
// of an array are), each d_k is forced, so the test is one pass over the
// dimensions. Built once per view, it answers each pair in a few
// operations (the window signature relates every pair of views of a
// written buffer).
struct Translates {
  bool nested = false;  // false: use views_overlap
  int m = 0;            // dimensions that move (extent > 1, stride != 0), largest |stride| first
  int64_t s[16], e[16];
  explicit Translates(const View& v);
  // Whether v and its translate by `delta` elements share an element (nested only).
  bool overlap(int64_t delta) const {
    for (int k = 0; k < m; ++k) {
      const int64_t d = (delta >= 0 ? delta + s[k] / 2 : delta - s[k] / 2) / s[k];  // nearest multiple
      if (d >= e[k] || d <= -e[k]) return false;
      delta -= d * s[k];
    }
    return delta == 0;
  }
};
// Same dtype, shape and strides (the views are translates of each other).
bool same_geometry(const View& a, const View& b);

}  // namespace nf

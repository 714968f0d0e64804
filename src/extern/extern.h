// Black-box library routines (Fern): a routine is one more way to compute an
// MdHom, chosen by the schedule stage (tune::Schedule::routine) like any
// generated schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/view.h"
#include "mdh/mdh.h"

namespace nf::ext {

// Computes a contraction MdHom (tune::blas_compatible) with BLAS.
void run_contraction(const mdh::MdHom& h, const mdh::Bindings& b);
// C(m,n) = A(m,k) B(k,n) in float32/float64 with BLAS, operands at any
// element strides (packed where BLAS cannot address them); false for other
// types. Tier 0 runs small matrix products with it.
bool gemm_strided(DType t, const void* a, int64_t as0, int64_t as1, const void* b, int64_t bs0, int64_t bs1, void* c,
                  int64_t cs0, int64_t cs1, int64_t m, int64_t n, int64_t k);
// The dot product of two float32/float64 vectors of type t (n > 0 elements,
// byte strides as, bs) as NumPy computes it (FLOAT_dot / DOUBLE_dot): BLAS's
// sdot/ddot when both strides are positive multiples of the item size, else
// a sequential loop in t, so results are NumPy's bits (an ill-conditioned
// float32 recurrence such as Levinson-Durbin diverges from NumPy's under any
// other summation order). Returns false for other types.
bool dot_like_numpy(DType t, const char* a, int64_t as, const char* b, int64_t bs, int64_t n, double* out);
// Sorting and searching (sort.cc) on computed memory (the caller has run
// what was pending on it), rows in parallel. NumPy's order: ascending, NaN
// last. (Value sorts run NumPy's SIMD sort: python/numfuse/_sorting.py.)
// Int64 indices that sort each row of `in` into `out` (its shape, any
// strides), ties in index order: numpy's kind='stable'.
void argsort(const View& in, const View& out, int axis);
// For each of `values` (the sorted array's type, any shape), the insertion
// point into the 1-D `sorted` (through the int64 permutation `sorter`, or
// nullptr): numpy.searchsorted with side 'left' or 'right'.
void searchsorted(const View& sorted, const View* sorter, const View& values, const View& out, bool right);
// The C-order flat indices of the nonzero elements.
std::vector<int64_t> nonzero_flat(const View& in);
// numpy.take(a, indices, axis) (gather.cc): out (a's type, shape
// a.shape[:axis] + indices.shape + a.shape[axis+1:]) gets a's elements at
// the int64 `indices` along `axis`; an index out of range throws NumPy's
// IndexError, negative ones count from the end.
void take(const View& a, const View& indices, int axis, const View& out);
// a[mask] for a boolean mask of a's shape: the elements where it is true, in
// C order, into the 1-D `out` (of the mask's count).
void mask_gather(const View& a, const View& mask, const View& out);
int64_t count_true(const View& mask);
// a[mask] = values: the true points in C order take values[0], values[1],
// ... (a 1-D view of a's type; stride 0 for one value).
void mask_scatter(const View& a, const View& mask, const View& values);
// The scatter: target[..., indices[j...], ...] = values[..., j..., ...]
// (values: the target's type and the gathered shape, any strides), or with
// `accumulate` += (numpy.add.at: every repeated index adds). Assignment
// keeps the last value of a repeated index, as NumPy does.
void put(const View& target, const View& indices, int axis, const View& values, bool accumulate);
// numpy.histogram with equal-width bins (histogram.cc), NumPy's fast path to
// the bit: x (1-D, float32 or float64, the type of the nb + 1 `edges`) gets
// the values first <= a <= last (compared in x's type) counted (or their
// float64 `weights` summed) into out (nb; int64 counts, or the weights'
// original type), each value's bin by NumPy's guess-and-correct rule (the
// guess ((a - first) / denom) * nb in float64, or in x's type where
// `guess_in_type`: NumPy's promotion of its scalars decides), sums in
// NumPy's order (each block of 65,536 values in order, blocks added in
// order). Blocks in parallel.
void histogram_uniform(const View& x, const View* weights, const View& edges, double first, double last,
                       double denom, bool guess_in_type, const View& out);
// The least and greatest of the 1-D bool or integer `x` read as numpy.bincount
// reads it (cast to intp); false if x is empty.
bool index_range(const View& x, int64_t* lo, int64_t* hi);
// numpy.bincount of the 1-D bool or integer `indices` into out (its nb
// bins): int64 counts, or the real `weights` (as float64) summed in index
// order (NumPy's bits). Every index must be in [0, nb) (index_range).
void bincount(const View& indices, const View* weights, const View& out);
// What the routine computes for h, for explain().
std::string routine_pattern(const mdh::MdHom& h);

// Use another CBLAS already in the process (an ILP64 build such as the
// OpenBLAS NumPy bundles: symbols prefix + "cblas_dgemm" + suffix). Returns
// false (keeping the current BLAS) if any routine is missing.
bool use_blas_library(const std::string& path, const std::string& prefix, const std::string& suffix);
std::string blas_name();
// The linked OpenBLAS's threads (numfuse/__init__.py loads it with one, so
// that it starts no thread pool of its own beside NumPy's; when NumPy's BLAS
// cannot be shared, the fallback gets the cores back here).
void set_linked_blas_threads(int n);

}  // namespace nf::ext

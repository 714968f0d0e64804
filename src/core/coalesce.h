// How an iteration domain is walked over strided views (what NumPy's iterator
// does before running an inner loop): extent-1 dimensions are dropped, the
// others are ordered outer to inner by the total |stride| the views give them
// (largest outermost, stable), and runs of adjacent dimensions that every
// view traverses linearly are merged into one. Both the MDH expression of a
// fused group and tier 0's interpreter walk domains this way, so a reduction
// combines its points in the same order on either tier.
#pragma once

#include <cstdint>

#include "core/small_vector.h"

namespace nf {

struct Coalesced {
  SmallVector<int, 8> order;      // the squeezed dimensions, outer to inner
  SmallVector<int, 8> run_end;    // final dimension d covers order[run_end[d-1] .. run_end[d])
  SmallVector<int64_t, 8> extent;  // per final dimension

  int ndim() const { return static_cast<int>(extent.size()); }
  int run_begin(int d) const { return d == 0 ? 0 : run_end[d - 1]; }
  // The innermost squeezed dimension of final dimension d: a view's stride
  // along d is its stride along that dimension.
  int inner(int d) const { return order[run_end[d] - 1]; }
};

// `ext`: the squeezed extents (none is 1); `strides[v]`: view v's strides
// along them (element or byte units, the same for every view).
Coalesced coalesce(const int64_t* ext, int ndim, const int64_t* const* strides, int nviews);

}  // namespace nf

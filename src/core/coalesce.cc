#include "core/coalesce.h"

#include <algorithm>
#include <cstdlib>

namespace nf {

Coalesced coalesce(const int64_t* ext, int D, const int64_t* const* strides, int nviews) {
  Coalesced c;
  SmallVector<int64_t, 8> score(static_cast<size_t>(D), 0);
  for (int v = 0; v < nviews; ++v)
    for (int d = 0; d < D; ++d) score[d] += std::llabs(strides[v][d]);
  c.order.resize(static_cast<size_t>(D), 0);
  for (int d = 0; d < D; ++d) c.order[d] = d;
  std::stable_sort(c.order.begin(), c.order.end(), [&](int a, int b) { return score[a] > score[b]; });
  // From the innermost dimension outwards: d joins the run inside it when
  // every view steps over d exactly as far as over that whole run.
  SmallVector<int, 8> ends;  // run ends (positions in order), innermost run first
  SmallVector<int64_t, 8> extents;
  for (int j = D; j-- > 0;) {
    const int d = c.order[j];
    if (!ends.empty()) {
      const int inner = c.order[ends.back() - 1];
      const int64_t run_ext = extents.back();
      bool ok = ext[d] > 0 && run_ext > 0;
      for (int v = 0; v < nviews && ok; ++v) ok = strides[v][d] == strides[v][inner] * run_ext;
      if (ok) {
        extents.back() = run_ext * ext[d];
        continue;
      }
    }
    ends.push_back(j + 1);
    extents.push_back(ext[d]);
  }
  for (size_t r = ends.size(); r-- > 0;) {
    c.run_end.push_back(ends[r]);
    c.extent.push_back(extents[r]);
  }
  return c;
}

}  // namespace nf

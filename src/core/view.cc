#include "core/view.h"

#include "core/error.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <vector>

namespace nf {

int64_t shape_size(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Dims& v) {
  // NumPy's convert_shape_to_string: "(4,5)", "(3,)", "()"; a negative
  // extent is a new axis ("newaxis"), and leading new axes are left out.
  size_t i = 0;
  while (i < v.size() && v[i] < 0) ++i;
  if (i == v.size()) return "()";
  std::string s = "(" + std::to_string(v[i++]);
  for (; i < v.size(); ++i) s += v[i] < 0 ? std::string(",newaxis") : "," + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

Dims c_strides(const Dims& shape) {
  Dims s(shape.size());
  int64_t acc = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    s[k] = acc;
    acc *= std::max<int64_t>(shape[k], 1);
  }
  return s;
}

// An empty array is contiguous in both orders, whatever its strides (NumPy).
static bool empty_shape(const Dims& shape) {
  for (int64_t n : shape)
    if (n == 0) return true;
  return false;
}

bool View::is_c_contiguous() const {
  if (empty_shape(shape)) return true;
  int64_t acc = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1 && strides[k] != acc) return false;
    acc *= shape[k];
  }
  return true;
}

bool View::is_f_contiguous() const {
  if (empty_shape(shape)) return true;
  int64_t acc = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] != 1 && strides[k] != acc) return false;
    acc *= shape[k];
  }
  return true;
}

int64_t View::lo() const {
  int64_t v = offset;
  for (size_t k = 0; k < shape.size(); ++k)
    if (strides[k] < 0) v += strides[k] * (shape[k] - 1);
  return v;
}

int64_t View::hi() const {
  int64_t v = offset;
  for (size_t k = 0; k < shape.size(); ++k)
    if (strides[k] > 0) v += strides[k] * (shape[k] - 1);
  return v;
}

bool View::same_as(const View& o) const {
  // (Called for every pair of views of one buffer by the window signature:
  // one pass over raw words, no vector comparison.)
  const size_t n = shape.size();
  if (buffer != o.buffer || dtype != o.dtype || offset != o.offset || n != o.shape.size()) return false;
  const int64_t* s = shape.data();
  const int64_t* os = o.shape.data();
  const int64_t* t = strides.data();
  const int64_t* ot = o.strides.data();
  for (size_t k = 0; k < n; ++k)
    if (s[k] != os[k] || (s[k] > 1 && t[k] != ot[k])) return false;
  return true;
}

int64_t checked_nbytes(DType dtype, const Dims& shape) {
  // Like NumPy, the overflow check multiplies the non-zero extents, so
  // (0, 2**40, 2**40) is "too big" although it holds nothing.
  int64_t n = itemsize(dtype);
  bool overflow = false, empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw ValueError("negative dimensions are not allowed");
    if (d == 0) empty = true;
    else overflow |= __builtin_mul_overflow(n, d, &n);
  }
  if (overflow)
    throw ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.");
  return empty ? 0 : n;
}

View View::fresh(DType dtype, const Dims& shape) {
  View v;
  fresh_into(v, dtype, shape);
  return v;
}

void View::fresh_into(View& v, DType dtype, const Dims& shape) {
  const int64_t nbytes = checked_nbytes(dtype, shape);
  if (!Buffer::can_allocate(nbytes))
    throw MemoryError(std::vector<int64_t>(shape.begin(), shape.end()), static_cast<int>(dtype), nbytes);
  v.buffer = Buffer::make(nbytes);
  v.dtype = dtype;
  v.shape = shape;
  v.offset = 0;
  // C order; NumPy gives a new empty array all-zero strides (which also
  // keeps it out of the memory-order decisions of later operations).
  const size_t nd = shape.size();
  v.strides.resize(nd);
  int64_t acc = nbytes == 0 ? 0 : 1;
  for (size_t k = nd; k-- > 0;) {
    v.strides[k] = acc;
    acc *= std::max<int64_t>(shape[k], 1);
  }
}

View View::fresh_in_order(DType dtype, const Dims& shape, const std::vector<int>& order) {
  View v = fresh(dtype, shape);
  if (v.size() == 0) return v;
  int64_t acc = 1;
  for (size_t i = order.size(); i-- > 0;) {
    v.strides[order[i]] = acc;
    acc *= std::max<int64_t>(shape[order[i]], 1);
  }
  return v;
}

namespace {

struct Term {
  int64_t a;  // coefficient > 0
  int64_t u;  // upper bound of the variable (inclusive)
};

// Depth-first search for sum a_i z_i == r, 0 <= z_i <= u_i. Returns 1 (found),
// 0 (no solution), -1 (work budget exhausted).
int dfs(const Term* t, size_t n, const int64_t* max_rest, const int64_t* gcd_rest, size_t i, int64_t r,
        int64_t& budget) {
  if (--budget < 0) return -1;
  if (i == n) return r == 0 ? 1 : 0;
  if (r < 0 || r > t[i].a * t[i].u + max_rest[i]) return 0;
  if (gcd_rest[i] > 1 && r % gcd_rest[i] != 0) return 0;
  if (i + 1 == n) return (r % t[i].a == 0 && r / t[i].a <= t[i].u) ? 1 : 0;
  int64_t lo = std::max<int64_t>(0, (r - max_rest[i] + t[i].a - 1) / t[i].a);
  int64_t hi = std::min<int64_t>(t[i].u, r / t[i].a);
  bool exhausted = false;
  for (int64_t z = hi; z >= lo; --z) {
    int res = dfs(t, n, max_rest, gcd_rest, i + 1, r - t[i].a * z, budget);
    if (res == 1) return 1;
    if (res == -1) {
      exhausted = true;
      break;
    }
  }
  return exhausted ? -1 : 0;
}

}  // namespace

Translates::Translates(const View& v) {
  const size_t n = v.shape.size();
  if (n > 16) return;
  for (size_t k = 0; k < n; ++k) {
    if (v.shape[k] == 1 || v.strides[k] == 0) continue;
    s[m] = v.strides[k] < 0 ? -v.strides[k] : v.strides[k];
    e[m++] = v.shape[k];
  }
  // Largest stride first (insertion sort: a few dimensions).
  for (int i = 1; i < m; ++i)
    for (int j = i; j > 0 && s[j] > s[j - 1]; --j) {
      std::swap(s[j], s[j - 1]);
      std::swap(e[j], e[j - 1]);
    }
  int64_t reach = 0;  // what the dimensions after k can add, in either direction
  for (int k = m; k-- > 0;) {
    if (s[k] <= 2 * reach) return;
    reach += s[k] * (e[k] - 1);
  }
  nested = true;
}

bool same_geometry(const View& a, const View& b) {
  const size_t n = a.shape.size();
  if (a.dtype != b.dtype || n != b.shape.size()) return false;
  for (size_t k = 0; k < n; ++k)
    if (a.shape[k] != b.shape[k] || a.strides[k] != b.strides[k]) return false;
  return true;
}

bool views_overlap(const View& a, const View& b) {
  if (!a.buffer || a.buffer != b.buffer) return false;
  if (a.size() == 0 || b.size() == 0) return false;
  if (same_geometry(a, b)) {
    const Translates t(a);
    if (t.nested) return t.overlap(b.offset - a.offset);
  }
  const int64_t isa = itemsize(a.dtype), isb = itemsize(b.dtype);
  // Byte intervals first: most non-overlapping views are decided here.
  const int64_t alo = a.lo() * isa, ahi = a.hi() * isa + isa - 1;
  const int64_t blo = b.lo() * isb, bhi = b.hi() * isb + isb - 1;
  if (ahi < blo || bhi < alo) return false;
  // A contiguous view touches every byte of its interval, and every view
  // touches its first and last byte: shifted slices (a[1:] vs a[:-1]) end here.
  auto dense = [](const View& v) { return v.is_c_contiguous() || v.is_f_contiguous(); };
  auto within = [](int64_t x, int64_t lo, int64_t hi) { return lo <= x && x <= hi; };
  if ((within(blo, alo, ahi) || within(bhi, alo, ahi)) && dense(a)) return true;
  if ((within(alo, blo, bhi) || within(ahi, blo, bhi)) && dense(b)) return true;
  // sum sA*x - sum sB*y - t == oB - oA - (isA - 1), t in [0, isA + isB - 2].
  // On the stack: this runs for every pair of views of one buffer in a
  // window's signature (column sweeps over one matrix).
  constexpr int kMaxDims = 64;  // NumPy's limit; more is counted as overlap
  if (a.ndim() > kMaxDims || b.ndim() > kMaxDims) return true;
  constexpr size_t kMax = 2 * kMaxDims + 1;
  Term terms[kMax];
  size_t n = 0;
  int64_t r = b.offset * isb - a.offset * isa - (isa - 1);
  auto add = [&](int64_t c, int64_t u) {
    if (c == 0 || u == 0) return;
    if (c < 0) {
      r -= c * u;  // z = u - z'
      c = -c;
    }
    terms[n++] = {c, u};
  };
  for (int k = 0; k < a.ndim(); ++k) add(a.strides[k] * isa, a.shape[k] - 1);
  for (int k = 0; k < b.ndim(); ++k) add(-b.strides[k] * isb, b.shape[k] - 1);
  add(-1, isa + isb - 2);
  // Merge equal coefficients (common for views with the same strides).
  std::sort(terms, terms + n, [](const Term& x, const Term& y) { return x.a > y.a; });
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (m > 0 && terms[m - 1].a == terms[i].a) terms[m - 1].u += terms[i].u;
    else terms[m++] = terms[i];
  }
  if (m == 0) return r == 0;
  int64_t max_rest[kMax + 1], gcd_rest[kMax + 1];
  // max_rest[i]: the most terms after i can add; gcd_rest[i]: gcd of terms i.. .
  max_rest[m] = 0;
  gcd_rest[m] = 0;
  for (size_t i = m; i-- > 0;) {
    max_rest[i] = i + 1 < m ? max_rest[i + 1] + terms[i + 1].a * terms[i + 1].u : 0;
    gcd_rest[i] = std::gcd(gcd_rest[i + 1], terms[i].a);
  }
  int64_t budget = 200000;
  int res = dfs(terms, m, max_rest, gcd_rest, 0, r, budget);
  return res != 0;  // -1 (undecided) counts as overlap
}

}  // namespace nf

// ---------------------------------------------------------------------------
// View transformations.

namespace nf {

void adjust_slice(const IndexItem& s, int64_t n, int64_t* start, int64_t* step, int64_t* len) {
  int64_t st = s.step;
  if (st == 0) throw ValueError("slice step cannot be zero");
  int64_t lo, hi;
  if (st > 0) {
    lo = s.has_start ? s.start : 0;
    hi = s.has_stop ? s.stop : n;
    if (lo < 0) lo = std::max<int64_t>(lo + n, 0);
    if (lo > n) lo = n;
    if (hi < 0) hi = std::max<int64_t>(hi + n, 0);
    if (hi > n) hi = n;
    *len = hi > lo ? (hi - lo - 1) / st + 1 : 0;  // no overflow for huge steps
  } else {
    lo = s.has_start ? s.start : n - 1;
    hi = s.has_stop ? s.stop : -1;
    if (s.has_start) {
      if (lo < 0) lo = std::max<int64_t>(lo + n, -1);
      if (lo >= n) lo = n - 1;
    }
    if (s.has_stop) {
      if (hi < 0) hi = std::max<int64_t>(hi + n, -1);
      if (hi >= n) hi = n - 1;
    }
    *len = lo > hi ? (lo - hi - 1) / (-st) + 1 : 0;
  }
  *start = lo;
  *step = st;
}

namespace {
[[noreturn]] void out_of_bounds(int64_t i, int dim, int64_t n) {
  throw IndexError("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(dim) + " with size " +
                   std::to_string(n));
}
}  // namespace

int64_t element_offset(const View& v, std::span<const IndexItem> items) {
  int64_t off = v.offset;
  for (int dim = 0; dim < static_cast<int>(items.size()); ++dim) {
    const int64_t n = v.shape[dim];
    const int64_t i = items[dim].i < 0 ? items[dim].i + n : items[dim].i;
    if (i < 0 || i >= n) out_of_bounds(items[dim].i, dim, n);
    off += i * v.strides[dim];
  }
  return off;
}

View index_view(const View& v, std::span<const IndexItem> items) {
  int consumed = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::Kind::Int || it.kind == IndexItem::Kind::Slice) ++consumed;
    if (it.kind == IndexItem::Kind::Ellipsis) ++ellipses;
  }
  if (ellipses > 1) throw IndexError("an index can only have a single ellipsis ('...')");
  if (consumed > v.ndim())
    throw IndexError("too many indices for array: array is " + std::to_string(v.ndim()) + "-dimensional, but " +
                     std::to_string(consumed) + " were indexed");
  View r;
  r.buffer = v.buffer;
  r.dtype = v.dtype;
  r.offset = v.offset;
  r.readonly = v.readonly;
  int dim = 0;
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case IndexItem::Kind::Int: {
        int64_t n = v.shape[dim];
        int64_t i = it.i < 0 ? it.i + n : it.i;
        if (i < 0 || i >= n) out_of_bounds(it.i, dim, n);
        r.offset += i * v.strides[dim];
        ++dim;
        break;
      }
      case IndexItem::Kind::Slice: {
        int64_t start, step, len;
        adjust_slice(it, v.shape[dim], &start, &step, &len);
        if (len > 0) r.offset += start * v.strides[dim];
        r.shape.push_back(len);
        // NumPy reports empty dimensions with a non-negative stride.
        r.strides.push_back(len > 0 ? v.strides[dim] * step : std::llabs(v.strides[dim] * step));
        ++dim;
        break;
      }
      case IndexItem::Kind::NewAxis:
        r.shape.push_back(1);
        r.strides.push_back(0);
        break;
      case IndexItem::Kind::Ellipsis: {
        int keep = v.ndim() - consumed;
        for (int k = 0; k < keep; ++k, ++dim) {
          r.shape.push_back(v.shape[dim]);
          r.strides.push_back(v.strides[dim]);
        }
        break;
      }
    }
  }
  for (; dim < v.ndim(); ++dim) {
    r.shape.push_back(v.shape[dim]);
    r.strides.push_back(v.strides[dim]);
  }
  return r;
}

Dims resolve_shape(const Dims& requested, int64_t size) {
  // As NumPy's _fix_unknown_dimension: any negative extent is the unknown one.
  Dims shape = requested;
  int unknown = -1;
  int64_t known = 1;
  auto mismatch = [&] {
    return ValueError("cannot reshape array of size " + std::to_string(size) + " into shape " +
                      shape_str(requested));
  };
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 0) {
      if (unknown >= 0) throw ValueError("can only specify one unknown dimension");
      unknown = static_cast<int>(k);
    } else if (__builtin_mul_overflow(known, shape[k], &known)) {
      throw mismatch();
    }
  }
  if (unknown >= 0) {
    if (known == 0 || size % known != 0) throw mismatch();
    shape[unknown] = size / known;
  } else if (known != size) {
    throw mismatch();
  }
  return shape;
}

bool reshape_view(const View& v, const Dims& shape, bool fortran, View* out) {
  // Port of NumPy's _attempt_nocopy_reshape (numpy/_core/src/multiarray/shape.c).
  Dims olddims, oldstrides;
  for (int k = 0; k < v.ndim(); ++k)
    if (v.shape[k] != 1) {
      olddims.push_back(v.shape[k]);
      oldstrides.push_back(v.strides[k]);
    }
  const int oldnd = static_cast<int>(olddims.size());
  const int newnd = static_cast<int>(shape.size());
  Dims newstrides(newnd, 0);
  if (v.size() == 0) {
    *out = v;
    out->shape = shape;
    out->strides = fortran ? Dims(newnd, 0) : c_strides(shape);
    return true;
  }
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < newnd && oi < oldnd) {
    int64_t np_ = shape[ni], op = olddims[oi];
    while (np_ != op) {
      if (np_ < op) np_ *= shape[nj++];
      else op *= olddims[oj++];
    }
    for (int ok = oi; ok < oj - 1; ok++) {
      if (fortran) {
        if (oldstrides[ok + 1] != olddims[ok] * oldstrides[ok]) return false;
      } else {
        if (oldstrides[ok] != olddims[ok + 1] * oldstrides[ok + 1]) return false;
      }
    }
    if (fortran) {
      newstrides[ni] = oldstrides[oi];
      for (int nk = ni + 1; nk < nj; nk++) newstrides[nk] = newstrides[nk - 1] * shape[nk - 1];
    } else {
      newstrides[nj - 1] = oldstrides[oj - 1];
      for (int nk = nj - 1; nk > ni; nk--) newstrides[nk - 1] = newstrides[nk] * shape[nk];
    }
    ni = nj++;
    oi = oj++;
  }
  int64_t last = ni >= 1 ? newstrides[ni - 1] : 1;
  if (fortran && ni >= 1) last *= shape[ni - 1];
  for (int nk = ni; nk < newnd; nk++) newstrides[nk] = last;
  *out = v;
  out->shape = shape;
  out->strides = newstrides;
  return true;
}

View transpose_view(const View& v, const std::vector<int>& axes) {
  View r = v;
  for (size_t k = 0; k < axes.size(); ++k) {
    r.shape[k] = v.shape[axes[k]];
    r.strides[k] = v.strides[axes[k]];
  }
  return r;
}

View swapaxes_view(const View& v, int a, int b) {
  View r = v;
  std::swap(r.shape[a], r.shape[b]);
  std::swap(r.strides[a], r.strides[b]);
  return r;
}

View expand_dims_view(const View& v, const std::vector<int>& axes) {
  const int nd = v.ndim() + static_cast<int>(axes.size());
  View r = v;
  r.shape.clear();
  r.strides.clear();
  int src = 0;
  for (int k = 0; k < nd; ++k) {
    if (std::find(axes.begin(), axes.end(), k) != axes.end()) {
      r.shape.push_back(1);
      r.strides.push_back(0);
    } else {
      r.shape.push_back(v.shape[src]);
      r.strides.push_back(v.strides[src]);
      ++src;
    }
  }
  return r;
}

View squeeze_view(const View& v, const std::vector<int>& axes, bool all) {
  View r = v;
  r.shape.clear();
  r.strides.clear();
  for (int k = 0; k < v.ndim(); ++k) {
    bool drop = all ? v.shape[k] == 1 : std::find(axes.begin(), axes.end(), k) != axes.end();
    if (drop && v.shape[k] != 1)
      throw ValueError("cannot select an axis to squeeze out which has size not equal to one");
    if (drop) continue;
    r.shape.push_back(v.shape[k]);
    r.strides.push_back(v.strides[k]);
  }
  return r;
}

View diagonal_view(const View& v, int64_t offset, int a1, int a2) {
  View r = v;
  r.shape.clear();
  r.strides.clear();
  for (int k = 0; k < v.ndim(); ++k) {
    if (k == a1 || k == a2) continue;
    r.shape.push_back(v.shape[k]);
    r.strides.push_back(v.strides[k]);
  }
  int64_t n1 = v.shape[a1], n2 = v.shape[a2];
  int64_t len;
  if (offset >= 0) {
    len = std::max<int64_t>(0, std::min(n1, n2 - offset));
    if (len > 0) r.offset += offset * v.strides[a2];
  } else {
    len = std::max<int64_t>(0, std::min(n1 + offset, n2));
    if (len > 0) r.offset += -offset * v.strides[a1];
  }
  r.shape.push_back(len);
  r.strides.push_back(v.strides[a1] + v.strides[a2]);
  r.readonly = true;  // NumPy's diagonal() returns a read-only view
  return r;
}

}  // namespace nf

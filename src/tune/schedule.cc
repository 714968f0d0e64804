#include <algorithm>
#include <map>
#include <fstream>
#include <sstream>
#include <thread>

#include "tune/tune.h"

namespace nf::tune {

namespace {
int64_t read_cache_size(int index) {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string s;
  if (!(f >> s) || s.empty()) return 0;
  int64_t v = std::atoll(s.c_str());
  if (s.back() == 'K') v <<= 10;
  if (s.back() == 'M') v <<= 20;
  return v;
}
}  // namespace

const Asm& Asm::host() {
  static const Asm a = [] {
    Asm r;
    r.cores = std::max(1u, std::thread::hardware_concurrency());
    if (int64_t l1 = read_cache_size(0)) r.l1_bytes = l1;
    if (int64_t l2 = read_cache_size(2)) r.l2_bytes = l2;
    return r;
  }();
  return a;
}

namespace {

// Dimensions an access uses (non-zero stride).
std::vector<int> used_dims(const mdh::MdHom& h, int access) {
  std::vector<int> d;
  for (int k = 0; k < h.ndim; ++k)
    if (h.accesses[access].kind[k] != mdh::StrideKind::Zero) d.push_back(k);
  return d;
}

const mdh::Output* reduction_output_of(const mdh::MdHom& h, int access) {
  for (const mdh::Output& o : h.outputs)
    if (o.access == access && o.reduces) return &o;
  return nullptr;
}

}  // namespace

std::string Schedule::why_illegal(const mdh::MdHom& h) const {
  if (static_cast<int>(tiles.size()) != h.ndim) return "one tile list per dimension";
  std::vector<int> next(h.ndim, 0);
  for (const LoopSpec& l : order) {
    if (l.dim < 0 || l.dim >= h.ndim) return "loop over a dimension that does not exist";
    if (l.level != next[l.dim]) return "levels of a dimension out of order";
    ++next[l.dim];
  }
  for (int d = 0; d < h.ndim; ++d) {
    if (next[d] != levels(d)) return "dimension " + std::to_string(d) + " misses loops";
    for (size_t k = 0; k < tiles[d].size(); ++k) {
      if (tiles[d][k] <= 0) return "tile sizes must be positive";
      if (k && tiles[d][k] >= tiles[d][k - 1]) return "tile sizes must decrease inward";
    }
  }
  if (parallel && order.empty()) return "parallel needs a loop";
  const int nloops = static_cast<int>(order.size());
  std::vector<bool> cached(h.accesses.size(), false);
  for (const Cache& c : caches) {
    if (c.access < 0 || c.access >= static_cast<int>(h.accesses.size())) return "cache of a missing access";
    if (cached[c.access]) return "an access is cached twice";
    cached[c.access] = true;
    if (c.pos < -1 || c.pos >= nloops) return "cache position out of range";
    if (parallel && c.pos == -1 && reduction_output_of(h, c.access)) return "an output tile must be per thread";
    const mdh::Access& a = h.accesses[c.access];
    const mdh::Output* o = reduction_output_of(h, c.access);
    if (!a.read && !o) return "only inputs and reduction outputs are cached";
    if (a.read && (a.written || a.reduced)) return "a read-write access cannot be cached";
    if (o && (o->op == ReduceOp::ArgMax || o->op == ReduceOp::ArgMin)) return "arg-reductions are not cached";
    std::vector<int> want = used_dims(h, c.access), got = c.layout;
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    if (want != got) return "a cache layout must order exactly the access's dimensions";
    for (size_t k = 0; k < c.pack.size(); ++k) {
      const int d = c.pack[k];
      if (std::find(c.layout.begin(), c.layout.end(), d) == c.layout.end()) return "a packed dimension must be in the layout";
      if (std::find(c.pack.begin(), c.pack.begin() + k, d) != c.pack.begin() + k) return "a dimension is packed twice";
      int below = 0;
      for (int q = 0; q <= c.pos; ++q) below += order[q].dim == d;
      if (below >= static_cast<int>(tiles[d].size())) return "a packed dimension needs a tile loop below the cache";
    }
  }
  for (int p : unroll) {
    if (p < 0 || p >= nloops) return "unrolled loop out of range";
    const LoopSpec& l = order[p];
    if (l.level == 0) return "only loops inside a tile can be unrolled";
    const int64_t parent = tiles[l.dim][l.level - 1];
    const int64_t step = l.level < static_cast<int>(tiles[l.dim].size()) ? tiles[l.dim][l.level] : 1;
    if (parent / step > 64) return "unrolled loops have at most 64 iterations";
    if (p == 0 && parallel) return "the parallel loop cannot be unrolled";
  }
  if (contract)
    for (const mdh::Output& o : h.outputs)
      if (!o.reduces) return "contraction (FMA) only for kernels whose outputs all reduce";
  if (routine == Routine::Blas && !blas_compatible(h)) return "not a GEMM/GEMV/DOT";
  return "";
}

bool Schedule::legal(const mdh::MdHom& h) const { return why_illegal(h).empty(); }

std::string Schedule::key() const {
  std::ostringstream os;
  if (routine == Routine::Blas) return "blas";
  for (size_t d = 0; d < tiles.size(); ++d) {
    os << "t";
    for (int64_t t : tiles[d]) os << t << ".";
  }
  os << "o";
  for (const LoopSpec& l : order) os << l.dim << "." << l.level << ",";
  os << (parallel ? "P" : "S") << parallel_min_work << (vectorize ? "V" : "");
  for (const Cache& c : caches) {
    os << "c" << c.access << "@" << c.pos << ":";
    for (int d : c.layout) os << d;
    if (!c.pack.empty()) {
      os << "p";
      for (int d : c.pack) os << d;
    }
  }
  if (!unroll.empty()) {
    os << "u";
    for (int p : unroll) os << p << ",";
  }
  if (contract) os << "F";
  return os.str();
}

std::string Schedule::to_string() const {
  if (routine == Routine::Blas) return "library routine (BLAS)";
  std::ostringstream os;
  os << "loops ";
  for (size_t i = 0; i < order.size(); ++i) {
    const LoopSpec& l = order[i];
    os << (i ? " > " : "") << "i" << l.dim;
    if (l.level < static_cast<int>(tiles[l.dim].size())) os << "/" << tiles[l.dim][l.level];
    if (i == 0 && parallel) os << "[cores]";
    if (std::find(unroll.begin(), unroll.end(), static_cast<int>(i)) != unroll.end()) os << "[unroll]";
    if (i + 1 == order.size() && vectorize) os << "[simd]";
  }
  for (const Cache& c : caches) {
    os << "; b" << c.access << " cached in loop " << c.pos << " as (";
    for (size_t k = 0; k < c.layout.size(); ++k) os << (k ? "," : "") << "i" << c.layout[k];
    os << ")";
    for (int d : c.pack) os << " packed by i" << d;
  }
  if (contract) os << "; fma";
  return os.str();
}

Shape classify(const mdh::MdHom& h) {
  bool reduces = false;
  for (const mdh::Output& o : h.outputs) reduces |= o.reduces;
  if (!reduces) {
    // Several reads of one array through shifted views look like a stencil;
    // accesses do not carry their buffer, so count reads with equal strides.
    int same = 0;
    for (size_t a = 0; a < h.accesses.size(); ++a)
      for (size_t b = a + 1; b < h.accesses.size(); ++b)
        if (h.accesses[a].read && h.accesses[b].read && h.accesses[a].kind == h.accesses[b].kind &&
            h.accesses[a].stride == h.accesses[b].stride)
          ++same;
    return same >= 2 ? Shape::Stencil : Shape::Map;
  }
  for (size_t a = 0; a < h.accesses.size(); ++a)
    if (h.accesses[a].read)
      for (int d = 0; d < h.ndim; ++d)
        if (h.accesses[a].kind[d] == mdh::StrideKind::Zero) return Shape::Contraction;
  return Shape::Reduction;
}

bool blas_compatible(const mdh::MdHom& h) {
  if (h.outputs.size() != 1) return false;
  const mdh::Output& o = h.outputs[0];
  if (!o.reduces || o.op != ReduceOp::Sum || o.init_const >= 0) return false;
  const DType t = h.accesses[o.access].dtype;
  if (!is_float(t) || o.acc_dtype != t) return false;
  const ExprNode& root = h.f.nodes[o.value];
  if (root.kind != ExprNode::Kind::Binary || static_cast<BinaryOp>(root.op) != BinaryOp::Multiply) return false;
  const ExprNode& x = h.f.nodes[root.a];
  const ExprNode& y = h.f.nodes[root.b];
  if (x.kind != ExprNode::Kind::Input || y.kind != ExprNode::Kind::Input || x.a == y.a) return false;
  if (h.accesses[x.a].dtype != t || h.accesses[y.a].dtype != t) return false;
  int ni = 0, nj = 0, nk = 0;
  for (int d = 0; d < h.ndim; ++d) {
    const bool a = h.accesses[x.a].kind[d] != mdh::StrideKind::Zero;
    const bool b = h.accesses[y.a].kind[d] != mdh::StrideKind::Zero;
    const bool c = h.accesses[o.access].kind[d] != mdh::StrideKind::Zero;
    if (a && b && c) continue;  // batch
    if (a && c && !b) ++ni;
    else if (b && c && !a) ++nj;
    else if (a && b && !c) ++nk;
    else return false;
  }
  return ni <= 1 && nj <= 1 && nk == 1;
}

Schedule default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, bool routines) {
  Schedule s;
  if (routines && blas_compatible(h)) {
    s.routine = Routine::Blas;
    return s;
  }
  s.tiles.assign(h.ndim, {});
  for (int d = 0; d < h.ndim; ++d) s.order.push_back({d, 0});
  if (h.ndim == 0) {
    s.vectorize = false;
    return s;
  }
  // Size of the largest reduction output (elements), for private partials.
  int64_t reduced_out = 0;
  bool arg = false;
  for (const mdh::Output& o : h.outputs) {
    if (!o.reduces) continue;
    int64_t n = 1;
    for (int d = 0; d < h.ndim; ++d)
      if (!h.pointwise(o, d)) n *= b.extent(h, d);
    reduced_out = std::max(reduced_out, n);
    arg |= o.op == ReduceOp::ArgMax || o.op == ReduceOp::ArgMin;
  }
  const int threads = target.cores;
  if (threads > 1) {
    int concat = -1;
    for (int d = 0; d < h.ndim; ++d)
      if (!h.any_pointwise(d) && b.extent(h, d) >= 2 * threads) {
        concat = d;
        break;
      }
    if (concat == 0) {
      s.parallel = true;
    } else if (concat > 0 && (reduced_out == 0 || reduced_out >= 4096)) {
      const int64_t tile = 256;
      if (b.extent(h, concat) > tile) {
        // Tile the concatenated dimension and hoist its tile loop outermost.
        s.tiles[concat] = {tile};
        s.order.clear();
        s.order.push_back({concat, 0});
        for (int d = 0; d < h.ndim; ++d) s.order.push_back({d, d == concat ? 1 : 0});
      } else if (h.any_pointwise(0)) {
        std::rotate(s.order.begin(), s.order.begin() + concat, s.order.begin() + concat + 1);
      }
      s.parallel = true;
    } else if (reduced_out > 0 && reduced_out <= (1 << 16)) {
      s.parallel = true;  // point-wise outer dimension with private partials
    }
  }
  // Arg-reductions combine (value, index) pairs: no SIMD reduction clause.
  s.vectorize = !arg;
  return s;
}

}  // namespace nf::tune

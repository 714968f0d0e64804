#include <algorithm>
#include <cstdlib>
#include <string>
#include <map>
#include <fstream>
#include <sstream>
#include <stdexcept>
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

Asm Asm::cuda(int sms, const std::string& name) {
  // sm_80/sm_90: 2,048 resident threads, 64 Ki registers (255 a thread) and
  // 164-228 KiB of shared memory per multiprocessor, 48 KiB a block
  // without opting in to more.
  Asm a;
  a.cores = 1;
  a.sms = std::max(1, sms);
  a.max_block_threads = 1024;
  a.max_sm_threads = 2048;
  a.shared_per_block = 48 << 10;
  a.shared_per_sm = 164 << 10;
  a.regs_per_sm = 64 << 10;
  a.max_thread_regs = 255;
  a.gpu_name = name;
  return a;
}

std::string GpuTile::why_illegal() const {
  auto pow2 = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!pow2(bm) || !pow2(bn) || !pow2(bk) || !pow2(tm) || !pow2(tn)) return "tile sizes must be powers of two";
  if (bm > 256 || bn > 256 || bk > 64 || tm > 8 || tn > 8) return "tile sizes beyond 256 x 256 x 64, 8 x 8 a thread";
  if (tm > bm || tn > bn) return "a thread's tile beyond the block's";
  if (threads() < 32 || threads() > 1024) return "a block of 32 to 1024 threads";
  if (bk * tm * tn > 1024) return "more than 1024 multiply-adds unrolled per tile";
  return "";
}

std::string GpuTile::key() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "x" + std::to_string(tm) + "x" +
         std::to_string(tn);
}

const Asm& Asm::host() {
  static const Asm a = [] {
    Asm r;
    r.cores = std::max(1u, std::thread::hardware_concurrency());
    if (int64_t l1 = read_cache_size(0)) r.l1_bytes = l1;
    if (int64_t l2 = read_cache_size(2)) r.l2_bytes = l2;
#if defined(__x86_64__)
    __builtin_cpu_init();
    const char* bits = std::getenv("NUMFUSE_VECTOR_BITS");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && !(bits && std::string(bits) == "256"))
      r.wide_simd_bytes = 64;
#endif
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
  // A routine replaces the generated loops: only its pattern matters.
  if (routine == Routine::Blas) return blas_compatible(h) ? "" : "not a GEMM/GEMV/DOT";
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
  if (parallel && h.is_scan(order[0].dim)) return "the parallel loop runs along a scan";
  const int nloops = static_cast<int>(order.size());
  if (grid < 0 || grid > nloops) return "grid loops out of range";
  if (grid > 0 && !parallel) return "grid loops need a parallel schedule";
  if (block_tiles && grid < 2) return "block tiles need two grid loops";
  if (block_tiles) {
    const std::string why = tile.why_illegal();
    if (!why.empty()) return "block tiles: " + why;
  }
  if (grid_threads != 0 && (grid_threads < 32 || grid_threads > 1024 || (grid_threads & (grid_threads - 1))))
    return "a grid block's threads must be a power of two from 32 to 1024";
  if (grid_threads && grid == 0) return "grid blocks need grid loops";
  if (block_threads != 0 && (block_threads < 32 || block_threads > 1024 || (block_threads & (block_threads - 1))))
    return "a reduction block's threads must be a power of two from 32 to 1024";
  for (int q = 0; q < grid; ++q) {
    const int d = order[q].dim;
    if (h.any_pointwise(d) || h.is_scan(d)) return "a grid loop's dimension is combined";
  }
  std::vector<bool> cached(h.accesses.size(), false);
  for (const Cache& c : caches) {
    if (c.access < 0 || c.access >= static_cast<int>(h.accesses.size())) return "cache of a missing access";
    if (cached[c.access]) return "an access is cached twice";
    cached[c.access] = true;
    if (c.pos < -1 || c.pos >= nloops) return "cache position out of range";
    if (c.pos < grid - 1) return "a cache inside the grid loops";
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
  for (const mdh::Output& o : h.outputs) {
    if (!o.ordered()) continue;
    if (parallel && h.pointwise(o, order[0].dim)) return "a floating-point product has no per-thread partials";
    for (const Cache& c : caches)
      if (c.access == o.access) return "a floating-point product is not accumulated in a tile";
    int last = -1;
    for (const LoopSpec& l : order) {
      if (!h.pointwise(o, l.dim)) continue;
      if (l.dim < last) return "a floating-point product visits its points in index order";
      last = l.dim;
    }
  }
  if (contract)
    for (const mdh::Output& o : h.outputs)
      if (!o.reduces) return "contraction (FMA) only for kernels whose outputs all reduce";
  return "";
}

bool Schedule::legal(const mdh::MdHom& h) const { return why_illegal(h).empty(); }

std::string Schedule::why_unsafe(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target) const {
  if (routine != Routine::None) return "";
  if (wide && target.wide_simd_bytes <= 32) return "wide vectors on a CPU without them";
  // The size class rounds extents up to powers of two: a tile bigger than
  // that was not tuned for this kernel.
  for (int d = 0; d < h.ndim && d < static_cast<int>(tiles.size()); ++d) {
    int64_t cls = 1;
    while (cls < b.extent(h, d) && cls < (int64_t(1) << 40)) cls <<= 1;
    for (int64_t t : tiles[d])
      if (t > cls || t > (int64_t(1) << 31))
        return "tile size " + std::to_string(t) + " exceeds dimension " + std::to_string(d) + "'s extent";
  }
  if (parallel_min_work < 0 || parallel_min_work > (int64_t(1) << 50)) return "parallel threshold out of range";
  if ((block_tiles || block_threads || grid_threads) && !target.gpu()) return "device parameters on a machine without a GPU";
  if (block_tiles) {
    int64_t item = 1;
    for (const mdh::Access& a : h.accesses) item = std::max<int64_t>(item, itemsize(a.dtype));
    if (tile.shared_bytes(item) > target.shared_per_block) return "block tiles beyond a block's shared memory";
    if (tile.registers(item) > target.max_thread_regs) return "block tiles beyond a thread's registers";
    if (tile.threads() > target.max_block_threads) return "block tiles of more threads than a block has";
  }
  if (block_threads > target.max_block_threads || grid_threads > target.max_block_threads)
    return "more threads than a block has";
  // A tile buffer holds, per dimension of its layout, the tile of the
  // innermost loop of that dimension at or above it (or the whole extent).
  constexpr int64_t kMaxTileBytes = int64_t(256) << 20;
  for (const Cache& c : caches) {
    int64_t bytes = itemsize(h.accesses[c.access].dtype);
    for (int d : c.layout) {
      int64_t size = b.extent(h, d);
      for (int q = 0; q <= c.pos && q < static_cast<int>(order.size()); ++q)
        if (order[q].dim == d)
          size = order[q].level < static_cast<int>(tiles[d].size()) ? tiles[d][order[q].level] : 1;
      if (size <= 0 || __builtin_mul_overflow(bytes, size, &bytes) || bytes > kMaxTileBytes)
        return "a tile buffer of access " + std::to_string(c.access) + " would exceed " +
               std::to_string(kMaxTileBytes >> 20) + " MiB";
    }
  }
  return "";
}

// Text form: "blas", or '|'-separated fields
//   t<tiles of dim 0, comma-separated>;<dim 1>;...   tile sizes
//   o<d>.<l>,<d>.<l>,...                             loop order
//   p<min work> | s                                  parallel or serial
//   g<loops>                                         grid loops (Schedule::grid)
//   b<bm>x<bn>x<bk>x<tm>x<tn>                        block tiles (Schedule::block_tiles; "b": 64x64x16x4x4)
//   B<threads>                                       a reduction block's threads (Schedule::block_threads)
//   T<threads>                                       a grid block's threads (Schedule::grid_threads)
//   v | n                                            vectorized or not
//   c<access>@<pos>:<layout>[/<packed dims>];...     caches (lists comma-separated)
//   u<positions>                                     unrolled loops
//   f                                                fused multiply-add
//   w                                                wide vectors (Schedule::wide)
std::string Schedule::key() const {
  if (routine == Routine::Blas) return "blas";
  // (Appended, not streamed: every analysed group makes this key, and an
  // ostringstream's construction alone was a third of its cost.)
  std::string os;
  os.reserve(64);
  auto num = [&](int64_t v) { os += std::to_string(v); };
  auto list = [&](const auto& v) {
    for (size_t k = 0; k < v.size(); ++k) {
      if (k) os += ',';
      num(v[k]);
    }
  };
  os += 't';
  for (size_t d = 0; d < tiles.size(); ++d) {
    if (d) os += ';';
    list(tiles[d]);
  }
  os += "|o";
  for (size_t k = 0; k < order.size(); ++k) {
    if (k) os += ',';
    num(order[k].dim);
    os += '.';
    num(order[k].level);
  }
  if (parallel) {
    os += "|p";
    num(parallel_min_work);
  } else {
    os += "|s";
  }
  if (grid) {
    os += "|g";
    num(grid);
  }
  if (block_tiles) os += "|b" + tile.key();
  if (block_threads) {
    os += "|B";
    num(block_threads);
  }
  if (grid_threads) {
    os += "|T";
    num(grid_threads);
  }
  os += vectorize ? "|v" : "|n";
  if (!caches.empty()) {
    os += "|c";
    for (size_t k = 0; k < caches.size(); ++k) {
      const Cache& c = caches[k];
      if (k) os += ';';
      num(c.access);
      os += '@';
      num(c.pos);
      os += ':';
      list(c.layout);
      if (!c.pack.empty()) {
        os += '/';
        list(c.pack);
      }
    }
  }
  if (!unroll.empty()) {
    os += "|u";
    list(unroll);
  }
  if (contract) os += "|f";
  if (wide) os += "|w";
  return os;
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t k = s.find(sep, start);
    out.push_back(s.substr(start, k == std::string::npos ? std::string::npos : k - start));
    if (k == std::string::npos) return out;
    start = k + 1;
  }
}

int64_t to_int(const std::string& s) {
  if (s.empty()) throw std::invalid_argument("schedule text: empty number");
  size_t used = 0;
  const long long v = std::stoll(s, &used);
  if (used != s.size()) throw std::invalid_argument("schedule text: bad number '" + s + "'");
  return v;
}

template <typename T>
std::vector<T> int_list(const std::string& s) {
  std::vector<T> v;
  if (s.empty()) return v;
  for (const std::string& x : split(s, ',')) v.push_back(static_cast<T>(to_int(x)));
  return v;
}

}  // namespace

Schedule Schedule::parse(const std::string& text) {
  Schedule s;
  if (text == "blas") {
    s.routine = Routine::Blas;
    return s;
  }
  s.vectorize = false;
  for (const std::string& field : split(text, '|')) {
    if (field.empty()) throw std::invalid_argument("schedule text: empty field");
    const std::string v = field.substr(1);
    switch (field[0]) {
      case 't':
        for (const std::string& d : split(v, ';')) s.tiles.push_back(int_list<int64_t>(d));
        break;
      case 'o':
        if (!v.empty())
          for (const std::string& l : split(v, ',')) {
            const std::vector<std::string> dl = split(l, '.');
            if (dl.size() != 2) throw std::invalid_argument("schedule text: bad loop '" + l + "'");
            s.order.push_back({static_cast<int>(to_int(dl[0])), static_cast<int>(to_int(dl[1]))});
          }
        break;
      case 'p':
        s.parallel = true;
        s.parallel_min_work = to_int(v);
        break;
      case 's':
        s.parallel = false;
        break;
      case 'g':
        s.grid = static_cast<int>(to_int(v));
        break;
      case 'b': {
        s.block_tiles = true;
        if (v.empty()) break;
        const std::vector<std::string> t = split(v, 'x');
        if (t.size() != 5) throw std::invalid_argument("schedule text: bad block tiles '" + v + "'");
        s.tile = {to_int(t[0]), to_int(t[1]), to_int(t[2]), to_int(t[3]), to_int(t[4])};
        break;
      }
      case 'B':
        s.block_threads = to_int(v);
        break;
      case 'T':
        s.grid_threads = to_int(v);
        break;
      case 'v':
        s.vectorize = true;
        break;
      case 'n':
        s.vectorize = false;
        break;
      case 'c':
        for (const std::string& c : split(v, ';')) {
          Cache cache;
          const size_t at = c.find('@'), colon = c.find(':');
          if (at == std::string::npos || colon == std::string::npos || colon < at)
            throw std::invalid_argument("schedule text: bad cache '" + c + "'");
          cache.access = static_cast<int>(to_int(c.substr(0, at)));
          cache.pos = static_cast<int>(to_int(c.substr(at + 1, colon - at - 1)));
          const std::vector<std::string> lp = split(c.substr(colon + 1), '/');
          if (lp.size() > 2) throw std::invalid_argument("schedule text: bad cache '" + c + "'");
          cache.layout = int_list<int>(lp[0]);
          if (lp.size() == 2) cache.pack = int_list<int>(lp[1]);
          s.caches.push_back(cache);
        }
        break;
      case 'u':
        s.unroll = int_list<int>(v);
        break;
      case 'f':
        s.contract = true;
        break;
      case 'w':
        s.wide = true;
        break;
      default:
        throw std::invalid_argument("schedule text: unknown field '" + field + "'");
    }
  }
  // A zero-dimensional MdHom has one (empty) tile list per dimension: none.
  if (s.tiles.size() == 1 && s.tiles[0].empty() && s.order.empty()) s.tiles.clear();
  return s;
}

std::string Schedule::to_string() const {
  if (routine == Routine::Blas) return "library routine (BLAS)";
  std::ostringstream os;
  os << "loops ";
  for (size_t i = 0; i < order.size(); ++i) {
    const LoopSpec& l = order[i];
    os << (i ? " > " : "") << "i" << l.dim;
    if (l.level < static_cast<int>(tiles[l.dim].size())) os << "/" << tiles[l.dim][l.level];
    if (static_cast<int>(i) < grid) os << "[grid]";
    else if (i == 0 && parallel) os << "[cores]";
    if (std::find(unroll.begin(), unroll.end(), static_cast<int>(i)) != unroll.end()) os << "[unroll]";
    if (i + 1 == order.size() && vectorize) os << "[simd]";
  }
  for (const Cache& c : caches) {
    os << "; b" << c.access << " cached in loop " << c.pos << " as (";
    for (size_t k = 0; k < c.layout.size(); ++k) os << (k ? "," : "") << "i" << c.layout[k];
    os << ")";
    for (int d : c.pack) os << " packed by i" << d;
  }
  if (block_tiles)
    os << "; block tiles (grid loops in " << tile.bm << " x " << tile.bn << " tiles, " << tile.threads()
       << " threads of " << tile.tm << " x " << tile.tn << ", k " << tile.bk << " deep in shared memory)";
  if (block_threads) os << "; reduction blocks of " << block_threads << " threads";
  if (grid_threads) os << "; grid blocks of " << grid_threads << " threads";
  if (contract) os << "; fma";
  if (wide) os << "; " << Asm::host().wide_simd_bytes * 8 << "-bit vectors";
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
  if (h.outputs.size() != 1 || h.prologue > 0) return false;
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

}  // namespace nf::tune

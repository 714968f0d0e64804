// Default schedules: good first-run speed without search.
//
//   contraction with a GEMM structure -> the BLIS schedule (analytical model
//                                         below), or the BLAS routine;
//   other sums over several indices   -> a register-tile schedule
//   (convolutions, most einsums)         (window_default below);
//   everything else                   -> the generic schedule: dimensions in
//                                         stride order, one parallel loop,
//                                         the innermost loop vectorized.
#include <algorithm>

#include "tune/tune.h"

namespace nf::tune {

namespace {

bool uses(const mdh::Access& a, int d) { return a.kind[d] != mdh::StrideKind::Zero; }

// A GEMM-structured MdHom: one output, combined point-wise over exactly one
// dimension k, with a unit-stride concatenated dimension j in the output and
// another concatenated dimension i; every input reads along k, and none reads
// along both i and j. Remaining concatenated dimensions are batch dimensions.
struct GemmShape {
  int i = -1, j = -1, k = -1;
  std::vector<int> batch;
  std::vector<int> a_like, b_like;  // inputs over (i, k) and over (k, j)
};

bool gemm_shape(const mdh::MdHom& h, const mdh::Bindings& b, GemmShape* g) {
  if (h.outputs.size() != 1 || !h.outputs[0].reduces) return false;
  const mdh::Output& o = h.outputs[0];
  if (o.op == ReduceOp::ArgMax || o.op == ReduceOp::ArgMin) return false;
  const mdh::Access& c = h.accesses[o.access];
  for (int d = 0; d < h.ndim; ++d) {
    if (!uses(c, d)) {
      if (g->k >= 0) return false;
      g->k = d;
    } else if (c.kind[d] == mdh::StrideKind::Unit && g->j < 0) {
      g->j = d;
    }
  }
  if (g->k < 0 || g->j < 0) return false;
  // i: the largest other concatenated dimension some input reads and the
  // j-reading inputs do not.
  for (int d = 0; d < h.ndim; ++d) {
    if (d == g->k || d == g->j) continue;
    bool a_reads = false, b_reads = false;
    for (const mdh::Access& a : h.accesses)
      if (a.read && uses(a, d)) (uses(a, g->j) ? b_reads : a_reads) = true;
    if (a_reads && !b_reads && (g->i < 0 || b.extent(h, d) > b.extent(h, g->i))) g->i = d;
  }
  if (g->i < 0) return false;
  for (int d = 0; d < h.ndim; ++d)
    if (d != g->i && d != g->j && d != g->k) g->batch.push_back(d);
  for (size_t x = 0; x < h.accesses.size(); ++x) {
    const mdh::Access& a = h.accesses[x];
    if (!a.read) continue;
    if (a.written || a.reduced || !uses(a, g->k)) return false;
    if (uses(a, g->i) && uses(a, g->j)) return false;
    if (uses(a, g->j)) g->b_like.push_back(static_cast<int>(x));
    else g->a_like.push_back(static_cast<int>(x));
  }
  return b.extent(h, g->i) >= 4 && b.extent(h, g->j) >= 8 && b.extent(h, g->k) >= 8;
}

int64_t round_down(int64_t v, int64_t m) { return std::max(m, v / m * m); }

// The BLIS schedule (Van Zee & van de Geijn; Low et al.'s analytical model):
//
//   batch.. > i/MC [cores] > k/KC > j/NC > j/NR > i/MR > k > i [unroll] > j [simd]
//
// A's MC x KC block packed into MR-row micro-panels (in k/KC's body), B's
// KC x NC block packed into NR-column micro-panels (in j/NC's body), the
// MR x NR block of C accumulated in registers. Register tile: NR = two SIMD
// vectors, MR = 4 rows (8 accumulators, what 16 vector registers afford);
// KC so that a B micro-panel fills half of L1; MC so that the A block
// fills half of L2.
Schedule blis_default(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, const GemmShape& g) {
  const mdh::Output& o = h.outputs[0];
  const int64_t item = itemsize(o.acc_dtype);
  const int64_t lanes = std::max<int64_t>(1, target.simd_bytes / item);
  const int64_t m = b.extent(h, g.i), n = b.extent(h, g.j), kk = b.extent(h, g.k);
  const int64_t NR = std::min<int64_t>(2 * lanes, round_down(n, lanes));
  const int64_t MR = 4;
  int64_t KC = std::min<int64_t>(target.l1_bytes / 2 / (NR * item), kk);
  KC = std::max<int64_t>(KC, 8);
  int64_t MC = round_down(std::min<int64_t>(target.l2_bytes / 2 / (KC * item), m), MR);
  int64_t batch_work = 1;
  for (int d : g.batch) batch_work *= b.extent(h, d);
  // Enough MC blocks for every core when the batch does not provide them.
  if (batch_work < target.cores && (m + MC - 1) / MC < 2 * target.cores)
    MC = round_down(std::max<int64_t>(MR, m / (2 * target.cores)), MR);
  int64_t NC = std::min<int64_t>(round_down(4096 / NR * NR, NR), (n + NR - 1) / NR * NR);
  if (NC <= NR) NC = 2 * NR;
  MC = std::max(MC, 2 * MR);
  if (KC >= kk) KC = kk;  // one k block: keep the tile (it still bounds the packed panels)

  Schedule s;
  s.tiles.assign(h.ndim, {});
  s.tiles[g.i] = {MC, MR};
  s.tiles[g.j] = {NC, NR};
  s.tiles[g.k] = {KC};
  for (int d : g.batch) s.order.push_back({d, 0});
  const int pi0 = static_cast<int>(s.order.size());
  s.order.push_back({g.i, 0});
  const int pk0 = pi0 + 1;
  s.order.push_back({g.k, 0});
  const int pj0 = pk0 + 1;
  s.order.push_back({g.j, 0});
  s.order.push_back({g.j, 1});
  const int pi1 = pj0 + 2;
  s.order.push_back({g.i, 1});
  s.order.push_back({g.k, 1});
  s.order.push_back({g.i, 2});
  s.order.push_back({g.j, 2});
  const int nloops = static_cast<int>(s.order.size());
  s.parallel = target.cores > 1;
  if (s.parallel && batch_work < 2 * target.cores && !g.batch.empty()) {
    // Too few batch elements to share: the i blocks go outermost.
    std::rotate(s.order.begin(), s.order.begin() + pi0, s.order.begin() + pi0 + 1);
  }
  s.parallel_min_work = int64_t(1) << 15;
  for (int a : g.a_like) s.caches.push_back({a, pk0, {g.k, g.i}, {g.i}});
  for (int a : g.b_like) s.caches.push_back({a, pj0, {g.k, g.j}, {g.j}});
  s.caches.push_back({o.access, pi1, {g.i, g.j}, {}});
  s.unroll = {nloops - 2, nloops - 1};
  s.vectorize = true;
  s.contract = is_float(o.acc_dtype);
  // The rotation above moved loops: recompute positions by loop identity.
  auto pos = [&](LoopSpec l) {
    return static_cast<int>(std::find(s.order.begin(), s.order.end(), l) - s.order.begin());
  };
  for (Cache& c : s.caches) {
    if (c.access == o.access) c.pos = pos({g.i, 1});
    else if (std::find(g.a_like.begin(), g.a_like.end(), c.access) != g.a_like.end()) c.pos = pos({g.k, 0});
    else c.pos = pos({g.j, 0});
  }
  s.unroll = {pos({g.i, 2}), pos({g.j, 2})};
  return s;
}

// A multi-reduction contraction that is not a GEMM (convolutions over a
// sliding window, einsums summing over several indices): one output combined
// with + over one or more dimensions R, a unit-stride output dimension j,
// another output dimension i for the register tile's rows, the remaining
// output dimensions P outside.
struct WindowShape {
  int i = -1, j = -1;
  std::vector<int> outer, reduce;
  std::vector<int> b_like;  // inputs that read along j but not i, with j not unit-stride
};

bool window_shape(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, WindowShape* w) {
  if (h.outputs.size() != 1 || !h.outputs[0].reduces || h.outputs[0].scan_dim >= 0) return false;
  const mdh::Output& o = h.outputs[0];
  if (o.op != ReduceOp::Sum || !is_float(o.acc_dtype)) return false;
  const mdh::Access& c = h.accesses[o.access];
  std::vector<int> concat;
  for (int d = 0; d < h.ndim; ++d) {
    if (!uses(c, d)) w->reduce.push_back(d);
    else if (c.kind[d] == mdh::StrideKind::Unit && w->j < 0) w->j = d;
    else concat.push_back(d);
  }
  if (w->reduce.empty() || w->j < 0 || concat.empty()) return false;
  const int64_t lanes = std::max<int64_t>(1, target.simd_bytes / itemsize(o.acc_dtype));
  if (b.extent(h, w->j) < lanes) return false;
  w->i = concat.back();  // the innermost other output dimension
  concat.pop_back();
  w->outer = concat;
  for (size_t x = 0; x < h.accesses.size(); ++x) {
    const mdh::Access& a = h.accesses[x];
    if (!a.read) continue;
    if (a.written || a.reduced) return false;
    if (uses(a, w->j) && !uses(a, w->i) && a.kind[w->j] != mdh::StrideKind::Unit)
      w->b_like.push_back(static_cast<int>(x));
  }
  return true;
}

// The register-tile schedule for WindowShape:
//
//   P.. > i/MR > j/NR > R.. > i [unroll] > j [unroll][simd]
//
// The MR x NR block of the output stays in registers while every reduction
// index is visited (a convolution's taps, a layer's channels); inputs read
// along j with a stride (a filter stored output-channel first) are copied
// once into a tile buffer with j innermost, when that fits half of L2. The
// outermost loop with enough iterations runs in parallel.
Schedule window_default(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, const WindowShape& w) {
  const mdh::Output& o = h.outputs[0];
  const int64_t item = itemsize(o.acc_dtype);
  const int64_t lanes = std::max<int64_t>(1, target.simd_bytes / item);
  const int64_t NR = std::min<int64_t>(2 * lanes, round_down(b.extent(h, w.j), lanes));
  const int64_t MR = std::min<int64_t>(4, b.extent(h, w.i));
  Schedule s;
  s.tiles.assign(h.ndim, {});
  s.tiles[w.i] = {MR};
  s.tiles[w.j] = {NR};
  std::vector<int> outer = w.outer;
  // The first dimension with work for every core leads (and runs in parallel).
  for (size_t x = 0; x < outer.size(); ++x)
    if (b.extent(h, outer[x]) >= 2 * target.cores) {
      std::rotate(outer.begin(), outer.begin() + x, outer.begin() + x + 1);
      break;
    }
  const bool outer_parallel = !outer.empty() && b.extent(h, outer[0]) >= 2 * target.cores;
  if (outer_parallel)
    for (int d : outer) s.order.push_back({d, 0});
  s.order.push_back({w.i, 0});
  if (!outer_parallel)
    for (int d : outer) s.order.push_back({d, 0});
  const int pj = static_cast<int>(s.order.size());
  s.order.push_back({w.j, 0});
  for (int d : w.reduce) s.order.push_back({d, 0});
  s.order.push_back({w.i, 1});
  s.order.push_back({w.j, 1});
  const int nloops = static_cast<int>(s.order.size());
  s.parallel = target.cores > 1;
  s.parallel_min_work = int64_t(1) << 15;
  // The output tile's layout names every output dimension (the outer ones
  // are fixed inside the tile's loop: extent 1).
  std::vector<int> out_layout;
  for (int d : w.outer)
    if (uses(h.accesses[o.access], d)) out_layout.push_back(d);
  out_layout.push_back(w.i);
  out_layout.push_back(w.j);
  s.caches.push_back({o.access, pj, out_layout, {}});
  for (int a : w.b_like) {
    const mdh::Access& acc = h.accesses[a];
    std::vector<int> layout;
    int64_t elems = 1;
    for (int d = 0; d < h.ndim; ++d)
      if (uses(acc, d)) {
        elems *= b.extent(h, d);
        if (d != w.j) layout.push_back(d);
      }
    layout.push_back(w.j);
    if (elems * item <= target.l2_bytes / 2) s.caches.push_back({a, -1, layout, {}});
  }
  s.unroll = {nloops - 2, nloops - 1};
  s.vectorize = true;
  s.contract = true;
  if (!s.legal(h)) {  // a tile buffer the lowering cannot place: keep the register tile only
    s.caches.resize(1);
  }
  return s;
}

// The generic default: dimensions in normalized order (largest stride
// outermost), one parallel loop, the innermost loop vectorized.
Schedule generic_default(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target) {
  Schedule s;
  s.tiles.assign(h.ndim, {});
  for (int d = 0; d < h.ndim; ++d) s.order.push_back({d, 0});
  if (h.ndim == 0) {
    s.vectorize = false;
    return s;
  }
  // Size of the largest reduction output (elements), for private partials.
  int64_t reduced_out = 0;
  for (const mdh::Output& o : h.outputs) {
    if (!o.reduces) continue;
    int64_t n = 1;
    for (int d = 0; d < h.ndim; ++d)
      if (!h.pointwise(o, d)) n *= b.extent(h, d);
    reduced_out = std::max(reduced_out, n);
  }
  const int threads = target.cores;
  if (threads > 1) {
    int concat = -1;
    for (int d = 0; d < h.ndim; ++d)
      if (!h.any_pointwise(d) && !h.is_scan(d) && b.extent(h, d) >= 2 * threads) {
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
  // Arg-reductions combine (value, index) pairs on lanes of their own
  // (lower/ lane_split).
  s.vectorize = true;
  if (s.parallel && h.is_scan(s.order[0].dim)) s.parallel = false;
  if (s.parallel && !s.legal(h)) s.parallel = false;  // e.g. an ordered product's partials
  return s;
}

}  // namespace

namespace {
// Wide vectors pay for the clock they cost (Schedule::wide) in a kernel of
// at least this many points; below it the Python code around small kernels
// would run slower for what the kernels gain.
constexpr int64_t kWideMinPoints = int64_t(1) << 16;

Schedule with_width(Schedule s, const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target) {
  if (s.routine != Routine::None || !s.vectorize || target.wide_simd_bytes <= 32) return s;
  int64_t points = 1;
  for (int d = 0; d < h.ndim; ++d) points = std::min<int64_t>(points * std::max<int64_t>(b.extent(h, d), 1), kWideMinPoints);
  s.wide = points >= kWideMinPoints;
  return s;
}
}  // namespace

Schedule default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, bool routines) {
  if (target.gpu()) return gpu_default_schedule(h, b, target);
  if (routines && blas_compatible(h)) {
    Schedule s;
    s.routine = Routine::Blas;
    return s;
  }
  GemmShape g;
  if (gemm_shape(h, b, &g)) {
    Schedule s = blis_default(h, b, target, g);
    if (s.legal(h)) return with_width(s, h, b, target);
  }
  WindowShape w;
  if (window_shape(h, b, target, &w)) {
    Schedule s = window_default(h, b, target, w);
    if (s.legal(h)) return with_width(s, h, b, target);
  }
  return with_width(generic_default(h, b, target), h, b, target);
}

}  // namespace nf::tune

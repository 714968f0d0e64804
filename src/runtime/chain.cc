// The multi-stage kernel launcher (runtime.h, ChainPlan): halo/extent
// inference over the bound views, the tile buffers' layout in the scratch,
// and the composed kernel's parameters (lower.h, ChainShape).
//
// Rows: every stage's MdHom dimension 0 is the chain's outer dimension
// (fusion::Group::stage keeps it unmerged). A link buffer is addressed as
// row * row_bytes + (byte within the row); a consumer's view of it starts
// k rows and c bytes after the producer's, so consumer row i reads producer
// row i + k. A Tile link's rows for one tile live in the thread's scratch,
// whose first row is `buf_lo`: the producer's pointer for a call computing
// rows [cs, ...) is scratch + (cs - buf_lo) * row_bytes, a consumer's is
// scratch + k * row_bytes + c + (cs - buf_lo) * row_bytes.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/checks.h"
#include "core/small_vector.h"
#include "runtime/runtime.h"

namespace nf::runtime {

namespace {

bool touches(const mdh::Access& a) { return a.read || a.written || a.reduced; }
bool writes(const mdh::Access& a) { return a.written || a.reduced; }

int64_t stride_bytes(const mdh::Access& a, const mdh::Bindings& b, int d) {
  switch (a.kind[d]) {
    case mdh::StrideKind::Zero: return 0;
    case mdh::StrideKind::Unit: return itemsize(a.dtype);
    case mdh::StrideKind::Param: return b.ints[a.stride[d]] * itemsize(a.dtype);
  }
  return 0;
}

// Bytes one row of the access spans from its first element (-1: an inner
// stride is negative).
int64_t inner_span(const mdh::Access& a, const mdh::MdHom& h, const mdh::Bindings& b) {
  int64_t span = itemsize(a.dtype);
  for (int d = 1; d < h.ndim; ++d) {
    const int64_t s = stride_bytes(a, b, d);
    if (s < 0) return -1;
    span += (b.extent(h, d) - 1) * s;
  }
  return span;
}

int64_t round64(int64_t n) { return (n + 63) / 64 * 64; }

// Per-thread tile buffers, kept between launches (warm pages).
struct Arena {
  std::mutex mu;
  std::unique_ptr<char[]> mem;
  size_t cap = 0;
  char* get(size_t n) {
    if (n + 64 > cap) {
      mem.reset(new char[n + 64]);
      cap = n + 64;
    }
    return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(mem.get()) + 63) / 64 * 64);
  }
};
Arena& arena() {
  static Arena a;
  return a;
}

}  // namespace

int64_t ChainPlan::bytes_saved() const {
  int64_t n = 0;
  for (const Link& l : links)
    if (l.tile && !l.copy) n += l.buffer->nbytes();
  return n;
}

std::string ChainPlan::to_string() const {
  std::ostringstream os;
  if (!why_not.empty()) return "not run as one kernel: " + why_not;
  os << stages.size() << " stages over tiles of " << tile_rows << " rows of the last stage's "
     << stages.back().rows << " (" << threads << " thread" << (threads == 1 ? "" : "s") << ", "
     << (storage == 2   ? "ring buffers: each stage runs row by row, every row computed once and kept until its last "
                          "reader has run"
         : storage == 1 ? "halo rows kept from the previous tile (rolling buffers)"
                        : "halo rows recomputed per tile")
     << ")";
  if (col_tile < cols) os << ", in strips of " << col_tile << " of its " << cols << " columns";
  os << "\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    const Stage& st = stages[s];
    os << "  stage " << s + 1 << ": computed at each tile, rows [r0" << (st.lo < 0 ? " - " : " + ") << std::abs(st.lo)
       << ", r1" << (st.hi < 0 ? " - " : " + ") << std::abs(st.hi) << ") of its " << st.rows;
    if (col_tile < cols)
      os << ", columns [c0" << (st.clo < 0 ? " - " : " + ") << std::abs(st.clo) << ", c1"
         << (st.chi < 0 ? " - " : " + ") << std::abs(st.chi) << ") of its " << st.cols;
    for (const Link& l : links)
      if (l.producer == static_cast<int>(s))
        os << "; writes buffer #" << l.buffer->id() << " ("
           << (l.copy  ? "tile buffer of " + std::to_string(l.cap_rows) +
                                " rows per thread, each tile copying the rows it owns to the array Python holds"
               : l.tile ? "tile buffer of " + std::to_string(l.cap_rows) + " rows per thread, never in memory"
                        : "full array")
           << ")";
    os << "\n";
  }
  os << "  intermediates never written to memory: " << bytes_saved() << " bytes";
  return os.str();
}

ChainPlan plan_chain(const std::vector<ChainStage>& stages, const std::vector<LinkSpec>& links,
                     const ChainOptions& opt) {
  ChainPlan p;
  const int S = static_cast<int>(stages.size());
  auto fail = [&](std::string why) {
    p.why_not = std::move(why);
    return p;
  };
  if (S < 2) return fail("fewer than two stages");
  std::unordered_map<const Buffer*, int> link_of;
  for (const LinkSpec& spec : links) {
    link_of[spec.buffer] = static_cast<int>(p.links.size());
    ChainPlan::Link l;
    l.buffer = spec.buffer;
    l.tile = spec.tile;
    l.copy = spec.copy;
    l.producer = -1;
    p.links.push_back(l);
  }
  const int L = static_cast<int>(p.links.size());
  std::vector<int64_t> write_off(L, 0);
  std::vector<bool> visible(S, false);  // the stage writes memory other than Tile links
  bool unit_cols = true;  // every link's producer writes dimension 1 with a positive stride
  std::vector<int64_t> col_bytes(links.size(), 0);  // per link: its producer's dimension-1 stride
  p.stages.resize(S);
  for (int s = 0; s < S; ++s) {
    const mdh::MdHom& h = *stages[s].hom;
    const mdh::Bindings& b = *stages[s].bind;
    if (h.ndim < 1) return fail("stage " + std::to_string(s + 1) + " has no dimension to tile");
    p.stages[s].rows = b.extent(h, 0);
    for (const mdh::Output& o : h.outputs) {
      if (o.scan_dim == 0) return fail("a stage scans along the outer dimension");
      if (o.reduces && h.accesses[o.access].kind[0] == mdh::StrideKind::Zero)
        return fail("a stage reduces along the outer dimension");
    }
    for (const mdh::Access& a : h.accesses) {
      if (!touches(a) || !writes(a)) continue;
      // (The prologue's stores: one element, written once, before the tiles: compose.)
      if (h.stored_once(static_cast<int>(&a - h.accesses.data()))) continue;
      const int64_t s0 = stride_bytes(a, b, 0);
      if (s0 <= 0) return fail("a stage writes along the outer dimension with stride " + std::to_string(s0));
      auto it = link_of.find(b.buffers[a.ptr]);
      if (it == link_of.end() || !p.links[it->second].tile) visible[s] = true;
      if (it == link_of.end()) continue;
      ChainPlan::Link& l = p.links[it->second];
      const int64_t off = b.offsets[a.ptr];
      if (l.producer >= 0 && (l.producer != s || l.row_bytes != s0 || write_off[it->second] != off))
        return fail("a link is written through two views");
      const int64_t span = inner_span(a, h, b);
      if (span < 0 || span > s0) return fail("a stage writes a link across rows");
      l.producer = s;
      l.row_bytes = s0;
      if (h.ndim < 2 || a.kind[1] == mdh::StrideKind::Zero || stride_bytes(a, b, 1) <= 0) unit_cols = false;
      else col_bytes[it->second] = stride_bytes(a, b, 1);
      write_off[it->second] = off;
    }
  }
  struct Read {
    int stage;
    int64_t k;
    int64_t shift;  // columns (-1: not a unit-stride column read)
  };
  std::vector<std::vector<Read>> reads(L);
  for (int s = 0; s < S; ++s) {
    const mdh::MdHom& h = *stages[s].hom;
    const mdh::Bindings& b = *stages[s].bind;
    for (const mdh::Access& a : h.accesses) {
      if (!touches(a)) continue;
      auto it = link_of.find(b.buffers[a.ptr]);
      if (it == link_of.end()) continue;
      const ChainPlan::Link& l = p.links[it->second];
      if (l.producer < 0) return fail("a link no stage writes");
      if (s < l.producer) return fail("a stage reads a link before its producer");
      if (s == l.producer) continue;  // (the producer's own view: the same points)
      const int64_t R = l.row_bytes;
      if (stride_bytes(a, b, 0) != R) return fail("a stage reads a link with another row stride than it was written");
      const int64_t delta = b.offsets[a.ptr] - write_off[it->second];
      if (delta < 0 || (!l.tile && delta != 0)) return fail("a stage reads a link through another view");
      const int64_t k = delta / R, c = delta % R;
      const int64_t span = inner_span(a, h, b);
      if (span < 0 || c + span > R) return fail("a stage reads a link across rows");
      // Its shift along dimension 1: whole steps of the producer's stride
      // (2-d: columns, the rest of c must be 0; more dimensions: the rows
      // of a plane, the rest a shift within the row).
      const int64_t cb = h.ndim >= 2 ? stride_bytes(a, b, 1) : 0;
      const int64_t pb = col_bytes[it->second];
      const bool ok = cb > 0 && cb == pb && (h.ndim > 2 || c % cb == 0);
      reads[it->second].push_back({s, k, ok ? c / cb : -1});
    }
  }
  // Halo inference of stage s along a dimension: the range it computes is
  // every consumer's range shifted by the consumer's reads of s's links
  // (`range` and `shift` pick the dimension); [0, 0) for a stage feeding
  // no later one (it computes the tile's own rows or columns).
  auto halo = [&](int s, auto range, auto shift) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (int l = 0; l < L; ++l) {
      if (p.links[l].producer != s) continue;
      for (const Read& r : reads[l]) {
        const auto [clo, chi] = range(p.stages[r.stage]);
        lo = std::min(lo, clo + shift(r));
        hi = std::max(hi, chi + shift(r));
      }
    }
    if (lo > hi) lo = hi = 0;
    return std::pair<int64_t, int64_t>(lo, hi);
  };
  auto rows_of = [](const ChainPlan::Stage& st) { return std::pair<int64_t, int64_t>(st.lo, st.hi); };
  auto cols_of = [](const ChainPlan::Stage& st) { return std::pair<int64_t, int64_t>(st.clo, st.chi); };
  // Rows, last stage first: a producer computes every row its consumers
  // read for the tile.
  for (int s = S - 2; s >= 0; --s) {
    auto [lo, hi] = halo(s, rows_of, [](const Read& r) { return r.k; });
    // A Copy link is visible: all its rows are computed (by the first and
    // last tiles when no consumer reads them).
    const int64_t root = p.stages.back().rows;
    for (const ChainPlan::Link& l : p.links)
      if (l.copy && l.producer == s) {
        lo = std::min<int64_t>(lo, 0);
        hi = std::max<int64_t>(hi, p.stages[s].rows - root);
      }
    p.stages[s].lo = lo;
    p.stages[s].hi = hi;
  }
  const int64_t root = p.stages.back().rows;
  // A Copy link's rows are partitioned over the tiles: every row of the
  // buffer must be computed by some tile.
  for (const ChainPlan::Link& l : p.links) {
    if (!l.copy) continue;
    const ChainPlan::Stage& ps = p.stages[l.producer];
    if (l.row_bytes * ps.rows != l.buffer->nbytes() || ps.lo > 0 || root + ps.hi < ps.rows)
      return fail("a visible intermediate has rows no tile computes");
  }
  for (int s = 0; s < S; ++s)
    if (visible[s] && (p.stages[s].lo != 0 || p.stages[s].hi != 0 || p.stages[s].rows > root))
      return fail("stage " + std::to_string(s + 1) +
                  " writes memory that outlives the kernel but its consumers need rows of neighbouring tiles");
  // Tile size: the tile buffers of a thread fill the scratch budget, with
  // halos small against the tile; every thread gets rows.
  int64_t per_row = 0, halo_bytes = 0, max_span = 0;
  for (const ChainPlan::Link& l : p.links) {
    const int64_t span = p.stages[l.producer].hi - p.stages[l.producer].lo;
    per_row += l.row_bytes;
    if (l.tile) halo_bytes += span * l.row_bytes;
    max_span = std::max(max_span, span);
  }
  const int64_t nt = std::max<int64_t>(1, jit::nf_max_threads());
  int64_t rows = opt.tile_rows;
  if (rows <= 0 && opt.storage == 2) rows = 1;
  if (rows <= 0) {
    rows = per_row > 0 ? (opt.scratch_budget - halo_bytes) / per_row : root;
    rows = std::max<int64_t>({rows, 4 * max_span, 1});
  }
  rows = std::max<int64_t>(1, std::min(rows, (root + nt - 1) / nt));
  p.tile_rows = rows;
  p.threads = std::min(nt, (root + rows - 1) / rows);
  p.storage = opt.storage;
  int64_t at = 0;
  for (ChainPlan::Link& l : p.links) {
    if (!l.tile) continue;
    l.cap_rows = rows + p.stages[l.producer].hi - p.stages[l.producer].lo;
  }
  // Column strips: halo inference over the columns, as over the rows.
  const mdh::MdHom& last_h = *stages.back().hom;
  const int64_t root_cols = last_h.ndim >= 2 ? stages.back().bind->extent(last_h, 1) : 1;
  p.cols = std::max<int64_t>(root_cols, 1);
  for (int s = 0; s < S; ++s) {
    const mdh::MdHom& h = *stages[s].hom;
    p.stages[s].cols = h.ndim >= 2 ? stages[s].bind->extent(h, 1) : 1;
  }
  int64_t col_tile = opt.col_tile;
  if (col_tile <= 0 && opt.storage == 2 && opt.strip_budget > 0) {
    int64_t per_col = 0;  // bytes of one column of every tile buffer's rows
    for (const ChainPlan::Link& l : p.links)
      if (l.tile) per_col += l.cap_rows * l.row_bytes / std::max<int64_t>(1, p.stages[l.producer].cols);
    col_tile = per_col > 0 ? std::max<int64_t>(64, opt.strip_budget / per_col / 64 * 64) : 0;
  }
  bool strips = col_tile > 0 && col_tile < root_cols && unit_cols;
  for (int s = 0; s < S; ++s) {
    const mdh::MdHom& h = *stages[s].hom;
    if (h.ndim < 2 || h.ndim != last_h.ndim) strips = false;
    for (const mdh::Output& o : h.outputs)
      if (o.reduces || o.scan_dim >= 0) strips = false;
  }
  for (const ChainPlan::Link& l : p.links)
    if (l.copy) strips = false;
  for (int l = 0; l < L && strips; ++l)
    for (const Read& r : reads[l])
      if (r.shift < 0) strips = false;
  if (strips) {
    for (int s = S - 2; s >= 0; --s) {
      const auto [lo, hi] = halo(s, cols_of, [](const Read& r) { return r.shift; });
      p.stages[s].clo = lo;
      p.stages[s].chi = hi;
      if (visible[s] && (lo != 0 || hi != 0 || p.stages[s].cols != root_cols)) strips = false;
    }
    // Chosen strips are at least 8 times the widest halo (its columns are
    // computed by both neighbouring strips).
    if (opt.col_tile <= 0) {
      int64_t span = 0;
      for (const ChainPlan::Stage& st : p.stages) span = std::max(span, st.chi - st.clo);
      col_tile = std::max(col_tile, 8 * span);
      if (col_tile >= root_cols) strips = false;
    }
  }
  if (strips) {
    p.col_tile = col_tile;
    if (p.storage == 1) p.storage = 2;
  } else {
    // One strip: every stage computes all its columns.
    p.col_tile = p.cols;
    for (ChainPlan::Stage& st : p.stages) {
      st.clo = 0;
      st.chi = st.cols - p.cols;
    }
  }
  // The tile buffers in a thread's scratch. On a ring (one row per stage
  // call) rows need not be row_bytes apart: rows a multiple of 4 KiB apart
  // map to the same sets of the L1 cache (a 2048-wide float64 row is 16
  // KiB), so they are one cache line more apart and each row of a ring
  // uses sets of its own; buffers start apart the same way. (Calls of many
  // rows step by the arrays' row bytes: no padding.)
  for (ChainPlan::Link& l : p.links) {
    if (!l.tile) continue;
    l.slot_bytes = l.row_bytes;
    if (p.storage == 2 && round64(l.row_bytes) % 4096 == 0) l.slot_bytes = round64(l.row_bytes) + 64;
    l.scratch_at = at;
    at += round64(l.cap_rows * l.slot_bytes) + (p.storage == 2 ? 192 : 0);
  }
  p.scratch_bytes = at;
  // The verifier (core/checks.h): what the launch relies on, checked.
  if (checks_on()) {
    auto broken = [](const std::string& what) { throw std::logic_error("plan_chain: " + what); };
    for (int l = 0; l < L; ++l) {
      const ChainPlan::Link& lk = p.links[l];
      const ChainPlan::Stage& ps = p.stages[lk.producer];
      for (const Read& r : reads[l]) {
        const ChainPlan::Stage& cs = p.stages[r.stage];
        // Every row a consumer reads for a tile, its producer computed for it.
        if (r.stage <= lk.producer || ps.lo > cs.lo + r.k || ps.hi < cs.hi + r.k) broken("a consumer's rows exceed its producer's");
      }
      if (lk.tile && (lk.cap_rows < p.tile_rows + ps.hi - ps.lo || lk.scratch_at % 64 != 0 ||
                      lk.scratch_at + lk.cap_rows * lk.slot_bytes > p.scratch_bytes || lk.slot_bytes < lk.row_bytes))
        broken("a tile buffer is too small or misplaced");
    }
    for (int s = 0; s < S; ++s)
      if (visible[s] && (p.stages[s].lo != 0 || p.stages[s].hi != 0)) broken("a stage writing memory has a halo");
    if (p.tile_rows < 1 || p.threads < 1 || p.stages.back().lo != 0 || p.stages.back().hi != 0)
      broken("no tiles, or the last stage has a halo");
  }
  return p;
}

lower::ChainShape chain_shape(const std::vector<ChainStage>& stages, const ChainPlan& plan) {
  lower::ChainShape c;
  std::unordered_map<const Buffer*, int> tile_of;
  for (const ChainPlan::Link& l : plan.links) {
    if (!l.tile) continue;
    tile_of[l.buffer] = static_cast<int>(c.links.size());
    c.links.push_back({l.producer, l.copy});
  }
  for (const ChainStage& st : stages) {
    const mdh::MdHom& h = *st.hom;
    const mdh::Bindings& b = *st.bind;
    lower::ChainShape::Stage& cs = c.stages.emplace_back();
    for (const mdh::Access& a : h.accesses) {
      int link = -2;
      if (touches(a)) {
        auto it = tile_of.find(b.buffers[a.ptr]);
        link = it == tile_of.end() ? -1 : it->second;
      }
      cs.link.push_back(link);
    }
    cs.ints = static_cast<int>(b.ints.size());
    cs.floats = static_cast<int>(b.floats.size());
    cs.extent0 = h.extent[0];
    cs.extent1 = h.ndim >= 2 ? h.extent[1] : -1;
    cs.once = h.once_guard;
    for (const mdh::Affine& f : h.indices) cs.shifts.push_back({f.offset, f.stride[0], h.ndim >= 2 ? f.stride[1] : -1});
  }
  return c;
}

void run_chain(jit::KernelFn fn, const lower::ChainShape& c, const std::vector<ChainStage>& stages,
               const ChainPlan& plan) {
  using C = lower::ChainShape;
  const int S = static_cast<int>(stages.size());
  std::vector<char*> ptrs(static_cast<size_t>(c.num_ptrs()), nullptr);
  std::vector<int64_t> ip(static_cast<size_t>(c.num_ints()), 0);
  std::vector<double> fp(static_cast<size_t>(std::max(1, c.num_floats())), 0.0);
  ip[C::kRoot] = plan.stages.back().rows;
  ip[C::kThreads] = plan.threads;
  ip[C::kTileRows] = plan.tile_rows;
  ip[C::kStorage] = plan.storage;
  ip[C::kCols] = plan.cols;
  ip[C::kColTile] = plan.col_tile;
  ip[C::kScratch] = plan.scratch_bytes;
  int tile = 0;
  std::vector<int> tile_links;  // tile link -> plan link
  for (const ChainPlan::Link& l : plan.links) {
    if (!l.tile) continue;
    tile_links.push_back(static_cast<int>(&l - plan.links.data()));
    ip[c.link_slot(tile)] = l.scratch_at;
    ip[c.link_slot(tile) + 1] = l.slot_bytes;
    ip[c.link_slot(tile) + 2] = l.cap_rows;
    ip[c.link_slot(tile) + 3] = l.row_bytes;
    // (Allocated here, before the kernel runs: a failure leaves nothing half done.)
    if (l.copy) ptrs[c.copy_ptr(tile)] = static_cast<char*>(l.buffer->data());
    ++tile;
  }
  for (int s = 0; s < S; ++s) {
    const mdh::MdHom& h = *stages[s].hom;
    const mdh::Bindings& b = *stages[s].bind;
    const int ss = c.stage_slot(s);
    ip[ss] = plan.stages[s].rows;
    ip[ss + 1] = plan.stages[s].lo;
    ip[ss + 2] = plan.stages[s].hi;
    ip[ss + 3] = plan.stages[s].cols;
    ip[ss + 4] = plan.stages[s].clo;
    ip[ss + 5] = plan.stages[s].chi;
    for (size_t i = 0; i < h.accesses.size(); ++i) {
      const mdh::Access& a = h.accesses[i];
      const int link = c.stages[s].link[i];
      if (link == -1) {
        ptrs[c.ptr_of(s, static_cast<int>(i))] = static_cast<char*>(b.buffers[a.ptr]->data()) + b.offsets[a.ptr];
        ip[c.access_slot(s, static_cast<int>(i))] = stride_bytes(a, b, 0);
        ip[c.access_slot(s, static_cast<int>(i)) + 2] = h.ndim >= 2 ? stride_bytes(a, b, 1) : 0;
      } else if (link >= 0) {
        const int64_t off = b.offsets[a.ptr], R = plan.links[tile_links[link]].row_bytes;
        ip[c.access_slot(s, static_cast<int>(i))] = off / R;  // (off >= 0: plan_chain)
        ip[c.access_slot(s, static_cast<int>(i)) + 1] = off % R;
        ip[c.access_slot(s, static_cast<int>(i)) + 2] = h.ndim >= 2 ? stride_bytes(a, b, 1) : 0;
      }
    }
    std::copy(b.ints.begin(), b.ints.end(), ip.begin() + c.ints_at(s));
    std::copy(b.floats.begin(), b.floats.end(), fp.begin() + c.floats_at(s));
  }
  Arena& ar = arena();
  std::lock_guard<std::mutex> lock(ar.mu);
  ptrs[c.scratch_ptr()] = ar.get(static_cast<size_t>(plan.scratch_bytes * plan.threads));
  fn(ptrs.data(), ip.data(), fp.data());
}

}  // namespace nf::runtime

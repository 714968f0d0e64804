// The multi-stage kernel launcher (runtime.h, ChainPlan): halo/extent
// inference over the bound views, tile buffers, and the tile loop.
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
     << (rolling ? "halo rows kept from the previous tile (rolling buffers)" : "halo rows recomputed per tile")
     << ")\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    const Stage& st = stages[s];
    os << "  stage " << s + 1 << ": computed at each tile, rows [r0" << (st.lo < 0 ? " - " : " + ") << std::abs(st.lo)
       << ", r1" << (st.hi < 0 ? " - " : " + ") << std::abs(st.hi) << ") of its " << st.rows;
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
      write_off[it->second] = off;
    }
  }
  struct Read {
    int stage;
    int64_t k;
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
      reads[it->second].push_back({s, k});
    }
  }
  // Halo inference, last stage first: a producer computes every row its
  // consumers read for the tile.
  for (int s = S - 2; s >= 0; --s) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (int l = 0; l < L; ++l) {
      if (p.links[l].producer != s) continue;
      for (const Read& r : reads[l]) {
        lo = std::min(lo, p.stages[r.stage].lo + r.k);
        hi = std::max(hi, p.stages[r.stage].hi + r.k);
      }
    }
    if (lo > hi) lo = hi = 0;  // feeds no later stage: computes the tile's rows
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
  if (rows <= 0) {
    rows = per_row > 0 ? (opt.scratch_budget - halo_bytes) / per_row : root;
    rows = std::max<int64_t>({rows, 4 * max_span, 1});
  }
  rows = std::max<int64_t>(1, std::min(rows, (root + nt - 1) / nt));
  p.tile_rows = rows;
  p.threads = std::min(nt, (root + rows - 1) / rows);
  p.rolling = opt.rolling;
  int64_t at = 0;
  for (ChainPlan::Link& l : p.links) {
    if (!l.tile) continue;
    l.cap_rows = rows + p.stages[l.producer].hi - p.stages[l.producer].lo;
    l.scratch_at = at;
    at += round64(l.cap_rows * l.row_bytes);
  }
  p.scratch_bytes = at;
#ifndef NDEBUG
  // The verifier (debug builds): what the launch relies on, checked.
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
                    lk.scratch_at + lk.cap_rows * lk.row_bytes > p.scratch_bytes))
      broken("a tile buffer is too small or misplaced");
  }
  for (int s = 0; s < S; ++s)
    if (visible[s] && (p.stages[s].lo != 0 || p.stages[s].hi != 0)) broken("a stage writing memory has a halo");
  if (p.tile_rows < 1 || p.threads < 1 || p.stages.back().lo != 0 || p.stages.back().hi != 0)
    broken("no tiles, or the last stage has a halo");
#endif
  return p;
}

namespace {

struct AccessRun {
  char* base = nullptr;  // non-Tile: the first row's pointer
  int64_t row = 0;       // bytes per row
  int link = -1;         // Tile link index
  int64_t off = 0;       // Tile: byte offset of the view in the link's row frame
};

struct Launch {
  const std::vector<ChainStage>* stages;
  const ChainPlan* plan;
  std::vector<std::vector<AccessRun>> acc;  // per stage, per access
  std::vector<std::vector<int>> produces;   // per stage: its Tile links
  std::vector<std::vector<int>> copies;     // per stage: its Copy links
  std::vector<char*> copy_to;               // per link: a Copy link's buffer
  char* scratch = nullptr;
};

void run_stage(const Launch& L, int s, int64_t cs, int64_t B, char* mine, const std::vector<int64_t>& buf_lo,
               std::vector<int64_t>& ip, SmallVector<char*, 32>& ptrs);

void run_rows(void* ctx, int64_t tid, int64_t nt) {
  const Launch& L = *static_cast<const Launch*>(ctx);
  const ChainPlan& p = *L.plan;
  const int64_t nb = std::min(nt, p.threads);
  if (tid >= nb) return;
  const int64_t root = p.stages.back().rows;
  const int64_t first = root * tid / nb, last = root * (tid + 1) / nb;
  char* mine = L.scratch + tid * p.scratch_bytes;
  const int S = static_cast<int>(p.stages.size());
  std::vector<std::vector<int64_t>> ints(S);
  std::vector<SmallVector<char*, 32>> ptrs(S);
  for (int s = 0; s < S; ++s) {
    ints[s] = (*L.stages)[s].bind->ints;
    ptrs[s].resize((*L.stages)[s].hom->accesses.size(), nullptr);
  }
  std::vector<int64_t> buf_lo(p.links.size(), 0);
  std::vector<int64_t> done_lo(S, 0), done_hi(S, -1);  // rows the previous tile computed
  for (int64_t r0 = first; r0 < last; r0 += p.tile_rows) {
    const int64_t r1 = std::min(r0 + p.tile_rows, last);
    for (int s = 0; s < S; ++s) {
      const ChainPlan::Stage& st = p.stages[s];
      const int64_t A = std::max<int64_t>(0, r0 + st.lo), B = std::min(st.rows, r1 + st.hi);
      if (A >= B) continue;
      int64_t cs = A;
      if (p.rolling && done_hi[s] >= A && A >= done_lo[s]) {
        const int64_t keep = done_hi[s] - A;
        for (int l : L.produces[s]) {
          const ChainPlan::Link& lk = p.links[l];
          char* buf = mine + lk.scratch_at;
          if (keep > 0) std::memmove(buf, buf + (A - buf_lo[l]) * lk.row_bytes, keep * lk.row_bytes);
          buf_lo[l] = A;
        }
        cs = done_hi[s];
      } else {
        for (int l : L.produces[s]) buf_lo[l] = A;
      }
      done_lo[s] = A;
      done_hi[s] = B;
      if (cs < B) run_stage(L, s, cs, B, mine, buf_lo, ints[s], ptrs[s]);
      // Copy links: the rows this tile owns, into the buffer.
      for (int l : L.copies[s]) {
        const ChainPlan::Link& lk = p.links[l];
        const int64_t o_lo = r0 == 0 ? 0 : std::clamp(r0 + st.lo, int64_t(0), st.rows);
        const int64_t o_hi = r1 == root ? st.rows : std::clamp(r1 + st.lo, int64_t(0), st.rows);
        if (o_hi > o_lo)
          std::memcpy(L.copy_to[l] + o_lo * lk.row_bytes, mine + lk.scratch_at + (o_lo - buf_lo[l]) * lk.row_bytes,
                      (o_hi - o_lo) * lk.row_bytes);
      }
    }
  }
}

// Stage s computes rows [cs, B) of its outer dimension (`ip`, `ptrs`: the
// thread's copies of its parameters and pointers).
void run_stage(const Launch& L, int s, int64_t cs, int64_t B, char* mine, const std::vector<int64_t>& buf_lo,
               std::vector<int64_t>& ip, SmallVector<char*, 32>& ptrs) {
  const ChainPlan& p = *L.plan;
  const ChainStage& stage = (*L.stages)[s];
  const mdh::MdHom& h = *stage.hom;
  const std::vector<int64_t>& orig = stage.bind->ints;
  ip[h.extent[0]] = B - cs;
  for (const mdh::Affine& f : h.indices) ip[f.offset] = orig[f.offset] + cs * orig[f.stride[0]];
  const std::vector<AccessRun>& ar = L.acc[s];
  for (size_t i = 0; i < ar.size(); ++i) {
    const AccessRun& a = ar[i];
    if (a.link >= 0) {
      const ChainPlan::Link& lk = p.links[a.link];
      ptrs[i] = mine + lk.scratch_at + a.off + (cs - buf_lo[a.link]) * lk.row_bytes;
    } else if (a.base) {
      ptrs[i] = a.base + cs * a.row;
    }
  }
  stage.fn(ptrs.data(), ip.data(), stage.bind->floats.data());
}

}  // namespace

void run_chain(const std::vector<ChainStage>& stages, const ChainPlan& plan) {
  Launch L;
  L.stages = &stages;
  L.plan = &plan;
  std::unordered_map<const Buffer*, int> link_of;
  for (size_t l = 0; l < plan.links.size(); ++l)
    if (plan.links[l].tile) link_of[plan.links[l].buffer] = static_cast<int>(l);
  const int S = static_cast<int>(stages.size());
  L.acc.resize(S);
  L.produces.resize(S);
  L.copies.resize(S);
  L.copy_to.assign(plan.links.size(), nullptr);
  for (size_t l = 0; l < plan.links.size(); ++l) {
    const ChainPlan::Link& lk = plan.links[l];
    if (lk.tile) L.produces[lk.producer].push_back(static_cast<int>(l));
    if (lk.copy) {
      L.copies[lk.producer].push_back(static_cast<int>(l));
      L.copy_to[l] = static_cast<char*>(lk.buffer->data());  // (allocated before any stage runs)
    }
  }
  for (int s = 0; s < S; ++s) {
    const mdh::MdHom& h = *stages[s].hom;
    const mdh::Bindings& b = *stages[s].bind;
    for (const mdh::Access& a : h.accesses) {
      AccessRun r;
      if (touches(a)) {
        auto it = link_of.find(b.buffers[a.ptr]);
        if (it != link_of.end()) {
          r.link = it->second;
          r.off = b.offsets[a.ptr];
        } else {
          // (Allocated here, before any stage runs: a failure leaves nothing half done.)
          r.base = static_cast<char*>(b.buffers[a.ptr]->data()) + b.offsets[a.ptr];
          r.row = stride_bytes(a, b, 0);
        }
      }
      L.acc[s].push_back(r);
    }
  }
  Arena& ar = arena();
  std::lock_guard<std::mutex> lock(ar.mu);
  L.scratch = ar.get(static_cast<size_t>(plan.scratch_bytes * plan.threads));
  if (plan.threads <= 1) run_rows(&L, 0, 1);
  else jit::nf_parallel(run_rows, &L);

}

}  // namespace nf::runtime

// The schedule space (MDH Table 1 for the CPU model): random legal
// schedules and local moves between them, for the auto-tuner and for the
// property tests that check every legal schedule computes the same result.
//
// Everything here builds schedules legal by construction; repair() drops
// what a move made illegal (a cache whose packing lost its tile loop, an
// unroll whose loop grew too long) rather than rejecting the move.
#include <algorithm>
#include <cmath>

#include "tune/tune.h"

namespace nf::tune {

namespace {

using Rng = std::mt19937_64;

bool coin(Rng& r, double p) { return std::uniform_real_distribution<double>(0, 1)(r) < p; }
int pick(Rng& r, int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(r)); }

std::vector<int> used_dims(const mdh::MdHom& h, int access) {
  std::vector<int> d;
  for (int k = 0; k < h.ndim; ++k)
    if (h.accesses[access].kind[k] != mdh::StrideKind::Zero) d.push_back(k);
  return d;
}

bool cacheable_input(const mdh::Access& a) { return a.read && !a.written && !a.reduced; }

const mdh::Output* reduction_of(const mdh::MdHom& h, int access) {
  for (const mdh::Output& o : h.outputs)
    if (o.access == access && o.reduces && o.op != ReduceOp::ArgMax && o.op != ReduceOp::ArgMin) return &o;
  return nullptr;
}

// Tile sizes worth trying for an extent: powers of two, and 3 * 2^k (SIMD
// and register friendly), below the extent (a tile of the whole extent is
// the same as no tile).
std::vector<int64_t> tile_candidates(int64_t extent) {
  std::vector<int64_t> c;
  for (int64_t t = 2; t < extent && t <= 4096; t *= 2) {
    c.push_back(t);
    if (3 * t / 2 < extent && t >= 4) c.push_back(3 * t / 2);
  }
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

// Loops per dimension, outer to inner: a random interleaving that keeps each
// dimension's levels in order.
std::vector<LoopSpec> random_order(const Schedule& s, int ndim, Rng& r) {
  std::vector<int> bag;
  for (int d = 0; d < ndim; ++d)
    for (int l = 0; l < s.levels(d); ++l) bag.push_back(d);
  std::shuffle(bag.begin(), bag.end(), r);
  std::vector<int> next(ndim, 0);
  std::vector<LoopSpec> order;
  for (int d : bag) order.push_back({d, next[d]++});
  return order;
}

// The dimension most accesses run along with unit stride (-1: none).
int unit_dim(const mdh::MdHom& h) {
  std::vector<int> votes(h.ndim, 0);
  for (const mdh::Access& a : h.accesses)
    for (int d = 0; d < h.ndim; ++d) votes[d] += a.kind[d] == mdh::StrideKind::Unit;
  int best = -1;
  for (int d = 0; d < h.ndim; ++d)
    if (votes[d] > 0 && (best < 0 || votes[d] > votes[best])) best = d;
  return best;
}

// Moves dimension d's point loop innermost (its other levels stay in place).
void point_innermost(Schedule& s, int d) {
  const int last = s.levels(d) - 1;
  auto it = std::find(s.order.begin(), s.order.end(), LoopSpec{d, last});
  if (it == s.order.end()) return;
  s.order.erase(it);
  s.order.push_back({d, last});
}

// Elements a cache of `access` placed at `pos` holds (-1 if some dimension
// is covered whole, i.e. the tile has the full extent).
int64_t cache_elems(const Schedule& s, const mdh::MdHom& h, const mdh::Bindings& b, int access, int pos,
                    bool* whole) {
  int64_t n = 1;
  *whole = false;
  for (int d : used_dims(h, access)) {
    int level = -1;
    for (int q = 0; q <= pos; ++q)
      if (s.order[q].dim == d) level = s.order[q].level;
    if (level < 0) {
      *whole = true;
      n *= b.extent(h, d);
    } else {
      n *= level < static_cast<int>(s.tiles[d].size()) ? s.tiles[d][level] : 1;
    }
  }
  return n;
}

// A cache for `access` at a random position whose footprint fits the
// budget, with a random layout and packing; false if none fits.
bool random_cache(const Schedule& s, const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, int access,
                  bool output, Rng& r, Cache* out) {
  const int nloops = static_cast<int>(s.order.size());
  const int64_t item = itemsize(h.accesses[access].dtype);
  for (int attempt = 0; attempt < 4; ++attempt) {
    const int lo = output && s.parallel ? 0 : -1;
    if (nloops - lo <= 0) return false;
    const int pos = lo + pick(r, nloops - lo);
    bool whole = false;
    const int64_t n = cache_elems(s, h, b, access, pos, &whole);
    // Local tiles live on the stack: keep them within L2; whole-extent
    // copies go to the heap and are bounded more loosely.
    if (n * item > (whole ? int64_t(16) << 20 : target.l2_bytes)) continue;
    Cache c;
    c.access = access;
    c.pos = pos;
    c.layout = used_dims(h, access);
    std::shuffle(c.layout.begin(), c.layout.end(), r);
    for (int d : c.layout) {
      int below = 0;
      for (int q = 0; q <= pos; ++q) below += s.order[q].dim == d;
      if (below < static_cast<int>(s.tiles[d].size()) && coin(r, 0.35)) c.pack.push_back(d);
    }
    *out = c;
    return true;
  }
  return false;
}

// Shifts positions held in caches/unroll when a loop is inserted at `pos`
// (delta = +1) or removed from it (delta = -1).
void shift_positions(Schedule& s, int pos, int delta) {
  for (Cache& c : s.caches)
    if (c.pos >= pos) c.pos += delta;
  for (int& u : s.unroll)
    if (u >= pos) u += delta;
}

}  // namespace

// Drops the caches and unrolled loops that make s illegal; returns false if
// s is still illegal afterwards.
bool repair(Schedule& s, const mdh::MdHom& h) {
  std::string why = s.why_illegal(h);
  if (why.empty()) return true;
  for (int attempt = 0; attempt < 64 && !why.empty(); ++attempt) {
    bool changed = false;
    // Try removing one unroll, then one cache, keeping the first that helps.
    for (size_t k = 0; k < s.unroll.size() && !changed; ++k) {
      Schedule t = s;
      t.unroll.erase(t.unroll.begin() + k);
      if (t.why_illegal(h) != why) s = t, changed = true;
    }
    for (size_t k = 0; k < s.caches.size() && !changed; ++k) {
      Schedule t = s;
      if (!t.caches[k].pack.empty()) t.caches[k].pack.clear();
      else t.caches.erase(t.caches.begin() + k);
      if (t.why_illegal(h) != why) s = t, changed = true;
    }
    if (!changed && s.contract) s.contract = false, changed = true;
    if (!changed && s.grid) s.grid = 0, changed = true;
    if (!changed && s.parallel) s.parallel = false, changed = true;
    if (!changed) return false;
    why = s.why_illegal(h);
  }
  return why.empty();
}

Schedule grid_schedule(const mdh::MdHom& h, const Schedule& chosen) {
  // The chosen loops as they are, for the device: parallel whatever the
  // work, no tile buffers, unrolls or lanes.
  auto plain = [&chosen] {
    Schedule p = chosen;
    p.caches.clear();
    p.unroll.clear();
    p.vectorize = false;
    p.wide = false;
    p.parallel = true;
    p.parallel_min_work = 0;
    p.grid = 0;
    return p;
  };
  Schedule s = plain();
  auto combined = [&h](int d) { return h.any_pointwise(d) || h.is_scan(d); };
  // The free dimensions, by the position of their point loop in the chosen order.
  std::vector<std::pair<int, int>> free;  // (position, dim)
  for (int q = 0; q < static_cast<int>(s.order.size()); ++q) {
    const LoopSpec& l = s.order[q];
    if (!combined(l.dim) && l.level + 1 == s.levels(l.dim)) free.push_back({q, l.dim});
  }
  if (!free.empty()) {
    std::vector<LoopSpec> order;
    for (const auto& [q, d] : free) {
      s.tiles[d].clear();
      order.push_back({d, 0});
    }
    bool any_combined = false;
    for (const LoopSpec& l : chosen.order)
      if (combined(l.dim)) {
        order.push_back(l);
        any_combined = true;
      }
    // Where the chosen innermost loop is free, it stays innermost as a
    // loop of one point (tiles of one): a combined loop then runs outside
    // it, in order, as NumPy adds the rows of x.sum(axis=0) -- a combined
    // loop innermost is summed pairwise (passes.h: build).
    const int last = chosen.order.empty() ? -1 : chosen.order.back().dim;
    if (any_combined && last >= 0 && !combined(last)) {
      s.tiles[last] = {1};
      order.push_back({last, 1});
    }
    s.order = std::move(order);
    s.grid = static_cast<int>(free.size());
    if (s.why_illegal(h).empty()) return s;
    s = plain();
  }
  if (s.why_illegal(h).empty()) return s;
  s.parallel = false;
  if (s.why_illegal(h).empty()) return s;
  return chosen;
}

bool block_tiles_pay(const mdh::MdHom& h, const Schedule& s, const mdh::Bindings& b) {
  if (s.grid < 2 || s.routine != Routine::None) return false;
  const int di = s.order[s.grid - 2].dim, dj = s.order[s.grid - 1].dim;
  // One combined dimension k (gpu_tiles' loop over k), no scan.
  int dk = -1;
  for (int d = 0; d < h.ndim; ++d) {
    if (h.is_scan(d)) return false;
    if (!h.any_pointwise(d)) continue;
    if (dk >= 0) return false;
    dk = d;
  }
  if (dk < 0) return false;
  // Some input read along k and one of i, j; none along k and both (a tile
  // shared by a row or a column of the block's threads).
  auto along = [](const mdh::Access& a, int d) { return a.kind[d] != mdh::StrideKind::Zero; };
  bool shared = false;
  for (const mdh::Access& a : h.accesses) {
    if (!a.read || !along(a, dk)) continue;
    if (along(a, di) && along(a, dj)) return false;
    shared |= along(a, di) != along(a, dj);
  }
  const int64_t ni = b.extent(h, di), nj = b.extent(h, dj), k = b.extent(h, dk);
  return shared && ni >= 16 && nj >= 16 && k >= 1 && k <= 16 * std::max(ni, nj);
}

Schedule random_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, uint64_t seed,
                         bool routines) {
  if (target.gpu()) return gpu_random_schedule(h, b, target, seed);
  Rng r(seed);
  Schedule s;
  if (routines && blas_compatible(h) && coin(r, 0.2)) {
    s.routine = Routine::Blas;
    return s;
  }
  s.tiles.assign(h.ndim, {});
  for (int d = 0; d < h.ndim; ++d) {
    std::vector<int64_t> cand = tile_candidates(b.extent(h, d));
    const double u = std::uniform_real_distribution<double>(0, 1)(r);
    const int levels = cand.empty() ? 0 : u < 0.35 ? 0 : u < 0.8 ? 1 : 2;
    std::vector<int64_t> t;
    for (int l = 0; l < levels && !cand.empty(); ++l) {
      const int64_t size = cand[pick(r, static_cast<int>(cand.size()))];
      t.push_back(size);
      cand.erase(std::remove_if(cand.begin(), cand.end(), [&](int64_t c) { return c >= size; }), cand.end());
    }
    s.tiles[d] = t;
  }
  s.order = random_order(s, h.ndim, r);
  const int ud = unit_dim(h);
  if (ud >= 0 && coin(r, 0.6)) point_innermost(s, ud);
  s.parallel = target.cores > 1 && !s.order.empty() && coin(r, 0.6);
  s.parallel_min_work = coin(r, 0.5) ? 0 : int64_t(1) << 15;
  s.vectorize = h.ndim > 0 && coin(r, 0.8);
  s.wide = s.vectorize && target.wide_simd_bytes > 32 && coin(r, 0.5);
  for (size_t a = 0; a < h.accesses.size(); ++a) {
    const bool in = cacheable_input(h.accesses[a]);
    const bool out = reduction_of(h, static_cast<int>(a)) != nullptr;
    if (!(in || out) || used_dims(h, static_cast<int>(a)).empty() || !coin(r, 0.3)) continue;
    Cache c;
    if (random_cache(s, h, b, target, static_cast<int>(a), out, r, &c)) s.caches.push_back(c);
  }
  for (int p = 0; p < static_cast<int>(s.order.size()); ++p) {
    const LoopSpec& l = s.order[p];
    if (l.level == 0 || (p == 0 && s.parallel)) continue;
    const int64_t step = l.level < static_cast<int>(s.tiles[l.dim].size()) ? s.tiles[l.dim][l.level] : 1;
    if (s.tiles[l.dim][l.level - 1] / step <= 16 && coin(r, 0.3)) s.unroll.push_back(p);
  }
  bool all_reduce = !h.outputs.empty();
  for (const mdh::Output& o : h.outputs) all_reduce &= o.reduces;
  s.contract = all_reduce && coin(r, 0.5);
  if (!repair(s, h)) return default_schedule(h, b, target, routines);
  if (s.parallel && coin(r, 0.25)) {
    // Grid loops: the leading loops over whole free dimensions or their
    // tiles as they are, else the GPU's form of this schedule.
    Schedule g = s;
    while (g.grid < static_cast<int>(g.order.size()) && g.order[g.grid].level == 0 &&
           !h.any_pointwise(g.order[g.grid].dim) && !h.is_scan(g.order[g.grid].dim))
      ++g.grid;
    if (g.grid == 0 || !g.why_illegal(h).empty()) g = grid_schedule(h, s);
    if (g.grid > 0) s = g;
  }
  return s;
}

Schedule mutate(const Schedule& from, const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target,
                uint64_t seed, bool routines) {
  if (target.gpu()) return gpu_mutate(from, h, b, target, seed);
  Rng r(seed);
  if (from.routine != Routine::None || h.ndim == 0) return random_schedule(h, b, target, r(), routines);
  for (int attempt = 0; attempt < 16; ++attempt) {
    Schedule s = from;
    const int nloops = static_cast<int>(s.order.size());
    switch (pick(r, 9)) {
      case 0: {  // resize one tile (keeping sizes decreasing)
        const int d = pick(r, h.ndim);
        if (s.tiles[d].empty()) break;
        const int l = pick(r, static_cast<int>(s.tiles[d].size()));
        const int64_t v = s.tiles[d][l];
        s.tiles[d][l] = coin(r, 0.5) ? v * 2 : std::max<int64_t>(1, v / 2);
        if (coin(r, 0.25)) s.tiles[d][l] = v + (coin(r, 0.5) ? 1 : -1) * std::max<int64_t>(1, v / 4);
        break;
      }
      case 1: {  // add a tile level inside the innermost one
        const int d = pick(r, h.ndim);
        const int64_t parent = s.tiles[d].empty() ? b.extent(h, d) : s.tiles[d].back();
        std::vector<int64_t> cand = tile_candidates(parent);
        if (cand.empty()) break;
        const int old_point = s.levels(d) - 1;
        s.tiles[d].push_back(cand[pick(r, static_cast<int>(cand.size()))]);
        // The old point loop becomes the new tile loop; the new point loop
        // goes somewhere after it.
        int at = static_cast<int>(std::find(s.order.begin(), s.order.end(), LoopSpec{d, old_point}) - s.order.begin());
        const int pos = at + 1 + pick(r, nloops - at);
        s.order.insert(s.order.begin() + pos, LoopSpec{d, old_point + 1});
        shift_positions(s, pos, +1);
        break;
      }
      case 2: {  // drop a dimension's innermost tile level
        const int d = pick(r, h.ndim);
        if (s.tiles[d].empty()) break;
        const int point = s.levels(d) - 1;
        const int pos =
            static_cast<int>(std::find(s.order.begin(), s.order.end(), LoopSpec{d, point}) - s.order.begin());
        s.order.erase(s.order.begin() + pos);
        s.tiles[d].pop_back();
        for (size_t k = 0; k < s.caches.size();)
          if (s.caches[k].pos == pos) s.caches.erase(s.caches.begin() + k);
          else ++k;
        s.unroll.erase(std::remove(s.unroll.begin(), s.unroll.end(), pos), s.unroll.end());
        shift_positions(s, pos + 1, -1);
        break;
      }
      case 3: {  // swap two adjacent loops of different dimensions
        if (nloops < 2) break;
        const int p = pick(r, nloops - 1);
        if (s.order[p].dim == s.order[p + 1].dim) break;
        std::swap(s.order[p], s.order[p + 1]);
        for (int& u : s.unroll) u = u == p ? p + 1 : u == p + 1 ? p : u;
        break;
      }
      case 4:
        s.parallel = !s.parallel && target.cores > 1;
        if (s.parallel) s.unroll.erase(std::remove(s.unroll.begin(), s.unroll.end(), 0), s.unroll.end());
        break;
      case 5:
        s.vectorize = !s.vectorize;
        if (target.wide_simd_bytes > 32 && s.vectorize) s.wide = !s.wide;
        break;
      case 6: {  // add, move or drop a cache
        std::vector<int> cand;
        for (size_t a = 0; a < h.accesses.size(); ++a)
          if ((cacheable_input(h.accesses[a]) || reduction_of(h, static_cast<int>(a))) &&
              !used_dims(h, static_cast<int>(a)).empty())
            cand.push_back(static_cast<int>(a));
        if (cand.empty()) break;
        const int a = cand[pick(r, static_cast<int>(cand.size()))];
        auto it = std::find_if(s.caches.begin(), s.caches.end(), [&](const Cache& c) { return c.access == a; });
        if (it != s.caches.end() && coin(r, 0.4)) {
          s.caches.erase(it);
          break;
        }
        Cache c;
        if (!random_cache(s, h, b, target, a, reduction_of(h, a) != nullptr, r, &c)) break;
        if (it != s.caches.end()) *it = c;
        else s.caches.push_back(c);
        break;
      }
      case 7: {  // toggle an unroll
        const int p = pick(r, std::max(nloops, 1));
        auto it = std::find(s.unroll.begin(), s.unroll.end(), p);
        if (it != s.unroll.end()) s.unroll.erase(it);
        else s.unroll.push_back(p);
        break;
      }
      case 8:
        s.contract = !s.contract;
        if (coin(r, 0.5) && s.parallel) s.parallel_min_work = s.parallel_min_work ? 0 : int64_t(1) << 15;
        break;
    }
    // Sizes must stay decreasing and positive.
    bool ok = true;
    for (int d = 0; d < h.ndim; ++d)
      for (size_t l = 0; l < s.tiles[d].size(); ++l)
        ok &= s.tiles[d][l] > 0 && (l == 0 || s.tiles[d][l] < s.tiles[d][l - 1]);
    if (!ok || !repair(s, h) || s.key() == from.key()) continue;
    // Nothing the store would refuse for these sizes (a doubled tile past
    // the size class): a tuned schedule must be storable.
    if (!s.why_unsafe(h, b, target).empty()) continue;
    return s;
  }
  return random_schedule(h, b, target, r(), routines);
}

}  // namespace nf::tune

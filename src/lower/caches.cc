// Local tile buffers (MDH memory regions and layouts, D3/D4, R3/R4).
//
// Invariant: a cache placed in the body of loop q covers exactly the part of
// its access that the loops below q can touch: for each of the access's
// dimensions, the tile of the innermost loop of that dimension at or above q
// (or the whole extent), clipped to the extent. It is requested (a TileIn)
// before the loops below q, and the tile_buffers pass makes it: an input's
// tile is copied in there and read instead of memory (nothing below q
// writes the input: fusion never caches a read-write access, so the copy is
// exact); an output's tile starts at the identity, takes every combine below
// q (build writes them as memory combines, marked), and is combined into
// the output's memory accumulator once when q's body ends.
#include <algorithm>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower::detail {

// Tile buffers live on the stack (fixed size, no allocation) up to this many
// bytes in all; larger ones are malloc'd where they open. OpenMP worker
// threads have 4 MiB stacks by default, and a schedule may place several
// tiles (packed panels, register tiles) in one loop nest. (The storage pass
// applies the target's budget, Caps::private_bytes; here, the CPU's -- a
// GPU's schedules have no tile buffers -- decides only whether a tile may
// take the full-tile path's literal bounds.)
constexpr int64_t kStackTileBytes = Caps{}.private_bytes;

void Lowerer::plan_caches() {
  int64_t stack_bytes = 0;
  for (const tune::Cache& c : s_.caches) {
    CachePlan p;
    p.access = c.access;
    p.pos = c.pos;
    p.layout = c.layout;
    p.output = !h_.accesses[c.access].read;
    p.name = "tile" + std::to_string(c.access);
    p.ptr = ptr(c.access);
    p.point = point_vars();
    const mdh::Access& acc = h_.accesses[c.access];
    for (int d = 0; d < h_.ndim; ++d) {
      p.kind.push_back(acc.kind[d]);
      p.stride.push_back(acc.kind[d] == mdh::StrideKind::Param ? int_param(acc.stride[d]) : nullptr);
    }
    for (int d : c.layout) {
      int found = -1, below = 0;
      for (int q = 0; q <= c.pos; ++q)
        if (s_.order[q].dim == d) found = q, ++below;
      int64_t size = 0;
      if (found >= 0) {
        const tune::LoopSpec& l = s_.order[found];
        size = l.level < static_cast<int>(s_.tiles[d].size()) ? s_.tiles[d][l.level] : 1;
        p.base.push_back(var(loop_var(l)));
        p.size.push_back(lit(size));
        p.end.push_back(end_of(d, l.level));
      } else {
        p.base.push_back(lit(0));
        p.size.push_back(extent(d));
        p.end.push_back(extent(d));
        p.heap = true;
      }
      // A packed dimension is blocked by the step of its first loop below
      // the cache (level `below`; legality guarantees it is a tile loop).
      const bool packed = std::find(c.pack.begin(), c.pack.end(), d) != c.pack.end();
      const int64_t b = packed ? s_.tiles[d][below] : 0;
      p.block.push_back(b);
      p.block_loop.push_back(packed ? loop_var({d, below}) : "");
      if (!p.heap) p.count *= b ? (size + b - 1) / b * b : size;
    }
    for (int d : c.pack)
      for (size_t k = 0; k < c.layout.size(); ++k)
        if (c.layout[k] == d) p.outer.push_back(static_cast<int>(k));
    p.dtype = p.output ? h_.outputs[plan_of_access(c.access)].acc_dtype : h_.accesses[c.access].dtype;
    if (!p.heap) {
      const int64_t bytes = p.count * itemsize(p.dtype);
      if (stack_bytes + bytes > kStackTileBytes) p.heap = true;
      else stack_bytes += bytes;
    }
    caches_.push_back(p);
  }
}

// Position of a point in the tile, inside every loop: mixed radix over the
// block numbers of packed entries (outermost; a block is the packing loop's
// variable, so no division), then every entry's offset (a packed entry's
// offset inside its block).
ExP tile_index(const TileSpec& c, const std::vector<ExP>& idx) {
  ExP e = lit(0);
  for (int k : c.outer) {
    const ExP b = lit(c.block[k]);
    const ExP blocks = arith('/', add(c.size[k], lit(c.block[k] - 1)), b);
    e = add(mul(e, blocks), arith('/', sub(var(c.block_loop[k]), c.base[k]), b));
  }
  for (size_t k = 0; k < c.layout.size(); ++k) {
    const ExP x = idx[c.layout[k]];
    if (!c.block[k]) e = add(mul(e, c.size[k]), sub(x, c.base[k]));
    else e = add(mul(e, lit(c.block[k])), sub(x, var(c.block_loop[k])));
  }
  return e;
}

ExP tile_count(const TileSpec& c) {
  ExP count = lit(1);
  for (size_t k = 0; k < c.layout.size(); ++k)
    count = mul(count, c.block[k] ? mul(arith('/', add(c.size[k], lit(c.block[k] - 1)), lit(c.block[k])),
                                        lit(c.block[k]))
                                  : c.size[k]);
  return count;
}

ExP memory_index(const TileSpec& c, const std::vector<ExP>& idx) {
  ExP e = lit(0);
  for (size_t d = 0; d < c.kind.size(); ++d) {
    if (c.kind[d] == mdh::StrideKind::Zero) continue;
    ExP term = idx[d];
    if (c.kind[d] == mdh::StrideKind::Param) term = mul(term, c.stride[d]);
    e = add(e, term);
  }
  return e;
}

// Nested loops over the tile (lowerer.h: Clip). Small whole
// tiles are unrolled (so a register tile stays in registers), else the
// innermost loop is simd. A packed entry gets a loop over its blocks
// (outermost, in packing order) and one inside the block, so both the tile
// and memory indices stay affine. The other loops run in layout order except
// that the memory side's unit-stride dimension goes innermost, so copies
// stream through memory. Fills w.off (offset from the tile's base, per
// layout entry) and w.index (position in the tile); returns the innermost body.
std::vector<StmtP>* tile_loops(std::vector<StmtP>& out, const TileSpec& c, Clip clip, TileWalk& w) {
  std::vector<StmtP>* cur = &out;
  StmtP outer = block();
  cur->push_back(outer);
  cur = &outer->body;
  // Whole on some path, and small: unrolled there.
  const bool unroll = clip != Clip::Yes && !c.heap && c.count <= 256;
  const size_t n = c.layout.size();
  // A bound: `whole` where the tile is whole, `clipped` where it is clipped.
  auto bound = [&](ExP whole, ExP clipped) {
    return clip == Clip::No ? whole : clip == Clip::Yes ? clipped : tile_bound(whole, clipped);
  };
  std::vector<ExP> ext(n);
  for (size_t k = 0; k < n; ++k) ext[k] = bound(c.size[k], min(c.size[k], sub(c.end[k], c.base[k])));
  auto open = [&](const std::string& v, ExP hi, bool innermost) {
    StmtP f = for_loop(v, lit(0), hi, lit(1));
    const LoopKind general = innermost ? LoopKind::Vectorized : LoopKind::Serial;
    if (unroll && clip == Clip::No) {
      f->loop = LoopKind::Unrolled;
    } else {
      f->loop = general;
      if (unroll) {
        f->unroll = true;
        f->full_kind = LoopKind::Unrolled;
      }
    }
    cur->push_back(f);
    cur = &f->body;
    return var(v);
  };
  std::vector<ExP> blk(n);
  for (int k : c.outer) {
    const ExP b = lit(c.block[k]);
    blk[k] = open("b" + c.name + "_" + std::to_string(k), arith('/', add(ext[k], lit(c.block[k] - 1)), b), false);
  }
  std::vector<size_t> order;
  for (size_t k = 0; k < n; ++k)
    if (c.kind[c.layout[k]] != mdh::StrideKind::Unit) order.push_back(k);
  for (size_t k = 0; k < n; ++k)
    if (c.kind[c.layout[k]] == mdh::StrideKind::Unit) order.push_back(k);
  std::vector<ExP> in(n);
  w.off.assign(n, nullptr);
  for (size_t j = 0; j < n; ++j) {
    const size_t k = order[j];
    const std::string v = "z" + c.name + "_" + std::to_string(k);
    if (c.block[k]) {
      const ExP b = lit(c.block[k]);
      const ExP first = mul(blk[k], b);
      // A full block unless it is the (clipped or partial) last one.
      const bool whole = clip != Clip::Yes && c.size[k]->k == Ex::K::IntLit && c.size[k]->ival % c.block[k] == 0;
      in[k] = open(v, whole ? bound(b, min(b, sub(ext[k], first))) : min(b, sub(ext[k], first)), j + 1 == n);
      w.off[k] = add(first, in[k]);
    } else {
      in[k] = open(v, ext[k], j + 1 == n);
      w.off[k] = in[k];
    }
  }
  ExP e = lit(0);
  for (int k : c.outer)
    e = add(mul(e, arith('/', add(c.size[k], lit(c.block[k] - 1)), lit(c.block[k]))), blk[k]);
  for (size_t k = 0; k < n; ++k) e = add(mul(e, c.block[k] ? lit(c.block[k]) : c.size[k]), in[k]);
  w.index = e;
  return cur;
}

// On the full-tile path (`split`: the tile opens in the FullSplit), a tile
// whose dims are all covered by tiles of unrolled loops' parents lies
// entirely inside the extents.
bool Lowerer::tile_is_full(const CachePlan& c, bool split) const {
  if (!split || c.heap) return false;
  for (int d : c.layout) {
    bool covered = false;
    for (int p : s_.unroll) {
      const tune::LoopSpec& l = s_.order[p];
      if (l.dim != d) continue;
      // The unrolled loop's parent tile is the cache's tile for d when the
      // parent is the innermost loop of d enclosing the cache.
      int parent = -1;
      for (int q = 0; q < static_cast<int>(s_.order.size()); ++q)
        if (s_.order[q].dim == d && s_.order[q].level == l.level - 1) parent = q;
      int innermost = -1;
      for (int q = 0; q <= c.pos; ++q)
        if (s_.order[q].dim == d) innermost = q;
      if (parent == innermost) covered = true;
    }
    if (!covered) return false;
  }
  return true;
}

// Each tile living in this body: a request, for the statements after it.
void Lowerer::open_caches(std::vector<StmtP>& out, int i, bool split) {
  for (const CachePlan& c : caches_) {
    if (c.pos != i - 1) continue;
    // (The storage pass gives the heap to a count known only at run time or
    // too large for the stack.)
    StmtP req = block();
    req->k = Stmt::K::TileIn;
    auto spec = std::make_shared<TileSpec>(c);
    spec->full_split = tile_is_full(c, split);
    // An output's tile accumulates the combines into its memory target.
    if (c.output) spec->ptr = memory_target(plan_of(plan_of_access(c.access)), point_vars()).first->name;
    req->tile = std::move(spec);
    out.push_back(req);
  }
}

int Lowerer::plan_of_access(int access) const {
  for (size_t oi = 0; oi < h_.outputs.size(); ++oi)
    if (h_.outputs[oi].access == access && h_.outputs[oi].reduces) return static_cast<int>(oi);
  return -1;
}

}  // namespace nf::lower::detail

// The loop nest and the point body.
//
// Invariant (correct by construction, MDH section 4): the loops enumerate
// every point of the domain exactly once, whatever the tile sizes, loop order
// or parallel loop, because each level's loop covers its parent tile clipped
// to the extent. Below the split point of unrolled loops the nest is one
// FullSplit whose bounds say what they are on the full-tile path (where the
// unrolled loops' trip counts are the literal tile sizes, taken only when
// every unrolled loop's tile lies inside the extent) and on the clipped
// remainder path; the unroll pass (unroll.cc) makes the two copies, and both
// enumerate the same points.
#include <algorithm>
#include <stdexcept>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace detail {

bool Lowerer::unrolled(int pos) const {
  return std::find(s_.unroll.begin(), s_.unroll.end(), pos) != s_.unroll.end();
}

std::vector<ExP> Lowerer::point_vars() const {
  std::vector<ExP> v;
  for (int d = 0; d < h_.ndim; ++d) v.push_back(var(point(d)));
  return v;
}

ExP Lowerer::dense_size(const std::vector<int>& dims) const {
  ExP n = lit(1);
  for (int d : dims) n = mul(n, extent(d));
  return n;
}

ExP Lowerer::dense_index(const std::vector<int>& dims, const std::vector<ExP>& idx) const {
  ExP e = lit(0);
  for (size_t k = 0; k < dims.size(); ++k) e = add(mul(e, extent(dims[k])), idx[k]);
  return e;
}

ExP Lowerer::access_index(int a, const std::vector<ExP>& idx) const {
  const mdh::Access& acc = h_.accesses[a];
  ExP e = lit(0);
  for (int d = 0; d < h_.ndim; ++d) {
    if (acc.kind[d] == mdh::StrideKind::Zero) continue;
    ExP term = idx[d];
    if (acc.kind[d] == mdh::StrideKind::Param) term = mul(term, int_param(acc.stride[d]));
    e = add(e, term);
  }
  return e;
}

ExP Lowerer::const_value(int k) const {
  DType ct = h_.const_type[k];
  return is_inexact(ct) ? float_param(h_.const_slot[k], ct) : int_param(h_.const_slot[k], ct);
}

ExP Lowerer::end_of(int d, int level) const {
  if (level == 0) return extent(d);
  return min(add(var("i" + std::to_string(d) + "_" + std::to_string(level - 1)), lit(s_.tiles[d][level - 1])),
             end_of(d, level - 1));
}

// Every unrolled loop's parent tile lies inside the parent's own range.
ExP Lowerer::full_tile_condition() const {
  ExP cond;
  for (int p : s_.unroll) {
    const tune::LoopSpec& l = s_.order[p];
    const int64_t parent = s_.tiles[l.dim][l.level - 1];
    ExP c = arith('<', add(var("i" + std::to_string(l.dim) + "_" + std::to_string(l.level - 1)), lit(parent - 1)),
                  end_of(l.dim, l.level - 1));
    cond = cond ? arith('&', cond, c) : c;
  }
  return cond;
}

LoopNest Lowerer::run_stores(const std::string& name) {
  LoopNest ln;
  ln.name = name;
  ln.num_ptrs = static_cast<int>(h_.accesses.size());
  for (const mdh::Access& a : h_.accesses) ln.ptr_types.push_back(a.dtype);
  ln.description = "the scalar prologue's stores";
  for (int d = 0; d < h_.ndim; ++d)
    ln.body.push_back(decl(DType::Int64, "n" + std::to_string(d), int_param(h_.extent[d])));
  emit_prologue(ln.body, false);
  return ln;
}

LoopNest Lowerer::run(const std::string& name) {
  LoopNest ln;
  ln.name = name;
  ln.num_ptrs = static_cast<int>(h_.accesses.size());
  ln.contract = s_.contract;
  ln.wide = s_.wide;
  ln.block_tiles = s_.block_tiles;
  ln.tile = s_.tile;
  ln.block_threads = s_.block_threads;
  ln.grid_threads = s_.grid_threads;
  for (const mdh::Access& a : h_.accesses) ln.ptr_types.push_back(a.dtype);
  plan_caches();
  plan_reductions();
  if (s_.parallel && s_.order.size() == 1) {
    std::vector<const RedPlan*> sums = pairwise_sums(0);
    pairwise_parallel_ = !sums.empty();
    for (const RedPlan* r : sums) pairwise_parallel_ &= r->partials && r->reg;
  }
  // The full-tile / remainder split goes right below the last parent loop of
  // an unrolled loop.
  for (int p : s_.unroll) {
    const tune::LoopSpec& l = s_.order[p];
    for (int q = 0; q < static_cast<int>(s_.order.size()); ++q)
      if (s_.order[q].dim == l.dim && s_.order[q].level == l.level - 1) branch_pos_ = std::max(branch_pos_, q + 1);
  }
  std::vector<StmtP>& top = ln.body;
  for (int d = 0; d < h_.ndim; ++d) top.push_back(decl(DType::Int64, "n" + std::to_string(d), int_param(h_.extent[d])));
  const bool par = s_.parallel;
  emit_prologue(top);
  if (par && s_.grid > 0) {
    // A share per point of the grid loops' iteration space.
    ExP points = lit(1);
    for (int q = 0; q < s_.grid; ++q) points = mul(points, grid_steps(q));
    top.push_back(decl(DType::Int64, kShares, points));
  } else if (par) {
    top.push_back(decl(DType::Int64, "nf_maxt", max_threads()));
    top.push_back(decl(DType::Int64, kShares, add(lit(1), mul(parallel_cond(), sub(var("nf_maxt"), lit(1))))));
  }
  setup_reductions(top);
  StmtP body = block();
  if (par) {
    // The outermost loop's iterations in nf_shares shares, each a contiguous
    // range of whole steps: a Parallel loop over the shares, which the
    // target's parallelize pass deals out to its threads. What the shares
    // combine across each other goes to one scratch array, as a serial
    // loop's would; the loop lists those arrays, and the partials pass
    // gives each share its own copy, combined after the loop in share order.
    StmtP shares = for_loop(kShare, lit(0), var(kShares), lit(1));
    shares->loop = LoopKind::Parallel;
    shares->share_reductions = share_reductions();
    if (s_.grid > 0 && !shares->share_reductions.empty())
      throw std::logic_error("build: grid loops whose shares combine into the same elements");
    shares->cond = arith('<', lit(1), var(kShares));  // several shares: worth threads
    shares->body.push_back(body);
    emit_loops(body->body, 0, false);
    top.push_back(shares);
  } else {
    top.push_back(body);
    emit_loops(body->body, 0, false);
  }
  for (RedPlan& r : plans_) finish(top, r);
  return ln;
}

// Whether a parallel schedule's work is worth several threads (1 or 0).
ExP Lowerer::parallel_cond() const {
  ExP work = lit(1);
  for (int d = 0; d < h_.ndim; ++d) work = mul(work, extent(d));
  return arith('<', lit(s_.parallel_min_work - 1), work);
}

// The body of order[i-1] (or the share's body for i = 0): open the tile
// buffers and registers that live there, the loop at i, then close them.
// `split`: inside the FullSplit (below the split point).
void Lowerer::emit_loops(std::vector<StmtP>& out, int i, bool split) {
  if (i == branch_pos_ && !split) {
    // Both paths enumerate the points below i; only the bounds differ. The
    // split comes before the tiles that live here, so that on the full path
    // their init / fold loops have literal bounds too (and unroll).
    StmtP fs = full_split(full_tile_condition());
    emit_body(fs->body, i, true);
    out.push_back(fs);
    return;
  }
  emit_body(out, i, split);
}

// Tiles and registers that live in this body, the loop at i, their closing.
void Lowerer::emit_body(std::vector<StmtP>& out, int i, bool split) {
  open_caches(out, i, split);
  open_registers(out, i);
  if (i == static_cast<int>(s_.order.size())) emit_point(out);
  else emit_loops_level(out, i, split);
  close_registers(out, i);
}

}  // namespace detail

namespace detail {

// The loop order[i] itself. An unrolled loop (inside the FullSplit) runs to
// its parent tile's clipped end on the remainder path, over the whole
// parent tile on the full path, where its kind is what a literal trip
// count allows (Stmt::unroll, full_kind).
void Lowerer::emit_loops_level(std::vector<StmtP>& out, int i, bool split) {
  const int nloops = static_cast<int>(s_.order.size());
  const tune::LoopSpec& l = s_.order[i];
  const int d = l.dim;
  const std::vector<int64_t>& tiles = s_.tiles[d];
  ExP n = extent(d);
  ExP lo = l.level == 0 ? lit(0) : var("i" + std::to_string(d) + "_" + std::to_string(l.level - 1));
  const bool unroll_here = split && unrolled(i);
  ExP hi = l.level == 0     ? n
           : unroll_here    ? tile_bound(add(lo, lit(tiles[l.level - 1])), end_of(d, l.level))
                            : end_of(d, l.level);
  ExP step = l.level < static_cast<int>(tiles.size()) ? lit(tiles[l.level]) : lit(1);
  const std::string v = loop_var(l);
  // A floating-point sum along the innermost loop: NumPy's pairwise order.
  // The loop over the whole dimension is marked with its sums for the
  // pairwise pass, its kind its blocks' (Vectorized: 8 lanes); as the one
  // loop of a parallel schedule it covers the whole dimension in every
  // share: the shares take the tree's nodes (Stmt::share_reductions, the
  // partials and pairwise passes).
  if (i == 0 && s_.grid > 0) {
    emit_grid(out, split);
    return;
  }
  const bool nodes = i == 0 && s_.parallel;
  if (std::vector<const RedPlan*> sums = pairwise_sums(i); !sums.empty() && (!nodes || pairwise_parallel_)) {
    StmtP f = for_loop(loop_var(l), lit(0), n, lit(1));
    f->loop = s_.vectorize ? LoopKind::Vectorized : LoopKind::Serial;
    f->pairwise = true;
    emit_loops(f->body, i + 1, split);
    out.push_back(f);
    return;
  }
  if (i == 0 && s_.parallel) {
    // This share's part of the iterations [0, n) in steps of `step`.
    ExP iters = l.level < static_cast<int>(tiles.size())
                    ? arith('/', add(n, lit(tiles[l.level] - 1)), lit(tiles[l.level]))
                    : n;
    out.push_back(decl(DType::Int64, "nf_it", iters));
    ExP first = arith('/', mul(var("nf_it"), var(kShare)), var(kShares));
    ExP last = arith('/', mul(var("nf_it"), add(var(kShare), lit(1))), var(kShares));
    lo = mul(first, step);
    hi = min(mul(last, step), n);
  }
  StmtP f = for_loop(v, lo, hi, step);
  // The innermost loop of a vectorized schedule may run on SIMD lanes (the
  // simd pass decides from the registers it carries); when it is also
  // unrolled its trip count is a literal, so the vectorizer covers it with
  // whole vectors (a register micro-kernel), which beats unrolling into
  // scalars that SLP would have to shuffle back together. A scan along it
  // carries a dependence from one iteration to the next: Serial.
  const bool simd = i == nloops - 1 && s_.vectorize && !h_.is_scan(d);
  f->loop = simd ? LoopKind::Vectorized : LoopKind::Serial;
  if (unroll_here) {
    f->unroll = true;
    f->full_kind = simd ? LoopKind::Vectorized : LoopKind::Unrolled;
  }
  emit_loops(f->body, i + 1, split);
  out.push_back(f);
}

// The grid loops (Schedule::grid): the share is a point of their iteration
// space, the last of them moving fastest; each loop's variable is that
// point's coordinate (a tile's start, for a tiled dimension), what lives in their bodies opened in order, then the
// loops below them.
// The iterations of grid loop q: its dimension's extent, or its tiles.
ExP Lowerer::grid_steps(int q) const {
  const int d = s_.order[q].dim;
  if (s_.tiles[d].empty()) return extent(d);
  const int64_t t = s_.tiles[d][0];
  return t == 1 ? extent(d) : arith('/', add(extent(d), lit(t - 1)), lit(t));
}

void Lowerer::emit_grid(std::vector<StmtP>& out, bool split) {
  const int k = s_.grid;
  if (k > 1) out.push_back(decl(DType::Int64, "nf_g", var(kShare)));
  for (int q = k - 1; q >= 0; --q) {
    const int d = s_.order[q].dim;
    const std::string v = loop_var(s_.order[q]);
    ExP step = s_.tiles[d].empty() ? lit(1) : lit(s_.tiles[d][0]);
    if (q == 0) {
      out.push_back(decl(DType::Int64, v, mul(var(k > 1 ? "nf_g" : kShare), step)));
    } else {
      out.push_back(decl(DType::Int64, v, mul(arith('%', var("nf_g"), grid_steps(q)), step)));
      out.push_back(assign(var("nf_g"), arith('/', var("nf_g"), grid_steps(q))));
    }
  }
  for (int q = 1; q < k; ++q) {
    open_caches(out, q, split);
    open_registers(out, q);
  }
  emit_loops(out, k, split);
  for (int q = k - 1; q >= 1; --q) close_registers(out, q);
}

// Node n of f at point idx, its operands' values in val. (An input read
// from a tile buffer is read from memory here: the tile_buffers pass
// redirects the reads its TileIn covers.)
ExP Lowerer::node_value(size_t n, const std::vector<ExP>& idx, const std::vector<ExP>& val) const {
  const ExprNode& x = h_.f.nodes[n];
  switch (x.kind) {
    case ExprNode::Kind::Input:
      return load(ptr(x.a), access_index(x.a, idx), x.dtype);
    case ExprNode::Kind::Const:
      return cast(const_value(x.a), x.dtype);
    case ExprNode::Kind::Index: {
      const mdh::Affine& f = h_.indices[x.a];
      ExP s = int_param(f.offset);
      for (int d = 0; d < h_.ndim; ++d) s = add(s, mul(idx[d], int_param(f.stride[d])));
      return s;
    }
    case ExprNode::Kind::Cast:
      return cast(val[x.a], x.dtype);
    default: {
      std::vector<ExP> args;
      for (int a : {x.a, x.b, x.c})
        if (a >= 0) args.push_back(val[a]);
      return scalar(x, args);
    }
  }
}

// The scalar prologue (mdh.h): nodes [0, prologue) once, at the kernel's
// top, before any thread starts (their inputs are all-Zero accesses: the
// element at index 0), then the outputs stored once (a stage's: under its
// guard, MdHom::once_guard, unless not `guarded`).
void Lowerer::emit_prologue(std::vector<StmtP>& top, bool guarded) {
  if (h_.prologue == 0) return;
  const std::vector<ExP> origin(h_.ndim, lit(0));
  std::vector<ExP> val(h_.prologue);
  for (int n = 0; n < h_.prologue; ++n) {
    const std::string name = "v" + std::to_string(n);
    top.push_back(decl(h_.f.nodes[n].dtype, name, node_value(n, origin, val)));
    val[n] = var(name, h_.f.nodes[n].dtype);
  }
  std::vector<StmtP>* stores = &top;
  if (guarded && h_.once_guard >= 0) {
    StmtP guard = if_else(arith('<', lit(0), int_param(h_.once_guard)));
    top.push_back(guard);
    stores = &guard->body;
  }
  for (const mdh::Output& o : h_.outputs) {
    if (!h_.once(o)) continue;
    const DType odt = h_.accesses[o.access].dtype;
    stores->push_back(assign(load(ptr(o.access), lit(0), odt), cast(val[o.value], odt)));
  }
}

// The innermost body: evaluate f, store map outputs, combine reductions.
void Lowerer::emit_point(std::vector<StmtP>& out) {
  std::vector<ExP> idx = point_vars();
  std::vector<ExP> val(h_.f.nodes.size());
  std::vector<bool> needed(h_.f.nodes.size(), false);
  for (const mdh::Output& o : h_.outputs) {
    needed[o.value] = true;
    if (o.arg_node >= 0) needed[o.arg_node] = true;
  }
  for (int n = static_cast<int>(h_.f.nodes.size()); n-- > 0;) {
    if (!needed[n]) continue;
    const ExprNode& x = h_.f.nodes[n];
    if (x.kind == ExprNode::Kind::Cast || x.kind == ExprNode::Kind::Unary || x.kind == ExprNode::Kind::Binary ||
        x.kind == ExprNode::Kind::Select) {
      if (x.a >= 0) needed[x.a] = true;
      if (x.b >= 0) needed[x.b] = true;
      if (x.c >= 0) needed[x.c] = true;
    }
  }
  for (size_t n = 0; n < h_.f.nodes.size(); ++n) {
    if (!needed[n]) continue;
    const ExprNode& x = h_.f.nodes[n];
    const std::string name = "v" + std::to_string(n);
    // The prologue's values were computed before every point (run()).
    if (static_cast<int>(n) >= h_.prologue) out.push_back(decl(x.dtype, name, node_value(n, idx, val)));
    val[n] = var(name, x.dtype);
  }
  for (size_t oi = 0; oi < h_.outputs.size(); ++oi) {
    const mdh::Output& o = h_.outputs[oi];
    if (h_.once(o)) continue;  // stored by the prologue
    const DType odt = h_.accesses[o.access].dtype;
    if (o.scan_dim >= 0) {
      // Prefix sum: combine with the output one step back along the scan
      // dimension (already final: the scan loops run in order, serially);
      // the first point stores the value itself.
      const ExP here = load(ptr(o.access), access_index(o.access, idx), odt);
      std::vector<ExP> back = idx;
      back[o.scan_dim] = sub(idx[o.scan_dim], lit(1));
      const ExP prev = load(ptr(o.access), access_index(o.access, back), odt);
      const ExP v = cast(val[o.value], odt);
      StmtP split = if_else(arith('<', lit(0), idx[o.scan_dim]));
      split->body.push_back(assign(here, combine(o.op, odt, prev, v)));
      split->else_body.push_back(assign(here, v));
      out.push_back(split);
      continue;
    }
    if (!o.reduces) {
      out.push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(val[o.value], odt)));
      continue;
    }
    const RedPlan& r = plan_of(static_cast<int>(oi));
    ExP v = cast(val[o.value], o.acc_dtype);
    ExP vi = o.arg_node >= 0 ? val[o.arg_node] : nullptr;
    if (r.reg) {
      update(out, o, r.out, var(r.racc, o.acc_dtype), var(r.ridx), v, vi);
    } else {
      combine_memory(out, r, idx, v, vi);
    }
  }
}

}  // namespace detail

namespace passes {
LoopNest build(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name) {
  return detail::Lowerer(h, s).run(name);
}

LoopNest build_stores(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name) {
  return detail::Lowerer(h, s).run_stores(name);
}
}  // namespace passes


}  // namespace nf::lower

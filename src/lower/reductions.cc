// Where each reduction output combines.
//
// Invariant: every point's value is combined exactly once into exactly one
// accumulator, and every accumulator is combined exactly once into the
// output; combine operators are associative and commutative (arg-reductions
// break ties by index), so the result does not depend on which of these is
// used:
//   - a register, when all of the output's concatenated loops enclose all of
//     its point-wise loops (declared inside the innermost concatenated loop):
//     the output element's own accumulator;
//   - otherwise memory (its buffer, or a dense scratch array when it combines
//     in a different type or is an arg-reduction), initialized with the
//     identity first, each point's combine an Assign marked as a memory
//     combine (Stmt::accumulates, for the promote pass: where the element's
//     index does not move with the loops inside some loop, it keeps the
//     element in a register over that loop), or a local tile (caches.cc);
//   - when the parallel loop is one of its point-wise dimensions, the
//     shares combine into one Kernel array (a dense scratch array, of one
//     element for a register accumulator, which each share's register is
//     combined into after its loops), listed with the Parallel loop
//     (Stmt::share_reductions) for the partials pass (partials.cc), which
//     gives each share its own copy and combines them after the loop.
// An ordered output (a floating-point product, mdh::Output::ordered) is the
// exception: the schedule keeps its points in index order (no partials, no
// tiles, no simd lanes) and its memory combines are marked ordered (the
// promote pass's register carries the memory value through), so it
// combines exactly as NumPy's sequential loop does.
#include <climits>
#include <stdexcept>

#include "lower/lowerer.h"

namespace nf::lower::detail {

ExP Lowerer::identity(const mdh::Output& o) const { return scalar_lit(reduce_identity(o.op, o.acc_dtype), o.acc_dtype); }

ExP Lowerer::identity_or_init(const mdh::Output& o) const {
  if (o.init_const >= 0) return cast(const_value(o.init_const), o.acc_dtype);
  return identity(o);
}

const RedPlan& Lowerer::plan_of(int output) const {
  for (const RedPlan& r : plans_)
    if (r.out == output) return r;
  throw std::logic_error("no reduction plan");
}

void Lowerer::plan_reductions() {
  const int nloops = static_cast<int>(s_.order.size());
  for (int oi = 0; oi < static_cast<int>(h_.outputs.size()); ++oi) {
    const mdh::Output& o = h_.outputs[oi];
    if (!o.reduces) continue;
    RedPlan r;
    r.out = oi;
    r.acc = "acc" + std::to_string(oi);
    r.idx = "aidx" + std::to_string(oi);
    r.racc = "racc" + std::to_string(oi);
    r.ridx = "ridx" + std::to_string(oi);
    for (int d = 0; d < h_.ndim; ++d)
      if (!h_.pointwise(o, d)) r.cdims.push_back(d);
    int last_c = -1, first_p = nloops;
    for (int i = 0; i < nloops; ++i) {
      if (h_.pointwise(o, s_.order[i].dim)) first_p = std::min(first_p, i);
      else last_c = i;
    }
    r.partials = s_.parallel && nloops > 0 && h_.pointwise(o, s_.order[0].dim);
    for (size_t c = 0; c < caches_.size(); ++c)
      if (caches_[c].output && caches_[c].access == o.access) r.tile = static_cast<int>(c);
    if (r.tile < 0) {
      r.reg = last_c < first_p && (!r.partials || r.cdims.empty());
      r.reg_pos = last_c;
    }
    r.scratch = !r.reg && (o.acc_dtype != h_.accesses[o.access].dtype || is_arg(o.op) || r.partials);
    plans_.push_back(r);
  }
}

// Scratch arrays and the initialization of memory accumulators, before
// the loops. (The shares of a parallel loop combine into one scratch array,
// which the partials pass copies per share.)
void Lowerer::setup_reductions(std::vector<StmtP>& top) {
  for (RedPlan& r : plans_) {
    const mdh::Output& o = h_.outputs[r.out];
    if (r.reg && !r.partials) continue;
    if (r.scratch || r.partials) {
      ExP count = dense_size(r.cdims);  // (a register's: one element)
      top.push_back(alloc(o.acc_dtype, r.acc, count, Scope::Kernel));
      if (is_arg(o.op)) top.push_back(alloc(DType::Int64, r.idx, count, Scope::Kernel));
      init_dense(top, o, r, count);
    } else {
      init_output(top, r);
    }
  }
}

// The Parallel loop's share reductions: the scratch arrays its shares
// combine into (a pairwise sum's: its register).
std::vector<Stmt::ShareReduction> Lowerer::share_reductions() const {
  std::vector<Stmt::ShareReduction> out;
  for (const RedPlan& r : plans_) {
    if (!r.partials) continue;
    const mdh::Output& o = h_.outputs[r.out];
    out.push_back({r.acc, is_arg(o.op) ? r.idx : "", pairwise_parallel_ ? r.racc : "", o.op, o.acc_dtype});
  }
  return out;
}

// Memory accumulation directly into the output buffer: write the identity.
void Lowerer::init_output(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  std::vector<ExP> idx(h_.ndim, lit(0));
  StmtP outer = block();
  std::vector<StmtP>* cur = &outer->body;
  for (size_t k = 0; k < r.cdims.size(); ++k) {
    const int d = r.cdims[k];
    std::string v = "z" + std::to_string(d);
    StmtP f = for_loop(v, lit(0), extent(d), lit(1));
    if (k + 1 == r.cdims.size()) f->loop = LoopKind::Vectorized;
    idx[d] = var(v);
    cur->push_back(f);
    cur = &f->body;
  }
  const DType odt = h_.accesses[o.access].dtype;
  cur->push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(identity_or_init(o), odt)));
  out.push_back(outer);
}

void Lowerer::init_dense(std::vector<StmtP>& out, const mdh::Output& o, const RedPlan& r, ExP count) {
  StmtP f = for_loop("z", lit(0), count, lit(1));
  f->body.push_back(assign(load(r.acc, var("z"), o.acc_dtype), identity_or_init(o)));
  if (is_arg(o.op)) f->body.push_back(assign(load(r.idx, var("z"), DType::Int64), lit(INT64_MAX)));
  out.push_back(f);
}

// Memory location a reduction output combines into at point `idx`: its
// dense scratch array or its buffer.
std::pair<ExP, ExP> Lowerer::memory_target(const RedPlan& r, const std::vector<ExP>& idx) const {
  const mdh::Output& o = h_.outputs[r.out];
  if (r.scratch || r.partials) {
    std::vector<ExP> cidx;
    for (int d : r.cdims) cidx.push_back(idx[d]);
    ExP di = dense_index(r.cdims, cidx);
    return {load(r.acc, di, o.acc_dtype), load(r.idx, di, DType::Int64)};
  }
  return {load(ptr(o.access), access_index(o.access, idx), h_.accesses[o.access].dtype), nullptr};
}

// (v, vi) combined into the output's memory accumulator at point idx, the
// combine marked for the promote pass with the registers it may become (or
// for its tile: the tile_buffers pass; for its shares: the partials pass).
void Lowerer::combine_memory(std::vector<StmtP>& out, const RedPlan& r, const std::vector<ExP>& idx, ExP v,
                             ExP vi) {
  const mdh::Output& o = h_.outputs[r.out];
  auto [target, itarget] = memory_target(r, idx);
  update(out, o, r.out, target, itarget, std::move(v), std::move(vi));
  out.back()->accumulates = std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{
      o.op, is_arg(o.op) ? r.ridx : "", o.ordered(), is_arg(o.op) ? itarget : nullptr, r.racc});
}

// (target, itarget) <- (target, itarget) ⊕ (v, vi).
void Lowerer::update(std::vector<StmtP>& out, const mdh::Output& o, int tag, ExP target, ExP itarget, ExP v,
                     ExP vi) {
  combine_into(out, o.op, o.acc_dtype, "better" + std::to_string(tag), std::move(target), std::move(itarget),
               std::move(v), std::move(vi));
}

void Lowerer::open_registers(std::vector<StmtP>& out, int i) {
  for (RedPlan& r : plans_)
    if (r.reg && r.reg_pos == i - 1) {
      const mdh::Output& o = h_.outputs[r.out];
      // (A share's register starts at the identity: the start value is
      // in the memory element it is combined into.)
      out.push_back(decl(o.acc_dtype, r.racc, r.partials ? identity(o) : identity_or_init(o)));
      out.back()->accumulates = std::make_shared<const Stmt::Accumulator>(
          Stmt::Accumulator{o.op, is_arg(o.op) ? r.ridx : "", o.ordered()});
      if (is_arg(o.op)) out.push_back(decl(DType::Int64, r.ridx, lit(INT64_MAX)));
    }
}

void Lowerer::close_registers(std::vector<StmtP>& out, int i) {
  for (RedPlan& r : plans_)
    if (r.reg && r.reg_pos == i - 1) store_register(out, r);
}

// After the loops of a register accumulator: store it (a share's: combine
// it into the memory element the shares combine into).
void Lowerer::store_register(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  ExP acc = var(r.racc, o.acc_dtype);
  std::vector<ExP> idx = point_vars();
  if (r.partials) return combine_memory(out, r, idx, acc, is_arg(o.op) ? var(r.ridx) : nullptr);
  const DType odt = h_.accesses[o.access].dtype;
  ExP v = is_arg(o.op) ? var(r.ridx) : acc;
  out.push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(v, odt)));
}

// After the loops: a scratch array's results written to the output.
void Lowerer::finish(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  const DType odt = h_.accesses[o.access].dtype;
  if (r.reg && !r.partials) return;
  if (!r.scratch && !r.partials) return;  // combined in place
  StmtP nest = block();
  std::vector<StmtP>* cur = &nest->body;
  std::vector<ExP> idx(h_.ndim, lit(0));
  std::vector<ExP> cidx;
  for (int d : r.cdims) {
    std::string v = "z" + std::to_string(d);
    StmtP f = for_loop(v, lit(0), extent(d), lit(1));
    idx[d] = var(v);
    cidx.push_back(var(v));
    cur->push_back(f);
    cur = &f->body;
  }
  ExP di = dense_index(r.cdims, cidx);
  ExP result = is_arg(o.op) ? load(r.idx, di, DType::Int64) : load(r.acc, di, o.acc_dtype);
  cur->push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(result, odt)));
  out.push_back(nest);
}

// The register sums this innermost loop can run pairwise (NumPy's order,
// the pairwise pass: pairwise.cc); empty if it cannot.
std::vector<const RedPlan*> Lowerer::pairwise_sums(int i) const {
  std::vector<const RedPlan*> sums;
  const int nloops = static_cast<int>(s_.order.size());
  // (An unrolled loop has a parent tile, level >= 1: never pairwise.)
  if (i != nloops - 1) return sums;
  const tune::LoopSpec& l = s_.order[i];
  if (l.level != 0 || !s_.tiles[l.dim].empty() || h_.is_scan(l.dim)) return sums;
  for (const CachePlan& c : caches_)
    if (c.pos >= i) return {};  // a tile opened inside the loop
  for (const RedPlan& r : plans_) {
    const mdh::Output& o = h_.outputs[r.out];
    if (!h_.pointwise(o, l.dim)) continue;  // not reduced along this loop
    // (Reduced along the innermost loop and not into a tile: the output's
    // accumulator is a register declared outside the loop -- build's, or
    // the promote pass's, passes.h.)
    if (r.tile >= 0) return {};
    if (o.op != ReduceOp::Sum || !is_float(o.acc_dtype)) return {};
    sums.push_back(&r);
  }
  return sums;
}

}  // namespace nf::lower::detail

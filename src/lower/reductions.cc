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
//   - when the parallel loop is one of its point-wise dimensions, each share
//     combines into partials of its own, combined in share order afterwards.
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
    r.scratch = !r.reg && (o.acc_dtype != h_.accesses[o.access].dtype || is_arg(o.op));
    plans_.push_back(r);
  }
}

// Scratch arrays, per-share partials and initialization of memory
// accumulators, before the loops.
void Lowerer::setup_reductions(std::vector<StmtP>& top) {
  for (RedPlan& r : plans_) {
    const mdh::Output& o = h_.outputs[r.out];
    if (r.reg && !r.partials) continue;
    // Pairwise-parallel partials are per tree node: up to twice the threads.
    ExP copies = !r.partials ? lit(1) : pairwise_parallel_ ? mul(lit(2), var("nf_maxt")) : var("nf_maxt");
    // (Partials exist only under the Parallel loop: nf_maxt is declared then.)
    if (r.reg) {  // partials of a scalar register accumulator
      top.push_back(alloc(o.acc_dtype, r.acc + "_part", copies, Scope::Kernel));
      if (is_arg(o.op)) top.push_back(alloc(DType::Int64, r.idx + "_part", copies, Scope::Kernel));
      continue;
    }
    ExP count = mul(copies, dense_size(r.cdims));
    if (r.scratch || r.partials) {
      top.push_back(alloc(o.acc_dtype, r.acc, count, Scope::Kernel));
      if (is_arg(o.op)) top.push_back(alloc(DType::Int64, r.idx, count, Scope::Kernel));
      init_dense(top, o, r, count);
    } else {
      init_output(top, r);
    }
  }
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
// dense scratch array (this thread's slice for partials) or its buffer.
std::pair<ExP, ExP> Lowerer::memory_target(const RedPlan& r, const std::vector<ExP>& idx) const {
  const mdh::Output& o = h_.outputs[r.out];
  if (r.scratch || r.partials) {
    std::vector<ExP> cidx;
    for (int d : r.cdims) cidx.push_back(idx[d]);
    ExP di = dense_index(r.cdims, cidx);
    if (r.partials) di = add(mul(var(kShare), dense_size(r.cdims)), di);
    return {load(r.acc, di, o.acc_dtype), load(r.idx, di, DType::Int64)};
  }
  return {load(ptr(o.access), access_index(o.access, idx), h_.accesses[o.access].dtype), nullptr};
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
      out.push_back(decl(o.acc_dtype, r.racc, identity_or_init(o)));
      out.back()->accumulates = std::make_shared<const Stmt::Accumulator>(
          Stmt::Accumulator{o.op, is_arg(o.op) ? r.ridx : "", o.ordered()});
      if (is_arg(o.op)) out.push_back(decl(DType::Int64, r.ridx, lit(INT64_MAX)));
    }
}

void Lowerer::close_registers(std::vector<StmtP>& out, int i) {
  for (RedPlan& r : plans_)
    if (r.reg && r.reg_pos == i - 1) store_register(out, r);
}

// After the loops of a register accumulator: store it (or park it in this
// share's partial slot).
void Lowerer::store_register(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  ExP acc = var(r.racc, o.acc_dtype);
  std::vector<ExP> idx = point_vars();
  if (r.partials) {
    if (pairwise_parallel_) return;  // each tree node stored its own partial
    out.push_back(assign(load(r.acc + "_part", var(kShare), o.acc_dtype), acc));
    if (is_arg(o.op)) out.push_back(assign(load(r.idx + "_part", var(kShare), DType::Int64), var(r.ridx)));
    return;
  }
  const DType odt = h_.accesses[o.access].dtype;
  ExP v = is_arg(o.op) ? var(r.ridx) : acc;
  out.push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(v, odt)));
}

// Combine the shares' partials (in share order) and write scratch results.
void Lowerer::finish(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  const DType odt = h_.accesses[o.access].dtype;
  const bool arg = is_arg(o.op);
  if (r.reg && !r.partials) return;
  if (!r.reg && !r.scratch && !r.partials) return;  // combined in place
  if (pairwise_parallel_) return finish_pairwise_parallel(out, r);
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
  const std::string acc_arr = r.reg ? r.acc + "_part" : r.acc;
  const std::string idx_arr = r.reg ? r.idx + "_part" : r.idx;
  ExP stride = r.reg ? lit(1) : dense_size(r.cdims);
  cur->push_back(decl(o.acc_dtype, "fin", load(acc_arr, di, o.acc_dtype)));
  if (arg) cur->push_back(decl(DType::Int64, "fidx", load(idx_arr, di, DType::Int64)));
  if (r.partials) {
    // (Partials exist only under the Parallel loop; this runs after it.)
    StmtP t = for_loop("t", lit(1), var(kShares), lit(1));
    ExP at = add(mul(var("t"), stride), di);
    ExP v = load(acc_arr, at, o.acc_dtype);
    if (arg) {
      t->body.push_back(decl(DType::Bool, "better",
                             arg_better(o.op, o.acc_dtype, var("fin", o.acc_dtype), var("fidx"), v,
                                        load(idx_arr, at, DType::Int64))));
      t->body.push_back(assign(var("fidx"), select(var("better", DType::Bool), load(idx_arr, at, DType::Int64),
                                                   var("fidx"), DType::Int64)));
      t->body.push_back(assign(var("fin", o.acc_dtype),
                               select(var("better", DType::Bool), v, var("fin", o.acc_dtype), o.acc_dtype)));
    } else {
      t->body.push_back(assign(var("fin", o.acc_dtype), combine(o.op, o.acc_dtype, var("fin", o.acc_dtype), v)));
    }
    cur->push_back(t);
  }
  ExP result = arg ? var("fidx") : var("fin", o.acc_dtype);
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

// After the Parallel loop: the node partials combined pairwise up the
// tree (left + right at every level), then added to the start value.
void Lowerer::finish_pairwise_parallel(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  const DType t = o.acc_dtype, odt = h_.accesses[o.access].dtype;
  StmtP scope = block();
  pairwise_nodes(scope->body, extent(s_.order[0].dim), var(kShares));  // (pairwise.cc)
  StmtP widths = for_loop("pw_w", lit(1), var("pw_P"), lit(0));
  StmtP pairs = for_loop("pw_k", lit(0), sub(var("pw_P"), var("pw_w")), mul(lit(2), var("pw_w")));
  pairs->body.push_back(assign(load(r.acc + "_part", var("pw_k"), t),
                               combine(ReduceOp::Sum, t, load(r.acc + "_part", var("pw_k"), t),
                                       load(r.acc + "_part", add(var("pw_k"), var("pw_w")), t))));
  widths->body.push_back(pairs);
  widths->body.push_back(assign(var("pw_w"), mul(var("pw_w"), lit(2))));
  scope->body.push_back(widths);
  std::vector<ExP> idx(h_.ndim, lit(0));
  ExP total = combine(ReduceOp::Sum, t, identity_or_init(o), load(r.acc + "_part", lit(0), t));
  scope->body.push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(total, odt)));
  out.push_back(scope);
}

}  // namespace nf::lower::detail

// The vectorize pass (passes.h): a Vectorized loop's registers that no simd
// clause serves (Stmt::splits) are split so the loop still runs on SIMD
// lanes -- floating-point max/min and arg-reductions into lanes of their
// own, floating-point sums into blocks.
#include <algorithm>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

// The expression with every arg-reduction test into one of `accs` made the
// short one (arg_better's `later`); unchanged subtrees are shared.
ExP later_tests(const ExP& e, const std::vector<std::string>& accs) {
  return rewrite_ex(e, [&](const ExP& n) -> ExP {
    if (n->k != Ex::K::Combine || !is_arg(n->rop) || n->args.size() != 4 || n->ival != 0 ||
        n->args[0]->k != Ex::K::Var || std::find(accs.begin(), accs.end(), n->args[0]->name) == accs.end())
      return nullptr;
    auto c = std::make_shared<Ex>(*n);
    c->ival = 1;
    return c;
  });
}

// A deep copy of the statement with later_tests applied to its expressions.
StmtP copy_later(const StmtP& s, const std::vector<std::string>& accs) {
  return copy_stmt(s, [&](const ExP& e) { return later_tests(e, accs); });
}

// Lanes for floating-point max/min and for arg-reductions. The register's
// combine keeps a NaN once it has seen one ((acc != acc || acc > v) ? acc : v)
// and an arg-reduction carries the index of its best point, which no simd
// clause expresses, so the loop would run as one serial compare chain.
// Instead it runs in blocks of kLanes points: point l of a block combines
// into lane l (elements of local arrays, shadowing the registers inside the
// lane loop), the lanes are independent, so the lane loop is vectorized; the
// lanes are then folded into the registers and the last (hi - lo) % kLanes
// points run serially. The result is exact: max and min do not round, a NaN
// in any lane wins the fold as it wins the chain, and the arg combine is a
// total order on (value, index) (ties and NaNs go to the smaller index), so
// any order of folding finds the first best point. Within a lane the arg
// combine is shorter (arg_better's `later`): the lanes start empty at every
// run of the loop, and a lane's points come in index order (an arg index
// never decreases along a loop: record_reduce builds it with nonnegative
// strides over the domain, which no later stage reorders), so a point wins
// by value alone (the first NaN, else a strictly better value). The serial
// remainder combines into the registers themselves, which may hold points
// of earlier iterations of the outer loops (with larger indices, when this
// loop is not the index's innermost dimension): its body keeps the full arg
// combine. (Only which of -0.0 and +0.0 a max returns for a tie between
// them can differ from a serial order; NumPy's own SIMD loops differ there
// too.)
StmtP lane_split(const StmtP& f) {
  StmtP outer = block();
  const std::string v = f->name, lv = f->name + "_l";
  // 512 bytes of values per lane array (eight vector registers of
  // independent compare chains: the loop is bound by its loads, not by the
  // latency of one chain), at most 64 lanes when an index rides along.
  int64_t kLanes = 16;
  std::vector<std::string> accs;
  for (const Stmt::Split& r : f->splits) {
    kLanes = std::max<int64_t>(kLanes, (is_arg(r.op) ? 256 / 8 : 512 / itemsize(r.dtype)));
    accs.push_back(r.acc);
  }
  auto lane_of = [&](const std::string& name, DType t) { return load(name + "_l", var(lv), t); };
  for (const Stmt::Split& r : f->splits) {
    const bool arg = is_arg(r.op);
    outer->body.push_back(local_array(r.dtype, r.acc + "_l", kLanes));
    if (arg) outer->body.push_back(local_array(DType::Int64, r.index + "_l", kLanes));
    StmtP init = for_loop(lv, lit(0), lit(kLanes), lit(1));
    init->body.push_back(assign(lane_of(r.acc, r.dtype), scalar_lit(reduce_identity(r.op, r.dtype), r.dtype)));
    if (arg) init->body.push_back(assign(lane_of(r.index, DType::Int64), lit(INT64_MAX)));
    outer->body.push_back(init);
  }
  outer->body.push_back(
      decl(DType::Int64, v + "_end", add(f->lo, mul(arith('/', sub(f->hi, f->lo), lit(kLanes)), lit(kLanes)))));
  StmtP blocks = for_loop(v + "_b", f->lo, var(v + "_end"), lit(kLanes));
  // The lane loop runs over the points themselves (its lane is the point's
  // offset in the block): index arithmetic on the point stays an induction
  // the vectorizer strides, instead of a multiply per lane.
  StmtP lane = for_loop(v, var(v + "_b"), add(var(v + "_b"), lit(kLanes)), lit(1));
  lane->loop = LoopKind::Vectorized;
  lane->simd_reductions = f->simd_reductions;
  lane->body.push_back(decl(DType::Int64, lv, sub(var(v), var(v + "_b"))));
  for (const Stmt::Split& r : f->splits) {
    lane->body.push_back(decl(r.dtype, r.acc, lane_of(r.acc, r.dtype)));
    if (is_arg(r.op)) lane->body.push_back(decl(DType::Int64, r.index, lane_of(r.index, DType::Int64)));
  }
  for (const StmtP& b : f->body) lane->body.push_back(copy_later(b, accs));
  for (const Stmt::Split& r : f->splits) {
    lane->body.push_back(assign(lane_of(r.acc, r.dtype), var(r.acc, r.dtype)));
    if (is_arg(r.op)) lane->body.push_back(assign(lane_of(r.index, DType::Int64), var(r.index, DType::Int64)));
  }
  blocks->body.push_back(lane);
  outer->body.push_back(blocks);
  for (const Stmt::Split& r : f->splits) {
    StmtP fold = for_loop(lv, lit(0), lit(kLanes), lit(1));
    const ExP acc = var(r.acc, r.dtype), lane_v = lane_of(r.acc, r.dtype);
    if (is_arg(r.op)) {
      const ExP ai = var(r.index, DType::Int64), lane_i = lane_of(r.index, DType::Int64);
      const std::string flag = "nf_fold_" + r.acc;
      fold->body.push_back(decl(DType::Bool, flag, arg_better(r.op, r.dtype, acc, ai, lane_v, lane_i)));
      fold->body.push_back(assign(ai, select(var(flag, DType::Bool), lane_i, ai, DType::Int64)));
      fold->body.push_back(assign(acc, select(var(flag, DType::Bool), lane_v, acc, r.dtype)));
    } else {
      fold->body.push_back(assign(acc, combine(r.op, r.dtype, acc, lane_v)));
    }
    outer->body.push_back(fold);
  }
  StmtP rest = std::make_shared<Stmt>(*f);
  rest->loop = LoopKind::Serial;
  rest->simd_reductions.clear();
  rest->splits.clear();
  rest->lo = var(v + "_end");
  outer->body.push_back(rest);
  return outer;
}

// Blocked summation. A floating-point sum over a simd loop would otherwise
// keep one partial per lane for the whole loop, and its rounding error would
// grow with the loop length. Instead the loop runs in blocks of kSumBlock
// points: each block's lanes start from zero (the register is shadowed
// inside the block), and the block totals are added to a double-precision
// running sum, so the error grows with the block length and the number of
// blocks only, as NumPy's pairwise summation keeps it small. A float32 sum
// still accumulates in float32 within a block (NumPy's overflow to inf); the
// running sum reaches the register's type when the loop ends.
StmtP blocked_sums(const StmtP& f) {
  constexpr int64_t kSumBlock = 1024;
  StmtP outer = block();
  for (const Stmt::Split& r : f->splits)
    outer->body.push_back(decl(DType::Float64, "nf_wide_" + r.acc, cast(var(r.acc, r.dtype), DType::Float64)));
  const std::string vb = f->name + "_b";
  ExP span = mul(f->step, lit(kSumBlock));
  StmtP blocks = for_loop(vb, f->lo, f->hi, span);
  for (const Stmt::Split& r : f->splits)
    blocks->body.push_back(decl(r.dtype, r.acc, scalar_lit(reduce_identity(ReduceOp::Sum, r.dtype), r.dtype)));
  StmtP inner = std::make_shared<Stmt>(*f);
  inner->splits.clear();
  inner->lo = var(vb);
  inner->hi = min(add(var(vb), span), f->hi);
  blocks->body.push_back(inner);
  for (const Stmt::Split& r : f->splits) {
    const ExP wide = var("nf_wide_" + r.acc, DType::Float64);
    blocks->body.push_back(
        assign(wide, combine(ReduceOp::Sum, DType::Float64, wide, cast(var(r.acc, r.dtype), DType::Float64))));
  }
  outer->body.push_back(blocks);
  for (const Stmt::Split& r : f->splits)
    outer->body.push_back(assign(var(r.acc, r.dtype), cast(var("nf_wide_" + r.acc, DType::Float64), r.dtype)));
  return outer;
}

void split_loops(std::vector<StmtP>& list) {
  for (StmtP& s : list) {
    split_loops(s->body);
    split_loops(s->else_body);
    if (s->k != Stmt::K::For || s->splits.empty()) continue;
    if (s->loop != LoopKind::Vectorized) {
      s->splits.clear();
      continue;
    }
    const bool sums = std::all_of(s->splits.begin(), s->splits.end(),
                                  [](const Stmt::Split& r) { return r.op == ReduceOp::Sum && is_float(r.dtype); });
    s = sums ? blocked_sums(s) : lane_split(s);
  }
}

}  // namespace

namespace passes {
void vectorize(LoopNest& n, const PassContext&) { split_loops(n.body); }
}  // namespace passes

}  // namespace nf::lower

// NumPy's pairwise summation, point for point.
//
// NumPy sums a floating-point reduction whose inner loop runs along the
// reduced axis with pairwise summation (numpy/_core/src/umath/
// loops_utils.h.src): pairwise(a, n) is, for n < 8, a plain loop; for
// n <= 128, eight accumulators r[j] += a[i + j] combined as
// ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) plus a plain loop over the last n % 8;
// otherwise pairwise of the first n2 = n/2 rounded down to a multiple of 8,
// plus pairwise of the rest. The reduction then adds that to the output
// (which started at 0 or `initial=`); outer reduced axes accumulate in order.
//
// Invariant: when it applies (the innermost loop is the whole of a reduced
// dimension, and every register accumulating over it is a floating-point
// sum), this pass visits every point of the loop exactly once, in index
// order, and combines them in exactly NumPy's association: the result is
// bit-identical to NumPy's, including for constant inputs (np.var of a
// constant array is exactly 0 where NumPy's is). The recursion runs as an
// explicit stack of (start, length, phase) frames, so the kernel needs no
// helper functions. Map outputs and other stores in the loop body are
// unaffected (their order does not matter).
//
// Parallel form: a one-dimensional sum split over threads takes the nodes
// at depth D of NumPy's recursion tree (P = 2^D >= threads, each node over
// 256 points), one partial per node, combined as the tree combines them --
// the same association again.
#include "lower/lowerer.h"

namespace nf::lower::detail {

namespace {
constexpr int64_t kLeaf = 128;   // NumPy's PW_BLOCKSIZE
constexpr int kStack = 64;       // recursion depth bound: n halves each level
}  // namespace

// The register sums this innermost loop can run pairwise; empty if it cannot.
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
    if (!(r.reg || r.sub_reg) || r.reg_pos >= i || r.tile >= 0) return {};
    if (o.op != ReduceOp::Sum || !is_float(o.acc_dtype)) return {};
    sums.push_back(&r);
  }
  return sums;
}

// The body of the loop at one point, with each sum's register shadowed by
// `acc[k]` (a C block scope: the body's update of the register goes there).
std::vector<StmtP> Lowerer::pw_point(int i, bool split, const std::vector<const RedPlan*>& sums,
                                     const std::vector<ExP>& acc) {
  std::vector<StmtP> b;
  for (size_t k = 0; k < sums.size(); ++k) b.push_back(decl(acc[k]->dtype, sums[k]->racc, acc[k]));
  emit_body(b, i + 1, split);
  for (size_t k = 0; k < sums.size(); ++k) b.push_back(assign(acc[k], var(sums[k]->racc, acc[k]->dtype)));
  return b;
}

// pw_val_<sum> = pairwise of the points [lo, lo + len) of the loop at i.
void Lowerer::emit_pairwise_range(std::vector<StmtP>& out, int i, bool split, const std::vector<const RedPlan*>& sums,
                                  ExP lo, ExP len) {
  const std::string v = loop_var(s_.order[i]);
  auto t_of = [&](const RedPlan* r) { return h_.outputs[r->out].acc_dtype; };
  auto zero = [&](DType t) { return scalar_lit(reduce_identity(ReduceOp::Sum, t), t); };
  std::vector<ExP> val, res;
  for (const RedPlan* r : sums) {
    const DType t = t_of(r);
    out.push_back(decl(t, "pw_val_" + r->racc, zero(t)));
    out.push_back(local_array(t, "pw_left_" + r->racc, kStack));
    out.push_back(local_array(t, "pw_r_" + r->racc, 8));
    val.push_back(var("pw_val_" + r->racc, t));
  }
  out.push_back(local_array(DType::Int64, "pw_lo", kStack));
  out.push_back(local_array(DType::Int64, "pw_n", kStack));
  out.push_back(local_array(DType::Int64, "pw_ph", kStack));
  out.push_back(decl(DType::Int64, "pw_sp", lit(0)));
  ExP sp = var("pw_sp");
  auto at = [&](const char* arr) { return load(arr, sp, DType::Int64); };
  out.push_back(assign(at("pw_lo"), lo));
  out.push_back(assign(at("pw_n"), len));
  out.push_back(assign(at("pw_ph"), lit(0)));
  auto push = [&](std::vector<StmtP>& b, ExP nlo, ExP nlen) {
    b.push_back(assign(sp, add(sp, lit(1))));
    b.push_back(assign(at("pw_lo"), nlo));
    b.push_back(assign(at("pw_n"), nlen));
    b.push_back(assign(at("pw_ph"), lit(0)));
  };
  // A finished node: its value is in pw_val; return to the parent (or stop).
  auto pop = [&](std::vector<StmtP>& b) {
    StmtP s = if_else(arith('<', sp, lit(1)));
    s->body.push_back(assign(var("pw_go"), lit(1)));
    s->else_body.push_back(assign(sp, sub(sp, lit(1))));
    b.push_back(s);
  };
  // while (!pw_go): a for loop whose body ends it.
  StmtP walk = for_loop("pw_go", lit(0), lit(1), lit(0));
  std::vector<StmtP>& w = walk->body;
  w.push_back(decl(DType::Int64, "pw_clo", at("pw_lo")));
  w.push_back(decl(DType::Int64, "pw_cn", at("pw_n")));
  ExP clo = var("pw_clo"), cn = var("pw_cn");
  StmtP is_leaf = if_else(arith('<', cn, lit(kLeaf + 1)));
  {
    std::vector<StmtP>& leaf = is_leaf->body;
    StmtP small = if_else(arith('<', cn, lit(8)));
    // n < 8: res = 0, then each point in order.
    for (size_t k = 0; k < sums.size(); ++k) small->body.push_back(assign(val[k], zero(t_of(sums[k]))));
    StmtP plain = for_loop(v, clo, add(clo, cn), lit(1));
    plain->body = pw_point(i, split, sums, val);
    small->body.push_back(plain);
    // 8 <= n <= 128: eight accumulators over whole blocks of 8, then the rest.
    std::vector<StmtP>& big = small->else_body;
    big.push_back(decl(DType::Int64, "pw_n8", mul(arith('/', cn, lit(8)), lit(8))));
    for (const RedPlan* r : sums) {
      StmtP z = for_loop("pw_j", lit(0), lit(8), lit(1));
      z->body.push_back(assign(load("pw_r_" + r->racc, var("pw_j"), t_of(r)), zero(t_of(r))));
      big.push_back(z);
    }
    StmtP blocks = for_loop("pw_b", clo, add(clo, var("pw_n8")), lit(8));
    StmtP lanes = for_loop("pw_j", lit(0), lit(8), lit(1));
    if (s_.vectorize) lanes->loop = LoopKind::Vectorized;
    lanes->body.push_back(decl(DType::Int64, v, add(var("pw_b"), var("pw_j"))));
    std::vector<ExP> lane_acc;
    for (const RedPlan* r : sums) lane_acc.push_back(load("pw_r_" + r->racc, var("pw_j"), t_of(r)));
    for (StmtP& s : pw_point(i, split, sums, lane_acc)) lanes->body.push_back(s);
    blocks->body.push_back(lanes);
    big.push_back(blocks);
    for (size_t k = 0; k < sums.size(); ++k) {
      const DType t = t_of(sums[k]);
      auto r = [&](int j) { return load("pw_r_" + sums[k]->racc, lit(j), t); };
      auto plus = [&](ExP a, ExP b) { return combine(ReduceOp::Sum, t, a, b); };
      big.push_back(assign(val[k], plus(plus(plus(r(0), r(1)), plus(r(2), r(3))), plus(plus(r(4), r(5)), plus(r(6), r(7))))));
    }
    StmtP rest = for_loop(v, add(clo, var("pw_n8")), add(clo, cn), lit(1));
    rest->body = pw_point(i, split, sums, val);
    big.push_back(rest);
    leaf.push_back(small);
    pop(leaf);
  }
  {
    // An inner node: left half, then right half, then left + right.
    std::vector<StmtP>& node = is_leaf->else_body;
    node.push_back(decl(DType::Int64, "pw_half", mul(arith('/', arith('/', cn, lit(2)), lit(8)), lit(8))));
    ExP half = var("pw_half");
    StmtP first = if_else(arith('<', at("pw_ph"), lit(1)));
    first->body.push_back(assign(at("pw_ph"), lit(1)));
    push(first->body, clo, half);
    StmtP second = if_else(arith('<', at("pw_ph"), lit(2)));
    for (size_t k = 0; k < sums.size(); ++k)
      second->body.push_back(assign(load("pw_left_" + sums[k]->racc, sp, t_of(sums[k])), val[k]));
    second->body.push_back(assign(at("pw_ph"), lit(2)));
    push(second->body, add(clo, half), sub(cn, half));
    for (size_t k = 0; k < sums.size(); ++k)
      second->else_body.push_back(assign(
          val[k], combine(ReduceOp::Sum, t_of(sums[k]), load("pw_left_" + sums[k]->racc, sp, t_of(sums[k])), val[k])));
    pop(second->else_body);
    first->else_body.push_back(second);
    node.push_back(first);
  }
  w.push_back(is_leaf);
  out.push_back(walk);
}

// The innermost loop at i (serial): racc = racc + pairwise(all its points).
void Lowerer::emit_pairwise(std::vector<StmtP>& out, int i, bool split, const std::vector<const RedPlan*>& sums) {
  StmtP scope = block();
  emit_pairwise_range(scope->body, i, split, sums, lit(0), extent(s_.order[i].dim));
  for (const RedPlan* r : sums) {
    const DType t = h_.outputs[r->out].acc_dtype;
    scope->body.push_back(
        assign(var(r->racc, t), combine(ReduceOp::Sum, t, var(r->racc, t), var("pw_val_" + r->racc, t))));
  }
  out.push_back(scope);
}

// The number of tree nodes a parallel sum over n points is split into for
// `threads` shares: the smallest power of two >= threads whose nodes keep
// over 2 * 128 points each (so every node above them is a real split).
void Lowerer::emit_node_count(std::vector<StmtP>& out, ExP n, ExP threads) const {
  out.push_back(decl(DType::Int64, "pw_P", lit(1)));
  StmtP grow = for_loop("pw_g", lit(0), lit(1), lit(0));
  StmtP more = if_else(arith('&', arith('<', var("pw_P"), threads), arith('<', mul(lit(4 * kLeaf), var("pw_P")), n)));
  more->body.push_back(assign(var("pw_P"), mul(var("pw_P"), lit(2))));
  more->else_body.push_back(assign(var("pw_g"), lit(1)));
  grow->body.push_back(more);
  out.push_back(grow);
}

// The parallel loop at 0 (the only loop): this share's tree nodes (every
// nf_shares-th from the share's number), one partial each (part[node]);
// combined by finish_pairwise_parallel.
void Lowerer::emit_pairwise_parallel(std::vector<StmtP>& out, bool split, const std::vector<const RedPlan*>& sums) {
  const int d = s_.order[0].dim;
  ExP n = extent(d);
  emit_node_count(out, n, var(kShares));
  StmtP nodes = for_loop("pw_k", var(kShare), var("pw_P"), var(kShares));
  std::vector<StmtP>& b = nodes->body;
  // Node k's range: descend from the root, one bit of k per level.
  b.push_back(decl(DType::Int64, "pw_nlo", lit(0)));
  b.push_back(decl(DType::Int64, "pw_nlen", n));
  b.push_back(decl(DType::Int64, "pw_m", arith('/', var("pw_P"), lit(2))));
  StmtP down = for_loop("pw_lv", lit(0), lit(1), lit(0));
  StmtP level = if_else(arith('<', lit(0), var("pw_m")));
  {
    std::vector<StmtP>& lb = level->body;
    lb.push_back(decl(DType::Int64, "pw_h", mul(arith('/', arith('/', var("pw_nlen"), lit(2)), lit(8)), lit(8))));
    ExP q = arith('/', var("pw_k"), var("pw_m"));
    StmtP right = if_else(arith('<', lit(0), sub(q, mul(arith('/', q, lit(2)), lit(2)))));
    right->body.push_back(assign(var("pw_nlo"), add(var("pw_nlo"), var("pw_h"))));
    right->body.push_back(assign(var("pw_nlen"), sub(var("pw_nlen"), var("pw_h"))));
    right->else_body.push_back(assign(var("pw_nlen"), var("pw_h")));
    lb.push_back(right);
    lb.push_back(assign(var("pw_m"), arith('/', var("pw_m"), lit(2))));
  }
  level->else_body.push_back(assign(var("pw_lv"), lit(1)));
  down->body.push_back(level);
  b.push_back(down);
  StmtP scope = block();
  emit_pairwise_range(scope->body, 0, split, sums, var("pw_nlo"), var("pw_nlen"));
  for (const RedPlan* r : sums)
    scope->body.push_back(
        assign(load(r->acc + "_part", var("pw_k"), h_.outputs[r->out].acc_dtype), var("pw_val_" + r->racc)));
  b.push_back(scope);
  out.push_back(nodes);
}

// After the Parallel loop: the node partials combined pairwise up the
// tree (left + right at every level), then added to the start value.
void Lowerer::finish_pairwise_parallel(std::vector<StmtP>& out, const RedPlan& r) {
  const mdh::Output& o = h_.outputs[r.out];
  const DType t = o.acc_dtype, odt = h_.accesses[o.access].dtype;
  StmtP scope = block();
  emit_node_count(scope->body, extent(s_.order[0].dim), var(kShares));
  ExP part = var(r.acc + "_part");
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

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
// build marks the loops it applies to (the innermost loop is the whole of
// a reduced dimension, and every output reduced along it is a
// floating-point sum not kept in a tile: Lowerer::pairwise_sums;
// Stmt::pairwise); this pass rewrites each marked loop, whose sums are the
// registers it carries by then (build's, or the promote pass's).
//
// Invariant: the rewritten loop visits every point of the marked loop
// exactly once, in index order, and combines them in exactly NumPy's
// association: the result is
// bit-identical to NumPy's, including for constant inputs (np.var of a
// constant array is exactly 0 where NumPy's is). The recursion runs as an
// explicit stack of (start, length, phase) frames, so the kernel needs no
// helper functions. Map outputs and other stores in the loop body are
// unaffected (their order does not matter).
//
// Parallel form (a marked loop with partials, the one loop of a Parallel
// loop's body): the shares take the nodes at depth D of NumPy's recursion
// tree (P = 2^D >= shares, each node over 256 points) in turn, one partial
// per node; the partials pass's final combine (partials.cc) adds them as
// the tree does -- the same association again.
#include <stdexcept>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {
constexpr int64_t kLeaf = 128;   // NumPy's PW_BLOCKSIZE

// One register summed pairwise, and its node partials (the parallel form).
struct PairwiseSum {
  std::string acc, part;
  DType dtype = DType::Float64;
};
constexpr int kStack = 64;       // recursion depth bound: n halves each level

// One marked loop's rewrite.
class Expander {
 public:
  Expander(const Stmt& loop, std::vector<PairwiseSum> sums) : loop_(loop), sums_(std::move(sums)) {}

  StmtP run() const {
    StmtP scope = block();
    if (sums_.front().part.empty()) {
      // racc = racc + pairwise(the loop's points).
      range(scope->body, loop_.lo, sub(loop_.hi, loop_.lo));
      for (const PairwiseSum& r : sums_)
        scope->body.push_back(assign(var(r.acc, r.dtype), combine(ReduceOp::Sum, r.dtype, var(r.acc, r.dtype),
                                                                  var("pw_val_" + r.acc, r.dtype))));
    } else {
      nodes(scope->body);
    }
    return scope;
  }

 private:
  const Stmt& loop_;
  const std::vector<PairwiseSum> sums_;

  ExP zero(DType t) const { return scalar_lit(reduce_identity(ReduceOp::Sum, t), t); }

  // The loop's body at one point, with each sum's register shadowed by
  // `acc[k]` (a C block scope: the body's update of the register goes there).
  std::vector<StmtP> point(const std::vector<ExP>& acc) const {
    std::vector<StmtP> b;
    for (size_t k = 0; k < sums_.size(); ++k) b.push_back(decl(acc[k]->dtype, sums_[k].acc, acc[k]));
    for (const StmtP& s : loop_.body) b.push_back(copy_stmt(s, [](const ExP& e) { return e; }));
    for (size_t k = 0; k < sums_.size(); ++k) b.push_back(assign(acc[k], var(sums_[k].acc, acc[k]->dtype)));
    return b;
  }

  // pw_val_<sum> = pairwise of the points [lo, lo + len) of the loop.
  void range(std::vector<StmtP>& out, ExP lo, ExP len) const {
    const std::string& v = loop_.name;
    std::vector<ExP> val;
    for (const PairwiseSum& r : sums_) {
      out.push_back(decl(r.dtype, "pw_val_" + r.acc, zero(r.dtype)));
      out.push_back(local_array(r.dtype, "pw_left_" + r.acc, kStack));
      out.push_back(local_array(r.dtype, "pw_r_" + r.acc, 8));
      val.push_back(var("pw_val_" + r.acc, r.dtype));
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
      for (size_t k = 0; k < sums_.size(); ++k) small->body.push_back(assign(val[k], zero(sums_[k].dtype)));
      StmtP plain = for_loop(v, clo, add(clo, cn), lit(1));
      plain->body = point(val);
      small->body.push_back(plain);
      // 8 <= n <= 128: eight accumulators over whole blocks of 8, then the rest.
      std::vector<StmtP>& big = small->else_body;
      big.push_back(decl(DType::Int64, "pw_n8", mul(arith('/', cn, lit(8)), lit(8))));
      for (const PairwiseSum& r : sums_) {
        StmtP z = for_loop("pw_j", lit(0), lit(8), lit(1));
        z->body.push_back(assign(load("pw_r_" + r.acc, var("pw_j"), r.dtype), zero(r.dtype)));
        big.push_back(z);
      }
      StmtP blocks = for_loop("pw_b", clo, add(clo, var("pw_n8")), lit(8));
      StmtP lanes = for_loop("pw_j", lit(0), lit(8), lit(1));
      // The marked loop's kind is its blocks' (a Vectorized loop: 8 lanes).
      lanes->loop = loop_.loop;
      lanes->body.push_back(decl(DType::Int64, v, add(var("pw_b"), var("pw_j"))));
      std::vector<ExP> lane_acc;
      for (const PairwiseSum& r : sums_) lane_acc.push_back(load("pw_r_" + r.acc, var("pw_j"), r.dtype));
      for (StmtP& s : point(lane_acc)) lanes->body.push_back(s);
      blocks->body.push_back(lanes);
      big.push_back(blocks);
      for (size_t k = 0; k < sums_.size(); ++k) {
        const DType t = sums_[k].dtype;
        auto r = [&](int j) { return load("pw_r_" + sums_[k].acc, lit(j), t); };
        auto plus = [&](ExP a, ExP b) { return combine(ReduceOp::Sum, t, a, b); };
        big.push_back(assign(val[k], plus(plus(plus(r(0), r(1)), plus(r(2), r(3))), plus(plus(r(4), r(5)), plus(r(6), r(7))))));
      }
      StmtP rest = for_loop(v, add(clo, var("pw_n8")), add(clo, cn), lit(1));
      rest->body = point(val);
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
      for (size_t k = 0; k < sums_.size(); ++k)
        second->body.push_back(assign(load("pw_left_" + sums_[k].acc, sp, sums_[k].dtype), val[k]));
      second->body.push_back(assign(at("pw_ph"), lit(2)));
      push(second->body, add(clo, half), sub(cn, half));
      for (size_t k = 0; k < sums_.size(); ++k)
        second->else_body.push_back(assign(
            val[k], combine(ReduceOp::Sum, sums_[k].dtype, load("pw_left_" + sums_[k].acc, sp, sums_[k].dtype), val[k])));
      pop(second->else_body);
      first->else_body.push_back(second);
      node.push_back(first);
    }
    w.push_back(is_leaf);
    out.push_back(walk);
  }

  // The parallel form: this share's tree nodes (every nf_shares-th from the
  // share's number), one partial each (part[node]).
  void nodes(std::vector<StmtP>& out) const {
    ExP n = sub(loop_.hi, loop_.lo);
    pairwise_nodes(out, n, var(kShares));
    StmtP each = for_loop("pw_k", var(kShare), var("pw_P"), var(kShares));
    std::vector<StmtP>& b = each->body;
    // Node k's range: descend from the root, one bit of k per level.
    b.push_back(decl(DType::Int64, "pw_nlo", loop_.lo));
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
    range(scope->body, var("pw_nlo"), var("pw_nlen"));
    for (const PairwiseSum& r : sums_)
      scope->body.push_back(assign(load(r.part, var("pw_k"), r.dtype), var("pw_val_" + r.acc, r.dtype)));
    b.push_back(scope);
    out.push_back(each);
  }
};

// A marked loop's sums: the registers it carries, each a floating-point
// sum (with its part, in the parallel form).
std::vector<PairwiseSum> sums_of(const Stmt& loop, const Registers& regs) {
  const Carried c = carried(loop, regs);
  if (c.other || c.regs.empty())
    throw std::logic_error("pairwise loop '" + loop.name + "' carries something other than sum registers");
  std::vector<PairwiseSum> sums;
  for (const Stmt* r : c.regs) {
    if (r->accumulates->op != ReduceOp::Sum || !is_float(r->dtype))
      throw std::logic_error("pairwise loop '" + loop.name + "' carries '" + r->name + "', not a float sum");
    PairwiseSum p{r->name, "", r->dtype};
    for (const auto& [reg, part] : loop.pairwise_parts)
      if (reg == r->name) p.part = part;
    if (p.part.empty() != loop.pairwise_parts.empty())
      throw std::logic_error("pairwise loop '" + loop.name + "' without a part for '" + r->name + "'");
    sums.push_back(p);
  }
  return sums;
}

void expand(std::vector<StmtP>& list, Registers regs) {
  for (StmtP& s : list) {
    if (s->k == Stmt::K::Decl && s->accumulates) regs[s->name] = s.get();
    expand(s->body, regs);
    expand(s->else_body, regs);
    if (s->k == Stmt::K::For && s->pairwise) s = Expander(*s, sums_of(*s, regs)).run();
  }
}
}  // namespace

namespace detail {
// The number of tree nodes a parallel sum over n points is split into for
// `shares` shares: the smallest power of two >= shares whose nodes keep
// over 2 * 128 points each (so every node above them is a real split).
void pairwise_nodes(std::vector<StmtP>& out, ExP n, ExP shares) {
  out.push_back(decl(DType::Int64, "pw_P", lit(1)));
  StmtP grow = for_loop("pw_g", lit(0), lit(1), lit(0));
  StmtP more = if_else(arith('&', arith('<', var("pw_P"), shares), arith('<', mul(lit(4 * kLeaf), var("pw_P")), n)));
  more->body.push_back(assign(var("pw_P"), mul(var("pw_P"), lit(2))));
  more->else_body.push_back(assign(var("pw_g"), lit(1)));
  grow->body.push_back(more);
  out.push_back(grow);
}
}  // namespace detail

void passes::pairwise(LoopNest& n, const PassContext&) { expand(n.body, {}); }

}  // namespace nf::lower

// The partials pass (passes.h): reductions across a Parallel loop's shares.
//
// build writes a parallel schedule as one Parallel loop over shares, and
// what the shares combine across each other as a serial loop would: into a
// Kernel array set to the start value (the identity, or `initial=`) before
// the loop, with marked memory combines at the same elements in every
// share; the loop lists those arrays (Stmt::share_reductions). This pass
// privatizes them. For an array of C elements and S shares:
//
//   alloc array[C]             ->  alloc array[S * C]
//   (start value in [0, C))        copies 1 .. S-1 set to the identity
//   Parallel s: array[e] ...   ->  Parallel s: array[s * C + e] ...
//                                  for z in [0, C): for t in [1, S):
//                                    array[z] = array[z] (+) array[t * C + z]
//
// an arg-reduction's index array with it (the full arg test in the fold,
// so ties go to the first index). Every point is combined once, into its
// share's copy; copy 0 holds the start value, the others the identity; the
// copies combine in share order after the loop, where build's finish reads
// element z. Share s's copy is touched by share s only: no two iterations
// of the loop touch the same element any more.
//
// A pairwise sum (ShareReduction::reg): the loop's body sums register reg
// over the whole dimension in a loop marked pairwise, then adds it into
// element 0. Here the shares take the nodes of NumPy's tree instead: the
// marked loop gets a part array of 2 S node sums (pairwise_nodes: at most
// that many nodes; the pairwise pass has share s take nodes s, s + S, ...),
// the share's add of the register (which then stays at the identity) goes,
// and after the loop the node sums are added up the tree, left + right at
// every level, and the root into element 0 -- NumPy's association again.
#include <climits>
#include <map>
#include <set>
#include <stdexcept>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

// The loop marked pairwise in the list (the one loop of a pairwise share).
const Stmt* pairwise_loop(const std::vector<StmtP>& list) {
  for (const StmtP& s : list) {
    if (s->k == Stmt::K::For && s->pairwise) return s.get();
    if (const Stmt* p = pairwise_loop(s->body)) return p;
    if (const Stmt* p = pairwise_loop(s->else_body)) return p;
  }
  return nullptr;
}

class Privatizer {
 public:
  Privatizer(std::vector<StmtP>& top, size_t at, bool grid)
      : top_(top), at_(at), keep_(top[at]), loop_(*keep_), grid_(grid) {}

  // Rewrites top[at_] and the statements around it; returns the index of
  // the loop's last statement after.
  size_t run() {
    std::vector<StmtP> before, after;
    for (const Stmt::ShareReduction& r : loop_.share_reductions) {
      if (!r.reg.empty() && !grid_) {
        pairwise(r, before, after);
        continue;
      }
      if (!r.reg.empty()) chunked_.insert(r.reg);
      private_copies(r, r.array, r.op, r.dtype, before);
      if (!r.index.empty()) private_copies(r, r.index, r.op, DType::Int64, before);
      fold(r, after);
    }
    const ExP share = var(loop_.name);
    auto f = [&](const ExP& e) {
      return rewrite_ex(e, [&](const ExP& x) -> ExP {
        if (x->k != Ex::K::Load) return nullptr;
        auto c = count_.find(x->name);
        if (c == count_.end()) return nullptr;
        return load(x->name, add(mul(share, c->second), x->args[0]), x->dtype);
      });
    };
    auto g = [&](Stmt& s) {
      if (s.accumulates && s.accumulates->index_at) {
        auto a = std::make_shared<Stmt::Accumulator>(*s.accumulates);
        a->index_at = f(a->index_at);
        s.accumulates = a;
      }
      if (s.k == Stmt::K::For && s.pairwise && !chunked_.empty()) {
        // (a grid's target) the share's contiguous part of the range, no
        // longer NumPy's tree over all of it
        const ExP N = sub(s.hi, s.lo), S = shares(), me = var(loop_.name);
        const ExP lo = s.lo;
        s.lo = add(lo, arith('/', mul(N, me), S));
        s.hi = add(lo, arith('/', mul(N, add(me, lit(1))), S));
        s.pairwise = false;
      }
      if (s.k == Stmt::K::For && s.pairwise)
        for (const auto& [reg, part] : parts_) s.pairwise_parts.push_back({reg, part});
      // A pairwise share's add of its register into the shared element:
      // its nodes' sums go to the parts instead.
      std::erase_if(s.body, [&](const StmtP& b) {
        return b->k == Stmt::K::Assign && b->accumulates && b->target->k == Ex::K::Load &&
               summed_.count(b->target->name);
      });
    };
    StmtP loop = copy_stmt(top_[at_], f, g);
    loop->share_reductions.clear();
    top_[at_] = loop;
    top_.insert(top_.begin() + static_cast<std::ptrdiff_t>(at_) + 1, after.begin(), after.end());
    top_.insert(top_.begin() + static_cast<std::ptrdiff_t>(at_), before.begin(), before.end());
    return at_ + before.size() + after.size();
  }

 private:
  std::vector<StmtP>& top_;
  const size_t at_;
  const StmtP keep_;  // the loop as build left it
  const Stmt& loop_;
  std::map<std::string, ExP> count_;  // privatized array -> its elements per share
  std::vector<std::pair<std::string, std::string>> parts_;  // pairwise register -> node sums
  std::set<std::string> summed_;  // the elements pairwise shares add into
  const bool grid_;               // a target with a grid (passes.h: partials)
  std::set<std::string> chunked_;  // (grid_) pairwise sums' registers taken by contiguous parts

  ExP shares() const { return loop_.hi; }

  // The Kernel allocation of `name` before the loop.
  StmtP& alloc_of(const std::string& name) {
    for (size_t i = 0; i < at_; ++i)
      if (top_[i]->k == Stmt::K::Alloc && top_[i]->name == name) {
        if (top_[i]->scope != Scope::Kernel)
          throw std::logic_error("partials: '" + name + "' is not a Kernel allocation");
        return top_[i];
      }
    throw std::logic_error("partials: '" + name + "', combined across the shares of '" + loop_.name +
                           "', is not allocated before it");
  }

  // One copy of the array per share; copies 1.. start at the identity.
  void private_copies(const Stmt::ShareReduction& r, const std::string& name, ReduceOp op, DType t,
                      std::vector<StmtP>& before) {
    StmtP& a = alloc_of(name);
    const ExP c = a->count;
    count_[name] = c;
    auto grown = std::make_shared<Stmt>(*a);
    grown->count = mul(c, shares());
    a = grown;
    const ExP start = name == r.index ? lit(INT64_MAX) : scalar_lit(reduce_identity(op, t), t);
    if (grid_) {
      StmtP init = for_loop("z", lit(0), mul(c, sub(shares(), lit(1))), lit(1));
      init->loop = LoopKind::Parallel;
      init->body.push_back(assign(load(name, add(c, var("z")), t), start));
      before.push_back(init);
      return;
    }
    StmtP init = for_loop("z", c, mul(c, shares()), lit(1));
    init->body.push_back(assign(load(name, var("z"), t), start));
    before.push_back(init);
  }

  // After the loop: every share's copy combined into copy 0, in share order.
  void fold(const Stmt::ShareReduction& r, std::vector<StmtP>& after) const {
    const ExP c = count_.at(r.array);
    StmtP each = for_loop("z", lit(0), c, lit(1));
    StmtP shares_loop = for_loop("t", lit(1), shares(), lit(1));
    const ExP at = add(mul(var("t"), c), var("z"));
    const bool arg = !r.index.empty();
    if (grid_) {
      // Element z's copies 1 .. S-1 combined in a register, then into copy 0.
      each->loop = LoopKind::Parallel;
      const std::string reg = r.array + "_r", ireg = arg ? r.array + "_ri" : "";
      StmtP d = decl(r.dtype, reg, scalar_lit(reduce_identity(r.op, r.dtype), r.dtype));
      auto a = std::make_shared<Stmt::Accumulator>();
      a->op = r.op;
      a->index = ireg;
      d->accumulates = a;
      each->body.push_back(d);
      if (arg) each->body.push_back(decl(DType::Int64, ireg, lit(INT64_MAX)));
      combine_into(shares_loop->body, r.op, r.dtype, "better", var(reg, r.dtype), arg ? var(ireg) : nullptr,
                   load(r.array, at, r.dtype), arg ? load(r.index, at, DType::Int64) : nullptr);
      each->body.push_back(shares_loop);
      combine_into(each->body, r.op, r.dtype, "better_z", load(r.array, var("z"), r.dtype),
                   arg ? load(r.index, var("z"), DType::Int64) : nullptr, var(reg, r.dtype), arg ? var(ireg) : nullptr);
      after.push_back(each);
      return;
    }
    combine_into(shares_loop->body, r.op, r.dtype, "better", load(r.array, var("z"), r.dtype),
                 arg ? load(r.index, var("z"), DType::Int64) : nullptr, load(r.array, at, r.dtype),
                 arg ? load(r.index, at, DType::Int64) : nullptr);
    each->body.push_back(shares_loop);
    after.push_back(each);
  }

  // A pairwise sum: node partials, added up the tree after the loop.
  void pairwise(const Stmt::ShareReduction& r, std::vector<StmtP>& before, std::vector<StmtP>& after) {
    const Stmt* marked = pairwise_loop(loop_.body);
    if (!marked || r.op != ReduceOp::Sum || !r.index.empty())
      throw std::logic_error("partials: pairwise share reduction '" + r.array + "' without a pairwise float sum");
    const std::string part = r.array + "_part";
    parts_.push_back({r.reg, part});
    summed_.insert(r.array);
    before.push_back(alloc(r.dtype, part, mul(lit(2), shares()), Scope::Kernel));
    const DType t = r.dtype;
    StmtP scope = block();
    pairwise_nodes(scope->body, sub(marked->hi, marked->lo), shares());
    StmtP widths = for_loop("pw_w", lit(1), var("pw_P"), lit(0));
    StmtP pairs = for_loop("pw_k", lit(0), sub(var("pw_P"), var("pw_w")), mul(lit(2), var("pw_w")));
    pairs->body.push_back(assign(load(part, var("pw_k"), t),
                                 combine(ReduceOp::Sum, t, load(part, var("pw_k"), t),
                                         load(part, add(var("pw_k"), var("pw_w")), t))));
    widths->body.push_back(pairs);
    widths->body.push_back(assign(var("pw_w"), mul(var("pw_w"), lit(2))));
    scope->body.push_back(widths);
    const ExP element = load(r.array, lit(0), t);
    scope->body.push_back(assign(element, combine(ReduceOp::Sum, t, element, load(part, lit(0), t))));
    after.push_back(scope);
  }
};

}  // namespace

void passes::partials(LoopNest& n, const PassContext& c) {
  const bool grid = c.caps.threads == Caps::Threads::Grid;
  for (size_t i = 0; i < n.body.size(); ++i)
    if (n.body[i]->k == Stmt::K::For && n.body[i]->loop == LoopKind::Parallel && !n.body[i]->share_reductions.empty())
      i = Privatizer(n.body, i, grid).run();
}

}  // namespace nf::lower

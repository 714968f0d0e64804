// The simd pass (passes.h): how each Vectorized loop's lanes may combine the
// registers it carries from one iteration to the next.
//
// build marks the innermost loop of a vectorized schedule Vectorized (a scan
// along it keeps it Serial) and declares each register a reduction combines
// into with what it combines (Stmt::accumulates). This pass reads, for each
// Vectorized loop, what its body assigns that lives across its iterations:
//   - a register of an associative combine OpenMP's simd reductions express
//     (simd_op: a sum or product of real values -- a float product only
//     when it is not ordered --, an integer max/min, any/all): the loop's
//     simd clause; a float sum is also split into blocks (the vectorize
//     pass) to keep NumPy's error growth;
//   - a float max/min or an arg-reduction (NaN-propagating combines, an
//     index carried along): lanes of their own (splits, the vectorize pass),
//     which need steps of 1, a trip count not known here (on a short literal
//     one the loop is unrolled instead) and no blocked sum beside them;
//   - a complex combine, an ordered product (mdh::Output::ordered), any
//     other combine no clause or lane serves, any other scalar declared
//     outside the loop, or a memory element whose index does not move with
//     the loop (an output tile indexed by outer loops only): a dependence
//     from one iteration to the next, so the loop is Serial (Unrolled on
//     the full-tile path of a FullSplit).
// A loop marked pairwise (the pairwise pass's) is left alone.
#include <algorithm>
#include <map>
#include <set>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

void collect(const std::vector<StmtP>& list, const Registers& regs, std::set<std::string>& inside, Carried& c) {
  for (const StmtP& s : list) {
    if (s->k == Stmt::K::Decl || s->k == Stmt::K::Alloc) inside.insert(s->name);
    if (s->k == Stmt::K::For) inside.insert(s->name);
    if (s->k == Stmt::K::Assign) {
      const ExP& t = s->target;
      if (t->k == Ex::K::Var && !inside.count(t->name)) {
        const Stmt* reg = nullptr;
        for (const auto& [name, d] : regs)
          if (name == t->name || d->accumulates->index == t->name) reg = d;
        if (!reg) c.other = true;
        else if (std::find(c.regs.begin(), c.regs.end(), reg) == c.regs.end()) c.regs.push_back(reg);
      } else if (t->k == Ex::K::Load && !mentions(t->args[0], inside)) {
        c.other = true;
      }
    }
    collect(s->body, regs, inside, c);
    collect(s->else_body, regs, inside, c);
  }
}

void decide(Stmt& f, const Registers& regs) {
  const Carried c = carried(f, regs);
  if (c.regs.empty() && !c.other) return;  // independent iterations
  std::vector<const Stmt*> lanes;
  bool serial = c.other;
  for (const Stmt* r : c.regs) {
    const Stmt::Accumulator& a = *r->accumulates;
    const char op = a.ordered ? 0 : simd_op(a.op, r->dtype);
    if (op) f.simd_reductions.push_back({r->name, op});
    else if (is_arg(a.op) || ((a.op == ReduceOp::Max || a.op == ReduceOp::Min) && is_float(r->dtype)))
      lanes.push_back(r);
    else serial = true;
  }
  std::vector<const Stmt*> sums;  // float sums of the simd clause: blocked
  for (const auto& [name, op] : f.simd_reductions)
    if (op == '+' && is_float(regs.at(name)->dtype)) sums.push_back(regs.at(name));
  // The loop's kind with its trip count a literal (the full path of a
  // FullSplit) or not. (Lanes and blocked sums do not nest: a loop with
  // both stays scalar.)
  auto kind = [&](bool literal) {
    LoopKind k = serial ? LoopKind::Serial : LoopKind::Vectorized;
    const bool unit_step = f.step->k == Ex::K::IntLit && f.step->ival == 1;
    if (k == LoopKind::Vectorized && !lanes.empty() && (literal || !unit_step || !sums.empty())) k = LoopKind::Serial;
    return k == LoopKind::Serial && literal ? LoopKind::Unrolled : k;
  };
  f.loop = kind(false);
  if (f.unroll) f.full_kind = kind(true);
  if (f.loop != LoopKind::Vectorized) return;
  // What the vectorize pass splits: the lanes' registers, else the float
  // sums (neither on the full-tile path: the unroll pass drops them there).
  for (const Stmt* r : lanes) f.splits.push_back({r->name, r->accumulates->index, r->accumulates->op, r->dtype});
  if (lanes.empty())
    for (const Stmt* r : sums) f.splits.push_back({r->name, "", ReduceOp::Sum, r->dtype});
}

void visit(std::vector<StmtP>& list, Registers regs) {
  for (StmtP& s : list) {
    if (s->k == Stmt::K::Decl && s->accumulates) regs[s->name] = s.get();
    if (s->k == Stmt::K::For && s->loop == LoopKind::Vectorized && !s->pairwise) decide(*s, regs);
    visit(s->body, regs);
    visit(s->else_body, regs);
  }
}

}  // namespace

namespace detail {
Carried carried(const Stmt& loop, const Registers& regs) {
  std::set<std::string> inside = {loop.name};
  Carried c;
  collect(loop.body, regs, inside, c);
  return c;
}
}  // namespace detail

namespace passes {
// Every Vectorized loop Serial (a target without SIMD lanes).
static void serial_loops(std::vector<StmtP>& list) {
  for (StmtP& s : list) {
    if (s->k == Stmt::K::For && s->loop == LoopKind::Vectorized) s->loop = LoopKind::Serial;
    serial_loops(s->body);
    serial_loops(s->else_body);
  }
}

void simd(LoopNest& n, const PassContext& c) {
  if (c.caps.vector_bytes == 0) serial_loops(n.body);
  else visit(n.body, {});
}
}  // namespace passes

}  // namespace nf::lower

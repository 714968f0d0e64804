// The promote pass (passes.h): memory combines kept in registers.
//
// build writes a reduction whose output element's reduced points do not all
// lie below the element's own loops as memory accumulation: the element (of
// the output, a scratch array or a share's partials) starts at the identity
// before the loops, and every point combines into it with an Assign marked
// as a memory combine (Stmt::accumulates: operator, the element holding its
// arg index, whether the points combine in order, the registers it may
// become). Where the element's index does not move with the loops inside
// some loop L -- the loops after the output's innermost own loop only
// combine --, this pass keeps the element in a register over L:
//
//   reg = identity           (an ordered product: reg = element)
//   L, each mention of the element now of reg
//   element = element (+) reg (an ordered product: element = reg)
//
// the register declared as an accumulator (Stmt::accumulates), so the simd
// pass serves the loops that combine into it. That is register promotion
// (scalar replacement) of a location whose index is invariant in L, legal
// because nothing in L reads or writes the element's array at another
// index: the element's value before and after L is what it would have been.
//
// Loops are taken outermost first, so each element lives in a register over
// the outermost loop it can (its value leaves the register once per
// iteration of the loops its index moves with). Parallel and Cores loops
// are never promoted over: their iterations run at once (what a share
// combines across them goes to its own partials, whose index moves with
// the share).
#include <climits>
#include <set>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

// What a loop's body declares (loops, scalars, arrays) or assigns to a
// scalar: an index mentioning one of these moves with the loop.
void moving(const std::vector<StmtP>& list, std::set<std::string>& names) {
  for (const StmtP& s : list) {
    if (s->k == Stmt::K::Decl || s->k == Stmt::K::Alloc || s->k == Stmt::K::For) names.insert(s->name);
    if (s->k == Stmt::K::Assign && s->target->k == Ex::K::Var) names.insert(s->target->name);
    moving(s->body, names);
    moving(s->else_body, names);
  }
}

// The marked memory combines in the list, in order.
void combines(const std::vector<StmtP>& list, std::vector<const Stmt*>& out) {
  for (const StmtP& s : list) {
    if (s->k == Stmt::K::Assign && s->accumulates) out.push_back(s.get());
    combines(s->body, out);
    combines(s->else_body, out);
  }
}

// Whether every mention of array `name` in e is a read of `at` itself.
bool only_at(const ExP& e, const std::string& name, const ExP& at) {
  if (!e) return true;
  if ((e->k == Ex::K::Load || e->k == Ex::K::Address) && e->name == name)
    return e->k == Ex::K::Load && same_ex(e, at);
  for (const ExP& a : e->args)
    if (!only_at(a, name, at)) return false;
  return true;
}

// Whether the statements touch array `name` only at `at`, and write it
// only by memory combines of `mark`'s operator and order.
bool only_at(const std::vector<StmtP>& list, const std::string& name, const ExP& at,
             const Stmt::Accumulator& mark) {
  for (const StmtP& s : list) {
    for (const ExP* e : {&s->lo, &s->hi, &s->step, &s->init, &s->value, &s->count, &s->cond})
      if (!only_at(*e, name, at)) return false;
    for (const ExP& a : s->args)
      if (!only_at(a, name, at)) return false;
    if (s->tile && s->tile->ptr == name) return false;  // (a tile copied from it)
    if (s->target && s->target->k == Ex::K::Load && s->target->name == name) {
      if (!same_ex(s->target, at)) return false;
      if (mark.index_at && at->name == mark.index_at->name) {
        // (the arg index element: written only by its combine)
      } else if (!s->accumulates || s->accumulates->op != mark.op || s->accumulates->ordered != mark.ordered ||
                 s->accumulates->reg != mark.reg) {
        return false;
      }
    } else if (!only_at(s->target, name, at)) {
      return false;
    }
    if (!only_at(s->body, name, at, mark) || !only_at(s->else_body, name, at, mark)) return false;
  }
  return true;
}

// A memory element kept in a register over a loop.
struct Promotion {
  ExP at, index_at;  // the element, its arg index element (or null)
  const Stmt::Accumulator* mark;
};

// The elements loop L's combines may keep in registers over L.
std::vector<Promotion> promotions(const StmtP& l) {
  const Stmt& loop = *l;
  const std::vector<StmtP> whole = {l};
  std::set<std::string> names = {loop.name};
  moving(loop.body, names);
  std::vector<const Stmt*> found;
  combines(loop.body, found);
  std::vector<Promotion> out;
  for (const Stmt* c : found) {
    const ExP& at = c->target;
    const Stmt::Accumulator& m = *c->accumulates;
    bool seen = false;
    for (const Promotion& p : out) seen |= same_ex(p.at, at);
    if (seen || names.count(at->name) || mentions(at->args[0], names)) continue;
    if (m.index_at && (names.count(m.index_at->name) || mentions(m.index_at->args[0], names))) continue;
    if (!only_at(whole, at->name, at, m)) continue;
    if (m.index_at && !only_at(whole, m.index_at->name, m.index_at, m)) continue;
    out.push_back({at, m.index_at, &m});
  }
  return out;
}

void promote_list(std::vector<StmtP>& list) {
  for (size_t k = 0; k < list.size(); ++k) {
    StmtP s = list[k];
    const bool threads = s->loop == LoopKind::Parallel || s->loop == LoopKind::Cores ||
                         s->loop == LoopKind::GpuBlocks || s->loop == LoopKind::GpuThreads;
    std::vector<Promotion> ps;
    if (s->k == Stmt::K::For && !threads) ps = promotions(s);
    if (!ps.empty()) {
      std::vector<StmtP> before, after;
      for (const Promotion& p : ps) {
        const Stmt::Accumulator& m = *p.mark;
        const DType t = p.at->dtype;
        before.push_back(decl(t, m.reg, m.ordered ? p.at : scalar_lit(reduce_identity(m.op, t), t)));
        before.back()->accumulates =
            std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{m.op, m.index, m.ordered, nullptr, ""});
        if (p.index_at) before.push_back(decl(DType::Int64, m.index, lit(INT64_MAX)));
        if (m.ordered) after.push_back(assign(p.at, var(m.reg, t)));
        else
          combine_into(after, m.op, t, "better_" + m.reg, p.at, p.index_at, var(m.reg, t),
                       p.index_at ? var(m.index) : nullptr);
      }
      // Every mention of a promoted element in the loop is its register;
      // its combines there are register updates now.
      auto rule = [&](const ExP& e) -> ExP {
        for (const Promotion& p : ps) {
          if (same_ex(e, p.at)) return var(p.mark->reg, p.at->dtype);
          if (p.index_at && same_ex(e, p.index_at)) return var(p.mark->index);
        }
        return nullptr;
      };
      s = copy_stmt(
          s, [&](const ExP& e) { return rewrite_ex(e, rule); },
          [](Stmt& c) {
            if (c.k == Stmt::K::Assign && c.accumulates && c.target->k == Ex::K::Var) c.accumulates = nullptr;
          });
      list[k] = s;
      list.insert(list.begin() + static_cast<std::ptrdiff_t>(k + 1), after.begin(), after.end());
      list.insert(list.begin() + static_cast<std::ptrdiff_t>(k), before.begin(), before.end());
      k += before.size() + after.size();
    }
    promote_list(s->body);
    promote_list(s->else_body);
  }
}

}  // namespace

namespace passes {
void promote(LoopNest& n, const PassContext&) { promote_list(n.body); }
}  // namespace passes

}  // namespace nf::lower

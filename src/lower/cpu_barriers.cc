// The CPU target's barrier pass (passes.h): host threads may not wait for
// each other, so each Barrier of a Cores loop ends a thread region.
#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower::passes {

namespace {

// ThreadIndex -> 0 and ThreadCount -> `count` (code that runs once, after
// the region whose threads it combines).
ExP once(const ExP& e, const ExP& count) {
  if (!e) return e;
  if (e->k == Ex::K::ThreadIndex) return lit(0);
  if (e->k == Ex::K::ThreadCount) return count;
  if (e->args.empty()) return e;
  auto c = std::make_shared<Ex>(*e);
  for (ExP& a : c->args) a = once(a, count);
  return c;
}

void once(std::vector<StmtP>& list, const ExP& count) {
  for (StmtP& s : list) {
    for (ExP* e : {&s->lo, &s->hi, &s->step, &s->init, &s->target, &s->value, &s->count, &s->cond})
      *e = once(*e, count);
    once(s->body, count);
    once(s->else_body, count);
  }
}

// `if (ThreadIndex < 1) B` with no else.
bool first_thread_only(const std::vector<StmtP>& seg) {
  if (seg.size() != 1 || seg[0]->k != Stmt::K::If || !seg[0]->else_body.empty()) return false;
  const Ex& c = *seg[0]->cond;
  return c.k == Ex::K::Arith && c.op == '<' && c.args[0]->k == Ex::K::ThreadIndex && c.args[1]->k == Ex::K::IntLit &&
         c.args[1]->ival == 1;
}

}  // namespace

void cpu_barriers(LoopNest& n, const PassContext&) {
  std::vector<StmtP> out;
  int regions = 0;
  for (StmtP& s : n.body) {
    if (s->k != Stmt::K::For || s->loop != LoopKind::Cores) {
      out.push_back(s);
      continue;
    }
    std::vector<std::vector<StmtP>> segs(1);
    for (StmtP& c : s->body) {
      if (c->k == Stmt::K::Barrier) segs.emplace_back();
      else segs.back().push_back(c);
    }
    if (segs.size() == 1) {
      out.push_back(s);
      continue;
    }
    std::string last;  // the variable holding the threads of the last region
    for (std::vector<StmtP>& seg : segs) {
      if (!last.empty() && first_thread_only(seg)) {
        StmtP b = detail::block();
        b->body = std::move(seg[0]->body);
        once(b->body, var(last));
        out.push_back(b);
        continue;
      }
      StmtP region = detail::cores_loop(s->cond);
      region->body = std::move(seg);
      region->name = last = "nf_used" + std::to_string(regions++);
      out.push_back(region);
    }
  }
  n.body = std::move(out);
}

}  // namespace nf::lower::passes

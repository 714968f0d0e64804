// The unroll pass (passes.h): index-set splitting at the full-tile split.
// Each FullSplit becomes `if (cond) { full path } else { remainder path }`,
// two copies of its nest: on the full path every TileBound is its full-tile
// bound (a literal trip count for the unrolled loops and the tiles their
// parents cover) and every marked loop takes its full-path kind (unrolled,
// or vectorized over whole vectors) without splits; on the remainder path
// the bounds are the clipped ones and the loops keep their kinds. Both
// paths enumerate the points the split's nest enumerates: the full-tile
// bounds equal the clipped ones whenever `cond` holds.
#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

// The expression on one path; unchanged subtrees are shared.
ExP on_path(const ExP& e, bool full) {
  return rewrite_ex(e, [full](const ExP& n) { return n->k == Ex::K::TileBound ? n->args[full ? 0 : 1] : nullptr; });
}

// A deep copy of the statement on one path.
StmtP on_path(const StmtP& s, bool full) {
  return copy_stmt(
      s, [&](const ExP& e) { return on_path(e, full); },
      [&](Stmt& c) {
        if (c.k != Stmt::K::For || !c.unroll) return;
        if (full) {
          c.loop = c.full_kind;
          c.splits.clear();
        }
        c.unroll = false;
      });
}

void split_list(std::vector<StmtP>& list) {
  for (StmtP& s : list) {
    if (s->k != Stmt::K::FullSplit) {
      split_list(s->body);
      split_list(s->else_body);
      continue;
    }
    StmtP branch = if_else(s->cond);
    StmtP full = block(), rest = block();
    for (const StmtP& b : s->body) {
      full->body.push_back(on_path(b, true));
      rest->body.push_back(on_path(b, false));
    }
    branch->body.push_back(full);
    branch->else_body.push_back(rest);
    s = branch;
  }
}

}  // namespace

namespace passes {
void unroll(LoopNest& n, const PassContext&) { split_list(n.body); }
}  // namespace passes

}  // namespace nf::lower

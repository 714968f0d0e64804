// The storage pass (passes.h): where each allocation lives and when it is
// released.
#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower::passes {

namespace {

bool on_heap(Scope s) { return s == Scope::Thread || s == Scope::Kernel; }

// `stack`: bytes of Local allocations live around this list.
void place(std::vector<StmtP>& list, int64_t stack, int64_t budget) {
  for (StmtP& s : list) {
    if (s->k == Stmt::K::Alloc && s->scope == Scope::Local) {
      const bool literal = s->count->k == Ex::K::IntLit;
      const int64_t bytes = literal ? s->count->ival * itemsize(s->dtype) : 0;
      if (!literal || stack + bytes > budget) s->scope = Scope::Thread;
      else stack += bytes;
    }
    place(s->body, stack, budget);
    place(s->else_body, stack, budget);
  }
  // Releases: at the end of the list, or before the first Barrier after the
  // allocation (nothing a thread allocated is seen across one).
  std::vector<StmtP> out;
  std::vector<std::string> live;
  auto release = [&] {
    for (auto it = live.rbegin(); it != live.rend(); ++it) out.push_back(detail::free_stmt(*it));
    live.clear();
  };
  for (StmtP& s : list) {
    if (s->k == Stmt::K::Barrier) release();
    out.push_back(s);
    if (s->k == Stmt::K::Alloc && on_heap(s->scope)) live.push_back(s->name);
  }
  release();
  list = std::move(out);
}

}  // namespace

void storage(LoopNest& n, const PassContext& c) { place(n.body, 0, c.caps.private_bytes); }

}  // namespace nf::lower::passes

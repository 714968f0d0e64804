// The parallelize pass (passes.h), the CPU target's first tail pass: a
// Parallel loop's iterations dealt out to the target's threads.
#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower::passes {

void parallelize(LoopNest& n, const PassContext&) {
  using namespace detail;
  for (StmtP& s : n.body) {
    if (s->k != Stmt::K::For || s->loop != LoopKind::Parallel) continue;
    // Thread t of T runs iterations [N t / T, N (t + 1) / T) in order: all of
    // them once between the threads, a contiguous run each.
    const ExP N = s->hi;
    StmtP mine = std::make_shared<Stmt>(*s);
    mine->loop = LoopKind::Serial;
    mine->cond = nullptr;
    mine->lo = arith('/', mul(N, thread_index()), thread_count());
    mine->hi = arith('/', mul(N, add(thread_index(), lit(1))), thread_count());
    StmtP region = cores_loop(s->cond);
    region->body.push_back(std::move(mine));
    s = std::move(region);
    n.uses_threads = true;
  }
}

}  // namespace nf::lower::passes

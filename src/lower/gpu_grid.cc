// The gpu_grid pass (passes.h), the CUDA target's tail: a Parallel loop's
// iterations dealt out to the device's threads.
#include <stdexcept>

#include "lower/passes.h"

namespace nf::lower::passes {

void gpu_grid(LoopNest& n, const PassContext& c) {
  if (c.caps.threads != Caps::Threads::Grid) throw std::logic_error("gpu_grid: a target without a grid");
  for (StmtP& s : n.body) {
    if (s->k != Stmt::K::For || s->loop != LoopKind::Parallel) continue;
    // Its iterations are independent (passes.h, Parallel): each runs once,
    // on one thread of the grid, grid-stride. Running on one thread or
    // many computes the same, so the condition (whether several threads
    // pay) goes: a GPU kernel has its grid either way.
    s->loop = LoopKind::GpuBlocks;
    s->cond = nullptr;
  }
}

}  // namespace nf::lower::passes

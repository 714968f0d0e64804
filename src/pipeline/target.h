// A Target: what takes a scheduled MdHom to a run on one kind of machine,
// carried by each planned group from its schedule to its launch. The
// schedule is made for the target's machine model; lowering runs the common
// passes (lower/passes.h) and then the target's tail; the renderer spells the
// nest; the compiler turns source into a cached kernel; the launcher binds
// and runs it. The CPU is the first target; CUDA is the next.
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "jit/jit.h"
#include "lower/lower.h"
#include "mdh/mdh.h"
#include "tune/tune.h"

namespace nf::pipeline {

struct Target {
  const char* name;                // the first field of its kernels' keys
  const tune::Asm& (*machine)();   // the machine model schedules are made and tuned for
  std::vector<lower::Pass> tail;   // lowering passes only this target runs
  codegen::Source (*render)(const lower::LoopNest&);
  jit::KernelCache& (*compiler)();  // compiles rendered source; kernels cached by key
  void (*launch)(jit::KernelFn, const mdh::MdHom&, const mdh::Bindings&);

  ::nf::lower::LoopNest lower(const ::nf::lower::KernelSpec& k, const std::string& name) const {
    return ::nf::lower::lower(k, name, tail);
  }
};

// The host's cores: tune::Asm::host(), the parallelize and cpu_barriers passes, render_c,
// clang + ORC (jit::KernelCache), runtime::run_kernel.
const Target& cpu_target();

}  // namespace nf::pipeline

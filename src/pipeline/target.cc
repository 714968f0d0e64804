#include "pipeline/target.h"

#include "lower/passes.h"
#include "runtime/runtime.h"

namespace nf::pipeline {

const Target& cpu_target() {
  static const Target t{
      "cpu",
      &tune::Asm::host,
      {{"parallelize", lower::passes::parallelize}, {"cpu_barriers", lower::passes::cpu_barriers}},
      &codegen::render_c,
      [] -> jit::KernelCache& { return jit::KernelCache::instance(); },
      &runtime::run_kernel,
  };
  return t;
}

}  // namespace nf::pipeline

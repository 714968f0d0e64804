#include "pipeline/target.h"

#include <stdexcept>

#include "lower/passes.h"
#include "pipeline/pipeline.h"
#include "runtime/runtime.h"

namespace nf::pipeline {

namespace {

std::string none() { return ""; }
std::string takes_all(const mdh::MdHom&) { return ""; }

// What the CUDA renderer cannot spell yet: complex numbers (C's _Complex
// and glibc's complex functions have no CUDA counterpart here yet).
std::string cuda_refuses(const mdh::MdHom& h) {
  for (const mdh::Access& a : h.accesses)
    if (is_complex(a.dtype)) return "complex numbers are not lowered for CUDA yet";
  for (const ExprNode& n : h.f.nodes)
    if (is_complex(n.dtype)) return "complex numbers are not lowered for CUDA yet";
  return "";
}

std::string cuda_unavailable() {
  std::string why;
  if (!runtime::cuda_device(&why)) return why;
  const jit::NvrtcInfo n = jit::nvrtc_info();
  if (!n.available) return n.why;
  return "";
}

jit::KernelCache& emulated_cache() {
  static jit::KernelCache* c = new jit::KernelCache(jit::emulated_compiler());
  return *c;
}
jit::KernelCache& cuda_cache() {
  static jit::KernelCache* c = new jit::KernelCache(jit::cuda_compiler());
  return *c;
}

// An NVIDIA GPU's (sm_80 and later): blocks of up to 1024 threads sharing
// 48 KiB (without opting in to more), no SIMD lanes, a thread's private
// arrays in local memory, which the device reserves for every resident
// thread (8 KiB each is 2 GiB over an H200's 270,336 threads).
lower::Caps gpu_caps(bool fp_flags) {
  lower::Caps c;
  c.threads = lower::Caps::Threads::Grid;
  c.max_block_threads = 1024;
  c.block_threads = 128;  // (full occupancy: 16 blocks of an SM's 2,048 threads, under its 32 blocks)
  c.shared_bytes = 48 << 10;
  c.vector_bytes = 0;
  c.fp_flags = fp_flags;
  c.private_bytes = 8 << 10;
  return c;
}

}  // namespace

const Target& cpu_target() {
  static const Target t{
      "cpu",
      &tune::Asm::host,
      {{"parallelize", lower::passes::parallelize}, {"cpu_barriers", lower::passes::cpu_barriers}},
      &codegen::render_c,
      [] -> jit::KernelCache& { return jit::KernelCache::instance(); },
      [](const jit::Kernel& k, const mdh::MdHom& h, const mdh::Bindings& b) {
        runtime::run_kernel(k.fn.load(std::memory_order_acquire), h, b);
      },
      &none,
      &takes_all,
      /*device=*/false,
      /*chains=*/true,
      lower::Caps{},  // (the host's)
  };
  return t;
}

const Target& emulated_target() {
  static const Target t{
      "cuda-emulated",
      &tune::Asm::host,
      {{"gpu_grid", lower::passes::gpu_grid}},
      &codegen::render_cuda,
      &emulated_cache,
      [](const jit::Kernel& k, const mdh::MdHom& h, const mdh::Bindings& b) {
        runtime::run_gpu_kernel(k, h, b, runtime::emulated_device());
      },
      &none,
      &cuda_refuses,
      /*device=*/true,
      /*chains=*/false,
      gpu_caps(/*fp_flags=*/true),  // (the emulated device is the host's CPU)
      &tune::grid_schedule,
  };
  return t;
}

const Target& cuda_target() {
  static const Target t{
      "cuda",
      &tune::Asm::host,
      {{"gpu_grid", lower::passes::gpu_grid}},
      &codegen::render_cuda,
      &cuda_cache,
      [](const jit::Kernel& k, const mdh::MdHom& h, const mdh::Bindings& b) {
        std::string why;
        runtime::GpuDevice* d = runtime::cuda_device(&why);
        if (!d) throw std::runtime_error("numfuse: CUDA: " + why);
        runtime::run_gpu_kernel(k, h, b, *d);
      },
      &cuda_unavailable,
      &cuda_refuses,
      /*device=*/true,
      /*chains=*/false,
      gpu_caps(/*fp_flags=*/false),
      &tune::grid_schedule,
  };
  return t;
}

std::vector<const Target*> all_targets() { return {&cpu_target(), &cuda_target(), &emulated_target()}; }

const Target* find_target(std::string_view name) {
  for (const Target* t : all_targets())
    if (name == t->name) return t;
  return nullptr;
}

const Target& active_target() { return config().target ? *config().target : cpu_target(); }

void set_active_target(const Target& t) {
  const std::string why = t.unavailable();
  if (!why.empty()) throw std::runtime_error("numfuse: the target '" + std::string(t.name) + "' cannot run here: " + why);
  config().target = &t;
}

}  // namespace nf::pipeline

#include "pipeline/target.h"

#include <stdexcept>

#include "lower/passes.h"
#include "pipeline/pipeline.h"
#include "runtime/runtime.h"

namespace nf::pipeline {

namespace {

std::string none() { return ""; }
std::string takes_all(const mdh::MdHom&) { return ""; }

// What the CUDA kernels cannot compute yet: the complex functions that are
// glibc's on the CPU (csqrt, cexp, clog, the trigonometric and hyperbolic
// ones and their inverses, a complex power): the device has no
// counterpart. Complex arithmetic, absolute values, comparisons, sums,
// products and contractions are the device's (codegen: complex structs).
std::string cuda_refuses(const mdh::MdHom& h) {
  for (const ExprNode& n : h.f.nodes) {
    if (n.kind == ExprNode::Kind::Binary && static_cast<BinaryOp>(n.op) == BinaryOp::Power && is_complex(n.dtype))
      return "a complex power is not lowered for CUDA yet";
    if (n.kind != ExprNode::Kind::Unary || n.a < 0 || !is_complex(h.f.nodes[n.a].dtype)) continue;
    switch (static_cast<UnaryOp>(n.op)) {
      case UnaryOp::Sqrt: case UnaryOp::Exp: case UnaryOp::Log: case UnaryOp::Sin: case UnaryOp::Cos:
      case UnaryOp::Tan: case UnaryOp::Arcsin: case UnaryOp::Arccos: case UnaryOp::Arctan: case UnaryOp::Sinh:
      case UnaryOp::Cosh: case UnaryOp::Tanh: case UnaryOp::Arcsinh: case UnaryOp::Arccosh: case UnaryOp::Arctanh:
      case UnaryOp::Exp2: case UnaryOp::Log2: case UnaryOp::Log10:
        return std::string("the complex ") + unary_name(static_cast<UnaryOp>(n.op)) + " is not lowered for CUDA yet";
      default: break;
    }
  }
  return "";
}

std::string cuda_unavailable() {
  std::string why;
  if (!runtime::cuda_device(&why)) return why;
  const jit::NvrtcInfo n = jit::nvrtc_info();
  if (!n.available) return n.why;
  return "";
}

// The emulated device models the GPU the CUDA target is written for (an
// H100/H200's 132 multiprocessors), so its schedules are a real one's.
const tune::Asm& emulated_machine() {
  static const tune::Asm a = tune::Asm::cuda(132, "emulated");
  return a;
}
const tune::Asm& cuda_machine() {
  static const tune::Asm a = [] {
    jit::CudaDriver* d = jit::CudaDriver::get();
    return d ? tune::Asm::cuda(d->multiprocessors(), d->device_name()) : tune::Asm::cuda(132, "unavailable");
  }();
  return a;
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
      {{"parallelize", lower::passes::parallelize},
       {"cpu_barriers", lower::passes::cpu_barriers},
       {"math_blocks", lower::passes::math_blocks}},
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
      &emulated_machine,
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
  };
  return t;
}

const Target& cuda_target() {
  static const Target t{
      "cuda",
      &cuda_machine,
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

// A Target: what takes a scheduled MdHom to a run on one kind of machine,
// carried by each planned group from its schedule to its launch. The
// schedule is made for the target's machine model; lowering runs the common
// passes (lower/passes.h) and then the target's tail; the renderer spells the
// nest; the compiler turns source into a cached kernel; the launcher binds
// and runs it.
//
// The targets: "cpu" (the host's cores), "cuda" (an NVIDIA GPU through NVRTC
// and the driver), "cuda-emulated" (the CUDA target's kernels, the same
// text, run on the host by an emulated device: how the CUDA target is
// proven without a GPU). The active target (Config::target; set_target)
// plans every new group; a group it refuses (refuses()) runs on the CPU.
#pragma once

#include <string>
#include <string_view>
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
  void (*launch)(const jit::Kernel&, const mdh::MdHom&, const mdh::Bindings&);
  // "" where the target can run kernels on this machine, else why not.
  std::string (*unavailable)();
  // "" where its kernels can compute h, else why not (the group runs on the CPU).
  std::string (*refuses)(const mdh::MdHom& h);
  // Its kernels read and write device memory (Buffer::device_data); the
  // CPU's read the host's. A device target's machine is a GPU's
  // (tune::Asm::gpu()): its schedules are grids with device parameters
  // (tune/gpu_model.cc), tuned by running on the device (numfuse.tune).
  bool device = false;
  // Multi-stage kernels (fusion::Chain) are lowered for it.
  bool chains = false;
  // What its machine offers the lowering passes (threads, shared memory,
  // vectors, floating-point flags, private memory).
  ::nf::lower::Caps caps;

  ::nf::lower::LoopNest lower(const ::nf::lower::KernelSpec& k, const std::string& name) const {
    return ::nf::lower::lower(k, name, tail, caps);
  }
};

// The host's cores: tune::Asm::host(), the parallelize and cpu_barriers passes, render_c,
// clang + ORC (jit::KernelCache), runtime::run_kernel.
const Target& cpu_target();
// An NVIDIA GPU: the gpu_grid pass, render_cuda, NVRTC + the driver, runtime::cuda_device.
const Target& cuda_target();
// The CUDA target's kernels on the emulated device (runtime::emulated_device).
const Target& emulated_target();

std::vector<const Target*> all_targets();
// The target named `name`, or nullptr.
const Target* find_target(std::string_view name);

// The target new groups are planned for (Config::target; the CPU by default).
const Target& active_target();
// Makes t the active target. Throws std::runtime_error with t.unavailable()
// where it cannot run here (nothing changes then).
void set_active_target(const Target& t);

}  // namespace nf::pipeline

// Rendering a LoopNest as source code.
//
// C (for clang + OpenMP): the generated file includes no system header; it
// declares the few libm / libomp / libc functions it calls and defines, as
// static inline helpers, only the operations it uses. Operations follow NumPy
// to the bit where C allows it: no FP contraction, NaN-propagating
// maximum/minimum, Python-style floor division and remainder, x86 float->int
// conversion for out-of-range values, defined integer overflow (-fwrapv).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lower/lower.h"

namespace nf::codegen {

// What launching a kernel takes besides its code. A CPU kernel: nothing (one
// call of its entry). A GPU kernel (render_cuda): its phases, run one after
// another, each one __global__ function over a grid of the device's threads
// (a GpuBlocks loop's iterations, grid-stride) or on one thread (the
// statements between such loops); the variables they share live in a frame
// of `frame_bytes` in device memory; each takes the kernel's pointers, int
// and float parameters by value (num_ptrs, num_ints, num_floats of them).
struct LaunchShape {
  struct Phase {
    std::string symbol;
    bool grid = false;
    int64_t threads = 0;  // a grid phase's threads per block, each block taking iterations (0: each thread one)
    // A grid phase whose threads take an iteration each: its blocks' size
    // (LoopNest::grid_threads; the launch keeps the device's resident
    // threads, 2,048 a multiprocessor, whatever the size).
    int64_t block = 256;
    bool operator==(const Phase&) const = default;
  };
  std::vector<Phase> phases;
  int64_t frame_bytes = 0;
  int num_ptrs = 0, num_ints = 0, num_floats = 0;
  bool empty() const { return phases.empty(); }
  // One line of text, and back (the disk cache keeps it with the code).
  std::string serialize() const;
  static LaunchShape parse(const std::string& text);  // std::invalid_argument if malformed
  bool operator==(const LaunchShape&) const = default;
};

struct Source {
  std::string code;
  std::string entry;  // the exported function
  // Compile for the target's widest vectors (LoopNest::wide; the code says
  // so in a comment, so the two forms of a kernel never share a cache entry).
  bool wide = false;
  LaunchShape shape;  // (GPU kernels)
  // (GPU kernels) fused multiply-adds allowed (LoopNest::contract, as the
  // CPU's kernel of the same schedule contracts): NVRTC's --fmad=true; the
  // text says so in a comment and, for the emulation's clang, a pragma.
  bool contract = false;
};

Source render_c(const lower::LoopNest& nest);

// CUDA C++ for NVRTC (or, with the emulation prelude, C for clang: the same
// text runs on the emulated device), from a nest through the CUDA tail
// (lower::passes::gpu_grid): the top level cut into phases at its GpuBlocks
// loops (LaunchShape). The text needs a prelude: cuda_prelude() before it
// for NVRTC; emulation_prelude() before it and emulation_entry() after it
// for clang, whose entry (`entry`, the KernelFn ABI) runs one phase over
// its grid, block after block, thread after thread.
Source render_cuda(const lower::LoopNest& nest);
const std::string& cuda_prelude();
const std::string& emulation_prelude();
std::string emulation_entry(const Source& s);
// Source::wide of rendered code read back from its text (a kernel's source
// kept in the disk cache).
bool renders_wide(const std::string& code);

// The sign rule NumPy's NaN results follow for an operation and float type
// (see scalar_c.h, set_nan_rules), or nullptr if the hardware's NaN stands.
// Tier 0 applies it to the results of its precompiled loops, as kernels do.
const char* nan_rule(bool binary, int op, DType t);
// Names the installed rules; the generation counts installations.
const std::string& nan_rules_id();
uint64_t nan_rules_generation();

}  // namespace nf::codegen

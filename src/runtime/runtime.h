// Running compiled kernels: bind buffers (allocating them on first write),
// pass parameters, call. The caller has released the GIL.
#pragma once

#include "jit/jit.h"
#include "mdh/mdh.h"

namespace nf::runtime {

// Calls `fn` on the bindings of `h`. Buffers of accesses the kernel touches
// are allocated here if they are not yet; untouched ones get nullptr.
void run_kernel(jit::KernelFn fn, const mdh::MdHom& h, const mdh::Bindings& b);

// OpenMP thread count used by kernels.
void set_num_threads(int n);
int num_threads();

}  // namespace nf::runtime

// Running compiled kernels: bind buffers (allocating them on first write),
// pass parameters, call. The caller has released the GIL.
#pragma once

#include "jit/jit.h"
#include "mdh/mdh.h"

namespace nf::runtime {

// Calls `fn` on the bindings of `h`. Buffers of accesses the kernel touches
// are allocated here if they are not yet; untouched ones get nullptr.
void run_kernel(jit::KernelFn fn, const mdh::MdHom& h, const mdh::Bindings& b);

// Threads per kernel (jit::set_threads / jit::threads).
void set_num_threads(int n);
int num_threads();

// libomp writes a registration file named for the process's pid when it
// initializes, and dies with SIGBUS on an empty one a dead process left under
// the same pid. Kernels do not use libomp; code that may (hand-written OpenMP
// reference loops, other extensions) is protected by these:
// forget_stale_openmp_registration() removes such a file named for our pid
// (at import); prepare_openmp() also initializes libomp, cleaning up after a
// registration that failed half way (before running OpenMP code).
void forget_stale_openmp_registration();
void prepare_openmp();

}  // namespace nf::runtime

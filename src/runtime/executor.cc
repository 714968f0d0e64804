#include <dlfcn.h>

#include <vector>

#include "runtime/runtime.h"

namespace nf::runtime {

namespace {
using SetThreads = void (*)(int);
using GetThreads = int (*)();

// libomp is loaded by the JIT; look its controls up lazily.
template <typename F>
F omp_fn(const char* name) {
  void* h = dlopen(NUMFUSE_LIBOMP_NAME, RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen(NUMFUSE_LIBOMP_NAME, RTLD_NOW | RTLD_GLOBAL);
  return h ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}
}  // namespace

void run_kernel(jit::KernelFn fn, const mdh::MdHom& h, const mdh::Bindings& b) {
  std::vector<char*> ptrs(h.accesses.size(), nullptr);
  for (size_t i = 0; i < h.accesses.size(); ++i) {
    const mdh::Access& a = h.accesses[i];
    if (!(a.read || a.written || a.reduced)) continue;
    ptrs[i] = static_cast<char*>(b.buffers[a.ptr]->data()) + b.offsets[a.ptr];
  }
  fn(ptrs.data(), b.ints.data(), b.floats.data());
}

void set_num_threads(int n) {
  static auto f = omp_fn<SetThreads>("omp_set_num_threads");
  if (f && n > 0) f(n);
}

int num_threads() {
  static auto f = omp_fn<GetThreads>("omp_get_max_threads");
  return f ? f() : 1;
}

}  // namespace nf::runtime

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "core/small_vector.h"
#include "runtime/runtime.h"

namespace nf::runtime {

namespace {
using GetThreads = int (*)();

// libomp (used by hand-written reference loops only, see jit.h): look its
// controls up lazily.
template <typename F>
F omp_fn(const char* name) {
  const std::string path = jit::libomp_path();  // (the copy loaded, e.g. a wheel's)
  void* h = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen(NUMFUSE_LIBOMP_NAME, RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen(NUMFUSE_LIBOMP_NAME, RTLD_NOW | RTLD_GLOBAL);
  return h ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}

}  // namespace

// libomp registers every process that initializes it in a file named
// __KMP_REGISTERED_LIB_<pid>_<uid> in /dev/shm (or /tmp): it creates the
// file, sizes it to 1 KiB and maps it. When sizing fails (a file-size limit,
// a full /dev/shm) the file stays behind empty, and the next process that
// gets the same pid (pids wrap at pid_max, often 32768) maps it, reads past
// its end and dies with SIGBUS before running any code of its own. A file
// named for our own pid cannot belong to a live process other than us, so an
// empty one is removed before our libomp initializes (it would read it) and
// again right after (a failed registration of ours leaves one; libomp falls
// back to an environment variable and no longer needs it).

void forget_stale_openmp_registration() {
  char name[96];
  for (const char* dir : {"/dev/shm", "/tmp"}) {
    std::snprintf(name, sizeof name, "%s/__KMP_REGISTERED_LIB_%d_%d", dir, static_cast<int>(getpid()),
                  static_cast<int>(getuid()));
    struct stat st;
    if (lstat(name, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && st.st_size == 0) unlink(name);
  }
}

namespace {
// False until this process (a forked child: again) has initialized libomp
// through prepare_openmp().
std::atomic<bool> g_openmp_ready{false};
}  // namespace

void prepare_openmp() {
  if (g_openmp_ready.load(std::memory_order_acquire)) return;
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] {
    pthread_atfork(nullptr, nullptr, [] { g_openmp_ready.store(false, std::memory_order_relaxed); });
  });
  forget_stale_openmp_registration();
  // Any call into the runtime initializes (and registers) it.
  static auto get = omp_fn<GetThreads>("omp_get_max_threads");
  if (get) get();
  forget_stale_openmp_registration();
  g_openmp_ready.store(true, std::memory_order_release);
}

void run_kernel(jit::KernelFn fn, const mdh::MdHom& h, const mdh::Bindings& b) {
  SmallVector<char*, 32> ptrs(h.accesses.size(), nullptr);
  for (size_t i = 0; i < h.accesses.size(); ++i) {
    const mdh::Access& a = h.accesses[i];
    if (!(a.read || a.written || a.reduced)) continue;
    ptrs[i] = static_cast<char*>(b.buffers[a.ptr]->data()) + b.offsets[a.ptr];
  }
  fn(ptrs.data(), b.ints.data(), b.floats.data());
}

void set_num_threads(int n) { jit::set_threads(n); }

int num_threads() { return jit::threads(); }

}  // namespace nf::runtime

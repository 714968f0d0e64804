// Compile rendered kernels in process: clang (as a library) turns C into an
// optimized LLVM module, ORC LLJIT turns the module into machine code and
// links it against the host services below, libmvec and libm. Kernels are
// cached in memory by their canonical key (and on disk, see DiskCache).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/codegen.h"

namespace llvm::orc {
class JITDylib;
}

namespace nf::jit {

using KernelFn = void (*)(char** ptrs, const int64_t* ints, const double* floats);

// Host services, the only way a kernel reaches threads (kernels are compiled
// without OpenMP; their simd loops are `#pragma clang loop` hints):
//   nf_parallel(body, ctx) runs body(ctx, tid, nt) once for every tid in
//     [0, nt), nt = threads(), as tasks of a TBB arena of that size: on
//     several threads at once when workers are free, all on the calling
//     thread otherwise (bodies must not wait for each other); returns nt.
//     In a forked child (no TBB workers) it runs body(ctx, 0, 1) and returns 1.
//   nf_max_threads() is the nt the next region will have.
extern "C" int64_t nf_parallel(void (*body)(void* ctx, int64_t tid, int64_t nt), void* ctx);
extern "C" int64_t nf_max_threads();
// The threads per kernel: OMP_NUM_THREADS if set, else the cores this process
// may use. set_threads throws std::invalid_argument below 1.
void set_threads(int n);
int threads();
// CPU compiles running now (on any thread: the import's warm-up, background
// compiles). Tier 0 runs on one thread meanwhile: a worker thread competing
// with a compile for a core stalls a parallel region by a time slice.
int compiles_running();
// The file of the libomp this module is linked against, as loaded (a wheel
// carries its own copy under another name; the system's may be absent).
std::string libomp_path();

// What kernels are compiled with and for (numfuse.show_config): LLVM's
// version, the target triple, the host CPU and its enabled features (sorted).
struct TargetInfo {
  std::string llvm_version, triple, cpu;
  std::vector<std::string> features;
};
TargetInfo target_info();

struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CompileStats {
  std::atomic<int64_t> compiles{0};
  std::atomic<int64_t> memory_hits{0};
  std::atomic<int64_t> disk_hits{0};
  std::atomic<int64_t> compile_ns{0};   // frontend + JIT code generation
  std::atomic<int64_t> disk_load_ns{0};
  std::atomic<int64_t> quick_compiles{0};  // of `compiles`, compiled Opt::Quick
  std::atomic<int64_t> upgrades{0};        // quick kernels recompiled Opt::Full
  std::atomic<int64_t> upgrade_ns{0};
  // The time of each of the first kCompileTimesKept compiles, in order (a
  // median per kernel, not per program: benchmarks/bench_compile.py).
  static constexpr size_t kCompileTimesKept = 4096;
  void note_compile_ns(int64_t ns) {
    std::lock_guard<std::mutex> lock(times_mu);
    if (compile_times_ns.size() < kCompileTimesKept) compile_times_ns.push_back(ns);
  }
  std::vector<int64_t> compile_times() const {
    std::lock_guard<std::mutex> lock(times_mu);
    return compile_times_ns;
  }

 private:
  mutable std::mutex times_mu;
  std::vector<int64_t> compile_times_ns;
};

// How much a compile optimizes. Full: LLVM's O3 pipeline and -O3 code
// generation. Quick: a short pass pipeline of what the kernels need of -O3
// (inlining, canonicalization, invariant hoisting, libmvec, the loop
// vectorizer; about half the time) and LLVM's fast code generation (fast
// instruction selection and register allocation; about a quarter of the
// time). A kernel compiled Quick is recompiled Full once it has run long
// enough to pay for it (KernelCache::upgrade).
enum class Opt : uint8_t { Quick, Full };

// A kernel in the cache. Its entry point can be replaced by a better one
// while it is in use (an upgrade from Quick to Full): callers read `fn` for
// every launch.
struct Kernel : std::enable_shared_from_this<Kernel> {
  // The entry point: the CPU's kernel, or an emulated device's dispatcher
  // (codegen: emulation_entry). A real device's kernel has none: its phases
  // are `functions` of `module`. Set before fn (or functions) is published.
  std::atomic<KernelFn> fn{nullptr};
  codegen::LaunchShape shape;
  std::shared_ptr<void> module;   // keeps a device module loaded
  std::vector<void*> functions;   // per shape phase: the device's function handle
  std::atomic<bool> quick{false};     // compiled Opt::Quick, not yet upgraded
  std::atomic<int64_t> quick_ns{0};   // time its quick code has run
  std::atomic<bool> upgrading{false}; // an upgrade was asked for (once)
  std::atomic<uint32_t> launches{0};  // launches of its quick code (timing samples them)
  std::string key;
};
using KernelRef = std::shared_ptr<Kernel>;

// A loaded kernel's code, as a Compiler returns it (Kernel's fields).
struct Code {
  KernelFn fn = nullptr;
  codegen::LaunchShape shape;
  std::shared_ptr<void> module;
  std::vector<void*> functions;
};

// A target's compiler: rendered source in, loaded code out. The kernel
// caches (KernelCache, DiskCache) key everything by id() too.
class Compiler {
 public:
  virtual ~Compiler() = default;
  // What, besides the kernel's own key, decides its code: the compiler,
  // its version and flags, the device architecture.
  virtual std::string id() const = 0;
  // Compiles and loads `src` under the unique name `symbol`. `object`
  // (optional) receives what the disk cache keeps (empty: nothing).
  // Throws CompileError.
  virtual Code compile(const codegen::Source& src, const std::string& symbol, std::string* object, Opt opt) = 0;
  // Loads what compile() gave as `object` for `symbol`. Throws CompileError.
  virtual Code load(const std::string& object, const std::string& symbol) = 0;
  // Whether Opt::Quick compiles differ from Full ones (then a Quick kernel
  // that runs long enough is recompiled Full: KernelCache::upgrade).
  virtual bool has_quick() const { return false; }
};

// The CPU's compiler (CpuCompiler) as a Compiler.
Compiler& cpu_compiler();

class CpuCompiler {
 public:
  static CpuCompiler& instance();
  // Compiles `src` and returns its entry point. Thread-safe. Throws CompileError.
  // `symbol` must be unique per distinct source. If `object` is given it
  // receives the relocatable object file (for the disk cache).
  KernelFn compile(const codegen::Source& src, const std::string& symbol, std::string* object = nullptr,
                   Opt opt = Opt::Full);
  // Compiles hand-written C with OpenMP's own code generation (`#pragma omp
  // parallel for` and libomp calls): the reference loops of the benchmarks
  // and tests. Returns the function `symbol` of `source`.
  KernelFn compile_openmp_c(const std::string& source, const std::string& symbol);
  // Links a previously compiled object file and returns `symbol` from it.
  KernelFn load_object(const std::string& object, const std::string& symbol);
  // Starts compiling a trivial kernel on a background thread, so the
  // one-time costs (LLVM and clang initialization, paging in the libraries)
  // are paid while the program is still recording. wait_warm_up() joins it.
  void warm_up_async();
  void wait_warm_up();
  // The cc1 flags used (part of every cache key: other flags, other code).
  std::string flags_id() const;
  // Whether Full compiles divide by loop invariants with fused multiply-adds
  // (ExactDivisionPass; only where the CPU has them). On by default; off
  // keeps the divider, to measure the pass (numfuse.config(exact_division=)).
  // A change applies to kernels compiled after it.
  void set_exact_division(bool on);
  bool exact_division() const;

 private:
  CpuCompiler();
  llvm::orc::JITDylib& new_dylib(const std::string& symbol, bool openmp = false);
  KernelFn compile_with(const codegen::Source& src, const std::string& symbol, std::string* object, bool openmp,
                        Opt opt);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Persistent cache of compiled objects, shared by every process of the user.
// Default location $XDG_CACHE_HOME/numfuse (or ~/.cache/numfuse); override
// with NUMFUSE_CACHE_DIR. The directory is owner-only (0700), entries are
// written atomically (temporary file + rename, mode 0600), and an entry is
// loaded only if it is the user's own file, carries the full key and its
// checksum matches. Any problem (unwritable, read-only, corrupt, truncated,
// foreign) makes the cache step aside: the kernel is compiled instead.
class DiskCache {
 public:
  static DiskCache& instance();
  // Re-initializes on a directory ("" = the default location).
  void configure(const std::string& dir);
  bool enabled() const;
  std::string directory() const;
  std::string status() const;  // "ok", or why the cache is off
  // Set when the directory was refused as unsafe (another owner, writable
  // by others): the Python layer shows it as a warning once.
  std::string take_warning();
  bool load(const std::string& key, std::string* object);
  // The same for the key whose hash64 is key_hash; `key()` makes the key,
  // called only where an entry is there to be checked against it.
  bool load(uint64_t key_hash, const std::function<std::string()>& key, std::string* object);
  void store(const std::string& key, const std::string& object);
  size_t clear();  // removes the user's entries; returns how many
  // Changes when the directory is configured again or cleared (what a
  // remembered miss was a miss in).
  uint64_t generation() const;

 private:
  DiskCache();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A target's cache: canonical key -> loaded kernel, compiled by its
// Compiler (in memory; on disk through DiskCache, keyed by the compiler's id).
class KernelCache {
 public:
  explicit KernelCache(Compiler& compiler);
  // The CPU's.
  static KernelCache& instance();
  Compiler& compiler() const;
  // Returns the kernel for `key`, calling `make` (once per key, even with
  // concurrent callers) to produce its source on a miss, compiled at `opt`.
  // `hit`: found in memory; `disk_hit`: loaded from the disk cache (no compile).
  // The disk cache keeps a Full object over a Quick one.
  KernelRef get(const std::string& key, const std::function<codegen::Source()>& make, Opt opt = Opt::Full,
                bool* hit = nullptr, bool* disk_hit = nullptr);
  // The kernel for `key` if it is ready without compiling: compiled before
  // (in this process), or loaded now from the disk cache; else nullptr (a
  // compile of it may be under way on another thread).
  KernelRef try_get(const std::string& key, bool* disk_hit = nullptr);
  // Recompiles a Quick kernel Opt::Full from its source (kept in memory, or
  // in the disk cache for a kernel loaded from there), swaps its entry point
  // and stores the Full object on disk. Blocking; a no-op for a Full kernel.
  // The Quick code stays loaded (a launch may still be running it).
  void upgrade(const KernelRef& k);
  // The source a cached kernel was compiled from ("" if unknown).
  std::string source_of(const std::string& key) const;
  void clear();
  size_t size() const;
  CompileStats& stats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// CUDA. NVRTC and the driver API are loaded with dlopen at first use, never
// linked: without them (no toolkit, no driver, no GPU) numfuse imports and
// runs on the CPU all the same; what is missing is said in plain words.

// NVRTC: the library found (the one set_nvrtc_library named -- the Python
// layer names the nvidia-cuda-nvrtc-cu12 wheel's where it is installed --,
// else the CUDA toolkit's), or why there is none.
struct NvrtcInfo {
  bool available = false;
  std::string path, version, why;
};
void set_nvrtc_library(const std::string& path);  // before first use
NvrtcInfo nvrtc_info();
// A cubin (and, if asked, PTX) of CUDA C++ `source` for the GPU
// architecture sm_<arch> (80, 90, ...): NVRTC with --fmad=false (the CPU's
// rounding; `fmad`: --fmad=true, for a kernel whose CPU form contracts too)
// and -default-device; `log` gets NVRTC's log, with ptxas's resource report
// (registers, spills, shared memory) when `verbose`. Throws CompileError
// with the log.
struct CudaBinary {
  std::string cubin, ptx, log;
};
CudaBinary nvrtc_compile(const std::string& source, const std::string& name, int arch, bool want_ptx = false,
                         bool verbose = false, bool fmad = false);

// The CUDA driver API on device 0: its primary context, memory and
// launches. get() loads it on first use; nullptr (with `why`) where the
// driver or a GPU is missing (cuInit 100: no device).
class CudaDriver {
 public:
  static CudaDriver* get(std::string* why = nullptr);
  int arch() const;          // 90 for sm_90
  int multiprocessors() const;
  std::string device_name() const;
  std::string version() const;  // the driver's CUDA version
  void* alloc(int64_t bytes);   // throws std::bad_alloc when the device has none left
  void free(void* p);
  void to_device(void* dst, const void* src, int64_t bytes);
  void to_host(void* dst, const void* src, int64_t bytes);
  void copy(void* dst, const void* src, int64_t bytes);  // device to device
  int ordinal() const;  // the device's (0: numfuse uses the first)
  // A module of `cubin` and its functions `names` (in order); the module
  // stays loaded while the returned handle lives. Throws CompileError.
  std::shared_ptr<void> load(const std::string& cubin, const std::vector<std::string>& names,
                             std::vector<void*>* functions);
  // Runs `fn` on a grid of `blocks` x `threads` with its parameters, and
  // waits for it. Throws std::runtime_error with the driver's message.
  void launch(void* fn, int64_t blocks, int64_t threads, void** params);

 private:
  CudaDriver() = default;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The CUDA targets' compilers (codegen: render_cuda's text). cuda_compiler:
// NVRTC to a cubin for the driver's device, loaded with the driver.
// emulated_compiler: the same text, with the emulation prelude, compiled by
// clang for the host (CpuCompiler): its entry runs one phase on the
// emulated device (runtime: emulated_device). With check_archs set, the
// emulated compiler also compiles every kernel with NVRTC for each of those
// architectures and fails on an error, a register spill above
// kMaxSpillBytes or shared memory above the device's limit: the proof that
// the kernels it runs would compile for a GPU.
Compiler& cuda_compiler();
Compiler& emulated_compiler();
void set_check_archs(const std::vector<int>& archs);
std::vector<int> check_archs();
constexpr int64_t kMaxSpillBytes = 512;
constexpr int64_t kMaxSharedBytes = 48 << 10;  // (a block's static shared memory: lower::Caps::shared_bytes)
// Kernels the check compiled, and the most registers / spill bytes /
// static shared memory bytes seen: since the process started, or (`since_mark`)
// since the last mark_check_stats() (a test's own kernels).
struct CheckStats {
  int64_t kernels = 0, compiles = 0, max_registers = 0, max_spill_bytes = 0, max_shared_bytes = 0;
};
CheckStats check_stats(bool since_mark = false);
void mark_check_stats();

// Stable 64-bit hash (FNV-1a) for symbol names and file names.
uint64_t hash64(const std::string& s);
// hash64 of a string continued by s, from the hash h of its beginning:
// hash64(a + b) == hash64_more(hash64(a), b).
uint64_t hash64_more(uint64_t h, std::string_view s);

}  // namespace nf::jit

// Compile rendered kernels in process: clang (as a library) turns C into an
// optimized LLVM module, ORC LLJIT turns the module into machine code and
// links it against libomp, libmvec and libm. Kernels are cached in memory by
// their canonical key (and on disk, see DiskCache).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "codegen/codegen.h"

namespace nf::jit {

using KernelFn = void (*)(char** ptrs, const int64_t* ints, const double* floats);

struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CompileStats {
  std::atomic<int64_t> compiles{0};
  std::atomic<int64_t> memory_hits{0};
  std::atomic<int64_t> disk_hits{0};
  std::atomic<int64_t> compile_ns{0};   // frontend + JIT code generation
  std::atomic<int64_t> disk_load_ns{0};
};

class CpuCompiler {
 public:
  static CpuCompiler& instance();
  // Compiles `src` and returns its entry point. Thread-safe. Throws CompileError.
  // `symbol` must be unique per distinct source.
  KernelFn compile(const codegen::Source& src, const std::string& symbol);
  // The cc1 flags used (part of every cache key: other flags, other code).
  const std::string& flags_id() const;

 private:
  CpuCompiler();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Process-wide cache: canonical key -> loaded kernel.
class KernelCache {
 public:
  static KernelCache& instance();
  // Returns the kernel for `key`, calling `make` (once per key, even with
  // concurrent callers) to produce its source on a miss.
  KernelFn get(const std::string& key, const std::function<codegen::Source()>& make, bool* hit = nullptr);
  // The source a cached kernel was compiled from ("" if unknown).
  std::string source_of(const std::string& key) const;
  void clear();
  size_t size() const;
  CompileStats& stats();

 private:
  KernelCache();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Stable 64-bit hash (FNV-1a) for symbol names and file names.
uint64_t hash64(const std::string& s);

}  // namespace nf::jit

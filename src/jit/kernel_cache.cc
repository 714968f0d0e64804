// In-memory kernel cache. A concurrent map from canonical key to an entry
// whose kernel is compiled exactly once (std::call_once), so concurrent
// flushes that meet the same new kernel compile it once and share it.
#include <atomic>
#include <chrono>
#include <mutex>

#include <tbb/concurrent_hash_map.h>

#include "build_id.h"
#include "codegen/scalar_c.h"
#include "jit/jit.h"

namespace nf::jit {

namespace {
// The code-generation rules (a hash of their sources, see cmake/build_id.cmake)
// and the compiler are part of every persistent key.
constexpr const char* kCacheVersion = "numfuse-0.1/" NUMFUSE_BUILD_ID "/llvm19";

int64_t elapsed_ns(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

struct Entry {
  std::once_flag once;
  KernelFn fn = nullptr;
  std::atomic<KernelFn> ready{nullptr};  // fn, once the once has completed
  std::string source;
  std::exception_ptr error;
};
}  // namespace

struct KernelCache::Impl {
  tbb::concurrent_hash_map<std::string, std::shared_ptr<Entry>> map;
  CompileStats stats;
};

KernelCache::KernelCache() : impl_(new Impl) {}

KernelCache& KernelCache::instance() {
  static KernelCache* c = new KernelCache();
  return *c;
}

CompileStats& KernelCache::stats() { return impl_->stats; }

size_t KernelCache::size() const { return impl_->map.size(); }

void KernelCache::clear() { impl_->map.clear(); }

std::string KernelCache::source_of(const std::string& key) const {
  decltype(impl_->map)::const_accessor acc;
  if (!impl_->map.find(acc, key)) return "";
  return acc->second->source;
}

namespace {
std::string full_key_of(const std::string& key) {
  // Everything that changes the machine code is part of the persistent key.
  return std::string(kCacheVersion) + "|" + CpuCompiler::instance().flags_id() + "|" + codegen::nan_rules_id() + "|" +
         key;
}
}  // namespace

KernelFn KernelCache::try_get(const std::string& key, bool* disk_hit) {
  if (disk_hit) *disk_hit = false;
  std::shared_ptr<Entry> e;
  {
    decltype(impl_->map)::const_accessor acc;
    if (impl_->map.find(acc, key)) e = acc->second;
  }
  if (e) return e->ready.load(std::memory_order_acquire);  // (nullptr while it compiles)
  const std::string full_key = full_key_of(key);
  std::string object;
  if (!DiskCache::instance().load(full_key, &object)) return nullptr;
  auto t0 = std::chrono::steady_clock::now();
  KernelFn fn = nullptr;
  try {
    fn = CpuCompiler::instance().load_object(object, "nf_k" + std::to_string(hash64(full_key)));
  } catch (const CompileError&) {
    return nullptr;
  }
  {
    decltype(impl_->map)::accessor acc;
    if (impl_->map.insert(acc, key)) acc->second = std::make_shared<Entry>();
    e = acc->second;
  }
  bool mine = false;
  std::call_once(e->once, [&] {
    e->fn = fn;
    e->ready.store(fn, std::memory_order_release);
    mine = true;
  });
  if (mine) {
    impl_->stats.disk_hits++;
    impl_->stats.disk_load_ns += elapsed_ns(t0);
    if (disk_hit) *disk_hit = true;
  }
  return e->ready.load(std::memory_order_acquire);
}

KernelFn KernelCache::get(const std::string& key, const std::function<codegen::Source()>& make, bool* hit,
                         bool* disk_hit) {
  std::shared_ptr<Entry> e;
  {
    decltype(impl_->map)::accessor acc;
    if (impl_->map.insert(acc, key)) acc->second = std::make_shared<Entry>();
    e = acc->second;
  }
  bool compiled_here = false;
  std::call_once(e->once, [&] {
    compiled_here = true;
    try {
      CpuCompiler& cc = CpuCompiler::instance();
      const std::string full_key = full_key_of(key);
      const std::string symbol = "nf_k" + std::to_string(hash64(full_key));
      auto t0 = std::chrono::steady_clock::now();
      std::string object;
      if (DiskCache::instance().load(full_key, &object)) {
        try {
          e->fn = cc.load_object(object, symbol);
          e->ready.store(e->fn, std::memory_order_release);
          impl_->stats.disk_hits++;
          impl_->stats.disk_load_ns += elapsed_ns(t0);
          return;
        } catch (const CompileError&) {
          // An entry that verifies but does not link (e.g. from another
          // libm): compile instead.
        }
      }
      codegen::Source src = make();
      e->source = src.code;
      e->fn = cc.compile(src, symbol, &object);
      e->ready.store(e->fn, std::memory_order_release);
      impl_->stats.compiles++;
      impl_->stats.compile_ns += elapsed_ns(t0);
      if (!object.empty()) DiskCache::instance().store(full_key, object);
    } catch (...) {
      e->error = std::current_exception();
    }
  });
  if (e->error) {
    // Forget the failed entry so a later attempt (e.g. after a fix of the
    // environment) compiles again, then report.
    impl_->map.erase(key);
    std::rethrow_exception(e->error);
  }
  if (!compiled_here) impl_->stats.memory_hits++;
  if (hit) *hit = !compiled_here;
  if (disk_hit) *disk_hit = compiled_here && e->source.empty();
  return e->fn;
}

}  // namespace nf::jit

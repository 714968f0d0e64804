// In-memory kernel cache. A concurrent map from canonical key to an entry
// whose kernel is compiled exactly once (std::call_once), so concurrent
// flushes that meet the same new kernel compile it once and share it.
#include <atomic>
#include <chrono>
#include <mutex>
#include <unordered_set>

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
  KernelRef k = std::make_shared<Kernel>();
  codegen::Source source;  // what it was compiled from (empty when loaded from disk)
  std::exception_ptr error;
  std::mutex upgrade_mu;   // one upgrade at a time
};
}  // namespace

struct KernelCache::Impl {
  explicit Impl(Compiler& c) : compiler(c) {}
  Compiler& compiler;
  tbb::concurrent_hash_map<std::string, std::shared_ptr<Entry>> map;
  CompileStats stats;
  // Keys try_get found neither here nor on disk (in the disk cache's
  // `absent_generation`): a loop body's groups share one kernel, and each
  // asked the disk again (two file opens, about 8 us, per group of a
  // program's first window) until its compile was queued. A key compiled
  // since is in `map`, which try_get reads first; a kernel another process
  // stores meanwhile is still found by get(), which reads the disk before
  // it compiles. Bounded: forgotten at kMaxAbsent keys.
  std::mutex absent_mu;
  std::unordered_set<std::string> absent;
  uint64_t absent_generation = 0;
  static constexpr size_t kMaxAbsent = 4096;
  bool known_absent(const std::string& key) {
    const uint64_t gen = DiskCache::instance().generation();
    std::lock_guard<std::mutex> lock(absent_mu);
    if (gen != absent_generation) {
      absent.clear();
      absent_generation = gen;
    }
    return absent.count(key) != 0;
  }
  void note_absent(const std::string& key) {
    std::lock_guard<std::mutex> lock(absent_mu);
    if (absent.size() >= kMaxAbsent) absent.clear();
    absent.insert(key);
  }
};

KernelCache::KernelCache(Compiler& compiler) : impl_(new Impl(compiler)) {}

KernelCache& KernelCache::instance() {
  static KernelCache* c = new KernelCache(cpu_compiler());
  return *c;
}

Compiler& KernelCache::compiler() const { return impl_->compiler; }

CompileStats& KernelCache::stats() { return impl_->stats; }

size_t KernelCache::size() const { return impl_->map.size(); }

void KernelCache::clear() {
  impl_->map.clear();
  std::lock_guard<std::mutex> lock(impl_->absent_mu);
  impl_->absent.clear();  // (what was compiled since is on disk now)
}

std::string KernelCache::source_of(const std::string& key) const {
  decltype(impl_->map)::const_accessor acc;
  if (!impl_->map.find(acc, key)) return "";
  return acc->second->source.code;
}

namespace {
// Everything that changes the machine code is part of the persistent key:
// this prefix, then the kernel's key.
std::string key_prefix_of(const Compiler& c) {
  return std::string(kCacheVersion) + "|" + c.id() + "|" + codegen::nan_rules_id() + "|";
}
std::string full_key_of(const Compiler& c, const std::string& key) { return key_prefix_of(c) + key; }

// hash64 of the persistent key of `key`: the prefix's hash is the same for
// every kernel of a compiler (a few kilobytes of flags, hashed byte by byte,
// were most of a disk probe's work), so it is kept, per thread, with the
// prefix it hashed.
uint64_t full_key_hash(const Compiler& c, const std::string& key) {
  thread_local std::string prefix;
  thread_local uint64_t prefix_hash = 0;
  std::string now = key_prefix_of(c);
  if (now != prefix || prefix.empty()) {
    prefix_hash = hash64(now);
    prefix = std::move(now);
  }
  return hash64_more(prefix_hash, key);
}

// Publishes loaded code in k (its entry point last: a reader that sees it
// sees the rest).
void install(Kernel& k, Code&& c, bool quick) {
  k.shape = std::move(c.shape);
  k.module = std::move(c.module);
  k.functions = std::move(c.functions);
  k.quick.store(quick);
  k.fn.store(c.fn, std::memory_order_release);
}

// Whether k holds code (an entry point or device functions).
bool ready(const Kernel& k) { return k.fn.load(std::memory_order_acquire) || !k.functions.empty(); }
// The disk cache's names for a kernel: its Full object, its Quick object
// (kept until a Full one exists), and its source (so a Quick kernel loaded
// from disk can still be upgraded).
constexpr std::string_view kQuickSuffix = "|quick";
std::string quick_key_of(const std::string& full_key) { return full_key + std::string(kQuickSuffix); }
std::string source_key_of(const std::string& full_key) { return full_key + "|source"; }
std::string symbol_of(const std::string& disk_key) { return "nf_k" + std::to_string(hash64(disk_key)); }

// Loads the best object the disk cache has for `key` into `k` (the full
// key's string is made only where an entry is there to check it against).
bool load_from_disk(Compiler& c, const std::string& key, Kernel& k) {
  std::string object;
  const uint64_t full_hash = full_key_hash(c, key);
  for (bool quick : {false, true}) {
    if (quick && !c.has_quick()) break;
    const uint64_t h = quick ? hash64_more(full_hash, kQuickSuffix) : full_hash;
    auto disk_key = [&] {
      const std::string full = full_key_of(c, key);
      return quick ? quick_key_of(full) : full;
    };
    if (!DiskCache::instance().load(h, disk_key, &object)) continue;
    try {
      install(k, c.load(object, "nf_k" + std::to_string(h)), quick);  // (symbol_of the disk key)
      return true;
    } catch (const CompileError&) {
      // An entry that verifies but does not link (e.g. from another libm).
    }
  }
  return false;
}
}  // namespace

KernelRef KernelCache::try_get(const std::string& key, bool* disk_hit) {
  if (disk_hit) *disk_hit = false;
  std::shared_ptr<Entry> e;
  {
    decltype(impl_->map)::const_accessor acc;
    if (impl_->map.find(acc, key)) e = acc->second;
  }
  if (e) return ready(*e->k) ? e->k : nullptr;  // (not while it compiles)
  if (impl_->known_absent(key)) return nullptr;
  auto t0 = std::chrono::steady_clock::now();
  auto k = std::make_shared<Kernel>();
  k->key = key;
  if (!load_from_disk(impl_->compiler, key, *k)) {
    impl_->note_absent(key);
    return nullptr;
  }
  {
    decltype(impl_->map)::accessor acc;
    if (impl_->map.insert(acc, key)) acc->second = std::make_shared<Entry>();
    e = acc->second;
  }
  bool mine = false;
  std::call_once(e->once, [&] {
    e->k = k;
    mine = true;
  });
  if (mine) {
    impl_->stats.disk_hits++;
    impl_->stats.disk_load_ns += elapsed_ns(t0);
    if (disk_hit) *disk_hit = true;
  }
  return ready(*e->k) ? e->k : nullptr;
}

KernelRef KernelCache::get(const std::string& key, const std::function<codegen::Source()>& make, Opt opt, bool* hit,
                           bool* disk_hit) {
  std::shared_ptr<Entry> e;
  {
    decltype(impl_->map)::accessor acc;
    if (impl_->map.insert(acc, key)) acc->second = std::make_shared<Entry>();
    e = acc->second;
  }
  bool compiled_here = false, loaded = false;
  std::call_once(e->once, [&] {
    compiled_here = true;
    try {
      Kernel& k = *e->k;
      k.key = key;
      Compiler& c = impl_->compiler;
      const std::string full_key = full_key_of(c, key);
      auto t0 = std::chrono::steady_clock::now();
      if (load_from_disk(c, key, k)) {
        loaded = true;
        impl_->stats.disk_hits++;
        impl_->stats.disk_load_ns += elapsed_ns(t0);
        return;
      }
      e->source = make();
      const bool quick = opt == Opt::Quick && c.has_quick();
      const std::string disk_key = quick ? quick_key_of(full_key) : full_key;
      std::string object;
      install(k, c.compile(e->source, symbol_of(disk_key), &object, quick ? Opt::Quick : Opt::Full), quick);
      impl_->stats.compiles++;
      if (quick) impl_->stats.quick_compiles++;
      const int64_t ns = elapsed_ns(t0);
      impl_->stats.compile_ns += ns;
      impl_->stats.note_compile_ns(ns);
      if (!object.empty()) {
        DiskCache::instance().store(disk_key, object);
        if (quick) DiskCache::instance().store(source_key_of(full_key), e->source.entry + "\n" + e->source.code);
      }
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
  if (disk_hit) *disk_hit = compiled_here && loaded;
  return e->k;
}

void KernelCache::upgrade(const KernelRef& k) {
  if (!k || !k->quick.load()) return;
  std::shared_ptr<Entry> e;
  {
    decltype(impl_->map)::const_accessor acc;
    if (impl_->map.find(acc, k->key)) e = acc->second;
  }
  if (!e || e->k != k) return;  // the cache was cleared since
  std::lock_guard<std::mutex> lock(e->upgrade_mu);
  if (!k->quick.load()) return;
  Compiler& c = impl_->compiler;
  const std::string full_key = full_key_of(c, k->key);
  codegen::Source src = e->source;
  if (src.code.empty()) {
    std::string text;
    const size_t nl = DiskCache::instance().load(source_key_of(full_key), &text) ? text.find('\n') : std::string::npos;
    if (nl == std::string::npos) {
      k->quick.store(false);  // no source to recompile: it stays as it is
      return;
    }
    src.entry = text.substr(0, nl);
    src.code = text.substr(nl + 1);
    src.wide = codegen::renders_wide(src.code);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::string object;
  KernelFn fn = c.compile(src, symbol_of(full_key), &object, Opt::Full).fn;
  k->fn.store(fn, std::memory_order_release);
  k->quick.store(false);
  impl_->stats.upgrades++;
  impl_->stats.upgrade_ns += elapsed_ns(t0);
  if (!object.empty()) DiskCache::instance().store(full_key, object);
}

}  // namespace nf::jit

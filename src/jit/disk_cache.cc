// The on-disk kernel cache (see jit.h for the guarantees).
//
// Entry file  <dir>/<hash64(key) in hex>.nfk :
//   "NFK1" | u64 key length | key | u64 object length | u64 FNV-1a(object) | object
#include <atomic>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/files.h"
#include "jit/jit.h"

namespace nf::jit {

namespace {

constexpr char kMagic[4] = {'N', 'F', 'K', '1'};
// Larger entries are not kernels numfuse wrote: not even read.
constexpr int64_t kMaxEntryBytes = int64_t(64) << 20;

std::string default_dir() {
  if (const char* d = std::getenv("NUMFUSE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/numfuse";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/numfuse";
  return "";
}

bool mkdirs(const std::string& path) {
  if (path.empty()) return false;
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !mkdirs(path.substr(0, slash))) return false;
  return mkdir(path.c_str(), 0700) == 0 || errno == EEXIST;
}

void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
bool get_u64(const std::string& s, size_t& pos, uint64_t* v) {
  if (pos + 8 > s.size()) return false;
  std::memcpy(v, s.data() + pos, 8);
  pos += 8;
  return true;
}

std::string hex(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

}  // namespace

struct DiskCache::Impl {
  mutable std::mutex mu;
  std::string dir;
  std::string status = "not initialized";
  std::string warning;
  bool on = false;
  bool read_only = false;
  std::atomic<uint64_t> generation{0};
};

DiskCache::DiskCache() : impl_(new Impl) { configure(""); }

DiskCache& DiskCache::instance() {
  static DiskCache* c = new DiskCache();
  return *c;
}

uint64_t DiskCache::generation() const { return impl_->generation.load(std::memory_order_acquire); }

void DiskCache::configure(const std::string& requested) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->generation.fetch_add(1, std::memory_order_acq_rel);
  impl_->on = false;
  impl_->dir = requested.empty() ? default_dir() : requested;
  if (impl_->dir.empty()) {
    impl_->status = "off: no cache directory (set NUMFUSE_CACHE_DIR or HOME)";
    return;
  }
  if (!mkdirs(impl_->dir)) {
    impl_->status = "off: cannot create " + impl_->dir + ": " + std::strerror(errno);
    return;
  }
  // Kernel objects are code this process will run: a directory someone
  // else owns or can write to is refused (kernels are compiled in memory).
  if (std::string why = files::unsafe_directory(impl_->dir); !why.empty()) {
    impl_->status = "off: " + impl_->dir + " is " + why;
    impl_->warning = "numfuse: the kernel cache directory " + impl_->dir + " is " + why +
                     "; it is not used (kernels are compiled in memory). Use a private directory "
                     "(NUMFUSE_CACHE_DIR, mode 0700).";
    return;
  }
  impl_->on = true;
  // NUMFUSE_CACHE_MODE=readonly: use a (shared, pre-built) cache without writing to it.
  const char* mode = std::getenv("NUMFUSE_CACHE_MODE");
  impl_->read_only = (mode && std::string(mode) == "readonly") || access(impl_->dir.c_str(), W_OK) != 0;
  impl_->status = impl_->read_only ? "read-only (entries are loaded, not written)" : "ok";
}

std::string DiskCache::take_warning() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::string w;
  w.swap(impl_->warning);
  return w;
}

bool DiskCache::enabled() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->on;
}

std::string DiskCache::directory() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->dir;
}

std::string DiskCache::status() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->status;
}

bool DiskCache::load(const std::string& key, std::string* object) {
  return load(hash64(key), [&] { return key; }, object);
}

bool DiskCache::load(uint64_t key_hash, const std::function<std::string()>& make_key, std::string* object) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->on) return false;
    dir = impl_->dir;
  }
  const std::string path = dir + "/" + hex(key_hash) + ".nfk";
  std::string data, why;
  if (!files::read_private(path, kMaxEntryBytes, &data, &why)) return false;
  if (data.size() < 4 || std::memcmp(data.data(), kMagic, 4) != 0) return false;
  const std::string key = make_key();
  size_t pos = 4;
  uint64_t klen, olen, sum;
  if (!get_u64(data, pos, &klen) || klen > data.size() - pos) return false;
  if (data.compare(pos, klen, key) != 0 || klen != key.size()) return false;  // a hash collision
  pos += klen;
  if (!get_u64(data, pos, &olen) || !get_u64(data, pos, &sum)) return false;
  if (olen != data.size() - pos) return false;  // truncated or padded
  object->assign(data, pos, olen);
  return hash64(*object) == sum;
}

void DiskCache::store(const std::string& key, const std::string& object) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->on || impl_->read_only) return;
    dir = impl_->dir;
  }
  std::string data(kMagic, 4);
  put_u64(data, key.size());
  data += key;
  put_u64(data, object.size());
  put_u64(data, hash64(object));
  data += object;
  std::string why;
  // Read-only, full, or something in the way: the kernel just is not cached.
  // No fsync (a few milliseconds on the first call of a program): an entry a
  // crash tore fails load()'s length or checksum test and is compiled again.
  files::write_atomic(dir + "/" + hex(hash64(key)) + ".nfk", data, &why, /*durable=*/false);
}

size_t DiskCache::clear() {
  impl_->generation.fetch_add(1, std::memory_order_acq_rel);
  std::string dir = directory();
  size_t n = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".nfk") == 0)
      if (unlink((dir + "/" + name).c_str()) == 0) ++n;
  }
  closedir(d);
  return n;
}

}  // namespace nf::jit

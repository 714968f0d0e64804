#include "core/buffer.h"

#include "core/error.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <new>
#include <vector>

namespace nf {

namespace {
std::atomic<uint64_t> g_next_id{1};
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

// A caching allocator for large buffers. Fresh large allocations cost a page
// fault per 4 KiB page on first touch (and the kernel zeroes every page);
// array programs allocate and drop same-sized buffers over and over, so freed
// blocks are kept, by size class, and handed out again. Blocks of 4 MiB and
// more are 2 MiB aligned and advised to use transparent huge pages.
constexpr size_t kCacheMin = 64 << 10;
constexpr size_t kHuge = 4 << 20;
constexpr size_t kSmallMalloc = 512;

size_t size_class(size_t bytes) {
  if (bytes < kCacheMin) return (bytes + 63) / 64 * 64;
  if (bytes < kHuge) return (bytes + kCacheMin - 1) / kCacheMin * kCacheMin;
  return (bytes + (2 << 20) - 1) / (2 << 20) * (2 << 20);
}

// Blocks of the smallest classes, freed and taken again by one thread
// without the pool's lock (a loop over small arrays allocates and frees a
// few per operation): per thread and class, a LIFO list threaded through
// the blocks, at most ~8 KiB per class. What a thread keeps goes back to
// the pool when it exits.
constexpr size_t kThreadMax = 8 << 10;
struct ThreadCache {
  static constexpr size_t kClasses = kThreadMax / 64;
  void* head[kClasses + 1];
  uint16_t count[kClasses + 1];
  bool closed;  // the thread is exiting: blocks go to the pool
  bool armed;   // its closer exists
  void* take(size_t cls) {
    void*& h = head[cls / 64];
    void* p = h;
    if (!p) return nullptr;
    h = *static_cast<void**>(p);
    --count[cls / 64];
    return p;
  }
  bool give(void* p, size_t cls);
};
// On the heap, one pointer of thread-local storage per thread: numfuse's
// module has static TLS (initial-exec variables), and every byte of it is
// taken from the surplus that libraries loaded later need (scikit-learn's
// libgomp fails to load once ~1.3 KB more of it is used). Made by the first
// give(); its closer, constructed then too, drains it at thread exit (the
// cache itself stays, closed, for frees later in the thread's exit).
thread_local ThreadCache* t_cache = nullptr;
void drain(ThreadCache& c);
struct ThreadCacheCloser {
  ~ThreadCacheCloser() {
    if (!t_cache) return;
    t_cache->closed = true;
    drain(*t_cache);
  }
};
thread_local ThreadCacheCloser t_cache_closer;

bool ThreadCache::give(void* p, size_t cls) {
  const size_t k = cls / 64;
  if (closed || count[k] >= std::max<size_t>(2, kThreadMax / cls)) return false;
  if (!armed) {
    (void)&t_cache_closer;  // (constructs it in this thread: drains at exit)
    armed = true;
  }
  *static_cast<void**>(p) = head[k];
  head[k] = p;
  ++count[k];
  return true;
}

struct Pool {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;
  size_t cached = 0;
  size_t limit = 0;
  // Small blocks (below kCacheMin), by 64-byte class: the arrays of a loop
  // over small operations come and go by the million; malloc's aligned path
  // costs more than the operation. At most kSmallPerClass per class.
  static constexpr size_t kSmallClasses = kCacheMin / 64;
  static constexpr size_t kSmallPerClass = 64;
  std::vector<void*> small[kSmallClasses + 1];
  // Fresh memory whose pages were touched in the background at import
  // (Buffer::prefault): a program's first mid-size blocks (64 KiB to 4 MiB)
  // are carved from it, so its first operations do not pay a page fault
  // and the kernel's zeroing per 4 KiB (1.6 us a page here: a 200 x 200
  // float64 temporary costs 0.13 ms fresh). Its blocks stay in the pool.
  char* reserve = nullptr;
  size_t reserve_size = 0, reserve_used = 0;
  bool in_reserve(const void* p) const {
    return reserve && p >= reserve && static_cast<const char*>(p) < reserve + reserve_size;
  }

  Pool() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t ram = pages > 0 && page > 0 ? static_cast<size_t>(pages) * page : (size_t{8} << 30);
    limit = std::min(ram / 4, size_t{4} << 30);
  }

  void* get(size_t cls) {
    if (cls <= kThreadMax) {
      if (t_cache)
        if (void* p = t_cache->take(cls)) return p;
    }
    if (cls < kCacheMin) {
      std::lock_guard<std::mutex> lock(mu);
      std::vector<void*>& list = small[cls / 64];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        return p;
      }
    } else {
      std::lock_guard<std::mutex> lock(mu);
      // The block freed last (its lines are likeliest still in cache: a
      // loop's result array freed and allocated again each iteration stays
      // the same warm block, not a rotation through every cached one).
      auto [first, last] = free_blocks.equal_range(cls);
      if (first != last) {
        auto it = std::prev(last);
        void* p = it->second;
        free_blocks.erase(it);
        cached -= cls;
        return p;
      }
      if (cls < kHuge && reserve_used + cls <= reserve_size) {
        void* p = reserve + reserve_used;
        reserve_used += cls;
        return p;
      }
    }
    // Blocks of a few cache lines come from malloc's thread cache (16-byte
    // aligned, as NumPy's): its aligned path fragments the heap when
    // thousands of small arrays are kept alive (a list of rows), costing more
    // than the operation that fills them. Larger blocks are cache-line
    // aligned for the kernels' vector loops.
    size_t align = cls >= kHuge ? (2 << 20) : cls <= kSmallMalloc ? 0 : 64;
    auto alloc = [&] { return align ? std::aligned_alloc(align, cls) : std::malloc(cls); };
    void* p = alloc();
    if (!p) {
      trim();
      p = alloc();
      if (!p) throw MemoryError({}, -1, static_cast<int64_t>(cls));
    }
#ifdef MADV_HUGEPAGE
    if (cls >= kHuge) madvise(p, cls, MADV_HUGEPAGE);
#endif
    return p;
  }

  void put(void* p, size_t cls) {
    if (cls <= kThreadMax) {
      if (!t_cache) t_cache = new ThreadCache{};
      if (t_cache->give(p, cls)) return;
    }
    put_shared(p, cls);
  }

  void put_shared(void* p, size_t cls) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (cls < kCacheMin) {
        std::vector<void*>& list = small[cls / 64];
        if (list.size() < kSmallPerClass) {
          if (list.capacity() == 0) list.reserve(kSmallPerClass);
          list.push_back(p);
          return;
        }
      } else if (cached + cls <= limit || in_reserve(p)) {
        free_blocks.emplace(cls, p);
        cached += cls;
        return;
      }
    }
    std::free(p);
  }

  void trim() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = free_blocks.begin(); it != free_blocks.end();) {
      if (in_reserve(it->second)) {
        ++it;  // (the reserve's blocks are not malloc's: they stay)
        continue;
      }
      std::free(it->second);
      cached -= it->first;
      it = free_blocks.erase(it);
    }
    for (std::vector<void*>& list : small) {
      for (void* p : list) std::free(p);
      list.clear();
    }
  }
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: buffers may outlive static destruction
  return *p;
}

void drain(ThreadCache& c) {
  for (size_t k = 1; k <= ThreadCache::kClasses; ++k) {
    while (void* p = c.head[k]) {
      c.head[k] = *static_cast<void**>(p);
      pool().put_shared(p, k * 64);
    }
    c.count[k] = 0;
  }
}

void note_alloc(int64_t n) {
  int64_t now = g_live.fetch_add(n) + n;
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

namespace {
// Ids are taken from the shared counter in batches (an atomic increment per
// buffer costs as much as the rest of recording a small operation).

// Buffer objects (with their shared_ptr control blocks) come and go once per
// recorded operation and die by the window at a flush: malloc serves them
// from its slow bins (a window frees more than its per-thread cache holds).
// Each thread keeps a LIFO of freed blocks instead. The list is trivially
// destructible, so a buffer freed during thread teardown can still consult
// it; its closer (constructed with the first kept block) drains it first.
struct FreeBlocks {
  void* head;
  size_t size;  // the block size kept (one control-block type uses this)
  int count;
  bool closed;
  uint64_t next_id, end_id;  // this thread's batch of buffer ids
};
// (initial-exec: an address relative to the thread pointer, not a call to
// __tls_get_addr per access; a few bytes of the static TLS reserve.)
[[gnu::tls_model("initial-exec")]] thread_local FreeBlocks t_blocks{nullptr, 0, 0, false, 0, 0};

uint64_t next_id() {
  constexpr uint64_t kBatch = 1024;
  FreeBlocks& f = t_blocks;
  if (f.next_id == f.end_id) {
    f.next_id = g_next_id.fetch_add(kBatch);
    f.end_id = f.next_id + kBatch;
  }
  return f.next_id++;
}

void drain(FreeBlocks& f) {
  while (f.head) {
    void* next = *static_cast<void**>(f.head);
    ::operator delete(f.head);
    f.head = next;
  }
  f.count = 0;
}
struct FreeBlocksCloser {
  ~FreeBlocksCloser() {
    t_blocks.closed = true;
    drain(t_blocks);
  }
};
thread_local FreeBlocksCloser t_blocks_closer;
constexpr int kKeepBlocks = 4096;

void* take_block(size_t size) {
  FreeBlocks& f = t_blocks;
  if (!f.head || f.size != size) return ::operator new(size);
  void* p = f.head;
  f.head = *static_cast<void**>(p);
  --f.count;
  return p;
}

void give_block(void* p, size_t size) {
  FreeBlocks& f = t_blocks;
  if (f.closed || f.count >= kKeepBlocks || (f.size != size && f.count > 0)) {
    ::operator delete(p);
    return;
  }
  if (f.size != size) {
    (void)&t_blocks_closer;  // (constructs it in this thread: drains at exit)
    f.size = size;
  }
  *static_cast<void**>(p) = f.head;
  f.head = p;
  ++f.count;
}

template <class T>
struct BlockAlloc {
  using value_type = T;
  BlockAlloc() = default;
  template <class U>
  BlockAlloc(const BlockAlloc<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(n == 1 ? take_block(sizeof(T)) : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1) give_block(p, sizeof(T));
    else ::operator delete(p);
  }
  template <class U>
  bool operator==(const BlockAlloc<U>&) const { return true; }
};
}  // namespace

std::atomic<uint64_t> Buffer::retired_{0};

Buffer::Buffer(int64_t nbytes)
    : nbytes_(nbytes), id_(next_id()), epoch_(g_capture_epoch.load(std::memory_order_relaxed)) {}

void Buffer::capture_touch() const {
  if (epoch_ != g_capture_epoch.load(std::memory_order_relaxed))
    capture_abort("it reads or writes an array's memory in Python (a value Python needs, or memory handed to "
                  "NumPy), which a compiled program cannot do ahead of the call");
  if (pending())
    capture_abort("it touches an array in Python after recording operations on it");
}

int Buffer::kept_objects() { return t_blocks.count; }

BufferPtr Buffer::make(int64_t nbytes) { return std::allocate_shared<Buffer>(BlockAlloc<Buffer>(), nbytes); }

Buffer::~Buffer() {
  release_device();
  if (owned_) {
    if (data_) {
      pool().put(data_, size_class(static_cast<size_t>(std::max<int64_t>(nbytes_, 1))));
      g_live.fetch_sub(nbytes_);
    }
  } else if (release_) {
    release_();
  }
}

std::shared_ptr<Buffer> Buffer::adopt(void* data, int64_t nbytes, std::function<void()> release) {
  auto b = make(nbytes);
  b->data_ = data;
  b->owned_ = false;
  b->release_ = std::move(release);
  return b;
}

namespace {
std::atomic<int64_t> g_fail_after{-1};
}

void Buffer::inject_allocation_failure(int64_t after) { g_fail_after.store(after); }

void Buffer::check_injected_failure(int64_t nbytes) {
  if (g_fail_after.load(std::memory_order_relaxed) >= 0 && g_fail_after.fetch_sub(1) == 0)
    throw MemoryError({}, -1, nbytes);
}

void* Buffer::allocate() {
  check_injected_failure(nbytes_);
  // Size classes round up, so vector loads at the tail never leave the block.
  data_ = pool().get(size_class(static_cast<size_t>(std::max<int64_t>(nbytes_, 1))));
  note_alloc(nbytes_);
  return data_;
}

size_t Buffer::size_class(size_t bytes) { return ::nf::size_class(bytes); }

void Buffer::trim_cache() {
  if (t_cache) drain(*t_cache);  // (this thread's small blocks; other threads keep theirs, a few KiB each)
  pool().trim();
}
int64_t Buffer::cached_bytes() {
  std::lock_guard<std::mutex> lock(pool().mu);
  return static_cast<int64_t>(pool().cached);
}

void* Buffer::sync_host() {
  if (dstate_ & kDeviceNewer) {
    void* h = data_ ? data_ : allocate();
    device_->to_host(h, dptr_, nbytes_);
  }
  dstate_ = 0;  // (the caller may write the host copy)
  return data_ ? data_ : allocate();
}

namespace {
std::atomic<uint64_t> g_epoch{1};
}

void Buffer::next_epoch() { g_epoch.fetch_add(1, std::memory_order_relaxed); }

void* Buffer::device_data(Device& d) {
  if (device_ && device_ != &d) {  // a copy on another device: back to the host first
    if (dstate_ & kDeviceNewer) sync_host();
    release_device();
  }
  if (!dptr_) {
    dptr_ = d.alloc(std::max<int64_t>(nbytes_, 1));
    device_ = &d;
  }
  const uint64_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (host_visible() && depoch_ != epoch) dstate_ &= static_cast<uint8_t>(~kDeviceValid);
  if (!(dstate_ & kDeviceValid)) {
    if (data_) d.to_device(dptr_, data_, nbytes_);  // (no host copy: never written, nothing to bring)
    dstate_ = kDeviceValid;
    depoch_ = epoch;
  }
  return dptr_;
}

void Buffer::device_wrote() {
  if (host_visible()) {
    device_->to_host(data_ ? data_ : allocate(), dptr_, nbytes_);
    dstate_ = kDeviceValid;
    depoch_ = g_epoch.load(std::memory_order_relaxed);
    return;
  }
  dstate_ = kDeviceValid | kDeviceNewer;
  if (data_) device_->host_stale(data_, nbytes_);
}

void Buffer::release_device() {
  if (dptr_) device_->free(dptr_, std::max<int64_t>(nbytes_, 1));
  dptr_ = nullptr;
  device_ = nullptr;
  dstate_ = 0;
}

void Buffer::release_memory() {
  release_device();  // (nothing can read it any more: no copy is kept)
  if (!owned_ || !data_) return;
  pool().put(data_, size_class(static_cast<size_t>(std::max<int64_t>(nbytes_, 1))));
  data_ = nullptr;
  g_live.fetch_sub(nbytes_);
}

void Buffer::borrow(Buffer& owner) {
  if (has_memory() || size_class(static_cast<size_t>(std::max<int64_t>(owner.nbytes_, 1))) < static_cast<size_t>(nbytes_))
    throw std::logic_error("Buffer::borrow: the buffer has memory, or the owner's block is smaller");
  data_ = owner.data();
  owned_ = false;
}

bool Buffer::can_allocate(int64_t nbytes) {
  // Below this, a refusal is not plausible and the probe would cost more
  // than it could ever save.
  constexpr int64_t kProbeFrom = int64_t{64} << 20;
  if (nbytes < kProbeFrom) return true;
  void* p = mmap(nullptr, static_cast<size_t>(nbytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    // Cached blocks count against the commit limit too: give them back, retry.
    trim_cache();
    p = mmap(nullptr, static_cast<size_t>(nbytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
  }
  munmap(p, static_cast<size_t>(nbytes));
  return true;
}

void Buffer::prefault(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    if (pool().reserve) return;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  bool populated = false;
#ifdef MADV_POPULATE_WRITE
  populated = madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
#endif
  if (!populated) {
    const long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < bytes; i += static_cast<size_t>(page > 0 ? page : 4096))
      static_cast<volatile char*>(p)[i] = 0;
  }
  std::lock_guard<std::mutex> lock(pool().mu);
  if (pool().reserve) {
    munmap(p, bytes);
    return;
  }
  pool().reserve = static_cast<char*>(p);
  pool().reserve_size = bytes;
}

int64_t Buffer::live_bytes() { return g_live.load(); }
int64_t Buffer::peak_bytes() { return g_peak.load(); }
void Buffer::reset_peak() { g_peak.store(g_live.load()); }

}  // namespace nf

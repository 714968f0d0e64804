#include "core/buffer.h"

#include <cstdlib>
#include <mutex>
#include <new>

namespace nf {

namespace {
std::atomic<uint64_t> g_next_id{1};
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void note_alloc(int64_t n) {
  int64_t now = g_live.fetch_add(n) + n;
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

Buffer::Buffer(int64_t nbytes) : nbytes_(nbytes), id_(g_next_id.fetch_add(1)) {}

Buffer::~Buffer() {
  if (owned_) {
    if (data_) {
      std::free(data_);
      g_live.fetch_sub(nbytes_);
    }
  } else if (release_) {
    release_();
  }
}

std::shared_ptr<Buffer> Buffer::adopt(void* data, int64_t nbytes, std::function<void()> release) {
  auto b = std::make_shared<Buffer>(nbytes);
  b->data_ = data;
  b->owned_ = false;
  b->release_ = std::move(release);
  return b;
}

void* Buffer::data() {
  if (data_) return data_;
  // Round up so that vector loads at the tail never leave the allocation.
  size_t bytes = (static_cast<size_t>(nbytes_) + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  data_ = p;
  note_alloc(nbytes_);
  return data_;
}

int64_t Buffer::live_bytes() { return g_live.load(); }
int64_t Buffer::peak_bytes() { return g_peak.load(); }
void Buffer::reset_peak() { g_peak.store(g_live.load()); }

}  // namespace nf

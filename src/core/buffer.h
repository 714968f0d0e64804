// Buffers: the memory behind arrays, with tiered reference counts.
//
// A buffer is created when an operation is recorded, but memory is allocated
// only when a kernel first writes it (or never, if fusion proves it temporary).
// Two counts matter to fusion (Diffuse's tiered reference counts):
//   py_refs   - live Python arrays viewing the buffer (maintained by NdArray);
//   the shared_ptr count - Python arrays plus pending tasks.
// A buffer with py_refs == 0 can only be reached by pending tasks, so once
// they have run it is dead.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/capture.h"
#include "core/device.h"

namespace nf {

class Buffer {
 public:
  explicit Buffer(int64_t nbytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // A new buffer (memory allocated on first use). Buffers are made and
  // freed once per recorded operation: their objects are recycled per thread.
  static std::shared_ptr<Buffer> make(int64_t nbytes);
  // Freed buffer objects this thread keeps for make (diagnostics, tests).
  static int kept_objects();
  // Wrap memory owned by someone else (a NumPy array); `release` runs when
  // the buffer dies.
  static std::shared_ptr<Buffer> adopt(void* data, int64_t nbytes, std::function<void()> release);

  int64_t nbytes() const { return nbytes_; }
  // Whether it has memory on the host or a device (borrow() needs none).
  bool has_memory() const { return data_ != nullptr || device_ != nullptr; }
  uint64_t id() const { return id_; }
  bool allocated() const { return data_ != nullptr || dptr_ != nullptr; }
  bool adopted() const { return !owned_; }  // memory from adopt()
  // The host copy: allocated on first use (64-byte aligned, uninitialized),
  // brought up to date from the device copy if that one is newer. Its
  // caller may write it: the device copy counts as stale after.
  void* data() {
    if (t_capturing) [[unlikely]]
      capture_touch();
    if (dstate_ != 0) [[unlikely]]
      return sync_host();
    return data_ ? data_ : allocate();
  }
  void* data_if_allocated() const {
    if (t_capturing) [[unlikely]]
      capture_touch();
    if (dstate_ != 0) [[unlikely]]
      return const_cast<Buffer*>(this)->sync_host();
    return data_;
  }
  // The device copy on `d` for a kernel that reads (or writes part of) it:
  // allocated there on first use and brought up to date from the host
  // copy when that one is newer (a copy on another device comes back to
  // the host first). Throws MemoryError.
  void* device_data(Device& d);
  // A kernel on the device wrote the device copy: the host copy is stale
  // -- unless NumPy can see the memory (host_visible), whose host copy is
  // then brought up to date at once.
  void device_wrote();
  // Memory NumPy can see: adopted from a NumPy array, or exported to one
  // (exports). NumPy may read or write it whenever Python runs, so its host
  // copy is the truth between flushes: a device copy of it is trusted only
  // in the flush that made it (Buffer::next_epoch), and a kernel's writes
  // to it come back to the host at once.
  bool host_visible() const { return !owned_ || exports.load(std::memory_order_relaxed) > 0; }
  // A flush begins (a new epoch: device copies of host-visible memory are
  // brought again).
  static void next_epoch();
  // The device this buffer has a copy on (nullptr: none), and whether that
  // copy alone holds the contents.
  Device* device() const { return device_; }
  bool device_newer() const { return (dstate_ & kDeviceNewer) != 0; }
  // The device copy's address (valid while device() is set).
  void* device_ptr() const { return dptr_; }
  // Returns the memory early (to the allocator's cache) when the buffer can
  // no longer be read: used by the executor after the last group that uses a
  // buffer no Python array can see. Adopted memory is left alone.
  void release_memory();
  // Uses `owner`'s memory (same size class or larger, allocated here if it
  // was not) instead of memory of its own: tier 0 gives a group's
  // temporaries that are never alive at once one block (pipeline/tier0.cc).
  // The buffer must not have memory yet; the owner's outlives every use.
  void borrow(Buffer& owner);

  std::atomic<int32_t> py_refs{0};
  // NumPy arrays (or other libraries) currently viewing this memory. While
  // any exist, operations on the buffer run before control returns to
  // Python (see Stream::record), so the other library sees them in program
  // order, as it would with NumPy.
  std::atomic<int32_t> exports{0};
  // The bindings' array object that owns this memory (its whole extent), for
  // NumPy's `.base` of the views made from it; opaque here, set and cleared by
  // the bindings under the GIL. Null: none (yet, or any more).
  void* owner_object = nullptr;
  // py_refs > 0 when the window holding this buffer's tasks was taken (see
  // Stream::take). Fusion decides liveness from this snapshot only: a buffer
  // no Python array could see at that moment can never be seen again, while
  // the live count may drop concurrently as other threads keep running.
  bool py_live = true;
  // Pending tasks (recorded, or taken by a flush that has not finished)
  // that read / write this buffer. Tasks are numbered in recording order
  // (Task::seq, from 1); last_read / last_write hold the number of the latest
  // recorded task that reads / writes the buffer (Stream::Slot::commit), and
  // every task numbered up to retired() has run or was dropped
  // (Stream::retire: flushes retire their windows in recording order, a
  // failed one only the prefix that ran). So a task that reads the buffer is
  // pending exactly when last_read > retired(). With neither pending, the
  // buffer's contents are final until the next operation: tier 0 may read
  // it, or write it in place, at once. (Counting tasks in and out instead
  // cost six atomic read-modify-writes per task; these are plain stores,
  // made by the recording thread under the stream's gate.)
  std::atomic<uint64_t> last_read{0};
  std::atomic<uint64_t> last_write{0};
  static uint64_t retired() { return retired_.load(std::memory_order_acquire); }
  // Marks every task numbered up to `seq` as done (monotonic).
  static void retire_through(uint64_t seq) {
    if (seq > retired_.load(std::memory_order_relaxed)) retired_.store(seq, std::memory_order_release);
  }
  bool pending_write() const { return last_write.load(std::memory_order_acquire) > retired(); }
  bool pending_read() const { return last_read.load(std::memory_order_acquire) > retired(); }
  // Scratch of fusion::window_signature and fusion::window_matches (written
  // under their lock): the signature that last saw this buffer (an epoch),
  // the number it got there (-1: not yet), its latest distinct view, latest
  // distinct written view and latest task output, and (matching) how far its
  // views lie from those of the signature's window, in bytes. Saves a map
  // from buffers to numbers at every flush.
  uint64_t sig_epoch = 0;
  int64_t sig_delta = 0;
  int32_t sig_id = 0;
  int32_t sig_last_view = -1;
  int32_t sig_last_written = -1;
  int32_t sig_last_output = -1;
  bool pending() const {
    return std::max(last_read.load(std::memory_order_acquire), last_write.load(std::memory_order_acquire)) > retired();
  }

  // Whether the system would hand out `nbytes` in one piece right now, the
  // way NumPy's allocation would see it: large requests are probed with an
  // address-space reservation that the kernel's overcommit policy accepts
  // or refuses exactly as it would a malloc (nothing is touched).
  static bool can_allocate(int64_t nbytes);

  // Testing: the n-th allocation from now (0: the next) fails with
  // MemoryError, as a real one would; -1 turns it off.
  static void inject_allocation_failure(int64_t after);
  // Throws the injected MemoryError if this allocation is the n-th (host
  // allocations call it, and devices for theirs).
  static void check_injected_failure(int64_t nbytes);

  // Total bytes currently allocated by numfuse buffers (for memory reports).
  static int64_t live_bytes();
  static int64_t peak_bytes();
  static void reset_peak();
  // The size a block for `bytes` bytes is rounded up to: freed blocks are
  // kept for reuse by it (the host's pool, and each device's).
  static size_t size_class(size_t bytes);
  // Freed blocks kept for reuse, and releasing them to the system.
  static int64_t cached_bytes();
  // Maps `bytes` of fresh memory and touches its pages (the import's
  // background thread): the pool's first mid-size blocks come from it,
  // without page faults on the caller's path. Once per process.
  static void prefault(size_t bytes);
  static void trim_cache();

  // The capture (core/capture.h) this buffer was made in (0: none).
  uint32_t capture_epoch() const { return epoch_; }

 private:
  // data() on a capturing thread: memory made before the capture, or made
  // during it and already used by a recorded task, may not be touched
  // directly (the captured program would not see it): TraceAbort.
  void capture_touch() const;
  void* allocate();  // data()'s first use
  void* sync_host();  // data() with a device copy: the host copy, up to date
  int64_t nbytes_;
  uint64_t id_;
  uint32_t epoch_;
  void* data_ = nullptr;
  // The device copy (dptr_ on device_): kDeviceValid when it holds the
  // contents, kDeviceNewer when only it does (the host copy is stale).
  static constexpr uint8_t kDeviceValid = 1, kDeviceNewer = 2;
  Device* device_ = nullptr;
  void* dptr_ = nullptr;
  uint8_t dstate_ = 0;
  uint64_t depoch_ = 0;  // the epoch its device copy was last made valid in
  void release_device();
  bool owned_ = true;
  std::function<void()> release_;
  static std::atomic<uint64_t> retired_;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace nf

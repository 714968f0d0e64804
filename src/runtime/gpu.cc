// GPU kernels on a device (runtime.h): the emulated device, CUDA's through
// the driver, and the launch of a kernel's phases on either.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/error.h"
#include "core/small_vector.h"
#include "runtime/runtime.h"

namespace nf::runtime {

GpuDevice::Stats GpuDevice::stats() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return {uploads_.load(),      downloads_.load(),     launches_.load(), block_launches_.load(),
          block_threads_.load(), device_allocs_,        pool_hits_,       pool_bytes_};
}

void* GpuDevice::alloc(int64_t bytes) {
  Buffer::check_injected_failure(bytes);
  const int64_t cap = static_cast<int64_t>(Buffer::size_class(static_cast<size_t>(std::max<int64_t>(bytes, 1))));
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto it = pool_.find(cap);
    if (it != pool_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      pool_bytes_ -= cap;
      pool_hits_++;
    }
  }
  if (!p) {
    auto take = [&]() -> void* {
      try {
        return device_alloc(cap);
      } catch (const MemoryError&) {
        return nullptr;
      } catch (const std::bad_alloc&) {
        return nullptr;
      }
    };
    p = take();
    if (!p) {
      trim();  // (the pool's free blocks back to the device, then once more)
      p = take();
    }
    if (!p) throw MemoryError({}, -1, bytes);
    std::lock_guard<std::mutex> lock(pool_mu_);
    device_allocs_++;
  }
  handed_out(p, bytes, cap);
  return p;
}

void GpuDevice::free(void* p, int64_t bytes) {
  if (!p) return;
  const int64_t cap = static_cast<int64_t>(Buffer::size_class(static_cast<size_t>(std::max<int64_t>(bytes, 1))));
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_[cap].push_back(p);
  pool_bytes_ += cap;
}

void GpuDevice::trim() {
  std::unordered_map<int64_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    blocks.swap(pool_);
    pool_bytes_ = 0;
  }
  for (auto& [cap, list] : blocks)
    for (void* p : list) device_free(p, cap);
}

namespace {

class EmulatedDevice final : public GpuDevice {
 public:
  EmulatedDevice() {
    if (const char* g = std::getenv("NUMFUSE_EMULATED_GRID")) {
      long b = 0, t = 0;
      if (std::sscanf(g, "%ld,%ld", &b, &t) == 2 && b > 0 && t > 0 && b <= 1024 && t <= 1024) {
        blocks_ = b;
        threads_ = t;
      }
    }
  }
  const char* name() const override { return "cuda-emulated"; }
  void to_device(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    uploads_++;
  }
  void to_host(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    downloads_++;
  }
  void host_stale(void* host, int64_t bytes) override { std::memset(host, 0xff, static_cast<size_t>(bytes)); }
  void copy(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void dlpack_device(int32_t* type, int32_t* id) const override {
    *type = dlpack_type_.load(std::memory_order_relaxed);  // (kDLCPU: its memory is the host's)
    *id = 0;
  }
  // (Tests: the emulated device says it is another DLPack device, kDLCUDA,
  // so that the export of a device's copy runs here; its memory is still
  // readable on the host.)
  void set_dlpack_type(int32_t t) { dlpack_type_.store(t, std::memory_order_relaxed); }

 protected:
  // Rounded up as host blocks are (buffer.cc), so that the host-compiled
  // kernels' vector loads at an array's tail stay inside it.
  static size_t rounded(int64_t capacity) { return (static_cast<size_t>(capacity) + 63) / 64 * 64 + 64; }
  void* device_alloc(int64_t capacity) override {
    void* p = std::aligned_alloc(64, rounded(capacity));
    if (!p) throw std::bad_alloc();
    return p;
  }
  void device_free(void* p, int64_t) override { std::free(p); }
  // Every block handed out, new or reused, poisoned (a read of what was
  // never copied shows), its tail zero (a NaN there would raise spurious
  // flags).
  void handed_out(void* p, int64_t bytes, int64_t capacity) override {
    const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
    std::memset(p, 0xff, n);
    std::memset(static_cast<char*>(p) + n, 0, rounded(capacity) - n);
  }

 public:
  void launch(const jit::Kernel& k, size_t phase, char* const* ptrs, const int64_t* ints, const double* floats,
              void* frame) override {
    // (a cooperative phase: blocks of the threads its code was written for)
    const codegen::LaunchShape::Phase& ph = k.shape.phases[phase];
    struct {
      int64_t phase, blocks, threads, cooperative;
    } l{static_cast<int64_t>(phase), ph.grid ? blocks_ : 1, ph.threads > 0 ? ph.threads : ph.grid ? threads_ : 1,
        ph.threads > 0};
    SmallVector<char*, 34> p;
    for (int i = 0; i < k.shape.num_ptrs; ++i) p.push_back(ptrs[i]);
    p.push_back(static_cast<char*>(frame));
    p.push_back(reinterpret_cast<char*>(&l));
    launches_++;
    if (ph.threads > 0) {
      block_launches_++;
      block_threads_ += ph.threads;
    }
    k.fn.load(std::memory_order_acquire)(p.data(), ints, floats);
  }

 private:
  int64_t blocks_ = 2, threads_ = 3;
  std::atomic<int32_t> dlpack_type_{1};
};

class CudaDevice final : public GpuDevice {
 public:
  explicit CudaDevice(jit::CudaDriver& d) : d_(d) {}

 protected:
  void* device_alloc(int64_t capacity) override { return d_.alloc(capacity); }  // (std::bad_alloc when full)
  void device_free(void* p, int64_t) override { d_.free(p); }

 public:
  const char* name() const override { return "cuda"; }
  void to_device(void* dst, const void* src, int64_t bytes) override {
    d_.to_device(dst, src, bytes);
    uploads_++;
  }
  void to_host(void* dst, const void* src, int64_t bytes) override {
    d_.to_host(dst, src, bytes);
    downloads_++;
  }
  void copy(void* dst, const void* src, int64_t bytes) override { d_.copy(dst, src, bytes); }
  void dlpack_device(int32_t* type, int32_t* id) const override {
    *type = 2;  // kDLCUDA
    *id = d_.ordinal();
  }
  void launch(const jit::Kernel& k, size_t phase, char* const* ptrs, const int64_t* ints, const double* floats,
              void* frame) override {
    // The phase's parameters: the args struct (pointers, ints, floats: 8
    // bytes each, at least one of each), then the frame's address.
    const codegen::LaunchShape& s = k.shape;
    const int np = std::max(1, s.num_ptrs), ni = std::max(1, s.num_ints), nf = std::max(1, s.num_floats);
    std::vector<uint64_t> args(static_cast<size_t>(np + ni + nf), 0);
    std::memcpy(args.data(), ptrs, sizeof(char*) * static_cast<size_t>(s.num_ptrs));
    std::memcpy(args.data() + np, ints, sizeof(int64_t) * static_cast<size_t>(s.num_ints));
    std::memcpy(args.data() + np + ni, floats, sizeof(double) * static_cast<size_t>(s.num_floats));
    void* params[] = {args.data(), &frame};
    const codegen::LaunchShape::Phase& ph = s.phases[phase];
    const int64_t sms = d_.multiprocessors();
    launches_++;
    if (ph.threads > 0) {
      block_launches_++;
      block_threads_ += ph.threads;
    }
    if (ph.threads > 0)  // (blocks of the threads its code was written for: 16 per SM, 2,048 threads at 128)
      d_.launch(k.functions[phase], 16 * sms, ph.threads, params);
    else
      d_.launch(k.functions[phase], ph.grid ? std::max<int64_t>(2048 * sms / ph.block, 1) : 1,  // (resident threads)
                ph.grid ? ph.block : 1, params);
  }

 private:
  jit::CudaDriver& d_;
};

}  // namespace

namespace {
EmulatedDevice& the_emulated_device() {
  static EmulatedDevice* d = new EmulatedDevice();
  return *d;
}
}  // namespace

GpuDevice& emulated_device() { return the_emulated_device(); }

void set_emulated_dlpack_type(int32_t type) { the_emulated_device().set_dlpack_type(type); }

GpuDevice* cuda_device(std::string* why) {
  static GpuDevice* d = [] () -> GpuDevice* {
    jit::CudaDriver* drv = jit::CudaDriver::get();
    return drv ? new CudaDevice(*drv) : nullptr;
  }();
  if (!d) jit::CudaDriver::get(why);
  return d;
}

void run_gpu_kernel(const jit::Kernel& k, const mdh::MdHom& h, const mdh::Bindings& b, GpuDevice& d) {
  const codegen::LaunchShape& s = k.shape;
  if (s.num_ints > static_cast<int>(b.ints.size()) || s.num_floats > static_cast<int>(b.floats.size()) ||
      s.num_ptrs != static_cast<int>(h.accesses.size()))
    throw std::logic_error("run_gpu_kernel: the bindings do not match the kernel's parameters");
  SmallVector<char*, 32> ptrs(h.accesses.size(), nullptr);
  for (size_t i = 0; i < h.accesses.size(); ++i) {
    const mdh::Access& a = h.accesses[i];
    if (!(a.read || a.written || a.reduced)) continue;
    ptrs[i] = static_cast<char*>(b.buffers[a.ptr]->device_data(d)) + b.offsets[a.ptr];
  }
  void* frame = s.frame_bytes > 0 ? d.alloc(s.frame_bytes) : nullptr;
  struct Free {
    GpuDevice& d;
    void* f;
    int64_t n;
    ~Free() {
      if (f) d.free(f, n);
    }
  } free_frame{d, frame, s.frame_bytes};
  for (size_t p = 0; p < s.phases.size(); ++p) d.launch(k, p, ptrs.data(), b.ints.data(), b.floats.data(), frame);
  for (const mdh::Access& a : h.accesses)
    if (a.written || a.reduced) b.buffers[a.ptr]->device_wrote();
}

}  // namespace nf::runtime

// GPU kernels on a device (runtime.h): the emulated device, CUDA's through
// the driver, and the launch of a kernel's phases on either.
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
  void* alloc(int64_t bytes) override {
    Buffer::check_injected_failure(bytes);
    // Rounded up as host blocks are (buffer.cc), so that the host-compiled
    // kernels' vector loads at an array's tail stay inside it; the data
    // poisoned, the tail zero (a NaN there would raise spurious flags).
    const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
    const size_t rounded = (n + 63) / 64 * 64 + 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw MemoryError({}, -1, bytes);
    std::memset(p, 0xff, n);
    std::memset(static_cast<char*>(p) + n, 0, rounded - n);
    return p;
  }
  void free(void* p, int64_t) override { std::free(p); }
  void to_device(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    uploads_++;
  }
  void to_host(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    downloads_++;
  }
  void host_stale(void* host, int64_t bytes) override { std::memset(host, 0xff, static_cast<size_t>(bytes)); }
  void launch(const jit::Kernel& k, size_t phase, char* const* ptrs, const int64_t* ints, const double* floats,
              void* frame) override {
    struct {
      int64_t phase, blocks, threads;
    } l{static_cast<int64_t>(phase), k.shape.phases[phase].grid ? blocks_ : 1, k.shape.phases[phase].grid ? threads_ : 1};
    SmallVector<char*, 34> p;
    for (int i = 0; i < k.shape.num_ptrs; ++i) p.push_back(ptrs[i]);
    p.push_back(static_cast<char*>(frame));
    p.push_back(reinterpret_cast<char*>(&l));
    launches_++;
    k.fn.load(std::memory_order_acquire)(p.data(), ints, floats);
  }

 private:
  int64_t blocks_ = 2, threads_ = 3;
};

class CudaDevice final : public GpuDevice {
 public:
  explicit CudaDevice(jit::CudaDriver& d) : d_(d) {}
  const char* name() const override { return "cuda"; }
  void* alloc(int64_t bytes) override {
    Buffer::check_injected_failure(bytes);
    try {
      return d_.alloc(bytes);
    } catch (const std::bad_alloc&) {
      throw MemoryError({}, -1, bytes);
    }
  }
  void free(void* p, int64_t) override { d_.free(p); }
  void to_device(void* dst, const void* src, int64_t bytes) override {
    d_.to_device(dst, src, bytes);
    uploads_++;
  }
  void to_host(void* dst, const void* src, int64_t bytes) override {
    d_.to_host(dst, src, bytes);
    downloads_++;
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
    const bool grid = s.phases[phase].grid;
    launches_++;
    d_.launch(k.functions[phase], grid ? 8 * static_cast<int64_t>(d_.multiprocessors()) : 1, grid ? 256 : 1, params);
  }

 private:
  jit::CudaDriver& d_;
};

}  // namespace

GpuDevice& emulated_device() {
  static EmulatedDevice* d = new EmulatedDevice();
  return *d;
}

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
  void* frame = d.alloc(s.frame_bytes);
  struct Free {
    GpuDevice& d;
    void* f;
    int64_t n;
    ~Free() { d.free(f, n); }
  } free_frame{d, frame, s.frame_bytes};
  for (size_t p = 0; p < s.phases.size(); ++p) d.launch(k, p, ptrs.data(), b.ints.data(), b.floats.data(), frame);
  for (const mdh::Access& a : h.accesses)
    if (a.written || a.reduced) b.buffers[a.ptr]->device_wrote();
}

}  // namespace nf::runtime

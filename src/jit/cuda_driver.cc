// The CUDA driver API (jit.h: CudaDriver), loaded with dlopen at first use:
// device 0's primary context, memory, modules and launches. Nothing here is
// linked against CUDA, and no CUDA header is needed to build it.
#include <dlfcn.h>

#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/jit.h"

namespace nf::jit {

namespace {
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUdeviceptr = unsigned long long;
constexpr int kAttrMultiprocessors = 16, kAttrMajor = 75, kAttrMinor = 76;
constexpr int kLimitMallocHeap = 2;
constexpr CUresult kOutOfMemory = 2;
}  // namespace

struct CudaDriver::Impl {
  void* lib = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_version)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*primary_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*ctx_set_limit)(int, size_t) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*module_load)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                     void**) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  int arch = 0, sms = 0, version = 0;
  std::string name;
  std::mutex mu;  // (the context is made current on each calling thread)

  std::string message(CUresult r) const {
    const char* s = nullptr;
    if (error_string) error_string(r, &s);
    return "CUDA error " + std::to_string(r) + (s ? std::string(" (") + s + ")" : std::string());
  }
  void check(CUresult r, const char* what) const {
    if (r != 0) throw std::runtime_error(std::string(what) + ": " + message(r));
  }
  void current() const { ctx_set_current(ctx); }
};

namespace {
template <class F>
bool load_sym(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}
}  // namespace

CudaDriver* CudaDriver::get(std::string* why) {
  static std::string reason;
  static CudaDriver* d = [] () -> CudaDriver* {
    auto impl = std::make_shared<Impl>();
    Impl& m = *impl;
    m.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m.lib) {
      reason = "no NVIDIA driver on this machine (libcuda.so.1 was not found)";
      return nullptr;
    }
    bool ok = load_sym(m.lib, "cuInit", m.init) && load_sym(m.lib, "cuDriverGetVersion", m.driver_version) &&
              load_sym(m.lib, "cuDeviceGet", m.device_get) && load_sym(m.lib, "cuDeviceGetCount", m.device_count) &&
              load_sym(m.lib, "cuDeviceGetName", m.device_name) &&
              load_sym(m.lib, "cuDeviceGetAttribute", m.attribute) &&
              load_sym(m.lib, "cuDevicePrimaryCtxRetain", m.primary_retain) &&
              load_sym(m.lib, "cuCtxSetCurrent", m.ctx_set_current) && load_sym(m.lib, "cuCtxSetLimit", m.ctx_set_limit) &&
              load_sym(m.lib, "cuCtxSynchronize", m.ctx_synchronize) && load_sym(m.lib, "cuMemAlloc_v2", m.mem_alloc) &&
              load_sym(m.lib, "cuMemFree_v2", m.mem_free) && load_sym(m.lib, "cuMemcpyHtoD_v2", m.htod) &&
              load_sym(m.lib, "cuMemcpyDtoH_v2", m.dtoh) && load_sym(m.lib, "cuMemcpyDtoD_v2", m.dtod) && load_sym(m.lib, "cuModuleLoadData", m.module_load) &&
              load_sym(m.lib, "cuModuleUnload", m.module_unload) &&
              load_sym(m.lib, "cuModuleGetFunction", m.module_function) &&
              load_sym(m.lib, "cuLaunchKernel", m.launch) && load_sym(m.lib, "cuGetErrorString", m.error_string);
    if (!ok) {
      reason = "the NVIDIA driver is too old (libcuda.so.1 lacks the functions numfuse uses)";
      return nullptr;
    }
    if (CUresult r = m.init(0)) {
      reason = r == 100 ? "the NVIDIA driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE)" : "cuInit failed: " + m.message(r);
      return nullptr;
    }
    int count = 0;
    if (m.device_count(&count) != 0 || count < 1) {
      reason = "the NVIDIA driver found no GPU";
      return nullptr;
    }
    int major = 0, minor = 0;
    char name[256] = {0};
    if (m.device_get(&m.device, 0) || m.attribute(&major, kAttrMajor, m.device) ||
        m.attribute(&minor, kAttrMinor, m.device) || m.attribute(&m.sms, kAttrMultiprocessors, m.device) ||
        m.device_name(name, sizeof name, m.device) || m.primary_retain(&m.ctx, m.device)) {
      reason = "the GPU could not be opened";
      return nullptr;
    }
    m.arch = 10 * major + minor;
    m.name = name;
    m.driver_version(&m.version);
    m.current();
    // Heap arrays of kernels (device malloc): room for the partial results
    // of reductions across many threads.
    m.ctx_set_limit(kLimitMallocHeap, size_t(256) << 20);
    auto* drv = new CudaDriver();
    drv->impl_ = std::move(impl);
    return drv;
  }();
  if (!d && why) *why = reason;
  return d;
}

int CudaDriver::arch() const { return impl_->arch; }
int CudaDriver::multiprocessors() const { return impl_->sms; }
std::string CudaDriver::device_name() const { return impl_->name; }
std::string CudaDriver::version() const {
  return std::to_string(impl_->version / 1000) + "." + std::to_string(impl_->version % 1000 / 10);
}

void* CudaDriver::alloc(int64_t bytes) {
  impl_->current();
  CUdeviceptr p = 0;
  CUresult r = impl_->mem_alloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  if (r == kOutOfMemory) throw std::bad_alloc();
  impl_->check(r, "cuMemAlloc");
  return reinterpret_cast<void*>(p);
}

void CudaDriver::free(void* p) {
  impl_->current();
  impl_->mem_free(reinterpret_cast<CUdeviceptr>(p));
}

void CudaDriver::to_device(void* dst, const void* src, int64_t bytes) {
  impl_->current();
  impl_->check(impl_->htod(reinterpret_cast<CUdeviceptr>(dst), src, static_cast<size_t>(bytes)), "cuMemcpyHtoD");
}

void CudaDriver::to_host(void* dst, const void* src, int64_t bytes) {
  impl_->current();
  impl_->check(impl_->dtoh(dst, reinterpret_cast<CUdeviceptr>(src), static_cast<size_t>(bytes)), "cuMemcpyDtoH");
}

void CudaDriver::copy(void* dst, const void* src, int64_t bytes) {
  impl_->current();
  impl_->check(impl_->dtod(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                           static_cast<size_t>(bytes)),
               "cuMemcpyDtoD");
}

int CudaDriver::ordinal() const { return 0; }

std::shared_ptr<void> CudaDriver::load(const std::string& cubin, const std::vector<std::string>& names,
                                       std::vector<void*>* functions) {
  impl_->current();
  CUmodule mod = nullptr;
  if (CUresult r = impl_->module_load(&mod, cubin.data()))
    throw CompileError("cuModuleLoadData: " + impl_->message(r));
  std::shared_ptr<Impl> keep = impl_;
  std::shared_ptr<void> handle(mod, [keep](void* m) {
    keep->current();
    keep->module_unload(m);
  });
  functions->clear();
  for (const std::string& n : names) {
    CUfunction f = nullptr;
    if (CUresult r = impl_->module_function(&f, mod, n.c_str()))
      throw CompileError("cuModuleGetFunction(" + n + "): " + impl_->message(r));
    functions->push_back(f);
  }
  return handle;
}

void CudaDriver::launch(void* fn, int64_t blocks, int64_t threads, void** params) {
  impl_->current();
  impl_->check(impl_->launch(fn, static_cast<unsigned>(blocks), 1, 1, static_cast<unsigned>(threads), 1, 1, 0, nullptr,
                             params, nullptr),
               "cuLaunchKernel");
  impl_->check(impl_->ctx_synchronize(), "kernel");
}

}  // namespace nf::jit

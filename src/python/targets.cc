// Targets (pipeline/target.h) and the CUDA toolchain (jit.h): selection,
// what is available and why not, and the NVRTC compile the CUDA tests use.
#include <pybind11/stl.h>

#include "jit/jit.h"
#include "pipeline/pipeline.h"
#include "pipeline/target.h"
#include "python/bindings.h"
#include "runtime/runtime.h"

namespace nf::py_bind {

void bind_targets(py::module_& m) {
  m.def("target_names", []() {
    std::vector<std::string> names;
    for (const pipeline::Target* t : pipeline::all_targets()) names.push_back(t->name);
    return names;
  });
  // "" where the target can run here, else why not.
  m.def("target_unavailable", [](const std::string& name) {
    const pipeline::Target* t = pipeline::find_target(name);
    if (!t) throw py::value_error("unknown target " + name);
    NoGil nogil;
    return t->unavailable();
  });
  m.def("get_target", []() { return std::string(pipeline::active_target().name); });
  m.def("set_target", [](const std::string& name) {
    const pipeline::Target* t = pipeline::find_target(name);
    if (!t) throw py::value_error("unknown target " + name);
    {
      NoGil nogil;
      pipeline::set_active_target(*t);  // (throws std::runtime_error where it cannot run here)
    }
    // Memoized plans hold their groups' targets.
    pipeline::clear_memo();
  });
  m.def("set_nvrtc_library", [](const std::string& path) { jit::set_nvrtc_library(path); });
  m.def("nvrtc_info", []() {
    const jit::NvrtcInfo i = jit::nvrtc_info();
    py::dict d;
    d["available"] = i.available;
    d["path"] = i.path;
    d["version"] = i.version;
    d["why"] = i.why;
    return d;
  });
  m.def("cuda_info", []() {
    py::dict d;
    std::string why;
    jit::CudaDriver* drv = jit::CudaDriver::get(&why);
    d["available"] = drv != nullptr;
    d["why"] = why;
    if (drv) {
      d["device"] = drv->device_name();
      d["arch"] = drv->arch();
      d["multiprocessors"] = drv->multiprocessors();
      d["driver"] = drv->version();
    }
    return d;
  });
  // NVRTC on CUDA C++ text (the kernel text after the prelude): a dict of
  // cubin, ptx and log. Raises RuntimeError (CompileError) with the log.
  m.def(
      "cuda_compile",
      [](const std::string& source, int arch, bool ptx, bool verbose, bool prelude) {
        jit::CudaBinary b;
        {
          NoGil nogil;
          b = jit::nvrtc_compile((prelude ? codegen::cuda_prelude() : std::string()) + source, "kernel.cu", arch, ptx,
                                 verbose);
        }
        py::dict d;
        d["cubin"] = py::bytes(b.cubin);
        d["ptx"] = b.ptx;
        d["log"] = b.log;
        return d;
      },
      py::arg("source"), py::arg("arch"), py::arg("ptx") = false, py::arg("verbose") = false,
      py::arg("prelude") = true);
  // The device a GPU target runs on ("cuda-emulated", "cuda"), or ValueError.
  auto device_named = [](const std::string& name) {
    runtime::GpuDevice* d = name == "cuda-emulated" ? &runtime::emulated_device()
                            : name == "cuda"        ? runtime::cuda_device()
                                                    : nullptr;
    if (!d) throw py::value_error("no device " + name);
    return d;
  };
  m.def("device_stats", [device_named](const std::string& name) {
    runtime::GpuDevice* d = device_named(name);
    const runtime::GpuDevice::Stats s = d->stats();
    py::dict out;
    out["uploads"] = s.uploads;
    out["downloads"] = s.downloads;
    out["launches"] = s.launches;
    out["block_launches"] = s.block_launches;
    out["block_threads"] = s.block_threads;
    out["device_allocs"] = s.device_allocs;
    out["pool_hits"] = s.pool_hits;
    out["pool_bytes"] = s.pool_bytes;
    return out;
  });
  // (Tests) the DLPack device type the emulated device reports.
  m.def("set_emulated_dlpack_type", [](int type) { runtime::set_emulated_dlpack_type(type); });
  m.def("device_trim", [device_named](const std::string& name) {
    runtime::GpuDevice* d = device_named(name);
    d->trim();
  });
  m.def("set_cuda_check", [](const std::vector<int>& archs) {
    jit::set_check_archs(archs);
    pipeline::clear_memo();
  });
  // The check's counts since the process started, or (since_mark) since
  // mark_cuda_check_stats().
  m.def("mark_cuda_check_stats", []() { jit::mark_check_stats(); });
  m.def("cuda_check_stats", [](bool since_mark) {
    const jit::CheckStats s = jit::check_stats(since_mark);
    py::dict d;
    d["kernels"] = s.kernels;
    d["compiles"] = s.compiles;
    d["max_registers"] = s.max_registers;
    d["max_spill_bytes"] = s.max_spill_bytes;
    d["max_shared_bytes"] = s.max_shared_bytes;
    d["archs"] = jit::check_archs();
    return d;
  }, py::arg("since_mark") = false);
}

}  // namespace nf::py_bind

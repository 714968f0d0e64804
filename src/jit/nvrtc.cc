// NVRTC, loaded with dlopen at first use, and the CUDA targets' compilers
// (jit.h): NVRTC to a cubin for a real device; clang for the emulated one,
// with the same kernel text and, on request, an NVRTC compile of it as the
// proof that it would build for a GPU.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "jit/jit.h"

namespace nf::jit {

namespace {

using nvrtcProgram = struct _nvrtcProgram*;
using nvrtcResult = int;

struct Nvrtc {
  void* lib = nullptr;
  NvrtcInfo info;
  nvrtcResult (*version)(int*, int*) = nullptr;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*ptx)(nvrtcProgram, char*) = nullptr;
  const char* (*error)(nvrtcResult) = nullptr;
};

std::mutex g_nvrtc_mu;
std::string g_nvrtc_path;  // set_nvrtc_library's

template <class F>
bool sym(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

Nvrtc& nvrtc() {
  static Nvrtc* n = [] {
    auto* r = new Nvrtc();
    std::vector<std::string> candidates;
    {
      std::lock_guard<std::mutex> lock(g_nvrtc_mu);
      if (!g_nvrtc_path.empty()) candidates.push_back(g_nvrtc_path);
    }
    if (const char* e = std::getenv("NUMFUSE_NVRTC")) candidates.push_back(e);
    for (const char* c : {"/usr/local/cuda/lib64/libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so"})
      candidates.push_back(c);
    std::string tried;
    for (const std::string& c : candidates) {
      r->lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (r->lib) {
        r->info.path = c;
        break;
      }
      const char* err = dlerror();
      tried += "\n  " + c + ": " + (err ? err : "not found");
    }
    if (!r->lib) {
      r->info.why = "NVRTC was not found (pip install nvidia-cuda-nvrtc-cu12, or install the CUDA toolkit); tried:" + tried;
      return r;
    }
    bool ok = sym(r->lib, "nvrtcVersion", r->version) && sym(r->lib, "nvrtcCreateProgram", r->create) &&
              sym(r->lib, "nvrtcCompileProgram", r->compile) && sym(r->lib, "nvrtcDestroyProgram", r->destroy) &&
              sym(r->lib, "nvrtcGetProgramLogSize", r->log_size) && sym(r->lib, "nvrtcGetProgramLog", r->log) &&
              sym(r->lib, "nvrtcGetCUBINSize", r->cubin_size) && sym(r->lib, "nvrtcGetCUBIN", r->cubin) &&
              sym(r->lib, "nvrtcGetPTXSize", r->ptx_size) && sym(r->lib, "nvrtcGetPTX", r->ptx) &&
              sym(r->lib, "nvrtcGetErrorString", r->error);
    if (!ok) {
      r->info.why = r->info.path + " lacks NVRTC's functions (too old: CUDA 11.1 or later is needed)";
      return r;
    }
    int major = 0, minor = 0;
    r->version(&major, &minor);
    r->info.version = std::to_string(major) + "." + std::to_string(minor);
    r->info.available = true;
    return r;
  }();
  return *n;
}

// ptxas's report in a verbose log: the most registers, spill bytes and
// static shared memory of any function.
void resources(const std::string& log, int64_t& registers, int64_t& spills, int64_t& shared) {
  static const std::regex regs("Used ([0-9]+) registers");
  static const std::regex spill("([0-9]+) bytes spill (stores|loads)");
  static const std::regex smem("([0-9]+) bytes smem");
  registers = spills = shared = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), smem); it != std::sregex_iterator(); ++it)
    shared = std::max<int64_t>(shared, std::stoll((*it)[1]));
  for (auto it = std::sregex_iterator(log.begin(), log.end(), regs); it != std::sregex_iterator(); ++it)
    registers = std::max<int64_t>(registers, std::stoll((*it)[1]));
  for (auto it = std::sregex_iterator(log.begin(), log.end(), spill); it != std::sregex_iterator(); ++it)
    spills = std::max<int64_t>(spills, std::stoll((*it)[1]));
}

std::mutex g_check_mu;
std::vector<int> g_check_archs;
CheckStats g_check, g_check_marked;

// What the disk cache keeps for a CUDA target's kernel: its launch shape,
// a newline, its code.
std::string with_shape(const codegen::LaunchShape& s, const std::string& code) { return s.serialize() + "\n" + code; }
codegen::LaunchShape split_shape(const std::string& object, std::string* code) {
  const size_t nl = object.find('\n');
  if (nl == std::string::npos) throw CompileError("cached kernel without its launch shape");
  try {
    codegen::LaunchShape s = codegen::LaunchShape::parse(object.substr(0, nl));
    *code = object.substr(nl + 1);
    return s;
  } catch (const std::invalid_argument& e) {
    throw CompileError(std::string("cached kernel: ") + e.what());
  }
}

// The check: the kernel's CUDA text through NVRTC for every check architecture.
void check(const codegen::Source& src) {
  std::vector<int> archs = check_archs();
  if (archs.empty()) return;
  const std::string text = codegen::cuda_prelude() + src.code;
  int64_t worst_regs = 0, worst_spill = 0, worst_shared = 0;
  for (int arch : archs) {
    CudaBinary b = nvrtc_compile(text, src.entry + ".cu", arch, false, true, src.contract);
    int64_t regs = 0, spills = 0, shared = 0;
    resources(b.log, regs, spills, shared);
    if (shared > kMaxSharedBytes)
      throw CompileError("CUDA check: sm_" + std::to_string(arch) + " uses " + std::to_string(shared) +
                         " bytes of shared memory (at most " + std::to_string(kMaxSharedBytes) + "):\n" + b.log);
    worst_shared = std::max(worst_shared, shared);
    if (spills > kMaxSpillBytes)
      throw CompileError("CUDA check: sm_" + std::to_string(arch) + " spills " + std::to_string(spills) +
                         " bytes (at most " + std::to_string(kMaxSpillBytes) + "):\n" + b.log);
    worst_regs = std::max(worst_regs, regs);
    worst_spill = std::max(worst_spill, spills);
  }
  std::lock_guard<std::mutex> lock(g_check_mu);
  for (CheckStats* st : {&g_check, &g_check_marked}) {
    st->kernels++;
    st->compiles += static_cast<int64_t>(archs.size());
    st->max_registers = std::max(st->max_registers, worst_regs);
    st->max_spill_bytes = std::max(st->max_spill_bytes, worst_spill);
    st->max_shared_bytes = std::max(st->max_shared_bytes, worst_shared);
  }
}

class EmulatedCompiler final : public Compiler {
 public:
  // (A kernel compiled while the check is on was checked: with it on, only
  // such kernels come from the disk cache.)
  std::string id() const override {
    std::string c;
    for (int a : check_archs()) c += "|checked sm_" + std::to_string(a);
    return "cuda-emulated|" + CpuCompiler::instance().flags_id() + c;
  }
  Code compile(const codegen::Source& src, const std::string& symbol, std::string* object, Opt opt) override {
    check(src);
    codegen::Source emu = src;
    emu.code = codegen::emulation_prelude() + src.code + codegen::emulation_entry(src);
    std::string obj;
    Code c;
    c.fn = CpuCompiler::instance().compile(emu, symbol, object ? &obj : nullptr, opt);
    c.shape = src.shape;
    if (object && !obj.empty()) *object = with_shape(src.shape, obj);
    return c;
  }
  Code load(const std::string& object, const std::string& symbol) override {
    Code c;
    std::string obj;
    c.shape = split_shape(object, &obj);
    c.fn = CpuCompiler::instance().load_object(obj, symbol);
    return c;
  }
};

class CudaCompiler final : public Compiler {
 public:
  std::string id() const override {
    std::string why;
    CudaDriver* d = CudaDriver::get(&why);
    return "cuda|nvrtc " + nvrtc_info().version + "|sm_" + std::to_string(d ? d->arch() : 0) + "|fmad=false unless contract";
  }
  Code compile(const codegen::Source& src, const std::string& symbol, std::string* object, Opt) override {
    CudaDriver& d = driver();
    CudaBinary b = nvrtc_compile(codegen::cuda_prelude() + src.code, symbol + ".cu", d.arch(), false, false, src.contract);
    Code c = load_cubin(d, b.cubin, src.shape);
    if (object) *object = with_shape(src.shape, b.cubin);
    return c;
  }
  Code load(const std::string& object, const std::string&) override {
    std::string cubin;
    codegen::LaunchShape s = split_shape(object, &cubin);
    return load_cubin(driver(), cubin, s);
  }

 private:
  static CudaDriver& driver() {
    std::string why;
    CudaDriver* d = CudaDriver::get(&why);
    if (!d) throw CompileError("CUDA: " + why);
    return *d;
  }
  static Code load_cubin(CudaDriver& d, const std::string& cubin, const codegen::LaunchShape& s) {
    Code c;
    c.shape = s;
    std::vector<std::string> names;
    for (const codegen::LaunchShape::Phase& p : s.phases) names.push_back(p.symbol);
    c.module = d.load(cubin, names, &c.functions);
    return c;
  }
};

}  // namespace

void set_nvrtc_library(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_nvrtc_mu);
  g_nvrtc_path = path;
}

NvrtcInfo nvrtc_info() { return nvrtc().info; }

CudaBinary nvrtc_compile(const std::string& source, const std::string& name, int arch, bool want_ptx, bool verbose,
                         bool fmad) {
  Nvrtc& n = nvrtc();
  if (!n.info.available) throw CompileError(n.info.why);
  nvrtcProgram prog = nullptr;
  if (int r = n.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr))
    throw CompileError(std::string("nvrtcCreateProgram: ") + n.error(r));
  struct Destroy {
    Nvrtc& n;
    nvrtcProgram& p;
    ~Destroy() { n.destroy(&p); }
  } destroy{n, prog};
  const std::string arch_opt = "--gpu-architecture=sm_" + std::to_string(arch);
  std::vector<const char*> opts = {arch_opt.c_str(), fmad ? "--fmad=true" : "--fmad=false", "-default-device", "-w"};
  if (verbose) opts.push_back("--ptxas-options=-v");
  const int rc = n.compile(prog, static_cast<int>(opts.size()), opts.data());
  CudaBinary out;
  size_t size = 0;
  n.log_size(prog, &size);
  out.log.resize(size);
  if (size) n.log(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc != 0)
    throw CompileError("NVRTC (sm_" + std::to_string(arch) + "): " + n.error(rc) + "\n" + out.log.substr(0, 4000));
  n.cubin_size(prog, &size);
  out.cubin.resize(size);
  if (size) n.cubin(prog, out.cubin.data());
  if (want_ptx) {
    n.ptx_size(prog, &size);
    out.ptx.resize(size);
    if (size) n.ptx(prog, out.ptx.data());
  }
  return out;
}

Compiler& cuda_compiler() {
  static CudaCompiler* c = new CudaCompiler();
  return *c;
}

Compiler& emulated_compiler() {
  static EmulatedCompiler* c = new EmulatedCompiler();
  return *c;
}

void set_check_archs(const std::vector<int>& archs) {
  std::lock_guard<std::mutex> lock(g_check_mu);
  g_check_archs = archs;
}

std::vector<int> check_archs() {
  std::lock_guard<std::mutex> lock(g_check_mu);
  return g_check_archs;
}

CheckStats check_stats(bool since_mark) {
  std::lock_guard<std::mutex> lock(g_check_mu);
  return since_mark ? g_check_marked : g_check;
}

void mark_check_stats() {
  std::lock_guard<std::mutex> lock(g_check_mu);
  g_check_marked = CheckStats{};
}

}  // namespace nf::jit

// LoopNest (through the CUDA tail: lower::passes::gpu_grid) -> CUDA C++.
//
// A kernel's top level is cut into phases (codegen.h: LaunchShape): each
// GpuBlocks loop is a phase of its own, run grid-stride by every thread of
// the launch's grid, or block-stride by its blocks where the loop's
// threads cooperate (Stmt::threads: the phase's block size; GpuThreads
// loops as NF_THREADS, GpuShared arrays __shared__, GpuPrivate arrays
// each thread's own (NF_PRIVATE / NF_LANE: one per thread on the device,
// the block's threads' side by side in the emulation), Barriers
// __syncthreads()); the statements between such loops are phases run by
// one thread. The scalars the top level computes from the parameters alone
// (extents, share counts) every phase computes itself; the other variables
// the top level declares -- scalars, the arrays it allocates -- live in the
// kernel's frame (device memory the launcher allocates, where there are
// any), so every phase sees what the ones before it set: each phase reads
// them on entry, and a one-thread phase writes back what it set. A grid
// phase may not assign them (its iterations run at once). A map kernel is
// one launch.
//
// The text is both CUDA C++ (with cuda_prelude(), for NVRTC) and C (with
// emulation_prelude() and emulation_entry(), for clang): threadIdx and its
// kin are builtins on the device and parameters in the emulation, where the
// entry runs a phase block after block, thread after thread (no phase waits
// for another thread: its iterations are independent) -- a cooperative
// phase once per block, its NF_THREADS loops running every thread of the
// block in turn (barriers then hold by construction; the verifier checks
// that the kernel has them).
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"
#include "core/vmath_list.h"
#include "codegen/nest_speller.h"
#include "codegen/scalar_c.h"

namespace nf::codegen {

namespace {

using lower::Ex;
using lower::ExP;
using lower::LoopKind;
using lower::Scope;
using lower::Stmt;
using lower::StmtP;

// Threads a kernel's shares are cut for (MaxThreads): the device's
// prelude defines it. The grid may have more or fewer threads: grid-stride.
constexpr const char* kMaxThreads = "NF_MAX_THREADS";

// The highest int / float parameter slot a nest reads, plus one.
void param_counts(const Ex& e, int& ni, int& nf) {
  if (e.k == Ex::K::IntParam) ni = std::max(ni, e.slot + 1);
  if (e.k == Ex::K::FloatParam) nf = std::max(nf, e.slot + (is_complex(e.dtype) ? 2 : 1));
  for (const ExP& a : e.args) param_counts(*a, ni, nf);
}
void param_counts(const Stmt& s, int& ni, int& nf) {
  for (const ExP* e : {&s.lo, &s.hi, &s.step, &s.init, &s.target, &s.value, &s.count, &s.cond})
    if (*e) param_counts(**e, ni, nf);
  for (const ExP& a : s.args) param_counts(*a, ni, nf);
  for (const StmtP& c : s.body) param_counts(*c, ni, nf);
  for (const StmtP& c : s.else_body) param_counts(*c, ni, nf);
}

bool assigns(const Stmt& s, const std::string& var) {
  if ((s.k == Stmt::K::Assign && s.target->k == Ex::K::Var && s.target->name == var)) return true;
  for (const StmtP& c : s.body)
    if (assigns(*c, var)) return true;
  for (const StmtP& c : s.else_body)
    if (assigns(*c, var)) return true;
  return false;
}

class CudaRenderer final : public detail::NestSpeller {
 public:
  explicit CudaRenderer(const lower::LoopNest& n) : NestSpeller(n) { helpers_.complex_structs = true; }

  Source run() {
    if (n_.uses_threads) throw std::logic_error("render_cuda: a Cores loop (the CUDA tail has none)");
    collect_hoisted();
    collect_frame();
    int ni = 0, nf = 0;
    for (const StmtP& s : n_.body) param_counts(*s, ni, nf);
    shape_.num_ptrs = n_.num_ptrs;
    shape_.num_ints = ni;
    shape_.num_floats = nf;
    // The phases: each GpuBlocks loop, and each run of statements between them.
    std::ostringstream phases;
    std::vector<const Stmt*> run;
    auto serial = [&] {
      if (!run.empty()) phase(phases, run, nullptr);
      run.clear();
    };
    for (const StmtP& s : n_.body) {
      if (hoisted(*s)) continue;
      if (s->k == Stmt::K::For && s->loop == LoopKind::GpuBlocks) {
        serial();
        phase(phases, {}, s.get());
      } else if (s->k == Stmt::K::For && s->loop == LoopKind::GpuThreads) {
        throw std::logic_error("render_cuda: a GpuThreads loop at the top level");
      } else {
        run.push_back(s.get());
      }
    }
    serial();
    if (shape_.phases.empty()) phase(phases, {}, nullptr);  // (an empty kernel: one phase doing nothing)
    std::ostringstream src;
    src << "/* numfuse CUDA kernel " << n_.name << (n_.contract ? " (fp contract)" : "") << " */\n";
    src << "struct " << n_.name << "_args { char* p[" << std::max(1, shape_.num_ptrs) << "]; int64_t ip["
        << std::max(1, ni) << "]; double fp[" << std::max(1, nf) << "]; };\n";
    src << "struct " << n_.name << "_frame {";
    for (const Field& f : frame_)
      src << " " << type(f.dtype) << (f.pointer ? "* " : " ") << f.name << (f.count > 0 ? "[" + std::to_string(f.count) + "]" : "")
          << ";";
    src << " char nf_end; };\n";
    if (uses_alloc_) src << "NF_MALLOC_DECLS\n";
    src << helpers_.definitions() << phases.str();
    return {src.str(), n_.name, false, shape_, n_.contract};
  }

 private:
  // A variable of the top level, kept in the frame.
  struct Field {
    std::string name;
    DType dtype;
    bool pointer = false;  // a heap array's address
    int64_t count = 0;     // a Local array's elements (0: a scalar)
  };
  std::vector<Field> frame_;
  LaunchShape shape_;
  int nphases_ = 0;
  int64_t threads_ = 0;  // the cooperative phase's block size (its private arrays' copies when emulated)

  const char* who() const override { return "render_cuda"; }

  std::string thread_ex(const Ex& e) override {
    if (e.k == Ex::K::MaxThreads) return kMaxThreads;
    throw std::logic_error("render_cuda: a thread index or count (only Cores loops have them)");
  }

  // The top level's scalars computed from the kernel's parameters alone
  // (extents, share counts), never assigned again: every phase computes
  // them itself, so they need neither the frame nor a phase of their own
  // (a map kernel is one launch).
  std::vector<const Stmt*> hoisted_;
  bool hoisted(const Stmt& s) const { return std::find(hoisted_.begin(), hoisted_.end(), &s) != hoisted_.end(); }
  bool from_params(const Ex& e) const {
    switch (e.k) {
      case Ex::K::Load:
      case Ex::K::Address:
      case Ex::K::ThreadIndex:
      case Ex::K::ThreadCount:
        return false;
      case Ex::K::Var: {
        for (const Stmt* h : hoisted_)
          if (h->name == e.name) return true;
        return false;
      }
      default:
        for (const ExP& a : e.args)
          if (!from_params(*a)) return false;
        return true;
    }
  }
  void collect_hoisted() {
    for (const StmtP& s : n_.body) {
      if (s->k != Stmt::K::Decl || !s->init || !from_params(*s->init)) continue;
      bool again = false;
      for (const StmtP& t : n_.body) again |= assigns(*t, s->name);
      if (!again) hoisted_.push_back(s.get());
    }
  }

  void collect_frame() {
    int64_t bytes = 0;
    for (const StmtP& s : n_.body) {
      if (hoisted(*s)) continue;
      if (s->k == Stmt::K::Decl) {
        frame_.push_back({s->name, s->dtype});
        bytes += 16;
      } else if (s->k == Stmt::K::Alloc) {
        const bool local = s->scope == Scope::Local;
        if (local && (!s->count || s->count->k != Ex::K::IntLit))
          throw std::logic_error("render_cuda: a Local array without a literal count");
        if (s->scope == Scope::GpuShared) throw std::logic_error("render_cuda: shared memory at the top level");
        frame_.push_back({s->name, s->dtype, !local, local ? std::max<int64_t>(s->count->ival, 1) : 0});
        bytes += local ? 16 + itemsize(s->dtype) * std::max<int64_t>(s->count->ival, 1) : 16;
      }
    }
    shape_.frame_bytes = frame_.empty() ? 0 : bytes + 16;
  }

  const Field* field(const std::string& name) const {
    for (const Field& f : frame_)
      if (f.name == name) return &f;
    return nullptr;
  }

  // One phase: `loop` (a GpuBlocks loop, grid-stride) or the statements `run` (one thread).
  void phase(std::ostringstream& os, const std::vector<const Stmt*>& run, const Stmt* loop) {
    const std::string fn = n_.name + "_p" + std::to_string(nphases_++);
    const int64_t block = n_.grid_threads > 0 ? n_.grid_threads : 256;
    shape_.phases.push_back({fn, loop != nullptr, loop ? loop->threads : 0, block});
    // Blocks of more than 256 threads: at most 65,536 / threads registers a
    // thread, or the launch fails (ptxas keeps to the bound). (Not below:
    // any count up to 255 fits, and a bound makes ptxas trade registers
    // for occupancy, spilling a contraction's tile.)
    const int64_t bound = !loop ? 1 : loop->threads > 0 ? loop->threads : block;
    os << "NF_KERNEL void ";
    if (bound > 256) os << "NF_BOUNDS(" << bound << ") ";
    os << fn << "(NF_COORDS const __grid_constant__ struct " << n_.name
       << "_args nf_a, struct " << n_.name << "_frame* __restrict__ nf_F) {\n";
    if (n_.contract) os << "#ifndef __CUDACC_RTC__\n  #pragma clang fp contract(fast)\n#endif\n";
    os << "  const int64_t* __restrict__ ip = nf_a.ip;\n  const double* __restrict__ fp = nf_a.fp;\n";
    os << "  (void)ip; (void)fp; (void)nf_F;\n";
    for (int i = 0; i < n_.num_ptrs; ++i) {
      const char* t = n_.ptr_types[i] == DType::Bool ? "uint8_t" : type(n_.ptr_types[i]);
      os << "  " << t << "* __restrict__ p" << i << " = (" << t << "*)nf_a.p[" << i << "];\n";
    }
    for (const Stmt* h : hoisted_)
      os << "  const " << type(h->dtype) << " " << h->name << " = " << ex(*h->init) << "; (void)" << h->name << ";\n";
    for (const Field& f : frame_) {
      if (f.count > 0)
        os << "  " << type(f.dtype) << "* " << f.name << " = nf_F->" << f.name << ";\n";
      else
        os << "  " << type(f.dtype) << (f.pointer ? "* " : " ") << f.name << " = nf_F->" << f.name << ";\n";
    }
    if (loop) {
      for (const Field& f : frame_)
        if (f.count == 0 && assigns(*loop, f.name))
          throw std::logic_error("render_cuda: a grid phase assigns the kernel's variable " + f.name);
      const Stmt& s = *loop;
      threads_ = s.threads;
      if (s.threads > 0)  // (a block per iteration: its threads cooperate)
        os << "  for (int64_t " << s.name << " = (int64_t)blockIdx.x; " << s.name << " < " << ex(*s.hi) << "; "
           << s.name << " += (int64_t)gridDim.x) {\n";
      else
        os << "  for (int64_t " << s.name << " = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; " << s.name << " < "
           << ex(*s.hi) << "; " << s.name << " += (int64_t)gridDim.x * blockDim.x) {\n";
      for (const StmtP& c : s.body) stmt(os, *c, 2);
      os << "  }\n";
    } else {
      for (const Stmt* s : run) top(os, *s);
      for (const Field& f : frame_)
        if (f.count == 0) os << "  nf_F->" << f.name << " = " << f.name << ";\n";
    }
    os << "}\n";
  }

  // A statement of a one-thread phase at the top level: the frame's
  // variables are declared already.
  void top(std::ostringstream& os, const Stmt& s) {
    switch (s.k) {
      case Stmt::K::Decl:
        if (s.init) os << "  " << s.name << " = " << ex(*s.init) << ";\n";
        return;
      case Stmt::K::Alloc:
        if (s.scope == Scope::Local) return;  // (the frame's array)
        uses_alloc_ = true;
        os << "  " << s.name << " = (" << type(s.dtype) << "*)malloc(sizeof(" << type(s.dtype)
           << ") * (unsigned long)(" << ex(*s.count) << " > 0 ? " << ex(*s.count) << " : 1));\n";
        return;
      default:
        stmt(os, s, 1);
    }
  }

  void loop(std::ostringstream& os, const Stmt& s, int d) override {
    switch (s.loop) {
      case LoopKind::Cores:
      case LoopKind::Parallel:
        throw std::logic_error("render_cuda: a CPU thread loop (the CUDA tail leaves none)");
      case LoopKind::GpuThreads:
        // (directly in a cooperative phase's body) thread x of the block takes x, x + T, ...
        os << indent(d) << "NF_THREADS(" << s.name << ", " << ex(*s.hi) << ") {\n";
        lane_var_ = s.name;
        for (const StmtP& c : s.body) stmt(os, *c, d + 1);
        lane_var_.clear();
        os << indent(d) << "}\n";
        return;
      case LoopKind::GpuBlocks:
        throw std::logic_error("render_cuda: a GPU loop below the kernel's top level");
      case LoopKind::Unrolled:
        os << indent(d) << "#pragma unroll\n";
        break;
      default:
        break;
    }
    plain_loop(os, s, d);
  }

  void alloc(std::ostringstream& os, const Stmt& s, int d) override {
    if (s.scope == Scope::Local) {  // registers / local memory
      os << indent(d) << type(s.dtype) << " " << s.name << "[" << ex(*s.count) << "] __attribute__((aligned(16)));\n";
      return;
    }
    if (s.scope == Scope::GpuPrivate) {  // (a thread's own: registers where its indices are constants)
      if (s.count->k != Ex::K::IntLit) throw std::logic_error("render_cuda: a private array of no literal count");
      lanes_[s.name] = s.count->ival;
      os << indent(d) << type(s.dtype) << " " << s.name << "[NF_PRIVATE(" << s.count->ival << ", " << threads_
         << ")];\n";
      return;
    }
    if (s.scope == Scope::GpuShared) {
      os << indent(d) << "__shared__ " << type(s.dtype) << " " << s.name << "[" << ex(*s.count) << "];\n";
      return;
    }
    heap_alloc(os, s, d);
  }

  void barrier(std::ostringstream& os, int d) override { os << indent(d) << "__syncthreads();\n"; }

  void stage(std::ostringstream&, const Stmt&, int) override {
    throw std::logic_error("render_cuda: a Stage (multi-stage kernels are the CPU's)");
  }
};

constexpr const char* kTypes =
    "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n";

// The host's one-implementation math (runtime/vmath.h: nf_m_exp) is the
// device's own libm function on the GPU (CUDA's exp), where every thread
// computes every element the same way.
std::string device_math() {
  std::string s;
  for (const char* f : {
#define NF_NAME(f) #f,
           NF_VMATH_UNARY(NF_NAME) NF_VMATH_BINARY(NF_NAME)
#undef NF_NAME
       })
    s += std::string("#define nf_m_") + f + " " + f + "\n#define nf_m_" + f + "f " + f + "f\n";
  return s;
}

}  // namespace

Source render_cuda(const lower::LoopNest& nest) { return CudaRenderer(nest).run(); }

const std::string& cuda_prelude() {
  // NVRTC has no standard headers, and C's builtins for NaN, infinity and
  // the sign bit are not CUDA's: spelled with the device's own. Plain
  // declarations (the libm functions the helpers declare) are device
  // functions under NVRTC's -default-device.
  static const std::string p = std::string("/* numfuse CUDA prelude */\n") + kTypes + device_math() + complex_struct_prelude() +
                               "#define NF_KERNEL extern \"C\" __global__\n"
                               "#define NF_COORDS\n"
                               "#define NF_BOUNDS(n) __launch_bounds__(n)\n"
                               "#define NF_MAX_THREADS ((int64_t)2048)\n"
                               "#define NF_THREADS(v, hi) for (int64_t v = (int64_t)threadIdx.x; v < (hi); v += (int64_t)blockDim.x)\n"
                               "#define NF_PRIVATE(n, threads) (n)\n"
                               "#define NF_LANE(v, n) 0\n"
                               "#define NF_MALLOC_DECLS\n"
                               "#define __builtin_nan(s) __longlong_as_double(0x7ff8000000000000LL)\n"
                               "#define __builtin_nanf(s) __int_as_float(0x7fc00000)\n"
                               "#define __builtin_inf() __longlong_as_double(0x7ff0000000000000LL)\n"
                               "#define __builtin_inff() __int_as_float(0x7f800000)\n"
                               "#define __builtin_signbit(x) signbit(x)\n"
                               "#define _Bool bool\n";
  return p;
}

const std::string& emulation_prelude() {
  // The emulated device: threadIdx and its kin are each phase's first
  // parameters; MaxThreads small, so reductions across shares run with
  // several shares even on a few emulated threads.
  // Floating-point operations as written (FENV_ACCESS): NumPy's warnings
  // come from the flags the emulated kernels raise, and the host's
  // optimizer would otherwise compute scalars in vector registers whose
  // other lanes hold whatever they held (a NaN there raises `invalid`).
  static const std::string p = std::string("/* numfuse emulated CUDA prelude */\n#pragma STDC FENV_ACCESS ON\n") + kTypes + complex_struct_prelude() +
                               "typedef struct { unsigned x, y, z; } nf_dim3;\n"
                               "#define NF_KERNEL static __attribute__((noinline))\n"
                               "#define NF_COORDS const nf_dim3 threadIdx, const nf_dim3 blockIdx, "
                               "const nf_dim3 blockDim, const nf_dim3 gridDim,\n"
                               "#define __grid_constant__\n"
                               "#define NF_BOUNDS(n)\n"
                               "#define NF_MAX_THREADS ((int64_t)5)\n"
                               "#define __shared__\n"
                               "#define __syncthreads() ((void)0)\n"
                               "#define NF_THREADS(v, hi) for (int64_t nf_x_##v = 0; nf_x_##v < (int64_t)blockDim.x; ++nf_x_##v) "
                               "for (int64_t v = nf_x_##v; v < (hi); v += (int64_t)blockDim.x)\n"
                               "#define NF_PRIVATE(n, threads) ((n) * (threads))\n"
                               "#define NF_LANE(v, n) ((v) * (n))\n"
                               "#define NF_MALLOC_DECLS void* malloc(unsigned long); void free(void*);\n";
  return p;
}

std::string emulation_entry(const Source& s) {
  // The KernelFn ABI: nf_p holds the kernel's pointers, then the frame and
  // the launch (runtime: emulated device): which phase, on how many blocks
  // of how many threads.
  const LaunchShape& sh = s.shape;
  std::ostringstream os;
  os << "struct nf_emu_launch { int64_t phase, blocks, threads, cooperative; };\n";
  os << "void " << s.entry << "(char** nf_p, const int64_t* ip, const double* fp) {\n";
  os << "  struct " << s.entry << "_args a;\n";
  os << "  for (int k = 0; k < " << sh.num_ptrs << "; ++k) a.p[k] = nf_p[k];\n";
  os << "  for (int k = 0; k < " << sh.num_ints << "; ++k) a.ip[k] = ip[k];\n";
  os << "  for (int k = 0; k < " << sh.num_floats << "; ++k) a.fp[k] = fp[k];\n";
  os << "  struct " << s.entry << "_frame* F = (struct " << s.entry << "_frame*)nf_p[" << sh.num_ptrs << "];\n";
  os << "  const struct nf_emu_launch* L = (const struct nf_emu_launch*)nf_p[" << sh.num_ptrs + 1 << "];\n";
  // A cooperative phase is called once per block, as its thread 0: its
  // GpuThreads loops (NF_THREADS) run every thread of the block in turn,
  // each loop to its end before the next statement, so a barrier is
  // where it is already; the statements between them are uniform.
  os << "  const nf_dim3 g = {(unsigned)L->blocks, 1, 1}, b = {(unsigned)L->threads, 1, 1};\n";
  os << "  const unsigned callers = L->cooperative ? 1u : b.x;\n";
  os << "  for (unsigned bx = 0; bx < g.x; ++bx)\n    for (unsigned tx = 0; tx < callers; ++tx) {\n";
  os << "      const nf_dim3 t = {tx, 0, 0}, bi = {bx, 0, 0};\n      switch (L->phase) {\n";
  for (size_t i = 0; i < sh.phases.size(); ++i)
    os << "        case " << i << ": " << sh.phases[i].symbol << "(t, bi, b, g, a, F); break;\n";
  os << "      }\n    }\n}\n";
  return os.str();
}

std::string LaunchShape::serialize() const {
  std::ostringstream os;
  os << "shape " << frame_bytes << " " << num_ptrs << " " << num_ints << " " << num_floats << " " << phases.size();
  // (grid: 0, or the block size of a grid phase; 1 read as 256, the first form)
  for (const Phase& p : phases) os << " " << p.symbol << " " << (p.grid ? p.block : 0) << " " << p.threads;
  return os.str();
}

LaunchShape LaunchShape::parse(const std::string& text) {
  std::istringstream is(text);
  std::string tag;
  LaunchShape s;
  size_t n = 0;
  if (!(is >> tag >> s.frame_bytes >> s.num_ptrs >> s.num_ints >> s.num_floats >> n) || tag != "shape" || n > 4096)
    throw std::invalid_argument("launch shape: malformed header");
  for (size_t i = 0; i < n; ++i) {
    Phase p;
    int64_t grid = 0;
    if (!(is >> p.symbol >> grid >> p.threads) || p.threads < 0 || p.threads > 1024 || grid < 0 || grid > 1024)
      throw std::invalid_argument("launch shape: malformed phase");
    p.grid = grid != 0;
    p.block = grid > 1 ? grid : 256;
    s.phases.push_back(std::move(p));
  }
  return s;
}

}  // namespace nf::codegen

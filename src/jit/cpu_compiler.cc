// clang frontend + ORC LLJIT.
//
// clang emits each kernel's module unoptimized; numfuse then runs one of two
// pass pipelines (jit.h Opt) with the vector forms of numfuse's math
// functions (runtime/vmath.h, vmath_table) and, for wide kernels on AVX-512 CPUs, 512-bit
// vectors (tune::Schedule::wide): Full runs
// LLVM's O3 pipeline and -O3 code generation; Quick runs kQuickPipeline and
// generates code with a target machine at -O0 (fast instruction selection
// and register allocation). Hand-written reference loops (compile_openmp_c)
// keep clang's own -O3 pipeline, libmvec table and vector width.
//
// Each compile builds its own CompilerInstance and LLVMContext, so compiles
// run concurrently; LLJIT itself is thread-safe. Every kernel lives in its own
// JITDylib, which defines the host services (nf_parallel, nf_max_threads: the
// only way a kernel reaches threads; the math functions of runtime/vmath.h)
// and resolves the rest (libm, malloc) from the process. Hand-written OpenMP reference loops
// (compile_openmp_c) resolve libomp first, so a libgomp loaded by some other
// extension cannot capture their omp_* calls.
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/CodeGen/ModuleBuilder.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutorProcessControl.h>
#include <llvm/ExecutionEngine/Orc/TaskDispatch.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Pass.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include "core/buffer.h"
#include "core/fpe.h"
#include "jit/exact_division.h"
#include "jit/jit.h"
#include "runtime/vmath.h"

#ifndef NUMFUSE_LIBOMP
#define NUMFUSE_LIBOMP "libomp.so.5"
#endif

extern "C" int omp_get_max_threads(void);  // (libomp, linked: see CMakeLists.txt)

namespace nf::jit {

std::string libomp_path() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&omp_get_max_threads), &info) && info.dli_fname) return info.dli_fname;
  return "";
}

uint64_t hash64_more(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t hash64(const std::string& s) { return hash64_more(1469598103934665603ull, s); }

// Receives every object file the JIT produces, by module name, so a fresh
// compile can be written to the disk cache.
class CapturingObjectCache : public llvm::ObjectCache {
 public:
  void notifyObjectCompiled(const llvm::Module* m, llvm::MemoryBufferRef obj) override {
    std::lock_guard<std::mutex> lock(mu_);
    objects_[m->getModuleIdentifier()] = obj.getBuffer().str();
  }
  std::unique_ptr<llvm::MemoryBuffer> getObject(const llvm::Module*) override { return nullptr; }
  bool take(const std::string& name, std::string* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(name);
    if (it == objects_.end()) return false;
    *out = std::move(it->second);
    objects_.erase(it);
    return true;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> objects_;
};

// Target machines cost about a millisecond to build (the subtarget's
// tables): compiles take one from a pool and give it back, so concurrent
// compiles still each own one. Code generation at -O0 switches fast
// instruction selection on in the machine it runs with, so each level has
// its own pool.
class MachinePool {
 public:
  MachinePool(llvm::orc::JITTargetMachineBuilder jtmb, llvm::CodeGenOptLevel level)
      : jtmb_(std::move(jtmb)), level_(level) {}
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        auto tm = std::move(free_.back());
        free_.pop_back();
        return tm;
      }
    }
    auto made = jtmb_.createTargetMachine();
    if (made) (*made)->setOptLevel(level_);
    return made;
  }
  void give(std::unique_ptr<llvm::TargetMachine> tm) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(tm));
  }

 private:
  llvm::orc::JITTargetMachineBuilder jtmb_;
  llvm::CodeGenOptLevel level_;
  std::mutex mu_;
  std::vector<std::unique_ptr<llvm::TargetMachine>> free_;
};

// ORC's ConcurrentIRCompiler builds a TargetMachine for every module; this
// one takes it from the pool of the module's level (the flag compile_with
// sets on a Quick module).
class PooledIRCompiler : public llvm::orc::IRCompileLayer::IRCompiler {
 public:
  PooledIRCompiler(llvm::orc::JITTargetMachineBuilder jtmb, llvm::ObjectCache* cache, MachinePool* full,
                   MachinePool* quick)
      : IRCompiler(llvm::orc::irManglingOptionsFromTargetOptions(jtmb.getOptions())),
        cache_(cache),
        full_(full),
        quick_(quick) {}
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module& m) override {
    const bool quick = m.getModuleFlag(kQuickFlag) != nullptr;
    MachinePool& pool = quick ? *quick_ : *full_;
    auto tm = pool.take();
    if (!tm) return tm.takeError();
    auto t0 = std::chrono::steady_clock::now();
    auto obj = llvm::orc::SimpleCompiler(**tm, cache_)(m);
    if (std::getenv("NUMFUSE_COMPILE_TIMES"))
      std::fprintf(stderr, "numfuse codegen %s (%s): %.1f ms\n", m.getModuleIdentifier().c_str(),
                   quick ? "quick" : "full",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    pool.give(std::move(*tm));
    return obj;
  }

  static constexpr const char* kQuickFlag = "numfuse.quick";

 private:
  llvm::ObjectCache* cache_;
  MachinePool* full_;
  MachinePool* quick_;
};

struct CpuCompiler::Impl {
  CapturingObjectCache objects;
  // Full: -O3 code generation, and the cost model of Quick pass pipelines
  // (which only read the machine); Quick: -O0 code generation. (Before
  // `jit`, whose compiler points at them.)
  std::unique_ptr<MachinePool> full_machines, quick_machines;
  std::thread warm;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string cpu;
  std::string triple;
  std::vector<std::string> args;
  std::string flags_id;
  bool zmm = false;  // wide kernels (Source::wide) use 512-bit vectors
  bool fma = false;  // the CPU fuses multiply-add: divisions by invariants may use it (ExactDivisionPass)
  std::atomic<bool> exact_division{true};  // set_exact_division
  std::vector<llvm::VecDesc> vector_math, vector_math_wide;  // vmath_table(false), vmath_table(zmm)
  std::mutex dylib_mu;
  uint64_t dylibs = 0;
};

namespace {

std::string find_libomp() {
  // The libomp this module was linked against, wherever it was loaded from.
  std::string path = libomp_path();
  if (!path.empty() && dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return path;
  if (dlopen(NUMFUSE_LIBOMP, RTLD_NOW | RTLD_GLOBAL)) return NUMFUSE_LIBOMP;
  if (dlopen("libomp.so.5", RTLD_NOW | RTLD_GLOBAL)) return "libomp.so.5";
  return "";
}

// The host services of jit.h. A region's thread bodies are TBB tasks in an
// arena of the configured size: the calling thread takes part and runs every
// body no worker has taken, so a kernel never waits for a thread the OS has
// not scheduled. (libomp's fork/join did: with a BLAS library's threads
// spinning on the other cores after a matmul, the join of a 0.1 ms kernel
// waited a scheduler time slice, ~4 ms.)
struct Threads {
  std::mutex mu;
  int n = 0;                  // 0: not yet decided
  std::atomic<int> known{0};  // n once decided (read without the lock)
  std::shared_ptr<tbb::task_arena> arena;
  std::atomic<bool> forked{false};  // a forked child: TBB's workers do not exist here
};

Threads& threads_state() {
  static Threads* t = [] {
    auto* s = new Threads;
    pthread_atfork(nullptr, nullptr, [] {
      Threads& c = threads_state();
      new (&c.mu) std::mutex();  // another thread may have held it at the fork
      c.forked.store(true);
    });
    return s;
  }();
  return *t;
}

int default_threads() {
  // OMP_NUM_THREADS keeps its meaning (numfuse used libomp's threads before).
  if (const char* e = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(e);
    if (n > 0) return n;
  }
  return std::max(1, tbb::this_task_arena::max_concurrency());
}

std::shared_ptr<tbb::task_arena> arena(int* n) {
  Threads& t = threads_state();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.n == 0) t.n = default_threads();
  t.known.store(t.n, std::memory_order_relaxed);
  *n = t.n;
  if (t.n > 1 && !t.arena) t.arena = std::make_shared<tbb::task_arena>(t.n);
  return t.arena;
}

using RegionBody = void (*)(void*, int64_t, int64_t);

}  // namespace

void set_threads(int n) {
  if (n < 1) throw std::invalid_argument("threads must be at least 1");
  Threads& t = threads_state();
  std::lock_guard<std::mutex> lock(t.mu);
  if (n == t.n) return;
  t.n = n;
  t.known.store(n, std::memory_order_relaxed);
  t.arena.reset();  // regions running keep theirs
}

int threads() {
  int n;
  arena(&n);
  return n;
}

extern "C" int64_t nf_parallel(RegionBody body, void* ctx) {
  int nt;
  std::shared_ptr<tbb::task_arena> a = arena(&nt);
  if (nt <= 1 || !a || threads_state().forked.load(std::memory_order_relaxed)) {
    body(ctx, 0, 1);
    return 1;
  }
  // The floating-point flags each body raises (on whichever thread ran it)
  // end up on the calling thread, as if it had run every body (core/fpe.h).
  std::atomic<uint8_t> raised{0};
  a->execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, nt, 1),
        [&](const tbb::blocked_range<int64_t>& r) {
          const uint8_t before = fpe::take();
          for (int64_t tid = r.begin(); tid < r.end(); ++tid) body(ctx, tid, nt);
          if (const uint8_t f = fpe::take()) raised.fetch_or(f, std::memory_order_relaxed);
          fpe::raise(before);
        },
        tbb::simple_partitioner());
  });
  fpe::raise(raised.load(std::memory_order_relaxed));
  return nt;
}

extern "C" int64_t nf_max_threads() {  // called by every kernel with a parallel loop: no lock once known
  Threads& t = threads_state();
  if (t.forked.load(std::memory_order_relaxed)) return 1;
  int n = t.known.load(std::memory_order_relaxed);
  if (n == 0) arena(&n);
  return n;
}

namespace {
// The pass pipeline of a Quick compile: what numfuse's kernels need of -O3
// (they arrive as straight-line loop bodies in SSA-like C): promote locals,
// inline the small helpers, canonicalize, hoist loop invariants (the
// parameter loads), map math calls to their vector forms and vectorize the simd loops.
// No SLP vectorizer, unrolling, second inliner round or IR verifier: about
// half of clang's -O3 pipeline time, and the kernels of benchmarks/ run
// within noise of -O3's (measured; the upgrade then compiles -O3 anyway).
// Frontend options of kernels (not of hand-written reference loops).
// No lifetime markers: every local of a kernel is a scalar that SROA makes a
// register, or a tile buffer that lives the whole function; the markers
// only add instructions for the frontend to emit and the passes to walk.
constexpr const char* kKernelFrontend[] = {"-undef", "-nostdsysteminc", "-nobuiltininc", "-disable-lifetime-markers"};

// The frontend of a kernel: clang's parser and IR generator and nothing
// after them. (clang's EmitLLVMOnlyAction also runs its backend driver with
// the LLVM passes disabled: it builds a TargetMachine and verifies the
// module, about a tenth of a small kernel's compile, for a module that
// numfuse's own pipeline and code generation take next.)
class KernelCodeGenAction : public clang::ASTFrontendAction {
 public:
  explicit KernelCodeGenAction(llvm::LLVMContext* ctx) : ctx_(ctx) {}
  std::unique_ptr<llvm::Module> take() { return std::move(module_); }

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef file) override {
    std::unique_ptr<clang::CodeGenerator> gen(clang::CreateLLVMCodeGen(
        ci.getDiagnostics(), file, &ci.getVirtualFileSystem(), ci.getHeaderSearchOpts(), ci.getPreprocessorOpts(),
        ci.getCodeGenOpts(), *ctx_));
    gen_ = gen.get();
    return gen;
  }
  // Called while the consumer still lives (EndSourceFile frees it next).
  void EndSourceFileAction() override {
    if (gen_ && !getCompilerInstance().getDiagnostics().hasErrorOccurred()) module_.reset(gen_->ReleaseModule());
  }

 private:
  llvm::LLVMContext* ctx_;
  clang::CodeGenerator* gen_ = nullptr;
  std::unique_ptr<llvm::Module> module_;
};

constexpr const char* kQuickPipeline =
    "function(sroa,early-cse,simplifycfg,instcombine<no-verify-fixpoint>),cgscc(inline),"
    "function(sroa,early-cse<memssa>,simplifycfg,instcombine<no-verify-fixpoint>,loop-mssa(licm),loop(loop-rotate),loop-mssa(licm),"
    "inject-tli-mappings,loop-vectorize,instcombine<no-verify-fixpoint>,simplifycfg)";

// The vector forms of the one-implementation math functions (runtime/
// vmath.h): nf_m_exp at 2 and 4 doubles (_ZGVbN2v_nf_m_exp,
// _ZGVdN4v_nf_m_exp), 4 and 8 floats, and at 8 doubles / 16 floats
// (_ZGVe) for kernels that prefer 512-bit vectors (otherwise the backend
// would split their zmm arguments). Every form computes what the scalar
// nf_m_exp of a loop's remainder computes.
std::vector<llvm::VecDesc> vmath_table(bool zmm) {
  struct Isa {
    char letter;
    int bits;
  };
  std::vector<Isa> isas = {{'b', 128}, {'d', 256}};
  if (zmm) isas.push_back({'e', 512});
  // VecDesc keeps StringRefs: the names live as long as the process.
  static std::deque<std::string>* names = new std::deque<std::string>();
  static std::mutex names_mu;
  std::lock_guard<std::mutex> lock(names_mu);
  auto keep = [](std::string s) -> llvm::StringRef { return names->emplace_back(std::move(s)); };
  std::vector<llvm::VecDesc> table;
  auto add = [&](const std::string& fn, bool single, int arity) {
    for (const Isa& isa : isas) {
      const int vf = isa.bits / (single ? 32 : 64);
      const std::string params(arity, 'v');
      const std::string scalar = "nf_m_" + fn + (single ? "f" : "");
      const std::string vec = "_ZGV" + std::string(1, isa.letter) + "N" + std::to_string(vf) + params + "_" + scalar;
      table.emplace_back(keep(scalar), keep(vec), llvm::ElementCount::getFixed(vf), false,
                         keep("_ZGV_LLVM_N" + std::to_string(vf) + params));
    }
  };
  for (bool single : {false, true}) {
#define NF_ADD1(f) add(#f, single, 1);
#define NF_ADD2(f) add(#f, single, 2);
    NF_VMATH_UNARY(NF_ADD1)
    NF_VMATH_BINARY(NF_ADD2)
#undef NF_ADD1
#undef NF_ADD2
  }
  return table;
}

// Runs `pipeline` (the new pass manager's textual form) over `m` with the
// target's cost model and the vector math of vmath_table; then, where
// the CPU has fused multiply-add, ExactDivisionPass over the vectorized code
// (before vectorization its branch would be if-converted back into a
// division in every lane). Full compiles only: the fast register allocator
// of a Quick compile spills every live vector at the pass's branch, which
// costs more than the divider saves.
void optimize(llvm::Module& m, llvm::TargetMachine& tm, const std::string& pipeline,
              const std::vector<llvm::VecDesc>& vector_math, bool exact_division) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  llvm::Triple triple(m.getTargetTriple());
  llvm::TargetLibraryInfoImpl tlii(triple);
  tlii.addVectorizableFunctions(vector_math);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (auto err = pb.parsePassPipeline(mpm, pipeline))
    throw CompileError("bad pass pipeline: " + llvm::toString(std::move(err)));
  if (exact_division) mpm.addPass(llvm::createModuleToFunctionPassAdaptor(ExactDivisionPass()));
  mpm.run(m, mam);
}
}  // namespace

CpuCompiler::CpuCompiler() : impl_(new Impl) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // Vector math (libmvec) must be visible to the JIT linker.
  dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
  dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL);
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) throw CompileError("cannot detect host target: " + llvm::toString(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  impl_->triple = jtmb->getTargetTriple().str();
  impl_->full_machines = std::make_unique<MachinePool>(*jtmb, llvm::CodeGenOptLevel::Aggressive);
  impl_->quick_machines = std::make_unique<MachinePool>(*jtmb, llvm::CodeGenOptLevel::None);
  impl_->cpu = llvm::sys::getHostCPUName().str();
  // Flushes compile independent groups on several threads at once. Each
  // compile materializes its own module on the thread that asked for it
  // (in-place dispatch; the default dispatcher of a concurrent LLJIT starts
  // a thread per materialization). LLJIT's "concurrent compilation" mode is
  // off: all it would add is a copy of every module into a new context at
  // emit (written out as bitcode and parsed back, ~15% of a small kernel's
  // compile), for modules that share a context. Each compile here owns its
  // module's context, and the ExecutionSession, the layers and the compiler
  // (MachinePool) are thread-safe.
  auto epc = llvm::orc::SelfExecutorProcessControl::Create(nullptr,
                                                           std::make_unique<llvm::orc::InPlaceTaskDispatcher>());
  if (!epc) throw CompileError("cannot create the executor: " + llvm::toString(epc.takeError()));
  auto jit = llvm::orc::LLJITBuilder()
                 .setExecutorProcessControl(std::move(*epc))
                 .setJITTargetMachineBuilder(std::move(*jtmb))
                 .setSupportConcurrentCompilation(false)
                 .setCompileFunctionCreator([this](llvm::orc::JITTargetMachineBuilder jtmb)
                                                -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                   return std::make_unique<PooledIRCompiler>(std::move(jtmb), &impl_->objects,
                                                             impl_->full_machines.get(), impl_->quick_machines.get());
                 })
                 .create();
  if (!jit) throw CompileError("cannot create LLJIT: " + llvm::toString(jit.takeError()));
  impl_->jit = std::move(*jit);
  impl_->args = {"-triple", impl_->triple, "-target-cpu", impl_->cpu, "-O3", "-vectorize-loops",
                 "-vectorize-slp", "-fveclib=libmvec", "-ffp-contract=off", "-std=c11",
                 "-w", "-x", "c"};
  // 512-bit vectors for wide kernels (tune::Schedule::wide) where the CPU
  // has AVX-512; NUMFUSE_VECTOR_BITS=256 keeps 256 everywhere (tune::Asm
  // reads the same setting).
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  const char* bits = std::getenv("NUMFUSE_VECTOR_BITS");
  impl_->zmm = features.lookup("avx512f") && features.lookup("avx512dq") && features.lookup("avx512vl") &&
               !(bits && std::string(bits) == "256");
  impl_->fma = features.lookup("fma") || features.lookup("avx512f");
  impl_->vector_math = vmath_table(false);
  impl_->vector_math_wide = vmath_table(impl_->zmm);
  for (const std::string& a : impl_->args) impl_->flags_id += a + " ";
  // Kernels run numfuse's pass pipelines (optimize) with vmath_table.
  for (const char* a : kKernelFrontend) impl_->flags_id += std::string(a) + " ";
  impl_->flags_id += "pipeline=numfuse-O3 vector-math=" + std::to_string(impl_->vector_math_wide.size()) +
                     (impl_->zmm ? " wide=512" : "");
}

CpuCompiler& CpuCompiler::instance() {
  static CpuCompiler* c = new CpuCompiler();
  return *c;
}

std::string CpuCompiler::flags_id() const {
  return impl_->flags_id + (exact_division() ? " exact-division" : "");
}

void CpuCompiler::set_exact_division(bool on) { impl_->exact_division.store(on); }
bool CpuCompiler::exact_division() const { return impl_->fma && impl_->exact_division.load(); }

llvm::orc::JITDylib& CpuCompiler::new_dylib(const std::string& symbol, bool openmp) {
  std::lock_guard<std::mutex> lock(impl_->dylib_mu);
  auto jdx = impl_->jit->createJITDylib(symbol + "#" + std::to_string(++impl_->dylibs));
  if (!jdx) throw CompileError("cannot create JITDylib: " + llvm::toString(jdx.takeError()));
  llvm::orc::JITDylib* jd = &*jdx;
  const char prefix = impl_->jit->getDataLayout().getGlobalPrefix();
  if (openmp) {  // OpenMP's own code generation calls libomp: resolve it there first
    auto omp = llvm::orc::DynamicLibrarySearchGenerator::Load(find_libomp().c_str(), prefix);
    if (!omp) throw CompileError("cannot load libomp: " + llvm::toString(omp.takeError()));
    jd->addGenerator(std::move(*omp));
  }
  // The host services kernels call (jit.h).
  llvm::orc::MangleAndInterner mangle(impl_->jit->getExecutionSession(), impl_->jit->getDataLayout());
  llvm::orc::SymbolMap host;
  host[mangle("nf_parallel")] = {llvm::orc::ExecutorAddr::fromPtr(&nf_parallel), llvm::JITSymbolFlags::Exported};
  host[mangle("nf_max_threads")] = {llvm::orc::ExecutorAddr::fromPtr(&nf_max_threads),
                                    llvm::JITSymbolFlags::Exported};
  int nmath = 0;
  const nf_vmath_symbol* math = nf_vmath_symbols(&nmath);
  for (int k = 0; k < nmath; ++k)
    host[mangle(math[k].name)] = {llvm::orc::ExecutorAddr::fromPtr(math[k].address), llvm::JITSymbolFlags::Exported};
  if (auto err = jd->define(llvm::orc::absoluteSymbols(std::move(host))))
    throw CompileError("cannot define host services: " + llvm::toString(std::move(err)));
  auto proc = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!proc) throw CompileError("process symbols: " + llvm::toString(proc.takeError()));
  jd->addGenerator(std::move(*proc));
  return *jd;
}

void CpuCompiler::warm_up_async() {
  if (impl_->warm.joinable()) return;
  impl_->warm = std::thread([this] {
    // Memory first: 8 MiB of blocks with their pages touched (Buffer::prefault).
    Buffer::prefault(size_t{8} << 20);
    // The threads' pool next: a large first call that tier 0 cuts across
    // the cores must not wait for worker threads to be created. (Each body
    // waits, up to 2 ms, for the others to start: the workers are started
    // and have joined the arena once, not merely requested.) Measured
    // without it (bench_first_call.py, alternately with and without, 3
    // rounds twice): the first calls of 10^6-point programs fell from
    // 1.94x/2.08x NumPy to 1.41x/1.50x (clip and sum 1.6x -> 0.86x).
    std::atomic<int64_t> started{0};
    nf_parallel(
        [](void* c, int64_t, int64_t nt) {
          auto& n = *static_cast<std::atomic<int64_t>*>(c);
          n.fetch_add(1);
          const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
          while (n.load() < nt && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        },
        &started);
    codegen::Source src;
    src.entry = "warm";
    src.code =
        "double exp(double);\n"
        "void warm(char** p, const long long* ip, const double* fp) {\n"
        "  double* x = (double*)p[0];\n"
        "  #pragma clang loop vectorize(assume_safety)\n"
        "  for (long long i = 0; i < ip[0]; ++i) x[i] = exp(x[i]) + fp[0];\n"
        "}\n";
    // Quick: the path a program's first flushes take (pass pipeline and
    // fast code generation), in a third of the time of -O3, so it is done
    // sooner and competes less with a flush that comes right after import.
    try {
      compile(src, "nf_warm_up", nullptr, Opt::Quick);
    } catch (...) {
    }
  });
}

void CpuCompiler::wait_warm_up() {
  if (impl_->warm.joinable()) impl_->warm.join();
}

KernelFn CpuCompiler::load_object(const std::string& object, const std::string& symbol) {
  llvm::orc::JITDylib& jd = new_dylib(symbol);
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(object, symbol + ".o");
  if (auto err = impl_->jit->addObjectFile(jd, std::move(buf)))
    throw CompileError("cannot add cached object: " + llvm::toString(std::move(err)));
  auto sym = impl_->jit->lookup(jd, symbol);
  if (!sym) throw CompileError("cannot link cached kernel: " + llvm::toString(sym.takeError()));
  return sym->toPtr<KernelFn>();
}

KernelFn CpuCompiler::compile(const codegen::Source& src, const std::string& symbol, std::string* object, Opt opt) {
  return compile_with(src, symbol, object, false, opt);
}

KernelFn CpuCompiler::compile_openmp_c(const std::string& source, const std::string& symbol) {
  return compile_with(codegen::Source{source, symbol}, symbol + "_ref", nullptr, true, Opt::Full);
}

namespace {
std::atomic<int> g_compiling{0};

// Whether a kernel's source calls the vector math functions (it declares
// them: codegen's `double nf_m_exp(double) ...`).
bool calls_vector_math(const std::string& code) { return code.find(" nf_m_") != std::string::npos; }
}  // namespace

int compiles_running() { return g_compiling.load(std::memory_order_relaxed); }

KernelFn CpuCompiler::compile_with(const codegen::Source& src, const std::string& symbol, std::string* object,
                                   bool openmp, Opt opt) {
  struct Running {
    Running() { g_compiling.fetch_add(1, std::memory_order_relaxed); }
    ~Running() { g_compiling.fetch_sub(1, std::memory_order_relaxed); }
  } running;
  const std::string file = symbol + ".c";
  std::vector<const char*> argv;
  // Reference loops (openmp) are compiled as clang compiles C for this CPU
  // by default: clang's own -O3 pipeline, its libmvec table, its vector width.
  for (const std::string& a : impl_->args) argv.push_back(a.c_str());
  if (openmp) argv.push_back("-fopenmp");
  argv.push_back(file.c_str());
  argv.push_back("-emit-llvm-only");
  // Kernels run numfuse's pass pipelines (kQuickPipeline or LLVM's O3
  // pipeline) with vmath_table instead of clang's libmvec table.
  const bool own_pipeline = !openmp;
  if (own_pipeline) {
    argv.push_back("-disable-llvm-passes");
    // Kernels are self-contained C (they declare what they call and include
    // nothing): no predefined macros to lex and no include paths to set up,
    // in every compile (about a tenth of a small kernel's compile).
    for (const char* a : kKernelFrontend) argv.push_back(a);
  }
  // NUMFUSE_COMPILE_TIMES=passes: clang's and LLVM's per-pass timers on stderr.
  const char* times = std::getenv("NUMFUSE_COMPILE_TIMES");
  if (times && std::string(times) == "passes") {
    argv.push_back("-ftime-report");
    llvm::TimePassesIsEnabled = true;
  }

  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  auto ci = std::make_unique<clang::CompilerInstance>();
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> dopts = new clang::DiagnosticOptions();
  auto* printer = new clang::TextDiagnosticPrinter(diag_os, dopts.get());
  llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diags =
      clang::CompilerInstance::createDiagnostics(dopts.get(), printer, /*ShouldOwnClient=*/true);
  auto inv = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*inv, argv, *diags))
    throw CompileError("bad compiler arguments: " + diag_os.str());
  // Rename the entry so each kernel has a unique symbol.
  std::string code = src.code;
  {
    const std::string from = "void " + src.entry + "(";
    size_t at = code.find(from);
    if (at == std::string::npos) throw CompileError("entry point not found in source");
    code.replace(at, from.size(), "void " + symbol + "(");
  }
  inv->getDiagnosticOpts().ShowCarets = false;  // no "N warnings generated" on stderr
  inv->getPreprocessorOpts().addRemappedFile(file, llvm::MemoryBuffer::getMemBufferCopy(code, file).release());
  ci->setInvocation(inv);
  ci->setDiagnostics(diags.get());
  auto ctx = std::make_unique<llvm::LLVMContext>();
  // No names on IR values (what clang's driver asks of release builds),
  // unless the IR is kept for reading (NUMFUSE_KEEP_IR).
  const char* keep_ir = std::getenv("NUMFUSE_KEEP_IR");
  if (own_pipeline && !(keep_ir && *keep_ir)) ctx->setDiscardValueNames(true);
  // Optimization remarks and warnings of numfuse's own pipelines ("loop not
  // vectorized" for a simd loop whose call has no vector form) are not the
  // user's business; clang's -w silenced them in its own pipeline.
  struct Quiet : llvm::DiagnosticHandler {
    bool handleDiagnostics(const llvm::DiagnosticInfo&) override { return true; }
  };
  auto tfe = std::chrono::steady_clock::now();
  std::unique_ptr<llvm::Module> mod;
  if (own_pipeline) {
    KernelCodeGenAction action(ctx.get());
    if (!ci->ExecuteAction(action)) throw CompileError("clang failed:\n" + diag_os.str() + "\nsource:\n" + code);
    mod = action.take();
  } else {
    clang::EmitLLVMOnlyAction action(ctx.get());
    if (!ci->ExecuteAction(action)) throw CompileError("clang failed:\n" + diag_os.str() + "\nsource:\n" + code);
    mod = action.takeModule();
  }
  if (!mod) throw CompileError("clang produced no module");

  auto topt = std::chrono::steady_clock::now();
  mod->setModuleIdentifier(symbol);
  if (opt == Opt::Quick) mod->addModuleFlag(llvm::Module::Warning, PooledIRCompiler::kQuickFlag, 1);
  if (own_pipeline) {
    mod->getContext().setDiagnosticHandler(std::make_unique<Quiet>());
    // The vector width (tune::Schedule::wide): 512 bits for wide kernels on
    // AVX-512 CPUs, else 256 (what clang picks for these CPUs anyway). A
    // kernel that calls the vector math functions is wide there too: every
    // form of them computes through the widest (runtime/vmath.h), so a
    // 4-lane call would pay for 8 lanes (a jit program's exp loop ran at
    // half speed).
    const bool wide = (src.wide || calls_vector_math(src.code)) && impl_->zmm;
    if (impl_->zmm)
      for (llvm::Function& f : *mod)
        if (!f.isDeclaration()) f.addFnAttr("prefer-vector-width", wide ? "512" : "256");
    auto tm = impl_->full_machines->take();
    if (!tm) throw CompileError("cannot create a target machine: " + llvm::toString(tm.takeError()));
    optimize(*mod, **tm, opt == Opt::Quick ? kQuickPipeline : "default<O3>",
             wide ? impl_->vector_math_wide : impl_->vector_math, exact_division() && opt == Opt::Full);
    impl_->full_machines->give(std::move(*tm));
  }
  // NUMFUSE_KEEP_IR=DIR: the optimized module of every compile as DIR/SYMBOL.ll.
  if (const char* dir = keep_ir; dir && *dir) {
    std::error_code ec;
    llvm::raw_fd_ostream out(std::string(dir) + "/" + symbol + ".ll", ec);
    if (!ec) mod->print(out, nullptr);
  }
  llvm::orc::JITDylib* jd = &new_dylib(symbol, openmp);
  if (auto err = impl_->jit->addIRModule(*jd, llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))))
    throw CompileError("cannot add module: " + llvm::toString(std::move(err)));
  auto tbe = std::chrono::steady_clock::now();
  auto sym = impl_->jit->lookup(*jd, symbol);  // runs code generation
  if (!sym) throw CompileError("cannot link kernel: " + llvm::toString(sym.takeError()));
  if (std::getenv("NUMFUSE_COMPILE_TIMES"))
    std::fprintf(stderr, "numfuse compile %s: frontend %.1f ms, opt %.1f ms, codegen+link %.1f ms\n", symbol.c_str(),
                 std::chrono::duration<double, std::milli>(topt - tfe).count(),
                 std::chrono::duration<double, std::milli>(tbe - topt).count(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tbe).count());
  std::string obj;
  bool have = impl_->objects.take(symbol, &obj);
  if (object && have) *object = std::move(obj);
  return sym->toPtr<KernelFn>();
}

namespace {
// The CPU's compiler for KernelCache: clang + ORC, Quick and Full levels.
class CpuJit final : public Compiler {
 public:
  std::string id() const override { return CpuCompiler::instance().flags_id(); }  // (kCacheVersion names LLVM)
  Code compile(const codegen::Source& src, const std::string& symbol, std::string* object, Opt opt) override {
    Code c;
    c.fn = CpuCompiler::instance().compile(src, symbol, object, opt);
    return c;
  }
  Code load(const std::string& object, const std::string& symbol) override {
    Code c;
    c.fn = CpuCompiler::instance().load_object(object, symbol);
    return c;
  }
  bool has_quick() const override { return true; }
};
}  // namespace

Compiler& cpu_compiler() {
  static CpuJit* c = new CpuJit();
  return *c;
}

TargetInfo target_info() {
  TargetInfo t;
  t.llvm_version = LLVM_VERSION_STRING;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    if (f.second) t.features.push_back(f.first().str());
  std::sort(t.features.begin(), t.features.end());
  return t;
}

}  // namespace nf::jit

// LoopNest -> C with clang loop pragmas.
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"
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

// The first line of a wide kernel's source says so (renders_wide).
constexpr const char* kWideMark = " (wide vectors)";

class CRenderer final : public detail::NestSpeller {
 public:
  explicit CRenderer(const lower::LoopNest& n) : NestSpeller(n) {}

  Source run() {
    std::ostringstream body;
    body << "void " << n_.name << "(char** nf_p, const int64_t* restrict ip, const double* restrict fp) {\n";
    if (n_.contract) body << "  #pragma clang fp contract(fast)\n";
    // Bool arrays are bytes: a view of other data (a.view(bool), or a bool
    // array written through a uint8 view) may hold any value, and NumPy
    // reads every nonzero byte as True. So bool memory is declared as bytes,
    // and reads compare with zero (see `load`).
    captured_.push_back({"const int64_t* restrict ip", "ip"});
    captured_.push_back({"const double* restrict fp", "fp"});
    for (int i = 0; i < n_.num_ptrs; ++i) {
      const char* t = n_.ptr_types[i] == DType::Bool ? "uint8_t" : c_type(n_.ptr_types[i]);
      body << "  " << t << "* restrict p" << i << " = (" << t << "*)nf_p[" << i << "];\n";
      captured_.push_back({std::string(t) + "* restrict p" + std::to_string(i), "p" + std::to_string(i)});
    }
    if (n_.uses_threads) {
      for (const StmtP& s : n_.body) {
        stmt(body, *s, 1);
        capture(*s);
      }
    } else {
      // A serial kernel's loops live in a function of their own whose array
      // parameters are restrict: LLVM takes restrict on function parameters
      // as no-alias, on local pointers not, and without it a loop that
      // stores to one array and reads others is not vectorized (its math
      // calls stay scalar: 1.6x slower on exp). Parallel regions get this
      // from being functions already.
      const std::string fn = n_.name + "_serial";
      std::string params, args;
      for (const auto& [decl, name] : captured_) {
        params += (params.empty() ? "" : ", ") + decl;
        args += (args.empty() ? "" : ", ") + name;
      }
      regions_ << "static __attribute__((noinline)) void " << fn << "(" << params << ") {\n";
      if (n_.contract) regions_ << "  #pragma clang fp contract(fast)\n";
      for (const StmtP& s : n_.body) stmt(regions_, *s, 1);
      regions_ << "}\n";
      body << "  " << fn << "(" << args << ");\n";
    }
    body << "}\n";
    std::ostringstream src;
    src << "/* numfuse kernel " << n_.name << (n_.wide ? kWideMark : "") << " */\n"
        << "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
        << "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
        << "typedef unsigned long long uint64_t;\n";
    // Threads come from the host (jit.h: nf_parallel / nf_max_threads), so
    // kernels are compiled without OpenMP's code generation.
    if (n_.uses_threads)
      src << "int64_t nf_parallel(void (*)(void*, int64_t, int64_t), void*); int64_t nf_max_threads(void);\n";
    if (uses_alloc_) src << "void* malloc(unsigned long); void free(void*);\n";
    src << helpers_.definitions() << stages_.str() << regions_.str() << body.str();
    return {src.str(), n_.name, n_.wide};
  }

 private:
  // The kernel's variables a parallel region can see (declared before it at
  // the top level), as (parameter declaration, argument) of the function the
  // region's body becomes; and those functions.
  std::vector<std::pair<std::string, std::string>> captured_;
  std::ostringstream regions_;
  int nregions_ = 0;
  std::ostringstream stages_;  // Stage functions (before the regions calling them)
  int nstages_ = 0;

  void capture(const Stmt& s) {
    if (s.k == Stmt::K::Decl)
      captured_.push_back({std::string(c_type(s.dtype)) + " " + s.name, s.name});
    else if (s.k == Stmt::K::Alloc)
      captured_.push_back({std::string(c_type(s.dtype)) + "* " + s.name, s.name});
    else if (s.k == Stmt::K::For && s.loop == LoopKind::Cores && !s.name.empty())
      captured_.push_back({"int64_t " + s.name, s.name});
  }

  // Whether `s` assigns to one of the captured variables itself (not through
  // a pointer): such a region cannot take them by value.
  bool assigns_captured(const Stmt& s) const {
    if (s.k == Stmt::K::Assign && s.target->k == Ex::K::Var)
      for (const auto& c : captured_)
        if (c.second == s.target->name) return true;
    for (const StmtP& c : s.body)
      if (assigns_captured(*c)) return true;
    for (const StmtP& c : s.else_body)
      if (assigns_captured(*c)) return true;
    return false;
  }

  // The widest element the data operations of `e` work on (0: none).
  static int widest_data(const Ex& e) {
    int w = 0;
    if (e.k == Ex::K::Scalar || e.k == Ex::K::Combine || e.k == Ex::K::FloatLit ||
        (e.k == Ex::K::Load && e.dtype != DType::Int64))
      w = itemsize(e.dtype);
    for (const ExP& a : e.args) w = std::max(w, widest_data(*a));
    return w;
  }
  static int widest_data(const Stmt& s) {
    int w = s.k == Stmt::K::Decl && s.dtype != DType::Int64 ? itemsize(s.dtype) : 0;
    for (const ExP* e : {&s.lo, &s.hi, &s.init, &s.target, &s.value, &s.cond})
      if (*e) w = std::max(w, widest_data(**e));
    for (const StmtP& c : s.body) w = std::max(w, widest_data(*c));
    for (const StmtP& c : s.else_body) w = std::max(w, widest_data(*c));
    return w;
  }
  // The lanes of one of the target's vectors (the kernel's widest, for a
  // wide kernel) holding the widest data element of loop `s`.
  int vector_lanes(const Stmt& s) const {
    const tune::Asm& m = tune::Asm::host();
    const int bytes = n_.wide ? m.wide_simd_bytes : m.simd_bytes;
    const int elem = widest_data(s);
    return std::max(1, bytes / (elem > 0 ? elem : 8));
  }

  std::string thread_ex(const Ex& e) override {
    // A Cores loop's iteration is a call of its region function (below).
    switch (e.k) {
      case Ex::K::ThreadIndex:
        return "nf_tid";
      case Ex::K::ThreadCount:
        return "nf_nt";
      default:
        return "nf_max_threads()";
    }
  }

  const char* who() const override { return "render_c"; }

  void loop(std::ostringstream& os, const Stmt& s, int d) override {
    if (s.loop == LoopKind::Cores) return cores(os, s, d);
    if (s.loop == LoopKind::GpuBlocks || s.loop == LoopKind::GpuThreads)
      throw std::logic_error("render_c: a GPU loop in a CPU kernel");
    if (s.loop == LoopKind::Unrolled) os << indent(d) << "#pragma clang loop unroll(full)\n";
    if (s.keep_rolled && s.loop == LoopKind::Serial) os << indent(d) << "#pragma clang loop unroll(disable)\n";
    // A simd loop's iterations are independent but for its reductions
    // (simd_reductions), which the vectorizer finds itself and may
    // reassociate (the hint allows it): the pragma says what OpenMP's
    // `simd reduction(...)` said, without OpenMP's parsing and
    // outlining (about a tenth of a small kernel's frontend).
    if (s.loop == LoopKind::Vectorized) {
      os << indent(d) << "#pragma clang loop vectorize(assume_safety)";
      // A simd loop of a few iterations known here (NumPy's eight
      // pairwise-sum lanes) runs as whole vectors of the target's
      // width: left to itself the cost model picks 2 lanes for such a
      // loop with a math call in it, and the call runs SSE's 2-lane
      // variant (3x slower than AVX-512's 8 for exp). Where the loop
      // is wider than one vector (8 doubles on AVX2) it is vectors
      // interleaved: a width of 8 there has no libmvec variant, and
      // every math call of the loop ran as 8 scalar calls.
      if (s.lo->k == Ex::K::IntLit && s.hi->k == Ex::K::IntLit && s.step->k == Ex::K::IntLit && s.step->ival == 1) {
        const int64_t n = s.hi->ival - s.lo->ival;
        if (n == 4 || n == 8 || n == 16) {
          const int64_t w = std::min<int64_t>(n, vector_lanes(s));
          os << " vectorize_width(" << w << ")";
          if (w < n) os << " interleave_count(" << n / w << ")";
          os << " unroll(disable)";
        }
      }
      os << "\n";
    }
    plain_loop(os, s, d);
  }

  void alloc(std::ostringstream& os, const Stmt& s, int d) override {
    if (s.scope == Scope::Local) {  // registers / the stack
      os << indent(d) << c_type(s.dtype) << " " << s.name << "[" << ex(*s.count) << "] __attribute__((aligned(64)));\n";
      return;
    }
    if (s.scope == Scope::GpuShared || s.scope == Scope::GpuPrivate)
      throw std::logic_error("render_c: GPU shared or private memory in a CPU kernel");
    heap_alloc(os, s, d);
  }

  // A Stage: a function of its own whose pointer parameters are restrict
  // (as a serial kernel's, for the same reason), called with the stage's
  // addresses, its int parameter array and its part of fp.
  void stage(std::ostringstream& os, const Stmt& s, int d) override {
    const std::string fn = n_.name + "_stage" + std::to_string(nstages_++);
    std::ostringstream f;
    f << "static __attribute__((noinline)) void " << fn << "(";
    std::string call = fn + "(";
    for (size_t i = 0; i < s.args.size(); ++i) {
      const char* t = s.arg_types[i] == DType::Bool ? "uint8_t" : c_type(s.arg_types[i]);
      f << t << "* restrict p" << i << ", ";
      call += std::string("(") + t + "*)" + ex(*s.args[i]) + ", ";
    }
    f << "const int64_t* restrict ip, const double* restrict fp) {\n";
    if (s.contract) f << "  #pragma clang fp contract(fast)\n";
    for (const StmtP& c : s.body) stmt(f, *c, 1);
    f << "}\n";
    stages_ << f.str();
    os << indent(d) << call << s.name << ", fp + " << s.fp_base << ");\n";
  }

  // A Cores loop: its body becomes a function of (thread, threads) over the
  // kernel's variables declared before it, by value. With work enough the
  // host runs it on every thread (nf_parallel, through a context struct);
  // otherwise it is called once, directly -- a region that runs serially
  // would still cost the thread runtime's bookkeeping (~1000 instructions)
  // per call, the whole run of a kernel over a few elements. Not inlined:
  // its body is compiled once. The loop's name, if any, receives the
  // threads that ran it.
  void cores(std::ostringstream& os, const Stmt& s, int d) {
    if (d != 1) throw std::logic_error("render_c: a Cores loop must be at the kernel's top level");
    for (const StmtP& c : s.body)
      if (assigns_captured(*c)) throw std::logic_error("render_c: a Cores loop may not assign the kernel's variables");
    const std::string fn = n_.name + "_region" + std::to_string(nregions_++);
    std::string params, args, fields, unpack;
    for (const auto& [decl, name] : captured_) {
      params += ", " + decl;
      args += ", " + name;
      fields += " " + decl + ";";
      unpack += ", c->" + name;
    }
    regions_ << "static __attribute__((noinline)) void " << fn << "(const int64_t nf_tid, const int64_t nf_nt"
             << params << ") {\n";
    for (const StmtP& c : s.body) stmt(regions_, *c, 1);
    regions_ << "}\n";
    regions_ << "struct " << fn << "_ctx {" << fields << " };\n";
    regions_ << "static void " << fn << "_entry(void* nf_c, int64_t nf_tid, int64_t nf_nt) {\n"
             << "  const struct " << fn << "_ctx* c = (const struct " << fn << "_ctx*)nf_c;\n"
             << "  " << fn << "(nf_tid, nf_nt" << unpack << ");\n}\n";
    const std::string used = s.name.empty() ? "(void)" : s.name + " = ";
    if (!s.name.empty()) os << indent(d) << "int64_t " << s.name << " = 1;\n";
    os << indent(d) << "if (" << (s.cond ? ex(*s.cond) : std::string("1")) << ") {\n";
    os << indent(d + 1) << "struct " << fn << "_ctx nf_ctx = {" << args.substr(args.empty() ? 0 : 2) << "};\n";
    os << indent(d + 1) << used << "nf_parallel(" << fn << "_entry, &nf_ctx);\n";
    os << indent(d) << "} else {\n";
    os << indent(d + 1) << fn << "(0, 1" << args << ");\n";
    os << indent(d) << "}\n";
  }
};

}  // namespace

Source render_c(const lower::LoopNest& nest) { return CRenderer(nest).run(); }

bool renders_wide(const std::string& code) {
  const size_t eol = code.find('\n');
  return code.substr(0, eol).find(kWideMark) != std::string::npos;
}

}  // namespace nf::codegen

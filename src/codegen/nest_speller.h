// Spelling a LoopNest's expressions and its target-independent statements as
// C-like source (internal to codegen): render_c and render_cuda derive from
// NestSpeller and spell what differs between their targets -- loops,
// threads, heap allocations, stages.
#pragma once

#include <map>
#include <sstream>
#include <string>

#include "codegen/codegen.h"
#include "codegen/scalar_c.h"

namespace nf::codegen::detail {

class NestSpeller {
 public:
  explicit NestSpeller(const lower::LoopNest& n) : n_(n) {}
  virtual ~NestSpeller() = default;

 protected:
  const lower::LoopNest& n_;
  HelperSet helpers_;
  bool uses_alloc_ = false;  // malloc / free are called

  static std::string indent(int d) { return std::string(2 * d, ' '); }
  // A value's C type (complex ones as structs where helpers_ says so).
  const char* type(DType t) const { return helpers_.complex_structs ? struct_c_type(t) : c_type(t); }
  // A complex value from its parts (spelled in the part type).
  std::string complex_of(DType t, const std::string& re, const std::string& im) const {
    if (helpers_.complex_structs) return std::string("nf_cmk_") + suffix(t) + "(" + re + ", " + im + ")";
    return "__builtin_complex(" + re + ", " + im + ")";
  }
  // Kernel arguments are named p<k> (lower::Lowerer::ptr).
  static bool is_pointer(const std::string& name);
  // A GpuPrivate array (lower.h): each thread's elements at NF_LANE(the
  // enclosing GpuThreads loop's variable, the array's count) -- 0 on the
  // device, where each thread has an array of its own; the thread's
  // offset in the emulation's one array for the block.
  std::map<std::string, int64_t> lanes_;
  std::string lane_var_;
  std::string lvalue(const lower::Ex& e) {
    auto l = lanes_.find(e.name);
    if (l != lanes_.end())
      return e.name + "[NF_LANE(" + lane_var_ + ", " + std::to_string(l->second) + ") + " + ex(*e.args[0]) + "]";
    return e.name + "[" + ex(*e.args[0]) + "]";
  }
  std::string ex(const lower::Ex& e);
  void stmt(std::ostringstream& os, const lower::Stmt& s, int d);
  // `for (int64_t var = lo; var < hi; var += step) { body }`.
  void plain_loop(std::ostringstream& os, const lower::Stmt& s, int d);
  // A heap allocation (Thread or Kernel scope) as malloc, its Free as free.
  void heap_alloc(std::ostringstream& os, const lower::Stmt& s, int d);

  // The target's spellings.
  virtual std::string thread_ex(const lower::Ex& e) = 0;  // ThreadIndex, ThreadCount, MaxThreads
  virtual void loop(std::ostringstream& os, const lower::Stmt& s, int d) = 0;
  virtual void alloc(std::ostringstream& os, const lower::Stmt& s, int d) = 0;
  virtual void stage(std::ostringstream& os, const lower::Stmt& s, int d) = 0;
  // A Barrier (lower.h): the CPU's tail leaves none; a GPU block's threads wait.
  virtual void barrier(std::ostringstream& os, int d);
  virtual const char* who() const = 0;  // "render_c", for errors
};

}  // namespace nf::codegen::detail

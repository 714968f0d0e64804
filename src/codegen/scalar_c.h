// Spelling of scalar operations in C (internal to codegen).
#pragma once

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/expr.h"

namespace nf::codegen {

// Collects the helper definitions a kernel needs while its expressions are
// spelled, then emits them (dependencies first).
class HelperSet {
 public:
  // Records a helper entry ("name\ndefinition"); each is emitted once.
  void use(const std::string& entry);
  std::string definitions() const;
  // How complex numbers are spelled: C's _Complex (the CPU's kernels), or
  // (true) the structs of complex_struct_prelude() with a function for
  // every operation, which NVRTC (CUDA C++ without _Complex) and the
  // emulated device's clang both compile: the CUDA kernels' text.
  bool complex_structs = false;

 private:
  std::vector<std::string> order_;
  std::set<std::string> seen_;
};

// Type suffix used in helper names: b, i8 .. u64, f32, f64.
const char* suffix(DType t);
// The C type of t where complex numbers are structs (HelperSet::complex_structs):
// nf_c64, nf_c128; else c_type(t).
const char* struct_c_type(DType t);
// The complex structs' definitions and constructors (nf_cmk_c64/c128), for
// a prelude of texts spelled with complex_structs.
const std::string& complex_struct_prelude();

// C spelling of a scalar operation applied to already-spelled operands.
// `node` gives the operation and result type; `arg_types` the operand types.
std::string spell_scalar(const ExprNode& node, const std::vector<std::string>& args,
                         const std::vector<DType>& arg_types, HelperSet& helpers);
// The reduction combine a ⊕ b in type t.
std::string spell_combine(ReduceOp op, DType t, const std::string& a, const std::string& b, HelperSet& helpers);
// Arg-reductions: whether (v, vi) beats (acc, ai). `later`: vi is known to be
// no smaller than every index already combined into (acc, ai) (ai is
// INT64_MAX while nothing is), so ties keep acc and vi is not compared.
std::string spell_arg_better(ReduceOp op, DType t, const std::string& acc, const std::string& ai,
                             const std::string& v, const std::string& vi, HelperSet& helpers, bool later = false);
// The sign NumPy gives a NaN result, per operation and float type. NumPy's
// math functions (its own SIMD code, or libm) differ: some propagate an
// input NaN's sign, some return +NaN, and invalid arguments (log10(-1))
// give the x86 default NaN (negative). The Python layer probes NumPy at
// import and installs the rules; kernels apply them to the results of the
// operations listed (others follow the hardware, as NumPy's do).
//   unary rule  "ab": a = sign for a NaN input, b = for an invalid argument;
//   binary rule "abcd": both NaN, x NaN, y NaN, invalid;
// each character: 'x'/'y' that operand (its sign), 'X'/'Y' it negated,
// '+'/'-' a NaN of that sign, 'a'/'o' negative when both / either operand is.
void set_nan_rules(const std::vector<std::tuple<bool, int, DType, std::string>>& rules);  // (binary?, op, type, rule)
// Names the installed rules (part of every kernel's cache key).
const std::string& nan_rules_id();

// A literal of type t.
std::string spell_float(double v, DType t);
std::string spell_int(int64_t v, DType t);

}  // namespace nf::codegen

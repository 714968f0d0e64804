// Spelling of scalar operations in C (internal to codegen).
#pragma once

#include <set>
#include <string>
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

 private:
  std::vector<std::string> order_;
  std::set<std::string> seen_;
};

// Type suffix used in helper names: b, i8 .. u64, f32, f64.
const char* suffix(DType t);

// C spelling of a scalar operation applied to already-spelled operands.
// `node` gives the operation and result type; `arg_types` the operand types.
std::string spell_scalar(const ExprNode& node, const std::vector<std::string>& args,
                         const std::vector<DType>& arg_types, HelperSet& helpers);
// The reduction combine a ⊕ b in type t.
std::string spell_combine(ReduceOp op, DType t, const std::string& a, const std::string& b, HelperSet& helpers);
// Arg-reductions: whether (v, vi) beats (acc, ai).
std::string spell_arg_better(ReduceOp op, DType t, const std::string& acc, const std::string& ai,
                             const std::string& v, const std::string& vi, HelperSet& helpers);
// A literal of type t.
std::string spell_float(double v, DType t);
std::string spell_int(int64_t v, DType t);

}  // namespace nf::codegen

// The scalar operations numfuse knows how to compute.
//
// A recorded elementwise task, a node of an MDH scalar function and a C
// expression in a kernel all speak this one vocabulary. Each operation is
// named after the NumPy ufunc it implements; its semantics (NaN, signed zero,
// integer overflow, division by zero) are NumPy's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace nf {

#define NF_UNARY_OPS(X)                                                     \
  X(Negative, "negative") X(Positive, "positive") X(Absolute, "absolute")   \
  X(Sign, "sign") X(LogicalNot, "logical_not") X(Invert, "invert")          \
  X(Sqrt, "sqrt") X(Cbrt, "cbrt") X(Square, "square")                       \
  X(Reciprocal, "reciprocal") X(Exp, "exp") X(Exp2, "exp2")                 \
  X(Expm1, "expm1") X(Log, "log") X(Log2, "log2") X(Log10, "log10")         \
  X(Log1p, "log1p") X(Sin, "sin") X(Cos, "cos") X(Tan, "tan")               \
  X(Arcsin, "arcsin") X(Arccos, "arccos") X(Arctan, "arctan")               \
  X(Sinh, "sinh") X(Cosh, "cosh") X(Tanh, "tanh") X(Arcsinh, "arcsinh")     \
  X(Arccosh, "arccosh") X(Arctanh, "arctanh") X(Floor, "floor")             \
  X(Ceil, "ceil") X(Trunc, "trunc") X(Rint, "rint") X(Isnan, "isnan")       \
  X(Isinf, "isinf") X(Isfinite, "isfinite") X(Signbit, "signbit")           \
  X(Erf, "erf") X(Deg2rad, "deg2rad") X(Rad2deg, "rad2deg")                \
  X(Conjugate, "conjugate")

#define NF_BINARY_OPS(X)                                                    \
  X(Add, "add") X(Subtract, "subtract") X(Multiply, "multiply")             \
  X(TrueDivide, "divide") X(FloorDivide, "floor_divide")                    \
  X(Remainder, "remainder") X(Fmod, "fmod") X(Power, "power")               \
  X(Maximum, "maximum") X(Minimum, "minimum") X(Fmax, "fmax")               \
  X(Fmin, "fmin") X(Arctan2, "arctan2") X(Hypot, "hypot")                   \
  X(Copysign, "copysign") X(Logaddexp, "logaddexp")                         \
  X(Logaddexp2, "logaddexp2") X(Equal, "equal") X(NotEqual, "not_equal")    \
  X(Less, "less") X(LessEqual, "less_equal") X(Greater, "greater")          \
  X(GreaterEqual, "greater_equal") X(LogicalAnd, "logical_and")             \
  X(LogicalOr, "logical_or") X(LogicalXor, "logical_xor")                   \
  X(BitwiseAnd, "bitwise_and") X(BitwiseOr, "bitwise_or")                   \
  X(BitwiseXor, "bitwise_xor") X(LeftShift, "left_shift")                   \
  X(RightShift, "right_shift") X(Nextafter, "nextafter")

enum class UnaryOp : uint8_t {
#define NF_ENUM(e, s) e,
  NF_UNARY_OPS(NF_ENUM)
#undef NF_ENUM
      Count
};

enum class BinaryOp : uint8_t {
#define NF_ENUM(e, s) e,
  NF_BINARY_OPS(NF_ENUM)
#undef NF_ENUM
      Count
};

// Combine operators of reductions (MDH point-wise combine operators).
enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, Any, All, ArgMax, ArgMin, Count };

const char* unary_name(UnaryOp op);
const char* binary_name(BinaryOp op);
const char* reduce_name(ReduceOp op);
std::optional<UnaryOp> unary_from_name(const std::string& name);
std::optional<BinaryOp> binary_from_name(const std::string& name);
std::optional<ReduceOp> reduce_from_name(const std::string& name);

// Result is bool regardless of the loop type.
bool is_comparison(BinaryOp op);
bool is_predicate(UnaryOp op);

// The combine operator's neutral element, in type t (for Max/Min this is the
// lowest/highest value, -inf/+inf for floats).
Scalar reduce_identity(ReduceOp op, DType t);
// True when the reduction has an identity, i.e. is defined on empty input.
bool reduce_has_identity(ReduceOp op);

}  // namespace nf

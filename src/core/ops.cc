#include "core/ops.h"

#include <cmath>
#include <limits>

namespace nf {

namespace {
constexpr const char* kUnaryNames[] = {
#define NF_NAME(e, s) s,
    NF_UNARY_OPS(NF_NAME)
#undef NF_NAME
};
constexpr const char* kBinaryNames[] = {
#define NF_NAME(e, s) s,
    NF_BINARY_OPS(NF_NAME)
#undef NF_NAME
};
constexpr const char* kReduceNames[] = {"sum", "prod", "max", "min", "any", "all", "argmax", "argmin"};
}  // namespace

const char* unary_name(UnaryOp op) { return kUnaryNames[static_cast<int>(op)]; }
const char* binary_name(BinaryOp op) { return kBinaryNames[static_cast<int>(op)]; }
const char* reduce_name(ReduceOp op) { return kReduceNames[static_cast<int>(op)]; }

std::optional<UnaryOp> unary_from_name(const std::string& name) {
  for (int i = 0; i < static_cast<int>(UnaryOp::Count); ++i)
    if (name == kUnaryNames[i]) return static_cast<UnaryOp>(i);
  return std::nullopt;
}
std::optional<BinaryOp> binary_from_name(const std::string& name) {
  for (int i = 0; i < static_cast<int>(BinaryOp::Count); ++i)
    if (name == kBinaryNames[i]) return static_cast<BinaryOp>(i);
  return std::nullopt;
}
std::optional<ReduceOp> reduce_from_name(const std::string& name) {
  for (int i = 0; i < static_cast<int>(ReduceOp::Count); ++i)
    if (name == kReduceNames[i]) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

bool is_comparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::Equal:
    case BinaryOp::NotEqual:
    case BinaryOp::Less:
    case BinaryOp::LessEqual:
    case BinaryOp::Greater:
    case BinaryOp::GreaterEqual:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor:
      return true;
    default:
      return false;
  }
}

bool is_predicate(UnaryOp op) {
  switch (op) {
    case UnaryOp::Isnan:
    case UnaryOp::Isinf:
    case UnaryOp::Isfinite:
    case UnaryOp::Signbit:
    case UnaryOp::LogicalNot:
      return true;
    default:
      return false;
  }
}

bool reduce_has_identity(ReduceOp op) {
  return op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::Any || op == ReduceOp::All;
}

Scalar reduce_identity(ReduceOp op, DType t) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Any:
      return Scalar::of_int(DType::Int64, 0).cast(t);
    case ReduceOp::Prod:
    case ReduceOp::All:
      return Scalar::of_int(DType::Int64, 1).cast(t);
    case ReduceOp::Max:
    case ReduceOp::ArgMax:
      switch (kind(t)) {
        case Kind::Float: return Scalar::of_float(t, -std::numeric_limits<double>::infinity());
        case Kind::Complex: return Scalar::of_complex(t, -std::numeric_limits<double>::infinity(), 0.0);
        case Kind::Bool: return Scalar::of_bool(false);
        case Kind::Unsigned: return Scalar::of_uint(t, 0);
        case Kind::Signed: return Scalar::of_int(t, itemsize(t) == 8 ? INT64_MIN : -(int64_t{1} << (itemsize(t) * 8 - 1)));
      }
      break;
    case ReduceOp::Min:
    case ReduceOp::ArgMin:
      switch (kind(t)) {
        case Kind::Float: return Scalar::of_float(t, std::numeric_limits<double>::infinity());
        case Kind::Complex: return Scalar::of_complex(t, std::numeric_limits<double>::infinity(), 0.0);
        case Kind::Bool: return Scalar::of_bool(true);
        case Kind::Unsigned: return Scalar::of_uint(t, itemsize(t) == 8 ? UINT64_MAX : (uint64_t{1} << (itemsize(t) * 8)) - 1);
        case Kind::Signed: return Scalar::of_int(t, itemsize(t) == 8 ? INT64_MAX : (int64_t{1} << (itemsize(t) * 8 - 1)) - 1);
      }
      break;
    default:
      break;
  }
  return Scalar::of_int(t, 0);
}

}  // namespace nf

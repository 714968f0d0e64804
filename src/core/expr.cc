#include "core/expr.h"

namespace nf {

std::string expr_to_string(const Expr& e, int n) {
  const ExprNode& x = e.nodes[n];
  switch (x.kind) {
    case ExprNode::Kind::Input:
      return "in" + std::to_string(x.a);
    case ExprNode::Kind::Const:
      return "c" + std::to_string(x.a);
    case ExprNode::Kind::Index:
      return "idx" + std::to_string(x.a);
    case ExprNode::Kind::Cast:
      return std::string(dtype_name(x.dtype)) + "(" + expr_to_string(e, x.a) + ")";
    case ExprNode::Kind::Unary:
      return std::string(unary_name(static_cast<UnaryOp>(x.op))) + "(" + expr_to_string(e, x.a) + ")";
    case ExprNode::Kind::Binary:
      return std::string(binary_name(static_cast<BinaryOp>(x.op))) + "(" + expr_to_string(e, x.a) +
             ", " + expr_to_string(e, x.b) + ")";
    case ExprNode::Kind::Select:
      return "where(" + expr_to_string(e, x.a) + ", " + expr_to_string(e, x.b) + ", " +
             expr_to_string(e, x.c) + ")";
  }
  return "?";
}

}  // namespace nf

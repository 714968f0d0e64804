#include "core/expr.h"

#include <string>
#include <vector>

namespace nf {

namespace {

bool is_leaf(const ExprNode& x) {
  return x.kind == ExprNode::Kind::Input || x.kind == ExprNode::Kind::Const || x.kind == ExprNode::Kind::Index;
}

std::string render(const Expr& e, int n, const std::vector<bool>& named, bool top) {
  const ExprNode& x = e.nodes[n];
  if (!top && named[n]) return "t" + std::to_string(n);
  auto sub = [&](int k) { return render(e, k, named, false); };
  switch (x.kind) {
    case ExprNode::Kind::Input:
      return "in" + std::to_string(x.a);
    case ExprNode::Kind::Const:
      return "c" + std::to_string(x.a);
    case ExprNode::Kind::Index:
      return "idx" + std::to_string(x.a);
    case ExprNode::Kind::Cast:
      return std::string(dtype_name(x.dtype)) + "(" + sub(x.a) + ")";
    case ExprNode::Kind::Unary:
      return std::string(unary_name(static_cast<UnaryOp>(x.op))) + "(" + sub(x.a) + ")";
    case ExprNode::Kind::Binary:
      return std::string(binary_name(static_cast<BinaryOp>(x.op))) + "(" + sub(x.a) + ", " + sub(x.b) + ")";
    case ExprNode::Kind::Select:
      return "where(" + sub(x.a) + ", " + sub(x.b) + ", " + sub(x.c) + ")";
  }
  return "?";
}

}  // namespace

std::string expr_to_string(const Expr& e, int n) {
  // The expression is a DAG: a value used twice (x*x, clip's comparisons)
  // is printed once, as a named binding, so the text stays linear in the
  // number of nodes however deep the sharing goes.
  std::vector<int> uses(e.nodes.size(), 0);
  std::vector<bool> reached(e.nodes.size(), false);
  std::vector<int> stack{n};
  reached[n] = true;
  while (!stack.empty()) {
    const ExprNode& x = e.nodes[stack.back()];
    stack.pop_back();
    if (is_leaf(x)) continue;
    for (int c : {x.a, x.b, x.c}) {
      if (c < 0) continue;
      ++uses[c];
      if (!reached[c]) {
        reached[c] = true;
        stack.push_back(c);
      }
    }
  }
  std::vector<bool> named(e.nodes.size(), false);
  for (size_t k = 0; k < e.nodes.size(); ++k) named[k] = reached[k] && uses[k] > 1 && !is_leaf(e.nodes[k]);
  std::string lets;
  for (size_t k = 0; k < e.nodes.size(); ++k)  // children precede their users
    if (named[k] && static_cast<int>(k) != n)
      lets += "t" + std::to_string(k) + " = " + render(e, static_cast<int>(k), named, true) + "; ";
  return lets + render(e, n, named, true);
}

}  // namespace nf

// Scalar expressions: the per-element computation of a task, and (after
// fusion) the scalar function f of an MDH expression.
//
// An Expr is a DAG stored in topological order; operands refer to earlier
// nodes by index. Leaves read an input access, a constant slot, or an affine
// function of the iteration index (for arange, eye, arg-reductions).
#pragma once

#include <type_traits>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/inline_vector.h"
#include "core/ops.h"

namespace nf {

struct ExprNode {
  enum class Kind : uint8_t { Input, Const, Index, Cast, Unary, Binary, Select };
  Kind kind;
  DType dtype;      // type of the node's value
  uint16_t op = 0;  // UnaryOp / BinaryOp for Unary / Binary (16 bits: the node has no padding bytes)
  int32_t a = -1;   // Input: input slot; Const: const slot; Index: index slot; else operand node
  // Input with b >= 0 (numfuse.jit's programs only, trace/trace.h: a
  // gather): the input's element at position (node b's value) along its
  // one dimension, not at the domain's point.
  int32_t b = -1;
  int32_t c = -1;

  // Sets every field in place. (Assigning a braced node builds it on the
  // stack and copies it as one 16-byte load right after the narrower
  // stores: a store-forwarding stall on the path of every operator.)
  void set(Kind k, DType t, uint16_t o, int32_t x = -1, int32_t y = -1, int32_t z = -1) {
    kind = k;
    dtype = t;
    op = o;
    a = x;
    b = y;
    c = z;
  }

  bool operator==(const ExprNode& o) const {
    return kind == o.kind && dtype == o.dtype && op == o.op && a == o.a && b == o.b && c == o.c;
  }
};

// Every byte of a node is a field: an array of nodes is compared and
// copied into a window's signature as bytes.
static_assert(std::has_unique_object_representations_v<ExprNode>);

struct Expr {
  InlineVector<ExprNode, 8> nodes;

  // Inlined into every caller and stored field by field, from the values
  // the caller computed. (A whole-node copy was built on the stack in
  // pieces and reloaded as one 16-byte load: a store-forwarding stall per
  // node, the costliest step of recording an operation.)
  __attribute__((always_inline)) int add(ExprNode n) {
    ExprNode& d = nodes.emplace_back();
    d.kind = n.kind;  // (field by field: a whole-node copy goes through the stack)
    d.dtype = n.dtype;
    d.op = n.op;
    d.a = n.a;
    d.b = n.b;
    d.c = n.c;
    return static_cast<int>(nodes.size()) - 1;
  }
  int input(int slot, DType t) { return add({ExprNode::Kind::Input, t, 0, slot}); }
  int gather(int slot, DType t, int position) { return add({ExprNode::Kind::Input, t, 0, slot, position}); }
  int constant(int slot, DType t) { return add({ExprNode::Kind::Const, t, 0, slot}); }
  int index(int slot) { return add({ExprNode::Kind::Index, DType::Int64, 0, slot}); }
  // Casts only when the type changes.
  int cast(int x, DType t) {
    if (nodes[x].dtype == t) return x;
    return add({ExprNode::Kind::Cast, t, 0, x});
  }
  int unary(UnaryOp op, int x, DType result) {
    return add({ExprNode::Kind::Unary, result, static_cast<uint8_t>(op), x});
  }
  int binary(BinaryOp op, int x, int y, DType result) {
    return add({ExprNode::Kind::Binary, result, static_cast<uint8_t>(op), x, y});
  }
  int select(int cond, int x, int y) {
    return add({ExprNode::Kind::Select, nodes[x].dtype, 0, cond, x, y});
  }
  int root() const { return static_cast<int>(nodes.size()) - 1; }
  DType dtype() const { return nodes.back().dtype; }
};

// Human-readable form of node `n` ("add(in0, cast<f64>(c0))"), for explain().
std::string expr_to_string(const Expr& e, int n);

}  // namespace nf

// LoopNest: the small loop IR between a scheduled MdHom and C/CUDA source.
//
// A kernel is one function `void name(char** p, const int64_t* ip,
// const double* fp)`: p holds one pointer per access (already offset), ip the
// integer parameters (extents, strides, integer constants), fp the floating
// constants. The body is a tree of statements; expressions are trees too, so
// each renderer spells them its own way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/ops.h"
#include "mdh/mdh.h"
#include "tune/tune.h"

namespace nf::lower {

struct Ex;
using ExP = std::shared_ptr<const Ex>;

struct Ex {
  enum class K : uint8_t {
    Var,       // name
    IntLit,    // ival
    FloatLit,  // fval (in dtype; a complex dtype: fval + fimag i)
    IntParam,  // ip[slot]  (int64)
    FloatParam,// fp[slot]
    Load,      // name[args[0]]  (name = pointer or local array)
    Arith,     // int64 index arithmetic: args[0] op args[1]; op in "+-*/<m" (m=min, <: less)
    Scalar,    // a scalar operation of the ops vocabulary on args (node.kind Unary/Binary/Select/Cast)
    Combine,   // the reduction operator `rop` in type dtype applied to args[0], args[1]; an
               // arg-reduction's (acc, ai, v, vi) test, with ival 1 when vi comes later (spell_arg_better)
  };
  K k;
  DType dtype = DType::Int64;
  std::string name;
  int64_t ival = 0;
  double fval = 0;
  double fimag = 0;  // FloatLit of a complex type: the imaginary part
  int slot = 0;      // FloatParam of a complex type: fp[slot] real, fp[slot + 1] imaginary
  char op = 0;
  ExprNode node{};  // for Scalar
  ReduceOp rop = ReduceOp::Sum;
  std::vector<ExP> args;
};

ExP var(const std::string& name, DType t = DType::Int64);
ExP lit(int64_t v);
ExP add(ExP a, ExP b);
ExP sub(ExP a, ExP b);
ExP mul(ExP a, ExP b);
ExP min(ExP a, ExP b);

struct Stmt;
using StmtP = std::shared_ptr<Stmt>;

struct Stmt {
  enum class K : uint8_t {
    Block,     // body
    For,       // for (int64 var = lo; var < hi; var += step) body
    Decl,      // dtype name [= init]; or dtype name[len] (local array, len > 0)
    Assign,    // target = value  (target: Var or Load expression)
    Parallel,  // body runs on every thread; nf_tid / nf_nt are defined inside
    Alloc,     // dtype* name = malloc(count * sizeof)  (heap scratch)
    Free,      // free(name)
    Comment,
    If,        // if (cond) body else else_body
  };
  enum class Tag : uint8_t { Serial, Simd, Unroll };
  K k = K::Block;
  std::vector<StmtP> body;
  std::string name;
  DType dtype = DType::Int64;
  ExP lo, hi, step, init, target, value, count;
  int64_t len = 0;
  Tag tag = Tag::Serial;
  // Simd reductions: (variable, operator) pairs for the simd clause.
  std::vector<std::pair<std::string, char>> simd_reductions;
  ExP parallel_if;  // Parallel: run in parallel only when true
  std::string text; // Comment
  ExP cond;                       // If
  std::vector<StmtP> else_body;   // If
};

struct LoopNest {
  std::string name;       // function name
  std::vector<StmtP> body;
  int num_ptrs = 0;
  std::vector<DType> ptr_types;
  bool uses_threads = false;
  bool contract = false;  // fused multiply-add allowed (schedule.contract)
  bool wide = false;      // the target's widest vectors (schedule.wide)
  // Source-level description for dumps.
  std::string description;
};

// Lower a scheduled MdHom. The schedule must be legal for h.
LoopNest lower(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name);

}  // namespace nf::lower

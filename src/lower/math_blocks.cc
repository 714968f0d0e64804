// The math_blocks pass (passes.h; the CPU target's tail): strided operands
// of a simd loop that calls a math function go through contiguous blocks.
//
// A kernel's math functions (exp, sin, tanh, pow, ...) run as vector calls
// in simd loops (runtime/vmath.h). A simd loop whose elements are a stride
// apart in memory -- a column, x[::2], a reversed view -- has its stride as
// a parameter, and LLVM's vectorizer versions such a loop on the stride
// being 1: at any other stride it runs the loop's scalar copy, one math call
// per element, each a whole vector's work (one implementation per function:
// the scalar form computes through the vector form). So here each such
// loop runs in blocks of kBlock elements: a loop copies the block's strided
// reads into Local arrays, the simd loop computes from those (contiguous:
// vector calls), and a loop copies its strided stores out.
//
// A loop is taken when it is Vectorized with a literal step of 1, carries
// nothing (no simd reductions, no variable declared outside it assigned),
// its body is only declarations and assignments, a unary or binary math
// function of a real float type is among them, and some load or store
// along its variable is not contiguous. A strided read is buffered when
// its index names nothing the body declares; a strided store when nothing
// in the body reads the array it stores into (the store is then the
// element's last word in the block). Iterations of a Vectorized loop are
// independent (lower.h), so reading a block before writing it keeps the
// meaning.
#include <set>
#include <string>
#include <vector>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

constexpr int64_t kBlock = 64;

bool is_math(const Ex& e) {
  if (e.k != Ex::K::Scalar || (e.dtype != DType::Float64 && e.dtype != DType::Float32)) return false;
  if (e.node.kind == ExprNode::Kind::Unary) {
    switch (static_cast<UnaryOp>(e.node.op)) {
      case UnaryOp::Sin: case UnaryOp::Cos: case UnaryOp::Tan: case UnaryOp::Arcsin: case UnaryOp::Arccos:
      case UnaryOp::Arctan: case UnaryOp::Sinh: case UnaryOp::Cosh: case UnaryOp::Tanh: case UnaryOp::Arcsinh:
      case UnaryOp::Arccosh: case UnaryOp::Arctanh: case UnaryOp::Exp: case UnaryOp::Exp2: case UnaryOp::Expm1:
      case UnaryOp::Log: case UnaryOp::Log2: case UnaryOp::Log10: case UnaryOp::Log1p: case UnaryOp::Cbrt:
      case UnaryOp::Erf:
        return true;
      default: return false;
    }
  }
  if (e.node.kind == ExprNode::Kind::Binary) {
    switch (static_cast<BinaryOp>(e.node.op)) {
      case BinaryOp::Power: case BinaryOp::Arctan2: case BinaryOp::Hypot: case BinaryOp::Logaddexp:
      case BinaryOp::Logaddexp2:
        return true;
      default: return false;
    }
  }
  return false;
}

bool calls_math(const ExP& e) {
  if (!e) return false;
  if (is_math(*e)) return true;
  for (const ExP& a : e->args)
    if (calls_math(a)) return true;
  return false;
}

// Loads of memory in e (not the target's own load of an Assign).
void loads_in(const ExP& e, std::vector<ExP>& out) {
  if (!e) return;
  if (e->k == Ex::K::Load) out.push_back(e);
  for (const ExP& a : e->args) loads_in(a, out);
}

struct Buffered {
  ExP load;          // the original access
  std::string name;  // its Local array
};

class MathBlocks {
 public:
  void walk(std::vector<StmtP>& list) {
    for (StmtP& s : list) {
      walk(s->body);
      walk(s->else_body);
      if (s->k == Stmt::K::For) {
        if (StmtP b = blocked(*s)) s = b;
      }
    }
  }

 private:
  int count_ = 0;

  StmtP blocked(const Stmt& f) {
    if (f.loop != LoopKind::Vectorized || !f.simd_reductions.empty() || !f.step || f.step->k != Ex::K::IntLit ||
        f.step->ival != 1)
      return nullptr;
    const std::vector<StmtP> body = unwrapped_body(f);
    std::set<std::string> inside;
    bool math = false;
    for (const StmtP& s : body) {
      if (s->k == Stmt::K::Decl) {
        inside.insert(s->name);
        math |= calls_math(s->init);
      } else if (s->k == Stmt::K::Assign) {
        if (s->target->k == Ex::K::Var && !inside.count(s->target->name)) return nullptr;  // carried
        math |= calls_math(s->value);
      } else {
        return nullptr;
      }
    }
    if (!math) return nullptr;
    const std::set<std::string> self = {f.name};
    auto strided = [&](const ExP& ld) {
      return mentions(ld->args[0], self) && !unit_term(ld->args[0], f.name) && !mentions(ld->args[0], inside);
    };
    // The reads and stores to buffer, each distinct access once.
    std::vector<Buffered> reads, stores;
    std::set<std::string> read_arrays;
    auto keep = [&](std::vector<Buffered>& to, const ExP& ld) {
      for (const Buffered& b : to)
        if (same_ex(b.load, ld)) return;
      to.push_back({ld, f.name + "_mb" + std::to_string(count_) + "_" + std::to_string(reads.size() + stores.size())});
    };
    for (const StmtP& s : body) {
      std::vector<ExP> lds;
      loads_in(s->k == Stmt::K::Decl ? s->init : s->value, lds);
      if (s->k == Stmt::K::Assign && s->target->k == Ex::K::Load) loads_in(s->target->args[0], lds);
      for (const ExP& ld : lds) {
        read_arrays.insert(ld->name);
        if (strided(ld)) keep(reads, ld);
      }
    }
    for (const StmtP& s : body)
      if (s->k == Stmt::K::Assign && s->target->k == Ex::K::Load && strided(s->target) &&
          !read_arrays.count(s->target->name))
        keep(stores, s->target);
    if (reads.empty() && stores.empty()) return nullptr;
    ++count_;
    const std::string vb = f.name + "_mb" + std::to_string(count_ - 1);
    const ExP vbv = var(vb), at = sub(var(f.name), vbv);
    const ExP end = min(add(vbv, lit(kBlock)), f.hi);
    auto outer = for_loop(vb, f.lo, f.hi, lit(kBlock));
    std::vector<StmtP>& ob = outer->body;
    for (const std::vector<Buffered>* bs : {&reads, &stores})
      for (const Buffered& b : *bs) ob.push_back(local_array(b.load->dtype, b.name, kBlock));
    // The block's reads in.
    if (!reads.empty()) {
      auto in = for_loop(f.name, vbv, end, lit(1));
      for (const Buffered& b : reads) in->body.push_back(assign(load(b.name, at, b.load->dtype), b.load));
      ob.push_back(in);
    }
    // The simd loop, on the buffers.
    auto swap = [&](const ExP& e) {
      return rewrite_ex(e, [&](const ExP& x) -> ExP {
        if (x->k != Ex::K::Load) return x;
        for (const Buffered& b : reads)
          if (same_ex(b.load, x)) return load(b.name, at, x->dtype);
        return x;
      });
    };
    auto simd = std::make_shared<Stmt>(f);
    simd->lo = vbv;
    simd->hi = end;
    simd->body.clear();
    for (const StmtP& s : body) {
      StmtP c = copy(s);
      if (c->k == Stmt::K::Decl) {
        c->init = swap(c->init);
      } else {
        c->value = swap(c->value);
        bool stored = false;
        for (const Buffered& b : stores)
          if (same_ex(b.load, c->target)) {
            c->target = load(b.name, at, c->target->dtype);
            stored = true;
          }
        // (a store not buffered: only the loads in its index read the buffers)
        if (!stored && c->target->k == Ex::K::Load) {
          auto t = std::make_shared<Ex>(*c->target);
          t->args[0] = swap(t->args[0]);
          c->target = t;
        }
      }
      simd->body.push_back(c);
    }
    ob.push_back(simd);
    // The block's stores out.
    if (!stores.empty()) {
      auto out = for_loop(f.name, vbv, end, lit(1));
      for (const Buffered& b : stores) out->body.push_back(assign(b.load, load(b.name, at, b.load->dtype)));
      ob.push_back(out);
    }
    return outer;
  }
};

}  // namespace

void passes::math_blocks(LoopNest& n, const PassContext&) { MathBlocks().walk(n.body); }

}  // namespace nf::lower

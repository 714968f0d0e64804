// lower_program (lower.h): a traced program as one serial kernel.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lower/lowerer.h"
#include "lower/passes.h"
#include "trace/trace.h"

namespace nf::lower {

namespace {

using namespace detail;
using trace::Aff;
using trace::Item;
using trace::Op;

class ProgramLowerer {
 public:
  explicit ProgramLowerer(const trace::Program& p) : p_(p) {}

  // Fusion inside the program (Diffuse's producer-consumer rule): an
  // elementwise operation whose result is a temporary that only the next
  // operation reads, over the same points at the same positions, is
  // computed inside that operation's loop instead of through memory --
  // unless the consumer writes memory the producer reads elsewhere than
  // where it writes (the producer must see the old values).
  void plan(const std::vector<Item>& items) {
    const Op* prev = nullptr;  // the last operation before items[k] in this sequence, if no loop came between
    for (size_t k = 0; k < items.size(); ++k) {
      if (items[k].loop) {
        plan(items[k].body);
        prev = nullptr;
        continue;
      }
      if (identity(items[k].op)) continue;
      const Op* before = prev;
      prev = &items[k].op;
      if (!before) continue;
      const Op& a = *before;
      const Op& b = items[k].op;
      if (a.task->kind != Task::Kind::Map || b.task->kind == Task::Kind::Scan || a.task->scatter || b.task->scatter)
        continue;
      if (a.extents != b.extents) continue;
      const Op::Access& out = a.views.back();
      if (p_.slots[out.slot].kind != trace::Slot::Kind::Temp || b.views.back().slot == out.slot) continue;
      int reads = 0;
      bool same = true;
      for (size_t v = 0; v + 1 < b.views.size(); ++v)
        if (b.views[v].slot == out.slot) {
          ++reads;
          same &= same_access(b.views[v], out) && !gathers(*b.task, static_cast<int>(v));
        }
      if (reads == 0 || !same || refs_[out.slot] != reads + 1) continue;
      const Op::Access& w = b.views.back();
      bool clash = false;
      for_inputs(a, [&](const Op::Access& r) {
        clash |= r.slot == w.slot && !same_access(r, w) && !apart(r, w, b.extents);
      });
      if (clash) continue;
      producer_[&b] = &a;
      fused_.insert(&a);
    }
  }

  void count(const std::vector<Item>& items) {
    if (&items == &p_.items)
      for (const trace::Program::Result& r : p_.results) ++refs_[r.slot];  // read after the program
    for (const Item& i : items) {
      if (i.loop) {
        count(i.body);
        continue;
      }
      if (identity(i.op)) continue;
      for (const Op::Access& v : i.op.views) ++refs_[v.slot];
    }
  }

  // x[...] = x[...] of the same memory (what `a[i:j] += b` records last,
  // after the addition wrote a[i:j] in place): nothing to do.
  static bool identity(const Op& op) {
    const Task& t = *op.task;
    if (t.kind != Task::Kind::Map || t.scatter) return false;
    const ExprNode& r = t.expr.nodes[t.value()];
    if (r.kind != ExprNode::Kind::Input || r.b >= 0 || r.dtype != t.output.dtype || t.inputs[r.a].dtype != r.dtype)
      return false;
    return same_access(op.views[r.a], op.views.back());
  }

  void items(const std::vector<Item>& items, int depth, std::vector<StmtP>& out) {
    for (const Item& i : items) {
      if (!i.loop) {
        if (!fused_.count(&i.op) && !identity(i.op)) op(i.op, out);
        continue;
      }
      StmtP f = for_loop("j" + std::to_string(depth), lit(0), aff(i.trip), lit(1));
      this->items(i.body, depth + 1, f->body);
      out.push_back(f);
    }
  }

 private:
  const trace::Program& p_;
  int regs_ = 0;
  std::unordered_map<int, int> refs_;                   // accesses of each slot in the program
  std::unordered_map<const Op*, const Op*> producer_;   // an op's fused producer
  std::unordered_set<const Op*> fused_;                 // ops computed inside their consumer

  // Whether a reduction is a contraction to lower with its reduced loop
  // outside (op() above): a sequential sum (solo: not NumPy's pairwise
  // one) over one dimension, accumulated in the output's own type, whose
  // innermost kept dimension is unit-stride in the output and in an input
  // that strides along the reduced one, the output in memory no input of
  // the task is in.
  bool interchange(const Op& op, const std::vector<int>& kept, const std::vector<int>& reduced) const {
    const Task& t = *op.task;
    if (!t.solo || t.reduce != ReduceOp::Sum || reduced.size() != 1 || kept.empty() || is_arg(t.reduce) ||
        t.acc_dtype != t.output.dtype || producer_.count(&op))
      return false;
    const int j = kept.back(), r = reduced[0];
    const Op::Access& o = op.views.back();
    auto unit = [](const Aff& a) { return a.constant() && a.c == 1; };
    if (!unit(o.strides[j]) || (op.extents[j].constant() && op.extents[j].c < 4)) return false;
    bool along = false;
    for (size_t v = 0; v + 1 < op.views.size(); ++v) {
      const Op::Access& in = op.views[v];
      if (in.slot == o.slot || gathers(t, static_cast<int>(v))) return false;
      along |= unit(in.strides[j]) && !(in.strides[r].constant() && std::abs(in.strides[r].c) <= 1);
    }
    return along;
  }

  // Whether the task reads input v by a gather (at positions it computes).
  static bool gathers(const Task& t, int v) {
    return std::any_of(t.expr.nodes.begin(), t.expr.nodes.end(),
                       [&](const ExprNode& x) { return x.kind == ExprNode::Kind::Input && x.a == v && x.b >= 0; });
  }
  static bool same_access(const Op::Access& x, const Op::Access& y) {
    return x.slot == y.slot && x.offset == y.offset && x.strides == y.strides;
  }
  // Accesses of one slot over the same points (extents) that never touch
  // the same element: equal constant strides, offsets a constant apart by
  // a distance no combination of the strides within the extents makes
  // (no common divisor, or farther than the access spans).
  static bool apart(const Op::Access& x, const Op::Access& y, const std::vector<Aff>& extents) {
    if (x.strides != y.strides || x.offset.k != y.offset.k || x.strides.size() != extents.size()) return false;
    if (x.offset.table != y.offset.table || (x.offset.table && x.offset.td != y.offset.td)) return false;
    const int64_t delta = x.offset.c - y.offset.c;
    if (delta == 0) return false;
    int64_t g = 0, span = 0;
    for (size_t d = 0; d < extents.size(); ++d) {
      if (!x.strides[d].constant() || !extents[d].constant()) return false;
      const int64_t s = std::abs(x.strides[d].c), e = extents[d].c;
      if (e <= 0) return true;  // (no points)
      if (e == 1 || s == 0) continue;
      g = std::gcd(g, s);
      span += s * (e - 1);
    }
    return g == 0 || delta % g != 0 || std::abs(delta) > span;
  }
  // Every access `o` reads, its fused producers' included.
  void for_inputs(const Op& o, const std::function<void(const Op::Access&)>& f) const {
    auto it = producer_.find(&o);
    const Op* prod = it == producer_.end() ? nullptr : it->second;
    for (size_t v = 0; v + 1 < o.views.size(); ++v) {
      if (prod && o.views[v].slot == prod->views.back().slot) continue;
      f(o.views[v]);
    }
    if (prod) for_inputs(*prod, f);
  }

  static ExP aff(const Aff& f) {
    ExP e = lit(f.c);
    for (size_t d = 0; d < f.k.size(); ++d)
      if (f.k[d] != 0) e = add(e, mul(lit(f.k[d]), var("j" + std::to_string(d))));
    if (f.table) e = add(e, load(ptr(f.tslot), var("j" + std::to_string(f.td)), DType::Int64));
    return e;
  }
  static bool zero(const Aff& f) { return f.c == 0 && f.k.empty(); }

  static std::string ptr(int slot) { return "p" + std::to_string(slot); }

  static ExP index(const Op::Access& a, const std::vector<ExP>& idx) {
    ExP e = aff(a.offset);
    for (size_t d = 0; d < a.strides.size(); ++d)
      if (!zero(a.strides[d])) e = add(e, mul(aff(a.strides[d]), idx[d]));
    return e;
  }

  // The value of the task's expression at point idx.
  ExP value(const Op& op, const std::vector<ExP>& idx, int node = -1) {
    const Task& t = *op.task;
    std::vector<ExP> val(t.expr.nodes.size());
    // Integer constants are the op's Affs, in the order of the task's consts.
    std::vector<int> int_of(t.consts.size(), -1);
    for (size_t c = 0, k = 0; c < t.consts.size(); ++c)
      if (!is_inexact(t.consts[c].dtype)) int_of[c] = static_cast<int>(k++);
    const int root = node >= 0 ? node : t.value();
    for (int n = 0; n <= root; ++n) {
      const ExprNode& x = t.expr.nodes[n];
      switch (x.kind) {
        case ExprNode::Kind::Input: {
          const DType vt = t.inputs[x.a].dtype;
          auto it = producer_.find(&op);
          if (it != producer_.end() && op.views[x.a].slot == it->second->views.back().slot) {
            // (The producer's value as it would have been stored.)
            val[n] = cast(cast(value(*it->second, idx), it->second->task->output.dtype), x.dtype);
            break;
          }
          if (x.b >= 0) {  // a gather: the input's element at node b's value (checked in range at the trace)
            const Op::Access& g = op.views[x.a];
            val[n] = cast(load(ptr(g.slot), add(aff(g.offset), mul(aff(g.strides[0]), cast(val[x.b], DType::Int64))), vt),
                          x.dtype);
            break;
          }
          val[n] = cast(load(ptr(op.views[x.a].slot), index(op.views[x.a], idx), vt), x.dtype);
          break;
        }
        case ExprNode::Kind::Const: {
          const Scalar& c = t.consts[x.a];
          val[n] = int_of[x.a] >= 0 ? cast(aff(op.ints[int_of[x.a]]), x.dtype) : cast(scalar_lit(c, c.dtype), x.dtype);
          break;
        }
        case ExprNode::Kind::Index: {
          ExP s = aff(op.index_offsets[x.a]);
          for (size_t d = 0; d < idx.size(); ++d)
            if (!zero(op.index_strides[x.a][d])) s = add(s, mul(aff(op.index_strides[x.a][d]), idx[d]));
          val[n] = cast(s, x.dtype);
          break;
        }
        case ExprNode::Kind::Cast:
          val[n] = cast(val[x.a], x.dtype);
          break;
        default: {
          std::vector<ExP> args;
          for (int a : {x.a, x.b, x.c})
            if (a >= 0) args.push_back(val[a]);
          val[n] = scalar(x, args);
        }
      }
    }
    return val[root];
  }

  void op(const Op& op, std::vector<StmtP>& out) {
    const Task& t = *op.task;
    const int rank = static_cast<int>(op.extents.size());
    std::vector<ExP> idx;
    for (int d = 0; d < rank; ++d) idx.push_back(var("t" + std::to_string(d)));
    const Op::Access& o = op.views.back();
    const DType odt = t.output.dtype;
    // Loops over dimensions `dims`, innermost last; returns the innermost body.
    auto nest = [&](const std::vector<int>& dims, std::vector<StmtP>& into, StmtP* innermost) {
      std::vector<StmtP>* body = &into;
      for (int d : dims) {
        StmtP f = for_loop("t" + std::to_string(d), lit(0), aff(op.extents[d]), lit(1));
        f->keep_rolled = true;
        body->push_back(f);
        body = &f->body;
        if (innermost) *innermost = f;
      }
      return body;
    };
    if (t.kind == Task::Kind::Map) {
      std::vector<int> all;
      for (int d = 0; d < rank; ++d) all.push_back(d);
      std::vector<StmtP>* body = nest(all, out, nullptr);
      ExP at = index(o, idx);
      if (t.scatter) {  // at the position input scatter - 1 holds (checked in range at the trace)
        const Op::Access& p = op.views[t.scatter - 1];
        at = add(aff(o.offset), mul(aff(o.strides[0]), load(ptr(p.slot), index(p, idx), DType::Int64)));
      }
      body->push_back(assign(load(ptr(o.slot), at, odt), cast(value(op, idx), odt)));
      return;
    }
    if (t.kind == Task::Kind::Scan) {
      // A prefix sum (cumsum, cumprod), as the ordinary path computes it:
      // each point combines with the output one step back along the scan
      // dimension (final already: the loops run in order), in the output's
      // type; the first point of a line stores the value itself.
      std::vector<int> all;
      for (int d = 0; d < rank; ++d) all.push_back(d);
      std::vector<StmtP>* body = nest(all, out, nullptr);
      const int s = t.scan_axis;
      const ExP here = load(ptr(o.slot), index(o, idx), odt);
      std::vector<ExP> back = idx;
      back[s] = sub(idx[s], lit(1));
      const ExP prev = load(ptr(o.slot), index(o, back), odt);
      const ExP v = cast(value(op, idx), odt);
      StmtP split = if_else(arith('<', lit(0), idx[s]));
      split->body.push_back(assign(here, combine(t.reduce, odt, prev, v)));
      split->else_body.push_back(assign(here, v));
      body->push_back(split);
      return;
    }
    // A reduction: the output's stride-0 dimensions are combined.
    std::vector<int> kept, reduced;
    for (int d = 0; d < rank; ++d) (t.output.strides[d] == 0 ? reduced : kept).push_back(d);
    for (int d : reduced)
      if (!zero(o.strides[d])) throw trace::Unsupported("a reduction whose output moves between iterations");
    if (interchange(op, kept, reduced)) {
      // A contraction whose kept dimension runs along memory where the
      // reduced one strides (`x[:, i] @ A[:, i + 1:]`, `v @ M`): the
      // reduced loop outside, the output's row accumulated in place inside
      // (unit stride: vectorized). Each output element still sums in the
      // reduced dimension's order: the same value, bit for bit.
      const int j = kept.back();
      std::vector<int> outer(kept.begin(), kept.end() - 1);
      std::vector<StmtP>* body = nest(outer, out, nullptr);
      const DType at = t.acc_dtype;
      ExP init = t.init_const >= 0 ? cast(scalar_lit(t.consts[t.init_const], t.consts[t.init_const].dtype), at)
                                   : scalar_lit(reduce_identity(t.reduce, at), at);
      const ExP here = load(ptr(o.slot), index(o, idx), odt);
      nest({j}, *body, nullptr)->push_back(assign(here, init));
      std::vector<StmtP>* inner = nest({reduced[0], j}, *body, nullptr);
      inner->push_back(assign(here, combine(t.reduce, at, here, cast(value(op, idx), at))));
      return;
    }
    std::vector<StmtP>* body = nest(kept, out, nullptr);
    const std::string acc = "r" + std::to_string(regs_++);
    const DType at = t.acc_dtype;
    ExP init = t.init_const >= 0 ? cast(scalar_lit(t.consts[t.init_const], t.consts[t.init_const].dtype), at)
                                 : scalar_lit(reduce_identity(t.reduce, at), at);
    StmtP reg = decl(at, acc, init);
    body->push_back(reg);
    // argmax/argmin: the best value's index (the first of equals; a NaN
    // wins) in a second register.
    const bool arg = is_arg(t.reduce);
    const std::string iacc = acc + "i";
    if (arg) body->push_back(decl(DType::Int64, iacc, lit(INT64_MAX)));
    StmtP inner;
    std::vector<StmtP>* rbody = nest(reduced, *body, &inner);
    if (arg) {
      combine_into(*rbody, t.reduce, at, "better" + acc, var(acc, at), var(iacc), cast(value(op, idx), at),
                   cast(value(op, idx, t.arg_node), DType::Int64));
      body->push_back(assign(load(ptr(o.slot), index(o, idx), odt), cast(var(iacc), odt)));
      return;
    }
    rbody->push_back(assign(var(acc, at), combine(t.reduce, at, var(acc, at), cast(value(op, idx), at))));
    // NumPy sums floats pairwise along the innermost dimension it reduces.
    if (t.reduce == ReduceOp::Sum && is_float(at) && !t.solo && reduced.size() == 1 && reduced[0] == rank - 1 && inner) {
      inner->pairwise = true;
      auto a = std::make_shared<Stmt::Accumulator>();
      a->op = ReduceOp::Sum;
      reg->accumulates = a;
    }
    body->push_back(assign(load(ptr(o.slot), index(o, idx), odt), cast(var(acc, at), odt)));
  }
};

}  // namespace

LoopNest lower_program(const trace::Program& p, const std::string& name) {
  LoopNest n;
  n.name = name;
  n.num_ptrs = static_cast<int>(p.slots.size());
  for (const trace::Slot& s : p.slots) n.ptr_types.push_back(s.dtype);
  n.description = "numfuse.jit program";
  ProgramLowerer lowerer(p);
  lowerer.count(p.items);  // (and what the call returns, below)
  lowerer.plan(p.items);
  lowerer.items(p.items, 0, n.body);
  const PassContext ctx;
  passes::pairwise(n, ctx);
  passes::simplify(n, ctx);
  return n;
}

}  // namespace nf::lower

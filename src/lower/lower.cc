// MdHom + Schedule -> LoopNest.
//
// Invariant (correct by construction, MDH section 4): the loops enumerate
// every point of the domain exactly once, whatever the tile sizes, loop order
// or parallel loop, because each level's loop covers its parent tile, clipped
// to the extent. Map outputs are stored once per point. A reduction output is
// combined into
//   - a register, when all of its concatenated loops enclose all of its
//     point-wise loops (declared inside the innermost concatenated loop);
//   - memory (its buffer, or a dense scratch array when it combines in a
//     different type or is an arg-reduction), initialized with the identity
//     before the loops, otherwise;
// and when the parallel loop is one of its point-wise dimensions, each thread
// combines into private partials that are combined, in thread order, after.
// Combine operators are associative and commutative (arg-reductions break
// ties by index), so any of these orders gives the same result.
#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <stdexcept>

#include "lower/lower.h"

namespace nf::lower {

ExP var(const std::string& name, DType t) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Var;
  e->name = name;
  e->dtype = t;
  return e;
}
ExP lit(int64_t v) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::IntLit;
  e->ival = v;
  return e;
}
static ExP arith(char op, ExP a, ExP b) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Arith;
  e->op = op;
  e->args = {std::move(a), std::move(b)};
  return e;
}
ExP add(ExP a, ExP b) {
  if (a->k == Ex::K::IntLit && a->ival == 0) return b;
  if (b->k == Ex::K::IntLit && b->ival == 0) return a;
  return arith('+', std::move(a), std::move(b));
}
ExP mul(ExP a, ExP b) {
  if (a->k == Ex::K::IntLit && a->ival == 1) return b;
  if (b->k == Ex::K::IntLit && b->ival == 1) return a;
  return arith('*', std::move(a), std::move(b));
}
ExP min(ExP a, ExP b) { return arith('m', std::move(a), std::move(b)); }

namespace {

ExP int_param(int slot, DType t = DType::Int64) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::IntParam;
  e->slot = slot;
  e->dtype = t;
  return e;
}
ExP float_param(int slot, DType t) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::FloatParam;
  e->slot = slot;
  e->dtype = t;
  return e;
}
ExP load(const std::string& arr, ExP index, DType t) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Load;
  e->name = arr;
  e->dtype = t;
  e->args = {std::move(index)};
  return e;
}
ExP scalar(const ExprNode& n, std::vector<ExP> args) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Scalar;
  e->node = n;
  e->dtype = n.dtype;
  e->args = std::move(args);
  return e;
}
ExP cast(ExP x, DType t) {
  if (x->dtype == t) return x;
  ExprNode n{ExprNode::Kind::Cast, t, 0, 0};
  return scalar(n, {std::move(x)});
}
ExP combine(ReduceOp op, DType t, ExP a, ExP b) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Combine;
  e->rop = op;
  e->dtype = t;
  e->args = {std::move(a), std::move(b)};
  return e;
}
// Arg-reductions: true when (v, vi) should replace (acc, ai). The value is
// of type t; the result is bool.
ExP arg_better(ReduceOp op, DType t, ExP acc, ExP ai, ExP v, ExP vi) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Combine;
  e->rop = op;
  e->dtype = t;
  e->args = {std::move(acc), std::move(ai), std::move(v), std::move(vi)};
  return e;
}
ExP scalar_lit(const Scalar& s, DType t) {
  Scalar c = s.cast(t);
  auto e = std::make_shared<Ex>();
  if (is_float(t)) {
    e->k = Ex::K::FloatLit;
    e->fval = c.f;
  } else {
    e->k = Ex::K::IntLit;
    e->ival = c.i;
  }
  e->dtype = t;
  return e;
}

StmtP block() { return std::make_shared<Stmt>(); }
StmtP decl(DType t, const std::string& name, ExP init) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::Decl;
  s->dtype = t;
  s->name = name;
  s->init = std::move(init);
  return s;
}
StmtP assign(ExP target, ExP value) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::Assign;
  s->target = std::move(target);
  s->value = std::move(value);
  return s;
}
StmtP for_loop(const std::string& v, ExP lo, ExP hi, ExP step) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::For;
  s->name = v;
  s->lo = std::move(lo);
  s->hi = std::move(hi);
  s->step = std::move(step);
  return s;
}
StmtP comment(const std::string& text) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::Comment;
  s->text = text;
  return s;
}

bool is_arg(ReduceOp op) { return op == ReduceOp::ArgMax || op == ReduceOp::ArgMin; }

char simd_op(ReduceOp op, DType t) {
  switch (op) {
    case ReduceOp::Sum: return '+';
    case ReduceOp::Prod: return '*';
    case ReduceOp::Any: return '|';
    case ReduceOp::All: return '&';
    case ReduceOp::Max: return is_float(t) ? 0 : 'M';
    case ReduceOp::Min: return is_float(t) ? 0 : 'm';
    default: return 0;
  }
}

// How one reduction output is accumulated.
struct RedPlan {
  int out = 0;              // index in h.outputs
  bool reg = false;         // register accumulator holding the final value
  bool sub_reg = false;     // register partial over the trailing point-wise loops, folded into memory
  int reg_pos = -1;         // registers live in the body of order[reg_pos] (-1: top of thread body)
  bool partials = false;    // parallel loop runs over one of its point-wise dims
  bool scratch = false;     // memory accumulation in a dense scratch array
  std::string acc, idx;     // memory accumulator / arg-index arrays (scratch, partials)
  std::string racc, ridx;   // register accumulator / arg-index
  std::vector<int> cdims;   // its concatenated dims
};

class Lowerer {
 public:
  Lowerer(const mdh::MdHom& h, const tune::Schedule& s) : h_(h), s_(s) {}

  LoopNest run(const std::string& name) {
    LoopNest ln;
    ln.name = name;
    ln.num_ptrs = static_cast<int>(h_.accesses.size());
    for (const mdh::Access& a : h_.accesses) ln.ptr_types.push_back(a.dtype);
    plan_reductions();
    std::vector<StmtP>& top = ln.body;
    for (int d = 0; d < h_.ndim; ++d) top.push_back(decl(DType::Int64, "n" + std::to_string(d), int_param(h_.extent[d])));
    // Scratch arrays and init of memory accumulators.
    const bool par = s_.parallel;
    ln.uses_threads = par;
    if (par) top.push_back(decl(DType::Int64, "nf_maxt", var("nf_max_threads()")));
    for (RedPlan& r : plans_) {
      const mdh::Output& o = h_.outputs[r.out];
      if (r.reg && !r.partials) continue;
      ExP copies = r.partials ? var("nf_maxt") : lit(1);
      if (r.reg) {  // partials of a scalar register accumulator
        alloc(top, o.acc_dtype, r.acc + "_part", copies);
        if (is_arg(o.op)) alloc(top, DType::Int64, r.idx + "_part", copies);
        continue;
      }
      ExP count = mul(copies, dense_size(r.cdims));
      if (r.scratch || r.partials) {
        alloc(top, o.acc_dtype, r.acc, count);
        if (is_arg(o.op)) alloc(top, DType::Int64, r.idx, count);
        init_dense(top, o, r, count);
      } else {
        init_output(top, o);
      }
    }
    // Main loops.
    StmtP body = block();
    if (par) {
      auto region = std::make_shared<Stmt>();
      region->k = Stmt::K::Parallel;
      ExP work = lit(1);
      for (int d = 0; d < h_.ndim; ++d) work = mul(work, var("n" + std::to_string(d)));
      region->parallel_if = arith('<', lit(s_.parallel_min_work - 1), work);
      region->body.push_back(body);
      top.push_back(region);
      top.push_back(decl(DType::Int64, "nf_used", var("nf_used_threads")));
    } else {
      top.push_back(decl(DType::Int64, "nf_tid", lit(0)));
      top.push_back(decl(DType::Int64, "nf_nt", lit(1)));
      top.push_back(body);
    }
    emit_loops(body->body, 0);
    // Combine partials and write back scratch results.
    for (RedPlan& r : plans_) finish(top, r);
    for (RedPlan& r : plans_) {
      if (r.reg && !r.partials) continue;
      if (r.reg) {
        free_(top, r.acc + "_part");
        if (is_arg(h_.outputs[r.out].op)) free_(top, r.idx + "_part");
      } else if (r.scratch || r.partials) {
        free_(top, r.acc);
        if (is_arg(h_.outputs[r.out].op)) free_(top, r.idx);
      }
    }
    return ln;
  }

 private:
  const mdh::MdHom& h_;
  const tune::Schedule& s_;
  std::vector<RedPlan> plans_;

  static std::string ptr(int access) { return "p" + std::to_string(access); }
  static std::string loop_var(const tune::LoopSpec& l) {
    return "i" + std::to_string(l.dim) + "_" + std::to_string(l.level);
  }
  // The point index of dimension d (its innermost loop variable).
  std::string point(int d) const { return "i" + std::to_string(d) + "_" + std::to_string(s_.levels(d) - 1); }

  void alloc(std::vector<StmtP>& out, DType t, const std::string& name, ExP count) {
    auto s = std::make_shared<Stmt>();
    s->k = Stmt::K::Alloc;
    s->dtype = t;
    s->name = name;
    s->count = std::move(count);
    out.push_back(s);
  }
  void free_(std::vector<StmtP>& out, const std::string& name) {
    auto s = std::make_shared<Stmt>();
    s->k = Stmt::K::Free;
    s->name = name;
    out.push_back(s);
  }

  ExP dense_size(const std::vector<int>& dims) const {
    ExP n = lit(1);
    for (int d : dims) n = mul(n, var("n" + std::to_string(d)));
    return n;
  }
  // Dense C-order index over `dims` using index variables `names`.
  ExP dense_index(const std::vector<int>& dims, const std::vector<ExP>& idx) const {
    ExP e = lit(0);
    for (size_t k = 0; k < dims.size(); ++k) e = add(mul(e, var("n" + std::to_string(dims[k]))), idx[k]);
    return e;
  }
  ExP access_index(int a, const std::vector<ExP>& idx) const {
    const mdh::Access& acc = h_.accesses[a];
    ExP e = lit(0);
    for (int d = 0; d < h_.ndim; ++d) {
      if (acc.kind[d] == mdh::StrideKind::Zero) continue;
      ExP term = idx[d];
      if (acc.kind[d] == mdh::StrideKind::Param) term = mul(term, int_param(acc.stride[d]));
      e = add(e, term);
    }
    return e;
  }
  // A constant of f, read from its parameter slot in its own type.
  ExP const_value(int k) const {
    DType ct = h_.const_type[k];
    return is_float(ct) ? float_param(h_.const_slot[k], ct) : int_param(h_.const_slot[k], ct);
  }
  std::vector<ExP> point_vars() const {
    std::vector<ExP> v;
    for (int d = 0; d < h_.ndim; ++d) v.push_back(var(point(d)));
    return v;
  }
  ExP identity_or_init(const mdh::Output& o) const {
    if (o.init_const >= 0) return cast(const_value(o.init_const), o.acc_dtype);
    return scalar_lit(reduce_identity(o.op, o.acc_dtype), o.acc_dtype);
  }

  void plan_reductions() {
    const int nloops = static_cast<int>(s_.order.size());
    for (int oi = 0; oi < static_cast<int>(h_.outputs.size()); ++oi) {
      const mdh::Output& o = h_.outputs[oi];
      if (!o.reduces) continue;
      RedPlan r;
      r.out = oi;
      r.acc = "acc" + std::to_string(oi);
      r.idx = "aidx" + std::to_string(oi);
      r.racc = "racc" + std::to_string(oi);
      r.ridx = "ridx" + std::to_string(oi);
      for (int d = 0; d < h_.ndim; ++d)
        if (!h_.pointwise(o, d)) r.cdims.push_back(d);
      int last_c = -1, first_p = nloops;
      for (int i = 0; i < nloops; ++i) {
        bool pw = h_.pointwise(o, s_.order[i].dim);
        if (pw) first_p = std::min(first_p, i);
        else last_c = i;
      }
      r.partials = s_.parallel && nloops > 0 && h_.pointwise(o, s_.order[0].dim);
      r.reg = last_c < first_p && (!r.partials || r.cdims.empty());
      r.reg_pos = last_c;
      // Loops after the innermost concatenated one only combine: keep that
      // partial in a register and fold it into memory when they end.
      r.sub_reg = !r.reg && last_c < nloops - 1;
      r.scratch = !r.reg && (o.acc_dtype != h_.accesses[o.access].dtype || is_arg(o.op));
      plans_.push_back(r);
    }
  }

  // Memory accumulation directly into the output buffer: write the identity.
  void init_output(std::vector<StmtP>& out, const mdh::Output& o) {
    const RedPlan* rp = nullptr;
    for (const RedPlan& r : plans_)
      if (h_.outputs[r.out].access == o.access) rp = &r;
    std::vector<ExP> idx(h_.ndim, lit(0));
    StmtP inner = block();
    StmtP outer = inner;
    std::vector<StmtP>* cur = &outer->body;
    for (int d : rp->cdims) {
      std::string v = "z" + std::to_string(d);
      StmtP f = for_loop(v, lit(0), var("n" + std::to_string(d)), lit(1));
      idx[d] = var(v);
      cur->push_back(f);
      cur = &f->body;
    }
    cur->push_back(assign(load(ptr(o.access), access_index(o.access, idx), h_.accesses[o.access].dtype),
                          cast(identity_or_init(o), h_.accesses[o.access].dtype)));
    out.push_back(outer);
  }

  void init_dense(std::vector<StmtP>& out, const mdh::Output& o, const RedPlan& r, ExP count) {
    StmtP f = for_loop("z", lit(0), count, lit(1));
    f->body.push_back(assign(load(r.acc, var("z"), o.acc_dtype), identity_or_init(o)));
    if (is_arg(o.op)) f->body.push_back(assign(load(r.idx, var("z"), DType::Int64), lit(INT64_MAX)));
    out.push_back(f);
  }

  // Loop bounds of order[i]: its parent is the enclosing level of the same dim.
  void emit_loops(std::vector<StmtP>& out, int i) {
    const int nloops = static_cast<int>(s_.order.size());
    // Register accumulators declared at this depth (body of loop i-1).
    for (RedPlan& r : plans_)
      if ((r.reg || r.sub_reg) && r.reg_pos == i - 1) {
        const mdh::Output& o = h_.outputs[r.out];
        // A sub-register starts from the identity; `initial=` enters once, in memory.
        out.push_back(decl(o.acc_dtype, r.racc, r.reg ? identity_or_init(o) : identity(o)));
        if (is_arg(o.op)) out.push_back(decl(DType::Int64, r.ridx, lit(INT64_MAX)));
      }
    if (i == nloops) {
      emit_point(out);
    } else {
      const tune::LoopSpec& l = s_.order[i];
      const int d = l.dim;
      const std::vector<int64_t>& tiles = s_.tiles[d];
      ExP n = var("n" + std::to_string(d));
      ExP lo = l.level == 0 ? lit(0) : var("i" + std::to_string(d) + "_" + std::to_string(l.level - 1));
      ExP hi = l.level == 0 ? n : min(add(lo, lit(tiles[l.level - 1])), n);
      ExP step = l.level < static_cast<int>(tiles.size()) ? lit(tiles[l.level]) : lit(1);
      const std::string v = loop_var(l);
      if (i == 0 && s_.parallel) {
        // This thread's share of the iterations [lo, hi) in steps of `step`.
        ExP iters = l.level < static_cast<int>(tiles.size())
                        ? arith('/', add(n, lit(tiles[l.level] - 1)), lit(tiles[l.level]))
                        : n;
        out.push_back(decl(DType::Int64, "nf_it", iters));
        ExP first = arith('/', mul(var("nf_it"), var("nf_tid")), var("nf_nt"));
        ExP last = arith('/', mul(var("nf_it"), add(var("nf_tid"), lit(1))), var("nf_nt"));
        lo = mul(first, step);
        hi = min(mul(last, step), n);
      }
      StmtP f = for_loop(v, lo, hi, step);
      if (i == nloops - 1 && s_.vectorize) {
        f->tag = Stmt::Tag::Simd;
        for (const RedPlan& r : plans_) {
          if (!(r.reg || r.sub_reg) || r.reg_pos >= i) continue;
          const mdh::Output& o = h_.outputs[r.out];
          // OpenMP's max/min clauses start floats at -/+DBL_MAX and ignore
          // NaN, and arg-reductions carry an index: those loops stay scalar.
          char op = simd_op(o.op, o.acc_dtype);
          if (op) f->simd_reductions.push_back({r.racc, op});
          else f->tag = Stmt::Tag::Serial;
        }
      }
      emit_loops(f->body, i + 1);
      out.push_back(f);
    }
    // Store (or fold) register accumulators whose loops end here.
    for (RedPlan& r : plans_)
      if ((r.reg || r.sub_reg) && r.reg_pos == i - 1) store_register(out, r);
  }

  ExP identity(const mdh::Output& o) const { return scalar_lit(reduce_identity(o.op, o.acc_dtype), o.acc_dtype); }

  // Memory location a reduction output combines into at point `idx`: its
  // dense scratch array (this thread's slice for partials) or its buffer.
  std::pair<ExP, ExP> memory_target(const RedPlan& r, const std::vector<ExP>& idx) const {
    const mdh::Output& o = h_.outputs[r.out];
    if (r.scratch || r.partials) {
      std::vector<ExP> cidx;
      for (int d : r.cdims) cidx.push_back(idx[d]);
      ExP di = dense_index(r.cdims, cidx);
      if (r.partials) di = add(mul(var("nf_tid"), dense_size(r.cdims)), di);
      return {load(r.acc, di, o.acc_dtype), load(r.idx, di, DType::Int64)};
    }
    return {load(ptr(o.access), access_index(o.access, idx), h_.accesses[o.access].dtype), nullptr};
  }

  // (target, itarget) <- (target, itarget) ⊕ (v, vi).
  void update(std::vector<StmtP>& out, const mdh::Output& o, int tag, ExP target, ExP itarget, ExP v, ExP vi) {
    if (is_arg(o.op)) {
      const std::string flag_name = "better" + std::to_string(tag);
      out.push_back(decl(DType::Bool, flag_name, arg_better(o.op, o.acc_dtype, target, itarget, v, vi)));
      ExP flag = var(flag_name, DType::Bool);
      ExprNode seli{ExprNode::Kind::Select, DType::Int64, 0, 0, 1, 2};
      ExprNode selv{ExprNode::Kind::Select, o.acc_dtype, 0, 0, 1, 2};
      out.push_back(assign(itarget, scalar(seli, {flag, vi, itarget})));
      out.push_back(assign(target, scalar(selv, {flag, v, target})));
      return;
    }
    out.push_back(assign(target, cast(combine(o.op, o.acc_dtype, cast(target, o.acc_dtype), v), target->dtype)));
  }

  // The innermost body: evaluate f, store map outputs, combine reductions.
  void emit_point(std::vector<StmtP>& out) {
    std::vector<ExP> idx = point_vars();
    std::vector<ExP> val(h_.f.nodes.size());
    std::vector<bool> needed(h_.f.nodes.size(), false);
    for (const mdh::Output& o : h_.outputs) {
      needed[o.value] = true;
      if (o.arg_node >= 0) needed[o.arg_node] = true;
    }
    for (int n = static_cast<int>(h_.f.nodes.size()); n-- > 0;) {
      if (!needed[n]) continue;
      const ExprNode& x = h_.f.nodes[n];
      if (x.kind == ExprNode::Kind::Cast || x.kind == ExprNode::Kind::Unary || x.kind == ExprNode::Kind::Binary ||
          x.kind == ExprNode::Kind::Select) {
        if (x.a >= 0) needed[x.a] = true;
        if (x.b >= 0) needed[x.b] = true;
        if (x.c >= 0) needed[x.c] = true;
      }
    }
    for (size_t n = 0; n < h_.f.nodes.size(); ++n) {
      if (!needed[n]) continue;
      const ExprNode& x = h_.f.nodes[n];
      ExP e;
      switch (x.kind) {
        case ExprNode::Kind::Input:
          e = load(ptr(x.a), access_index(x.a, idx), x.dtype);
          break;
        case ExprNode::Kind::Const:
          e = cast(const_value(x.a), x.dtype);
          break;
        case ExprNode::Kind::Index: {
          const mdh::Affine& f = h_.indices[x.a];
          ExP s = int_param(f.offset);
          for (int d = 0; d < h_.ndim; ++d) s = add(s, mul(idx[d], int_param(f.stride[d])));
          e = s;
          break;
        }
        case ExprNode::Kind::Cast:
          e = cast(val[x.a], x.dtype);
          break;
        default: {
          std::vector<ExP> args;
          for (int a : {x.a, x.b, x.c})
            if (a >= 0) args.push_back(val[a]);
          e = scalar(x, args);
        }
      }
      const std::string name = "v" + std::to_string(n);
      out.push_back(decl(x.dtype, name, e));
      val[n] = var(name, x.dtype);
    }
    for (const mdh::Output& o : h_.outputs) {
      const DType odt = h_.accesses[o.access].dtype;
      if (!o.reduces) {
        out.push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(val[o.value], odt)));
        continue;
      }
      const RedPlan& r = plan_of(o);
      ExP v = cast(val[o.value], o.acc_dtype);
      ExP vi = o.arg_node >= 0 ? val[o.arg_node] : nullptr;
      if (r.reg || r.sub_reg) update(out, o, r.out, var(r.racc, o.acc_dtype), var(r.ridx), v, vi);
      else {
        auto [target, itarget] = memory_target(r, idx);
        update(out, o, r.out, target, itarget, v, vi);
      }
    }
  }

  const RedPlan& plan_of(const mdh::Output& o) const {
    for (const RedPlan& r : plans_)
      if (&h_.outputs[r.out] == &o) return r;
    throw std::logic_error("no reduction plan");
  }

  // After the loops of a register accumulator: store it (or park it in this
  // thread's partial slot); a sub-register is folded into its memory target.
  void store_register(std::vector<StmtP>& out, const RedPlan& r) {
    const mdh::Output& o = h_.outputs[r.out];
    ExP acc = var(r.racc, o.acc_dtype);
    std::vector<ExP> idx = point_vars();
    if (r.sub_reg) {
      auto [target, itarget] = memory_target(r, idx);
      update(out, o, 1000 + r.out, target, itarget, acc, is_arg(o.op) ? var(r.ridx) : nullptr);
      return;
    }
    if (r.partials) {
      out.push_back(assign(load(r.acc + "_part", var("nf_tid"), o.acc_dtype), acc));
      if (is_arg(o.op)) out.push_back(assign(load(r.idx + "_part", var("nf_tid"), DType::Int64), var(r.ridx)));
      return;
    }
    const DType odt = h_.accesses[o.access].dtype;
    ExP v = is_arg(o.op) ? var(r.ridx) : acc;
    out.push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(v, odt)));
  }

  // Combine thread partials (in thread order) and write scratch results.
  void finish(std::vector<StmtP>& out, const RedPlan& r) {
    const mdh::Output& o = h_.outputs[r.out];
    const DType odt = h_.accesses[o.access].dtype;
    const bool arg = is_arg(o.op);
    if (r.reg && !r.partials) return;
    if (!r.reg && !r.scratch && !r.partials) return;  // combined in place
    StmtP nest = block();
    std::vector<StmtP>* cur = &nest->body;
    std::vector<ExP> idx(h_.ndim, lit(0));
    std::vector<ExP> cidx;
    for (int d : r.cdims) {
      std::string v = "z" + std::to_string(d);
      StmtP f = for_loop(v, lit(0), var("n" + std::to_string(d)), lit(1));
      idx[d] = var(v);
      cidx.push_back(var(v));
      cur->push_back(f);
      cur = &f->body;
    }
    ExP di = dense_index(r.cdims, cidx);
    const std::string acc_arr = r.reg ? r.acc + "_part" : r.acc;
    const std::string idx_arr = r.reg ? r.idx + "_part" : r.idx;
    ExP stride = r.reg ? lit(1) : dense_size(r.cdims);
    cur->push_back(decl(o.acc_dtype, "fin", load(acc_arr, di, o.acc_dtype)));
    if (arg) cur->push_back(decl(DType::Int64, "fidx", load(idx_arr, di, DType::Int64)));
    if (r.partials) {
      StmtP t = for_loop("t", lit(1), var(s_.parallel ? "nf_used" : "nf_nt"), lit(1));
      ExP at = add(mul(var("t"), stride), di);
      ExP v = load(acc_arr, at, o.acc_dtype);
      if (arg) {
        t->body.push_back(decl(DType::Bool, "better", arg_better(o.op, o.acc_dtype, var("fin", o.acc_dtype), var("fidx"), v, load(idx_arr, at, DType::Int64))));
        ExprNode seli{ExprNode::Kind::Select, DType::Int64, 0, 0, 1, 2};
        ExprNode selv{ExprNode::Kind::Select, o.acc_dtype, 0, 0, 1, 2};
        t->body.push_back(assign(var("fidx"), scalar(seli, {var("better", DType::Bool), load(idx_arr, at, DType::Int64), var("fidx")})));
        t->body.push_back(assign(var("fin", o.acc_dtype), scalar(selv, {var("better", DType::Bool), v, var("fin", o.acc_dtype)})));
      } else {
        t->body.push_back(assign(var("fin", o.acc_dtype), combine(o.op, o.acc_dtype, var("fin", o.acc_dtype), v)));
      }
      cur->push_back(t);
    }
    ExP result = arg ? var("fidx") : var("fin", o.acc_dtype);
    cur->push_back(assign(load(ptr(o.access), access_index(o.access, idx), odt), cast(result, odt)));
    out.push_back(nest);
  }
};

}  // namespace

LoopNest lower(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name) {
  if (!s.legal(h)) throw std::logic_error("illegal schedule " + s.key());
  return Lowerer(h, s).run(name);
}

}  // namespace nf::lower

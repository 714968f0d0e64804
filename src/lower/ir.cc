// Constructors of the loop IR (expressions and statements).
#include <algorithm>
#include <functional>

#include "lower/lowerer.h"

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

ExP add(ExP a, ExP b) {
  if (a->k == Ex::K::IntLit && a->ival == 0) return b;
  if (b->k == Ex::K::IntLit && b->ival == 0) return a;
  if (a->k == Ex::K::IntLit && b->k == Ex::K::IntLit) return lit(a->ival + b->ival);
  return detail::arith('+', std::move(a), std::move(b));
}

ExP sub(ExP a, ExP b) {
  if (b->k == Ex::K::IntLit && b->ival == 0) return a;
  return detail::arith('-', std::move(a), std::move(b));
}

ExP mul(ExP a, ExP b) {
  if (a->k == Ex::K::IntLit && a->ival == 1) return b;
  if (b->k == Ex::K::IntLit && b->ival == 1) return a;
  if ((a->k == Ex::K::IntLit && a->ival == 0) || (b->k == Ex::K::IntLit && b->ival == 0)) return lit(0);
  if (a->k == Ex::K::IntLit && b->k == Ex::K::IntLit) return lit(a->ival * b->ival);
  return detail::arith('*', std::move(a), std::move(b));
}

ExP min(ExP a, ExP b) { return detail::arith('m', std::move(a), std::move(b)); }

namespace {
ExP thread_ex(Ex::K k) {
  auto e = std::make_shared<Ex>();
  e->k = k;
  return e;
}
}  // namespace

ExP thread_index() { return thread_ex(Ex::K::ThreadIndex); }
ExP thread_count() { return thread_ex(Ex::K::ThreadCount); }
ExP max_threads() { return thread_ex(Ex::K::MaxThreads); }

namespace detail {

ExP arith(char op, ExP a, ExP b) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Arith;
  e->op = op;
  e->args = {std::move(a), std::move(b)};
  return e;
}

namespace {
ExP param(Ex::K k, int slot, DType t) {
  auto e = std::make_shared<Ex>();
  e->k = k;
  e->slot = slot;
  e->dtype = t;
  return e;
}
}  // namespace

ExP int_param(int slot, DType t) { return param(Ex::K::IntParam, slot, t); }

ExP address(const std::string& ptr, ExP bytes) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Address;
  e->name = ptr;
  e->args = {std::move(bytes)};
  return e;
}

ExP float_param(int slot, DType t) { return param(Ex::K::FloatParam, slot, t); }

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

ExP arg_better(ReduceOp op, DType t, ExP acc, ExP ai, ExP v, ExP vi, bool later) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::Combine;
  e->ival = later ? 1 : 0;
  e->rop = op;
  e->dtype = t;
  e->args = {std::move(acc), std::move(ai), std::move(v), std::move(vi)};
  return e;
}

ExP scalar_lit(const Scalar& s, DType t) {
  Scalar c = s.cast(t);
  auto e = std::make_shared<Ex>();
  if (is_inexact(t)) {
    e->k = Ex::K::FloatLit;
    e->fval = c.f;
    e->fimag = c.im;
  } else {
    e->k = Ex::K::IntLit;
    e->ival = c.i;
  }
  e->dtype = t;
  return e;
}

ExP select(ExP cond, ExP a, ExP b, DType t) {
  ExprNode sel{ExprNode::Kind::Select, t, 0, 0, 1, 2};
  return scalar(sel, {std::move(cond), std::move(a), std::move(b)});
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

StmtP local_array(DType t, const std::string& name, int64_t len) { return alloc(t, name, lit(len), Scope::Local); }

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

StmtP if_else(ExP cond) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::If;
  s->cond = std::move(cond);
  return s;
}

StmtP copy(const StmtP& s) {
  return copy_stmt(s, [](const ExP& e) { return e; });
}

std::vector<StmtP> unwrapped_body(const Stmt& loop) {
  std::vector<StmtP> body = loop.body;
  while (body.size() == 1 && body[0]->k == Stmt::K::Block) body = body[0]->body;
  return body;
}

std::set<std::string> top_names(const std::vector<StmtP>& body) {
  std::set<std::string> top;
  for (const StmtP& s : body)
    if (s->k == Stmt::K::Decl || s->k == Stmt::K::Alloc) top.insert(s->name);
  return top;
}

bool top_only(const ExP& e, const std::set<std::string>& top) {
  if (!e) return true;
  if (e->k == Ex::K::Var && !top.count(e->name)) return false;
  if (e->k == Ex::K::Load || e->k == Ex::K::ThreadIndex || e->k == Ex::K::ThreadCount) return false;
  for (const ExP& a : e->args)
    if (!top_only(a, top)) return false;
  return true;
}

std::set<std::string> index_registers(const std::vector<StmtP>& body) {
  std::set<std::string> out;
  for (const StmtP& s : body)
    if (s->k == Stmt::K::Decl && s->accumulates && !s->accumulates->index.empty()) out.insert(s->accumulates->index);
  return out;
}

StmtP copy_stmt(const StmtP& s, const std::function<ExP(const ExP&)>& f, const std::function<void(Stmt&)>& g) {
  auto c = std::make_shared<Stmt>(*s);
  for (ExP* e : {&c->lo, &c->hi, &c->step, &c->init, &c->target, &c->value, &c->count, &c->cond})
    if (*e) *e = f(*e);
  for (ExP& a : c->args) a = f(a);
  if (g) g(*c);
  for (StmtP& b : c->body) b = copy_stmt(b, f, g);
  for (StmtP& b : c->else_body) b = copy_stmt(b, f, g);
  return c;
}

ExP rewrite_ex(const ExP& e, const std::function<ExP(const ExP&)>& rule) {
  if (!e) return e;
  std::vector<ExP> args;
  bool changed = false;
  for (const ExP& a : e->args) {
    args.push_back(rewrite_ex(a, rule));
    changed |= args.back() != a;
  }
  ExP n = e;
  if (changed) {
    auto c = std::make_shared<Ex>(*e);
    c->args = std::move(args);
    n = std::move(c);
  }
  ExP r = rule(n);
  return r ? r : n;
}

StmtP full_split(ExP cond) {
  StmtP s = if_else(std::move(cond));
  s->k = Stmt::K::FullSplit;
  return s;
}

ExP tile_bound(ExP full, ExP clipped) {
  auto e = std::make_shared<Ex>();
  e->k = Ex::K::TileBound;
  e->args = {std::move(full), std::move(clipped)};
  return e;
}

StmtP alloc(DType t, const std::string& name, ExP count, Scope scope) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::Alloc;
  s->scope = scope;
  s->dtype = t;
  s->name = name;
  s->count = std::move(count);
  return s;
}

StmtP cores_loop(ExP cond) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::For;
  s->loop = LoopKind::Cores;
  s->lo = lit(0);
  s->hi = thread_count();
  s->step = lit(1);
  s->cond = std::move(cond);
  return s;
}

StmtP barrier() {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::Barrier;
  return s;
}

StmtP free_stmt(const std::string& name) {
  auto s = std::make_shared<Stmt>();
  s->k = Stmt::K::Free;
  s->name = name;
  return s;
}

bool is_arg(ReduceOp op) { return op == ReduceOp::ArgMax || op == ReduceOp::ArgMin; }

char simd_op(ReduceOp op, DType t) {
  if (is_complex(t)) return 0;  // (no OpenMP reduction clauses on complex values: combined in loop order)
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

void combine_into(std::vector<StmtP>& out, ReduceOp op, DType t, const std::string& flag, ExP target, ExP itarget,
                  ExP v, ExP vi) {
  if (is_arg(op)) {
    out.push_back(decl(DType::Bool, flag, arg_better(op, t, target, itarget, v, vi)));
    ExP better = var(flag, DType::Bool);
    out.push_back(assign(itarget, select(better, vi, itarget, DType::Int64)));
    out.push_back(assign(target, select(better, v, target, t)));
    return;
  }
  out.push_back(assign(target, cast(combine(op, t, cast(target, t), v), target->dtype)));
}

bool same_ex(const ExP& a, const ExP& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  const ExprNode &m = a->node, &n = b->node;
  if (a->k != b->k || a->dtype != b->dtype || a->name != b->name || a->ival != b->ival || a->fval != b->fval ||
      a->fimag != b->fimag || a->slot != b->slot || a->op != b->op || a->rop != b->rop ||
      a->args.size() != b->args.size())
    return false;
  if (a->k == Ex::K::Scalar &&
      (m.kind != n.kind || m.dtype != n.dtype || m.op != n.op || m.a != n.a || m.b != n.b || m.c != n.c))
    return false;
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!same_ex(a->args[i], b->args[i])) return false;
  return true;
}

bool mentions(const ExP& e, const std::set<std::string>& names) {
  if (!e) return false;
  if (e->k == Ex::K::Var && names.count(e->name)) return true;
  return std::any_of(e->args.begin(), e->args.end(), [&](const ExP& a) { return mentions(a, names); });
}

}  // namespace detail
}  // namespace nf::lower

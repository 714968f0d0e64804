// The simplify pass (passes.h): integer index arithmetic folded, statements
// that cannot run removed, blocks that declare nothing spliced.
#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower::passes {

namespace {

bool is_lit(const ExP& e, int64_t v) { return e->k == Ex::K::IntLit && e->ival == v; }
bool same_var(const ExP& a, const ExP& b) {
  return a == b || (a->k == Ex::K::Var && b->k == Ex::K::Var && a->name == b->name);
}

ExP fold(const ExP& e) {
  if (!e || e->args.empty()) return e;
  std::vector<ExP> args;
  bool changed = false;
  for (const ExP& a : e->args) {
    args.push_back(fold(a));
    changed |= args.back() != a;
  }
  if (e->k == Ex::K::Arith) {
    const ExP &a = args[0], &b = args[1];
    const bool la = a->k == Ex::K::IntLit, lb = b->k == Ex::K::IntLit;
    if (la && lb) {
      const int64_t x = a->ival, y = b->ival;
      switch (e->op) {
        case '+': return lit(x + y);
        case '-': return lit(x - y);
        case '*': return lit(x * y);
        case '/':
          if (y != 0) return lit(x / y);  // C's truncation, as the renderer's
          break;
        case 'm': return lit(x < y ? x : y);
        case '<': return lit(x < y ? 1 : 0);
        case '&': return lit(x != 0 && y != 0 ? 1 : 0);
        default: break;
      }
    }
    switch (e->op) {
      case '+':
        if (is_lit(a, 0)) return b;
        if (is_lit(b, 0)) return a;
        break;
      case '-':
        if (is_lit(b, 0)) return a;
        if (same_var(a, b)) return lit(0);
        break;
      case '*':
        if (is_lit(a, 1)) return b;
        if (is_lit(b, 1)) return a;
        if (is_lit(a, 0) || is_lit(b, 0)) return lit(0);
        break;
      case '/':
        if (is_lit(b, 1)) return a;
        break;
      case 'm':
        if (same_var(a, b)) return a;
        break;
      case '&':
        if (is_lit(a, 0) || is_lit(b, 0)) return lit(0);
        break;
      default: break;
    }
  }
  if (!changed) return e;
  auto c = std::make_shared<Ex>(*e);
  c->args = std::move(args);
  return c;
}

bool declares(const Stmt& b) {
  for (const StmtP& s : b.body)
    if (s->k == Stmt::K::Decl || s->k == Stmt::K::Alloc) return true;
  return false;
}

void simplify_list(std::vector<StmtP>& list) {
  std::vector<StmtP> out;
  for (StmtP& s : list) {
    for (ExP* e : {&s->lo, &s->hi, &s->step, &s->init, &s->target, &s->value, &s->count, &s->cond}) *e = fold(*e);
    simplify_list(s->body);
    simplify_list(s->else_body);
    switch (s->k) {
      case Stmt::K::If:
        if (s->cond->k == Ex::K::IntLit) {
          StmtP b = detail::block();
          b->body = s->cond->ival ? std::move(s->body) : std::move(s->else_body);
          if (!declares(*b)) {
            for (StmtP& c : b->body) out.push_back(std::move(c));
          } else {
            out.push_back(b);
          }
          continue;
        }
        break;
      case Stmt::K::For:
        if (s->loop != LoopKind::Cores && s->lo->k == Ex::K::IntLit && s->hi->k == Ex::K::IntLit &&
            s->step->k == Ex::K::IntLit && s->step->ival > 0 && s->lo->ival >= s->hi->ival)
          continue;  // no iteration
        break;
      case Stmt::K::Block:
        if (!declares(*s)) {
          for (StmtP& c : s->body) out.push_back(std::move(c));
          continue;
        }
        break;
      default: break;
    }
    out.push_back(s);
  }
  list = std::move(out);
}

}  // namespace

void simplify(LoopNest& n, const PassContext&) { simplify_list(n.body); }

}  // namespace nf::lower::passes

// The gpu_split pass (passes.h): on a target with a grid, a reduction down
// columns is cut into chunks of rows, so that few columns still fill the
// device.
//
// The grid's schedule gives each point of the dimensions no output combines
// a thread (tune::grid_schedule): `x.sum(axis=0)` is a thread per column
// adding the rows in order, neighbouring threads reading neighbouring
// elements. With few columns (a tall array's column means: 10 columns of
// a million rows) that is ten threads of a device that runs hundreds of
// thousands. Here such an iteration's reduction loop is cut into R chunks:
//
//   Parallel i in [0, N):          R = max(1, min(MaxThreads, 32 MaxThreads / N, E / 8))
//     u = ...                      alloc acc_part[R N]
//     acc = start (accumulates)    Parallel s in [0, N R):
//     for k in [lo, hi): ...         i = s % N; c = s / N
//     out[i] = g(acc)                u = ...; acc = identity
//                                    for k in chunk c of [lo, hi): ...
//                                    acc_part[c N + i] = acc
//                                  Parallel i in [0, N):
//                                    u = ...; acc = start
//                                    for c in [0, R): acc = acc (+) acc_part[c N + i]
//                                    out[i] = g(acc)
//
// (A column's reduction reaches this form once gpu_points has made the
// grid's one-point loop its point and promote has kept the column's element
// in a register over the rows.)
// (E: the loop's trip count where the parameters give it; a chunk keeps at
// least 8 rows). Neighbouring threads of the first loop still read
// neighbouring columns; each point is combined once, into its chunk's
// partial, and the chunks in order: exact for integers, max/min and
// arg-reductions (the full arg test), a float sum reassociated within
// NumPy's error bound. Only an iteration of exactly this form -- uniform
// declarations, registers one loop combines into (none ordered), the loop
// in steps of 1 not reading memory along itself (a row is gpu_blocks'),
// then statements that no later part needs -- is split.
#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

constexpr const char* kSplitShare = "nf_sc";
constexpr const char* kChunk = "nf_c";
constexpr const char* kChunks = "nf_r";

struct Form {
  std::vector<StmtP> prologue;       // uniform declarations
  std::vector<const Stmt*> regs;     // the accumulator registers
  std::vector<StmtP> index_decls;    // their arg index registers' declarations
  StmtP loop;                        // the reduction loop
  std::vector<StmtP> epilogue;
};

bool match(const Stmt& par, Form& f) {
  const std::vector<StmtP> body = unwrapped_body(par);
  const std::set<std::string> index_regs = index_registers(body);
  Registers regs;
  std::vector<StmtP> acc_decls;
  for (const StmtP& s : body) {
    if (f.loop) {
      f.epilogue.push_back(s);
      continue;
    }
    if (s->k == Stmt::K::Comment) continue;
    if (s->k == Stmt::K::Decl && s->accumulates) {
      if (s->accumulates->ordered) return false;
      regs[s->name] = s.get();
      acc_decls.push_back(s);
      continue;
    }
    if (s->k == Stmt::K::Decl && index_regs.count(s->name)) {
      f.index_decls.push_back(s);
      continue;
    }
    if (s->k == Stmt::K::Decl) {
      if (!acc_decls.empty()) return false;  // (a declaration between the registers and their loop)
      f.prologue.push_back(s);
      continue;
    }
    if (s->k != Stmt::K::For || regs.empty()) return false;
    if (s->step->k != Ex::K::IntLit || s->step->ival != 1) return false;
    const Carried c = carried(*s, regs);
    if (c.other || c.regs.size() != regs.size()) return false;
    f.loop = s;
  }
  if (!f.loop || reads_along(*f.loop)) return false;
  for (const StmtP& d : acc_decls) f.regs.push_back(d.get());
  return f.index_decls.size() == index_regs.size();
}

// The one-point loops of a grid iteration (gpu_points): the grid keeps a
// free dimension's point loop innermost as a loop of one point (tiles of
// one, tune::grid_schedule), `for v in [a, min(a + 1, X))`, where a is the
// iteration's point (declared from the Parallel loop's variable, which
// runs below X). Its one point is a: the loop becomes its body with v
// replaced by a.
class Points {
 public:
  Points(const std::vector<StmtP>& top, const Stmt& par) : top_(top), par_(par) {}

  void run(std::vector<StmtP>& list) {
    for (StmtP& s : list) {
      if (s->k == Stmt::K::Decl && s->init && s->init->k == Ex::K::Var && s->init->name == par_.name)
        points_.insert(s->name);
      if (s->k == Stmt::K::For && one_point(*s)) {
        const std::string v = s->name;
        const ExP a = s->lo;
        StmtP b = block();
        for (const StmtP& c : s->body)
          b->body.push_back(copy_stmt(c, [&](const ExP& e) {
            return rewrite_ex(e, [&](const ExP& x) -> ExP { return x->k == Ex::K::Var && x->name == v ? a : nullptr; });
          }));
        s = b;
        ++done_;
      }
      run(s->body);
      run(s->else_body);
    }
  }
  int done() const { return done_; }

 private:
  const std::vector<StmtP>& top_;
  const Stmt& par_;
  std::set<std::string> points_;
  int done_ = 0;

  // The bound the Parallel loop's variable stays below, and X, the same?
  bool below(const ExP& x) const {
    if (same_ex(x, par_.hi)) return true;
    if (par_.hi->k != Ex::K::Var) return false;
    for (const StmtP& t : top_)
      if (t->k == Stmt::K::Decl && t->name == par_.hi->name && t->init) return same_ex(t->init, x);
    return false;
  }
  bool one_point(const Stmt& f) const {
    if (f.loop != LoopKind::Serial || f.step->k != Ex::K::IntLit || f.step->ival != 1) return false;
    if (f.lo->k != Ex::K::Var || !points_.count(f.lo->name)) return false;
    const ExP& h = f.hi;
    if (h->k != Ex::K::Arith || h->op != 'm') return false;
    const ExP& a1 = h->args[0];
    const bool next = a1->k == Ex::K::Arith && a1->op == '+' && same_ex(a1->args[0], f.lo) &&
                      a1->args[1]->k == Ex::K::IntLit && a1->args[1]->ival == 1;
    return next && below(h->args[1]);
  }
};

}  // namespace

// A top-level loop from 0 in steps of 1 whose body only stores values that
// read no memory, each at an index that moves with it (an output set to
// its start value): independent iterations.
bool fills(const Stmt& f) {
  if (f.k != Stmt::K::For || f.loop != LoopKind::Serial || f.body.empty()) return false;
  if (f.lo->k != Ex::K::IntLit || f.lo->ival != 0 || f.step->k != Ex::K::IntLit || f.step->ival != 1) return false;
  if (f.hi->k == Ex::K::IntLit) return false;  // (a few elements: not worth a launch)
  std::function<bool(const ExP&)> reads = [&](const ExP& e) {
    if (!e) return false;
    if (e->k == Ex::K::Load || e->k == Ex::K::ThreadIndex || e->k == Ex::K::ThreadCount) return true;
    for (const ExP& a : e->args)
      if (reads(a)) return true;
    return false;
  };
  // (Loops inside it: an output's rows set in a loop over its columns.)
  std::function<bool(const std::vector<StmtP>&)> stores = [&](const std::vector<StmtP>& list) {
    for (const StmtP& s : list) {
      if (s->k == Stmt::K::For && (s->loop == LoopKind::Serial || s->loop == LoopKind::Vectorized)) {
        if (s->body.empty() || reads(s->lo) || reads(s->hi) || reads(s->step) || !stores(s->body)) return false;
        continue;
      }
      if (s->k != Stmt::K::Assign || s->target->k != Ex::K::Load || !mentions(s->target->args[0], {f.name}) ||
          reads(s->value) || reads(s->target->args[0]))
        return false;
    }
    return true;
  };
  return stores(f.body);
}

void passes::gpu_points(LoopNest& n, const PassContext& c) {
  if (c.caps.threads != Caps::Threads::Grid) return;
  // Fill loops in a Block of their own (build's scope around them) come to
  // the top level, where a Parallel loop may be.
  std::vector<StmtP> flat;
  for (const StmtP& s : n.body) {
    const bool all = s->k == Stmt::K::Block && !s->body.empty() &&
                     std::all_of(s->body.begin(), s->body.end(), [](const StmtP& c) { return fills(*c); });
    if (all) flat.insert(flat.end(), s->body.begin(), s->body.end());
    else flat.push_back(s);
  }
  n.body = std::move(flat);
  for (StmtP& s : n.body)
    if (fills(*s)) {
      // (one thread would store them one after another)
      StmtP p = std::make_shared<Stmt>(*s);
      p->loop = LoopKind::Parallel;
      s = p;
    }
  for (StmtP& s : n.body) {
    if (s->k != Stmt::K::For || s->loop != LoopKind::Parallel || !s->share_reductions.empty()) continue;
    Points p(n.body, *s);
    std::vector<StmtP> body = s->body;
    p.run(body);
    if (p.done() == 0) continue;
    StmtP b = std::make_shared<Stmt>(*s);
    b->body = std::move(body);
    s = b;
  }
}

void passes::gpu_split(LoopNest& n, const PassContext& c) {
  if (c.caps.threads != Caps::Threads::Grid) return;
  const std::set<std::string> top = top_names(n.body);
  int splits = 0;
  for (size_t i = 0; i < n.body.size(); ++i) {
    const StmtP par = n.body[i];
    if (par->k != Stmt::K::For || par->loop != LoopKind::Parallel || !par->share_reductions.empty()) continue;
    Form f;
    if (!match(*par, f)) continue;
    const ExP N = par->hi;
    const Stmt& L = *f.loop;
    const ExP E = sub(L.hi, L.lo);
    {
      if (!top_only(N, top)) continue;  // (N from the top level's names alone)
      const std::string suffix = splits ? std::to_string(splits) : "";
      const std::string R = kChunks + suffix;
      // R chunks: at most MaxThreads, at most 32 MaxThreads partials in all,
      // at least 8 rows a chunk (where the parameters say how many rows).
      ExP r = min(max_threads(), arith('/', mul(lit(32), max_threads()), arith('M', N, lit(1))));
      if (top_only(E, top)) r = min(r, arith('/', E, lit(8)));
      std::vector<StmtP> before;
      before.push_back(decl(DType::Int64, R, arith('M', r, lit(1))));
      const ExP chunks = var(R);
      // The partials.
      auto part_of = [&](const std::string& reg) { return reg + "_part" + suffix; };
      for (const Stmt* g : f.regs) {
        before.push_back(alloc(g->dtype, part_of(g->name), mul(chunks, N), Scope::Kernel));
        if (!g->accumulates->index.empty())
          before.push_back(alloc(DType::Int64, part_of(g->accumulates->index), mul(chunks, N), Scope::Kernel));
      }
      const ExP me = var(par->name), chunk = var(kChunk);
      const ExP at = add(mul(chunk, N), me);
      // The chunks' loop.
      StmtP split = for_loop(kSplitShare + suffix, lit(0), mul(N, chunks), lit(1));
      split->loop = LoopKind::Parallel;
      split->cond = par->cond;
      const ExP s = var(split->name);
      split->body.push_back(decl(DType::Int64, par->name, arith('%', s, N)));
      split->body.push_back(decl(DType::Int64, kChunk, arith('/', s, N)));
      for (const StmtP& p : f.prologue) split->body.push_back(copy(p));
      for (const Stmt* g : f.regs) {
        StmtP d = std::make_shared<Stmt>(*g);
        d->init = scalar_lit(reduce_identity(g->accumulates->op, g->dtype), g->dtype);
        split->body.push_back(d);
      }
      for (const StmtP& d : f.index_decls) split->body.push_back(decl(DType::Int64, d->name, lit(INT64_MAX)));
      StmtP part = copy(f.loop);
      part->lo = add(L.lo, arith('/', mul(E, chunk), chunks));
      part->hi = add(L.lo, arith('/', mul(E, add(chunk, lit(1))), chunks));
      split->body.push_back(part);
      for (const Stmt* g : f.regs) {
        split->body.push_back(assign(load(part_of(g->name), at, g->dtype), var(g->name, g->dtype)));
        const std::string& ix = g->accumulates->index;
        if (!ix.empty()) split->body.push_back(assign(load(part_of(ix), at, DType::Int64), var(ix)));
      }
      // The fold: each point's chunks in order, from its start value.
      StmtP fold = std::make_shared<Stmt>(*par);
      fold->body.clear();
      for (const StmtP& p : f.prologue) fold->body.push_back(copy(p));
      for (const Stmt* g : f.regs) fold->body.push_back(std::make_shared<Stmt>(*g));
      for (const StmtP& d : f.index_decls) fold->body.push_back(copy(d));
      StmtP over = for_loop(kChunk, lit(0), chunks, lit(1));
      for (const Stmt* g : f.regs) {
        const std::string& ix = g->accumulates->index;
        combine_into(over->body, g->accumulates->op, g->dtype, "nf_better_" + g->name, var(g->name, g->dtype),
                     ix.empty() ? nullptr : var(ix), load(part_of(g->name), at, g->dtype),
                     ix.empty() ? nullptr : load(part_of(ix), at, DType::Int64));
      }
      fold->body.push_back(over);
      for (const StmtP& e : f.epilogue) fold->body.push_back(e);
      before.push_back(split);
      n.body[i] = fold;
      n.body.insert(n.body.begin() + static_cast<std::ptrdiff_t>(i), before.begin(), before.end());
      i += before.size();
      ++splits;
    }
  }
}

}  // namespace nf::lower

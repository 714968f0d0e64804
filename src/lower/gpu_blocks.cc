// The gpu_blocks pass (passes.h): on a target with a grid, a Parallel
// loop's iteration that reduces along a loop runs on a whole block.
//
// build (and partials, promote) leave one iteration of a Parallel loop --
// an output row of a row reduction, a share of a full reduction, an
// element of the shares' fold -- as a serial program: uniform values
// (indices, extents), registers a loop combines into, the loop, and what
// is done with the result. One GPU thread running that loop reads memory
// with a stride of a row between neighbouring threads (no coalescing) and
// leaves most of the device idle when there are few rows. Here the
// iteration becomes a block's (T threads, Caps::block_threads):
//
//   Parallel r:                      GpuBlocks r of T threads:
//     u = ...                          u = ...                  (every thread)
//     acc = id  (accumulates)          shared acc_sh[T]
//     for k in [lo, hi) step s:        GpuThreads t in [0, T):
//       acc = acc (+) f(k)               acc = id
//     out[r] = g(acc)                    for k in [lo + t s, hi) step T s: acc = acc (+) f(k)
//                                        acc_sh[t] = acc
//                                      Barrier
//                                      GpuThreads t in [0, T/2): acc_sh[t] (+)= acc_sh[t + T/2]
//                                      Barrier ... (log2 T levels)
//                                      acc = start (+) acc_sh[0]          (every thread)
//                                      GpuThreads t in [0, 1): out[r] = g(acc)
//
// Neighbouring threads read neighbouring elements (coalesced), and the
// partial results meet in a tree in shared memory. An arg-reduction's
// index goes along (the full arg test at every combine: the first best
// index wins whatever the order). The combines are reassociated: exact
// for integers, max/min and arg-reductions; a floating-point sum's order
// differs from NumPy's pairwise sum (each thread sums every T-th point,
// then the tree) within the same error bound -- the README says so.
// Only a loop that reads memory along its own variable (a row's elements,
// a share's contiguous part) is shared so: a reduction down a column is
// better one thread per column (neighbouring columns are neighbouring
// elements), as gpu_grid leaves it.
// Where the first reduced loop's trip count comes from the parameters (a
// row's length), rows shorter than a block stay one thread's: the loop is
// kept as it was after the blocks' loop, each of the two running its
// iterations only when the rows are long (>= T points) or short.
// Loops that carry nothing (an output written per point) are dealt out to
// the block's threads the same way; other statements that write memory
// run on one thread. A Barrier follows every statement whose writes later
// ones may read. An iteration whose body has anything else (an ordered
// product, a register combined outside a loop, a loop carrying another
// scalar, an allocation) stays one thread's.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

constexpr const char* kThread = "nf_t";

StmtP threads_loop(ExP hi) {
  StmtP f = for_loop(kThread, lit(0), std::move(hi), lit(1));
  f->loop = LoopKind::GpuThreads;
  return f;
}

// Whether the statement assigns a variable it does not declare itself.
bool assigns_outer(const Stmt& s, std::set<std::string> inside) {
  if (s.k == Stmt::K::Assign && s.target->k == Ex::K::Var && !inside.count(s.target->name)) return true;
  if (s.k == Stmt::K::For) inside.insert(s.name);
  for (const std::vector<StmtP>* l : {&s.body, &s.else_body}) {
    std::set<std::string> in = inside;
    for (const StmtP& c : *l) {
      if (c->k == Stmt::K::Decl || c->k == Stmt::K::Alloc) in.insert(c->name);
      if (assigns_outer(*c, in)) return true;
    }
  }
  return false;
}

// Whether the statement mentions a name of `names` anywhere.
bool mentions_stmt(const Stmt& s, const std::set<std::string>& names) {
  for (const ExP* e : {&s.lo, &s.hi, &s.step, &s.init, &s.target, &s.value, &s.count, &s.cond})
    if (mentions(*e, names)) return true;
  for (const ExP& a : s.args)
    if (mentions(a, names)) return true;
  for (const std::vector<StmtP>* l : {&s.body, &s.else_body})
    for (const StmtP& c : *l)
      if (mentions_stmt(*c, names)) return true;
  return false;
}

// One Parallel loop's iteration as a block's work.
class Cooperation {
 public:
  Cooperation(const Stmt& loop, const Caps& caps) : loop_(loop), T_(caps.block_threads), budget_(caps.shared_bytes) {}

  // The cooperative body, or false (the iteration stays one thread's).
  bool run(std::vector<StmtP>& out) {
    const std::vector<StmtP> body = unwrapped_body(loop_);
    const std::set<std::string> index_regs = index_registers(body);
    for (const StmtP& s : body) {
      switch (s->k) {
        case Stmt::K::Comment:
          out.push_back(s);
          break;
        case Stmt::K::Decl:
          if (s->accumulates || index_regs.count(s->name)) {
            if (s->accumulates) {
              if (s->accumulates->ordered) return false;
              regs_[s->name] = s.get();
            }
            pending_[s->name] = s;
            names_.insert(s->name);
            break;
          }
          if (mentions(s->init, names_)) return false;
          flush(out);
          out.push_back(s);  // (uniform: every thread)
          declared_.insert(s->name);
          break;
        case Stmt::K::Assign:
          if (mentions_stmt(*s, names_)) return false;
          if (s->target->k == Ex::K::Var) {
            flush(out);
            out.push_back(s);  // (uniform)
          } else {
            single_.push_back(s);
          }
          break;
        case Stmt::K::For: {
          if (s->step->k == Ex::K::IntLit && s->step->ival <= 0) return false;
          const Carried c = carried(*s, regs_);
          if (c.other) return false;
          for (const Stmt* r : c.regs)
            if (!pending_.count(r->name)) return false;
          flush(out);
          if (c.regs.empty()) {
            // Independent iterations: dealt out to the block's threads.
            if (mentions_stmt(*s, names_)) return false;
            StmtP th = threads_loop(lit(T_));
            th->body.push_back(strided(*s));
            out.push_back(th);
            out.push_back(barrier());
            ++distributed_;
          } else {
            if (!reads_along(*s) || !reduce(*s, c.regs, out)) return false;
            if (!first_) first_ = s.get();
          }
          break;
        }
        case Stmt::K::If:
        case Stmt::K::Block:
          if (assigns_outer(*s, {}) || mentions_stmt(*s, names_)) return false;
          single_.push_back(s);
          break;
        default:  // (allocations, barriers, stages, tile requests, splits)
          return false;
      }
    }
    if (!pending_.empty() || reductions_ == 0) return false;
    // The first reduction's points, where the parameters alone say how
    // many (a row's length; not a share's part, nor the shares' fold, which
    // are long on a device).
    if (first_) {
      const ExP e = sub(first_->hi, first_->lo);
      std::set<std::string> local = declared_;
      local.insert(loop_.name);
      local.insert(kShares);
      if (!mentions(e, local)) extent_ = e;
    }
    flush(out);
    while (!out.empty() && out.back()->k == Stmt::K::Barrier) out.pop_back();
    return shared_ <= budget_;
  }

  // The first reduction's trip count from the kernel's parameters, or null.
  ExP extent() const { return extent_; }

 private:
  const Stmt* first_ = nullptr;  // the first loop reduced
  std::set<std::string> declared_;  // the uniform variables the body declares
  ExP extent_;
  const Stmt& loop_;
  const int64_t T_;
  const int64_t budget_;
  Registers regs_;                              // accumulator registers not reduced yet
  std::map<std::string, StmtP> pending_;        // their declarations (and their index registers')
  std::set<std::string> names_;                 // their names: not read before their loop
  std::vector<StmtP> single_;                   // statements waiting to run on one thread
  int reductions_ = 0, distributed_ = 0, flags_ = 0;
  int64_t shared_ = 0;

  // The statements that write memory, on one thread, then a barrier.
  void flush(std::vector<StmtP>& out) {
    if (single_.empty()) return;
    StmtP th = threads_loop(lit(1));
    th->body = std::move(single_);
    single_.clear();
    out.push_back(th);
    out.push_back(barrier());
  }

  // Loop s with thread nf_t taking its iterations nf_t, nf_t + T, ...
  StmtP strided(const Stmt& s) const {
    auto same = [](const ExP& e) { return e; };
    StmtP f = copy_stmt(std::make_shared<Stmt>(s), same);
    f->lo = add(s.lo, mul(var(kThread), s.step));
    f->step = mul(s.step, lit(T_));
    f->loop = LoopKind::Serial;
    f->pairwise = false;
    f->pairwise_parts.clear();
    f->simd_reductions.clear();
    f->splits.clear();
    return f;
  }

  std::string flag() { return "nf_better" + std::to_string(flags_++); }

  bool reduce(const Stmt& f, const std::vector<const Stmt*>& regs, std::vector<StmtP>& out) {
    struct Reg {
      const Stmt* value;
      StmtP index;  // (an arg-reduction's)
      std::string sh, ish;
    };
    std::vector<Reg> rs;
    for (const Stmt* r : regs) {
      Reg g{r, nullptr, r->name + "_sh", ""};
      const std::string& ix = r->accumulates->index;
      if (!ix.empty()) {
        auto it = pending_.find(ix);
        if (it == pending_.end()) return false;
        g.index = it->second;
        g.ish = ix + "_sh";
      }
      rs.push_back(g);
    }
    for (const Reg& g : rs) {
      out.push_back(alloc(g.value->dtype, g.sh, lit(T_), Scope::GpuShared));
      shared_ += T_ * itemsize(g.value->dtype);
      if (g.index) {
        out.push_back(alloc(DType::Int64, g.ish, lit(T_), Scope::GpuShared));
        shared_ += T_ * 8;
      }
    }
    // Each thread's share of the points, from the identity.
    const ExP t = var(kThread);
    StmtP th = threads_loop(lit(T_));
    for (const Reg& g : rs) {
      StmtP d = std::make_shared<Stmt>(*g.value);
      d->init = scalar_lit(reduce_identity(g.value->accumulates->op, g.value->dtype), g.value->dtype);
      th->body.push_back(d);
      if (g.index) th->body.push_back(decl(DType::Int64, g.index->name, lit(INT64_MAX)));
    }
    th->body.push_back(strided(f));
    for (const Reg& g : rs) {
      th->body.push_back(assign(load(g.sh, t, g.value->dtype), var(g.value->name, g.value->dtype)));
      if (g.index) th->body.push_back(assign(load(g.ish, t, DType::Int64), var(g.index->name)));
    }
    out.push_back(th);
    out.push_back(barrier());
    // The tree: half the threads combine the other half's into theirs.
    for (int64_t h = T_ / 2; h >= 1; h /= 2) {
      StmtP level = threads_loop(lit(h));
      for (const Reg& g : rs) {
        const DType dt = g.value->dtype;
        const ExP there = add(t, lit(h));
        combine_into(level->body, g.value->accumulates->op, dt, flag(), load(g.sh, t, dt),
                     g.index ? load(g.ish, t, DType::Int64) : nullptr, load(g.sh, there, dt),
                     g.index ? load(g.ish, there, DType::Int64) : nullptr);
      }
      out.push_back(level);
      out.push_back(barrier());
    }
    // The register on every thread: its start value combined with the tree's root.
    for (const Reg& g : rs) {
      const DType dt = g.value->dtype;
      out.push_back(decl(dt, g.value->name, g.value->init));
      if (g.index) out.push_back(decl(DType::Int64, g.index->name, g.index->init));
      combine_into(out, g.value->accumulates->op, dt, flag(), var(g.value->name, dt),
                   g.index ? var(g.index->name) : nullptr, load(g.sh, lit(0), dt),
                   g.index ? load(g.ish, lit(0), DType::Int64) : nullptr);
      regs_.erase(g.value->name);
      pending_.erase(g.value->name);
      names_.erase(g.value->name);
      if (g.index) {
        pending_.erase(g.index->name);
        names_.erase(g.index->name);
      }
    }
    ++reductions_;
    return true;
  }
};

}  // namespace

namespace detail {

bool unit_term(const ExP& e, const std::string& v) {
  if (e->k == Ex::K::Var) return e->name == v;
  if (e->k != Ex::K::Arith) return false;
  if (e->op == '+') return unit_term(e->args[0], v) || unit_term(e->args[1], v);
  if (e->op == '*')
    for (int i : {0, 1})
      if (e->args[i]->k == Ex::K::IntLit && e->args[i]->ival == 1) return unit_term(e->args[1 - i], v);
  return false;
}

// Whether loop f reads memory contiguously along its variable: then a
// block's threads reading its iterations t, t + T, ... read neighbouring
// elements. (A reduction down a column reads with a row's stride; its
// neighbouring grid points are the neighbouring elements: one thread per
// point reads coalesced there.)
bool reads_along(const Stmt& f) {
  bool found = false;
  std::function<void(const ExP&)> ex = [&](const ExP& e) {
    if (!e || found) return;
    if (e->k == Ex::K::Load && unit_term(e->args[0], f.name)) found = true;
    for (const ExP& a : e->args) ex(a);
  };
  std::function<void(const std::vector<StmtP>&)> walk = [&](const std::vector<StmtP>& l) {
    for (const StmtP& s : l) {
      for (const ExP* e : {&s->init, &s->value, &s->cond}) ex(*e);
      walk(s->body);
      walk(s->else_body);
    }
  };
  walk(f.body);
  return found;
}

}  // namespace detail

void passes::gpu_blocks(LoopNest& n, const PassContext& ctx) {
  // (The schedule's block size where it has one, within the target's.)
  Caps caps = ctx.caps;
  if (n.block_threads > 0 && caps.block_threads > 0) caps.block_threads = std::min(n.block_threads, caps.max_block_threads);
  if (caps.threads != Caps::Threads::Grid || caps.block_threads < 2) return;
  if ((caps.block_threads & (caps.block_threads - 1)) != 0)
    throw std::logic_error("gpu_blocks: a block of threads not a power of two");
  const int64_t T = caps.block_threads;
  for (size_t i = 0; i < n.body.size(); ++i) {
    const StmtP s = n.body[i];
    if (s->k != Stmt::K::For || s->loop != LoopKind::Parallel || !s->share_reductions.empty()) continue;
    std::vector<StmtP> body;
    Cooperation coop(*s, caps);
    if (!coop.run(body)) continue;
    StmtP b = std::make_shared<Stmt>(*s);
    b->loop = LoopKind::GpuBlocks;
    b->cond = nullptr;
    b->threads = T;
    b->body = std::move(body);
    n.body[i] = b;
    if (const ExP e = coop.extent()) {
      // Rows shorter than a block: one thread per row (the loop as it
      // was, after the blocks' loop, which then runs no iteration).
      b->hi = mul(arith('<', lit(T - 1), e), s->hi);
      StmtP one = std::make_shared<Stmt>(*s);
      one->hi = mul(arith('<', e, lit(T)), s->hi);
      n.body.insert(n.body.begin() + static_cast<std::ptrdiff_t>(i) + 1, one);
      ++i;
    }
  }
}

}  // namespace nf::lower

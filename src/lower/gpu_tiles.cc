// The gpu_tiles pass (passes.h): on a target with a grid, a contraction
// -- a grid over two free dimensions I and J, each point combining along a
// third, k, values made from inputs read at (I, k) and at (k, J) (a matmul,
// an einsum, a batched matmul with more grid dimensions outside) -- runs
// as the MDH schedule of a GPU's levels: a block of T threads per BM x BN
// tile of the outputs, the inputs' BM x BK and BK x BN tiles in shared
// memory, each thread a TM x TN tile of the outputs in registers -- the
// sizes the schedule's (LoopNest::tile, tune::GpuTile: a model's choice, or
// the tuner's).
//
//   Parallel s over NB NI NJ:            (top) nf_tm = ceil(NI / BM), nf_tn = ceil(NJ / BN)
//     g = s; J = g % NJ; g /= NJ         GpuBlocks b over NB nf_tm nf_tn, T threads:
//     I = g [% NI; g /= NI; batch...]      g = b; J0 = g % nf_tn BN; g /= nf_tn
//     for k in [0, K):                     I0 = g % nf_tm BM; g /= nf_tm; batch...
//       [for J' in [J, min(J + 1, NJ)):]   shared A[BK BM], B[BK BN]; private acc[TM TN]
//         v = f(A(I, k), B(k, J), ...)     GpuThreads t: acc = identity
//         out[I, J] (+)= v                 for k0 in [0, K) step BK:
//                                            kc = min(BK, K - k0)
//                                            GpuThreads t: A tile, B tile (0 outside the extents)
//                                            Barrier
//                                            GpuThreads t: for kk < kc, r < TM, c < TN:
//                                              I = I0 + t / (BN/TN) + r BM/TM, J = ..., k = k0 + kk
//                                              v = f(A[kk BM + ...], B[kk BN + ...], ...)
//                                              acc[r TN + c] (+)= v
//                                            Barrier
//                                          GpuThreads t: out[I, J] (+)= acc[r TN + c] where I < NI, J < NJ
//
// Each output's points combine in k order from the identity, then into the
// output (its start value) once: the association of the loop it replaces
// but for that last step (exact for integers and max/min; a float sum
// starts from 0 either way). A tile's copy reads along k where the
// input's index steps by one element with k (a row-major A), else along
// I or J: neighbouring threads read neighbouring elements (a tile copied
// along k has rows of BM + 1 or BN + 1 elements, so the stores fall in different banks of
// shared memory). A whole tile's k is an unrolled loop of BK. Points outside
// the extents read 0 from the tiles and store nothing. Only a body of
// declarations and one marked memory combine (not an arg-reduction) at an
// index without k, in loops over k in order (one loop, or a tile loop and
// its point loop) and the grid's one-point loops, is taken, and only where
// some input is read at (I, k) or (k, J) and none at (I, J, k).
#include <functional>
#include <map>
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

StmtP unrolled(const std::string& v, int64_t n) {
  StmtP f = for_loop(v, lit(0), lit(n), lit(1));
  f->loop = LoopKind::Unrolled;
  return f;
}

bool is_var(const ExP& e, const std::string& name) { return e->k == Ex::K::Var && e->name == name; }
bool int_lit(const ExP& e, int64_t v) { return e->k == Ex::K::IntLit && e->ival == v; }

// A contraction's grid iteration, read off the Parallel loop.
struct Form {
  std::string g;       // the variable the share is decomposed through
  std::string I, J;    // the two innermost grid points
  ExP NI, NJ;          // their extents (top-level names)
  bool i_outermost = false;  // I = g (NI derived from the grid's extent)
  std::vector<StmtP> batch;  // the declarations of the grid's outer points, from g
  std::string k;       // the combined point
  ExP K;               // its extent (from 0)
  std::vector<StmtP> body;   // the point's statements, in I, J and k
  StmtP combine;       // the marked memory combine among them
};

// `for v in [p, min(p + 1, X))` in steps of 1, p a grid point: one point.
bool one_point(const Stmt& f, const Form& m) {
  if (f.loop != LoopKind::Serial || !int_lit(f.step, 1)) return false;
  if (!(is_var(f.lo, m.I) || is_var(f.lo, m.J))) return false;
  const ExP& h = f.hi;
  if (h->k != Ex::K::Arith || h->op != 'm') return false;
  const ExP& a = h->args[0];
  if (!(a->k == Ex::K::Arith && a->op == '+' && same_ex(a->args[0], f.lo) && int_lit(a->args[1], 1))) return false;
  // (X is the point's extent: NJ for J; NI for I where the grid names it,
  // any bound of the grid's top level where I is the grid's outermost.)
  if (is_var(f.lo, m.J)) return same_ex(h->args[1], m.NJ);
  return m.i_outermost || same_ex(h->args[1], m.NI);
}

bool match(const Stmt& par, const std::set<std::string>& top, Form& m) {
  const std::vector<StmtP> body = unwrapped_body(par);
  if (body.size() < 5 || !top_only(par.hi, top)) return false;
  // g = s; J = g % NJ; g = g / NJ; then I = g, or I = g % NI; g = g / NI.
  const Stmt& s0 = *body[0];
  if (s0.k != Stmt::K::Decl || !s0.init || !is_var(s0.init, par.name)) return false;
  m.g = s0.name;
  auto modulo = [&](const Stmt& s, std::string& v, ExP& n) {
    if (s.k != Stmt::K::Decl || !s.init || s.init->k != Ex::K::Arith || s.init->op != '%') return false;
    if (!is_var(s.init->args[0], m.g) || !top_only(s.init->args[1], top)) return false;
    v = s.name;
    n = s.init->args[1];
    return true;
  };
  auto divide = [&](const Stmt& s, const ExP& n) {
    return s.k == Stmt::K::Assign && is_var(s.target, m.g) && s.value->k == Ex::K::Arith && s.value->op == '/' &&
           is_var(s.value->args[0], m.g) && same_ex(s.value->args[1], n);
  };
  if (!modulo(*body[1], m.J, m.NJ) || !divide(*body[2], m.NJ)) return false;
  size_t at = 4;
  const Stmt& s3 = *body[3];
  if (s3.k == Stmt::K::Decl && s3.init && is_var(s3.init, m.g)) {
    m.I = s3.name;
    m.NI = arith('/', par.hi, arith('M', m.NJ, lit(1)));
    m.i_outermost = true;
  } else {
    if (!modulo(s3, m.I, m.NI) || !divide(*body[4], m.NI)) return false;
    at = 5;
  }
  if (at >= body.size()) return false;
  // The outer points' declarations (from g and each other), then the loops.
  for (; at + 1 < body.size(); ++at) {
    const Stmt& s = *body[at];
    if (s.k != Stmt::K::Decl && !(s.k == Stmt::K::Assign && s.target->k == Ex::K::Var)) return false;
    if (mentions(s.k == Stmt::K::Decl ? s.init : s.value, {m.I, m.J})) return false;
    if (s.k == Stmt::K::Decl && s.accumulates) return false;
    m.batch.push_back(body[at]);
  }
  std::set<std::string> known = top;
  known.insert(m.g);
  for (const StmtP& b : m.batch) known.insert(b->name);
  // The loops over k (and the grid's one-point loops) down to the point.
  std::map<std::string, ExP> points;  // one-point loop variable -> its grid point
  StmtP cur = body.back();
  while (cur->k == Stmt::K::For) {
    const Stmt& f = *cur;
    if (f.pairwise || !f.splits.empty() || !f.simd_reductions.empty() || f.cond) return false;
    if (one_point(f, m)) {
      points[f.name] = f.lo;
    } else if (m.k.empty() && int_lit(f.lo, 0) && f.step->k == Ex::K::IntLit && f.step->ival >= 1 &&
               (f.loop == LoopKind::Serial || f.loop == LoopKind::Vectorized) && top_only(f.hi, known)) {
      m.K = f.hi;
      if (f.step->ival == 1) {
        m.k = f.name;
      } else {  // a tile loop and its point loop [k0, min(k0 + S, K))
        if (f.body.size() != 1 || f.body[0]->k != Stmt::K::For) return false;
        const Stmt& p = *f.body[0];
        const ExP want = min(add(var(f.name), f.step), f.hi);
        if (!is_var(p.lo, f.name) || !int_lit(p.step, 1) || !same_ex(p.hi, want) || p.pairwise ||
            !p.splits.empty() || !p.simd_reductions.empty() || p.cond ||
            (p.loop != LoopKind::Serial && p.loop != LoopKind::Vectorized))
          return false;
        m.k = p.name;
        cur = f.body[0];
      }
    } else {
      return false;
    }
    if (cur->body.size() == 1 && cur->body[0]->k == Stmt::K::For) {
      cur = cur->body[0];
      continue;
    }
    break;
  }
  if (m.k.empty() || cur->k != Stmt::K::For) return false;
  // The point's statements: declarations and one marked memory combine.
  auto put = [&](const ExP& e) {
    return rewrite_ex(e, [&](const ExP& x) -> ExP {
      if (x->k == Ex::K::Var) {
        auto p = points.find(x->name);
        if (p != points.end()) return p->second;
      }
      return nullptr;
    });
  };
  for (const StmtP& s : cur->body) {
    if (s->k == Stmt::K::Comment) continue;
    if (s->k == Stmt::K::Decl && !s->accumulates && s->init) {
      m.body.push_back(copy_stmt(s, put));
      continue;
    }
    if (s->k != Stmt::K::Assign || !s->accumulates || m.combine || s->accumulates->index_at ||
        s->target->k != Ex::K::Load || is_arg(s->accumulates->op))
      return false;
    m.combine = copy_stmt(s, put);
    m.body.push_back(m.combine);
  }
  if (!m.combine || points.count(m.k)) return false;
  // (Each point its own element: the output's index has I and J, not k.)
  const ExP& ix = m.combine->target->args[0];
  return mentions(ix, {m.I}) && mentions(ix, {m.J}) && !mentions(ix, {m.k});
}

// An input read at (I, k) or at (k, J), copied to a shared tile.
struct Tile {
  ExP at;            // the load, as the point reads it
  bool rows = true;  // at (I, k): BM x BK; else (k, J): BK x BN
  std::string name;
  bool along_k = false;  // copied along k (its index steps by one element with k)
  // Elements from one k to the next in the tile: BM or BN, one more where
  // the copy runs along k (neighbouring threads' stores a row apart would
  // all fall in one bank of shared memory).
  int64_t stride(const tune::GpuTile& z) const { return (rows ? z.bm : z.bn) + (along_k ? 1 : 0); }
  int64_t count(const tune::GpuTile& z) const { return z.bk * stride(z); }
};

class Tiler {
 public:
  // The tiles' sizes (BM x BN outputs a block, BK deep, TM x TN a thread):
  // a block of T = (BM / TM) (BN / TN) threads, RowsPerThread x
  // ColsPerThread of them.
  Tiler(const Form& m, const std::set<std::string>& top, int n, const tune::GpuTile& z)
      : m_(m), top_(top), sfx_(n ? std::to_string(n) : ""), z_(z), BM(z.bm), BN(z.bn), BK(z.bk), TM(z.tm),
        TN(z.tn), RowsPerThread(z.bm / z.tm), ColsPerThread(z.bn / z.tn), T(z.threads()) {}

  // The tiles the point's loads need, or false (a load at (I, J, k), or
  // none at (I, k) or (k, J)).
  bool plan() {
    std::set<std::string> local;
    for (const StmtP& s : m_.body)
      if (s->k == Stmt::K::Decl) local.insert(s->name);
    bool ok = true;
    std::function<void(const ExP&)> walk = [&](const ExP& e) {
      if (!e || !ok) return;
      if (e->k == Ex::K::Load && !same_ex(e, m_.combine->target)) {
        const ExP& ix = e->args[0];
        const bool i = mentions(ix, {m_.I}), j = mentions(ix, {m_.J}), k = mentions(ix, {m_.k});
        if (i && j && k) ok = false;
        if (k && (i != j)) {
          if (mentions(ix, local)) {
            ok = false;
            return;
          }
          for (const Tile& t : tiles_)
            if (same_ex(t.at, e)) return;
          tiles_.push_back({e, i, "nf_tile" + sfx_ + "_" + std::to_string(tiles_.size()), unit_term(ix, m_.k)});
          return;
        }
      }
      for (const ExP& a : e->args) walk(a);
    };
    for (const StmtP& s : m_.body) {
      walk(s->init);
      walk(s->value);
      if (s->target && s->target->k == Ex::K::Load) walk(s->target->args[0]);
    }
    int64_t bytes = 0;
    for (const Tile& t : tiles_) bytes += t.count(z_) * itemsize(t.at->dtype);
    bytes_ = bytes;
    return ok && !tiles_.empty();
  }

  int64_t shared_bytes() const { return bytes_; }

  // The top level's declarations and the blocks' loop.
  void emit(const Stmt& par, std::vector<StmtP>& out) {
    const std::string tm = "nf_tm" + sfx_, tn = "nf_tn" + sfx_, tiles = "nf_tiles" + sfx_;
    out.push_back(decl(DType::Int64, tm, arith('/', add(m_.NI, lit(BM - 1)), lit(BM))));
    out.push_back(decl(DType::Int64, tn, arith('/', add(m_.NJ, lit(BN - 1)), lit(BN))));
    const ExP outer = arith('/', par.hi, arith('M', mul(m_.NI, m_.NJ), lit(1)));
    out.push_back(decl(DType::Int64, tiles, mul(outer, mul(var(tm), var(tn)))));
    StmtP b = for_loop("nf_b" + sfx_, lit(0), var(tiles), lit(1));
    b->loop = LoopKind::GpuBlocks;
    b->threads = T;
    std::vector<StmtP>& body = b->body;
    const ExP g = var(m_.g);
    body.push_back(decl(DType::Int64, m_.g, var(b->name)));
    body.push_back(decl(DType::Int64, j0(), mul(arith('%', g, var(tn)), lit(BN))));  // (J innermost, as the grid)
    body.push_back(assign(g, arith('/', g, var(tn))));
    body.push_back(decl(DType::Int64, i0(), mul(arith('%', g, var(tm)), lit(BM))));
    body.push_back(assign(g, arith('/', g, var(tm))));
    for (const StmtP& s : m_.batch) body.push_back(copy(s));
    for (const Tile& t : tiles_)
      body.push_back(alloc(t.at->dtype, t.name, lit(t.count(z_)), Scope::GpuShared));
    const DType at = m_.combine->target->dtype;
    const ReduceOp op = m_.combine->accumulates->op;
    body.push_back(alloc(at, acc(), lit(TM * TN), Scope::GpuPrivate));
    {
      StmtP th = threads_loop(lit(T));
      StmtP e = unrolled("nf_e", TM * TN);
      e->body.push_back(assign(load(acc(), var("nf_e"), at), scalar_lit(reduce_identity(op, at), at)));
      th->body.push_back(e);
      body.push_back(th);
    }
    StmtP k0 = for_loop(kk0(), lit(0), m_.K, lit(BK));
    k0->body.push_back(decl(DType::Int64, kc(), min(lit(BK), sub(m_.K, var(kk0())))));
    for (const Tile& t : tiles_) k0->body.push_back(copy_in(t));
    k0->body.push_back(barrier());
    k0->body.push_back(compute());
    k0->body.push_back(barrier());
    body.push_back(k0);
    body.push_back(store(op, at));
    out.push_back(b);
  }

 private:
  const Form& m_;
  const std::set<std::string>& top_;
  const std::string sfx_;
  const tune::GpuTile z_;
  const int64_t BM, BN, BK, TM, TN, RowsPerThread, ColsPerThread, T;
  std::vector<Tile> tiles_;
  int64_t bytes_ = 0;

  std::string i0() const { return "nf_i0" + sfx_; }
  std::string j0() const { return "nf_j0" + sfx_; }
  std::string kk0() const { return "nf_k0" + sfx_; }
  std::string kc() const { return "nf_kc" + sfx_; }
  std::string acc() const { return "nf_acc" + sfx_; }

  static ExP put(const ExP& e, const std::map<std::string, ExP>& at) {
    return rewrite_ex(e, [&](const ExP& x) -> ExP {
      if (x->k != Ex::K::Var) return nullptr;
      auto p = at.find(x->name);
      return p == at.end() ? nullptr : p->second;
    });
  }

  // The tile's copy: thread t takes elements t, t + T, ... of the BK x B
  // tile (B = BM or BN), neighbouring threads along k where the input's
  // index steps by one element with k, else along the tile's I or J.
  StmtP copy_in(const Tile& t) const {
    const int64_t B = t.rows ? BM : BN;
    StmtP th = threads_loop(lit(BK * B));
    const ExP x = var(kThread);
    const ExP kk = t.along_k ? arith('%', x, lit(BK)) : arith('/', x, lit(B));
    const ExP p = t.along_k ? arith('/', x, lit(BK)) : arith('%', x, lit(B));
    th->body.push_back(decl(DType::Int64, "nf_kk", kk));
    th->body.push_back(decl(DType::Int64, "nf_p", p));
    const ExP point = add(var(t.rows ? i0() : j0()), var("nf_p"));
    const ExP inside = arith('&', arith('<', point, t.rows ? m_.NI : m_.NJ), arith('<', var("nf_kk"), var(kc())));
    const ExP slot = load(t.name, add(mul(var("nf_kk"), lit(t.stride(z_))), var("nf_p")), t.at->dtype);
    StmtP branch = if_else(inside);
    const std::map<std::string, ExP> at = {{t.rows ? m_.I : m_.J, point}, {m_.k, add(var(kk0()), var("nf_kk"))}};
    branch->body.push_back(assign(slot, put(t.at, at)));
    branch->else_body.push_back(assign(slot, scalar_lit(reduce_identity(ReduceOp::Sum, t.at->dtype), t.at->dtype)));
    th->body.push_back(branch);
    return th;
  }

  // A thread's row and column in the block's grid of threads.
  void thread_place(std::vector<StmtP>& out) const {
    out.push_back(decl(DType::Int64, "nf_tr", arith('/', var(kThread), lit(ColsPerThread))));
    out.push_back(decl(DType::Int64, "nf_tc", arith('%', var(kThread), lit(ColsPerThread))));
  }

  // The unrolled loops over a thread's TM x TN points (inside a loop over
  // the tile's k, `kk`, if given); returns their body.
  std::vector<StmtP>* thread_points(std::vector<StmtP>& out, const StmtP& kk) const {
    std::vector<StmtP>* at = &out;
    const bool declare_k = kk != nullptr;
    if (kk) {
      at->push_back(kk);
      at = &kk->body;
    }
    StmtP r = unrolled("nf_r", TM);
    StmtP c = unrolled("nf_c", TN);
    r->body.push_back(c);
    at->push_back(r);
    c->body.push_back(decl(DType::Int64, m_.I, add(var(i0()), add(var("nf_tr"), mul(var("nf_r"), lit(RowsPerThread))))));
    c->body.push_back(decl(DType::Int64, m_.J, add(var(j0()), add(var("nf_tc"), mul(var("nf_c"), lit(ColsPerThread))))));
    if (declare_k) c->body.push_back(decl(DType::Int64, m_.k, add(var(kk0()), var("nf_kk"))));
    return &c->body;
  }

  ExP acc_at(DType t) const { return load(acc(), add(mul(var("nf_r"), lit(TN)), var("nf_c")), t); }

  // Each thread's points over the tile's k: the point's statements with
  // the tiles read from shared memory and the combine into the registers.
  StmtP compute() const {
    StmtP th = threads_loop(lit(T));
    thread_place(th->body);
    // A whole tile's k (every tile but the last): a literal trip count,
    // unrolled; the last one's as many as are left.
    StmtP whole = if_else(arith('<', lit(BK - 1), var(kc())));
    StmtP full = unrolled("nf_kk", BK);
    compute_points(whole->body, full);
    compute_points(whole->else_body, for_loop("nf_kk", lit(0), var(kc()), lit(1)));
    th->body.push_back(whole);
    return th;
  }

  void compute_points(std::vector<StmtP>& out, const StmtP& kk) const {
    std::vector<StmtP>* body = thread_points(out, kk);
    const ExP target = m_.combine->target;
    const ExP mine = acc_at(target->dtype);
    auto rule = [&](const ExP& e) -> ExP {
      if (e->k != Ex::K::Load) return nullptr;
      if (same_ex(e, target)) return mine;
      for (const Tile& t : tiles_)
        if (same_ex(e, t.at)) {
          const ExP p = t.rows ? add(var("nf_tr"), mul(var("nf_r"), lit(RowsPerThread)))
                               : add(var("nf_tc"), mul(var("nf_c"), lit(ColsPerThread)));
          return load(t.name, add(mul(var("nf_kk"), lit(t.stride(z_))), p), e->dtype);
        }
      return nullptr;
    };
    for (const StmtP& s : m_.body) {
      if (s == m_.combine) {
        // (rewritten bottom-up: the target's own index has no tile load)
        body->push_back(assign(mine, rewrite_ex(s->value, rule)));
        continue;
      }
      body->push_back(copy_stmt(s, [&](const ExP& e) { return rewrite_ex(e, rule); }));
    }
  }

  // Each thread's registers combined into the outputs inside the extents.
  StmtP store(ReduceOp op, DType t) const {
    StmtP th = threads_loop(lit(T));
    thread_place(th->body);
    std::vector<StmtP>* body = thread_points(th->body, nullptr);
    StmtP inside = if_else(arith('&', arith('<', var(m_.I), m_.NI), arith('<', var(m_.J), m_.NJ)));
    combine_into(inside->body, op, t, "nf_better" + sfx_, m_.combine->target, nullptr, acc_at(t), nullptr);
    body->push_back(inside);
    return th;
  }
};

}  // namespace

void passes::gpu_tiles(LoopNest& n, const PassContext& c) {
  if (!n.block_tiles || c.caps.threads != Caps::Threads::Grid || c.caps.max_block_threads < n.tile.threads() ||
      !n.tile.why_illegal().empty())
    return;
  const std::set<std::string> top = top_names(n.body);
  int done = 0;
  for (size_t i = 0; i < n.body.size(); ++i) {
    const StmtP par = n.body[i];
    if (par->k != Stmt::K::For || par->loop != LoopKind::Parallel || !par->share_reductions.empty()) continue;
    Form m;
    if (!match(*par, top, m)) continue;
    Tiler tiler(m, top, done, n.tile);
    if (!tiler.plan() || tiler.shared_bytes() > c.caps.shared_bytes) continue;
    std::vector<StmtP> out;
    tiler.emit(*par, out);
    n.body.erase(n.body.begin() + static_cast<std::ptrdiff_t>(i));
    n.body.insert(n.body.begin() + static_cast<std::ptrdiff_t>(i), out.begin(), out.end());
    i += out.size() - 1;
    ++done;
  }
}

}  // namespace nf::lower

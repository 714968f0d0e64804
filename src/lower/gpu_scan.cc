// The gpu_scan pass (passes.h): on a target with a grid, a scan over every
// point of a kernel (np.cumsum of a vector) runs in chunks.
//
// build writes a scan along a loop as the loop itself: point i's value v,
// then out[i] = out[i - 1] (+) v (out[0] = v). Where that loop is the
// kernel's whole work (a scan along the only dimension: nothing for the
// grid) it is one GPU thread walking every point. Here it becomes three
// phases over Q chunks of the points, Q = max(1, min(MaxThreads, N / 64)).
// A scan along rows that the grid gives a thread each (cumsum(x, axis=1)
// of a few long rows) is cut the same way, row by row: Q = max(1,
// min(MaxThreads, 32 MaxThreads / rows, N / 64)) chunks a row, the totals'
// running sums a thread per row:
//
//   Parallel c in [0, Q):  r = the chunk's first value, then r = r (+) v
//                          over the rest of its points; tot[c] = r
//   for c in [1, Q):       tot[c] = tot[c - 1] (+) tot[c]       (one thread)
//   Parallel c in [0, Q):  out[i] = out[i - 1] (+) v within the chunk, its
//                          first point tot[c - 1] (+) v (chunk 0: v)
//
// Each chunk reads its points twice, in order. With one chunk (a short
// scan, or many rows) the loop as it was runs instead, in one pass: every
// loop's bound is multiplied by whether its form is the one (1 < Q, or
// Q < 2). The combines are
// reassociated (a chunk's points, then the chunks' totals): exact for
// integers, min/max and logical scans; a floating-point sum or product
// within NumPy's error bound. Only a loop of exactly that form -- from 0
// in steps of 1 at the top level, declarations, then `if (0 < i)
// out[e(i)] = out[e(i - 1)] (+) v else out[e(i)] = v` -- is cut.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

using namespace detail;

namespace {

struct ScanForm {
  std::vector<StmtP> decls;  // the point's values
  ExP out;                   // out[e(i)] (the target)
  ExP prev;                  // out[e(i - 1)]
  ExP v;                     // the point's value combined
  ExP combine;               // out[e(i - 1)] (+) v
};

ExP replace(const ExP& e, const ExP& what, const ExP& by) {
  return rewrite_ex(e, [&](const ExP& x) -> ExP { return same_ex(x, what) ? by : nullptr; });
}

bool match(const Stmt& f, ScanForm& m) {
  if (f.k != Stmt::K::For || (f.loop != LoopKind::Serial && f.loop != LoopKind::Vectorized)) return false;
  if (f.lo->k != Ex::K::IntLit || f.lo->ival != 0 || f.step->k != Ex::K::IntLit || f.step->ival != 1) return false;
  std::vector<StmtP> body = unwrapped_body(f);  // (a grid point's Block, gpu_points)
  if (body.empty()) return false;
  for (size_t k = 0; k + 1 < body.size(); ++k) {
    if (body[k]->k != Stmt::K::Decl || body[k]->accumulates) return false;
    m.decls.push_back(body[k]);
  }
  const Stmt& s = *body.back();
  const ExP i = var(f.name);
  if (s.k != Stmt::K::If || s.body.size() != 1 || s.else_body.size() != 1) return false;
  if (!same_ex(s.cond, arith('<', lit(0), i))) return false;
  const Stmt& then = *s.body[0];
  const Stmt& other = *s.else_body[0];
  if (then.k != Stmt::K::Assign || other.k != Stmt::K::Assign || then.target->k != Ex::K::Load) return false;
  if (!same_ex(then.target, other.target)) return false;
  m.out = then.target;
  m.v = other.value;
  m.combine = then.value;
  if (m.combine->k != Ex::K::Combine || m.combine->args.size() != 2 || !same_ex(m.combine->args[1], m.v)) return false;
  m.prev = m.combine->args[0];
  const ExP e = m.out->args[0];
  const ExP want = load(m.out->name, rewrite_ex(e, [&](const ExP& x) -> ExP {
                          return x->k == Ex::K::Var && x->name == f.name ? sub(i, lit(1)) : nullptr;
                        }),
                        m.out->dtype);
  if (!same_ex(m.prev, want)) return false;
  // The values read no output of the kernel's scan and nothing the loop writes.
  std::set<std::string> written = {m.out->name};
  std::function<bool(const ExP&)> reads_out = [&](const ExP& x) {
    if (!x) return false;
    if (x->k == Ex::K::Load && written.count(x->name)) return true;
    for (const ExP& a : x->args)
      if (reads_out(a)) return true;
    return false;
  };
  for (const StmtP& d : m.decls)
    if (reads_out(d->init)) return false;
  return !reads_out(m.v);
}

}  // namespace

namespace {

// A grid iteration that scans a row: the Parallel loop over the rows, the
// declarations before the scan (the row's point), the scan loop.
struct Rows {
  const Stmt* par = nullptr;
  std::vector<StmtP> prologue;
};

bool match_rows(const Stmt& par, Rows& r, StmtP& scan, ScanForm& m) {
  const std::vector<StmtP> body = unwrapped_body(par);
  if (body.empty()) return false;
  for (size_t k = 0; k + 1 < body.size(); ++k) {
    if (body[k]->k != Stmt::K::Decl || body[k]->accumulates) return false;
    r.prologue.push_back(body[k]);
  }
  scan = body.back();
  while (scan->k == Stmt::K::Block && scan->body.size() == 1) scan = scan->body[0];
  r.par = &par;
  return match(*scan, m);
}

// The scan loop f (form m) cut into chunks; `rows`: f is a row's scan in a
// Parallel loop over N rows (each row's chunks: Q of them, its totals at
// c N + row), else the kernel's only loop (N = 1).
std::vector<StmtP> cut(const Stmt& f, const ScanForm& m, const Rows* rows, const std::set<std::string>& top,
                       const std::string& sfx) {
  const std::string Q = "nf_q" + sfx, tot = "nf_tot" + sfx, ch = "nf_ch" + sfx, sh = "nf_rc" + sfx;
  const DType t = m.out->dtype;
  const ExP E = f.hi, q = var(Q), cv = var(ch), i = var(f.name);
  const ExP N = rows ? rows->par->hi : lit(1);
  const ExP row = rows ? var(rows->par->name) : lit(0);
  auto at = [&](const ExP& c) { return rows ? add(mul(c, N), row) : c; };
  // Q chunks of at least 64 points, at most MaxThreads a row and 32
  // MaxThreads in all.
  ExP qx = min(max_threads(), arith('/', mul(lit(32), max_threads()), arith('M', N, lit(1))));
  if (top_only(E, top)) qx = min(qx, arith('/', E, lit(64)));
  std::vector<StmtP> out;
  out.push_back(decl(DType::Int64, Q, arith('M', qx, lit(1))));
  // One chunk (many rows, or a short scan): the loop as it was, one pass,
  // and none of the chunks' phases runs an iteration.
  const ExP chunked = arith('<', lit(1), q);
  out.push_back(alloc(t, tot, mul(q, N), Scope::Kernel));
  // A loop over the (row, chunk) pairs, its iteration's row and chunk declared.
  auto pairs = [&]() {
    StmtP l = for_loop(rows ? sh : ch, lit(0), mul(chunked, rows ? mul(N, q) : q), lit(1));
    l->loop = LoopKind::Parallel;
    if (rows) {
      l->cond = rows->par->cond;
      l->body.push_back(decl(DType::Int64, rows->par->name, arith('%', var(sh), N)));
      l->body.push_back(decl(DType::Int64, ch, arith('/', var(sh), N)));
      for (const StmtP& d : rows->prologue) l->body.push_back(copy(d));
    }
    return l;
  };
  // A chunk's points [E c / Q, E (c + 1) / Q).
  auto chunk_loop = [&]() {
    StmtP l = for_loop(f.name, arith('/', mul(E, cv), q), arith('/', mul(E, add(cv, lit(1))), q), lit(1));
    for (const StmtP& d : m.decls) l->body.push_back(copy(d));
    return l;
  };
  const ExP first = arith('/', mul(E, cv), q);
  // The chunks' totals.
  StmtP totals = pairs();
  const std::string r = "nf_run" + sfx;
  totals->body.push_back(decl(t, r, scalar_lit(reduce_identity(m.combine->rop, t), t)));
  StmtP walk = chunk_loop();
  StmtP pick = if_else(arith('<', first, i));
  pick->body.push_back(assign(var(r, t), replace(m.combine, m.prev, var(r, t))));
  pick->else_body.push_back(assign(var(r, t), m.v));
  walk->body.push_back(pick);
  totals->body.push_back(walk);
  totals->body.push_back(assign(load(tot, at(cv), t), var(r, t)));
  out.push_back(totals);
  // Their running totals: one thread a row.
  StmtP prefix = for_loop(ch, lit(1), q, lit(1));
  const ExP before = load(tot, at(sub(cv, lit(1))), t);
  prefix->body.push_back(
      assign(load(tot, at(cv), t), replace(replace(m.combine, m.v, load(tot, at(cv), t)), m.prev, before)));
  if (rows) {
    StmtP each = for_loop(rows->par->name, lit(0), mul(chunked, N), lit(1));
    each->loop = LoopKind::Parallel;
    each->cond = rows->par->cond;
    each->body.push_back(prefix);
    out.push_back(each);
  } else {
    prefix->hi = mul(chunked, q);
    out.push_back(prefix);
  }
  // Each chunk's scan from the chunks before it.
  StmtP scan = pairs();
  StmtP body = chunk_loop();
  StmtP inside = if_else(arith('<', first, i));
  inside->body.push_back(assign(m.out, m.combine));
  StmtP at_first = if_else(arith('<', lit(0), cv));
  at_first->body.push_back(assign(m.out, replace(m.combine, m.prev, before)));
  at_first->else_body.push_back(assign(m.out, m.v));
  inside->else_body.push_back(at_first);
  body->body.push_back(inside);
  scan->body.push_back(body);
  out.push_back(scan);
  out.push_back(nullptr);  // (the caller's place for the loop as it was, over (Q < 2) of its iterations)
  return out;
}

}  // namespace

void passes::gpu_scan(LoopNest& n, const PassContext& c) {
  if (c.caps.threads != Caps::Threads::Grid) return;
  const std::set<std::string> top = top_names(n.body);
  int scans = 0;
  for (size_t k = 0; k < n.body.size(); ++k) {
    StmtP f = n.body[k];
    while (f->k == Stmt::K::Block && f->body.size() == 1) f = f->body[0];  // (build's scope around the loop)
    ScanForm m;
    Rows rows;
    StmtP scan;
    std::vector<StmtP> out;
    const std::string sfx = scans ? std::to_string(scans) : "";
    const ExP single = arith('<', var("nf_q" + sfx), lit(2));
    if (match(*f, m)) {
      out = cut(*f, m, nullptr, top, sfx);
      StmtP as_was = std::make_shared<Stmt>(*f);
      as_was->hi = mul(single, f->hi);
      out.back() = as_was;
    } else if (f->k == Stmt::K::For && f->loop == LoopKind::Parallel && f->share_reductions.empty() &&
               top_only(f->hi, top)) {
      m = ScanForm{};
      if (!match_rows(*f, rows, scan, m)) continue;
      out = cut(*scan, m, &rows, top, sfx);
      StmtP as_was = std::make_shared<Stmt>(*f);
      as_was->hi = mul(single, f->hi);
      out.back() = as_was;
    } else {
      continue;
    }
    n.body.erase(n.body.begin() + static_cast<std::ptrdiff_t>(k));
    n.body.insert(n.body.begin() + static_cast<std::ptrdiff_t>(k), out.begin(), out.end());
    k += out.size() - 1;
    ++scans;
  }
}

}  // namespace nf::lower

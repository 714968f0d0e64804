// Multi-stage kernels in the IR (lower.h: ChainShape; passes.h: compose):
// the parameter layout and the composition of the stages' nests into one.
#include <numeric>
#include <stdexcept>
#include <string>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

namespace {
int total_accesses(const ChainShape& c) {
  int n = 0;
  for (const ChainShape::Stage& s : c.stages) n += static_cast<int>(s.link.size());
  return n;
}
}  // namespace

int ChainShape::link_slot(int l) const { return stage_slot(static_cast<int>(stages.size())) + 4 * l; }

int ChainShape::access_slot(int s, int i) const {
  int k = link_slot(static_cast<int>(links.size()));
  for (int t = 0; t < s; ++t) k += 3 * static_cast<int>(stages[t].link.size());
  return k + 3 * i;
}

int ChainShape::ints_at(int s) const {
  int k = link_slot(static_cast<int>(links.size())) + 3 * total_accesses(*this);
  for (int t = 0; t < s; ++t) k += stages[t].ints;
  return k;
}

int ChainShape::num_ints() const { return ints_at(static_cast<int>(stages.size())); }

int ChainShape::floats_at(int s) const {
  int k = 0;
  for (int t = 0; t < s; ++t) k += stages[t].floats;
  return k;
}

int ChainShape::num_floats() const { return floats_at(static_cast<int>(stages.size())); }

int ChainShape::ptr_of(int s, int i) const {
  int k = 0;
  for (int t = 0; t < s; ++t) k += static_cast<int>(stages[t].link.size());
  return k + i;
}

int ChainShape::copy_ptr(int l) const { return total_accesses(*this) + l; }
int ChainShape::scratch_ptr() const { return copy_ptr(static_cast<int>(links.size())); }
int ChainShape::num_ptrs() const { return scratch_ptr() + 1; }

std::string ChainShape::key() const {
  std::string k = "chain";
  for (const Stage& s : stages) {
    k += "|s" + std::to_string(s.ints) + "," + std::to_string(s.floats) + ",e" + std::to_string(s.extent0) + "," +
         std::to_string(s.extent1) + (s.once >= 0 ? "g" + std::to_string(s.once) : std::string()) + ":";
    for (int l : s.link) k += std::to_string(l) + ",";
    for (const auto& [o, d0, d1] : s.shifts)
      k += "o" + std::to_string(o) + "/" + std::to_string(d0) + "/" + std::to_string(d1);
  }
  for (const Link& l : links) k += "|l" + std::to_string(l.producer) + (l.copy ? "c" : "t");
  return k;
}

namespace passes {

namespace {

using detail::address;
using detail::assign;
using detail::decl;
using detail::for_loop;
using detail::if_else;
using detail::int_param;

ExP ip(int slot) { return int_param(slot); }
ExP max(ExP a, ExP b) { return detail::arith('M', std::move(a), std::move(b)); }
ExP less(ExP a, ExP b) { return detail::arith('<', std::move(a), std::move(b)); }
ExP both(ExP a, ExP b) { return detail::arith('&', std::move(a), std::move(b)); }
ExP div(ExP a, ExP b) { return detail::arith('/', std::move(a), std::move(b)); }
ExP mod(ExP a, ExP b) { return detail::arith('%', std::move(a), std::move(b)); }

std::string pname(int k) { return "p" + std::to_string(k); }
std::string sn(const char* what, int s) { return what + std::to_string(s); }

// for (b = 0; b < bytes; ++b) dst[dst_at + b] = src[src_at + b], forward
// (a move to lower addresses within one buffer is safe forward).
StmtP copy_bytes(const std::string& dst, ExP dst_at, const std::string& src, ExP src_at, ExP bytes,
                 const std::string& v, bool distinct) {
  StmtP f = for_loop(v, lit(0), std::move(bytes), lit(1));
  if (distinct) f->loop = LoopKind::Vectorized;
  f->body.push_back(assign(detail::load(dst, add(dst_at, var(v)), DType::UInt8),
                           detail::load(src, add(src_at, var(v)), DType::UInt8)));
  return f;
}

// A Stage statement (lower.h) over int parameter array `ip` and the
// floats from fp_base; its arguments and body are the caller's.
StmtP stage_call(const std::string& ip, int fp_base, bool contract, const std::vector<DType>& arg_types) {
  auto st = std::make_shared<Stmt>();
  st->k = Stmt::K::Stage;
  st->name = ip;
  st->fp_base = fp_base;
  st->contract = contract;
  st->arg_types = arg_types;
  return st;
}

}  // namespace

LoopNest compose(std::vector<LoopNest> stages, std::vector<LoopNest> stores, const ChainShape& c,
                 const std::string& name) {
  const int S = static_cast<int>(c.stages.size()), L = static_cast<int>(c.links.size());
  if (S != static_cast<int>(stages.size()) || S != static_cast<int>(stores.size()) || S < 1)
    throw std::logic_error("compose: stages and shape differ");
  LoopNest n;
  n.name = name;
  n.num_ptrs = c.num_ptrs();
  n.ptr_types.assign(n.num_ptrs, DType::UInt8);
  n.uses_threads = true;
  n.description = std::to_string(S) + " stages";
  const std::string scratch = pname(c.scratch_ptr());
  std::vector<std::vector<int>> produces(S), copies(S);
  for (int l = 0; l < L; ++l) {
    produces[c.links[l].producer].push_back(l);
    if (c.links[l].copy) copies[c.links[l].producer].push_back(l);
  }

  // The prologues that store, once, before any thread starts: their
  // parameters as bound, their pointers the memory ones (a prologue reads
  // and writes single elements of memory, never a tile link).
  for (int s = 0; s < S; ++s) {
    const ChainShape::Stage& cs = c.stages[s];
    if (cs.once < 0) continue;
    if (static_cast<int>(cs.link.size()) != stores[s].num_ptrs) throw std::logic_error("compose: a prologue's pointers");
    const std::string sip = sn("iq", s);
    n.body.push_back(detail::local_array(DType::Int64, sip, std::max(1, cs.ints)));
    for (int k = 0; k < cs.ints; ++k)
      n.body.push_back(assign(detail::load(sip, lit(k), DType::Int64), ip(c.ints_at(s) + k)));
    StmtP st = stage_call(sip, c.floats_at(s), stages[s].contract, stores[s].ptr_types);
    for (int i = 0; i < static_cast<int>(cs.link.size()); ++i)
      st->args.push_back(cs.link[i] == -1 ? address(pname(c.ptr_of(s, i)), lit(0)) : lit(0));
    st->body = std::move(stores[s].body);
    n.body.push_back(st);
  }

  StmtP cores = detail::cores_loop(less(lit(1), ip(ChainShape::kThreads)));
  cores->body.push_back(decl(DType::Int64, "nb", min(thread_count(), ip(ChainShape::kThreads))));
  StmtP mine_if = if_else(less(thread_index(), var("nb")));
  cores->body.push_back(mine_if);
  std::vector<StmtP>& th = mine_if->body;
  th.push_back(decl(DType::Int64, "first", div(mul(ip(ChainShape::kRoot), thread_index()), var("nb"))));
  th.push_back(decl(DType::Int64, "last", div(mul(ip(ChainShape::kRoot), add(thread_index(), lit(1))), var("nb"))));
  th.push_back(decl(DType::Int64, "mine", mul(thread_index(), ip(ChainShape::kScratch))));
  for (int s = 0; s < S; ++s) {
    const ChainShape::Stage& cs = c.stages[s];
    th.push_back(detail::local_array(DType::Int64, sn("ip", s), std::max(1, cs.ints)));
    for (int k = 0; k < cs.ints; ++k)  // (the prologue's store guard cleared: stored before the threads)
      th.push_back(assign(detail::load(sn("ip", s), lit(k), DType::Int64), k == cs.once ? lit(0) : ip(c.ints_at(s) + k)));
    th.push_back(decl(DType::Int64, sn("done_lo", s), lit(0)));
    th.push_back(decl(DType::Int64, sn("done_hi", s), lit(-1)));
  }
  for (int l = 0; l < L; ++l) th.push_back(decl(DType::Int64, sn("buf_lo", l), lit(0)));

  // Strips of columns, each walking the thread's rows from the first (the
  // rows kept in tile buffers are the strip's: forgotten between strips).
  StmtP strips = for_loop("c0", lit(0), ip(ChainShape::kCols), ip(ChainShape::kColTile));
  th.push_back(strips);
  strips->body.push_back(decl(DType::Int64, "c1", min(add(var("c0"), ip(ChainShape::kColTile)), ip(ChainShape::kCols))));
  for (int s = 0; s < S; ++s) {
    strips->body.push_back(assign(var(sn("done_lo", s)), lit(0)));
    strips->body.push_back(assign(var(sn("done_hi", s)), lit(-1)));
  }
  StmtP tiles = for_loop("r0", var("first"), var("last"), ip(ChainShape::kTileRows));
  strips->body.push_back(tiles);
  tiles->body.push_back(decl(DType::Int64, "r1", min(add(var("r0"), ip(ChainShape::kTileRows)), var("last"))));
  for (int s = 0; s < S; ++s) {
    const ChainShape::Stage& cs = c.stages[s];
    const int ss = c.stage_slot(s);
    const ExP rows = ip(ss), lo = ip(ss + 1), hi = ip(ss + 2), cols = ip(ss + 3);
    const ExP A = var(sn("A", s)), B = var(sn("B", s)), from = var(sn("from", s));
    const ExP dlo = var(sn("done_lo", s)), dhi = var(sn("done_hi", s));
    tiles->body.push_back(decl(DType::Int64, sn("A", s), max(lit(0), add(var("r0"), lo))));
    tiles->body.push_back(decl(DType::Int64, sn("B", s), min(rows, add(var("r1"), hi))));
    const ExP CA = var(sn("CA", s)), CB = var(sn("CB", s));
    tiles->body.push_back(decl(DType::Int64, sn("CA", s), max(lit(0), add(var("c0"), ip(ss + 4)))));
    tiles->body.push_back(decl(DType::Int64, sn("CB", s), min(cols, add(var("c1"), ip(ss + 5)))));
    // (Without strips a stage runs over all its columns, none included: a
    // reduction over an empty dimension still writes its identity.)
    const ExP strips = less(ip(ChainShape::kColTile), ip(ChainShape::kCols));
    StmtP run = if_else(both(less(A, B), less(CA, add(CB, sub(lit(1), strips)))));
    tiles->body.push_back(run);
    auto& rb = run->body;
    rb.push_back(decl(DType::Int64, sn("from", s), A));
    // Rolling: the rows [A, done_hi) the thread's previous tile computed
    // move to the front of each tile buffer the stage writes; only rows
    // from done_hi on are computed.
    // (Ring: the rows stay in their slots.)
    const ExP storage = ip(ChainShape::kStorage);
    StmtP keep = if_else(both(storage, both(less(A, add(dhi, lit(1))), less(dlo, add(A, lit(1))))));
    rb.push_back(keep);
    StmtP moves = if_else(less(storage, lit(2)));
    if (!produces[s].empty()) keep->body.push_back(moves);
    for (int l : produces[s]) {
      const ExP at = add(var("mine"), ip(c.link_slot(l))), row = ip(c.link_slot(l) + 1);
      const ExP bl = var(sn("buf_lo", l));
      moves->body.push_back(copy_bytes(scratch, at, scratch, add(at, mul(sub(A, bl), row)), mul(sub(dhi, A), row),
                                       sn("mv", l), false));
      keep->body.push_back(assign(bl, A));
      keep->else_body.push_back(assign(bl, A));
    }
    keep->body.push_back(assign(from, dhi));
    rb.push_back(assign(dlo, A));
    rb.push_back(assign(dhi, B));
    // The stage over its rows [from, B), in one call (row by row on a
    // ring): its outer extent and the offsets of its indices moved to the
    // call's first row r, its pointers to that row -- in memory, or in the
    // thread's tile buffer: row q of a link at (q - buf_lo) rows from the
    // buffer's start, on a ring in slot q mod cap.
    StmtP compute = if_else(less(from, B));
    rb.push_back(compute);
    const std::string sip = sn("ip", s), r = sn("r", s), step = sn("rows", s);
    compute->body.push_back(decl(DType::Int64, step, sub(B, from)));
    StmtP ring = if_else(less(lit(1), storage));
    ring->body.push_back(assign(var(step), lit(1)));
    compute->body.push_back(ring);
    StmtP calls = for_loop(r, from, B, var(step));
    compute->body.push_back(calls);
    auto& cb = calls->body;
    cb.push_back(assign(detail::load(sip, lit(cs.extent0), DType::Int64), min(var(step), sub(B, var(r)))));
    if (cs.extent1 >= 0) cb.push_back(assign(detail::load(sip, lit(cs.extent1), DType::Int64), sub(CB, CA)));
    for (const auto& [off, d0, d1] : cs.shifts) {
      ExP at = add(ip(c.ints_at(s) + off), mul(var(r), ip(c.ints_at(s) + d0)));
      if (d1 >= 0) at = add(at, mul(CA, ip(c.ints_at(s) + d1)));
      cb.push_back(assign(detail::load(sip, lit(off), DType::Int64), at));
    }
    StmtP st = stage_call(sip, c.floats_at(s), stages[s].contract, stages[s].ptr_types);
    if (static_cast<int>(cs.link.size()) != stages[s].num_ptrs) throw std::logic_error("compose: a stage's pointers");
    for (int i = 0; i < static_cast<int>(cs.link.size()); ++i) {
      const int l = cs.link[i];
      if (l == -2) {
        st->args.push_back(lit(0));
      } else if (l == -1) {
        st->args.push_back(address(pname(c.ptr_of(s, i)), add(mul(var(r), ip(c.access_slot(s, i))),
                                                              mul(CA, ip(c.access_slot(s, i) + 2)))));
      } else {
        const std::string o = sn("at", s) + "_" + std::to_string(i);
        const ExP q = add(var(r), ip(c.access_slot(s, i)));  // its row in the buffer's rows
        const ExP row = ip(c.link_slot(l) + 1);
        cb.push_back(decl(DType::Int64, o,
                          add(add(add(var("mine"), ip(c.link_slot(l))), ip(c.access_slot(s, i) + 1)),
                              mul(CA, ip(c.access_slot(s, i) + 2)))));
        StmtP slot = if_else(less(lit(1), storage));
        slot->body.push_back(assign(var(o), add(var(o), mul(mod(q, ip(c.link_slot(l) + 2)), row))));
        slot->else_body.push_back(assign(var(o), add(var(o), mul(sub(q, var(sn("buf_lo", l))), row))));
        cb.push_back(slot);
        st->args.push_back(address(scratch, var(o)));
      }
    }
    st->body = std::move(stages[s].body);
    cb.push_back(st);
    n.wide |= stages[s].wide;
    // A copy link: the rows this tile owns (the first tile also those
    // before it, the last those after), from the tile buffer to the array.
    for (int l : copies[s]) {
      const ExP slot_bytes = ip(c.link_slot(l) + 1), row = ip(c.link_slot(l) + 3);
      const std::string olo = sn("own_lo", l), ohi = sn("own_hi", l);
      rb.push_back(decl(DType::Int64, olo, max(lit(0), min(add(var("r0"), lo), rows))));
      StmtP first_tile = if_else(less(var("r0"), lit(1)));
      first_tile->body.push_back(assign(var(olo), lit(0)));
      rb.push_back(first_tile);
      rb.push_back(decl(DType::Int64, ohi, max(lit(0), min(add(var("r1"), lo), rows))));
      StmtP last_tile = if_else(less(var("r1"), ip(ChainShape::kRoot)));
      last_tile->else_body.push_back(assign(var(ohi), rows));
      rb.push_back(last_tile);
      StmtP rows_loop = for_loop(sn("cr", l), var(olo), var(ohi), lit(1));
      const ExP q = var(sn("cr", l));
      const std::string src = sn("src", l);
      rows_loop->body.push_back(decl(DType::Int64, src, add(var("mine"), ip(c.link_slot(l)))));
      StmtP slot = if_else(less(lit(1), storage));
      slot->body.push_back(assign(var(src), add(var(src), mul(mod(q, ip(c.link_slot(l) + 2)), slot_bytes))));
      slot->else_body.push_back(assign(var(src), add(var(src), mul(sub(q, var(sn("buf_lo", l))), slot_bytes))));
      rows_loop->body.push_back(slot);
      rows_loop->body.push_back(copy_bytes(pname(c.copy_ptr(l)), mul(q, row), scratch, var(src), row, sn("cp", l), true));
      rb.push_back(rows_loop);
    }
  }
  n.body.push_back(cores);
  return n;
}

}  // namespace passes

}  // namespace nf::lower

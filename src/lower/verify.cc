// The loop IR's verifier (lower.h): names declared before use and in scope,
// thread expressions only inside a Cores loop, Cores and Parallel loops only
// at the top level (Parallel ones only before the parallelize pass),
// barriers only directly in one, Local variables not seen across a barrier,
// allocations in a scope that can hold them, released once (after the
// storage pass), no barrier after the CPU target's barrier pass, simd
// clauses and splits only from the simd pass on, over registers in scope,
// splits only on Vectorized loops and none after the vectorize pass,
// accumulator marks only on register declarations and memory combines,
// share reductions only on Parallel loops, over heap allocations in scope,
// and none after the partials pass,
// loops marked
// pairwise only before the pairwise pass, TileIns only before the
// tile_buffers pass, FullSplits only before the unroll pass and
// TileBounds and marked loops only in them; GpuBlocks loops at the top
// level, a cooperative one's body only what its block's threads run alike
// (uniform declarations and assignments, GpuShared and GpuPrivate
// allocations, barriers, GpuThreads loops that keep what they declare and
// assign to themselves, uniform loops of these), with a Barrier between a
// statement that writes a shared array and a later one that touches it,
// and private arrays touched only by GpuThreads loops of the block's
// threads.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "lower/lower.h"
#include "lower/passes.h"

namespace nf::lower {

namespace {

enum class NameKind { Scalar, Array, Heap, Freed };

class Verifier {
 public:
  // `ran`: the passes that made n, in order (lower.cc's driver keeps them
  // per nest: build, the common passes, compose, the target's tail).
  // build_stores's nest is ready for compose as it is (no loop, no
  // allocation): where the common passes leave a stage's.
  Verifier(const LoopNest& n, const std::vector<std::string>& ran)
      : n_(n),
        ran_(ran),
        released_(done("storage")),
        no_barriers_(done("cpu_barriers")),
        parallelized_(done("parallelize") || done("gpu_grid")),  // (either takes the Parallel loops)
        simd_(done("simd")),
        split_(done("vectorize")),
        unrolled_(done("unroll")),
        tiled_(done("tile_buffers")),
        privatized_(done("partials")),
        summed_(done("pairwise")) {}

  std::string run() {
    if (has_cores(n_.body) != n_.uses_threads) fail("uses_threads says " + std::string(n_.uses_threads ? "yes" : "no"));
    if (static_cast<int>(n_.ptr_types.size()) != n_.num_ptrs) fail("ptr_types does not match num_ptrs");
    list(n_.body, true);
    return err_;
  }

 private:
  const LoopNest& n_;
  const std::vector<std::string>& ran_;
  const bool released_, no_barriers_;
  const bool parallelized_;  // after the target's parallelize pass: no Parallel loop left
  const bool simd_;   // after the simd pass: loops may have simd clauses and splits
  const bool split_;  // after the vectorize pass: no loop has splits left
  const bool unrolled_;  // after the unroll pass: no FullSplit left
  const bool tiled_;     // after the tile_buffers pass: no TileIn left
  const bool privatized_;  // after the partials pass: no share reductions left
  const bool summed_;    // after the pairwise pass: no loop marked pairwise left
  bool in_parallel_ = false;  // inside a Parallel loop

  // Whether the pass `pass` made the nest (a common pass: also where
  // build_stores did).
  bool done(const char* pass) const {
    if (std::find(ran_.begin(), ran_.end(), pass) != ran_.end()) return true;
    if (std::find(ran_.begin(), ran_.end(), "build_stores") == ran_.end()) return false;
    for (const Pass& p : passes::common())
      if (std::string(p.name) == pass) return true;
    return false;
  }
  int in_split_ = 0;     // FullSplits around the statement being verified
  std::string err_;
  std::vector<std::vector<std::pair<std::string, NameKind>>> scopes_;
  bool in_cores_ = false;
  int ptrs_ = n_.num_ptrs;  // the kernel's pointers, or the Stage's being verified

  static bool has_cores(const std::vector<StmtP>& list) {
    for (const StmtP& s : list)
      if ((s->k == Stmt::K::For && s->loop == LoopKind::Cores) || has_cores(s->body) || has_cores(s->else_body))
        return true;
    return false;
  }

  void fail(const std::string& why) {
    if (err_.empty()) err_ = why;
  }

  const NameKind* find(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (auto it = s->rbegin(); it != s->rend(); ++it)
        if (it->first == name) return &it->second;
    return nullptr;
  }

  // A loop's bounds, its variable in scope in its body.
  void list_loop(const Stmt& s) {
    ex(s.lo);
    ex(s.hi);
    ex(s.step);
    if (s.name.empty()) fail("a loop without a variable");
    if ((s.loop == LoopKind::Vectorized || s.loop == LoopKind::Unrolled) &&
        (s.step->k != Ex::K::IntLit || s.step->ival <= 0))
      fail("vectorized or unrolled loop '" + s.name + "' without a positive literal step");
    scopes_.emplace_back();
    scopes_.back().push_back({s.name, NameKind::Scalar});
    list(s.body, false);
    scopes_.pop_back();
  }

  // A cooperative GpuBlocks loop (lower.h: LoopKind::GpuBlocks, threads >
  // 0): directly in its body only what every thread of the block runs
  // alike, and a Barrier between a statement that writes a GpuShared array
  // and any later one that touches it, and between one that reads it and
  // a later one that writes it (what a block's threads write to shared
  // memory, the others see only after a barrier, and a write must not
  // overtake another thread's read; within one statement this is not
  // checked). A Serial loop of uniform bounds there
  // is a cooperative body again, run around: its last statements are
  // followed by its first. GpuPrivate arrays are touched only by GpuThreads
  // loops of exactly the block's threads (each thread's own elements).
  void cooperative(const Stmt& loop) {
    ex(loop.lo);
    ex(loop.hi);
    ex(loop.step);
    scopes_.emplace_back();
    scopes_.back().push_back({loop.name, NameKind::Scalar});
    scopes_.emplace_back();
    Shared sh;
    cooperative_list(loop, loop.body, sh);
    if (released_)
      for (const auto& [name, kind] : scopes_.back())
        if (kind == NameKind::Heap) fail("allocation '" + name + "' is never released");
    scopes_.pop_back();
    scopes_.pop_back();
  }

  struct Shared {
    std::set<std::string> shared, priv;
    std::map<std::string, const Stmt*> written;  // shared array -> the statement that wrote it since the last Barrier
    std::map<std::string, const Stmt*> read;     // ... -> a statement that read it since then
  };

  // The statements of a cooperative body (the block's, or a uniform loop's in it).
  void cooperative_list(const Stmt& loop, const std::vector<StmtP>& list, Shared& sh) {
    for (size_t i = 0; i < list.size(); ++i) {
      const Stmt& s = *list[i];
      const bool uniform_assign = s.k == Stmt::K::Assign && s.target->k == Ex::K::Var;
      const bool uniform_loop = s.k == Stmt::K::For && s.loop == LoopKind::Serial && !s.cond;
      if (!(s.k == Stmt::K::Decl || uniform_assign || s.k == Stmt::K::Barrier || s.k == Stmt::K::Comment ||
            (s.k == Stmt::K::Alloc && (s.scope == Scope::GpuShared || s.scope == Scope::GpuPrivate)) ||
            (s.k == Stmt::K::For && s.loop == LoopKind::GpuThreads) || uniform_loop))
        fail("cooperative GpuBlocks loop '" + loop.name +
             "': a statement not run by every thread alike directly in its body (only uniform declarations and "
             "assignments, shared and private allocations, barriers, GpuThreads loops and uniform loops of them)");
      if (s.k == Stmt::K::Alloc) (s.scope == Scope::GpuShared ? sh.shared : sh.priv).insert(s.name);
      if (s.k == Stmt::K::Barrier) {
        sh.written.clear();
        sh.read.clear();
      }
      if (uniform_loop) {
        ex(s.lo);
        ex(s.hi);
        ex(s.step);
        scopes_.emplace_back();
        scopes_.back().push_back({s.name, NameKind::Scalar});
        // Twice round: what the end of one iteration writes, the start of
        // the next may touch.
        Shared round = sh;
        cooperative_list(loop, s.body, round);
        scopes_.back().resize(1);
        cooperative_list(loop, s.body, round);
        scopes_.pop_back();
        sh.written = round.written;
        sh.read = round.read;
        continue;
      }
      std::set<std::string> reads, writes, priv_r, priv_w;
      touches(s, sh.shared, reads, writes);
      touches(s, sh.priv, priv_r, priv_w);
      if ((!priv_r.empty() || !priv_w.empty()) &&
          !(s.k == Stmt::K::For && s.loop == LoopKind::GpuThreads && s.hi->k == Ex::K::IntLit &&
            s.hi->ival == loop.threads))
        fail("cooperative GpuBlocks loop '" + loop.name + "': private array '" +
             *(priv_r.empty() ? priv_w : priv_r).begin() +
             "' touched other than by a GpuThreads loop of exactly the block's threads");
      for (const std::set<std::string>* set : {&reads, &writes})
        for (const std::string& a : *set) {
          auto w = sh.written.find(a);
          if (w != sh.written.end() && w->second != &s)
            fail("cooperative GpuBlocks loop '" + loop.name + "': shared array '" + a +
                 "' written by one statement and touched by a later one without a Barrier between");
        }
      for (const std::string& a : writes) {
        auto r = sh.read.find(a);
        if (r != sh.read.end() && r->second != &s)
          fail("cooperative GpuBlocks loop '" + loop.name + "': shared array '" + a +
               "' read by one statement and written by a later one without a Barrier between");
        sh.written[a] = &s;
      }
      for (const std::string& a : reads) sh.read[a] = &s;
      stmt(s, false, false, true);
    }
  }

  // The GpuShared arrays of `shared` that s reads and writes.
  static void touches(const Stmt& s, const std::set<std::string>& shared, std::set<std::string>& reads,
                      std::set<std::string>& writes) {
    std::function<void(const ExP&)> loads = [&](const ExP& e) {
      if (!e) return;
      if (e->k == Ex::K::Load && shared.count(e->name)) reads.insert(e->name);
      for (const ExP& a : e->args) loads(a);
    };
    for (const ExP* e : {&s.lo, &s.hi, &s.step, &s.init, &s.value, &s.count, &s.cond}) loads(*e);
    if (s.target) {
      if (s.target->k == Ex::K::Load && shared.count(s.target->name)) writes.insert(s.target->name);
      for (const ExP& a : s.target->args) loads(a);
    }
    for (const std::vector<StmtP>* l : {&s.body, &s.else_body})
      for (const StmtP& c : *l) touches(*c, shared, reads, writes);
  }

  // A GpuThreads loop: its iterations' threads keep what they declare to
  // themselves, and assign nothing declared outside it.
  void threads_loop(const Stmt& s) {
    std::function<void(const std::vector<StmtP>&, std::set<std::string>)> walk =
        [&](const std::vector<StmtP>& l, std::set<std::string> inside) {
          for (const StmtP& c : l) {
            if (c->k == Stmt::K::Decl || c->k == Stmt::K::Alloc) inside.insert(c->name);
            if (c->k == Stmt::K::Barrier) fail("a Barrier inside GpuThreads loop '" + s.name + "'");
            if (c->k == Stmt::K::Assign && c->target->k == Ex::K::Var && !inside.count(c->target->name))
              fail("GpuThreads loop '" + s.name + "' assigns '" + c->target->name + "', declared outside it");
            std::set<std::string> in = inside;
            if (c->k == Stmt::K::For) in.insert(c->name);
            walk(c->body, in);
            walk(c->else_body, in);
          }
        };
    walk(s.body, {s.name});
    list_loop(s);
  }

  // A loop marked pairwise (Stmt::pairwise): before the pairwise pass, a
  // Serial or Vectorized loop in steps of 1; its parts' registers in scope
  // and their arrays allocations in scope, only inside a Parallel loop.
  // (That it carries float sum registers only, each with a part in the
  // parallel form, the pairwise pass checks: it finds what it carries.)
  void pairwise(const Stmt& s) {
    if (summed_) return fail("loop '" + s.name + "' marked pairwise after the pairwise pass");
    if ((s.loop != LoopKind::Serial && s.loop != LoopKind::Vectorized) || s.step->k != Ex::K::IntLit ||
        s.step->ival != 1)
      fail("pairwise loop '" + s.name + "' not a serial or vectorized loop in steps of 1");
    if (!s.splits.empty() || !s.simd_reductions.empty()) fail("pairwise loop '" + s.name + "' with splits or a simd clause");
    if (!s.pairwise) fail("pairwise parts on loop '" + s.name + "', which is not marked pairwise");
    const bool parts = !s.pairwise_parts.empty();
    for (const auto& [reg, part] : s.pairwise_parts) {
      const NameKind* k = find(reg);
      if (!k || *k != NameKind::Scalar) fail("pairwise sum '" + reg + "' is not a register in scope");
      const NameKind* a = find(part);
      if (!a || (*a != NameKind::Array && *a != NameKind::Heap))
        fail("pairwise partials '" + part + "' are not an allocation in scope");
    }
    if (parts && !in_parallel_) fail("pairwise loop '" + s.name + "' with partials outside a Parallel loop");
  }

  void register_in_scope(const std::string& name) {
    const NameKind* k = find(name);
    if (!k || *k != NameKind::Scalar) fail("simd clause or split of '" + name + "', not a register in scope");
  }

  bool is_pointer(const std::string& name) const {
    if (name.size() < 2 || name[0] != 'p') return false;
    for (size_t i = 1; i < name.size(); ++i)
      if (name[i] < '0' || name[i] > '9') return false;
    return std::stoll(name.substr(1)) < ptrs_;
  }

  void declare(const std::string& name, NameKind k) {
    for (const auto& [n, kind] : scopes_.back())
      if (n == name && kind != NameKind::Freed) fail("'" + name + "' declared twice in one statement list");
    scopes_.back().push_back({name, k});
  }

  void ex(const ExP& e) {
    if (!e) return;
    switch (e->k) {
      case Ex::K::Var: {
        const NameKind* k = find(e->name);
        if (!k || *k == NameKind::Freed) fail("'" + e->name + "' used where it is not declared");
        break;
      }
      case Ex::K::Load: {
        if (e->args.size() != 1) fail("a load of '" + e->name + "' takes one index");
        const NameKind* k = find(e->name);
        if (!is_pointer(e->name) && (!k || (*k != NameKind::Array && *k != NameKind::Heap)))
          fail("'" + e->name + "' is loaded but is neither a kernel pointer nor a live allocation");
        break;
      }
      case Ex::K::Arith:
        if (e->args.size() != 2) fail("index arithmetic takes two operands");
        if (std::string("+-*/%<mM&").find(e->op) == std::string::npos) fail(std::string("index operator '") + e->op + "'");
        break;
      case Ex::K::TileBound:
        if (!in_split_) fail("a TileBound outside a FullSplit");
        if (e->args.size() != 2) fail("a TileBound without its two bounds");
        break;
      case Ex::K::Address:
        if (e->args.size() != 1 || !is_pointer(e->name)) fail("an address not of a kernel pointer and a byte offset");
        break;
      case Ex::K::Combine:
        if (e->args.size() != 2 && e->args.size() != 4) fail("a combine takes two or four operands");
        break;
      case Ex::K::Scalar:
        if (e->args.empty()) fail("a scalar operation without operands");
        break;
      case Ex::K::ThreadIndex:
      case Ex::K::ThreadCount:
        if (!in_cores_) fail("thread index or count outside a Cores loop");
        break;
      default: break;
    }
    for (const ExP& a : e->args) ex(a);
  }

  void list(const std::vector<StmtP>& body, bool top, bool cores_body = false) {
    scopes_.emplace_back();
    for (const StmtP& s : body) stmt(*s, top, cores_body);
    if (released_)
      for (const auto& [name, kind] : scopes_.back())
        if (kind == NameKind::Heap) fail("allocation '" + name + "' is never released");
    scopes_.pop_back();
  }

  void stmt(const Stmt& s, bool top, bool cores_body, bool block_body = false) {
    if (s.accumulates && s.k != Stmt::K::Decl &&
        (s.k != Stmt::K::Assign || s.target->k != Ex::K::Load || s.accumulates->reg.empty()))
      fail("an accumulator mark on a statement that neither declares a register nor combines into memory");
    if (s.accumulates && s.k == Stmt::K::Decl && (s.accumulates->index_at || !s.accumulates->reg.empty()))
      fail("register '" + s.name + "' marked as a memory combine");
    switch (s.k) {
      case Stmt::K::Block:
        list(s.body, false);
        return;
      case Stmt::K::Decl:
        ex(s.init);
        declare(s.name, NameKind::Scalar);
        return;
      case Stmt::K::Assign:
        ex(s.value);
        if (s.target->k != Ex::K::Var && s.target->k != Ex::K::Load) fail("assignment to an expression");
        ex(s.target);
        return;
      case Stmt::K::Alloc:
        ex(s.count);
        if (!s.count) fail("allocation '" + s.name + "' without a count");
        if (s.scope == Scope::Local && (s.count->k != Ex::K::IntLit || s.count->ival <= 0) && released_)
          fail("Local allocation '" + s.name + "' of a count not a positive literal");
        if (s.scope == Scope::Kernel && in_cores_) fail("Kernel allocation '" + s.name + "' inside a Cores loop");
        if ((s.scope == Scope::GpuShared || s.scope == Scope::GpuPrivate) &&
            (!block_body || s.count->k != Ex::K::IntLit || s.count->ival <= 0))
          fail(std::string(s.scope == Scope::GpuShared ? "GpuShared" : "GpuPrivate") + " allocation '" + s.name +
               "' not of a literal count directly in a cooperative GpuBlocks loop's body");
        declare(s.name, s.scope == Scope::Thread || s.scope == Scope::Kernel ? NameKind::Heap : NameKind::Array);
        return;
      case Stmt::K::Free: {
        if (!released_) fail("a Free before the storage pass");
        for (auto& [name, kind] : scopes_.back())
          if (name == s.name && kind == NameKind::Heap) {
            kind = NameKind::Freed;
            return;
          }
        fail("Free of '" + s.name + "', not a live heap allocation of this statement list");
        return;
      }
      case Stmt::K::Barrier:
        if (block_body) return;  // (a block's uniform variables are seen after it)
        if (no_barriers_) fail("a Barrier after the target's barrier pass");
        if (!cores_body) fail("a Barrier not directly in a Cores loop's body or a cooperative GpuBlocks loop's");
        // What a thread declared before the barrier is not seen after it.
        for (auto& [name, kind] : scopes_.back())
          if (kind == NameKind::Heap) fail("allocation '" + name + "' live across a Barrier");
        scopes_.back().clear();
        return;
      case Stmt::K::Comment:
        return;
      case Stmt::K::Stage: {
        if (s.args.size() != s.arg_types.size()) fail("a Stage's pointers and their types differ in number");
        for (const ExP& a : s.args) {
          if (a->k != Ex::K::Address && !(a->k == Ex::K::IntLit && a->ival == 0))
            fail("a Stage's pointer is neither an address nor null");
          ex(a);
        }
        const NameKind* k = find(s.name);
        if (!k || *k != NameKind::Array) fail("a Stage's int parameters '" + s.name + "' are not a live Local array");
        // Its body is a function of its own: it sees its pointers only.
        auto outer = std::move(scopes_);
        scopes_.clear();
        const int outer_ptrs = ptrs_;
        const bool outer_cores = in_cores_;
        ptrs_ = static_cast<int>(s.args.size());
        in_cores_ = false;
        list(s.body, false);
        scopes_ = std::move(outer);
        ptrs_ = outer_ptrs;
        in_cores_ = outer_cores;
        return;
      }
      case Stmt::K::TileIn: {
        if (tiled_) fail("a TileIn after the tile_buffers pass");
        if (!s.tile) {
          fail("a TileIn without its tile");
          return;
        }
        const TileSpec& c = *s.tile;
        const size_t n = c.layout.size();
        if (c.base.size() != n || c.size.size() != n || c.end.size() != n || c.block.size() != n ||
            c.block_loop.size() != n)
          fail("TileIn '" + c.name + "': its layout entries differ in number");
        if (c.point.size() != c.kind.size() || c.stride.size() != c.kind.size())
          fail("TileIn '" + c.name + "': its point and memory layout differ in dimensions");
        if (!is_pointer(c.ptr)) {
          const NameKind* a = c.output ? find(c.ptr) : nullptr;
          if (!a || (*a != NameKind::Array && *a != NameKind::Heap))
            fail("TileIn '" + c.name + "' of '" + c.ptr + "', not a kernel pointer" +
                 (c.output ? " or an allocation in scope" : ""));
        }
        if (c.full_split && !in_split_) fail("TileIn '" + c.name + "' whole on a full path outside a FullSplit");
        for (size_t k = 0; k < n; ++k) {
          ex(c.base[k]);
          ex(c.size[k]);
          ex(c.end[k]);
        }
        return;
      }
      case Stmt::K::FullSplit:
        if (unrolled_) fail("a FullSplit after the unroll pass");
        if (in_split_) fail("a FullSplit inside a FullSplit");
        if (!s.cond) fail("a FullSplit without a condition");
        ex(s.cond);
        ++in_split_;
        list(s.body, false);
        --in_split_;
        return;
      case Stmt::K::If:
        ex(s.cond);
        if (!s.cond) fail("an If without a condition");
        list(s.body, false);
        list(s.else_body, false);
        return;
      case Stmt::K::For: {
        if (!s.lo || !s.hi || !s.step) fail("a loop without bounds");
        if (s.unroll && !in_split_) fail("loop '" + s.name + "' marked for the full path outside a FullSplit");
        if (!s.splits.empty() && (split_ || s.loop != LoopKind::Vectorized))
          fail(split_ ? "a loop's splits left after the vectorize pass" : "splits on a loop that is not Vectorized");
        if ((!s.splits.empty() || !s.simd_reductions.empty()) && !simd_)
          fail("loop '" + s.name + "' with a simd clause or splits before the simd pass");
        for (const auto& [v, op] : s.simd_reductions) register_in_scope(v);
        for (const Stmt::Split& r : s.splits) register_in_scope(r.acc);
        if (s.pairwise || !s.pairwise_parts.empty()) pairwise(s);
        if (s.loop == LoopKind::Cores) {
          if (!top) fail("a Cores loop below the kernel's top level");
          if (s.lo->k != Ex::K::IntLit || s.lo->ival != 0 || s.hi->k != Ex::K::ThreadCount ||
              s.step->k != Ex::K::IntLit || s.step->ival != 1)
            fail("a Cores loop not over [0, thread_count)");
          ex(s.cond);
          in_cores_ = true;
          list(s.body, false, true);
          in_cores_ = false;
          if (!s.name.empty()) declare(s.name, NameKind::Scalar);
          return;
        }
        if (!s.share_reductions.empty()) {
          if (privatized_) fail("share reductions on loop '" + s.name + "' after the partials pass");
          if (s.loop != LoopKind::Parallel) fail("share reductions on loop '" + s.name + "', which is not Parallel");
          for (const Stmt::ShareReduction& r : s.share_reductions)
            for (const std::string& a : {r.array, r.index}) {
              const NameKind* k = a.empty() ? nullptr : find(a);
              if (!a.empty() && (!k || *k != NameKind::Heap))
                fail("share reduction '" + a + "' of loop '" + s.name + "' is not a Kernel allocation in scope");
            }
        }
        if (s.loop == LoopKind::GpuBlocks || s.loop == LoopKind::GpuThreads) {
          if (s.lo->k != Ex::K::IntLit || s.lo->ival != 0 || s.step->k != Ex::K::IntLit || s.step->ival != 1)
            fail("GPU loop '" + s.name + "' not from 0 in steps of 1");
          if (s.cond) fail("GPU loop '" + s.name + "' with a condition");
          if (s.loop == LoopKind::GpuThreads) {
            if (!block_body) fail("GpuThreads loop '" + s.name + "' not directly in a cooperative GpuBlocks loop's body");
            threads_loop(s);
            return;
          }
          if (!top) fail("a GPU loop below the kernel's top level");
          if (s.threads < 0) fail("GpuBlocks loop '" + s.name + "' with a negative thread count");
          in_parallel_ = true;
          if (s.threads > 0) cooperative(s);
          else list_loop(s);
          in_parallel_ = false;
          return;
        }
        if (s.loop == LoopKind::Parallel) {
          if (parallelized_) fail("a Parallel loop after the target's thread pass (parallelize, gpu_grid)");
          if (!top) fail("a Parallel loop below the kernel's top level");
          if (s.lo->k != Ex::K::IntLit || s.lo->ival != 0 || s.step->k != Ex::K::IntLit || s.step->ival != 1)
            fail("Parallel loop '" + s.name + "' not from 0 in steps of 1");
          if (s.cond) ex(s.cond);
          in_parallel_ = true;
          list_loop(s);
          in_parallel_ = false;
          return;
        }
        list_loop(s);
        return;
      }
    }
  }
};

}  // namespace

std::string verify(const LoopNest& n, const std::vector<std::string>& ran) { return Verifier(n, ran).run(); }

std::string verify(const LoopNest& n, const std::string& after) {
  // The passes before `after` in lower()'s order for one kernel: build, the
  // common passes, compose, then a target's tail (the CPU's parallelize,
  // cpu_barriers and math_blocks, or CUDA's gpu_grid).
  static const std::vector<std::vector<std::string>> orders = [] {
    std::vector<std::string> o = {"build"};
    for (const Pass& p : passes::common()) o.push_back(p.name);
    o.push_back("compose");
    std::vector<std::string> cpu = o, gpu = o;
    for (const char* p : {"parallelize", "cpu_barriers", "math_blocks"}) cpu.push_back(p);
    gpu.push_back("gpu_grid");
    return std::vector<std::vector<std::string>>{cpu, gpu, {"build_stores"}};
  }();
  for (const std::vector<std::string>& o : orders) {
    auto it = std::find(o.begin(), o.end(), after);
    if (it != o.end()) return verify(n, std::vector<std::string>(o.begin(), it + 1));
  }
  throw std::logic_error("verify: no pass named '" + after + "'");
}

}  // namespace nf::lower

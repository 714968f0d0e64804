// Internal to the lower stage: the Lowerer (the `build` pass of passes.h)
// and the IR builders the passes share. The build pass's parts live in their
// own files:
//   loops.cc      - the loop nest (tiles, the Parallel loop over shares and each share's part,
//                   the FullSplit below unrolled loops' parents, with the
//                   bounds of both its paths) and the point body;
//   reductions.cc - where each reduction output combines (its element's
//                   register, or memory -- the output or a scratch array,
//                   the one a parallel loop's shares combine into listed
//                   for the partials pass -- with each combine marked for
//                   the partials, tile_buffers and promote passes) and the
//                   scratch results written to the output;
//   caches.cc     - local tile buffers: where each lives and its layout, the
//                   requests for them (TileIn, made by the tile_buffers
//                   pass: tile_buffers.cc), and the loops over a tile it
//                   uses;
// (tile_buffers.cc, promote.cc, simd.cc and pairwise.cc are the passes that
// take build's marks: the tile requests, the memory combines, the Vectorized
// loops and the registers they may combine into, the loops of NumPy's
// pairwise summation.)
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lower/lower.h"

namespace nf::lower::detail {

ExP arith(char op, ExP a, ExP b);
ExP int_param(int slot, DType t = DType::Int64);
ExP float_param(int slot, DType t);
ExP load(const std::string& arr, ExP index, DType t);
ExP scalar(const ExprNode& n, std::vector<ExP> args);
ExP cast(ExP x, DType t);
ExP combine(ReduceOp op, DType t, ExP a, ExP b);
// Arg-reductions: true when (v, vi) should replace (acc, ai).
// Whether (v, vi) beats (acc, ai) in an arg-reduction. `later`: vi is no
// smaller than any index already in (acc, ai) (see spell_arg_better).
ExP arg_better(ReduceOp op, DType t, ExP acc, ExP ai, ExP v, ExP vi, bool later = false);
ExP scalar_lit(const Scalar& s, DType t);
// The address `bytes` bytes after the start of kernel pointer `ptr` (Ex::K::Address).
ExP address(const std::string& ptr, ExP bytes);
ExP select(ExP cond, ExP a, ExP b, DType t);
StmtP block();
StmtP decl(DType t, const std::string& name, ExP init);
StmtP local_array(DType t, const std::string& name, int64_t len);  // a Local Alloc
StmtP assign(ExP target, ExP value);
StmtP for_loop(const std::string& v, ExP lo, ExP hi, ExP step);
StmtP if_else(ExP cond);
StmtP alloc(DType t, const std::string& name, ExP count, Scope scope);
// The nest below a full-tile / remainder split, and a bound that differs
// between its paths (lower.h: Stmt::K::FullSplit, Ex::K::TileBound).
StmtP full_split(ExP cond);
// A deep copy of the statement with `f` applied to each of its expressions
// (lo, hi, step, init, target, value, count, cond, args) and then `g`, if
// given, to each copied statement.
StmtP copy_stmt(const StmtP& s, const std::function<ExP(const ExP&)>& f,
                const std::function<void(Stmt&)>& g = nullptr);
// `e` rebuilt bottom-up: each node with its arguments rewritten, then
// `rule` applied to it (a null result keeps the node). Subtrees that do not
// change are shared, not copied.
ExP rewrite_ex(const ExP& e, const std::function<ExP(const ExP&)>& rule);
ExP tile_bound(ExP full, ExP clipped);
// The number of nodes of NumPy's pairwise tree over n points that `shares`
// shares take in turn, declared as pw_P (pairwise.cc).
void pairwise_nodes(std::vector<StmtP>& out, ExP n, ExP shares);
// A Cores loop (lower.h) running on several threads only when `cond` holds.
StmtP cores_loop(ExP cond);
StmtP barrier();
StmtP free_stmt(const std::string& name);
bool is_arg(ReduceOp op);
// (target, itarget) <- (target, itarget) (+) (v, vi), combined in type t:
// an arg-reduction's full test (flag `flag`: whether (v, vi) wins; the
// vectorize pass shortens it inside lanes), else one Assign.
void combine_into(std::vector<StmtP>& out, ReduceOp op, DType t, const std::string& flag, ExP target, ExP itarget,
                  ExP v, ExP vi);
// Structural equality of expressions.
bool same_ex(const ExP& a, const ExP& b);
// A deep copy of the statement (copy_stmt rewriting nothing).
StmtP copy(const StmtP& s);
// A loop's body with the single Blocks build puts around it unwrapped.
std::vector<StmtP> unwrapped_body(const Stmt& loop);
// The names a statement list declares directly (scalars and arrays): the
// kernel's top level, seen by every iteration of its loops.
std::set<std::string> top_names(const std::vector<StmtP>& body);
// Whether e reads only the variables of `top` and the parameters (no
// memory, no thread expression): the same value wherever it is evaluated.
bool top_only(const ExP& e, const std::set<std::string>& top);
// The arg index registers of the accumulator registers the list declares.
std::set<std::string> index_registers(const std::vector<StmtP>& body);
// Whether e mentions a variable named in `names`.
bool mentions(const ExP& e, const std::set<std::string>& names);

// What a loop's iterations carry from one to the next (simd.cc): the
// registers in scope (Decls marked Stmt::accumulates, by name) its body
// assigns, in the order it first combines into them (a register's arg
// index register counts as the register), and whether it assigns anything
// else declared outside it or updates memory at an index that does not
// move with it.
using Registers = std::map<std::string, const Stmt*>;
struct Carried {
  std::vector<const Stmt*> regs;
  bool other = false;
};
Carried carried(const Stmt& loop, const Registers& regs);
// Whether index e steps by one element with variable v: a sum one of whose
// terms is v (or v * 1) (gpu_blocks.cc).
bool unit_term(const ExP& e, const std::string& v);
// Whether loop f reads memory contiguously along its variable (gpu_blocks.cc):
// some load's index a sum with the loop's variable (or it times 1) as a term.
bool reads_along(const Stmt& f);
// The OpenMP simd reduction operator for a combine, or 0 if there is none.
char simd_op(ReduceOp op, DType t);

// A parallel schedule's share (the Parallel loop's variable, loops.cc) and
// the number of shares (declared at the kernel's top): MaxThreads when the
// loop's work is worth several threads, else 1 -- one share, whose partial
// is the serial loop's result (NumPy's order for a small sum).
inline constexpr const char* kShare = "nf_s";
inline constexpr const char* kShares = "nf_shares";

// How one reduction output is combined.
struct RedPlan {
  int out = 0;              // index in h.outputs
  bool reg = false;         // register accumulator (a share's: combined into scratch after its loops)
  int reg_pos = -1;         // it lives in the body of order[reg_pos] (-1: top of thread body)
  bool partials = false;    // the parallel loop runs over one of its point-wise dims: the shares
                            // combine into one scratch array (partials pass: one copy per share)
  bool scratch = false;     // memory accumulation in a dense scratch array
  int tile = -1;            // index into Lowerer::caches_ when the schedule caches this output
  std::string acc, idx;     // memory accumulator / arg-index arrays (scratch, partials)
  std::string racc, ridx;   // register accumulator / arg-index
  std::vector<int> cdims;   // its concatenated dims
};

// A local tile buffer (tune::Cache, resolved against the loop nest): its
// layout and memory side (lower.h: TileSpec), and where it lives. It becomes
// a TileIn request (the tile_buffers pass makes an input's copy, an
// output's accumulation tile).
struct CachePlan : TileSpec {
  int access = 0;
  int pos = -1;                // lives in the body of order[pos]
};

// Loops over a whole tile (copy-in, init, fold): whole (Clip::No), clipped to
// the extent (Clip::Yes), or clipped only on the remainder path of the
// FullSplit they are in (Clip::Split: the tile is whole on the full path).
// Fills `off` (offset from the tile's base, per layout entry) and `index`
// (position in the tile); returns the innermost body (caches.cc).
struct TileWalk {
  std::vector<ExP> off;
  ExP index;
};
enum class Clip { No, Yes, Split };
std::vector<StmtP>* tile_loops(std::vector<StmtP>& out, const TileSpec& c, Clip clip, TileWalk& w);
// Position of point idx in the tile, inside every loop below it.
ExP tile_index(const TileSpec& c, const std::vector<ExP>& idx);
// The tile's elements (a run-time count where some size is).
ExP tile_count(const TileSpec& c);
// The input's element at point idx in memory (TileSpec: kind, stride).
ExP memory_index(const TileSpec& c, const std::vector<ExP>& idx);

class Lowerer {
 public:
  Lowerer(const mdh::MdHom& h, const tune::Schedule& s) : h_(h), s_(s) {}
  LoopNest run(const std::string& name);
  // The scalar prologue alone, its stores unguarded (passes.h, build_stores).
  LoopNest run_stores(const std::string& name);

 private:
  const mdh::MdHom& h_;
  const tune::Schedule& s_;
  std::vector<RedPlan> plans_;
  std::vector<CachePlan> caches_;
  int branch_pos_ = -1;  // where the full-tile / remainder split happens (-1: none)

  // names
  static std::string ptr(int access) { return "p" + std::to_string(access); }
  static std::string loop_var(const tune::LoopSpec& l) {
    return "i" + std::to_string(l.dim) + "_" + std::to_string(l.level);
  }
  std::string point(int d) const { return "i" + std::to_string(d) + "_" + std::to_string(s_.levels(d) - 1); }
  static ExP extent(int d) { return var("n" + std::to_string(d)); }

  // loops.cc
  void emit_loops(std::vector<StmtP>& out, int i, bool split);
  void emit_loops_level(std::vector<StmtP>& out, int i, bool split);
  void emit_body(std::vector<StmtP>& out, int i, bool split);
  void emit_grid(std::vector<StmtP>& out, bool split);
  ExP grid_steps(int q) const;
  void emit_point(std::vector<StmtP>& out);
  void emit_prologue(std::vector<StmtP>& top, bool guarded = true);
  ExP parallel_cond() const;
  ExP node_value(size_t n, const std::vector<ExP>& idx, const std::vector<ExP>& val) const;

  // NumPy's pairwise sums (reductions.cc; the pairwise pass rewrites the
  // loops build marks): the sums the innermost loop can run pairwise.
  std::vector<const RedPlan*> pairwise_sums(int i) const;
  // The one loop is parallel and every reduction over it is a float sum kept
  // in a register: the shares take nodes of NumPy's pairwise tree (the
  // partials and pairwise passes).
  bool pairwise_parallel_ = false;
  bool unrolled(int pos) const;
  // Exclusive end of the range loop (d, level) iterates: the parent tile
  // clipped to the parent's own range (tiles need not divide each other).
  ExP end_of(int d, int level) const;
  ExP full_tile_condition() const;
  std::vector<ExP> point_vars() const;
  ExP access_index(int a, const std::vector<ExP>& idx) const;
  ExP dense_size(const std::vector<int>& dims) const;
  ExP dense_index(const std::vector<int>& dims, const std::vector<ExP>& idx) const;
  ExP const_value(int k) const;

  // reductions.cc
  void plan_reductions();
  ExP identity(const mdh::Output& o) const;
  ExP identity_or_init(const mdh::Output& o) const;
  void setup_reductions(std::vector<StmtP>& top);
  void init_output(std::vector<StmtP>& out, const RedPlan& r);
  void init_dense(std::vector<StmtP>& out, const mdh::Output& o, const RedPlan& r, ExP count);
  std::pair<ExP, ExP> memory_target(const RedPlan& r, const std::vector<ExP>& idx) const;
  void combine_memory(std::vector<StmtP>& out, const RedPlan& r, const std::vector<ExP>& idx, ExP v, ExP vi);
  std::vector<Stmt::ShareReduction> share_reductions() const;
  // Combines (v, vi) into (target, itarget) (an arg-reduction's full test;
  // the vectorize pass shortens it inside lanes).
  void update(std::vector<StmtP>& out, const mdh::Output& o, int tag, ExP target, ExP itarget, ExP v, ExP vi);
  void open_registers(std::vector<StmtP>& out, int i);
  void close_registers(std::vector<StmtP>& out, int i);
  void store_register(std::vector<StmtP>& out, const RedPlan& r);
  void finish(std::vector<StmtP>& out, const RedPlan& r);
  const RedPlan& plan_of(int output) const;

  // caches.cc
  void plan_caches();
  // `split`: inside the FullSplit, where tiles of unrolled loops' parents are
  // whole on the full path.
  void open_caches(std::vector<StmtP>& out, int i, bool split);
  bool tile_is_full(const CachePlan& c, bool split) const;
  int plan_of_access(int access) const;          // the reduction output writing `access`
};

}  // namespace nf::lower::detail

// LoopNest: the target-neutral loop IR between a scheduled MdHom and source.
//
// A kernel is one function `void name(char** p, const int64_t* ip,
// const double* fp)`: p holds one pointer per access (already offset), ip the
// integer parameters (extents, strides, integer constants), fp the floating
// constants. The body is a tree of statements; expressions are trees too.
// Nothing here is spelled for a target: loops say what may run at once
// (Loop), threads are expressions (ThreadIndex, ThreadCount, MaxThreads),
// memory says who sees it (Scope), and a Barrier orders the threads of a
// Cores loop. Each renderer (codegen/) chooses the spellings.
//
// Lowering (lower()) is a sequence of named passes over this IR, listed with
// their contracts in lower/passes.h; verify() checks the invariants below
// between passes in assertion builds, and NUMFUSE_DUMP=passes prints the nest
// after each one (print()).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/ops.h"
#include "mdh/mdh.h"
#include "tune/tune.h"

namespace nf::trace {
struct Program;
}

namespace nf::lower {

struct Ex;
using ExP = std::shared_ptr<const Ex>;

struct Ex {
  enum class K : uint8_t {
    Var,       // name
    IntLit,    // ival
    FloatLit,  // fval (in dtype; a complex dtype: fval + fimag i)
    IntParam,  // ip[slot]  (int64)
    FloatParam,// fp[slot]
    Load,      // name[args[0]]  (name = pointer or local array)
    Arith,     // int64 index arithmetic: args[0] op args[1]; op in "+-*/%<mM&" (m: min, M: max,
               // <: less, &: both nonzero; / and % of nonnegative operands)
    Scalar,    // a scalar operation of the ops vocabulary on args (node.kind Unary/Binary/Select/Cast)
    Combine,   // the reduction operator `rop` in type dtype applied to args[0], args[1]; an
               // arg-reduction's (acc, ai, v, vi) test, with ival 1 when vi comes later (spell_arg_better)
    ThreadIndex,  // int64: the iteration of the enclosing Cores loop this thread runs, in [0, ThreadCount)
    ThreadCount,  // int64: the threads running the enclosing Cores loop (its trip count)
    MaxThreads,   // int64: a bound on ThreadCount of any Cores loop of this kernel; valid anywhere
    Address,      // the address args[0] bytes after the start of kernel pointer `name` (a Stage's argument)
    TileBound,    // int64, only inside a FullSplit (between the build and unroll passes): args[0] on
                  // the split's full-tile path, args[1] (the bound clipped to the extent) on the other
  };
  K k;
  DType dtype = DType::Int64;
  std::string name;
  int64_t ival = 0;
  double fval = 0;
  double fimag = 0;  // FloatLit of a complex type: the imaginary part
  int slot = 0;      // FloatParam of a complex type: fp[slot] real, fp[slot + 1] imaginary
  char op = 0;
  ExprNode node{};  // for Scalar
  ReduceOp rop = ReduceOp::Sum;
  std::vector<ExP> args;
};

ExP var(const std::string& name, DType t = DType::Int64);
ExP lit(int64_t v);
ExP add(ExP a, ExP b);
ExP sub(ExP a, ExP b);
ExP mul(ExP a, ExP b);
ExP min(ExP a, ExP b);

ExP thread_index();
ExP thread_count();
ExP max_threads();

struct Stmt;
using StmtP = std::shared_ptr<Stmt>;
struct TileSpec;

// What a For loop's iterations may do at once. Every kind enumerates the
// same points; a kind only grants the target freedom.
enum class LoopKind : uint8_t {
  Serial,      // one iteration after another, in order. A literal step of 0
               // makes a while loop: it runs until its body sets var >= hi.
  Vectorized,  // iterations independent except for the updates of
               // `simd_reductions` (associative, may be reordered): they may
               // run on the SIMD lanes of one thread. (Between build and
               // the simd pass, a loop that may be: the simd pass decides
               // from what its iterations carry, passes.h.)
  Unrolled,    // a literal trip count; the body may be replicated.
  Cores,       // SPMD over the target's threads: var is unnamed, lo = 0,
               // hi = ThreadCount, step 1; each iteration runs on a thread of
               // its own, concurrently, and sees ThreadIndex / ThreadCount.
               // Iterations never wait for each other except at a Barrier
               // directly in the loop's body. With `cond` false at run time
               // it runs one iteration (ThreadCount 1). Only at the top
               // level of a kernel, never nested.
  Parallel,    // (build -> the target's parallelize pass, passes.h) iterations that may
               // run at once, each on one thread, in any order: lo = 0, step 1, `cond`
               // says whether running them on several threads pays. Only at the top
               // level of a kernel, never nested; no thread expression inside (its
               // iterations are the units of work -- a parallel schedule's shares --
               // and, from the partials pass on, what they combine is indexed by the
               // loop's variable; before it, the arrays they combine into are its
               // share_reductions).
  GpuBlocks,   // (CUDA target; gpu_blocks, gpu_grid) only at the top level: lo = 0, step 1,
               // no `cond`; iterations independent, run at once by the device's grid.
               // `threads` 0: each iteration on one thread (grid-stride). `threads` T > 0:
               // each iteration on one block of T threads (block-stride), a cooperative
               // body: every statement directly in it runs on all T threads alike -- only
               // uniform Decls and Assigns to them (the same values on every thread),
               // GpuShared and GpuPrivate Allocs, Barriers, GpuThreads loops, and Serial
               // loops of uniform bounds whose bodies hold only the same (a cooperative
               // body again, run by every thread alike) -- and all that a thread keeps
               // for itself lives inside a GpuThreads loop or in a GpuPrivate array.
  GpuThreads,  // (CUDA target) only directly in a cooperative body (above), lo = 0,
               // step 1: its iterations dealt out to the block's threads (thread x runs
               // x, x + T, ...), at once; nothing it declares is seen after it, and it
               // assigns no variable declared outside it. What one thread writes to a
               // GpuShared array another sees only after a Barrier between them.
};

// Who sees an allocation. An Alloc lives until the end of the statement list
// it is in; the storage pass makes the release of heap-backed scopes
// explicit (Free).
enum class Scope : uint8_t {
  Local,      // private to the thread that runs the Alloc, literal count
              // (registers / stack on the CPU)
  Thread,     // private to the thread, count known at run time (heap)
  Kernel,     // one allocation all threads of the kernel see; allocated
              // outside any Cores loop (heap on the CPU)
  GpuShared,  // (CUDA target) one per thread block, in shared memory: allocated directly
              // in a cooperative GpuBlocks loop's body, a literal count
  GpuPrivate, // (CUDA target) one per thread of a block, kept across the block's barriers:
              // allocated directly in a cooperative GpuBlocks loop's body, a literal count;
              // touched only inside GpuThreads loops of exactly the block's threads (each
              // thread's one iteration: its own elements). Registers where every index is
              // a constant after unrolling (the emulated device keeps one per thread).
};

struct Stmt {
  enum class K : uint8_t {
    Block,     // body
    For,       // for (int64 var = lo; var < hi; var += step) body
    Decl,      // dtype name [= init]: a scalar variable
    Assign,    // target = value  (target: Var or Load expression)
    Alloc,     // name: an array of `count` elements of dtype in memory `scope`
    Free,      // the end of Alloc name's lifetime (heap scopes, after the storage pass)
    Barrier,   // directly in a Cores loop's body or a cooperative GpuBlocks loop's: every
               // thread (of the block) finishes the statements before it before any
               // starts those after it; in a Cores loop, Local variables declared before
               // it are not seen after it (a block's uniform ones are)
    Comment,
    If,        // if (cond) body else else_body
    Stage,     // one stage of a multi-stage kernel (compose, passes.h): runs `body`, a
               // serial nest of its own, as a function of its own. Inside it p<i> is the
               // address args[i] (a pointer to arg_types[i]), ip[k] is the Local int64
               // array `name`'s element k, fp[k] is fp[fp_base + k]; nothing declared
               // outside it is seen inside. `contract`: fused multiply-add allowed.
    FullSplit, // `body`, below a full-tile / remainder split (build -> unroll, passes.h): `cond`
               // holds when every unrolled loop's tile lies inside its parent's range. The
               // unroll pass makes it `if (cond) full path else clipped path`; none remain after.
    TileIn,    // a request for a tile buffer (build -> tile_buffers, passes.h): `tile` says
               // which part of an input the statements after it in its list read; the
               // tile_buffers pass copies that part into a Local array there and has those
               // statements read the copy. An output's request (tile->output): the part
               // of the memory the marked combines after it update, which the pass
               // accumulates in a Local array set to the identity there and folds into
               // memory after them. None remain after that pass.
  };
  K k = K::Block;
  std::vector<StmtP> body;
  std::string name;
  DType dtype = DType::Int64;
  ExP lo, hi, step, init, target, value, count;
  LoopKind loop = LoopKind::Serial;  // For
  Scope scope = Scope::Local;  // Alloc
  // A Decl of a register a reduction combines into (build or promote ->
  // simd, passes.h): its operator, the register carrying its arg index (""
  // if none), and whether its points must combine in loop order (an ordered
  // floating-point product). From these the simd pass decides how each
  // Vectorized loop that combines into the register runs.
  // An Assign that combines a point into a memory element (build ->
  // promote): its target is the element, `index_at` the element holding
  // its arg index (an arg-reduction: the Assign is the last of its combine's
  // statements, null otherwise), and `reg` / `index` the registers the
  // promote pass keeps the element in where its index does not move with a
  // loop around the combine.
  struct Accumulator {
    ReduceOp op = ReduceOp::Sum;
    std::string index;
    bool ordered = false;
    ExP index_at;
    std::string reg;
  };
  std::shared_ptr<const Accumulator> accumulates;
  // A Vectorized loop's simd clause: (register, operator) pairs of the
  // associative combines its lanes may reorder (the simd pass's).
  std::vector<std::pair<std::string, char>> simd_reductions;
  // A Vectorized loop (simd -> vectorize, passes.h): registers combined
  // across its iterations that no simd clause serves, for the vectorize
  // pass to split -- floating-point sums into blocks, floating-point
  // max/min and arg-reductions (`index`: the arg register) into lanes.
  // None remain after the vectorize pass.
  struct Split {
    std::string acc, index;
    ReduceOp op = ReduceOp::Sum;
    DType dtype = DType::Float64;
  };
  std::vector<Split> splits;
  // A loop whose floating-point sums combine its points [lo, hi) in
  // NumPy's pairwise association (build -> pairwise, passes.h): every
  // register it carries (simd.cc: what a loop carries) is a floating-point
  // sum, declared outside it, and gets its sum of the points added once,
  // after the loop. `pairwise_parts` set (by the partials pass): the loop is the one loop of a
  // Parallel loop's body, and the shares take the nodes of NumPy's tree
  // over [lo, hi) in turn (node k by share k mod the shares), each node's
  // sum of a register stored to its part (register -> part array)[k]
  // instead (pairwise_nodes: how many nodes); every register it carries has
  // a part. None is marked after the pairwise pass.
  bool pairwise = false;
  std::vector<std::pair<std::string, std::string>> pairwise_parts;
  // A Parallel loop's reductions across its iterations (build -> partials,
  // passes.h): each a Kernel array allocated before the loop (with, for an
  // arg-reduction, the Kernel array of its arg indices) that every
  // iteration combines into -- marked memory combines, associative and
  // commutative -- at the same elements, and that nothing else in the loop
  // touches. `reg` set: the array has one element, and the loop's body is
  // a loop marked pairwise over the whole dimension summing register `reg`
  // (the iterations take the nodes of NumPy's tree, pairwise.cc), its sum
  // then added into the element. The partials pass gives every iteration
  // its own copy; none remain after it.
  struct ShareReduction {
    std::string array, index, reg;
    ReduceOp op = ReduceOp::Sum;
    DType dtype = DType::Float64;
  };
  std::vector<ShareReduction> share_reductions;
  // A loop inside a FullSplit whose trip count is a literal on the split's
  // full-tile path (build marks it, the simd pass may change `full_kind`;
  // -> unroll): there it runs as `full_kind`, without splits. None is
  // marked after the unroll pass.
  bool unroll = false;
  LoopKind full_kind = LoopKind::Unrolled;
  // A Serial loop the target must not unroll (numfuse.jit's programs,
  // lower_program: a short loop of literal trip count unrolled whole is
  // vectorized across its points with lanes past its end, whose
  // floating-point flags are no operation's of the program).
  bool keep_rolled = false;
  // A GpuBlocks loop: the threads of the block each iteration runs on (0:
  // one thread per iteration; lower.h: LoopKind::GpuBlocks).
  int64_t threads = 0;
  // A Cores or Parallel loop: run on several threads only when true. After
  // the CPU target's barrier pass, a Cores loop's `name` (if set) receives
  // the threads that ran it.
  std::string text; // Comment
  ExP cond;                       // If
  std::vector<StmtP> else_body;   // If
  std::vector<ExP> args;          // Stage: its pointers
  std::vector<DType> arg_types;   // Stage
  int fp_base = 0;                // Stage
  bool contract = false;          // Stage
  std::shared_ptr<const TileSpec> tile;  // TileIn
};

// A tile buffer of an input (Stmt::K::TileIn; the schedule's tune::Cache):
// the part of the input at pointer `ptr` that the loops after the request
// can touch -- per layout entry k (one of the input's dimensions), from
// base[k] for size[k] elements (a literal, or the whole extent), clipped at
// end[k] -- copied into the Local array `name`, laid out in `layout` order,
// with the packed entries' block numbers (block[k] > 0: blocks of that many,
// stepped by loop block_loop[k]) outermost in `outer`'s order. `full_split`:
// the request is in a FullSplit whose full path has the tile whole (its
// copy's bounds are TileBounds there). The tile's position of a point
// comes from `point` (per dimension: the point's index variable); the input
// in memory is at sum over dimensions of point[d] * stride[d] (kind[d] Zero:
// no term, Unit: point[d] itself, Param: times stride[d]).
// `output`: the tile accumulates what the marked memory combines
// (Stmt::accumulates) after the request combine into array `ptr` (a
// kernel pointer or a scratch allocation), each at the tile's element of
// its point; the memory element of a tile point is the combines' own
// target with the point put in (`kind` and `stride` unused).
struct TileSpec {
  std::string name, ptr;
  DType dtype = DType::Float64;
  int64_t count = 1;  // elements when every size is a literal (heap: false)
  bool heap = false;  // some size is only known at run time
  std::vector<int> layout;
  std::vector<ExP> base, size, end;
  std::vector<int64_t> block;
  std::vector<std::string> block_loop;
  std::vector<int> outer;
  bool full_split = false;
  bool output = false;
  std::vector<ExP> point;
  std::vector<mdh::StrideKind> kind;
  std::vector<ExP> stride;
};

struct LoopNest {
  std::string name;       // function name
  std::vector<StmtP> body;
  int num_ptrs = 0;
  std::vector<DType> ptr_types;
  bool uses_threads = false;  // has a Cores loop
  bool contract = false;  // fused multiply-add allowed (schedule.contract)
  bool wide = false;      // the target's widest vectors (schedule.wide)
  bool block_tiles = false;  // the grid in blocks of tiles where it can be (schedule.block_tiles; gpu_tiles)
  tune::GpuTile tile;        // their sizes (schedule.tile)
  int64_t block_threads = 0; // a reduction block's threads (schedule.block_threads; 0: Caps::block_threads)
  int64_t grid_threads = 0;  // a grid's blocks where each thread takes a point (schedule.grid_threads; 0: 256)
  // Source-level description for dumps.
  std::string description;
};

// What a target's machine offers the passes (pipeline/target.h:
// Target::caps): how its threads are organised, what they share, what
// each may keep to itself. Default-constructed: the host's CPU.
struct Caps {
  enum class Threads {
    Cores,  // a few threads, each taking a contiguous part (a Cores loop)
    Grid,   // a GPU's grid: blocks of threads, many thousands of them
  };
  Threads threads = Threads::Cores;
  int64_t max_block_threads = 1;  // threads that cooperate in a block (1: no blocks)
  // The threads of the blocks a reduction's work is shared by (passes.h:
  // gpu_blocks; a power of two, 0: none). The emulated device runs the same.
  int64_t block_threads = 0;
  int64_t shared_bytes = 0;       // memory a block's threads share (0: none)
  int vector_bytes = 32;          // a SIMD register's width (0: no SIMD lanes)
  bool fp_flags = true;           // kernels raise the floating-point flags NumPy warns from
  // A thread's private arrays in all (the CPU's worker stacks have a few
  // MiB; a GPU reserves local memory for every resident thread), beyond
  // which they go to the heap (passes.h: storage).
  int64_t private_bytes = int64_t(1) << 20;
};

// What every pass is handed besides the nest.
struct PassContext {
  Caps caps;
};

// A lowering pass: a named rewrite of the nest with a stated contract.
struct Pass {
  const char* name;
  void (*run)(LoopNest&, const PassContext&);
};

// ---------------------------------------------------------------------------
// Multi-stage kernels (fusion.h: Chain; HFAV's stencil chains, reductions
// feeding their consumers). Every stage is an MdHom whose dimension 0 is the
// chain's outer dimension (rows). One kernel runs them all: its Cores loop
// gives each thread a share of the last stage's rows, walked in tiles; for
// a tile [r0, r1) stage s computes its rows [r0 + lo_s, r1 + hi_s) clipped
// to [0, rows_s) (the halos lo_s, hi_s come from bounds inference over the
// bound views at launch: runtime.h, plan_chain), so every row a consumer
// reads for the tile is there. A tile link (an intermediate the chain keeps
// to itself) lives in a per-thread tile buffer of rows in the kernel's
// scratch. Its storage is a parameter (kStorage):
//   recompute (0) - each tile's buffer holds its rows from the first, the
//                   halo rows computed again by every tile;
//   rolling (1)   - the halo rows the thread's previous tile computed move
//                   to the front of the buffer (a memmove), only the new
//                   rows are computed;
//   ring (2)      - the buffer is a ring of cap rows, row q in slot q mod
//                   cap (HFAV's storage folding): every stage runs row by
//                   row, each row computed once and kept until its last
//                   reader has run, nothing moved.
// Column strips (kColTile < kCols; stencil chains; dimension 1 is the
// columns of 2-d stages, the rows of a plane of 3-d ones): each thread
// walks its rows once per strip of the last stage's columns, stage s
// computing its columns [c0 + clo_s, c1 + chi_s) of every row, so that a
// strip's rows of the tile buffers stay in the first-level cache. Without
// strips there is one, every stage's columns all of its own.
// The halos, tile size, storage, strips and buffer offsets are parameters:
// one compiled kernel serves every launch of the same structure.
//
// ChainShape is the structure (part of the kernel's key); its slot
// functions are the kernel's parameter layout, which the launcher fills.
struct ChainShape {
  struct Stage {
    std::vector<int> link;  // per access of its MdHom: the tile link it touches, -1 memory, -2 untouched
    int ints = 0, floats = 0;           // its parameters
    int extent0 = 0;                    // the int slot of its outer extent
    int extent1 = -1;                   // ... of its dimension 1 (columns), -1 if it has none
    int once = -1;                      // ... of its prologue's store guard (mdh.h, MdHom::once_guard), or -1
    // Per index affine: (offset slot, dimension-0 stride slot, dimension-1 stride slot or -1).
    std::vector<std::array<int, 3>> shifts;
    bool operator==(const Stage&) const = default;
  };
  struct Link {
    int producer = 0;
    bool copy = false;  // its owned rows are also copied to the buffer (the array Python holds)
    bool operator==(const Link&) const = default;
  };
  std::vector<Stage> stages;
  std::vector<Link> links;  // the tile links only (a Full link is memory)

  // ip: the launch's parameters, then each stage's own.
  static constexpr int kRoot = 0;      // rows of the last stage
  static constexpr int kThreads = 1;   // threads that get rows (the rest return at once)
  static constexpr int kTileRows = 2;  // rows of the last stage per tile
  static constexpr int kStorage = 3;   // 0 recompute, 1 rolling, 2 ring (above)
  static constexpr int kScratch = 4;   // scratch bytes per thread
  static constexpr int kCols = 5;      // columns of the last stage
  static constexpr int kColTile = 6;   // columns per strip (kCols: one strip)
  static constexpr int kHeader = 7;
  // rows_s, lo_s, hi_s, cols_s, clo_s, chi_s
  int stage_slot(int s) const { return kHeader + 6 * s; }
  // The tile buffer's offset in a thread's scratch, the bytes from one of
  // its rows to the next (padded: rows a power of two apart would share
  // the first-level cache's sets), its rows, the array's bytes per row.
  int link_slot(int l) const;
  // Memory: its bytes per row, -, its bytes per column. A link: its first
  // element's row and byte within the row, in the buffer's rows (the
  // Python array's layout), its bytes per column.
  int access_slot(int s, int i) const;
  int ints_at(int s) const;      // the stage's own int parameters
  int num_ints() const;
  int floats_at(int s) const;
  int num_floats() const;
  // Pointers (bytes): each stage's memory accesses (already offset), each
  // copy link's buffer, then the scratch of all threads.
  int ptr_of(int s, int i) const;
  int copy_ptr(int l) const;
  int scratch_ptr() const;
  int num_ptrs() const;
  std::string key() const;
  bool operator==(const ChainShape&) const = default;
};

// What one kernel computes: its stages, each a scheduled MdHom (each
// schedule legal for its MdHom). One stage without a shape is a group's
// kernel (its schedule may be parallel); with a ChainShape the stages are a
// multi-stage kernel's (serial schedules: compose makes the Cores loop).
struct KernelSpec {
  std::vector<const mdh::MdHom*> stages;
  std::vector<tune::Schedule> schedules;
  const ChainShape* shape = nullptr;
  static KernelSpec one(const mdh::MdHom& h, const tune::Schedule& s) { return {{&h}, {s}, nullptr}; }
};

// Lower a kernel, the one entry to the pass pipeline (passes.h): each
// stage's build and the common passes; for a multi-stage kernel then
// compose and simplify; then the target's `tail`. The nest is printed
// (NUMFUSE_DUMP=passes) and verified (assertion builds) after every pass.
LoopNest lower(const KernelSpec& k, const std::string& name, const std::vector<Pass>& tail = {},
               const Caps& caps = Caps{});

// A traced program (trace/trace.h: numfuse.jit) as one serial kernel: its
// loops in order, each operation a loop nest over its domain (an
// elementwise one storing each point, a reduction combining its reduced
// dimensions into a register, NumPy's pairwise order for a float sum along
// the innermost dimension), every extent, offset and stride an affine
// expression of the loops' counters. Pointer k is the program's slot k.
// Then the pairwise and simplify passes.
LoopNest lower_program(const trace::Program& p, const std::string& name);

// The nest as indented text, one statement per line (NUMFUSE_DUMP=passes).
std::string print(const LoopNest& n);
// The IR's invariants (see the kinds above); "" or the first violation.
// `ran`: the passes that made n, in order (some rules hold only after a
// pass); lower()'s driver keeps them per nest.
std::string verify(const LoopNest& n, const std::vector<std::string>& ran);
// The same, for a nest made by lower()'s passes up to `after` (build, the
// common passes, compose, then the CPU's tail or CUDA's; or build_stores).
std::string verify(const LoopNest& n, const std::string& after);
// Print the nest after every pass to stderr (NUMFUSE_DUMP=passes).
void set_dump_passes(bool on);
bool dump_passes();

}  // namespace nf::lower

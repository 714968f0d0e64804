// The lowering passes, in the order lower() runs them (lower.cc). Each keeps
// the nest's meaning (the same points, the same values, the same order of
// every non-associative combine) and states what it leaves for the next;
// verify() checks the IR's invariants after each one in assertion builds.
//
//   build         MdHom + Schedule -> nest               (loops.cc and its helpers)
//   partials      a Parallel loop's shares combine into copies of their own (partials.cc)
//   tile_buffers  tile buffers: input tiles copied in and read from there,
//                 output tiles combined into and folded out (tile_buffers.cc)
//   gpu_points    (a grid's targets) a grid point's one-point loops become it (gpu_split.cc)
//   gpu_scan      (a grid's targets) long scans in chunks (gpu_scan.cc)
//   promote       memory combines kept in registers      (promote.cc)
//   gpu_split     (a grid's targets) reductions down columns cut into chunks (gpu_split.cc)
//   gpu_blocks    (a grid's targets) reductions shared by a block's threads (gpu_blocks.cc)
//   simd          what Vectorized loops' lanes combine   (simd.cc)
//   pairwise      NumPy's pairwise sums                  (pairwise.cc)
//   unroll      the full-tile / remainder paths           (unroll.cc)
//   vectorize   simd loops' lanes and blocked sums        (vectorize.cc)
//   storage     where each allocation lives, its release (storage.cc)
//   simplify    index arithmetic folded, dead code gone  (simplify.cc)
//   compose     (multi-stage kernels) the stages' nests -> one nest (chain.cc)
//   then the target's tail, for the CPU:
//   parallelize   a Parallel loop's iterations onto threads (parallelize.cc)
//   cpu_barriers  barriers become the ends of thread regions (cpu_barriers.cc)
//   math_blocks   strided operands of simd loops with math calls in blocks (math_blocks.cc)
//   for CUDA:
//   gpu_grid      a Parallel loop's iterations onto the grid's threads (gpu_grid.cc)
#pragma once

#include <string>
#include <vector>

#include "lower/lower.h"

namespace nf::lower::passes {

// build: the scheduled MdHom as one nest. Its scalar prologue (mdh.h:
// MdHom::prologue) first, at the top level before any parallel loop: the
// prologue's nodes as declarations, its outputs stored at index 0; the
// point body then uses those values. Tiling (one loop per tile level and
// dimension, in the schedule's order, each covering its parent tile clipped
// to the extent), compute-at of register accumulators (opened in the body
// of the output's innermost own loop and closed there) and of tile buffers
// (a TileIn request in the body of the loop the schedule names, for the
// tile_buffers pass: every read of an input is still a read of memory,
// every combine into an output a combine into memory), reductions (in the
// output element's register when all of its reduced points lie below its
// loops, else in memory -- the output, a scratch array or per-share
// array, set to the start value first -- each point's combine marked for
// the partials, tile_buffers and promote passes), the loops whose float
// sums are NumPy's pairwise sums marked (Stmt::pairwise: the whole of a
// reduced dimension, innermost, every output reduced along it a float sum
// not kept in a tile),
// and the loops that may run on SIMD lanes (the innermost loop of a
// vectorized schedule, unless a scan runs along it: Vectorized, each
// register it may combine into declared with what it combines,
// Stmt::accumulates; the simd pass decides). A parallel schedule's
// outermost loop is cut into shares of whole iterations (contiguous, in
// order; MaxThreads of them when the work is worth several threads, else
// one), run by one Parallel loop at the top level over the shares; what
// the shares combine across each other goes, as in a serial loop, to one
// Kernel scratch array set to the start value before the loop (a register
// accumulator's: one element, the share's register combined into it after
// its loops), which the loop lists (Stmt::share_reductions) for the
// partials pass, and is written to the output after the loop. As the one
// loop of a parallel schedule, a loop marked pairwise covers the whole
// dimension in every share (the partials pass has the shares take nodes of
// NumPy's tree). No thread expression appears: the target maps the shares
// (parallelize).
// Allocations carry their scope, and none is released yet. (Its helpers:
// loops.cc the nest and point body, reductions.cc where each reduction
// combines and the scratch results' copy to the output, caches.cc tile
// buffers.) Every combine is written as a serial loop would run it. Unrolled loops: the nest below the last parent loop of
// an unrolled loop is one FullSplit (its condition: every unrolled loop's
// parent tile lies inside the parent's range), emitted once, with the
// bounds that differ on its full-tile path as TileBounds (the unrolled
// loops' ends, the tiles their parents cover) and the loops whose kind
// differs there marked (Stmt::unroll, full_kind); nothing is unrolled yet.
LoopNest build(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name);

// partials: each Parallel loop's share reductions (Stmt::share_reductions)
// get a copy per share. An array of C elements becomes one of S C (S the
// loop's trip count, its shares), copies 1 .. S-1 set to the identity (an
// arg index array's to INT64_MAX) before the loop, copy 0 keeping build's
// start value; in the loop every mention of array[e] becomes array[s C + e]
// (s the share; an arg-reduction's index array with it, also in the marks'
// index_at); after the loop each element z combines the copies into copy
// 0 in share order (for t in [1, S): array[z] = array[z] (+) array[t C +
// z], an arg-reduction with its full test). A pairwise sum (its `reg`): the
// loop marked pairwise gets a part array of 2 S node sums (pairwise_parts:
// the pairwise pass has share s take nodes s, s + S, ...), the share's add
// of the register into element 0 goes, and after the loop the nodes' sums
// are added pairwise up the tree (left + right at every level) and the
// root into element 0. Every point is still combined once; afterwards no
// two iterations of a Parallel loop touch the same element of an array
// they combine into, and no loop has share reductions.
// On a target with a grid (Caps::threads Grid) the copies' initialization
// and the fold are Parallel loops (the fold over z, each element's copies
// combined in a register marked as an accumulator, then into copy 0: the
// gpu_blocks pass gives an element a block), and a pairwise sum is not
// taken by nodes: each share sums its contiguous part of the marked loop's
// range (no longer marked: the gpu_blocks pass reassociates it anyway)
// into the register added into its copy, as any other share reduction.
void partials(LoopNest& n, const PassContext& c);

// build_stores: a stage's scalar prologue alone (MdHom::once_guard >= 0):
// its extents, the prologue's values and their stores, unguarded, no loop.
// compose runs it once, before the tiles; the stage's own nest (build)
// computes the same values at every tile and stores them only where its
// guard is set, which compose clears.
LoopNest build_stores(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name);

// gpu_scan: nothing on a target without a grid. Otherwise each top-level
// loop over [0, N) in steps of 1 (Serial or Vectorized) whose body is
// declarations, then `if (0 < i) out[e(i)] = combine(out[e(i - 1)], v)
// else out[e(i)] = v` (a scan along the kernel's only loop, as build writes
// it; the declarations and v read nothing the loop writes) becomes, after
// nf_q = max(1, min(MaxThreads, N / 64)) and a Kernel array nf_tot of nf_q
// totals: a Parallel loop over the chunks (chunk c: points [N c / nf_q,
// N (c + 1) / nf_q)) each combining its points' values in order into its
// total; a Serial loop making the totals running ones (tot[c] =
// combine(tot[c - 1], tot[c])); a Parallel loop over the chunks, each
// scanning its points as the loop did, its first point combined with the
// total of the chunks before it (chunk 0's: v). Every point's value is
// computed twice, the outputs once each; the combines are reassociated.
// Each of these loops' bounds is multiplied by (1 < nf_q), and the loop as
// it was follows, its bound multiplied by (nf_q < 2): one chunk is one pass.
// Likewise a top-level Parallel loop over N rows (N from the top level's
// names) whose iteration is declarations then such a scan loop: each row
// cut into nf_q = max(1, min(MaxThreads, 32 MaxThreads / max(N, 1), E / 64))
// chunks (E the scan's trip count where the top level's names give it), the
// totals at chunk c N + row, Parallel loops over the N nf_q (row, chunk)
// pairs (the row's variable s % N, the chunk s / N, the declarations again)
// and the running totals a Parallel loop over the rows.
void gpu_scan(LoopNest& n, const PassContext& c);

// gpu_points: nothing on a target without a grid. Otherwise, in each
// top-level Parallel loop's body (not one with share reductions), a loop
// `for v in [a, min(a + 1, X))` in steps of 1, Serial, where a is declared
// from the loop's variable and X is its bound (or the top-level
// declaration's value it names) -- the one-point loop a grid keeps innermost
// (tune::grid_schedule) -- has one point, a: it becomes a Block of its body
// with v replaced by a. (Then promote keeps a column's element in a
// register over the rows, and gpu_split can cut them.) And a top-level
// Serial loop from 0 in steps of 1 to a bound not a literal, whose body only stores values that read
// no memory at indices that move with it (an output set to its start
// value), directly or in loops inside it, becomes Parallel: the grid's
// threads store them (a top-level Block of nothing but such loops is
// replaced by them first).
void gpu_points(LoopNest& n, const PassContext& c);

// gpu_tiles: nothing unless the schedule asks for block tiles
// (LoopNest::block_tiles), nothing on a target without a grid (or whose
// blocks hold fewer than the tile's threads). The sizes below are the
// schedule's (LoopNest::tile: BM x BN outputs a block, BK deep, TM x TN a
// thread; T = (BM / TM) (BN / TN) threads). Otherwise each top-level Parallel loop (no share
// reductions, the bound from the top level's names) whose iteration is a
// contraction's grid point -- g = s; J = g % NJ; g = g / NJ; I = g (or
// I = g % NI; g = g / NI, then declarations of the outer points from g),
// then loops over k from 0 to K in order (one loop in steps of 1, or a
// tile loop and its point loop) and one-point loops of I or J around
// declarations and one marked memory combine, not an arg-reduction, at an
// index with I and J and not k -- where some load's index has k and one of
// I, J (and no name the point declares), none has all three, and their
// tiles fit the shared memory, becomes: nf_tm = ceil(NI / BM), nf_tn =
// ceil(NJ / BN), nf_tiles = (bound / max(NI NJ, 1)) nf_tm nf_tn, and a
// cooperative GpuBlocks loop over nf_tiles of T threads (J0, I0 and the
// outer points from its variable; a GpuShared BK x BM or BK x BN tile per
// such load, a GpuPrivate TM x TN of registers per thread from the
// identity; for each BK of k: the tiles copied (0 outside the extents),
// Barrier, each thread's TM x TN points of the BM x BN combined over the
// tile's k into the registers, Barrier; then each register combined into
// its output element inside the extents). gpu_tiles.cc shows the form.
void gpu_tiles(LoopNest& n, const PassContext& c);

// promote: each memory element that marked combines (Stmt::accumulates on
// an Assign) update inside a loop L -- not a Parallel or Cores loop -- at an
// index that does not move with L (it mentions nothing L declares or
// assigns), where nothing in L touches its array (or its arg index array)
// at another index, is kept in a register over L: declared before L from
// the identity (an ordered product: from the element; an arg index
// register from INT64_MAX), marked as an accumulator, every mention of the
// element in L replaced by it, and folded into the element after L with
// the combine (an ordered product: stored). Loops are taken outermost
// first. The marks of the combines it rewrites go; those of combines left
// in memory stay (no later pass reads them).
void promote(LoopNest& n, const PassContext& c);

// gpu_split: nothing on a target without a grid. Otherwise each top-level
// Parallel loop over N iterations (N from the top level's names) whose
// iteration is uniform declarations, accumulator registers (none ordered,
// an arg index register beside its value), one loop in steps of 1 that
// combines into all of them and does not read memory along its variable
// (a column: passes.h gpu_blocks), then the rest, becomes, after a
// declaration nf_r = max(1, min(MaxThreads, 32 MaxThreads / max(N, 1),
// E / 8)) (E the loop's trip count, where the top level's names give it)
// and Kernel arrays of nf_r N partials per register: a Parallel loop over
// N nf_r (iteration s: the old variable s % N, chunk nf_c = s / N; the
// declarations, the registers from the identity, the loop over its chunk
// nf_c of [lo, hi) -- E nf_c / nf_r to E (nf_c + 1) / nf_r --, the
// registers stored to their partials at nf_c N + the variable), then the
// Parallel loop over N: the declarations, the registers from their start
// values, each combined with its partials in chunk order (the full arg
// test), the rest. Each point is combined once; the chunks' order is the
// points'.
void gpu_split(LoopNest& n, const PassContext& c);

// gpu_blocks: nothing on a target without a grid (Caps::threads Cores) or
// blocks (Caps::block_threads < 2). Otherwise each top-level Parallel loop
// whose iteration reduces along a loop becomes a cooperative GpuBlocks loop
// of T = block_threads threads (lower.h: LoopKind::GpuBlocks): its uniform
// declarations on every thread; each loop carrying accumulator registers
// (none ordered) and reading memory along its variable (some load's index
// a sum with the variable as a term: a row, not a column) as a GpuThreads
// loop in which thread t runs the loop's
// iterations t, t + T, ... into its own registers from the identity, stored
// to GpuShared arrays of T, combined in a tree (T/2, T/4, ..., 1 threads,
// the full arg test for an arg-reduction), then the registers declared
// again on every thread as their start value combined with the root; each
// loop carrying nothing dealt out the same way; statements writing memory
// on one thread (a GpuThreads loop of one iteration); a Barrier after each
// of these but the last. Its other loops are left as they are (gpu_grid
// makes them one thread per iteration), as is an iteration with an ordered
// product, a loop carrying another scalar, an allocation, a register
// combined outside a loop, or more shared memory than the target has.
// Where the first reduced loop's trip count E is the parameters' alone (not
// a share's part or the shares' fold), the blocks' loop runs its N
// iterations when E >= T (its bound (T - 1 < E) * N) and a copy of the
// Parallel loop as it was follows, over (E < T) * N: short rows stay one
// thread's (and NumPy's pairwise sums). The
// points and what each combines are the same; associative combines are
// reassociated (a float sum's association is no longer NumPy's).
void gpu_blocks(LoopNest& n, const PassContext& c);

// simd: on a target without SIMD lanes (Caps::vector_bytes 0) every
// Vectorized loop becomes Serial and nothing else changes. Otherwise each
// Vectorized loop not marked pairwise gets what its lanes may
// do with what its iterations carry (the scalars declared outside it that
// its body assigns, the memory elements it updates at an index that does
// not move with it). A register of an associative combine a simd clause
// expresses goes in the loop's clause (Stmt::simd_reductions; a float sum
// also in its splits, for blocks); a float max/min or an arg-reduction
// register (its index register with it) in its splits, for lanes, which
// need a step of 1, no blocked sum beside them and a trip count not a
// literal (on the full-tile path of a FullSplit such a loop is Unrolled);
// an ordered product, any other carried scalar or a memory element that
// stays put make the loop Serial (Unrolled on the full path). A loop that
// carries nothing stays as it is. After it, what a Vectorized loop carries
// is in its clause or its splits.
void simd(LoopNest& n, const PassContext& c);

// pairwise: each loop marked pairwise (Stmt::pairwise), whose carried
// registers are all floating-point sums (it throws otherwise), becomes
// NumPy's pairwise summation of its points (numpy/_core/src/umath/
// loops_utils.h.src), run as an explicit stack of (start, length, phase)
// frames: ranges under 8 points one by one, up to 128 in blocks of 8 into
// eight accumulators (the blocks' loop of the marked loop's kind) combined
// ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) plus the rest, larger ones as the sum
// of their halves (the first rounded down to a multiple of 8); each
// register then gets its sum added once. Every point's body runs once, in
// index order, the register shadowed by the accumulator it adds into. A
// marked loop with parts is the one loop of a Parallel loop's body: the
// shares take the nodes of the tree's level with pairwise_nodes() nodes
// (lowerer.h) in turn, node k's sum stored to part[k]. After it no loop is
// marked.
void pairwise(LoopNest& n, const PassContext& c);

// tile_buffers: each TileIn becomes, in its place, the tile's Local array
// (its count a literal, or tile_count's run-time product) and the loops
// copying the input's part into it (clipped to the extents; on the full
// path of the FullSplit it is in, whole, with TileBounds, when the request
// says so: small whole tiles' loops are Unrolled there); then the
// statements after it in its list, and everything in them, read the input
// from the tile (the point's position in the tile) instead of memory. The
// copy's own reads and every read before the request stay in memory. An
// output's request (TileSpec::output) becomes the Local array set to the
// identity of the combines after it (whole, unclipped), those combines
// into the memory array then combine into the tile (their marks go: they
// are no memory combines any more), and at the end of the list each tile
// element is combined into the memory element the combines updated at that
// point (clipped, or whole on a full path). After it no TileIn remains.
void tile_buffers(LoopNest& n, const PassContext& c);

// unroll: every FullSplit becomes `if (cond) full path else remainder path`,
// two copies of its nest: on the full path the TileBounds take their
// full-tile bounds (literal trip counts: unrolled loops, whole tile
// buffers whose small copy loops unroll too) and the marked loops their
// full-path kind without splits (a register micro-kernel: no lanes, no
// blocked sums over a short literal trip count); on the remainder path the
// clipped bounds and the kinds build gave. Both paths enumerate the same
// points. After it no FullSplit, TileBound or marked loop remains.
void unroll(LoopNest& n, const PassContext& c);

// vectorize: every Vectorized loop with splits is rewritten so its
// iterations stay independent. Floating-point max/min and arg-reduction
// registers get lanes: the loop runs in blocks of k points, point l of a
// block combining into lane l (Local arrays shadowing the registers, the
// arg test in its short form: a lane sees its points in index order), the
// lanes folded into the registers after the blocks, and the last points
// run by a Serial copy of the loop. Floating-point sums get blocks of 1024
// points, each block's sum from zero added to a float64 running sum.
// Exact for max/min/arg (any folding order finds the first best point);
// sums keep NumPy's error growth. After it no loop has splits.
void vectorize(LoopNest& n, const PassContext& c);

// storage: a Local allocation whose count is not a literal, or which would
// take the Local allocations around it past the target's private bytes
// (Caps::private_bytes: 1 MiB of a CPU worker's stack, 8 KiB of a GPU
// thread's local memory), becomes Thread scope (the heap); every Thread
// or Kernel allocation is released
// by a Free at the end of the statement list that holds it. After it each
// heap-scope Alloc has exactly one Free, in its own list, after its uses.
void storage(LoopNest& n, const PassContext& c);

// simplify: integer index arithmetic on literals is folded (+ - * / min <
// &&, and x + 0, x * 1, x * 0, x - 0, min(x, x)), an If with a literal
// condition becomes its branch, a For whose literal range is empty goes,
// and a Block in a statement list is spliced into it when it declares
// nothing. Floating-point expressions are never touched.
void simplify(LoopNest& n, const PassContext& c);

// The passes every stage's nest takes after build, in order: partials,
// tile_buffers, gpu_points, gpu_scan, promote, gpu_split, gpu_blocks, simd, pairwise, unroll, vectorize, storage,
// simplify (lower.cc runs them).
const std::vector<Pass>& common();

// compose (multi-stage kernels, lower.h: ChainShape): the stages' nests,
// each built serial and through the common passes (above), become
// one nest: a Cores loop whose threads each walk tiles of their share of the last
// stage's rows; per tile and stage, bounds from the launch's halos, the
// rolling move of kept rows in the tile buffers the stage writes, the
// stage's outer extent and index offsets moved to its first new row, then
// the stage's nest as a Stage statement whose pointers are its memory
// rows or its rows of the thread's tile buffers, then the copy of a copy
// link's owned rows to its array. Before the Cores loop, each stage whose
// prologue stores (ChainShape::Stage::once) runs `stores[s]` (build_stores)
// once, as a Stage statement of its own over its memory pointers, so every
// thread finds those results in memory, and no tile stores them (the guard
// cleared in each thread's copy of the stage's parameters). Only the
// launch's parameters (ip header) vary between launches of one shape. Its
// output needs no storage pass (its tile buffers are the launcher's
// scratch, its Local arrays literal).
LoopNest compose(std::vector<LoopNest> stages, std::vector<LoopNest> stores, const ChainShape& shape,
                 const std::string& name);

// parallelize (the CPU target's tail, first): each Parallel loop over N
// iterations becomes a Cores loop with its condition, whose thread t of T
// runs the iterations [N t / T, N (t + 1) / T) in order, serially. Every
// iteration runs once, on one thread; the statements after the loop run
// after all of them. After it no Parallel loop remains.
void parallelize(LoopNest& n, const PassContext& c);

// gpu_grid (the CUDA target's tail): each Parallel loop (gpu_blocks left it
// one thread's) becomes a GpuBlocks loop over the same iterations, one
// thread per iteration, run grid-stride by the device's threads
// (codegen: render_cuda makes it a phase of its own), without its
// condition. Every iteration runs once, on one thread; the statements after
// it run after all of them. After it no Parallel loop remains.
void gpu_grid(LoopNest& n, const PassContext& c);

// cpu_barriers (the CPU target's tail): the CPU's threads (jit.h:
// nf_parallel) may not wait for each other, so a Barrier ends a Cores loop.
// `Cores { A; Barrier; if (ThreadIndex < 1) B }` becomes `Cores { A }`, its
// thread count kept in a variable (the loop's name), and then B once, with
// ThreadIndex 0 and ThreadCount that count; any other `Cores { A; Barrier;
// C }` becomes `Cores { A }; Cores { C }`. After it no Barrier remains.
void cpu_barriers(LoopNest& n, const PassContext& c);

// math_blocks (the CPU target's tail, last): a Vectorized loop (literal
// step 1) whose body -- declarations and assignments only, nothing carried
// -- calls a math function of a real float type and reads or stores memory
// along its variable at a stride that is not literally 1 runs in blocks of
// 64 iterations: the block's strided reads (indices naming nothing the body
// declares) are first copied into Local arrays by a Serial loop, the
// Vectorized loop reads those, and its strided stores (of arrays the body
// does not read) go to Local arrays copied out after it. The same points,
// the same values (the iterations are independent); the math calls run on
// whole vectors (runtime/vmath.h: a scalar call costs a vector's work).
void math_blocks(LoopNest& n, const PassContext& c);

}  // namespace nf::lower::passes

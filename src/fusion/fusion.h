// Fusion (Diffuse): partition the window into groups of tasks that can run as
// one kernel, and find the buffers those groups make temporary.
//
// A group is a contiguous run of the window. Tasks join the running group
// while Diffuse's constraints hold, read with "partition" = view:
//   1. domain:   iteration domains agree (after dropping extent-1 dimensions);
//   2. producer-consumer: a buffer written through view V is read or written
//      later in the group only through V or through views disjoint from V;
//   3. anti-dependence: a buffer read through view V is not written later in
//      the group through a different view that overlaps V;
//   4. reduction: a buffer reduced into is not otherwise read or written in
//      the group (and a reduction result is never consumed in its own group).
// Contractions (Task::solo) always form a group of their own.
//
// Scalar prologues relax constraint 1. A group whose tasks so far are all
// 0-d maps (a program's scalars: CG's alpha = rr / pAp, beta = rr' / rr)
// widens to the domain of the next task if that task reads one of their
// results (a scalar never joins an unrelated kernel), and those become its
// prologue: the kernel computes them once, before any point, and stores
// their results once (mdh.h, MdHom::prologue). Later tasks of the group
// may read what the prologue read through any view, and what it wrote
// either as that very element broadcast over the domain (forwarded as a
// value, like any same-view read) or through views disjoint from it; they
// write nothing the prologue touched. So every point sees the prologue's
// values, as the tasks in sequence would, and computing them once gives the
// same stores. 0-d maps met later, in the middle of a group over a larger
// domain (`(a - lo) / (hi - lo)`: hi - lo is recorded after a - lo), join
// its prologue too where the group's next task reads their results and they
// touch nothing the group wrote and write nothing it read: computed before
// the group's earlier tasks, they compute the same values (mdh::build puts
// every 0-d map of such a group first, in program order).
// A stage of a chain (below) computes its group's prologue at every tile
// (a few scalar operations); where the prologue stores results (a script's
// variable `d = hi - lo`), the chain's kernel stores them once, before its
// tiles (mdh.h, MdHom::once_guard), so later stages read them from memory
// like any input (no link).
//
// Proof obligation (why one kernel computes what the tasks computed in
// sequence): the kernel evaluates, for each domain point p, the tasks' bodies
// in program order. A dependence between tasks Ti < Tj at points p != p'
// needs Tj at p' to touch memory that Ti touches at p with at least one write.
// Through the same view, the same point touches the same element, so p == p'.
// Through different views, 2 and 3 require disjointness, so there is no shared
// element; 4 keeps reduced outputs (which depend on many points) unread.
// Hence only p == p' dependences remain, which point-wise program order
// satisfies. Within a task the recorder guarantees the same (stream.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stream/stream.h"

namespace nf::fusion {

enum class Policy : uint8_t {
  None,     // one task per group (the unfused baseline)
  Diffuse,  // the constraints above
};

struct Group {
  int begin = 0, end = 0;  // tasks [begin, end) of the window
  // Why the group stopped growing (a constraint, "end of window", "extern").
  std::string stop_reason;
  // Buffers the group makes temporary: written in full inside the group,
  // read only inside it, unreachable from Python. They are never allocated.
  std::vector<BufferPtr> temporaries;
  // Tasks whose result nobody can observe (dead code): skipped entirely.
  std::vector<int> dead;
  // A stage of a chain (below): its MdHom keeps the outer dimension of the
  // domain apart (never merged with the next), the dimension the chain tiles.
  bool stage = false;
  int size() const { return end - begin; }
  // (A group's dead tasks and temporaries are a few: searched in place.)
  bool is_dead(int k) const { return std::find(dead.begin(), dead.end(), k) != dead.end(); }
  bool is_temporary(const Buffer* b) const {
    return std::any_of(temporaries.begin(), temporaries.end(), [&](const BufferPtr& t) { return t.get() == b; });
  }
};

struct Partition {
  std::vector<Group> groups;
};

// Partition a window (tasks in program order).
// A group stops once its tasks make `max_accesses` accesses to memory Python
// can see (reads of and writes to arrays that outlive the kernel; results
// that stay inside it inline into expressions), or once it holds
// 8 * max_accesses live tasks. The compiler's time grows much faster than
// the number of such accesses (alias analysis between them): a Python loop
// whose iterations all fuse (row sweeps writing back into one array) would
// otherwise become one kernel of hundreds of loads and stores that takes
// clang seconds, while long expressions over a few arrays (Black-Scholes:
// 67 operations) stay one kernel.
inline constexpr int kDefaultMaxGroupAccesses = 32;
Partition partition(const std::vector<Task>& window, Policy policy, int max_accesses = kDefaultMaxGroupAccesses);

// Stage chains (multi-stage kernels; HFAV's stencil chains, reductions
// feeding their consumers). Consecutive groups G_first..G_last whose later
// groups read what earlier ones wrote run as one kernel over tiles of the
// outer dimension: for each tile of the last stage's rows, every stage
// computes the rows its consumers read -- the tile's rows shifted by the
// offsets of the views (halo/extent inference, done per launch on the
// bindings: runtime.h, ChainLaunch) -- before the next stage runs. This
// relaxes constraint 1 between groups: their domains differ (a blur's
// (n, n-2) then (n-2, n-2)), but every consumer tile's producer region is
// computable.
//
// A link is a buffer one stage writes (through one view) and later stages
// read. Its storage:
//   Tile - not visible to Python and touched by nothing outside the chain,
//          written whole (C-contiguous, from its first element): it is never
//          allocated; each thread keeps the rows its tile needs in a scratch
//          buffer, and halo rows are recomputed by neighbouring tiles (or
//          kept from the thread's previous tile: rolling storage);
//   Copy - written whole but visible to Python (a script's variable) or
//          touched outside the chain, and not read by its producer: Tile
//          storage, and each tile also copies the rows it owns (the rows of
//          the buffer partitioned over the tiles) into the buffer, so every
//          row is written once;
//   Full - anything else: the buffer itself, read back through the very view
//          that wrote it (same rows: the writer's tile is the reader's).
// Legality (checked here on views, and per launch on the strides):
//   - no contraction, no buffer written by two groups of the chain, no buffer
//     written by one group and read by an earlier one;
//   - a stage that writes a Full link or any other buffer Python can see (or
//     a later group reads) computes each of its rows exactly once: zero halo;
//   - no stage reduces or scans along the outer dimension.
// Proof sketch: rows of the outer dimension are independent in every stage
// (no combine along it), so a stage may compute any subset of its rows in
// any order; a consumer row reads only producer rows the same tile computed
// before (halo inference), and rows written to memory visible after the
// kernel are written once, by the stage that owns them.
struct Chain {
  int first = 0, last = 0;  // groups [first, last] of the partition
  struct Link {
    BufferPtr buffer;
    bool tile = false;  // Tile or Copy storage (else Full)
    bool copy = false;  // Copy storage
  };
  std::vector<Link> links;
  int stages() const { return last - first + 1; }
};

// Chains of at least two groups that keep at least `min_bytes` of traffic
// out of memory (their Tile and Full links, and the repeated reads of inputs
// several stages read; a Copy link is written anyway): smaller ones stay in
// cache anyway. Marks their groups as stages.
std::vector<Chain> chains(const std::vector<Task>& window, Partition& p, int64_t min_bytes);

// Recompute instead of store (the "registers" storage of an intermediate;
// runs on the window before partition). A map P whose result buffer b is
// hidden (no Python array sees it, nothing computed it yet), written by P
// alone, whole and C-contiguous, and read only by later tasks, at least one
// of them through a shifted view (a stencil: flux[:, 1:] - flux[:, :-1]),
// or with a contraction between P and its first reader (which would end
// P's group: `beta * C[i, :i + 1] + alpha * (A[:i + 1] @ A[i])` computes
// the product of beta after P), is substituted into every reader: each read of b through a view R becomes
// P's expression over P's inputs moved to where R reads -- reader point p
// reads what P computed at point q = s + A p (R's offset and strides
// decomposed over b's layout, q inside P's domain for every p; never a
// broadcast read, which would evaluate P again along it), so P's
// input view V becomes V shifted by s with strides V·A. P is then dead and b
// never exists: diffusion's fluxes are computed where the update reads
// them, and its chain has two stages instead of four. P goes with its cone:
// the maps whose results only the cone reads, each through the view that
// wrote it (the values a kernel would forward in registers: hdiff's
// limited flux is five tasks), all substituted or none -- recomputing part
// of it would store the rest's results instead of b. Only where it pays:
// the cone's cost (operations weighted, a division 4 additions, a
// transcendental 16) times the number of distinct views b is read through,
// less one, is at most `budget` (kRecomputeBudget: measured on the 2-core
// EPYC, diffusion's fluxes -- 1 more per point -- and hdiff's limited
// fluxes -- 5 more -- ran 1.2x faster recomputed than in a chain's ring
// buffers; a blur's row sum, 12 more, ran as fast either way and stays
// stored).
// Legal where the values the cone read are still there when its readers
// run (no other task from the cone's first to the last reader writes their
// buffers) and a reader then reads nothing it writes through another view;
// contractions neither give nor take. Producers are taken last to first,
// so a cone substituted into its readers exposes its own producers'
// shifted reads. Returns the number of tasks recomputed instead of stored
// (they stay in the window, dead). budget < 0: none.
inline constexpr int kRecomputeBudget = 8;

// Where an operand of a task that recompute_producers rewrote comes from in
// the window as recorded: input, constant or index function `which` of task
// `task`, moved by `shift` (inputs: elements of the view's dtype, added to
// its offset; index functions: added to their offset). A window that
// window_matches the recorded window's signature has every buffer's views
// moved by one distance, so the shifts hold for it too: a memoized plan of
// the rewritten window binds straight to the recorded one (flush.cc).
struct Source {
  int task = 0;
  int which = 0;
  int64_t shift = 0;
};
struct Sources {
  std::vector<Source> inputs, consts, indices;
};

// What recompute_producers did to a window: each cone it substituted (its
// tasks in order, the last one the producer; the readers), in the order it
// did them, and the sources of each task it rewrote.
struct Recomputed {
  struct Cone {
    std::vector<int> tasks;
    std::vector<int> readers;
  };
  std::vector<Cone> cones;
  std::vector<std::pair<int, Sources>> rewritten;
  // With keep_recorded: each rewritten task as it was recorded.
  bool keep_recorded = false;
  std::vector<std::pair<int, Task>> recorded;
  int tasks = 0;  // recomputed (the return value)
  const Sources* sources_of(int task) const;  // nullptr: not rewritten
};

int recompute_producers(std::vector<Task>& window, int budget = kRecomputeBudget, Recomputed* record = nullptr);
// Reader `c` with every read of producer p's result (p's output buffer,
// each read a point map of p's output view) replaced by p's expression at
// the points it reads, as recompute_producers substitutes a cone. False,
// `c` untouched, where a read is no point map of p's output or the result
// would break a task invariant or the size limits. (Tier 0 splices a
// group's intermediates into their readers with it: pipeline/tier0.cc.)
bool substitute_producer(Task& c, const Task& p);

// Rewrites `window` as recompute_producers rewrote the window `r` was
// recorded on, without deciding anything again: for a window with that
// window's signature as recorded (window_matches), whatever has run since.
// False if a substitution does not apply (it always does on such a window).
bool replay_recompute(std::vector<Task>& window, const Recomputed& r);

// Domain of a task with extent-1 dimensions dropped (what constraint 1 compares).
Dims squeezed_domain(const Task& t);

// The canonical form of a window, for memoizing the analysis (Diffuse 5.2).
// It holds the tasks' operations and types, De Bruijn numbers for buffers,
// every view's strides and extents, which views of one buffer are the same
// and which start at the same element, the relation (disjoint /
// overlapping) between every two views of one buffer at least one of which
// the window writes, and each buffer's reachability from Python --
// everything partition() and mdh::build() decide on -- but no data pointer,
// view offset or scalar value. Two windows with
// equal signatures are partitioned and expressed identically, so a loop over
// moving slices (a[i:i+n]) reuses the first iteration's analysis.
struct Signature {
  // The first `size` bytes; the rest is room kept for the next signature
  // built into the same object (window_signature), so a flush per loop
  // iteration neither allocates nor clears memory for it.
  std::string bytes;
  size_t size = 0;
  // The byte offset of every view the signature describes, in its order
  // (not part of the signature: what window_matches compares a later
  // window's offsets with).
  std::vector<int64_t> offsets;
  // Computed on first use (a memo that finds the window among its latest
  // hits compares bytes without hashing them); 0: not yet.
  mutable size_t hash_ = 0;
  std::string_view view() const { return {bytes.data(), size}; }
  size_t hash() const {
    if (hash_ == 0) hash_ = hash_of(bytes.data(), size) | 1;
    return hash_;
  }
  bool operator==(const Signature& o) const { return size == o.size && hash() == o.hash() && view() == o.view(); }
  // A copy holding the signature only (a memo key).
  Signature compact() const { return Signature{std::string(view()), size, offsets, hash()}; }
  static size_t hash_of(const char* p, size_t n);
};
// Builds the window's signature into `out`, reusing its storage.
// `structure` is the window's structure (Structure::of(window): the stream
// hands it over with the window, written as the tasks were recorded). Safe
// to call from several threads (serialized: buffers carry its scratch).
// Layout: policy, number of tasks, the structure's size and the structure;
// per view, its buffer's number (De Bruijn: in order of first use); per
// view, its relations to earlier views of its buffer; per buffer, its flags.
void window_signature(const std::vector<Task>& window, std::string_view structure, Policy policy, Signature& out);
// Whether `window` (of structure `structure`) has the signature `sig`
// (built by window_signature from some window), decided without building
// it: the structures are compared as bytes and every view's buffer number
// is checked, and where the signature holds the relations between views of
// one buffer (which views are the same, start together, overlap) it checks
// instead that each buffer's views lie at one common distance from those of
// sig's window -- those relations are invariant under such a shift. A false
// answer proves nothing (a window whose views moved by different amounts may
// still have the signature): the caller then builds the signature. This is
// how a loop that flushes every iteration finds its plan without paying for
// the relations.
bool window_matches(const std::vector<Task>& window, std::string_view structure, Policy policy, const Signature& sig);

}  // namespace nf::fusion

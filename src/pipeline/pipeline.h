// The flush driver: runs the stages of DESIGN.md in order on the window.
//
//   record ─► fuse ─► express ─► schedule ─► lower ─► render ─► compile ─► run
//   stream/   fusion/  mdh/       tune/       lower/   codegen/  jit/       runtime/
//
// Each stage only consumes the previous stage's output; this file is the only
// place that knows all of them.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/small_vector.h"
#include "fusion/fusion.h"
#include "mdh/mdh.h"
#include "stream/stream.h"
#include "tune/tune.h"

namespace nf::jit {
struct Kernel;
}

namespace nf::pipeline {

// Where operations run. Auto: tier 0 (runtime/tier0.h: at once, no
// compiling) for operations over at most `eager_max_elements` points whose
// inputs are computed; everything else is recorded, fused and compiled.
// Eager: tier 0 whenever the inputs are computed, whatever the size; Lazy:
// always recorded (tests force each tier).
enum class Tier : uint8_t { Auto, Eager, Lazy };

struct Target;  // (target.h)

struct Config {
  Tier tier = Tier::Auto;
  int64_t eager_max_elements = 4096;
  fusion::Policy policy = fusion::Policy::Diffuse;
  bool dump = false;        // keep each kernel's source in the report
  bool profile = false;     // time recording too (costs a clock read per op)
  bool memo = true;         // reuse the analysis of windows seen before
  bool routines = true;     // library routines (BLAS) may implement a group
  // >= 0: every group gets a random legal schedule drawn from this seed (and
  // the group's key): for testing that all schedules compute the same.
  int64_t random_schedule_seed = -1;
  // > 0: kernels without a stored schedule are tuned in the background for
  // this many seconds each, and swapped in when done (NUMFUSE_TUNE).
  double tune_seconds = 0;
  // Accesses to Python-visible memory per fused kernel at most (fusion::partition).
  int max_kernel_ops = fusion::kDefaultMaxGroupAccesses;
  // Kernels a flush waits for are compiled jit::Opt::Quick and upgraded to
  // Full once they have run kUpgradeAfterNs (false: always Full).
  bool quick_compile = true;
  // Multi-stage kernels (fusion.h, Chain): consecutive groups linked by
  // intermediates run as one kernel over tiles of the outer dimension.
  bool stages = true;
  int64_t stage_rows = 0;      // rows per tile (0: from the cache size)
  // Columns per strip (runtime.h, ChainOptions::col_tile; 0: chosen from
  // the first-level cache with ring storage).
  int64_t stage_cols = 0;
  // A chain forms when it keeps at least this much traffic out of memory
  // (smaller intermediates stay in cache anyway; tests set 0).
  int64_t stage_min_bytes = 256 << 10;
  // How tile buffers keep rows (runtime.h, ChainOptions::storage): 0
  // recompute halo rows per tile, 1 rolling (keep them from the previous
  // tile), 2 ring (rows in a ring, stages run row by row): ring, in strips
  // of columns, ran fastest on the stencil chains measured.
  int stage_storage = 2;
  // Cheap producers read through shifted views are recomputed at their
  // readers' points instead of stored (fusion::recompute_producers) where
  // that costs at most this many additions more per point; -1: never.
  int recompute = fusion::kRecomputeBudget;
  // The target new groups are planned for (target.h; nullptr: the CPU).
  const Target* target = nullptr;
};
Config& config();

struct GroupReport {
  // Built on every flush, so nothing here is formatted or copied until asked
  // for: names are the tasks' static strings; the expression, schedule, key
  // and stop reason live in the plan that the FlushReport holding this
  // report keeps alive (a GroupReport is valid as long as that FlushReport).
  const std::vector<const char*>* names_ptr = nullptr;  // the tasks in the group (in the plan)
  const std::vector<int>* dead_ptr = nullptr;          // positions in *names_ptr of dead tasks
  SmallVector<uint64_t, 4> temporaries;                // buffer ids never allocated
  int dead = 0;
  // The kernel's expression and schedule (rendered on demand by mdh_text /
  // schedule_text; no buffers are kept alive by a report).
  const mdh::MdHom* hom = nullptr;
  SmallVector<int64_t, 16> ints;
  const tune::Schedule* schedule_ptr = nullptr;
  const std::string* key_ptr = nullptr;
  const std::string* stop_ptr = nullptr;
  bool tuned = false;      // the schedule came from the schedule store
  bool tier0 = false;      // run by tier 0 (its kernel not compiled, or not yet)
  int tier0_passes = 0;    // tier 0: the passes it made (fewer than the operations: some spliced, tier0.cc)
  double tier0_estimate_ms = 0;   // tier 0: the time the tier decision expected it to take,
  double compile_estimate_ms = 0;  // against this compile (tiers.h)
  // A kernel of its plan's first run, compiled before it ran: why (a static
  // string; the estimates above where they decided). Null otherwise.
  const char* why_compiled = nullptr;
  bool compiling = false;  // tier 0, while the background compiler has its kernel queued or
                           // compiling (later runs, or a loop's later repetitions, take it)
  bool cache_hit = false;  // found in the in-memory kernel cache
  bool disk_hit = false;   // loaded from the on-disk cache (not compiled)
  std::string source;      // if dump
  double run_ms = 0;
  // Stage `stage` (from 1) of a multi-stage kernel of `stages` (0: a kernel
  // of its own); the first stage's report describes the launch in `chain`.
  int stage = 0, stages = 0;
  std::string chain;
  // The target its kernel was compiled for ("" for tier 0), and, where the
  // active target is another, why it ran there (a pointer into the plan).
  const char* target = "";
  const std::string* target_note = nullptr;
  // A device target's kernel (the plan keeps it): its launches, in words,
  // by device_launches() ("" for the CPU's).
  const jit::Kernel* device_kernel = nullptr;
  std::string device_launches() const;

  std::vector<std::string> ops() const;  // names, dead ones marked
  const std::string& stop_reason() const;
  const std::string& key() const;        // "" when nothing ran
  bool is_routine() const;               // run by a library routine
  std::string routine() const;           // what that routine computes ("" if none)
  std::string mdh_text() const;
  std::string schedule_text() const;
};

struct FlushReport {
  std::vector<GroupReport> groups;
  std::shared_ptr<const void> plan;  // owns what the groups point to
  std::string sync_site;    // source line that forced the flush (set by the caller)
  std::string sync_reason;  // "print", "flush()", ...
  int tasks = 0;
  double analyse_ms = 0, compile_ms = 0, run_ms = 0;
  int kernels_compiled = 0, memory_hits = 0, disk_hits = 0;
  int tier0_groups = 0;   // groups tier 0 ran instead of a kernel
  bool memo_hit = false;  // the whole window's analysis came from the memo
  bool memo_matched = false;  // ... found by matching the window against a recent plan (no signature built)
  int recomputed = 0;  // producers recomputed at their readers instead of stored (fusion::recompute_producers)
  // The memo matched the window as recorded, before that rewrite, and bound
  // its plan to it without rewriting it (flush.cc: Recorded) ...
  bool memo_recorded = false;
  // ... until something needed the rewritten tasks (tier 0, the
  // floating-point flags' analysis) and the rewrite was replayed.
  bool rewrite_replayed = false;
  std::string recompute_choice;  // with tuning on: how recompute or store was chosen (tuning.h: RecomputeChoice)
  std::vector<std::string> warnings;
};

// Cumulative profile since the last reset.
struct Profile {
  double record_ms = 0, analyse_ms = 0, compile_ms = 0, run_ms = 0;
  int64_t flushes = 0, tasks = 0, kernels_run = 0, compiles = 0, memory_hits = 0, disk_hits = 0, memo_hits = 0;
  int64_t memo_matched = 0;  // of memo_hits, windows matched against a recent plan (no signature built)
  int64_t memo_recorded = 0;  // of memo_matched, windows matched as recorded, before their recompute rewrite
  int64_t tier0_tasks = 0;  // operations run at once by tier 0 (never recorded)
  int64_t tier0_groups = 0;  // recorded groups tier 0 ran (kernel not compiled yet)
};

// Installs tier 0 as the stream's RunNow hook (see Config::tier); once, at import.
void install_tier0();
int64_t tier0_tasks();  // since the process started

// Flushes the global stream and blocks until every pending result is
// computed. Returns the executed tasks; the caller destroys them (with the
// Python GIL held, since adopted NumPy buffers may be released). Concurrent
// callers are serialized. `report` (or null) gives the sync's site and
// reason and gets the warnings, and with Config::dump the groups (and the
// plan they point into); the whole report is last_report().
//
// `releaser` (or null): a caller holding a lock that other threads need (the
// bindings: Python's GIL) lets go of it through releaser->release(), which
// the flush calls at most once, before it waits for a lock another thread
// holds or does anything that may take long: analysing a window, compiling,
// running kernels over more than kQuickFlushPoints points in all. A memoized
// window of small kernels (a loop body that syncs every iteration) runs
// without letting go: for it, giving up and retaking the GIL cost a tenth
// of the flush.
struct Releaser {
  virtual void release() = 0;

 protected:
  ~Releaser() = default;
};
inline constexpr int64_t kQuickFlushPoints = int64_t(1) << 14;
std::vector<Task> flush(FlushReport* report, Releaser* releaser = nullptr);

// fork(): fork_prepare (an os.register_at_fork `before` hook; call it
// without the GIL) waits for a running flush and the tuning thread and keeps
// other threads from starting one; the forking thread itself may still sync
// until fork() (Python code runs there: other hooks, signal handlers).
// Handlers registered with pthread_atfork undo it inside fork(): in the
// parent, and in the child, where only the forking thread exists, they also
// reset what threads the child does not have held. fork_abandoned undoes it
// when no fork() follows (a later before-hook raised).
void fork_prepare();
void fork_abandoned();
// True in a process forked from one that had used numfuse: thread pools
// inherited from the parent (TBB) are not used there.
bool forked_child();

// Floating-point exceptions (core/fpe.h) raised while computing: one event
// per kernel or tier-0 operation whose flags were set, with the operations
// it computed (NumPy's ufunc names, "cast", "reduce"), so that the caller
// can report them as NumPy does (numpy.errstate: warn, raise, ...). Events
// queue on the thread that computed (the one that flushed or recorded) until
// the bindings take them, after the call.
struct FpEvent {
  uint8_t flags = 0;
  std::vector<const char*> ops;
};
namespace detail {
extern thread_local bool t_fp_pending;
void note_fp(uint8_t flags, std::vector<const char*> ops);
// `flags` without an `invalid` that only a NaN input reaching a comparison
// can explain (x86's ordered vector comparisons signal it; NumPy's loops do
// not): kept when no input holds a NaN.
// (`extreme_scalar`: a scalar operand is NaN, infinite or huge.)
uint8_t genuine(uint8_t flags, const std::vector<const char*>& ops, std::span<const View* const> inputs,
                bool extreme_scalar = false);
bool extreme_scalar(const Scalar& c);
uint8_t genuine(uint8_t flags, const std::vector<const char*>& ops, const std::vector<Task>& window, int begin,
                int end);
}  // namespace detail
inline bool fp_pending() { return detail::t_fp_pending; }
std::vector<FpEvent> take_fp_events();
// The operations of tasks [begin, end) of `window` that can raise flags (in
// order, without repeats; dead tasks skipped).
std::vector<const char*> fp_ops_of(const std::vector<Task>& window, int begin, int end,
                                   const std::vector<int>& dead = {});
std::vector<const char*> fp_ops_of(const Expr& e, bool reduce);
// The name fp_ops_of adds after "power" for float32's power (its flags differ).
extern const char* const kPowerFloat32;

FlushReport last_report();
// No flush is running or about to run (so an empty window means nothing is pending).
bool idle();
// The analysis memo (window signature -> plan).
void clear_memo();
// Drops every compiled kernel: the memo (its plans hold kernels), the kernel
// cache, and the background compiler's record of what it compiled (a kernel
// asked for again is compiled again; the disk cache still answers first).
void clear_kernels();
// Testing: the next `n` multi-stage launches are refused as if the bound
// views did not fit the chain; their stages run as kernels of their own.
void refuse_chain_launches(int n);
// (Tests.) While set, every recorded group tier 0 can run is run there,
// whatever the caches hold (nothing is compiled for it).
void interpret_groups(bool on);
size_t memo_size();
size_t memo_bytes();  // its estimated memory (bounded)
Profile profile();
void reset_profile();
void add_record_time(double ms);

// ---------------------------------------------------------------------------
// Auto-tuning (tuning.cc).

// numfuse.tune: start remembering the kernels flushes run (and their sizes,
// not their arrays); end returns how many distinct kernels were seen.
void capture_begin();
int capture_end();

struct TuneOptions {
  double budget_s = 10;  // for all captured kernels together
  int max_evals = 0;     // per kernel; 0: no limit
  // (kernel index, kernel count, what it is, progress) -- called from the
  // tuning thread between candidates.
  std::function<void(int, int, const std::string&, const tune::SearchProgress&)> progress;
};

struct TunedKernel {
  std::string ops, mdh, size_class;
  std::string target;  // where it was tuned (Target::name)
  std::string default_schedule, best_schedule;
  double default_ms = 0, best_ms = 0;
  int evals = 0, failures = 0, occurrences = 0;
  double tune_s = 0;
  bool stored = false;
  std::vector<std::string> errors;
};

// Tunes the captured kernels (the budget split by their observed run time),
// stores the winners and makes the next flushes use them.
std::vector<TunedKernel> tune_captured(const TuneOptions& opt);

// Background tuning (Config::tune_seconds): wait until the queue is empty,
// or stop it (at exit).
void background_wait();
void background_stop();
void background_pause();   // fork_prepare: no tuning work runs across a fork
void background_resume();
void background_reset_in_child();
int background_done();  // kernels tuned in the background so far

// The store of tuned schedules (<cache dir>/schedules.txt by default).
void set_schedule_store(const std::string& path);
// The machine new plans' schedules are made, tuned and stored for (the
// active target's: tune::device_id).
std::string schedule_device();
// Whether the active target's kernels run on a device (its results may
// live there).
bool device_target_active();

}  // namespace nf::pipeline

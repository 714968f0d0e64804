// Internal to the pipeline: choosing a group's schedule (random for property
// tests, tuned from the store, or the default) and the auto-tuning driver
// that measures candidate schedules (tune::search decides which).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jit/jit.h"
#include "mdh/mdh.h"
#include "pipeline/pipeline.h"
#include "pipeline/target.h"
#include "tune/tune.h"

namespace nf::pipeline::detail {

std::string kernel_key(const mdh::MdHom& h, const tune::Schedule& s, const Target& t = cpu_target());
// The compiled kernel of (h, s) for t, from the kernel caches or compiled now
// at `opt` (t's passes, renderer and compiler).
jit::KernelRef compile_kernel(const mdh::MdHom& h, const tune::Schedule& s, jit::Opt opt = jit::Opt::Full,
                              bool* hit = nullptr, bool* disk_hit = nullptr, const Target& t = cpu_target());
// The multi-stage kernel of the stages (homs, schedules) composed as
// `shape` (lower.h: lower with a ChainShape), keyed by the shape and the stages' keys.
std::string chain_key(const std::vector<const mdh::MdHom*>& homs, const std::vector<tune::Schedule>& schedules,
                      const lower::ChainShape& shape, const Target& t = cpu_target());
jit::KernelRef compile_chain(const std::vector<const mdh::MdHom*>& homs, const std::vector<tune::Schedule>& schedules,
                             const lower::ChainShape& shape, jit::Opt opt = jit::Opt::Full, bool* hit = nullptr,
                             bool* disk_hit = nullptr, const Target& t = cpu_target());
// Runs h under s on b (the kernel k, or the library routine). A Quick kernel
// is timed (its first 8 launches, then one in 8, weighted); once its runs add up to kUpgradeAfterNs it is recompiled Full in
// the background (the upgrade pays for itself when the kernel keeps running).
void run_scheduled(const mdh::MdHom& h, const tune::Schedule& s, jit::Kernel* k, const mdh::Bindings& b,
                   const Target& t = cpu_target());
constexpr int64_t kUpgradeAfterNs = 2'000'000;
// A Quick kernel that ran `ns` as a stage of a multi-stage launch: counted
// toward its upgrade like run_scheduled's timed launches.
void credit_quick(jit::Kernel* k, int64_t ns);

// The schedule a new plan uses for h; `tuned` tells whether it came from the
// store. May queue h for background tuning (Config::tune_seconds): then
// `tuning` (where given) receives the job's key, for being_tuned.
// Schedules are made for t's machine (t.machine(): a GPU's are grid
// schedules with device parameters, tune/gpu_model.cc) and stored per
// machine; a device's are tuned by numfuse.tune (tune_captured), not in the
// background (its launches would contend with the program's).
tune::Schedule choose_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Config& cfg, bool* tuned,
                               std::string* tuning = nullptr, const Target& t = cpu_target());
// Whether the background tuning job of `key` (choose_schedule's `tuning`;
// empty: none) is queued or running: its kernel's schedule may still change.
bool being_tuned(const std::string& key);

// Where the buffers of a group's bindings lie relative to each other, so
// that tuning can run on synthetic data of the same shape (aliasing kept)
// without holding on to the program's arrays.
struct SynthSpec {
  std::vector<int> group;         // per pointer slot: synthetic buffer index
  std::vector<int64_t> offsets;   // per pointer slot: byte offset in it
  std::vector<int64_t> bytes;     // per synthetic buffer
  std::vector<DType> fill;        // per synthetic buffer: the type its data is drawn in
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int64_t total_bytes() const;
};
SynthSpec synth_spec(const mdh::MdHom& h, const mdh::Bindings& b);

// A kernel seen by tune capture (numfuse.tune) or queued for background tuning.
struct TuneJob {
  std::shared_ptr<const mdh::MdHom> hom;
  SynthSpec spec;
  std::string ops;       // the group's operations, for reports
  std::string cls;       // size class
  double weight_ms = 0;  // observed run time x occurrences
  int count = 1;
  const Target* target = &cpu_target();  // where the group ran: tuned there
};

// Capture (numfuse.tune): while on, every group run is remembered.
void capture_group(const std::shared_ptr<const mdh::MdHom>& hom, const mdh::Bindings& b, const std::string& ops,
                   double run_ms, const Target& t = cpu_target());
bool capturing();

}  // namespace nf::pipeline::detail

namespace nf::pipeline::detail {

// A multi-stage kernel's launch choices -- tile rows and the tile buffers'
// storage -- measured on its first live launches with tuning on
// (Config::tune_seconds): they compute the same values, only the time
// differs. Each candidate runs twice and the fastest is kept, and stored in
// the schedule store (by the chain kernel's key and the last stage's size
// class) for later processes. The measurement belongs to the chain kernel,
// not to a plan: a plan rebuilt when the memo is cleared (which happens
// whenever some kernel's schedule is tuned) goes on where the last one
// stopped. It starts only once no stage's schedule is still being tuned in
// the background (being_tuned): a stage tuned later is another chain
// kernel, whose launches are measured afresh.
struct LaunchTuning {
  // {0, 4, 16, 64} rows x {rolling, recomputed}, then rings of one row over
  // whole rows and in column strips.
  static constexpr int kCandidates = 10;
  static constexpr int64_t kRows[4] = {0, 4, 16, 64};  // 0: from the cache size
  double best_ms[kCandidates] = {};
  int launches = 0;
  int chosen = -1;
  bool from_store = false;  // `chosen` came from the store, written by an earlier process
  std::string key, size_class;  // the store's key: the chain kernel's, and the last stage's size class
  static int64_t rows(int c) { return c >= 8 ? 1 : kRows[c / 2]; }
  static int storage(int c) { return c >= 8 ? 2 : c % 2 == 0 ? 1 : 0; }
  static bool strips(int c) { return c == 9; }
  // The candidate the next launch measures (-1: none, chosen).
  int candidate() const { return chosen >= 0 ? -1 : launches % kCandidates; }
  // The candidate ran in `ms`; after 2 x kCandidates launches the fastest
  // is chosen and stored.
  void record(int candidate, double ms);
};
// The measurement of this chain kernel at this size class, created on first
// use with what the store holds for it. The caller holds the flush lock
// (the pointer stays valid however the table changes).
std::shared_ptr<LaunchTuning> launch_tuning(const std::string& chain_key, const std::string& size_class);

// Recompute or store (fusion::recompute_producers, Config::recompute): the
// cost model substitutes a cheap producer into its readers through shifted
// views, so its results are never stored. With tuning on
// (Config::tune_seconds), a window where the model does so runs both ways on
// its live runs -- recomputed and stored in turn from its first run (both
// compute the same values: only the time differs) -- until each way has
// kRuns memoized runs (runs that compiled nothing); the way of the fastest
// run is kept for the later windows of that structure, and stored in the
// schedule store (keyed by the window's operations, types and views, and its
// size), so that later processes start with it. While the two ways are
// measured, multi-stage kernels launch with their default choices: their
// own tuning (LaunchTuning) starts once the way is chosen. All of it
// runs under the flush lock.
struct RecomputeChoice {
  static constexpr int kRuns = 3;
  static constexpr int kMaxRuns = 40;  // undecided after this many runs (no memoized ones): recompute
  double best_ms[2] = {};              // the fastest memoized run: [0] recomputed, [1] stored
  int measured[2] = {};                // memoized runs measured per way
  int runs = 0;                        // runs so far, memoized or not
  int chosen = -1;                     // 0 recompute, 1 store; -1: still measuring
  bool nothing = false;                // the model recomputes nothing in these windows: no choice
  bool from_store = false;             // `chosen` was written by an earlier process
  std::string key;                     // the store's key: the window, stably across processes
  bool measuring() const { return chosen < 0; }
  // The way the next window runs.
  int way() const { return chosen >= 0 ? chosen : runs % 2; }
  // A window ran `way` in `ms` (its analysis included); memo_hit: it
  // compiled nothing. Chooses (and stores the choice) when both ways have
  // kRuns measured runs.
  void record(int way, bool memo_hit, double ms);
  // For explain(): what this run did and why.
  std::string describe(int way) const;
};
// The window's structure hashed the same in every process (Structure holds
// each operation's name by address; here the names are spelled out): what
// the choice is stored by, and what random schedules draw the way from, so a
// seed draws the same ways in every run.
uint64_t stable_window_hash(const std::vector<Task>& window);
// The choice for windows of this structure (Structure::view, of `window`
// before any rewrite), created on first use with what the store holds for
// it. The caller holds the flush lock; the reference is valid until the
// next call.
RecomputeChoice& recompute_choice(std::string_view structure, const std::vector<Task>& window);

}  // namespace nf::pipeline::detail

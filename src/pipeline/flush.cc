// The flush driver.
//
//   window ─► signature ─► memo hit? ─yes─► rebind each group ─► run
//                              │no
//                              ▼
//                  partition ─► build ─► schedule ─► (lower ─► render ─► compile | cache) ─► memo ─► run
//
// The memo (Diffuse 5.2) maps a window's canonical form to its plan: groups,
// MdHom templates with binding recipes, schedules and loaded kernels. A loop
// body is analysed and compiled once; later iterations only rebind pointers,
// offsets and scalar constants.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <random>
#include <string_view>
#include <unordered_map>

#include <tbb/parallel_for.h>

#include "core/checks.h"
#include "codegen/codegen.h"
#include "core/clock.h"
#include "core/error.h"
#include "extern/extern.h"
#include "jit/jit.h"
#include "lower/lower.h"
#include "mdh/mdh.h"
#include "core/fpe.h"
#include "pipeline/pipeline.h"
#include "pipeline/tiers.h"
#include "pipeline/tuning.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

namespace nf::pipeline {

namespace {

// One flush executes at a time. Recursive for one reason: between
// fork_prepare and the fork itself the forking thread holds it on the fork's
// behalf while Python code (other at-fork hooks, signal handlers) may still
// run on that thread and sync. A flush never re-enters itself (t_in_flush).
std::recursive_mutex g_exec_mu;
thread_local bool t_in_flush = false;
std::atomic<int> g_active{0};  // flushes that have taken (or are about to take) a window
std::mutex g_report_mu;  // guards g_last and g_profile
FlushReport g_last;
Profile g_profile;

double ms_since(uint64_t t0) {
  return ticks_to_ms(ticks() - t0);
}

// What a memoized group learns as its plan is reused: the kernel compiled in
// the background for it, and how often tier 0 ran it meanwhile.
struct GroupState {
  std::atomic<jit::Kernel*> fn{nullptr};  // kept alive by `kernel`
  std::mutex mu;
  jit::KernelRef kernel;  // set once, under mu
  std::atomic<int> interpreted{0};
  std::atomic<bool> queued{false};
};

// One group of a plan. Holds no buffer: templates are stripped of pointers.
struct PlanGroup {
  int begin = 0, end = 0;
  // Tier 0 runs it (tiers.h) until a kernel is ready in state->fn.
  bool interpret = false;
  // A stage of a multi-stage kernel: its own kernel is compiled (into
  // state) only if it ever runs alone (the launch refused the views).
  bool deferred = false;
  // Why its kernel was compiled before it ran, when it was (explain():
  // "compiled on the critical path: ..."), with the estimates compared.
  const char* why = nullptr;
  double why_tier0_ms = 0, why_compile_ms = 0;
  std::shared_ptr<GroupState> state = std::make_shared<GroupState>();
  std::vector<int> dead;
  std::vector<int> temp_tasks;  // tasks whose output buffer is a temporary
  // For reports: the tasks' names (static strings, part of the signature, so
  // the same for every window of the plan) and the dead ones among them.
  std::vector<const char*> op_names;
  std::vector<int> dead_ops;
  std::string stop_reason;
  std::shared_ptr<const mdh::Built> tmpl;
  tune::Schedule schedule;
  bool tuned = false;
  std::string tuning;  // its schedule's background tuning job (choose_schedule), if one was queued
  const Target* target = &cpu_target();  // from the schedule to the launch
  std::string target_note;  // why not the active target ("" if it is)
  std::string key;
  jit::KernelRef fn;
  // The group's bindings on memo hits, rebound in place (mdh::rebind_again;
  // written under g_exec_mu, like everything a flush does with a plan).
  mutable mdh::Bindings bound;
  mutable bool bound_once = false;
  // What tier 0 decided on its first run of the group (splices, shared
  // blocks), replayed on the next ones (written under g_exec_mu, like `bound`).
  mutable detail::Tier0Memo tier0_memo;
};

// A multi-stage kernel's GroupState: its kernel, when tier 0 ran its stages
// at first sight and the kernel was compiled in the background (`compile`:
// what that compile needs).
struct ChainState : GroupState {
  std::shared_ptr<const detail::ChainCompile> compile;
};

// The kernel of a state from now on (the first one stored wins).
jit::Kernel* adopt(GroupState& st, jit::KernelRef k) {
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.kernel) {
    st.kernel = std::move(k);
    st.fn.store(st.kernel.get(), std::memory_order_release);
  }
  return st.kernel.get();
}

// A multi-stage kernel of the plan (fusion::Chain): plan groups
// [first, last] run together when all their kernels are ready.
struct PlanChain {
  int first = 0, last = 0;
  struct Link {
    int task = 0;  // the window task writing the link
    bool tile = false, copy = false;
  };
  std::vector<Link> links;
  // The composed kernel (lower::lower of its stages with the shape) and its structure.
  lower::ChainShape shape;
  std::string key;
  jit::KernelRef fn;  // (none: tier 0 runs the stages until `state` has the kernel)
  std::shared_ptr<ChainState> state = std::make_shared<ChainState>();
  // With tuning on (Config::tune_seconds): the measurement of the launch's
  // choices (tuning.h), found on its first tuned launch.
  mutable std::shared_ptr<detail::LaunchTuning> tuning;  // (written under g_exec_mu, like PlanGroup::bound)
};

struct Plan {
  std::vector<PlanGroup> groups;
  std::vector<PlanChain> chains;
  // Buffers to give back after each group runs: (task, slot) references
  // (slot -1 = output) to buffers that no Python array can see and that no
  // later group reads. Without this, a loop body's dead intermediates (e.g.
  // `pn = p.copy()` in every iteration) would all stay allocated until the
  // whole window has run.
  std::vector<std::vector<std::pair<int, int>>> release_after;
  // The window's points (the tasks' domains summed): the same for every
  // window with the plan's signature, whose structure holds the domains.
  int64_t points = 0;
};

// Computes Plan::release_after for a window (valid for every window with the
// same signature: it depends only on buffer identity and liveness).
void plan_releases(const std::vector<Task>& window, Plan& plan) {
  std::unordered_map<const Buffer*, std::pair<int, std::pair<int, int>>> last;  // buffer -> (group, ref)
  for (int g = 0; g < static_cast<int>(plan.groups.size()); ++g) {
    const PlanGroup& pg = plan.groups[g];
    for (int k = pg.begin; k < pg.end; ++k) {
      const Task& t = window[k];
      for (int s = -1; s < static_cast<int>(t.inputs.size()); ++s) {
        const Buffer* b = (s < 0 ? t.output : t.inputs[s]).buffer.get();
        if (!b->py_live) last[b] = {g, {k, s}};
      }
    }
  }
  plan.release_after.assign(plan.groups.size(), {});
  for (const auto& [b, where] : last) plan.release_after[where.first].push_back(where.second);
}

void release(const std::vector<Task>& window, const std::vector<std::pair<int, int>>& refs) {
  for (auto [k, s] : refs) (s < 0 ? window[k].output : window[k].inputs[s]).buffer->release_memory();
}

// A plan reached from a window as recorded, before recompute_producers
// rewrote it (fusion.h): the rewritten window's plan, each group's recipe
// translated to the recorded window (fusion::Source), so that a loop body
// whose window is rewritten every iteration binds and runs its plan without
// rewriting it again -- the rewrite's analysis cost three times the rest of
// a memoized flush. Valid for every window that window_matches `sig`.
struct Recorded {
  fusion::Signature sig;  // of the window as recorded
  int budget = 0;         // the rewrite's (Config::recompute)
  std::shared_ptr<const Plan> plan;
  std::vector<mdh::Recipe> recipes;  // per plan group (empty without a template)
  std::vector<std::vector<std::pair<int, int>>> release_after;  // Plan::release_after, translated
  // (reader, (task, slot)): a view a rewritten reader reads (Buffer::last_read).
  std::vector<std::pair<int, std::pair<int, int>>> reads;
  fusion::Recomputed rewrite;  // replayed where the rewritten tasks are needed
};

// The form of the window a memo hit's groups bind to: as rewritten (each
// template's own recipe), or as recorded (a Recorded's recipes) until
// something needs the rewritten tasks themselves -- tier 0, the
// floating-point flags' analysis, a failure's restore -- and rewrite()
// replays the rewrite.
struct WindowForm {
  std::vector<Task>* window = nullptr;
  std::shared_ptr<const Recorded> recorded;  // non-null: the window is as recorded
  bool replayed = false;                     // rewrite() replayed the rewrite
  const mdh::Recipe* recipe(size_t group) const { return recorded ? &recorded->recipes[group] : nullptr; }
  const std::vector<std::pair<int, int>>& releases(const Plan& p, size_t group) const {
    return recorded ? recorded->release_after[group] : p.release_after[group];
  }
  void rewrite() {
    if (!recorded) return;
    const std::shared_ptr<const Recorded> r = std::move(recorded);
    recorded.reset();
    replayed = true;
    if (!fusion::replay_recompute(*window, r->rewrite))
      throw std::logic_error("numfuse: a memoized recompute rewrite did not replay on its window");
  }
};

struct SigHash {
  size_t operator()(const fusion::Signature& s) const { return s.hash(); }
};

// What a memoized plan costs in memory, roughly: its signature and, per
// group, the expression template (accesses, nodes, parameters, recipe).
size_t plan_bytes(const fusion::Signature& sig, const Plan& p) {
  size_t b = sizeof(Plan) + sig.size + 64;
  for (const PlanGroup& g : p.groups) {
    b += sizeof(PlanGroup) + g.key.size() + g.stop_reason.size() + 8 * (g.dead.size() + g.temp_tasks.size());
    if (!g.tmpl) continue;
    const mdh::Built& t = *g.tmpl;
    b += sizeof(mdh::Built) + t.hom.accesses.size() * sizeof(mdh::Access) + t.hom.f.nodes.size() * sizeof(ExprNode) +
         t.hom.indices.size() * sizeof(mdh::Affine) + t.hom.outputs.size() * sizeof(mdh::Output) +
         8 * (t.bind.ints.size() + t.bind.floats.size() + t.hom.const_type.size() + t.hom.const_slot.size()) +
         t.recipe.access.size() * sizeof(mdh::Recipe::AccessSource) +
         t.recipe.params.size() * sizeof(mdh::Recipe::ParamSource) + 4 * t.tasks.size();
    b += 16 * t.recipe.access.size() + 8 * (t.bind.ints.size() + t.bind.floats.size());  // (PlanGroup::bound)
  }
  for (const auto& r : p.release_after) b += 8 * r.size() + 24;
  return b;
}

// The memo, bounded by the memory its plans take (not by their number: a
// loop whose windows never repeat would otherwise hold hundreds of MB of
// plans that are never hit). When full, the oldest plans go first.
class Memo {
 public:
  // A loop's windows repeat: a window is first matched against the latest
  // hits' signatures without building its own (fusion::window_matches; a
  // program whose body syncs up to kRecent times: lenet's three windows per
  // call rebuilt their signature every call when only two were tried, 4 of
  // its 12 ms). A miss costs a walk over the window, ending at its first
  // task that differs.
  std::shared_ptr<const Plan> find(const std::vector<Task>& window, std::string_view structure, fusion::Policy policy) {
    for (size_t i = 0; i < kMatched; ++i) {
      const Node* n = recent_[i];
      if (!n || !fusion::window_matches(window, structure, policy, n->first)) continue;
      std::rotate(recent_, recent_ + i, recent_ + i + 1);  // most recent first
      return n->second.plan;
    }
    return nullptr;
  }
  std::shared_ptr<const Plan> find(const fusion::Signature& s) {
    // A loop's windows repeat: its latest hits are compared byte for byte
    // first, without hashing the signature or probing the table.
    for (size_t i = 0; i < kRecent; ++i) {
      const Node* n = recent_[i];
      if (!n || n->first.size != s.size || n->first.view() != s.view()) continue;
      std::rotate(recent_, recent_ + i, recent_ + i + 1);  // most recent first
      return n->second.plan;
    }
    auto it = map_.find(s);
    if (it == map_.end()) return nullptr;
    std::rotate(recent_, recent_ + kRecent - 1, recent_ + kRecent);
    recent_[0] = &*it;
    return it->second.plan;
  }
  void insert(fusion::Signature s, std::shared_ptr<const Plan> p) {
    const size_t b = plan_bytes(s, *p);
    if (b > kMaxBytes / 4 || map_.count(s)) return;  // one window may not crowd out the rest
    while (bytes_ + b > kMaxBytes && !order_.empty()) {
      std::fill(recent_, recent_ + kRecent, nullptr);
      for (auto& r : recorded_) r.reset();
      auto it = map_.find(order_.front());
      if (it != map_.end()) {
        bytes_ -= it->second.bytes;
        map_.erase(it);
      }
      order_.pop_front();
    }
    order_.push_back(s);
    bytes_ += b;
    auto it = map_.emplace(std::move(s), Entry{std::move(p), b}).first;
    std::rotate(recent_, recent_ + kRecent - 1, recent_ + kRecent);
    recent_[0] = &*it;
  }
  // The window as recorded, matched against the recorded forms of the
  // latest rewritten windows (none unless recompute_producers rewrote one).
  std::shared_ptr<const Recorded> find_recorded(const std::vector<Task>& window, std::string_view structure,
                                                fusion::Policy policy, int budget) {
    for (size_t i = 0; i < kRecent && recorded_[i]; ++i) {
      if (recorded_[i]->budget != budget || !fusion::window_matches(window, structure, policy, recorded_[i]->sig))
        continue;
      std::rotate(recorded_, recorded_ + i, recorded_ + i + 1);
      return recorded_[0];
    }
    return nullptr;
  }
  void insert_recorded(std::shared_ptr<const Recorded> r) {
    std::rotate(recorded_, recorded_ + kRecent - 1, recorded_ + kRecent);
    recorded_[0] = std::move(r);
  }
  void clear() {
    std::fill(recent_, recent_ + kRecent, nullptr);
    for (auto& r : recorded_) r.reset();
    map_.clear();
    order_.clear();
    bytes_ = 0;
  }
  size_t size() const { return map_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kMaxBytes = size_t(32) << 20;
  struct Entry {
    std::shared_ptr<const Plan> plan;
    size_t bytes;
  };
  std::unordered_map<fusion::Signature, Entry, SigHash> map_;
  using Node = std::unordered_map<fusion::Signature, Entry, SigHash>::value_type;
  static constexpr size_t kRecent = 8;
  static constexpr size_t kMatched = kRecent;  // of them, tried by find(window)
  const Node* recent_[kRecent] = {};  // the latest hits (map nodes stay put until erased)
  std::shared_ptr<const Recorded> recorded_[kRecent];  // most recent first (they hold their plans)
  std::deque<fusion::Signature> order_;
  size_t bytes_ = 0;
};
Memo g_memo;  // guarded by g_exec_mu

// A group being prepared on the slow path.
struct Prepared {
  fusion::Group group;
  bool interpret = false;  // tier 0 runs it now; compiled later if it recurs
  std::shared_ptr<mdh::Built> built;
  tune::Schedule schedule;
  bool tuned = false;
  std::string tuning;  // PlanGroup::tuning
  const Target* target = &cpu_target();
  std::string target_note;  // PlanGroup::target_note
  std::string key;
  jit::KernelRef fn;
  bool hit = false, disk_hit = false;
  bool deferred = false;  // a stage whose chain's kernel is compiled instead (PlanGroup::deferred)
  std::string error;
  // Why its kernel compiles before it runs (not on tier 0; PlanGroup::why):
  // a static string, and the tier decision's figures where they decided.
  const char* why = nullptr;
  double why_tier0_ms = 0, why_compile_ms = 0;
};

// How often each kernel (by key) was wanted while not compiled: a kernel
// wanted again is compiled in the background, whichever windows want it (a
// loop over shrinking slices makes a new window every iteration, all with
// the same kernels). Bounded: cleared when it grows past kMaxWanted keys.
std::unordered_map<std::string, int> g_wanted;  // guarded by g_exec_mu
constexpr size_t kMaxWanted = 4096;

bool wanted_again(const std::string& key) {
  if (g_wanted.size() > kMaxWanted) g_wanted.clear();
  return ++g_wanted[key] >= 2;
}

// Tier 0's estimate for the groups of a window that share one kernel: their
// time in all, the most any one of them takes, and how many there are.
struct Tier0Estimate {
  double ms = 0, most_ms = 0;
  int groups = 0;
};

// A repeated kernel is compiled in the background, its groups run on tier 0
// meanwhile, when no one repetition on tier 0 takes more than this share of
// a compile: then a repetition that finds the kernel not ready yet costs
// little, and the repetitions after the compile take the kernel.
constexpr double kRepetitionShare = 1.0 / 16;

std::atomic<bool> g_interpret_groups{false};  // (tests: interpret_groups)

// The tier of a new group: its kernel from the caches if it is there (in
// memory, or on disk), else compiled at once or run on tier 0 (tiers.h).
// `tier0[key]`: tier 0's estimate for all the window's groups that share the
// kernel. A loop body repeated in one window pays for its kernel's compile in
// this very flush: compiled at once when one repetition is costly, else in
// the background while tier 0 runs the first repetitions (kernel_of takes the
// kernel up for the rest), so that no repetition waits for the compiler.
void choose_tier(const std::vector<Task>& window, Prepared& p, const Config& cfg,
                 const std::unordered_map<std::string, Tier0Estimate>& tier0) {
  if (!p.built || p.built->tasks.empty() || p.schedule.routine != tune::Routine::None) return;
  if (g_interpret_groups.load(std::memory_order_relaxed) && !p.group.stage && detail::interpretable(window, p.group)) {
    p.interpret = true;
    return;
  }
  bool disk = false;
  if (jit::KernelRef f = p.target->compiler().try_get(p.key, &disk)) {
    p.fn = std::move(f);
    p.hit = !disk;
    p.disk_hit = disk;
    return;
  }
  // Compiled at once: tier lazy, random schedules, tuning on, or a schedule
  // from the store (someone tuned this kernel: it is wanted compiled).
  if (cfg.tier == Tier::Lazy || cfg.random_schedule_seed >= 0 || cfg.tune_seconds > 0 || p.tuned) {
    p.why = cfg.tier == Tier::Lazy ? "tier=\"lazy\" compiles every kernel"
            : p.tuned              ? "a tuned schedule is stored for it"
                                   : "tuning or random schedules are on";
    return;
  }
  if (!detail::interpretable(window, p.group)) {
    p.why = "tier 0 has no loop for one of its operations";
    return;
  }
  if (p.group.stage) {  // a stage of a multi-stage kernel: compiled now
    p.why = "a stage of a multi-stage kernel whose tier-0 estimate is above its compile";
    return;
  }
  auto it = tier0.find(p.key);
  const Tier0Estimate est = it == tier0.end() ? Tier0Estimate{} : it->second;
  const double compile = detail::compile_estimate_ms();
  const bool eager = cfg.tier == Tier::Eager;
  // Cheaper on tier 0 than a compile (compiled in the background once the
  // kernel is wanted again), or a repetition cheap next to a compile.
  const bool cheap = eager || est.ms < compile;
  const bool repeated = !cheap && est.groups > 1 && est.most_ms <= kRepetitionShare * compile;
  if (!cheap && !repeated) {  // compiled at once
    p.why = "its estimate on tier 0 is above the compile's";
    p.why_tier0_ms = est.ms;
    p.why_compile_ms = compile;
    return;
  }
  p.interpret = true;
  // Compiled in the background at once when it repeats in this window or
  // was wanted before; else when its plan runs again (kernel_of). (Not at
  // first sight: a compile running beside the program's next operations
  // measured them up to 3x slower on a two-core machine, a loss for a
  // program that never comes back, and the flush that queues it has run.)
  if (repeated || (!eager && wanted_again(p.key)))
    detail::compile_in_background(std::shared_ptr<const mdh::MdHom>(p.built, &p.built->hom), p.schedule, *p.target);
}

// Whether compile_one has anything to do for `p` (a kernel to compile or
// fetch from a cache).
bool needs_kernel(const Prepared& p) {
  return p.built && !p.built->tasks.empty() && p.schedule.routine == tune::Routine::None && !p.interpret && !p.fn &&
         !p.deferred;
}

void compile_one(Prepared& p) {
  if (!needs_kernel(p)) return;
  try {
    const uint64_t t0 = ticks();
    p.fn = detail::compile_kernel(p.built->hom, p.schedule, config().quick_compile ? jit::Opt::Quick : jit::Opt::Full,
                                  &p.hit, &p.disk_hit, *p.target);
    if (!p.hit && !p.disk_hit) detail::note_compile_ms(ms_since(t0));
  } catch (const std::exception& e) {
    p.error = e.what();
  }
}

Prepared prepare(const std::vector<Task>& window, const fusion::Group& g, const Config& cfg) {
  Prepared p;
  p.group = g;
  p.built = std::make_shared<mdh::Built>(mdh::build(window, g));
  if (p.built->tasks.empty()) return p;
  // The active target plans the group, unless it cannot compute it (the
  // CPU then does).
  const Target& want = cfg.target ? *cfg.target : cpu_target();
  if (&want != &cpu_target()) {
    p.target_note = want.refuses(p.built->hom);
    if (p.target_note.empty()) p.target = &want;
  }
  p.schedule = detail::choose_schedule(p.built->hom, p.built->bind, cfg, &p.tuned, &p.tuning, *p.target);
  // A stage runs on one thread per tile: the launcher parallelizes the tiles.
  if (g.stage) {
    p.schedule.parallel = false;
    p.schedule.grid = 0;
    p.schedule.block_tiles = false;
    p.schedule.block_threads = 0;
  }
  p.key = detail::kernel_key(p.built->hom, p.schedule, *p.target);
  return p;
}

// A chain of the slow path: its composed kernel, compiled with the groups'.
struct PreparedChain {
  fusion::Chain chain;
  lower::ChainShape shape;
  std::vector<const mdh::MdHom*> homs;
  std::vector<tune::Schedule> schedules;
  std::string key;
  jit::KernelRef fn;
  bool hit = false, disk_hit = false;
  std::string error;
  // Not in the caches and cheaper on tier 0 than its compile: tier 0 runs
  // the stages, the kernel compiles in the background (at once when `queue`).
  bool on_tier0 = false, queue = false;
};

// Whether the chain's launch can be planned on this window's bindings;
// if so, `out` gets its structure and stages.
bool chain_launches(const fusion::Chain& c, const std::vector<Prepared>& prepared, PreparedChain& out) {
  std::vector<runtime::ChainStage> stages;
  for (int g = c.first; g <= c.last; ++g) {
    const Prepared& p = prepared[g];
    if (!p.built || p.built->tasks.empty() || p.schedule.routine != tune::Routine::None) return false;
    stages.push_back({&p.built->hom, &p.built->bind});
  }
  std::vector<runtime::LinkSpec> links;
  for (const fusion::Chain::Link& l : c.links) links.push_back({l.buffer.get(), l.tile, l.copy});
  const runtime::ChainPlan cp = runtime::plan_chain(stages, links, runtime::ChainOptions{});
  if (!cp.why_not.empty()) return false;
  out.chain = c;
  out.shape = runtime::chain_shape(stages, cp);
  for (int g = c.first; g <= c.last; ++g) {
    out.homs.push_back(&prepared[g].built->hom);
    out.schedules.push_back(prepared[g].schedule);
  }
  out.key = detail::chain_key(out.homs, out.schedules, out.shape, *prepared[c.first].target);
  return true;
}

void compile_chain(PreparedChain& c, const Target& t) {
  try {
    const uint64_t t0 = ticks();
    c.fn = detail::compile_chain(c.homs, c.schedules, c.shape, config().quick_compile ? jit::Opt::Quick : jit::Opt::Full,
                                 &c.hit, &c.disk_hit, t);
    if (!c.hit && !c.disk_hit) detail::note_compile_ms(ms_since(t0));
  } catch (const std::exception& e) {
    c.error = e.what();
  }
}

// Whether a multi-stage kernel runs its stages on tier 0 at first sight,
// as choose_tier decides for a group: its kernel in neither cache, every
// stage interpretable, and tier 0's estimate for all of them below a
// compile. Then its stages are interpreted (and never compiled alone) and
// the kernel compiles in the background, as choose_tier's kernels do: at
// once when it was wanted before, else when the plan runs again.
void choose_chain_tier(const std::vector<Task>& window, std::vector<Prepared>& prepared, PreparedChain& c,
                       const Config& cfg) {
  const bool forced = g_interpret_groups.load(std::memory_order_relaxed);
  if (!forced && (cfg.tier == Tier::Lazy || cfg.random_schedule_seed >= 0 || cfg.tune_seconds > 0)) return;
  double ms = 0;
  for (int g = c.chain.first; g <= c.chain.last; ++g) {
    const Prepared& p = prepared[g];
    if ((!forced && (p.tuned || p.fn)) || !detail::interpretable(window, p.group)) return;
    ms += detail::interpret_estimate_ms(window, p.group);
  }
  const double compile = detail::compile_estimate_ms();
  if (!forced && cfg.tier != Tier::Eager && ms >= compile) return;
  const Target& t = *prepared[c.chain.first].target;
  if (!forced && t.compiler().try_get(c.key)) return;  // (compile_chain takes it from there)
  c.on_tier0 = true;
  c.queue = !forced && cfg.tier != Tier::Eager && wanted_again(c.key);
  for (int g = c.chain.first; g <= c.chain.last; ++g) prepared[g].interpret = true;
}

// The kernel of a multi-stage kernel whose stages tier 0 has been running
// (choose_chain_tier): compiled in the background since (nullptr: not yet;
// queued the second time the plan runs, if not queued already).
jit::Kernel* chain_kernel(const PlanChain& c, const Target& t) {
  ChainState& st = *c.state;
  if (jit::Kernel* f = st.fn.load(std::memory_order_acquire)) return f;
  if (!st.compile || g_interpret_groups.load(std::memory_order_relaxed)) return nullptr;
  if (jit::KernelRef f = t.compiler().try_get(c.key)) return adopt(st, std::move(f));
  if (config().tier != Tier::Eager && st.interpreted.fetch_add(1) >= 1 && !st.queued.exchange(true))
    detail::compile_chain_in_background(c.key, st.compile);
  return nullptr;
}

// The plan's group for p. Its template is p's expression itself (not a
// copy: copying every analysed group's MdHom, bindings and recipe was a
// tenth of an unmemoized flush), without the window's buffers and offsets
// -- the caller keeps a copy of those bindings for this window's run first.
PlanGroup to_plan_group(const std::vector<Task>& window, Prepared& p) {
  PlanGroup g;
  g.begin = p.group.begin;
  g.end = p.group.end;
  g.dead = p.group.dead;
  g.stop_reason = std::move(p.group.stop_reason);  // (p's strings are not read after this)
  g.op_names.reserve(g.end - g.begin);
  for (int k = g.begin; k < g.end; ++k) g.op_names.push_back(window[k].name);
  for (int d : g.dead) g.dead_ops.push_back(d - g.begin);
  for (const BufferPtr& b : p.group.temporaries)
    for (int k = g.begin; k < g.end; ++k)
      if (window[k].output.buffer == b) {
        g.temp_tasks.push_back(k);
        break;
      }
  if (p.built) {
    p.built->bind.buffers.clear();  // (borrowed from this window: they die with it)
    p.built->bind.offsets.clear();
    g.tmpl = p.built;
  }
  g.schedule = p.schedule;
  g.tuned = p.tuned;
  g.tuning = std::move(p.tuning);
  g.target = p.target;
  g.target_note = std::move(p.target_note);
  g.key = std::move(p.key);
  g.fn = p.fn;
  g.interpret = p.interpret;
  g.deferred = p.deferred;
  g.why = p.interpret ? nullptr : p.why;
  g.why_tier0_ms = p.why_tier0_ms;
  g.why_compile_ms = p.why_compile_ms;
  return g;
}

// Whether a plan group computes anything (a kernel, a library routine or tier 0).
bool runs(const PlanGroup& g) {
  return g.tmpl && !g.tmpl->tasks.empty() &&
         (g.fn || g.interpret || g.deferred || g.schedule.routine != tune::Routine::None);
}

// The kernel a group runs: compiled with its plan, or (a group tier 0 has
// been running) compiled in the background since. A group whose window keeps
// coming back gets its kernel compiled in the background.
jit::Kernel* kernel_of(const PlanGroup& g) {
  if (g.fn) return g.fn.get();
  if (!g.interpret && !g.deferred) return nullptr;
  if (jit::Kernel* f = g.state->fn.load(std::memory_order_acquire)) return f;
  // A stage running alone: its kernel now.
  if (g.deferred)
    return adopt(*g.state, detail::compile_kernel(g.tmpl->hom, g.schedule,
                                                config().quick_compile ? jit::Opt::Quick : jit::Opt::Full, nullptr, nullptr,
                                                *g.target));
  if (g_interpret_groups.load(std::memory_order_relaxed)) return nullptr;
  if (jit::KernelRef f = g.target->compiler().try_get(g.key)) return adopt(*g.state, std::move(f));
  if (config().tier != Tier::Eager && g.state->interpreted.fetch_add(1) >= 1 && !g.state->queued.exchange(true))
    detail::compile_in_background(std::shared_ptr<const mdh::MdHom>(g.tmpl, &g.tmpl->hom), g.schedule, *g.target);
  return nullptr;
}

// Floating-point flags `f` raised by group g's kernel (or its tasks run by
// tier 0), as an event for the bindings.
void note_group_fp(uint8_t f, const std::vector<Task>& window, const PlanGroup& g) {
  std::vector<const char*> ops = fp_ops_of(window, g.begin, g.end, g.dead);
  if (const uint8_t real = detail::genuine(f, ops, window, g.begin, g.end)) detail::note_fp(real, std::move(ops));
}

// Group `index`'s bindings: `given`, or (memo hits) its template rebound to
// the window, in the form it has (WindowForm), in the group's own bindings
// (the caller holds g_exec_mu; the bindings borrow the window's buffers).
const mdh::Bindings* bindings_of(const WindowForm& form, const PlanGroup& g, size_t index,
                                 const mdh::Bindings* given) {
  if (given) return given;
  const mdh::Recipe& recipe = form.recorded ? *form.recipe(index) : g.tmpl->recipe;
  if (g.bound_once) {
    mdh::rebind_again(*form.window, recipe, g.bound);
  } else {
    mdh::rebind(*form.window, *g.tmpl, recipe, g.bound);
    g.bound_once = true;
  }
  return &g.bound;
}

// Runs one group of a plan on `window` and describes it in `gr` (a fresh
// report, built in place in the flush's report). `bind`: the
// group's bindings, or nullptr to rebind its template to the window.
// `clock`: when the group started (the previous group's end), set to its end
// (one clock read per group).
void run_group(WindowForm& form, const std::shared_ptr<const Plan>& plan, size_t index, const mdh::Bindings* bind,
               bool dump, uint64_t& clock, GroupReport& gr) {
  const std::vector<Task>& window = *form.window;
  const PlanGroup& g = plan->groups[index];
  gr.stop_ptr = &g.stop_reason;
  gr.dead = static_cast<int>(g.dead.size());
  gr.names_ptr = &g.op_names;
  gr.dead_ptr = &g.dead_ops;
  if (!g.temp_tasks.empty()) {
    gr.temporaries.reserve(g.temp_tasks.size());
    for (int k : g.temp_tasks) gr.temporaries.push_back(window[k].output.buffer->id());
  }
  if (runs(g)) {
    jit::Kernel* const fn = kernel_of(g);
    if (fn || g.schedule.routine != tune::Routine::None) {
      bind = bindings_of(form, g, index, bind);
      // The kernel's floating-point flags, as NumPy reads them around a
      // ufunc loop: cleared before (whatever ran here last, a compile
      // included, set them), read after.
      fpe::take();
      detail::run_scheduled(g.tmpl->hom, g.schedule, fn, *bind, *g.target);
      if (const uint8_t f = fpe::take()) {
        form.rewrite();  // (the flags' analysis reads the tasks)
        note_group_fp(f, window, g);
      }
      if (dump && fn) gr.source = g.target->compiler().source_of(g.key);
    } else {
      // (Tier 0 runs the tasks, not the template: a memo hit's group is not
      // rebound. The report's domain is the template's extents, the same in
      // every window of the plan.)
      if (!bind) bind = &g.tmpl->bind;
      form.rewrite();
      fpe::take();
      gr.tier0_passes = detail::interpret(window, g.begin, g.end, g.dead, &g.tier0_memo);
      if (const uint8_t f = fpe::take()) note_group_fp(f, window, g);
      gr.tier0 = true;
      // (The tier decision's figures, for explain() to set beside the time taken.)
      // (the same for every window of the plan: found once)
      if (g.tier0_memo.estimate_ms < 0)
        g.tier0_memo.estimate_ms = detail::interpret_estimate_ms(window, g.begin, g.end, g.dead);
      gr.tier0_estimate_ms = g.tier0_memo.estimate_ms;
      gr.compile_estimate_ms = detail::compile_estimate_ms();
      gr.compiling = detail::compile_pending(g.key);
    }
    gr.hom = &g.tmpl->hom;
    if (!gr.tier0 && g.why) {
      gr.why_compiled = g.why;
      gr.tier0_estimate_ms = g.why_tier0_ms;
      gr.compile_estimate_ms = g.why_compile_ms;
    }
    if (!gr.tier0) gr.target = g.target->name;
    if (!gr.tier0 && g.target->device) gr.device_kernel = kernel_of(g);
    if (!g.target_note.empty()) gr.target_note = &g.target_note;
    if (bind) gr.ints.assign(bind->ints.data(), bind->ints.size());
    gr.schedule_ptr = &g.schedule;
    gr.key_ptr = &g.key;
    gr.tuned = g.tuned;
  }
  const uint64_t t1 = ticks();
  gr.run_ms = ticks_to_ms(t1 - clock);
  clock = t1;
  if (gr.hom && bind && detail::capturing()) {
    std::string ops;
    for (const std::string& o : gr.ops()) ops += (ops.empty() ? "" : ", ") + o;
    detail::capture_group(std::shared_ptr<const mdh::MdHom>(g.tmpl, gr.hom), *bind, ops, gr.run_ms, *g.target);
  }
}

// Runs the multi-stage kernel `c` of the plan (one composed kernel:
// runtime.h) and appends a report per stage. Returns false, having run
// nothing, when the launch's halo inference refuses the bound views (or
// finds another structure); the caller then runs the groups one by one.
// `given`: the groups' bindings (indexed by plan group), or empty to rebind
// the templates.
std::atomic<int> g_refuse_chains{0};

bool run_chain(WindowForm& form, const std::shared_ptr<const Plan>& plan, const PlanChain& c,
               const std::vector<const mdh::Bindings*>& given, const Config& cfg, uint64_t& clock,
               std::vector<GroupReport>& reports) {
  const std::vector<Task>& window = *form.window;
  jit::Kernel* const kernel = c.fn ? c.fn.get() : chain_kernel(c, *plan->groups[c.first].target);
  if (!kernel) return false;
  if (g_refuse_chains.load(std::memory_order_relaxed) > 0 && g_refuse_chains.fetch_sub(1) > 0) return false;
  std::vector<runtime::ChainStage> stages;
  for (int g = c.first; g <= c.last; ++g) {
    const PlanGroup& pg = plan->groups[g];
    if (!runs(pg) || pg.schedule.routine != tune::Routine::None) return false;
    runtime::ChainStage st;
    st.hom = &pg.tmpl->hom;
    st.bind = bindings_of(form, pg, static_cast<size_t>(g), given.empty() ? nullptr : given[g]);
    stages.push_back(st);
  }
  std::vector<runtime::LinkSpec> links;
  for (const PlanChain::Link& l : c.links) links.push_back({window[l.task].output.buffer.get(), l.tile, l.copy});
  runtime::ChainOptions opt;
  opt.tile_rows = cfg.stage_rows;
  opt.col_tile = cfg.stage_cols;
  opt.storage = cfg.stage_storage;
  // Half of L2 for the tile buffers, the rest for the rows streaming
  // through (measured, 2048² float64: the blur's one 16 KB-row link ran best
  // at 64 rows, the diffusion's three at 8-16, both 1.4x slower at 4x that).
  opt.scratch_budget = cpu_target().machine().l2_bytes / 2;
  // Column strips (half of L1 for a strip's rows of the ring buffers) only
  // where asked for (stage_cols) or where the launch's tuning measured them
  // faster: they are not faster everywhere (2048² float64 diffusion: 512-
  // column strips measured 1.3x faster than whole rows on one 2-core
  // machine, 320-column strips 1.9x slower on a 2-core AMD EPYC, and the
  // blur and the flux-limited diffusion 1.5x slower there), and whole rows
  // lose less where they lose.
  const int64_t strip_budget = cpu_target().machine().l1_bytes / 2;
  opt.strip_budget = 0;
  if (cfg.random_schedule_seed >= 0) {
    // Random schedules draw the launch's choices too.
    std::mt19937_64 rng(static_cast<uint64_t>(cfg.random_schedule_seed) ^ jit::hash64(plan->groups[c.first].key));
    static constexpr int64_t kRows[] = {0, 1, 2, 3, 5, 16};
    opt.tile_rows = kRows[rng() % 6];
    opt.storage = static_cast<int>(rng() % 3);
    static constexpr int64_t kCols[] = {0, 0, 1, 3, 8, 64};
    opt.col_tile = kCols[rng() % 6];
  }
  int candidate = -1;
  const detail::LaunchTuning* tn = nullptr;
  bool waits = false;  // a stage's schedule is still being tuned: the launch's tuning waits
  if (cfg.tune_seconds > 0 && cfg.random_schedule_seed < 0 && cfg.stage_rows == 0) {
    // (Stored per device, chain kernel and size class of the last stage.)
    if (!c.tuning) c.tuning = detail::launch_tuning(c.key, tune::size_class(*stages.back().hom, *stages.back().bind));
    tn = c.tuning.get();
    for (int g = c.first; g <= c.last && tn->chosen < 0 && !waits; ++g)
      waits = detail::being_tuned(plan->groups[g].tuning);
    if (!waits) {
      const int pick = tn->chosen >= 0 ? tn->chosen : (candidate = tn->candidate());
      opt.tile_rows = detail::LaunchTuning::rows(pick);
      opt.storage = detail::LaunchTuning::storage(pick);
      if (detail::LaunchTuning::strips(pick)) opt.strip_budget = strip_budget;
    }
  }
  runtime::ChainPlan cp = runtime::plan_chain(stages, links, opt);
  if (!cp.why_not.empty() || runtime::chain_shape(stages, cp) != c.shape) return false;
  fpe::take();
  const uint64_t t0 = ticks();
  runtime::run_chain(kernel->fn.load(std::memory_order_acquire), c.shape, stages, cp);
  const uint64_t t1 = ticks();
  if (const uint8_t f = fpe::take()) {
    form.rewrite();  // (the flags' analysis reads the tasks)
    const PlanGroup& a = plan->groups[c.first];
    const PlanGroup& b = plan->groups[c.last];
    std::vector<int> dead;
    for (int g = c.first; g <= c.last; ++g) dead.insert(dead.end(), plan->groups[g].dead.begin(), plan->groups[g].dead.end());
    std::vector<const char*> ops = fp_ops_of(window, a.begin, b.end, dead);
    if (const uint8_t real = detail::genuine(f, ops, window, a.begin, b.end)) detail::note_fp(real, std::move(ops));
  }
  const int64_t ns = static_cast<int64_t>(ticks_to_ms(t1 - t0) * 1e6);
  detail::credit_quick(kernel, ns);
  if (candidate >= 0) c.tuning->record(candidate, ticks_to_ms(t1 - t0));
  for (int g = c.first; g <= c.last; ++g) {
    const PlanGroup& pg = plan->groups[g];
    GroupReport& gr = reports.emplace_back();
    gr.stop_ptr = &pg.stop_reason;
    gr.dead = static_cast<int>(pg.dead.size());
    gr.names_ptr = &pg.op_names;
    gr.dead_ptr = &pg.dead_ops;
    for (int k : pg.temp_tasks) gr.temporaries.push_back(window[k].output.buffer->id());
    for (const PlanChain::Link& l : c.links)
      if (l.tile && !l.copy && l.task >= pg.begin && l.task < pg.end)
        gr.temporaries.push_back(window[l.task].output.buffer->id());
    gr.hom = &pg.tmpl->hom;
    gr.ints.assign(stages[g - c.first].bind->ints.data(), stages[g - c.first].bind->ints.size());
    gr.schedule_ptr = &pg.schedule;
    gr.key_ptr = &pg.key;
    gr.tuned = pg.tuned;
    gr.stage = g - c.first + 1;
    gr.stages = c.last - c.first + 1;
    if (g == c.first) {
      gr.chain = cp.to_string();
      if (!gr.chain.empty() && gr.chain.back() != '\n') gr.chain += '\n';
      if (waits) {
        gr.chain += "launch choices wait for the stages' schedules (searched in the background)\n";
      } else if (candidate >= 0) {
        gr.chain += "launch being tuned: run " + std::to_string(tn->launches) + " of " +
                    std::to_string(2 * detail::LaunchTuning::kCandidates) + "\n";
      } else if (tn && tn->chosen >= 0) {
        const int64_t r = detail::LaunchTuning::rows(tn->chosen);
        const int st = detail::LaunchTuning::storage(tn->chosen);
        gr.chain += (tn->from_store ? std::string("launch tuned by an earlier run (from the schedule store)")
                                    : "launch tuned on its first " +
                                          std::to_string(2 * detail::LaunchTuning::kCandidates) + " runs") +
                    ": " + (r ? std::to_string(r) + " rows per tile" : std::string("tile rows from the cache")) +
                    ", " + (st == 2 ? "ring buffers" : st == 1 ? "rolling halos" : "recomputed halos") + "\n";
      }
      gr.run_ms = ticks_to_ms(t1 - clock);
    }
    if (cfg.dump && g == c.first) gr.source = pg.target->compiler().source_of(c.key);
  }
  clock = t1;
  return true;
}

// Runs the plan's group `i` -- or, when a multi-stage kernel starts there,
// all its stages -- and returns how many groups ran (their reports appended).
size_t run_groups_at(WindowForm& form, const std::shared_ptr<const Plan>& plan, size_t i,
                     const std::vector<const mdh::Bindings*>& given, const Config& cfg, uint64_t& clock,
                     std::vector<GroupReport>& reports) {
  for (const PlanChain& c : plan->chains)
    if (c.first == static_cast<int>(i) && run_chain(form, plan, c, given, cfg, clock, reports))
      return static_cast<size_t>(c.last - c.first + 1);
  GroupReport& gr = reports.emplace_back();
  run_group(form, plan, i, given.empty() ? nullptr : given[i], cfg.dump, clock, gr);
  return 1;
}

}  // namespace

std::vector<std::string> GroupReport::ops() const {
  std::vector<std::string> out;
  if (!names_ptr) return out;
  for (size_t k = 0; k < names_ptr->size(); ++k) {
    bool is_dead = false;
    for (int d : *dead_ptr) is_dead |= d == static_cast<int>(k);
    out.push_back(std::string((*names_ptr)[k]) + (is_dead ? " (dead)" : ""));
  }
  return out;
}

const std::string& GroupReport::stop_reason() const {
  static const std::string none;
  return stop_ptr ? *stop_ptr : none;
}

const std::string& GroupReport::key() const {
  static const std::string none;
  return key_ptr ? *key_ptr : none;
}

bool GroupReport::is_routine() const { return schedule_ptr && schedule_ptr->routine != tune::Routine::None; }

std::string GroupReport::routine() const { return is_routine() && hom ? ext::routine_pattern(*hom) : ""; }

std::string GroupReport::mdh_text() const {
  if (!hom) return "";
  // A memoized group tier 0 ran was never bound: its sizes stay symbolic.
  if (ints.empty()) return mdh::to_string(*hom, nullptr);
  mdh::Bindings b;
  b.ints.assign(ints.begin(), ints.end());
  return mdh::to_string(*hom, &b);
}

std::string GroupReport::device_launches() const {
  if (!device_kernel) return "";
  std::string out;
  for (const codegen::LaunchShape::Phase& p : device_kernel->shape.phases) {
    out += out.empty() ? "" : "; then ";
    if (!p.grid) out += "one thread";
    else if (p.threads > 0) out += "a block of " + std::to_string(p.threads) + " threads per iteration, sharing memory";
    else out += "a thread per iteration";
  }
  const size_t n = device_kernel->shape.phases.size();
  return std::to_string(n) + (n == 1 ? " launch: " : " launches: ") + out;
}

std::string GroupReport::schedule_text() const {
  if (!hom || !schedule_ptr) return "";
  const std::string r = routine();
  return r.empty() ? schedule_ptr->to_string() : schedule_ptr->to_string() + ": " + r;
}

Config& config() {
  static Config c;
  return c;
}

void refuse_chain_launches(int n) { g_refuse_chains.store(n); }
void interpret_groups(bool on) {
  std::lock_guard<std::recursive_mutex> exec(g_exec_mu);
  g_interpret_groups.store(on);
  g_memo.clear();  // (plans made the other way)
}

void clear_memo() {
  std::lock_guard<std::recursive_mutex> exec(g_exec_mu);
  g_memo.clear();
}

void clear_kernels() {
  std::lock_guard<std::recursive_mutex> exec(g_exec_mu);
  g_memo.clear();
  for (const Target* t : all_targets()) t->compiler().clear();
  detail::compile_queue_forget();
}

size_t memo_size() {
  std::lock_guard<std::recursive_mutex> exec(g_exec_mu);
  return g_memo.size();
}

size_t memo_bytes() {
  std::lock_guard<std::recursive_mutex> exec(g_exec_mu);
  return g_memo.bytes();
}

bool idle() { return g_active.load() == 0; }

namespace {
std::atomic<bool> g_forked_child{false};
// The thread between fork_prepare and its fork() (0: none).
std::atomic<pthread_t> g_forking{pthread_t{}};

// pthread_atfork handlers: they run inside fork() itself, right after it in
// the parent and in the child, before any Python code (other at-fork hooks,
// signal handlers) can run and sync. A fork that fork_prepare did not
// announce (a C library forking on its own) leaves numfuse alone.
void atfork_parent() {
  if (!pthread_equal(g_forking.load(), pthread_self())) return;
  g_forking.store(pthread_t{});
  g_exec_mu.unlock();
  background_resume();
}

void atfork_child() {
  if (!pthread_equal(g_forking.load(), pthread_self())) return;
  g_forking.store(pthread_t{});
  // Only the forking thread exists here. The locks other threads held (the
  // recording gate, tuning queue) start free; the exec lock is ours.
  new (&g_exec_mu) std::recursive_mutex();
  global_stream().reset_gate_in_child();
  background_reset_in_child();
  g_forked_child.store(true);
}
}  // namespace

void fork_prepare() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, atfork_parent, atfork_child); });
  background_pause();
  g_exec_mu.lock();
  g_forking.store(pthread_self());
}

void fork_abandoned() {
  if (!pthread_equal(g_forking.load(), pthread_self())) return;
  atfork_parent();
}

bool forked_child() { return g_forked_child.load(); }

namespace {

// Analyses, compiles and runs `window`; `ran` counts the tasks (a prefix of
// the window) that have run. Caller holds g_exec_mu.
void flush_window(WindowForm& form, const Structure& structure, FlushReport* report, int& ran,
                  Releaser*& releaser);

// Calls the releaser, once (see flush).
void let_go(Releaser*& releaser) {
  if (!releaser) return;
  Releaser* r = releaser;
  releaser = nullptr;
  r->release();
}

// Locks m, letting go of the caller's lock first if m is held by another thread.
template <typename Mutex>
void lock_letting_go(Mutex& m, Releaser*& releaser) {
  if (releaser && m.try_lock()) return;
  let_go(releaser);
  m.lock();
}

}  // namespace

std::vector<Task> flush(FlushReport* report, Releaser* releaser) {
  if (t_in_flush) throw std::logic_error("numfuse: a flush was re-entered from within a flush");
  if (t_capturing) capture_abort("Python needs a value computed inside the call");
  lock_letting_go(g_exec_mu, releaser);
  std::lock_guard<std::recursive_mutex> exec(g_exec_mu, std::adopt_lock);
  t_in_flush = true;
  struct Leave {
    ~Leave() { t_in_flush = false; }
  } leave;
  // Counted before the window is taken: a concurrent sync that finds the
  // window empty must still wait for this flush to finish computing.
  g_active.fetch_add(1);
  struct Done {
    ~Done() { g_active.fetch_sub(1); }
  } done;
  static Structure structure;  // guarded by g_exec_mu; its storage goes back to the stream
  // (The gate is held by a thread recording an operation: it may be waiting
  // for the caller's lock.)
  std::recursive_mutex& gate = global_stream().gate();
  lock_letting_go(gate, releaser);
  std::vector<Task> window;
  {
    std::lock_guard<std::recursive_mutex> held(gate, std::adopt_lock);
    window = global_stream().take(&structure);
    detail::note_window_taken();
  }
  // Groups run in program order, and each runs whole or not at all (its
  // buffers are allocated before its kernel starts). When anything fails --
  // an allocation, a compile, a bug -- the tasks that did not run go back to
  // the stream, so no pending result is lost or left half-computed: a later
  // sync runs them.
  int ran = 0;
  WindowForm form;
  form.window = &window;
  Buffer::next_epoch();  // (device copies of memory NumPy sees are brought again)
  detail::CompileHold hold;  // (background compiles start once the flush has run)
  try {
    flush_window(form, structure, report, ran, releaser);
  } catch (...) {
    // The tasks that go back must be the ones the plan ran from: a window
    // left as recorded is rewritten first (its recomputed producers did
    // not run, and will not).
    try {
      form.rewrite();
    } catch (...) {
    }
    global_stream().restore(std::vector<Task>(std::make_move_iterator(window.begin() + ran),
                                              std::make_move_iterator(window.end())));
    window.erase(window.begin() + ran, window.end());
    Stream::retire(window);
    try {
      throw;
    } catch (const std::bad_alloc&) {
      throw MemoryError({}, -1, 0);
    }
  }
  Stream::retire(window);
  return window;
}

namespace {

int64_t points_of(const std::vector<Task>& window) {
  int64_t points = 0;
  for (const Task& t : window) points += shape_size(t.domain);
  return points;
}

// The Recorded of a window that recompute_producers rewrote as `record`
// says (with `budget`), for `plan`: its signature as recorded
// (`recorded_sig`) and the plan's recipes and releases translated to it.
std::shared_ptr<const Recorded> translate(std::shared_ptr<const Plan> plan, fusion::Signature recorded_sig,
                                          int budget, fusion::Recomputed record) {
  auto r = std::make_shared<Recorded>();
  r->sig = std::move(recorded_sig);
  r->budget = budget;
  r->recipes.resize(plan->groups.size());
  for (size_t i = 0; i < plan->groups.size(); ++i) {
    const PlanGroup& g = plan->groups[i];
    if (!g.tmpl) continue;
    mdh::Recipe& rc = r->recipes[i] = g.tmpl->recipe;
    for (mdh::Recipe::AccessSource& a : rc.access) {
      const fusion::Sources* s = record.sources_of(a.task);
      if (!s || a.slot < 0) continue;
      const fusion::Source& o = s->inputs.at(a.slot);
      a = {o.task, o.which, o.shift};
    }
    for (mdh::Recipe::ParamSource& p : rc.params) {
      const fusion::Sources* s = record.sources_of(p.task);
      if (!s) continue;
      const fusion::Source& o = p.index_offset ? s->indices.at(p.which) : s->consts.at(p.which);
      p.task = o.task;
      p.which = o.which;
      p.shift = p.index_offset ? o.shift : 0;
    }
  }
  r->release_after = plan->release_after;
  for (auto& refs : r->release_after)
    for (auto& [task, slot] : refs)
      if (const fusion::Sources* s = record.sources_of(task); s && slot >= 0) {
        const fusion::Source& o = s->inputs.at(slot);
        task = o.task;
        slot = o.which;
      }
  for (const auto& [j, s] : record.rewritten)
    for (const fusion::Source& o : s.inputs) r->reads.push_back({j, {o.task, o.which}});
  record.recorded.clear();  // (only the signature needed them)
  r->rewrite = std::move(record);
  r->plan = std::move(plan);
  return r;
}

void flush_window(WindowForm& form, const Structure& structure, FlushReport* report, int& ran,
                  Releaser*& releaser) {
  std::vector<Task>& window = *form.window;
  FlushReport rep;
  if (report) {
    rep.sync_site = report->sync_site;
    rep.sync_reason = report->sync_reason;
  }
  rep.tasks = static_cast<int>(window.size());
  if (window.empty()) {
    if (report) *report = rep;
    return;
  }
  const Config cfg = config();
  const uint64_t t0 = ticks();
  // Plans hold schedules: when the store changed (a kernel was tuned), the
  // memoized plans are rebuilt so the tuned schedules take over.
  static uint64_t store_generation = 0;
  const uint64_t gen = tune::ScheduleStore::instance().generation();
  if (gen != store_generation) {
    g_memo.clear();
    store_generation = gen;
  }
  // The latest plans are tried first, by matching the window against their
  // signatures; else the window's own signature is built and looked up.
  static fusion::Signature sig;  // guarded by g_exec_mu; its storage is reused flush after flush
  if (checks_on() && structure.view() != Structure::of(window).view())
    throw std::logic_error("the window's recorded structure is not its tasks' structure");
  // Cheap producers read through shifted views are recomputed at their
  // readers (fusion.h): the window is rewritten before anything is decided
  // on it, so plans are memoized by the rewritten window's structure.
  // Whether it pays is measured on live runs with tuning on, and drawn by
  // random schedules (tuning.h: RecomputeChoice); way 0 recomputes, 1 stores.
  static Structure rewritten;  // guarded by g_exec_mu; its storage is reused flush after flush
  const Structure* shape = &structure;
  const bool may_recompute = cfg.recompute >= 0 && cfg.policy == fusion::Policy::Diffuse && cfg.tier != Tier::Eager;
  detail::RecomputeChoice* choice = nullptr;
  int way = 0;
  if (may_recompute && cfg.random_schedule_seed >= 0) {
    std::mt19937_64 rng(static_cast<uint64_t>(cfg.random_schedule_seed) ^ detail::stable_window_hash(window));
    way = static_cast<int>(rng() % 2);
  } else if (may_recompute && cfg.tune_seconds > 0 && cfg.memo) {
    choice = &detail::recompute_choice(structure.view(), window);
    if (choice->nothing) choice = nullptr;
    else way = choice->way();
  }
  // A window rewritten before, seen again as recorded (a loop body): its
  // plan, bound to the window as it is (Recorded), with nothing rewritten
  // or decided again. Else it is rewritten here, and with the memo on its
  // recorded form is remembered for the next time (after its plan runs).
  const bool rewrites = may_recompute && way == 0;
  const bool remember = rewrites && !choice && cfg.memo;
  std::shared_ptr<const Plan> plan;
  fusion::Recomputed record;
  static fusion::Signature recorded_sig;  // guarded by g_exec_mu; its storage is reused
  if (remember && (form.recorded = g_memo.find_recorded(window, structure.view(), cfg.policy, cfg.recompute))) {
    plan = form.recorded->plan;
    rep.recomputed = form.recorded->rewrite.tasks;
    rep.memo_recorded = true;
    // (What a rewritten reader reads is a pending read until it has run:
    // Buffer::last_read, as recompute_producers notes it.)
    for (const auto& [j, src] : form.recorded->reads) {
      Buffer* b = window[src.first].inputs[src.second].buffer.get();
      const uint64_t seq = window[j].seq;
      uint64_t seen = b->last_read.load(std::memory_order_relaxed);
      while (seen < seq && !b->last_read.compare_exchange_weak(seen, seq, std::memory_order_acq_rel)) {
      }
    }
  } else if (rewrites) {
    record.keep_recorded = remember;
    if ((rep.recomputed = fusion::recompute_producers(window, cfg.recompute, remember ? &record : nullptr)) > 0) {
      rewritten.clear();
      for (const Task& t : window) rewritten.append(t);
      shape = &rewritten;
      if (remember) {
        // The signature of the window as recorded (its rewritten tasks put
        // back for the while), built before anything runs and changes its
        // buffers' flags.
        for (auto& [j, t] : record.recorded) std::swap(window[j], t);
        fusion::window_signature(window, structure.view(), cfg.policy, recorded_sig);
        for (auto& [j, t] : record.recorded) std::swap(window[j], t);
      }
    }
  }
  if (choice && way == 0 && rep.recomputed == 0) {
    choice->nothing = true;  // (the model recomputes nothing here: nothing to choose)
    choice = nullptr;
  }
  // While the way is measured, multi-stage kernels launch with their default
  // choices (their own tuning waits for it).
  std::optional<Config> measuring;
  if (choice && choice->measuring()) {
    measuring = cfg;
    measuring->tune_seconds = 0;
  }
  const Config& run_cfg = measuring ? *measuring : cfg;
  if (!plan && cfg.memo) plan = g_memo.find(window, shape->view(), cfg.policy);
  rep.memo_matched = plan != nullptr;
  // Small kernels of a memoized plan run without letting go of the
  // caller's lock (kQuickFlushPoints); everything else lets go.
  if (!plan || plan->points > kQuickFlushPoints) let_go(releaser);
  if (!plan) {
    fusion::window_signature(window, shape->view(), cfg.policy, sig);
    if (cfg.memo) plan = g_memo.find(sig);
  }

  // The groups' reports reuse the storage of the report before last.
  static std::vector<GroupReport> spare_groups;  // guarded by g_exec_mu
  rep.groups.swap(spare_groups);
  if (plan) {
    // Memo hit: no analysis, no compile; rebind (as each group runs) and run.
    rep.memo_hit = true;
    rep.plan = plan;
    const uint64_t t2 = ticks();
    rep.analyse_ms = ticks_to_ms(t2 - t0);
    uint64_t clock = t2;
    rep.groups.reserve(plan->groups.size());
    for (size_t i = 0; i < plan->groups.size();) {
      const size_t n = run_groups_at(form, plan, i, {}, run_cfg, clock, rep.groups);
      for (size_t k = i; k < i + n; ++k) {
        GroupReport& gr = rep.groups[k];
        ran = plan->groups[k].end;
        release(window, form.releases(*plan, k));
        gr.cache_hit = gr.hom != nullptr && !gr.is_routine() && !gr.tier0;
        if (gr.cache_hit) rep.memory_hits++;
        if (gr.tier0) rep.tier0_groups++;
      }
      i += n;
    }
    rep.run_ms = ticks_to_ms(clock - t2);
  } else {
    fusion::Partition part = fusion::partition(window, cfg.policy, cfg.max_kernel_ops);
    std::vector<fusion::Chain> chains;
    if (cfg.stages && cfg.policy == fusion::Policy::Diffuse && cfg.tier != Tier::Eager &&
        (cfg.target ? cfg.target->chains : true))
      chains = fusion::chains(window, part, cfg.stage_min_bytes);
    std::vector<Prepared> prepared;
    prepared.reserve(part.groups.size());
    for (const fusion::Group& g : part.groups) prepared.push_back(prepare(window, g, cfg));
    // A chain whose launch the bound views refuse (a stage whose outer
    // dimension is not the rows its links are laid out by, ...) is dropped
    // here, its groups prepared again as kernels of their own (parallel).
    std::vector<PreparedChain> pchains;
    for (auto c = chains.begin(); c != chains.end();) {
      PreparedChain pc;
      if (chain_launches(*c, prepared, pc)) {
        pchains.push_back(std::move(pc));
        ++c;
        continue;
      }
      for (int g = c->first; g <= c->last; ++g) {
        part.groups[g].stage = false;
        prepared[g] = prepare(window, part.groups[g], cfg);
      }
      c = chains.erase(c);
    }
    std::unordered_map<std::string, Tier0Estimate> tier0;
    for (const Prepared& p : prepared)
      if (p.built && !p.built->tasks.empty()) {
        const double ms = detail::interpret_estimate_ms(window, p.group);
        Tier0Estimate& e = tier0[p.key];
        e.ms += ms;
        e.most_ms = std::max(e.most_ms, ms);
        ++e.groups;
      }
    for (PreparedChain& pc : pchains) choose_chain_tier(window, prepared, pc, cfg);
    for (Prepared& p : prepared) choose_tier(window, p, cfg, tier0);
    rep.analyse_ms = ms_since(t0);

    // Compile (or fetch) every group's kernel; misses compile concurrently.
    const uint64_t t1 = ticks();
    // Several kernels to get: on TBB's threads at once. One or none (most
    // flushes: tier 0 groups, library routines, a loop's one new kernel):
    // here, without waking TBB's workers (tens of microseconds a flush on a
    // loaded machine, and the arena's start-up on a program's first flush).
    // (TBB's workers do not exist in a forked child: compile there in turn.)
    // The multi-stage kernels compile with them; their stages' own kernels
    // only if a chain's fails (or, later, when a stage runs alone).
    std::vector<PreparedChain*> chain_todo;
    for (PreparedChain& pc : pchains) {
      if (pc.on_tier0) continue;
      chain_todo.push_back(&pc);
      for (int g = pc.chain.first; g <= pc.chain.last; ++g) prepared[g].deferred = !prepared[g].fn;
    }
    std::vector<Prepared*> todo;
    for (Prepared& p : prepared)
      if (needs_kernel(p)) todo.push_back(&p);
    auto job = [&](size_t i) {
      if (i < todo.size()) compile_one(*todo[i]);
      else compile_chain(*chain_todo[i - todo.size()], *prepared[chain_todo[i - todo.size()]->chain.first].target);
    };
    const size_t jobs = todo.size() + chain_todo.size();
    if (jobs <= 1 || forked_child())
      for (size_t i = 0; i < jobs; ++i) job(i);
    else
      tbb::parallel_for(size_t(0), jobs, job);
    for (const PreparedChain& pc : pchains)
      if (!pc.error.empty())
        for (int g = pc.chain.first; g <= pc.chain.last; ++g)
          if (prepared[g].deferred) {
            prepared[g].deferred = false;
            compile_one(prepared[g]);
          }
    // A group whose kernel failed to compile runs its tasks one by one.
    std::vector<Prepared> runnable;
    bool failed = false;
    for (Prepared& p : prepared) {
      if (p.error.empty()) {
        runnable.push_back(std::move(p));
        continue;
      }
      failed = true;
      rep.warnings.push_back("numfuse: compiling a fused kernel failed; its " + std::to_string(p.group.size()) +
                             " operations ran unfused. Please report this bug.\n" + p.error.substr(0, 2000));
      if (p.group.size() == 1) throw jit::CompileError(p.error);
      for (int k = p.group.begin; k < p.group.end; ++k) {
        fusion::Group single;
        single.begin = k;
        single.end = k + 1;
        single.stop_reason = "fallback after compile failure";
        for (int d : p.group.dead)
          if (d == k) single.dead.push_back(k);
        Prepared q = prepare(window, single, cfg);
        compile_one(q);
        if (!q.error.empty()) throw jit::CompileError(q.error);
        runnable.push_back(std::move(q));
      }
    }
    rep.compile_ms = ms_since(t1);

    auto plan_new = std::make_shared<Plan>();
    rep.plan = plan_new;
    // This window's bindings, for its run (the plan's templates drop the buffers).
    std::vector<mdh::Bindings> live(runnable.size());
    for (size_t k = 0; k < runnable.size(); ++k)
      if (runnable[k].built) live[k] = runnable[k].built->bind;
    for (Prepared& p : runnable) plan_new->groups.push_back(to_plan_group(window, p));
    // (A compile failure split groups: the chains' group numbers are gone.)
    if (!failed)
      for (PreparedChain& prc : pchains) {
        if (!prc.error.empty()) {
          // Its groups run as kernels of their own.
          rep.warnings.push_back("numfuse: compiling a multi-stage kernel failed; its stages ran as separate "
                                 "kernels. Please report this bug.\n" + prc.error.substr(0, 2000));
          continue;
        }
        const fusion::Chain& c = prc.chain;
        PlanChain pc;
        pc.first = c.first;
        pc.last = c.last;
        pc.shape = std::move(prc.shape);
        pc.key = std::move(prc.key);
        pc.fn = std::move(prc.fn);
        if (prc.on_tier0) {
          // Tier 0 runs the stages (never compiled alone) until the
          // kernel, compiled in the background, is ready.
          auto cc = std::make_shared<detail::ChainCompile>();
          for (int g = c.first; g <= c.last; ++g) {
            PlanGroup& pg = plan_new->groups[g];
            pg.state->queued = true;
            cc->stages.push_back(pg.tmpl);
            cc->schedules.push_back(pg.schedule);
          }
          cc->shape = pc.shape;
          cc->target = plan_new->groups[c.first].target;
          pc.state->compile = cc;
          if (prc.queue) {
            pc.state->queued = true;
            detail::compile_chain_in_background(pc.key, std::move(cc));
          }
        } else if (prc.hit) {
          rep.memory_hits++;
        } else if (prc.disk_hit) {
          rep.disk_hits++;
        } else {
          rep.kernels_compiled++;
        }
        for (const fusion::Chain::Link& l : c.links)
          for (int k = part.groups[c.first].begin; k < part.groups[c.last].end; ++k)
            if (window[k].output.buffer == l.buffer) {
              pc.links.push_back({k, l.tile, l.copy});
              break;
            }
        plan_new->chains.push_back(std::move(pc));
      }
    plan_releases(window, *plan_new);
    plan_new->points = points_of(window);
    const uint64_t t2 = ticks();
    uint64_t clock = t2;
    std::vector<const mdh::Bindings*> given;
    for (size_t k = 0; k < runnable.size(); ++k) given.push_back(runnable[k].built ? &live[k] : nullptr);
    for (size_t i = 0; i < runnable.size();) {
      const size_t n = run_groups_at(form, plan_new, i, given, run_cfg, clock, rep.groups);
      for (size_t k = i; k < i + n; ++k) {
        const Prepared& p = runnable[k];
        GroupReport& gr = rep.groups[k];
        ran = plan_new->groups[k].end;
        release(window, plan_new->release_after[k]);
        gr.cache_hit = p.hit;
        gr.disk_hit = p.disk_hit;
        if (p.fn) {
          if (p.hit) rep.memory_hits++;
          else if (p.disk_hit) rep.disk_hits++;
          else rep.kernels_compiled++;
        }
        if (gr.tier0) rep.tier0_groups++;
      }
      i += n;
    }
    rep.run_ms = ticks_to_ms(clock - t2);
    if (!failed) g_memo.insert(sig.compact(), plan_new);
    if (failed) plan = nullptr;
    else plan = plan_new;
  }
  // (record.tasks: this flush rewrote the window, remembering how.)
  if (remember && record.tasks > 0 && plan)
    g_memo.insert_recorded(translate(plan, recorded_sig.compact(), cfg.recompute, std::move(record)));
  rep.rewrite_replayed = form.replayed;
  if (choice) {
    choice->record(way, rep.memo_hit, ms_since(t0));
    rep.recompute_choice = choice->describe(way);
  }

  {
    std::lock_guard<std::mutex> lock(g_report_mu);
    g_profile.flushes++;
    g_profile.tasks += rep.tasks;
    g_profile.analyse_ms += rep.analyse_ms;
    g_profile.compile_ms += rep.compile_ms;
    g_profile.run_ms += rep.run_ms;
    g_profile.compiles += rep.kernels_compiled;
    g_profile.memory_hits += rep.memory_hits;
    g_profile.disk_hits += rep.disk_hits;
    g_profile.memo_hits += rep.memo_hit ? 1 : 0;
    g_profile.memo_matched += rep.memo_matched ? 1 : 0;
    g_profile.memo_recorded += rep.memo_recorded ? 1 : 0;
    g_profile.tier0_groups += rep.tier0_groups;
    // (A multi-stage kernel is one launch: its first stage's group counts.)
    for (const GroupReport& g : rep.groups) g_profile.kernels_run += g.hom && !g.tier0 && g.stage <= 1 ? 1 : 0;
    // The report moves to g_last (explain()); the caller gets the groups
    // (and the plan they point into) only when it prints them (dump), and
    // the warnings (below).
    if (report && cfg.dump) {
      report->groups = rep.groups;
      report->plan = rep.plan;
    }
    std::swap(g_last, rep);
  }
  rep.groups.clear();  // (the previous report's)
  spare_groups.swap(rep.groups);
  for (std::string& w : tune::ScheduleStore::instance().take_warnings())
    if (report) report->warnings.push_back(std::move(w));
}

}  // namespace

FlushReport last_report() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  return g_last;
}

namespace {
int64_t g_tier0_base = 0;  // tier0_tasks() at the last reset
}

Profile profile() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  Profile p = g_profile;
  p.tier0_tasks = tier0_tasks() - g_tier0_base;
  return p;
}

void reset_profile() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  g_profile = Profile();
  g_tier0_base = tier0_tasks();
}

void add_record_time(double ms) {
  std::lock_guard<std::mutex> lock(g_report_mu);
  g_profile.record_ms += ms;
}

}  // namespace nf::pipeline

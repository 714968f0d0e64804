// Compiling kernels in the background: a group (or the stages of a
// multi-stage kernel) that tier 0 interprets while its fused kernel is not
// worth compiling at once (cost model, flush.cc) is compiled here; later
// flushes pick the kernel up from the kernel cache.
#include "pipeline/tiers.h"
#include "pipeline/tuning.h"
#include "pipeline/worker.h"

namespace nf::pipeline::detail {

namespace {

struct CompileJob {
  std::shared_ptr<const mdh::MdHom> hom;
  tune::Schedule schedule;
  jit::KernelRef upgrade;  // set: recompile this Quick kernel Full instead
  std::shared_ptr<const ChainCompile> chain;  // set: compile this multi-stage kernel instead
  const Target* target = &cpu_target();
};

// A compile is not interrupted (abort is ignored): pause() waits for it.
// Nobody waits for a background compile: it compiles Full.
void compile_job(CompileJob& job, const std::atomic<bool>&) {
  if (job.upgrade) {
    jit::KernelCache::instance().upgrade(job.upgrade);
  } else if (job.chain) {
    const ChainCompile& c = *job.chain;
    std::vector<const mdh::MdHom*> homs;
    for (const auto& b : c.stages) homs.push_back(&b->hom);
    compile_chain(homs, c.schedules, c.shape, jit::Opt::Full, nullptr, nullptr, *c.target);
  } else { compile_kernel(*job.hom, job.schedule, jit::Opt::Full, nullptr, nullptr, *job.target);
  }
}

Worker<CompileJob>& queue() {
  static auto* q = new Worker<CompileJob>(compile_job);  // never destroyed: stopped at exit
  return *q;
}

// The jobs a flush queues while it runs (CompileHold): they start when it
// ends, so that a compile does not take the machine from the tier-0 work
// it queued them next to (on a two-core machine a background compile
// running beside tier 0 measured the group's tier-0 run 2x slower).
using Held = std::vector<std::pair<std::string, CompileJob>>;
thread_local bool t_holding = false;
thread_local Held t_held;

void enqueue(std::string key, CompileJob job) {
  if (t_holding) t_held.emplace_back(std::move(key), std::move(job));
  else queue().enqueue(std::move(key), std::move(job));
}

}  // namespace

void compile_in_background(std::shared_ptr<const mdh::MdHom> hom, const tune::Schedule& s, const Target& t) {
  std::string key = kernel_key(*hom, s, t);
  enqueue(std::move(key), CompileJob{std::move(hom), s, nullptr, nullptr, &t});
}
void compile_chain_in_background(std::string key, std::shared_ptr<const ChainCompile> chain) {
  enqueue(std::move(key), CompileJob{nullptr, {}, nullptr, std::move(chain)});
}
bool compile_pending(const std::string& key) {
  for (const auto& [k, job] : t_held)
    if (k == key) return true;
  return queue().pending(key);
}
void upgrade_in_background(jit::KernelRef k) {
  if (!k) return;
  std::string key = "upgrade|" + std::to_string(reinterpret_cast<uintptr_t>(k.get())) + "|" + k->key;
  queue().enqueue(std::move(key), CompileJob{nullptr, {}, std::move(k)});
}
CompileHold::CompileHold() {
  if (t_holding) return;  // (an outer hold queues them)
  t_holding = true;
  mine_ = true;
}
CompileHold::~CompileHold() {
  if (!mine_) return;
  t_holding = false;
  if (t_held.empty()) return;
  Held held;
  held.swap(t_held);
  try {
    for (auto& [key, job] : held) queue().enqueue(std::move(key), std::move(job));
  } catch (...) {  // (out of memory: a compile the caches will ask for again)
  }
}

void compile_queue_wait() { queue().wait(); }
void compile_queue_pause() { queue().pause(); }
void compile_queue_resume() { queue().resume(); }
void compile_queue_reset_in_child() { queue().reset_in_child(); }
void compile_queue_stop() { queue().shutdown(); }
int compile_queue_done() { return queue().done(); }
void compile_queue_forget() { queue().forget_finished(); }

}  // namespace nf::pipeline::detail

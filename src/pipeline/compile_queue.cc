// Compiling kernels in the background: a group that tier 0 interprets while
// its fused kernel is not worth compiling at once (cost model, flush.cc) is
// compiled here once its window recurs; later flushes pick the kernel up
// from the kernel cache.
#include "pipeline/tiers.h"
#include "pipeline/tuning.h"
#include "pipeline/worker.h"

namespace nf::pipeline::detail {

namespace {

struct CompileJob {
  std::shared_ptr<const mdh::MdHom> hom;
  tune::Schedule schedule;
  jit::KernelRef upgrade;  // set: recompile this Quick kernel Full instead
  const Target* target = &cpu_target();
};

// A compile is not interrupted (abort is ignored): pause() waits for it.
// Nobody waits for a background compile: it compiles Full.
void compile_job(CompileJob& job, const std::atomic<bool>&) {
  if (job.upgrade) jit::KernelCache::instance().upgrade(job.upgrade);
  else compile_kernel(*job.hom, job.schedule, jit::Opt::Full, nullptr, nullptr, *job.target);
}

Worker<CompileJob>& queue() {
  static auto* q = new Worker<CompileJob>(compile_job);  // never destroyed: stopped at exit
  return *q;
}

}  // namespace

void compile_in_background(std::shared_ptr<const mdh::MdHom> hom, const tune::Schedule& s, const Target& t) {
  std::string key = kernel_key(*hom, s, t);
  queue().enqueue(std::move(key), CompileJob{std::move(hom), s, nullptr, &t});
}
bool compile_pending(const std::string& key) { return queue().pending(key); }
void upgrade_in_background(jit::KernelRef k) {
  if (!k) return;
  std::string key = "upgrade|" + std::to_string(reinterpret_cast<uintptr_t>(k.get())) + "|" + k->key;
  queue().enqueue(std::move(key), CompileJob{nullptr, {}, std::move(k)});
}
void compile_queue_wait() { queue().wait(); }
void compile_queue_pause() { queue().pause(); }
void compile_queue_resume() { queue().resume(); }
void compile_queue_reset_in_child() { queue().reset_in_child(); }
void compile_queue_stop() { queue().shutdown(); }
int compile_queue_done() { return queue().done(); }
void compile_queue_forget() { queue().forget_finished(); }

}  // namespace nf::pipeline::detail

#include <chrono>
#include <mutex>
#include <sstream>

#include <tbb/parallel_for.h>

#include "codegen/codegen.h"
#include "extern/extern.h"
#include "jit/jit.h"
#include "lower/lower.h"
#include "mdh/mdh.h"
#include "pipeline/pipeline.h"
#include "runtime/runtime.h"
#include "tune/tune.h"

namespace nf::pipeline {

namespace {

std::mutex g_exec_mu;    // one flush executes at a time
std::mutex g_report_mu;  // guards g_last and g_profile
FlushReport g_last;
Profile g_profile;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A group ready to run: its expression, schedule and kernel.
struct Prepared {
  fusion::Group group;
  mdh::Built built;
  tune::Schedule schedule;
  std::string key;
  jit::KernelFn fn = nullptr;
  bool hit = false;
  bool disk_hit = false;
  std::string error;
};

std::string kernel_key(const mdh::MdHom& h, const tune::Schedule& s) { return "cpu|" + h.key() + "|" + s.key(); }

void compile_one(Prepared& p) {
  if (p.group.is_extern || p.built.tasks.empty()) return;
  try {
    p.fn = jit::KernelCache::instance().get(
        p.key,
        [&] {
          lower::LoopNest nest = lower::lower(p.built.hom, p.schedule, "kernel");
          return codegen::render_c(nest);
        },
        &p.hit, &p.disk_hit);
  } catch (const std::exception& e) {
    p.error = e.what();
  }
}

Prepared prepare(const std::vector<Task>& window, const fusion::Group& g) {
  Prepared p;
  p.group = g;
  if (g.is_extern) return p;
  p.built = mdh::build(window, g);
  if (p.built.tasks.empty()) return p;
  p.schedule = tune::default_schedule(p.built.hom, p.built.bind, tune::Asm::host());
  p.key = kernel_key(p.built.hom, p.schedule);
  return p;
}

}  // namespace

std::string GroupReport::mdh_text() const {
  if (!hom) return routine;
  mdh::Bindings b;
  b.ints = ints;
  return mdh::to_string(*hom, &b);
}

std::string GroupReport::schedule_text() const { return hom ? schedule.to_string() : ""; }

Config& config() {
  static Config c;
  return c;
}

std::vector<Task> flush(FlushReport* report) {
  std::lock_guard<std::mutex> exec(g_exec_mu);
  std::vector<Task> window = global_stream().take();
  FlushReport rep;
  if (report) {
    rep.sync_site = report->sync_site;
    rep.sync_reason = report->sync_reason;
  }
  rep.tasks = static_cast<int>(window.size());
  if (window.empty()) {
    if (report) *report = rep;
    return window;
  }
  const Config cfg = config();
  auto t0 = std::chrono::steady_clock::now();
  fusion::Partition part = fusion::partition(window, cfg.policy);
  std::vector<Prepared> prepared;
  prepared.reserve(part.groups.size());
  for (const fusion::Group& g : part.groups) prepared.push_back(prepare(window, g));
  rep.analyse_ms = ms_since(t0);

  // Compile (or fetch) every group's kernel; misses compile concurrently.
  auto t1 = std::chrono::steady_clock::now();
  tbb::parallel_for(size_t(0), prepared.size(), [&](size_t i) { compile_one(prepared[i]); });
  // A group whose kernel failed to compile runs its tasks one by one.
  std::vector<Prepared> runnable;
  for (Prepared& p : prepared) {
    if (p.error.empty()) {
      runnable.push_back(std::move(p));
      continue;
    }
    rep.warnings.push_back("numfuse: compiling a fused kernel failed; its " + std::to_string(p.group.size()) +
                           " operations ran unfused. Please report this bug.\n" + p.error.substr(0, 2000));
    if (p.group.size() == 1) throw jit::CompileError(p.error);
    for (int k = p.group.begin; k < p.group.end; ++k) {
      fusion::Group single;
      single.begin = k;
      single.end = k + 1;
      single.is_extern = window[k].kind == Task::Kind::Extern;
      single.stop_reason = "fallback after compile failure";
      for (int d : p.group.dead)
        if (d == k) single.dead.push_back(k);
      Prepared q = prepare(window, single);
      compile_one(q);
      if (!q.error.empty()) throw jit::CompileError(q.error);
      runnable.push_back(std::move(q));
    }
  }
  rep.compile_ms = ms_since(t1);

  // Run in program order.
  auto t2 = std::chrono::steady_clock::now();
  for (Prepared& p : runnable) {
    GroupReport gr;
    gr.stop_reason = p.group.stop_reason;
    gr.is_extern = p.group.is_extern;
    gr.dead = static_cast<int>(p.group.dead.size());
    for (int k = p.group.begin; k < p.group.end; ++k) {
      bool dead = false;
      for (int d : p.group.dead) dead |= d == k;
      gr.ops.push_back(std::string(window[k].name) + (dead ? " (dead)" : ""));
    }
    for (const BufferPtr& b : p.group.temporaries) gr.temporaries.push_back(b->id());
    auto tr = std::chrono::steady_clock::now();
    if (p.group.is_extern) {
      bool dead = !p.group.dead.empty();
      if (!dead) ext::run_routine(window[p.group.begin]);
      gr.routine = ext::pattern(window[p.group.begin].routine);
    } else if (p.fn) {
      runtime::run_kernel(p.fn, p.built.hom, p.built.bind);
      gr.hom = std::make_shared<const mdh::MdHom>(p.built.hom);
      gr.ints = p.built.bind.ints;
      gr.schedule = p.schedule;
      gr.key = p.key;
      gr.cache_hit = p.hit;
      gr.disk_hit = p.disk_hit;
      if (p.hit) rep.memory_hits++;
      else if (p.disk_hit) rep.disk_hits++;
      else rep.kernels_compiled++;
      if (cfg.dump) gr.source = jit::KernelCache::instance().source_of(p.key);
    }
    gr.run_ms = ms_since(tr);
    rep.groups.push_back(std::move(gr));
  }
  rep.run_ms = ms_since(t2);

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
    for (const Prepared& p : runnable) g_profile.kernels_run += p.fn ? 1 : 0;
    g_last = rep;
  }
  if (report) *report = std::move(rep);
  return window;
}

FlushReport last_report() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  return g_last;
}

Profile profile() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  return g_profile;
}

void reset_profile() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  g_profile = Profile();
}

void add_record_time(double ms) {
  std::lock_guard<std::mutex> lock(g_report_mu);
  g_profile.record_ms += ms;
}

}  // namespace nf::pipeline

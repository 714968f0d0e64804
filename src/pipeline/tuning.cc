// Schedule choice and the auto-tuning driver.
//
// The tuner never runs a candidate on the program's arrays: it measures on
// synthetic buffers laid out like the real ones (same sizes, strides, and
// aliasing between accesses), restored before every run, and checks each
// candidate's results against the default schedule's before trusting its
// time. A candidate that fails to compile or computes something else is
// counted as a failure and never stored.
#include "pipeline/tiers.h"
#include "pipeline/tuning.h"
#include "pipeline/worker.h"

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <unordered_map>

#include "codegen/codegen.h"
#include "core/clock.h"
#include "extern/extern.h"
#include "lower/lower.h"
#include "runtime/runtime.h"

namespace nf::pipeline {

namespace detail {

std::string kernel_key(const mdh::MdHom& h, const tune::Schedule& s, const Target& t) {
  return std::string(t.name) + "|" + h.key() + "|" + s.key();
}

jit::KernelRef compile_kernel(const mdh::MdHom& h, const tune::Schedule& s, jit::Opt opt, bool* hit, bool* disk_hit,
                              const Target& t) {
  return t.compiler().get(
      kernel_key(h, s, t), [&] { return t.render(t.lower(lower::KernelSpec::one(h, s), "kernel")); }, opt, hit, disk_hit);
}

std::string chain_key(const std::vector<const mdh::MdHom*>& homs, const std::vector<tune::Schedule>& schedules,
                      const lower::ChainShape& shape, const Target& t) {
  std::string k = std::string(t.name) + "|" + shape.key();
  for (size_t i = 0; i < homs.size(); ++i) k += "|" + homs[i]->key() + "|" + schedules[i].key();
  return k;
}

jit::KernelRef compile_chain(const std::vector<const mdh::MdHom*>& homs, const std::vector<tune::Schedule>& schedules,
                             const lower::ChainShape& shape, jit::Opt opt, bool* hit, bool* disk_hit,
                             const Target& t) {
  return t.compiler().get(
      chain_key(homs, schedules, shape, t), [&] { return t.render(t.lower({homs, schedules, &shape}, "kernel")); },
      opt, hit, disk_hit);
}

void run_scheduled(const mdh::MdHom& h, const tune::Schedule& s, jit::Kernel* k, const mdh::Bindings& b,
                   const Target& t) {
  if (s.routine == tune::Routine::Blas) return ext::run_contraction(h, b);
  if (!k->quick.load(std::memory_order_relaxed)) return t.launch(*k, h, b);
  // The first launches are timed, later ones one in 8 (counted 8 times):
  // reading the clock twice costs more than a launch over a small array.
  // The very first is not: it pays once for what is cold (the output's
  // pages, the thread arena's start), so a kernel run once is never hot.
  // (A load and a store, not an atomic increment: concurrent flushes may
  // lose a count, which only shifts which launches are sampled.)
  const uint32_t n = k->launches.load(std::memory_order_relaxed);
  k->launches.store(n + 1, std::memory_order_relaxed);
  const int64_t weight = n == 0 ? 0 : n < 8 ? 1 : (n % 8 == 0 ? 8 : 0);
  if (weight == 0) return t.launch(*k, h, b);
  const uint64_t t0 = ticks();
  t.launch(*k, h, b);
  const int64_t ns = weight * static_cast<int64_t>(ticks_to_ms(ticks() - t0) * 1e6);
  if (k->quick_ns.fetch_add(ns, std::memory_order_relaxed) + ns >= kUpgradeAfterNs &&
      !k->upgrading.exchange(true))
    upgrade_in_background(k->shared_from_this());
}

void credit_quick(jit::Kernel* k, int64_t ns) {
  if (!k->quick.load(std::memory_order_relaxed)) return;
  if (k->quick_ns.fetch_add(ns, std::memory_order_relaxed) + ns >= kUpgradeAfterNs && !k->upgrading.exchange(true))
    upgrade_in_background(k->shared_from_this());
}

int64_t SynthSpec::total_bytes() const {
  int64_t t = 0;
  for (int64_t x : bytes) t += x;
  return t;
}

SynthSpec synth_spec(const mdh::MdHom& h, const mdh::Bindings& b) {
  SynthSpec spec;
  spec.ints = b.ints;
  spec.floats = b.floats;
  const size_t nptr = b.buffers.size();
  spec.group.assign(nptr, -1);
  spec.offsets.assign(nptr, 0);
  std::vector<int64_t> lo(nptr, 0), hi(nptr, 0);  // byte range of each slot's access
  std::vector<bool> used(nptr, false);
  for (const mdh::Access& a : h.accesses) {
    int64_t elo = 0, ehi = 0;
    bool empty = false;
    for (int d = 0; d < h.ndim; ++d) {
      const int64_t n = b.extent(h, d);
      if (n == 0) empty = true;
      const int64_t st = a.kind[d] == mdh::StrideKind::Zero ? 0
                         : a.kind[d] == mdh::StrideKind::Unit ? 1
                                                              : b.ints[a.stride[d]];
      if (st < 0) elo += st * (n - 1);
      else ehi += st * (n - 1);
    }
    const int64_t item = itemsize(a.dtype);
    lo[a.ptr] = b.offsets[a.ptr] + elo * item;
    hi[a.ptr] = b.offsets[a.ptr] + (empty ? 0 : (ehi + 1) * item);
    used[a.ptr] = true;
  }
  // Slots over the same buffer share a synthetic buffer.
  std::unordered_map<const Buffer*, int> group_of;
  std::vector<int64_t> glo, ghi;
  for (size_t p = 0; p < nptr; ++p) {
    const Buffer* key = used[p] ? b.buffers[p] : nullptr;
    auto [it, fresh] = group_of.emplace(key ? key : reinterpret_cast<const Buffer*>(p + 1), static_cast<int>(glo.size()));
    if (fresh) {
      glo.push_back(lo[p]);
      ghi.push_back(hi[p]);
      DType t = DType::Float64;
      for (const mdh::Access& a : h.accesses)
        if (a.ptr == static_cast<int>(p)) t = a.dtype;
      spec.fill.push_back(t);
    } else {
      glo[it->second] = std::min(glo[it->second], lo[p]);
      ghi[it->second] = std::max(ghi[it->second], hi[p]);
    }
    spec.group[p] = it->second;
  }
  for (size_t g = 0; g < glo.size(); ++g) spec.bytes.push_back(std::max<int64_t>(ghi[g] - glo[g], 0));
  for (size_t p = 0; p < nptr; ++p) spec.offsets[p] = b.offsets[p] - glo[spec.group[p]];
  return spec;
}

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Deterministic, well-behaved data: floats in [0.5, 1.5) (no zeros, NaNs or
// denormals to slow anything down), integers in [1, 8), bools 0/1.
void fill(char* p, int64_t bytes, DType t, uint64_t seed) {
  std::mt19937_64 r(seed);
  if (is_complex(t)) return fill(p, bytes, real_part_type(t), seed);  // (both parts as floats)
  const int64_t item = itemsize(t);
  const int64_t n = bytes / item;
  switch (t) {
    case DType::Float64:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<double*>(p)[i] = 0.5 + (r() >> 11) * 0x1.0p-53;
      break;
    case DType::Float32:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(p)[i] = 0.5f + static_cast<float>((r() >> 40) * 0x1.0p-24);
      break;
    case DType::Bool:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<char>(r() & 1);
      break;
    default:
      std::memset(p, 0, static_cast<size_t>(bytes));
      for (int64_t i = 0; i < n; ++i) p[i * item] = static_cast<char>(1 + r() % 7);  // little endian
  }
}

// The synthetic bindings and what is needed to measure and check a run.
class Bench {
 public:
  Bench(const mdh::MdHom& h, const SynthSpec& spec, const Target& t) : h_(h), spec_(spec), t_(t) {
    const size_t ng = spec.bytes.size();
    for (size_t g = 0; g < ng; ++g) {
      const int64_t bytes = spec.bytes[g] + 64;  // vector loads may read past the tail
      const uint64_t seed = 0x9e3779b97f4a7c15ull * (g + 1);
      if (t.device) {
        // numfuse's own memory, which no one else sees: a device's copy of
        // it is trusted between runs and comes back only when verify reads
        // it (adopted memory would come back after every launch).
        BufferPtr b = Buffer::make(bytes);
        fill(static_cast<char*>(b->data()), spec.bytes[g], spec.fill[g], seed);
        buffers_.push_back(std::move(b));
        continue;
      }
      void* mem = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
      if (!mem) throw std::bad_alloc();
      fill(static_cast<char*>(mem), spec.bytes[g], spec.fill[g], seed);
      buffers_.push_back(Buffer::adopt(mem, bytes, [mem] { std::free(mem); }));
    }
    b_.ints = spec.ints;
    b_.floats = spec.floats;
    for (size_t p = 0; p < spec.group.size(); ++p) {
      b_.buffers.push_back(buffers_[spec.group[p]].get());
      b_.offsets.push_back(spec.offsets[p]);
    }
    // Groups read and written by the kernel are restored before each run
    // (an in-place update must see the same inputs every time).
    std::vector<bool> read(ng, false), written(ng, false);
    for (const mdh::Access& a : h.accesses) {
      const int g = spec.group[a.ptr];
      read[g] = read[g] || a.read;
      written[g] = written[g] || a.written || a.reduced;
    }
    for (size_t g = 0; g < ng; ++g) {
      if (written[g]) outputs_.push_back(static_cast<int>(g));
      if (written[g] && read[g]) {
        restore_.push_back(static_cast<int>(g));
        const char* p = static_cast<const char*>(buffers_[g]->data());
        pristine_.emplace_back(p, p + spec.bytes[g]);
      }
    }
  }

  const mdh::Bindings& bindings() const { return b_; }

  // Seconds per run of h under s; throws if it fails or disagrees with the
  // first schedule measured (the reference).
  double measure(const tune::Schedule& s, double best_s) {
    jit::KernelRef kernel =
        s.routine == tune::Routine::None ? compile_kernel(h_, s, jit::Opt::Full, nullptr, nullptr, t_) : nullptr;
    // Schedules are compared on -O3 code: a kernel a flush compiled quickly
    // is upgraded first.
    if (kernel && kernel->quick.load()) t_.compiler().upgrade(kernel);
    jit::Kernel* fn = kernel.get();
    restore();
    const double w0 = now_s();
    // (On a device the first run also brings the inputs there; later runs
    // bring only what restore() wrote, the same bytes for every candidate.
    // A device's launches return when they are done.)
    run_scheduled(h_, s, fn, b_, t_);
    const double warm = now_s() - w0;
    if (reference_.empty()) snapshot(reference_);
    else verify(s);
    double best = std::numeric_limits<double>::infinity(), total = 0;
    const int max_reps = warm > 0.2 ? 1 : 20;
    for (int reps = 0; reps < max_reps; ++reps) {
      restore();
      const double t0 = now_s();
      run_scheduled(h_, s, fn, b_, t_);
      const double t = now_s() - t0;
      best = std::min(best, t);
      total += t;
      if (reps == 0 && t > 3 * best_s) break;   // hopeless: no need for a precise time
      if (reps >= 1 && total > 0.05) break;
    }
    return best;
  }

 private:
  void restore() {
    for (size_t k = 0; k < restore_.size(); ++k)
      std::memcpy(buffers_[restore_[k]]->data(), pristine_[k].data(), pristine_[k].size());
  }

  void snapshot(std::vector<std::vector<char>>& out) {
    out.clear();
    for (int g : outputs_) {
      const char* p = static_cast<const char*>(buffers_[g]->data());
      out.emplace_back(p, p + spec_.bytes[g]);
    }
  }

  // Every element of every output access agrees with the reference (floats
  // to a tolerance relative to the output's largest magnitude: schedules may
  // reassociate reductions and contract multiply-adds).
  void verify(const tune::Schedule& s) {
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const int g = outputs_[k];
      const char* got = static_cast<const char*>(buffers_[g]->data());
      const char* ref = reference_[k].data();
      for (const mdh::Access& a : h_.accesses) {
        if (!(a.written || a.reduced) || spec_.group[a.ptr] != g) continue;
        check_access(a, got, ref, s);
      }
    }
  }

  void check_access(const mdh::Access& a, const char* got, const char* ref, const tune::Schedule& s) {
    std::vector<int> dims;
    std::vector<int64_t> strides;
    for (int d = 0; d < h_.ndim; ++d) {
      if (a.kind[d] == mdh::StrideKind::Zero) continue;
      dims.push_back(d);
      strides.push_back(a.kind[d] == mdh::StrideKind::Unit ? 1 : b_.ints[a.stride[d]]);
    }
    const int64_t item = itemsize(a.dtype);
    const int64_t base = b_.offsets[a.ptr];
    int64_t count = 1;
    for (int d : dims) count *= b_.extent(h_, d);
    // Element offset of the n-th point of the access (last dimension fastest).
    auto offset = [&](int64_t n) {
      int64_t e = 0;
      for (size_t t = dims.size(); t-- > 0;) {
        const int64_t ext = b_.extent(h_, dims[t]);
        e += (n % ext) * strides[t];
        n /= ext;
      }
      return e;
    };
    // A value's parts (one for a real type, two for a complex one).
    const DType pt = real_part_type(a.dtype);
    const int parts = is_complex(a.dtype) ? 2 : 1;
    auto elem = [&](const char* p, int64_t e, int part) -> double {
      const char* q = p + base + e * item + part * itemsize(pt);
      switch (pt) {
        case DType::Float64: { double v; std::memcpy(&v, q, 8); return v; }
        case DType::Float32: { float v; std::memcpy(&v, q, 4); return v; }
        default: break;
      }
      return 0;
    };
    const bool fl = is_inexact(a.dtype);
    double scale = 0;
    if (fl) {
      for (int64_t n = 0; n < count; ++n)
        for (int k = 0; k < parts; ++k) {
          const double r = elem(ref, offset(n), k);
          if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
        }
    }
    const double tol = (pt == DType::Float32 ? 1e-3 : 1e-8) * std::max(scale, 1e-30);
    for (int64_t n = 0; n < count; ++n) {
      const int64_t e = offset(n);
      bool ok = true;
      if (fl) {
        for (int k = 0; k < parts; ++k) {
          const double x = elem(got, e, k), y = elem(ref, e, k);
          ok &= (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= tol;
        }
      } else {
        ok = std::memcmp(got + base + e * item, ref + base + e * item, static_cast<size_t>(item)) == 0;
      }
      if (!ok)
        throw std::runtime_error("schedule " + s.key() + " computes a different result (element " +
                                 std::to_string(e) + ") than the default schedule");
    }
  }

  const mdh::MdHom& h_;
  const SynthSpec& spec_;
  const Target& t_;
  std::vector<BufferPtr> buffers_;
  mdh::Bindings b_;
  std::vector<int> outputs_, restore_;
  std::vector<std::vector<char>> pristine_, reference_;
};

// Tunes one kernel and stores the result.
TunedKernel tune_job(const TuneJob& job, double budget_s, int max_evals, bool routines,
                     const std::atomic<bool>* stop,
                     const std::function<void(const tune::SearchProgress&)>& progress) {
  TunedKernel k;
  const mdh::MdHom& h = *job.hom;
  k.ops = job.ops;
  k.size_class = job.cls;
  k.occurrences = job.count;
  k.target = job.target->name;
  Bench bench(h, job.spec, *job.target);
  mdh::Bindings sizes;
  sizes.ints = job.spec.ints;
  k.mdh = mdh::to_string(h, &sizes);
  tune::SearchOptions opt;
  opt.budget_s = budget_s;
  opt.max_evals = max_evals;
  opt.routines = routines && !job.target->device;  // (a device keeps its operands: no host routine)
  opt.seed = jit::hash64(h.key() + job.cls);
  opt.stop = stop;
  opt.progress = progress;
  const tune::Asm& target = job.target->machine();
  tune::StoreEntry stored;
  if (tune::ScheduleStore::instance().find(tune::device_id(target), h, bench.bindings(), job.cls, &stored, target))
    opt.starts.push_back(stored.schedule);
  tune::SearchResult r = tune::search(
      h, bench.bindings(), target, [&](const tune::Schedule& s, double best) { return bench.measure(s, best); },
      opt);
  k.default_schedule = r.initial.to_string();
  k.best_schedule = r.best.to_string();
  k.default_ms = r.default_s * 1e3;
  k.best_ms = r.best_s * 1e3;
  k.evals = r.evals;
  k.failures = r.failures;
  k.errors = r.errors;
  k.tune_s = r.elapsed_s;
  // Stored only if the store will accept it again for these sizes.
  if (std::isfinite(r.best_s) && r.best.legal(h) && r.best.why_unsafe(h, bench.bindings(), target).empty()) {
    tune::StoreEntry e;
    e.schedule = r.best;
    e.best_s = r.best_s;
    e.default_s = r.default_s;
    e.evals = r.evals;
    tune::ScheduleStore::instance().put(tune::device_id(target), h, job.cls, e);
    k.stored = true;
  }
  return k;
}

// ---------------------------------------------------------------------------
// Capture for numfuse.tune.

std::mutex g_capture_mu;
// Written under g_capture_mu; read without it by capturing(), which every
// group a flush runs asks (capture_group rechecks under the lock).
std::atomic<bool> g_capturing{false};
std::map<std::string, TuneJob> g_captured;
std::vector<std::string> g_captured_order;

// ---------------------------------------------------------------------------
// Background tuning.

struct BackgroundJob {
  TuneJob job;
  double budget_s = 0;
};

void tune_in_background(BackgroundJob& item, const std::atomic<bool>& abort) {
  tune_job(item.job, item.budget_s, 0, config().routines, &abort, nullptr);
}

Worker<BackgroundJob>& background() {
  static auto* w = new Worker<BackgroundJob>(tune_in_background);  // never destroyed: stopped at exit
  return *w;
}

// Synthetic data above this is not worth a background tuning run.
constexpr int64_t kMaxSynthBytes = int64_t(2) << 30;

}  // namespace

tune::Schedule choose_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Config& cfg, bool* tuned,
                               std::string* tuning, const Target& t) {
  *tuned = false;
  const tune::Asm& target = t.machine();
  // (No library routine on a device: the host's BLAS would take the
  // operands off it, where a contraction runs in tiles, gpu_tiles.)
  const bool routines = cfg.routines && !t.device;
  const std::string cls = tune::size_class(h, b);
  if (cfg.random_schedule_seed >= 0)
    return tune::random_schedule(h, b, target,
                                 static_cast<uint64_t>(cfg.random_schedule_seed) ^ jit::hash64(h.key() + "|" + cls),
                                 routines);
  tune::StoreEntry e;
  if (tune::ScheduleStore::instance().find(tune::device_id(target), h, b, cls, &e, target) &&
      (routines || e.schedule.routine == tune::Routine::None)) {
    *tuned = true;
    return e.schedule;
  }
  if (cfg.tune_seconds > 0 && !t.device) {
    TuneJob job;
    job.hom = std::make_shared<const mdh::MdHom>(h);
    job.spec = synth_spec(h, b);
    job.cls = cls;
    if (job.spec.total_bytes() <= kMaxSynthBytes) {
      std::string key = job.hom->key() + "|" + job.cls;
      if (tuning) *tuning = key;
      background().enqueue(std::move(key), BackgroundJob{std::move(job), cfg.tune_seconds});
    }
  }
  return tune::default_schedule(h, b, target, routines);
}

void capture_group(const std::shared_ptr<const mdh::MdHom>& hom, const mdh::Bindings& b, const std::string& ops,
                   double run_ms, const Target& t) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  if (!g_capturing) return;
  const std::string cls = tune::size_class(*hom, b);
  const std::string key = std::string(t.name) + "|" + hom->key() + "|" + cls;
  auto it = g_captured.find(key);
  if (it == g_captured.end()) {
    TuneJob job;
    job.hom = hom;
    job.spec = synth_spec(*hom, b);
    job.ops = ops;
    job.cls = cls;
    job.weight_ms = run_ms;
    job.count = 1;
    job.target = &t;
    g_captured.emplace(key, std::move(job));
    g_captured_order.push_back(key);
  } else {
    it->second.weight_ms += run_ms;
    it->second.count++;
  }
}

bool capturing() { return g_capturing.load(std::memory_order_relaxed); }

}  // namespace detail

using namespace detail;

void capture_begin() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  g_capturing = true;
  g_captured.clear();
  g_captured_order.clear();
}

int capture_end() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  g_capturing = false;
  return static_cast<int>(g_captured.size());
}

std::vector<TunedKernel> tune_captured(const TuneOptions& opt) {
  std::vector<TuneJob> jobs;
  {
    std::lock_guard<std::mutex> lock(g_capture_mu);
    for (const std::string& k : g_captured_order) jobs.push_back(g_captured.at(k));
  }
  // Most expensive first; each gets a share of what is left in proportion
  // to its observed time (with a floor, so small kernels get a few tries).
  std::stable_sort(jobs.begin(), jobs.end(), [](const TuneJob& a, const TuneJob& b) { return a.weight_ms > b.weight_ms; });
  double total = 0;
  for (const TuneJob& j : jobs) total += j.weight_ms;
  std::vector<double> w;
  for (const TuneJob& j : jobs) w.push_back(std::max(j.weight_ms, 0.1 * total / std::max<size_t>(jobs.size(), 1) + 1e-9));
  const Config cfg = config();
  std::vector<TunedKernel> out;
  const double t0 = now_s();
  for (size_t i = 0; i < jobs.size(); ++i) {
    double rest = 0;
    for (size_t j = i; j < w.size(); ++j) rest += w[j];
    const double left = std::max(0.0, opt.budget_s - (now_s() - t0));
    const double share = left * w[i] / rest;
    std::function<void(const tune::SearchProgress&)> cb;
    if (opt.progress)
      cb = [&, i](const tune::SearchProgress& p) {
        opt.progress(static_cast<int>(i), static_cast<int>(jobs.size()), jobs[i].ops, p);
      };
    out.push_back(tune_job(jobs[i], share, opt.max_evals, cfg.routines, nullptr, cb));
  }
  return out;
}

// (Background compiles of tier-0 groups stop and go with tuning: tiers.h.)
void background_wait() {
  background().wait();
  detail::compile_queue_wait();
}
void background_pause() {
  background().pause();
  detail::compile_queue_pause();
}
void background_resume() {
  detail::compile_queue_resume();
  background().resume();
}
void background_reset_in_child() {
  background().reset_in_child();
  detail::compile_queue_reset_in_child();
}
void background_stop() {
  background().shutdown();
  detail::compile_queue_stop();
}
int background_done() { return background().done(); }

bool detail::being_tuned(const std::string& key) { return !key.empty() && background().pending(key); }

void set_schedule_store(const std::string& path) { tune::ScheduleStore::instance().configure(path); }

std::string schedule_device() { return tune::device_id(active_target().machine()); }

bool device_target_active() { return active_target().device; }

}  // namespace nf::pipeline

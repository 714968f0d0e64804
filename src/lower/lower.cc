// The pass driver: build, the common passes (partials, tile_buffers, gpu_points, gpu_tiles, gpu_scan, promote, gpu_split, gpu_blocks, simd,
// pairwise, unroll, vectorize, storage, simplify), the target's tail (passes.h), each
// handed the target's capabilities (PassContext), with the nest printed
// (NUMFUSE_DUMP=passes) and verified after each.
#include <atomic>
#include <cstdio>
#include <stdexcept>

#include "core/checks.h"
#include "lower/passes.h"

namespace nf::lower {

namespace {
std::atomic<bool> g_dump_passes{false};
}  // namespace

void set_dump_passes(bool on) { g_dump_passes.store(on, std::memory_order_relaxed); }
bool dump_passes() { return g_dump_passes.load(std::memory_order_relaxed); }

namespace {

// Runs passes over nests, printing each after each pass (the dump of one
// kernel is written at once: kernels of a flush may be lowered on several
// threads) and verifying it (when the core's checks are on, core/checks.h, or when dumping).
class Driver {
 public:
  Driver(std::string schedule, const Caps& caps) : schedule_(std::move(schedule)), ctx_{caps} {}
  ~Driver() {
    if (dump_) std::fputs(trace_.c_str(), stderr);
  }
  // `ran`: the passes that made n so far, this one appended; the verifier
  // checks what they leave.
  void after(const char* pass, const LoopNest& n, std::vector<std::string>& ran) {
    ran.push_back(pass);
    if (dump_) trace_ += "-- " + n.name + " after " + pass + " (schedule " + schedule_ + ") --\n" + print(n);
    if (!dump_ && !checks_on()) return;
    const std::string bad = verify(n, ran);
    if (!bad.empty()) {
      if (dump_) std::fputs(trace_.c_str(), stderr);
      dump_ = false;
      throw std::logic_error(std::string("loop IR after pass ") + pass + ": " + bad + "\n" + print(n));
    }
  }
  void run(LoopNest& n, const Pass& p, std::vector<std::string>& ran) {
    p.run(n, ctx_);
    after(p.name, n, ran);
  }

 private:
  std::string schedule_;
  PassContext ctx_;
  bool dump_ = dump_passes();
  std::string trace_;
};

LoopNest common(Driver& d, const mdh::MdHom& h, const tune::Schedule& s, const std::string& name,
                std::vector<std::string>& ran) {
  std::string why = s.why_illegal(h);
  if (!why.empty()) throw std::logic_error("illegal schedule " + s.key() + ": " + why);
  LoopNest n = passes::build(h, s, name);
  d.after("build", n, ran);
  for (const Pass& p : passes::common()) d.run(n, p, ran);
  return n;
}

}  // namespace

const std::vector<Pass>& passes::common() {
  static const std::vector<Pass> list = {{"partials", passes::partials},
                                         {"tile_buffers", passes::tile_buffers},
                                         {"gpu_points", passes::gpu_points},
                                         {"gpu_tiles", passes::gpu_tiles},
                                         {"gpu_scan", passes::gpu_scan},
                                         {"promote", passes::promote},
                                         {"gpu_split", passes::gpu_split},
                                         {"gpu_blocks", passes::gpu_blocks},
                                         {"simd", passes::simd},
                                         {"pairwise", passes::pairwise},
                                         {"unroll", passes::unroll},
                                         {"vectorize", passes::vectorize},
                                         {"storage", passes::storage},
                                         {"simplify", passes::simplify}};
  return list;
}

LoopNest lower(const KernelSpec& k, const std::string& name, const std::vector<Pass>& tail, const Caps& caps) {
  if (k.stages.empty() || k.stages.size() != k.schedules.size())
    throw std::logic_error("lower: a kernel needs one schedule per stage");
  if (!k.shape && k.stages.size() != 1) throw std::logic_error("lower: several stages without a ChainShape");
  if (k.shape && k.shape->stages.size() != k.stages.size())
    throw std::logic_error("lower: the ChainShape's stages are not the kernel's");
  std::string keys;
  for (const tune::Schedule& s : k.schedules) keys += (keys.empty() ? "" : " ; ") + s.key();
  Driver d(keys, caps);
  // The passes that made each nest, in order (the verifier's rules follow them).
  std::vector<std::string> ran;
  if (!k.shape) {
    LoopNest n = common(d, *k.stages[0], k.schedules[0], name, ran);
    for (const Pass& p : tail) d.run(n, p, ran);
    return n;
  }
  std::vector<LoopNest> stages, stores(k.stages.size());
  for (size_t i = 0; i < k.stages.size(); ++i) {
    if (k.schedules[i].parallel) throw std::logic_error("lower: a multi-stage kernel's stage schedule is parallel");
    ran.clear();
    stages.push_back(common(d, *k.stages[i], k.schedules[i], name + "_stage" + std::to_string(i), ran));
    if (k.stages[i]->once_guard >= 0) {
      stores[i] = passes::build_stores(*k.stages[i], k.schedules[i], name + "_stores" + std::to_string(i));
      std::vector<std::string> stores_ran;
      d.after("build_stores", stores[i], stores_ran);
    }
  }
  // (ran: a stage's passes, which every stage took)
  LoopNest n = passes::compose(std::move(stages), std::move(stores), *k.shape, name);
  d.after("compose", n, ran);
  d.run(n, {"simplify", passes::simplify}, ran);
  for (const Pass& p : tail) d.run(n, p, ran);
  return n;
}

}  // namespace nf::lower

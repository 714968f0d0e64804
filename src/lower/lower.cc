// The pass driver: build, the common passes, the target's tail (passes.h),
// with the nest printed (NUMFUSE_DUMP=passes) and verified after each.
#include <atomic>
#include <cstdio>
#include <stdexcept>

#include "lower/passes.h"

namespace nf::lower {

namespace {
std::atomic<bool> g_dump_passes{false};
}  // namespace

void set_dump_passes(bool on) { g_dump_passes.store(on, std::memory_order_relaxed); }
bool dump_passes() { return g_dump_passes.load(std::memory_order_relaxed); }

LoopNest lower(const mdh::MdHom& h, const tune::Schedule& s, const std::string& name, const std::vector<Pass>& tail) {
  std::string why = s.why_illegal(h);
  if (!why.empty()) throw std::logic_error("illegal schedule " + s.key() + ": " + why);
  const bool dump = dump_passes();
  // The dump of one kernel is written at once: kernels of a flush may be
  // lowered on several threads.
  std::string trace;
  auto after = [&](const char* pass, const LoopNest& n) {
    if (dump) trace += "-- " + n.name + " after " + pass + " (schedule " + s.key() + ") --\n" + print(n);
#ifdef NDEBUG
    if (!dump) return;
#endif
    // Assertion builds verify every nest; release builds when dumping.
    const std::string bad = verify(n, pass);
    if (!bad.empty()) {
      if (dump) std::fputs(trace.c_str(), stderr);
      throw std::logic_error(std::string("loop IR after pass ") + pass + ": " + bad + "\n" + print(n));
    }
  };
  LoopNest n = passes::build(h, s, name);
  after("build", n);
  static const Pass kCommon[] = {{"storage", passes::storage}, {"simplify", passes::simplify}};
  for (const Pass& p : kCommon) {
    p.run(n);
    after(p.name, n);
  }
  for (const Pass& p : tail) {
    p.run(n);
    after(p.name, n);
  }
  if (dump) std::fputs(trace.c_str(), stderr);
  return n;
}

}  // namespace nf::lower

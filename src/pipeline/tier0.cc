// The decision to run an operation at once (tier 0) instead of recording it.
//
// Laziness pays off when fusion saves memory traffic worth more than what
// recording, analysing and launching cost (about a microsecond per operation
// even when the window is memoized). For small operations it cannot: NumPy
// itself takes well under a microsecond, so they run at once, by tier 0's
// interpreter, when they can see their final inputs. A pending write to an
// input, or a pending access to the output, sends the operation to the
// window instead, where program order is kept by fusion's constraints.
#include <atomic>

#include "pipeline/pipeline.h"
#include "runtime/tier0.h"

namespace nf::pipeline {

namespace {

std::atomic<int64_t> g_tier0_tasks{0};

bool run_now(Task& t) {
  const Config& c = config();
  if (c.tier == Tier::Lazy) return false;
  if (c.tier == Tier::Auto && shape_size(t.domain) > c.eager_max_elements) return false;
  if (t.output.buffer->pending()) return false;
  for (const View& v : t.inputs)
    if (v.buffer->pending_writes.load(std::memory_order_acquire) > 0) return false;
  if (!runtime::tier0_supports(t)) return false;
  runtime::tier0_run(t);
  g_tier0_tasks.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

void install_tier0() { global_stream().set_run_now(&run_now); }

int64_t tier0_tasks() { return g_tier0_tasks.load(std::memory_order_relaxed); }

}  // namespace nf::pipeline

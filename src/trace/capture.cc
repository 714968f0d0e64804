// Capture (trace.h): the window keeps every task of the traced call.
#include <stdexcept>

#include "core/capture.h"
#include "trace/trace.h"

namespace nf::trace {

namespace {
struct State {
  bool on = false;
  Stream::Hooks hooks;
  std::vector<Mark> marks;
};
State& state() {
  static State* s = new State();
  return *s;
}
}  // namespace

void begin() {
  State& s = state();
  if (s.on) throw std::logic_error("a capture is already running");
  Stream& st = global_stream();
  if (st.size() != 0) throw std::logic_error("trace::begin with pending tasks");
  s.on = true;
  s.marks.clear();
  s.hooks = st.hooks();
  st.set_hooks({});
  capture_clear_abort();
  g_capture_epoch.fetch_add(1);
  t_capturing = true;
}

bool capturing() { return t_capturing; }

void abort(const std::string& why) { capture_abort(why); }

const std::string& aborted() { return capture_aborted(); }

void mark(MarkKind kind, int64_t loop) {
  State& s = state();
  if (!s.on || !t_capturing) return;  // (another thread's loops are not the capture's)
  const size_t n = global_stream().size();
  if (n > kMaxCapturedTasks) abort("it runs more than " + std::to_string(kMaxCapturedTasks) + " operations in one call");
  s.marks.push_back({kind, loop, static_cast<int64_t>(n)});
}

Captured end() {
  State& s = state();
  if (!s.on) throw std::logic_error("trace::end without a capture");
  Stream& st = global_stream();
  t_capturing = false;
  Captured c;
  c.epoch = g_capture_epoch.load();
  c.aborted = capture_aborted();
  st.set_hooks(s.hooks);
  s.on = false;
  c.tasks = st.take();
  c.marks = std::move(s.marks);
  c.params = capture_params();
  s.marks.clear();
  // The program (or nothing) runs these tasks, never a flush.
  Stream::retire(c.tasks);
  if (!c.aborted.empty()) c.tasks.clear();
  return c;
}

}  // namespace nf::trace

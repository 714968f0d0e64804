// Capture (trace.h): the window keeps every task of the traced call.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "core/capture.h"
#include "trace/trace.h"

namespace nf::trace {

namespace {
struct State {
  bool on = false;
  Stream::Hooks hooks;
  std::vector<Mark> marks;
  std::vector<BufferPtr> args;  // the traced call's array arguments' memory (position: set_args' order)
  bool content = false;
  std::vector<int> read;        // positions read in Python
  std::unordered_map<const Buffer*, View> elements;  // element reads' results -> the element
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
  s.read.clear();
  s.elements.clear();
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
  s.elements.clear();
  s.args.clear();
  // The program (or nothing) runs these tasks, never a flush.
  Stream::retire(c.tasks);
  if (!c.aborted.empty()) c.tasks.clear();
  return c;
}

void set_args(const std::vector<View>& args, bool content_reads) {
  State& s = state();
  s.args.clear();
  for (const View& v : args) s.args.push_back(v.buffer);
  s.content = content_reads;
}

bool content_readable(const Buffer* b) {
  State& s = state();
  if (!s.on || !s.content || !t_capturing || b->pending_write()) return false;
  return std::any_of(s.args.begin(), s.args.end(), [&](const BufferPtr& a) { return a.get() == b; });
}

void content_read(const Buffer* b) {
  State& s = state();
  for (size_t k = 0; k < s.args.size(); ++k)
    if (s.args[k].get() == b && std::find(s.read.begin(), s.read.end(), static_cast<int>(k)) == s.read.end())
      s.read.push_back(static_cast<int>(k));
}

void note_element(const Buffer* result, const View& element) { state().elements[result] = element; }

const View* element_source(const Buffer* result) {
  State& s = state();
  auto it = s.elements.find(result);
  return it == s.elements.end() ? nullptr : &it->second;
}

std::vector<int> content_args() {
  std::vector<int> r = state().read;
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace nf::trace

#include "stream/stream.h"

#include <algorithm>
#include <stdexcept>

namespace nf {

void Task::validate() const {
  auto fail = [&](const std::string& what) {
    throw std::logic_error(std::string("invalid task ") + name + ": " + what);
  };
  for (const View& v : inputs)
    if (v.shape != domain) fail("input shape " + shape_str(v.shape) + " != domain " + shape_str(domain));
  if (output.shape != domain) fail("output shape != domain");
  if (kind == Kind::Scan && (scan_axis < 0 || scan_axis >= static_cast<int>(domain.size()))) fail("bad scan axis");
  if (kind != Kind::Reduce)
    for (int d = 0; d < output.ndim(); ++d)
      if (output.strides[d] == 0 && domain[d] > 1) fail("map output broadcast");
  for (const View& v : inputs)
    if (views_overlap(v, output) && !v.same_as(output)) fail("input overlaps output");
  for (const ExprNode& n : expr.nodes) {
    if (n.kind == ExprNode::Kind::Input && (n.a < 0 || n.a >= static_cast<int>(inputs.size())))
      fail("bad input slot");
    if (n.kind == ExprNode::Kind::Const && (n.a < 0 || n.a >= static_cast<int>(consts.size())))
      fail("bad const slot");
    if (n.kind == ExprNode::Kind::Index && (n.a < 0 || n.a >= static_cast<int>(indices.size())))
      fail("bad index slot");
  }
}

namespace {
void count_pending(const Task& t, int32_t d) {
  for (const View& v : t.inputs) v.buffer->pending_reads.fetch_add(d, std::memory_order_acq_rel);
  t.output.buffer->pending_writes.fetch_add(d, std::memory_order_acq_rel);
}
}  // namespace

void Stream::retire(const std::vector<Task>& tasks) {
  for (const Task& t : tasks) count_pending(t, -1);
}

void Stream::record(Task&& t) {
  if (run_now_ && run_now_(t)) return;
  count_pending(t, 1);
  bool exported = t.output.buffer->exports.load(std::memory_order_relaxed) > 0;
  for (const View& v : t.inputs) exported |= v.buffer->exports.load(std::memory_order_relaxed) > 0;
  if (exported) sync_request_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  window_.push_back(std::move(t));
  size_.store(window_.size(), std::memory_order_release);
  recorded_total_.fetch_add(1, std::memory_order_release);
}

std::vector<Task> Stream::take() {
  std::lock_guard<std::recursive_mutex> gate(gate_);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Task> out;
  out.swap(window_);
  size_.store(0, std::memory_order_release);
  // No thread is between recording and wrapping (the gate), so this is a
  // consistent picture of which buffers Python can still reach.
  for (Task& t : out) {
    for (View& v : t.inputs) v.buffer->py_live = v.buffer->py_refs.load() > 0;
    t.output.buffer->py_live = t.output.buffer->py_refs.load() > 0;
  }
  window_.reserve(std::min<size_t>(max_window, 4096));
  return out;
}

void Stream::restore(std::vector<Task> tasks) {
  if (tasks.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = tasks.size();
  tasks.insert(tasks.end(), std::make_move_iterator(window_.begin()), std::make_move_iterator(window_.end()));
  window_.swap(tasks);
  size_.store(window_.size(), std::memory_order_release);
  recorded_total_.fetch_add(n, std::memory_order_release);
}

Stream::Stream() { window_.reserve(std::min<size_t>(max_window, 4096)); }

Stream& global_stream() {
  static Stream* s = new Stream();  // never destroyed: outlives Python teardown
  return *s;
}

}  // namespace nf

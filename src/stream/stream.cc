#include "stream/stream.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "core/checks.h"

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

template <typename T>
inline char* put(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

}  // namespace

// Every view's shape is the task's domain (a recorder invariant,
// Task::validate), so a view contributes its dtype and strides only, and
// the domain's rank gives their number.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(offsetof(Task, name) + sizeof(const char*) - offsetof(Task, kind) == Task::kHeadBytes &&
                  offsetof(Task, scatter) + sizeof(uint32_t) == offsetof(Task, name),
              "Task's scalar fields are one block without padding");
#pragma GCC diagnostic pop

void Structure::append(const Task& t) {
  // Room for the fields, with the slack of write_to's whole copies of
  // inline storage (at most 128 bytes each).
  const size_t nd = t.domain.size(), nn = t.expr.nodes.size(), nv = t.inputs.size() + 1;
  const size_t words = 8 * nd + 128;
  size_t bound = 64 + words * (nv + 1) + sizeof(ExprNode) * nn + 128 + t.consts.size();
  for (const IndexFn& f : t.indices) bound += 1 + 8 * f.strides.size() + 128;
  if (buf_.size() - size_ < bound) buf_.resize(std::max(2 * buf_.size(), size_ + bound + 4096));
  char* p = buf_.data() + size_;
  std::memcpy(p, t.head_bytes(), Task::kHeadBytes);  // kind .. name (no padding: see Task)
  p += Task::kHeadBytes;
  p = put(p, static_cast<uint8_t>(nd));
  p = put(p, static_cast<uint16_t>(nv));
  p = put(p, static_cast<uint16_t>(t.consts.size()));
  p = put(p, static_cast<uint16_t>(t.indices.size()));
  p = put(p, static_cast<uint32_t>(nn));
  p = t.domain.write_to(p);
  p = t.expr.nodes.write_to(p);  // (no padding bytes: see ExprNode)
  for (const Scalar& k : t.consts) p = put(p, k.dtype);
  for (const IndexFn& f : t.indices) {
    p = put(p, static_cast<uint8_t>(f.strides.size()));
    p = f.strides.write_to(p);
  }
  for (const View& v : t.inputs) {
    p = put(p, v.dtype);
    p = v.strides.write_to(p);
  }
  p = put(p, t.output.dtype);
  p = t.output.strides.write_to(p);
  size_ = static_cast<size_t>(p - buf_.data());
}

Structure Structure::of(const std::vector<Task>& tasks) {
  Structure s;
  for (const Task& t : tasks) s.append(t);
  return s;
}

namespace {
// Task numbers (Task::seq): assigned under the global stream's gate, so a
// load and a store suffice.
std::atomic<uint64_t> g_task_seq{0};
}  // namespace

void Stream::retire(const std::vector<Task>& tasks) {
  // A window's tasks are numbered in order, and windows retire in order.
  uint64_t last = 0;
  for (const Task& t : tasks) last = std::max(last, t.seq);
  Buffer::retire_through(last);
}

void Stream::record(Task&& t) {
  Slot slot(*this);  // one path for every task: a task built elsewhere is moved in
  slot.task() = std::move(t);
  slot.commit();
}

Stream::Slot::Slot(Stream& s) : s_(s) {
  s_.gate_.lock();
  // Only the gate's holder touches the window (take() holds the gate too,
  // restore() puts tasks aside): no lock, no atomic read-modify-write.
  if (s_.slot_open_.load(std::memory_order_relaxed)) {
    s_.gate_.unlock();
    throw std::logic_error("a task was recorded while another was being built in place");
  }
  s_.slot_open_.store(true, std::memory_order_relaxed);
  task_ = &s_.window_.emplace_back();
}

Stream::Slot::~Slot() {
  if (open_) {
    s_.window_.pop_back();
    s_.slot_open_.store(false, std::memory_order_relaxed);
  }
  s_.gate_.unlock();
}

void Stream::Slot::commit() {
  if (checks_on()) task_->validate();
  Task& t = *task_;
  if (s_.run_now_ && s_.run_now_(t)) return;  // (the destructor drops the slot)
  const uint64_t seq = g_task_seq.load(std::memory_order_relaxed) + 1;
  g_task_seq.store(seq, std::memory_order_relaxed);
  t.seq = seq;
  for (const View& v : t.inputs) v.buffer->last_read.store(seq, std::memory_order_release);
  t.output.buffer->last_write.store(seq, std::memory_order_release);
  bool exported = t.output.buffer->exports.load(std::memory_order_relaxed) > 0;
  for (const View& v : t.inputs) exported |= v.buffer->exports.load(std::memory_order_relaxed) > 0;
  if (exported) s_.sync_request_.store(true);
  // (The gate's holder owns the window, codes_ and structure_.)
  s_.note_code(t);
  s_.structure_.append(t);
  s_.size_.store(s_.window_.size() + s_.restored_n_.load(std::memory_order_relaxed), std::memory_order_release);
  // (One writer, the gate's holder: restore counts in restored_total_.)
  s_.recorded_total_.store(s_.recorded_total_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  open_ = false;
  s_.slot_open_.store(false, std::memory_order_relaxed);
}

void Stream::note_code(const Task& t) {
  uint64_t h = reinterpret_cast<uintptr_t>(t.name) * 0x9E3779B97F4A7C15ull;
  h ^= (static_cast<uint64_t>(t.kind) << 8) ^ (static_cast<uint64_t>(t.output.dtype) << 16) ^
       (static_cast<uint64_t>(t.domain.size()) << 24) ^ (static_cast<uint64_t>(t.inputs.size()) << 32);
  h *= 0xff51afd7ed558ccdull;
  codes_.push_back(static_cast<uint32_t>(h ^ (h >> 32)));
  // Half full: look for the loop body's period in the window's last 3/8
  // (past any prologue before the loop), and cut at a multiple of it.
  const size_t n = codes_.size();
  if (max_window >= 16 && n == max_window / 2) {
    const size_t q = n / 4;
    if (const size_t p = period_of(codes_.data() + q, n - q); p > 0 && p <= max_window / 4)
      cut_.store(max_window / p * p, std::memory_order_release);
  }
}

size_t Stream::period_of(const uint32_t* codes, size_t n) {
  if (n < 2) return 0;
  // Knuth-Morris-Pratt failure function: the smallest period is n - pi[n-1].
  std::vector<uint32_t> pi(n, 0);
  for (size_t i = 1; i < n; ++i) {
    uint32_t k = pi[i - 1];
    while (k > 0 && codes[i] != codes[k]) k = pi[k - 1];
    if (codes[i] == codes[k]) ++k;
    pi[i] = k;
  }
  const size_t p = n - pi[n - 1];
  return p <= n / 2 ? p : 0;
}

void Stream::set_max_window(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  max_window = std::max<size_t>(n, 1);
  cut_.store(max_window, std::memory_order_release);
}

std::vector<Task> Stream::take(Structure* structure) {
  std::lock_guard<std::recursive_mutex> gate(gate_);
  std::lock_guard<std::mutex> lock(mu_);
  if (slot_open_.load(std::memory_order_relaxed))
    throw std::logic_error("the window was taken while a task was being built in place");
  std::vector<Task> out;
  const bool had_restored = !restored_.empty();
  if (!had_restored) {
    out.swap(window_);
  } else {
    // Tasks a failed flush put back come first (they are older).
    out.swap(restored_);
    out.insert(out.end(), std::make_move_iterator(window_.begin()), std::make_move_iterator(window_.end()));
    window_.clear();
    restored_n_.store(0, std::memory_order_relaxed);
  }
  if (structure) {
    if (had_restored) {
      // (Rare: a flush failed. Its tasks' structure was given away with them.)
      structure->clear();
      for (const Task& t : out) structure->append(t);
    } else {
      structure->swap(structure_);  // the caller's storage comes back for the next window
    }
  }
  structure_.clear();
  codes_.clear();
  cut_.store(max_window, std::memory_order_release);
  size_.store(0, std::memory_order_release);
  // No thread is between recording and wrapping (the gate), so this is a
  // consistent picture of which buffers Python can still reach.
  for (Task& t : out) {
    for (View& v : t.inputs) v.buffer->py_live = v.buffer->py_refs.load() > 0;
    t.output.buffer->py_live = t.output.buffer->py_refs.load() > 0;
  }
  if (window_.capacity() == 0 || spare_.capacity() > window_.capacity())
    window_.swap(spare_);  // empty, with the capacity of an earlier window (recycle)
  // No spare yet (its window is still being flushed): room for a window like
  // this one, so the next does not regrow (each regrowth moves every task).
  if (window_.capacity() == 0) window_.reserve(std::min<size_t>(max_window, std::max<size_t>(out.size(), 64)));
  return out;
}

void Stream::recycle(std::vector<Task>&& tasks) {
  tasks.clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (tasks.capacity() > spare_.capacity()) spare_.swap(tasks);
}

void Stream::restore(std::vector<Task> tasks) {
  if (tasks.empty()) return;
  // Put aside, in front of any put aside before, and taken first by the next
  // take(): the window itself belongs to the gate's holder, and the gate is
  // not taken here, as its holder may be waiting for this flush.
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = tasks.size();
  tasks.insert(tasks.end(), std::make_move_iterator(restored_.begin()), std::make_move_iterator(restored_.end()));
  restored_.swap(tasks);
  restored_n_.fetch_add(n, std::memory_order_relaxed);
  size_.fetch_add(n, std::memory_order_release);
  restored_total_.fetch_add(n, std::memory_order_release);
}

Stream::Stream() { window_.reserve(std::min<size_t>(max_window, 4096)); }

Stream* const g_stream = new Stream();

}  // namespace nf

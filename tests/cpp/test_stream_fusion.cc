// stream/ and fusion/: recording invariants and the Diffuse constraints.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "core/error.h"
#include "fusion/fusion.h"
#include "stream/stream.h"

using namespace nf;

namespace {

// out = a + b recorded directly (no NumPy type resolution needed).
View add(const View& a, const View& b, const View* out = nullptr) {
  MapSpec s;
  s.name = "add";
  s.inputs = {a, b};
  int x = s.expr.input(0, a.dtype), y = s.expr.input(1, b.dtype);
  s.expr.binary(BinaryOp::Add, x, y, DType::Float64);
  s.out = out;
  return record_map(std::move(s));
}

View scale(const View& a, double k, const View* out = nullptr) {
  MapSpec s;
  s.name = "multiply";
  s.inputs = {a};
  s.consts = {Scalar::of_float(DType::Float64, k)};
  s.expr.binary(BinaryOp::Multiply, s.expr.input(0, a.dtype), s.expr.constant(0, DType::Float64), DType::Float64);
  s.out = out;
  return record_map(std::move(s));
}

View slice2d(const View& v, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  IndexItem a, b;
  a.kind = b.kind = IndexItem::Kind::Slice;
  a.start = r0, a.stop = r1, a.has_start = a.has_stop = true;
  b.start = c0, b.stop = c1, b.has_start = b.has_stop = true;
  return index_view(v, {a, b});
}

struct Window {
  std::vector<Task> tasks;
  Window() { tasks = global_stream().take(); }
};

}  // namespace

TEST(Record, BroadcastErrorsAtTheCall) {
  global_stream().take();
  View a = View::fresh(DType::Float64, {3}), b = View::fresh(DType::Float64, {4});
  EXPECT_THROW(add(a, b), ValueError);
  EXPECT_EQ(global_stream().size(), 0u);  // nothing recorded
  View c = View::fresh(DType::Float64, {2, 1});
  View r = add(a, c);
  EXPECT_EQ(r.shape, Dims({2, 3}));
  Window w;
  ASSERT_EQ(w.tasks.size(), 1u);
  EXPECT_NO_THROW(w.tasks[0].validate());
}

TEST(Record, OverlappingInputIsCopiedFirst) {
  global_stream().take();
  View a = View::fresh(DType::Float64, {10});
  IndexItem hi, lo;
  hi.kind = lo.kind = IndexItem::Kind::Slice;
  hi.start = 1, hi.has_start = true;
  lo.stop = -1, lo.has_stop = true;
  View a1 = index_view(a, {hi}), a0 = index_view(a, {lo});
  add(a1, a0, &a1);  // a[1:] += a[:-1]
  Window w;
  ASSERT_EQ(w.tasks.size(), 2u);  // the copy of a[:-1], then the add
  EXPECT_NE(w.tasks[1].inputs[1].buffer, a.buffer);
  for (const Task& t : w.tasks) EXPECT_NO_THROW(t.validate());
}

TEST(Record, InPlaceSlotCommitsInOrderAndDropsOnError) {
  global_stream().take();
  View a = View::fresh(DType::Float64, {4});
  View r1 = scale(a, 2.0);
  {
    // An error while the task is being built: the slot leaves no trace.
    Stream::Slot slot(global_stream());
    slot.task().name = "half-built";
    EXPECT_EQ(global_stream().size(), 1u);  // not part of the window before commit
  }
  EXPECT_EQ(global_stream().size(), 1u);
  View r2 = add(r1, a);
  {
    // Recording (which would move the slot) or taking the window while a
    // slot is open is a bug, caught as such.
    Stream::Slot slot(global_stream());
    EXPECT_THROW(scale(a, 3.0), std::logic_error);
    Task direct;
    direct.name = "direct";
    direct.domain = {4};
    direct.inputs.push_back(a);
    direct.output = View::fresh(DType::Float64, {4});
    direct.expr.input(0, DType::Float64);
    EXPECT_THROW(global_stream().record(std::move(direct)), std::logic_error);
    EXPECT_THROW(global_stream().take(), std::logic_error);
  }
  // The dropped tasks were never numbered: a's latest reader is r2's add.
  Window w;
  EXPECT_TRUE(a.buffer->pending_read());
  EXPECT_FALSE(a.buffer->pending_write());
  EXPECT_TRUE(r2.buffer->pending_write());
  ASSERT_EQ(w.tasks.size(), 2u);
  EXPECT_STREQ(w.tasks[0].name, "multiply");
  EXPECT_STREQ(w.tasks[1].name, "add");
  EXPECT_TRUE(w.tasks[1].inputs[0].same_as(r1));
  EXPECT_TRUE(w.tasks[1].output.same_as(r2));
  for (const Task& t : w.tasks) EXPECT_NO_THROW(t.validate());
  EXPECT_EQ(w.tasks[1].seq, w.tasks[0].seq + 1);
  EXPECT_EQ(a.buffer->last_read.load(), w.tasks[1].seq);
  Stream::retire(w.tasks);
  EXPECT_FALSE(a.buffer->pending());
  EXPECT_FALSE(r2.buffer->pending());
}

TEST(Record, RestoreWhileAnotherThreadRecordsKeepsEveryTaskInOrder) {
  // A failed flush puts its tasks back (restore, without the gate) while
  // another thread records without a lock: they are set aside and the next
  // take() puts them first, so no task is lost or torn and the tasks put
  // back come before everything recorded.
  global_stream().take();
  View a = View::fresh(DType::Float64, {8});
  constexpr int kRecorded = 4000, kRestores = 200;
  std::atomic<bool> go{false};
  std::thread restorer([&] {
    while (!go.load()) std::this_thread::yield();
    for (int r = 0; r < kRestores; ++r) {
      std::vector<Task> back(1);
      Task& t = back[0];
      t.name = "restored";
      t.domain = {8};
      t.inputs.push_back(a);
      t.output = View::fresh(DType::Float64, {8});
      t.expr.input(0, DType::Float64);
      t.seq = 0;
      global_stream().restore(std::move(back));
    }
  });
  go.store(true);
  for (int i = 0; i < kRecorded; ++i) scale(a, 2.0);
  restorer.join();
  Window w;
  ASSERT_EQ(w.tasks.size(), static_cast<size_t>(kRecorded + kRestores));
  int recorded = 0;
  uint64_t last_seq = 0;
  for (size_t i = 0; i < w.tasks.size(); ++i) {
    const Task& t = w.tasks[i];
    EXPECT_NO_THROW(t.validate());
    EXPECT_EQ(std::string(t.name), i < kRestores ? "restored" : "multiply");
    if (std::string(t.name) == "multiply") {
      ++recorded;
      EXPECT_GT(t.seq, last_seq);  // recorded tasks keep their order
      last_seq = t.seq;
    }
  }
  EXPECT_EQ(recorded, kRecorded);
  Stream::retire(w.tasks);
}

TEST(SmallVector, WholeInlineCopiesKeepContents) {
  Dims a{1, 2, 3};
  Dims b = a;
  Dims c(std::move(b));
  EXPECT_EQ(c, Dims({1, 2, 3}));
  Dims big{1, 2, 3, 4, 5, 6, 7, 8};  // on the heap
  Dims d;
  d = big;
  EXPECT_EQ(d, big);
  d = Dims{9};
  EXPECT_EQ(d, Dims({9}));
  Dims e{4, 5};
  e = Dims(big);  // heap storage moved in
  EXPECT_EQ(e, big);
  e.resize(2);
  Dims f = e;  // 2 elements read from a heap block of more than 6
  EXPECT_EQ(f, Dims({1, 2}));
}

TEST(Fusion, ElementwiseChainIsOneGroupWithTemporaries) {
  global_stream().take();
  View x = View::fresh(DType::Float64, {100});
  View t1 = scale(x, 2.0);
  View t2 = add(t1, x);
  View y = scale(t2, 3.0);
  // Only y and x are reachable from "Python".
  y.buffer->py_refs = 1;
  x.buffer->py_refs = 1;
  Window w;
  fusion::Partition p = fusion::partition(w.tasks, fusion::Policy::Diffuse);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].size(), 3);
  EXPECT_EQ(p.groups[0].temporaries.size(), 2u);  // t1, t2 never allocated
  fusion::Partition none = fusion::partition(w.tasks, fusion::Policy::None);
  EXPECT_EQ(none.groups.size(), 3u);
}

TEST(Fusion, DiffuseFigure2Stencil) {
  global_stream().take();
  const int64_t n = 16;
  View grid = View::fresh(DType::Float64, {n + 2, n + 2});
  grid.buffer->py_refs = 1;
  View center = slice2d(grid, 1, n + 1, 1, n + 1), north = slice2d(grid, 0, n, 1, n + 1);
  View east = slice2d(grid, 1, n + 1, 2, n + 2), west = slice2d(grid, 1, n + 1, 0, n);
  View south = slice2d(grid, 2, n + 2, 1, n + 1);
  View s = add(add(add(add(center, north), east), west), south);
  View work = scale(s, 0.2);
  work.buffer->py_refs = 1;
  MapSpec copy;  // center[:] = work
  copy.name = "__setitem__";
  copy.inputs = {work};
  copy.expr.input(0, DType::Float64);
  copy.out = &center;
  record_map(std::move(copy));
  Window w;
  fusion::Partition p = fusion::partition(w.tasks, fusion::Policy::Diffuse);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].size(), 5);  // the whole five-point expression
  EXPECT_NE(p.groups[0].stop_reason.find("anti-dependence"), std::string::npos) << p.groups[0].stop_reason;
  EXPECT_EQ(p.groups[0].temporaries.size(), 4u);  // the four partial sums
  EXPECT_EQ(p.groups[1].size(), 1);  // the write-back
}

TEST(Fusion, ReductionResultIsNotConsumedInItsGroup) {
  global_stream().take();
  View x = View::fresh(DType::Float64, {64});
  x.buffer->py_refs = 1;
  ReduceSpec r;
  r.name = "sum";
  r.input = x;
  r.axes = {0};
  r.value.input(0, DType::Float64);
  View s = record_reduce(std::move(r));
  View y = add(x, s);  // x + x.sum(): same domain, but reads the reduction
  y.buffer->py_refs = 1;
  Window w;
  fusion::Partition p = fusion::partition(w.tasks, fusion::Policy::Diffuse);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_NE(p.groups[0].stop_reason.find("constraint 4"), std::string::npos) << p.groups[0].stop_reason;
}

TEST(Fusion, DeadTasksAreSkipped) {
  global_stream().take();
  View x = View::fresh(DType::Float64, {8});
  x.buffer->py_refs = 1;
  scale(x, 2.0);  // result dropped by "Python"
  Window w;
  fusion::Partition p = fusion::partition(w.tasks, fusion::Policy::Diffuse);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].dead.size(), 1u);
}

namespace {

View slice1d(const View& v, int64_t lo, int64_t hi) {
  IndexItem a;
  a.kind = IndexItem::Kind::Slice;
  a.start = lo, a.stop = hi, a.has_start = a.has_stop = true;
  return index_view(v, {a});
}

// y = a[o1:o1+4] + b[o2:o2+4]; a[o3:o3+4] = y * 2 (b: a itself or another buffer).
std::vector<Task> moving_window(const View& a, const View& b, int64_t o1, int64_t o2, int64_t o3) {
  global_stream().take();
  View y = add(slice1d(a, o1, o1 + 4), slice1d(b, o2, o2 + 4));
  y.buffer->py_refs = 1;
  View dst = slice1d(a, o3, o3 + 4);
  scale(y, 2.0, &dst);
  return global_stream().take();
}

// The signature functions on a window's structure written afresh.
bool matches(const std::vector<Task>& w, fusion::Policy policy, const fusion::Signature& sig) {
  return fusion::window_matches(w, Structure::of(w).view(), policy, sig);
}
void signature(const std::vector<Task>& w, fusion::Policy policy, fusion::Signature& sig) {
  fusion::window_signature(w, Structure::of(w).view(), policy, sig);
}

}  // namespace

TEST(Signature, WindowMatchesItsShiftsAndNothingElse) {
  global_stream().take();
  View a = View::fresh(DType::Float64, {40}), b = View::fresh(DType::Float64, {40});
  a.buffer->py_refs = b.buffer->py_refs = 1;
  const auto policy = fusion::Policy::Diffuse;
  std::vector<Task> w1 = moving_window(a, a, 0, 2, 3);
  fusion::Signature s1;
  signature(w1, policy, s1);
  EXPECT_TRUE(matches(w1, policy, s1));
  EXPECT_TRUE(matches(w1, policy, s1.compact()));  // the memo's copy carries the offsets
  // Every view of `a` moved by 5: the same signature, proved without building it.
  std::vector<Task> w2 = moving_window(a, a, 5, 7, 8);
  EXPECT_TRUE(matches(w2, policy, s1));
  fusion::Signature s2;
  signature(w2, policy, s2);
  EXPECT_TRUE(s2 == s1);
  // The write no longer overlaps the reads the same way: views moved by
  // different amounts are not matched (and the signature differs).
  std::vector<Task> w3 = moving_window(a, a, 0, 2, 20);
  EXPECT_FALSE(matches(w3, policy, s1));
  fusion::Signature s3;
  signature(w3, policy, s3);
  EXPECT_FALSE(s3 == s1);
  // The second read from another buffer: its own number, no match.
  std::vector<Task> w4 = moving_window(a, b, 0, 2, 3);
  EXPECT_FALSE(matches(w4, policy, s1));
  // Another policy, a shorter or a longer window: no match.
  EXPECT_FALSE(matches(w1, fusion::Policy::None, s1));
  std::vector<Task> shorter(std::make_move_iterator(w2.begin()), std::make_move_iterator(w2.begin() + 1));
  EXPECT_FALSE(matches(shorter, policy, s1));
  std::vector<Task> longer = moving_window(a, a, 0, 2, 3);
  std::vector<Task> more = moving_window(a, a, 0, 2, 3);
  for (Task& t : more) longer.push_back(std::move(t));
  EXPECT_FALSE(matches(longer, policy, s1));
  // A result no longer reachable from Python: the buffer flags differ.
  std::vector<Task> w5 = moving_window(a, a, 0, 2, 3);
  w5[0].output.buffer->py_refs = 0;
  w5[0].output.buffer->py_live = false;
  EXPECT_FALSE(matches(w5, policy, s1));
}

TEST(Signature, TheStreamRecordsEachTasksStructure) {
  // What the stream writes as tasks are recorded is what Structure::of
  // writes from the window it hands over -- through a failed flush's
  // restore too, where the structure is written afresh.
  global_stream().take();
  View a = View::fresh(DType::Float64, {40}), b = View::fresh(DType::Float64, {5, 8});
  a.buffer->py_refs = b.buffer->py_refs = 1;
  moving_window(a, a, 0, 2, 3);  // (takes its window)
  View y = add(slice1d(a, 1, 9), slice1d(a, 11, 19));
  y.buffer->py_refs = 1;
  ReduceSpec r;
  r.input = b;
  r.axes = {1};
  r.value.input(0, DType::Float64);
  View s = record_reduce(std::move(r));
  s.buffer->py_refs = 1;
  Structure st;
  std::vector<Task> w = global_stream().take(&st);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_GT(st.size(), 0u);
  EXPECT_EQ(st.view(), Structure::of(w).view());
  // Another window's structure differs (other shapes).
  View z = add(slice1d(a, 1, 5), slice1d(a, 11, 15));
  z.buffer->py_refs = 1;
  Structure st2;
  std::vector<Task> w2 = global_stream().take(&st2);
  EXPECT_NE(st2.view(), st.view());
  // Restored (a failed flush): taken back with its structure.
  global_stream().restore(std::move(w));
  View q = add(slice1d(a, 2, 6), slice1d(a, 12, 16));
  q.buffer->py_refs = 1;
  Structure st3;
  std::vector<Task> w3 = global_stream().take(&st3);
  ASSERT_EQ(w3.size(), 3u);
  EXPECT_EQ(st3.view(), Structure::of(w3).view());
  EXPECT_EQ(st3.view().substr(0, st.size()), st.view());
}

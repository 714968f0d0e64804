// core/: dtypes and promotion, scalars, views, exact overlap, view transforms.
#include <set>
#include <atomic>
#include <thread>
#include <vector>
#include <algorithm>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/view.h"

using namespace nf;

TEST(DType, PromotionFollowsNumPy2) {
  EXPECT_EQ(promote(DType::Int8, DType::UInt8), DType::Int16);
  EXPECT_EQ(promote(DType::Int64, DType::UInt64), DType::Float64);
  EXPECT_EQ(promote(DType::Int16, DType::Float32), DType::Float32);
  EXPECT_EQ(promote(DType::Int32, DType::Float32), DType::Float64);
  EXPECT_EQ(promote(DType::Bool, DType::UInt16), DType::UInt16);
  EXPECT_EQ(promote(DType::UInt32, DType::Int32), DType::Int64);
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b)
      EXPECT_EQ(promote(DType(a), DType(b)), promote(DType(b), DType(a)));
}

TEST(DType, WeakScalarsNEP50) {
  EXPECT_EQ(promote_weak(DType::UInt8, WeakKind::Int), DType::UInt8);
  EXPECT_EQ(promote_weak(DType::Bool, WeakKind::Int), DType::Int64);
  EXPECT_EQ(promote_weak(DType::Int32, WeakKind::Float), DType::Float64);
  EXPECT_EQ(promote_weak(DType::Float32, WeakKind::Float), DType::Float32);
  EXPECT_EQ(promote_weak(DType::Int8, WeakKind::Bool), DType::Int8);
}

TEST(DType, CastingRules) {
  EXPECT_TRUE(can_cast(DType::Int32, DType::Float64, Casting::Safe));
  EXPECT_FALSE(can_cast(DType::Int64, DType::Float32, Casting::Safe));
  EXPECT_TRUE(can_cast(DType::Int64, DType::Float32, Casting::SameKind));
  EXPECT_FALSE(can_cast(DType::Float64, DType::Int64, Casting::SameKind));
  EXPECT_FALSE(can_cast(DType::Int8, DType::UInt8, Casting::SameKind));
  EXPECT_TRUE(can_cast(DType::UInt8, DType::Int8, Casting::SameKind));
}

TEST(Scalar, CastsLikeNumPy) {
  EXPECT_EQ(Scalar::of_float(DType::Float64, 300.7).cast(DType::UInt8).u, 44u);
  EXPECT_EQ(Scalar::of_float(DType::Float64, -1.5).cast(DType::UInt8).u, 255u);
  EXPECT_EQ(Scalar::of_float(DType::Float64, 1e20).cast(DType::Int64).i, INT64_MIN);
  EXPECT_EQ(Scalar::of_int(DType::Int64, 257).cast(DType::Int8).i, 1);
  EXPECT_TRUE(Scalar::of_float(DType::Float64, __builtin_nan("")).cast(DType::Bool).truthy());
  EXPECT_FLOAT_EQ(Scalar::of_float(DType::Float64, 0.1).cast(DType::Float32).f, 0.1f);
}

namespace {
View vec(BufferPtr b, int64_t off, int64_t n, int64_t stride) {
  View v;
  v.buffer = b;
  v.dtype = DType::Float64;
  v.offset = off;
  v.shape = {n};
  v.strides = {stride};
  return v;
}
}  // namespace

TEST(View, OverlapIsExact) {
  auto b = std::make_shared<Buffer>(800);
  EXPECT_TRUE(views_overlap(vec(b, 1, 9, 1), vec(b, 0, 9, 1)));   // a[1:] vs a[:-1]
  EXPECT_FALSE(views_overlap(vec(b, 0, 5, 2), vec(b, 1, 5, 2)));  // a[::2] vs a[1::2]: interleaved, disjoint
  EXPECT_FALSE(views_overlap(vec(b, 0, 5, 1), vec(b, 5, 5, 1)));  // halves
  EXPECT_TRUE(views_overlap(vec(b, 9, 10, -1), vec(b, 3, 1, 1)));  // reversed view covers element 3
  EXPECT_FALSE(views_overlap(vec(b, 0, 0, 1), vec(b, 0, 5, 1)));   // empty views overlap nothing
  auto other = std::make_shared<Buffer>(800);
  EXPECT_FALSE(views_overlap(vec(b, 0, 10, 1), vec(other, 0, 10, 1)));
  // 2-D: rows 0..3 of a 10x10 grid (columns 1..8) vs column 9: disjoint.
  View g;
  g.buffer = b;
  g.offset = 1;
  g.shape = {4, 8};
  g.strides = {10, 1};
  View col = vec(b, 9, 10, 10);
  EXPECT_FALSE(views_overlap(g, col));
  col.offset = 8;
  EXPECT_TRUE(views_overlap(g, col));
}

// Against brute force: the bytes each view touches, for random 1-D and 2-D
// views (positive, negative and zero strides; float64 and int32) of one buffer.
TEST(View, OverlapMatchesBruteForce) {
  auto b = std::make_shared<Buffer>(4096);
  uint64_t state = 12345;
  auto rnd = [&](int64_t lo, int64_t hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  auto random_view = [&]() {
    View v;
    v.buffer = b;
    v.dtype = rnd(0, 3) == 0 ? DType::Int32 : DType::Float64;
    const int64_t is = itemsize(v.dtype);
    const int nd = static_cast<int>(rnd(1, 2));
    for (int k = 0; k < nd; ++k) {
      v.shape.push_back(rnd(0, 5));
      v.strides.push_back(rnd(0, 4) == 0 ? 1 : rnd(-7, 7));
    }
    if (rnd(0, 2) == 0) v.strides = (nd == 1 ? Dims({1}) : Dims({v.shape[1], 1}));  // contiguous
    // Offset so every element stays inside the first 4096 bytes.
    int64_t lo = 0, hi = 0;
    for (int k = 0; k < nd; ++k) {
      const int64_t span = v.strides[k] * std::max<int64_t>(v.shape[k] - 1, 0);
      (span < 0 ? lo : hi) += span;
    }
    v.offset = rnd(-lo, (4096 / is) - 1 - hi);
    return v;
  };
  auto bytes = [](const View& v) {
    std::set<int64_t> out;
    const int64_t is = itemsize(v.dtype);
    if (v.size() == 0) return out;
    const int64_t n1 = v.ndim() == 2 ? v.shape[1] : 1, s1 = v.ndim() == 2 ? v.strides[1] : 0;
    for (int64_t i = 0; i < v.shape[0]; ++i)
      for (int64_t j = 0; j < n1; ++j)
        for (int64_t c = 0; c < is; ++c) out.insert((v.offset + i * v.strides[0] + j * s1) * is + c);
    return out;
  };
  int overlapping = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    View x = random_view(), y = random_view();
    if (rnd(0, 1)) y.offset = std::clamp<int64_t>(x.offset + rnd(-3, 3), 0, 4096 / itemsize(y.dtype) - 1 - 60);
    if (y.offset < 0) continue;
    auto bx = bytes(x), by = bytes(y);
    if (!bx.empty() && (*bx.rbegin() >= 4096 || *bx.begin() < 0)) continue;
    if (!by.empty() && (*by.rbegin() >= 4096 || *by.begin() < 0)) continue;
    bool expect = false;
    for (int64_t e : bx)
      if (by.count(e)) {
        expect = true;
        break;
      }
    overlapping += expect;
    ASSERT_EQ(views_overlap(x, y), expect) << "trial " << trial;
    ASSERT_EQ(views_overlap(y, x), expect) << "trial " << trial;
  }
  EXPECT_GT(overlapping, 200);  // the draw exercises both answers
}

// Views of one shape and strides at other offsets (a loop's rows, columns
// and blocks of one array) take views_overlap's pass over the dimensions
// when their strides are nested, the general test otherwise: both against
// brute force, up to three dimensions, negative and zero strides.
TEST(View, TranslatesOverlapMatchesBruteForce) {
  auto b = std::make_shared<Buffer>(1 << 16);
  uint64_t state = 777;
  auto rnd = [&](int64_t lo, int64_t hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  auto elements = [](const View& v) {
    std::set<int64_t> out;
    std::vector<int64_t> idx(v.ndim(), 0);
    if (v.size() == 0) return out;
    for (;;) {
      int64_t at = v.offset;
      for (int k = 0; k < v.ndim(); ++k) at += idx[k] * v.strides[k];
      out.insert(at);
      int k = v.ndim() - 1;
      for (; k >= 0 && ++idx[k] == v.shape[k]; --k) idx[k] = 0;
      if (k < 0) return out;
    }
  };
  int overlapping = 0, disjoint = 0;
  for (int trial = 0; trial < 6000; ++trial) {
    View x;
    x.buffer = b;
    x.dtype = DType::Float64;
    const int nd = static_cast<int>(rnd(1, 3));
    const bool nested = rnd(0, 1);
    int64_t inner = 1;
    for (int k = 0; k < nd; ++k) {
      x.shape.push_back(rnd(1, 6));
      x.strides.push_back(0);
    }
    for (int k = nd; k-- > 0;) {  // nested: each stride beyond the inner ones' reach (a block of an array)
      int64_t st = nested ? inner * rnd(1, 3) : rnd(-9, 9);
      if (nested && rnd(0, 3) == 0) st = -st;
      x.strides[k] = st;
      inner = std::max<int64_t>(inner, (st < 0 ? -st : st) * x.shape[k] + 1);
    }
    int64_t lo = 0, hi = 0;
    for (int k = 0; k < nd; ++k) {
      const int64_t span = x.strides[k] * (x.shape[k] - 1);
      (span < 0 ? lo : hi) += span;
    }
    View y = x;
    x.offset = 4000 - lo;
    y.offset = x.offset + rnd(-(hi - lo) - 3, hi - lo + 3);
    const auto ex = elements(x), ey = elements(y);
    bool expect = false;
    for (int64_t e : ex) expect |= ey.count(e) > 0;
    (expect ? overlapping : disjoint)++;
    ASSERT_EQ(views_overlap(x, y), expect) << "trial " << trial;
    ASSERT_EQ(views_overlap(y, x), expect) << "trial " << trial;
  }
  EXPECT_GT(overlapping, 500);
  EXPECT_GT(disjoint, 500);
}

TEST(View, IndexReshapeTranspose) {
  View v = View::fresh(DType::Int32, {4, 6});
  IndexItem s;
  s.kind = IndexItem::Kind::Slice;
  s.step = -2;
  IndexItem i;
  i.kind = IndexItem::Kind::Int;
  i.i = -1;
  View r = index_view(v, {i, s});  // v[-1, ::-2]
  EXPECT_EQ(r.shape, Dims({3}));
  EXPECT_EQ(r.strides, Dims({-2}));
  EXPECT_EQ(r.offset, 3 * 6 + 5);
  IndexItem bad;
  bad.kind = IndexItem::Kind::Int;
  bad.i = 4;
  EXPECT_THROW(index_view(v, {bad}), IndexError);

  View out;
  EXPECT_TRUE(reshape_view(v, {2, 12}, false, &out));
  EXPECT_EQ(out.strides, Dims({12, 1}));
  View t = transpose_view(v, {1, 0});
  EXPECT_FALSE(reshape_view(t, {24}, false, &out));  // a transposed array needs a copy
  EXPECT_EQ(resolve_shape({-1, 3}, 24), Dims({8, 3}));
  EXPECT_THROW(resolve_shape({5, -1}, 24), ValueError);
}

// Buffer objects are recycled per thread (Buffer::make): a freed one is
// handed out again, ids stay unique across threads and reuse, and a thread
// that exits with kept blocks gives them back (no crash, no reuse after).
TEST(Buffer, SmallBlocksReusedPerThreadAndReturnedAtThreadExit) {
  // A freed small block is the next block of its class this thread takes.
  void* first;
  {
    nf::BufferPtr a = nf::Buffer::make(8 * 16);
    first = a->data();
  }
  nf::BufferPtr b = nf::Buffer::make(8 * 16 - 5);  // (the same 64-byte class)
  EXPECT_EQ(b->data(), first);
  nf::BufferPtr c = nf::Buffer::make(8 * 16);
  EXPECT_NE(c->data(), first);
  // A thread that exits gives what it kept back to the shared pool, where
  // another thread finds it (a class nothing else here uses).
  constexpr int64_t kOdd = 64 * 117;
  void* from_thread = nullptr;
  std::thread([&] {
    nf::BufferPtr t = nf::Buffer::make(kOdd);
    from_thread = t->data();
  }).join();
  nf::BufferPtr d = nf::Buffer::make(kOdd);
  EXPECT_EQ(d->data(), from_thread);
  // While that thread lives, its blocks are its own (taken without a lock).
  constexpr int64_t kOdd2 = 64 * 118;
  std::atomic<int> step{0};
  void* kept = nullptr;
  std::thread owner([&] {
    {
      nf::BufferPtr t = nf::Buffer::make(kOdd2);
      kept = t->data();
    }
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
  });
  while (step.load() != 1) std::this_thread::yield();
  nf::BufferPtr e = nf::Buffer::make(kOdd2);
  EXPECT_NE(e->data(), kept);
  step = 2;
  owner.join();
}

TEST(Buffer, ObjectsRecycledPerThreadWithUniqueIds) {
  std::set<uint64_t> ids;
  std::vector<nf::BufferPtr> some;
  for (int i = 0; i < 10; ++i) some.push_back(nf::Buffer::make(16));
  const nf::Buffer* last = some.back().get();
  for (nf::BufferPtr& b : some) ids.insert(b->id());
  const int kept = nf::Buffer::kept_objects();
  some.clear();
  EXPECT_EQ(nf::Buffer::kept_objects(), kept + 10);  // kept by this thread, not freed
  nf::BufferPtr again = nf::Buffer::make(32);
  EXPECT_EQ(nf::Buffer::kept_objects(), kept + 9);
  EXPECT_EQ(again.get(), last);  // (some.clear() frees front to back: the last freed is reused first)
  EXPECT_TRUE(ids.insert(again->id()).second);
  EXPECT_EQ(again->nbytes(), 32);
  EXPECT_FALSE(again->allocated());
  std::vector<nf::BufferPtr> from_threads(4);
  std::vector<std::vector<uint64_t>> thread_ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<nf::BufferPtr> held;
      for (int i = 0; i < 5000; ++i) {
        held.push_back(nf::Buffer::make(8));
        thread_ids[t].push_back(held.back()->id());
      }
      from_threads[t] = held.back();  // outlives its thread
      held.clear();  // more than a thread keeps: the rest go back to the allocator
      EXPECT_LE(nf::Buffer::kept_objects(), 4096);
      EXPECT_GT(nf::Buffer::kept_objects(), 0);
    });  // (the thread exits holding blocks: they are drained)
  for (std::thread& th : threads) th.join();
  for (auto& v : thread_ids)
    for (uint64_t id : v) EXPECT_TRUE(ids.insert(id).second) << "id " << id << " handed out twice";
  for (nf::BufferPtr& b : from_threads) {
    EXPECT_EQ(b->nbytes(), 8);
    b.reset();  // freed on this thread, into this thread's list
  }
}

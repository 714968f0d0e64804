// tune/: the schedule space, its text form, the store and the search loop.
// (That every random legal schedule computes the right numbers is checked
// end to end against NumPy in tests/test_schedules.py.)
#include <map>
#include <set>
#include <limits>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "pipeline/target.h"
#include "pipeline/tuning.h"
#include "codegen/codegen.h"
#include "fusion/fusion.h"
#include "lower/lower.h"
#include "lower/passes.h"
#include "mdh/mdh.h"
#include "stream/stream.h"
#include "tune/tune.h"

using namespace nf;

namespace {

View fresh(DType t, Dims shape) {
  View v = View::fresh(t, shape);
  v.buffer->py_refs = 1;
  return v;
}

mdh::Built built_of_window() {
  std::vector<Task> w = global_stream().take();
  fusion::Partition p = fusion::partition(w, fusion::Policy::Diffuse);
  return mdh::build(w, p.groups[0]);
}

// The MdHoms of the computation classes (map, stencil, reduction, arg
// reduction, matmul, batched matmul, integer matmul).
std::vector<mdh::Built> classes() {
  std::vector<mdh::Built> out;
  global_stream().take();
  {  // map: y = a * 2 + b over a 2-D transposed view
    View a = fresh(DType::Float64, {37, 53}), b = fresh(DType::Float64, {53, 37});
    MapSpec s;
    s.inputs = {a, transpose_view(b, {1, 0})};
    s.consts = {Scalar::of_float(DType::Float64, 2.0)};
    int x = s.expr.binary(BinaryOp::Multiply, s.expr.input(0, DType::Float64), s.expr.constant(0, DType::Float64),
                          DType::Float64);
    s.expr.binary(BinaryOp::Add, x, s.expr.input(1, DType::Float64), DType::Float64);
    record_map(std::move(s)).buffer->py_refs = 1;
    out.push_back(built_of_window());
  }
  {  // stencil: y = a[:-2] + a[1:-1] + a[2:] over rows of a 2-D grid
    View a = fresh(DType::Float32, {40, 66});
    std::vector<View> v;
    for (int k = 0; k < 3; ++k) {
      IndexItem r, c;
      r.kind = c.kind = IndexItem::Kind::Slice;
      c.start = k, c.has_start = true, c.stop = 64 + k, c.has_stop = true;
      v.push_back(index_view(a, {r, c}));
    }
    MapSpec s;
    for (const View& w : v) s.inputs.push_back(w);
    int x = s.expr.binary(BinaryOp::Add, s.expr.input(0, DType::Float32), s.expr.input(1, DType::Float32),
                          DType::Float32);
    s.expr.binary(BinaryOp::Add, x, s.expr.input(2, DType::Float32), DType::Float32);
    record_map(std::move(s)).buffer->py_refs = 1;
    out.push_back(built_of_window());
  }
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::ArgMax}) {  // reductions over axis 1 of a 3-D array
    View a = fresh(DType::Float64, {9, 300, 17});
    ReduceSpec r;
    r.input = a;
    r.axes = {1};
    r.op = op;
    r.value.input(0, DType::Float64);
    r.acc_dtype = DType::Float64;
    r.out_dtype = op == ReduceOp::ArgMax ? DType::Int64 : DType::Float64;
    record_reduce(std::move(r)).buffer->py_refs = 1;
    out.push_back(built_of_window());
  }
  for (DType t : {DType::Float32, DType::Int64}) {  // matmul
    View a = fresh(t, {70, 129}), b = fresh(t, {129, 45});
    record_matmul(a, b, t, nullptr).buffer->py_refs = 1;
    out.push_back(built_of_window());
  }
  {  // batched matmul
    View a = fresh(DType::Float64, {5, 20, 33}), b = fresh(DType::Float64, {5, 33, 12});
    record_matmul(a, b, DType::Float64, nullptr).buffer->py_refs = 1;
    out.push_back(built_of_window());
  }
  return out;
}

}  // namespace

TEST(Tune, RandomSchedulesAreLegalAndLower) {
  const tune::Asm& target = tune::Asm::host();
  int blas = 0, cached = 0, packed = 0, unrolled = 0, parallel = 0, combined = 0, grid = 0, tiled_grid = 0;
  for (const mdh::Built& m : classes()) {
    for (uint64_t seed = 0; seed < 300; ++seed) {
      tune::Schedule s = tune::random_schedule(m.hom, m.bind, target, seed);
      ASSERT_EQ(s.why_illegal(m.hom), "") << s.key();
      if (s.routine == tune::Routine::Blas) {
        ++blas;
        continue;
      }
      cached += !s.caches.empty();
      for (const tune::Cache& c : s.caches) packed += !c.pack.empty();
      unrolled += !s.unroll.empty();
      parallel += s.parallel;
      grid += s.grid > 0;
      for (int q = 0; q < s.grid; ++q) tiled_grid += !s.tiles[s.order[q].dim].empty();
      // Lowering and rendering never fail on a legal schedule, and the nest
      // keeps the IR's invariants after every pass.
      lower::LoopNest nest = lower::passes::build(m.hom, s, "k");
      ASSERT_EQ(lower::verify(nest, "build"), "") << s.key() << "\n" << lower::print(nest);
      std::vector<lower::Pass> passes = lower::passes::common();
      passes.push_back({"parallelize", lower::passes::parallelize});
      passes.push_back({"cpu_barriers", lower::passes::cpu_barriers});
      passes.push_back({"math_blocks", lower::passes::math_blocks});
      for (const lower::Pass& p : passes) {
        p.run(nest, lower::PassContext{});
        ASSERT_EQ(lower::verify(nest, p.name), "") << s.key() << " after " << p.name << "\n" << lower::print(nest);
      }
      {
        // A parallel reduction: built as a Parallel loop over shares with
        // partials in Kernel memory (no thread in sight), run on Cores.
        const std::string built = lower::print(lower::passes::build(m.hom, s, "k"));
        combined += lower::print(pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k")).find("cores") !=
                        std::string::npos &&
                    built.find(" parallel if ") != std::string::npos &&
                    built.find("alloc kernel") != std::string::npos && built.find("thread_") == std::string::npos;
      }
      EXPECT_FALSE(codegen::render_c(nest).code.empty());
      // Mutations stay legal too.
      tune::Schedule t = tune::mutate(s, m.hom, m.bind, target, seed * 7 + 1);
      ASSERT_EQ(t.why_illegal(m.hom), "") << s.key() << " -> " << t.key();
    }
  }
  // The generator reaches every part of the space.
  EXPECT_GT(blas, 0);
  EXPECT_GT(cached, 100);
  EXPECT_GT(packed, 10);
  EXPECT_GT(unrolled, 100);
  EXPECT_GT(parallel, 100);
  EXPECT_GT(combined, 20);  // parallel reductions combine their shares' partials after the loop
  EXPECT_GT(grid, 100);
  EXPECT_GT(tiled_grid, 10);
}

// A GPU's schedules (tune/gpu_model.cc): a contraction's block tiles from
// the model -- big tiles with 8 x 8 outputs a thread where there are
// outputs enough to fill the device, smaller ones where there are not --
// the key round trip, and a space of device parameters that the tuner
// draws from and mutates, every schedule in it legal and safe.
TEST(Tune, GpuSchedulesTakeTheirTilesFromTheModelAndTheSpace) {
  const tune::Asm gpu = tune::Asm::cuda(132, "test");
  EXPECT_EQ(tune::device_id(gpu), "gpu test x132");
  std::vector<mdh::Built> c = classes();
  mdh::Built& mm = c[4];  // a float32 matmul, (70 x 129) @ (129 x 45)
  const tune::Schedule host = tune::default_schedule(mm.hom, mm.bind, tune::Asm::host(), false);
  ASSERT_GE(tune::grid_schedule(mm.hom, host).grid, 2);
  auto with_extents = [&](int64_t n, int64_t k) {
    mdh::Bindings b = mm.bind;
    for (int d = 0; d < mm.hom.ndim; ++d) b.ints[mm.hom.extent[d]] = mm.hom.any_pointwise(d) ? k : n;
    return b;
  };
  for (int64_t n : {256, 1024, 4096}) {
    const mdh::Bindings b = with_extents(n, n);
    const tune::Schedule s = tune::default_schedule(mm.hom, b, gpu, true);
    ASSERT_TRUE(s.block_tiles) << s.key();
    EXPECT_EQ(s.routine, tune::Routine::None);  // (a device has no host routine)
    EXPECT_EQ(s.why_illegal(mm.hom), "");
    EXPECT_EQ(s.why_unsafe(mm.hom, b, gpu), "");
    EXPECT_EQ(tune::Schedule::parse(s.key()).key(), s.key());
    EXPECT_NE(s.key().find("|b" + s.tile.key()), std::string::npos);
    EXPECT_NE(s.to_string().find(std::to_string(s.tile.threads()) + " threads"), std::string::npos);
    const int64_t blocks = ((n + s.tile.bm - 1) / s.tile.bm) * ((n + s.tile.bn - 1) / s.tile.bn);
    if (n == 4096) {  // outputs enough: the most work a thread, 8 x 8
      EXPECT_EQ(s.tile.tm * s.tile.tn, 64) << s.tile.key();
      EXPECT_GE(s.tile.bm * s.tile.bn, 64 * 128) << s.tile.key();
    } else {  // fewer: tiles small enough that (nearly) every multiprocessor has one
      EXPECT_GE(10 * blocks, 9 * std::min<int64_t>(gpu.sms, n * n / (16 * 16))) << n << " " << s.tile.key();
    }
    // The model's choice is the cheapest of the space by its own estimate.
    const double chosen = tune::gpu_tile_seconds(s.tile, n, n, n, 1, DType::Float32, gpu);
    for (const tune::GpuTile& t : tune::gpu_tile_space())
      EXPECT_LE(chosen, tune::gpu_tile_seconds(t, n, n, n, 1, DType::Float32, gpu) * 1.001) << t.key();
  }
  // What cannot run there costs infinitely much: beyond a block's shared
  // memory, or a thread's registers (float64 8 x 8 fits, barely).
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(tune::gpu_tile_seconds({256, 256, 64, 8, 8}, 4096, 4096, 4096, 1, DType::Float32, gpu), inf);
  EXPECT_LT(tune::gpu_tile_seconds({128, 128, 8, 8, 8}, 4096, 4096, 4096, 1, DType::Float64, gpu), inf);
  EXPECT_EQ(tune::gpu_tile_seconds({64, 64, 16, 4, 4}, 4096, 4096, 4096, 1, DType::Float32, tune::Asm::host()), inf);
  // Illegal shapes, device parameters on the host, bare "|b" (the first
  // stored form) read as the 64 x 64 x 16 tiles of 4 x 4.
  EXPECT_NE(tune::GpuTile({64, 64, 16, 3, 4}).why_illegal(), "");
  EXPECT_NE(tune::GpuTile({256, 256, 16, 1, 1}).why_illegal(), "");  // 65,536 threads
  {
    tune::Schedule s = tune::default_schedule(mm.hom, with_extents(512, 512), gpu, false);
    ASSERT_TRUE(s.block_tiles);
    EXPECT_NE(s.why_unsafe(mm.hom, with_extents(512, 512), tune::Asm::host()), "");
    s.tile = {64, 64, 16, 3, 4};
    EXPECT_NE(s.why_illegal(mm.hom), "");
    std::string bare = s.key();
    bare = bare.substr(0, bare.find("|b") + 2) + bare.substr(bare.find("|", bare.find("|b") + 1));
    EXPECT_EQ(tune::Schedule::parse(bare).tile, tune::GpuTile{});
  }
  // Reductions over few long rows: wider blocks (the model), in the key.
  mdh::Built& red = c[2];  // (9, 300, 17) summed over axis 1
  {
    mdh::Bindings b = red.bind;
    b.ints[red.hom.extent[1]] = 1 << 20;
    const tune::Schedule s = tune::default_schedule(red.hom, b, gpu, false);
    EXPECT_GT(s.block_threads, 128) << s.key();
    EXPECT_NE(s.key().find("|B" + std::to_string(s.block_threads)), std::string::npos);
    EXPECT_EQ(tune::Schedule::parse(s.key()).block_threads, s.block_threads);
    EXPECT_EQ(tune::gpu_block_threads_model(132 * 64, 1 << 20, gpu), 128);  // rows enough: 16 blocks an SM
  }
  // The space: random and mutated schedules legal and safe, and varied.
  std::set<std::string> tiles, threads;
  const mdh::Bindings big = with_extents(1024, 512);
  tune::Schedule from = tune::default_schedule(mm.hom, big, gpu, false);
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    for (const tune::Schedule& s : {tune::random_schedule(mm.hom, big, gpu, seed, true),
                                    tune::mutate(from, mm.hom, big, gpu, seed, true)}) {
      ASSERT_EQ(s.why_illegal(mm.hom), "") << s.key();
      ASSERT_EQ(s.why_unsafe(mm.hom, big, gpu), "") << s.key();
      ASSERT_GE(s.grid, 1) << s.key();
      EXPECT_EQ(s.routine, tune::Routine::None);
      if (s.block_tiles) tiles.insert(s.tile.key());
    }
    from = tune::mutate(from, mm.hom, big, gpu, seed, false);
    const tune::Schedule r = tune::random_schedule(red.hom, red.bind, gpu, seed, false);
    ASSERT_EQ(r.why_illegal(red.hom), "") << r.key();
    threads.insert(std::to_string(r.block_threads));
  }
  EXPECT_GE(tiles.size(), 30u);
  EXPECT_GE(threads.size(), 5u);
}

// The GPU's schedules (tune::grid_schedule): a thread per point of the
// dimensions no output combines, the layout's innermost moving fastest;
// the combined ones below, in the chosen order, with the chosen innermost
// loop kept innermost (a reduction NumPy runs row by row stays so).
TEST(Tune, GridSchedulesPutTheFreeDimensionsOnTheGrid) {
  const tune::Asm& target = tune::Asm::host();
  std::vector<mdh::Built> c = classes();
  auto grid_of = [&](const mdh::Built& m) {
    tune::Schedule s = tune::grid_schedule(m.hom, tune::default_schedule(m.hom, m.bind, target, false));
    EXPECT_EQ(s.why_illegal(m.hom), "") << s.key();
    EXPECT_EQ(tune::Schedule::parse(s.key()).key(), s.key());
    EXPECT_TRUE(s.parallel && !s.vectorize && s.caches.empty() && s.unroll.empty()) << s.key();
    return s;
  };
  {  // map: both dimensions on the grid, untiled
    tune::Schedule s = grid_of(c[0]);
    EXPECT_EQ(s.grid, 2);
    EXPECT_EQ(s.order.size(), 2u);
    EXPECT_NE(s.key().find("|g2"), std::string::npos);
    EXPECT_NE(s.to_string().find("[grid]"), std::string::npos);
    // Built: the share is the point, decomposed with the last grid loop fastest.
    const std::string nest = lower::print(lower::passes::build(c[0].hom, s, "k"));
    EXPECT_NE(nest.find("nf_shares = (n" + std::to_string(s.order[0].dim) + " * n" +
                        std::to_string(s.order[1].dim) + ")"),
              std::string::npos)
        << nest;
    EXPECT_NE(nest.find("% n" + std::to_string(s.order[1].dim)), std::string::npos) << nest;
    EXPECT_EQ(nest.find("max_threads"), std::string::npos) << nest;
  }
  for (int k : {2, 3}) {  // a reduction over axis 1 of a (9, 300, 17) array
    tune::Schedule s = grid_of(c[k]);
    ASSERT_EQ(s.grid, 2) << s.key();
    EXPECT_EQ(s.order[0].dim, 0);
    EXPECT_EQ(s.order[1].dim, 2);  // the innermost: neighbouring threads, neighbouring columns
    EXPECT_EQ(s.order[2].dim, 1);
    // The chosen innermost loop (dimension 2) stays innermost, one point:
    // the reduced dimension is added in order, as NumPy does.
    EXPECT_EQ(s.order.back().dim, 2);
    EXPECT_EQ(s.tiles[2], std::vector<int64_t>{1});
    EXPECT_EQ(lower::print(lower::passes::build(c[k].hom, s, "k")).find("pairwise"), std::string::npos);
  }
  {  // matmul: the rows and columns of C on the grid, the contraction below
    tune::Schedule s = grid_of(c[5]);
    EXPECT_EQ(s.grid, 2) << s.key();
  }
  // Grid loops: level 0, of dimensions nothing combines, in a parallel
  // schedule, no cache inside them.
  tune::Schedule s = grid_of(c[2]);
  tune::Schedule t = s;
  t.parallel = false;
  EXPECT_EQ(t.why_illegal(c[2].hom), "grid loops need a parallel schedule");
  t = s;
  t.grid = 3;
  EXPECT_EQ(t.why_illegal(c[2].hom), "a grid loop's dimension is combined");
  t = s;
  t.grid = 5;
  EXPECT_EQ(t.why_illegal(c[2].hom), "grid loops out of range");
  t = s;
  t.caches.push_back({0, 0, {0, 1, 2}, {}});
  EXPECT_EQ(t.why_illegal(c[2].hom), "a cache inside the grid loops");
  // A full reduction has no free dimension: the chosen loops, cut into shares.
  // (The CUDA tail maps either form onto the grid.)
  for (const mdh::Built& m : c) {
    tune::Schedule g = grid_of(m);
    lower::LoopNest n = pipeline::emulated_target().lower(lower::KernelSpec::one(m.hom, g), "k");
    EXPECT_NE(lower::print(n).find("gpu-blocks"), std::string::npos);
    EXPECT_FALSE(codegen::render_cuda(n).code.empty());
  }
}

// A search walks chains of mutations; whatever it ends on must be storable:
// the store refuses tiles past the size class (a doubled tile of 77 was
// 154 > 128, and a tuned kernel came back untuned).
TEST(Tune, MutationChainsStaySafeForTheirSizes) {
  const tune::Asm& target = tune::Asm::host();
  for (const mdh::Built& m : classes()) {
    for (uint64_t seed = 0; seed < 60; ++seed) {
      tune::Schedule s = tune::default_schedule(m.hom, m.bind, target, false);
      ASSERT_EQ(s.why_unsafe(m.hom, m.bind, target), "") << s.key();
      for (int step = 0; step < 25; ++step) {
        s = tune::mutate(s, m.hom, m.bind, target, seed * 1000 + step, false);
        ASSERT_EQ(s.why_illegal(m.hom), "") << s.key();
        ASSERT_EQ(s.why_unsafe(m.hom, m.bind, target), "") << s.key();
      }
    }
  }
}

TEST(Tune, ScheduleTextRoundTrips) {
  const tune::Asm& target = tune::Asm::host();
  for (const mdh::Built& m : classes()) {
    std::vector<tune::Schedule> all = {tune::default_schedule(m.hom, m.bind, target),
                                       tune::default_schedule(m.hom, m.bind, target, false)};
    for (uint64_t seed = 0; seed < 100; ++seed) all.push_back(tune::random_schedule(m.hom, m.bind, target, seed));
    for (const tune::Schedule& s : all) {
      tune::Schedule t = tune::Schedule::parse(s.key());
      EXPECT_EQ(t.key(), s.key());
      EXPECT_TRUE(t.legal(m.hom)) << s.key();
    }
  }
  EXPECT_THROW(tune::Schedule::parse("t4;|o0.0|q"), std::invalid_argument);
  EXPECT_THROW(tune::Schedule::parse("t4|o0.x"), std::invalid_argument);
}

TEST(Tune, DefaultsPerClass) {
  const tune::Asm& target = tune::Asm::host();
  std::vector<mdh::Built> c = classes();
  // Floating matmul: the BLAS routine, or BLIS-like generated code without it.
  const mdh::Built& mm = c[4];
  EXPECT_EQ(tune::classify(mm.hom), tune::Shape::Contraction);
  EXPECT_EQ(tune::default_schedule(mm.hom, mm.bind, target).routine, tune::Routine::Blas);
  tune::Schedule g = tune::default_schedule(mm.hom, mm.bind, target, false);
  EXPECT_EQ(g.routine, tune::Routine::None);
  EXPECT_EQ(g.caches.size(), 3u);  // packed A and B panels, register tile of C
  EXPECT_EQ(g.unroll.size(), 2u);
  // Integer matmul gets the generated BLIS schedule too.
  EXPECT_EQ(tune::default_schedule(c[5].hom, c[5].bind, target).caches.size(), 3u);
  for (const mdh::Built& m : c) EXPECT_TRUE(tune::default_schedule(m.hom, m.bind, target).legal(m.hom));
}

TEST(Tune, StoreIsSharedThroughTheFile) {
  std::vector<mdh::Built> c = classes();
  const mdh::Built& m = c[0];
  char dir[] = "/tmp/nf_store_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/schedules.txt";
  tune::ScheduleStore& store = tune::ScheduleStore::instance();
  store.configure(path);
  const std::string dev = tune::device_id(tune::Asm::host());
  const std::string cls = tune::size_class(m.hom, m.bind);
  tune::StoreEntry e;
  EXPECT_FALSE(store.find(dev, m.hom, m.bind, cls, &e));
  e.schedule = tune::random_schedule(m.hom, m.bind, tune::Asm::host(), 5, false);
  e.best_s = 0.001;
  e.default_s = 0.002;
  e.evals = 7;
  const uint64_t gen = store.generation();
  EXPECT_TRUE(store.put(dev, m.hom, cls, e));
  EXPECT_GT(store.generation(), gen);
  // Another process's view: a fresh load of the same file.
  store.configure(path);
  tune::StoreEntry f;
  ASSERT_TRUE(store.find(dev, m.hom, m.bind, cls, &f));
  EXPECT_EQ(f.schedule.key(), e.schedule.key());
  EXPECT_EQ(f.evals, 7);
  EXPECT_FALSE(store.find("other machine", m.hom, m.bind, cls, &f));
  // An entry that is not legal for the MdHom is ignored.
  {
    std::ofstream out(path, std::ios::app);
    out << dev << "\t0000000000000000\tscalar\tt;|o9.9|s|n\t1\t1\t1\n";
  }
  // A corrupt line does not hurt the others.
  {
    std::ofstream out(path, std::ios::app);
    out << "garbage line\n";
  }
  store.configure(path);
  EXPECT_TRUE(store.find(dev, m.hom, m.bind, cls, &f));
  EXPECT_TRUE(store.take_warnings().empty());
  // A well-formed, legal entry with absurd sizes (a 4e9 tile, a tile buffer
  // of gigabytes) is input that is not trusted: ignored, with a warning.
  tune::StoreEntry huge = e;
  huge.schedule = tune::default_schedule(m.hom, m.bind, tune::Asm::host(), false);
  huge.schedule.tiles[0] = {int64_t(4000000000)};
  huge.schedule.order.insert(huge.schedule.order.begin(), tune::LoopSpec{0, 0});
  for (size_t k = 1; k < huge.schedule.order.size(); ++k)
    if (huge.schedule.order[k].dim == 0) huge.schedule.order[k].level = 1;
  huge.schedule.caches.clear();
  huge.schedule.unroll.clear();
  ASSERT_TRUE(huge.schedule.legal(m.hom)) << huge.schedule.why_illegal(m.hom);
  EXPECT_TRUE(store.put(dev, m.hom, cls, huge));
  store.configure(path);
  EXPECT_FALSE(store.find(dev, m.hom, m.bind, cls, &f));
  std::vector<std::string> w = store.take_warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("tile size 4000000000"), std::string::npos) << w[0];
  store.clear();
  EXPECT_FALSE(store.find(dev, m.hom, m.bind, cls, &f));
  store.configure("");
  rmdir(dir);
}

TEST(Tune, SearchFindsTheFastestAndCountsFailures) {
  std::vector<mdh::Built> c = classes();
  const mdh::Built& m = c[5];  // integer matmul
  const tune::Asm& target = tune::Asm::host();
  // A synthetic cost: schedules with more caches are "faster"; some fail.
  int calls = 0;
  tune::SearchOptions opt;
  opt.budget_s = 100;
  opt.max_evals = 60;
  opt.seed = 3;
  opt.confirm_rounds = 0;
  int progress_calls = 0;
  opt.progress = [&](const tune::SearchProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.best_s, p.default_s);
  };
  tune::SearchResult r = tune::search(
      m.hom, m.bind, target,
      [&](const tune::Schedule& s, double) {
        ++calls;
        if (calls > 1 && s.key().size() % 5 == 0) throw std::runtime_error("does not compile");
        return 1.0 / (1.0 + s.caches.size() + 0.1 * s.unroll.size());
      },
      opt);
  EXPECT_EQ(r.evals, 60);
  EXPECT_EQ(calls, 60);
  EXPECT_EQ(progress_calls, 60);
  EXPECT_LE(r.best_s, r.default_s);
  EXPECT_TRUE(r.best.legal(m.hom));
  EXPECT_GT(r.failures, 0);
  EXPECT_EQ(static_cast<int>(r.errors.size()), std::min(r.failures, 5));
  // The best is the cheapest schedule that was measured without failing.
  EXPECT_LT(r.best_s, 1.0);
  int pulls = 0;
  for (int p : r.pulls) pulls += p;
  EXPECT_GT(pulls, 40);  // after the baselines, the bandit picked every candidate
}

TEST(Tune, SearchResumesFromAStartingSchedule) {
  std::vector<mdh::Built> c = classes();
  const mdh::Built& m = c[5];  // integer matmul
  const tune::Asm& target = tune::Asm::host();
  // The earlier winner (some random legal schedule) is measured right after
  // the default, so a short search already returns it.
  tune::Schedule winner;
  for (uint64_t seed = 0;; ++seed) {
    winner = tune::random_schedule(m.hom, m.bind, target, seed, false);
    if (winner.key() != tune::default_schedule(m.hom, m.bind, target, false).key()) break;
  }
  tune::SearchOptions opt;
  opt.budget_s = 100;
  opt.max_evals = 2;
  opt.routines = false;
  opt.confirm_rounds = 0;
  opt.starts = {winner};
  std::vector<std::string> measured;
  tune::SearchResult r = tune::search(
      m.hom, m.bind, target,
      [&](const tune::Schedule& s, double) {
        measured.push_back(s.key());
        return s.key() == winner.key() ? 0.5 : 1.0;
      },
      opt);
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[1], winner.key());
  EXPECT_EQ(r.best.key(), winner.key());
  EXPECT_DOUBLE_EQ(r.best_s, 0.5);
  EXPECT_DOUBLE_EQ(r.default_s, 1.0);
  // An illegal or routine start is skipped when routines are off.
  tune::Schedule blas;
  blas.routine = tune::Routine::Blas;
  opt.starts = {blas};
  opt.max_evals = 3;
  measured.clear();
  tune::search(m.hom, m.bind, target, [&](const tune::Schedule& s, double) {
    measured.push_back(s.key());
    return 1.0;
  }, opt);
  EXPECT_EQ(measured.size(), 3u);
  for (const std::string& k : measured) EXPECT_NE(k, blas.key());
}

TEST(Tune, ALuckyMeasurementDoesNotReplaceTheDefault) {
  std::vector<mdh::Built> c = classes();
  const mdh::Built& m = c[5];
  const tune::Asm& target = tune::Asm::host();
  const std::string def = tune::default_schedule(m.hom, m.bind, target, false).key();
  for (bool really_faster : {false, true}) {
    tune::SearchOptions opt;
    opt.budget_s = 100;
    opt.max_evals = 5;
    opt.routines = false;
    std::map<std::string, int> times_measured;
    tune::SearchResult r = tune::search(
        m.hom, m.bind, target,
        [&](const tune::Schedule& s, double) {
          const int n = times_measured[s.key()]++;
          if (s.key() == def) return 1.0;
          // Every other schedule looks fast once; only really fast ones stay fast.
          return n == 0 ? 0.5 : (really_faster ? 0.6 : 1.01);
        },
        opt);
    EXPECT_EQ(times_measured[def], 1 + opt.confirm_rounds);
    if (really_faster) {
      EXPECT_NE(r.best.key(), def);
      EXPECT_DOUBLE_EQ(r.best_s, 0.6);
    } else {
      EXPECT_EQ(r.best.key(), def);
      EXPECT_DOUBLE_EQ(r.best_s, 1.0);
    }
  }
}

TEST(Tune, LargeTileBuffersGoToTheHeap) {
  // A tile buffer the stack cannot hold (a worker thread has a few MiB) is
  // malloc'd; small ones (register tiles) stay local arrays.
  std::vector<mdh::Built> c = classes();
  const mdh::Built& m = c[5];  // integer matmul: C(i,j) = sum_k A(i,k) B(k,j)
  for (int64_t tile : {int64_t(16), int64_t(1) << 20}) {
    tune::Schedule s;
    s.tiles.assign(m.hom.ndim, {});
    const int out = m.hom.outputs[0].access;
    std::vector<int> layout;
    for (int d = 0; d < m.hom.ndim; ++d)
      if (m.hom.accesses[out].kind[d] != mdh::StrideKind::Zero) layout.push_back(d);
    // Tile loops of the output's dimensions outermost, the output tile in
    // the innermost one's body: tile x tile elements.
    for (int d : layout) {
      s.tiles[d] = {tile};
      s.order.push_back({d, 0});
    }
    for (int d = 0; d < m.hom.ndim; ++d) s.order.push_back({d, s.tiles[d].empty() ? 0 : 1});
    s.caches.push_back({out, static_cast<int>(layout.size()) - 1, layout, {}});
    ASSERT_EQ(s.why_illegal(m.hom), "") << s.key();
    const std::string code = codegen::render_c(pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k")).code;
    const std::string name = "tile" + std::to_string(out);
    EXPECT_EQ(code.find("*)malloc(") != std::string::npos && code.find(name + " = (") != std::string::npos,
              tile > 16)
        << code;
  }
}

TEST(Tune, RecomputeOrStoreIsMeasuredOnRunsThatCompileNothing) {
  // Recomputed and stored in turn; only runs that compiled nothing count;
  // the faster way wins once each has kRuns; the store is off here.
  tune::ScheduleStore::instance().configure("");
  using pipeline::detail::RecomputeChoice;
  RecomputeChoice c;
  std::vector<int> ways;
  for (int k = 0; c.measuring(); ++k) {
    ASSERT_LT(k, 20);
    const int w = c.way();
    ways.push_back(w);
    c.record(w, /*memo_hit=*/k >= 2, w == 1 ? 0.5 + k : 2.0 + k);  // stored the faster
  }
  EXPECT_EQ(ways, (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(c.chosen, 1);
  EXPECT_EQ(c.way(), 1);
  EXPECT_EQ(c.best_ms[1], 3.5);  // run 3, the first stored one measured
  EXPECT_NE(c.describe(1).find("tuned on its first 6 measured runs: stored"), std::string::npos) << c.describe(1);
  // Without a run that compiled nothing (the memo off, or a plan that never
  // repeats) it gives up after kMaxRuns and keeps the model's way.
  RecomputeChoice never;
  for (int k = 0; k < RecomputeChoice::kMaxRuns; ++k) never.record(never.way(), false, 1.0);
  EXPECT_FALSE(never.measuring());
  EXPECT_EQ(never.way(), 0);
  EXPECT_NE(never.describe(0).find("no runs that compile nothing"), std::string::npos);
}

// mdh/, tune/, lower/, codegen/, jit/, runtime/: from a group to numbers.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>

#include "pipeline/target.h"
#include "codegen/codegen.h"
#include "fusion/fusion.h"
#include "jit/jit.h"
#include "lower/lower.h"
#include "mdh/mdh.h"
#include "pipeline/pipeline.h"
#include "runtime/runtime.h"
#include "stream/stream.h"
#include "tune/tune.h"

using namespace nf;

namespace {

View filled(Dims shape, double start) {
  View v = View::fresh(DType::Float64, shape);
  double* p = static_cast<double*>(v.buffer->data());
  for (int64_t i = 0; i < v.size(); ++i) p[i] = start + static_cast<double>(i);
  v.buffer->py_refs = 1;
  return v;
}

View mul_add(const View& a, const View& b, double k) {  // a*k + b
  MapSpec s;
  s.name = "fma";
  s.inputs = {a, b};
  s.consts = {Scalar::of_float(DType::Float64, k)};
  int x = s.expr.binary(BinaryOp::Multiply, s.expr.input(0, DType::Float64), s.expr.constant(0, DType::Float64),
                        DType::Float64);
  s.expr.binary(BinaryOp::Add, x, s.expr.input(1, DType::Float64), DType::Float64);
  return record_map(std::move(s));
}

View reduce(const View& x, std::vector<int> axes, ReduceOp op) {
  ReduceSpec r;
  r.name = reduce_name(op);
  r.input = x;
  for (int a : axes) r.axes.push_back(a);
  r.op = op;
  r.value.input(0, DType::Float64);
  r.acc_dtype = DType::Float64;
  r.out_dtype = op == ReduceOp::ArgMax ? DType::Int64 : DType::Float64;
  View v = record_reduce(std::move(r));
  v.buffer->py_refs = 1;
  return v;
}

std::vector<Task> flush_all() {
  pipeline::FlushReport rep;
  return pipeline::flush(&rep);
}

}  // namespace

TEST(Mdh, ContiguousDimensionsCollapseAndKeysIgnoreSizes) {
  global_stream().take();
  View a = filled({30, 40}, 0), b = filled({30, 40}, 1);
  View y = mul_add(a, b, 2.0);
  y.buffer->py_refs = 1;
  std::vector<Task> w1 = global_stream().take();
  fusion::Partition p1 = fusion::partition(w1, fusion::Policy::Diffuse);
  mdh::Built m1 = mdh::build(w1, p1.groups[0]);
  EXPECT_EQ(m1.hom.ndim, 1);  // (30, 40) contiguous -> one dimension of 1200
  EXPECT_EQ(m1.bind.extent(m1.hom, 0), 1200);
  EXPECT_NE(mdh::to_string(m1.hom, &m1.bind).find("md_hom<1200>"), std::string::npos);

  View c = filled({7}, 0), d = filled({7}, 5);
  View z = mul_add(c, d, -1.0);
  z.buffer->py_refs = 1;
  std::vector<Task> w2 = global_stream().take();
  mdh::Built m2 = mdh::build(w2, fusion::partition(w2, fusion::Policy::Diffuse).groups[0]);
  EXPECT_EQ(m1.hom.key(), m2.hom.key());  // same structure, other sizes and constants
}

TEST(Mdh, ReductionCombinesPointWise) {
  global_stream().take();
  View a = filled({8, 16}, 0);
  View s = reduce(a, {1}, ReduceOp::Sum);
  std::vector<Task> w = global_stream().take();
  mdh::Built m = mdh::build(w, fusion::partition(w, fusion::Policy::Diffuse).groups[0]);
  ASSERT_EQ(m.hom.ndim, 2);
  EXPECT_TRUE(m.hom.any_pointwise(1));
  EXPECT_FALSE(m.hom.any_pointwise(0));
  std::string text = mdh::to_string(m.hom, &m.bind);
  EXPECT_NE(text.find("(++, +)"), std::string::npos) << text;
}

namespace {

// A (13, 29) array of 0, 1, 2, ... summed over axis 0, built into an MdHom
// (the window is kept: the built kernel runs on its buffers).
struct ColumnSum {
  std::vector<Task> w;
  mdh::Built m;
};
ColumnSum built_column_sum() {
  global_stream().take();
  View a = filled({13, 29}, 0);
  reduce(a, {0}, ReduceOp::Sum);
  ColumnSum c{global_stream().take(), {}};
  c.m = mdh::build(c.w, fusion::partition(c.w, fusion::Policy::Diffuse).groups[0]);
  return c;
}

}  // namespace

TEST(Lower, EveryScheduleCoversTheDomain) {
  ColumnSum c = built_column_sum();
  const std::vector<Task>& w = c.w;
  const mdh::Built& m = c.m;
  // Several legal schedules (orders, tiles that do not divide, parallel
  // point-wise dimension) compile and agree.
  std::vector<tune::Schedule> schedules;
  for (int par = 0; par < 2; ++par)
    for (int order = 0; order < 2; ++order)
      for (int64_t tile : {0, 4, 7}) {
        tune::Schedule s;
        s.tiles.assign(2, {});
        if (tile) s.tiles[order ? 0 : 1] = {tile};
        int tiled = tile ? (order ? 0 : 1) : -1;
        std::vector<int> dims = order ? std::vector<int>{1, 0} : std::vector<int>{0, 1};
        if (tiled >= 0) s.order.push_back({tiled, 0});
        for (int d : dims) s.order.push_back({d, d == tiled ? 1 : 0});
        s.parallel = par;
        s.parallel_min_work = 0;
        ASSERT_TRUE(s.legal(m.hom)) << s.key();
        schedules.push_back(s);
      }
  std::vector<double> expected(29);
  for (int j = 0; j < 29; ++j)
    for (int i = 0; i < 13; ++i) expected[j] += i * 29 + j;
  for (const tune::Schedule& s : schedules) {
    lower::LoopNest nest = pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k");
    codegen::Source src = codegen::render_c(nest);
    jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_" + std::to_string(jit::hash64(s.key())));
    runtime::run_kernel(fn, m.hom, m.bind);
    const double* out = static_cast<const double*>(w[0].output.buffer->data());
    for (int j = 0; j < 29; ++j) ASSERT_DOUBLE_EQ(out[j], expected[j]) << s.to_string();
  }
}

TEST(Lower, AKernelSpecMustMatchItsStages) {
  // lower() is the one entry for every kernel: a spec whose stages,
  // schedules and shape disagree is refused before any pass runs.
  const ColumnSum c = built_column_sum();
  const mdh::Built& m = c.m;
  const tune::Schedule s = tune::default_schedule(m.hom, m.bind, tune::Asm::host());
  const pipeline::Target& t = pipeline::cpu_target();
  EXPECT_THROW(t.lower({}, "k"), std::logic_error);                                  // no stage
  EXPECT_THROW(t.lower({{&m.hom}, {}, nullptr}, "k"), std::logic_error);            // no schedule
  EXPECT_THROW(t.lower({{&m.hom, &m.hom}, {s, s}, nullptr}, "k"), std::logic_error);  // two stages, no shape
  lower::ChainShape shape;
  shape.stages.resize(2);
  EXPECT_THROW(t.lower({{&m.hom}, {s}, &shape}, "k"), std::logic_error);  // the shape has two stages
  // One stage without a shape is a group's kernel.
  EXPECT_FALSE(t.lower(lower::KernelSpec::one(m.hom, s), "k").body.empty());
}

TEST(Codegen, GeneratedSourceIncludesNoHeaders) {
  global_stream().take();
  View a = filled({100}, 0), b = filled({100}, 0);
  mul_add(a, b, 3.0).buffer->py_refs = 1;
  std::vector<Task> w = global_stream().take();
  mdh::Built m = mdh::build(w, fusion::partition(w, fusion::Policy::Diffuse).groups[0]);
  tune::Schedule s = tune::default_schedule(m.hom, m.bind, tune::Asm::host());
  std::string code = codegen::render_c(pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k")).code;
  EXPECT_EQ(code.find("#include"), std::string::npos);
  EXPECT_NE(code.find("#pragma clang loop vectorize(assume_safety)"), std::string::npos);
  // Threads come from the host: no OpenMP code generation in a kernel.
  s.parallel = true;
  s.parallel_min_work = 0;
  code = codegen::render_c(pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k")).code;
  EXPECT_EQ(code.find("omp parallel"), std::string::npos) << code;
  EXPECT_EQ(code.find("omp_get"), std::string::npos) << code;
  EXPECT_NE(code.find("nf_parallel(k_region0_entry"), std::string::npos) << code;
}

TEST(Lower, FloatMaxRunsOnVectorLanes) {
  // A float max has no OpenMP simd clause (NaN must win): the kernel runs it
  // on lanes of its own, in a simd loop, and folds them in order.
  for (int64_t n : {63, 64, 65, 1000}) {
    global_stream().take();
    View a = filled({n}, -500);
    double* p = static_cast<double*>(a.buffer->data());
    reduce(a, {0}, ReduceOp::Max);
    std::vector<Task> w = global_stream().take();
    mdh::Built m = mdh::build(w, fusion::partition(w, fusion::Policy::Diffuse).groups[0]);
    for (int par = 0; par < 2; ++par) {  // serial, and split over threads
      tune::Schedule s = tune::default_schedule(m.hom, m.bind, tune::Asm::host());
      s.vectorize = true;
      s.parallel = par;
      s.parallel_min_work = 0;
      codegen::Source src = codegen::render_c(pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k"));
      EXPECT_NE(src.code.find("#pragma clang loop vectorize(assume_safety)"), std::string::npos) << src.code;
      jit::KernelFn fn =
          jit::CpuCompiler::instance().compile(src, "test_lanes_" + std::to_string(n) + "_" + std::to_string(par));
      const double* out = static_cast<const double*>(w[0].output.buffer->data());
      runtime::run_kernel(fn, m.hom, m.bind);
      EXPECT_EQ(out[0], -500.0 + static_cast<double>(n - 1));
      for (int64_t k : {int64_t{0}, n / 2, n - 1}) {  // a NaN anywhere wins
        const double keep = p[k];
        p[k] = std::nan("");
        runtime::run_kernel(fn, m.hom, m.bind);
        EXPECT_TRUE(std::isnan(out[0])) << n << " " << k;
        p[k] = keep;
      }
    }
  }
}

TEST(Codegen, PairwiseSumLanesRunAsWholeVectorsOfTheTarget) {
  // NumPy's pairwise sum adds in 8 lanes. The renderer asks for vectors of
  // the target's width (the math call in such a loop has a vector variant
  // of that width only: at 8 doubles on AVX2 each exp ran as 8 scalar
  // calls), interleaved to cover all 8 lanes; and the sum is NumPy's.
  global_stream().take();
  View a = filled({3, 1000}, 0);
  double* in = static_cast<double*>(a.buffer->data());
  for (int i = 0; i < 3000; ++i) in[i] = 0.001 * i;
  MapSpec e;
  e.name = "exp";
  e.inputs = {a};
  e.expr.unary(UnaryOp::Exp, e.expr.input(0, DType::Float64), DType::Float64);
  View x = record_map(std::move(e));
  View sums = reduce(x, {1}, ReduceOp::Sum);
  std::vector<Task> w = global_stream().take();
  mdh::Built m = mdh::build(w, fusion::partition(w, fusion::Policy::Diffuse).groups[0]);
  tune::Schedule s = tune::default_schedule(m.hom, m.bind, tune::Asm::host());
  s.wide = false;
  const codegen::Source src = codegen::render_c(pipeline::cpu_target().lower(lower::KernelSpec::one(m.hom, s), "k"));
  const size_t at = src.code.find("vectorize_width(");
  ASSERT_NE(at, std::string::npos) << src.code;
  const int width = std::atoi(src.code.c_str() + at + 16);
  const size_t il = src.code.find("interleave_count(", at);
  const int interleave = il == std::string::npos ? 1 : std::atoi(src.code.c_str() + il + 17);
  EXPECT_EQ(width * interleave, 8) << src.code;
  EXPECT_EQ(width, std::min(8, tune::Asm::host().simd_bytes / 8)) << src.code;
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_pairwise_exp_lanes");
  runtime::run_kernel(fn, m.hom, m.bind);
  const double* out = static_cast<const double*>(sums.buffer->data());
  for (int r = 0; r < 3; ++r) {
    double want = 0;
    for (int k = 0; k < 1000; ++k) want += std::exp(in[1000 * r + k]);
    EXPECT_NEAR(out[r], want, 1e-13 * want) << r;
  }
}

TEST(Jit, Hash64ContinuesFromThePrefixHash) {
  // The disk cache hashes a kernel's persistent key from the kept hash of
  // its prefix (kernel_cache.cc): the file names must stay those of hash64
  // of the whole key.
  const std::string prefix = "v|" + std::string(3000, 'x') + "|flags|", key = "D2|ad00r;|f0d1,2,3;";
  EXPECT_EQ(jit::hash64(prefix + key), jit::hash64_more(jit::hash64(prefix), key));
  EXPECT_EQ(jit::hash64(prefix + key + "|quick"), jit::hash64_more(jit::hash64_more(jit::hash64(prefix), key), "|quick"));
  EXPECT_EQ(jit::hash64(""), jit::hash64_more(jit::hash64(""), ""));
  EXPECT_NE(jit::hash64(prefix + key), jit::hash64(prefix + key + "x"));
}

TEST(Jit, HostParallelRegionRunsEveryThreadBodyOnce) {
  runtime::set_num_threads(2);
  std::atomic<int> mask{0}, calls{0};
  struct Ctx {
    std::atomic<int>* mask;
    std::atomic<int>* calls;
  } ctx{&mask, &calls};
  auto body = [](void* c, int64_t tid, int64_t nt) {
    auto* x = static_cast<Ctx*>(c);
    if (nt == 2) x->mask->fetch_or(1 << tid);
    x->calls->fetch_add(1);
  };
  EXPECT_EQ(jit::nf_parallel(body, &ctx), 2);
  EXPECT_EQ(mask.load(), 3);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(jit::nf_max_threads(), 2);
  runtime::set_num_threads(1);
  EXPECT_EQ(jit::nf_parallel(body, &ctx), 1);
  EXPECT_EQ(calls.load(), 3);
  // More thread bodies than cores: each still runs once.
  runtime::set_num_threads(7);
  calls = 0;
  EXPECT_EQ(jit::nf_parallel(body, &ctx), 7);
  EXPECT_EQ(calls.load(), 7);
  EXPECT_THROW(runtime::set_num_threads(0), std::invalid_argument);
  EXPECT_EQ(runtime::num_threads(), 7);
  runtime::set_num_threads(2);
}

TEST(Pipeline, FlushComputesAndCachesKernels) {
  global_stream().take();
  View a = filled({1000}, 0), b = filled({1000}, 1);
  View y = mul_add(a, b, 2.0);
  y.buffer->py_refs = 1;
  View mx = reduce(y, {0}, ReduceOp::Max);
  View am = reduce(y, {0}, ReduceOp::ArgMax);
  flush_all();
  const double* py = static_cast<const double*>(y.buffer->data());
  for (int i = 0; i < 1000; ++i) ASSERT_DOUBLE_EQ(py[i], 2.0 * i + (1.0 + i));
  EXPECT_DOUBLE_EQ(*static_cast<const double*>(mx.buffer->data()), 2.0 * 999 + 1000.0);
  EXPECT_EQ(*static_cast<const int64_t*>(am.buffer->data()), 999);

  // The same program on other data and sizes compiles nothing new.
  int64_t compiles = jit::KernelCache::instance().stats().compiles.load();
  View c = filled({77}, 3), d = filled({77}, 4);
  View z = mul_add(c, d, 5.0);
  z.buffer->py_refs = 1;
  reduce(z, {0}, ReduceOp::Max);
  reduce(z, {0}, ReduceOp::ArgMax);
  flush_all();
  EXPECT_EQ(jit::KernelCache::instance().stats().compiles.load(), compiles);
  EXPECT_DOUBLE_EQ(static_cast<const double*>(z.buffer->data())[76], 5.0 * 79 + 80);
}

// The owner's part of the exit contract (pipeline/worker.h): stopping the
// background threads while a kernel compiles there waits for the compile,
// and the process then exits cleanly. (Exiting without the stop lets the
// compile run into clang's statics as they are destroyed: "pure virtual
// method called", now and then; environment.cc stops them for this binary.)
[[noreturn]] void exit_with_compiles_in_flight() {
  global_stream().take();
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 6; ++k) {  // six kernels, each wanted twice
      View a = filled({64}, 0), b = filled({64}, 1);
      View y = mul_add(a, b, 1.0 + k);
      for (int j = 0; j < k; ++j) y = mul_add(y, b, 3.0);
      y.buffer->py_refs = 1;
      flush_all();
    }
  pipeline::background_stop();
  std::exit(0);
}

TEST(Pipeline, ExitDuringBackgroundCompileIsClean) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_with_compiles_in_flight(), ::testing::ExitedWithCode(0), "");
}

// lower/: the loop IR's passes (passes.h), its verifier and printer, and the
// CPU target's rendering of thread loops and barriers, on nests built by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "jit/jit.h"
#include "lower/lower.h"
#include "lower/lowerer.h"
#include "lower/passes.h"
#include "pipeline/target.h"

using namespace nf;
using namespace nf::lower;

namespace {

// The passes' context on the host's CPU (Caps' defaults), and on a GPU's
// grid (pipeline/target.cc: the CUDA targets' caps, as far as a pass reads them).
const PassContext kCpu{};
PassContext gpu_context() {
  PassContext c;
  c.caps.threads = Caps::Threads::Grid;
  c.caps.vector_bytes = 0;
  c.caps.private_bytes = 8 << 10;
  return c;
}

// The IR builders the passes use (lowerer.h), with the test's defaults.
StmtP mk(Stmt::K k) {
  auto s = std::make_shared<Stmt>();
  s->k = k;
  return s;
}
StmtP decl_(const std::string& name, ExP init) { return detail::decl(DType::Int64, name, std::move(init)); }
StmtP assign_(ExP target, ExP value) { return detail::assign(std::move(target), std::move(value)); }
ExP load_(const std::string& arr, ExP i) { return detail::load(arr, std::move(i), DType::Int64); }
ExP arith_(char op, ExP a, ExP b) { return detail::arith(op, std::move(a), std::move(b)); }
StmtP alloc_(const std::string& name, ExP count, Scope scope) {
  return detail::alloc(DType::Int64, name, std::move(count), scope);
}
StmtP for_(const std::string& v, ExP lo, ExP hi, LoopKind kind = LoopKind::Serial) {
  StmtP s = detail::for_loop(v, std::move(lo), std::move(hi), lit(1));
  s->loop = kind;
  return s;
}
StmtP cores_(ExP cond = lit(1)) { return detail::cores_loop(std::move(cond)); }
LoopNest nest(std::vector<StmtP> body, int ptrs = 2) {
  LoopNest n;
  n.name = "k";
  n.num_ptrs = ptrs;
  n.ptr_types.assign(ptrs, DType::Int64);
  n.body = std::move(body);
  for (const StmtP& s : n.body) n.uses_threads |= s->k == Stmt::K::For && s->loop == LoopKind::Cores;
  return n;
}

void expect_bad(const LoopNest& n, const std::string& after, const std::string& phrase) {
  const std::string why = verify(n, after);
  EXPECT_NE(why.find(phrase), std::string::npos) << "verify said: '" << why << "'\n" << print(n);
}

}  // namespace

TEST(LowerPasses, VerifierAcceptsAWellFormedNest) {
  StmtP c = cores_();
  c->body = {decl_("x", thread_index()), assign_(load_("p0", var("x")), var("x")), mk(Stmt::K::Barrier)};
  LoopNest n = nest({decl_("n0", lit(8)), c});
  EXPECT_EQ(verify(n, "build"), "");
}

TEST(LowerPasses, VerifierRejectsEachBrokenRule) {
  // A variable used where it is not declared.
  expect_bad(nest({assign_(load_("p0", lit(0)), var("nope"))}), "build", "'nope' used where it is not declared");
  // A load of an array that is neither a pointer nor allocated.
  expect_bad(nest({assign_(load_("p0", lit(0)), load_("q", lit(0)))}), "build", "'q' is loaded");
  expect_bad(nest({assign_(load_("p0", lit(0)), load_("p7", lit(0)))}), "build", "'p7' is loaded");
  // Thread expressions outside a Cores loop.
  expect_bad(nest({assign_(load_("p0", lit(0)), thread_index())}), "build", "outside a Cores loop");
  // A Cores loop below the top level.
  {
    StmtP f = for_("i", lit(0), lit(4));
    f->body = {cores_()};
    LoopNest n = nest({f});
    n.uses_threads = true;
    expect_bad(n, "build", "below the kernel's top level");
  }
  // uses_threads must say whether there is a Cores loop.
  {
    LoopNest n = nest({cores_()});
    n.uses_threads = false;
    expect_bad(n, "build", "uses_threads");
  }
  // A barrier outside a Cores loop, and one after the CPU's barrier pass.
  expect_bad(nest({mk(Stmt::K::Barrier)}), "build", "not directly in a Cores loop");
  {
    StmtP c = cores_();
    c->body = {mk(Stmt::K::Barrier)};
    expect_bad(nest({c}), "cpu_barriers", "after the target's barrier pass");
  }
  // A thread's local variable seen across a barrier.
  {
    StmtP c = cores_();
    c->body = {decl_("x", thread_index()), mk(Stmt::K::Barrier), assign_(load_("p0", lit(0)), var("x"))};
    expect_bad(nest({c}), "build", "'x' used where it is not declared");
  }
  // A Kernel allocation inside a Cores loop.
  {
    StmtP c = cores_();
    c->body = {alloc_("t", lit(4), Scope::Kernel)};
    expect_bad(nest({c}), "build", "inside a Cores loop");
  }
  // Releases: none before the storage pass, exactly one after it.
  expect_bad(nest({alloc_("t", var("n0"), Scope::Thread)}), "storage", "'n0' used where it is not declared");
  expect_bad(nest({decl_("n0", lit(3)), alloc_("t", var("n0"), Scope::Thread)}), "storage", "never released");
  {
    StmtP f = mk(Stmt::K::Free);
    f->name = "t";
    expect_bad(nest({alloc_("t", lit(4), Scope::Kernel), f}), "build", "a Free before the storage pass");
    StmtP f2 = mk(Stmt::K::Free);
    f2->name = "t";
    expect_bad(nest({alloc_("t", lit(4), Scope::Kernel), f, f2}), "storage", "not a live heap allocation");
  }
  // A Local allocation must have a positive literal count once storage ran.
  expect_bad(nest({decl_("n0", lit(3)), alloc_("t", var("n0"), Scope::Local)}), "storage", "Local allocation 't'");
  // Vectorized loops need a positive literal step.
  {
    StmtP f = for_("i", lit(0), lit(8), LoopKind::Vectorized);
    f->step = arith_('+', lit(1), lit(0));
    expect_bad(nest({f}), "build", "positive literal step");
  }
  // Names declared twice in one list.
  expect_bad(nest({decl_("x", lit(1)), decl_("x", lit(2))}), "build", "declared twice");
}

namespace {
ExP address_(const std::string& ptr, ExP bytes) { return detail::address(ptr, std::move(bytes)); }
// A Stage (compose's statement) of one pointer p0 = &p1[8 bytes], its ints
// in the Local array "sip", running `body`.
std::vector<StmtP> stage_(std::vector<StmtP> body, int args = 1) {
  StmtP st = mk(Stmt::K::Stage);
  st->name = "sip";
  for (int i = 0; i < args; ++i) {
    st->args.push_back(address_("p1", lit(8)));
    st->arg_types.push_back(DType::Int64);
  }
  st->body = std::move(body);
  return {alloc_("sip", lit(2), Scope::Local), decl_("outer", lit(1)), st};
}
}  // namespace

TEST(LowerPasses, VerifierChecksStagesAsFunctionsOfTheirOwn) {
  const auto ok = stage_({decl_("n", detail::int_param(0)), assign_(load_("p0", lit(0)), var("n"))});
  EXPECT_EQ(verify(nest(ok), "compose"), "") << print(nest(ok));
  // Inside, only its own pointers: p1 is the kernel's, not the stage's.
  expect_bad(nest(stage_({assign_(load_("p1", lit(0)), lit(1))})), "compose", "'p1' is loaded");
  // ... and nothing declared outside it.
  expect_bad(nest(stage_({assign_(load_("p0", lit(0)), var("outer"))})), "compose",
             "'outer' used where it is not declared");
  // Its ints are a live Local array; its pointers addresses of the kernel's.
  {
    auto b = stage_({});
    b[2]->name = "nope";
    expect_bad(nest(b), "compose", "int parameters 'nope'");
    auto c = stage_({});
    c[2]->args[0] = address_("p9", lit(0));
    expect_bad(nest(c), "compose", "an address not of a kernel pointer");
    auto d = stage_({});
    d[2]->arg_types.push_back(DType::Float64);
    expect_bad(nest(d), "compose", "differ in number");
  }
  // Index operators are the IR's.
  expect_bad(nest({decl_("x", arith_('^', lit(1), lit(2)))}), "build", "index operator '^'");
}

TEST(LowerPasses, StoragePutsLargeAndRuntimeSizedBuffersOnTheHeapAndReleasesThem) {
  StmtP c = cores_();
  StmtP big = alloc_("big", lit((int64_t(1) << 20) / 8 + 1), Scope::Local);  // over the CPU's 1 MiB of int64
  big->dtype = DType::Int64;
  StmtP small = alloc_("small", lit(16), Scope::Local);
  small->dtype = DType::Int64;
  StmtP dyn = alloc_("dyn", var("n0"), Scope::Local);
  dyn->dtype = DType::Int64;
  c->body = {big, small, dyn, mk(Stmt::K::Barrier), decl_("y", lit(0))};
  LoopNest n = nest({decl_("n0", lit(5)), alloc_("part", var("n0"), Scope::Kernel), c});
  passes::storage(n, kCpu);
  EXPECT_EQ(verify(n, "storage"), "") << print(n);
  EXPECT_EQ(big->scope, Scope::Thread);
  EXPECT_EQ(small->scope, Scope::Local);
  EXPECT_EQ(dyn->scope, Scope::Thread);
  // Thread buffers are released before the barrier, the Kernel one at the end.
  const std::vector<StmtP>& b = c->body;
  ASSERT_EQ(b.size(), 7u) << print(n);
  EXPECT_EQ(b[3]->k, Stmt::K::Free);
  EXPECT_EQ(b[3]->name, "dyn");
  EXPECT_EQ(b[4]->name, "big");
  EXPECT_EQ(b[5]->k, Stmt::K::Barrier);
  EXPECT_EQ(n.body.back()->k, Stmt::K::Free);
  EXPECT_EQ(n.body.back()->name, "part");
}

// The verifier's rules follow the passes that made the nest (lower()'s
// driver keeps them per nest), not a fixed order: a Free is legal once
// storage ran, a Parallel loop not once a target's thread pass ran.
TEST(LowerPasses, TheVerifierFollowsThePassesThatRan) {
  StmtP par = for_("s", lit(0), lit(4), LoopKind::Parallel);
  LoopNest n = nest({alloc_("t", lit(8), Scope::Kernel), par, detail::free_stmt("t")});
  EXPECT_EQ(verify(n, std::vector<std::string>{"build"}), "a Free before the storage pass") << print(n);
  EXPECT_EQ(verify(n, std::vector<std::string>{"build", "storage"}), "") << print(n);
  for (const char* tail : {"parallelize", "gpu_grid"})
    EXPECT_NE(verify(n, std::vector<std::string>{"build", "storage", tail}).find("a Parallel loop after"),
              std::string::npos)
        << tail;
  // The one-name form: lower()'s order up to that pass (CPU or CUDA tail).
  EXPECT_EQ(verify(n, "storage"), "");
  EXPECT_NE(verify(n, "gpu_grid"), "");
  EXPECT_THROW(verify(n, "no_such_pass"), std::logic_error);
}

// The budget is the target's (Caps::private_bytes): 2 KiB of int64 stays
// on a CPU thread's stack and goes to the heap on a GPU thread (8 KiB of
// local memory in all, beside 8 KiB already there).
TEST(LowerPasses, StorageTakesThePrivateBudgetFromTheTarget) {
  for (bool gpu : {false, true}) {
    StmtP first = alloc_("first", lit(1024), Scope::Local);  // 8 KiB
    first->dtype = DType::Int64;
    StmtP second = alloc_("second", lit(256), Scope::Local);  // 2 KiB more
    second->dtype = DType::Int64;
    LoopNest n = nest({first, second});
    passes::storage(n, gpu ? gpu_context() : kCpu);
    EXPECT_EQ(verify(n, "storage"), "") << print(n);
    EXPECT_EQ(first->scope, Scope::Local) << gpu;
    EXPECT_EQ(second->scope, gpu ? Scope::Thread : Scope::Local) << print(n);
  }
}

// A target without SIMD lanes gets no Vectorized loop (nor their lanes'
// splits); gpu_grid refuses a target without a grid.
TEST(LowerPasses, SimdLeavesNoVectorizedLoopWithoutLanesAndGpuGridNeedsAGrid) {
  auto vloop = [] {
    StmtP f = for_("i", lit(0), var("n0"));
    f->loop = LoopKind::Vectorized;
    StmtP inner = for_("j", lit(0), lit(4));
    inner->loop = LoopKind::Vectorized;
    f->body = {inner};
    return f;
  };
  StmtP outer = vloop();
  LoopNest n = nest({decl_("n0", lit(5)), outer});
  passes::simd(n, gpu_context());
  EXPECT_EQ(outer->loop, LoopKind::Serial);
  EXPECT_EQ(outer->body[0]->loop, LoopKind::Serial);
  EXPECT_EQ(verify(n, "simd"), "") << print(n);
  StmtP kept = vloop();
  LoopNest m = nest({decl_("n0", lit(5)), kept});
  passes::simd(m, kCpu);
  EXPECT_EQ(kept->loop, LoopKind::Vectorized);
  EXPECT_THROW(passes::gpu_grid(m, kCpu), std::logic_error);
}

TEST(LowerPasses, SimplifyFoldsIndexArithmeticOnly) {
  StmtP s1 = assign_(load_("p0", arith_('+', arith_('*', lit(2), lit(3)), arith_('*', var("n0"), lit(1)))),
                     arith_('m', var("n0"), var("n0")));
  StmtP dead = for_("i", lit(4), lit(4));
  dead->body = {assign_(load_("p0", var("i")), lit(1))};
  StmtP branch = mk(Stmt::K::If);
  branch->cond = arith_('<', lit(3), lit(1));
  branch->body = {assign_(load_("p0", lit(0)), lit(1))};
  branch->else_body = {assign_(load_("p1", lit(0)), arith_('-', var("n0"), var("n0")))};
  StmtP blk = mk(Stmt::K::Block);
  blk->body = {assign_(load_("p1", lit(1)), lit(2))};
  LoopNest n = nest({decl_("n0", lit(5)), s1, dead, branch, blk});
  passes::simplify(n, kCpu);
  EXPECT_EQ(verify(n, "simplify"), "");
  EXPECT_EQ(print(n),
            "kernel k(p0: int64, p1: int64)\n"
            "  int64 n0 = 5\n"
            "  p0[(6 + n0)] = n0\n"
            "  p1[0] = 0\n"
            "  p1[1] = 2\n");
}

TEST(LowerPasses, CpuBarriersSplitThreadRegionsAndTheyRunInOrder) {
  // tmp[t] = 10 t on every thread; after the barrier, each thread reads its
  // mirror's entry, written by another thread; then thread 0 alone adds up
  // all entries over the threads that ran.
  StmtP c = cores_();
  c->body = {
      assign_(load_("tmp", thread_index()), arith_('*', thread_index(), lit(10))),
      mk(Stmt::K::Barrier),
      assign_(load_("p0", thread_index()),
              load_("tmp", arith_('-', arith_('-', thread_count(), lit(1)), thread_index()))),
      mk(Stmt::K::Barrier),
  };
  StmtP first = mk(Stmt::K::If);
  first->cond = arith_('<', thread_index(), lit(1));
  StmtP sum = for_("t", lit(0), thread_count());
  sum->body = {assign_(load_("p1", lit(0)), arith_('+', load_("p1", lit(0)), load_("tmp", var("t"))))};
  first->body = {assign_(load_("p1", lit(1)), thread_count()), sum};
  c->body.push_back(first);
  StmtP a = alloc_("tmp", max_threads(), Scope::Kernel);
  a->dtype = DType::Int64;
  LoopNest n = nest({a, c});
  EXPECT_EQ(verify(n, "build"), "") << print(n);
  passes::storage(n, kCpu);
  passes::cpu_barriers(n, kCpu);
  ASSERT_EQ(verify(n, "cpu_barriers"), "") << print(n);
  // Two thread regions, then the first-thread tail as serial code.
  const std::string text = print(n);
  EXPECT_NE(text.find("cores if 1 -> nf_used0:"), std::string::npos) << text;
  EXPECT_NE(text.find("cores if 1 -> nf_used1:"), std::string::npos) << text;
  EXPECT_NE(text.find("p1[1] = nf_used1"), std::string::npos) << text;
  EXPECT_EQ(text.find("barrier"), std::string::npos) << text;

  const codegen::Source src = pipeline::cpu_target().render(n);
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_cpu_barriers");
  const int64_t nt = jit::nf_max_threads();
  std::vector<int64_t> out(nt, -1), tail(2, 0);
  char* ptrs[2] = {reinterpret_cast<char*>(out.data()), reinterpret_cast<char*>(tail.data())};
  const int64_t ints[1] = {0};
  const double floats[1] = {0};
  fn(ptrs, ints, floats);
  const int64_t ran = tail[1];
  ASSERT_GE(ran, 1);
  ASSERT_LE(ran, nt);
  int64_t total = 0;
  for (int64_t t = 0; t < ran; ++t) {
    EXPECT_EQ(out[t], (ran - 1 - t) * 10) << "thread " << t << " of " << ran;
    total += 10 * t;
  }
  EXPECT_EQ(tail[0], total);
}

TEST(LowerPasses, PrinterShowsLoopKindsScopesAndThreads) {
  StmtP c = cores_(arith_('<', lit(100), var("n0")));
  StmtP v = for_("i", lit(0), lit(8), LoopKind::Vectorized);
  v->body = {assign_(load_("p0", var("i")), thread_index())};
  c->body = {v, mk(Stmt::K::Barrier)};
  LoopNest n = nest({decl_("n0", lit(5)), alloc_("acc", max_threads(), Scope::Kernel), c}, 1);
  n.ptr_types[0] = DType::Float32;
  EXPECT_EQ(print(n),
            "kernel k(p0: float32)\n"
            "  int64 n0 = 5\n"
            "  alloc kernel int64 acc[max_threads]\n"
            "  cores if (100 < n0):\n"
            "    for i in [0, 8) step 1 vectorized:\n"
            "      p0[i] = thread_index\n"
            "    barrier\n");
}

TEST(LowerPasses, VectorizeGivesLanesToMaxAndArgRegistersAndBlocksToFloatSums) {
  // for i in [0, n0) vectorized: m = max(m, p0[i]); (a, ai) = argmax; s += p1[i]
  const DType f = DType::Float64;
  auto loop_over = [&](std::vector<Stmt::Split> splits, std::vector<StmtP> body) {
    StmtP l = for_("i", lit(0), var("n0"), LoopKind::Vectorized);
    l->splits = std::move(splits);
    l->body = std::move(body);
    return l;
  };
  const ExP x = detail::load("p0", var("i"), f);
  StmtP lanes = loop_over(
      {{"m", "", ReduceOp::Max, f}, {"a", "ai", ReduceOp::ArgMax, f}},
      {assign_(var("m", f), detail::combine(ReduceOp::Max, f, var("m", f), x)),
       detail::decl(DType::Bool, "better",
                    detail::arg_better(ReduceOp::ArgMax, f, var("a", f), var("ai"), x, var("i"))),
       assign_(var("ai"), detail::select(var("better", DType::Bool), var("i"), var("ai"), DType::Int64)),
       assign_(var("a", f), detail::select(var("better", DType::Bool), x, var("a", f), f))});
  StmtP sums = loop_over({{"s", "", ReduceOp::Sum, f}},
                         {assign_(var("s", f), detail::combine(ReduceOp::Sum, f, var("s", f),
                                                               detail::load("p1", var("i"), f)))});
  sums->simd_reductions = {{"s", '+'}};
  LoopNest n = nest({decl_("n0", lit(100)), detail::decl(f, "m", lit(0)), detail::decl(f, "a", lit(0)),
                     decl_("ai", lit(0)), detail::decl(f, "s", lit(0)), lanes, sums});
  n.ptr_types.assign(2, f);
  EXPECT_EQ(verify(n, "simd"), "") << print(n);
  expect_bad(n, "vectorize", "splits left after the vectorize pass");
  passes::vectorize(n, kCpu);
  ASSERT_EQ(verify(n, "vectorize"), "") << print(n);
  const std::string text = print(n);
  // Lanes: one Local array per register (and the arg index), a vectorized
  // lane loop whose arg test is the short one, the fold, a serial remainder
  // with the full test.
  for (const char* part : {"alloc local float64 m_l[", "alloc local float64 a_l[", "alloc local int64 ai_l[",
                           "for i_b in [", "i_end"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  EXPECT_EQ(text.find("splitting"), std::string::npos) << text;
  int later = 0, full = 0;
  std::function<void(const ExP&)> walk = [&](const ExP& e) {
    if (!e) return;
    if (e->k == Ex::K::Combine && e->rop == ReduceOp::ArgMax) (e->ival ? later : full) += 1;
    for (const ExP& a : e->args) walk(a);
  };
  std::function<void(const std::vector<StmtP>&)> stmts = [&](const std::vector<StmtP>& l) {
    for (const StmtP& s : l) {
      for (const ExP& e : {s->init, s->value, s->target}) walk(e);
      stmts(s->body);
      stmts(s->else_body);
    }
  };
  stmts(n.body);
  EXPECT_EQ(later, 1) << text;  // the lane body
  EXPECT_EQ(full, 2) << text;   // the fold and the remainder
  // Blocked sums: a float64 running sum around blocks of the loop.
  EXPECT_NE(text.find("float64 nf_wide_s = "), std::string::npos) << text;
  // Splits belong on vectorized loops only.
  StmtP serial = for_("j", lit(0), lit(4));
  serial->splits = {{"m", "", ReduceOp::Max, f}};
  expect_bad(nest({detail::decl(f, "m", lit(0)), serial}), "simd", "not Vectorized");
}

TEST(LowerPasses, SimdGivesEachCarriedRegisterAClauseLanesOrASerialLoop) {
  const DType f = DType::Float64, i64 = DType::Int64;
  auto reg = [&](DType t, const std::string& name, ReduceOp op, const std::string& index = "", bool ordered = false) {
    StmtP d = detail::decl(t, name, detail::scalar_lit(reduce_identity(op, t), t));
    d->accumulates = std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{op, index, ordered});
    return d;
  };
  const ExP x = detail::load("p0", var("i"), f);
  auto upd = [&](const std::string& r, ReduceOp op, DType t, ExP v) {
    return assign_(var(r, t), detail::combine(op, t, var(r, t), std::move(v)));
  };
  auto argmax = [&]() -> std::vector<StmtP> {
    return {detail::decl(DType::Bool, "better", detail::arg_better(ReduceOp::ArgMax, f, var("a", f), var("ai"), x, var("i"))),
            assign_(var("ai"), detail::select(var("better", DType::Bool), var("i"), var("ai"), i64)),
            assign_(var("a", f), detail::select(var("better", DType::Bool), x, var("a", f), f))};
  };
  auto loop = [&](std::vector<StmtP> body) {
    StmtP l = for_("i", lit(0), var("n0"), LoopKind::Vectorized);
    l->body = std::move(body);
    return l;
  };
  StmtP sums = loop({upd("s", ReduceOp::Sum, f, x), upd("k", ReduceOp::Sum, i64, var("i"))});
  auto lane_body = [&]() {
    std::vector<StmtP> b = argmax();
    b.insert(b.begin(), upd("m", ReduceOp::Max, f, x));
    b.push_back(upd("k", ReduceOp::Sum, i64, var("i")));
    return b;
  };
  StmtP lanes = loop(lane_body());
  StmtP mixed = loop({upd("m", ReduceOp::Max, f, x), upd("s", ReduceOp::Sum, f, x)});  // lanes + blocked sum
  StmtP ordered = loop({upd("q", ReduceOp::Prod, f, x)});
  StmtP plain = loop({assign_(var("t"), var("i"))});                   // a scalar that is no register
  StmtP fixed = loop({assign_(load_("p1", var("j")), var("i"))});      // memory that stays put
  StmtP moving = loop({assign_(load_("p1", var("i")), var("i"))});     // carries nothing
  StmtP outer = for_("j", lit(0), lit(1));
  outer->body = {fixed};
  // Inside a FullSplit: the loop's full-path kind follows the same rules.
  StmtP full_lanes = loop({upd("m", ReduceOp::Max, f, x)});
  StmtP full_sums = loop({upd("s", ReduceOp::Sum, f, x)});
  for (const StmtP& l : {full_lanes, full_sums}) {
    l->unroll = true;
    l->full_kind = LoopKind::Vectorized;
  }
  StmtP fs = detail::full_split(lit(1));
  fs->body = {full_lanes, full_sums};
  StmtP marked = loop({upd("s", ReduceOp::Sum, f, x)});
  marked->pairwise = true;
  LoopNest n = nest({decl_("n0", lit(100)), decl_("t", lit(0)), reg(f, "s", ReduceOp::Sum),
                     reg(i64, "k", ReduceOp::Sum), reg(f, "m", ReduceOp::Max), reg(f, "a", ReduceOp::ArgMax, "ai"),
                     decl_("ai", lit(INT64_MAX)), reg(f, "q", ReduceOp::Prod, "", true), sums, lanes, mixed,
                     ordered, plain, outer, moving, fs, marked});
  n.ptr_types = {f, i64};
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("float64 a = -inf  accumulates argmax index ai"), std::string::npos) << print(n);
  EXPECT_NE(print(n).find("accumulates prod in order"), std::string::npos) << print(n);
  passes::simd(n, kCpu);
  ASSERT_EQ(verify(n, "simd"), "") << print(n);
  using Clause = std::vector<std::pair<std::string, char>>;
  auto split_names = [](const Stmt& l) {
    std::vector<std::string> v;
    for (const Stmt::Split& r : l.splits) v.push_back(r.acc + (r.index.empty() ? "" : "/" + r.index));
    return v;
  };
  // Sums: the clause, the float one also blocked.
  EXPECT_EQ(sums->loop, LoopKind::Vectorized);
  EXPECT_EQ(sums->simd_reductions, (Clause{{"s", '+'}, {"k", '+'}}));
  EXPECT_EQ(split_names(*sums), std::vector<std::string>{"s"});
  // Max and argmax: lanes (the index rides along), the int sum in the clause.
  EXPECT_EQ(lanes->loop, LoopKind::Vectorized);
  EXPECT_EQ(lanes->simd_reductions, (Clause{{"k", '+'}}));
  EXPECT_EQ(split_names(*lanes), (std::vector<std::string>{"m", "a/ai"}));
  // Serial: lanes beside a blocked sum, an ordered product, a plain scalar,
  // memory indexed by an outer loop only. Nothing carried: unchanged.
  for (const StmtP& l : {mixed, ordered, plain, fixed}) {
    EXPECT_EQ(l->loop, LoopKind::Serial) << print(n);
    EXPECT_TRUE(l->splits.empty());
  }
  EXPECT_EQ(moving->loop, LoopKind::Vectorized);
  EXPECT_TRUE(moving->simd_reductions.empty() && moving->splits.empty());
  // The full path: lanes over a short literal trip count unroll instead;
  // a sum stays vectorized there.
  EXPECT_EQ(full_lanes->loop, LoopKind::Vectorized);
  EXPECT_EQ(full_lanes->full_kind, LoopKind::Unrolled);
  EXPECT_EQ(full_sums->full_kind, LoopKind::Vectorized);
  // A loop marked pairwise is the pairwise pass's.
  EXPECT_TRUE(marked->simd_reductions.empty() && marked->splits.empty());
  // The verifier: clauses only from the simd pass on, over registers in scope.
  expect_bad(n, "build", "with a simd clause or splits before the simd pass");
  StmtP stray = loop({});
  stray->simd_reductions = {{"nothing", '+'}};
  expect_bad(nest({decl_("n0", lit(1)), stray}), "simd", "not a register in scope");
  StmtP mark = detail::assign(var("t"), lit(1));
  mark->accumulates = std::make_shared<const Stmt::Accumulator>();
  expect_bad(nest({decl_("t", lit(0)), mark}), "build", "neither declares a register nor combines into memory");

  // What the loops compute, through the common passes and the CPU target:
  // the sums, max and argmax of 1000 integers (exact in any order), the
  // int sum counted twice.
  const int64_t N = 1000;
  auto store = [&](const std::string& r, DType t, int slot) {
    return detail::assign(detail::load("p1", lit(slot), f), detail::cast(var(r, t), f));
  };
  LoopNest run = nest({decl_("n0", lit(N)), reg(f, "s", ReduceOp::Sum), reg(i64, "k", ReduceOp::Sum),
                       reg(f, "m", ReduceOp::Max), reg(f, "a", ReduceOp::ArgMax, "ai"), decl_("ai", lit(INT64_MAX)),
                       loop({upd("s", ReduceOp::Sum, f, x), upd("k", ReduceOp::Sum, i64, var("i"))}),
                       loop(lane_body()), store("s", f, 0), store("k", i64, 1), store("m", f, 2),
                       store("ai", i64, 3)});
  run.ptr_types = {f, f};
  for (const Pass& p : passes::common()) {
    p.run(run, kCpu);
    ASSERT_EQ(verify(run, p.name), "") << p.name << "\n" << print(run);
  }
  const std::string text = print(run);
  EXPECT_NE(text.find("nf_wide_s"), std::string::npos) << text;  // the sum in blocks
  EXPECT_NE(text.find("m_l["), std::string::npos) << text;        // the max in lanes
  jit::KernelFn fn =
      jit::CpuCompiler::instance().compile(pipeline::cpu_target().render(run), "test_simd_pass");
  std::vector<double> in(N), out(4, -1);
  double want_s = 0;
  for (int64_t i = 0; i < N; ++i) {
    in[i] = static_cast<double>((i * 37) % 101) - 50;
    want_s += in[i];
  }
  const int64_t want_ai = std::max_element(in.begin(), in.end()) - in.begin();
  char* ptrs[2] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(out.data())};
  const int64_t ints[1] = {0};
  const double floats[1] = {0};
  fn(ptrs, ints, floats);
  EXPECT_EQ(out[0], want_s);
  EXPECT_EQ(out[1], 2.0 * (N * (N - 1) / 2));
  EXPECT_EQ(out[2], in[want_ai]);
  EXPECT_EQ(out[3], static_cast<double>(want_ai));
}

TEST(LowerPasses, PromoteKeepsAMemoryCombineInARegisterOverTheLoopsItsIndexDoesNotMoveWith) {
  const DType f = DType::Float64, i64 = DType::Int64;
  // A memory combine into element `at`, marked for the promote pass.
  auto mark = [](StmtP s, ReduceOp op, const std::string& reg, bool ordered = false, ExP index_at = nullptr,
                 const std::string& index = "") {
    s->accumulates =
        std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{op, index, ordered, std::move(index_at), reg});
    return s;
  };
  auto fload = [&](const std::string& a, ExP i) { return detail::load(a, std::move(i), f); };
  auto sum_into = [&](ExP at, ExP v, const std::string& reg) {
    return mark(assign_(at, detail::combine(ReduceOp::Sum, f, at, std::move(v))), ReduceOp::Sum, reg);
  };
  const ExP x = fload("p0", add(mul(var("i"), var("n1")), var("j")));
  // for i in [0, n0): for k in [0, 2): for j in [0, n1) vectorized:
  //   p1[i] += p0[i n1 + j]     (invariant in k and j: a register over k)
  //   p2[j] += p0[i n1 + j]     (moves with j: memory)
  StmtP i = for_("i", lit(0), var("n0"));
  StmtP k = for_("k", lit(0), lit(2));
  StmtP j = for_("j", lit(0), var("n1"), LoopKind::Vectorized);
  j->body = {sum_into(fload("p1", var("i")), x, "r1"), sum_into(fload("p2", var("j")), x, "r2")};
  k->body = {j};
  i->body = {k};
  // An ordered product and an argmax into scratch arrays, over j only:
  //   for i: for j: p3[i] = p3[i] * x (in order); argmax into acc[i], aidx[i]
  StmtP i2 = for_("i", lit(0), var("n0"));
  StmtP j2 = for_("j", lit(0), var("n1"), LoopKind::Vectorized);
  const ExP at = fload("acc", var("i")), iat = detail::load("aidx", var("i"), i64);
  std::vector<StmtP> arg;
  detail::combine_into(arg, ReduceOp::ArgMax, f, "better0", at, iat, x, var("j"));
  mark(arg.back(), ReduceOp::ArgMax, "ra", false, iat, "rai");
  j2->body = {mark(assign_(fload("p3", var("i")), detail::combine(ReduceOp::Prod, f, fload("p3", var("i")), x)),
                   ReduceOp::Prod, "rp", true)};
  for (const StmtP& s : arg) j2->body.push_back(s);
  i2->body = {j2};
  // Not promoted: the loop reads the element's array at another index too.
  StmtP i3 = for_("i", lit(0), var("n0"));
  StmtP j3 = for_("j", lit(0), var("n1"));
  j3->body = {sum_into(fload("p4", var("i")), fload("p4", add(var("i"), lit(1))), "r4")};
  i3->body = {j3};
  auto fill = [&](const std::string& a, ExP count, ExP v, DType t) {
    StmtP z = for_("z", lit(0), count);
    z->body = {assign_(detail::load(a, var("z"), t), v)};
    return z;
  };
  LoopNest n = nest({decl_("n0", lit(3)), decl_("n1", lit(50)), detail::alloc(f, "acc", var("n0"), Scope::Kernel),
                     detail::alloc(i64, "aidx", var("n0"), Scope::Kernel),
                     fill("acc", var("n0"), detail::scalar_lit(reduce_identity(ReduceOp::ArgMax, f), f), f),
                     fill("aidx", var("n0"), lit(INT64_MAX), i64), i, i2, i3,
                     fill("p5", var("n0"), detail::load("aidx", var("z"), i64), i64)},
                    6);
  n.ptr_types = {f, f, f, f, f, i64};
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("p1[i] = sum(p1[i], p0["), std::string::npos) << print(n);
  EXPECT_NE(print(n).find("accumulates argmax index aidx[i] (register ra, rai)"), std::string::npos) << print(n);
  LoopNest before = n;  // (a deep copy: the passes rewrite statements in place)
  for (StmtP& s : before.body) s = detail::copy_stmt(s, [](const ExP& e) { return e; });
  passes::promote(n, kCpu);
  ASSERT_EQ(verify(n, "promote"), "") << print(n);
  const std::string text = print(n);
  auto has = [&](const std::string& line) { EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text; };
  // p1[i]: a register over k (the outermost loop it stays put in), folded after.
  ASSERT_EQ(n.body[6]->body.size(), 3u) << text;
  EXPECT_EQ(n.body[6]->body[0]->name, "r1");
  EXPECT_EQ(n.body[6]->body[1]->body[0]->body[0]->target->name, "r1");
  has("float64 r1 = 0  accumulates sum");
  has("p1[i] = sum(p1[i], r1)");
  // p2[j] stays a memory combine.
  has("p2[j] = sum(p2[j], p0[");
  // The ordered product starts from the element and is stored back; the
  // argmax and its index start from the identity and fold with the test.
  has("float64 rp = p3[i]  accumulates prod in order");
  has("p3[i] = rp\n");
  has("float64 ra = -inf  accumulates argmax index rai");
  has("int64 rai = 9223372036854775807");
  has("better_ra");
  // p4: read at i + 1 in the loop, so left in memory.
  has("p4[i] = sum(p4[i], p4[(i + 1)])");
  EXPECT_EQ(text.find("r4"), text.find("(register r4)") + 10) << text;
  // The verifier: a memory-combine mark only on an Assign into memory, with
  // its register's name; a register's mark never names a memory element.
  StmtP bad = mark(detail::decl(f, "q", lit(0)), ReduceOp::Sum, "rq");
  expect_bad(nest({bad}), "build", "register 'q' marked as a memory combine");
  StmtP nameless = mark(assign_(fload("p1", lit(0)), lit(0)), ReduceOp::Sum, "");
  expect_bad(nest({nameless}), "build", "neither declares a register nor combines into memory");

  // What both nests compute, through the common passes and the CPU target.
  auto run = [&](LoopNest& m, const char* name) {
    for (const Pass& p : passes::common()) {
      p.run(m, kCpu);
      EXPECT_EQ(verify(m, p.name), "") << p.name << "\n" << print(m);
    }
    jit::KernelFn fn = jit::CpuCompiler::instance().compile(pipeline::cpu_target().render(m), name);
    std::vector<double> in(3 * 50), s1(3, 0.5), s2(50, 0), p3(3, 1), p4(4, 1);
    std::vector<int64_t> p5(3, -1);
    for (size_t q = 0; q < in.size(); ++q) in[q] = 1.0 + static_cast<double>((q * 37) % 11) / 8;
    char* ptrs[6] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(s1.data()),
                     reinterpret_cast<char*>(s2.data()), reinterpret_cast<char*>(p3.data()),
                     reinterpret_cast<char*>(p4.data()), reinterpret_cast<char*>(p5.data())};
    const int64_t ints[1] = {0};
    const double floats[1] = {0};
    fn(ptrs, ints, floats);
    std::vector<double> all = s1;
    for (const auto* v : {&s2, &p3, &p4})
      for (double y : *v) all.push_back(y);
    for (int64_t y : p5) all.push_back(static_cast<double>(y));
    return all;
  };
  const std::vector<double> got = run(n, "test_promote_after"), want = run(before, "test_promote_before");
  ASSERT_EQ(got.size(), want.size());
  // Exact: the values are multiples of 1/8 whose sums stay exact, the
  // products are taken in order either way, and the argmax is the first.
  for (size_t q = 0; q < got.size(); ++q) EXPECT_EQ(got[q], want[q]) << q;
  double row0 = 0.5;
  for (int q = 0; q < 50; ++q) row0 += 2 * (1.0 + static_cast<double>((q * 37) % 11) / 8);
  EXPECT_EQ(got[0], row0);
  int64_t first_max = 0;  // row 0's argmax
  for (int64_t q = 1; q < 50; ++q)
    if ((q * 37) % 11 > (first_max * 37) % 11) first_max = q;
  EXPECT_EQ(got[3 + 50 + 3 + 4], static_cast<double>(first_max));
}

TEST(LowerPasses, UnrollMakesTheFullTileAndRemainderPathsOfAFullSplit) {
  // for i0 in [0, n) step 4: full-tile split (i0 + 3 < n):
  //   for i1 in [i0, (full: i0 + 4 | clipped: min(i0 + 4, n))) marked (full path: unrolled):
  //     p0[i1] = i1
  StmtP inner = detail::for_loop(
      "i1", var("i0"), detail::tile_bound(add(var("i0"), lit(4)), min(add(var("i0"), lit(4)), var("n"))), lit(1));
  inner->unroll = true;
  inner->full_kind = LoopKind::Unrolled;
  inner->body = {assign_(load_("p0", var("i1")), var("i1"))};
  StmtP fs = detail::full_split(arith_('<', add(var("i0"), lit(3)), var("n")));
  fs->body = {inner};
  StmtP outer = detail::for_loop("i0", lit(0), var("n"), lit(4));
  outer->body = {fs};
  LoopNest n = nest({decl_("n", lit(10)), outer});
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("full-tile split"), std::string::npos) << print(n);
  EXPECT_NE(print(n).find("(full path: unrolled)"), std::string::npos) << print(n);
  // What is left of the split after the unroll pass is an error.
  expect_bad(n, "unroll", "a FullSplit after the unroll pass");
  passes::unroll(n, kCpu);
  ASSERT_EQ(verify(n, "unroll"), "") << print(n);
  const std::string text = print(n);
  EXPECT_EQ(text.find("full"), std::string::npos) << text;  // no split, bound or mark left
  // The full path: the literal trip count, unrolled; the remainder: clipped, serial.
  EXPECT_NE(text.find("for i1 in [i0, (i0 + 4)) step 1 unrolled:"), std::string::npos) << text;
  EXPECT_NE(text.find("for i1 in [i0, min((i0 + 4), n)) step 1:"), std::string::npos) << text;
  // Both paths store every point once: run the rendered kernel.
  const codegen::Source src = pipeline::cpu_target().render(n);
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_unroll_paths");
  std::vector<int64_t> out(10, -1);
  char* ptrs[2] = {reinterpret_cast<char*>(out.data()), nullptr};
  const int64_t ints[1] = {0};
  const double floats[1] = {0};
  fn(ptrs, ints, floats);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(out[i], i);
}

TEST(LowerPasses, VerifierKeepsTileBoundsAndMarksInsideAFullSplit) {
  StmtP f = detail::for_loop("i", lit(0), detail::tile_bound(lit(4), min(lit(4), var("n"))), lit(1));
  expect_bad(nest({decl_("n", lit(3)), f}), "build", "a TileBound outside a FullSplit");
  StmtP g = for_("j", lit(0), lit(4));
  g->unroll = true;
  expect_bad(nest({g}), "build", "marked for the full path outside a FullSplit");
  StmtP outer = detail::full_split(lit(1));
  outer->body = {detail::full_split(lit(1))};
  expect_bad(nest({outer}), "build", "a FullSplit inside a FullSplit");
}

TEST(LowerPasses, TileBuffersCopiesAnInputInAndRedirectsTheReadsAfterTheRequest) {
  // p1[n] = p0[n] (a read before the request: memory); then
  // for i0 in [0, n) step 4:
  //   tile tile0 <- p0 [d0: i0 + 4 (to n)]
  //   for i1 in [i0, min(i0 + 4, n)): p1[i1] = p0[i1] + p0[i1]
  auto spec = std::make_shared<TileSpec>();
  spec->name = "tile0";
  spec->ptr = "p0";
  spec->dtype = DType::Int64;
  spec->count = 4;
  spec->layout = {0};
  spec->base = {var("i0")};
  spec->size = {lit(4)};
  spec->end = {var("n")};
  spec->block = {0};
  spec->block_loop = {""};
  spec->point = {var("i1")};
  spec->kind = {mdh::StrideKind::Unit};
  spec->stride = {nullptr};
  StmtP req = mk(Stmt::K::TileIn);
  req->tile = spec;
  StmtP inner = for_("i1", var("i0"), min(add(var("i0"), lit(4)), var("n")));
  inner->body = {assign_(load_("p1", var("i1")), add(load_("p0", var("i1")), load_("p0", var("i1"))))};
  StmtP outer = detail::for_loop("i0", lit(0), var("n"), lit(4));
  outer->body = {req, inner};
  LoopNest n = nest({decl_("n", lit(10)), assign_(load_("p1", var("n")), load_("p0", var("n"))), outer});
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("tile tile0: int64 <- p0 [d0: i0 + 4 (to n)]"), std::string::npos) << print(n);
  expect_bad(n, "tile_buffers", "a TileIn after the tile_buffers pass");
  passes::tile_buffers(n, kCpu);
  ASSERT_EQ(verify(n, "tile_buffers"), "") << print(n);
  const std::string text = print(n);
  EXPECT_EQ(text.find("tile tile0"), std::string::npos) << text;  // no request left
  EXPECT_NE(text.find("alloc local int64 tile0[4]"), std::string::npos) << text;
  // The loop reads the copy at the point's place in the tile, twice; memory
  // is read by the copy and by the statement before the request only.
  EXPECT_NE(text.find("p1[i1] = (tile0[(i1 - i0)] + tile0[(i1 - i0)])"), std::string::npos) << text;
  EXPECT_NE(text.find("p1[n] = p0[n]"), std::string::npos) << text;
  size_t reads = 0;
  for (size_t at = text.find("p0["); at != std::string::npos; at = text.find("p0[", at + 1)) ++reads;
  EXPECT_EQ(reads, 2u) << text;
  // The tile's values are memory's: run the rendered kernel.
  const codegen::Source src = pipeline::cpu_target().render(n);
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_tile_buffers");
  std::vector<int64_t> in(11), out(11, -1);
  for (int64_t i = 0; i < 11; ++i) in[i] = 3 * i + 1;
  char* ptrs[2] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(out.data())};
  const int64_t ints[1] = {0};
  const double floats[1] = {0};
  fn(ptrs, ints, floats);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(out[i], 2 * in[i]) << i;
  EXPECT_EQ(out[10], in[10]);
}

TEST(LowerPasses, ParallelizeDealsAParallelLoopsIterationsToThreads) {
  // for s in [0, 37) parallel if 1: p0[s] = s + 1;  then p1[0] = sum of p0 (after the loop)
  StmtP par = for_("s", lit(0), lit(37), LoopKind::Parallel);
  par->cond = lit(1);
  par->body = {assign_(load_("p0", var("s")), add(var("s"), lit(1)))};
  StmtP sum = for_("i", lit(0), lit(37));
  sum->body = {assign_(load_("p1", lit(0)), add(load_("p1", lit(0)), load_("p0", var("i"))))};
  LoopNest n = nest({par, assign_(load_("p1", lit(0)), lit(0)), sum});
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("for s in [0, 37) step 1 parallel if 1:"), std::string::npos) << print(n);
  EXPECT_FALSE(n.uses_threads);
  expect_bad(n, "parallelize", "a Parallel loop after the target's thread pass");
  passes::parallelize(n, kCpu);
  ASSERT_EQ(verify(n, "parallelize"), "") << print(n);
  EXPECT_TRUE(n.uses_threads);
  const std::string text = print(n);
  EXPECT_EQ(text.find("parallel"), std::string::npos) << text;
  EXPECT_NE(text.find("cores if 1:"), std::string::npos) << text;
  EXPECT_NE(text.find("for s in [((37 * thread_index) / thread_count), ((37 * (thread_index + 1)) / thread_count))"),
            std::string::npos)
      << text;
  const codegen::Source src = pipeline::cpu_target().render(n);
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_parallelize");
  std::vector<int64_t> out(37, 0), total(1, -1);
  char* ptrs[2] = {reinterpret_cast<char*>(out.data()), reinterpret_cast<char*>(total.data())};
  const int64_t ints[1] = {0};
  const double floats[1] = {0};
  fn(ptrs, ints, floats);
  for (int64_t i = 0; i < 37; ++i) EXPECT_EQ(out[i], i + 1) << i;  // every iteration once
  EXPECT_EQ(total[0], 37 * 38 / 2);                                // after all of them
}

TEST(LowerPasses, VerifierKeepsParallelLoopsAtTheTopAndFreeOfThreads) {
  StmtP inner = for_("s", lit(0), lit(4), LoopKind::Parallel);
  StmtP outer = for_("i", lit(0), lit(4));
  outer->body = {inner};
  expect_bad(nest({outer}), "build", "a Parallel loop below the kernel's top level");
  StmtP threads = for_("s", lit(0), lit(4), LoopKind::Parallel);
  threads->body = {assign_(load_("p0", var("s")), thread_index())};
  expect_bad(nest({threads}), "build", "thread index or count outside a Cores loop");
  StmtP from_one = for_("s", lit(1), lit(4), LoopKind::Parallel);
  expect_bad(nest({from_one}), "build", "not from 0 in steps of 1");
}

namespace {
// NumPy's pairwise sum (numpy/_core/src/umath/loops_utils.h.src), the
// reference the pairwise pass must match bit for bit.
double numpy_pairwise(const double* a, int64_t n) {
  if (n < 8) {
    double res = 0.;  // (NumPy starts from -0.0 only to keep a sum of -0.0s; these are not)
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise(a, n2) + numpy_pairwise(a + n2, n - n2);
}
}  // namespace

TEST(LowerPasses, PairwiseRewritesAMarkedLoopIntoNumpysPairwiseSum) {
  // double acc = 0.5 (`initial=`); for i in [0, n) vectorized pairwise acc:
  //   acc = acc + p0[i]; p1[i] = p0[i]   (a map in the body too)
  // p2[0] = acc
  auto dload = [](const std::string& arr, ExP i) { return detail::load(arr, std::move(i), DType::Float64); };
  StmtP loop = for_("i", lit(0), var("n"), LoopKind::Vectorized);
  loop->pairwise = true;
  loop->body = {detail::assign(var("acc", DType::Float64), detail::combine(ReduceOp::Sum, DType::Float64,
                                                                           var("acc", DType::Float64),
                                                                           dload("p0", var("i")))),
                assign_(dload("p1", var("i")), dload("p0", var("i")))};
  StmtP acc = detail::decl(DType::Float64, "acc", detail::float_param(0, DType::Float64));
  acc->accumulates = std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{ReduceOp::Sum, "", false});
  LoopNest n = nest({decl_("n", detail::int_param(0)), acc, loop,
                     assign_(dload("p2", lit(0)), var("acc", DType::Float64))},
                    3);
  n.ptr_types.assign(3, DType::Float64);
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("for i in [0, n) step 1 vectorized pairwise:"), std::string::npos) << print(n);
  expect_bad(n, "pairwise", "marked pairwise after the pairwise pass");
  {
    // Parts (the nodes form) only inside a Parallel loop, of registers and
    // allocations in scope, and only on a loop marked pairwise.
    LoopNest bad = n;
    bad.body = {n.body[0], n.body[1], detail::alloc(DType::Float64, "part", lit(4), Scope::Kernel),
                detail::copy_stmt(loop, [](const ExP& e) { return e; })};
    bad.body.back()->pairwise_parts = {{"acc", "part"}};
    expect_bad(bad, "build", "with partials outside a Parallel loop");
    bad.body.back()->pairwise_parts = {{"nope", "part"}};
    expect_bad(bad, "build", "pairwise sum 'nope' is not a register in scope");
    bad.body.back()->pairwise_parts = {{"acc", "nowhere"}};
    expect_bad(bad, "build", "pairwise partials 'nowhere' are not an allocation in scope");
    bad.body.back()->pairwise = false;
    bad.body.back()->pairwise_parts = {{"acc", "part"}};
    expect_bad(bad, "build", "which is not marked pairwise");
    // The pairwise pass sums the registers the loop carries: each must be a
    // float sum (a max, or a scalar that is no register, is refused).
    for (bool plain : {false, true}) {
      LoopNest other = n;
      StmtP m = detail::decl(DType::Float64, "acc", detail::float_param(0, DType::Float64));
      if (!plain)
        m->accumulates = std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{ReduceOp::Max, "", false});
      other.body[1] = m;
      EXPECT_THROW(passes::pairwise(other, kCpu), std::logic_error) << print(other);
    }
  }
  passes::pairwise(n, kCpu);
  ASSERT_EQ(verify(n, "pairwise"), "") << print(n);
  const std::string text = print(n);
  EXPECT_EQ(text.find(" pairwise "), std::string::npos) << text;   // no marked loop left
  EXPECT_NE(text.find("for pw_j in [0, 8) step 1 vectorized"), std::string::npos) << text;  // the blocks' lanes
  for (const Pass& p : passes::common())
    if (std::string(p.name) != "pairwise") {
      p.run(n, kCpu);
      ASSERT_EQ(verify(n, p.name), "") << p.name << "\n" << print(n);
    }
  const codegen::Source src = pipeline::cpu_target().render(n);
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_pairwise");
  // Values whose sum depends on the association: magnitudes from 1e-8 to 1e8.
  std::vector<double> in(5000);
  uint64_t state = 12345;
  for (double& x : in) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    x = (u - 0.5) * std::pow(10.0, static_cast<double>(state % 17) - 8);
  }
  for (int64_t len : {0, 1, 7, 8, 9, 15, 16, 127, 128, 129, 136, 255, 256, 1000, 1027, 4999}) {
    std::vector<double> copy(len + 1, -1), total(1, -1);
    char* ptrs[3] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(copy.data()),
                     reinterpret_cast<char*>(total.data())};
    const int64_t ints[1] = {len};
    const double floats[1] = {0.5};
    fn(ptrs, ints, floats);
    const double want = 0.5 + numpy_pairwise(in.data(), len);
    EXPECT_EQ(total[0], want) << "n = " << len;  // bit for bit
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(copy[i], in[i]) << i;
    EXPECT_EQ(copy[len], -1);
  }
}

TEST(LowerPasses, PartialsGiveEachShareItsOwnCopiesCombinedAfterTheLoopInShareOrder) {
  // int64 n = ip[0], S = ip[1]
  // alloc kernel acc[2] = {100, 0}  (a start value, as `initial=` gives one)
  // alloc kernel best[1] = {INT64_MIN}, at[1] = {INT64_MAX}
  // for s in [0, S) parallel, combining acc:sum best:argmax+at:
  //   for i in [n s / S, n (s + 1) / S):
  //     acc[i % 2] = acc[i % 2] + p0[i]           (marked)
  //     argmax of p0[i] into (best[0], at[0])      (marked)
  // p1[0] = acc[0]; p1[1] = acc[1]; p1[2] = at[0]
  using detail::combine_into;
  std::vector<StmtP> body = {decl_("n", detail::int_param(0)), decl_("S", detail::int_param(1)),
                             alloc_("acc", lit(2), Scope::Kernel), alloc_("best", lit(1), Scope::Kernel),
                             alloc_("at", lit(1), Scope::Kernel), assign_(load_("acc", lit(0)), lit(100)),
                             assign_(load_("acc", lit(1)), lit(0)),
                             assign_(load_("best", lit(0)), detail::scalar_lit(reduce_identity(ReduceOp::ArgMax,
                                                                                                DType::Int64),
                                                                               DType::Int64)),
                             assign_(load_("at", lit(0)), lit(INT64_MAX))};
  StmtP par = for_("s", lit(0), var("S"), LoopKind::Parallel);
  par->cond = arith_('<', lit(1), var("S"));
  par->share_reductions = {{"acc", "", "", ReduceOp::Sum, DType::Int64},
                           {"best", "at", "", ReduceOp::ArgMax, DType::Int64}};
  StmtP range = for_("i", arith_('/', mul(var("n"), var("s")), var("S")),
                     arith_('/', mul(var("n"), add(var("s"), lit(1))), var("S")));
  const ExP slot = load_("acc", arith_('%', var("i"), lit(2)));
  range->body.push_back(assign_(slot, detail::combine(ReduceOp::Sum, DType::Int64, slot, load_("p0", var("i")))));
  range->body.back()->accumulates =
      std::make_shared<const Stmt::Accumulator>(Stmt::Accumulator{ReduceOp::Sum, "", false, nullptr, "r"});
  combine_into(range->body, ReduceOp::ArgMax, DType::Int64, "better", load_("best", lit(0)), load_("at", lit(0)),
               load_("p0", var("i")), var("i"));
  range->body.back()->accumulates = std::make_shared<const Stmt::Accumulator>(
      Stmt::Accumulator{ReduceOp::ArgMax, "ri", false, load_("at", lit(0)), "rb"});
  par->body = {range};
  body.push_back(par);
  for (int k = 0; k < 2; ++k) body.push_back(assign_(load_("p1", lit(k)), load_("acc", lit(k))));
  body.push_back(assign_(load_("p1", lit(2)), load_("at", lit(0))));
  LoopNest n = nest(body);
  ASSERT_EQ(verify(n, "build"), "") << print(n);
  EXPECT_NE(print(n).find("parallel if (1 < S) combining acc:sum best:argmax+at:"), std::string::npos) << print(n);
  // The verifier: share reductions only before the partials pass, only on a
  // Parallel loop, only of Kernel allocations in scope.
  expect_bad(n, "partials", "share reductions on loop 's' after the partials pass");
  {
    LoopNest bad = n;
    StmtP serial = detail::copy_stmt(par, [](const ExP& e) { return e; });
    serial->loop = LoopKind::Serial;
    bad.body[bad.body.size() - 4] = serial;
    expect_bad(bad, "build", "share reductions on loop 's', which is not Parallel");
    StmtP nowhere = detail::copy_stmt(par, [](const ExP& e) { return e; });
    nowhere->share_reductions[0].array = "nowhere";
    bad.body[bad.body.size() - 4] = nowhere;
    expect_bad(bad, "build", "share reduction 'nowhere' of loop 's' is not a Kernel allocation in scope");
    // The pass refuses an array it cannot copy: not allocated before the loop.
    EXPECT_THROW(passes::partials(bad, kCpu), std::logic_error);
  }
  passes::partials(n, kCpu);
  ASSERT_EQ(verify(n, "partials"), "") << print(n);
  const std::string text = print(n);
  EXPECT_EQ(text.find("combining"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc kernel int64 acc[(2 * S)]"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc kernel int64 at[S]"), std::string::npos) << text;
  EXPECT_NE(text.find("acc[((s * 2) + (i % 2))] = sum(acc[((s * 2) + (i % 2))], p0[i])"), std::string::npos) << text;
  EXPECT_NE(text.find("accumulates argmax index at[s]"), std::string::npos) << text;  // the mark's index_at too
  EXPECT_NE(text.find("for t in [1, S) step 1:"), std::string::npos) << text;
  // Then the rest of the passes and the CPU's tail: run on threads.
  for (const Pass& p : passes::common())
    if (std::string(p.name) != "partials") {
      p.run(n, kCpu);
      ASSERT_EQ(verify(n, p.name), "") << p.name << "\n" << print(n);
    }
  for (const Pass& p : std::vector<Pass>{{"parallelize", passes::parallelize}, {"cpu_barriers", passes::cpu_barriers}}) {
    p.run(n, kCpu);
    ASSERT_EQ(verify(n, p.name), "") << p.name << "\n" << print(n);
  }
  const codegen::Source src = pipeline::cpu_target().render(n);
  jit::KernelFn fn = jit::CpuCompiler::instance().compile(src, "test_partials");
  // Values with ties for the maximum (the first index must win, whichever
  // share holds it) and sums that would count a start value twice, or a
  // point twice, if a copy started wrong.
  std::vector<int64_t> in(1001);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int64_t>((i * 7919) % 97);
  for (int64_t len : {0, 1, 2, 5, 97, 1001})
    for (int64_t shares : {1, 2, 3, 7, 16}) {
      std::vector<int64_t> out(3, -1);
      char* ptrs[2] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(out.data())};
      const int64_t ints[2] = {len, shares};
      const double floats[1] = {0};
      fn(ptrs, ints, floats);
      int64_t even = 100, odd = 0, at = len ? 0 : INT64_MAX;
      for (int64_t i = 0; i < len; ++i) {
        (i % 2 ? odd : even) += in[i];
        if (in[i] > in[at]) at = i;
      }
      EXPECT_EQ(out[0], even) << len << " points, " << shares << " shares";
      EXPECT_EQ(out[1], odd) << len << " points, " << shares << " shares";
      EXPECT_EQ(out[2], at) << len << " points, " << shares << " shares";
    }
}

namespace {

// A row reduction as build leaves it on a grid's target: one Parallel
// iteration per row, its register summing the row in a loop, the sum
// stored (an arg-reduction's index register beside it when `arg`).
LoopNest row_reduction(bool arg, bool ordered = false) {
  StmtP rows = for_("r", lit(0), var("n0"), LoopKind::Parallel);
  StmtP acc = decl_("acc", arg ? lit(INT64_MIN) : lit(0));
  auto a = std::make_shared<Stmt::Accumulator>();
  a->op = arg ? ReduceOp::ArgMax : ReduceOp::Sum;
  a->index = arg ? "ai" : "";
  a->ordered = ordered;
  acc->accumulates = a;
  rows->body.push_back(decl_("base", arith_('*', var("r"), var("n1"))));
  rows->body.push_back(acc);
  if (arg) rows->body.push_back(decl_("ai", lit(INT64_MAX)));
  StmtP cols = for_("k", lit(0), var("n1"));
  const ExP v = load_("p0", arith_('+', var("base"), var("k")));
  if (arg)
    detail::combine_into(cols->body, ReduceOp::ArgMax, DType::Int64, "better", var("acc"), var("ai"), v, var("k"));
  else
    cols->body.push_back(assign_(var("acc"), detail::combine(ReduceOp::Sum, DType::Int64, var("acc"), v)));
  rows->body.push_back(cols);
  rows->body.push_back(assign_(load_("p1", var("r")), arg ? var("ai") : var("acc")));
  return nest({decl_("n0", detail::int_param(0)), decl_("n1", detail::int_param(1)), rows});
}

PassContext blocks_context(int64_t threads) {
  PassContext c = gpu_context();
  c.caps.block_threads = threads;
  c.caps.shared_bytes = 48 << 10;
  return c;
}

// Counts the statements of a kind directly in a list.
int count(const std::vector<StmtP>& l, Stmt::K k, LoopKind loop = LoopKind::Serial) {
  int n = 0;
  for (const StmtP& s : l) n += s->k == k && (k != Stmt::K::For || s->loop == loop);
  return n;
}

}  // namespace

// gpu_blocks gives a long row a block: the row's points dealt out to its threads
// (thread t from point t, in steps of T), their registers in shared memory
// combined in a tree of log2 T levels with a barrier after each, the store
// on one thread; the verifier accepts it, and the CUDA renderer makes it one
// cooperative phase of T threads per block.
TEST(LowerPasses, GpuBlocksGiveARowReductionABlock) {
  for (bool arg : {false, true}) {
    LoopNest n = row_reduction(arg);
    passes::gpu_blocks(n, blocks_context(8));
    ASSERT_EQ(verify(n, "gpu_blocks"), "") << print(n);
    const Stmt& rows = *n.body[2];
    ASSERT_EQ(rows.loop, LoopKind::GpuBlocks) << print(n);
    EXPECT_EQ(rows.threads, 8);
    EXPECT_EQ(rows.cond, nullptr);
    // the points' loop + 3 tree levels + the store on one thread
    EXPECT_EQ(count(rows.body, Stmt::K::For, LoopKind::GpuThreads), 5) << print(n);
    EXPECT_EQ(count(rows.body, Stmt::K::Barrier), 4) << print(n);
    EXPECT_EQ(count(rows.body, Stmt::K::Alloc), arg ? 2 : 1) << print(n);
    const Stmt* points = nullptr;
    for (const StmtP& s : rows.body)
      if (s->k == Stmt::K::For && s->loop == LoopKind::GpuThreads && !points) points = s.get();
    ASSERT_NE(points, nullptr);
    EXPECT_EQ(points->hi->ival, 8);
    const std::string text = print(n);
    EXPECT_NE(text.find("for k in [nf_t, n1) step 8:"), std::string::npos) << text;
    EXPECT_NE(text.find("gpu-blocks of 8 threads"), std::string::npos) << text;
    // Rows shorter than a block stay one thread's: the blocks' loop runs
    // when a row has at least 8 points, the loop as it was when fewer.
    ASSERT_EQ(n.body.size(), 4u) << text;
    EXPECT_EQ(n.body[3]->loop, LoopKind::Parallel);
    EXPECT_NE(text.find("for r in [0, ((7 < n1) * n0)) step 1 gpu-blocks"), std::string::npos) << text;
    EXPECT_NE(text.find("for r in [0, ((n1 < 8) * n0)) step 1 parallel"), std::string::npos) << text;
    // The rest of lowering and the renderer.
    for (const char* p : {"simd", "pairwise", "unroll", "vectorize", "storage", "simplify"})
      for (const Pass& q : passes::common())
        if (std::string(q.name) == p) q.run(n, blocks_context(8));
    passes::gpu_grid(n, blocks_context(8));
    ASSERT_EQ(verify(n, "gpu_grid"), "") << print(n);
    const codegen::Source src = codegen::render_cuda(n);
    ASSERT_EQ(src.shape.phases.size(), 2u) << src.code;
    EXPECT_TRUE(src.shape.phases[0].grid && src.shape.phases[1].grid);
    EXPECT_EQ(src.shape.phases[0].threads, 8);
    EXPECT_EQ(src.shape.phases[1].threads, 0);
    EXPECT_NE(src.code.find("__syncthreads();"), std::string::npos) << src.code;
    EXPECT_NE(src.code.find("__shared__"), std::string::npos) << src.code;
    EXPECT_EQ(codegen::LaunchShape::parse(src.shape.serialize()), src.shape);
  }
}

// A kernel whose barrier is missing is caught: the verifier finds a shared
// array written by one statement of a block and read by a later one with
// no Barrier between (each removed in turn); a GpuThreads loop that
// assigns a block's uniform variable, a memory store directly in a
// cooperative body and a shared array outside one are refused too.
TEST(LowerPasses, TheVerifierCatchesAMissingBarrier) {
  LoopNest n = row_reduction(false);
  passes::gpu_blocks(n, blocks_context(4));
  ASSERT_EQ(verify(n, "gpu_blocks"), "") << print(n);
  std::vector<StmtP>& body = n.body[2]->body;
  int barriers = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i]->k != Stmt::K::Barrier) continue;
    ++barriers;
    LoopNest m = n;
    auto rows = std::make_shared<Stmt>(*n.body[2]);
    rows->body.erase(rows->body.begin() + static_cast<std::ptrdiff_t>(i));
    m.body[2] = rows;
    EXPECT_NE(verify(m, "gpu_blocks").find("without a Barrier between"), std::string::npos) << i << "\n" << print(m);
  }
  EXPECT_EQ(barriers, 3);
  {  // a thread assigning the block's variable
    LoopNest m = n;
    auto rows = std::make_shared<Stmt>(*n.body[2]);
    for (StmtP& s : rows->body)
      if (s->k == Stmt::K::For && s->loop == LoopKind::GpuThreads) {
        s = std::make_shared<Stmt>(*s);
        s->body.push_back(assign_(var("base"), lit(0)));
        break;
      }
    m.body[2] = rows;
    EXPECT_NE(verify(m, "gpu_blocks").find("assigns 'base', declared outside it"), std::string::npos) << print(m);
  }
  {  // a store every thread would run
    LoopNest m = n;
    auto rows = std::make_shared<Stmt>(*n.body[2]);
    rows->body.push_back(assign_(load_("p1", var("r")), lit(0)));
    m.body[2] = rows;
    EXPECT_NE(verify(m, "gpu_blocks").find("not run by every thread alike"), std::string::npos) << print(m);
  }
  {  // shared memory outside a block
    LoopNest m = nest({detail::alloc(DType::Int64, "s", lit(4), Scope::GpuShared)});
    EXPECT_NE(verify(m, "gpu_blocks").find("GpuShared allocation 's'"), std::string::npos) << print(m);
  }
}

// What gpu_blocks leaves to one thread per iteration: an ordered product
// (its points must combine in order), a target without blocks, the CPU.
TEST(LowerPasses, GpuBlocksLeaveWhatCannotBeShared) {
  LoopNest ordered = row_reduction(false, /*ordered=*/true);
  passes::gpu_blocks(ordered, blocks_context(8));
  EXPECT_EQ(ordered.body[2]->loop, LoopKind::Parallel) << print(ordered);
  for (const PassContext& c : {kCpu, gpu_context()}) {
    LoopNest n = row_reduction(false);
    passes::gpu_blocks(n, c);
    EXPECT_EQ(n.body[2]->loop, LoopKind::Parallel) << print(n);
  }
  LoopNest odd = row_reduction(false);
  EXPECT_THROW(passes::gpu_blocks(odd, blocks_context(6)), std::logic_error);
}

// gpu_points: a grid point's one-point loop `for v in [a, min(a + 1, X))`
// (a from the Parallel loop's variable, X its bound) becomes its body with
// v = a, so the column's element no longer moves with the rows' loop
// (promote keeps it in a register); an output's start-value loop goes onto
// the grid. gpu_split then cuts the rows' loop into chunks of partials,
// combined in chunk order by a loop over the columns.
TEST(LowerPasses, GpuSplitCutsAColumnReductionIntoChunks) {
  PassContext grid = blocks_context(8);
  StmtP fill = for_("z", lit(0), var("n1"));
  fill->body.push_back(assign_(load_("p1", var("z")), lit(0)));
  StmtP cols = for_("s", lit(0), var("nf_shares"), LoopKind::Parallel);
  cols->body.push_back(decl_("c", var("s")));
  StmtP rows = for_("i", lit(0), var("n0"));
  StmtP point = for_("v", var("c"), arith_('m', arith_('+', var("c"), lit(1)), var("n1")));
  StmtP combine = assign_(load_("p1", var("v")),
                          detail::combine(ReduceOp::Sum, DType::Int64, load_("p1", var("v")),
                                          load_("p0", arith_('+', arith_('*', var("i"), var("n1")), var("v")))));
  auto mark = std::make_shared<Stmt::Accumulator>();
  mark->op = ReduceOp::Sum;
  mark->reg = "racc";
  combine->accumulates = mark;
  point->body.push_back(combine);
  rows->body.push_back(point);
  cols->body.push_back(rows);
  LoopNest n = nest({decl_("n0", detail::int_param(0)), decl_("n1", detail::int_param(1)),
                     decl_("nf_shares", var("n1")), fill, cols});
  passes::gpu_points(n, grid);
  ASSERT_EQ(verify(n, "gpu_points"), "") << print(n);
  EXPECT_EQ(n.body[3]->loop, LoopKind::Parallel) << print(n);  // the fill
  std::string text = print(n);
  EXPECT_EQ(text.find("for v in"), std::string::npos) << text;
  EXPECT_NE(text.find("p1[c] = sum(p1[c], p0[((i * n1) + c)])"), std::string::npos) << text;
  passes::promote(n, grid);
  passes::gpu_split(n, grid);
  ASSERT_EQ(verify(n, "gpu_split"), "") << print(n);
  text = print(n);
  EXPECT_NE(text.find("int64 nf_r = max(min(min(max_threads, ((32 * max_threads) / max(nf_shares, 1))), (n0 / 8)), 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for nf_sc in [0, (nf_shares * nf_r)) step 1 parallel"), std::string::npos) << text;
  EXPECT_NE(text.find("for i in [((n0 * nf_c) / nf_r), ((n0 * (nf_c + 1)) / nf_r)) step 1"), std::string::npos) << text;
  EXPECT_NE(text.find("for nf_c in [0, nf_r) step 1"), std::string::npos) << text;
  // Not on the CPU.
  LoopNest cpu = nest({decl_("n0", detail::int_param(0)), cols});
  const std::string before = print(cpu);
  passes::gpu_points(cpu, kCpu);
  passes::gpu_split(cpu, kCpu);
  EXPECT_EQ(print(cpu), before);
}

namespace {

// A matmul's grid iteration as build leaves it for a device: the point
// (i, j) from the share s, the loop over k, one marked memory combine.
// `cube`: the second operand also read at i (a load at (i, j, k)).
LoopNest contraction(bool cube = false) {
  StmtP grid = for_("s", lit(0), var("nf_shares"), LoopKind::Parallel);
  grid->body.push_back(decl_("g", var("s")));
  grid->body.push_back(decl_("j", arith_('%', var("g"), var("n2"))));
  grid->body.push_back(assign_(var("g"), arith_('/', var("g"), var("n2"))));
  grid->body.push_back(decl_("i", var("g")));
  StmtP k = for_("k", lit(0), var("n1"));
  k->body.push_back(decl_("a", load_("p0", arith_('+', arith_('*', var("i"), var("n1")), var("k")))));
  ExP b_at = arith_('+', arith_('*', var("k"), var("n2")), var("j"));
  if (cube) b_at = arith_('+', b_at, var("i"));
  k->body.push_back(decl_("b", load_("p1", b_at)));
  const ExP out = load_("p2", arith_('+', arith_('*', var("i"), var("n2")), var("j")));
  StmtP combine = assign_(out, detail::combine(ReduceOp::Sum, DType::Int64, out, arith_('*', var("a"), var("b"))));
  auto mark = std::make_shared<Stmt::Accumulator>();
  mark->op = ReduceOp::Sum;
  combine->accumulates = mark;
  k->body.push_back(combine);
  grid->body.push_back(k);
  LoopNest n = nest({decl_("n0", detail::int_param(0)), decl_("n1", detail::int_param(1)),
                     decl_("n2", detail::int_param(2)), decl_("nf_shares", arith_('*', var("n0"), var("n2"))), grid},
                    3);
  n.block_tiles = true;  // (the schedule's: tune::block_tiles_pay)
  return n;
}

PassContext tiles_context() {
  PassContext c = blocks_context(128);
  c.caps.max_block_threads = 1024;
  return c;
}

}  // namespace

// gpu_tiles makes a contraction's grid a block of 256 threads per 64 x 64
// tile of the output: the operands' 16-deep tiles in shared memory (a
// barrier after their copies and after their use, in the loop over k), a
// 4 x 4 of registers per thread (private, from the identity), then the
// registers into the output inside its extents; the verifier accepts it
// and the CUDA renderer makes it one cooperative phase of 256 threads.
TEST(LowerPasses, GpuTilesRunAContractionInSharedMemoryTiles) {
  LoopNest n = contraction();
  passes::gpu_tiles(n, tiles_context());
  ASSERT_EQ(verify(n, "gpu_tiles"), "") << print(n);
  const std::string text = print(n);
  ASSERT_EQ(n.body.size(), 8u) << text;  // (n0, n1, n2, nf_shares, nf_tm, nf_tn, nf_tiles, the blocks)
  const Stmt& blocks = *n.body[7];
  ASSERT_EQ(blocks.loop, LoopKind::GpuBlocks) << text;
  EXPECT_EQ(blocks.threads, 256);
  EXPECT_NE(text.find("int64 nf_tm = (((nf_shares / max(n2, 1)) + 63) / 64)"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc gpu-shared int64 nf_tile_0[1040]"), std::string::npos) << text;  // (rows of 65)
  EXPECT_NE(text.find("alloc gpu-shared int64 nf_tile_1[1024]"), std::string::npos) << text;
  EXPECT_NE(text.find("alloc gpu-private int64 nf_acc[16]"), std::string::npos) << text;
  EXPECT_NE(text.find("for nf_k0 in [0, n1) step 16:"), std::string::npos) << text;
  // A's copy reads along k (row-major), B's along j.
  EXPECT_NE(text.find("nf_tile_0[((nf_kk * 65) + nf_p)] = p0[(((nf_i0 + nf_p) * n1) + (nf_k0 + nf_kk))]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("int64 nf_kk = (nf_t % 16)"), std::string::npos) << text;
  EXPECT_NE(text.find("int64 nf_kk = (nf_t / 64)"), std::string::npos) << text;
  EXPECT_NE(text.find("nf_acc[((nf_r * 4) + nf_c)] = sum(nf_acc[((nf_r * 4) + nf_c)]"), std::string::npos) << text;
  // A whole tile's k unrolled, the last tile's as many as are left.
  EXPECT_NE(text.find("if (15 < nf_kc):"), std::string::npos) << text;
  EXPECT_NE(text.find("for nf_kk in [0, 16) step 1 unrolled:"), std::string::npos) << text;
  EXPECT_NE(text.find("for nf_kk in [0, nf_kc) step 1:"), std::string::npos) << text;
  EXPECT_NE(text.find("if ((i < (nf_shares / max(n2, 1))) and (j < n2)):"), std::string::npos) << text;
  // The rest of lowering and the renderer.
  for (const char* p : {"gpu_scan", "promote", "gpu_split", "gpu_blocks", "simd", "pairwise", "unroll", "vectorize",
                        "storage", "simplify"})
    for (const Pass& q : passes::common())
      if (std::string(q.name) == p) q.run(n, tiles_context());
  passes::gpu_grid(n, tiles_context());
  ASSERT_EQ(verify(n, "gpu_grid"), "") << print(n);
  const codegen::Source src = codegen::render_cuda(n);
  ASSERT_EQ(src.shape.phases.size(), 1u) << src.code;
  EXPECT_EQ(src.shape.phases[0].threads, 256);
  EXPECT_NE(src.code.find("int64_t nf_acc[NF_PRIVATE(16, 256)];"), std::string::npos) << src.code;
  EXPECT_NE(src.code.find("nf_acc[NF_LANE(nf_t, 16) + "), std::string::npos) << src.code;
  EXPECT_NE(src.code.find("__shared__ int64_t nf_tile_1[((int64_t)1024LL)];"), std::string::npos) << src.code;
}

// The verifier's rules for what gpu_tiles makes: each barrier of the loop
// over k is needed (the one after the copies before the tiles are read,
// the one after their use before the next iteration's copies), and a
// private array is touched only by loops of exactly the block's threads.
TEST(LowerPasses, TheVerifierCatchesABarrierMissingInAUniformLoop) {
  LoopNest n = contraction();
  passes::gpu_tiles(n, tiles_context());
  ASSERT_EQ(verify(n, "gpu_tiles"), "") << print(n);
  auto with_block = [&](const std::function<void(std::vector<StmtP>&)>& change) {
    LoopNest m = n;
    auto b = std::make_shared<Stmt>(*n.body[7]);
    for (StmtP& s : b->body) s = detail::copy(s);
    change(b->body);
    m.body[7] = b;
    return verify(m, "gpu_tiles");
  };
  for (int which : {0, 1}) {
    const std::string why = with_block([&](std::vector<StmtP>& body) {
      for (StmtP& s : body)
        if (s->k == Stmt::K::For && s->loop == LoopKind::Serial) {
          int seen = 0;
          for (size_t i = 0; i < s->body.size(); ++i)
            if (s->body[i]->k == Stmt::K::Barrier && seen++ == which) {
              s->body.erase(s->body.begin() + static_cast<std::ptrdiff_t>(i));
              break;
            }
        }
    });
    // (the first: the copies' writes before the reads; the second: the
    // reads before the next iteration's writes)
    EXPECT_NE(why.find(which ? "read by one statement and written by a later one without a Barrier between"
                             : "written by one statement and touched by a later one without a Barrier between"),
              std::string::npos)
        << which << ": " << why;
  }
  const std::string why = with_block([](std::vector<StmtP>& body) {
    for (StmtP& s : body)
      if (s->k == Stmt::K::For && s->loop == LoopKind::GpuThreads) {  // the registers' start
        s->hi = lit(128);
        break;
      }
  });
  EXPECT_NE(why.find("private array 'nf_acc' touched other than by a GpuThreads loop of exactly the block's threads"),
            std::string::npos)
      << why;
}

// What gpu_tiles leaves: a load at (i, j, k) (no tile of it is shared by a
// row or a column of the block), a target without a grid, a schedule that
// does not ask for block tiles.
TEST(LowerPasses, GpuTilesLeaveWhatIsNotAContraction) {
  LoopNest unasked = contraction();
  unasked.block_tiles = false;
  const std::string unasked_before = print(unasked);
  passes::gpu_tiles(unasked, tiles_context());
  EXPECT_EQ(print(unasked), unasked_before);
  LoopNest cube = contraction(/*cube=*/true);
  const std::string before = print(cube);
  passes::gpu_tiles(cube, tiles_context());
  EXPECT_EQ(print(cube), before);
  LoopNest cpu = contraction();
  const std::string cpu_before = print(cpu);
  passes::gpu_tiles(cpu, kCpu);
  EXPECT_EQ(print(cpu), cpu_before);
}

// Tier 0's interpreter (see tier0.h).
//
// Invariants: every element of a Map's output is written exactly once, from
// the values of the same domain point; a Reduce's output elements start at
// the identity (or `initial=`) and combine their points in the order the
// kernels combine them (floating-point sums along the innermost dimension
// pairwise as NumPy and lower/pairwise.cc do, everything else in index
// order); a Scan's element i combines element i-1 with point i. Within a
// block, every node is computed before any output is stored, so an output
// that is also an input (a += b: the same view) is read before it is
// written, point by point.
#include "runtime/tier0.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "codegen/codegen.h"
#include "core/coalesce.h"
#include "jit/jit.h"
#include "runtime/tier0_abi.h"

namespace nf::runtime {

namespace {

constexpr int kMaxDims = 16;
constexpr int64_t kBlock = 256;
constexpr int kN = kNumDTypes;
constexpr int kNU = static_cast<int>(UnaryOp::Count);
constexpr int kNB = static_cast<int>(BinaryOp::Count);

using Loop = nf_t0_loop;

int ti(DType t) { return static_cast<int>(t); }

// The loop library's table of the best instruction-set level this CPU has
// (NUMFUSE_TIER0_ISA=base|v3|v4 picks a lower one).
struct Level {
  const char* name;
  const nf_t0_entry* table;
  int size;
};

Level pick_level() {
  const char* want = std::getenv("NUMFUSE_TIER0_ISA");
  const std::string w = want ? want : "";
#ifdef NF_T0_HAVE_LEVELS
  __builtin_cpu_init();
  if ((w.empty() || w == "v4") && __builtin_cpu_supports("x86-64-v4"))
    return {"x86-64-v4", nf_t0_table_v4, nf_t0_table_size_v4};
  if ((w.empty() || w == "v4" || w == "v3") && __builtin_cpu_supports("x86-64-v3"))
    return {"x86-64-v3", nf_t0_table_v3, nf_t0_table_size_v3};
#endif
  return {"base", nf_t0_table_base, nf_t0_table_size_base};
}

const Level& level() {
  static const Level l = pick_level();
  return l;
}

struct Tables {
  Loop cast[kN][kN] = {};
  Loop unary[kNU][kN] = {};
  int unary_out[kNU][kN] = {};
  Loop binary[kNB][kN][kN] = {};
  Loop select[kN] = {};
  Loop select_cmp[kNB][kN] = {};  // where(a op b, c, d), all of one type
  Tables() {
    const Level& l = level();
    for (int i = 0; i < l.size; ++i) {
      const nf_t0_entry& e = l.table[i];
      switch (e.kind) {
        case 0: cast[e.t0][e.tr] = e.fn; break;
        case 1:
          unary[e.op][e.t0] = e.fn;
          unary_out[e.op][e.t0] = e.tr;
          break;
        case 2: binary[e.op][e.t0][e.t1] = e.fn; break;
        case 3: select[e.t0] = e.fn; break;
        case 4: select_cmp[e.op][e.t0] = e.fn; break;
        default: break;
      }
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// The loop computing node n on operands of types a, b, c (nullptr for
// leaves and for nodes no loop computes).
Loop loop_for(const ExprNode& n, DType a, DType b, DType c) {
  const Tables& T = tables();
  switch (n.kind) {
    case ExprNode::Kind::Cast:
      return T.cast[ti(a)][ti(n.dtype)];
    case ExprNode::Kind::Unary:
      return T.unary_out[n.op][ti(a)] == ti(n.dtype) ? T.unary[n.op][ti(a)] : nullptr;
    case ExprNode::Kind::Binary: {
      const bool cmp = is_comparison(static_cast<BinaryOp>(n.op));
      if (n.dtype != (cmp ? DType::Bool : a) || (!cmp && a != b)) return nullptr;
      return T.binary[n.op][ti(a)][ti(b)];
    }
    case ExprNode::Kind::Select:
      if (a != DType::Bool || b != n.dtype || c != n.dtype) return nullptr;
      return T.select[ti(n.dtype)];
    default:
      return nullptr;
  }
}

Loop loop_of(const Expr& e, const ExprNode& n) {
  auto type = [&](int32_t k) { return k >= 0 ? e.nodes[k].dtype : DType::Bool; };
  return loop_for(n, type(n.a), type(n.b), type(n.c));
}

bool is_leaf(const ExprNode& n) {
  return n.kind == ExprNode::Kind::Input || n.kind == ExprNode::Kind::Const || n.kind == ExprNode::Kind::Index;
}

bool is_arg(ReduceOp op) { return op == ReduceOp::ArgMax || op == ReduceOp::ArgMin; }

// acc <- acc (+) v, elementwise, in type t (the kernels' combine spellings).
Loop combine_loop(ReduceOp op, DType t) {
  const Tables& T = tables();
  auto b = [&](BinaryOp o) { return T.binary[static_cast<int>(o)][ti(t)][ti(t)]; };
  switch (op) {
    case ReduceOp::Sum: return b(BinaryOp::Add);
    case ReduceOp::Prod: return b(BinaryOp::Multiply);
    case ReduceOp::Max: return b(BinaryOp::Maximum);
    case ReduceOp::Min: return b(BinaryOp::Minimum);
    case ReduceOp::Any: return t == DType::Bool ? b(BinaryOp::LogicalOr) : nullptr;
    case ReduceOp::All: return t == DType::Bool ? b(BinaryOp::LogicalAnd) : nullptr;
    default: return nullptr;
  }
}

// ---------------------------------------------------------------------------
// NumPy's NaN signs (codegen::nan_rule), applied to a loop's results as the
// kernels apply them (scalar_c.cc, nan_choice).

template <typename T>
T nan_choice(char c, T x, T y) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  switch (c) {
    case 'x': return x;
    case 'y': return y;
    case 'X': return -x;
    case 'Y': return -y;
    case 'a': return std::signbit(x) && std::signbit(y) ? -nan : nan;
    case 'o': return std::signbit(x) || std::signbit(y) ? -nan : nan;
    case '-': return -nan;
    default: return nan;
  }
}

template <typename T>
void fix_nans(const char* rule, bool binary, char* const* args, const long long* steps, char* r, int64_t rs,
              int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, r + i * rs, sizeof v);
    if (v == v) continue;
    T x, y = 0;
    std::memcpy(&x, args[0] + i * steps[0], sizeof x);
    if (binary) {
      std::memcpy(&y, args[1] + i * steps[1], sizeof y);
      const bool xn = x != x, yn = y != y;
      v = nan_choice(xn && yn ? rule[0] : xn ? rule[1] : yn ? rule[2] : rule[3], x, y);
    } else {
      v = nan_choice(x != x ? rule[0] : rule[1], x, x);
    }
    std::memcpy(r + i * rs, &v, sizeof v);
  }
}

// Whether any of n contiguous values is NaN, on the CPU's widest vectors.
// Results rarely hold a NaN, and the per-element fixup above costs more than
// the loop it follows (sqrt of 1000 float64: 7 of ~9 instructions per
// element went to it).
template <typename T>
bool any_nan_scalar(const T* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (v[i] != v[i]) return true;
  return false;
}

#if defined(__x86_64__)
#define NF_ANY_NAN_X86(T, V, X, W512, W256)                                                              \
  __attribute__((target("avx512f"))) bool any_nan_avx512(const T* v, int64_t n) {                    \
    int64_t i = 0;                                                                                   \
    unsigned m = 0;                                                                                  \
    for (; i + W512 <= n; i += W512) {                                                               \
      const __m512##V x = _mm512_loadu_##X(v + i);                                                   \
      m |= _mm512_cmp_##X##_mask(x, x, _CMP_UNORD_Q);                                                \
    }                                                                                                \
    return m != 0 || any_nan_scalar(v + i, n - i);                                                   \
  }                                                                                                  \
  __attribute__((target("avx2"))) bool any_nan_avx2(const T* v, int64_t n) {                         \
    int64_t i = 0;                                                                                   \
    __m256##V m = _mm256_setzero_##X();                                                              \
    for (; i + W256 <= n; i += W256) {                                                               \
      const __m256##V x = _mm256_loadu_##X(v + i);                                                   \
      m = _mm256_or_##X(m, _mm256_cmp_##X(x, x, _CMP_UNORD_Q));                                     \
    }                                                                                                \
    return _mm256_movemask_##X(m) != 0 || any_nan_scalar(v + i, n - i);                              \
  }
NF_ANY_NAN_X86(double, d, pd, 8, 4)
NF_ANY_NAN_X86(float, , ps, 16, 8)
#undef NF_ANY_NAN_X86
#endif

template <typename T>
bool any_nan(const T* v, int64_t n) {
#if defined(__x86_64__)
  static const int isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  if (isa == 2) return any_nan_avx512(v, n);
  if (isa == 1) return any_nan_avx2(v, n);
#endif
  return any_nan_scalar(v, n);
}

void fix_nans(const char* rule, const ExprNode& x, char* const* args, const long long* steps, char* r, int64_t rs,
              int64_t n) {
  const bool binary = x.kind == ExprNode::Kind::Binary;
  if (x.dtype == DType::Float32) {
    if (rs == sizeof(float) && !any_nan(reinterpret_cast<const float*>(r), n)) return;
    fix_nans<float>(rule, binary, args, steps, r, rs, n);
  } else {
    if (rs == sizeof(double) && !any_nan(reinterpret_cast<const double*>(r), n)) return;
    fix_nans<double>(rule, binary, args, steps, r, rs, n);
  }
}

// NaN rules as a dense table, rebuilt when codegen's rules change (once, at
// import): a lookup per node must cost nothing.
struct RuleTable {
  std::atomic<uint64_t> generation{~uint64_t(0)};
  std::mutex mu;
  const char* r[2][std::max(kNU, kNB)][2] = {};
};

RuleTable& rule_table() {
  static RuleTable* t = new RuleTable();  // never destroyed (used during interpreter exit)
  return *t;
}

const char* rule_of(const ExprNode& x) {
  if (!is_float(x.dtype) || (x.kind != ExprNode::Kind::Unary && x.kind != ExprNode::Kind::Binary)) return nullptr;
  RuleTable& t = rule_table();
  const uint64_t gen = codegen::nan_rules_generation();
  if (t.generation.load(std::memory_order_acquire) != gen) {
    std::lock_guard<std::mutex> lock(t.mu);
    for (int b = 0; b < 2; ++b)
      for (int op = 0; op < (b ? kNB : kNU); ++op)
        for (int f = 0; f < 2; ++f) t.r[b][op][f] = codegen::nan_rule(b == 1, op, f ? DType::Float64 : DType::Float32);
    t.generation.store(gen, std::memory_order_release);
  }
  return t.r[x.kind == ExprNode::Kind::Binary][x.op][x.dtype == DType::Float64];
}

// ---------------------------------------------------------------------------
// NumPy's pairwise summation, as lower/pairwise.cc spells it.

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
T pairwise(const char* a, int64_t n, int64_t stride) {
  if (n < 8) {
    T res = 0;
    for (int64_t i = 0; i < n; ++i) res = static_cast<T>(res + load<T>(a + i * stride));
    return res;
  }
  if (n <= 128) {
    T r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int64_t n8 = n / 8 * 8;
    for (int64_t b = 0; b < n8; b += 8)
      for (int j = 0; j < 8; ++j) r[j] = static_cast<T>(r[j] + load<T>(a + (b + j) * stride));
    T res = static_cast<T>(static_cast<T>(static_cast<T>(r[0] + r[1]) + static_cast<T>(r[2] + r[3])) +
                           static_cast<T>(static_cast<T>(r[4] + r[5]) + static_cast<T>(r[6] + r[7])));
    for (int64_t i = n8; i < n; ++i) res = static_cast<T>(res + load<T>(a + i * stride));
    return res;
  }
  const int64_t half = n / 2 / 8 * 8;
  const T left = pairwise<T>(a, half, stride);
  return static_cast<T>(left + pairwise<T>(a + half * stride, n - half, stride));
}

// pairwise() of n computed values, produced span by span: leaf(j0, m)
// computes values [j0, j0 + m) (m <= kLeafSpan) and returns (pointer, byte
// step), summed by pairwise() (its own subtree over them). The same leaves
// and the same order of additions as pairwise() over the values stored (the
// line is never stored whole). Spans of several of the tree's 128-point
// leaves: the loops computing a span run mostly in whole vectors (a 122-point
// leaf ran half its points in the loops' scalar remainders).
constexpr int64_t kLeafSpan = kBlock;

template <typename T, typename Leaf>
T pairwise_of(Leaf& leaf, int64_t j0, int64_t n) {
  if (n <= kLeafSpan) {
    const auto [p, step] = leaf(j0, n);
    return pairwise<T>(p, n, step);
  }
  const int64_t half = n / 2 / 8 * 8;
  const T left = pairwise_of<T>(leaf, j0, half);
  return static_cast<T>(left + pairwise_of<T>(leaf, j0 + half, n - half));
}

template <typename Leaf>
void add_pairwise_of(DType t, char* acc, Leaf& leaf, int64_t n) {
  if (t == DType::Float32) {
    const float s = static_cast<float>(load<float>(acc) + pairwise_of<float>(leaf, 0, n));
    std::memcpy(acc, &s, sizeof s);
  } else {
    const double s = load<double>(acc) + pairwise_of<double>(leaf, 0, n);
    std::memcpy(acc, &s, sizeof s);
  }
}

// Adds pairwise(a[0..n)) to *acc (in type t, float32 or float64).
void add_pairwise(DType t, char* acc, const char* a, int64_t n, int64_t stride) {
  if (t == DType::Float32) {
    const float s = static_cast<float>(load<float>(acc) + pairwise<float>(a, n, stride));
    std::memcpy(acc, &s, sizeof s);
  } else {
    const double s = load<double>(acc) + pairwise<double>(a, n, stride);
    std::memcpy(acc, &s, sizeof s);
  }
}

// ---------------------------------------------------------------------------
// Arg-reductions: (acc, ai) <- (v, vi) when v is better (spell_arg_better).

// A bool element is any byte; nonzero is True (as NumPy reads bool memory).
struct BoolByte {
  uint8_t b;
  operator bool() const { return b != 0; }
};

// The position of a block's best point by the same rule (the first NaN;
// else the best value, ties to the smallest index), found without a combine
// per point: the best value over four independent branchless chains
// (maxsd/minsd for floats: a NaN never enters them, it only sets `nan`),
// then the smallest index holding it. n >= 1.
#if defined(__x86_64__)
bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

// minmax_run's chains on AVX2 for contiguous floats: max/min over four
// vector chains (a NaN point never enters them: max/min return their second
// operand, the chain; it sets the flag). Returns the chains' best of
// v[0, n - n % (4W)) and whether a NaN was there; *done: points covered.
#define NF_MINMAX_AVX2(T, V, X, W)                                                               \
  template <bool kMax>                                                                           \
  __attribute__((target("avx2"))) T minmax_avx2(const T* v, int64_t n, T start, bool* nan_out,   \
                                                int64_t* done) {                                 \
    V m[4];                                                                                      \
    for (V& x : m) x = _mm256_set1_##X(start);                                                   \
    V nan = _mm256_setzero_##X();                                                                \
    int64_t i = 0;                                                                               \
    for (; i + 4 * W <= n; i += 4 * W)                                                           \
      for (int j = 0; j < 4; ++j) {                                                              \
        const V x = _mm256_loadu_##X(v + i + j * W);                                             \
        nan = _mm256_or_##X(nan, _mm256_cmp_##X(x, x, _CMP_UNORD_Q));                            \
        m[j] = kMax ? _mm256_max_##X(x, m[j]) : _mm256_min_##X(x, m[j]);                         \
      }                                                                                          \
    *nan_out = _mm256_movemask_##X(nan) != 0;                                                    \
    *done = i;                                                                                   \
    alignas(32) T lanes[4 * W];                                                                  \
    for (int j = 0; j < 4; ++j) _mm256_store_##X(lanes + j * W, m[j]);                           \
    T r = start;                                                                                 \
    for (T x : lanes) r = (kMax ? x > r : x < r) ? x : r;                                        \
    return r;                                                                                    \
  }
NF_MINMAX_AVX2(double, __m256d, pd, 4)
NF_MINMAX_AVX2(float, __m256, ps, 8)
#undef NF_MINMAX_AVX2
#endif

#if defined(__x86_64__)
// best_in_block's passes on AVX2 for contiguous floats whose indices grow
// with their position: the best value (minmax_avx2 and the rest), then the
// first position holding it, or the first NaN. One function per type (X:
// pd / ps, W lanes), spelled by the macro.
#define NF_BEST_IN_BLOCK_AVX2(T, V, X, W)                                                       \
  template <bool kMax>                                                                          \
  __attribute__((target("avx2"))) int64_t best_in_block_avx2(const T* v, int64_t n) {           \
    bool any_nan;                                                                               \
    int64_t i;                                                                                  \
    T mm = minmax_avx2<kMax>(v, n, v[0], &any_nan, &i);                                         \
    for (; i < n; ++i) {                                                                        \
      any_nan |= v[i] != v[i];                                                                  \
      mm = (kMax ? v[i] > mm : v[i] < mm) ? v[i] : mm;                                          \
    }                                                                                           \
    const V target = _mm256_set1_##X(mm);                                                       \
    for (i = 0; i + W <= n; i += W) {                                                           \
      const V x = _mm256_loadu_##X(v + i);                                                      \
      const int hit = _mm256_movemask_##X(any_nan ? _mm256_cmp_##X(x, x, _CMP_UNORD_Q)          \
                                                  : _mm256_cmp_##X(x, target, _CMP_EQ_OQ));     \
      if (hit) return i + __builtin_ctz(static_cast<unsigned>(hit));                            \
    }                                                                                           \
    for (; i < n; ++i)                                                                          \
      if (any_nan ? v[i] != v[i] : v[i] == mm) return i;                                        \
    return 0; /* (unreachable: the best value is in the block) */                               \
  }
NF_BEST_IN_BLOCK_AVX2(double, __m256d, pd, 4)
NF_BEST_IN_BLOCK_AVX2(float, __m256, ps, 8)
#undef NF_BEST_IN_BLOCK_AVX2
#endif

template <bool kMax, typename T>
int64_t best_in_block(const char* v, int64_t sv, const char* vi, int64_t svi, int64_t n) {
#if defined(__x86_64__)
  if constexpr (std::is_floating_point_v<T>) {
    // Contiguous values, indices growing evenly with the position (as the
    // callers' are): the first position with the best value has the
    // smallest index.
    const int64_t i0 = load<int64_t>(vi), i1 = load<int64_t>(vi + svi), il = load<int64_t>(vi + (n - 1) * svi);
    if (has_avx2() && sv == static_cast<int64_t>(sizeof(T)) && i1 >= i0 && il - i0 == (n - 1) * (i1 - i0))
      return best_in_block_avx2<kMax>(reinterpret_cast<const T*>(v), n);
  }
#endif
  bool nan = false;
  T m[4];
  for (T& x : m) x = load<T>(v);
  if constexpr (std::is_floating_point_v<T>) nan = m[0] != m[0];
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) {
      const T x = load<T>(v + (i + j) * sv);
      if constexpr (std::is_floating_point_v<T>) nan |= x != x;
      m[j] = (kMax ? x > m[j] : x < m[j]) ? x : m[j];
    }
  for (; i < n; ++i) {
    const T x = load<T>(v + i * sv);
    if constexpr (std::is_floating_point_v<T>) nan |= x != x;
    m[0] = (kMax ? x > m[0] : x < m[0]) ? x : m[0];
  }
  for (int j = 1; j < 4; ++j) m[0] = (kMax ? m[j] > m[0] : m[j] < m[0]) ? m[j] : m[0];
  int64_t best = -1, bi = 0;
  for (i = 0; i < n; ++i) {
    const T x = load<T>(v + i * sv);
    bool hit = x == m[0];
    if constexpr (std::is_floating_point_v<T>) hit = nan ? x != x : hit;
    if (!hit) continue;
    const int64_t ix = load<int64_t>(vi + i * svi);
    if (best < 0 || ix < bi) best = i, bi = ix;
  }
  return best;
}

template <typename T>
void arg_combine(bool max, char* acc, int64_t sa, char* ai, int64_t si, const char* v, int64_t sv, const char* vi,
                 int64_t svi, int64_t n) {
  if constexpr (!std::is_same_v<T, BoolByte>) {
    // One accumulator for the whole block (a reduction along the line): the
    // block's best point first, then one combine (a combine per point waits
    // on the accumulator's store at every point).
    if (sa == 0 && si == 0 && n > 1) {
      const int64_t k = max ? best_in_block<true, T>(v, sv, vi, svi, n) : best_in_block<false, T>(v, sv, vi, svi, n);
      return arg_combine<T>(max, acc, 0, ai, 0, v + k * sv, 0, vi + k * svi, 0, 1);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    using V = std::conditional_t<std::is_same_v<T, BoolByte>, bool, T>;
    const V a = load<T>(acc + i * sa), x = load<T>(v + i * sv);
    const int64_t ia = load<int64_t>(ai + i * si), ix = load<int64_t>(vi + i * svi);
    bool better;
    if constexpr (std::is_floating_point_v<V>) {
      if (a != a) better = x != x && ix < ia;
      else if (x != x) better = true;
      else better = (max ? x > a : x < a) || (x == a && ix < ia);
    } else {
      better = (max ? x > a : x < a) || (x == a && ix < ia);
    }
    if (better) {
      const T xs = load<T>(v + i * sv);
      std::memcpy(acc + i * sa, &xs, sizeof xs);
      std::memcpy(ai + i * si, &ix, sizeof ix);
    }
  }
}

void arg_combine(DType t, bool max, char* acc, int64_t sa, char* ai, int64_t si, const char* v, int64_t sv,
                 const char* vi, int64_t svi, int64_t n) {
  switch (t) {
    case DType::Bool: return arg_combine<BoolByte>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::Int8: return arg_combine<int8_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::Int16: return arg_combine<int16_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::Int32: return arg_combine<int32_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::Int64: return arg_combine<int64_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::UInt8: return arg_combine<uint8_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::UInt16: return arg_combine<uint16_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::UInt32: return arg_combine<uint32_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::UInt64: return arg_combine<uint64_t>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::Float32: return arg_combine<float>(max, acc, sa, ai, si, v, sv, vi, svi, n);
    case DType::Float64: return arg_combine<double>(max, acc, sa, ai, si, v, sv, vi, svi, n);
  }
}

// ---------------------------------------------------------------------------
// The walk: a task's views over its coalesced domain.

// Whether an elementwise walk takes its two innermost dimensions the other
// way round: an innermost line this short (a broadcast copy of a few
// columns: repeat, `x[:, None] * w` with w of 2-7 values) under a long next
// dimension, so each line the loops run is long. (Elementwise points are
// independent: the order of the walk is not observable.)
bool walk_swapped(int64_t inner, int64_t next) { return inner < 8 && next >= 4 * inner; }

struct Operand {
  char* base = nullptr;  // the element at domain point 0
  DType dtype = DType::Float64;
  int64_t step[kMaxDims] = {};  // bytes per final dimension
};

struct Affine {
  int64_t offset = 0;
  int64_t step[kMaxDims] = {};
};

struct Plan {
  int D = 1;  // final dimensions (at least 1)
  int64_t ext[kMaxDims] = {};
  SmallVector<Operand, 6> ops;  // inputs, then the output, then (if any) an accumulator
  SmallVector<Affine, 2> idx;   // the task's index functions
  int scan_dim = -1;
  int out = 0;  // the output operand
};

Plan make_plan(const Task& t) {
  Plan p;
  const int nd = static_cast<int>(t.domain.size());
  int64_t ext[kMaxDims];
  int keep[kMaxDims];
  int D = 0;
  for (int k = 0; k < nd; ++k)
    if (t.domain[k] != 1) {
      ext[D] = t.domain[k];
      keep[D++] = k;
    }
  const int nin = static_cast<int>(t.inputs.size());
  const int nidx = static_cast<int>(t.indices.size());
  const bool scan = t.kind == Task::Kind::Scan && t.domain[t.scan_axis] != 1;
  const int nviews = nin + 1 + nidx + (scan ? 1 : 0);
  SmallVector<int64_t, 8 * kMaxDims> sq(static_cast<size_t>(nviews) * kMaxDims, 0);
  SmallVector<const int64_t*, 8> ptrs(static_cast<size_t>(nviews), nullptr);
  auto squeeze = [&](int v, const Dims& s) {
    for (int d = 0; d < D; ++d) sq[v * kMaxDims + d] = s[keep[d]];
    ptrs[v] = &sq[v * kMaxDims];
  };
  for (int i = 0; i < nin; ++i) squeeze(i, t.inputs[i].strides);
  squeeze(nin, t.output.strides);
  for (int q = 0; q < nidx; ++q) squeeze(nin + 1 + q, t.indices[q].strides);
  int scan_sq = -1;
  if (scan) {
    // A pseudo-view stepping along the scan dimension only: it never merges.
    for (int d = 0; d < D; ++d) sq[(nviews - 1) * kMaxDims + d] = keep[d] == t.scan_axis;
    ptrs[nviews - 1] = &sq[(nviews - 1) * kMaxDims];
    for (int d = 0; d < D; ++d)
      if (keep[d] == t.scan_axis) scan_sq = d;
  }
  const Coalesced c = coalesce(ext, D, ptrs.data(), nviews);
  p.D = std::max(c.ndim(), 1);
  if (c.ndim() == 0) p.ext[0] = 1;
  for (int d = 0; d < c.ndim(); ++d) {
    p.ext[d] = c.extent[d];
    if (scan_sq >= 0 && std::find(c.order.begin() + c.run_begin(d), c.order.begin() + c.run_end[d], scan_sq) !=
                            c.order.begin() + c.run_end[d])
      p.scan_dim = d;
  }
  auto operand = [&](int v, const View& view) {
    Operand o;
    o.dtype = view.dtype;
    const int64_t is = itemsize(view.dtype);
    o.base = static_cast<char*>(view.buffer->data()) + view.offset * is;
    for (int d = 0; d < c.ndim(); ++d) o.step[d] = ptrs[v][c.inner(d)] * is;
    return o;
  };
  for (int i = 0; i < nin; ++i) p.ops.push_back(operand(i, t.inputs[i]));
  p.out = nin;
  p.ops.push_back(operand(nin, t.output));
  for (int q = 0; q < nidx; ++q) {
    Affine a;
    a.offset = t.indices[q].offset;
    for (int d = 0; d < c.ndim(); ++d) a.step[d] = ptrs[nin + 1 + q][c.inner(d)];
    p.idx.push_back(a);
  }
  return p;
}

// Calls f(off, ioff, pos) once per line of the innermost dimension, in
// index order: off[k] is operand k's byte offset at the line's start,
// ioff[q] index function q's value there, pos the outer coordinates.
// Dimensions flagged in `collapse` are walked at coordinate 0 only.
template <typename F>
void for_each_line(const Plan& p, const bool* collapse, F&& f) {
  const int D = p.D;
  const int nops = static_cast<int>(p.ops.size()), nidx = static_cast<int>(p.idx.size());
  int64_t ext[kMaxDims];
  for (int d = 0; d < D; ++d) {
    ext[d] = collapse && collapse[d] ? 1 : p.ext[d];
    if (ext[d] <= 0) return;
  }
  int64_t pos[kMaxDims] = {};
  int64_t off[8] = {}, ioff[4] = {};
  std::vector<int64_t> off_big, ioff_big;
  int64_t* o = off;
  int64_t* io = ioff;
  if (nops > 8) {
    off_big.assign(static_cast<size_t>(nops), 0);
    o = off_big.data();
  }
  if (nidx > 4) {
    ioff_big.assign(static_cast<size_t>(nidx), 0);
    io = ioff_big.data();
  }
  for (int q = 0; q < nidx; ++q) io[q] = p.idx[q].offset;
  for (;;) {
    f(static_cast<const int64_t*>(o), static_cast<const int64_t*>(io), static_cast<const int64_t*>(pos));
    int d = D - 2;
    for (; d >= 0; --d) {
      if (++pos[d] < ext[d]) {
        for (int k = 0; k < nops; ++k) o[k] += p.ops[k].step[d];
        for (int q = 0; q < nidx; ++q) io[q] += p.idx[q].step[d];
        break;
      }
      for (int k = 0; k < nops; ++k) o[k] -= p.ops[k].step[d] * (ext[d] - 1);
      for (int q = 0; q < nidx; ++q) io[q] -= p.idx[q].step[d] * (ext[d] - 1);
      pos[d] = 0;
    }
    if (d < 0) return;
  }
}

// ---------------------------------------------------------------------------
// Expression evaluation, block by block along a line.

// Bytes a temporary or constant slot holds per element: the widest type
// (complex128).
constexpr int64_t kSlot = 16;

std::atomic<int64_t> g_fused_selects{0};

class Evaluator {
 public:
  Evaluator(const Task& t, const Plan& p) : t_(t), p_(p), n_(static_cast<int>(t.expr.nodes.size())) {
    thread_local std::vector<uint64_t> scratch;
    const size_t words = (static_cast<size_t>(n_) * kBlock + static_cast<size_t>(n_)) * (kSlot / 8);
    if (scratch.size() < words) scratch.resize(words);
    temp_ = reinterpret_cast<char*>(scratch.data());
    consts_ = temp_ + static_cast<size_t>(n_) * kBlock * kSlot;
    ptr_.resize(static_cast<size_t>(n_), nullptr);
    step_.resize(static_cast<size_t>(n_), 0);
    loops_.resize(static_cast<size_t>(n_), nullptr);
    rules_.resize(static_cast<size_t>(n_), nullptr);
    fused_.resize(static_cast<size_t>(n_), false);
    for (int k = 0; k < n_; ++k) {
      const ExprNode& x = t.expr.nodes[k];
      if (x.kind == ExprNode::Kind::Const) t.consts[x.a].cast(x.dtype).store(consts_ + kSlot * k);
      if (is_leaf(x)) continue;
      loops_[k] = loop_of(t.expr, x);
      rules_[k] = rule_of(x);
    }
    fuse_select_compares(t);
  }

  // where(a op b, c, d) whose comparison nothing else reads: one loop of
  // the library computes it (kind 4), the comparison's bytes never stored.
  void fuse_select_compares(const Task& t) {
    const Expr& e = t.expr;
    SmallVector<int, 16> uses(static_cast<size_t>(n_), 0);
    for (const ExprNode& x : e.nodes) {
      if (is_leaf(x)) continue;
      for (int32_t a : {x.a, x.b, x.c})
        if (a >= 0) ++uses[a];
    }
    for (int32_t r : {t.value(), t.arg_node, e.root()})
      if (r >= 0) ++uses[r];
    const Tables& T = tables();
    for (int k = 0; k < n_; ++k) {
      const ExprNode& x = e.nodes[k];
      if (x.kind != ExprNode::Kind::Select || x.a < 0 || uses[x.a] != 1) continue;
      const ExprNode& c = e.nodes[x.a];
      if (c.kind != ExprNode::Kind::Binary || !is_comparison(static_cast<BinaryOp>(c.op))) continue;
      if (e.nodes[c.a].dtype != x.dtype || e.nodes[c.b].dtype != x.dtype) continue;
      Loop f = T.select_cmp[c.op][ti(x.dtype)];
      if (!f) continue;
      loops_[k] = f;
      fused_[k] = true;
      g_fused_selects.fetch_add(1, std::memory_order_relaxed);
      loops_[x.a] = nullptr;  // (not computed)
    }
  }

  // Node k's values for the current block: pointer and byte step.
  char* ptr(int k) const { return ptr_[k]; }
  long long step(int k) const { return step_[k]; }

  // Evaluates every node at points [j0, j0 + n) of the line at off/ioff.
  // With `direct`, node `direct_node` is computed straight into memory at
  // (direct, direct_step) instead of a temporary.
  void block(const int64_t* off, const int64_t* ioff, int64_t j0, int64_t n, int direct_node = -1,
             char* direct = nullptr, int64_t direct_step = 0) {
    const int in = p_.D - 1;
    for (int k = 0; k < n_; ++k) {
      const ExprNode& x = t_.expr.nodes[k];
      switch (x.kind) {
        case ExprNode::Kind::Input: {
          const Operand& o = p_.ops[x.a];
          ptr_[k] = o.base + off[x.a] + j0 * o.step[in];
          step_[k] = o.step[in];
          break;
        }
        case ExprNode::Kind::Const:
          ptr_[k] = consts_ + kSlot * k;
          step_[k] = 0;
          break;
        case ExprNode::Kind::Index: {
          auto* d = reinterpret_cast<int64_t*>(temp_ + static_cast<size_t>(k) * kBlock * kSlot);
          const int64_t s = p_.idx[x.a].step[in];
          int64_t at = ioff[x.a] + j0 * s;
          for (int64_t i = 0; i < n; ++i, at += s) d[i] = at;  // (an induction: no 64-bit multiply per point)
          ptr_[k] = reinterpret_cast<char*>(d);
          step_[k] = 8;
          break;
        }
        default: {
          if (!loops_[k]) break;  // (a comparison its select computes)
          char* args[5];
          long long steps[5];
          int na = 0;
          if (fused_[k]) {
            const ExprNode& c = t_.expr.nodes[x.a];
            for (int32_t a : {c.a, c.b, x.b, x.c}) {
              args[na] = ptr_[a];
              steps[na++] = step_[a];
            }
          } else {
            for (int32_t a : {x.a, x.b, x.c}) {
              if (a < 0) break;
              args[na] = ptr_[a];
              steps[na++] = step_[a];
            }
          }
          char* r = temp_ + static_cast<size_t>(k) * kBlock * kSlot;
          long long rs = itemsize(x.dtype);
          if (k == direct_node) {
            r = direct;
            rs = direct_step;
          }
          args[na] = r;
          steps[na] = rs;
          loops_[k](args, steps, n);
          if (rules_[k]) fix_nans(rules_[k], x, args, steps, r, rs, n);  // NaN signs as NumPy gives them
          ptr_[k] = r;
          step_[k] = rs;
        }
      }
    }
  }

 private:
  const Task& t_;
  const Plan& p_;
  int n_;
  char* temp_;
  char* consts_;
  SmallVector<char*, 16> ptr_;
  SmallVector<long long, 16> step_;
  SmallVector<Loop, 16> loops_;
  SmallVector<const char*, 16> rules_;
  SmallVector<bool, 16> fused_;  // a select computing its comparison
};

// Copies (casting) n values from (src, ss) of type from into (dst, ds) of type to.
void copy(DType from, const char* src, int64_t ss, DType to, char* dst, int64_t ds, int64_t n) {
  char* args[2] = {const_cast<char*>(src), dst};
  long long steps[2] = {ss, ds};
  tables().cast[ti(from)][ti(to)](args, steps, n);
}

void combine(Loop f, char* acc, int64_t sa, const char* v, int64_t sv, int64_t n) {
  char* args[3] = {acc, const_cast<char*>(v), acc};
  long long steps[3] = {sa, sv, sa};
  f(args, steps, n);
}

// max / min of n values into one accumulator, in registers (the binary loop
// with a stride-0 accumulator chains every element through memory: ~2 ns per
// element). Exact where it answers: integers always; floating point when no
// value (nor the accumulator) is NaN and the result is not a zero (a nonzero
// maximum has one bit pattern, while which of -0.0 and +0.0 wins depends on
// the order of comparisons). Otherwise false, the accumulator untouched: the
// caller combines in order.

template <typename T, bool kMax>
bool minmax_run(char* accp, const char* p, int64_t sv, int64_t n) {
  T acc;
  std::memcpy(&acc, accp, sizeof acc);
  auto better = [](T v, T m) { return kMax ? v > m : v < m; };
  T m[4] = {acc, acc, acc, acc};
  bool nan = false;
  int64_t i = 0;
#if defined(__x86_64__)
  if constexpr (std::is_floating_point_v<T>) {
    if (has_avx2() && sv == static_cast<int64_t>(sizeof(T)))
      m[0] = minmax_avx2<kMax>(reinterpret_cast<const T*>(p), n, acc, &nan, &i);
  }
#endif
  if (sv == static_cast<int64_t>(sizeof(T))) {
    const T* x = reinterpret_cast<const T*>(p);
    for (; i + 4 <= n; i += 4)
      for (int l = 0; l < 4; ++l) {
        const T v = x[i + l];
        if constexpr (std::is_floating_point_v<T>) nan |= v != v;
        m[l] = better(v, m[l]) ? v : m[l];
      }
  }
  for (; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sv, sizeof v);
    if constexpr (std::is_floating_point_v<T>) nan |= v != v;
    m[0] = better(v, m[0]) ? v : m[0];
  }
  T r = m[0];
  for (int l = 1; l < 4; ++l) r = better(m[l], r) ? m[l] : r;
  if constexpr (std::is_floating_point_v<T>)
    if (nan || acc != acc || r == 0) return false;
  std::memcpy(accp, &r, sizeof r);
  return true;
}

template <bool kMax>
bool minmax_line(DType t, char* acc, const char* v, int64_t sv, int64_t n) {
  switch (t) {
    case DType::Float64: return minmax_run<double, kMax>(acc, v, sv, n);
    case DType::Float32: return minmax_run<float, kMax>(acc, v, sv, n);
    case DType::Int64: return minmax_run<int64_t, kMax>(acc, v, sv, n);
    case DType::Int32: return minmax_run<int32_t, kMax>(acc, v, sv, n);
    case DType::Int16: return minmax_run<int16_t, kMax>(acc, v, sv, n);
    case DType::Int8: return minmax_run<int8_t, kMax>(acc, v, sv, n);
    case DType::UInt64: return minmax_run<uint64_t, kMax>(acc, v, sv, n);
    case DType::UInt32: return minmax_run<uint32_t, kMax>(acc, v, sv, n);
    case DType::UInt16: return minmax_run<uint16_t, kMax>(acc, v, sv, n);
    case DType::UInt8: return minmax_run<uint8_t, kMax>(acc, v, sv, n);
    default: return false;
  }
}

// Integer sums and products, any and all, of n values into one accumulator
// in registers (four independent chains; the binary loop with a stride-0
// accumulator chains every element through memory). Exact in any order:
// integers wrap modulo 2^bits (computed unsigned), or/and are associative.
// A bool element is any byte, nonzero true; the accumulator gets 0 or 1.
template <typename T, ReduceOp kOp>
void assoc_run(char* accp, const char* p, int64_t sv, int64_t n) {
  using U = typename std::conditional_t<std::is_same_v<T, bool>, std::type_identity<uint8_t>, std::make_unsigned<T>>::type;
  using W = std::common_type_t<U, unsigned>;  // (no promotion to a signed int)
  auto comb = [](U a, U b) -> U {
    if constexpr (kOp == ReduceOp::Sum) return static_cast<U>(static_cast<W>(a) + b);
    else if constexpr (kOp == ReduceOp::Prod) return static_cast<U>(static_cast<W>(a) * b);
    else if constexpr (kOp == ReduceOp::Any) return static_cast<U>(a | (b != 0));
    else return static_cast<U>(a & (b != 0));
  };
  constexpr U id = kOp == ReduceOp::Prod || kOp == ReduceOp::All ? 1 : 0;
  U m[4] = {load<U>(accp), id, id, id};
  if constexpr (kOp == ReduceOp::Any || kOp == ReduceOp::All) m[0] = m[0] != 0;
  int64_t i = 0;
  if (sv == static_cast<int64_t>(sizeof(U))) {
    const U* x = reinterpret_cast<const U*>(p);
    for (; i + 4 <= n; i += 4)
      for (int l = 0; l < 4; ++l) m[l] = comb(m[l], x[i + l]);
  }
  for (; i < n; ++i) m[0] = comb(m[0], load<U>(p + i * sv));
  U r = m[0];
  for (int l = 1; l < 4; ++l) r = comb(r, m[l]);
  std::memcpy(accp, &r, sizeof r);
}

template <ReduceOp kOp>
bool assoc_line(DType t, char* acc, const char* v, int64_t sv, int64_t n) {
  if constexpr (kOp == ReduceOp::Any || kOp == ReduceOp::All) {
    if (t != DType::Bool) return false;
    assoc_run<bool, kOp>(acc, v, sv, n);
    return true;
  } else {
    switch (t) {
      case DType::Int64: assoc_run<int64_t, kOp>(acc, v, sv, n); return true;
      case DType::Int32: assoc_run<int32_t, kOp>(acc, v, sv, n); return true;
      case DType::Int16: assoc_run<int16_t, kOp>(acc, v, sv, n); return true;
      case DType::Int8: assoc_run<int8_t, kOp>(acc, v, sv, n); return true;
      case DType::UInt64: assoc_run<uint64_t, kOp>(acc, v, sv, n); return true;
      case DType::UInt32: assoc_run<uint32_t, kOp>(acc, v, sv, n); return true;
      case DType::UInt16: assoc_run<uint16_t, kOp>(acc, v, sv, n); return true;
      case DType::UInt8: assoc_run<uint8_t, kOp>(acc, v, sv, n); return true;
      default: return false;
    }
  }
}

// combine() of a reduction: into one accumulator in registers where that is
// exact (minmax_run, assoc_run), else the binary loop.
void reduce_combine(ReduceOp op, DType t, Loop f, char* acc, int64_t sa, const char* v, int64_t sv, int64_t n) {
  if (sa == 0) {
    bool done = false;
    switch (op) {
      case ReduceOp::Max: done = minmax_line<true>(t, acc, v, sv, n); break;
      case ReduceOp::Min: done = minmax_line<false>(t, acc, v, sv, n); break;
      case ReduceOp::Sum: done = assoc_line<ReduceOp::Sum>(t, acc, v, sv, n); break;
      case ReduceOp::Prod: done = assoc_line<ReduceOp::Prod>(t, acc, v, sv, n); break;
      case ReduceOp::Any: done = assoc_line<ReduceOp::Any>(t, acc, v, sv, n); break;
      case ReduceOp::All: done = assoc_line<ReduceOp::All>(t, acc, v, sv, n); break;
      default: break;
    }
    if (done) return;
  }
  combine(f, acc, sa, v, sv, n);
}

// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// Both cores (all the process's threads, jit::threads()) for a large task:
// the plan is cut along one dimension whose points are independent (not
// reduced, not scanned along) into pieces that run the serial walk, one per
// thread; values and their order of combination are the same as one walk's
// (every output element is computed by one piece, from the same points in
// the same order). NumPy runs on one core: a first call that the
// interpreter runs on two can beat it on large arrays without a compile.

// Points below which one thread runs the task. Measured here (2 cores): a
// region's workers take 0.1-0.2 ms to wake after the program has been idle
// a while, and the first region of a process 0.5-0.7 ms more (the calling
// thread's first entry into the pool) -- what a 360,000-point `x * 2 + 1`
// saves on two threads; from about half a million points the split pays
// for itself even on a first call.
constexpr int64_t kParallelPoints = 1 << 19;

std::atomic<int64_t> g_splits{0};

// Ways to cut a task of `points` points: 1 (serial) or the thread count
// (1 while a compile runs: jit::compiles_running).
int split_ways(int64_t points) {
  if (points < kParallelPoints || jit::compiles_running() > 0) return 1;
  return std::max(1, jit::threads());
}

// Piece `k` of `ways` along dimension d: the plan over [lo, hi) there,
// the bounds a multiple of `align` points (a cache line of output).
Plan piece(const Plan& p, int d, int64_t lo, int64_t hi) {
  Plan q = p;
  q.ext[d] = hi - lo;
  for (Operand& o : q.ops) o.base += lo * o.step[d];
  for (Affine& a : q.idx) a.offset += lo * a.step[d];
  return q;
}

// Runs run(plan) on pieces of p cut along the outermost dimension that
// `cuttable` allows and that has at least `ways` points, in parallel; false
// (nothing run) when the task is small or no dimension can be cut.
template <typename Run>
bool run_split(const Plan& p, const bool* cuttable, Run&& run) {
  int64_t points = 1;
  for (int d = 0; d < p.D; ++d) points *= p.ext[d];
  const int ways = split_ways(points);
  if (ways <= 1) return false;
  int d = 0;
  while (d < p.D && !(cuttable[d] && p.ext[d] >= ways * (d == p.D - 1 ? 64 : 1))) ++d;
  if (d == p.D) return false;
  const int64_t align = d == p.D - 1 ? 64 : 1;
  const int64_t ext = p.ext[d];
  struct Ctx {
    const Plan* p;
    int d;
    int64_t ext, align;
    Run* run;
  } ctx{&p, d, ext, align, &run};
  g_splits.fetch_add(1, std::memory_order_relaxed);
  jit::nf_parallel(
      [](void* c, int64_t tid, int64_t nt) {
        const Ctx& x = *static_cast<Ctx*>(c);
        auto bound = [&](int64_t k) {
          if (k >= nt) return x.ext;
          return std::min(x.ext, (x.ext * k / nt) / x.align * x.align);
        };
        const int64_t lo = bound(tid), hi = bound(tid + 1);
        if (hi > lo) (*x.run)(piece(*x.p, x.d, lo, hi));
      },
      &ctx);
  return true;
}

// *acc += the pairwise sum of n computed values: the tree's top subtrees
// (2, 4, ... of them, as many as threads allow) summed on the threads by
// sub(j0, m, out) (out: the subtree's sum, in type t), then combined as the
// tree combines them. The same additions in the same order as
// pairwise_of() over the whole line.
template <typename Sub>
void add_pairwise_split(DType t, char* acc, int64_t n, Sub&& sub) {
  const int ways = split_ways(n);
  int depth = 0;
  while (depth < 4 && (2 << depth) <= ways && (n >> (depth + 1)) > 1024) ++depth;
  // The subtrees at `depth`, in order (pairwise_of's split: half = n/2/8*8).
  struct Span {
    int64_t j0, m;
  };
  SmallVector<Span, 16> spans;
  spans.push_back({0, n});
  for (int k = 0; k < depth; ++k) {
    SmallVector<Span, 16> next;
    for (const Span& x : spans) {
      const int64_t half = x.m / 2 / 8 * 8;
      next.push_back({x.j0, half});
      next.push_back({x.j0 + half, x.m - half});
    }
    spans = next;
  }
  alignas(16) char sums[16][16];
  struct Ctx {
    const SmallVector<Span, 16>* spans;
    char (*sums)[16];
    Sub* sub;
  } ctx{&spans, sums, &sub};
  g_splits.fetch_add(1, std::memory_order_relaxed);
  jit::nf_parallel(
      [](void* c, int64_t tid, int64_t nt) {
        const Ctx& x = *static_cast<Ctx*>(c);
        for (int64_t k = tid; k < static_cast<int64_t>(x.spans->size()); k += nt)
          (*x.sub)((*x.spans)[k].j0, (*x.spans)[k].m, x.sums[k]);
      },
      &ctx);
  auto combine = [&](auto zero) {
    using T = decltype(zero);
    SmallVector<T, 16> r;
    for (size_t k = 0; k < spans.size(); ++k) r.push_back(load<T>(sums[k]));
    while (r.size() > 1) {
      SmallVector<T, 16> up;
      for (size_t k = 0; k < r.size(); k += 2) up.push_back(static_cast<T>(r[k] + r[k + 1]));
      r = up;
    }
    const T s = static_cast<T>(load<T>(acc) + r[0]);
    std::memcpy(acc, &s, sizeof s);
  };
  if (t == DType::Float32) combine(0.0f);
  else combine(0.0);
}

void run_map(const Task& t, const Plan& p) {
  Evaluator ev(t, p);
  const int v = t.value();
  const ExprNode& vn = t.expr.nodes[v];
  const Operand& out = p.ops[p.out];
  const int in = p.D - 1;
  // The stored node computed straight into the output when nothing else
  // needs it afterwards (it is the last node).
  const bool direct = v == t.expr.root() && !is_leaf(vn) && vn.dtype == out.dtype;
  for_each_line(p, nullptr, [&](const int64_t* off, const int64_t* ioff, const int64_t*) {
    const int64_t len = p.ext[in];
    for (int64_t j0 = 0; j0 < len; j0 += kBlock) {
      const int64_t n = std::min(kBlock, len - j0);
      char* dst = out.base + off[p.out] + j0 * out.step[in];
      if (direct) {
        ev.block(off, ioff, j0, n, v, dst, out.step[in]);
      } else {
        ev.block(off, ioff, j0, n);
        copy(vn.dtype, ev.ptr(v), ev.step(v), out.dtype, dst, out.step[in], n);
      }
    }
  });
}

void run_reduce(const Task& t, Plan& p) {
  Evaluator ev(t, p);
  const int v = t.value();
  const DType acc_t = t.acc_dtype;
  const bool arg = is_arg(t.reduce);
  const int in = p.D - 1;
  bool reduced[kMaxDims];
  for (int d = 0; d < p.D; ++d) reduced[d] = p.ops[p.out].step[d] == 0 && p.ext[d] != 1;
  // The accumulator: the output itself, or (another type, an arg-reduction's
  // values) a contiguous array over the output's elements.
  std::vector<uint64_t> acc_mem;
  int acc = p.out;
  if (arg || acc_t != p.ops[p.out].dtype) {
    Operand a;
    a.dtype = acc_t;
    int64_t count = 1;
    for (int d = p.D; d-- > 0;) {
      a.step[d] = reduced[d] ? 0 : count * itemsize(acc_t);
      if (!reduced[d]) count *= p.ext[d];
    }
    acc_mem.assign(static_cast<size_t>(count + 1) * (kSlot / 8), 0);
    a.base = reinterpret_cast<char*>(acc_mem.data());
    acc = static_cast<int>(p.ops.size());
    p.ops.push_back(a);
  }
  // Initialize: the identity, or `initial=`; arg indices past any index.
  {
    alignas(16) char init[kSlot];
    (t.init_const >= 0 ? t.consts[t.init_const].cast(acc_t) : reduce_identity(t.reduce, acc_t)).store(init);
    const int64_t big = std::numeric_limits<int64_t>::max();
    for_each_line(p, reduced, [&](const int64_t* off, const int64_t*, const int64_t*) {
      const int64_t n = reduced[in] ? 1 : p.ext[in];
      const Operand& a = p.ops[acc];
      copy(acc_t, init, 0, acc_t, a.base + off[acc], a.step[in], n);
      if (arg) {
        const Operand& o = p.ops[p.out];
        copy(DType::Int64, reinterpret_cast<const char*>(&big), 0, DType::Int64, o.base + off[p.out], o.step[in], n);
      }
    });
  }
  const Loop comb = arg ? nullptr : combine_loop(t.reduce, acc_t);
  const bool pairwise_sum = reduced[in] && t.reduce == ReduceOp::Sum && is_float(acc_t);
  const ExprNode& vn = t.expr.nodes[v];
  const bool split_sum = pairwise_sum && p.D == 1 && split_ways(p.ext[0]) > 1;
  thread_local std::vector<uint64_t> line;  // a whole line's values, for pairwise sums of computed values
  for_each_line(p, nullptr, [&](const int64_t* off, const int64_t* ioff, const int64_t*) {
    const int64_t len = p.ext[in];
    const Operand& a = p.ops[acc];
    char* acc_line = a.base + off[acc];
    if (pairwise_sum && vn.kind == ExprNode::Kind::Input && vn.dtype == acc_t) {
      const Operand& src = p.ops[vn.a];
      const char* a = src.base + off[vn.a];
      const int64_t step = src.step[in];
      if (!split_sum) {
        add_pairwise(acc_t, acc_line, a, len, step);
        return;
      }
      add_pairwise_split(acc_t, acc_line, len, [&](int64_t j0, int64_t n, char* part) {
        if (acc_t == DType::Float32) {
          const float r = pairwise<float>(a + j0 * step, n, step);
          std::memcpy(part, &r, sizeof r);
        } else {
          const double r = pairwise<double>(a + j0 * step, n, step);
          std::memcpy(part, &r, sizeof r);
        }
      });
      return;
    }
    if (pairwise_sum && vn.dtype == acc_t && split_sum) {
      // One long line (a whole array's sum): the top subtrees of the
      // pairwise tree on the cores, each with its own evaluator.
      add_pairwise_split(acc_t, acc_line, len, [&](int64_t j0, int64_t n, char* part) {
        Evaluator e(t, p);
        auto leaf = [&](int64_t b, int64_t m) {
          e.block(off, ioff, b, m);
          return std::pair<const char*, int64_t>(e.ptr(v), e.step(v));
        };
        if (acc_t == DType::Float32) {
          const float r = pairwise_of<float>(leaf, j0, n);
          std::memcpy(part, &r, sizeof r);
        } else {
          const double r = pairwise_of<double>(leaf, j0, n);
          std::memcpy(part, &r, sizeof r);
        }
      });
      return;
    }
    if (pairwise_sum && vn.dtype == acc_t) {
      // Computed values summed as they are computed, 128 at a time (a
      // line's values stored whole cost a buffer of the line's size:
      // 8 MB of fresh pages for a 10^6-point sum's first call).
      auto leaf = [&](int64_t j0, int64_t n) {
        ev.block(off, ioff, j0, n);
        return std::pair<const char*, int64_t>(ev.ptr(v), ev.step(v));
      };
      add_pairwise_of(acc_t, acc_line, leaf, len);
      return;
    }
    if (pairwise_sum) {
      const int64_t is = itemsize(acc_t);
      if (line.size() * 8 < static_cast<size_t>(len * is)) line.resize(static_cast<size_t>(len * is / 8) + 1);
      char* buf = reinterpret_cast<char*>(line.data());
      for (int64_t j0 = 0; j0 < len; j0 += kBlock) {
        const int64_t n = std::min(kBlock, len - j0);
        ev.block(off, ioff, j0, n);
        copy(vn.dtype, ev.ptr(v), ev.step(v), acc_t, buf + j0 * is, is, n);
      }
      add_pairwise(acc_t, acc_line, buf, len, is);
      return;
    }
    for (int64_t j0 = 0; j0 < len; j0 += kBlock) {
      const int64_t n = std::min(kBlock, len - j0);
      ev.block(off, ioff, j0, n);
      char* at = acc_line + j0 * a.step[in];
      if (arg) {
        const Operand& o = p.ops[p.out];
        arg_combine(acc_t, t.reduce == ReduceOp::ArgMax, at, a.step[in], o.base + off[p.out] + j0 * o.step[in],
                    o.step[in], ev.ptr(v), ev.step(v), ev.ptr(t.arg_node), ev.step(t.arg_node), n);
      } else {
        reduce_combine(t.reduce, acc_t, comb, at, a.step[in], ev.ptr(v), ev.step(v), n);
      }
    }
  });
  if (acc != p.out && !arg) {
    for_each_line(p, reduced, [&](const int64_t* off, const int64_t*, const int64_t*) {
      const int64_t n = reduced[in] ? 1 : p.ext[in];
      const Operand& a = p.ops[acc];
      const Operand& o = p.ops[p.out];
      copy(acc_t, a.base + off[acc], a.step[in], o.dtype, o.base + off[p.out], o.step[in], n);
    });
  }
}

void run_scan(const Task& t, const Plan& p) {
  Evaluator ev(t, p);
  const int v = t.value();
  const ExprNode& vn = t.expr.nodes[v];
  const Operand& out = p.ops[p.out];
  const DType ot = out.dtype;
  const Loop comb = combine_loop(t.reduce, ot);
  const int in = p.D - 1;
  const int s = p.scan_dim;
  for_each_line(p, nullptr, [&](const int64_t* off, const int64_t* ioff, const int64_t* pos) {
    const int64_t len = p.ext[in];
    char* line = out.base + off[p.out];
    const int64_t os = out.step[in];
    for (int64_t j0 = 0; j0 < len; j0 += kBlock) {
      const int64_t n = std::min(kBlock, len - j0);
      ev.block(off, ioff, j0, n);
      char* dst = line + j0 * os;
      if (s == in) {  // along the line: element i = element i-1 (+) point i
        int64_t first = 0;
        if (j0 == 0) {
          copy(vn.dtype, ev.ptr(v), 0, ot, dst, 0, 1);
          first = 1;
        }
        if (n > first) {
          char* args[3] = {dst + (first - 1) * os, ev.ptr(v) + first * ev.step(v), dst + first * os};
          long long steps[3] = {os, ev.step(v), os};
          comb(args, steps, n - first);
        }
      } else if (s < 0 || pos[s] == 0) {  // the first line along the scan: the values themselves
        copy(vn.dtype, ev.ptr(v), ev.step(v), ot, dst, os, n);
      } else {  // line i = line i-1 (+) values
        char* args[3] = {dst - out.step[s], ev.ptr(v), dst};
        long long steps[3] = {os, ev.step(v), os};
        comb(args, steps, n);
      }
    }
  });
}

}  // namespace

const char* tier0_isa() { return level().name; }

int64_t tier0_splits() { return g_splits.load(std::memory_order_relaxed); }

int tier0_ways(int64_t points) { return split_ways(points); }

int64_t tier0_fused_selects() { return g_fused_selects.load(std::memory_order_relaxed); }

bool tier0_supports(const Task& t) {
  if (t.domain.size() > static_cast<size_t>(kMaxDims)) return false;
  for (const ExprNode& x : t.expr.nodes)
    if (!is_leaf(x) && !loop_of(t.expr, x)) return false;
  const DType vt = t.expr.nodes[t.value()].dtype;
  const DType ot = t.output.dtype;
  const Tables& T = tables();
  switch (t.kind) {
    case Task::Kind::Map:
      return T.cast[ti(vt)][ti(ot)] != nullptr;
    case Task::Kind::Reduce:
      if (vt != t.acc_dtype) return false;
      if (is_arg(t.reduce)) return ot == DType::Int64 && t.arg_node >= 0;
      return combine_loop(t.reduce, t.acc_dtype) && T.cast[ti(t.acc_dtype)][ti(ot)];
    case Task::Kind::Scan:
      return combine_loop(t.reduce, ot) && T.cast[ti(vt)][ti(ot)];
  }
  return false;
}

void lengthen_lines(Plan& p) {
  const int D = p.D;
  if (D < 2 || !walk_swapped(p.ext[D - 1], p.ext[D - 2])) return;
  std::swap(p.ext[D - 1], p.ext[D - 2]);
  for (Operand& o : p.ops) std::swap(o.step[D - 1], o.step[D - 2]);
  for (Affine& a : p.idx) std::swap(a.step[D - 1], a.step[D - 2]);
}

void tier0_run(const Task& t) {
  Plan p = make_plan(t);
  bool cuttable[kMaxDims];
  switch (t.kind) {
    case Task::Kind::Map:
      lengthen_lines(p);
      for (int d = 0; d < p.D; ++d) cuttable[d] = true;
      if (!run_split(p, cuttable, [&](const Plan& q) { run_map(t, q); })) run_map(t, p);
      return;
    case Task::Kind::Reduce:
      // (Arg-reductions keep the first index of equal values: any cut of
      // the kept dimensions keeps that too.)
      for (int d = 0; d < p.D; ++d) cuttable[d] = !(p.ops[p.out].step[d] == 0 && p.ext[d] != 1);
      if (!run_split(p, cuttable, [&](const Plan& q) {
            Plan r = q;
            run_reduce(t, r);
          }))
        run_reduce(t, p);
      return;
    case Task::Kind::Scan:
      for (int d = 0; d < p.D; ++d) cuttable[d] = d != p.scan_dim;
      if (!run_split(p, cuttable, [&](const Plan& q) { run_scan(t, q); })) run_scan(t, p);
      return;
  }
}

}  // namespace nf::runtime

namespace nf::runtime {

Tier0Loop tier0_loop(const ExprNode& node, DType a, DType b) {
  if (is_leaf(node)) return nullptr;
  return loop_for(node, a, b, DType::Bool);
}

void tier0_elementwise(Tier0Loop f, const ExprNode& node, int nargs, char* const* bases,
                       const int64_t* const* strides, const Dims& shape) {
  constexpr int kMaxArgs = 4;
  const int nd = static_cast<int>(shape.size());
  if (nargs > kMaxArgs || nd > kMaxDims) throw std::logic_error("tier0_elementwise: too many operands or dimensions");
  int64_t ext[kMaxDims];
  int64_t st[kMaxArgs][kMaxDims];
  int D = 0;
  for (int k = 0; k < nd; ++k) {
    if (shape[k] == 0) return;
    if (shape[k] == 1) continue;
    ext[D] = shape[k];
    for (int a = 0; a < nargs; ++a) st[a][D] = strides[a][k];
    ++D;
  }
  const char* rule = rule_of(node);
  char* args[kMaxArgs];
  long long steps[kMaxArgs];
  auto row = [&](int64_t n) {
    f(args, steps, n);
    if (rule) fix_nans(rule, node, args, steps, args[nargs - 1], steps[nargs - 1], n);
  };
  if (D <= 1) {
    for (int a = 0; a < nargs; ++a) {
      args[a] = bases[a];
      steps[a] = D ? st[a][0] : 0;
    }
    return row(D ? ext[0] : 1);
  }
  // Every operand C-contiguous over the domain, or a broadcast scalar (all
  // strides 0): one row, without coalescing (small 2-d operations spent
  // more on sorting dimensions than on their loop).
  bool flat = true;
  int64_t total = 1;
  for (int d = 0; d < D; ++d) total *= ext[d];
  for (int a = 0; a < nargs && flat; ++a) {
    int64_t want = st[a][D - 1];
    for (int d = D - 1; d >= 0 && flat; --d) {
      flat = st[a][d] == want;
      want *= ext[d];
    }
  }
  if (flat) {
    for (int a = 0; a < nargs; ++a) {
      args[a] = bases[a];
      steps[a] = st[a][D - 1];
    }
    return row(total);
  }
  const int64_t* views[kMaxArgs];
  for (int a = 0; a < nargs; ++a) views[a] = st[a];
  const Coalesced c = coalesce(ext, D, views, nargs);
  const int F = c.ndim();
  int64_t fs[kMaxArgs][kMaxDims];
  int64_t fe[kMaxDims];
  for (int d = 0; d < F; ++d) fe[d] = c.extent[d];
  for (int a = 0; a < nargs; ++a)
    for (int d = 0; d < F; ++d) fs[a][d] = st[a][c.inner(d)];
  if (F >= 2 && walk_swapped(fe[F - 1], fe[F - 2])) {
    std::swap(fe[F - 1], fe[F - 2]);
    for (int a = 0; a < nargs; ++a) std::swap(fs[a][F - 1], fs[a][F - 2]);
  }
  int64_t pos[kMaxDims] = {};
  int64_t off[kMaxArgs] = {};
  const int in = F - 1;
  for (int a = 0; a < nargs; ++a) steps[a] = fs[a][in];
  for (;;) {
    for (int a = 0; a < nargs; ++a) args[a] = bases[a] + off[a];
    row(fe[in]);
    int d = F - 2;
    for (; d >= 0; --d) {
      if (++pos[d] < fe[d]) {
        for (int a = 0; a < nargs; ++a) off[a] += fs[a][d];
        break;
      }
      for (int a = 0; a < nargs; ++a) off[a] -= fs[a][d] * (fe[d] - 1);
      pos[d] = 0;
    }
    if (d < 0) return;
  }
}

void tier0_reduce_all(const View& in, const View* in2, ReduceOp op, DType acc, DType out, const Scalar* initial,
                      Scalar* value) {
  const Tables& T = tables();
  const bool arg = is_arg(op);
  // The walk: `in` (and in2) over their coalesced domain.
  const int nd = in.ndim();
  if (nd > kMaxDims) throw std::logic_error("tier0_reduce_all: too many dimensions");
  int64_t ext[kMaxDims], s1[kMaxDims], s2[kMaxDims];
  int D = 0;
  const int64_t is1 = itemsize(in.dtype), is2 = in2 ? itemsize(in2->dtype) : 0;
  for (int k = 0; k < nd; ++k) {
    if (in.shape[k] == 1) continue;
    ext[D] = in.shape[k];
    s1[D] = in.strides[k] * is1;
    s2[D] = in2 ? in2->strides[k] * is2 : 0;
    ++D;
  }
  const int64_t* views[2] = {s1, s2};
  const Coalesced c = coalesce(ext, D, views, in2 ? 2 : 1);
  const int F = std::max(c.ndim(), 1);
  int64_t fe[kMaxDims], f1[kMaxDims], f2[kMaxDims];
  if (c.ndim() == 0) fe[0] = 1, f1[0] = f2[0] = 0;
  for (int d = 0; d < c.ndim(); ++d) {
    fe[d] = c.extent[d];
    f1[d] = s1[c.inner(d)];
    f2[d] = s2[c.inner(d)];
  }
  char* b1 = static_cast<char*>(in.buffer->data()) + in.offset * is1;
  char* b2 = in2 ? static_cast<char*>(in2->buffer->data()) + in2->offset * is2 : nullptr;
  // The value combined at each point: in cast to acc (any/all: to bool), or
  // the product of the two vectors' elements in acc.
  const DType vt = (op == ReduceOp::Any || op == ReduceOp::All) && !in2 ? DType::Bool : acc;
  const Loop mul = in2 ? (vt == DType::Bool ? T.binary[static_cast<int>(BinaryOp::LogicalAnd)][0][0]
                                           : T.binary[static_cast<int>(BinaryOp::Multiply)][ti(vt)][ti(vt)])
                       : nullptr;
  const Loop comb = arg ? nullptr : combine_loop(op, acc);
  const bool pairwise_sum = op == ReduceOp::Sum && is_float(acc);
  alignas(16) char accv[kSlot];
  (initial ? initial->cast(acc) : reduce_identity(op, acc)).store(accv);
  int64_t best = std::numeric_limits<int64_t>::max();
  alignas(16) char va[kBlock * kSlot], vb[kBlock * kSlot], vp[kBlock * kSlot];
  int64_t idx[kBlock];
  thread_local std::vector<uint64_t> line;
  const int64_t vs = itemsize(vt);
  int64_t pos[kMaxDims] = {};
  int64_t o1 = 0, o2 = 0, flat = 0;
  const int in_d = F - 1;
  const int64_t len = fe[in_d];
  for (;;) {
    // One line: values block by block.
    char* lb = nullptr;
    if (pairwise_sum && (in2 || in.dtype != vt)) {
      if (line.size() * 8 < static_cast<size_t>(len * vs)) line.resize(static_cast<size_t>(len * vs / 8) + 1);
      lb = reinterpret_cast<char*>(line.data());
    }
    if (pairwise_sum && !lb) {
      add_pairwise(acc, accv, b1 + o1, len, f1[in_d]);
    } else {
      for (int64_t j0 = 0; j0 < len; j0 += kBlock) {
        const int64_t n = std::min(kBlock, len - j0);
        const char* p = b1 + o1 + j0 * f1[in_d];
        int64_t ps = f1[in_d];
        if (in.dtype != vt) {
          copy(in.dtype, p, ps, vt, va, vs, n);
          p = va;
          ps = vs;
        }
        if (in2) {
          const char* q = b2 + o2 + j0 * f2[in_d];
          int64_t qs = f2[in_d];
          if (in2->dtype != vt) {
            copy(in2->dtype, q, qs, vt, vb, vs, n);
            q = vb;
            qs = vs;
          }
          char* args[3] = {const_cast<char*>(p), const_cast<char*>(q), pairwise_sum ? lb + j0 * vs : vp};
          long long steps[3] = {ps, qs, vs};
          mul(args, steps, n);
          p = args[2];
          ps = vs;
          if (pairwise_sum) continue;
        } else if (pairwise_sum) {
          if (p != lb + j0 * vs) copy(vt, p, ps, vt, lb + j0 * vs, vs, n);
          continue;
        }
        if (arg) {
          for (int64_t i = 0; i < n; ++i) idx[i] = flat + j0 + i;
          arg_combine(acc, op == ReduceOp::ArgMax, accv, 0, reinterpret_cast<char*>(&best), 0, p, ps,
                      reinterpret_cast<const char*>(idx), 8, n);
        } else {
          reduce_combine(op, acc, comb, accv, 0, p, ps, n);
        }
      }
      if (pairwise_sum) add_pairwise(acc, accv, lb, len, vs);
    }
    flat += len;
    int d = F - 2;
    for (; d >= 0; --d) {
      if (++pos[d] < fe[d]) {
        o1 += f1[d];
        o2 += f2[d];
        break;
      }
      o1 -= f1[d] * (fe[d] - 1);
      o2 -= f2[d] * (fe[d] - 1);
      pos[d] = 0;
    }
    if (d < 0) break;
  }
  if (arg) {
    *value = Scalar::of_int(DType::Int64, best);
    return;
  }
  // The accumulator as a Scalar of type acc, then NumPy's cast to out.
  Scalar r;
  r.dtype = acc;
  switch (acc) {
    case DType::Bool: r = Scalar::of_bool(load<uint8_t>(accv) != 0); break;
    case DType::Float32: r = Scalar::of_float(acc, load<float>(accv)); break;
    case DType::Float64: r = Scalar::of_float(acc, load<double>(accv)); break;
    case DType::Int8: r = Scalar::of_int(acc, load<int8_t>(accv)); break;
    case DType::Int16: r = Scalar::of_int(acc, load<int16_t>(accv)); break;
    case DType::Int32: r = Scalar::of_int(acc, load<int32_t>(accv)); break;
    case DType::Int64: r = Scalar::of_int(acc, load<int64_t>(accv)); break;
    case DType::UInt8: r = Scalar::of_uint(acc, load<uint8_t>(accv)); break;
    case DType::UInt16: r = Scalar::of_uint(acc, load<uint16_t>(accv)); break;
    case DType::UInt32: r = Scalar::of_uint(acc, load<uint32_t>(accv)); break;
    case DType::UInt64: r = Scalar::of_uint(acc, load<uint64_t>(accv)); break;
    case DType::Complex64:
    case DType::Complex128: r = Scalar::load(acc, accv); break;
  }
  *value = r.cast(out);
}

}  // namespace nf::runtime

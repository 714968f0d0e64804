// The decision to run an operation at once (tier 0) instead of recording it.
//
// Laziness pays off when fusion saves memory traffic worth more than what
// recording, analysing and launching cost (about a microsecond per operation
// even when the window is memoized). For small operations it cannot: NumPy
// itself takes well under a microsecond, so they run at once, by tier 0's
// interpreter, when they can see their final inputs. A pending write to an
// input, or a pending access to the output, sends the operation to the
// window instead, where program order is kept by fusion's constraints.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/fpe.h"
#include "extern/extern.h"
#include "pipeline/pipeline.h"
#include "pipeline/tiers.h"
#include "runtime/tier0.h"

namespace nf::pipeline {

namespace {

std::atomic<int64_t> g_tier0_tasks{0};

// A statistic counted where operations are recorded and run at the call,
// with the GIL held: a load and a store rather than an atomic
// read-modify-write (about 8 ns each on the machines measured, a tenth of a
// small operation); readers elsewhere see one value or the next.
inline void count(std::atomic<int64_t>& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

}  // namespace

// A floating-point matrix product (record_matmul's task: domain (batch...,
// m, n, k), A(b,i,k) * B(b,k,j) summed over k) runs as BLAS calls, as the
// compiled tier hands it to BLAS too.
bool detail::run_matmul_blas(const Task& t) {
  const DType dt = t.output.dtype;
  if (!t.solo || t.kind != Task::Kind::Reduce || t.reduce != ReduceOp::Sum || t.inputs.size() != 2 ||
      (dt != DType::Float64 && dt != DType::Float32) || t.acc_dtype != dt || t.domain.size() < 3 ||
      t.expr.nodes.size() != 3)
    return false;
  const ExprNode& mul = t.expr.nodes[2];
  if (mul.kind != ExprNode::Kind::Binary || mul.op != static_cast<uint8_t>(BinaryOp::Multiply) ||
      t.inputs[0].dtype != dt || t.inputs[1].dtype != dt)
    return false;
  const View &A = t.inputs[0], &B = t.inputs[1], &C = t.output;
  const int nb = static_cast<int>(t.domain.size()) - 3;
  // The matmul pattern: A ignores n, B ignores m, C ignores k (other
  // contractions -- einsum, tensordot -- run on the interpreter).
  if (std::strcmp(t.name, "matmul") != 0 || A.strides[nb + 1] != 0 || B.strides[nb] != 0 || C.strides[nb + 2] != 0)
    return false;
  const int64_t m = t.domain[nb], n = t.domain[nb + 1], k = t.domain[nb + 2];
  const int64_t is = itemsize(dt);
  char* a = static_cast<char*>(A.buffer->data()) + A.offset * is;
  char* b = static_cast<char*>(B.buffer->data()) + B.offset * is;
  char* c = static_cast<char*>(C.buffer->data()) + C.offset * is;
  int64_t batches = 1;
  for (int d = 0; d < nb; ++d) batches *= t.domain[d];
  SmallVector<int64_t, 8> idx(static_cast<size_t>(nb), 0);
  for (int64_t q = 0; q < batches; ++q) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (int d = 0; d < nb; ++d) {
      oa += idx[d] * A.strides[d];
      ob += idx[d] * B.strides[d];
      oc += idx[d] * C.strides[d];
    }
    ext::gemm_strided(dt, a + oa * is, A.strides[nb], A.strides[nb + 2], b + ob * is, B.strides[nb + 2],
                      B.strides[nb + 1], c + oc * is, C.strides[nb], C.strides[nb + 1], m, n, k);
    for (int d = nb; d-- > 0;) {
      if (++idx[d] < t.domain[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

namespace {

// Tier 0 walks an operation line by line (its innermost dimension, merged
// with those outside it where every operand is contiguous across them): a
// loop call and a step of the walk per line, about 25 ns, then about 0.25 ns
// a point. An operation of many short lines costs it more than its points
// say: npbench's LeNet convolution multiplies a 5-D window by the weights
// (8x5x5x1x6 = 1,200 points in 200 lines of 6), 5.4 us at once where NumPy
// takes 3.1, while the same line recorded in a loop costs about 1.5 us (the
// window memoized, its kernels compiled: the product and the sum after it
// one kernel). Such an operation runs at once while it is new; once the
// same operation (kind, extents, strides) has run at once kRepeatsBeforeLazy
// times, it is recorded: a repeated operation is a loop's.
constexpr double kLineNs = 25, kPointNs = 0.25;
constexpr int kRepeatsBeforeLazy = 4;

// Lines tier 0 walks for `shape` with operands at `strides` (elements; any
// number of operands, each over the whole shape).
template <typename Strides>
int64_t tier0_lines(const Dims& shape, const Strides& strides, int nops) {
  int d = static_cast<int>(shape.size()) - 1;
  while (d >= 0 && shape[d] == 1) --d;
  if (d < 0) return 1;
  int64_t inner = shape[d];
  for (int e = d - 1; e >= 0; --e) {
    if (shape[e] == 1) continue;
    bool merges = true;
    for (int k = 0; k < nops && merges; ++k) merges = strides(k, e) == strides(k, d) * shape[d];
    if (!merges) break;
    inner *= shape[e];
    d = e;
  }
  return std::max<int64_t>(shape_size(shape) / std::max<int64_t>(inner, 1), 1);
}

// Whether an operation of `points` points walked in `lines` lines is
// line-bound: lines shorter than kShortLine points (a loop call costs as
// much as 100 points; with lines of 16 or more NumPy's own walk costs about
// what tier 0's does, and a recorded operation that makes its readers
// pending costs more than it saves: ADI's `rhs[:, 1:] += h * u[:, :-1]` on
// 64 x 64 recorded made the Thomas sweeps after it pending, 1.2x -> 0.9x
// NumPy), costing tier 0 more than `eager_max_elements` points in one line
// (its budget).
constexpr int64_t kShortLine = 16;
bool line_bound(int64_t lines, int64_t points, int64_t eager_max) {
  return points < lines * kShortLine && lines * kLineNs + points * kPointNs > kLineNs + eager_max * kPointNs;
}

// Counts the at-once runs of a line-bound operation by its signature;
// true once it has repeated kRepeatsBeforeLazy times (it is then recorded).
bool repeated(uint64_t signature) {
  thread_local std::unordered_map<uint64_t, int> seen;
  if (seen.size() > 256) seen.clear();
  int& n = seen[signature];
  return ++n > kRepeatsBeforeLazy;
}

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

uint64_t signature_of(const Task& t) {
  uint64_t h = mix(0xcbf29ce484222325ull, reinterpret_cast<uintptr_t>(t.name));
  h = mix(h, static_cast<uint64_t>(t.kind) | (static_cast<uint64_t>(t.expr.nodes.size()) << 8));
  for (int64_t e : t.domain) h = mix(h, static_cast<uint64_t>(e));
  for (const View& v : t.inputs)
    for (int64_t s : v.strides) h = mix(h, static_cast<uint64_t>(s));
  for (int64_t s : t.output.strides) h = mix(h, static_cast<uint64_t>(s));
  return h;
}

uint64_t signature_of(const SimpleOp& op, const Dims& shape) {
  uint64_t h = mix(0x84222325cbf29ce4ull, static_cast<uint64_t>(op.node.kind) | (uint64_t{op.node.op} << 8) |
                                              (static_cast<uint64_t>(op.node.dtype) << 16) |
                                              (static_cast<uint64_t>(op.nin) << 24));
  for (int64_t e : shape) h = mix(h, static_cast<uint64_t>(e));
  for (const View* v : {op.view[0], op.view[1], op.out})
    if (v)
      for (int64_t st : v->strides) h = mix(h, static_cast<uint64_t>(st));
  return h;
}

// A task whose run at once would be line-bound, and that has repeated. (A
// matrix product, solo, runs as BLAS calls: no lines.)
bool lazy_for_lines(const Task& t, int64_t eager_max) {
  if (t.solo) return false;
  const int nin = static_cast<int>(t.inputs.size());
  const int64_t lines = tier0_lines(
      t.domain, [&](int k, int d) { return k < nin ? t.inputs[k].strides[d] : t.output.strides[d]; }, nin + 1);
  return line_bound(lines, shape_size(t.domain), eager_max) && repeated(signature_of(t));
}

// Settling. Once a large operation is pending, a small one reading its
// result (or writing memory a pending task touches) is recorded too, and so
// is everything after it that reads what that one wrote: a loop of small
// operations after a prologue of large ones -- covariance's and
// correlation's loops over columns after `data -= mean`, Deriche's row
// sweeps after `imgOut = c1 * (y1 + y2)` -- ran recorded, a kernel launch
// each, at 0.6-0.8x NumPy. A small operation kept from running at once by
// pending tasks asks for the window to be flushed when its call ends
// (Stream::request_settle), so the small operations after it run at once --
// unless the window holds small operations recorded by choice (a repeated
// line-bound one, above: its loop is meant to be recorded and memoized).
// A loop of large operations with a small one in each iteration (a
// boundary copy) would flush every iteration: a settle not followed by
// kSettlePaid operations at once before the next request did not pay, and
// the next 2, 4, 8, ... (at most 1024) requests are then not made.
constexpr int64_t kSettlePaid = 8;
std::atomic<int64_t> g_small_recorded{0};  // small tasks recorded by choice since the window was taken
struct SettleState {
  int64_t at_once_then = -1;  // g_tier0_tasks at the last settle (-1: judged)
  uint64_t signature = 0;     // of the operation that asked for it
  int misses = 0;
  int64_t skip = 0;  // requests not to make
  // Operations whose settle did not pay: they never ask again (fdtd-2d's
  // `ey[0, :] = _fict_[t]` after each step's large updates).
  std::unordered_set<uint64_t> missed;
};
SettleState g_settle;  // (by the gate's holder)

// Whether v is at most a quarter of its buffer.
bool part_of(const View& v) { return v.size() * itemsize(v.dtype) * 4 <= v.buffer->nbytes(); }

// A small operation that would run at once but for pending tasks; it is
// recorded. `part`: it reads or writes a part (at most a quarter) of a
// pending array -- a loop over a large array's rows or columns. Reading a
// whole small pending result (a reduction along an axis, then the division
// of a mean) is no such loop: the small result is a link between large
// operations (a variance's mean, then the deviations), which fuse.
template <typename Signature>
void blocked_by_pending(bool part, Signature&& signature) {
  if (!part || g_small_recorded.load(std::memory_order_relaxed) > 0) return;
  const int64_t now = g_tier0_tasks.load(std::memory_order_relaxed);
  SettleState& s = g_settle;
  if (s.at_once_then >= 0) {
    if (now - s.at_once_then >= kSettlePaid) {
      s.misses = 0;
    } else {
      s.misses = std::min(s.misses + 1, 10);
      s.skip = int64_t{1} << s.misses;
      if (s.missed.size() > 4096) s.missed.clear();
      s.missed.insert(s.signature);
    }
    s.at_once_then = -1;
  }
  const uint64_t sig = signature();
  if (s.missed.count(sig)) return;
  if (s.skip > 0) {
    --s.skip;
    return;
  }
  s.at_once_then = now;
  s.signature = sig;
  global_stream().request_settle();
}

// A matrix product runs alone (BLAS) whether recorded or not: recording
// gains it nothing but a flush, and puts what reads its result in the
// window. One of at most kMatmulAtOnce multiply-adds (about 10 us of one
// core's BLAS: covariance's `data[:, i] @ data[:, i:M]`, 100 x 80) runs at
// once when its inputs are final; larger ones are recorded and run on
// every core.
constexpr int64_t kMatmulAtOnce = int64_t{1} << 16;
bool blas_product(const Task& t) {
  return t.solo && std::strcmp(t.name, "matmul") == 0 &&
         (t.output.dtype == DType::Float64 || t.output.dtype == DType::Float32);
}

bool run_now(Task& t) {
  const Config& c = config();
  if (c.tier == Tier::Lazy) return false;
  if (c.tier == Tier::Auto &&
      shape_size(t.domain) > (blas_product(t) ? std::max(c.eager_max_elements, kMatmulAtOnce) : c.eager_max_elements))
    return false;
  bool pending = t.output.buffer->pending(), part = pending && part_of(t.output);
  for (const View& v : t.inputs)
    if (v.buffer->pending_write()) {
      pending = true;
      part |= part_of(v);
    }
  if (pending) {
    if (c.tier == Tier::Auto) blocked_by_pending(part, [&] { return signature_of(t); });
    return false;
  }
  if (c.tier == Tier::Auto && lazy_for_lines(t, c.eager_max_elements)) {
    count(g_small_recorded);
    return false;
  }
  fpe::take();
  if (!detail::run_matmul_blas(t)) {
    if (!runtime::tier0_supports(t)) return false;
    runtime::tier0_run(t);
  }
  if (const uint8_t f = fpe::take()) {
    std::vector<const char*> ops = t.solo ? std::vector<const char*>{"matmul"} : fp_ops_of(t.expr, t.combines());
    if (t.is_reduce()) ops.push_back(reduce_name(t.reduce));
    std::vector<const View*> in;
    bool extreme = false;
    for (const View& v : t.inputs) in.push_back(&v);
    for (const Scalar& c : t.consts) extreme |= detail::extreme_scalar(c);
    if (const uint8_t real = detail::genuine(f, ops, in, extreme)) detail::note_fp(real, std::move(ops));
  }
  count(g_tier0_tasks);
  return true;
}

// The operation a SimpleOp computes, for its floating-point events.
std::vector<const char*> simple_fp_ops(const SimpleOp& s) {
  const bool cx = is_complex(s.type[0]) || (s.nin == 2 && is_complex(s.type[1]));
  switch (s.node.kind) {
    case ExprNode::Kind::Unary: {
      const auto op = static_cast<UnaryOp>(s.node.op);
      if (!cx) return {unary_name(op)};
      if (op == UnaryOp::Absolute || op == UnaryOp::Sign) return {unary_name(op), "complex", "hypot"};
      return {unary_name(op), "complex"};
    }
    case ExprNode::Kind::Binary:
      if (cx) return {binary_name(static_cast<BinaryOp>(s.node.op)), "complex"};
      if (static_cast<BinaryOp>(s.node.op) == BinaryOp::Power && s.node.dtype == DType::Float32)
        return {"power", kPowerFloat32};
      return {binary_name(static_cast<BinaryOp>(s.node.op))};
    default:
      return {"cast"};
  }
}

// Broadcasts `shape` with s (NumPy's rule); false if they do not broadcast.
bool broadcast_into(Dims& shape, const Dims& s) {
  while (s.size() > shape.size()) shape.insert(0, 1);
  const size_t off = shape.size() - s.size();
  for (size_t k = 0; k < s.size(); ++k) {
    int64_t& e = shape[off + k];
    if (s[k] == e || s[k] == 1) continue;
    if (e != 1) return false;
    e = s[k];
  }
  return true;
}

// Byte strides of view v broadcast over `shape` (0 on broadcast dimensions).
void broadcast_strides(const View& v, const Dims& shape, int64_t* out) {
  const int nd = static_cast<int>(shape.size()), vd = v.ndim();
  const int64_t is = itemsize(v.dtype);
  for (int j = 0; j < nd; ++j) {
    const int i = j - (nd - vd);
    out[j] = i < 0 || v.shape[i] == 1 ? 0 : v.strides[i] * is;
  }
}

// A copy between C-contiguous arrays of one type, or a fill of a
// C-contiguous array with a scalar (x.copy(), zeros, a[...] = b): memcpy and
// memset, as NumPy's own copies, without the loop library. False for any
// other operation (nothing done).
bool copy_or_fill(const SimpleOp& s, const Dims& shape, const View& dst) {
  if (s.node.kind != ExprNode::Kind::Cast || s.nin != 1 || !dst.is_c_contiguous()) return false;
  char* to = static_cast<char*>(dst.buffer->data()) + dst.offset * itemsize(dst.dtype);
  const int64_t bytes = shape_size(shape) * itemsize(dst.dtype);
  if (const View* src = s.view[0]) {
    if (src->dtype != dst.dtype || src->shape != shape || !src->is_c_contiguous() ||
        (src->buffer == dst.buffer && views_overlap(*src, dst)))
      return false;
    std::memcpy(to, static_cast<const char*>(src->buffer->data()) + src->offset * itemsize(src->dtype),
                static_cast<size_t>(bytes));
    return true;
  }
  if (bytes == 0) return false;
  alignas(16) char value[16];
  s.value[0].cast(dst.dtype).store(value);
  fill_bytes(to, bytes, value, itemsize(dst.dtype));
  return true;
}

// The commonest small operations -- a fill of a C-contiguous destination
// with a value of its own type (zeros, ones, full) and a copy between
// C-contiguous arrays of one type and shape (x.copy(), a.astype(a.dtype)) --
// done without the general path's broadcasting, loop lookup and
// floating-point flag reads: neither can raise a flag. False: not one of
// them (nothing done), or something pending is involved.
bool fill_or_copy_now(const SimpleOp& s, const Config& c) {
  if (s.node.kind != ExprNode::Kind::Cast || s.nin != 1 || !s.out) return false;
  const View& dst = *s.out;
  if (s.node.dtype != dst.dtype || !dst.is_c_contiguous()) return false;
  const int64_t n = dst.size();
  if (n == 0 || (c.tier == Tier::Auto && n > c.eager_max_elements) || dst.buffer->pending()) return false;
  const int64_t is = itemsize(dst.dtype);
  char* to = static_cast<char*>(dst.buffer->data()) + dst.offset * is;
  if (const View* src = s.view[0]) {
    if (src->dtype != dst.dtype || src->shape != dst.shape || !src->is_c_contiguous() ||
        src->buffer->pending_write() || (src->buffer == dst.buffer && views_overlap(*src, dst)))
      return false;
    std::memcpy(to, static_cast<const char*>(src->buffer->data()) + src->offset * is, static_cast<size_t>(n * is));
  } else {
    if (s.type[0] != dst.dtype) return false;
    alignas(16) char value[16];
    s.value[0].store(value);
    fill_bytes(to, n * is, value, static_cast<int>(is));
  }
  count(g_tier0_tasks);
  return true;
}

bool run_simple(const SimpleOp& s, View* result) {
  constexpr int kMaxDims = 16;
  const Config& c = config();
  if (c.tier == Tier::Lazy) return false;
  if (fill_or_copy_now(s, c)) return true;
  const View* arrays[2];
  int na = 0;
  for (int k = 0; k < s.nin; ++k)
    if (s.view[k]) arrays[na++] = s.view[k];
  Dims shape = s.out ? s.out->shape : Dims();
  for (int k = 0; k < na; ++k)
    if (!broadcast_into(shape, arrays[k]->shape)) return false;  // the recorder raises NumPy's error
  if (s.out && shape != s.out->shape) return false;
  if (shape.size() > static_cast<size_t>(kMaxDims)) return false;
  if (c.tier == Tier::Auto && shape_size(shape) > c.eager_max_elements) return false;
  const runtime::Tier0Loop loop = runtime::tier0_loop(s.node, s.type[0], s.type[1]);
  if (!loop) return false;
  // The inputs are final, and nothing pending touches the destination.
  bool pending = s.out && s.out->buffer->pending(), part = pending && part_of(*s.out);
  for (int k = 0; k < na; ++k)
    if (arrays[k]->buffer->pending_write()) {
      pending = true;
      part |= part_of(*arrays[k]);
    }
  if (pending) {
    if (c.tier == Tier::Auto) blocked_by_pending(part, [&] { return signature_of(s, shape); });
    return false;
  }
  if (s.out) {
    // An input overlapping the destination must be the destination itself
    // (read before written, point by point); otherwise a task copies it first.
    for (int k = 0; k < na; ++k)
      if (arrays[k]->buffer == s.out->buffer && !(arrays[k]->shape == shape && arrays[k]->same_as(*s.out)) &&
          views_overlap(*arrays[k], *s.out))
        return false;
  }
  // A copy of memory onto itself (a[:, k] = a[:, k]) changes nothing.
  if (s.out && s.node.kind == ExprNode::Kind::Cast && s.node.dtype == s.type[0] && s.view[0] &&
      s.view[0]->shape == shape && s.view[0]->same_as(*s.out)) {
    return true;
  }
  View fresh;
  if (!s.out) {
    // NumPy's order 'K' is C order when every array operand is C-ordered.
    for (int k = 0; k < na; ++k)
      if (arrays[k]->ndim() > 1 && !arrays[k]->is_c_contiguous()) return false;
    fresh = View::fresh(s.node.dtype, shape);
  }
  const View& dst = s.out ? *s.out : fresh;
  fpe::take();
  struct Flags {  // read after the operation however it returns
    const SimpleOp& s;
    ~Flags() {
      if (const uint8_t f = fpe::take()) {
        std::vector<const char*> ops = simple_fp_ops(s);
        const View* in[2];
        int n = 0;
        bool extreme = false;
        for (int k = 0; k < s.nin; ++k) {
          if (s.view[k]) in[n++] = s.view[k];
          else extreme |= detail::extreme_scalar(s.value[k]);
        }
        if (const uint8_t real = detail::genuine(f, ops, std::span<const View* const>(in, n), extreme))
          detail::note_fp(real, std::move(ops));
      }
    }
  } flags{s};
  if (copy_or_fill(s, shape, dst)) {
    if (!s.out) *result = std::move(fresh);
    count(g_tier0_tasks);
    return true;
  }
  char* bases[3];
  int64_t strides[3][kMaxDims];
  const int64_t* sp[3] = {strides[0], strides[1], strides[2]};
  alignas(16) char scalars[2][16];
  for (int k = 0; k < s.nin; ++k) {
    if (const View* v = s.view[k]) {
      bases[k] = static_cast<char*>(v->buffer->data()) + v->offset * itemsize(v->dtype);
      broadcast_strides(*v, shape, strides[k]);
    } else {
      s.value[k].store(scalars[k]);
      bases[k] = scalars[k];
      for (size_t j = 0; j < shape.size(); ++j) strides[k][j] = 0;
    }
  }
  bases[s.nin] = static_cast<char*>(dst.buffer->data()) + dst.offset * itemsize(dst.dtype);
  broadcast_strides(dst, shape, strides[s.nin]);
  runtime::tier0_elementwise(loop, s.node, s.nin + 1, bases, sp, shape);
  if (!s.out) *result = std::move(fresh);
  count(g_tier0_tasks);
  return true;
}

// Whether tier 0 computes an operation of `elements` elements at the call.
bool runs_now(int64_t elements) {
  const Config& c = config();
  return c.tier == Tier::Eager || (c.tier == Tier::Auto && elements <= c.eager_max_elements);
}

// A dot product of two float vectors as NumPy computes it (BLAS, or its
// loop for strides BLAS cannot take), on the operands cast to the product
// type as NumPy casts them (and copied where numpy.dot copies them); false
// for other types.
bool numpy_dot(const SimpleReduce& r, Scalar* value) {
  if (r.op != ReduceOp::Sum || r.has_initial || (r.acc != DType::Float32 && r.acc != DType::Float64) ||
      r.out != r.acc || r.in->ndim() != 1 || r.in2->ndim() != 1)
    return false;
  const View* v[2] = {r.in, r.in2};
  thread_local std::vector<char> cast[2];  // (kept: no allocation per call)
  const char* base[2];
  int64_t step[2];
  const int64_t n = r.in->size(), size = itemsize(r.acc);
  for (int k = 0; k < 2; ++k) {
    const int64_t is = itemsize(v[k]->dtype);
    base[k] = static_cast<const char*>(v[k]->buffer->data()) + v[k]->offset * is;
    step[k] = v[k]->strides[0] * is;
    const bool bad = r.copy_bad_strides && n > 1 && step[k] <= 0;  // (numpy.dot copies these)
    if (v[k]->dtype == r.acc && !bad) continue;
    if (cast[k].size() < static_cast<size_t>(n * size)) cast[k].resize(static_cast<size_t>(n * size));
    char* to = cast[k].data();
    if (v[k]->dtype == r.acc) {
      for (int64_t i = 0; i < n; ++i) copy_element(to + i * size, base[k] + i * step[k], static_cast<int>(size));
    } else {
      for (int64_t i = 0; i < n; ++i) Scalar::load(v[k]->dtype, base[k] + i * step[k]).cast(r.acc).store(to + i * size);
    }
    base[k] = cast[k].data();
    step[k] = size;
  }
  double d;
  if (!ext::dot_like_numpy(r.acc, base[0], step[0], base[1], step[1], n, &d)) return false;
  *value = Scalar::of_float(r.acc, d);
  return true;
}

bool run_reduce(const SimpleReduce& r, Scalar* value) {
  const Config& c = config();
  if (c.tier == Tier::Lazy) return false;
  if (c.tier == Tier::Auto && r.in->size() > c.eager_max_elements) return false;
  if (r.in->ndim() > 16) return false;
  for (const View* v : {r.in, r.in2})
    if (v && v->buffer->pending_write()) return false;
  // An arg-reduction reports the flat (C-order) index: walk in that order.
  if ((r.op == ReduceOp::ArgMax || r.op == ReduceOp::ArgMin) && r.in->ndim() > 1 && !r.in->is_c_contiguous())
    return false;
  fpe::take();
  struct Flags {  // read after the reduction however it returns
    const SimpleReduce& r;
    ~Flags() {
      if (const uint8_t f = fpe::take()) {
        std::vector<const char*> ops{"reduce", reduce_name(r.op)};
        if (r.in2) ops = {"multiply", "reduce"};
        const View* in[2] = {r.in, r.in2};
        if (const uint8_t real = detail::genuine(f, ops, std::span<const View* const>(in, r.in2 ? 2 : 1)))
          detail::note_fp(real, std::move(ops));
      }
    }
  } flags{r};
  if (r.in2 && numpy_dot(r, value)) {
    count(g_tier0_tasks);
    return true;
  }
  runtime::tier0_reduce_all(*r.in, r.in2, r.op, r.acc, r.out, r.has_initial ? &r.initial : nullptr, value);
  count(g_tier0_tasks);
  return true;
}

}  // namespace

void detail::note_window_taken() { g_small_recorded.store(0, std::memory_order_relaxed); }

// ---------------------------------------------------------------------------
// Groups of a flush on tier 0 (tiers.h).

namespace detail {

namespace {
bool is_dead(const std::vector<int>& dead, int k) {
  for (int d : dead)
    if (d == k) return true;
  return false;
}

bool is_transcendental(const ExprNode& n) {
  if (n.kind == ExprNode::Kind::Unary) {
    switch (static_cast<UnaryOp>(n.op)) {
      case UnaryOp::Sqrt: case UnaryOp::Absolute: case UnaryOp::Negative: case UnaryOp::Positive:
      case UnaryOp::Square: case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Trunc: case UnaryOp::Rint:
      case UnaryOp::Sign: case UnaryOp::Isnan: case UnaryOp::Isinf: case UnaryOp::Isfinite: case UnaryOp::Signbit:
      case UnaryOp::LogicalNot: case UnaryOp::Invert: case UnaryOp::Reciprocal:
        return false;
      default:
        return true;
    }
  }
  if (n.kind == ExprNode::Kind::Binary) {
    switch (static_cast<BinaryOp>(n.op)) {
      case BinaryOp::Power: case BinaryOp::Arctan2: case BinaryOp::Hypot: case BinaryOp::Logaddexp:
      case BinaryOp::Logaddexp2: case BinaryOp::Fmod: case BinaryOp::Remainder: case BinaryOp::FloorDivide:
        return true;
      default:
        return false;
    }
  }
  return false;
}

// Tier 0's nanoseconds per point for one expression node (see
// interpret_estimate_ms): vectorized arithmetic a fraction of a cycle, a
// unary function of libm's kind (exp, log, sin) 0.5-0.9, binary ones
// (arctan2, hypot, logaddexp) and a float power 2-3, an integer division
// or remainder 4 (not vectorized).
double node_ns(const ExprNode& n) {
  if (!is_transcendental(n)) return 0.05;
  if (n.kind == ExprNode::Kind::Unary) return 0.7;
  switch (static_cast<BinaryOp>(n.op)) {
    case BinaryOp::FloorDivide: case BinaryOp::Remainder: case BinaryOp::Fmod:
      return is_integer(n.dtype) ? 4.0 : 2.0;
    case BinaryOp::Power:
      return 2.5;
    default:
      return 2.0;
  }
}

std::atomic<double> g_compile_ms{25.0};
}  // namespace

bool interpretable(const std::vector<Task>& window, const fusion::Group& g) {
  for (int k = g.begin; k < g.end; ++k) {
    if (is_dead(g.dead, k)) continue;
    const Task& t = window[k];
    if (t.domain.size() > 16) return false;
    if (!runtime::tier0_supports(t)) return false;
  }
  return true;
}

double interpret_estimate_ms(const std::vector<Task>& window, const fusion::Group& g) {
  return interpret_estimate_ms(window, g.begin, g.end, g.dead);
}

double interpret_estimate_ms(const std::vector<Task>& window, int begin, int end, const std::vector<int>& dead) {
  // Per task: a fixed cost, and per point its nodes (node_ns), a
  // sequential scan's dependence, and memory traffic once a task's points
  // leave the caches. Calibrated on this machine (one thread, tier 0
  // forced; ns per point and operation): a float64 chain of `z * c + y`
  // spliced into one pass 0.19-0.22, the same stored pass by pass 0.21
  // (5*10^4 points) to 0.43 (4*10^6), `sin` 0.84-0.89, `x ** 2.5` 2.7,
  // int64 `%` 4.4, a cumsum 3.5-3.9. (It was 1.0 + 0.4 per node + 4 per
  // transcendental node: 5-10x the time taken by elementwise chains, so
  // groups of a few milliseconds on tier 0 were compiled first.)
  double ns = 0;
  for (int k = begin; k < end; ++k) {
    if (is_dead(dead, k)) continue;
    const Task& t = window[k];
    double per_point = t.kind == Task::Kind::Scan ? 3.5 : 0.1;
    for (const ExprNode& n : t.expr.nodes) per_point += node_ns(n);
    const int64_t points = shape_size(t.domain);
    if (points * 8 > (int64_t{1} << 21)) per_point += 0.1;
    // (A large task runs on every thread: runtime::tier0_splits.)
    const double ways = runtime::tier0_ways(points);
    ns += 300.0 + per_point * static_cast<double>(points) / ways;
  }
  return ns * 1e-6;
}

namespace {

// Tier 0 over a group of large operations computes an elementwise
// operation whose result only one later operation of the group reads (or a
// few, when it is small), at the same points, inside that reader (numexpr's
// way): its expression is spliced into the reader's, evaluated block by block along the lines with
// the reader's, and its result never exists in memory. A chain of such
// operations (a stencil's sums, `(x - m) ** 2` summed) becomes one pass
// over its inputs, as the compiled kernel would be, with no compile. The
// values are the same, operation by operation (the same loops on the same
// operands; a result whose stored type differs from its computed type is
// not spliced). Below this many points in the group the splicing is not
// worth its analysis.
constexpr int64_t kSplicePoints = 1 << 14;

// A result read by several operations is computed again in each (no pass
// over memory for it) when the copies' nodes, (readers - 1) x its nodes,
// are at most this many: at tier 0's 0.05 ns per node and point, about
// what storing the result and reading it back costs (measured, one
// thread, median of 15: a budget of 6 against one of 16 nodes a copy --
// Mandelbrot's ten iterations over 200 x 200 1.33 -> 0.65 ms, over 1000 x
// 1000 49 -> 38 ms, its zr and zi each read twice and copied into copies;
// a stencil over 1000 x 1000 1.54 -> 1.23 ms; Rosenbrock and a variance
// unchanged; 4 or 0 slowed Rosenbrock 1.19 -> 1.41-1.47 ms).
constexpr size_t kRecomputeBudget = 6;
constexpr size_t kMaxReaders = 3;

// The window tasks that read task p's result, if p can be computed inside
// each of them: p is an elementwise map (no contraction) of the group, its
// stored type is its value's type, its buffer is seen by no Python array,
// read by p itself (an update in place) or written by another pending
// task, its readers (`cur`: as spliced so
// far) are maps or reductions of the group over the same domain reading
// exactly p's output view -- one, or a few when `pt` (p as spliced so far)
// is small enough to compute in each -- and between p and its last reader
// nothing writes what `pt` reads, nor does a reader write it. Empty: it
// cannot.
SmallVector<int, 4> splice_targets(const std::vector<Task>& window, int p, const Task& pt, int end,
                                   const std::vector<int>& dead, const std::vector<std::unique_ptr<Task>>& cur,
                                   int begin) {
  SmallVector<int, 4> readers;
  if (pt.kind != Task::Kind::Map || pt.solo) return readers;
  const Buffer* buf = pt.output.buffer.get();
  if (buf->py_live || pt.expr.nodes[pt.value()].dtype != pt.output.dtype) return readers;
  const size_t most = std::min(kMaxReaders, 1 + kRecomputeBudget / std::max<size_t>(pt.expr.nodes.size(), 1));
  for (int k = p + 1; k < static_cast<int>(window.size()); ++k) {
    if (k < end && is_dead(dead, k)) continue;
    const Task& t = window[k];
    if (t.output.buffer.get() == buf) return {};
    for (const View& v : t.inputs)
      if (v.buffer.get() == buf) {
        if (k >= end || (readers.size() == most && readers.back() != k)) return {};
        if (readers.empty() || readers.back() != k) readers.push_back(k);
      }
  }
  auto reads = [&](const Buffer* b) {
    for (const View& v : pt.inputs)
      if (v.buffer.get() == b) return true;
    return false;
  };
  if (reads(buf)) return {};  // (an update in place: its buffer is what it reads)
  for (int r : readers) {
    const Task& c = cur[r - begin] ? *cur[r - begin] : window[r];
    if (c.kind == Task::Kind::Scan || c.solo || c.domain != pt.domain || reads(c.output.buffer.get())) return {};
    for (const View& v : c.inputs)
      if (v.buffer.get() == buf && !v.same_as(pt.output)) return {};
  }
  if (!readers.empty())
    for (int k = p + 1; k < readers.back(); ++k)
      if (!is_dead(dead, k) && reads(window[k].output.buffer.get())) return {};
  return readers;
}

// The group's temporaries -- results no Python array can see, written by
// one task of the group and read only by later ones in it -- that are never
// alive at once share memory (interval colouring in program order: a
// result takes the block of one whose last reader ran before it is
// computed). A loop body of many passes (a Mandelbrot iteration's zr, zi)
// then touches a few blocks instead of one fresh block per pass: fresh
// memory costs a page fault per 4 KiB, about what the pass itself costs.
// The blocks are still all allocated before anything runs (the group runs
// whole or not at all).
template <typename Runs, typename TaskOf>
void share_temporaries(const std::vector<Task>& window, int begin, int end, Runs&& runs, TaskOf&& task,
                       std::vector<std::pair<int, int>>& shares) {
  struct Use {
    int writer = -1, writes = 0, last_read = -1;
  };
  std::unordered_map<const Buffer*, Use> use;
  for (int k = begin; k < static_cast<int>(window.size()); ++k) {
    const bool in_group = k < end;
    if (in_group && !runs(k)) continue;
    const Task& t = in_group ? task(k) : window[k];
    Use& o = use[t.output.buffer.get()];
    o.writer = k;
    ++o.writes;
    if (!in_group) o.writes = 2;  // (written after the group: not a temporary)
    for (const View& v : t.inputs) {
      Use& u = use[v.buffer.get()];
      u.last_read = in_group ? std::max(u.last_read, k) : end;  // (read after the group: not one)
    }
  }
  struct Block {
    int owner;       // the task whose output owns it
    int free_after;  // the last reader of the temporary using it now
  };
  std::vector<Block> blocks;
  for (int k = begin; k < end; ++k) {
    if (!runs(k)) continue;
    Buffer* b = task(k).output.buffer.get();
    const Use& u = use[b];
    if (b->py_live || u.writes != 1 || u.writer != k || u.last_read >= end || u.last_read <= k || b->has_memory())
      continue;
    bool shared = false;
    for (Block& x : blocks)
      if (x.free_after < k &&
          Buffer::size_class(task(x.owner).output.buffer->nbytes()) == Buffer::size_class(b->nbytes())) {
        shares.emplace_back(k, x.owner);
        x.free_after = u.last_read;
        shared = true;
        break;
      }
    if (!shared) blocks.push_back({k, u.last_read});
  }
}

}  // namespace

int interpret(const std::vector<Task>& window, int begin, int end, const std::vector<int>& dead, Tier0Memo* memo) {
  // cur[k]: task k as spliced so far (none: as recorded); spliced[k]:
  // computed inside its readers.
  std::vector<std::unique_ptr<Task>> cur;
  std::vector<bool> spliced;
  // Task k as it runs: spliced so far, or as recorded.
  auto task = [&](int k) -> const Task& { return !cur.empty() && cur[k - begin] ? *cur[k - begin] : window[k]; };
  // Splices p into its readers (all or none: a reader refused keeps p's
  // result stored).
  auto splice = [&](int p, const std::vector<int>& readers) {
    const Task& pt = task(p);
    std::vector<std::unique_ptr<Task>> spliced_readers;
    for (int r : readers) {
      auto m = std::make_unique<Task>(task(r));
      if (!fusion::substitute_producer(*m, pt)) return false;
      spliced_readers.push_back(std::move(m));
    }
    for (size_t q = 0; q < readers.size(); ++q) cur[readers[q] - begin] = std::move(spliced_readers[q]);
    cur[p - begin].reset();
    spliced[p - begin] = true;
    return true;
  };
  int64_t points = 0;
  for (int k = begin; k < end; ++k)
    if (!is_dead(dead, k)) points += shape_size(window[k].domain);
  // (The plan's windows have one structure: what the analysis decided on
  // the first holds on each. Should a splice not replay, the group is
  // analysed again.)
  bool replayed = memo && memo->analysed;
  Tier0Memo fresh;
  if (points >= kSplicePoints && end - begin > 1) {
    cur.resize(static_cast<size_t>(end - begin));
    spliced.assign(static_cast<size_t>(end - begin), false);
    if (replayed)
      for (const auto& [p, readers] : memo->splices)
        if (!splice(p, readers)) {
          replayed = false;
          for (auto& c : cur) c.reset();
          spliced.assign(spliced.size(), false);
          break;
        }
    if (!replayed)
      for (int k = begin; k < end; ++k) {
        if (is_dead(dead, k)) continue;
        const SmallVector<int, 4> found = splice_targets(window, k, task(k), end, dead, cur, begin);
        if (found.empty()) continue;
        std::vector<int> readers(found.begin(), found.end());
        if (splice(k, readers)) fresh.splices.emplace_back(k, std::move(readers));
      }
  }
  auto runs = [&](int k) { return !is_dead(dead, k) && (spliced.empty() || !spliced[k - begin]); };
  if (points >= kSplicePoints && !replayed) share_temporaries(window, begin, end, runs, task, fresh.shares);
  if (memo && !replayed) {
    fresh.analysed = true;
    *memo = std::move(fresh);
  }
  for (const auto& [k, owner] : (memo ? *memo : fresh).shares) {
    Buffer* b = task(k).output.buffer.get();
    if (!b->has_memory() && !b->py_live) b->borrow(*task(owner).output.buffer);
  }
  for (int k = begin; k < end; ++k) {
    if (!runs(k)) continue;
    task(k).output.buffer->data();
    for (const View& v : task(k).inputs) v.buffer->data();
  }
  int passes = 0;
  for (int k = begin; k < end; ++k) {
    if (!runs(k)) continue;
    if (!run_matmul_blas(task(k))) runtime::tier0_run(task(k));
    ++passes;
  }
  return passes;
}

double compile_estimate_ms() { return g_compile_ms.load(std::memory_order_relaxed); }

void note_compile_ms(double ms) {
  // A moving average over recent compiles.
  const double old = g_compile_ms.load(std::memory_order_relaxed);
  g_compile_ms.store(0.8 * old + 0.2 * ms, std::memory_order_relaxed);
}

}  // namespace detail

void install_tier0() {
  global_stream().set_run_now(&run_now);
  global_stream().set_run_simple(&run_simple);
  global_stream().set_run_reduce(&run_reduce);
  global_stream().set_runs_now(&runs_now);
}

int64_t tier0_tasks() { return g_tier0_tasks.load(std::memory_order_relaxed); }


}  // namespace nf::pipeline

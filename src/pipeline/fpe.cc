// Floating-point exceptions raised while computing (pipeline.h: FpEvent):
// the per-thread queue the bindings drain, and which operations of a group
// could have raised them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/fpe.h"
#include "core/ops.h"
#include "core/small_vector.h"
#include "pipeline/pipeline.h"

namespace nf::pipeline {

namespace {
thread_local std::vector<FpEvent> t_events;
// A program that raises in every iteration of a loop whose calls never
// reach the bindings' drain (a Python-level wrapper): the queue stays
// bounded, later events folding into the last.
constexpr size_t kMaxEvents = 64;

void add(std::vector<const char*>& out, const char* name) {
  if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
}
}  // namespace

thread_local bool detail::t_fp_pending = false;

void detail::note_fp(uint8_t flags, std::vector<const char*> ops) {
  if (!flags) return;
  if (t_events.size() >= kMaxEvents) {
    FpEvent& last = t_events.back();
    last.flags |= flags;
    for (const char* o : ops) add(last.ops, o);
  } else {
    t_events.push_back({flags, std::move(ops)});
  }
  t_fp_pending = true;
}

std::vector<FpEvent> take_fp_events() {
  detail::t_fp_pending = false;
  return std::exchange(t_events, {});
}

const char* const kPowerFloat32 = "power(float32)";

namespace {
// Where numfuse's loops raise flags NumPy's do not. NumPy's loops are
// written (and its SIMD code masked) so that only a result's own
// exception is flagged; numfuse's vectorized loops compute every branch of
// a function's implementation for every lane, and x86's ordered vector
// comparisons (cmpltpd, maxpd) signal `invalid` for a quiet NaN. Measured
// against NumPy over special values for every operation and float type
// (tests/test_errstate.py), two kinds of flag are not a result's own:
//
// - `never`: flags an operation's implementation raises for ordinary
//   values (hypot(0, 0) computes 0/0 in a lane it then discards), or that
//   NumPy never raises for it (`invalid` for exp, sinh, ...: defined
//   everywhere): never reported for it;
// - `extreme`: flags raised only when an operand is NaN, infinite or
//   beyond 1e300 in magnitude (comparisons on NaN; range reduction and
//   exponent arithmetic of exp, sin, power, ... on such values): reported
//   only when no input of the kernel holds such a value;
// - `quiet`: flags NumPy raises for no value of the operation (`invalid`
//   for ordered comparisons, maximum and minimum -- a NaN propagates
//   quietly --, sign, isinf, isfinite), which numfuse's compiled code may
//   raise even without a NaN input: LLVM assumes floating-point exceptions
//   unobserved and may compare scalars with packed ordered compares
//   (vcmpltpd) whose upper lanes hold stale register contents (a comparison
//   mask left there by the previous iteration reads as a NaN). A kernel
//   whose operations are all `quiet` for a flag never reports it.
struct Spurious {
  const char* op;
  uint8_t never, extreme, quiet = 0;
};
constexpr uint8_t kInv = fpe::Invalid, kOver = fpe::Over, kAll = fpe::Divide | fpe::Over | fpe::Under | fpe::Invalid;
const Spurious kSpurious[] = {
    {"less", 0, kInv, kInv},          {"less_equal", 0, kInv, kInv},    {"greater", 0, kInv, kInv},
    {"greater_equal", 0, kInv, kInv}, {"maximum", 0, kInv, kInv},       {"minimum", 0, kInv, kInv},
    {"fmax", 0, kInv, kInv},          {"fmin", 0, kInv, kInv},          {"sign", 0, kInv, kInv},
    {"max", 0, kInv},            {"min", 0, kInv},               {"argmax", 0, kInv},
    {"argmin", 0, kInv},         {"floor_divide", 0, kInv},      {"remainder", 0, kInv},
    {"fmod", 0, kInv},           {"hypot", kAll, 0},             {"logaddexp", kAll, 0},
    {"logaddexp2", kAll, 0},     {"arctan2", kInv, 0},           {"arccosh", kInv, kOver},
    {"power", 0, kInv | kOver},  {"exp", kInv, kOver},       {"exp2", kInv, kOver},
    {"expm1", kInv, kOver},  {"log1p", 0, kInv | kOver},     {"sin", 0, kInv | kOver},
    {"cos", 0, kInv | kOver},    {"tan", 0, kInv | kOver},       {"arcsin", 0, kInv | kOver},
    {"arccos", 0, kInv | kOver}, {"arctan", kInv, kOver},    {"sinh", kInv, kOver},
    {"cosh", kInv, kOver},   {"tanh", kInv, kOver},      {"arcsinh", kInv, kOver},
    {"arctanh", kInv, kOver}, {"cbrt", kInv, kOver},     {"erf", kInv, kOver},
    {"isinf", 0, kInv, kInv},         {"isfinite", 0, kInv, kInv},
    // libmvec's AVX2 logarithms flag `invalid` for a quiet NaN input (NumPy's
    // do not); a negative input's `invalid` is still reported when the
    // kernel's inputs hold no NaN.
    {"log", 0, kInv},            {"log2", 0, kInv},              {"log10", 0, kInv},
    // Complex operations (fp_ops_of adds this name beside the operation's):
    // glibc's complex functions and the textbook arithmetic compute through
    // infinities and NaNs of the parts where NumPy's loops special-case
    // them. (Their divide/invalid flags have one more rule: genuine.)
    {"complex", 0, kOver | fpe::Under},
    // float32's power (exp2(y * log2(x)) in float32) overflows where NumPy's
    // computes in double: its overflow is not reported.
    {kPowerFloat32, kOver, kInv | kOver},
};

const Spurious* spurious(const char* op) {
  for (const Spurious& s : kSpurious)
    if (std::strcmp(s.op, op) == 0) return &s;
  return nullptr;
}

// The flags every one of `ops` is quiet for (Spurious::quiet); none for no ops.
uint8_t quiet_flags(const std::vector<const char*>& ops) {
  uint8_t q = ops.empty() ? 0 : 0xff;
  for (const char* o : ops) {
    const Spurious* s = spurious(o);
    q &= s ? s->quiet : 0;
  }
  return q;
}

template <typename T>
bool extreme(T x) {
  constexpr T kLimit = sizeof(T) == 4 ? T(1e37) : T(1e300);
  return !(std::fabs(x) <= kLimit);  // (NaN too)
}
// Whether any element of a view satisfies pred(real, imag) (imag 0 for a
// real type), reading each element as doubles.
template <typename Pred>
bool any_value(const View& v, Pred pred) {
  const char* base = static_cast<const char*>(v.buffer->data_if_allocated());
  const int64_t is = itemsize(v.dtype);
  const int nd = static_cast<int>(v.ndim());
  SmallVector<int64_t, 8> idx(nd, 0);
  for (;;) {
    int64_t off = v.offset;
    for (int d = 0; d < nd; ++d) off += idx[d] * v.strides[d];
    const Scalar x = Scalar::load(v.dtype, base + off * is);
    if (pred(x.as_double(), x.im)) return true;
    int d = nd - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < v.shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return false;
  }
}

// Whether v holds a NaN, an infinity or a value beyond 1e300 in magnitude
// (1e37 for float32 and complex64), in either part of a complex value.
bool has_extreme(const View& v) {
  if (!is_inexact(v.dtype) || !v.buffer || !v.buffer->allocated() || v.size() == 0) return false;
  if (real_part_type(v.dtype) == DType::Float32)
    return any_value(v, [](double re, double im) { return extreme(static_cast<float>(re)) || extreme(static_cast<float>(im)); });
  return any_value(v, [](double re, double im) { return extreme(re) || extreme(im); });
}

// Whether a view holds 0 (0j), a NaN or an infinity: the only values
// for which NumPy's complex division, reciprocal and power raise divide or
// invalid. numfuse's compiled ones evaluate both of Smith's branches in
// every lane (LLVM speculates the divisions), so for them a divide/invalid
// flag with no such input is not a result's own. (An integer or bool input
// is cast to complex in the kernel: its 0 is a 0j.)
bool has_complex_special(const View& v) {
  if (!v.buffer || !v.buffer->allocated() || v.size() == 0) return true;  // (computed in the kernel: keep)
  return any_value(v, [](double re, double im) {
    return !std::isfinite(re) || !std::isfinite(im) || (re == 0 && im == 0);
  });
}

// An input outside the domain of arccosh (x < 1) or arctanh (|x| > 1): the
// `invalid` those raise for it is NumPy's (libmvec's lanes raise it for
// other values too, so `never` drops it otherwise).
bool has_domain_error(const std::vector<const char*>& ops, std::span<const View* const> inputs) {
  bool acosh = false, atanh = false;
  for (const char* o : ops) {
    acosh |= std::strcmp(o, "arccosh") == 0;
    atanh |= std::strcmp(o, "arctanh") == 0;
  }
  if (!acosh && !atanh) return false;
  for (const View* v : inputs) {
    if (!v->buffer || !v->buffer->allocated() || v->size() == 0 || is_complex(v->dtype)) continue;
    if (acosh && any_value(*v, [](double x, double) { return x < 1; })) return true;
    if (atanh && any_value(*v, [](double x, double) { return std::fabs(x) > 1; })) return true;
  }
  return false;
}

uint8_t extreme_flags(const std::vector<const char*>& ops) {
  uint8_t f = 0;
  for (const char* o : ops)
    if (const Spurious* s = spurious(o)) f |= s->extreme;
  return f;
}
}  // namespace

uint8_t detail::genuine(uint8_t flags, const std::vector<const char*>& ops, std::span<const View* const> inputs,
                        bool extreme_scalar) {
  const uint8_t raised = flags;
  for (const char* o : ops)
    if (const Spurious* s = spurious(o)) flags &= ~s->never;
  if ((raised & fpe::Invalid) && !(flags & fpe::Invalid) && has_domain_error(ops, inputs)) flags |= fpe::Invalid;
  if ((flags & (fpe::Divide | fpe::Invalid)) && std::find_if(ops.begin(), ops.end(), [](const char* o) {
        return std::strcmp(o, "complex") == 0;
      }) != ops.end()) {
    bool special = extreme_scalar;
    for (const View* v : inputs) special = special || has_complex_special(*v);
    if (!special) flags &= ~(fpe::Divide | fpe::Invalid);
  }
  flags &= ~quiet_flags(ops);
  const uint8_t extreme = extreme_flags(ops);
  if (extreme_scalar) return flags & ~extreme;
  if (flags & extreme)
    for (const View* v : inputs)
      if (has_extreme(*v)) return flags & ~extreme;
  return flags;
}

bool detail::extreme_scalar(const Scalar& c) {
  if (is_complex(c.dtype)) return extreme(c.f) || extreme(c.im) || (c.f == 0 && c.im == 0);  // (0j: see genuine)
  return is_float(c.dtype) && extreme(c.f);
}

uint8_t detail::genuine(uint8_t flags, const std::vector<const char*>& ops, const std::vector<Task>& window,
                        int begin, int end) {
  std::vector<const View*> inputs;
  bool extreme_const = false;
  for (int k = begin; k < end; ++k) {
    for (const View& v : window[k].inputs) inputs.push_back(&v);
    for (const Scalar& c : window[k].consts) extreme_const |= extreme_scalar(c);
  }
  return genuine(flags, ops, inputs, extreme_const);
}

std::vector<const char*> fp_ops_of(const Expr& e, bool reduce) {
  std::vector<const char*> out;
  for (const ExprNode& n : e.nodes) {
    switch (n.kind) {
      case ExprNode::Kind::Unary:
        add(out, unary_name(static_cast<UnaryOp>(n.op)));
        if (n.a >= 0 && is_complex(e.nodes[n.a].dtype)) {
          add(out, "complex");
          // |z| and z/|z| are hypot's (with its spurious lanes)
          const auto op = static_cast<UnaryOp>(n.op);
          if (op == UnaryOp::Absolute || op == UnaryOp::Sign) add(out, "hypot");
        }
        break;
      case ExprNode::Kind::Binary:
        add(out, binary_name(static_cast<BinaryOp>(n.op)));
        if (n.a >= 0 && is_complex(e.nodes[n.a].dtype)) add(out, "complex");
        if (static_cast<BinaryOp>(n.op) == BinaryOp::Power && n.dtype == DType::Float32) add(out, kPowerFloat32);
        break;
      case ExprNode::Kind::Cast:
        // Floats cast to integers (NaN, out of range) or to a narrower float
        // (or complex); a widening cast (float32 -> float64, -> complex128)
        // raises nothing and is not named (NumPy names the ufunc).
        if (n.a >= 0) {
          const DType from = e.nodes[n.a].dtype, to = n.dtype;
          const int64_t width = is_complex(from) ? itemsize(from) / 2 : itemsize(from);
          const int64_t to_width = is_complex(to) ? itemsize(to) / 2 : itemsize(to);
          if ((is_float(from) || is_complex(from)) && from != to &&
              (is_integer(to) || ((is_float(to) || is_complex(to)) && to_width < width)))
            add(out, "cast");
        }
        break;
      default:
        break;
    }
  }
  if (reduce) add(out, "reduce");
  return out;
}

std::vector<const char*> fp_ops_of(const std::vector<Task>& window, int begin, int end, const std::vector<int>& dead) {
  std::vector<const char*> out;
  for (int k = begin; k < end; ++k) {
    if (std::find(dead.begin(), dead.end(), k) != dead.end()) continue;
    const Task& t = window[k];
    // A contraction (matmul, dot, einsum) is NumPy's matmul ufunc.
    if (t.solo) {
      add(out, "matmul");
      continue;
    }
    for (const char* o : fp_ops_of(t.expr, t.combines())) add(out, o);
    if (t.is_reduce()) add(out, reduce_name(t.reduce));
  }
  return out;
}

}  // namespace nf::pipeline

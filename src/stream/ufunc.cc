// Ufuncs, reductions and creation routines: NumPy's type resolution and
// argument checks, then one task each (via record_map / record_reduce).
#include <atomic>
#include <cstring>
#include <cmath>
#include <mutex>
#include <optional>

#include "core/capture.h"
#include "core/error.h"
#include "stream/stream.h"

namespace nf {

namespace {

LoopResolver g_resolver;

constexpr int kWeakBase = 16;
constexpr int kDescs = 32;

struct CachedLoop {
  std::atomic<bool> valid{false};  // set (release) after `loop` is written
  Loop loop;
};
// Writers (a first resolution, set_loop_resolver) hold the mutex; readers
// only look at `valid`, so a hit costs no lock.
std::mutex g_cache_mu;
CachedLoop g_unary[static_cast<int>(UnaryOp::Count)][kDescs];
CachedLoop g_binary[static_cast<int>(BinaryOp::Count)][kDescs][kDescs];

int desc_of(const Operand& o) {
  if (o.kind == Operand::Kind::Weak) return kWeakBase + static_cast<int>(o.weak);
  return static_cast<int>(o.strong_dtype());
}

Loop resolve(CachedLoop& slot, const char* name, int nin, const int* descs) {
  if (slot.valid.load(std::memory_order_acquire)) return slot.loop;
  if (!g_resolver) throw TypeError("numfuse: no ufunc type resolver installed");
  Loop l = g_resolver(name, nin, descs);  // may throw NumPy's error
  const int limit = kNumDTypes;
  if (static_cast<int>(l.in[0]) >= limit || static_cast<int>(l.in[1]) >= limit || static_cast<int>(l.out) >= limit)
    throw FallbackRequired(std::string(name) + ": loop type not supported natively");
  std::lock_guard<std::mutex> lock(g_cache_mu);
  if (!slot.valid.load(std::memory_order_relaxed)) {
    slot.loop = l;
    slot.valid.store(true, std::memory_order_release);
  }
  return l;
}

std::string dtype_repr(DType t) { return std::string("dtype('") + dtype_name(t) + "')"; }

// A Python int converted to integer type t the way NumPy converts it (for
// ufunc operands, item assignment and fills alike): through a C long (an
// unsigned long for uint32/uint64) first -- "Python int too large to convert
// to C long" -- and then range-checked -- "Python integer 300 out of bounds
// for uint8".
Scalar python_int_in(const Operand& o, DType t) {
  const char* too_large = "Python int too large to convert to C long";
  if (o.huge) throw OverflowError(too_large);
  const bool via_ulong = t == DType::UInt32 || t == DType::UInt64;
  if (o.value.dtype == DType::UInt64) {  // above INT64_MAX
    if (!via_ulong) throw OverflowError(too_large);
    if (!uint_fits(t, o.value.u))
      throw OverflowError("Python integer " + std::to_string(o.value.u) + " out of bounds for " + dtype_name(t));
    return o.value.cast(t);
  }
  if (!int_fits(t, o.value.i))
    throw OverflowError("Python integer " + std::to_string(o.value.i) + " out of bounds for " + dtype_name(t));
  return o.value.cast(t);
}

// The value of a scalar operand in type t, checked like NumPy 2 does for
// Python scalars.
Scalar scalar_in(const Operand& o, DType t) {
  if (o.kind == Operand::Kind::Weak && o.weak == WeakKind::Int) {
    if (is_integer(t)) return python_int_in(o, t);
    if (t == DType::Bool && (o.huge || o.value.dtype == DType::UInt64))
      throw OverflowError("Python int too large to convert to C long");
  }
  if (o.huge) return Scalar::of_float(DType::Float64, o.value.f).cast(t);
  return o.value.cast(t);
}

Dims operand_shape(const Operand& o) { return o.kind == Operand::Kind::Array ? o.view().shape : Dims(); }

// Adds operand o to the map as a value of type t; returns its node.
int operand_node(MapSpec& spec, const Operand& o, DType t) {
  if (o.kind == Operand::Kind::Array) {
    int slot = static_cast<int>(spec.inputs.size());
    spec.inputs.push_back(o.view());
    return spec.expr.cast(spec.expr.input(slot, o.view().dtype), t);
  }
  int slot = static_cast<int>(spec.consts.size());
  spec.consts.push_back(scalar_in(o, t));
  return spec.expr.constant(slot, t);
}

void check_out(const View* out, DType result, const char* ufunc) {
  if (!out) return;
  if (out->readonly) throw ValueError("output array is read-only");
  if (!can_cast(result, out->dtype, Casting::SameKind))
    throw OutputCastingError(std::string("Cannot cast ufunc '") + ufunc + "' output from " + dtype_repr(result) +
                                 " to " + dtype_repr(out->dtype) + " with casting rule 'same_kind'",
                             ufunc, static_cast<int>(result), static_cast<int>(out->dtype));
}

bool is_ordering(BinaryOp op) {
  return op == BinaryOp::Equal || op == BinaryOp::NotEqual || op == BinaryOp::Less || op == BinaryOp::LessEqual ||
         op == BinaryOp::Greater || op == BinaryOp::GreaterEqual;
}

bool weak_int_fits(const Operand& o, DType t) {
  if (o.huge) return false;
  return o.value.dtype == DType::UInt64 ? uint_fits(t, o.value.u) : int_fits(t, o.value.i);
}

// One value cast to t the way NumPy's scalar (non-SIMD) conversion does it.
// It differs from the array cast only for float -> uint32 out of range,
// which the compiler's scalar code does through int64 (NaN -> 0, 5e9 ->
// 705032704).
Scalar scalar_cast(const Scalar& v, DType t) {
  if (t == DType::UInt32 && is_float(v.dtype)) {
    const double x = v.f;
    const int64_t i = x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? static_cast<int64_t>(x) : INT64_MIN;
    return Scalar::of_uint(t, static_cast<uint32_t>(i));
  }
  return v.cast(t);
}

// A scalar stored into an array of type t by item assignment (NumPy's
// PyArray_Pack): a bool array takes any value's truth; a signed integer
// array converts every scalar, NumPy's too, as Python's int() would (NaN and
// infinities raise, floats truncate) and range-checks it; an unsigned array
// does so for Python scalars but casts NumPy scalars; a float array casts.
Scalar setitem_value(const Operand& src, DType t) {
  const bool weak = src.kind == Operand::Kind::Weak;
  if (is_complex(t)) return src.value.cast(t);
  if (is_complex(src.value.dtype) && t != DType::Bool) {
    // NumPy: a Python complex does not convert to a real element; a NumPy
    // complex scalar is cast (dropping the imaginary part).
    if (weak)
      throw TypeError(std::string(is_float(t) ? "float" : "int") +
                      "() argument must be a string or a real number, not 'complex'");
    return src.value.cast(t);
  }
  if (t == DType::Bool) {
    if (!weak) return src.value.cast(t);
    if (src.weak == WeakKind::Int) return Scalar::of_bool(src.huge || src.value.u != 0);
    return src.value.cast(t);  // a float's truth: NaN is true
  }
  if (is_float(t)) return weak ? scalar_in(src, t) : src.value.cast(t);
  if (kind(t) == Kind::Unsigned && !weak) return scalar_cast(src.value, t);
  if (src.value.dtype == DType::Bool) return src.value.cast(t);
  Operand as_int;  // the value as Python's int() gives it
  as_int.kind = Operand::Kind::Weak;
  as_int.weak = WeakKind::Int;
  if (weak && src.weak == WeakKind::Int) {
    as_int = src;
  } else if (is_float(src.value.dtype) || src.huge) {
    const double f = src.value.f;  // a float, or a huge int held as a double
    if (std::isnan(f)) throw ValueError("cannot convert float NaN to integer");
    if (std::isinf(f)) throw OverflowError("cannot convert float infinity to integer");
    const double tr = std::trunc(f);
    if (tr >= -9223372036854775808.0 && tr < 9223372036854775808.0)
      as_int.value = Scalar::of_int(DType::Int64, static_cast<int64_t>(tr));
    else if (tr >= 0 && tr < 18446744073709551616.0)
      as_int.value = Scalar::of_uint(DType::UInt64, static_cast<uint64_t>(tr));
    else
      as_int.huge = true;
  } else if (kind(src.value.dtype) == Kind::Unsigned && src.value.u > static_cast<uint64_t>(INT64_MAX)) {
    as_int.value = Scalar::of_uint(DType::UInt64, src.value.u);
  } else {
    as_int.value = Scalar::of_int(DType::Int64, src.value.i);
  }
  return python_int_in(as_int, t);
}

// A scalar filling an array of type t by copyto(casting='unsafe')
// (numpy.full): Python ints are converted as for a ufunc; everything else
// is cast with C semantics (NaN into int32 is INT32_MIN).
Scalar copyto_value(const Operand& src, DType t) {
  if (src.kind == Operand::Kind::Weak && src.weak == WeakKind::Int) return scalar_in(src, t);
  return scalar_cast(src.value, t);
}

}  // namespace

void set_loop_resolver(LoopResolver r) {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  g_resolver = std::move(r);
  for (auto& row : g_unary)
    for (auto& c : row) c.valid.store(false);
  for (auto& a : g_binary)
    for (auto& row : a)
      for (auto& c : row) c.valid.store(false);
}

bool unary_now(UnaryOp op, const Operand& x, const View* out, View* result, SimpleOp* recordable) {
  int d = desc_of(x);
  Loop l = resolve(g_unary[static_cast<int>(op)][d], unary_name(op), 1, &d);
  check_out(out, l.out, unary_name(op));
  if (x.kind != Operand::Kind::Array || x.view().dtype != l.in[0] || (out && out->dtype != l.out)) return false;
  SimpleOp local;  // (built where the caller wants it, as in binary_now)
  SimpleOp& s = recordable ? *recordable : local;
  s.node.set(ExprNode::Kind::Unary, l.out, static_cast<uint8_t>(op), 0);
  s.view[0] = &x.view();
  s.type[0] = l.in[0];
  s.out = out;
  return global_stream().run_simple(s, result);
}

View record_unary(UnaryOp op, const Operand& x, const View* out) {
  View now;
  if (unary_now(op, x, out, &now)) return out ? *out : now;
  int d = desc_of(x);
  Loop l = resolve(g_unary[static_cast<int>(op)][d], unary_name(op), 1, &d);
  if (x.kind == Operand::Kind::Array && x.view().dtype == l.in[0] && (!out || out->dtype == l.out)) {
    SimpleOp s;
    s.node.set(ExprNode::Kind::Unary, l.out, static_cast<uint8_t>(op), 0);
    s.view[0] = &x.view();
    s.type[0] = l.in[0];
    s.out = out;
    if (record_simple(s, &now)) return now;
  }
  MapSpec spec;
  spec.name = unary_name(op);
  spec.operand_shapes = {operand_shape(x)};
  int a = operand_node(spec, x, l.in[0]);
  spec.expr.unary(op, a, l.out);
  spec.out = out;
  return record_map(std::move(spec));
}

bool binary_now(BinaryOp op, const Operand& a, const Operand& b, const View* out, View* result, SimpleOp* recordable) {
  int d[2] = {desc_of(a), desc_of(b)};
  Loop l = resolve(g_binary[static_cast<int>(op)][d[0]][d[1]], binary_name(op), 2, d);
  // Power's scalar exponents: NumPy's float loop special-cases 2, 0.5, -1
  // and 1 (as record_binary does); integer loops check for negative
  // exponents (record_binary's path). Comparisons with out-of-range Python
  // ints take record_binary's path too.
  if (op == BinaryOp::Power && b.kind != Operand::Kind::Array) {
    if (!is_float(l.in[0]) || l.in[0] != l.out || a.kind != Operand::Kind::Array || a.view().dtype != l.in[0] || out)
      return false;
    const double e = scalar_in(b, DType::Float64).f;
    if (e == 2.0) return unary_now(UnaryOp::Square, a, nullptr, result);
    if (e == 0.5) return unary_now(UnaryOp::Sqrt, a, nullptr, result);
    if (e == -1.0) return unary_now(UnaryOp::Reciprocal, a, nullptr, result);
    if (e == 1.0) return unary_now(UnaryOp::Positive, a, nullptr, result);
    return false;  // other exponents: record_binary's path (pow's scalar loop, as NumPy)
  }
  // Built where the caller wants it (a copy of the whole SimpleOp reloaded
  // the node just stored: a store-forwarding stall per operator). A case
  // given up on leaves no operand view there (see the header).
  SimpleOp local;
  SimpleOp& s = recordable ? *recordable : local;
  auto give_up = [&] {
    s.view[0] = s.view[1] = nullptr;
    return false;
  };
  s.nin = 2;
  if (out && out->dtype != l.out) return give_up();
  for (int k = 0; k < 2; ++k) {
    const Operand& o = k ? b : a;
    s.type[k] = l.in[k];
    if (o.kind == Operand::Kind::Array) {
      if (o.view().dtype != l.in[k]) return give_up();
      s.view[k] = &o.view();
    } else {
      if (is_ordering(op) && o.kind == Operand::Kind::Weak && o.weak == WeakKind::Int && is_integer(l.in[k]) &&
          !weak_int_fits(o, l.in[k]))
        return give_up();
      s.view[k] = nullptr;
      s.value[k] = scalar_in(o, l.in[k]);
    }
  }
  if (!s.view[0] && !s.view[1]) return false;
  try {
    check_out(out, l.out, binary_name(op));
  } catch (...) {
    give_up();
    throw;
  }
  s.node.set(ExprNode::Kind::Binary, l.out, static_cast<uint8_t>(op), 0, 1);
  s.out = out;
  return global_stream().run_simple(s, result);
}

View record_binary(BinaryOp op, const Operand& a, const Operand& b, const View* out) {
  int d[2] = {desc_of(a), desc_of(b)};
  Loop l = resolve(g_binary[static_cast<int>(op)][d[0]][d[1]], binary_name(op), 2, d);
  // (NumPy's loop raises only when it runs, so not for an empty result.)
  if (op == BinaryOp::Power && is_integer(l.in[1]) && b.kind != Operand::Kind::Array &&
      !(a.kind == Operand::Kind::Array && a.view().size() == 0)) {
    Scalar e = scalar_in(b, l.in[1]);
    // (Whether it raises depends on the exponent's value: a jit parameter's
    // is baked in, the call's must equal it.)
    if (b.value.param != 0) capture_param_dropped(b.value.param);
    if (kind(l.in[1]) == Kind::Signed && e.i < 0)
      throw ValueError("Integers to negative integer powers are not allowed.");
  }
  // NumPy's float power loop special-cases scalar exponents (2 -> square,
  // 0.5 -> sqrt, -1 -> reciprocal, 1 -> copy); the results differ from
  // pow() for signed zeros and infinities, so do the same.
  if (op == BinaryOp::Power && is_inexact(l.in[0]) && b.kind != Operand::Kind::Array && l.in[0] == l.out &&
      b.value.im == 0) {
    // (A jit parameter's value decides the operation: the call's must equal it.)
    if (b.value.param != 0) capture_param_dropped(b.value.param);
    const double e = is_complex(b.value.dtype) ? b.value.f : scalar_in(b, DType::Float64).f;
    std::optional<UnaryOp> fast;
    if (e == 2.0) fast = UnaryOp::Square;
    else if (e == 0.5) fast = UnaryOp::Sqrt;
    else if (e == -1.0) fast = UnaryOp::Reciprocal;
    else if (e == 1.0) fast = UnaryOp::Positive;
    if (fast) {
      check_out(out, l.out, binary_name(op));
      MapSpec spec;
      spec.name = binary_name(op);
      spec.operand_shapes = {operand_shape(a), operand_shape(b)};
      int x = operand_node(spec, a, l.in[0]);
      spec.expr.unary(*fast, x, l.out);
      spec.out = out;
      return record_map(std::move(spec));
    }
  }
  // NumPy 2 compares integer arrays with out-of-range Python ints exactly:
  // compare in the array's own type against the value as int64 / uint64
  // (mixed-signedness comparisons are exact in codegen), or against +-inf
  // when the value is beyond 64 bits.
  Operand big;
  const Operand* pa = &a;
  const Operand* pb = &b;
  if (is_ordering(op)) {
    for (int side = 0; side < 2; ++side) {
      const Operand& w = side ? b : a;
      const Operand& other = side ? a : b;
      if (w.kind == Operand::Kind::Weak && w.weak == WeakKind::Int && is_integer(l.in[side]) &&
          is_integer(other.strong_dtype()) && !weak_int_fits(w, l.in[side])) {
        if (w.huge) {
          big = w;
          big.huge = false;
          big.weak = WeakKind::Float;
          big.value = Scalar::of_float(DType::Float64, w.value.f > 0 ? HUGE_VAL : -HUGE_VAL);
          (side ? pb : pa) = &big;
          l.in[0] = l.in[1] = DType::Float64;
        } else {
          l.in[side] = w.value.dtype;  // Int64 or UInt64
          l.in[1 - side] = other.strong_dtype();
        }
      }
    }
  }
  {
    // Tier 0's direct form: arrays of the loop's types, or scalars (converted
    // before the output check, as NumPy does).
    SimpleOp s;
    s.nin = 2;
    bool simple = !out || out->dtype == l.out;
    for (int k = 0; k < 2 && simple; ++k) {
      const Operand& o = k ? *pb : *pa;
      s.type[k] = l.in[k];
      if (o.kind == Operand::Kind::Array) {
        simple = o.view().dtype == l.in[k];
        s.view[k] = &o.view();
      } else {
        s.value[k] = scalar_in(o, l.in[k]);
      }
    }
    if (simple && (s.view[0] || s.view[1])) {
      check_out(out, l.out, binary_name(op));
      s.node.set(ExprNode::Kind::Binary, l.out, static_cast<uint8_t>(op), 0, 1);
      s.out = out;
      View r;
      if (global_stream().run_simple(s, &r)) return out ? *out : r;
      if (record_simple(s, &r)) return r;
    }
  }
  MapSpec spec;
  spec.name = binary_name(op);
  spec.operand_shapes = {operand_shape(a), operand_shape(b)};
  // Scalars are converted before the output check, as NumPy does.
  int x = operand_node(spec, *pa, l.in[0]);
  int y = operand_node(spec, *pb, l.in[1]);
  check_out(out, l.out, binary_name(op));
  spec.expr.binary(op, x, y, l.out);
  spec.out = out;
  return record_map(std::move(spec));
}

View record_where(const Operand& cond, const Operand& x, const Operand& y) {
  DType rt;
  const bool wx = x.kind == Operand::Kind::Weak, wy = y.kind == Operand::Kind::Weak;
  if (wx && wy) rt = promote(weak_default(x.weak), weak_default(y.weak));
  else if (wx) rt = promote_weak(y.strong_dtype(), x.weak);
  else if (wy) rt = promote_weak(x.strong_dtype(), y.weak);
  else rt = promote(x.strong_dtype(), y.strong_dtype());
  MapSpec spec;
  spec.name = "where";
  spec.operand_shapes = {operand_shape(cond), operand_shape(x), operand_shape(y)};
  // numpy.where is not a ufunc: Python scalars are cast to the result type
  // without range checks (np.where(c, int8_array, 300) wraps 300 to 44).
  auto node = [&](const Operand& o, DType t) {
    if (o.kind == Operand::Kind::Array) return operand_node(spec, o, t);
    // NumPy converts the value to an array first: an int beyond 64 bits has
    // no integer type to go to.
    if (o.huge && !is_inexact(t)) throw OverflowError("Python int too large to convert to C long");
    int slot = static_cast<int>(spec.consts.size());
    spec.consts.push_back(o.huge ? Scalar::of_float(DType::Float64, o.value.f).cast(t) : o.value.cast(t));
    return spec.expr.constant(slot, t);
  };
  int c = node(cond, DType::Bool);
  int a = node(x, rt);
  int b = node(y, rt);
  spec.expr.select(c, a, b);
  return record_map(std::move(spec));
}

namespace {
// dst[...] = src as tier 0's direct form; the op points at the array
// operand's view, or at `value`, which holds it reshaped where its shape is
// not dst's.
SimpleOp assign_op(const View& dst, const Operand& src, View& value) {
  if (dst.readonly) throw ValueError("assignment destination is read-only");
  SimpleOp s;
  s.node.set(ExprNode::Kind::Cast, dst.dtype, 0, 0);
  s.out = &dst;
  if (src.kind == Operand::Kind::Array && src.view().shape == dst.shape) {
    s.view[0] = &src.view();  // (as it is: no copy of the view)
    s.type[0] = src.view().dtype;
  } else if (src.kind == Operand::Kind::Array) {
    // NumPy drops leading length-1 axes of the value (a[1] = ones((1, 4))).
    value = src.view();
    while (value.ndim() > dst.ndim() && value.shape[0] == 1) {
      value.shape.erase(0);
      value.strides.erase(0);
    }
    // NumPy's message for assignment broadcasting failures.
    try {
      broadcast_view(value, dst.shape);
    } catch (const ValueError&) {
      throw ValueError("could not broadcast input array from shape " + shape_str(src.view().shape) +
                       " into shape " + shape_str(dst.shape));
    }
    s.view[0] = &value;
    s.type[0] = value.dtype;
  } else {
    s.value[0] = setitem_value(src, dst.dtype);
    s.type[0] = dst.dtype;
  }
  return s;
}
}  // namespace

bool assign_now(const View& dst, const Operand& src) {
  View value;
  const SimpleOp s = assign_op(dst, src, value);
  View done;
  return global_stream().run_simple(s, &done);
}

void record_assign(const View& dst, const Operand& src) {
  View value;
  SimpleOp s = assign_op(dst, src, value);
  View done;
  if (global_stream().run_simple(s, &done) || record_simple(s, &done)) return;
  MapSpec spec;
  spec.name = "__setitem__";
  if (src.kind == Operand::Kind::Array) {
    const View& in = *s.view[0];  // (`value`, or the operand's own view)
    int x = spec.expr.input(0, in.dtype);
    spec.inputs.push_back(in);
    spec.expr.cast(x, dst.dtype);
  } else {
    spec.consts.push_back(s.value[0]);
    spec.expr.constant(0, dst.dtype);
  }
  spec.out = &dst;
  spec.shape_hint = dst.shape;
  spec.has_shape_hint = true;
  record_map(std::move(spec));
}

Scalar element_value(const Operand& src, DType t) { return setitem_value(src, t); }

void write_element(const View& dst, const Operand& src) {
  if (dst.readonly) throw ValueError("assignment destination is read-only");
  const Scalar s = setitem_value(src, dst.dtype);
  s.store(static_cast<char*>(dst.buffer->data()) + dst.offset * itemsize(dst.dtype));
}

View record_astype(const View& v, DType to, CastLayout layout) {
  View out;
  if (layout == CastLayout::F && v.ndim() > 1) {
    std::vector<int> f_order(v.ndim());  // Fortran order: the last axis outermost
    for (size_t k = 0; k < v.ndim(); ++k) f_order[k] = static_cast<int>(v.ndim() - 1 - k);
    out = View::fresh_in_order(to, v.shape, f_order);
  } else {
    out = layout == CastLayout::C || layout == CastLayout::F ? View::fresh(to, v.shape)
          : layout == CastLayout::Keep                      ? alloc_new_like(to, v)
                                                            : alloc_like_order(to, v.shape, std::span<const View>(&v, 1));
  }
  {
    SimpleOp s;
    s.node.set(ExprNode::Kind::Cast, to, 0, 0);
    s.view[0] = &v;
    s.type[0] = v.dtype;
    s.out = &out;
    View done;
    if (global_stream().run_simple(s, &done)) return out;
  }
  MapSpec spec;
  spec.name = "astype";
  int x = spec.expr.input(0, v.dtype);
  spec.inputs.push_back(v);
  spec.expr.cast(x, to);
  spec.out = &out;
  record_map(std::move(spec));
  return out;
}

namespace {
// NumPy's result and accumulation types of a reduction.
void reduction_types(const View& in, const ReductionArgs& a, DType* out_type, DType* acc_type) {
  const DType t = in.dtype;
  DType out_t, acc_t;
  switch (a.op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
      if (a.has_dtype) {
        out_t = a.dtype;
      } else if (kind(t) == Kind::Bool || (kind(t) == Kind::Signed && itemsize(t) < 8)) {
        out_t = DType::Int64;
      } else if (kind(t) == Kind::Unsigned && itemsize(t) < 8) {
        out_t = DType::UInt64;
      } else {
        out_t = t;
      }
      // In the output type, as NumPy does (a float32 sum overflows to inf
      // where NumPy's does; blocked summation keeps it accurate).
      acc_t = out_t;
      if (out_t == DType::Bool) acc_t = DType::Bool;
      break;
    case ReduceOp::Max:
    case ReduceOp::Min:
      out_t = a.has_dtype ? a.dtype : t;
      acc_t = out_t;
      break;
    case ReduceOp::Any:
    case ReduceOp::All:
      out_t = DType::Bool;
      acc_t = DType::Bool;
      break;
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      // (NumPy's lexicographic complex arg-reductions are not compiled)
      if (is_complex(t)) throw FallbackRequired("argmax/argmin of complex values");
      out_t = DType::Int64;
      acc_t = t;
      break;
    default:
      throw ValueError("unknown reduction");
  }
  *out_type = out_t;
  *acc_type = acc_t;
}
}  // namespace

bool reduce_to_scalar(const View& in, const ReductionArgs& a, Scalar* value) {
  if (a.out || a.keepdims || in.size() == 0 || static_cast<int>(a.axes.size()) != in.ndim()) return false;
  SimpleReduce r;
  r.in = &in;
  r.op = a.op;
  reduction_types(in, a, &r.out, &r.acc);
  if (a.has_initial) {
    r.has_initial = true;
    r.initial = scalar_in(a.initial, r.acc);
  }
  return global_stream().run_reduce(r, value);
}

bool dot_to_scalar(const View& a, const View& b, Scalar* value, bool numpy_dot) {
  if (a.ndim() != 1 || b.ndim() != 1 || a.shape[0] != b.shape[0] || a.size() == 0) return false;
  SimpleReduce r;
  r.in = &a;
  r.in2 = &b;
  r.acc = r.out = promote(a.dtype, b.dtype);
  r.op = r.acc == DType::Bool ? ReduceOp::Any : ReduceOp::Sum;
  r.copy_bad_strides = numpy_dot;
  return global_stream().run_reduce(r, value);
}

View record_reduction(const View& in, const ReductionArgs& a) {
  ReduceSpec spec;
  spec.name = reduce_name(a.op);
  spec.input = in;
  spec.axes = a.axes;
  spec.keepdims = a.keepdims;
  spec.op = a.op;
  spec.out = a.out;
  const DType t = in.dtype;
  DType out_t, acc_t;
  reduction_types(in, a, &out_t, &acc_t);
  if (a.out) {
    if (a.out->readonly) throw ValueError("output array is read-only");
    if ((a.op == ReduceOp::ArgMax || a.op == ReduceOp::ArgMin) && a.out->dtype != DType::Int64)
      throw TypeError("Cannot cast array data from " + dtype_repr(DType::Int64) + " to " +
                      dtype_repr(a.out->dtype) + " according to the rule 'safe'");
  }
  spec.out_dtype = out_t;
  spec.acc_dtype = acc_t;
  int x = spec.value.input(0, t);
  if (a.op == ReduceOp::Any || a.op == ReduceOp::All) spec.value.cast(x, DType::Bool);
  else spec.value.cast(x, acc_t);
  if (a.has_initial) {
    spec.has_initial = true;
    spec.initial = scalar_in(a.initial, acc_t);
  }
  return record_reduce(std::move(spec));
}

bool fill_now(const View& out, const Scalar& value) {
  if (!global_stream().runs_now(out.size()) || !out.is_c_contiguous() || out.buffer->pending()) return false;
  if (out.size() == 0) return true;
  const int is = itemsize(out.dtype);
  alignas(16) char bytes[16];
  value.cast(out.dtype).store(bytes);
  fill_bytes(static_cast<char*>(out.buffer->data()) + out.offset * is, out.size() * is, bytes, is);
  return true;
}

View record_full(DType t, const Dims& shape, const Operand& value) {
  for (int64_t e : shape)
    if (e < 0) throw ValueError("negative dimensions are not allowed");
  View out = View::fresh(t, shape);
  if (value.kind == Operand::Kind::Array) {
    record_assign(out, value);
    return out;
  }
  Scalar v = copyto_value(value, t);
  {
    SimpleOp s;
    s.node.set(ExprNode::Kind::Cast, t, 0, 0);
    s.value[0] = v;
    s.type[0] = t;
    s.out = &out;
    View done;
    if (global_stream().run_simple(s, &done)) return out;
  }
  MapSpec spec;
  spec.name = "full";
  spec.consts.push_back(v);
  spec.expr.constant(0, t);
  spec.out = &out;
  spec.shape_hint = shape;
  spec.has_shape_hint = true;
  record_map(std::move(spec));
  return out;
}

namespace {
// arange computed at the call: the values record_arange's task computes.
void fill_arange(const View& out, int64_t n, DType ft, double s, double delta, bool int_path, int64_t istart,
                 int64_t istep) {
  char* p = static_cast<char*>(out.buffer->data()) + out.offset * itemsize(out.dtype);
  const DType t = out.dtype;
  if (int_path && t == DType::Int64) {
    auto* q = reinterpret_cast<int64_t*>(p);
    uint64_t v = static_cast<uint64_t>(istart);  // (wrapping, as the kernels' int64 arithmetic)
    for (int64_t i = 0; i < n; ++i, v += static_cast<uint64_t>(istep)) q[i] = static_cast<int64_t>(v);
    return;
  }
  if (!int_path && t == DType::Float64) {
    auto* q = reinterpret_cast<double*>(p);
    for (int64_t i = 0; i < n; ++i) q[i] = s + static_cast<double>(i) * delta;
    return;
  }
  if (!int_path && t == DType::Float32) {
    auto* q = reinterpret_cast<float*>(p);
    const float sf = static_cast<float>(s), df = static_cast<float>(delta);
    for (int64_t i = 0; i < n; ++i) q[i] = sf + static_cast<float>(i) * df;
    return;
  }
  const int64_t size = itemsize(t);
  for (int64_t i = 0; i < n; ++i) {
    Scalar v;
    if (int_path) {
      v = Scalar::of_int(DType::Int64, static_cast<int64_t>(static_cast<uint64_t>(istart) +
                                                           static_cast<uint64_t>(i) * static_cast<uint64_t>(istep)));
    } else if (ft == DType::Float32) {
      v = Scalar::of_float(DType::Float32, static_cast<double>(static_cast<float>(s) +
                                                               static_cast<float>(i) * static_cast<float>(delta)));
    } else {
      v = Scalar::of_float(DType::Float64, s + static_cast<double>(i) * delta);
    }
    v.cast(t).store(p + i * size);
  }
}
}  // namespace

View record_arange(double start, double step, int64_t n, DType t, bool integral, int64_t istart, int64_t istep) {
  Dims shape{std::max<int64_t>(n, 0)};
  View out = View::fresh(t, shape);
  const bool int_path = integral && !is_float(t);
  // Integers: start + i*step in int64, then the target type (wrapping like
  // NumPy). Floats: NumPy fills start + i*delta with delta = (start + step)
  // - start, both computed in the target type.
  const DType ft = is_float(t) ? t : DType::Float64;
  const Scalar s = Scalar::of_float(DType::Float64, start).cast(ft);
  const Scalar next = Scalar::of_float(DType::Float64, start + step).cast(ft);
  const double delta = ft == DType::Float32 ? static_cast<double>(static_cast<float>(next.f) - static_cast<float>(s.f))
                                            : next.f - s.f;
  if (global_stream().runs_now(shape[0])) {
    fill_arange(out, shape[0], ft, s.f, delta, int_path, istart, istep);
    return out;
  }
  MapSpec spec;
  spec.name = "arange";
  IndexFn f;
  f.strides = Dims{1};
  spec.indices.push_back(f);
  int i = spec.expr.index(0);
  if (int_path) {
    spec.consts.push_back(Scalar::of_int(DType::Int64, istart));
    spec.consts.push_back(Scalar::of_int(DType::Int64, istep));
    int sn = spec.expr.constant(0, DType::Int64);
    int dn = spec.expr.constant(1, DType::Int64);
    int v = spec.expr.binary(BinaryOp::Add, sn, spec.expr.binary(BinaryOp::Multiply, i, dn, DType::Int64), DType::Int64);
    spec.expr.cast(v, t);
  } else {
    spec.consts.push_back(s);
    spec.consts.push_back(Scalar::of_float(ft, delta));
    int sn = spec.expr.constant(0, ft);
    int dn = spec.expr.constant(1, ft);
    int v = spec.expr.binary(BinaryOp::Add, sn,
                             spec.expr.binary(BinaryOp::Multiply, spec.expr.cast(i, ft), dn, ft), ft);
    spec.expr.cast(v, t);
  }
  spec.out = &out;
  spec.shape_hint = shape;
  spec.has_shape_hint = true;
  record_map(std::move(spec));
  return out;
}

View record_eye(int64_t n, int64_t m, int64_t k, DType t) {
  if (n < 0 || m < 0) throw ValueError("negative dimensions are not allowed");
  Dims shape{n, m};
  View out = View::fresh(t, shape);
  MapSpec spec;
  spec.name = "eye";
  IndexFn f;  // j - i - k
  f.offset = -k;
  f.strides = Dims{-1, 1};
  spec.indices.push_back(f);
  int i = spec.expr.index(0);
  spec.consts.push_back(Scalar::of_int(DType::Int64, 0));
  int z = spec.expr.constant(0, DType::Int64);
  int eq = spec.expr.binary(BinaryOp::Equal, i, z, DType::Bool);
  spec.expr.cast(eq, t);
  spec.out = &out;
  spec.shape_hint = shape;
  spec.has_shape_hint = true;
  record_map(std::move(spec));
  return out;
}

}  // namespace nf

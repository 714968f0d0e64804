#include "core/dtype.h"

#include "core/capture.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace nf {

namespace {
struct Info {
  const char* name;
  char code;
  const char* ctype;
  int size;
  Kind kind;
};
constexpr Info kInfo[kNumDTypes] = {
    {"bool", '?', "_Bool", 1, Kind::Bool},
    {"int8", 'b', "int8_t", 1, Kind::Signed},
    {"int16", 'h', "int16_t", 2, Kind::Signed},
    {"int32", 'i', "int32_t", 4, Kind::Signed},
    {"int64", 'l', "int64_t", 8, Kind::Signed},
    {"uint8", 'B', "uint8_t", 1, Kind::Unsigned},
    {"uint16", 'H', "uint16_t", 2, Kind::Unsigned},
    {"uint32", 'I', "uint32_t", 4, Kind::Unsigned},
    {"uint64", 'L', "uint64_t", 8, Kind::Unsigned},
    {"float32", 'f', "float", 4, Kind::Float},
    {"float64", 'd', "double", 8, Kind::Float},
    {"complex64", 'F', "_Complex float", 8, Kind::Complex},
    {"complex128", 'D', "_Complex double", 16, Kind::Complex},
};
const Info& info(DType t) { return kInfo[static_cast<int>(t)]; }
constexpr bool inline_tables_agree() {
  for (int t = 0; t < kNumDTypes; ++t)
    if (kInfo[t].size != itemsize(static_cast<DType>(t)) || kInfo[t].kind != kind(static_cast<DType>(t))) return false;
  return true;
}
static_assert(inline_tables_agree(), "dtype.h's itemsize/kind tables must match kInfo");

DType signed_of_bits(int bits) {
  switch (bits) {
    case 8: return DType::Int8;
    case 16: return DType::Int16;
    case 32: return DType::Int32;
    default: return DType::Int64;
  }
}
int bits(DType t) { return itemsize(t) * 8; }

// numpy.result_type of two real types (promote's real half).
DType promote_real(DType a, DType b);
}  // namespace

const char* dtype_name(DType t) { return info(t).name; }
char dtype_char(DType t) { return info(t).code; }
const char* c_type(DType t) { return info(t).ctype; }

std::optional<DType> dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  return std::nullopt;
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_complex(a) || is_complex(b)) {
    // The complex type whose parts hold both: the real type the parts
    // promote to with the other operand (complex64 + int16 -> complex64,
    // complex64 + int32 or float64 -> complex128).
    const DType pa = real_part_type(a), pb = real_part_type(b);
    DType r = promote_real(pa, pb);
    if (!is_float(r)) r = DType::Float64;  // (bool/ints with complex: only via the parts above)
    return complex_of(r);
  }
  return promote_real(a, b);
}

namespace {
DType promote_real(DType a, DType b) {
  if (a == b) return a;
  Kind ka = kind(a), kb = kind(b);
  if (ka == Kind::Bool) return b;
  if (kb == Kind::Bool) return a;
  if (ka == Kind::Float && kb == Kind::Float) return bits(a) >= bits(b) ? a : b;
  if (ka == Kind::Float || kb == Kind::Float) {
    DType f = ka == Kind::Float ? a : b;
    DType i = ka == Kind::Float ? b : a;
    // float32 holds every int8/int16/uint8/uint16 exactly; wider ints need float64.
    if (f == DType::Float32 && bits(i) <= 16) return DType::Float32;
    return DType::Float64;
  }
  if (ka == kb) return bits(a) >= bits(b) ? a : b;
  DType s = ka == Kind::Signed ? a : b;
  DType u = ka == Kind::Signed ? b : a;
  if (bits(u) < bits(s)) return s;
  if (bits(u) < 64) return signed_of_bits(2 * bits(u));
  return DType::Float64;
}
}  // namespace

DType promote_weak(DType a, WeakKind k) {
  switch (k) {
    case WeakKind::Bool:
      return a;
    case WeakKind::Int:
      return a == DType::Bool ? DType::Int64 : a;
    case WeakKind::Float:
      return is_inexact(a) ? a : DType::Float64;
    case WeakKind::Complex:
      if (is_complex(a)) return a;
      return a == DType::Float32 ? DType::Complex64 : DType::Complex128;
  }
  return a;
}

DType weak_default(WeakKind k) {
  switch (k) {
    case WeakKind::Bool: return DType::Bool;
    case WeakKind::Int: return DType::Int64;
    case WeakKind::Float: return DType::Float64;
    case WeakKind::Complex: return DType::Complex128;
  }
  return DType::Float64;
}

bool can_cast(DType from, DType to, Casting casting) {
  switch (casting) {
    case Casting::No:
    case Casting::Equiv:
      return from == to;
    case Casting::Safe:
      return promote(from, to) == to;
    case Casting::SameKind: {
      if (promote(from, to) == to) return true;
      Kind kf = kind(from), kt = kind(to);
      if (kf == Kind::Bool) return true;
      if (kf == Kind::Complex) return kt == Kind::Complex;
      if (kf == Kind::Float) return kt == Kind::Float || kt == Kind::Complex;
      if (kf == Kind::Signed) return kt == Kind::Signed || kt == Kind::Float || kt == Kind::Complex;
      return kt != Kind::Bool;  // unsigned -> any integer, float or complex
    }
    case Casting::Unsafe:
      return true;
  }
  return false;
}

bool int_fits(DType t, int64_t v) {
  switch (t) {
    case DType::Bool: return v == 0 || v == 1;
    case DType::Int8: return v >= INT8_MIN && v <= INT8_MAX;
    case DType::Int16: return v >= INT16_MIN && v <= INT16_MAX;
    case DType::Int32: return v >= INT32_MIN && v <= INT32_MAX;
    case DType::Int64: return true;
    case DType::UInt8: return v >= 0 && v <= UINT8_MAX;
    case DType::UInt16: return v >= 0 && v <= UINT16_MAX;
    case DType::UInt32: return v >= 0 && v <= UINT32_MAX;
    case DType::UInt64: return v >= 0;
    default: return true;
  }
}

bool uint_fits(DType t, uint64_t v) {
  if (t == DType::UInt64 || is_inexact(t)) return true;
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  return int_fits(t, static_cast<int64_t>(v));
}

namespace {
// Float -> integer conversion as x86 hardware (and therefore NumPy) does it:
// out-of-range and NaN give the "integer indefinite" value, never UB.
int64_t f2i64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(x);
}
int32_t f2i32(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(x);
}
uint64_t f2u64(double x) {
  if (x >= 18446744073709551616.0) return 0;
  if (x >= 9223372036854775808.0) return static_cast<uint64_t>(x);
  return static_cast<uint64_t>(f2i64(x));
}
uint32_t f2u32(double x) {
  if (x >= 4294967296.0) return 0;
  if (x >= 2147483648.0) return static_cast<uint32_t>(static_cast<int64_t>(x));
  return static_cast<uint32_t>(f2i32(x));
}
}  // namespace

void Scalar::store(void* p) const {
  switch (dtype) {
    case DType::Bool: {
      const uint8_t b = i != 0;
      std::memcpy(p, &b, 1);
      break;
    }
    case DType::Float32: {
      const float x = static_cast<float>(f);
      std::memcpy(p, &x, sizeof x);
      break;
    }
    case DType::Float64:
      std::memcpy(p, &f, sizeof f);
      break;
    case DType::Complex64: {
      const float x[2] = {static_cast<float>(f), static_cast<float>(im)};
      std::memcpy(p, x, sizeof x);
      break;
    }
    case DType::Complex128: {
      const double x[2] = {f, im};
      std::memcpy(p, x, sizeof x);
      break;
    }
    default:  // integers: the value's low bytes (x86-64 is little-endian)
      copy_element(p, &u, itemsize(dtype));
      break;
  }
}

Scalar Scalar::load(DType t, const void* p) {
  Scalar r;
  r.dtype = t;
  switch (t) {
    case DType::Bool: {
      uint8_t b;
      std::memcpy(&b, p, 1);
      r.i = b != 0;
      break;
    }
    case DType::Float32: {
      float x;
      std::memcpy(&x, p, sizeof x);
      r.f = x;
      break;
    }
    case DType::Float64:
      std::memcpy(&r.f, p, sizeof r.f);
      break;
    case DType::Complex64: {
      float x[2];
      std::memcpy(x, p, sizeof x);
      r.f = x[0];
      r.im = x[1];
      break;
    }
    case DType::Complex128: {
      double x[2];
      std::memcpy(x, p, sizeof x);
      r.f = x[0];
      r.im = x[1];
      break;
    }
    case DType::Int8: { int8_t x; std::memcpy(&x, p, 1); r.i = x; break; }
    case DType::Int16: { int16_t x; std::memcpy(&x, p, 2); r.i = x; break; }
    case DType::Int32: { int32_t x; std::memcpy(&x, p, 4); r.i = x; break; }
    case DType::Int64: std::memcpy(&r.i, p, 8); break;
    case DType::UInt8: { uint8_t x; std::memcpy(&x, p, 1); r.u = x; break; }
    case DType::UInt16: { uint16_t x; std::memcpy(&x, p, 2); r.u = x; break; }
    case DType::UInt32: { uint32_t x; std::memcpy(&x, p, 4); r.u = x; break; }
    case DType::UInt64: std::memcpy(&r.u, p, 8); break;
  }
  return r;
}

Scalar Scalar::cast(DType to) const {
  Scalar r;
  r.dtype = to;
  Kind kf = kind(dtype);
  if (param != 0) {
    // A float parameter stays one as a float; an int one as an integer or
    // a float (the run checks that its value fits the integer type).
    const Kind kt = kind(to);
    if ((kf == Kind::Float && kt == Kind::Float) ||
        ((kf == Kind::Signed || kf == Kind::Unsigned) && (kt == Kind::Signed || kt == Kind::Unsigned || kt == Kind::Float)))
      r.param = param;
    else
      capture_param_dropped(param);
  }
  // Complex to real takes the real part (NumPy's ComplexWarning is the
  // caller's to give).
  if (kf == Kind::Complex && kind(to) != Kind::Complex && kind(to) != Kind::Bool) {
    Scalar re = of_float(DType::Float64, f);
    return re.cast(to);
  }
  switch (kind(to)) {
    case Kind::Bool:
      r.i = truthy() ? 1 : 0;
      break;
    case Kind::Complex: {
      if (kf == Kind::Complex) {
        r.f = f;
        r.im = im;
      } else {
        r.f = cast(DType::Float64).f;
      }
      if (to == DType::Complex64) {
        r.f = static_cast<double>(static_cast<float>(r.f));
        r.im = static_cast<double>(static_cast<float>(r.im));
      }
      break;
    }
    case Kind::Float: {
      double v = kf == Kind::Float ? f
                 : kf == Kind::Unsigned ? static_cast<double>(u)
                                        : static_cast<double>(i);
      r.f = to == DType::Float32 ? static_cast<double>(static_cast<float>(v)) : v;
      break;
    }
    case Kind::Signed:
    case Kind::Unsigned: {
      uint64_t bitsv;
      if (kf == Kind::Float) {
        if (to == DType::UInt64) bitsv = f2u64(f);
        else if (to == DType::UInt32) bitsv = f2u32(f);
        else if (itemsize(to) <= 4 && kind(to) == Kind::Signed) bitsv = static_cast<uint64_t>(static_cast<int64_t>(f2i32(f)));
        else bitsv = static_cast<uint64_t>(f2i64(f));
      } else {
        bitsv = u;
      }
      // Truncate to the target width, sign- or zero-extend back to 64 bits.
      switch (to) {
        case DType::Int8: r.i = static_cast<int8_t>(bitsv); break;
        case DType::Int16: r.i = static_cast<int16_t>(bitsv); break;
        case DType::Int32: r.i = static_cast<int32_t>(bitsv); break;
        case DType::Int64: r.i = static_cast<int64_t>(bitsv); break;
        case DType::UInt8: r.u = static_cast<uint8_t>(bitsv); break;
        case DType::UInt16: r.u = static_cast<uint16_t>(bitsv); break;
        case DType::UInt32: r.u = static_cast<uint32_t>(bitsv); break;
        default: r.u = bitsv; break;
      }
      break;
    }
  }
  return r;
}

double Scalar::as_double() const {
  switch (kind(dtype)) {
    case Kind::Float:
    case Kind::Complex: return f;
    case Kind::Unsigned: return static_cast<double>(u);
    default: return static_cast<double>(i);
  }
}

int64_t Scalar::as_int64() const {
  if (is_inexact(dtype)) return f2i64(f);
  return i;
}

bool Scalar::truthy() const {
  if (kind(dtype) == Kind::Float) return f != 0.0;  // NaN is truthy, as in NumPy
  if (kind(dtype) == Kind::Complex) return f != 0.0 || im != 0.0;
  return u != 0;
}

}  // namespace nf

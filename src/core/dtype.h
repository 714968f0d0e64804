// Element types and NumPy 2 type promotion.
//
// numfuse computes natively on the eleven fixed-size real types and the two
// complex types below; every other NumPy dtype (float16, longdouble, strings,
// objects) goes to the NumPy fallback. Promotion follows NEP 50: arrays and NumPy scalars are "strong",
// Python bool/int/float scalars are "weak" and take the array's type when the
// kinds allow it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nf {

enum class DType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float32,
  Float64,
  Complex64,   // two float32 (real, imag), as C's float _Complex
  Complex128,  // two float64
};
inline constexpr int kNumDTypes = 13;

enum class Kind : uint8_t { Bool, Signed, Unsigned, Float, Complex };

// The kind of a weak (Python) scalar operand.
enum class WeakKind : uint8_t { Bool, Int, Float, Complex };

// (Inline: asked on every view of every task, by recording, fusion's
// signatures and rebinding.)
constexpr int itemsize(DType t) {
  constexpr int8_t kSize[kNumDTypes] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16};
  return kSize[static_cast<int>(t)];
}
// Copies one element of `size` bytes (1, 2, 4, 8 or 16) with one fixed-size
// move. (A memcpy whose size the compiler only knows to be small can be
// expanded into `rep movs`, whose start-up costs more than copying a whole
// small vector element by element: numpy.dot's copy of a reversed slice
// became 2.3x slower that way.)
inline void copy_element(void* to, const void* from, int size) {
  switch (size) {
    case 1: __builtin_memcpy(to, from, 1); break;
    case 2: __builtin_memcpy(to, from, 2); break;
    case 4: __builtin_memcpy(to, from, 4); break;
    case 16: __builtin_memcpy(to, from, 16); break;
    default: __builtin_memcpy(to, from, 8); break;
  }
}
// Fills `bytes` bytes at `to` with copies of the `size`-byte element at
// `value` (a memset when its bytes are all zero, else doubling copies).
inline void fill_bytes(char* to, int64_t bytes, const char* value, int size) {
  bool zero = true;
  for (int k = 0; k < size; ++k) zero &= value[k] == 0;
  if (zero) {
    __builtin_memset(to, 0, static_cast<size_t>(bytes));
    return;
  }
  copy_element(to, value, size);
  for (int64_t done = size; done < bytes;) {
    const int64_t k = done < bytes - done ? done : bytes - done;
    __builtin_memcpy(to + done, to, static_cast<size_t>(k));
    done += k;
  }
}
constexpr Kind kind(DType t) {
  constexpr Kind kKind[kNumDTypes] = {Kind::Bool,     Kind::Signed,   Kind::Signed,   Kind::Signed,
                                      Kind::Signed,   Kind::Unsigned, Kind::Unsigned, Kind::Unsigned,
                                      Kind::Unsigned, Kind::Float,    Kind::Float,    Kind::Complex,
                                      Kind::Complex};
  return kKind[static_cast<int>(t)];
}
inline bool is_float(DType t) { return kind(t) == Kind::Float; }
inline bool is_integer(DType t) {
  return kind(t) == Kind::Signed || kind(t) == Kind::Unsigned;
}
inline bool is_bool(DType t) { return t == DType::Bool; }
inline bool is_complex(DType t) { return kind(t) == Kind::Complex; }
// A floating-point type, real or complex (values that can be NaN or inf).
inline bool is_inexact(DType t) { return is_float(t) || is_complex(t); }
// The type of one part of a complex type (float32 / float64); t itself
// for the other types.
constexpr DType real_part_type(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
// The complex type whose parts have float type t.
constexpr DType complex_of(DType t) { return t == DType::Float32 ? DType::Complex64 : DType::Complex128; }
// NumPy's name ("float64") and single-character code ("d").
const char* dtype_name(DType t);
char dtype_char(DType t);
// The C type used in generated kernels ("double", "int32_t", ...).
const char* c_type(DType t);
std::optional<DType> dtype_from_name(const std::string& name);

// numpy.result_type for two strong operands.
DType promote(DType a, DType b);
// numpy.result_type(array_of_type_a, python_scalar_of_kind_k).
DType promote_weak(DType a, WeakKind k);
// The default type of a Python scalar on its own (bool, int64, float64).
DType weak_default(WeakKind k);

enum class Casting : uint8_t { No, Equiv, Safe, SameKind, Unsafe };
// numpy.can_cast(from, to, casting) for our types.
bool can_cast(DType from, DType to, Casting casting);

// Smallest/largest integer representable by an integer type (as int128-free
// doubles are not exact, use these for range checks of Python ints).
bool int_fits(DType t, int64_t v);
bool uint_fits(DType t, uint64_t v);

// A scalar value with its type; used for Python scalars and kernel constants.
// A complex value keeps its real part in `f` and its imaginary part in `im`
// (which is 0 for every other type).
struct Scalar {
  DType dtype = DType::Float64;
  // numfuse.jit: nonzero when the value is a traced call's float argument
  // (a parameter, core/capture.h: the serial of its conversion). Kept by
  // casts to float32/float64; any other cast drops it and tells the capture
  // (capture_param_dropped), so a program never bakes in a value derived
  // from a parameter without knowing. (In the padding after `dtype`.)
  uint32_t param = 0;
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double f;
  };
  double im = 0.0;
  Scalar() : f(0.0) {}
  static Scalar of_bool(bool v) { Scalar s; s.dtype = DType::Bool; s.i = v ? 1 : 0; return s; }
  static Scalar of_int(DType t, int64_t v) { Scalar s; s.dtype = t; s.i = v; return s; }
  static Scalar of_uint(DType t, uint64_t v) { Scalar s; s.dtype = t; s.u = v; return s; }
  static Scalar of_float(DType t, double v) { Scalar s; s.dtype = t; s.f = v; return s; }
  static Scalar of_complex(DType t, double re, double imag) {
    Scalar s;
    s.dtype = t;
    s.f = re;
    s.im = imag;
    return s;
  }
  // Convert with C (NumPy "unsafe") semantics to another type.
  Scalar cast(DType to) const;
  double as_double() const;
  int64_t as_int64() const;
  bool truthy() const;
  // Writes the value into memory as an element of its type (bool as a byte).
  void store(void* p) const;
  // Reads an element of type t from memory (store's inverse).
  static Scalar load(DType t, const void* p);
  // Bit-exact equality (used by caches; NaN == NaN here).
  bool same(const Scalar& o) const {
    return dtype == o.dtype && u == o.u && __builtin_bit_cast(uint64_t, im) == __builtin_bit_cast(uint64_t, o.im);
  }
};

}  // namespace nf

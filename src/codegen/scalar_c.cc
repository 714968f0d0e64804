// Scalar operations in C, with NumPy's semantics.
#include "codegen/scalar_c.h"
#include "codegen/codegen.h"

#include <atomic>
#include <cmath>
#include <map>
#include <tuple>
#include <cstdio>
#include <stdexcept>

namespace nf::codegen {

namespace {

struct Reg {
  HelperSet& h;
  // Registers a helper (once) and returns its name.
  std::string operator()(const std::string& name, const std::string& code) {
    h.use(name + "\n" + code);
    return name;
  }
};

std::string ct(DType t) { return c_type(t); }

// (binary?, op, float type) -> rule; see set_nan_rules. Installed once at
// import, before any kernel is spelled.
std::map<std::tuple<bool, int, DType>, std::string>& nan_rules() {
  static auto* m = new std::map<std::tuple<bool, int, DType>, std::string>();
  return *m;
}
std::atomic<uint64_t> g_nan_generation{0};

std::string& nan_id() {
  static auto* s = new std::string("nan:none");
  return *s;
}

// A rule as part of an identifier.
std::string rule_tag(const std::string& rule) {
  std::string t;
  for (char c : rule) t += c == '+' ? 'p' : c == '-' ? 'm' : c;
  return t;
}

// The NaN a rule character selects, for operands x, y of C type T.
std::string nan_choice(char c, const std::string& T) {
  const std::string nan = T == "float" ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  switch (c) {
    case 'x': return "x";
    case 'y': return "y";
    case 'X': return "-x";
    case 'Y': return "-y";
    case 'a': return "(__builtin_signbit(x) && __builtin_signbit(y) ? -" + nan + " : " + nan + ")";
    case 'o': return "(__builtin_signbit(x) || __builtin_signbit(y) ? -" + nan + " : " + nan + ")";
    case '-': return "-" + nan;
    default: return nan;
  }
}

int bits(DType t) { return itemsize(t) * 8; }

DType unsigned_of(DType t) {
  switch (itemsize(t)) {
    case 1: return DType::UInt8;
    case 2: return DType::UInt16;
    case 4: return DType::UInt32;
    default: return DType::UInt64;
  }
}

// libm function name for type t ("exp" / "expf"), declared on first use.
std::string libm(Reg& reg, const std::string& fn, DType t, int nargs) {
  const bool f32 = t == DType::Float32;
  const std::string name = f32 ? fn + "f" : fn;
  const std::string ty = f32 ? "float" : "double";
  std::string params = ty;
  for (int i = 1; i < nargs; ++i) params += ", " + ty;
  return reg(name, ty + " " + name + "(" + params + ");");
}

std::string call(const std::string& f, const std::vector<std::string>& args) {
  std::string s = f + "(";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ")";
}

// double -> integer conversions as x86 (and NumPy) perform them.
std::string float_to_int(Reg& reg, const std::string& x, DType from, DType to) {
  std::string d = from == DType::Float32 ? "(double)(" + x + ")" : x;
  const std::string f2i32 = reg("nf_f2i32",
      "static inline int nf_f2i32(double x) { return (x > -2147483649.0 && x < 2147483648.0) ? (int)x : (-2147483647 - 1); }");
  const std::string f2i64 = reg("nf_f2i64",
      "static inline long long nf_f2i64(double x) { return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (long long)x : (-9223372036854775807LL - 1); }");
  switch (to) {
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::UInt8:
    case DType::UInt16:
      return "((" + ct(to) + ")" + f2i32 + "(" + d + "))";
    case DType::Int64:
      return f2i64 + "(" + d + ")";
    case DType::UInt32: {
      // x86 (NumPy): >= 2^32 gives 0, [2^31, 2^32) converts, below via int32.
      const std::string f2u32 = reg("nf_f2u32",
          "static inline unsigned int nf_f2u32(double x) { return x >= 4294967296.0 ? 0u : x >= 2147483648.0 ? (unsigned int)(long long)x : (unsigned int)nf_f2i32(x); }");
      return f2u32 + "(" + d + ")";
    }
    case DType::UInt64: {
      const std::string f2u64 = reg("nf_f2u64",
          "static inline unsigned long long nf_f2u64(double x) { return x >= 18446744073709551616.0 ? 0ull : x >= 9223372036854775808.0 ? (unsigned long long)x : (unsigned long long)nf_f2i64(x); }");
      return f2u64 + "(" + d + ")";
    }
    default:
      throw std::logic_error("bad float->int cast");
  }
}

std::string spell_cast(Reg& reg, const std::string& a, DType from, DType to) {
  if (from == to) return a;
  if (to == DType::Bool) return "(" + a + " != 0)";
  if (is_float(from) && !is_float(to)) return float_to_int(reg, a, from, to);
  return "((" + ct(to) + ")(" + a + "))";
}

std::string unary(Reg& reg, UnaryOp op, DType t, DType r, const std::string& a) {
  const std::string s = suffix(t);
  const bool fl = is_float(t);
  const bool sg = kind(t) == Kind::Signed;
  auto m = [&](const char* fn) {
    std::string v = call(libm(reg, fn, t, 1), {a});
    auto it = nan_rules().find({false, static_cast<int>(op), t});
    if (!fl || it == nan_rules().end()) return v;
    const std::string& rule = it->second;
    const std::string T = ct(t), name = "nf_nan1_" + s + "_" + rule_tag(rule);
    return call(reg(name, "static inline " + T + " " + name + "(" + T + " r, " + T + " x) {\n"
                          "  if (r == r) return r;\n"
                          "  return x != x ? " + nan_choice(rule[0], T) + " : " + nan_choice(rule[1], T) + ";\n}"),
                {v, a});
  };
  switch (op) {
    case UnaryOp::Negative:
      if (!fl && t != DType::Bool) return "((" + ct(t) + ")(0ULL - (unsigned long long)(" + a + ")))";
      return "((" + ct(t) + ")(-" + a + "))";
    case UnaryOp::Positive: return a;
    case UnaryOp::Absolute:
      if (fl) return m("fabs");
      if (sg) return "((" + ct(t) + ")(" + a + " < 0 ? 0ULL - (unsigned long long)(" + a + ") : (unsigned long long)(" + a + ")))";
      return a;
    case UnaryOp::Sign:
      if (fl)
        return call(reg("nf_sign_" + s, "static inline " + ct(t) + " nf_sign_" + s + "(" + ct(t) +
                                            " x) { return x > 0 ? 1 : (x < 0 ? -1 : (x == 0 ? 0 : x)); }"),
                    {a});
      if (sg) return "((" + ct(t) + ")((" + a + " > 0) - (" + a + " < 0)))";
      return "((" + ct(t) + ")(" + a + " > 0))";
    case UnaryOp::LogicalNot: return "(" + a + " == 0)";
    case UnaryOp::Invert:
      if (t == DType::Bool) return "(!" + a + ")";
      return "((" + ct(t) + ")(~" + a + "))";
    case UnaryOp::Sqrt: return m("sqrt");
    case UnaryOp::Cbrt: return m("cbrt");
    case UnaryOp::Square:
      if (!fl && t != DType::Bool)
        return "((" + ct(t) + ")((unsigned long long)(" + a + ") * (unsigned long long)(" + a + ")))";
      return "((" + ct(t) + ")(" + a + " * " + a + "))";
    case UnaryOp::Reciprocal:
      if (fl) return "(1 / " + a + ")";
      // NumPy computes 1.0/x in double and converts (x86 conversion of inf).
      return float_to_int(reg, "(1.0 / (double)" + a + ")", DType::Float64, t == DType::Bool ? DType::Int8 : t);
    case UnaryOp::Exp: return m("exp");
    case UnaryOp::Exp2: return m("exp2");
    case UnaryOp::Expm1: return m("expm1");
    case UnaryOp::Log: return m("log");
    case UnaryOp::Log2: return m("log2");
    case UnaryOp::Log10: return m("log10");
    case UnaryOp::Log1p: return m("log1p");
    case UnaryOp::Sin: return m("sin");
    case UnaryOp::Cos: return m("cos");
    case UnaryOp::Tan: return m("tan");
    case UnaryOp::Arcsin: return m("asin");
    case UnaryOp::Arccos: return m("acos");
    case UnaryOp::Arctan: return m("atan");
    case UnaryOp::Sinh: return m("sinh");
    case UnaryOp::Cosh: return m("cosh");
    case UnaryOp::Tanh: return m("tanh");
    case UnaryOp::Arcsinh: return m("asinh");
    case UnaryOp::Arccosh: return m("acosh");
    case UnaryOp::Arctanh: return m("atanh");
    case UnaryOp::Floor: return fl ? m("floor") : a;
    case UnaryOp::Ceil: return fl ? m("ceil") : a;
    case UnaryOp::Trunc: return fl ? m("trunc") : a;
    case UnaryOp::Rint: return fl ? m("rint") : a;
    case UnaryOp::Erf: return m("erf");
    case UnaryOp::Isnan: return fl ? "(" + a + " != " + a + ")" : "0";
    case UnaryOp::Isinf: return fl ? "(__builtin_isinf(" + a + ") != 0)" : "0";
    case UnaryOp::Isfinite: return fl ? "(__builtin_isfinite(" + a + ") != 0)" : "1";
    case UnaryOp::Signbit: return fl ? "(__builtin_signbit(" + a + ") != 0)" : (sg ? "(" + a + " < 0)" : "0");
    case UnaryOp::Deg2rad: return "(" + a + " * (" + ct(t) + ")0.017453292519943295)";
    case UnaryOp::Rad2deg: return "(" + a + " * (" + ct(t) + ")57.295779513082323)";
    default: break;
  }
  (void)r;
  throw std::logic_error(std::string("no C spelling for unary ") + unary_name(op));
}

std::string binary(Reg& reg, BinaryOp op, DType t, const std::string& a, const std::string& b) {
  const std::string s = suffix(t);
  const std::string T = ct(t);
  const bool fl = is_float(t);
  const bool sg = kind(t) == Kind::Signed;
  const bool bl = t == DType::Bool;
  auto wrap = [&](const std::string& e) { return "((" + T + ")(" + e + "))"; };
  // Integer +, -, * wrap around (NumPy): computed in unsigned 64-bit
  // arithmetic, whose overflow C defines (the kernels are not compiled with
  // -fwrapv, which would keep the vectorizer from proving index arithmetic
  // free of overflow).
  auto arith = [&](const char* o) {
    if (fl || bl) return wrap(a + " " + o + " " + b);
    return wrap("(unsigned long long)(" + a + ") " + o + " (unsigned long long)(" + b + ")");
  };
  // A NaN result's sign as NumPy gives it (set_nan_rules), for an
  // operation spelled as `v`.
  auto nanfix = [&](const std::string& v) {
    auto it = nan_rules().find({true, static_cast<int>(op), t});
    if (!fl || it == nan_rules().end()) return v;
    const std::string& rule = it->second;
    const std::string name = "nf_nan2_" + s + "_" + rule_tag(rule);
    return call(reg(name, "static inline " + T + " " + name + "(" + T + " r, " + T + " x, " + T + " y) {\n"
                          "  if (r == r) return r;\n"
                          "  if (x != x && y != y) return " + nan_choice(rule[0], T) + ";\n"
                          "  if (x != x) return " + nan_choice(rule[1], T) + ";\n"
                          "  if (y != y) return " + nan_choice(rule[2], T) + ";\n"
                          "  return " + nan_choice(rule[3], T) + ";\n}"),
                {v, a, b});
  };
  auto m2 = [&](const char* fn) { return nanfix(call(libm(reg, fn, t, 2), {a, b})); };
  // An integer division by zero gives 0 and raises the divide-by-zero flag,
  // as NumPy's integer loops do (numpy.errstate): a floating-point 1/0
  // stored to a volatile, so that it is neither folded nor removed.
  auto int_zero = [&]() {
    const std::string name = "nf_divzero_" + s;
    return call(reg(name, "static inline " + T + " " + name + "(void) {\n"
                          "  volatile double z = 0.0;\n"
                          "  volatile double r = 1.0 / z;\n"
                          "  (void)r;\n"
                          "  return 0;\n}"),
                {});
  };
  switch (op) {
    case BinaryOp::Add: return bl ? "(" + a + " | " + b + ")" : arith("+");
    case BinaryOp::Subtract: return arith("-");
    case BinaryOp::Multiply: return bl ? "(" + a + " & " + b + ")" : arith("*");
    case BinaryOp::TrueDivide: return "(" + a + " / " + b + ")";
    case BinaryOp::FloorDivide:
      if (fl) {
        libm(reg, "fmod", t, 2);
        libm(reg, "floor", t, 1);
        libm(reg, "copysign", t, 2);
        const std::string f = t == DType::Float32 ? "f" : "";
        return call(reg("nf_floordiv_" + s,
                        "static inline " + T + " nf_floordiv_" + s + "(" + T + " a, " + T + " b) {\n"
                        "  if (b == 0) return a / b;\n"
                        "  " + T + " mod = fmod" + f + "(a, b);\n"
                        "  " + T + " div = (a - mod) / b;\n"
                        "  if (mod != 0) { if ((b < 0) != (mod < 0)) div -= 1; }\n"
                        "  " + T + " fd;\n"
                        "  if (div != 0) { fd = floor" + f + "(div); if (div - fd > 0.5) fd += 1; }\n"
                        "  else fd = copysign" + f + "(0, a / b);\n"
                        "  return fd;\n}"),
                    {a, b});
      }
      if (sg)
        return call(reg("nf_floordiv_" + s,
                        "static inline " + T + " nf_floordiv_" + s + "(" + T + " a, " + T + " b) {\n"
                        "  if (b == 0) return " + int_zero() + ";\n"
                        "  if (b == -1) return (" + T + ")(0ULL - (unsigned long long)a);\n"
                        "  " + T + " q = a / b;\n"
                        "  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n"
                        "  return q;\n}"),
                    {a, b});
      if (bl) return "(" + b + " == 0 ? 0 : " + wrap(a + " / " + b) + ")";
      return "(" + b + " == 0 ? " + int_zero() + " : " + wrap(a + " / " + b) + ")";
    case BinaryOp::Remainder:
      if (fl) {
        libm(reg, "fmod", t, 2);
        libm(reg, "copysign", t, 2);
        const std::string f = t == DType::Float32 ? "f" : "";
        return nanfix(call(reg("nf_rem_" + s,
                        "static inline " + T + " nf_rem_" + s + "(" + T + " a, " + T + " b) {\n"
                        "  " + T + " mod = fmod" + f + "(a, b);\n"
                        "  if (b == 0) return mod;\n"
                        "  if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }\n"
                        "  else mod = copysign" + f + "(0, b);\n"
                        "  return mod;\n}"),
                    {a, b}));
      }
      if (sg)
        return call(reg("nf_rem_" + s,
                        "static inline " + T + " nf_rem_" + s + "(" + T + " a, " + T + " b) {\n"
                        "  if (b == 0) return " + int_zero() + ";\n"
                        "  if (b == -1) return 0;\n"
                        "  " + T + " r = a % b;\n"
                        "  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n"
                        "  return r;\n}"),
                    {a, b});
      if (bl) return "(" + b + " == 0 ? 0 : " + wrap(a + " % " + b) + ")";
      return "(" + b + " == 0 ? " + int_zero() + " : " + wrap(a + " % " + b) + ")";
    case BinaryOp::Fmod:
      if (fl) return m2("fmod");  // (m2 applies the NaN rule)
      if (sg) return "(" + b + " == 0 ? " + int_zero() + " : " + b + " == -1 ? 0 : " + wrap(a + " % " + b) + ")";
      return "(" + b + " == 0 ? " + int_zero() + " : " + wrap(a + " % " + b) + ")";
    case BinaryOp::Power:
      if (fl) return m2("pow");
      return call(reg("nf_pow_" + s,
                      "static inline " + T + " nf_pow_" + s + "(" + T + " a, " + T + " b) {\n"
                      "  " + T + " r = 1;\n"
                      "  if (b < 0) return 0;\n"
                      "  while (b) { if (b & 1) r = (" + T + ")((unsigned long long)r * (unsigned long long)a);"
                      " a = (" + T + ")((unsigned long long)a * (unsigned long long)a); b >>= 1; }\n"
                      "  return r;\n}"),
                  {a, b});
    case BinaryOp::Maximum:
      if (fl) return "((" + a + " != " + a + " || " + a + " > " + b + ") ? " + a + " : " + b + ")";
      return bl ? "(" + a + " | " + b + ")" : "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::Minimum:
      if (fl) return "((" + a + " != " + a + " || " + a + " < " + b + ") ? " + a + " : " + b + ")";
      return bl ? "(" + a + " & " + b + ")" : "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::Fmax:
      if (fl) return "((" + a + " >= " + b + " || " + b + " != " + b + ") ? " + a + " : " + b + ")";
      return bl ? "(" + a + " | " + b + ")" : "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::Fmin:
      if (fl) return "((" + a + " <= " + b + " || " + b + " != " + b + ") ? " + a + " : " + b + ")";
      return bl ? "(" + a + " & " + b + ")" : "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::Arctan2: return m2("atan2");
    case BinaryOp::Hypot: return m2("hypot");
    case BinaryOp::Copysign: return m2("copysign");
    case BinaryOp::Nextafter: return m2("nextafter");
    case BinaryOp::Logaddexp:
    case BinaryOp::Logaddexp2: {
      const bool two = op == BinaryOp::Logaddexp2;
      const std::string f = t == DType::Float32 ? "f" : "";
      libm(reg, "log1p", t, 1);
      libm(reg, two ? "exp2" : "exp", t, 1);
      const std::string name = std::string(two ? "nf_logaddexp2_" : "nf_logaddexp_") + s;
      const std::string ln2 = "0.693147180559945309417232121458176568";
      const std::string log1p_ = two ? "(log1p" + f + "(exp2" + f + "(-t)) * (" + T + ")1.442695040888963407359924681001892137)"
                                     : "log1p" + f + "(exp" + f + "(-t))";
      const std::string log1p_pos = two ? "(log1p" + f + "(exp2" + f + "(t)) * (" + T + ")1.442695040888963407359924681001892137)"
                                        : "log1p" + f + "(exp" + f + "(t))";
      return nanfix(call(reg(name, "static inline " + T + " " + name + "(" + T + " x, " + T + " y) {\n"
                            "  if (x == y) return x + (" + T + ")" + (two ? "1" : ln2) + ";\n"
                            "  " + T + " t = x - y;\n"
                            "  if (t > 0) return x + " + log1p_ + ";\n"
                            "  if (t <= 0) return y + " + log1p_pos + ";\n"
                            "  return t;\n}"),
                  {a, b}));
    }
    case BinaryOp::Equal: return "(" + a + " == " + b + ")";
    case BinaryOp::NotEqual: return "(" + a + " != " + b + ")";
    case BinaryOp::Less: return "(" + a + " < " + b + ")";
    case BinaryOp::LessEqual: return "(" + a + " <= " + b + ")";
    case BinaryOp::Greater: return "(" + a + " > " + b + ")";
    case BinaryOp::GreaterEqual: return "(" + a + " >= " + b + ")";
    case BinaryOp::LogicalAnd: return "((" + a + " != 0) & (" + b + " != 0))";
    case BinaryOp::LogicalOr: return "((" + a + " != 0) | (" + b + " != 0))";
    case BinaryOp::LogicalXor: return "((" + a + " != 0) != (" + b + " != 0))";
    case BinaryOp::BitwiseAnd: return wrap(a + " & " + b);
    case BinaryOp::BitwiseOr: return wrap(a + " | " + b);
    case BinaryOp::BitwiseXor: return wrap(a + " ^ " + b);
    case BinaryOp::LeftShift: {
      const std::string U = ct(unsigned_of(t));
      return "((unsigned long long)" + b + " < " + std::to_string(bits(t)) + " ? (" + T + ")((" + U + ")" + a +
             " << " + b + ") : (" + T + ")0)";
    }
    case BinaryOp::RightShift:
      if (sg)
        return "((unsigned long long)" + b + " < " + std::to_string(bits(t)) + " ? (" + T + ")(" + a + " >> " + b +
               ") : (" + T + ")(" + a + " < 0 ? -1 : 0))";
      return "((unsigned long long)" + b + " < " + std::to_string(bits(t)) + " ? (" + T + ")(" + a + " >> " + b +
             ") : (" + T + ")0)";
    default:
      break;
  }
  throw std::logic_error(std::string("no C spelling for binary ") + binary_name(op));
}

}  // namespace

void HelperSet::use(const std::string& entry) {
  if (seen_.insert(entry).second) order_.push_back(entry);
}

std::string HelperSet::definitions() const {
  std::string out;
  for (const std::string& e : order_) out += e.substr(e.find('\n') + 1) + "\n";
  return out;
}

const char* suffix(DType t) {
  static const char* s[] = {"b", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"};
  return s[static_cast<int>(t)];
}

// Comparisons between a signed and an unsigned integer are exact in NumPy
// (C would convert the signed operand to unsigned).
std::string mixed_sign_compare(BinaryOp op, const std::string& a, DType ta, const std::string& b, DType tb) {
  const bool a_signed = kind(ta) == Kind::Signed;
  const std::string s = a_signed ? a : b;            // the signed operand
  const std::string u = a_signed ? b : a;            // the unsigned operand
  const std::string su = "(unsigned long long)" + s;
  const std::string uu = "(unsigned long long)" + u;
  // Express everything as "signed OP unsigned" after swapping if needed.
  BinaryOp o = op;
  if (!a_signed) {
    switch (op) {
      case BinaryOp::Less: o = BinaryOp::Greater; break;
      case BinaryOp::LessEqual: o = BinaryOp::GreaterEqual; break;
      case BinaryOp::Greater: o = BinaryOp::Less; break;
      case BinaryOp::GreaterEqual: o = BinaryOp::LessEqual; break;
      default: break;
    }
  }
  switch (o) {
    case BinaryOp::Equal: return "(" + s + " >= 0 && " + su + " == " + uu + ")";
    case BinaryOp::NotEqual: return "(" + s + " < 0 || " + su + " != " + uu + ")";
    case BinaryOp::Less: return "(" + s + " < 0 || " + su + " < " + uu + ")";
    case BinaryOp::LessEqual: return "(" + s + " < 0 || " + su + " <= " + uu + ")";
    case BinaryOp::Greater: return "(" + s + " >= 0 && " + su + " > " + uu + ")";
    case BinaryOp::GreaterEqual: return "(" + s + " >= 0 && " + su + " >= " + uu + ")";
    default: break;
  }
  throw std::logic_error("mixed_sign_compare: not a comparison");
}

void set_nan_rules(const std::vector<std::tuple<bool, int, DType, std::string>>& rules) {
  nan_rules().clear();
  std::string id = "nan:";
  for (const auto& [bin, op, t, rule] : rules) {
    if (rule.size() != (bin ? 4u : 2u)) continue;
    nan_rules()[{bin, op, t}] = rule;
    id += (bin ? "b" : "u") + std::to_string(op) + suffix(t) + rule + ";";
  }
  nan_id() = id;
  g_nan_generation.fetch_add(1, std::memory_order_release);
}

const std::string& nan_rules_id() { return nan_id(); }

uint64_t nan_rules_generation() { return g_nan_generation.load(std::memory_order_acquire); }

const char* nan_rule(bool binary, int op, DType t) {
  auto it = nan_rules().find({binary, op, t});
  return it == nan_rules().end() ? nullptr : it->second.c_str();
}

std::string spell_scalar(const ExprNode& node, const std::vector<std::string>& args, const std::vector<DType>& arg_types,
                         HelperSet& helpers) {
  Reg reg{helpers};
  if (node.kind == ExprNode::Kind::Binary && arg_types.size() == 2 && arg_types[0] != arg_types[1] &&
      is_integer(arg_types[0]) && is_integer(arg_types[1]) &&
      (kind(arg_types[0]) == Kind::Signed) != (kind(arg_types[1]) == Kind::Signed)) {
    BinaryOp op = static_cast<BinaryOp>(node.op);
    if (op == BinaryOp::Equal || op == BinaryOp::NotEqual || op == BinaryOp::Less || op == BinaryOp::LessEqual ||
        op == BinaryOp::Greater || op == BinaryOp::GreaterEqual)
      return mixed_sign_compare(op, args[0], arg_types[0], args[1], arg_types[1]);
  }
  switch (node.kind) {
    case ExprNode::Kind::Cast:
      return spell_cast(reg, args[0], arg_types[0], node.dtype);
    case ExprNode::Kind::Unary:
      return unary(reg, static_cast<UnaryOp>(node.op), arg_types[0], node.dtype, args[0]);
    case ExprNode::Kind::Binary:
      return binary(reg, static_cast<BinaryOp>(node.op), arg_types[0], args[0], args[1]);
    case ExprNode::Kind::Select:
      return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
    default:
      throw std::logic_error("spell_scalar: not an operation");
  }
}

std::string spell_combine(ReduceOp op, DType t, const std::string& a, const std::string& b, HelperSet& helpers) {
  Reg reg{helpers};
  switch (op) {
    case ReduceOp::Sum: return binary(reg, BinaryOp::Add, t, a, b);
    case ReduceOp::Prod: return binary(reg, BinaryOp::Multiply, t, a, b);
    case ReduceOp::Max: return binary(reg, BinaryOp::Maximum, t, a, b);
    case ReduceOp::Min: return binary(reg, BinaryOp::Minimum, t, a, b);
    case ReduceOp::Any: return "(" + a + " | (" + b + " != 0))";
    case ReduceOp::All: return "(" + a + " & (" + b + " != 0))";
    default: break;
  }
  throw std::logic_error("spell_combine: arg-reductions use spell_arg_better");
}

std::string spell_arg_better(ReduceOp op, DType t, const std::string& acc, const std::string& ai, const std::string& v,
                             const std::string& vi, HelperSet& helpers, bool later) {
  const char* cmp = op == ReduceOp::ArgMax ? ">" : "<";
  if (later) {
    // The first point wins every tie; a NaN wins once, and nothing beats it.
    const std::string empty = "(" + ai + " == 9223372036854775807LL)";
    if (!is_float(t)) return "(" + empty + " | (" + v + " " + cmp + " " + acc + "))";
    return "(" + empty + " | ((" + acc + " == " + acc + ") & ((" + v + " != " + v + ") | (" + v + " " + cmp + " " +
           acc + "))))";
  }
  if (!is_float(t))
    return "(" + v + " " + cmp + " " + acc + " || (" + v + " == " + acc + " && " + vi + " < " + ai + "))";
  const std::string s = suffix(t);
  const std::string T = c_type(t);
  const std::string name = std::string(op == ReduceOp::ArgMax ? "nf_argmax_better_" : "nf_argmin_better_") + s;
  Reg reg{helpers};
  return call(reg(name, "static inline _Bool " + name + "(" + T + " acc, long long ai, " + T + " v, long long vi) {\n"
                        "  if (acc != acc) return v != v && vi < ai;\n"
                        "  if (v != v) return 1;\n"
                        "  return v " + cmp + " acc || (v == acc && vi < ai);\n}"),
              {acc, ai, v, vi});
}

std::string spell_float(double v, DType t) {
  const bool f32 = t == DType::Float32;
  if (std::isnan(v)) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f32 ? "__builtin_inff()" : "__builtin_inf()");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return f32 ? "((float)" + s + ")" : "(" + s + ")";
}

std::string spell_int(int64_t v, DType t) {
  if (t == DType::Bool) return v ? "1" : "0";
  if (t == DType::UInt64) return "((uint64_t)" + std::to_string(static_cast<uint64_t>(v)) + "ULL)";
  if (v == INT64_MIN) return "((int64_t)(-9223372036854775807LL - 1))";
  return "((" + std::string(c_type(t)) + ")" + std::to_string(v) + "LL)";
}

}  // namespace nf::codegen

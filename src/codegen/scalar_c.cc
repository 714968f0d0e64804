// Scalar operations in C, with NumPy's semantics.
#include "codegen/scalar_c.h"
#include "codegen/codegen.h"
#include "core/vmath_list.h"

#include <atomic>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <cstdio>
#include <stdexcept>

namespace nf::codegen {

namespace {

struct Reg {
  HelperSet& h;
  bool structs() const { return h.complex_structs; }
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

// The transcendental functions computed by runtime/vmath.h's one
// implementation per process (nf_m_exp, nf_m_expf, ...).
bool in_vmath(const std::string& fn) {
  static const std::set<std::string> names = {
#define NF_NAME(f) #f,
      NF_VMATH_UNARY(NF_NAME) NF_VMATH_BINARY(NF_NAME)
#undef NF_NAME
  };
  return names.count(fn) != 0;
}

// The C function computing libm's `fn` ("exp": nf_m_exp; "fmod": fmod) for
// a float type ('f' appended for float32), declared (once) in `decl`.
std::string math_fn(Reg& reg, const std::string& fn, const std::string& f, const std::string& ty, int nargs) {
  const bool vm = in_vmath(fn);
  const std::string name = (vm ? "nf_m_" : "") + fn + f;
  std::string params = ty;
  for (int i = 1; i < nargs; ++i) params += ", " + ty;
  // const: no memory touched (the JIT's vectorizer maps it to its vector forms)
  return reg(name, ty + " " + name + "(" + params + ")" + (vm ? " __attribute__((const))" : "") + ";");
}

// libm function for type t ("exp" / "expf"), declared on first use.
std::string libm(Reg& reg, const std::string& fn, DType t, int nargs) {
  const bool f32 = t == DType::Float32;
  return math_fn(reg, fn, f32 ? "f" : "", f32 ? "float" : "double", nargs);
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

// ---------------------------------------------------------------------------
// Complex numbers: C's `float _Complex` / `double _Complex` (NumPy's layout,
// real part first), built with __builtin_complex and taken apart with
// __real__ / __imag__. Arithmetic is spelled out as NumPy's loops compute
// it: C's own complex * and / follow Annex G (inf/NaN recovery, __muldc3),
// which NumPy does not; multiplication is the textbook formula and division
// Smith's algorithm. The elementary functions are glibc's (csqrt, cexp,
// ...), as NumPy's npymath calls them.

// With HelperSet::complex_structs (the CUDA kernels' text: NVRTC has no
// _Complex), a complex value is a struct {re, im} (complex_struct_prelude),
// its parts `(a).re` / `(a).im`, built by nf_cmk_c64/c128, and every
// operation C spells with an operator (+, -, ==, != 0, casts) a function
// of its own; the helpers' bodies below are the same, their `__real__ x`
// and `__imag__ x` read as `(x).re`, `(x).im`. No glibc complex function
// exists there: the CUDA target refuses groups that need one
// (pipeline/target.cc).
struct Cx {
  Reg& reg;
  DType t;        // the complex type
  std::string C;  // its C type
  std::string R;  // its parts' C type
  std::string s;  // suffix
  std::string f;  // "f" for complex64 (libm names), "" for complex128
  bool structs;
  Cx(Reg& r, DType ty)
      : reg(r), t(ty), C(r.structs() ? struct_c_type(ty) : c_type(ty)), R(c_type(real_part_type(ty))), s(suffix(ty)),
        f(ty == DType::Complex64 ? "f" : ""), structs(r.structs()) {}
  std::string re(const std::string& a) const { return structs ? "(" + a + ").re" : "__real__(" + a + ")"; }
  std::string im(const std::string& a) const { return structs ? "(" + a + ").im" : "__imag__(" + a + ")"; }
  std::string mk(const std::string& r, const std::string& i) const {
    if (structs) return "nf_cmk_" + s + "((" + R + ")(" + r + "), (" + R + ")(" + i + "))";
    return "__builtin_complex((" + R + ")(" + r + "), (" + R + ")(" + i + "))";
  }
  // a + b, a - b, -a, a == b, a != 0 (the operators, or the structs' functions).
  std::string add(const std::string& a, const std::string& b, char op = '+') {
    if (!structs) return "(" + a + " " + op + " " + b + ")";
    return fn(op == '+' ? "cadd" : "csub", C, C + " a, " + C + " b",
              "  return " + mk("a.re " + std::string(1, op) + " b.re", "a.im " + std::string(1, op) + " b.im") + ";\n") +
           "(" + a + ", " + b + ")";
  }
  std::string neg(const std::string& a) {
    if (!structs) return "(-" + a + ")";
    return fn("cneg", C, C + " a", "  return " + mk("-a.re", "-a.im") + ";\n") + "(" + a + ")";
  }
  std::string eq(const std::string& a, const std::string& b) {
    if (!structs) return "(" + a + " == " + b + ")";
    return fn("ceq", "_Bool", C + " a, " + C + " b", "  return (a.re == b.re) & (a.im == b.im);\n") + "(" + a + ", " +
           b + ")";
  }
  std::string truth(const std::string& a) {
    if (!structs) return "(" + a + " != 0)";
    return fn("ctruth", "_Bool", C + " a", "  return (a.re != 0) | (a.im != 0);\n") + "(" + a + ")";
  }
  // A helper `static inline RET name(PARAMS) { BODY }`, registered once.
  // `opaque`: never inlined, so that a vectorized loop calls it for its
  // active lanes only instead of if-converting its branches (which would
  // run the divisions of masked-off lanes, flags and all).
  std::string fn(const std::string& base, const std::string& ret, const std::string& params, const std::string& text,
                 bool opaque = false) {
    const std::string name = "nf_" + base + "_" + s;
    std::string body = text;
    if (structs) {
      static const std::regex real("__real__ ([A-Za-z_][A-Za-z0-9_]*)"), imag("__imag__ ([A-Za-z_][A-Za-z0-9_]*)");
      body = std::regex_replace(std::regex_replace(body, real, "($1).re"), imag, "($1).im");
    }
    return reg(name, std::string(opaque ? "static __attribute__((noinline)) " : "static inline ") + ret + " " + name +
                         "(" + params + ") {\n" + body + "}");
  }
  // The complex functions' parts: scalar libm, as NumPy's complex loops
  // compute them (npy_cexp ... call libm), on every path.
  std::string real_libm(const char* name, int nargs) {
    const std::string n = std::string(name) + f;
    std::string params = R;
    for (int i = 1; i < nargs; ++i) params += ", " + R;
    return reg(n, R + " " + n + "(" + params + ");");
  }
  std::string complex_libm(const char* name) {
    const std::string n = std::string(name) + f;
    return reg(n, C + " " + n + "(" + C + ");");
  }
  // NumPy's SIMD loop (on every x86 CPU with FMA3): re = fma(ar, br,
  // -(ai*bi)), im = fma(ar, bi, ai*br).
  std::string mul() {
    const std::string fma_ = real_libm("fma", 3);
    return fn("cmul", C, C + " a, " + C + " b",
              "  " + R + " ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;\n"
              "  return " + mk(fma_ + "(ar, br, -(ai * bi))", fma_ + "(ar, bi, ai * br)") + ";\n");
  }
  // Smith's algorithm as NumPy computes it, with both branches written as
  // one (the loop is vectorized: every lane computes the same divisions,
  // and LLVM speculates a division of selected operands into a select of
  // both divisions, so each part of b is replaced by 1 where it is 0, and
  // 0j's own division divides by a value that is +0 for 0j alone and 1
  // otherwise: no lane divides by zero unless NumPy's does). For
  // |br| >= |bi|: rat = bi/br, scl = 1/(br + bi*rat), result
  // ((ar + ai*rat)*scl, (ai - ar*rat)*scl); else rat = br/bi, scl = 1/(bi +
  // br*rat), ((ar*rat + ai)*scl, (ai*rat - ar)*scl); both zero: (ar/|br|,
  // ai/|br|) = (ar/+0, ai/+0).
  std::string div() {
    const std::string fabs_ = real_libm("fabs", 1);
    return fn("cdiv", C, C + " a, " + C + " b",
              "  " + R + " ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;\n"
              "  " + R + " abr = " + fabs_ + "(br), abi = " + fabs_ + "(bi);\n"
              "  _Bool zero = (abr == 0) & (abi == 0), big = abr >= abi;\n"
              "  " + R + " brs = br == 0 ? (" + R + ")1 : br, bis = bi == 0 ? (" + R + ")1 : bi;\n"
              "  " + R + " num = big ? bi : br, d = big ? brs : bis;\n"
              "  " + R + " rat = num / d, scl = (" + R + ")1.0 / (d + num * rat);\n"
              "  " + R + " p = big ? ar : ai, q = big ? ai : ar;\n"
              /* (NumPy's im: ai - ar*rat, or ai*rat - ar with b's parts swapped:
                 not the negation of one, whose zero has the other sign) */
              "  " + R + " pr = p * rat, t = big ? q - pr : pr - q;\n"
              /* 0 for 0j (abr + abi is +0 there), 1 otherwise: the lanes whose
                 result is not 0j's divide exactly by 1, raising nothing (and by a
                 loop-invariant b, ExactDivisionPass makes it a multiply); a
                 conversion, not a select (see above) */
              "  " + R + " zd = (" + R + ")!zero;\n"
              "  " + R + " zr = ar / zd, zi = ai / zd;\n"
              "  " + R + " re = (p + q * rat) * scl, im = t * scl;\n"
              "  return " + mk("zero ? zr : re", "zero ? zi : im") + ";\n");
  }
  // NumPy's absolute value (its SIMD loop, loops_unary_complex: every x86
  // CPU NumPy dispatches AVX2/AVX-512 to has FMA3): larger * sqrt(fma(r,
  // r, 1)) with r = smaller / larger; infinite if a part is, 0 for 0j, NaN
  // if a part is NaN. Not hypot: the two differ in the last bit on about a
  // third of inputs. Written with as few selects as give NumPy's values
  // (its NaN and infinity normalisation is folded into two selects at the
  // end; the lanes they replace may divide 0/0 or inf/inf: hypot's flags,
  // which are not reported, as NumPy raises none).
  std::string abs_() {
    const std::string fma_ = real_libm("fma", 3), fabs_ = real_libm("fabs", 1), sqrt_ = real_libm("sqrt", 1);
    return fn("cabs", R, C + " a",
              "  " + R + " re = " + fabs_ + "(__real__ a), im = " + fabs_ + "(__imag__ a);\n"
              "  _Bool g = re > im;\n"
              "  " + R + " larger = g ? re : im, smaller = g ? im : re;\n"
              "  " + R + " r = smaller / larger;\n"
              "  " + R + " h = " + sqrt_ + "(" + fma_ + "(r, r, (" + R + ")1)) * larger;\n"
              "  h = ((re == 0) & (im == 0)) ? (" + R + ")0 : h;\n"
              "  return ((re == __builtin_inf" + f + "()) | (im == __builtin_inf" + f + "())) ? __builtin_inf" + f +
              "() : h;\n");
  }
  // NumPy's complex order: lexicographic, and false wherever a NaN is.
  std::string less(bool or_equal) {
    const std::string op = or_equal ? "<=" : "<";
    return fn(or_equal ? "cle" : "clt", "_Bool", C + " a, " + C + " b",
              "  " + R + " ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;\n"
              "  return (ar < br && ai == ai && bi == bi) || (ar == br && ai " + op + " bi);\n");
  }
  std::string isnan_(const std::string& a) const {
    return "((" + re(a) + " != " + re(a) + ") | (" + im(a) + " != " + im(a) + "))";
  }
  std::string pow_() {
    const std::string m = mul(), d = div(), cpow_ = reg("cpow" + f, C + " cpow" + f + "(" + C + ", " + C + ");");
    return fn("cpow", C, C + " a, " + C + " b",
              "  " + R + " ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b;\n"
              "  if (br == 0 && bi == 0) return " + mk("1", "0") + ";\n"
              "  if (ar == 0 && ai == 0) {\n"
              "    if (br > 0) return " + mk("0", "0") + ";\n"
              "    volatile " + R + " inv = __builtin_inf(); inv -= __builtin_inf(); (void)inv;\n"
              "    return " + mk("__builtin_nan(\"\")", "__builtin_nan(\"\")") + ";\n"
              "  }\n"
              "  if (bi == 0 && br >= -9223372036854775808.0 && br < 9223372036854775808.0 && (" + R +
              ")(long long)br == br) {\n"
              "    long long n = (long long)br;\n"
              "    if (n == 1) return a;\n"
              "    if (n == 2) return " + m + "(a, a);\n"
              "    if (n == 3) return " + m + "(a, " + m + "(a, a));\n"
              "    if (n > -100 && n < 100) {\n"
              "      " + C + " aa = " + mk("1", "0") + ", p = a;\n"
              "      long long mask = 1;\n"
              "      if (n < 0) n = -n;\n"
              "      for (;;) {\n"
              "        if (n & mask) aa = " + m + "(aa, p);\n"
              "        mask <<= 1;\n"
              "        if (n < mask || mask <= 0) break;\n"
              "        p = " + m + "(p, p);\n"
              "      }\n"
              "      if (br < 0) aa = " + d + "(" + mk("1", "0") + ", aa);\n"
              "      return aa;\n"
              "    }\n"
              "  }\n"
              "  return " + cpow_ + "(a, b);\n",
              /*opaque=*/true);
  }
};

// NumPy's complex unary loops; r is the result type (the real type for
// absolute).
std::string complex_unary(Reg& reg, UnaryOp op, DType t, const std::string& a) {
  Cx x(reg, t);
  const std::string& R = x.R;
  auto lib = [&](const char* name) { return call(x.complex_libm(name), {a}); };
  switch (op) {
    case UnaryOp::Negative: return x.neg(a);
    case UnaryOp::Positive: return a;
    case UnaryOp::Conjugate: return x.fn("conj", x.C, x.C + " a", "  return " + x.mk("__real__ a", "-__imag__ a") + ";\n") + "(" + a + ")";
    case UnaryOp::Absolute: return call(x.abs_(), {a});
    case UnaryOp::Square: return call(x.mul(), {a, a});  // (NumPy: z*z, bit for bit)
    case UnaryOp::Reciprocal: {
      // NumPy: |ai| <= |ar|: r = ai/ar, d = ar + ai*r, (1/d, -r/d); else
      // r = ar/ai, d = ar*r + ai, (r/d, -1/d); 0j gives nan+nanj (0/0).
      // One branch-free form, as cdiv.
      const std::string fabs_ = x.real_libm("fabs", 1);
      return call(x.fn("crecip", x.C, x.C + " a",
                       "  " + R + " ar = __real__ a, ai = __imag__ a;\n"
                       "  _Bool zero = (ar == 0) & (ai == 0), big = " + fabs_ + "(ai) <= " + fabs_ + "(ar);\n"
                       "  " + R + " ars = ar == 0 ? (" + R + ")1 : ar, ais = ai == 0 ? (" + R + ")1 : ai;\n"
                       "  " + R + " num = big ? ai : ar, den = big ? ars : ais;\n"
                       "  " + R + " r = num / den, d = den + num * r;\n"
                       "  " + R + " re = big ? 1 / d : r / d, im = big ? -r / d : -1 / d;\n"
                       "  " + R + " nan = ar / (" + fabs_ + "(ar) + " + fabs_ + "(ai));\n"  /* 0/0 for 0j only */
                       "  return " + x.mk("zero ? nan : re", "zero ? nan : im") + ";\n"),
                  {a});
    }
    case UnaryOp::Sign: {
      const std::string hyp = x.real_libm("hypot", 2);
      return call(x.fn("csign", x.C, x.C + " a",
                       "  " + R + " ar = __real__ a, ai = __imag__ a, m = " + hyp + "(ar, ai);\n"
                       "  if (m != m) return " + x.mk("__builtin_nan(\"\")", "__builtin_nan(\"\")") + ";\n"
                       "  if (__builtin_isinf(m)) {\n"
                       "    if (__builtin_isinf(ar)) {\n"
                       "      if (__builtin_isinf(ai)) return " + x.mk("__builtin_nan(\"\")", "__builtin_nan(\"\")") + ";\n"
                       "      return " + x.mk("ar > 0 ? 1 : -1", "0") + ";\n"
                       "    }\n"
                       "    return " + x.mk("0", "ai > 0 ? 1 : -1") + ";\n"
                       "  }\n"
                       "  if (m == 0) return " + x.mk("0", "0") + ";\n"
                       "  return " + x.mk("ar / m", "ai / m") + ";\n"),
                  {a});
    }
    case UnaryOp::LogicalNot: return "(!" + x.truth(a) + ")";
    case UnaryOp::Sqrt: return lib("csqrt");
    case UnaryOp::Exp: return lib("cexp");
    case UnaryOp::Log: return lib("clog");
    case UnaryOp::Sin: return lib("csin");
    case UnaryOp::Cos: return lib("ccos");
    case UnaryOp::Tan: return lib("ctan");
    case UnaryOp::Arcsin: return lib("casin");
    case UnaryOp::Arccos: return lib("cacos");
    case UnaryOp::Arctan: return lib("catan");
    case UnaryOp::Sinh: return lib("csinh");
    case UnaryOp::Cosh: return lib("ccosh");
    case UnaryOp::Tanh: return lib("ctanh");
    case UnaryOp::Arcsinh: return lib("casinh");
    case UnaryOp::Arccosh: return lib("cacosh");
    case UnaryOp::Arctanh: return lib("catanh");
    case UnaryOp::Exp2: {
      const std::string e = x.complex_libm("cexp");
      return call(x.fn("cexp2", x.C, x.C + " a",
                       "  return " + e + "(" + x.mk("__real__ a * (" + R + ")0.693147180559945309417232121458176568",
                                                     "__imag__ a * (" + R + ")0.693147180559945309417232121458176568") +
                           ");\n"),
                  {a});
    }
    case UnaryOp::Log2:
    case UnaryOp::Log10: {
      const bool two = op == UnaryOp::Log2;
      const std::string l = x.complex_libm("clog");
      const std::string k = two ? "1.442695040888963407359924681001892137" : "0.434294481903251827651128918916605082";
      return call(x.fn(two ? "clog2" : "clog10", x.C, x.C + " a",
                       "  " + x.C + " r = " + l + "(a);\n"
                       "  return " + x.mk("__real__ r * (" + R + ")" + k, "__imag__ r * (" + R + ")" + k) + ";\n"),
                  {a});
    }
    case UnaryOp::Expm1: {
      const std::string sn = x.real_libm("sin", 1), cs = x.real_libm("cos", 1), em = x.real_libm("expm1", 1),
                        ex = x.real_libm("exp", 1);
      return call(x.fn("cexpm1", x.C, x.C + " a",
                       "  " + R + " ar = __real__ a, ai = __imag__ a, h = " + sn + "(ai / 2);\n"
                       "  return " + x.mk(em + "(ar) * " + cs + "(ai) - 2 * h * h", ex + "(ar) * " + sn + "(ai)") +
                           ";\n"),
                  {a});
    }
    case UnaryOp::Log1p: {
      const std::string hyp = x.real_libm("hypot", 2), at2 = x.real_libm("atan2", 2), lg = x.real_libm("log", 1);
      return call(x.fn("clog1p", x.C, x.C + " a",
                       "  " + R + " ar = __real__ a + 1, ai = __imag__ a;\n"
                       "  return " + x.mk(lg + "(" + hyp + "(ar, ai))", at2 + "(ai, ar)") + ";\n"),
                  {a});
    }
    case UnaryOp::Rint: {
      const std::string ri = x.real_libm("rint", 1);
      return x.mk(ri + "(" + x.re(a) + ")", ri + "(" + x.im(a) + ")");
    }
    case UnaryOp::Isnan: return x.isnan_(a);
    case UnaryOp::Isinf: return "((__builtin_isinf(" + x.re(a) + ") != 0) | (__builtin_isinf(" + x.im(a) + ") != 0))";
    case UnaryOp::Isfinite:
      return "((__builtin_isfinite(" + x.re(a) + ") != 0) & (__builtin_isfinite(" + x.im(a) + ") != 0))";
    default: break;
  }
  throw std::logic_error(std::string("no C spelling for complex ") + unary_name(op));
}

std::string complex_binary(Reg& reg, BinaryOp op, DType t, const std::string& a, const std::string& b) {
  Cx x(reg, t);
  switch (op) {
    case BinaryOp::Add: return x.add(a, b);
    case BinaryOp::Subtract: return x.add(a, b, '-');
    case BinaryOp::Multiply: return call(x.mul(), {a, b});
    case BinaryOp::TrueDivide: return call(x.div(), {a, b});
    case BinaryOp::Power: return call(x.pow_(), {a, b});
    case BinaryOp::Equal: return x.eq(a, b);
    case BinaryOp::NotEqual: return "(!" + x.eq(a, b) + ")";
    case BinaryOp::Less: return call(x.less(false), {a, b});
    case BinaryOp::LessEqual: return call(x.less(true), {a, b});
    case BinaryOp::Greater: return call(x.less(false), {b, a});
    case BinaryOp::GreaterEqual: return call(x.less(true), {b, a});
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      // NumPy: the first operand if it is NaN or wins (>= / <=), else the second.
      const bool mx = op == BinaryOp::Maximum;
      const std::string ge = x.less(true);
      const std::string body = "  if (" + x.isnan_("a") + " || " + ge + (mx ? "(b, a)" : "(a, b)") + ") return a;\n  return b;\n";
      return call(x.fn(mx ? "cmax" : "cmin", x.C, x.C + " a, " + x.C + " b", body), {a, b});
    }
    case BinaryOp::Fmax:
    case BinaryOp::Fmin: {
      // NumPy: the first operand if the second is NaN or the first wins.
      const bool mx = op == BinaryOp::Fmax;
      const std::string ge = x.less(true);
      const std::string body = "  if (" + x.isnan_("b") + " || " + ge + (mx ? "(b, a)" : "(a, b)") + ") return a;\n  return b;\n";
      return call(x.fn(mx ? "cfmax" : "cfmin", x.C, x.C + " a, " + x.C + " b", body), {a, b});
    }
    case BinaryOp::LogicalAnd: return "(" + x.truth(a) + " & " + x.truth(b) + ")";
    case BinaryOp::LogicalOr: return "(" + x.truth(a) + " | " + x.truth(b) + ")";
    case BinaryOp::LogicalXor: return "(" + x.truth(a) + " != " + x.truth(b) + ")";
    default: break;
  }
  throw std::logic_error(std::string("no C spelling for complex ") + binary_name(op));
}


std::string spell_cast(Reg& reg, const std::string& a, DType from, DType to) {
  if (from == to) return a;
  if (to == DType::Bool) return is_complex(from) ? Cx(reg, from).truth(a) : "(" + a + " != 0)";
  // To a complex struct: built from the parts.
  if (is_complex(to) && reg.structs()) {
    Cx x(reg, to);
    return is_complex(from) ? x.mk(Cx(reg, from).re(a), Cx(reg, from).im(a)) : x.mk(a, "0");
  }
  // Complex to real: the real part (C's conversion discards the imaginary
  // part; to an integer, through the float conversion NumPy uses).
  if (is_complex(from) && !is_complex(to)) {
    const std::string r = Cx(reg, from).re(a);
    if (is_float(to)) return "((" + ct(to) + ")" + r + ")";
    return float_to_int(reg, r, real_part_type(from), to);
  }
  if (is_float(from) && !is_inexact(to)) return float_to_int(reg, a, from, to);
  return "((" + ct(to) + ")(" + a + "))";
}

std::string unary(Reg& reg, UnaryOp op, DType t, DType r, const std::string& a) {
  if (is_complex(t)) return complex_unary(reg, op, t, a);
  if (op == UnaryOp::Conjugate) return a;  // (real types: NumPy's conjugate is the identity)
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
    case UnaryOp::Reciprocal: {
      if (fl) return "(1 / " + a + ")";
      // NumPy computes 1.0/x in double and converts (x86 conversion of inf:
      // 1/0 raises divide by zero, and the conversion of its inf invalid).
      // Both flags are raised explicitly for 0: once the compiler knows
      // a == 0 it may fold 1.0 / a to inf and divide nothing.
      const DType it = t == DType::Bool ? DType::Int8 : t;
      const std::string name = "nf_recip_" + s, T = ct(t);
      return call(reg(name, "static inline " + T + " " + name + "(" + T + " a) {\n"
                            "  double r = 1.0 / (double)a;\n"
                            "  if (a == 0) { volatile double z = 0.0, o = 1.0; volatile double q = z / z, d = o / z; "
                            "(void)q; (void)d; }\n"
                            "  return " + float_to_int(reg, "r", DType::Float64, it) + ";\n}"),
                  {a});
    }
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
  if (is_complex(t)) return complex_binary(reg, op, t, a, b);
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
                        // NumPy: a / b where b is 0. Written without an early return: a
                        // vectorized loop computes every lane through all of it, and
                        // fmod(a, 0) would raise `invalid` where NumPy raises only
                        // `divide`, so the divisor is b, or 1 where it is 0 (not a select
                        // with a constant arm, which LLVM would split back into fmod(a, b);
                        // after `if (b == 0) return` it would fold b == 0 to false).
                        "  " + T + " q = a / b;\n"
                        "  " + T + " bs = b + (" + T + ")(b == 0);\n"
                        "  " + T + " mod = fmod" + f + "(a, bs);\n"
                        "  " + T + " div = (a - mod) / bs;\n"
                        "  if (mod != 0) { if ((b < 0) != (mod < 0)) div -= 1; }\n"
                        "  " + T + " fd;\n"
                        "  if (div != 0) { fd = floor" + f + "(div); if (div - fd > 0.5) fd += 1; }\n"
                        "  else fd = copysign" + f + "((" + T + ")0, q);\n"
                        "  return b == 0 ? q : fd;\n}"),
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
                        "  else mod = copysign" + f + "((" + T + ")0, b);\n"
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
    // fmax/fmin of equal values (0.0 and -0.0) give the second, as NumPy's
    // vector loops do (maxpd); a NaN operand gives the other.
    case BinaryOp::Fmax:
      if (fl) return "((" + a + " > " + b + " || " + b + " != " + b + ") ? " + a + " : " + b + ")";
      return bl ? "(" + a + " | " + b + ")" : "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::Fmin:
      if (fl) return "((" + a + " < " + b + " || " + b + " != " + b + ") ? " + a + " : " + b + ")";
      return bl ? "(" + a + " & " + b + ")" : "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::Arctan2: return m2("atan2");
    case BinaryOp::Hypot: return m2("hypot");
    case BinaryOp::Copysign: return m2("copysign");
    case BinaryOp::Nextafter: return m2("nextafter");
    case BinaryOp::Logaddexp:
    case BinaryOp::Logaddexp2: {
      const bool two = op == BinaryOp::Logaddexp2;
      const std::string f = t == DType::Float32 ? "f" : "";
      const std::string lp = libm(reg, "log1p", t, 1), ex = libm(reg, two ? "exp2" : "exp", t, 1);
      const std::string name = std::string(two ? "nf_logaddexp2_" : "nf_logaddexp_") + s;
      const std::string ln2 = "0.693147180559945309417232121458176568";
      const std::string log1p_ = two ? "(" + lp + "(" + ex + "(-t)) * (" + T + ")1.442695040888963407359924681001892137)"
                                     : lp + "(" + ex + "(-t))";
      const std::string log1p_pos = two ? "(" + lp + "(" + ex + "(t)) * (" + T + ")1.442695040888963407359924681001892137)"
                                        : lp + "(" + ex + "(t))";
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

const char* struct_c_type(DType t) {
  if (t == DType::Complex64) return "nf_c64";
  if (t == DType::Complex128) return "nf_c128";
  return c_type(t);
}

const std::string& complex_struct_prelude() {
  static const std::string p =
      "typedef struct { float re, im; } nf_c64;\n"
      "typedef struct { double re, im; } nf_c128;\n"
      "static inline nf_c64 nf_cmk_c64(float r, float i) { nf_c64 z; z.re = r; z.im = i; return z; }\n"
      "static inline nf_c128 nf_cmk_c128(double r, double i) { nf_c128 z; z.re = r; z.im = i; return z; }\n";
  return p;
}

const char* suffix(DType t) {
  static const char* s[] = {"b", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "c64", "c128"};
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
    case ReduceOp::Any: return "(" + a + " | " + spell_cast(reg, b, t, DType::Bool) + ")";
    case ReduceOp::All: return "(" + a + " & " + spell_cast(reg, b, t, DType::Bool) + ")";
    default: break;
  }
  throw std::logic_error("spell_combine: arg-reductions use spell_arg_better");
}

std::string spell_arg_better(ReduceOp op, DType t, const std::string& acc, const std::string& ai, const std::string& v,
                             const std::string& vi, HelperSet& helpers, bool later) {
  if (is_complex(t)) throw std::logic_error("spell_arg_better: complex arg-reductions run NumPy's");
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

// Build-time generator of the tier-0 loop library (runtime/tier0.h).
//
// Tier 0 runs tasks without compiling anything: an interpreter walks a
// task's expression and calls, per node, a precompiled loop over a block of
// elements. Those loops are generated here from the very spellings the JIT
// kernels use (codegen::spell_scalar), so the two tiers compute every scalar
// operation with the same C expression: one definition of NumPy's semantics.
//
// Output: C files defining the loops (several, so they compile in
// parallel) and a table (kind, op, operand types, result type, function)
// that runtime/tier0.cc indexes at startup.
// Loop ABI (NumPy's): void f(char** args, const int64_t* steps, int64_t n),
// args = operands then the result, steps in bytes.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/scalar_c.h"

using namespace nf;

namespace {

struct Entry {
  int kind;  // 0 cast, 1 unary, 2 binary, 3 select (as tier0_abi.h)
  int op;
  int t0, t1, tr;
  std::string fn;
};

// Operations NumPy defines only for floats (an integer operand is cast to a
// float loop first) or only for integers: no loop is generated for the other
// kinds (some would not even compile: ~x of a double).
bool defined(const ExprNode& node, const std::vector<DType>& ts) {
  const bool fl = is_inexact(ts.back());  // (complex operations NumPy lacks throw in spell_scalar)
  if (node.kind == ExprNode::Kind::Unary) {
    switch (static_cast<UnaryOp>(node.op)) {
      case UnaryOp::Invert: return !fl;
      case UnaryOp::Sqrt: case UnaryOp::Cbrt: case UnaryOp::Exp: case UnaryOp::Exp2: case UnaryOp::Expm1:
      case UnaryOp::Log: case UnaryOp::Log2: case UnaryOp::Log10: case UnaryOp::Log1p: case UnaryOp::Sin:
      case UnaryOp::Cos: case UnaryOp::Tan: case UnaryOp::Arcsin: case UnaryOp::Arccos: case UnaryOp::Arctan:
      case UnaryOp::Sinh: case UnaryOp::Cosh: case UnaryOp::Tanh: case UnaryOp::Arcsinh: case UnaryOp::Arccosh:
      case UnaryOp::Arctanh: case UnaryOp::Erf: case UnaryOp::Deg2rad: case UnaryOp::Rad2deg:
        return fl;
      default: return true;
    }
  }
  if (node.kind == ExprNode::Kind::Binary) {
    switch (static_cast<BinaryOp>(node.op)) {
      case BinaryOp::BitwiseAnd: case BinaryOp::BitwiseOr: case BinaryOp::BitwiseXor: case BinaryOp::LeftShift:
      case BinaryOp::RightShift:
        return !fl;
      case BinaryOp::TrueDivide: case BinaryOp::Arctan2: case BinaryOp::Hypot: case BinaryOp::Copysign:
      case BinaryOp::Logaddexp: case BinaryOp::Logaddexp2: case BinaryOp::Nextafter:
        return fl;
      default: return true;
    }
  }
  return true;
}

const char* value_type(DType t) { return t == DType::Bool ? "_Bool" : c_type(t); }
const char* memory_type(DType t) { return t == DType::Bool ? "uint8_t" : c_type(t); }

// Reads operand k (named v<k>) of type t at element i through pointer p<k>.
std::string load(DType t, int k, const std::string& index) {
  const std::string at = "*(const " + std::string(memory_type(t)) + "*)(p" + std::to_string(k) + " + " + index + ")";
  return t == DType::Bool ? "(" + at + " != 0)" : at;
}

class Generator {
 public:
  // Emits loop `name` computing `expr` (over v0..v{nin-1}) into a result of
  // type tr; operand types in `ts`.
  void loop(const std::string& name, const std::vector<DType>& ts, DType tr, const std::string& expr) {
    const int nin = static_cast<int>(ts.size());
    std::ostringstream o;
    // AVX-512 and AVX2 clones beside the baseline one, chosen at load time (ifunc).
    o << "__attribute__((target_clones(\"avx512f\", \"avx2\", \"default\")))\n";
    o << "void " << name << "(char** args, const int64_t* steps, int64_t n) {\n";
    for (int k = 0; k < nin; ++k)
      o << "  const char* p" << k << " = args[" << k << "]; const int64_t s" << k << " = steps[" << k << "];\n";
    o << "  char* pr = args[" << nin << "]; const int64_t sr = steps[" << nin << "];\n";
    // Specializations the compiler can vectorize: every operand contiguous,
    // or contiguous with one operand broadcast (a scalar).
    auto body = [&](const std::vector<std::string>& idx, const std::string& ridx) {
      std::string b;
      for (int k = 0; k < nin; ++k)
        b += "      const " + std::string(value_type(ts[k])) + " v" + std::to_string(k) + " = " + load(ts[k], k, idx[k]) +
             ";\n";
      b += "      *(" + std::string(memory_type(tr)) + "*)(pr + " + ridx + ") = (" + memory_type(tr) + ")(" + expr +
           ");\n";
      return b;
    };
    auto contiguous = [&](int k) { return "s" + std::to_string(k) + " == " + std::to_string(itemsize(ts[k])); };
    const std::string rc = "sr == " + std::to_string(itemsize(tr));
    std::vector<std::string> cont_idx, strided_idx;
    for (int k = 0; k < nin; ++k) {
      cont_idx.push_back("i * " + std::to_string(itemsize(ts[k])));
      strided_idx.push_back("i * s" + std::to_string(k));
    }
    const std::string rcont = "i * " + std::to_string(itemsize(tr));
    std::string cond = rc;
    for (int k = 0; k < nin; ++k) cond += " && " + contiguous(k);
    o << "  if (" << cond << ") {\n    for (int64_t i = 0; i < n; ++i) {\n" << body(cont_idx, rcont) << "    }\n";
    o << "    return;\n  }\n";
    // Broadcast operands (scalars: a constant, a 0-d array): for two
    // operands either one; for a select (condition, a, b) either value or
    // both (where(c, 1.0, 0.0)), the condition contiguous.
    std::vector<std::vector<int>> broadcasts;
    if (nin == 2) broadcasts = {{0}, {1}};
    if (nin == 3) broadcasts = {{1}, {2}, {1, 2}};
    // where(a OP b, c, d): compared with a scalar, choosing between arrays
    // or scalars (where(x > 0, x, 0), clip's where(x < lo, lo, x)).
    if (nin == 4) broadcasts = {{1}, {1, 2}, {1, 3}, {2, 3}, {1, 2, 3}};
    for (const std::vector<int>& bs : broadcasts) {
      std::vector<std::string> idx = cont_idx;
      std::string c = rc;
      for (int k = 0; k < nin; ++k) {
        const bool b = std::find(bs.begin(), bs.end(), k) != bs.end();
        if (b) idx[k] = "0";
        c += " && " + (b ? "s" + std::to_string(k) + " == 0" : contiguous(k));
      }
      o << "  if (" << c << ") {\n";
      o << "    for (int64_t i = 0; i < n; ++i) {\n" << body(idx, rcont) << "    }\n    return;\n  }\n";
    }
    if (expr.find("nf_m_") == std::string::npos) {
      o << "  for (int64_t i = 0; i < n; ++i) {\n" << body(strided_idx, "i * sr") << "  }\n}\n";
      loops_.push_back(o.str());
      return;
    }
    // Strided operands of a math function (runtime/vmath.h): through
    // contiguous blocks, so the function runs in its vector form (one
    // element a call in a strided loop costs a whole vector's work).
    constexpr int kBlock = 64;
    o << "  for (int64_t i0 = 0; i0 < n; i0 += " << kBlock << ") {\n";
    o << "    const int64_t m = n - i0 < " << kBlock << " ? n - i0 : " << kBlock << ";\n";
    for (int k = 0; k < nin; ++k) {
      const std::string K = std::to_string(k), T = memory_type(ts[k]);
      o << "    " << T << " b" << K << "[" << kBlock << "] __attribute__((aligned(64)));\n";
      o << "    for (int64_t i = 0; i < m; ++i) b" << K << "[i] = *(const " << T << "*)(p" << K << " + (i0 + i) * s" << K
        << ");\n";
    }
    o << "    " << memory_type(tr) << " br[" << kBlock << "] __attribute__((aligned(64)));\n    {\n";
    for (int k = 0; k < nin; ++k)
      o << "      const char* p" << k << " = (const char*)b" << k << ";\n";
    o << "      char* pr = (char*)br;\n      for (int64_t i = 0; i < m; ++i) {\n" << body(cont_idx, rcont) << "      }\n    }\n";
    o << "    for (int64_t i = 0; i < m; ++i) *(" << memory_type(tr) << "*)(pr + (i0 + i) * sr) = br[i];\n  }\n}\n";
    loops_.push_back(o.str());
  }

  void add(int kind, int op, DType t0, DType t1, DType tr, const std::vector<DType>& ts, const ExprNode& node) {
    if (!defined(node, ts)) return;
    std::vector<std::string> args;
    for (size_t k = 0; k < ts.size(); ++k) args.push_back("v" + std::to_string(k));
    std::string expr;
    try {
      expr = codegen::spell_scalar(node, args, ts, helpers_);
    } catch (const std::exception&) {
      return;  // no such loop (an operation not defined on this type)
    }
    const std::string name = "NF_T0(" + std::to_string(entries_.size()) + ")";
    loop(name, ts, tr, expr);
    entries_.push_back({kind, op, static_cast<int>(t0), static_cast<int>(t1), static_cast<int>(tr), name});
  }

  // The unsigned type as wide as t, whose bits a select copies (Bool: none,
  // a complex type).
  static DType bits_of(DType t) {
    switch (itemsize(t)) {
      case 1: return DType::UInt8;
      case 2: return DType::UInt16;
      case 4: return DType::UInt32;
      case 8: return DType::UInt64;
      default: return DType::Bool;
    }
  }

  // where(c, a, b) on values of type t: on their bits through a mask where
  // the type is 1-8 bytes wide (a branch per element, as `c ? a : b` spells
  // it in the loops' scalar remainders, costs a misprediction per random
  // condition: 6x slower on a 122-point block); complex values as spelled.
  void select(DType t) {
    const ExprNode node{ExprNode::Kind::Select, t, 0, 0, 1, 2};
    const DType bits = bits_of(t);
    if (bits == DType::Bool) {
      add(3, 0, t, t, t, {DType::Bool, t, t}, node);
      return;
    }
    const std::string u = c_type(bits);
    const std::string m = "(-(" + u + ")v0)";
    const std::string name = "NF_T0(" + std::to_string(entries_.size()) + ")";
    loop(name, {DType::Bool, bits, bits}, bits, "((v1 & " + m + ") | (v2 & ~" + m + "))");
    entries_.push_back({3, 0, static_cast<int>(t), static_cast<int>(t), static_cast<int>(t), name});
  }

  // where(a OP b, c, d) for a comparison OP, all four operands of type t
  // (kind 4): the comparison's result never stored as bytes between two
  // loops (a compare mask chooses between c's and d's bits).
  void select_compare(int op, DType t) {
    const DType bits = bits_of(t);
    if (bits == DType::Bool) return;
    const ExprNode cmp{ExprNode::Kind::Binary, DType::Bool, static_cast<uint8_t>(op), 0, 1};
    std::string c;
    try {
      c = codegen::spell_scalar(cmp, {"v0", "v1"}, {t, t}, helpers_);
    } catch (const std::exception&) {
      return;
    }
    const std::string u = c_type(bits);
    const std::string m = "(-(" + u + ")(_Bool)" + c + ")";
    const std::string name = "NF_T0(" + std::to_string(entries_.size()) + ")";
    loop(name, {t, t, bits, bits}, bits, "((v2 & " + m + ") | (v3 & ~" + m + "))");
    entries_.push_back({4, op, static_cast<int>(t), static_cast<int>(t), static_cast<int>(t), name});
  }

  // The loops in `parts` files (compiled in parallel) and the table.
  std::vector<std::string> files(int parts) const {
    // The one-implementation math functions (runtime/vmath.h, nf_m_exp):
    // declared `simd` for the build's compiler (NF_VM_SIMD), so contiguous
    // loops call their vector forms (_ZGVdN4v_nf_m_exp), which compute what
    // the scalar form and the JIT kernels compute.
    std::istringstream defs(helpers_.definitions());
    std::ostringstream helpers;
    for (std::string line; std::getline(defs, line);) {
      // "double nf_m_exp(double) __attribute__((const));"
      const size_t sp = line.find(' '), paren = line.find('(');
      if (sp != std::string::npos && paren != std::string::npos && line.back() == ';' && line.find('{') == std::string::npos &&
          line.compare(sp + 1, 5, "nf_m_") == 0)
        line.insert(line.size() - 1, " NF_VM_SIMD");
      helpers << line << "\n";
    }
    const std::string head =
        "/* Generated by src/codegen/gen/tier0_gen.cc: tier-0 loops, spelled as the JIT kernels spell them. */\n"
        "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
        "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
        "typedef unsigned long long uint64_t;\n"
        "#include \"runtime/tier0_abi.h\"\n"
        "/* The library is compiled once per instruction-set level (NF_T0_ISA: base, v3, v4); each\n"
        " * level's loops and table carry its name. */\n"
        "#ifndef NF_T0_ISA\n#define NF_T0_ISA base\n#endif\n"
        "#define NF_T0_CAT2(a, b) a##_##b\n#define NF_T0_CAT(a, b) NF_T0_CAT2(a, b)\n"
        "#define NF_T0(k) NF_T0_CAT(nf_t0_##k, NF_T0_ISA)\n"
        "/* GCC calls the vector forms of a `simd` function by the x86-64 vector ABI (runtime/vmath.c\n"
        " * defines them); elsewhere the loops call the scalar forms. */\n"
        "#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)\n"
        "#define NF_VM_SIMD __attribute__((simd(\"notinbranch\")))\n#else\n#define NF_VM_SIMD\n#endif\n";
    std::vector<std::string> out;
    for (int p = 0; p < parts; ++p) {
      std::string f = head + helpers.str();
      for (size_t k = p; k < loops_.size(); k += parts) f += loops_[k];
      out.push_back(f);
    }
    std::ostringstream t;
    t << head;
    for (const Entry& e : entries_) t << "void " << e.fn << "(char** args, const int64_t* steps, int64_t n);\n";
    t << "const struct nf_t0_entry NF_T0_CAT(nf_t0_table, NF_T0_ISA)[] = {\n";
    for (const Entry& e : entries_)
      t << "  {" << e.kind << ", " << e.op << ", " << e.t0 << ", " << e.t1 << ", " << e.tr << ", " << e.fn << "},\n";
    t << "};\nconst int NF_T0_CAT(nf_t0_table_size, NF_T0_ISA) = " << entries_.size() << ";\n";
    out.push_back(t.str());
    return out;
  }

 private:
  codegen::HelperSet helpers_;
  std::vector<std::string> loops_;
  std::vector<Entry> entries_;
};

}  // namespace

int main(int argc, char** argv) {
  // tier0_gen PART0.c ... PARTn-1.c TABLE.c
  if (argc < 3) {
    std::cerr << "usage: tier0_gen PART.c... TABLE.c\n";
    return 2;
  }
  Generator g;
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType from = static_cast<DType>(i);
    for (int j = 0; j < kNumDTypes; ++j) {
      const DType to = static_cast<DType>(j);
      g.add(0, 0, from, from, to, {from}, ExprNode{ExprNode::Kind::Cast, to, 0, 0});
    }
  }
  for (int op = 0; op < static_cast<int>(UnaryOp::Count); ++op) {
    for (int i = 0; i < kNumDTypes; ++i) {
      const DType t = static_cast<DType>(i);
      // (absolute of a complex number is real)
      const DType r = is_predicate(static_cast<UnaryOp>(op))                              ? DType::Bool
                      : static_cast<UnaryOp>(op) == UnaryOp::Absolute && is_complex(t) ? real_part_type(t)
                                                                                         : t;
      g.add(1, op, t, t, r, {t}, ExprNode{ExprNode::Kind::Unary, r, static_cast<uint8_t>(op), 0});
    }
  }
  for (int op = 0; op < static_cast<int>(BinaryOp::Count); ++op) {
    const bool cmp = is_comparison(static_cast<BinaryOp>(op));
    for (int i = 0; i < kNumDTypes; ++i) {
      for (int j = 0; j < kNumDTypes; ++j) {
        const DType a = static_cast<DType>(i), b = static_cast<DType>(j);
        // Same-type loops, and the mixed-sign integer comparisons NumPy 2 has.
        const bool mixed = cmp && a != b && is_integer(a) && is_integer(b) &&
                           (kind(a) == Kind::Signed) != (kind(b) == Kind::Signed);
        if (a != b && !mixed) continue;
        const DType r = cmp ? DType::Bool : a;
        g.add(2, op, a, b, r, {a, b}, ExprNode{ExprNode::Kind::Binary, r, static_cast<uint8_t>(op), 0, 1});
      }
    }
  }
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    g.select(t);
  }
  for (int op = 0; op < static_cast<int>(BinaryOp::Count); ++op) {
    if (!is_comparison(static_cast<BinaryOp>(op))) continue;
    for (int i = 0; i < kNumDTypes; ++i) {
      const DType t = static_cast<DType>(i);
      if (t != DType::Bool && !is_complex(t)) g.select_compare(op, t);
    }
  }
  const std::vector<std::string> files = g.files(argc - 2);
  for (int i = 1; i < argc; ++i) {
    std::ofstream out(argv[i]);
    out << files[i - 1];
    if (!out.good()) return 1;
  }
  return 0;
}

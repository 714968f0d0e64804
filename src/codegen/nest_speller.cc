// NestSpeller (nest_speller.h): a LoopNest's expressions and its
// target-independent statements as C-like source.
#include "codegen/nest_speller.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace nf::codegen::detail {

using lower::Ex;
using lower::ExP;
using lower::LoopKind;
using lower::Scope;
using lower::Stmt;
using lower::StmtP;

bool NestSpeller::is_pointer(const std::string& name) {
  if (name.size() < 2 || name[0] != 'p') return false;
  for (size_t i = 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

std::string NestSpeller::ex(const Ex& e) {
  switch (e.k) {
    case Ex::K::Var:
      return e.name;
    case Ex::K::IntLit:
      if (is_complex(e.dtype))
        return complex_of(e.dtype, spell_float(static_cast<double>(e.ival), real_part_type(e.dtype)),
                          spell_float(0.0, real_part_type(e.dtype)));
      return e.dtype == DType::Int64 || e.dtype == DType::Bool ? spell_int(e.ival, e.dtype)
                                                               : spell_int(e.ival, e.dtype);
    case Ex::K::FloatLit:
      if (is_complex(e.dtype)) {
        const DType p = real_part_type(e.dtype);
        return complex_of(e.dtype, spell_float(e.fval, p), spell_float(e.fimag, p));
      }
      return spell_float(e.fval, e.dtype);
    case Ex::K::IntParam:
      if (e.dtype == DType::Int64) return "ip[" + std::to_string(e.slot) + "]";
      if (e.dtype == DType::Bool) return "(ip[" + std::to_string(e.slot) + "] != 0)";
      return "((" + std::string(c_type(e.dtype)) + ")ip[" + std::to_string(e.slot) + "])";
    case Ex::K::FloatParam:
      if (is_complex(e.dtype)) {
        const std::string c = e.dtype == DType::Complex64 ? "(float)" : "";
        return complex_of(e.dtype, c + "fp[" + std::to_string(e.slot) + "]", c + "fp[" + std::to_string(e.slot + 1) + "]");
      }
      return e.dtype == DType::Float32 ? "((float)fp[" + std::to_string(e.slot) + "])"
                                       : "fp[" + std::to_string(e.slot) + "]";
    case Ex::K::Load:
      if (e.dtype == DType::Bool && is_pointer(e.name)) return "(" + lvalue(e) + " != 0)";
      return lvalue(e);
    case Ex::K::Arith: {
      std::string a = ex(*e.args[0]), b = ex(*e.args[1]);
      if (e.op == 'm') return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
      if (e.op == 'M') return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
      if (e.op == '&') return "(" + a + " && " + b + ")";
      return "(" + a + " " + e.op + " " + b + ")";
    }
    case Ex::K::Scalar: {
      std::vector<std::string> args;
      std::vector<DType> types;
      for (const ExP& a : e.args) {
        args.push_back(ex(*a));
        types.push_back(a->dtype);
      }
      return spell_scalar(e.node, args, types, helpers_);
    }
    case Ex::K::Combine:
      if (e.args.size() == 4)
        return spell_arg_better(e.rop, e.dtype, ex(*e.args[0]), ex(*e.args[1]), ex(*e.args[2]), ex(*e.args[3]),
                                helpers_, e.ival == 1);
      return spell_combine(e.rop, e.dtype, ex(*e.args[0]), ex(*e.args[1]), helpers_);
    case Ex::K::ThreadIndex:
    case Ex::K::ThreadCount:
    case Ex::K::MaxThreads:
      return thread_ex(e);
    case Ex::K::Address:  // (kernel pointers of a multi-stage kernel are bytes)
      return "((uint8_t*)" + e.name + " + " + ex(*e.args[0]) + ")";
    case Ex::K::TileBound:
      throw std::logic_error(std::string(who()) + ": a TileBound (the unroll pass removes them)");
  }
  throw std::logic_error(std::string(who()) + ": bad expression");
}

void NestSpeller::stmt(std::ostringstream& os, const Stmt& s, int d) {
  switch (s.k) {
    case Stmt::K::Block:
      os << indent(d) << "{\n";
      for (const StmtP& c : s.body) stmt(os, *c, d + 1);
      os << indent(d) << "}\n";
      return;
    case Stmt::K::For:
      return loop(os, s, d);
    case Stmt::K::Decl:
      os << indent(d) << type(s.dtype) << " " << s.name;
      if (s.init) os << " = " << ex(*s.init);
      os << ";\n";
      return;
    case Stmt::K::If:
      os << indent(d) << "if (" << ex(*s.cond) << ") {\n";
      for (const StmtP& c : s.body) stmt(os, *c, d + 1);
      os << indent(d) << "} else {\n";
      for (const StmtP& c : s.else_body) stmt(os, *c, d + 1);
      os << indent(d) << "}\n";
      return;
    case Stmt::K::Assign:
      os << indent(d) << (s.target->k == Ex::K::Load ? lvalue(*s.target) : ex(*s.target)) << " = " << ex(*s.value)
         << ";\n";
      return;
    case Stmt::K::Alloc:
      return alloc(os, s, d);
    case Stmt::K::Free:
      os << indent(d) << "free(" << s.name << ");\n";
      return;
    case Stmt::K::Barrier:
      return barrier(os, d);
    case Stmt::K::Comment:
      os << indent(d) << "/* " << s.text << " */\n";
      return;
    case Stmt::K::Stage:
      return stage(os, s, d);
    case Stmt::K::FullSplit:
      throw std::logic_error(std::string(who()) + ": a FullSplit (the unroll pass removes them)");
    case Stmt::K::TileIn:
      throw std::logic_error(std::string(who()) + ": a TileIn (the tile_buffers pass removes them)");
  }
}


void NestSpeller::barrier(std::ostringstream&, int) {
  throw std::logic_error(std::string(who()) + ": a Barrier (the target's tail removes them)");
}

void NestSpeller::plain_loop(std::ostringstream& os, const Stmt& s, int d) {
  os << indent(d) << "for (int64_t " << s.name << " = " << ex(*s.lo) << "; " << s.name << " < " << ex(*s.hi) << "; "
     << s.name << " += " << ex(*s.step) << ") {\n";
  for (const StmtP& c : s.body) stmt(os, *c, d + 1);
  os << indent(d) << "}\n";
}

void NestSpeller::heap_alloc(std::ostringstream& os, const Stmt& s, int d) {
  uses_alloc_ = true;
  os << indent(d) << type(s.dtype) << "* " << s.name << " = (" << type(s.dtype) << "*)malloc(sizeof("
     << type(s.dtype) << ") * (unsigned long)(" << ex(*s.count) << " > 0 ? " << ex(*s.count) << " : 1));\n";
}

}  // namespace nf::codegen::detail

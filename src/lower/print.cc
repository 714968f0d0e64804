// The loop IR as text (NUMFUSE_DUMP=passes): one statement per line, loops
// with their kind, allocations with their scope.
#include <sstream>

#include "lower/lower.h"

namespace nf::lower {

namespace {

const char* loop_name(LoopKind l) {
  switch (l) {
    case LoopKind::Serial: return "";
    case LoopKind::Vectorized: return " vectorized";
    case LoopKind::Unrolled: return " unrolled";
    case LoopKind::Cores: return " cores";
    case LoopKind::Parallel: return " parallel";
    case LoopKind::GpuBlocks: return " gpu-blocks";
    case LoopKind::GpuThreads: return " gpu-threads";
  }
  return "";
}

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::Local: return "local";
    case Scope::Thread: return "thread";
    case Scope::Kernel: return "kernel";
    case Scope::GpuShared: return "gpu-shared";
    case Scope::GpuPrivate: return "gpu-private";
  }
  return "";
}

std::string ex(const Ex& e) {
  auto arg = [&](size_t i) { return ex(*e.args[i]); };
  switch (e.k) {
    case Ex::K::Var: return e.name;
    case Ex::K::IntLit: return std::to_string(e.ival);
    case Ex::K::FloatLit: {
      std::ostringstream os;
      os.precision(17);
      os << e.fval;
      if (is_complex(e.dtype)) os << (e.fimag < 0 ? "" : "+") << e.fimag << "j";
      return os.str();
    }
    case Ex::K::IntParam: return "ip[" + std::to_string(e.slot) + "]";
    case Ex::K::FloatParam: return "fp[" + std::to_string(e.slot) + "]";
    case Ex::K::Load: return e.name + "[" + arg(0) + "]";
    case Ex::K::Arith:
      if (e.op == 'm') return "min(" + arg(0) + ", " + arg(1) + ")";
      if (e.op == 'M') return "max(" + arg(0) + ", " + arg(1) + ")";
      if (e.op == '&') return "(" + arg(0) + " and " + arg(1) + ")";
      return "(" + arg(0) + " " + e.op + " " + arg(1) + ")";
    case Ex::K::Scalar: {
      std::string name;
      switch (e.node.kind) {
        case ExprNode::Kind::Cast: name = std::string(dtype_name(e.dtype)); break;
        case ExprNode::Kind::Unary: name = unary_name(static_cast<UnaryOp>(e.node.op)); break;
        case ExprNode::Kind::Binary: name = binary_name(static_cast<BinaryOp>(e.node.op)); break;
        case ExprNode::Kind::Select: name = "where"; break;
        default: name = "op"; break;
      }
      std::string s = name + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + arg(i);
      return s + ")";
    }
    case Ex::K::Combine: {
      std::string s = std::string(reduce_name(e.rop)) + (e.args.size() == 4 ? "_better(" : "(");
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + arg(i);
      return s + ")";
    }
    case Ex::K::ThreadIndex: return "thread_index";
    case Ex::K::ThreadCount: return "thread_count";
    case Ex::K::MaxThreads: return "max_threads";
    case Ex::K::Address: return "&" + e.name + "[" + arg(0) + " bytes]";
    case Ex::K::TileBound: return "(full: " + arg(0) + " | clipped: " + arg(1) + ")";
  }
  return "?";
}

// A register's mark: its operator, arg index register, order; a memory
// combine's: the same, its index element, the registers it may become.
std::string accumulator(const Stmt::Accumulator& a) {
  std::string s = std::string(" ") + reduce_name(a.op);
  if (a.index_at) s += " index " + ex(*a.index_at);
  else if (!a.index.empty()) s += " index " + a.index;
  if (a.ordered) s += " in order";
  if (!a.reg.empty()) s += " (register " + a.reg + (a.index.empty() ? "" : ", " + a.index) + ")";
  return s;
}

void stmt(std::ostringstream& os, const Stmt& s, int d) {
  const std::string ind(2 * d, ' ');
  auto list = [&](const std::vector<StmtP>& b) {
    for (const StmtP& c : b) stmt(os, *c, d + 1);
  };
  switch (s.k) {
    case Stmt::K::Block:
      os << ind << "{\n";
      list(s.body);
      os << ind << "}\n";
      return;
    case Stmt::K::For:
      if (s.loop == LoopKind::Cores) {
        os << ind << "cores" << (s.cond ? " if " + ex(*s.cond) : "") << (s.name.empty() ? "" : " -> " + s.name)
           << ":\n";
      } else {
        os << ind << "for " << s.name << " in [" << ex(*s.lo) << ", " << ex(*s.hi) << ") step " << ex(*s.step)
           << loop_name(s.loop);
        if (s.loop == LoopKind::Parallel && s.cond) os << " if " << ex(*s.cond);
        if (s.loop == LoopKind::GpuBlocks && s.threads > 0) os << " of " << s.threads << " threads";
        if (!s.share_reductions.empty()) {
          os << " combining";
          for (const Stmt::ShareReduction& r : s.share_reductions) {
            os << " " << r.array << ":" << reduce_name(r.op);
            if (!r.index.empty()) os << "+" << r.index;
            if (!r.reg.empty()) os << " (pairwise " << r.reg << ")";
          }
        }
        if (!s.simd_reductions.empty()) {
          os << " reducing";
          for (const auto& [v, op] : s.simd_reductions) os << " " << v << ":" << op;
        }
        if (!s.splits.empty()) {
          os << " splitting";
          for (const Stmt::Split& r : s.splits) os << " " << r.acc << ":" << reduce_name(r.op);
        }
        if (s.pairwise) {
          os << " pairwise";
          for (const auto& [reg, part] : s.pairwise_parts) os << " " << reg << " -> " << part;
        }
        if (s.unroll) os << " (full path:" << (s.full_kind == LoopKind::Serial ? " serial" : loop_name(s.full_kind)) << ")";
        os << ":\n";
      }
      list(s.body);
      return;
    case Stmt::K::Decl:
      os << ind << dtype_name(s.dtype) << " " << s.name << (s.init ? " = " + ex(*s.init) : "");
      if (s.accumulates) os << "  accumulates" << accumulator(*s.accumulates);
      os << "\n";
      return;
    case Stmt::K::Assign:
      os << ind << ex(*s.target) << " = " << ex(*s.value);
      if (s.accumulates) os << "  accumulates" << accumulator(*s.accumulates);
      os << "\n";
      return;
    case Stmt::K::Alloc:
      os << ind << "alloc " << scope_name(s.scope) << " " << dtype_name(s.dtype) << " " << s.name << "["
         << ex(*s.count) << "]\n";
      return;
    case Stmt::K::Free:
      os << ind << "free " << s.name << "\n";
      return;
    case Stmt::K::Barrier:
      os << ind << "barrier\n";
      return;
    case Stmt::K::Comment:
      os << ind << "# " << s.text << "\n";
      return;
    case Stmt::K::Stage: {
      os << ind << "stage(";
      for (size_t i = 0; i < s.args.size(); ++i)
        os << (i ? ", " : "") << "p" << i << ": " << dtype_name(s.arg_types[i]) << " = " << ex(*s.args[i]);
      os << "; ip = " << s.name << ", fp = fp + " << s.fp_base << (s.contract ? ", contract" : "") << "):\n";
      list(s.body);
      return;
    }
    case Stmt::K::TileIn: {
      const TileSpec& c = *s.tile;
      os << ind << "tile " << c.name << ": " << dtype_name(c.dtype) << (c.output ? " -> " : " <- ") << c.ptr << " [";
      for (size_t k = 0; k < c.layout.size(); ++k)
        os << (k ? ", " : "") << "d" << c.layout[k] << ": " << ex(*c.base[k]) << " + " << ex(*c.size[k])
           << " (to " << ex(*c.end[k]) << ")" << (c.block[k] ? " in blocks of " + std::to_string(c.block[k]) : "");
      os << "]" << (c.full_split ? ", whole on the full path" : "") << "\n";
      return;
    }
    case Stmt::K::FullSplit:
      os << ind << "full-tile split, full path if " << ex(*s.cond) << ":\n";
      list(s.body);
      return;
    case Stmt::K::If:
      os << ind << "if " << ex(*s.cond) << ":\n";
      list(s.body);
      if (!s.else_body.empty()) {
        os << ind << "else:\n";
        list(s.else_body);
      }
      return;
  }
}

}  // namespace

std::string print(const LoopNest& n) {
  std::ostringstream os;
  os << "kernel " << n.name << "(";
  for (int i = 0; i < n.num_ptrs; ++i) os << (i ? ", " : "") << "p" << i << ": " << dtype_name(n.ptr_types[i]);
  os << ")\n";
  for (const StmtP& s : n.body) stmt(os, *s, 1);
  return os.str();
}

}  // namespace nf::lower

// MdHom in the notation of the MDH paper:
//   out_view<..>(o0:(i0,i1)↦(...)) ∘ md_hom<N0,N1>(f, (++, +)) ∘ inp_view<..>(b0:(i0,i1)↦(...))
#include <sstream>

#include "mdh/mdh.h"

namespace nf::mdh {

namespace {

std::string idx_vars(int nd) {
  std::string s = "(";
  for (int d = 0; d < nd; ++d) s += (d ? ",i" : "i") + std::to_string(d);
  return s + ")";
}

std::string index_fn(const MdHom& h, const Access& a, const Bindings* b) {
  std::ostringstream os;
  bool any = false;
  for (int d = 0; d < h.ndim; ++d) {
    if (a.kind[d] == StrideKind::Zero) continue;
    if (any) os << " + ";
    any = true;
    if (a.kind[d] == StrideKind::Unit) os << "i" << d;
    else if (b) os << b->ints[a.stride[d]] << "·i" << d;
    else os << "s" << a.stride[d] << "·i" << d;
  }
  if (!any) os << "0";
  return os.str();
}

std::string op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "+";
    case ReduceOp::Prod: return "*";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Any: return "or";
    case ReduceOp::All: return "and";
    case ReduceOp::ArgMax: return "argmax";
    case ReduceOp::ArgMin: return "argmin";
    default: return "?";
  }
}

// The combine operator of dimension d: ++ (concatenation), a point-wise
// operator, ps(op) (prefix sum), or a list when outputs differ.
std::string combine_name(const MdHom& h, int d) {
  std::string s;
  bool concat = false;
  for (const Output& o : h.outputs) {
    if (h.pointwise(o, d)) s = op_name(o.op);
    else if (o.scan_dim == d) s = "ps(" + op_name(o.op) + ")";
    else concat = true;
  }
  if (s.empty()) return "++";
  return concat ? "(++," + s + ")" : s;
}

}  // namespace

std::string to_string(const MdHom& h, const Bindings* b) {
  std::ostringstream os;
  const std::string vars = idx_vars(h.ndim);
  os << "out_view(";
  for (size_t i = 0; i < h.outputs.size(); ++i) {
    const Output& o = h.outputs[i];
    os << (i ? ", " : "") << "b" << o.access << ":" << vars << "↦" << index_fn(h, h.accesses[o.access], b);
  }
  os << ")\n  ∘ md_hom<";
  for (int d = 0; d < h.ndim; ++d) {
    os << (d ? "," : "");
    if (b) os << b->ints[h.extent[d]];
    else os << "N" << d;
  }
  os << ">(f, (";
  for (int d = 0; d < h.ndim; ++d) os << (d ? ", " : "") << combine_name(h, d);
  os << "))\n  ∘ inp_view(";
  bool first = true;
  for (size_t i = 0; i < h.accesses.size(); ++i) {
    if (!h.accesses[i].read) continue;
    os << (first ? "" : ", ") << "b" << i << ":" << vars << "↦" << index_fn(h, h.accesses[i], b);
    first = false;
  }
  os << ")\n  where f: ";
  for (size_t i = 0; i < h.outputs.size(); ++i)
    os << (i ? "; " : "") << "b" << h.outputs[i].access << " ← " << expr_to_string(h.f, h.outputs[i].value);
  if (h.prologue > 0) {
    // The scalar prologue (mdh.h): its nodes are computed once, before the points.
    os << "\n  where f's nodes 0.." << h.prologue - 1 << " (0-d: ";
    int stored = 0;
    for (const Output& o : h.outputs) stored += h.once(o) ? 1 : 0;
    os << stored << " stored) are computed once, before every point";
  }
  return os.str();
}

}  // namespace nf::mdh

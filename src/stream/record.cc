// The recorder. Everything NumPy would reject is rejected here, before a task
// exists, so a failed call leaves the window exactly as it was.
#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "stream/stream.h"

namespace nf {

namespace {

std::string shapes_msg(const std::vector<Dims>& shapes) {
  std::string s;
  for (const Dims& d : shapes) {
    std::string t = shape_str(d);
    // NumPy prints (3,) as "(3,)" and () as "()", separated by spaces.
    s += t + " ";
  }
  return s;
}

void append(Task&& t) { global_stream().record(std::move(t)); }  // (validated at commit)

// Copy task: dst[...] = cast(src) over dst's shape.
void record_copy(const View& src, const View& dst, const char* name) {
  Task t;
  t.kind = Task::Kind::Map;
  t.name = name;
  t.domain = dst.shape;
  t.inputs.push_back(broadcast_view(src, dst.shape));
  int x = t.expr.input(0, src.dtype);
  t.expr.cast(x, dst.dtype);
  t.output = dst;
  append(std::move(t));
}

}  // namespace

Dims broadcast_shapes(const std::vector<Dims>& shapes) {
  size_t nd = 0;
  for (const Dims& s : shapes) nd = std::max(nd, s.size());
  Dims out(nd, 1);
  for (const Dims& s : shapes) {
    size_t off = nd - s.size();
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[off + k];
      if (s[k] == o || s[k] == 1) continue;
      if (o == 1) {
        o = s[k];
        continue;
      }
      throw ValueError("operands could not be broadcast together with shapes " + shapes_msg(shapes));
    }
  }
  return out;
}

View broadcast_view(const View& v, const Dims& shape) {
  if (v.shape == shape) return v;
  if (v.ndim() > static_cast<int>(shape.size()))
    throw ValueError("cannot broadcast a non-scalar to a scalar array");
  View r = v;
  r.shape = shape;
  r.strides = Dims(shape.size(), 0);
  size_t off = shape.size() - v.shape.size();
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] == shape[off + k]) {
      r.strides[off + k] = v.strides[k];
    } else if (v.shape[k] == 1) {
      r.strides[off + k] = 0;
    } else {
      throw ValueError("operands could not be broadcast together with remapped shapes [original->remapped]: " +
                       shape_str(v.shape) + " and requested shape " + shape_str(shape));
    }
  }
  return r;
}

std::vector<int> keep_order(const Dims& shape, std::span<const View> like, bool iterator) {
  // NumPy's stable insertion sort over axes: an axis moves past another
  // only if every operand that can tell them apart agrees (by |stride| in
  // bytes); when operands disagree, C order wins; an operand cannot tell an
  // axis apart where its extent is 1 or, for the ufunc iterator, where its
  // stride is 0 (broadcast). The iterator (npyiter_find_best_axis_ordering)
  // sorts from the innermost axis outward; concatenate
  // (PyArray_CreateMultiSortedStridePerm) from the outermost inward. With
  // ambiguous pairs the two directions give different orders, so each is
  // kept as NumPy has it. `perm` is in sort order; the result outer to inner.
  const int nd = static_cast<int>(shape.size());
  std::vector<int> perm(nd);
  for (int k = 0; k < nd; ++k) perm[k] = iterator ? nd - 1 - k : k;
  auto votes = [&](const View& v, int ax) {
    if (static_cast<int>(v.shape.size()) != nd || v.shape[ax] == 1) return false;
    return !iterator || v.strides[ax] != 0;
  };
  // Whether axis `later` (now at a later sort position) belongs before
  // `earlier`: in the iterator's order when its stride is smaller, in
  // concatenate's when it is larger.
  auto should_swap = [&](int later, int earlier, bool* ambiguous) {
    bool swap = false;
    *ambiguous = true;
    for (const View& v : like) {
      if (!votes(v, later) || !votes(v, earlier)) continue;
      const int64_t is = itemsize(v.dtype);
      const int64_t s_later = std::llabs(v.strides[later] * is), s_earlier = std::llabs(v.strides[earlier] * is);
      const bool keep = iterator ? s_earlier <= s_later : s_later <= s_earlier;
      if (keep) swap = false;
      else if (*ambiguous) swap = true;
      *ambiguous = false;
    }
    return swap;
  };
  for (int i0 = 1; i0 < nd; ++i0) {
    int ipos = i0;
    const int j0 = perm[i0];
    for (int i1 = i0 - 1; i1 >= 0; --i1) {
      bool ambiguous = true;
      const bool swap = should_swap(j0, perm[i1], &ambiguous);
      if (ambiguous) continue;
      if (!swap) break;
      ipos = i1;
    }
    if (ipos != i0) {
      for (int i1 = i0; i1 > ipos; --i1) perm[i1] = perm[i1 - 1];
      perm[ipos] = j0;
    }
  }
  if (iterator) std::reverse(perm.begin(), perm.end());
  return perm;
}

View alloc_like_order(DType dtype, const Dims& shape, std::span<const View> like) {
  if (shape.size() < 2) return View::fresh(dtype, shape);
  return View::fresh_in_order(dtype, shape, keep_order(shape, like, true));
}

View alloc_new_like(DType dtype, const View& prototype) {
  if (prototype.ndim() < 2) return View::fresh(dtype, prototype.shape);
  return View::fresh_in_order(dtype, prototype.shape, keep_order(prototype.shape, std::span<const View>(&prototype, 1), false));
}

View copy_if_overlapping(const View& src, const View& dst) {
  if (src.buffer != dst.buffer || !views_overlap(src, dst) || src.same_as(dst)) return src;
  View tmp = View::fresh(src.dtype, src.shape);
  record_copy(src, tmp, "copy (overlap)");
  return tmp;
}

bool record_simple(const SimpleOp& s, View* result) {
  // The domain: the operands' broadcast shape (the destination's, if any).
  Dims domain = s.out ? s.out->shape : Dims();
  for (int k = 0; k < s.nin; ++k) {
    const View* v = s.view[k];
    if (!v) continue;
    if (v->ndim() > static_cast<int>(domain.size())) {
      Dims d(static_cast<size_t>(v->ndim()) - domain.size(), 1);
      for (int64_t e : domain) d.push_back(e);
      domain = d;
    }
    const size_t off = domain.size() - v->shape.size();
    for (size_t j = 0; j < v->shape.size(); ++j) {
      int64_t& e = domain[off + j];
      if (v->shape[j] == e || v->shape[j] == 1) continue;
      if (e != 1) return false;  // (record_map raises NumPy's error)
      e = v->shape[j];
    }
  }
  if (s.out && domain != s.out->shape) return false;
  if (s.out) {
    // An input overlapping the destination must be the destination itself.
    for (int k = 0; k < s.nin; ++k)
      if (s.view[k] && s.view[k]->buffer == s.out->buffer && views_overlap(*s.view[k], *s.out) &&
          !(s.view[k]->shape == domain && s.view[k]->same_as(*s.out)))
        return false;
  } else {
    // NumPy's order 'K' is C order when every array operand is C-ordered.
    for (int k = 0; k < s.nin; ++k)
      if (s.view[k] && s.view[k]->ndim() > 1 && !s.view[k]->is_c_contiguous()) return false;
  }
  // The result is built in *result (no View moved on the way).
  View& out = *result;
  if (s.out) out = *s.out;
  else View::fresh_into(out, s.node.dtype, domain);
  if (shape_size(domain) > 0) {
    Stream::Slot slot(global_stream());  // built in place in the window
    Task& t = slot.task();
    t.kind = Task::Kind::Map;
    t.name = s.node.kind == ExprNode::Kind::Unary    ? unary_name(static_cast<UnaryOp>(s.node.op))
             : s.node.kind == ExprNode::Kind::Binary ? binary_name(static_cast<BinaryOp>(s.node.op))
                                                     : "__setitem__";
    int args[2] = {-1, -1};
    for (int k = 0; k < s.nin; ++k) {
      if (const View* v = s.view[k]) {
        args[k] = t.expr.input(static_cast<int>(t.inputs.size()), v->dtype);
        if (v->shape == domain) t.inputs.push_back(*v);
        else t.inputs.push_back(broadcast_view(*v, domain));
      } else {
        args[k] = t.expr.constant(static_cast<int>(t.consts.size()), s.type[k]);
        t.consts.push_back(s.value[k]);
      }
    }
    if (s.node.kind == ExprNode::Kind::Cast) t.expr.cast(args[0], s.node.dtype);
    else if (s.node.kind == ExprNode::Kind::Unary) t.expr.unary(static_cast<UnaryOp>(s.node.op), args[0], s.node.dtype);
    else t.expr.binary(static_cast<BinaryOp>(s.node.op), args[0], args[1], s.node.dtype);
    if (t.expr.dtype() != out.dtype) t.expr.cast(t.expr.root(), out.dtype);
    t.output = out;
    t.domain = std::move(domain);
    slot.commit();
  }
  return true;
}

View record_map(MapSpec spec) {
  std::vector<Dims> shapes;
  shapes.reserve(spec.inputs.size() + 2);
  for (const View& v : spec.inputs) shapes.push_back(v.shape);
  if (spec.has_shape_hint) shapes.push_back(spec.shape_hint);
  if (spec.out) shapes.push_back(spec.out->shape);
  Dims domain;
  try {
    domain = broadcast_shapes(shapes);
  } catch (const ValueError&) {
    // NumPy lists every operand, scalars as (), then the output.
    if (spec.operand_shapes.empty()) throw;
    std::vector<Dims> all(spec.operand_shapes.begin(), spec.operand_shapes.end());
    if (spec.out) all.push_back(spec.out->shape);
    throw ValueError("operands could not be broadcast together with shapes " + shapes_msg(all));
  }
  const DType result = spec.expr.dtype();
  View out;
  if (spec.out) {
    out = *spec.out;
    if (domain != out.shape)
      throw ValueError("non-broadcastable output operand with shape " + shape_str(out.shape) +
                       " doesn't match the broadcast shape " + shape_str(domain));
    if (out.dtype != result) spec.expr.cast(spec.expr.root(), out.dtype);
  }
  InlineVector<View, 3> inputs;
  inputs.reserve(spec.inputs.size());
  for (const View& v : spec.inputs) inputs.push_back(broadcast_view(v, domain));
  if (!spec.out) out = alloc_like_order(result, domain, std::span<const View>(inputs.data(), inputs.size()));
  for (View& v : inputs) v = copy_if_overlapping(v, out);  // (may record copies: before the slot)
  if (shape_size(domain) > 0) {
    Stream::Slot slot(global_stream());  // built in place in the window
    Task& t = slot.task();
    t.kind = Task::Kind::Map;
    t.name = spec.name;
    t.inputs = std::move(inputs);
    t.domain = std::move(domain);
    t.consts = std::move(spec.consts);
    t.indices = std::move(spec.indices);
    t.expr = std::move(spec.expr);
    t.output = out;
    slot.commit();
  }
  return out;
}

namespace {

// NumPy's errors for a reduction's out= of the wrong shape.
[[noreturn]] void reduction_out_error(const ReduceSpec& spec, const View& out, const Dims& expected,
                                      const SmallVector<uint8_t, 16>& reduced) {
  if (spec.op == ReduceOp::ArgMax || spec.op == ReduceOp::ArgMin)
    throw ValueError(std::string("output array does not match result of np.") + reduce_name(spec.op) + ".");
  static const char* ufunc[] = {"add", "multiply", "maximum", "minimum", "logical_or", "logical_and"};
  const std::string name = ufunc[static_cast<int>(spec.op)];
  if (out.ndim() != static_cast<int>(expected.size()))
    throw ValueError("output parameter for reduction operation " + name + " has the wrong number of dimensions: " +
                     "Found " + std::to_string(out.ndim()) + " but expected " + std::to_string(expected.size()) +
                     (spec.keepdims ? " (must match the operand's when keepdims=True)" : ""));
  // The output seen over the input's axes (reduced ones are new axes),
  // broadcast with the input as NumPy's iterator does.
  Dims remapped, extents;
  for (size_t k = 0, j = 0; k < reduced.size(); ++k) {
    const bool gone = reduced[k] && !spec.keepdims;
    remapped.push_back(gone ? -1 : out.shape[j]);
    extents.push_back(gone ? 1 : out.shape[j]);
    if (!gone) ++j;
  }
  Dims b;
  try {
    b = broadcast_shapes({spec.input.shape, extents});
  } catch (const ValueError&) {
    throw ValueError("operands could not be broadcast together with remapped shapes [original->remapped]: " +
                     shape_str(out.shape) + "->" + shape_str(remapped) + " " + shape_str(spec.input.shape) + " ");
  }
  if (b != spec.input.shape)
    throw ValueError("non-broadcastable operand with shape " + shape_str(spec.input.shape) +
                     " doesn't match the broadcast shape " + shape_str(b));
  for (int j = 0; j < out.ndim(); ++j)
    if (out.shape[j] == 1 && expected[j] != 1)
      throw ValueError("output operand requires a reduction along dimension " + std::to_string(j) +
                       ", but the reduction is not enabled. The dimension size of 1 does not match the expected "
                       "output shape.");
  throw ValueError("output parameter for reduction operation " + name + " has the wrong shape");
}

}  // namespace

View record_reduce(ReduceSpec spec) {
  const View& in = spec.input;
  const int nd = in.ndim();
  SmallVector<uint8_t, 16> reduced(static_cast<size_t>(nd), 0);
  for (int a : spec.axes) reduced[a] = 1;
  Dims res_shape;
  int64_t reduced_size = 1;
  for (int k = 0; k < nd; ++k) {
    if (reduced[k]) {
      reduced_size *= in.shape[k];
      if (spec.keepdims) res_shape.push_back(1);
    } else {
      res_shape.push_back(in.shape[k]);
    }
  }
  const int64_t out_size = shape_size(res_shape);
  if (reduced_size == 0 && !reduce_has_identity(spec.op) && !spec.has_initial) {  // even for an empty result
    if (spec.op == ReduceOp::ArgMax || spec.op == ReduceOp::ArgMin)
      throw ValueError(std::string("attempt to get ") + reduce_name(spec.op) + " of an empty sequence");
    throw ValueError(std::string("zero-size array to reduction operation ") +
                     (spec.op == ReduceOp::Max ? "maximum" : "minimum") + " which has no identity");
  }
  View out;
  if (spec.out) {
    out = *spec.out;
    if (out.shape != res_shape) reduction_out_error(spec, out, res_shape, reduced);
  } else if (spec.op == ReduceOp::ArgMax || spec.op == ReduceOp::ArgMin) {
    out = View::fresh(spec.out_dtype, res_shape);  // NumPy's argmax/argmin results are C-ordered
  } else if (res_shape.size() <= 1) {
    out = View::fresh(spec.out_dtype, res_shape);  // (one axis or none: no order to choose)
  } else {
    // ufunc.reduce allocates its result through the iterator over the
    // input: the kept axes in the input's memory order.
    std::vector<int> order;
    for (int k : keep_order(in.shape, std::span<const View>(&in, 1), true)) {
      if (!reduced[k]) order.push_back(k);
      else if (spec.keepdims) order.push_back(k);
    }
    // Input axis k -> result axis.
    std::vector<int> res_axis(nd, -1);
    for (int k = 0, j = 0; k < nd; ++k)
      if (!reduced[k] || spec.keepdims) res_axis[k] = j++;
    for (int& k : order) k = res_axis[k];
    out = View::fresh_in_order(spec.out_dtype, res_shape, order);
  }
  // The output seen over the input's domain: stride 0 on reduced axes.
  View over = out;
  over.shape = in.shape;
  over.strides = Dims(nd, 0);
  for (int k = 0, j = 0; k < nd; ++k) {
    if (reduced[k]) {
      if (spec.keepdims) ++j;
      continue;
    }
    over.strides[k] = out.strides[j++];
  }
  Task t;
  t.kind = Task::Kind::Reduce;
  t.name = spec.name;
  t.domain = in.shape;
  t.inputs.push_back(in);
  // Any overlap between a reduction's input and output needs a copy: the
  // output elements are combined from many input elements.
  if (views_overlap(in, out)) {
    View tmp = View::fresh(in.dtype, in.shape);
    record_copy(in, tmp, "copy (overlap)");
    t.inputs[0] = tmp;
  }
  t.expr = std::move(spec.value);
  t.value_node = t.expr.root();
  t.reduce = spec.op;
  t.acc_dtype = spec.acc_dtype;
  if (spec.op == ReduceOp::ArgMax || spec.op == ReduceOp::ArgMin) {
    // Flat C-order index within the reduced axes.
    IndexFn f;
    f.strides = Dims(nd, 0);
    int64_t acc = 1;
    for (int k = nd; k-- > 0;) {
      if (!reduced[k]) continue;
      f.strides[k] = acc;
      acc *= in.shape[k];
    }
    t.indices.push_back(f);
    t.arg_node = t.expr.index(0);
  }
  if (spec.has_initial) {
    t.consts.push_back(spec.initial);
    t.init_const = static_cast<int32_t>(t.consts.size()) - 1;
  }
  // The stored value's type: out dtype (the kernel casts the accumulator).
  over.dtype = out.dtype;
  t.output = over;
  if (out_size > 0) append(std::move(t));
  return out;
}

View record_matmul(const View& a, const View& b, DType dtype, const View* out) {
  const int na = a.ndim(), nb = b.ndim();
  const int64_t m = a.shape[na - 2], k = a.shape[na - 1];
  const int64_t k2 = b.shape[nb - 2], n = b.shape[nb - 1];
  if (k != k2)
    throw ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                     "(n?,k),(k,m?)->(n?,m?) (size " + std::to_string(k2) + " is different from " +
                     std::to_string(k) + ")");
  Dims batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  Dims batch = batch_a == batch_b ? batch_a : broadcast_shapes({batch_a, batch_b});
  Dims res = batch;
  res.push_back(m);
  res.push_back(n);
  // Complex products of some size are BLAS's (zgemm/cgemm, through NumPy's
  // matmul): a compiled complex contraction runs 4x behind them at 500^2.
  constexpr int64_t kComplexBlasWork = int64_t(1) << 15;
  if (is_complex(dtype) && shape_size(res) * k >= kComplexBlasWork)
    throw FallbackRequired("complex matmul: NumPy's BLAS");
  View c;
  if (out) {
    if (out->readonly) throw ValueError("output array is read-only");
    if (out->shape != res)
      throw ValueError("matmul: Output operand 0 does not have the expected shape " + shape_str(res) +
                       " (it has " + shape_str(out->shape) + ")");
    c = *out;
  } else {
    c = View::fresh(dtype, res);
  }
  Dims sa = batch, sb = batch;
  sa.push_back(m), sa.push_back(k);
  sb.push_back(k), sb.push_back(n);
  View va = broadcast_view(a, sa), vb = broadcast_view(b, sb);
  if (shape_size(res) == 0) return c;
  // Operands that overlap the output, or that BLAS needs in another type,
  // are copied first: every output element combines many input elements.
  const bool blas = is_float(dtype) && c.dtype == dtype;
  auto prepare = [&](const View& v) {
    if (!views_overlap(v, c) && (!blas || v.dtype == dtype)) return v;
    View tmp = View::fresh(blas ? dtype : v.dtype, v.shape);
    record_copy(v, tmp, "copy (matmul operand)");
    return tmp;
  };
  va = prepare(va);
  vb = prepare(vb);
  // MDH form: domain (batch..., m, n, k); A(b,i,k), B(b,k,j) -> C(b,i,j),
  // k combined with + (or `any` for bool).
  const int nbd = static_cast<int>(batch.size());
  Dims domain = res;
  domain.push_back(k);
  auto lift = [&](const View& v, int row_dim, int col_dim) {
    View r = v;
    r.shape = domain;
    r.strides = Dims(domain.size(), 0);
    for (int d = 0; d < nbd; ++d) r.strides[d] = v.strides[d];
    r.strides[row_dim] = v.strides[nbd];
    r.strides[col_dim] = v.strides[nbd + 1];
    return r;
  };
  View lc = c;
  lc.shape = domain;
  lc.strides = Dims(domain.size(), 0);
  for (int d = 0; d < nbd + 2; ++d) lc.strides[d] = c.strides[d];
  Task t;
  t.kind = Task::Kind::Reduce;
  t.name = "matmul";
  t.domain = domain;
  t.inputs = {lift(va, nbd, nbd + 2), lift(vb, nbd + 2, nbd + 1)};  // A[b,i,k], B[b,k,j]
  int x = t.expr.cast(t.expr.input(0, va.dtype), dtype);
  int y = t.expr.cast(t.expr.input(1, vb.dtype), dtype);
  if (dtype == DType::Bool) {
    t.expr.binary(BinaryOp::LogicalAnd, x, y, DType::Bool);
    t.reduce = ReduceOp::Any;
  } else {
    t.expr.binary(BinaryOp::Multiply, x, y, dtype);
    t.reduce = ReduceOp::Sum;
  }
  t.acc_dtype = dtype;
  t.output = lc;
  t.solo = true;
  append(std::move(t));
  return c;
}

View record_matmul_any(const View& a, const View& b, const View* out, std::optional<DType> dtype) {
  if (a.ndim() == 0 || b.ndim() == 0)
    throw ValueError(std::string("matmul: Input operand ") + (a.ndim() == 0 ? "0" : "1") +
                     " does not have enough dimensions (has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) "
                     "requires 1)");
  auto unit_axis = [](const View& v, int at) {
    View r = v;
    r.shape.insert(at, 1);
    r.strides.insert(at, 0);
    return r;
  };
  const View a2 = a.ndim() == 1 ? unit_axis(a, 0) : a;          // (K,) -> (1, K)
  const View b2 = b.ndim() == 1 ? unit_axis(b, 1) : b;          // (K,) -> (K, 1)
  const DType t = dtype ? *dtype : promote(a.dtype, b.dtype);
  View out2;
  const View* o = nullptr;
  if (out) {
    out2 = *out;
    if (a.ndim() == 1 && b.ndim() == 1) {
      out2 = unit_axis(unit_axis(out2, out2.ndim()), out2.ndim());
    } else if (a.ndim() == 1) {
      out2 = unit_axis(out2, out2.ndim() - 1);
    } else if (b.ndim() == 1) {
      out2 = unit_axis(out2, out2.ndim());
    }
    o = &out2;
  }
  View r = record_matmul(a2, b2, t, o);
  if (out) return *out;
  // Drop the axes the 1-D operands added.
  const int nd = r.ndim();
  if (b.ndim() == 1) {
    r.shape.erase(nd - 1);
    r.strides.erase(nd - 1);
  }
  if (a.ndim() == 1) {
    const size_t m_axis = r.shape.size() - (b.ndim() == 1 ? 1 : 2);
    r.shape.erase(m_axis);
    r.strides.erase(m_axis);
  }
  return r;
}

View record_contraction(const ContractSpec& spec) {
  const int nops = static_cast<int>(spec.operands.size());
  const int nlabels = static_cast<int>(spec.extents.size());
  if (nops == 0) throw ValueError("No input operands");
  for (int64_t e : spec.extents)
    if (e < 0) throw ValueError("einsum: negative dimensions are not allowed");
  std::vector<bool> in_out(nlabels, false);
  Dims res;
  for (int l : spec.out_labels) {
    if (l < 0 || l >= nlabels || in_out[l]) throw ValueError("einsum: bad output labels");
    in_out[l] = true;
    res.push_back(spec.extents[l]);
  }
  // Domain: result labels, then summed labels in order of first appearance.
  std::vector<int> dim_of(nlabels, -1);
  std::vector<int> order(spec.out_labels.begin(), spec.out_labels.end());
  for (int k = 0; k < nops; ++k) {
    if (spec.labels[k].size() != static_cast<size_t>(spec.operands[k].ndim()))
      throw ValueError("einsum: one label per operand axis");
    for (int l : spec.labels[k]) {
      if (l < 0 || l >= nlabels) throw ValueError("einsum: bad label");
      if (!in_out[l] && std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
    }
  }
  Dims domain;
  for (size_t d = 0; d < order.size(); ++d) {
    dim_of[order[d]] = static_cast<int>(d);
    domain.push_back(spec.extents[order[d]]);
  }
  const int nsum = static_cast<int>(order.size() - spec.out_labels.size());
  View c;
  if (spec.out) {
    if (spec.out->shape != res)
      throw ValueError("einsum: output operand has shape " + shape_str(spec.out->shape) + ", expected " +
                       shape_str(res));
    if (spec.out->readonly) throw ValueError("output array is read-only");
    c = *spec.out;
  } else {
    c = View::fresh(spec.dtype, res);
  }
  if (shape_size(res) == 0) return c;
  // Operands overlapping the result are read from a copy; for floating
  // results, operands of another type are converted first (so a BLAS
  // routine can run the contraction).
  const bool convert = is_float(spec.dtype) && c.dtype == spec.dtype && nsum > 0 && nops >= 2;
  std::vector<View> lifted;
  for (int k = 0; k < nops; ++k) {
    View v = spec.operands[k];
    if (views_overlap(v, c) || (convert && v.dtype != spec.dtype)) {
      View tmp = View::fresh(convert ? spec.dtype : v.dtype, v.shape);
      record_copy(v, tmp, "copy (einsum operand)");
      v = tmp;
    }
    View r = v;
    r.shape = domain;
    r.strides = Dims(domain.size(), 0);
    for (int a = 0; a < v.ndim(); ++a) {
      const int l = spec.labels[k][a];
      if (v.shape[a] == spec.extents[l]) r.strides[dim_of[l]] += v.strides[a];
      else if (v.shape[a] != 1)
        throw ValueError("einsum: operand " + std::to_string(k) + " axis " + std::to_string(a) + " has size " +
                         std::to_string(v.shape[a]) + ", label size is " + std::to_string(spec.extents[l]));
    }
    lifted.push_back(r);
  }
  View lc = c;
  lc.shape = domain;
  lc.strides = Dims(domain.size(), 0);
  for (int d = 0; d < c.ndim(); ++d) lc.strides[d] = c.strides[d];
  Task t;
  t.name = spec.name;
  t.domain = domain;
  for (const View& v : lifted) t.inputs.push_back(v);
  const DType dt = spec.dtype;
  int acc = -1;
  for (int k = 0; k < nops; ++k) {
    int x = t.expr.cast(t.expr.input(k, lifted[k].dtype), dt);
    if (acc < 0) acc = x;
    else acc = t.expr.binary(dt == DType::Bool ? BinaryOp::LogicalAnd : BinaryOp::Multiply, acc, x, dt);
  }
  if (nsum > 0) {
    t.kind = Task::Kind::Reduce;
    t.reduce = dt == DType::Bool ? ReduceOp::Any : ReduceOp::Sum;
    t.acc_dtype = dt;
    t.value_node = acc;
    t.solo = nops >= 2;
  } else {
    t.kind = Task::Kind::Map;
    if (c.dtype != dt) t.expr.cast(acc, c.dtype);
  }
  t.output = lc;
  // The stored value's type is the output's (the kernel casts the accumulator).
  append(std::move(t));
  return c;
}

View record_scan(const View& in, int axis, ReduceOp op, DType dtype, const View* out) {
  if (axis < 0 || axis >= in.ndim()) throw AxisError(axis, in.ndim());
  View o;
  if (out) {
    if (out->shape != in.shape)
      throw ValueError("provided out is the wrong size for the accumulation.");
    if (out->readonly) throw ValueError("output array is read-only");
    o = *out;
  } else {
    o = alloc_like_order(dtype, in.shape, std::span<const View>(&in, 1));  // accumulate keeps the input's memory order
  }
  if (in.size() == 0) return o;
  // Reading the input through the very view that is written is fine (each
  // point reads its own element before writing it); any other overlap reads
  // from a copy.
  View src = in.same_as(o) ? in : copy_if_overlapping(in, o);
  Task t;
  t.kind = Task::Kind::Scan;
  t.name = op == ReduceOp::Prod ? "cumprod" : "cumsum";
  t.domain = in.shape;
  t.inputs = {src};
  int x = t.expr.input(0, src.dtype);
  t.expr.cast(x, dtype);
  t.reduce = op;
  t.acc_dtype = dtype;
  t.scan_axis = axis;
  t.output = o;
  append(std::move(t));
  return o;
}

}  // namespace nf

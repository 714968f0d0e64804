// Module-level functions of numfuse._core: ufuncs, reductions, creation,
// sync points, configuration and diagnostics.
#include <cmath>
#include <pybind11/stl.h>

#include <cstring>

#include "core/checks.h"
#include "lower/lower.h"
#include "codegen/codegen.h"
#include "codegen/scalar_c.h"
#include "core/error.h"
#include "extern/extern.h"
#include "jit/jit.h"
#include "jit/exact_division.h"
#include "pipeline/pipeline.h"
#include "python/bindings.h"
#include "runtime/vmath.h"
#include "runtime/runtime.h"
#include "runtime/tier0.h"

namespace nf::py_bind {

py::object record_ufunc(int nin, int op, py::handle x, py::handle y, py::handle out) {
  Operand a, b;
  if (!to_operand(x, a) || (nin == 2 && !to_operand(y, b))) return not_implemented();
  if (a.kind != Operand::Kind::Array && (nin == 1 || b.kind != Operand::Kind::Array)) return not_implemented();
  try {
    View r;
    SimpleOp plain;
    const View* o = out_view(out);
    if (nin == 1 ? unary_now(static_cast<UnaryOp>(op), a, o, &r, &plain)
                 : binary_now(static_cast<BinaryOp>(op), a, b, o, &r, &plain))
      return out.is_none() ? scalar_result(std::move(r)) : py::reinterpret_borrow<py::object>(out);
    before_record();
    RecordGuard guard;
    if (!((plain.view[0] || plain.view[1]) && record_simple(plain, &r)))
      r = nin == 1 ? record_unary(static_cast<UnaryOp>(op), a, o) : record_binary(static_cast<BinaryOp>(op), a, b, o);
    return out.is_none() ? scalar_result(std::move(r)) : py::reinterpret_borrow<py::object>(out);
  } catch (const FallbackRequired&) {
    return not_implemented();
  }
}

namespace {

// The schedule store lives next to the kernel cache.
void configure_schedule_store() {
  jit::DiskCache& c = jit::DiskCache::instance();
  pipeline::set_schedule_store(c.enabled() ? c.directory() + "/schedules.txt" : "");
}

py::dict report_dict(const pipeline::FlushReport& r) {
  py::list groups;
  for (const pipeline::GroupReport& g : r.groups) {
    py::dict d;
    d["ops"] = g.ops();
    d["stop_reason"] = g.stop_reason();
    d["temporaries"] = std::vector<uint64_t>(g.temporaries.begin(), g.temporaries.end());
    d["dead"] = g.dead;
    d["routine"] = g.routine();
    d["mdh"] = g.mdh_text();
    d["schedule"] = g.schedule_text();
    d["key"] = g.key();
    d["cache_hit"] = g.cache_hit;
    d["tier0"] = g.tier0;
    d["compiling"] = g.compiling;
    d["tier0_passes"] = g.tier0_passes;
    d["tier0_estimate_ms"] = g.tier0_estimate_ms;
    d["compile_estimate_ms"] = g.compile_estimate_ms;
    d["why_compiled"] = g.why_compiled ? py::object(py::str(g.why_compiled)) : py::object(py::none());
    d["tuned"] = g.tuned;
    d["disk_hit"] = g.disk_hit;
    d["source"] = g.source;
    d["run_ms"] = g.run_ms;
    d["stage"] = g.stage;
    d["stages"] = g.stages;
    d["chain"] = g.chain;
    d["target"] = g.target;
    d["target_note"] = g.target_note ? *g.target_note : std::string();
    d["launches"] = g.device_launches();
    // The kernel's shape in plain terms (explain()'s first line per kernel):
    // its iteration domain, the arrays it reads and writes, the dimensions
    // it reduces.
    if (const mdh::MdHom* h = g.hom) {
      std::vector<int64_t> domain;
      for (int k = 0; k < h->ndim; ++k)
        domain.push_back(static_cast<size_t>(h->extent[k]) < g.ints.size() ? g.ints[h->extent[k]] : -1);
      int reads = 0, writes = 0, reduced = 0;
      for (const mdh::Access& a : h->accesses) {
        if (a.written || a.reduced) ++writes;
        else if (a.read) ++reads;
      }
      for (int k = 0; k < h->ndim; ++k) reduced += h->any_pointwise(k) ? 1 : 0;
      d["domain"] = domain;
      d["reads"] = reads;
      d["writes"] = writes;
      d["reduced_dims"] = reduced;
      // Nodes of its scalar prologue (0-d operations computed once, before the loop).
      d["prologue"] = h->prologue;
      // A stage's prologue that stores: stored once, before the tiles (MdHom::once_guard).
      d["stores_once"] = h->once_guard >= 0;
    }
    groups.append(d);
  }
  py::dict out;
  out["groups"] = groups;
  out["sync_site"] = last_sync_site();
  out["sync_reason"] = r.sync_reason;
  out["tasks"] = r.tasks;
  out["analyse_ms"] = r.analyse_ms;
  out["compile_ms"] = r.compile_ms;
  out["run_ms"] = r.run_ms;
  out["kernels_compiled"] = r.kernels_compiled;
  out["memory_hits"] = r.memory_hits;
  out["disk_hits"] = r.disk_hits;
  out["memo_hit"] = r.memo_hit;
  out["memo_matched"] = r.memo_matched;
  out["recomputed"] = r.recomputed;
  out["memo_recorded"] = r.memo_recorded;
  out["rewrite_replayed"] = r.rewrite_replayed;
  out["recompute_choice"] = r.recompute_choice;
  out["tier0_groups"] = r.tier0_groups;
  out["warnings"] = r.warnings;
  return out;
}

}  // namespace

void bind_functions(py::module_& m) {
  // Operation ids, so the Python layer can call by number.
  py::dict unary, binary, reduce;
  for (int i = 0; i < static_cast<int>(UnaryOp::Count); ++i) unary[unary_name(static_cast<UnaryOp>(i))] = i;
  for (int i = 0; i < static_cast<int>(BinaryOp::Count); ++i) binary[binary_name(static_cast<BinaryOp>(i))] = i;
  for (int i = 0; i < static_cast<int>(ReduceOp::Count); ++i) reduce[reduce_name(static_cast<ReduceOp>(i))] = i;
  m.attr("UNARY_OPS") = unary;
  m.attr("BINARY_OPS") = binary;
  m.attr("REDUCE_OPS") = reduce;
  py::list names;
  for (int i = 0; i < kNumDTypes; ++i) names.append(dtype_name(static_cast<DType>(i)));
  m.attr("DTYPES") = names;
  // CastLayout (stream.h) by NumPy's order letter, for ndarray._astype.
  py::dict layouts;
  layouts["C"] = static_cast<int>(CastLayout::C);
  layouts["K"] = static_cast<int>(CastLayout::Keep);
  layouts["F"] = static_cast<int>(CastLayout::F);
  m.attr("CAST_LAYOUTS") = layouts;

  // (Called from Python, not through guarded(): the floating-point errors
  // of an operation computed at the call are reported here, at the call.)
  m.def("unary", [](int op, py::handle x, py::handle out) {
    py::object r = record_ufunc(1, op, x, py::none(), out);
    if (pipeline::detail::t_fp_pending) report_fp_events();
    return r;
  });
  m.def("binary", [](int op, py::handle x, py::handle y, py::handle out) {
    py::object r = record_ufunc(2, op, x, y, out);
    if (pipeline::detail::t_fp_pending) report_fp_events();
    return r;
  });
  m.def("where", [](py::handle c, py::handle x, py::handle y) -> py::object {
    Operand oc, ox, oy;
    if (!to_operand(c, oc) || !to_operand(x, ox) || !to_operand(y, oy)) return not_implemented();
    before_record();
    RecordGuard guard;
    return wrap(record_where(oc, ox, oy));
  });
  m.def("reduce", [](int op, py::handle x, py::handle axes, bool keepdims, py::handle dtype, py::handle out,
                     py::handle initial) -> py::object {
    if (!is_ndarray(x)) return not_implemented();
    return reduce_array(static_cast<ReduceOp>(op), as_ndarray(x).v, axes, keepdims, dtype, out, initial);
  });
  m.def("accumulate", [](int op, py::handle x, int64_t axis, py::handle dtype, py::handle out) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t || !is_ndarray(x)) return not_implemented();
    const View& v = as_ndarray(x).v;
    const int ax = normalize_axis(axis, v.ndim());
    before_record();
    RecordGuard guard;
    View r = record_scan(v, ax, static_cast<ReduceOp>(op), *t, out_view(out));
    return out.is_none() ? wrap(r) : py::reinterpret_borrow<py::object>(out);
  });
  m.def(
      "matmul_any",
      [](py::handle x, py::handle y, py::handle out, bool numpy_dot, py::handle dtype) -> py::object {
        if (!is_ndarray(x) || !is_ndarray(y) || (!out.is_none() && !is_ndarray(out))) return not_implemented();
        if (dtype.is_none()) return matmul_arrays(as_ndarray(x).v, as_ndarray(y).v, out, numpy_dot);
        // dtype= (numpy.matmul's keyword): the same 1-D rules (record_matmul_any), computed in it.
        std::optional<DType> t = to_dtype(dtype);
        if (!t) return not_implemented();
        before_record();
        RecordGuard guard;
        try {
          View r = record_matmul_any(as_ndarray(x).v, as_ndarray(y).v, out_view(out), *t);
          return out.is_none() ? scalar_result(std::move(r)) : py::reinterpret_borrow<py::object>(out);
        } catch (const FallbackRequired&) {
          return not_implemented();
        }
      },
      py::arg("x"), py::arg("y"), py::arg("out"), py::arg("numpy_dot") = false, py::arg("dtype") = py::none());
  m.def("matmul", [](py::handle x, py::handle y, py::handle dtype, py::handle out) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t || !is_ndarray(x) || !is_ndarray(y)) return not_implemented();
    before_record();
    RecordGuard guard;
    View r = record_matmul(as_ndarray(x).v, as_ndarray(y).v, *t, out_view(out));
    return out.is_none() ? wrap(r) : py::reinterpret_borrow<py::object>(out);
  });
  m.def("contract", [](py::list ops, py::list labels, py::list out_labels, py::list extents, py::handle dtype,
                       py::handle out) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    ContractSpec spec;
    for (py::handle o : ops) {
      if (!is_ndarray(o)) return not_implemented();
      spec.operands.push_back(as_ndarray(o).v);
    }
    for (py::handle l : labels) spec.labels.push_back(l.cast<std::vector<int>>());
    spec.out_labels = out_labels.cast<std::vector<int>>();
    spec.extents = dims_of(extents);
    spec.dtype = *t;
    spec.out = out_view(out);
    before_record();
    RecordGuard guard;
    View r = record_contraction(spec);
    return out.is_none() ? wrap(r) : py::reinterpret_borrow<py::object>(out);
  });
  // numpy.lib.stride_tricks.as_strided restricted to the array's own buffer:
  // strides in elements, `offset` elements past the array's first element; a
  // view reaching outside the buffer is a ValueError.
  m.def("as_strided", [](py::handle a, py::handle shape, py::handle strides, bool readonly, int64_t offset) -> py::object {
    View v = as_ndarray(a).v;
    View r = v;
    if (__builtin_add_overflow(r.offset, offset, &r.offset))
      throw ValueError("as_strided: the view would reach outside the array's memory");
    r.shape = dims_of(shape);
    r.strides = dims_of(strides);
    if (r.shape.size() != r.strides.size()) throw ValueError("shape and strides must have the same length");
    for (int64_t e : r.shape)
      if (e < 0) throw ValueError("negative dimensions are not allowed");
    // The extreme element offsets, with overflow checks (a huge stride must
    // not wrap around into the buffer).
    const int64_t item = itemsize(v.dtype);
    int64_t lo = r.offset, hi = r.offset;
    bool bad = false;
    if (r.size() > 0)
      for (int k = 0; k < r.ndim(); ++k) {
        int64_t span = 0;
        bad |= __builtin_mul_overflow(r.strides[k], r.shape[k] - 1, &span);
        bad |= __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi);
      }
    int64_t end = 0;
    bad |= __builtin_add_overflow(hi, int64_t(1), &end) || __builtin_mul_overflow(end, item, &end);
    if (r.size() > 0 && (bad || lo < 0 || end > v.buffer->nbytes()))
      throw ValueError("as_strided: the view would reach outside the array's memory");
    r.readonly = readonly || v.readonly;
    return wrap(r);
  }, py::arg("a"), py::arg("shape"), py::arg("strides"), py::arg("readonly"), py::arg("offset") = 0);
  m.def("empty", [](py::handle shape, py::handle dtype) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    Dims s = dims_of(shape);
    for (int64_t e : s)
      if (e < 0) throw ValueError("negative dimensions are not allowed");
    return wrap(View::fresh(*t, s));
  });
  // numpy.concatenate's result: laid out in the arrays' common memory order.
  m.def("empty_concat", [](py::handle shape, py::handle dtype, py::list arrays) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    Dims s = dims_of(shape);
    std::vector<View> like;
    for (py::handle a : arrays) {
      if (!is_ndarray(a)) return not_implemented();
      like.push_back(as_ndarray(a).v);
    }
    if (s.size() < 2) return wrap(View::fresh(*t, s));
    return wrap(View::fresh_in_order(*t, s, keep_order(s, like, false)));
  });
  // numpy.concatenate(arrays, axis) for a list or tuple of numfuse arrays of
  // one dtype and rank whose other extents agree (the common call, without
  // Python's argument handling): each part is assigned into the result (at
  // once on tier 0 when small). With `stack`, numpy.stack(arrays, axis) of
  // arrays of one shape: each part with the new axis expand_dims gives it.
  // NotImplemented for anything else: the Python function decides, with
  // NumPy's errors and type promotion.
  m.def("concat_same", [](py::handle seq, int64_t axis, bool stack) -> py::object {
    PyObject* o = seq.ptr();
    if (!PyList_Check(o) && !PyTuple_Check(o)) return not_implemented();
    const Py_ssize_t k = PySequence_Fast_GET_SIZE(o);
    if (k == 0) return not_implemented();
    std::vector<View> parts;
    parts.reserve(k);
    for (Py_ssize_t i = 0; i < k; ++i) {
      py::handle h(PySequence_Fast_GET_ITEM(o, i));
      if (!is_ndarray(h)) return not_implemented();
      parts.push_back(as_ndarray(h).v);
    }
    if (stack) {
      const int in = parts[0].ndim();
      if (axis < -(in + 1) || axis > in) return not_implemented();
      const int ax = static_cast<int>(axis < 0 ? axis + in + 1 : axis);
      const Dims shape = parts[0].shape;
      for (View& v : parts) {
        if (v.shape != shape) return not_implemented();
        View r = expand_dims_view(v, {ax});
        View s;  // (the new axis's stride as NumPy's reshape computes it)
        v = reshape_view(v, r.shape, false, &s) ? s : r;
      }
    }
    const int nd = parts[0].ndim();
    if (nd == 0 || axis < -nd || axis >= nd) return not_implemented();
    const int ax = static_cast<int>(axis < 0 ? axis + nd : axis);
    const DType t = parts[0].dtype;
    Dims shape = parts[0].shape;
    int64_t total = 0;
    for (const View& v : parts) {
      if (v.dtype != t || v.ndim() != nd) return not_implemented();
      for (int d = 0; d < nd; ++d)
        if (d != ax && v.shape[d] != shape[d]) return not_implemented();
      total += v.shape[ax];
    }
    shape[ax] = total;
    // Wrapped before anything is recorded into it: a pending write into a
    // buffer no Python object holds would be dead code to the next flush.
    py::object result =
        wrap(nd < 2 ? View::fresh(t, shape) : View::fresh_in_order(t, shape, keep_order(shape, parts, false)));
    const View& res = as_ndarray(result).v;
    int64_t pos = 0;
    for (const View& v : parts) {
      const int64_t n = v.shape[ax];
      if (n > 0) {
        View dst = res;
        dst.offset += pos * dst.strides[ax];
        dst.shape[ax] = n;
        const Operand src = Operand::borrow(v);
        if (!assign_now(dst, src)) {
          before_record();
          RecordGuard guard;
          record_assign(dst, src);
        }
      }
      pos += n;
    }
    return result;
  }, py::arg("arrays"), py::arg("axis"), py::arg("stack") = false);
  m.def("full", [](py::handle shape, py::handle value, py::handle dtype) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    Operand v;
    if (!t || !to_operand(value, v)) return not_implemented();
    before_record();
    RecordGuard guard;
    return wrap(record_full(*t, dims_of(shape), v));
  });
  m.def("arange", [](double start, double step, int64_t n, py::handle dtype, bool integral, int64_t istart,
                     int64_t istep) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    before_record();
    RecordGuard guard;
    return wrap(record_arange(start, step, n, *t, integral, istart, istep));
  });
  // numpy.linspace(start, stop, num, endpoint) of finite float64 endpoints
  // computed at the call when tier 0 would compute it (a small array), with
  // NumPy's formula step by step: arange * step (or / div * delta when the
  // step is 0), + start, the last point set to stop. None when the array is
  // recorded instead, or a value is not finite (NumPy's warnings then come
  // from the recorded operations).
  m.def("linspace_now", [](double start, double stop, int64_t num, bool endpoint) -> py::object {
    if (num < 0 || !global_stream().runs_now(num)) return py::none();
    const double delta = stop - start;
    const int64_t div = endpoint ? num - 1 : num;
    const double step = div > 0 ? delta / static_cast<double>(div) : 0.0;
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(delta)) return py::none();
    View v = View::fresh(DType::Float64, Dims{num});
    double* y = static_cast<double*>(v.buffer->data());
    for (int64_t i = 0; i < num; ++i) {
      volatile double t = static_cast<double>(i);  // (each operation rounded, as NumPy's separate passes)
      if (div > 0 && step == 0) {
        t = t / static_cast<double>(div);
        t = t * delta;
      } else {
        t = t * (div > 0 ? step : delta);
      }
      t = t + start;
      if (!std::isfinite(t)) return py::none();
      y[i] = t;
    }
    if (endpoint && num > 1) y[num - 1] = stop;
    return wrap(std::move(v));
  });
  m.def("eye", [](int64_t n, int64_t mm, int64_t k, py::handle dtype) -> py::object {
    std::optional<DType> t = to_dtype(dtype);
    if (!t) return not_implemented();
    before_record();
    RecordGuard guard;
    return wrap(record_eye(n, mm, k, *t));
  });
  m.def("from_numpy", [](py::handle arr, bool adopt) { return wrap(from_numpy(arr, adopt)); });
  // A NumPy view of memory another library owns (numfuse.from_dlpack): used
  // in place where numfuse can (aligned, native byte order), and counted as
  // exported for good, so numfuse operations on it run in program order
  // with the owner's reads and writes.
  m.def("from_numpy_shared", [](py::handle arr) {
    View v = from_numpy(arr, true);
    if (v.buffer->adopted()) v.buffer->exports.fetch_add(1);
    return wrap(std::move(v));
  });
  // What NumPy returns for a 0-d result it gives as a scalar (see scalar_result).
  m.def("scalar_result", [](py::handle x) -> py::object {
    if (!is_ndarray(x) || as_ndarray(x).v.ndim() != 0) return py::reinterpret_borrow<py::object>(x);
    return scalar_result(as_ndarray(x).v);
  });
  m.def("supported_dtype", [](py::handle dtype) { return to_dtype(dtype).has_value(); });

  // Sorting and searching (extern/sort.cc): computed at the call, on the
  // inputs' computed memory, without the GIL. (Axes are normalized, dtypes
  // chosen, by python/numfuse/_sorting.py.)
  auto computed = [](const View& v, const char* why) {
    if (v.buffer->pending_write()) flush_all(why);
  };
  m.def("argsort", [computed](py::handle x, int axis) {
    const View& v = as_ndarray(x).v;
    computed(v, "argsort");
    View out = View::fresh(DType::Int64, v.shape);
    {
      NoGil nogil;
      ext::argsort(v, out, axis);
    }
    return wrap(std::move(out));
  });
  m.def("searchsorted", [computed](py::handle a, py::handle values, bool right, py::handle sorter) {
    const View& s = as_ndarray(a).v;
    const View& v = as_ndarray(values).v;
    const View* perm = sorter.is_none() ? nullptr : &as_ndarray(sorter).v;
    computed(s, "searchsorted");
    computed(v, "searchsorted");
    if (perm) computed(*perm, "searchsorted");
    View out = View::fresh(DType::Int64, v.shape);
    {
      NoGil nogil;
      ext::searchsorted(s, perm, v, out, right);
    }
    return wrap(std::move(out));
  });
  m.def("take", [computed](py::handle x, py::handle indices, int axis) {
    const View& a = as_ndarray(x).v;
    const View& ix = as_ndarray(indices).v;
    computed(a, "take");
    computed(ix, "take");
    Dims shape;
    for (int d = 0; d < axis; ++d) shape.push_back(a.shape[d]);
    for (int64_t n : ix.shape) shape.push_back(n);
    for (int d = axis + 1; d < static_cast<int>(a.ndim()); ++d) shape.push_back(a.shape[d]);
    if (a.shape[axis] == 0 && ix.size() > 0) throw IndexError("cannot do a non-empty take from an empty axes.");
    View out = View::fresh(a.dtype, shape);
    {
      NoGil nogil;
      ext::take(a, ix, axis, out);
    }
    return wrap(std::move(out));
  });
  // numpy.histogram's equal-width bins (ext::histogram_uniform): the counts
  // (int64), or the float64 `weights` summed into an array of `ntype`.
  m.def("histogram_uniform", [computed](py::handle x, py::handle weights, py::handle edges, double first,
                                        double last, double denom, bool guess_in_type, py::handle ntype) {
    const View& xv = as_ndarray(x).v;
    const View& ev = as_ndarray(edges).v;
    const View* wv = weights.is_none() ? nullptr : &as_ndarray(weights).v;
    std::optional<DType> t = to_dtype(ntype);
    if (!t || xv.ndim() != 1 || ev.ndim() != 1 || (wv && wv->ndim() != 1))
      throw TypeError("histogram_uniform: 1-D numfuse arrays and a numeric ntype expected");
    computed(xv, "histogram");
    computed(ev, "histogram");
    if (wv) computed(*wv, "histogram");
    View out = View::fresh(*t, Dims{ev.shape[0] - 1});
    {
      NoGil nogil;
      ext::histogram_uniform(xv, wv, ev, first, last, denom, guess_in_type, out);
    }
    return wrap(std::move(out));
  });
  // numpy.bincount's reading of its 1-D bool or integer input: (least,
  // greatest) as intp (ext::index_range), for a non-empty array.
  m.def("index_range", [computed](py::handle indices) {
    const View& iv = as_ndarray(indices).v;
    computed(iv, "bincount");
    int64_t lo = 0, hi = -1;
    {
      NoGil nogil;
      if (!ext::index_range(iv, &lo, &hi)) throw ValueError("index_range: an empty array");
    }
    return py::make_tuple(lo, hi);
  });
  // numpy.bincount (ext::bincount) of a 1-D bool or integer array whose
  // values are in [0, size) (index_range), weights real of its length or None.
  m.def("bincount", [computed](py::handle indices, py::handle weights, int64_t size) {
    const View& iv = as_ndarray(indices).v;
    const View* wv = weights.is_none() ? nullptr : &as_ndarray(weights).v;
    computed(iv, "bincount");
    if (wv) computed(*wv, "bincount");
    View out = View::fresh(wv ? DType::Float64 : DType::Int64, Dims{size});
    {
      NoGil nogil;
      ext::bincount(iv, wv, out);
    }
    return wrap(std::move(out));
  });
  m.def("put", [computed](py::handle target, py::handle indices, int axis, py::handle values, bool accumulate) {
    const View& t = as_ndarray(target).v;
    const View& ix = as_ndarray(indices).v;
    const View& v = as_ndarray(values).v;
    if (t.readonly) throw ValueError("assignment destination is read-only");
    computed(ix, "scatter");
    computed(v, "scatter");
    // Pending operations reading or writing the target run first.
    if (t.buffer->pending()) flush_all("scatter");
    NoGil nogil;
    ext::put(t, ix, axis, v, accumulate);
  });
  m.def("nonzero", [computed](py::handle x) {
    const View& v = as_ndarray(x).v;
    computed(v, "nonzero");
    std::vector<int64_t> flat;
    {
      NoGil nogil;
      flat = ext::nonzero_flat(v);
    }
    // NumPy's layout: one (n, ndim) int64 array in C order, each index array
    // a column of it (stride ndim); one contiguous array for a vector.
    const int nd = static_cast<int>(v.ndim());
    const int64_t n = static_cast<int64_t>(flat.size());
    py::tuple result(nd);
    if (nd == 1) {
      View o = View::fresh(DType::Int64, Dims{n});
      if (n > 0) std::memcpy(o.buffer->data(), flat.data(), static_cast<size_t>(n) * sizeof(int64_t));
      result[0] = wrap(std::move(o));
      return result;
    }
    View all = View::fresh(DType::Int64, Dims{n, nd});
    auto* p = static_cast<int64_t*>(all.buffer->data());
    for (int64_t i = 0; i < n; ++i) {
      int64_t f = flat[i];
      for (int d = nd - 1; d >= 0; --d) {
        p[i * nd + d] = f % v.shape[d];
        f /= v.shape[d];
      }
    }
    for (int d = 0; d < nd; ++d) {
      View col = all;
      col.shape = Dims{n};
      col.strides = Dims{nd};
      col.offset = all.offset + d;
      result[d] = wrap(std::move(col));
    }
    return result;
  });

  // Sync points and diagnostics.
  m.def("flush", [](const char* reason) { flush_all(reason); }, py::arg("reason") = "flush()");
  // numfuse.flush(): a plain CPython function without arguments (no
  // pybind11 dispatch, no Python wrapper frame), as a loop that syncs every
  // iteration calls it once per iteration.
  static PyMethodDef flush_def = {
      "flush",
      [](PyObject*, PyObject*) -> PyObject* {
        return guarded([] {
          flush_all("flush()");
          Py_INCREF(Py_None);
          return Py_None;
        });
      },
      METH_NOARGS,
      "flush()\n--\n\nBlock until every pending operation has been computed.\n\n"
      "Use it to time numfuse code: ``t0 = time.perf_counter(); f(); numfuse.flush()``."};
  m.add_object("flush_now", py::reinterpret_steal<py::object>(PyCFunction_NewEx(&flush_def, nullptr, py::str("numfuse").ptr())));
  m.def("pending", []() { return global_stream().size(); });
  m.def("tier0_isa", []() { return std::string(runtime::tier0_isa()); });
  // How libm's `fn` (exp, expf, pow, ...) is computed in this process
  // (runtime/vmath.h): (implementation, lanes), or (None, 0).
  m.def("vmath_implementation", [](const std::string& fn) -> py::tuple {
    int lanes = 0;
    const char* name = nf_vmath_implementation(fn.c_str(), &lanes);
    if (!name) return py::make_tuple(py::none(), 0);
    return py::make_tuple(std::string(name), lanes);
  });
  m.def("_tier0_splits", []() { return runtime::tier0_splits(); });
  m.def("_tier0_fused_selects", []() { return runtime::tier0_fused_selects(); });
  m.def("last_report", []() { return report_dict(pipeline::last_report()); });
  m.def("profile", []() {
    pipeline::Profile p = pipeline::profile();
    jit::CompileStats& s = jit::KernelCache::instance().stats();
    py::dict d;
    d["record_ms"] = p.record_ms;
    d["analyse_ms"] = p.analyse_ms;
    d["compile_ms"] = p.compile_ms;
    d["run_ms"] = p.run_ms;
    d["flushes"] = p.flushes;
    d["tasks"] = p.tasks;
    d["kernels_run"] = p.kernels_run;
    d["kernels_compiled"] = p.compiles;
    d["memory_hits"] = p.memory_hits;
    d["disk_hits"] = p.disk_hits;
    d["memo_hits"] = p.memo_hits;
    d["memo_matched"] = p.memo_matched;
    d["memo_recorded"] = p.memo_recorded;
    d["tier0_ops"] = p.tier0_tasks;
    d["tier0_groups"] = p.tier0_groups;
    d["disk_hits_total"] = s.disk_hits.load();
    d["disk_load_ns_total"] = s.disk_load_ns.load();
    d["compile_ns_total"] = s.compile_ns.load();
    d["compiles_total"] = s.compiles.load();
    py::list each;  // ms, the first CompileStats::kCompileTimesKept compiles in order
    for (int64_t ns : s.compile_times()) each.append(static_cast<double>(ns) / 1e6);
    d["compile_ms_each"] = each;
    d["quick_compiles_total"] = s.quick_compiles.load();
    d["upgrades_total"] = s.upgrades.load();
    d["upgrade_ns_total"] = s.upgrade_ns.load();
    d["exact_divisions_total"] = jit::exact_divisions_rewritten();
    return d;
  });
  m.def("reset_profile", []() { pipeline::reset_profile(); });
  m.def("cache_info", []() {
    jit::DiskCache& c = jit::DiskCache::instance();
    py::dict d;
    d["directory"] = c.directory();
    d["enabled"] = c.enabled();
    d["status"] = c.status();
    d["memory_entries"] = jit::KernelCache::instance().size();
    return d;
  });
  m.def("target_info", []() {
    const jit::TargetInfo t = jit::target_info();
    py::dict d;
    d["llvm_version"] = t.llvm_version;
    d["triple"] = t.triple;
    d["cpu"] = t.cpu;
    d["features"] = t.features;
    return d;
  });
  m.def("cache_warning", []() { return jit::DiskCache::instance().take_warning(); });
  // NumPy's NaN signs (numfuse/_hooks.py probes them): (binary?, op name, dtype, rule).
  m.def("_set_nan_rules", [](py::list rules) {
    std::vector<std::tuple<bool, int, DType, std::string>> out;
    for (py::handle r : rules) {
      py::tuple t = r.cast<py::tuple>();
      const bool bin = t[0].cast<bool>();
      const std::string name = t[1].cast<std::string>();
      std::optional<DType> dt = dtype_from_name(t[2].cast<std::string>());
      std::optional<int> op;
      if (bin) {
        if (auto b = binary_from_name(name)) op = static_cast<int>(*b);
      } else if (auto u = unary_from_name(name)) {
        op = static_cast<int>(*u);
      }
      if (dt && op) out.emplace_back(bin, *op, *dt, t[3].cast<std::string>());
    }
    codegen::set_nan_rules(out);
  });
  m.def("set_cache_dir", [](const std::string& dir) {
    jit::DiskCache::instance().configure(dir);
    configure_schedule_store();
  });
  configure_schedule_store();

  // Auto-tuning.
  m.def("tune_capture", [](bool on) {
    if (on) {
      pipeline::capture_begin();
      return 0;
    }
    return pipeline::capture_end();
  });
  m.def("tune_captured", [](double budget, int evals, py::object progress) {
    pipeline::TuneOptions opt;
    opt.budget_s = budget;
    opt.max_evals = evals;
    if (!progress.is_none())
      opt.progress = [progress](int k, int n, const std::string& ops, const tune::SearchProgress& p) {
        py::gil_scoped_acquire gil;
        progress(k, n, ops, p.evals, p.max_evals, p.elapsed_s, p.budget_s, p.default_s, p.best_s);
      };
    std::vector<pipeline::TunedKernel> out;
    {
      NoGil nogil;
      out = pipeline::tune_captured(opt);
    }
    py::list l;
    for (const pipeline::TunedKernel& k : out) {
      py::dict d;
      d["ops"] = k.ops;
      d["mdh"] = k.mdh;
      d["size_class"] = k.size_class;
      d["target"] = k.target;
      d["default_schedule"] = k.default_schedule;
      d["best_schedule"] = k.best_schedule;
      d["default_ms"] = k.default_ms;
      d["best_ms"] = k.best_ms;
      d["evals"] = k.evals;
      d["failures"] = k.failures;
      d["occurrences"] = k.occurrences;
      d["tune_s"] = k.tune_s;
      d["stored"] = k.stored;
      d["errors"] = k.errors;
      l.append(d);
    }
    return l;
  });
  m.def("tune_wait", []() {
    NoGil nogil;
    pipeline::background_wait();
  });
  m.def("tune_shutdown", []() {
    NoGil nogil;
    pipeline::background_stop();
  });
  m.def("tune_background_done", []() { return pipeline::background_done(); });
  // (Tests: no background job starts while held, as around a fork.)
  m.def("tune_background_hold", [](bool hold) {
    NoGil nogil;
    if (hold) pipeline::background_pause();
    else pipeline::background_resume();
  });
  m.def("schedule_store_info", []() {
    tune::ScheduleStore& s = tune::ScheduleStore::instance();
    py::dict d;
    d["path"] = s.path();
    d["entries"] = s.size();
    d["device"] = pipeline::schedule_device();
    return d;
  });
  m.def("set_schedule_store", [](const std::string& path) { pipeline::set_schedule_store(path); });
  m.def("clear_schedule_store", []() { tune::ScheduleStore::instance().clear(); });
  m.def("set_routines", [](bool on) {
    pipeline::config().routines = on;
    NoGil nogil;
    pipeline::clear_memo();
  });
  m.def("get_routines", []() { return pipeline::config().routines; });
  m.def("set_random_schedules", [](int64_t seed) {
    pipeline::config().random_schedule_seed = seed;
    NoGil nogil;
    pipeline::clear_memo();
  });
  m.def("get_random_schedules", []() { return pipeline::config().random_schedule_seed; });
  m.def("set_tune_seconds", [](double s) { pipeline::config().tune_seconds = s; });
  m.def("get_tune_seconds", []() { return pipeline::config().tune_seconds; });
  m.def("clear_disk_cache", []() { return jit::DiskCache::instance().clear(); });
  m.def("kernel_cache_size", []() { return jit::KernelCache::instance().size(); });
  m.def("clear_kernel_cache", []() {
    NoGil nogil;
    pipeline::clear_kernels();
  });
  m.def("memo_size", []() {
    NoGil nogil;  // waits for a running flush
    return pipeline::memo_size();
  });
  m.def("memo_bytes", []() {
    NoGil nogil;
    return pipeline::memo_bytes();
  });
  m.def("clear_memo", []() {
    NoGil nogil;
    pipeline::clear_memo();
  });
  m.def("memory", []() {
    py::dict d;
    d["live_bytes"] = Buffer::live_bytes();
    d["peak_bytes"] = Buffer::peak_bytes();
    d["cached_bytes"] = Buffer::cached_bytes();
    return d;
  });
  m.def("trim_memory", []() { Buffer::trim_cache(); });
  m.def("_inject_allocation_failure", [](int64_t after) { Buffer::inject_allocation_failure(after); });
  m.def("_refuse_chain_launches", [](int n) { pipeline::refuse_chain_launches(n); });
  m.def("_interpret_groups", [](bool on) { pipeline::interpret_groups(on); });
  m.def("reset_peak_memory", []() { Buffer::reset_peak(); });

  // Compile a hand-written C function with the kernels' compiler and flags
  // (benchmarks use it as the "what the hardware can do" reference).
  // Hand-written C/OpenMP reference loops (benchmarks, tests).
  m.def("_jit_c", [](const std::string& source, const std::string& symbol) {
    runtime::prepare_openmp();
    return reinterpret_cast<uintptr_t>(jit::CpuCompiler::instance().compile_openmp_c(source, symbol));
  });

  m.def("_use_blas", [](const std::string& path, const std::string& prefix, const std::string& suffix) {
    return ext::use_blas_library(path, prefix, suffix);
  });
  m.def("blas_name", []() { return ext::blas_name(); });
  m.def("_linked_blas_threads", [](int n) { ext::set_linked_blas_threads(n); });

  // Configuration.
  m.def("set_fusion", [](bool on) {
    pipeline::config().policy = on ? fusion::Policy::Diffuse : fusion::Policy::None;
  });
  m.def("get_fusion", []() { return pipeline::config().policy == fusion::Policy::Diffuse; });
  m.def("set_dump", [](bool on) { pipeline::config().dump = on; });
  m.def("set_memo", [](bool on) { pipeline::config().memo = on; });
  m.def("get_memo", []() { return pipeline::config().memo; });
  m.def("get_dump", []() { return pipeline::config().dump; });
  m.def("set_dump_passes", [](bool on) { lower::set_dump_passes(on); });
  m.def("get_dump_passes", []() { return lower::dump_passes(); });
  m.def("set_max_window", [](int64_t n) { global_stream().set_max_window(static_cast<size_t>(std::max<int64_t>(n, 1))); });
  m.def("get_max_window", []() { return global_stream().max_window; });
  m.def("set_max_kernel_ops", [](int n) {
    if (n < 1) throw py::value_error("max_kernel_ops must be at least 1");
    NoGil nogil;
    pipeline::clear_memo();  // memoized plans were partitioned under the old limit
    pipeline::config().max_kernel_ops = n;
  });
  m.def("get_max_kernel_ops", []() { return pipeline::config().max_kernel_ops; });
  m.def("set_tier", [](const std::string& t) {
    if (t == "auto") pipeline::config().tier = pipeline::Tier::Auto;
    else if (t == "eager" || t == "0") pipeline::config().tier = pipeline::Tier::Eager;
    else if (t == "lazy" || t == "1") pipeline::config().tier = pipeline::Tier::Lazy;
    else throw py::value_error("tier must be 'auto', 'eager' (0) or 'lazy' (1), not '" + t + "'");
  });
  m.def("get_tier", []() {
    switch (pipeline::config().tier) {
      case pipeline::Tier::Eager: return "eager";
      case pipeline::Tier::Lazy: return "lazy";
      default: return "auto";
    }
  });
  m.def("set_eager_max_elements", [](int64_t n) {
    if (n < 0) throw py::value_error("eager_max_elements must be >= 0");
    pipeline::config().eager_max_elements = n;
  });
  m.def("get_eager_max_elements", []() { return pipeline::config().eager_max_elements; });
  m.def("set_quick_compile", [](bool on) { pipeline::config().quick_compile = on; });
  m.def("get_quick_compile", []() { return pipeline::config().quick_compile; });
  // (Memoized plans hold the launch decisions: forgotten when they change.)
  // The core's internal consistency checks (core/checks.h; NUMFUSE_CHECKS=1,
  // as `make test` runs the suite once).
  m.def("checks_on", []() { return checks_on(); });
  m.def("set_checks", [](bool on) { set_checks(on); });
  m.def("set_stages", [](bool on) {
    pipeline::config().stages = on;
    pipeline::clear_memo();
  });
  m.def("get_stages", []() { return pipeline::config().stages; });
  // (Plans are memoized by the window as rewritten: nothing to forget.)
  m.def("set_recompute", [](int budget) { pipeline::config().recompute = budget; });
  m.attr("RECOMPUTE_BUDGET") = fusion::kRecomputeBudget;
  m.def("get_recompute", []() { return pipeline::config().recompute; });
  m.def("set_stage_rows", [](int64_t n) {
    if (n < 0) throw py::value_error("stage_rows: expected a number of rows >= 0 (0: chosen from the cache size), got " + std::to_string(n));
    pipeline::config().stage_rows = n;
    pipeline::clear_memo();
  });
  m.def("get_stage_rows", []() { return pipeline::config().stage_rows; });
  m.def("set_stage_cols", [](int64_t n) {
    if (n < 0) throw py::value_error("stage_cols: expected a number of columns >= 0 (0: no strips), got " + std::to_string(n));
    pipeline::config().stage_cols = n;
    pipeline::clear_memo();
  });
  m.def("get_stage_cols", []() { return pipeline::config().stage_cols; });
  m.def("set_stage_min_bytes", [](int64_t n) {
    if (n < 0) throw py::value_error("stage_min_bytes: expected a number of bytes >= 0, got " + std::to_string(n));
    pipeline::config().stage_min_bytes = n;
    pipeline::clear_memo();
  });
  m.def("set_exact_division", [](bool on) {
    // Kernels already compiled keep their code: drop them from memory (the
    // disk cache keys them apart).
    if (on != jit::CpuCompiler::instance().exact_division()) {
      NoGil nogil;
      jit::CpuCompiler::instance().set_exact_division(on);
      pipeline::clear_kernels();
    }
  });
  m.def("get_exact_division", []() { return jit::CpuCompiler::instance().exact_division(); });
  m.def("get_stage_min_bytes", []() { return pipeline::config().stage_min_bytes; });
  m.def("set_stage_storage", [](const std::string& s) {
    if (s != "recompute" && s != "rolling" && s != "ring")
      throw py::value_error("stage_storage: expected 'recompute', 'rolling' or 'ring', got '" + s + "'");
    pipeline::config().stage_storage = s == "ring" ? 2 : s == "rolling" ? 1 : 0;
    pipeline::clear_memo();
  });
  m.def("get_stage_storage", []() {
    static const char* const kNames[] = {"recompute", "rolling", "ring"};
    return std::string(kNames[pipeline::config().stage_storage]);
  });
  m.def("set_num_threads", [](int n) { runtime::set_num_threads(n); });
  m.def("get_num_threads", []() { return runtime::num_threads(); });
}

}  // namespace nf::py_bind

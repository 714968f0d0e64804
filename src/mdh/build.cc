// Group -> MdHom. Normalizes the iteration domain, deduplicates views into
// accesses and composes the tasks' expressions into one scalar function.
//
// Invariant: for every binding of the parameters, running the MdHom point by
// point in program order stores exactly what the group's tasks stored, except
// into temporaries (fusion.h gives the proof that point-wise order suffices).
#include <algorithm>
#include <charconv>
#include <numeric>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/coalesce.h"
#include "mdh/mdh.h"

namespace nf::mdh {

namespace {

// A view or index function over the normalized domain.
struct Lin {
  BufferPtr buf;  // null for index functions
  DType dtype = DType::Int64;
  int64_t offset = 0;
  Dims strides;
};

struct Normalizer {
  std::vector<std::vector<int>> merged;  // final dims -> list of squeezed dims (outer to inner)
  Dims extents;              // final extents

  // Strides of a task-level view in final dims. `dom` is the task's domain.
  Dims map(const Dims& dom, const Dims& strides) const {
    Dims sq;
    for (size_t k = 0; k < dom.size(); ++k)
      if (dom[k] != 1) sq.push_back(strides[k]);
    // A task of a scalar prologue (0-d) sees one element at every point.
    if (sq.empty()) return Dims(merged.size(), 0);
    Dims out;
    for (const auto& m : merged) out.push_back(sq[m.back()]);  // innermost of the merged run
    return out;
  }
  // The final dim holding a task's domain dim `axis` (-1 if it has extent 1).
  int dim_of(const Dims& dom, int axis) const {
    if (dom[axis] == 1) return -1;
    int s = 0;
    for (int k = 0; k < axis; ++k) s += dom[k] != 1;
    for (size_t d = 0; d < merged.size(); ++d)
      if (std::find(merged[d].begin(), merged[d].end(), s) != merged[d].end()) return static_cast<int>(d);
    return -1;
  }
};

// A scan dimension is never merged with a neighbour (the scan restarts at
// each of its lines); `scans` lists the scanned squeezed dims.
// `keep_outer`: the outer dimension of the first task's domain is never
// merged either (a stage of a chain: fusion.h, Chain, tiles it).
Normalizer normalize(const std::vector<const Task*>& tasks, bool keep_outer) {
  Normalizer n;
  // The group's domain: that of its tasks after any scalar prologue (0-d).
  const Task* t0 = tasks.front();
  for (const Task* t : tasks)
    if (!fusion::squeezed_domain(*t).empty()) {
      t0 = t;
      break;
    }
  Dims ext = fusion::squeezed_domain(*t0);
  const int D = static_cast<int>(ext.size());
  // All squeezed strides of all views, per dimension.
  std::vector<Dims> views;
  size_t nviews = 1;
  for (const Task* t : tasks) nviews += t->inputs.size() + t->indices.size() + 2;
  views.reserve(nviews);
  for (const Task* t : tasks) {
    if (D > 0 && fusion::squeezed_domain(*t).empty()) continue;  // the prologue: no strides
    auto sq = [&](const Dims& s) {
      Dims r;
      for (size_t k = 0; k < t->domain.size(); ++k)
        if (t->domain[k] != 1) r.push_back(s[k]);
      return r;
    };
    for (const View& v : t->inputs) views.push_back(sq(v.strides));
    views.push_back(sq(t->output.strides));
    for (const IndexFn& f : t->indices) views.push_back(sq(f.strides));
    if (t->kind == Task::Kind::Scan && t->domain[t->scan_axis] != 1) {
      // A pseudo-view that strides along the scan dimension only: no merge
      // condition holds across it.
      Dims fake(t->domain.size(), 0);
      fake[t->scan_axis] = 1;
      views.push_back(sq(fake));
    }
  }
  if (keep_outer && D > 1) {
    Dims fake(D, 0);
    fake[0] = 1;
    views.push_back(fake);
  }
  // Order and merge dimensions as every walk of a domain does (core/coalesce.h).
  std::vector<const int64_t*> ptrs;
  ptrs.reserve(views.size());
  for (const Dims& s : views) ptrs.push_back(s.data());
  const Coalesced c = coalesce(ext.data(), D, ptrs.data(), static_cast<int>(ptrs.size()));
  n.merged.reserve(c.ndim());
  for (int d = 0; d < c.ndim(); ++d)
    n.merged.emplace_back(c.order.begin() + c.run_begin(d), c.order.begin() + c.run_end[d]);
  for (const auto& r : n.merged) {
    int64_t e = 1;
    for (int x : r) e *= ext[x];
    n.extents.push_back(e);
  }
  return n;
}

// Maps squeezed-dim indices in `merged` to positions (the runs store squeezed
// dim ids; Normalizer::map indexes the squeezed stride vector with them).

StrideKind kind_of(int64_t s) {
  if (s == 0) return StrideKind::Zero;
  if (s == 1) return StrideKind::Unit;
  return StrideKind::Param;
}

// Drops accesses the kernel never touches (values forwarded in registers and
// temporaries) and renumbers the rest, so the kernel's pointer list holds
// exactly the arrays it reads or writes.
void compact(Built& out) {
  MdHom& h = out.hom;
  Bindings& b = out.bind;
  // (Most groups use every access, each at its own pointer slot: nothing to do.)
  bool all = true;
  for (size_t i = 0; i < h.accesses.size() && all; ++i) {
    const Access& a = h.accesses[i];
    all = (a.read || a.written || a.reduced) && a.ptr == static_cast<int>(i);
  }
  if (all && b.buffers.size() == h.accesses.size()) return;
  std::vector<int> id(h.accesses.size(), -1);
  std::vector<Access> kept;
  std::vector<Buffer*> buffers;
  std::vector<int64_t> offsets;
  std::vector<Recipe::AccessSource> sources;
  for (size_t i = 0; i < h.accesses.size(); ++i) {
    Access a = h.accesses[i];
    if (!(a.read || a.written || a.reduced)) continue;
    id[i] = static_cast<int>(kept.size());
    buffers.push_back(b.buffers[a.ptr]);
    offsets.push_back(b.offsets[a.ptr]);
    sources.push_back(out.recipe.access[i]);
    a.ptr = id[i];
    kept.push_back(a);
  }
  for (ExprNode& n : h.f.nodes)
    if (n.kind == ExprNode::Kind::Input) n.a = id[n.a];
  for (Output& o : h.outputs) o.access = id[o.access];
  h.accesses = std::move(kept);
  b.buffers = std::move(buffers);
  b.offsets = std::move(offsets);
  out.recipe.access = std::move(sources);
}

}  // namespace

void rebind(const std::vector<Task>& window, const Built& tmpl, Bindings& b) { rebind(window, tmpl, tmpl.recipe, b); }

void rebind(const std::vector<Task>& window, const Built& tmpl, const Recipe& recipe, Bindings& b) {
  const size_t n = recipe.access.size();
  b.buffers.resize(n);
  b.offsets.resize(n);
  b.ints.assign(tmpl.bind.ints.begin(), tmpl.bind.ints.end());
  b.floats.assign(tmpl.bind.floats.begin(), tmpl.bind.floats.end());
  rebind_again(window, recipe, b);
}

void rebind_again(const std::vector<Task>& window, const Built& tmpl, Bindings& b) {
  rebind_again(window, tmpl.recipe, b);
}

void rebind_again(const std::vector<Task>& window, const Recipe& recipe, Bindings& b) {
  const size_t n = recipe.access.size();
  for (size_t i = 0; i < n; ++i) {
    const Recipe::AccessSource& src = recipe.access[i];
    const Task& t = window[src.task];
    const View& v = src.slot < 0 ? t.output : t.inputs[src.slot];
    b.buffers[i] = v.buffer.get();
    b.offsets[i] = (v.offset + src.shift) * itemsize(v.dtype);
  }
  for (const Recipe::ParamSource& p : recipe.params) {
    const Task& t = window[p.task];
    if (p.index_offset) b.ints[p.slot] = t.indices[p.which].offset + p.shift;
    else if (p.is_float) b.floats[p.slot] = p.imag ? t.consts[p.which].im : t.consts[p.which].f;
    else b.ints[p.slot] = t.consts[p.which].i;
  }
}

bool MdHom::is_scan(int d) const {
  for (const Output& o : outputs)
    if (o.scan_dim == d) return true;
  return false;
}

bool MdHom::once(const Output& o) const {
  if (o.value >= prologue || o.reduces || o.scan_dim >= 0) return false;
  for (StrideKind k : accesses[o.access].kind)
    if (k != StrideKind::Zero) return false;
  return true;
}

bool MdHom::stored_once(int a) const {
  bool any = false;
  for (const Output& o : outputs) {
    if (o.access != a) continue;
    if (!once(o)) return false;
    any = true;
  }
  return any;
}

bool MdHom::any_pointwise(int d) const {
  for (const Output& o : outputs)
    if (pointwise(o, d)) return true;
  return false;
}

namespace {
// The key's text, appended in place (an ostringstream cost more than the
// rest of analysing a small group): the same characters as stream output.
struct KeyText {
  std::string s;
  KeyText& operator<<(char c) {
    s += c;
    return *this;
  }
  KeyText& operator<<(const char* t) {
    s += t;
    return *this;
  }
  KeyText& operator<<(int64_t v) {
    char buf[24];
    s.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
    return *this;
  }
  KeyText& operator<<(int v) { return *this << static_cast<int64_t>(v); }
  KeyText& operator<<(bool v) { return *this << static_cast<int64_t>(v); }
};
}  // namespace

std::string MdHom::key() const {
  KeyText k;
  k.s.reserve(256);
  k << "D" << ndim << "|";
  for (const Access& a : accesses) {
    k << "a" << dtype_char(a.dtype);
    for (size_t d = 0; d < a.kind.size(); ++d) {
      k << "0u*"[static_cast<int>(a.kind[d])];
      if (a.kind[d] == StrideKind::Param) k << static_cast<int64_t>(a.stride[d]);
    }
    k << (a.read ? "r" : "") << (a.written ? "w" : "") << (a.reduced ? "x" : "") << ";";
  }
  k << "|f";
  for (const ExprNode& n : f.nodes)
    k << static_cast<int>(n.kind) << dtype_char(n.dtype) << static_cast<int>(n.op) << "," << static_cast<int64_t>(n.a)
      << "," << static_cast<int64_t>(n.b) << "," << static_cast<int64_t>(n.c) << ";";
  k << "|c";
  for (size_t i = 0; i < const_type.size(); ++i) k << dtype_char(const_type[i]) << static_cast<int64_t>(const_slot[i]);
  k << "|i";
  for (const Affine& a : indices) {
    k << static_cast<int64_t>(a.offset);
    for (int s : a.stride) k << "," << s;
    k << ";";
  }
  k << "|p" << static_cast<int64_t>(prologue);
  if (once_guard >= 0) k << "g" << static_cast<int64_t>(once_guard);  // (absent: the keys of before the guard)
  k << "|o";
  for (const Output& o : outputs)
    k << static_cast<int64_t>(o.access) << "," << static_cast<int64_t>(o.value) << "," << o.reduces
      << static_cast<int>(o.op) << dtype_char(o.acc_dtype) << "," << static_cast<int64_t>(o.arg_node) << ","
      << static_cast<int64_t>(o.init_const) << "," << static_cast<int64_t>(o.scan_dim) << ";";
  return std::move(k.s);
}

Built build(const std::vector<Task>& window, const fusion::Group& group) {
  Built out;
  MdHom& h = out.hom;
  Bindings& b = out.bind;
  std::vector<const Task*> tasks;
  for (int k = group.begin; k < group.end; ++k)
    if (!group.is_dead(k)) {
      tasks.push_back(&window[k]);
      out.tasks.push_back(k);
    }
  if (tasks.empty()) return out;
  Normalizer norm = normalize(tasks, group.stage);
  h.ndim = static_cast<int>(norm.extents.size());
  auto scalar = [](const Task* t) { return fusion::squeezed_domain(*t).empty(); };
  if (h.ndim > 0 && !std::is_partitioned(tasks.begin(), tasks.end(), scalar)) {
    // The scalar prologue first: the group's 0-d maps, leading or joined
    // from the middle (fusion.h; partition checked that computing them
    // before the other tasks changes no value), in program order. (Most
    // groups have none, or have them leading already: nothing to move.)
    std::vector<size_t> order(tasks.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_partition(order.begin(), order.end(), [&](size_t k) { return scalar(tasks[k]); });
    std::vector<const Task*> t2;
    std::vector<int> k2;
    for (size_t k : order) {
      t2.push_back(tasks[k]);
      k2.push_back(out.tasks[k]);
    }
    tasks = std::move(t2);
    out.tasks = std::move(k2);
  }
  // Room for everything at once: growing these one element at a time was
  // most of this function's allocations (every analysed group builds one).
  size_t nviews = 0, nconsts = 0, nindex = 0;
  for (const Task* t : tasks) {
    nviews += t->inputs.size() + 1;
    nconsts += t->consts.size();
    nindex += t->indices.size();
  }
  h.accesses.reserve(nviews);
  b.buffers.reserve(nviews);
  b.offsets.reserve(nviews);
  out.recipe.access.reserve(nviews);
  out.recipe.params.reserve(2 * nconsts + nindex);
  h.outputs.reserve(tasks.size());
  b.ints.reserve(norm.extents.size() * (1 + nviews + nindex) + nconsts + nindex + 1);
  b.floats.reserve(2 * nconsts);
  auto new_int = [&](int64_t v) {
    b.ints.push_back(v);
    return h.num_ints++;
  };
  auto new_float = [&](double v) {
    b.floats.push_back(v);
    return h.num_floats++;
  };
  for (int64_t e : norm.extents) h.extent.push_back(new_int(e));


  // Distinct views -> accesses.
  std::vector<Lin> lins;
  int cur_task = -1;  // window index of the task being expressed
  // Per access: the node holding its current value, its Input node (valid
  // until written), its index in h.outputs; -1: none.
  std::vector<int> latest, input_node, output_of;
  lins.reserve(nviews);
  latest.reserve(nviews);
  input_node.reserve(nviews);
  output_of.reserve(nviews);
  auto access_of = [&](const Task& t, const View& v, int slot) {
    // (The buffer pointer does not own it: the window's tasks do.)
    Lin l{BufferPtr(BufferPtr(), v.buffer.get()), v.dtype, v.offset, norm.map(t.domain, v.strides)};
    for (size_t i = 0; i < lins.size(); ++i)
      if (lins[i].buf == l.buf && lins[i].dtype == l.dtype && lins[i].offset == l.offset && lins[i].strides == l.strides)
        return static_cast<int>(i);
    Access a;
    a.dtype = v.dtype;
    a.ptr = static_cast<int>(b.buffers.size());
    b.buffers.push_back(v.buffer.get());
    b.offsets.push_back(v.offset * itemsize(v.dtype));
    for (int64_t s : l.strides) {
      a.kind.push_back(kind_of(s));
      a.stride.push_back(kind_of(s) == StrideKind::Param ? new_int(s) : -1);
    }
    h.accesses.push_back(std::move(a));
    lins.push_back(std::move(l));
    latest.push_back(-1);
    input_node.push_back(-1);
    output_of.push_back(-1);
    out.recipe.access.push_back({cur_task, slot});
    return static_cast<int>(lins.size()) - 1;
  };

  size_t prologue_tasks = 0;  // the leading 0-d tasks (fusion.h: scalar prologue)
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    const Task& t = *tasks[ti];
    cur_task = out.tasks[ti];
    std::vector<int> in_node(t.inputs.size(), -1);
    std::vector<int> remap(t.expr.nodes.size(), -1);
    std::vector<int> const_id(t.consts.size()), index_id(t.indices.size());
    for (size_t k = 0; k < t.consts.size(); ++k) {
      const Scalar& c = t.consts[k];
      h.const_type.push_back(c.dtype);
      const int slot = is_inexact(c.dtype) ? new_float(c.f) : new_int(c.i);
      h.const_slot.push_back(slot);
      out.recipe.params.push_back({slot, cur_task, static_cast<int>(k), false, is_inexact(c.dtype)});
      if (is_complex(c.dtype)) {  // the imaginary part in the next float slot
        const int im = new_float(c.im);
        out.recipe.params.push_back({im, cur_task, static_cast<int>(k), false, true, true});
      }
      const_id[k] = static_cast<int>(h.const_type.size()) - 1;
    }
    for (size_t k = 0; k < t.indices.size(); ++k) {
      Affine a;
      a.offset = new_int(t.indices[k].offset);
      out.recipe.params.push_back({a.offset, cur_task, static_cast<int>(k), true, false});
      for (int64_t s : norm.map(t.domain, t.indices[k].strides)) a.stride.push_back(new_int(s));
      h.indices.push_back(a);
      index_id[k] = static_cast<int>(h.indices.size()) - 1;
    }
    for (size_t n = 0; n < t.expr.nodes.size(); ++n) {
      ExprNode x = t.expr.nodes[n];
      switch (x.kind) {
        case ExprNode::Kind::Input: {
          if (in_node[x.a] < 0) {
            int aid = access_of(t, t.inputs[x.a], x.a);
            if (latest[aid] >= 0) {
              in_node[x.a] = latest[aid];
            } else if (input_node[aid] >= 0) {
              in_node[x.a] = input_node[aid];
            } else {
              h.accesses[aid].read = true;
              in_node[x.a] = h.f.input(aid, h.accesses[aid].dtype);
              input_node[aid] = in_node[x.a];
            }
          }
          remap[n] = in_node[x.a];
          continue;
        }
        case ExprNode::Kind::Const:
          x.a = const_id[x.a];
          break;
        case ExprNode::Kind::Index:
          x.a = index_id[x.a];
          break;
        default:
          if (x.a >= 0) x.a = remap[x.a];
          if (x.b >= 0) x.b = remap[x.b];
          if (x.c >= 0) x.c = remap[x.c];
          break;
      }
      remap[n] = h.f.add(x);
    }
    const int value = remap[t.value()];
    if (h.ndim > 0 && ti == prologue_tasks && fusion::squeezed_domain(t).empty()) {
      ++prologue_tasks;
      h.prologue = static_cast<int>(h.f.nodes.size());
    }
    const int aid = access_of(t, t.output, -1);
    Access& acc = h.accesses[aid];
    if (t.is_reduce()) {
      acc.reduced = true;
      Output o;
      o.access = aid;
      o.value = value;
      o.reduces = true;
      o.op = t.reduce;
      o.acc_dtype = t.acc_dtype;
      o.arg_node = t.arg_node >= 0 ? remap[t.arg_node] : -1;
      o.init_const = t.init_const >= 0 ? const_id[t.init_const] : -1;
      output_of[aid] = static_cast<int>(h.outputs.size());
      h.outputs.push_back(o);
    } else if (t.kind == Task::Kind::Scan) {
      acc.written = true;
      Output o;
      o.access = aid;
      o.value = value;
      o.op = t.reduce;
      o.acc_dtype = t.acc_dtype;
      o.scan_dim = norm.dim_of(t.domain, t.scan_axis);
      output_of[aid] = static_cast<int>(h.outputs.size());
      h.outputs.push_back(o);
    } else {
      acc.written = true;
      latest[aid] = value;
      input_node[aid] = -1;
      if (output_of[aid] >= 0) {
        h.outputs[output_of[aid]].value = value;
      } else {
        Output o;
        o.access = aid;
        o.value = value;
        output_of[aid] = static_cast<int>(h.outputs.size());
        h.outputs.push_back(o);
      }
    }
  }
  // Temporaries are never stored.
  std::vector<Output> kept;
  for (const Output& o : h.outputs) {
    const Buffer* buf = lins[o.access].buf.get();
    if (!o.reduces && group.is_temporary(buf)) {
      h.accesses[o.access].written = false;
      continue;
    }
    kept.push_back(o);
  }
  h.outputs = std::move(kept);
  compact(out);
  if (group.stage)
    for (const Output& o : h.outputs)
      if (h.once(o)) {
        h.once_guard = new_int(1);
        break;
      }
  return out;
}

}  // namespace nf::mdh

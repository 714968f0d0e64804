// Recompute instead of store (fusion.h, recompute_producers): a cheap map
// whose result only later tasks read, some through shifted views, is
// evaluated again at each of its readers' points, and its result is never
// stored (the "registers" storage of an intermediate).
#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "core/checks.h"
#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

// Cost of one evaluation of a node, in units of an addition (a load and a
// store of the intermediate cost about what one addition does).
int node_cost(const ExprNode& n) {
  switch (n.kind) {
    case ExprNode::Kind::Input:
    case ExprNode::Kind::Const:
    case ExprNode::Kind::Index:
      return 0;
    case ExprNode::Kind::Cast:
    case ExprNode::Kind::Select:
      return 1;
    case ExprNode::Kind::Unary:
      switch (static_cast<UnaryOp>(n.op)) {
        case UnaryOp::Negative: case UnaryOp::Positive: case UnaryOp::Absolute: case UnaryOp::Sign:
        case UnaryOp::LogicalNot: case UnaryOp::Invert: case UnaryOp::Square: case UnaryOp::Floor:
        case UnaryOp::Ceil: case UnaryOp::Trunc: case UnaryOp::Rint: case UnaryOp::Isnan: case UnaryOp::Isinf:
        case UnaryOp::Isfinite: case UnaryOp::Signbit: case UnaryOp::Deg2rad: case UnaryOp::Rad2deg:
        case UnaryOp::Conjugate:
          return 1;
        case UnaryOp::Sqrt: case UnaryOp::Reciprocal:
          return 4;
        default:
          return 16;  // transcendental
      }
    case ExprNode::Kind::Binary:
      switch (static_cast<BinaryOp>(n.op)) {
        case BinaryOp::TrueDivide:
          return 4;
        case BinaryOp::FloorDivide: case BinaryOp::Remainder: case BinaryOp::Fmod:
          return 8;
        case BinaryOp::Power: case BinaryOp::Arctan2: case BinaryOp::Hypot: case BinaryOp::Logaddexp:
        case BinaryOp::Logaddexp2: case BinaryOp::Nextafter:
          return 16;
        default:
          return 1;
      }
  }
  return 16;
}

// The nodes the value `root` of `e` depends on (its cone), and their cost.
int cone_of(const Expr& e, int root, std::vector<char>& in) {
  in.assign(e.nodes.size(), 0);
  in[root] = 1;
  int cost = 0;
  for (int k = root; k >= 0; --k) {
    if (!in[k]) continue;
    const ExprNode& n = e.nodes[k];
    cost += node_cost(n);
    if (n.kind == ExprNode::Kind::Input || n.kind == ExprNode::Kind::Const || n.kind == ExprNode::Kind::Index)
      continue;
    for (int o : {n.a, n.b, n.c})
      if (o >= 0) in[o] = 1;
  }
  return cost;
}

// A read R of what the producer wrote through W (whole and C-contiguous
// over the producer's domain) as an affine map of points, q = s + A p:
// reader point p reads the element the producer computed at point q. A has
// at most one entry per column: reader dimension e moves producer
// dimension dim[e] by step[e] (dim[e] = -1: it moves none, an extent-1
// dimension). Exists when R's offset and strides decompose so and q stays
// inside the producer's domain for every p: then W(q(p)) and R(p) are one
// element (a C-contiguous whole view touches each element at exactly one
// point). Broadcast reads (stride 0 over more than one point) are refused.
struct PointMap {
  Dims s;
  SmallVector<int, 6> dim;
  SmallVector<int64_t, 6> step;
};

bool point_map(const View& w, const View& r, PointMap& m) {
  if (r.dtype != w.dtype || r.size() == 0) return false;
  const int nd = w.ndim(), ne = r.ndim();
  m.s.clear();
  m.s.resize(nd, 0);
  m.dim.clear();
  m.dim.resize(ne, -1);
  m.step.clear();
  m.step.resize(ne, 0);
  int64_t off = r.offset - w.offset;
  if (off < 0) return false;
  for (int d = 0; d < nd; ++d) {
    if (w.shape[d] == 1) continue;
    m.s[d] = off / w.strides[d];
    off -= m.s[d] * w.strides[d];
  }
  if (off != 0) return false;
  for (int e = 0; e < ne; ++e) {
    if (r.shape[e] == 1) continue;
    // (A broadcast read would evaluate the producer again at every point
    // along the broadcast: a scalar's division at each of n points.)
    if (r.strides[e] == 0) return false;
    for (int d = 0; d < nd; ++d)
      if (w.shape[d] > 1 && r.strides[e] % w.strides[d] == 0) {
        m.dim[e] = d;
        m.step[e] = r.strides[e] / w.strides[d];
        break;
      }
    if (m.dim[e] < 0) return false;
  }
  for (int d = 0; d < nd; ++d) {
    int64_t lo = m.s[d], hi = m.s[d];
    for (int e = 0; e < ne; ++e) {
      if (m.dim[e] != d) continue;
      (m.step[e] > 0 ? hi : lo) += m.step[e] * (r.shape[e] - 1);
    }
    if (lo < 0 || hi >= w.shape[d]) return false;
  }
  return true;
}

// The producer's view v (over its domain) seen from the reader's points.
View moved(const View& v, const PointMap& m, const Dims& reader_shape) {
  View out;
  out.buffer = v.buffer;
  out.dtype = v.dtype;
  out.readonly = v.readonly;
  out.offset = v.offset;
  for (int d = 0; d < v.ndim(); ++d) out.offset += v.strides[d] * m.s[d];
  out.shape = reader_shape;
  out.strides.resize(reader_shape.size(), 0);
  for (size_t e = 0; e < reader_shape.size(); ++e)
    if (m.dim[e] >= 0) out.strides[e] = v.strides[m.dim[e]] * m.step[e];
  return out;
}

IndexFn moved(const IndexFn& f, const PointMap& m) {
  IndexFn out;
  out.offset = f.offset;
  for (size_t d = 0; d < f.strides.size(); ++d) out.offset += f.strides[d] * m.s[d];
  out.strides.resize(m.dim.size(), 0);
  for (size_t e = 0; e < m.dim.size(); ++e)
    if (m.dim[e] >= 0) out.strides[e] = f.strides[m.dim[e]] * m.step[e];
  return out;
}

bool whole_c(const View& v) {
  if (v.offset != 0) return false;
  int64_t expect = 1;
  for (int k = v.ndim(); k-- > 0;) {
    if (v.shape[k] == 1) continue;
    if (v.strides[k] != expect) return false;
    expect *= v.shape[k];
  }
  return expect * itemsize(v.dtype) == v.buffer->nbytes();
}

bool broadcasts(const View& v) {
  for (int e = 0; e < v.ndim(); ++e)
    if (v.shape[e] > 1 && v.strides[e] == 0) return true;
  return false;
}

// Nothing outside the window can see or touch b, and nothing computed it yet.
bool hidden(const Buffer* b) { return !b->py_live && !b->allocated(); }

constexpr int kMaxNodes = 512;
constexpr int kMaxInputs = 32;

// Appends the nodes of `from` marked in `keep` to `to`, in order, their
// operands renumbered; `map` gets each one's node in `to`. A leaf (Input,
// Const, Index) goes through leaf(node): its slot in `to`'s task, or -1 - n
// where it stands for node n of `to` (a value forwarded, not read).
template <class Leaf>
void append_nodes(const Expr& from, const std::vector<char>& keep, Expr& to, std::vector<int>& map, Leaf&& leaf) {
  map.assign(from.nodes.size(), -1);
  for (size_t k = 0; k < from.nodes.size(); ++k) {
    if (!keep[k]) continue;
    ExprNode x = from.nodes[k];
    if (x.kind == ExprNode::Kind::Input || x.kind == ExprNode::Kind::Const || x.kind == ExprNode::Kind::Index) {
      const int r = leaf(x);
      if (r < 0) {
        map[k] = -1 - r;
        continue;
      }
      x.a = r;
    } else {
      for (int32_t* o : {&x.a, &x.b, &x.c})
        if (*o >= 0) *o = map[*o];
    }
    map[k] = to.add(x);
  }
}

// The slot `item` takes in `dst` at the first use of source slot k (memo[k]);
// `added` runs when it is new.
template <class Vec, class T, class Added>
int first_use(std::vector<int>& memo, int k, Vec& dst, const T& item, Added&& added) {
  if (memo[k] < 0) {
    memo[k] = static_cast<int>(dst.size());
    dst.push_back(item);
    added();
  }
  return memo[k];
}

// The sources of task j's operands (Recomputed::Sources): the ones recorded
// for it if it was rewritten, else its own.
Sources sources_of(const std::vector<Task>& window, int j, const Recomputed& rec) {
  if (const Sources* s = rec.sources_of(j)) return *s;
  Sources out;
  const Task& t = window[j];
  for (size_t k = 0; k < t.inputs.size(); ++k) out.inputs.push_back({j, static_cast<int>(k), 0});
  for (size_t k = 0; k < t.consts.size(); ++k) out.consts.push_back({j, static_cast<int>(k), 0});
  for (size_t k = 0; k < t.indices.size(); ++k) out.indices.push_back({j, static_cast<int>(k), 0});
  return out;
}

// Reader `c` with every read of the producer's result (inputs `slots`, with
// their point maps) replaced by the producer's expression there. False
// (and `c` untouched) where the result would break a task invariant or the
// size limits. With `cs`: c's operands' sources in, the new task's out
// (`ps`: the producer's).
bool substitute(Task& c, const Task& p, const std::vector<char>& cone, const std::vector<int>& slots,
                const std::vector<PointMap>& maps, Sources* cs = nullptr, const Sources* ps = nullptr) {
  Task t;
  t.kind = c.kind;
  t.reduce = c.reduce;
  t.acc_dtype = c.acc_dtype;
  t.solo = c.solo;
  t.scan_axis = c.scan_axis;
  t.init_const = c.init_const;
  t.name = c.name;
  t.domain = c.domain;
  t.inputs = c.inputs;
  t.consts = c.consts;
  t.indices = c.indices;
  t.output = c.output;
  t.seq = c.seq;
  Sources ts;
  if (cs) ts = *cs;
  std::vector<int> pconst(p.consts.size(), -1);
  std::vector<int> at(c.inputs.size(), -1);  // node computing each replaced slot's value
  std::vector<int> map, pmap;
  auto input_slot = [&](const View& v, const Source& from) {
    for (size_t k = 0; k < t.inputs.size(); ++k)
      if (t.inputs[k].same_as(v)) return static_cast<int>(k);
    t.inputs.push_back(v);
    if (cs) ts.inputs.push_back(from);
    return static_cast<int>(t.inputs.size()) - 1;
  };
  append_nodes(c.expr, std::vector<char>(c.expr.nodes.size(), 1), t.expr, map, [&](const ExprNode& n) {
    const auto it = std::find(slots.begin(), slots.end(), n.a);
    if (n.kind != ExprNode::Kind::Input || it == slots.end()) return n.a;
    if (at[n.a] < 0) {
      // The producer's cone at this read's points, before the reader's
      // nodes that use it.
      const PointMap& m = maps[it - slots.begin()];
      append_nodes(p.expr, cone, t.expr, pmap, [&](const ExprNode& x) {
        if (x.kind == ExprNode::Kind::Input) {
          View v = moved(p.inputs[x.a], m, c.domain);
          Source from;
          if (cs) from = {ps->inputs[x.a].task, ps->inputs[x.a].which,
                          ps->inputs[x.a].shift + v.offset - p.inputs[x.a].offset};
          return input_slot(v, from);
        }
        if (x.kind == ExprNode::Kind::Const)
          return first_use(pconst, x.a, t.consts, p.consts[x.a], [&] {
            if (cs) ts.consts.push_back(ps->consts[x.a]);
          });
        t.indices.push_back(moved(p.indices[x.a], m));
        if (cs) {
          Source from = ps->indices[x.a];
          from.shift += t.indices.back().offset - p.indices[x.a].offset;
          ts.indices.push_back(from);
        }
        return static_cast<int>(t.indices.size()) - 1;
      });
      at[n.a] = pmap[p.value()];
    }
    return -1 - at[n.a];
  });
  t.value_node = c.value_node >= 0 ? map[c.value_node] : -1;
  t.arg_node = c.arg_node >= 0 ? map[c.arg_node] : -1;
  if (t.value_node == t.expr.root()) t.value_node = -1;
  // The replaced slots go; the others keep their order.
  std::vector<int> renumber(t.inputs.size(), -1);
  InlineVector<View, 3> kept;
  std::vector<Source> kept_from;
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    if (k < c.inputs.size() && std::find(slots.begin(), slots.end(), static_cast<int>(k)) != slots.end()) continue;
    renumber[k] = static_cast<int>(kept.size());
    kept.push_back(std::move(t.inputs[k]));
    if (cs) kept_from.push_back(ts.inputs[k]);
  }
  t.inputs = std::move(kept);
  ts.inputs = std::move(kept_from);
  for (ExprNode& n : t.expr.nodes)
    if (n.kind == ExprNode::Kind::Input) n.a = renumber[n.a];
  if (static_cast<int>(t.expr.nodes.size()) > kMaxNodes || static_cast<int>(t.inputs.size()) > kMaxInputs)
    return false;
  // A task reads each element it writes only through the view that writes
  // it (Task::validate): what the producer read must not have moved under
  // the reader's own output.
  for (const View& v : t.inputs)
    if (views_overlap(v, t.output) && !v.same_as(t.output)) return false;
  if (checks_on()) t.validate();
  c = std::move(t);
  if (cs) *cs = std::move(ts);
  return true;
}

// The cone `group` (sorted, its last task the producer of b) as one map over
// the producer's domain: its tasks' expressions in program order, each
// internal read forwarded from its writer's value. `cost`: its cost per
// point (node_cost). `reads_own`: whether it reads a buffer it writes
// (through another view: not a value it can forward). With `rec`: the
// sources of its operands into `src`.
Task merge_cone(const std::vector<Task>& window, const std::vector<int>& group, const Buffer* b, int& cost,
                bool& reads_own, const Recomputed* rec, Sources* src) {
  const Task& p = window[group.back()];
  Task q;
  q.kind = Task::Kind::Map;
  q.name = p.name;
  q.domain = p.domain;
  q.output = p.output;
  std::unordered_map<const Buffer*, int> value_of;  // internal buffer -> node
  cost = 0;
  std::vector<int> map;
  std::vector<char> cone;
  for (int k : group) {
    const Task& t = window[k];
    Sources ts;
    if (rec) ts = sources_of(window, k, *rec);
    std::vector<int> cmap(t.consts.size(), -1), imap(t.indices.size(), -1);
    cost += cone_of(t.expr, t.value(), cone);
    append_nodes(t.expr, cone, q.expr, map, [&](const ExprNode& e) {
      if (e.kind == ExprNode::Kind::Const)
        return first_use(cmap, e.a, q.consts, t.consts[e.a], [&] {
          if (rec) src->consts.push_back(ts.consts[e.a]);
        });
      if (e.kind == ExprNode::Kind::Index)
        return first_use(imap, e.a, q.indices, t.indices[e.a], [&] {
          if (rec) src->indices.push_back(ts.indices[e.a]);
        });
      const View& v = t.inputs[e.a];
      auto f = value_of.find(v.buffer.get());
      if (f != value_of.end()) return -1 - f->second;
      for (size_t y = 0; y < q.inputs.size(); ++y)
        if (q.inputs[y].same_as(v)) return static_cast<int>(y);
      q.inputs.push_back(v);
      if (rec) src->inputs.push_back(ts.inputs[e.a]);
      return static_cast<int>(q.inputs.size()) - 1;
    });
    value_of[t.output.buffer.get()] = map[t.value()];
  }
  q.value_node = value_of.at(b);
  if (q.value_node == q.expr.root()) q.value_node = -1;
  reads_own = false;
  for (const View& v : q.inputs) reads_own |= value_of.count(v.buffer.get()) > 0;
  return q;
}

// Every read of b (written through `w`) by `readers` replaced by the merged
// cone q: all readers or none (false: none, the window untouched). The
// readers now read what the cone read: a pending read of each buffer until
// they have run (Buffer::last_read). With `rec`: each rewritten reader's
// sources (and, with rec->keep_recorded, the reader as recorded) go there.
bool substitute_all(std::vector<Task>& window, const Task& q, const Sources* qs, const View& w,
                    const std::vector<int>& readers, Recomputed* rec) {
  const Buffer* b = w.buffer.get();
  std::vector<char> cone;
  cone_of(q.expr, q.value(), cone);
  std::vector<Task> rewritten;
  std::vector<Sources> sources;
  rewritten.reserve(readers.size());
  std::vector<int> slots;
  std::vector<PointMap> maps;
  for (int j : readers) {
    Task c = window[j];
    slots.clear();
    maps.clear();
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      if (c.inputs[k].buffer.get() != b) continue;
      slots.push_back(static_cast<int>(k));
      if (!point_map(w, c.inputs[k], maps.emplace_back())) return false;
    }
    Sources cs;
    if (rec) cs = sources_of(window, j, *rec);
    if (!substitute(c, q, cone, slots, maps, rec ? &cs : nullptr, qs)) return false;
    rewritten.push_back(std::move(c));
    if (rec) sources.push_back(std::move(cs));
  }
  for (size_t r = 0; r < readers.size(); ++r) {
    const int j = readers[r];
    if (rec) {
      auto it = std::find_if(rec->rewritten.begin(), rec->rewritten.end(), [j](const auto& e) { return e.first == j; });
      if (it == rec->rewritten.end()) {
        if (rec->keep_recorded) rec->recorded.emplace_back(j, window[j]);
        rec->rewritten.emplace_back(j, std::move(sources[r]));
      } else {
        it->second = std::move(sources[r]);
      }
    }
    Task& c = window[j];
    c = std::move(rewritten[r]);
    for (const View& v : c.inputs) {
      Buffer* nb = v.buffer.get();
      uint64_t seen = nb->last_read.load(std::memory_order_relaxed);
      while (seen < c.seq && !nb->last_read.compare_exchange_weak(seen, c.seq, std::memory_order_acq_rel)) {
      }
    }
  }
  return true;
}

}  // namespace

const Sources* Recomputed::sources_of(int task) const {
  for (const auto& [j, s] : rewritten)
    if (j == task) return &s;
  return nullptr;
}

int recompute_producers(std::vector<Task>& window, int budget, Recomputed* record) {
  const int n = static_cast<int>(window.size());
  if (budget < 0) return 0;
  // Most windows have no shifted read of an intermediate: one look at each
  // input decides that, without building anything.
  // (Or a contraction after some task: a map before it may be read after it.)
  const bool solo_seen = n > 1 && std::any_of(window.begin() + 1, window.end(), [](const Task& t) { return t.solo; });
  bool any = solo_seen;
  for (const Task& t : window) {
    if (any) break;
    for (const View& v : t.inputs) {
      const Buffer* b = v.buffer.get();
      if (hidden(b) && (v.offset != 0 || v.size() * itemsize(v.dtype) != b->nbytes()) && !broadcasts(v)) {
        any = true;
        break;
      }
    }
    if (any) break;
  }
  if (!any) return 0;

  // Readers (tasks) and writers of every hidden buffer.
  struct Uses {
    std::vector<int> readers;
    int writers = 0;
    int writer = -1;
  };
  std::unordered_map<const Buffer*, Uses> uses;
  auto add_reader = [&](const Buffer* b, int j) {
    std::vector<int>& r = uses[b].readers;
    if (std::find(r.begin(), r.end(), j) == r.end()) r.push_back(j);
  };
  for (int j = 0; j < n; ++j) {
    for (const View& v : window[j].inputs)
      if (hidden(v.buffer.get())) add_reader(v.buffer.get(), j);
    const Buffer* out = window[j].output.buffer.get();
    if (hidden(out)) {
      uses[out].writers++;
      uses[out].writer = j;
    }
  }
  // A map whose result may be forwarded as a value: hidden, written once
  // by it, whole and C-contiguous, stored as computed.
  auto single_map = [&](int k) {
    const Task& t = window[k];
    const Buffer* b = t.output.buffer.get();
    if (t.kind != Task::Kind::Map || t.solo || !hidden(b) || t.output.size() == 0) return false;
    auto u = uses.find(b);
    return u != uses.end() && u->second.writers == 1 && whole_c(t.output) &&
           t.expr.nodes[t.value()].dtype == t.output.dtype;
  };
  auto in = [](const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); };

  int done = 0;
  for (int i = n; i-- > 0;) {
    if (!single_map(i)) continue;
    const Task& p = window[i];
    const View& w = p.output;
    const Buffer* b = w.buffer.get();
    std::vector<int> readers = uses.at(b).readers;
    if (readers.empty()) continue;
    std::sort(readers.begin(), readers.end());
    if (readers.front() <= i) continue;
    // Every read is a point map; at least one is shifted (same-view reads
    // are forwarded inside a kernel anyway), or a contraction lies between
    // the producer and its first reader (`beta * C[i, :i + 1]` before
    // `A[:i + 1] @ A[i]`, read after it: the contraction runs on its own
    // and ends the producer's group, whose kernel would store the result
    // for the reader's kernel to load -- substituted, the reader computes
    // it); each distinct view costs an evaluation.
    bool separated = false;
    for (int k = i + 1; solo_seen && !separated && k < readers.front(); ++k) separated = window[k].solo;
    bool ok = true, shifted = separated;
    std::vector<const View*> distinct;
    for (int j : readers) {
      const Task& c = window[j];
      if (c.solo) ok = false;
      for (const View& v : c.inputs) {
        if (v.buffer.get() != b) continue;
        PointMap m;
        ok &= point_map(w, v, m);
        shifted |= !v.same_as(w);
        if (std::none_of(distinct.begin(), distinct.end(), [&](const View* d) { return d->same_as(v); }))
          distinct.push_back(&v);
      }
    }
    if (!ok || !shifted) continue;
    // The producer's cone: p and the maps whose results only the cone
    // reads, each through the view that wrote it (values a kernel would
    // forward). Recomputed together or not at all: recomputing part of it
    // would store its other results instead of b.
    std::vector<int> group{i};
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t g = 0; g < group.size(); ++g)
        for (const View& v : window[group[g]].inputs) {
          const Buffer* c = v.buffer.get();
          auto u = uses.find(c);
          if (u == uses.end() || u->second.writer < 0 || in(group, u->second.writer)) continue;
          const int k = u->second.writer;
          if (k > i || !single_map(k)) continue;
          bool only = true;
          for (int r : u->second.readers) {
            if (!in(group, r)) only = false;
            for (const View& rv : window[r].inputs)
              if (rv.buffer.get() == c && !rv.same_as(window[k].output)) only = false;
          }
          if (!only) continue;
          group.push_back(k);
          grew = true;
        }
    }
    std::sort(group.begin(), group.end());
    int cost = 0;
    bool reads_own = false;
    Sources qs;
    const Task q = merge_cone(window, group, b, cost, reads_own, record, record ? &qs : nullptr);
    if (reads_own || static_cast<int64_t>(cost) * (static_cast<int64_t>(distinct.size()) - 1) > budget) continue;
    // What the cone read must still hold its values where the readers now
    // read it: nothing else from the cone's first task to the last reader
    // writes it.
    for (int k = group.front() + 1; ok && k < readers.back(); ++k) {
      if (in(group, k)) continue;
      for (const View& v : q.inputs) ok &= window[k].output.buffer != v.buffer;
    }
    if (!ok) continue;
    if (!substitute_all(window, q, record ? &qs : nullptr, w, readers, record)) continue;
    for (int j : readers)
      for (const View& v : window[j].inputs)
        if (hidden(v.buffer.get())) add_reader(v.buffer.get(), j);
    // The cone's tasks are now dead (partition: nobody reads their
    // results); their own reads no longer count.
    for (int k : group) {
      for (const View& v : window[k].inputs) {
        auto u = uses.find(v.buffer.get());
        if (u == uses.end()) continue;
        std::vector<int>& r = u->second.readers;
        r.erase(std::remove(r.begin(), r.end(), k), r.end());
      }
      uses.erase(window[k].output.buffer.get());
    }
    if (record) record->cones.push_back({group, readers});
    done += static_cast<int>(group.size());
  }
  if (record) record->tasks = done;
  return done;
}

bool replay_recompute(std::vector<Task>& window, const Recomputed& r) {
  for (const Recomputed::Cone& c : r.cones) {
    if (c.tasks.empty() || c.tasks.back() >= static_cast<int>(window.size())) return false;
    const View& w = window[c.tasks.back()].output;
    int cost = 0;
    bool reads_own = false;
    const Task q = merge_cone(window, c.tasks, w.buffer.get(), cost, reads_own, nullptr, nullptr);
    if (reads_own || !substitute_all(window, q, nullptr, w, c.readers, nullptr)) return false;
  }
  return true;
}

bool substitute_producer(Task& c, const Task& p) {
  const Buffer* b = p.output.buffer.get();
  std::vector<int> slots;
  std::vector<PointMap> maps;
  for (size_t k = 0; k < c.inputs.size(); ++k)
    if (c.inputs[k].buffer.get() == b) {
      PointMap m;
      if (!point_map(p.output, c.inputs[k], m)) return false;
      slots.push_back(static_cast<int>(k));
      maps.push_back(std::move(m));
    }
  if (slots.empty()) return false;
  return substitute(c, p, std::vector<char>(p.expr.nodes.size(), 1), slots, maps);
}

}  // namespace nf::fusion

// Greedy partition of the window into fusable groups (Diffuse, section 4.2),
// followed by dead-task and temporary detection (section 5.1).
//
// Invariant: every group satisfies constraints 1-4 of fusion.h, checked on
// views with extent-1 dimensions removed (so a (1,N) and an (N,) view of the
// same memory compare equal).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/flat_map.h"
#include "core/inline_vector.h"
#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

// v without its extent-1 dimensions. The copy's buffer pointer does not own
// the buffer (an aliasing shared_ptr without a control block: copying it
// counts no references); the partition's views live no longer than the
// window's tasks, which own the buffers.
View squeeze(const View& v) {
  View r;
  r.buffer = BufferPtr(BufferPtr(), v.buffer.get());
  r.dtype = v.dtype;
  r.offset = v.offset;
  r.readonly = v.readonly;
  for (int k = 0; k < v.ndim(); ++k) {
    if (v.shape[k] == 1) continue;
    r.shape.push_back(v.shape[k]);
    r.strides.push_back(v.strides[k]);
  }
  return r;
}

// Same element for every domain point, or no element in common.
bool same_or_disjoint(const View& a, const View& b) { return a.same_as(b) || !views_overlap(a, b); }

struct Access {
  View view;  // squeezed
  bool write;
  bool reduce;
};

using Accesses = InlineVector<Access, 4>;

Accesses accesses_of(const Task& t) {
  Accesses out;
  out.reserve(t.inputs.size() + 1);
  for (const View& v : t.inputs) out.push_back({squeeze(v), false, false});
  out.push_back({squeeze(t.output), true, t.combines()});
  return out;
}

// What the running group has done to each buffer.
struct BufferState {
  InlineVector<View, 2> reads, writes;
  bool reduced = false;
};

// The running group's state per buffer.
using States = FlatMap<const Buffer*, BufferState>;

std::string describe(const View& v) {
  return "buffer #" + std::to_string(v.buffer->id()) + " offset " + std::to_string(v.offset) + " shape " +
         shape_str(v.shape);
}

// A read of the one element a 0-d write `w` wrote, broadcast over the
// domain (every stride 0): the same value at every point.
bool reads_scalar_written(const View& w, const View& r) {
  if (w.ndim() != 0 || r.buffer != w.buffer || r.offset != w.offset || r.dtype != w.dtype) return false;
  return std::all_of(r.strides.begin(), r.strides.end(), [](int64_t s) { return s == 0; });
}

// The scalar prologue of a group (fusion.h): its 0-d tasks, run once before
// the group's points, and what they did to memory.
struct Prologue {
  bool open = true;  // every task so far is a 0-d map: the group may still widen
  std::unordered_map<const Buffer*, std::vector<View>> writes;
  std::unordered_set<const Buffer*> touched;
};

// Whether a task of the widened group may make access `a` to a buffer the
// prologue touched ("" if so): it may read what the prologue read, and read
// what it wrote only as that very value or elsewhere in the buffer; it writes
// none of them, so the prologue's values hold at every point.
std::string prologue_conflict(const Task& t, const Access& a, const Prologue& pro) {
  if (a.write)
    return "constraint 2 (scalar prologue): " + std::string(t.name) + " writes " + describe(a.view) +
           ", which the group's 0-d operations use";
  auto it = pro.writes.find(a.view.buffer.get());
  if (it != pro.writes.end())
    for (const View& w : it->second)
      if (!reads_scalar_written(w, a.view) && views_overlap(w, a.view))
        return "constraint 2 (scalar prologue): " + std::string(t.name) + " reads " + describe(a.view) +
               " through a view overlapping the group's 0-d result";
  return "";
}

// Returns an empty string if task t may join the group, else the reason.
std::string violates(const Task& t, const Accesses& accesses, const Dims& domain,
                     States& state, const Prologue& pro) {
  if (t.solo) return "contraction " + std::string(t.name) + " runs on its own";
  Dims dom = squeezed_domain(t);
  if (dom != domain)
    return "constraint 1 (domain): " + std::string(t.name) + " iterates over " + shape_str(dom) +
           ", the group over " + shape_str(domain);
  for (const Access& a : accesses) {
    if (pro.touched.count(a.view.buffer.get())) {
      std::string why = prologue_conflict(t, a, pro);
      if (!why.empty()) return why;
      continue;
    }
    const BufferState* found = state.find(a.view.buffer.get());
    if (!found) continue;
    const BufferState& s = *found;
    if (s.reduced)
      return "constraint 4 (reduction): " + std::string(t.name) + " touches " + describe(a.view) +
             ", which the group reduces into";
    if (a.reduce && (!s.reads.empty() || !s.writes.empty()))
      return "constraint 4 (reduction): " + std::string(t.name) + " reduces into " + describe(a.view) +
             ", which the group already accesses";
    for (const View& w : s.writes)
      if (!same_or_disjoint(a.view, w))
        return "constraint 2 (producer-consumer): " + std::string(t.name) + " accesses " + describe(a.view) +
               " through a view overlapping the one the group wrote";
    if (a.write)
      for (const View& r : s.reads)
        if (!same_or_disjoint(a.view, r))
          return "constraint 3 (anti-dependence): " + std::string(t.name) + " writes " + describe(a.view) +
                 " through a view overlapping one the group read";
  }
  return "";
}

bool scalar_map(const Task& t) { return !t.combines() && squeezed_domain(t).empty(); }

// 0-d maps met in the middle of a group over a larger domain (`(a - lo) /
// (hi - lo)`: hi - lo comes after a - lo) may join the group's scalar
// prologue: computed first, before the group's earlier tasks, they compute
// what they did in program order when they touch nothing the group wrote
// and write nothing it read. They join only where the group's next task
// reads their results (a scalar does not ride along in an unrelated kernel).
// Returns the end of the run of such maps starting at task j, or j if the
// run may not join.
int hoistable(const std::vector<Task>& window, const std::vector<bool>& dead, int j, const Dims& domain,
              const States& state) {
  const int n = static_cast<int>(window.size());
  std::unordered_set<const Buffer*> results;
  int k = j;
  for (; k < n && (dead[k] || scalar_map(window[k])); ++k) {
    if (dead[k]) continue;
    if (window[k].solo) return j;
    for (const Access& a : accesses_of(window[k])) {
      const BufferState* it = state.find(a.view.buffer.get());
      if (!it) continue;
      if (a.write || it->reduced || !it->writes.empty()) return j;
    }
    results.insert(window[k].output.buffer.get());
  }
  if (k == n || window[k].solo || squeezed_domain(window[k]) != domain) return j;
  for (const View& v : window[k].inputs)
    if (results.count(v.buffer.get())) return k;
  return j;
}

void add_to_state(const Accesses& accesses, States& state) {
  for (const Access& a : accesses) {
    BufferState& s = state[a.view.buffer.get()];
    if (a.reduce) s.reduced = true;
    else if (a.write) s.writes.push_back(a.view);
    else s.reads.push_back(a.view);
  }
}
void add_to_state(const Task& t, States& state) {
  add_to_state(accesses_of(t), state);
}

}  // namespace

Dims squeezed_domain(const Task& t) {
  Dims d;
  for (int64_t e : t.domain)
    if (e != 1) d.push_back(e);
  return d;
}

namespace {
// The distinct views of memory Python can see that a group reads or writes
// (see partition()): repeated accesses through the same view (x += ...; x *=
// ...) are one value in the kernel, so they count once.
class VisibleViews {
 public:
  // How many views of `t` are not counted yet.
  int added_by(const Task& t) const {
    int n = 0;
    auto counts = [&](const View& v, const View* const* earlier, size_t k) {
      if (!v.buffer->py_live || seen(v)) return false;
      for (size_t e = 0; e < k; ++e)
        if (earlier[e]->same_as(v)) return false;
      return true;
    };
    // (t's own views, each counted once: at most its inputs and output.)
    InlineVector<const View*, 4> mine;
    for (const View& v : t.inputs) {
      if (counts(v, mine.data(), mine.size())) ++n;
      mine.push_back(&v);
    }
    if (counts(t.output, mine.data(), mine.size())) ++n;
    return n;
  }
  void add(const Task& t) {
    auto put = [&](const View& v) {
      if (!v.buffer->py_live) return;
      for (const View* u : views_)
        if (u->same_as(v)) return;
      views_.push_back(&v);
    };
    for (const View& v : t.inputs) put(v);
    put(t.output);
  }
  int size() const { return static_cast<int>(views_.size()); }

 private:
  bool seen(const View& v) const {
    for (const View* u : views_)
      if (u->same_as(v)) return true;
    return false;
  }
  std::vector<const View*> views_;
};
}  // namespace

Partition partition(const std::vector<Task>& window, Policy policy, int max_accesses) {
  Partition p;
  const int n = static_cast<int>(window.size());

  // Dead tasks: outputs no Python array can see and no later live task reads.
  std::vector<bool> dead(n, false);
  {
    std::unordered_set<const Buffer*> needed;
    for (int i = n; i-- > 0;) {
      const Task& t = window[i];
      const Buffer* out = t.output.buffer.get();
      if (!out->py_live && !needed.count(out)) {
        dead[i] = true;
        continue;
      }
      for (const View& v : t.inputs) needed.insert(v.buffer.get());
      // A partial write keeps the rest of the buffer's earlier contents live.
      needed.insert(out);
    }
  }

  int i = 0;
  while (i < n) {
    Group g;
    g.begin = i;
    const Task& first = window[i];
    if (dead[i]) {
      g.end = i + 1;
      g.stop_reason = "dead task (result unreachable)";
    } else if (first.solo || policy == Policy::None) {
      g.end = i + 1;
      g.stop_reason = first.solo ? "contraction runs on its own" : "fusion disabled";
    } else {
      States state;
      Dims domain = squeezed_domain(first);
      Prologue pro;
      // A 0-d map (a scalar of the program: CG's alpha = rr / pAp) may open
      // a group over a larger domain as its prologue (fusion.h).
      pro.open = scalar_map(first);
      auto to_prologue = [&](const Task& t) {
        for (const Access& a : accesses_of(t)) {
          pro.touched.insert(a.view.buffer.get());
          if (a.write) pro.writes[a.view.buffer.get()].push_back(a.view);
        }
      };
      add_to_state(first, state);
      int j = i + 1;
      int live = 1;
      VisibleViews visible;
      visible.add(first);
      for (; j < n; ++j) {
        if (dead[j]) continue;  // skipped tasks neither join nor stop a group
        if (visible.size() + visible.added_by(window[j]) > max_accesses || live >= 8 * max_accesses) {
          g.stop_reason = "kernel size limit (max_kernel_ops)";
          break;
        }
        const Task& t = window[j];
        if (pro.open && !scalar_map(t) && !t.solo && !squeezed_domain(t).empty()) {
          // The group so far becomes the prologue of a group over t's domain.
          for (int k = i; k < j; ++k)
            if (!dead[k]) to_prologue(window[k]);
          // Only for a task that consumes the prologue's results: a scalar
          // does not join an unrelated kernel (which may be a chain's stage).
          const bool consumes = std::any_of(t.inputs.begin(), t.inputs.end(),
                                            [&](const View& v) { return pro.writes.count(v.buffer.get()) > 0; });
          if (consumes) {
            domain = squeezed_domain(t);
          } else {
            pro.touched.clear();
            pro.writes.clear();
          }
        }
        if (!pro.open && !domain.empty() && scalar_map(t)) {
          const int k = hoistable(window, dead, j, domain, state);
          VisibleViews with = visible;
          for (int r = j; r < k; ++r)
            if (!dead[r]) with.add(window[r]);
          if (k > j && with.size() <= max_accesses) {
            for (int r = j; r < k; ++r) {
              if (dead[r]) continue;
              to_prologue(window[r]);
              add_to_state(window[r], state);
              ++live;
            }
            visible = with;
            j = k - 1;
            continue;
          }
        }
        pro.open &= scalar_map(t);
        const Accesses accesses = accesses_of(t);
        std::string why = violates(t, accesses, domain, state, pro);
        if (!why.empty()) {
          g.stop_reason = why;
          break;
        }
        add_to_state(accesses, state);
        ++live;
        visible.add(window[j]);
      }
      if (j == n) g.stop_reason = "end of window";
      g.end = j;
    }
    for (int k = g.begin; k < g.end; ++k)
      if (dead[k]) g.dead.push_back(k);
    p.groups.push_back(std::move(g));
    i = p.groups.back().end;
  }

  // Temporaries: buffers unreachable from Python whose every access lies in
  // one group, and whose every read there follows a write through the same view.
  std::unordered_map<const Buffer*, int> group_of;  // -1: used by several groups
  for (int gi = 0; gi < static_cast<int>(p.groups.size()); ++gi) {
    const Group& g = p.groups[gi];
    for (int k = g.begin; k < g.end; ++k) {
      if (dead[k]) continue;
      for (const Access& a : accesses_of(window[k])) {
        auto [it, fresh] = group_of.emplace(a.view.buffer.get(), gi);
        if (!fresh && it->second != gi) it->second = -1;
      }
    }
  }
  for (int gi = 0; gi < static_cast<int>(p.groups.size()); ++gi) {
    Group& g = p.groups[gi];
    if (g.size() < 2) continue;
    std::unordered_map<const Buffer*, std::vector<View>> written;
    std::unordered_set<const Buffer*> disqualified;
    std::vector<BufferPtr> candidates;
    for (int k = g.begin; k < g.end; ++k) {
      if (dead[k]) continue;
      const Task& t = window[k];
      for (const View& v : t.inputs) {
        const Buffer* b = v.buffer.get();
        auto it = written.find(b);
        View sv = squeeze(v);
        bool forwarded = it != written.end() && std::any_of(it->second.begin(), it->second.end(), [&](const View& w) {
                           return w.same_as(sv) || reads_scalar_written(w, sv);
                         });
        if (!forwarded) disqualified.insert(b);
      }
      const Buffer* ob = t.output.buffer.get();
      if (t.combines()) disqualified.insert(ob);
      if (!written.count(ob)) candidates.push_back(t.output.buffer);
      written[ob].push_back(squeeze(t.output));
    }
    for (const BufferPtr& b : candidates) {
      if (disqualified.count(b.get()) || b->py_live) continue;
      auto it = group_of.find(b.get());
      if (it == group_of.end() || it->second != gi) continue;
      if (b->allocated()) continue;  // already has contents someone may read later
      g.temporaries.push_back(b);
    }
  }
  return p;
}

}  // namespace nf::fusion

// Stage chains: consecutive groups that run as one multi-stage kernel
// (fusion.h, Chain). This file decides what the views allow; the strides of
// the normalized stages and the halos are checked per launch (runtime.h).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/flat_map.h"
#include "core/inline_vector.h"
#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

// A group's buffers and its views of each.
using ByBuffer = FlatMap<const Buffer*, InlineVector<const View*, 2>>;

// What one group does to memory (its live tasks).
struct GroupUse {
  bool ok = false;  // may be a stage at all
  ByBuffer writes, reads;
  // What its scalar prologue alone writes (0-d results that are no
  // temporaries, in buffers no other task of the group writes).
  std::vector<const Buffer*> once;
  bool is_once(const Buffer* b) const { return std::find(once.begin(), once.end(), b) != once.end(); }
};

GroupUse use_of(const std::vector<Task>& window, const Group& g) {
  GroupUse u;
  int points = 0;  // live tasks over more than one point
  bool solo = false;
  for (int k = g.begin; k < g.end; ++k) {
    if (g.is_dead(k)) continue;
    const Task& t = window[k];
    solo |= t.solo;
    // (A 0-d task is the group's scalar prologue, which a stage computes
    // at every tile; what it stores is stored once, before the tiles:
    // MdHom::once_guard.)
    if (squeezed_domain(t).empty()) {
      if (!g.is_temporary(t.output.buffer.get()) && !u.is_once(t.output.buffer.get()))
        u.once.push_back(t.output.buffer.get());
    } else {
      ++points;
    }
    // The chain tiles the outer dimension: nothing may combine along it.
    int outer = 0;
    while (outer < static_cast<int>(t.domain.size()) && t.domain[outer] == 1) ++outer;
    if (outer < static_cast<int>(t.domain.size()) &&
        ((t.kind == Task::Kind::Scan && t.scan_axis == outer) ||
         (t.kind == Task::Kind::Reduce && t.output.strides[outer] == 0)))
      solo = true;
    for (const View& v : t.inputs) u.reads[v.buffer.get()].push_back(&v);
    u.writes[t.output.buffer.get()].push_back(&t.output);
  }
  // (Only buffers the prologue alone writes: rows a later task writes
  // into the same buffer are written by the tiles.)
  for (int k = g.begin; k < g.end; ++k)
    if (!g.is_dead(k) && !squeezed_domain(window[k]).empty())
      u.once.erase(std::remove(u.once.begin(), u.once.end(), window[k].output.buffer.get()), u.once.end());
  u.ok = points > 0 && !solo;
  return u;
}

// The view covers its whole buffer, C-contiguous from the first element
// (dimensions a reduction's output is broadcast along, stride 0, aside).
bool whole(const View& v) {
  if (v.offset != 0) return false;
  int64_t expect = 1;
  for (int k = v.ndim(); k-- > 0;) {
    if (v.shape[k] == 1 || v.strides[k] == 0) continue;
    if (v.strides[k] != expect) return false;
    expect *= v.shape[k];
  }
  return expect * itemsize(v.dtype) == v.buffer->nbytes();
}

template <typename Views>
bool all_same(const Views& vs) {
  for (const View* v : vs)
    if (!v->same_as(*vs.front())) return false;
  return true;
}

// Group g may follow groups [first, g) in a chain: it writes nothing they
// wrote or read (no second writer, no anti-dependence across tiles).
bool may_join(const std::vector<GroupUse>& use, int first, int g) {
  if (!use[g].ok) return false;
  for (const auto& [b, _] : use[g].writes)
    for (int k = first; k < g; ++k)
      if (use[k].writes.count(b) || use[k].reads.count(b)) return false;
  return true;
}

// Group g reads something groups [first, g) wrote.
bool consumes(const std::vector<GroupUse>& use, int first, int g) {
  for (const auto& [b, _] : use[g].reads)
    for (int k = first; k < g; ++k)
      if (use[k].writes.count(b)) return true;
  return false;
}

// The links of chain [first, last], or false if a Full link is read through
// another view than the one that wrote it. `tile_bytes`: what running the
// groups as one chain keeps out of memory -- the links, and the second and
// later reads of inputs several stages read. `groups_of[b]`: the groups of the
// window touching b (first, last).
bool links_of(const std::vector<GroupUse>& use, int first, int last,
              const std::unordered_map<const Buffer*, std::pair<int, int>>& groups_of, std::vector<Chain::Link>& out,
              int64_t& tile_bytes) {
  out.clear();
  tile_bytes = 0;
  for (int p = first; p < last; ++p)
    for (const auto& [b, wviews] : use[p].writes) {
      bool read_later = false;
      for (int c = p + 1; c <= last; ++c) read_later |= use[c].reads.count(b) > 0;
      if (!read_later) continue;
      // A prologue's result is stored before the tiles (passes.h, compose):
      // later stages read it from memory, no link.
      if (use[p].is_once(b)) continue;
      if (!all_same(wviews)) return false;
      const View& w = *wviews.front();
      const auto span = groups_of.at(b);
      Chain::Link l;
      l.buffer = w.buffer;
      const bool hidden = !b->py_live && !b->allocated() && span.first >= first && span.second <= last;
      bool same_view = true;  // every later read is through the writer's view
      for (int c = p + 1; c <= last; ++c) {
        const auto* views = use[c].reads.find(b);
        if (!views) continue;
        for (const View* r : *views) same_view &= r->same_as(w);
      }
      if (hidden && whole(w)) {
        l.tile = true;
      } else if (!same_view) {
        // A Copy link's rows reach the buffer tile by tile, while other
        // tiles may still recompute halo rows from it: its producer must
        // not read it (an in-place `x /= s` feeding a shifted read).
        if (!whole(w) || use[p].reads.count(b)) return false;
        l.tile = l.copy = true;
      }
        // (A Copy link is still written whole, and its tile copy costs what
      // the consumer's re-read would: measured, a top-level blur whose bx
      // stays visible ran 0.83x as one kernel. It saves nothing.)
      if (!l.copy) tile_bytes += b->nbytes();
      out.push_back(std::move(l));
    }
  // Inputs several stages read: read once per tile, from cache, by the later ones.
  std::unordered_map<const Buffer*, int> readers;
  for (int g = first; g <= last; ++g)
    for (const auto& [b, _] : use[g].reads) readers[b]++;
  for (const auto& [b, n] : readers) {
    bool link = false;
    for (const Chain::Link& l : out) link |= l.buffer.get() == b;
    if (n > 1 && !link) tile_bytes += (n - 1) * b->nbytes();
  }
  return true;
}

// The most groups one chain takes. Every stage adds its halo rows to each
// tile and its nest to the kernel, and the search below costs the cube of a
// chain's length per group: a window of a loop's many repetitions (200
// Floyd-Warshall steps, each reading the last) spent 86% of its analysis
// here before the cap.
constexpr int kMaxStages = 16;

}  // namespace

std::vector<Chain> chains(const std::vector<Task>& window, Partition& p, int64_t min_bytes) {
  std::vector<Chain> out;
  const int G = static_cast<int>(p.groups.size());
  if (G < 2) return out;
  std::vector<GroupUse> use;
  use.reserve(G);
  for (const Group& g : p.groups) use.push_back(use_of(window, g));
  // (Made when a chain is first tried: most windows have no candidate.)
  std::unordered_map<const Buffer*, std::pair<int, int>> groups_of;
  auto spans = [&]() -> const std::unordered_map<const Buffer*, std::pair<int, int>>& {
    if (!groups_of.empty()) return groups_of;
    for (int g = 0; g < G; ++g) {
      auto note = [&](const Buffer* b) {
        auto [it, fresh] = groups_of.emplace(b, std::make_pair(g, g));
        if (!fresh) it->second.second = g;
      };
      for (const auto& [b, _] : use[g].reads) note(b);
      for (const auto& [b, _] : use[g].writes) note(b);
    }
    return groups_of;
  };
  int i = 0;
  while (i < G) {
    if (!use[i].ok) {
      ++i;
      continue;
    }
    int j = i;
    while (j + 1 < G && j + 1 - i < kMaxStages && may_join(use, i, j + 1) && consumes(use, i, j + 1)) ++j;
    // The longest valid chain from i (shorter ones drop trailing groups).
    bool made = false;
    for (int last = j; last > i && !made; --last) {
      std::vector<Chain::Link> links;
      int64_t bytes = 0;
      if (!links_of(use, i, last, spans(), links, bytes) || bytes < min_bytes) continue;
      Chain c;
      c.first = i;
      c.last = last;
      c.links = std::move(links);
      for (int g = i; g <= last; ++g) p.groups[g].stage = true;
      out.push_back(std::move(c));
      i = last + 1;
      made = true;
    }
    if (!made) ++i;
  }
  return out;
}

}  // namespace nf::fusion

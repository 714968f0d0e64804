// The tile_buffers pass (passes.h): each TileIn request becomes the tile's
// Local array and the loops copying the input's part into it, and the
// statements after the request in its list read the input from the copy;
// an output's request becomes its accumulation tile, set to the identity,
// the combines after it taking it instead of memory, folded into memory
// after them.
//
// Invariant (caches.cc): the request's tile covers every point the
// statements after it can read the input at (combine into the output at),
// and nothing there writes the input, so each redirected read finds the
// value memory holds (each point combines once, into the tile, and the
// tile once into memory). Reads of other pointers, and reads before the
// request, are untouched.
#include <stdexcept>

#include "lower/lowerer.h"
#include "lower/passes.h"

namespace nf::lower {

namespace {

using namespace detail;

// The Alloc and the copy loops of a request.
void expand(const TileSpec& c, std::vector<StmtP>& out) {
  out.push_back(alloc(c.dtype, c.name, c.heap ? tile_count(c) : lit(c.count), Scope::Local));
  TileWalk w;
  std::vector<StmtP>* body = tile_loops(out, c, c.full_split ? Clip::Split : Clip::Yes, w);
  std::vector<ExP> idx(c.kind.size(), lit(0));
  for (size_t k = 0; k < c.layout.size(); ++k) idx[c.layout[k]] = add(c.base[k], w.off[k]);
  body->push_back(assign(load(c.name, w.index, c.dtype), load(c.ptr, memory_index(c, idx), c.dtype)));
}

// `s` with every read of the request's input read from its tile instead
// (an output's: its combines into memory are combines into the tile).
StmtP redirect(const StmtP& s, const TileSpec& c) {
  const ExP at = tile_index(c, c.point);
  auto rule = [&](const ExP& e) -> ExP {
    if (e->k != Ex::K::Load || e->name != c.ptr) return nullptr;
    return load(c.name, at, e->dtype);
  };
  return copy_stmt(s, [&](const ExP& e) { return rewrite_ex(e, rule); },
                   [&](Stmt& t) {
                     if (t.k == Stmt::K::Assign && t.accumulates && t.target->name == c.name) t.accumulates = nullptr;
                   });
}

// The first memory combine into `ptr` in the statements.
const Stmt* combine_into_ptr(const std::vector<StmtP>& list, size_t from, const std::string& ptr) {
  for (size_t i = from; i < list.size(); ++i) {
    const Stmt& s = *list[i];
    if (s.k == Stmt::K::Assign && s.accumulates && s.target->k == Ex::K::Load && s.target->name == ptr) return &s;
    if (const Stmt* c = combine_into_ptr(s.body, 0, ptr)) return c;
    if (const Stmt* c = combine_into_ptr(s.else_body, 0, ptr)) return c;
  }
  return nullptr;
}

// An output's tile: the Local array set to the identity of `op` (whole).
void open_output(const TileSpec& c, ReduceOp op, std::vector<StmtP>& out) {
  out.push_back(alloc(c.dtype, c.name, c.heap ? tile_count(c) : lit(c.count), Scope::Local));
  TileWalk w;
  std::vector<StmtP>* body = tile_loops(out, c, Clip::No, w);
  body->push_back(assign(load(c.name, w.index, c.dtype), scalar_lit(reduce_identity(op, c.dtype), c.dtype)));
}

// ... and its fold: each element of the tile (clipped to the extents, or
// whole on a full path) combined into the memory element the combine
// `into` updates at that point.
void fold_output(const TileSpec& c, const Stmt& into, std::vector<StmtP>& out) {
  TileWalk w;
  std::vector<StmtP>* body = tile_loops(out, c, c.full_split ? Clip::Split : Clip::Yes, w);
  std::vector<ExP> idx(c.point.size(), lit(0));
  for (size_t k = 0; k < c.layout.size(); ++k) idx[c.layout[k]] = add(c.base[k], w.off[k]);
  // The combine's target with the tile's point put in, folded as build folds.
  auto rule = [&](const ExP& e) -> ExP {
    if (e->k == Ex::K::Var)
      for (size_t d = 0; d < c.point.size(); ++d)
        if (c.point[d]->k == Ex::K::Var && c.point[d]->name == e->name) return idx[d];
    if (e->k == Ex::K::Arith && e->op == '+') return add(e->args[0], e->args[1]);
    if (e->k == Ex::K::Arith && e->op == '-') return sub(e->args[0], e->args[1]);
    if (e->k == Ex::K::Arith && e->op == '*') return mul(e->args[0], e->args[1]);
    return nullptr;
  };
  const ExP at = rewrite_ex(into.target, rule);
  if (into.accumulates->index_at) throw std::logic_error("an arg-reduction into tile '" + c.name + "'");
  combine_into(*body, into.accumulates->op, c.dtype, "better_" + c.name, at, nullptr, load(c.name, w.index, c.dtype),
               nullptr);
}

void place(std::vector<StmtP>& list) {
  std::vector<StmtP> out, folds;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i]->k != Stmt::K::TileIn) {
      out.push_back(list[i]);
      continue;
    }
    const TileSpec& c = *list[i]->tile;
    if (c.output) {
      const Stmt* into = combine_into_ptr(list, i + 1, c.ptr);
      if (!into) throw std::logic_error("output tile '" + c.name + "' with no combine into '" + c.ptr + "' after it");
      open_output(c, into->accumulates->op, out);
      fold_output(c, *into, folds);
    } else {
      expand(c, out);
    }
    for (size_t j = i + 1; j < list.size(); ++j) list[j] = redirect(list[j], c);
  }
  for (StmtP& f : folds) out.push_back(f);
  list = std::move(out);
  for (StmtP& s : list) {
    place(s->body);
    place(s->else_body);
  }
}

}  // namespace

namespace passes {
void tile_buffers(LoopNest& n, const PassContext&) { place(n.body); }
}  // namespace passes

}  // namespace nf::lower

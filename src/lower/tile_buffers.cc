// The tile_buffers pass (passes.h): each TileIn request becomes the tile's
// Local array and the loops copying the input's part into it, and the
// statements after the request in its list read the input from the copy.
//
// Invariant (caches.cc): the request's tile covers every point the
// statements after it can read the input at, and nothing there writes the
// input, so each redirected read finds the value memory holds. Reads of
// other pointers, and reads before the request, are untouched.
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

// `s` with every read of the request's input read from its tile instead.
StmtP redirect(const StmtP& s, const TileSpec& c) {
  const ExP at = tile_index(c, c.point);
  auto rule = [&](const ExP& e) -> ExP {
    if (e->k != Ex::K::Load || e->name != c.ptr) return nullptr;
    return load(c.name, at, e->dtype);
  };
  return copy_stmt(s, [&](const ExP& e) { return rewrite_ex(e, rule); });
}

void place(std::vector<StmtP>& list) {
  std::vector<StmtP> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i]->k != Stmt::K::TileIn) {
      out.push_back(list[i]);
      continue;
    }
    const TileSpec& c = *list[i]->tile;
    for (size_t j = i + 1; j < list.size(); ++j) list[j] = redirect(list[j], c);
    expand(c, out);
  }
  list = std::move(out);
  for (StmtP& s : list) {
    place(s->body);
    place(s->else_body);
  }
}

}  // namespace

namespace passes {
void tile_buffers(LoopNest& n) { place(n.body); }
}  // namespace passes

}  // namespace nf::lower

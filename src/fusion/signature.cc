// Canonical form of a window (see fusion.h). Invariant: every input to
// partition() and mdh::build() that is not a data pointer, a view offset or a
// scalar constant is written into the signature; offsets enter only through
// the relations between views of the same buffer.
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

class Writer {
 public:
  explicit Writer(std::string& s) : s_(s) {}
  template <typename T>
  void put(const T& v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void dims(const Dims& d) {
    put(static_cast<uint8_t>(d.size()));
    s_.append(reinterpret_cast<const char*>(d.data()), d.size() * sizeof(int64_t));
  }

 private:
  std::string& s_;
};

}  // namespace

Signature window_signature(const std::vector<Task>& window, Policy policy) {
  Signature sig;
  std::string& s = sig.bytes;
  s.reserve(window.size() * 160 + 16);
  Writer w(s);
  w.put(static_cast<uint8_t>(policy));
  // Runs at every flush (memo hits included): scratch space is reused, and
  // buffers are numbered by a linear search while there are few of them.
  struct SeenView {
    const View* view;
    int prev;  // the buffer's previous distinct view (-1: none)
  };
  thread_local std::vector<const Buffer*> buffers;
  thread_local std::vector<int> last_view;  // per buffer id: its latest distinct view
  thread_local std::vector<SeenView> views;
  thread_local std::unordered_map<const Buffer*, int> buffer_id;
  buffers.clear();
  last_view.clear();
  views.clear();
  buffer_id.clear();
  constexpr size_t kLinear = 16;
  auto id_of = [&](const Buffer* b) {
    if (buffers.size() <= kLinear) {
      for (size_t k = 0; k < buffers.size(); ++k)
        if (buffers[k] == b) return static_cast<int>(k);
      if (buffers.size() == kLinear)  // from now on: a map
        for (size_t k = 0; k < buffers.size(); ++k) buffer_id.emplace(buffers[k], static_cast<int>(k));
    }
    if (buffers.size() > kLinear || !buffer_id.empty()) {
      auto [it, fresh] = buffer_id.emplace(b, static_cast<int>(buffers.size()));
      if (!fresh) return it->second;
    }
    buffers.push_back(b);
    last_view.push_back(-1);
    return static_cast<int>(buffers.size()) - 1;
  };
  auto view = [&](const View& v) {
    const int id = id_of(v.buffer.get());
    w.put(id);
    w.put(v.dtype);
    w.dims(v.shape);
    w.dims(v.strides);
    // The buffer's distinct views so far, newest first; numbered oldest
    // first (k), as before.
    uint32_t count = 0;
    for (int j = last_view[id]; j >= 0; j = views[j].prev) ++count;
    uint32_t k = count;
    for (int j = last_view[id]; j >= 0; j = views[j].prev) {
      --k;
      if (views[j].view->same_as(v)) {
        w.put('S');
        w.put(k);
        return;
      }
    }
    // Relations to every earlier distinct view, oldest first.
    thread_local std::vector<const View*> order;
    order.clear();
    for (int j = last_view[id]; j >= 0; j = views[j].prev) order.push_back(views[j].view);
    for (size_t q = order.size(); q-- > 0;) w.put(views_overlap(*order[q], v) ? 'O' : 'D');
    w.put('N');
    views.push_back({&v, last_view[id]});
    last_view[id] = static_cast<int>(views.size()) - 1;
  };
  for (const Task& t : window) {
    w.put(t.kind);
    w.put(t.solo);
    w.put(t.scan_axis);
    w.put(reinterpret_cast<uintptr_t>(t.name));
    w.put(t.value_node);
    w.put(t.reduce);
    w.put(t.acc_dtype);
    w.put(t.arg_node);
    w.put(t.init_const);
    w.dims(t.domain);
    w.put(static_cast<uint32_t>(t.expr.nodes.size()));
    for (const ExprNode& n : t.expr.nodes) {  // field by field: no padding bytes
      w.put(n.kind);
      w.put(n.dtype);
      w.put(n.op);
      w.put(n.a);
      w.put(n.b);
      w.put(n.c);
    }
    w.put(static_cast<uint16_t>(t.consts.size()));
    for (const Scalar& c : t.consts) w.put(c.dtype);
    w.put(static_cast<uint16_t>(t.indices.size()));
    for (const IndexFn& f : t.indices) w.dims(f.strides);
    w.put(static_cast<uint16_t>(t.inputs.size()));
    for (const View& v : t.inputs) view(v);
    view(t.output);
  }
  for (const Buffer* b : buffers) {
    w.put(static_cast<uint8_t>((b->py_live ? 0 : 1) | (b->allocated() ? 2 : 0)));
  }
  sig.hash = std::hash<std::string_view>()(s);
  return sig;
}

}  // namespace nf::fusion

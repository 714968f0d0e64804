// Canonical form of a window (see fusion.h). Invariant: every input to
// partition() and mdh::build() that is not a data pointer, a view offset or a
// scalar constant is written into the signature; offsets enter only through
// the relations between views of the same buffer.
#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

// Appends fixed-size fields at a cursor into the string's storage: the
// signature is built at every flush (memo hits included), so a field costs a
// store, not a std::string::append. ensure(n) before writing at most n bytes.
class Writer {
 public:
  explicit Writer(std::string& s) : s_(s) {
    s_.resize(s_.capacity() > 256 ? s_.capacity() : 256);
    p_ = s_.data();
    end_ = p_ + s_.size();
  }
  void ensure(size_t n) {
    if (static_cast<size_t>(end_ - p_) >= n) return;
    const size_t used = p_ - s_.data();
    s_.resize(std::max(2 * s_.size(), used + n));
    p_ = s_.data() + used;
    end_ = s_.data() + s_.size();
  }
  template <typename T>
  void put(const T& v) {
    std::memcpy(p_, &v, sizeof v);
    p_ += sizeof v;
  }
  void dims(const Dims& d) {
    put(static_cast<uint8_t>(d.size()));
    std::memcpy(p_, d.data(), d.size() * sizeof(int64_t));
    p_ += d.size() * sizeof(int64_t);
  }
  // Bytes dims(d) writes.
  static size_t dims_size(const Dims& d) { return 1 + d.size() * sizeof(int64_t); }
  void finish() { s_.resize(p_ - s_.data()); }

 private:
  std::string& s_;
  char* p_;
  char* end_;
};

}  // namespace

Signature window_signature(const std::vector<Task>& window, Policy policy) {
  Signature sig;
  std::string& s = sig.bytes;
  s.reserve(window.size() * 160 + 16);
  Writer w(s);
  w.ensure(1);
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
    w.ensure(sizeof(int) + sizeof(DType) + 2 * Writer::dims_size(v.shape) + 1 + sizeof(uint32_t));
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
    w.ensure(order.size() + 1);
    for (size_t q = order.size(); q-- > 0;) w.put(views_overlap(*order[q], v) ? 'O' : 'D');
    w.put('N');
    views.push_back({&v, last_view[id]});
    last_view[id] = static_cast<int>(views.size()) - 1;
  };
  for (const Task& t : window) {
    // 64: the task's fixed-size fields below (38 bytes) with room to spare.
    w.ensure(64 + Writer::dims_size(t.domain) + t.expr.nodes.size() * 16 + t.consts.size() * sizeof(DType) +
             [&] {
               size_t n = 0;
               for (const IndexFn& f : t.indices) n += Writer::dims_size(f.strides);
               return n;
             }());
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
  w.ensure(buffers.size());
  for (const Buffer* b : buffers) {
    w.put(static_cast<uint8_t>((b->py_live ? 0 : 1) | (b->allocated() ? 2 : 0)));
  }
  w.finish();
  sig.hash = std::hash<std::string_view>()(s);
  return sig;
}

}  // namespace nf::fusion

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
  s.reserve(window.size() * 200);
  Writer w(s);
  w.put(static_cast<uint8_t>(policy));
  std::unordered_map<const Buffer*, int> buffer_id;
  std::vector<const Buffer*> buffers;
  // Distinct views seen so far, per buffer id.
  std::vector<std::vector<const View*>> views_of;
  auto view = [&](const View& v) {
    auto [it, fresh] = buffer_id.emplace(v.buffer.get(), static_cast<int>(buffers.size()));
    if (fresh) {
      buffers.push_back(v.buffer.get());
      views_of.emplace_back();
    }
    const int id = it->second;
    w.put(id);
    w.put(v.dtype);
    w.dims(v.shape);
    w.dims(v.strides);
    std::vector<const View*>& seen = views_of[id];
    for (size_t k = 0; k < seen.size(); ++k) {
      if (seen[k]->same_as(v)) {
        w.put('S');
        w.put(static_cast<uint32_t>(k));
        return;
      }
    }
    for (const View* u : seen) w.put(views_overlap(*u, v) ? 'O' : 'D');
    w.put('N');
    seen.push_back(&v);
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

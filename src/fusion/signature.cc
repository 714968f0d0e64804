// Canonical form of a window (see fusion.h). Invariant: every input to
// partition() and mdh::build() that is not a data pointer, a view offset or a
// scalar constant is written into the signature; offsets enter only through
// the relations between views of the same buffer.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>

#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

// Appends fixed-size fields at a cursor into the string's storage: the
// signature is built at every flush (memo hits included), so a field costs a
// store, not a std::string::append. The string keeps its size between
// signatures (only the first `size` bytes count, see Signature): growing it
// clears the new part once, later signatures reuse it. The cursor is the
// caller's local `char*`, passed by value and returned (a cursor kept in
// memory would be reloaded after every store, since the stores are chars and
// may alias it). ensure(p, n) before writing at most n bytes.
class Writer {
 public:
  explicit Writer(std::string& s) : s_(s) {
    if (s_.size() < 256) s_.resize(256);
    end_ = s_.data() + s_.size();
  }
  char* begin() { return s_.data(); }
  char* ensure(char* p, size_t n) {
    if (static_cast<size_t>(end_ - p) >= n) return p;
    const size_t used = p - s_.data();
    s_.resize(std::max(2 * s_.size(), used + n));
    end_ = s_.data() + s_.size();
    return s_.data() + used;
  }
  size_t size(const char* p) const { return p - s_.data(); }

 private:
  std::string& s_;
  char* end_;
};

template <typename T>
inline char* put(char* p, const T& v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}
inline char* put_dims(char* p, const Dims& d) {
  p = put(p, static_cast<uint8_t>(d.size()));
  for (int64_t e : d) p = put(p, e);  // (a few words: stores, not a call to memcpy)
  return p;
}
// Bytes put_dims(p, d) writes.
inline size_t dims_size(const Dims& d) { return 1 + d.size() * sizeof(int64_t); }

}  // namespace

// Four independent word lanes: a signature is a few kilobytes, and one
// multiply chain over its words would be latency-bound.
size_t Signature::hash_of(const char* p, size_t n) {
  constexpr uint64_t kMul = 0xBF58476D1CE4E5B9ull;
  uint64_t h[4] = {0x9E3779B97F4A7C15ull ^ n, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  auto mix = [](uint64_t& x, uint64_t w) {
    x ^= w;
    x *= kMul;
    x ^= x >> 31;
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    mix(h[0], w[0]);
    mix(h[1], w[1]);
    mix(h[2], w[2]);
    mix(h[3], w[3]);
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(h[0], w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  mix(h[1], tail);
  uint64_t x = h[0];
  mix(x, h[1]);
  mix(x, h[2]);
  mix(x, h[3]);
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  return static_cast<size_t>(x ^ (x >> 32));
}

namespace {
}  // namespace

void window_signature(const std::vector<Task>& window, Policy policy, Signature& out) {
  // Buffers carry this function's scratch (their number and latest views in
  // the signature being built, tagged by an epoch): one signature at a time.
  static std::mutex mu;
  static uint64_t epoch = 0;
  std::lock_guard<std::mutex> lock(mu);
  ++epoch;
  Writer w(out.bytes);
  char* p = w.begin();  // the cursor (256 bytes are there)
  p = put(p, static_cast<uint8_t>(policy));
  auto touch = [&](Buffer* b) {
    if (b->sig_epoch == epoch) return;
    b->sig_epoch = epoch;
    b->sig_id = -1;
    b->sig_last_view = -1;
    b->sig_last_written = -1;
    b->sig_last_output = -1;
  };
  // Partitioning and expressing a window decide on the relation of two views
  // of one buffer only where one of them is written (producer-consumer and
  // anti-dependences; reads that overlap reads are harmless), so relations
  // are recorded for those pairs only: a loop reading many rows and columns
  // of a matrix it writes through one view would otherwise cost the square
  // of its views. First the distinct views the window writes, per buffer.
  struct Output {
    const View* view;
    int prev;  // the buffer's previous distinct output (-1: none)
  };
  static std::vector<Output> outputs;
  outputs.clear();
  auto same = [](const View& a, const View& b) { return a.offset == b.offset && a.dtype == b.dtype && a.same_as(b); };
  for (const Task& t : window) {
    Buffer* b = t.output.buffer.get();
    touch(b);
    bool seen = false;
    for (int j = b->sig_last_output; j >= 0 && !seen; j = outputs[j].prev) seen = same(*outputs[j].view, t.output);
    if (seen) continue;
    outputs.push_back({&t.output, b->sig_last_output});
    b->sig_last_output = static_cast<int>(outputs.size()) - 1;
  }
  auto written = [&](const View& v) {
    for (int j = v.buffer->sig_last_output; j >= 0; j = outputs[j].prev)
      if (same(*outputs[j].view, v)) return true;
    return false;
  };
  struct SeenView {
    const View* view;
    int prev;          // the buffer's previous distinct view (-1: none)
    int prev_written;  // the buffer's previous distinct written view (-1: none)
    uint32_t k;        // its number among the buffer's distinct views, oldest first
    uint32_t wk;       // written views: its number among the written ones, oldest first
  };
  static std::vector<Buffer*> buffers;
  static std::vector<SeenView> views;
  buffers.clear();
  views.clear();
  // Writes v at the cursor p; returns the cursor.
  auto view = [&](char* p, const View& v) -> char* {
    Buffer* b = v.buffer.get();
    touch(b);
    if (b->sig_id < 0) {
      b->sig_id = static_cast<int32_t>(buffers.size());
      buffers.push_back(b);
    }
    p = w.ensure(p, sizeof(int32_t) + sizeof(DType) + 2 * dims_size(v.shape) + 2 + 3 * sizeof(uint32_t));
    p = put(p, b->sig_id);
    p = put(p, v.dtype);
    p = put_dims(p, v.shape);
    p = put_dims(p, v.strides);
    // The same view as an earlier distinct one of this buffer: its number.
    const int last = b->sig_last_view;
    uint32_t same_start = UINT32_MAX;
    for (int j = last; j >= 0; j = views[j].prev) {
      const View& u = *views[j].view;
      if (u.offset != v.offset || u.dtype != v.dtype) continue;  // (same_as needs both)
      if (u.same_as(v)) {
        p = put(p, 'S');
        return put(p, views[j].k);
      }
      if (same_start == UINT32_MAX) same_start = views[j].k;
    }
    // Else: the latest earlier distinct view starting at the same element
    // (mdh::build makes one access of views with the same start and the same
    // strides over the domain, which a shape differing in extent-1 dimensions
    // does not show), whether the window writes it, and its relation to
    // earlier distinct views of the buffer, oldest first: all of them if it
    // is written, else the written ones.
    const bool wr = written(v);
    const uint32_t count = last >= 0 ? views[last].k + 1 : 0;
    p = put(p, 'N');
    p = put(p, same_start);
    p = put(p, static_cast<uint8_t>(wr));
    const int lw = b->sig_last_written;
    const uint32_t nwritten = lw >= 0 ? views[lw].wk + 1 : 0;
    const uint32_t nrel = wr ? count : nwritten;
    p = put(p, nrel);
    p = w.ensure(p, nrel);
    char* rel = p;
    p += nrel;
    if (wr) {
      for (int j = last; j >= 0; j = views[j].prev) rel[views[j].k] = views_overlap(*views[j].view, v) ? 'O' : 'D';
    } else {
      for (int j = lw; j >= 0; j = views[j].prev_written) rel[views[j].wk] = views_overlap(*views[j].view, v) ? 'O' : 'D';
    }
    views.push_back({&v, last, lw, count, wr ? nwritten : 0});
    b->sig_last_view = static_cast<int>(views.size()) - 1;
    if (wr) b->sig_last_written = b->sig_last_view;
    return p;
  };
  for (const Task& t : window) {
    // 64: the task's fixed-size fields below (38 bytes) with room to spare.
    size_t need = 64 + dims_size(t.domain) + t.expr.nodes.size() * 16 + t.consts.size() * sizeof(DType);
    for (const IndexFn& f : t.indices) need += dims_size(f.strides);
    p = w.ensure(p, need);
    p = put(p, t.kind);
    p = put(p, t.solo);
    p = put(p, t.scan_axis);
    p = put(p, reinterpret_cast<uintptr_t>(t.name));
    p = put(p, t.value_node);
    p = put(p, t.reduce);
    p = put(p, t.acc_dtype);
    p = put(p, t.arg_node);
    p = put(p, t.init_const);
    p = put_dims(p, t.domain);
    p = put(p, static_cast<uint32_t>(t.expr.nodes.size()));
    for (const ExprNode& n : t.expr.nodes) {  // field by field: no padding bytes
      p = put(p, n.kind);
      p = put(p, n.dtype);
      p = put(p, n.op);
      p = put(p, n.a);
      p = put(p, n.b);
      p = put(p, n.c);
    }
    p = put(p, static_cast<uint16_t>(t.consts.size()));
    for (const Scalar& c : t.consts) p = put(p, c.dtype);
    p = put(p, static_cast<uint16_t>(t.indices.size()));
    for (const IndexFn& f : t.indices) p = put_dims(p, f.strides);
    p = put(p, static_cast<uint16_t>(t.inputs.size()));
    for (const View& v : t.inputs) p = view(p, v);
    p = view(p, t.output);
  }
  p = w.ensure(p, buffers.size());
  for (const Buffer* b : buffers) p = put(p, static_cast<uint8_t>((b->py_live ? 0 : 1) | (b->allocated() ? 2 : 0)));
  out.size = w.size(p);
  out.hash_ = 0;  // computed when asked for (hash())
}

}  // namespace nf::fusion

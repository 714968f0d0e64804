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
// clears the new part once, later signatures reuse it. ensure(n) before
// writing at most n bytes.
class Writer {
 public:
  explicit Writer(std::string& s) : s_(s) {
    if (s_.size() < 256) s_.resize(256);
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
  // Reserves n bytes at the cursor, to be filled in any order.
  char* skip(size_t n) {
    char* at = p_;
    p_ += n;
    return at;
  }
  size_t size() const { return p_ - s_.data(); }

 private:
  std::string& s_;
  char* p_;
  char* end_;
};

// A word-at-a-time hash (the memo compares the bytes on a hash match).
size_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  auto mix = [&](uint64_t w) {
    h ^= w;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  mix(tail);
  h ^= h >> 29;
  h *= 0x94D049BB133111EBull;
  return static_cast<size_t>(h ^ (h >> 32));
}

}  // namespace

void window_signature(const std::vector<Task>& window, Policy policy, Signature& out) {
  // Buffers carry this function's scratch (their number and latest views in
  // the signature being built, tagged by an epoch): one signature at a time.
  static std::mutex mu;
  static uint64_t epoch = 0;
  std::lock_guard<std::mutex> lock(mu);
  ++epoch;
  Writer w(out.bytes);
  w.ensure(1);
  w.put(static_cast<uint8_t>(policy));
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
  auto view = [&](const View& v) {
    Buffer* b = v.buffer.get();
    touch(b);
    if (b->sig_id < 0) {
      b->sig_id = static_cast<int32_t>(buffers.size());
      buffers.push_back(b);
    }
    w.ensure(sizeof(int32_t) + sizeof(DType) + 2 * Writer::dims_size(v.shape) + 2 + 3 * sizeof(uint32_t));
    w.put(b->sig_id);
    w.put(v.dtype);
    w.dims(v.shape);
    w.dims(v.strides);
    // The same view as an earlier distinct one of this buffer: its number.
    const int last = b->sig_last_view;
    uint32_t same_start = UINT32_MAX;
    for (int j = last; j >= 0; j = views[j].prev) {
      const View& u = *views[j].view;
      if (u.offset != v.offset || u.dtype != v.dtype) continue;  // (same_as needs both)
      if (u.same_as(v)) {
        w.put('S');
        w.put(views[j].k);
        return;
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
    w.put('N');
    w.put(same_start);
    w.put(static_cast<uint8_t>(wr));
    const int lw = b->sig_last_written;
    const uint32_t nwritten = lw >= 0 ? views[lw].wk + 1 : 0;
    const uint32_t nrel = wr ? count : nwritten;
    w.put(nrel);
    w.ensure(nrel);
    char* rel = w.skip(nrel);
    if (wr) {
      for (int j = last; j >= 0; j = views[j].prev) rel[views[j].k] = views_overlap(*views[j].view, v) ? 'O' : 'D';
    } else {
      for (int j = lw; j >= 0; j = views[j].prev_written) rel[views[j].wk] = views_overlap(*views[j].view, v) ? 'O' : 'D';
    }
    views.push_back({&v, last, lw, count, wr ? nwritten : 0});
    b->sig_last_view = static_cast<int>(views.size()) - 1;
    if (wr) b->sig_last_written = b->sig_last_view;
  };
  for (const Task& t : window) {
    // 64: the task's fixed-size fields below (38 bytes) with room to spare.
    size_t need = 64 + Writer::dims_size(t.domain) + t.expr.nodes.size() * 16 + t.consts.size() * sizeof(DType);
    for (const IndexFn& f : t.indices) need += Writer::dims_size(f.strides);
    w.ensure(need);
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
  for (const Buffer* b : buffers) w.put(static_cast<uint8_t>((b->py_live ? 0 : 1) | (b->allocated() ? 2 : 0)));
  out.size = w.size();
  out.hash = hash_bytes(out.bytes.data(), out.size);
}

}  // namespace nf::fusion

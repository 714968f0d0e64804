// Canonical form of a window (see fusion.h). Invariant: every input to
// partition() and mdh::build() that is not a data pointer, a view offset or a
// scalar constant is written into the signature; offsets enter only through
// the relations between views of the same buffer.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>
#include <type_traits>

#include "fusion/fusion.h"

namespace nf::fusion {

namespace {

// The walk over a window's fields is written once (task_fields,
// view_fields) for three cursors: Count (how many bytes they take), Put
// (window_signature writes them) and Match (window_matches compares them
// with a signature's bytes in place). They are values passed in and
// returned, so the cursor stays in a register while a task's fields are
// stored (a cursor kept in memory would be reloaded after every store,
// since the stores are chars and may alias it): a field costs a store, not
// a std::string::append.
struct Count {
  size_t n = 0;
  template <typename T>
  void put(const T&) {
    n += sizeof(T);
  }
  void dims(const Dims& d) { n += 1 + d.size() * sizeof(int64_t); }
  void bytes(const void*, size_t k) { n += k; }
};

struct Put {
  char* p;
  template <typename T>
  void put(const T& v) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  }
  void dims(const Dims& d) {
    put(static_cast<uint8_t>(d.size()));
    for (int64_t e : d) put(e);  // (a few words: stores, not a call to memcpy)
  }
  void bytes(const void* q, size_t k) {
    std::memcpy(p, q, k);
    p += k;
  }
};

// Compares the fields with the bytes at p instead of writing them
// (window_matches); diff is nonzero once one differed. The caller checks
// that the bytes are there (Count).
struct Match {
  const char* p;
  bool diff = false;
  template <typename T>
  void put(const T& v) {
    // Fields are 1, 2, 4 or 8 bytes: a load and a compare (a call to
    // memcmp cost more than writing the field and comparing afterwards).
    using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                                 std::conditional_t<sizeof(T) == 2, uint16_t,
                                                    std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    static_assert(sizeof(U) == sizeof(T));
    U a, b;
    std::memcpy(&a, p, sizeof a);
    std::memcpy(&b, &v, sizeof b);
    diff |= a != b;
    p += sizeof v;
  }
  void dims(const Dims& d) {
    put(static_cast<uint8_t>(d.size()));
    for (int64_t e : d) put(e);
  }
  void bytes(const void* q, size_t k) {
    // (Expression nodes: whole 8-byte words, see ExprNode.)
    const char* r = static_cast<const char*>(q);
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
      uint64_t a, b;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, r + i, 8);
      diff |= a != b;
    }
    if (i < k) diff |= std::memcmp(p + i, r + i, k - i) != 0;
    p += k;
  }
};

// The signature's storage: its string keeps its size between signatures
// (only the first `size` bytes count, see Signature): growing it clears the
// new part once, later signatures reuse it. ensure(n) before writing at
// most n bytes.
class Write {
 public:
  explicit Write(std::string& s) : s_(s) {
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
  Put cursor() const { return Put{p_}; }
  void advance(Put c) { p_ = c.p; }
  char* skip(size_t n) {  // room for n bytes written later
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

// A task's own fields, everything but its views.
template <class C>
inline C task_fields(C c, const Task& t) {
  c.put(t.kind);
  c.put(t.solo);
  c.put(t.scan_axis);
  c.put(reinterpret_cast<uintptr_t>(t.name));
  c.put(t.value_node);
  c.put(t.reduce);
  c.put(t.acc_dtype);
  c.put(t.arg_node);
  c.put(t.init_const);
  c.dims(t.domain);
  c.put(static_cast<uint32_t>(t.expr.nodes.size()));
  c.bytes(t.expr.nodes.data(), t.expr.nodes.size() * sizeof(ExprNode));  // (no padding bytes: see ExprNode)
  c.put(static_cast<uint16_t>(t.consts.size()));
  for (const Scalar& k : t.consts) c.put(k.dtype);
  c.put(static_cast<uint16_t>(t.indices.size()));
  for (const IndexFn& f : t.indices) c.dims(f.strides);
  c.put(static_cast<uint16_t>(t.inputs.size()));
  return c;
}

// A view's fields before its relations: its buffer's number, dtype, extents, strides.
template <class C>
inline C view_fields(C c, int32_t id, const View& v) {
  c.put(id);
  c.put(v.dtype);
  c.dims(v.shape);
  c.dims(v.strides);
  return c;
}

inline size_t view_fields_size(const View& v) { return view_fields(Count{}, 0, v).n; }

// Writes a task's fields at w's cursor.
inline void write_task_fields(Write& w, const Task& t) {
  w.ensure(task_fields(Count{}, t).n);
  w.advance(task_fields(w.cursor(), t));
}

inline void write_view_fields(Write& w, int32_t id, const View& v) {
  w.ensure(view_fields_size(v));
  w.advance(view_fields(w.cursor(), id, v));
}

inline uint8_t buffer_flags(const Buffer* b) { return static_cast<uint8_t>((b->py_live ? 0 : 1) | (b->allocated() ? 2 : 0)); }

// Buffers carry the scratch of both walks (their number and latest views in
// the signature being built or matched, tagged by an epoch): one walk at a time.
std::mutex g_mu;
uint64_t g_epoch = 0;

inline void touch(Buffer* b) {
  if (b->sig_epoch == g_epoch) return;
  b->sig_epoch = g_epoch;
  b->sig_id = -1;
  b->sig_last_view = -1;
  b->sig_last_written = -1;
  b->sig_last_output = -1;
}

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

void window_signature(const std::vector<Task>& window, Policy policy, Signature& out) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_epoch;
  Write w(out.bytes);  // (256 bytes are there)
  out.offsets.clear();
  w.put(static_cast<uint8_t>(policy));
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
    out.offsets.push_back(v.offset * itemsize(v.dtype));
    write_view_fields(w, b->sig_id, v);
    w.ensure(2 + 3 * sizeof(uint32_t));
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
    // (A loop's rows and blocks of one array are translates of each other:
    // their relations cost a few operations each, not the general test.)
    const Translates tv(v);
    auto overlaps = [&](const View& u) {
      return tv.nested && same_geometry(u, v) ? tv.overlap(v.offset - u.offset) : views_overlap(u, v);
    };
    if (wr) {
      for (int j = last; j >= 0; j = views[j].prev) rel[views[j].k] = overlaps(*views[j].view) ? 'O' : 'D';
    } else {
      for (int j = lw; j >= 0; j = views[j].prev_written) rel[views[j].wk] = overlaps(*views[j].view) ? 'O' : 'D';
    }
    views.push_back({&v, last, lw, count, wr ? nwritten : 0});
    b->sig_last_view = static_cast<int>(views.size()) - 1;
    if (wr) b->sig_last_written = b->sig_last_view;
  };
  for (const Task& t : window) {
    write_task_fields(w, t);
    for (const View& v : t.inputs) view(v);
    view(t.output);
  }
  w.ensure(buffers.size());
  for (const Buffer* b : buffers) w.put(buffer_flags(b));
  out.size = w.size();
  out.hash_ = 0;  // computed when asked for (hash())
}

bool window_matches(const std::vector<Task>& window, Policy policy, const Signature& sig) {
  // Views, one per input and output: their number must be sig's.
  size_t count = 0;
  for (const Task& t : window) count += t.inputs.size() + 1;
  if (count != sig.offsets.size()) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_epoch;
  // The window's fields are compared in place with sig's bytes, in the
  // order window_signature writes them (Match: the same walk as Put). A
  // view's relations are not recomputed: they are skipped once the view's
  // buffer is found at its common distance from sig's window. By induction
  // over the walk, equal bytes before a relation put it at the same place as
  // in sig.
  const char* const s = sig.bytes.data();
  const size_t n = sig.size;
  if (n < 1 || static_cast<uint8_t>(s[0]) != static_cast<uint8_t>(policy)) return false;
  size_t at = 1;
  static std::vector<Buffer*> buffers;
  buffers.clear();
  const int64_t* const offsets = sig.offsets.data();
  size_t iv = 0;
  auto view = [&](const View& v) {
    Buffer* b = v.buffer.get();
    touch(b);
    const int64_t delta = v.offset * itemsize(v.dtype) - offsets[iv++];
    if (b->sig_id < 0) {
      b->sig_id = static_cast<int32_t>(buffers.size());
      b->sig_delta = delta;
      buffers.push_back(b);
    } else if (b->sig_delta != delta) {
      return false;
    }
    const size_t need = view_fields_size(v);
    if (at + need > n || view_fields(Match{s + at}, b->sig_id, v).diff) return false;
    at += need;
    // The relations: 'S' and a view number, or 'N', a view number, a flag,
    // a count and that many bytes.
    constexpr size_t kSame = 1 + sizeof(uint32_t);
    constexpr size_t kHead = 1 + sizeof(uint32_t) + 1 + sizeof(uint32_t);
    if (at + kSame > n) return false;
    if (s[at] == 'S') {
      at += kSame;
    } else if (s[at] == 'N') {
      if (at + kHead > n) return false;
      uint32_t nrel;
      std::memcpy(&nrel, s + at + kHead - sizeof(uint32_t), sizeof nrel);
      at += kHead + nrel;
      if (at > n) return false;
    } else {
      return false;
    }
    return true;
  };
  // Compared task by task: a window of another iteration (other shapes)
  // fails at its first differing task.
  for (const Task& t : window) {
    const size_t need = task_fields(Count{}, t).n;
    if (at + need > n || task_fields(Match{s + at}, t).diff) return false;
    at += need;
    for (const View& v : t.inputs)
      if (!view(v)) return false;
    if (!view(t.output)) return false;
  }
  if (at + buffers.size() != n) return false;
  for (const Buffer* b : buffers)
    if (static_cast<uint8_t>(s[at++]) != buffer_flags(b)) return false;
  return true;
}

}  // namespace nf::fusion

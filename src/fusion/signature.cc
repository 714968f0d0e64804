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
  template <typename T>
  void put_at(size_t at, const T& v) {  // at a position already written past
    std::memcpy(s_.data() + at, &v, sizeof v);
  }
  void bytes(const void* q, size_t k) {
    std::memcpy(p_, q, k);
    p_ += k;
  }
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

// The header: the policy, the number of tasks, the structure's size.
constexpr size_t kHeader = 1 + sizeof(uint32_t) + sizeof(uint32_t);

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

void window_signature(const std::vector<Task>& window, std::string_view structure, Policy policy, Signature& out) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_epoch;
  Write w(out.bytes);  // (256 bytes are there)
  out.offsets.clear();
  // The header and the tasks' structure (recorded with them), then per view
  // its buffer's number, then per view its relations, then per buffer its flags.
  size_t nviews = 0;
  for (const Task& t : window) nviews += t.inputs.size() + 1;
  w.ensure(kHeader + structure.size() + nviews * sizeof(int32_t));
  w.put(static_cast<uint8_t>(policy));
  w.put(static_cast<uint32_t>(window.size()));
  w.put(static_cast<uint32_t>(structure.size()));
  w.bytes(structure.data(), structure.size());
  const size_t ids_at = w.size();
  w.skip(nviews * sizeof(int32_t));
  size_t iv = 0;
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
    w.put_at(ids_at + sizeof(int32_t) * iv++, b->sig_id);
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
    for (const View& v : t.inputs) view(v);
    view(t.output);
  }
  w.ensure(buffers.size());
  for (const Buffer* b : buffers) w.put(buffer_flags(b));
  out.size = w.size();
  out.hash_ = 0;  // computed when asked for (hash())
}

bool window_matches(const std::vector<Task>& window, std::string_view structure, Policy policy, const Signature& sig) {
  // The header and the structure: one comparison of bytes. Equal structures
  // have the same number of views, so sig's offsets and buffer numbers are
  // there for every view of the window.
  const char* const s = sig.bytes.data();
  const size_t n = sig.size;
  if (n < kHeader || static_cast<uint8_t>(s[0]) != static_cast<uint8_t>(policy)) return false;
  uint32_t ntasks, nstruct;
  std::memcpy(&ntasks, s + 1, sizeof ntasks);
  std::memcpy(&nstruct, s + 1 + sizeof ntasks, sizeof nstruct);
  if (ntasks != window.size() || nstruct != structure.size() || n < kHeader + nstruct ||
      std::memcmp(s + kHeader, structure.data(), nstruct) != 0)
    return false;
  const size_t nviews = sig.offsets.size();
  if (n < kHeader + nstruct + nviews * sizeof(int32_t)) return false;
  const char* const ids = s + kHeader + nstruct;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_epoch;
  // Where the signature holds the relations between views of one buffer,
  // the window's are not recomputed: each buffer must have sig's number at
  // every view, and all its views must lie at one common distance from
  // those of sig's window -- the relations are invariant under such a shift.
  static std::vector<Buffer*> buffers;
  buffers.clear();
  const int64_t* const offsets = sig.offsets.data();
  size_t iv = 0;
  auto view = [&](const View& v) {
    if (iv >= nviews) return false;
    Buffer* b = v.buffer.get();
    touch(b);
    const int64_t delta = v.offset * itemsize(v.dtype) - offsets[iv];
    int32_t id;
    std::memcpy(&id, ids + sizeof(int32_t) * iv++, sizeof id);
    if (b->sig_id < 0) {
      b->sig_id = static_cast<int32_t>(buffers.size());
      b->sig_delta = delta;
      buffers.push_back(b);
    } else if (b->sig_delta != delta) {
      return false;
    }
    return b->sig_id == id;
  };
  for (const Task& t : window) {
    for (const View& v : t.inputs)
      if (!view(v)) return false;
    if (!view(t.output)) return false;
  }
  if (iv != nviews || n < buffers.size()) return false;
  // The buffers' flags end the signature (in the order of their numbers,
  // which are the window's: every number matched).
  const char* flags = s + n - buffers.size();
  for (const Buffer* b : buffers)
    if (static_cast<uint8_t>(*flags++) != buffer_flags(b)) return false;
  return true;
}

}  // namespace nf::fusion

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "tune/tune.h"

namespace nf::tune {

namespace {
int64_t read_cache_size(int index) {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string s;
  if (!(f >> s) || s.empty()) return 0;
  int64_t v = std::atoll(s.c_str());
  if (s.back() == 'K') v <<= 10;
  if (s.back() == 'M') v <<= 20;
  return v;
}
}  // namespace

const Asm& Asm::host() {
  static const Asm a = [] {
    Asm r;
    r.cores = std::max(1u, std::thread::hardware_concurrency());
    if (int64_t l1 = read_cache_size(0)) r.l1_bytes = l1;
    if (int64_t l2 = read_cache_size(2)) r.l2_bytes = l2;
    return r;
  }();
  return a;
}

bool Schedule::legal(const mdh::MdHom& h) const {
  if (static_cast<int>(tiles.size()) != h.ndim) return false;
  std::vector<int> next(h.ndim, 0);
  for (const LoopSpec& l : order) {
    if (l.dim < 0 || l.dim >= h.ndim) return false;
    if (l.level != next[l.dim]) return false;
    ++next[l.dim];
  }
  for (int d = 0; d < h.ndim; ++d) {
    if (next[d] != levels(d)) return false;
    for (size_t k = 0; k < tiles[d].size(); ++k) {
      if (tiles[d][k] <= 0) return false;
      if (k && tiles[d][k] >= tiles[d][k - 1]) return false;
    }
  }
  return !(parallel && order.empty());
}

std::string Schedule::key() const {
  std::ostringstream os;
  for (size_t d = 0; d < tiles.size(); ++d) {
    os << "t";
    for (int64_t t : tiles[d]) os << t << ".";
  }
  os << "o";
  for (const LoopSpec& l : order) os << l.dim << "." << l.level << ",";
  os << (parallel ? "P" : "S") << parallel_min_work << (vectorize ? "V" : "");
  return os.str();
}

std::string Schedule::to_string() const {
  std::ostringstream os;
  os << "loops ";
  for (size_t i = 0; i < order.size(); ++i) {
    const LoopSpec& l = order[i];
    os << (i ? " > " : "") << "i" << l.dim;
    if (l.level < static_cast<int>(tiles[l.dim].size())) os << "/" << tiles[l.dim][l.level];
    if (i == 0 && parallel) os << "[cores]";
    if (i + 1 == order.size() && vectorize) os << "[simd]";
  }
  return os.str();
}

Schedule default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target) {
  Schedule s;
  s.tiles.assign(h.ndim, {});
  for (int d = 0; d < h.ndim; ++d) s.order.push_back({d, 0});
  if (h.ndim == 0) {
    s.vectorize = false;
    return s;
  }
  // Size of the largest reduction output (elements), for private partials.
  int64_t reduced_out = 0;
  bool arg = false;
  for (const mdh::Output& o : h.outputs) {
    if (!o.reduces) continue;
    int64_t n = 1;
    for (int d = 0; d < h.ndim; ++d)
      if (!h.pointwise(o, d)) n *= b.extent(h, d);
    reduced_out = std::max(reduced_out, n);
    arg |= o.op == ReduceOp::ArgMax || o.op == ReduceOp::ArgMin;
  }
  const int threads = target.cores;
  if (threads > 1) {
    int concat = -1;
    for (int d = 0; d < h.ndim; ++d)
      if (!h.any_pointwise(d) && b.extent(h, d) >= 2 * threads) {
        concat = d;
        break;
      }
    if (concat == 0) {
      s.parallel = true;
    } else if (concat > 0 && (reduced_out == 0 || reduced_out >= 4096)) {
      const int64_t tile = 256;
      if (b.extent(h, concat) > tile) {
        // Tile the concatenated dimension and hoist its tile loop outermost.
        s.tiles[concat] = {tile};
        s.order.clear();
        s.order.push_back({concat, 0});
        for (int d = 0; d < h.ndim; ++d) s.order.push_back({d, d == concat ? 1 : 0});
      } else if (h.any_pointwise(0)) {
        std::rotate(s.order.begin(), s.order.begin() + concat, s.order.begin() + concat + 1);
      }
      s.parallel = true;
    } else if (reduced_out > 0 && reduced_out <= (1 << 16)) {
      s.parallel = true;  // point-wise outer dimension with private partials
    }
  }
  // Arg-reductions combine (value, index) pairs: no SIMD reduction clause.
  s.vectorize = !arg;
  return s;
}

}  // namespace nf::tune

// A GPU's schedules (tune.h: Asm::gpu()): MDH's CUDA abstract system model
// -- a grid of blocks of threads; global memory, a block's shared memory, a
// thread's registers -- and the schedule parameters for its levels:
//
//   grid       the free dimensions' points, a thread each (grid_schedule),
//              in blocks of grid_threads;
//   blocks     a contraction's bm x bn output tiles, a block each, the
//              inputs' k staged bk deep in shared memory, tm x tn outputs a
//              thread in registers (GpuTile; lower/passes.h: gpu_tiles);
//              a reduction's rows, a block of block_threads each
//              (gpu_blocks).
//
// Defaults come from an analytical model (gpu_tile_seconds), so an untuned
// kernel is reasonable; the tuner searches the same parameters
// (gpu_random_schedule, gpu_mutate) by running the candidates on the device.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "tune/tune.h"

namespace nf::tune {

namespace {

using Rng = std::mt19937_64;
bool coin(Rng& r, double p) { return std::uniform_real_distribution<double>(0, 1)(r) < p; }
int pick(Rng& r, int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(r)); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A contraction in blocks of tiles: its extents and the combined type.
struct Contraction {
  int64_t ni = 0, nj = 0, k = 0, batch = 1;
  DType dt = DType::Float64;
};

bool contraction(const mdh::MdHom& h, const Schedule& s, const mdh::Bindings& b, Contraction* c) {
  if (!block_tiles_pay(h, s, b)) return false;
  const int di = s.order[s.grid - 2].dim, dj = s.order[s.grid - 1].dim;
  c->ni = b.extent(h, di);
  c->nj = b.extent(h, dj);
  c->batch = 1;
  for (int q = 0; q + 2 < s.grid; ++q) c->batch *= std::max<int64_t>(b.extent(h, s.order[q].dim), 1);
  c->k = 1;
  for (int d = 0; d < h.ndim; ++d)
    if (h.any_pointwise(d)) c->k = b.extent(h, d);
  for (const mdh::Output& o : h.outputs)
    if (o.reduces) c->dt = h.accesses[o.access].dtype;
  return true;
}

// A reduction's rows (the grid's points) and their length (the combined
// extents), or false where nothing is combined along a grid.
bool reduction_rows(const mdh::MdHom& h, const Schedule& s, const mdh::Bindings& b, int64_t* rows, int64_t* length) {
  if (s.grid == 0) return false;
  *rows = 1;
  *length = 1;
  bool combined = false;
  for (int d = 0; d < h.ndim; ++d) {
    const int64_t n = b.extent(h, d);
    if (h.any_pointwise(d)) {
      combined = true;
      *length *= std::max<int64_t>(n, 1);
    }
  }
  for (int q = 0; q < s.grid; ++q) *rows *= std::max<int64_t>(b.extent(h, s.order[q].dim), 1);
  return combined;
}

bool fits(const GpuTile& t, DType dt, const Asm& a) {
  return t.why_illegal().empty() && t.shared_bytes(itemsize(dt)) <= a.shared_per_block &&
         t.threads() <= a.max_block_threads && t.registers(itemsize(dt)) <= a.max_thread_regs;
}

}  // namespace

const std::vector<GpuTile>& gpu_tile_space() {
  static const std::vector<GpuTile> space = [] {
    std::vector<GpuTile> out;
    for (int64_t bm : {16, 32, 64, 128})
      for (int64_t bn : {16, 32, 64, 128})
        for (int64_t bk : {8, 16, 32})
          for (int64_t tm : {1, 2, 4, 8})
            for (int64_t tn : {1, 2, 4, 8}) {
              const GpuTile t{bm, bn, bk, tm, tn};
              if (t.why_illegal().empty() && t.threads() >= 64 && t.threads() <= 256) out.push_back(t);
            }
    return out;
  }();
  return space;
}

double gpu_tile_seconds(const GpuTile& t, int64_t ni, int64_t nj, int64_t k, int64_t batch, DType dt,
                        const Asm& a) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!a.gpu() || !fits(t, dt, a) || ni <= 0 || nj <= 0) return kInf;
  const int64_t item = itemsize(dt);
  const int64_t words = std::max<int64_t>(item / 4, 1);  // 32-bit registers a value takes
  const int64_t regs = t.registers(item);  // (beyond the thread's limit it spills)
  if (regs > a.max_thread_regs) return kInf;
  const int64_t threads = t.threads();
  const int64_t resident = std::min({a.max_sm_threads / threads, a.regs_per_sm / (regs * threads),
                                     a.shared_per_sm / t.shared_bytes(item), int64_t(32)});
  if (resident < 1) return kInf;
  // Per multiprocessor and clock: multiply-adds (4 x 32 lanes of float32,
  // half for float64 and int32, a 64-bit integer product several
  // instructions), 32 words of shared memory, about 40 bytes from L2.
  const bool integer = !is_inexact(dt);
  const double lanes = integer ? (item == 8 ? 16 : 64) : (item == 8 ? 64 : 128);
  constexpr double kSharedWords = 32, kL2Bytes = 40, kStepCycles = 120, kClock = 1.7e9;
  const int64_t blocks = ceil_div(ni, t.bm) * ceil_div(nj, t.bn) * std::max<int64_t>(batch, 1);
  const int64_t per_sm = ceil_div(blocks, a.sms);           // on the busiest multiprocessor
  const int64_t rounds = ceil_div(per_sm, resident);
  const double together = static_cast<double>(std::min(per_sm, resident));
  // A multiprocessor needs about 8 warps to hide latency.
  const double busy = std::min(1.0, together * threads / 32.0 / 8.0);
  const double math = together * t.bm * t.bn / lanes;
  const double shared = together * threads * (t.tm + t.tn) * words / kSharedWords;
  const double global = together * (t.bm + t.bn) * item / kL2Bytes;
  const double per_k = std::max({math, shared, global}) / busy;
  const int64_t kk = std::max<int64_t>(k, 1);
  const double cycles = rounds * (kk * per_k + ceil_div(kk, t.bk) * kStepCycles);
  return cycles / kClock;
}

GpuTile gpu_tile_model(int64_t ni, int64_t nj, int64_t k, int64_t batch, DType dt, const Asm& a) {
  GpuTile best;
  double best_s = gpu_tile_seconds(best, ni, nj, k, batch, dt, a);
  for (const GpuTile& t : gpu_tile_space()) {
    const double s = gpu_tile_seconds(t, ni, nj, k, batch, dt, a);
    // (Ties to the larger tile: fewer blocks read the operands again.)
    if (s < best_s * 0.999 || (s <= best_s * 1.001 && t.bm * t.bn > best.bm * best.bn)) {
      best = t;
      best_s = s;
    }
  }
  return best;
}

int64_t gpu_block_threads_model(int64_t blocks, int64_t length, const Asm& a) {
  int64_t t = 128;
  if (!a.gpu()) return t;
  // Rows too few for 16 blocks per multiprocessor: wider blocks, while a
  // thread still has 8 points of its row.
  while (t < std::min<int64_t>(a.max_block_threads, 512) && blocks * t < a.sms * a.max_sm_threads &&
         length >= 2 * t * 8)
    t *= 2;
  return t;
}

Schedule gpu_default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& a) {
  Schedule s = grid_schedule(h, default_schedule(h, b, Asm::host(), /*routines=*/false));
  Contraction c;
  if (contraction(h, s, b, &c)) {
    s.block_tiles = true;
    s.tile = gpu_tile_model(c.ni, c.nj, c.k, c.batch, c.dt, a);
    if (!fits(s.tile, c.dt, a)) s.block_tiles = false;
  }
  int64_t rows = 0, length = 0;
  if (!s.block_tiles && reduction_rows(h, s, b, &rows, &length)) {
    const int64_t t = gpu_block_threads_model(rows, length, a);
    if (t != 128) s.block_threads = t;  // (128: the target's own)
  }
  return s;
}

Schedule gpu_random_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& a, uint64_t seed) {
  Rng r(seed);
  // The grid form of the model's host schedule or of a random one (other
  // orders of the combined loops below the grid).
  Schedule s = coin(r, 0.5) ? grid_schedule(h, default_schedule(h, b, Asm::host(), false))
                            : grid_schedule(h, random_schedule(h, b, Asm::host(), r(), false));
  Contraction c;
  if (contraction(h, s, b, &c) && coin(r, 0.85)) {
    std::vector<GpuTile> ok;
    for (const GpuTile& t : gpu_tile_space())
      if (fits(t, c.dt, a)) ok.push_back(t);
    if (!ok.empty()) {
      s.block_tiles = true;
      s.tile = ok[pick(r, static_cast<int>(ok.size()))];
    }
  }
  int64_t rows = 0, length = 0;
  if (!s.block_tiles && reduction_rows(h, s, b, &rows, &length) && coin(r, 0.7))
    s.block_threads = int64_t(32) << pick(r, 5);  // 32 .. 512
  // (Not 1024: 64 registers a thread, where a long body spills.)
  if (s.grid > 0 && coin(r, 0.5)) s.grid_threads = int64_t(64) << pick(r, 4);  // 64 .. 512
  if (!s.why_illegal(h).empty() || !s.why_unsafe(h, b, a).empty()) return gpu_default_schedule(h, b, a);
  return s;
}

Schedule gpu_mutate(const Schedule& from, const mdh::MdHom& h, const mdh::Bindings& b, const Asm& a, uint64_t seed) {
  Rng r(seed);
  Contraction c;
  const bool tiles = contraction(h, from, b, &c);
  int64_t rows = 0, length = 0;
  const bool reduces = reduction_rows(h, from, b, &rows, &length);
  for (int attempt = 0; attempt < 16; ++attempt) {
    Schedule s = from;
    switch (pick(r, 4)) {
      case 0:  // a tile size doubled or halved
        if (tiles && s.block_tiles) {
          int64_t* f[] = {&s.tile.bm, &s.tile.bn, &s.tile.bk, &s.tile.tm, &s.tile.tn};
          int64_t& v = *f[pick(r, 5)];
          v = coin(r, 0.5) ? v * 2 : std::max<int64_t>(v / 2, 1);
        }
        break;
      case 1:  // blocks of tiles or a thread per output
        if (tiles) s.block_tiles = !s.block_tiles;
        break;
      case 2:  // a grid block's threads doubled or halved
        if (s.grid > 0) {
          const int64_t t = s.grid_threads ? s.grid_threads : 256;
          s.grid_threads = coin(r, 0.5) ? std::min<int64_t>(t * 2, 512) : std::max<int64_t>(t / 2, 32);
        }
        break;
      default:  // a reduction block's threads doubled or halved
        if (reduces) {
          const int64_t t = s.block_threads ? s.block_threads : 128;
          s.block_threads = coin(r, 0.5) ? std::min<int64_t>(t * 2, 512) : std::max<int64_t>(t / 2, 32);
        }
    }
    if (s.key() != from.key() && s.why_illegal(h).empty() && s.why_unsafe(h, b, a).empty()) return s;
  }
  return gpu_random_schedule(h, b, a, r());
}

}  // namespace nf::tune

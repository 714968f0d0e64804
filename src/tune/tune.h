// Schedules: how an MdHom is computed on a target (MDH's low-level
// expression). For the CPU abstract system model (cores | caches | SIMD lanes):
//
//   tiles[d]   - nested tile sizes of dimension d, outer to inner (MDH's #PRT,
//                as sizes rather than counts; extents need not divide: the
//                lowering clips the last tile);
//   order      - the loops (d, level) from outer to inner (MDH's D1=S1=R1);
//                level l < tiles[d].size() steps over tiles of size
//                tiles[d][l], level tiles[d].size() steps over points;
//   parallel   - order[0] is distributed over the cores (MDH's D2: which
//                layer is bound to COR); when its dimension is combined
//                point-wise, each thread keeps private partial results that
//                are combined afterwards;
//   vectorize  - the innermost loop runs on SIMD lanes.
//   caches     - an access copied into a local tile buffer (MDH's memory
//                regions D3/S3/R3, with a layout permutation D4/S4): an input
//                is copied in at the start of loop `pos`'s body and read from
//                the copy below it; a reduction output accumulates into a
//                local tile (registers, once unrolled) and is combined into
//                memory when the body ends; a dimension may be packed into
//                blocks of its next tile size (BLIS micro-panels);
//   unroll     - loops fully unrolled (their trip count is the parent tile,
//                so the lowering emits a full-tile path and a remainder path);
//   contract   - allow fused multiply-add (only for kernels without
//                elementwise outputs: reductions are already reassociated);
//   routine    - run the group with a library routine instead of generated
//                code (Fern: a black box is one more implementation choice).
// Every schedule that satisfies Schedule::legal computes the same result
// (lowering is correct by construction).
#pragma once

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mdh/mdh.h"

namespace nf::tune {

// The abstract system model of the machine we compile for.
struct Asm {
  int cores = 1;
  int64_t l1_bytes = 32 << 10;
  int64_t l2_bytes = 512 << 10;
  int simd_bytes = 32;
  // The widest vectors kernels may use (Schedule::wide): 64 bytes on CPUs
  // with AVX-512 (NUMFUSE_VECTOR_BITS=256 keeps 32).
  int wide_simd_bytes = 32;
  // A GPU's (MDH's CUDA ASM: grid | blocks | threads, memory global |
  // shared | registers); sms = 0 on the host. Schedules for it are a
  // grid's (Schedule::grid) with its device parameters (GpuTile,
  // block_threads) chosen by a model (gpu_model.cc) or by the tuner.
  int sms = 0;                        // multiprocessors
  int64_t max_block_threads = 0;      // threads in a block
  int64_t max_sm_threads = 0;         // resident threads per multiprocessor
  int64_t shared_per_block = 0;       // bytes a block may share (without opting in to more)
  int64_t shared_per_sm = 0;
  int64_t regs_per_sm = 0;            // 32-bit registers
  int64_t max_thread_regs = 0;
  std::string gpu_name;               // (device_id)
  bool gpu() const { return sms > 0; }
  static const Asm& host();
  // A GPU of `sms` multiprocessors of the sm_80/sm_90 kind (an H100/H200
  // has 132): the emulated device's model, and the CUDA device's with its
  // own count and name.
  static Asm cuda(int sms, const std::string& name);
};

struct LoopSpec {
  int dim = 0;
  int level = 0;
  bool operator==(const LoopSpec& o) const { return dim == o.dim && level == o.level; }
};

struct Cache {
  int access = 0;               // index into MdHom::accesses
  int pos = -1;                 // lives in the body of order[pos]; -1: the whole kernel
  std::vector<int> layout;      // the access's dimensions, outer to inner, in the local tile
  // Packed dimensions (BLIS micro-panels): dimension d's coordinate in the
  // tile is split by the tile size of d's first loop below the cache into a
  // block number, outermost in the layout (in the order listed), and an
  // offset inside the block, which keeps d's place in `layout`. A register
  // micro-kernel then reads each panel contiguously.
  std::vector<int> pack;
};

enum class Routine : uint8_t { None, Blas };

// A contraction's tiles on a GPU (Schedule::block_tiles; lower/passes.h:
// gpu_tiles): a block per bm x bn tile of the outputs, the inputs' k staged
// bk deep in shared memory, each of its (bm / tm) (bn / tn) threads
// combining tm x tn outputs in registers.
struct GpuTile {
  int64_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  int64_t threads() const { return (bm / tm) * (bn / tn); }
  // Shared memory for tiles of `item`-byte elements (rows padded by one).
  int64_t shared_bytes(int64_t item) const { return (bm + bn + 2) * bk * item; }
  // 32-bit registers a thread needs, about: its accumulators, a row and a
  // column of operands, and 32 for addresses and counters.
  int64_t registers(int64_t item) const { return (tm * tn + tm + tn) * std::max<int64_t>(item / 4, 1) + 32; }
  // "" where the shape is one gpu_tiles makes, else why not.
  std::string why_illegal() const;
  std::string key() const;  // "64x64x16x4x4"
  bool operator==(const GpuTile& o) const {
    return bm == o.bm && bn == o.bn && bk == o.bk && tm == o.tm && tn == o.tn;
  }
};

struct Schedule {
  std::vector<std::vector<int64_t>> tiles;
  std::vector<LoopSpec> order;
  bool parallel = false;
  int64_t parallel_min_work = 1 << 15;
  bool vectorize = true;
  std::vector<Cache> caches;
  std::vector<int> unroll;      // positions in `order`
  bool contract = false;
  // The widest vectors the target has (Asm::wide_simd_bytes: 512-bit with
  // AVX-512) instead of 256-bit ones. Twice the lanes for long arithmetic
  // and vector-math chains, but on Intel CPUs 512-bit arithmetic lowers the
  // core's clock for about a millisecond after it runs, which slows the
  // Python code between small kernels (measured: recording 10-15% slower):
  // worth it only for kernels with much work (default_schedule).
  bool wide = false;
  // The first `grid` loops of the order (0: none) are one iteration space,
  // each of its points a share of its own (a GPU thread per point; the
  // target's threads take consecutive points, so the last of these loops,
  // the layout's innermost, moves fastest across them): loops at level 0
  // (over a tiled dimension's tiles) of dimensions that no output combines
  // (reduces or scans), so nothing is combined across shares. Needs `parallel`; otherwise the
  // outermost loop is cut into MaxThreads shares (the CPU's form).
  int grid = 0;
  // (A grid's schedule, block_tiles_pay) the grid's two innermost loops
  // run in blocks of tiles: a block of threads per tile of their points,
  // what the combined loops read along each of them staged in the block's
  // shared memory (lower/passes.h: gpu_tiles, for a contraction).
  bool block_tiles = false;
  GpuTile tile;  // (block_tiles) their sizes
  // The threads of a block that shares a reduction's work (gpu_blocks;
  // a power of two; 0: the target's, lower::Caps::block_threads).
  int64_t block_threads = 0;
  // The blocks of a grid whose threads take a point each (a power of two;
  // 0: 256). Only the launch differs: the kernel strides over the grid.
  int64_t grid_threads = 0;
  Routine routine = Routine::None;

  int levels(int d) const { return static_cast<int>(tiles[d].size()) + 1; }
  // Loops of each dimension appear once per level, levels in order; tile
  // sizes positive and decreasing.
  bool legal(const mdh::MdHom& h) const;
  // Why legal() fails ("" when it holds).
  std::string why_illegal(const mdh::MdHom& h) const;
  // Why a legal schedule should still not run with these sizes on this
  // machine ("" when it may): tile sizes beyond the dimension's size class,
  // tile buffers beyond what a kernel may allocate, thresholds out of
  // range. Checked for every schedule read from outside (the store).
  std::string why_unsafe(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target) const;
  // A complete text form (the kernel cache and the schedule store key on
  // it); parse() reads it back (std::invalid_argument if malformed; the
  // result still has to pass legal()).
  std::string key() const;
  static Schedule parse(const std::string& text);
  std::string to_string() const;
};

// A good schedule without search (on a GPU, target.gpu():
// gpu_default_schedule): parallelize the outermost concatenated
// dimension (tiling it out of inner point-wise loops if needed), or a
// point-wise one with private partials when the outputs are small;
// vectorize the innermost loop.
// A floating-point GEMM/GEMV/DOT goes to the BLAS routine when
// `routines` allows it.
Schedule default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, bool routines = true);

// A GPU's loops (gpu_default_schedule, gpu_random_schedule), made from a
// host's schedule: the grid is the device's parallelism. The dimensions no output combines (reduces or
// scans), untiled, become the grid loops (Schedule::grid), in the
// chosen order of their point loops (the layout's innermost last, so
// neighbouring threads take neighbouring elements); a thread per point of
// them runs the combined dimensions' loops below in the chosen order: each
// output's points combine in the order the serial loops do (x.sum(axis=0):
// a thread per column adding the rows in order, as NumPy does), with no
// partial results across threads. A kernel that combines along every
// dimension (a full reduction) keeps the chosen loops, the outermost cut
// into shares combined after the loop (lower/passes.h: partials). No tile
// buffers, unrolled loops or SIMD lanes: a thread's private arrays live in
// local memory. Where that is illegal (a 0-d kernel, a scan or an ordered
// product along the outer loop), the chosen schedule as it is: one thread.
Schedule grid_schedule(const mdh::MdHom& h, const Schedule& chosen);

// Whether a grid schedule's two innermost grid loops (i, j) should run in
// blocks of tiles (Schedule::block_tiles) at these extents: a contraction
// -- one combined dimension k, some input read along k and one of i, j,
// none along k and both -- with both at least 16 points (a tile's row of
// threads has work) and k at least one and at most 16 times the larger of
// the two (a longer k with few outputs leaves the device idle: a block per
// output, gpu_blocks, reads it faster).
bool block_tiles_pay(const mdh::MdHom& h, const Schedule& s, const mdh::Bindings& b);

// The GPU schedule of h without search (target.gpu()): the grid form of the
// host's default schedule (grid_schedule), in blocks of tiles where they
// pay, the tiles and the reduction blocks' threads from the model below.
Schedule gpu_default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target);
// The model (gpu_model.cc): the estimated seconds of a contraction of
// ni x nj outputs over k (times `batch`) in tiles t of values of type `dt`
// on the GPU: the waves of resident blocks (limited by threads, registers
// and shared memory per multiprocessor) times a block's time, the larger of
// its arithmetic, its shared-memory reads (tm + tn per thread per k for
// tm tn multiply-adds) and its global reads ((bm + bn) k values); infinite
// where t cannot run there. gpu_tile_model picks the cheapest legal tile.
double gpu_tile_seconds(const GpuTile& t, int64_t ni, int64_t nj, int64_t k, int64_t batch, DType dt,
                        const Asm& target);
GpuTile gpu_tile_model(int64_t ni, int64_t nj, int64_t k, int64_t batch, DType dt, const Asm& target);
// Every tile shape the schedule space holds (legal, at most 1024 threads).
const std::vector<GpuTile>& gpu_tile_space();
// The reduction blocks' threads (Schedule::block_threads) for `blocks`
// blocks (rows) of `length` points each: 128 (16 resident blocks per
// multiprocessor) unless there are too few rows to fill the device, then
// more threads per row, as many as a row has points for.
int64_t gpu_block_threads_model(int64_t blocks, int64_t length, const Asm& target);

// ---------------------------------------------------------------------------
// The schedule space (space.cc).

// A random legal schedule for h (deterministic in `seed`); with `routines`,
// the library routine is one of the outcomes where it applies.
Schedule random_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, uint64_t seed,
                         bool routines = true);
// A legal neighbour of `from`: one tile resized, added or dropped, two loops
// swapped, a cache added/moved/dropped, an unroll, the parallel / vector /
// FMA choice toggled. Never unsafe for `b` (Schedule::why_unsafe), so the
// schedule store accepts whatever a search over mutations finds.
Schedule mutate(const Schedule& from, const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target,
                uint64_t seed, bool routines = true);
// (target.gpu(): the three above are these -- the grid's device parameters,
// block tiles and reduction blocks, drawn or changed; gpu_model.cc.)
Schedule gpu_random_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, uint64_t seed);
Schedule gpu_mutate(const Schedule& from, const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target,
                    uint64_t seed);
// Drops the caches, packings and unrolls that make s illegal; false if it
// stays illegal.
bool repair(Schedule& s, const mdh::MdHom& h);

// ---------------------------------------------------------------------------
// The auto-tuner's search (search.cc), ATF-style: the default schedule (and
// the library routine, where it applies) as baselines, then candidates from
// three techniques -- uniform random sampling, mutations of the best so far,
// and a simulated-annealing walk -- chosen by a UCB1 bandit that credits a
// technique when its candidate improves on the best. Bounded by wall-clock
// seconds and/or a number of evaluations.

struct SearchProgress {
  int evals = 0, max_evals = 0;
  double elapsed_s = 0, budget_s = 0;
  double default_s = 0, best_s = 0;
};

struct SearchOptions {
  double budget_s = 10;  // wall clock, compile time included
  int max_evals = 0;     // 0: no limit
  bool routines = true;  // the library routine is a candidate
  // Schedules measured right after the baselines (a warm start: the stored
  // winner of an earlier search, so tuning again resumes rather than restarts).
  std::vector<Schedule> starts;
  // After the search, the winner and the default are measured again this
  // many times each; the winner must beat the default by `confirm_margin`.
  int confirm_rounds = 2;
  double confirm_margin = 0.02;
  uint64_t seed = 1;
  std::function<void(const SearchProgress&)> progress;
  const std::atomic<bool>* stop = nullptr;  // checked between candidates
};

struct SearchResult {
  Schedule best, initial;
  double best_s = 0, default_s = 0;  // run time of one execution
  int evals = 0, failures = 0;
  double elapsed_s = 0;
  std::vector<std::string> errors;   // the first few failures (compile errors, wrong results)
  std::vector<int> pulls, wins;      // per technique: random, mutate-best, anneal
};

// Seconds one run of h under schedule s takes (the caller compiles, runs and
// checks the result; it throws if the schedule fails or computes something
// else). `best_s` lets it stop timing a hopeless candidate early.
using Evaluate = std::function<double(const Schedule& s, double best_s)>;

SearchResult search(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, const Evaluate& eval,
                    const SearchOptions& opt);

// ---------------------------------------------------------------------------
// The schedule store (store.cc): tuned schedules persisted in a text file,
// keyed by (device, MdHom key, size class). Any process reads what others
// wrote (the file is re-read when it changes); writers merge under an
// exclusive lock and replace the file atomically. An entry is only a hint:
// a schedule that is not legal for the MdHom is ignored, so a stale or
// corrupt entry can cost speed but never correctness.

// Extents rounded to powers of two: schedules tuned for one size serve the
// sizes near it.
std::string size_class(const mdh::MdHom& h, const mdh::Bindings& b);
// The machine a schedule was tuned on: CPU model and thread count.
std::string device_id(const Asm& target);

struct StoreEntry {
  Schedule schedule;
  double best_s = 0, default_s = 0;
  int evals = 0;
};

class ScheduleStore {
 public:
  static ScheduleStore& instance();
  // The file to use ("" turns the store off).
  void configure(const std::string& path);
  std::string path() const;
  // The stored schedule for h, if there is one that is legal for h and safe
  // for these bindings on this machine (Schedule::why_unsafe); a doubtful
  // entry is ignored, with a warning (take_warnings).
  // (`target`: the machine the schedule would run on; the host's by default.)
  bool find(const std::string& device, const mdh::MdHom& h, const mdh::Bindings& b, const std::string& size_class,
            StoreEntry* out, const Asm& target = Asm::host());
  std::vector<std::string> take_warnings();
  // Returns false if the file could not be written (the entry is still
  // kept in memory for this process).
  bool put(const std::string& device, const mdh::MdHom& h, const std::string& size_class, const StoreEntry& e);
  // A multi-stage kernel's launch choice (pipeline: LaunchTuning, the
  // candidate its online tuning chose), keyed by the chain kernel's key
  // instead of an MdHom's: later plans and processes start with it. Stored
  // in the same file (its schedule field "launch=<candidate>"); a launch
  // entry never makes plans stale (it is read at launch). *ours (if given)
  // tells whether this process wrote the entry (its own tuning, found again
  // by a plan rebuilt after the memo was cleared) or found it written by an
  // earlier process.
  bool find_launch(const std::string& device, const std::string& chain_key, const std::string& size_class,
                   int* choice, bool* ours = nullptr);
  bool put_launch(const std::string& device, const std::string& chain_key, const std::string& size_class,
                  int choice, double best_s, double default_s, int evals);
  size_t size();
  void clear();  // forgets every entry, in memory and on disk
  // Changes whenever the entries change (a put here, or another process's
  // write noticed on reload): plans built on older entries are stale.
  uint64_t generation() const { return generation_.load(); }
  // Changes when every entry is forgotten (clear, configure): what was
  // learned from the old entries, or written to them, no longer holds.
  uint64_t resets() const { return resets_.load(); }

 private:
  ScheduleStore() = default;
  void reload_if_changed();  // caller holds mu_
  // Writes entry `key` = `value` here and merged into the file (caller holds mu_).
  bool put_line(const std::string& key, const std::string& value);
  mutable std::mutex mu_;
  std::string path_;
  std::unordered_map<std::string, std::string> entries_;  // "device\thash\tclass" -> rest of the line
  std::unordered_set<std::string> rejected_;               // entries already warned about
  std::unordered_set<std::string> own_launches_;           // launch entries this process put
  std::vector<std::string> warnings_;
  std::atomic<bool> has_warnings_{false};  // warnings_ is not empty (set under mu_)
  int64_t mtime_ns_ = -1, file_size_ = -1;
  bool checked_ = false;  // the file was looked at, at last_check_ (reload_if_changed)
  std::chrono::steady_clock::time_point last_check_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> resets_{0};
};

// The computation classes the default heuristic and the tuner distinguish.
enum class Shape : uint8_t { Map, Reduction, Contraction, Stencil };
Shape classify(const mdh::MdHom& h);
// For a contraction C(i,j) = sum_k A(i,k) B(k,j) in floating point: whether
// it is a (batched) GEMM/GEMV/DOT a BLAS routine can run.
bool blas_compatible(const mdh::MdHom& h);

}  // namespace nf::tune

// Running compiled kernels: bind buffers (allocating them on first write),
// pass parameters, call. The caller has released the GIL.
#pragma once

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <string>

#include "core/device.h"
#include "jit/jit.h"
#include "lower/lower.h"
#include "mdh/mdh.h"

namespace nf::runtime {

// Calls `fn` on the bindings of `h`. Buffers of accesses the kernel touches
// are allocated here if they are not yet; untouched ones get nullptr.
void run_kernel(jit::KernelFn fn, const mdh::MdHom& h, const mdh::Bindings& b);

// ---------------------------------------------------------------------------
// Multi-stage kernels (fusion.h, Chain; lower.h, ChainShape): one compiled
// kernel runs the stages per tile of the outer dimension (MdHom dimension
// 0 of every stage), tiles in parallel over the cores, each thread with its
// own tile buffers for the Tile links in the launcher's scratch. The
// launcher infers the halos on the bound views (plan_chain) and passes
// them, with the tile size and buffer layout, as the kernel's parameters.

struct ChainStage {
  const mdh::MdHom* hom = nullptr;
  const mdh::Bindings* bind = nullptr;
};

struct ChainOptions {
  int64_t tile_rows = 0;          // rows of the last stage per tile; 0: from scratch_budget
  // How tile buffers keep rows (lower.h, ChainShape::kStorage): 0
  // recompute halo rows per tile, 1 rolling (keep them: a memmove), 2 ring
  // (rows in slots mod the buffer's rows; stages run row by row; with
  // tile_rows 0, tiles of one row).
  int storage = 2;
  int64_t scratch_budget = 1 << 20;  // bytes of tile buffers per thread (auto tile_rows)
  // Columns of the last stage per strip (lower.h, ChainShape::kColTile; for
  // 3-d stages, rows of a plane); 0: see strip_budget. Strips need stages
  // of one rank that neither reduce nor scan, links read with their
  // producer's dimension-1 stride and no copy link; else there are none.
  // With strips, rolling storage becomes ring storage (a rolling move
  // would copy whole rows for every strip).
  int64_t col_tile = 0;
  // With col_tile 0 and ring storage: strips as wide as keep the tile
  // buffers' rows of one strip within this many bytes (0: no strips).
  int64_t strip_budget = 0;
};

// The launch, resolved on the bindings (halo/extent inference): stage s
// computes, for a tile [r0, r1) of the last stage's rows, its rows
// [r0 + lo, r1 + hi) clipped to [0, rows).
struct ChainPlan {
  struct Stage {
    int64_t rows = 0, lo = 0, hi = 0;
    int64_t cols = 1, clo = 0, chi = 0;  // columns [c0 + clo, c1 + chi) for a strip [c0, c1)
  };
  struct Link {
    Buffer* buffer = nullptr;
    int producer = 0;
    bool tile = false;
    bool copy = false;      // Tile storage whose owned rows are also copied to the buffer
    int64_t row_bytes = 0;  // bytes per row of the outer dimension
    int64_t cap_rows = 0;   // Tile: rows of its per-thread buffer
    int64_t slot_bytes = 0; // Tile: bytes from one row of its buffer to the next (row_bytes padded)
    int64_t scratch_at = 0; // Tile: offset of its buffer in a thread's scratch
  };
  std::vector<Stage> stages;
  std::vector<Link> links;
  int64_t tile_rows = 0, threads = 1, scratch_bytes = 0;  // scratch per thread
  int storage = 0;  // ChainOptions::storage
  int64_t cols = 1, col_tile = 1;  // the last stage's columns (at least 1), per strip
  std::string why_not;  // not empty: the stages cannot run as one chain (nothing to run)
  // The intermediate bytes never written to memory (Tile links, not Copy).
  int64_t bytes_saved() const;
  std::string to_string() const;
};

// A link of the chain and its storage (fusion::Chain::Link).
struct LinkSpec {
  Buffer* buffer = nullptr;
  bool tile = false, copy = false;
};

// `links`: the chain's links with their storage (fusion::Chain). Reads the
// bindings only (the stages' kernels need not exist yet). run_chain
// allocates the buffers the stages touch before any stage runs (a failure
// throws with nothing run).
ChainPlan plan_chain(const std::vector<ChainStage>& stages, const std::vector<LinkSpec>& links,
                     const ChainOptions& opt);
// The structure of a planned chain (the composed kernel's key and layout):
// the tile links in the plan's order, each access's link.
lower::ChainShape chain_shape(const std::vector<ChainStage>& stages, const ChainPlan& plan);
// Runs the composed kernel `fn` of `shape` (lower.h: lower with a ChainShape) on the plan.
void run_chain(jit::KernelFn fn, const lower::ChainShape& shape, const std::vector<ChainStage>& stages,
               const ChainPlan& plan);

// ---------------------------------------------------------------------------
// Devices (core/device.h) that run GPU kernels (codegen: render_cuda; their
// phases: LaunchShape). A kernel's buffers are read and written in device
// memory (Buffer::device_data); what the host reads comes back on use.

class GpuDevice : public Device {
 public:
  // What moved and ran since the process started (tests, explain()), and
  // the memory pool's state: blocks taken from the device, allocations
  // served from the pool, and the bytes it holds free.
  struct Stats {
    int64_t uploads = 0, downloads = 0, launches = 0;
    int64_t block_launches = 0;  // launches of phases whose blocks' threads cooperate
    int64_t block_threads = 0;   // their blocks' sizes, summed over those launches
    int64_t device_allocs = 0, pool_hits = 0, pool_bytes = 0;
  };
  Stats stats() const;
  // Device memory comes from a caching pool: a freed block is kept, by its
  // size class (Buffer::size_class, as the host's pool), for the next
  // allocation of that class, so a flush's temporaries do not go back to
  // the driver (whose free waits for the device). Launches are synchronous, so a block is
  // free when its buffer is. When the device has no memory left, the pool
  // gives its free blocks back and tries once more; then MemoryError.
  void* alloc(int64_t bytes) final;
  void free(void* p, int64_t bytes) final;
  // Gives every free block back to the device.
  void trim();
  // Runs phase `phase` of k: a grid phase over grid_blocks() x
  // grid_threads(), else one thread; `ptrs` (device addresses, already
  // offset), `ints`, `floats` as the shape counts them, `frame` the
  // phase's frame (frame_bytes of device memory). Returns when it is done.
  virtual void launch(const jit::Kernel& k, size_t phase, char* const* ptrs, const int64_t* ints,
                      const double* floats, void* frame) = 0;

 protected:
  // A block of `capacity` bytes from the device (throws MemoryError or
  // std::bad_alloc when it has none), and back.
  virtual void* device_alloc(int64_t capacity) = 0;
  virtual void device_free(void* p, int64_t capacity) = 0;
  // A block handed out for `bytes` bytes (new or from the pool).
  virtual void handed_out(void* p, int64_t bytes, int64_t capacity) {}
  std::atomic<int64_t> uploads_{0}, downloads_{0}, launches_{0}, block_launches_{0}, block_threads_{0};

 private:
  mutable std::mutex pool_mu_;
  std::unordered_map<int64_t, std::vector<void*>> pool_;  // free blocks by size class
  int64_t pool_bytes_ = 0, device_allocs_ = 0, pool_hits_ = 0;
};

// The emulated device: device memory is host memory of its own, filled with
// 0xff bytes when allocated (a NaN in every float, -1 in every int), so a
// kernel that reads what was never copied to it shows; kernels are the
// emulated compiler's (jit.h), each grid phase run by `blocks` blocks of
// `threads` threads, one after another (NUMFUSE_EMULATED_GRID=blocks,threads;
// default 2,3: more than one of each, few enough to be quick).
GpuDevice& emulated_device();
// (Tests) the DLPack device type the emulated device reports (1, kDLCPU,
// by default; 2, kDLCUDA, makes exports of its copies run as a GPU's).
void set_emulated_dlpack_type(int32_t type);
// The GPU through the CUDA driver (jit::CudaDriver), or nullptr with `why`.
GpuDevice* cuda_device(std::string* why = nullptr);

// Runs GPU kernel k on the bindings of h on d: every buffer the kernel
// touches is brought to d (allocated there, copied from the host if the
// host holds its contents), the phases run in order, and the buffers it
// writes are marked newer on the device.
void run_gpu_kernel(const jit::Kernel& k, const mdh::MdHom& h, const mdh::Bindings& b, GpuDevice& d);

// Threads per kernel (jit::set_threads / jit::threads).
void set_num_threads(int n);
int num_threads();

// libomp writes a registration file named for the process's pid when it
// initializes, and dies with SIGBUS on an empty one a dead process left under
// the same pid. Kernels do not use libomp; code that may (hand-written OpenMP
// reference loops, other extensions) is protected by these:
// forget_stale_openmp_registration() removes such a file named for our pid
// (at import); prepare_openmp() also initializes libomp, cleaning up after a
// registration that failed half way (before running OpenMP code).
void forget_stale_openmp_registration();
void prepare_openmp();

}  // namespace nf::runtime

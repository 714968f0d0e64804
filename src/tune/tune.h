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

#include <cstdint>
#include <string>
#include <vector>

#include "mdh/mdh.h"

namespace nf::tune {

// The abstract system model of the machine we compile for.
struct Asm {
  int cores = 1;
  int64_t l1_bytes = 32 << 10;
  int64_t l2_bytes = 512 << 10;
  int simd_bytes = 32;
  static const Asm& host();
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

struct Schedule {
  std::vector<std::vector<int64_t>> tiles;
  std::vector<LoopSpec> order;
  bool parallel = false;
  int64_t parallel_min_work = 1 << 15;
  bool vectorize = true;
  std::vector<Cache> caches;
  std::vector<int> unroll;      // positions in `order`
  bool contract = false;
  Routine routine = Routine::None;

  int levels(int d) const { return static_cast<int>(tiles[d].size()) + 1; }
  // Loops of each dimension appear once per level, levels in order; tile
  // sizes positive and decreasing.
  bool legal(const mdh::MdHom& h) const;
  // Why legal() fails ("" when it holds).
  std::string why_illegal(const mdh::MdHom& h) const;
  std::string key() const;
  std::string to_string() const;
};

// A good schedule without search: parallelize the outermost concatenated
// dimension (tiling it out of inner point-wise loops if needed), or a
// point-wise one with private partials when the outputs are small;
// vectorize the innermost loop.
// A floating-point GEMM/GEMV/DOT goes to the BLAS routine when
// `routines` allows it.
Schedule default_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, bool routines = true);

// The computation classes the default heuristic and the tuner distinguish.
enum class Shape : uint8_t { Map, Reduction, Contraction, Stencil };
Shape classify(const mdh::MdHom& h);
// For a contraction C(i,j) = sum_k A(i,k) B(k,j) in floating point: whether
// it is a (batched) GEMM/GEMV/DOT a BLAS routine can run.
bool blas_compatible(const mdh::MdHom& h);

}  // namespace nf::tune

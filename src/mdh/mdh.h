// The MDH high-level expression of a fused group (Rasch, TOPLAS 2024):
//
//   out_view ∘ md_hom<N_1..N_D>(f, (⊗_1..⊗_D)) ∘ inp_view
//
// - dimensions: the group's iteration domain after normalization (extent-1
//   dimensions dropped, dimensions ordered outer-to-inner by memory stride,
//   adjacent dimensions merged where every access is linear across them);
// - inp_view / out_view: each distinct view is an Access, an affine index
//   function (pointer + sum_d stride_d * i_d) of the MDH index;
// - f: the scalar function, the fused tasks' expressions composed in program
//   order, values written and re-read through the same view forwarded;
// - combine operators: per output, concatenation (++) on dimensions the
//   output's index function uses and point-wise ⊕ (the reduction's operator)
//   on dimensions it ignores (stride 0); a scan (cumsum) combines with the
//   prefix-sum operator ps(⊕) on its scan dimension.
//
// Sizes, strides and constants are parameters, not part of the structure:
// MdHom::key() names the structure, Bindings carry the values. Two groups with
// equal keys run the same compiled kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/expr.h"
#include "core/view.h"
#include "fusion/fusion.h"

namespace nf::mdh {

enum class StrideKind : uint8_t { Zero, Unit, Param };

struct Access {
  DType dtype = DType::Float64;
  SmallVector<StrideKind, 6> kind;  // per dimension
  SmallVector<int, 6> stride;       // int parameter slot of Param strides, -1 otherwise
  int ptr = 0;                      // pointer slot
  bool read = false;
  bool written = false;
  bool reduced = false;
};

struct Output {
  int access = 0;
  int value = 0;             // node of f stored (or combined) into the access
  bool reduces = false;      // point-wise combine on the access's Zero dimensions
  ReduceOp op = ReduceOp::Sum;
  DType acc_dtype = DType::Float64;
  int arg_node = -1;         // ArgMax/ArgMin: node of f giving the reported index
  int init_const = -1;       // const slot of `initial=`, or -1 for the identity
  // Prefix-sum combine (MDH's ps operator) on this dimension, -1 if none:
  // the output at i is the output at i-1 combined with f at i (f at i = 0).
  int scan_dim = -1;
  // The combine must visit the points in index order: a floating-point
  // product is not associative at its special values (NumPy's sequential
  // product of [0, 1e10 x 4096] is 0, a reassociated one meets 0 * inf =
  // nan). Sums are reassociated (NumPy's pairwise sum does so too).
  bool ordered() const { return reduces && op == ReduceOp::Prod && is_float(acc_dtype); }
};

struct Affine {
  int offset = -1;                // int parameter slot
  SmallVector<int, 6> stride;     // int parameter slot per dimension
};

struct MdHom {
  int ndim = 0;
  SmallVector<int, 6> extent;  // int parameter slot of each extent
  std::vector<Access> accesses;
  Expr f;
  std::vector<DType> const_type;
  std::vector<int> const_slot;  // float slot for float constants, int slot otherwise
  std::vector<Affine> indices;
  std::vector<Output> outputs;
  int num_ints = 0, num_floats = 0;
  // The scalar prologue (fusion.h): nodes [0, prologue) of f are the group's
  // leading 0-d tasks, evaluated once before any point (their inputs are
  // read once, all-Zero accesses); an output whose value is one of them and
  // whose access is all-Zero is stored once, there. Later nodes use their
  // values. 0 when the group has none (always for ndim == 0).
  int prologue = 0;
  // Output o is the prologue's: stored once, before the points.
  bool once(const Output& o) const;
  // Access a is written by the prologue's stores only (an Output once()).
  bool stored_once(int a) const;
  // A stage (fusion.h, Chain) whose prologue stores: the int slot of the
  // guard of those stores (bound to 1), else -1. A stage's nest runs at
  // every tile of its chain and computes the prologue there; the chain's
  // kernel stores the results once, before the tiles, and clears the guard
  // (passes.h: build_stores, compose). Run alone, the kernel stores them.
  int once_guard = -1;

  bool pointwise(const Output& o, int d) const {
    return o.reduces && accesses[o.access].kind[d] == StrideKind::Zero;
  }
  // True when some output combines dimension d point-wise.
  bool any_pointwise(int d) const;
  // True when some output scans along dimension d (a loop-carried dependence).
  bool is_scan(int d) const;
  std::string key() const;
};

struct Bindings {
  // Per pointer slot, the buffer: borrowed, not owned. Bindings are built for
  // a window (mdh::build, mdh::rebind) and used while that window's tasks,
  // which own the buffers, are alive; whatever keeps bindings longer holds
  // the buffers itself (the tuner's synthetic ones) or clears them (the
  // memo's templates). Owning them cost two atomic read-modify-writes per
  // array per kernel launch, a fifth of launching a memoized small kernel.
  std::vector<Buffer*> buffers;
  std::vector<int64_t> offsets;    // byte offset per pointer slot
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int64_t extent(const MdHom& h, int d) const { return ints[h.extent[d]]; }
};

// Where each binding comes from in the window, so a memoized MdHom can be
// bound to a new window with the same signature without rebuilding it.
struct Recipe {
  struct AccessSource {
    int task;  // window index
    int slot;  // input index, or -1 for the task's output
    int64_t shift = 0;  // elements added to the view's offset (fusion::Source)
  };
  struct ParamSource {
    int slot;  // int or float parameter slot
    int task;
    int which;  // const index, or index-function index
    bool index_offset;
    bool is_float;
    bool imag = false;  // a complex constant's imaginary part (its real part has the slot before)
    int64_t shift = 0;  // added to an index function's offset (fusion::Source)
  };
  std::vector<AccessSource> access;  // per access
  std::vector<ParamSource> params;
};

struct Built {
  MdHom hom;
  Bindings bind;
  Recipe recipe;
  // Tasks of the group that the MdHom computes (dead ones excluded).
  std::vector<int> tasks;
};

// Express a group of the window as an MdHom with its bindings. The group
// must satisfy the fusion constraints (fusion.h); temporaries of the group
// are not stored.
Built build(const std::vector<Task>& window, const fusion::Group& group);

// Bindings of `tmpl.hom` for a window whose signature equals the one `tmpl`
// was built from (fusion::window_signature): only pointers, offsets and
// scalar constants differ. Written into `out`, reusing its storage (a memo
// hit per loop iteration).
void rebind(const std::vector<Task>& window, const Built& tmpl, Bindings& out);
// rebind() into bindings that rebind() wrote for `tmpl` before (a memoized
// group's own): only what a window changes -- buffers, offsets and the
// parameters taken from its tasks -- is written again.
void rebind_again(const std::vector<Task>& window, const Built& tmpl, Bindings& out);
// The same with the sources of `recipe` (tmpl.recipe translated to another
// form of the window: a plan of a rewritten window bound to the window as
// recorded, flush.cc).
void rebind(const std::vector<Task>& window, const Built& tmpl, const Recipe& recipe, Bindings& out);
void rebind_again(const std::vector<Task>& window, const Recipe& recipe, Bindings& out);

// The expression in the paper's notation, with concrete sizes if given.
std::string to_string(const MdHom& h, const Bindings* b = nullptr);

}  // namespace nf::mdh

// Recording: every array operation appends a Task to the window.
//
// A task is a point-wise computation over an iteration domain. Each input is
// a view over the whole domain (broadcast dimensions have stride 0); the
// output view too, with stride 0 on the dimensions a reduction combines.
// This uniform form is what lets fusion compare tasks and what makes every
// task an MDH expression: elementwise tasks concatenate on every dimension,
// reductions combine point-wise on their stride-0 output dimensions.
//
// Invariants established by the recorder (checked by Task::validate when the
// core's checks are on, core/checks.h):
//   - every input and the output has shape == domain;
//   - an elementwise (Map) output never has a stride-0 dimension of extent > 1;
//   - no input overlaps the output unless it is the same view (the recorder
//     copies such inputs first), so a task never reads what it wrote;
//   - all shape, dtype and bounds errors were raised before recording.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expr.h"
#include "core/inline_vector.h"
#include "core/ops.h"
#include "core/view.h"

namespace nf {

// An affine integer function of the iteration index: offset + sum strides[d]*i_d.
struct IndexFn {
  int64_t offset = 0;
  Dims strides;
};

struct Task {
  // User-provided, so that a task made in place (Stream::Slot) is not
  // zero-filled first (value-initialization of a class without one clears
  // all of its ~1 KB, a `rep stos` per recorded operation); every member has
  // its own initializer.
  Task() noexcept {}
  // Scan: out[.., i, ..] = out[.., i-1, ..] (+) value[.., i, ..] along
  // scan_axis (cumsum, cumprod: MDH's prefix-sum combine operator), with
  // out[.., 0, ..] = value[.., 0, ..].
  enum class Kind : uint8_t { Map, Reduce, Scan };
  // The task's scalar fields first, in one block without padding (its
  // structure is copied whole: Structure::append, head_bytes()).
  Kind kind = Kind::Map;
  // Reduce: the combine operator, the type it combines in, and for
  // ArgMax/ArgMin the node giving the (flat) index that is reported.
  ReduceOp reduce = ReduceOp::Sum;
  DType acc_dtype = DType::Float64;
  // A contraction (matmul, einsum, tensordot): runs as a group of its own,
  // so the schedule stage may hand it to a library routine (tune::Routine)
  // or to a register-tiled kernel without fused neighbours in the way.
  bool solo = false;
  int32_t scan_axis = -1;   // Scan: the domain dimension scanned along
  int32_t value_node = -1;  // node of expr that is stored/combined; -1: the root
  int32_t arg_node = -1;
  int32_t init_const = -1;  // const slot of `initial=`, or -1 for the identity
  // numfuse.jit's programs only (trace/trace.h): 1 + the input holding the
  // positions along the output's one dimension that each point stores to
  // (a scatter, `a[idx] = v`); 0: the output at the domain's point. (The
  // block's padding, so every byte of it is set.)
  uint32_t scatter = 0;
  // What the user called ("add", "sum", "__setitem__"), for explain().
  const char* name = "";
  Dims domain;
  InlineVector<View, 3> inputs;
  InlineVector<Scalar, 2> consts;
  InlineVector<IndexFn, 1> indices;
  Expr expr;    // value per domain point (for Reduce: the value combined)
  View output;  // over the domain
  // Its number in recording order (from 1; 0 until recorded): see
  // Buffer::last_read.
  uint64_t seq = 0;

  // The scalar fields' block: kind through name.
  static constexpr size_t kHeadBytes = 32;
  const void* head_bytes() const { return &kind; }

  bool is_reduce() const { return kind == Kind::Reduce; }
  // The output combines many points (a reduction or a scan): nothing else
  // in its group may read it (fusion constraint 4).
  bool combines() const { return kind != Kind::Map; }
  int value() const { return value_node >= 0 ? value_node : expr.root(); }
  // Throws std::logic_error if an invariant above is broken.
  void validate() const;
};

// The window of pending tasks. Thread-safe: recording appends under a mutex;
// a flush takes the whole window at once.
// Runs a task at once instead of recording it; false: record it. The
// pipeline installs tier 0 here (small tasks whose inputs are computed run
// immediately, pipeline.h); without one, every task is recorded.
using RunNow = bool (*)(Task& t);

// An elementwise operation in its simplest form (one scalar operation on
// operands already of the types it reads), offered to tier 0 before a task
// is built: the common small cases then run at the cost of a loop call. The
// recorder has validated everything NumPy checks; array operands broadcast
// as a ufunc's do; scalars are converted.
struct SimpleOp {
  ExprNode node{ExprNode::Kind::Cast, DType::Float64, 0, 0, 1, -1};  // Cast / Unary / Binary, result type
  int nin = 1;
  const View* view[2] = {nullptr, nullptr};  // array operands (nullptr: a scalar)
  Scalar value[2];                           // scalar operands, of type `type[k]`
  DType type[2] = {DType::Float64, DType::Float64};
  const View* out = nullptr;  // the destination (out=, in place, assignment); nullptr: a new array
};
// Computes `op` now, setting *result to the new array (with op.out, the
// destination, *result is left as it was: the caller has it); false: the
// caller records it as a task.
using RunSimpleNow = bool (*)(const SimpleOp& op, View* result);

// A reduction of a whole array to one value (x.sum(), x.max(), a dot
// product of two vectors: the sum of in[k] * in2[k]), offered to tier 0 so
// that a small computed array gives its value at once, as a NumPy scalar.
struct SimpleReduce {
  const View* in = nullptr;
  const View* in2 = nullptr;  // a dot product's second vector, or nullptr
  ReduceOp op = ReduceOp::Sum;
  DType acc = DType::Float64;  // the type values are combined in (a dot product's product type)
  DType out = DType::Float64;  // the result's type
  bool has_initial = false;
  Scalar initial;  // of type acc
  // numpy.dot's rule for a dot product: an operand with a negative or
  // broadcast (zero) stride is copied to contiguous memory first; matmul
  // (`@`) computes on the strides as they are (see ext::dot_like_numpy).
  bool copy_bad_strides = false;
};
// Computes `r` now into *value (of type r.out); false: record a task.
using RunReduceNow = bool (*)(const SimpleReduce& r, Scalar* value);
// Whether an operation of this many elements, on computed inputs, is
// computed at the call (tier 0) rather than recorded.
using RunsNow = bool (*)(int64_t elements);

// The structure of recorded tasks: every field of a task that partition()
// and mdh::build() decide on, except its buffers, its views' offsets and its
// scalar values (those enter a window's signature at the flush, see
// fusion::Signature). The stream writes it as each task is recorded, so a
// flush whose window repeats an earlier one (a loop body) compares this part
// of its signature with one memcmp instead of walking the tasks' fields.
// Layout, per task: its block of scalar fields (kind, reduce op,
// accumulator type, solo, scan axis, value node, arg node, init const, the
// name's address: Task::head_bytes); the domain's rank,
// the numbers of views (inputs + output), consts and index functions, and
// of expression nodes; the domain's extents; the nodes; the consts' types;
// each index function's rank and strides; then per view (inputs, then the
// output) its dtype and strides (its extents are the domain's: Task).
class Structure {
 public:
  void append(const Task& t);
  std::string_view view() const { return {buf_.data(), size_}; }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }
  void swap(Structure& o) noexcept {
    buf_.swap(o.buf_);
    std::swap(size_, o.size_);
  }
  // The structure of `tasks`, written afresh (what the stream wrote as they
  // were recorded).
  static Structure of(const std::vector<Task>& tasks);

 private:
  std::vector<char> buf_;  // the first size_ bytes count; the rest is room
  size_t size_ = 0;
};

class Stream {
 public:
  Stream();
  // Runs `t` now (the RunNow hook) or appends it to the window (through a Slot).
  void record(Task&& t);
  // record() without the move: the task is built in place in the window's
  // next slot (a task is about 1 KB; building it on the stack and moving it
  // in was a fifth of the cost of recording a small operation). The slot is
  // not part of the window until commit; the builder must not record
  // anything else meanwhile (that would move the slot: a logic_error). Holds
  // the gate while open, so no other thread takes the window under it.
  class Slot {
   public:
    explicit Slot(Stream& s);
    ~Slot();  // an uncommitted slot (an error while building) is dropped
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Task& task() { return *task_; }
    // As record(): runs the task now (RunNow) or makes it part of the window.
    void commit();

   private:
    Stream& s_;
    Task* task_;
    bool open_ = true;
  };
  // All four at once (a capture turns them off: trace.h).
  struct Hooks {
    RunNow now = nullptr;
    RunSimpleNow simple = nullptr;
    RunReduceNow reduce = nullptr;
    RunsNow runs = nullptr;
  };
  Hooks hooks() const { return {run_now_, run_simple_, run_reduce_, runs_now_}; }
  void set_hooks(const Hooks& h) {
    run_now_ = h.now;
    run_simple_ = h.simple;
    run_reduce_ = h.reduce;
    runs_now_ = h.runs;
  }
  void set_run_now(RunNow f) { run_now_ = f; }
  void set_run_simple(RunSimpleNow f) { run_simple_ = f; }
  void set_run_reduce(RunReduceNow f) { run_reduce_ = f; }
  void set_runs_now(RunsNow f) { runs_now_ = f; }
  bool runs_now(int64_t elements) const { return runs_now_ && runs_now_(elements); }
  bool run_reduce(const SimpleReduce& r, Scalar* value) const { return run_reduce_ && run_reduce_(r, value); }
  bool run_simple(const SimpleOp& op, View* result) const { return run_simple_ && run_simple_(op, result); }
  // Takes the whole window. Waits for the gate, so a window is never taken
  // between a task being recorded and its result getting its Python
  // reference (which would make the result look dead).
  // With `structure`: the window's structure (Structure) goes there.
  std::vector<Task> take(Structure* structure = nullptr);
  // Puts tasks a failed flush did not run back in front of the window (in
  // program order, before anything recorded since), so a later sync runs
  // them: an error during a flush never loses or half-computes a result.
  // (They are set aside and joined to the window by the next take(); size()
  // counts them.)
  void restore(std::vector<Task> tasks);
  // Gives a flushed window's storage back (its tasks destroyed by the
  // caller): the next take() reuses it, so a flush neither allocates nor
  // regrows a window of tasks (each about 1 KB).
  void recycle(std::vector<Task>&& tasks);
  // Tasks that ran (or were skipped as dead) leave: they count as done
  // (Buffer::retire_through; see Buffer::last_read).
  static void retire(const std::vector<Task>& tasks);
  // Held by the bindings from recording an operation until its result array
  // exists (recursive: one binding may record several tasks).
  std::recursive_mutex& gate() { return gate_; }
  // Whether a task recorded since the last call touches exported memory
  // (Buffer::exports): the bindings then flush as soon as the operation's
  // result exists, so NumPy views of that memory see it in program order.
  bool sync_requested() const { return sync_request_.load(std::memory_order_relaxed); }
  bool take_sync_request() {
    return sync_request_.load(std::memory_order_relaxed) && sync_request_.exchange(false);
  }
  // A small operation found results of large ones pending (pipeline/
  // tier0.cc, settling): the bindings flush when its call ends, so the
  // small operations after it run at once.
  void request_settle() { settle_request_.store(true, std::memory_order_relaxed); }
  bool settle_requested() const { return settle_request_.load(std::memory_order_relaxed); }
  bool take_settle_request() {
    return settle_request_.load(std::memory_order_relaxed) && settle_request_.exchange(false);
  }
  // In a forked child: a thread that held the gate (mid-recording, waiting
  // for the GIL) does not exist there; the gate starts free.
  void reset_gate_in_child() { new (&gate_) std::recursive_mutex(); }
  // Tasks in the window (read without the lock: a snapshot).
  size_t size() const { return size_.load(std::memory_order_acquire); }
  // Whether a pending task reads or writes buffer `b`.
  bool touches(const Buffer* b) const { return b->pending(); }
  // Flush policy: the window is flushed automatically once it holds this many
  // tasks (bounds memory and analysis time in loops that never sync).
  size_t max_window = 512;
  void set_max_window(size_t n);
  // Where the window is cut (flushed automatically): max_window, or, once the
  // window is half full and its recorded operations repeat with a period p
  // (a loop body that never syncs), the largest multiple of p not above
  // max_window -- so every cut falls at the same phase of the loop body and
  // every steady-state window has the same signature (and hits the memo).
  size_t cut_at() const { return cut_.load(std::memory_order_acquire); }
  // The smallest period p <= n/2 of codes[0..n), or 0 when there is none.
  static size_t period_of(const uint32_t* codes, size_t n);
  // Tasks put into the window so far (recorded, or put back by restore):
  // unchanged means nothing new is pending since it was last read.
  uint64_t recorded_total() const {
    return recorded_total_.load(std::memory_order_acquire) + restored_total_.load(std::memory_order_acquire);
  }

 private:
  // Ownership: the window (window_, codes_, slot_open_) belongs to the
  // thread holding the gate -- the recorder, through a Slot, and take().
  // mu_ guards what other threads touch: spare_ (recycle), restored_
  // (restore), max_window. Recording a task under the gate (the bindings'
  // RecordGuard holds it) takes no other lock and makes no atomic
  // read-modify-write (each costs about 8 ns here, a fortieth of recording
  // an operation).
  mutable std::mutex mu_;
  std::recursive_mutex gate_;
  std::vector<Task> window_;
  std::vector<Task> spare_;      // empty; storage for the next window (recycle)
  std::vector<Task> restored_;   // put back by failed flushes; taken first (under mu_)
  std::atomic<size_t> restored_n_{0};  // restored_.size()
  std::vector<uint32_t> codes_;  // per task of window_: its operation (kind, name, dtype, rank)
  Structure structure_;          // of window_'s committed tasks
  std::atomic<size_t> cut_{512};
  void note_code(const Task& t);  // (by the gate's holder)
  std::atomic<uint64_t> recorded_total_{0};  // written by the gate's holder only
  std::atomic<uint64_t> restored_total_{0};  // tasks put back (restore)
  std::atomic<size_t> size_{0};  // window_ and restored_ (a snapshot)
  std::atomic<bool> sync_request_{false};
  std::atomic<bool> settle_request_{false};
  // A Slot is being built at window_.back() (the gate's holder's own flag:
  // a nested slot, or take() under an open one, is a bug it reports).
  std::atomic<bool> slot_open_{false};
  RunNow run_now_ = nullptr;
  RunSimpleNow run_simple_ = nullptr;
  RunReduceNow run_reduce_ = nullptr;
  RunsNow runs_now_ = nullptr;
};

// The process's stream: made when the library loads (a namespace-scope
// pointer, so asking for it costs a load, not a function-local static's
// guard check), never destroyed (it outlives Python teardown).
extern Stream* const g_stream;
inline Stream& global_stream() { return *g_stream; }

// ---------------------------------------------------------------------------
// The recorder: validates an operation (raising NumPy's error at the call),
// allocates its result and appends its task to the global stream.

// numpy.broadcast_shapes; throws ValueError with NumPy's message.
Dims broadcast_shapes(const std::vector<Dims>& shapes);
// The view seen as `shape` (numpy.broadcast_to); throws ValueError.
View broadcast_view(const View& v, const Dims& shape);
// NumPy's order='K' axis order (outer to inner) for a new array over
// `shape` computed from operands `like`: with `iterator`, as the ufunc
// iterator decides it (operands broadcast to `shape`, stride-0 axes do not
// vote), otherwise as concatenate decides it (operands of the same ndim,
// extent-1 axes do not vote).
std::vector<int> keep_order(const Dims& shape, std::span<const View> like, bool iterator);
// A fresh result laid out in keep_order(shape, like, true), with positive strides.
View alloc_like_order(DType dtype, const Dims& shape, std::span<const View> like);
// numpy's PyArray_NewLikeArray(prototype, order='K') (astype, copy, empty_like):
// axes by decreasing |stride|, broadcast (stride-0) axes innermost.
View alloc_new_like(DType dtype, const View& prototype);

struct MapSpec {
  const char* name = "";
  InlineVector<View, 3> inputs;    // any shapes; broadcast together
  InlineVector<Scalar, 2> consts;
  InlineVector<IndexFn, 1> indices;  // over the broadcast domain
  Expr expr;                   // result type = expr.dtype()
  const View* out = nullptr;   // write here (cast unsafely) instead of allocating
  Dims shape_hint;             // domain when there are no inputs (creation)
  bool has_shape_hint = false;
  // The shapes of the call's operands in order, scalars as (), for NumPy's
  // broadcast error message; empty: the inputs' shapes.
  InlineVector<Dims, 3> operand_shapes;
};
// Records out[...] = expr(inputs). Returns the result view.
View record_map(MapSpec spec);
// Records a SimpleOp as one task without building a MapSpec (false: a case
// it leaves to record_map -- operands that do not broadcast, an input that
// overlaps the destination, a layout that is not C order).
bool record_simple(const SimpleOp& s, View* result);

struct ReduceSpec {
  const char* name = "";
  View input;
  SmallVector<int, 8> axes;  // normalized, sorted, unique
  bool keepdims = false;
  ReduceOp op = ReduceOp::Sum;
  Expr value;             // over input slot 0, of type acc_dtype
  DType acc_dtype = DType::Float64;
  DType out_dtype = DType::Float64;
  bool has_initial = false;
  Scalar initial;
  const View* out = nullptr;
};
View record_reduce(ReduceSpec spec);

// numpy.matmul for operands of ndim >= 2 (batch dimensions broadcast),
// computed in `dtype`: a solo reduction over k (domain batch..., m, n, k),
// which the schedule stage may run with BLAS.
View record_matmul(const View& a, const View& b, DType dtype, const View* out);
// numpy.matmul with NumPy's handling of 1-D operands (promoted to a row /
// column, then removed from the result) and result type.
View record_matmul_any(const View& a, const View& b, const View* out, std::optional<DType> dtype = std::nullopt);

// numpy.einsum with labels already parsed (the Python layer handles the
// subscript string, ellipses and broadcasting): operand k's axis a carries
// label labels[k][a]; the result has axes out_labels (distinct); extents[l]
// is label l's size (operand axes of size 1 broadcast). Labels not in the
// result are summed. The MDH form: domain = result labels ++ summed labels,
// f = the product of the operands cast to `dtype`, combined with + (logical
// or for bool) over the summed labels. Two or more operands with a sum make
// a solo contraction (possibly a BLAS routine).
struct ContractSpec {
  const char* name = "einsum";
  std::vector<View> operands;
  std::vector<std::vector<int>> labels;
  std::vector<int> out_labels;
  Dims extents;
  DType dtype = DType::Float64;
  const View* out = nullptr;
};
View record_contraction(const ContractSpec& spec);

// numpy.cumsum / cumprod (op Sum / Prod) along `axis` in type `dtype`
// (the caller applies NumPy's default-type rule), into `out` if given.
View record_scan(const View& in, int axis, ReduceOp op, DType dtype, const View* out);

// Copies `src` into a fresh buffer if it overlaps `dst` without being the
// same view (what NumPy does for ufuncs with overlapping operands).
View copy_if_overlapping(const View& src, const View& dst);

// ---------------------------------------------------------------------------
// Ufuncs, with NumPy's type resolution (recording stage of the ufunc surface).

// An operand: an array, a NumPy scalar (strong: promotes like an array) or a
// Python scalar (weak: NEP 50).
struct Operand {
  enum class Kind : uint8_t { Array, Strong, Weak };
  Kind kind = Kind::Array;
  Scalar value;                 // Strong/Weak; Weak ints are Int64 or UInt64 (big) typed
  WeakKind weak = WeakKind::Float;
  bool huge = false;            // Weak int outside [-2^63, 2^64): value.f holds it
  // An array operand: a copy of the view, or (borrow) the caller's own view,
  // which must outlive every use of the operand and its copies (an array's
  // view while its Python object is an argument of the call: no copy, no
  // reference count touched, on the per-operation path).
  static Operand array(const View& v) { Operand o; o.kind = Kind::Array; o.own_ = v; return o; }
  static Operand borrow(const View& v) { Operand o; o.kind = Kind::Array; o.ref_ = &v; return o; }
  // Makes *this borrow v (what `*this = borrow(v)` does, without moving a View).
  void borrow_from(const View& v) {
    kind = Kind::Array;
    ref_ = &v;
  }
  const View& view() const { return ref_ ? *ref_ : own_; }
  DType strong_dtype() const { return kind == Kind::Array ? view().dtype : value.dtype; }

 private:
  View own_;
  const View* ref_ = nullptr;
};

// The loop NumPy selects for a ufunc call: operand and result types.
struct Loop {
  DType in[2] = {DType::Float64, DType::Float64};
  DType out = DType::Float64;
};
// Type descriptors given to the resolver: 0..10 are DTypes, 16 + WeakKind weak scalars.
using LoopResolver = std::function<Loop(const char* ufunc, int nin, const int* descs)>;
// Installed by the Python layer (numpy's ufunc.resolve_dtypes). Results are
// cached; a resolver that raises propagates NumPy's own exception.
void set_loop_resolver(LoopResolver r);

View record_unary(UnaryOp op, const Operand& x, const View* out);
View record_binary(BinaryOp op, const Operand& a, const Operand& b, const View* out);
// The same operations computed at once by tier 0 when it takes them (the
// plain cases: no scalar power exponents, no out-of-range comparisons):
// true with *result set. Nothing is recorded, so no RecordGuard is needed.
// When tier 0 declines a plain case, it is left in *recordable (if given;
// untouched otherwise, so an operand view set there means a plain case) for
// record_simple, which records it without resolving the loop again
// (record_unary/record_binary: every case).
bool unary_now(UnaryOp op, const Operand& x, const View* out, View* result, SimpleOp* recordable = nullptr);
bool binary_now(BinaryOp op, const Operand& a, const Operand& b, const View* out, View* result,
                SimpleOp* recordable = nullptr);
// numpy.where(cond, x, y).
View record_where(const Operand& cond, const Operand& x, const Operand& y);
// dst[...] = src, cast unsafely (assignment semantics). Checks Python scalars
// like NumPy (OverflowError / ValueError for NaN into integers).
void record_assign(const View& dst, const Operand& src);
// record_assign's tier-0 form: true when dst[...] = src ran at once (small,
// nothing pending); false when it must be recorded (raises what record_assign
// raises).
bool assign_now(const View& dst, const Operand& src);
// dst[()] = src for a one-element view and a scalar, done now: the value is
// converted as record_assign converts it and written into dst's memory. Only
// for memory no pending task reads or writes (Stream::touches).
void write_element(const View& dst, const Operand& src);
// The value item assignment stores for `src` into an element of type t
// (NumPy's conversions and errors, as record_assign and write_element).
Scalar element_value(const Operand& src, DType t);
// v.astype(to) into a fresh array: C order, NumPy's order 'K' for astype
// (alloc_new_like), or laid out as a ufunc's result over v (alloc_like_order:
// a cast that stands for a ufunc's internal casting).
// The layout of a cast's (or copy's) result: C order; the input's (NumPy's
// order='K'); a ufunc result's; Fortran order (numpy's order='F': the one
// owner of Fortran-ordered copies, for astype, copy, reshape and creation).
enum class CastLayout : uint8_t { C, Keep, Ufunc, F };
View record_astype(const View& v, DType to, CastLayout layout);

struct ReductionArgs {
  ReduceOp op = ReduceOp::Sum;
  SmallVector<int, 8> axes;  // normalized, sorted, unique
  bool keepdims = false;
  bool has_dtype = false;
  DType dtype = DType::Float64;
  const View* out = nullptr;
  bool has_initial = false;
  Operand initial;
};
// sum/prod/max/min/any/all/argmax/argmin with NumPy's result types.
View record_reduction(const View& in, const ReductionArgs& a);
// The same reduction over every axis (no keepdims, no out=), computed at once
// when tier 0 takes it: true with *value set (NumPy's result type).
bool reduce_to_scalar(const View& in, const ReductionArgs& a, Scalar* value);
// numpy.dot (numpy_dot) or matmul of two 1-D vectors, computed at once when
// tier 0 takes it (same contract as reduce_to_scalar).
bool dot_to_scalar(const View& a, const View& b, Scalar* value, bool numpy_dot);

// Creation.
View record_full(DType t, const Dims& shape, const Operand& value);
// Fills `out`, a new array's view (View::fresh: C-contiguous, nothing
// pending), with `value` (of out's type) at the call when tier 0's policy
// computes an operation of its size at once: zeros, ones and full of small
// arrays record nothing and take no stream lock. False: the caller records
// the fill (record_full) instead.
bool fill_now(const View& out, const Scalar& value);
View record_arange(double start, double step, int64_t n, DType t, bool integral, int64_t istart, int64_t istep);
View record_eye(int64_t n, int64_t m, int64_t k, DType t);

}  // namespace nf

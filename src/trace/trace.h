// Tracing (numfuse.jit): a Python function's operations captured as one
// program, and the program's repeated loop bodies rerolled into loops.
//
// Capture. While a thread captures, every operation it records is kept in
// the window, none runs: tier 0's at-once paths are off, the window is
// never cut, and anything that needs a value in Python (a flush, an
// element read as a Python number, `if` on an array) stops the capture
// with TraceAbort -- the function then runs the ordinary way. Element
// reads become 0-d results (deferred scalars) computed by the program;
// element writes are recorded. Memory made before the capture (the
// arguments, globals) may not be read or written by the bindings directly
// while it lasts (Buffer::data checks: TraceAbort), only by tasks.
//
// Marks. The Python layer marks the loops it can see (iterations of
// `range` in the traced function): a loop's begin, each iteration's begin,
// its end, each with the number of tasks recorded so far.
//
// Reroll. build() turns the captured tasks and marks into a Program: a
// tree of loops whose bodies are tasks (Ops) with every extent, offset,
// stride and integer constant an affine function of the enclosing loops'
// counters. Consecutive iterations of a marked loop whose tasks have the
// same structure and whose numbers move affinely with the iteration become
// one loop (a run); iterations that differ (a peeled first one, an `if`
// on the loop counter) make runs of their own. Where affine runs would not
// cover a loop in a few (numbers in no affine order: bounds read from an
// argument, i*i), iterations of the same structure are one run anyway and
// the numbers that do not move affinely are tables (Aff::table). Memory an iteration makes
// for itself (its temporaries) becomes one allocation per loop, reused by
// every iteration. Compile time is bounded by the body, not the trip
// count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/capture.h"
#include "stream/stream.h"

namespace nf::trace {

// ---------------------------------------------------------------------------
// Capture (on the calling thread).

// Starts capturing. The window must be empty (the caller flushed). Throws
// std::logic_error if a capture is already running.
void begin();
// Whether this thread is capturing.
bool capturing();
// Stops the capture at once: records `why` (the first reason is kept) and
// throws TraceAbort. Everything later in the traced call fails the same way.
[[noreturn]] void abort(const std::string& why);
// The reason the capture was stopped, or "" while it holds.
const std::string& aborted();

enum class MarkKind : uint8_t { LoopBegin, IterBegin, LoopEnd };
struct Mark {
  MarkKind kind;
  int64_t loop;    // the marked loop (an id the Python layer gives it)
  int64_t at;      // tasks recorded before the mark
};
void mark(MarkKind kind, int64_t loop);

// Content reads. The traced call's array arguments (set_args) may be read
// in Python while no captured task has written them -- nothing runs during
// a capture, so their memory holds the call's values: an integer Python
// needs from one (a slice bound, an index, a loop bound: `data[indptr[i]:
// indptr[i + 1]]`, `indptr.tolist()`) is read from memory, and the argument
// becomes a guard by content (numfuse.jit keys later calls by its bytes).
// Without `content_reads` such a read stops the capture, as any other.
void set_args(const std::vector<View>& args, bool content_reads);
// Whether Python may read b's memory now (an argument's, not written by a
// captured task, content reads on).
bool content_readable(const Buffer* b);
// Notes that Python read b's memory (its arguments are guarded by content).
void content_read(const Buffer* b);
// The element a captured element read (`result`: its 0-d result's memory)
// copied, when that element was content-readable at the read; or null.
void note_element(const Buffer* result, const View& element);
const View* element_source(const Buffer* result);
// The positions (among set_args' arrays) read by the last capture.
std::vector<int> content_args();
// Reads memory in Python while capturing (a content read; Buffer::data
// would stop the capture).
struct ContentReadScope {
  bool was;
  ContentReadScope() : was(t_capturing) { t_capturing = false; }
  ~ContentReadScope() { t_capturing = was; }
};

struct Captured {
  std::vector<Task> tasks;
  std::vector<Mark> marks;
  uint32_t epoch = 0;  // Buffer::capture_epoch of the memory made during the capture
  std::string aborted;
  std::vector<CaptureParam> params;  // the conversions of parameters (core/capture.h)
};
// Ends the capture (restoring tier 0 and the window's cut) and takes what
// it recorded. If it was aborted, the tasks are retired unrun (their
// results are never computed).
Captured end();

// ---------------------------------------------------------------------------
// The rerolled program.

// offset + sum over d of k[d] * (counter of the enclosing loop at depth d),
// depth 0 the outermost loop of the program; plus, where a loop's
// iterations had values that do not move affinely (a slice's bounds read
// from an array, i*i), table[counter of the loop at depth td]: the values
// each iteration of the trace had. Tables are interned by content (equal
// tables are one object, so == compares contents).
struct Aff {
  int64_t c = 0;
  std::vector<int64_t> k;  // no trailing zeros
  std::shared_ptr<const std::vector<int64_t>> table;
  int td = 0;     // the loop whose counter indexes `table`
  int tslot = -1; // Program::slots: the table's memory (an External slot; set by build)
  bool constant() const { return k.empty() && !table; }
  bool operator==(const Aff& o) const { return c == o.c && k == o.k && table == o.table && (!table || td == o.td); }
};

struct Op {
  const Task* task = nullptr;  // the first instance: structure, expression, float constants
  std::vector<Aff> extents;    // per domain dimension
  struct Access {
    int slot = 0;  // Program::slots
    Aff offset;    // in elements, from the slot's start
    std::vector<Aff> strides;
  };
  std::vector<Access> views;   // the task's inputs, then its output
  std::vector<Aff> ints;       // its integer constants (others: task->consts)
  std::vector<Aff> index_offsets;             // per index function
  std::vector<std::vector<Aff>> index_strides;
};

struct Item {
  bool loop = false;
  Op op;                    // !loop
  Aff trip;                 // loop: its counter runs over [0, trip)
  std::vector<Item> body;   // loop
};

struct Slot {
  enum class Kind : uint8_t {
    Arg,       // the memory of argument `arg` (views rebased on its offset)
    External,  // memory made before the capture that is no argument (a global): `buffer`
    Constant,  // made and written during the capture (np.array([...])): a fresh copy of `bytes` per run
    Temp,      // made during the capture, written by the program: fresh per run
    Param,     // one element: the value of float or int argument `arg` (jit's numbering) of each run, as `dtype`
  };
  Kind kind = Kind::Temp;
  int arg = -1;
  int64_t arg_offset = 0;  // Arg: the traced argument's offset (elements)
  BufferPtr buffer;        // External
  std::string bytes;       // Constant
  int64_t nbytes = 0;
  DType dtype = DType::Float64;
  // Arg: the lowest and highest element (relative to the argument's
  // offset) the program touches, checked against each run's memory.
  int64_t lo = 0, hi = -1;
};

struct Program {
  std::vector<Item> items;
  std::vector<Slot> slots;
  std::vector<Task> tasks;  // the captured tasks (Op::task points here)
  // The results' views: slot, offset from the slot's start, shape, strides.
  struct Result {
    int slot = 0;
    DType dtype = DType::Float64;
    int64_t offset = 0;
    Dims shape, strides;
    bool readonly = false;  // (broadcast_to, diagonal: as the traced result was)
  };
  std::vector<Result> results;
  // Parameters (numfuse.jit's numbering of the call's float arguments):
  // those the program reads from each run's values (Param slots), and
  // those whose traced value it used otherwise (baked in: the caller must
  // guard them). An argument may be in both.
  std::vector<int> params, fixed_params;
  int64_t traced_tasks = 0;  // tasks captured
  int64_t ops = 0;           // tasks in the rerolled program
  int64_t loops = 0;         // its loops
  int depth = 0;             // the deepest loop nesting
  std::string describe() const;
};

// Why a captured call cannot become a program ("" when it can).
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Rerolls a capture. `args`: the traced call's array arguments; `results`:
// the arrays it returned. Throws Unsupported with the reason for a program
// it cannot express (an operation kind it does not lower yet, an array
// viewed as two dtypes, ...).
std::shared_ptr<Program> build(Captured&& c, const std::vector<View>& args, const std::vector<View>& results);

}  // namespace nf::trace

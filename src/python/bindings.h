// pybind11 glue shared by the binding files. Conversions only; no logic.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/error.h"
#include "stream/stream.h"

namespace py = pybind11;

namespace nf::pipeline::detail {
extern thread_local bool t_fp_pending;  // (pipeline.h: fp_pending)
}  // namespace nf::pipeline::detail

namespace nf::py_bind {

// The Python-visible array: a view that counts as a Python reference to its
// buffer (the tiered count fusion reads).
//
// NdArrays are made and destroyed only with the GIL held (wrap, the type's
// dealloc, the capsule of a NumPy view), so the GIL orders every change to
// py_refs and a change is a load and a store, not a read-modify-write: on
// the machines measured an atomic read-modify-write costs about 8 ns, a
// twentieth of recording an operation. Readers on other threads (Stream::take)
// see one value or the other, never a torn one. Without a GIL (free-threaded
// CPython) the changes are atomic read-modify-writes.
inline void add_py_ref(Buffer& b, int32_t d) {
#ifdef Py_GIL_DISABLED
  b.py_refs.fetch_add(d, std::memory_order_relaxed);
#else
  b.py_refs.store(b.py_refs.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
#endif
}
struct NdArray {
  View v;
  // A 0-d result NumPy would have given as a scalar, kept lazy
  // (scalar_result): where NumPy treats scalars and 0-d arrays differently
  // (an integer stored into a narrower integer array: OverflowError for a
  // scalar out of range, a wrapping cast for an array) it acts as the scalar.
  bool deferred_scalar = false;
  explicit NdArray(View&& view) : v(std::move(view)) { add_py_ref(*v.buffer, 1); }
  explicit NdArray(const View& view) : v(view) { add_py_ref(*v.buffer, 1); }
  ~NdArray() { add_py_ref(*v.buffer, -1); }
  NdArray(const NdArray&) = delete;
  NdArray& operator=(const NdArray&) = delete;
};

// numfuse.ndarray's instances: a CPython object holding an NdArray inline
// (array_type.cc). The operators, indexing and the common attributes are
// type slots written in C++, so `a + b` costs no more dispatch than NumPy's.
struct PyNdArray {
  PyObject_HEAD
  PyObject* weakrefs;
  // NumPy's `.base`: the array owning the memory this one views (a strong
  // reference), or null for an array that owns its memory (Buffer::owner_object).
  PyObject* base;
  NdArray arr;  // constructed in place by wrap(), destroyed by the type's dealloc
};

// Sharing memory (sharing.cc): the buffer protocol, __array_interface__,
// __dlpack__ and __dlpack_device__ of numfuse.ndarray.
int nd_getbuffer(PyObject* self, Py_buffer* view, int flags);
void nd_releasebuffer(PyObject* self, Py_buffer* view);
PyObject* nd_array_interface(PyObject* self, void*);
PyObject* nd_data(PyObject* self, void*);    // .data: a memoryview of the array's memory
PyObject* nd_ctypes(PyObject* self, void*);  // .ctypes: NumPy's ctypes helper over that memory
PyObject* nd_dlpack(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
PyObject* nd_dlpack_device(PyObject* self, PyObject*);

// The type object (created at import by make_ndarray_type).
extern PyTypeObject* g_ndarray_type;
PyTypeObject* make_ndarray_type(py::module_& m);
// An iterator over a 1-D view yielding NumPy scalars (new reference, or null
// with a Python error set).
PyObject* make_element_iter(const View& v);

// Releases the GIL for a scope (use instead of py::gil_scoped_release).
// Once numfuse's exit handler has run (shutdown()), a thread other than
// the one finalizing the interpreter does not take the GIL back: CPython
// would end it from inside the destructor with a forced unwind, which C++
// turns into std::terminate ("terminate called without an active
// exception"). Such a thread parks instead, having finished its work.
class NoGil {
 public:
  NoGil();
  ~NoGil();
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;

 private:
  PyThreadState* state_;
};
// numfuse's atexit handler: stops background tuning, lets in-flight
// flushes finish, and from then on parks other threads leaving numfuse.
void shutdown();

// Held while an operation is recorded and its result wrapped (see
// Stream::gate). Waiting releases the GIL, so a thread holding the gate can
// always finish. When the outermost guard ends and the operation touched
// memory exported to NumPy, it flushes (which may raise).
class RecordGuard {
 public:
  RecordGuard();
  ~RecordGuard() noexcept(false);
  RecordGuard(const RecordGuard&) = delete;
  RecordGuard& operator=(const RecordGuard&) = delete;
};

// A new numfuse.ndarray over `v`. (The view is moved once, into the array:
// a View is about 160 bytes, and passing it on by value cost a move per
// call on the path of every operator.)
py::object wrap(View&& v);
inline py::object wrap(const View& v) { return wrap(View(v)); }
// The result of an operation NumPy returns as a scalar when it is 0-d (a
// ufunc, a full reduction, a vector dot product): a NumPy scalar if the
// value is computed (tier 0 ran it), else the 0-d array that will hold it.
py::object scalar_result(View&& v);
inline py::object scalar_result(const View& v) { return scalar_result(View(v)); }
inline bool is_ndarray(py::handle h) { return Py_TYPE(h.ptr()) == g_ndarray_type; }
// The array behind a numfuse.ndarray; TypeError for anything else.
NdArray& as_ndarray(py::handle h);
// Python's NotImplemented (a binding declines; the Python caller decides).
inline py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }
// The `out=` argument of a binding: null for None, the view of a numfuse
// array, NumPy's TypeError for anything else.
inline const View* out_view(py::handle out) {
  if (out.is_none()) return nullptr;
  if (!is_ndarray(out)) throw TypeError("return arrays must be of ArrayType");
  return &as_ndarray(out).v;
}
// Runs `f` (returning a new reference or nullptr with an exception set) with
// C++ exceptions translated to Python's, for functions CPython calls directly.
// Reports the floating-point events (pipeline::FpEvent) of what this thread
// computed as NumPy would (numpy.errstate: warn, raise, call, ...): called
// after each call into the bindings that computed something, and after each
// flush. Throws py::error_already_set when the report raised
// (FloatingPointError, warnings as errors).
void report_fp_events();
// While one lives on this thread, a report that raises puts its events back
// (the buffer protocol: NumPy ignores its errors and asks for
// __array_interface__ next, which reports them again and is heard).
struct FpRequeue {
  FpRequeue();
  ~FpRequeue();
  FpRequeue(const FpRequeue&) = delete;
  FpRequeue& operator=(const FpRequeue&) = delete;
  bool before;
};
template <typename F>
PyObject* guarded(F&& f) noexcept {
  try {
    PyObject* r = f();
    if (pipeline::detail::t_fp_pending && r) {
      try {
        report_fp_events();
      } catch (...) {
        Py_DECREF(r);
        throw;
      }
    }
    return r;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}
// Converts a Python value to an operand; false if numfuse cannot take it
// (caller returns NotImplemented or falls back to NumPy). A numfuse array
// is borrowed (Operand::borrow): `h` must outlive `out`.
bool to_operand(py::handle h, Operand& out);
// A (nested) list or tuple of Python bools, ints and floats (and NumPy
// bool, int64 and float64 scalars) as numpy.array makes it, without NumPy:
// rectangular, float64 with a float or no element, int64 with an int, else
// bool; `want` (float64 or int64) converts. False for anything else (the
// caller goes to NumPy, which decides or raises).
bool sequence_array(PyObject* o, std::optional<DType> want, View* out);
// Records ufunc op (UnaryOp for nin 1, BinaryOp for nin 2) on operands x, y
// with optional out=; NotImplemented when numfuse cannot take the operands
// or compute in the loop's type (the caller falls back to NumPy).
py::object record_ufunc(int nin, int op, py::handle x, py::handle y, py::handle out);
py::object dtype_object(DType t);
// A Python sequence of integers as Dims, and Dims (times `scale`) as a tuple.
Dims dims_of(py::handle seq);
py::tuple tuple_of(const Dims& d, int64_t scale = 1);
// numpy.dtype-like -> DType; nullopt for dtypes numfuse does not compute in.
std::optional<DType> to_dtype(py::handle h);
// Auto-flush before recording when the window is full.
void before_record();
// Flush everything pending; `reason` names the sync point for explain().
void flush_all(const char* reason);
// The user's source line of the last sync ("file:line"), for explain().
std::string last_sync_site();
// A NumPy array viewing a flushed numfuse array (keeps the buffer alive).
py::array to_numpy(const View& v, bool writeable);
// Wrap a NumPy array: copy into a new buffer, or adopt its memory when the
// caller guarantees nobody else holds it.
View from_numpy(py::handle arr, bool adopt);
// A NumPy array given as an operand (module.cc): copied, or used in place
// (and the operation run at the call) when large and NumPy's own memory.
View numpy_operand(py::handle arr);

// NumPy's C API (scalars.cc): call once at import.
void init_numpy_api();
// A NumPy array's dtype object (borrowed) and whether its data is in native
// byte order (`arr` must be a numpy.ndarray).
PyObject* numpy_array_descr(PyObject* arr);
// A NumPy integer scalar (numpy.int64(3), ...): an index like a Python int.
bool is_numpy_integer(PyObject* o);
bool numpy_array_native(PyObject* arr);
int64_t numpy_array_nbytes(PyObject* arr);
// An exact numpy.ndarray that owns its memory (no base): a fresh result.
bool numpy_fresh_array(PyObject* o);
bool is_numpy_generic_scalar(PyObject* o);  // numpy.float64(1.0), numpy.int64(3), ...
// A fresh (numpy_fresh_array), C-contiguous, aligned, native, writeable
// NumPy array of a dtype numfuse holds as a view of its memory (adopted:
// the array lives as long as the buffer); false for any other.
bool adopt_fresh_array(PyObject* o, View* out);
// Whether the memory behind a NumPy array is NumPy's: its base chain ends in
// an array that owns its memory (numfuse's exports end in a capsule).
bool numpy_owns_memory(PyObject* arr);
// A NumPy array of dtype `descr` over `data` (shape, strides in bytes) whose
// base is `base` (a reference this call consumes, also on failure): NumPy's
// C API directly. New reference, or nullptr with a Python error set.
PyObject* numpy_view(PyObject* descr, int nd, const int64_t* shape, const int64_t* byte_strides, void* data,
                     bool writeable, PyObject* base);
// The NumPy scalar of type t holding the element at `data` (copied).
py::object numpy_scalar(DType t, const void* data);
py::object numpy_scalar(const Scalar& value);
// The Python scalar (bool, int, float) of the element at `data`, as
// ndarray.item() gives it (new reference).
PyObject* python_scalar(DType t, const void* data);
// The value of a NumPy scalar (numpy.float64(2.5), numpy.uint8(7)): 1 with
// *out set, 0 when `o` is not a NumPy scalar, -1 for one of a type numfuse
// does not compute in (float16, complex, strings, ...).
int numpy_scalar_value(PyObject* o, Scalar* out);
// a[i, j, ...] with one integer per dimension: flushes what is pending and
// returns the element as a NumPy scalar, as NumPy does.
py::object element(const View& v, std::span<const IndexItem> items);
// Element `off` of v read during a capture (trace/trace.h): recorded as a
// copy, a deferred scalar.
py::object captured_element(const View& v, int64_t off);

// Reductions and matmul of numfuse arrays, as the _core functions and the
// fast C entry points (calls.cc) do them: tier 0 at once, or recorded.
py::object reduce_array(ReduceOp op, const View& v, py::handle axes, bool keepdims, py::handle dtype, py::handle out,
                        py::handle initial);
// a @ b, or numpy.dot(a, b) (numpy_dot: NumPy's copies of operands BLAS
// cannot address, which decide a dot product's bits).
py::object matmul_arrays(const View& a, const View& b, py::handle out, bool numpy_dot = false);
// ndarray's reduction methods (calls.cc), merged into the type's methods.
extern PyMethodDef g_reduction_methods[];
void bind_calls(py::module_& m);

void bind_array(py::module_& m);
void bind_scalar_slots(py::module_& m);  // (scalar_slots.cc)
// __array_ufunc__'s fast path for NumPy ufunc `ufunc`: its (nin, numfuse
// operation); false where it has none.
bool ufunc_fast_op(PyObject* ufunc, int* nin, int* op);
void bind_ufunc(py::module_& m);
void bind_functions(py::module_& m);
void bind_instructions(py::module_& m);  // (instructions.cc: callgrind's client requests)
void bind_targets(py::module_& m);       // (targets.cc)
void bind_jit(py::module_& m);
// numfuse._jit.TraceAbort (a BaseException: a traced function's own
// `except Exception` does not swallow it), raised for core TraceAbort.
extern PyObject* g_trace_abort;           // (jit.cc: numfuse.jit's capture and programs)
// numfuse._jit._Param: a traced call's float argument (a parameter of the
// program); nullptr until numfuse.jit is imported.
extern PyTypeObject* g_jit_param_type;
// `o` (of g_jit_param_type) as an operand: a Python float, marked as the
// parameter (Scalar::param) while this thread captures.
bool jit_param_operand(PyObject* o, Operand& out);
// numfuse._jit._trace_iter: iter(a) while this thread captures (the loop's
// iterations marked for rerolling, as `range`'s are); nullptr until
// numfuse.jit is imported.
extern PyObject* g_trace_iter;

}  // namespace nf::py_bind

// Functions taking `const NdArray&` accept numfuse.ndarray objects.
namespace pybind11::detail {
template <>
struct type_caster<nf::py_bind::NdArray> {
  nf::py_bind::NdArray* value = nullptr;
  static constexpr auto name = const_name("numfuse.ndarray");
  bool load(handle src, bool) {
    if (!nf::py_bind::is_ndarray(src)) return false;
    value = &reinterpret_cast<nf::py_bind::PyNdArray*>(src.ptr())->arr;
    return true;
  }
  operator nf::py_bind::NdArray&() { return *value; }
  operator nf::py_bind::NdArray*() { return value; }
  template <typename T>
  using cast_op_type = pybind11::detail::cast_op_type<T>;
};
}  // namespace pybind11::detail

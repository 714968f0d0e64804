// The numfuse._core extension: conversions between Python and the core, the
// sync-point plumbing, and the hooks the Python layer installs.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "core/small_vector.h"
#include "jit/jit.h"
#include "pipeline/pipeline.h"
#include "python/bindings.h"
#include "trace/trace.h"
#include "runtime/runtime.h"

namespace nf::py_bind {

namespace {

// Module-lifetime references, deliberately never released: Python objects
// must not be destroyed by C++ static destructors after interpreter shutdown.
py::handle g_dtypes[kNumDTypes];
py::handle g_np_ndarray, g_np_asarray, g_np_copyto, g_np_dtype;
// Hooks installed by python/numfuse (see numfuse/_hooks.py).
py::handle g_sync_site, g_warn, g_dump, g_fp_report;

}  // namespace

namespace {
[[gnu::tls_model("initial-exec")]] thread_local int t_guard_depth = 0;  // (no __tls_get_addr call)

std::atomic<bool> g_exiting{false};
std::thread::id g_exit_thread;
std::atomic<int> g_restoring{0};  // threads between the exit check and holding the GIL again

[[noreturn]] void park() {
  for (;;) pause();
}
}  // namespace

NoGil::NoGil() : state_(PyEval_SaveThread()) {}

NoGil::~NoGil() {
  g_restoring.fetch_add(1);
  if (g_exiting.load() && std::this_thread::get_id() != g_exit_thread) {
    g_restoring.fetch_sub(1);
    park();
  }
  PyEval_RestoreThread(state_);
  g_restoring.fetch_sub(1);
}

void shutdown() {
  {
    NoGil nogil;
    pipeline::background_stop();
    jit::CpuCompiler::instance().wait_warm_up();
  }
  g_exit_thread = std::this_thread::get_id();
  g_exiting.store(true);
  // Let threads already taking the GIL back have it (the interpreter is not
  // finalizing yet), and let running flushes end: after this handler the
  // runtime goes away under whatever still runs.
  PyThreadState* st = PyEval_SaveThread();
  while (g_restoring.load() > 0 || !pipeline::idle()) usleep(200);
  PyEval_RestoreThread(st);
}

RecordGuard::RecordGuard() {
  std::recursive_mutex& g = global_stream().gate();
  if (!g.try_lock()) {
    NoGil nogil;
    g.lock();
  }
  ++t_guard_depth;
}

RecordGuard::~RecordGuard() noexcept(false) {
  global_stream().gate().unlock();
  // The result of the outermost operation is wrapped by now (it was built
  // before the guard's scope ended), so it counts as live.
  if (--t_guard_depth != 0) return;
  Stream& s = global_stream();
  // Tier eager runs every operation at the call: one that was recorded (a
  // form tier 0 has no direct loop for) is flushed here.
  // (A capture keeps every operation: tier eager computes nothing at the call then.)
  const bool eager = pipeline::config().tier == pipeline::Tier::Eager && s.size() > 0 && !t_capturing;
  if (!(s.sync_requested() || s.settle_requested() || eager) || std::uncaught_exceptions() != 0) return;
  if (s.take_sync_request()) {
    s.take_settle_request();
    flush_all("operation on memory shared with NumPy");
  } else if (s.take_settle_request()) {
    flush_all("a small operation read pending results of large ones: the small ones after it run at once");
  } else if (eager) {
    flush_all("tier eager");
  }
}

py::object scalar_result(View&& v) {
  if (v.ndim() == 0 && pipeline::config().tier == pipeline::Tier::Eager && !t_capturing &&
      v.buffer->pending_write())
    flush_all("tier eager");  // (a scalar, as tier 0 gives it)
  if (v.ndim() != 0) return wrap(std::move(v));
  if (v.buffer->pending_write()) {
    py::object r = wrap(std::move(v));
    as_ndarray(r).deferred_scalar = true;
    return r;
  }
  return numpy_scalar(v.dtype, static_cast<const char*>(v.buffer->data()) + v.offset * itemsize(v.dtype));
}

Dims dims_of(py::handle seq) {
  Dims d;
  for (py::handle x : seq) d.push_back(x.cast<int64_t>());
  return d;
}

py::tuple tuple_of(const Dims& d, int64_t scale) {
  const Py_ssize_t n = static_cast<Py_ssize_t>(d.size());
  PyObject* t = PyTuple_New(n);
  if (!t) throw py::error_already_set();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* x = PyLong_FromLongLong(d[i] * scale);
    if (!x) {
      Py_DECREF(t);
      throw py::error_already_set();
    }
    PyTuple_SET_ITEM(t, i, x);
  }
  return py::reinterpret_steal<py::tuple>(t);
}

py::object dtype_object(DType t) { return py::reinterpret_borrow<py::object>(g_dtypes[static_cast<int>(t)]); }

std::optional<DType> to_dtype(py::handle h) {
  if (h.is_none()) return std::nullopt;
  // (numpy.dtype would read a numfuse array's .dtype; NumPy refuses arrays.)
  if (is_ndarray(h)) throw TypeError("Cannot construct a dtype from an array");
  for (int i = 0; i < kNumDTypes; ++i)
    if (h.ptr() == g_dtypes[i].ptr()) return static_cast<DType>(i);
  // Type objects (float, numpy.float32, ...) live as long as the process:
  // their answers are kept (a type numfuse does not hold: kNumDTypes).
  static std::unordered_map<PyObject*, int> by_type;
  const bool is_type = PyType_Check(h.ptr());
  if (is_type) {
    auto it = by_type.find(h.ptr());
    if (it != by_type.end()) {
      if (it->second == kNumDTypes) return std::nullopt;
      return static_cast<DType>(it->second);
    }
  }
  py::object dt = g_np_dtype(h);
  std::string name = py::str(dt.attr("name"));
  std::optional<DType> t = dtype_from_name(name);
  if (is_type) {
    Py_INCREF(h.ptr());  // (kept in the table for good)
    by_type[h.ptr()] = t ? static_cast<int>(*t) : kNumDTypes;
  }
  return t;
}

namespace {
// One element of a sequence sequence_array() converts: its kind (0 bool,
// 1 integer, 2 float) and value, or false for anything else (a NumPy
// scalar of another type than bool, int64 or float64; complex; str; an
// int beyond int64: NumPy's uint64, object or OverflowError).
struct Leaf {
  int kind = 0;
  long long i = 0;
  double f = 0.0;
};
bool leaf_value(PyObject* x, Leaf* out) {
  if (PyFloat_CheckExact(x)) {
    out->kind = 2;
    out->f = PyFloat_AS_DOUBLE(x);
    return true;
  }
  if (PyLong_CheckExact(x)) {
    int overflow = 0;
    out->kind = 1;
    out->i = PyLong_AsLongLongAndOverflow(x, &overflow);
    return !overflow;
  }
  if (PyBool_Check(x)) {
    out->kind = 0;
    out->i = x == Py_True;
    return true;
  }
  Scalar s;
  if (numpy_scalar_value(x, &s) != 1) {
    PyErr_Clear();
    return false;
  }
  switch (s.dtype) {
    case DType::Float64: out->kind = 2; out->f = s.f; return true;
    case DType::Int64: out->kind = 1; out->i = s.i; return true;
    case DType::Bool: out->kind = 0; out->i = s.i != 0; return true;
    default: return false;
  }
}

bool find_shape(PyObject* o, Dims& shape) {
  // Down the first elements: the shape NumPy would discover if it is regular.
  while (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (shape.size() >= 32) return false;
    shape.push_back(n);
    if (n == 0) break;
    o = PySequence_Fast_ITEMS(o)[0];
  }
  return true;
}
}  // namespace

bool sequence_array(PyObject* o, std::optional<DType> want, View* out) {
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) return false;
  Dims shape;
  if (!find_shape(o, shape)) return false;
  std::vector<PyObject*> leaves;
  leaves.reserve(static_cast<size_t>(std::max<int64_t>(shape_size(shape), 0)));
  {
    // Rectangular, leaves at the last depth (a depth whose first element
    // is an empty sequence ends the shape there: `[[], []]` is (2, 0)).
    std::function<bool(PyObject*, size_t)> rec = [&](PyObject* s, size_t depth) -> bool {
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(s);
      if (n != shape[depth]) return false;
      PyObject** items = PySequence_Fast_ITEMS(s);
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* x = items[i];
        const bool seq = PyList_CheckExact(x) || PyTuple_CheckExact(x);
        if (seq != (depth + 1 < shape.size())) return false;  // (ragged: NumPy's ValueError)
        if (seq ? !rec(x, depth + 1) : (leaves.push_back(x), false)) return false;
      }
      return true;
    };
    if (!rec(o, 0)) return false;
  }
  std::vector<Leaf> values(leaves.size());
  int kind = -1;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaf_value(leaves[i], &values[i])) return false;
    kind = std::max(kind, values[i].kind);
  }
  // NumPy's discovered type: float64 with a float (or no element at all),
  // int64 with an int, else bool; a requested float64 or int64 converts
  // (an int64 array takes no float: NumPy truncates, and refuses NaN).
  DType t = kind == 2 || kind < 0 ? DType::Float64 : kind == 1 ? DType::Int64 : DType::Bool;
  if (want) {
    if (*want == DType::Int64 && kind == 2) return false;
    if (*want != DType::Float64 && *want != DType::Int64) return false;
    t = *want;
  }
  View v = View::fresh(t, shape);
  if (!values.empty()) {
    char* d = static_cast<char*>(v.buffer->data());
    if (t == DType::Float64) {
      double* p = reinterpret_cast<double*>(d);
      for (size_t i = 0; i < values.size(); ++i) p[i] = values[i].kind == 2 ? values[i].f : static_cast<double>(values[i].i);
    } else if (t == DType::Int64) {
      int64_t* p = reinterpret_cast<int64_t*>(d);
      for (size_t i = 0; i < values.size(); ++i) p[i] = values[i].i;
    } else {
      for (size_t i = 0; i < values.size(); ++i) d[i] = static_cast<char>(values[i].i != 0);
    }
  }
  *out = std::move(v);
  return true;
}

bool to_operand(py::handle h, Operand& out) {
  PyObject* o = h.ptr();
  if (Py_TYPE(o) == g_ndarray_type) {
    out.borrow_from(reinterpret_cast<PyNdArray*>(o)->arr.v);
    return true;
  }
  if (PyFloat_CheckExact(o)) {
    out.kind = Operand::Kind::Weak;
    out.weak = WeakKind::Float;
    out.value = Scalar::of_float(DType::Float64, PyFloat_AS_DOUBLE(o));
    return true;
  }
  if (PyBool_Check(o)) {
    out.kind = Operand::Kind::Weak;
    out.weak = WeakKind::Bool;
    out.value = Scalar::of_bool(o == Py_True);
    return true;
  }
  if (PyLong_CheckExact(o)) {
    out.kind = Operand::Kind::Weak;
    out.weak = WeakKind::Int;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) {
      out.value = Scalar::of_int(DType::Int64, v);
      return true;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (!PyErr_Occurred()) {
      out.value = Scalar::of_uint(DType::UInt64, u);
      return true;
    }
    PyErr_Clear();
    out.huge = true;
    double d = PyLong_AsDouble(o);
    if (PyErr_Occurred()) throw py::error_already_set();  // OverflowError: int too large to convert to float
    out.value = Scalar::of_float(DType::Float64, d);
    return true;
  }
  if (Py_TYPE(o) == g_jit_param_type) return jit_param_operand(o, out);
  if (const int r = numpy_scalar_value(o, &out.value); r != 0) {
    if (r < 0) return false;
    out.kind = Operand::Kind::Strong;
    return true;
  }
  if (PyFloat_Check(o) || PyLong_Check(o)) {  // subclasses of float / int
    return to_operand(py::reinterpret_steal<py::object>(PyNumber_Float(o)), out);
  }
  if (PyComplex_Check(o)) {  // a Python complex (or subclass): weak, like float
    const Py_complex c = PyComplex_AsCComplex(o);
    if (PyErr_Occurred()) throw py::error_already_set();
    out.kind = Operand::Kind::Weak;
    out.weak = WeakKind::Complex;
    out.value = Scalar::of_complex(DType::Complex128, c.real, c.imag);
    return true;
  }
  py::object arr;
  if (PyObject_IsInstance(o, g_np_ndarray.ptr()) == 1) {
    arr = py::reinterpret_borrow<py::object>(h);
  } else if (PyList_Check(o) || PyTuple_Check(o)) {
    if (View v; (PyList_CheckExact(o) || PyTuple_CheckExact(o)) && PySequence_Fast_GET_SIZE(o) > 0 &&
                sequence_array(o, std::nullopt, &v)) {
      out = Operand::array(v);
      return true;
    }
    arr = g_np_asarray(h);
  } else {
    return false;
  }
  std::optional<DType> t = to_dtype(arr.attr("dtype"));
  if (!t) return false;
  out = Operand::array(numpy_operand(arr));
  return true;
}

View numpy_operand(py::handle arr) {
  // A NumPy operand is read at the call, as NumPy reads it. A small one is
  // copied (the operation is recorded and may fuse with what follows). A
  // large one whose memory is NumPy's is used in place, without the copy:
  // its buffer counts as exported, so the operation runs before the call
  // returns (stream.cc) and a later change to the NumPy array cannot reach
  // it. (Memory that may be numfuse's own, a view of an exported array, is
  // copied: numfuse's alias analysis does not see through NumPy views.)
  constexpr int64_t kInPlaceBytes = 64 * 1024;
  if (numpy_array_nbytes(arr.ptr()) < kInPlaceBytes || !numpy_owns_memory(arr.ptr())) return from_numpy(arr, false);
  View v = from_numpy(arr, true);  // (a copy where it cannot adopt: unaligned, byte-swapped)
  if (v.buffer->adopted()) v.buffer->exports.fetch_add(1);
  return v;
}

void before_record() {
  Stream& s = global_stream();
  if (s.size() >= s.cut_at()) [[unlikely]] {
    // A capture keeps its whole call in the window (bounded: trace.h).
    if (t_capturing) {
      if (s.size() > kMaxCapturedTasks)
        capture_abort("it runs more than " + std::to_string(kMaxCapturedTasks) + " operations in one call");
      return;
    }
    flush_all("window full");
  }
}

// Where the program synced: the innermost frame outside numfuse's own
// modules. Every sync records it (code object and instruction offset, no
// formatting); explain() turns the last one into "file:line".
namespace {
PyObject* g_site_code = nullptr;  // strong reference, or null
int g_site_lasti = -1;
std::string g_site_text = "?";  // Python < 3.11: formatted at the sync
}  // namespace

#if PY_VERSION_HEX >= 0x030B0000
namespace {
// Whether a frame runs numfuse's own code (its module is numfuse or
// numfuse.*), remembered per code object: a loop that syncs every
// iteration asks about the same few frames each time, and looking up the
// module's name cost more than the rest of a memoized flush's bookkeeping.
// (A code object runs with its module's globals; the cache holds strong
// references, so an address is never reused while it is cached.)
bool runs_numfuse_code(PyFrameObject* f, PyObject* code) {
  struct Known {
    PyObject* code = nullptr;
    bool ours = false;
  };
  static Known known[16];
  static unsigned next = 0;
  for (const Known& k : known)
    if (k.code == code) return k.ours;
  PyObject* globals = PyFrame_GetGlobals(f);  // new reference
  static PyObject* const key = PyUnicode_InternFromString("__name__");  // immortal: never released
  PyObject* name = globals ? PyDict_GetItemWithError(globals, key) : nullptr;  // borrowed
  const char* mod = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  const bool ours = mod && (std::strcmp(mod, "numfuse") == 0 || std::strncmp(mod, "numfuse.", 8) == 0);
  Py_XDECREF(globals);
  PyErr_Clear();
  Known& k = known[next++ % std::size(known)];
  Py_XDECREF(k.code);
  Py_INCREF(code);
  k.code = code;
  k.ours = ours;
  return ours;
}
}  // namespace
#endif

void note_sync_site() {
#if PY_VERSION_HEX >= 0x030B0000
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  while (f) {
    PyObject* code = reinterpret_cast<PyObject*>(PyFrame_GetCode(f));  // new reference
    if (!runs_numfuse_code(f, code)) {
      if (code == g_site_code) {
        Py_DECREF(code);
      } else {
        Py_XDECREF(g_site_code);
        g_site_code = code;
      }
      g_site_lasti = PyFrame_GetLasti(f);
      Py_DECREF(f);
      return;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(g_site_code);
  g_site_code = nullptr;
#else
  g_site_text = g_sync_site ? std::string(py::str(g_sync_site())) : std::string("?");
#endif
}

namespace {
thread_local bool t_fp_requeue = false;
}  // namespace

FpRequeue::FpRequeue() : before(t_fp_requeue) { t_fp_requeue = true; }
FpRequeue::~FpRequeue() { t_fp_requeue = before; }

void report_fp_events() {
  std::vector<pipeline::FpEvent> events = pipeline::take_fp_events();
  if (!g_fp_report || events.empty()) return;
  py::list list;
  for (const pipeline::FpEvent& e : events) {
    py::tuple ops(e.ops.size());
    for (size_t i = 0; i < e.ops.size(); ++i) ops[i] = py::str(e.ops[i]);
    list.append(py::make_tuple(static_cast<int>(e.flags), ops));
  }
  try {
    g_fp_report(list);  // may raise (FloatingPointError, warnings as errors): propagates
  } catch (...) {
    if (t_fp_requeue)
      for (pipeline::FpEvent& e : events) pipeline::detail::note_fp(e.flags, std::move(e.ops));
    throw;
  }
}

std::string last_sync_site() {
#if PY_VERSION_HEX >= 0x030B0000
  if (!g_site_code) return "?";
  PyCodeObject* code = reinterpret_cast<PyCodeObject*>(g_site_code);
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  const int line = PyCode_Addr2Line(code, g_site_lasti);
  PyErr_Clear();
  return std::string(file ? file : "?") + ":" + std::to_string(line);
#else
  return g_site_text;
#endif
}

void flush_all(const char* reason) {
  if (t_capturing) capture_abort(std::string("Python needs a value computed inside the call (") + reason + ")");
  // Nothing recorded and nothing being computed by another thread's flush.
  if (global_stream().size() == 0 && pipeline::idle()) {
    if (pipeline::fp_pending()) report_fp_events();  // (errors of work computed at an earlier call)
    return;
  }
  pipeline::FlushReport rep;
  rep.sync_reason = reason;
  note_sync_site();
  std::vector<Task> done;
  {
    // The GIL is given up once the flush waits or works long (pipeline::flush).
    struct GilReleaser final : pipeline::Releaser {
      std::optional<NoGil> nogil;
      void release() override { nogil.emplace(); }
    } releaser;
    done = pipeline::flush(&rep, &releaser);
  }
  done.clear();  // buffer releases may need the GIL: drop tasks while holding it
  global_stream().recycle(std::move(done));
  for (const std::string& w : rep.warnings)
    if (g_warn) g_warn(w);  // may raise (warnings as errors): propagates
  if (pipeline::fp_pending()) report_fp_events();
  if (pipeline::config().dump && g_dump) {
    for (const pipeline::GroupReport& g : rep.groups) {
      if (g.key().empty()) continue;
      std::string text = std::string("numfuse kernel (") +
                         (g.tier0       ? "tier 0"
                          : g.cache_hit ? "cache hit"
                          : g.disk_hit  ? "loaded from disk cache"
                                        : "compiled") +
                         ")\n" +
                         g.mdh_text() + "\nschedule: " + g.schedule_text() + "\n";
      if (!g.source.empty()) text += g.source;
      g_dump(text);
    }
  }
}

py::array to_numpy(const View& v, bool writeable) {
  flush_all("conversion to NumPy");
  const int nd = static_cast<int>(v.ndim());
  SmallVector<int64_t, 8> strides(nd, 0);
  const int64_t is = itemsize(v.dtype);
  for (int k = 0; k < nd; ++k) strides[k] = v.strides[k] * is;
  char* base = static_cast<char*>(v.buffer->data()) + v.offset * is;
  // The NumPy array's base: a capsule holding a reference to the buffer that
  // also marks it exported for as long as the NumPy array (or a view of it)
  // lives.
  auto* holder = new NdArray(v);
  v.buffer->exports.fetch_add(1);
  PyObject* keep = PyCapsule_New(holder, nullptr, [](PyObject* c) {
    auto* a = static_cast<NdArray*>(PyCapsule_GetPointer(c, nullptr));
    a->v.buffer->exports.fetch_sub(1);
    delete a;
  });
  if (!keep) {
    v.buffer->exports.fetch_sub(1);
    delete holder;
    throw py::error_already_set();
  }
  PyObject* arr = numpy_view(g_dtypes[static_cast<int>(v.dtype)].ptr(), nd, v.shape.data(), strides.data(), base,
                             writeable && !v.readonly, keep);
  if (!arr) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(arr);
}

py::object captured_element(const View& v, int64_t off) {
  // The element copied by the program, a deferred scalar until it runs.
  View e = v;
  e.offset = off;
  e.shape.clear();
  e.strides.clear();
  RecordGuard guard;
  const bool readable = trace::content_readable(v.buffer.get());  // (before the copy is recorded)
  py::object r = scalar_result(record_astype(e, e.dtype, CastLayout::C));
  if (readable && is_ndarray(r)) trace::note_element(as_ndarray(r).v.buffer.get(), e);
  return r;
}

py::object element(const View& v, std::span<const IndexItem> items) {
  const int64_t off = element_offset(v, items);  // bounds checks, NumPy's IndexError
  if (t_capturing) return captured_element(v, off);
  // Pending writes to this memory (or another thread's flush of them) run
  // first; an element of computed memory is read at once.
  if (v.buffer->pending_write()) flush_all("element access");
  const char* base = static_cast<const char*>(v.buffer->data());
  return numpy_scalar(v.dtype, base + off * itemsize(v.dtype));
}

View from_numpy(py::handle h, bool adopt) {
  if (!py::isinstance<py::array>(h)) throw TypeError("expected a numpy.ndarray");
  py::array arr = py::reinterpret_borrow<py::array>(h);
  std::optional<DType> t = to_dtype(py::handle(numpy_array_descr(h.ptr())));
  if (!t) throw TypeError("numfuse cannot hold arrays of dtype " + std::string(py::str(arr.attr("dtype"))));
  const int64_t is = itemsize(*t);
  Dims shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.push_back(arr.shape(i));
  bool aligned = true;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i)
    if (arr.strides(i) % is != 0) aligned = false;
  if (adopt && aligned && numpy_array_native(h.ptr())) {
    // Point at NumPy's memory; the buffer spans the array's whole extent.
    View v;
    v.dtype = *t;
    v.shape = shape;
    int64_t lo = 0, hi = 0;
    for (py::ssize_t i = 0; i < arr.ndim(); ++i) {
      int64_t s = arr.strides(i) / is;
      v.strides.push_back(s);
      if (shape[i] > 0) (s < 0 ? lo : hi) += s * (shape[i] - 1);
    }
    v.offset = -lo;
    char* start = static_cast<char*>(const_cast<void*>(arr.data())) + lo * is;
    PyObject* owner = arr.ptr();
    Py_INCREF(owner);
    v.buffer = Buffer::adopt(start, (hi - lo + 1) * is, [owner] {
      py::gil_scoped_acquire gil;
      Py_DECREF(owner);
    });
    return v;
  }
  // A copy keeps the array's memory order (NumPy's order='K': axes by
  // decreasing |stride|), so numfuse.asarray(F-ordered) is F-ordered as
  // numpy.asarray's result is.
  std::vector<int> order(shape.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return std::llabs(static_cast<long long>(arr.strides(x))) > std::llabs(static_cast<long long>(arr.strides(y)));
  });
  View v = shape.size() < 2 ? View::fresh(*t, shape) : View::fresh_in_order(*t, shape, order);
  if (v.size() == 0 && aligned) {
    // numpy.asarray returns an empty array as it is, strides and all (an
    // empty F-ordered array made by reshape keeps C strides, and a reduction
    // of it takes its layout from them): so does the copy, which no stride
    // can take out of its (empty) buffer.
    for (py::ssize_t i = 0; i < arr.ndim(); ++i) v.strides[i] = arr.strides(i) / is;
  } else if (v.size() > 0 && aligned && numpy_array_native(h.ptr()) && [&] {
               for (size_t i = 0; i < shape.size(); ++i)
                 if (shape[i] > 1 && arr.strides(static_cast<py::ssize_t>(i)) != v.strides[i] * is) return false;
               return true;
             }()) {
    // Dense in the copy's own order: the bytes as they are.
    std::memcpy(v.buffer->data(), arr.data(), static_cast<size_t>(v.size() * is));
  } else if (v.size() > 0) {
    // Copy through NumPy (handles any strides, byte order and alignment).
    std::vector<py::ssize_t> dst_strides;
    for (int64_t s : v.strides) dst_strides.push_back(s * is);
    std::vector<py::ssize_t> pshape(shape.begin(), shape.end());
    py::array dst(py::dtype::from_args(dtype_object(*t)), pshape, dst_strides, v.buffer->data(), py::none());
    g_np_copyto(dst, arr, py::arg("casting") = "unsafe");
  }
  return v;
}

}  // namespace nf::py_bind

using namespace nf;
using namespace nf::py_bind;
using namespace pybind11::literals;

PYBIND11_MODULE(_core, m) {
  m.doc() = "numfuse C++ core: recording, fusion, MDH lowering and JIT compilation";
  py::module_ np = py::module_::import("numpy");
  for (int i = 0; i < kNumDTypes; ++i) g_dtypes[i] = np.attr("dtype")(dtype_name(static_cast<DType>(i))).release();
  g_np_ndarray = py::object(np.attr("ndarray")).release();
  g_np_asarray = py::object(np.attr("asarray")).release();
  g_np_copyto = py::object(np.attr("copyto")).release();
  g_np_dtype = py::object(np.attr("dtype")).release();

  init_numpy_api();
  runtime::forget_stale_openmp_registration();
  // pybind11 sets up its view of NumPy's C API lazily, inside a
  // std::call_once whose initializer runs Python code (it imports
  // numpy.lib to read NumPy's version). If that first happened during a
  // sync, a signal handler running numfuse code inside that Python code
  // would wait on the same once forever: do it now, at import.
  {
    std::vector<py::ssize_t> shape{1};
    py::array warm(py::dtype::from_args(dtype_object(DType::Float64)), shape);
    (void)warm;
  }
  bind_array(m);
  bind_scalar_slots(m);
  bind_ufunc(m);
  bind_calls(m);
  bind_functions(m);
  bind_instructions(m);
  bind_targets(m);
  bind_jit(m);
  pipeline::install_tier0();

  m.def("_set_fp_report", [](py::object report) { g_fp_report = report.release(); });
  m.def("_set_hooks", [](py::object resolver, py::object sync_site, py::object warn, py::object dump) {
    g_sync_site = sync_site.release();
    g_warn = warn.release();
    g_dump = dump.release();
    py::handle res = resolver.release();
    set_loop_resolver([res](const char* name, int nin, const int* descs) {
      py::list args;
      for (int i = 0; i < nin; ++i) args.append(descs[i]);
      py::tuple r = res(name, args);
      Loop l;
      l.in[0] = static_cast<DType>(r[0].cast<int>());
      l.in[1] = static_cast<DType>(r[1].cast<int>());
      l.out = static_cast<DType>(r[2].cast<int>());
      return l;
    });
  });

  // Initialize the compiler in the background while the program records.
  jit::CpuCompiler::instance().warm_up_async();
  m.def("_wait_warm_up", []() {
    NoGil nogil;
    jit::CpuCompiler::instance().wait_warm_up();
  });
  m.def("_shutdown", []() { shutdown(); });
  // os.register_at_fork hooks (numfuse/__init__.py); the rest of the fork
  // protocol runs in pthread_atfork handlers (pipeline.h).
  m.def("_before_fork", []() {
    NoGil nogil;  // waiting here must not hold the GIL a flushing thread may need
    jit::CpuCompiler::instance().wait_warm_up();
    pipeline::fork_prepare();
  });
  m.def("_fork_abandoned", []() { pipeline::fork_abandoned(); });

  // Translate core errors to NumPy's exception types.
  static py::handle axis_error = py::object(np.attr("exceptions").attr("AxisError")).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nf::AxisError& e) {
      py::object err = axis_error(e.axis, e.ndim);
      PyErr_SetObject(axis_error.ptr(), err.ptr());
    } catch (const nf::OutputCastingError& e) {
      // Raise NumPy's own exception class (a TypeError subclass).
      py::module_ np = py::module_::import("numpy");
      py::object cls = py::module_::import("numpy._core._exceptions").attr("_UFuncOutputCastingError");
      if (py::hasattr(np, e.ufunc.c_str())) {
        py::object err = cls(np.attr(e.ufunc.c_str()), "same_kind", dtype_object(static_cast<nf::DType>(e.from)),
                             dtype_object(static_cast<nf::DType>(e.to)), 0);
        PyErr_SetObject(cls.ptr(), err.ptr());
      } else {
        PyErr_SetString(PyExc_TypeError, e.what());
      }
    } catch (const nf::MemoryError& e) {
      // NumPy's own MemoryError subclass, which formats "Unable to allocate
      // 7.28 TiB for an array with shape (...) and data type float64".
      if (e.dtype >= 0) {
        py::object cls = py::module_::import("numpy._core._exceptions").attr("_ArrayMemoryError");
        py::tuple shape(e.shape.size());
        for (size_t i = 0; i < e.shape.size(); ++i) shape[i] = py::int_(e.shape[i]);
        py::object err = cls(shape, dtype_object(static_cast<nf::DType>(e.dtype)));
        PyErr_SetObject(cls.ptr(), err.ptr());
      } else {
        std::string msg = e.nbytes > 0 ? "Unable to allocate " + std::to_string(e.nbytes) +
                                              " bytes while computing pending results; they are still pending"
                                        : "Out of memory while computing pending results; they are still pending";
        PyErr_SetString(PyExc_MemoryError, msg.c_str());
      }
    } catch (const nf::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nf::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const nf::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const nf::OverflowError& e) {
      PyErr_SetString(PyExc_OverflowError, e.what());
    } catch (const nf::TraceAbort& e) {
      if (g_trace_abort) PyErr_SetString(g_trace_abort, e.what());
      else PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const nf::jit::CompileError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

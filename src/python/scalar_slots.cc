// NumPy scalars on the left of an operator with a numfuse array.
//
// `alpha * A[i, k] * A[:i, k]`: A[i, k] is a NumPy scalar (numpy.float64),
// so the product's left operand is NumPy's. NumPy's scalar operator does
// not return NotImplemented to an operand that defines __array_ufunc__: it
// converts itself to an array, calls the ufunc (numpy.multiply), whose
// override check finds numfuse's __array_ufunc__ and calls it with
// (numpy.multiply, "__call__", s, x). That detour costs about 300 ns per
// operation -- more than NumPy's whole operation on a small array, so loops
// that scale rows by an element ran slower than NumPy.
//
// _install_scalar_operators() (called once, after the ufuncs are
// registered) puts in the number slots of NumPy's scalar types (and their
// rich comparison) a function that, when the other operand is a numfuse
// array, runs the very fast path __array_ufunc__ would have reached --
// record_ufunc with the ufunc's operation and the operands in their order
// -- and otherwise (or where that path declines) calls NumPy's own slot.
// Results, types, warnings and errors are those of the detour; only the
// detour's cost is gone. Power (its integer-power checks live in Python)
// and divmod keep NumPy's slots.
#include "python/bindings.h"

#include <algorithm>
#include <array>
#include <utility>
#include <unordered_map>

namespace nf::py_bind {

namespace {

// The binary number slots handled, and the NumPy ufunc each one calls.
enum Slot { Add, Subtract, Multiply, Divide, FloorDivide, Remainder, And, Or, Xor, LShift, RShift, kSlots };
constexpr const char* kSlotUfunc[kSlots] = {"add",         "subtract", "multiply",    "divide",
                                            "floor_divide", "remainder", "bitwise_and", "bitwise_or",
                                            "bitwise_xor",  "left_shift", "right_shift"};
binaryfunc PyNumberMethods::*const kSlotField[kSlots] = {
    &PyNumberMethods::nb_add,    &PyNumberMethods::nb_subtract,     &PyNumberMethods::nb_multiply,
    &PyNumberMethods::nb_true_divide, &PyNumberMethods::nb_floor_divide, &PyNumberMethods::nb_remainder,
    &PyNumberMethods::nb_and,    &PyNumberMethods::nb_or,           &PyNumberMethods::nb_xor,
    &PyNumberMethods::nb_lshift, &PyNumberMethods::nb_rshift};
// Py_LT .. Py_GE -> ufunc.
constexpr const char* kCompareUfunc[6] = {"less", "less_equal", "equal", "not_equal", "greater", "greater_equal"};

// numfuse's operation for each slot and comparison (-1: not on the fast path).
int g_slot_op[kSlots];
int g_compare_op[6];

// Operations that took the fast path (tests: _scalar_operator_hits).
int64_t g_hits = 0;

// One NumPy scalar type's own slots, saved before they were replaced.
struct Originals {
  binaryfunc slot[kSlots] = {};
  richcmpfunc compare = nullptr;
};
std::unordered_map<PyTypeObject*, Originals> g_originals;

// The saved slots of `t` or of the NumPy scalar type it derives from (a
// subclass made after the install inherits the replacement).
const Originals& originals_of(PyTypeObject* t) {
  for (PyTypeObject* b = t; b; b = b->tp_base) {
    auto it = g_originals.find(b);
    if (it != g_originals.end()) return it->second;
  }
  static const Originals none;
  return none;
}

// x (a NumPy scalar) op y (a numfuse array) through the ufunc's fast path:
// a new reference (Py_NotImplemented when that path declines), or nullptr
// with an error set.
PyObject* fast(int op, PyObject* x, PyObject* y) {
  ++g_hits;
  return guarded([&]() -> PyObject* {
    return record_ufunc(2, op, py::handle(x), py::handle(y), py::none()).release().ptr();
  });
}

template <int K>
PyObject* binary_slot(PyObject* a, PyObject* b);
template <size_t... K>
constexpr std::array<binaryfunc, kSlots> make_slots(std::index_sequence<K...>) {
  return {&binary_slot<static_cast<int>(K)>...};
}
constexpr std::array<binaryfunc, kSlots> kReplacement = make_slots(std::make_index_sequence<kSlots>());

// NumPy's slot K of type t where Python would call the replacement for t
// (t is a NumPy scalar type, or derives one without its own operator);
// nullptr for any other type (Python calls that one itself).
binaryfunc original_slot(PyTypeObject* t, int k) {
  if (!t->tp_as_number || t->tp_as_number->*kSlotField[k] != kReplacement[k]) return nullptr;
  return originals_of(t).slot[k];
}

template <int K>
PyObject* binary_slot(PyObject* a, PyObject* b) {
  if (Py_TYPE(b) == g_ndarray_type && Py_TYPE(a) != g_ndarray_type && g_slot_op[K] >= 0) {
    PyObject* r = fast(g_slot_op[K], a, b);
    if (r != Py_NotImplemented) return r;
    Py_DECREF(r);
  }
  // What Python's binary operator would have done with NumPy's slots: the
  // replacement is one function for every NumPy scalar type, so Python calls
  // it once where it called two of NumPy's (float32 * float64: float32's
  // slot declines, float64's answers).
  binaryfunc v = original_slot(Py_TYPE(a), K);
  binaryfunc w = Py_TYPE(b) == Py_TYPE(a) ? nullptr : original_slot(Py_TYPE(b), K);
  if (w == v) w = nullptr;
  if (v) {
    if (w && PyType_IsSubtype(Py_TYPE(b), Py_TYPE(a))) {
      PyObject* r = w(a, b);
      if (r != Py_NotImplemented) return r;
      Py_DECREF(r);
      w = nullptr;
    }
    PyObject* r = v(a, b);
    if (r != Py_NotImplemented) return r;
    Py_DECREF(r);
  }
  if (w) return w(a, b);
  Py_RETURN_NOTIMPLEMENTED;
}

// The rich comparison: Python calls each operand's own, so `a` is always
// the one whose slot this is.
PyObject* compare_slot(PyObject* a, PyObject* b, int cmp) {
  if (Py_TYPE(b) == g_ndarray_type && Py_TYPE(a) != g_ndarray_type && cmp >= 0 && cmp < 6 &&
      g_compare_op[cmp] >= 0) {
    PyObject* r = fast(g_compare_op[cmp], a, b);
    if (r != Py_NotImplemented) return r;
    Py_DECREF(r);
  }
  richcmpfunc orig = originals_of(Py_TYPE(a)).compare;
  if (!orig) Py_RETURN_NOTIMPLEMENTED;
  return orig(a, b, cmp);
}

int op_of(py::module_& np, const char* name) {
  int nin = 0, op = -1;
  ufunc_fast_op(np.attr(name).ptr(), &nin, &op);
  return nin == 2 ? op : -1;
}

// Replaces the slots once; returns how many scalar types were changed.
int install() {
  if (!g_originals.empty()) return 0;
  py::module_ np = py::module_::import("numpy");
  for (int k = 0; k < kSlots; ++k) g_slot_op[k] = op_of(np, kSlotUfunc[k]);
  for (int c = 0; c < 6; ++c) g_compare_op[c] = op_of(np, kCompareUfunc[c]);
  // The scalar types numfuse arrays hold (long double is not one).
  std::vector<PyTypeObject*> types;
  for (const char* code : {"?", "b", "h", "i", "l", "q", "B", "H", "I", "L", "Q", "e", "f", "d", "F", "D"}) {
    auto* t = reinterpret_cast<PyTypeObject*>(np.attr("dtype")(code).attr("type").ptr());
    if (std::find(types.begin(), types.end(), t) == types.end() && t->tp_as_number) types.push_back(t);
  }
  // Every original first (two types may share one table of slots), then
  // the replacements.
  for (PyTypeObject* t : types) {
    Originals& o = g_originals[t];
    for (int k = 0; k < kSlots; ++k) o.slot[k] = t->tp_as_number->*kSlotField[k];
    o.compare = t->tp_richcompare;
  }
  for (PyTypeObject* t : types) {
    for (int k = 0; k < kSlots; ++k)
      if (g_originals[t].slot[k]) t->tp_as_number->*kSlotField[k] = kReplacement[k];
    if (t->tp_richcompare) t->tp_richcompare = &compare_slot;
    Py_INCREF(t);  // (kept for good: the table points at them)
  }
  for (PyTypeObject* t : types) PyType_Modified(t);
  return static_cast<int>(types.size());
}

}  // namespace

void bind_scalar_slots(py::module_& m) {
  m.def("_install_scalar_operators", &install,
        "NumPy scalar (left) op numfuse array without NumPy's ufunc detour (src/python/scalar_slots.cc).");
  m.def("_scalar_operator_hits", [] { return g_hits; });
}

}  // namespace nf::py_bind

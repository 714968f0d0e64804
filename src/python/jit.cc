// numfuse.jit's core: capture control, marks, and compiled programs
// (trace/trace.h, pipeline/program.h). The tracing itself (guards, loop
// marks from `range`, fallbacks) is python/numfuse/_jit.py.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "pipeline/program.h"
#include "python/bindings.h"
#include "trace/trace.h"

namespace nf::py_bind {

PyObject* g_trace_abort = nullptr;
PyTypeObject* g_jit_param_type = nullptr;
PyObject* g_trace_iter = nullptr;

bool jit_param_operand(PyObject* o, Operand& out) {
  py::handle h(o);
  py::object value = h.attr("_v");
  double v;
  out.kind = Operand::Kind::Weak;
  if (PyLong_Check(value.ptr())) {  // (an int parameter: |n| < 2**53, numfuse.jit's _param_kind)
    const int64_t n = py::cast<int64_t>(value);
    v = static_cast<double>(n);
    out.weak = WeakKind::Int;
    out.value = Scalar::of_int(DType::Int64, n);
  } else {
    v = py::cast<double>(value);
    out.weak = WeakKind::Float;
    out.value = Scalar::of_float(DType::Float64, v);
  }
  if (trace::capturing()) out.value.param = capture_param(py::cast<int>(h.attr("_i")), v);
  return true;
}

namespace {

std::vector<View> views_of(py::list xs) {
  std::vector<View> out;
  for (py::handle x : xs) {
    if (!is_ndarray(x)) throw TypeError("expected numfuse arrays");
    out.push_back(as_ndarray(x).v);
  }
  return out;
}

struct PyProgram {
  std::shared_ptr<pipeline::CompiledProgram> compiled;
};

}  // namespace

void bind_jit(py::module_& m) {
  m.def("_set_trace_abort", [](py::object cls) {
    Py_XDECREF(g_trace_abort);
    g_trace_abort = cls.release().ptr();
  });
  // Starts a capture of a call whose array arguments are `args`; with
  // `content`, Python may read their values as integers while no captured
  // task wrote them (trace.h's content reads).
  m.def(
      "_trace_begin",
      [](py::list args, bool content) {
        std::vector<View> in = views_of(args);
        if (global_stream().size() != 0 || !pipeline::idle()) flush_all("numfuse.jit: before tracing");
        if (pipeline::fp_pending()) report_fp_events();
        trace::begin();
        trace::set_args(in, content);
      },
      py::arg("args") = py::list(), py::arg("content") = false);
  // The positions (among _trace_begin's arrays) whose values the last
  // capture read in Python.
  m.def("_trace_content_args", []() { return trace::content_args(); });
  // The Python int an element read of an argument stands for, while
  // capturing (a content read: the argument is guarded by content from
  // now on); None where it is no such element (its value is the program's).
  m.def("_trace_int", [](py::handle x) -> py::object {
    if (!trace::capturing() || !is_ndarray(x)) return py::none();
    const View& r = as_ndarray(x).v;
    if (r.ndim() != 0) return py::none();
    const View* e = trace::element_source(r.buffer.get());
    if (!e || !(is_integer(e->dtype) || e->dtype == DType::Bool)) return py::none();
    trace::content_read(e->buffer.get());
    trace::ContentReadScope scope;
    const char* base = static_cast<const char*>(e->buffer->data());
    return py::reinterpret_steal<py::object>(python_scalar(e->dtype, base + e->offset * itemsize(e->dtype)));
  });
  m.def("_set_param_type", [](py::object cls) {
    if (!PyType_Check(cls.ptr())) throw TypeError("expected a type");
    Py_XDECREF(reinterpret_cast<PyObject*>(g_jit_param_type));
    g_jit_param_type = reinterpret_cast<PyTypeObject*>(cls.release().ptr());
  });
  m.def("_set_trace_iter", [](py::object fn) {
    Py_XDECREF(g_trace_iter);
    g_trace_iter = fn.release().ptr();
  });
  m.def("_trace_capturing", []() { return trace::capturing(); });
  m.def("_trace_abort", [](const std::string& why) { trace::abort(why); });
  m.def("_trace_aborted", []() { return trace::aborted(); });
  m.def("_trace_mark", [](int kind, int64_t loop) { trace::mark(static_cast<trace::MarkKind>(kind), loop); });
  // numfuse.jit's guard key of each array among `args` (a tuple): ("A",
  // dtype, shape, strides, k, delta) -- k the first array argument on the
  // same memory (its own position among the arrays if none), delta its
  // offset from that one's, in elements --, None for the other arguments.
  m.def("_jit_array_keys", [](py::tuple args) {
    const Py_ssize_t n = PyTuple_GET_SIZE(args.ptr());
    py::list out(n);
    std::vector<std::pair<const Buffer*, std::pair<int64_t, int64_t>>> seen;  // buffer -> (array index, offset)
    int64_t arrays = 0;
    static py::str kA("A");
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* o = PyTuple_GET_ITEM(args.ptr(), i);
      if (!is_ndarray(py::handle(o))) {
        out[i] = py::none();
        continue;
      }
      const View& v = as_ndarray(o).v;
      int64_t first = arrays, delta = 0;
      for (const auto& [b, at] : seen) {
        if (b == v.buffer.get()) {
          first = at.first;
          delta = v.offset - at.second;
          break;
        }
      }
      if (first == arrays) seen.push_back({v.buffer.get(), {arrays, v.offset}});
      ++arrays;
      out[i] = py::make_tuple(kA, dtype_object(v.dtype), tuple_of(v.shape), tuple_of(v.strides, itemsize(v.dtype)),
                              first, delta);
    }
    return out;
  });
  // A fresh 0-d result (a select the tracer made) as the NumPy scalar it
  // stands for, without a copy: a deferred scalar on its memory.
  m.def("_scalar_of", [](py::handle x) -> py::object {
    if (!is_ndarray(x) || as_ndarray(x).v.ndim() != 0) throw TypeError("_scalar_of: expected a 0-d numfuse array");
    return scalar_result(as_ndarray(x).v);
  });
  m.def("_is_deferred_scalar", [](py::handle x) { return is_ndarray(x) && as_ndarray(x).deferred_scalar; });

  py::class_<PyProgram>(m, "_Program")
      .def("run",
           [](PyProgram& p, py::list args, std::vector<double> params) -> py::object {
             std::vector<View> in = views_of(args);
             if (global_stream().size() != 0 || !pipeline::idle()) flush_all("numfuse.jit: the arguments");
             std::vector<View> out;
             bool ran;
             {
               NoGil nogil;
               ran = pipeline::run_program(*p.compiled, in, params, &out);
             }
             if (!ran) return py::none();
             if (pipeline::fp_pending()) report_fp_events();
             py::list r;
             for (View& v : out) r.append(wrap(std::move(v)));
             return std::move(r);
           },
           py::arg("args"), py::arg("params") = std::vector<double>{})
      .def_property_readonly("params", [](const PyProgram& p) { return p.compiled->program->params; })
      .def_property_readonly("fixed_params", [](const PyProgram& p) { return p.compiled->program->fixed_params; })
      .def_property_readonly("description", [](const PyProgram& p) { return p.compiled->program->describe(); })
      .def_property_readonly("source", [](const PyProgram& p) { return p.compiled->source; })
      .def_property_readonly("key", [](const PyProgram& p) { return p.compiled->key; })
      .def_property_readonly("compile_ms", [](const PyProgram& p) { return p.compiled->compile_ms; })
      .def_property_readonly("traced", [](const PyProgram& p) { return p.compiled->program->traced_tasks; })
      .def_property_readonly("ops", [](const PyProgram& p) { return p.compiled->program->ops; })
      .def_property_readonly("loops", [](const PyProgram& p) { return p.compiled->program->loops; });

  // Ends the capture. Returns a _Program, or the reason there is none.
  m.def("_trace_end", [](py::list args, py::list results) -> py::object {
    std::vector<View> in, out;
    std::string why;
    try {
      in = views_of(args);
      out = views_of(results);
    } catch (const std::exception& e) {
      why = e.what();
    }
    trace::Captured c = trace::end();
    if (!c.aborted.empty()) return py::str(c.aborted);
    if (!why.empty()) return py::str(why);
    try {
      std::shared_ptr<trace::Program> p = trace::build(std::move(c), in, out);
      PyProgram r;
      {
        NoGil nogil;
        r.compiled = pipeline::compile_program(p);
      }
      return py::cast(std::move(r));
    } catch (const trace::Unsupported& e) {
      return py::str(e.what());
    } catch (const jit::CompileError& e) {
      return py::str(std::string("its program did not compile: ") + e.what());
    } catch (const std::exception& e) {
      // (A form the lowering's passes refuse: the function runs plainly.)
      return py::str(std::string("its program could not be lowered: ") + e.what());
    }
  });
}

}  // namespace nf::py_bind

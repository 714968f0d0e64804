// Instruction counting under callgrind (tests/test_instruction_counts.py,
// benchmarks/instructions.py): valgrind's client requests, which are a few
// no-op instructions when the process does not run under valgrind. A build
// without valgrind's headers has none, and says so (callgrind_available).
#include "python/bindings.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define NF_HAVE_CALLGRIND 1
#endif
#endif

namespace nf::py_bind {

void bind_instructions(py::module_& m) {
  m.def("callgrind_available", []() {
#ifdef NF_HAVE_CALLGRIND
    return true;
#else
    return false;
#endif
  });
  m.def("on_valgrind", []() {
#ifdef NF_HAVE_CALLGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
  });
  // "zero": reset the counters; "toggle": start or stop counting (run with
  // --collect-atstart=no); "dump": write the counts since the last zero,
  // tagged `name`. Kept minimal: what runs between a toggle and the next is
  // what is counted, plus this call's own return and the next one's entry.
  m.def("callgrind", [](const char* what, const std::string& name) {
#ifdef NF_HAVE_CALLGRIND
    switch (what[0]) {
      case 'z':
        CALLGRIND_ZERO_STATS;
        break;
      case 't':
        CALLGRIND_TOGGLE_COLLECT;
        break;
      case 'd':
        CALLGRIND_DUMP_STATS_AT(name.c_str());
        break;
      default:
        throw py::value_error("callgrind: expected 'zero', 'toggle' or 'dump'");
    }
#else
    (void)what;
    (void)name;
    throw std::runtime_error("numfuse was built without valgrind's headers (apt-get install valgrind)");
#endif
  }, py::arg("what"), py::arg("name") = "");
}

}  // namespace nf::py_bind

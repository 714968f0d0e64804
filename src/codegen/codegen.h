// Rendering a LoopNest as source code.
//
// C (for clang + OpenMP): the generated file includes no system header; it
// declares the few libm / libomp / libc functions it calls and defines, as
// static inline helpers, only the operations it uses. Operations follow NumPy
// to the bit where C allows it: no FP contraction, NaN-propagating
// maximum/minimum, Python-style floor division and remainder, x86 float->int
// conversion for out-of-range values, defined integer overflow (-fwrapv).
#pragma once

#include <string>

#include "lower/lower.h"

namespace nf::codegen {

struct Source {
  std::string code;
  std::string entry;  // the exported function
};

Source render_c(const lower::LoopNest& nest);

}  // namespace nf::codegen

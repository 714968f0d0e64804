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
  // Compile for the target's widest vectors (LoopNest::wide; the code says
  // so in a comment, so the two forms of a kernel never share a cache entry).
  bool wide = false;
};

Source render_c(const lower::LoopNest& nest);
// Source::wide of rendered code read back from its text (a kernel's source
// kept in the disk cache).
bool renders_wide(const std::string& code);

// The sign rule NumPy's NaN results follow for an operation and float type
// (see scalar_c.h, set_nan_rules), or nullptr if the hardware's NaN stands.
// Tier 0 applies it to the results of its precompiled loops, as kernels do.
const char* nan_rule(bool binary, int op, DType t);
// Names the installed rules; the generation counts installations.
const std::string& nan_rules_id();
uint64_t nan_rules_generation();

}  // namespace nf::codegen

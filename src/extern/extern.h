// Black-box library routines (Fern). A routine is run on whole operands for
// now; its production/consumption pattern (which input tiles an output tile
// needs) is declared next to it so tile-level fusion can use it.
#pragma once

#include <string>

#include "stream/stream.h"

namespace nf::ext {

// Runs an Extern task: allocates its output if needed and calls the library.
void run_routine(const Task& t);

// Use another CBLAS already in the process (an ILP64 build such as the
// OpenBLAS NumPy bundles: symbols prefix + "cblas_dgemm" + suffix). Returns
// false (keeping the current BLAS) if any routine is missing.
bool use_blas_library(const std::string& path, const std::string& prefix, const std::string& suffix);
std::string blas_name();

// Human-readable pattern of a routine, for explain().
std::string pattern(RoutineId id);

}  // namespace nf::ext

// A cheap monotonic clock for timing the pipeline's stages at every flush:
// the CPU's time-stamp counter where it is invariant (x86-64 with the
// invariant-TSC flag: about 7 ns a read, where steady_clock costs 20-50 ns),
// else steady_clock's nanoseconds. Ticks are converted to milliseconds with
// a rate calibrated against steady_clock (frozen once 20 ms have passed).
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace nf {

namespace detail {
extern bool g_use_tsc;  // invariant TSC (set when the library loads, never changed)
int64_t steady_ns();
}  // namespace detail

inline uint64_t ticks() {
#if defined(__x86_64__)
  if (detail::g_use_tsc) return __rdtsc();
#endif
  return static_cast<uint64_t>(detail::steady_ns());
}
// Milliseconds in `dt` ticks (dt = ticks() - an earlier ticks()).
double ticks_to_ms(uint64_t dt);

}  // namespace nf

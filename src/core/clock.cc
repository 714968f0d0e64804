#include "core/clock.h"

#include <atomic>
#include <chrono>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace nf {

namespace {

bool invariant_tsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d >> 8) & 1u;
#else
  return false;
#endif
}

}  // namespace

namespace detail {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Set before every other static object of the library is initialized (the
// constructor's priority), so a clock read during another's initialization
// is consistent with later ones.
bool g_use_tsc = false;
__attribute__((constructor(101))) void init_use_tsc() { g_use_tsc = invariant_tsc(); }

}  // namespace detail

namespace {

using detail::steady_ns;

struct Origin {
  uint64_t t;
  int64_t ns;
};
const Origin g_origin{ticks(), steady_ns()};
std::atomic<double> g_ms_per_tick{0.0};  // 0: not frozen yet

}  // namespace

double ticks_to_ms(uint64_t dt) {
  if (!detail::g_use_tsc) return static_cast<double>(dt) * 1e-6;
  double rate = g_ms_per_tick.load(std::memory_order_relaxed);
  if (rate == 0.0) {
    // The rate over the time since the origin (at least 0.1 ms of it),
    // kept once that time is long enough to be precise.
    int64_t ns = steady_ns() - g_origin.ns;
    uint64_t t = ticks() - g_origin.t;
    while (ns < 100'000 || t == 0) {
      ns = steady_ns() - g_origin.ns;
      t = ticks() - g_origin.t;
    }
    rate = static_cast<double>(ns) * 1e-6 / static_cast<double>(t);
    if (ns >= 20'000'000) g_ms_per_tick.store(rate, std::memory_order_relaxed);
  }
  return static_cast<double>(dt) * rate;
}

}  // namespace nf

// The core's internal consistency checks: Task::validate on every recorded
// task, the recorded window structure at every flush, the loop IR verifier
// after every lowering pass (lower/verify.cc), the multi-stage launch
// verifier (runtime/chain.cc) and LLVM's IR verifier after numfuse's own
// LLVM passes. They cost time on every operation, so they are off unless
// NUMFUSE_CHECKS is set to a non-zero value when the library loads (or
// set_checks(true) is called); a core built without NDEBUG has them on.
// `make test` runs the whole suite once with them on.
#pragma once

#include <atomic>

namespace nf {

namespace detail {
extern std::atomic<bool> g_checks;
}  // namespace detail

inline bool checks_on() { return detail::g_checks.load(std::memory_order_relaxed); }
inline void set_checks(bool on) { detail::g_checks.store(on, std::memory_order_relaxed); }

}  // namespace nf

// The floating-point status flags NumPy reports (numpy.errstate): divide by
// zero, overflow, underflow, invalid value.
//
// NumPy clears the calling thread's status before each ufunc loop and reads
// it after; numfuse does the same around each kernel and each operation tier
// 0 computes at once (the pipeline), and the host's thread pool carries the
// flags its worker threads raise back to the thread that launched the region
// (jit: nf_parallel), so a kernel's flags are read on the thread that ran it.
// On x86-64 the flags live in MXCSR (kernels and the libm/libmvec routines
// they call compute in SSE/AVX registers): reading them is one `stmxcsr`.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#else
#include <cfenv>
#endif

namespace nf::fpe {

// numfuse's flag bits (the order of numpy.geterr()'s keys).
enum : uint8_t { Divide = 1, Over = 2, Under = 4, Invalid = 8 };

#if defined(__x86_64__) || defined(__i386__)
namespace detail {
// MXCSR's sticky exception flags: IE (invalid) 0x01, ZE (divide) 0x04,
// OE (overflow) 0x08, UE (underflow) 0x10. DE (denormal operand, 0x02) and
// PE (inexact, 0x20) are not NumPy's and are left alone: almost every
// floating-point operation sets PE, and clearing it each time (ldmxcsr)
// would cost every small operation tier 0 runs.
constexpr unsigned kMask = 0x1d;
inline uint8_t from_csr(unsigned c) {
  return static_cast<uint8_t>(((c & 0x04) ? Divide : 0) | ((c & 0x08) ? Over : 0) | ((c & 0x10) ? Under : 0) |
                              ((c & 0x01) ? Invalid : 0));
}
inline unsigned to_csr(uint8_t f) {
  return ((f & Divide) ? 0x04u : 0u) | ((f & Over) ? 0x08u : 0u) | ((f & Under) ? 0x10u : 0u) |
         ((f & Invalid) ? 0x01u : 0u);
}
}  // namespace detail

// The flags raised on this thread since they were last taken; clears them.
inline uint8_t take() {
  const unsigned c = _mm_getcsr();
  if (!(c & detail::kMask)) return 0;
  _mm_setcsr(c & ~detail::kMask);
  return detail::from_csr(c);
}

// Raises `f` on this thread (as if an operation here had raised them).
inline void raise(uint8_t f) {
  if (f) _mm_setcsr(_mm_getcsr() | detail::to_csr(f));
}
#else
inline uint8_t take() {
  const int c = std::fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID);
  if (!c) return 0;
  std::feclearexcept(FE_ALL_EXCEPT);
  return static_cast<uint8_t>(((c & FE_DIVBYZERO) ? Divide : 0) | ((c & FE_OVERFLOW) ? Over : 0) |
                              ((c & FE_UNDERFLOW) ? Under : 0) | ((c & FE_INVALID) ? Invalid : 0));
}
inline void raise(uint8_t f) {
  if (!f) return;
  std::feraiseexcept(((f & Divide) ? FE_DIVBYZERO : 0) | ((f & Over) ? FE_OVERFLOW : 0) |
                     ((f & Under) ? FE_UNDERFLOW : 0) | ((f & Invalid) ? FE_INVALID : 0));
}
#endif

}  // namespace nf::fpe

// Exact division by a loop-invariant divisor without the divider (an LLVM
// pass of the CPU compiler, run after the loop vectorizer).
//
// `x / c` with `c` the same for every iteration of the loop around it (a
// constant, a parameter, a row's sum in a two-phase kernel) is NumPy's true
// division: correctly rounded, so a multiply by a reciprocal is not an
// option (it rounds twice). The divider is the slowest unit of a core
// (AVX-512: one 8-lane double division per 16 cycles) and bounds kernels
// like a blur (`(... ) / 3`) or a normalization (`e / e.sum(...)`).
//
// The pass computes y = RN(1/c) once, where c is defined, and per element
//   q0 = RN(x*y);  r0 = q0*c - x;  q1 = q0 - r0*y   (q1 faithful)
//   r1 = q1*c - x;  q2 = q1 - r1*y                  (q2 = RN(x/c))
// each line's operations fused (one rounding per multiply-add). q1 is a
// faithful rounding of x/c (|q0 - x/c| < 2 ulp, and the correction
// leaves an error far below half an ulp before its rounding); then
// Markstein's theorem (y within relative 2^-p of 1/c, q1 faithful, the
// residual r1 exact) makes q2 the correctly rounded quotient. The theorem
// holds where nothing underflows or overflows, which each element checks on
// its dividend (integer compares of the magnitudes' bits), with bounds
// computed once per divisor:
//   2^(emin+20) <= |c| <= 2^(emax-20)
//   2^(emin+2p+2) * max(1, |c|) <= |x| <= 2^(emax-4) * min(|c|, 8)
// (x, x/c and every nonzero residual normal, so a flush-to-zero mode
// changes nothing; x/c far from overflow). A zero x passes too where c > 0:
// its residuals are +0 and each correction adds -0 to the zero quotient,
// which keeps x*y's sign, x/c's (where c < 0 the corrections add +0, so
// zeros take the true division there). The checks come first: a vector
// whose lanes all pass runs the sequence above, any other (NaN, infinities,
// subnormal or huge quotients, an odd divisor) the true division, on every
// lane -- so the fast path raises no floating-point exception NumPy's
// division would not (an infinite x would make the residual inf - inf, a
// tiny one a subnormal residual), and the slow one exactly NumPy's. The
// branch is never taken on ordinary data, so the divider is not used at
// all; the fast path costs an integer range check and five multiply-adds
// per vector. A divisor that is a power of two (within the range) skips
// all of it: y is exact, and x*y is RN(x/c) for every x (the same real
// number rounded once, with the same exceptions) -- a mean's `/ 1024`, a
// Jacobi update's `/ 4`.
//
// Only where the target has fused multiply-add (without it llvm.fma is a
// library call). Bit-exact in every case; tests/test_exact_division.py
// compares it bit for bit with NumPy over random bit patterns, near-midpoint
// quotients, every special value and NumPy's floating-point errors;
// tests/exhaustive_division.py checks all 2^32 float32 dividends.
#pragma once

#include <atomic>
#include <cstdint>

#include <llvm/IR/PassManager.h>

namespace nf::jit {

struct ExactDivisionPass : llvm::PassInfoMixin<ExactDivisionPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam);
  static bool isRequired() { return true; }
};

// Divisions rewritten so far in this process (numfuse.profile()'s
// "exact_divisions_total"; tests check that a kernel used the pass).
int64_t exact_divisions_rewritten();

}  // namespace nf::jit

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
//   q0 = RN(x*y);  r0 = fma(-q0, c, x);  q1 = fma(r0, y, q0)   (q1 faithful)
//   r1 = fma(-q1, c, x);  q2 = fma(r1, y, q1)                 (q2 = RN(x/c))
// q1 is a faithful rounding of x/c (|q0 - x/c| < 2 ulp, and the correction
// leaves an error far below half an ulp before its rounding); then
// Markstein's theorem (y within relative 2^-p of 1/c, q1 faithful, r1 exact)
// makes q2 the correctly rounded quotient. The theorem holds where nothing
// underflows or overflows, which each element checks on its dividend
// (integer compares of the magnitudes' bits), with bounds computed once per
// divisor:
//   2^(emin+20) <= |c| <= 2^(emax-20)
//   2^(emin+2p+2) * max(1, |c|) <= |x| <= 2^(emax-4) * min(|c|, 8)
// (x, x/c and every nonzero residual normal, so a flush-to-zero mode
// changes nothing; x/c far from overflow). A lane
// that fails computes the sequence from x = 1 instead, so the fast path
// raises no floating-point exception NumPy's division would not (NumPy's
// errstate sees exactly the division's: an infinite x would make the
// residual inf - inf, a tiny one a subnormal residual). An element x = +-0
// takes the signed zero x/c is (x's sign bit xor c's). Where any lane of a
// vector fails its checks (NaN, infinities, subnormal or huge quotients, an
// odd divisor), that vector also runs the true division, on every lane
// (raising what NumPy raises), and takes its result in those lanes: a
// branch that is never taken on ordinary data, so the divider is not used
// at all.
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

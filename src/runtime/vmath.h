/* One vector math library per process (runtime/vmath.c).
 *
 * A transcendental function (exp, sin, log, pow, ...) has several
 * implementations on a machine: glibc's scalar libm and libmvec's 2-, 4- and
 * 8-lane forms (_ZGVbN2v_exp, _ZGVdN4v_exp, _ZGVeN8v_exp), and they do not
 * agree bit for bit (20-60% of float64 inputs differ by an ulp between the
 * scalar and any vector form, and between the vector forms). A kernel calls
 * the vector form in its vector loop and the scalar one in its remainder; a
 * strided tier-0 loop may call another form than a contiguous one. The same
 * input then gave different bits by position and layout, and
 * `where(e[::-1] > e, ...)` of e = exp(x) with equal values found one
 * greater (tests/test_random_programs.py).
 *
 * So numfuse's generated code (codegen/scalar_c.cc: kernels and tier 0's
 * loops) calls these functions as nf_m_<fn> (float: nf_m_<fn>f), declared
 * `simd` for the build's compiler and mapped for the JIT's vectorizer to the
 * vector-ABI names _ZGV<isa>N<lanes>v_nf_m_<fn> (b: SSE, c: AVX, d: AVX2,
 * e: AVX-512); every one of them -- scalar, any width, any ISA -- computes
 * through the one implementation chosen per function at load: libmvec's
 * widest form the CPU runs (e on AVX-512, then d, then b), else scalar libm.
 * A call of fewer lanes fills the rest with copies of its first (so no flag
 * is raised that the real inputs would not raise), a call of more is split.
 * Equal inputs give equal bits everywhere in one process. */
#ifndef NF_RUNTIME_VMATH_H
#define NF_RUNTIME_VMATH_H

#include "core/vmath_list.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nf_vmath_symbol {
  const char* name;
  void* address;
};
/* Every function vmath.c defines, scalar and vector forms (the JIT's
 * symbol table). */
const struct nf_vmath_symbol* nf_vmath_symbols(int* count);
/* How `fn` (a libm name, float forms with 'f') is computed in this process:
 * the implementation's name ("_ZGVeN8v_exp", or "exp" for scalar libm) and
 * its lanes (1 for scalar libm); NULL / 0 for a function not in the lists. */
const char* nf_vmath_implementation(const char* fn, int* lanes);

/* The scalar form of libm's `fn` (nf_m_exp for "exp", nf_m_expf for
 * "expf"), or NULL. */
void* nf_vmath_function(const char* fn);

#ifdef __cplusplus
}
#endif
#endif

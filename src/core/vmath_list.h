/* The transcendental functions numfuse computes with one implementation
 * per process (runtime/vmath.h), as libm names them (float forms add 'f'):
 * the code generators call them nf_m_<fn>. */
#ifndef NF_CORE_VMATH_LIST_H
#define NF_CORE_VMATH_LIST_H
#define NF_VMATH_UNARY(X) \
  X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh) X(exp) \
  X(exp2) X(exp10) X(expm1) X(log) X(log2) X(log10) X(log1p) X(cbrt) X(erf) X(erfc)
#define NF_VMATH_BINARY(X) X(pow) X(atan2) X(hypot)

#endif

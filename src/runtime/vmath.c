/* One vector math library per process: see vmath.h. */
#define _GNU_SOURCE
#include "runtime/vmath.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define NF_VMATH_X86 1
#endif

enum {
#define NF_K(fn) K_##fn,
  NF_VMATH_UNARY(NF_K) NF_VMATH_BINARY(NF_K)
#undef NF_K
  K_COUNT
};
static const char* const k_names[K_COUNT] = {
#define NF_N(fn) #fn,
    NF_VMATH_UNARY(NF_N) NF_VMATH_BINARY(NF_N)
#undef NF_N
};

/* Runs implementation f on one register's worth of lanes at a (and b), into r. */
typedef void (*nf_apply)(void* f, const void* a, const void* b, void* r);

struct impl {
  void* f;
  nf_apply apply;                          /* a register's lanes, through memory */
  double (*one_d)(void*, double, double);  /* one element (double functions) */
  float (*one_f)(void*, float, float);     /* one element (float functions) */
  /* A narrower register (128 or 256 bits) through the implementation's
   * wider one, its lanes repeated: [0] one argument, [1] two; or null. */
  void* from128[2];
  void* from256[2];
  void* from512[2]; /* (none: no implementation is wider) */
  int lanes;
  char name[32];
};
static struct impl g_d[K_COUNT], g_f[K_COUNT]; /* double, float */

static void s_d1(void* f, const void* a, const void* b, void* r) {
  (void)b;
  *(double*)r = ((double (*)(double))f)(*(const double*)a);
}
static void s_d2(void* f, const void* a, const void* b, void* r) {
  *(double*)r = ((double (*)(double, double))f)(*(const double*)a, *(const double*)b);
}
static void s_f1(void* f, const void* a, const void* b, void* r) {
  (void)b;
  *(float*)r = ((float (*)(float))f)(*(const float*)a);
}
static void s_f2(void* f, const void* a, const void* b, void* r) {
  *(float*)r = ((float (*)(float, float))f)(*(const float*)a, *(const float*)b);
}
static double s_d_one1(void* f, double x, double y) {
  (void)y;
  return ((double (*)(double))f)(x);
}
static double s_d_one2(void* f, double x, double y) { return ((double (*)(double, double))f)(x, y); }
static float s_f_one1(void* f, float x, float y) {
  (void)y;
  return ((float (*)(float))f)(x);
}
static float s_f_one2(void* f, float x, float y) { return ((float (*)(float, float))f)(x, y); }

#ifdef NF_VMATH_X86
#define NF_APPLY(name, tgt, T, LD, ST, E)                                                               \
  __attribute__((target(tgt))) static void name##1(void* f, const void* a, const void* b, void* r) {  \
    (void)b;                                                                                           \
    ST((E*)r, ((T(*)(T))f)(LD((const E*)a)));                                                          \
  }                                                                                                    \
  __attribute__((target(tgt))) static void name##2(void* f, const void* a, const void* b, void* r) {  \
    ST((E*)r, ((T(*)(T, T))f)(LD((const E*)a), LD((const E*)b)));                                      \
  }
/* One element through a register of copies of it (the scalar forms). */
#define NF_ONE(name, tgt, T, SET1, LOW, E)                                                   \
  __attribute__((target(tgt))) static E name##1(void* f, E x, E y) {                         \
    (void)y;                                                                                 \
    return LOW(((T(*)(T))f)(SET1(x)));                                                       \
  }                                                                                          \
  __attribute__((target(tgt))) static E name##2(void* f, E x, E y) {                         \
    return LOW(((T(*)(T, T))f)(SET1(x), SET1(y)));                                           \
  }
NF_ONE(b_d_one, "sse2", __m128d, _mm_set1_pd, _mm_cvtsd_f64, double)
NF_ONE(d_d_one, "avx2", __m256d, _mm256_set1_pd, _mm256_cvtsd_f64, double)
NF_ONE(e_d_one, "avx512f", __m512d, _mm512_set1_pd, _mm512_cvtsd_f64, double)
NF_ONE(b_f_one, "sse2", __m128, _mm_set1_ps, _mm_cvtss_f32, float)
NF_ONE(d_f_one, "avx2", __m256, _mm256_set1_ps, _mm256_cvtss_f32, float)
NF_ONE(e_f_one, "avx512f", __m512, _mm512_set1_ps, _mm512_cvtss_f32, float)
#undef NF_ONE
NF_APPLY(b_d, "sse2", __m128d, _mm_loadu_pd, _mm_storeu_pd, double)
NF_APPLY(d_d, "avx2", __m256d, _mm256_loadu_pd, _mm256_storeu_pd, double)
NF_APPLY(e_d, "avx512f", __m512d, _mm512_loadu_pd, _mm512_storeu_pd, double)
NF_APPLY(b_f, "sse2", __m128, _mm_loadu_ps, _mm_storeu_ps, float)
NF_APPLY(d_f, "avx2", __m256, _mm256_loadu_ps, _mm256_storeu_ps, float)
NF_APPLY(e_f, "avx512f", __m512, _mm512_loadu_ps, _mm512_storeu_ps, float)
#undef NF_APPLY

/* A narrower register's lanes repeated to fill a wider one, through the
 * wider implementation f, the first lanes of its result. */
#define NF_WIDEN(name, tgt, TN, TW, FILL, LOW)                                                         \
  __attribute__((target(tgt))) static TN name##1(void* f, TN x) { return LOW(((TW(*)(TW))f)(FILL(x))); } \
  __attribute__((target(tgt))) static TN name##2(void* f, TN x, TN y) {                                 \
    return LOW(((TW(*)(TW, TW))f)(FILL(x), FILL(y)));                                                   \
  }
#define NF_E_FROM128_D(x) _mm512_shuffle_f64x2(_mm512_castpd128_pd512(x), _mm512_castpd128_pd512(x), 0)
#define NF_E_FROM256_D(x) _mm512_insertf64x4(_mm512_castpd256_pd512(x), x, 1)
#define NF_D_FROM128_D(x) _mm256_insertf128_pd(_mm256_castpd128_pd256(x), x, 1)
#define NF_E_FROM128_F(x) _mm512_shuffle_f32x4(_mm512_castps128_ps512(x), _mm512_castps128_ps512(x), 0)
#define NF_E_FROM256_F(x) \
  _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(x)), _mm256_castps_pd(x), 1))
#define NF_D_FROM128_F(x) _mm256_insertf128_ps(_mm256_castps128_ps256(x), x, 1)
NF_WIDEN(e_from128_d, "avx512f", __m128d, __m512d, NF_E_FROM128_D, _mm512_castpd512_pd128)
NF_WIDEN(e_from256_d, "avx512f", __m256d, __m512d, NF_E_FROM256_D, _mm512_castpd512_pd256)
NF_WIDEN(d_from128_d, "avx2", __m128d, __m256d, NF_D_FROM128_D, _mm256_castpd256_pd128)
NF_WIDEN(e_from128_f, "avx512f", __m128, __m512, NF_E_FROM128_F, _mm512_castps512_ps128)
NF_WIDEN(e_from256_f, "avx512f", __m256, __m512, NF_E_FROM256_F, _mm512_castps512_ps256)
NF_WIDEN(d_from128_f, "avx2", __m128, __m256, NF_D_FROM128_F, _mm256_castps256_ps128)
#undef NF_WIDEN
#endif

/* n elements of a (and b) into r through m: whole registers directly, the
 * rest padded with copies of its first element. */
#define NF_RUN(name, E)                                                                      \
  static void name(const struct impl* m, const E* a, const E* b, E* r, int n) {              \
    E pa[16], pb[16], pr[16];                                                                \
    const int L = m->lanes;                                                                  \
    for (int i = 0; i < n; i += L) {                                                         \
      const int k = n - i < L ? n - i : L;                                                   \
      if (k == L) {                                                                          \
        m->apply(m->f, a + i, b ? b + i : 0, r + i);                                         \
        continue;                                                                            \
      }                                                                                      \
      for (int j = 0; j < L; ++j) pa[j] = a[j < k ? i + j : i];                              \
      if (b)                                                                                 \
        for (int j = 0; j < L; ++j) pb[j] = b[j < k ? i + j : i];                            \
      m->apply(m->f, pa, b ? pb : 0, pr);                                                    \
      for (int j = 0; j < k; ++j) r[i + j] = pr[j];                                          \
    }                                                                                        \
  }
NF_RUN(run_d, double)
NF_RUN(run_f, float)
#undef NF_RUN

/* hypot is numfuse's own: glibc's algorithm (e_hypot.c without FMA: a
 * square root corrected by one Newton-like step, inputs scaled past
 * 2^+-511, a negligible smaller side added) in vector form, so that its
 * values are glibc's hypot's -- NumPy's -- bit for bit; libmvec's differs by
 * an ulp on about one float64 input in seven (hypot(1, 1), abs(1+1j)).
 * hypotf is glibc's too: the float of the square root of the double sum of
 * squares. (Built with -ffp-contract=off: a fused multiply-add would change
 * the correction's rounding.) */
static float nf_hypotf_one(float x, float y) {
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(x) || isinf(y)) return INFINITY;
    return x + y;
  }
  return (float)sqrt((double)x * (double)x + (double)y * (double)y);
}
#ifdef NF_VMATH_X86
#define NF_SEL(V, VI, m, a, b) ((V)((((VI)(a)) & (m)) | (((VI)(b)) & ~(m))))
#define NF_HYPOT_D(name, tgt, V, VI, SQRT)                                                       \
  __attribute__((target(tgt))) static V name(V x, V y) {                                         \
    const V z = {0};                                                                             \
    const VI zi = {0};                                                                           \
    const V fx = (V)((VI)x & (zi + 0x7fffffffffffffffLL)), fy = (V)((VI)y & (zi + 0x7fffffffffffffffLL)); \
    const VI xlt = fx < fy;                                                                      \
    const V ax = NF_SEL(V, VI, xlt, fy, fx), ay = NF_SEL(V, VI, xlt, fx, fy);                    \
    const VI big = ax > (z + 0x1p511), tiny = ay < (z + 0x1p-511);                               \
    const V up = NF_SEL(V, VI, big, z + 0x1p-600, NF_SEL(V, VI, tiny, z + 0x1p600, z + 1.0));      \
    const V back = NF_SEL(V, VI, big, z + 0x1p600, NF_SEL(V, VI, tiny, z + 0x1p-600, z + 1.0));    \
    const V a = ax * up, b = ay * up;                                                            \
    V h = SQRT(a * a + b * b);                                                                   \
    const VI c = h <= 2.0 * b;                                                                   \
    const V d1 = h - b, d2 = h - a;                                                              \
    const V t1 = NF_SEL(V, VI, c, a * (2.0 * d1 - a), 2.0 * d2 * (a - 2.0 * b));                  \
    const V t2 = NF_SEL(V, VI, c, (d1 - 2.0 * (a - b)) * d1, (4.0 * d2 - b) * b + d2 * d2);       \
    h = (h - (t1 + t2) / (2.0 * h)) * back;                                                      \
    const VI small = (tiny & (ax >= ay * 0x1p54)) | (~tiny & (ay <= ax * 0x1p-54));              \
    h = NF_SEL(V, VI, small, ax + ay, h);                                                        \
    h = NF_SEL(V, VI, (x != x) | (y != y), x + y, h);                                            \
    return NF_SEL(V, VI, (fx == (z + INFINITY)) | (fy == (z + INFINITY)), z + INFINITY, h);       \
  }
typedef long long nf_v2i __attribute__((vector_size(16)));
typedef long long nf_v4i __attribute__((vector_size(32)));
typedef long long nf_v8i __attribute__((vector_size(64)));
NF_HYPOT_D(nf_hypot_b2, "sse2", __m128d, nf_v2i, _mm_sqrt_pd)
NF_HYPOT_D(nf_hypot_d4, "avx2", __m256d, nf_v4i, _mm256_sqrt_pd)
NF_HYPOT_D(nf_hypot_e8, "avx512f", __m512d, nf_v8i, _mm512_sqrt_pd)
#undef NF_HYPOT_D
#undef NF_SEL
#define NF_HYPOT_F(name, tgt, V, n)                                         \
  __attribute__((target(tgt))) static V name(V x, V y) {                    \
    float a[n], b[n], r[n];                                                 \
    memcpy(a, &x, sizeof a);                                                \
    memcpy(b, &y, sizeof b);                                                \
    for (int i = 0; i < n; ++i) r[i] = nf_hypotf_one(a[i], b[i]);           \
    V out;                                                                  \
    memcpy(&out, r, sizeof r);                                              \
    return out;                                                             \
  }
NF_HYPOT_F(nf_hypotf_b4, "sse2", __m128, 4)
NF_HYPOT_F(nf_hypotf_d8, "avx2", __m256, 8)
NF_HYPOT_F(nf_hypotf_e16, "avx512f", __m512, 16)
#undef NF_HYPOT_F
/* numfuse's hypot for an ISA ('b', 'd', 'e'), in the vector ABI's form. */
static void* own_hypot(char isa, int single) {
  switch (isa) {
    case 'e': return single ? (void*)nf_hypotf_e16 : (void*)nf_hypot_e8;
    case 'd': return single ? (void*)nf_hypotf_d8 : (void*)nf_hypot_d4;
    default: return single ? (void*)nf_hypotf_b4 : (void*)nf_hypot_b2;
  }
}
#endif
/* Scalar libm, the implementation where no vector form is available. */
static void* scalar_libm(const char* name) {
  static void* libm;
  if (!libm) libm = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL);
  void* f = libm ? dlsym(libm, name) : 0;
  return f ? f : dlsym(RTLD_DEFAULT, name);
}

static void choose(struct impl* m, const char* fn, int single, int arity, void* mvec) {
  char name[32];
  snprintf(name, sizeof name, "%s%s", fn, single ? "f" : "");
#ifdef NF_VMATH_X86
  struct {
    char isa;
    int bits, usable;
    nf_apply a1, a2;
    double (*d1)(void*, double, double);
    double (*d2)(void*, double, double);
    float (*f1)(void*, float, float);
    float (*f2)(void*, float, float);
  } isas[3] = {
      {'e', 512, 0, single ? e_f1 : e_d1, single ? e_f2 : e_d2, e_d_one1, e_d_one2, e_f_one1, e_f_one2},
      {'d', 256, 0, single ? d_f1 : d_d1, single ? d_f2 : d_d2, d_d_one1, d_d_one2, d_f_one1, d_f_one2},
      {'b', 128, 1, single ? b_f1 : b_d1, single ? b_f2 : b_d2, b_d_one1, b_d_one2, b_f_one1, b_f_one2},
  };
  __builtin_cpu_init();
  isas[0].usable = __builtin_cpu_supports("avx512f");
  isas[1].usable = __builtin_cpu_supports("avx2");
  const int own = strcmp(fn, "hypot") == 0;
  for (int k = 0; (mvec || own) && k < 3; ++k) {
    if (!isas[k].usable) continue;
    const int lanes = isas[k].bits / (single ? 32 : 64);
    char vname[32];
    if (own) snprintf(vname, sizeof vname, "nf_%s_%c%d", name, isas[k].isa, lanes);
    else snprintf(vname, sizeof vname, "_ZGV%cN%d%s_%s", isas[k].isa, lanes, arity == 2 ? "vv" : "v", name);
    void* f = own ? own_hypot(isas[k].isa, single) : dlsym(mvec, vname);
    if (!f) continue;
    m->f = f;
    m->apply = arity == 2 ? isas[k].a2 : isas[k].a1;
    m->one_d = arity == 2 ? isas[k].d2 : isas[k].d1;
    m->one_f = arity == 2 ? isas[k].f2 : isas[k].f1;
    m->lanes = lanes;
    if (isas[k].isa == 'e') {
      m->from128[0] = single ? (void*)e_from128_f1 : (void*)e_from128_d1;
      m->from128[1] = single ? (void*)e_from128_f2 : (void*)e_from128_d2;
      m->from256[0] = single ? (void*)e_from256_f1 : (void*)e_from256_d1;
      m->from256[1] = single ? (void*)e_from256_f2 : (void*)e_from256_d2;
    } else if (isas[k].isa == 'd') {
      m->from128[0] = single ? (void*)d_from128_f1 : (void*)d_from128_d1;
      m->from128[1] = single ? (void*)d_from128_f2 : (void*)d_from128_d2;
    }
    snprintf(m->name, sizeof m->name, "%s", vname);
    return;
  }
#else
  (void)mvec;
#endif
  m->f = scalar_libm(name);
  m->apply = single ? (arity == 2 ? s_f2 : s_f1) : (arity == 2 ? s_d2 : s_d1);
  m->one_d = arity == 2 ? s_d_one2 : s_d_one1;
  m->one_f = arity == 2 ? s_f_one2 : s_f_one1;
  m->lanes = 1;
  snprintf(m->name, sizeof m->name, "%s", name);
}

__attribute__((constructor)) static void nf_vmath_init(void) {
  void* mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
  for (int k = 0; k < K_COUNT; ++k) {
    const int arity = k >= K_pow ? 2 : 1;
    choose(&g_d[k], k_names[k], 0, arity, mvec);
    choose(&g_f[k], k_names[k], 1, arity, mvec);
  }
}

const char* nf_vmath_implementation(const char* fn, int* lanes) {
  for (int k = 0; k < K_COUNT; ++k) {
    for (int single = 0; single < 2; ++single) {
      char name[32];
      snprintf(name, sizeof name, "%s%s", k_names[k], single ? "f" : "");
      if (strcmp(name, fn) != 0) continue;
      const struct impl* m = single ? &g_f[k] : &g_d[k];
      if (lanes) *lanes = m->lanes;
      return m->name;
    }
  }
  if (lanes) *lanes = 0;
  return 0;
}

/* ---- The scalar forms: nf_m_exp(double), nf_m_expf(float), ... ---------- */
#define NF_SCALAR1(fn)                                                                     \
  double nf_m_##fn(double x) { return g_d[K_##fn].one_d(g_d[K_##fn].f, x, x); }            \
  float nf_m_##fn##f(float x) { return g_f[K_##fn].one_f(g_f[K_##fn].f, x, x); }
#define NF_SCALAR2(fn)                                                                     \
  double nf_m_##fn(double x, double y) { return g_d[K_##fn].one_d(g_d[K_##fn].f, x, y); }  \
  float nf_m_##fn##f(float x, float y) { return g_f[K_##fn].one_f(g_f[K_##fn].f, x, y); }
NF_VMATH_UNARY(NF_SCALAR1)
NF_VMATH_BINARY(NF_SCALAR2)

/* ---- The vector forms, by the x86-64 vector function ABI ------------------
 * _ZGV<isa>N<lanes>v[v]_nf_m_<fn>: b SSE (xmm), c AVX and d AVX2 (ymm), e
 * AVX-512 (zmm); what the build's compiler calls for a `simd` declaration,
 * and what the JIT's vectorizer is given. */
#ifdef NF_VMATH_X86
#define NF_VEC1(fn, sfx, tab, E, RUN, isa, tgt, T, n, LD, ST, WIDE)                                \
  __attribute__((target(tgt))) T _ZGV##isa##N##n##v_nf_m_##fn##sfx(T x) {                   \
    const struct impl* m = &tab[K_##fn];                                                     \
    if (m->lanes == n) return ((T(*)(T))m->f)(x);                                            \
    if (m->WIDE[0]) return ((T(*)(void*, T))m->WIDE[0])(m->f, x);                            \
    E a[n], r[n];                                                                            \
    ST(a, x);                                                                                \
    RUN(m, a, 0, r, n);                                             \
    return LD(r);                                                                            \
  }
#define NF_VEC2(fn, sfx, tab, E, RUN, isa, tgt, T, n, LD, ST, WIDE)                                \
  __attribute__((target(tgt))) T _ZGV##isa##N##n##vv_nf_m_##fn##sfx(T x, T y) {             \
    const struct impl* m = &tab[K_##fn];                                                     \
    if (m->lanes == n) return ((T(*)(T, T))m->f)(x, y);                                      \
    if (m->WIDE[1]) return ((T(*)(void*, T, T))m->WIDE[1])(m->f, x, y);                       \
    E a[n], b[n], r[n];                                                                      \
    ST(a, x);                                                                                \
    ST(b, y);                                                                                \
    RUN(m, a, b, r, n);                                \
    return LD(r);                                                                            \
  }
#define NF_VEC_ALL(V, fn)                                                                    \
  V(fn, , g_d, double, run_d, b, "sse2", __m128d, 2, _mm_loadu_pd, _mm_storeu_pd, from128)              \
  V(fn, , g_d, double, run_d, c, "avx", __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, from256)         \
  V(fn, , g_d, double, run_d, d, "avx2", __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, from256)        \
  V(fn, , g_d, double, run_d, e, "avx512f", __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, from512)     \
  V(fn, f, g_f, float, run_f, b, "sse2", __m128, 4, _mm_loadu_ps, _mm_storeu_ps, from128)               \
  V(fn, f, g_f, float, run_f, c, "avx", __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, from256)          \
  V(fn, f, g_f, float, run_f, d, "avx2", __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, from256)         \
  V(fn, f, g_f, float, run_f, e, "avx512f", __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, from512)
#define NF_VEC_ALL1(fn) NF_VEC_ALL(NF_VEC1, fn)
#define NF_VEC_ALL2(fn) NF_VEC_ALL(NF_VEC2, fn)
NF_VMATH_UNARY(NF_VEC_ALL1)
NF_VMATH_BINARY(NF_VEC_ALL2)
#endif

/* ---- The symbol table ---------------------------------------------------- */
#define NF_SYM(name) {#name, (void*)&name},
#define NF_SYMS_SCALAR(fn) NF_SYM(nf_m_##fn) NF_SYM(nf_m_##fn##f)
#ifdef NF_VMATH_X86
#define NF_SYMS_VEC(fn, v)                                                                                  \
  NF_SYM(_ZGVbN2##v##_nf_m_##fn) NF_SYM(_ZGVcN4##v##_nf_m_##fn) NF_SYM(_ZGVdN4##v##_nf_m_##fn)             \
  NF_SYM(_ZGVeN8##v##_nf_m_##fn) NF_SYM(_ZGVbN4##v##_nf_m_##fn##f) NF_SYM(_ZGVcN8##v##_nf_m_##fn##f)       \
  NF_SYM(_ZGVdN8##v##_nf_m_##fn##f) NF_SYM(_ZGVeN16##v##_nf_m_##fn##f)
#define NF_SYMS_VEC1(fn) NF_SYMS_VEC(fn, v)
#define NF_SYMS_VEC2(fn) NF_SYMS_VEC(fn, vv)
#else
#define NF_SYMS_VEC1(fn)
#define NF_SYMS_VEC2(fn)
#endif
static const struct nf_vmath_symbol k_symbols[] = {
    NF_VMATH_UNARY(NF_SYMS_SCALAR) NF_VMATH_BINARY(NF_SYMS_SCALAR)
    NF_VMATH_UNARY(NF_SYMS_VEC1) NF_VMATH_BINARY(NF_SYMS_VEC2)
};

const struct nf_vmath_symbol* nf_vmath_symbols(int* count) {
  *count = (int)(sizeof k_symbols / sizeof k_symbols[0]);
  return k_symbols;
}

void* nf_vmath_function(const char* fn) {
  const size_t n = sizeof k_symbols / sizeof k_symbols[0];
  for (size_t k = 0; k < n; ++k)
    if (strncmp(k_symbols[k].name, "nf_m_", 5) == 0 && strcmp(k_symbols[k].name + 5, fn) == 0) return k_symbols[k].address;
  return 0;
}

// GEMM through CBLAS (OpenBLAS). Batched operands loop over the batch.
// Pattern (Fern annotation, inferred form): C{i, j, li, lj} is produced from
// A{i, 0, li, K} and B{0, j, K, lj}.
#include <dlfcn.h>

#include <cstring>
#include <string>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "extern/extern.h"

enum NfCblasOrder { NfRowMajor = 101 };
enum NfCblasTrans { NfNoTrans = 111, NfTrans = 112 };

extern "C" {
// The OpenBLAS numfuse links against (Debian's, 32-bit integer interface).
void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc);
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void cblas_dgemv(int order, int trans, int m, int n, double alpha, const double* a, int lda, const double* x,
                 int incx, double beta, double* y, int incy);
void cblas_sgemv(int order, int trans, int m, int n, float alpha, const float* a, int lda, const float* x,
                 int incx, float beta, float* y, int incy);
double cblas_ddot(int n, const double* x, int incx, const double* y, int incy);
float cblas_sdot(int n, const float* x, int incx, const float* y, int incy);
}

namespace {

// The BLAS in use, with 64-bit integer arguments. By default the linked
// OpenBLAS; use_blas_library() switches to another CBLAS in the process (the
// one NumPy bundles), so numfuse and NumPy share one BLAS and one thread pool.
struct Blas {
  void (*dgemm)(int, int, int, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*, int64_t,
                double, double*, int64_t);
  void (*sgemm)(int, int, int, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                float, float*, int64_t);
  void (*dgemv)(int, int, int64_t, int64_t, double, const double*, int64_t, const double*, int64_t, double, double*,
                int64_t);
  void (*sgemv)(int, int, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
                int64_t);
  double (*ddot)(int64_t, const double*, int64_t, const double*, int64_t);
  float (*sdot)(int64_t, const float*, int64_t, const float*, int64_t);
  std::string name = "linked OpenBLAS (LP64)";
};

Blas linked_blas() {
  Blas b;
  b.dgemm = [](int o, int ta, int tb, int64_t m, int64_t n, int64_t k, double al, const double* a, int64_t lda,
               const double* x, int64_t ldb, double be, double* c, int64_t ldc) {
    cblas_dgemm(o, ta, tb, m, n, k, al, a, lda, x, ldb, be, c, ldc);
  };
  b.sgemm = [](int o, int ta, int tb, int64_t m, int64_t n, int64_t k, float al, const float* a, int64_t lda,
               const float* x, int64_t ldb, float be, float* c, int64_t ldc) {
    cblas_sgemm(o, ta, tb, m, n, k, al, a, lda, x, ldb, be, c, ldc);
  };
  b.dgemv = [](int o, int t, int64_t m, int64_t n, double al, const double* a, int64_t lda, const double* x,
               int64_t ix, double be, double* y, int64_t iy) { cblas_dgemv(o, t, m, n, al, a, lda, x, ix, be, y, iy); };
  b.sgemv = [](int o, int t, int64_t m, int64_t n, float al, const float* a, int64_t lda, const float* x,
               int64_t ix, float be, float* y, int64_t iy) { cblas_sgemv(o, t, m, n, al, a, lda, x, ix, be, y, iy); };
  b.ddot = [](int64_t n, const double* x, int64_t ix, const double* y, int64_t iy) {
    return cblas_ddot(n, x, ix, y, iy);
  };
  b.sdot = [](int64_t n, const float* x, int64_t ix, const float* y, int64_t iy) {
    return cblas_sdot(n, x, ix, y, iy);
  };
  return b;
}

Blas g_blas = linked_blas();

}  // namespace

namespace nf::ext {

namespace {

// A 2-D operand BLAS can read: either rows contiguous (trans=No, ld=row
// stride) or columns contiguous (trans=Yes, ld=column stride).
struct Mat {
  const char* ptr;
  int trans;
  int64_t ld;
};

template <typename T>
bool as_blas(const char* base, int64_t s0, int64_t s1, int64_t rows, int64_t cols, Mat& m) {
  m.ptr = base;
  if ((s1 == 1 || cols == 1) && s0 >= std::max<int64_t>(cols, 1)) {
    m.trans = NfNoTrans;
    m.ld = std::max<int64_t>(s0, std::max<int64_t>(cols, 1));
    return true;
  }
  if ((s0 == 1 || rows == 1) && s1 >= std::max<int64_t>(rows, 1)) {
    m.trans = NfTrans;
    m.ld = std::max<int64_t>(s1, std::max<int64_t>(rows, 1));
    return true;
  }
  return false;
}

template <typename T>
void gemm(const Task& t) {
  const View& a = t.inputs[0];
  const View& b = t.inputs[1];
  const View& c = t.output;
  const int nd = c.ndim();
  const int64_t m = c.shape[nd - 2], n = c.shape[nd - 1], k = a.shape[nd - 1];
  const int64_t batch = shape_size(c.shape) / std::max<int64_t>(m * n, 1);
  char* abase = static_cast<char*>(a.buffer->data());
  char* bbase = static_cast<char*>(b.buffer->data());
  char* cbase = static_cast<char*>(c.buffer->data());
  std::vector<T> apack, bpack, cpack;
  for (int64_t bi = 0; bi < batch; ++bi) {
    // Offsets of this batch element in each operand.
    int64_t rem = bi, oa = a.offset, ob = b.offset, oc = c.offset;
    for (int d = nd - 3; d >= 0; --d) {
      int64_t ext = c.shape[d];
      int64_t idx = rem % ext;
      rem /= ext;
      oa += idx * a.strides[d];
      ob += idx * b.strides[d];
      oc += idx * c.strides[d];
    }
    const T* ap = reinterpret_cast<const T*>(abase) + oa;
    const T* bp = reinterpret_cast<const T*>(bbase) + ob;
    T* cp = reinterpret_cast<T*>(cbase) + oc;
    Mat ma, mb;
    int64_t as0 = a.strides[nd - 2], as1 = a.strides[nd - 1], bs0 = b.strides[nd - 2], bs1 = b.strides[nd - 1];
    if (!as_blas<T>(reinterpret_cast<const char*>(ap), as0, as1, m, k, ma)) {
      apack.resize(m * k);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) apack[i * k + j] = ap[i * as0 + j * as1];
      ma = {reinterpret_cast<const char*>(apack.data()), NfNoTrans, std::max<int64_t>(k, 1)};
    }
    if (!as_blas<T>(reinterpret_cast<const char*>(bp), bs0, bs1, k, n, mb)) {
      bpack.resize(k * n);
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) bpack[i * n + j] = bp[i * bs0 + j * bs1];
      mb = {reinterpret_cast<const char*>(bpack.data()), NfNoTrans, std::max<int64_t>(n, 1)};
    }
    const int64_t cs0 = c.strides[nd - 2], cs1 = c.strides[nd - 1];
    // Matrix-vector and dot products: the level-1/2 routines (memory bound,
    // and GEMM with a unit dimension is slower than GEMV in OpenBLAS).
    // (Vectors must advance forward: BLAS reads negative increments from the end.)
    if (m == 1 && n == 1) {
      const int64_t ia = ma.trans == NfNoTrans ? 1 : ma.ld, ib = mb.trans == NfNoTrans ? mb.ld : 1;
      T d;
      if constexpr (sizeof(T) == 8)
        d = g_blas.ddot(k, reinterpret_cast<const double*>(ma.ptr), ia, reinterpret_cast<const double*>(mb.ptr), ib);
      else
        d = g_blas.sdot(k, reinterpret_cast<const float*>(ma.ptr), ia, reinterpret_cast<const float*>(mb.ptr), ib);
      *cp = d;
      continue;
    }
    if (n == 1 && cs0 > 0) {  // y(m) = A(m,k) x(k): x is column 0 of B, y column 0 of C
      const int64_t ix = mb.trans == NfNoTrans ? mb.ld : 1;
      if constexpr (sizeof(T) == 8)
        g_blas.dgemv(NfRowMajor, ma.trans, ma.trans == NfNoTrans ? m : k, ma.trans == NfNoTrans ? k : m, 1.0,
                    reinterpret_cast<const double*>(ma.ptr), ma.ld, reinterpret_cast<const double*>(mb.ptr), ix,
                    0.0, reinterpret_cast<double*>(cp), cs0);
      else
        g_blas.sgemv(NfRowMajor, ma.trans, ma.trans == NfNoTrans ? m : k, ma.trans == NfNoTrans ? k : m, 1.0f,
                    reinterpret_cast<const float*>(ma.ptr), ma.ld, reinterpret_cast<const float*>(mb.ptr), ix,
                    0.0f, reinterpret_cast<float*>(cp), cs0);
      continue;
    }
    if (m == 1 && cs1 > 0) {  // y(n) = x(k) B(k,n) = B^T x
      const int64_t ix = ma.trans == NfNoTrans ? 1 : ma.ld;
      const int tb = mb.trans == NfNoTrans ? NfTrans : NfNoTrans;
      if constexpr (sizeof(T) == 8)
        g_blas.dgemv(NfRowMajor, tb, mb.trans == NfNoTrans ? k : n, mb.trans == NfNoTrans ? n : k, 1.0,
                    reinterpret_cast<const double*>(mb.ptr), mb.ld, reinterpret_cast<const double*>(ma.ptr), ix,
                    0.0, reinterpret_cast<double*>(cp), cs1);
      else
        g_blas.sgemv(NfRowMajor, tb, mb.trans == NfNoTrans ? k : n, mb.trans == NfNoTrans ? n : k, 1.0f,
                    reinterpret_cast<const float*>(mb.ptr), mb.ld, reinterpret_cast<const float*>(ma.ptr), ix,
                    0.0f, reinterpret_cast<float*>(cp), cs1);
      continue;
    }
    const bool c_direct = (cs1 == 1 || n == 1) && cs0 >= std::max<int64_t>(n, 1);
    T* cout = cp;
    int64_t ldc = std::max<int64_t>(cs0, std::max<int64_t>(n, 1));
    if (!c_direct) {
      cpack.assign(m * n, T(0));
      cout = cpack.data();
      ldc = std::max<int64_t>(n, 1);
    }
    if constexpr (sizeof(T) == 8)
      g_blas.dgemm(NfRowMajor, ma.trans, mb.trans, m, n, k, 1.0, reinterpret_cast<const double*>(ma.ptr), ma.ld,
                  reinterpret_cast<const double*>(mb.ptr), mb.ld, 0.0, reinterpret_cast<double*>(cout), ldc);
    else
      g_blas.sgemm(NfRowMajor, ma.trans, mb.trans, m, n, k, 1.0f, reinterpret_cast<const float*>(ma.ptr), ma.ld,
                  reinterpret_cast<const float*>(mb.ptr), mb.ld, 0.0f, reinterpret_cast<float*>(cout), ldc);
    if (!c_direct)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) cp[i * cs0 + j * cs1] = cpack[i * n + j];
  }
}

}  // namespace

void run_routine(const Task& t) {
  switch (t.routine) {
    case RoutineId::Gemm:
      if (t.output.dtype == DType::Float64) gemm<double>(t);
      else if (t.output.dtype == DType::Float32) gemm<float>(t);
      else throw std::logic_error("gemm: unsupported type");
      return;
    default:
      throw std::logic_error("unknown routine");
  }
}

bool use_blas_library(const std::string& path, const std::string& prefix, const std::string& suffix) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  auto sym = [&](const char* name) { return dlsym(h, (prefix + name + suffix).c_str()); };
  void *dgemm = sym("cblas_dgemm"), *sgemm = sym("cblas_sgemm"), *dgemv = sym("cblas_dgemv"),
       *sgemv = sym("cblas_sgemv"), *ddot = sym("cblas_ddot"), *sdot = sym("cblas_sdot");
  if (!dgemm || !sgemm || !dgemv || !sgemv || !ddot || !sdot) return false;
  // An ILP64 CBLAS (64-bit integers): the table's own signature.
  Blas b;
  b.dgemm = reinterpret_cast<decltype(b.dgemm)>(dgemm);
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(sgemm);
  b.dgemv = reinterpret_cast<decltype(b.dgemv)>(dgemv);
  b.sgemv = reinterpret_cast<decltype(b.sgemv)>(sgemv);
  b.ddot = reinterpret_cast<decltype(b.ddot)>(ddot);
  b.sdot = reinterpret_cast<decltype(b.sdot)>(sdot);
  b.name = path;
  g_blas = b;
  return true;
}

std::string blas_name() { return g_blas.name; }

std::string pattern(RoutineId id) {
  switch (id) {
    case RoutineId::Gemm:
      return "gemm: C{i,j,li,lj} <- A{i,0,li,K}, B{0,j,K,lj}";
    default:
      return "?";
  }
}

}  // namespace nf::ext

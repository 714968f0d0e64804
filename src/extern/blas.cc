// The BLAS routine as an implementation of a contraction MdHom
// (tune::Routine::Blas): GEMM, GEMV or DOT per batch element, batch
// dimensions looped over here.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
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
void openblas_set_num_threads(int n);
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

// One GEMM (or GEMV / DOT when a dimension is 1): C(m,n) = A(m,k) B(k,n),
// strides in elements, any sign. Operands BLAS cannot address are packed.
template <typename T>
void gemm(const T* ap, int64_t as0, int64_t as1, const T* bp, int64_t bs0, int64_t bs1, T* cp, int64_t cs0,
          int64_t cs1, int64_t m, int64_t n, int64_t k, std::vector<T>& apack, std::vector<T>& bpack,
          std::vector<T>& cpack) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) cp[i * cs0 + j * cs1] = T(0);
    return;
  }
  Mat ma, mb;
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
  // Matrix-vector and dot products: the level-1/2 routines (memory bound,
  // and GEMM with a unit dimension is slower than GEMV in OpenBLAS).
  // (Vectors must advance forward: BLAS reads negative increments from the end.)
  if (m == 1 && n == 1) {
    const int64_t ia = ma.trans == NfNoTrans ? 1 : ma.ld, ib = mb.trans == NfNoTrans ? mb.ld : 1;
    if constexpr (sizeof(T) == 8)
      *cp = g_blas.ddot(k, reinterpret_cast<const double*>(ma.ptr), ia, reinterpret_cast<const double*>(mb.ptr), ib);
    else
      *cp = g_blas.sdot(k, reinterpret_cast<const float*>(ma.ptr), ia, reinterpret_cast<const float*>(mb.ptr), ib);
    return;
  }
  if (n == 1 && cs0 > 0) {  // y(m) = A(m,k) x(k): x is column 0 of B, y column 0 of C
    const int64_t ix = mb.trans == NfNoTrans ? mb.ld : 1;
    if constexpr (sizeof(T) == 8)
      g_blas.dgemv(NfRowMajor, ma.trans, ma.trans == NfNoTrans ? m : k, ma.trans == NfNoTrans ? k : m, 1.0,
                   reinterpret_cast<const double*>(ma.ptr), ma.ld, reinterpret_cast<const double*>(mb.ptr), ix, 0.0,
                   reinterpret_cast<double*>(cp), cs0);
    else
      g_blas.sgemv(NfRowMajor, ma.trans, ma.trans == NfNoTrans ? m : k, ma.trans == NfNoTrans ? k : m, 1.0f,
                   reinterpret_cast<const float*>(ma.ptr), ma.ld, reinterpret_cast<const float*>(mb.ptr), ix, 0.0f,
                   reinterpret_cast<float*>(cp), cs0);
    return;
  }
  if (m == 1 && cs1 > 0) {  // y(n) = x(k) B(k,n) = B^T x
    const int64_t ix = ma.trans == NfNoTrans ? 1 : ma.ld;
    const int tb = mb.trans == NfNoTrans ? NfTrans : NfNoTrans;
    if constexpr (sizeof(T) == 8)
      g_blas.dgemv(NfRowMajor, tb, mb.trans == NfNoTrans ? k : n, mb.trans == NfNoTrans ? n : k, 1.0,
                   reinterpret_cast<const double*>(mb.ptr), mb.ld, reinterpret_cast<const double*>(ma.ptr), ix, 0.0,
                   reinterpret_cast<double*>(cp), cs1);
    else
      g_blas.sgemv(NfRowMajor, tb, mb.trans == NfNoTrans ? k : n, mb.trans == NfNoTrans ? n : k, 1.0f,
                   reinterpret_cast<const float*>(mb.ptr), mb.ld, reinterpret_cast<const float*>(ma.ptr), ix, 0.0f,
                   reinterpret_cast<float*>(cp), cs1);
    return;
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

// The roles of an MdHom's dimensions in C(b,i,j) = sum_k A(b,i,k) B(b,k,j)
// (tune::blas_compatible guarantees at most one i, one j, exactly one k).
struct Roles {
  int a = 0, b = 0, c = 0;  // accesses
  int i = -1, j = -1, k = -1;
  std::vector<int> batch;
};

Roles roles_of(const mdh::MdHom& h) {
  Roles r;
  const mdh::Output& o = h.outputs[0];
  const ExprNode& root = h.f.nodes[o.value];
  r.a = h.f.nodes[root.a].a;
  r.b = h.f.nodes[root.b].a;
  r.c = o.access;
  for (int d = 0; d < h.ndim; ++d) {
    const bool a = h.accesses[r.a].kind[d] != mdh::StrideKind::Zero;
    const bool b = h.accesses[r.b].kind[d] != mdh::StrideKind::Zero;
    const bool c = h.accesses[r.c].kind[d] != mdh::StrideKind::Zero;
    if (a && b && c) r.batch.push_back(d);
    else if (a && c) r.i = d;
    else if (b && c) r.j = d;
    else r.k = d;
  }
  return r;
}

int64_t stride(const mdh::MdHom& h, const mdh::Bindings& bd, int access, int d) {
  if (d < 0) return 0;
  const mdh::Access& a = h.accesses[access];
  switch (a.kind[d]) {
    case mdh::StrideKind::Zero: return 0;
    case mdh::StrideKind::Unit: return 1;
    default: return bd.ints[a.stride[d]];
  }
}

template <typename T>
void contraction(const mdh::MdHom& h, const mdh::Bindings& bd) {
  const Roles r = roles_of(h);
  auto base = [&](int access) {
    const int p = h.accesses[access].ptr;
    return reinterpret_cast<T*>(static_cast<char*>(bd.buffers[p]->data()) + bd.offsets[p]);
  };
  auto ext = [&](int d) { return d < 0 ? int64_t(1) : bd.extent(h, d); };
  const int64_t m = ext(r.i), n = ext(r.j), k = ext(r.k);
  T* A = base(r.a);
  T* B = base(r.b);
  T* C = base(r.c);
  std::vector<T> apack, bpack, cpack;
  std::vector<int64_t> idx(r.batch.size(), 0);
  int64_t batches = 1;
  for (int d : r.batch) batches *= bd.extent(h, d);
  for (int64_t q = 0; q < batches; ++q) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (size_t t = 0; t < r.batch.size(); ++t) {
      const int d = r.batch[t];
      oa += idx[t] * stride(h, bd, r.a, d);
      ob += idx[t] * stride(h, bd, r.b, d);
      oc += idx[t] * stride(h, bd, r.c, d);
    }
    gemm<T>(A + oa, stride(h, bd, r.a, r.i), stride(h, bd, r.a, r.k), B + ob, stride(h, bd, r.b, r.k),
            stride(h, bd, r.b, r.j), C + oc, stride(h, bd, r.c, r.i), stride(h, bd, r.c, r.j), m, n, k, apack, bpack,
            cpack);
    for (size_t t = r.batch.size(); t-- > 0;) {  // odometer, last batch dim fastest
      if (++idx[t] < bd.extent(h, r.batch[t])) break;
      idx[t] = 0;
    }
  }
}

}  // namespace

bool gemm_strided(DType t, const void* a, int64_t as0, int64_t as1, const void* b, int64_t bs0, int64_t bs1, void* c,
                  int64_t cs0, int64_t cs1, int64_t m, int64_t n, int64_t k) {
  if (t == DType::Float64) {
    std::vector<double> ap, bp, cp;
    gemm<double>(static_cast<const double*>(a), as0, as1, static_cast<const double*>(b), bs0, bs1,
                 static_cast<double*>(c), cs0, cs1, m, n, k, ap, bp, cp);
    return true;
  }
  if (t == DType::Float32) {
    std::vector<float> ap, bp, cp;
    gemm<float>(static_cast<const float*>(a), as0, as1, static_cast<const float*>(b), bs0, bs1,
                static_cast<float*>(c), cs0, cs1, m, n, k, ap, bp, cp);
    return true;
  }
  return false;
}

void run_contraction(const mdh::MdHom& h, const mdh::Bindings& b) {
  const DType t = h.accesses[h.outputs.at(0).access].dtype;
  if (t == DType::Float64) contraction<double>(h, b);
  else if (t == DType::Float32) contraction<float>(h, b);
  else throw std::logic_error("run_contraction: not a floating-point contraction");
}

std::string routine_pattern(const mdh::MdHom& h) {
  const Roles r = roles_of(h);
  auto name = [](int d) { return d < 0 ? std::string("-") : "i" + std::to_string(d); };
  std::string kind = r.i >= 0 && r.j >= 0 ? "gemm" : r.i >= 0 || r.j >= 0 ? "gemv" : "dot";
  return kind + (r.batch.empty() ? "" : " (batched)") + ": C(" + name(r.i) + "," + name(r.j) + ") = sum over " +
         name(r.k) + " of A(" + name(r.i) + "," + name(r.k) + ") B(" + name(r.k) + "," + name(r.j) + ") [" +
         g_blas.name.substr(g_blas.name.rfind('/') + 1) + "]";
}

bool dot_like_numpy(DType t, const char* a, int64_t as, const char* b, int64_t bs, int64_t n, double* out) {
  if (t != DType::Float32 && t != DType::Float64) return false;
  const int64_t size = itemsize(t);
  // NumPy's blas_stride: positive multiples of the item size; chunks of
  // NPY_CBLAS_CHUNK elements summed in double.
  constexpr int64_t kChunk = (int64_t{1} << 30);
  if (as > 0 && bs > 0 && as % size == 0 && bs % size == 0 && as / size <= INT32_MAX && bs / size <= INT32_MAX) {
    double sum = 0;
    for (int64_t done = 0; done < n; done += kChunk) {
      const int64_t k = std::min(kChunk, n - done);
      if (t == DType::Float64)
        sum += g_blas.ddot(k, reinterpret_cast<const double*>(a + done * as), as / size,
                           reinterpret_cast<const double*>(b + done * bs), bs / size);
      else
        sum += g_blas.sdot(k, reinterpret_cast<const float*>(a + done * as), as / size,
                           reinterpret_cast<const float*>(b + done * bs), bs / size);
    }
    *out = t == DType::Float32 ? static_cast<double>(static_cast<float>(sum)) : sum;
    return true;
  }
  if (t == DType::Float64) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double x, y;
      std::memcpy(&x, a + i * as, 8);
      std::memcpy(&y, b + i * bs, 8);
      const double p = x * y;  // (no contraction into an FMA: NumPy's loop multiplies, then adds)
      sum += p;
    }
    *out = sum;
  } else {
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      float x, y;
      std::memcpy(&x, a + i * as, 4);
      std::memcpy(&y, b + i * bs, 4);
      const float p = x * y;
      sum += p;
    }
    *out = sum;
  }
  return true;
}

void set_linked_blas_threads(int n) { openblas_set_num_threads(n); }

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

}  // namespace nf::ext

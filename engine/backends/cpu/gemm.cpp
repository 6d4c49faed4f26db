#include "engine/backends/cpu/gemm.h"

#include <Eigen/Core>

#ifdef TSCOPE_HAVE_OPENBLAS
extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);
#endif

namespace tscope::engine::cpu {

namespace {

template <class T>
using RowMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using ColMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, Eigen::Unaligned,
                          Eigen::OuterStride<>>;

// Eigen refuses an outer stride of 0; a matrix with one row (or column) never uses it.
Eigen::Index stride(std::int64_t ld) { return static_cast<Eigen::Index>(ld > 0 ? ld : 1); }

template <class T, class AMap, class BMap>
void product(const AMap& a, const BMap& b, T alpha, T beta, OutMap<T>& c) {
  if (beta == T(0)) {
    // noalias: Eigen writes straight into C (zero-filled first, so old NaNs vanish as in BLAS).
    c.noalias() = alpha * (a * b);
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

template <class T>
void gemmImpl(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
              std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  OutMap<T> c(C, m, n, Eigen::OuterStride<>(stride(ldc)));
  if (k <= 0) {
    if (beta == T(0)) c.setZero();
    else if (beta != T(1)) c *= beta;
    return;
  }
  if (!transA && !transB)
    product(RowMap<T>(A, m, k, Eigen::OuterStride<>(stride(lda))),
            RowMap<T>(B, k, n, Eigen::OuterStride<>(stride(ldb))), alpha, beta, c);
  else if (!transA && transB)
    product(RowMap<T>(A, m, k, Eigen::OuterStride<>(stride(lda))),
            ColMap<T>(B, k, n, Eigen::OuterStride<>(stride(ldb))), alpha, beta, c);
  else if (transA && !transB)
    product(ColMap<T>(A, m, k, Eigen::OuterStride<>(stride(lda))),
            RowMap<T>(B, k, n, Eigen::OuterStride<>(stride(ldb))), alpha, beta, c);
  else
    product(ColMap<T>(A, m, k, Eigen::OuterStride<>(stride(lda))),
            ColMap<T>(B, k, n, Eigen::OuterStride<>(stride(ldb))), alpha, beta, c);
}

}  // namespace

void gemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* A,
          std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  gemmImpl(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* A,
          std::int64_t lda, const double* B, std::int64_t ldb, double beta, double* C, std::int64_t ldc) {
  gemmImpl(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

std::string gemmBackendName() {
#if defined(EIGEN_USE_BLAS) && defined(TSCOPE_HAVE_OPENBLAS)
  const char* core = openblas_get_corename();
  return std::string("Eigen + BLAS (OpenBLAS, ") + (core ? core : "unknown") + " kernels)";
#elif defined(EIGEN_USE_BLAS)
  return "Eigen + BLAS";
#else
  return "Eigen";
#endif
}

void setGemmThreads(int n) {
#ifdef TSCOPE_HAVE_OPENBLAS
  openblas_set_num_threads(n < 1 ? 1 : n);
#else
  (void)n;
#endif
}

}  // namespace tscope::engine::cpu

#include "engine/backends/cpu/gemm.h"

#include "engine/backends/cpu/dnnl_matmul.h"
#include "engine/backends/cpu/threads.h"
#include "engine/vm/cancel.h"

#include <Eigen/Core>
#include <algorithm>
#include <cctype>
#include <string>
#include <type_traits>

#ifdef TSCOPE_HAVE_OPENBLAS
#include <cstdlib>
#include <mutex>
#include <string_view>

extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);
extern "C" int openblas_get_num_threads(void);
// Present in DYNAMIC_ARCH builds of OpenBLAS (Debian's); weak so other builds still link.
extern "C" __attribute__((weak)) void gotoblas_dynamic_init(void);
extern "C" __attribute__((weak)) void gotoblas_dynamic_quit(void);
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
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;

// Eigen refuses an outer stride of 0; a matrix with one row (or column) never uses it.
Eigen::Index stride(std::int64_t ld) {
  return static_cast<Eigen::Index>(ld > 0 ? ld : 1);
}

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
void gemmBlock(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
               const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
               std::int64_t ldc) {
  OutMap<T> c(C, m, n, Eigen::OuterStride<>(stride(ldc)));
  if (k <= 0) {
    if (beta == T(0))
      c.setZero();
    else if (beta != T(1))
      c *= beta;
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

// Note [Cancellable products]: a product of more than 4 * kCancelBlockMacs multiply-adds (about
// 30 ms on one core and more) runs as blocks of rows of C of about kCancelBlockMacs each, checking
// for a stop request (Note [Cancellation seam] in engine/vm/cancel.h) before each block, so
// stopping a debug session in the middle of a big GEMM takes one block, not the whole product.
// Each block is still a large product (at least 64 rows), so the split costs nothing measurable;
// every element of C is computed by the same dot product over k as without the split.
constexpr double kCancelBlockMacs = 1 << 26;

// One block: oneDNN's matmul for float32 when it takes the product (Note [oneDNN products] in
// dnnl_matmul.h), else Eigen (+ BLAS).
template <class T>
void runBlock(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
              const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
              std::int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    if (dnnlGemm(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  gemmBlock(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Note [Small products on one thread]: OpenBLAS's worker threads spin for a long while after a
// product they took part in (its THREAD_TIMEOUT, read once at load), and so do OpenMP's after a
// oneDNN convolution. On two CPUs a CNN's classifier (ResNet-18's 1x512 by 512x1000, 0.23 ms on
// one thread) woke OpenBLAS's worker, which then spun through the next call's first convolutions:
// `tensorscope profile --compare-threads 1,2` showed the classifier at 0.24x (0.23 -> 0.96 ms), the
// stem at 0.81x and layer1's convolutions at 0.97-1.00x, while by fastest call they scale 1.9x.
// A product too small to gain from a second thread (kSmallProductMacs) runs with OpenBLAS set to
// one thread, so no worker wakes; the count goes back to the engine's after it.
constexpr double kSmallProductMacs = 1 << 20;

#ifdef TSCOPE_HAVE_OPENBLAS
struct OneBlasThread {
  const bool active = intraOpThreads() > 1;
  OneBlasThread() {
    if (active) openblas_set_num_threads(1);
  }
  ~OneBlasThread() {
    if (active) openblas_set_num_threads(intraOpThreads());
  }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;
};
#else
struct OneBlasThread {};
#endif

template <class T>
void gemmImpl(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
              const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
              std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (macs <= kSmallProductMacs) {
    const OneBlasThread one;
    runBlock(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (macs <= 4 * kCancelBlockMacs) {
    runBlock(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const auto rows = std::max<std::int64_t>(
      64, static_cast<std::int64_t>(kCancelBlockMacs / (static_cast<double>(n) * k)));
  for (std::int64_t i0 = 0; i0 < m; i0 += rows) {
    throwIfCancelled();
    const std::int64_t mb = std::min(rows, m - i0);
    // Row i of op(A) starts at A + i * lda (row-major A) or A + i (A^T of a row-major matrix).
    const T* a = transA ? A + i0 : A + i0 * lda;
    runBlock(transA, transB, mb, n, k, alpha, a, lda, B, ldb, beta, C + i0 * ldc, ldc);
  }
}

#ifdef TSCOPE_HAVE_OPENBLAS
// Note [OpenBLAS kernel choice]: OpenBLAS 0.3.21 picks its kernels when it loads, from the CPU
// model. On CPUs it does not know (virtual machines that report "Intel Xeon Processor", newer
// models) it falls back to the generic Prescott kernels, about 5x slower than its SkylakeX kernels
// on AVX-512 hardware (figures in gemm.h). Before the first product, when the user has not chosen
// (OPENBLAS_CORETYPE unset), the fallback is in use and the CPU has the AVX-512 subsets the
// SkylakeX kernels need, re-run OpenBLAS's kernel selection with OPENBLAS_CORETYPE=SkylakeX.
// TSCOPE_OPENBLAS_AUTOCORE=0 turns this off.
void selectBlasKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
    if (const char* off = std::getenv("TSCOPE_OPENBLAS_AUTOCORE");
        off && std::string_view(off) == "0")
      return;
    if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return;
    const char* core = openblas_get_corename();
    if (core == nullptr) return;
    std::string name(core);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (name != "prescott") return;
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vl")))
      return;
    ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
  });
}
#else
void selectBlasKernels() {}
#endif

}  // namespace

void gemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
          std::int64_t ldc) {
  selectBlasKernels();
  intraOpThreads();  // reads TSCOPE_NUM_THREADS before the first product
  gemmImpl(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta,
          double* C, std::int64_t ldc) {
  selectBlasKernels();
  intraOpThreads();
  gemmImpl(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

std::string gemmBackendName() {
  // Note [oneDNN products] (dnnl_matmul.h): float32 goes to oneDNN first where its kernel is
  // brgemm; which kernel a mid-sized product gets says whether this CPU has one.
  std::string dnnl;
  if (dnnlGemmEnabled()) {
    const std::string kernel = dnnlGemmKernel(false, false, 128, 128, 128);
    dnnl = kernel.starts_with("brg") ? "oneDNN matmul (float32, " + kernel + "), else "
                                     : "oneDNN matmul only where forced (its kernel here: " +
                                           (kernel.empty() ? std::string("none") : kernel) + "), ";
  }
#if defined(EIGEN_USE_BLAS) && defined(TSCOPE_HAVE_OPENBLAS)
  selectBlasKernels();
  const char* core = openblas_get_corename();
  return dnnl + "Eigen + BLAS (OpenBLAS, " + (core ? core : "unknown") + " kernels)";
#elif defined(EIGEN_USE_BLAS)
  return dnnl + "Eigen + BLAS";
#else
  return dnnl + "Eigen";
#endif
}

void setGemmThreads(int n) {
#ifdef TSCOPE_HAVE_OPENBLAS
  openblas_set_num_threads(n < 1 ? 1 : n);
#else
  (void)n;
#endif
}

int gemmThreads() {
#ifdef TSCOPE_HAVE_OPENBLAS
  return openblas_get_num_threads();
#else
  return 1;
#endif
}

}  // namespace tscope::engine::cpu

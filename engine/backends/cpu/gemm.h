#pragma once
// The CPU matrix-product kernel the BLAS ops (Dot, Gemm, Gemv, Ger) and later conv2d call: BLAS's
// GEMM in row-major terms, implemented with Eigen (Map + noalias products, so no temporaries).
// When the engine is built with TSCOPE_EIGEN_USE_BLAS (engine/CMakeLists.txt), Eigen forwards
// these products to OpenBLAS's sgemm/dgemm.
//
// Note [Row-major GEMM]: every matrix is row-major with a leading dimension (the distance in
// elements between two rows as stored):
//   C (m x n) = alpha * op(A) * op(B) + beta * C
// op(A) is A (stored m x k, lda >= k) or, with transA, the transpose of A (stored k x m, lda >= m);
// likewise op(B) is k x n (stored k x n with ldb >= n, or n x k with transB). A transposed operand
// is therefore just a column-major one: a tensor whose last two axes were swapped by a view is
// passed with trans = true and no copy. beta == 0 ignores C's old contents (NaN included), as BLAS
// does; k == 0 gives C = beta * C.

#include <cstdint>
#include <string>

namespace tscope::engine::cpu {

void gemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
          std::int64_t ldc);
void gemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta,
          double* C, std::int64_t ldc);

// Note [GEMM backend figures] (tests/bench/bench_gemm.cpp, float32, one thread, Xeon with
// AVX-512 under load; ms per product, lower is better):
//                                       128x784 . 784x500    512x512 . 512x512
//   Eigen (TSCOPE_EIGEN_USE_BLAS=OFF)        ~5.0 (20 GFLOP/s)    ~13.5 (20 GFLOP/s)
//   OpenBLAS 0.3.21, kernels auto-detected   ~5.0                 ~13.0
//   OpenBLAS, OPENBLAS_CORETYPE=SkylakeX     ~0.86 (116 GFLOP/s)  ~2.5 (105 GFLOP/s)
// Dot::perform adds nothing measurable on these shapes. Hence the default ON. OpenBLAS picks its
// kernels when it is loaded, from the CPU model; on a CPU it does not know (a virtual machine's
// "Intel Xeon Processor") it falls back to generic SSE3 ("Prescott") kernels, no faster than
// Eigen's. gemmBackendName() shows the kernels in use; set OPENBLAS_CORETYPE (SkylakeX, Haswell)
// in the environment before starting the program to get the fast ones.

// What the products run on: "Eigen", or "Eigen + BLAS (OpenBLAS, SkylakeX kernels)".
std::string gemmBackendName();
// Limits the BLAS library to n threads (openblas_set_num_threads); a no-op for plain Eigen, which
// this project builds without OpenMP and so always runs on the calling thread. Benchmarks call it
// with 1 for reproducible figures (tests/bench/bench_gemm.cpp).
void setGemmThreads(int n);
// The BLAS library's current thread limit (openblas_get_num_threads); 1 for plain Eigen. With
// setGemmThreads, lets a caller restore the setting it found (profiling/calibration.cpp).
int gemmThreads();

}  // namespace tscope::engine::cpu

#pragma once
// Float32 matrix products through oneDNN's matmul (its brgemm kernels, JIT-compiled for the CPU's
// instruction set), when the build found oneDNN (TSCOPE_HAVE_DNNL). cpu::gemm (gemm.h) calls it
// first for float32 and falls back to Eigen + BLAS when it returns false.
//
//   if (!cpu::dnnlGemm(false, false, m, n, k, 1.f, A, k, B, n, 0.f, C, n)) ...;  // C = A B
//
// Note [oneDNN products]: measured on this class of machine (one thread, AVX-512, float32,
// 128 x 256 . 256 x 1024, a transformer's feed-forward layer; tests/bench/bench_gemm.cpp):
// OpenBLAS 0.3.21's SkylakeX kernels 426 us (158 GFLOP/s), oneDNN's matmul 353 us (190 GFLOP/s);
// 214 against 175 GFLOP/s for 128 x 1024 . 1024 x 256. oneDNN also needs no help to find its
// kernels (cpuid at run time), where OpenBLAS picks generic ones on CPUs it does not know (Note
// [OpenBLAS kernel choice] in gemm.cpp). The products it leaves to BLAS: tiny ones (under 32^3
// multiply-adds, where a call's fixed cost dominates), empty ones, and every product when
// TSCOPE_DNNL_GEMM=0 is set. A transposed A (an MLP's weight gradient x^T . g, 784 x 128 . 128 x
// 500) is 5 % slower in oneDNN on one thread (515 against 490 us) but goes to oneDNN too: with
// two threads, products shared between OpenBLAS's thread pool and oneDNN's OpenMP one left each
// pool's idle threads spinning against the other's, and the MLP's SGD step took 2.69 ms instead
// of 0.62 ms (bench_vm BM_MlpSgdStep/1, 2 threads; 1.07 ms on one). Each element of C is a dot
// product over k computed by one thread whatever the thread count, so results do not depend on it.
// alpha scales the product and beta adds beta * C (a sum post-op); beta == 0 ignores C's old
// contents, NaN included, as BLAS does.
// Only brgemm kernels take products. On a CPU without AVX-512 (an AMD EPYC with AVX2 + FMA)
// oneDNN 2.7 has no brgemm matmul and falls back to its generic "gemm:jit", which is slower than
// OpenBLAS's own kernels for the CPU: the transformer encoder's inference took 16.8-17.7 ms with
// every product in oneDNN against 13.8-14.3 ms with them in OpenBLAS's Zen kernels (one thread,
// bench_onnx_resnet, same machine, interleaved runs). So a product whose plan is not brgemm goes
// to BLAS; dnnlGemmKernel names the kernel, and TSCOPE_DNNL_GEMM=force (setDnnlGemmAnyKernel)
// sends every product to oneDNN anyway.

#include <cstdint>
#include <string>

namespace tscope::engine::cpu {

// C (m x n) = alpha * op(A) op(B) + beta * C, row-major with leading dimensions (Note [Row-major
// GEMM] in gemm.h). Returns false (touching nothing) when oneDNN is not in the build, disabled, or
// the product is one it leaves to BLAS; throws std::runtime_error naming the shapes when oneDNN
// refuses it.
// Whether dnnlGemm takes float32 products: the build has oneDNN and TSCOPE_DNNL_GEMM is not 0.
bool dnnlGemmEnabled();
// Whether oneDNN also takes the products it has only generic kernels for (false by default, true
// with TSCOPE_DNNL_GEMM=force): Note [oneDNN products].
void setDnnlGemmAnyKernel(bool on);
// The oneDNN kernel a packed product of this geometry runs on ("brg:avx512_core", "gemm:jit");
// empty without oneDNN or when oneDNN refuses it.
std::string dnnlGemmKernel(bool transA, bool transB, std::int64_t m, std::int64_t n,
                           std::int64_t k);

bool dnnlGemm(bool transA, bool transB, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
              float* C, std::int64_t ldc);

}  // namespace tscope::engine::cpu

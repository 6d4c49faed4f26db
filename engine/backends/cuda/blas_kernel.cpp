// Matrix products on the GPU through cuBLAS, float32 (Dot, Gemm, Gemv) and float16 (Dot).
// cuBLAS is column-major and our tensors are row-major: a row-major (m, n) matrix is the
// column-major (n, m) matrix of its transpose, so C = A B is computed as C^T = B^T A^T with the
// operands swapped and no transposition flag (Note [Row-major cuBLAS]).
//
// Note [Half products]: a float16 Dot runs cublasGemmEx (cublasGemmStridedBatchedEx for stacks)
// with CUDA_R_16F operands and result, CUBLAS_COMPUTE_32F (products summed in float32, as the
// CPU's float16 Dot does before its one rounding) and CUBLAS_GEMM_DEFAULT, which takes the tensor
// cores for half operands. Every float16 Dot shape is a matrix product there: a vector is a (1, k)
// or (k, 1) matrix (no half sdot/sgemv in cuBLAS). The engine's Gemm and Gemv are float32/float64
// only (specialize_blas builds none for float16), so a float16 graph's products are all Dots. The
// engine has no bfloat16 dtype; CUDA_R_16BF would be the same call.
#include "engine/backends/cuda/cuda_error.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/graph/apply.h"
#include "engine/graph/op.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
cublasHandle_t handle() {
  return static_cast<cublasHandle_t>(CudaRuntime::instance().cublas());
}

const float* f(const Tensor& t) {
  return static_cast<const float*>(t.rawData());
}
float* f(Tensor& t) {
  return static_cast<float*>(t.rawData());
}

// Pointer mode for this call only (alpha/beta on the device for Gemm/Gemv, host constants else).
class PointerMode {
 public:
  explicit PointerMode(cublasPointerMode_t mode) {
    TSCOPE_CUBLAS_CHECK(cublasSetPointerMode(handle(), mode));
  }
  ~PointerMode() { cublasSetPointerMode(handle(), CUBLAS_POINTER_MODE_HOST); }
};

void requireFloat32(const Tensor& t, const Apply& node, int input) {
  if (t.dtype() != DType::Float32)
    throw std::invalid_argument(node.op().str() + " (node " + std::to_string(node.id()) +
                                ") on the GPU: expected float32 input " + std::to_string(input) +
                                ", found " + std::string(dtypeName(t.dtype())));
}

int dim(std::int64_t d) {
  if (d > std::numeric_limits<int>::max())
    throw std::invalid_argument("cuBLAS: a dimension of " + std::to_string(d) +
                                " does not fit cuBLAS's int");
  return static_cast<int>(d);
}

// C (m, n) = A (m, k) B (k, n), row-major, batched with element strides (0: broadcast).
void gemmRowMajor(int m, int n, int k, const float* alpha, const float* A, long long strideA,
                  const float* B, long long strideB, const float* beta, float* C, long long batch) {
  if (batch == 1)
    TSCOPE_CUBLAS_CHECK(
        cublasSgemm(handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, B, n, A, k, beta, C, n));
  else
    TSCOPE_CUBLAS_CHECK(cublasSgemmStridedBatched(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, B, n, strideB, A, k, strideA, beta, C,
        n, static_cast<long long>(m) * n, static_cast<int>(batch)));
}
// Note [Half products]: C (m, n) = alpha A (m, k) B (k, n) + beta C, float16 operands, float32
// scalars and accumulation, batched with element strides (0: broadcast).
void gemmRowMajorHalf(int m, int n, int k, const float* alpha, const void* A, long long strideA,
                      const void* B, long long strideB, const float* beta, void* C,
                      long long batch) {
  if (batch == 1)
    TSCOPE_CUBLAS_CHECK(cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, B,
                                     CUDA_R_16F, n, A, CUDA_R_16F, k, beta, C, CUDA_R_16F, n,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    TSCOPE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, B, CUDA_R_16F, n, strideB, A,
        CUDA_R_16F, k, strideA, beta, C, CUDA_R_16F, n, static_cast<long long>(m) * n,
        static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void requireFloat16(const Tensor& t, const Apply& node, int input) {
  if (t.dtype() != DType::Float16)
    throw std::invalid_argument(node.op().str() + " (node " + std::to_string(node.id()) +
                                ") on the GPU: expected float16 input " + std::to_string(input) +
                                ", found " + std::string(dtypeName(t.dtype())));
}

// Stacks: each operand's batch dims are either the broadcast batch or all ones (stride 0).
struct Batched {
  int m = 0, n = 0, k = 0;
  long long batch = 1, strideA = 0, strideB = 0;
  Shape outShape;
};
Batched batchedShapes(const Tensor& a, const Tensor& b) {
  Batched r;
  r.m = dim(a.shape()[a.ndim() - 2]);
  r.k = dim(a.shape()[a.ndim() - 1]);
  r.n = dim(b.shape()[b.ndim() - 1]);
  const Shape batchA(a.shape().begin(), a.shape().end() - 2);
  const Shape batchB(b.shape().begin(), b.shape().end() - 2);
  const Shape& longer = batchA.size() >= batchB.size() ? batchA : batchB;
  auto ones = [](const Shape& s) {
    for (std::int64_t d : s)
      if (d != 1) return false;
    return true;
  };
  const bool aFull = batchA == longer, bFull = batchB == longer;
  if ((!aFull && !ones(batchA)) || (!bFull && !ones(batchB)) || b.shape()[b.ndim() - 2] != r.k)
    throw std::invalid_argument(
        "Dot on the GPU: expected equal batch dimensions (or one operand "
        "without them) and matching inner sizes, found " +
        shapeToString(a.shape()) + " and " + shapeToString(b.shape()));
  r.batch = shapeNumel(longer);
  r.strideA = aFull ? static_cast<long long>(r.m) * r.k : 0;
  r.strideB = bFull ? static_cast<long long>(r.k) * r.n : 0;
  r.outShape = longer;
  r.outShape.push_back(r.m);
  r.outShape.push_back(r.n);
  return r;
}

// The products other than vector/matrix ones take two stacks of matrices.
void requireStacks(const Tensor& a, const Tensor& b) {
  if (a.ndim() < 2 || b.ndim() < 2)
    throw std::invalid_argument(
        "Dot on the GPU: expected ranks (1|2, 1|2) or two stacks of matrices, found " +
        shapeToString(a.shape()) + " and " + shapeToString(b.shape()));
}

// Note [Half products]: every float16 Dot as a (batched) matrix product.
void dotHalf(const Tensor& a, const Tensor& b, Tensor& out) {
  static const float one = 1.0f, zero = 0.0f;
  if (a.ndim() <= 2 && b.ndim() <= 2) {
    // A vector is a (1, k) matrix on the left and a (k, 1) matrix on the right.
    const int m = a.ndim() == 2 ? dim(a.shape()[0]) : 1;
    const int k = dim(a.shape()[a.ndim() - 1]);
    const int kb = dim(b.shape()[0]);
    const int n = b.ndim() == 2 ? dim(b.shape()[1]) : 1;
    if (k != kb)
      throw std::invalid_argument("Dot on the GPU: inner sizes differ, found " +
                                  shapeToString(a.shape()) + " and " + shapeToString(b.shape()));
    Shape shape;
    if (a.ndim() == 2) shape.push_back(m);
    if (b.ndim() == 2) shape.push_back(n);
    out = emptyOn(Device::Cuda, DType::Float16, shape);
    if (out.numel() == 0) return;
    if (k == 0) {
      TSCOPE_CUDA_CHECK(
          cudaMemsetAsync(out.rawData(), 0, out.nbytes(),
                          static_cast<cudaStream_t>(CudaRuntime::instance().stream())));
      return;
    }
    gemmRowMajorHalf(m, n, k, &one, a.rawData(), 0, b.rawData(), 0, &zero, out.rawData(), 1);
    return;
  }
  requireStacks(a, b);
  const Batched s = batchedShapes(a, b);
  out = emptyOn(Device::Cuda, DType::Float16, s.outShape);
  if (out.numel() == 0) return;
  gemmRowMajorHalf(s.m, s.n, s.k, &one, a.rawData(), s.strideA, b.rawData(), s.strideB, &zero,
                   out.rawData(), s.batch);
}
}  // namespace

void dotKernel(const Op&, const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  if (inputs[0]->dtype() == DType::Float16) {
    requireFloat16(*inputs[1], node, 1);
    const Tensor a = deviceContiguous(*inputs[0]), b = deviceContiguous(*inputs[1]);
    dotHalf(a, b, *outputs[0]);
    return;
  }
  requireFloat32(*inputs[0], node, 0);
  requireFloat32(*inputs[1], node, 1);
  const Tensor a = deviceContiguous(*inputs[0]), b = deviceContiguous(*inputs[1]);
  static const float one = 1.0f, zero = 0.0f;
  Tensor& out = *outputs[0];
  if (a.ndim() == 1 && b.ndim() == 1) {
    if (a.shape()[0] != b.shape()[0])
      throw std::invalid_argument("Dot on the GPU: vectors of lengths " +
                                  std::to_string(a.shape()[0]) + " and " +
                                  std::to_string(b.shape()[0]));
    out = emptyOn(Device::Cuda, DType::Float32, {});
    PointerMode mode(CUBLAS_POINTER_MODE_DEVICE);
    TSCOPE_CUBLAS_CHECK(cublasSdot(handle(), dim(a.shape()[0]), f(a), 1, f(b), 1, f(out)));
    return;
  }
  if (a.ndim() == 2 && b.ndim() == 1) {  // y (m) = A (m, k) x: column-major A^T (k, m), op T
    const int m = dim(a.shape()[0]), k = dim(a.shape()[1]);
    out = emptyOn(Device::Cuda, DType::Float32, {m});
    TSCOPE_CUBLAS_CHECK(
        cublasSgemv(handle(), CUBLAS_OP_T, k, m, &one, f(a), k, f(b), 1, &zero, f(out), 1));
    return;
  }
  if (a.ndim() == 1 && b.ndim() == 2) {  // y (n) = x B (k, n): column-major B^T (n, k), op N
    const int k = dim(b.shape()[0]), n = dim(b.shape()[1]);
    out = emptyOn(Device::Cuda, DType::Float32, {n});
    TSCOPE_CUBLAS_CHECK(
        cublasSgemv(handle(), CUBLAS_OP_N, n, k, &one, f(b), n, f(a), 1, &zero, f(out), 1));
    return;
  }
  requireStacks(a, b);
  const Batched st = batchedShapes(a, b);
  out = emptyOn(Device::Cuda, DType::Float32, st.outShape);
  if (out.numel() == 0) return;
  gemmRowMajor(st.m, st.n, st.k, &one, f(a), st.strideA, f(b), st.strideB, &zero, f(out), st.batch);
}

// Gemm (Z, alpha, X, Y, beta) -> beta Z + alpha X Y; alpha and beta are 0-d device tensors.
void gemmKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  for (int i = 0; i < 5; ++i) requireFloat32(*inputs[static_cast<std::size_t>(i)], node, i);
  const Tensor x = deviceContiguous(*inputs[2]), y = deviceContiguous(*inputs[3]);
  const bool inplace = !op.destroyMap().empty() && inputs[0]->isContiguous();
  Tensor out = inplace ? *inputs[0] : emptyOn(Device::Cuda, DType::Float32, inputs[0]->shape());
  if (!inplace) {
    const Tensor z = deviceContiguous(*inputs[0]);
    if (z.nbytes() > 0)
      CudaRuntime::instance().copy(out.rawData(), z.rawData(), z.nbytes(),
                                   DeviceMemory::Copy::DeviceToDevice);
  }
  PointerMode mode(CUBLAS_POINTER_MODE_DEVICE);
  if (out.numel() > 0)
    gemmRowMajor(dim(x.shape()[0]), dim(y.shape()[1]), dim(x.shape()[1]), f(*inputs[1]), f(x), 0,
                 f(y), 0, f(*inputs[4]), f(out), 1);
  *outputs[0] = out;
}

// Gemv (y, alpha, A, x, beta) -> beta y + alpha A x.
void gemvKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  for (int i = 0; i < 5; ++i) requireFloat32(*inputs[static_cast<std::size_t>(i)], node, i);
  const Tensor a = deviceContiguous(*inputs[2]), x = deviceContiguous(*inputs[3]);
  const bool inplace = !op.destroyMap().empty() && inputs[0]->isContiguous();
  Tensor out = inplace ? *inputs[0] : emptyOn(Device::Cuda, DType::Float32, inputs[0]->shape());
  if (!inplace) {
    const Tensor y = deviceContiguous(*inputs[0]);
    if (y.nbytes() > 0)
      CudaRuntime::instance().copy(out.rawData(), y.rawData(), y.nbytes(),
                                   DeviceMemory::Copy::DeviceToDevice);
  }
  PointerMode mode(CUBLAS_POINTER_MODE_DEVICE);
  const int m = dim(a.shape()[0]), k = dim(a.shape()[1]);
  if (out.numel() > 0)
    TSCOPE_CUBLAS_CHECK(cublasSgemv(handle(), CUBLAS_OP_T, k, m, f(*inputs[1]), f(a), k, f(x), 1,
                                    f(*inputs[4]), f(out), 1));
  *outputs[0] = out;
}

}  // namespace tscope::engine::cuda

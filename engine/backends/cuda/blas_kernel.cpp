// Matrix products on the GPU through cuBLAS, float32 (Dot, Gemm, Gemv). cuBLAS is column-major
// and our tensors are row-major: a row-major (m, n) matrix is the column-major (n, m) matrix of
// its transpose, so C = A B is computed as C^T = B^T A^T with the operands swapped and no
// transposition flag (Note [Row-major cuBLAS]).
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
}  // namespace

void dotKernel(const Op&, const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
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
  if (a.ndim() < 2 || b.ndim() < 2)
    throw std::invalid_argument(
        "Dot on the GPU: expected ranks (1|2, 1|2) or two stacks of "
        "matrices, found " +
        shapeToString(a.shape()) + " and " + shapeToString(b.shape()));
  // Stacks: each operand's batch dims are either the broadcast batch or all ones (stride 0).
  const int m = dim(a.shape()[a.ndim() - 2]), k = dim(a.shape()[a.ndim() - 1]);
  const int n = dim(b.shape()[b.ndim() - 1]);
  const Shape batchA(a.shape().begin(), a.shape().end() - 2);
  const Shape batchB(b.shape().begin(), b.shape().end() - 2);
  const Shape& longer = batchA.size() >= batchB.size() ? batchA : batchB;
  auto ones = [](const Shape& s) {
    for (std::int64_t d : s)
      if (d != 1) return false;
    return true;
  };
  const bool aFull = batchA == longer, bFull = batchB == longer;
  if ((!aFull && !ones(batchA)) || (!bFull && !ones(batchB)) || b.shape()[b.ndim() - 2] != k)
    throw std::invalid_argument(
        "Dot on the GPU: expected equal batch dimensions (or one operand "
        "without them) and matching inner sizes, found " +
        shapeToString(a.shape()) + " and " + shapeToString(b.shape()));
  const long long batch = shapeNumel(longer);
  Shape outShape = longer;
  outShape.push_back(m);
  outShape.push_back(n);
  out = emptyOn(Device::Cuda, DType::Float32, outShape);
  if (out.numel() == 0) return;
  gemmRowMajor(m, n, k, &one, f(a), aFull ? static_cast<long long>(m) * k : 0, f(b),
               bFull ? static_cast<long long>(k) * n : 0, &zero, f(out), batch);
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

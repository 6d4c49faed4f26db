// BatchNormTrain and BatchNormInference on the GPU through cuDNN, float32, in the layout of Note
// [Batch norm on cuDNN] (cudnn_params.h).
//
// Note [Batch norm semantics on cuDNN]: the CPU ops (engine/ops/nn/batchnorm.h) define
//   train:     mean, var over the axes, var biased (divided by m); y = (x - mean) / sqrt(var +
//              epsilon) * scale + shift; outputs (y, mean, var);
//   inference: the same y with the given mean and var.
// cudnnBatchNormalizationForwardTraining normalizes with the biased variance too and returns
// the batch mean (resultSaveMean) and 1 / sqrt(var + epsilon) (resultSaveInvVariance), and folds
// the batch statistics into running averages with the unbiased variance (var m / (m - 1)). The
// kernel asks for those running averages with exponentialAverageFactor 1 into zeroed scratch
// buffers, so they are exactly the batch mean and the unbiased batch variance, and returns
// var = unbiased (m - 1) / m: the biased variance to a few ulps, without the cancellation that
// 1 / invstd^2 - epsilon suffers when var is small against epsilon. The running statistics of
// the model (batchNormRunningStats: momentum, unbiased variance) stay what they are on the CPU,
// elementwise ops of the graph; cuDNN's own exponential average is not used for them.
// m == 1 (one element per statistic): var is 0, mean is x, and y is cuDNN's inference formula on
// those, so no m - 1 division happens; m == 0 (an empty x): mean and var are NaN, as the CPU's
// 0 / 0. The gradient of both ops is a graph of elementwise ops and sums (Note [BatchNorm
// gradients]), which the elementwise and reduction kernels run on the device; no gradient op
// exists for cudnnBatchNormalizationBackward to serve.
// Epsilon: cuDNN refuses an epsilon below CUDNN_BN_MIN_EPSILON (0.0 in cuDNN 9, 1e-5 in cuDNN 7
// and older); the placement rule (cudnn_rules.cpp) leaves nodes below it on the CPU.
#include "engine/backends/cuda/cudnn_common.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/graph/apply.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/tensor/device_memory.h"

#include <cmath>
#include <cuda_runtime.h>
#include <limits>
#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
const float kOne = 1.0f, kZero = 0.0f;

Shape statShape(Shape shape, const std::vector<int>& axes) {
  for (int a : axes) shape[static_cast<std::size_t>(a)] = 1;
  return shape;
}

// A statistic input: float32, the keepdims shape, contiguous (the CPU's statValues message).
Tensor statInput(const Tensor& t, const Shape& expected, const std::string& op,
                 const std::string& what) {
  if (t.shape() != expected)
    throw std::invalid_argument(op + ": " + what + " has shape " + shapeToString(t.shape()) +
                                ", expected " + shapeToString(expected));
  if (t.dtype() != DType::Float32)
    throw std::invalid_argument(op + " on the GPU: expected float32 " + what + ", found " +
                                std::string(dtypeName(t.dtype())));
  return deviceContiguous(t);
}

void requireFloat32(const Tensor& x, const Op& op) {
  if (x.dtype() != DType::Float32)
    throw std::invalid_argument(op.str() + " on the GPU: expected float32 x, found " +
                                std::string(dtypeName(x.dtype())));
}

// cuDNN's descriptors for x (N, C, H, 1) and the statistics (1, C, 1, 1).
struct Descriptors {
  explicit Descriptors(const BatchNormLayout& l) : x({l.n, l.c, l.h, l.w}), stat({1, l.c, 1, 1}) {}
  TensorDesc x, stat;
};

cudaStream_t stream() {
  return static_cast<cudaStream_t>(CudaRuntime::instance().stream());
}
}  // namespace

void batchNormTrainKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                          std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& bn = static_cast<const BatchNormTrain&>(op);
  requireFloat32(*inputs[0], op);
  const Tensor x = deviceContiguous(*inputs[0]);
  const Shape stat = statShape(x.shape(), bn.axes());
  const Tensor scale = statInput(*inputs[1], stat, op.str(), "the scale");
  const Tensor shift = statInput(*inputs[2], stat, op.str(), "the shift");
  const BatchNormLayout l = batchNormLayout(x.shape(), bn.axes());
  Tensor y = emptyOn(Device::Cuda, DType::Float32, x.shape());
  Tensor mean = emptyOn(Device::Cuda, DType::Float32, stat);
  Tensor var = emptyOn(Device::Cuda, DType::Float32, stat);
  if (l.c > 0) {
    if (l.m == 0) {
      // The CPU's 0 / 0.
      const Tensor nan = Tensor::scalar(DType::Float32, std::numeric_limits<double>::quiet_NaN());
      fillOnDevice(mean, nan);
      fillOnDevice(var, nan);
    } else if (l.m == 1) {
      // Note [Batch norm semantics on cuDNN]: mean = x, var = 0, y by the inference formula.
      TSCOPE_CUDA_CHECK(cudaMemcpyAsync(mean.rawData(), x.rawData(), mean.nbytes(),
                                        cudaMemcpyDeviceToDevice, stream()));
      TSCOPE_CUDA_CHECK(cudaMemsetAsync(var.rawData(), 0, var.nbytes(), stream()));
      const Descriptors d(l);
      TSCOPE_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
          cudnnHandle(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.x, x.rawData(), d.x, y.rawData(),
          d.stat, scale.rawData(), shift.rawData(), mean.rawData(), var.rawData(), bn.epsilon()));
    } else {
      const Descriptors d(l);
      // The running averages with factor 1 into zeroed scratch: the batch mean and the unbiased
      // batch variance (zeroed so that cuDNN's (1 - factor) * old term never meets garbage).
      Tensor unbiased = emptyOn(Device::Cuda, DType::Float32, stat);
      Tensor invstd = emptyOn(Device::Cuda, DType::Float32, stat);
      TSCOPE_CUDA_CHECK(cudaMemsetAsync(mean.rawData(), 0, mean.nbytes(), stream()));
      TSCOPE_CUDA_CHECK(cudaMemsetAsync(unbiased.rawData(), 0, unbiased.nbytes(), stream()));
      Tensor savedMean = emptyOn(Device::Cuda, DType::Float32, stat);
      TSCOPE_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
          cudnnHandle(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.x, x.rawData(), d.x, y.rawData(),
          d.stat, scale.rawData(), shift.rawData(), 1.0, mean.rawData(), unbiased.rawData(),
          bn.epsilon(), savedMean.rawData(), invstd.rawData()));
      // var = unbiased * (m - 1) / m, scaled in place on the device.
      const float factor =
          static_cast<float>(static_cast<double>(l.m - 1) / static_cast<double>(l.m));
      TSCOPE_CUDNN_CHECK(cudnnScaleTensor(cudnnHandle(), d.stat, unbiased.rawData(), &factor));
      var = unbiased;
    }
  }
  *outputs[0] = y;
  *outputs[1] = mean;
  *outputs[2] = var;
}

void batchNormInferenceKernel(const Op& op, const Apply& node,
                              std::span<const Tensor* const> inputs,
                              std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  const auto& bn = static_cast<const BatchNormInference&>(op);
  requireFloat32(*inputs[0], op);
  const Tensor x = deviceContiguous(*inputs[0]);
  const Shape stat = statShape(x.shape(), bn.axes());
  const Tensor scale = statInput(*inputs[1], stat, op.str(), "the scale");
  const Tensor shift = statInput(*inputs[2], stat, op.str(), "the shift");
  const Tensor mean = statInput(*inputs[3], stat, op.str(), "the mean");
  const Tensor var = statInput(*inputs[4], stat, op.str(), "the variance");
  const BatchNormLayout l = batchNormLayout(x.shape(), bn.axes());
  Tensor y = emptyOn(Device::Cuda, DType::Float32, x.shape());
  if (x.numel() > 0) {
    const Descriptors d(l);
    TSCOPE_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
        cudnnHandle(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, d.x, x.rawData(), d.x, y.rawData(),
        d.stat, scale.rawData(), shift.rawData(), mean.rawData(), var.rawData(), bn.epsilon()));
  }
  *outputs[0] = y;
}

}  // namespace tscope::engine::cuda

// Softmax and LogSoftmax along one axis on the GPU through cuDNN, float32: the tensor seen as NCHW
// with C the axis (softmaxLayout in cudnn_params.h) and CUDNN_SOFTMAX_MODE_CHANNEL; ACCURATE
// subtracts the maximum first, as the CPU kernels do. SoftmaxGrad (g, y) and LogSoftmaxGrad (g, y)
// are cudnnSoftmaxBackward with y the forward's output and g its gradient: cuDNN computes
// y (g - sum(g y)) and g - exp(y) sum(g), the ops' formulas (engine/ops/nn/softmax.h).
#include "engine/backends/cuda/cudnn_common.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/graph/apply.h"
#include "engine/ops/nn/softmax.h"
#include "engine/tensor/device_memory.h"

#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
const float kOne = 1.0f, kZero = 0.0f;

cudnnSoftmaxAlgorithm_t algorithmOf(const Op& op) {
  const std::string name = op.name();
  return name == "LogSoftmax" || name == "LogSoftmaxGrad" ? CUDNN_SOFTMAX_LOG
                                                          : CUDNN_SOFTMAX_ACCURATE;
}

void requireFloat32(const Tensor& t, const Apply& node, int input) {
  if (t.dtype() != DType::Float32)
    throw std::invalid_argument(node.op().str() + " (node " + std::to_string(node.id()) +
                                ") on the GPU: expected float32 input " + std::to_string(input) +
                                ", found " + std::string(dtypeName(t.dtype())));
}
}  // namespace

// Softmax (x), LogSoftmax (x).
void softmaxKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  const auto& softmax = static_cast<const SoftmaxFamilyOp&>(op);
  const Tensor x = deviceContiguous(*inputs[0]);
  Tensor y = emptyOn(Device::Cuda, DType::Float32, x.shape());
  if (x.numel() > 0) {
    const SoftmaxLayout l = softmaxLayout(x.shape(), softmax.axis());
    const TensorDesc d({l.n, l.c, l.h, l.w});
    TSCOPE_CUDNN_CHECK(cudnnSoftmaxForward(cudnnHandle(), algorithmOf(op),
                                           CUDNN_SOFTMAX_MODE_CHANNEL, &kOne, d, x.rawData(),
                                           &kZero, d, y.rawData()));
  }
  *outputs[0] = y;
}

// SoftmaxGrad (g, y), LogSoftmaxGrad (g, y).
void softmaxGradKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  requireFloat32(*inputs[1], node, 1);
  const auto& softmax = static_cast<const SoftmaxFamilyOp&>(op);
  const Tensor g = deviceContiguous(*inputs[0]), y = deviceContiguous(*inputs[1]);
  if (g.shape() != y.shape())
    throw std::invalid_argument(op.str() + ": the gradient " + shapeToString(g.shape()) +
                                " and the output " + shapeToString(y.shape()) + " differ in shape");
  Tensor dx = emptyOn(Device::Cuda, DType::Float32, y.shape());
  if (y.numel() > 0) {
    const SoftmaxLayout l = softmaxLayout(y.shape(), softmax.axis());
    const TensorDesc d({l.n, l.c, l.h, l.w});
    TSCOPE_CUDNN_CHECK(cudnnSoftmaxBackward(cudnnHandle(), algorithmOf(op),
                                            CUDNN_SOFTMAX_MODE_CHANNEL, &kOne, d, y.rawData(), d,
                                            g.rawData(), &kZero, d, dx.rawData()));
  }
  *outputs[0] = dx;
}

}  // namespace tscope::engine::cuda

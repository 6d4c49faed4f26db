// Pooling on the GPU through cuDNN, float32 NCHW (Note [Pool2d geometry] in
// engine/backends/cpu/pool.h; cudnn_params.h maps the props): MaxPool2d and AvgPool2d
// (cudnnPoolingForward), MaxPool2dGrad and AvgPool2dGrad (cudnnPoolingBackward). MaxPool2dGradGrad
// has no cuDNN counterpart and stays on the CPU.
#include "engine/backends/cuda/cudnn_common.h"
#include "engine/backends/cuda/device_runtime.h"
#include "engine/backends/cuda/kernels.h"
#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/tensor/device_memory.h"

#include <stdexcept>

namespace tscope::engine::cuda {

namespace {
const float kOne = 1.0f, kZero = 0.0f;

Shape shapeOf(const std::array<int, 4>& d) {
  return {d[0], d[1], d[2], d[3]};
}

bool empty(const std::array<int, 4>& d) {
  return d[0] == 0 || d[1] == 0 || d[2] == 0 || d[3] == 0;
}

void requireFloat32(const Tensor& t, const Apply& node, int input) {
  if (t.dtype() != DType::Float32)
    throw std::invalid_argument(node.op().str() + " (node " + std::to_string(node.id()) +
                                ") on the GPU: expected float32 input " + std::to_string(input) +
                                ", found " + std::string(dtypeName(t.dtype())));
}

// y = pool(x) into a new device tensor.
Tensor poolForward(const PoolDescriptorParams& d, const Tensor& x) {
  Tensor y = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.y));
  if (empty(d.y)) return y;
  const PoolDesc pd(d);
  const TensorDesc xd(d.x), yd(d.y);
  TSCOPE_CUDNN_CHECK(
      cudnnPoolingForward(cudnnHandle(), pd, &kOne, xd, x.rawData(), &kZero, yd, y.rawData()));
  return y;
}

// The input spatial size AvgPool2dGrad takes as a 0-d int64 input (as in conv_kernel.cpp).
std::int64_t sizeInput(const Apply& node, int outputAxis, const Tensor& value) {
  const std::int64_t known = node.outputRef(0).type().shape()[static_cast<std::size_t>(outputAxis)];
  if (known != kUnknownDim) return known;
  return static_cast<std::int64_t>(toHost(value).item());
}
}  // namespace

// MaxPool2d (x), AvgPool2d (x).
void poolKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  const auto& pool = static_cast<const Pool2dFamilyOp&>(op);
  const Tensor x = deviceContiguous(*inputs[0]);
  const PoolDescriptorParams d = poolDescriptor(pool.params(), op.name() == "AvgPool2d", x.shape());
  *outputs[0] = poolForward(d, x);
}

// MaxPool2dGrad (x, gy) -> gx: cuDNN's backward needs the forward's output, computed again here.
void maxPoolGradKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  requireFloat32(*inputs[1], node, 1);
  const auto& pool = static_cast<const Pool2dFamilyOp&>(op);
  const Tensor x = deviceContiguous(*inputs[0]), gy = deviceContiguous(*inputs[1]);
  const PoolDescriptorParams d = poolDescriptor(pool.params(), false, x.shape());
  if (gy.shape() != shapeOf(d.y))
    throw std::invalid_argument(op.str() + ": the output gradient has shape " +
                                shapeToString(gy.shape()) + ", expected " + dimsString(d.y));
  Tensor gx = emptyOn(Device::Cuda, DType::Float32, x.shape());
  if (!empty(d.x)) {
    const Tensor y = poolForward(d, x);
    const PoolDesc pd(d);
    const TensorDesc xd(d.x), yd(d.y);
    TSCOPE_CUDNN_CHECK(cudnnPoolingBackward(cudnnHandle(), pd, &kOne, yd, y.rawData(), yd,
                                            gy.rawData(), xd, x.rawData(), &kZero, xd,
                                            gx.rawData()));
  }
  *outputs[0] = gx;
}

// AvgPool2dGrad (gy, H, W) -> gx (N, C, H, W). cuDNN's backward takes x and y descriptors and
// pointers in every mode; an average reads neither's values, so they point to scratch buffers of
// the right sizes (never to gx, which cuDNN writes).
void avgPoolGradKernel(const Op& op, const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) {
  NodeScope scope(&node);
  requireFloat32(*inputs[0], node, 0);
  const auto& pool = static_cast<const Pool2dFamilyOp&>(op);
  const Tensor gy = deviceContiguous(*inputs[0]);
  if (gy.ndim() != 4)
    throw std::invalid_argument(op.str() + ": expected a 4-d output gradient, found " +
                                shapeToString(gy.shape()));
  const std::int64_t h = sizeInput(node, 2, *inputs[1]), w = sizeInput(node, 3, *inputs[2]);
  const PoolDescriptorParams d =
      poolDescriptor(pool.params(), true, Shape{gy.shape()[0], gy.shape()[1], h, w});
  if (gy.shape() != shapeOf(d.y))
    throw std::invalid_argument(op.str() + ": the output gradient has shape " +
                                shapeToString(gy.shape()) + ", expected " + dimsString(d.y) +
                                " for an input of size (" + std::to_string(h) + ", " +
                                std::to_string(w) + ")");
  Tensor gx = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.x));
  if (!empty(d.x)) {
    const Tensor xScratch = emptyOn(Device::Cuda, DType::Float32, shapeOf(d.x));
    const PoolDesc pd(d);
    const TensorDesc xd(d.x), yd(d.y);
    TSCOPE_CUDNN_CHECK(cudnnPoolingBackward(cudnnHandle(), pd, &kOne, yd, gy.rawData(), yd,
                                            gy.rawData(), xd, xScratch.rawData(), &kZero, xd,
                                            gx.rawData()));
  }
  *outputs[0] = gx;
}

}  // namespace tscope::engine::cuda

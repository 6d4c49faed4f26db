#include "engine/nn/conv_layers.h"

#include "engine/graph/errors.h"
#include "engine/nn/init.h"
#include "engine/ops/basic.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/shape/reshape.h"

#include <cmath>

namespace tscope::engine::nn {

namespace {

std::string pairText(const Pair& p) {
  return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")";
}

// x must be a 4-d float tensor whose axis 1 has `channels` entries (when both are known).
void requireNchw(const std::string& where, const VarPtr& x, std::int64_t channels) {
  const TensorType& t = x->type();
  if (t.ndim() != 4 || !isFloat(t.dtype()) ||
      (channels > 0 && t.shape()[1] != kUnknownDim && t.shape()[1] != channels))
    throw TypeError(where + ": expected a float NCHW tensor" +
                    (channels > 0 ? " with " + std::to_string(channels) + " channels" : "") +
                    ", found " + t.str());
}

// A per-channel vector (c) as (1, c, 1, 1), to broadcast over NCHW.
VarPtr perChannel(const VarPtr& v, std::int64_t c) {
  return reshape(v, {1, c, 1, 1});
}

Pool2dParams poolParams(Pair kernel, std::optional<Pair> stride, Pair padding) {
  Pool2dParams p;
  p.kernel = kernel;
  p.stride = stride.value_or(kernel);
  p.padding = padding;
  return p;
}

std::string poolText(const Pool2dParams& p) {
  return "kernel_size=" + pairText(p.kernel) + ", stride=" + pairText(p.stride) +
         ", padding=" + pairText(p.padding);
}

}  // namespace

Conv2d::Conv2d(std::int64_t in, std::int64_t out, Pair kernel, Conv2dOptions o)
    : Module("Conv2d"), m_in(in), m_out(out), m_kernel(kernel) {
  m_params.stride = o.stride;
  m_params.padding = o.padding;
  m_params.dilation = o.dilation;
  m_params.groups = o.groups;
  m_params.validate("Conv2d");
  if (in <= 0 || out <= 0 || kernel[0] <= 0 || kernel[1] <= 0 || in % o.groups || out % o.groups)
    throw std::invalid_argument(
        "Conv2d: expected positive sizes with channels divisible by "
        "groups, found " +
        extraRepr());
  const std::int64_t fanIn = in / o.groups * kernel[0] * kernel[1];
  const double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
  weight =
      registerParameter("weight", uniformTensor({out, in / o.groups, kernel[0], kernel[1]}, bound));
  if (o.bias) bias = registerParameter("bias", uniformTensor({out}, bound));
}

std::string Conv2d::extraRepr() const {
  return std::to_string(m_in) + ", " + std::to_string(m_out) +
         ", kernel_size=" + pairText(m_kernel) + ", stride=" + pairText(m_params.stride) +
         ", padding=" + pairText(m_params.padding) +
         (m_params.groups != 1 ? ", groups=" + std::to_string(m_params.groups) : "");
}

std::vector<VarPtr> Conv2d::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  requireNchw(where(), inputs[0], m_in);
  VarPtr y = conv2d(inputs[0], weight, m_params);
  return {bias ? y + perChannel(bias, m_out) : y};
}

BatchNorm2d::BatchNorm2d(std::int64_t c, double eps, double momentum)
    : Module("BatchNorm2d"), m_features(c), m_eps(eps), m_momentum(momentum) {
  if (c <= 0)
    throw std::invalid_argument("BatchNorm2d: expected a positive number of features, found " +
                                std::to_string(c));
  weight = registerParameter("weight", Tensor::full(DType::Float32, {c}, 1.0));
  bias = registerParameter("bias", Tensor::zeros(DType::Float32, {c}));
  runningMean = registerBuffer("running_mean", Tensor::zeros(DType::Float32, {c}));
  runningVar = registerBuffer("running_var", Tensor::full(DType::Float32, {c}, 1.0));
  numBatchesTracked = registerBuffer("num_batches_tracked", Tensor::scalar(DType::Int64, 0));
}

std::string BatchNorm2d::extraRepr() const {
  return std::to_string(m_features) + ", eps=" + std::to_string(m_eps) +
         ", momentum=" + std::to_string(m_momentum);
}

std::vector<VarPtr> BatchNorm2d::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  const VarPtr& x = inputs[0];
  requireNchw(where(), x, m_features);
  const std::int64_t c = m_features;
  const std::vector<int> axes{0, 2, 3};
  VarPtr scale = perChannel(weight, c), shift = perChannel(bias, c);
  VarPtr mean4 = perChannel(runningMean, c), var4 = perChannel(runningVar, c);
  if (!training()) return {batchNormInference(x, scale, shift, mean4, var4, axes, m_eps)};
  const BatchNormTrainResult batch = batchNormTrain(x, scale, shift, axes, m_eps);
  const BatchNormRunningStats stats =
      batchNormRunningStats(x, batch, mean4, var4, axes, m_momentum);
  addUpdate({runningMean, reshape(stats.mean, std::vector<std::int64_t>{c})});
  addUpdate({runningVar, reshape(stats.var, std::vector<std::int64_t>{c})});
  addUpdate({numBatchesTracked, numBatchesTracked + 1.0});
  return {batch.y};
}

MaxPool2d::MaxPool2d(Pair kernel, std::optional<Pair> stride, Pair padding)
    : Module("MaxPool2d"), m_params(poolParams(kernel, stride, padding)) {
  m_params.validate("MaxPool2d");
}

std::string MaxPool2d::extraRepr() const {
  return poolText(m_params);
}

std::vector<VarPtr> MaxPool2d::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  requireNchw(where(), inputs[0], 0);
  return {maxPool2d(inputs[0], m_params)};
}

AvgPool2d::AvgPool2d(Pair kernel, std::optional<Pair> stride, Pair padding, bool countIncludePad)
    : Module("AvgPool2d"), m_params(poolParams(kernel, stride, padding)) {
  m_params.includePad = countIncludePad;
  m_params.validate("AvgPool2d");
}

std::string AvgPool2d::extraRepr() const {
  return poolText(m_params) + ", count_include_pad=" + (m_params.includePad ? "true" : "false");
}

std::vector<VarPtr> AvgPool2d::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  requireNchw(where(), inputs[0], 0);
  return {avgPool2d(inputs[0], m_params)};
}

}  // namespace tscope::engine::nn

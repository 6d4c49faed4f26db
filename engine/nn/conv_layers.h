#pragma once
// The convolutional layers, over NCHW tensors, with PyTorch's parameter names and shapes:
//   Conv2d(in, out, kernel)   weight (out, in / groups, kh, kw), bias (out)
//   BatchNorm2d(c)            weight, bias (c); buffers running_mean, running_var (c) and
//                             num_batches_tracked (int64, 0-d). Train mode (Note [Build mode] in
//                             module.h) normalizes with the batch's statistics and records the
//                             running statistics' updates; eval mode uses the running statistics.
//   MaxPool2d, AvgPool2d      kernel, stride (default: the kernel), padding; AvgPool2d counts the
//                             padding in the divisor unless countIncludePad is false

#include "engine/nn/module.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/pool2d.h"

#include <array>

namespace tscope::engine::nn {

using Pair = std::array<std::int64_t, 2>;

struct Conv2dOptions {
  Pair stride{1, 1};
  Pair padding{0, 0};
  Pair dilation{1, 1};
  std::int64_t groups = 1;
  bool bias = true;
};

class Conv2d final : public Module {
 public:
  Conv2d(std::int64_t inChannels, std::int64_t outChannels, Pair kernel,
         Conv2dOptions options = {});
  Conv2d(std::int64_t inChannels, std::int64_t outChannels, std::int64_t kernel,
         Conv2dOptions options = {})
      : Conv2d(inChannels, outChannels, Pair{kernel, kernel}, options) {}
  std::shared_ptr<SharedVariable> weight, bias;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  std::int64_t m_in, m_out;
  Pair m_kernel;
  Conv2dParams m_params;
};

class BatchNorm2d final : public Module {
 public:
  explicit BatchNorm2d(std::int64_t numFeatures, double eps = 1e-5, double momentum = 0.1);
  std::shared_ptr<SharedVariable> weight, bias, runningMean, runningVar, numBatchesTracked;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  std::int64_t m_features;
  double m_eps, m_momentum;
};

class MaxPool2d final : public Module {
 public:
  explicit MaxPool2d(Pair kernel, std::optional<Pair> stride = std::nullopt, Pair padding = {0, 0});
  explicit MaxPool2d(std::int64_t kernel) : MaxPool2d(Pair{kernel, kernel}) {}

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  Pool2dParams m_params;
};

class AvgPool2d final : public Module {
 public:
  explicit AvgPool2d(Pair kernel, std::optional<Pair> stride = std::nullopt, Pair padding = {0, 0},
                     bool countIncludePad = true);
  explicit AvgPool2d(std::int64_t kernel) : AvgPool2d(Pair{kernel, kernel}) {}

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  Pool2dParams m_params;
};

}  // namespace tscope::engine::nn

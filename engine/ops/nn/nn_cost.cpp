// The costs of the neural-network family (Op::cost): convolution and its gradients, pooling and
// its gradients, softmax / log-softmax and their gradients, batch normalization, cross-entropy.

#include "engine/backends/cpu/conv.h"
#include "engine/backends/cpu/pool.h"
#include "engine/ops/cost_common.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/nn/softmax.h"

namespace tscope::engine {

namespace {

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Note [Convolution cost]: y (N, O, OH, OW) = conv(x (N, C, H, W), w (O, C/g, KH, KW)) is
// 2 N O (C/g) KH KW OH OW flops (a multiply-add per filter tap and output element); each of the
// two gradients is the same sum of products in another order, so it costs the same flops for
// the same geometry. Bytes: the two tensor inputs read once, the result written once (the
// kernel's im2col scratch is not counted: it is the kernel's choice, not the op's).
double convFlops(std::int64_t n, std::int64_t o, std::int64_t cPerGroup, std::int64_t kh,
                 std::int64_t kw, std::int64_t oh, std::int64_t ow) {
  return 2 * d(n) * d(o) * d(cPerGroup) * d(kh) * d(kw) * d(oh) * d(ow);
}

OpCost tensorCost(const Apply& node, std::span<const Shape> in, std::span<const Shape> out,
                  double flops) {
  OpCost c = cost::movement(node, in, out);
  c.flops = flops;
  return c;
}

}  // namespace

namespace {

// A forward convolution of in[0] by in[1], plus `perOutput` flops for each output element (the
// bias and activation of FusedConv2d).
OpCost forwardConvCost(const Apply& node, std::span<const Shape> in, const Conv2dParams& p,
                       double perOutput) {
  if (!cost::fits(node, in)) return {};
  const Shape& x = in[0];
  const Shape& w = in[1];
  const std::int64_t oh = cpu::convOutputSize(x[2], w[2], p.stride[0], p.padding[0], p.dilation[0]);
  const std::int64_t ow = cpu::convOutputSize(x[3], w[3], p.stride[1], p.padding[1], p.dilation[1]);
  const Shape outs[] = {Shape{x[0], w[0], oh, ow}};
  return tensorCost(node, in, outs,
                    convFlops(x[0], w[0], w[1], w[2], w[3], oh, ow) +
                        perOutput * static_cast<double>(x[0] * w[0] * oh * ow));
}

}  // namespace

OpCost Conv2d::cost(const Apply& node, std::span<const Shape> in) const {
  return forwardConvCost(node, in, m_params, 0);
}

// FusedConv2d(x, w, b): the convolution plus a bias add and an activation per output element.
OpCost FusedConv2d::cost(const Apply& node, std::span<const Shape> in) const {
  // The bias add, the activation and the residual's add (its read counts with the inputs).
  return forwardConvCost(node, in, m_params, m_residual ? 3 : 2);
}

// Conv2dGradInputs(w, gy, H, W) -> gx (N, C, H, W): the geometry comes from w and gy; gx's H and
// W are input values, known when they fold (Note [Cost output shapes]).
OpCost Conv2dGradInputs::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  const Shape& w = in[0];
  const Shape& gy = in[1];
  return tensorCost(node, in, *out, convFlops(gy[0], w[0], w[1], w[2], w[3], gy[2], gy[3]));
}

// Conv2dGradWeights(x, gy, KH, KW) -> gw (O, C/g, KH, KW).
OpCost Conv2dGradWeights::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  const Shape& gy = in[1];
  const Shape& gw = (*out)[0];
  return tensorCost(node, in, *out, convFlops(gy[0], gy[1], gw[1], gw[2], gw[3], gy[2], gy[3]));
}

// Note [Pooling cost]: max pooling compares every window element (KH KW per output element);
// average pooling adds them and divides once (KH KW + 1). The gradients: MaxPool2dGrad finds the
// maximum of each window again and adds gy there (KH KW + 1 per gy element), MaxPool2dGradGrad
// finds it and gathers (KH KW per output element), AvgPool2dGrad spreads gy / count over the
// window (KH KW + 1 per gy element).
namespace {

Shape pooled(const Shape& x, const Pool2dParams& p) {
  return {x[0], x[1], cpu::poolOutputSize(x[2], p.kernel[0], p.stride[0], p.padding[0]),
          cpu::poolOutputSize(x[3], p.kernel[1], p.stride[1], p.padding[1])};
}

double window(const Pool2dParams& p) {
  return d(p.kernel[0]) * d(p.kernel[1]);
}

}  // namespace

OpCost MaxPool2d::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape outs[] = {pooled(in[0], m_params)};
  return cost::movement(node, in, outs, window(m_params));
}

OpCost AvgPool2d::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape outs[] = {pooled(in[0], m_params)};
  return cost::movement(node, in, outs, window(m_params) + 1);
}

// MaxPool2dGrad(x, gy) -> gx with x's shape.
OpCost MaxPool2dGrad::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape outs[] = {in[0]};
  return tensorCost(node, in, outs, cost::elements(in[1]) * (window(m_params) + 1));
}

// MaxPool2dGradGrad(x, gx) -> ggy with the pooled shape.
OpCost MaxPool2dGradGrad::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape outs[] = {pooled(in[0], m_params)};
  return cost::movement(node, in, outs, window(m_params));
}

// AvgPool2dGrad(gy, H, W) -> gx (N, C, H, W), H and W input values.
OpCost AvgPool2dGrad::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  return tensorCost(node, in, *out, cost::elements(in[0]) * (window(m_params) + 1));
}

// Note [Softmax cost]: per element of x, softmax is the axis maximum (1), the subtraction (1),
// exp (1), the axis sum (1) and the division (1): 5. log-softmax replaces the division by a
// subtraction (5) and takes one log per row (the elements over the axis size). SoftmaxGrad
// y (g - sum(g y)) is 4 per element (multiply, sum, subtract, multiply); LogSoftmaxGrad
// g - exp(y) sum(g) is 4 (sum, exp, multiply, subtract).
namespace {

OpCost softmaxCost(const Apply& node, std::span<const Shape> in, double perElement, bool logPerRow,
                   int axis) {
  if (!cost::fits(node, in)) return {};
  const Shape& x = in[0];
  const Shape outs[] = {x};
  OpCost c = cost::movement(node, in, outs, perElement);
  if (logPerRow && !x.empty()) {
    const int rank = static_cast<int>(x.size());
    const int a = axis < 0 ? axis + rank : axis;
    const std::int64_t n = a >= 0 && a < rank ? x[static_cast<std::size_t>(a)] : 0;
    if (n > 0) c.flops += cost::elements(x) / d(n);
  }
  return c;
}

}  // namespace

OpCost Softmax::cost(const Apply& node, std::span<const Shape> in) const {
  return softmaxCost(node, in, 5, false, axis());
}
OpCost LogSoftmax::cost(const Apply& node, std::span<const Shape> in) const {
  return softmaxCost(node, in, 5, true, axis());
}
OpCost SoftmaxGrad::cost(const Apply& node, std::span<const Shape> in) const {
  return softmaxCost(node, in, 4, false, axis());
}
OpCost LogSoftmaxGrad::cost(const Apply& node, std::span<const Shape> in) const {
  return softmaxCost(node, in, 4, false, axis());
}

// Note [BatchNorm cost]: with n elements of x and s statistics (the kept shape's elements),
// training computes the mean (1 per element), the variance (subtract, square, add: 3) and
// y = (x - mean) * invstd * scale + shift (4): 8 n, plus per statistic the two divisions by m,
// var + epsilon and the reciprocal square root (4 s). Inference has the statistics: 4 n for y and
// 2 s for invstd. Each input is read once, each output written once.
namespace {

double statistics(const Shape& x, const std::vector<int>& axes) {
  Shape kept = x;
  for (int a : axes)
    if (a >= 0 && a < static_cast<int>(kept.size())) kept[static_cast<std::size_t>(a)] = 1;
  return cost::elements(kept);
}

}  // namespace

OpCost BatchNormTrain::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& x = in[0];
  Shape stat = x;
  for (int a : m_axes)
    if (a >= 0 && a < static_cast<int>(stat.size())) stat[static_cast<std::size_t>(a)] = 1;
  const Shape outs[] = {x, stat, stat};
  return tensorCost(node, in, outs, 8 * cost::elements(x) + 4 * statistics(x, m_axes));
}

OpCost BatchNormInference::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& x = in[0];
  const Shape outs[] = {x};
  return tensorCost(node, in, outs, 4 * cost::elements(x) + 2 * statistics(x, m_axes));
}

// Note [Cross-entropy cost]: with predictions (N, K): CategoricalCrossEntropy takes one log per
// row for class targets (N) and log, multiply, add per element for distributions (3 N K).
// SoftmaxCrossEntropyWithLogits is the softmax (5 N K, Note [Softmax cost]) plus the log-sum-exp's
// log per row (N) plus, for distributions, subtract, multiply, add per element (3 N K), or one
// subtraction per row for class targets (N). SoftmaxCrossEntropyGrad is 2 per element for class
// targets (subtract the one-hot, multiply by g) and 4 for distributions (the row sum of q, the
// multiply, the subtract, the multiply by g). OneHot moves bytes only. Distribution vs classes is
// the targets' rank (2 vs 1).
OpCost OneHot::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  return cost::movement(node, in, *out);
}

OpCost CategoricalCrossEntropy::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& p = in[0];
  const Shape outs[] = {Shape{p[0]}};
  const bool classes = in[1].size() == 1;
  return tensorCost(node, in, outs, classes ? d(p[0]) : 3 * cost::elements(p));
}

OpCost SoftmaxCrossEntropyWithLogits::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& z = in[0];
  const Shape outs[] = {Shape{z[0]}, z};
  const bool classes = in[1].size() == 1;
  const double nk = cost::elements(z);
  return tensorCost(node, in, outs, 5 * nk + d(z[0]) + (classes ? d(z[0]) : 3 * nk));
}

OpCost SoftmaxCrossEntropyGrad::cost(const Apply& node, std::span<const Shape> in) const {
  if (!cost::fits(node, in)) return {};
  const Shape& sm = in[1];
  const Shape outs[] = {sm};
  const bool classes = in[2].size() == 1;
  return tensorCost(node, in, outs, (classes ? 2 : 4) * cost::elements(sm));
}

}  // namespace tscope::engine

// ONNX's activation functions without a scalar op of their own, composed from elementwise ops:
// LeakyRelu, PRelu, ThresholdedRelu, Elu, Selu, Celu, Shrink, Gelu, HardSigmoid, HardSwish,
// Softsign, Mish. (Relu, Sigmoid, Softplus and Tanh are single Elemwise nodes, in
// onnx_ops_math.cpp.) Constants take the input's dtype, so float16 models stay float16.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/shape.h"

#include <cmath>
#include <numbers>

namespace tscope::engine::io::onnx_import {

namespace {

VarPtr like(double value, const VarPtr& x) {
  return scalarOf(value, x->type().dtype());
}

// x where x >= 0, slope * x elsewhere (NaN stays NaN).
VarPtr leaky(const VarPtr& x, const VarPtr& slope) {
  return where(lt(x, like(0, x)), mul(x, slope), x);
}

std::vector<VarPtr> convertLeakyRelu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {leaky(x, like(ctx.attrFloat("alpha", 0.01), x))};
}

// Note [PRelu slope broadcasting]: from opset 7 the slope broadcasts to X unidirectionally (numpy
// rules, and the result keeps X's shape); PyTorch writes a (C, 1, 1) slope for an (N, C, H, W) X.
// Opset 6 took a slope of one value or of X's shape, and runtimes also read a 1-d slope of length
// C as one value per channel (X's axis 1), which it is made into here.
std::vector<VarPtr> convertPRelu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  VarPtr slope = ctx.input(1);
  const TensorType& xt = x->type();
  const TensorType& st = slope->type();
  if (ctx.opset() < 7 && st.ndim() == 1 && xt.ndim() >= 2 && st.shape()[0] != 1) {
    std::vector<int> order{0};
    order.insert(order.end(), static_cast<std::size_t>(xt.ndim() - 2), DimShuffle::kNewAxis);
    slope = dimshuffle(slope, order);
  }
  const TensorType& aligned = slope->type();
  if (aligned.ndim() > xt.ndim())
    ctx.fail("expected the slope to broadcast to X " + xt.str() + ", found " + aligned.str() +
             " (more axes than X)");
  for (int i = 1; i <= aligned.ndim(); ++i) {
    const std::int64_t s = aligned.shape()[static_cast<std::size_t>(aligned.ndim() - i)];
    const std::int64_t d = xt.shape()[static_cast<std::size_t>(xt.ndim() - i)];
    if (s != 1 && s != kUnknownDim && d != kUnknownDim && s != d)
      ctx.fail("expected the slope to broadcast to X " + xt.str() + ", found " + aligned.str());
  }
  return {leaky(x, slope)};
}

std::vector<VarPtr> convertThresholdedRelu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {where(gt(x, like(ctx.attrFloat("alpha", 1.0), x)), x, like(0, x))};
}

// x for x > 0, alpha * (exp(x) - 1) elsewhere.
VarPtr elu(const VarPtr& x, double alpha) {
  return where(gt(x, like(0, x)), x, mul(like(alpha, x), expm1(x)));
}

std::vector<VarPtr> convertElu(NodeContext& ctx) {
  return {elu(ctx.input(0), ctx.attrFloat("alpha", 1.0))};
}

std::vector<VarPtr> convertSelu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const double alpha = ctx.attrFloat("alpha", 1.67326319217681884765625);
  const double gamma = ctx.attrFloat("gamma", 1.05070102214813232421875);
  return {mul(like(gamma, x), elu(x, alpha))};
}

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
std::vector<VarPtr> convertCelu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const double alpha = ctx.attrFloat("alpha", 1.0);
  if (alpha == 0) ctx.fail("expected a non-zero alpha, found 0");
  const VarPtr neg = mul(like(alpha, x), expm1(trueDiv(x, like(alpha, x))));
  return {add(relu(x), minimum(like(0, x), neg))};
}

// x + bias below -lambd, x - bias above lambd, 0 between.
std::vector<VarPtr> convertShrink(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const double bias = ctx.attrFloat("bias", 0.0);
  const double lambd = ctx.attrFloat("lambd", 0.5);
  const VarPtr above = where(gt(x, like(lambd, x)), sub(x, like(bias, x)), like(0, x));
  return {where(lt(x, like(-lambd, x)), add(x, like(bias, x)), above)};
}

// Note [Gelu decomposed]: 0.5 * x * (1 + erf(x / sqrt(2))), or with approximate="tanh"
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), the forms PyTorch computes.
std::vector<VarPtr> convertGelu(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const std::string approximate = ctx.attrString("approximate", "none");
  VarPtr inner;
  if (approximate == "none") {
    inner = erf(mul(x, like(1.0 / std::numbers::sqrt2, x)));
  } else if (approximate == "tanh") {
    const VarPtr cubic = mul(like(0.044715, x), mul(x, sqr(x)));
    inner = engine::tanh(mul(like(std::sqrt(2.0 / std::numbers::pi), x), add(x, cubic)));
  } else {
    ctx.fail("expected approximate to be 'none' or 'tanh', found '" + approximate + "'");
  }
  return {mul(mul(like(0.5, x), x), add(like(1, x), inner))};
}

// max(0, min(1, alpha * x + beta)).
VarPtr hardSigmoid(const VarPtr& x, double alpha, double beta) {
  return clip(add(mul(x, like(alpha, x)), like(beta, x)), like(0, x), like(1, x));
}

std::vector<VarPtr> convertHardSigmoid(NodeContext& ctx) {
  return {hardSigmoid(ctx.input(0), ctx.attrFloat("alpha", 0.2), ctx.attrFloat("beta", 0.5))};
}

std::vector<VarPtr> convertHardSwish(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {mul(x, hardSigmoid(x, 1.0 / 6.0, 0.5))};
}

std::vector<VarPtr> convertSoftsign(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {trueDiv(x, add(like(1, x), engine::abs(x)))};
}

std::vector<VarPtr> convertMish(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {mul(x, engine::tanh(softplus(x)))};
}

}  // namespace

void registerActivationConverters(ConverterTable& table) {
  table.add("LeakyRelu", &convertLeakyRelu);
  table.add("PRelu", &convertPRelu);
  table.add("ThresholdedRelu", &convertThresholdedRelu);
  table.add("Elu", &convertElu);
  table.add("Selu", &convertSelu);
  table.add("Celu", &convertCelu);
  table.add("Shrink", &convertShrink);
  table.add("Gelu", &convertGelu);
  table.add("HardSigmoid", &convertHardSigmoid);
  table.add("HardSwish", &convertHardSwish);
  table.add("Softsign", &convertSoftsign);
  table.add("Mish", &convertMish);
}

}  // namespace tscope::engine::io::onnx_import

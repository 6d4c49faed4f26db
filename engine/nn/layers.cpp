#include "engine/nn/layers.h"

#include "engine/graph/errors.h"
#include "engine/nn/init.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"

#include <cmath>

namespace tscope::engine::nn {

namespace {

void requireFloat(const std::string& where, const VarPtr& x, int minRank) {
  const TensorType& t = x->type();
  if (!isFloat(t.dtype()) || t.ndim() < minRank)
    throw TypeError(where + ": expected a float tensor of rank >= " + std::to_string(minRank) +
                    ", found " + t.str());
}

void requireLastDim(const std::string& where, const VarPtr& x, std::int64_t n) {
  const auto& shape = x->type().shape();
  if (!shape.empty() && shape.back() != kUnknownDim && shape.back() != n)
    throw TypeError(where + ": expected an input whose last axis has " + std::to_string(n) +
                    " features, found " + x->type().str());
}

}  // namespace

VarPtr linear(const VarPtr& x, const VarPtr& weight, const VarPtr& bias) {
  VarPtr y = dot(x, transpose(weight));
  return bias ? y + bias : y;
}

Linear::Linear(std::int64_t in, std::int64_t out, bool withBias)
    : Module("Linear"), m_in(in), m_out(out) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("Linear: expected positive sizes, found in_features=" +
                                std::to_string(in) + ", out_features=" + std::to_string(out));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = registerParameter("weight", uniformTensor({out, in}, bound));
  if (withBias) bias = registerParameter("bias", uniformTensor({out}, bound));
}

std::string Linear::extraRepr() const {
  return "in_features=" + std::to_string(m_in) + ", out_features=" + std::to_string(m_out) +
         ", bias=" + (bias ? "true" : "false");
}

std::vector<VarPtr> Linear::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  requireFloat(where(), inputs[0], 1);
  requireLastDim(where(), inputs[0], m_in);
  return {linear(inputs[0], weight, bias)};
}

Embedding::Embedding(std::int64_t num, std::int64_t dim)
    : Module("Embedding"), m_num(num), m_dim(dim) {
  if (num <= 0 || dim <= 0)
    throw std::invalid_argument("Embedding: expected positive sizes, found num_embeddings=" +
                                std::to_string(num) + ", embedding_dim=" + std::to_string(dim));
  weight = registerParameter("weight", normalTensor({num, dim}));
}

std::string Embedding::extraRepr() const {
  return std::to_string(m_num) + ", " + std::to_string(m_dim);
}

std::vector<VarPtr> Embedding::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  const VarPtr& idx = inputs[0];
  if (!isInteger(idx->type().dtype()))
    throw TypeError(where() + ": expected integer indices, found " + idx->type().str());
  if (idx->type().ndim() == 1) return {advancedSubtensor1(weight, idx)};
  ShapeExpr shape = shapeOf(idx);
  shape.push_back(constantInt(m_dim));
  return {reshape(advancedSubtensor1(weight, flatten(idx)), shape)};
}

LayerNorm::LayerNorm(std::vector<std::int64_t> shape, double eps, bool affine)
    : Module("LayerNorm"), m_shape(std::move(shape)), m_eps(eps) {
  if (m_shape.empty())
    throw std::invalid_argument("LayerNorm: expected a non-empty normalized_shape");
  if (affine) {
    weight = registerParameter("weight", Tensor::full(DType::Float32, m_shape, 1.0));
    bias = registerParameter("bias", Tensor::zeros(DType::Float32, m_shape));
  }
}

std::string LayerNorm::extraRepr() const {
  std::string s = "(";
  for (std::size_t i = 0; i < m_shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(m_shape[i]);
  return s + (m_shape.size() == 1 ? ",)" : ")") + ", eps=" + std::to_string(m_eps);
}

std::vector<VarPtr> LayerNorm::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  const VarPtr& x = inputs[0];
  const int k = static_cast<int>(m_shape.size());
  requireFloat(where(), x, k);
  const auto& xs = x->type().shape();
  const int n = x->type().ndim();
  for (int i = 0; i < k; ++i) {
    const std::int64_t d = xs[static_cast<std::size_t>(n - k + i)];
    if (d != kUnknownDim && d != m_shape[static_cast<std::size_t>(i)])
      throw TypeError(where() + ": expected the trailing axes " + extraRepr() + ", found " +
                      x->type().str());
  }
  Axes axes;
  for (int i = n - k; i < n; ++i) axes.push_back(i);
  VarPtr centred = x - mean(x, axes, true);
  VarPtr y = centred / sqrt(mean(centred * centred, axes, true) + m_eps);
  if (weight) y = y * weight + bias;
  return {y};
}

std::vector<VarPtr> ReLU::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  return {relu(inputs[0])};
}

std::string GELU::extraRepr() const {
  return m_approximate == Approximate::Tanh ? "approximate='tanh'" : "approximate='none'";
}

std::vector<VarPtr> GELU::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  const VarPtr& x = inputs[0];
  if (m_approximate == Approximate::Tanh) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    VarPtr inner = (x + x * x * x * 0.044715) * std::sqrt(2.0 / M_PI);
    return {x * (tanh(inner) + 1.0) * 0.5};
  }
  // 0.5 x (1 + erf(x / sqrt(2)))
  return {x * (erf(x * M_SQRT1_2) + 1.0) * 0.5};
}

Dropout::Dropout(double p) : Module("Dropout"), m_p(p), m_rng(generator()()) {
  if (!(p >= 0.0 && p < 1.0))
    throw std::invalid_argument("Dropout: expected 0 <= p < 1, found p=" + std::to_string(p));
}

std::string Dropout::extraRepr() const {
  return "p=" + std::to_string(m_p);
}

std::vector<VarPtr> Dropout::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 1);
  if (!training() || m_p == 0.0) return {inputs[0]};
  const std::size_t before = m_rng.updates().size();
  VarPtr y = m_rng.dropout(inputs[0], m_p);
  for (std::size_t i = before; i < m_rng.updates().size(); ++i) addUpdate(m_rng.updates()[i]);
  return {y};
}

}  // namespace tscope::engine::nn

#include "engine/nn/recurrent.h"

#include "engine/graph/errors.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/join.h"
#include "engine/ops/shape/subtensor.h"

#include <cmath>

namespace tscope::engine::nn {

namespace {

// Gate g of a (B, gates * h) product: columns [g h, (g + 1) h).
VarPtr gate(const VarPtr& all, int g, std::int64_t h) {
  return slice(all, 1, g * h, (g + 1) * h);
}

}  // namespace

RecurrentBase::RecurrentBase(std::string typeName, int gates, std::int64_t input,
                             std::int64_t hidden, int layers, bool bias, double dropout)
    : Module(std::move(typeName)),
      m_input(input),
      m_hidden(hidden),
      m_layers(layers),
      m_dropout(dropout),
      m_rng(generator()()) {
  if (input <= 0 || hidden <= 0 || layers <= 0 || !(dropout >= 0.0 && dropout < 1.0))
    throw std::invalid_argument(
        this->typeName() + ": expected positive sizes and 0 <= dropout < 1, found " + extraRepr());
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  for (int k = 0; k < layers; ++k) {
    const std::string l = "_l" + std::to_string(k);
    const std::int64_t in = k == 0 ? input : hidden;
    LayerWeights w;
    w.weightIh = registerParameter("weight_ih" + l, uniformTensor({gates * hidden, in}, bound));
    w.weightHh = registerParameter("weight_hh" + l, uniformTensor({gates * hidden, hidden}, bound));
    if (bias) {
      w.biasIh = registerParameter("bias_ih" + l, uniformTensor({gates * hidden}, bound));
      w.biasHh = registerParameter("bias_hh" + l, uniformTensor({gates * hidden}, bound));
    }
    m_weights.push_back(std::move(w));
  }
}

std::string RecurrentBase::extraRepr() const {
  return std::to_string(m_input) + ", " + std::to_string(m_hidden) +
         ", num_layers=" + std::to_string(m_layers) + ", dropout=" + std::to_string(m_dropout);
}

void RecurrentBase::checkInput(const VarPtr& x) const {
  const TensorType& t = x->type();
  if (t.ndim() != 3 || !isFloat(t.dtype()) ||
      (t.shape()[2] != kUnknownDim && t.shape()[2] != m_input))
    throw TypeError(where() + ": expected x as a float tensor (steps, batch, " +
                    std::to_string(m_input) + "), found " + t.str());
}

VarPtr RecurrentBase::initialState(const VarPtr& state, const VarPtr& x, int k,
                                   const char* what) const {
  if (!state) return zeros(ShapeExpr{shapeI(x, 1), constantInt(m_hidden)}, x->type().dtype());
  const TensorType& t = state->type();
  const auto& s = t.shape();
  if (t.ndim() != 3 || t.dtype() != x->type().dtype() ||
      (s[0] != kUnknownDim && s[0] != m_layers) || (s[2] != kUnknownDim && s[2] != m_hidden))
    throw TypeError(where() + ": expected " + what + " as (" + std::to_string(m_layers) +
                    ", batch, " + std::to_string(m_hidden) + ") of x's dtype, found " + t.str());
  return select(state, 0, k);
}

VarPtr RecurrentBase::betweenLayers(const VarPtr& h) {
  if (!training() || m_dropout == 0.0) return h;
  const std::size_t before = m_rng.updates().size();
  VarPtr y = m_rng.dropout(h, m_dropout);
  for (std::size_t i = before; i < m_rng.updates().size(); ++i) addUpdate(m_rng.updates()[i]);
  return y;
}

std::vector<VarPtr> LSTM::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 3);
  VarPtr x = inputs[0];
  checkInput(x);
  const std::int64_t h = m_hidden;
  std::vector<VarPtr> hn, cn;
  for (int k = 0; k < m_layers; ++k) {
    const LayerWeights& w = m_weights[static_cast<std::size_t>(k)];
    // Note [Recurrent products]: both biases folded into the input product.
    VarPtr bias = w.biasIh ? w.biasIh + w.biasHh : nullptr;
    VarPtr xw = linear(x, w.weightIh, bias);
    VarPtr h0 = initialState(inputs.size() > 1 ? inputs[1] : nullptr, x, k, "h0");
    VarPtr c0 = initialState(inputs.size() > 2 ? inputs[2] : nullptr, x, k, "c0");
    std::vector<VarPtr> out = scan(
        [h](const std::vector<VarPtr>& a) {  // xw[t], h[t-1], c[t-1], W_hh^T
          VarPtr gates = a[0] + dot(a[1], a[3]);
          VarPtr i = sigmoid(gate(gates, 0, h)), f = sigmoid(gate(gates, 1, h));
          VarPtr g = tanh(gate(gates, 2, h)), o = sigmoid(gate(gates, 3, h));
          VarPtr c = f * a[2] + i * g;
          return std::vector<VarPtr>{o * tanh(c), c};
        },
        {xw}, {h0, c0}, {transpose(w.weightHh)}, {}, -1,
        {.label = "lstm_l" + std::to_string(k), .strict = true});
    hn.push_back(select(out[0], 0, -1));
    cn.push_back(select(out[1], 0, -1));
    x = k + 1 < m_layers ? betweenLayers(out[0]) : out[0];
  }
  return {x, stack(hn, 0), stack(cn, 0)};
}

std::vector<VarPtr> GRU::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 2);
  VarPtr x = inputs[0];
  checkInput(x);
  const std::int64_t h = m_hidden;
  std::vector<VarPtr> hn;
  for (int k = 0; k < m_layers; ++k) {
    const LayerWeights& w = m_weights[static_cast<std::size_t>(k)];
    VarPtr xw = linear(x, w.weightIh, w.biasIh);
    VarPtr h0 = initialState(inputs.size() > 1 ? inputs[1] : nullptr, x, k, "h0");
    std::vector<VarPtr> nonSeqs{transpose(w.weightHh)};
    if (w.biasHh) nonSeqs.push_back(w.biasHh);
    const bool withBias = w.biasHh != nullptr;
    std::vector<VarPtr> out = scan(
        [h, withBias](const std::vector<VarPtr>& a) {  // xw[t], h[t-1], W_hh^T[, b_hh]
          VarPtr hw = dot(a[1], a[2]);
          if (withBias) hw = hw + a[3];
          VarPtr r = sigmoid(gate(a[0], 0, h) + gate(hw, 0, h));
          VarPtr z = sigmoid(gate(a[0], 1, h) + gate(hw, 1, h));
          VarPtr n = tanh(gate(a[0], 2, h) + r * gate(hw, 2, h));
          return std::vector<VarPtr>{(1.0 - z) * n + z * a[1]};
        },
        {xw}, {h0}, nonSeqs, {}, -1, {.label = "gru_l" + std::to_string(k), .strict = true});
    hn.push_back(select(out[0], 0, -1));
    x = k + 1 < m_layers ? betweenLayers(out[0]) : out[0];
  }
  return {x, stack(hn, 0)};
}

}  // namespace tscope::engine::nn

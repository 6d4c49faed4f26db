#pragma once
// The recurrent layers over Scan (engine/ops/control/scan.h), with PyTorch's parameter names,
// shapes, gate order and default initialization (U(-1/sqrt(hidden), 1/sqrt(hidden))), time-major
// (batch_first=False):
//   LSTM(input, hidden, layers)   weight_ih_l{k} (4h, in), weight_hh_l{k} (4h, h), bias_ih_l{k},
//                                 bias_hh_l{k} (4h); gates i, f, g, o
//   GRU(input, hidden, layers)    the same with 3h rows; gates r, z, n
// call({x}) or call({x, h0[, c0]}): x (T, B, input), h0 and c0 (layers, B, hidden), zeros when
// absent. Outputs: LSTM {output (T, B, hidden), h_n, c_n (layers, B, hidden)}; GRU {output, h_n}.
//
// Note [Recurrent products]: each layer computes x W_ih^T + b_ih (+ b_hh for the LSTM) for every
// step at once, one (T*B, in) x (in, gates) product before its Scan, so each step runs only the
// (B, h) x (h, gates) product of the recurrence and the elementwise gates. Each layer is one Scan
// node labelled "lstm_l{k}" / "gru_l{k}" in the layer's scope. The dropout between layers (train
// mode, p > 0) draws from the layer's own generator (Note [Build mode] in module.h).

#include "engine/nn/module.h"
#include "engine/ops/random/random_stream.h"

namespace tscope::engine::nn {

class RecurrentBase : public Module {
 public:
  std::int64_t inputSize() const { return m_input; }
  std::int64_t hiddenSize() const { return m_hidden; }
  int numLayers() const { return m_layers; }
  // Layer k's parameters: weight_ih, weight_hh, bias_ih, bias_hh (biases null without them).
  struct LayerWeights {
    std::shared_ptr<SharedVariable> weightIh, weightHh, biasIh, biasHh;
  };
  const LayerWeights& layer(int k) const { return m_weights.at(static_cast<std::size_t>(k)); }

 protected:
  // gates: 4 for the LSTM, 3 for the GRU.
  RecurrentBase(std::string typeName, int gates, std::int64_t inputSize, std::int64_t hiddenSize,
                int numLayers, bool bias, double dropout);
  std::string extraRepr() const override;
  // Checks x (T, B, input) and an initial state (layers, B, hidden); returns layer k's slice of
  // the state, or zeros (B, hidden) when state is null.
  void checkInput(const VarPtr& x) const;
  VarPtr initialState(const VarPtr& state, const VarPtr& x, int k, const char* what) const;
  // Dropout between layers (train mode, p > 0), Note [Recurrent products].
  VarPtr betweenLayers(const VarPtr& h);

  std::int64_t m_input, m_hidden;
  int m_layers;
  double m_dropout;
  std::vector<LayerWeights> m_weights;
  RandomStream m_rng;
};

class LSTM final : public RecurrentBase {
 public:
  LSTM(std::int64_t inputSize, std::int64_t hiddenSize, int numLayers = 1, bool bias = true,
       double dropout = 0.0)
      : RecurrentBase("LSTM", 4, inputSize, hiddenSize, numLayers, bias, dropout) {}

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
};

class GRU final : public RecurrentBase {
 public:
  GRU(std::int64_t inputSize, std::int64_t hiddenSize, int numLayers = 1, bool bias = true,
      double dropout = 0.0)
      : RecurrentBase("GRU", 3, inputSize, hiddenSize, numLayers, bias, dropout) {}

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
};

}  // namespace tscope::engine::nn

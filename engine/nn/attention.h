#pragma once
// MultiheadAttention with PyTorch's parameters (in_proj_weight (3e, e), in_proj_bias (3e), and the
// child Linear out_proj), time-major (batch_first=False):
//   call({query, key, value}) or call({x}) (self-attention): query (L, N, e), key and value
//   (S, N, e). Outputs {output (L, N, e), weights (N, L, S) averaged over the heads}, as
//   torch.nn.MultiheadAttention(...)(q, k, v) with need_weights=True. No masks or dropout.

#include "engine/nn/layers.h"

namespace tscope::engine::nn {

class MultiheadAttention final : public Module {
 public:
  // embedDim divisible by numHeads (std::invalid_argument otherwise).
  MultiheadAttention(std::int64_t embedDim, std::int64_t numHeads);
  std::shared_ptr<SharedVariable> inProjWeight, inProjBias;
  std::shared_ptr<Linear> outProj;

 protected:
  std::vector<VarPtr> forward(const std::vector<VarPtr>& inputs) override;
  std::string extraRepr() const override;

 private:
  std::int64_t m_embed, m_heads;
};

}  // namespace tscope::engine::nn

#include "engine/nn/attention.h"

#include "engine/graph/errors.h"
#include "engine/nn/init.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"

#include <cmath>

namespace tscope::engine::nn {

MultiheadAttention::MultiheadAttention(std::int64_t embed, std::int64_t heads)
    : Module("MultiheadAttention"), m_embed(embed), m_heads(heads) {
  if (embed <= 0 || heads <= 0 || embed % heads)
    throw std::invalid_argument(
        "MultiheadAttention: expected embed_dim divisible by num_heads, "
        "found " +
        extraRepr());
  // xavier_uniform over the (3e, e) matrix, as PyTorch's _reset_parameters.
  inProjWeight = registerParameter(
      "in_proj_weight",
      uniformTensor({3 * embed, embed}, std::sqrt(6.0 / static_cast<double>(4 * embed))));
  inProjBias = registerParameter("in_proj_bias", Tensor::zeros(DType::Float32, {3 * embed}));
  outProj = registerModule("out_proj", std::make_shared<Linear>(embed, embed));
  outProj->bias->setValue(Tensor::zeros(DType::Float32, {embed}));
}

std::string MultiheadAttention::extraRepr() const {
  return "embed_dim=" + std::to_string(m_embed) + ", num_heads=" + std::to_string(m_heads);
}

std::vector<VarPtr> MultiheadAttention::forward(const std::vector<VarPtr>& inputs) {
  expectInputs(inputs, 1, 3);
  if (inputs.size() == 2)
    throw std::invalid_argument(where() +
                                ": expected 1 input (self-attention) or 3 (query, key, "
                                "value), found 2");
  const VarPtr& query = inputs[0];
  const VarPtr& key = inputs.size() == 3 ? inputs[1] : inputs[0];
  const VarPtr& value = inputs.size() == 3 ? inputs[2] : inputs[0];
  for (const VarPtr& v : {query, key, value}) {
    const TensorType& t = v->type();
    if (t.ndim() != 3 || !isFloat(t.dtype()) ||
        (t.shape()[2] != kUnknownDim && t.shape()[2] != m_embed))
      throw TypeError(where() + ": expected (length, batch, " + std::to_string(m_embed) +
                      ") float inputs, found " + t.str());
  }
  const std::int64_t e = m_embed, d = e / m_heads;
  auto project = [&](const VarPtr& x, std::int64_t k) {
    VarPtr y = linear(x, slice(inProjWeight, 0, k * e, (k + 1) * e),
                      slice(inProjBias, 0, k * e, (k + 1) * e));
    // (T, N, e) -> (T, N * heads, d) -> (N * heads, T, d)
    return transpose(reshape(y, ShapeExpr{shapeI(x, 0), constantInt(-1), constantInt(d)}),
                     {1, 0, 2});
  };
  VarPtr q = project(query, 0) * (1.0 / std::sqrt(static_cast<double>(d)));
  VarPtr k = project(key, 1), v = project(value, 2);
  VarPtr weights = softmax(dot(q, transpose(k, {0, 2, 1})), -1);  // (N * heads, L, S)
  VarPtr attended = transpose(dot(weights, v), {1, 0, 2});        // (L, N * heads, d)
  VarPtr out = outProj->call(
      {reshape(attended, ShapeExpr{shapeI(query, 0), constantInt(-1), constantInt(e)})})[0];
  VarPtr perHead = reshape(weights, ShapeExpr{constantInt(-1), constantInt(m_heads),
                                              shapeI(weights, 1), shapeI(weights, 2)});
  return {out, mean(perHead, {1})};
}

}  // namespace tscope::engine::nn

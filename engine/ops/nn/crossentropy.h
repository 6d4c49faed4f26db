#pragma once
// Cross-entropy losses, one loss per row, with targets either integer class indices (a 1-d integer
// vector) or a distribution per row (one-hot or soft, 2-d float like the predictions).
//
//   CategoricalCrossEntropy(coding, true)      Theano's categorical_crossentropy(coding_dist,
//       true_dist): coding is (N, K) probabilities; loss_i = -log(coding[i, t_i]) for class
//       targets, -sum_k true[i, k] log(coding[i, k]) for distributions.
//   SoftmaxCrossEntropyWithLogits(logits, targets) -> (loss, softmax)
//       the stable fusion of log_softmax and the negative log-likelihood (Theano's
//       CrossentropySoftmaxArgmax1HotWithBias): loss_i = lse_i - logits[i, t_i], or
//       sum_k q[i, k] (lse_i - logits[i, k]), with lse the log-sum-exp of the row. The softmax is
//       an output too, for the gradient and for callers that want the predictions.
//   SoftmaxCrossEntropyGrad(g, softmax, targets)
//       d loss / d logits times g: g_i (softmax[i] * sum_k q[i, k] - q[i]); q is one_hot(t) for
//       class targets.
//   OneHot{dtype}(t, depth): (N, depth) with 1 at [i, t_i].
// Integer targets are disconnected in every gradient; distribution targets have gradients.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class OneHot final : public Op {
 public:
  explicit OneHot(DType dtype = DType::Float32) : m_dtype(dtype) {}
  DType dtype() const { return m_dtype; }
  std::string name() const override { return "OneHot"; }
  nlohmann::json props() const override { return {{"dtype", std::string(dtypeName(m_dtype))}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  DType m_dtype;
};

class CategoricalCrossEntropy final : public Op {
 public:
  std::string name() const override { return "CategoricalCrossEntropy"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

class SoftmaxCrossEntropyWithLogits final : public Op {
 public:
  std::string name() const override { return "SoftmaxCrossEntropyWithLogits"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

class SoftmaxCrossEntropyGrad final : public Op {
 public:
  std::string name() const override { return "SoftmaxCrossEntropyGrad"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

// (N,) int targets and depth (a 0-d int64, or a number) -> (N, depth) of dtype.
VarPtr oneHot(const VarPtr& targets, const VarPtr& depth, DType dtype = DType::Float32,
              std::source_location site = std::source_location::current());
// Theano's categorical_crossentropy(coding_dist, true_dist): per-row loss (N,).
VarPtr categoricalCrossEntropy(const VarPtr& codingDist, const VarPtr& trueDist,
                               std::source_location site = std::source_location::current());
// The per-row loss of softmax(logits) against the targets, computed stably; (N,).
VarPtr softmaxCrossEntropyWithLogits(const VarPtr& logits, const VarPtr& targets,
                                     std::source_location site = std::source_location::current());
// Both outputs: {loss, softmax}.
std::vector<VarPtr> softmaxCrossEntropyWithLogitsAndSoftmax(
    const VarPtr& logits, const VarPtr& targets,
    std::source_location site = std::source_location::current());
VarPtr softmaxCrossEntropyGrad(const VarPtr& g, const VarPtr& softmax, const VarPtr& targets,
                               std::source_location site = std::source_location::current());

}  // namespace tscope::engine

#pragma once
// Batch normalization over the given axes (Theano's batch_normalization_train/_test):
//   BatchNormTrain{axes, epsilon}(x, scale, shift) -> (y, mean, var)
//       mean and var (biased: divided by m, the number of elements per statistic) over the axes;
//       y = (x - mean) / sqrt(var + epsilon) * scale + shift.
//   BatchNormInference{axes, epsilon}(x, scale, shift, mean, var) -> y
//       the same normalization with given (running) statistics.
// scale, shift, mean and var have x's rank with the reduced axes of size 1 ("keepdims" shape):
// (1, C, 1, 1) for NCHW with axes [0, 2, 3], (1, F) for (N, F) with axes [0].
//
// Note [BatchNorm gradients]: both ops compute their forward pass in one kernel but express their
// gradients as graphs of elementwise ops and sums (engine/ops/reduce), so second derivatives and
// pushforwards follow without more ops. For training, with xhat = (x - mean) * invstd:
//   dshift = sum(gy), dscale = sum(gy * xhat),
//   dx = scale * invstd / m * (m gy - dshift - xhat * dscale) + (gmean + 2 gvar (x - mean)) / m
// where gmean and gvar are the gradients reaching the mean and var outputs (usually none).

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class BatchNormFamilyOp : public Op {
 public:
  const std::vector<int>& axes() const { return m_axes; }
  double epsilon() const { return m_epsilon; }
  nlohmann::json props() const override { return {{"axes", m_axes}, {"epsilon", m_epsilon}}; }

 protected:
  // axes: distinct, non-negative, at least one (kept sorted); epsilon >= 0.
  BatchNormFamilyOp(std::vector<int> axes, double epsilon, const std::string& name);
  static void readProps(const nlohmann::json& props, const std::string& op, std::vector<int>& axes,
                        double& epsilon);
  // Checks x (input 0) and the per-statistic inputs [first, last]; returns their static shape.
  std::vector<std::int64_t> checkInputs(std::span<const VarPtr> inputs, int first, int last) const;
  std::vector<int> m_axes;
  double m_epsilon;
};

class BatchNormTrain final : public BatchNormFamilyOp {
 public:
  explicit BatchNormTrain(std::vector<int> axes, double epsilon = 1e-5)
      : BatchNormFamilyOp(std::move(axes), epsilon, "BatchNormTrain") {}
  std::string name() const override { return "BatchNormTrain"; }
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

class BatchNormInference final : public BatchNormFamilyOp {
 public:
  explicit BatchNormInference(std::vector<int> axes, double epsilon = 1e-5)
      : BatchNormFamilyOp(std::move(axes), epsilon, "BatchNormInference") {}
  std::string name() const override { return "BatchNormInference"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

struct BatchNormTrainResult {
  VarPtr y;
  VarPtr mean;  // keepdims shape
  VarPtr var;   // biased (divided by m)
};

BatchNormTrainResult batchNormTrain(const VarPtr& x, const VarPtr& scale, const VarPtr& shift,
                                    std::vector<int> axes, double epsilon = 1e-5,
                                    std::source_location site = std::source_location::current());
VarPtr batchNormInference(const VarPtr& x, const VarPtr& scale, const VarPtr& shift,
                          const VarPtr& mean, const VarPtr& var, std::vector<int> axes,
                          double epsilon = 1e-5,
                          std::source_location site = std::source_location::current());

// The new running statistics after a training step (for Update{runningMean, ...} in compile()):
//   mean' = (1 - momentum) runningMean + momentum mean
//   var'  = (1 - momentum) runningVar + momentum var m / (m - 1)   (the unbiased batch variance)
struct BatchNormRunningStats {
  VarPtr mean;
  VarPtr var;
};
BatchNormRunningStats batchNormRunningStats(
    const VarPtr& x, const BatchNormTrainResult& batch, const VarPtr& runningMean,
    const VarPtr& runningVar, const std::vector<int>& axes, double momentum = 0.1,
    std::source_location site = std::source_location::current());

}  // namespace tscope::engine

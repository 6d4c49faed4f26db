#pragma once
// Softmax and LogSoftmax along one axis, each one node with its own numerically stable kernel
// (the axis maximum is subtracted before exponentiating), and their gradient ops.
//
//   softmax(x)_i     = exp(x_i - m) / sum_j exp(x_j - m),  m = max_j x_j
//   log_softmax(x)_i = x_i - m - log(sum_j exp(x_j - m))
//   SoftmaxGrad(g, y)    = y * (g - sum(g * y))      (y = softmax(x); the vector-Jacobian product)
//   LogSoftmaxGrad(g, y) = g - exp(y) * sum(g)       (y = log_softmax(x))
// The sums run over the axis with the axis kept. The softmax Jacobian is symmetric, so
// SoftmaxGrad(v, y) is also softmax's pushforward.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

// One class for the four ops: they share the axis prop, the input checks and the kernel layout.
class SoftmaxFamilyOp : public Op {
 public:
  int axis() const { return m_axis; }
  nlohmann::json props() const override { return {{"axis", m_axis}}; }
  // The axis as an index in 0..ndim-1 for a tensor of rank ndim.
  int axisFor(int ndim) const { return m_axis < 0 ? m_axis + ndim : m_axis; }

 protected:
  explicit SoftmaxFamilyOp(int axis) : m_axis(axis) {}
  // Checks that input i is a float32/float64 tensor with this axis.
  void checkInput(std::span<const VarPtr> inputs, int i) const;
  int m_axis;
};

class Softmax final : public SoftmaxFamilyOp {
 public:
  explicit Softmax(int axis = -1) : SoftmaxFamilyOp(axis) {}
  std::string name() const override { return "Softmax"; }
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
};

class LogSoftmax final : public SoftmaxFamilyOp {
 public:
  explicit LogSoftmax(int axis = -1) : SoftmaxFamilyOp(axis) {}
  std::string name() const override { return "LogSoftmax"; }
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
};

// SoftmaxGrad(g, y): inputs the output gradient and softmax's output (same type).
class SoftmaxGrad final : public SoftmaxFamilyOp {
 public:
  explicit SoftmaxGrad(int axis = -1) : SoftmaxFamilyOp(axis) {}
  std::string name() const override { return "SoftmaxGrad"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

// LogSoftmaxGrad(g, y): inputs the output gradient and log_softmax's output (same type).
class LogSoftmaxGrad final : public SoftmaxFamilyOp {
 public:
  explicit LogSoftmaxGrad(int axis = -1) : SoftmaxFamilyOp(axis) {}
  std::string name() const override { return "LogSoftmaxGrad"; }
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
};

VarPtr softmax(const VarPtr& x, int axis = -1,
               std::source_location site = std::source_location::current());
VarPtr logSoftmax(const VarPtr& x, int axis = -1,
                  std::source_location site = std::source_location::current());
VarPtr softmaxGrad(const VarPtr& g, const VarPtr& y, int axis = -1,
                   std::source_location site = std::source_location::current());
VarPtr logSoftmaxGrad(const VarPtr& g, const VarPtr& y, int axis = -1,
                      std::source_location site = std::source_location::current());

}  // namespace tscope::engine

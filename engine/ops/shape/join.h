#pragma once
// Join (numpy's concatenate) and its inverse Split. Join{axis}(a, b, ...) puts its inputs one
// after another along axis; they must agree on every other axis. Split{axis,n_splits}(x, sizes)
// cuts x along axis into n pieces of the given sizes (views of x).
//   concatenate({a, b}, 1);  stack({a, b}, 0);  split(x, {2, 3}, 1)

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Join final : public Op {
 public:
  explicit Join(int axis);
  int axis() const { return m_axis; }
  std::string name() const override { return "Join"; }
  nlohmann::json props() const override { return {{"axis", m_axis}}; }
  // dtype: numpy's promotion of the inputs.
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

  // The runtime output shape and dtype for these input values; throws std::invalid_argument as
  // perform does. The CUDA kernel shares it.
  std::pair<Shape, DType> outputShapeAndDType(std::span<const Tensor* const> inputs) const;

 private:
  int m_axis;
};

class Split final : public Op {
 public:
  Split(int axis, int nSplits);
  int axis() const { return m_axis; }
  int nSplits() const { return m_nSplits; }
  std::string name() const override { return "Split"; }
  nlohmann::json props() const override { return {{"axis", m_axis}, {"n_splits", m_nSplits}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  ViewMap viewMap() const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_axis;
  int m_nSplits;
};

// Negative axes count from the end of the inputs' rank.
VarPtr join(int axis, const std::vector<VarPtr>& tensors,
            std::source_location site = std::source_location::current());
VarPtr concatenate(const std::vector<VarPtr>& tensors, int axis = 0,
                   std::source_location site = std::source_location::current());
// A new axis at `axis` of the result, then join along it (numpy's stack).
VarPtr stack(const std::vector<VarPtr>& tensors, int axis = 0,
             std::source_location site = std::source_location::current());
std::vector<VarPtr> split(const VarPtr& x, const std::vector<std::int64_t>& sizes, int axis = 0,
                          std::source_location site = std::source_location::current());
// sizes: a 1-d integer vector of static length (e.g. makeVector of symbolic sizes).
std::vector<VarPtr> split(const VarPtr& x, const VarPtr& sizes, int axis = 0,
                          std::source_location site = std::source_location::current());

}  // namespace tscope::engine

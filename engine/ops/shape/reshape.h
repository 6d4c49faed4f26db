#pragma once
// Reshape(x, shape): x's elements in row-major order with a new shape. The target shape is a 1-d
// integer input, so it can be symbolic (makeVector of shape expressions); ndim is a prop. One
// entry may be -1 (inferred). The output is a view when x is contiguous, else a copy.
//   reshape(x, {2, -1});  reshape(x, ShapeExpr{shapeI(x, 0), constantInt(-1)});  flatten(x, 2)

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Reshape final : public Op {
 public:
  explicit Reshape(int ndim);
  int ndim() const { return m_ndim; }

  std::string name() const override { return "Reshape"; }
  nlohmann::json props() const override { return {{"ndim", m_ndim}}; }
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
  ViewMap viewMap() const override { return {{0, {0}}}; }

  // The runtime output shape for x of shape xShape and the shape input's value (-1 inferred);
  // throws std::invalid_argument as perform does. The CUDA kernel shares it.
  Shape outputShape(const Shape& xShape, const Tensor& shape) const;

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_ndim;
};

VarPtr reshape(const VarPtr& x, const std::vector<std::int64_t>& shape,
               std::source_location site = std::source_location::current());
// Each entry a 0-d integer (constantInt(-1) for the inferred one).
VarPtr reshape(const VarPtr& x, const ShapeExpr& shape,
               std::source_location site = std::source_location::current());
// shape: a 1-d integer vector of static length.
VarPtr reshape(const VarPtr& x, const VarPtr& shape,
               std::source_location site = std::source_location::current());
// Theano's flatten(x, outdim): keeps the first ndim-1 axes and folds the rest into the last one;
// flatten(x) is the 1-d vector of all elements. ndim in [1, max(x.ndim, 1)].
VarPtr flatten(const VarPtr& x, int ndim = 1,
               std::source_location site = std::source_location::current());

}  // namespace tscope::engine

#pragma once
// SpecifyShape(x, d0, d1, ...): x itself (a view), asserting at run time that axis i has size d_i
// and telling the type what it knows. A d_i of -1 leaves axis i unchecked. Theano's specify_shape.
//   specifyShape(x, {-1, 4}) on a (?, ?) matrix gives a (?, 4) matrix and checks the 4 per call.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class SpecifyShape final : public Op {
 public:
  std::string name() const override { return "SpecifyShape"; }
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

  static OpPtr fromProps(const nlohmann::json& props);
};

// dims: one 0-d integer per axis of x (a constant -1 leaves the axis unchecked).
VarPtr specifyShape(const VarPtr& x, const ShapeExpr& dims,
                    std::source_location site = std::source_location::current());
VarPtr specifyShape(const VarPtr& x, const std::vector<std::int64_t>& dims,
                    std::source_location site = std::source_location::current());
// x with the static dimensions of `shape` (kUnknownDim entries left as they are) asserted: x
// itself when its type already knows them. Used by gradients whose incoming value has a looser
// type than the variable it belongs to.
VarPtr refineShape(const VarPtr& x, const std::vector<std::int64_t>& shape,
                   std::source_location site = std::source_location::current());

}  // namespace tscope::engine

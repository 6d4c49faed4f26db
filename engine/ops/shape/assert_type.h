#pragma once
// AssertType{shape}(x): x as a value of shape `shape` (x's dtype and device), checked at run
// time: x itself (a view) when its value has that rank and every dimension `shape` knows, else the
// node fails naming both shapes. `shape` may have another rank than x: such a node fails whenever
// it runs.
//   assertType(x, {kUnknownDim}) on a (?, 1) x gives a (?,) output that no value of x fits.
//
// Note [IfElse branches of another rank]: ONNX lets an If's branches give values of different
// ranks (PyTorch's opset-11 export of a Squeeze whose axis it cannot prove to be 1 is an If of a
// Squeeze and an Identity). A Tensorscope type has one static rank, so the IfElse takes the rank
// of the branch the importer can prove is taken (or the one ONNX declares), and the other branch
// ends in an AssertType to that rank: the IfElse's types agree, the branch runs as before, and if
// it is ever taken the run fails at the AssertType node, naming the shape the branch gave. Its
// gradient is the AssertType back to x's shape, so a gradient through that branch fails the same
// way and one through the other branch is unchanged.
// - props {"shape": [d0, d1, ...]}, -1 for an unknown dimension.

#include "engine/graph/op.h"

#include <cstdint>
#include <source_location>
#include <vector>

namespace tscope::engine {

class AssertType final : public Op {
 public:
  // Throws std::invalid_argument for a dimension below -1.
  explicit AssertType(std::vector<std::int64_t> shape);
  const std::vector<std::int64_t>& shape() const { return m_shape; }

  std::string name() const override { return "AssertType"; }
  nlohmann::json props() const override { return {{"shape", m_shape}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  ViewMap viewMap() const override { return {{0, {0}}}; }

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  std::vector<std::int64_t> m_shape;
};

// x with the static shape `shape` (kUnknownDim entries unknown), checked at run time; x itself
// when its type already has that rank and knows those dimensions.
VarPtr assertType(const VarPtr& x, const std::vector<std::int64_t>& shape,
                  std::source_location site = std::source_location::current());

}  // namespace tscope::engine

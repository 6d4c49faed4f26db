#pragma once
// SumToShape(g, d0, ..., dk-1): the reduction of a broadcast gradient back to an input's shape.
// It sums g over its leading extra axes and over every axis where the target size is 1 and g's is
// not, keeping that axis with size 1 (numpy: g.sum(axis=lead + stretched, keepdims on the
// stretched ones)). The target sizes are 0-d int64 inputs, so the reduction is right also when
// the broadcast only happened at run time (a dimension the type left unknown turned out to be 1).
//   SumToShape(g: (2, 3, 4), 3, 1) -> (3, 1): sums over axis 0 and axis 2.
//   SumToShape(g: (3, 4), 3, 4)    -> g itself (a view: nothing to sum).

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class SumToShape final : public Op {
 public:
  std::string name() const override { return "SumToShape"; }
  // Input 0: any tensor; inputs 1..k: 0-d int64 target sizes (k <= g's rank). The output has g's
  // dtype and the target's static sizes where the size inputs are constants.
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  // g gets the output gradient broadcast back to g's shape (second(g, og)); the sizes are
  // disconnected.
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  // Linear in g: SumToShape(tangent of g, the same sizes).
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  // When nothing is summed the output is g itself.
  ViewMap viewMap() const override { return {{0, {0}}}; }

  // Takes no props: {} (or null).
  static OpPtr fromProps(const nlohmann::json& props);
};

// g summed to the shape of `like` (SumToShape(g, shapeOf(like)...)), typed like `like` with g's
// dtype; g itself when the static shapes prove that no axis needs summing (same rank, and on every
// axis like's size is known and not 1, or g's size is statically 1).
VarPtr sumToShape(const VarPtr& g, const VarPtr& like,
                  std::source_location site = std::source_location::current());

}  // namespace tscope::engine

#pragma once
// NonZero(x): the positions of x's non-zero elements, one column per element in row-major order,
// as an int64 matrix of shape (x.ndim, count): numpy.nonzero stacked, torch.nonzero transposed,
// ONNX's NonZero. NaN counts as non-zero, as does True; x has rank 1 or more.
//   auto at = nonzero(gt(scores, threshold));             // (2, count) for a matrix
//   auto picked = advancedSubtensor(x, {select(at, 0, 0), select(at, 0, 1)});   // x[mask]
// Its column count depends on x's values, so there is no inferShape (the shape graph may not run
// the op): ShapeFeature's fallback takes the rank from the type and reads the count at run time.
// The positions do not depend differentiably on x (disconnected).

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class NonZero final : public Op {
 public:
  std::string name() const override { return "NonZero"; }
  nlohmann::json props() const override { return nlohmann::json::object(); }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

VarPtr nonzero(const VarPtr& x, std::source_location site = std::source_location::current());

}  // namespace tscope::engine

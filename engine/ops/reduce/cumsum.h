#pragma once
// CumSum{axis,exclusive,reverse}(x): running sums along one axis (numpy.cumsum, torch.cumsum,
// ONNX's CumSum). exclusive: position i sums the elements before i (the first is 0); reverse: the
// sums run from the end of the axis. Same dtype and shape as x; bool is refused (numpy would
// promote it). Floats accumulate in double, integers in int64 (wrapping to x's width as plain
// additions in that type would).
//   auto pos = cumsum(mask, 1) - 1;                 // position ids from an attention mask
//   auto tail = cumsum(x, 0, /*exclusive=*/false, /*reverse=*/true);
// Gradient: the output gradient summed the other way (same exclusive flag, reverse flipped); the
// op is linear, so the R-op is CumSum of the tangent.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class CumSum final : public Op {
 public:
  // axis: non-negative (the builder normalises).
  CumSum(int axis, bool exclusive, bool reverse);
  int axis() const { return m_axis; }
  bool exclusive() const { return m_exclusive; }
  bool reverse() const { return m_reverse; }

  std::string name() const override { return "CumSum"; }
  nlohmann::json props() const override;  // {"axis": 1, "exclusive": false, "reverse": false}
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
  int m_axis;
  bool m_exclusive;
  bool m_reverse;
};

// A negative axis counts from the end.
VarPtr cumsum(const VarPtr& x, int axis, bool exclusive = false, bool reverse = false,
              std::source_location site = std::source_location::current());

}  // namespace tscope::engine

#pragma once
// TopK{axis,k,largest}(x) -> (values, indices): the k largest (smallest) elements of x along
// axis, sorted largest (smallest) first, and their int64 positions along that axis. Equal values
// keep the lower index first and NaN counts as larger than every number (numpy's sort order,
// torch.topk, ONNX's TopK). The output shape is x's with the axis's size replaced by k.
//   auto [values, indices] = topk(scores, 5);          // the 5 largest along the last axis
//   auto [lo, at] = topk(x, 2, 0, /*largest=*/false);  // the 2 smallest along axis 0
// Gradient: the values' gradient scattered back to the chosen positions (zero elsewhere); the
// indices do not depend differentiably on x.

#include "engine/graph/op.h"

#include <source_location>
#include <utility>

namespace tscope::engine {

class TopK final : public Op {
 public:
  // axis: non-negative (the builder normalises); k >= 0.
  TopK(int axis, std::int64_t k, bool largest);
  int axis() const { return m_axis; }
  std::int64_t k() const { return m_k; }
  bool largest() const { return m_largest; }

  std::string name() const override { return "TopK"; }
  nlohmann::json props() const override;  // {"axis": 1, "k": 3, "largest": true}
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
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_axis;
  std::int64_t m_k;
  bool m_largest;
};

// (values, indices); a negative axis counts from the end.
std::pair<VarPtr, VarPtr> topk(const VarPtr& x, std::int64_t k, int axis = -1, bool largest = true,
                               std::source_location site = std::source_location::current());

}  // namespace tscope::engine

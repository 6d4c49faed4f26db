#pragma once
// Argmax / Argmin: the int64 index of the first maximum (minimum) along one axis, or into the
// row-major flattening of the whole tensor when the axis is null. Like numpy, NaN wins: the first
// NaN along the axis is the answer for both. The output does not depend differentiably on the
// input: the gradient is disconnected.

#include "engine/graph/op.h"

#include <optional>

namespace tscope::engine {

class ArgReduce final : public Op {
 public:
  enum class Kind : std::uint8_t { Max, Min };
  // axis: non-negative (the builders normalise), or nullopt for the flattened tensor.
  ArgReduce(Kind kind, std::optional<int> axis);

  Kind kind() const { return m_kind; }
  const std::optional<int>& axis() const { return m_axis; }

  std::string name() const override { return m_kind == Kind::Max ? "Argmax" : "Argmin"; }
  nlohmann::json props() const override;  // {"axis": 1} or {"axis": null}
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;

  static OpPtr fromPropsMax(const nlohmann::json& props);
  static OpPtr fromPropsMin(const nlohmann::json& props);

 private:
  Kind m_kind;
  std::optional<int> m_axis;
};

}  // namespace tscope::engine

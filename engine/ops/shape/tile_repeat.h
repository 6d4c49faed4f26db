#pragma once
// numpy's tile and repeat with constant counts (props):
//   Tile{reps=[2,1,3]}(x): x repeated reps[i] times along axis i; a shorter reps is padded with
//     leading 1s, a shorter x gets leading axes of size 1 (np.tile).
//   Repeat{repeats=[2],axis=1}(x): each element along axis repeated 2 times; repeats may also give
//     one count per element of that axis (np.repeat).
// Their gradients sum the output gradient over the copies.

#include "engine/graph/op.h"

#include <optional>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Tile final : public Op {
 public:
  explicit Tile(std::vector<std::int64_t> reps);
  const std::vector<std::int64_t>& reps() const { return m_reps; }
  std::string name() const override { return "Tile"; }
  nlohmann::json props() const override { return {{"reps", m_reps}}; }
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
  std::vector<std::int64_t> m_reps;
};

class Repeat final : public Op {
 public:
  // repeats: one count for every element, or one per element along axis.
  Repeat(std::vector<std::int64_t> repeats, int axis);
  const std::vector<std::int64_t>& repeats() const { return m_repeats; }
  int axis() const { return m_axis; }
  std::string name() const override { return "Repeat"; }
  nlohmann::json props() const override { return {{"repeats", m_repeats}, {"axis", m_axis}}; }
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
  bool uniform() const { return m_repeats.size() == 1; }
  std::vector<std::int64_t> m_repeats;
  int m_axis;
};

VarPtr tile(const VarPtr& x, const std::vector<std::int64_t>& reps,
            std::source_location site = std::source_location::current());
// axis nullopt: repeat the elements of the flattened x (numpy's default).
VarPtr repeat(const VarPtr& x, std::int64_t repeats, std::optional<int> axis = std::nullopt,
              std::source_location site = std::source_location::current());
VarPtr repeat(const VarPtr& x, const std::vector<std::int64_t>& repeats,
              std::optional<int> axis = std::nullopt,
              std::source_location site = std::source_location::current());

}  // namespace tscope::engine

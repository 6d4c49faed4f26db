#pragma once
// Integer-array indexing along the first axis (numpy's x[idx] with a 1-d integer array idx;
// Theano's AdvancedSubtensor1) and its scatter form. The result is a copy, not a view.
//
//   advancedSubtensor1(W, ids)          // rows of W: an embedding lookup, shape (len(ids), ...)
//   advancedIncSubtensor1(x, y, ids)    // x with y[k] added to row ids[k]; duplicates accumulate
//   advancedSetSubtensor1(x, y, ids)    // x with row ids[k] replaced by y[k] (the last one wins)
// Negative indices count from the end; an index out of range throws std::out_of_range naming the
// index, the axis and the size.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class AdvancedSubtensor1 final : public Op {
 public:
  std::string name() const override { return "AdvancedSubtensor1"; }
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
};

// Inputs x, y, idx: y broadcasts to (len(idx),) + x.shape[1:] (Note [Operand broadcasting] in
// shape_common.h).
class AdvancedIncSubtensor1 final : public Op {
 public:
  explicit AdvancedIncSubtensor1(bool setInsteadOfInc, bool inplace = false)
      : m_set(setInsteadOfInc), m_inplace(inplace) {}
  bool setInsteadOfInc() const { return m_set; }
  bool inplace() const { return m_inplace; }

  std::string name() const override { return "AdvancedIncSubtensor1"; }
  nlohmann::json props() const override;  // {"set_instead_of_inc": false, "inplace": false}
  // "AdvancedIncSubtensor1", "AdvancedSetSubtensor1{inplace}".
  std::string str() const override;
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
  DestroyMap destroyMap() const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  bool m_set;
  bool m_inplace;
};

VarPtr advancedSubtensor1(const VarPtr& x, const VarPtr& idx,
                          std::source_location site = std::source_location::current());
VarPtr advancedIncSubtensor1(const VarPtr& x, const VarPtr& y, const VarPtr& idx,
                             std::source_location site = std::source_location::current());
VarPtr advancedSetSubtensor1(const VarPtr& x, const VarPtr& y, const VarPtr& idx,
                             std::source_location site = std::source_location::current());
// x[idx] along any axis (numpy's take with a 1-d index): the axis moved to the front, indexed,
// moved back.
VarPtr take(const VarPtr& x, const VarPtr& idx, int axis,
            std::source_location site = std::source_location::current());

}  // namespace tscope::engine

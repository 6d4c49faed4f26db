#pragma once
// General integer-array indexing (numpy's advanced indexing): per axis an integer array of any
// rank, or a slice with constant bounds; the arrays broadcast together to a shape B. Theano's
// AdvancedSubtensor / AdvancedIncSubtensor.
//   advancedSubtensor(x, {rows, Idx::all(), cols})   // x[rows, :, cols]
// Note [Advanced index layout] (numpy's rule): when the array axes are adjacent, B replaces them
// in place (x: (2, 3, 4), x[:, i, j] with i, j of shape (5,) gives (2, 5)); when a slice separates
// them, B comes first (x[i, :, j] gives (5, 3)). The result is a copy. Indices may be negative;
// one out of range throws std::out_of_range naming the index, the axis and the size.

#include "engine/graph/op.h"
#include "engine/ops/shape/subtensor.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

// One entry as the user gives it: an integer array, or a slice with constant (or absent) bounds.
class AdvIdx {
 public:
  AdvIdx(VarPtr array);  // NOLINT: implicit by design
  AdvIdx(Idx slice);     // NOLINT; throws std::invalid_argument for an index or a symbolic bound
  const VarPtr& array() const { return m_array; }
  const Idx& slice() const { return m_slice; }

 private:
  VarPtr m_array;
  Idx m_slice;
};

// The stored pattern: per axis an array (the next array input) or a constant slice.
struct AdvEntry {
  bool isArray = false;
  IdxPart start, stop, step;  // Kind::None or Kind::Constant
  friend bool operator==(const AdvEntry&, const AdvEntry&) = default;
};

class AdvancedIndex {
 public:
  AdvancedIndex() = default;
  // Throws std::invalid_argument without an array entry, with a symbolic part or a zero step.
  explicit AdvancedIndex(std::vector<AdvEntry> entries);
  const std::vector<AdvEntry>& entries() const { return m_entries; }
  int nArrays() const { return m_nArrays; }
  nlohmann::json toJson() const;  // ["array", {"start": 1, "stop": null, "step": null}, ...]
  static AdvancedIndex fromJson(const nlohmann::json& list, const std::string& op);
  std::string str() const;  // "[],::2,[]"
  // The static output shape; throws TypeError starting with `op`.
  std::vector<std::int64_t> outputShape(const TensorType& x, std::span<const VarPtr> arrays,
                                        const std::string& op) const;
  ShapeExpr outputShape(const ShapeExpr& xShape, std::span<const VarPtr> arrays) const;
  friend bool operator==(const AdvancedIndex&, const AdvancedIndex&) = default;

 private:
  std::vector<AdvEntry> m_entries;
  int m_nArrays = 0;
};

// x[index]: inputs x, then the index arrays.
class AdvancedSubtensor final : public Op {
 public:
  explicit AdvancedSubtensor(AdvancedIndex index) : m_index(std::move(index)) {}
  const AdvancedIndex& index() const { return m_index; }
  std::string name() const override { return "AdvancedSubtensor"; }
  nlohmann::json props() const override { return {{"idx_list", m_index.toJson()}}; }
  std::string str() const override { return "AdvancedSubtensor{" + m_index.str() + "}"; }
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
  AdvancedIndex m_index;
};

// x with x[index] incremented by y (duplicates accumulate) or replaced by y (the last write
// wins): inputs x, y, then the index arrays. y broadcasts to the shape of x[index].
class AdvancedIncSubtensor final : public Op {
 public:
  AdvancedIncSubtensor(AdvancedIndex index, bool setInsteadOfInc, bool inplace = false)
      : m_index(std::move(index)), m_set(setInsteadOfInc), m_inplace(inplace) {}
  const AdvancedIndex& index() const { return m_index; }
  bool setInsteadOfInc() const { return m_set; }
  bool inplace() const { return m_inplace; }
  std::string name() const override { return "AdvancedIncSubtensor"; }
  nlohmann::json props() const override;
  std::string str()
      const override;  // "AdvancedIncSubtensor{[],:}", "AdvancedSetSubtensor{[],inplace}"
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
  AdvancedIndex m_index;
  bool m_set;
  bool m_inplace;
};

VarPtr advancedSubtensor(const VarPtr& x, const std::vector<AdvIdx>& index,
                         std::source_location site = std::source_location::current());
VarPtr advancedIncSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<AdvIdx>& index,
                            std::source_location site = std::source_location::current());
VarPtr advancedSetSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<AdvIdx>& index,
                            std::source_location site = std::source_location::current());

}  // namespace tscope::engine

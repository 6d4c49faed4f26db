#pragma once
// Basic numpy indexing: per axis an integer index (drops the axis; negative counts from the end)
// or a slice start:stop:step, each part absent, a constant or a symbolic 0-d integer. Axes past
// the last entry are taken whole. Theano's Subtensor / IncSubtensor.
//
//   subtensor(x, {Idx::slice(1, std::nullopt), Idx::at(2)})   // x[1:, 2]
//   subtensor(x, {Idx::all(), Idx::slice(std::nullopt, std::nullopt, -1)})  // x[:, ::-1]
//   select(x, 1, i)            // x[:, i] with i a 0-d int variable
//   setSubtensor(x[...], y)    // x with that region replaced by y (incSubtensor: y added)
//
// Note [Index lists]: the op's props hold the pattern (Theano's idx_list): for each entry, "i"
// (an index) or "start"/"stop"/"step" (a slice), each null (absent), an integer (a constant) or
// "?" (the next symbolic input, in order). Constants live in the props so static output shapes
// follow from the type alone; symbolic parts are extra 0-d integer inputs after x (and y).

#include "engine/graph/op.h"

#include <optional>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

// One part of an index or a slice as the user gives it: absent, a constant, or a 0-d integer
// variable (a Constant variable is folded into a constant).
class IdxBound {
 public:
  IdxBound() = default;
  IdxBound(std::nullopt_t) {}                       // NOLINT: implicit by design
  IdxBound(std::int64_t value) : m_value(value) {}  // NOLINT
  IdxBound(int value) : m_value(value) {}           // NOLINT
  IdxBound(VarPtr var);                             // NOLINT
  bool absent() const { return !m_value && !m_var; }
  const std::optional<std::int64_t>& value() const { return m_value; }
  const VarPtr& var() const { return m_var; }

 private:
  std::optional<std::int64_t> m_value;
  VarPtr m_var;
};

struct Idx {
  bool isSlice = true;
  IdxBound start, stop, step;  // an index uses start

  static Idx at(IdxBound index);
  static Idx slice(IdxBound start = {}, IdxBound stop = {}, IdxBound step = {});
  static Idx all() { return slice(); }
};

// The stored pattern (Note [Index lists]).
struct IdxPart {
  enum class Kind : std::uint8_t { None, Constant, Input };
  Kind kind = Kind::None;
  std::int64_t value = 0;  // for Constant
  friend bool operator==(const IdxPart&, const IdxPart&) = default;
};
struct IdxEntry {
  bool isSlice = true;
  IdxPart start, stop, step;  // an index uses start
  friend bool operator==(const IdxEntry&, const IdxEntry&) = default;
};

class IndexList {
 public:
  IndexList() = default;
  // Throws std::invalid_argument for an index that is absent or a constant step of 0.
  explicit IndexList(std::vector<IdxEntry> entries);
  // The pattern and the symbolic inputs of user indices.
  static std::pair<IndexList, std::vector<VarPtr>> fromIdx(const std::vector<Idx>& idx);

  const std::vector<IdxEntry>& entries() const { return m_entries; }
  // Symbolic parts (extra inputs).
  int nInputs() const { return m_nInputs; }
  // Axes the indices drop.
  int nDropped() const;

  nlohmann::json toJson() const;
  static IndexList fromJson(const nlohmann::json& list, const std::string& op);
  // "1:,2", "::-1", "?:?"; an empty list prints "".
  std::string str() const;

  // The static output shape for x of this type; checks the index inputs (0-d integers) and
  // constant indices against known sizes. Errors are TypeErrors that start with `op`.
  std::vector<std::int64_t> outputShape(const TensorType& x, std::span<const VarPtr> scalars,
                                        const std::string& op) const;
  // The region of x the pattern selects, as a view; scalars are the values of the index inputs.
  // An index out of range throws std::out_of_range naming the axis, the index and the size.
  Tensor apply(const Tensor& x, std::span<const Tensor* const> scalars,
               const std::string& op) const;
  // The output shape as expressions of x's shape and the index inputs.
  ShapeExpr outputShape(const ShapeExpr& xShape, std::span<const VarPtr> scalars) const;

  friend bool operator==(const IndexList&, const IndexList&) = default;

 private:
  std::vector<IdxEntry> m_entries;
  int m_nInputs = 0;
};

// x[indices]: inputs x, then the symbolic index parts. The output is a view of x.
class Subtensor final : public Op {
 public:
  explicit Subtensor(IndexList indices) : m_indices(std::move(indices)) {}
  const IndexList& indices() const { return m_indices; }

  std::string name() const override { return "Subtensor"; }
  nlohmann::json props() const override;  // {"idx_list": [...]}
  std::string str() const override;       // "Subtensor{1:,2}"
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

 private:
  IndexList m_indices;
};

// x with x[indices] incremented by y (or replaced by y when setInsteadOfInc): inputs x, y, then
// the symbolic index parts. y broadcasts to the region by numpy's rules
// (Note [Operand broadcasting] in shape_common.h). inplace: the output is x's buffer (destroyMap);
// otherwise x is copied first.
class IncSubtensor final : public Op {
 public:
  IncSubtensor(IndexList indices, bool setInsteadOfInc, bool inplace = false)
      : m_indices(std::move(indices)), m_set(setInsteadOfInc), m_inplace(inplace) {}
  const IndexList& indices() const { return m_indices; }
  bool setInsteadOfInc() const { return m_set; }
  bool inplace() const { return m_inplace; }

  std::string name() const override { return "IncSubtensor"; }
  // {"idx_list": [...], "set_instead_of_inc": false, "inplace": false}
  nlohmann::json props() const override;
  // "IncSubtensor{1:,2}", "SetSubtensor{::2,inplace}".
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
  IndexList m_indices;
  bool m_set;
  bool m_inplace;
};

VarPtr subtensor(const VarPtr& x, const std::vector<Idx>& indices,
                 std::source_location site = std::source_location::current());
// x[:, ..., start:stop:step] on one axis (negative axes count from the end).
VarPtr slice(const VarPtr& x, int axis, IdxBound start, IdxBound stop, IdxBound step = {},
             std::source_location site = std::source_location::current());
// x[:, ..., i] on one axis: drops the axis.
VarPtr select(const VarPtr& x, int axis, IdxBound index,
              std::source_location site = std::source_location::current());

VarPtr incSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<Idx>& indices,
                    std::source_location site = std::source_location::current());
VarPtr setSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<Idx>& indices,
                    std::source_location site = std::source_location::current());
// Theano's form: `sub` is x[...] built by subtensor/slice/select, advancedSubtensor1 or
// advancedSubtensor (advanced_index.h); returns x with that region incremented by (replaced by) y.
VarPtr incSubtensor(const VarPtr& sub, const VarPtr& y,
                    std::source_location site = std::source_location::current());
VarPtr setSubtensor(const VarPtr& sub, const VarPtr& y,
                    std::source_location site = std::source_location::current());

}  // namespace tscope::engine

#pragma once
// Alloc(value, d0, d1, ...): a new tensor of shape (d0, d1, ...) filled with value broadcast to it
// (Theano's Alloc; value aligned on the right, Note [Operand broadcasting] in shape_common.h).
// ARange(start, stop, step): numpy's arange. Builders zeros/ones/full make constant-filled
// tensors of a (possibly symbolic) shape.
//   zeros({2, 3}, DType::Float32);  full(shapeOf(x), 0.5, DType::Float64);  arange(shapeI(x, 0))

#include "engine/graph/op.h"

#include <optional>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Alloc final : public Op {
 public:
  std::string name() const override { return "Alloc"; }
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

// Note [ARange dtype]: the dtype is a prop; the builder's default is numpy's promotion of the
// three inputs (bool becomes int64). The length is ceil((stop - start) / step), at least 0.
class ARange final : public Op {
 public:
  explicit ARange(DType dtype);
  DType dtype() const { return m_dtype; }
  std::string name() const override { return "ARange"; }
  nlohmann::json props() const override;  // {"dtype": "int64"}
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  DType m_dtype;
};

// value broadcast to shape (each entry a 0-d integer).
VarPtr alloc(const VarPtr& value, const ShapeExpr& shape,
             std::source_location site = std::source_location::current());
VarPtr zeros(const ShapeExpr& shape, DType dtype,
             std::source_location site = std::source_location::current());
VarPtr zeros(const std::vector<std::int64_t>& shape, DType dtype,
             std::source_location site = std::source_location::current());
VarPtr ones(const ShapeExpr& shape, DType dtype,
            std::source_location site = std::source_location::current());
VarPtr ones(const std::vector<std::int64_t>& shape, DType dtype,
            std::source_location site = std::source_location::current());
VarPtr full(const ShapeExpr& shape, double value, DType dtype,
            std::source_location site = std::source_location::current());
VarPtr full(const ShapeExpr& shape, const VarPtr& value,
            std::source_location site = std::source_location::current());
// The shape as 0-d int64 constants.
ShapeExpr constantShape(const std::vector<std::int64_t>& shape,
                        std::source_location site = std::source_location::current());

VarPtr arange(const VarPtr& start, const VarPtr& stop, const VarPtr& step,
              std::optional<DType> dtype = std::nullopt,
              std::source_location site = std::source_location::current());
// arange(0, stop, 1).
VarPtr arange(const VarPtr& stop, std::source_location site = std::source_location::current());

}  // namespace tscope::engine

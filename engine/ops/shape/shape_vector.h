#pragma once
// Shapes as values: Shape(x) is the 1-d int64 vector of x's dimensions (Theano's Shape);
// MakeVector(a, b, ...) packs 0-d scalars into a 1-d vector. Together they carry symbolic shapes
// into ops that take a shape as an input (Reshape, Split):
//   reshape(x, makeVector({shapeI(x, 0), constantInt(-1)}))

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

// Named ShapeOp because `Shape` is the runtime shape type (engine/tensor/tensor.h); its op name
// is "Shape".
class ShapeOp final : public Op {
 public:
  std::string name() const override { return "Shape"; }
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

class MakeVector final : public Op {
 public:
  // dtype: of the output; every input must convert to it without loss.
  explicit MakeVector(DType dtype = DType::Int64) : m_dtype(dtype) {}
  DType dtype() const { return m_dtype; }
  std::string name() const override { return "MakeVector"; }
  nlohmann::json props() const override;  // {"dtype": "int64"}
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
  DType m_dtype;
};

// The 1-d int64 vector of x's dimensions.
VarPtr shapeVector(const VarPtr& x, std::source_location site = std::source_location::current());
// A 1-d vector of the scalars (all 0-d), of their promoted dtype (int64 for none).
VarPtr makeVector(const std::vector<VarPtr>& scalars,
                  std::source_location site = std::source_location::current());
VarPtr makeVector(const std::vector<VarPtr>& scalars, DType dtype,
                  std::source_location site = std::source_location::current());
// The entries of a 1-d integer vector variable as 0-d int64 variables: the inputs of a
// MakeVector, the values of a constant, else one element read per entry. nullopt when the
// length is not static.
std::optional<ShapeExpr> vectorEntries(const VarPtr& v,
                                       std::source_location site = std::source_location::current());

}  // namespace tscope::engine

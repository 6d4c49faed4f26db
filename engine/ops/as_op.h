#pragma once
// asOp: wraps a C++ function on tensors as an op, like Theano's as_op decorator. The op has
// declared input and output types, an optional symbolic shape function, and no gradient (its
// pullback is undefined; grad() through it raises with the op's name).
//
//   auto sortRows = asOp("SortRows", {TensorType(DType::Float64, {U, U})},
//   {TensorType(DType::Float64, {U, U})},
//                        [](std::span<const Tensor> in) { ...; return std::vector<Tensor>{out}; });
//   VarPtr y = sortRows({x});
//
// Note [asOp identity]: two asOps are equal when their names are equal; give each function its own
// name. A graph saved with an asOp loads back as an opaque op unless the loading program registers
// the same op (registerAsOp).

#include "engine/graph/op.h"

#include <functional>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

using AsOpFunction = std::function<std::vector<Tensor>(std::span<const Tensor> inputs)>;
using AsOpShapeFunction =
    std::function<std::vector<ShapeExpr>(std::span<const ShapeExpr> inputShapes)>;

class AsOp final : public Op {
 public:
  AsOp(std::string opName, std::vector<TensorType> inputTypes, std::vector<TensorType> outputTypes,
       AsOpFunction function, AsOpShapeFunction shapeFunction = {});

  std::string name() const override { return m_name; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;

  const std::string& opName() const { return m_name; }
  // Builds the node: `op({x, y})` (single output) or makeNode for several outputs.
  VarPtr operator()(std::vector<VarPtr> inputs,
                    std::source_location site = std::source_location::current()) const {
    return Op::operator()(std::move(inputs), site);
  }

 private:
  std::string m_name;
  std::vector<TensorType> m_inputTypes;
  std::vector<TensorType> m_outputTypes;
  AsOpFunction m_function;
  AsOpShapeFunction m_shapeFunction;
};

std::shared_ptr<const AsOp> asOp(std::string name, std::vector<TensorType> inputTypes,
                                 std::vector<TensorType> outputTypes, AsOpFunction function,
                                 AsOpShapeFunction shapeFunction = {});

// Lets files that name this asOp load it back executable.
void registerAsOp(OpRegistry& registry, std::shared_ptr<const AsOp> op);

}  // namespace tscope::engine

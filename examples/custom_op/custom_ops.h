#pragma once
// Theano's "Creating a new Op" tutorial ops, written against the Tensorscope Op contract (see
// engine/graph/op.h and docs/adding-an-op.md):
//   DoubleOp   x -> 2x                      (perform, inferShape, pullback, pushforward)
//   ProdOp     (x, y) -> x * y              (two inputs)
//   SumDiffOp  (x, y) -> (x + y, x - y)     (two outputs)
// Each works on float32 and float64 tensors of any shape (x and y of the same shape).

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {
class OpRegistry;
}

namespace tscope::examples {

using engine::Apply;
using engine::Grad;
using engine::ShapeExpr;
using engine::Tensor;
using engine::TensorType;
using engine::VarPtr;

class DoubleOp final : public engine::Op {
 public:
  std::string name() const override { return "DoubleOp"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
};

class ProdOp final : public engine::Op {
 public:
  std::string name() const override { return "ProdOp"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
};

class SumDiffOp final : public engine::Op {
 public:
  std::string name() const override { return "SumDiffOp"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
};

VarPtr doubleOp(const VarPtr& x, std::source_location site = std::source_location::current());
VarPtr prodOp(const VarPtr& x, const VarPtr& y,
              std::source_location site = std::source_location::current());
// {x + y, x - y}
std::vector<VarPtr> sumDiffOp(const VarPtr& x, const VarPtr& y,
                              std::source_location site = std::source_location::current());

// Registers the three ops so .tsg files that name them load executable.
void registerTutorialOps(engine::OpRegistry& registry);

}  // namespace tscope::examples

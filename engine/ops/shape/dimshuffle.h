#pragma once
// DimShuffle: reorders the axes of a tensor, inserts broadcastable axes ("x") and drops axes of
// size 1. Its output is a view of its input (no copy).
//   DimShuffle{1,0}: transpose; DimShuffle{x,0}: vector -> row; DimShuffle{0}: (n, 1) -> (n,)
// It is linear: the gradient is the inverse DimShuffle of the output gradient (dropped axes come
// back as broadcastable ones, inserted ones go), the R-op the same DimShuffle of the tangent.
//
// The other shape and indexing ops live beside it (engine/ops/shape/shape.h includes them all);
// registerShapeOps registers the whole family.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class DimShuffle final : public Op {
 public:
  static constexpr int kNewAxis = -1;  // "x" in the order
  // order: for each output axis, the input axis it takes, or kNewAxis. Every input axis missing
  // from order is dropped and must have static size 1.
  DimShuffle(int inputNdim, std::vector<int> order);

  int inputNdim() const { return m_inputNdim; }
  const std::vector<int>& order() const { return m_order; }

  std::string name() const override { return "DimShuffle"; }
  nlohmann::json props() const override;  // {"input_ndim": 2, "order": [1, 0, "x"]}
  std::string str() const override;       // "DimShuffle{1,0,x}"
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  // The output is a view of the input: same storage, permuted strides, stride 0 on new axes.
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  ViewMap viewMap() const override { return {{0, {0}}}; }

  static OpPtr fromProps(const nlohmann::json& props);

 private:
  int m_inputNdim;
  std::vector<int> m_order;
};

VarPtr dimshuffle(const VarPtr& x, std::vector<int> order,
                  std::source_location site = std::source_location::current());
// Reverses the axes.
VarPtr transpose(const VarPtr& x, std::source_location site = std::source_location::current());
// Permutes the axes: output axis i is input axis perm[i] (negative axes count from the end).
VarPtr transpose(const VarPtr& x, std::vector<int> perm,
                 std::source_location site = std::source_location::current());
// Inserts a broadcastable axis at `axis` of the result (numpy's expand_dims; -1 appends).
VarPtr expandDims(const VarPtr& x, int axis,
                  std::source_location site = std::source_location::current());
// Drops `axis`, which must have size 1: statically, or asserted at run time (SpecifyShape) when
// the type does not know its size.
VarPtr squeeze(const VarPtr& x, int axis,
               std::source_location site = std::source_location::current());
// Drops every axis whose static size is 1.
VarPtr squeeze(const VarPtr& x, std::source_location site = std::source_location::current());

void registerShapeOps(OpRegistry& registry);

}  // namespace tscope::engine

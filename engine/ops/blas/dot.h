#pragma once
// Dot: numpy's matmul. vector . vector -> scalar; matrix . vector -> vector; vector . matrix ->
// vector; matrix . matrix -> matrix; higher ranks are stacks of matrices whose leading (batch)
// dimensions broadcast. Float products run on the GEMM kernel (backends/cpu/gemm.h), float16 in
// float32; integer products are plain loops that wrap on overflow as numpy's do.

#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Dot final : public Op {
 public:
  std::string name() const override { return "Dot"; }
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
};

VarPtr dot(const VarPtr& a, const VarPtr& b,
           std::source_location site = std::source_location::current());
// numpy's name for the same product.
VarPtr matmul(const VarPtr& a, const VarPtr& b,
              std::source_location site = std::source_location::current());
// outer(a, b)[i, j] = a[i] * b[j] for vectors a and b (a matrix).
VarPtr outer(const VarPtr& a, const VarPtr& b,
             std::source_location site = std::source_location::current());

// Registers Dot, Gemm, Gemv and Ger.
void registerBlasOps(OpRegistry& registry);

}  // namespace tscope::engine

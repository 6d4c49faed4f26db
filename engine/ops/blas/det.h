#pragma once
// Det(x): the determinants of the square matrices in x's last two axes, (..., n, n) -> (...), as
// numpy.linalg.det and ONNX's Det. LU factorisation with partial pivoting in float64 per matrix,
// rounded once to x's float dtype; a 0x0 matrix has determinant 1.
//   VarPtr d = det(x);   // x float32 (2, 3, 3) -> d float32 (2)
// No gradient yet: it is det(x) * inv(x)^T, and the engine has no matrix inverse (grad() says so).
#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class Det final : public Op {
 public:
  std::string name() const override { return "Det"; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

VarPtr det(const VarPtr& x, std::source_location site = std::source_location::current());

void registerDetOps(OpRegistry& registry);

}  // namespace tscope::engine

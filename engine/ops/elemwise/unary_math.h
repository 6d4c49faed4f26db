#pragma once
// UnaryMath{fn}: the elementwise functions the scalar ops of Elemwise lack — tan, the inverse
// trigonometric functions and the hyperbolic ones but tanh — computed with the C library's
// functions (std::tan, std::asin, ...), so values are as exact as libm's; ONNX's Tan, Asin, Acos,
// Atan, Sinh, Cosh, Asinh, Acosh and Atanh import as it.
//   VarPtr y = unaryMath(UnaryFn::Atan, x);      // float16/32/64 in, same dtype out
// Integer and bool inputs are refused (ONNX defines these ops on floats only). Outside the domain
// (asin(2), acosh(0.5), atanh(1.5)) the value is NaN, at its edge +-inf, as libm gives. The
// gradients are compositions (1 / (1 + x^2) for atan, ...), so second derivatives come too.
//
// Note [UnaryMath beside Elemwise]: these functions are rare in models, so they are one op of
// their own rather than new ScalarOps, which every Elemwise kernel (the vectorised CPU rows, the
// fused Composite kernels, CUDA) would have to learn; fusion leaves the node as it is.
#include "engine/graph/op.h"

#include <optional>
#include <source_location>
#include <string_view>

namespace tscope::engine {

class OpRegistry;

enum class UnaryFn : std::uint8_t { Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh };

std::string_view unaryFnName(UnaryFn fn);  // "tan", "asin", ...
std::optional<UnaryFn> unaryFnFromName(std::string_view name);

class UnaryMath final : public Op {
 public:
  explicit UnaryMath(UnaryFn fn) : m_fn(fn) {}
  UnaryFn fn() const { return m_fn; }
  std::string name() const override { return "UnaryMath"; }
  nlohmann::json props() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  UnaryFn m_fn;
};

VarPtr unaryMath(UnaryFn fn, const VarPtr& x,
                 std::source_location site = std::source_location::current());

void registerUnaryMathOps(OpRegistry& registry);

}  // namespace tscope::engine

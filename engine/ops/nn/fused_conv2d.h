#pragma once
// FusedConv2d(x, w, b): y = act(conv2d(x, w) + b[o]), a convolution whose bias and activation are
// applied as its kernel writes the output (oneDNN post-ops, engine/backends/cpu/dnnl_conv.h), so
// the output is written once instead of three times. fast_run makes it (the conv_bias_activation
// rewrite, engine/rewrite/rules/specialize_conv.cpp) from Conv2d followed by a broadcast add of a
// per-channel vector and a relu or a clip with constant bounds; users never build it by hand.
//   act: "none", "relu" (max(y, 0)) or "clip" (min(max(y, lo), hi), lo <= hi)
// With a residual (Note [Residual sum] in dnnl_conv.h): FusedConv2d{residual}(x, w, b, r) is
// act(conv2d(x, w) + b[o] + r), r of exactly the output's type (a ResNet block's identity, a
// MobileNetV2 inverted residual); the inplace rewrite may let it write into r's buffer
// (FusedConv2d{residual, inplace}: destroyMap {0: [3]}).
// It has no gradient of its own: it is made after differentiation, and a gradient of an optimized
// graph is taken on the original one.

#include "engine/backends/cpu/dnnl_conv.h"
#include "engine/ops/nn/conv2d.h"

#include <cstdint>
#include <source_location>

namespace tscope::engine {

namespace cpu {
enum class ConvActivation : std::uint8_t { None, Relu, Clip };
}  // namespace cpu

struct ConvActivationSpec {
  cpu::ConvActivation kind = cpu::ConvActivation::None;
  double lo = 0, hi = 0;  // clip bounds
  friend bool operator==(const ConvActivationSpec&, const ConvActivationSpec&) = default;
};

class FusedConv2d final : public Conv2dFamilyOp {
 public:
  FusedConv2d(Conv2dParams params, ConvActivationSpec activation, bool residual = false,
              bool inplace = false);
  std::string name() const override { return "FusedConv2d"; }
  const ConvActivationSpec& activation() const { return m_activation; }
  bool residual() const { return m_residual; }
  bool inplace() const { return m_inplace; }
  // The same op writing into its residual's buffer (residual() must hold).
  OpPtr withInplace() const;
  // The Conv2d props plus {"activation": "relu"} or {"activation": "clip", "clip": [lo, hi]}, and
  // "residual": true, "inplace": true when set.
  nlohmann::json props() const override;
  DestroyMap destroyMap() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  // Note [Residual sum]: perform() with the residual input.
  void performResidual(const Apply& node, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs, const cpu::Conv2dGeometry& g,
                       const Tensor& w, const Tensor& b) const;

  ConvActivationSpec m_activation;
  bool m_residual = false, m_inplace = false;
};

// y = act(y) in place, every element whatever the layout, with Elemwise's own row kernels (Note
// [No oneDNN activations] in dnnl_conv.h: NaN kept); y must own its elements (no broadcast view).
void applyConvActivation(Tensor& y, const ConvActivationSpec& a);

VarPtr fusedConv2d(const VarPtr& x, const VarPtr& w, const VarPtr& bias, Conv2dParams params,
                   ConvActivationSpec activation,
                   std::source_location site = std::source_location::current());
// act(conv2d(x, w) + b + residual).
VarPtr fusedConv2dResidual(const VarPtr& x, const VarPtr& w, const VarPtr& bias,
                           const VarPtr& residual, Conv2dParams params,
                           ConvActivationSpec activation,
                           std::source_location site = std::source_location::current());

}  // namespace tscope::engine

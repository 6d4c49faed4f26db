#pragma once
// 2-d max and average pooling over NCHW tensors and their gradient ops:
//   MaxPool2d(x)                 y (N, C, OH, OW)
//   MaxPool2dGrad(x, gy)         gx: gy routed to each window's argmax in x (ties: the first)
//   MaxPool2dGradGrad(x, gx)     gy-shaped: gx gathered at each window's argmax in x; the adjoint
//   of
//                                MaxPool2dGrad in gy and the pushforward of MaxPool2d
//   AvgPool2d(x)                 y (N, C, OH, OW), include_pad: divide by KH*KW or by the window
//                                elements inside the image
//   AvgPool2dGrad(gy, H, W)      gx (N, C, H, W): AvgPool2d is linear, so its gradient needs only
//   the
//                                input size (0-d int64 inputs; OH does not determine H when stride
//                                > 1)
// The max gradients are zero wrt x (piecewise constant: the argmax moves only at ties).
// Geometry: Note [Pool2d geometry] in engine/backends/cpu/pool.h.

#include "engine/graph/op.h"

#include <array>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

struct Pool2dParams {
  std::array<std::int64_t, 2> kernel{2, 2};
  std::array<std::int64_t, 2> stride{2, 2};
  std::array<std::int64_t, 2> padding{0, 0};  // symmetric, each < the kernel
  bool includePad = true;                     // average pooling only

  // Pooling with kernel k, stride k (the default of every framework) and no padding.
  static Pool2dParams window(std::int64_t kh, std::int64_t kw) {
    Pool2dParams p;
    p.kernel = {kh, kw};
    p.stride = {kh, kw};
    return p;
  }
  // {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]} (+ "include_pad" when withIncludePad).
  nlohmann::json toJson(bool withIncludePad) const;
  // Missing stride defaults to the kernel, padding to 0, include_pad to true.
  static Pool2dParams fromJson(const nlohmann::json& props, const std::string& op,
                               bool withIncludePad);
  void validate(const std::string& op) const;
  friend bool operator==(const Pool2dParams&, const Pool2dParams&) = default;
};

class Pool2dFamilyOp : public Op {
 public:
  const Pool2dParams& params() const { return m_params; }
  nlohmann::json props() const override { return m_params.toJson(m_average); }

 protected:
  Pool2dFamilyOp(Pool2dParams params, bool average, const std::string& name);
  // Checks input i: a 4-d float32/float64 tensor whose padded spatial size holds one window.
  void checkPoolInput(std::span<const VarPtr> inputs, int i) const;
  // The output's static shape for an input type.
  std::vector<std::int64_t> pooledShape(const TensorType& x) const;
  // The output's symbolic shape for an input shape.
  ShapeExpr pooledShapeExpr(const ShapeExpr& x) const;
  Pool2dParams m_params;
  bool m_average;
};

class MaxPool2d final : public Pool2dFamilyOp {
 public:
  explicit MaxPool2d(Pool2dParams params = {}) : Pool2dFamilyOp(params, false, "MaxPool2d") {}
  std::string name() const override { return "MaxPool2d"; }
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

class MaxPool2dGrad final : public Pool2dFamilyOp {
 public:
  explicit MaxPool2dGrad(Pool2dParams params = {})
      : Pool2dFamilyOp(params, false, "MaxPool2dGrad") {}
  std::string name() const override { return "MaxPool2dGrad"; }
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

class MaxPool2dGradGrad final : public Pool2dFamilyOp {
 public:
  explicit MaxPool2dGradGrad(Pool2dParams params = {})
      : Pool2dFamilyOp(params, false, "MaxPool2dGradGrad") {}
  std::string name() const override { return "MaxPool2dGradGrad"; }
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

class AvgPool2d final : public Pool2dFamilyOp {
 public:
  explicit AvgPool2d(Pool2dParams params = {}) : Pool2dFamilyOp(params, true, "AvgPool2d") {}
  std::string name() const override { return "AvgPool2d"; }
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

class AvgPool2dGrad final : public Pool2dFamilyOp {
 public:
  explicit AvgPool2dGrad(Pool2dParams params = {})
      : Pool2dFamilyOp(params, true, "AvgPool2dGrad") {}
  std::string name() const override { return "AvgPool2dGrad"; }
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

VarPtr maxPool2d(const VarPtr& x, Pool2dParams params,
                 std::source_location site = std::source_location::current());
VarPtr maxPool2dGrad(const VarPtr& x, const VarPtr& gy, Pool2dParams params,
                     std::source_location site = std::source_location::current());
VarPtr maxPool2dGradGrad(const VarPtr& x, const VarPtr& gx, Pool2dParams params,
                         std::source_location site = std::source_location::current());
VarPtr avgPool2d(const VarPtr& x, Pool2dParams params,
                 std::source_location site = std::source_location::current());
// height, width: the input's spatial size as 0-d int64 variables.
VarPtr avgPool2dGrad(const VarPtr& gy, const VarPtr& height, const VarPtr& width,
                     Pool2dParams params,
                     std::source_location site = std::source_location::current());

}  // namespace tscope::engine

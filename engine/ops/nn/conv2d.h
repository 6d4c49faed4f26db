#pragma once
// 2-d convolution (cross-correlation, as in every DL framework) over NCHW inputs with OIHW filters,
// and its two gradients as ops of their own, like Theano's abstract conv:
//   Conv2d(x, w)                      y (N, O, OH, OW)
//   Conv2dGradInputs(w, gy, H, W)     gx (N, C, H, W): the gradient wrt x; H and W are 0-d int64
//                                     inputs because OH does not determine H when the stride > 1
//   Conv2dGradWeights(x, gy, KH, KW)  gw (O, C/groups, KH, KW): the gradient wrt w
// Each is bilinear in its two tensor inputs and the three are each other's adjoints, so every
// gradient (of any order) and every pushforward is written with these three ops:
//   <gy, conv(x, w)> = <GradInputs(w, gy), x> = <GradWeights(x, gy), w>.
// Geometry and channel grouping: Note [Conv2d geometry] in engine/backends/cpu/conv.h.

#include "engine/backends/cpu/conv.h"
#include "engine/graph/op.h"

#include <array>
#include <source_location>

namespace tscope::engine {

class OpRegistry;

struct Conv2dParams {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};  // symmetric, per axis
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;

  // {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1}
  nlohmann::json toJson() const;
  // Reads and checks props (missing keys take the defaults); std::invalid_argument naming op.
  static Conv2dParams fromJson(const nlohmann::json& props, const std::string& op);
  // Throws std::invalid_argument when a value is out of range (stride, dilation, groups >= 1,
  // padding >= 0).
  void validate(const std::string& op) const;
  friend bool operator==(const Conv2dParams&, const Conv2dParams&) = default;
};

// The shared part of the three ops: the params as props.
class Conv2dFamilyOp : public Op {
 public:
  const Conv2dParams& params() const { return m_params; }
  nlohmann::json props() const override { return m_params.toJson(); }

 protected:
  explicit Conv2dFamilyOp(Conv2dParams params, const std::string& name);
  // The type of the convolution of inputs[0] (NCHW) by inputs[1] (OIHW filters); throws TypeError
  // naming the input that does not fit.
  TensorType convolvedType(std::span<const VarPtr> inputs) const;
  Conv2dParams m_params;
};

class Conv2d final : public Conv2dFamilyOp {
 public:
  explicit Conv2d(Conv2dParams params = {}) : Conv2dFamilyOp(params, "Conv2d") {}
  std::string name() const override { return "Conv2d"; }
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

class Conv2dGradInputs final : public Conv2dFamilyOp {
 public:
  explicit Conv2dGradInputs(Conv2dParams params = {})
      : Conv2dFamilyOp(params, "Conv2dGradInputs") {}
  std::string name() const override { return "Conv2dGradInputs"; }
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

class Conv2dGradWeights final : public Conv2dFamilyOp {
 public:
  explicit Conv2dGradWeights(Conv2dParams params = {})
      : Conv2dFamilyOp(params, "Conv2dGradWeights") {}
  std::string name() const override { return "Conv2dGradWeights"; }
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

namespace conv2d_detail {
// The geometry from runtime shapes; throws std::invalid_argument naming both shapes when they do
// not fit.
cpu::Conv2dGeometry geometry(const Op& op, const Conv2dParams& p, const Shape& x, const Shape& w);
// The symbolic output shape (N, O, OH, OW) from the input shapes.
ShapeExpr outputShape(const Conv2dParams& p, std::span<const ShapeExpr> inputShapes);
// Whose filters these are, for Note [Packed filters] (engine/backends/cpu/dnnl_conv.h): the
// Storage of input `input`'s value and version 0 for a constant, the storage and
// sharedValueEpoch() for a shared variable, nothing for a computed value.
struct FilterOwner {
  std::shared_ptr<const void> owner;
  std::uint64_t version = 0;
};
FilterOwner filterOwner(const Apply& node, int input, const Tensor& value);
// Note [Channel-last activations] (engine/backends/cpu/dnnl_conv.h): whether t is a 4-d tensor
// laid out NHWC (strides (H*W*C, 1, W*C, C), no offset) and not also contiguous NCHW.
bool isChannelLast(const Tensor& t);
// The output tensor (N, O, OH, OW) channel-last: *out when it already is one this op may
// overwrite, else a new one.
Tensor& channelLastOutput(Tensor* out, DType dtype, const Shape& shape);
}  // namespace conv2d_detail

VarPtr conv2d(const VarPtr& x, const VarPtr& w, Conv2dParams params = {},
              std::source_location site = std::source_location::current());
// height, width: 0-d int64 variables (shapeI(x, 2), or constantInt(5)).
VarPtr conv2dGradInputs(const VarPtr& w, const VarPtr& gy, const VarPtr& height,
                        const VarPtr& width, Conv2dParams params = {},
                        std::source_location site = std::source_location::current());
VarPtr conv2dGradWeights(const VarPtr& x, const VarPtr& gy, const VarPtr& kernelHeight,
                         const VarPtr& kernelWidth, Conv2dParams params = {},
                         std::source_location site = std::source_location::current());

}  // namespace tscope::engine

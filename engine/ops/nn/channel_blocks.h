#pragma once
// Channel-blocked activations (Note [Channel blocks]): fast_run's channel_blocks rewrite
// (engine/rewrite/rules/channel_blocks.cpp) runs a chain of convolutions on tensors of shape
// (N, C/8, H, W, 8), oneDNN's nChw8c and ONNX Runtime's NCHWc layout, so the convolutions between
// the chain's ends read and write their kernel's own layout with no reorder:
//
//   ToChannelBlocks{block=8}(x)      (N, C, H, W) -> (N, C/8, H, W, 8), y[n,b,h,w,i] =
//   x[n,8b+i,h,w] FromChannelBlocks{block=8}(y)    (N, C/8, H, W, 8) -> (N, C, H, W), channel-last
//   in memory BlockedConv2d(xb, w, b[, rb])    FusedConv2d on blocked input, residual and output
//
// Users never build them by hand; a graph holding them (an optimized graph saved to .tsg) loads
// and runs anywhere: without oneDNN, or in float64, BlockedConv2d unblocks, convolves as
// FusedConv2d does and blocks the result.
//
// Note [Channel blocks]: Note [Blocked direct convolutions] (engine/backends/cpu/dnnl_conv.h)
// reorders NHWC activations into blocks and back around every kernel: two passes over the input
// and the output that do not scale with threads (0.12-0.32 ms at two threads for ResNet-18's
// 64x56x56 layer, against 1.8 ms for its convolution). Within a chain the blocks are kept instead,
// as ONNX Runtime's NCHWc transformer does, and the reorders are left at the chain's ends only;
// depthwise convolutions (MobileNet's), bound by memory, run 2-3x faster blocked when no reorder
// surrounds them.

#include "engine/graph/function_graph.h"
#include "engine/ops/nn/fused_conv2d.h"

#include <cstdint>
#include <memory>
#include <source_location>

namespace tscope::engine {

inline constexpr std::int64_t kChannelBlock = 8;

class ToChannelBlocks final : public Op {
 public:
  std::string name() const override { return "ToChannelBlocks"; }
  nlohmann::json props() const override { return {{"block", kChannelBlock}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

class FromChannelBlocks final : public Op {
 public:
  std::string name() const override { return "FromChannelBlocks"; }
  nlohmann::json props() const override { return {{"block", kChannelBlock}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  OpCost cost(const Apply& node, std::span<const Shape> inputShapes) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<ShapeExpr> inferShape(const Apply& node,
                                    std::span<const ShapeExpr> inputShapes) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);
};

// FusedConv2d's computation on blocked tensors: xb (N, C/8, H, W, 8), w (O, C/groups, KH, KW)
// with groups 1 or C (depthwise), b (O,), rb and the output (N, O/8, OH, OW, 8); C and O
// multiples of 8. Same props as FusedConv2d.
class BlockedConv2d final : public Conv2dFamilyOp {
 public:
  BlockedConv2d(Conv2dParams params, ConvActivationSpec activation, bool residual = false,
                bool inplace = false);
  std::string name() const override { return "BlockedConv2d"; }
  const ConvActivationSpec& activation() const { return m_activation; }
  bool residual() const { return m_residual; }
  bool inplace() const { return m_inplace; }
  OpPtr withInplace() const;
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
  ConvActivationSpec m_activation;
  bool m_residual = false, m_inplace = false;
};

VarPtr toChannelBlocks(const VarPtr& x,
                       std::source_location site = std::source_location::current());
VarPtr fromChannelBlocks(const VarPtr& x,
                         std::source_location site = std::source_location::current());
// residual: null for none.
VarPtr blockedConv2d(const VarPtr& xb, const VarPtr& w, const VarPtr& bias, const VarPtr& residual,
                     Conv2dParams params, ConvActivationSpec activation,
                     std::source_location site = std::source_location::current());

// The graph with its channel blocks undone (every FromChannelBlocks of a chain replaced by the
// chain's FusedConv2d nodes on plain tensors), for writers of formats that have no blocked layout
// (ONNX); null when the graph has no blocked node.
std::unique_ptr<FunctionGraph> withoutChannelBlocks(const FunctionGraph& graph);

namespace conv2d_detail {
// Whether a FusedConv2d of these types may run blocked: float32 or float64, C and O known
// multiples of 8, groups 1 or depthwise (groups == C == O).
bool blockable(const TensorType& x, const TensorType& w, const Conv2dParams& p);
}  // namespace conv2d_detail

}  // namespace tscope::engine

#pragma once
// RoiAlign{mode, output_height, output_width, sampling_ratio, spatial_scale, half_pixel}
// (x, rois, batch_indices) -> y: ONNX's RoiAlign (torchvision.ops.roi_align with aligned =
// half_pixel). x (N, C, H, W) float; rois (R, 4) [x1, y1, x2, y2] in input coordinates (scaled by
// spatial_scale; half_pixel shifts them by -0.5); batch_indices (R) int64 picks each roi's image.
// y (R, C, output_height, output_width): each bin averages (mode "avg") or takes the largest
// weighted corner (mode "max", as ONNX Runtime) of sampling_ratio^2 bilinear samples
// (sampling_ratio 0: ceil(bin size) per axis, adaptive). Samples outside [-1, H] x [-1, W] count
// as 0; those within are clamped to the image.
//   VarPtr y = roiAlign(features, boxes, indices, {.outputHeight = 7, .outputWidth = 7});
// The gradient is not built yet (grad() says so); rois and batch_indices are not differentiable.
#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

struct RoiAlignParams {
  bool maxMode = false;
  std::int64_t outputHeight = 1;
  std::int64_t outputWidth = 1;
  std::int64_t samplingRatio = 0;
  double spatialScale = 1.0;
  bool halfPixel = true;
};

class RoiAlign final : public Op {
 public:
  explicit RoiAlign(RoiAlignParams p) : m_p(p) {}
  std::string name() const override { return "RoiAlign"; }
  nlohmann::json props() const override;
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  RoiAlignParams m_p;
};

VarPtr roiAlign(const VarPtr& x, const VarPtr& rois, const VarPtr& batchIndices,
                RoiAlignParams params, std::source_location site = std::source_location::current());

void registerRoiAlignOps(OpRegistry& registry);

}  // namespace tscope::engine

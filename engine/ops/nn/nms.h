#pragma once
// NonMaxSuppression{center_point_box}(boxes, scores, max_per_class, iou_threshold,
// score_threshold) -> selected: greedy non-maximum suppression per batch and class, as ONNX's
// NonMaxSuppression (and torchvision's batched_nms per class). boxes (B, N, 4) are corners
// [y1, x1, y2, x2] in any order of the two corners (center_point_box = false) or [xc, yc, w, h];
// scores (B, C, N); the last three are 0-d: max_per_class (int64; 0 selects nothing),
// iou_threshold and score_threshold (floats; -inf keeps every box). For each batch b and class c
// the boxes whose score is greater than score_threshold are taken in decreasing score (equal
// scores: lower index first), each kept unless its IoU with a kept one is greater than
// iou_threshold, at most max_per_class of them. selected is int64 (count, 3) of [b, c, box] rows,
// by batch, then class, then selection order; its row count is known once it has run.
//   VarPtr sel = nonMaxSuppression(boxes, scores, constantInt(10), constant(0.5, DType::Float32),
//                                  constant(-INFINITY, DType::Float32));
// The selection does not depend differentiably on its inputs (disconnected).
#include "engine/graph/op.h"

#include <source_location>

namespace tscope::engine {

class OpRegistry;

class NonMaxSuppression final : public Op {
 public:
  explicit NonMaxSuppression(bool centerPointBox) : m_center(centerPointBox) {}
  std::string name() const override { return "NonMaxSuppression"; }
  nlohmann::json props() const override { return {{"center_point_box", m_center}}; }
  std::vector<TensorType> outputTypes(std::span<const VarPtr> inputs) const override;
  void perform(const Apply& node, std::span<const Tensor* const> inputs,
               std::span<Tensor* const> outputs) const override;
  std::vector<Grad> pullback(const Apply& node, std::span<const VarPtr> outputGrads) const override;
  std::optional<std::vector<VarPtr>> pushforward(const Apply& node,
                                                 std::span<const VarPtr> tangents) const override;
  std::vector<std::vector<bool>> connectionPattern(const Apply& node) const override;
  static OpPtr fromProps(const nlohmann::json& props);

 private:
  bool m_center;
};

VarPtr nonMaxSuppression(const VarPtr& boxes, const VarPtr& scores, const VarPtr& maxPerClass,
                         const VarPtr& iouThreshold, const VarPtr& scoreThreshold,
                         bool centerPointBox = false,
                         std::source_location site = std::source_location::current());

void registerNmsOps(OpRegistry& registry);

}  // namespace tscope::engine

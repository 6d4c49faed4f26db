#include "engine/ops/nn/nms.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace tscope::engine {

namespace {

using Box = std::array<double, 4>;  // ymin, xmin, ymax, xmax

Box corners(const double* b, bool center) {
  if (center) {  // [xc, yc, w, h]
    const double xc = b[0], yc = b[1], w = b[2], h = b[3];
    return {yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Intersection over union; 0 when either box has no area.
double iou(const Box& a, const Box& b) {
  const double areaA = (a[2] - a[0]) * (a[3] - a[1]);
  const double areaB = (b[2] - b[0]) * (b[3] - b[1]);
  if (areaA <= 0 || areaB <= 0) return 0;
  const double h = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  const double w = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  const double inter = h * w;
  return inter / (areaA + areaB - inter);
}

}  // namespace

std::vector<TensorType> NonMaxSuppression::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 5);
  const TensorType& boxes = inputs[0]->type();
  const TensorType& scores = inputs[1]->type();
  if (boxes.ndim() != 3 || !isFloat(boxes.dtype()) ||
      (boxes.isDimKnown(2) && boxes.shape()[2] != 4))
    throwInputError(inputs, 0, "float boxes of shape (batch, boxes, 4)");
  if (scores.ndim() != 3 || !isFloat(scores.dtype()))
    throwInputError(inputs, 1, "float scores of shape (batch, classes, boxes)");
  for (int d : {0, 2}) {
    const int bd = d == 0 ? 0 : 1;
    if (boxes.isDimKnown(bd) && scores.isDimKnown(d) &&
        boxes.shape()[static_cast<std::size_t>(bd)] != scores.shape()[static_cast<std::size_t>(d)])
      throwInputError(inputs, 1, "scores whose batch and box counts match the boxes'");
  }
  if (inputs[2]->type().ndim() != 0 || !isInteger(inputs[2]->type().dtype()))
    throwInputError(inputs, 2, "a 0-d integer max_output_boxes_per_class");
  for (int k : {3, 4})
    if (inputs[static_cast<std::size_t>(k)]->type().ndim() != 0 ||
        !isFloat(inputs[static_cast<std::size_t>(k)]->type().dtype()))
      throwInputError(inputs, k,
                      k == 3 ? "a 0-d float iou_threshold" : "a 0-d float score_threshold");
  return {TensorType(DType::Int64, {kUnknownDim, 3}, boxes.device())};
}

void NonMaxSuppression::perform(const Apply&, std::span<const Tensor* const> inputs,
                                std::span<Tensor* const> outputs) const {
  const Tensor& boxesT = *inputs[0];
  const Tensor& scoresT = *inputs[1];
  const std::int64_t batches = boxesT.shape()[0], n = boxesT.shape()[1];
  const std::int64_t classes = scoresT.shape()[1];
  if (boxesT.shape()[2] != 4 || scoresT.shape()[0] != batches || scoresT.shape()[2] != n)
    throw std::invalid_argument("expected boxes (B, N, 4) and scores (B, C, N), found " +
                                shapeToString(boxesT.shape()) + " and " +
                                shapeToString(scoresT.shape()));
  const std::vector<double> boxes = boxesT.toDoubles();
  const std::vector<double> scores = scoresT.toDoubles();
  // Read exactly: exporters pass INT64_MAX for "no limit" (torchvision's batched_nms), which
  // through a double is out of int64's range and came back negative, keeping no box at all.
  const std::int64_t maxPerClass = shape_detail::readIndices(
      inputs[2]->reshape({1}), "NonMaxSuppression max_output_boxes_per_class")[0];
  const double iouThreshold = inputs[3]->item();
  const double scoreThreshold = inputs[4]->item();
  if (iouThreshold < 0 || iouThreshold > 1)
    throw std::invalid_argument("expected iou_threshold in [0, 1], found " +
                                std::to_string(iouThreshold));
  std::vector<std::int64_t> rows;
  std::vector<Box> all(static_cast<std::size_t>(n));
  std::vector<std::int64_t> order;
  std::vector<std::int64_t> kept;
  for (std::int64_t b = 0; b < batches && maxPerClass > 0; ++b) {
    for (std::int64_t i = 0; i < n; ++i)
      all[static_cast<std::size_t>(i)] =
          corners(boxes.data() + static_cast<std::size_t>((b * n + i) * 4), m_center);
    for (std::int64_t c = 0; c < classes; ++c) {
      const double* s = scores.data() + static_cast<std::size_t>((b * classes + c) * n);
      order.clear();
      for (std::int64_t i = 0; i < n; ++i)
        if (s[i] > scoreThreshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::int64_t x, std::int64_t y) { return s[x] > s[y]; });
      kept.clear();
      for (std::int64_t i : order) {
        if (static_cast<std::int64_t>(kept.size()) >= maxPerClass) break;
        bool suppressed = false;
        for (std::int64_t k : kept)
          if (iou(all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(k)]) >
              iouThreshold) {
            suppressed = true;
            break;
          }
        if (!suppressed) {
          kept.push_back(i);
          rows.insert(rows.end(), {b, c, i});
        }
      }
    }
  }
  const auto count = static_cast<std::int64_t>(rows.size() / 3);
  Tensor& out = reuseOrAllocate(outputs[0], DType::Int64, Shape{count, 3});
  std::copy(rows.begin(), rows.end(), out.data<std::int64_t>());
}

std::vector<Grad> NonMaxSuppression::pullback(const Apply&, std::span<const VarPtr>) const {
  return std::vector<Grad>(5, Grad::disconnected());
}

std::optional<std::vector<VarPtr>> NonMaxSuppression::pushforward(const Apply&,
                                                                  std::span<const VarPtr>) const {
  return std::vector<VarPtr>{nullptr};
}

std::vector<std::vector<bool>> NonMaxSuppression::connectionPattern(const Apply&) const {
  return std::vector<std::vector<bool>>(5, {false});
}

OpPtr NonMaxSuppression::fromProps(const nlohmann::json& props) {
  shape_detail::propKeys(props, "NonMaxSuppression", {"center_point_box"});
  return std::make_shared<NonMaxSuppression>(props.value("center_point_box", false));
}

VarPtr nonMaxSuppression(const VarPtr& boxes, const VarPtr& scores, const VarPtr& maxPerClass,
                         const VarPtr& iouThreshold, const VarPtr& scoreThreshold,
                         bool centerPointBox, std::source_location site) {
  return (*std::make_shared<NonMaxSuppression>(centerPointBox))(
      {boxes, scores, maxPerClass, iouThreshold, scoreThreshold}, site);
}

void registerNmsOps(OpRegistry& registry) {
  registry.add("NonMaxSuppression", &NonMaxSuppression::fromProps);
}

}  // namespace tscope::engine

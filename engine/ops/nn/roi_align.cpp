#include "engine/ops/nn/roi_align.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine {

nlohmann::json RoiAlign::props() const {
  return {{"mode", m_p.maxMode ? "max" : "avg"}, {"output_height", m_p.outputHeight},
          {"output_width", m_p.outputWidth},     {"sampling_ratio", m_p.samplingRatio},
          {"spatial_scale", m_p.spatialScale},   {"half_pixel", m_p.halfPixel}};
}

std::vector<TensorType> RoiAlign::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  const TensorType& x = inputs[0]->type();
  if (x.ndim() != 4 || !isFloat(x.dtype())) throwInputError(inputs, 0, "a float (N, C, H, W)");
  const TensorType& r = inputs[1]->type();
  if (r.ndim() != 2 || !isFloat(r.dtype()) || (r.isDimKnown(1) && r.shape()[1] != 4))
    throwInputError(inputs, 1, "float rois of shape (R, 4)");
  const TensorType& b = inputs[2]->type();
  if (b.ndim() != 1 || !isInteger(b.dtype()))
    throwInputError(inputs, 2, "integer batch indices (R)");
  return {TensorType(x.dtype(), {r.shape()[0], x.shape()[1], m_p.outputHeight, m_p.outputWidth},
                     x.device())};
}

void RoiAlign::perform(const Apply&, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) const {
  const Tensor& xt = *inputs[0];
  const std::int64_t n = xt.shape()[0], c = xt.shape()[1], h = xt.shape()[2], w = xt.shape()[3];
  const std::vector<double> x = xt.toDoubles();
  const std::vector<double> rois = inputs[1]->toDoubles();
  const std::vector<double> batch = inputs[2]->toDoubles();
  const auto r = static_cast<std::int64_t>(batch.size());
  if (inputs[1]->shape()[0] != r || inputs[1]->shape()[1] != 4)
    throw std::invalid_argument("expected rois (" + std::to_string(r) + ", 4), found " +
                                shapeToString(inputs[1]->shape()));
  const std::int64_t oh = m_p.outputHeight, ow = m_p.outputWidth;
  std::vector<double> y(static_cast<std::size_t>(r * c * oh * ow));
  const double offset = m_p.halfPixel ? 0.5 : 0.0;
  for (std::int64_t k = 0; k < r; ++k) {
    const auto b = static_cast<std::int64_t>(batch[static_cast<std::size_t>(k)]);
    if (b < 0 || b >= n)
      throw std::invalid_argument("batch_indices[" + std::to_string(k) + "] = " +
                                  std::to_string(b) + " is outside [0, " + std::to_string(n) + ")");
    const double* roi = rois.data() + k * 4;
    const double x1 = roi[0] * m_p.spatialScale - offset, y1 = roi[1] * m_p.spatialScale - offset;
    const double x2 = roi[2] * m_p.spatialScale - offset, y2 = roi[3] * m_p.spatialScale - offset;
    double roiW = x2 - x1, roiH = y2 - y1;
    if (!m_p.halfPixel) roiW = std::max(roiW, 1.0), roiH = std::max(roiH, 1.0);
    const double binH = roiH / static_cast<double>(oh), binW = roiW / static_cast<double>(ow);
    const std::int64_t gridH =
        m_p.samplingRatio > 0
            ? m_p.samplingRatio
            : static_cast<std::int64_t>(std::ceil(roiH / static_cast<double>(oh)));
    const std::int64_t gridW =
        m_p.samplingRatio > 0
            ? m_p.samplingRatio
            : static_cast<std::int64_t>(std::ceil(roiW / static_cast<double>(ow)));
    const double count = static_cast<double>(std::max<std::int64_t>(gridH * gridW, 1));
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const double* img = x.data() + (b * c + ch) * h * w;
      for (std::int64_t ph = 0; ph < oh; ++ph)
        for (std::int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool any = false;
          for (std::int64_t iy = 0; iy < gridH; ++iy) {
            double yy = y1 + static_cast<double>(ph) * binH +
                        (static_cast<double>(iy) + 0.5) * binH / static_cast<double>(gridH);
            for (std::int64_t ix = 0; ix < gridW; ++ix) {
              double xx = x1 + static_cast<double>(pw) * binW +
                          (static_cast<double>(ix) + 0.5) * binW / static_cast<double>(gridW);
              double v1 = 0, v2 = 0, v3 = 0, v4 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0;
              if (!(yy < -1.0 || yy > static_cast<double>(h) || xx < -1.0 ||
                    xx > static_cast<double>(w))) {
                double sy = std::max(yy, 0.0), sx = std::max(xx, 0.0);
                auto yl = static_cast<std::int64_t>(sy), xl = static_cast<std::int64_t>(sx);
                std::int64_t yh, xh;
                if (yl >= h - 1)
                  yh = yl = h - 1, sy = static_cast<double>(yl);
                else
                  yh = yl + 1;
                if (xl >= w - 1)
                  xh = xl = w - 1, sx = static_cast<double>(xl);
                else
                  xh = xl + 1;
                const double ly = sy - static_cast<double>(yl), lx = sx - static_cast<double>(xl);
                const double hy = 1 - ly, hx = 1 - lx;
                w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
                v1 = img[yl * w + xl], v2 = img[yl * w + xh], v3 = img[yh * w + xl],
                v4 = img[yh * w + xh];
              }
              if (m_p.maxMode) {
                // ONNX Runtime's max mode: the largest weighted corner over the samples.
                const double m = std::max({w1 * v1, w2 * v2, w3 * v3, w4 * v4});
                acc = any ? std::max(acc, m) : m;
                any = true;
              } else {
                acc += w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;
              }
            }
          }
          y[static_cast<std::size_t>(((k * c + ch) * oh + ph) * ow + pw)] =
              m_p.maxMode ? acc : acc / count;
        }
    }
  }
  *outputs[0] = Tensor::fromDoubles(xt.dtype(), Shape{r, c, oh, ow}, y);
}

std::vector<Grad> RoiAlign::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::undefined("RoiAlign's gradient in x is not built yet"), Grad::disconnected(),
          Grad::disconnected()};
}

OpPtr RoiAlign::fromProps(const nlohmann::json& props) {
  shape_detail::propKeys(
      props, "RoiAlign",
      {"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale", "half_pixel"});
  try {
    RoiAlignParams p;
    p.maxMode = props.value("mode", std::string("avg")) == "max";
    p.outputHeight = props.value("output_height", std::int64_t{1});
    p.outputWidth = props.value("output_width", std::int64_t{1});
    p.samplingRatio = props.value("sampling_ratio", std::int64_t{0});
    p.spatialScale = props.value("spatial_scale", 1.0);
    p.halfPixel = props.value("half_pixel", true);
    if (p.outputHeight < 1 || p.outputWidth < 1 || p.samplingRatio < 0)
      throw std::invalid_argument("RoiAlign: expected output sizes >= 1 and sampling_ratio >= 0");
    return std::make_shared<RoiAlign>(p);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("RoiAlign: bad props: ") + e.what());
  }
}

VarPtr roiAlign(const VarPtr& x, const VarPtr& rois, const VarPtr& batchIndices,
                RoiAlignParams params, std::source_location site) {
  return (*std::make_shared<RoiAlign>(params))({x, rois, batchIndices}, site);
}

void registerRoiAlignOps(OpRegistry& registry) {
  registry.add("RoiAlign", &RoiAlign::fromProps);
}

}  // namespace tscope::engine

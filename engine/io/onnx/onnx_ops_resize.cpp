// Converters of Resize (opsets 10 to 18) and Upsample (7 to 9, and the deprecated 10) in nearest,
// linear and cubic modes.
//
// Note [Nearest resize as a gather]: nearest-neighbour resizing picks, along each resized axis,
// one input position per output position; which one depends only on the sizes, the scale and the
// coordinate_transformation_mode / nearest_mode attributes, all known while importing. So the
// index vectors are computed here (in float arithmetic, as onnxruntime does, so ties round the
// same way) and the node becomes one AdvancedSubtensor x[:, :, rows, cols] whose index arrays
// broadcast against each other (rows (H', 1), cols (1, W')). Axes between two resized ones that
// keep their size take an arange, so the arrays stay adjacent and the result keeps x's axis
// order. A resized axis must have a static size.
//
// Note [Linear and cubic resize as weighted gathers]: linear and cubic interpolation are separable:
// along one axis, output position o is a weighted sum of `width` input positions (2 for linear:
// floor(s) and floor(s) + 1, 4 for cubic: floor(s) - 1 to floor(s) + 2, where s is o's original
// coordinate), and an N-d resize is the 1-d resize applied to each axis in turn. Positions and
// weights depend only on sizes, scales and attributes, so they are computed here (coordinates in
// float, as for nearest; weights in double, cast to x's dtype) and each resized axis becomes
// `width` gathers along it, each multiplied by its weight column and summed. Positions outside the
// axis are clamped to its edge, which is ONNX's edge padding of the input (and what PyTorch's
// kernels do); with exclude_outside those taps get weight 0 and the others are renormalised.
// Linear ignores the clamp of s itself: when s is past an edge, both taps clamp to that edge.
#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tscope::engine::io::onnx_import {

namespace {

// The index (and weight) tables of the resized axes are built while importing: at most 2^22
// entries for one node, all axes and taps together (4 for cubic, 2 for linear, 1 for nearest),
// so that a bogus size cannot make the import allocate gigabytes (a fuzzed cubic Resize to 2^24
// on two axes took 2.6 GB). Real resizes use a few thousand.
constexpr std::int64_t kMaxResizeTable = std::int64_t{1} << 22;

enum class Transform {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};
enum class Nearest { Simple, RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class Mode { Nearest, Linear, Cubic };

Transform readTransform(const NodeContext& ctx) {
  const std::string m = ctx.attrString("coordinate_transformation_mode", "half_pixel");
  if (m == "half_pixel") return Transform::HalfPixel;
  if (m == "pytorch_half_pixel") return Transform::PytorchHalfPixel;
  if (m == "align_corners") return Transform::AlignCorners;
  if (m == "asymmetric") return Transform::Asymmetric;
  if (m == "tf_half_pixel_for_nn") return Transform::TfHalfPixelForNn;
  if (m == "tf_crop_and_resize") return Transform::TfCropAndResize;
  if (m == "half_pixel_symmetric")
    ctx.unsupported("Resize coordinate_transformation_mode '" + m + "'");
  ctx.fail("attribute 'coordinate_transformation_mode': unknown mode '" + m + "'");
}

Nearest readNearest(const NodeContext& ctx) {
  const std::string m = ctx.attrString("nearest_mode", "round_prefer_floor");
  if (m == "round_prefer_floor") return Nearest::RoundPreferFloor;
  if (m == "round_prefer_ceil") return Nearest::RoundPreferCeil;
  if (m == "floor") return Nearest::Floor;
  if (m == "ceil") return Nearest::Ceil;
  ctx.fail(
      "attribute 'nearest_mode': expected round_prefer_floor, round_prefer_ceil, floor or ceil, "
      "found '" +
      m + "'");
}

// Resize: nearest, linear, cubic. Upsample 7-9: nearest, linear (and "bilinear", which opset 7's
// checker rejects but older exporters wrote for 4-d inputs).
Mode readMode(const NodeContext& ctx) {
  const std::string m = ctx.attrString("mode", "nearest");
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear" || (m == "bilinear" && ctx.opType() == "Upsample")) return Mode::Linear;
  if (m == "cubic" && ctx.opType() == "Resize") return Mode::Cubic;
  ctx.fail("attribute 'mode': expected nearest, linear" +
           std::string(ctx.opType() == "Resize" ? " or cubic" : "") + ", found '" + m + "'");
}

// Output position o's coordinate in the input axis. Note [Align corners with scales]: align_corners
// divides by the resized length less one, which ONNX's reference takes as in * scale when the node
// gives scales (2.4 for 4 * 0.6, not the 2 positions the output has) and as the output size when it
// gives sizes; `resizedLen` is that length. The two agree whenever in * scale is whole.
// tf_crop_and_resize maps the output onto the region [roi.start, roi.end] of the axis (fractions of
// in - 1; Note [Crop and resize]).
struct Roi {
  float start = 0;
  float end = 1;
};

float originalCoordinate(std::int64_t o, float scale, std::int64_t outLen, std::int64_t inLen,
                         Transform t, float resizedLen, Roi roi = {}) {
  const auto x = static_cast<float>(o);
  const auto last = static_cast<float>(inLen - 1);
  switch (t) {
    case Transform::TfCropAndResize:
      return (resizedLen == 1.0f ? (roi.end - roi.start) * last / 2.0f
                                 : x * (roi.end - roi.start) * last / (resizedLen - 1.0f)) +
             roi.start * last;
    case Transform::HalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case Transform::PytorchHalfPixel:
      return outLen > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case Transform::AlignCorners:
      return outLen == 1 ? 0.0f : x * static_cast<float>(inLen - 1) / (resizedLen - 1.0f);
    case Transform::Asymmetric:
      return x / scale;
    case Transform::TfHalfPixelForNn:
      return (x + 0.5f) / scale;
  }
  return x;
}

// The input position output position o reads (Note [Nearest resize as a gather]).
std::int64_t nearestSource(std::int64_t o, float scale, std::int64_t outLen, std::int64_t inLen,
                           Transform t, Nearest mode, float resizedLen, Roi roi) {
  const float orig = originalCoordinate(o, scale, outLen, inLen, t, resizedLen, roi);
  std::int64_t i = 0;
  switch (mode) {
    // Resize-10 and Upsample had no nearest_mode: truncate when enlarging, ceil when shrinking.
    case Nearest::Simple:
      i = scale < 1 ? static_cast<std::int64_t>(std::ceil(orig)) : static_cast<std::int64_t>(orig);
      break;
    case Nearest::RoundPreferFloor:
      i = orig == std::floor(orig) + 0.5f ? static_cast<std::int64_t>(std::floor(orig))
                                          : static_cast<std::int64_t>(std::round(orig));
      break;
    case Nearest::RoundPreferCeil:
      i = static_cast<std::int64_t>(std::round(orig));
      break;
    case Nearest::Floor:
      i = static_cast<std::int64_t>(std::floor(orig));
      break;
    case Nearest::Ceil:
      i = static_cast<std::int64_t>(std::ceil(orig));
      break;
  }
  return std::clamp<std::int64_t>(i, 0, inLen - 1);
}

// Along one axis, output position o reads index[o * width + j] with weight[o * width + j]
// (Note [Linear and cubic resize as weighted gathers]).
struct Taps {
  int width = 0;
  std::vector<std::int64_t> index;
  std::vector<double> weight;
};

struct Interpolation {
  Mode mode = Mode::Linear;
  Transform transform = Transform::HalfPixel;
  double cubicA = -0.75;
  bool excludeOutside = false;
};

// ONNX's cubic convolution weights of the taps at floor(s) - 1 .. floor(s) + 2, r = s - floor(s).
std::vector<double> cubicWeights(double r, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

Taps interpolationTaps(std::int64_t outLen, std::int64_t inLen, float scale,
                       const Interpolation& how, float resizedLen, Roi roi) {
  Taps taps;
  taps.width = how.mode == Mode::Cubic ? 4 : 2;
  const std::int64_t firstOffset = how.mode == Mode::Cubic ? -1 : 0;
  for (std::int64_t o = 0; o < outLen; ++o) {
    const float s = originalCoordinate(o, scale, outLen, inLen, how.transform, resizedLen, roi);
    const double base = std::floor(static_cast<double>(s));
    const double r = static_cast<double>(s) - base;
    std::vector<double> w =
        how.mode == Mode::Cubic ? cubicWeights(r, how.cubicA) : std::vector<double>{1 - r, r};
    double kept = 0;
    for (int j = 0; j < taps.width; ++j) {
      const std::int64_t i = static_cast<std::int64_t>(base) + firstOffset + j;
      if (how.excludeOutside && (i < 0 || i >= inLen)) w[static_cast<std::size_t>(j)] = 0;
      kept += w[static_cast<std::size_t>(j)];
      taps.index.push_back(std::clamp<std::int64_t>(i, 0, inLen - 1));
    }
    for (double v : w) taps.weight.push_back(how.excludeOutside && kept != 0 ? v / kept : v);
  }
  return taps;
}

// y resized along `axis` by its taps: sum over j of y[..., index[:, j], ...] * weight[:, j].
VarPtr interpolateAxis(const VarPtr& y, int axis, const Taps& taps) {
  const int rank = y->type().ndim();
  const auto outLen = static_cast<std::int64_t>(taps.index.size()) / taps.width;
  std::vector<std::int64_t> weightShape(static_cast<std::size_t>(rank), 1);
  weightShape[static_cast<std::size_t>(axis)] = outLen;
  VarPtr sum;
  for (int j = 0; j < taps.width; ++j) {
    std::vector<double> index, weight;
    for (std::int64_t o = 0; o < outLen; ++o) {
      const auto k = static_cast<std::size_t>(o * taps.width + j);
      index.push_back(static_cast<double>(taps.index[k]));
      weight.push_back(taps.weight[k]);
    }
    std::vector<AdvIdx> at(static_cast<std::size_t>(axis), AdvIdx(Idx::all()));
    at.emplace_back(constant(Tensor::fromDoubles(DType::Int64, {outLen}, index)));
    const VarPtr term = mul(advancedSubtensor(y, at),
                            constant(Tensor::fromDoubles(y->type().dtype(), weightShape, weight)));
    sum = sum ? add(sum, term) : term;
  }
  return sum;
}

// Resize (opsets 10-18) and Upsample (7-9, and the deprecated 10).
std::vector<VarPtr> convertResize(NodeContext& ctx) {
  const bool upsample = ctx.opType() == "Upsample";
  const std::string op = ctx.opType();
  const Mode mode = readMode(ctx);
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  const bool legacy = upsample || ctx.opset() < 11;
  const Transform transform = legacy ? Transform::Asymmetric : readTransform(ctx);
  const Nearest nearest = legacy ? Nearest::Simple : readNearest(ctx);
  if (!legacy && ctx.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
    ctx.unsupported("Resize keep_aspect_ratio_policy '" +
                    ctx.attrString("keep_aspect_ratio_policy") + "'");
  Interpolation how{mode, transform};
  if (mode != Mode::Nearest) {
    if (!isFloat(x->type().dtype()))
      ctx.unsupported(op + " in " + (mode == Mode::Linear ? "linear" : "cubic") + " mode of a " +
                      std::string(dtypeName(x->type().dtype())) +
                      " input (expected a floating-point input 0)");
    if (!legacy && ctx.attrInt("antialias", 0) != 0) ctx.unsupported("Resize with antialias = 1");
    if (!legacy) {
      how.cubicA = ctx.attrFloat("cubic_coeff_a", -0.75);
      how.excludeOutside = ctx.attrInt("exclude_outside", 0) != 0;
    }
  }

  // Scales or sizes, for the axes they name (every axis unless opset 18's `axes`).
  std::vector<double> scales;
  std::vector<std::int64_t> sizes;
  if (upsample && ctx.opset() < 9) {
    scales = ctx.attrFloats("scales");
  } else if (legacy) {
    if (!ctx.hasInput(1)) ctx.fail("expected the scales input, found none");
    scales = ctx.constantDoubles(1, op + "'s scales");
  } else {
    if (ctx.hasInput(2)) scales = ctx.constantDoubles(2, "Resize's scales");
    if (ctx.hasInput(3)) sizes = ctx.constantInts(3, "Resize's sizes");
    if (!scales.empty() && !sizes.empty()) ctx.fail("expected either scales or sizes, found both");
    if (scales.empty() && sizes.empty()) ctx.fail("expected scales or sizes, found neither");
  }
  std::vector<int> axes;
  if (!legacy && ctx.hasAttr("axes")) {
    for (std::int64_t a : ctx.attrInts("axes")) axes.push_back(ctx.axis(a, rank, "axes"));
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  const std::size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size())
    ctx.fail(std::string(scales.empty() ? "sizes" : "scales") + ": expected " +
             std::to_string(axes.size()) + " values, one per axis, found " + std::to_string(given));

  // Note [Crop and resize]: tf_crop_and_resize reads the region of interest roi (starts, then
  // ends, one per axis, as fractions of in - 1) resized to the output size; output positions whose
  // coordinate falls outside the input take extrapolation_value, which is what ONNX's reference
  // gives whatever the mode (an interpolation of such positions along the other axes is of
  // extrapolated values only). An axis whose size stays is resized unless its roi is [0, 1].
  const bool crop = transform == Transform::TfCropAndResize;
  std::vector<double> roi;
  if (crop) {
    if (!ctx.hasInput(1)) ctx.fail("tf_crop_and_resize: expected the roi input, found none");
    roi = ctx.constantDoubles(1, "Resize's roi");
    if (roi.size() != 2 * axes.size())
      ctx.fail("roi: expected " + std::to_string(2 * axes.size()) +
               " values (the starts, then the ends, of each axis), found " +
               std::to_string(roi.size()));
  }
  const double extrapolation = ctx.attrFloat("extrapolation_value", 0.0);

  // Per resized axis: the constant source positions (nearest) or taps (linear, cubic), and for
  // tf_crop_and_resize the output positions outside the input.
  std::map<int, std::vector<std::int64_t>> sources;
  std::map<int, Taps> taps;
  std::map<int, std::vector<double>> outside;
  std::int64_t tableEntries = 0;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const int a = axes[k];
    const std::int64_t in = x->type().shape()[static_cast<std::size_t>(a)];
    Roi region;
    if (crop) region = {static_cast<float>(roi[k]), static_cast<float>(roi[axes.size() + k])};
    const bool wholeAxis = region.start == 0 && region.end == 1;
    float scale = 1;
    std::int64_t out = in;
    float resizedLen = 0;  // Note [Align corners with scales]
    if (!scales.empty()) {
      scale = static_cast<float>(scales[k]);
      if (!(scale > 0))
        ctx.fail("scales: expected positive values, found " + std::to_string(scales[k]));
      if (scale == 1 && wholeAxis) continue;
      if (in == kUnknownDim)
        ctx.unsupported(op + " of an axis whose size is not static (axis " + std::to_string(a) +
                        ")");
      const double scaled = static_cast<double>(scale) * static_cast<double>(in);
      if (!(scaled <= static_cast<double>(kMaxResizeTable)))
        ctx.fail("scales: axis " + std::to_string(a) + " of size " + std::to_string(in) +
                 " scaled by " + std::to_string(scales[k]) + " exceeds " +
                 std::to_string(kMaxResizeTable) + " elements");
      out = static_cast<std::int64_t>(scale * static_cast<float>(in));
      resizedLen = scale * static_cast<float>(in);
    } else {
      out = sizes[k];
      if (out < 0 || out > kMaxResizeTable)
        ctx.fail("sizes: expected sizes from 0 to " + std::to_string(kMaxResizeTable) + ", found " +
                 std::to_string(out));
      if (in == kUnknownDim)
        ctx.unsupported(op + " of an axis whose size is not static (axis " + std::to_string(a) +
                        ")");
      if (out == in && wholeAxis) continue;
      scale = in == 0 ? 1.0f : static_cast<float>(out) / static_cast<float>(in);
      resizedLen = static_cast<float>(out);
    }
    if (in == 0 && out > 0)
      ctx.fail("cannot resize the empty axis " + std::to_string(a) + " to " + std::to_string(out));
    tableEntries += out * (mode == Mode::Cubic ? 4 : mode == Mode::Linear ? 2 : 1);
    if (tableEntries > kMaxResizeTable)
      ctx.fail("the resized axes need " + std::to_string(tableEntries) +
               " entries of index tables up to axis " + std::to_string(a) + " (output size " +
               std::to_string(out) + "), expected at most " + std::to_string(kMaxResizeTable));
    if (crop) {
      std::vector<double> mask;
      for (std::int64_t o = 0; o < out; ++o) {
        const float c = originalCoordinate(o, scale, out, in, transform, resizedLen, region);
        mask.push_back(c < 0 || c > static_cast<float>(in - 1) ? 1.0 : 0.0);
      }
      if (std::find(mask.begin(), mask.end(), 1.0) != mask.end()) outside[a] = std::move(mask);
    }
    if (mode != Mode::Nearest) {
      taps[a] = interpolationTaps(out, in, scale, how, resizedLen, region);
      continue;
    }
    std::vector<std::int64_t>& src = sources[a];
    for (std::int64_t o = 0; o < out; ++o)
      src.push_back(nearestSource(o, scale, out, in, transform, nearest, resizedLen, region));
  }
  // extrapolation_value where a coordinate left the input (Note [Crop and resize]).
  const auto extrapolate = [&](VarPtr y) {
    for (const auto& [a, mask] : outside) {
      std::vector<std::int64_t> shape(static_cast<std::size_t>(rank), 1);
      shape[static_cast<std::size_t>(a)] = static_cast<std::int64_t>(mask.size());
      y = where(constant(Tensor::fromDoubles(DType::Bool, shape, mask)),
                scalarOf(extrapolation, y->type().dtype()), y);
    }
    return y;
  };
  if (mode != Mode::Nearest) {
    if (taps.empty()) return {identity(x)};
    VarPtr y = x;
    for (const auto& [a, t] : taps) y = interpolateAxis(y, a, t);
    return {extrapolate(y)};
  }
  if (sources.empty()) return {identity(x)};

  // One gather over the block of axes from the first to the last resized one.
  const int first = sources.begin()->first, last = sources.rbegin()->first;
  const int block = last - first + 1;
  std::vector<AdvIdx> index;
  for (int a = 0; a < first; ++a) index.emplace_back(Idx::all());
  for (int a = first; a <= last; ++a) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(block), 1);
    VarPtr positions;
    if (auto it = sources.find(a); it != sources.end()) {
      shape[static_cast<std::size_t>(a - first)] = static_cast<std::int64_t>(it->second.size());
      positions = constant(Tensor::fromDoubles(
          DType::Int64, shape, std::vector<double>(it->second.begin(), it->second.end())));
    } else {
      std::vector<int> order(static_cast<std::size_t>(block), DimShuffle::kNewAxis);
      order[static_cast<std::size_t>(a - first)] = 0;
      positions = dimshuffle(arange(shapeI(x, a)), order);
    }
    index.emplace_back(positions);
  }
  return {extrapolate(advancedSubtensor(x, index))};
}

}  // namespace

void registerResizeConverters(ConverterTable& table) {
  table.add("Resize", &convertResize);
  table.add("Upsample", &convertResize);
}

}  // namespace tscope::engine::io::onnx_import

// Converters of Pad (opsets 2 to 18), Resize (10 to 18) and Upsample (7 to 9) in nearest mode,
// and TopK (1 to 18).
//
// Note [Nearest resize as a gather]: nearest-neighbour resizing picks, along each resized axis,
// one input position per output position; which one depends only on the sizes, the scale and the
// coordinate_transformation_mode / nearest_mode attributes, all known while importing. So the
// index vectors are computed here (in float arithmetic, as onnxruntime does, so ties round the
// same way) and the node becomes one AdvancedSubtensor x[:, :, rows, cols] whose index arrays
// broadcast against each other (rows (H', 1), cols (1, W')). Axes between two resized ones that
// keep their size take an arange, so the arrays stay adjacent and the result keeps x's axis
// order. A resized axis must have a static size; linear and cubic modes are not supported yet.
#include "engine/io/onnx/onnx_convert.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/topk.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tscope::engine::io::onnx_import {

namespace {

// d + n for a 0-d int64 size, folded when d is a constant.
VarPtr dimPlus(const VarPtr& d, std::int64_t n) {
  if (n == 0) return d;
  if (auto v = constantIntValue(d)) return constantInt(*v + n);
  return add(d, constantInt(n));
}

// --- Pad -----------------------------------------------------------------------------------------

// Begin/end pads per axis (ONNX gives all begins, then all ends; from opset 18 for `axes` only).
struct Pads {
  std::vector<std::int64_t> begin, end;
};

// The index vectors of a resized axis are built while importing: at most 2^24 entries each.
constexpr std::int64_t kMaxResizedAxis = std::int64_t{1} << 24;

Pads readPads(const NodeContext& ctx, int rank) {
  const bool fromInput = ctx.opset() >= 11;
  const std::vector<std::int64_t> pads =
      fromInput ? ctx.constantInts(1, "Pad's pads") : ctx.attrInts("pads");
  std::vector<int> axes;
  if (fromInput && ctx.opset() >= 18 && ctx.hasInput(3)) {
    for (std::int64_t a : ctx.constantInts(3, "Pad's axes"))
      axes.push_back(ctx.axis(a, rank, "axes"));
  } else {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  const std::size_t n = axes.size();
  if (pads.size() != 2 * n)
    ctx.fail("pads: expected " + std::to_string(2 * n) + " values (begin and end for " +
             std::to_string(n) + " axes), found " + std::to_string(pads.size()));
  // Sizes are int64 arithmetic later: a pad beyond 2^40 elements is no real model's.
  for (std::int64_t v : pads)
    if (v > (std::int64_t{1} << 40) || v < -(std::int64_t{1} << 40))
      ctx.fail("pads: expected values within +-2^40, found " + std::to_string(v));
  Pads p{std::vector<std::int64_t>(static_cast<std::size_t>(rank), 0),
         std::vector<std::int64_t>(static_cast<std::size_t>(rank), 0)};
  for (std::size_t i = 0; i < n; ++i) {
    p.begin[static_cast<std::size_t>(axes[i])] = pads[i];
    p.end[static_cast<std::size_t>(axes[i])] = pads[n + i];
  }
  return p;
}

// The fill value of constant mode as a 0-d variable of x's dtype.
VarPtr padValue(const NodeContext& ctx, DType dtype) {
  if (ctx.opset() < 11) return constant(ctx.attrFloat("value", 0.0), dtype);
  if (!ctx.hasInput(2)) return constant(0.0, dtype);
  VarPtr v = ctx.input(2);
  if (v->type().ndim() == 1 && v->type().shape()[0] == 1)
    v = reshape(v, std::vector<std::int64_t>{});
  if (v->type().ndim() != 0)
    ctx.fail("constant_value: expected a scalar, found " + v->type().str());
  return v->type().dtype() == dtype ? v : cast(v, dtype);
}

std::vector<VarPtr> convertPad(NodeContext& ctx) {
  VarPtr x = ctx.input(0);
  const int rank = ctx.rank(0);
  const std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    if (mode == "wrap") ctx.unsupported("Pad mode 'wrap'");
    ctx.fail("attribute 'mode': expected constant, reflect or edge, found '" + mode + "'");
  }
  Pads pads = readPads(ctx, rank);
  const auto& shape = x->type().shape();

  // Negative pads crop first.
  std::vector<Idx> crop;
  bool cropping = false;
  for (std::size_t a = 0; a < pads.begin.size(); ++a) {
    const std::int64_t b = pads.begin[a], e = pads.end[a];
    cropping = cropping || b < 0 || e < 0;
    crop.push_back(Idx::slice(b < 0 ? IdxBound(-b) : IdxBound(), e < 0 ? IdxBound(e) : IdxBound()));
    if (shape[a] != kUnknownDim &&
        shape[a] + std::min<std::int64_t>(b, 0) + std::min<std::int64_t>(e, 0) < 0)
      ctx.fail("pads crop axis " + std::to_string(a) + " of size " + std::to_string(shape[a]) +
               " by more than its size");
    pads.begin[a] = std::max<std::int64_t>(b, 0);
    pads.end[a] = std::max<std::int64_t>(e, 0);
  }
  if (cropping) x = subtensor(x, crop);

  bool padding = false;
  for (std::size_t a = 0; a < pads.begin.size(); ++a)
    padding = padding || pads.begin[a] > 0 || pads.end[a] > 0;
  if (!padding) return {cropping ? x : identity(x)};

  if (mode == "constant") {
    // A filled tensor of the padded shape with x written into its middle.
    ShapeExpr padded;
    std::vector<Idx> middle;
    for (int a = 0; a < rank; ++a) {
      const auto i = static_cast<std::size_t>(a);
      padded.push_back(dimPlus(shapeI(x, a), pads.begin[i] + pads.end[i]));
      middle.push_back(
          Idx::slice(pads.begin[i], pads.end[i] > 0 ? IdxBound(-pads.end[i]) : IdxBound()));
    }
    return {setSubtensor(alloc(padValue(ctx, x->type().dtype()), padded), x, middle)};
  }
  // edge and reflect: one axis after another, so corners take the already padded values.
  for (int a = 0; a < rank; ++a) {
    const auto i = static_cast<std::size_t>(a);
    const std::int64_t before = pads.begin[i], after = pads.end[i];
    if (before == 0 && after == 0) continue;
    const std::int64_t n = x->type().shape()[i];
    std::vector<VarPtr> parts;
    if (mode == "edge") {
      if (n == 0) ctx.fail("edge padding of axis " + std::to_string(a) + ", which is empty");
      auto repeated = [&](const VarPtr& edge, std::int64_t count) {
        std::vector<std::int64_t> reps(static_cast<std::size_t>(rank), 1);
        reps[i] = count;
        return tile(edge, reps);
      };
      if (before > 0) parts.push_back(repeated(slice(x, a, 0, 1), before));
      parts.push_back(x);
      if (after > 0) parts.push_back(repeated(slice(x, a, -1, std::nullopt), after));
    } else {
      if (n != kUnknownDim && (before >= n || after >= n))
        ctx.fail("reflect pads of axis " + std::to_string(a) + " (" + std::to_string(before) +
                 ", " + std::to_string(after) + "): expected each smaller than the axis size " +
                 std::to_string(n));
      // x[before:0:-1] and x[-2:-2-after:-1]: the mirror images without the edge element.
      if (before > 0) parts.push_back(slice(x, a, before, 0, -1));
      parts.push_back(x);
      if (after > 0) parts.push_back(slice(x, a, -2, -2 - after, -1));
    }
    x = join(a, parts);
  }
  return {x};
}

// --- Resize / Upsample ---------------------------------------------------------------------------

enum class Transform { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNn };
enum class Nearest { Simple, RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

Transform readTransform(const NodeContext& ctx) {
  const std::string m = ctx.attrString("coordinate_transformation_mode", "half_pixel");
  if (m == "half_pixel") return Transform::HalfPixel;
  if (m == "pytorch_half_pixel") return Transform::PytorchHalfPixel;
  if (m == "align_corners") return Transform::AlignCorners;
  if (m == "asymmetric") return Transform::Asymmetric;
  if (m == "tf_half_pixel_for_nn") return Transform::TfHalfPixelForNn;
  if (m == "tf_crop_and_resize" || m == "half_pixel_symmetric")
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

// The input position output position o reads (Note [Nearest resize as a gather]).
std::int64_t nearestSource(std::int64_t o, float scale, std::int64_t outLen, std::int64_t inLen,
                           Transform t, Nearest mode) {
  const auto x = static_cast<float>(o);
  float orig = 0;
  switch (t) {
    case Transform::HalfPixel:
      orig = (x + 0.5f) / scale - 0.5f;
      break;
    case Transform::PytorchHalfPixel:
      orig = outLen > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
      break;
    case Transform::AlignCorners:
      orig =
          outLen == 1 ? 0.0f : x * static_cast<float>(inLen - 1) / static_cast<float>(outLen - 1);
      break;
    case Transform::Asymmetric:
      orig = x / scale;
      break;
    case Transform::TfHalfPixelForNn:
      orig = (x + 0.5f) / scale;
      break;
  }
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

// Resize (opsets 10-18) and Upsample (7-9, and the deprecated 10): nearest mode only.
std::vector<VarPtr> convertResize(NodeContext& ctx) {
  const bool upsample = ctx.opType() == "Upsample";
  const std::string op = ctx.opType();
  const std::string mode = ctx.attrString("mode", "nearest");
  if (mode != "nearest") ctx.unsupported(op + " mode '" + mode + "'");
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  const bool legacy = upsample || ctx.opset() < 11;
  const Transform transform = legacy ? Transform::Asymmetric : readTransform(ctx);
  const Nearest nearest = legacy ? Nearest::Simple : readNearest(ctx);
  if (!legacy && ctx.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
    ctx.unsupported("Resize keep_aspect_ratio_policy '" +
                    ctx.attrString("keep_aspect_ratio_policy") + "'");

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

  // Per resized axis: the constant source positions.
  std::map<int, std::vector<std::int64_t>> sources;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const int a = axes[k];
    const std::int64_t in = x->type().shape()[static_cast<std::size_t>(a)];
    float scale = 1;
    std::int64_t out = in;
    if (!scales.empty()) {
      scale = static_cast<float>(scales[k]);
      if (!(scale > 0))
        ctx.fail("scales: expected positive values, found " + std::to_string(scales[k]));
      if (scale == 1) continue;
      if (in == kUnknownDim)
        ctx.unsupported(op + " of an axis whose size is not static (axis " + std::to_string(a) +
                        ")");
      const double scaled = static_cast<double>(scale) * static_cast<double>(in);
      if (!(scaled <= static_cast<double>(kMaxResizedAxis)))
        ctx.fail("scales: axis " + std::to_string(a) + " of size " + std::to_string(in) + " scaled by " +
                 std::to_string(scales[k]) + " exceeds " + std::to_string(kMaxResizedAxis) + " elements");
      out = static_cast<std::int64_t>(scale * static_cast<float>(in));
    } else {
      out = sizes[k];
      if (out < 0 || out > kMaxResizedAxis)
        ctx.fail("sizes: expected sizes from 0 to " + std::to_string(kMaxResizedAxis) + ", found " +
                 std::to_string(out));
      if (in == kUnknownDim)
        ctx.unsupported(op + " of an axis whose size is not static (axis " + std::to_string(a) +
                        ")");
      if (out == in) continue;
      scale = in == 0 ? 1.0f : static_cast<float>(out) / static_cast<float>(in);
    }
    if (in == 0 && out > 0)
      ctx.fail("cannot resize the empty axis " + std::to_string(a) + " to " + std::to_string(out));
    std::vector<std::int64_t>& src = sources[a];
    for (std::int64_t o = 0; o < out; ++o)
      src.push_back(nearestSource(o, scale, out, in, transform, nearest));
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
  return {advancedSubtensor(x, index)};
}

// --- TopK ----------------------------------------------------------------------------------------

std::vector<VarPtr> convertTopK(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input 0: expected a tensor of rank 1 or more, found a scalar");
  std::int64_t k = 0;
  if (ctx.opset() < 10) {
    k = ctx.attrInt("k");
  } else {
    const auto value = ctx.constantInput(1);
    if (!value) ctx.unsupported("TopK with k computed at run time");
    if (value->numel() != 1)
      ctx.fail("input 1 (K): expected a single value, found shape " +
               shapeToString(value->shape()));
    k = static_cast<std::int64_t>(value->item());
  }
  const int axis = ctx.axis(ctx.attrInt("axis", -1), rank);
  const bool largest = ctx.opset() < 11 || ctx.attrInt("largest", 1) != 0;
  const std::int64_t n = x->type().shape()[static_cast<std::size_t>(axis)];
  if (k < 0) ctx.fail("k: expected k >= 0, found " + std::to_string(k));
  if (n != kUnknownDim && k > n)
    ctx.fail("k = " + std::to_string(k) + " is larger than axis " + std::to_string(axis) +
             " of size " + std::to_string(n));
  // `sorted` = 0 leaves the order to the runtime; sorted output is one valid answer.
  auto [values, indices] = topk(x, k, axis, largest);
  return {values, indices};
}

}  // namespace

void registerMiscConverters(ConverterTable& table) {
  table.add("Pad", &convertPad);
  table.add("Resize", &convertResize);
  table.add("Upsample", &convertResize);
  table.add("TopK", &convertTopK);
}

}  // namespace tscope::engine::io::onnx_import

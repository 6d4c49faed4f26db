// More ONNX ops issue 25 added, as exact compositions: ReverseSequence, BitShift (uint8),
// DynamicQuantizeLinear, MatMulInteger, and the window functions HannWindow, HammingWindow and
// BlackmanWindow.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/nms.h"
#include "engine/ops/nn/roi_align.h"
#include "engine/ops/nn/tfidf.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/advanced_index.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"

#include <limits>
#include <numbers>

namespace tscope::engine::io::onnx_import {

namespace {

// ReverseSequence: along time_axis, the first sequence_lens[b] entries of batch b reversed, the
// rest as they are. One AdvancedSubtensor whose time index is where(t < len, len - 1 - t, t) and
// whose batch index is arange(B), broadcast against each other; so the gradient is the
// indexing's.
std::vector<VarPtr> convertReverseSequence(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank < 2) ctx.fail("input 0: expected a tensor of rank 2 or more, found " + x->type().str());
  const int timeAxis = ctx.axis(ctx.attrInt("time_axis", 0), rank, "time_axis");
  const int batchAxis = ctx.axis(ctx.attrInt("batch_axis", 1), rank, "batch_axis");
  if (timeAxis + batchAxis != 1)
    ctx.fail("expected time_axis and batch_axis to be 0 and 1 (in either order), found " +
             std::to_string(timeAxis) + " and " + std::to_string(batchAxis));
  const VarPtr lens = asInt64(ctx.input(1));
  if (lens->type().ndim() != 1)
    ctx.fail("input 1 (sequence_lens): expected a 1-d tensor, found " + lens->type().str());
  // t and len laid out as (T, B) when time comes first, (B, T) otherwise.
  const VarPtr t = arange(shapeI(x, timeAxis));
  const VarPtr b = arange(shapeI(x, batchAxis));
  const bool timeFirst = timeAxis == 0;
  const VarPtr tGrid = dimshuffle(t, timeFirst ? std::vector<int>{0, DimShuffle::kNewAxis}
                                               : std::vector<int>{DimShuffle::kNewAxis, 0});
  const VarPtr lenGrid = dimshuffle(lens, timeFirst ? std::vector<int>{DimShuffle::kNewAxis, 0}
                                                    : std::vector<int>{0, DimShuffle::kNewAxis});
  const VarPtr bGrid = dimshuffle(b, timeFirst ? std::vector<int>{DimShuffle::kNewAxis, 0}
                                               : std::vector<int>{0, DimShuffle::kNewAxis});
  const VarPtr source = where(lt(tGrid, lenGrid), sub(sub(lenGrid, constantInt(1)), tGrid), tGrid);
  if (timeFirst) return {advancedSubtensor(x, {source, bGrid})};
  return {advancedSubtensor(x, {bGrid, source})};
}

// BitShift on unsigned integers, in their own dtype: x * 2^y to the left, x // 2^y to the right,
// where 2^y is the engine's integer pow, which wraps, so a shift by the width or more gives the
// factor 0 and the result 0, as numpy's shifts do (the engine's integer division by 0 gives 0).
std::vector<VarPtr> convertBitShift(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr& y = ctx.input(1);
  const DType dtype = x->type().dtype();
  if (!isInteger(dtype) || isSigned(dtype) || y->type().dtype() != dtype)
    ctx.fail("expected two inputs of one unsigned integer type (uint8..uint64), found " +
             x->type().str() + " and " + y->type().str());
  const std::string direction = ctx.attrString("direction");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.fail("attribute 'direction': expected LEFT or RIGHT, found '" + direction + "'");
  const VarPtr factor = engine::pow(constant(2.0, dtype), y);
  if (direction == "LEFT") return {mul(x, factor)};
  return {intDiv(x, factor)};
}

// DynamicQuantizeLinear, as its spec and reference write it: scale = (max(0, max x) - min(0,
// min x)) / 255, zero point = saturate(round(-min / scale)), y = saturate(round(x / scale) + zp),
// rounding half to even, in float32.
std::vector<VarPtr> convertDynamicQuantizeLinear(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (x->type().dtype() != DType::Float32)
    ctx.fail("input 0: expected a float32 tensor, found " + x->type().str());
  const DType f = DType::Float32;
  const VarPtr lo = minimum(scalarOf(0, f), min(x));
  const VarPtr hi = maximum(scalarOf(0, f), max(x));
  const VarPtr scale = trueDiv(sub(hi, lo), scalarOf(255, f));
  auto saturate = [&](const VarPtr& v) { return clip(v, scalarOf(0, f), scalarOf(255, f)); };
  const VarPtr zp = saturate(round(trueDiv(neg(lo), scale)));
  const VarPtr y = saturate(add(round(trueDiv(x, scale)), zp));
  return {cast(y, DType::UInt8), scale, cast(zp, DType::UInt8)};
}

// A zero point or scale of a quantized matmul operand, shaped to broadcast: a scalar (or one
// value) as it is; for A a 1-d one per row (M) as (M, 1); for B a 1-d one per column (N) as it is.
VarPtr perRowOrColumn(const VarPtr& v, bool rows) {
  const TensorType& t = v->type();
  if (t.ndim() == 1 && rows && !(t.isDimKnown(0) && t.shape()[0] == 1))
    return dimshuffle(v, {0, DimShuffle::kNewAxis});
  return v;
}

// (a - a_zero_point) @ (b - b_zero_point) in int32, as numpy's integer matmul (exact; it wraps
// only where int32 would).
VarPtr integerProduct(const NodeContext& ctx, int a, int aZp, int b, int bZp) {
  VarPtr av = cast(ctx.input(a), DType::Int32), bv = cast(ctx.input(b), DType::Int32);
  if (ctx.rank(a) < 1 || ctx.rank(b) < 1)
    ctx.fail("expected operands of rank >= 1, found " + ctx.input(a)->type().str() + " and " +
             ctx.input(b)->type().str());
  if (ctx.hasInput(aZp)) av = sub(av, perRowOrColumn(cast(ctx.input(aZp), DType::Int32), true));
  if (ctx.hasInput(bZp)) bv = sub(bv, perRowOrColumn(cast(ctx.input(bZp), DType::Int32), false));
  return dot(av, bv);
}

std::vector<VarPtr> convertMatMulInteger(NodeContext& ctx) {
  return {integerProduct(ctx, 0, 2, 1, 3)};
}

// QLinearMatMul: saturate(round(((a - a_zp) @ (b - b_zp)) * a_scale * b_scale / y_scale) + y_zp),
// the integer product exact, the requantization in float64, rounding half to even.
std::vector<VarPtr> convertQLinearMatMul(NodeContext& ctx) {
  const DType out = ctx.input(7)->type().dtype();
  double lo = 0, hi = 255;
  if (out == DType::Int8)
    lo = -128, hi = 127;
  else if (out != DType::UInt8)
    ctx.unsupported("QLinearMatMul to " + std::string(dtypeName(out)));
  const DType f = DType::Float64;
  const VarPtr product = cast(integerProduct(ctx, 0, 2, 3, 5), f);
  const VarPtr multiplier = trueDiv(mul(perRowOrColumn(cast(ctx.input(1), f), true),
                                        perRowOrColumn(cast(ctx.input(4), f), false)),
                                    cast(ctx.input(6), f));
  const VarPtr y = add(round(mul(product, multiplier)), cast(ctx.input(7), f));
  return {cast(clip(y, scalarOf(lo, f), scalarOf(hi, f)), out)};
}

// Note [Window functions]: w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) for n in
// [0, size), N = size when periodic (the default), size - 1 otherwise; in the output dtype
// (output_datatype, float32 by default). size is a run-time scalar.
template <int Kind>
std::vector<VarPtr> convertWindow(NodeContext& ctx) {
  const auto to = static_cast<int>(ctx.attrInt("output_datatype", 1));
  const std::optional<DType> dtype = dtypeFromOnnx(to);
  if (!dtype || !isFloat(*dtype)) ctx.unsupported("a window of " + onnxTypeName(to));
  const VarPtr size = asInt64(ctx.input(0));
  if (size->type().ndim() != 0)
    ctx.fail("input 0 (size): expected a scalar, found " + size->type().str());
  const bool periodic = ctx.attrInt("periodic", 1) != 0;
  const VarPtr n = cast(arange(size), *dtype);
  const VarPtr count = cast(periodic ? size : sub(size, constantInt(1)), *dtype);
  const double a0 = Kind == 0 ? 0.5 : Kind == 1 ? 25.0 / 46.0 : 0.42;
  const double a1 = Kind == 0 ? 0.5 : Kind == 1 ? 21.0 / 46.0 : 0.5;
  const VarPtr phase = trueDiv(mul(n, scalarOf(2 * std::numbers::pi, *dtype)), count);
  VarPtr w = sub(scalarOf(a0, *dtype), mul(scalarOf(a1, *dtype), cos(phase)));
  if (Kind == 2) w = add(w, mul(scalarOf(0.08, *dtype), cos(mul(phase, scalarOf(2, *dtype)))));
  return {w};
}

// NonMaxSuppression: the engine's op (engine/ops/nn/nms.h); the optional scalar inputs (which
// ONNX also allows as one-element vectors) default to 0 boxes, IoU 0 and no score threshold.
std::vector<VarPtr> convertNonMaxSuppression(NodeContext& ctx) {
  auto scalarInput = [&](int i, DType dtype, double fallback) -> VarPtr {
    if (!ctx.hasInput(i)) return constant(fallback, dtype);
    const VarPtr& v = ctx.input(i);
    if (v->type().ndim() > 1 || (v->type().ndim() == 1 && v->type().shape()[0] != 1))
      ctx.fail("input " + std::to_string(i) + ": expected a single value, found " +
               v->type().str());
    return cast(reshape(v, std::vector<std::int64_t>{}), dtype);
  };
  return {
      nonMaxSuppression(ctx.input(0), ctx.input(1), scalarInput(2, DType::Int64, 0),
                        scalarInput(3, DType::Float32, 0),
                        scalarInput(4, DType::Float32, -std::numeric_limits<double>::infinity()),
                        ctx.attrInt("center_point_box", 0) != 0)};
}

// RoiAlign: the engine's op (engine/ops/nn/roi_align.h). Opset 10 had no
// coordinate_transformation_mode and behaved as output_half_pixel; opset 16's default is
// half_pixel.
std::vector<VarPtr> convertRoiAlign(NodeContext& ctx) {
  RoiAlignParams p;
  const std::string mode = ctx.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    ctx.fail("attribute 'mode': expected avg or max, found '" + mode + "'");
  p.maxMode = mode == "max";
  p.outputHeight = ctx.attrInt("output_height", 1);
  p.outputWidth = ctx.attrInt("output_width", 1);
  p.samplingRatio = ctx.attrInt("sampling_ratio", 0);
  p.spatialScale = ctx.attrFloat("spatial_scale", 1.0);
  if (p.outputHeight < 1 || p.outputWidth < 1 || p.samplingRatio < 0)
    ctx.fail("expected output_height, output_width >= 1 and sampling_ratio >= 0, found " +
             std::to_string(p.outputHeight) + ", " + std::to_string(p.outputWidth) + ", " +
             std::to_string(p.samplingRatio));
  const std::string transform = ctx.attrString(
      "coordinate_transformation_mode", ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    ctx.fail(
        "attribute 'coordinate_transformation_mode': expected half_pixel or "
        "output_half_pixel, found '" +
        transform + "'");
  p.halfPixel = transform == "half_pixel";
  return {roiAlign(ctx.input(0), ctx.input(1), asInt64(ctx.input(2)), p)};
}

// TfIdfVectorizer over integer tokens: the engine's op (engine/ops/nn/tfidf.h); string pools are
// refused (the engine has no string tensors).
std::vector<VarPtr> convertTfIdf(NodeContext& ctx) {
  if (ctx.hasAttr("pool_strings")) ctx.unsupported("TfIdfVectorizer over strings (pool_strings)");
  TfIdfParams p;
  p.minGram = ctx.attrInt("min_gram_length");
  p.maxGram = ctx.attrInt("max_gram_length");
  p.maxSkip = ctx.attrInt("max_skip_count");
  p.mode = ctx.attrString("mode");
  p.ngramCounts = ctx.attrInts("ngram_counts");
  p.ngramIndexes = ctx.attrInts("ngram_indexes");
  p.pool = ctx.attrInts("pool_int64s");
  p.weights = ctx.attrFloats("weights", std::vector<double>{});
  try {
    return {tfidfVectorizer(ctx.input(0), std::move(p))};
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
}

}  // namespace

void registerExtraMiscConverters(ConverterTable& table) {
  table.add("TfIdfVectorizer", &convertTfIdf);
  table.add("RoiAlign", &convertRoiAlign);
  table.add("NonMaxSuppression", &convertNonMaxSuppression);
  table.add("ReverseSequence", &convertReverseSequence);
  table.add("BitShift", &convertBitShift);
  table.add("DynamicQuantizeLinear", &convertDynamicQuantizeLinear);
  table.add("MatMulInteger", &convertMatMulInteger);
  table.add("QLinearMatMul", &convertQLinearMatMul);
  table.add("HannWindow", &convertWindow<0>);
  table.add("HammingWindow", &convertWindow<1>);
  table.add("BlackmanWindow", &convertWindow<2>);
}

}  // namespace tscope::engine::io::onnx_import

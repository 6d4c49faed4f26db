// ONNX ops issue 25 added, each an engine op or a short exact composition: CastLike, IsNaN,
// IsInf, Hardmax, OneHot, Compress, MeanVarianceNormalization, QuantizeLinear, DequantizeLinear,
// and the trigonometric and hyperbolic functions (UnaryMath, engine/ops/elemwise/unary_math.h).

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/blas/det.h"
#include "engine/ops/elemwise/unary_math.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/nonzero.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/ops/shape/unique.h"

#include <limits>

namespace tscope::engine::io::onnx_import {

namespace {

template <UnaryFn Fn>
std::vector<VarPtr> convertUnaryMath(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (!isFloat(x->type().dtype()))
    ctx.fail("input 0: expected a float tensor, found " + x->type().str());
  return {unaryMath(Fn, x)};
}

std::vector<VarPtr> convertCastLike(NodeContext& ctx) {
  return {cast(ctx.input(0), ctx.input(1)->type().dtype())};
}

// NaN is the one value unequal to itself.
std::vector<VarPtr> convertIsNaN(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {neq(x, x)};
}

std::vector<VarPtr> convertIsInf(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const DType dtype = x->type().dtype();
  if (!isFloat(dtype)) ctx.fail("input 0: expected a float tensor, found " + x->type().str());
  const bool positive = ctx.attrInt("detect_positive", 1) != 0;
  const bool negative = ctx.attrInt("detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  VarPtr out;
  if (positive) out = eq(x, scalarOf(inf, dtype));
  if (negative) {
    VarPtr n = eq(x, scalarOf(-inf, dtype));
    out = out ? logicalOr(out, n) : n;
  }
  if (!out) out = lt(x, x);  // neither: all false
  return {out};
}

// arange(n) as a tensor of rank `rank` whose axis `axis` holds it (the others of size 1).
VarPtr rangeAlong(const VarPtr& n, int rank, int axis) {
  std::vector<int> order(static_cast<std::size_t>(rank), DimShuffle::kNewAxis);
  order[static_cast<std::size_t>(axis)] = 0;
  return dimshuffle(arange(n), order);
}

// Hardmax: 1 where the first maximum along the axis is, 0 elsewhere. Before opset 13 the input
// is coerced to 2-D at `axis` (default 1) and the maximum taken along the second axis.
std::vector<VarPtr> convertHardmax(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  const bool legacy = ctx.opset() < 13;
  const int axis = ctx.axis(ctx.attrInt("axis", legacy ? 1 : -1), rank);
  auto hardmax = [](const VarPtr& v, int a) {
    const VarPtr at = argmax(v, a, /*keepdims=*/true);
    return cast(eq(at, rangeAlong(shapeI(v, a), v->type().ndim(), a)), v->type().dtype());
  };
  if (!legacy) return {hardmax(x, axis)};
  const ShapeExpr dims = shapeOf(x);
  const VarPtr outer = sizeProduct(std::span<const VarPtr>(dims.data(), axis));
  const VarPtr inner = sizeProduct(std::span<const VarPtr>(dims.data() + axis, rank - axis));
  return {reshape(hardmax(reshape(x, ShapeExpr{outer, inner}), 1), dims)};
}

// OneHot(indices, depth, values = [off, on]): a new axis of size depth at `axis`; negative
// indices count from depth; an index outside [-depth, depth) gives a row of off values (ONNX).
std::vector<VarPtr> convertOneHot(NodeContext& ctx) {
  const VarPtr& indices = ctx.input(0);
  const VarPtr& values = ctx.input(2);
  const int rank = ctx.rank(0) + 1;
  const int axis = ctx.axis(ctx.attrInt("axis", -1), rank);
  if (ctx.input(1)->type().ndim() > 1 ||
      (ctx.input(1)->type().ndim() == 1 && ctx.input(1)->type().shape()[0] != 1))
    ctx.fail("input 1 (depth): expected a single value, found " + ctx.input(1)->type().str());
  if (values->type().ndim() != 1 || values->type().shape()[0] != 2)
    ctx.fail("input 2 (values): expected [off_value, on_value], found " + values->type().str());
  const VarPtr depth = cast(reshape(ctx.input(1), std::vector<std::int64_t>{}), DType::Int64);
  VarPtr idx = cast(indices, DType::Int64);
  idx = where(lt(idx, constantInt(0)), add(idx, depth), idx);
  const VarPtr hit = eq(expandDims(idx, axis), rangeAlong(depth, rank, axis));
  return {where(hit, select(values, 0, 1), select(values, 0, 0))};
}

// Compress(input, condition): the slices along `axis` (of the flattened input without one)
// where condition is true; a condition shorter than the axis leaves the rest out, a true entry
// past the axis fails the run (take's bounds check).
std::vector<VarPtr> convertCompress(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr& condition = ctx.input(1);
  if (condition->type().ndim() != 1)
    ctx.fail("input 1 (condition): expected a 1-d tensor, found " + condition->type().str());
  const VarPtr positions = flatten(nonzero(cast(condition, DType::Bool)));
  if (!ctx.hasAttr("axis")) return {take(flatten(x), positions, 0)};
  return {take(x, positions, ctx.axis(ctx.attrInt("axis"), ctx.rank(0)))};
}

// MeanVarianceNormalization, as ONNX's function body writes it: (X - E[X]) / (sqrt(E[X^2] -
// E[X]^2) + 1e-9) over `axes` (default [0, 2, 3]).
std::vector<VarPtr> convertMvn(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  Axes axes;
  for (std::int64_t a : ctx.attrInts("axes", std::vector<std::int64_t>{0, 2, 3}))
    axes.push_back(ctx.axis(a, rank, "axes"));
  const DType dtype = x->type().dtype();
  const VarPtr m = mean(x, axes, true);
  const VarPtr variance = sub(mean(mul(x, x), axes, true), mul(m, m));
  return {trueDiv(sub(x, m), add(sqrt(variance), scalarOf(1e-9, dtype)))};
}

// A per-axis scale or zero point (1-d, along `axis` of x) shaped to broadcast against x; a scalar
// (or one-element) one as it is.
VarPtr alongAxis(const NodeContext& ctx, const VarPtr& v, const VarPtr& x, std::string_view what) {
  const TensorType& t = v->type();
  if (t.ndim() == 0) return v;
  if (t.ndim() != 1)
    ctx.fail(std::string(what) + ": expected a scalar or a 1-d tensor, found " + t.str());
  const int rank = x->type().ndim();
  const int axis = ctx.axis(ctx.attrInt("axis", 1), rank);
  std::vector<int> order(static_cast<std::size_t>(rank), DimShuffle::kNewAxis);
  order[static_cast<std::size_t>(axis)] = 0;
  return dimshuffle(v, order);
}

// Note [Quantization exactly]: QuantizeLinear is saturate(round(x / scale) + zero_point) with
// round half to even (the engine's round), computed in the scale's float dtype as ONNX's reference
// does, then clipped to the output's range and cast (exact: the value is an integer by then).
// DequantizeLinear is (float(x) - float(zero_point)) * scale: the difference is exact in float32
// for 8-bit inputs, so one rounding, as in the reference.
std::vector<VarPtr> convertQuantizeLinear(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr& scale = ctx.input(1);
  const DType fdt = scale->type().dtype();
  if (!isFloat(fdt))
    ctx.fail("input 1 (y_scale): expected a float tensor, found " + scale->type().str());
  const DType out = ctx.hasInput(2) ? ctx.input(2)->type().dtype() : DType::UInt8;
  double lo = 0, hi = 255;
  if (out == DType::Int8)
    lo = -128, hi = 127;
  else if (out != DType::UInt8)
    ctx.unsupported("QuantizeLinear to " + std::string(dtypeName(out)));
  VarPtr q = round(trueDiv(cast(x, fdt), alongAxis(ctx, scale, x, "input 1 (y_scale)")));
  if (ctx.hasInput(2))
    q = add(q, cast(alongAxis(ctx, ctx.input(2), x, "input 2 (y_zero_point)"), fdt));
  return {cast(clip(q, scalarOf(lo, fdt), scalarOf(hi, fdt)), out)};
}

std::vector<VarPtr> convertDequantizeLinear(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const VarPtr& scale = ctx.input(1);
  const DType fdt = scale->type().dtype();
  if (!isFloat(fdt))
    ctx.fail("input 1 (x_scale): expected a float tensor, found " + scale->type().str());
  VarPtr v = cast(x, fdt);
  if (ctx.hasInput(2))
    v = sub(v, cast(alongAxis(ctx, ctx.input(2), x, "input 2 (x_zero_point)"), fdt));
  return {mul(v, alongAxis(ctx, scale, x, "input 1 (x_scale)"))};
}

std::vector<VarPtr> convertDet(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (ctx.rank(0) < 2 || !isFloat(x->type().dtype()))
    ctx.fail("input 0: expected a float tensor of square matrices (..., n, n), found " +
             x->type().str());
  return {det(x)};
}

std::vector<VarPtr> convertUnique(NodeContext& ctx) {
  std::optional<int> axis;
  if (ctx.hasAttr("axis")) axis = ctx.axis(ctx.attrInt("axis"), ctx.rank(0));
  const auto outs = unique(ctx.input(0), axis, ctx.attrInt("sorted", 1) != 0);
  return {outs.begin(), outs.end()};
}

}  // namespace

void registerExtraMathConverters(ConverterTable& table) {
  table.add("Tan", &convertUnaryMath<UnaryFn::Tan>);
  table.add("Asin", &convertUnaryMath<UnaryFn::Asin>);
  table.add("Acos", &convertUnaryMath<UnaryFn::Acos>);
  table.add("Atan", &convertUnaryMath<UnaryFn::Atan>);
  table.add("Sinh", &convertUnaryMath<UnaryFn::Sinh>);
  table.add("Cosh", &convertUnaryMath<UnaryFn::Cosh>);
  table.add("Asinh", &convertUnaryMath<UnaryFn::Asinh>);
  table.add("Acosh", &convertUnaryMath<UnaryFn::Acosh>);
  table.add("Atanh", &convertUnaryMath<UnaryFn::Atanh>);
  table.add("CastLike", &convertCastLike);
  table.add("Det", &convertDet);
  table.add("Unique", &convertUnique);
  table.add("IsNaN", &convertIsNaN);
  table.add("IsInf", &convertIsInf);
  table.add("Hardmax", &convertHardmax);
  table.add("OneHot", &convertOneHot);
  table.add("Compress", &convertCompress);
  table.add("MeanVarianceNormalization", &convertMvn);
  table.add("QuantizeLinear", &convertQuantizeLinear);
  table.add("DequantizeLinear", &convertDequantizeLinear);
}

}  // namespace tscope::engine::io::onnx_import

// ONNX's reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp), ArgMax/ArgMin and CumSum, on the engine's
// CAReduce, ArgReduce and CumSum (engine/ops/reduce/reduce.h).
//
// Note [ONNX reduction axes]: the axes are an attribute until an opset (13 for ReduceSum, 18 for
// the others) and an optional input from it on (Note [Attributes that became inputs]). Absent or
// empty axes reduce every axis, unless noop_with_empty_axes=1 (an attribute from that same
// opset), which makes the node an identity. keepdims defaults to 1. The result keeps the input's
// dtype, as ONNX says, where numpy's rules would widen (int32 sums) or turn to float (integer
// means): those are cast back.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/shape.h"

#include <algorithm>

namespace tscope::engine::io::onnx_import {

namespace {

enum class Reduction : std::uint8_t {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  SumSquare,
  LogSum,
  LogSumExp
};

struct ReduceSpec {
  Axes axes;  // normalised, sorted; empty: every axis
  bool keepdims = true;
  bool noop = false;  // noop_with_empty_axes with no axes given
};

ReduceSpec reduceSpec(const NodeContext& ctx, int axesInputSince) {
  ReduceSpec spec;
  spec.keepdims = ctx.attrInt("keepdims", 1) != 0;
  const auto axes = intsAttrOrInput(ctx, "axes", 1, axesInputSince);
  if (!axes || axes->empty()) {
    spec.noop = ctx.opset() >= axesInputSince && ctx.attrInt("noop_with_empty_axes", 0) != 0;
    return spec;
  }
  const int rank = ctx.rank(0);
  for (std::int64_t a : *axes) {
    const int axis = ctx.axis(a, rank);
    if (std::find(spec.axes.begin(), spec.axes.end(), axis) != spec.axes.end())
      ctx.fail("expected distinct axes, found axis " + std::to_string(axis) + " twice");
    spec.axes.push_back(axis);
  }
  std::sort(spec.axes.begin(), spec.axes.end());
  return spec;
}

VarPtr keepDType(const VarPtr& v, DType dtype) {
  return v->type().dtype() == dtype ? v : cast(v, dtype);
}

template <Reduction R>
std::vector<VarPtr> convertReduce(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const DType dtype = x->type().dtype();
  const ReduceSpec spec = reduceSpec(ctx, R == Reduction::Sum ? 13 : 18);
  if (spec.noop) return {identity(x)};
  const Axes& axes = spec.axes;
  const bool keep = spec.keepdims;
  switch (R) {
    case Reduction::Sum:
      return {engine::sum(x, axes, keep, dtype)};
    case Reduction::Prod:
      return {engine::prod(x, axes, keep, dtype)};
    case Reduction::Max:
      return {engine::max(x, axes, keep)};
    case Reduction::Min:
      return {engine::min(x, axes, keep)};
    case Reduction::Mean:
      return {keepDType(mean(x, axes, keep), dtype)};
    case Reduction::L1:
      return {engine::sum(engine::abs(x), axes, keep, dtype)};
    case Reduction::L2:
      return {keepDType(engine::sqrt(sum(sqr(x), axes, keep, dtype)), dtype)};
    case Reduction::SumSquare:
      return {engine::sum(sqr(x), axes, keep, dtype)};
    case Reduction::LogSum:
      return {keepDType(engine::log(sum(x, axes, keep, dtype)), dtype)};
    case Reduction::LogSumExp:
      return {keepDType(logsumexp(x, axes, keep), dtype)};
  }
  return {};
}

// Note [select_last_index]: the last extreme along the axis is the first one of the reversed
// tensor, counted from the other end: (n - 1) - argmax(x[..., ::-1, ...]).
template <ArgReduce::Kind K>
std::vector<VarPtr> convertArgReduce(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int axis = ctx.axis(ctx.attrInt("axis", 0), ctx.rank(0));
  const bool keep = ctx.attrInt("keepdims", 1) != 0;
  const bool last = ctx.attrInt("select_last_index", 0) != 0;
  auto arg = [&](const VarPtr& v) {
    return K == ArgReduce::Kind::Max ? argmax(v, axis, keep) : argmin(v, axis, keep);
  };
  if (!last) return {arg(x)};
  const VarPtr reversed = slice(x, axis, std::nullopt, std::nullopt, -1);
  return {sub(sub(shapeI(x, axis), constantInt(1)), arg(reversed))};
}

// CumSum (opsets 11 and 14): the axis is input 1, a 0-d (or one-element) integer that must be a
// constant; exclusive and reverse are attributes.
std::vector<VarPtr> convertCumSum(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (ctx.rank(0) == 0) ctx.fail("input 0: expected a tensor of rank 1 or more, found a scalar");
  if (x->type().dtype() == DType::Bool)
    ctx.fail("input 0: expected a numeric tensor, found " + x->type().str());
  const std::vector<std::int64_t> axis = ctx.constantInts(1, "CumSum's axis");
  if (axis.size() != 1)
    ctx.fail("input 1 (axis): expected a single value, found " + std::to_string(axis.size()));
  return {cumsum(x, ctx.axis(axis[0], ctx.rank(0)), ctx.attrInt("exclusive", 0) != 0,
                 ctx.attrInt("reverse", 0) != 0)};
}

}  // namespace

void registerReduceConverters(ConverterTable& table) {
  using R = Reduction;
  table.add("ReduceSum", &convertReduce<R::Sum>);
  table.add("ReduceMean", &convertReduce<R::Mean>);
  table.add("ReduceMax", &convertReduce<R::Max>);
  table.add("ReduceMin", &convertReduce<R::Min>);
  table.add("ReduceProd", &convertReduce<R::Prod>);
  table.add("ReduceL1", &convertReduce<R::L1>);
  table.add("ReduceL2", &convertReduce<R::L2>);
  table.add("ReduceSumSquare", &convertReduce<R::SumSquare>);
  table.add("ReduceLogSum", &convertReduce<R::LogSum>);
  table.add("ReduceLogSumExp", &convertReduce<R::LogSumExp>);
  table.add("ArgMax", &convertArgReduce<ArgReduce::Kind::Max>);
  table.add("ArgMin", &convertArgReduce<ArgReduce::Kind::Min>);
  table.add("CumSum", &convertCumSum);
}

}  // namespace tscope::engine::io::onnx_import

// The neural-network converters: MatMul, Gemm, Softmax, LogSoftmax and the normalizations here;
// Conv / ConvTranspose in onnx_ops_nn_conv.cpp, the pools and LRN in onnx_ops_nn_pool.cpp.
#include "engine/io/onnx/onnx_ops_nn_common.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/nn/nn.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/shape.h"

namespace tscope::engine::io::onnx_import {

namespace {

bool isEngineFloat(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64;
}

// Fails unless input i is a float32 / float64 tensor (what the engine's nn kernels take).
void requireEngineFloat(const NodeContext& ctx, int i) {
  const DType dtype = ctx.input(i)->type().dtype();
  if (!isEngineFloat(dtype))
    ctx.unsupported(ctx.opType() + " on " + std::string(dtypeName(dtype)) + " tensors");
}

// v in x's dtype (ONNX lets some statistics inputs have another float type).
VarPtr asDtypeOf(const VarPtr& v, const VarPtr& x) {
  return v->type().dtype() == x->type().dtype() ? v : cast(v, x->type().dtype());
}

// --- MatMul, Gemm --------------------------------------------------------------------------------

// numpy's matmul, which the engine's Dot implements whole (1-d operands, broadcast batch dims).
std::vector<VarPtr> convertMatMul(NodeContext& ctx) {
  const VarPtr& a = ctx.input(0);
  const VarPtr& b = ctx.input(1);
  if (ctx.rank(0) < 1 || ctx.rank(1) < 1)
    ctx.fail("expected operands of rank >= 1, found " + a->type().str() + " and " +
             b->type().str());
  if (a->type().dtype() != b->type().dtype())
    ctx.fail("expected operands of one dtype, found " + a->type().str() + " and " +
             b->type().str());
  return {dot(a, b)};
}

// Y = alpha * A' B' + beta * C. One Gemm node when C is a float matrix of exactly the product's
// (static) shape; otherwise Dot, scaled, plus the (broadcast) C: PyTorch's Linear, with a bias
// row, stays `dot + b`, which the engine's gemm rewrite also leaves alone.
std::vector<VarPtr> convertGemm(NodeContext& ctx) {
  VarPtr a = ctx.input(0);
  VarPtr b = ctx.input(1);
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2)
    ctx.fail("expected matrices A and B, found " + a->type().str() + " and " + b->type().str());
  const double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  if (ctx.attrInt("transA", 0) != 0) a = transpose(a);
  if (ctx.attrInt("transB", 0) != 0) b = transpose(b);
  const auto& as = a->type().shape();
  const auto& bs = b->type().shape();
  if (as[1] != kUnknownDim && bs[0] != kUnknownDim && as[1] != bs[0])
    ctx.fail("the inner dimensions of A " + a->type().str() + " and B " + b->type().str() +
             " (after transA / transB) differ");
  const DType dtype = a->type().dtype();
  const bool withC = ctx.hasInput(2) && beta != 0.0;
  if (withC) {
    const VarPtr& c = ctx.input(2);
    const std::vector<std::int64_t> product{as[0], bs[1]};
    if (isEngineFloat(dtype) && b->type().dtype() == dtype && c->type().dtype() == dtype &&
        c->type().shape() == product && c->type().isFullyKnown())
      return {gemm(c, constant(alpha, dtype), a, b, constant(beta, dtype))};
  }
  VarPtr y = dot(a, b);
  if (alpha != 1.0) y = mul(y, scalarLike(alpha, y));
  if (withC) {
    VarPtr c = ctx.input(2);
    if (beta != 1.0) c = mul(c, scalarLike(beta, c));
    y = add(y, c);
  }
  return {y};
}

// --- Softmax, LogSoftmax -------------------------------------------------------------------------

// Opset >= 13: along one axis (default -1), one node. Before: the input coerced to 2-d at `axis`
// (default 1), (prod(d[:axis]), prod(d[axis:])), normalised along its second axis; that is the
// last axis when axis = rank - 1 (one node), else a reshape on each side.
std::vector<VarPtr> convertSoftmaxFamily(NodeContext& ctx, bool logarithm) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank < 1) ctx.fail("expected an input of rank >= 1, found " + x->type().str());
  requireEngineFloat(ctx, 0);
  const auto apply = [&](const VarPtr& v, int axis) {
    return logarithm ? logSoftmax(v, axis) : softmax(v, axis);
  };
  if (ctx.opset() >= 13) return {apply(x, ctx.axis(ctx.attrInt("axis", -1), rank))};
  const int axis = ctx.axis(ctx.attrInt("axis", 1), rank);
  if (axis == rank - 1) return {apply(x, axis)};
  VarPtr rows = constantInt(1);
  for (int i = 0; i < axis; ++i) rows = dimProduct(rows, shapeI(x, i));
  const VarPtr flat = reshape(x, ShapeExpr{rows, constantInt(-1)});
  return {reshape(apply(flat, 1), shapeOf(x))};
}

std::vector<VarPtr> convertSoftmax(NodeContext& ctx) {
  return convertSoftmaxFamily(ctx, false);
}
std::vector<VarPtr> convertLogSoftmax(NodeContext& ctx) {
  return convertSoftmaxFamily(ctx, true);
}

// --- Normalizations ------------------------------------------------------------------------------

// Inference: one BatchNormInference node over N and the spatial axes with the statistics as
// (1, C, 1, ...) (opsets < 9 with spatial=0: per activation, over N only, statistics (C, D...)).
// Training mode (is_test=0 before opset 7, training_mode=1 from 14, or the statistics outputs
// used) normalises with the batch's statistics: BatchNormTrain, when only Y is used.
std::vector<VarPtr> convertBatchNormalization(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank < 2) ctx.fail("expected an input (N, C, ...) of rank >= 2, found " + x->type().str());
  requireEngineFloat(ctx, 0);
  for (int i = 1; i < 5; ++i)
    if (!isFloat(ctx.input(i)->type().dtype()))
      ctx.fail("expected float statistics, found input " + std::to_string(i) + " " +
               ctx.input(i)->type().str());
  const double epsilon = ctx.attrFloat("epsilon", 1e-5);
  const int opset = ctx.opset();
  bool statisticsWanted = false;
  for (int i = 1; i < ctx.nOutputs(); ++i)
    statisticsWanted = statisticsWanted || ctx.wantsOutput(i);
  const bool training = (opset < 7 && ctx.attrInt("is_test", 0) == 0) ||
                        (opset >= 14 && ctx.attrInt("training_mode", 0) != 0) || statisticsWanted;
  if (training && statisticsWanted && opset < 14)
    ctx.unsupported(
        "BatchNormalization in training mode with its statistics outputs before opset 14");
  const bool spatial = opset >= 9 || ctx.attrInt("spatial", 1) != 0;
  std::vector<int> axes{0};
  if (spatial)
    for (int i = 2; i < rank; ++i) axes.push_back(i);
  const auto stat = [&](int i) {
    const VarPtr v = asDtypeOf(ctx.input(i), x);
    const int expectedRank = spatial ? 1 : rank - 1;
    if (v->type().ndim() != expectedRank)
      ctx.fail("expected input " + std::to_string(i) + " of rank " + std::to_string(expectedRank) +
               (spatial ? " (C)" : " (C, D1, ...)") + ", found " + v->type().str());
    return spatial ? channelVector(v, rank) : expandDims(v, 0);
  };
  if (training && statisticsWanted) {
    // Note [BatchNormalization's running statistics]: opset 14's training mode, as ONNX's
    // reference computes it: Y normalised with the batch's mean and (biased) variance, and the
    // running statistics input * momentum + batch * (1 - momentum).
    const VarPtr mu = mean(x, axes, true);
    const VarPtr centered = sub(x, mu);
    const VarPtr variance = mean(mul(centered, centered), axes, true);
    const double momentum = ctx.attrFloat("momentum", 0.9);
    auto running = [&](int i, const VarPtr& batch) {
      const VarPtr b = flatten(batch);  // (1, C, 1, ...) -> (C)
      return add(mul(asDtypeOf(ctx.input(i), x), scalarLike(momentum, b)),
                 mul(b, scalarLike(1 - momentum, b)));
    };
    return {batchNormInference(x, stat(1), stat(2), mu, variance, axes, epsilon), running(3, mu),
            running(4, variance)};
  }
  if (training) return {batchNormTrain(x, stat(1), stat(2), axes, epsilon).y};
  return {batchNormInference(x, stat(1), stat(2), stat(3), stat(4), axes, epsilon)};
}

// (x - mean) / sqrt(var + epsilon) over `axes` (kept), with the mean and 1 / sqrt(var + epsilon).
struct Normalized {
  VarPtr y;
  VarPtr mean;
  VarPtr invStdDev;
};
Normalized normalize(const VarPtr& x, const Axes& axes, double epsilon) {
  const VarPtr mu = mean(x, axes, true);
  const VarPtr centered = sub(x, mu);
  const VarPtr variance = mean(mul(centered, centered), axes, true);
  const VarPtr inv =
      trueDiv(scalarLike(1.0, variance), sqrt(add(variance, scalarLike(epsilon, variance))));
  return {mul(centered, inv), mu, inv};
}

// Opset 17: normalised over axes [axis, rank) (axis default -1), then Scale and the optional B
// (shaped like those axes) broadcast on the right. Computed in x's dtype (float16 in float32);
// the optional Mean and InvStdDev outputs have the stash_type dtype (float32 by default).
std::vector<VarPtr> convertLayerNormalization(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank < 1) ctx.fail("expected an input of rank >= 1, found " + x->type().str());
  const DType dtype = x->type().dtype();
  if (!isFloat(dtype)) ctx.fail("expected a float input, found " + x->type().str());
  const DType computeDtype = dtype == DType::Float16 ? DType::Float32 : dtype;
  const int axis = ctx.axis(ctx.attrInt("axis", -1), rank);
  Axes axes;
  for (int i = axis; i < rank; ++i) axes.push_back(i);
  const VarPtr xc = dtype == computeDtype ? x : cast(x, computeDtype);
  const Normalized n = normalize(xc, axes, ctx.attrFloat("epsilon", 1e-5));
  VarPtr y =
      mul(n.y, ctx.input(1)->type().dtype() == computeDtype ? ctx.input(1)
                                                            : cast(ctx.input(1), computeDtype));
  if (ctx.hasInput(2))
    y = add(y, ctx.input(2)->type().dtype() == computeDtype ? ctx.input(2)
                                                            : cast(ctx.input(2), computeDtype));
  if (y->type().dtype() != dtype) y = cast(y, dtype);
  const std::int64_t stash = ctx.attrInt("stash_type", 1);
  const std::optional<DType> stashDtype =
      stash == 1 ? std::optional(DType::Float32) : dtypeFromOnnx(static_cast<int>(stash));
  if (!stashDtype || !isFloat(*stashDtype))
    ctx.fail("expected a float stash_type, found " + std::to_string(stash));
  std::vector<VarPtr> outputs{y};
  for (const VarPtr& v : {n.mean, n.invStdDev}) {
    const int i = static_cast<int>(outputs.size());
    if (i >= ctx.nOutputs()) break;
    outputs.push_back(!ctx.wantsOutput(i)                ? nullptr
                      : v->type().dtype() == *stashDtype ? v
                                                         : cast(v, *stashDtype));
  }
  return outputs;
}

// Per sample and channel over the spatial axes, then per-channel scale and B.
std::vector<VarPtr> convertInstanceNormalization(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const int rank = ctx.rank(0);
  if (rank < 3)
    ctx.fail("expected an input (N, C, spatial...) of rank >= 3, found " + x->type().str());
  if (!isFloat(x->type().dtype())) ctx.fail("expected a float input, found " + x->type().str());
  Axes axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  for (int i = 1; i < 3; ++i)
    if (ctx.rank(i) != 1)
      ctx.fail("expected input " + std::to_string(i) + " of shape (C), found " +
               ctx.input(i)->type().str());
  const Normalized n = normalize(x, axes, ctx.attrFloat("epsilon", 1e-5));
  return {add(mul(n.y, channelVector(asDtypeOf(ctx.input(1), x), rank)),
              channelVector(asDtypeOf(ctx.input(2), x), rank))};
}

}  // namespace

void registerNnConverters(ConverterTable& table) {
  table.add("MatMul", convertMatMul);
  table.add("Gemm", convertGemm);
  table.add("Softmax", convertSoftmax);
  table.add("LogSoftmax", convertLogSoftmax);
  table.add("BatchNormalization", convertBatchNormalization);
  table.add("LayerNormalization", convertLayerNormalization);
  table.add("InstanceNormalization", convertInstanceNormalization);
  registerConvConverters(table);
  registerPoolConverters(table);
}

}  // namespace tscope::engine::io::onnx_import

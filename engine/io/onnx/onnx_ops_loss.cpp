// ONNX's training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, as compositions
// (a gather of the target classes, weights, a masked reduction), so their gradients come with
// the ops they are built from.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/advanced_index.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/alloc.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/ops/shape/reshape.h"

namespace tscope::engine::io::onnx_import {

namespace {

// Note [NLL as a gather]: input (N, C, d1..dk) holds log-probabilities, target (N, d1..dk) class
// indices. The class axis moves last and everything else folds into rows, so picking
// input[n, target[n, d...], d...] is one AdvancedSubtensor x2[arange(M), t] over (M, C) — whose
// out-of-range check refuses a target outside [0, C) when the node runs (a negative target that
// is not ignore_index is made C first, so it is refused too rather than counted from the end).
// Ignored positions (target == ignore_index) pick class 0 and are masked to 0 with a where, not a
// multiplication (a -inf log-probability times 0 would be NaN). Weights are weight[target],
// masked likewise; as in ONNX's reference, mean is sum(w * loss) / sum(w) with weights or
// ignore_index, the plain mean otherwise; none keeps target's shape.
VarPtr nllLoss(const NodeContext& ctx, const VarPtr& input, const VarPtr& target,
               const VarPtr& weight) {
  const int r = input->type().ndim();
  if (r < 2)
    ctx.fail("input 0: expected a tensor of rank 2 or more (N, C, ...), found rank " +
             std::to_string(r));
  if (target->type().ndim() != r - 1)
    ctx.fail("input 1 (target): expected rank " + std::to_string(r - 1) +
             " (input's without C), found " + target->type().str());
  if (isFloat(target->type().dtype()))
    ctx.fail("input 1 (target): expected integer class indices, found " + target->type().str());
  const std::string reduction = ctx.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("attribute 'reduction': expected none, sum or mean, found '" + reduction + "'");
  const DType dtype = input->type().dtype();

  std::vector<int> order{0};
  for (int d = 2; d < r; ++d) order.push_back(d);
  order.push_back(1);
  const VarPtr classes = shapeI(input, 1);
  const VarPtr rows = reshape(dimshuffle(input, order), ShapeExpr{constantInt(-1), classes});
  const VarPtr t = flatten(asInt64(target));
  VarPtr idx = t;
  VarPtr valid;
  if (ctx.hasAttr("ignore_index")) {
    valid = neq(t, constantInt(ctx.attrInt("ignore_index")));
    idx = where(valid, t, constantInt(0));
  }
  idx = where(lt(idx, constantInt(0)), classes, idx);
  const VarPtr picked = advancedSubtensor(rows, {arange(shapeI(t, 0)), idx});
  VarPtr loss = neg(picked);
  if (valid) loss = where(valid, loss, scalarOf(0, dtype));
  VarPtr w;
  if (weight) {
    if (weight->type().ndim() != 1)
      ctx.fail("input 2 (weight): expected a 1-d tensor of C weights, found " +
               weight->type().str());
    w = take(weight, idx, 0);
    if (valid) w = where(valid, w, scalarOf(0, dtype));
    loss = mul(w, loss);
  } else if (valid) {
    w = cast(valid, dtype);
  }
  if (reduction == "none") return reshape(loss, shapeOf(target));
  if (reduction == "sum") return sum(loss);
  if (w) return trueDiv(sum(loss), sum(w));
  return mean(loss);
}

std::vector<VarPtr> convertNll(NodeContext& ctx) {
  return {nllLoss(ctx, ctx.input(0), ctx.input(1), ctx.hasInput(2) ? ctx.input(2) : nullptr)};
}

// SoftmaxCrossEntropyLoss: NLL of log_softmax over the class axis; the optional second output is
// that log_softmax.
std::vector<VarPtr> convertSce(NodeContext& ctx) {
  const VarPtr& scores = ctx.input(0);
  if (scores->type().ndim() < 2)
    ctx.fail("input 0: expected a tensor of rank 2 or more (N, C, ...), found " +
             scores->type().str());
  const VarPtr logProb = logSoftmax(scores, 1);
  VarPtr loss = nllLoss(ctx, logProb, ctx.input(1), ctx.hasInput(2) ? ctx.input(2) : nullptr);
  if (ctx.nOutputs() > 1) return {loss, logProb};
  return {loss};
}

}  // namespace

void registerLossConverters(ConverterTable& table) {
  table.add("NegativeLogLikelihoodLoss", &convertNll);
  table.add("SoftmaxCrossEntropyLoss", &convertSce);
}

}  // namespace tscope::engine::io::onnx_import

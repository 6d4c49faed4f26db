// conv_bias_activation: a convolution, the per-channel bias added to it and a relu or a clip after
// it become one FusedConv2d (engine/ops/nn/fused_conv2d.h), whose kernel applies both as it
// writes its output:
//
//   add(Conv2d(x, w), DimShuffle{x,0,x,x}(b), r...)  -> add(FusedConv2d{none}(x, w, b), r...)
//   add(Conv2d(x, w), C)  C a constant (1, O, 1, 1)  -> FusedConv2d{none}(x, w, C as (O,))
//   relu(FusedConv2d{none}(x, w, b))                 -> FusedConv2d{relu}(x, w, b)
//   clip(FusedConv2d{none}(x, w, b), lo, hi)         -> FusedConv2d{clip lo hi}(x, w, b)
//   add(FusedConv2d{none}(x, w, b), r)  r of the output's type
//                                                    -> FusedConv2d{none, residual}(x, w, b, r)
//   relu(FusedConv2d{none, residual}(x, w, b, r))    -> FusedConv2d{relu, residual}(x, w, b, r)
//
// That is how ONNX models arrive (PyTorch folds each batch norm into the convolution's weights and
// bias, and the importer writes Conv's bias as a broadcast add), and how MobileNet's ReLU6 is
// written (Clip 0 6). The convolution and the first fused node must have no other client, so no
// intermediate value that another node reads disappears. It runs in the specialize phase, before
// the elementwise fusion would take the add and the activation into a Composite. Note [Residual
// sum] (dnnl_conv.h): a ResNet block's add of its identity, and MobileNetV2's inverted residual,
// join the convolution too (the kernel adds the residual as it writes), so the block's
// add + relu pass over three tensors goes; a sum of more operands keeps the rest as an add.

#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/nn/fused_conv2d.h"
#include "engine/ops/shape/dimshuffle.h"
#include "engine/rewrite/pattern.h"
#include "engine/rewrite/rewriter.h"

namespace tscope::engine {

NodeRewriterPtr convBiasActivationRewriter();

namespace {

bool onlyUse(const FunctionGraph& fg, const Variable& v) {
  return fg.contains(v) && nodeClientCount(fg, v) == 1 && !isGraphOutput(fg, v);
}

bool isConvFloat(DType d) {
  return d == DType::Float32 || d == DType::Float64;
}

// The vector of O values that v adds per channel of an (N, O, H, W) tensor, or null:
// DimShuffle{x,0,x,x}(b) of a 1-d b, or a constant of shape (1, O, 1, 1) or (O, 1, 1).
VarPtr channelBias(const VarPtr& v, std::int64_t o, DType dtype) {
  const TensorType& t = v->type();
  if (t.dtype() != dtype) return nullptr;
  if (const Apply* owner = v->owner()) {
    const auto* ds = dynamic_cast<const DimShuffle*>(&owner->op());
    if (!ds) return nullptr;
    const VarPtr& b = owner->input(0);
    const std::vector<int> perChannel{DimShuffle::kNewAxis, 0, DimShuffle::kNewAxis,
                                      DimShuffle::kNewAxis};
    if (b->type().ndim() == 1 && ds->order() == perChannel && b->type().isDimKnown(0) &&
        b->type().shape()[0] == o)
      return b;
    return nullptr;
  }
  const auto* c = dynamic_cast<const Constant*>(v.get());
  if (!c) return nullptr;
  const Shape& s = c->value().shape();
  const bool rank4 = s.size() == 4 && s[0] == 1 && s[1] == o && s[2] == 1 && s[3] == 1;
  const bool rank3 = s.size() == 3 && s[0] == o && s[1] == 1 && s[2] == 1;
  if (!rank4 && !rank3) return nullptr;
  return constant(c->value().contiguous().reshape(Shape{o}));
}

// The Conv2d producing v when v is its only use, else null.
const Apply* soleConv(const FunctionGraph& fg, const VarPtr& v) {
  const Apply* owner = v->owner();
  if (!owner || !dynamic_cast<const Conv2d*>(&owner->op()) || !onlyUse(fg, *v)) return nullptr;
  return owner;
}

Replacements fuseBias(RewriteContext& ctx, Apply& node) {
  const VarPtr out = node.output(0);
  const DType dtype = out->type().dtype();
  if (!isConvFloat(dtype) || out->type().ndim() != 4 || node.nInputs() < 2) return {};
  const FunctionGraph& fg = ctx.graph();
  for (int i = 0; i < node.nInputs(); ++i) {
    const Apply* conv = soleConv(fg, node.input(i));
    if (!conv || node.input(i)->type().dtype() != dtype) continue;
    const std::int64_t o = conv->outputRef(0).type().shape()[1];
    if (o == kUnknownDim) continue;
    for (int j = 0; j < node.nInputs(); ++j) {
      if (j == i) continue;
      const VarPtr bias = channelBias(node.input(j), o, dtype);
      if (!bias) continue;
      const auto& params = dynamic_cast<const Conv2d&>(conv->op()).params();
      VarPtr built = fusedConv2d(conv->input(0), conv->input(1), bias, params, {});
      if (node.nInputs() > 2) {
        std::vector<VarPtr> rest{built};
        for (int k = 0; k < node.nInputs(); ++k)
          if (k != i && k != j) rest.push_back(node.input(k));
        built = elemwise(ScalarOp::Add, std::move(rest));
      }
      built = fitReplacement(ctx, built, out);
      if (!built) return {};
      return {{out, built}};
    }
  }
  return {};
}

// add(F, r) with F = FusedConv2d{none} without a residual, F used only here, and r exactly the
// output's type (no broadcast): F{residual}(x, w, b, r).
Replacements fuseResidual(RewriteContext& ctx, Apply& node) {
  if (node.nInputs() != 2) return {};
  const VarPtr out = node.output(0);
  const FunctionGraph& fg = ctx.graph();
  for (int i = 0; i < 2; ++i) {
    const Apply* fused = node.input(i)->owner();
    if (!fused || !onlyUse(fg, *node.input(i))) continue;
    const auto* f = dynamic_cast<const FusedConv2d*>(&fused->op());
    if (!f || f->residual() || f->activation().kind != cpu::ConvActivation::None) continue;
    const VarPtr& r = node.input(1 - i);
    if (r->type() != node.input(i)->type() || out->type() != r->type()) continue;
    VarPtr built = fitReplacement(
        ctx,
        fusedConv2dResidual(fused->input(0), fused->input(1), fused->input(2), r, f->params(), {}),
        out);
    if (!built) return {};
    return {{out, built}};
  }
  return {};
}

Replacements fuseActivation(RewriteContext& ctx, Apply& node, ScalarOp op) {
  const VarPtr out = node.output(0);
  const Apply* fused = node.input(0)->owner();
  if (!fused || !onlyUse(ctx.graph(), *node.input(0))) return {};
  const auto* f = dynamic_cast<const FusedConv2d*>(&fused->op());
  if (!f || f->activation().kind != cpu::ConvActivation::None) return {};
  if (out->type().dtype() != node.input(0)->type().dtype()) return {};
  ConvActivationSpec a;
  if (op == ScalarOp::Relu) {
    a.kind = cpu::ConvActivation::Relu;
  } else {
    const std::optional<double> lo = scalarConstantValue(*node.input(1)),
                                hi = scalarConstantValue(*node.input(2));
    if (!lo || !hi || !(*lo <= *hi) || !std::isfinite(*lo) || !std::isfinite(*hi)) return {};
    a = {cpu::ConvActivation::Clip, *lo, *hi};
  }
  VarPtr built = fitReplacement(
      ctx,
      f->residual()
          ? fusedConv2dResidual(fused->input(0), fused->input(1), fused->input(2), fused->input(3),
                                f->params(), a)
          : fusedConv2d(fused->input(0), fused->input(1), fused->input(2), f->params(), a),
      out);
  if (!built) return {};
  return {{out, built}};
}

Replacements convBiasActivation(RewriteContext& ctx, Apply& node) {
  const std::optional<ScalarOp> op = elemwiseScalarOp(node);
  if (!op) return {};
  if (*op == ScalarOp::Add) {
    Replacements bias = fuseBias(ctx, node);
    return bias.empty() ? fuseResidual(ctx, node) : bias;
  }
  if (*op == ScalarOp::Relu || *op == ScalarOp::Clip) return fuseActivation(ctx, node, *op);
  return {};
}

}  // namespace

NodeRewriterPtr convBiasActivationRewriter() {
  return nodeRewriter("conv_bias_activation", {"Elemwise"}, convBiasActivation);
}

}  // namespace tscope::engine

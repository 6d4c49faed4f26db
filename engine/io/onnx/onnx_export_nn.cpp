// ONNX forms of the BLAS and neural-network ops: Dot, Gemm/Gemv/Ger, Conv2d and its input
// gradient, pooling, softmax and its gradients, batch normalization, one-hot and the
// cross-entropy losses.
#include "engine/io/onnx/onnx_export_emit.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/blas/gemm.h"
#include "engine/ops/nn/nn.h"

namespace tscope::engine::io::onnx_export {

namespace {

inline constexpr DTypeSet kMatMulTypes = kFloatTypes | kWideIntTypes;

// numpy's matmul is ONNX's MatMul (1-d operands included).
void emitDot(NodeExport& n) {
  const DType out = n.outType(0).dtype();
  n.compute("MatMul", {{n.input(0), n.inType(0).dtype()}, {n.input(1), n.inType(1).dtype()}}, out,
            kMatMulTypes, out, n.output(0));
}

// p scaled by the 0-d input `scale` unless it is the constant 1.
std::string scaled(NodeExport& n, const std::string& p, int scale) {
  if (auto c = n.constantScalar(scale); c && *c == 1.0) return p;
  return n.add1("Mul", {p, n.input(scale)});
}

// Gemm(Z, alpha, X, Y, beta) = beta Z + alpha X.Y: ONNX's Gemm when alpha and beta are constants
// (without C when beta is 0, which ignores Z as BLAS does), else MatMul, Mul and Add.
void emitGemm(NodeExport& n) {
  const auto alpha = n.constantScalar(1), beta = n.constantScalar(4);
  // Gemm's alpha and beta are float attributes: only values a float holds exactly.
  auto exact = [](const std::optional<double>& v) {
    return v && static_cast<double>(static_cast<float>(*v)) == *v;
  };
  if (exact(alpha) && exact(beta)) {
    std::vector<std::string> inputs{n.input(2), n.input(3)};
    if (*beta != 0.0) inputs.push_back(n.input(0));
    auto& node = n.add("Gemm", inputs, {n.output(0)});
    if (*alpha != 1.0) attrFloat(node, "alpha", *alpha);
    if (*beta != 0.0 && *beta != 1.0) attrFloat(node, "beta", *beta);
    return;
  }
  const std::string p = scaled(n, n.add1("MatMul", {n.input(2), n.input(3)}), 1);
  n.add("Add", {scaled(n, n.input(0), 4), p}, {n.output(0)});
}

// Gemv(y, alpha, A, x, beta) = beta y + alpha A.x.
void emitGemv(NodeExport& n) {
  const std::string p = scaled(n, n.add1("MatMul", {n.input(2), n.input(3)}), 1);
  if (auto beta = n.constantScalar(4); beta && *beta == 0.0) {
    n.add("Identity", {p}, {n.output(0)});
    return;
  }
  n.add("Add", {scaled(n, n.input(0), 4), p}, {n.output(0)});
}

// Ger(A, alpha, x, y) = A + alpha outer(x, y): the outer product as a column times a row.
void emitGer(NodeExport& n) {
  const std::string column = n.add1("Unsqueeze", {n.input(2), n.ints({1})});
  const std::string row = n.add1("Unsqueeze", {n.input(3), n.ints({0})});
  n.add("Add", {n.input(0), scaled(n, n.add1("Mul", {column, row}), 1)}, {n.output(0)});
}

void convAttributes(onnx::NodeProto& node, const Conv2dParams& p, const TensorType& w) {
  if (w.isDimKnown(2) && w.isDimKnown(3))
    attrInts(node, "kernel_shape", {w.shape()[2], w.shape()[3]});
  attrInts(node, "strides", {p.stride[0], p.stride[1]});
  attrInts(node, "pads", {p.padding[0], p.padding[1], p.padding[0], p.padding[1]});
  attrInts(node, "dilations", {p.dilation[0], p.dilation[1]});
  attrInt(node, "group", p.groups);
}

void emitConv2d(NodeExport& n) {
  auto& node = n.add("Conv", {n.input(0), n.input(1)}, {n.output(0)});
  convAttributes(node, n.op<Conv2d>().params(), n.inType(1));
}

// FusedConv2d (fast_run's conv_bias_activation): Conv with its bias input, then Add of the
// residual when it has one, then Relu or Clip.
void emitFusedConv2d(NodeExport& n) {
  const auto& op = n.op<FusedConv2d>();
  const ConvActivationSpec& a = op.activation();
  const bool last = a.kind == cpu::ConvActivation::None;
  std::string conv = last && !op.residual() ? n.output(0) : n.newValue("conv");
  auto& node = n.add("Conv", {n.input(0), n.input(1), n.input(2)}, {conv});
  convAttributes(node, op.params(), n.inType(1));
  if (op.residual()) {
    const std::string sum = last ? n.output(0) : n.newValue("residual_sum");
    n.add("Add", {conv, n.input(3)}, {sum});
    conv = sum;
  }
  if (last) return;
  if (a.kind == cpu::ConvActivation::Relu) {
    n.add("Relu", {conv}, {n.output(0)});
  } else {
    const DType dt = n.outType(0).dtype();
    n.add("Clip", {conv, n.scalar(a.lo, dt), n.scalar(a.hi, dt)}, {n.output(0)});
  }
}

// Note [Conv2dGradInputs as ConvTranspose]: the gradient wrt a convolution's input is ONNX's
// ConvTranspose of gy with the same filters (whose layout (O, C/groups, KH, KW) is ConvTranspose's
// (C_in, C_out/groups, KH, KW)). Because several input sizes H give the same output size OH when
// the stride is above 1, ConvTranspose needs output_padding = H + 2p - (s (OH - 1) + d (KH - 1) +
// 1), which needs H, W and the kernel size known: constants.
void emitConv2dGradInputs(NodeExport& n) {
  const Conv2dParams& p = n.op<Conv2dGradInputs>().params();
  const TensorType& w = n.inType(0);
  const auto h = n.constantScalar(2), wd = n.constantScalar(3);
  if (!h || !wd || !w.isDimKnown(2) || !w.isDimKnown(3))
    n.unsupported("ConvTranspose needs the input size and the kernel size as constants");
  const std::array<std::int64_t, 2> size{static_cast<std::int64_t>(*h),
                                         static_cast<std::int64_t>(*wd)};
  std::vector<std::int64_t> outputPadding;
  for (int a = 0; a < 2; ++a) {
    const std::int64_t k = w.shape()[2 + a];
    const std::int64_t span = size[a] + 2 * p.padding[a] - p.dilation[a] * (k - 1) - 1;
    if (span < 0) n.unsupported("an input smaller than the dilated kernel");
    const std::int64_t outSize = span / p.stride[a] + 1;
    outputPadding.push_back(size[a] + 2 * p.padding[a] -
                            (p.stride[a] * (outSize - 1) + p.dilation[a] * (k - 1) + 1));
  }
  auto& node = n.add("ConvTranspose", {n.input(1), n.input(0)}, {n.output(0)});
  convAttributes(node, p, w);
  if (outputPadding[0] != 0 || outputPadding[1] != 0)
    attrInts(node, "output_padding", outputPadding);
}

void poolAttributes(onnx::NodeProto& node, const Pool2dParams& p) {
  attrInts(node, "kernel_shape", {p.kernel[0], p.kernel[1]});
  attrInts(node, "strides", {p.stride[0], p.stride[1]});
  attrInts(node, "pads", {p.padding[0], p.padding[1], p.padding[0], p.padding[1]});
}

void emitMaxPool2d(NodeExport& n) {
  poolAttributes(n.add("MaxPool", {n.input(0)}, {n.output(0)}), n.op<MaxPool2d>().params());
}

void emitAvgPool2d(NodeExport& n) {
  const Pool2dParams& p = n.op<AvgPool2d>().params();
  auto& node = n.add("AveragePool", {n.input(0)}, {n.output(0)});
  poolAttributes(node, p);
  if (p.includePad && (p.padding[0] != 0 || p.padding[1] != 0))
    attrInt(node, "count_include_pad", 1);
}

void emitSoftmax(NodeExport& n) {
  const auto& op = dynamic_cast<const SoftmaxFamilyOp&>(n.op());
  const std::string opType = n.op().name() == "Softmax" ? "Softmax" : "LogSoftmax";
  attrInt(n.add(opType, {n.input(0)}, {n.output(0)}), "axis", op.axisFor(n.inType(0).ndim()));
}

// A ReduceSum over one axis, keeping it (opset 13: the axes are an input).
std::string sumKeep(NodeExport& n, const std::string& x, std::int64_t axis) {
  auto& node = n.add("ReduceSum", {x, n.ints({axis})});
  attrInt(node, "keepdims", 1);
  return node.output(0);
}

// SoftmaxGrad(g, y) = y (g - sum(g y)); LogSoftmaxGrad(g, y) = g - exp(y) sum(g).
void emitSoftmaxGrad(NodeExport& n) {
  const auto& op = dynamic_cast<const SoftmaxFamilyOp&>(n.op());
  const std::int64_t axis = op.axisFor(n.inType(0).ndim());
  const std::string g = n.input(0), y = n.input(1);
  if (n.op().name() == "SoftmaxGrad") {
    n.add("Mul", {y, n.add1("Sub", {g, sumKeep(n, n.add1("Mul", {g, y}), axis)})}, {n.output(0)});
    return;
  }
  n.add("Sub", {g, n.add1("Mul", {n.add1("Exp", {y}), sumKeep(n, g, axis)})}, {n.output(0)});
}

// The per-statistic inputs have x's rank with the reduced axes of size 1. ONNX's
// BatchNormalization normalizes over every axis but 1 with (C,) statistics: when the axes are
// those, each statistic is squeezed to (C,); otherwise the normalization is written out, (x - mean)
// / sqrt(var + eps) * scale + shift.
void emitBatchNormInference(NodeExport& n) {
  const auto& op = n.op<BatchNormInference>();
  const int ndim = n.inType(0).ndim();
  std::vector<std::int64_t> channelLayout;
  for (int a = 0; a < ndim; ++a)
    if (a != 1) channelLayout.push_back(a);
  const std::vector<std::int64_t> axes(op.axes().begin(), op.axes().end());
  const DType dtype = n.inType(0).dtype();
  if (ndim >= 2 && axes == channelLayout) {
    std::vector<std::string> inputs{n.input(0)};
    const std::string squeezeAxes = n.ints(axes);
    for (int i = 1; i <= 4; ++i)
      inputs.push_back(n.add1("Squeeze", {n.input(i, dtype), squeezeAxes}));
    attrFloat(n.add("BatchNormalization", inputs, {n.output(0)}), "epsilon", op.epsilon());
    return;
  }
  const std::string std_ =
      n.add1("Sqrt", {n.add1("Add", {n.input(4, dtype), n.scalar(op.epsilon(), dtype)})});
  const std::string xhat = n.add1("Div", {n.add1("Sub", {n.input(0), n.input(3, dtype)}), std_});
  n.add("Add", {n.add1("Mul", {xhat, n.input(1, dtype)}), n.input(2, dtype)}, {n.output(0)});
}

// BatchNormTrain: the batch statistics (biased variance) with ReduceMean, then the normalization.
void emitBatchNormTrain(NodeExport& n) {
  const auto& op = n.op<BatchNormTrain>();
  const DType dtype = n.inType(0).dtype();
  const std::vector<std::int64_t> axes(op.axes().begin(), op.axes().end());
  auto mean = [&](const std::string& v, const std::string& out) {
    auto& node = n.add("ReduceMean", {v},
                       out.empty() ? std::vector<std::string>{} : std::vector<std::string>{out});
    attrInts(node, "axes", axes);
    attrInt(node, "keepdims", 1);
    return node.output(0);
  };
  const std::string x = n.input(0);
  const std::string mu = mean(x, n.output(1));
  const std::string centered = n.add1("Sub", {x, mu});
  const std::string var = mean(n.add1("Mul", {centered, centered}), n.output(2));
  const std::string std_ = n.add1("Sqrt", {n.add1("Add", {var, n.scalar(op.epsilon(), dtype)})});
  const std::string xhat = n.add1("Div", {centered, std_});
  n.add("Add", {n.add1("Mul", {xhat, n.input(1)}), n.input(2)}, {n.output(0)});
}

// one_hot(t, depth) as Equal(t[..., None], range(depth)), a bool mask: the standard ops every
// runtime and the importer have (ONNX's OneHot would wrap negative targets). depth: a 0-d int64.
std::string oneHotMask(NodeExport& n, const std::string& targets, DType targetDType,
                       const std::string& depth) {
  const std::string zero = n.tensor(Tensor::scalar(DType::Int64, 0));
  const std::string one = n.tensor(Tensor::scalar(DType::Int64, 1));
  const std::string classes = n.add1("Range", {zero, depth, one});
  const std::string column =
      n.add1("Unsqueeze", {n.cast(targets, targetDType, DType::Int64), n.ints({-1})});
  return n.add1("Equal", {column, classes});
}

void emitOneHot(NodeExport& n) {
  const std::string mask = oneHotMask(n, n.input(0), n.inType(0).dtype(), n.input(1, DType::Int64));
  attrInt(n.add("Cast", {mask}, {n.output(0)}), "to",
          onnx_import::dtypeToOnnx(n.op<OneHot>().dtype()));
}

// The class count of a 2-d (N, K) value: a 0-d int64.
std::string classCount(NodeExport& n, const std::string& value) {
  return n.add1("Gather", {n.add1("Shape", {value}), n.tensor(Tensor::scalar(DType::Int64, 1))});
}

// The loss -sum_k q[i, k] logp[i, k] for distribution targets q; for class targets
// -logp[i, t_i], picked with Where so that a -inf elsewhere in the row does not give NaN.
void negativeLogLikelihood(NodeExport& n, const std::string& logp, int targets,
                           const std::string& result) {
  const DType dtype = n.outType(0).dtype();
  std::string terms;
  if (n.inType(targets).ndim() == 1) {
    const std::string mask =
        oneHotMask(n, n.input(targets), n.inType(targets).dtype(), classCount(n, logp));
    terms = n.add1("Where", {mask, logp, n.scalar(0, dtype)});
  } else {
    terms = n.add1("Mul", {n.input(targets, dtype), logp});
  }
  auto& sum = n.add("ReduceSum", {terms, n.ints({1})});
  attrInt(sum, "keepdims", 0);
  n.add("Neg", {sum.output(0)}, {result});
}

void emitCategoricalCrossEntropy(NodeExport& n) {
  negativeLogLikelihood(n, n.add1("Log", {n.input(0)}), 1, n.output(0));
}

void emitSoftmaxCrossEntropyWithLogits(NodeExport& n) {
  auto& logp = n.add("LogSoftmax", {n.input(0)});
  attrInt(logp, "axis", 1);
  negativeLogLikelihood(n, logp.output(0), 1, n.output(0));
  attrInt(n.add("Softmax", {n.input(0)}, {n.output(1)}), "axis", 1);
}

// SoftmaxCrossEntropyGrad(g, softmax, t) = g_i (softmax[i] sum_k q[i, k] - q[i]).
void emitSoftmaxCrossEntropyGrad(NodeExport& n) {
  const DType dtype = n.inType(1).dtype();
  std::string q;
  if (n.inType(2).ndim() == 1) {
    q = n.cast(oneHotMask(n, n.input(2), n.inType(2).dtype(), classCount(n, n.input(1))),
               DType::Bool, dtype);
  } else {
    q = n.input(2, dtype);
  }
  const std::string diff = n.add1("Sub", {n.add1("Mul", {n.input(1), sumKeep(n, q, 1)}), q});
  n.add("Mul", {n.add1("Unsqueeze", {n.input(0), n.ints({1})}), diff}, {n.output(0)});
}

}  // namespace

void registerNnEmitters(EmitterTable& table) {
  table.add("Dot", &emitDot);
  table.add("Gemm", &emitGemm);
  table.add("Gemv", &emitGemv);
  table.add("Ger", &emitGer);
  table.add("Conv2d", &emitConv2d);
  table.add("FusedConv2d", &emitFusedConv2d);
  table.add("Conv2dGradInputs", &emitConv2dGradInputs);
  table.add("MaxPool2d", &emitMaxPool2d);
  table.add("AvgPool2d", &emitAvgPool2d);
  table.add("Softmax", &emitSoftmax);
  table.add("LogSoftmax", &emitSoftmax);
  table.add("SoftmaxGrad", &emitSoftmaxGrad);
  table.add("LogSoftmaxGrad", &emitSoftmaxGrad);
  table.add("BatchNormInference", &emitBatchNormInference);
  table.add("BatchNormTrain", &emitBatchNormTrain);
  table.add("OneHot", &emitOneHot);
  table.add("CategoricalCrossEntropy", &emitCategoricalCrossEntropy);
  table.add("SoftmaxCrossEntropyWithLogits", &emitSoftmaxCrossEntropyWithLogits);
  table.add("SoftmaxCrossEntropyGrad", &emitSoftmaxCrossEntropyGrad);
}

}  // namespace tscope::engine::io::onnx_export

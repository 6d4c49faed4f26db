// ONNX's elementwise arithmetic, comparisons, logic, Where, Cast, Identity and Dropout. Each maps
// to one Elemwise node where the engine has the scalar op (numpy broadcasting, as ONNX's
// multidirectional broadcasting), to a short composition otherwise (integer Div, Mean).
// The activations live in onnx_ops_math_activation.cpp, the reductions in onnx_ops_math_reduce.cpp.

#include "engine/io/onnx/onnx_ops_common.h"
#include "engine/ops/shape/shape.h"

namespace tscope::engine::io::onnx_import {

namespace {

// Note [Legacy broadcast]: before opset 7, the binary ops broadcast only when the attribute
// broadcast=1, and then B's shape matches a contiguous run of A's dimensions: the trailing ones
// (numpy's right alignment) or, with the attribute `axis`, those starting at axis. A (2, 3, 4, 5)
// with B (3, 4) and axis=1 means B lines up with A's axes 1 and 2, so B gets trailing size-1 axes
// and numpy broadcasting does the rest. broadcast=0 required equal shapes, a case numpy
// broadcasting covers as well.
VarPtr legacyAlignedB(const NodeContext& ctx, const VarPtr& b) {
  if (ctx.opset() >= 7 || ctx.attrInt("broadcast", 0) == 0 || !ctx.hasAttr("axis")) return b;
  const int ra = ctx.rank(0);
  const int rb = b->type().ndim();
  const int axis = ctx.axis(ctx.attrInt("axis"), ra);
  if (axis + rb > ra)
    ctx.fail("expected B (rank " + std::to_string(rb) + ") to fit A (rank " + std::to_string(ra) +
             ") from broadcast axis " + std::to_string(axis) +
             ", found it runs past A's last axis");
  std::vector<int> order;
  for (int i = 0; i < rb; ++i) order.push_back(i);
  order.insert(order.end(), static_cast<std::size_t>(ra - axis - rb), DimShuffle::kNewAxis);
  return dimshuffle(b, order);
}

// The two operands of a binary op, B aligned by the legacy rule where it applies.
std::pair<VarPtr, VarPtr> binaryOperands(const NodeContext& ctx) {
  if (ctx.nInputs() != 2) ctx.fail("expected 2 inputs, found " + std::to_string(ctx.nInputs()));
  return {ctx.input(0), legacyAlignedB(ctx, ctx.input(1))};
}

template <ScalarOp Op>
std::vector<VarPtr> convertBinary(NodeContext& ctx) {
  auto [a, b] = binaryOperands(ctx);
  return {elemwise(Op, {a, b})};
}

template <ScalarOp Op>
std::vector<VarPtr> convertUnary(NodeContext& ctx) {
  return {elemwise(Op, {ctx.input(0)})};
}

// Note [Integer Div truncates]: ONNX's integer Div is C's, rounding towards zero (-7 / 2 = -3);
// the engine's int_div floors as numpy does (-7 // 2 = -4). For signed integers the quotient is
// built as sign(a) * sign(b) * (|a| // |b|); unsigned integers floor and truncate alike.
VarPtr truncatedDiv(const VarPtr& a, const VarPtr& b) {
  const DType dtype = promoteTypes(a->type().dtype(), b->type().dtype());
  if (!isSigned(dtype)) return intDiv(a, b);
  return mul(mul(sign(a), sign(b)), intDiv(engine::abs(a), engine::abs(b)));
}

std::vector<VarPtr> convertDiv(NodeContext& ctx) {
  auto [a, b] = binaryOperands(ctx);
  const DType dtype = promoteTypes(a->type().dtype(), b->type().dtype());
  if (isFloat(dtype)) return {trueDiv(a, b)};
  return {truncatedDiv(a, b)};
}

// ONNX's Mod: fmod=0 takes the divisor's sign (numpy's mod, the engine's), fmod=1 the dividend's
// (C's %): a - b * trunc(a / b), the quotient truncated as in Note [Integer Div truncates].
//
// Note [C fmod of floats]: fmod(a, b) = sign(a) * mod(|a|, |b|), exactly: with both operands
// non-negative numpy's mod is C's fmod (no sign correction applies), fmod's magnitude does not
// depend on the signs, and its sign is a's; multiplying by sign(a) (+-1, or a itself for +-0 and
// NaN) is exact. The special cases agree too: fmod(+-inf, b), fmod(a, 0) and NaN operands give
// NaN, fmod(a, +-inf) = a, fmod(-0, b) = -0. torch.fmod of floats exports as Mod fmod=1, and the
// exporter writes the engine's float mod as Mod fmod=1 plus a correction.
std::vector<VarPtr> convertMod(NodeContext& ctx) {
  auto [a, b] = binaryOperands(ctx);
  const DType dtype = promoteTypes(a->type().dtype(), b->type().dtype());
  const bool cStyle = ctx.attrInt("fmod", 0) != 0;
  if (isFloat(dtype)) {
    if (!cStyle)
      ctx.fail("expected fmod=1 for floating-point inputs (ONNX requires it), found fmod=0");
    return {mul(sign(a), mod(abs(a), abs(b)))};
  }
  if (!cStyle) return {mod(a, b)};
  return {sub(a, mul(b, truncatedDiv(a, b)))};
}

std::vector<VarPtr> convertReciprocal(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  return {trueDiv(scalarOf(1.0, x->type().dtype()), x)};
}

// Pow's exponent may have another dtype than the base (opset 12+); the result has the base's.
std::vector<VarPtr> convertPow(NodeContext& ctx) {
  auto [a, b] = binaryOperands(ctx);
  const DType base = a->type().dtype();
  if (isFloat(base) && b->type().dtype() != base) b = cast(b, base);
  VarPtr out = engine::pow(a, b);
  if (out->type().dtype() != base) out = cast(out, base);
  return {out};
}

// Min, Max, Sum: one n-ary Elemwise (a single input is copied through).
template <ScalarOp Op>
std::vector<VarPtr> convertVariadic(NodeContext& ctx) {
  std::vector<VarPtr> inputs;
  for (int i = 0; i < ctx.nInputs(); ++i) inputs.push_back(ctx.input(i));
  if (inputs.empty()) ctx.fail("expected at least one input, found none");
  if (inputs.size() == 1) return {identity(inputs[0])};
  return {elemwise(Op, std::move(inputs))};
}

std::vector<VarPtr> convertMean(NodeContext& ctx) {
  const VarPtr total = convertVariadic<ScalarOp::Add>(ctx)[0];
  if (ctx.nInputs() == 1) return {total};
  return {trueDiv(total, scalarOf(ctx.nInputs(), total->type().dtype()))};
}

// Clip's bounds are the attributes min/max before opset 11 and optional inputs from it on; an
// absent bound leaves that side open.
std::vector<VarPtr> convertClip(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  const DType dtype = x->type().dtype();
  VarPtr lo, hi;
  if (ctx.opset() < 11) {
    if (ctx.hasAttr("min")) lo = scalarOf(ctx.attrFloat("min"), dtype);
    if (ctx.hasAttr("max")) hi = scalarOf(ctx.attrFloat("max"), dtype);
  } else {
    if (ctx.hasInput(1)) lo = ctx.input(1);
    if (ctx.hasInput(2)) hi = ctx.input(2);
    for (const VarPtr& bound : {lo, hi})
      if (bound && bound->type().ndim() != 0)
        ctx.fail("expected the bounds to be scalars (0-d tensors), found " + bound->type().str());
  }
  if (lo && hi) return {clip(x, lo, hi)};
  if (lo) return {maximum(x, lo)};
  if (hi) return {minimum(x, hi)};
  return {identity(x)};
}

std::vector<VarPtr> convertWhere(NodeContext& ctx) {
  const VarPtr& cond = ctx.input(0);
  if (cond->type().dtype() != DType::Bool)
    ctx.fail("expected a bool condition, found " + cond->type().str());
  return {where(cond, ctx.input(1), ctx.input(2))};
}

std::vector<VarPtr> convertCast(NodeContext& ctx) {
  const auto to = static_cast<int>(ctx.attrInt("to"));
  const std::optional<DType> dtype = dtypeFromOnnx(to);
  if (!dtype) ctx.unsupported("Cast to " + onnxTypeName(to));
  return {cast(ctx.input(0), *dtype)};
}

std::vector<VarPtr> convertIdentity(NodeContext& ctx) {
  return {identity(ctx.input(0))};
}

// Note [Dropout at inference]: Tensorscope runs models for inference, where Dropout passes its
// input through (ONNX Runtime ignores opset 6's is_test likewise). From opset 12 a training_mode
// input may ask for training behaviour: a constant false (or a ratio of 0) is still the identity,
// anything else is refused. The optional mask is all ones: bool from opset 10, the input's dtype
// before.
std::vector<VarPtr> convertDropout(NodeContext& ctx) {
  const VarPtr& x = ctx.input(0);
  if (ctx.opset() >= 12 && ctx.hasInput(2)) {
    const std::optional<Tensor> training = ctx.constantInput(2);
    if (!training) ctx.needsConstant(2, "Dropout's training_mode");
    if (training->numel() != 1)
      ctx.fail("expected a scalar training_mode, found " + std::to_string(training->numel()) +
               " values");
    const std::optional<Tensor> ratio =
        ctx.hasInput(1) ? ctx.constantInput(1) : Tensor::scalar(DType::Float32, 0.5);
    if (training->item() != 0 && !(ratio && ratio->numel() == 1 && ratio->item() == 0))
      ctx.unsupported("Dropout in training mode (training_mode=true)");
  }
  std::vector<VarPtr> out{identity(x)};
  if (ctx.nOutputs() > 1 && ctx.wantsOutput(1)) {
    const DType maskType = ctx.opset() >= 10 ? DType::Bool : x->type().dtype();
    out.push_back(ones(shapeOf(x), maskType));
  }
  return out;
}

}  // namespace

void registerElementwiseConverters(ConverterTable& table) {
  using S = ScalarOp;
  table.add("Add", &convertBinary<S::Add>);
  table.add("Sub", &convertBinary<S::Sub>);
  table.add("Mul", &convertBinary<S::Mul>);
  table.add("Div", &convertDiv);
  table.add("Mod", &convertMod);
  table.add("Pow", &convertPow);
  table.add("Reciprocal", &convertReciprocal);
  table.add("Equal", &convertBinary<S::Eq>);
  table.add("Less", &convertBinary<S::Lt>);
  table.add("LessOrEqual", &convertBinary<S::Le>);
  table.add("Greater", &convertBinary<S::Gt>);
  table.add("GreaterOrEqual", &convertBinary<S::Ge>);
  table.add("And", &convertBinary<S::And>);
  table.add("Or", &convertBinary<S::Or>);
  table.add("Xor", &convertBinary<S::Xor>);
  table.add("Not", &convertUnary<S::Not>);
  table.add("Neg", &convertUnary<S::Neg>);
  table.add("Abs", &convertUnary<S::Abs>);
  table.add("Sign", &convertUnary<S::Sign>);
  table.add("Exp", &convertUnary<S::Exp>);
  table.add("Log", &convertUnary<S::Log>);
  table.add("Sqrt", &convertUnary<S::Sqrt>);
  table.add("Erf", &convertUnary<S::Erf>);
  table.add("Tanh", &convertUnary<S::Tanh>);
  table.add("Sigmoid", &convertUnary<S::Sigmoid>);
  table.add("Softplus", &convertUnary<S::Softplus>);
  table.add("Relu", &convertUnary<S::Relu>);
  table.add("Floor", &convertUnary<S::Floor>);
  table.add("Ceil", &convertUnary<S::Ceil>);
  table.add("Round", &convertUnary<S::Round>);
  table.add("Sin", &convertUnary<S::Sin>);
  table.add("Cos", &convertUnary<S::Cos>);
  table.add("Min", &convertVariadic<S::Minimum>);
  table.add("Max", &convertVariadic<S::Maximum>);
  table.add("Sum", &convertVariadic<S::Add>);
  table.add("Mean", &convertMean);
  table.add("Clip", &convertClip);
  table.add("Where", &convertWhere);
  table.add("Cast", &convertCast);
  table.add("Identity", &convertIdentity);
  table.add("Dropout", &convertDropout);
}

void registerMathConverters(ConverterTable& table) {
  registerElementwiseConverters(table);
  registerActivationConverters(table);
  registerReduceConverters(table);
  registerEinsumConverters(table);
}

}  // namespace tscope::engine::io::onnx_import

#include "engine/ops/basic.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/tensor/tensor.h"

#include <cmath>

namespace tscope::engine {

VarPtr constant(double value, DType dtype, Site site) {
  return Constant::create(Tensor::scalar(dtype, value), {}, site);
}

VarPtr constant(const Tensor& value, Site site) {
  return Constant::create(value, {}, site);
}

VarPtr scalarLike(double value, const VarPtr& like, Site site) {
  const DType d = like->type().dtype();
  if (isFloat(d)) return constant(value, d, site);
  const bool integral = std::isfinite(value) && std::nearbyint(value) == value;
  if (isInteger(d) && integral) return constant(value, d, site);
  if (d == DType::Bool && (value == 0.0 || value == 1.0)) return constant(value, DType::Bool, site);
  return constant(value, integral ? DType::Int64 : DType::Float64, site);
}

VarPtr constantInt(std::int64_t value, Site site) {
  return constant(static_cast<double>(value), DType::Int64, site);
}

std::optional<std::int64_t> constantIntValue(const VarPtr& v) {
  if (!v || v->kind() != Variable::Kind::Constant || v->type().ndim() != 0) return std::nullopt;
  const Tensor& t = static_cast<const Constant&>(*v).value();
  if (!isInteger(t.dtype())) return std::nullopt;
  return static_cast<std::int64_t>(t.item());
}

#define TSCOPE_BINARY(fn, OP)                              \
  VarPtr fn(const VarPtr& a, const VarPtr& b, Site site) { \
    return elemwise(ScalarOp::OP, {a, b}, site);           \
  }
#define TSCOPE_UNARY(fn, OP)                  \
  VarPtr fn(const VarPtr& x, Site site) {     \
    return elemwise(ScalarOp::OP, {x}, site); \
  }
TSCOPE_BINARY(add, Add)
TSCOPE_BINARY(sub, Sub)
TSCOPE_BINARY(mul, Mul)
TSCOPE_BINARY(trueDiv, TrueDiv)
TSCOPE_BINARY(intDiv, IntDiv)
TSCOPE_BINARY(mod, Mod)
TSCOPE_BINARY(pow, Pow)
TSCOPE_BINARY(minimum, Minimum)
TSCOPE_BINARY(maximum, Maximum)
TSCOPE_BINARY(eq, Eq)
TSCOPE_BINARY(neq, Neq)
TSCOPE_BINARY(lt, Lt)
TSCOPE_BINARY(le, Le)
TSCOPE_BINARY(gt, Gt)
TSCOPE_BINARY(ge, Ge)
TSCOPE_BINARY(logicalAnd, And)
TSCOPE_BINARY(logicalOr, Or)
TSCOPE_BINARY(logicalXor, Xor)
TSCOPE_UNARY(neg, Neg)
TSCOPE_UNARY(abs, Abs)
TSCOPE_UNARY(sign, Sign)
TSCOPE_UNARY(sqr, Sqr)
TSCOPE_UNARY(exp, Exp)
TSCOPE_UNARY(expm1, Expm1)
TSCOPE_UNARY(log, Log)
TSCOPE_UNARY(log1p, Log1p)
TSCOPE_UNARY(log2, Log2)
TSCOPE_UNARY(log10, Log10)
TSCOPE_UNARY(sqrt, Sqrt)
TSCOPE_UNARY(tanh, Tanh)
TSCOPE_UNARY(sigmoid, Sigmoid)
TSCOPE_UNARY(softplus, Softplus)
TSCOPE_UNARY(relu, Relu)
TSCOPE_UNARY(sin, Sin)
TSCOPE_UNARY(cos, Cos)
TSCOPE_UNARY(erf, Erf)
TSCOPE_UNARY(floor, Floor)
TSCOPE_UNARY(ceil, Ceil)
TSCOPE_UNARY(round, Round)
TSCOPE_UNARY(logicalNot, Not)
TSCOPE_UNARY(identity, Identity)
#undef TSCOPE_BINARY
#undef TSCOPE_UNARY

VarPtr clip(const VarPtr& x, const VarPtr& lo, const VarPtr& hi, Site site) {
  return elemwise(ScalarOp::Clip, {x, lo, hi}, site);
}
VarPtr where(const VarPtr& cond, const VarPtr& a, const VarPtr& b, Site site) {
  return elemwise(ScalarOp::Switch, {cond, a, b}, site);
}
VarPtr zerosLike(const VarPtr& x, Site site) {
  return elemwise(ScalarOp::Second, {x, constant(0.0, x->type().dtype(), site)}, site);
}
VarPtr onesLike(const VarPtr& x, Site site) {
  return elemwise(ScalarOp::Second, {x, constant(1.0, x->type().dtype(), site)}, site);
}

VarPtr operator+(const Operand& a, const Operand& b) {
  return add(a.var, b.var, a.site);
}
VarPtr operator-(const Operand& a, const Operand& b) {
  return sub(a.var, b.var, a.site);
}
VarPtr operator*(const Operand& a, const Operand& b) {
  return mul(a.var, b.var, a.site);
}
VarPtr operator/(const Operand& a, const Operand& b) {
  return trueDiv(a.var, b.var, a.site);
}
VarPtr operator-(const Operand& x) {
  return neg(x.var, x.site);
}
VarPtr operator+(const Operand& a, double b) {
  return add(a.var, scalarLike(b, a.var, a.site), a.site);
}
VarPtr operator-(const Operand& a, double b) {
  return sub(a.var, scalarLike(b, a.var, a.site), a.site);
}
VarPtr operator*(const Operand& a, double b) {
  return mul(a.var, scalarLike(b, a.var, a.site), a.site);
}
VarPtr operator/(const Operand& a, double b) {
  return trueDiv(a.var, scalarLike(b, a.var, a.site), a.site);
}
VarPtr operator+(double a, const Operand& b) {
  return add(scalarLike(a, b.var, b.site), b.var, b.site);
}
VarPtr operator-(double a, const Operand& b) {
  return sub(scalarLike(a, b.var, b.site), b.var, b.site);
}
VarPtr operator*(double a, const Operand& b) {
  return mul(scalarLike(a, b.var, b.site), b.var, b.site);
}
VarPtr operator/(double a, const Operand& b) {
  return trueDiv(scalarLike(a, b.var, b.site), b.var, b.site);
}

// --- ShapeI --------------------------------------------------------------------------------------

std::vector<TensorType> ShapeI::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  if (m_axis < 0 || m_axis >= inputs[0]->type().ndim())
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  return {TensorType(DType::Int64, {})};
}

void ShapeI::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  Tensor& out = reuseOrAllocate(outputs[0], DType::Int64, {});
  *out.data<std::int64_t>() = inputs[0]->shape().at(static_cast<std::size_t>(m_axis));
}

std::vector<ShapeExpr> ShapeI::inferShape(const Apply&, std::span<const ShapeExpr>) const {
  return {ShapeExpr{}};
}

std::vector<Grad> ShapeI::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> ShapeI::pushforward(const Apply&,
                                                       std::span<const VarPtr>) const {
  return std::vector<VarPtr>{nullptr};
}

OpPtr ShapeI::fromProps(const nlohmann::json& props) {
  if (!props.contains("i") || !props["i"].is_number_integer())
    throw std::invalid_argument("ShapeI: props need \"i\" (an axis index)");
  const auto i = props["i"].get<std::int64_t>();
  if (i < 0 || i > 64)
    throw std::invalid_argument("ShapeI: axis " + std::to_string(i) + " is out of range 0..64");
  return std::make_shared<ShapeI>(static_cast<int>(i));
}

VarPtr shapeI(const VarPtr& x, int axis, Site site) {
  const auto& shape = x->type().shape();
  if (axis < 0 || axis >= static_cast<int>(shape.size()))
    throw TypeError("shapeI: axis " + std::to_string(axis) + " is out of range for " +
                    x->type().str());
  if (shape[static_cast<std::size_t>(axis)] != kUnknownDim)
    return constantInt(shape[static_cast<std::size_t>(axis)], site);
  return std::make_shared<ShapeI>(axis)->operator()({x}, site);
}

ShapeExpr shapeOf(const VarPtr& x, Site site) {
  ShapeExpr out;
  for (int i = 0; i < x->type().ndim(); ++i) out.push_back(shapeI(x, i, site));
  return out;
}

std::vector<std::int64_t> staticShape(const ShapeExpr& shape) {
  std::vector<std::int64_t> out;
  for (const VarPtr& d : shape) out.push_back(constantIntValue(d).value_or(kUnknownDim));
  return out;
}

void registerBasicOps(OpRegistry& registry) {
  registry.add("ShapeI", &ShapeI::fromProps);
}

}  // namespace tscope::engine

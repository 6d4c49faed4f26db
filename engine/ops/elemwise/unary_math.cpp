#include "engine/ops/elemwise/unary_math.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/ops/cost_common.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <array>
#include <cmath>

namespace tscope::engine {

namespace {

constexpr std::array<std::string_view, 9> kNames = {"tan",  "asin",  "acos",  "atan", "sinh",
                                                    "cosh", "asinh", "acosh", "atanh"};

template <class T>
T apply(UnaryFn fn, T x) {
  switch (fn) {
    case UnaryFn::Tan:
      return std::tan(x);
    case UnaryFn::Asin:
      return std::asin(x);
    case UnaryFn::Acos:
      return std::acos(x);
    case UnaryFn::Atan:
      return std::atan(x);
    case UnaryFn::Sinh:
      return std::sinh(x);
    case UnaryFn::Cosh:
      return std::cosh(x);
    case UnaryFn::Asinh:
      return std::asinh(x);
    case UnaryFn::Acosh:
      return std::acosh(x);
    case UnaryFn::Atanh:
      return std::atanh(x);
  }
  return x;
}

// One switch per call, then a plain loop (no per-element dispatch on the dtype).
template <class T, UnaryFn Fn>
void loop(const T* in, T* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = apply(Fn, in[i]);
}

template <class T>
void run(UnaryFn fn, const T* in, T* out, std::int64_t n) {
  switch (fn) {
    case UnaryFn::Tan:
      return loop<T, UnaryFn::Tan>(in, out, n);
    case UnaryFn::Asin:
      return loop<T, UnaryFn::Asin>(in, out, n);
    case UnaryFn::Acos:
      return loop<T, UnaryFn::Acos>(in, out, n);
    case UnaryFn::Atan:
      return loop<T, UnaryFn::Atan>(in, out, n);
    case UnaryFn::Sinh:
      return loop<T, UnaryFn::Sinh>(in, out, n);
    case UnaryFn::Cosh:
      return loop<T, UnaryFn::Cosh>(in, out, n);
    case UnaryFn::Asinh:
      return loop<T, UnaryFn::Asinh>(in, out, n);
    case UnaryFn::Acosh:
      return loop<T, UnaryFn::Acosh>(in, out, n);
    case UnaryFn::Atanh:
      return loop<T, UnaryFn::Atanh>(in, out, n);
  }
}

}  // namespace

std::string_view unaryFnName(UnaryFn fn) {
  return kNames[static_cast<std::size_t>(fn)];
}

std::optional<UnaryFn> unaryFnFromName(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<UnaryFn>(i);
  return std::nullopt;
}

nlohmann::json UnaryMath::props() const {
  return {{"fn", std::string(unaryFnName(m_fn))}};
}

std::vector<TensorType> UnaryMath::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (!isFloat(t.dtype())) throwInputError(inputs, 0, "a float16, float32 or float64 tensor");
  return {t};
}

void UnaryMath::perform(const Apply&, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), x.shape());
  const std::int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::Float32:
      return run(m_fn, x.data<float>(), out.data<float>(), n);
    case DType::Float64:
      return run(m_fn, x.data<double>(), out.data<double>(), n);
    case DType::Float16: {
      // Computed in float, rounded once to half.
      const Half* in = x.data<Half>();
      Half* o = out.data<Half>();
      for (std::int64_t i = 0; i < n; ++i) o[i] = floatToHalf(apply(m_fn, halfToFloat(in[i])));
      return;
    }
    default:
      throw TypeError(str() + ": expected a float tensor, found " +
                      std::string(dtypeName(x.dtype())));
  }
}

std::vector<ShapeExpr> UnaryMath::inferShape(const Apply&,
                                             std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

OpCost UnaryMath::cost(const Apply& node, std::span<const Shape> in) const {
  const auto out = cost::outputShapes(node, in);
  if (!out) return {};
  return cost::movement(node, in, *out, 1);
}

std::vector<Grad> UnaryMath::pullback(const Apply& node,
                                      std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const VarPtr& g = outputGrads[0];
  auto one = [&] { return scalarLike(1.0, x); };
  VarPtr d;
  switch (m_fn) {
    case UnaryFn::Tan:  // 1 + tan^2
      d = add(one(), sqr(unaryMath(UnaryFn::Tan, x)));
      break;
    case UnaryFn::Asin:  // 1 / sqrt(1 - x^2)
      d = trueDiv(one(), sqrt(sub(one(), sqr(x))));
      break;
    case UnaryFn::Acos:
      d = neg(trueDiv(one(), sqrt(sub(one(), sqr(x)))));
      break;
    case UnaryFn::Atan:  // 1 / (1 + x^2)
      d = trueDiv(one(), add(one(), sqr(x)));
      break;
    case UnaryFn::Sinh:
      d = unaryMath(UnaryFn::Cosh, x);
      break;
    case UnaryFn::Cosh:
      d = unaryMath(UnaryFn::Sinh, x);
      break;
    case UnaryFn::Asinh:  // 1 / sqrt(x^2 + 1)
      d = trueDiv(one(), sqrt(add(sqr(x), one())));
      break;
    case UnaryFn::Acosh:  // 1 / sqrt((x - 1)(x + 1))
      d = trueDiv(one(), sqrt(mul(sub(x, one()), add(x, one()))));
      break;
    case UnaryFn::Atanh:  // 1 / (1 - x^2)
      d = trueDiv(one(), sub(one(), sqr(x)));
      break;
  }
  return {Grad(mul(g, d))};
}

OpPtr UnaryMath::fromProps(const nlohmann::json& props) {
  shape_detail::propKeys(props, "UnaryMath", {"fn"});
  if (!props.contains("fn") || !props["fn"].is_string())
    throw std::invalid_argument("UnaryMath: expected the prop 'fn' (a string such as \"atan\")");
  const auto fn = unaryFnFromName(props["fn"].get<std::string>());
  if (!fn)
    throw std::invalid_argument(
        "UnaryMath: expected 'fn' to be one of tan, asin, acos, atan, "
        "sinh, cosh, asinh, acosh, atanh, found '" +
        props["fn"].get<std::string>() + "'");
  return std::make_shared<UnaryMath>(*fn);
}

VarPtr unaryMath(UnaryFn fn, const VarPtr& x, std::source_location site) {
  return (*std::make_shared<UnaryMath>(fn))({x}, site);
}

void registerUnaryMathOps(OpRegistry& registry) {
  registry.add("UnaryMath", &UnaryMath::fromProps);
}

}  // namespace tscope::engine

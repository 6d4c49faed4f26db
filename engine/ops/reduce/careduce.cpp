#include "engine/ops/reduce/careduce.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/tensor/tensor.h"

#include <algorithm>

namespace tscope::engine {

namespace {

bool isReduceScalar(ScalarOp op) {
  switch (op) {
    case ScalarOp::Add:
    case ScalarOp::Mul:
    case ScalarOp::Maximum:
    case ScalarOp::Minimum:
    case ScalarOp::And:
    case ScalarOp::Or:
      return true;
    default:
      return false;
  }
}

// The name numpy users know the reduction by.
std::string friendlyName(ScalarOp op) {
  switch (op) {
    case ScalarOp::Add:
      return "Sum";
    case ScalarOp::Mul:
      return "Prod";
    case ScalarOp::Maximum:
      return "Max";
    case ScalarOp::Minimum:
      return "Min";
    case ScalarOp::And:
      return "All";
    case ScalarOp::Or:
      return "Any";
    default:
      return "CAReduce";
  }
}

bool isAccDtype(DType d) {
  return d == DType::Int64 || d == DType::Float32 || d == DType::Float64;
}

// Pullbacks reach the node they differentiate through a const reference; output() only makes an
// aliasing handle and changes nothing.
VarPtr outputOf(const Apply& node) {
  return const_cast<Apply&>(node).output(0);
}

}  // namespace

CAReduce::CAReduce(ScalarOp scalar, std::optional<std::vector<int>> axes,
                   std::optional<DType> dtype, std::optional<DType> accDtype)
    : m_scalar(scalar), m_axes(std::move(axes)), m_dtype(dtype), m_accDtype(accDtype) {
  const std::string op = "CAReduce{" + std::string(scalarOpInfo(scalar).name) + "}";
  if (!isReduceScalar(scalar))
    throw std::invalid_argument(
        "CAReduce: scalar_op \"" + std::string(scalarOpInfo(scalar).name) +
        "\" is not a reduction (expected add, mul, maximum, minimum, and or or)");
  if (m_axes) {
    std::vector<int>& a = *m_axes;
    std::sort(a.begin(), a.end());
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] < 0 || a[i] >= 64)
        throw std::invalid_argument(op + ": axis " + std::to_string(a[i]) +
                                    " is out of range 0..63");
      if (i > 0 && a[i] == a[i - 1])
        throw std::invalid_argument(op + ": axis " + std::to_string(a[i]) + " is given twice");
    }
    if (a.empty()) m_axes.reset();  // Note [Empty axes mean all]
  }
  const bool arithmetic = scalar == ScalarOp::Add || scalar == ScalarOp::Mul;
  if ((m_dtype || m_accDtype) && !arithmetic)
    throw std::invalid_argument(op + ": \"dtype\" and \"acc_dtype\" apply to add and mul only");
  if (m_dtype && *m_dtype == DType::Bool)
    throw std::invalid_argument(op + ": \"dtype\" cannot be bool");
  if (m_accDtype && !isAccDtype(*m_accDtype))
    throw std::invalid_argument(op + ": \"acc_dtype\" must be int64, float32 or float64, found " +
                                std::string(dtypeName(*m_accDtype)));
}

std::vector<int> CAReduce::axesFor(int ndim) const {
  if (m_axes) return *m_axes;
  std::vector<int> all(static_cast<std::size_t>(ndim));
  for (int i = 0; i < ndim; ++i) all[static_cast<std::size_t>(i)] = i;
  return all;
}

bool CAReduce::reduces(int axis) const {
  return !m_axes || std::binary_search(m_axes->begin(), m_axes->end(), axis);
}

DType CAReduce::outputDType(DType input) const {
  switch (m_scalar) {
    case ScalarOp::Add:
    case ScalarOp::Mul:
      if (m_dtype) return *m_dtype;
      return isFloat(input) ? input : DType::Int64;
    case ScalarOp::And:
    case ScalarOp::Or:
      return DType::Bool;
    default:
      return input;
  }
}

DType CAReduce::accDType(DType input) const {
  switch (m_scalar) {
    case ScalarOp::Add:
    case ScalarOp::Mul: {
      if (m_accDtype) return *m_accDtype;
      const DType out = outputDType(input);
      if (!isFloat(out)) return DType::Int64;
      return out == DType::Float64 || input == DType::Float64 ? DType::Float64 : DType::Float32;
    }
    case ScalarOp::And:
    case ScalarOp::Or:
      return DType::Bool;
    default:
      return input == DType::Float16 ? DType::Float32 : input;
  }
}

nlohmann::json CAReduce::props() const {
  nlohmann::json p = {{"scalar_op", scalarOpInfo(m_scalar).name}};
  p["axis"] = m_axes ? nlohmann::json(*m_axes) : nlohmann::json(nullptr);
  if (m_dtype) p["dtype"] = dtypeName(*m_dtype);
  if (m_accDtype) p["acc_dtype"] = dtypeName(*m_accDtype);
  return p;
}

std::string CAReduce::str() const {
  std::vector<std::string> parts;
  if (m_axes) {
    std::string a = "axis=[";
    for (std::size_t i = 0; i < m_axes->size(); ++i)
      a += (i ? "," : "") + std::to_string((*m_axes)[i]);
    parts.push_back(a + "]");
  }
  if (m_dtype) parts.push_back("dtype=" + std::string(dtypeName(*m_dtype)));
  if (m_accDtype) parts.push_back("acc_dtype=" + std::string(dtypeName(*m_accDtype)));
  std::string out = friendlyName(m_scalar);
  if (parts.empty()) return out;
  out += "{";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  return out + "}";
}

std::vector<TensorType> CAReduce::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (m_axes && !m_axes->empty() && m_axes->back() >= t.ndim())
    throwInputError(inputs, 0,
                    "a tensor with an axis " + std::to_string(m_axes->back()) + " to reduce");
  std::vector<std::int64_t> shape;
  for (int a = 0; a < t.ndim(); ++a)
    if (!reduces(a)) shape.push_back(t.shape()[static_cast<std::size_t>(a)]);
  return {TensorType(outputDType(t.dtype()), std::move(shape), t.device())};
}

void CAReduce::perform(const Apply&, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  std::vector<bool> reduced(static_cast<std::size_t>(x.ndim()));
  for (int a = 0; a < x.ndim(); ++a) reduced[static_cast<std::size_t>(a)] = reduces(a);
  reduceKernel(m_scalar, x, reduced, accDType(x.dtype()), outputDType(x.dtype()), outputs[0]);
}

std::vector<ShapeExpr> CAReduce::inferShape(const Apply&,
                                            std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out;
  const ShapeExpr& in = inputShapes[0];
  for (std::size_t a = 0; a < in.size(); ++a)
    if (!reduces(static_cast<int>(a))) out.push_back(in[a]);
  return {out};
}

// Note [Reduction gradients]: the output gradient gets a broadcastable axis back where each axis
// was reduced (restoreAxes) and so broadcasts against x:
//   sum      dx = og                                   (second(x, og): og spread over x's shape)
//   prod     dx = og * prod(x without x_i), Theano's zero-safe form: with z zeros in the group,
//            z == 0: prod / x_i;  z == 1: the product of the non-zeros at the zero, 0 elsewhere;
//            z >= 2: 0 everywhere. prod / x_i is computed as prod(non-zeros) / x_i, never 0 / 0.
//   max/min  dx = og where x equals the result (every tied element gets og), 0 elsewhere
//   all/any  bool results: disconnected.
// Inputs of integer or bool dtype are disconnected, as in Elemwise (Note [Elemwise gradient
// conventions]): there is no gradient to follow.
std::vector<Grad> CAReduce::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  const TensorType& xt = x->type();
  if (m_scalar == ScalarOp::And || m_scalar == ScalarOp::Or) return {Grad::disconnected()};
  if (!isFloat(xt.dtype())) return {Grad::disconnected()};
  const int nd = xt.ndim();
  const std::vector<int> axes = axesFor(nd);
  const VarPtr og = restoreAxes(outputGrads[0], axes, nd);
  VarPtr gx;
  switch (m_scalar) {
    case ScalarOp::Add:
      gx = elemwise(ScalarOp::Second, {x, og});
      break;
    case ScalarOp::Mul: {
      const VarPtr isZero = eq(x, scalarLike(0.0, x));
      const std::optional<std::vector<int>> ax = m_axes;
      const VarPtr zeros = restoreAxes(
          std::make_shared<CAReduce>(ScalarOp::Add, ax)->operator()({isZero}), axes, nd);
      const VarPtr nonZero = where(isZero, scalarLike(1.0, x), x);
      const VarPtr prodNz = restoreAxes(
          std::make_shared<CAReduce>(ScalarOp::Mul, ax)->operator()({nonZero}), axes, nd);
      const VarPtr zero = scalarLike(0.0, x);
      const VarPtr atZero = where(eq(zeros, constantInt(1)), prodNz, zero);
      const VarPtr elsewhere = where(eq(zeros, constantInt(0)), trueDiv(prodNz, nonZero), zero);
      gx = mul(og, where(isZero, atZero, elsewhere));
      break;
    }
    default: {  // Maximum, Minimum
      const VarPtr best = restoreAxes(outputOf(node), axes, nd);
      gx = mul(og, eq(x, best));
      break;
    }
  }
  if (gx->type().dtype() != xt.dtype()) gx = cast(gx, xt.dtype());
  return {Grad(gx)};
}

std::optional<std::vector<VarPtr>> CAReduce::pushforward(const Apply& node,
                                                         std::span<const VarPtr> tangents) const {
  const VarPtr& t = tangents[0];
  const DType outDtype = node.outputRef(0).type().dtype();
  if (!t || m_scalar == ScalarOp::And || m_scalar == ScalarOp::Or ||
      !isFloat(node.input(0)->type().dtype()))
    return std::vector<VarPtr>{nullptr};
  VarPtr r;
  if (m_scalar == ScalarOp::Add) {
    r = (*this)({t});
  } else if (m_scalar == ScalarOp::Maximum || m_scalar == ScalarOp::Minimum) {
    // The tangent at the selected element(s): sum(t * [x == max]) over the reduced axes.
    const VarPtr& x = node.input(0);
    const int nd = x->type().ndim();
    const VarPtr best = restoreAxes(outputOf(node), axesFor(nd), nd);
    r = std::make_shared<CAReduce>(ScalarOp::Add, m_axes)->operator()({mul(t, eq(x, best))});
  } else {
    return std::nullopt;  // prod: derived from the pullback
  }
  if (r->type().dtype() != outDtype) r = cast(r, outDtype);
  return std::vector<VarPtr>{r};
}

OpPtr CAReduce::fromProps(const nlohmann::json& props) {
  if (!props.is_object()) throw std::invalid_argument("CAReduce: props must be a JSON object");
  for (const auto& [key, value] : props.items())
    if (key != "scalar_op" && key != "axis" && key != "dtype" && key != "acc_dtype")
      throw std::invalid_argument("CAReduce: unknown prop \"" + key + "\"");
  if (!props.contains("scalar_op") || !props["scalar_op"].is_string())
    throw std::invalid_argument(
        "CAReduce: props need \"scalar_op\" (add, mul, maximum, minimum, and or or)");
  const auto scalar = scalarOpFromName(props["scalar_op"].get<std::string>());
  if (!scalar)
    throw std::invalid_argument("CAReduce: unknown scalar_op \"" +
                                props["scalar_op"].get<std::string>() + "\"");
  std::optional<std::vector<int>> axes;
  if (props.contains("axis") && !props["axis"].is_null()) {
    if (!props["axis"].is_array())
      throw std::invalid_argument("CAReduce: \"axis\" must be null or an array of axes");
    axes.emplace();
    for (const auto& a : props["axis"]) {
      if (!a.is_number_integer() || a.get<std::int64_t>() < 0 || a.get<std::int64_t>() >= 64)
        throw std::invalid_argument(
            "CAReduce: each \"axis\" entry must be an integer in 0..63, found " + a.dump());
      axes->push_back(static_cast<int>(a.get<std::int64_t>()));
    }
  }
  auto readDtype = [&](const char* key) -> std::optional<DType> {
    if (!props.contains(key)) return std::nullopt;
    if (!props[key].is_string())
      throw std::invalid_argument(std::string("CAReduce: \"") + key + "\" must be a dtype name");
    auto d = dtypeFromName(props[key].get<std::string>());
    if (!d)
      throw std::invalid_argument(std::string("CAReduce: unknown ") + key + " \"" +
                                  props[key].get<std::string>() + "\"");
    return d;
  };
  const std::optional<DType> dtype = readDtype("dtype");
  const std::optional<DType> accDtype = readDtype("acc_dtype");
  return std::make_shared<CAReduce>(*scalar, std::move(axes), dtype, accDtype);
}

}  // namespace tscope::engine

#include "engine/ops/shape/alloc.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"
#include "engine/tensor/tensor_internal.h"

#include <algorithm>
#include <cmath>

namespace tscope::engine {

using namespace shape_detail;

// --- Alloc ---------------------------------------------------------------------------------------

std::vector<TensorType> Alloc::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.empty())
    throw TypeError(str() + ": expected a value and one size per output axis, found no inputs");
  const TensorType& value = inputs[0]->type();
  const std::size_t ndim = inputs.size() - 1;
  if (static_cast<std::size_t>(value.ndim()) > ndim)
    throwInputError(inputs, 0,
                    "a value of at most " + std::to_string(ndim) + " axes (one per size given)");
  std::vector<std::int64_t> shape(ndim, kUnknownDim);
  const std::size_t lead = ndim - static_cast<std::size_t>(value.ndim());
  for (std::size_t i = 0; i < ndim; ++i) {
    const VarPtr& d = inputs[i + 1];
    if (d->type().ndim() != 0 || !isInteger(d->type().dtype()))
      throwInputError(inputs, static_cast<int>(i) + 1,
                      "a 0-d integer (the size of axis " + std::to_string(i) + ")");
    if (auto c = constantIntValue(d)) {
      if (*c < 0)
        throwInputError(inputs, static_cast<int>(i) + 1,
                        "a size >= 0, found " + std::to_string(*c));
      shape[i] = *c;
    } else if (i >= lead && value.shape()[i - lead] != 1) {
      shape[i] = value.shape()[i - lead];  // a value axis that does not broadcast fixes the size
    }
  }
  if (auto why = staticBroadcastError(value.shape(), shape))
    throwInputError(inputs, 0,
                    "a value that broadcasts to " + staticShapeStr(shape) + " (" + *why + ")");
  return {TensorType(value.dtype(), std::move(shape), value.device())};
}

void Alloc::perform(const Apply&, std::span<const Tensor* const> inputs,
                    std::span<Tensor* const> outputs) const {
  Shape shape;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const std::int64_t d = readIndex(*inputs[i], str() + ": size of axis " + std::to_string(i - 1));
    if (d < 0)
      throw std::invalid_argument(str() + ": the size of axis " + std::to_string(i - 1) + " is " +
                                  std::to_string(d) + "; sizes must be >= 0");
    shape.push_back(d);
  }
  const Tensor& value = *inputs[0];
  const Tensor v = broadcastOperand(value, shape, str() + ": value");
  Tensor& out = reuseOrAllocate(outputs[0], value.dtype(), shape);
  if (value.numel() == 1) {
    dispatchDType(value.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T fill = *static_cast<const T*>(value.rawData());
      std::fill_n(out.data<T>(), out.numel(), fill);
    });
    return;
  }
  out.copyFrom(v);
}

std::vector<ShapeExpr> Alloc::inferShape(const Apply& node, std::span<const ShapeExpr>) const {
  ShapeExpr out;
  const auto& known = node.outputRef(0).type().shape();
  for (int i = 1; i < node.nInputs(); ++i) {
    const std::int64_t k = known[static_cast<std::size_t>(i - 1)];
    out.push_back(k != kUnknownDim ? constantInt(k) : toInt64(node.input(i)));
  }
  return {out};
}

std::vector<Grad> Alloc::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  const VarPtr& value = node.input(0);
  if (isFloat(value->type().dtype())) grads[0] = sumToShapeOf(outputGrads[0], value);
  return grads;
}

std::optional<std::vector<VarPtr>> Alloc::pushforward(const Apply& node,
                                                      std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[0] = tangents[0];
  return std::vector<VarPtr>{operator()(std::move(inputs))};
}

std::vector<std::vector<bool>> Alloc::connectionPattern(const Apply& node) const {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(node.nInputs()), {false});
  pattern[0] = {true};
  return pattern;
}

OpPtr Alloc::fromProps(const nlohmann::json& props) {
  propKeys(props, "Alloc", {});
  return std::make_shared<Alloc>();
}

// --- ARange --------------------------------------------------------------------------------------

namespace {
// numpy's arange length.
std::int64_t arangeLength(double start, double stop, double step) {
  const double n = std::ceil((stop - start) / step);
  if (!(n > 0)) return 0;
  if (n > 9.0e15)
    throw std::invalid_argument("ARange: the length " + std::to_string(n) + " is too large");
  return static_cast<std::int64_t>(n);
}

std::int64_t arangeLength(std::int64_t start, std::int64_t stop, std::int64_t step) {
  // ceil((stop - start) / step) == -floor((start - stop) / step), exact in integers.
  const std::int64_t num = start - stop;
  std::int64_t q = num / step;
  if ((num % step != 0) && ((num < 0) != (step < 0))) --q;
  return std::max<std::int64_t>(-q, 0);
}

double scalarValue(const Tensor& t) {
  return t.item();
}
}  // namespace

ARange::ARange(DType dtype) : m_dtype(dtype) {
  if (dtype == DType::Bool) throw std::invalid_argument("ARange: the dtype cannot be bool");
}

nlohmann::json ARange::props() const {
  return {{"dtype", dtypeName(m_dtype)}};
}

std::vector<TensorType> ARange::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 3);
  static const char* kNames[] = {"start", "stop", "step"};
  for (int i = 0; i < 3; ++i) {
    const TensorType& t = inputs[static_cast<std::size_t>(i)]->type();
    if (t.ndim() != 0 || t.dtype() == DType::Bool)
      throwInputError(inputs, i, std::string("a 0-d number (") + kNames[i] + ")");
  }
  if (auto step = constantIntValue(inputs[2]); step == 0)
    throwInputError(inputs, 2, "a non-zero step");
  std::int64_t length = kUnknownDim;
  bool allConstant = true;
  for (const VarPtr& v : inputs) allConstant = allConstant && v->kind() == Variable::Kind::Constant;
  if (allConstant) {
    auto value = [&](int i) {
      return scalarValue(
          static_cast<const Constant&>(*inputs[static_cast<std::size_t>(i)]).value());
    };
    if (value(2) == 0.0) throwInputError(inputs, 2, "a non-zero step");
    bool ints = true;
    for (const VarPtr& v : inputs) ints = ints && isInteger(v->type().dtype());
    length = ints ? arangeLength(*constantIntValue(inputs[0]), *constantIntValue(inputs[1]),
                                 *constantIntValue(inputs[2]))
                  : arangeLength(value(0), value(1), value(2));
  }
  return {TensorType(m_dtype, {length}, inputs[0]->type().device())};
}

void ARange::perform(const Apply& node, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  bool ints = true;
  for (const VarPtr& v : node.inputs()) ints = ints && isInteger(v->type().dtype());
  std::int64_t n = 0;
  if (ints) {
    const std::int64_t start = readIndex(*inputs[0], str() + ": start");
    const std::int64_t stop = readIndex(*inputs[1], str() + ": stop");
    const std::int64_t step = readIndex(*inputs[2], str() + ": step");
    if (step == 0) throw std::invalid_argument(str() + ": the step is 0; it cannot be zero");
    n = arangeLength(start, stop, step);
    Tensor& out = reuseOrAllocate(outputs[0], m_dtype, std::span<const std::int64_t>(&n, 1));
    dispatchDType(m_dtype, [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data<T>();
      for (std::int64_t i = 0; i < n; ++i) o[i] = detail::convertValue<T>(start + i * step);
    });
    return;
  }
  const double start = scalarValue(*inputs[0]), stop = scalarValue(*inputs[1]),
               step = scalarValue(*inputs[2]);
  if (step == 0.0) throw std::invalid_argument(str() + ": the step is 0; it cannot be zero");
  n = arangeLength(start, stop, step);
  Tensor& out = reuseOrAllocate(outputs[0], m_dtype, std::span<const std::int64_t>(&n, 1));
  dispatchDType(m_dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < n; ++i)
      o[i] = detail::convertValue<T>(start + static_cast<double>(i) * step);
  });
}

std::vector<ShapeExpr> ARange::inferShape(const Apply& node, std::span<const ShapeExpr>) const {
  const std::int64_t known = node.outputRef(0).type().shape()[0];
  if (known != kUnknownDim) return {ShapeExpr{constantInt(known)}};
  const VarPtr& start = node.input(0);
  const VarPtr& stop = node.input(1);
  const VarPtr& step = node.input(2);
  bool ints = true;
  for (const VarPtr& v : node.inputs()) ints = ints && isInteger(v->type().dtype());
  const VarPtr zero = constantInt(0);
  if (ints) {
    // -floor((start - stop) / step) == ceil((stop - start) / step).
    VarPtr q = intFloorDiv(intSub(toInt64(start), toInt64(stop)), toInt64(step));
    return {ShapeExpr{intMax(intSub(zero, q), zero)}};
  }
  VarPtr n = cast(ceil(trueDiv(sub(stop, start), step)), DType::Int64);
  return {ShapeExpr{intMax(n, zero)}};
}

std::vector<Grad> ARange::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(3, Grad::disconnected());
  if (!isFloat(m_dtype)) return grads;  // integer values carry no gradient
  const VarPtr& g = outputGrads[0];
  const VarPtr& start = node.input(0);
  const VarPtr& step = node.input(2);
  // out[i] = start + i * step: d/dstart = sum(g), d/dstep = sum(g * i).
  if (isFloat(start->type().dtype())) grads[0] = sumToShapeOf(g, start);
  if (isFloat(step->type().dtype())) {
    VarPtr i = std::make_shared<ARange>(m_dtype)->operator()(
        {constant(0.0, m_dtype), cast(shapeI(g, 0), m_dtype), constant(1.0, m_dtype)});
    grads[2] = sumToShapeOf(mul(g, i), step);
  }
  return grads;
}

std::vector<std::vector<bool>> ARange::connectionPattern(const Apply&) const {
  return {{true}, {false}, {true}};
}

OpPtr ARange::fromProps(const nlohmann::json& props) {
  propKeys(props, "ARange", {"dtype"});
  const DType dtype = propDType(props, "ARange", "dtype");
  if (dtype == DType::Bool) throw std::invalid_argument("ARange: props \"dtype\" cannot be bool");
  return std::make_shared<ARange>(dtype);
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr alloc(const VarPtr& value, const ShapeExpr& shape, std::source_location site) {
  static const OpPtr op = std::make_shared<Alloc>();
  std::vector<VarPtr> inputs{value};
  inputs.insert(inputs.end(), shape.begin(), shape.end());
  return op->operator()(std::move(inputs), site);
}

ShapeExpr constantShape(const std::vector<std::int64_t>& shape, std::source_location site) {
  ShapeExpr out;
  for (std::int64_t d : shape) out.push_back(constantInt(d, site));
  return out;
}

VarPtr zeros(const ShapeExpr& shape, DType dtype, std::source_location site) {
  return alloc(constant(0.0, dtype, site), shape, site);
}
VarPtr zeros(const std::vector<std::int64_t>& shape, DType dtype, std::source_location site) {
  return zeros(constantShape(shape, site), dtype, site);
}
VarPtr ones(const ShapeExpr& shape, DType dtype, std::source_location site) {
  return alloc(constant(1.0, dtype, site), shape, site);
}
VarPtr ones(const std::vector<std::int64_t>& shape, DType dtype, std::source_location site) {
  return ones(constantShape(shape, site), dtype, site);
}
VarPtr full(const ShapeExpr& shape, double value, DType dtype, std::source_location site) {
  return alloc(constant(value, dtype, site), shape, site);
}
VarPtr full(const ShapeExpr& shape, const VarPtr& value, std::source_location site) {
  return alloc(value, shape, site);
}

VarPtr arange(const VarPtr& start, const VarPtr& stop, const VarPtr& step,
              std::optional<DType> dtype, std::source_location site) {
  VarPtr s = step ? step : constantInt(1, site);
  DType d = dtype.value_or(
      promoteTypes(promoteTypes(start->type().dtype(), stop->type().dtype()), s->type().dtype()));
  if (d == DType::Bool) d = DType::Int64;
  return std::make_shared<ARange>(d)->operator()({start, stop, s}, site);
}

VarPtr arange(const VarPtr& stop, std::source_location site) {
  return arange(constantInt(0, site), stop, constantInt(1, site), std::nullopt, site);
}

}  // namespace tscope::engine

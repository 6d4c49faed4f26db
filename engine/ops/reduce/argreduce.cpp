#include "engine/ops/reduce/argreduce.h"

#include "engine/graph/errors.h"
#include "engine/tensor/tensor.h"

#include <cmath>
#include <type_traits>

namespace tscope::engine {

namespace {

template <class T>
inline auto widen(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return halfToFloat(v);
  else
    return v;
}

// The index of the first extreme of n elements p[0], p[s], ...; the first NaN wins (numpy).
template <bool kMax, class T>
std::int64_t argRun(const T* p, std::int64_t n, std::int64_t s) {
  using W = decltype(widen(T{}));
  W best = widen(p[0]);
  std::int64_t at = 0;
  if constexpr (std::is_floating_point_v<W>) {
    if (std::isnan(best)) return 0;
  }
  for (std::int64_t j = 1; j < n; ++j) {
    const W v = widen(p[j * s]);
    if constexpr (std::is_floating_point_v<W>) {
      if (std::isnan(v)) return j;
    }
    if (kMax ? v > best : v < best) {
      best = v;
      at = j;
    }
  }
  return at;
}

template <bool kMax, class T>
void argReduce(const Tensor& x, std::optional<int> axis, std::int64_t* out) {
  if (!axis) {
    // Flat index in row-major order: walk a contiguous copy when x is a strided view.
    const Tensor flat = x.contiguous();
    out[0] = argRun<kMax>(flat.data<T>(), flat.numel(), 1);
    return;
  }
  const auto ax = static_cast<std::size_t>(*axis);
  const std::int64_t n = x.shape()[ax], s = x.strides()[ax];
  // Odometer over the other axes in row-major order (the output's order).
  std::vector<std::int64_t> sizes, strides;
  for (std::size_t a = 0; a < x.shape().size(); ++a) {
    if (a == ax) continue;
    sizes.push_back(x.shape()[a]);
    strides.push_back(x.strides()[a]);
  }
  std::int64_t total = 1;
  for (std::int64_t d : sizes) total *= d;
  std::vector<std::int64_t> idx(sizes.size(), 0);
  const T* base = x.data<T>();
  std::int64_t off = 0;
  for (std::int64_t it = 0; it < total; ++it) {
    out[it] = argRun<kMax>(base + off, n, s);
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      const auto i = static_cast<std::size_t>(d);
      off += strides[i];
      if (++idx[i] < sizes[i]) break;
      off -= strides[i] * sizes[i];
      idx[i] = 0;
    }
  }
}

}  // namespace

ArgReduce::ArgReduce(Kind kind, std::optional<int> axis) : m_kind(kind), m_axis(axis) {
  if (m_axis && (*m_axis < 0 || *m_axis >= 64))
    throw std::invalid_argument(name() + ": axis " + std::to_string(*m_axis) +
                                " is out of range 0..63");
}

nlohmann::json ArgReduce::props() const {
  return {{"axis", m_axis ? nlohmann::json(*m_axis) : nlohmann::json(nullptr)}};
}

std::vector<TensorType> ArgReduce::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (m_axis && *m_axis >= t.ndim())
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(*m_axis));
  std::vector<std::int64_t> shape;
  if (m_axis)
    for (int a = 0; a < t.ndim(); ++a)
      if (a != *m_axis) shape.push_back(t.shape()[static_cast<std::size_t>(a)]);
  return {TensorType(DType::Int64, std::move(shape), t.device())};
}

void ArgReduce::perform(const Apply&, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  Shape shape;
  if (m_axis)
    for (int a = 0; a < x.ndim(); ++a)
      if (a != *m_axis) shape.push_back(x.shape()[static_cast<std::size_t>(a)]);
  const std::int64_t n = m_axis ? x.shape()[static_cast<std::size_t>(*m_axis)] : x.numel();
  if (n == 0)
    throw std::invalid_argument(std::string(m_kind == Kind::Max ? "argmax" : "argmin") +
                                ": attempt to get the index of an empty sequence (input shape " +
                                shapeToString(x.shape()) + ")");
  Tensor& out = reuseOrAllocate(outputs[0], DType::Int64, shape);
  if (out.numel() == 0) return;
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (m_kind == Kind::Max)
      argReduce<true, T>(x, m_axis, out.data<std::int64_t>());
    else
      argReduce<false, T>(x, m_axis, out.data<std::int64_t>());
  });
}

std::vector<ShapeExpr> ArgReduce::inferShape(const Apply&,
                                             std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out;
  if (m_axis)
    for (std::size_t a = 0; a < inputShapes[0].size(); ++a)
      if (static_cast<int>(a) != *m_axis) out.push_back(inputShapes[0][a]);
  return {out};
}

std::vector<Grad> ArgReduce::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> ArgReduce::pushforward(const Apply&,
                                                          std::span<const VarPtr>) const {
  return std::vector<VarPtr>{nullptr};
}

namespace {
OpPtr argFromProps(ArgReduce::Kind kind, const nlohmann::json& props) {
  const std::string what = kind == ArgReduce::Kind::Max ? "Argmax" : "Argmin";
  if (!props.is_object()) throw std::invalid_argument(what + ": props must be a JSON object");
  for (const auto& [key, value] : props.items())
    if (key != "axis") throw std::invalid_argument(what + ": unknown prop \"" + key + "\"");
  std::optional<int> axis;
  if (props.contains("axis") && !props["axis"].is_null()) {
    const auto& a = props["axis"];
    if (!a.is_number_integer() || a.get<std::int64_t>() < 0 || a.get<std::int64_t>() >= 64)
      throw std::invalid_argument(what + ": \"axis\" must be null or an integer in 0..63, found " +
                                  a.dump());
    axis = static_cast<int>(a.get<std::int64_t>());
  }
  return std::make_shared<ArgReduce>(kind, axis);
}
}  // namespace

OpPtr ArgReduce::fromPropsMax(const nlohmann::json& props) {
  return argFromProps(Kind::Max, props);
}
OpPtr ArgReduce::fromPropsMin(const nlohmann::json& props) {
  return argFromProps(Kind::Min, props);
}

}  // namespace tscope::engine

#include "engine/ops/shape/unique.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tscope::engine {

namespace {

// Element values as long double: exact for every dtype the engine has (int64 included).
std::vector<long double> exactValues(const Tensor& x) {
  std::vector<long double> out(static_cast<std::size_t>(x.numel()));
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, Half>)
        out[i] = halfToFloat(p[i]);
      else
        out[i] = static_cast<long double>(p[i]);
    }
  });
  return out;
}

}  // namespace

nlohmann::json Unique::props() const {
  return {{"axis", m_axis == kNoAxis ? nlohmann::json(nullptr) : nlohmann::json(m_axis)},
          {"sorted", m_sorted}};
}

std::vector<TensorType> Unique::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  const TensorType vec(DType::Int64, {kUnknownDim}, t.device());
  if (m_axis == kNoAxis) return {TensorType(t.dtype(), {kUnknownDim}, t.device()), vec, vec, vec};
  if (m_axis >= t.ndim())
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  std::vector<std::int64_t> shape = t.shape();
  shape[static_cast<std::size_t>(m_axis)] = kUnknownDim;
  return {TensorType(t.dtype(), shape, t.device()), vec, vec, vec};
}

void Unique::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  const Shape& s = x.shape();
  // x as (outer, n, inner): slice k is x[o, k, i] for every o, i.
  std::int64_t outer = 1, n = x.numel(), inner = 1;
  if (m_axis != kNoAxis) {
    n = s[static_cast<std::size_t>(m_axis)];
    for (int d = 0; d < m_axis; ++d) outer *= s[static_cast<std::size_t>(d)];
    for (std::size_t d = static_cast<std::size_t>(m_axis) + 1; d < s.size(); ++d) inner *= s[d];
  }
  const std::vector<long double> v = exactValues(x);
  auto at = [&](std::int64_t k, std::int64_t j) {  // element j of slice k
    const std::int64_t o = j / std::max<std::int64_t>(inner, 1),
                       i = j % std::max<std::int64_t>(inner, 1);
    return v[static_cast<std::size_t>((o * n + k) * inner + i)];
  };
  const std::int64_t width = outer * inner;
  auto less = [&](std::int64_t a, std::int64_t b) {
    for (std::int64_t j = 0; j < width; ++j)
      if (at(a, j) != at(b, j)) return at(a, j) < at(b, j);
    return false;
  };
  auto same = [&](std::int64_t a, std::int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);  // equal slices keep their first first
  // Groups of equal slices in sorted order; each group's first member is its first occurrence.
  std::vector<std::int64_t> firsts, counts, groupOf(static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || !same(order[r - 1], order[r])) {
      firsts.push_back(order[r]);
      counts.push_back(0);
    }
    groupOf[static_cast<std::size_t>(order[r])] = static_cast<std::int64_t>(firsts.size()) - 1;
    ++counts.back();
  }
  // Output position of each group: sorted order, or order of first occurrence.
  const auto u = static_cast<std::int64_t>(firsts.size());
  std::vector<std::int64_t> rank(static_cast<std::size_t>(u));
  std::iota(rank.begin(), rank.end(), 0);
  if (!m_sorted) {
    std::vector<std::int64_t> byFirst(static_cast<std::size_t>(u));
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(), [&](std::int64_t a, std::int64_t b) {
      return firsts[static_cast<std::size_t>(a)] < firsts[static_cast<std::size_t>(b)];
    });
    for (std::int64_t p = 0; p < u; ++p)
      rank[static_cast<std::size_t>(byFirst[static_cast<std::size_t>(p)])] = p;
  }
  std::vector<std::int64_t> outFirst(static_cast<std::size_t>(u)),
      outCount(static_cast<std::size_t>(u));
  for (std::int64_t g = 0; g < u; ++g) {
    outFirst[static_cast<std::size_t>(rank[static_cast<std::size_t>(g)])] =
        firsts[static_cast<std::size_t>(g)];
    outCount[static_cast<std::size_t>(rank[static_cast<std::size_t>(g)])] =
        counts[static_cast<std::size_t>(g)];
  }
  // y: the slices at outFirst, copied byte for byte.
  Shape yShape = m_axis == kNoAxis ? Shape{u} : s;
  if (m_axis != kNoAxis) yShape[static_cast<std::size_t>(m_axis)] = u;
  Tensor& y = reuseOrAllocate(outputs[0], x.dtype(), yShape);
  const std::size_t es = dtypeSize(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.rawData());
  auto* dst = static_cast<std::byte*>(y.rawData());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t p = 0; p < u; ++p)
      std::memcpy(
          dst + static_cast<std::size_t>((o * u + p) * inner) * es,
          src + static_cast<std::size_t>((o * n + outFirst[static_cast<std::size_t>(p)]) * inner) *
                    es,
          static_cast<std::size_t>(inner) * es);
  auto write = [&](int k, const std::vector<std::int64_t>& values) {
    Tensor& t = reuseOrAllocate(outputs[static_cast<std::size_t>(k)], DType::Int64,
                                Shape{static_cast<std::int64_t>(values.size())});
    std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  };
  std::vector<std::int64_t> inverse(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k)
    inverse[static_cast<std::size_t>(k)] =
        rank[static_cast<std::size_t>(groupOf[static_cast<std::size_t>(k)])];
  write(1, outFirst);
  write(2, inverse);
  write(3, outCount);
}

std::vector<Grad> Unique::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::undefined("Unique has no gradient: which elements it keeps depends on the values")};
}

OpPtr Unique::fromProps(const nlohmann::json& props) {
  shape_detail::propKeys(props, "Unique", {"axis", "sorted"});
  int axis = kNoAxis;
  if (props.contains("axis") && !props["axis"].is_null()) {
    if (!props["axis"].is_number_integer() || props["axis"].get<int>() < 0)
      throw std::invalid_argument("Unique: expected 'axis' to be a non-negative integer or null");
    axis = props["axis"].get<int>();
  }
  return std::make_shared<Unique>(axis, props.value("sorted", true));
}

std::array<VarPtr, 4> unique(const VarPtr& x, std::optional<int> axis, bool sorted,
                             std::source_location site) {
  int a = Unique::kNoAxis;
  if (axis) {
    const int r = x->type().ndim();
    if (*axis < -r || *axis >= r)
      throw TypeError("unique: expected an axis in [" + std::to_string(-r) + ", " +
                      std::to_string(r - 1) + "], found " + std::to_string(*axis));
    a = *axis < 0 ? *axis + r : *axis;
  }
  const auto outs = std::make_shared<Unique>(a, sorted)->makeNode({x}, site)->outputs();
  return {outs[0], outs[1], outs[2], outs[3]};
}

void registerUniqueOps(OpRegistry& registry) {
  registry.add("Unique", &Unique::fromProps);
}

}  // namespace tscope::engine

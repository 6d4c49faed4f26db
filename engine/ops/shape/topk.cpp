#include "engine/ops/shape/topk.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

namespace tscope::engine {

using namespace shape_detail;

namespace {

template <class T>
inline auto widen(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return halfToFloat(v);
  else
    return v;
}

// a comes before b in descending order, NaN first (it counts as the largest).
template <class W>
bool aboveOf(W a, W b) {
  if constexpr (std::is_floating_point_v<W>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

// The first k positions of each row of `rows` (m rows of n contiguous elements) in the order the
// op sorts: by value (descending when largest, else ascending, NaN largest), then by position.
template <class T>
void topkRows(const T* rows, std::int64_t m, std::int64_t n, std::int64_t k, bool largest,
              T* values, std::int64_t* indices) {
  using W = decltype(widen(T{}));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::vector<W> row(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < m; ++r) {
    const T* src = rows + r * n;
    for (std::int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] = widen(src[j]);
    std::iota(order.begin(), order.end(), std::int64_t{0});
    auto before = [&](std::int64_t i, std::int64_t j) {
      const W a = row[static_cast<std::size_t>(i)], b = row[static_cast<std::size_t>(j)];
      const bool ab = largest ? aboveOf(a, b) : aboveOf(b, a);
      const bool ba = largest ? aboveOf(b, a) : aboveOf(a, b);
      return ab || (!ba && i < j);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (std::int64_t j = 0; j < k; ++j) {
      indices[r * k + j] = order[static_cast<std::size_t>(j)];
      values[r * k + j] = src[order[static_cast<std::size_t>(j)]];
    }
  }
}

// The index arrays that address, in x, the elements `indices` names along `axis`: for every other
// axis an arange shaped to broadcast along it (numpy's take_along_axis as advanced indexing).
std::vector<AdvIdx> alongAxis(const VarPtr& x, const VarPtr& indices, int axis) {
  const int n = x->type().ndim();
  std::vector<AdvIdx> index;
  for (int a = 0; a < n; ++a) {
    if (a == axis) {
      index.emplace_back(indices);
      continue;
    }
    std::vector<int> order(static_cast<std::size_t>(n), DimShuffle::kNewAxis);
    order[static_cast<std::size_t>(a)] = 0;
    index.emplace_back(dimshuffle(arange(shapeI(x, a)), order));
  }
  return index;
}

}  // namespace

TopK::TopK(int axis, std::int64_t k, bool largest) : m_axis(axis), m_k(k), m_largest(largest) {
  if (m_axis < 0 || m_axis >= 64)
    throw std::invalid_argument("TopK: axis " + std::to_string(m_axis) + " is out of range 0..63");
  if (m_k < 0) throw std::invalid_argument("TopK: k must be >= 0, found " + std::to_string(m_k));
}

nlohmann::json TopK::props() const {
  return {{"axis", m_axis}, {"k", m_k}, {"largest", m_largest}};
}

std::vector<TensorType> TopK::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (t.dtype() == DType::Bool) throwInputError(inputs, 0, "a numeric tensor");
  if (m_axis >= t.ndim())
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  const std::int64_t n = t.shape()[static_cast<std::size_t>(m_axis)];
  if (n != kUnknownDim && n < m_k)
    throwInputError(inputs, 0,
                    "a tensor with at least " + std::to_string(m_k) + " elements along axis " +
                        std::to_string(m_axis));
  std::vector<std::int64_t> shape = t.shape();
  shape[static_cast<std::size_t>(m_axis)] = m_k;
  return {TensorType(t.dtype(), shape, t.device()), TensorType(DType::Int64, shape, t.device())};
}

void TopK::perform(const Apply&, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  const int nd = x.ndim();
  const std::int64_t n = x.shape()[static_cast<std::size_t>(m_axis)];
  if (n < m_k)
    throw std::invalid_argument("TopK: k = " + std::to_string(m_k) + " is larger than axis " +
                                std::to_string(m_axis) + " of the input, of shape " +
                                shapeToString(x.shape()));
  // Work on rows: move the axis last (a contiguous copy), sort each row, move it back.
  std::vector<int> perm;
  for (int a = 0; a < nd; ++a)
    if (a != m_axis) perm.push_back(a);
  perm.push_back(m_axis);
  const Tensor rows = x.transpose(perm).contiguous();
  Shape rowShape = rows.shape();
  rowShape.back() = m_k;
  Tensor values(x.dtype(), rowShape), indices(DType::Int64, rowShape);
  const std::int64_t m = n == 0 ? 0 : rows.numel() / n;
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      topkRows<T>(rows.data<T>(), m, n, m_k, m_largest, values.data<T>(),
                  indices.data<std::int64_t>());
  });
  std::vector<int> inverse(static_cast<std::size_t>(nd));
  for (int a = 0; a < nd; ++a)
    inverse[static_cast<std::size_t>(perm[static_cast<std::size_t>(a)])] = a;
  Shape outShape = x.shape();
  outShape[static_cast<std::size_t>(m_axis)] = m_k;
  reuseOrAllocate(outputs[0], x.dtype(), outShape).copyFrom(values.transpose(inverse));
  reuseOrAllocate(outputs[1], DType::Int64, outShape).copyFrom(indices.transpose(inverse));
}

std::vector<ShapeExpr> TopK::inferShape(const Apply&,
                                        std::span<const ShapeExpr> inputShapes) const {
  ShapeExpr out = inputShapes[0];
  out[static_cast<std::size_t>(m_axis)] = constantInt(m_k);
  return {out, out};
}

std::vector<Grad> TopK::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  const VarPtr& x = node.input(0);
  if (!isFloat(x->type().dtype())) return {Grad::disconnected()};
  const VarPtr indices = const_cast<Apply&>(node).output(1);
  // Each row's chosen positions are distinct, so incrementing zeros sets them.
  return {advancedIncSubtensor(zerosLike(x), outputGrads[0], alongAxis(x, indices, m_axis))};
}

std::optional<std::vector<VarPtr>> TopK::pushforward(const Apply& node,
                                                     std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr, nullptr};
  const VarPtr indices = const_cast<Apply&>(node).output(1);
  return std::vector<VarPtr>{
      advancedSubtensor(tangents[0], alongAxis(node.input(0), indices, m_axis)), nullptr};
}

std::vector<std::vector<bool>> TopK::connectionPattern(const Apply&) const {
  return {{true, false}};
}

OpPtr TopK::fromProps(const nlohmann::json& props) {
  const std::string op = "TopK";
  propKeys(props, op, {"axis", "k", "largest"});
  return std::make_shared<TopK>(
      static_cast<int>(propInt(props, op, "axis", 0, 63)),
      propInt(props, op, "k", 0, std::numeric_limits<std::int64_t>::max()),
      propBool(props, op, "largest", true));
}

std::pair<VarPtr, VarPtr> topk(const VarPtr& x, std::int64_t k, int axis, bool largest,
                               std::source_location site) {
  const int ndim = x->type().ndim();
  const int given = axis;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim)
    throw TypeError("topk: axis " + std::to_string(given) + " is out of range for " +
                    x->type().str());
  if (k < 0) throw TypeError("topk: k must be >= 0, found " + std::to_string(k));
  const ApplyPtr node = std::make_shared<TopK>(axis, k, largest)->makeNode({x}, site);
  return {node->output(0), node->output(1)};
}

}  // namespace tscope::engine

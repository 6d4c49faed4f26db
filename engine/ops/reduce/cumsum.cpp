#include "engine/ops/reduce/cumsum.h"

#include "engine/graph/errors.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <type_traits>

namespace tscope::engine {

using namespace shape_detail;

namespace {

// The running sums of x (contiguous, viewed as (outer, n, inner)) into out, same layout.
template <class T>
void cumsumLines(const T* x, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner,
                 bool exclusive, bool reverse) {
  using Acc = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
  auto widen = [](T v) -> Acc {
    if constexpr (std::is_same_v<T, Half>)
      return halfToFloat(v);
    else
      return static_cast<Acc>(v);
  };
  auto narrow = [](Acc v) -> T {
    if constexpr (std::is_same_v<T, Half>)
      return floatToHalf(static_cast<float>(v));
    else
      return static_cast<T>(v);
  };
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const std::int64_t base = o * n * inner + i;
      Acc acc = 0;
      for (std::int64_t s = 0; s < n; ++s) {
        const std::int64_t at = base + (reverse ? n - 1 - s : s) * inner;
        if (exclusive) {
          out[at] = narrow(acc);
          acc += widen(x[at]);
        } else {
          acc += widen(x[at]);
          out[at] = narrow(acc);
        }
      }
    }
}

}  // namespace

CumSum::CumSum(int axis, bool exclusive, bool reverse)
    : m_axis(axis), m_exclusive(exclusive), m_reverse(reverse) {
  if (m_axis < 0 || m_axis >= 64)
    throw std::invalid_argument("CumSum: axis " + std::to_string(m_axis) +
                                " is out of range 0..63");
}

nlohmann::json CumSum::props() const {
  return {{"axis", m_axis}, {"exclusive", m_exclusive}, {"reverse", m_reverse}};
}

std::vector<TensorType> CumSum::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (t.dtype() == DType::Bool) throwInputError(inputs, 0, "a numeric tensor");
  if (m_axis >= t.ndim())
    throwInputError(inputs, 0, "a tensor with an axis " + std::to_string(m_axis));
  return {t};
}

void CumSum::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  Tensor& out = reuseOrAllocate(outputs[0], x.dtype(), x.shape());
  const auto axis = static_cast<std::size_t>(m_axis);
  const std::int64_t n = x.shape()[axis];
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < axis; ++a) outer *= x.shape()[a];
  for (std::size_t a = axis + 1; a < x.shape().size(); ++a) inner *= x.shape()[a];
  if (x.numel() == 0) return;
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      cumsumLines<T>(x.data<T>(), out.data<T>(), outer, n, inner, m_exclusive, m_reverse);
  });
}

std::vector<ShapeExpr> CumSum::inferShape(const Apply&,
                                          std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> CumSum::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  if (!isFloat(node.input(0)->type().dtype())) return {Grad::disconnected()};
  // d(out_i)/d(x_j) = 1 exactly where out_i's sum includes x_j, so x_j's gradient sums g over
  // the outputs whose sums include x_j: the same running sum, the other way along the axis.
  return {cumsum(outputGrads[0], m_axis, m_exclusive, !m_reverse)};
}

std::optional<std::vector<VarPtr>> CumSum::pushforward(const Apply&,
                                                       std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{cumsum(tangents[0], m_axis, m_exclusive, m_reverse)};
}

OpPtr CumSum::fromProps(const nlohmann::json& props) {
  const std::string op = "CumSum";
  propKeys(props, op, {"axis", "exclusive", "reverse"});
  return std::make_shared<CumSum>(static_cast<int>(propInt(props, op, "axis", 0, 63)),
                                  propBool(props, op, "exclusive", false),
                                  propBool(props, op, "reverse", false));
}

VarPtr cumsum(const VarPtr& x, int axis, bool exclusive, bool reverse, std::source_location site) {
  const int ndim = x->type().ndim();
  const int given = axis;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim)
    throw TypeError("cumsum: axis " + std::to_string(given) + " is out of range for " +
                    x->type().str());
  return (*std::make_shared<CumSum>(axis, exclusive, reverse))({x}, site);
}

}  // namespace tscope::engine

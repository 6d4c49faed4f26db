#include "engine/ops/shape/nonzero.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/tensor/tensor.h"

#include <type_traits>

namespace tscope::engine {

using namespace shape_detail;

namespace {

template <class T>
bool isNonZero(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return halfToFloat(v) != 0.0f;  // NaN != 0
  else
    return v != T{};
}

}  // namespace

std::vector<TensorType> NonZero::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (t.ndim() == 0) throwInputError(inputs, 0, "a tensor of rank 1 or more");
  return {TensorType(DType::Int64, {t.ndim(), kUnknownDim}, t.device())};
}

void NonZero::perform(const Apply&, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs) const {
  const Tensor x = inputs[0]->contiguous();
  const auto nd = static_cast<std::size_t>(x.ndim());
  std::vector<std::int64_t> flat;
  dispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = x.data<T>();
    for (std::int64_t i = 0; i < x.numel(); ++i)
      if (isNonZero(data[i])) flat.push_back(i);
  });
  const auto count = static_cast<std::int64_t>(flat.size());
  const Shape outShape{x.ndim(), count};
  Tensor& out = reuseOrAllocate(outputs[0], DType::Int64, outShape);
  std::int64_t* at = out.data<std::int64_t>();
  // Row a holds the a-th coordinate of each position: peel the axes off the flat index, last first.
  for (std::int64_t j = 0; j < count; ++j) {
    std::int64_t rest = flat[static_cast<std::size_t>(j)];
    for (std::size_t a = nd; a-- > 0;) {
      at[static_cast<std::int64_t>(a) * count + j] = rest % x.shape()[a];
      rest /= x.shape()[a];
    }
  }
}

std::vector<Grad> NonZero::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> NonZero::pushforward(const Apply&,
                                                        std::span<const VarPtr>) const {
  return std::vector<VarPtr>{nullptr};
}

std::vector<std::vector<bool>> NonZero::connectionPattern(const Apply&) const {
  return {{false}};
}

OpPtr NonZero::fromProps(const nlohmann::json& props) {
  propKeys(props, "NonZero", {});
  return std::make_shared<NonZero>();
}

VarPtr nonzero(const VarPtr& x, std::source_location site) {
  if (x->type().ndim() == 0)
    throw TypeError("nonzero: expected a tensor of rank 1 or more, found " + x->type().str());
  return (*std::make_shared<NonZero>())({x}, site);
}

}  // namespace tscope::engine

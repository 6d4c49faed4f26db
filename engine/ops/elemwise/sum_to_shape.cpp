#include "engine/ops/elemwise/sum_to_shape.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise_kernels.h"
#include "engine/tensor/tensor.h"

#include <cstring>
#include <type_traits>

namespace tscope::engine {

std::vector<TensorType> SumToShape::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.empty())
    throw TypeError(str() + ": expected a tensor followed by its target sizes, found no inputs");
  const TensorType& g = inputs[0]->type();
  const std::size_t k = inputs.size() - 1;
  if (k > static_cast<std::size_t>(g.ndim()))
    throwInputError(
        inputs, 0,
        "a tensor of at least " + std::to_string(k) + " dimensions (one per target size)");
  std::vector<std::int64_t> shape(k, kUnknownDim);
  const std::size_t lead = static_cast<std::size_t>(g.ndim()) - k;
  for (std::size_t a = 0; a < k; ++a) {
    const VarPtr& size = inputs[a + 1];
    if (size->type().ndim() != 0 || size->type().dtype() != DType::Int64)
      throwInputError(inputs, static_cast<int>(a + 1), "a 0-d int64 size");
    const std::optional<std::int64_t> value = constantIntValue(size);
    if (!value) continue;
    if (*value < 0)
      throwInputError(inputs, static_cast<int>(a + 1),
                      "a size >= 0, not " + std::to_string(*value));
    const std::int64_t d = g.shape()[lead + a];
    if (*value != 1 && d != kUnknownDim && d != *value)
      throwInputError(inputs, 0,
                      "a tensor whose axis " + std::to_string(lead + a) + " has size " +
                          std::to_string(*value) + " or sums to 1");
    shape[a] = *value;
  }
  return {TensorType(g.dtype(), std::move(shape), g.device())};
}

namespace {
template <class T>
inline T accumulate(T a, T b) {
  if constexpr (std::is_same_v<T, bool>)
    return a || b;
  else if constexpr (std::is_floating_point_v<T>)
    return a + b;
  else
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
}

// out (zero-filled, the target shape) += g summed over the lead axes and the stretched axes: out is
// walked as a view of g's shape with stride 0 on every summed axis.
template <class T>
void sumInto(Tensor& out, const Tensor& g, std::size_t lead) {
  std::vector<std::int64_t> outStrides(g.shape().size(), 0);
  for (std::size_t a = 0; a < out.shape().size(); ++a)
    if (out.shape()[a] == g.shape()[lead + a]) outStrides[lead + a] = out.strides()[a];
  char* bases[2] = {static_cast<char*>(out.rawData()),
                    const_cast<char*>(static_cast<const char*>(g.rawData()))};
  const std::int64_t* strides[2] = {outStrides.data(), g.strides().data()};
  const std::size_t sizes[2] = {sizeof(T), sizeof(T)};
  RowLoop loop(g.shape(), bases, strides, sizes);
  loop.run([](char* const* p, const std::int64_t* s, std::int64_t n) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    if (s[0] == 0) {
      T sum{};
      for (std::int64_t i = 0; i < n; ++i) sum = accumulate(sum, x[i * s[1]]);
      *o = accumulate(*o, sum);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i * s[0]] = accumulate(o[i * s[0]], x[i * s[1]]);
    }
  });
}
}  // namespace

void SumToShape::perform(const Apply& node, std::span<const Tensor* const> inputs,
                         std::span<Tensor* const> outputs) const {
  const Tensor& g = *inputs[0];
  const std::size_t k = inputs.size() - 1;
  if (k > static_cast<std::size_t>(g.ndim()))
    throw std::invalid_argument(str() + ": cannot sum a tensor of shape " +
                                shapeToString(g.shape()) + " to " + std::to_string(k) +
                                " dimensions");
  Shape target(k);
  for (std::size_t a = 0; a < k; ++a) target[a] = static_cast<std::int64_t>(inputs[a + 1]->item());
  const std::size_t lead = static_cast<std::size_t>(g.ndim()) - k;
  bool sums = lead > 0;
  for (std::size_t a = 0; a < k; ++a) {
    if (target[a] == g.shape()[lead + a]) continue;
    if (target[a] != 1) {
      std::string msg = str() + ": cannot sum a tensor of shape " + shapeToString(g.shape()) +
                        " to shape " + shapeToString(target) + " (axis " +
                        std::to_string(lead + a) + ")";
      if (!node.site().empty()) msg += "; the node was created at " + node.site().str();
      throw std::invalid_argument(msg);
    }
    sums = true;
  }
  if (!sums) {
    *outputs[0] = g;  // nothing to sum: a view (viewMap)
    return;
  }
  Tensor& out = reuseOrAllocate(outputs[0], g.dtype(), target);
  if (g.dtype() == DType::Float16) {
    // Sum in float32 and round once, as numpy's half reductions do.
    Tensor acc(DType::Float32, target);
    sumInto<float>(acc, g.astype(DType::Float32), lead);
    out.copyFrom(acc);
    return;
  }
  if (out.nbytes() > 0) std::memset(out.rawData(), 0, out.nbytes());
  dispatchDType(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, Half>) sumInto<T>(out, g, lead);
  });
}

std::vector<ShapeExpr> SumToShape::inferShape(const Apply& node, std::span<const ShapeExpr>) const {
  return {ShapeExpr(node.inputs().begin() + 1, node.inputs().end())};
}

std::vector<Grad> SumToShape::pullback(const Apply& node,
                                       std::span<const VarPtr> outputGrads) const {
  const VarPtr& g = node.input(0);
  VarPtr og = outputGrads[0];
  if (og->type().dtype() != g->type().dtype()) og = cast(og, g->type().dtype());
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  grads[0] = elemwise(ScalarOp::Second, {g, og});
  return grads;
}

std::optional<std::vector<VarPtr>> SumToShape::pushforward(const Apply& node,
                                                           std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs = node.inputs();
  inputs[0] = tangents[0];
  return std::vector<VarPtr>{(*this)(std::move(inputs))};
}

OpPtr SumToShape::fromProps(const nlohmann::json& props) {
  if (!props.is_null() && !(props.is_object() && props.empty()))
    throw std::invalid_argument("SumToShape: takes no props, found " + props.dump());
  return std::make_shared<SumToShape>();
}

VarPtr sumToShape(const VarPtr& g, const VarPtr& like, std::source_location site) {
  const std::vector<std::int64_t>& gs = g->type().shape();
  const std::vector<std::int64_t>& ls = like->type().shape();
  if (gs.size() == ls.size()) {
    bool proven = true;
    for (std::size_t a = 0; a < gs.size() && proven; ++a)
      proven = (ls[a] != kUnknownDim && ls[a] != 1) || gs[a] == 1;
    if (proven) return g;
  }
  static const OpPtr kOp = std::make_shared<SumToShape>();
  std::vector<VarPtr> inputs{g};
  for (int a = 0; a < like->type().ndim(); ++a) inputs.push_back(shapeI(like, a, site));
  return kOp->operator()(std::move(inputs), site);
}

}  // namespace tscope::engine

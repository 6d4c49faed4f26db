#include "custom_ops.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/basic.h"
#include "engine/tensor/tensor.h"

namespace tscope::examples {

using namespace tscope::engine;

namespace {

// out[k] = f(a[k], b[k]) over contiguous copies of the inputs, in their dtype.
template <class F>
void binaryLoop(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  dispatchDType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* pa = ca.data<T>();
      const T* pb = cb.data<T>();
      T* po = out.data<T>();
      for (std::int64_t k = 0; k < out.numel(); ++k) po[k] = f(pa[k], pb[k]);
    }
  });
}

}  // namespace

// --- DoubleOp
// -------------------------------------------------------------------------------------

std::vector<TensorType> DoubleOp::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const DType d = inputs[0]->type().dtype();
  if (d != DType::Float32 && d != DType::Float64)
    throwInputError(inputs, 0, "a float32 or float64 tensor");
  return {inputs[0]->type()};
}

void DoubleOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs) const {
  Tensor& out = reuseOrAllocate(outputs[0], inputs[0]->dtype(), inputs[0]->shape());
  binaryLoop(*inputs[0], *inputs[0], out, [](auto a, auto) { return a * 2; });
}

std::vector<ShapeExpr> DoubleOp::inferShape(const Apply&,
                                            std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> DoubleOp::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  return {Grad(outputGrads[0] * 2.0)};
}

std::optional<std::vector<VarPtr>> DoubleOp::pushforward(const Apply&,
                                                         std::span<const VarPtr> tangents) const {
  if (!tangents[0]) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{tangents[0] * 2.0};
}

// --- ProdOp and SumDiffOp share their typing
// -------------------------------------------------------

namespace {
TensorType pairType(const Op& op, std::span<const VarPtr> inputs) {
  if (inputs.size() != 2)
    throw TypeError(op.str() + ": expected 2 inputs, found " + std::to_string(inputs.size()));
  const TensorType& x = inputs[0]->type();
  const TensorType& y = inputs[1]->type();
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    throw TypeError(op.str() + ": input 0: expected a float32 or float64 tensor, found " + x.str());
  if (y.dtype() != x.dtype() || y.ndim() != x.ndim() || !y.isCompatibleWith(x))
    throw TypeError(op.str() + ": input 1: expected a tensor like input 0 (" + x.str() +
                    "), found " + y.str());
  return x;
}

void requireSameShape(const Op& op, const Tensor& x, const Tensor& y) {
  if (x.shape() != y.shape())
    throw std::invalid_argument(op.str() + ": expected inputs of the same shape, found " +
                                shapeToString(x.shape()) + " and " + shapeToString(y.shape()));
}
}  // namespace

std::vector<TensorType> ProdOp::outputTypes(std::span<const VarPtr> inputs) const {
  return {pairType(*this, inputs)};
}

void ProdOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                     std::span<Tensor* const> outputs) const {
  requireSameShape(*this, *inputs[0], *inputs[1]);
  Tensor& out = reuseOrAllocate(outputs[0], inputs[0]->dtype(), inputs[0]->shape());
  binaryLoop(*inputs[0], *inputs[1], out, [](auto a, auto b) { return a * b; });
}

std::vector<ShapeExpr> ProdOp::inferShape(const Apply&,
                                          std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> ProdOp::pullback(const Apply& node, std::span<const VarPtr> outputGrads) const {
  return {Grad(outputGrads[0] * node.input(1)), Grad(outputGrads[0] * node.input(0))};
}

std::vector<TensorType> SumDiffOp::outputTypes(std::span<const VarPtr> inputs) const {
  const TensorType t = pairType(*this, inputs);
  return {t, t};
}

void SumDiffOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                        std::span<Tensor* const> outputs) const {
  requireSameShape(*this, *inputs[0], *inputs[1]);
  Tensor& sum = reuseOrAllocate(outputs[0], inputs[0]->dtype(), inputs[0]->shape());
  Tensor& diff = reuseOrAllocate(outputs[1], inputs[0]->dtype(), inputs[0]->shape());
  binaryLoop(*inputs[0], *inputs[1], sum, [](auto a, auto b) { return a + b; });
  binaryLoop(*inputs[0], *inputs[1], diff, [](auto a, auto b) { return a - b; });
}

std::vector<ShapeExpr> SumDiffOp::inferShape(const Apply&,
                                             std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0], inputShapes[0]};
}

std::vector<Grad> SumDiffOp::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  // The engine passes zeros for an output the cost does not use, so both are always present.
  return {Grad(outputGrads[0] + outputGrads[1]), Grad(outputGrads[0] - outputGrads[1])};
}

// --- Builders and registration -------------------------------------------------------------------

VarPtr doubleOp(const VarPtr& x, std::source_location site) {
  static const auto op = std::make_shared<DoubleOp>();
  return (*op)({x}, site);
}

VarPtr prodOp(const VarPtr& x, const VarPtr& y, std::source_location site) {
  static const auto op = std::make_shared<ProdOp>();
  return (*op)({x, y}, site);
}

std::vector<VarPtr> sumDiffOp(const VarPtr& x, const VarPtr& y, std::source_location site) {
  static const auto op = std::make_shared<SumDiffOp>();
  return op->makeNode({x, y}, site)->outputs();
}

void registerTutorialOps(OpRegistry& registry) {
  auto noProps = [](const char* name, OpPtr op) {
    return [name, op](const nlohmann::json& props) -> OpPtr {
      if (!props.is_object() || !props.empty())
        throw std::invalid_argument(std::string(name) + " has no props, found " + props.dump());
      return op;
    };
  };
  registry.add("DoubleOp", noProps("DoubleOp", std::make_shared<DoubleOp>()));
  registry.add("ProdOp", noProps("ProdOp", std::make_shared<ProdOp>()));
  registry.add("SumDiffOp", noProps("SumDiffOp", std::make_shared<SumDiffOp>()));
}

}  // namespace tscope::examples

#include "engine/ops/shape/shape_vector.h"

#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/tensor/tensor_internal.h"

namespace tscope::engine {

using namespace shape_detail;

// --- Shape ---------------------------------------------------------------------------------------

std::vector<TensorType> ShapeOp::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  return {TensorType(DType::Int64, {inputs[0]->type().ndim()})};
}

void ShapeOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                      std::span<Tensor* const> outputs) const {
  const Shape& shape = inputs[0]->shape();
  const std::int64_t n = static_cast<std::int64_t>(shape.size());
  Tensor& out = reuseOrAllocate(outputs[0], DType::Int64, std::span<const std::int64_t>(&n, 1));
  std::copy(shape.begin(), shape.end(), out.data<std::int64_t>());
}

std::vector<ShapeExpr> ShapeOp::inferShape(const Apply& node, std::span<const ShapeExpr>) const {
  return {ShapeExpr{constantInt(node.input(0)->type().ndim())}};
}

std::vector<Grad> ShapeOp::pullback(const Apply&, std::span<const VarPtr>) const {
  return {Grad::disconnected()};
}

std::optional<std::vector<VarPtr>> ShapeOp::pushforward(const Apply&,
                                                        std::span<const VarPtr>) const {
  return std::vector<VarPtr>{nullptr};
}

std::vector<std::vector<bool>> ShapeOp::connectionPattern(const Apply&) const {
  return {{false}};
}

OpPtr ShapeOp::fromProps(const nlohmann::json& props) {
  propKeys(props, "Shape", {});
  return std::make_shared<ShapeOp>();
}

// --- MakeVector ----------------------------------------------------------------------------------

nlohmann::json MakeVector::props() const {
  return {{"dtype", dtypeName(m_dtype)}};
}

std::vector<TensorType> MakeVector::outputTypes(std::span<const VarPtr> inputs) const {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i]->type();
    if (t.ndim() != 0 || promoteTypes(t.dtype(), m_dtype) != m_dtype)
      throwInputError(
          inputs, static_cast<int>(i),
          "a 0-d scalar that converts to " + std::string(dtypeName(m_dtype)) + " without loss");
  }
  return {TensorType(m_dtype, {static_cast<std::int64_t>(inputs.size())})};
}

void MakeVector::perform(const Apply&, std::span<const Tensor* const> inputs,
                         std::span<Tensor* const> outputs) const {
  const std::int64_t n = static_cast<std::int64_t>(inputs.size());
  Tensor& out = reuseOrAllocate(outputs[0], m_dtype, std::span<const std::int64_t>(&n, 1));
  dispatchDType(m_dtype, [&](auto outTag) {
    using O = decltype(outTag);
    O* dst = out.data<O>();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      dispatchDType(inputs[i]->dtype(), [&](auto inTag) {
        using I = decltype(inTag);
        dst[i] = detail::convertValue<O>(*static_cast<const I*>(inputs[i]->rawData()));
      });
    }
  });
}

std::vector<ShapeExpr> MakeVector::inferShape(const Apply& node, std::span<const ShapeExpr>) const {
  return {ShapeExpr{constantInt(node.nInputs())}};
}

std::vector<Grad> MakeVector::pullback(const Apply& node,
                                       std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads;
  for (int i = 0; i < node.nInputs(); ++i) {
    const DType in = node.input(i)->type().dtype();
    if (!isFloat(m_dtype) || !isFloat(in)) {
      grads.push_back(Grad::disconnected());  // integer entries (sizes) carry no gradient
      continue;
    }
    VarPtr gi = select(outputGrads[0], 0, i);
    grads.push_back(gi->type().dtype() == in ? gi : cast(gi, in));
  }
  return grads;
}

std::optional<std::vector<VarPtr>> MakeVector::pushforward(const Apply& node,
                                                           std::span<const VarPtr> tangents) const {
  bool any = false;
  std::vector<VarPtr> inputs;
  for (int i = 0; i < node.nInputs(); ++i) {
    const VarPtr& t = tangents[static_cast<std::size_t>(i)];
    any = any || t != nullptr;
    inputs.push_back(t ? t : constant(0.0, node.input(i)->type().dtype()));
  }
  if (!any) return std::vector<VarPtr>{nullptr};
  return std::vector<VarPtr>{operator()(std::move(inputs))};
}

OpPtr MakeVector::fromProps(const nlohmann::json& props) {
  propKeys(props, "MakeVector", {"dtype"});
  return std::make_shared<MakeVector>(propDType(props, "MakeVector", "dtype"));
}

// --- Builders ------------------------------------------------------------------------------------

VarPtr shapeVector(const VarPtr& x, std::source_location site) {
  static const OpPtr op = std::make_shared<ShapeOp>();
  return op->operator()({x}, site);
}

VarPtr makeVector(const std::vector<VarPtr>& scalars, std::source_location site) {
  if (scalars.empty()) return makeVector(scalars, DType::Int64, site);
  DType dtype = scalars[0]->type().dtype();
  for (const VarPtr& s : scalars) dtype = promoteTypes(dtype, s->type().dtype());
  return makeVector(scalars, dtype, site);
}

VarPtr makeVector(const std::vector<VarPtr>& scalars, DType dtype, std::source_location site) {
  return std::make_shared<MakeVector>(dtype)->operator()(scalars, site);
}

std::optional<ShapeExpr> vectorEntries(const VarPtr& v, std::source_location site) {
  const TensorType& t = v->type();
  if (t.ndim() != 1 || t.shape()[0] == kUnknownDim) return std::nullopt;
  ShapeExpr out;
  if (v->kind() == Variable::Kind::Constant) {
    for (double d : static_cast<const Constant&>(*v).value().toDoubles())
      out.push_back(constantInt(static_cast<std::int64_t>(d), site));
    return out;
  }
  if (v->owner() && dynamic_cast<const MakeVector*>(&v->owner()->op())) {
    for (const VarPtr& in : v->owner()->inputs()) out.push_back(toInt64(in, site));
    return out;
  }
  for (std::int64_t i = 0; i < t.shape()[0]; ++i)
    out.push_back(toInt64(select(v, 0, i, site), site));
  return out;
}

}  // namespace tscope::engine

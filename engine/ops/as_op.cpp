#include "engine/ops/as_op.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/tensor/tensor.h"

namespace tscope::engine {

AsOp::AsOp(std::string opName, std::vector<TensorType> inputTypes,
           std::vector<TensorType> outputTypes, AsOpFunction function,
           AsOpShapeFunction shapeFunction)
    : m_name(std::move(opName)),
      m_inputTypes(std::move(inputTypes)),
      m_outputTypes(std::move(outputTypes)),
      m_function(std::move(function)),
      m_shapeFunction(std::move(shapeFunction)) {
  if (m_name.empty()) throw std::invalid_argument("asOp: the op needs a name");
  if (!m_function) throw std::invalid_argument("asOp " + m_name + ": the function is empty");
  if (m_outputTypes.empty())
    throw std::invalid_argument("asOp " + m_name + ": declare at least one output type");
}

std::vector<TensorType> AsOp::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, m_inputTypes.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i]->type();
    const TensorType& want = m_inputTypes[i];
    if (t.dtype() != want.dtype() || !t.isCompatibleWith(want))
      throwInputError(inputs, static_cast<int>(i), want.str());
  }
  return m_outputTypes;
}

void AsOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                   std::span<Tensor* const> outputs) const {
  std::vector<Tensor> in;
  in.reserve(inputs.size());
  for (const Tensor* t : inputs) in.push_back(*t);
  std::vector<Tensor> out = m_function(in);
  if (out.size() != m_outputTypes.size())
    throw std::runtime_error(m_name + ": the function returned " + std::to_string(out.size()) +
                             " tensors, expected " + std::to_string(m_outputTypes.size()));
  for (std::size_t o = 0; o < out.size(); ++o) {
    Tensor value = m_outputTypes[o].filter(out[o], "output " + std::to_string(o) + " of " + m_name);
    // An output that is an input (or a view of one) would alias it without a declared viewMap.
    for (const Tensor* t : inputs)
      if (value.sharesStorageWith(*t)) value = value.clone();
    *outputs[o] = std::move(value);
  }
}

std::vector<ShapeExpr> AsOp::inferShape(const Apply& node,
                                        std::span<const ShapeExpr> inputShapes) const {
  if (!m_shapeFunction) return Op::inferShape(node, inputShapes);
  return m_shapeFunction(inputShapes);
}

std::vector<Grad> AsOp::pullback(const Apply& node, std::span<const VarPtr>) const {
  return std::vector<Grad>(
      static_cast<std::size_t>(node.nInputs()),
      Grad::undefined(m_name + " is an asOp, which has no gradient; subclass Op to give it one"));
}

std::shared_ptr<const AsOp> asOp(std::string name, std::vector<TensorType> inputTypes,
                                 std::vector<TensorType> outputTypes, AsOpFunction function,
                                 AsOpShapeFunction shapeFunction) {
  return std::make_shared<const AsOp>(std::move(name), std::move(inputTypes),
                                      std::move(outputTypes), std::move(function),
                                      std::move(shapeFunction));
}

void registerAsOp(OpRegistry& registry, std::shared_ptr<const AsOp> op) {
  registry.add(op->name(), [op](const nlohmann::json& props) -> OpPtr {
    if (!props.is_object() || !props.empty())
      throw std::invalid_argument(op->name() + ": an asOp has no props, found " + props.dump());
    return op;
  });
}

}  // namespace tscope::engine

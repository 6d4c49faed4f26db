#include "engine/ops/shape/dimshuffle.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"

#include <algorithm>

namespace tscope::engine {

DimShuffle::DimShuffle(int inputNdim, std::vector<int> order) : m_inputNdim(inputNdim), m_order(std::move(order)) {
  if (inputNdim < 0 || inputNdim > 64)
    throw std::invalid_argument("DimShuffle: input_ndim must be in 0..64, found " + std::to_string(inputNdim));
  if (m_order.size() > 64) throw std::invalid_argument("DimShuffle: more than 64 output axes");
  std::vector<bool> used(static_cast<std::size_t>(inputNdim), false);
  for (int axis : m_order) {
    if (axis == kNewAxis) continue;
    if (axis < 0 || axis >= inputNdim)
      throw std::invalid_argument("DimShuffle: axis " + std::to_string(axis) +
                                  " in the order is out of range for a " +
                                  std::to_string(inputNdim) + "-d input");
    if (used[static_cast<std::size_t>(axis)])
      throw std::invalid_argument("DimShuffle: axis " + std::to_string(axis) + " appears twice in the order");
    used[static_cast<std::size_t>(axis)] = true;
  }
}

nlohmann::json DimShuffle::props() const {
  nlohmann::json order = nlohmann::json::array();
  for (int axis : m_order) order.push_back(axis == kNewAxis ? nlohmann::json("x") : nlohmann::json(axis));
  return {{"input_ndim", m_inputNdim}, {"order", order}};
}

std::string DimShuffle::str() const {
  std::string out = "DimShuffle{";
  for (std::size_t i = 0; i < m_order.size(); ++i) {
    if (i) out += ",";
    out += m_order[i] == kNewAxis ? "x" : std::to_string(m_order[i]);
  }
  return out + "}";
}

std::vector<TensorType> DimShuffle::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, 1);
  const TensorType& t = inputs[0]->type();
  if (t.ndim() != m_inputNdim) throwInputError(inputs, 0, "a " + std::to_string(m_inputNdim) + "-d tensor");
  for (int axis = 0; axis < m_inputNdim; ++axis) {
    if (std::find(m_order.begin(), m_order.end(), axis) != m_order.end()) continue;
    if (t.shape()[static_cast<std::size_t>(axis)] != 1)
      throwInputError(inputs, 0, "axis " + std::to_string(axis) + " of static size 1 (it is dropped)");
  }
  std::vector<std::int64_t> shape;
  for (int axis : m_order) shape.push_back(axis == kNewAxis ? 1 : t.shape()[static_cast<std::size_t>(axis)]);
  return {TensorType(t.dtype(), std::move(shape), t.device())};
}

OpPtr DimShuffle::fromProps(const nlohmann::json& props) {
  if (!props.contains("input_ndim") || !props["input_ndim"].is_number_integer())
    throw std::invalid_argument("DimShuffle: props need \"input_ndim\" (an integer)");
  if (!props.contains("order") || !props["order"].is_array())
    throw std::invalid_argument("DimShuffle: props need \"order\" (an array of axes and \"x\")");
  std::int64_t ndim = props["input_ndim"].get<std::int64_t>();
  if (ndim < 0 || ndim > 64) throw std::invalid_argument("DimShuffle: input_ndim must be in 0..64");
  std::vector<int> order;
  for (const auto& entry : props["order"]) {
    if (entry.is_string() && entry.get<std::string>() == "x") {
      order.push_back(kNewAxis);
    } else if (entry.is_number_integer() && entry.get<std::int64_t>() >= 0 && entry.get<std::int64_t>() < 64) {
      order.push_back(static_cast<int>(entry.get<std::int64_t>()));
    } else {
      throw std::invalid_argument("DimShuffle: each order entry must be an axis in 0..63 or \"x\", found " + entry.dump());
    }
  }
  return std::make_shared<DimShuffle>(static_cast<int>(ndim), std::move(order));
}

VarPtr dimshuffle(const VarPtr& x, std::vector<int> order, std::source_location site) {
  return std::make_shared<DimShuffle>(x->type().ndim(), std::move(order))->operator()({x}, site);
}

VarPtr transpose(const VarPtr& x, std::source_location site) {
  std::vector<int> order;
  for (int axis = x->type().ndim() - 1; axis >= 0; --axis) order.push_back(axis);
  return dimshuffle(x, std::move(order), site);
}

void registerShapeOps(OpRegistry& registry) { registry.add("DimShuffle", &DimShuffle::fromProps); }

}  // namespace tscope::engine

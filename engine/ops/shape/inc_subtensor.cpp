// IncSubtensor: x with a basic-indexing region incremented or replaced (subtensor.h).
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/advanced_index.h"
#include "engine/ops/shape/advanced_subtensor.h"
#include "engine/ops/shape/shape_common.h"
#include "engine/ops/shape/subtensor.h"
#include "engine/tensor/tensor.h"

namespace tscope::engine {

using namespace shape_detail;

nlohmann::json IncSubtensor::props() const {
  return {{"idx_list", m_indices.toJson()}, {"set_instead_of_inc", m_set}, {"inplace", m_inplace}};
}

std::string IncSubtensor::str() const {
  return std::string(m_set ? "SetSubtensor{" : "IncSubtensor{") + m_indices.str() +
         (m_inplace ? ",inplace}" : "}");
}

std::vector<TensorType> IncSubtensor::outputTypes(std::span<const VarPtr> inputs) const {
  if (inputs.size() < 2)
    throw TypeError(str() + ": expected x, y and " + std::to_string(m_indices.nInputs()) +
                    " index inputs, found " + std::to_string(inputs.size()) + " inputs");
  const TensorType& x = inputs[0]->type();
  const TensorType& y = inputs[1]->type();
  const std::vector<std::int64_t> region = m_indices.outputShape(x, inputs.subspan(2), str());
  if (auto expected = incValueMismatch(x, y, region, "the region x[" + m_indices.str() + "]"))
    throwInputError(inputs, 1, *expected);
  return {x};
}

void IncSubtensor::perform(const Apply&, std::span<const Tensor* const> inputs,
                           std::span<Tensor* const> outputs) const {
  const Tensor& x = *inputs[0];
  Tensor& out = prepareIncOutput(x, outputs[0], m_inplace);
  Tensor region = m_indices.apply(out, inputs.subspan(2), str());
  Tensor y = broadcastOperand(*inputs[1], region.shape(), str() + ": y");
  if (m_set)
    region.copyFrom(y);
  else
    addElements(region, y);
}

std::vector<ShapeExpr> IncSubtensor::inferShape(const Apply&,
                                                std::span<const ShapeExpr> inputShapes) const {
  return {inputShapes[0]};
}

std::vector<Grad> IncSubtensor::pullback(const Apply& node,
                                         std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads(static_cast<std::size_t>(node.nInputs()), Grad::disconnected());
  const VarPtr& g = outputGrads[0];
  std::vector<VarPtr> scalars(node.inputs().begin() + 2, node.inputs().end());
  const VarPtr& x = node.input(0);
  const VarPtr& y = node.input(1);
  if (isFloat(x->type().dtype())) {
    if (m_set) {
      // The replaced region of x does not reach the output.
      std::vector<VarPtr> inputs{g, constant(0.0, g->type().dtype())};
      inputs.insert(inputs.end(), scalars.begin(), scalars.end());
      grads[0] = std::make_shared<IncSubtensor>(m_indices, true)->operator()(std::move(inputs));
    } else {
      grads[0] = g;
    }
  }
  if (isFloat(y->type().dtype())) {
    std::vector<VarPtr> inputs{g};
    inputs.insert(inputs.end(), scalars.begin(), scalars.end());
    VarPtr gRegion = std::make_shared<Subtensor>(m_indices)->operator()(std::move(inputs));
    grads[1] = sumToShapeOf(gRegion, y);
  }
  return grads;
}

std::optional<std::vector<VarPtr>> IncSubtensor::pushforward(
    const Apply& node, std::span<const VarPtr> tangents) const {
  // Linear in (x, y) together: the tangent is tx with its region incremented (replaced) by ty.
  if (!tangents[0] && !tangents[1]) return std::vector<VarPtr>{nullptr};
  std::vector<VarPtr> inputs(node.inputs().begin(), node.inputs().end());
  inputs[0] = tangents[0] ? tangents[0] : zerosLike(node.input(0));
  inputs[1] = tangents[1] ? tangents[1] : constant(0.0, node.input(1)->type().dtype());
  return std::vector<VarPtr>{
      std::make_shared<IncSubtensor>(m_indices, m_set)->operator()(std::move(inputs))};
}

std::vector<std::vector<bool>> IncSubtensor::connectionPattern(const Apply& node) const {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(node.nInputs()), {false});
  pattern[0] = {true};
  pattern[1] = {true};
  return pattern;
}

DestroyMap IncSubtensor::destroyMap() const {
  if (!m_inplace) return {};
  return {{0, {0}}};
}

OpPtr IncSubtensor::fromProps(const nlohmann::json& props) {
  const std::string op = "IncSubtensor";
  propKeys(props, op, {"idx_list", "set_instead_of_inc", "inplace"});
  if (!props.contains("idx_list"))
    throw std::invalid_argument(op + ": props need \"idx_list\" (an array)");
  return std::make_shared<IncSubtensor>(IndexList::fromJson(props["idx_list"], op),
                                        propBool(props, op, "set_instead_of_inc", false),
                                        propBool(props, op, "inplace", false));
}

// --- Builders ------------------------------------------------------------------------------------

namespace {
VarPtr incOrSet(const VarPtr& x, const VarPtr& y, const std::vector<Idx>& indices, bool set,
                std::source_location site) {
  auto [list, scalars] = IndexList::fromIdx(indices);
  std::vector<VarPtr> inputs{x, y};
  inputs.insert(inputs.end(), scalars.begin(), scalars.end());
  return std::make_shared<IncSubtensor>(std::move(list), set)->operator()(std::move(inputs), site);
}

VarPtr incOrSetLike(const VarPtr& sub, const VarPtr& y, bool set, std::source_location site) {
  const char* what = set ? "setSubtensor" : "incSubtensor";
  const Apply* node = sub ? sub->owner() : nullptr;
  if (node) {
    if (auto* op = dynamic_cast<const Subtensor*>(&node->op())) {
      std::vector<VarPtr> inputs{node->input(0), y};
      inputs.insert(inputs.end(), node->inputs().begin() + 1, node->inputs().end());
      return std::make_shared<IncSubtensor>(op->indices(), set)
          ->
          operator()(std::move(inputs), site);
    }
    if (dynamic_cast<const AdvancedSubtensor1*>(&node->op()))
      return std::make_shared<AdvancedIncSubtensor1>(set)->operator()(
          {node->input(0), y, node->input(1)}, site);
    if (auto* op = dynamic_cast<const AdvancedSubtensor*>(&node->op())) {
      std::vector<VarPtr> inputs{node->input(0), y};
      inputs.insert(inputs.end(), node->inputs().begin() + 1, node->inputs().end());
      return std::make_shared<AdvancedIncSubtensor>(op->index(), set)
          ->
          operator()(std::move(inputs), site);
    }
  }
  throw TypeError(
      std::string(what) +
      ": expected the result of subtensor/slice/select, advancedSubtensor1 or advancedSubtensor as "
      "its first argument, found " +
      (node ? node->op().str() + " output" : std::string("a variable")) +
      (sub && !sub->name().empty() ? " '" + sub->name() + "'" : ""));
}
}  // namespace

VarPtr incSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<Idx>& indices,
                    std::source_location site) {
  return incOrSet(x, y, indices, false, site);
}

VarPtr setSubtensor(const VarPtr& x, const VarPtr& y, const std::vector<Idx>& indices,
                    std::source_location site) {
  return incOrSet(x, y, indices, true, site);
}

VarPtr incSubtensor(const VarPtr& sub, const VarPtr& y, std::source_location site) {
  return incOrSetLike(sub, y, false, site);
}

VarPtr setSubtensor(const VarPtr& sub, const VarPtr& y, std::source_location site) {
  return incOrSetLike(sub, y, true, site);
}

}  // namespace tscope::engine

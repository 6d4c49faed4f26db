#include "engine/ops/debug/breakpoint.h"

#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/tensor/tensor.h"

namespace tscope::engine {

BreakPointOp::BreakPointOp(std::string name, int nMonitored)
    : m_name(std::move(name)), m_n(nMonitored) {
  if (m_name.empty())
    throw GraphError("BreakPoint: the name is empty; name the breakpoint (\"loss_spike\")");
  if (m_n < 1)
    throw GraphError("BreakPoint{" + m_name + "}: expected at least one monitored value, found " +
                     std::to_string(m_n));
}

std::string BreakPointOp::str() const {
  return "BreakPoint{" + m_name + "}";
}

std::vector<TensorType> BreakPointOp::outputTypes(std::span<const VarPtr> inputs) const {
  checkInputCount(inputs, static_cast<std::size_t>(m_n) + 1);
  if (inputs[0]->type().ndim() != 0)
    throwInputError(inputs, 0, "a 0-d condition (bool or numeric; nonzero means it holds)");
  std::vector<TensorType> types;
  for (std::size_t i = 1; i < inputs.size(); ++i) types.push_back(inputs[i]->type());
  return types;
}

// Note [BreakPoint at run time] (breakpoint.h): aliasing only; the VM reads the condition.
void BreakPointOp::perform(const Apply&, std::span<const Tensor* const> inputs,
                           std::span<Tensor* const> outputs) const {
  for (std::size_t o = 0; o < outputs.size(); ++o) *outputs[o] = *inputs[o + 1];
}

std::vector<ShapeExpr> BreakPointOp::inferShape(const Apply&,
                                                std::span<const ShapeExpr> inputShapes) const {
  return std::vector<ShapeExpr>(inputShapes.begin() + 1, inputShapes.end());
}

std::vector<Grad> BreakPointOp::pullback(const Apply&, std::span<const VarPtr> outputGrads) const {
  std::vector<Grad> grads{Grad::disconnected()};
  for (const VarPtr& g : outputGrads) grads.emplace_back(g);
  return grads;
}

std::optional<std::vector<VarPtr>> BreakPointOp::pushforward(
    const Apply&, std::span<const VarPtr> tangents) const {
  return std::vector<VarPtr>(tangents.begin() + 1, tangents.end());
}

std::vector<std::vector<bool>> BreakPointOp::connectionPattern(const Apply&) const {
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(m_n) + 1,
                                         std::vector<bool>(static_cast<std::size_t>(m_n), false));
  for (int o = 0; o < m_n; ++o)
    pattern[static_cast<std::size_t>(o) + 1][static_cast<std::size_t>(o)] = true;
  return pattern;
}

ViewMap BreakPointOp::viewMap() const {
  ViewMap views;
  for (int o = 0; o < m_n; ++o) views[o] = {o + 1};
  return views;
}

bool BreakPointOp::holds(const Tensor& condition) {
  if (!condition.defined() || condition.numel() == 0) return false;
  return condition.item() != 0.0;
}

OpPtr BreakPointOp::fromProps(const nlohmann::json& props) {
  if (!props.is_object() || !props.contains("name") || !props["name"].is_string())
    throw std::invalid_argument("BreakPoint: prop \"name\" must be a string, found " +
                                props.dump());
  if (!props.contains("monitored") || !props["monitored"].is_number_integer())
    throw std::invalid_argument(
        "BreakPoint: prop \"monitored\" must be the number of monitored values, found " +
        props.dump());
  for (const auto& [key, value] : props.items())
    if (key != "name" && key != "monitored")
      throw std::invalid_argument("BreakPoint: unknown prop \"" + key +
                                  "\"; expected \"name\", \"monitored\"");
  const auto n = props["monitored"].get<std::int64_t>();
  if (n < 1 || n > 1'000'000)
    throw std::invalid_argument("BreakPoint: prop \"monitored\" is " + std::to_string(n) +
                                "; expected at least 1");
  try {
    return std::make_shared<const BreakPointOp>(props["name"].get<std::string>(),
                                                static_cast<int>(n));
  } catch (const GraphError& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<VarPtr> breakpoint(const std::string& name, const VarPtr& condition,
                               const std::vector<VarPtr>& monitored, std::source_location site) {
  if (!condition) throw TypeError("breakpoint(" + name + "): the condition is null");
  if (monitored.empty())
    throw TypeError("breakpoint(" + name +
                    "): expected at least one monitored variable, found none");
  std::vector<VarPtr> inputs{condition};
  for (std::size_t i = 0; i < monitored.size(); ++i) {
    if (!monitored[i])
      throw TypeError("breakpoint(" + name + "): monitored variable " + std::to_string(i) +
                      " is null");
    inputs.push_back(monitored[i]);
  }
  auto op = std::make_shared<const BreakPointOp>(name, static_cast<int>(monitored.size()));
  return op->makeNode(std::move(inputs), site)->outputs();
}

bool isDebugBarrier(const Op& op) {
  return dynamic_cast<const BreakPointOp*>(&op) != nullptr;
}

void registerDebugOps(OpRegistry& registry) {
  registry.add("BreakPoint", &BreakPointOp::fromProps);
}

}  // namespace tscope::engine

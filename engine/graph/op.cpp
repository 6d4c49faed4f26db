#include "engine/graph/op.h"

#include "engine/graph/errors.h"

#include <functional>
#include <typeinfo>

namespace tscope::engine {

namespace {
std::string propValueStr(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}
}  // namespace

std::string Op::str() const {
  nlohmann::json p = props();
  if (!p.is_object() || p.empty()) return name();
  std::string out = name() + "{";
  bool first = true;
  for (const auto& [key, value] : p.items()) {
    if (!first) out += ",";
    first = false;
    out += key + "=" + propValueStr(value);
  }
  return out + "}";
}

bool Op::equals(const Op& other) const {
  if (this == &other) return true;
  return typeid(*this) == typeid(other) && name() == other.name() && props() == other.props();
}

std::size_t Op::hash() const {
  return std::hash<std::string>{}(name()) * 31u + std::hash<std::string>{}(props().dump());
}

ApplyPtr Op::makeNode(std::vector<VarPtr> inputs, std::source_location site) const {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) throw TypeError(str() + ": input " + std::to_string(i) + " is a null variable");
  if (weak_from_this().expired())
    throw GraphError(str() + ": an op must be held by a std::shared_ptr to build nodes (std::make_shared)");
  std::vector<TensorType> types = outputTypes(inputs);
  return Apply::create(shared_from_this(), std::move(inputs), std::move(types), SourceSite::from(site));
}

VarPtr Op::operator()(std::vector<VarPtr> inputs, std::source_location site) const {
  ApplyPtr node = makeNode(std::move(inputs), site);
  if (node->nOutputs() != 1)
    throw GraphError(str() + " has " + std::to_string(node->nOutputs()) +
                     " outputs; use makeNode() and pick one");
  return node->output(0);
}

std::vector<std::vector<bool>> Op::connectionPattern(const Apply& node) const {
  return std::vector<std::vector<bool>>(static_cast<std::size_t>(node.nInputs()),
                                        std::vector<bool>(static_cast<std::size_t>(node.nOutputs()), true));
}

void Op::throwInputError(std::span<const VarPtr> inputs, int index, const std::string& expected) const {
  const Variable& v = *inputs[static_cast<std::size_t>(index)];
  std::string msg = str() + ": input " + std::to_string(index);
  if (!v.name().empty()) msg += " ('" + v.name() + "')";
  msg += ": expected " + expected + ", found " + v.type().str();
  if (!v.site().empty()) msg += "; the input was created at " + v.site().str();
  throw TypeError(msg);
}

void Op::checkInputCount(std::span<const VarPtr> inputs, std::size_t expected) const {
  if (inputs.size() != expected)
    throw TypeError(str() + ": expected " + std::to_string(expected) + " input" +
                    (expected == 1 ? "" : "s") + ", found " + std::to_string(inputs.size()));
}

OpaqueOp::OpaqueOp(std::string name, nlohmann::json props, std::string why)
    : m_name(std::move(name)), m_props(std::move(props)), m_why(std::move(why)) {}

std::string OpaqueOp::str() const {
  std::string base = Op::str();
  return base + " (opaque)";
}

std::vector<TensorType> OpaqueOp::outputTypes(std::span<const VarPtr>) const {
  throw TypeError(str() + ": an opaque op cannot infer its output types (" + m_why +
                  "); it only appears in graphs loaded from files");
}

}  // namespace tscope::engine

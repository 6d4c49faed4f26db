#include "engine/graph/op_registry.h"

#include <stdexcept>

namespace tscope::engine {

void OpRegistry::add(std::string name, Factory factory) {
  if (m_factories.count(name))
    throw std::logic_error("OpRegistry: op '" + name + "' is registered twice");
  m_factories.emplace(std::move(name), std::move(factory));
}

bool OpRegistry::contains(std::string_view name) const {
  return m_factories.find(name) != m_factories.end();
}

OpPtr OpRegistry::make(std::string_view name, const nlohmann::json& props) const {
  auto it = m_factories.find(name);
  if (it == m_factories.end())
    throw std::out_of_range("no op named '" + std::string(name) + "' is registered");
  if (!props.is_object())
    throw std::invalid_argument("the props of op '" + std::string(name) +
                                "' must be a JSON object, found " + std::string(props.type_name()));
  try {
    return it->second(props);
  } catch (const nlohmann::json::exception& e) {
    // A factory read a prop with the wrong JSON type: report it as bad props, not as a crash.
    throw std::invalid_argument("bad props for op '" + std::string(name) + "': " + e.what());
  }
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : m_factories) out.push_back(name);
  return out;
}

}  // namespace tscope::engine

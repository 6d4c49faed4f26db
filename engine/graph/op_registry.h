#pragma once
// OpRegistry: op name + props -> op. Families register explicitly (registerElemwiseOps(...), all
// called from registerAllOps in engine/ops/register_ops.h); no static-initialiser registration.

#include "engine/graph/op.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::engine {

class OpRegistry {
 public:
  // Builds an op from its props; throws std::invalid_argument naming the bad prop when they do not
  // describe a valid op.
  using Factory = std::function<OpPtr(const nlohmann::json& props)>;

  // Throws std::logic_error when the name is taken.
  void add(std::string name, Factory factory);
  bool contains(std::string_view name) const;
  // Throws std::out_of_range for an unknown name, std::invalid_argument for bad props.
  OpPtr make(std::string_view name, const nlohmann::json& props) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Factory, std::less<>> m_factories;
};

}  // namespace tscope::engine

#pragma once
// What function_graph.cpp and function_graph_check.cpp share: how errors name a variable or a
// node ("'x' (id 3) of type TensorType(float32, (?,))", "Elemwise{add} (id 7) created at
// model.cpp:12 (build)"), and the packed client keys (Note [Client positions]).

#include "engine/graph/apply.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tscope::engine::detail {

inline std::string describe(const Variable& v) {
  std::string out = "'" + v.displayName() + "'";
  if (v.id() >= 0) out += " (id " + std::to_string(v.id()) + ")";
  out += " of type " + v.type().str();
  return out;
}

inline std::string describe(const Apply& node) {
  std::string out = node.op().str();
  if (node.id() >= 0) out += " (id " + std::to_string(node.id()) + ")";
  if (!node.site().empty()) out += " created at " + node.site().str();
  return out;
}

// Note [Client positions]: a client packed into one key: the node's address (8-byte aligned,
// 48 bits) above the input index (19 bits); a graph output has no node. nullopt when it does not
// fit (an input index past half a million), and the variable then keeps the linear search.
inline constexpr std::size_t kIndexedClients = 32;
inline constexpr int kClientIndexBits = 19;

inline std::optional<std::uint64_t> clientKey(const Client& c) {
  const auto address = reinterpret_cast<std::uintptr_t>(c.node);
  if (c.index < 0 || c.index >= (1 << kClientIndexBits) || (address & 7) != 0 ||
      (address >> 48) != 0)
    return std::nullopt;
  return (static_cast<std::uint64_t>(address >> 3) << kClientIndexBits) |
         static_cast<std::uint64_t>(c.index);
}

}  // namespace tscope::engine::detail

#include "engine/graph/traversal.h"

#include <unordered_set>

namespace tscope::engine {

std::vector<VarPtr> graphInputs(std::span<const VarPtr> outputs) {
  std::vector<VarPtr> found;
  std::unordered_set<const Variable*> seenVars;
  std::unordered_set<const Apply*> seenNodes;
  std::vector<VarPtr> stack(outputs.rbegin(), outputs.rend());
  while (!stack.empty()) {
    VarPtr v = std::move(stack.back());
    stack.pop_back();
    if (!seenVars.insert(v.get()).second) continue;
    if (Apply* node = v->owner()) {
      if (!seenNodes.insert(node).second) continue;
      for (auto it = node->inputs().rbegin(); it != node->inputs().rend(); ++it) stack.push_back(*it);
    } else if (v->kind() != Variable::Kind::Constant) {
      found.push_back(std::move(v));
    }
  }
  return found;
}

std::vector<Apply*> ancestorNodes(std::span<const VarPtr> outputs, const std::function<bool(const Variable&)>& stop) {
  std::vector<Apply*> order;
  std::unordered_set<const Apply*> seen;
  // (node, next input to visit)
  std::vector<std::pair<Apply*, std::size_t>> stack;
  auto push = [&](const Variable& v) {
    Apply* node = v.owner();
    if (node == nullptr || (stop && stop(v)) || !seen.insert(node).second) return;
    stack.emplace_back(node, 0);
  };
  for (const VarPtr& out : outputs) {
    push(*out);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->inputs().size()) {
        const Variable& in = *node->inputs()[next++];
        push(in);
      } else {
        order.push_back(node);
        stack.pop_back();
      }
    }
  }
  return order;
}

}  // namespace tscope::engine

#include "engine/graph/traversal.h"

#include "engine/graph/flat_hash_map.h"

namespace tscope::engine {

std::vector<VarPtr> graphInputs(std::span<const VarPtr> outputs) {
  // Open-addressing sets and a stack of borrowed handles: no allocation and no reference-count
  // traffic per visited node (this walk runs over the whole user graph at every compile).
  std::vector<VarPtr> found;
  FlatHashMap<const Variable*, bool> seenFree;
  FlatHashMap<const Apply*, bool> seenNodes;
  std::vector<const VarPtr*> stack;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back(&*it);
  while (!stack.empty()) {
    const VarPtr& v = *stack.back();
    stack.pop_back();
    if (Apply* node = v->owner()) {
      if (!seenNodes.tryEmplace(node, true).second) continue;
      const auto& ins = node->inputs();
      for (auto it = ins.rbegin(); it != ins.rend(); ++it) stack.push_back(&*it);
    } else if (v->kind() != Variable::Kind::Constant && seenFree.tryEmplace(v.get(), true).second) {
      found.push_back(v);
    }
  }
  return found;
}

std::vector<Apply*> ancestorNodes(std::span<const VarPtr> outputs, const std::function<bool(const Variable&)>& stop) {
  std::vector<Apply*> order;
  FlatHashMap<const Apply*, bool> seen;
  // (node, next input to visit)
  std::vector<std::pair<Apply*, std::size_t>> stack;
  auto push = [&](const Variable& v) {
    Apply* node = v.owner();
    if (node == nullptr || (stop && stop(v)) || !seen.tryEmplace(node, true).second) return;
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

#include "engine/graph/traversal.h"

#include "engine/graph/walk_memo.h"

namespace tscope::engine {

std::vector<VarPtr> graphInputs(std::span<const VarPtr> outputs) {
  // Walk marks (Note [Walk marks]) and a stack of borrowed handles: no allocation and no
  // reference-count traffic per visited node (this walk runs over the whole user graph at every
  // compile).
  std::vector<VarPtr> found;
  WalkMemo seen;
  std::vector<const VarPtr*> stack;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back(&*it);
  while (!stack.empty()) {
    const VarPtr& v = *stack.back();
    stack.pop_back();
    if (Apply* node = v->owner()) {
      if (!seen.claim(*node, 0)) continue;
      const auto& ins = node->inputs();
      for (auto it = ins.rbegin(); it != ins.rend(); ++it) stack.push_back(&*it);
    } else if (v->kind() != Variable::Kind::Constant && seen.claim(*v, 0)) {
      found.push_back(v);
    }
  }
  return found;
}

std::vector<Apply*> ancestorNodes(std::span<const VarPtr> outputs, const std::function<bool(const Variable&)>& stop) {
  std::vector<Apply*> order;
  WalkMemo seen;  // Note [Walk marks]
  // (node, next input to visit)
  std::vector<std::pair<Apply*, std::size_t>> stack;
  auto push = [&](const Variable& v) {
    Apply* node = v.owner();
    if (node == nullptr || (stop && stop(v)) || !seen.claim(*node, 0)) return;
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

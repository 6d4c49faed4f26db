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

}  // namespace tscope::engine

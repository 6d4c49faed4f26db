#include "engine/graph/traversal.h"

#include "engine/graph/graph_walk.h"
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

std::vector<Apply*> ancestorNodes(std::span<const VarPtr> outputs,
                                  const std::function<bool(const Variable&)>& stop) {
  std::vector<Variable*> roots;
  roots.reserve(outputs.size());
  for (const VarPtr& out : outputs) roots.push_back(out.get());
  return detail::ancestorsInOrder(roots, [&](const Variable& v) { return stop && stop(v); });
}

}  // namespace tscope::engine

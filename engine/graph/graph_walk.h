#pragma once
// The depth-first walk over a caller's graph that FunctionGraph construction and import make, and
// traversal.h's ancestorNodes (internal to the engine's graph sources; not part of its interface).

#include "engine/graph/apply.h"
#include "engine/graph/walk_memo.h"

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace tscope::engine::detail {

// The nodes that compute `roots`, in topological order, stopping at variables for which
// `isKnown` holds (they and their ancestors are not visited). Iterative: graphs can be deep.
// `memo` (Note [Walk marks]) ends up holding each returned node's position in the order.
// `finished(node)` runs as each node takes its place in the order, while the walk still has the
// node at hand: work done there does not read the node back from memory in a second pass.
template <class IsKnown, class Finished>
std::vector<Apply*> ancestorsInOrder(const std::vector<Variable*>& roots, IsKnown isKnown,
                                     WalkMemo& memo, Finished finished) {
  constexpr std::uint32_t kOpen = ~std::uint32_t{0};
  std::vector<Apply*> order;
  std::vector<std::pair<Apply*, int>> stack;
  auto push = [&](Variable* v) {
    if (!v->owner() || isKnown(*v)) return;
    if (memo.claim(*v->owner(), kOpen)) stack.emplace_back(v->owner(), 0);
  };
  for (Variable* root : roots) {
    push(root);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->nInputs()) {
        Variable* in = node->input(next++).get();
        push(in);  // may reallocate the stack: `node`/`next` are not used after this
      } else {
        *memo.find(*node) = static_cast<std::uint32_t>(order.size());
        order.push_back(node);
        finished(node);
        stack.pop_back();
      }
    }
  }
  return order;
}

template <class IsKnown>
std::vector<Apply*> ancestorsInOrder(const std::vector<Variable*>& roots, IsKnown isKnown) {
  WalkMemo memo;
  return ancestorsInOrder(roots, isKnown, memo, [](Apply*) {});
}

// Note [Fresh ids in the walk]: a graph built by hand has no ids yet; FunctionGraph gives them at
// the end of init, in import order (flushPendingIds), in a second pass over every node and
// variable, which at 100k nodes have left the caches by then. A clone of such a graph gives the
// same ids while the walk makes each copy, in the order init imports them: the inputs, then per
// node its constants where first used, the node and its outputs, then constant outputs. As soon
// as one object carries an id (a graph that was in a FunctionGraph, or read from a file), the ids
// given so far are taken back and init's deferred order decides, so preset ids stay as they were.
class FreshIds {
 public:
  template <class T>
  void give(T& object) {
    if (!m_fresh) return;
    if (object.id() >= 0) {
      takeBack();
      return;
    }
    object.presetId(m_next++);
    if constexpr (std::is_same_v<T, Apply>)
      m_nodes.push_back(&object);
    else
      m_variables.push_back(&object);
  }

 private:
  void takeBack() {
    m_fresh = false;
    for (Apply* node : m_nodes) node->presetId(-1);
    for (Variable* var : m_variables) var->presetId(-1);
    m_nodes = {};
    m_variables = {};
  }

  bool m_fresh = true;
  std::int64_t m_next = 0;
  std::vector<Apply*> m_nodes;
  std::vector<Variable*> m_variables;
};

}  // namespace tscope::engine::detail

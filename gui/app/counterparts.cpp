#include "gui/app/counterparts.h"

#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "visualizers/model/view_model.h"

namespace tscope::gui {

Counterparts::Counterparts(const engine::FunctionGraph& left, const engine::FunctionGraph& right,
                           std::span<const engine::RewriteRecord> records)
    : m_left(&left), m_right(&right) {
  for (const engine::RewriteRecord& record : records) {
    for (const auto& [oldId, newId] : record.replaced) {
      if (oldId == newId) continue;
      // A variable is replaced once (it leaves the graph); should a log say otherwise, the later
      // replacement is the one the right graph reflects.
      m_forward[oldId] = newId;
      m_backward[newId].push_back(oldId);
    }
  }
}

std::int64_t Counterparts::mapVariable(std::int64_t id, bool toRight) const {
  const engine::FunctionGraph* target = toRight ? m_right : m_left;
  if (!target) return -1;
  if (toRight) {
    // Chase old -> new; the last variable on the chain that the right graph holds stands for it.
    // The step bound guards against a malformed log with a cycle.
    std::int64_t found = -1;
    std::int64_t current = id;
    for (std::size_t steps = 0; steps <= m_forward.size(); ++steps) {
      auto it = m_forward.find(current);
      if (it == m_forward.end()) break;
      current = it->second;
      if (target->variableById(current)) found = current;
    }
    if (found >= 0) return found;
    return target->variableById(id) ? id : -1;
  }
  if (target->variableById(id)) return id;  // ids are never reused: same id, same variable
  // Breadth first over new -> olds, in log order.
  std::vector<std::int64_t> queue{id};
  std::size_t visitedBound = m_backward.size() + 1;
  for (std::size_t head = 0; head < queue.size() && head <= visitedBound; ++head) {
    auto it = m_backward.find(queue[head]);
    if (it == m_backward.end()) continue;
    for (std::int64_t old : it->second) {
      if (target->variableById(old)) return old;
      queue.push_back(old);
    }
  }
  return -1;
}

std::int64_t Counterparts::mapId(std::int64_t id, bool toRight) const {
  const engine::FunctionGraph* source = toRight ? m_left : m_right;
  const engine::FunctionGraph* target = toRight ? m_right : m_left;
  if (!source || !target) return -1;
  if (const engine::Apply* apply = source->nodeById(id)) {
    if (target->nodeById(id)) return id;
    for (int i = 0; i < apply->nOutputs(); ++i) {
      const std::int64_t mapped = mapVariable(apply->outputRef(i).id(), toRight);
      if (mapped < 0) continue;
      // The Apply that now computes the value stands for the one that did; a value that became
      // an input or a constant stands for itself.
      const engine::Variable* variable = target->variableById(mapped);
      if (variable && variable->owner()) return variable->owner()->id();
      return mapped;
    }
    return -1;
  }
  if (source->variableById(id)) return mapVariable(id, toRight);
  return -1;
}

std::int64_t Counterparts::rightOf(std::int64_t leftId) const {
  return mapId(leftId, true);
}
std::int64_t Counterparts::leftOf(std::int64_t rightId) const {
  return mapId(rightId, false);
}

int counterpartNode(const vis::ViewModel& from, int node, const vis::ViewModel& to,
                    const Counterparts& counterparts, bool toRight) {
  if (node < 0 || node >= static_cast<int>(from.nodes().size())) return -1;
  const vis::ViewNode& viewNode = from.nodes()[static_cast<std::size_t>(node)];
  if (viewNode.graph && viewNode.graph != &from.graph()) {
    // Inside an OpFromGraph body: rewrites of the outer graph do not reach it, so the same id in
    // the same group is the same node.
    const QString& path = from.groups()[static_cast<std::size_t>(viewNode.group)].path;
    const int group = to.groupByPath(path);
    if (group < 0) return -1;
    for (int candidate : to.groups()[static_cast<std::size_t>(group)].nodes) {
      const vis::ViewNode& other = to.nodes()[static_cast<std::size_t>(candidate)];
      if (other.kind == viewNode.kind && other.graphId == viewNode.graphId) return candidate;
    }
    return -1;
  }
  const std::int64_t mapped =
      toRight ? counterparts.rightOf(viewNode.graphId) : counterparts.leftOf(viewNode.graphId);
  if (mapped < 0) return -1;
  const int apply = to.nodeOfApply(mapped);
  return apply >= 0 ? apply : to.nodeShowing(mapped);
}

}  // namespace tscope::gui

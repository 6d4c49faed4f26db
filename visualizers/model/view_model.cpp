#include "visualizers/model/view_model.h"

#include "visualizers/model/view_model_builder.h"

#include <algorithm>
#include <deque>

namespace tscope::vis {

QString roleText(VariableRole role) {
  switch (role) {
    case VariableRole::Input:
      return QStringLiteral("graph input");
    case VariableRole::Constant:
      return QStringLiteral("constant");
    case VariableRole::Shared:
      return QStringLiteral("shared variable");
    case VariableRole::Output:
      return QStringLiteral("graph output");
    case VariableRole::UnusedOutput:
      return QStringLiteral("unused output");
  }
  return {};
}

QString parameterModeName(ParameterMode mode) {
  switch (mode) {
    case ParameterMode::Boxes:
      return QStringLiteral("boxes");
    case ParameterMode::Badges:
      return QStringLiteral("badges");
    case ParameterMode::Hidden:
      return QStringLiteral("hidden");
  }
  return {};
}

std::optional<ParameterMode> parameterModeFromName(const QString& name) {
  for (ParameterMode mode : {ParameterMode::Boxes, ParameterMode::Badges, ParameterMode::Hidden})
    if (name == parameterModeName(mode)) return mode;
  return std::nullopt;
}

// --- GroupState ----------------------------------------------------------------------------------

void GroupState::setExpanded(const QString& path, bool expanded) {
  if (path.isEmpty()) return;  // the root is always expanded
  if (expanded)
    m_expanded.insert(path);
  else
    m_expanded.remove(path);
}

QStringList GroupState::toStringList() const {
  QStringList paths(m_expanded.begin(), m_expanded.end());
  paths.sort();
  return paths;
}

GroupState GroupState::fromStringList(const QStringList& paths) {
  GroupState state;
  for (const QString& path : paths) state.setExpanded(path, true);
  return state;
}

// --- ViewModel -----------------------------------------------------------------------------------

std::shared_ptr<const ViewModel> ViewModel::build(
    std::shared_ptr<const engine::FunctionGraph> graph, std::map<std::int64_t, HeatEntry> heat,
    bool heatColours, BuildOptions options) {
  return ViewModelBuilder(std::move(graph), std::move(heat), heatColours, options).build();
}

const std::vector<int>& ViewModel::parameterEdges(int node) const {
  return m_parameterEdges.at(static_cast<std::size_t>(node));
}

int ViewModel::badgeHost(int node) const {
  const ViewNode& view = m_nodes.at(static_cast<std::size_t>(node));
  if (!view.parameter) return -1;
  const std::vector<int>& out = outEdges(node);
  return out.empty() ? -1 : m_edges[static_cast<std::size_t>(out.front())].to;
}

const std::vector<int>& ViewModel::inEdges(int node) const {
  return m_in.at(static_cast<std::size_t>(node));
}
const std::vector<int>& ViewModel::outEdges(int node) const {
  return m_out.at(static_cast<std::size_t>(node));
}

int ViewModel::nodeOfApply(std::int64_t applyId) const {
  auto it = m_applyNode.find(applyId);
  return it == m_applyNode.end() ? -1 : it->second;
}

int ViewModel::nodeOfVariable(std::int64_t variableId) const {
  auto it = m_variableNode.find(variableId);
  return it == m_variableNode.end() ? -1 : it->second;
}

int ViewModel::nodeShowing(std::int64_t variableId) const {
  const int box = nodeOfVariable(variableId);
  if (box >= 0) return box;
  const engine::Variable* var = m_graph->variableById(variableId);
  if (!var || !var->owner()) return -1;
  const int owner = nodeOfApply(var->owner()->id());
  if (owner < 0) return -1;
  // An OpFromGraph output is drawn by the box of the inner output: the edges leave from there.
  const Group& group =
      m_groups[static_cast<std::size_t>(m_nodes[static_cast<std::size_t>(owner)].group)];
  if (group.ofgViewNode == owner) {
    for (int member : group.nodes) {
      const ViewNode& node = m_nodes[static_cast<std::size_t>(member)];
      if (node.kind != NodeKind::Variable || node.graph == m_graph.get()) continue;
      const auto& outputs = node.graph->outputs();
      const auto slot = static_cast<std::size_t>(var->index());
      if (slot < outputs.size() && outputs[slot].get() == node.variable) return member;
    }
  }
  return owner;
}

int ViewModel::groupByPath(const QString& path) const {
  auto it = m_groupByPath.find(path);
  return it == m_groupByPath.end() ? -1 : it->second;
}

bool ViewModel::isAncestor(int ancestorGroup, int group) const {
  for (int g = group; g >= 0; g = m_groups[static_cast<std::size_t>(g)].parent)
    if (g == ancestorGroup) return true;
  return false;
}

LevelItem ViewModel::visibleItem(int node, const GroupState& state,
                                 ParameterMode parameters) const {
  if (parameters != ParameterMode::Boxes)
    if (const int host = badgeHost(node); host >= 0) node = host;
  const int home = m_nodes.at(static_cast<std::size_t>(node)).group;
  int outermostCollapsed = -1;
  for (int g = home; g > 0; g = m_groups[static_cast<std::size_t>(g)].parent)
    if (!state.isExpanded(m_groups[static_cast<std::size_t>(g)].path)) outermostCollapsed = g;
  if (outermostCollapsed >= 0)
    return {LevelItem::Kind::CollapsedGroup, outermostCollapsed,
            QStringLiteral("g%1").arg(outermostCollapsed)};
  // An open OpFromGraph group shows its body, not the node: the cluster stands for it.
  if (m_groups[static_cast<std::size_t>(home)].ofgViewNode == node)
    return {LevelItem::Kind::ExpandedGroup, home, QStringLiteral("g%1").arg(home)};
  return {LevelItem::Kind::Node, node, QStringLiteral("n%1").arg(node)};
}

GroupState ViewModel::revealed(int node, GroupState state) const {
  // A parameter's group holds all its readers: opening the way to its first reader shows it in
  // every mode.
  if (const int host = badgeHost(node); host >= 0) node = host;
  int g = m_nodes.at(static_cast<std::size_t>(node)).group;
  // An OpFromGraph node is shown by its collapsed group: open the way to it, not the group.
  if (m_groups[static_cast<std::size_t>(g)].ofgViewNode == node)
    g = m_groups[static_cast<std::size_t>(g)].parent;
  for (; g > 0; g = m_groups[static_cast<std::size_t>(g)].parent)
    state.setExpanded(m_groups[static_cast<std::size_t>(g)].path, true);
  return state;
}

GroupState ViewModel::defaultState(int budget, ParameterMode parameters) const {
  // The items an expanded group shows in place of its one collapsed item.
  auto shownItems = [this, parameters](int group) {
    const Group& g = m_groups[static_cast<std::size_t>(group)];
    int items = static_cast<int>(g.nodes.size() + g.children.size()) - (g.ofgViewNode >= 0 ? 1 : 0);
    if (parameters != ParameterMode::Boxes)
      for (int node : g.nodes) items -= m_nodes[static_cast<std::size_t>(node)].parameter ? 1 : 0;
    return items;
  };
  GroupState state;
  int shown = shownItems(0);
  std::deque<int> queue(m_groups.front().children.begin(), m_groups.front().children.end());
  while (!queue.empty()) {
    const int group = queue.front();
    queue.pop_front();
    const int grown = shown + shownItems(group) - 1;
    if (grown > budget) continue;  // too big to open; smaller groups further on may still fit
    shown = grown;
    state.setExpanded(m_groups[static_cast<std::size_t>(group)].path, true);
    const auto& children = m_groups[static_cast<std::size_t>(group)].children;
    queue.insert(queue.end(), children.begin(), children.end());
  }
  return state;
}

GroupState ViewModel::allExpanded() const {
  GroupState state;
  for (const Group& group : m_groups) state.setExpanded(group.path, true);
  return state;
}

}  // namespace tscope::vis

// ViewModel::levelGraph: one group's contents as one graph for the layout service.
#include "visualizers/model/view_model.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tscope::vis {
namespace {

// A reference to an item before ports get their final positions (ports are appended after every
// node and group item: in-ports first, then out-ports, each in order of first appearance).
struct Ref {
  enum Kind : std::uint8_t { Item, InPort, OutPort } kind = Item;
  int index =
      -1;  // Item: item index; ports: the node producing the value (Note [One port per value])
};

std::uint64_t pairKey(int from, int to) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32) |
         static_cast<std::uint32_t>(to);
}

}  // namespace

// Cost: O(nodes + edges of the group's subtree × nesting depth); the rest of the graph is not
// visited.
LevelGraph ViewModel::levelGraph(int group, const GroupState& state,
                                 ParameterMode parameters) const {
  // Badges and Hidden: parameters are no items and their edges no edges (Note [Parameters]).
  const bool skipParameters = parameters != ParameterMode::Boxes;
  auto skipped = [&](int node) {
    return skipParameters && m_nodes[static_cast<std::size_t>(node)].parameter;
  };
  LevelGraph level;
  level.group = group;
  const Group& home = m_groups.at(static_cast<std::size_t>(group));

  std::unordered_map<int, int> nodeItem;   // direct member node -> item
  std::unordered_map<int, int> groupItem;  // child group -> item
  for (int node : home.nodes) {
    if (node == home.ofgViewNode || skipped(node)) continue;  // the OFG node: the collapsed group
    nodeItem.emplace(node, static_cast<int>(level.items.size()));
    level.items.push_back({LevelItem::Kind::Node, node, QStringLiteral("n%1").arg(node)});
  }
  for (int child : home.children) {
    groupItem.emplace(child, static_cast<int>(level.items.size()));
    const bool open = state.isExpanded(m_groups[static_cast<std::size_t>(child)].path);
    level.items.push_back({open ? LevelItem::Kind::ExpandedGroup : LevelItem::Kind::CollapsedGroup,
                           child, QStringLiteral("g%1").arg(child)});
  }

  // The item showing `node` at this level, or -1 when the node lies outside the group.
  auto itemOf = [&](int node) {
    int g = m_nodes[static_cast<std::size_t>(node)].group;
    if (g == group) return nodeItem.at(node);
    int child = -1;
    for (; g >= 0 && g != group; g = m_groups[static_cast<std::size_t>(g)].parent) child = g;
    return g < 0 ? -1 : groupItem.at(child);
  };

  struct RawEdge {
    Ref from, to;
    int edge;
  };
  std::vector<RawEdge> raw;
  std::vector<int> inPorts, outPorts;
  std::unordered_map<int, int> inPortSlot, outPortSlot;  // outside node -> position among its kind
  // Note [One port per value]: a port stands for one value crossing the group's border, keyed by
  // the node producing it: an in-port by its producer outside, an out-port by its producer inside,
  // however many readers the value has on the other side. A value read by two nodes outside (a
  // transformer block's output, read by the next block and by its residual Add) leaves through
  // one port and fans out outside, where its readers are; with one out-port per reader, as before,
  // dot drew two parallel edges to two ports side by side at the bottom of the group, and again at
  // each enclosing group's bottom.
  auto port = [](std::vector<int>& list, std::unordered_map<int, int>& slot, int producer) {
    if (slot.emplace(producer, static_cast<int>(list.size())).second) list.push_back(producer);
  };

  // Walk the subtree; `top` is the item at this level that holds the group being walked.
  std::vector<std::pair<int, int>> stack{{group, -1}};
  while (!stack.empty()) {
    const auto [g, top] = stack.back();
    stack.pop_back();
    const Group& current = m_groups[static_cast<std::size_t>(g)];
    for (auto it = current.children.rbegin(); it != current.children.rend();
         ++it)  // popped in order
      stack.emplace_back(*it, top >= 0 ? top : groupItem.at(*it));
    for (int node : current.nodes) {
      if (skipped(node)) continue;
      const int from = top >= 0 ? top : (node == home.ofgViewNode ? -1 : nodeItem.at(node));
      if (from < 0) continue;  // the OpFromGraph node of this group has no edges
      for (int e : m_out[static_cast<std::size_t>(node)]) {
        const int target = m_edges[static_cast<std::size_t>(e)].to;
        const int to = itemOf(target);
        if (to == from) continue;  // inside one child group: that child's level draws it
        if (to >= 0) {
          raw.push_back({{Ref::Item, from}, {Ref::Item, to}, e});
        } else {
          port(outPorts, outPortSlot, node);
          raw.push_back({{Ref::Item, from}, {Ref::OutPort, node}, e});
        }
      }
      for (int e : m_in[static_cast<std::size_t>(node)]) {
        const int source = m_edges[static_cast<std::size_t>(e)].from;
        if (skipped(source) || itemOf(source) >= 0) continue;  // seen from its source's side
        port(inPorts, inPortSlot, source);
        raw.push_back({{Ref::InPort, source}, {Ref::Item, from}, e});
      }
    }
  }

  const int firstInPort = static_cast<int>(level.items.size());
  for (int producer : inPorts)
    level.items.push_back({LevelItem::Kind::InPort, producer, QStringLiteral("i%1").arg(producer)});
  const int firstOutPort = static_cast<int>(level.items.size());
  for (int producer : outPorts)
    level.items.push_back(
        {LevelItem::Kind::OutPort, producer, QStringLiteral("o%1").arg(producer)});
  auto resolve = [&](const Ref& ref) {
    switch (ref.kind) {
      case Ref::InPort:
        return firstInPort + inPortSlot.at(ref.index);
      case Ref::OutPort:
        return firstOutPort + outPortSlot.at(ref.index);
      case Ref::Item:
        break;
    }
    return ref.index;
  };

  // Merge per (from item, to item), in order of first appearance.
  std::unordered_map<std::uint64_t, int> merged;
  for (const RawEdge& r : raw) {
    const int from = resolve(r.from), to = resolve(r.to);
    const ViewEdge& edge = m_edges[static_cast<std::size_t>(r.edge)];
    auto [it, fresh] = merged.emplace(pairKey(from, to), static_cast<int>(level.edges.size()));
    if (fresh) {
      level.edges.push_back({from, to, {r.edge}, edge.kind, edge.label});
      continue;
    }
    LevelEdge& lifted = level.edges[static_cast<std::size_t>(it->second)];
    lifted.edges.push_back(r.edge);
    if (lifted.kind != edge.kind) lifted.kind = EdgeKind::Plain;
    lifted.label = QString(QChar(0x00D7)) + QString::number(lifted.edges.size());
  }
  return level;
}

}  // namespace tscope::vis

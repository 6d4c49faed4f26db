#pragma once
// The view model: what the graph view draws, derived from a FunctionGraph in d3viz's conventions
// (REFERENCE.md "d3viz"), plus the grouping of nodes into scopes and OpFromGraph bodies.
//
// A ViewModel is immutable once built (build it on a worker, hand it to the GUI as
// shared_ptr<const ViewModel>); it keeps the graph it was built from alive and points into it.
//
// What is drawn (d3viz):
//   - every Apply is an ellipse coloured by its op family (palette.h);
//   - graph inputs, constants, shared variables and graph outputs are boxes coloured by role, and
//   so
//     is every output of an Apply that nobody uses (lightgrey); intermediate values are not boxes:
//     they are the edges between applies;
//   - an edge is drawn per (producer, consumer input): dodgerblue when the consumer's viewMap lists
//     that input, else red when its destroyMap does, else black. Its label is the value's short
//     type, prefixed by the input position ("1 fmatrix") when the consumer has several inputs.
//
// Groups (Note [View groups]): group 0 is the root. Every scope path prefix is a Scope group
// ("layer1", "layer1/layer1.0", ...); every Apply whose op has an inner graph (OpFromGraph) is an
// OpFromGraph group whose members are the inner graph's nodes (inner inputs and outputs drawn as
// boxes; the outer edges go to and from those boxes). A group's path is its stable key, used by
// GroupState and saved per file: the scope path for a Scope group, "<parent path>#<apply id>" for
// an OpFromGraph group ("#12", "layer1#40"). Groups nest to any depth.
//
// Parameters (Note [Parameters]): a constant or shared variable whose every use is an input of an
// Apply drawn as a node is a parameter, and so is an Apply computed from parameters alone (the
// Transpose of a weight, the broadcast of a bias, PyTorch's Identity on an initializer) whose
// every use is too. The view draws parameters as boxes with edges (d3viz),
// as badges (rows inside each reader's shape, no edge) or not at all: ParameterMode, a view option
// passed with the GroupState (levelGraph, LayoutOptions), so one model serves every mode.

#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"

#include <QColor>
#include <QSet>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace tscope::vis {

enum class NodeKind : std::uint8_t { Apply, Variable };
enum class VariableRole : std::uint8_t { Input, Constant, Shared, Output, UnusedOutput };
enum class EdgeKind : std::uint8_t { Plain, View, Destroy };
enum class GroupKind : std::uint8_t { Root, Scope, OpFromGraph };
enum class ParameterMode : std::uint8_t { Boxes, Badges, Hidden };

// "boxes", "badges", "hidden" (menus, settings, the command line); parsing gives nullopt for
// anything else.
QString parameterModeName(ParameterMode mode);
std::optional<ParameterMode> parameterModeFromName(const QString& name);

// What a variable role is called wherever the window names it (tooltips, the inspector, the
// legend): "graph input", "constant", "shared variable", "graph output", "unused output".
QString roleText(VariableRole role);

struct ViewNode {
  NodeKind kind = NodeKind::Apply;
  VariableRole role = VariableRole::Input;       // variables only
  const engine::Apply* apply = nullptr;          // Apply nodes
  const engine::Variable* variable = nullptr;    // variable boxes
  const engine::FunctionGraph* graph = nullptr;  // the graph it belongs to (inner for OFG bodies)
  std::int64_t graphId = -1;                     // its id in that graph
  int group = 0;                                 // the innermost group holding it
  QString label;                                 // may hold '\n'
  QString tooltip;                               // type, shape, scope, creation site
  QColor fill;
  // Parameters only (Note [Parameters]): the text of its badge row, "name  ftensor4 (64, 3, 7, 7)",
  // its mark's colour and role (a folded Apply: its first parameter input's), the value whose
  // statistics its row shows, and the name its readers' rows start with.
  bool parameter = false;
  QString badge, badgeName;
  QColor badgeMark;
  VariableRole badgeRole = VariableRole::Constant;
  const engine::Variable* badgeValue = nullptr;
};

struct ViewEdge {
  int from = -1, to = -1;  // indices into ViewModel::nodes()
  EdgeKind kind = EdgeKind::Plain;
  int inputIndex = -1;                      // the consumer input; -1 for an Apply -> output box
  const engine::Variable* value = nullptr;  // the value that flows
  QString label;
};

struct Group {
  GroupKind kind = GroupKind::Root;
  QString name;  // last scope component, or the OpFromGraph node's label
  QString path;  // stable key (Note [View groups]); "" for the root
  int parent = -1;
  std::vector<int> children;               // child groups, in order of first appearance
  std::vector<int> nodes;                  // direct member nodes
  int totalNodes = 0;                      // members of the whole subtree
  const engine::Apply* ofgNode = nullptr;  // OpFromGraph groups: the outer application
  int ofgViewNode = -1;                    // ... and its ViewNode (drawn when collapsed)
};

// Which groups are expanded. The root is always expanded; a group is shown when all its ancestors
// are expanded.
class GroupState {
 public:
  bool isExpanded(const QString& path) const { return path.isEmpty() || m_expanded.contains(path); }
  void setExpanded(const QString& path, bool expanded);
  void toggle(const QString& path) { setExpanded(path, !isExpanded(path)); }
  const QSet<QString>& expanded() const { return m_expanded; }
  QStringList toStringList() const;  // sorted, for QSettings
  static GroupState fromStringList(const QStringList& paths);
  friend bool operator==(const GroupState&, const GroupState&) = default;

 private:
  QSet<QString> m_expanded;
};

// One group's contents as one graph to lay out (the layout service lays out each group on its own).
struct LevelItem {
  enum class Kind : std::uint8_t { Node, CollapsedGroup, ExpandedGroup, InPort, OutPort };
  Kind kind = Kind::Node;
  // Node: node index; groups: group index; ports: the node producing the value that crosses the
  // border (outside the group for an in-port, inside for an out-port: Note [One port per value]).
  int index = -1;
  QString key;  // unique within the level and stable across states: "n12", "g3", "i7", "o9"
};
struct LevelEdge {
  int from = -1, to = -1;           // indices into LevelGraph::items
  std::vector<int> edges;           // the ViewModel edges this one stands for (several when lifted)
  EdgeKind kind = EdgeKind::Plain;  // the edges' kind when they agree, else Plain
  QString label;                    // the edge's label, or "×N" for N merged edges
};
struct LevelGraph {
  int group = 0;
  std::vector<LevelItem> items;
  std::vector<LevelEdge> edges;
};

struct HeatEntry {
  double seconds = 0;
  double share = 0;  // of the call time, 0..1
};

struct BuildOptions {
  // Note [Placement by use]: scope-less nodes go to the innermost group holding their inputs and
  // readers. false: the placement before issue 24 (they stay at the root), for before/after
  // figures.
  bool placeByUse = true;
};

class ViewModel {
 public:
  // Graphs with more parameters than this show them as badges by default.
  static constexpr int kBadgesAbove = 50;

  // Builds the model of `graph` (kept alive by the model). `heat` (optional) maps Apply ids to
  // measured time; with heatColours, Apply fills are heat colours (palette.h) instead of family
  // colours and tooltips say "Time: X ms / Y %".
  static std::shared_ptr<const ViewModel> build(std::shared_ptr<const engine::FunctionGraph> graph,
                                                std::map<std::int64_t, HeatEntry> heat = {},
                                                bool heatColours = false,
                                                BuildOptions options = {});

  const engine::FunctionGraph& graph() const { return *m_graph; }
  const std::shared_ptr<const engine::FunctionGraph>& graphPtr() const { return m_graph; }
  const std::vector<ViewNode>& nodes() const { return m_nodes; }
  const std::vector<ViewEdge>& edges() const { return m_edges; }
  const std::vector<Group>& groups() const { return m_groups; }
  const std::map<std::int64_t, HeatEntry>& heat() const { return m_heat; }

  // Edges entering / leaving a node (indices into edges()).
  const std::vector<int>& inEdges(int node) const;
  const std::vector<int>& outEdges(int node) const;
  // The node of an Apply / of a variable box of the outer graph; -1 when none (an intermediate
  // variable has no box: see producerNode).
  int nodeOfApply(std::int64_t applyId) const;
  int nodeOfVariable(std::int64_t variableId) const;
  // The node drawing a variable of the outer graph: its box, else its owner's ellipse; -1 if none.
  int nodeShowing(std::int64_t variableId) const;
  int groupByPath(const QString& path) const;  // -1 when absent

  // Parameters (Note [Parameters]): how many shared variables and constants are (folded Applies
  // not counted); Badges above kBadgesAbove, else Boxes.
  int parameterCount() const { return m_parameterCount; }
  ParameterMode defaultParameterMode() const {
    return m_parameterCount > kBadgesAbove ? ParameterMode::Badges : ParameterMode::Boxes;
  }
  // The edges from parameters into `node`, in input order: its badge rows (empty for most nodes).
  const std::vector<int>& parameterEdges(int node) const;
  // The node a parameter's first badge is drawn in under Badges: its first reader; else -1.
  int badgeHost(int node) const;

  bool isAncestor(int ancestorGroup, int group) const;
  // The innermost shown group or node standing for `node` under `state`: the node itself when all
  // its groups are expanded, else its outermost collapsed group, as a LevelItem (Node or
  // CollapsedGroup).
  // A parameter under Badges or Hidden stands for its first reader (`parameters`).
  LevelItem visibleItem(int node, const GroupState& state,
                        ParameterMode parameters = ParameterMode::Boxes) const;
  // `state` plus every group on the way to `node` expanded (search and "reveal" use it).
  GroupState revealed(int node, GroupState state) const;
  // Expands groups breadth first while the number of shown items stays within `budget`.
  // Parameters count as items under Boxes only.
  GroupState defaultState(int budget = 400, ParameterMode parameters = ParameterMode::Boxes) const;
  GroupState allExpanded() const;

  // The graph of one expanded group under `state`: its direct member nodes, its child groups
  // (collapsed or expanded), ports for values entering or leaving the group (one per value), and
  // the edges among them (ViewModel edges lifted to the items that show their ends, merged per
  // pair). Under Badges and Hidden, parameters and their edges are left out.
  LevelGraph levelGraph(int group, const GroupState& state,
                        ParameterMode parameters = ParameterMode::Boxes) const;

 private:
  ViewModel() = default;
  friend class ViewModelBuilder;
  std::shared_ptr<const engine::FunctionGraph> m_graph;
  std::vector<ViewNode> m_nodes;
  std::vector<ViewEdge> m_edges;
  std::vector<Group> m_groups;
  std::vector<std::vector<int>> m_in, m_out;
  std::map<std::int64_t, int> m_applyNode, m_variableNode;
  std::map<QString, int> m_groupByPath;
  std::map<std::int64_t, HeatEntry> m_heat;
  std::vector<std::vector<int>> m_parameterEdges;  // by node; empty for most
  int m_parameterCount = 0;
};

}  // namespace tscope::vis

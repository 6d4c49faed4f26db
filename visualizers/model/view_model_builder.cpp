#include "visualizers/model/view_model_builder.h"

#include "engine/graph/inner_graphs.h"
#include "engine/graph/op.h"
#include "engine/ops/control/ifelse.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/graph/op_from_graph.h"
#include "visualizers/model/palette.h"
#include "visualizers/model/view_labels.h"

#include <algorithm>
#include <stdexcept>

namespace tscope::vis {
namespace {

using engine::Apply;
using engine::FunctionGraph;
using engine::Variable;

// The inner graphs a node is drawn with: an OpFromGraph's body, or every alternative body (IfElse's
// then and else, Note [Several inner graphs]), each in a group of its own inside the node's group
// (Note [Branch groups]); empty for every other op.
std::vector<const FunctionGraph*> innerGraphsToDraw(const engine::Op& op) {
  std::vector<const FunctionGraph*> graphs = engine::innerGraphsOf(op);
  graphs.erase(std::remove(graphs.begin(), graphs.end(), nullptr), graphs.end());
  return graphs;
}

// The name of body `index` of `op`'s `count` bodies: "then" and "else" for an IfElse.
QString bodyName(const engine::Op& op, std::size_t index, std::size_t count) {
  if (dynamic_cast<const engine::IfElse*>(&op) && count == 2)
    return index == 0 ? QStringLiteral("then") : QStringLiteral("else");
  return QStringLiteral("body %1").arg(index);
}

// The group's name: the user's label of the subgraph, else the op's str().
QString ofgName(const engine::Op& op) {
  const auto* ofg = dynamic_cast<const engine::OpFromGraph*>(&op);
  if (ofg && !ofg->label().empty()) return labels::qs(ofg->label());
  return labels::elided(labels::qs(op.str()), labels::kMaxOpLabel);
}

VariableRole freeRole(const Variable& var) {
  switch (var.kind()) {
    case Variable::Kind::Constant:
      return VariableRole::Constant;
    case Variable::Kind::Shared:
      return VariableRole::Shared;
    case Variable::Kind::Regular:
      break;
  }
  return VariableRole::Input;
}

std::vector<bool> listedInputs(const std::map<int, std::vector<int>>& map, int nInputs) {
  std::vector<bool> listed(static_cast<std::size_t>(nInputs), false);
  for (const auto& [output, inputs] : map)
    for (int i : inputs)
      if (i >= 0 && i < nInputs) listed[static_cast<std::size_t>(i)] = true;
  return listed;
}

}  // namespace

ViewModelBuilder::ViewModelBuilder(std::shared_ptr<const FunctionGraph> graph,
                                   std::map<std::int64_t, HeatEntry> heat, bool heatColours,
                                   BuildOptions options)
    : m_model(new ViewModel()), m_heatColours(heatColours), m_options(options) {
  if (!graph) throw std::invalid_argument("ViewModel::build: expected a graph, found null");
  m_model->m_graph = std::move(graph);
  for (const auto& [id, entry] : heat) m_maxShare = std::max(m_maxShare, entry.share);
  m_model->m_heat = std::move(heat);
  newGroup(GroupKind::Root, {}, {}, -1);
}

std::shared_ptr<const ViewModel> ViewModelBuilder::build() {
  Instance outer;
  outer.fg = m_model->m_graph.get();
  addGraph(outer);
  if (m_options.placeByUse) placeScopeless(outer);
  placeFreeBoxes(outer);
  finish();
  markParameters();
  return m_model;
}

// Note [Box placement]: in the outer graph, graph inputs and graph outputs sit in the root (they
// are the function's interface and stay visible whatever is collapsed); a constant or shared
// variable with a scope of its own sits in that scope, one without (ONNX initializers, most
// weights) in the innermost group holding all its consumers, so collapsing a layer hides its
// parameters with it; an unused output sits beside its Apply. In an OpFromGraph body every box
// sits in the body's group.
void ViewModelBuilder::addGraph(Instance& in) {
  const FunctionGraph& fg = *in.fg;
  for (const engine::VarPtr& out : fg.outputs()) in.outputs.insert(out.get());
  for (const engine::VarPtr& input : fg.inputs())
    if (!in.box.count(input.get())) addFreeBox(in, *input);
  const std::vector<Apply*> order = fg.toposort();
  for (const Apply* node : order) {
    for (const engine::VarPtr& input : node->inputs())
      if (!input->owner() && !in.box.count(input.get())) addFreeBox(in, *input);
    addApply(in, *node);
    // Boxes for what the graph returns and for what nobody uses.
    const int applyGroup = m_model->m_nodes[static_cast<std::size_t>(in.applyNode.at(node))].group;
    const int besideApply = in.bodies.count(node)
                                ? m_model->m_groups[static_cast<std::size_t>(applyGroup)].parent
                                : applyGroup;
    for (int k = 0; k < node->nOutputs(); ++k) {
      const Variable& out = node->outputRef(k);
      if (in.outputs.count(&out))
        addBox(in, out, VariableRole::Output, in.outer() ? 0 : in.bodyGroup, true);
      else if (fg.clients(out).empty())
        addBox(in, out, VariableRole::UnusedOutput, besideApply, false);
    }
  }
  // A free value returned as it is and used by no node (a constant output) still needs its box.
  for (const engine::VarPtr& out : fg.outputs())
    if (!out->owner() && !in.box.count(out.get())) addFreeBox(in, *out);
  for (const Apply* node : order) addEdges(in, *node);
}

void ViewModelBuilder::addFreeBox(Instance& in, const Variable& var) {
  const VariableRole role = freeRole(var);
  int group = in.bodyGroup;
  if (in.outer())
    group = role == VariableRole::Input ? 0 : (var.scope().empty() ? -1 : scopeGroup(var.scope()));
  const int box = addBox(in, var, role, group, in.outputs.count(&var) > 0);
  if (group < 0) in.freeBoxes.push_back(box);
}

ViewNode ViewModelBuilder::applyView(const Instance& in, const Apply& node, int group) const {
  ViewNode view;
  view.kind = NodeKind::Apply;
  view.apply = &node;
  view.graph = in.fg;
  view.graphId = node.id();
  view.group = group;
  view.label = labels::applyLabel(node);
  const HeatEntry* heat = nullptr;
  if (in.outer()) {
    auto it = m_model->m_heat.find(node.id());
    if (it != m_model->m_heat.end()) heat = &it->second;
  }
  view.tooltip = labels::applyTooltip(node, heat);
  if (m_heatColours) {
    view.fill = palette::heatColor(heat && m_maxShare > 0 ? heat->share / m_maxShare : 0.0);
  } else {
    // d3viz matches the op's class name; str() only adds a chance for ops whose name() is generic.
    view.fill = palette::opFamilyColor(labels::qs(node.op().name()));
    if (view.fill == palette::opFamilyColor(QString()))
      view.fill = palette::opFamilyColor(labels::qs(node.op().str()));
  }
  return view;
}

void ViewModelBuilder::addApply(Instance& in, const Apply& node) {
  const int group = in.outer() ? scopeGroup(node.scope()) : in.bodyGroup;
  if (const auto inner = innerGraphsToDraw(node.op()); !inner.empty()) {
    addBodies(in, node, inner, group);
    return;
  }
  in.applyNode[&node] = addNode(applyView(in, node, group));
}

// An OpFromGraph node becomes a group "<parent path>#<apply id>" holding its inner graph; the node
// itself is a member of that group (ofgViewNode) with no edges: the scene draws it for the
// collapsed group, and the outer edges go to and from the body's input and output boxes.
//
// Note [Branch groups]: a node with alternative bodies (an IfElse) is such a group too, holding one
// Scope group per body ("<group path>/then", "<group path>/else"), so expanding it shows both
// branches side by side, each collapsible on its own. Every input of the node feeds the matching
// input box of every body (both branches read [cond, inputs...]), and every output leaves from the
// matching output box of every body: which branch runs is decided at run time, and the drawing
// shows both computations the node may run.
void ViewModelBuilder::addBodies(Instance& in, const Apply& node,
                                 const std::vector<const FunctionGraph*>& inner, int parentGroup) {
  const QString parentPath = m_model->m_groups[static_cast<std::size_t>(parentGroup)].path;
  const QString path = parentPath + QLatin1Char('#') + QString::number(node.id());
  const int group = newGroup(GroupKind::OpFromGraph, ofgName(node.op()), path, parentGroup);
  ViewNode view = applyView(in, node, group);
  // A Scan keeps d3viz's yellow when collapsed (its op family's colour).
  const auto* scanOp = dynamic_cast<const engine::Scan*>(&node.op());
  if (!m_heatColours && !scanOp) view.fill = palette::collapsedGroupFill(GroupKind::OpFromGraph);
  const int viewNode = addNode(std::move(view));
  in.applyNode[&node] = viewNode;
  {
    Group& g = m_model->m_groups[static_cast<std::size_t>(group)];
    g.ofgNode = &node;
    g.ofgViewNode = viewNode;
  }

  Body& drawn = in.bodies[&node];
  drawn.group = group;
  drawn.inputs.resize(static_cast<std::size_t>(node.nInputs()));
  drawn.outputs.resize(static_cast<std::size_t>(node.nOutputs()));
  for (std::size_t b = 0; b < inner.size(); ++b) {
    Instance body;
    body.fg = inner[b];
    body.bodyGroup =
        inner.size() == 1
            ? group
            : newGroup(GroupKind::Scope, bodyName(node.op(), b, inner.size()),
                       path + QLatin1Char('/') + bodyName(node.op(), b, inner.size()), group);
    addGraph(body);
    // Inner input i stands for node input i, except in a Scan's body (one step's slices, states
    // and non-sequences, Note [Scan layout]).
    const auto& inputs = inner[b]->inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const int n = scanOp ? scanOp->nodeInputOfInner(i) : static_cast<int>(i);
      if (n >= 0 && static_cast<std::size_t>(n) < drawn.inputs.size())
        drawn.inputs[static_cast<std::size_t>(n)].push_back(body.box.at(inputs[i].get()));
    }
    const auto& outputs = inner[b]->outputs();
    for (std::size_t k = 0; k < outputs.size() && k < drawn.outputs.size(); ++k)
      drawn.outputs[k].push_back(body.box.at(outputs[k].get()));
  }
}

void ViewModelBuilder::addEdges(const Instance& in, const Apply& node) {
  const auto bodyIt = in.bodies.find(&node);
  const Body* body = bodyIt == in.bodies.end() ? nullptr : &bodyIt->second;
  const int self = in.applyNode.at(&node);
  const std::vector<bool> viewed = listedInputs(node.op().viewMap(), node.nInputs());
  const std::vector<bool> destroyed = listedInputs(node.op().destroyMap(), node.nInputs());
  for (int i = 0; i < node.nInputs(); ++i) {
    const Variable& value = *node.input(i);
    const auto slot = static_cast<std::size_t>(i);
    const std::vector<int> targets =
        body && slot < body->inputs.size() && !body->inputs[slot].empty() ? body->inputs[slot]
                                                                          : std::vector<int>{self};
    // View wins over destroy (d3viz).
    const EdgeKind kind = viewed[slot]      ? EdgeKind::View
                          : destroyed[slot] ? EdgeKind::Destroy
                                            : EdgeKind::Plain;
    const QString label = labels::edgeLabel(value, i, node.nInputs());
    for (int from : producerNodes(in, value))
      for (int to : targets) addEdge(from, to, kind, i, value, label);
  }
  for (int k = 0; k < node.nOutputs(); ++k) {
    const Variable& out = node.outputRef(k);
    auto box = in.box.find(&out);
    if (box == in.box.end()) continue;
    const auto slot = static_cast<std::size_t>(k);
    const std::vector<int> sources =
        body && slot < body->outputs.size() && !body->outputs[slot].empty()
            ? body->outputs[slot]
            : std::vector<int>{self};
    const QString label = labels::edgeLabel(out, k, node.nOutputs());
    for (int from : sources) addEdge(from, box->second, EdgeKind::Plain, -1, out, label);
  }
}

std::vector<int> ViewModelBuilder::producerNodes(const Instance& in, const Variable& value) {
  if (const Apply* owner = value.owner()) {
    auto body = in.bodies.find(owner);
    const auto slot = static_cast<std::size_t>(value.index());
    if (body != in.bodies.end() && slot < body->second.outputs.size() &&
        !body->second.outputs[slot].empty())
      return body->second.outputs[slot];
    return {in.applyNode.at(owner)};
  }
  return {in.box.at(&value)};
}

int ViewModelBuilder::addBox(Instance& in, const Variable& var, VariableRole role, int group,
                             bool graphOutput) {
  ViewNode view;
  view.kind = NodeKind::Variable;
  view.role = role;
  view.variable = &var;
  view.graph = in.fg;
  view.graphId = var.id();
  view.group = group;
  view.label = labels::variableLabel(var);
  view.tooltip = labels::variableTooltip(var, role, graphOutput);
  view.fill = palette::variableColor(role);
  const int index = addNode(std::move(view));
  in.box[&var] = index;
  if (in.outer()) m_model->m_variableNode[var.id()] = index;
  return index;
}

int ViewModelBuilder::addNode(ViewNode node) {
  if (node.kind == NodeKind::Apply && node.graph == m_model->m_graph.get())
    m_model->m_applyNode[node.graphId] = static_cast<int>(m_model->m_nodes.size());
  m_model->m_nodes.push_back(std::move(node));
  return static_cast<int>(m_model->m_nodes.size()) - 1;
}

void ViewModelBuilder::addEdge(int from, int to, EdgeKind kind, int inputIndex,
                               const Variable& value, QString label) {
  ViewEdge edge;
  edge.from = from;
  edge.to = to;
  edge.kind = kind;
  edge.inputIndex = inputIndex;
  edge.value = &value;
  edge.label = std::move(label);
  m_model->m_edges.push_back(std::move(edge));
}

int ViewModelBuilder::scopeGroup(const std::string& scope) {
  if (scope.empty()) return 0;
  auto it = m_scopeGroups.find(scope);
  if (it != m_scopeGroups.end()) return it->second;
  const std::size_t cut = scope.rfind(engine::kScopeSeparator);
  const int parent = cut == std::string::npos ? 0 : scopeGroup(scope.substr(0, cut));
  const std::string name = cut == std::string::npos ? scope : scope.substr(cut + 1);
  const int group = newGroup(GroupKind::Scope, labels::qs(name), labels::qs(scope), parent);
  m_scopeGroups.emplace(scope, group);
  return group;
}

int ViewModelBuilder::newGroup(GroupKind kind, QString name, QString path, int parent) {
  const int index = static_cast<int>(m_model->m_groups.size());
  Group group;
  group.kind = kind;
  group.name = std::move(name);
  group.path = std::move(path);
  group.parent = parent;
  m_model->m_groupByPath[group.path] = index;
  m_model->m_groups.push_back(std::move(group));
  m_depth.push_back(parent < 0 ? 0 : m_depth[static_cast<std::size_t>(parent)] + 1);
  if (parent >= 0) m_model->m_groups[static_cast<std::size_t>(parent)].children.push_back(index);
  return index;
}

int ViewModelBuilder::commonAncestor(int a, int b) const {
  while (a != b) {
    if (m_depth[static_cast<std::size_t>(a)] >= m_depth[static_cast<std::size_t>(b)])
      a = m_model->m_groups[static_cast<std::size_t>(a)].parent;
    else
      b = m_model->m_groups[static_cast<std::size_t>(b)].parent;
  }
  return a;
}

void ViewModelBuilder::placeFreeBoxes(const Instance& in) {
  for (int box : in.freeBoxes) {
    ViewNode& view = m_model->m_nodes[static_cast<std::size_t>(box)];
    int group = -1;
    for (const engine::Client& client : in.fg->clients(*view.variable)) {
      int consumer = 0;  // a graph output: the root
      if (client.node) {
        auto body = in.bodies.find(client.node);
        consumer =
            body != in.bodies.end()
                ? body->second.group
                : m_model->m_nodes[static_cast<std::size_t>(in.applyNode.at(client.node))].group;
      }
      group = group < 0 ? consumer : commonAncestor(group, consumer);
    }
    view.group = std::max(group, 0);
  }
}

// Note [Placement by use]: PyTorch's exporter leaves some nodes without a scope: the Identity it
// puts on an initializer read by several nodes, Transposes of weights, shape arithmetic. At the
// root they sit far from the layer that uses them, each with an edge across the drawing. So a
// scope-less node (with no inner graph) is drawn in the innermost group holding everything it
// touches: its readers (a graph output counts as the root) and the inputs whose place is fixed
// (a graph input: the root; a scoped node or box: its group). Inputs placed by use themselves (an
// unscoped constant, shared variable or scope-less node) do not count at first: they follow their
// readers, this node among them; a scope-less input that stays outside after all (computed at the
// root) brings the node back out, so a node moves only when its inputs and readers all lie in
// the group. Nodes are visited readers first (reverse topological order), so a chain
// of Identities follows the layer at its end. Free boxes are placed afterwards by the same rule
// (placeFreeBoxes). Only the view groups this way: the node's scope stays empty, and its tooltip
// and the inspector show no scope.
int ViewModelBuilder::placementGroup(const Instance& in, const Apply& node) const {
  auto body = in.bodies.find(&node);
  if (body != in.bodies.end())
    return m_model->m_groups[static_cast<std::size_t>(body->second.group)].parent;
  return m_model->m_nodes[static_cast<std::size_t>(in.applyNode.at(&node))].group;
}

void ViewModelBuilder::placeScopeless(const Instance& in) {
  const FunctionGraph& fg = *in.fg;
  const std::vector<Apply*> order = fg.toposort();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Apply& node = **it;
    if (!node.scope().empty() || in.bodies.count(&node)) continue;
    int group = -1;
    auto meet = [&](int g) { group = group < 0 ? g : commonAncestor(group, g); };
    for (int k = 0; k < node.nOutputs(); ++k)
      for (const engine::Client& client : fg.clients(node.outputRef(k)))
        meet(client.node ? placementGroup(in, *client.node) : 0);
    for (const engine::VarPtr& input : node.inputs()) {
      if (const Apply* owner = input->owner()) {
        if (!owner->scope().empty() || in.bodies.count(owner)) meet(placementGroup(in, *owner));
      } else if (freeRole(*input) == VariableRole::Input) {
        meet(0);
      } else if (!input->scope().empty()) {
        meet(scopeGroup(input->scope()));
      }
    }
    if (group <= 0) continue;  // stays at the root
    setPlacement(in, node, group);
  }
  // A node whose scope-less input stayed outside its group after all (a value computed at the
  // root, not a parameter) moves out to the group holding that input too: a node is placed in a
  // group only when its inputs and readers all lie in it. Groups only move outwards, so this
  // settles; readers first again, each pass in topological order.
  for (bool moved = true; moved;) {
    moved = false;
    for (Apply* n : order) {
      const Apply& node = *n;
      if (!node.scope().empty() || in.bodies.count(&node)) continue;
      const int self = in.applyNode.at(&node);
      int group = m_model->m_nodes[static_cast<std::size_t>(self)].group;
      if (group <= 0) continue;
      const int before = group;
      for (const engine::VarPtr& input : node.inputs())
        if (const Apply* owner = input->owner())
          if (owner->scope().empty() && !in.bodies.count(owner))
            group = commonAncestor(group, placementGroup(in, *owner));
      for (int k = 0; k < node.nOutputs(); ++k)
        for (const engine::Client& client : fg.clients(node.outputRef(k)))
          group = commonAncestor(group, client.node ? placementGroup(in, *client.node) : 0);
      if (group != before) {
        setPlacement(in, node, group);
        moved = true;
      }
    }
  }
}

void ViewModelBuilder::setPlacement(const Instance& in, const Apply& node, int group) {
  const int self = in.applyNode.at(&node);
  m_model->m_nodes[static_cast<std::size_t>(self)].group = group;
  // Its unused outputs' boxes go with it.
  for (int k = 0; k < node.nOutputs(); ++k) {
    auto box = in.box.find(&node.outputRef(k));
    if (box == in.box.end()) continue;
    ViewNode& view = m_model->m_nodes[static_cast<std::size_t>(box->second)];
    if (view.role == VariableRole::UnusedOutput) view.group = group;
  }
}

// Note [Parameters]: a constant or shared variable box (of the outer graph or a body) is a
// parameter when it is no graph output and every edge leaving it ends at an Apply drawn as a node
// (not at a body's input box). An Apply whose every input is a parameter and every use an input
// of another Apply (a weight's DimShuffle{1,0}, a bias's DimShuffle{x,0,x,x}, an Identity on an
// initializer, chains of them) is folded into its readers as a parameter too: under Badges its
// row ("conv1.bias  DimShuffle{x,0,x,x}  ftensor4 (1, 64, 1, 1)") stands for it and its inputs,
// as Netron draws a weight with the node that uses it. Under ParameterMode::Badges each edge from
// a parameter to a node that is not one becomes a row inside that node's shape:
// ViewModel::parameterEdges lists them per reader, in input order. Nodes are visited in index
// order, which puts every node after its producers within its graph.
void ViewModelBuilder::markParameters() {
  ViewModel& m = *m_model;
  m.m_parameterEdges.assign(m.m_nodes.size(), {});
  auto node = [&](int index) -> ViewNode& { return m.m_nodes[static_cast<std::size_t>(index)]; };
  auto edge = [&](int e) -> const ViewEdge& { return m.m_edges[static_cast<std::size_t>(e)]; };
  for (std::size_t i = 0; i < m.m_nodes.size(); ++i) {
    ViewNode& view = m.m_nodes[i];
    const std::vector<int>& out = m.m_out[i];
    if (out.empty() || !std::all_of(out.begin(), out.end(), [&](int e) {
          return node(edge(e).to).kind == NodeKind::Apply;
        }))
      continue;
    if (view.kind == NodeKind::Variable) {
      if (view.role != VariableRole::Constant && view.role != VariableRole::Shared) continue;
      const auto& outputs = view.graph->outputs();
      if (std::any_of(outputs.begin(), outputs.end(),
                      [&](const engine::VarPtr& o) { return o.get() == view.variable; }))
        continue;
      view.badge = labels::badgeText(*view.variable);
      view.badgeName = labels::variableLabel(*view.variable);
      view.badgeMark = view.fill;
      view.badgeRole = view.role;
      view.badgeValue = view.variable;
      ++m.m_parameterCount;
    } else {
      const std::vector<int>& in = m.m_in[i];
      if (in.empty() || !view.apply ||
          !std::all_of(in.begin(), in.end(), [&](int e) { return node(edge(e).from).parameter; }))
        continue;
      const int firstInput = *std::min_element(in.begin(), in.end(), [&](int a, int b) {
        return edge(a).inputIndex < edge(b).inputIndex;
      });
      const ViewNode& first = node(edge(firstInput).from);
      view.badgeName = first.badgeName;
      view.badgeMark = first.badgeMark;
      view.badgeRole = first.badgeRole;
      view.badgeValue = first.badgeValue;
      view.badge = labels::foldedBadgeText(*view.apply, view.badgeName);
    }
    view.parameter = true;
    for (int e : out) m.m_parameterEdges[static_cast<std::size_t>(edge(e).to)].push_back(e);
    if (view.kind == NodeKind::Apply) m.m_parameterEdges[i].clear();  // it is no reader: no rows
  }
  for (std::vector<int>& edges : m.m_parameterEdges)
    std::sort(edges.begin(), edges.end(),
              [&](int a, int b) { return edge(a).inputIndex < edge(b).inputIndex; });
}

void ViewModelBuilder::finish() {
  ViewModel& m = *m_model;
  const std::size_t n = m.m_nodes.size();
  for (std::size_t i = 0; i < n; ++i) {
    int g = m.m_nodes[i].group;
    m.m_groups[static_cast<std::size_t>(g)].nodes.push_back(static_cast<int>(i));
    for (; g >= 0; g = m.m_groups[static_cast<std::size_t>(g)].parent)
      ++m.m_groups[static_cast<std::size_t>(g)].totalNodes;
  }
  m.m_in.assign(n, {});
  m.m_out.assign(n, {});
  for (std::size_t e = 0; e < m.m_edges.size(); ++e) {
    m.m_out[static_cast<std::size_t>(m.m_edges[e].from)].push_back(static_cast<int>(e));
    m.m_in[static_cast<std::size_t>(m.m_edges[e].to)].push_back(static_cast<int>(e));
  }
}

}  // namespace tscope::vis

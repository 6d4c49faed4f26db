#pragma once
// ViewModelBuilder: the one walk over a FunctionGraph (and the inner graphs of its OpFromGraph
// nodes) that makes a ViewModel. Private to visualizers/model; ViewModel::build is its interface.

#include "visualizers/model/view_model.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tscope::vis {

class ViewModelBuilder {
 public:
  ViewModelBuilder(std::shared_ptr<const engine::FunctionGraph> graph,
                   std::map<std::int64_t, HeatEntry> heat, bool heatColours,
                   BuildOptions options = {});
  std::shared_ptr<const ViewModel> build();

 private:
  // The boxes of the bodies of one node with inner graphs: per input and output slot, the box in
  // each body (one for an OpFromGraph, one per branch for an IfElse).
  struct Body {
    int group = -1;
    std::vector<std::vector<int>> inputs, outputs;
  };
  // One drawn instance of a graph: the outer graph (scope groups), or the body of one
  // OpFromGraph application (everything in `bodyGroup`). Note [Body instances]: the nodes of
  // an inner graph are shared by every application of the op, so the maps from graph objects to
  // view nodes are per instance, never global.
  struct Instance {
    const engine::FunctionGraph* fg = nullptr;
    int bodyGroup = -1;  // -1: the outer graph
    std::unordered_set<const engine::Variable*> outputs;
    std::unordered_map<const engine::Variable*, int> box;
    std::unordered_map<const engine::Apply*, int> applyNode;
    std::unordered_map<const engine::Apply*, Body> bodies;
    std::vector<int> freeBoxes;  // boxes placed by their consumers (Note [Box placement])
    bool outer() const { return bodyGroup < 0; }
  };

  void addGraph(Instance& in);
  void addFreeBox(Instance& in, const engine::Variable& var);
  void addApply(Instance& in, const engine::Apply& node);
  void addBodies(Instance& in, const engine::Apply& node,
                 const std::vector<const engine::FunctionGraph*>& inner, int parentGroup);
  void addEdges(const Instance& in, const engine::Apply& node);
  int addBox(Instance& in, const engine::Variable& var, VariableRole role, int group,
             bool graphOutput);
  ViewNode applyView(const Instance& in, const engine::Apply& node, int group) const;
  int addNode(ViewNode node);
  void addEdge(int from, int to, EdgeKind kind, int inputIndex, const engine::Variable& value,
               QString label);
  // The nodes an edge carrying `value` leaves: its box for a free variable, the inner output box
  // of each body for an output of a node with bodies, else the producing Apply's ellipse.
  static std::vector<int> producerNodes(const Instance& in, const engine::Variable& value);
  int scopeGroup(const std::string& scope);
  int newGroup(GroupKind kind, QString name, QString path, int parent);
  int commonAncestor(int a, int b) const;
  void placeFreeBoxes(const Instance& in);
  // Note [Placement by use]
  void placeScopeless(const Instance& in);
  void setPlacement(const Instance& in, const engine::Apply& node, int group);
  // The group an Apply counts as for placement: its own, or for a node with bodies the group
  // holding its body group.
  int placementGroup(const Instance& in, const engine::Apply& node) const;
  void finish();
  void markParameters();

  std::shared_ptr<ViewModel> m_model;
  double m_maxShare = 0;
  bool m_heatColours = false;
  BuildOptions m_options;
  std::vector<int> m_depth;  // per group
  std::unordered_map<std::string, int> m_scopeGroups;
};

}  // namespace tscope::vis

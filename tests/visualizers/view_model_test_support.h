#pragma once
// Helpers of the view-model tests (tst_view_model, tst_view_groups, tst_level_graph): graphs
// wrapped for ViewModel::build, lookups of nodes by what a reader sees, and small ops whose view
// and destroy maps the tests choose.

#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "engine/graph/variable.h"
#include "visualizers/model/view_model.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <string>
#include <vector>

namespace tscope::vis::testing {

using engine::VarPtr;

inline std::shared_ptr<const engine::FunctionGraph> graphOf(std::vector<VarPtr> inputs,
                                                            std::vector<VarPtr> outputs) {
  return std::make_shared<const engine::FunctionGraph>(std::move(inputs), std::move(outputs));
}

// The box of the variable named `name` (in any graph of the model); -1 when none.
inline int boxNamed(const ViewModel& model, const QString& name) {
  for (std::size_t i = 0; i < model.nodes().size(); ++i) {
    const ViewNode& node = model.nodes()[i];
    if (node.kind == NodeKind::Variable && QString::fromStdString(node.variable->name()) == name)
      return static_cast<int>(i);
  }
  return -1;
}

// The Apply node whose output `name` is named (in any graph of the model); -1 when none.
inline int applyNamed(const ViewModel& model, const QString& name) {
  for (std::size_t i = 0; i < model.nodes().size(); ++i) {
    const ViewNode& node = model.nodes()[i];
    if (node.kind != NodeKind::Apply) continue;
    for (int k = 0; k < node.apply->nOutputs(); ++k)
      if (QString::fromStdString(node.apply->outputRef(k).name()) == name)
        return static_cast<int>(i);
  }
  return -1;
}

// Indices of the edges from `from` to `to`.
inline std::vector<int> edgesBetween(const ViewModel& model, int from, int to) {
  std::vector<int> found;
  for (int e : model.outEdges(from))
    if (model.edges()[static_cast<std::size_t>(e)].to == to) found.push_back(e);
  return found;
}

inline QStringList groupPaths(const ViewModel& model) {
  QStringList paths;
  for (const Group& g : model.groups()) paths << g.path;
  return paths;
}

// One output per input, each of the input's type, viewing and destroying the listed inputs.
class MapsOp final : public engine::Op {
 public:
  MapsOp(engine::ViewMap view, engine::DestroyMap destroy, int nOutputs = 1)
      : m_view(std::move(view)), m_destroy(std::move(destroy)), m_nOutputs(nOutputs) {}
  std::string name() const override { return "MapsOp"; }
  std::vector<engine::TensorType> outputTypes(std::span<const VarPtr> inputs) const override {
    return std::vector<engine::TensorType>(static_cast<std::size_t>(m_nOutputs), inputs[0]->type());
  }
  engine::ViewMap viewMap() const override { return m_view; }
  engine::DestroyMap destroyMap() const override { return m_destroy; }

 private:
  engine::ViewMap m_view;
  engine::DestroyMap m_destroy;
  int m_nOutputs;
};

}  // namespace tscope::vis::testing

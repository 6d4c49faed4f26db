#pragma once
// NodeListModel: the "Nodes" dock, the debugger's listing of the program. One row per node of the
// document's original graph, in a topological order (the order the graph runs in, before the
// optimizer), with a margin as a source debugger has: a red dot where a breakpoint is set on the
// node, and a click on the margin sets or clears one (DebugUi connects the view's click to
// DebugController::toggleNodeBreakpoint). Further columns: the node id, its op, its output names,
// where the optimizer put it in the compiled graph (the lineage: "node 12", "fused into
// Composite{...} node 41 (fusion/elemwise_fusion)", "removed (constant_folding)"), and its state
// at the latest pause (done, the current node, the next one). Follows the controller's signals;
// reads only immutable snapshots on the GUI thread.
//
//   auto* model = new NodeListModel(controller);
//   view->setModel(model);  // row r is original node model->nodeId(r)
#include "gui/app/debug/debug_controller.h"

#include <QAbstractTableModel>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tscope::gui {

class NodeListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Margin, Id, Op, Outputs, Landed, State, ColumnCount };
  // Qt::UserRole of the Margin column: whether a breakpoint is set on the row's node; of the State
  // column: the state as a NodeState.
  enum class NodeState { NotRun, Done, Current, Next };

  explicit NodeListModel(DebugController* controller, QObject* parent = nullptr);

  // The original node id of a row, and the row of an original node id (-1 when not listed).
  std::int64_t nodeId(int row) const;
  int rowOf(std::int64_t originalId) const;
  NodeState state(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    std::int64_t id = -1;
    QString op, outputs;
    std::vector<std::int64_t> compiled;  // the compiled nodes it became (empty before compile)
    QString landed;
  };
  void rebuild();       // the document changed
  void relink();        // a compile finished: where each node landed
  void updateStates();  // a snapshot or the breakpoints changed
  void changedColumn(int column);

  DebugController* m_controller;
  std::vector<Row> m_rows;
  std::unordered_map<std::int64_t, int> m_rowOf;
  std::vector<NodeState> m_states;
};

}  // namespace tscope::gui

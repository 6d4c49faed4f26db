#pragma once
// DebugUi: the debugger in the window, over a DebugController for the window's document. It adds
// the Run menu and toolbar (Run F5, Step F10, Step Into F11, Step Out Shift+F11, Run to Node
// Ctrl+F10, Continue, Pause, Restart Ctrl+Shift+F5, Stop Shift+F5, the mode, Inputs..., NanGuard
// and its settings, breakpoints, value edits), the node context menu's entries, the docks
// (Breakpoints, Call Stack, Watch, NanGuard Alerts), the alert banner above the graph, a value
// source for the inspector, and the decoration layers on the Original and Optimized panes:
//   "debug" (z 10)  executed / next / current nodes, breakpoint dots, health pills on edges
//   "nan"   (z 20)  the root-cause chain of the selected NanGuard event
//   "flash" (z 30)  the values a recompute changed, for about a second
//
//   auto* ui = new DebugUi(window);       // MainWindow's constructor does this
//   ui->controller()->addBreakpoint(...); // or the actions: window->action("actionDebugRun")
//
// Everything the GUI thread does here is showing snapshots: the decorations are built on a worker
// (runOnWorker) from the controller's immutable snapshot and mapper.

#include "gui/app/debug/debug_controller.h"
#include "gui/app/debug/debug_marks.h"

#include <QKeySequence>
#include <QObject>
#include <QPointer>

#include <memory>

class QAction;
class QComboBox;
class QDockWidget;
class QFrame;
class QLabel;
class QListWidget;
class QPushButton;
class QTableView;
class QTimer;

namespace tscope::gui {

class AlertsModel;
class BreakpointModel;
class CallStackModel;
class GraphPane;
class MainWindow;
class NodeListModel;
class WatchModel;
class DebugValueSource;

class DebugUi : public QObject {
  Q_OBJECT
 public:
  explicit DebugUi(MainWindow* window);
  ~DebugUi() override;

  DebugController* controller() const { return m_controller; }
  BreakpointModel* breakpointModel() const { return m_breakpointModel; }
  CallStackModel* callStackModel() const { return m_callStackModel; }
  WatchModel* watchModel() const { return m_watchModel; }
  AlertsModel* alertsModel() const { return m_alertsModel; }
  NodeListModel* nodeListModel() const { return m_nodeListModel; }
  QTableView* nodeListView() const { return m_nodeListView; }
  // The "Nodes" dock's click: on the margin it sets or clears the row's breakpoint; elsewhere it
  // selects the node on the graph (the Original pane, or where the node landed).
  void nodeListClicked(const QModelIndex& index);
  QTableView* callStackView() const { return m_callStackView; }
  QTableView* alertsView() const { return m_alertsView; }
  QListWidget* chainList() const { return m_chainList; }
  QFrame* banner() const { return m_banner; }
  QString bannerText() const;
  QComboBox* modeCombo() const { return m_modeCombo; }
  QComboBox* deviceCombo() const { return m_deviceCombo; }
  // The last error the controller reported (also shown in a message box and the status bar).
  const QString& lastError() const { return m_lastError; }

  // The mapper of a pane (the Original or the Optimized one); null for other panes.
  std::shared_ptr<const DebugMapper> mapperFor(GraphPane* pane) const;
  // Shows one NanGuard event: its chain drawn (layer "nan"), listed, and its creator selected.
  void showNanEvent(int row);
  // Navigates to one link of the shown event's chain (selects it, opening its groups).
  void showChainLink(int link);
  // Opens the groups of a frame of the latest pause (Call Stack) and selects its next node.
  void showFrame(std::size_t frame);
  // True while the debugger computes something the window will show (a command, decorations).
  bool isBusy() const;
  // The name the debugger uses for a view node's value (output 0 of an Apply, a variable box):
  // its variable's name, else "node:ID.K" of the compiled graph; empty when it has none.
  QString valueName(GraphPane* pane, int node) const;

 signals:
  // The decoration layers of the latest snapshot are on the panes.
  void decorationsUpdated();

 private:
  void createActions();
  void createDocks();
  void createBanner();
  void addNodeMenu();
  void onDocument();
  void onSnapshot(const std::shared_ptr<const DebugSnapshot>& snapshot);
  void onNanEvents();
  void onRecomputed(const engine::debug::RecomputeResult& result);
  void updateActions();
  void updateDecorations();
  void rebuildMappers();
  void showBanner(const QString& text, bool nan);
  void refreshInspector();
  void connectInspector();
  void updateSliceEditing();
  void centreCurrent(const DebugSnapshot& snapshot);
  void editSelectedValue();
  void openBreakpointDialog(const QString& target, const QString& key);
  void openInputsDialog();
  void openNanGuardDialog();
  void saveFailureInteractively();
  GraphPane* targetPane() const;
  QAction* add(const QString& name, const QString& text, const QKeySequence& shortcut = {});

  MainWindow* m_window;
  DebugController* m_controller;
  std::shared_ptr<DebugValueSource> m_values;
  std::shared_ptr<const DebugMapper> m_originalMapper, m_optimizedMapper;
  std::shared_ptr<const engine::debug::NodeLineage> m_documentLineage;
  std::shared_ptr<const engine::debug::NanReport> m_shownEvent;
  std::uint64_t m_centredSerial = 0;
  int m_decorationJobs = 0;
  std::uint64_t m_decorationTicket = 0;

  BreakpointModel* m_breakpointModel = nullptr;
  CallStackModel* m_callStackModel = nullptr;
  WatchModel* m_watchModel = nullptr;
  AlertsModel* m_alertsModel = nullptr;
  NodeListModel* m_nodeListModel = nullptr;
  QTableView* m_nodeListView = nullptr;
  QTableView* m_breakpointView = nullptr;
  QTableView* m_callStackView = nullptr;
  QTableView* m_watchView = nullptr;
  QTableView* m_alertsView = nullptr;
  QListWidget* m_chainList = nullptr;
  QComboBox* m_modeCombo = nullptr;
  QComboBox* m_deviceCombo = nullptr;
  QFrame* m_banner = nullptr;
  QLabel* m_bannerLabel = nullptr;
  QPushButton* m_bannerCreator = nullptr;
  QPushButton* m_bannerSave = nullptr;
  QTimer* m_flashTimer = nullptr;
  QString m_lastError;
};

}  // namespace tscope::gui

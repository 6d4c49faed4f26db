#pragma once
// The profiler's two docks' contents:
// - ProfileTablesPanel ("profileDock"): the heat map's metric and scale, the profile to compare
//   with (diff mode), a filter, and the Class, Ops, Apply and Scope tables as tabs (sortable,
//   filterable: profile_models.h);
// - TimelinePanel ("timelineDock"): the run chooser and the range's label above the timeline,
//   the memory chart under it, and the nodes alive at the memory peak next to every node's
//   outputs with their created/inplace/view marks (output_table_model.h).
// Both only show snapshots (setView); ProfileUi (profile_ui.h) wires them to the graph.

#include "gui/app/profile/heat_map.h"
#include "gui/app/profile/output_table_model.h"
#include "gui/app/profile/profile_models.h"
#include "gui/app/profile/timeline_widget.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QTabWidget;
class QTableView;
class QTreeView;
class QSortFilterProxyModel;
class QAbstractItemView;
class QToolButton;

namespace tscope::gui {

class ProfileTablesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProfileTablesPanel(QWidget* parent = nullptr);
  void setView(std::shared_ptr<const ProfileView> view);

  ApplyTableModel* applyModel() const { return m_apply; }
  GroupTableModel* opsModel() const { return m_ops; }
  GroupTableModel* classModel() const { return m_classes; }
  ScopeTreeModel* scopeModel() const { return m_scopes; }
  QTabWidget* tabs() const { return m_tabs; }
  QComboBox* metricBox() const { return m_metric; }
  QComboBox* scaleBox() const { return m_scale; }
  QComboBox* compareBox() const { return m_compare; }
  QLineEdit* filterEdit() const { return m_filter; }
  // The views of the tabs, in tab order: Class, Ops, Apply, Scope.
  QAbstractItemView* tableView(int tab) const;
  QSortFilterProxyModel* proxy(int tab) const;
  enum Tab { ClassTab, OpsTab, ApplyTab, ScopeTab, TabCount };

  HeatOptions heatOptions() const;
  void setHeatOptions(const HeatOptions& options);
  // Selects the rows of a profile node in every table (no rowsChosen signal).
  void selectNode(int profileNode);

 signals:
  void heatOptionsChanged(tscope::gui::HeatOptions options);
  void compareChosen(int index);  // the compare box's index (0: none)
  // A row was chosen: the profile nodes it stands for.
  void rowsChosen(QList<int> profileNodes);

 private:
  QComboBox* m_metric = nullptr;
  QComboBox* m_scale = nullptr;
  QComboBox* m_compare = nullptr;
  QLineEdit* m_filter = nullptr;
  QTabWidget* m_tabs = nullptr;
  ApplyTableModel* m_apply = nullptr;
  GroupTableModel* m_ops = nullptr;
  GroupTableModel* m_classes = nullptr;
  ScopeTreeModel* m_scopes = nullptr;
  QSortFilterProxyModel* m_proxies[TabCount] = {};
  QAbstractItemView* m_views[TabCount] = {};
  bool m_selecting = false;
};

class TimelinePanel : public QWidget {
  Q_OBJECT
 public:
  explicit TimelinePanel(QWidget* parent = nullptr);
  void setData(std::shared_ptr<const TimelineData> data, std::shared_ptr<const ProfileView> view);
  // The tables of the range (or the whole run): the outputs list follows them.
  void setView(std::shared_ptr<const ProfileView> view);

  TimelineWidget* timeline() const { return m_timeline; }
  MemoryChart* memoryChart() const { return m_memory; }
  OutputTableModel* aliveModel() const { return m_alive; }
  OutputTableModel* outputsModel() const { return m_outputs; }
  QComboBox* runBox() const { return m_runs; }
  QLabel* rangeLabel() const { return m_rangeLabel; }
  QTableView* aliveView() const { return m_aliveView; }
  QTableView* outputsView() const { return m_outputsView; }

 signals:
  void rowsChosen(QList<int> profileNodes);
  void highlightPeakRequested();

 private:
  TimelineWidget* m_timeline = nullptr;
  MemoryChart* m_memory = nullptr;
  QComboBox* m_runs = nullptr;
  QLabel* m_rangeLabel = nullptr;
  QLabel* m_peakLabel = nullptr;
  OutputTableModel* m_alive = nullptr;
  OutputTableModel* m_outputs = nullptr;
  QTableView* m_aliveView = nullptr;
  QTableView* m_outputsView = nullptr;
  std::shared_ptr<const TimelineData> m_data;
};

}  // namespace tscope::gui

#pragma once
// GraphPane: one graph on screen — a GraphView fed by the LayoutService, with the group state
// (double-click toggles a group; state kept per file in QSettings by the window), a breadcrumb of
// the current group, search within the graph, back/forward through selections and toggles, and
// counts for the status bar. It never lays out or walks the graph on the GUI thread: every layout
// is a LayoutService job; a newer job makes older ones stale.

#include "gui/app/document.h"
#include "visualizers/layout/layout_service.h"
#include "visualizers/scene/graph_view.h"

#include <QWidget>

#include <memory>
#include <optional>

namespace tscope::gui {

class GraphPane : public QWidget {
  Q_OBJECT
 public:
  // `service` is shared by all panes of the window (one Graphviz thread per process).
  GraphPane(vis::LayoutService* service, QWidget* parent = nullptr);
  ~GraphPane() override;

  // Shows a model (null clears). `state` null: the model's defaultState().
  void setModel(std::shared_ptr<const vis::ViewModel> model,
                std::optional<vis::GroupState> state = std::nullopt);
  const std::shared_ptr<const vis::ViewModel>& model() const;
  const vis::GroupState& groupState() const;
  void setGroupState(const vis::GroupState& state, const QString& anchorGroupPath = {});
  void toggleGroup(const QString& path);
  void expandAll();
  void collapseAll();

  // How parameters are drawn (Note [Parameters] in visualizers/model/view_model.h). Null: the
  // model's default (badges above ViewModel::kBadgesAbove parameters, else boxes). A change lays
  // the graph out again, keeping the group state and the selection.
  void setParameterMode(std::optional<vis::ParameterMode> mode);
  vis::ParameterMode parameterMode() const;  // the one in effect (Boxes without a model)
  bool hasParameterModeSet() const;

  vis::GraphView* view() const;
  int selectedNode() const;
  // Selects a node, expanding the groups that hide it, and centres the view on it.
  void selectNode(int node);
  void setHighlight(const QSet<int>& nodes, const QColor& color);
  // A decoration layer over the graph (visualizers/scene/decorations.h); null removes it.
  void setDecorations(const QString& layer, std::shared_ptr<const vis::Decorations> decorations,
                      int z = 0);
  vis::GraphScene* scene() const;

  // Search by name, op, scope or id (case-insensitive substring; "id:12" for an exact id).
  // Returns the number of hits; findNext / findPrevious select them in turn (wrapping).
  int search(const QString& text);
  void findNext();
  void findPrevious();
  int searchHitCount() const;
  int currentSearchHit() const;  // 0-based, -1 when none

  bool canGoBack() const;
  bool canGoForward() const;
  void goBack();
  void goForward();

  bool isLayoutPending() const;  // a layout job is running or queued, or its items are coming
  bool isSearchReady() const;    // the search index (built on a worker per model) is done

 signals:
  void nodeSelected(int node);  // -1 when cleared
  // A right click on a node (selected first) or a collapsed group box (node -1, its path).
  void contextMenuRequested(int node, QString groupPath, QPoint screenPos);
  void groupStateChanged(vis::GroupState state);
  void breadcrumbChanged(QStringList groupNames);  // root first: the selected node's groups
  void layoutStarted();
  void layoutFinished(int shownNodes, int shownEdges);
  void layoutFailed(QString message);
  void zoomChanged(double zoom);
  void historyChanged();

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace tscope::gui

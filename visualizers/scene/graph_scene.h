#pragma once
// GraphScene: QGraphicsScene items for what a SceneLayout places: Apply ellipses, variable boxes,
// collapsed-group boxes, expanded-group clusters (shaded by depth, title bar), ports, edges (the
// layout's bezier paths, coloured by kind, with arrow heads and labels) and a legend. Hovering a
// node highlights it and its edges; selection follows QGraphicsScene's; items draw shapes without
// text below a zoom threshold (level of detail). Building the items is cheap (no layout, no graph
// walk beyond the placed items) and happens on the GUI thread from a finished layout.

#include "visualizers/layout/scene_layout.h"

#include <QGraphicsScene>
#include <QSet>

#include <memory>
#include <optional>

namespace tscope::vis {

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  explicit GraphScene(QObject* parent = nullptr);

  // Replaces all items. Keeps the selection of nodes that are still shown.
  void setContent(std::shared_ptr<const ViewModel> model, std::shared_ptr<const SceneLayout> layout);
  const std::shared_ptr<const ViewModel>& model() const { return m_model; }
  const std::shared_ptr<const SceneLayout>& sceneLayout() const { return m_layout; }

  // Selection in model terms (ViewModel node indices); -1 / empty when none.
  int selectedNode() const;
  void selectNode(int node);            // selects (and emits nodeSelected); -1 clears
  // Highlights (search hits, rewrite-history removed/added nodes): drawn with an outline colour.
  void setHighlight(const QSet<int>& nodes, const QColor& color);
  void clearHighlight();
  void setLegendVisible(bool visible);
  // Overview mode, for views zoomed out below GraphView::kTextScale (GraphView switches it): the
  // whole graph is drawn by one item in a few batched calls, so a frame with thousands of nodes
  // stays cheap; items still take hover, clicks and selection. Exporters switch it off while
  // they render.
  void setOverview(bool on);
  bool overview() const;
  // The scene rect of a shown node / group (empty when not shown).
  QRectF nodeRect(int node) const;
  QRectF groupRect(int group) const;

 signals:
  void nodeSelected(int node);                   // -1 when the selection is cleared
  void groupToggleRequested(QString groupPath);  // double-click on a group box, cluster or OFG node
  void nodeActivated(int node);                  // double-click on an ordinary node

 private:
  struct Items;
  std::shared_ptr<const ViewModel> m_model;
  std::shared_ptr<const SceneLayout> m_layout;
  std::shared_ptr<Items> m_items;
};

}  // namespace tscope::vis

#pragma once
// GraphScene: QGraphicsScene items for what a SceneLayout places: Apply ellipses, variable boxes,
// collapsed-group boxes, expanded-group clusters (shaded by depth, title bar), ports, edges (the
// layout's bezier paths, coloured by kind, with arrow heads and labels) and a legend. Hovering a
// node highlights it and its edges; selection follows QGraphicsScene's; items draw shapes without
// text below a zoom threshold (level of detail).
//
// Two ways to replace the content (Note [Incremental scene content] in scene_content.h):
// - setContent() is synchronous: when it returns every item exists (exporters, the command line,
//   tests).
// - setContentAsync() never blocks the GUI thread for long: the items' data is prepared on a
//   worker; the old content stays until it is ready, then disappears at once (contentSwitched:
//   model(), sceneLayout(), sceneRect(), nodeRect() and groupRect() describe the new content and
//   the overview and legend are drawn), and the items are created in slices of a few ms per
//   event-loop turn, those in the views' visible region first (contentReady when all exist).
//   A newer setContent/setContentAsync supersedes one still being prepared.

#include "visualizers/layout/scene_layout.h"
#include "visualizers/scene/decorations.h"

#include <QElapsedTimer>
#include <QGraphicsScene>
#include <QSet>
#include <QTimer>

#include <map>
#include <memory>
#include <optional>

namespace tscope::vis {

struct SceneContent;
class ShapeItem;

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  // Time spent creating items per event-loop turn while building asynchronously.
  static constexpr int kSliceMs = 8;

  explicit GraphScene(QObject* parent = nullptr);
  ~GraphScene() override;

  // Replaces all items. Keeps the selection of nodes that are still shown.
  void setContent(std::shared_ptr<const ViewModel> model,
                  std::shared_ptr<const SceneLayout> layout);
  // The same without blocking (see above). Keeps the selection and highlight like setContent.
  void setContentAsync(std::shared_ptr<const ViewModel> model,
                       std::shared_ptr<const SceneLayout> layout);
  // True while an asynchronous replacement is prepared or its items are being created.
  bool isBuilding() const;
  // True during the switch to new content (while contentSwitched and the selection change it
  // causes are emitted).
  bool isSwitchingContent() const { return m_switching; }
  const std::shared_ptr<const ViewModel>& model() const { return m_model; }
  const std::shared_ptr<const SceneLayout>& sceneLayout() const { return m_layout; }

  // Selection in model terms (ViewModel node indices); -1 / empty when none.
  int selectedNode() const;
  void selectNode(int node);  // selects (and emits nodeSelected); -1 clears
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
  // The scene rect of a shown node / group (empty when not shown); valid from contentSwitched on,
  // whether or not its item exists yet.
  QRectF nodeRect(int node) const;
  QRectF groupRect(int group) const;
  // The rect of what shows `node`: its own shape, else the box of its outermost collapsed group.
  QRectF shownRect(int node) const;

  // Decoration layers (decorations.h, Note [Decoration layers]): sets or replaces the layer
  // `name`; null removes it. Layers outlive content switches and apply while the scene shows
  // their model.
  void setDecorations(const QString& name, std::shared_ptr<const Decorations> decorations,
                      int z = 0);
  std::shared_ptr<const Decorations> decorations(const QString& name) const;
  QStringList decorationLayers() const;
  // What is drawn now, after merging (tests, exporters).
  const MergedDecorations& mergedDecorations() const;
  // The drawn decoration of `node`'s own shape (null when none or not shown).
  const NodeDecoration* nodeDecoration(int node) const;
  // The drawn decoration of the shown edge standing for ViewModel edge `edge` (null when none).
  const EdgeDecoration* edgeDecoration(int edge) const;

 signals:
  void nodeSelected(int node);                   // -1 when the selection is cleared
  void groupToggleRequested(QString groupPath);  // double-click on a group box, cluster or OFG node
  void nodeActivated(int node);                  // double-click on an ordinary node
  void contentSwitched();  // new content replaced the old (its items may still be coming)
  void contentReady();     // every item of the current content exists
  // A right click on a node (or a collapsed group box: node -1, groupPath set), in screen
  // coordinates. The node is selected first.
  void contextMenuRequested(int node, QString groupPath, QPoint screenPos);

 private:
  struct Items;
  // `now`: delete the old items at once (else they are retired: hidden, deleted in slices).
  void switchTo(std::shared_ptr<const SceneContent> content, bool now);
  void buildSlice();
  bool deleteRetired(const QElapsedTimer* budget);
  bool createItems(const QElapsedTimer* budget);
  void createItem(std::size_t entry);
  void prepareText(std::size_t entry);
  ShapeItem* ensureShape(int shape);
  void updateSceneRect();
  void applyDecorations();  // merges the layers for the current content and refreshes the items

  std::shared_ptr<const ViewModel> m_model;
  std::shared_ptr<const SceneLayout> m_layout;
  std::shared_ptr<Items> m_items;
  std::vector<std::shared_ptr<Items>> m_retired;  // replaced content whose items await deletion
  quint64 m_generation = 0;                       // the content requested last
  bool m_preparing = false;                       // a worker prepares the latest request
  bool m_switching = false;
  QTimer m_slices;
  struct Layer {
    int z = 0;
    std::shared_ptr<const Decorations> decorations;
  };
  std::map<QString, Layer> m_layers;
};

}  // namespace tscope::vis

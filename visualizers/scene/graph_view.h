#pragma once
// GraphView: the QGraphicsView of a GraphScene. Smooth zoom with the wheel (about the cursor,
// clamped to 0.05x..8x), pan by dragging the background or with the arrow keys, zoom to fit,
// zoom to a node, a minimap overlay in a corner, and level of detail (the scene's items skip text
// when the view's scale is below kTextScale).

#include "visualizers/scene/graph_scene.h"

#include <QGraphicsView>

namespace tscope::vis {

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  static constexpr double kMinZoom = 0.05, kMaxZoom = 8.0, kTextScale = 0.35;
  // The least zoom a graph opens at and a revealed node is shown at: labels read comfortably.
  static constexpr double kReadableZoom = 0.6;

  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;
  GraphScene* graphScene() const;

  double zoom() const;
  void setZoom(double zoom, std::optional<QPointF> anchorScenePos = std::nullopt);
  void zoomIn();
  void zoomOut();
  void zoomToFit();
  void resetZoom();
  void centerOnNode(int node);
  // Centres on the node, first zooming in to actual size when the view is too far out to read
  // its label (a search hit or a node chosen in another pane must be legible once shown).
  void revealNode(int node);
  // How a graph first appears: fitted when it then reads at kReadableZoom or closer; a bigger one
  // (ResNet, a transformer) at a readable zoom with its top, where the inputs are, in view and
  // its first node centred horizontally, as Netron opens models. Ctrl+0 still fits the whole.
  void showOpening();
  void setMinimapVisible(bool visible);
  bool minimapVisible() const;

  // Shows a new layout. With an anchor group (the one just toggled), the view scrolls so that the
  // group's top-left corner stays where it was on screen (Note [Per-group layout]); the first
  // content of a view, or any with `fit`, is shown as an opening graph (showOpening); otherwise
  // the centre stays.
  void setContent(std::shared_ptr<const ViewModel> model, std::shared_ptr<const SceneLayout> layout,
                  const QString& anchorGroupPath = {}, bool fit = false);
  // The same without blocking the GUI thread (GraphScene::setContentAsync): the view is placed
  // when the new content replaces the old, and contentReady() follows once every item exists.
  void setContentAsync(std::shared_ptr<const ViewModel> model,
                       std::shared_ptr<const SceneLayout> layout,
                       const QString& anchorGroupPath = {}, bool fit = false);

  // For benchmarks: repaints the whole viewport synchronously and returns the milliseconds that
  // paint took (the view must be shown). lastFrameMs() is the time of the latest paint event.
  double renderFrame();
  double lastFrameMs() const { return m_lastFrameMs; }

 signals:
  void zoomChanged(double zoom);
  void contentReady();  // the content of the latest setContent / setContentAsync is all on screen

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  struct Minimap;
  // How to place the next content once the scene switches to it.
  struct Placement {
    QString anchorGroupPath;
    std::optional<QPointF> anchorBefore;  // the anchor group's top-left in the old content
    bool fit = false;
  };
  Placement placementFor(const QString& anchorGroupPath, bool fit) const;
  // The zoom at which `content` fills the viewport, with a small margin.
  double fitZoom(const QRectF& content) const;
  void place(const Placement& placement);
  void updateSceneRect();
  void scrollBy(QPointF viewportDelta);
  std::unique_ptr<Minimap> m_minimap;
  std::optional<Placement> m_placement;
  double m_lastFrameMs = 0;
};

}  // namespace tscope::vis

#include "visualizers/scene/graph_view.h"

#include "visualizers/model/palette.h"

#include <QElapsedTimer>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPixmapCache>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace tscope::vis {

namespace {
constexpr double kWheelStep =
    480.0;  // wheel angle (1/8 degree) that doubles the zoom: 120 -> 1.19x
constexpr double kKeyZoom = 1.25;
constexpr int kKeyPan = 60;          // pixels per arrow key
constexpr double kMaxFitZoom = 1.5;  // zoom to fit never blows a small graph up further
constexpr int kMinimapMax = 200;     // pixels, the minimap's longer side
constexpr int kMinimapMargin = 10;
}  // namespace

// The minimap: the scene's nodes and clusters as coloured rectangles, painted once per content into
// an image, with the view's visible rectangle on top; a click or drag recentres the view. It is a
// child of the view, not of the viewport, so scrolling the viewport never moves or smears it.
struct GraphView::Minimap : QWidget {
  explicit Minimap(GraphView* view) : QWidget(view), m_view(view) {
    setObjectName(QStringLiteral("minimap"));
    setCursor(Qt::PointingHandCursor);
    setAttribute(Qt::WA_OpaquePaintEvent);
  }

  void invalidate() {
    m_image = QImage();
    const QRectF rect = m_view->graphScene()->sceneRect();
    const bool content = m_view->graphScene()->sceneLayout() != nullptr && rect.isValid();
    if (content) {
      const double s = kMinimapMax / std::max(rect.width(), rect.height());
      resize(std::max(24, int(rect.width() * s)) + 2, std::max(24, int(rect.height() * s)) + 2);
    }
    setVisible(m_enabled && content);
    place();
    update();
  }

  void place() {
    const QRect vp = m_view->viewport()->geometry();
    move(vp.right() - width() - kMinimapMargin, vp.bottom() - height() - kMinimapMargin);
  }

  // Scene -> minimap coordinates.
  QTransform toMap() const {
    const QRectF rect = m_view->graphScene()->sceneRect();
    const double s = std::min((width() - 2) / rect.width(), (height() - 2) / rect.height());
    return QTransform::fromTranslate(1, 1).scale(s, s).translate(-rect.left(), -rect.top());
  }

  void render() {
    m_image = QImage(size(), QImage::Format_ARGB32_Premultiplied);
    m_image.fill(QColor(250, 250, 250));
    QPainter p(&m_image);
    p.setTransform(toMap());
    p.setPen(Qt::NoPen);
    const GraphScene* scene = m_view->graphScene();
    const SceneLayout& layout = *scene->sceneLayout();
    for (const PlacedGroup& g : layout.groups) {
      p.setBrush(g.expanded ? palette::clusterFill(g.depth)
                            : palette::collapsedGroupFill(GroupKind::Scope));
      p.drawRect(g.rect);
    }
    const auto& nodes = scene->model()->nodes();
    for (const PlacedNode& n : layout.nodes) {
      p.setBrush(nodes[std::size_t(n.node)].fill.darker(115));
      p.drawRect(n.rect);
    }
  }

  void paintEvent(QPaintEvent*) override {
    if (m_image.size() != size()) render();
    QPainter p(this);
    p.drawImage(0, 0, m_image);
    p.setPen(QColor(120, 120, 120));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rect().adjusted(0, 0, -1, -1));
    const QRectF visible = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
    p.setPen(QPen(palette::selectionColor(), 1.5));
    p.setBrush(QColor(30, 144, 255, 40));
    p.drawRect(toMap().mapRect(visible).intersected(QRectF(rect()).adjusted(0, 0, -1, -1)));
  }

  void recentre(QPoint pos) { m_view->centerOn(toMap().inverted().map(QPointF(pos))); }
  void mousePressEvent(QMouseEvent* e) override { recentre(e->position().toPoint()); }
  void mouseReleaseEvent(QMouseEvent* e) override { e->accept(); }
  void mouseMoveEvent(QMouseEvent* e) override {
    if (e->buttons() & Qt::LeftButton) recentre(e->position().toPoint());
  }

  GraphView* m_view;
  QImage m_image;
  bool m_enabled = true;
};

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new GraphScene(this));
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  // Items restore what they change (each sets its pens and brushes), and a cosmetic pixel of
  // antialiasing margin is not worth a larger repaint region.
  setOptimizationFlags(QGraphicsView::DontSavePainterState |
                       QGraphicsView::DontAdjustForAntialiasing);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setTransformationAnchor(QGraphicsView::NoAnchor);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setCacheMode(QGraphicsView::CacheBackground);
  // The zoomed-out overview is one item cached as a pixmap of the viewport's size or more; Qt's
  // default 10 MiB pixmap cache would evict it on big screens.
  QPixmapCache::setCacheLimit(std::max(QPixmapCache::cacheLimit(), 96 * 1024));
  m_minimap = std::make_unique<Minimap>(this);
  m_minimap->hide();
  connect(graphScene(), &GraphScene::contentSwitched, this, [this] {
    if (m_placement) place(*std::exchange(m_placement, std::nullopt));
  });
  connect(graphScene(), &GraphScene::contentReady, this, &GraphView::contentReady);
  // The legend toggled: the scroll range follows.
  connect(graphScene(), &QGraphicsScene::sceneRectChanged, this, [this] {
    if (!graphScene()->isSwitchingContent()) updateSceneRect();  // else place() does it
  });
  auto refresh = [this] { m_minimap->update(); };
  connect(horizontalScrollBar(), &QScrollBar::valueChanged, this, refresh);
  connect(verticalScrollBar(), &QScrollBar::valueChanged, this, refresh);
}

GraphView::~GraphView() = default;

GraphScene* GraphView::graphScene() const {
  return static_cast<GraphScene*>(scene());
}

double GraphView::zoom() const {
  return transform().m11();
}

void GraphView::updateSceneRect() {
  // Room around the content, one viewport each side, so that any point of the graph can be
  // centred (QGraphicsView clamps scrolling to its scene rect: a node at the graph's edge could
  // not be centred with the bare bounds), anchoring can put a group anywhere on screen, and
  // zooming about the cursor is never clamped. zoomToFit and the minimap use the scene's own rect.
  const QRectF content = graphScene()->sceneRect();
  const double mx = viewport()->width() / zoom(), my = viewport()->height() / zoom();
  setSceneRect(content.adjusted(-mx, -my, mx, my));
}

void GraphView::scrollBy(QPointF delta) {
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + int(std::lround(delta.x())));
  verticalScrollBar()->setValue(verticalScrollBar()->value() + int(std::lround(delta.y())));
}

void GraphView::setZoom(double zoom, std::optional<QPointF> anchorScenePos) {
  zoom = std::clamp(zoom, kMinZoom, kMaxZoom);
  const double before = this->zoom();
  const QPointF anchor = anchorScenePos.value_or(mapToScene(viewport()->rect().center()));
  const QPointF anchorView = viewportTransform().map(anchor);
  setTransform(QTransform::fromScale(zoom, zoom));
  // Zoomed out the items draw one-pixel shapes without text: antialiasing them costs most of a
  // frame and shows nothing.
  setRenderHint(QPainter::Antialiasing, zoom >= kTextScale);
  graphScene()->setOverview(zoom < kTextScale);
  updateSceneRect();
  scrollBy(viewportTransform().map(anchor) - anchorView);
  m_minimap->update();
  if (!qFuzzyCompare(before, zoom)) emit zoomChanged(zoom);
}

void GraphView::zoomIn() {
  setZoom(zoom() * kKeyZoom);
}
void GraphView::zoomOut() {
  setZoom(zoom() / kKeyZoom);
}
void GraphView::resetZoom() {
  setZoom(1.0);
}

double GraphView::fitZoom(const QRectF& content) const {
  const QSize vp = viewport()->size();
  return std::min(vp.width() / content.width(), vp.height() / content.height()) * 0.97;
}

void GraphView::zoomToFit() {
  const QRectF content = graphScene()->sceneRect();
  if (!content.isValid()) return;
  setZoom(std::min(fitZoom(content), kMaxFitZoom));
  centerOn(content.center());
}

void GraphView::centerOnNode(int node) {
  const QRectF rect = graphScene()->nodeRect(node);
  if (!rect.isEmpty()) centerOn(rect.center());
}

void GraphView::revealNode(int node) {
  if (zoom() < kTextScale && !graphScene()->nodeRect(node).isEmpty()) setZoom(1.0);
  centerOnNode(node);
}

void GraphView::showOpening() {
  const QRectF content = graphScene()->sceneRect();
  const SceneLayout* layout = graphScene()->sceneLayout().get();
  if (!content.isValid() || !layout) return;
  if (fitZoom(content) >= kReadableZoom) return zoomToFit();
  const QSize vp = viewport()->size();
  setZoom(std::clamp(vp.width() / content.width() * 0.97, kReadableZoom, 1.0));
  // The topmost node (a graph input; the leftmost of a row) sets the horizontal centre; the
  // content's top edge goes a small margin below the viewport's.
  const QRectF* top = nullptr;
  for (const PlacedNode& placed : layout->nodes)
    if (!top || placed.rect.top() < top->top() - 0.5 ||
        (placed.rect.top() < top->top() + 0.5 && placed.rect.left() < top->left()))
      top = &placed.rect;
  const double halfWidth = vp.width() / zoom() / 2, halfHeight = vp.height() / zoom() / 2;
  double x = top ? top->center().x() : content.center().x();
  // No empty band at the sides when the content is wider than the view.
  if (content.width() > 2 * halfWidth)
    x = std::clamp(x, content.left() + halfWidth, content.right() - halfWidth);
  else
    x = content.center().x();
  centerOn(x, content.top() - 12 / zoom() + halfHeight);
}

void GraphView::setMinimapVisible(bool visible) {
  m_minimap->m_enabled = visible;
  m_minimap->invalidate();
}

bool GraphView::minimapVisible() const {
  return m_minimap->m_enabled;
}

GraphView::Placement GraphView::placementFor(const QString& anchorGroupPath, bool fit) const {
  const GraphScene* scene = graphScene();
  Placement placement{anchorGroupPath, std::nullopt, fit || scene->sceneLayout() == nullptr};
  if (!anchorGroupPath.isEmpty() && scene->model()) {
    const QRectF old = scene->groupRect(scene->model()->groupByPath(anchorGroupPath));
    if (!old.isEmpty()) placement.anchorBefore = old.topLeft();
  }
  return placement;
}

void GraphView::place(const Placement& placement) {
  GraphScene* scene = graphScene();
  // Where the old content's anchor and centre are on screen now (the user may have scrolled
  // while the new content was prepared).
  std::optional<QPointF> anchorView;
  if (placement.anchorBefore) anchorView = viewportTransform().map(*placement.anchorBefore);
  const QPointF oldCentre = mapToScene(viewport()->rect().center());
  updateSceneRect();
  m_minimap->invalidate();
  if (!scene->sceneLayout()) return;
  if (placement.fit) return showOpening();
  if (anchorView && scene->model()) {
    const QRectF now = scene->groupRect(scene->model()->groupByPath(placement.anchorGroupPath));
    if (!now.isEmpty()) return scrollBy(viewportTransform().map(now.topLeft()) - *anchorView);
  }
  // Scrolled by the centre's move only: centerOn() would truncate, drifting a pixel per switch.
  scrollBy(viewportTransform().map(oldCentre) - QPointF(viewport()->rect().center()));
}

void GraphView::setContent(std::shared_ptr<const ViewModel> model,
                           std::shared_ptr<const SceneLayout> layout,
                           const QString& anchorGroupPath, bool fit) {
  m_placement = placementFor(anchorGroupPath, fit);
  graphScene()->setContent(std::move(model), std::move(layout));  // places it on contentSwitched
}

void GraphView::setContentAsync(std::shared_ptr<const ViewModel> model,
                                std::shared_ptr<const SceneLayout> layout,
                                const QString& anchorGroupPath, bool fit) {
  m_placement = placementFor(anchorGroupPath, fit);
  graphScene()->setContentAsync(std::move(model), std::move(layout));
}

double GraphView::renderFrame() {
  viewport()->repaint();
  return m_lastFrameMs;
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const double angle = event->angleDelta().y();
  if (angle == 0) return QGraphicsView::wheelEvent(event);
  setZoom(zoom() * std::pow(2.0, angle / kWheelStep), mapToScene(event->position().toPoint()));
  event->accept();
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      zoomIn();
      break;
    case Qt::Key_Minus:
      zoomOut();
      break;
    case Qt::Key_0:
      resetZoom();
      break;
    case Qt::Key_Left:
      scrollBy({-kKeyPan, 0});
      break;
    case Qt::Key_Right:
      scrollBy({kKeyPan, 0});
      break;
    case Qt::Key_Up:
      scrollBy({0, -kKeyPan});
      break;
    case Qt::Key_Down:
      scrollBy({0, kKeyPan});
      break;
    default:
      return QGraphicsView::keyPressEvent(event);
  }
  event->accept();
}

void GraphView::paintEvent(QPaintEvent* event) {
  QElapsedTimer timer;
  timer.start();
  QGraphicsView::paintEvent(event);
  m_lastFrameMs = double(timer.nsecsElapsed()) / 1e6;
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  updateSceneRect();
  m_minimap->place();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  setFocus(Qt::MouseFocusReason);  // so the arrow and +/- keys work after a click in the graph
  QGraphicsView::mousePressEvent(event);
}

}  // namespace tscope::vis

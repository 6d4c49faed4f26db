#include "visualizers/scene/graph_scene.h"

#include "visualizers/scene/graph_view.h"
#include "visualizers/scene/scene_content.h"
#include "visualizers/scene/scene_items.h"
#include "visualizers/threads/hand_off.h"

#include <QGraphicsSceneContextMenuEvent>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QStringList>

#include <algorithm>

namespace tscope::vis {

// The items of one content. Item creation runs over one index space: clusters, then shapes, then
// edges; the first pass creates those meeting the views' visible region, the second the rest.
struct GraphScene::Items {
  SceneStyle style;
  std::shared_ptr<const SceneContent> content;
  std::vector<ClusterItem*> clusters;  // by content cluster; null until created
  std::vector<ShapeItem*> shapes;      // by content shape
  std::vector<EdgeItem*> edges;        // by content edge
  std::vector<QGraphicsItem*> owned;   // every item created, in order (deleted when retired)
  std::size_t deleted = 0;             // retired: how many of `owned` are deleted
  LegendItem* legend = nullptr;
  OverviewItem* overview = nullptr;
  std::vector<char> highlighted;  // by content shape
  QSet<int> highlight;
  bool legendVisible = true;
  bool quiet = false;  // no nodeSelected while items are rebuilt or a selection is replaced
  int lastSelected = -1;
  int pass = 0;
  std::size_t cursor = 0;
  std::optional<QRectF> focus;
  bool textFirst = false;         // a view shows the focus region with text (Note [Text before...])
  QTransform textTransform;       // ... and the transform it paints with
  MergedDecorations decorations;  // SceneStyle::decorations points here

  std::size_t entries() const { return clusters.size() + shapes.size() + edges.size(); }
  QRectF entryRect(std::size_t entry) const {
    if (entry < clusters.size()) return content->clusters[entry].rect;
    entry -= clusters.size();
    if (entry < shapes.size()) return content->shapes[entry].rect;
    return content->edges[entry - shapes.size()].bounds;
  }
  bool created(std::size_t entry) const {
    if (entry < clusters.size()) return clusters[entry];
    entry -= clusters.size();
    if (entry < shapes.size()) return shapes[entry];
    return edges[entry - shapes.size()];
  }
};

GraphScene::GraphScene(QObject* parent)
    : QGraphicsScene(parent), m_items(std::make_shared<Items>()) {
  setBackgroundBrush(Qt::white);
  m_slices.setInterval(0);
  connect(&m_slices, &QTimer::timeout, this, &GraphScene::buildSlice);
  connect(this, &QGraphicsScene::selectionChanged, this, [this] {
    if (m_items->quiet) return;
    const int node = selectedNode();
    if (node == m_items->lastSelected) return;
    m_items->lastSelected = node;
    emit nodeSelected(node);
  });
}

GraphScene::~GraphScene() {
  // The items point into the contents: delete them while the contents are alive.
  m_items->quiet = true;
  clear();
}

void GraphScene::setContent(std::shared_ptr<const ViewModel> model,
                            std::shared_ptr<const SceneLayout> layout) {
  ++m_generation;  // an asynchronous request still being prepared is superseded
  m_preparing = false;
  switchTo(SceneContent::build(std::move(model), std::move(layout), font()), true);
  createItems(nullptr);
  m_slices.stop();
  emit contentReady();
}

void GraphScene::setContentAsync(std::shared_ptr<const ViewModel> model,
                                 std::shared_ptr<const SceneLayout> layout) {
  const quint64 generation = ++m_generation;
  m_preparing = true;
  // A view zoomed to fit a big graph shows the overview: the worker renders it at that scale.
  double overviewScale = 0;
  if (layout && layout->bounds.isValid())
    for (QGraphicsView* view : views()) {
      const QSizeF vp = view->viewport()->size() * view->devicePixelRatioF();
      const double fit =
          std::min(vp.width() / layout->bounds.width(), vp.height() / layout->bounds.height());
      if (fit < GraphView::kTextScale) overviewScale = std::max(overviewScale, fit);
    }
  runOnWorker(
      this,
      [model = std::move(model), layout = std::move(layout), font = font(), overviewScale] {
        // A second, finer image serves zooming in while still zoomed out (up to the text
        // threshold).
        const double detail = overviewScale > 0 ? GraphView::kTextScale / 2 : 0;
        return SceneContent::build(model, layout, font, overviewScale, detail);
      },
      // Always queued: a newer request made in the same event-loop turn supersedes this one and
      // the old content stays until the loop turns.
      [this, generation](std::shared_ptr<const SceneContent> content) {
        if (generation != m_generation) return;  // superseded
        m_preparing = false;
        switchTo(std::move(content), false);
        m_slices.start();
      });
}

bool GraphScene::isBuilding() const {
  return m_preparing || m_slices.isActive();
}

void GraphScene::switchTo(std::shared_ptr<const SceneContent> content, bool now) {
  m_switching = true;
  const int previous = selectedNode();
  const std::shared_ptr<Items> old = m_items;
  old->quiet = true;
  if (now) {
    clear();  // the old content's items and every retired one
    m_retired.clear();
  } else {
    // Hidden at once (they paint nothing and ignore the mouse), deleted over the next turns.
    old->style.retired = true;
    clearSelection();
    if (old->overview) old->overview->hide();  // its pixmap cache would still be drawn
    if (old->legend) old->legend->hide();
    if (!old->owned.empty()) m_retired.push_back(old);
  }
  auto items = std::make_shared<Items>();
  items->style.setFont(font());
  items->highlight = old->highlight;
  items->legendVisible = old->legendVisible;
  items->style.highlightPen = old->style.highlightPen;
  items->style.highlightOn = old->style.highlightOn;
  items->style.overview = old->style.overview;
  items->quiet = true;
  items->content = std::move(content);
  m_items = items;
  m_model = items->content->model;
  m_layout = items->content->layout;
  items->style.model = m_model.get();
  const SceneContent& c = *items->content;
  items->clusters.assign(c.clusters.size(), nullptr);
  items->shapes.assign(c.shapes.size(), nullptr);
  items->edges.assign(c.edges.size(), nullptr);
  items->owned.reserve(c.itemCount() + 2);
  if (m_model && m_layout) {
    // Drawn at once: zoomed out the overview shows the whole graph before any other item exists.
    items->overview = new OverviewItem(&items->style, &c);
    // Hidden when not in overview mode: its device-coordinate cache would still blend a
    // viewport-sized transparent pixmap into every frame.
    items->overview->setVisible(items->style.overview);
    items->legend = new LegendItem(&items->style, c.legend);
    items->legend->setPos(c.bounds.right() + 24, c.bounds.top());
    items->legend->setVisible(items->legendVisible);
    for (QGraphicsItem* item : {static_cast<QGraphicsItem*>(items->overview),
                                static_cast<QGraphicsItem*>(items->legend)}) {
      addItem(item);
      items->owned.push_back(item);
    }
    setHighlight(items->highlight, items->style.highlightPen.color());
    applyDecorations();
  }
  updateSceneRect();
  if (previous >= 0 && std::size_t(previous) < c.nodeShape.size() &&
      c.nodeShape[std::size_t(previous)] >= 0)
    ensureShape(c.nodeShape[std::size_t(previous)])->setSelected(true);
  update();
  items->quiet = false;
  emit contentSwitched();
  items->lastSelected = selectedNode();
  if (items->lastSelected != previous) emit nodeSelected(items->lastSelected);
  m_switching = false;
}

void GraphScene::buildSlice() {
  QElapsedTimer budget;
  budget.start();
  // A full update: adding items then marks nothing dirty one by one (QGraphicsScene skips that
  // while a full repaint is pending).
  update();
  if (!deleteRetired(&budget) || !createItems(&budget)) return;
  m_slices.stop();
  emit contentReady();
}

bool GraphScene::deleteRetired(const QElapsedTimer* budget) {
  while (!m_retired.empty()) {
    Items& old = *m_retired.front();
    while (old.deleted < old.owned.size()) {
      if (budget && (old.deleted & 63) == 0 && budget->elapsed() >= kSliceMs) return false;
      // Last created first: edges before the shapes whose edge lists point at them.
      delete old.owned[old.owned.size() - 1 - old.deleted++];
    }
    m_retired.erase(m_retired.begin());
  }
  return true;
}

bool GraphScene::createItems(const QElapsedTimer* budget) {
  Items& items = *m_items;
  if (!items.content || !m_layout) return true;
  if (!items.focus) {
    // The region to fill first: what the views show now that they have placed the new content.
    QRectF focus;
    for (QGraphicsView* view : views()) {
      focus = focus.united(view->mapToScene(view->viewport()->rect()).boundingRect());
      if (view->transform().m11() >= GraphView::kTextScale && !items.textFirst) {
        items.textFirst = true;
        items.textTransform = linearPart(view->viewportTransform());
      }
    }
    items.focus = focus;
  }
  const std::size_t total = items.entries();
  for (; items.pass < 2; ++items.pass, items.cursor = 0) {
    for (; items.cursor < total; ++items.cursor) {
      // Items laid out with their text cost more: the budget is checked more often.
      const std::size_t every = items.pass == 0 && items.textFirst ? 7 : 31;
      if (budget && (items.cursor & every) == 0 && budget->elapsed() >= kSliceMs) return false;
      if (items.created(items.cursor)) continue;
      if (items.pass == 0 && !items.entryRect(items.cursor).intersects(*items.focus)) continue;
      createItem(items.cursor);
      // Note [Text before the first paint]: the items the views show first get their text laid
      // out here, within the slices' time budget, instead of all at once in the first paint.
      if (items.pass == 0 && budget && items.textFirst) prepareText(items.cursor);
    }
  }
  return true;
}

void GraphScene::createItem(std::size_t entry) {
  Items& items = *m_items;
  const SceneContent& c = *items.content;
  QGraphicsItem* item = nullptr;
  if (entry < items.clusters.size()) {
    auto* cluster = new ClusterItem(&items.style, &c.clusters[entry]);
    items.clusters[entry] = cluster;
    item = cluster;
  } else if ((entry -= items.clusters.size()) < items.shapes.size()) {
    auto* shape = new ShapeItem(&items.style, &c.shapes[entry], int(entry));
    // Links to the edges created before it; later edges link themselves.
    for (int e : c.shapes[entry].edges)
      if (EdgeItem* edge = items.edges[std::size_t(e)]) shape->edges.push_back(edge);
    if (items.highlighted[entry]) shape->setHighlighted(true);
    if (items.style.overview) shape->refreshContentFlag();
    items.shapes[entry] = shape;
    item = shape;
  } else {
    entry -= items.shapes.size();
    auto* edge = new EdgeItem(&items.style, &c.edges[entry], int(entry));
    for (int s : c.edges[entry].shapes)
      if (ShapeItem* shape = items.shapes[std::size_t(s)]) {
        shape->edges.push_back(edge);
        if (shape->isHovered()) edge->setHovered(true);
      }
    if (items.style.overview) edge->refreshContentFlag();
    items.edges[entry] = edge;
    item = edge;
  }
  addItem(item);
  items.owned.push_back(item);
}

void GraphScene::prepareText(std::size_t entry) {
  Items& items = *m_items;
  if (entry < items.clusters.size()) return;
  entry -= items.clusters.size();
  if (entry < items.shapes.size()) {
    if (items.shapes[entry]) items.shapes[entry]->prepareText(items.textTransform);
    return;
  }
  entry -= items.shapes.size();
  if (items.edges[entry]) items.edges[entry]->prepareText(items.textTransform);
}

ShapeItem* GraphScene::ensureShape(int shape) {
  Items& items = *m_items;
  if (!items.shapes[std::size_t(shape)]) createItem(items.clusters.size() + std::size_t(shape));
  return items.shapes[std::size_t(shape)];
}

int GraphScene::selectedNode() const {
  for (QGraphicsItem* item : selectedItems())
    if (item->type() == ShapeItem::Type) {
      const auto* shape = static_cast<ShapeItem*>(item);
      if (shape->node >= 0 && !shape->isRetired()) return shape->node;
    }
  return -1;
}

void GraphScene::selectNode(int node) {
  m_items->quiet = true;
  clearSelection();
  const SceneContent* c = m_items->content.get();
  if (c && node >= 0 && std::size_t(node) < c->nodeShape.size() &&
      c->nodeShape[std::size_t(node)] >= 0)
    ensureShape(c->nodeShape[std::size_t(node)])->setSelected(true);
  m_items->quiet = false;
  const int now = selectedNode();
  if (now == m_items->lastSelected) return;
  m_items->lastSelected = now;
  emit nodeSelected(now);
}

void GraphScene::setHighlight(const QSet<int>& nodes, const QColor& color) {
  Items& items = *m_items;
  items.highlight = nodes;
  items.style.highlightPen.setColor(color);
  items.style.highlightOn = !nodes.isEmpty();
  if (!items.content) return;
  // A node hidden in a collapsed group lights its group's box, so a hit is never invisible.
  items.highlighted.assign(items.shapes.size(), 0);
  for (int node : nodes) {
    const int shape = items.content->shownShape(node);
    if (shape >= 0) items.highlighted[std::size_t(shape)] = 1;
  }
  for (std::size_t i = 0; i < items.shapes.size(); ++i)
    if (items.shapes[i]) items.shapes[i]->setHighlighted(items.highlighted[i]);
  update();
}

void GraphScene::clearHighlight() {
  setHighlight({}, m_items->style.highlightPen.color());
}

void GraphScene::setLegendVisible(bool visible) {
  m_items->legendVisible = visible;
  if (m_items->legend) m_items->legend->setVisible(visible);
  updateSceneRect();
}

void GraphScene::updateSceneRect() {
  QRectF rect = m_layout ? m_layout->bounds : QRectF();
  if (m_items->legend && m_items->legendVisible)
    rect = rect.united(m_items->legend->sceneBoundingRect());
  setSceneRect(rect.adjusted(-20, -20, 20, 20));
}

void GraphScene::setOverview(bool on) {
  Items& items = *m_items;
  if (items.style.overview == on) return;
  items.style.overview = on;
  for (ShapeItem* shape : items.shapes)
    if (shape) shape->refreshContentFlag();
  for (EdgeItem* edge : items.edges)
    if (edge) edge->refreshContentFlag();
  if (items.overview) items.overview->setVisible(on);
}

bool GraphScene::overview() const {
  return m_items->style.overview;
}

QRectF GraphScene::nodeRect(int node) const {
  const SceneContent* c = m_items->content.get();
  if (!c || node < 0 || std::size_t(node) >= c->nodeShape.size() ||
      c->nodeShape[std::size_t(node)] < 0)
    return {};
  return c->shapes[std::size_t(c->nodeShape[std::size_t(node)])].rect;
}

QRectF GraphScene::groupRect(int group) const {
  const SceneContent* c = m_items->content.get();
  if (!c || group < 0 || std::size_t(group) >= c->groupBox.size()) return {};
  if (c->groupCluster[std::size_t(group)] >= 0)
    return c->clusters[std::size_t(c->groupCluster[std::size_t(group)])].rect;
  if (c->groupBox[std::size_t(group)] >= 0)
    return c->shapes[std::size_t(c->groupBox[std::size_t(group)])].rect;
  return {};
}

QRectF GraphScene::shownRect(int node) const {
  const SceneContent* c = m_items->content.get();
  if (!c || node < 0 || std::size_t(node) >= c->nodeShape.size()) return {};
  const int shape = c->shownShape(node);
  return shape >= 0 ? c->shapes[std::size_t(shape)].rect : QRectF();
}

// Note [Text before the first paint]: a scene opened at a readable zoom (GraphView::showOpening)
// shows a few hundred to a thousand items with text, and each lays out its label (QStaticText) at
// its first paint: in tst_responsiveness's 12,504-item scene that first paint took 90-250 ms of
// one event-loop turn. The items of the first pass (those the views show) now lay out their text
// when they are created, inside the slices' time budget, for the transform the view paints with
// (QStaticText lays out again when it is drawn with another), so the paint only draws.

// --- decorations (Note [Decoration layers]) -----------------------------------------------------

void GraphScene::setDecorations(const QString& name, std::shared_ptr<const Decorations> decorations,
                                int z) {
  if (!decorations) {
    if (!m_layers.erase(name)) return;
  } else {
    m_layers[name] = Layer{z, std::move(decorations)};
  }
  applyDecorations();
}

std::shared_ptr<const Decorations> GraphScene::decorations(const QString& name) const {
  const auto it = m_layers.find(name);
  return it == m_layers.end() ? nullptr : it->second.decorations;
}

QStringList GraphScene::decorationLayers() const {
  QStringList names;
  for (const auto& [name, layer] : m_layers) names << name;
  return names;
}

const MergedDecorations& GraphScene::mergedDecorations() const {
  return m_items->decorations;
}

const NodeDecoration* GraphScene::nodeDecoration(int node) const {
  const Items& items = *m_items;
  const SceneContent* c = items.content.get();
  if (!c || node < 0 || std::size_t(node) >= c->nodeShape.size()) return nullptr;
  const int shape = c->nodeShape[std::size_t(node)];
  if (shape < 0 || std::size_t(shape) >= items.decorations.shapes.size()) return nullptr;
  const auto& slot = items.decorations.shapes[std::size_t(shape)];
  return slot ? &*slot : nullptr;
}

const EdgeDecoration* GraphScene::edgeDecoration(int edge) const {
  const MergedDecorations& m = m_items->decorations;
  const auto it = m.drawnEdge.find(edge);
  if (it == m.drawnEdge.end() || std::size_t(it->second) >= m.edges.size()) return nullptr;
  const auto& slot = m.edges[std::size_t(it->second)];
  return slot ? &*slot : nullptr;
}

void GraphScene::applyDecorations() {
  Items& items = *m_items;
  if (!items.content) return;
  std::vector<std::pair<std::pair<int, QString>, const Decorations*>> order;
  for (const auto& [name, layer] : m_layers)
    order.push_back({{layer.z, name}, layer.decorations.get()});
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const Decorations*> layers;
  for (const auto& entry : order) layers.push_back(entry.second);
  const bool hadLegend = !items.decorations.legend.empty();
  items.decorations = MergedDecorations::merge(*items.content, layers);
  items.style.decorations = items.decorations.empty() ? nullptr : &items.decorations;
  for (ShapeItem* shape : items.shapes)
    if (shape) shape->refreshDecoration();
  for (EdgeItem* edge : items.edges)
    if (edge) edge->refreshDecoration();
  if (items.overview) items.overview->update();
  // The legend: the content's rows and the layers' (a heat scale, the chain's colours).
  if (items.legend && (hadLegend || !items.decorations.legend.empty())) {
    std::vector<LegendRow> rows = items.content->legend;
    rows.insert(rows.end(), items.decorations.legend.begin(), items.decorations.legend.end());
    auto* legend = new LegendItem(&items.style, std::move(rows));
    legend->setPos(items.legend->pos());
    legend->setVisible(items.legendVisible);
    addItem(legend);
    std::replace(items.owned.begin(), items.owned.end(), static_cast<QGraphicsItem*>(items.legend),
                 static_cast<QGraphicsItem*>(legend));
    delete items.legend;
    items.legend = legend;
    updateSceneRect();
  }
  update();
}

// --- mouse handlers of the items (they speak through the scene's signals) -----------------------

void ShapeItem::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (m_style->retired) return event->ignore();  // replaced: never selected again
  QGraphicsItem::mousePressEvent(event);
}

void ShapeItem::contextMenuEvent(QGraphicsSceneContextMenuEvent* event) {
  auto* graphScene = qobject_cast<GraphScene*>(scene());
  if (m_style->retired || !graphScene) return event->ignore();
  event->accept();
  if (node >= 0 && (flags() & ItemIsSelectable)) graphScene->selectNode(node);
  emit graphScene->contextMenuRequested(node, node >= 0 ? QString() : togglePath,
                                        event->screenPos());
}

void ShapeItem::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  auto* graphScene = qobject_cast<GraphScene*>(scene());
  if (m_style->retired) return event->ignore();
  if (!graphScene || event->button() != Qt::LeftButton)
    return QGraphicsItem::mouseDoubleClickEvent(event);
  event->accept();
  if (!togglePath.isEmpty())
    emit graphScene->groupToggleRequested(togglePath);
  else if (node >= 0)
    emit graphScene->nodeActivated(node);
}

void ClusterItem::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  auto* graphScene = qobject_cast<GraphScene*>(scene());
  if (m_style->retired) return event->ignore();
  if (!graphScene || event->button() != Qt::LeftButton)
    return QGraphicsItem::mouseDoubleClickEvent(event);
  event->accept();
  emit graphScene->groupToggleRequested(m_data->path);
}

}  // namespace tscope::vis

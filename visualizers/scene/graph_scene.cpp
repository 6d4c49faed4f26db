#include "visualizers/scene/graph_scene.h"

#include "engine/graph/op.h"
#include "visualizers/model/palette.h"
#include "visualizers/scene/scene_items.h"

#include <QGraphicsSceneMouseEvent>

#include <map>
#include <set>

namespace tscope::vis {

struct GraphScene::Items {
  SceneStyle style;
  std::vector<ShapeItem*> nodeItems;        // by ViewModel node: the item drawing exactly it
  std::vector<ShapeItem*> collapsedGroups;  // by group: its collapsed box
  std::vector<ClusterItem*> clusters;       // by group: its expanded cluster
  std::vector<ShapeItem*> shapes;           // every node, group box and port
  std::vector<EdgeItem*> edges;
  LegendItem* legend = nullptr;
  OverviewItem* overview = nullptr;
  QSet<int> highlight;
  bool legendVisible = true;
  bool quiet = false;  // no nodeSelected while items are rebuilt or a selection is replaced
  int lastSelected = -1;
};

namespace {

QString opFamilyName(const QString& op) {
  for (const char* word :
       {"Scan", "Shape", "IfElse", "Subtensor", "Alloc", "GpuFromHost", "HostFromGpu"})
    if (op.contains(QLatin1String(word))) return QString::fromLatin1(word);
  if (op.contains(QLatin1String("Elemwise")) || op.contains(QLatin1String("Composite")))
    return QStringLiteral("Elemwise");
  return QStringLiteral("other ops");
}

QString roleName(VariableRole role) {
  switch (role) {
    case VariableRole::Input:
      return QStringLiteral("input");
    case VariableRole::Constant:
      return QStringLiteral("constant");
    case VariableRole::Shared:
      return QStringLiteral("shared variable");
    case VariableRole::Output:
      return QStringLiteral("output");
    case VariableRole::UnusedOutput:
      return QStringLiteral("unused output");
  }
  return {};
}

// The legend lists what the scene shows: the op families, variable roles and edge kinds present.
std::vector<LegendItem::Row> legendRows(const ViewModel& model, const SceneLayout& layout) {
  using Row = LegendItem::Row;
  std::map<QString, QColor> families;
  std::set<int> roles, kinds;
  for (const PlacedNode& pn : layout.nodes) {
    const ViewNode& vn = model.nodes()[std::size_t(pn.node)];
    if (vn.kind == NodeKind::Apply && vn.apply) {
      const QString op = QString::fromStdString(vn.apply->op().name());
      families.emplace(opFamilyName(op), palette::opFamilyColor(op));
    } else if (vn.kind == NodeKind::Variable) {
      roles.insert(int(vn.role));
    }
  }
  for (const PlacedEdge& pe : layout.edges) kinds.insert(int(pe.kind));
  std::vector<Row> rows;
  if (!model.heat().empty())
    rows.push_back({Row::Swatch::Heat, {}, QStringLiteral("time (light to dark)")});
  else
    for (const auto& [name, color] : families) rows.push_back({Row::Swatch::Ellipse, color, name});
  for (int r : roles)
    rows.push_back(
        {Row::Swatch::Box, palette::variableColor(VariableRole(r)), roleName(VariableRole(r))});
  static const char* const kEdgeNames[] = {"value", "view of the input",
                                           "destroys the input (inplace)"};
  for (int k : kinds)
    rows.push_back(
        {Row::Swatch::Line, palette::edgeColor(EdgeKind(k)), QString::fromLatin1(kEdgeNames[k])});
  return rows;
}

}  // namespace

GraphScene::GraphScene(QObject* parent)
    : QGraphicsScene(parent), m_items(std::make_shared<Items>()) {
  setBackgroundBrush(Qt::white);
  connect(this, &QGraphicsScene::selectionChanged, this, [this] {
    if (m_items->quiet) return;
    const int node = selectedNode();
    if (node == m_items->lastSelected) return;
    m_items->lastSelected = node;
    emit nodeSelected(node);
  });
}

void GraphScene::setContent(std::shared_ptr<const ViewModel> model,
                            std::shared_ptr<const SceneLayout> layout) {
  const int previous = selectedNode();
  m_items->quiet = true;
  clear();
  auto items = std::make_shared<Items>();
  items->style.setFont(font());
  items->highlight = m_items->highlight;
  items->legendVisible = m_items->legendVisible;
  items->style.highlightPen = m_items->style.highlightPen;
  items->style.highlightOn = m_items->style.highlightOn;
  items->style.overview = m_items->style.overview;
  items->quiet = true;
  m_items = items;
  m_model = std::move(model);
  m_layout = std::move(layout);
  if (m_model && m_layout) {
    const ViewModel& vm = *m_model;
    const SceneStyle* style = &items->style;
    items->nodeItems.assign(vm.nodes().size(), nullptr);
    items->collapsedGroups.assign(vm.groups().size(), nullptr);
    items->clusters.assign(vm.groups().size(), nullptr);
    std::map<int, int> ofgGroupOfNode;  // an OpFromGraph node toggles its group
    for (const PlacedNode& pn : m_layout->nodes) {
      const ViewNode& vn = vm.nodes()[std::size_t(pn.node)];
      auto* item = new ShapeItem(
          style, vn.kind == NodeKind::Apply ? ShapeItem::Shape::Ellipse : ShapeItem::Shape::Box,
          pn.rect, vn.fill);
      item->node = pn.node;
      item->setLabel(vn.label);
      item->setToolTip(vn.tooltip);
      item->setFlag(QGraphicsItem::ItemIsSelectable);
      items->nodeItems[std::size_t(pn.node)] = item;
      items->shapes.push_back(item);
      addItem(item);
    }
    for (const PlacedGroup& pg : m_layout->groups) {
      const Group& g = vm.groups()[std::size_t(pg.group)];
      if (g.kind == GroupKind::OpFromGraph && g.ofgViewNode >= 0) {
        if (ShapeItem* ofg = items->nodeItems[std::size_t(g.ofgViewNode)]) ofg->togglePath = g.path;
      }
      if (pg.expanded) {
        auto* cluster = new ClusterItem(style, pg.rect, pg.titleRect, pg.depth, g.name, g.path);
        cluster->group = pg.group;
        cluster->setToolTip(
            g.path +
            QStringLiteral("\n%1 nodes (double-click the title to collapse)").arg(g.totalNodes));
        items->clusters[std::size_t(pg.group)] = cluster;
        addItem(cluster);
        continue;
      }
      auto* box = new ShapeItem(style, ShapeItem::Shape::Group, pg.rect,
                                palette::collapsedGroupFill(g.kind));
      box->group = pg.group;
      box->togglePath = g.path;
      box->setLabel(g.name, QStringLiteral("%1 nodes").arg(g.totalNodes));
      QString tip =
          g.path + QStringLiteral("\n%1 nodes (double-click to expand)").arg(g.totalNodes);
      if (g.kind == GroupKind::OpFromGraph && g.ofgViewNode >= 0) {
        // A collapsed OpFromGraph is its outer node: selectable in model terms, same tooltip.
        box->node = g.ofgViewNode;
        box->setFlag(QGraphicsItem::ItemIsSelectable);
        if (!items->nodeItems[std::size_t(g.ofgViewNode)])
          items->nodeItems[std::size_t(g.ofgViewNode)] = box;
        tip = vm.nodes()[std::size_t(g.ofgViewNode)].tooltip +
              QStringLiteral("\n(double-click to expand)");
      }
      box->setToolTip(tip);
      items->collapsedGroups[std::size_t(pg.group)] = box;
      items->shapes.push_back(box);
      addItem(box);
    }
    std::map<std::pair<int, int>, ShapeItem*> portOf;  // (group, outside node)
    for (const PlacedPort& pp : m_layout->ports) {
      auto* port = new ShapeItem(style, ShapeItem::Shape::Port, pp.rect, palette::portColor());
      if (pp.outsideNode >= 0 && std::size_t(pp.outsideNode) < vm.nodes().size())
        port->setToolTip((pp.input ? QStringLiteral("from ") : QStringLiteral("to ")) +
                         vm.nodes()[std::size_t(pp.outsideNode)].label);
      portOf.emplace(std::make_pair(pp.group, pp.outsideNode), port);
      items->shapes.push_back(port);
      addItem(port);
    }
    // The item showing a node: its own, else the box of its outermost collapsed group.
    std::vector<ShapeItem*> shown(vm.nodes().size(), nullptr);
    std::vector<char> resolved(vm.nodes().size(), 0);
    auto shownItem = [&](int node) -> ShapeItem* {
      if (resolved[std::size_t(node)]) return shown[std::size_t(node)];
      ShapeItem* item = items->nodeItems[std::size_t(node)];
      if (!item)
        for (int g = vm.nodes()[std::size_t(node)].group; g > 0;
             g = vm.groups()[std::size_t(g)].parent)
          if (items->collapsedGroups[std::size_t(g)]) item = items->collapsedGroups[std::size_t(g)];
      resolved[std::size_t(node)] = 1;
      return shown[std::size_t(node)] = item;
    };
    auto link = [](ShapeItem* shape, EdgeItem* edge) {
      if (shape && (shape->edges.empty() || shape->edges.back() != edge))
        shape->edges.push_back(edge);
    };
    for (const PlacedEdge& pe : m_layout->edges) {
      auto* edge =
          new EdgeItem(style, pe.kind, pe.path, pe.arrowBase, pe.arrowTip, pe.label, pe.labelPos);
      for (int e : pe.edges) {
        const ViewEdge& ve = vm.edges()[std::size_t(e)];
        for (int end : {ve.from, ve.to}) {
          link(shownItem(end), edge);
          auto port = portOf.find({pe.level, end});
          if (port != portOf.end()) link(port->second, edge);
        }
      }
      items->edges.push_back(edge);
      addItem(edge);
    }
    items->overview = new OverviewItem(style, items->shapes, items->edges, m_layout->bounds);
    addItem(items->overview);
    if (style->overview) {
      for (ShapeItem* shape : items->shapes) shape->refreshContentFlag();
      for (EdgeItem* edge : items->edges) edge->refreshContentFlag();
    }
    items->legend = new LegendItem(style, legendRows(vm, *m_layout));
    items->legend->setPos(m_layout->bounds.right() + 24, m_layout->bounds.top());
    items->legend->setVisible(items->legendVisible);
    addItem(items->legend);
    if (!items->highlight.isEmpty())
      setHighlight(items->highlight, items->style.highlightPen.color());
  }
  setLegendVisible(items->legendVisible);  // also sets the scene rect
  if (previous >= 0 && std::size_t(previous) < items->nodeItems.size() &&
      items->nodeItems[std::size_t(previous)])
    items->nodeItems[std::size_t(previous)]->setSelected(true);
  items->quiet = false;
  items->lastSelected = selectedNode();
  if (items->lastSelected != previous) emit nodeSelected(items->lastSelected);
}

int GraphScene::selectedNode() const {
  for (QGraphicsItem* item : selectedItems())
    if (item->type() == ShapeItem::Type && static_cast<ShapeItem*>(item)->node >= 0)
      return static_cast<ShapeItem*>(item)->node;
  return -1;
}

void GraphScene::selectNode(int node) {
  m_items->quiet = true;
  clearSelection();
  if (node >= 0 && std::size_t(node) < m_items->nodeItems.size() &&
      m_items->nodeItems[std::size_t(node)])
    m_items->nodeItems[std::size_t(node)]->setSelected(true);
  m_items->quiet = false;
  const int now = selectedNode();
  if (now == m_items->lastSelected) return;
  m_items->lastSelected = now;
  emit nodeSelected(now);
}

void GraphScene::setHighlight(const QSet<int>& nodes, const QColor& color) {
  Items& items = *m_items;
  for (ShapeItem* shape : items.shapes) shape->setHighlighted(false);
  items.highlight = nodes;
  items.style.highlightPen.setColor(color);
  items.style.highlightOn = !nodes.isEmpty();
  if (!m_model) return;
  // A node hidden in a collapsed group lights its group's box, so a hit is never invisible.
  for (int node : nodes) {
    if (node < 0 || std::size_t(node) >= items.nodeItems.size()) continue;
    ShapeItem* item = items.nodeItems[std::size_t(node)];
    if (!item)
      for (int g = m_model->nodes()[std::size_t(node)].group; g > 0;
           g = m_model->groups()[std::size_t(g)].parent)
        if (items.collapsedGroups[std::size_t(g)]) item = items.collapsedGroups[std::size_t(g)];
    if (item) item->setHighlighted(true);
  }
  update();
}

void GraphScene::clearHighlight() {
  setHighlight({}, m_items->style.highlightPen.color());
}

void GraphScene::setLegendVisible(bool visible) {
  m_items->legendVisible = visible;
  QRectF rect = m_layout ? m_layout->bounds : QRectF();
  if (m_items->legend) {
    m_items->legend->setVisible(visible);
    if (visible) rect = rect.united(m_items->legend->sceneBoundingRect());
  }
  setSceneRect(rect.adjusted(-20, -20, 20, 20));
}

void GraphScene::setOverview(bool on) {
  Items& items = *m_items;
  if (items.style.overview == on) return;
  items.style.overview = on;
  for (ShapeItem* shape : items.shapes) shape->refreshContentFlag();
  for (EdgeItem* edge : items.edges) edge->refreshContentFlag();
  if (items.overview) items.overview->update();
}

bool GraphScene::overview() const {
  return m_items->style.overview;
}

QRectF GraphScene::nodeRect(int node) const {
  if (node < 0 || std::size_t(node) >= m_items->nodeItems.size() ||
      !m_items->nodeItems[std::size_t(node)])
    return {};
  return m_items->nodeItems[std::size_t(node)]->rect();
}

QRectF GraphScene::groupRect(int group) const {
  if (group < 0 || std::size_t(group) >= m_items->clusters.size()) return {};
  if (const ClusterItem* cluster = m_items->clusters[std::size_t(group)])
    return cluster->boundingRect();
  if (const ShapeItem* box = m_items->collapsedGroups[std::size_t(group)]) return box->rect();
  return {};
}

// --- double-click handlers of the items (they speak through the scene's signals) ---------------

void ShapeItem::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  auto* graphScene = qobject_cast<GraphScene*>(scene());
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
  if (!graphScene || event->button() != Qt::LeftButton)
    return QGraphicsItem::mouseDoubleClickEvent(event);
  event->accept();
  emit graphScene->groupToggleRequested(m_path);
}

}  // namespace tscope::vis

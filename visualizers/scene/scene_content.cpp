#include "visualizers/scene/scene_content.h"

#include "engine/graph/op.h"
#include "visualizers/layout/item_sizes.h"
#include "visualizers/model/palette.h"

#include <QFontMetricsF>
#include <QPainter>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace tscope::vis {

namespace {

constexpr double kArrowHalfWidth = 3.5;

// The legend's name of an op's family: palette::opFamily's word, "other ops" for white ones.
QString opFamilyName(const QString& op) {
  const QString family = palette::opFamily(op);
  return family.isEmpty() ? QStringLiteral("other ops") : family;
}

// The legend lists what the scene shows: the op families, variable roles and edge kinds present.
std::vector<LegendRow> legendRows(const ViewModel& model, const SceneLayout& layout) {
  using Row = LegendRow;
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
  if (layout.parameters == ParameterMode::Badges)
    for (const PlacedNode& pn : layout.nodes)
      for (int e : model.parameterEdges(pn.node))
        roles.insert(int(model.nodes()[std::size_t(model.edges()[std::size_t(e)].from)].badgeRole));
  for (const PlacedEdge& pe : layout.edges) kinds.insert(int(pe.kind));
  std::vector<Row> rows;
  if (!model.heat().empty())
    rows.push_back({Row::Swatch::Heat, {}, QStringLiteral("time (light to dark)")});
  else
    for (const auto& [name, color] : families) rows.push_back({Row::Swatch::Ellipse, color, name});
  for (int r : roles)
    rows.push_back(
        {Row::Swatch::Box, palette::variableColor(VariableRole(r)), roleText(VariableRole(r))});
  static const char* const kEdgeNames[] = {"value", "view of the input",
                                           "destroys the input (inplace)"};
  for (int k : kinds)
    rows.push_back(
        {Row::Swatch::Line, palette::edgeColor(EdgeKind(k)), QString::fromLatin1(kEdgeNames[k])});
  return rows;
}

ContentEdge makeEdge(const PlacedEdge& pe, const QFontMetricsF& smallMetrics) {
  ContentEdge edge;
  edge.kind = pe.kind;
  edge.path = pe.path;
  edge.label = pe.label;
  const QPointF dir = pe.arrowTip - pe.arrowBase;
  const double len = std::hypot(dir.x(), dir.y());
  if (len > 1e-6) {
    const QPointF perp(-dir.y() / len * kArrowHalfWidth, dir.x() / len * kArrowHalfWidth);
    edge.arrow << pe.arrowTip << pe.arrowBase + perp << pe.arrowBase - perp;
  }
  QPointF last;
  for (int i = 0; i < pe.path.elementCount(); ++i) {
    const QPainterPath::Element e = pe.path.elementAt(i);
    if (e.isCurveTo() && i + 2 < pe.path.elementCount()) {
      const QPointF c1(e), c2(pe.path.elementAt(i + 1)), end(pe.path.elementAt(i + 2));
      edge.lodLine << 0.125 * last + 0.375 * c1 + 0.375 * c2 + 0.125 * end << end;
      last = end;
      i += 2;
    } else {
      last = QPointF(e);
      edge.lodLine << last;
    }
  }
  edge.bounds = pe.path.controlPointRect().united(edge.arrow.boundingRect());
  if (!edge.label.isEmpty()) {
    const QRectF text = smallMetrics.boundingRect(QRectF(), Qt::AlignCenter, edge.label);
    edge.labelRect = QRectF(0, 0, text.width() + 2, text.height());
    edge.labelRect.moveCenter(pe.labelPos);
    edge.bounds = edge.bounds.united(edge.labelRect);
  }
  edge.bounds.adjust(-2, -2, 2, 2);
  return edge;
}

}  // namespace

QFont smallFontOf(const QFont& font) {
  QFont small = font;
  small.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.85));
  return small;
}

int SceneContent::shownShape(int node) const {
  if (!model || node < 0 || std::size_t(node) >= nodeShape.size()) return -1;
  int shape = nodeShape[std::size_t(node)];
  if (shape < 0)
    for (int g = model->nodes()[std::size_t(node)].group; g > 0;
         g = model->groups()[std::size_t(g)].parent)
      if (groupBox[std::size_t(g)] >= 0) shape = groupBox[std::size_t(g)];
  return shape;
}

const SceneContent::OverviewImage* SceneContent::overviewImageFor(double deviceScale) const {
  const OverviewImage* best = nullptr;
  double bestDistance = 0;
  for (const OverviewImage& o : overviewImages) {
    const double ratio = deviceScale / o.scale;
    if (ratio <= 0.5 || ratio >= 2.0) continue;
    const double distance = std::abs(std::log(ratio));
    if (!best || distance < bestDistance) best = &o, bestDistance = distance;
  }
  return best;
}

void SceneContent::drawOverview(QPainter* painter, const QPen (&linePens)[3]) const {
  for (int k = 0; k < 3; ++k) {
    if (overviewLines[k].empty()) continue;
    painter->setPen(linePens[k]);
    painter->drawLines(overviewLines[k].data(), int(overviewLines[k].size()));
  }
  painter->setPen(Qt::NoPen);
  for (const auto& [brush, rects] : overviewRects) {
    painter->setBrush(brush);
    painter->drawRects(rects.data(), int(rects.size()));
  }
}

std::shared_ptr<const SceneContent> SceneContent::build(std::shared_ptr<const ViewModel> model,
                                                        std::shared_ptr<const SceneLayout> layout,
                                                        const QFont& font, double overviewScale,
                                                        double detailScale) {
  auto content = std::make_shared<SceneContent>();
  if (!model || !layout) return content;
  SceneContent& c = *content;
  c.model = std::move(model);
  c.layout = std::move(layout);
  const ViewModel& vm = *c.model;
  const SceneLayout& sl = *c.layout;
  c.bounds = sl.bounds;
  c.nodeShape.assign(vm.nodes().size(), -1);
  c.groupBox.assign(vm.groups().size(), -1);
  c.groupCluster.assign(vm.groups().size(), -1);
  c.shapes.reserve(sl.nodes.size() + sl.groups.size() + sl.ports.size());

  const bool badges = sl.parameters == ParameterMode::Badges;
  const layout::ItemSizes sizes(font);
  std::vector<std::pair<int, int>> badgeHosts;  // (shape, placed node) of Records
  for (const PlacedNode& pn : sl.nodes) {
    const ViewNode& vn = vm.nodes()[std::size_t(pn.node)];
    ContentShape& s = c.shapes.emplace_back();
    s.shape = vn.kind == NodeKind::Apply ? ContentShape::Shape::Ellipse : ContentShape::Shape::Box;
    s.rect = pn.rect;
    s.fill = QBrush(vn.fill);
    s.label = vn.label;
    s.tooltip = vn.tooltip;
    s.node = pn.node;
    s.selectable = true;
    c.nodeShape[std::size_t(pn.node)] = int(c.shapes.size()) - 1;
    if (const auto& rows = vm.parameterEdges(pn.node); badges && !rows.empty()) {
      s.shape = ContentShape::Shape::Record;
      s.labelRect = pn.rect.adjusted(0, 0, 0, -double(rows.size()) * sizes.badgeRowHeight() - 3);
      badgeHosts.emplace_back(int(c.shapes.size()) - 1, pn.node);
    }
  }
  for (const PlacedGroup& pg : sl.groups) {
    const Group& g = vm.groups()[std::size_t(pg.group)];
    const bool ofg = g.kind == GroupKind::OpFromGraph && g.ofgViewNode >= 0;
    if (ofg && c.nodeShape[std::size_t(g.ofgViewNode)] >= 0)
      c.shapes[std::size_t(c.nodeShape[std::size_t(g.ofgViewNode)])].togglePath = g.path;
    if (pg.expanded) {
      ContentCluster& cl = c.clusters.emplace_back();
      cl.rect = pg.rect;
      cl.titleRect = pg.titleRect.isEmpty()
                         ? QRectF(pg.rect.left(), pg.rect.top(), pg.rect.width(), 20)
                         : pg.titleRect;
      cl.depth = pg.depth;
      cl.group = pg.group;
      cl.fill = QBrush(palette::clusterFill(pg.depth));
      cl.title = QStringLiteral("\u2212  ") + g.name;
      cl.path = g.path;
      cl.tooltip =
          g.path +
          QStringLiteral("\n%1 nodes (double-click the title to collapse)").arg(g.totalNodes);
      c.groupCluster[std::size_t(pg.group)] = int(c.clusters.size()) - 1;
      continue;
    }
    ContentShape& box = c.shapes.emplace_back();
    box.shape = ContentShape::Shape::Group;
    box.rect = pg.rect;
    box.fill = QBrush(palette::collapsedGroupFill(g.kind));
    box.group = pg.group;
    box.togglePath = g.path;
    box.label = g.name;
    box.note = QStringLiteral("%1 nodes").arg(g.totalNodes);
    box.tooltip = g.path + QStringLiteral("\n%1 nodes (double-click to expand)").arg(g.totalNodes);
    const int index = int(c.shapes.size()) - 1;
    if (ofg) {
      // A collapsed OpFromGraph is its outer node: selectable in model terms, same tooltip.
      box.node = g.ofgViewNode;
      box.selectable = true;
      if (c.nodeShape[std::size_t(g.ofgViewNode)] < 0)
        c.nodeShape[std::size_t(g.ofgViewNode)] = index;
      box.tooltip = vm.nodes()[std::size_t(g.ofgViewNode)].tooltip +
                    QStringLiteral("\n(double-click to expand)");
    }
    c.groupBox[std::size_t(pg.group)] = index;
  }
  // (group, value's producer, input) -> shape (Note [One port per value] in level_graph.cpp)
  std::map<std::tuple<int, int, bool>, int> portOf;
  auto inside = [&](int group, int node) {
    return vm.isAncestor(group, vm.nodes()[std::size_t(node)].group);
  };
  for (const PlacedPort& pp : sl.ports) {
    ContentShape& port = c.shapes.emplace_back();
    port.shape = ContentShape::Shape::Port;
    port.rect = pp.rect;
    port.fill = QBrush(palette::portColor());
    if (pp.source >= 0 && std::size_t(pp.source) < vm.nodes().size()) {
      if (pp.input) {
        port.tooltip = QStringLiteral("from ") + vm.nodes()[std::size_t(pp.source)].label;
      } else {  // the readers outside the group
        QStringList readers;
        for (int e : vm.outEdges(pp.source)) {
          const int reader = vm.edges()[std::size_t(e)].to;
          const QString& label = vm.nodes()[std::size_t(reader)].label;
          if (!inside(pp.group, reader) && !readers.contains(label)) readers.push_back(label);
        }
        port.tooltip = QStringLiteral("to ") + readers.join(QStringLiteral("\nto "));
      }
    }
    portOf.emplace(std::make_tuple(pp.group, pp.source, pp.input), int(c.shapes.size()) - 1);
  }
  for (const auto& [host, node] : badgeHosts) {
    const std::vector<int>& rows = vm.parameterEdges(node);
    const std::vector<QRectF> rects =
        sizes.badgeRows(c.shapes[std::size_t(host)].rect, int(rows.size()));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const int parameter = vm.edges()[std::size_t(rows[i])].from;
      const ViewNode& pv = vm.nodes()[std::size_t(parameter)];
      ContentShape& row = c.shapes.emplace_back();
      row.shape = ContentShape::Shape::Badge;
      row.rect = rects[i];
      row.fill = QBrush(pv.badgeMark);
      row.label = pv.badge;
      row.tooltip = pv.tooltip;
      row.node = parameter;
      row.selectable = true;
      if (c.nodeShape[std::size_t(parameter)] < 0)
        c.nodeShape[std::size_t(parameter)] = int(c.shapes.size()) - 1;
    }
  }

  // Hover links: an edge lights from the shapes showing its ends and the ports it passes.
  std::vector<int> shown(vm.nodes().size(), -2);  // -2: not looked up yet
  auto shownOf = [&](int node) {
    int& s = shown[std::size_t(node)];
    if (s == -2) s = c.shownShape(node);
    return s;
  };
  const QFontMetricsF smallMetrics(smallFontOf(font));
  c.edges.reserve(sl.edges.size());
  for (const PlacedEdge& pe : sl.edges) {
    ContentEdge& edge = c.edges.emplace_back(makeEdge(pe, smallMetrics));
    const int index = int(c.edges.size()) - 1;
    auto link = [&](int shape) {
      if (shape < 0) return;
      std::vector<int>& edges = c.shapes[std::size_t(shape)].edges;
      if (!edges.empty() && edges.back() == index) return;
      edges.push_back(index);
      edge.shapes.push_back(shape);
    };
    for (int e : pe.edges) {
      const ViewEdge& ve = vm.edges()[std::size_t(e)];
      link(shownOf(ve.from));
      link(shownOf(ve.to));
      // The level's port the edge passes: an in-port when its value comes from outside, an
      // out-port when it goes outside (ports are keyed by the value's producer).
      const bool fromOutside = !inside(pe.level, ve.from);
      if (fromOutside || !inside(pe.level, ve.to)) {
        auto port = portOf.find({pe.level, ve.from, fromOutside});
        if (port != portOf.end()) link(port->second);
      }
    }
  }

  std::map<QRgb, std::size_t> slot;
  for (const ContentShape& s : c.shapes) {
    auto [it, added] = slot.emplace(s.fill.color().rgba(), c.overviewRects.size());
    if (added) c.overviewRects.emplace_back(s.fill, std::vector<QRectF>{});
    c.overviewRects[it->second].second.push_back(s.rect);
  }
  for (const ContentEdge& e : c.edges)
    for (qsizetype i = 1; i < e.lodLine.size(); ++i)
      c.overviewLines[int(e.kind)].emplace_back(e.lodLine[i - 1], e.lodLine[i]);
  c.legend = legendRows(vm, sl);
  // Each image's longer side is capped (3072 px: about 30 MB); a bigger request gets the cap's
  // scale, and the view draws vectors where no image is close enough to its zoom.
  constexpr double kMaxImageSide = 3072;
  const double longest = std::max(c.bounds.width(), c.bounds.height());
  QPen pens[3];
  for (EdgeKind kind : {EdgeKind::Plain, EdgeKind::View, EdgeKind::Destroy})
    pens[int(kind)] = QPen(palette::edgeColor(kind), 0);
  for (double scale : {overviewScale, detailScale}) {
    if (scale <= 0 || longest <= 0) continue;
    scale = std::min(scale, kMaxImageSide / longest);
    if (longest * scale < 1) continue;
    if (!c.overviewImages.empty() && scale < 1.5 * c.overviewImages.back().scale) continue;
    QImage image(int(std::ceil(c.bounds.width() * scale)),
                 int(std::ceil(c.bounds.height() * scale)), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter painter(&image);
    painter.scale(scale, scale);
    painter.translate(-c.bounds.topLeft());
    c.drawOverview(&painter, pens);
    painter.end();
    c.overviewImages.push_back({scale, std::move(image)});
  }
  return content;
}

}  // namespace tscope::vis

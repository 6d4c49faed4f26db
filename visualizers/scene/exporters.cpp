#include "visualizers/scene/exporters.h"

#include "engine/graph/op.h"
#include "visualizers/model/palette.h"
#include "visualizers/scene/graph_scene.h"

#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tscope::vis {

namespace {

constexpr int kMaxSide = 16384;
// A cap on area as well as sides: 120 MiB of ARGB32, under the 128 MiB that Qt's image readers
// accept by default (so tensorscope and Qt-based viewers can open what it writes).
constexpr double kMaxPixels = 30.0 * 1024 * 1024;

QString quoted(const QString& text) {
  QString out = text;
  out.replace(QLatin1Char('\\'), QLatin1String("\\\\"))
      .replace(QLatin1Char('"'), QLatin1String("\\\""));
  out.replace(QLatin1Char('\n'), QLatin1String("\\n"));
  return QLatin1Char('"') + out + QLatin1Char('"');
}

// Text for an HTML-like dot label: markup characters escaped, line breaks as <BR/>.
QString htmlText(const QString& text) {
  QString out = text.toHtmlEscaped();
  out.replace(QLatin1Char('\n'), QLatin1String("<BR/>"));
  return out;
}

// A node with parameter badges (Note [Parameters] in view_model.h) as dot draws it: a table, the
// node's label on top, then one row per badge (its colour mark, its text).
QString badgedLabel(const ViewModel& model, const ViewNode& node, const std::vector<int>& rows) {
  QString label = QStringLiteral(
                      "<<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"1\" "
                      "CELLPADDING=\"1\"><TR><TD COLSPAN=\"2\">%1</TD></TR>")
                      .arg(htmlText(node.label));
  for (int e : rows) {
    const ViewNode& parameter = model.nodes()[std::size_t(model.edges()[std::size_t(e)].from)];
    label += QStringLiteral(
                 "<TR><TD BGCOLOR=\"%1\" WIDTH=\"8\" HEIGHT=\"8\"></TD>"
                 "<TD ALIGN=\"LEFT\" BGCOLOR=\"white\"><FONT POINT-SIZE=\"8\">%2</FONT></TD></TR>")
                 .arg(parameter.badgeMark.name(), htmlText(parameter.badge));
  }
  return label + QStringLiteral("</TABLE>>");
}

QString num(double v) {
  return QString::number(v, 'f', 2);
}
QString inches(double points) {
  return QString::number(points / 72.0, 'f', 4);
}

// Graphviz coordinates: points, origin at the bottom-left of the bounding box, y up.
struct DotFrame {
  QRectF bounds;
  QString point(QPointF p) const {
    return num(p.x() - bounds.left()) + QLatin1Char(',') + num(bounds.bottom() - p.y());
  }
  QString box(const QRectF& r) const {
    return num(r.left() - bounds.left()) + QLatin1Char(',') + num(bounds.bottom() - r.bottom()) +
           QLatin1Char(',') + num(r.right() - bounds.left()) + QLatin1Char(',') +
           num(bounds.bottom() - r.top());
  }
  QString nodeGeometry(const QRectF& r) const {
    return QStringLiteral("pos=\"%1\", width=%2, height=%3")
        .arg(point(r.center()), inches(r.width()), inches(r.height()));
  }
};

// A spline as Graphviz writes it: "e,TIP P0 P1 P2 P3 ..." (1 + 3n points); lines become cubics.
QString splinePos(const DotFrame& frame, const PlacedEdge& edge) {
  QStringList points;
  QPointF last;
  const QPainterPath& path = edge.path;
  for (int i = 0; i < path.elementCount(); ++i) {
    const QPainterPath::Element e = path.elementAt(i);
    const QPointF p(e.x, e.y);
    if (e.isMoveTo()) {
      if (points.isEmpty()) points << frame.point(p);
    } else if (e.isLineTo()) {
      points << frame.point(last) << frame.point(p) << frame.point(p);
    } else {
      points << frame.point(p);
    }
    last = p;
  }
  if (points.isEmpty()) return {};
  if (edge.arrowTip != edge.arrowBase)
    points.prepend(QStringLiteral("e,") + frame.point(edge.arrowTip));
  return points.join(QLatin1Char(' '));
}

class DotWriter {
 public:
  DotWriter(const ViewModel& model, const SceneLayout& layout) : m_model(model), m_layout(layout) {
    m_frame.bounds = layout.bounds;
    const std::size_t groups = model.groups().size();
    m_expanded.assign(groups, false);
    m_collapsed.assign(groups, false);
    m_childClusters.assign(groups, {});
    m_members.assign(groups, {});
    for (const PlacedGroup& pg : layout.groups)
      (pg.expanded ? m_expanded : m_collapsed)[std::size_t(pg.group)] = true;
    for (std::size_t i = 0; i < layout.groups.size(); ++i) {
      const PlacedGroup& pg = layout.groups[i];
      const int home = shownAncestor(model.groups()[std::size_t(pg.group)].parent);
      if (pg.expanded)
        m_childClusters[std::size_t(home)].push_back(int(i));
      else
        m_members[std::size_t(home)].push_back(QStringLiteral("g%1").arg(pg.group));
    }
    for (const PlacedNode& pn : layout.nodes)
      m_members[std::size_t(shownAncestor(model.nodes()[std::size_t(pn.node)].group))].push_back(
          QStringLiteral("n%1").arg(pn.node));
    for (std::size_t i = 0; i < layout.ports.size(); ++i) {
      const PlacedPort& pp = layout.ports[i];
      m_members[std::size_t(shownAncestor(pp.group))].push_back(QStringLiteral("p%1").arg(i));
      m_portIndex.emplace(std::make_tuple(pp.group, pp.source, pp.input), int(i));
    }
  }

  QString write() {
    m_out += QStringLiteral("digraph tensorscope {\n");
    m_out += QStringLiteral("  graph [bb=\"%1\", splines=true, outputorder=edgesfirst];\n")
                 .arg(m_frame.box(m_layout.bounds));
    m_out += QStringLiteral("  node [fixedsize=true, style=filled, fontsize=10];\n");
    writeGroup(0, QStringLiteral("  "));
    for (const PlacedEdge& pe : m_layout.edges) writeEdge(pe);
    m_out += QStringLiteral("}\n");
    return m_out;
  }

 private:
  int shownAncestor(int group) const {
    while (group > 0 && !m_expanded[std::size_t(group)])
      group = m_model.groups()[std::size_t(group)].parent;
    return std::max(group, 0);
  }

  void writeGroup(int group, const QString& indent) {
    for (int i : m_childClusters[std::size_t(group)]) {
      const PlacedGroup& pg = m_layout.groups[std::size_t(i)];
      const Group& g = m_model.groups()[std::size_t(pg.group)];
      m_out += indent + QStringLiteral("subgraph cluster_%1 {\n").arg(pg.group);
      m_out += indent +
               QStringLiteral(
                   "  graph [label=%1, bb=\"%2\", lp=\"%3\", style=\"filled,rounded\", "
                   "fillcolor=\"%4\", color=\"%5\"];\n")
                   .arg(quoted(g.name), m_frame.box(pg.rect), m_frame.point(pg.titleRect.center()),
                        palette::clusterFill(pg.depth).name(), palette::clusterBorder().name());
      writeGroup(pg.group, indent + QStringLiteral("  "));
      m_out += indent + QStringLiteral("}\n");
    }
    for (const QString& id : m_members[std::size_t(group)]) writeNode(id, indent);
  }

  void writeNode(const QString& id, const QString& indent) {
    const int index = id.mid(1).toInt();
    QString attrs;
    if (id.startsWith(QLatin1Char('n'))) {
      const ViewNode& vn = m_model.nodes()[std::size_t(index)];
      const QRectF& rect = m_layout.nodes[std::size_t(m_layout.placedNode(index))].rect;
      const std::vector<int>& badges = m_model.parameterEdges(index);
      if (m_layout.parameters == ParameterMode::Badges && !badges.empty()) {
        attrs =
            QStringLiteral("label=%1, shape=box, style=\"filled,rounded\", fillcolor=\"%2\", %3")
                .arg(badgedLabel(m_model, vn, badges), vn.fill.name(), m_frame.nodeGeometry(rect));
        m_out += indent + id + QStringLiteral(" [") + attrs + QStringLiteral("];\n");
        return;
      }
      attrs =
          QStringLiteral("label=%1, shape=%2, fillcolor=\"%3\", %4")
              .arg(quoted(vn.label),
                   vn.kind == NodeKind::Apply ? QStringLiteral("ellipse") : QStringLiteral("box"),
                   vn.fill.name(), m_frame.nodeGeometry(rect));
    } else if (id.startsWith(QLatin1Char('g'))) {
      const Group& g = m_model.groups()[std::size_t(index)];
      const QRectF& rect = m_layout.groups[std::size_t(m_layout.placedGroup(index))].rect;
      attrs = QStringLiteral("label=%1, shape=box, style=\"filled,rounded\", fillcolor=\"%2\", %3")
                  .arg(quoted(QStringLiteral("+ %1\n%2 nodes").arg(g.name).arg(g.totalNodes)),
                       palette::collapsedGroupFill(g.kind).name(), m_frame.nodeGeometry(rect));
    } else {
      const PlacedPort& pp = m_layout.ports[std::size_t(index)];
      attrs = QStringLiteral("label=\"\", shape=circle, fillcolor=\"%1\", %2")
                  .arg(palette::portColor().name(), m_frame.nodeGeometry(pp.rect));
    }
    m_out += indent + id + QStringLiteral(" [") + attrs + QStringLiteral("];\n");
  }

  // The dot node at one end of an edge drawn in `level`: the node itself, the collapsed or expanded
  // child group holding it (an expanded one through its port for the value), or, for a node outside
  // the level, the level's own port.
  QString endpoint(int level, int node, int other, bool isFrom) const {
    int child = -1, g = m_model.nodes()[std::size_t(node)].group;
    for (; g != level && g > 0; g = m_model.groups()[std::size_t(g)].parent) child = g;
    // Ports are keyed by the value's producer, the edge's from end (Note [One port per value]).
    const int producer = isFrom ? node : other;
    if (g != level) return port(level, producer, isFrom);
    if (child < 0)
      return m_layout.placedNode(node) >= 0 ? QStringLiteral("n%1").arg(node) : QString();
    if (m_collapsed[std::size_t(child)]) return QStringLiteral("g%1").arg(child);
    return port(child, producer, !isFrom);
  }
  QString port(int group, int producer, bool input) const {
    auto it = m_portIndex.find(std::make_tuple(group, producer, input));
    return it == m_portIndex.end() ? QString() : QStringLiteral("p%1").arg(it->second);
  }

  void writeEdge(const PlacedEdge& pe) {
    QString from, to;
    for (int e : pe.edges) {
      const ViewEdge& ve = m_model.edges()[std::size_t(e)];
      if (from.isEmpty()) from = endpoint(pe.level, ve.from, ve.to, true);
      if (to.isEmpty()) to = endpoint(pe.level, ve.to, ve.from, false);
    }
    if (from.isEmpty() || to.isEmpty())
      throw std::runtime_error(
          "DOT export: an edge of group " + std::to_string(pe.level) +
          " has an end that the layout does not place (the layout and the model disagree)");
    QString attrs = QStringLiteral("color=\"%1\"").arg(palette::edgeColor(pe.kind).name());
    if (pe.kind != EdgeKind::Plain) attrs += QStringLiteral(", penwidth=1.6");
    if (!pe.label.isEmpty())
      attrs +=
          QStringLiteral(", label=%1, lp=\"%2\"").arg(quoted(pe.label), m_frame.point(pe.labelPos));
    const QString pos = splinePos(m_frame, pe);
    if (!pos.isEmpty()) attrs += QStringLiteral(", pos=\"%1\"").arg(pos);
    m_out += QStringLiteral("  %1 -> %2 [%3];\n").arg(from, to, attrs);
  }

  const ViewModel& m_model;
  const SceneLayout& m_layout;
  DotFrame m_frame;
  std::vector<bool> m_expanded, m_collapsed;
  std::vector<std::vector<int>> m_childClusters;  // by group: indices into layout.groups
  std::vector<QStringList> m_members;             // by group: dot ids of its direct members
  std::map<std::tuple<int, int, bool>, int> m_portIndex;
  QString m_out;
};

void commit(QSaveFile& file, const QString& path) {
  if (!file.commit())
    throw std::runtime_error("cannot write " + path.toStdString() + ": " +
                             file.errorString().toStdString());
}

void openForWriting(QSaveFile& file, const QString& path) {
  if (!file.open(QIODevice::WriteOnly))
    throw std::runtime_error("cannot write " + path.toStdString() + ": " +
                             file.errorString().toStdString());
}

// Exports draw every item at the export's scale, never the zoomed-out overview of a view.
class FullDetail {
 public:
  explicit FullDetail(GraphScene& scene) : m_scene(scene), m_was(scene.overview()) {
    scene.setOverview(false);
  }
  ~FullDetail() { m_scene.setOverview(m_was); }
  FullDetail(const FullDetail&) = delete;
  FullDetail& operator=(const FullDetail&) = delete;

 private:
  GraphScene& m_scene;
  bool m_was;
};

QRectF exportRect(GraphScene& scene, const char* format) {
  const QRectF rect = scene.sceneRect();
  if (!scene.sceneLayout() || !rect.isValid())
    throw std::runtime_error(std::string(format) +
                             " export: the scene is empty (no layout was shown)");
  return rect;
}

}  // namespace

QString sceneToDot(const ViewModel& model, const SceneLayout& layout) {
  return DotWriter(model, layout).write();
}

void exportDot(const ViewModel& model, const SceneLayout& layout, const QString& path) {
  const QByteArray text = sceneToDot(model, layout).toUtf8();
  QSaveFile file(path);
  openForWriting(file, path);
  if (file.write(text) != text.size())
    throw std::runtime_error("cannot write " + path.toStdString() + ": " +
                             file.errorString().toStdString());
  commit(file, path);
}

void exportSvg(GraphScene& scene, const QString& path) {
  const QRectF source = exportRect(scene, "SVG");
  QSaveFile file(path);
  openForWriting(file, path);
  {
    QSvgGenerator svg;
    svg.setOutputDevice(&file);
    svg.setSize(source.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
    svg.setTitle(QStringLiteral("Tensorscope graph"));
    svg.setDescription(QStringLiteral("Drawn by tensorscope in d3viz's conventions"));
    QPainter painter;
    if (!painter.begin(&svg))
      throw std::runtime_error("cannot write " + path.toStdString() +
                               ": SVG painter failed to start");
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    const FullDetail detail(scene);
    scene.render(&painter, QRectF(QPointF(0, 0), source.size()), source);
    painter.end();
  }
  commit(file, path);
}

void exportPng(GraphScene& scene, const QString& path, double scale) {
  const QRectF source = exportRect(scene, "PNG");
  if (!(scale > 0) || !std::isfinite(scale))
    throw std::invalid_argument("PNG export: the scale must be a positive number, found " +
                                std::to_string(scale));
  scale = std::min({scale, kMaxSide / source.width(), kMaxSide / source.height(),
                    std::sqrt(kMaxPixels / (source.width() * source.height()))});
  const QSize size(std::max(1, int(std::ceil(source.width() * scale))),
                   std::max(1, int(std::ceil(source.height() * scale))));
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  if (image.isNull())
    throw std::runtime_error("cannot write " + path.toStdString() + ": no memory for a " +
                             std::to_string(size.width()) + "x" + std::to_string(size.height()) +
                             " image");
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing |
                           QPainter::SmoothPixmapTransform);
    const FullDetail detail(scene);
    scene.render(&painter, QRectF(QPointF(0, 0), QSizeF(size)), source);
  }
  QSaveFile file(path);
  openForWriting(file, path);
  if (!image.save(&file, "PNG"))
    throw std::runtime_error("cannot write " + path.toStdString() + ": PNG encoding failed");
  commit(file, path);
}

}  // namespace tscope::vis

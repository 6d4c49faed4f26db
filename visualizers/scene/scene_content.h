#pragma once
// SceneContent: everything the items of a GraphScene draw, computed from a ViewModel and a
// SceneLayout without a QGraphicsScene (private to visualizers/scene).
//
// Note [Incremental scene content]: a scene of 5,000 nodes has ~12,500 items; building them with
// their arrow heads, label metrics, level-of-detail polylines, overview batches and hover links
// took 50-90 ms, and removing the old ones another 10-20 ms, all in one GUI-thread turn. So the
// work is split: SceneContent::build() is plain data and runs on a worker; the GUI thread then
// only creates items that point into it (a few hundred ns each), in time-budgeted slices across
// event-loop turns, the viewport's region first (GraphScene::setContentAsync). Items keep a
// pointer into the content, which the scene keeps alive as long as any of its items exists.

#include "visualizers/layout/scene_layout.h"

#include <QBrush>
#include <QFont>
#include <QImage>
#include <QLineF>
#include <QPolygonF>

#include <cstdint>
#include <memory>
#include <vector>

namespace tscope::vis {

// A node, collapsed group box, port or parameter badge row.
// Under ParameterMode::Badges an Apply with parameters is a Record (a box, its label in
// labelRect) and each of its parameter inputs a Badge: a row inside it, its own shape (hover shows
// the value's statistics, a click selects the parameter), drawn with the parameter's colour as
// its mark (Note [Parameters] in view_model.h).
struct ContentShape {
  enum class Shape : std::uint8_t { Ellipse, Box, Group, Port, Record, Badge };
  Shape shape = Shape::Box;
  QRectF rect;
  QBrush fill;
  QString label, note, tooltip;
  int node = -1;       // the model node it draws (a collapsed OpFromGraph box: its outer node)
  int group = -1;      // the group a collapsed box draws
  QString togglePath;  // the group a double-click toggles (collapsed groups, OpFromGraph nodes)
  bool selectable = false;
  std::vector<int> edges;  // ContentEdge indices it lights when hovered
  QRectF labelRect;        // where the label goes; empty: the whole rect
};

// An expanded group: its cluster.
struct ContentCluster {
  QRectF rect, titleRect;
  int depth = 0;
  int group = -1;
  QBrush fill;
  QString title, path, tooltip;
};

struct ContentEdge {
  EdgeKind kind = EdgeKind::Plain;
  QPainterPath path;
  QPolygonF arrow;    // the arrow head (empty when the layout gave no direction)
  QPolygonF lodLine;  // the polyline drawn zoomed out: each cubic's ends and midpoint
  QString label;
  QRectF labelRect, bounds;
  std::vector<int> shapes;  // ContentShape indices whose hover lights it
};

struct LegendRow {
  enum class Swatch : std::uint8_t { Ellipse, Box, Line, Heat, Scale, Dot } swatch;
  QColor color;
  QString text;
  std::vector<QColor> steps =
      {};  // Swatch::Scale: the scale's colours, low to high, drawn as blocks
};

// The small font of edge labels, "N nodes" notes and the legend, derived from the scene's font.
QFont smallFontOf(const QFont& font);

struct SceneContent {
  std::shared_ptr<const ViewModel> model;
  std::shared_ptr<const SceneLayout> layout;
  std::vector<ContentShape> shapes;  // nodes, then collapsed group boxes, ports, badge rows
  std::vector<ContentCluster> clusters;
  std::vector<ContentEdge> edges;
  // By model node: the shape drawing exactly it (-1: none shown); a parameter under Badges: its
  // first badge row.
  std::vector<int> nodeShape;
  std::vector<int> groupBox;      // by group: its collapsed box (-1: none)
  std::vector<int> groupCluster;  // by group: its cluster (-1: none)
  std::vector<LegendRow> legend;
  // The overview (zoomed out): node and box rectangles batched per fill, edges per kind.
  std::vector<std::pair<QBrush, std::vector<QRectF>>> overviewRects;
  std::vector<QLineF> overviewLines[3];
  // The same rendered by the worker when asked for, each image at its scale (device pixels per
  // scene unit), finest last: drawing ~15,000 short lines costs the GUI thread 20-40 ms, blitting
  // an image a few. One at the fitted zoom, one finer for zooming in while still zoomed out.
  struct OverviewImage {
    double scale = 0;
    QImage image;
  };
  std::vector<OverviewImage> overviewImages;
  // The image to draw at `deviceScale`: at most twice too fine or too coarse; null if none.
  const OverviewImage* overviewImageFor(double deviceScale) const;
  QRectF bounds;  // the layout's bounds

  std::size_t itemCount() const { return shapes.size() + clusters.size() + edges.size(); }
  // The shape a node is drawn by: its own, else the box of its outermost collapsed group
  // (-1 when neither is shown).
  int shownShape(int node) const;

  // Pure data: callable on any thread. Null model or layout gives an empty content.
  // `overviewScale` > 0 also renders an overview image at that scale, and `detailScale` one more
  // at that finer scale (both capped in size).
  static std::shared_ptr<const SceneContent> build(std::shared_ptr<const ViewModel> model,
                                                   std::shared_ptr<const SceneLayout> layout,
                                                   const QFont& font, double overviewScale = 0,
                                                   double detailScale = 0);
  // Draws the overview (lines per edge kind, rectangles per fill) with `painter`'s transform.
  void drawOverview(QPainter* painter, const QPen (&linePens)[3]) const;
};

}  // namespace tscope::vis

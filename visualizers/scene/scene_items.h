#pragma once
// The QGraphicsItems of a GraphScene (private to visualizers/scene). Items keep what they draw
// precomputed (rects, polygons, label text) and share their pens, brushes and fonts through one
// SceneStyle owned by the scene, so paint() allocates nothing but what QPainter itself does.

#include "visualizers/model/view_model.h"

#include <QBrush>
#include <QFont>
#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QPainterPath>
#include <QPen>
#include <QPolygonF>

#include <optional>
#include <vector>

namespace tscope::vis {

class EdgeItem;

// Pens, brushes and fonts shared by every item of one scene.
struct SceneStyle {
  QFont font;
  QFont smallFont;                            // edge labels, "N nodes", the legend's notes
  std::optional<QFontMetricsF> smallMetrics;  // measured once: items are built by the thousand
  double smallHeight = 0;
  QPen nodePen, portPen, clusterPen;
  QPen hoverPen, selectionPen, highlightPen;
  QPen edgePens[3], edgeHoverPens[3];  // by EdgeKind
  // Zoomed out (no text): one-pixel cosmetic pens, far cheaper to rasterize than scaled strokes.
  QPen lodEdgePens[3];
  QBrush edgeBrushes[3], edgeHoverBrushes[3];
  QPen textPen;
  QBrush titleBrush;
  bool highlightOn = false;
  // Overview mode (zoomed out): one OverviewItem draws every node and edge in a few batched calls;
  // the items themselves paint nothing unless they are hovered, selected or highlighted.
  bool overview = false;
  SceneStyle();
  void setFont(const QFont& font);
};

// True when `painter` draws at a scale where text is legible (GraphView::kTextScale).
bool drawsText(const QPainter* painter, const QStyleOptionGraphicsItem* option);

// Nodes, collapsed groups and ports: a shape with a label, a hover state that lights its edges, and
// an optional highlight outline.
class ShapeItem : public QGraphicsItem {
 public:
  enum class Shape : std::uint8_t { Ellipse, Box, Group, Port };
  enum { Type = UserType + 1 };

  ShapeItem(const SceneStyle* style, Shape shape, const QRectF& rect, const QColor& fill);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  Shape shapeKind() const { return m_shape; }
  const QRectF& rect() const { return m_rect; }
  QColor fill() const { return m_fill.color(); }
  void setLabel(const QString& label, const QString& note = {});
  const QString& label() const { return m_label; }

  // The model node it draws (-1 for groups and ports), the group it draws (collapsed groups), and
  // the group a double-click toggles (collapsed groups, OpFromGraph nodes; empty otherwise).
  int node = -1;
  int group = -1;
  QString togglePath;
  std::vector<EdgeItem*> edges;  // edges ending or starting here

  void setHighlighted(bool on);
  bool isHighlighted() const { return m_highlighted; }
  bool isHovered() const { return m_hovered; }
  // Paints itself, or leaves it to the overview (SceneStyle::overview).
  void refreshContentFlag();

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
  void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  void setHovered(bool on);
  const SceneStyle* m_style;
  Shape m_shape;
  QRectF m_rect;
  QBrush m_fill;
  QString m_label, m_note;
  bool m_hovered = false, m_highlighted = false;
};

// An expanded group: a shaded rounded rectangle with a title bar ("−" and the name). Only the title
// bar takes the mouse, so dragging the cluster's background pans the view.
class ClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  ClusterItem(const SceneStyle* style, const QRectF& rect, const QRectF& titleRect, int depth,
              const QString& title, const QString& path);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_rect; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  const QString& path() const { return m_path; }
  const QRectF& titleRect() const { return m_titleRect; }
  QColor fill() const { return m_fill.color(); }
  int group = -1;

 protected:
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  const SceneStyle* m_style;
  QRectF m_rect, m_titleRect;
  QBrush m_fill;
  QString m_title, m_path;
};

// One drawn edge: the layout's spline, an arrow head and a label, coloured by kind.
class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  EdgeItem(const SceneStyle* style, EdgeKind kind, const QPainterPath& path, QPointF arrowBase,
           QPointF arrowTip, const QString& label, QPointF labelPos);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_bounds; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  EdgeKind kind() const { return m_kind; }
  const QPainterPath& path() const { return m_path; }
  void setHovered(bool on);
  bool isHovered() const { return m_hovered; }
  const QPolygonF& lodLine() const { return m_lodLine; }
  void refreshContentFlag();

 private:
  const SceneStyle* m_style;
  EdgeKind m_kind;
  QPainterPath m_path;
  QPolygonF m_arrow;
  QPolygonF m_lodLine;
  QString m_label;
  QRectF m_labelRect, m_bounds;
  bool m_hovered = false;
};

// Zoomed out, the whole graph in one item: node rectangles batched per colour, edges as polylines
// batched per kind. Paints only below GraphView::kTextScale.
class OverviewItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 5 };
  OverviewItem(const SceneStyle* style, const std::vector<ShapeItem*>& shapes,
               const std::vector<EdgeItem*>& edges, const QRectF& bounds);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_bounds; }
  QPainterPath shape() const override { return {}; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  const SceneStyle* m_style;
  std::vector<std::pair<QBrush, std::vector<QRectF>>> m_rects;  // per fill colour
  std::vector<QLineF> m_lines[3];                               // per EdgeKind
  QRectF m_bounds;
};

// The key to the colours: op families, variable roles and edge kinds present in the scene (and the
// heat scale when the model has times).
class LegendItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 4 };
  struct Row {
    enum class Swatch : std::uint8_t { Ellipse, Box, Line, Heat } swatch;
    QColor color;
    QString text;
  };
  LegendItem(const SceneStyle* style, std::vector<Row> rows);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_rect; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  const std::vector<Row>& rows() const { return m_rows; }

 private:
  const SceneStyle* m_style;
  std::vector<Row> m_rows;
  QRectF m_rect;
  double m_rowHeight = 16;
};

}  // namespace tscope::vis

#pragma once
// The QGraphicsItems of a GraphScene (private to visualizers/scene). Items point into the
// SceneContent a worker prepared (rects, polygons, label text: Note [Incremental scene content]),
// cache their label layout (QStaticText) at the first paint, and share their pens, brushes and
// fonts through one SceneStyle owned by the scene, so a repaint allocates nothing.

#include "visualizers/scene/decorations.h"
#include "visualizers/scene/scene_content.h"

#include <QBrush>
#include <QFont>
#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QPainterPath>
#include <QPen>
#include <QPolygonF>
#include <QStaticText>

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
  QBrush hoverBrush;
  QPen textPen;
  QBrush titleBrush;
  bool highlightOn = false;
  // Overview mode (zoomed out): one OverviewItem draws every node and edge in a few batched calls;
  // the items themselves paint nothing unless they are hovered, selected or highlighted.
  bool overview = false;
  // The items of replaced content, deleted over the next event-loop turns, paint nothing and
  // ignore the mouse from the moment they are replaced.
  bool retired = false;
  // The merged decoration layers of the scene's content (Note [Decoration layers]); null: none.
  const MergedDecorations* decorations = nullptr;
  const ViewModel* model = nullptr;  // the content's model (badge rows read their values)
  SceneStyle();
  void setFont(const QFont& font);
};

// `t` without its translation: what QStaticText compares to decide whether to lay out again.
QTransform linearPart(const QTransform& t);
// True when `painter` draws at a scale where text is legible (GraphView::kTextScale).
bool drawsText(const QPainter* painter, const QStyleOptionGraphicsItem* option);

// Nodes, collapsed groups and ports: a shape with a label, a hover state that lights its edges, and
// an optional highlight outline.
class ShapeItem : public QGraphicsItem {
 public:
  using Shape = ContentShape::Shape;
  enum { Type = UserType + 1 };

  // `data` outlives the item (the scene keeps its content alive); `index`: its content shape.
  ShapeItem(const SceneStyle* style, const ContentShape* data, int index);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  Shape shapeKind() const { return m_data->shape; }
  const QRectF& rect() const { return m_data->rect; }
  QColor fill() const { return m_data->fill.color(); }
  const QString& label() const { return m_data->label; }

  // The model node it draws (-1 for groups and ports), the group it draws (collapsed groups), and
  // the group a double-click toggles (collapsed groups, OpFromGraph nodes; empty otherwise).
  const int node;
  const int group;
  const QString togglePath;
  std::vector<EdgeItem*> edges;  // edges ending or starting here

  void setHighlighted(bool on);
  bool isHighlighted() const { return m_highlighted; }
  bool isHovered() const { return m_hovered; }
  bool isRetired() const { return m_style->retired; }
  // Paints itself, or leaves it to the overview (SceneStyle::overview).
  void refreshContentFlag();
  // The merged decoration drawn on it (null when none); refreshDecoration after a change.
  const NodeDecoration* decoration() const;
  void refreshDecoration();
  // A badge row: adds the parameter's value statistics to its tooltip (done at the first hover,
  // so no value is read before someone asks).
  void ensureStatistics();
  // Lays out its text now, for painting with `transform` (the view's, without translation),
  // rather than at its first paint with text (Note [Text before the first paint] in
  // graph_scene.cpp).
  void prepareText(const QTransform& transform);

 protected:
  void contextMenuEvent(QGraphicsSceneContextMenuEvent* event) override;
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
  void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  void setHovered(bool on);
  void paintDecoration(QPainter* painter, const NodeDecoration& d, bool text) const;
  const SceneStyle* m_style;
  const ContentShape* m_data;
  const int m_index;
  // Laid out once, at the first paint with text (QStaticText keeps the glyph positions).
  QStaticText m_labelText, m_noteText;
  QPointF m_labelPos, m_notePos;
  bool m_textReady = false;
  bool m_hovered = false, m_highlighted = false;
  bool m_statsReady = false;
};

// An expanded group: a shaded rounded rectangle with a title bar ("−" and the name). Only the title
// bar takes the mouse, so dragging the cluster's background pans the view.
class ClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  ClusterItem(const SceneStyle* style, const ContentCluster* data);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_data->rect; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  const QString& path() const { return m_data->path; }
  const QRectF& titleRect() const { return m_data->titleRect; }
  QColor fill() const { return m_data->fill.color(); }
  const int group;

 protected:
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  const SceneStyle* m_style;
  const ContentCluster* m_data;
  QStaticText m_titleText;  // laid out at the first paint with text
  bool m_textReady = false;
};

// One drawn edge: the layout's spline, an arrow head and a label, coloured by kind.
class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  EdgeItem(const SceneStyle* style, const ContentEdge* data, int index);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_bounds; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  EdgeKind kind() const { return m_data->kind; }
  const QPainterPath& path() const { return m_data->path; }
  void setHovered(bool on);
  bool isHovered() const { return m_hovered; }
  const QPolygonF& lodLine() const { return m_data->lodLine; }
  void refreshContentFlag();
  const EdgeDecoration* decoration() const;
  void refreshDecoration();
  void prepareText(const QTransform& transform);  // as ShapeItem::prepareText
  // Where its health pill is drawn (empty when it has none).
  QRectF pillRect() const;

 private:
  const SceneStyle* m_style;
  const ContentEdge* m_data;
  const int m_index;
  QRectF m_bounds;
  QStaticText m_labelText;  // laid out at the first paint with text
  QPointF m_labelPos;
  bool m_textReady = false;
  bool m_hovered = false;
};

// Zoomed out, the whole graph in one item: node rectangles batched per colour, edges as polylines
// batched per kind. Paints only below GraphView::kTextScale.
class OverviewItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 5 };
  OverviewItem(const SceneStyle* style, const SceneContent* content);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_content->bounds; }
  QPainterPath shape() const override { return {}; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  // The decorations' fills over the overview (SceneStyle::decorations).
  void paintFills(QPainter* painter) const;
  const SceneStyle* m_style;
  const SceneContent* m_content;  // its overviewRects and overviewLines
};

// The key to the colours: op families, variable roles and edge kinds present in the scene (and the
// heat scale when the model has times).
class LegendItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 4 };
  using Row = LegendRow;
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

#include "visualizers/scene/scene_items.h"

#include "visualizers/model/palette.h"
#include "visualizers/scene/graph_view.h"

#include <QFontMetricsF>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include <cmath>

namespace tscope::vis {

namespace {

constexpr double kOutline = 5;      // room around a shape for the selection / highlight outlines
constexpr double kMarkerSize = 10;  // the "+" of a collapsed group
constexpr double kRadius = 6;       // rounded corners of groups and clusters

QPen makePen(const QColor& color, double width) {
  QPen pen(color, width);
  pen.setJoinStyle(Qt::RoundJoin);
  pen.setCapStyle(Qt::RoundCap);
  return pen;
}

}  // namespace

SceneStyle::SceneStyle() {
  setFont(font);
  nodePen = makePen(QColor(40, 40, 40), 1.0);
  portPen = makePen(QColor(90, 90, 90), 0.8);
  clusterPen = makePen(palette::clusterBorder(), 1.0);
  hoverPen = makePen(palette::hoverColor(), 2.5);
  selectionPen = makePen(palette::selectionColor(), 2.5);
  highlightPen = makePen(palette::searchHitColor(), 3.0);
  for (EdgeKind kind : {EdgeKind::Plain, EdgeKind::View, EdgeKind::Destroy}) {
    const int k = int(kind);
    edgePens[k] = makePen(palette::edgeColor(kind), kind == EdgeKind::Plain ? 1.0 : 1.6);
    edgeBrushes[k] = QBrush(palette::edgeColor(kind));
    // A hovered edge keeps its kind's colour (blue/red carry meaning) unless it is plain.
    const QColor hover = kind == EdgeKind::Plain ? palette::hoverColor() : palette::edgeColor(kind);
    edgeHoverPens[k] = makePen(hover, 3.0);
    edgeHoverBrushes[k] = QBrush(hover);
    lodEdgePens[k] = QPen(palette::edgeColor(kind), 0);
  }
  textPen = QPen(Qt::black);
  titleBrush = QBrush(QColor(0, 0, 0, 28));
}

void SceneStyle::setFont(const QFont& base) {
  font = base;
  smallFont = base;
  smallFont.setPointSizeF(std::max(6.0, base.pointSizeF() * 0.85));
  smallMetrics.emplace(smallFont);
  smallHeight = smallMetrics->height();
}

bool drawsText(const QPainter* painter, const QStyleOptionGraphicsItem* option) {
  return option->levelOfDetailFromTransform(painter->worldTransform()) >= GraphView::kTextScale;
}

// --- ShapeItem ----------------------------------------------------------------------------------

ShapeItem::ShapeItem(const SceneStyle* style, Shape shape, const QRectF& rect, const QColor& fill)
    : m_style(style), m_shape(shape), m_rect(rect), m_fill(fill) {
  setAcceptHoverEvents(true);
  setZValue(shape == Shape::Port ? 3 : 2);
}

void ShapeItem::setLabel(const QString& label, const QString& note) {
  m_label = label;
  m_note = note;
  update();
}

QRectF ShapeItem::boundingRect() const {
  return m_rect.adjusted(-kOutline, -kOutline, kOutline, kOutline);
}

QPainterPath ShapeItem::shape() const {
  QPainterPath path;
  if (m_shape == Shape::Ellipse || m_shape == Shape::Port)
    path.addEllipse(m_rect);
  else
    path.addRect(m_rect);
  return path;
}

void ShapeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const bool text = drawsText(painter, option);
  if (!text) {
    // Zoomed out a node is a few pixels: a filled rectangle (a fast axis-aligned fill) reads the
    // same as the shape and costs a fraction of a stroked ellipse.
    painter->fillRect(m_rect, m_hovered ? QBrush(palette::hoverColor()) : m_fill);
    if (isSelected() || (m_highlighted && m_style->highlightOn)) {
      painter->setPen(isSelected() ? m_style->selectionPen : m_style->highlightPen);
      painter->setBrush(Qt::NoBrush);
      painter->drawRect(m_rect.adjusted(-2, -2, 2, 2));
    }
    return;
  }
  painter->setPen(m_hovered                ? m_style->hoverPen
                  : m_shape == Shape::Port ? m_style->portPen
                                           : m_style->nodePen);
  painter->setBrush(m_fill);
  switch (m_shape) {
    case Shape::Ellipse:
    case Shape::Port:
      painter->drawEllipse(m_rect);
      break;
    case Shape::Box:
      painter->drawRect(m_rect);
      break;
    case Shape::Group:
      painter->drawRoundedRect(m_rect, kRadius, kRadius);
      break;
  }
  const bool selected = isSelected();
  if (selected || (m_highlighted && m_style->highlightOn)) {
    painter->setBrush(Qt::NoBrush);
    if (m_highlighted && m_style->highlightOn) {
      painter->setPen(m_style->highlightPen);
      const QRectF r = m_rect.adjusted(-3.5, -3.5, 3.5, 3.5);
      if (m_shape == Shape::Ellipse || m_shape == Shape::Port)
        painter->drawEllipse(r);
      else
        painter->drawRoundedRect(r, kRadius, kRadius);
    }
    if (selected) {
      painter->setPen(m_style->selectionPen);
      const QRectF r = m_rect.adjusted(-1.5, -1.5, 1.5, 1.5);
      if (m_shape == Shape::Ellipse || m_shape == Shape::Port)
        painter->drawEllipse(r);
      else
        painter->drawRoundedRect(r, kRadius, kRadius);
    }
  }
  if (!text) return;
  QRectF labelRect = m_rect;
  if (m_shape == Shape::Group) {
    // The "+" marker: a collapsed group opens on double-click.
    const QRectF marker(m_rect.left() + 4, m_rect.top() + 4, kMarkerSize, kMarkerSize);
    painter->setPen(m_style->nodePen);
    painter->setBrush(Qt::white);
    painter->drawRect(marker);
    const QPointF c = marker.center();
    painter->drawLine(QPointF(c.x() - 3, c.y()), QPointF(c.x() + 3, c.y()));
    painter->drawLine(QPointF(c.x(), c.y() - 3), QPointF(c.x(), c.y() + 3));
    labelRect.adjust(kMarkerSize + 4, 0, 0, 0);
  }
  painter->setPen(m_style->textPen);
  if (!m_note.isEmpty()) {
    const double noteHeight = m_style->smallHeight;
    painter->setFont(m_style->smallFont);
    painter->drawText(QRectF(labelRect.left(), labelRect.bottom() - noteHeight - 2,
                             labelRect.width(), noteHeight),
                      Qt::AlignCenter, m_note);
    labelRect.adjust(0, 0, 0, -noteHeight);
  }
  if (!m_label.isEmpty()) {
    painter->setFont(m_style->font);
    painter->drawText(labelRect, Qt::AlignCenter, m_label);
  }
}

void ShapeItem::setHighlighted(bool on) {
  if (m_highlighted == on) return;
  m_highlighted = on;
  refreshContentFlag();
  update();
}

void ShapeItem::setHovered(bool on) {
  m_hovered = on;
  for (EdgeItem* edge : edges) edge->setHovered(on);
  refreshContentFlag();
  update();
}

void ShapeItem::refreshContentFlag() {
  const bool special = m_hovered || isSelected() || (m_highlighted && m_style->highlightOn);
  setFlag(QGraphicsItem::ItemHasNoContents, m_style->overview && !special);
}

QVariant ShapeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemSelectedHasChanged) refreshContentFlag();
  return QGraphicsItem::itemChange(change, value);
}

void ShapeItem::hoverEnterEvent(QGraphicsSceneHoverEvent*) {
  setHovered(true);
}
void ShapeItem::hoverLeaveEvent(QGraphicsSceneHoverEvent*) {
  setHovered(false);
}

// --- ClusterItem --------------------------------------------------------------------------------

ClusterItem::ClusterItem(const SceneStyle* style, const QRectF& rect, const QRectF& titleRect,
                         int depth, const QString& title, const QString& path)
    : m_style(style),
      m_rect(rect),
      m_titleRect(titleRect.isEmpty() ? QRectF(rect.left(), rect.top(), rect.width(), 20)
                                      : titleRect),
      m_fill(palette::clusterFill(depth)),
      m_title(QStringLiteral("\u2212  ") + title),
      m_path(path) {
  // Deeper clusters above their parents, all below edges and nodes.
  setZValue(-100 + depth);
}

QPainterPath ClusterItem::shape() const {
  QPainterPath path;
  path.addRect(m_titleRect);
  return path;
}

void ClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  painter->setPen(m_style->clusterPen);
  painter->setBrush(m_fill);
  painter->drawRoundedRect(m_rect, kRadius, kRadius);
  painter->setPen(Qt::NoPen);
  painter->setBrush(m_style->titleBrush);
  painter->drawRect(m_titleRect.adjusted(1, 1, -1, 0));
  if (!drawsText(painter, option)) return;
  painter->setPen(m_style->textPen);
  painter->setFont(m_style->font);
  painter->drawText(m_titleRect.adjusted(6, 0, -4, 0), Qt::AlignLeft | Qt::AlignVCenter, m_title);
}

}  // namespace tscope::vis

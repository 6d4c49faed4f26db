#include "visualizers/scene/scene_items.h"

#include "visualizers/model/palette.h"
#include "visualizers/scene/graph_view.h"

#include <QFontMetricsF>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <QTextOption>

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
  hoverBrush = QBrush(palette::hoverColor());
  textPen = QPen(Qt::black);
  titleBrush = QBrush(QColor(0, 0, 0, 28));
}

void SceneStyle::setFont(const QFont& base) {
  font = base;
  smallFont = smallFontOf(base);
  smallMetrics.emplace(smallFont);
  smallHeight = smallMetrics->height();
}

bool drawsText(const QPainter* painter, const QStyleOptionGraphicsItem* option) {
  return option->levelOfDetailFromTransform(painter->worldTransform()) >= GraphView::kTextScale;
}

namespace {

// Label text laid out once: '\n' breaks lines (as QPainter::drawText does), lines centred in
// `width`.
QStaticText staticText(const QString& text, const QFont& font, double width) {
  QString lines = text;
  lines.replace(QLatin1Char('\n'), QChar::LineSeparator);
  QStaticText st(lines);
  st.setTextFormat(Qt::PlainText);
  QTextOption option(Qt::AlignHCenter);
  option.setWrapMode(QTextOption::NoWrap);
  st.setTextOption(option);
  st.setTextWidth(std::max(1.0, width));
  st.setPerformanceHint(QStaticText::AggressiveCaching);
  st.prepare(QTransform(), font);
  return st;
}

// The top-left corner that centres `text` (laid out `width` wide) in `rect`.
QPointF centredIn(const QStaticText& text, const QRectF& rect) {
  return {rect.left(), rect.center().y() - text.size().height() / 2};
}

}  // namespace

// --- ShapeItem ----------------------------------------------------------------------------------

ShapeItem::ShapeItem(const SceneStyle* style, const ContentShape* data)
    : node(data->node),
      group(data->group),
      togglePath(data->togglePath),
      m_style(style),
      m_data(data) {
  setAcceptHoverEvents(true);
  setZValue(data->shape == Shape::Port ? 3 : 2);
  if (data->selectable) setFlag(QGraphicsItem::ItemIsSelectable);
  if (!data->tooltip.isEmpty()) setToolTip(data->tooltip);
}

QRectF ShapeItem::boundingRect() const {
  return m_data->rect.adjusted(-kOutline, -kOutline, kOutline, kOutline);
}

QPainterPath ShapeItem::shape() const {
  QPainterPath path;
  if (m_data->shape == Shape::Ellipse || m_data->shape == Shape::Port)
    path.addEllipse(m_data->rect);
  else
    path.addRect(m_data->rect);
  return path;
}

void ShapeItem::prepareText() {
  m_textReady = true;
  QRectF labelRect = m_data->rect;
  if (m_data->shape == Shape::Group) labelRect.adjust(kMarkerSize + 4, 0, 0, 0);
  if (!m_data->note.isEmpty()) {
    const double noteHeight = m_style->smallHeight;
    m_noteText = staticText(m_data->note, m_style->smallFont, labelRect.width());
    m_notePos = centredIn(m_noteText, QRectF(labelRect.left(), labelRect.bottom() - noteHeight - 2,
                                             labelRect.width(), noteHeight));
    labelRect.adjust(0, 0, 0, -noteHeight);
  }
  if (!m_data->label.isEmpty()) {
    m_labelText = staticText(m_data->label, m_style->font, labelRect.width());
    m_labelPos = centredIn(m_labelText, labelRect);
  }
}

void ShapeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (m_style->retired) return;
  const QRectF& rect = m_data->rect;
  const Shape shape = m_data->shape;
  const bool text = drawsText(painter, option);
  if (!text) {
    // Zoomed out a node is a few pixels: a filled rectangle (a fast axis-aligned fill) reads the
    // same as the shape and costs a fraction of a stroked ellipse.
    painter->fillRect(rect, m_hovered ? m_style->hoverBrush : m_data->fill);
    if (isSelected() || (m_highlighted && m_style->highlightOn)) {
      painter->setPen(isSelected() ? m_style->selectionPen : m_style->highlightPen);
      painter->setBrush(Qt::NoBrush);
      painter->drawRect(rect.adjusted(-2, -2, 2, 2));
    }
    return;
  }
  painter->setPen(m_hovered              ? m_style->hoverPen
                  : shape == Shape::Port ? m_style->portPen
                                         : m_style->nodePen);
  painter->setBrush(m_data->fill);
  switch (shape) {
    case Shape::Ellipse:
    case Shape::Port:
      painter->drawEllipse(rect);
      break;
    case Shape::Box:
      painter->drawRect(rect);
      break;
    case Shape::Group:
      painter->drawRoundedRect(rect, kRadius, kRadius);
      break;
  }
  const bool selected = isSelected();
  if (selected || (m_highlighted && m_style->highlightOn)) {
    painter->setBrush(Qt::NoBrush);
    if (m_highlighted && m_style->highlightOn) {
      painter->setPen(m_style->highlightPen);
      const QRectF r = rect.adjusted(-3.5, -3.5, 3.5, 3.5);
      if (shape == Shape::Ellipse || shape == Shape::Port)
        painter->drawEllipse(r);
      else
        painter->drawRoundedRect(r, kRadius, kRadius);
    }
    if (selected) {
      painter->setPen(m_style->selectionPen);
      const QRectF r = rect.adjusted(-1.5, -1.5, 1.5, 1.5);
      if (shape == Shape::Ellipse || shape == Shape::Port)
        painter->drawEllipse(r);
      else
        painter->drawRoundedRect(r, kRadius, kRadius);
    }
  }
  if (shape == Shape::Group) {
    // The "+" marker: a collapsed group opens on double-click.
    const QRectF marker(rect.left() + 4, rect.top() + 4, kMarkerSize, kMarkerSize);
    painter->setPen(m_style->nodePen);
    painter->setBrush(Qt::white);
    painter->drawRect(marker);
    const QPointF c = marker.center();
    painter->drawLine(QPointF(c.x() - 3, c.y()), QPointF(c.x() + 3, c.y()));
    painter->drawLine(QPointF(c.x(), c.y() - 3), QPointF(c.x(), c.y() + 3));
  }
  if (m_data->label.isEmpty() && m_data->note.isEmpty()) return;
  if (!m_textReady) prepareText();
  painter->setPen(m_style->textPen);
  if (!m_data->note.isEmpty()) {
    painter->setFont(m_style->smallFont);
    painter->drawStaticText(m_notePos, m_noteText);
  }
  if (!m_data->label.isEmpty()) {
    painter->setFont(m_style->font);
    painter->drawStaticText(m_labelPos, m_labelText);
  }
}

void ShapeItem::setHighlighted(bool on) {
  if (m_highlighted == on) return;
  m_highlighted = on;
  refreshContentFlag();
  update();
}

void ShapeItem::setHovered(bool on) {
  // A retired item's edges may be deleted already.
  if (m_style->retired) return;
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

ClusterItem::ClusterItem(const SceneStyle* style, const ContentCluster* data)
    : group(data->group), m_style(style), m_data(data) {
  // Deeper clusters above their parents, all below edges and nodes.
  setZValue(-100 + data->depth);
  setToolTip(data->tooltip);
}

QPainterPath ClusterItem::shape() const {
  QPainterPath path;
  path.addRect(m_data->titleRect);
  return path;
}

void ClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (m_style->retired) return;
  painter->setPen(m_style->clusterPen);
  painter->setBrush(m_data->fill);
  painter->drawRoundedRect(m_data->rect, kRadius, kRadius);
  painter->setPen(Qt::NoPen);
  painter->setBrush(m_style->titleBrush);
  painter->drawRect(m_data->titleRect.adjusted(1, 1, -1, 0));
  if (!drawsText(painter, option)) return;
  if (!m_textReady) {
    m_textReady = true;
    m_titleText = QStaticText(m_data->title);
    m_titleText.setTextFormat(Qt::PlainText);
    m_titleText.setPerformanceHint(QStaticText::AggressiveCaching);
    m_titleText.prepare(QTransform(), m_style->font);
  }
  const QRectF title = m_data->titleRect.adjusted(6, 0, -4, 0);
  painter->setPen(m_style->textPen);
  painter->setFont(m_style->font);
  painter->drawStaticText(
      QPointF(title.left(), title.center().y() - m_titleText.size().height() / 2), m_titleText);
}

}  // namespace tscope::vis

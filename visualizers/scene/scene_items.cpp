#include "visualizers/scene/scene_items.h"

#include "visualizers/layout/item_sizes.h"
#include "visualizers/model/palette.h"
#include "visualizers/model/value_summary.h"
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

QTransform linearPart(const QTransform& t) {
  return QTransform(t.m11(), t.m12(), t.m21(), t.m22(), 0, 0);
}

bool drawsText(const QPainter* painter, const QStyleOptionGraphicsItem* option) {
  return option->levelOfDetailFromTransform(painter->worldTransform()) >= GraphView::kTextScale;
}

namespace {

// Label text laid out once: '\n' breaks lines (as QPainter::drawText does), lines centred in
// `width`.
QStaticText staticText(const QString& text, const QFont& font, double width,
                       const QTransform& transform, Qt::Alignment align = Qt::AlignHCenter) {
  QString lines = text;
  lines.replace(QLatin1Char('\n'), QChar::LineSeparator);
  QStaticText st(lines);
  st.setTextFormat(Qt::PlainText);
  QTextOption option(align);
  option.setWrapMode(QTextOption::NoWrap);
  st.setTextOption(option);
  st.setTextWidth(std::max(1.0, width));
  st.setPerformanceHint(QStaticText::AggressiveCaching);
  st.prepare(transform, font);
  return st;
}

// The top-left corner that centres `text` (laid out `width` wide) in `rect`.
QPointF centredIn(const QStaticText& text, const QRectF& rect) {
  return {rect.left(), rect.center().y() - text.size().height() / 2};
}

}  // namespace

// --- ShapeItem ----------------------------------------------------------------------------------

ShapeItem::ShapeItem(const SceneStyle* style, const ContentShape* data, int index)
    : node(data->node),
      group(data->group),
      togglePath(data->togglePath),
      m_style(style),
      m_data(data),
      m_index(index) {
  setAcceptHoverEvents(true);
  setZValue(data->shape == Shape::Port ? 3 : data->shape == Shape::Badge ? 2.5 : 2);
  if (data->selectable) setFlag(QGraphicsItem::ItemIsSelectable);
  refreshDecoration();
}

const NodeDecoration* ShapeItem::decoration() const {
  const MergedDecorations* m = m_style->decorations;
  if (!m || std::size_t(m_index) >= m->shapes.size()) return nullptr;
  const auto& slot = m->shapes[std::size_t(m_index)];
  return slot ? &*slot : nullptr;
}

void ShapeItem::refreshDecoration() {
  const NodeDecoration* d = decoration();
  QString tip = m_data->tooltip;
  if (d && !d->tooltip.isEmpty())
    tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) + d->tooltip;
  setToolTip(tip);
  m_statsReady = false;  // a badge row adds its statistics again at the next hover
  refreshContentFlag();
  update();
}

// Marks, outlines, breakpoint dots and badges (Note [Decoration layers] in decorations.h).
void ShapeItem::paintDecoration(QPainter* painter, const NodeDecoration& d, bool text) const {
  const QRectF& rect = m_data->rect;
  const bool round = m_data->shape == Shape::Ellipse || m_data->shape == Shape::Port;
  auto outlineShape = [&](const QPen& pen, double grow) {
    painter->setPen(pen);
    painter->setBrush(Qt::NoBrush);
    const QRectF r = rect.adjusted(-grow, -grow, grow, grow);
    if (round)
      painter->drawEllipse(r);
    else
      painter->drawRoundedRect(r, kRadius, kRadius);
  };
  if (d.outline) outlineShape(makePen(*d.outline, 4.0), 1.5);
  if (d.mark == NodeMark::Next) {
    QPen pen = makePen(QColor(0x1f, 0x77, 0xb4), 2.0);
    pen.setStyle(Qt::DashLine);
    outlineShape(pen, 3.5);
  } else if (d.mark == NodeMark::Current) {
    outlineShape(makePen(QColor(0xff, 0xb0, 0x00), 3.5), 3.5);
    // The arrow pointing at the node from the left, as debuggers mark the current line.
    const double cy = rect.center().y(), x = rect.left() - 6;
    QPolygonF arrow;
    arrow << QPointF(x, cy) << QPointF(x - 12, cy - 8) << QPointF(x - 12, cy - 3)
          << QPointF(x - 24, cy - 3) << QPointF(x - 24, cy + 3) << QPointF(x - 12, cy + 3)
          << QPointF(x - 12, cy + 8);
    painter->setPen(makePen(QColor(0x80, 0x58, 0x00), 1.0));
    painter->setBrush(QColor(0xff, 0xb0, 0x00));
    painter->drawPolygon(arrow);
  } else if (d.mark == NodeMark::Executed) {
    // A small check mark at the bottom-right corner.
    const QPointF c(rect.right() - (round ? rect.width() * 0.12 : 6), rect.bottom() - 6);
    painter->setPen(makePen(QColor(0x2c, 0xa0, 0x2c), 2.0));
    painter->drawPolyline(QPolygonF{QPointF(c.x() - 5, c.y() - 1), QPointF(c.x() - 2, c.y() + 2),
                                    QPointF(c.x() + 4, c.y() - 5)});
  }
  if (d.breakpoint != BreakpointMark::None) {
    const QPointF c(rect.left() + (round ? rect.width() * 0.15 : 2), rect.top() + 2);
    painter->setPen(makePen(QColor(0x8b, 0x00, 0x00), 1.2));
    painter->setBrush(d.breakpoint == BreakpointMark::Enabled ? QBrush(QColor(0xe5, 0x14, 0x00))
                                                              : QBrush(Qt::white));
    painter->drawEllipse(c, 5.5, 5.5);
  }
  if (!d.badge.isEmpty() && text) {
    const QFontMetricsF& fm = *m_style->smallMetrics;
    const double w = fm.horizontalAdvance(d.badge) + 6, h = m_style->smallHeight + 2;
    const QRectF badge(rect.right() - w + (round ? -rect.width() * 0.1 : 2), rect.top() - h / 2, w,
                       h);
    painter->setPen(makePen(QColor(60, 60, 60), 0.8));
    painter->setBrush(QColor(255, 255, 225));
    painter->drawRoundedRect(badge, 3, 3);
    painter->setPen(m_style->textPen);
    painter->setFont(m_style->smallFont);
    painter->drawText(badge, Qt::AlignCenter, d.badge);
  }
}

// Room for the outlines, and for the decorations (the current node's arrow on the left, the
// badge and breakpoint dot above): constant, so a decoration change never moves the item in the
// scene's index.
QRectF ShapeItem::boundingRect() const {
  return m_data->rect.adjusted(-kOutline - 32, -kOutline - 8, kOutline + 8, kOutline);
}

void ShapeItem::ensureStatistics() {
  if (m_data->shape != Shape::Badge || m_statsReady || m_style->retired) return;
  m_statsReady = true;
  const ViewModel* model = m_style->model;
  if (!model || m_data->node < 0 || std::size_t(m_data->node) >= model->nodes().size()) return;
  // A folded Apply's row shows its first parameter input's value (Note [Parameters]).
  const engine::Variable* var = model->nodes()[std::size_t(m_data->node)].badgeValue;
  if (!var) return;
  setToolTip(toolTip() + QStringLiteral("\n") + valueStatistics(*var) +
             QStringLiteral("\n(click to inspect)"));
}

QPainterPath ShapeItem::shape() const {
  QPainterPath path;
  if (m_data->shape == Shape::Ellipse || m_data->shape == Shape::Port)
    path.addEllipse(m_data->rect);
  else
    path.addRect(m_data->rect);
  return path;
}

void ShapeItem::prepareText(const QTransform& transform) {
  m_textReady = true;
  QRectF labelRect = m_data->labelRect.isEmpty() ? m_data->rect : m_data->labelRect;
  if (m_data->shape == Shape::Group) labelRect.adjust(kMarkerSize + 4, 0, 0, 0);
  if (m_data->shape == Shape::Badge) {
    // A row: the mark, then the text in the small font, left-aligned.
    labelRect.adjust(layout::ItemSizes::kBadgeMark + 6, 0, 0, 0);
    m_labelText =
        staticText(m_data->label, m_style->smallFont, labelRect.width(), transform, Qt::AlignLeft);
    m_labelPos = centredIn(m_labelText, labelRect);
    return;
  }
  if (!m_data->note.isEmpty()) {
    const double noteHeight = m_style->smallHeight;
    m_noteText = staticText(m_data->note, m_style->smallFont, labelRect.width(), transform);
    m_notePos = centredIn(m_noteText, QRectF(labelRect.left(), labelRect.bottom() - noteHeight - 2,
                                             labelRect.width(), noteHeight));
    labelRect.adjust(0, 0, 0, -noteHeight);
  }
  if (!m_data->label.isEmpty()) {
    m_labelText = staticText(m_data->label, m_style->font, labelRect.width(), transform);
    m_labelPos = centredIn(m_labelText, labelRect);
  }
}

void ShapeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (m_style->retired) return;
  const NodeDecoration* deco = decoration();
  const QBrush fillBrush = deco && deco->fill ? QBrush(*deco->fill) : m_data->fill;
  const QRectF& rect = m_data->rect;
  const Shape shape = m_data->shape;
  const bool text = drawsText(painter, option);
  if (!text) {
    // Zoomed out a node is a few pixels: a filled rectangle (a fast axis-aligned fill) reads the
    // same as the shape and costs a fraction of a stroked ellipse.
    painter->fillRect(rect, m_hovered ? m_style->hoverBrush : fillBrush);
    if (deco) paintDecoration(painter, *deco, false);
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
  painter->setBrush(fillBrush);
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
    case Shape::Record:
      // The op's colour on top, the rows on white below (Note [Parameters]).
      painter->drawRoundedRect(rect, kRadius / 2, kRadius / 2);
      if (!m_data->labelRect.isEmpty()) {
        painter->setPen(Qt::NoPen);
        painter->setBrush(Qt::white);
        painter->drawRect(QRectF(rect.left() + 1, m_data->labelRect.bottom(), rect.width() - 2,
                                 rect.bottom() - m_data->labelRect.bottom() - 1));
      }
      break;
    case Shape::Badge: {
      painter->setPen(m_hovered ? m_style->hoverPen : QPen(QColor(200, 200, 200), 0.6));
      painter->setBrush(m_hovered ? QBrush(QColor(255, 255, 225)) : QBrush(Qt::white));
      painter->drawRect(rect);
      const double side = layout::ItemSizes::kBadgeMark;
      painter->setPen(m_style->nodePen);
      painter->setBrush(fillBrush);
      painter->drawRect(QRectF(rect.left() + 3, rect.center().y() - side / 2, side, side));
      break;
    }
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
  if (deco) paintDecoration(painter, *deco, true);
  if (m_data->label.isEmpty() && m_data->note.isEmpty()) return;
  if (!m_textReady) prepareText(linearPart(painter->worldTransform()));
  painter->setPen(m_style->textPen);
  if (!m_data->note.isEmpty()) {
    painter->setFont(m_style->smallFont);
    painter->drawStaticText(m_notePos, m_noteText);
  }
  if (!m_data->label.isEmpty()) {
    painter->setFont(shape == Shape::Badge ? m_style->smallFont : m_style->font);
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
  // A decoration other than a fill is drawn by the item itself, also zoomed out (the overview
  // draws the fills).
  const NodeDecoration* d = decoration();
  const bool decorated =
      d && (d->outline || d->mark != NodeMark::None || d->breakpoint != BreakpointMark::None);
  const bool special =
      m_hovered || isSelected() || (m_highlighted && m_style->highlightOn) || decorated;
  setFlag(QGraphicsItem::ItemHasNoContents, m_style->overview && !special);
}

QVariant ShapeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemSelectedHasChanged) refreshContentFlag();
  return QGraphicsItem::itemChange(change, value);
}

void ShapeItem::hoverEnterEvent(QGraphicsSceneHoverEvent*) {
  ensureStatistics();  // before the tooltip's help event
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

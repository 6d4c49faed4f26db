// EdgeItem and LegendItem (scene_items.h).

#include "visualizers/model/palette.h"
#include "visualizers/scene/scene_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include <cmath>
#include <map>

namespace tscope::vis {

namespace {
constexpr double kArrowHalfWidth = 3.5;
}  // namespace

EdgeItem::EdgeItem(const SceneStyle* style, EdgeKind kind, const QPainterPath& path,
                   QPointF arrowBase, QPointF arrowTip, const QString& label, QPointF labelPos)
    : m_style(style), m_kind(kind), m_path(path), m_label(label) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1);
  const QPointF dir = arrowTip - arrowBase;
  const double len = std::hypot(dir.x(), dir.y());
  if (len > 1e-6) {
    const QPointF perp(-dir.y() / len * kArrowHalfWidth, dir.x() / len * kArrowHalfWidth);
    m_arrow << arrowTip << arrowBase + perp << arrowBase - perp;
  }
  // The polyline drawn when zoomed out: each cubic's ends and midpoint.
  QPointF last;
  for (int i = 0; i < m_path.elementCount(); ++i) {
    const QPainterPath::Element e = m_path.elementAt(i);
    if (e.isCurveTo() && i + 2 < m_path.elementCount()) {
      const QPointF c1(e), c2(m_path.elementAt(i + 1)), end(m_path.elementAt(i + 2));
      m_lodLine << 0.125 * last + 0.375 * c1 + 0.375 * c2 + 0.125 * end << end;
      last = end;
      i += 2;
    } else {
      last = QPointF(e);
      m_lodLine << last;
    }
  }
  m_bounds = m_path.controlPointRect().united(m_arrow.boundingRect());
  if (!m_label.isEmpty()) {
    const QRectF text = m_style->smallMetrics->boundingRect(QRectF(), Qt::AlignCenter, m_label);
    m_labelRect = QRectF(0, 0, text.width() + 2, text.height());
    m_labelRect.moveCenter(labelPos);
    m_bounds = m_bounds.united(m_labelRect);
  }
  m_bounds.adjust(-2, -2, 2, 2);
}

// Edges take no mouse input: the shape is empty so clicks and hovers go to what lies below.
QPainterPath EdgeItem::shape() const {
  return {};
}

void EdgeItem::setHovered(bool on) {
  if (m_hovered == on) return;
  m_hovered = on;
  setZValue(on ? 1.5 : 1);
  refreshContentFlag();
  update();
}

void EdgeItem::refreshContentFlag() {
  setFlag(QGraphicsItem::ItemHasNoContents, m_style->overview && !m_hovered);
}

// --- OverviewItem -------------------------------------------------------------------------------

OverviewItem::OverviewItem(const SceneStyle* style, const std::vector<ShapeItem*>& shapes,
                           const std::vector<EdgeItem*>& edges, const QRectF& bounds)
    : m_style(style), m_bounds(bounds) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1.8);  // above clusters and edge items, below the nodes that paint themselves
  // Cached in device coordinates: panning blits the pixmap; only a zoom change repaints it.
  setCacheMode(QGraphicsItem::DeviceCoordinateCache);
  std::map<QRgb, std::size_t> slot;
  for (const ShapeItem* shape : shapes) {
    const QColor fill = shape->fill();
    auto [it, added] = slot.emplace(fill.rgba(), m_rects.size());
    if (added) m_rects.emplace_back(QBrush(fill), std::vector<QRectF>{});
    m_rects[it->second].second.push_back(shape->rect());
  }
  for (const EdgeItem* edge : edges) {
    const QPolygonF& line = edge->lodLine();
    for (qsizetype i = 1; i < line.size(); ++i)
      m_lines[int(edge->kind())].emplace_back(line[i - 1], line[i]);
  }
}

void OverviewItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (!m_style->overview || drawsText(painter, option)) return;

  for (int k = 0; k < 3; ++k) {
    if (m_lines[k].empty()) continue;
    painter->setPen(m_style->lodEdgePens[k]);
    painter->drawLines(m_lines[k].data(), int(m_lines[k].size()));
  }
  painter->setPen(Qt::NoPen);
  for (const auto& [brush, rects] : m_rects) {
    painter->setBrush(brush);
    painter->drawRects(rects.data(), int(rects.size()));
  }
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const int k = int(m_kind);
  const bool text = drawsText(painter, option);
  if (!text) {
    // Zoomed out: a polyline through the spline (one-pixel cosmetic lines), no arrow, no label.
    painter->setPen(m_hovered ? m_style->edgeHoverPens[k] : m_style->lodEdgePens[k]);
    painter->drawPolyline(m_lodLine);
    return;
  }
  painter->setPen(m_hovered ? m_style->edgeHoverPens[k] : m_style->edgePens[k]);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(m_path);
  if (!m_arrow.isEmpty()) {
    painter->setBrush(m_hovered ? m_style->edgeHoverBrushes[k] : m_style->edgeBrushes[k]);
    painter->drawPolygon(m_arrow);
  }
  if (!m_label.isEmpty()) {
    painter->setPen(m_style->textPen);
    painter->setFont(m_style->smallFont);
    painter->drawText(m_labelRect, Qt::AlignCenter, m_label);
  }
}

// --- LegendItem ---------------------------------------------------------------------------------

namespace {
constexpr double kPad = 8, kSwatchW = 26, kSwatchH = 12, kGap = 8;
}  // namespace

LegendItem::LegendItem(const SceneStyle* style, std::vector<Row> rows)
    : m_style(style), m_rows(std::move(rows)) {
  setZValue(10);
  const QFontMetricsF fm(m_style->smallFont);
  m_rowHeight = std::max(kSwatchH + 4, fm.height() + 2);
  double textWidth = fm.horizontalAdvance(QStringLiteral("Legend"));
  for (const Row& row : m_rows) textWidth = std::max(textWidth, fm.horizontalAdvance(row.text));
  m_rect = QRectF(0, 0, 2 * kPad + kSwatchW + kGap + textWidth + 2,
                  2 * kPad + m_rowHeight * double(m_rows.size() + 1));
}

void LegendItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  painter->setPen(m_style->clusterPen);
  painter->setBrush(QColor(255, 255, 255, 235));
  painter->drawRoundedRect(m_rect, 4, 4);
  const bool text = drawsText(painter, option);
  painter->setFont(m_style->smallFont);
  if (text) {
    painter->setPen(m_style->textPen);
    painter->drawText(QRectF(kPad, kPad, m_rect.width() - 2 * kPad, m_rowHeight),
                      Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("Legend"));
  }
  double y = kPad + m_rowHeight;
  for (const Row& row : m_rows) {
    const QRectF swatch(kPad, y + (m_rowHeight - kSwatchH) / 2, kSwatchW, kSwatchH);
    switch (row.swatch) {
      case Row::Swatch::Ellipse:
        painter->setPen(m_style->nodePen);
        painter->setBrush(row.color);
        painter->drawEllipse(swatch);
        break;
      case Row::Swatch::Box:
        painter->setPen(m_style->nodePen);
        painter->setBrush(row.color);
        painter->drawRect(swatch);
        break;
      case Row::Swatch::Line: {
        QPen pen(row.color, 2.0);
        painter->setPen(pen);
        painter->drawLine(QPointF(swatch.left(), swatch.center().y()),
                          QPointF(swatch.right(), swatch.center().y()));
        break;
      }
      case Row::Swatch::Heat: {
        // The heat scale from its lightest to its darkest red; the row's colour is unused.
        QLinearGradient gradient(swatch.topLeft(), swatch.topRight());
        gradient.setColorAt(0, palette::heatColor(0));
        gradient.setColorAt(1, palette::heatColor(1));
        painter->setPen(m_style->nodePen);
        painter->setBrush(gradient);
        painter->drawRect(swatch);
        break;
      }
    }
    if (text) {
      painter->setPen(m_style->textPen);
      painter->drawText(QRectF(swatch.right() + kGap, y,
                               m_rect.width() - swatch.right() - kGap - kPad, m_rowHeight),
                        Qt::AlignLeft | Qt::AlignVCenter, row.text);
    }
    y += m_rowHeight;
  }
}

}  // namespace tscope::vis

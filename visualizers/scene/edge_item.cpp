// EdgeItem, OverviewItem and LegendItem (scene_items.h).

#include "visualizers/model/palette.h"
#include "visualizers/scene/scene_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

namespace tscope::vis {

EdgeItem::EdgeItem(const SceneStyle* style, const ContentEdge* data)
    : m_style(style), m_data(data) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1);
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

OverviewItem::OverviewItem(const SceneStyle* style, const SceneContent* content)
    : m_style(style), m_content(content) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1.8);  // above clusters and edge items, below the nodes that paint themselves
  // Cached in device coordinates: panning blits the pixmap; only a zoom change repaints it.
  setCacheMode(QGraphicsItem::DeviceCoordinateCache);
}

void OverviewItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (m_style->retired || !m_style->overview || drawsText(painter, option)) return;
  // The worker's image closest to this zoom when one is at most twice too coarse or too fine (a
  // smooth rescale of the exposed part costs a few ms, and the device cache keeps it while
  // panning); else the batched vector drawing.
  const SceneContent& c = *m_content;
  if (const SceneContent::OverviewImage* o = c.overviewImageFor(painter->deviceTransform().m11())) {
    const double ratio = painter->deviceTransform().m11() / o->scale;
    painter->setRenderHint(QPainter::SmoothPixmapTransform, ratio < 0.98 || ratio > 1.02);
    painter->drawImage(c.bounds, o->image);
    return;
  }
  c.drawOverview(painter, m_style->lodEdgePens);
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (m_style->retired) return;
  const int k = int(m_data->kind);
  const bool text = drawsText(painter, option);
  if (!text) {
    // Zoomed out: a polyline through the spline (one-pixel cosmetic lines), no arrow, no label.
    painter->setPen(m_hovered ? m_style->edgeHoverPens[k] : m_style->lodEdgePens[k]);
    painter->drawPolyline(m_data->lodLine);
    return;
  }
  painter->setPen(m_hovered ? m_style->edgeHoverPens[k] : m_style->edgePens[k]);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(m_data->path);
  if (!m_data->arrow.isEmpty()) {
    painter->setBrush(m_hovered ? m_style->edgeHoverBrushes[k] : m_style->edgeBrushes[k]);
    painter->drawPolygon(m_data->arrow);
  }
  if (!m_data->label.isEmpty()) {
    if (!m_textReady) {
      // Laid out once: panning reuses the glyph positions.
      m_textReady = true;
      m_labelText = QStaticText(m_data->label);
      m_labelText.setTextFormat(Qt::PlainText);
      m_labelText.setPerformanceHint(QStaticText::AggressiveCaching);
      m_labelText.prepare(QTransform(), m_style->smallFont);
      const QSizeF size = m_labelText.size();
      m_labelPos = m_data->labelRect.center() - QPointF(size.width() / 2, size.height() / 2);
    }
    painter->setPen(m_style->textPen);
    painter->setFont(m_style->smallFont);
    painter->drawStaticText(m_labelPos, m_labelText);
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
  if (m_style->retired) return;
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

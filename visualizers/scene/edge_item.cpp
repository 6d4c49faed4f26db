// EdgeItem, OverviewItem and LegendItem (scene_items.h).

#include "visualizers/model/palette.h"
#include "visualizers/scene/scene_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

namespace tscope::vis {

namespace {
constexpr double kPillW = 36, kPillH = 7;
}  // namespace

EdgeItem::EdgeItem(const SceneStyle* style, const ContentEdge* data, int index)
    : m_style(style), m_data(data), m_index(index) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1);
  // Constant bounds with room for a health pill and its text: a decoration change never moves
  // the item in the scene's index.
  m_bounds = m_data->bounds.united(pillRect().adjusted(-2, -2, 80, 2));
  refreshDecoration();
}

// The pill sits under the edge's label, else at the middle of the spline.
QRectF EdgeItem::pillRect() const {
  QPointF at;
  if (m_data->labelRect.isValid())
    at = QPointF(m_data->labelRect.center().x(), m_data->labelRect.bottom() + kPillH / 2 + 1);
  else if (!m_data->path.isEmpty())
    at = m_data->path.pointAtPercent(0.5) + QPointF(kPillW / 2 + 4, 0);
  else
    return {};
  return QRectF(at.x() - kPillW / 2, at.y() - kPillH / 2, kPillW, kPillH);
}

// Laid out once: panning reuses the glyph positions.
void EdgeItem::prepareText(const QTransform& transform) {
  m_textReady = true;
  if (m_data->label.isEmpty()) return;
  m_labelText = QStaticText(m_data->label);
  m_labelText.setTextFormat(Qt::PlainText);
  m_labelText.setPerformanceHint(QStaticText::AggressiveCaching);
  m_labelText.prepare(transform, m_style->smallFont);
  const QSizeF size = m_labelText.size();
  m_labelPos = m_data->labelRect.center() - QPointF(size.width() / 2, size.height() / 2);
}

const EdgeDecoration* EdgeItem::decoration() const {
  const MergedDecorations* m = m_style->decorations;
  if (!m || std::size_t(m_index) >= m->edges.size()) return nullptr;
  const auto& slot = m->edges[std::size_t(m_index)];
  return slot ? &*slot : nullptr;
}

void EdgeItem::refreshDecoration() {
  const EdgeDecoration* d = decoration();
  QString tip;
  if (d && d->pill) tip = d->pill->tooltip;
  if (d && !d->tooltip.isEmpty())
    tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) + d->tooltip;
  setToolTip(tip);
  refreshContentFlag();
  update();
}

// Edges take no mouse input: the shape is empty so clicks and hovers go to what lies below,
// except over a health pill, which shows its tooltip.
QPainterPath EdgeItem::shape() const {
  QPainterPath path;
  if (const EdgeDecoration* d = decoration(); d && d->pill) path.addRect(pillRect());
  return path;
}

void EdgeItem::setHovered(bool on) {
  if (m_hovered == on) return;
  m_hovered = on;
  setZValue(on ? 1.5 : 1);
  refreshContentFlag();
  update();
}

void EdgeItem::refreshContentFlag() {
  const EdgeDecoration* d = decoration();
  setFlag(QGraphicsItem::ItemHasNoContents, m_style->overview && !m_hovered && !(d && d->color));
}

// --- OverviewItem -------------------------------------------------------------------------------

OverviewItem::OverviewItem(const SceneStyle* style, const SceneContent* content)
    : m_style(style), m_content(content) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(1.8);  // above clusters and edge items, below the nodes that paint themselves
  // Cached in device coordinates: panning blits the pixmap; only a zoom change repaints it.
  setCacheMode(QGraphicsItem::DeviceCoordinateCache);
}

void OverviewItem::paintFills(QPainter* painter) const {
  if (!m_style->decorations) return;
  painter->setPen(Qt::NoPen);
  for (const auto& [color, rects] : m_style->decorations->overviewFills) {
    painter->setBrush(color);
    painter->drawRects(rects.data(), int(rects.size()));
  }
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
    paintFills(painter);
    return;
  }
  c.drawOverview(painter, m_style->lodEdgePens);
  paintFills(painter);
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (m_style->retired) return;
  const int k = int(m_data->kind);
  const bool text = drawsText(painter, option);
  const EdgeDecoration* deco = decoration();
  if (!text) {
    // Zoomed out: a polyline through the spline (one-pixel cosmetic lines), no arrow, no label.
    if (deco && deco->color && !m_hovered)
      painter->setPen(QPen(*deco->color, 0));
    else
      painter->setPen(m_hovered ? m_style->edgeHoverPens[k] : m_style->lodEdgePens[k]);
    painter->drawPolyline(m_data->lodLine);
    return;
  }
  QPen pen = m_hovered ? m_style->edgeHoverPens[k] : m_style->edgePens[k];
  QBrush head = m_hovered ? m_style->edgeHoverBrushes[k] : m_style->edgeBrushes[k];
  if (deco && deco->color && !m_hovered) {
    pen.setColor(*deco->color);
    pen.setWidthF(3.0);
    head = QBrush(*deco->color);
  }
  painter->setPen(pen);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(m_data->path);
  if (!m_data->arrow.isEmpty()) {
    painter->setBrush(head);
    painter->drawPolygon(m_data->arrow);
  }
  if (deco && deco->pill) {
    // The health pill: segments in proportion to the element counts, NaN first.
    const HealthPill& pill = *deco->pill;
    const QRectF r = pillRect();
    painter->setPen(Qt::NoPen);
    double x = r.left();
    for (int segment = 0; segment < 6; ++segment) {
      const double w = pill.fraction(segment) * r.width();
      if (w <= 0) continue;
      // A non-zero share is always visible: at least a pixel-wide sliver.
      const double drawn = std::max(w, 1.0);
      painter->setBrush(HealthPill::colorOf(segment));
      painter->drawRect(QRectF(x, r.top(), std::min(drawn, r.right() - x), r.height()));
      x += w;
    }
    painter->setPen(QPen(QColor(70, 70, 70), 0.6));
    painter->setBrush(Qt::NoBrush);
    painter->drawRect(r);
    if (!pill.text.isEmpty()) {
      painter->setPen(m_style->textPen);
      painter->setFont(m_style->smallFont);
      painter->drawText(QRectF(r.right() + 3, r.center().y() - 8, 80, 16),
                        Qt::AlignLeft | Qt::AlignVCenter, pill.text);
    }
  }
  if (!m_data->label.isEmpty()) {
    if (!m_textReady) prepareText(linearPart(painter->worldTransform()));
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
      case Row::Swatch::Scale: {
        // A discrete scale (the heat map's steps): one block per colour, low to high.
        painter->setPen(Qt::NoPen);
        const double w = swatch.width() / double(std::max<std::size_t>(1, row.steps.size()));
        for (std::size_t i = 0; i < row.steps.size(); ++i) {
          painter->setBrush(row.steps[i]);
          painter->drawRect(
              QRectF(swatch.left() + w * double(i), swatch.top(), w, swatch.height()));
        }
        painter->setPen(m_style->nodePen);
        painter->setBrush(Qt::NoBrush);
        painter->drawRect(swatch);
        break;
      }
      case Row::Swatch::Dot:
        painter->setPen(m_style->nodePen);
        painter->setBrush(row.color);
        painter->drawEllipse(swatch.center(), swatch.height() / 2 - 1, swatch.height() / 2 - 1);
        break;
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

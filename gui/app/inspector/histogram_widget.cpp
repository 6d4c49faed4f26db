#include "gui/app/inspector/histogram_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace tscope::gui {

namespace {
QString number(double v) {
  return QString::number(v, 'g', 4);
}
}  // namespace

HistogramWidget::HistogramWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent, false);
}

void HistogramWidget::setStats(const ValueStats& stats) {
  m_stats = stats;
  update();
}

void HistogramWidget::clear() {
  setStats(ValueStats{});
}

QRect HistogramWidget::plotRect() const {
  const int text = fontMetrics().height();
  return rect().adjusted(4, 4, -4, -(2 * text + 8));
}

int HistogramWidget::barAt(QPoint pos) const {
  const QRect plot = plotRect();
  const int bins = static_cast<int>(m_stats.histogram.size());
  if (bins == 0 || !plot.contains(pos)) return -1;
  return std::clamp((pos.x() - plot.left()) * bins / std::max(1, plot.width()), 0, bins - 1);
}

QString HistogramWidget::barText(int bin) const {
  const int bins = static_cast<int>(m_stats.histogram.size());
  if (bin < 0 || bin >= bins) return {};
  const double width = (m_stats.histogramHigh - m_stats.histogramLow) / bins;
  const double low = m_stats.histogramLow + bin * width;
  const double high = bin == bins - 1 ? m_stats.histogramHigh : low + width;
  const QString close = bin == bins - 1 ? "]" : ")";
  return QString("[%1, %2%3: %4").arg(number(low), number(high), close).arg(m_stats.histogram[bin]);
}

void HistogramWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect plot = plotRect();
  const int bins = static_cast<int>(m_stats.histogram.size());
  p.setPen(palette().color(QPalette::Text));
  if (bins == 0) {
    p.drawText(rect(), Qt::AlignCenter,
               m_stats.count == 0 ? tr("no value") : tr("no finite value"));
  } else {
    const std::int64_t peak = std::max<std::int64_t>(
        1, *std::max_element(m_stats.histogram.begin(), m_stats.histogram.end()));
    const QColor bar = palette().color(QPalette::Highlight);
    for (int b = 0; b < bins; ++b) {
      const int x0 = plot.left() + b * plot.width() / bins;
      const int x1 = plot.left() + (b + 1) * plot.width() / bins;
      const int h =
          static_cast<int>(static_cast<double>(m_stats.histogram[b]) / peak * plot.height());
      // A non-empty bin always shows at least one pixel: a lone outlier must stay visible.
      const int shown = m_stats.histogram[b] > 0 ? std::max(h, 1) : 0;
      p.fillRect(QRect(x0, plot.bottom() - shown + 1, std::max(1, x1 - x0 - 1), shown), bar);
    }
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    const int line = fontMetrics().height();
    const QRect axis(plot.left(), plot.bottom() + 2, plot.width(), line);
    p.drawText(axis, Qt::AlignLeft | Qt::AlignVCenter, number(m_stats.histogramLow));
    p.drawText(axis, Qt::AlignRight | Qt::AlignVCenter, number(m_stats.histogramHigh));
  }
  const std::int64_t inf = m_stats.posInfCount + m_stats.negInfCount;
  if (m_stats.nanCount > 0 || inf > 0) {
    const int line = fontMetrics().height();
    const QRect note(plot.left(), plot.bottom() + 2 + line, plot.width(), line);
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(note, Qt::AlignLeft | Qt::AlignVCenter,
               tr("not shown: %1 NaN, %2 Inf").arg(m_stats.nanCount).arg(inf));
  }
}

void HistogramWidget::mouseMoveEvent(QMouseEvent* event) {
  const int bin = barAt(event->position().toPoint());
  if (bin < 0)
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), barText(bin), this);
}

}  // namespace tscope::gui

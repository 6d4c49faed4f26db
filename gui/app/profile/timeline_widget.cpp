#include "gui/app/profile/timeline_widget.h"

#include "profiling/report.h"
#include "visualizers/model/palette.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace tscope::gui {

namespace {

QString seconds(double s) {
  return QString::fromStdString(prof::formatSeconds(s));
}

QColor scopeColor(int level) {
  static const QColor kLevels[] = {QColor(0xc6, 0xdb, 0xef), QColor(0xd9, 0xe7, 0xf5),
                                   QColor(0xe8, 0xf0, 0xf9)};
  return kLevels[std::clamp(level - 1, 0, 2)];
}

constexpr int kDragThreshold = 4;

}  // namespace

// --- TimelineWidget ---

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("profileTimeline"));
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumHeight(kAxisHeight + 3 * kRowHeight);
}

QSize TimelineWidget::sizeHint() const {
  const int rows = m_data ? m_data->totalRows : 3;
  return {800, kAxisHeight + rows * kRowHeight + 4};
}

void TimelineWidget::setData(std::shared_ptr<const TimelineData> data,
                             std::shared_ptr<const prof::Profile> profile) {
  m_data = std::move(data);
  m_profile = std::move(profile);
  m_selectedNode = -1;
  m_range.reset();
  // Every row readable: the dock's splitter gives the timeline at least its rows.
  setMinimumHeight(
      std::min(420, kAxisHeight + std::max(3, m_data ? m_data->totalRows : 3) * kRowHeight + 4));
  updateGeometry();
  showAll();
}

void TimelineWidget::setNodeColors(std::vector<QColor> colors) {
  m_colors = std::move(colors);
  update();
}

void TimelineWidget::setViewRange(TimeRange range) {
  if (range.endNs <= range.startNs) range.endNs = range.startNs + 1;
  if (m_viewStart == range.startNs && m_viewEnd == range.endNs) return;
  m_viewStart = range.startNs;
  m_viewEnd = range.endNs;
  update();
  emit viewChanged(viewRange());
}

void TimelineWidget::showAll() {
  if (!m_data || m_data->endNs <= m_data->startNs) {
    setViewRange({0, 1000});
    return;
  }
  const std::int64_t margin = (m_data->endNs - m_data->startNs) / 50;
  setViewRange({m_data->startNs - margin, m_data->endNs + margin});
}

void TimelineWidget::showRun(int run) {
  if (!m_data || run < 0) {
    showAll();
    return;
  }
  for (const TimelineBar& b : m_data->bars)
    if (b.kind == TimelineBar::Kind::Run && b.run == run) {
      const std::int64_t margin = std::max<std::int64_t>(1, (b.endNs - b.startNs) / 50);
      setViewRange({b.startNs - margin, b.endNs + margin});
      return;
    }
}

void TimelineWidget::zoomBy(double factor, double anchorX) {
  const std::int64_t anchor = timeAt(anchorX);
  const double span = static_cast<double>(m_viewEnd - m_viewStart) / factor;
  const double left = (anchorX - kHeaderWidth) / std::max(1, width() - kHeaderWidth);
  const auto start = anchor - static_cast<std::int64_t>(span * left);
  setViewRange({start, start + std::max<std::int64_t>(100, static_cast<std::int64_t>(span))});
}

void TimelineWidget::setRange(std::optional<TimeRange> range) {
  if (range && range->endNs <= range->startNs) range.reset();
  if (range == m_range) return;
  m_range = range;
  update();
  if (m_range)
    emit rangeSelected(*m_range);
  else
    emit rangeCleared();
}

void TimelineWidget::setSelectedNode(int profileNode) {
  if (profileNode == m_selectedNode) return;
  m_selectedNode = profileNode;
  // Bring its first call into view when none is visible.
  if (m_data && profileNode >= 0) {
    const TimelineBar* first = nullptr;
    for (const TimelineBar& b : m_data->bars) {
      if (b.kind != TimelineBar::Kind::Node || b.node != profileNode) continue;
      if (b.endNs >= m_viewStart && b.startNs <= m_viewEnd) {
        first = nullptr;
        break;
      }
      if (!first) first = &b;
    }
    if (first) {
      const std::int64_t span = m_viewEnd - m_viewStart;
      const std::int64_t mid = (first->startNs + first->endNs) / 2;
      setViewRange({mid - span / 2, mid - span / 2 + span});
    }
  }
  update();
}

double TimelineWidget::xOf(std::int64_t ns) const {
  const double w = std::max(1, width() - kHeaderWidth);
  return kHeaderWidth + static_cast<double>(ns - m_viewStart) * w /
                            static_cast<double>(std::max<std::int64_t>(1, m_viewEnd - m_viewStart));
}

std::int64_t TimelineWidget::timeAt(double x) const {
  const double w = std::max(1, width() - kHeaderWidth);
  return m_viewStart + static_cast<std::int64_t>((x - kHeaderWidth) / w *
                                                 static_cast<double>(m_viewEnd - m_viewStart));
}

QRectF TimelineWidget::barRect(int bar) const {
  if (!m_data || bar < 0 || static_cast<std::size_t>(bar) >= m_data->bars.size()) return {};
  const TimelineBar& b = m_data->bars[static_cast<std::size_t>(bar)];
  const int row = m_data->tracks[static_cast<std::size_t>(b.track)].firstRow + b.row;
  const double x0 = xOf(b.startNs), x1 = std::max(xOf(b.endNs), x0 + 1.0);
  return {x0, double(kAxisHeight + row * kRowHeight + 1), x1 - x0, double(kRowHeight - 2)};
}

int TimelineWidget::barAt(QPoint pos) const {
  if (!m_data || pos.x() < kHeaderWidth) return -1;
  int best = -1;
  for (std::size_t i = 0; i < m_data->bars.size(); ++i) {
    const QRectF r = barRect(static_cast<int>(i)).adjusted(-1, 0, 1, 0);
    if (r.contains(pos)) {
      best = static_cast<int>(i);
      if (m_data->bars[i].kind == TimelineBar::Kind::Node) break;
    }
  }
  return best;
}

QString TimelineWidget::barText(int bar) const {
  if (!m_data || bar < 0 || static_cast<std::size_t>(bar) >= m_data->bars.size()) return {};
  const TimelineBar& b = m_data->bars[static_cast<std::size_t>(bar)];
  const QString span = QStringLiteral("%1 at %2")
                           .arg(seconds(double(b.endNs - b.startNs) * 1e-9),
                                seconds(double(b.startNs - m_data->startNs) * 1e-9));
  switch (b.kind) {
    case TimelineBar::Kind::Run:
      return QStringLiteral("%1: %2").arg(b.label, span);
    case TimelineBar::Kind::Scope:
      return QStringLiteral("scope %1 (run %2): %3").arg(b.label).arg(b.run).arg(span);
    case TimelineBar::Kind::Gpu:
      return QStringLiteral("%1 (run %2): %3").arg(b.label).arg(b.run).arg(span);
    case TimelineBar::Kind::Node:
      break;
  }
  if (!m_profile || b.node < 0 || static_cast<std::size_t>(b.node) >= m_profile->nodes.size())
    return span;
  const prof::NodeProfile& node = m_profile->nodes[static_cast<std::size_t>(b.node)];
  QString text = QStringLiteral("%1 node %2 (run %3): %4")
                     .arg(QString::fromStdString(node.op), profileNodeName(node))
                     .arg(b.run)
                     .arg(span);
  if (!node.scope.empty())
    text += QStringLiteral("\nscope %1").arg(QString::fromStdString(node.scope));
  return text;
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (!m_data) {
    p.drawText(rect(), Qt::AlignCenter, tr("No profile: Profile > Profile... runs one"));
    return;
  }
  const QFontMetrics fm(font());
  // The axis: about one tick per 100 pixels, at a round step.
  const double nsPerPx =
      static_cast<double>(m_viewEnd - m_viewStart) / std::max(1, width() - kHeaderWidth);
  const double rough = nsPerPx * 100;
  double step = std::pow(10.0, std::floor(std::log10(std::max(rough, 1.0))));
  if (rough / step > 5)
    step *= 5;
  else if (rough / step > 2)
    step *= 2;
  p.setPen(palette().color(QPalette::Mid));
  for (double t = std::ceil(double(m_viewStart - m_data->startNs) / step) * step;
       t <= double(m_viewEnd - m_data->startNs); t += step) {
    const double x = xOf(m_data->startNs + static_cast<std::int64_t>(t));
    p.drawLine(QPointF(x, kAxisHeight - 4), QPointF(x, height()));
    p.drawText(QPointF(x + 2, kAxisHeight - 6), seconds(t * 1e-9));
  }
  p.setClipRect(QRect(kHeaderWidth, kAxisHeight, width() - kHeaderWidth, height()));
  for (std::size_t i = 0; i < m_data->bars.size(); ++i) {
    const TimelineBar& b = m_data->bars[i];
    if (b.endNs < m_viewStart || b.startNs > m_viewEnd) continue;
    const QRectF r = barRect(static_cast<int>(i));
    QColor fill;
    QString label = b.label;
    switch (b.kind) {
      case TimelineBar::Kind::Run:
        fill = QColor(0xe0, 0xe0, 0xe0);
        break;
      case TimelineBar::Kind::Scope:
        fill = scopeColor(b.row);
        break;
      case TimelineBar::Kind::Node:
      case TimelineBar::Kind::Gpu:
        fill = b.node >= 0 && static_cast<std::size_t>(b.node) < m_colors.size() &&
                       m_colors[static_cast<std::size_t>(b.node)].isValid()
                   ? m_colors[static_cast<std::size_t>(b.node)]
                   : QColor(0xcc, 0xcc, 0xcc);
        if (b.kind == TimelineBar::Kind::Node && m_profile && b.node >= 0)
          label = QString::fromStdString(m_profile->nodes[static_cast<std::size_t>(b.node)].op);
        break;
    }
    const bool selected = b.node >= 0 && b.node == m_selectedNode &&
                          (b.kind == TimelineBar::Kind::Node || b.kind == TimelineBar::Kind::Gpu);
    p.setPen(selected ? QPen(vis::palette::selectionColor(), 2)
                      : (r.width() > 3 ? QPen(QColor(0x80, 0x80, 0x80), 0.5) : Qt::NoPen));
    p.setBrush(fill);
    p.drawRect(r);
    if (r.width() > 30) {
      p.setPen(Qt::black);
      p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(label, Qt::ElideRight, int(r.width()) - 5));
    }
  }
  if (m_range) {
    const double x0 = xOf(m_range->startNs), x1 = xOf(m_range->endNs);
    QColor shade = palette().color(QPalette::Window);
    shade.setAlpha(150);
    p.fillRect(QRectF(kHeaderWidth, kAxisHeight, std::max(0.0, x0 - kHeaderWidth), height()),
               shade);
    p.fillRect(QRectF(x1, kAxisHeight, std::max(0.0, width() - x1), height()), shade);
    p.setPen(QPen(vis::palette::selectionColor(), 1.5));
    p.drawLine(QPointF(x0, kAxisHeight), QPointF(x0, height()));
    p.drawLine(QPointF(x1, kAxisHeight), QPointF(x1, height()));
    p.drawText(QPointF(x0 + 3, kAxisHeight + fm.ascent()),
               seconds(double(m_range->endNs - m_range->startNs) * 1e-9));
  }
  p.setClipping(false);
  p.fillRect(QRect(0, kAxisHeight, kHeaderWidth, height()), palette().window());
  p.setPen(palette().color(QPalette::WindowText));
  for (const TimelineTrack& t : m_data->tracks) {
    const int y = kAxisHeight + t.firstRow * kRowHeight;
    p.drawText(QRect(4, y, kHeaderWidth - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft, t.name);
    p.drawLine(0, y, width(), y);
  }
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps != 0) zoomBy(std::pow(1.25, steps), event->position().x());
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  m_pressPos = event->pos();
  m_pressViewStart = m_viewStart;
  m_pressTime = timeAt(event->position().x());
  m_moved = false;
  m_drag = event->modifiers() & Qt::ShiftModifier ? Drag::Range : Drag::Pan;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  if (m_drag == Drag::None) {
    const int bar = barAt(event->pos());
    if (bar >= 0)
      QToolTip::showText(event->globalPosition().toPoint(), barText(bar), this);
    else
      QToolTip::hideText();
    return;
  }
  if ((event->pos() - m_pressPos).manhattanLength() >= kDragThreshold) m_moved = true;
  if (!m_moved) return;
  if (m_drag == Drag::Pan) {
    const double nsPerPx =
        static_cast<double>(m_viewEnd - m_viewStart) / std::max(1, width() - kHeaderWidth);
    const auto shift = static_cast<std::int64_t>((event->pos().x() - m_pressPos.x()) * nsPerPx);
    const std::int64_t span = m_viewEnd - m_viewStart;
    setViewRange({m_pressViewStart - shift, m_pressViewStart - shift + span});
  } else {
    const std::int64_t now = timeAt(event->position().x());
    m_range = TimeRange{std::min(now, m_pressTime), std::max(now, m_pressTime)};
    update();
  }
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  const Drag drag = std::exchange(m_drag, Drag::None);
  if (event->button() != Qt::LeftButton) return QWidget::mouseReleaseEvent(event);
  if (drag == Drag::Range && m_moved) {
    const std::optional<TimeRange> chosen = m_range;
    m_range.reset();  // setRange emits for the final range
    setRange(chosen);
    return;
  }
  if (m_moved) return;
  const int bar = barAt(event->pos());
  if (bar < 0) return;
  const TimelineBar& b = m_data->bars[static_cast<std::size_t>(bar)];
  if (b.kind == TimelineBar::Kind::Run) {
    emit runClicked(b.run);
  } else if (b.node >= 0) {
    setSelectedNode(b.node);
    emit nodeClicked(b.node);
  }
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Escape && m_range) {
    clearRange();
    return;
  }
  if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)
    return zoomBy(1.5, (kHeaderWidth + width()) / 2.0);
  if (event->key() == Qt::Key_Minus) return zoomBy(1 / 1.5, (kHeaderWidth + width()) / 2.0);
  if (event->key() == Qt::Key_0) return showAll();
  QWidget::keyPressEvent(event);
}

// --- MemoryChart ---

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("profileMemoryChart"));
  setMinimumHeight(60);
}

QSize MemoryChart::sizeHint() const {
  return {800, 90};
}

void MemoryChart::setData(std::shared_ptr<const TimelineData> data) {
  m_data = std::move(data);
  update();
}

void MemoryChart::setViewRange(TimeRange range) {
  m_view = range;
  update();
}

void MemoryChart::setRange(std::optional<TimeRange> range) {
  m_range = range;
  update();
}

QString MemoryChart::peakText() const {
  if (!m_data || m_data->memory.peak < 0) return tr("Memory was not measured");
  const MemoryPoint& pk = m_data->memory.points[static_cast<std::size_t>(m_data->memory.peak)];
  QString after;
  if (m_profile && pk.node >= 0 && static_cast<std::size_t>(pk.node) < m_profile->nodes.size()) {
    const prof::NodeProfile& node = m_profile->nodes[static_cast<std::size_t>(pk.node)];
    QString op = QString::fromStdString(node.op);
    if (op.size() > 40) op = op.left(39) + QChar(0x2026);  // a fused Composite's long name
    after = QStringLiteral(" after %1 %2").arg(op, profileNodeName(node));
  }
  return tr("peak %1%2 (run %3)")
      .arg(QString::fromStdString(prof::formatBytes(double(pk.liveBytes))), after)
      .arg(pk.run);
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const int left = TimelineWidget::kHeaderWidth;
  p.fillRect(QRect(0, 0, left, height()), palette().window());
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRect(4, 2, left - 8, height() - 4), Qt::AlignTop | Qt::AlignLeft | Qt::TextWordWrap,
             tr("Live memory"));
  if (!m_data || m_data->memory.points.empty()) {
    p.drawText(rect().adjusted(left, 0, 0, 0), Qt::AlignCenter, tr("Memory was not measured"));
    return;
  }
  const auto& pts = m_data->memory.points;
  const MemoryPoint& peak = pts[static_cast<std::size_t>(m_data->memory.peak)];
  const double top = 14, bottom = height() - 4;
  const double w = std::max(1, width() - left);
  const double span = double(std::max<std::int64_t>(1, m_view.endNs - m_view.startNs));
  auto x = [&](std::int64_t t) { return left + double(t - m_view.startNs) * w / span; };
  auto y = [&](std::int64_t bytes) {
    return bottom -
           (bottom - top) * double(bytes) / double(std::max<std::int64_t>(1, peak.liveBytes));
  };
  p.setClipRect(QRect(left, 0, width() - left, height()));
  QPainterPath path;
  path.moveTo(x(pts.front().timeNs), bottom);
  double lastY = bottom;
  for (const MemoryPoint& pt : pts) {
    const double px = x(pt.timeNs);
    path.lineTo(px, lastY);
    lastY = y(pt.liveBytes);
    path.lineTo(px, lastY);
  }
  path.lineTo(x(pts.back().timeNs), bottom);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QPen(QColor(0x31, 0x68, 0x8e), 1));
  p.setBrush(QColor(0x31, 0x68, 0x8e, 60));
  p.drawPath(path);
  const double px = x(peak.timeNs);
  p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 1.5, Qt::DashLine));
  p.drawLine(QPointF(px, top - 2), QPointF(px, bottom));
  p.setPen(QColor(0xd6, 0x27, 0x28));
  p.drawText(QPointF(px + 4, top), peakText());
  if (m_range) {
    QColor shade = palette().color(QPalette::Window);
    shade.setAlpha(150);
    p.fillRect(QRectF(left, 0, std::max(0.0, x(m_range->startNs) - left), height()), shade);
    p.fillRect(QRectF(x(m_range->endNs), 0, width(), height()), shade);
  }
}

}  // namespace tscope::gui

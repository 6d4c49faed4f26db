#include "visualizers/layout/item_sizes.h"

#include <QStringList>

#include <algorithm>

namespace tscope::vis::layout {
namespace {

// An ellipse through the corners of a w x h box has axes sqrt(2) times the box's.
constexpr double kEllipseFactor = 1.42;

}  // namespace

QFont ItemSizes::smallFont(const QFont& font) {
  QFont small = font;
  if (font.pointSizeF() > 0)
    small.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.85));
  else if (font.pixelSize() > 0)
    small.setPixelSize(std::max(6, static_cast<int>(font.pixelSize() * 0.85)));
  return small;
}

ItemSizes::ItemSizes(const QFont& font)
    : m_metrics(font), m_small(smallFont(font)), m_titleHeight(m_metrics.height() + 6) {}

QSizeF ItemSizes::textBox(const QFontMetricsF& metrics, const QString& text) const {
  const QStringList lines = text.split(QLatin1Char('\n'));
  double width = 0;
  for (const QString& line : lines) width = std::max(width, metrics.horizontalAdvance(line));
  return {std::ceil(width),
          std::ceil(metrics.height() + (lines.size() - 1) * metrics.lineSpacing())};
}

QSizeF ItemSizes::node(const ViewNode& node) const {
  const QSizeF text = textBox(m_metrics, node.label);
  if (node.kind == NodeKind::Apply)
    return {std::max(48.0, (text.width() + 8) * kEllipseFactor),
            (text.height() + 4) * kEllipseFactor};
  return {std::max(30.0, text.width() + 16), text.height() + 10};
}

QSizeF ItemSizes::badgedNode(const ViewNode& node, const std::vector<QString>& rows) const {
  const QSizeF text = textBox(m_metrics, node.label);
  double width = text.width() + 16;
  for (const QString& row : rows)
    width = std::max(width, m_small.horizontalAdvance(row) + kBadgeMark + 16);
  return {std::ceil(std::max(48.0, width)),
          std::ceil(text.height() + 10 + double(rows.size()) * badgeRowHeight() + 3)};
}

std::vector<QRectF> ItemSizes::badgeRows(const QRectF& rect, int count) const {
  std::vector<QRectF> rows;
  const double h = badgeRowHeight();
  for (int i = 0; i < count; ++i)
    rows.emplace_back(rect.left() + 3, rect.bottom() - 3 - (count - i) * h, rect.width() - 6, h);
  return rows;
}

QSizeF ItemSizes::collapsedGroup(const Group& group) const {
  const QSizeF name = textBox(m_metrics, group.name);
  const QSizeF note = textBox(m_small, QStringLiteral("%1 nodes").arg(group.totalNodes));
  return {std::max({60.0, name.width(), note.width()}) + 20, name.height() + note.height() + 12};
}

QSizeF ItemSizes::expandedGroup(const Group& group, QSizeF inner) const {
  const double title = textBox(m_metrics, group.name).width() + 12;
  return {std::max(inner.width(), title) + 2 * kMargin,
          inner.height() + m_titleHeight + 2 * kMargin};
}

QSizeF ItemSizes::edgeLabel(const QString& label) const {
  if (label.isEmpty()) return {};
  const QSizeF text = textBox(m_small, label);
  return {text.width() + 4, text.height() + 2};
}

}  // namespace tscope::vis::layout

#pragma once
// ItemSizes: the size of every kind of level item, measured with Qt's font metrics (dot gets them
// as fixedsize nodes). The fonts mirror the scene's: the layout font for labels and titles, the
// small font (85 %, at least 6 pt) for edge labels and a collapsed group's "N nodes" line.
// QFontMetricsF is usable off the GUI thread, so this runs on the layout worker.

#include "visualizers/model/view_model.h"

#include <QFont>
#include <QFontMetricsF>
#include <QRectF>
#include <QSizeF>

#include <vector>

namespace tscope::vis::layout {

class ItemSizes {
 public:
  explicit ItemSizes(const QFont& font);

  QSizeF node(const ViewNode& node) const;  // ellipse for an Apply, box for a variable
  // An Apply with parameter badges (Note [Parameters]): a box with the label on top and one row
  // per badge under it (a colour mark, then the badge text in the small font).
  QSizeF badgedNode(const ViewNode& node, const std::vector<QString>& rows) const;
  // The rows' rects inside a badged node's `rect`, top to bottom; the label goes above the first.
  std::vector<QRectF> badgeRows(const QRectF& rect, int count) const;
  double badgeRowHeight() const { return m_small.height() + 4; }
  static constexpr double kBadgeMark = 8;           // the side of a row's colour mark
  QSizeF collapsedGroup(const Group& group) const;  // name + "N nodes"
  // An expanded group drawn as a cluster around its own layout of size `inner`.
  QSizeF expandedGroup(const Group& group, QSizeF inner) const;
  QSizeF port() const { return {kPortSize, kPortSize}; }
  QSizeF edgeLabel(const QString& label) const;

  double margin() const { return kMargin; }
  double titleHeight() const { return m_titleHeight; }

  static QFont smallFont(const QFont& font);

 private:
  static constexpr double kMargin = 10;  // between a cluster's border and its contents
  static constexpr double kPortSize = 10;
  QSizeF textBox(const QFontMetricsF& metrics, const QString& text) const;

  QFontMetricsF m_metrics;
  QFontMetricsF m_small;
  double m_titleHeight;
};

}  // namespace tscope::vis::layout

#pragma once
// HistogramWidget: the bars of a ValueStats histogram (finite values only), with the range under
// the bars and the excluded NaN/Inf counts beside it; hovering a bar tells its range and count.

#include "gui/app/inspector/value_stats.h"

#include <QWidget>

namespace tscope::gui {

class HistogramWidget : public QWidget {
  Q_OBJECT

 public:
  explicit HistogramWidget(QWidget* parent = nullptr);

  void setStats(const ValueStats& stats);
  void clear();
  const ValueStats& stats() const { return m_stats; }
  // The bar under a widget position, -1 when none (hover and tests).
  int barAt(QPoint pos) const;
  // "[low, high): count" for bar `bin`.
  QString barText(int bin) const;

  QSize sizeHint() const override { return {320, 140}; }
  QSize minimumSizeHint() const override { return {160, 90}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  QRect plotRect() const;

  ValueStats m_stats;
};

}  // namespace tscope::gui

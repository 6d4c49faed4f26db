#pragma once
// TimelineWidget: the profile's timeline (timeline_data.h), painted by hand: one track per thread
// (per GPU stream with GPU records), runs, scopes as enclosing bars and node calls as bars
// coloured like the graph's heat map. The wheel zooms around the cursor, a drag pans, hovering
// shows a bar's details, a click selects a bar's node (nodeClicked) and a shift-drag selects a
// time range (rangeSelected; Escape or clearRange() clears it), which the window uses to filter
// the tables and the heat map (Note [Profile time ranges] in profile_view.h).
//
//   auto* t = new TimelineWidget;
//   t->setData(TimelineData::build(profile, graph), profile);
//   t->setNodeColors(heat.nodeColors);
//   connect(t, &TimelineWidget::rangeSelected, ...);
//
// MemoryChart: live bytes over the same time axis (setViewRange follows the timeline), the peak
// marked.

#include "gui/app/profile/profile_view.h"
#include "gui/app/profile/timeline_data.h"

#include <QColor>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

namespace tscope::gui {

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kRowHeight = 18;
  static constexpr int kHeaderWidth = 120;  // the track names
  static constexpr int kAxisHeight = 20;

  explicit TimelineWidget(QWidget* parent = nullptr);
  void setData(std::shared_ptr<const TimelineData> data,
               std::shared_ptr<const prof::Profile> profile);
  const std::shared_ptr<const TimelineData>& data() const { return m_data; }
  void setNodeColors(std::vector<QColor> colors);  // by profile node

  // The visible time span (ns from the profile's origin).
  TimeRange viewRange() const { return {m_viewStart, m_viewEnd}; }
  void setViewRange(TimeRange range);
  void zoomBy(double factor, double anchorX);  // > 1 zooms in
  void showAll();
  void showRun(int run);  // zooms to a measured run; -1 shows all

  std::optional<TimeRange> range() const { return m_range; }
  void setRange(std::optional<TimeRange> range);  // emits rangeSelected / rangeCleared
  void clearRange() { setRange(std::nullopt); }

  int selectedNode() const { return m_selectedNode; }
  void setSelectedNode(int profileNode);  // highlights its bars; no signal
  // Geometry, for tests and the hover text: the bar under a point (-1: none) and a bar's rect.
  int barAt(QPoint pos) const;
  QRectF barRect(int bar) const;
  QString barText(int bar) const;
  double xOf(std::int64_t ns) const;
  std::int64_t timeAt(double x) const;
  QSize sizeHint() const override;

 signals:
  void nodeClicked(int profileNode);
  void runClicked(int run);
  void rangeSelected(tscope::gui::TimeRange range);
  void rangeCleared();
  void viewChanged(tscope::gui::TimeRange range);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  std::shared_ptr<const TimelineData> m_data;
  std::shared_ptr<const prof::Profile> m_profile;
  std::vector<QColor> m_colors;
  std::int64_t m_viewStart = 0, m_viewEnd = 1;
  std::optional<TimeRange> m_range;
  int m_selectedNode = -1;
  enum class Drag { None, Pan, Range } m_drag = Drag::None;
  QPoint m_pressPos;
  std::int64_t m_pressViewStart = 0, m_pressTime = 0;
  bool m_moved = false;
};

class MemoryChart : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void setData(std::shared_ptr<const TimelineData> data);
  void setViewRange(TimeRange range);
  void setRange(std::optional<TimeRange> range);  // drawn shaded, as on the timeline
  QString peakText() const;                       // "peak 12.3 MiB after Gemm #4 (run 0)"
  QSize sizeHint() const override;
  void setProfile(std::shared_ptr<const prof::Profile> profile) { m_profile = std::move(profile); }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::shared_ptr<const TimelineData> m_data;
  std::shared_ptr<const prof::Profile> m_profile;
  TimeRange m_view{0, 1};
  std::optional<TimeRange> m_range;
};

}  // namespace tscope::gui

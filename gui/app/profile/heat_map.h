#pragma once
// The profiler's heat map: a decoration layer ("profile", visualizers/scene/decorations.h) that
// fills each profiled node with the colour of one metric, collapsed groups with their inclusive
// value, adds the figures to each tooltip ("Time: 1.2 ms (14 %), p95 1.4 ms, 38 GFLOP/s, 61 % of
// roofline") and a legend row; and its diff mode, colouring each node by the change between two
// profiles (blue faster, red slower).
//
//   HeatMap h = buildHeatMap(*view, {.metric = HeatMetric::P95, .scale = HeatScale::Perceptual});
//   pane->setDecorations("profile", h.decorations, kProfileLayerZ);
//
// Note [Heat map scales]: a metric's colour is linear in its value over the largest value of the
// nodes (REFERENCE.md's heat map: the slowest node gets the darkest of eight steps), in eight
// steps of either REFERENCE.md's reds or a perceptual scale (viridis from yellow to blue, light
// enough for the black labels). Collapsed groups compare with each other: their inclusive value
// over the largest group's. A node without the metric (no roofline without calibration, a node
// that never ran) keeps its family colour. Everything here is pure data: build it on a worker.

#include "gui/app/profile/profile_view.h"
#include "profiling/profile_diff.h"
#include "visualizers/scene/decorations.h"

#include <QColor>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

namespace tscope::gui {

enum class HeatMetric { Time, Share, Mean, P95, Gflops, Roofline, OutputBytes, AllocatedBytes };
inline constexpr int kHeatMetricCount = 8;
// "Time", "Share of the run", "Mean per call", "p95", "GFLOP/s", "Roofline fraction",
// "Output bytes", "Allocated bytes".
QString heatMetricName(HeatMetric metric);
enum class HeatScale { Reds, Perceptual };

inline constexpr int kProfileLayerZ = 10;  // above the debugger's layer (z 0)

struct HeatOptions {
  HeatMetric metric = HeatMetric::Time;
  HeatScale scale = HeatScale::Reds;
};

// The eight colours of a scale, low to high, and the colour of a fraction in [0, 1].
std::vector<QColor> heatScaleSteps(HeatScale scale);
QColor heatScaleColor(HeatScale scale, double fraction);

// What one node measured, per measured run (Note [Self and total time] in profiling/aggregate.h).
struct NodeFigures {
  bool ran = false;
  double self = 0, total = 0, share = 0;  // share: self over the time in nodes
  double mean = 0, p95 = 0;               // per call; p95 of the per-run time
  bool roofKnown = false;
  double gflops = 0, roofFraction = 0;
  double flops = 0, boundSeconds = 0;  // per run, for groups' sums
  double outputBytes = 0, allocatedBytes = 0;
};
NodeFigures figuresOf(const ProfileView& view, int profileNode);
// The metric's value; NaN when the node has none.
double metricValue(const NodeFigures& figures, HeatMetric metric);
QString formatMetric(HeatMetric metric, double value);
// "Time: 1.2 ms (14 %), p95 1.4 ms, 38 GFLOP/s, 61 % of roofline" (the roofline part when known).
QString heatTooltip(const NodeFigures& figures);

struct HeatMap {
  std::shared_ptr<const vis::Decorations> decorations;
  std::vector<QColor> nodeColors;  // by profile node (the timeline's bars); invalid: none
  double maxNode = 0, maxGroup = 0;
};
HeatMap buildHeatMap(const ProfileView& view, const HeatOptions& options);

// Diff mode: `view` (the profile drawn, side B) against `diff` (prof::diffProfiles with B as its
// second side). Each node of B is coloured by its row's change: log2(B / A) over [-2, 2] (4x
// faster to 4x slower) on nine steps from blue through white to red; a node added in B is the
// darkest red. Groups sum their rows' times on both sides.
std::vector<QColor> diffScaleSteps();  // nine, fastest first
QColor diffColor(double secondsA, double secondsB);
HeatMap buildDiffMap(const ProfileView& view, const prof::ProfileDiff& diff);

}  // namespace tscope::gui

Q_DECLARE_METATYPE(tscope::gui::HeatOptions)

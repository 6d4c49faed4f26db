#pragma once
// What the window's profiler shows, as immutable snapshots built on workers:
// - ProfileSnapshot: one profile (measured in the window or read from a .tsg) with the graph its
//   node ids refer to and the view model a pane draws it on;
// - ProfileView: a snapshot seen over the whole run or over a time range of its timeline, with its
//   tables (profiling/aggregate.h), the machine's peaks and the map from profile nodes to the
//   view model's nodes.
//
//   auto snapshot = std::make_shared<ProfileSnapshot>(...);
//   std::shared_ptr<const ProfileView> all = ProfileView::make(snapshot);
//   std::shared_ptr<const ProfileView> part = ProfileView::make(snapshot, TimeRange{a, b});
//   part->tables.applies[0];  // the slowest node in [a, b)
//
// Note [Profile time ranges]: a range of the timeline (Perfetto's area selection, Hotspot's time
// filter) is a Profile of its own: each node's calls are its events that overlap the range, each
// clipped to it; its time per run sums the clipped durations of the runs that overlap the range,
// and measuredRuns counts those runs, so every table and share reads "per run" as for the whole
// profile. Events dropped by the capture budget are not in any range.

#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"
#include "profiling/aggregate.h"
#include "profiling/calibration.h"
#include "profiling/profile.h"
#include "visualizers/model/view_model.h"

#include <QMetaType>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tscope::gui {

struct TimeRange {
  std::int64_t startNs = 0, endNs = 0;  // from Profile::originNs; start < end
  bool operator==(const TimeRange&) const = default;
};

struct ProfileSnapshot {
  std::shared_ptr<const prof::Profile> profile;
  // The graph the profile's ids refer to (null for a profile of a file whose graph is missing)
  // and the rewrite log from the original graph to it (empty for a profile of the original).
  std::shared_ptr<const engine::FunctionGraph> graph;
  std::vector<engine::RewriteRecord> rewrites;
  std::shared_ptr<const vis::ViewModel> model;  // of `graph`: what the heat map is drawn on
  QString label;                                // "mlp.tsg (fast_run)"
  bool fromFile = false;                        // read from the open document
};

struct ProfileView {
  std::shared_ptr<const ProfileSnapshot> snapshot;
  std::shared_ptr<const prof::Profile> profile;  // the snapshot's, or the range's
  std::optional<TimeRange> range;
  prof::Tables tables;
  std::optional<prof::Calibration> calibration;  // the profile's peaks, when it has them
  std::vector<int> viewNode;                     // by profile node: ViewModel node, -1 when none
  std::unordered_map<int, int> profileNode;      // by ViewModel node: profile node

  // Pure data: call it on a worker.
  static std::shared_ptr<const ProfileView> make(std::shared_ptr<const ProfileSnapshot> snapshot,
                                                 std::optional<TimeRange> range = std::nullopt);
  const prof::Profile& full() const { return *snapshot->profile; }
};

// The ViewModel node of each profile node: outer nodes by Apply id, nodes of OpFromGraph bodies
// through their frame path (the OpFromGraph groups of the model); -1 for what the model does not
// draw (an IfElse branch's nodes).
std::vector<int> mapProfileNodes(const prof::Profile& profile, const vis::ViewModel& model);

// Note [Profile time ranges].
prof::Profile restrictToRange(const prof::Profile& profile, TimeRange range);

// The time the timeline spans: from the first run's start to the last run's end (events when
// there are no runs); {0, 0} when the profile has no events.
TimeRange timelineSpan(const prof::Profile& profile);

// A profile node named as the report names it: "12", or "3/12" for node 12 of node 3's frame.
QString profileNodeName(const prof::NodeProfile& node);

}  // namespace tscope::gui

Q_DECLARE_METATYPE(tscope::gui::TimeRange)

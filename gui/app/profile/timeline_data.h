#pragma once
// The timeline's and the memory chart's data, built from a Profile on a worker (pure data):
// tracks (one per thread; one per GPU stream when the profile has GPU records), bars (the runs,
// the scopes enclosing consecutive nodes, the node calls, GPU records) and the memory over time
// with its peak and the nodes whose outputs are alive at the peak.
//
//   std::shared_ptr<const TimelineData> t = TimelineData::build(profile, graph.get());
//   t->bars[i].node;   // profile node of a node bar
//   t->memory.peak;    // index into memory.points
//
// Note [Timeline rows]: each thread's track has row 0 for the runs ("run 3"), rows 1..D for the
// scope levels (the scope "a/b" encloses the maximal stretch of consecutive top-level calls whose
// scopes start with it, as the Chrome trace nests them, Note [Trace layout] in profiling/trace.h),
// then one row per frame depth for the node calls (a node of an OpFromGraph body lies under its
// caller's bar). A GPU stream's track has one row.

#include "engine/graph/function_graph.h"
#include "profiling/profile.h"

#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

namespace tscope::gui {

struct TimelineTrack {
  QString name;  // "CPU thread 0", "GPU 0 stream 7"
  int rows = 1;
  int firstRow = 0;  // rows of the tracks above it
};

struct TimelineBar {
  enum class Kind : std::uint8_t { Run, Scope, Node, Gpu };
  Kind kind = Kind::Node;
  int track = 0, row = 0;  // row within the track
  std::int64_t startNs = 0, endNs = 0;
  int node = -1;  // profile node (Node, Gpu bars; -1 for unattributed GPU records)
  int run = 0;
  QString label;  // the run's, the scope's or the GPU record's name; nodes use the op
};

struct MemoryPoint {
  std::int64_t timeNs = 0;  // the end of the node call
  std::int64_t liveBytes = 0;
  int node = -1;  // the call's profile node
  int run = 0;
};

struct MemoryData {
  std::vector<MemoryPoint> points;  // in time order; empty when memory was not measured
  int peak = -1;                    // index of the highest point
  // The profile nodes whose created outputs are alive at the peak: they ran before it in its run
  // and a node reading them runs after it (or the output is a graph output). Needs the graph.
  std::vector<int> aliveAtPeak;
  bool aliveKnown = false;  // false without the graph
};

struct TimelineData {
  std::vector<TimelineTrack> tracks;
  std::vector<TimelineBar> bars;  // by track, row, start
  int totalRows = 0;
  std::int64_t startNs = 0, endNs = 0;
  MemoryData memory;

  // `graph` (may be null) is the graph the profile's ids refer to, for aliveAtPeak.
  static std::shared_ptr<const TimelineData> build(const prof::Profile& profile,
                                                   const engine::FunctionGraph* graph);
};

}  // namespace tscope::gui

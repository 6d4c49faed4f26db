#pragma once
// Chrome trace export: a Profile's timeline as Trace Event Format JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open (docs/profiling.md, "Trace").
//
//   prof::writeChromeTrace(profile, "trace.json", {.runs = {0, 9}});
//
// Note [Trace layout]: one process per device ("CPU", pid 1), one track per thread (tid = the
// event's thread + 1). On each track, per written run: a "run N" slice enclosing the run; scope
// slices ("encoder", "encoder/layer1", ...) enclosing each maximal stretch of consecutive
// top-level nodes that share that scope prefix, nested by scope level; then one complete event
// ("ph": "X") per node call, named by its op, with args {"node", "framePath", "scope", "inputs",
// "run"}; an inner node lies inside its caller node's slice. Slices on a track nest (none overlaps
// another partially), which Perfetto needs to draw them as a stack. Counters ("ph": "C") give the
// live bytes after each node when memory was measured. Timestamps are microseconds from the
// profile's origin with 3 decimals (nanosecond resolution).

#include "profiling/profile.h"

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tscope::prof {

struct TraceOptions {
  std::vector<std::int32_t> runs;  // measured runs to write (empty: every kept run)
  bool memoryCounters = true;
};

// Throws std::invalid_argument when `options.runs` names a run the profile does not have.
nlohmann::json chromeTrace(const Profile& profile, const TraceOptions& options = {});
// Writes the trace atomically (a temporary next to `path`, then renamed), streaming the events
// rather than building the whole document in memory. Throws std::runtime_error naming the path
// and the reason when it cannot be written.
void writeChromeTrace(const Profile& profile, const std::string& path,
                      const TraceOptions& options = {});
// Calls `event` for each trace event in the order they are written (what both functions above
// use); returns the document's other members ({"displayTimeUnit", "otherData"}).
nlohmann::json forEachTraceEvent(const Profile& profile, const TraceOptions& options,
                                 const std::function<void(const nlohmann::json&)>& event);

}  // namespace tscope::prof

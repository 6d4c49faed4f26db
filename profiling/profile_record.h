#pragma once
// ProfileRecord: a per-node time profile as a .tsg document keeps it in its "profiles" array,
//   {"kind": "time", "graph": "original"|"optimized" (optional), "seconds": S (optional),
//    "nodes": [{"id": APPLY_ID, "seconds": S}, ...]}
// (docs/tsg-format.md). The heat-map export colours a graph with one; the profiler writes them.
//
// Reading is strict about the records it recognises (a profile with a "nodes" array) and names the
// JSON path of what does not fit: "/profiles/2/nodes/5/seconds: expected a number of seconds (>=
// 0), found the string \"fast\"". Other profiles (the rewriter's) are left to their readers.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tscope::prof {

// A record that does not fit the schema; the message starts with its JSON path.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a JSON value is, for messages: "the string \"fast\"", "an object", "an array of 3",
// "null", "-1".
std::string describeJsonValue(const nlohmann::json& value);
// Throws ProfileError "PATH: expected EXPECTED, found <describeJsonValue(found)>".
[[noreturn]] void failAt(const std::string& path, const std::string& expected,
                         const nlohmann::json& found);

// The time one node (an Apply, by its id in the profiled graph) took in the profiled call(s).
struct NodeTime {
  std::int64_t id = 0;
  double seconds = 0;
  bool operator==(const NodeTime&) const = default;
};

struct ProfileRecord {
  std::optional<std::string> graph;  // "original" or "optimized"; unset: not said
  std::optional<double> seconds;     // the call's time; unset: the nodes' times are all there is
  std::vector<NodeTime> nodes;       // in the order recorded; an id may repeat (times add up)

  // The time the nodes' shares are relative to: `seconds` when set and positive, else the sum of
  // the nodes' times.
  double totalSeconds() const;

  // Whether `value` is a record of this kind: an object with a "nodes" array and a "kind" of
  // "time" or none (files written before "kind" existed still load).
  static bool recognises(const nlohmann::json& value);
  // Throws ProfileError naming `jsonPath` (the value's JSON pointer, e.g. "/profiles/0") or the
  // path below it that does not fit.
  static ProfileRecord fromJson(const nlohmann::json& value, const std::string& jsonPath);
  nlohmann::json toJson() const;

  bool operator==(const ProfileRecord&) const = default;
};

// The first record in a document's "profiles" array (at `jsonPath`, default "/profiles") that
// holds per-node times of `graph` (a time record, or a full profile, {"kind": "profile"}, whose
// top-level nodes give their mean time per run, profile_io.h) ("original" or "optimized"; a record
// that names no graph fits either) and at least one node; nullopt when there is none. Throws
// ProfileError for a recognised record that does not fit, even one of another graph.
std::optional<ProfileRecord> firstNodeTimes(const nlohmann::json& profiles,
                                            const std::string& graph,
                                            const std::string& jsonPath = "/profiles");

}  // namespace tscope::prof

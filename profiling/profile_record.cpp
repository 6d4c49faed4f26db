#include "profiling/profile_record.h"

#include "profiling/profile_io.h"

namespace tscope::prof {

std::string describeJsonValue(const nlohmann::json& v) {
  if (v.is_string())
    return "the string " + v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array of " + std::to_string(v.size());
  if (v.is_null()) return "null";
  return v.dump();
}

void failAt(const std::string& path, const std::string& expected, const nlohmann::json& found) {
  throw ProfileError(path + ": expected " + expected + ", found " + describeJsonValue(found));
}

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& expected,
                       const nlohmann::json& found) {
  failAt(path, expected, found);
}

double secondsAt(const nlohmann::json& v, const std::string& path) {
  if (!v.is_number() || !(v.get<double>() >= 0)) fail(path, "a number of seconds (>= 0)", v);
  return v.get<double>();
}

}  // namespace

double ProfileRecord::totalSeconds() const {
  if (seconds && *seconds > 0) return *seconds;
  double sum = 0;
  for (const NodeTime& n : nodes) sum += n.seconds;
  return sum;
}

bool ProfileRecord::recognises(const nlohmann::json& value) {
  if (!value.is_object() || !value.contains("nodes") || !value["nodes"].is_array()) return false;
  auto kind = value.find("kind");
  return kind == value.end() || *kind == "time";
}

ProfileRecord ProfileRecord::fromJson(const nlohmann::json& value, const std::string& jsonPath) {
  if (!value.is_object()) fail(jsonPath, "a profile object", value);
  ProfileRecord record;
  if (auto kind = value.find("kind"); kind != value.end() && *kind != "time")
    fail(jsonPath + "/kind", "\"time\" (a per-node time profile)", *kind);
  if (auto graph = value.find("graph"); graph != value.end()) {
    if (*graph != "original" && *graph != "optimized")
      fail(jsonPath + "/graph", "\"original\" or \"optimized\"", *graph);
    record.graph = graph->get<std::string>();
  }
  if (auto seconds = value.find("seconds"); seconds != value.end())
    record.seconds = secondsAt(*seconds, jsonPath + "/seconds");
  auto nodes = value.find("nodes");
  if (nodes == value.end())
    throw ProfileError(jsonPath + ": a per-node time profile needs \"nodes\"");
  if (!nodes->is_array())
    fail(jsonPath + "/nodes", "an array of {\"id\": integer, \"seconds\": number}", *nodes);
  record.nodes.reserve(nodes->size());
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const nlohmann::json& entry = (*nodes)[i];
    const std::string at = jsonPath + "/nodes/" + std::to_string(i);
    if (!entry.is_object()) fail(at, "{\"id\": integer, \"seconds\": number}", entry);
    auto id = entry.find("id");
    if (id == entry.end())
      throw ProfileError(at + ": a node's time needs \"id\" (the node's Apply id)");
    if (!id->is_number_integer()) fail(at + "/id", "an integer Apply id", *id);
    auto seconds = entry.find("seconds");
    if (seconds == entry.end()) throw ProfileError(at + ": a node's time needs \"seconds\"");
    record.nodes.push_back({id->get<std::int64_t>(), secondsAt(*seconds, at + "/seconds")});
  }
  return record;
}

nlohmann::json ProfileRecord::toJson() const {
  nlohmann::json out = {{"kind", "time"}};
  if (graph) out["graph"] = *graph;
  if (seconds) out["seconds"] = *seconds;
  nlohmann::json list = nlohmann::json::array();
  for (const NodeTime& n : nodes) list.push_back({{"id", n.id}, {"seconds", n.seconds}});
  out["nodes"] = std::move(list);
  return out;
}

std::optional<ProfileRecord> firstNodeTimes(const nlohmann::json& profiles,
                                            const std::string& graph, const std::string& jsonPath) {
  if (!profiles.is_array()) return std::nullopt;
  std::optional<ProfileRecord> found;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (isProfileJson(profiles[i])) {
      // A full profile (profile_io.h): its top-level nodes' mean time per run.
      Profile full = profileFromJson(profiles[i], jsonPath + "/" + std::to_string(i));
      ProfileRecord record;
      record.graph = full.graph;
      if (full.function.call.count > 0) record.seconds = full.function.call.mean;
      for (const NodeProfile& n : full.nodes)
        if (n.framePath.empty() && n.time.count > 0) record.nodes.push_back({n.id, n.time.mean});
      if (!found && *record.graph == graph && !record.nodes.empty()) found = std::move(record);
      continue;
    }
    if (!ProfileRecord::recognises(profiles[i])) continue;
    ProfileRecord record = ProfileRecord::fromJson(profiles[i], jsonPath + "/" + std::to_string(i));
    if (!found && (!record.graph || *record.graph == graph) && !record.nodes.empty())
      found = std::move(record);
  }
  return found;
}

}  // namespace tscope::prof

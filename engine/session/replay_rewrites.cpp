#include "engine/session/replay_rewrites.h"

#include "engine/graph/feature.h"

#include <limits>
#include <string>

namespace tscope::engine::session {

namespace {

// Unwinds the optimizer once the wanted number of records exists. Deliberately not derived from
// std::exception: the optimizer catches std::exception from rewriters to warn and go on
// (rewrite_db.cpp, runEquilibrium), and this signal must pass through those handlers.
struct ReplayStop {};

// Note [Stopping a replay]: the stop is raised when the change *after* the k-th record begins, not
// when the k-th ends (onChangeEnd runs in a destructor, where throwing terminates). At that moment
// the k-th change is complete and the next one has not touched the graph, so the graph is
// consistent; only its change bracket is left open, which is why replayRewrites hands out a clone.
class StopAfterRecords final : public Feature {
 public:
  StopAfterRecords(const RewriteRecorder& recorder, std::size_t steps)
      : m_recorder(recorder), m_steps(steps) {}
  void onChangeBegin(FunctionGraph&, std::string_view) override {
    if (m_recorder.records().size() >= m_steps) throw ReplayStop{};
  }

 private:
  const RewriteRecorder& m_recorder;
  std::size_t m_steps;
};

std::string describeRecord(const RewriteRecord& r) {
  return "record " + std::to_string(r.order) + " (" + (r.phase.empty() ? "no phase" : r.phase) +
         ", " + r.reason + ", " + std::to_string(r.removedNodes.size()) + " removed, " +
         std::to_string(r.addedNodes.size()) + " added)";
}

std::set<std::string> stringSet(const nlohmann::json& q, const char* key) {
  std::set<std::string> out;
  if (!q.contains(key)) return out;
  const nlohmann::json& list = q.at(key);
  if (!list.is_array())
    throw ReplayError(std::string("the recorded rewrite query's \"") + key +
                      "\" is not a list of tags");
  for (const auto& tag : list) {
    if (!tag.is_string())
      throw ReplayError(std::string("the recorded rewrite query's \"") + key +
                        "\" holds a non-string tag: " + tag.dump());
    out.insert(tag.get<std::string>());
  }
  return out;
}

}  // namespace

std::unique_ptr<FunctionGraph> replayRewrites(const FunctionGraph& original,
                                              const RewriteQuery& query, std::size_t steps,
                                              std::vector<RewriteRecord>* log) {
  if (log) log->clear();
  std::unique_ptr<FunctionGraph> graph = original.clone();
  if (steps == 0) return graph;
  // The same set-up as optimizeDocument: a clone with a recorder attached first.
  auto recorder = std::make_shared<RewriteRecorder>();
  graph->attachFeature(recorder);
  graph->attachFeature(std::make_shared<StopAfterRecords>(*recorder, steps));
  bool stopped = false;
  try {
    optimize(*graph, query);
  } catch (const ReplayStop&) {
    stopped = true;
  }
  if (log) *log = recorder->takeRecords();
  // What the optimizer left attached (the recorder, the DestroyHandler of the inplace phase) goes:
  // a stop between a change that validation refused and its revert leaves a graph whose
  // destroy orderings have a cycle, and the caller wants the structure as it was, not a verdict.
  const std::vector<std::shared_ptr<Feature>> attached = graph->features();
  for (auto it = attached.rbegin(); it != attached.rend(); ++it) graph->detachFeature(**it);
  return stopped ? graph->clone() : std::move(graph);  // Note [Stopping a replay]
}

nlohmann::json rewriteQueryJson(const RewriteQuery& query) {
  return {{"include", query.include}, {"exclude", query.exclude}};
}

std::optional<RewriteQuery> recordedRewriteQuery(const nlohmann::json& profiles) {
  if (!profiles.is_array()) return std::nullopt;
  for (const auto& p : profiles) {
    if (!p.is_object() || p.value("kind", "") != "rewriter" || !p.contains("query")) continue;
    const nlohmann::json& q = p.at("query");
    if (!q.is_object())
      throw ReplayError("the recorded rewrite query is not an object: " + q.dump());
    RewriteQuery query;
    if (q.contains("mode")) {
      if (!q.at("mode").is_string())
        throw ReplayError("the recorded rewrite query's \"mode\" is not a string");
      try {
        query = RewriteQuery::forMode(q.at("mode").get<std::string>());
      } catch (const std::invalid_argument& e) {
        throw ReplayError(std::string("the recorded rewrite query: ") + e.what());
      }
    }
    for (auto& tag : stringSet(q, "include")) query.include.insert(tag);
    for (auto& tag : stringSet(q, "exclude")) query.exclude.insert(tag);
    return query;
  }
  return std::nullopt;
}

bool sameChange(const RewriteRecord& a, const RewriteRecord& b) {
  return a.order == b.order && a.phase == b.phase && a.reason == b.reason &&
         a.replaced == b.replaced && a.addedNodes == b.addedNodes &&
         a.removedNodes == b.removedNodes;
}

RewriteQuery checkedReplayQuery(const FunctionGraph& original,
                                const std::vector<RewriteRecord>& log,
                                const nlohmann::json& profiles) {
  const std::optional<RewriteQuery> recorded = recordedRewriteQuery(profiles);
  RewriteQuery query = recorded ? *recorded : RewriteQuery::forMode("fast_run");
  std::vector<RewriteRecord> replayed;
  (void)replayRewrites(original, query, std::numeric_limits<std::size_t>::max(), &replayed);
  const std::string what =
      "the rewrite log was recorded with another optimizer; stepping is unavailable: ";
  const std::string assumed =
      recorded ? "" : " (the file does not say which query made it; fast_run was assumed)";
  if (replayed.size() != log.size())
    throw ReplayError(what + "the log has " + std::to_string(log.size()) +
                      " records, the replay made " + std::to_string(replayed.size()) + assumed);
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (!sameChange(log[i], replayed[i]))
      throw ReplayError(what + "the log's " + describeRecord(log[i]) + " was replayed as " +
                        describeRecord(replayed[i]) + assumed);
  }
  return query;
}

}  // namespace tscope::engine::session

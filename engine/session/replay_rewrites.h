#pragma once
// Replaying the optimizer: the rewrite log holds ids only, so "the graph as it was after k
// rewrites" is rebuilt by re-running the optimizer on a clone of the original graph and stopping
// it right after the k-th recorded change. This relies on the optimizer being deterministic
// (same graph + same query -> same changes, same ids, same order), which the tests check by
// replaying to the end and comparing with the saved optimized graph and log.

#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/rewrite/rewrite_db.h"

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <vector>

namespace tscope::engine::session {

// Stepping through a log is impossible (the log does not come from this optimizer, ...).
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The graph after the first `steps` records of optimizing `original` with `query` (0: a copy of
// the original; steps >= the number of records: the fully optimized graph). The copy has the ids
// the optimizer gave its nodes, so the log's ids refer to it. `log` (optional) receives the
// records made up to the stop (seconds differ from run to run; everything else is reproducible).
std::unique_ptr<FunctionGraph> replayRewrites(const FunctionGraph& original,
                                              const RewriteQuery& query, std::size_t steps,
                                              std::vector<RewriteRecord>* log = nullptr);

// {"include": [...], "exclude": [...]}: what optimizeDocument stores in the rewriter profile.
nlohmann::json rewriteQueryJson(const RewriteQuery& query);
// The query stored in the rewriter profile of `profiles` ("query": {"mode"?, "include",
// "exclude"}; a mode is expanded with RewriteQuery::forMode and the lists are added to it);
// nullopt when no rewriter profile records one. Throws ReplayError for a malformed query.
std::optional<RewriteQuery> recordedRewriteQuery(const nlohmann::json& profiles);

// Two records describe the same change: everything but the time equal.
bool sameChange(const RewriteRecord& a, const RewriteRecord& b);

// The query to replay `log` with: the recorded one, else fast_run. Replays the whole log once
// and throws ReplayError ("the rewrite log was recorded with another optimizer; stepping is
// unavailable: ...", naming the first record that differs) when the replay does not reproduce it.
RewriteQuery checkedReplayQuery(const FunctionGraph& original,
                                const std::vector<RewriteRecord>& log,
                                const nlohmann::json& profiles);

}  // namespace tscope::engine::session

#pragma once
// What compile keeps about an inner graph it optimized (an OpFromGraph body, an IfElse branch): the
// body as built and the rewrite log of its optimization, attached to the optimized clone that the
// child program runs (Program::ownedGraph()), so debuggers map inner nodes back to what the user
// built (engine/debug/lineage.h).
//
//   const FunctionGraph& body = child.graph();              // a child program's graph
//   if (const InnerRewriteLog* log = body.feature<InnerRewriteLog>())
//     NodeLineage lineage(body, log->records);              // as for the outer graph
//
// Note [Inner rewrite logs]: linkInnerGraph attaches a RewriteRecorder while it optimizes the
// clone, then replaces it with this feature holding the records. The body's node ids are the ids
// of the body as built (clone keeps ids, Note [Node lineage]); they are unique within the body
// only, so lookups go through the body, never through the outer graph's ids.

#include "engine/graph/feature.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"

#include <memory>
#include <vector>

namespace tscope::engine {

class InnerRewriteLog final : public Feature {
 public:
  InnerRewriteLog(std::shared_ptr<const FunctionGraph> original, std::vector<RewriteRecord> records)
      : original(std::move(original)), records(std::move(records)) {}
  // The body as built (the op's own inner graph), kept alive with the program.
  std::shared_ptr<const FunctionGraph> original;
  // Its optimization's log, in order; empty when the body ran as written (mode none).
  std::vector<RewriteRecord> records;
};

}  // namespace tscope::engine

#pragma once
// NodeLineage: relates the nodes of a graph as built (the original) to the nodes of its optimized
// graph, through the rewrite log (Function::rewriteLog()).
//
//   Function f = compile({x}, {y}, {}, {.mode = Mode::FastRun});
//   debug::NodeLineage lineage(f.graph(), f.rewriteLog());
//   lineage.optimizedNodesFor(logNodeId);   // {41}: the Composite the log was fused into
//   lineage.originalNodesFor(41);           // {12, 13, 14}: the nodes it stands for
//   lineage.reasonsFor(logNodeId);          // {"fusion/elemwise_fusion"}
//
// Note [Node lineage]: compile clones the graph keeping node ids, so an original node id is the
// id the node had before the first rewrite. Each record removes nodes and adds nodes; a removed
// node is followed to
//   1. the owners of the variables that replaced its outputs (replacedOwners, a merge or a
//      rewrite that reuses an existing variable), else
//   2. the nodes its record added (a fusion: every node of the chain maps to the Composite), else
//   3. nothing: it was removed as dead or constant-folded.
// Records are followed in order, so the mapping is transitive up to the final graph. A node added
// by a rewrite that no removed node maps to (a cast a rewrite inserted) stands for no original
// node. Inner graphs (OpFromGraph bodies) are not rewritten by compile: their ids map to
// themselves.

#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tscope::engine::debug {

class NodeLineage {
 public:
  NodeLineage(const FunctionGraph& optimized, std::span<const RewriteRecord> log);

  // The optimized-graph nodes that an original node became (itself when it survived; the
  // Composite it was fused into; empty when it was removed as dead/constant-folded), sorted.
  std::vector<std::int64_t> optimizedNodesFor(std::int64_t originalNodeId) const;
  // The original nodes an optimized node stands for (itself when it is original), sorted.
  std::vector<std::int64_t> originalNodesFor(std::int64_t optimizedNodeId) const;
  // The rewrite reasons along the way ("fusion/elemwise_fusion", ...) for messages, in order.
  std::vector<std::string> reasonsFor(std::int64_t originalNodeId) const;

  // Whether a rewrite touched the node (removed, merged or fused it).
  bool rewritten(std::int64_t originalNodeId) const;
  // Whether the node was removed without a successor (dead code, constant folding).
  bool removed(std::int64_t originalNodeId) const;
  // Whether `id` is an id the log or the optimized graph knows (an original node, or a node of
  // the optimized graph).
  bool known(std::int64_t id) const;
  // "fused into Composite{...} node 41 (fusion/elemwise_fusion)", "merged into node 7 (merge)",
  // "removed (constant_folding)", "" when the node survived untouched.
  std::string describe(std::int64_t originalNodeId) const;

 private:
  const FunctionGraph* m_graph;
  // Optimized node -> the original nodes it stands for (only for nodes a record touched).
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> m_origins;
  // Original node -> the optimized nodes it became (only for original nodes a record touched).
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> m_became;
  std::unordered_map<std::int64_t, std::vector<std::string>> m_reasons;
};

}  // namespace tscope::engine::debug

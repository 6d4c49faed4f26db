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
// node.
//
// Note [Inner lineage]: compile optimizes each inner graph (an OpFromGraph body, an IfElse
// branch) separately from the outer graph and keeps its log on the body's optimized clone
// (Note [Inner rewrite logs] in engine/compile/inner_log.h). A lineage built from the Program
// holds one lineage per body, keyed by the optimized node that runs it (nested bodies below
// theirs), each mapping between the body as built and the optimized body by the body's own node
// ids, which are unique within the body only. An inner node is therefore named by a path: the
// ids of the nodes whose bodies hold it, outermost first, then its own ("5/12": node 12 of the
// body of node 5; for an IfElse, either branch). Paths of original ids are followed step by step
// through each level's lineage (locate()).
//
//   debug::NodeLineage lineage(f.program(), f.rewriteLog());
//   lineage.locate(std::vector<std::int64_t>{5, 12});  // {{body lineage, 31}}: the Composite
//   lineage.forGraph(innerNode.fgraph())->originalNodesFor(31);

#include "engine/compile/program.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tscope::engine::debug {

class NodeLineage {
 public:
  NodeLineage(const FunctionGraph& optimized, std::span<const RewriteRecord> log);
  // The lineage of a compiled program (Function::program(), Function::rewriteLog()), with the
  // lineages of its inner graphs (Note [Inner lineage]).
  NodeLineage(const Program& program, std::span<const RewriteRecord> log);

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

  // --- Inner graphs (Note [Inner lineage]); only for a lineage built from a Program. ---
  // The optimized graph this lineage maps onto; its program (null: built from a graph).
  const FunctionGraph& optimized() const { return *m_graph; }
  const Program* program() const { return m_program; }
  // For a body's lineage, the body as built (what names, scopes and sites come from); null for
  // the outer graph's (the caller holds the graph it compiled).
  const FunctionGraph* original() const { return m_original.get(); }
  // The lineages of the bodies an optimized node runs (OpFromGraph: one; IfElse: then, else);
  // empty for another node.
  std::vector<const NodeLineage*> bodiesOf(std::int64_t optimizedNodeId) const;
  // The lineage whose optimized graph is g: this one, or a body's at any depth; null when g is
  // no graph of the program.
  const NodeLineage* forGraph(const FunctionGraph* g) const;

  struct Located {
    const NodeLineage* lineage;  // the level the node lies in (its optimized() graph holds it)
    std::int64_t node;           // an optimized node id there
  };
  // The optimized nodes a path names (callers outermost first, then the node): of original ids
  // (through each level's lineage) or, with original = false, of optimized ids. `note` (when not
  // null) receives how the last step's node was rewritten ("" when it was not). Throws
  // std::invalid_argument naming the path and the step: an unknown id, a node removed by a
  // rewrite, a caller without an inner graph (an OpFromGraph inlined into the outer graph says so).
  std::vector<Located> locate(std::span<const std::int64_t> path, bool original = true,
                              std::string* note = nullptr) const;

 private:
  void linkBodies(const Program& program);

  const FunctionGraph* m_graph;
  const Program* m_program = nullptr;
  std::shared_ptr<const FunctionGraph> m_original;
  // Optimized node -> the lineages of its bodies (shared: nodes of one op run the same bodies).
  std::unordered_map<std::int64_t, std::vector<std::shared_ptr<const NodeLineage>>> m_bodies;
  // Optimized node -> the original nodes it stands for (only for nodes a record touched).
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> m_origins;
  // Original node -> the optimized nodes it became (only for original nodes a record touched).
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> m_became;
  std::unordered_map<std::int64_t, std::vector<std::string>> m_reasons;
};

}  // namespace tscope::engine::debug

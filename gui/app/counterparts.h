#pragma once
// Counterparts: which node of one graph stands for a node of another when the second came from the
// first by rewrites (the original and optimized graphs of a document, or the graphs before and
// after one rewrite). Side-by-side mode selects a node's counterpart in the other pane with it.
//
// The optimized graph is a clone of the original (Note [Node ids]: clones keep ids), so a node
// that no rewrite touched has the same id on both sides. A variable that a rewrite replaced maps
// through the log's `replaced` pairs (old id -> new id), chained across records; backwards, a new
// variable maps to the first old one (in log order) that the other graph still has. An Apply that
// is gone maps through its outputs: the counterpart of its first output that has one.
//
// Built from the rewrite log alone (no walk over the graphs), so it is cheap; lookups are
// hash-map chases.

#include "engine/graph/function_graph.h"
#include "engine/graph/rewrite_recorder.h"

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tscope::vis {
class ViewModel;
}

namespace tscope::gui {

class Counterparts {
 public:
  Counterparts() = default;
  // `left` and `right` must outlive this object; `records` turned left into right.
  Counterparts(const engine::FunctionGraph& left, const engine::FunctionGraph& right,
               std::span<const engine::RewriteRecord> records);

  // The id (of an Apply or a Variable) in the right graph that stands for `leftId`; -1 when none.
  std::int64_t rightOf(std::int64_t leftId) const;
  // The id in the left graph that stands for `rightId`; -1 when none.
  std::int64_t leftOf(std::int64_t rightId) const;

 private:
  std::int64_t mapVariable(std::int64_t id, bool toRight) const;
  std::int64_t mapId(std::int64_t id, bool toRight) const;

  const engine::FunctionGraph* m_left = nullptr;
  const engine::FunctionGraph* m_right = nullptr;
  std::unordered_map<std::int64_t, std::int64_t> m_forward;                // old -> new
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> m_backward;  // new -> olds
};

// The ViewModel node of `to` standing for node `node` of `from`; -1 when none. `toRight` says
// which way `counterparts` maps (from = its left graph's model when true). Nodes inside an
// OpFromGraph body map to the node with the same id in the group with the same path.
int counterpartNode(const vis::ViewModel& from, int node, const vis::ViewModel& to,
                    const Counterparts& counterparts, bool toRight);

}  // namespace tscope::gui

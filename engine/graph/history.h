#pragma once
// History: records every input change so a graph can be taken back to a checkpoint.
//   History h; fg.attachFeature(h);  auto cp = h->checkpoint();  fg.replace(y, z, "r");
//   h->revert(cp);   // the graph is as it was at cp: y is used again, z's nodes are pruned

#include "engine/graph/feature.h"

#include <memory>
#include <string>
#include <vector>

namespace tscope::engine {

class History final : public Feature {
 public:
  using Checkpoint = std::size_t;

  Checkpoint checkpoint() const { return m_changes.size(); }
  // Undoes the changes made since cp, newest first. Throws GraphError for a checkpoint from the
  // future (one that a revert already passed).
  void revert(Checkpoint cp);
  std::size_t size() const { return m_changes.size(); }
  // Drops every recorded change (and the replaced subgraphs it kept alive); checkpoints taken
  // before are invalid afterwards. The rewrite driver calls it after each accepted change.
  void forget() { m_changes.clear(); }

  void onAttach(FunctionGraph& fg) override;
  void onDetach(FunctionGraph& fg) override;
  void onChangeInput(FunctionGraph& fg, Apply* node, int index, const VarPtr& oldVar,
                     const VarPtr& newVar, std::string_view reason) override;

 private:
  struct Change {
    std::shared_ptr<Apply> node;  // null for a graph output; keeps the node alive
    int index;
    VarPtr oldVar;  // keeps the replaced subgraph alive so it can come back
  };
  FunctionGraph* m_fgraph = nullptr;
  std::vector<Change> m_changes;
  bool m_reverting = false;
};

}  // namespace tscope::engine

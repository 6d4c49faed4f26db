#include "engine/graph/history.h"

#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"

namespace tscope::engine {

void History::onAttach(FunctionGraph& fg) {
  if (m_fgraph && m_fgraph != &fg) throw GraphError("History: already attached to another graph");
  m_fgraph = &fg;
}

void History::onDetach(FunctionGraph& fg) {
  m_fgraph = nullptr;
  m_changes.clear();
}

void History::onChangeInput(FunctionGraph& fg, Apply* node, int index, const VarPtr& oldVar,
                            const VarPtr& newVar, std::string_view reason) {
  if (m_reverting) return;
  m_changes.push_back(Change{node ? node->shared_from_this() : nullptr, index, oldVar});
}

void History::revert(Checkpoint cp) {
  if (!m_fgraph) throw GraphError("History::revert: the feature is not attached to a graph");
  if (cp > m_changes.size())
    throw GraphError("History::revert: checkpoint " + std::to_string(cp) + " is past the " +
                     std::to_string(m_changes.size()) + " recorded changes");
  m_reverting = true;
  try {
    while (m_changes.size() > cp) {
      Change change = std::move(m_changes.back());
      m_changes.pop_back();
      // Unchecked: oldVar may be more general than what a narrowing replacement left in the slot.
      m_fgraph->changeInputUnchecked(change.node.get(), change.index, change.oldVar, "revert");
    }
  } catch (...) {
    m_reverting = false;
    throw;
  }
  m_reverting = false;
}

}  // namespace tscope::engine

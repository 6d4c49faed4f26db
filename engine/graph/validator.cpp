#include "engine/graph/validator.h"

#include "engine/graph/errors.h"
#include "engine/graph/function_graph.h"

namespace tscope::engine {

void Validator::onAttach(FunctionGraph& fg) {
  for (const auto& f : fg.features())
    if (auto h = std::dynamic_pointer_cast<History>(f)) m_history = h;
  if (!m_history) {
    m_history = std::make_shared<History>();
    fg.attachFeature(m_history);
  }
}

void Validator::validate(const FunctionGraph& fg) const {
  try {
    fg.toposort();
  } catch (const GraphError& e) {
    throw InconsistencyError(e.what());
  }
}

bool Validator::replaceValidate(FunctionGraph& fg, std::span<const std::pair<VarPtr, VarPtr>> pairs,
                                std::string_view reason) {
  History::Checkpoint cp = m_history->checkpoint();
  fg.replaceAll(pairs, reason);
  try {
    fg.validate();
  } catch (const InconsistencyError& e) {
    m_lastError = e.what();
    m_history->revert(cp);
    return false;
  }
  m_lastError.clear();
  return true;
}

}  // namespace tscope::engine

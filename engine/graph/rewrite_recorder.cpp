#include "engine/graph/rewrite_recorder.h"

#include "engine/graph/apply.h"
#include "engine/graph/variable.h"

#include <algorithm>

namespace tscope::engine {

void RewriteRecorder::onChangeBegin(FunctionGraph&, std::string_view reason) {
  m_current = RewriteRecord{};
  m_current.phase = m_phase;
  m_current.reason = std::string(reason);
  m_start = std::chrono::steady_clock::now();
}

void RewriteRecorder::onChangeEnd(FunctionGraph&, std::string_view) {
  // A change that touched nothing (a replace of a variable by itself) leaves no record.
  if (m_current.replaced.empty() && m_current.addedNodes.empty() && m_current.removedNodes.empty())
    return;
  m_current.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  m_current.order = m_records.size();
  m_records.push_back(std::move(m_current));
  m_current = RewriteRecord{};
}

void RewriteRecorder::onImport(FunctionGraph&, Apply& node, std::string_view) {
  m_current.addedNodes.push_back(node.id());
}

void RewriteRecorder::onPrune(FunctionGraph&, Apply& node, std::string_view) {
  m_current.removedNodes.push_back(node.id());
}

void RewriteRecorder::onChangeInput(FunctionGraph&, Apply*, int, const VarPtr& oldVar,
                                    const VarPtr& newVar, std::string_view) {
  std::pair<std::int64_t, std::int64_t> pair{oldVar->id(), newVar->id()};
  if (std::find(m_current.replaced.begin(), m_current.replaced.end(), pair) ==
      m_current.replaced.end()) {
    m_current.replaced.push_back(pair);
    m_current.replacedOwners.emplace_back(oldVar->owner() ? oldVar->owner()->id() : -1,
                                          newVar->owner() ? newVar->owner()->id() : -1);
  }
}

}  // namespace tscope::engine

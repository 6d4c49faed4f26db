#pragma once
// DebugValueSource: the inspector's values of the debugger's latest pause (gui/app/inspector/
// value_source.h). It answers for variables of the graph the debugger compiled (the document's
// original graph): an output of a node the compile kept, an input or a shared value by name;
// the inspector then shows their statistics, histogram and 2-D slice.

#include "gui/app/debug/debug_controller.h"
#include "gui/app/inspector/value_source.h"

#include <memory>

namespace tscope::gui {

class DebugValueSource final : public ValueSource {
 public:
  // Set on the GUI thread, read there by valuesOf.
  void setSnapshot(std::shared_ptr<const DebugSnapshot> snapshot,
                   std::shared_ptr<const engine::debug::NodeLineage> lineage) {
    m_snapshot = std::move(snapshot);
    m_lineage = std::move(lineage);
  }
  std::vector<InspectedValue> valuesOf(const engine::Variable& variable) const override;

 private:
  std::shared_ptr<const DebugSnapshot> m_snapshot;
  std::shared_ptr<const engine::debug::NodeLineage> m_lineage;
};

}  // namespace tscope::gui

#pragma once
// DebugValueSource: the inspector's values of the debugger's latest pause (gui/app/inspector/
// value_source.h). It answers for variables of the graph the debugger compiled (the document's
// original graph): an output of a node the compile kept, an input or a shared value by name;
// the inspector then shows their statistics, histogram and 2-D slice (whose cells DebugUi makes
// editable at a pause: an edited cell becomes a setValue of that element).

#include "gui/app/debug/debug_controller.h"
#include "gui/app/inspector/value_source.h"

#include <map>
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
  // The debugger's name and frame of a value this source labelled (the inspector may prefix the
  // label, "output 0: ..."); false for another source's value.
  bool nameOf(const QString& label, QString& name, std::size_t& frame) const;

 private:
  // Labels handed out -> (name, frame), for edits from the slice table.
  mutable std::map<QString, std::pair<QString, std::size_t>> m_names;
  std::shared_ptr<const DebugSnapshot> m_snapshot;
  std::shared_ptr<const engine::debug::NodeLineage> m_lineage;
};

}  // namespace tscope::gui

#pragma once
// SearchIndex: what GraphPane's search matches against, built once per model on a worker: one
// prebuilt lowercase string per node (label, op, scope, "#id") and the node's graph id, so a
// search over 20,000 nodes is a plain substring scan that costs the GUI thread a few ms.

#include "visualizers/model/view_model.h"

#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

namespace tscope::gui {

class SearchIndex {
 public:
  static std::shared_ptr<const SearchIndex> build(const vis::ViewModel& model);

  // Nodes matching `query`, in node order: "id:12" matches the nodes whose graph id is 12; any
  // other text is a case-insensitive substring of a node's name, op, scope or "#id". Blank text
  // matches nothing.
  std::vector<int> find(const QString& query) const;
  std::size_t size() const { return m_text.size(); }

 private:
  std::vector<QString> m_text;      // per node, lowercase, fields separated by '\n'
  std::vector<std::int64_t> m_ids;  // per node: its id in its graph
};

}  // namespace tscope::gui

#pragma once
// Document: one opened file as the window shows it — an immutable snapshot built on a worker
// (DocumentLoader) and shared by the panes and docks as shared_ptr<const Document>.

#include "engine/session/graph_file.h"
#include "visualizers/model/view_model.h"

#include <QString>

#include <memory>
#include <vector>

namespace tscope::gui {

struct Document {
  QString path;  // absolute
  engine::session::GraphFileInfo info;
  std::shared_ptr<const engine::FunctionGraph> original;   // always set
  std::shared_ptr<const engine::FunctionGraph> optimized;  // null when the file has none
  std::vector<engine::RewriteRecord> rewrites;
  nlohmann::json profiles = nlohmann::json::array();
  std::shared_ptr<const vis::ViewModel> originalModel;   // built with the document
  std::shared_ptr<const vis::ViewModel> optimizedModel;  // null when no optimized graph
};

// Which graph of a document a pane shows.
enum class GraphRole { Original, Optimized };

}  // namespace tscope::gui

#pragma once
// The work behind the history dock, as plain functions for a worker thread: the graph after k
// rewrites of a document and the before/after pair of one record, each as a ViewModel, with the
// record's removed and added nodes as node indices of those models.

#include "engine/rewrite/rewrite_db.h"
#include "gui/app/document.h"

#include <QSet>

#include <memory>

namespace tscope::gui {

struct RewriteStep {
  int order = -1;
  std::shared_ptr<const vis::ViewModel> before;  // the graph after `order` rewrites
  std::shared_ptr<const vis::ViewModel> after;   // ... after `order + 1`
  QSet<int> removedNodes;                        // node indices in `before`
  QSet<int> addedNodes;                          // node indices in `after`
};

// The ViewModel of `doc`'s graph after `step` rewrites (replayed with `query`). Step 0 is the
// document's original model and step N (the log's length) its optimized model, when it has them.
std::shared_ptr<const vis::ViewModel> graphAtStep(const std::shared_ptr<const Document>& doc,
                                                  const engine::RewriteQuery& query,
                                                  std::size_t step);

// Record `order` of doc->rewrites replayed. Throws std::out_of_range for an order outside the log.
RewriteStep rewriteStep(const std::shared_ptr<const Document>& doc,
                        const engine::RewriteQuery& query, int order);

}  // namespace tscope::gui

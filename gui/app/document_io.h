#pragma once
// Documents to and from files beyond opening them (DocumentLoader does that): what File > Save As
// writes, and a new Document snapshot made from an old one with an optimized graph (Graph >
// Optimize...). Pure functions, run on workers.

#include "engine/io/tsg.h"
#include "engine/rewrite/rewrite_db.h"
#include "gui/app/document.h"

#include <QString>

#include <memory>

namespace tscope::gui {

// The .tsg document of `document`: copies of its graphs, its rewrite log and profiles.
engine::io::TsgDocument toTsgDocument(const Document& document);
// Writes `document` as a .tsg at `path` (atomically); throws std::runtime_error naming the path.
void saveDocument(const Document& document, const QString& path);
// `document` with its original graph optimized by `query` (the optimized graph, the rewrite log and
// the rewriter profile replaced; the view of the optimized graph built). Throws what the optimizer
// throws.
std::shared_ptr<const Document> optimizedDocument(const Document& document,
                                                  const engine::RewriteQuery& query);
// `document` as saved at `path` (a .tsg now).
std::shared_ptr<const Document> savedAs(const Document& document, const QString& path);

}  // namespace tscope::gui

#include "gui/app/document_io.h"

#include "engine/session/optimize_graph.h"

#include <QFileInfo>

namespace tscope::gui {

engine::io::TsgDocument toTsgDocument(const Document& document) {
  engine::io::TsgDocument doc;
  doc.original = document.original->clone();
  if (document.optimized) doc.optimized = document.optimized->clone();
  doc.rewrites = document.rewrites;
  doc.profiles = document.profiles;
  return doc;
}

void saveDocument(const Document& document, const QString& path) {
  engine::io::saveTsg(toTsgDocument(document), path.toStdString());
}

std::shared_ptr<const Document> optimizedDocument(const Document& document,
                                                  const engine::RewriteQuery& query) {
  engine::session::OptimizedGraph out = engine::session::optimizeGraph(*document.original, query);
  auto next = std::make_shared<Document>(document);
  next->optimized = std::shared_ptr<const engine::FunctionGraph>(std::move(out.graph));
  next->rewrites = std::move(out.rewrites);
  next->profiles =
      engine::session::withRewriterProfile(document.profiles, std::move(out.profileJson));
  next->optimizedModel = vis::ViewModel::build(next->optimized);
  return next;
}

std::shared_ptr<const Document> savedAs(const Document& document, const QString& path) {
  auto next = std::make_shared<Document>(document);
  next->path = QFileInfo(path).absoluteFilePath();
  next->info.format = "tsg";
  next->info.onnxOpset = 0;
  return next;
}

}  // namespace tscope::gui

#include "gui/app/history/rewrite_steps.h"

#include "engine/session/replay_rewrites.h"

#include <future>
#include <stdexcept>
#include <string>

namespace tscope::gui {

std::shared_ptr<const vis::ViewModel> graphAtStep(const std::shared_ptr<const Document>& doc,
                                                  const engine::RewriteQuery& query,
                                                  std::size_t step) {
  // The ends are already built with the document (and equal to the replay: the tests check that
  // the replay reproduces the saved optimized graph).
  if (step == 0 && doc->originalModel) return doc->originalModel;
  if (step >= doc->rewrites.size() && doc->optimizedModel) return doc->optimizedModel;
  std::shared_ptr<const engine::FunctionGraph> graph =
      engine::session::replayRewrites(*doc->original, query, step);
  return vis::ViewModel::build(std::move(graph));
}

RewriteStep rewriteStep(const std::shared_ptr<const Document>& doc,
                        const engine::RewriteQuery& query, int order) {
  if (order < 0 || order >= static_cast<int>(doc->rewrites.size()))
    throw std::out_of_range("rewrite record " + std::to_string(order) + " is outside the log of " +
                            std::to_string(doc->rewrites.size()) + " records");
  RewriteStep s;
  s.order = order;
  // The two replays are independent: run them side by side (on a large graph each is a good part
  // of a full optimization).
  auto before =
      std::async(std::launch::async, [&] { return graphAtStep(doc, query, std::size_t(order)); });
  s.after = graphAtStep(doc, query, std::size_t(order) + 1);
  s.before = before.get();
  const engine::RewriteRecord& record = doc->rewrites[static_cast<std::size_t>(order)];
  for (std::int64_t id : record.removedNodes)
    if (int n = s.before->nodeOfApply(id); n >= 0) s.removedNodes.insert(n);
  for (std::int64_t id : record.addedNodes)
    if (int n = s.after->nodeOfApply(id); n >= 0) s.addedNodes.insert(n);
  return s;
}

}  // namespace tscope::gui

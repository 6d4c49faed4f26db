#include "engine/debug/failure.h"

#include "engine/graph/errors.h"
#include "engine/io/tsg.h"

#include <stdexcept>

namespace tscope::engine::debug {

void saveReplay(const std::filesystem::path& path, const FunctionGraph& graph,
                const std::vector<Tensor>& inputValues, const NanReport* report) {
  std::unique_ptr<FunctionGraph> copy = graph.clone();
  std::size_t k = 0;
  for (const VarPtr& in : copy->inputs()) {
    if (in->kind() == Variable::Kind::Shared) continue;
    if (k >= inputValues.size())
      throw std::invalid_argument("saveReplay: " + std::to_string(inputValues.size()) +
                                  " input values given; the graph has more non-shared inputs ('" +
                                  in->displayName() + "' has none)");
    try {
      in->setTestValue(inputValues[k]);
    } catch (const std::exception& e) {
      throw std::invalid_argument("saveReplay: the value for input '" + in->displayName() +
                                  "' does not fit: " + e.what());
    }
    ++k;
  }
  if (k != inputValues.size())
    throw std::invalid_argument("saveReplay: " + std::to_string(inputValues.size()) +
                                " input values given for " + std::to_string(k) +
                                " non-shared inputs");
  io::TsgDocument doc;
  doc.original = std::move(copy);
  doc.producer = {{"name", "tensorscope NanGuard replay"}};
  if (report) doc.producer["nan_report"] = report->toJson();
  io::saveTsg(doc, path);
}

}  // namespace tscope::engine::debug

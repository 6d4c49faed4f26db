#pragma once
// Helpers of the profiler window tests (tst_profile_*): a profile built by hand on a graph, so
// the expected colours, sums and ranges are known exactly; synthetic timeline events.

#include "engine/graph/apply.h"
#include "engine/graph/function_graph.h"
#include "engine/graph/op.h"
#include "gui/app/profile/profile_view.h"
#include "profiling/profile.h"
#include "visualizers/model/view_model.h"

#include <map>
#include <memory>
#include <string>

namespace tscope::gui::testing {

// The first apply (in schedule order) whose op string contains `op` and whose scope is `scope`,
// for readable tests.
inline const engine::Apply* applyByOp(const engine::FunctionGraph& g, const std::string& op,
                                      const std::string& scope = "") {
  for (const engine::Apply* a : g.toposort())
    if (a->op().str().find(op) != std::string::npos && a->scope() == scope) return a;
  return nullptr;
}

// One profile of `graph`: each apply's time per run from `seconds` (by node id, 0 when absent),
// `runs` measured runs, one call per run; events laid end to end on thread 0 in schedule order,
// each run starting 1 ms after the previous one ended; live bytes rising by each node's output
// bytes (`bytes` by id) and falling to 0 after the run.
inline prof::Profile handProfile(const engine::FunctionGraph& graph,
                                 const std::map<std::int64_t, double>& seconds, int runs = 2,
                                 const std::map<std::int64_t, std::int64_t>& bytes = {}) {
  prof::Profile p;
  p.graph = "original";
  p.name = "hand";
  p.function.mode = "none";
  p.function.measuredRuns = runs;
  const std::vector<engine::Apply*> order = graph.toposort();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const engine::Apply* a = order[i];
    prof::NodeProfile n;
    n.id = a->id();
    n.position = static_cast<std::int64_t>(i);
    n.op = a->op().str();
    n.opClass = a->op().name();
    n.scope = a->scope();
    n.calls = runs;
    const double s = seconds.count(a->id()) ? seconds.at(a->id()) : 0.0;
    n.time = prof::TimeStats::of(std::vector<double>(static_cast<std::size_t>(runs), s));
    prof::OutputInfo out;
    out.shape = {3, 3};
    out.dtype = "float32";
    out.bytes = bytes.count(a->id()) ? bytes.at(a->id()) : 36;
    n.outputs.push_back(out);
    p.nodes.push_back(n);
  }
  std::int64_t t = 0;
  for (int r = 0; r < runs; ++r) {
    prof::RunSpan span{r, t, 0};
    std::int64_t live = 0;
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      const auto ns = static_cast<std::int64_t>(p.nodes[i].time.mean * 1e9);
      live += p.nodes[i].outputs[0].bytes;
      p.events.push_back({r, static_cast<std::int32_t>(i), 0, t, t + ns, live});
      t += ns;
    }
    span.endNs = t;
    p.runs.push_back(span);
    t += 1000000;
  }
  std::vector<double> calls(static_cast<std::size_t>(runs));
  for (std::size_t r = 0; r < calls.size(); ++r)
    calls[r] = double(p.runs[r].endNs - p.runs[r].startNs) * 1e-9;
  p.function.call = prof::TimeStats::of(calls);
  return p;
}

inline std::shared_ptr<const ProfileSnapshot> snapshotOf(
    std::shared_ptr<const engine::FunctionGraph> graph, prof::Profile profile,
    std::shared_ptr<const vis::ViewModel> model, QString label = QStringLiteral("hand")) {
  auto s = std::make_shared<ProfileSnapshot>();
  s->graph = std::move(graph);
  s->model = std::move(model);
  s->label = std::move(label);
  s->profile = std::make_shared<const prof::Profile>(std::move(profile));
  return s;
}

}  // namespace tscope::gui::testing

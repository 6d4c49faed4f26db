#include "gui/app/profile/profile_view.h"

#include <algorithm>
#include <map>
#include <utility>

namespace tscope::gui {

std::vector<int> mapProfileNodes(const prof::Profile& profile, const vis::ViewModel& model) {
  const auto& nodes = model.nodes();
  const auto& groups = model.groups();
  // The Apply nodes of each drawn graph, by id; and the inner graph of each OpFromGraph node.
  std::map<std::pair<const engine::FunctionGraph*, std::int64_t>, int> byGraphId;
  std::unordered_map<int, const engine::FunctionGraph*> innerGraphOf;  // by its ViewModel node
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const vis::ViewNode& n = nodes[i];
    if (n.kind != vis::NodeKind::Apply || !n.graph) continue;
    byGraphId.emplace(std::pair{n.graph, n.graphId}, static_cast<int>(i));
    if (n.graph == &model.graph()) continue;
    // The nearest OpFromGraph group above an inner node is the frame whose body holds it.
    for (int g = n.group; g > 0; g = groups[static_cast<std::size_t>(g)].parent) {
      const vis::Group& group = groups[static_cast<std::size_t>(g)];
      if (group.kind == vis::GroupKind::OpFromGraph) {
        innerGraphOf.emplace(group.ofgViewNode, n.graph);
        break;
      }
    }
  }
  std::vector<int> result(profile.nodes.size(), -1);
  for (std::size_t i = 0; i < profile.nodes.size(); ++i) {
    const prof::NodeProfile& p = profile.nodes[i];
    const engine::FunctionGraph* graph = &model.graph();
    bool found = true;
    for (std::int64_t frame : p.framePath) {
      auto it = byGraphId.find({graph, frame});
      auto inner = it == byGraphId.end() ? innerGraphOf.end() : innerGraphOf.find(it->second);
      if (inner == innerGraphOf.end()) {
        found = false;
        break;
      }
      graph = inner->second;
    }
    if (!found) continue;
    if (auto it = byGraphId.find({graph, p.id}); it != byGraphId.end()) result[i] = it->second;
  }
  return result;
}

prof::Profile restrictToRange(const prof::Profile& profile, TimeRange range) {
  prof::Profile out = profile;
  out.events.clear();
  out.runs.clear();
  out.gpuEvents.clear();
  const std::size_t n = profile.nodes.size();
  // Per node: the clipped time in each run that overlaps the range, and the calls.
  std::vector<std::map<std::int32_t, double>> perRun(n);
  std::vector<std::int64_t> calls(n, 0);
  auto clip = [&](std::int64_t a, std::int64_t b) {
    return std::max<std::int64_t>(0, std::min(b, range.endNs) - std::max(a, range.startNs));
  };
  std::vector<double> callSeconds;
  for (const prof::RunSpan& r : profile.runs) {
    if (r.endNs <= range.startNs || r.startNs >= range.endNs) continue;
    out.runs.push_back(r);
    callSeconds.push_back(static_cast<double>(clip(r.startNs, r.endNs)) * 1e-9);
  }
  for (const prof::NodeEventRecord& e : profile.events) {
    if (e.endNs <= range.startNs || e.startNs >= range.endNs) continue;
    out.events.push_back(e);
    if (e.node < 0 || static_cast<std::size_t>(e.node) >= n) continue;
    const auto node = static_cast<std::size_t>(e.node);
    perRun[node][e.run] += static_cast<double>(clip(e.startNs, e.endNs)) * 1e-9;
    ++calls[node];
  }
  for (const prof::GpuEventRecord& e : profile.gpuEvents)
    if (e.endNs > range.startNs && e.startNs < range.endNs) out.gpuEvents.push_back(e);
  for (std::size_t i = 0; i < n; ++i) {
    prof::NodeProfile& node = out.nodes[i];
    std::vector<double> samples;
    for (const auto& [run, seconds] : perRun[i]) samples.push_back(seconds);
    node.time = prof::TimeStats::of(std::move(samples));
    node.calls = calls[i];
    node.gpuSeconds = 0;
    node.gpuKernels = 0;
  }
  out.function.measuredRuns = static_cast<std::int64_t>(out.runs.size());
  out.function.call = prof::TimeStats::of(std::move(callSeconds));
  out.capture.keptEvents = static_cast<std::int64_t>(out.events.size());
  return out;
}

TimeRange timelineSpan(const prof::Profile& profile) {
  TimeRange span;
  bool any = false;
  auto add = [&](std::int64_t a, std::int64_t b) {
    span.startNs = any ? std::min(span.startNs, a) : a;
    span.endNs = any ? std::max(span.endNs, b) : b;
    any = true;
  };
  for (const prof::RunSpan& r : profile.runs) add(r.startNs, r.endNs);
  for (const prof::NodeEventRecord& e : profile.events) add(e.startNs, e.endNs);
  for (const prof::GpuEventRecord& e : profile.gpuEvents) add(e.startNs, e.endNs);
  return span;
}

QString profileNodeName(const prof::NodeProfile& node) {
  QString name;
  for (std::int64_t frame : node.framePath) name += QString::number(frame) + QLatin1Char('/');
  return name + QString::number(node.id);
}

std::shared_ptr<const ProfileView> ProfileView::make(
    std::shared_ptr<const ProfileSnapshot> snapshot, std::optional<TimeRange> range) {
  auto view = std::make_shared<ProfileView>();
  view->snapshot = std::move(snapshot);
  view->range = range;
  view->profile =
      range
          ? std::make_shared<const prof::Profile>(restrictToRange(*view->snapshot->profile, *range))
          : view->snapshot->profile;
  view->tables = prof::aggregate(*view->profile);
  if (view->profile->calibration) {
    try {
      view->calibration = prof::Calibration::fromJson(*view->profile->calibration, "/calibration");
    } catch (const std::exception&) {
      // A profile whose peaks do not read has no roofline figures (the report says the same).
    }
  }
  if (view->snapshot->model) {
    view->viewNode = mapProfileNodes(*view->profile, *view->snapshot->model);
    for (std::size_t i = 0; i < view->viewNode.size(); ++i)
      if (view->viewNode[i] >= 0) view->profileNode.emplace(view->viewNode[i], static_cast<int>(i));
  } else {
    view->viewNode.assign(view->profile->nodes.size(), -1);
  }
  return view;
}

}  // namespace tscope::gui

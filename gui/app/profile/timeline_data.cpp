#include "gui/app/profile/timeline_data.h"

#include "engine/graph/apply.h"
#include "engine/graph/variable.h"
#include "profiling/aggregate.h"

#include <algorithm>
#include <limits>
#include <map>

namespace tscope::gui {

namespace {

// The scope prefixes of each profile node ("a", "a/b", ...), split once per node rather than once
// per call, with their labels.
struct NodeScopes {
  std::vector<std::vector<std::string>> prefixes;  // by profile node
  std::vector<std::vector<QString>> labels;        // the same, for the bars
};

NodeScopes nodeScopes(const prof::Profile& profile) {
  NodeScopes s;
  s.prefixes.resize(profile.nodes.size());
  s.labels.resize(profile.nodes.size());
  for (std::size_t n = 0; n < profile.nodes.size(); ++n) {
    std::string prefix;
    for (const std::string& part : prof::scopeComponents(profile.nodes[n].scope)) {
      prefix += (prefix.empty() ? "" : "/") + part;
      s.prefixes[n].push_back(prefix);
      s.labels[n].push_back(QString::fromStdString(prefix));
    }
  }
  return s;
}

// Note [Timeline rows]: the scope bars of one track's top-level calls, level by level.
void addScopeBars(const NodeScopes& scopes, const std::vector<const prof::NodeEventRecord*>& calls,
                  int track, int depth, std::vector<TimelineBar>& bars) {
  struct Open {
    const std::string* prefix = nullptr;
    TimelineBar bar;
    bool open = false;
  };
  std::vector<Open> open(static_cast<std::size_t>(depth));
  auto close = [&](std::size_t level) {
    for (std::size_t l = level; l < open.size(); ++l)
      if (open[l].open) {
        bars.push_back(open[l].bar);
        open[l].open = false;
      }
  };
  int run = -1;
  for (const prof::NodeEventRecord* e : calls) {
    if (e->run != run) {
      close(0);
      run = e->run;
    }
    const auto node = static_cast<std::size_t>(e->node);
    const std::vector<std::string>& prefixes = scopes.prefixes[node];
    for (std::size_t l = 0; l < open.size(); ++l) {
      if (l >= prefixes.size()) {
        close(l);
        break;
      }
      if (open[l].open && *open[l].prefix == prefixes[l]) {
        open[l].bar.endNs = std::max(open[l].bar.endNs, e->endNs);
        continue;
      }
      close(l);
      open[l].open = true;
      open[l].prefix = &prefixes[l];
      open[l].bar = {TimelineBar::Kind::Scope,
                     track,
                     static_cast<int>(l) + 1,
                     e->startNs,
                     e->endNs,
                     -1,
                     e->run,
                     scopes.labels[node][l]};
    }
  }
  close(0);
}

// Orders the bars by (track, row, start). Bars arrive grouped by track and, within a row, mostly in
// time order, so they are distributed into their rows (stable, linear) and a row is sorted only
// when it is not in order already.
void sortBars(std::vector<TimelineBar>& bars, const std::vector<TimelineTrack>& tracks,
              int totalRows) {
  auto keyOf = [&](const TimelineBar& b) {
    return static_cast<std::size_t>(tracks[static_cast<std::size_t>(b.track)].firstRow + b.row);
  };
  std::vector<std::size_t> start(static_cast<std::size_t>(totalRows) + 1, 0);
  for (const TimelineBar& b : bars) ++start[keyOf(b) + 1];
  for (std::size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
  std::vector<TimelineBar> sorted(bars.size());
  std::vector<std::size_t> next(start.begin(), start.end() - 1);
  for (TimelineBar& b : bars) sorted[next[keyOf(b)]++] = std::move(b);
  auto earlier = [](const TimelineBar& a, const TimelineBar& b) { return a.startNs < b.startNs; };
  for (std::size_t k = 0; k + 1 < start.size(); ++k) {
    const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(start[k]);
    const auto last = sorted.begin() + static_cast<std::ptrdiff_t>(start[k + 1]);
    if (!std::is_sorted(first, last, earlier)) std::stable_sort(first, last, earlier);
  }
  bars = std::move(sorted);
}

MemoryData memoryOf(const prof::Profile& profile, const engine::FunctionGraph* graph) {
  MemoryData m;
  bool measured = false;
  for (const prof::NodeEventRecord& e : profile.events) {
    m.points.push_back({e.endNs, e.liveBytes, e.node, e.run});
    measured = measured || e.liveBytes != 0;
  }
  if (!measured) {
    m.points.clear();
    return m;
  }
  auto earlier = [](const MemoryPoint& a, const MemoryPoint& b) { return a.timeNs < b.timeNs; };
  if (!std::is_sorted(m.points.begin(), m.points.end(), earlier))
    std::stable_sort(m.points.begin(), m.points.end(), earlier);
  for (std::size_t i = 0; i < m.points.size(); ++i)
    if (m.peak < 0 || m.points[i].liveBytes > m.points[static_cast<std::size_t>(m.peak)].liveBytes)
      m.peak = static_cast<int>(i);
  if (!graph || m.peak < 0) return m;
  m.aliveKnown = true;
  const MemoryPoint& peak = m.points[static_cast<std::size_t>(m.peak)];
  // When each top-level node starts and ends in the peak's run.
  const std::size_t n = profile.nodes.size();
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::min();
  std::vector<std::int64_t> start(n, kNever), end(n, kNever);
  for (const prof::NodeEventRecord& e : profile.events) {
    if (e.run != peak.run || e.node < 0 || static_cast<std::size_t>(e.node) >= n) continue;
    const auto i = static_cast<std::size_t>(e.node);
    start[i] = std::max(start[i], e.startNs);  // the last call's
    end[i] = std::max(end[i], e.endNs);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const prof::NodeProfile& node = profile.nodes[i];
    if (!node.framePath.empty() || end[i] == kNever || end[i] > peak.timeNs) continue;
    const engine::Apply* apply = graph->nodeById(node.id);
    if (!apply) continue;
    bool alive = false;
    for (int o = 0; o < apply->nOutputs() && !alive; ++o) {
      const auto out = static_cast<std::size_t>(o);
      if (out < node.outputs.size() &&
          (node.outputs[out].kind != prof::OutputKind::Created || node.outputs[out].bytes == 0))
        continue;
      const engine::Variable& var = apply->outputRef(o);
      for (const engine::Client& c : graph->clients(var)) {
        if (c.isOutput()) {
          alive = true;
          break;
        }
        const std::int64_t reader = profile.find({}, c.node->id());
        if (reader >= 0 && start[static_cast<std::size_t>(reader)] != kNever &&
            start[static_cast<std::size_t>(reader)] >= peak.timeNs) {
          alive = true;
          break;
        }
      }
    }
    if (alive) m.aliveAtPeak.push_back(static_cast<int>(i));
  }
  return m;
}

}  // namespace

std::shared_ptr<const TimelineData> TimelineData::build(const prof::Profile& profile,
                                                        const engine::FunctionGraph* graph) {
  auto t = std::make_shared<TimelineData>();
  // CPU threads, in order of their numbers.
  std::map<std::int32_t, std::vector<const prof::NodeEventRecord*>> byThread;
  const NodeScopes scopes = nodeScopes(profile);
  int maxFrame = 0, maxScope = 0;
  for (const prof::NodeEventRecord& e : profile.events) {
    if (e.node < 0 || static_cast<std::size_t>(e.node) >= profile.nodes.size()) continue;
    byThread[e.thread].push_back(&e);
    const auto node = static_cast<std::size_t>(e.node);
    maxFrame = std::max(maxFrame, static_cast<int>(profile.nodes[node].framePath.size()));
    maxScope = std::max(maxScope, static_cast<int>(scopes.prefixes[node].size()));
  }
  if (byThread.empty() && !profile.runs.empty()) byThread[0];
  int row = 0;
  for (auto& [thread, calls] : byThread) {
    const int track = static_cast<int>(t->tracks.size());
    TimelineTrack tr{QStringLiteral("CPU thread %1").arg(thread), 1 + maxScope + maxFrame + 1, row};
    row += tr.rows;
    t->tracks.push_back(tr);
    if (thread == byThread.begin()->first)
      for (const prof::RunSpan& r : profile.runs)
        t->bars.push_back({TimelineBar::Kind::Run, track, 0, r.startNs, r.endNs, -1, r.run,
                           QStringLiteral("run %1").arg(r.run)});
    std::vector<const prof::NodeEventRecord*> topLevel;
    for (const prof::NodeEventRecord* e : calls) {
      const prof::NodeProfile& node = profile.nodes[static_cast<std::size_t>(e->node)];
      if (node.framePath.empty()) topLevel.push_back(e);
      t->bars.push_back({TimelineBar::Kind::Node,
                         track,
                         1 + maxScope + static_cast<int>(node.framePath.size()),
                         e->startNs,
                         e->endNs,
                         e->node,
                         e->run,
                         {}});
    }
    addScopeBars(scopes, topLevel, track, maxScope, t->bars);
  }
  std::map<std::pair<std::int32_t, std::int32_t>, int> streams;
  for (const prof::GpuEventRecord& e : profile.gpuEvents) {
    auto [it, added] = streams.emplace(std::pair{e.device, e.stream}, 0);
    if (added) {
      it->second = static_cast<int>(t->tracks.size());
      t->tracks.push_back({QStringLiteral("GPU %1 stream %2").arg(e.device).arg(e.stream), 1, row});
      ++row;
    }
    t->bars.push_back({TimelineBar::Kind::Gpu, it->second, 0, e.startNs, e.endNs, e.node, e.run,
                       QString::fromStdString(e.name)});
  }
  t->totalRows = row;
  sortBars(t->bars, t->tracks, row);
  bool any = false;
  for (const TimelineBar& b : t->bars) {
    t->startNs = any ? std::min(t->startNs, b.startNs) : b.startNs;
    t->endNs = any ? std::max(t->endNs, b.endNs) : b.endNs;
    any = true;
  }
  t->memory = memoryOf(profile, graph);
  return t;
}

}  // namespace tscope::gui

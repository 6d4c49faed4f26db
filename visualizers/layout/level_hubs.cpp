#include "visualizers/layout/level_hubs.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace tscope::vis::layout {

// Note [Detached hubs]: bench_gui's "5000 nodes flat, 32 chains" is one level of 5,436 items and
// 8,694 edges whose 32 chains meet only in the 4 graph inputs they all read (out-degrees 64, 33,
// 22, 21). Through those inputs dot sees one component, and its crossing minimisation works on the
// whole of it: 1.06 of 2.1 CPU seconds. Without the inputs' edges the chains are 32 components,
// each ordered on its own: mincross 0.07 s, dot 1.0 s in all. So in levels laid out with the fast
// settings, a source with kHubMinOutEdges or more out-edges is laid out apart: dot lays out the
// rest; the hubs go in a row above it, each centred over the nodes it feeds (pushed right where
// they would overlap), and their edges are drawn as dot draws a top-to-bottom edge, a cubic leaving
// the hub's bottom vertically and entering the target's top vertically, with an arrow head. These
// edges may cross nodes on their way down (dot would route around them at the cost above); they
// are few (a hub is a shared input), and hovering a hub lights them.

HubSplit splitHubs(const LevelSpec& spec) {
  HubSplit split;
  if (!spec.fast) return split;
  const std::size_t n = spec.nodes.size();
  std::vector<std::size_t> in(n, 0), out(n, 0);
  for (const auto& e : spec.edges) {
    if (e.from < 0 || e.to < 0 || std::size_t(e.from) >= n || std::size_t(e.to) >= n) return {};
    ++out[std::size_t(e.from)];
    ++in[std::size_t(e.to)];
  }
  // A level with input ports keeps them above everything: then only ports can be hubs (the row of
  // hubs lies above the rest's top rank).
  const bool hasInPorts = std::any_of(spec.nodes.begin(), spec.nodes.end(), [](const auto& node) {
    return node.rank == LevelNodeSpec::Rank::Source;
  });
  const LevelNodeSpec::Rank hubRank =
      hasInPorts ? LevelNodeSpec::Rank::Source : LevelNodeSpec::Rank::Normal;
  std::vector<char> hub(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (in[i] == 0 && out[i] >= kHubMinOutEdges && spec.nodes[i].rank == hubRank) {
      hub[i] = 1;
      split.hubs.push_back(int(i));
    }
  if (split.hubs.empty() || split.hubs.size() == n) return {};
  split.rest.nodeSep = spec.nodeSep;
  split.rest.rankSep = spec.rankSep;
  split.rest.fast = spec.fast;
  split.rest.labels = spec.labels;
  split.restNode.assign(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (!hub[i]) {
      split.restNode[i] = int(split.rest.nodes.size());
      split.rest.nodes.push_back(spec.nodes[i]);
    }
  split.restEdge.assign(spec.edges.size(), -1);
  for (std::size_t i = 0; i < spec.edges.size(); ++i) {
    const auto& e = spec.edges[i];
    if (hub[std::size_t(e.from)]) continue;
    split.restEdge[i] = int(split.rest.edges.size());
    split.rest.edges.push_back(
        {split.restNode[std::size_t(e.from)], split.restNode[std::size_t(e.to)], e.labelSize});
  }
  return split;
}

LevelLayout placeHubs(const LevelSpec& spec, const HubSplit& split, const LevelLayout& rest) {
  constexpr double kArrow = 10;  // dot's arrow length, points
  LevelLayout whole;
  whole.seconds = rest.seconds;
  whole.nodes.resize(spec.nodes.size());
  whole.edges.resize(spec.edges.size());

  double rowHeight = 0;
  for (int h : split.hubs) rowHeight = std::max(rowHeight, spec.nodes[std::size_t(h)].height);
  const double shift = rowHeight + spec.rankSep;  // the rest moves down below the hubs' row
  for (std::size_t i = 0; i < spec.nodes.size(); ++i)
    if (split.restNode[i] >= 0)
      whole.nodes[i] = rest.nodes[std::size_t(split.restNode[i])].translated(0, shift);

  // Each hub over the mean x of its targets, in that order, pushed right where two would overlap.
  std::map<int, std::pair<double, int>> targetX;  // hub -> (sum of target centres, count)
  for (const auto& e : spec.edges)
    if (split.restNode[std::size_t(e.from)] < 0) {
      auto& [sum, count] = targetX[e.from];
      sum += whole.nodes[std::size_t(e.to)].center().x();
      ++count;
    }
  std::vector<std::pair<double, int>> order;
  for (int h : split.hubs) {
    const auto& [sum, count] = targetX[h];
    order.push_back({count ? sum / count : 0.0, h});
  }
  std::sort(order.begin(), order.end());
  double right = -1e300, width = rest.size.width();
  for (const auto& [x, h] : order) {
    const LevelNodeSpec& node = spec.nodes[std::size_t(h)];
    const double w = std::max(node.width, 1.0), hh = std::max(node.height, 1.0);
    const double left = std::max({x - w / 2, right + spec.nodeSep, 0.0});
    whole.nodes[std::size_t(h)] = QRectF(left, (rowHeight - hh) / 2, w, hh);
    right = left + w;
    width = std::max(width, right);
  }
  whole.size = QSizeF(width, rest.size.height() + shift);

  std::map<std::pair<int, int>, int> parallel;  // repeated hub -> target edges fan out
  for (std::size_t i = 0; i < spec.edges.size(); ++i) {
    const auto& e = spec.edges[i];
    if (split.restEdge[i] >= 0) {
      const LevelEdgeGeometry& g = rest.edges[std::size_t(split.restEdge[i])];
      LevelEdgeGeometry& moved = whole.edges[i];
      moved.path = g.path.translated(0, shift);
      moved.arrowTip = g.arrowTip + QPointF(0, shift);
      moved.arrowBase = g.arrowBase + QPointF(0, shift);
      moved.labelPos = g.labelPos + QPointF(0, shift);
      continue;
    }
    const QRectF& from = whole.nodes[std::size_t(e.from)];
    const QRectF& to = whole.nodes[std::size_t(e.to)];
    const int k = parallel[{e.from, e.to}]++;
    const double offset = (k % 2 ? -1 : 1) * 6.0 * double((k + 1) / 2);
    const QPointF start(from.center().x() + offset, from.bottom());
    const QPointF tip(to.center().x() + offset, to.top());
    const QPointF base(tip.x(), tip.y() - kArrow);
    const double bend = std::max(8.0, (base.y() - start.y()) / 2);
    LevelEdgeGeometry& g = whole.edges[i];
    g.path.moveTo(start);
    g.path.cubicTo(start + QPointF(0, bend), base - QPointF(0, bend), base);
    g.arrowBase = base;
    g.arrowTip = tip;
    g.labelPos = g.path.pointAtPercent(0.5);
  }
  return whole;
}

}  // namespace tscope::vis::layout

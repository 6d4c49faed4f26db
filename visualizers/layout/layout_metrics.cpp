#include "visualizers/layout/layout_metrics.h"

#include <QLineF>
#include <QPolygonF>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tscope::vis {
namespace {

// Within this distance of an end of either edge, an intersection is a meeting, not a crossing.
constexpr double kEndTolerance = 2.0;

struct Flat {
  std::vector<QLineF> segments;
  QRectF bounds;
  QPointF start, end;
};

Flat flatten(const PlacedEdge& edge) {
  Flat flat;
  for (const QPolygonF& poly : edge.path.toSubpathPolygons()) {
    for (qsizetype i = 1; i < poly.size(); ++i)
      if (poly[i - 1] != poly[i]) flat.segments.emplace_back(poly[i - 1], poly[i]);
  }
  if (!flat.segments.empty()) {
    flat.start = flat.segments.front().p1();
    flat.end = edge.arrowTip.isNull() ? flat.segments.back().p2() : edge.arrowTip;
    // Grown: a straight vertical edge has an empty box, which intersects nothing.
    flat.bounds = edge.path.controlPointRect().adjusted(-1, -1, 1, 1);
  }
  return flat;
}

bool nearEnd(const QPointF& p, const Flat& flat) {
  return QLineF(p, flat.start).length() < kEndTolerance ||
         QLineF(p, flat.end).length() < kEndTolerance;
}

}  // namespace

double LayoutMetrics::fitScale(QSizeF viewport) const {
  if (bounds.width() <= 0 || bounds.height() <= 0) return 0;
  return std::min(viewport.width() / bounds.width(), viewport.height() / bounds.height());
}

// Cost: O(E^2) bounding-box tests plus the segment pairs of edges whose boxes overlap.
LayoutMetrics measureLayout(const SceneLayout& layout) {
  LayoutMetrics metrics;
  metrics.bounds = layout.bounds;
  metrics.edges = static_cast<int>(layout.edges.size());
  std::vector<Flat> flats;
  flats.reserve(layout.edges.size());
  for (const PlacedEdge& edge : layout.edges) {
    metrics.edgeLength += edge.path.length();
    flats.push_back(flatten(edge));
  }
  for (std::size_t a = 0; a < flats.size(); ++a) {
    const Flat& fa = flats[a];
    if (fa.segments.empty()) continue;
    for (std::size_t b = a + 1; b < flats.size(); ++b) {
      const Flat& fb = flats[b];
      if (fb.segments.empty() || !fa.bounds.intersects(fb.bounds)) continue;
      // One crossing at a joint of two segments is found twice: points closer than 0.5 are one.
      std::vector<QPointF> found;
      for (const QLineF& sa : fa.segments)
        for (const QLineF& sb : fb.segments) {
          QPointF at;
          if (sa.intersects(sb, &at) != QLineF::BoundedIntersection) continue;
          if (nearEnd(at, fa) || nearEnd(at, fb)) continue;
          if (std::any_of(found.begin(), found.end(),
                          [&](const QPointF& p) { return QLineF(p, at).length() < 0.5; }))
            continue;
          found.push_back(at);
        }
      metrics.crossings += static_cast<long long>(found.size());
    }
  }
  return metrics;
}

}  // namespace tscope::vis

#pragma once
// Readability figures of a laid-out scene (bench_gui, issue 24): how many edges cross and how long
// they are in all.
//   const vis::LayoutMetrics m = vis::measureLayout(*layout);
//   double fitted = m.edgeLength * m.fitScale(QSizeF(1600, 1000));  // pixels when fitted
// Edges are the layout's splines, flattened into polylines, in scene points.

#include "visualizers/layout/scene_layout.h"

#include <QSizeF>

namespace tscope::vis {

struct LayoutMetrics {
  int edges = 0;
  // Proper crossings between the polylines of two different edges; touching at an end (edges
  // meeting at a node or port) does not count.
  long long crossings = 0;
  double edgeLength = 0;  // summed over the edges, scene points
  QRectF bounds;          // the layout's bounds
  // The scale at which the bounds fit a `viewport` (what zoom-to-fit shows); 0 for empty bounds.
  double fitScale(QSizeF viewport) const;
};

LayoutMetrics measureLayout(const SceneLayout& layout);

}  // namespace tscope::vis

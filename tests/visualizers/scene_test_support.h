#pragma once
// Helpers of the scene tests (tst_graph_scene, tst_graph_view, tst_exporters): a small graph with a
// view edge, a destroy (inplace) edge and a scope; a big synthetic graph with a hand-made grid
// layout (no Graphviz) for frame times; lookups of scene items; colour checks on rendered images.

#include "engine/graph/function_graph.h"
#include "engine/graph/source_site.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"
#include "visualizers/layout/layout_service.h"
#include "visualizers/scene/graph_scene.h"
#include "visualizers/scene/scene_items.h"

#include <QGraphicsItem>
#include <QImage>

#include <cmath>
#include <memory>
#include <vector>

namespace tscope::vis::testing {

using engine::VarPtr;

// x -> sin -> transpose (a view: dodgerblue) -> add_inplace(sin(y) destroyed: red) -> exp -> out,
// with sin(y) and the add inside scope "block" (and the add inside "block/inner").
inline std::shared_ptr<const engine::FunctionGraph> edgeKindsGraph() {
  using namespace engine;
  const TensorType mat(DType::Float32, {3, 3});
  VarPtr x = Variable::create(mat, "x"), y = Variable::create(mat, "y");
  VarPtr v = transpose(elemwise(ScalarOp::Sin, {x}));
  VarPtr d;
  {
    NameScope block("block");
    VarPtr s = elemwise(ScalarOp::Sin, {y});
    NameScope inner("inner");
    d = (*std::make_shared<Elemwise>(ScalarOp::Add, std::map<int, int>{{0, 0}}))({s, v});
  }
  VarPtr out = elemwise(ScalarOp::Exp, {d});
  return std::make_shared<const FunctionGraph>(std::vector<VarPtr>{x, y}, std::vector<VarPtr>{out});
}

// A chain of `applies` elementwise nodes, each also reading the node three steps back.
inline std::shared_ptr<const engine::FunctionGraph> chainGraph(int applies) {
  using namespace engine;
  const TensorType vec(DType::Float32, {8});
  VarPtr x = Variable::create(vec, "x");
  std::vector<VarPtr> values{x};
  for (int i = 0; i < applies; ++i) {
    const VarPtr& last = values.back();
    values.push_back(i % 2 == 0 || values.size() < 4
                         ? elemwise(ScalarOp::Sin, {last})
                         : elemwise(ScalarOp::Add, {last, values[values.size() - 4]}));
  }
  return std::make_shared<const FunctionGraph>(std::vector<VarPtr>{x},
                                               std::vector<VarPtr>{values.back()});
}

// Every node of the model on a grid (`columns` wide), edges as straight cubics: a layout without
// Graphviz, as big as a test wants.
inline std::shared_ptr<const SceneLayout> gridLayout(const ViewModel& model, int columns) {
  auto layout = std::make_shared<SceneLayout>();
  const double w = 80, h = 30, dx = 110, dy = 60;
  layout->m_nodeIndex.assign(model.nodes().size(), -1);
  layout->m_groupIndex.assign(model.groups().size(), -1);
  for (std::size_t i = 0; i < model.nodes().size(); ++i) {
    const double col = double(i % std::size_t(columns)), row = double(i / std::size_t(columns));
    layout->m_nodeIndex[i] = int(layout->nodes.size());
    layout->nodes.push_back({int(i), QRectF(col * dx, row * dy, w, h)});
  }
  for (std::size_t e = 0; e < model.edges().size(); ++e) {
    const ViewEdge& ve = model.edges()[e];
    const QRectF a = layout->nodes[std::size_t(ve.from)].rect,
                 b = layout->nodes[std::size_t(ve.to)].rect;
    PlacedEdge pe;
    pe.edges = {int(e)};
    pe.kind = ve.kind;
    const QPointF p0(a.center().x(), a.bottom()), p3(b.center().x(), b.top());
    pe.path.moveTo(p0);
    pe.path.cubicTo(p0 + QPointF(0, 20), p3 - QPointF(0, 20), p3);
    pe.arrowTip = p3;
    pe.arrowBase = p3 - QPointF(0, 8);
    pe.label = ve.label;
    pe.labelPos = (p0 + p3) / 2;
    layout->edges.push_back(pe);
  }
  layout->bounds =
      QRectF(0, 0, columns * dx, std::ceil(double(model.nodes().size()) / columns) * dy);
  return layout;
}

template <class Item>
std::vector<Item*> itemsOfType(const QGraphicsScene& scene) {
  std::vector<Item*> found;
  for (QGraphicsItem* item : scene.items())
    if (item->type() == Item::Type) found.push_back(static_cast<Item*>(item));
  return found;
}

inline ShapeItem* shapeOfNode(const QGraphicsScene& scene, int node) {
  for (ShapeItem* item : itemsOfType<ShapeItem>(scene))
    if (item->node == node && item->shapeKind() != ShapeItem::Shape::Group) return item;
  return nullptr;
}

inline ShapeItem* groupBox(const QGraphicsScene& scene, int group) {
  for (ShapeItem* item : itemsOfType<ShapeItem>(scene))
    if (item->group == group) return item;
  return nullptr;
}

inline double colourDistance(QColor a, QColor b) {
  return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) +
         std::abs(a.blue() - b.blue());
}

// How many of the points sampled along `path` (scene coordinates, mapped by `toImage`) have a pixel
// within 2 px whose colour is near `want`, out of `samples`.
inline int pathSamplesNear(const QImage& image, const QPainterPath& path, const QTransform& toImage,
                           QColor want, int samples = 9) {
  int hits = 0;
  for (int i = 1; i <= samples; ++i) {
    const QPointF p = toImage.map(path.pointAtPercent(0.1 + 0.8 * i / (samples + 1)));
    bool hit = false;
    for (int dy = -2; dy <= 2 && !hit; ++dy)
      for (int dx = -2; dx <= 2 && !hit; ++dx) {
        const QPoint q(int(std::lround(p.x())) + dx, int(std::lround(p.y())) + dy);
        if (image.rect().contains(q) && colourDistance(image.pixelColor(q), want) < 90) hit = true;
      }
    hits += hit;
  }
  return hits;
}

}  // namespace tscope::vis::testing

// GraphScene: one item per placed node, group, port and edge with the model's colours and shapes;
// edges drawn in their kind's colour (view dodgerblue, destroy red); hover lights a node and its
// edges; selection and double-clicks reported in model terms; highlights (also on the box of a
// collapsed group hiding the node); no text below the level-of-detail threshold; a legend of what
// is shown.
#include "engine/ops/graph/op_from_graph.h"
#include "gui_test_main.h"
#include "scene_test_support.h"
#include "view_model_test_support.h"
#include "visualizers/model/palette.h"
#include "visualizers/scene/exporters.h"
#include "visualizers/scene/graph_view.h"

#include <QGraphicsSceneHoverEvent>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QSignalSpy>

using namespace tscope::vis;
using namespace tscope::vis::testing;

namespace {

int edgeOfKind(const ViewModel& model, EdgeKind kind) {
  for (std::size_t e = 0; e < model.edges().size(); ++e)
    if (model.edges()[e].kind == kind) return int(e);
  return -1;
}

// Pixels inside `rect` (scene) rendered at `scale` that differ clearly from `fill`.
int inkPixels(GraphScene& scene, const QRectF& rect, double scale, QColor fill) {
  const QSize size(int(std::ceil(rect.width() * scale)), int(std::ceil(rect.height() * scale)));
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    scene.render(&painter, QRectF(QPointF(0, 0), QSizeF(size)), rect);
  }
  int ink = 0;
  for (int y = 2; y < size.height() - 2; ++y)
    for (int x = 2; x < size.width() - 2; ++x)
      if (colourDistance(image.pixelColor(x, y), fill) > 60) ++ink;
  return ink;
}

}  // namespace

class TestGraphScene : public QObject {
  Q_OBJECT

  LayoutService m_service;
  std::shared_ptr<const ViewModel> m_model;

  std::shared_ptr<const SceneLayout> layoutOf(const GroupState& state) {
    return m_service.layoutNow(m_model, state, LayoutOptions{});
  }

 private slots:
  void initTestCase() {
    m_model = ViewModel::build(edgeKindsGraph());
    QVERIFY(edgeOfKind(*m_model, EdgeKind::View) >= 0);
    QVERIFY(edgeOfKind(*m_model, EdgeKind::Destroy) >= 0);
    QVERIFY(m_model->groupByPath("block") > 0 && m_model->groupByPath("block/inner") > 0);
  }

  void oneItemPerPlacedThing_data() {
    QTest::addColumn<QStringList>("expanded");
    QTest::newRow("all collapsed") << QStringList{};
    QTest::newRow("block open") << QStringList{"block"};
    QTest::newRow("all open") << QStringList{"block", "block/inner"};
  }
  void oneItemPerPlacedThing() {
    QFETCH(QStringList, expanded);
    const auto layout = layoutOf(GroupState::fromStringList(expanded));
    GraphScene scene;
    scene.setContent(m_model, layout);
    std::size_t clusters = 0, boxes = 0;
    for (const PlacedGroup& g : layout->groups) (g.expanded ? clusters : boxes)++;
    QCOMPARE(itemsOfType<ClusterItem>(scene).size(), clusters);
    QCOMPARE(itemsOfType<EdgeItem>(scene).size(), layout->edges.size());
    QCOMPARE(itemsOfType<ShapeItem>(scene).size(),
             layout->nodes.size() + boxes + layout->ports.size());
    QCOMPARE(std::size_t(expanded.size()), clusters);
    for (const PlacedNode& pn : layout->nodes) QCOMPARE(scene.nodeRect(pn.node), pn.rect);
    for (const PlacedGroup& pg : layout->groups) QCOMPARE(scene.groupRect(pg.group), pg.rect);
  }

  void nodesHaveTheirShapeAndPaletteColour() {
    const auto layout = layoutOf(m_model->allExpanded());
    GraphScene scene;
    scene.setContent(m_model, layout);
    int boxesSeen = 0, ellipsesSeen = 0;
    for (const PlacedNode& pn : layout->nodes) {
      const ViewNode& vn = m_model->nodes()[std::size_t(pn.node)];
      ShapeItem* item = shapeOfNode(scene, pn.node);
      QVERIFY(item);
      QCOMPARE(item->fill(), vn.fill);
      QCOMPARE(item->label(), vn.label);
      QCOMPARE(item->toolTip(), vn.tooltip);
      QVERIFY(item->flags() & QGraphicsItem::ItemIsSelectable);
      if (vn.kind == NodeKind::Apply) {
        QCOMPARE(item->shapeKind(), ShapeItem::Shape::Ellipse);
        QCOMPARE(item->fill(),
                 palette::opFamilyColor(QString::fromStdString(vn.apply->op().name())));
        ++ellipsesSeen;
      } else {
        QCOMPARE(item->shapeKind(), ShapeItem::Shape::Box);
        QCOMPARE(item->fill(), palette::variableColor(vn.role));
        ++boxesSeen;
      }
    }
    QCOMPARE(ellipsesSeen, 5);  // sin, transpose, sin, add, exp
    QVERIFY(boxesSeen >= 3);    // x, y, the output
    const int x = boxNamed(*m_model, "x");
    QCOMPARE(shapeOfNode(scene, x)->fill(), palette::variableColor(VariableRole::Input));
  }

  void groupsDrawnAsBoxesAndShadedClusters() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(GroupState::fromStringList({"block"})));
    const int block = m_model->groupByPath("block"), inner = m_model->groupByPath("block/inner");
    ShapeItem* box = groupBox(scene, inner);
    QVERIFY(box);
    QCOMPARE(box->shapeKind(), ShapeItem::Shape::Group);
    QCOMPARE(box->fill(), palette::collapsedGroupFill(GroupKind::Scope));
    QCOMPARE(box->label(), m_model->groups()[std::size_t(inner)].name);
    QCOMPARE(box->togglePath, QStringLiteral("block/inner"));
    const auto clusters = itemsOfType<ClusterItem>(scene);
    QCOMPARE(clusters.size(), std::size_t(1));
    QCOMPARE(clusters[0]->group, block);
    QCOMPARE(clusters[0]->fill(), palette::clusterFill(1));
  }

  // Rendered pixels along each edge's spline are its kind's colour: view dodgerblue, destroy red.
  void edgesDrawnInTheirKindsColour() {
    const auto layout = layoutOf(m_model->allExpanded());
    GraphScene scene;
    scene.setLegendVisible(false);
    scene.setContent(m_model, layout);
    const double scale = 2;
    const QRectF source = scene.sceneRect();
    QImage image((source.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    {
      QPainter painter(&image);
      painter.setRenderHint(QPainter::Antialiasing);
      scene.render(&painter, QRectF(QPointF(0, 0), QSizeF(image.size())), source);
    }
    const QTransform toImage =
        QTransform::fromScale(scale, scale).translate(-source.left(), -source.top());
    int view = 0, destroy = 0;
    for (EdgeItem* edge : itemsOfType<EdgeItem>(scene)) {
      const QColor want = palette::edgeColor(edge->kind());
      QVERIFY2(pathSamplesNear(image, edge->path(), toImage, want) >= 7,
               "an edge is not drawn in its kind's colour");
      if (edge->kind() == EdgeKind::View) {
        ++view;
        QCOMPARE(pathSamplesNear(image, edge->path(), toImage, QColor(Qt::red)), 0);
      }
      if (edge->kind() == EdgeKind::Destroy) {
        ++destroy;
        QCOMPARE(pathSamplesNear(image, edge->path(), toImage, QColor(0x1e, 0x90, 0xff)), 0);
      }
    }
    // An edge crossing a cluster border is drawn in pieces (one per level), each in its colour.
    const auto placedOfKind = [&](EdgeKind kind) {
      return int(std::count_if(layout->edges.begin(), layout->edges.end(),
                               [&](const PlacedEdge& e) { return e.kind == kind; }));
    };
    QVERIFY(view >= 1 && destroy >= 1);
    QCOMPARE(view, placedOfKind(EdgeKind::View));
    QCOMPARE(destroy, placedOfKind(EdgeKind::Destroy));
  }

  void hoverLightsTheNodeAndItsEdges() {
    GraphScene scene;
    const auto layout = layoutOf(m_model->allExpanded());
    scene.setContent(m_model, layout);
    const int add = m_model->edges()[std::size_t(edgeOfKind(*m_model, EdgeKind::Destroy))].to;
    ShapeItem* item = shapeOfNode(scene, add);
    QVERIFY(item);
    // Every piece of its three edges (two inputs, one consumer), on both sides of cluster borders.
    std::size_t pieces = 0;
    for (const PlacedEdge& pe : layout->edges)
      pieces += std::any_of(pe.edges.begin(), pe.edges.end(), [&](int e) {
        return m_model->edges()[std::size_t(e)].from == add ||
               m_model->edges()[std::size_t(e)].to == add;
      });
    QVERIFY(pieces > 3);
    QCOMPARE(item->edges.size(), pieces);
    QGraphicsSceneHoverEvent enter(QEvent::GraphicsSceneHoverEnter);
    scene.sendEvent(item, &enter);
    QVERIFY(item->isHovered());
    int lit = 0;
    for (EdgeItem* edge : itemsOfType<EdgeItem>(scene)) lit += edge->isHovered();
    QCOMPARE(std::size_t(lit), pieces);
    for (EdgeItem* edge : item->edges) QVERIFY(edge->isHovered());
    QGraphicsSceneHoverEvent leave(QEvent::GraphicsSceneHoverLeave);
    scene.sendEvent(item, &leave);
    QVERIFY(!item->isHovered());
    for (EdgeItem* edge : itemsOfType<EdgeItem>(scene)) QVERIFY(!edge->isHovered());
  }

  void selectionInModelTerms() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    QSignalSpy spy(&scene, &GraphScene::nodeSelected);
    const int x = boxNamed(*m_model, "x");
    scene.selectNode(x);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.last().at(0).toInt(), x);
    QCOMPARE(scene.selectedNode(), x);
    QVERIFY(shapeOfNode(scene, x)->isSelected());
    scene.selectNode(x);  // no change, no signal
    QCOMPARE(spy.count(), 1);
    const int add = m_model->edges()[std::size_t(edgeOfKind(*m_model, EdgeKind::Destroy))].to;
    scene.clearSelection();  // what a click does
    shapeOfNode(scene, add)->setSelected(true);
    QCOMPARE(scene.selectedNode(), add);
    QCOMPARE(spy.last().at(0).toInt(), add);
    scene.selectNode(-1);
    QCOMPARE(scene.selectedNode(), -1);
    QCOMPARE(spy.last().at(0).toInt(), -1);
  }

  // New content keeps a selected node that is still shown (no signal), and reports -1 when the
  // node went into a collapsed group.
  void selectionAcrossContent() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    const int x = boxNamed(*m_model, "x");
    const int add = m_model->edges()[std::size_t(edgeOfKind(*m_model, EdgeKind::Destroy))].to;
    scene.selectNode(x);
    QSignalSpy spy(&scene, &GraphScene::nodeSelected);
    scene.setContent(m_model, layoutOf(GroupState::fromStringList({"block"})));
    QCOMPARE(scene.selectedNode(), x);
    QCOMPARE(spy.count(), 0);
    scene.selectNode(add);
    scene.setContent(m_model, layoutOf(GroupState{}));
    QCOMPARE(scene.selectedNode(), -1);
    QCOMPARE(spy.last().at(0).toInt(), -1);
  }

  // setContentAsync: the old content stays until the new one is prepared, then the scene switches
  // (layout, node rects), creates the items over later turns and reports contentReady; the
  // selection carries over without a signal; a newer request supersedes an older one, and a
  // synchronous setContent supersedes both.
  void asynchronousContent() {
    GraphScene scene;
    const auto open = layoutOf(m_model->allExpanded());
    scene.setContent(m_model, open);
    const int x = boxNamed(*m_model, "x");
    scene.selectNode(x);
    QSignalSpy switched(&scene, &GraphScene::contentSwitched);
    QSignalSpy ready(&scene, &GraphScene::contentReady);
    QSignalSpy selected(&scene, &GraphScene::nodeSelected);
    const auto collapsed = layoutOf(GroupState{});
    scene.setContentAsync(m_model, collapsed);
    QVERIFY(scene.isBuilding());
    QCOMPARE(scene.sceneLayout(), open);
    QVERIFY(ready.wait(5000));
    QCOMPARE(switched.count(), 1);
    QVERIFY(!scene.isBuilding());
    QCOMPARE(scene.sceneLayout(), collapsed);
    QCOMPARE(itemsOfType<EdgeItem>(scene).size(), collapsed->edges.size());
    QCOMPARE(itemsOfType<ShapeItem>(scene).size(),
             collapsed->nodes.size() + collapsed->groups.size() + collapsed->ports.size());
    QCOMPARE(scene.selectedNode(), x);
    QVERIFY(shapeOfNode(scene, x)->isSelected());
    QCOMPARE(selected.count(), 0);
    const int block = m_model->groupByPath("block");
    QCOMPARE(scene.groupRect(block), groupBox(scene, block)->rect());

    const auto blockOpen = layoutOf(GroupState::fromStringList({"block"}));
    scene.setContentAsync(m_model, open);
    scene.setContentAsync(m_model, blockOpen);
    QVERIFY(ready.wait(5000));
    QTest::qWait(50);
    QCOMPARE(switched.count(), 2);
    QCOMPARE(scene.sceneLayout(), blockOpen);
    scene.setContentAsync(m_model, open);
    scene.setContent(m_model, collapsed);
    QTest::qWait(100);
    QCOMPARE(scene.sceneLayout(), collapsed);
    QCOMPARE(itemsOfType<EdgeItem>(scene).size(), collapsed->edges.size());
  }

  void doubleClicks() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(GroupState::fromStringList({"block"})));
    QSignalSpy toggles(&scene, &GraphScene::groupToggleRequested);
    QSignalSpy activations(&scene, &GraphScene::nodeActivated);
    auto doubleClick = [&](QGraphicsItem* item, QPointF at) {
      QGraphicsSceneMouseEvent event(QEvent::GraphicsSceneMouseDoubleClick);
      event.setButton(Qt::LeftButton);
      event.setButtons(Qt::LeftButton);
      event.setScenePos(at);
      scene.sendEvent(item, &event);
    };
    ShapeItem* inner = groupBox(scene, m_model->groupByPath("block/inner"));
    doubleClick(inner, inner->rect().center());
    QCOMPARE(toggles.count(), 1);
    QCOMPARE(toggles.last().at(0).toString(), QStringLiteral("block/inner"));
    ClusterItem* cluster = itemsOfType<ClusterItem>(scene).at(0);
    doubleClick(cluster, cluster->titleRect().center());
    QCOMPARE(toggles.last().at(0).toString(), QStringLiteral("block"));
    // Only the title bar takes the mouse: the cluster's body lets clicks through (to pan).
    QVERIFY(cluster->contains(cluster->titleRect().center()));
    QVERIFY(!cluster->contains(cluster->boundingRect().bottomRight() - QPointF(3, 3)));
    const int x = boxNamed(*m_model, "x");
    doubleClick(shapeOfNode(scene, x), scene.nodeRect(x).center());
    QCOMPARE(activations.count(), 1);
    QCOMPARE(activations.last().at(0).toInt(), x);
    QCOMPARE(toggles.count(), 2);
  }

  // Below GraphView::kTextScale a box is its fill alone; above it the label is drawn.
  void levelOfDetailDropsText() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    const int x = boxNamed(*m_model, "x");
    const QRectF rect = scene.nodeRect(x);
    const QColor fill = palette::variableColor(VariableRole::Input);
    QVERIFY(GraphView::kTextScale > 0.25);
    QCOMPARE(inkPixels(scene, rect, 0.25, fill), 0);
    QVERIFY(inkPixels(scene, rect, 1.0, fill) > 5);
    QVERIFY(inkPixels(scene, rect, GraphView::kTextScale + 0.1, fill) > 0);
  }

  void highlightOutlinesNodesOrTheirGroup() {
    GraphScene scene;
    const int add = m_model->edges()[std::size_t(edgeOfKind(*m_model, EdgeKind::Destroy))].to;
    const int x = boxNamed(*m_model, "x");
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    scene.setHighlight({add, x}, Qt::magenta);
    QVERIFY(shapeOfNode(scene, add)->isHighlighted());
    QVERIFY(shapeOfNode(scene, x)->isHighlighted());
    int lit = 0;
    for (ShapeItem* item : itemsOfType<ShapeItem>(scene)) lit += item->isHighlighted();
    QCOMPARE(lit, 2);
    // The highlight survives new content; a hidden node lights the collapsed group hiding it.
    scene.setContent(m_model, layoutOf(GroupState{}));
    QVERIFY(groupBox(scene, m_model->groupByPath("block"))->isHighlighted());
    QVERIFY(shapeOfNode(scene, x)->isHighlighted());
    scene.clearHighlight();
    for (ShapeItem* item : itemsOfType<ShapeItem>(scene)) QVERIFY(!item->isHighlighted());
  }

  // Zoomed out, one overview item draws every node and edge; the items paint nothing unless
  // hovered, selected or highlighted, and still take clicks. Node colours still show at overview
  // scale.
  void overviewModeBatchesDrawing() {
    GraphScene scene;
    scene.setLegendVisible(false);
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    const int x = boxNamed(*m_model, "x");
    const int add = m_model->edges()[std::size_t(edgeOfKind(*m_model, EdgeKind::Destroy))].to;
    scene.setOverview(true);
    QVERIFY(scene.overview());
    for (ShapeItem* item : itemsOfType<ShapeItem>(scene))
      QVERIFY(item->flags() & QGraphicsItem::ItemHasNoContents);
    for (EdgeItem* item : itemsOfType<EdgeItem>(scene))
      QVERIFY(item->flags() & QGraphicsItem::ItemHasNoContents);
    scene.selectNode(x);
    QVERIFY(!(shapeOfNode(scene, x)->flags() & QGraphicsItem::ItemHasNoContents));
    scene.setHighlight({add}, Qt::magenta);
    QVERIFY(!(shapeOfNode(scene, add)->flags() & QGraphicsItem::ItemHasNoContents));
    QCOMPARE(scene.items(scene.nodeRect(add).center()).value(0), shapeOfNode(scene, add));
    // The overview draws the fill of an unselected node at a zoomed-out scale.
    const int y = boxNamed(*m_model, "y");
    QVERIFY(inkPixels(scene, scene.nodeRect(y), 0.25, Qt::white) > 0);
    QCOMPARE(inkPixels(scene, scene.nodeRect(y), 0.25, palette::variableColor(VariableRole::Input)),
             0);
    // New content keeps the mode; switching back lets every item paint itself.
    scene.setContent(m_model, layoutOf(GroupState{}));
    QVERIFY(shapeOfNode(scene, y)->flags() & QGraphicsItem::ItemHasNoContents);
    scene.setOverview(false);
    for (ShapeItem* item : itemsOfType<ShapeItem>(scene))
      QVERIFY(!(item->flags() & QGraphicsItem::ItemHasNoContents));
    QVERIFY(inkPixels(scene, scene.nodeRect(y), 1.0, palette::variableColor(VariableRole::Input)) >
            5);
  }

  // A collapsed OpFromGraph is its outer node: an OFG-coloured box, selectable as that node, whose
  // double-click opens the body; open, it is a cluster and the DOT export resolves its ports.
  void opFromGraphGroups() {
    using namespace tscope::engine;
    const TensorType mat(DType::Float32, {3, 3});
    VarPtr gx = Variable::create(mat, "gx");
    const auto gelu = opFromGraph({gx}, {elemwise(ScalarOp::Sigmoid, {gx})}, "gelu_block");
    VarPtr x = Variable::create(mat, "x");
    VarPtr y = (*gelu)({x});
    auto model = ViewModel::build(graphOf({x}, {elemwise(ScalarOp::Exp, {y})}));
    int ofg = -1;
    for (std::size_t g = 0; g < model->groups().size(); ++g)
      if (model->groups()[g].kind == GroupKind::OpFromGraph) ofg = int(g);
    QVERIFY(ofg > 0);
    const Group& group = model->groups()[std::size_t(ofg)];
    GraphScene scene;
    scene.setContent(model, m_service.layoutNow(model, GroupState{}, LayoutOptions{}));
    ShapeItem* box = groupBox(scene, ofg);
    QVERIFY(box);
    QCOMPARE(box->fill(), palette::collapsedGroupFill(GroupKind::OpFromGraph));
    QCOMPARE(box->node, group.ofgViewNode);
    QCOMPARE(box->togglePath, group.path);
    QVERIFY(box->flags() & QGraphicsItem::ItemIsSelectable);
    QSignalSpy selected(&scene, &GraphScene::nodeSelected);
    scene.selectNode(group.ofgViewNode);
    QVERIFY(box->isSelected());
    QCOMPARE(selected.last().at(0).toInt(), group.ofgViewNode);
    QSignalSpy toggles(&scene, &GraphScene::groupToggleRequested);
    QGraphicsSceneMouseEvent event(QEvent::GraphicsSceneMouseDoubleClick);
    event.setButton(Qt::LeftButton);
    scene.sendEvent(box, &event);
    QCOMPARE(toggles.count(), 1);
    QCOMPARE(toggles.last().at(0).toString(), group.path);

    GroupState open;
    open.setExpanded(group.path, true);
    const auto layout = m_service.layoutNow(model, open, LayoutOptions{});
    scene.setContent(model, layout);
    QCOMPARE(itemsOfType<ClusterItem>(scene).size(), std::size_t(1));
    QVERIFY(!layout->ports.empty());
    const QString dot = sceneToDot(*model, *layout);
    QCOMPARE(int(dot.count(QStringLiteral(" -> "))), int(layout->edges.size()));
    QVERIFY(
        dot.contains(QRegularExpression(" -> p\\d+ \\[")));  // edges into the body end at its ports
  }

  void legendListsWhatIsShown() {
    GraphScene scene;
    scene.setContent(m_model, layoutOf(m_model->allExpanded()));
    const auto legends = itemsOfType<LegendItem>(scene);
    QCOMPARE(legends.size(), std::size_t(1));
    QStringList texts;
    for (const LegendItem::Row& row : legends[0]->rows()) {
      texts << row.text;
      if (row.text.contains("view")) QCOMPARE(row.color, palette::edgeColor(EdgeKind::View));
      if (row.text.contains("destroys")) QCOMPARE(row.color, palette::edgeColor(EdgeKind::Destroy));
    }
    for (const char* want : {"Elemwise", "graph input", "graph output", "value",
                             "view of the input", "destroys the input (inplace)"})
      QVERIFY2(texts.contains(want), qPrintable(texts.join(", ")));
    QVERIFY(!texts.contains("constant"));
    const QRectF withLegend = scene.sceneRect();
    QVERIFY(withLegend.contains(legends[0]->sceneBoundingRect()));
    scene.setLegendVisible(false);
    QVERIFY(!legends[0]->isVisible());
    QVERIFY(scene.sceneRect().width() < withLegend.width());
  }
};

TSCOPE_GUI_TEST_MAIN(TestGraphScene)
#include "tst_graph_scene.moc"

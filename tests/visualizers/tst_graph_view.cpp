// GraphView: zoom clamped to 0.05..8, wheel zoom about the cursor, keys zoom and pan, zoom to fit,
// centring on a node, the anchor rule (a toggled group's top-left stays put on screen), the minimap
// (shown with content, a click recentres), double-clicks through the viewport, and the frame time
// of a full repaint with 5,000 nodes on screen.
#include "gui_test_main.h"
#include "scene_test_support.h"
#include "view_model_test_support.h"
#include "visualizers/scene/graph_view.h"

#include <QElapsedTimer>
#include <QScrollBar>
#include <QSignalSpy>
#include <QWheelEvent>

#include <algorithm>
#include <set>

using namespace tscope::vis;
using namespace tscope::vis::testing;

class TestGraphView : public QObject {
  Q_OBJECT

  LayoutService m_service;
  std::shared_ptr<const ViewModel> m_model;

  std::shared_ptr<const SceneLayout> layoutOf(const GroupState& state) {
    return m_service.layoutNow(m_model, state, LayoutOptions{});
  }
  // Shows `view` at 800 x 600 with the given content as its first content.
  static void showContent(GraphView& view, const std::shared_ptr<const ViewModel>& model,
                          const std::shared_ptr<const SceneLayout>& layout) {
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setContent(model, layout);
  }

  void showView(GraphView& view, const GroupState& state) {
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setContent(m_model, layoutOf(state));
  }

 private slots:
  void initTestCase() { m_model = ViewModel::build(edgeKindsGraph()); }

  void zoomIsClamped() {
    GraphView view;
    showView(view, m_model->allExpanded());
    QSignalSpy spy(&view, &GraphView::zoomChanged);
    view.setZoom(100);
    QCOMPARE(view.zoom(), GraphView::kMaxZoom);
    view.setZoom(1e-4);
    QCOMPARE(view.zoom(), GraphView::kMinZoom);
    QCOMPARE(spy.count(), 2);
    QCOMPARE(spy.last().at(0).toDouble(), GraphView::kMinZoom);
    QVERIFY(view.graphScene()->overview());  // below kTextScale
    view.resetZoom();
    QCOMPARE(view.zoom(), 1.0);
    QVERIFY(!view.graphScene()->overview());
    view.zoomIn();
    QVERIFY(view.zoom() > 1.1);
    view.zoomOut();
    QVERIFY(qFuzzyCompare(view.zoom(), 1.0));
  }

  // The scene point under the cursor stays under the cursor.
  void wheelZoomsAboutTheCursor() {
    GraphView view;
    showView(view, m_model->allExpanded());
    view.resetZoom();
    const QPoint at(300, 200);
    const QPointF scenePoint = view.mapToScene(at);
    for (int angle : {120, 240, -360}) {
      const double before = view.zoom();
      QWheelEvent wheel(at, view.viewport()->mapToGlobal(at), QPoint(), QPoint(0, angle),
                        Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(view.viewport(), &wheel);
      QVERIFY(qAbs(view.zoom() / before - std::pow(2.0, angle / 480.0)) < 1e-6);
      const QPointF now = view.mapFromScene(scenePoint);
      QVERIFY2(qAbs(now.x() - at.x()) <= 2 && qAbs(now.y() - at.y()) <= 2,
               qPrintable(QStringLiteral("moved to %1,%2").arg(now.x()).arg(now.y())));
    }
  }

  void keysZoomAndPan() {
    GraphView view;
    showView(view, m_model->allExpanded());
    view.setZoom(3);
    const int h = view.horizontalScrollBar()->value(), v = view.verticalScrollBar()->value();
    QTest::keyClick(&view, Qt::Key_Right);
    QVERIFY(view.horizontalScrollBar()->value() > h);
    QTest::keyClick(&view, Qt::Key_Down);
    QVERIFY(view.verticalScrollBar()->value() > v);
    QTest::keyClick(&view, Qt::Key_Plus);
    QVERIFY(qFuzzyCompare(view.zoom(), 3 * 1.25));
    QTest::keyClick(&view, Qt::Key_Minus);
    QVERIFY(qFuzzyCompare(view.zoom(), 3.0));
  }

  void zoomToFitAndCentreOnNode() {
    GraphView view;
    showView(view, m_model->allExpanded());
    view.setZoom(6);
    view.zoomToFit();
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    QVERIFY(visible.adjusted(-1, -1, 1, 1).contains(view.graphScene()->sceneRect()));
    QVERIFY(view.zoom() <= 1.5);
    view.setZoom(4);
    const int x = boxNamed(*m_model, "x");
    view.centerOnNode(x);
    const QPointF centre = view.mapToScene(view.viewport()->rect().center());
    QVERIFY(QLineF(centre, view.graphScene()->nodeRect(x).center()).length() < 2);
  }

  // Any node can be centred, also one in a corner of the graph and at any zoom (the view's scroll
  // range has a viewport of room around the graph); zoom to fit still fits the graph's bounds.
  void centreOnNodesAtTheEdges_data() {
    QTest::addColumn<double>("zoom");
    QTest::newRow("0.1x") << 0.1;
    QTest::newRow("1x") << 1.0;
    QTest::newRow("4x") << 4.0;
  }
  void centreOnNodesAtTheEdges() {
    QFETCH(double, zoom);
    const auto model = ViewModel::build(chainGraph(200));
    const auto layout = gridLayout(*model, 20);
    GraphView view;
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setContent(model, layout);
    view.setZoom(zoom);
    const int last = int(layout->nodes.size()) - 1;
    for (int node : {0, 19, last - (last % 20), last}) {  // top-left, top-right, bottom-left, last
      view.centerOnNode(node);
      const QPointF centre = view.mapToScene(view.viewport()->rect().center());
      const QPointF want = view.graphScene()->nodeRect(node).center();
      QVERIFY2(QLineF(centre, want).length() * zoom < 2,
               qPrintable(QStringLiteral("node %1 at %2,%3, centre %4,%5")
                              .arg(node)
                              .arg(want.x())
                              .arg(want.y())
                              .arg(centre.x())
                              .arg(centre.y())));
    }
    view.zoomToFit();
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    QVERIFY(visible.adjusted(-1, -1, 1, 1).contains(view.graphScene()->sceneRect()));
    // Fitted: the graph fills the viewport along one side (the margin is not part of the fit).
    QVERIFY(view.graphScene()->sceneRect().width() > 0.9 * visible.width() ||
            view.graphScene()->sceneRect().height() > 0.9 * visible.height());
  }

  // setContentAsync: the view is placed when the scene switches, the items in the visible region
  // come first, contentReady once every item exists.
  // A graph too big to read when fitted opens at a readable zoom with its top in view; a small
  // one opens fitted (GraphView::showOpening). Ctrl+0 still fits the whole graph.
  void opensReadableAtTheTop_data() {
    QTest::addColumn<int>("columns");
    QTest::newRow("tall") << 1;
    QTest::newRow("wide and tall") << 40;
  }
  void opensReadableAtTheTop() {
    QFETCH(int, columns);
    const auto model = ViewModel::build(chainGraph(400));
    const auto layout = gridLayout(*model, columns);
    GraphView view;
    showContent(view, model, layout);
    QVERIFY2(view.zoom() >= GraphView::kReadableZoom && view.zoom() <= 1.0,
             qPrintable(QString::number(view.zoom())));
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    const QRectF first = layout->nodes.front().rect;  // the input, top left
    QVERIFY2(visible.contains(first),
             qPrintable(QStringLiteral("first node %1,%2 not in %3,%4 %5x%6")
                            .arg(first.x())
                            .arg(first.y())
                            .arg(visible.x())
                            .arg(visible.y())
                            .arg(visible.width())
                            .arg(visible.height())));
    const QRectF content = view.graphScene()->sceneRect();
    QVERIFY2(
        visible.top() < content.top() && visible.top() > content.top() - 40,
        qPrintable(
            QStringLiteral("view top %1, content top %2").arg(visible.top()).arg(content.top())));
    // The view never shows an empty band left of a graph wider than it.
    if (content.width() * view.zoom() > view.viewport()->width())
      QVERIFY2(visible.left() >= content.left() - 1,
               qPrintable(QStringLiteral("view left %1, content left %2")
                              .arg(visible.left())
                              .arg(content.left())));
    view.zoomToFit();
    QVERIFY(view.zoom() < GraphView::kReadableZoom);

    const auto small = ViewModel::build(chainGraph(3));
    GraphView fitted;
    showContent(fitted, small, gridLayout(*small, 2));
    const QRectF all = fitted.mapToScene(fitted.viewport()->rect()).boundingRect();
    QVERIFY(all.adjusted(-1, -1, 1, 1).contains(fitted.graphScene()->sceneRect()));
  }

  // revealNode zooms in to actual size when the node's label cannot be read, else keeps the zoom.
  void revealNodeZoomsInToRead() {
    const auto model = ViewModel::build(chainGraph(400));
    GraphView view;
    showContent(view, model, gridLayout(*model, 1));
    const int node = 300;
    view.setZoom(0.1);
    view.revealNode(node);
    QCOMPARE(view.zoom(), 1.0);
    QPointF centre = view.mapToScene(view.viewport()->rect().center());
    QVERIFY(QLineF(centre, view.graphScene()->nodeRect(node).center()).length() < 2);
    view.setZoom(0.5);
    view.revealNode(20);
    QCOMPARE(view.zoom(), 0.5);
    centre = view.mapToScene(view.viewport()->rect().center());
    QVERIFY(QLineF(centre, view.graphScene()->nodeRect(20).center()).length() < 4);
  }

  void asyncContentFillsTheViewportFirst() {
    const auto model = ViewModel::build(chainGraph(5000));
    const auto layout = gridLayout(*model, 70);
    GraphView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setMinimapVisible(false);
    QSignalSpy ready(&view, &GraphView::contentReady);
    view.setContentAsync(model, layout);
    QVERIFY(ready.wait(20000));
    QVERIFY(!view.graphScene()->overview());  // too big to read fitted: opens readable
    view.setZoom(1.0);
    const int centreNode = 36 * 70 + 35;
    view.centerOnNode(centreNode);
    QGraphicsScene* scene = view.scene();
    const std::size_t all = layout->nodes.size() + layout->edges.size() + 2;
    QCOMPARE(std::size_t(scene->items().size()), all);
    ready.clear();
    QSignalSpy switched(view.graphScene(), &GraphScene::contentSwitched);
    view.setContentAsync(model, gridLayout(*model, 70));
    QVERIFY(switched.wait(20000));
    // The first slices fill the visible region: all its nodes exist before the rest do.
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    auto visibleRegionBuilt = [&] {
      std::set<int> built;  // nodes with an item of the new content
      for (ShapeItem* shape : itemsOfType<ShapeItem>(*scene))
        if (!shape->isRetired()) built.insert(shape->node);
      return std::all_of(layout->nodes.begin(), layout->nodes.end(), [&](const PlacedNode& pn) {
        return !visible.intersects(pn.rect) || built.count(pn.node);
      });
    };
    QTRY_VERIFY_WITH_TIMEOUT(visibleRegionBuilt(), 5000);
    QVERIFY(ready.count() == 1 || ready.wait(20000));
    QCOMPARE(std::size_t(scene->items().size()), all);
    QCOMPARE(view.zoom(), 1.0);  // not fitted again: the centre stays
    QVERIFY(QLineF(view.mapToScene(view.viewport()->rect().center()),
                   view.graphScene()->nodeRect(centreNode).center())
                .length() < 2);
  }

  // Opening a group keeps its top-left corner where it was on screen.
  void toggledGroupStaysPut() {
    GraphView view;
    showView(view, GroupState{});
    view.setZoom(1.5);
    const int block = m_model->groupByPath("block");
    view.centerOn(view.graphScene()->groupRect(block).center() + QPointF(40, -30));
    const QRectF before = view.graphScene()->groupRect(block);
    const QPoint screenBefore = view.mapFromScene(before.topLeft());
    view.setContent(m_model, layoutOf(GroupState::fromStringList({"block"})), "block");
    const QRectF after = view.graphScene()->groupRect(block);
    QVERIFY(after.width() > before.width());  // it opened into a cluster
    const QPoint screenAfter = view.mapFromScene(after.topLeft());
    QVERIFY2((screenAfter - screenBefore).manhattanLength() <= 2,
             qPrintable(QStringLiteral("%1,%2 -> %3,%4")
                            .arg(screenBefore.x())
                            .arg(screenBefore.y())
                            .arg(screenAfter.x())
                            .arg(screenAfter.y())));
    QCOMPARE(view.zoom(), 1.5);
  }

  void minimapRecentres() {
    GraphView view;
    showView(view, m_model->allExpanded());
    auto* minimap = view.findChild<QWidget*>("minimap");
    QVERIFY(minimap);
    QVERIFY(view.minimapVisible());
    QVERIFY(minimap->isVisible());
    view.setZoom(4);
    const QPointF before = view.mapToScene(view.viewport()->rect().center());
    QTest::mouseClick(minimap, Qt::LeftButton, {}, QPoint(3, 3));
    const QPointF after = view.mapToScene(view.viewport()->rect().center());
    QVERIFY(QLineF(before, after).length() > 20);
    QVERIFY(after.x() < before.x() && after.y() < before.y());  // towards the top-left
    view.setMinimapVisible(false);
    QVERIFY(!minimap->isVisible());
    QVERIFY(!view.minimapVisible());
  }

  void doubleClickThroughTheViewport() {
    GraphView view;
    showView(view, GroupState{});
    QSignalSpy spy(view.graphScene(), &GraphScene::groupToggleRequested);
    const QRectF box = view.graphScene()->groupRect(m_model->groupByPath("block"));
    view.centerOn(box.center());
    QTest::mouseDClick(view.viewport(), Qt::LeftButton, {}, view.mapFromScene(box.center()));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("block"));
  }

  // Frame time of a full repaint with 5,000 nodes (and their edges) visible, zoomed out (shapes
  // only) and at 1x (text), panning between frames. Printed; the bound is loose for shared CI
  // machines, the target (16 ms) is checked by the benchmark.
  void frameTimeWithFiveThousandNodes() {
    const auto model = ViewModel::build(chainGraph(5000));
    const auto layout = gridLayout(*model, 70);
    GraphView view;
    view.resize(1280, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setMinimapVisible(false);
    QElapsedTimer build;
    build.start();
    view.setContent(model, layout);
    const double buildMs = double(build.nsecsElapsed()) / 1e6;
    view.zoomToFit();
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    int shown = 0;
    for (const PlacedNode& pn : layout->nodes) shown += visible.intersects(pn.rect);
    QVERIFY(shown >= 5000);
    auto medianFrame = [&](int frames) {
      std::vector<double> ms;
      for (int i = 0; i < frames; ++i) {
        view.horizontalScrollBar()->setValue(view.horizontalScrollBar()->value() +
                                             (i % 2 ? 25 : -25));
        ms.push_back(view.renderFrame());
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    const double fitZoom = view.zoom();
    const double zoomedOut = medianFrame(9);
    view.resetZoom();
    const double full = medianFrame(9);
    qInfo("setContent with %zu nodes and %zu edges: %.1f ms", layout->nodes.size(),
          layout->edges.size(), buildMs);
    qInfo("frame with %d nodes visible (zoom %.3f, no text): %.2f ms; at 1x: %.2f ms", shown,
          fitZoom, zoomedOut, full);
    QVERIFY(zoomedOut > 0);
    QVERIFY2(zoomedOut < 250, "a zoomed-out frame of 5,000 nodes took longer than 250 ms");
  }
};

TSCOPE_GUI_TEST_MAIN(TestGraphView)
#include "tst_graph_view.moc"

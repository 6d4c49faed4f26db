#include "engine/graph/function_graph.h"
#include "engine/graph/source_site.h"
#include "engine/graph/variable.h"
#include "engine/ops/elemwise/elemwise.h"
#include "gui_test_main.h"
#include "visualizers/layout/layout_service.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QThread>

#include <map>

using namespace tscope;
using namespace tscope::vis;
using engine::ScalarOp;
using engine::VarPtr;

namespace {

const engine::TensorType kVec(engine::DType::Float32, {8});

// x and w feed scope "a" (a chain with a nested scope "a/b" and "a/b/c"), then scope "d", then an
// output: groups to open and close at three depths, and values crossing every border.
std::shared_ptr<const ViewModel> scopedModel() {
  VarPtr x = engine::Variable::create(kVec, "x");
  VarPtr w = engine::Variable::create(kVec, "a_much_longer_weight_name");
  VarPtr h = x;
  {
    engine::NameScope a("a");
    h = engine::elemwise(ScalarOp::Mul, {h, w});
    h = engine::elemwise(ScalarOp::Sin, {h});
    {
      engine::NameScope b("b");
      h = engine::elemwise(ScalarOp::Add, {h, x});
      engine::NameScope c("c");
      h = engine::elemwise(ScalarOp::Tanh, {h});
      h = engine::elemwise(ScalarOp::Exp, {h});
    }
    h = engine::elemwise(ScalarOp::Cos, {h});
  }
  {
    engine::NameScope d("d");
    for (int i = 0; i < 4; ++i)
      h = engine::elemwise(i % 2 ? ScalarOp::Sin : ScalarOp::Add,
                           i % 2 ? std::vector{h} : std::vector{h, w});
  }
  VarPtr out = engine::elemwise(ScalarOp::Neg, {h});
  return ViewModel::build(std::make_shared<const engine::FunctionGraph>(std::vector<VarPtr>{x, w},
                                                                        std::vector<VarPtr>{out}));
}

// A flat DNN-like graph of about `items` drawn items: a chain of applies with a residual add every
// fourth node and a weight input feeding every third one.
std::shared_ptr<const ViewModel> flatModel(int items) {
  std::vector<VarPtr> inputs{engine::Variable::create(kVec, "x")};
  std::vector<VarPtr> chain{inputs.back()};
  int drawn = 2;  // x and the output box
  for (int i = 0; drawn < items; ++i) {
    VarPtr next;
    if (i % 3 == 2) {
      inputs.push_back(engine::Variable::create(kVec, "w" + std::to_string(i)));
      next = engine::elemwise(ScalarOp::Mul, {chain.back(), inputs.back()});
      drawn += 2;
    } else if (i % 4 == 3 && chain.size() > 4) {
      next = engine::elemwise(ScalarOp::Add, {chain.back(), chain[chain.size() - 4]});
      drawn += 1;
    } else {
      next = engine::elemwise(ScalarOp::Tanh, {chain.back()});
      drawn += 1;
    }
    chain.push_back(next);
  }
  return ViewModel::build(
      std::make_shared<const engine::FunctionGraph>(inputs, std::vector<VarPtr>{chain.back()}));
}

LayoutOptions options() {
  LayoutOptions o;
  o.font = QFont(QStringLiteral("DejaVu Sans"), 9);
  return o;
}

int boxNamed(const ViewModel& model, const std::string& name) {
  for (std::size_t i = 0; i < model.nodes().size(); ++i)
    if (model.nodes()[i].kind == NodeKind::Variable && model.nodes()[i].variable->name() == name)
      return static_cast<int>(i);
  return -1;
}

QRectF grown(const QRectF& r, double by) {
  return r.adjusted(-by, -by, by, by);
}

// Left-to-right order of the items of `group`'s level, rank by rank (items of one rank share their
// centre's y): keys "n<node>" and "g<group>".
std::vector<std::vector<QString>> rankOrder(const ViewModel& model, const SceneLayout& layout,
                                            int group) {
  std::map<long, std::map<double, QString>> ranks;
  for (const PlacedNode& pn : layout.nodes)
    if (model.nodes()[std::size_t(pn.node)].group == group)
      ranks[std::lround(pn.rect.center().y() * 2)][pn.rect.center().x()] =
          QStringLiteral("n%1").arg(pn.node);
  for (const PlacedGroup& pg : layout.groups)
    if (model.groups()[std::size_t(pg.group)].parent == group)
      ranks[std::lround(pg.rect.center().y() * 2)][pg.rect.center().x()] =
          QStringLiteral("g%1").arg(pg.group);
  std::vector<std::vector<QString>> order;
  for (const auto& [y, row] : ranks) {
    order.emplace_back();
    for (const auto& [x, key] : row) order.back().push_back(key);
  }
  return order;
}

}  // namespace

class TestLayoutService : public QObject {
  Q_OBJECT

 private slots:
  void testGeometry();
  void testNoEdgeLost();
  void testLongLabelGetsWiderNode();
  void testEdgeLabels();
  void testGraphvizRunsOnItsOwnThread();
  void testCaching();
  void testStableOrderWhenExpanding();
  void testStaleJobsAreNotEmitted();
  void testCancelledJobIsNeverEmitted();
  void testFailure();
  void testDestroyWhileRunning();
  void testTiming2000Flat();
};

void TestLayoutService::testGeometry() {
  LayoutService service;
  const auto model = scopedModel();
  const auto layout = service.layoutNow(model, model->allExpanded(), options());
  QVERIFY(layout);
  // Every node is shown (no OpFromGraph here) and indexed.
  QCOMPARE(layout->nodes.size(), model->nodes().size());
  for (std::size_t n = 0; n < model->nodes().size(); ++n) QVERIFY(layout->placedNode(int(n)) >= 0);
  QCOMPARE(layout->groups.size(), model->groups().size() - 1);
  QCOMPARE(layout->placedGroup(0), -1);  // the root is not a PlacedGroup
  // No two node rects overlap; groups of one parent do not overlap.
  for (std::size_t i = 0; i < layout->nodes.size(); ++i)
    for (std::size_t j = i + 1; j < layout->nodes.size(); ++j)
      QVERIFY(!grown(layout->nodes[i].rect, -0.5).intersects(layout->nodes[j].rect));
  // Every node lies inside its group's cluster, every cluster inside its parent's, below its title.
  for (const PlacedNode& pn : layout->nodes) {
    const int g = model->nodes()[std::size_t(pn.node)].group;
    QVERIFY(layout->bounds.contains(grown(pn.rect, -0.5)));
    if (g == 0) continue;
    const PlacedGroup& pg = layout->groups[std::size_t(layout->placedGroup(g))];
    QVERIFY(pg.expanded);
    QVERIFY2(pg.rect.contains(pn.rect), qPrintable(model->groups()[std::size_t(g)].path));
    QVERIFY(pn.rect.top() >= pg.titleRect.bottom());
  }
  for (const PlacedGroup& pg : layout->groups) {
    const Group& group = model->groups()[std::size_t(pg.group)];
    int depth = 0;
    for (int p = pg.group; p > 0; p = model->groups()[std::size_t(p)].parent) ++depth;
    QCOMPARE(pg.depth, depth);
    if (group.parent > 0) {
      const PlacedGroup& parent = layout->groups[std::size_t(layout->placedGroup(group.parent))];
      QVERIFY(parent.rect.contains(pg.rect));
      QVERIFY(layout->placedGroup(group.parent) < layout->placedGroup(pg.group));  // parents first
    }
  }
  // Edges start and end at something placed (a node, a group's box or a port).
  std::vector<QRectF> ends;
  for (const auto& pn : layout->nodes) ends.push_back(pn.rect);
  for (const auto& pg : layout->groups) ends.push_back(pg.rect);
  for (const auto& pp : layout->ports) ends.push_back(pp.rect);
  auto touches = [&](QPointF p) {
    return std::any_of(ends.begin(), ends.end(),
                       [&](const QRectF& r) { return grown(r, 3).contains(p); });
  };
  QVERIFY(!layout->edges.empty());
  for (const PlacedEdge& pe : layout->edges) {
    QVERIFY(touches(pe.path.pointAtPercent(0)));
    QVERIFY(touches(pe.arrowTip));
  }
  // y grows downwards: the input x is above the output.
  const QRectF x = layout->nodes[std::size_t(layout->placedNode(boxNamed(*model, "x")))].rect;
  int output = -1;
  for (std::size_t n = 0; n < model->nodes().size(); ++n)
    if (model->nodes()[n].kind == NodeKind::Variable &&
        model->nodes()[n].role == VariableRole::Output)
      output = int(n);
  QVERIFY(output >= 0);
  QVERIFY(x.bottom() < layout->nodes[std::size_t(layout->placedNode(output))].rect.top());
}

void TestLayoutService::testNoEdgeLost() {
  LayoutService service;
  const auto model = scopedModel();
  const auto layout = service.layoutNow(model, model->allExpanded(), options());
  std::vector<int> drawn(model->edges().size(), 0);
  for (const PlacedEdge& pe : layout->edges)
    for (int e : pe.edges) ++drawn[std::size_t(e)];
  for (std::size_t e = 0; e < drawn.size(); ++e)
    QVERIFY2(drawn[e] > 0, qPrintable(QString::number(e)));
  // Values crossing an expanded group's border go through ports on that border.
  QVERIFY(!layout->ports.empty());
  for (const PlacedPort& pp : layout->ports) {
    const PlacedGroup& pg = layout->groups[std::size_t(layout->placedGroup(pp.group))];
    QVERIFY(pg.rect.contains(pp.rect));
    QVERIFY(pp.source >= 0);
    // An in-port's value comes from outside the group, an out-port's from inside.
    QCOMPARE(model->isAncestor(pp.group, model->nodes()[std::size_t(pp.source)].group), !pp.input);
  }
  // Collapsed, a group is one box and its edges end on it.
  const auto collapsed = service.layoutNow(model, GroupState(), options());
  QVERIFY(collapsed->ports.empty());
  for (const PlacedGroup& pg : collapsed->groups) QVERIFY(!pg.expanded);
}

void TestLayoutService::testLongLabelGetsWiderNode() {
  LayoutService service;
  const auto model = scopedModel();
  const auto layout = service.layoutNow(model, GroupState(), options());
  const QRectF shortBox =
      layout->nodes[std::size_t(layout->placedNode(boxNamed(*model, "x")))].rect;
  const QRectF longBox =
      layout->nodes[std::size_t(layout->placedNode(boxNamed(*model, "a_much_longer_weight_name")))]
          .rect;
  QVERIFY(longBox.width() > shortBox.width() + 60);
  QCOMPARE(longBox.height(), shortBox.height());
  // The text fits: the box is at least as wide as the label in the layout font.
  QVERIFY(longBox.width() >=
          QFontMetricsF(options().font).horizontalAdvance("a_much_longer_weight_name"));
}

void TestLayoutService::testEdgeLabels() {
  LayoutService service;
  const auto model = scopedModel();
  LayoutOptions o = options();
  const auto labelled = service.layoutNow(model, model->allExpanded(), o);
  int labels = 0;
  for (const PlacedEdge& pe : labelled->edges) {
    if (pe.label.isEmpty()) continue;
    ++labels;
    QVERIFY(grown(labelled->bounds, 1).contains(pe.labelPos));
    // Beside its edge: within a label's width of the spline's bounding box.
    QVERIFY(grown(pe.path.boundingRect(), 80).contains(pe.labelPos));
  }
  QVERIFY(labels > 0);
  o.edgeLabels = false;
  const auto bare = service.layoutNow(model, model->allExpanded(), o);
  for (const PlacedEdge& pe : bare->edges) QVERIFY(pe.label.isEmpty());
  // Without labels dot needs no room for them: the drawing is no taller.
  QVERIFY(bare->bounds.height() <= labelled->bounds.height());
}

void TestLayoutService::testGraphvizRunsOnItsOwnThread() {
  LayoutService service;
  const auto model = scopedModel();
  QSignalSpy ready(&service, &LayoutService::layoutReady);
  QThread* deliveredOn = nullptr;
  connect(&service, &LayoutService::layoutReady, this,
          [&] { deliveredOn = QThread::currentThread(); });
  service.layoutNow(model, model->allExpanded(), options());
  service.request(model, GroupState(), options());
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 10000);
  const LayoutStats stats = service.stats();
  QVERIFY(stats.graphvizThread != std::thread::id());
  QVERIFY(stats.graphvizThread != std::this_thread::get_id());
  QVERIFY(stats.levelsLaidOut > 0);
  // Results reach receivers on the GUI thread, queued.
  QCOMPARE(deliveredOn, QThread::currentThread());
}

void TestLayoutService::testCaching() {
  LayoutService service;
  const auto model = scopedModel();
  GroupState state;
  service.layoutNow(model, state, options());
  QCOMPARE(service.stats().levelsLaidOut, 1u);  // only the root level is shown
  service.layoutNow(model, state, options());
  QCOMPARE(service.stats().levelsLaidOut, 1u);  // the same request lays out nothing
  QVERIFY(service.stats().cacheHits >= 1);

  // Expanding a group lays out that group and its ancestors only.
  struct Step {
    const char* expand;
    std::uint64_t laidOut;
  };
  for (const Step step : {Step{"d", 2}, Step{"a", 2}, Step{"a/b", 3}, Step{"a/b/c", 4}}) {
    const auto before = service.stats();
    state.setExpanded(step.expand, true);
    service.layoutNow(model, state, options());
    QCOMPARE(service.stats().levelsLaidOut - before.levelsLaidOut, step.laidOut);
  }
  // Collapsing back to a state seen before comes from the cache.
  const auto before = service.stats();
  state.setExpanded("a/b/c", false);
  service.layoutNow(model, state, options());
  QCOMPARE(service.stats().levelsLaidOut, before.levelsLaidOut);
  service.clearCache();
  service.layoutNow(model, state, options());
  QVERIFY(service.stats().levelsLaidOut > before.levelsLaidOut);
}

void TestLayoutService::testStableOrderWhenExpanding() {
  LayoutService service;
  const auto model = scopedModel();
  GroupState state;
  state.setExpanded("a", true);
  const auto before = service.layoutNow(model, state, options());
  for (const char* path : {"d", "a/b"}) {
    state.setExpanded(path, true);
    const auto after = service.layoutNow(model, state, options());
    for (int g : {0, model->groupByPath("a")})
      QCOMPARE(rankOrder(*model, *after, g), rankOrder(*model, *before, g));
  }
}

void TestLayoutService::testStaleJobsAreNotEmitted() {
  LayoutService service;
  const auto model = flatModel(300);
  const auto scoped = scopedModel();
  QSignalSpy ready(&service, &LayoutService::layoutReady);
  QSignalSpy failed(&service, &LayoutService::layoutFailed);
  LayoutOptions o = options();
  std::uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    o.nodeSep = 18 + i;  // different requests: no cache hits
    last = service.request(model, GroupState(), o, /*channel=*/7);
  }
  const std::uint64_t other = service.request(scoped, GroupState(), options(), /*channel=*/8);
  QVERIFY(last > 0 && other > last);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 2, 20000);
  QTest::qWait(100);
  QCOMPARE(ready.count(), 2);
  QCOMPARE(failed.count(), 0);
  QSet<quint64> jobs{ready.at(0).at(0).toULongLong(), ready.at(1).at(0).toULongLong()};
  QCOMPARE(jobs, (QSet<quint64>{last, other}));
  QVERIFY(service.stats().jobsDropped >= 2);
  const auto layout = ready.at(0).at(1).value<std::shared_ptr<const SceneLayout>>();
  QVERIFY(layout && !layout->nodes.empty());
}

void TestLayoutService::testCancelledJobIsNeverEmitted() {
  LayoutService service;
  const auto model = flatModel(300);
  QSignalSpy ready(&service, &LayoutService::layoutReady);
  const std::uint64_t running = service.request(model, GroupState(), options(), 1);
  const std::uint64_t pending = service.request(model, GroupState(), options(), 2);
  service.cancel(pending);
  service.cancel(running);
  const std::uint64_t marker = service.request(scopedModel(), GroupState(), options(), 3);
  QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 20000);
  QTest::qWait(100);
  QCOMPARE(ready.count(), 1);
  QCOMPARE(ready.at(0).at(0).toULongLong(), marker);
  QVERIFY(service.stats().jobsDropped >= 2);
}

void TestLayoutService::testFailure() {
  LayoutService service;
  const auto model = scopedModel();
  LayoutOptions bad = options();
  bad.nodeSep = -5;
  QSignalSpy failed(&service, &LayoutService::layoutFailed);
  QSignalSpy ready(&service, &LayoutService::layoutReady);
  const std::uint64_t job = service.request(model, GroupState(), bad);
  QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
  QCOMPARE(failed.at(0).at(0).toULongLong(), job);
  const QString message = failed.at(0).at(1).toString();
  QVERIFY2(message.contains("nodeSep") && message.contains("-5"), qPrintable(message));
  QCOMPARE(ready.count(), 0);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, service.layoutNow(model, GroupState(), bad));
  // The service keeps working after a failure.
  QVERIFY(service.layoutNow(model, GroupState(), options()));
}

void TestLayoutService::testDestroyWhileRunning() {
  const auto model = flatModel(600);
  int emitted = 0;
  {
    LayoutService service;
    connect(&service, &LayoutService::layoutReady, this, [&] { ++emitted; });
    for (int i = 0; i < 3; ++i) service.request(model, GroupState(), options(), i);
    QTest::qWait(20);  // the first job is running now
  }
  // Destroyed with a job running and two pending: nothing arrives afterwards.
  QTest::qWait(100);
  QVERIFY(emitted <= 1);
}

void TestLayoutService::testTiming2000Flat() {
  const auto model = flatModel(2000);
  LayoutService service;
  QElapsedTimer timer;
  timer.start();
  const auto layout = service.layoutNow(model, GroupState(), options());
  const double total = timer.nsecsElapsed() / 1e9;
  qInfo("flat level of %zu nodes, %zu edges: %.2f s in total, %.2f s in dot", layout->nodes.size(),
        layout->edges.size(), total, service.stats().dotSeconds);
  QCOMPARE(layout->nodes.size(), model->nodes().size());
  timer.restart();
  service.layoutNow(model, GroupState(), options());
  qInfo("the same layout again (cached): %.3f s", timer.nsecsElapsed() / 1e9);
  QCOMPARE(service.stats().levelsLaidOut, 1u);
}

TSCOPE_GUI_TEST_MAIN(TestLayoutService)
#include "tst_layout_service.moc"

#include "gui_test_main.h"
#include "visualizers/layout/graphviz_level.h"

#include <QElapsedTimer>

#include <clocale>
#include <future>

using namespace tscope::vis::layout;

namespace {

LevelNodeSpec node(const QString& key, double w = 60, double h = 30,
                   LevelNodeSpec::Rank rank = LevelNodeSpec::Rank::Normal) {
  LevelNodeSpec n;
  n.key = key;
  n.width = w;
  n.height = h;
  n.rank = rank;
  return n;
}

LevelEdgeSpec edge(int from, int to, QSizeF label = {}) {
  LevelEdgeSpec e;
  e.from = from;
  e.to = to;
  e.labelSize = label;
  return e;
}

// A DNN-like DAG: a chain of applies with residual skips every few nodes, and about a third of the
// items weight boxes that each feed one apply.
LevelSpec dnnLike(int items, bool labels) {
  LevelSpec spec;
  std::vector<int> applies;
  for (int i = 0; i < items; ++i) {
    const bool weight = i % 3 == 2;
    spec.nodes.push_back(node(QStringLiteral("n%1").arg(i), weight ? 50 : 80, weight ? 22 : 34));
    if (!weight) spec.nodes.back().shape = LevelNodeSpec::Shape::Ellipse;
    const QSizeF label = labels ? QSizeF(52, 12) : QSizeF();
    if (weight) {
      continue;
    }
    if (!applies.empty()) spec.edges.push_back(edge(applies.back(), i, label));
    if (applies.size() >= 4 && applies.size() % 4 == 0)
      spec.edges.push_back(edge(applies[applies.size() - 4], i, label));
    applies.push_back(i);
  }
  // Each weight feeds the apply that follows it.
  for (int i = 2; i + 1 < items; i += 3) spec.edges.push_back(edge(i, i + 1));
  return spec;
}

bool near(QPointF a, QRectF r, double tolerance) {
  return r.adjusted(-tolerance, -tolerance, tolerance, tolerance).contains(a);
}

}  // namespace

class TestGraphvizLevel : public QObject {
  Q_OBJECT

 private slots:
  void testChainIsTopDown();
  void testFixedSizes();
  void testNoOverlapAndEdgeEnds();
  void testPortRanks();
  void testEdgeLabels_data();
  void testEdgeLabels();
  void testCacheKey();
  void testGraphvizErrorCarriesMessage();
  void testOtherThreadIsRefused();
  void testLocaleUntouched();
  void testEmptyLevelSelfLoopAndCycle();
  void testTiming2000Flat();
};

void TestGraphvizLevel::testChainIsTopDown() {
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.nodes = {node("a"), node("b"), node("c")};
  spec.edges = {edge(0, 1), edge(1, 2)};
  const LevelLayout result = layouter.layout(spec);
  QCOMPARE(result.nodes.size(), 3u);
  QCOMPARE(result.edges.size(), 2u);
  // y grows downwards: the source of a chain is above its sink.
  QVERIFY(result.nodes[0].bottom() <= result.nodes[1].top());
  QVERIFY(result.nodes[1].bottom() <= result.nodes[2].top());
  // Local coordinates: the bounding box starts at (0, 0) and holds every node.
  const QRectF box(QPointF(0, 0), result.size);
  for (const auto& r : result.nodes)
    QVERIFY2(box.adjusted(-1, -1, 1, 1).contains(r), "node outside bb");
  QVERIFY(result.seconds > 0);
}

void TestGraphvizLevel::testFixedSizes() {
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.nodes = {node("short", 40, 20), node("long", 400, 20), node("tall", 40, 90)};
  spec.edges = {edge(0, 1), edge(0, 2)};
  const LevelLayout result = layouter.layout(spec);
  QCOMPARE(qRound(result.nodes[0].width()), 40);
  QCOMPARE(qRound(result.nodes[1].width()), 400);
  QCOMPARE(qRound(result.nodes[2].height()), 90);
  QVERIFY(result.nodes[1].width() > result.nodes[0].width());
}

void TestGraphvizLevel::testNoOverlapAndEdgeEnds() {
  GraphvizLayouter layouter;
  const LevelSpec spec = dnnLike(150, true);
  const LevelLayout result = layouter.layout(spec);
  for (std::size_t i = 0; i < result.nodes.size(); ++i)
    for (std::size_t j = i + 1; j < result.nodes.size(); ++j)
      QVERIFY2(!result.nodes[i].adjusted(0.5, 0.5, -0.5, -0.5).intersects(result.nodes[j]),
               qPrintable(QStringLiteral("nodes %1 and %2 overlap").arg(i).arg(j)));
  for (std::size_t i = 0; i < spec.edges.size(); ++i) {
    const auto& geometry = result.edges[i];
    QVERIFY(!geometry.path.isEmpty());
    const QRectF from = result.nodes[spec.edges[i].from];
    const QRectF to = result.nodes[spec.edges[i].to];
    QVERIFY2(near(geometry.path.pointAtPercent(0), from, 3), qPrintable(QString::number(i)));
    QVERIFY2(near(geometry.arrowTip, to, 3), qPrintable(QString::number(i)));
    // The arrow points into its head node: the base is further from it than the tip.
    QVERIFY(QLineF(geometry.arrowBase, to.center()).length() >=
            QLineF(geometry.arrowTip, to.center()).length());
  }
}

void TestGraphvizLevel::testPortRanks() {
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.nodes = {node("i1", 10, 10, LevelNodeSpec::Rank::Source),
                node("a"),
                node("b"),
                node("c"),
                node("o1", 10, 10, LevelNodeSpec::Rank::Sink),
                node("i2", 10, 10, LevelNodeSpec::Rank::Source)};
  // i2 feeds the last node only: without rank=source it would sit just above c.
  spec.edges = {edge(0, 1), edge(1, 2), edge(2, 3), edge(3, 4), edge(5, 3)};
  const LevelLayout result = layouter.layout(spec);
  QCOMPARE(result.nodes[5].center().y(), result.nodes[0].center().y());
  for (int i = 1; i <= 3; ++i) {
    QVERIFY(result.nodes[0].bottom() < result.nodes[i].top());
    QVERIFY(result.nodes[4].top() > result.nodes[i].bottom());
  }
}

void TestGraphvizLevel::testEdgeLabels_data() {
  QTest::addColumn<bool>("external");
  QTest::newRow("label") << false;
  QTest::newRow("xlabel") << true;
}

void TestGraphvizLevel::testEdgeLabels() {
  QFETCH(bool, external);
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.externalLabels = external;
  spec.nodes = {node("a"), node("b")};
  spec.edges = {edge(0, 1, QSizeF(80, 14))};
  const LevelLayout result = layouter.layout(spec);
  const QPointF label = result.edges[0].labelPos;
  // The label sits between the two nodes vertically, and a real label gets room: the ranks are
  // at least its height apart.
  QVERIFY2(label.y() > result.nodes[0].top() && label.y() < result.nodes[1].bottom(),
           qPrintable(QStringLiteral("label at %1").arg(label.y())));
  if (!external) QVERIFY(result.nodes[1].top() - result.nodes[0].bottom() >= 14);
}

void TestGraphvizLevel::testCacheKey() {
  LevelSpec a = dnnLike(30, true);
  LevelSpec b = dnnLike(30, true);
  QCOMPARE(a.cacheKey(), b.cacheKey());
  b.nodes[4].width += 10;
  QVERIFY(a.cacheKey() != b.cacheKey());
  b = a;
  b.fast = true;
  QVERIFY(a.cacheKey() != b.cacheKey());
  b = a;
  b.edges[0].labelSize = QSizeF();
  QVERIFY(a.cacheKey() != b.cacheKey());
}

void TestGraphvizLevel::testGraphvizErrorCarriesMessage() {
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.nodes = {node("a"), node("b")};
  spec.edges = {edge(0, 1)};
  try {
    layouter.layout(spec, "no_such_engine");
    QFAIL("expected a GraphvizError");
  } catch (const GraphvizError& e) {
    const QString message = QString::fromUtf8(e.what());
    QVERIFY2(message.contains("no_such_engine") && message.contains("not recognized"),
             qPrintable(message));
  }
  // The layouter is still usable after a failure.
  QCOMPARE(layouter.layout(spec).nodes.size(), 2u);
  // Duplicate keys are refused with a message, not silently merged.
  spec.nodes[1].key = "a";
  QVERIFY_THROWS_EXCEPTION(GraphvizError, layouter.layout(spec));
}

void TestGraphvizLevel::testOtherThreadIsRefused() {
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.nodes = {node("a")};
  auto result = std::async(std::launch::async, [&] {
    try {
      layouter.layout(spec);
      return QString("no exception");
    } catch (const std::logic_error& e) {
      return QString::fromUtf8(e.what());
    }
  });
  QVERIFY(result.get().contains("does not own Graphviz"));
  QCOMPARE(layouter.ownerThread(), std::this_thread::get_id());
}

void TestGraphvizLevel::testLocaleUntouched() {
  const std::string before = std::setlocale(LC_NUMERIC, nullptr);
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.nodes = {node("a", 72.5, 36.25), node("b")};
  spec.edges = {edge(0, 1, QSizeF(30, 12))};
  const LevelLayout result = layouter.layout(spec);
  QCOMPARE(std::string(std::setlocale(LC_NUMERIC, nullptr)), before);
  // Fractional sizes reach Graphviz intact (a locale with a decimal comma would truncate them).
  QVERIFY(qAbs(result.nodes[0].width() - 72.5) < 0.05);
  QVERIFY(qAbs(result.nodes[0].height() - 36.25) < 0.05);
}

void TestGraphvizLevel::testEmptyLevelSelfLoopAndCycle() {
  GraphvizLayouter layouter;
  const LevelLayout empty = layouter.layout(LevelSpec());
  QVERIFY(empty.nodes.empty());
  QVERIFY(empty.size.width() >= 0 && empty.size.height() >= 0);
  LevelSpec loop;
  loop.nodes = {node("a")};
  loop.edges = {edge(0, 0)};
  const LevelLayout result = layouter.layout(loop);
  QVERIFY(!result.edges[0].path.isEmpty());
  QVERIFY(near(result.edges[0].arrowTip, result.nodes[0], 3));
  // A cycle: dot reverses one edge to rank the graph, yet both arrows end at their own heads.
  LevelSpec cycle;
  cycle.nodes = {node("a"), node("b")};
  cycle.edges = {edge(0, 1), edge(1, 0)};
  const LevelLayout both = layouter.layout(cycle);
  QVERIFY(near(both.edges[0].arrowTip, both.nodes[1], 3));
  QVERIFY(near(both.edges[1].arrowTip, both.nodes[0], 3));
  QVERIFY(near(both.edges[1].path.pointAtPercent(0), both.nodes[1], 3));
}

void TestGraphvizLevel::testTiming2000Flat() {
  GraphvizLayouter layouter;
  for (bool external : {true, false}) {
    LevelSpec spec = dnnLike(2000, true);
    spec.fast = true;
    spec.externalLabels = external;
    const LevelLayout result = layouter.layout(spec);
    qInfo("dot, 2000-node flat level, %zu edges, fast settings, %s: %.2f s", spec.edges.size(),
          external ? "xlabel" : "label", result.seconds);
    QCOMPARE(result.nodes.size(), 2000u);
  }
}

TSCOPE_GUI_TEST_MAIN(TestGraphvizLevel)
#include "tst_graphviz_level.moc"

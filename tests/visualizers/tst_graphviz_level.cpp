#include "gui_test_main.h"
#include "visualizers/layout/graphviz_level.h"
#include "visualizers/layout/level_hubs.h"

#include <QElapsedTimer>

#include <clocale>
#include <future>
#include <random>

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

// A level that makes dot call decompose() three times: ports in rank=source/sink sets and a node
// with no way out ("dead"), for which dot adds an edge to the sink set and decomposes again.
LevelSpec portedLevel() {
  LevelSpec spec;
  spec.nodes = {node("in", 10, 10, LevelNodeSpec::Rank::Source), node("a"), node("b"), node("dead"),
                node("out", 10, 10, LevelNodeSpec::Rank::Sink)};
  spec.edges = {edge(0, 1), edge(1, 2), edge(2, 4), edge(1, 3)};
  return spec;
}

// Levels of every shape the assembler produces: 1-40 items, DAG edges with an occasional back
// edge, in- and out-ports, edge labels real, external or none, fast settings on or off.
LevelSpec randomLevel(std::mt19937& random) {
  auto below = [&random](int n) { return std::uniform_int_distribution<int>(0, n - 1)(random); };
  LevelSpec spec;
  const int items = 1 + below(40);
  const int inPorts = below(4) == 0 ? 0 : below(5);
  const int outPorts = below(4) == 0 ? 0 : below(5);
  const bool labels = below(2) == 0;
  spec.fast = below(3) == 0;
  spec.labels = static_cast<LevelSpec::LabelPlacement>(below(3));
  const QSizeF label = labels ? QSizeF(20 + below(60), 12) : QSizeF();
  for (int i = 0; i < items; ++i) {
    spec.nodes.push_back(node(QStringLiteral("n%1").arg(i), 20 + below(120), 20 + below(20)));
    if (below(2) == 0) spec.nodes.back().shape = LevelNodeSpec::Shape::Ellipse;
  }
  for (int i = 1; i < items; ++i) {
    spec.edges.push_back(edge(below(i), i, label));
    if (below(3) == 0) spec.edges.push_back(edge(below(i), i, label));
  }
  if (items > 2 && below(8) == 0) spec.edges.push_back(edge(items - 1, below(items - 1), label));
  for (int p = 0; p < inPorts; ++p) {
    spec.nodes.push_back(node(QStringLiteral("i%1").arg(p), 10, 10, LevelNodeSpec::Rank::Source));
    spec.edges.push_back(edge(int(spec.nodes.size()) - 1, below(items), label));
  }
  for (int p = 0; p < outPorts; ++p) {
    spec.nodes.push_back(node(QStringLiteral("o%1").arg(p), 10, 10, LevelNodeSpec::Rank::Sink));
    spec.edges.push_back(edge(below(items), int(spec.nodes.size()) - 1, label));
  }
  return spec;
}

// In-ports share the top rank and out-ports the bottom one, whatever else the level holds.
bool portsOnTheirRanks(const LevelSpec& spec, const LevelLayout& result) {
  double lowestIn = -1e9, highestOut = 1e9, top = 1e9, bottom = -1e9;
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    const QRectF r = result.nodes[i];
    switch (spec.nodes[i].rank) {
      case LevelNodeSpec::Rank::Source:
        lowestIn = std::max(lowestIn, r.bottom());
        break;
      case LevelNodeSpec::Rank::Sink:
        highestOut = std::min(highestOut, r.top());
        break;
      case LevelNodeSpec::Rank::Normal:
        top = std::min(top, r.top());
        bottom = std::max(bottom, r.bottom());
        break;
    }
  }
  return lowestIn < top && highestOut > bottom;
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
  void testDecomposeMarkWrap();
  void testManyLevelsInARow();
  void testFastLevelsRouteCheaply();
  void testDetachedHubs();
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
  QTest::addColumn<LevelSpec::LabelPlacement>("placement");
  QTest::newRow("label") << LevelSpec::LabelPlacement::Dot;
  QTest::newRow("xlabel") << LevelSpec::LabelPlacement::External;
  QTest::newRow("midpoint") << LevelSpec::LabelPlacement::Midpoint;
}

void TestGraphvizLevel::testEdgeLabels() {
  QFETCH(LevelSpec::LabelPlacement, placement);
  GraphvizLayouter layouter;
  LevelSpec spec;
  spec.labels = placement;
  spec.nodes = {node("a"), node("b")};
  spec.edges = {edge(0, 1, QSizeF(80, 14))};
  const LevelLayout result = layouter.layout(spec);
  const QPointF label = result.edges[0].labelPos;
  // The label sits between the two nodes vertically, and a real label gets room: the ranks are
  // at least its height apart.
  QVERIFY2(label.y() > result.nodes[0].top() && label.y() < result.nodes[1].bottom(),
           qPrintable(QStringLiteral("label at %1").arg(label.y())));
  if (placement == LevelSpec::LabelPlacement::Dot)
    QVERIFY(result.nodes[1].top() - result.nodes[0].bottom() >= 14);
  if (placement == LevelSpec::LabelPlacement::Midpoint)
    QCOMPARE(label, result.edges[0].path.pointAtPercent(0.5));
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
  b.labels = LevelSpec::LabelPlacement::Midpoint;
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

// Note [dot's decompose mark wraps]: without the guard this sequence crashes in decompose().
void TestGraphvizLevel::testDecomposeMarkWrap() {
  GraphvizLayouter layouter;
  QVERIFY2(layouter.guardsMarkWrap(),
           "the dot plugin's decompose() could not be probed: Graphviz 2.42 would crash");
  LevelSpec plain;
  plain.nodes = {node("a"), node("b")};
  plain.edges = {edge(0, 1)};
  const LevelSpec ported = portedLevel();
  // A ported level makes three decompose() calls, the second after acyclic(); a plain one two.
  // 90 ported levels span more than the 255 calls of a wrap, and a plain level between rounds
  // shifts the wrap by one call relative to the ported levels: in one of three rounds it falls on
  // the call after acyclic(), whatever the counter was when the test began.
  for (int round = 0; round < 3; ++round) {
    QCOMPARE(layouter.layout(plain).nodes.size(), 2u);
    for (int i = 0; i < 90; ++i) {
      const LevelLayout result = layouter.layout(ported);
      QCOMPARE(result.nodes.size(), ported.nodes.size());
      QVERIFY2(portsOnTheirRanks(ported, result),
               qPrintable(QStringLiteral("round %1, level %2").arg(round).arg(i)));
    }
  }
}

// The sequences that crashed in bench_gui: a big flat level with the fast settings, then many
// small levels of every shape, with the counter passing its wrap several times.
void TestGraphvizLevel::testManyLevelsInARow() {
  GraphvizLayouter layouter;
  LevelSpec big = dnnLike(700, false);
  big.fast = true;
  big.labels = LevelSpec::LabelPlacement::Midpoint;
  QCOMPARE(layouter.layout(big).nodes.size(), 700u);
  std::mt19937 random(6);
  for (int i = 0; i < 600; ++i) {
    const LevelSpec spec = randomLevel(random);
    const LevelLayout result = layouter.layout(spec);
    QCOMPARE(result.nodes.size(), spec.nodes.size());
    QCOMPARE(result.edges.size(), spec.edges.size());
    QVERIFY2(portsOnTheirRanks(spec, result), qPrintable(QStringLiteral("level %1").arg(i)));
    for (const auto& geometry : result.edges) QVERIFY(!geometry.path.isEmpty());
  }
}

// Whether every cubic of the path is a straight segment (its control points on its chord).
static bool straightSegments(const QPainterPath& path) {
  for (int i = 1; i + 2 < path.elementCount(); ++i) {
    if (path.elementAt(i).type != QPainterPath::CurveToElement) continue;
    const QPointF p0 = path.elementAt(i - 1), c1 = path.elementAt(i), c2 = path.elementAt(i + 1),
                  p1 = path.elementAt(i + 2);
    const QLineF chord(p0, p1);
    auto off = [&](QPointF c) {
      const double length = std::max(chord.length(), 1e-9);
      return std::abs((p1.x() - p0.x()) * (p0.y() - c.y()) - (p0.x() - c.x()) * (p1.y() - p0.y())) /
             length;
    };
    if (off(c1) > 0.5 || off(c2) > 0.5) return false;
  }
  return true;
}

// Note [Fast settings for big levels]: splines up to 4,000 edges, polylines above; labels of a
// midpoint level sit on their paths.
void TestGraphvizLevel::testFastLevelsRouteCheaply() {
  GraphvizLayouter layouter;
  for (int items : {900, 3600}) {
    LevelSpec spec = dnnLike(items, true);
    spec.fast = true;
    spec.labels = LevelSpec::LabelPlacement::Midpoint;
    const LevelLayout result = layouter.layout(spec);
    const bool polylines = spec.edges.size() > 4000;
    QCOMPARE(polylines, items == 3600);
    bool allStraight = true;
    for (std::size_t i = 0; i < spec.edges.size(); ++i) {
      allStraight = allStraight && straightSegments(result.edges[i].path);
      if (!spec.edges[i].labelSize.isEmpty())
        QCOMPARE(result.edges[i].labelPos, result.edges[i].path.pointAtPercent(0.5));
    }
    QCOMPARE(allStraight, polylines);
  }
}

void TestGraphvizLevel::testTiming2000Flat() {
  GraphvizLayouter layouter;
  using LabelPlacement = LevelSpec::LabelPlacement;
  for (LabelPlacement placement : {LabelPlacement::Midpoint, LabelPlacement::External}) {
    LevelSpec spec = dnnLike(2000, true);
    spec.fast = true;
    spec.labels = placement;
    const LevelLayout result = layouter.layout(spec);
    qInfo("dot, 2000-node flat level, %zu edges, fast settings, %s labels: %.2f s",
          spec.edges.size(), placement == LabelPlacement::Midpoint ? "midpoint" : "x",
          result.seconds);
    QCOMPARE(result.nodes.size(), 2000u);
    // Packed, not piled up: the fast settings still give every node its own place.
    for (std::size_t i = 1; i < result.nodes.size(); ++i)
      QVERIFY(!result.nodes[i].adjusted(0.5, 0.5, -0.5, -0.5).intersects(result.nodes[i - 1]));
  }
}

// Note [Detached hubs]: a shared input read by several chains is laid out apart from them, in a
// row above, with its edges ending on their targets' tops; only with the fast settings.
void TestGraphvizLevel::testDetachedHubs() {
  LevelSpec spec;
  spec.fast = true;
  spec.labels = LevelSpec::LabelPlacement::Midpoint;
  spec.nodes.push_back(node("x", 40, 24));  // the hub
  const int chains = 4, length = 6;
  for (int c = 0; c < chains; ++c)
    for (int k = 0; k < length; ++k) {
      const int index = int(spec.nodes.size());
      spec.nodes.push_back(node(QStringLiteral("c%1_%2").arg(c).arg(k), 70, 26));
      spec.edges.push_back(edge(k == 0 ? 0 : index - 1, index));
      if (k == 3) spec.edges.push_back(edge(0, index));  // x again, deeper in the chain
    }
  spec.edges.push_back(edge(0, 1));  // a parallel edge
  const HubSplit split = splitHubs(spec);
  QCOMPARE(split.hubs, std::vector<int>{0});
  QCOMPARE(split.rest.nodes.size(), spec.nodes.size() - 1);
  QCOMPARE(split.rest.edges.size(), std::size_t(chains * (length - 1)));

  GraphvizLayouter layouter;
  const LevelLayout result = layouter.layout(spec);
  QCOMPARE(result.nodes.size(), spec.nodes.size());
  QCOMPARE(result.edges.size(), spec.edges.size());
  const QRectF bounds(QPointF(0, 0), result.size);
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    QVERIFY2(bounds.adjusted(-1, -1, 1, 1).contains(result.nodes[i]),
             qPrintable(spec.nodes[i].key));
    QCOMPARE(result.nodes[i].size(), QSizeF(spec.nodes[i].width, spec.nodes[i].height));
    if (i > 0) QVERIFY(result.nodes[0].bottom() < result.nodes[i].top());  // the hub row on top
    for (std::size_t j = 0; j < i; ++j)
      QVERIFY2(!result.nodes[i].intersects(result.nodes[j]),
               qPrintable(spec.nodes[i].key + " overlaps " + spec.nodes[j].key));
  }
  for (std::size_t e = 0; e < spec.edges.size(); ++e) {
    const LevelEdgeGeometry& g = result.edges[e];
    QVERIFY(!g.path.isEmpty());
    QVERIFY2(near(g.path.pointAtPercent(0), result.nodes[std::size_t(spec.edges[e].from)], 3),
             qPrintable(QStringLiteral("edge %1 start").arg(e)));
    QVERIFY2(near(g.arrowTip, result.nodes[std::size_t(spec.edges[e].to)], 3),
             qPrintable(QStringLiteral("edge %1 tip").arg(e)));
  }
  // The two edges x -> c0_0 do not lie on top of each other.
  QVERIFY(result.edges[0].path.pointAtPercent(0.5) != result.edges.back().path.pointAtPercent(0.5));

  // Not with dot's full settings, not for a source with few edges, never for everything.
  spec.fast = false;
  QVERIFY(!splitHubs(spec).active());
  LevelSpec few;
  few.fast = true;
  few.nodes = {node("a"), node("b"), node("c")};
  few.edges = {edge(0, 1), edge(0, 2)};
  QVERIFY(!splitHubs(few).active());
}

TSCOPE_GUI_TEST_MAIN(TestGraphvizLevel)
#include "tst_graphviz_level.moc"

// The profiler's heat map (gui/app/profile/heat_map.h) from a hand-built profile of a small graph
// with nested scopes: each node's fill read back from the scene (GraphScene::nodeDecoration) is
// the colour of its share of the slowest node on REFERENCE.md's reds or the perceptual scale;
// a collapsed group shows its summed (inclusive) value; tooltips; the legend; metrics without a
// value keep the family colour; a time range recomputes the times from the events; diff mode
// colours faster nodes blue and slower ones red.
#include "gui/app/profile/heat_map.h"
#include "gui_test_main.h"
#include "profile_test_support.h"
#include "visualizers/model/palette.h"
#include "visualizers/scene_test_support.h"

using namespace tscope;
using namespace tscope::gui;
using namespace tscope::gui::testing;
using vis::GraphScene;

class TestProfileHeatMap : public QObject {
  Q_OBJECT

  vis::LayoutService m_service;
  std::shared_ptr<const engine::FunctionGraph> m_graph;
  std::shared_ptr<const vis::ViewModel> m_model;
  std::int64_t m_sinX = -1, m_transpose = -1, m_sinY = -1, m_add = -1, m_exp = -1;

  int node(std::int64_t id) const { return m_model->nodeOfApply(id); }
  std::shared_ptr<const ProfileView> viewOf(const std::map<std::int64_t, double>& seconds) {
    return ProfileView::make(snapshotOf(m_graph, handProfile(*m_graph, seconds), m_model));
  }
  std::map<std::int64_t, double> baseTimes() const {
    // exp the slowest (4 ms), the add half of it, the rest small: 8 ms in nodes per run.
    return {{m_exp, 4e-3}, {m_add, 2e-3}, {m_sinY, 1e-3}, {m_transpose, 0.5e-3}, {m_sinX, 0.5e-3}};
  }
  void showOn(GraphScene& scene, const QStringList& expanded, const HeatMap& heat) {
    scene.setContent(m_model,
                     m_service.layoutNow(m_model, vis::GroupState::fromStringList(expanded),
                                         vis::LayoutOptions{}));
    scene.setDecorations("profile", heat.decorations, kProfileLayerZ);
  }

 private slots:
  void initTestCase() {
    m_graph = vis::testing::edgeKindsGraph();
    m_model = vis::ViewModel::build(m_graph);
    m_sinX = applyByOp(*m_graph, "sin")->id();
    m_sinY = applyByOp(*m_graph, "sin", "block")->id();
    m_add = applyByOp(*m_graph, "add", "block/inner")->id();
    m_exp = applyByOp(*m_graph, "exp")->id();
    m_transpose = applyByOp(*m_graph, "DimShuffle")->id();
    QVERIFY(m_sinX != m_sinY);
  }

  void nodesAreColouredByTheirShareOfTheSlowest() {
    const auto view = viewOf(baseTimes());
    QCOMPARE(view->tables.timeInNodes, 8e-3);
    const HeatMap heat = buildHeatMap(*view, {});
    QCOMPARE(heat.maxNode, 4e-3);
    GraphScene scene;
    showOn(scene, {"block", "block/inner"}, heat);
    const vis::NodeDecoration* exp = scene.nodeDecoration(node(m_exp));
    QVERIFY(exp && exp->fill);
    QCOMPARE(*exp->fill, vis::palette::heatColor(1.0));
    QCOMPARE(*exp->fill, QColor("#a50f15"));  // REFERENCE.md: the darkest of the 8 reds
    QCOMPARE(*scene.nodeDecoration(node(m_add))->fill, vis::palette::heatColor(0.5));
    QCOMPARE(*scene.nodeDecoration(node(m_sinY))->fill, vis::palette::heatColor(0.25));
    QCOMPARE(*scene.nodeDecoration(node(m_sinX))->fill, QColor("#fee0d2"));  // 1/8: second step
    // The tooltip line of the issue: "Time: 4 ms (50.0 %), p95 4 ms" (no roofline without peaks).
    QCOMPARE(exp->tooltip.section('\n', 0, 0), QStringLiteral("Time: 4 ms (50.0 %), p95 4 ms"));
    // The timeline's bars use the same colours.
    const int expProfile = static_cast<int>(view->profile->find({}, m_exp));
    QCOMPARE(heat.nodeColors[std::size_t(expProfile)], *exp->fill);
    // The legend: the scale's eight steps and the range.
    const auto& legend = scene.mergedDecorations().legend;
    QVERIFY(!legend.empty());
    QCOMPARE(legend.front().swatch, vis::LegendRow::Swatch::Scale);
    QCOMPARE(legend.front().steps.size(), std::size_t(8));
    QCOMPARE(legend.front().text, QStringLiteral("Time: 0 – 4 ms"));
  }

  void perceptualScaleAndOtherMetrics() {
    const auto view = viewOf(baseTimes());
    HeatMap heat = buildHeatMap(*view, {HeatMetric::Time, HeatScale::Perceptual});
    GraphScene scene;
    showOn(scene, {"block", "block/inner"}, heat);
    QCOMPARE(*scene.nodeDecoration(node(m_exp))->fill, QColor("#3e4989"));
    QCOMPARE(*scene.nodeDecoration(node(m_sinX))->fill, QColor("#b5de2b"));
    QCOMPARE(heatScaleSteps(HeatScale::Perceptual).front(), QColor("#fde725"));
    // Output bytes: the node writing the most is the darkest whatever its time.
    auto snapshot =
        snapshotOf(m_graph, handProfile(*m_graph, baseTimes(), 2, {{m_sinX, 3600}}), m_model);
    heat = buildHeatMap(*ProfileView::make(snapshot), {HeatMetric::OutputBytes, HeatScale::Reds});
    showOn(scene, {"block", "block/inner"}, heat);
    QCOMPARE(*scene.nodeDecoration(node(m_sinX))->fill, vis::palette::heatColor(1.0));
    QCOMPARE(*scene.nodeDecoration(node(m_exp))->fill, vis::palette::heatColor(0.01));
    // The roofline needs the machine's peaks: without them no node is filled.
    heat = buildHeatMap(*view, {HeatMetric::Roofline, HeatScale::Reds});
    showOn(scene, {"block", "block/inner"}, heat);
    const vis::NodeDecoration* d = scene.nodeDecoration(node(m_exp));
    QVERIFY(!d || !d->fill);
  }

  void collapsedGroupsShowTheirInclusiveValue() {
    const auto view = viewOf(baseTimes());
    const HeatMap heat = buildHeatMap(*view, {});
    const int block = m_model->groupByPath("block");
    const int inner = m_model->groupByPath("block/inner");
    QVERIFY(block > 0 && inner > 0);
    // block holds sin(y) and the add (in block/inner): 3 ms; inner alone 2 ms.
    QCOMPARE(heat.maxGroup, 3e-3);
    GraphScene scene;
    showOn(scene, {}, heat);  // block collapsed
    vis::ShapeItem* box = vis::testing::groupBox(scene, block);
    QVERIFY(box && box->decoration() && box->decoration()->fill);
    QCOMPARE(*box->decoration()->fill, vis::palette::heatColor(1.0));
    QVERIFY2(box->decoration()->tooltip.startsWith("Inclusive: Time: 3 ms (37.5 %)"),
             qPrintable(box->decoration()->tooltip));
    // Expanded one level: the inner group's box holds the add only.
    showOn(scene, {"block"}, heat);
    vis::ShapeItem* innerBox = vis::testing::groupBox(scene, inner);
    QVERIFY(innerBox && innerBox->decoration());
    QCOMPARE(*innerBox->decoration()->fill, vis::palette::heatColor(2.0 / 3.0));
    QCOMPARE(*scene.nodeDecoration(node(m_sinY))->fill, vis::palette::heatColor(0.25));
  }

  void aTimeRangeRecomputesTimesFromItsEvents() {
    const prof::Profile full = handProfile(*m_graph, baseTimes());
    // The exp runs last, right after the add (it reads it): the range from a quarter into the
    // add (2 ms) to an eighth into the exp (4 ms) holds 1.5 ms of the add and 0.5 ms of the exp.
    const auto eventOf = [&](std::int64_t id) {
      const auto index = static_cast<std::int32_t>(full.find({}, id));
      for (const prof::NodeEventRecord& e : full.events)
        if (e.run == 0 && e.node == index) return e;
      return prof::NodeEventRecord{};
    };
    const prof::NodeEventRecord add = eventOf(m_add), exp = eventOf(m_exp);
    QCOMPARE(add.endNs, exp.startNs);
    const TimeRange range{add.startNs + 500000, exp.startNs + 500000};
    const prof::Profile part = restrictToRange(full, range);
    QCOMPARE(part.function.measuredRuns, std::int64_t(1));
    QCOMPARE(part.runs.size(), std::size_t(1));
    QCOMPARE(part.events.size(), std::size_t(2));
    const auto at = [&](std::int64_t id) { return part.nodes[std::size_t(part.find({}, id))]; };
    QCOMPARE(at(m_add).calls, std::int64_t(1));
    QVERIFY(qAbs(at(m_add).time.total - 1.5e-3) < 1e-12);
    QVERIFY(qAbs(at(m_exp).time.total - 0.5e-3) < 1e-12);
    QCOMPARE(at(m_sinY).calls, std::int64_t(0));
    QCOMPARE(at(m_sinX).calls, std::int64_t(0));
    // The heat map of the range: the add is the slowest there.
    const auto view = ProfileView::make(snapshotOf(m_graph, full, m_model), range);
    const HeatMap heat = buildHeatMap(*view, {});
    GraphScene scene;
    showOn(scene, {"block", "block/inner"}, heat);
    QCOMPARE(*scene.nodeDecoration(node(m_add))->fill, vis::palette::heatColor(1.0));
    QCOMPARE(*scene.nodeDecoration(node(m_exp))->fill, vis::palette::heatColor(1.0 / 3.0));
    const vis::NodeDecoration* sinY = scene.nodeDecoration(node(m_sinY));
    QVERIFY(!sinY || !sinY->fill);  // not run in the range: its family colour
    QVERIFY(scene.mergedDecorations().legend.front().text.endsWith("(time range)"));
    QCOMPARE(view->tables.applies.size(), std::size_t(2));
  }

  void diffModeIsBlueFasterRedSlower() {
    auto times = baseTimes();
    const auto a = snapshotOf(m_graph, handProfile(*m_graph, times), m_model, "A");
    times[m_exp] = 1e-3;  // 4x faster
    times[m_add] = 8e-3;  // 4x slower
    const auto b = snapshotOf(m_graph, handProfile(*m_graph, times), m_model, "B");
    const auto view = ProfileView::make(b);
    const prof::ProfileDiff diff =
        prof::diffProfiles({a->profile.get(), nullptr, "A"}, {view->profile.get(), nullptr, "B"});
    const HeatMap heat = buildDiffMap(*view, diff);
    GraphScene scene;
    showOn(scene, {"block", "block/inner"}, heat);
    QCOMPARE(*scene.nodeDecoration(node(m_exp))->fill, QColor("#2166ac"));   // the bluest
    QCOMPARE(*scene.nodeDecoration(node(m_add))->fill, QColor("#b2182b"));   // the reddest
    QCOMPARE(*scene.nodeDecoration(node(m_sinX))->fill, QColor("#f7f7f7"));  // unchanged
    QVERIFY2(scene.nodeDecoration(node(m_add))
                 ->tooltip.startsWith("B vs A: 2 ms -> 8 ms (+300 %, 4.00x slower)"),
             qPrintable(scene.nodeDecoration(node(m_add))->tooltip));
    // Colours between: 2x slower is two steps above white, 1.4x faster one below.
    QCOMPARE(diffColor(1.0, 2.0), QColor("#f4a582"));
    QCOMPARE(diffColor(1.4, 1.0), QColor("#d1e5f0"));
    QCOMPARE(diffColor(0.0, 1.0), QColor("#b2182b"));  // added
    // The collapsed block sums both sides: 3 ms -> 9 ms, 3x slower: log2 3 = 1.58, three steps
    // above white (the node alone, 4x, is four).
    showOn(scene, {}, heat);
    vis::ShapeItem* box = vis::testing::groupBox(scene, m_model->groupByPath("block"));
    QVERIFY(box && box->decoration());
    QCOMPARE(*box->decoration()->fill, diffColor(3e-3, 9e-3));
    QCOMPARE(*box->decoration()->fill, QColor("#d6604d"));
    QCOMPARE(scene.mergedDecorations().legend.front().steps.size(), std::size_t(9));
  }

  void profileNodesMapToTheModelsNodes() {
    const prof::Profile p = handProfile(*m_graph, baseTimes());
    const std::vector<int> map = mapProfileNodes(p, *m_model);
    for (std::size_t i = 0; i < p.nodes.size(); ++i)
      QCOMPARE(map[i], m_model->nodeOfApply(p.nodes[i].id));
    prof::Profile unknown = p;
    unknown.nodes[0].id = 999999;
    unknown.nodes[1].framePath = {12345};
    const std::vector<int> partial = mapProfileNodes(unknown, *m_model);
    QCOMPARE(partial[0], -1);
    QCOMPARE(partial[1], -1);
  }
};

TSCOPE_GUI_TEST_MAIN(TestProfileHeatMap)
#include "tst_profile_heat_map.moc"

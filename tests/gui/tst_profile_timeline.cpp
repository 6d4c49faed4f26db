// The profiler's timeline (gui/app/profile/timeline_data.h, timeline_widget.h) on synthetic
// events: tracks per thread and per GPU stream, run and scope bars enclosing the node bars,
// memory over time with its peak and the outputs alive at it; the widget's click selection
// (nodeClicked), shift-drag range selection (rangeSelected, Escape clears), wheel zoom around
// the cursor, drag panning and hover text.
#include "gui/app/profile/timeline_widget.h"
#include "gui_test_main.h"
#include "profile_test_support.h"
#include "visualizers/scene_test_support.h"

#include <QSignalSpy>
#include <QWheelEvent>

using namespace tscope;
using namespace tscope::gui;
using namespace tscope::gui::testing;

class TestProfileTimeline : public QObject {
  Q_OBJECT

  std::shared_ptr<const engine::FunctionGraph> m_graph;
  std::shared_ptr<const prof::Profile> m_profile;
  std::int64_t m_exp = -1, m_add = -1, m_sinY = -1;

  int profileNode(std::int64_t id) const { return int(m_profile->find({}, id)); }
  const prof::NodeEventRecord& eventOf(std::int64_t id, int run) const {
    for (const prof::NodeEventRecord& e : m_profile->events)
      if (e.run == run && e.node == profileNode(id)) return e;
    qFatal("no event");
  }
  int barOf(const TimelineData& t, TimelineBar::Kind kind, int node, int run) const {
    for (std::size_t i = 0; i < t.bars.size(); ++i)
      if (t.bars[i].kind == kind && t.bars[i].node == node && t.bars[i].run == run) return int(i);
    return -1;
  }

 private slots:
  void initTestCase() {
    m_graph = vis::testing::edgeKindsGraph();
    m_exp = applyByOp(*m_graph, "exp")->id();
    m_add = applyByOp(*m_graph, "add", "block/inner")->id();
    m_sinY = applyByOp(*m_graph, "sin", "block")->id();
    std::map<std::int64_t, double> times;
    for (const engine::Apply* a : m_graph->toposort()) times[a->id()] = 1e-3;
    times[m_exp] = 4e-3;
    m_profile = std::make_shared<const prof::Profile>(handProfile(*m_graph, times, 2));
  }

  void tracksRunsScopesAndNodes() {
    const auto t = TimelineData::build(*m_profile, m_graph.get());
    QCOMPARE(t->tracks.size(), std::size_t(1));
    QCOMPARE(t->tracks[0].name, QStringLiteral("CPU thread 0"));
    // Rows: the runs, two scope levels ("block", "block/inner"), the node calls.
    QCOMPARE(t->tracks[0].rows, 4);
    int runs = 0, nodes = 0;
    for (const TimelineBar& b : t->bars) {
      runs += b.kind == TimelineBar::Kind::Run;
      nodes += b.kind == TimelineBar::Kind::Node;
      if (b.kind == TimelineBar::Kind::Node) QCOMPARE(b.row, 3);
    }
    QCOMPARE(runs, 2);
    QCOMPARE(nodes, 10);
    for (int run = 0; run < 2; ++run) {
      // "block/inner" encloses exactly the add; some "block" bar encloses sin(y) and one the add.
      const prof::NodeEventRecord& add = eventOf(m_add, run);
      const prof::NodeEventRecord& sinY = eventOf(m_sinY, run);
      bool inner = false, blockAdd = false, blockSin = false;
      for (const TimelineBar& b : t->bars) {
        if (b.kind != TimelineBar::Kind::Scope || b.run != run) continue;
        if (b.label == "block/inner") {
          QCOMPARE(b.row, 2);
          inner = b.startNs == add.startNs && b.endNs == add.endNs;
        }
        if (b.label == "block") {
          QCOMPARE(b.row, 1);
          blockAdd = blockAdd || (b.startNs <= add.startNs && b.endNs >= add.endNs);
          blockSin = blockSin || (b.startNs <= sinY.startNs && b.endNs >= sinY.endNs);
        }
      }
      QVERIFY(inner && blockAdd && blockSin);
    }
    QCOMPARE(t->startNs, m_profile->runs.front().startNs);
    QCOMPARE(t->endNs, m_profile->runs.back().endNs);
  }

  void gpuStreamsGetTracks() {
    prof::Profile p = *m_profile;
    p.gpuEvents.push_back({prof::GpuEventRecord::Kind::Kernel, 0, 0, "gemm_kernel", 0, 7, 10, 20});
    p.gpuEvents.push_back({prof::GpuEventRecord::Kind::Memcpy, 0, -1, "memcpy DtoH", 0, 8, 30, 40});
    p.gpuEvents.push_back({prof::GpuEventRecord::Kind::Kernel, 1, 0, "gemm_kernel", 0, 7, 50, 60});
    const auto t = TimelineData::build(p, m_graph.get());
    QCOMPARE(t->tracks.size(), std::size_t(3));
    QCOMPARE(t->tracks[1].name, QStringLiteral("GPU 0 stream 7"));
    QCOMPARE(t->tracks[2].name, QStringLiteral("GPU 0 stream 8"));
    QCOMPARE(t->totalRows, 4 + 2);
  }

  void memoryPeakAndWhatIsAliveAtIt() {
    const auto t = TimelineData::build(*m_profile, m_graph.get());
    QCOMPARE(t->memory.points.size(), std::size_t(10));
    QVERIFY(t->memory.peak >= 0);
    const MemoryPoint& peak = t->memory.points[std::size_t(t->memory.peak)];
    QCOMPARE(peak.liveBytes, std::int64_t(5 * 36));
    QCOMPARE(peak.run, 0);
    QCOMPARE(peak.node, profileNode(m_exp));  // the last node of run 0
    // At the end of the run only the graph output's buffer is still needed.
    QVERIFY(t->memory.aliveKnown);
    QCOMPARE(t->memory.aliveAtPeak, std::vector<int>{profileNode(m_exp)});
    // Without the graph the peak is known, what is alive is not.
    const auto blind = TimelineData::build(*m_profile, nullptr);
    QVERIFY(!blind->memory.aliveKnown);
    QCOMPARE(blind->memory.peak, t->memory.peak);
    // Without memory measured there is no chart.
    prof::Profile none = *m_profile;
    for (prof::NodeEventRecord& e : none.events) e.liveBytes = 0;
    QVERIFY(TimelineData::build(none, m_graph.get())->memory.points.empty());
  }

  void clickSelectsANodeAndSelectionHighlights() {
    TimelineWidget w;
    w.resize(900, 160);
    w.setData(TimelineData::build(*m_profile, m_graph.get()), m_profile);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const int bar = barOf(*w.data(), TimelineBar::Kind::Node, profileNode(m_exp), 0);
    QVERIFY(bar >= 0);
    const QRectF r = w.barRect(bar);
    QVERIFY(r.width() > 20);
    QCOMPARE(w.barAt(r.center().toPoint()), bar);
    QVERIFY(w.barText(bar).contains(
        QString::fromStdString(m_profile->nodes[std::size_t(profileNode(m_exp))].op)));
    QVERIFY(w.barText(bar).contains("run 0"));
    QSignalSpy clicked(&w, &TimelineWidget::nodeClicked);
    QTest::mouseClick(&w, Qt::LeftButton, {}, r.center().toPoint());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.at(0).at(0).toInt(), profileNode(m_exp));
    QCOMPARE(w.selectedNode(), profileNode(m_exp));
    w.setSelectedNode(profileNode(m_add));  // from the graph: no signal
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(w.selectedNode(), profileNode(m_add));
    // A run bar chooses the run.
    QSignalSpy runs(&w, &TimelineWidget::runClicked);
    const int runBar = barOf(*w.data(), TimelineBar::Kind::Run, -1, 1);
    QTest::mouseClick(&w, Qt::LeftButton, {}, w.barRect(runBar).center().toPoint());
    QCOMPARE(runs.count(), 1);
    QCOMPARE(runs.at(0).at(0).toInt(), 1);
    w.showRun(1);
    QVERIFY(w.viewRange().startNs < m_profile->runs[1].startNs);
    QVERIFY(w.viewRange().startNs > m_profile->runs[0].endNs);
  }

  void shiftDragSelectsARange() {
    TimelineWidget w;
    w.resize(900, 160);
    w.setData(TimelineData::build(*m_profile, m_graph.get()), m_profile);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy selected(&w, &TimelineWidget::rangeSelected);
    QSignalSpy cleared(&w, &TimelineWidget::rangeCleared);
    const QPoint from(300, 40), to(500, 40);
    const std::int64_t t0 = w.timeAt(from.x()), t1 = w.timeAt(to.x());
    QTest::mousePress(&w, Qt::LeftButton, Qt::ShiftModifier, from);
    QTest::mouseMove(&w, QPoint(400, 40));
    QTest::mouseMove(&w, to);
    QTest::mouseRelease(&w, Qt::LeftButton, Qt::ShiftModifier, to);
    QCOMPARE(selected.count(), 1);
    const TimeRange r = selected.at(0).at(0).value<TimeRange>();
    QCOMPARE(r.startNs, t0);
    QCOMPARE(r.endNs, t1);
    QCOMPARE(*w.range(), r);
    QTest::keyClick(&w, Qt::Key_Escape);
    QCOMPARE(cleared.count(), 1);
    QVERIFY(!w.range());
    // Without shift, a drag pans: 100 pixels to the right shows earlier times.
    const TimeRange before = w.viewRange();
    QTest::mousePress(&w, Qt::LeftButton, {}, QPoint(500, 40));
    QTest::mouseMove(&w, QPoint(550, 40));
    QTest::mouseMove(&w, QPoint(600, 40));
    QTest::mouseRelease(&w, Qt::LeftButton, {}, QPoint(600, 40));
    QCOMPARE(selected.count(), 1);
    const double nsPerPx =
        double(before.endNs - before.startNs) / (w.width() - TimelineWidget::kHeaderWidth);
    QVERIFY(qAbs(double(before.startNs - w.viewRange().startNs) - 100 * nsPerPx) < 2 * nsPerPx);
    QCOMPARE(w.viewRange().endNs - w.viewRange().startNs, before.endNs - before.startNs);
  }

  void wheelZoomsAroundTheCursor() {
    TimelineWidget w;
    w.resize(900, 160);
    w.setData(TimelineData::build(*m_profile, m_graph.get()), m_profile);
    const TimeRange before = w.viewRange();
    const QPointF at(400, 50);
    const std::int64_t anchor = w.timeAt(at.x());
    QWheelEvent wheel(at, w.mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(&w, &wheel);
    const TimeRange after = w.viewRange();
    const double ratio =
        double(before.endNs - before.startNs) / double(after.endNs - after.startNs);
    QVERIFY2(qAbs(ratio - 1.5625) < 0.01, qPrintable(QString::number(ratio)));
    QVERIFY(qAbs(double(w.timeAt(at.x()) - anchor)) <= double(after.endNs - after.startNs) / 400);
    w.showAll();
    QCOMPARE(w.viewRange(), before);
  }
};

TSCOPE_GUI_TEST_MAIN(TestProfileTimeline)
#include "tst_profile_timeline.moc"

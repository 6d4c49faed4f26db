// The rewrite history dock: the log model and its filter (QAbstractItemModelTester), selecting a
// record (stepSelected with the record's removed/added nodes in the replayed graphs), the slider
// (stepGraphReady equal to replayRewrites(k), the optimized graph at N, stale positions dropped),
// and the states without rewrites or with a log the optimizer cannot reproduce.

#include "gui_test_main.h"
// The units under test and what they need:
#include "engine/session/graph_file.h"
#include "engine/session/optimize_graph.h"
#include "engine/session/replay_rewrites.h"
#include "gui/app/history/rewrite_history_panel.h"
#include "gui/app/history/rewrite_log_model.h"

#include <QAbstractItemModelTester>
#include <QTableView>

using namespace tscope;
using engine::RewriteQuery;

namespace {

constexpr int kTimeout = 15000;

// Every node in topological order with its op, inputs and outputs by id: equal strings mean the
// same graph with the same ids.
std::string structure(const engine::FunctionGraph& fg) {
  std::string s;
  for (const engine::Apply* a : fg.toposort()) {
    s += a->op().str() + "#" + std::to_string(a->id()) + "(";
    for (const auto& in : a->inputs()) s += std::to_string(in->id()) + ",";
    s += ")->";
    for (int o = 0; o < a->nOutputs(); ++o) s += std::to_string(a->outputRef(o).id()) + ",";
    s += "\n";
  }
  for (const auto& out : fg.outputs()) s += "out " + std::to_string(out->id()) + "\n";
  return s;
}

// A document as the window builds it, from a file optimized with `mode`.
std::shared_ptr<const gui::Document> makeDocument(const QString& file, const char* mode,
                                                  bool keepQuery = true) {
  engine::io::TsgDocument tsg = engine::session::openGraphFile(file.toStdString());
  engine::session::optimizeDocument(tsg, RewriteQuery::forMode(mode));
  auto doc = std::make_shared<gui::Document>();
  doc->path = file;
  doc->original = std::move(tsg.original);
  doc->optimized = std::move(tsg.optimized);
  doc->rewrites = std::move(tsg.rewrites);
  doc->profiles = std::move(tsg.profiles);
  if (!keepQuery)
    for (auto& p : doc->profiles) p.erase("query");
  doc->originalModel = vis::ViewModel::build(doc->original);
  doc->optimizedModel = vis::ViewModel::build(doc->optimized);
  return doc;
}

QString mlpPath() {
  return QString(TSCOPE_SOURCE_DIR) + "/examples/graphs/mlp.tsg";
}

// The first record that removes and adds nodes (the interesting kind to select).
int firstRecordWithNodes(const gui::Document& doc) {
  for (std::size_t i = 0; i < doc.rewrites.size(); ++i)
    if (!doc.rewrites[i].removedNodes.empty() && !doc.rewrites[i].addedNodes.empty()) return int(i);
  return -1;
}

}  // namespace

class TestRewriteHistory : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { qRegisterMetaType<std::shared_ptr<const vis::ViewModel>>(); }

  void testLogModelAndFilter() {
    const auto doc = makeDocument(mlpPath(), "fast_run");
    gui::RewriteLogModel log;
    QAbstractItemModelTester logTester(&log,
                                       QAbstractItemModelTester::FailureReportingMode::QtTest);
    gui::RewriteFilterModel filter;
    filter.setSourceModel(&log);
    QAbstractItemModelTester filterTester(&filter,
                                          QAbstractItemModelTester::FailureReportingMode::QtTest);
    log.setRecords(std::shared_ptr<const std::vector<engine::RewriteRecord>>(doc, &doc->rewrites));
    QCOMPARE(log.rowCount(), int(doc->rewrites.size()));
    QCOMPARE(log.columnCount(), int(gui::RewriteLogModel::ColumnCount));
    const engine::RewriteRecord& r0 = doc->rewrites[0];
    QCOMPARE(log.index(0, gui::RewriteLogModel::Rewriter).data().toString(),
             QString::fromStdString(r0.reason));
    QCOMPARE(log.index(0, gui::RewriteLogModel::Phase).data().toString(),
             QString::fromStdString(r0.phase));
    QCOMPARE(log.index(0, gui::RewriteLogModel::Removed).data().toString(),
             QString::number(r0.removedNodes.size()));
    for (int row = 0; row < log.rowCount(); ++row)
      QCOMPARE(log.index(row, gui::RewriteLogModel::Replaced).data().toString(),
               QString::number(doc->rewrites[std::size_t(row)].replaced.size()));
    QVERIFY(log.headerData(gui::RewriteLogModel::Replaced, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .startsWith(QStringLiteral("Variables replaced")));

    // Filter by each rewriter: exactly its records remain.
    const QStringList names = log.rewriters();
    QVERIFY(names.size() >= 2);
    for (const QString& name : names) {
      filter.setRewriter(name);
      const int expected =
          int(std::count_if(doc->rewrites.begin(), doc->rewrites.end(), [&](const auto& r) {
            return QString::fromStdString(r.reason) == name;
          }));
      QCOMPARE(filter.rowCount(), expected);
      for (int row = 0; row < filter.rowCount(); ++row)
        QCOMPARE(filter.index(row, gui::RewriteLogModel::Rewriter).data().toString(), name);
    }
    filter.setRewriter({});
    QCOMPARE(filter.rowCount(), log.rowCount());
    // Text: a node id finds the records that touch it.
    const int k = firstRecordWithNodes(*doc);
    QVERIFY(k >= 0);
    filter.setText(QString::number(doc->rewrites[k].addedNodes[0]));
    QVERIFY(filter.rowCount() >= 1);
    bool found = false;
    for (int row = 0; row < filter.rowCount(); ++row)
      found |= filter.index(row, 0).data(gui::RewriteLogModel::kOrderRole).toInt() == k;
    QVERIFY(found);
    filter.setText("no-such-rewriter");
    QCOMPARE(filter.rowCount(), 0);
    log.setRecords(nullptr);
    QCOMPARE(log.rowCount(), 0);
  }

  void testSelectingARecordEmitsItsNodes() {
    const auto doc = makeDocument(mlpPath(), "fast_run");
    gui::RewriteHistoryPanel panel;
    QSignalSpy selected(&panel, &gui::RewriteHistoryPanel::stepSelected);
    panel.setDocument(doc);
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::Checking);
    const int k = firstRecordWithNodes(*doc);
    panel.selectRecord(k);  // waits for the check, then replays
    QTRY_COMPARE_WITH_TIMEOUT(selected.count(), 1, kTimeout);
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::Ready);
    // The slider follows the selection to the step right after the record, without replaying it.
    QCOMPARE(panel.step(), k + 1);
    QVERIFY2(panel.stepText().startsWith(QString("step %1 of").arg(k + 1)),
             qPrintable(panel.stepText()));
    const QList<QVariant> args = selected.takeFirst();
    QCOMPARE(args[0].toInt(), k);
    const auto before = args[1].value<std::shared_ptr<const vis::ViewModel>>();
    const auto after = args[2].value<std::shared_ptr<const vis::ViewModel>>();
    const auto removed = args[3].value<QSet<int>>();
    const auto added = args[4].value<QSet<int>>();
    const engine::RewriteRecord& record = doc->rewrites[k];
    const RewriteQuery q = RewriteQuery::forMode("fast_run");
    QCOMPARE(structure(before->graph()),
             structure(*engine::session::replayRewrites(*doc->original, q, k)));
    QCOMPARE(structure(after->graph()),
             structure(*engine::session::replayRewrites(*doc->original, q, k + 1)));
    QSet<int> expectRemoved, expectAdded;
    for (auto id : record.removedNodes) {
      QVERIFY2(before->graph().nodeById(id),
               "a removed node is missing from the graph before the rewrite");
      QVERIFY(!after->graph().nodeById(id));
      expectRemoved.insert(before->nodeOfApply(id));
    }
    for (auto id : record.addedNodes) {
      QVERIFY(!before->graph().nodeById(id));
      expectAdded.insert(after->nodeOfApply(id));
    }
    QCOMPARE(removed, expectRemoved);
    QCOMPARE(added, expectAdded);
    QVERIFY(!removed.isEmpty() && !added.isEmpty());
    // A click on another row replays that one.
    panel.table()->selectRow(0);
    QTRY_COMPARE_WITH_TIMEOUT(selected.count(), 1, kTimeout);
    QCOMPARE(selected.takeFirst()[0].toInt(),
             panel.table()->model()->index(0, 0).data(gui::RewriteLogModel::kOrderRole).toInt());
  }

  void testSliderEmitsTheGraphAtEachStep() {
    const auto doc = makeDocument(mlpPath(), "fast_run");
    const int n = int(doc->rewrites.size());
    gui::RewriteHistoryPanel panel;
    QSignalSpy ready(&panel, &gui::RewriteHistoryPanel::stepGraphReady);
    panel.setDocument(doc);
    QTRY_COMPARE_WITH_TIMEOUT(panel.state(), gui::RewriteHistoryPanel::State::Ready, kTimeout);
    QCOMPARE(panel.step(), n);
    const RewriteQuery q = RewriteQuery::forMode("fast_run");
    for (int k : {n / 2, 1, 0, n}) {
      ready.clear();
      panel.setStep(k);
      QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, kTimeout);
      const QList<QVariant> args = ready.takeFirst();
      QCOMPARE(args[0].toInt(), k);
      const auto model = args[1].value<std::shared_ptr<const vis::ViewModel>>();
      QCOMPARE(structure(model->graph()),
               structure(*engine::session::replayRewrites(*doc->original, q, std::size_t(k))));
      if (k == n) QCOMPARE(structure(model->graph()), structure(*doc->optimized));
      if (k == 0) QCOMPARE(structure(model->graph()), structure(*doc->original));
      QVERIFY(panel.stepText().startsWith(QString("step %1 of %2").arg(k).arg(n)));
    }
    // Quick moves: only the last position is replayed and emitted.
    ready.clear();
    for (int k = 1; k <= 5; ++k) panel.setStep(k);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, kTimeout);
    QTest::qWait(300);
    QCOMPARE(ready.count(), 1);
    QCOMPARE(ready[0][0].toInt(), 5);
    QVERIFY(panel.stepText().contains(QString::fromStdString(doc->rewrites[4].reason)));
  }

  void testWithoutRewrites() {
    gui::RewriteHistoryPanel panel;
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::NoDocument);
    auto doc = std::make_shared<gui::Document>();
    engine::io::TsgDocument tsg = engine::session::openGraphFile(mlpPath().toStdString());
    doc->original = std::move(tsg.original);
    panel.setDocument(doc);
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::NoRewrites);
    QVERIFY2(panel.message().contains("no optimized graph"), qPrintable(panel.message()));
    QCOMPARE(panel.logModel()->rowCount(), 0);
    panel.setDocument(nullptr);
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::NoDocument);
  }

  void testLogFromAnotherOptimizerIsRefused() {
    // fast_compile made the log, the file does not say so: fast_run is assumed and fails the check.
    const auto doc = makeDocument(mlpPath(), "fast_compile", /*keepQuery=*/false);
    gui::RewriteHistoryPanel panel;
    QSignalSpy unavailable(&panel, &gui::RewriteHistoryPanel::replayUnavailable);
    QSignalSpy selected(&panel, &gui::RewriteHistoryPanel::stepSelected);
    panel.setDocument(doc);
    panel.selectRecord(0);
    QTRY_COMPARE_WITH_TIMEOUT(unavailable.count(), 1, kTimeout);
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::Unavailable);
    QVERIFY2(panel.message().contains("stepping is unavailable"), qPrintable(panel.message()));
    QCOMPARE(panel.logModel()->rowCount(), int(doc->rewrites.size()));  // the table still reads
    QTest::qWait(100);
    QCOMPARE(selected.count(), 0);
  }

  void testStaleDocumentResultsAreDropped() {
    const auto first = makeDocument(mlpPath(), "fast_run");
    gui::RewriteHistoryPanel panel;
    QSignalSpy selected(&panel, &gui::RewriteHistoryPanel::stepSelected);
    panel.setDocument(first);
    panel.selectRecord(0);
    panel.setDocument(nullptr);  // before the check finished
    QTest::qWait(1500);
    QCOMPARE(selected.count(), 0);
    QCOMPARE(panel.state(), gui::RewriteHistoryPanel::State::NoDocument);
  }

  void testOnnxModel_data() {
    QTest::addColumn<QString>("model");
    QTest::newRow("mlp") << "mlp";
    QTest::newRow("resnet18") << "resnet18";
    QTest::newRow("transformer_encoder") << "transformer_encoder";
  }

  void testOnnxModel() {
    QFETCH(QString, model);
    const QString path = QString(TSCOPE_TEST_DATA_DIR) + "/onnx/models/" + model + ".onnx";
    std::shared_ptr<const gui::Document> doc;
    try {
      doc = makeDocument(path, "fast_run");
    } catch (const std::exception& e) {
      QSKIP(qPrintable(QString("cannot open %1 in this build: %2").arg(path, e.what())));
    }
    gui::RewriteHistoryPanel panel;
    QSignalSpy ready(&panel, &gui::RewriteHistoryPanel::stepGraphReady);
    QElapsedTimer clock;
    clock.start();
    panel.setDocument(doc);
    QTRY_COMPARE_WITH_TIMEOUT(panel.state(), gui::RewriteHistoryPanel::State::Ready, kTimeout);
    const qint64 checkMs = clock.restart();
    const int mid = int(doc->rewrites.size()) / 2;
    panel.setStep(mid);
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, kTimeout);
    // The figures the report quotes: the check is one full replay, a step one partial replay plus
    // a ViewModel build (the slider's 100 ms debounce included).
    qInfo("%s: %d nodes, %zu rewrites; check %lld ms, step %d %lld ms", qPrintable(model),
          int(doc->original->nodeCount()), doc->rewrites.size(), checkMs, mid, clock.elapsed());
    const auto atStep = ready[0][1].value<std::shared_ptr<const vis::ViewModel>>();
    QCOMPARE(structure(atStep->graph()),
             structure(*engine::session::replayRewrites(
                 *doc->original, RewriteQuery::forMode("fast_run"), std::size_t(mid))));
  }
};

TSCOPE_GUI_TEST_MAIN(TestRewriteHistory)
#include "tst_rewrite_history.moc"

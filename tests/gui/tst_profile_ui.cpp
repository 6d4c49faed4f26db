// The profiler in the window (gui/app/profile/profile_ui.h) on the MLP example: Profile runs on a
// worker and shows the heat map on the pane of the profiled graph, the tables and the timeline;
// table rows select graph nodes and graph nodes select rows; a time range filters the tables;
// the trace and the report are exported; Save Profile writes a .tsg that opens coloured; a
// fast_run profile gets its own tab; diff mode against another profile and Compare Modes; a long
// profile is cancelled; bad --profile-view options are refused with a message.
#include "engine/io/tsg.h"
#include "gui/app/device_choice.h"
#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/profile/profile_dialog.h"
#include "gui/app/profile/profile_panels.h"
#include "gui/app/profile/profile_ui.h"
#include "gui_test_main.h"
#include "profiling/profile_graph.h"
#include "visualizers/model/palette.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QItemSelectionModel>
#include <QJsonDocument>
#include <QMenu>
#include <QProgressBar>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>

using namespace tscope;
using namespace tscope::gui;

namespace {

const QString kMlp = QStringLiteral(TSCOPE_SOURCE_DIR "/examples/graphs/mlp.tsg");
constexpr int kTimeout = 60000;

bool waitLoaded(MainWindow& window, const QString& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  window.openFile(path);
  if (!loaded.wait(kTimeout) && loaded.isEmpty()) return false;
  return QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

ProfileRequest quick(engine::Mode mode = engine::Mode::None) {
  ProfileRequest r;
  r.mode = mode;
  r.runs = 3;
  r.warmup = 1;
  r.roofline = false;  // no calibration in tests (it takes seconds on a loaded machine)
  return r;
}

// Starts a profile and waits until it is drawn.
bool profileAndWait(MainWindow& window, const ProfileRequest& request) {
  ProfileUi* ui = window.profileUi();
  QSignalSpy shown(ui, &ProfileUi::viewShown);
  QSignalSpy failed(ui, &ProfileUi::profileFailed);
  ui->startProfile(request);
  if (!QTest::qWaitFor([&] { return !shown.isEmpty() || !failed.isEmpty(); }, kTimeout))
    return false;
  if (!failed.isEmpty()) qWarning() << failed.at(0).at(0).toString();
  return failed.isEmpty() && QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

}  // namespace

class TestProfileUi : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
  }
  void init() { QSettings().clear(); }

  void menuActionsAndDocks() {
    MainWindow window;
    QMenu* menu = window.menu("menuProfile");
    QVERIFY(menu);
    for (const char* name : {"actionProfile", "actionProfileCompareModes", "actionCancelProfile",
                             "actionSaveProfile", "actionExportTrace", "actionExportReport"}) {
      QVERIFY2(window.action(name), name);
      QVERIFY2(menu->actions().contains(window.action(name)), name);
    }
    QVERIFY(!window.action("actionProfile")->isEnabled());  // no document
    QVERIFY(!window.action("actionSaveProfile")->isEnabled());
    QVERIFY(window.dock("profileDock"));
    QVERIFY(window.dock("timelineDock"));
  }

  // The Profile dialog's device chooser (gui/app/device_choice.h) and a CUDA profile on a
  // machine without a device: refused with the runtime's reason, nothing drawn.
  void deviceChoice() {
    ProfileDialog dialog;
    auto* device = dialog.findChild<QComboBox*>("profileDeviceCombo");
    QVERIFY(device);
    QCOMPARE(device->count(), 2);
    QCOMPARE(dialog.request().device, engine::Device::Cpu);
    ProfileRequest r = quick();
    r.device = engine::Device::Cuda;
    dialog.setRequest(r);
    QCOMPARE(device->currentIndex(), 1);
    QCOMPARE(dialog.request().device, engine::Device::Cuda);
    QString why;
    if (gui::cudaAvailable(&why)) QSKIP("a CUDA device is present");
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    ProfileUi* ui = window.profileUi();
    QSignalSpy failed(ui, &ProfileUi::profileFailed);
    ui->startProfile(r);
    QVERIFY(QTest::qWaitFor([&] { return !failed.isEmpty(); }, kTimeout));
    QVERIFY2(failed.front().front().toString().contains("CUDA"),
             qPrintable(failed.front().front().toString()));
    QVERIFY(QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout));
    QVERIFY(!ui->snapshot());
  }

  void profileShowsHeatMapTablesAndTimeline() {
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    ProfileUi* ui = window.profileUi();
    QVERIFY(window.action("actionProfile")->isEnabled());
    QVERIFY(profileAndWait(window, quick()));
    QVERIFY(ui->snapshot());
    QCOMPARE(ui->snapshot()->profile->function.measuredRuns, std::int64_t(3));
    // Mode none profiles the original's nodes: drawn on the Original pane.
    QCOMPARE(ui->profilePane(), window.originalPane());
    QVERIFY(window.originalPane()->scene()->decorations("profile"));
    const auto& view = *ui->view();
    QVERIFY(!view.tables.applies.empty());
    const int slowest = ui->viewNodeOf(int(view.tables.applies.front().node));
    QVERIFY(slowest >= 0);
    QTRY_VERIFY_WITH_TIMEOUT(window.originalPane()->scene()->nodeDecoration(slowest), kTimeout);
    const vis::NodeDecoration* d = window.originalPane()->scene()->nodeDecoration(slowest);
    QVERIFY(d->fill);
    QCOMPARE(*d->fill, vis::palette::heatColor(1.0));
    QVERIFY(d->tooltip.startsWith("Time: "));
    // The docks show it.
    ProfileTablesPanel* tables = ui->tablesPanel();
    QCOMPARE(tables->applyModel()->rowCount(), int(view.tables.applies.size()));
    QVERIFY(tables->classModel()->rowCount() > 0);
    QVERIFY(ui->timelineData() && !ui->timelineData()->bars.empty());
    QVERIFY(!ui->timelineData()->memory.points.empty());
    QVERIFY(ui->timelinePanel()->outputsModel()->rowCount() > 0);
    QVERIFY(window.action("actionSaveProfile")->isEnabled());
    // Metric and scale: the slowest node by p95, on the perceptual scale.
    QSignalSpy shown(ui, &ProfileUi::viewShown);
    ui->setHeatOptions({HeatMetric::P95, HeatScale::Perceptual});
    QVERIFY(shown.wait(kTimeout));
    QCOMPARE(tables->metricBox()->currentText(), QStringLiteral("p95"));
    QVERIFY(
        window.originalPane()->scene()->mergedDecorations().legend.front().text.startsWith("p95"));
  }

  void tableAndGraphSelectionFollowEachOther() {
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    QVERIFY(profileAndWait(window, quick()));
    ProfileUi* ui = window.profileUi();
    ProfileTablesPanel* tables = ui->tablesPanel();
    // A row of the Apply table selects its node on the graph.
    QAbstractItemView* apply = tables->tableView(ProfileTablesPanel::ApplyTab);
    const QModelIndex second = apply->model()->index(1, 0);
    const int node = second.data(kNodesRole).value<QList<int>>().front();
    apply->selectionModel()->setCurrentIndex(
        second, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QTRY_COMPARE_WITH_TIMEOUT(window.originalPane()->selectedNode(), ui->viewNodeOf(node),
                              kTimeout);
    QCOMPARE(ui->timelinePanel()->timeline()->selectedNode(), node);
    // A class row stands for several nodes: all highlighted, the first selected.
    QAbstractItemView* classes = tables->tableView(ProfileTablesPanel::ClassTab);
    // (The graph's selection made the node's class row current: choose another one.)
    QModelIndex first;
    for (int r = 0; r < classes->model()->rowCount(); ++r) {
      const QModelIndex i = classes->model()->index(r, 0);
      if (r != classes->currentIndex().row() &&
          (!first.isValid() || i.data(kNodesRole).value<QList<int>>().size() >
                                   first.data(kNodesRole).value<QList<int>>().size()))
        first = i;
    }
    QVERIFY(first.isValid() && first.data(kNodesRole).value<QList<int>>().size() > 1);
    QVERIFY(!first.data(kNodesRole).value<QList<int>>().isEmpty());
    classes->selectionModel()->setCurrentIndex(
        first, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QTRY_COMPARE_WITH_TIMEOUT(ui->profileNodeOf(window.originalPane()->selectedNode()),
                              first.data(kNodesRole).value<QList<int>>().front(), kTimeout);
    // A node selected on the graph selects its rows.
    const int other = int(ui->view()->tables.applies.back().node);
    window.originalPane()->selectNode(ui->viewNodeOf(other));
    QTRY_VERIFY_WITH_TIMEOUT(
        apply->currentIndex().isValid() &&
            apply->currentIndex().data(kNodesRole).value<QList<int>>() == QList<int>{other},
        kTimeout);
    QCOMPARE(ui->timelinePanel()->timeline()->selectedNode(), other);
    // A timeline bar's click selects the node too.
    TimelineWidget* timeline = ui->timelinePanel()->timeline();
    emit timeline->nodeClicked(int(ui->view()->tables.applies.front().node));
    QTRY_COMPARE_WITH_TIMEOUT(window.originalPane()->selectedNode(),
                              ui->viewNodeOf(int(ui->view()->tables.applies.front().node)),
                              kTimeout);
  }

  void aRangeFiltersTablesAndHeatMap() {
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    QVERIFY(profileAndWait(window, quick()));
    ProfileUi* ui = window.profileUi();
    const prof::RunSpan run = ui->snapshot()->profile->runs.front();
    std::int64_t allCalls = 0;
    for (const auto& r : ui->view()->tables.applies) allCalls += r.calls;
    QSignalSpy shown(ui, &ProfileUi::viewShown);
    const TimeRange range{run.startNs, run.startNs + (run.endNs - run.startNs) / 2};
    ui->setRange(range);
    QVERIFY(shown.wait(kTimeout));
    QCOMPARE(*ui->view()->range, range);
    QCOMPARE(*ui->timelinePanel()->timeline()->range(), range);
    std::int64_t rangeCalls = 0;
    for (const auto& r : ui->view()->tables.applies) rangeCalls += r.calls;
    QVERIFY2(rangeCalls > 0 && rangeCalls < allCalls,
             qPrintable(QStringLiteral("%1 of %2").arg(rangeCalls).arg(allCalls)));
    QCOMPARE(ui->tablesPanel()->applyModel()->rowCount(), int(ui->view()->tables.applies.size()));
    QVERIFY(window.originalPane()->scene()->mergedDecorations().legend.front().text.endsWith(
        "(time range)"));
    ui->timelinePanel()->timeline()->clearRange();
    QVERIFY(shown.wait(kTimeout));
    QVERIFY(!ui->view()->range);
  }

  void exportTraceAndReport() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    QVERIFY(profileAndWait(window, quick()));
    ProfileUi* ui = window.profileUi();
    QSignalSpy exported(ui, &ProfileUi::exported);
    const QString trace = m_dir.filePath("trace.json"), text = m_dir.filePath("report.txt"),
                  json = m_dir.filePath("report.json");
    ui->exportTrace(trace);
    ui->exportReport(text);
    ui->exportReport(json);
    QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 3, kTimeout);
    QFile t(trace);
    QVERIFY(t.open(QIODevice::ReadOnly));
    const QJsonDocument doc = QJsonDocument::fromJson(t.readAll());
    QVERIFY(doc.isObject() && doc["traceEvents"].isArray());
    QFile r(text);
    QVERIFY(r.open(QIODevice::ReadOnly));
    QVERIFY(r.readAll().contains("Apply"));
    QFile j(json);
    QVERIFY(j.open(QIODevice::ReadOnly));
    QVERIFY(QJsonDocument::fromJson(j.readAll())["applies"].isArray());
    // A path that cannot be written: a message, no crash.
    QSignalSpy errors(ui, &ProfileUi::fileError);
    ui->exportReport(m_dir.filePath("no/such/folder/report.txt"));
    QTRY_COMPARE_WITH_TIMEOUT(errors.count(), 1, kTimeout);
    QVERIFY(errors.at(0).at(0).toString().contains("report.txt"));
  }

  void savedProfileOpensColoured() {
    const QString path = m_dir.filePath("profiled.tsg");
    {
      MainWindow window;
      window.show();
      QVERIFY(waitLoaded(window, kMlp));
      QVERIFY(profileAndWait(window, quick()));
      QSignalSpy saved(window.profileUi(), &ProfileUi::saved);
      window.profileUi()->saveProfile(path);
      QVERIFY(saved.wait(kTimeout));
    }
    const engine::io::TsgDocument doc = engine::io::loadTsg(path.toStdString());
    QCOMPARE(prof::profilesOf(doc).size(), std::size_t(1));
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QSignalSpy shown(window.profileUi(), &ProfileUi::viewShown);
    QVERIFY(waitLoaded(window, path));
    QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kTimeout);
    ProfileUi* ui = window.profileUi();
    QVERIFY(ui->snapshot() && ui->snapshot()->fromFile);
    QCOMPARE(ui->profilePane(), window.originalPane());
    QVERIFY(window.originalPane()->scene()->decorations("profile"));
    QVERIFY(window.dock("profileDock")->isVisibleTo(&window));
    // Bad --profile-view options are refused with what was expected.
    QString error;
    QVERIFY(!ui->applyOptions({"colour=red"}, &error));
    QVERIFY(error.contains("metric="));
    QVERIFY(!ui->applyOptions({"metric=speed"}, &error));
    QVERIFY(error.contains("speed"));
    QVERIFY(ui->applyOptions({"metric=share", "range=0.1:0.5"}, &error));
    QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy() && ui->range(), kTimeout);
    QCOMPARE(ui->heatOptions().metric, HeatMetric::Share);
  }

  void fastRunGetsItsOwnTabAndDiffMode() {
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    QVERIFY(profileAndWait(window, quick(engine::Mode::None)));
    ProfileUi* ui = window.profileUi();
    const auto none = ui->snapshot();
    QVERIFY(profileAndWait(window, quick(engine::Mode::FastRun)));
    QCOMPARE(ui->snapshots().size(), std::size_t(2));
    GraphPane* pane = ui->profilePane();
    QVERIFY(pane && pane != window.originalPane());
    QVERIFY(window.tabTitles().contains("Profiled (fast_run)"));
    QCOMPARE(window.tabs()->currentWidget(), pane);
    QVERIFY(pane->scene()->decorations("profile"));
    // Selecting a compiled node shows it in the inspector.
    int apply = -1;
    for (int n = 0; n < static_cast<int>(pane->model()->nodes().size()) && apply < 0; ++n)
      if (pane->model()->nodes()[n].kind == vis::NodeKind::Apply) apply = n;
    QVERIFY(apply >= 0);
    pane->selectNode(apply);
    QTRY_COMPARE_WITH_TIMEOUT(window.inspector()->node(), apply, kTimeout);
    QCOMPARE(window.inspector()->model(), pane->model());
    QVERIFY(window.inspector()->title().startsWith("Apply"));
    // Diff against mode none, through the rewrite log.
    QSignalSpy shown(ui, &ProfileUi::viewShown);
    ui->tablesPanel()->compareBox()->setCurrentIndex(1);
    emit ui->tablesPanel()->compareChosen(1);
    QVERIFY(shown.wait(kTimeout));
    QCOMPARE(ui->comparison(), none);
    const auto legend = pane->scene()->decorations("profile")->legend;
    QVERIFY(!legend.empty());
    QVERIFY2(legend.front().text.startsWith("Change vs #1 mlp.tsg (none)"),
             qPrintable(legend.front().text));
    QCOMPARE(legend.front().steps.size(), std::size_t(9));
    ui->compareWith(nullptr);
    QVERIFY(shown.wait(kTimeout));
    QCOMPARE(pane->scene()->decorations("profile")->legend.front().steps.size(), std::size_t(8));
  }

  void compareModesProfilesBoth() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    ProfileUi* ui = window.profileUi();
    QSignalSpy finished(ui, &ProfileUi::profileFinished);
    ui->compareModes(engine::Mode::None, engine::Mode::FastRun, quick());
    QVERIFY(finished.wait(kTimeout));
    QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);
    QVERIFY(ui->comparison());
    QCOMPARE(ui->comparison()->profile->function.mode, std::string("none"));
    QCOMPARE(ui->snapshot()->profile->function.mode, std::string("fast_run"));
    QVERIFY(ui->profilePane()->scene()->decorations("profile")->legend.front().text.contains(
        "Change vs"));
  }

  void cancelALongProfile() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, kMlp));
    ProfileUi* ui = window.profileUi();
    QSignalSpy cancelled(ui, &ProfileUi::profileCancelled);
    QSignalSpy finished(ui, &ProfileUi::profileFinished);
    ProfileRequest r = quick();
    r.runs = 50000000;  // hours: only Cancel ends it within the timeout
    ui->startProfile(r);
    QVERIFY(ui->isRunning());
    QVERIFY(!window.action("actionProfile")->isEnabled());
    // Note [Quiet progress]: the bar and the Cancel button appear once the profile has run a
    // while.
    QTRY_VERIFY_WITH_TIMEOUT(ui->progressBar()->isVisibleTo(&window), kTimeout);
    QVERIFY(ui->cancelButton()->isVisibleTo(&window));
    // Wait for calls to run, then cancel from the status bar's button.
    QTRY_VERIFY_WITH_TIMEOUT(ui->progressBar()->maximum() > 1 && ui->progressBar()->value() > 0,
                             kTimeout);
    ui->cancelButton()->click();
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, kTimeout);
    QCOMPARE(finished.count(), 0);
    QVERIFY(!ui->isRunning());
    QVERIFY(!ui->progressBar()->isVisibleTo(&window));
    QVERIFY(!ui->snapshot());
    QVERIFY(window.action("actionProfile")->isEnabled());
    // The window profiles again afterwards.
    QVERIFY(profileAndWait(window, quick()));
  }
};

TSCOPE_GUI_TEST_MAIN(TestProfileUi)
#include "tst_profile_ui.moc"

// The debugger's "Nodes" dock (gui/app/debug/debug_nodes.h), offscreen: the original graph's
// nodes listed in order with QAbstractItemModelTester watching the model; a mouse click on a
// row's margin sets a breakpoint (a red dot in the margin and on the graph), Run pauses there and
// the rows show the current node, the done ones and the next one; a click elsewhere on a row
// selects the node on the graph; a second margin click clears the breakpoint; after the compile
// each row says where the node landed.
#include "debug_test_support.h"
#include "gui/app/debug/debug_nodes.h"
#include "gui/app/debug/debug_ui.h"
#include "gui/app/graph_pane.h"
#include "gui/app/main_window.h"
#include "gui_test_main.h"

#include <QAbstractItemModelTester>
#include <QDockWidget>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>

using namespace tscope;
using engine::debug::PauseKind;
using engine::debug::SessionPhase;
using gui::MainWindow;
using gui::NodeListModel;
using State = gui::NodeListModel::NodeState;

namespace {
constexpr int kTimeout = 120000;

bool waitLoaded(MainWindow& window, const QString& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  window.openFile(path);
  if (!loaded.wait(kTimeout) && loaded.isEmpty()) return false;
  return QTest::qWaitFor(
      [&] { return !window.isBusy() && window.debugUi()->mapperFor(window.originalPane()); },
      kTimeout);
}

bool settle(MainWindow& window) {
  return QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

// The row whose op text contains `op`.
int rowWithOp(const NodeListModel& m, const QString& op) {
  for (int r = 0; r < m.rowCount(); ++r)
    if (m.data(m.index(r, NodeListModel::Op)).toString().contains(op)) return r;
  return -1;
}

void clickCell(QTableView* view, int row, int column) {
  const QModelIndex i = view->model()->index(row, column);
  view->scrollTo(i);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(i).center());
}
}  // namespace

class TestDebugNodes : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_nan = m_dir.filePath("nan_chain.tsg");
    test::writeNanChain(m_nan);
  }
  void init() { QSettings().clear(); }

  void marginClickSetsBreakpointAndRowsFollowThePause() {
    MainWindow window;
    window.show();
    gui::DebugUi* ui = window.debugUi();
    NodeListModel* model = ui->nodeListModel();
    QVERIFY(model);
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(waitLoaded(window, m_nan));
    QTableView* view = ui->nodeListView();
    QCOMPARE(view->objectName(), QStringLiteral("nodeListView"));
    QDockWidget* dock = window.findChild<QDockWidget*>(QStringLiteral("nodesDock"));
    QVERIFY(dock);
    dock->show();
    dock->raise();
    // log -> mul -> add -> sum, in that order.
    QCOMPARE(model->rowCount(), 4);
    const int log = rowWithOp(*model, "log"), mul = rowWithOp(*model, "mul"),
              add = rowWithOp(*model, "add");
    QVERIFY(log >= 0 && mul >= 0 && add >= 0);
    QVERIFY(log < mul && mul < add);
    QCOMPARE(model->data(model->index(mul, NodeListModel::Outputs)).toString(),
             QStringLiteral("a"));
    QCOMPARE(model->rowOf(model->nodeId(mul)), mul);

    // A click on the margin sets a breakpoint on the row's node: a dot in the margin and on the
    // graph.
    QTRY_VERIFY_WITH_TIMEOUT(view->isVisible() && view->visualRect(model->index(mul, 0)).isValid(),
                             kTimeout);
    clickCell(view, mul, NodeListModel::Margin);
    QCOMPARE(ui->controller()->breakpoints().size(), std::size_t(1));
    QCOMPARE(ui->controller()->nodeBreakpoint(model->nodeId(mul)), 0);
    QVERIFY(model->data(model->index(mul, NodeListModel::Margin), Qt::UserRole).toBool());
    QVERIFY(!model->data(model->index(mul, NodeListModel::Margin), Qt::DecorationRole).isNull());
    QVERIFY(model->data(model->index(log, NodeListModel::Margin), Qt::DecorationRole).isNull());
    gui::GraphPane* pane = window.originalPane();
    const int mulNode = pane->model()->nodeOfApply(model->nodeId(mul));
    QTRY_VERIFY_WITH_TIMEOUT(
        pane->scene()->nodeDecoration(mulNode) &&
            pane->scene()->nodeDecoration(mulNode)->breakpoint == vis::BreakpointMark::Enabled,
        kTimeout);

    // Run: paused at mul; log done, add next.
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->snapshot()->state.reason, PauseKind::Breakpoint);
    QTRY_COMPARE_WITH_TIMEOUT(model->state(mul), State::Current, kTimeout);
    QCOMPARE(model->state(log), State::Done);
    QCOMPARE(model->state(add), State::Next);
    QCOMPARE(model->data(model->index(mul, NodeListModel::State)).toString(),
             QStringLiteral("\u25B6 current"));
    QVERIFY(model->data(model->index(mul, NodeListModel::Id), Qt::BackgroundRole).isValid());
    QVERIFY(!model->data(model->index(log, NodeListModel::Id), Qt::BackgroundRole).isValid());
    // Compiled: where each node landed (mode none: itself).
    QCOMPARE(model->data(model->index(mul, NodeListModel::Landed)).toString(),
             QStringLiteral("node %1").arg(model->nodeId(mul)));

    // A click on the op selects the node on the graph.
    const int addNode = pane->model()->nodeOfApply(model->nodeId(add));
    clickCell(view, add, NodeListModel::Op);
    QCOMPARE(pane->selectedNode(), addNode);

    // Continue to the end: every row done.
    window.action("actionDebugContinue")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->snapshot()->state.phase, SessionPhase::Finished);
    QTRY_COMPARE_WITH_TIMEOUT(model->state(add), State::Done, kTimeout);
    QCOMPARE(model->state(mul), State::Done);

    // A second margin click clears the breakpoint.
    clickCell(view, mul, NodeListModel::Margin);
    QVERIFY(ui->controller()->breakpoints().empty());
    QVERIFY(!model->data(model->index(mul, NodeListModel::Margin), Qt::UserRole).toBool());
  }

 private:
  QTemporaryDir m_dir;
  QString m_nan;
};

TSCOPE_GUI_TEST_MAIN(TestDebugNodes)
#include "tst_debug_nodes.moc"

// The debugger in the window (gui/app/debug/debug_ui.h), offscreen: the Run menu, toolbar and
// shortcuts; a breakpoint from the node context menu drawn as a dot and hit by Run (the current
// node marked and centred, executed and next nodes marked, health pills on the computed edges,
// the inspector showing the pause's values); a NanGuard alert with its banner, its chain's
// colours read back from the scene and the navigation to the creator through a collapsed group;
// Step Into an OpFromGraph with the Call Stack opening its group; edit, Recompute with the flash,
// Undo; a breakpoint on an original node shown where it landed in the optimized graph; and the
// breakpoints of a file restored in a new window.
#include "debug_test_support.h"
#include "engine/debug/lineage.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/session/optimize_graph.h"
#include "gui/app/debug/debug_models.h"
#include "gui/app/debug/debug_ui.h"
#include "gui/app/device_choice.h"
#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/inspector/slice_table_model.h"
#include "gui/app/inspector/value_view.h"
#include "gui/app/main_window.h"
#include "gui_test_main.h"

#include <QComboBox>
#include <QDockWidget>
#include <QFrame>
#include <QListWidget>
#include <QMenu>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolBar>

using namespace tscope;
using engine::debug::PauseKind;
using engine::debug::SessionPhase;
using gui::DebugUi;
using gui::GraphPane;
using gui::MainWindow;

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

int viewNode(GraphPane* pane, std::int64_t applyId) {
  return pane->model()->nodeOfApply(applyId);
}

int edgeBetween(const vis::ViewModel& model, int from, int to) {
  for (int e : model.inEdges(to))
    if (model.edges()[e].from == from) return e;
  return -1;
}

const vis::NodeDecoration* deco(GraphPane* pane, int node) {
  return pane->scene()->nodeDecoration(node);
}

// The optimized file: elementwise chains that fast_run fuses into a Composite.
void writeFused(const QString& path) {
  using namespace tscope::engine;
  const TensorType vec(DType::Float32, {4});
  VarPtr x = Variable::create(vec, "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {4}, {1, 2, 3, 4}));
  VarPtr h = elemwise(ScalarOp::Tanh, {elemwise(ScalarOp::Mul, {x, x})});
  h->setName("out");
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, std::vector<VarPtr>{h});
  session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
  io::saveTsg(doc, path.toStdString());
}

}  // namespace

class TestDebugUi : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_nan = m_dir.filePath("nan_chain.tsg");
    m_ofg = m_dir.filePath("ofg.tsg");
    m_fused = m_dir.filePath("fused.tsg");
    m_break = m_dir.filePath("break_op.tsg");
    test::writeNanChain(m_nan);
    test::writeOfg(m_ofg);
    writeFused(m_fused);
    test::writeBreakOp(m_break);
  }
  void init() { QSettings().clear(); }

  void actionsMenuAndToolbar() {
    MainWindow window;
    window.show();
    const std::pair<const char*, QKeySequence> expected[] = {
        {"actionDebugRun", QKeySequence(Qt::Key_F5)},
        {"actionDebugStep", QKeySequence(Qt::Key_F10)},
        {"actionDebugStepInto", QKeySequence(Qt::Key_F11)},
        {"actionDebugStepOut", QKeySequence(Qt::SHIFT | Qt::Key_F11)},
        {"actionDebugRunToNode", QKeySequence(Qt::CTRL | Qt::Key_F10)},
        {"actionDebugRestart", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F5)},
        {"actionDebugStop", QKeySequence(Qt::SHIFT | Qt::Key_F5)},
        {"actionDebugContinue", QKeySequence()}};
    QMenu* run = window.menu("menuRun");
    QVERIFY(run);
    for (const auto& [name, key] : expected) {
      QAction* a = window.action(name);
      QVERIFY2(a, name);
      QCOMPARE(a->shortcut(), key);
      QVERIFY2(run->actions().contains(a), name);
      QVERIFY2(!a->isEnabled(), name);  // no document
    }
    QVERIFY(window.findChild<QToolBar*>("debugToolBar"));
    QCOMPARE(window.debugUi()->modeCombo()->count(), 4);
    for (const char* dock : {"breakpointsDock", "callStackDock", "watchDock", "alertsDock"})
      QVERIFY2(window.dock(dock), dock);
    QVERIFY(waitLoaded(window, m_nan));
    QVERIFY(window.action("actionDebugRun")->isEnabled());
    QVERIFY(window.action("actionDebugStep")->isEnabled());
    QVERIFY(!window.action("actionDebugContinue")->isEnabled());
    QVERIFY(!window.action("actionDebugRecompute")->isEnabled());
  }

  // The Run toolbar's device chooser (gui/app/device_choice.h): CPU and CUDA, CUDA disabled with
  // the reason where there is no device; a CUDA choice without one fails the run saying why and
  // is not restored when the file is opened again.
  void deviceChooser() {
    MainWindow window;
    window.show();
    DebugUi* ui = window.debugUi();
    QComboBox* device = ui->deviceCombo();
    QVERIFY(device);
    QVERIFY(window.findChild<QToolBar*>("debugToolBar")->isAncestorOf(device));
    QCOMPARE(device->count(), 2);
    QCOMPARE(device->itemData(0).toInt(), int(engine::Device::Cpu));
    QCOMPARE(device->itemData(1).toInt(), int(engine::Device::Cuda));
    QString why;
    const bool cuda = gui::cudaAvailable(&why);
    QVERIFY(!why.isEmpty());
    auto* items = qobject_cast<QStandardItemModel*>(device->model());
    QVERIFY(items);
    QCOMPARE(items->item(1)->isEnabled(), cuda);
    QCOMPARE(items->item(1)->toolTip(), why);
    QVERIFY(!device->isEnabled());  // no document
    QVERIFY(waitLoaded(window, m_nan));
    QVERIFY(device->isEnabled());
    QCOMPARE(ui->controller()->device(), engine::Device::Cpu);
    if (cuda) QSKIP("a CUDA device is present: the refusal below needs a machine without one");
    // Chosen anyway (a setting from a GPU machine): the run is refused with the runtime's reason.
    QSignalSpy failed(ui->controller(), &gui::DebugController::failed);
    device->setCurrentIndex(1);  // programmatically: the item is disabled for the user
    QCOMPARE(ui->controller()->device(), engine::Device::Cuda);
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), kTimeout);
    const QString message = failed.front().front().toString();
    QVERIFY2(message.contains("CUDA"), qPrintable(message));
    // Back on the CPU the same document runs.
    device->setCurrentIndex(0);
    QCOMPARE(ui->controller()->device(), engine::Device::Cpu);
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QVERIFY(ui->controller()->snapshot());
    QVERIFY(ui->controller()->snapshot()->state.phase != SessionPhase::Idle);
    // The choice is remembered per file, but CUDA comes back only where there is a device.
    device->setCurrentIndex(1);
    const QStringList saved = QSettings().allKeys().filter(QStringLiteral("/device"));
    QCOMPARE(saved.size(), 1);
    QCOMPARE(QSettings().value(saved.front()).toString(), QStringLiteral("cuda"));
    QVERIFY(waitLoaded(window, m_nan));
    QCOMPARE(ui->controller()->device(), engine::Device::Cpu);
    QCOMPARE(device->currentIndex(), 0);
  }

  void breakpointRunMarksAndPills() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_nan));
    GraphPane* pane = window.originalPane();
    const auto& graph = *window.document()->original;
    const int log = viewNode(pane, test::nodeIdOf(graph, "Elemwise{log}"));
    const int mul = viewNode(pane, test::nodeIdOf(graph, "Elemwise{mul}"));
    const int add = viewNode(pane, test::nodeIdOf(graph, "Elemwise{add}"));
    QVERIFY(log >= 0 && mul >= 0 && add >= 0);
    pane->expandAll();
    QVERIFY(settle(window));

    // Add Breakpoint from the node's context menu: a dot on the node.
    std::unique_ptr<QMenu> menu(window.buildNodeMenu(pane, mul));
    QAction* toggle = menu->findChild<QAction*>("nodeMenuToggleBreakpoint");
    QVERIFY(toggle);
    QCOMPARE(toggle->text(), QStringLiteral("Add Breakpoint"));
    toggle->trigger();
    QCOMPARE(window.debugUi()->controller()->breakpoints().size(), std::size_t(1));
    QTRY_VERIFY_WITH_TIMEOUT(
        deco(pane, mul) && deco(pane, mul)->breakpoint == vis::BreakpointMark::Enabled, kTimeout);

    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    const auto snapshot = window.debugUi()->controller()->snapshot();
    QCOMPARE(snapshot->state.reason, PauseKind::Breakpoint);
    // Current (and centred: selected), executed, next.
    QTRY_VERIFY_WITH_TIMEOUT(deco(pane, mul) && deco(pane, mul)->mark == vis::NodeMark::Current,
                             kTimeout);
    QCOMPARE(pane->selectedNode(), mul);
    QVERIFY(deco(pane, log) && deco(pane, log)->mark == vis::NodeMark::Executed);
    QVERIFY(deco(pane, add) && deco(pane, add)->mark == vis::NodeMark::Next);
    QVERIFY(window.action("actionDebugContinue")->isEnabled());
    QVERIFY(window.action("actionDebugEditValue")->isEnabled());
    // A health pill on log -> mul (h: one NaN, one negative, one zero, three positive of six), and
    // none on the edge out of add (b is not computed yet).
    const int logMul = edgeBetween(*pane->model(), log, mul);
    QVERIFY(logMul >= 0);
    const vis::EdgeDecoration* e = pane->scene()->edgeDecoration(logMul);
    QVERIFY(e && e->pill);
    QCOMPARE(e->pill->nan, 1.0 / 6);
    QCOMPARE(e->pill->negative, 1.0 / 6);
    QCOMPARE(e->pill->zero, 1.0 / 6);
    QCOMPARE(e->pill->positive, 3.0 / 6);
    QCOMPARE(e->pill->text, QStringLiteral("f32[2,3]"));
    QVERIFY(e->pill->tooltip.contains("min"));
    QVERIFY(e->pill->tooltip.contains("max"));
    const int addOut = pane->model()->outEdges(add).empty() ? -1 : pane->model()->outEdges(add)[0];
    QVERIFY(addOut >= 0);
    const vis::EdgeDecoration* notYet = pane->scene()->edgeDecoration(addOut);
    QVERIFY(!notYet || !notYet->pill);
    // The inspector shows the pause's value of the selected node.
    bool found = false;
    for (const gui::InspectedValue& v : window.inspector()->valueView()->values())
      found = found || v.label.contains("at pause");
    QVERIFY(found);

    // Continue to the end: no current node, every node executed.
    window.action("actionDebugContinue")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(window.debugUi()->controller()->snapshot()->state.phase, SessionPhase::Finished);
    QTRY_VERIFY_WITH_TIMEOUT(deco(pane, add) && deco(pane, add)->mark == vis::NodeMark::Executed,
                             kTimeout);
  }

  void nanGuardAlertAndChain() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_nan));
    GraphPane* pane = window.originalPane();
    DebugUi* ui = window.debugUi();
    engine::debug::NanGuardOptions o;
    o.allow = {engine::debug::AllowRule::parse("var:h:nan"),
               engine::debug::AllowRule::parse("var:a:nan")};
    ui->controller()->setNanGuardOptions(o, false);
    window.action("actionDebugNanGuard")->trigger();
    QVERIFY(ui->controller()->nanGuardEnabled());
    pane->collapseAll();  // the creator hides in layer3
    QVERIFY(settle(window));
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->snapshot()->state.reason, PauseKind::NanGuard);
    // The banner and the Alerts dock.
    QVERIFY(ui->banner()->isVisibleTo(&window));
    QVERIFY2(ui->bannerText().contains("nan in Elemwise{add}"), qPrintable(ui->bannerText()));
    QVERIFY(window.dock("alertsDock")->isVisibleTo(&window));
    QCOMPARE(ui->alertsModel()->rowCount(), 1);
    QCOMPARE(ui->chainList()->count(), 3);
    // Navigated to the creator, opening its group.
    const auto& graph = *window.document()->original;
    const int log = viewNode(pane, test::nodeIdOf(graph, "Elemwise{log}"));
    const int mul = viewNode(pane, test::nodeIdOf(graph, "Elemwise{mul}"));
    const int add = viewNode(pane, test::nodeIdOf(graph, "Elemwise{add}"));
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), log, kTimeout);
    QVERIFY(pane->groupState().isExpanded("layer3"));
    QVERIFY(settle(window));
    // The chain's colours, from the scene.
    QTRY_VERIFY_WITH_TIMEOUT(deco(pane, log) && deco(pane, log)->outline == gui::kCreatorColor,
                             kTimeout);
    QCOMPARE(deco(pane, mul)->outline, std::optional<QColor>(gui::kPropagatorColor));
    QCOMPARE(deco(pane, add)->outline, std::optional<QColor>(gui::kPropagatorColor));
    QCOMPARE(deco(pane, log)->badge, QStringLiteral("nan"));
    for (auto [from, to] : {std::pair{log, mul}, std::pair{mul, add}}) {
      const vis::EdgeDecoration* e =
          pane->scene()->edgeDecoration(edgeBetween(*pane->model(), from, to));
      QVERIFY(e && e->color == gui::kPropagatorColor);
    }
    // A link of the chain navigates there.
    ui->chainList()->setCurrentRow(0);
    emit ui->chainList()->itemClicked(ui->chainList()->item(0));
    QCOMPARE(pane->selectedNode(), add);
    // Stop ends the paused run.
    window.action("actionDebugStop")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->snapshot()->state.phase, SessionPhase::Stopped);
  }

  // fast_run fuses log, mul and add into one Composite: the creator is drawn on the original log
  // node (not on mul and add), and its description names the Composite it was fused into.
  void fusedCreatorOnItsOriginalNode() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_nan));
    GraphPane* pane = window.originalPane();
    DebugUi* ui = window.debugUi();
    ui->modeCombo()->setCurrentIndex(ui->modeCombo()->findText("fast_run"));
    QCOMPARE(ui->controller()->mode(), engine::Mode::FastRun);
    window.action("actionDebugNanGuard")->trigger();
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->snapshot()->state.reason, PauseKind::NanGuard);
    const auto& report = *ui->controller()->nanEvents().front();
    QVERIFY(report.creator());
    QVERIFY2(!report.creator()->node.fusedInto.empty(), report.toText().c_str());
    const std::int64_t logId = test::nodeIdOf(*window.document()->original, "Elemwise{log}");
    const int log = viewNode(pane, logId);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), log, kTimeout);
    QVERIFY(settle(window));
    QTRY_VERIFY_WITH_TIMEOUT(deco(pane, log) && deco(pane, log)->outline == gui::kCreatorColor,
                             kTimeout);
    const int mul = viewNode(pane, test::nodeIdOf(*window.document()->original, "Elemwise{mul}"));
    QVERIFY(!deco(pane, mul) || deco(pane, mul)->outline != gui::kCreatorColor);
    QVERIFY(ui->chainList()->item(ui->chainList()->count() - 1)->text().contains("fused into"));
  }

  void stepIntoAndCallStack() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_ofg));
    GraphPane* pane = window.originalPane();
    DebugUi* ui = window.debugUi();
    pane->collapseAll();
    QVERIFY(settle(window));
    window.action("actionDebugStepInto")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->callStackModel()->rowCount(), 2);
    window.action("actionDebugStepInto")->trigger();  // exp, inside the body
    QVERIFY(settle(window));
    // Clicking the inner frame opens the OpFromGraph group.
    int ofg = -1;
    for (int g = 0; g < static_cast<int>(pane->model()->groups().size()); ++g)
      if (pane->model()->groups()[g].kind == vis::GroupKind::OpFromGraph) ofg = g;
    QVERIFY(ofg > 0);
    const QString path = pane->model()->groups()[ofg].path;
    pane->collapseAll();
    QVERIFY(settle(window));
    QVERIFY(!pane->groupState().isExpanded(path));
    const QModelIndex inner = ui->callStackModel()->index(0, 0);
    emit ui->callStackView()->clicked(inner);
    QVERIFY(pane->groupState().isExpanded(path));
    QVERIFY(settle(window));
    // The inner node that ran is the current one.
    int exp = -1;
    for (int n : pane->model()->groups()[ofg].nodes)
      if (pane->model()->nodes()[n].apply &&
          pane->model()->nodes()[n].apply->op().str() == "Elemwise{exp}")
        exp = n;
    QVERIFY(exp >= 0);
    QTRY_VERIFY_WITH_TIMEOUT(deco(pane, exp) && deco(pane, exp)->mark == vis::NodeMark::Current,
                             kTimeout);
    window.action("actionDebugStepOut")->trigger();
    QVERIFY(settle(window));
    QCOMPARE(ui->callStackModel()->rowCount(), 1);
  }

  void editRecomputeFlashUndo() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_nan));
    GraphPane* pane = window.originalPane();
    DebugUi* ui = window.debugUi();
    pane->expandAll();
    QVERIFY(settle(window));
    ui->controller()->addBreakpoint(engine::debug::parseBreakSpec("var:b"));
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QVERIFY(!window.action("actionDebugRecompute")->isEnabled());  // nothing edited
    const auto& graph = *window.document()->original;
    const int mul = viewNode(pane, test::nodeIdOf(graph, "Elemwise{mul}"));
    const int add = viewNode(pane, test::nodeIdOf(graph, "Elemwise{add}"));
    QCOMPARE(ui->valueName(pane, mul), QStringLiteral("a"));
    ui->controller()->setValue("h", engine::Tensor::zeros(engine::DType::Float32, {2, 3}));
    QVERIFY(settle(window));
    QVERIFY(window.action("actionDebugRecompute")->isEnabled());
    QSignalSpy recomputed(ui->controller(), &gui::DebugController::recomputed);
    window.action("actionDebugRecompute")->trigger();
    QVERIFY(recomputed.wait(kTimeout));
    // The changed values flash: mul and add outlined, for about a second.
    QVERIFY(pane->scene()->decorations("flash"));
    QVERIFY(deco(pane, mul) && deco(pane, mul)->outline == gui::kFlashColor);
    QVERIFY(deco(pane, add) && deco(pane, add)->outline == gui::kFlashColor);
    QTRY_VERIFY_WITH_TIMEOUT(!pane->scene()->decorations("flash"), kTimeout);
    QCOMPARE(ui->controller()->snapshot()->findByName("b")->view.value.at({1, 1}), 1.0);
    window.action("actionDebugUndoEdit")->trigger();
    QVERIFY(settle(window));
    QVERIFY(ui->controller()->edits().empty());
  }

  // A cell of the inspector's slice table, edited at a pause, edits that element of the value.
  void editACellOfTheSliceTable() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_nan));
    GraphPane* pane = window.originalPane();
    DebugUi* ui = window.debugUi();
    ui->controller()->addBreakpoint(engine::debug::parseBreakSpec("var:b"));
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    gui::ValueView* view = window.inspector()->valueView();
    gui::SliceTableModel* table = view->sliceModel();
    pane->selectNode(viewNode(pane, test::nodeIdOf(*window.document()->original, "Elemwise{log}")));
    int shown = -1;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
          for (int i = 0; i < static_cast<int>(view->values().size()); ++i)
            if (view->values()[static_cast<std::size_t>(i)].label.contains("h at pause")) shown = i;
          return shown >= 0;
        }(),
        kTimeout);
    view->showValue(shown);
    QTRY_VERIFY_WITH_TIMEOUT(table->isEditable(), kTimeout);
    QVERIFY(table->flags(table->index(1, 1)) & Qt::ItemIsEditable);
    QCOMPARE(table->elementIndex(1, 1), (std::vector<std::int64_t>{1, 1}));
    QVERIFY(!table->setData(table->index(1, 1), "not a number"));
    QVERIFY(table->setData(table->index(1, 1), "0.5"));
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->edits().size(), std::size_t(1));
    QCOMPARE(ui->controller()->snapshot()->findByName("h")->view.value.at({1, 1}), 0.5);
    ui->controller()->recompute();
    QVERIFY(settle(window));
    QCOMPARE(ui->controller()->snapshot()->findByName("b")->view.value.at({1, 1}), 2.0);
    // A graph's own value (x's test value) is not editable.
    pane->selectNode(pane->model()->nodeOfVariable(window.document()->original->inputs()[0]->id()));
    QTRY_VERIFY_WITH_TIMEOUT(!view->values().empty() && !table->isEditable(), kTimeout);
  }

  void breakpointLandsInTheOptimizedGraph() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_fused));
    const auto doc = window.document();
    QVERIFY(doc->optimized);
    const std::int64_t mul = test::nodeIdOf(*doc->original, "Elemwise{mul}");
    window.debugUi()->controller()->toggleNodeBreakpoint(mul);
    engine::debug::NodeLineage lineage(*doc->optimized, doc->rewrites);
    const std::vector<std::int64_t> became = lineage.optimizedNodesFor(mul);
    QCOMPARE(became.size(), std::size_t(1));
    QVERIFY(became.front() != mul);  // fused into a Composite
    window.tabs()->setCurrentWidget(window.optimizedPane());
    QVERIFY(settle(window));
    GraphPane* opt = window.optimizedPane();
    const int composite = opt->model()->nodeOfApply(became.front());
    QTRY_VERIFY_WITH_TIMEOUT(
        deco(opt, composite) && deco(opt, composite)->breakpoint == vis::BreakpointMark::Enabled,
        kTimeout);
    // On the original graph, on the node itself.
    const int original = window.originalPane()->model()->nodeOfApply(mul);
    QTRY_VERIFY_WITH_TIMEOUT(
        window.originalPane()->scene()->decorations("debug") &&
            window.originalPane()->scene()->decorations("debug")->nodes.count(original),
        kTimeout);
  }

  void breakPointOpBanner() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_break));
    window.action("actionDebugRun")->trigger();
    QVERIFY(settle(window));
    QVERIFY(window.debugUi()->banner()->isVisibleTo(&window));
    QVERIFY2(window.debugUi()->bannerText().contains("check_h"),
             qPrintable(window.debugUi()->bannerText()));
    QVERIFY(window.debugUi()->bannerText().contains("min 2 max 6"));
  }

  void breakpointsRestoredInANewWindow() {
    std::int64_t mul = -1;
    {
      MainWindow window;
      window.show();
      QVERIFY(waitLoaded(window, m_nan));
      GraphPane* pane = window.originalPane();
      mul = test::nodeIdOf(*window.document()->original, "Elemwise{mul}");
      pane->selectNode(viewNode(pane, mul));
      window.action("actionDebugToggleBreakpoint")->trigger();  // F9
      QCOMPARE(window.debugUi()->controller()->breakpoints().size(), std::size_t(1));
    }
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_nan));
    GraphPane* pane = window.originalPane();
    pane->expandAll();
    QVERIFY(settle(window));
    QCOMPARE(window.debugUi()->controller()->breakpoints().size(), std::size_t(1));
    QTRY_VERIFY_WITH_TIMEOUT(
        deco(pane, viewNode(pane, mul)) &&
            deco(pane, viewNode(pane, mul))->breakpoint == vis::BreakpointMark::Enabled,
        kTimeout);
  }

 private:
  QTemporaryDir m_dir;
  QString m_nan, m_ofg, m_fused, m_break;
};

TSCOPE_GUI_TEST_MAIN(TestDebugUi)
#include "tst_debug_ui.moc"

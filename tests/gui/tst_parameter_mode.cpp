// View > Parameters in the window (issue 24): the default by parameter count (badges for the
// ResNet-18 fixture, boxes for a small graph), the choice remembered per file (and not given to
// another file), a badge selecting its parameter and the inspector showing it, and the
// side-by-side and rewrite-history step views drawing badges too.
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/session/optimize_graph.h"
#include "gui/app/graph_pane.h"
#include "gui/app/inspector/inspector_panel.h"
#include "gui/app/main_window.h"
#include "gui_test_main.h"
#include "visualizers/scene/graph_scene.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>

using namespace tscope;
using gui::GraphPane;
using gui::MainWindow;

namespace {

constexpr int kTimeout = 30000;

// 60 layers of tanh(h * w_i + b_i), w_i shared and b_i constant (120 parameters: badges by
// default), optimized with fast_run so the file has an optimized graph and a rewrite log.
void writeParameterGraph(const QString& path, int layers) {
  using namespace tscope::engine;
  const TensorType vec(DType::Float32, {4});
  const VarPtr x = Variable::create(vec, "x");
  std::vector<VarPtr> inputs{x};
  VarPtr h = x;
  for (int i = 0; i < layers; ++i) {
    auto w =
        SharedVariable::create(Tensor::full(DType::Float32, {4}, 0.5), "w" + std::to_string(i));
    auto b = Constant::create(Tensor::full(DType::Float32, {4}, 0.1 * i), "b" + std::to_string(i));
    inputs.push_back(w);
    NameScope layer("layer" + std::to_string(i));
    h = tanh(h * w + b);
  }
  h->setName("out");
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(inputs, std::vector<VarPtr>{h});
  session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
  io::saveTsg(doc, path.toStdString());
}

bool waitLoaded(MainWindow& window, const QString& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  window.openFile(path);
  if (!loaded.wait(kTimeout) && loaded.isEmpty()) return false;
  return QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

vis::ParameterMode shownMode(GraphPane* pane) {
  const auto layout = pane->view()->graphScene()->sceneLayout();
  return layout ? layout->parameters : vis::ParameterMode::Boxes;
}

int boxNamed(const vis::ViewModel& model, const char* name) {
  for (std::size_t i = 0; i < model.nodes().size(); ++i)
    if (model.nodes()[i].variable && model.nodes()[i].variable->name() == name) return int(i);
  return -1;
}

}  // namespace

class TestParameterMode : public QObject {
  Q_OBJECT

  QTemporaryDir m_dir;
  QString m_big, m_small;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_big = m_dir.filePath("big.tsg");
    m_small = m_dir.filePath("small.tsg");
    writeParameterGraph(m_big, 30);   // 60 parameters
    writeParameterGraph(m_small, 2);  // 4
  }
  void init() { QSettings().clear(); }

  void testDefaultByCount() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_big));
    QVERIFY(window.document()->originalModel->parameterCount() > vis::ViewModel::kBadgesAbove);
    QCOMPARE(window.originalPane()->parameterMode(), vis::ParameterMode::Badges);
    QCOMPARE(shownMode(window.originalPane()), vis::ParameterMode::Badges);
    QVERIFY(window.action("actionParametersBadges")->isChecked());
    QVERIFY(!window.action("actionParametersBoxes")->isChecked());
    // The menu: View > Parameters with the three choices.
    auto* menu = window.menuBar()->findChild<QMenu*>(QStringLiteral("menuParameters"));
    QVERIFY(menu);
    QCOMPARE(menu->actions().size(), 3);

    QVERIFY(waitLoaded(window, m_small));
    QCOMPARE(window.originalPane()->parameterMode(), vis::ParameterMode::Boxes);
    QCOMPARE(shownMode(window.originalPane()), vis::ParameterMode::Boxes);
    QVERIFY(window.action("actionParametersBoxes")->isChecked());
  }

  void testRememberedPerFile() {
    {
      MainWindow window;
      window.show();
      QVERIFY(waitLoaded(window, m_big));
      window.action("actionParametersHidden")->trigger();
      QTRY_COMPARE_WITH_TIMEOUT(shownMode(window.originalPane()), vis::ParameterMode::Hidden,
                                kTimeout);
      QCOMPARE(QSettings().value(MainWindow::parameterModeKey(m_big)).toString(),
               QString("hidden"));
      QVERIFY(window.action("actionParametersHidden")->isChecked());
    }
    MainWindow again;
    again.show();
    QVERIFY(waitLoaded(again, m_big));
    QCOMPARE(again.originalPane()->parameterMode(), vis::ParameterMode::Hidden);
    QCOMPARE(shownMode(again.originalPane()), vis::ParameterMode::Hidden);
    // Another file keeps its own default.
    QVERIFY(waitLoaded(again, m_small));
    QCOMPARE(again.originalPane()->parameterMode(), vis::ParameterMode::Boxes);
    QVERIFY(!QSettings().contains(MainWindow::parameterModeKey(m_small)));
    // A stored value that names no mode is ignored.
    QSettings().setValue(MainWindow::parameterModeKey(m_small), "sideways");
    QVERIFY(waitLoaded(again, m_small));
    QCOMPARE(again.originalPane()->parameterMode(), vis::ParameterMode::Boxes);
  }

  void testBadgeSelectsInInspector() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_big));
    GraphPane* pane = window.originalPane();
    const auto model = pane->model();
    const int w = boxNamed(*model, "w3");
    QVERIFY(w >= 0);
    QVERIFY(model->nodes()[std::size_t(w)].parameter);
    pane->selectNode(w);  // opens its layer if collapsed, then selects its row
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), w, kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(window.inspector()->node(), w, kTimeout);
    QVERIFY(!pane->view()->graphScene()->nodeRect(w).isEmpty());  // drawn by its row
    QCOMPARE(shownMode(pane), vis::ParameterMode::Badges);
    // A click on another parameter's row selects it, and the inspector shows it.
    const int b = boxNamed(*model, "b3");
    QVERIFY(b >= 0);
    vis::GraphView* view = pane->view();
    view->setZoom(1.0);
    const QRectF row = view->graphScene()->nodeRect(b);
    QVERIFY(!row.isEmpty());
    view->centerOn(row.center());
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {},
                      view->mapFromScene(row.center() + QPointF(row.width() / 4, 0)));
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), b, kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(window.inspector()->node(), b, kTimeout);
    pane->selectNode(w);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), w, kTimeout);
    // Switching to boxes keeps it selected: now its box.
    window.setParameterMode(vis::ParameterMode::Boxes);
    QTRY_COMPARE_WITH_TIMEOUT(shownMode(pane), vis::ParameterMode::Boxes, kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(pane->selectedNode(), w, kTimeout);
  }

  void testSideBySideAndStepWithBadges() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_big));
    const auto& doc = *window.document();
    QVERIFY(doc.optimizedModel);
    window.setSideBySide(true);
    QVERIFY(window.isSideBySide());
    QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);
    QCOMPARE(shownMode(window.leftPane()), vis::ParameterMode::Badges);
    QCOMPARE(shownMode(window.rightPane()), vis::ParameterMode::Badges);
    // A shared variable keeps its id through the optimizer: selecting its row on the left
    // selects its counterpart's row on the right.
    const std::int64_t id =
        doc.originalModel->nodes()[std::size_t(boxNamed(*doc.originalModel, "w5"))].variable->id();
    const int left = doc.originalModel->nodeOfVariable(id);
    const int right = doc.optimizedModel->nodeOfVariable(id);
    QVERIFY(left >= 0 && right >= 0);
    window.leftPane()->selectNode(left);
    QTRY_COMPARE_WITH_TIMEOUT(window.leftPane()->selectedNode(), left, kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(window.rightPane()->selectedNode(), right, kTimeout);
    QVERIFY(!window.rightPane()->view()->graphScene()->nodeRect(right).isEmpty());
    // The choice applies to both sides.
    window.action("actionParametersBoxes")->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(shownMode(window.leftPane()), vis::ParameterMode::Boxes, kTimeout);
    QTRY_COMPARE_WITH_TIMEOUT(shownMode(window.rightPane()), vis::ParameterMode::Boxes, kTimeout);
    window.action("actionParametersBadges")->trigger();
    window.setSideBySide(false);
    // A rewrite-history step shows badges too.
    window.showStep(1, doc.optimizedModel);
    QCOMPARE(window.currentPane(), window.stepPane());
    QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);
    QCOMPARE(shownMode(window.stepPane()), vis::ParameterMode::Badges);
    QVERIFY(window.action("actionParametersBadges")->isChecked());
  }
};

TSCOPE_GUI_TEST_MAIN(TestParameterMode)
#include "tst_parameter_mode.moc"

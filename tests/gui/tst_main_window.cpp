// MainWindow (offscreen): opening .tsg and ONNX files through the loader, the tabs (Optimized only
// when the file has one), a bad file's error dialog (and the window staying usable), cancelling a
// load, recent files, drag and drop, side-by-side selection through counterparts, rewrite
// comparisons and steps, settings round trips (geometry, dock state, group state per file), the
// search bar driving the pane, export, and `tensorscope FILE --screenshot OUT.png`.
#include "engine/graph/source_site.h"
#include "engine/io/tsg.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/session/optimize_graph.h"
#include "gui/app/counterparts.h"
#include "gui/app/document_loader.h"
#include "gui/app/graph_pane.h"
#include "gui/app/main_window.h"
#include "gui/app/recent_files.h"
#include "gui/app/search_bar.h"
#include "gui_test_main.h"

#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>

using namespace tscope;
using gui::GraphPane;
using gui::MainWindow;

namespace {

const QString kMlp = QStringLiteral(TSCOPE_SOURCE_DIR "/examples/graphs/mlp.tsg");
constexpr int kTimeout = 20000;

// Three nested scopes of elementwise chains over two inputs, optimized with fast_run (fusion
// rewrites them), so the file has groups, an optimized graph and a rewrite log.
void writeScopedGraph(const QString& path) {
  using namespace tscope::engine;
  const TensorType vec(DType::Float32, {4});
  const VarPtr x = Variable::create(vec, "x"), w = Variable::create(vec, "w");
  VarPtr h = x;
  for (int i = 0; i < 3; ++i) {
    NameScope layer("layer" + std::to_string(i));
    NameScope act("act");
    h = elemwise(ScalarOp::Tanh, {elemwise(ScalarOp::Mul, {elemwise(ScalarOp::Add, {h, w}), w})});
  }
  h->setName("out");
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, w}, std::vector<VarPtr>{h});
  session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
  io::saveTsg(doc, path.toStdString());
}

bool waitLoaded(MainWindow& window, const QString& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  window.openFile(path);
  if (!loaded.wait(kTimeout) && loaded.isEmpty()) return false;
  return QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

void sendDrop(MainWindow& window, const QStringList& files, bool* enterAccepted) {
  QMimeData mime;
  QList<QUrl> urls;
  for (const QString& f : files) urls << QUrl::fromLocalFile(f);
  mime.setUrls(urls);
  const QPoint pos = window.rect().center();
  QDragEnterEvent enter(pos, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &enter);
  *enterAccepted = enter.isAccepted();
  QDropEvent drop(QPointF(pos), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &drop);
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void testOpenTsg();
  void testOpenOptimizedShowsBothTabs();
  void testOpenOnnx();
  void testBadFileShowsError();
  void testCancelLoad();
  void testRecentFiles();
  void testDragAndDrop();
  void testSideBySideSelectionSync();
  void testRewriteComparisonAndStep();
  void testSettingsRoundTrip();
  void testGroupStatePerFile();
  void testSearchBarDrivesPane();
  void testExport();
  void testScreenshot();

 private:
  QTemporaryDir m_dir;
  QString m_scoped;
};

void TestMainWindow::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);  // QSettings go to a test location ...
  QVERIFY(m_dir.isValid());
  m_scoped = m_dir.filePath(QStringLiteral("scoped.tsg"));
  writeScopedGraph(m_scoped);
}

void TestMainWindow::init() {
  QSettings().clear();  // ... which each test starts empty
}

void TestMainWindow::testOpenTsg() {
  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, kMlp));
  QVERIFY(window.document());
  QCOMPARE(window.tabTitles(), QStringList{QStringLiteral("Original")});
  QCOMPARE(window.currentPane(), window.originalPane());
  QCOMPARE(window.originalPane()->model(), window.document()->originalModel);
  QVERIFY(window.windowTitle().contains(QStringLiteral("mlp.tsg")));
  QTRY_VERIFY_WITH_TIMEOUT(window.statusCounts().contains(QStringLiteral("nodes")), kTimeout);
  QVERIFY(window.statusZoom().endsWith('%'));
  QVERIFY(!window.action("actionSideBySide")->isEnabled());
  QVERIFY(window.action("actionZoomFit")->isEnabled());
  window.setSideBySide(true);  // no optimized graph: refused
  QVERIFY(!window.isSideBySide());
  window.closeDocument();
  QVERIFY(!window.document());
  QVERIFY(!window.originalPane()->model());
  QVERIFY(!window.action("actionZoomFit")->isEnabled());
}

void TestMainWindow::testOpenOptimizedShowsBothTabs() {
  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, m_scoped));
  QCOMPARE(window.tabTitles(),
           (QStringList{QStringLiteral("Original"), QStringLiteral("Optimized")}));
  QCOMPARE(window.optimizedPane()->model(), window.document()->optimizedModel);
  QVERIFY(window.action("actionSideBySide")->isEnabled());
  // Opening a file without optimized graph drops the tab again.
  QVERIFY(waitLoaded(window, kMlp));
  QCOMPARE(window.tabTitles(), QStringList{QStringLiteral("Original")});
}

void TestMainWindow::testOpenOnnx() {
#ifndef TSCOPE_HAVE_ONNX
  QSKIP("built without ONNX support");
#else
  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, QStringLiteral(TSCOPE_TEST_DATA_DIR "/onnx/models/lenet5.onnx")));
  QCOMPARE(window.document()->info.format, std::string("onnx"));
  QCOMPARE(window.tabTitles(), QStringList{QStringLiteral("Original")});
  QVERIFY(window.logView()->toPlainText().contains(QStringLiteral("lenet5.onnx")));
#endif
}

void TestMainWindow::testBadFileShowsError() {
  const QString bad = m_dir.filePath(QStringLiteral("broken.tsg"));
  {
    QFile file(bad);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"format": "something-else", "version": 1})");
  }
  MainWindow window;
  window.show();
  QSignalSpy failed(&window, &MainWindow::loadFailed);
  window.openFile(bad);
  QVERIFY(failed.wait(kTimeout));
  QMessageBox* box = window.errorDialog();
  QVERIFY(box);
  QTRY_VERIFY(box->isVisible());
  const QString text = box->text() + '\n' + box->informativeText();
  QVERIFY2(text.contains(QStringLiteral("broken.tsg")), qPrintable(text));
  QVERIFY2(text.contains(QStringLiteral("tensorscope-graph")), qPrintable(text));  // the reason
  QVERIFY(!window.document());
  QVERIFY(window.logView()->toPlainText().contains(QStringLiteral("broken.tsg")));
  box->close();
  // Still usable: the next file opens.
  QVERIFY(waitLoaded(window, kMlp));
  QVERIFY(window.document());
}

void TestMainWindow::testCancelLoad() {
  MainWindow window;
  window.show();
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  QSignalSpy cancelled(window.loader(), &gui::DocumentLoader::cancelled);
  window.openFile(kMlp);
  QVERIFY(window.isBusy());
  auto* cancel = window.findChild<QToolButton*>(QStringLiteral("cancelLoadButton"));
  QVERIFY(cancel);
  QVERIFY(cancel->isVisible());
  QTest::mouseClick(cancel, Qt::LeftButton);
  QCOMPARE(cancelled.count(), 1);
  QVERIFY(!cancel->isVisible());
  QTest::qWait(1500);
  QCOMPARE(loaded.count(), 0);
  QVERIFY(!window.document());
  QVERIFY(!window.isBusy());
}

void TestMainWindow::testRecentFiles() {
  gui::RecentFiles recent;
  QSignalSpy changed(&recent, &gui::RecentFiles::changed);
  for (int i = 0; i < gui::RecentFiles::kMaxCount + 3; ++i)
    recent.add(m_dir.filePath(QStringLiteral("f%1.tsg").arg(i)));
  QCOMPARE(changed.count(), gui::RecentFiles::kMaxCount + 3);
  QStringList files = recent.files();
  QCOMPARE(files.size(), gui::RecentFiles::kMaxCount);
  QCOMPARE(files.first(), m_dir.filePath(QStringLiteral("f12.tsg")));
  recent.add(m_dir.filePath(QStringLiteral("f5.tsg")));  // moves to the front, no duplicate
  files = recent.files();
  QCOMPARE(files.first(), m_dir.filePath(QStringLiteral("f5.tsg")));
  QCOMPARE(files.count(m_dir.filePath(QStringLiteral("f5.tsg"))), 1);
  QCOMPARE(files.size(), gui::RecentFiles::kMaxCount);

  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, kMlp));
  QCOMPARE(window.recentFiles()->files().first(), QFileInfo(kMlp).absoluteFilePath());
  auto* menu = window.findChild<QMenu*>(QStringLiteral("menuRecent"));
  QVERIFY(menu);
  QVERIFY(menu->actions().first()->text().contains(QStringLiteral("mlp.tsg")));
  // A recent file that is gone is dropped from the list when it fails to open.
  const QString gone = m_dir.filePath(QStringLiteral("gone.tsg"));
  window.recentFiles()->add(gone);
  QSignalSpy failed(&window, &MainWindow::loadFailed);
  menu->actions().first()->trigger();
  QVERIFY(failed.wait(kTimeout));
  QVERIFY(!window.recentFiles()->files().contains(gone));
  window.errorDialog()->close();
  window.recentFiles()->clear();
  QVERIFY(window.recentFiles()->files().isEmpty());
}

void TestMainWindow::testDragAndDrop() {
  MainWindow window;
  window.show();
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  bool accepted = false;
  sendDrop(window, {m_scoped}, &accepted);
  QVERIFY(accepted);
  QVERIFY(loaded.wait(kTimeout));
  QCOMPARE(loaded.at(0).at(0).toString(), QFileInfo(m_scoped).absoluteFilePath());

  QMimeData text;
  text.setText(QStringLiteral("not a file"));
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&window, &enter);
  QVERIFY(!enter.isAccepted());
}

void TestMainWindow::testSideBySideSelectionSync() {
  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, m_scoped));
  window.action("actionSideBySide")->trigger();
  QVERIFY(window.isSideBySide());
  QVERIFY(QSettings().value("view/sideBySide").toBool());
  QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);
  GraphPane* left = window.leftPane();
  GraphPane* right = window.rightPane();
  QCOMPARE(left->model(), window.document()->originalModel);
  QCOMPARE(right->model(), window.document()->optimizedModel);
  const auto& doc = *window.document();
  const gui::Counterparts counterparts(*doc.original, *doc.optimized, doc.rewrites);

  // The input box x: unchanged, same id on both sides.
  const std::int64_t xId = doc.original->inputs()[0]->id();
  const int xLeft = doc.originalModel->nodeOfVariable(xId);
  const int xRight = doc.optimizedModel->nodeOfVariable(xId);
  QVERIFY(xLeft >= 0 && xRight >= 0);
  left->selectNode(xLeft);
  QTRY_COMPARE_WITH_TIMEOUT(right->selectedNode(), xRight, kTimeout);
  QCOMPARE(window.currentPane(), left);

  // The output: the fused Composite computes it on the right.
  const std::int64_t outId = doc.original->outputs()[0]->id();
  const int outLeft = doc.originalModel->nodeShowing(outId);
  const int expected =
      gui::counterpartNode(*doc.originalModel, outLeft, *doc.optimizedModel, counterparts, true);
  QVERIFY(expected >= 0);
  left->selectNode(outLeft);
  QTRY_COMPARE_WITH_TIMEOUT(right->selectedNode(), expected, kTimeout);
  QCOMPARE(left->selectedNode(), outLeft);  // not pulled elsewhere by the echo

  // And back: selecting on the right selects on the left.
  right->selectNode(xRight);
  QTRY_COMPARE_WITH_TIMEOUT(left->selectedNode(), xLeft, kTimeout);
  QCOMPARE(window.currentPane(), right);

  window.action("actionSideBySide")->trigger();
  QVERIFY(!window.isSideBySide());
  QCOMPARE(window.currentPane(), window.originalPane());
}

void TestMainWindow::testRewriteComparisonAndStep() {
  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, m_scoped));
  const auto& doc = *window.document();
  QVERIFY(!doc.rewrites.empty());
  const QSet<int> removed{doc.originalModel->nodeShowing(doc.original->outputs()[0]->id())};
  const QSet<int> added{doc.optimizedModel->nodeShowing(doc.optimized->outputs()[0]->id())};
  window.showRewriteComparison(static_cast<int>(doc.rewrites.front().order), doc.originalModel,
                               doc.optimizedModel, removed, added);
  QVERIFY(window.isSideBySide());
  QCOMPARE(window.leftPane()->model(), doc.originalModel);
  QCOMPARE(window.rightPane()->model(), doc.optimizedModel);
  const QString reason = QString::fromStdString(doc.rewrites.front().reason);
  bool titled = false;
  for (QLabel* label : window.findChildren<QLabel*>(QStringLiteral("sideTitle")))
    titled = titled ||
             (label->text().startsWith(QStringLiteral("Before")) && label->text().contains(reason));
  QVERIFY(titled);
  QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);

  window.showStep(2, doc.optimizedModel);
  QVERIFY(!window.isSideBySide());
  QCOMPARE(window.tabTitles().last(), QStringLiteral("Step 2"));
  QCOMPARE(window.currentPane(), window.stepPane());
  window.showStep(0, doc.originalModel);
  QCOMPARE(window.tabTitles().size(), 3);  // the step tab is reused
  QCOMPARE(window.tabTitles().last(), QStringLiteral("Step 0 (original)"));
  QCOMPARE(window.stepPane()->model(), doc.originalModel);
}

void TestMainWindow::testSettingsRoundTrip() {
  QByteArray state;
  {
    MainWindow window;
    window.show();
    window.resize(1111, 777);
    window.dock(QStringLiteral("inspectorDock"))->hide();
    window.dock(QStringLiteral("logDock"))->show();
    window.action("actionMinimap")->setChecked(false);
    QTRY_COMPARE(window.size(), QSize(1111, 777));
    state = window.saveState();
    window.close();
  }
  MainWindow again;
  again.show();
  QCOMPARE(again.size(), QSize(1111, 777));
  QVERIFY(again.dock(QStringLiteral("inspectorDock"))->isHidden());
  QVERIFY(!again.dock(QStringLiteral("logDock"))->isHidden());
  QCOMPARE(again.saveState(), state);
  QVERIFY(!again.action("actionMinimap")->isChecked());
}

void TestMainWindow::testGroupStatePerFile() {
  QString toggled;
  vis::GroupState saved;
  {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, m_scoped));
    GraphPane* pane = window.originalPane();
    const auto& model = *pane->model();
    QVERIFY(model.groups().size() > 3);  // root, layer0..2, their "act" groups
    toggled = model.groups()[1].path;
    pane->toggleGroup(toggled);
    saved = pane->groupState();
    QTRY_VERIFY_WITH_TIMEOUT(!window.isBusy(), kTimeout);
    QVERIFY(QSettings().contains(MainWindow::groupStateKey(m_scoped, QStringLiteral("original"))));
  }
  MainWindow again;
  again.show();
  QVERIFY(waitLoaded(again, m_scoped));
  QCOMPARE(again.originalPane()->groupState(), saved);
  // Another file does not get this file's state.
  QVERIFY(!QSettings().contains(MainWindow::groupStateKey(kMlp, QStringLiteral("original"))) ||
          QSettings()
                  .value(MainWindow::groupStateKey(kMlp, QStringLiteral("original")))
                  .toStringList() != saved.toStringList());
}

void TestMainWindow::testSearchBarDrivesPane() {
  MainWindow window;
  window.show();
  QVERIFY(waitLoaded(window, m_scoped));
  QVERIFY(window.searchBar()->isHidden());
  window.action("actionFind")->trigger();
  QVERIFY(window.searchBar()->isVisible());
  QLineEdit* edit = window.searchBar()->lineEdit();
  edit->setText(QStringLiteral("tanh"));
  QTest::keyClick(edit, Qt::Key_Return);
  GraphPane* pane = window.originalPane();
  QCOMPARE(pane->searchHitCount(), 3);
  QCOMPARE(pane->currentSearchHit(), 0);
  QCOMPARE(window.searchBar()->resultText(), QStringLiteral("1 of 3"));
  window.action("actionFindNext")->trigger();
  QCOMPARE(pane->currentSearchHit(), 1);
  QCOMPARE(window.searchBar()->resultText(), QStringLiteral("2 of 3"));
  window.action("actionFindPrevious")->trigger();
  window.action("actionFindPrevious")->trigger();
  QCOMPARE(pane->currentSearchHit(), 2);  // wraps
  QTRY_VERIFY_WITH_TIMEOUT(pane->selectedNode() >= 0, kTimeout);
  QCOMPARE(window.find(QStringLiteral("no such thing")), 0);
  QCOMPARE(window.searchBar()->resultText(), QStringLiteral("No matches"));
  QTest::keyClick(edit, Qt::Key_Escape);
  QVERIFY(window.searchBar()->isHidden());
}

void TestMainWindow::testExport() {
  MainWindow window;
  window.show();
  QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                           window.exportView(m_dir.filePath(QStringLiteral("empty.svg"))));
  QVERIFY(waitLoaded(window, m_scoped));
  for (const char* suffix : {"svg", "png", "dot"}) {
    const QString path = m_dir.filePath(QStringLiteral("view.%1").arg(QLatin1String(suffix)));
    window.exportView(path);
    QVERIFY2(QFileInfo(path).size() > 100, qPrintable(path));
  }
  QVERIFY(QImage(m_dir.filePath(QStringLiteral("view.png"))).width() > 50);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                           window.exportView(m_dir.filePath(QStringLiteral("view.jpg"))));
}

void TestMainWindow::testScreenshot() {
  const QString exe = QStringLiteral(TSCOPE_BINARY_DIR "/gui/tensorscope");
  if (!QFileInfo::exists(exe))
    QFAIL(qPrintable(QStringLiteral("%1 is not built (build the tensorscope target)").arg(exe)));
  const QString out = m_dir.filePath(QStringLiteral("shot.png"));
  QProcess process;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
  process.setProcessEnvironment(env);
  process.start(exe,
                {m_scoped, QStringLiteral("--screenshot"), out, QStringLiteral("--window-size"),
                 QStringLiteral("900x600"), QStringLiteral("--side-by-side")});
  QVERIFY(process.waitForFinished(60000));
  QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
  QVERIFY(QString::fromUtf8(process.readAllStandardOutput()).contains(QStringLiteral("shot.png")));
  const QImage image(out);
  QCOMPARE(image.size(), QSize(900, 600));
  // Something is drawn: the image is not one colour.
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 7)
    for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
  QVERIFY(colours.size() > 10);

  // A bad file: a clear message and a non-zero exit, no hang.
  process.start(exe,
                {m_dir.filePath(QStringLiteral("nope.tsg")), QStringLiteral("--screenshot"), out});
  QVERIFY(process.waitForFinished(60000));
  QCOMPARE(process.exitCode(), 1);
  QVERIFY(QString::fromUtf8(process.readAllStandardError()).contains(QStringLiteral("nope.tsg")));
}

TSCOPE_GUI_TEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"

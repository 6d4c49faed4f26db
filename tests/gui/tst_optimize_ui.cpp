// Graph > Optimize... (gui/app/optimize_ui.h) and File > Save As: an ONNX model opened without an
// optimized graph gets one on a worker (the Optimized tab, the rewrite log, the title marked
// modified); the dialog refuses an unknown tag and keeps the document; a cancelled run changes
// nothing; Save As writes a .tsg that loads back with both graphs and the log, and the window
// then shows that file.
#include "engine/io/tsg.h"
#include "gui/app/graph_pane.h"
#include "gui/app/history/rewrite_history_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/optimize_ui.h"
#include "gui_test_main.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>

using namespace tscope;
using gui::MainWindow;
using gui::OptimizeUi;

namespace {

const QString kModel = QStringLiteral(TSCOPE_TEST_DATA_DIR "/onnx/models/mlp.onnx");
constexpr int kTimeout = 30000;

bool waitLoaded(MainWindow& window, const QString& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  window.openFile(path);
  if (!loaded.wait(kTimeout) && loaded.isEmpty()) return false;
  return QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

}  // namespace

class TestOptimizeUi : public QObject {
  Q_OBJECT

 private slots:
  void init() { QSettings().clear(); }

  void menuAndActions() {
    MainWindow window;
    QAction* optimize = window.action("actionOptimize");
    QVERIFY(optimize);
    QVERIFY(!optimize->isEnabled());  // nothing open
    QVERIFY(window.menu("menuGraph")->actions().contains(optimize));
    QVERIFY(window.action("actionSaveAs") && !window.action("actionSaveAs")->isEnabled());
    QVERIFY(waitLoaded(window, kModel));
    QVERIFY(optimize->isEnabled());
    QVERIFY(window.action("actionSaveAs")->isEnabled());
  }

  void optimizesAnOnnxModelInTheWindow() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, kModel));
    QVERIFY(!window.document()->optimized);
    QCOMPARE(window.tabTitles(), QStringList{"Original"});
    const auto before = window.document();
    QSignalSpy done(window.optimizeUi(), &OptimizeUi::finished);
    QVERIFY(window.optimizeUi()->optimize("fast_run"));
    QVERIFY(window.optimizeUi()->isRunning());
    QVERIFY(!window.action("actionOptimize")->isEnabled());
    QVERIFY(done.wait(kTimeout));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(done.last().at(1).toString()));
    QVERIFY(done.last().at(1).toString().contains("rewrites"));
    QVERIFY(window.document() != before);
    QVERIFY(window.document()->optimized);
    QVERIFY(window.document()->optimizedModel);
    QVERIFY(!window.document()->rewrites.empty());
    QCOMPARE(window.document()->original, before->original);  // the original is not changed
    QCOMPARE(window.tabTitles(), (QStringList{"Original", "Optimized"}));
    QCOMPARE(window.tabs()->currentWidget(), static_cast<QWidget*>(window.optimizedPane()));
    QVERIFY(window.isWindowModified());
    QCOMPARE(window.optimizedPane()->model(), window.document()->optimizedModel);
    // The rewriter profile is recorded once, with its query.
    int rewriterProfiles = 0;
    for (const auto& p : window.document()->profiles)
      if (p.value("kind", "") == "rewriter") {
        ++rewriterProfiles;
        QVERIFY(p.contains("query"));
      }
    QCOMPARE(rewriterProfiles, 1);
    QVERIFY(QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout));
    QVERIFY(window.action("actionSideBySide")->isEnabled());

    // Again with fusion excluded: a new log replaces the old one.
    QVERIFY(window.optimizeUi()->optimize("fast_run", {}, {"fusion"}));
    QVERIFY(done.wait(kTimeout));
    QVERIFY(done.last().at(0).toBool());
    int profilesNow = 0;
    for (const auto& p : window.document()->profiles)
      if (p.value("kind", "") == "rewriter") ++profilesNow;
    QCOMPARE(profilesNow, 1);
  }

  void theDialogRefusesAnUnknownTag() {
    MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, kModel));
    QDialog* dialog = window.optimizeUi()->dialog();
    window.action("actionOptimize")->trigger();
    QVERIFY(dialog->isVisible());
    dialog->findChild<QLineEdit*>("exclude")->setText("fusion, no_such_rewrite");
    QSignalSpy done(window.optimizeUi(), &OptimizeUi::finished);
    dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
    QVERIFY(dialog->isVisible());  // kept open with the reason
    auto* error = dialog->findChild<QLabel*>("error");
    QVERIFY(error->isVisibleTo(dialog));
    QVERIFY2(error->text().contains("no_such_rewrite"), qPrintable(error->text()));
    QVERIFY(!window.optimizeUi()->isRunning());
    QVERIFY(!window.document()->optimized);
    // Fixed, it runs.
    dialog->findChild<QLineEdit*>("exclude")->setText("fusion");
    dialog->findChild<QComboBox*>("mode")->setCurrentText("fast_compile");
    dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
    QVERIFY(!dialog->isVisible());
    QVERIFY(done.wait(kTimeout));
    QVERIFY(done.last().at(0).toBool());
    QVERIFY(window.document()->optimized);
    // A bad mode through the API: refused with a message, nothing changes.
    const auto now = window.document();
    QVERIFY(!window.optimizeUi()->optimize("turbo"));
    QCOMPARE(window.document(), now);
    QVERIFY(window.errorDialog());
    QVERIFY2(window.errorDialog()->informativeText().contains("turbo"),
             qPrintable(window.errorDialog()->informativeText()));
  }

  void cancelledRunChangesNothing() {
    MainWindow window;
    QVERIFY(waitLoaded(window, kModel));
    const auto before = window.document();
    QSignalSpy done(window.optimizeUi(), &OptimizeUi::finished);
    QVERIFY(window.optimizeUi()->optimize("fast_run"));
    window.optimizeUi()->cancel();
    QCOMPARE(done.count(), 1);
    QVERIFY(!done.last().at(0).toBool());
    QVERIFY(!window.optimizeUi()->isRunning());
    QVERIFY(window.action("actionOptimize")->isEnabled());
    QTest::qWait(500);  // the worker's late result is dropped
    QVERIFY(QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout));
    QCOMPARE(window.document(), before);
    QCOMPARE(done.count(), 1);
  }

  void saveAsWritesATsgAndShowsIt() {
    QTemporaryDir dir;
    MainWindow window;
    QVERIFY(waitLoaded(window, kModel));
    QSignalSpy done(window.optimizeUi(), &OptimizeUi::finished);
    QVERIFY(window.optimizeUi()->optimize("fast_run"));
    QVERIFY(done.wait(kTimeout));
    const std::size_t rewrites = window.document()->rewrites.size();
    const QString path = dir.filePath("mlp.tsg");
    QSignalSpy saved(&window, &MainWindow::saveFinished);
    window.saveDocumentAs(path);
    QVERIFY(saved.wait(kTimeout));
    QVERIFY2(saved.last().at(1).toBool(), qPrintable(saved.last().at(2).toString()));
    QCOMPARE(window.document()->path, path);
    QCOMPARE(window.document()->info.format, std::string("tsg"));
    QVERIFY(!window.isWindowModified());
    const engine::io::TsgDocument back = engine::io::loadTsg(path.toStdString());
    QVERIFY(back.optimized);
    QCOMPARE(back.rewrites.size(), rewrites);
    QCOMPARE(back.original->nodeCount(), window.document()->original->nodeCount());
    QCOMPARE(back.optimized->nodeCount(), window.document()->optimized->nodeCount());
    // It opens as any .tsg, with the Optimized tab.
    MainWindow again;
    QVERIFY(waitLoaded(again, path));
    QCOMPARE(again.tabTitles(), (QStringList{"Original", "Optimized"}));
    // A path that cannot be written: an error, the document stays.
    window.saveDocumentAs(dir.filePath("no/such/dir/x.tsg"));
    QVERIFY(saved.wait(kTimeout));
    QVERIFY(!saved.last().at(1).toBool());
    QCOMPARE(window.document()->path, path);
    QVERIFY(window.errorDialog());
  }
};

TSCOPE_GUI_TEST_MAIN(TestOptimizeUi)
#include "tst_optimize_ui.moc"

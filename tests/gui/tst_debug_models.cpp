// The debugger docks' models (gui/app/debug/debug_models.h), each under QAbstractItemModelTester
// while the controller runs: breakpoints (checkbox enabling, hits, where they landed), the call
// stack of a pause inside an OpFromGraph, the watch list with its history across pauses and runs
// (and the sparkline painting it), the NanGuard alerts with their columns.
#include "debug_test_support.h"
#include "gui/app/debug/debug_models.h"
#include "gui/app/document_loader.h"
#include "gui_test_main.h"

#include <QAbstractItemModelTester>
#include <QImage>
#include <QPainter>
#include <QSettings>
#include <QStandardPaths>
#include <QStyleOptionViewItem>
#include <QTemporaryDir>

using namespace tscope;
using engine::debug::SessionPhase;
using gui::DebugController;

namespace {
constexpr int kTimeout = 120000;
bool settle(DebugController& c) {
  return QTest::qWaitFor([&] { return !c.isBusy(); }, kTimeout);
}
std::shared_ptr<const gui::Document> load(const QString& path) {
  return gui::DocumentLoader::loadNow(path);
}
}  // namespace

class TestDebugModels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_nan = m_dir.filePath("nan_chain.tsg");
    m_ofg = m_dir.filePath("ofg.tsg");
    test::writeNanChain(m_nan);
    test::writeOfg(m_ofg);
  }
  void init() { QSettings().clear(); }

  void breakpointModel() {
    DebugController c;
    gui::BreakpointModel model(&c);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    c.setDocument(load(m_nan));
    QCOMPARE(model.rowCount(), 0);
    const std::int64_t mul = test::nodeIdOf(*c.document()->original, "Elemwise{mul}");
    c.addBreakpoint(engine::debug::parseBreakSpec("node:" + std::to_string(mul)));
    c.addBreakpoint(engine::debug::parseBreakSpec("var:nope"));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.data(model.index(0, gui::BreakpointModel::Spec)).toString(),
             QStringLiteral("node:%1").arg(mul));
    QCOMPARE(model.data(model.index(0, 0), Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QVERIFY(
        model.data(model.index(0, gui::BreakpointModel::Where)).toString().contains("next run"));
    c.run();
    QVERIFY(settle(c));
    QCOMPARE(model.data(model.index(0, gui::BreakpointModel::Hits)).toInt(), 1);
    QCOMPARE(model.data(model.index(0, gui::BreakpointModel::Where)).toString(),
             QStringLiteral("nodes %1").arg(mul));
    // The unknown variable is refused by the session, and the row says why.
    QVERIFY(model.data(model.index(1, gui::BreakpointModel::Where)).toString().contains("not set"));
    // The checkbox disables it.
    QVERIFY(model.setData(model.index(0, 0), Qt::Unchecked, Qt::CheckStateRole));
    QVERIFY(!c.breakpoints()[0].spec.enabled);
    QVERIFY(model.flags(model.index(0, 0)) & Qt::ItemIsUserCheckable);
    QVERIFY(!(model.flags(model.index(0, 1)) & Qt::ItemIsUserCheckable));
    c.removeBreakpoint(1);
    QCOMPARE(model.rowCount(), 1);
    QVERIFY(settle(c));
  }

  void callStackModel() {
    DebugController c;
    gui::CallStackModel model(&c);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    c.setDocument(load(m_ofg));
    c.stepInto();
    QVERIFY(settle(c));
    QCOMPARE(model.rowCount(), 2);
    // Innermost first.
    QCOMPARE(model.frameOf(0), std::size_t(1));
    QVERIFY(model.data(model.index(0, gui::CallStackModel::Frame)).toString().contains("inner"));
    QCOMPARE(model.data(model.index(1, gui::CallStackModel::Frame)).toString(),
             QStringLiteral("outer graph"));
    QVERIFY(
        model.data(model.index(0, gui::CallStackModel::Next)).toString().contains("Elemwise{exp}"));
    c.run();
    QVERIFY(settle(c));
    QCOMPARE(c.snapshot()->state.phase, SessionPhase::Finished);
  }

  void watchModelKeepsHistory() {
    DebugController c;
    gui::WatchModel model(&c);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    c.setDocument(load(m_nan));
    model.addWatch("b");
    model.addWatch("b");  // once
    model.addWatch("h");
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.data(model.index(0, gui::WatchModel::Stats)).toString(),
             QStringLiteral("not computed"));
    c.addBreakpoint(engine::debug::parseBreakSpec("var:b"));
    c.run();
    QVERIFY(settle(c));
    QVERIFY(model.data(model.index(0, gui::WatchModel::Stats)).toString().contains("float32"));
    QCOMPARE(model.data(model.index(0, gui::WatchModel::NonFinite)).toString(),
             QStringLiteral("1 NaN, 0 +Inf, 0 -Inf"));
    QCOMPARE(model.history(0).size(), 1);
    c.setValue("h", engine::Tensor::full(engine::DType::Float32, {2, 3}, 1.0));
    c.recompute();
    QVERIFY(settle(c));
    // The same pause: the point is replaced (b = 1 * 2 + 1 = 3).
    QCOMPARE(model.history(0).size(), 1);
    QCOMPARE(model.history(0).back(), 3.0);
    c.run();  // finishes: a new pause of the same run
    QVERIFY(settle(c));
    c.run();  // a new run
    QVERIFY(settle(c));
    QCOMPARE(model.history(0).size(), 3);
    QCOMPARE(model.data(model.index(0, gui::WatchModel::History), Qt::UserRole).toList().size(), 3);
    // The sparkline draws something.
    QImage image(140, 24, QImage::Format_ARGB32);
    image.fill(Qt::white);
    {
      QPainter p(&image);
      QStyleOptionViewItem option;
      option.rect = image.rect();
      gui::SparklineDelegate delegate;
      delegate.paint(&p, option, model.index(0, gui::WatchModel::History));
    }
    int coloured = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x)
        if (image.pixelColor(x, y).blue() > 150 && image.pixelColor(x, y).red() < 100) ++coloured;
    QVERIFY(coloured > 10);
    model.removeWatch(1);
    QCOMPARE(model.watches(), QStringList{"b"});
  }

  void alertsModel() {
    DebugController c;
    gui::AlertsModel model(&c);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    c.setDocument(load(m_nan));
    c.setNanGuardOptions({}, true);
    c.setNanGuardEnabled(true);
    c.run();
    QVERIFY(settle(c));
    QVERIFY(model.rowCount() >= 1);
    QCOMPARE(model.data(model.index(0, gui::AlertsModel::Check)).toString(), QStringLiteral("nan"));
    QVERIFY(
        model.data(model.index(0, gui::AlertsModel::Node)).toString().contains("Elemwise{log}"));
    QCOMPARE(model.data(model.index(0, gui::AlertsModel::FirstBad)).toString(),
             QStringLiteral("[1, 1] = nan"));
    QVERIFY(model.data(model.index(0, gui::AlertsModel::Counts)).toString().startsWith("1 NaN"));
    QVERIFY(model.data(model.index(0, gui::AlertsModel::Creator)).toString().contains("log"));
    QVERIFY(model.report(0));
    QVERIFY(!model.report(model.rowCount()));
    c.setDocument(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

 private:
  QTemporaryDir m_dir;
  QString m_nan, m_ofg;
};

TSCOPE_GUI_TEST_MAIN(TestDebugModels)
#include "tst_debug_models.moc"

// The window's facts about a .tsg file's tensors (issue 26): opening a file logs its format
// version, the tensor bytes it stores, the bytes saved by sharing and the tensors shared between
// the graphs, the same figures `tensorscope info` prints; an ONNX file logs none.
#include "engine/io/tsg.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/session/optimize_graph.h"
#include "gui/app/main_window.h"
#include "gui_test_main.h"

#include <QLocale>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>

using namespace tscope;

namespace {

constexpr int kTimeout = 20000;

bool waitLoaded(gui::MainWindow& window, const QString& path) {
  QSignalSpy loaded(&window, &gui::MainWindow::documentLoaded);
  window.openFile(path);
  if (!loaded.wait(kTimeout) && loaded.isEmpty()) return false;
  return QTest::qWaitFor([&] { return !window.isBusy(); }, kTimeout);
}

}  // namespace

class TestTensorFacts : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testOpenedFileLogsItsTensors() {
    using namespace tscope::engine;
    // tanh(x * W + b), W (16 KiB) and b shared; the optimized graph keeps both.
    const std::int64_t n = 64;
    auto x = Variable::create(TensorType(DType::Float32, {n, n}), "x");
    auto W = SharedVariable::create(Tensor::full(DType::Float32, {n, n}, 0.5), "W");
    auto b = SharedVariable::create(Tensor::full(DType::Float32, {n, n}, -1.0), "b");
    VarPtr y =
        elemwise(ScalarOp::Tanh, {elemwise(ScalarOp::Add, {elemwise(ScalarOp::Mul, {x, W}), b})});
    io::TsgDocument doc;
    doc.original =
        std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, W, b}, std::vector<VarPtr>{y});
    session::optimizeDocument(doc, RewriteQuery::forMode("fast_run"));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("shared.tsg"));
    io::saveTsg(doc, path.toStdString());
    const io::TsgTensorStats stats = io::loadTsg(path.toStdString()).tensorStats;
    // W and b are in both graphs, stored once (the optimizer may add constants of its own).
    QVERIFY(stats.sharedBetweenGraphs >= 2);
    QVERIFY(stats.sharedBytes >= 2 * static_cast<std::uint64_t>(n * n * 4));

    gui::MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, path));
    QCOMPARE(window.document()->info.tensors.sharedBytes, stats.sharedBytes);
    const QString log = window.logView()->toPlainText();
    const QLocale locale;
    const QString expected =
        QStringLiteral(
            "Tensors (format version 2): %1 stored, %2; %3 saved by sharing (%4 used "
            "more than once, %5 shared between the graphs)")
            .arg(stats.tensors)
            .arg(locale.formattedDataSize(static_cast<qint64>(stats.tensorBytes)))
            .arg(locale.formattedDataSize(static_cast<qint64>(stats.sharedBytes)))
            .arg(stats.sharedTensors)
            .arg(stats.sharedBetweenGraphs);
    QVERIFY2(log.contains(expected), qPrintable(log));
  }

  void testOnnxFileLogsNoTensorFacts() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("built without ONNX support");
#else
    gui::MainWindow window;
    window.show();
    QVERIFY(waitLoaded(window, QStringLiteral(TSCOPE_TEST_DATA_DIR "/onnx/models/lenet5.onnx")));
    QVERIFY(!window.logView()->toPlainText().contains(QStringLiteral("saved by sharing")));
#endif
  }
};

TSCOPE_GUI_TEST_MAIN(TestTensorFacts)
#include "tst_tensor_facts.moc"

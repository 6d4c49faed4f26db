// examples/breakpoint: the program pauses once, at the corrupted step, and the graph it saves
// pauses at BreakPoint{loss_spike} with the monitored loss and W1 when a VM with breakOps runs it
// on its test values (the corrupted batch); with breakOps off it runs through.
#include "engine/compile/function.h"
#include "engine/io/tsg.h"
#include "engine/ops/debug/breakpoint.h"
#include "test_main.h"

#include <QProcess>
#include <QTemporaryDir>

using namespace tscope::engine;

namespace {
CompileOptions withMode(Mode mode) {
  CompileOptions o;
  o.mode = mode;
  return o;
}
}  // namespace

class TestBreakpointExample : public QObject {
  Q_OBJECT

 private slots:
  void testPausesAtTheSpike() {
    const QString exe = QString(TSCOPE_BINARY_DIR) + "/examples/example_breakpoint";
    if (!QFile::exists(exe)) QSKIP("example_breakpoint is not built");
    QTemporaryDir dir;
    const QString tsg = dir.filePath("breakpoint.tsg");
    QProcess p;
    p.start(exe, {tsg, dir.filePath("expected")});
    QVERIFY(p.waitForFinished(300000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(p.exitCode() == 0, qPrintable(out + p.readAllStandardError()));
    QCOMPARE(out.count("paused at BreakPoint{loss_spike}"), 1);
    QVERIFY(out.contains("step 12: paused at BreakPoint{loss_spike}"));

    const io::TsgDocument doc = io::loadTsg(tsg.toStdString());
    const FunctionGraph& g = *doc.original;
    const Apply* bp = nullptr;
    for (const Apply* a : g.nodes())
      if (a->op().name() == "BreakPoint") bp = a;
    QVERIFY(bp != nullptr);
    QCOMPARE(QString::fromStdString(static_cast<const BreakPointOp&>(bp->op()).label()),
             QString("loss_spike"));
    // Run the saved graph on its test values (the corrupted batch) with breakOps on.
    std::vector<VarPtr> inputs;
    std::vector<Tensor> args;
    for (const VarPtr& in : g.inputs())
      if (in->kind() == Variable::Kind::Regular) {
        inputs.push_back(in);
        QVERIFY(in->testValue().has_value());
        args.push_back(*in->testValue());
      }
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      Function f = compile(inputs, {g.outputs()[0]}, {}, withMode(mode));
      f.vm().setBreakOps(true);
      Execution e = f.begin(args);
      QCOMPARE(e.run(), VM::Status::Paused);
      QCOMPARE(f.vm().pauseReason(), VM::PauseReason::BreakPointOp);
      const Apply* paused = f.vm().breakOpNode();
      QVERIFY(paused != nullptr);
      QCOMPARE(QString::fromStdString(static_cast<const BreakPointOp&>(paused->op()).label()),
               QString("loss_spike"));
      const Tensor* loss = f.vm().value(paused->outputRef(0));
      const Tensor* w1 = f.vm().value(paused->outputRef(1));
      QVERIFY(loss && w1);
      QVERIFY(loss->item() > 2.5);
      QCOMPARE(w1->shape(), (Shape{20, 16}));
      const double seen = loss->item();
      QCOMPARE(e.run(), VM::Status::Finished);
      QVERIFY(std::abs(e.finish()[0].item() - seen) <= 1e-5 * seen);
      f.vm().setBreakOps(false);
      QCOMPARE(f.begin(args).run(), VM::Status::Finished);
    }
  }
};

TSCOPE_TEST_MAIN(TestBreakpointExample)
#include "tst_breakpoint_example.moc"

// examples/nan_hunt: the example catches both failures, and each .tsg it saves, run again with
// NanGuard through runGraph (what `tensorscope run FILE --nan-guard` does), reproduces the event
// stored in the file.
#include "engine/debug/nan_guard.h"
#include "engine/io/tsg.h"
#include "engine/session/run_graph.h"
#include "test_main.h"

#include <QProcess>
#include <QTemporaryDir>

using namespace tscope::engine;

class TestNanHunt : public QObject {
  Q_OBJECT
 private slots:
  void savedFailuresReproduceTheirEvents() {
    const QString exe = QString(TSCOPE_BINARY_DIR) + "/examples/example_nan_hunt";
    if (!QFile::exists(exe)) QSKIP("example_nan_hunt is not built");
    QTemporaryDir dir;
    QProcess p;
    p.start(exe, {dir.path()});
    QVERIFY(p.waitForFinished(120000));
    const QString output = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(p.exitCode() == 0, qPrintable(output + p.readAllStandardError()));
    QVERIFY2(output.contains("stopped by NanGuard"), qPrintable(output));
    QVERIFY2(output.contains("W1 unchanged by the stopped step: yes"), qPrintable(output));
    QVERIFY2(output.contains("CREATED"), qPrintable(output));
    QVERIFY2(output.contains("Elemwise{log} at layer3/fc"), qPrintable(output));
    for (const char* name : {"mlp_lr_explodes.tsg", "log_negative.tsg"}) {
      const std::string path = dir.filePath(name).toStdString();
      io::TsgDocument doc = io::loadTsg(path);
      QVERIFY2(doc.producer.contains("nan_report"), name);
      const nlohmann::json& saved = doc.producer["nan_report"];
      session::RunInputs run;
      run.mode = Mode::FastRun;
      run.nanGuard = debug::NanGuardOptions{};
      try {
        session::runGraph(*doc.original, run);
        QFAIL(qPrintable(QString("the replay of %1 ran clean").arg(name)));
      } catch (const debug::NanGuardError& e) {
        const nlohmann::json again = e.report().toJson();
        QCOMPARE(again["check"], saved["check"]);
        QCOMPARE(again["node"]["op"], saved["node"]["op"]);
        QCOMPARE(again["first_index"], saved["first_index"]);
        QCOMPARE(again["counts"], saved["counts"]);
        QCOMPARE(again["creator"]["op"], saved["creator"]["op"]);
        QCOMPARE(again["creator"]["scope"], saved["creator"]["scope"]);
      }
    }
  }
};

TSCOPE_TEST_MAIN(TestNanHunt)
#include "tst_nan_hunt.moc"

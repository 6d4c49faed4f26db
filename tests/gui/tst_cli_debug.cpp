// The debugger from the command line: `tensorscope run --nan-guard/--break` (the report, the
// pause, the exit codes of Note [Debugger exit codes], --report-json, --save-failure and its
// replay) and `tensorscope debug` driven by a script of commands on standard input, as a test or
// a shell script would drive it; every bad command gets one error line and the session goes on.

#include "cli_test_support.h"
#include "engine/io/tsg.h"
#include "engine/ops/basic.h"
#include "engine/ops/reduce/reduce.h"
#include "gui/cli/cli.h"
#include "test_main.h"

#include <QProcess>
#include <QTemporaryDir>

#include <fstream>
#include <nlohmann/json.hpp>

using namespace tscope;
using namespace tscope::engine;

namespace {

using test::cli;

// x: float32 (2, 3) with a negative element at [1, 1]; h = log(x) (NaN there), y = sum(h * 2).
struct NanGraph {
  VarPtr x, h, y;
  std::int64_t logNode = -1;
};

NanGraph buildNan() {
  NanGraph g;
  g.x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  g.x->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3}, {0.5, 1, 2, 3, -0.375, 4}));
  g.h = log(g.x);
  g.h->setName("h");
  g.y = sum(g.h * 2.0);
  g.y->setName("y");
  return g;
}

std::string saveGraph(const QTemporaryDir& dir, NanGraph& g, const char* name = "nan.tsg") {
  io::TsgDocument doc;
  doc.original =
      std::make_unique<FunctionGraph>(std::vector<VarPtr>{g.x}, std::vector<VarPtr>{g.y});
  for (const Apply* a : doc.original->toposort())
    if (a->op().str() == "Elemwise{log}") g.logNode = a->id();
  const std::string path = dir.filePath(name).toStdString();
  io::saveTsg(doc, path);
  return path;
}

struct Proc {
  int code = -1;
  QString out, err;
};

Proc runExe(const QStringList& args, const QByteArray& stdinText = {}) {
  QProcess p;
  p.start(QString(TSCOPE_BINARY_DIR) + "/gui/tensorscope", args);
  if (!p.waitForStarted(30000)) return {};
  if (!stdinText.isEmpty()) p.write(stdinText);
  p.closeWriteChannel();
  if (!p.waitForFinished(120000)) {
    p.kill();
    p.waitForFinished();
    return {};
  }
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class TestCliDebug : public QObject {
  Q_OBJECT
 private slots:
  void nanGuardReportsTheCreator() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    const std::string json = dir.filePath("report.json").toStdString();
    const auto r = cli({"run", file, "--nan-guard", "--report-json", json, "--output-dir",
                        dir.filePath("out").toStdString()});
    QCOMPARE(r.code, int(gui::kExitNanEvent));
    const QString out = QString::fromStdString(r.out);
    QVERIFY2(out.contains("Elemwise{log}"), r.out.c_str());
    QVERIFY2(out.contains("creator"), r.out.c_str());
    QVERIFY2(out.contains("-0.375"), r.out.c_str());
    std::ifstream in(json);
    QVERIFY(in.good());
    const auto j = nlohmann::json::parse(in);
    QCOMPARE(j.at("outcome").get<std::string>(), std::string("nan"));
    const auto& event = j.at("events").at(0);
    QCOMPARE(event.at("check").get<std::string>(), std::string("nan"));
    QCOMPARE(event.at("node").at("id").get<std::int64_t>(), g.logNode);
    // Nothing was written for a run that NanGuard stopped.
    QVERIFY(!QFile::exists(dir.filePath("out/output_0.npy")));
  }

  void cleanRunsExitZero() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    g.x->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3}, {0.5, 1, 2, 3, 0.375, 4}));
    const std::string file = saveGraph(dir, g);
    const auto r =
        cli({"run", file, "--nan-guard", "--output-dir", dir.filePath("out").toStdString()});
    QCOMPARE(r.code, int(gui::kExitOk));
    QVERIFY(QFile::exists(dir.filePath("out/output_0.npy")));
  }

  void warnCollectsAndWritesOutputs() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    const auto r = cli({"run", file, "--nan-guard", "--nan-action", "warn", "--output-dir",
                        dir.filePath("out").toStdString()});
    QCOMPARE(r.code, int(gui::kExitNanEvent));
    QVERIFY(QString::fromStdString(r.out).contains("NanGuard event"));
    QVERIFY(QFile::exists(dir.filePath("out/output_0.npy")));
  }

  void saveFailureReplays() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    const std::string failure = dir.filePath("failure.tsg").toStdString();
    const auto first = cli({"run", file, "--nan-guard", "--save-failure", failure});
    QCOMPARE(first.code, int(gui::kExitNanEvent));
    QVERIFY(QFile::exists(QString::fromStdString(failure)));
    const auto replay = cli({"run", failure, "--nan-guard"});
    QCOMPARE(replay.code, int(gui::kExitNanEvent));
    QVERIFY2(QString::fromStdString(replay.out).contains("Elemwise{log}"), replay.out.c_str());
  }

  void breakPauses() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    const auto r = cli({"run", file, "--break", "node:" + std::to_string(g.logNode)});
    QCOMPARE(r.code, int(gui::kExitBreakpoint));
    const QString out = QString::fromStdString(r.out);
    QVERIFY2(out.contains("breakpoint 1"), r.out.c_str());
    QVERIFY2(out.contains("#0 <graph>"), r.out.c_str());
    // A condition that does not hold runs to the end.
    const auto clean = cli({"run", file, "--break", "op:Elemwise{log}@max>100", "--output-dir",
                            dir.filePath("out").toStdString()});
    QCOMPARE(clean.code, int(gui::kExitOk));
    const auto nan = cli({"run", file, "--break", "op:Elemwise{log}@nan"});
    QCOMPARE(nan.code, int(gui::kExitBreakpoint));
  }

  void badFlagsAreUsageErrors() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"run", file, "--break", "nod:3"},
          std::vector<std::string>{"run", file, "--break", "node:999999"},
          std::vector<std::string>{"run", file, "--nan-guard", "--nan-checks", "nan,blue"},
          std::vector<std::string>{"run", file, "--nan-guard", "--big-threshold", "-4"},
          std::vector<std::string>{"run", file, "--nan-guard", "--nan-action", "explode"},
          std::vector<std::string>{"run", file, "--nan-guard", "--allow", "attention"},
          std::vector<std::string>{"debug", file, "--report-json", "r.json"},
          std::vector<std::string>{"debug", file, "--break", "var:"}}) {
      const auto r = cli(args);
      QVERIFY2(r.code == int(gui::kExitUsage) || r.code == int(gui::kExitFailure), r.err.c_str());
      QCOMPARE(QString::fromStdString(r.err).count('\n'), 1);
      QVERIFY(r.out.find("output 0") == std::string::npos);
    }
  }

  // `tensorscope debug` reading a script: break, run, print, set, recompute, continue.
  void debugScript() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    const QByteArray script =
        "help\n"
        "break op:Elemwise{log}\n"
        "info breakpoints\n"
        "run\n"
        "where\n"
        "print h\n"
        "print h[1, :]\n"
        "frobnicate\n"
        "print nosuchvar\n"
        "set h = zeros\n"
        "recompute\n"
        "undo\n"
        "set h = nan@0,0\n"
        "set h = nan@9,9\n"
        "set h = ones\n"
        "until 999\n"
        "list\n"
        "next\n"
        "set h = scale 2\n"
        "recompute\n"
        "continue\n"
        "quit\n";
    const Proc p = runExe({"debug", QString::fromStdString(file)}, script);
    QVERIFY2(p.code >= 0, "tensorscope debug did not finish");
    if (qEnvironmentVariableIsSet("TSCOPE_TEST_DUMP")) qInfo().noquote() << p.out;
    QVERIFY2(p.out.contains("breakpoint 1"), qPrintable(p.out));
    QVERIFY2(p.out.contains("unknown command 'frobnicate'"), qPrintable(p.out));
    QVERIFY2(p.out.contains("error:"), qPrintable(p.out));
    QVERIFY2(p.out.contains("recomputed 0 node(s)"), qPrintable(p.out));  // nothing read h yet
    // After the product ran, an edit of h re-runs exactly that node.
    QVERIFY2(p.out.contains("recomputed 1 node(s)"), qPrintable(p.out));
    QVERIFY2(p.out.contains("restored h"), qPrintable(p.out));
    QVERIFY2(p.out.contains("=> "), qPrintable(p.out));
    QVERIFY2(p.out.contains("[finished"), qPrintable(p.out));
    QCOMPARE(p.code, int(gui::kExitOk));
  }

  void debugWithNanGuardPauses() {
    QTemporaryDir dir;
    NanGraph g = buildNan();
    const std::string file = saveGraph(dir, g);
    const Proc p =
        runExe({"debug", QString::fromStdString(file), "--nan-guard"}, "run\nprint h\nquit\n");
    QVERIFY2(p.out.contains("NanGuard"), qPrintable(p.out));
    QVERIFY2(p.out.contains("Elemwise{log}"), qPrintable(p.out));
    QCOMPARE(p.code, int(gui::kExitNanEvent));
  }
};

TSCOPE_TEST_MAIN(TestCliDebug)
#include "tst_cli_debug.moc"

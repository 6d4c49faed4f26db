// The command-line front end: info, print and validate on the fixtures, and clean refusals.

#include "cli_test_support.h"
#include "engine/io/tsg.h"
#include "engine/session/optimize_graph.h"
#include "gui/cli/cli.h"
#include "test_main.h"

#include <QProcess>
#include <QTemporaryDir>

#include <fstream>

using namespace tscope;

namespace {

const std::string kExample = std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/mlp_forward.tsg";

using Result = test::CliResult;
using test::cli;

std::string writeTemp(const QTemporaryDir& dir, const char* name, const std::string& text) {
  std::string path = dir.filePath(name).toStdString();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void testInfo() {
    Result r = cli({"info", kExample});
    QCOMPARE(r.code, 0);
    QVERIFY(r.err.empty());
    QString out = QString::fromStdString(r.out);
    QVERIFY(out.contains("7 applies"));
    QVERIFY(out.contains("x [id 0] : float32 (?, 64)"));
    QVERIFY(out.contains("(shared)"));
    QVERIFY(out.contains("2  Dot"));
    QVERIFY(out.contains("optimized graph: none"));
  }

  void testInfoJson() {
    Result r = cli({"info", kExample, "--json"});
    QCOMPARE(r.code, 0);
    auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["original"]["applies"].get<int>(), 7);
    QCOMPARE(j["original"]["ops"]["Dot"].get<int>(), 2);
    QCOMPARE(j["original"]["inputs"].size(), std::size_t{5});
    QCOMPARE(j["original"]["outputs"][0]["name"], nlohmann::json("logits"));
    QVERIFY(!j.contains("optimized"));
  }

  // The file's tensor bytes and sharing (issue 26): none shared in a version-1 file; optimized and
  // saved again as version 2, the weights both graphs hold are stored once.
  void testInfoTensorStats() {
    Result r = cli({"info", kExample, "--json"});
    QCOMPARE(r.code, 0);
    auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["tensors"]["format_version"].get<int>(), 1);
    QCOMPARE(j["tensors"]["shared_bytes"].get<std::uint64_t>(), std::uint64_t{0});
    const std::uint64_t v1Bytes = j["tensors"]["tensor_bytes"].get<std::uint64_t>();
    QVERIFY(v1Bytes > 0);

    engine::io::TsgDocument doc = engine::io::loadTsg(kExample);
    engine::session::optimizeDocument(doc, engine::RewriteQuery::forMode("fast_run"));
    QTemporaryDir dir;
    const std::string path = dir.filePath("optimized.tsg").toStdString();
    engine::io::saveTsg(doc, path);
    const engine::io::TsgTensorStats stats = engine::io::loadTsg(path).tensorStats;
    QVERIFY(stats.sharedBetweenGraphs > 0);
    r = cli({"info", path, "--json"});
    QCOMPARE(r.code, 0);
    j = nlohmann::json::parse(r.out);
    QCOMPARE(j["tensors"], engine::io::tensorStatsToJson(stats));
    QCOMPARE(j["tensors"]["format_version"].get<int>(), 2);
    // The weights of the original graph are in the file once, used by both graphs.
    QVERIFY(j["tensors"]["tensor_bytes"].get<std::uint64_t>() <= v1Bytes);
    QVERIFY(j["tensors"]["shared_bytes"].get<std::uint64_t>() > 0);
    r = cli({"info", path});
    QCOMPARE(r.code, 0);
    const QString out = QString::fromStdString(r.out);
    QVERIFY2(out.contains(QString("format version 2; tensors: %1 stored").arg(stats.tensors)),
             r.out.c_str());
    QVERIFY2(out.contains(QString("%1 shared between the graphs").arg(stats.sharedBetweenGraphs)),
             r.out.c_str());
    QVERIFY2(out.contains("saved by sharing"), r.out.c_str());
  }

  void testPrint() {
    Result r = cli({"print", kExample});
    QCOMPARE(r.code, 0);
    QString out = QString::fromStdString(r.out);
    QStringList lines = out.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.first(), QString("Elemwise{add} [id 13] 'logits' : float32 (?, 10)"));
    QVERIFY(lines.contains(" | | | | |x [id 0] : float32 (?, 64) (input)"));
    // Each node once: the second output refers back to the first tree.
    QVERIFY(out.contains(" | |Elemwise{add} [id 13] 'logits' : float32 (?, 10) (see above)"));
    QCOMPARE(out.count("Dot [id 11]"), 1);
  }

  void testPrintOptimizedMissing() {
    Result r = cli({"print", kExample, "--graph", "optimized"});
    QCOMPARE(r.code, 1);
    QVERIFY(QString::fromStdString(r.err).contains("no optimized graph"));
    r = cli({"print", kExample, "--graph", "sideways"});
    QCOMPARE(r.code, 2);
    QVERIFY(QString::fromStdString(r.err).contains("original or optimized"));
  }

  void testValidate() {
    Result r = cli({"validate", kExample});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromStdString(r.out).contains("valid (7 applies"));
    QVERIFY2(r.err.empty(), r.err.c_str());
  }

  // A file whose ops this build does not know is valid, and validate warns that it cannot run.
  void testValidateWarnsOfOpaqueOps() {
    std::ifstream in(kExample);
    nlohmann::json j = nlohmann::json::parse(in);
    int renamed = 0;
    for (auto& a : j["graphs"]["original"]["applies"])
      if (a["op"] == "Elemwise" && renamed++ < 2) a["op"] = "VendorFusedOp";
    QTemporaryDir dir;
    Result r = cli({"validate", writeTemp(dir, "vendor.tsg", j.dump())});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromStdString(r.out).contains("valid (7 applies"));
    const QString err = QString::fromStdString(r.err);
    QVERIFY2(
        err.startsWith(
            "tensorscope validate: warning: the original graph has ops this build cannot execute"),
        qPrintable(err));
    QVERIFY2(err.contains("VendorFusedOp (2 nodes)"), qPrintable(err));
    QCOMPARE(err.count('\n'), 1);
  }

  void testRefusals_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("content");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("message");
    QTest::newRow("truncated file")
        << "validate"
        << "{\"format\": \"tensorscope-graph\", \"vers" << 1 << "not valid JSON";
    QTest::newRow("wrong format") << "info"
                                  << "{\"format\": \"x\", \"version\": 1, \"graphs\": {}}" << 1
                                  << "/format";
    QTest::newRow("empty file") << "print"
                                << "" << 1 << "not valid JSON";
    QTest::newRow("missing file") << "info"
                                  << "<none>" << 1 << "no such file";
    QTest::newRow("wrong extension") << "info"
                                     << "<png>" << 1 << "expected a .tsg or .onnx file";
  }

  void testRefusals() {
    QFETCH(QString, command);
    QFETCH(QString, content);
    QFETCH(int, code);
    QFETCH(QString, message);
    QTemporaryDir dir;
    std::string path;
    if (content == "<none>")
      path = dir.filePath("missing.tsg").toStdString();
    else if (content == "<png>")
      path = writeTemp(dir, "picture.png", "\x89PNG");
    else
      path = writeTemp(dir, "bad.tsg", content.toStdString());
    Result r = cli({command.toStdString(), path});
    QCOMPARE(r.code, code);
    QVERIFY(r.out.empty());
    QString err = QString::fromStdString(r.err);
    QVERIFY2(err.contains(message), qPrintable(err));
    QVERIFY2(err.startsWith("tensorscope: "), qPrintable(err));
    QCOMPARE(err.count('\n'), 1);  // one line
  }

  void testUsageErrors() {
    Result r = cli({"frobnicate"});
    QCOMPARE(r.code, 2);
    QVERIFY(QString::fromStdString(r.err).contains("unknown command 'frobnicate'"));
    r = cli({"info"});
    QCOMPARE(r.code, 2);
    QVERIFY(QString::fromStdString(r.err).contains("expected one FILE"));
    r = cli({"info", kExample, "--bogus"});
    QCOMPARE(r.code, 2);
    QVERIFY(QString::fromStdString(r.err).contains("bogus"));
    r = cli({"--help"});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromStdString(r.out).contains("validate FILE"));
    r = cli({"print", "--help"});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromStdString(r.out).contains("--graph"));
  }

  // The real executable: exit status and streams.
  void testExecutable() {
    QProcess p;
    p.start(QString(TSCOPE_BINARY_DIR) + "/gui/tensorscope",
            {"validate", QString::fromStdString(kExample)});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("valid"));
    p.start(QString(TSCOPE_BINARY_DIR) + "/gui/tensorscope", {"info", "/nonexistent.tsg"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(p.readAllStandardError().startsWith("tensorscope: /nonexistent.tsg: no such file"));
  }
};

TSCOPE_TEST_MAIN(TestCli)
#include "tst_cli.moc"

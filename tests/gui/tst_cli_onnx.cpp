// Every graph sub-command accepts .onnx models: info (format, opset, warnings, opaque ops),
// print, validate, optimize (to a .tsg), run (modes none and fast_run, against PyTorch's output);
// bad models give a clear error and exit code, never a crash.
#include "cli_test_support.h"
#include "engine/io/npy.h"
#include "engine/io/tsg.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <fstream>

using namespace tscope;
using test::cli;

namespace {

const std::string kModels = TSCOPE_TEST_DATA_DIR "/onnx/models/";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

class TestCliOnnx : public QObject {
  Q_OBJECT

 private slots:
  void info() {
    test::CliResult r = cli({"info", kModels + "lenet5.onnx"});
    QVERIFY2(r.code == gui::kExitOk, r.err.c_str());
    QVERIFY2(contains(r.out, "ONNX model, opset"), r.out.c_str());
    QVERIFY2(contains(r.out, "written by pytorch"), r.out.c_str());
    r = cli({"info", "--json", kModels + "lenet5.onnx"});
    QVERIFY2(r.code == gui::kExitOk, r.err.c_str());
    const nlohmann::json j = nlohmann::json::parse(r.out);
    QCOMPARE(j["format"].get<std::string>(), std::string("onnx"));
    QVERIFY(j["onnx"]["opset"].get<int>() >= 6);
    QVERIFY(j["onnx"]["opaque_ops"].empty());
    QVERIFY(j["original"]["applies"].get<int>() > 5);
  }

  void printAndValidate() {
    test::CliResult r = cli({"print", kModels + "mlp.onnx"});
    QVERIFY2(r.code == gui::kExitOk, r.err.c_str());
    QVERIFY2(contains(r.out, "Gemm") || contains(r.out, "Dot") || contains(r.out, "dot"),
             r.out.c_str());
    r = cli({"validate", kModels + "mlp.onnx"});
    QVERIFY2(r.code == gui::kExitOk, r.err.c_str());
    QVERIFY(contains(r.out, ": valid ("));
  }

  void optimizeWritesATsg() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("lenet.tsg").toStdString();
    test::CliResult r = cli({"optimize", kModels + "lenet5.onnx", "-o", out});
    QVERIFY2(r.code == gui::kExitOk, r.err.c_str());
    engine::io::TsgDocument doc = engine::io::loadTsg(out);
    QVERIFY(doc.optimized);
    QVERIFY(!doc.rewrites.empty());
    QVERIFY(doc.optimized->nodeCount() <= doc.original->nodeCount());
  }

  void runMatchesPyTorch() {
    for (const char* mode : {"none", "fast_run"}) {
      QTemporaryDir dir;
      const std::string outDir = dir.path().toStdString();
      test::CliResult r = cli({"run", kModels + "lenet5.onnx", "--mode", mode, "--input",
                               "image=" + kModels + "lenet5.in0.npy", "--output-dir", outDir});
      if (r.code != gui::kExitOk && contains(r.err, "no input named"))
        QFAIL(("the fixture's input name changed: " + r.err).c_str());
      QVERIFY2(r.code == gui::kExitOk, r.err.c_str());
      const engine::Tensor got = engine::io::loadNpy(outDir + "/output_0.npy");
      const engine::Tensor want = engine::io::loadNpy(kModels + "lenet5.out0.npy");
      QVERIFY2(got.allClose(want, 1e-4, 1e-5), mode);
    }
    test::CliResult bad = cli({"run", kModels + "lenet5.onnx", "--mode", "fastest"});
    QCOMPARE(bad.code, gui::kExitUsage);
  }

  void badModels() {
    QTemporaryDir dir;
    const std::string truncated = dir.filePath("cut.onnx").toStdString();
    {
      std::ifstream in(kModels + "mlp.onnx", std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
    }
    test::CliResult r = cli({"info", truncated});
    QVERIFY(r.code != gui::kExitOk);
    QVERIFY2(contains(r.err, "cut.onnx"), r.err.c_str());
    const std::string notOnnx = dir.filePath("x.onnx").toStdString();
    std::ofstream(notOnnx) << "{\"format\": \"tensorscope-graph\"}";
    r = cli({"validate", notOnnx});
    QVERIFY(r.code != gui::kExitOk);
    QVERIFY2(contains(r.err, "found JSON"), r.err.c_str());
  }
};

TSCOPE_TEST_MAIN(TestCliOnnx)
#include "tst_cli_onnx.moc"

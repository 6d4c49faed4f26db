// `tensorscope export FILE -o OUT.onnx`: writes a model that imports back and computes what the
// graph computes (original or optimized graph, any opset 13..17); refuses a missing or unknown
// output (listing the formats), a bad --graph or --opset, and a graph with an op that has no ONNX
// form (naming it, writing nothing).

#include "cli_test_support.h"
#include "engine/io/run_graph.h"
#include "engine/io/tsg.h"
#include "engine/ops/nn/nn.h"
#include "gui/cli/cli.h"
#include "test_main.h"

#ifdef TSCOPE_HAVE_ONNX
#include "engine/io/onnx/onnx_import.h"
#endif

#include <QTemporaryDir>

#include <filesystem>

using namespace tscope;
using namespace tscope::engine;

namespace {

using Result = test::CliResult;
using test::cli;

std::string example(const char* name) {
  return std::string(TSCOPE_SOURCE_DIR) + "/examples/graphs/" + name;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

}  // namespace

class TestCliExport : public QObject {
  Q_OBJECT

 private slots:
  void init() {
#ifndef TSCOPE_HAVE_ONNX
    QSKIP("this build has no ONNX support");
#endif
  }

  // The original graph and, after `optimize`, the optimized one export; the model computes what
  // the graph does.
  void exportsOriginalAndOptimized() {
#ifdef TSCOPE_HAVE_ONNX
    QTemporaryDir dir;
    const std::string onnx = dir.filePath("mlp.onnx").toStdString();
    Result r = cli({"export", example("mlp_forward.tsg"), "-o", onnx});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(contains(r.out, "wrote " + onnx) && contains(r.out, "opset 17"), r.out.c_str());
    QVERIFY(r.err.empty());

    const std::string optimized = dir.filePath("opt.tsg").toStdString();
    QCOMPARE(cli({"optimize", example("mlp_forward.tsg"), "-o", optimized}).code, 0);
    const std::string onnxOpt = dir.filePath("opt.onnx").toStdString();
    Result o = cli({"export", optimized, "-o", onnxOpt, "--graph", "optimized", "--opset", "13"});
    QVERIFY2(o.code == 0, o.err.c_str());
    QVERIFY2(contains(o.out, "opset 13"), o.out.c_str());

    const io::TsgDocument doc = io::loadTsg(example("mlp_forward.tsg"));
    io::RunInputs inputs;
    inputs.byName["x"] = Tensor::full(DType::Float32, {3, 64}, 0.25);
    const auto want = io::runGraph(*doc.original, inputs).outputs;
    for (const std::string& path : {onnx, onnxOpt}) {
      const io::OnnxImportResult model = io::loadOnnx(path);
      QCOMPARE(model.opset, path == onnx ? 17 : 13);
      const auto got = io::runGraph(*model.document.original, inputs).outputs;
      QCOMPARE(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i)
        QVERIFY2(got[i].allClose(want[i], 1e-5, 1e-6), path.c_str());
    }
#endif
  }

  void refusesBadOptions() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("out.onnx").toStdString();
    Result noOut = cli({"export", example("mlp_forward.tsg")});
    QCOMPARE(noOut.code, int(gui::kExitUsage));
    QVERIFY2(contains(noOut.err, "-o OUT is required") && contains(noOut.err, ".onnx"),
             noOut.err.c_str());

    Result badExt =
        cli({"export", example("mlp_forward.tsg"), "-o", dir.filePath("graph.xyz").toStdString()});
    QCOMPARE(badExt.code, int(gui::kExitUsage));
    QVERIFY2(contains(badExt.err, "unknown extension '.xyz'") &&
                 contains(badExt.err, "supported: .onnx"),
             badExt.err.c_str());

    Result badGraph = cli({"export", example("mlp_forward.tsg"), "-o", out, "--graph", "final"});
    QCOMPARE(badGraph.code, int(gui::kExitUsage));
    QVERIFY2(contains(badGraph.err, "final"), badGraph.err.c_str());

    Result noOptimized =
        cli({"export", example("mlp_forward.tsg"), "-o", out, "--graph", "optimized"});
    QCOMPARE(noOptimized.code, int(gui::kExitFailure));
    QVERIFY2(contains(noOptimized.err, "no optimized graph"), noOptimized.err.c_str());

    for (const char* opset : {"12", "18", "seventeen"}) {
      Result badOpset = cli({"export", example("mlp_forward.tsg"), "-o", out, "--opset", opset});
      QCOMPARE(badOpset.code, int(gui::kExitUsage));
      QVERIFY2(contains(badOpset.err, opset), badOpset.err.c_str());
    }

    Result missing = cli({"export", dir.filePath("none.tsg").toStdString(), "-o", out});
    QCOMPARE(missing.code, int(gui::kExitFailure));
    QVERIFY(!exists(out));  // nothing written by any refusal
  }

  // A graph whose op has no ONNX form: exit 1, the op and the node named, no file.
  void refusesAnOpWithoutOnnxForm() {
    QTemporaryDir dir;
    auto x = Variable::create(TensorType(DType::Float32, {1, 1, 4, 4}), "x");
    auto gy = Variable::create(TensorType(DType::Float32, {1, 1, 2, 2}), "gy");
    io::TsgDocument doc;
    doc.original = std::make_unique<FunctionGraph>(
        std::vector<VarPtr>{x, gy},
        std::vector<VarPtr>{maxPool2dGrad(x, gy, Pool2dParams::window(2, 2))});
    const std::string file = dir.filePath("grad.tsg").toStdString();
    io::saveTsg(doc, file);
    const std::string out = dir.filePath("grad.onnx").toStdString();
    Result r = cli({"export", file, "-o", out});
    QCOMPARE(r.code, int(gui::kExitFailure));
    QVERIFY2(contains(r.err, "MaxPool2dGrad") && contains(r.err, "no ONNX form") &&
                 contains(r.err, "node "),
             r.err.c_str());
    QVERIFY(!exists(out));
  }

  void listedInTheUsage() {
    Result r = cli({"--help"});
    QVERIFY2(contains(r.out, "export FILE -o OUT.onnx"), r.out.c_str());
    Result h = cli({"export", "--help"});
    QCOMPARE(h.code, 0);
    QVERIFY2(contains(h.out, "--opset"), h.out.c_str());
  }
};

TSCOPE_TEST_MAIN(TestCliExport)
#include "tst_cli_export.moc"

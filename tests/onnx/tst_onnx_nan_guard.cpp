// An ONNX model through runGraph with NanGuard (`tensorscope run model.onnx --nan-guard`): the
// report names the ONNX node where the bad value was created (its site is the model file and the
// node's name), in modes none and fast_run, with the chain through the nodes that propagate it,
// and the JSON report file.
#include "engine/debug/nan_guard.h"
#include "engine/session/run_graph.h"
#include "onnx_builder.h"
#include "test_main.h"

#include <QTemporaryDir>

using namespace tscope::engine;
using namespace tscope::test::onnx;

class TestOnnxNanGuard : public QObject {
  Q_OBJECT
 private slots:
  void reportNamesTheOnnxNode() {
    ModelBuilder m(13);
    m.input("x", Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, -5, 6}));
    m.initializer("w", Tensor::fromDoubles(DType::Float32, {3}, {0.5, 1.0, 2.0}));
    m.node("Mul", {"x", "w"}, {"xw"}).set_name("/encoder/Mul_1");
    m.node("Log", {"xw"}, {"l"}).set_name("/encoder/layer3/Log_3");
    m.node("Tanh", {"l"}, {"y"}).set_name("/encoder/Tanh_4");
    m.output("y", DType::Float32);
    io::OnnxImportResult imported = io::readOnnx(m.bytes(), "model.onnx");
    FunctionGraph& graph = *imported.document.original;
    for (const VarPtr& in : graph.inputs())
      if (in->name() == "x") in->setTestValue(m.values().at("x"));
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      QTemporaryDir dir;
      session::RunInputs run;
      run.mode = mode;
      run.nanGuard = debug::NanGuardOptions{};
      run.reportJson = dir.filePath("report.json").toStdString();
      debug::NanReport r;
      try {
        session::runGraph(graph, run);
        QFAIL("expected a NanGuardError");
      } catch (const debug::NanGuardError& e) {
        r = e.report();
      }
      const std::string what = std::string(modeName(mode)) + ": " + r.toText();
      QVERIFY2(r.creator(), what.c_str());
      const debug::NodeRef& c = r.creator()->node;
      QVERIFY2(c.op == "Elemwise{log}", what.c_str());
      QVERIFY2(c.site.find("model.onnx") == 0, what.c_str());
      QVERIFY2(c.site.find("Log_3") != std::string::npos, what.c_str());
      QVERIFY2(r.firstIndex == (std::vector<std::int64_t>{1, 1}), what.c_str());
      // The element the Log read: -5 * 1.0.
      QVERIFY2(c.fusedInto.empty() == (mode == Mode::None), what.c_str());
      QVERIFY2(r.creator()->inputs.at(0).value.value_or(0) == -5.0, what.c_str());
      QFile json(dir.filePath("report.json"));
      QVERIFY(json.open(QIODevice::ReadOnly));
      const auto j = nlohmann::json::parse(json.readAll().toStdString());
      QCOMPARE(j["outcome"].get<std::string>(), std::string("nan"));
      QVERIFY(j["events"][0]["creator"]["site"].get<std::string>().find("Log_3") !=
              std::string::npos);
    }
    // Clean inputs: a clean report.
    for (const VarPtr& in : graph.inputs())
      if (in->name() == "x")
        in->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6}));
    QTemporaryDir dir;
    session::RunInputs run;
    run.nanGuard = debug::NanGuardOptions{};
    run.reportJson = dir.filePath("clean.json").toStdString();
    const session::RunResult result = session::runGraph(graph, run);
    QVERIFY(result.nanEvents.empty());
    QFile json(dir.filePath("clean.json"));
    QVERIFY(json.open(QIODevice::ReadOnly));
    QCOMPARE(nlohmann::json::parse(json.readAll().toStdString())["outcome"].get<std::string>(),
             std::string("clean"));
  }
};

TSCOPE_TEST_MAIN(TestOnnxNanGuard)
#include "tst_onnx_nan_guard.moc"

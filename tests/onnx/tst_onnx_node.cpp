// ONNX's own per-operator backend cases (the "node" suite of onnx 1.12), written by
// tests/data/onnx/make_node_cases.py in the fixture layout of onnx_fixture.h: the committed subset
// in tests/data/onnx/node/ (one or more cases of every converter issue 25 added or changed) runs
// here in modes none and fast_run, compared as ONNX's runner compares (the case's rtol/atol,
// 1e-3/1e-7 unless the case says otherwise; dtypes and shapes equal; integers exact). With
// TSCOPE_ONNX_NODE_DIR set, `cases` runs that directory instead (every case, from
// make_node_cases.py --all DIR): scripts/onnx_node_report.py reads the PASS/FAIL lines, so each
// failure message starts with "refused" (an error) or "WRONG" (other values); a case whose
// reference contradicts its own node (sidecar "bad_case") is skipped when its values differ.
// Also: run-time values that decide shapes (Note [Run-time ONNX values]) are checked when the node
// runs, and constant ones still become props.
#include "engine/io/onnx/onnx_import.h"
#include "engine/vm/vm.h"
#include "onnx_builder.h"
#include "test_main.h"

#include <cstdlib>
#include <fstream>
#include <set>

using namespace tscope::engine;
using namespace tscope::engine::io;
namespace fx = tscope::test::onnx;

namespace {

const std::filesystem::path kCommittedDir = TSCOPE_TEST_DATA_DIR "/onnx/node";

std::filesystem::path casesDir() {
  if (const char* dir = std::getenv("TSCOPE_ONNX_NODE_DIR"); dir && *dir) return dir;
  return kCommittedDir;
}

// The ops whose converters issue 25 added or changed (and Max, Min, Mod, Pow for the unsigned
// dtypes): the committed subset must hold a case of each (make_node_cases.py's SUBSET), so CI
// covers every one.
const char* const kCoveredOps =
    "ReduceSum Unsqueeze Squeeze Slice Tile Expand Reshape ConstantOfShape Range TopK Pad Resize "
    "CumSum OneHot Tan Sinh Cosh Asin Acos Atan Asinh Acosh Atanh IsInf IsNaN Hardmax CastLike "
    "Compress MeanVarianceNormalization BitShift ReverseSequence Det QuantizeLinear "
    "DequantizeLinear DynamicQuantizeLinear MatMulInteger QLinearMatMul NegativeLogLikelihoodLoss "
    "SoftmaxCrossEntropyLoss NonMaxSuppression Unique RoiAlign DFT MaxUnpool HannWindow "
    "HammingWindow BlackmanWindow Not Softplus GlobalAveragePool TfIdfVectorizer STFT ConvInteger "
    "QLinearConv MaxPool BatchNormalization Adagrad Adam Momentum ScatterND MelWeightMatrix "
    "GridSample Max Min Mod Pow";

nlohmann::json readJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  return nlohmann::json::parse(in);
}

Tensor ints(std::initializer_list<double> values) {
  return Tensor::fromDoubles(DType::Int64, {static_cast<std::int64_t>(values.size())}, values);
}

std::string opaqueList(const OnnxImportResult& r) {
  std::string out;
  for (const std::string& op : r.opaqueOps) out += (out.empty() ? "" : ", ") + op;
  return out;
}

}  // namespace

class TestOnnxNode : public QObject {
  Q_OBJECT

 private slots:
  void cases_data();
  void cases();
  void subsetCoversTheConverters();
  void runtimeValueIsCheckedWhenTheNodeRuns();
  void runtimeValuesRunAndConstantsStayProps();
  void trainingDomainModels();
  void maxPoolIndicesPickTheFirstMaximum();
};

void TestOnnxNode::cases_data() {
  QTest::addColumn<QString>("path");
  for (const auto& p : fx::fixturePaths(casesDir()))
    QTest::newRow(p.stem().string().c_str()) << QString::fromStdString(p.string());
}

void TestOnnxNode::cases() {
  QFETCH(QString, path);
  fx::Fixture f;
  try {
    f = fx::loadFixture(path.toStdString());
  } catch (const std::exception& e) {
    QFAIL((std::string("refused: the fixture: ") + e.what()).c_str());
  }
  OnnxImportResult imported;
  try {
    imported = loadOnnx(f.onnxPath);
  } catch (const std::exception& e) {
    QFAIL((std::string("refused: import: ") + e.what()).c_str());
  }
  if (!imported.opaqueOps.empty())
    QFAIL(("refused: no converter for " + opaqueList(imported)).c_str());
  for (Mode mode : {Mode::None, Mode::FastRun}) {
    std::vector<Tensor> outputs;
    try {
      outputs = fx::runFixture(*imported.document.original, f, mode);
    } catch (const std::exception& e) {
      QFAIL(
          (std::string("refused: run (") + std::string(modeName(mode)) + "): " + e.what()).c_str());
    }
    if (auto diff = fx::compareOutputs(outputs, f.expected, f.rtol, f.atol)) {
      // A case whose reference contradicts its node (make_node_cases.py's KNOWN_BAD).
      if (!f.badCase.empty()) QSKIP(("bad case: " + f.badCase + "; " + *diff).c_str());
      QFAIL(("WRONG (" + std::string(modeName(mode)) + "): " + *diff).c_str());
    }
  }
}

void TestOnnxNode::subsetCoversTheConverters() {
  const nlohmann::json manifest = readJson(kCommittedDir / "cases.json");
  QVERIFY2(manifest.size() >= 130, ("only " + std::to_string(manifest.size()) + " cases").c_str());
  std::set<std::string> ops;
  for (const auto& [name, meta] : manifest.items()) {
    QVERIFY2(std::filesystem::exists(kCommittedDir / (name + ".onnx")), name.c_str());
    QVERIFY2(std::filesystem::exists(kCommittedDir / (name + ".out0.npy")), name.c_str());
    ops.insert(meta.at("op").get<std::string>());
  }
  std::istringstream words(kCoveredOps);
  for (std::string op; words >> op;)
    QVERIFY2(ops.count(op), ("no committed node case for " + op).c_str());
}

// Unsqueeze with axes a graph input: a bad axis fails the run, naming the node, the input and
// the value; one whose result contradicts the declared output type fails; a good one runs.
void TestOnnxNode::runtimeValueIsCheckedWhenTheNodeRuns() {
  const std::filesystem::path model = kCommittedDir / "test_unsqueeze_axis_0.onnx";
  const OnnxImportResult imported = loadOnnx(model);
  const FunctionGraph& g = *imported.document.original;
  QCOMPARE(fx::countOps(g, "OnnxRuntimeNode"), 1);
  session::RunInputs run;
  run.byName["x"] = Tensor::full(DType::Float32, {3, 4, 5}, 1.0);
  run.byName["axes"] = ints({7});
  try {
    session::runGraph(g, run);
    QFAIL("axes = [7] on a rank-3 input ran");
  } catch (const ExecutionError& e) {
    const std::string what = e.what();
    for (const char* part : {"Unsqueeze", "'axes' = [7]", "expected"})
      QVERIFY2(what.find(part) != std::string::npos,
               ("expected '" + std::string(part) + "' in: " + what).c_str());
  }
  // A value that runs but contradicts the output type ONNX declared (1, 3, 4, 5) is refused too.
  run.byName["axes"] = ints({-1});
  try {
    session::runGraph(g, run);
    QFAIL("axes = [-1] ran against the declared output shape (1, 3, 4, 5)");
  } catch (const ExecutionError& e) {
    QVERIFY2(std::string(e.what()).find("does not fit its type") != std::string::npos, e.what());
  }
  run.byName["axes"] = ints({0});
  QCOMPARE(session::runGraph(g, run).outputs.at(0).shape(), (Shape{1, 3, 4, 5}));
}

// TopK with k a graph input runs (k checked at run time); with k an initializer the node is the
// engine's TopK, as before; with deferring turned off the run-time k is refused as before.
void TestOnnxNode::runtimeValuesRunAndConstantsStayProps() {
  const Tensor x = Tensor::fromDoubles(DType::Float32, {2, 4}, {1, 5, 3, 2, 8, 6, 7, 4});
  auto build = [&](bool constantK) {
    fx::ModelBuilder m(11);
    m.input("x", x);
    if (constantK)
      m.initializer("k", ints({2}));
    else
      m.input("k", ints({2}));
    m.node("TopK", {"x", "k"}, {"values", "indices"});
    m.output("values", DType::Float32);
    m.output("indices", DType::Int64);
    return m;
  };
  const Tensor values = Tensor::fromDoubles(DType::Float32, {2, 2}, {5, 3, 8, 7});
  const Tensor indices = Tensor::fromDoubles(DType::Int64, {2, 2}, {1, 2, 0, 2});
  fx::checkModel(build(false), {values, indices}, "OnnxRuntimeNode");
  fx::checkModel(build(true), {values, indices}, "TopK");
  OnnxImportOptions strict;
  strict.deferRuntimeValues = false;
  try {
    readOnnx(build(false).bytes(), "topk.onnx", strict);
    QFAIL("a run-time k imported with deferRuntimeValues = false");
  } catch (const OnnxError& e) {
    QVERIFY2(std::string(e.what()).find("TopK's k (input 1) to be a constant") != std::string::npos,
             e.what());
  }
}

// Note [Models without the default domain]: an optimizer in a model that imports both domains
// runs after a default-domain node; a model that imports only ai.onnx.preview.training refuses a
// default-domain node, naming it.
void TestOnnxNode::trainingDomainModels() {
  const Tensor x = Tensor::fromDoubles(DType::Float32, {2}, {1, 2});
  const Tensor g = Tensor::fromDoubles(DType::Float32, {2}, {4, 8});
  const Tensor v = Tensor::fromDoubles(DType::Float32, {2}, {2, 0});
  fx::ModelBuilder m(13);
  auto* training = m.proto().add_opset_import();
  training->set_domain("ai.onnx.preview.training");
  training->set_version(1);
  m.input("x", x);
  m.input("g", g);
  m.input("v", v);
  m.initializer("r", Tensor::scalar(DType::Float32, 0.5));
  m.initializer("t", Tensor::scalar(DType::Int64, 1));
  m.node("Relu", {"x"}, {"xr"});
  auto& n = m.node("Momentum", {"r", "t", "xr", "g", "v"}, {"x_new", "v_new"});
  n.set_domain("ai.onnx.preview.training");
  fx::attrFloat(n, "alpha", 0.5);
  fx::attrFloat(n, "beta", 0.25);
  fx::attrFloat(n, "norm_coefficient", 0.0);
  fx::attrString(n, "mode", "standard");
  m.output("x_new", DType::Float32);
  m.output("v_new", DType::Float32);
  // T = 1 > 0: v' = 0.5 v + 0.25 g = [2, 2]; x' = x - 0.5 v' = [0, 1].
  fx::checkModel(m, {Tensor::fromDoubles(DType::Float32, {2}, {0, 1}),
                     Tensor::fromDoubles(DType::Float32, {2}, {2, 2})});

  fx::ModelBuilder only(13);
  only.proto().mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  only.proto().mutable_opset_import(0)->set_version(1);
  only.input("x", x);
  only.node("Relu", {"x"}, {"y"});
  only.output("y", DType::Float32);
  try {
    readOnnx(only.bytes(), "training.onnx");
    QFAIL("a default-domain Relu imported into a model without the default domain");
  } catch (const OnnxError& e) {
    const std::string what = e.what();
    for (const char* part : {"graph.node[0]", "Relu", "imports no default-domain opset"})
      QVERIFY2(what.find(part) != std::string::npos,
               ("expected '" + std::string(part) + "' in: " + what).c_str());
  }
}

// Note [MaxPool indices]: a window whose maximum occurs twice gives the first; the flat index
// counts the batch (N = 2, so the second entry's indices start at 5).
void TestOnnxNode::maxPoolIndicesPickTheFirstMaximum() {
  const Tensor x = Tensor::fromDoubles(DType::Float32, {2, 1, 5}, {3, 3, 1, 5, 5, 0, 0, 0, 0, 1});
  fx::ModelBuilder m(12);
  m.input("x", x);
  auto& n = m.node("MaxPool", {"x"}, {"y", "i"});
  fx::attrInts(n, "kernel_shape", {2});
  m.output("y", DType::Float32);
  m.output("i", DType::Int64);
  fx::checkModel(m, {Tensor::fromDoubles(DType::Float32, {2, 1, 4}, {3, 3, 5, 5, 0, 0, 0, 1}),
                     Tensor::fromDoubles(DType::Int64, {2, 1, 4}, {0, 1, 3, 3, 5, 6, 7, 9})});
}

TSCOPE_TEST_MAIN(TestOnnxNode)
#include "tst_onnx_node.moc"

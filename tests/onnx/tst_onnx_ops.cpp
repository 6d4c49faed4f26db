// The single-op models of tests/data/onnx/ops/ (written by make_op_fixtures.py: one tiny model
// per ONNX op, and per opset where the op changed form). Each imports without opaque ops; runs in
// modes none and fast_run within its sidecar's tolerance of the numpy/torch reference, with
// values that fit the static output types; has graph inputs and outputs whose static types agree
// with ONNX's own shape inference; and, when the exporter is built, survives a round trip through
// export. The fixture set covers every op issue 5 lists, each form-changing opset on both sides,
// so the suite cannot silently lose coverage. The harness's comparison is tested too.
#include "engine/graph/type.h"
#include "engine/io/onnx/onnx_convert.h"
#include "engine/io/onnx/onnx_import.h"
#include "onnx_fixture.h"
#include "test_main.h"
#if __has_include("engine/io/onnx/onnx_export.h")
#include "engine/io/onnx/onnx_export.h"
#define TSCOPE_TEST_ONNX_EXPORT 1
#endif

#include <fstream>
#include <map>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <set>
#include <sstream>

using namespace tscope::engine;
using namespace tscope::engine::io;
namespace fx = tscope::test::onnx;

Q_DECLARE_METATYPE(tscope::engine::Mode)

namespace {

const std::filesystem::path kOpsDir = TSCOPE_TEST_DATA_DIR "/onnx/ops";

// Issue 5's list of ops the importer maps. Gelu has no ONNX op below opset 20: it is covered by a
// fixture named gelu_* holding PyTorch's Erf decomposition.
const char* const kIssueOps =
    "Add Sub Mul Div Pow Neg Abs Sign Exp Log Sqrt Reciprocal Erf Tanh Sigmoid Softplus Relu "
    "LeakyRelu PRelu Elu Selu Shrink Gelu Clip Min Max Sum Mean Where Equal Less Greater Not "
    "And Or Cast MatMul Gemm Conv ConvTranspose MaxPool AveragePool GlobalAveragePool "
    "BatchNormalization LayerNormalization InstanceNormalization Dropout Softmax LogSoftmax "
    "Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice Gather Expand Tile Shape "
    "Size Constant ConstantOfShape Range Identity ReduceSum ReduceMean ReduceMax ReduceMin "
    "ReduceProd ArgMax TopK Resize Pad LSTM GRU";

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Ops whose form changed at an opset (attributes became inputs, semantics changed): fixtures must
// use each below and at or above that opset.
const std::vector<std::pair<std::string, int>> kFormChanges = {
    {"Squeeze", 13}, {"Unsqueeze", 13},  {"Clip", 11},       {"Slice", 10},  {"Split", 13},
    {"Split", 18},   {"ReduceSum", 13},  {"ReduceMean", 18}, {"Pad", 11},    {"Pad", 18},
    {"Softmax", 13}, {"LogSoftmax", 13}, {"TopK", 10},       {"Resize", 11}, {"Dropout", 12},
    {"Gemm", 11},    {"Add", 7}};

onnx::ModelProto readModel(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str()))
    throw std::runtime_error(path.string() + ": not a ModelProto");
  return model;
}

int defaultOpset(const onnx::ModelProto& model) {
  for (const auto& id : model.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx") return static_cast<int>(id.version());
  return 0;
}

// Empty when the imported type agrees with ONNX's: same dtype and rank, every dimension ONNX
// knows known with that size, and every dimension carrying one of the graph inputs' symbols
// unknown (it varies from call to call). Other symbols are the "unk__N" ONNX makes up for what it
// could not infer, where the engine may know more; a value ONNX gives no shape is not compared.
// Otherwise what differs.
std::string disagreement(const TensorType& t, const onnx::TypeProto& onnxType,
                         const std::set<std::string>& inputSymbols) {
  std::string onnxText = onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(
                             onnxType.tensor_type().elem_type())) +
                         " (";
  const auto& shape = onnxType.tensor_type().shape();
  for (int d = 0; d < shape.dim_size(); ++d)
    onnxText +=
        (d ? ", " : "") + (shape.dim(d).has_dim_value() ? std::to_string(shape.dim(d).dim_value())
                                                        : shape.dim(d).dim_param());
  const std::string both = ": imported " + t.str() + ", ONNX " + onnxText + ")";
  if (tscope::engine::io::onnx_import::dtypeFromOnnx(onnxType.tensor_type().elem_type()) !=
      t.dtype())
    return "dtype" + both;
  if (!onnxType.tensor_type().has_shape()) return {};
  if (shape.dim_size() != t.ndim()) return "rank" + both;
  for (int d = 0; d < shape.dim_size(); ++d) {
    if (shape.dim(d).has_dim_value() && t.shape()[d] != shape.dim(d).dim_value())
      return "dimension " + std::to_string(d) + both;
    if (shape.dim(d).has_dim_param() && inputSymbols.count(shape.dim(d).dim_param()) &&
        t.isDimKnown(d))
      return "dimension " + std::to_string(d) + " (symbolic)" + both;
  }
  return {};
}

void addFixtureRows() {
  QTest::addColumn<QString>("path");
  for (const auto& p : fx::fixturePaths(kOpsDir))
    QTest::newRow(p.stem().string().c_str()) << QString::fromStdString(p.string());
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Imports the fixture's model; QFAILs (returning false) naming the fixture on errors and opaque
// ops.
bool import(const fx::Fixture& f, OnnxImportResult& result) {
  try {
    result = loadOnnx(f.onnxPath);
  } catch (const std::exception& e) {
    QTest::qFail((f.name + ": import failed: " + e.what()).c_str(), __FILE__, __LINE__);
    return false;
  }
  if (!result.opaqueOps.empty()) {
    QTest::qFail((f.name + ": no converter for " + join(result.opaqueOps)).c_str(), __FILE__,
                 __LINE__);
    return false;
  }
  return true;
}

// Runs and compares; the message names the fixture, the stage and the output.
std::optional<std::string> runAndCompare(const FunctionGraph& graph, const fx::Fixture& f,
                                         Mode mode, const std::string& stage) {
  const std::string where = f.name + " (" + stage + ", " + std::string(modeName(mode)) + "): ";
  std::vector<Tensor> outputs;
  try {
    outputs = fx::runFixture(graph, f, mode);
  } catch (const std::exception& e) {
    return where + "run failed: " + e.what();
  }
  if (auto diff = fx::compareOutputs(outputs, f.expected, f.rtol, f.atol)) return where + *diff;
  // inferShape against the computed shapes: each value fits its output's static type.
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const TensorType& type = graph.outputs()[i]->type();
    if (!TensorType::ofValue(outputs[i]).isSubtypeOf(type))
      return where + "output " + std::to_string(i) + " has the static type " + type.str() +
             " but computes a value of shape " + shapeToString(outputs[i].shape());
  }
  return std::nullopt;
}

}  // namespace

class TestOnnxOps : public QObject {
  Q_OBJECT

 private slots:
  // Import, then run in a mode: the reference outputs within the sidecar's tolerance.
  void testRun_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<Mode>("mode");
    for (const auto& p : fx::fixturePaths(kOpsDir)) {
      const std::string name = p.stem().string();
      QTest::newRow((name + " none").c_str()) << QString::fromStdString(p.string()) << Mode::None;
      QTest::newRow((name + " fast_run").c_str())
          << QString::fromStdString(p.string()) << Mode::FastRun;
    }
  }
  void testRun() {
    QFETCH(QString, path);
    QFETCH(Mode, mode);
    const fx::Fixture f = fx::loadFixture(path.toStdString());
    OnnxImportResult imported;
    if (!import(f, imported)) return;
    // Opsets ONNX 1.12 knows are checked and inferred without complaint.
    if (imported.opset <= 17)
      QVERIFY2(imported.warnings.empty(),
               (f.name + ": warnings: " + join(imported.warnings)).c_str());
    const auto failure = runAndCompare(*imported.document.original, f, mode, "imported");
    QVERIFY2(!failure, failure ? failure->c_str() : "");
  }

  // The imported graph's non-shared inputs are the model's inputs (names, order, types) and its
  // outputs have the types ONNX's shape inference gives them (strict, with data propagation; the
  // declared output shapes are removed first, so the types are inferred, not copied).
  void testTypesAgreeWithOnnx_data() { addFixtureRows(); }
  void testTypesAgreeWithOnnx() {
    QFETCH(QString, path);
    const fx::Fixture f = fx::loadFixture(path.toStdString());
    onnx::ModelProto model = readModel(f.onnxPath);
    if (defaultOpset(model) > 17) QSKIP("opset newer than ONNX 1.12's shape inference");
    for (auto& out : *model.mutable_graph()->mutable_output())
      out.mutable_type()->mutable_tensor_type()->clear_shape();
    try {
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(true, 1, true));
    } catch (const std::exception& e) {
      QFAIL((f.name + ": ONNX's shape inference failed: " + e.what()).c_str());
    }
    OnnxImportResult imported;
    if (!import(f, imported)) return;
    const FunctionGraph& graph = *imported.document.original;
    std::set<std::string> initializers;
    for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
    std::vector<const onnx::ValueInfoProto*> inputs;
    std::set<std::string> inputSymbols;
    for (const auto& in : model.graph().input()) {
      if (initializers.count(in.name())) continue;
      inputs.push_back(&in);
      for (const auto& dim : in.type().tensor_type().shape().dim())
        if (dim.has_dim_param()) inputSymbols.insert(dim.dim_param());
    }
    std::vector<VarPtr> graphInputs;
    for (const VarPtr& in : graph.inputs())
      if (in->kind() != Variable::Kind::Shared) graphInputs.push_back(in);
    QCOMPARE(graphInputs.size(), inputs.size());
    std::vector<std::string> problems;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (graphInputs[i]->name() != inputs[i]->name())
        problems.push_back("input " + std::to_string(i) + " is named '" + graphInputs[i]->name() +
                           "', expected '" + inputs[i]->name() + "'");
      if (const std::string why =
              disagreement(graphInputs[i]->type(), inputs[i]->type(), inputSymbols);
          !why.empty())
        problems.push_back("input '" + inputs[i]->name() + "': " + why);
    }
    QCOMPARE(graph.outputs().size(), static_cast<std::size_t>(model.graph().output_size()));
    for (int i = 0; i < model.graph().output_size(); ++i)
      if (const std::string why = disagreement(graph.outputs()[i]->type(),
                                               model.graph().output(i).type(), inputSymbols);
          !why.empty())
        problems.push_back("output '" + model.graph().output(i).name() + "': " + why);
    QVERIFY2(problems.empty(), (f.name + ": " + join(problems)).c_str());
  }

  // Export, re-import, run: the same reference outputs.
  void testExportRoundTrip_data() { addFixtureRows(); }
  void testExportRoundTrip() {
#ifndef TSCOPE_TEST_ONNX_EXPORT
    QSKIP("the ONNX exporter is not built");
#else
    QFETCH(QString, path);
    const fx::Fixture f = fx::loadFixture(path.toStdString());
    if (!f.exportable) QSKIP(("not exportable: " + f.note).c_str());
    OnnxImportResult imported;
    if (!import(f, imported)) return;
    std::string bytes;
    try {
      bytes = writeOnnx(*imported.document.original);
    } catch (const std::exception& e) {
      QFAIL((f.name + ": export failed: " + e.what()).c_str());
    }
    OnnxImportResult again;
    try {
      again = readOnnx(bytes, f.name + " (exported)");
    } catch (const std::exception& e) {
      QFAIL((f.name + ": re-import of the export failed: " + e.what()).c_str());
    }
    QVERIFY2(again.opaqueOps.empty(),
             (f.name + ": the export re-imports with opaque " + join(again.opaqueOps)).c_str());
    const auto failure = runAndCompare(*again.document.original, f, Mode::None, "exported");
    QVERIFY2(!failure, failure ? failure->c_str() : "");
#endif
  }

  // Every op of issue 5's list has a fixture, and each form-changing op has fixtures on both sides
  // of the change; every fixture has a reference for each of the model's outputs and inputs.
  void testCoverage() {
    std::map<std::string, std::set<int>> opsets;  // op type -> opsets of the fixtures using it
    std::vector<std::string> problems;
    int count = 0;
    for (const auto& p : fx::fixturePaths(kOpsDir)) {
      ++count;
      const onnx::ModelProto model = readModel(p);
      const int opset = defaultOpset(model);
      bool hasErf = false;
      for (const auto& node : model.graph().node()) {
        opsets[node.op_type()].insert(opset);
        hasErf |= node.op_type() == "Erf";
      }
      if (p.stem().string().rfind("gelu", 0) == 0 && hasErf) opsets["Gelu"].insert(opset);
      const fx::Fixture f = fx::loadFixture(p);
      std::size_t nInputs = 0;
      std::set<std::string> initializers;
      for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
      for (const auto& in : model.graph().input()) nInputs += !initializers.count(in.name());
      if (f.inputs.size() != nInputs ||
          f.expected.size() != static_cast<std::size_t>(model.graph().output_size()))
        problems.push_back(f.name + ": " + std::to_string(f.inputs.size()) + " inputs and " +
                           std::to_string(f.expected.size()) + " outputs for a model with " +
                           std::to_string(nInputs) + " and " +
                           std::to_string(model.graph().output_size()));
    }
    QVERIFY2(count >= static_cast<int>(words(kIssueOps).size()),
             ("only " + std::to_string(count) + " fixtures").c_str());
    for (const std::string& op : words(kIssueOps))
      if (!opsets.count(op)) problems.push_back("no fixture uses " + op);
    for (const auto& [op, changedAt] : kFormChanges) {
      const std::set<int>& used = opsets[op];
      if (used.empty() || *used.begin() >= changedAt || *used.rbegin() < changedAt)
        problems.push_back(op + " needs fixtures below and at opset " + std::to_string(changedAt));
    }
    QVERIFY2(problems.empty(), join(problems).c_str());
  }

  // The harness's comparison: tolerance, NaN, exact integers, and messages naming what differs.
  void testCompareOutputs() {
    const Tensor e = Tensor::fromDoubles(DType::Float32, {2, 2}, {1.0, 2.0, NAN, 100.0});
    QVERIFY(!fx::compareOutputs({e}, {e}, 1e-4, 1e-5));
    const Tensor close = Tensor::fromDoubles(DType::Float32, {2, 2}, {1.000001, 2.0, NAN, 100.005});
    QVERIFY(!fx::compareOutputs({close}, {e}, 1e-4, 1e-5));
    const Tensor off = Tensor::fromDoubles(DType::Float32, {2, 2}, {1.01, 2.0, NAN, 101.0});
    auto msg = fx::compareOutputs({e, off}, {e, e}, 1e-4, 1e-5);
    QVERIFY(msg);
    QVERIFY2(
        msg->find("output 1: 2 of 4 elements differ; worst at (1, 1): actual 101, expected 100") ==
            0,
        msg->c_str());
    const Tensor nanHere = Tensor::fromDoubles(DType::Float32, {2, 2}, {1.0, NAN, NAN, 100.0});
    msg = fx::compareOutputs({nanHere}, {e}, 1e-4, 1e-5);
    QVERIFY2(msg && msg->find("worst at (0, 1): actual nan, expected 2") != std::string::npos,
             msg ? msg->c_str() : "");
    QVERIFY(fx::compareOutputs({e.astype(DType::Float64)}, {e}, 1, 1)
                ->find("expected dtype float32, found float64") != std::string::npos);
    QVERIFY(fx::compareOutputs({e.reshape({4})}, {e}, 1, 1)
                ->find("expected shape (2, 2), found (4,)") != std::string::npos);
    QVERIFY(fx::compareOutputs({}, {e}, 1, 1)->find("expected 1 outputs, found 0") !=
            std::string::npos);
    const Tensor i = Tensor::fromDoubles(DType::Int64, {3}, {1, 2, 3});
    const Tensor j = Tensor::fromDoubles(DType::Int64, {3}, {1, 2, 4});
    QVERIFY(!fx::compareOutputs({i}, {i}, 0, 0));
    QVERIFY(fx::compareOutputs({j}, {i}, 1, 1));  // integers are exact whatever the tolerance
  }
};

TSCOPE_TEST_MAIN(TestOnnxOps)
#include "tst_onnx_ops.moc"

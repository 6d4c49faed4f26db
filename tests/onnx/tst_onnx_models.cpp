// The PyTorch-exported models of tests/data/onnx/models/ (written by make_model_fixtures.py: an
// MLP, LeNet-5, a reduced-width ResNet-18, a 2-layer LSTM and a transformer encoder layer, some at
// opsets 9 and 17 too). Each model imports without opaque ops; runs in modes none and fast_run
// within its sidecar's tolerance of PyTorch's outputs; has static types that agree with ONNX's own
// shape inference, run here through ONNX's C++ API independently of the importer; carries
// PyTorch's module paths as scopes; and survives a round trip through export (as imported and
// after fast_run).
#include "engine/io/onnx/onnx_export.h"
#include "engine/io/onnx/onnx_import.h"
#include "onnx_fixture.h"
#include "test_main.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

// tscope_onnx links ONNX privately, so ONNX's compile definitions do not reach the tests; these
// are the ones Debian's ONNXTargets.cmake gives (ONNX_ML selects onnx-ml.pb.h, the schema the
// library was built with).
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

using namespace tscope::engine;
using namespace tscope::engine::io;
namespace fx = tscope::test::onnx;

Q_DECLARE_METATYPE(tscope::engine::Mode)

namespace {

const std::filesystem::path kModelsDir = TSCOPE_TEST_DATA_DIR "/onnx/models";

// The fixtures every test runs over; the ones issue 5 names must all be there.
const std::vector<std::string> kRequiredFixtures = {"mlp", "lenet5", "resnet18", "lstm",
                                                    "transformer_encoder"};

std::vector<std::string> fixtureNames() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kModelsDir))
    if (entry.path().extension() == ".onnx") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path modelPath(const QString& name) {
  return kModelsDir / (name.toStdString() + ".onnx");
}

void addFixtureRows() {
  QTest::addColumn<QString>("name");
  for (const std::string& name : fixtureNames())
    QTest::newRow(name.c_str()) << QString::fromStdString(name);
}

std::string join(const std::vector<std::string>& items, std::size_t limit = 12) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) out += "\n  " + items[i];
  if (items.size() > limit) out += "\n  ... and " + std::to_string(items.size() - limit) + " more";
  return out;
}

// The model as ONNX's own shape inference annotates it: strict (a node it cannot infer is an
// error), with type checks and data propagation (so shapes computed by Shape/Gather/Concat chains
// are known), as a reference that does not go through the importer.
onnx::ModelProto inferredModel(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str()))
    throw std::runtime_error(path.string() + ": not a ModelProto");
  onnx::shape_inference::InferShapes(
      model, onnx::OpSchemaRegistry::Instance(),
      onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1,
                                  /*data_prop=*/true));
  return model;
}

std::optional<DType> dtypeOfOnnx(int elemType) {
  switch (elemType) {
    case onnx::TensorProto::FLOAT:
      return DType::Float32;
    case onnx::TensorProto::DOUBLE:
      return DType::Float64;
    case onnx::TensorProto::FLOAT16:
      return DType::Float16;
    case onnx::TensorProto::INT64:
      return DType::Int64;
    case onnx::TensorProto::INT32:
      return DType::Int32;
    case onnx::TensorProto::INT16:
      return DType::Int16;
    case onnx::TensorProto::INT8:
      return DType::Int8;
    case onnx::TensorProto::UINT8:
      return DType::UInt8;
    case onnx::TensorProto::BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

// Every variable of the imported graph by name (several when a composition reuses a name).
std::multimap<std::string, const Variable*> variablesByName(const FunctionGraph& graph) {
  std::multimap<std::string, const Variable*> out;
  for (const Variable* v : graph.variables())
    if (!v->name().empty()) out.emplace(v->name(), v);
  return out;
}

std::string shapeText(const onnx::TypeProto& t) {
  std::string out = "(";
  const auto& shape = t.tensor_type().shape();
  for (int d = 0; d < shape.dim_size(); ++d) {
    if (d) out += ", ";
    const auto& dim = shape.dim(d);
    out += dim.has_dim_value() ? std::to_string(dim.dim_value())
                               : (dim.has_dim_param() ? dim.dim_param() : std::string("?"));
  }
  return out + ")";
}

// Note [Types against ONNX's inference]: a variable agrees with ONNX's type for its value when the
// dtype and the rank are equal, every dimension ONNX knows (dim_value) is known with that size,
// and every dimension carrying one of the graph inputs' symbols ("batch") is unknown, since it
// varies from call to call. Other symbolic dimensions are the "unk__N" names ONNX makes up for
// what it could not infer, where the engine may know more. Empty when they agree.
std::string disagreement(const Variable& v, const onnx::TypeProto& onnxType,
                         const std::set<std::string>& inputSymbols) {
  const TensorType& t = v.type();
  const std::string both =
      ": imported " + t.str() + ", ONNX " +
      onnx::TensorProto::DataType_Name(
          static_cast<onnx::TensorProto::DataType>(onnxType.tensor_type().elem_type())) +
      " " + shapeText(onnxType);
  const std::optional<DType> dtype = dtypeOfOnnx(onnxType.tensor_type().elem_type());
  if (!dtype || *dtype != t.dtype()) return "dtype" + both;
  if (!onnxType.tensor_type().has_shape()) return {};
  const auto& shape = onnxType.tensor_type().shape();
  if (shape.dim_size() != t.ndim()) return "rank" + both;
  for (int d = 0; d < shape.dim_size(); ++d) {
    const auto& dim = shape.dim(d);
    if (dim.has_dim_value() && t.shape()[d] != dim.dim_value())
      return "dimension " + std::to_string(d) + both;
    if (dim.has_dim_param() && inputSymbols.count(dim.dim_param()) && t.isDimKnown(d))
      return "dimension " + std::to_string(d) + " (symbolic '" + dim.dim_param() + "')" + both;
  }
  return {};
}

// The scope PyTorch's exporter encodes in a node name: "/layer1/layer1.0/conv1/Conv" ->
// "layer1/layer1.0/conv1", "/Relu" -> "" (top level); nullopt for names not of that form
// ("Identity_0").
std::optional<std::string> pytorchScope(const std::string& nodeName) {
  if (nodeName.size() < 2 || nodeName[0] != '/') return std::nullopt;
  const std::size_t last = nodeName.rfind('/');
  return nodeName.substr(1, last == 0 ? 0 : last - 1);
}

}  // namespace

class TestOnnxModels : public QObject {
  Q_OBJECT

 private slots:
  void testFixturesPresent() {
    const std::vector<std::string> names = fixtureNames();
    for (const std::string& required : kRequiredFixtures)
      QVERIFY2(std::find(names.begin(), names.end(), required) != names.end(),
               ("missing fixture " + required + " in " + kModelsDir.string()).c_str());
    // Every fixture has reference outputs and a float32 tolerance of at most 1e-4 relative.
    for (const std::string& name : names) {
      const fx::Fixture f = fx::loadFixture(kModelsDir / (name + ".onnx"));
      QVERIFY2(!f.inputs.empty(), name.c_str());
      QVERIFY2(f.rtol <= 1e-4, name.c_str());
    }
  }

  // Import, then run in a mode: PyTorch's outputs within the sidecar's tolerance.
  void testRun_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<Mode>("mode");
    for (const std::string& name : fixtureNames()) {
      QTest::newRow((name + " none").c_str()) << QString::fromStdString(name) << Mode::None;
      QTest::newRow((name + " fast_run").c_str()) << QString::fromStdString(name) << Mode::FastRun;
    }
  }
  void testRun() {
    QFETCH(QString, name);
    QFETCH(Mode, mode);
    const fx::Fixture f = fx::loadFixture(modelPath(name));
    OnnxImportOptions options;
    options.allowOpaque = false;  // every op of these models must have a converter
    OnnxImportResult imported;
    try {
      imported = loadOnnx(f.onnxPath, options);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY(imported.opaqueOps.empty());
    QVERIFY2(imported.warnings.empty(), join(imported.warnings).c_str());
    std::vector<Tensor> outputs;
    try {
      outputs = fx::runFixture(*imported.document.original, f, mode);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const auto diff = fx::compareOutputs(outputs, f.expected, f.rtol, f.atol);
    QVERIFY2(!diff,
             diff ? (f.name + " (" + std::string(modeName(mode)) + "): " + *diff).c_str() : "");
  }

  // Every value ONNX's shape inference typed agrees with the imported variable of that name
  // (Note [Types against ONNX's inference]), and every value that must exist in the imported graph
  // does: the graph's inputs and outputs, and the floating-point output of each node that is not
  // a Constant or Identity and that something uses. (Integer values such as the Shape/Gather/
  // Concat arithmetic of a Reshape's target may be folded away by the converters.)
  void testTypesAgreeWithOnnx_data() { addFixtureRows(); }
  void testTypesAgreeWithOnnx() {
    QFETCH(QString, name);
    onnx::ModelProto model;
    try {
      model = inferredModel(modelPath(name));
    } catch (const std::exception& e) {
      QFAIL(("ONNX's shape inference failed: " + std::string(e.what())).c_str());
    }
    const onnx::GraphProto& g = model.graph();
    std::map<std::string, const onnx::TypeProto*> typed;
    std::set<std::string> inputSymbols;
    for (const auto& vi : g.input()) {
      typed[vi.name()] = &vi.type();
      for (const auto& dim : vi.type().tensor_type().shape().dim())
        if (dim.has_dim_param()) inputSymbols.insert(dim.dim_param());
    }
    for (const auto& vi : g.value_info()) typed[vi.name()] = &vi.type();
    for (const auto& vi : g.output()) typed[vi.name()] = &vi.type();

    std::set<std::string> used;
    for (const auto& node : g.node())
      for (const auto& in : node.input()) used.insert(in);
    for (const auto& out : g.output()) used.insert(out.name());
    std::set<std::string> required;
    for (const auto& vi : g.input()) required.insert(vi.name());
    for (const auto& vi : g.output()) required.insert(vi.name());
    for (const auto& node : g.node()) {
      if (node.op_type() == "Constant" || node.op_type() == "Identity") continue;
      for (const auto& out : node.output()) {
        const auto t = typed.find(out);
        if (t != typed.end() && used.count(out) &&
            isFloat(dtypeOfOnnx(t->second->tensor_type().elem_type()).value_or(DType::Int64)))
          required.insert(out);
      }
    }

    OnnxImportResult imported;
    try {
      imported = loadOnnx(modelPath(name));
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const auto vars = variablesByName(*imported.document.original);
    std::vector<std::string> problems;
    for (const auto& [valueName, type] : typed) {
      const auto [begin, end] = vars.equal_range(valueName);
      if (begin == end) {
        if (required.count(valueName))
          problems.push_back("'" + valueName + "' is missing from the imported graph");
        continue;
      }
      for (auto it = begin; it != end; ++it) {
        const std::string why = disagreement(*it->second, *type, inputSymbols);
        if (!why.empty()) problems.push_back("'" + valueName + "': " + why);
      }
    }
    QVERIFY2(problems.empty(),
             (std::to_string(problems.size()) + " disagreements:" + join(problems)).c_str());
  }

  // PyTorch writes module paths into node names ("/layer1/layer1.0/conv1/Conv"); the node that
  // computes such a node's output carries the path as its scope (a composition's inner nodes may
  // add their own levels below it).
  void testScopesFromModulePaths_data() { addFixtureRows(); }
  void testScopesFromModulePaths() {
    QFETCH(QString, name);
    OnnxImportResult imported;
    try {
      imported = loadOnnx(modelPath(name));
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    onnx::ModelProto model = inferredModel(modelPath(name));
    const auto vars = variablesByName(*imported.document.original);
    std::vector<std::string> problems;
    int checked = 0;
    for (const auto& node : model.graph().node()) {
      const std::optional<std::string> scope = pytorchScope(node.name());
      if (!scope || node.op_type() == "Constant" || node.op_type() == "Identity") continue;
      for (const auto& out : node.output()) {
        const auto [begin, end] = vars.equal_range(out);
        for (auto it = begin; it != end; ++it) {
          const Apply* owner = it->second->owner();
          if (!owner) continue;  // folded to a constant
          ++checked;
          const std::string& s = owner->scope();
          if (s != *scope && s.rfind(*scope + "/", 0) != 0)
            problems.push_back(node.name() + ": output '" + out + "' is computed in scope '" + s +
                               "', expected '" + *scope + "'");
        }
      }
    }
    QVERIFY2(problems.empty(), join(problems).c_str());
    QVERIFY2(checked > 0, "no node of the model carries a PyTorch module path");
  }

  // The ResNet groups as torchvision's modules do: one Conv per BasicBlock convolution, in the
  // block's scope, with the downsampling branch in its own scope.
  void testResNetScopes() {
    OnnxImportResult imported;
    try {
      imported = loadOnnx(kModelsDir / "resnet18.onnx");
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    std::map<std::string, std::vector<std::string>> opsByScope;
    for (const Apply* node : imported.document.original->nodes())
      opsByScope[node->scope()].push_back(node->op().name());
    const auto convIn = [&](const std::string& scope) {
      const auto it = opsByScope.find(scope);
      return it != opsByScope.end() &&
             std::any_of(it->second.begin(), it->second.end(), [](const std::string& op) {
               return op.find("Conv") != std::string::npos;
             });
    };
    for (const char* scope :
         {"conv1", "layer1/layer1.0/conv1", "layer1/layer1.0/conv2", "layer2/layer2.1/conv1",
          "layer3/layer3.0/downsample/downsample.0", "layer4/layer4.1/conv2"})
      QVERIFY2(convIn(scope), (std::string("no convolution in scope '") + scope + "'").c_str());
    QVERIFY(opsByScope.count("fc"));
    QVERIFY(opsByScope.count("maxpool"));
    // Twenty convolutions: the stem, 16 in the blocks, 3 downsampling.
    int convs = 0;
    for (const auto& [scope, ops] : opsByScope)
      for (const std::string& op : ops) convs += op.find("Conv") != std::string::npos;
    QCOMPARE(convs, 20);
  }

  // Export, import the export again and run it: PyTorch's outputs within the tolerance, and the
  // same scopes. Both the imported graph and its fast_run optimization (fused ops written as the
  // chains they stand for) go through.
  void testExportRoundTrip_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<Mode>("mode");
    for (const std::string& name : fixtureNames()) {
      QTest::newRow((name + " imported").c_str()) << QString::fromStdString(name) << Mode::None;
      QTest::newRow((name + " fast_run").c_str()) << QString::fromStdString(name) << Mode::FastRun;
    }
  }
  void testExportRoundTrip() {
    QFETCH(QString, name);
    QFETCH(Mode, mode);
    const fx::Fixture f = fx::loadFixture(modelPath(name));
    if (!f.exportable) QSKIP(("the sidecar says export does not apply: " + f.note).c_str());
    std::set<std::string> scopesBefore, scopesAfter;
    OnnxImportResult again;
    try {
      const OnnxImportResult imported = loadOnnx(f.onnxPath);
      const FunctionGraph* graph = imported.document.original.get();
      std::optional<Function> optimized;
      if (mode != Mode::None) {
        std::vector<VarPtr> inputs;
        for (const VarPtr& in : graph->inputs())
          if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
        CompileOptions options;
        options.mode = mode;
        optimized.emplace(compile(inputs, graph->outputs(), {}, options));
        graph = &optimized->graph();
      }
      for (const Apply* node : graph->nodes()) scopesBefore.insert(node->scope());
      again = readOnnx(writeOnnx(*graph), f.name + " (exported)");
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY(again.opaqueOps.empty());
    for (const Apply* node : again.document.original->nodes()) scopesAfter.insert(node->scope());
    // A node the exporter writes as several ONNX nodes comes back as several in the same scope.
    for (const std::string& scope : scopesBefore)
      QVERIFY2(scopesAfter.count(scope), ("scope '" + scope + "' lost in the round trip").c_str());
    std::vector<Tensor> outputs;
    try {
      outputs = fx::runFixture(*again.document.original, f, Mode::None);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    const auto diff = fx::compareOutputs(outputs, f.expected, f.rtol, f.atol);
    QVERIFY2(!diff, diff ? (f.name + " after export: " + *diff).c_str() : "");
  }
};

TSCOPE_TEST_MAIN(TestOnnxModels)
#include "tst_onnx_models.moc"

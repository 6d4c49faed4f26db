// The PyTorch-exported models of tests/data/onnx/models/ (written by make_model_fixtures.py: an
// MLP, LeNet-5, a reduced-width ResNet-18, a 2-layer LSTM and a transformer encoder layer, some at
// opsets 9 and 17 too). Each model imports without opaque ops; runs in modes none and fast_run
// within its sidecar's tolerance of PyTorch's outputs; has static types that agree with ONNX's own
// shape inference, run here through ONNX's C++ API independently of the importer; has symbolic
// shapes (each op's inferShape, through the ShapeFeature) that evaluate to the shapes the graph
// computes and agree with ONNX's (the single-op models of tests/data/onnx/ops/ too); carries
// PyTorch's module paths as scopes; and survives a round trip through export (as imported and
// after fast_run).
#include "engine/graph/config.h"
#include "engine/io/onnx/onnx_convert.h"
#include "engine/io/onnx/onnx_export.h"
#include "engine/io/onnx/onnx_import.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/shape_vector.h"
#include "engine/rewrite/shape_feature.h"
#include "onnx_fixture.h"
#include "test_main.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <optional>
#include <set>
#include <sstream>

using namespace tscope::engine;
using namespace tscope::engine::io;
namespace fx = tscope::test::onnx;

Q_DECLARE_METATYPE(tscope::engine::Mode)

namespace {

const std::filesystem::path kModelsDir = TSCOPE_TEST_DATA_DIR "/onnx/models";
const std::filesystem::path kOpsDir = TSCOPE_TEST_DATA_DIR "/onnx/ops";

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

onnx::ModelProto readModel(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str()))
    throw std::runtime_error(path.string() + ": not a ModelProto");
  return model;
}

// The model as ONNX's own shape inference annotates it: strict (a node it cannot infer is an
// error), with type checks and data propagation (so shapes computed by Shape/Gather/Concat chains
// are known), as a reference that does not go through the importer.
onnx::ModelProto inferredModel(const std::filesystem::path& path) {
  onnx::ModelProto model = readModel(path);
  onnx::shape_inference::InferShapes(
      model, onnx::OpSchemaRegistry::Instance(),
      onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1,
                                  /*data_prop=*/true));
  return model;
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
  const std::optional<DType> dtype =
      tscope::engine::io::onnx_import::dtypeFromOnnx(onnxType.tensor_type().elem_type());
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

// --- Symbolic shapes against ONNX and the run ----------------------------------------------------
//
// Note [Inferred shapes against ONNX and the run]: for every output of every node of the imported
// graph, the test builds two shape expressions over the graph's inputs: the op's own inferShape
// applied to the ShapeFeature's shapes of the node's inputs (raw: a dimension the static type
// already knows is still the op's expression, so ops are checked on static models too), and the
// ShapeFeature's shapeOf (what rewrites use: static sizes as constants, inferred expressions
// elsewhere). One Function (mode none, so nothing rewrites the expressions into reads of the
// values) computes the variables and both expressions from the fixture's inputs; each expression
// must evaluate to the shape of the computed value, and that shape must have every dimension ONNX
// knows: a number, or a symbol of the graph inputs ("batch") bound by the fixture's input shapes.
// An op without inferShape (the ShapeFeature's fallback reads the value's shape at run time, which
// would agree trivially), or whose inferShape throws or gives a malformed shape, disagrees too.
// Shapes only: the values themselves are testRun's. The work happens on a clone of the imported
// graph, so the feature never touches the original.

// The ONNX model with ONNX's own shapes for its values (Note [Types against ONNX's inference]),
// the declared output shapes removed first so they are inferred, not copied; nullopt for opsets
// newer than ONNX 1.12's inference knows.
std::optional<onnx::ModelProto> onnxShapes(const std::filesystem::path& path) {
  onnx::ModelProto model = readModel(path);
  for (const auto& id : model.opset_import())
    if ((id.domain().empty() || id.domain() == "ai.onnx") && id.version() > 17) return std::nullopt;
  for (auto& out : *model.mutable_graph()->mutable_output())
    out.mutable_type()->mutable_tensor_type()->clear_shape();
  onnx::shape_inference::InferShapes(
      model, onnx::OpSchemaRegistry::Instance(),
      onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true));
  return model;
}

// A shape whose unknown dimensions are nullopt, written "(2, ?, 8)".
using PartialShape = std::vector<std::optional<std::int64_t>>;

std::string partialText(const PartialShape& shape) {
  std::string out = "(";
  for (std::size_t d = 0; d < shape.size(); ++d)
    out += (d ? ", " : "") + (shape[d] ? std::to_string(*shape[d]) : std::string("?"));
  return out + ")";
}

// ONNX's shape of every value it typed, by name, as numbers: dim_value, or the fixture's size for a
// symbol of the graph inputs; other dimensions unknown.
std::map<std::string, PartialShape> onnxValueShapes(const onnx::ModelProto& model,
                                                    const fx::Fixture& fixture) {
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  std::map<std::string, std::int64_t> symbols;
  std::size_t i = 0;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    if (i < fixture.inputs.size()) {
      const Tensor& value = fixture.inputs[i];
      const auto& shape = in.type().tensor_type().shape();
      for (int d = 0; d < shape.dim_size() && d < value.ndim(); ++d)
        if (shape.dim(d).has_dim_param())
          symbols[shape.dim(d).dim_param()] = value.shape()[static_cast<std::size_t>(d)];
    }
    ++i;
  }
  std::map<std::string, PartialShape> out;
  const auto add = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().tensor_type().has_shape()) return;
    PartialShape shape;
    for (const auto& dim : vi.type().tensor_type().shape().dim()) {
      if (dim.has_dim_value())
        shape.push_back(dim.dim_value());
      else if (dim.has_dim_param() && symbols.count(dim.dim_param()))
        shape.push_back(symbols.at(dim.dim_param()));
      else
        shape.push_back(std::nullopt);
    }
    out[vi.name()] = std::move(shape);
  };
  for (const auto& vi : g.value_info()) add(vi);
  for (const auto& vi : g.output()) add(vi);
  return out;
}

// Engine warnings collected for a scope (the ShapeFeature warns when an inferShape throws).
class WarningCapture {
 public:
  WarningCapture()
      : m_previous(setWarningHandler([this](const std::string& m) { messages.push_back(m); })) {}
  ~WarningCapture() { setWarningHandler(m_previous); }
  WarningCapture(const WarningCapture&) = delete;
  WarningCapture& operator=(const WarningCapture&) = delete;
  std::vector<std::string> messages;

 private:
  WarningHandler m_previous;
};

// Ops whose output shapes depend on input values, so that they have no inferShape.
const std::set<std::string> kValueDependentShapes{"NonZero"};

// One node output and its two shape expressions (Note [Inferred shapes against ONNX and the run]).
struct ShapeProbe {
  VarPtr var;
  std::string what;  // "'name' (Op)", or the node's id and scope for an unnamed output
  VarPtr inferred;   // MakeVector of the op's inferShape dims; null when it gave none
  VarPtr feature;    // MakeVector of ShapeFeature::shapeOf(var)
};

std::vector<std::int64_t> intsOf(const Tensor& t) {
  std::vector<std::int64_t> out;
  for (double v : t.toDoubles()) out.push_back(static_cast<std::int64_t>(v));
  return out;
}

// The shapes of every node output of `imported` against inferShape, the ShapeFeature and ONNX;
// returns the disagreements (empty when all agree) and counts the values ONNX has a shape for.
std::vector<std::string> shapeDisagreements(const FunctionGraph& imported, const fx::Fixture& f,
                                            const std::map<std::string, PartialShape>& onnxShapes,
                                            int& comparedWithOnnx) {
  std::vector<std::string> problems;
  const std::unique_ptr<FunctionGraph> graph = imported.clone();
  auto shapes = std::make_shared<ShapeFeature>();
  graph->attachFeature(shapes);
  std::vector<ShapeProbe> probes;
  {
    WarningCapture warnings;
    for (Apply* node : graph->toposort()) {
      std::vector<ShapeExpr> inputShapes;
      for (const VarPtr& in : node->inputs()) inputShapes.push_back(shapes->shapeOf(in));
      std::vector<ShapeExpr> raw;
      std::string rawError;
      try {
        raw = node->op().inferShape(*node, inputShapes);
        if (static_cast<int>(raw.size()) != node->nOutputs())
          rawError = "inferShape gave " + std::to_string(raw.size()) + " shapes for " +
                     std::to_string(node->nOutputs()) + " outputs";
      } catch (const NotImplementedError&) {
        rawError = "no inferShape";
      } catch (const std::exception& e) {
        rawError = std::string("inferShape failed: ") + e.what();
      }
      for (int o = 0; o < node->nOutputs(); ++o) {
        const VarPtr var = node->output(o);
        const std::string name = !var->name().empty()
                                     ? "'" + var->name() + "'"
                                     : "output " + std::to_string(o) + " of node " +
                                           std::to_string(node->id()) + " in scope '" +
                                           node->scope() + "'";
        ShapeProbe p{var, name + " (" + node->op().str() + ")", nullptr, nullptr};
        const std::string where = p.what + ": ";
        const int ndim = p.var->type().ndim();
        if (!rawError.empty()) {
          // An op whose output shape depends on its input's values (NonZero's column count) has
          // no inferShape by design; its ShapeFeature shape, read at run time, is still compared.
          if (!(rawError == "no inferShape" && kValueDependentShapes.count(node->op().name())))
            problems.push_back(where + rawError);
        } else {
          const ShapeExpr& dims = raw[static_cast<std::size_t>(o)];
          const bool wellFormed =
              static_cast<int>(dims.size()) == ndim &&
              std::all_of(dims.begin(), dims.end(), [](const VarPtr& d) {
                return d && d->type().ndim() == 0 && isInteger(d->type().dtype());
              });
          if (!wellFormed)
            problems.push_back(where + "inferShape gave no 0-d integer per dimension of " +
                               p.var->type().str());
          else if (ndim > 0)
            p.inferred = makeVector(dims, DType::Int64);
        }
        if (ndim > 0) p.feature = makeVector(shapes->shapeOf(p.var), DType::Int64);
        probes.push_back(std::move(p));
      }
    }
    for (const std::string& w : warnings.messages) problems.push_back(w);
  }

  if (probes.empty()) return problems;  // no node: the outputs are inputs or constants
  std::vector<VarPtr> inputs;
  for (const VarPtr& in : graph->inputs())
    if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
  std::vector<VarPtr> outputs;
  for (const ShapeProbe& p : probes) outputs.push_back(p.var);
  for (const ShapeProbe& p : probes)
    for (const VarPtr& e : {p.inferred, p.feature})
      if (e) outputs.push_back(e);
  std::vector<Tensor> values = compile(inputs, outputs)(f.inputs);

  std::size_t next = probes.size();
  for (std::size_t k = 0; k < probes.size(); ++k) {
    const ShapeProbe& p = probes[k];
    const std::vector<std::int64_t>& computed = values[k].shape();
    std::string report = p.what + ": computed " + shapeToString(computed);
    bool bad = false;
    for (const auto& [expr, label] :
         {std::pair{p.inferred, "inferShape"}, std::pair{p.feature, "ShapeFeature"}}) {
      if (!expr) continue;
      const std::vector<std::int64_t> shape = intsOf(values[next++]);
      report += std::string(", ") + label + " " + shapeToString(shape);
      bad |= shape != computed;
    }
    const auto onnx = onnxShapes.find(p.var->name());
    if (onnx != onnxShapes.end()) {
      ++comparedWithOnnx;
      const PartialShape& expected = onnx->second;
      report += ", ONNX " + partialText(expected);
      bad |= expected.size() != computed.size();
      for (std::size_t d = 0; d < expected.size() && d < computed.size(); ++d)
        bad |= expected[d] && *expected[d] != computed[d];
    }
    if (bad) problems.push_back(report);
  }
  return problems;
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
            isFloat(
                tscope::engine::io::onnx_import::dtypeFromOnnx(t->second->tensor_type().elem_type())
                    .value_or(DType::Int64)))
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

  // Every node output's inferShape and ShapeFeature shape evaluate to the shape the graph computes,
  // which has the dimensions ONNX's shape inference knows (Note [Inferred shapes against ONNX and
  // the run]); over the models and the single-op models ("ops/NAME").
  void testInferShapeAgreesWithOnnx_data() {
    QTest::addColumn<QString>("path");
    for (const std::string& name : fixtureNames())
      QTest::newRow(name.c_str()) << QString::fromStdString(
          modelPath(QString::fromStdString(name)).string());
    for (const auto& p : fx::fixturePaths(kOpsDir))
      QTest::newRow(("ops/" + p.stem().string()).c_str()) << QString::fromStdString(p.string());
  }
  void testInferShapeAgreesWithOnnx() {
    QFETCH(QString, path);
    const bool isModel = std::filesystem::path(path.toStdString()).parent_path() == kModelsDir;
    std::vector<std::string> problems;
    int comparedWithOnnx = 0;
    try {
      const fx::Fixture f = fx::loadFixture(path.toStdString());
      const std::optional<onnx::ModelProto> model = onnxShapes(f.onnxPath);
      if (isModel && !model) QFAIL("a model fixture beyond ONNX 1.12's shape inference");
      const auto onnxShapesByName =
          model ? onnxValueShapes(*model, f) : std::map<std::string, PartialShape>{};
      const OnnxImportResult imported = loadOnnx(f.onnxPath);
      problems =
          shapeDisagreements(*imported.document.original, f, onnxShapesByName, comparedWithOnnx);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    // QTest cuts long messages: each disagreement on its own line, then the first in the failure.
    for (std::size_t i = 0; i < problems.size() && i < 20; ++i) qWarning("%s", problems[i].c_str());
    QVERIFY2(problems.empty(), (std::to_string(problems.size()) + " disagreements, the first: " +
                                (problems.empty() ? std::string() : problems[0]))
                                   .c_str());
    if (isModel) QVERIFY2(comparedWithOnnx > 0, "no imported value has a shape from ONNX");
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

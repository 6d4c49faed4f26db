// The importer's core (engine/io/onnx/onnx_import.cpp): initializers as shared variables or
// constants, inputs with symbolic dims, scopes and creation sites from node names, opaque ops
// with their attributes, node order, constant folding on demand, and a clear OnnxError for every
// malformed model (truncated, not protobuf, JSON, no graph, missing value, cycle, duplicate
// names, unsupported opsets, bad initializers, external data).
#include "engine/compile/function.h"
#include "engine/graph/apply.h"
#include "engine/io/onnx/onnx_convert.h"
#include "engine/io/onnx/onnx_import.h"
#include "onnx_builder.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <fstream>

using namespace tscope::engine;
using namespace tscope::engine::io;
using namespace tscope::engine::session;
using namespace tscope::test::onnx;

namespace {

// x (2, ?) -> Relu -> Mul by an initializer w (float: shared) -> Reshape by an int64 initializer
// (constant) -> y.
ModelBuilder smallModel(int opset = 13) {
  ModelBuilder m(opset);
  m.input("x", Tensor::fromDoubles(DType::Float32, {2, 3}, {-1, 2, -3, 4, -5, 6}),
          {2, kUnknownDim});
  m.initializer("w", Tensor::fromDoubles(DType::Float32, {1, 3}, {1, 2, 3}));
  m.initializer("shape", Tensor::fromDoubles(DType::Int64, {1}, {-1}));
  m.node("Relu", {"x"}, {"r"}).set_name("/block/act/Relu");
  m.node("Mul", {"r", "w"}, {"m"}).set_name("/block/Mul");
  m.node("Reshape", {"m", "shape"}, {"y"}).set_name("Reshape_7");
  m.output("y", DType::Float32);
  return m;
}

const Variable* findVar(const FunctionGraph& g, const std::string& name) {
  for (const Variable* v : g.variables())
    if (v->name() == name) return v;
  return nullptr;
}

std::string refusal(const std::string& bytes) {
  try {
    readOnnx(bytes, "bad.onnx");
  } catch (const OnnxError& e) {
    return e.what();
  }
  return "(imported)";
}

}  // namespace

class TestOnnxImport : public QObject {
  Q_OBJECT

 private slots:
  void importsNamesKindsScopesAndSites() {
    OnnxImportResult r = readOnnx(smallModel().bytes(), "small.onnx");
    const FunctionGraph& g = *r.document.original;
    QCOMPARE(r.opset, 13);
    QVERIFY(r.opaqueOps.empty());
    const Variable* x = findVar(g, "x");
    QVERIFY(x && x->kind() == Variable::Kind::Regular);
    QCOMPARE(x->type().str(), std::string("TensorType(float32, (2, ?))"));
    const Variable* w = findVar(g, "w");
    QVERIFY(w && w->kind() == Variable::Kind::Shared);
    // The int64 "shape" initializer is a constant (the Reshape converter may read it and build its
    // own shape constant): no integer value is ever a shared variable.
    for (const Variable* v : g.variables())
      QVERIFY(v->kind() != Variable::Kind::Shared || isFloat(v->type().dtype()));
    const Variable* r1 = findVar(g, "r");
    QVERIFY(r1 && r1->owner());
    QCOMPARE(r1->owner()->scope(), std::string("block/act"));
    QCOMPARE(std::string(r1->owner()->site().file), std::string("small.onnx"));
    QCOMPARE(r1->owner()->site().line, 1u);
    QCOMPARE(std::string(r1->owner()->site().function), std::string("/block/act/Relu"));
    QCOMPARE(findVar(g, "m")->owner()->scope(), std::string("block"));
    QCOMPARE(findVar(g, "y")->owner()->scope(), std::string());
    QCOMPARE(g.outputs().at(0)->name(), std::string("y"));

    RunInputs in;
    in.byName["x"] = Tensor::fromDoubles(DType::Float32, {2, 3}, {-1, 2, -3, 4, -5, 6});
    for (Mode mode : {Mode::None, Mode::FastRun}) {
      in.mode = mode;
      Tensor y = runGraph(g, in).outputs.at(0);
      QCOMPARE(y.shape(), (Shape{6}));
      QCOMPARE(y.toDoubles(), (std::vector<double>{0, 4, 0, 4, 0, 18}));
    }
  }

  void nodesOutOfOrderAreSorted() {
    ModelBuilder m(13);
    m.input("x", Tensor::fromDoubles(DType::Float32, {2}, {1, -2}));
    m.node("Neg", {"a"}, {"y"});
    m.node("Abs", {"x"}, {"a"});
    m.output("y", DType::Float32);
    OnnxImportResult r = readOnnx(m.bytes(), "unordered.onnx");
    RunInputs in;
    in.byName["x"] = Tensor::fromDoubles(DType::Float32, {2}, {1, -2});
    QCOMPARE(runGraph(*r.document.original, in).outputs.at(0).toDoubles(),
             (std::vector<double>{-1, -2}));
  }

  void unsupportedOpLoadsOpaque() {
    ModelBuilder m(15);
    m.input("x", Tensor::zeros(DType::Float32, {2, 3}));
    auto& n = m.node("Bernoulli", {"x"}, {"y"});  // shape inference types it; no converter
    attrFloat(n, "seed", 1);
    auto& custom = m.node("FancyOp", {"y"}, {"z"});
    custom.set_domain("com.example");
    attrString(custom, "flavour", "strawberry");
    m.output("y", DType::Float32);
    // FancyOp's output has no inferred type, so it cannot load even as an opaque node.
    QVERIFY(refusal(m.bytes()).find("no tensor type for its output 'z'") != std::string::npos);

    ModelBuilder ok(15);
    ok.input("x", Tensor::zeros(DType::Float32, {2, 3}));
    attrFloat(ok.node("Bernoulli", {"x"}, {"y"}), "seed", 1);
    ok.output("y", DType::Float32);
    OnnxImportResult r = readOnnx(ok.bytes(), "opaque.onnx");
    QCOMPARE(r.opaqueOps, (std::vector<std::string>{"Bernoulli"}));
    const Apply* node = findVar(*r.document.original, "y")->owner();
    QVERIFY(node);
    QVERIFY(!node->op().isExecutable());
    QCOMPARE(node->op().name(), std::string("Bernoulli"));
    QCOMPARE(node->op().props()["attributes"]["seed"].get<double>(), 1.0);
    QCOMPARE(node->outputRef(0).type().str(), std::string("TensorType(float32, (2, 3))"));
    RunInputs in;
    in.byName["x"] = Tensor::zeros(DType::Float32, {2, 3});
    try {
      runGraph(*r.document.original, in);
      QFAIL("running an opaque op must fail");
    } catch (const std::exception& e) {
      const std::string what = e.what();
      QVERIFY2(what.find("Bernoulli") != std::string::npos, what.c_str());
    }
    OnnxImportOptions strict;
    strict.allowOpaque = false;
    try {
      readOnnx(ok.bytes(), "opaque.onnx", strict);
      QFAIL("allowOpaque = false must refuse");
    } catch (const OnnxError& e) {
      QVERIFY(std::string(e.what()).find("has no Tensorscope converter") != std::string::npos);
      QVERIFY(std::string(e.what()).find("graph.node[0]") != std::string::npos);
    }
  }

  void badFilesAreRefusedClearly() {
    const std::string good = smallModel().bytes();
    QVERIFY(refusal("").find("the file is empty") != std::string::npos);
    QVERIFY(refusal("{\"format\": \"tensorscope-graph\"}").find("found JSON") != std::string::npos);
    QVERIFY(refusal(std::string("\xff\xff\xff\xff\xff\xff", 6)).find("do not parse") !=
            std::string::npos);
    // Every truncation is refused or imports; none crashes.
    for (std::size_t n = 1; n < good.size(); n += 7) {
      try {
        readOnnx(std::string_view(good).substr(0, n), "cut.onnx");
      } catch (const OnnxError&) {
      }
    }
    QVERIFY(refusal(good.substr(0, good.size() / 2)).find("bad.onnx") == 0);
  }

  void malformedGraphsNameTheProblem() {
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {2}));
      m.node("Add", {"x", "missing_w"}, {"y"});
      m.output("y", DType::Float32);
      checkRefused(
          m,
          "graph.node[0] '/Add' (Add): the input 'missing_w' is not a graph input, an initializer");
    }
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {2}));
      m.node("Add", {"x", "b"}, {"a"});
      m.node("Neg", {"a"}, {"b"});
      m.output("a", DType::Float32);
      checkRefused(m, "is on a cycle");
    }
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {2}));
      m.node("Neg", {"x"}, {"y"});
      m.node("Abs", {"x"}, {"y"});
      m.output("y", DType::Float32);
      checkRefused(m, "the output 'y' is defined twice");
    }
    {
      ModelBuilder m(5);
      m.input("x", Tensor::zeros(DType::Float32, {2}));
      m.node("Neg", {"x"}, {"y"});
      m.output("y", DType::Float32);
      checkRefused(m,
                   "expected a default-domain opset from 6 to 18 (or older, for ops unchanged "
                   "since), found 5, and Neg changed at opset 6");
    }
    {  // Note [Opsets before 6]: Not has its opset-1 form at opset 6, so an opset-1 model reads.
      ModelBuilder m(1);
      m.input("x", Tensor::fromDoubles(DType::Bool, {3}, {1, 0, 1}));
      m.node("Not", {"x"}, {"y"});
      m.output("y", DType::Bool);
      checkModel(m, {Tensor::fromDoubles(DType::Bool, {3}, {0, 1, 0})});
    }
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {2}));
      m.node("Neg", {"x"}, {"y"});
      m.output("nowhere", DType::Float32);
      checkRefused(m, "graph.output[0] 'nowhere': no node, input or initializer defines it");
    }
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {2}));
      m.initializer("w", Tensor::zeros(DType::Float32, {3}));
      m.node("Add", {"x", "w"}, {"y"});
      m.output("y", DType::Float32);
      // Broadcasting (2) with (3) is an error the converter reports at the node.
      checkRefused(m, "graph.node[0] '/Add' (Add)");
    }
  }

  // Note [Guarding ONNX shape inference]: conv-like nodes with inconsistent ranks or attribute
  // lengths are refused before ONNX's own inference (which would read out of bounds) sees them.
  void convLikeNodesAreCheckedBeforeOnnxInference() {
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {1, 2, 6, 5}));
      m.initializer("w", Tensor::zeros(DType::Float32, {4, 2, 2, 3, 2}));
      m.node("Conv", {"x", "w"}, {"y"});
      m.output("y", DType::Float32);
      checkRefused(m, "expected the input and the weight to have the same rank, found 4 and 5");
    }
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {1, 2, 6, 5}));
      m.initializer("w", Tensor::zeros(DType::Float32, {3}));
      m.node("ConvTranspose", {"x", "w"}, {"y"});
      m.output("y", DType::Float32);
      checkRefused(m, "expected a weight of rank >= 3, found rank 1");
    }
    {
      ModelBuilder m(13);
      m.input("x", Tensor::zeros(DType::Float32, {1, 2, 6, 5}));
      attrInts(m.node("MaxPool", {"x"}, {"y"}), "kernel_shape", {2, 2, 2});
      m.output("y", DType::Float32);
      checkRefused(m, "attribute 'kernel_shape': expected 2 values for 2 spatial axes, found 3");
    }
  }

  void badInitializersAreRefused() {
    ::onnx::ModelProto model;
    model.ParseFromString(smallModel().bytes());
    auto* init = model.mutable_graph()->mutable_initializer(0);
    init->set_raw_data(init->raw_data().substr(0, 5));
    QVERIFY2(
        refusal(model.SerializeAsString()).find("graph.initializer[0] 'w': raw_data has 5 bytes") !=
            std::string::npos,
        refusal(model.SerializeAsString()).c_str());
    init->set_data_type(::onnx::TensorProto::STRING);
    QVERIFY(refusal(model.SerializeAsString()).find("element type STRING is not supported") !=
            std::string::npos);
  }

  void externalDataResolvesNextToTheModel() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    ::onnx::ModelProto model;
    model.ParseFromString(smallModel().bytes());
    auto* init = model.mutable_graph()->mutable_initializer(0);
    const std::string raw = init->raw_data();
    init->clear_raw_data();
    init->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* loc = init->add_external_data();
    loc->set_key("location");
    loc->set_value("weights.bin");
    auto* off = init->add_external_data();
    off->set_key("offset");
    off->set_value("4");
    const std::string base = dir.path().toStdString();
    std::ofstream(base + "/weights.bin", std::ios::binary) << std::string("pad!") << raw;
    std::ofstream(base + "/model.onnx", std::ios::binary) << model.SerializeAsString();
    OnnxImportResult r = loadOnnx(base + "/model.onnx");
    const Variable* w = findVar(*r.document.original, "w");
    QVERIFY(w);
    QCOMPARE(static_cast<const SharedVariable*>(w)->value().toDoubles(),
             (std::vector<double>{1, 2, 3}));
    QVERIFY(refusal(model.SerializeAsString()).find("was not read from a file") !=
            std::string::npos);
    loc->set_value("../escape.bin");
    std::ofstream(base + "/model.onnx", std::ios::binary | std::ios::trunc)
        << model.SerializeAsString();
    try {
      loadOnnx(base + "/model.onnx");
      QFAIL("a location outside the model's directory must be refused");
    } catch (const OnnxError& e) {
      QVERIFY(std::string(e.what()).find("leaves the model's directory") != std::string::npos);
    }
  }

  void opsetBeyondTheLibrarySkipsTheChecker() {
    OnnxImportResult r = readOnnx(smallModel(18).bytes(), "v18.onnx");
    QCOMPARE(r.opset, 18);
    QVERIFY(!r.warnings.empty());
    QVERIFY(r.warnings.front().find("shape inference were skipped") != std::string::npos);
  }

  void invalidUtf8NamesStaySafe() {
    ModelBuilder m(13);
    m.input("x\xff", Tensor::zeros(DType::Float32, {2}));
    m.node("Neg", {"x\xff"}, {"y"}).set_name("/sc\xfe/Neg");
    m.output("y", DType::Float32);
    OnnxImportResult r = readOnnx(m.bytes(), "utf.onnx");
    QVERIFY(findVar(*r.document.original, "x\\xff"));
    QCOMPARE(findVar(*r.document.original, "y")->owner()->scope(), std::string("sc\\xfe"));
    (void)writeTsg(r.document);  // JSON-safe
  }

  // docs/onnx.md lists every op type the importer converts, so the page cannot fall behind.
  void docsListEveryConverter() {
    std::ifstream in(TSCOPE_SOURCE_DIR "/docs/onnx.md");
    QVERIFY(in.good());
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const std::string& op : onnx_import::defaultConverters().opTypes())
      QVERIFY2(doc.find("`" + op + "`") != std::string::npos,
               ("docs/onnx.md does not list " + op).c_str());
  }

  void sniffing() {
    QVERIFY(looksLikeOnnx(smallModel().bytes()));
    QVERIFY(!looksLikeOnnx("{\"format\": 1}"));
    QVERIFY(!looksLikeOnnx(""));
  }
};

TSCOPE_TEST_MAIN(TestOnnxImport)
#include "tst_onnx_import.moc"

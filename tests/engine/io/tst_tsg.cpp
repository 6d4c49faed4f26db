// The .tsg file: exact round trips, atomic saves, opaque ops, and a refusal with a JSON path for
// every class of malformed input.

#include "engine/graph/errors.h"
#include "engine/graph/history.h"
#include "engine/graph/op.h"
#include "engine/graph/rewrite_recorder.h"
#include "engine/graph/traversal.h"
#include "engine/io/tsg.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/elemwise/elemwise.h"
#include "engine/ops/shape/dimshuffle.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <limits>

using namespace tscope::engine;
using nlohmann::json;

namespace {

// A graph with every kind of variable, test values, scopes, a view, an update and odd floats.
io::TsgDocument makeDocument() {
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, 3}), "x");
  x->setTestValue(Tensor::fromDoubles(DType::Float32, {2, 3},
                                      {1.5, -0.0, std::numeric_limits<double>::quiet_NaN(),
                                       std::numeric_limits<double>::infinity(), 1e-40, 3}));
  auto W =
      SharedVariable::create(Tensor::fromDoubles(DType::Float64, {3, 2}, {1, 2, 3, 4, 5, 6}), "W");
  auto k = Constant::create(Tensor::fromDoubles(DType::Int64, {2}, {-7, 1LL << 40}));
  VarPtr y;
  {
    NameScope outer("model");
    NameScope inner("layer1.0");
    y = elemwise(ScalarOp::Add, {dot(cast(x, DType::Float64), W), k});
  }
  y->setName("y");
  VarPtr t = transpose(y);
  VarPtr step = elemwise(
      ScalarOp::Sub,
      {W, elemwise(ScalarOp::Mul, {W, Constant::create(Tensor::scalar(DType::Float64, 0.1))})});
  io::TsgDocument doc;
  doc.original =
      std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, W}, std::vector<VarPtr>{y, t, step});
  doc.original->setUpdate(2, 1);
  // An "optimized" graph edited through replace, with the log of the edit.
  doc.optimized = doc.original->clone();
  auto recorder = std::make_shared<RewriteRecorder>();
  doc.optimized->attachFeature(recorder);
  recorder->setPhase("canonicalize");
  Variable* yOpt = doc.optimized->variableById(doc.original->outputs()[0]->id());
  VarPtr yPtr = yOpt->owner()->output(0);
  doc.optimized->replace(
      yPtr, elemwise(ScalarOp::Add, {yPtr->owner()->input(1), yPtr->owner()->input(0)}),
      "commute_add");
  doc.rewrites = recorder->records();
  doc.profiles = json::array({{{"runs", 3}, {"note", "kept verbatim"}}});
  return doc;
}

// For every node in order: op, input ids, output ids; for every variable: id, kind, type, name,
// scope, value bytes.
std::string structure(const FunctionGraph& fg) {
  std::string s;
  for (const Apply* a : fg.toposort()) {
    s += a->op().str() + "#" + std::to_string(a->id()) + "@" + a->scope() + "(";
    for (const auto& in : a->inputs()) s += std::to_string(in->id()) + ",";
    s += ")->";
    for (int o = 0; o < a->nOutputs(); ++o)
      s += std::to_string(a->outputRef(o).id()) + a->outputRef(o).type().str();
    s += "\n";
  }
  for (const auto& in : fg.inputs()) s += "in " + std::to_string(in->id()) + in->name() + "\n";
  for (const auto& out : fg.outputs()) s += "out " + std::to_string(out->id()) + out->name() + "\n";
  return s;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

class TestTsg : public QObject {
  Q_OBJECT

 private slots:
  void testRoundTripIsExact() {
    io::TsgDocument doc = makeDocument();
    std::string first = io::writeTsg(doc);
    io::TsgDocument back = io::readTsg(first, "first");
    QCOMPARE(io::writeTsg(back), first);  // byte-identical: same ids, order, values
    QCOMPARE(structure(*back.original), structure(*doc.original));
    QVERIFY(back.optimized);
    QCOMPARE(structure(*back.optimized), structure(*doc.optimized));
    QCOMPARE(back.original->nextId(), doc.original->nextId());
    QCOMPARE(back.original->updateMapping(), doc.original->updateMapping());
    QCOMPARE(back.rewrites, doc.rewrites);
    QCOMPARE(back.profiles, doc.profiles);
    back.original->checkIntegrity();
    back.optimized->checkIntegrity();
  }

  void testTensorsAreBitExact() {
    io::TsgDocument doc = makeDocument();
    io::TsgDocument back = io::readTsg(io::writeTsg(doc));
    const Variable& x = *back.original->inputs()[0];
    QVERIFY(x.testValue());
    QVERIFY(x.testValue()->bitwiseEqual(*doc.original->inputs()[0]->testValue()));
    auto* W = dynamic_cast<SharedVariable*>(back.original->inputs()[1].get());
    QVERIFY(W);
    QVERIFY(
        W->value().bitwiseEqual(dynamic_cast<SharedVariable&>(*doc.original->inputs()[1]).value()));
    int constants = 0;
    for (const Variable* v : back.original->variables())
      if (auto* c = dynamic_cast<const Constant*>(v)) {
        auto* orig = dynamic_cast<const Constant*>(doc.original->variableById(v->id()));
        QVERIFY(orig);
        QVERIFY(c->value().bitwiseEqual(orig->value()));
        ++constants;
      }
    QCOMPARE(constants, 2);
  }

  void testMetadataSurvives() {
    io::TsgDocument doc = makeDocument();
    io::TsgDocument back = io::readTsg(io::writeTsg(doc));
    const Variable& y = *back.original->outputs()[0];
    QCOMPARE(QString::fromStdString(y.name()), QString("y"));
    QCOMPARE(QString::fromStdString(y.owner()->scope()), QString("model/layer1.0"));
    QVERIFY(QString::fromStdString(y.owner()->site().file).endsWith("tst_tsg.cpp"));
    QVERIFY(y.owner()->site().line > 0);
    QCOMPARE(y.owner()->site(), doc.original->outputs()[0]->owner()->site());
  }

  void testSaveIsAtomic() {
    QTemporaryDir dir;
    std::filesystem::path path = dir.filePath("g.tsg").toStdString();
    io::TsgDocument doc = makeDocument();
    io::saveTsg(doc, path);
    std::string saved = readFile(path);
    QCOMPARE(saved, io::writeTsg(doc));
    // A document that cannot be written leaves the old file as it was and no temporary behind.
    io::TsgDocument empty;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, io::saveTsg(empty, path));
    QCOMPARE(readFile(path), saved);
    // An unwritable target directory: a clear error naming the path.
    try {
      io::saveTsg(doc, std::filesystem::path(dir.path().toStdString()) / "missing" / "g.tsg");
      QFAIL("expected an error");
    } catch (const std::runtime_error& e) {
      QVERIFY(QString(e.what()).contains("missing/g.tsg"));
    }
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path().toStdString())) {
      (void)e;
      ++files;
    }
    QCOMPARE(files, 1);
  }

  void testUnknownOpLoadsAsOpaque() {
    const std::string written = io::writeTsg(makeDocument());
    json j = json::parse(io::tsgJson(written));
    auto& applies = j["graphs"]["original"]["applies"];
    for (auto& a : applies)
      if (a["op"] == "DimShuffle") {
        a["op"] = "FancyVendorOp";
        a["props"] = {{"alpha", 0.25}, {"mode", "fast"}};
      }
    io::TsgDocument doc = io::readTsg(io::withTsgJson(written, j.dump()), "opaque");
    int opaque = 0;
    for (const Apply* a : doc.original->nodes())
      if (!a->op().isExecutable()) {
        ++opaque;
        QCOMPARE(QString::fromStdString(a->op().name()), QString("FancyVendorOp"));
        QCOMPARE(a->op().props()["mode"], json("fast"));
        QVERIFY(QString::fromStdString(a->op().str()).contains("opaque"));
      }
    QCOMPARE(opaque, 1);
    // And it writes back unchanged.
    QCOMPARE(json::parse(io::tsgJson(io::writeTsg(doc)))["graphs"]["original"]["applies"], applies);
  }

  void testMissingFile() {
    try {
      io::loadTsg("/nonexistent/dir/graph.tsg");
      QFAIL("expected TsgError");
    } catch (const io::TsgError& e) {
      QVERIFY(QString(e.what()).contains("/nonexistent/dir/graph.tsg"));
      QVERIFY(QString(e.what()).contains("cannot open"));
    }
  }

  void testExampleFixtureLoads() {
    std::filesystem::path path =
        std::filesystem::path(TSCOPE_SOURCE_DIR) / "examples/graphs/mlp_forward.tsg";
    io::TsgDocument doc = io::loadTsg(path);
    doc.original->checkIntegrity();
    QCOMPARE(doc.original->nodeCount(), std::size_t{7});
    // A version-1 fixture: saved again it is a version-2 file that writes back identically.
    QCOMPARE(doc.tensorStats.version, 1);
    const std::string v2 = io::writeTsg(doc);
    QCOMPARE(io::writeTsg(io::readTsg(v2)), v2);
    QCOMPARE(io::readTsg(v2).tensorStats.version, 2);
  }

  // Each row mutates a valid document; loading must fail with TsgError whose path and message
  // contain the expected fragments.
  void testMalformed_data() {
    QTest::addColumn<QString>("mutation");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, const char* path, const char* message) {
      QTest::newRow(name) << QString(name) << QString(path) << QString(message);
    };
    row("not json", "/", "not valid JSON");
    row("truncated", "/", "not valid JSON");
    row("root array", "/", "expected an object");
    row("wrong format", "/format", "not a Tensorscope graph file");
    row("future version", "/version", "newer Tensorscope");
    row("no graphs", "/", "\"graphs\"");
    row("unknown graph", "/graphs", "\"sideways\"");
    row("unknown dtype", "/graphs/original/variables/0/type", "float31");
    row("negative dim", "/graphs/original/variables/0/type", "a dimension must be a size or ?");
    row("bad type text", "/graphs/original/variables/0/type", "expected a type such as");
    row("computed with type", "/graphs/original/variables/2/type", "given by its apply");
    row("types count", "/graphs/original/applies/0/types", "one type per output");
    row("bad kind", "/graphs/original/variables/0/kind", "\"weird\"");
    row("duplicate id", "/graphs/original/applies/0/id", "used twice");
    row("dangling input", "/graphs/original/applies/0/inputs/0", "expected the id of a variable");
    row("out of order", "/graphs/original/applies/0/inputs/0", "topological order");
    row("output produced twice", "/graphs/original/applies/1/outputs/0", "output of two applies");
    row("bad base64", "/graphs/original/variables/1/value/data", "base64");
    row("data length", "/graphs/original/variables/1/value/data", "bytes");
    row("bad props", "/graphs/original/applies/0/props", "valid Elemwise");
    row("type contradiction", "/graphs/original/applies/0/types/0", "contradicts");
    row("wrong output count", "/graphs/original/applies/0/outputs", "expected 1 outputs");
    row("op refuses inputs", "/graphs/original/applies/0/inputs", "refuses its inputs");
    row("free var not input", "/graphs/original/outputs", "not among the graph's inputs");
    row("dead apply", "/graphs/original/applies/", "not needed by any graph output");
    row("bad test value", "/graphs/original/variables/0/test_value", "expected");
    row("deep nesting", "/", "nests");
    row("bad update", "/graphs/original/updates/0", "not a shared variable");
    row("bad rewrite", "/rewrites/0/seconds", "duration");
  }

  void testMalformed() {
    QFETCH(QString, mutation);
    QFETCH(QString, path);
    QFETCH(QString, message);
    // The base document: x (input, float32 (?,2)), W (shared float32 (2,2)), y = x + W, z =
    // tanh(y).
    json doc = json::parse(R"({
      "format": "tensorscope-graph", "version": 1,
      "graphs": {"original": {
        "inputs": [0, 1], "outputs": [3],
        "variables": [
          {"id": 0, "kind": "input", "name": "x", "type": "float32[?,2]"},
          {"id": 1, "kind": "shared", "name": "W", "type": "float32[2,2]",
           "value": {"dtype": "float32", "shape": [2, 2], "data": "AACAPwAAAEAAAEBAAACAQA=="}},
          {"id": 2, "kind": "computed", "name": "y"}],
        "applies": [
          {"id": 10, "op": "Elemwise", "props": {"scalar_op": "add"}, "inputs": [0, 1], "outputs": [2],
           "types": ["float32[2,2]"]},
          {"id": 11, "op": "Elemwise", "props": {"scalar_op": "tanh"}, "inputs": [2], "outputs": [3],
           "types": ["float32[2,2]"]}]}},
      "rewrites": []})");
    QVERIFY(io::readTsg(doc.dump(), "base").original);  // the base is valid
    auto& g = doc["graphs"]["original"];
    std::string text;
    std::string m = mutation.toStdString();
    if (m == "not json")
      text = "{\"format\": tensorscope";
    else if (m == "truncated")
      text = doc.dump().substr(0, doc.dump().size() / 2);
    else if (m == "root array")
      text = "[1, 2]";
    else if (m == "deep nesting")
      text = std::string(100000, '[') + std::string(100000, ']');
    else {
      if (m == "wrong format")
        doc["format"] = "onnx";
      else if (m == "future version")
        doc["version"] = 7;
      else if (m == "no graphs")
        doc.erase("graphs");
      else if (m == "unknown graph")
        doc["graphs"]["sideways"] = g;
      else if (m == "unknown dtype")
        g["variables"][0]["type"] = "float31[?,2]";
      else if (m == "negative dim")
        g["variables"][0]["type"] = "float32[?,-3]";
      else if (m == "bad type text")
        g["variables"][0]["type"] = "float32(2,2)";
      else if (m == "computed with type")
        g["variables"][2]["type"] = "float32[2,2]";
      else if (m == "types count")
        g["applies"][0]["types"].push_back("float32[2,2]");
      else if (m == "bad kind")
        g["variables"][0]["kind"] = "weird";
      else if (m == "duplicate id")
        g["applies"][0]["id"] = 1;
      else if (m == "dangling input")
        g["applies"][0]["inputs"][0] = 99;
      else if (m == "out of order")
        std::swap(g["applies"][0], g["applies"][1]);
      else if (m == "output produced twice")
        g["applies"][1]["outputs"][0] = 2;
      else if (m == "bad base64")
        g["variables"][1]["value"]["data"] = "AAC*PwAAAEAAAEBAAACAQA==";
      else if (m == "data length")
        g["variables"][1]["value"]["data"] = "AACAPwAAAEAAAEBA";
      else if (m == "bad props")
        g["applies"][0]["props"] = {{"scalar_op", "frobnicate"}};
      else if (m == "type contradiction")
        g["applies"][0]["types"][0] = "int8[2,2]";
      else if (m == "wrong output count") {
        g["applies"][0]["outputs"].push_back(4);
        g["applies"][0]["types"].push_back("float32[2,2]");
      } else if (m == "op refuses inputs") {
        g["applies"][0]["op"] = "Dot";
        g["applies"][0].erase("props");
        g["variables"][0]["type"] = "float32[?,3]";
      } else if (m == "free var not input")
        g["inputs"] = {1};
      else if (m == "dead apply") {
        g["applies"].push_back({{"id", 12},
                                {"op", "Elemwise"},
                                {"props", {{"scalar_op", "neg"}}},
                                {"inputs", {3}},
                                {"outputs", {5}},
                                {"types", {"float32[2,2]"}}});
      } else if (m == "bad test value")
        g["variables"][0]["test_value"] = {
            {"dtype", "float32"}, {"shape", {3}}, {"data", "AACAPwAAAEAAAEBA"}};
      else if (m == "bad update") {
        g["outputs"].push_back(0);
        g["updates"] = {{{"output", 1}, {"input", 0}}};
      } else if (m == "bad rewrite")
        doc["rewrites"] = {{{"order", 0},
                            {"phase", "p"},
                            {"reason", "r"},
                            {"replaced", json::array()},
                            {"added", json::array()},
                            {"removed", json::array()},
                            {"seconds", "slow"}}};
      text = doc.dump();
    }
    try {
      io::readTsg(text, "bad.tsg");
      QFAIL("the malformed document loaded");
    } catch (const io::TsgError& e) {
      QVERIFY2(QString::fromStdString(e.path()).startsWith(path), e.what());
      QVERIFY2(QString::fromStdString(e.message()).contains(message), e.what());
      QVERIFY2(QString(e.what()).startsWith("bad.tsg: "), e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestTsg)
#include "tst_tsg.moc"

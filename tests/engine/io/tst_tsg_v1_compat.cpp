// Version-1 .tsg files (one JSON text, tensors in base64) still load: the committed fixtures in
// tests/data/tsg_v1/ were written by the version-1 writer (`tensorscope optimize` before issue
// 26), and examples/graphs/ holds more. Each loads with bit-exact tensors (checked against the
// base64 in the file itself), saves as version 2 with the weights of both graphs stored once, and
// the version-2 file loads back to the same graphs.

#include "engine/io/base64.h"
#include "engine/io/tsg.h"
#include "engine/io/tsg_binary.h"
#include "test_main.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace tscope::engine;
using nlohmann::json;

namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(TSCOPE_SOURCE_DIR) / "tests/data/tsg_v1";

std::string readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The value or test value of variable `id` in `fg`.
const Tensor* valueOf(const FunctionGraph& fg, std::int64_t id, bool testValue) {
  const Variable* v = fg.variableById(id);
  if (!v) return nullptr;
  if (testValue) return v->testValue() ? &*v->testValue() : nullptr;
  if (auto* c = dynamic_cast<const Constant*>(v)) return &c->value();
  if (auto* s = dynamic_cast<const SharedVariable*>(v)) return &s->value();
  return nullptr;
}

// Every base64 tensor of graph `which` in the version-1 JSON equals the loaded one, byte for byte.
int checkTensors(const json& j, const char* which, const FunctionGraph& fg) {
  int checked = 0;
  for (const json& v : j["graphs"][which]["variables"])
    for (const char* key : {"value", "test_value"}) {
      if (!v.contains(key)) continue;
      auto bytes = io::base64Decode(v[key]["data"].get<std::string>());
      if (!bytes) return -1;
      const Tensor* t = valueOf(fg, v["id"].get<std::int64_t>(), std::string(key) == "test_value");
      if (!t || t->toBytes() != *bytes) return -1;
      ++checked;
    }
  return checked;
}

// The document with what may legitimately differ between two writes of the same graphs taken out:
// tensors (inline in version 1, descriptors in version 2), the version, the order of the applies
// (the topological order of a reloaded graph may break ties differently) and so the site table's
// order (sites are resolved to their file and function).
json normalized(json d) {
  const json sites = d.value("sites", json::array());
  d.erase("sites");
  d["version"] = 0;
  std::function<void(json&)> resolve = [&](json& v) {
    if (v.is_object()) {
      if (v.contains("site") && v["site"].is_null()) v.erase("site");  // no site, said or not
      for (auto& [key, item] : v.items())
        if (key == "site" && item.is_array() && item.size() == 2) {
          const json& entry = sites.at(item[0].get<std::size_t>());
          item = json::array({entry["file"], entry.value("function", ""), item[1]});
        } else if (key != "props") {
          resolve(item);
        }
    } else if (v.is_array()) {
      for (json& item : v) resolve(item);
    }
  };
  resolve(d);
  auto byId = [](const json& a, const json& b) { return a["id"] < b["id"]; };
  for (auto& [name, g] : d["graphs"].items()) {
    for (json& v : g["variables"])
      for (const char* key : {"value", "test_value"})
        if (v.contains(key)) v[key] = nullptr;
    std::sort(g["applies"].begin(), g["applies"].end(), byId);
    std::sort(g["variables"].begin(), g["variables"].end(), byId);
  }
  return d;
}

}  // namespace

class TestTsgV1Compat : public QObject {
  Q_OBJECT

 private slots:
  void testFixturesLoad_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("optimized");
    QTest::newRow("logistic regression, optimized")
        << QString::fromStdString((kFixtures / "logistic_regression_optimized.tsg").string())
        << true;
    QTest::newRow("lstm from ONNX, optimized")
        << QString::fromStdString((kFixtures / "lstm_optimized.tsg").string()) << true;
    QTest::newRow("examples/graphs/mlp.tsg")
        << QString(TSCOPE_SOURCE_DIR "/examples/graphs/mlp.tsg") << false;
    QTest::newRow("examples/graphs/scoped_model.tsg")
        << QString(TSCOPE_SOURCE_DIR "/examples/graphs/scoped_model.tsg") << true;
    QTest::newRow("corpus: every dtype")
        << QString(TSCOPE_SOURCE_DIR "/tests/data/corpus/tsg/valid_dtype_zoo.tsg") << false;
  }

  void testFixturesLoad() {
    QFETCH(QString, file);
    QFETCH(bool, optimized);
    const std::string text = readFile(file.toStdString());
    QVERIFY(!text.empty());
    QVERIFY(!io::looksLikeBinaryTsg(text));
    const json j = json::parse(text);
    QCOMPARE(j["version"].get<int>(), 1);

    io::TsgDocument doc = io::loadTsg(file.toStdString());
    doc.original->checkIntegrity();
    QCOMPARE(doc.optimized != nullptr, optimized);
    QCOMPARE(doc.tensorStats.version, 1);
    QCOMPARE(doc.tensorStats.sharedBytes, std::uint64_t{0});  // version 1 shares nothing
    const int inOriginal = checkTensors(j, "original", *doc.original);
    QVERIFY(inOriginal > 0);
    if (optimized) QVERIFY(checkTensors(j, "optimized", *doc.optimized) >= 0);

    // Saved again: version 2, each distinct tensor once, and it loads back to the same graphs.
    const std::string v2 = io::writeTsg(doc);
    QVERIFY(io::looksLikeBinaryTsg(v2));
    io::TsgDocument back = io::readTsg(v2, "v2");
    QCOMPARE(back.tensorStats.version, 2);
    QCOMPARE(io::writeTsg(back), v2);
    QCOMPARE(checkTensors(j, "original", *back.original), inOriginal);
    if (optimized) {
      QVERIFY(checkTensors(j, "optimized", *back.optimized) >= 0);
      // The optimized graph keeps weights of the original: they are stored once.
      QVERIFY(back.tensorStats.sharedBetweenGraphs > 0);
      QVERIFY(back.tensorStats.sharedBytes > 0);
    }
    // Same bytes counted: version 1 stored every reference, version 2 each tensor once.
    QCOMPARE(back.tensorStats.tensorBytes + back.tensorStats.sharedBytes,
             doc.tensorStats.tensorBytes);
    // Binary and stored once, a file with weights shrinks (tiny tensors are padded to 64 bytes).
    if (doc.tensorStats.tensorBytes > 16384) QVERIFY(v2.size() < text.size());
    // Apart from the tensors, the JSON is the same document.
    QCOMPARE(normalized(json::parse(io::tsgJson(v2))), normalized(j));
  }
};

TSCOPE_TEST_MAIN(TestTsgV1Compat)
#include "tst_tsg_v1_compat.moc"

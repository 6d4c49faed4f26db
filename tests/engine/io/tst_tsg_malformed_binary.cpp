// Malformed version-2 .tsg files: a broken header or tensor section is refused with a TsgError
// naming the file, the JSON path of the tensor (or "/header") and what was expected and found;
// nothing is read out of bounds (the fuzz target checks that under AddressSanitizer).

#include "engine/io/tsg.h"
#include "engine/io/tsg_binary.h"
#include "engine/ops/elemwise/elemwise.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace tscope::engine;
using nlohmann::json;

namespace {

// z = (x + W) * C: W a shared float32 (4, 8) (128 bytes), C a constant of other bytes; W's value
// is also the test value of x (read first: x has the lowest id). The section: [0, 128) for x's
// test value and W, [128, 256) for C.
std::string validFile() {
  auto x = Variable::create(TensorType(DType::Float32, {4, 8}), "x");
  std::vector<double> values(32);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 1.0 + static_cast<double>(i);
  Tensor w = Tensor::fromDoubles(DType::Float32, {4, 8}, values);
  x->setTestValue(w);
  auto W = SharedVariable::create(w, "W");
  for (double& v : values) v += 100;
  auto C = Constant::create(Tensor::fromDoubles(DType::Float32, {4, 8}, values), "C");
  VarPtr z = elemwise(ScalarOp::Mul, {elemwise(ScalarOp::Add, {x, W}), C});
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, W}, std::vector<VarPtr>{z});
  return io::writeTsg(doc);
}

// The index in "variables" of the variable named `name`.
std::size_t variableIndex(const json& j, const std::string& name) {
  const json& vars = j["graphs"]["original"]["variables"];
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (vars[i].value("name", "") == name) return i;
  throw std::logic_error("no variable " + name);
}

void putU64(std::string& file, std::size_t at, std::uint64_t v) {
  std::memcpy(file.data() + at, &v, sizeof v);
}

}  // namespace

class TestTsgMalformedBinary : public QObject {
  Q_OBJECT

 private slots:
  void testValidBaseLoads() {
    io::TsgDocument doc = io::readTsg(validFile(), "base");
    QCOMPARE(doc.tensorStats.tensors, std::uint64_t{2});
    QCOMPARE(doc.tensorStats.sharedTensors, std::uint64_t{1});  // W and x's test value
    QCOMPARE(doc.tensorStats.sharedBytes, std::uint64_t{128});
  }

  void testMalformed_data() {
    QTest::addColumn<QString>("mutation");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, const char* path, const char* message) {
      QTest::newRow(name) << QString(name) << QString(path) << QString(message);
    };
    row("bad magic", "/header", "expected the magic bytes 89 54 53 47 0d 0a 1a 0a");
    row("short header", "/header", "expected a header of 32 bytes, found a file of only 20");
    row("header version 3", "/header", "expected format version 2 in the header, found 3 (a newer");
    row("reserved field", "/header", "reserved field, found 5");
    row("json length past the end", "/header", "runs past the end of the file");
    row("truncated section", "/header", "(truncated)");
    row("trailing bytes", "/header", "(trailing bytes)");
    row("section length not aligned", "/header", "a multiple of 64, found");
    row("padding not zero", "/header", "expected zero padding");
    row("offset out of range", "/graphs/original/variables/W/value/offset",
        "the value of variable 1 'W': the bytes [4096, 4224) lie outside the tensor section of "
        "256");
    row("huge offset", "/graphs/original/variables/W/value/offset",
        "lie outside the tensor section");
    row("misaligned offset", "/graphs/original/variables/W/value/offset",
        "expected an offset that is a multiple of 64, found 8");
    row("length not dtype*shape", "/graphs/original/variables/W/value/length",
        "expected 128 bytes for float32 (4, 8), found 12");
    row("overlapping", "/graphs/original/variables/C/value/offset",
        "the bytes [64, 192) overlap another tensor's [0, 128)");
    row("same start, other length", "/graphs/original/variables/W/value/offset",
        "expected the same range or a disjoint one");
    row("no offset", "/graphs/original/variables/W/value", "\"offset\"");
    row("negative length", "/graphs/original/variables/W/value/length", "expected an integer");
    row("json says version 1", "/version",
        "expected 2 (the version in the file's header), found 1");
    row("json only, version 2", "/version", "begin with a binary header");
    row("bool byte", "/graphs/original/variables/C/value/offset",
        "expected bool data bytes 0 or 1");
    row("bad json", "/", "not valid JSON");
  }

  void testMalformed() {
    QFETCH(QString, mutation);
    QFETCH(QString, path);
    QFETCH(QString, message);
    const std::string good = validFile();
    const std::string m = mutation.toStdString();
    json j = json::parse(io::tsgJson(good));
    const io::TsgHeader h = io::parseTsgHeader(good, "good");
    auto& vars = j["graphs"]["original"]["variables"];
    const std::size_t w = variableIndex(j, "W"), c = variableIndex(j, "C"),
                      x = variableIndex(j, "x");
    std::string file;
    auto edit = [&] { file = io::withTsgJson(good, j.dump()); };
    if (m == "bad magic") {
      file = good;
      file[3] = 'X';
    } else if (m == "short header") {
      file = good.substr(0, 20);
    } else if (m == "header version 3") {
      file = good;
      file[8] = 3;
    } else if (m == "reserved field") {
      file = good;
      file[12] = 5;
    } else if (m == "json length past the end") {
      file = good;
      putU64(file, 16, std::uint64_t{1} << 40);
    } else if (m == "truncated section") {
      file = good.substr(0, good.size() - 64);
    } else if (m == "trailing bytes") {
      file = good + std::string(64, '\0');
    } else if (m == "section length not aligned") {
      file = good;
      putU64(file, 24, h.sectionLength - 1);
    } else if (m == "padding not zero") {
      QVERIFY(h.sectionOffset > h.jsonOffset + h.jsonLength);  // the JSON is not 64-aligned
      file = good;
      file[h.sectionOffset - 1] = ' ';
    } else if (m == "offset out of range") {
      vars[w]["value"]["offset"] = 4096;
      edit();
    } else if (m == "huge offset") {
      vars[w]["value"]["offset"] = (std::int64_t{1} << 53) - 64;
      edit();
    } else if (m == "misaligned offset") {
      vars[w]["value"]["offset"] = 8;
      edit();
    } else if (m == "length not dtype*shape") {
      vars[w]["value"]["length"] = 12;
      edit();
    } else if (m == "overlapping") {
      QCOMPARE(vars[c]["value"]["offset"].get<int>(), 128);
      vars[c]["value"]["offset"] = 64;
      edit();
    } else if (m == "same start, other length") {
      vars[w]["value"] = {{"dtype", "float16"}, {"shape", {4, 8}}, {"offset", 0}, {"length", 64}};
      edit();
    } else if (m == "no offset") {
      vars[w]["value"].erase("offset");
      edit();
    } else if (m == "negative length") {
      vars[w]["value"]["length"] = -128;
      edit();
    } else if (m == "json says version 1") {
      j["version"] = 1;
      edit();
    } else if (m == "json only, version 2") {
      file = std::string(io::tsgJson(good));
    } else if (m == "bool byte") {
      // C read as bool over the bytes of 101.0f, ...: 0x00 0x00 0xca 0x42, and 0xca is no bool.
      vars[c]["type"] = "bool[32]";
      vars[c]["value"] = {{"dtype", "bool"},
                          {"shape", {32}},
                          {"offset", vars[c]["value"]["offset"]},
                          {"length", 32}};
      edit();
    } else if (m == "bad json") {
      std::string text(io::tsgJson(good));
      text.back() = '#';  // after the closing brace: trailing garbage
      file = io::withTsgJson(good, text);
    }
    QVERIFY(!file.empty());
    // The JSON path names the variable by its index in the file; the rows name it by its name.
    QString expectedPath = path;
    expectedPath.replace("variables/W", QString("variables/%1").arg(w));
    expectedPath.replace("variables/C", QString("variables/%1").arg(c));
    expectedPath.replace("variables/x", QString("variables/%1").arg(x));
    try {
      io::readTsg(file, "bad.tsg");
      QFAIL("the malformed file loaded");
    } catch (const io::TsgError& e) {
      QVERIFY2(QString::fromStdString(e.path()) == expectedPath, e.what());
      QVERIFY2(QString::fromStdString(e.message()).contains(message), e.what());
      QVERIFY2(QString(e.what()).startsWith("bad.tsg: "), e.what());
    }
  }

  // From a file, the message names the file; a truncated file on disk is refused the same way.
  void testTruncatedFileOnDisk() {
    QTemporaryDir dir;
    const std::filesystem::path path = dir.filePath("cut.tsg").toStdString();
    const std::string good = validFile();
    {
      std::ofstream f(path, std::ios::binary);
      f.write(good.data(), static_cast<std::streamsize>(good.size() - 100));
    }
    try {
      io::loadTsg(path);
      QFAIL("the truncated file loaded");
    } catch (const io::TsgError& e) {
      QCOMPARE(QString::fromStdString(e.source()), QString::fromStdString(path.string()));
      QVERIFY2(QString::fromStdString(e.message()).contains("truncated"), e.what());
    }
  }
};

TSCOPE_TEST_MAIN(TestTsgMalformedBinary)
#include "tst_tsg_malformed_binary.moc"

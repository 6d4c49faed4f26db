// The version-2 .tsg file: exact round trips of every dtype, views, non-contiguous, empty and
// scalar tensors; each distinct tensor stored once (the original and optimized graphs, test values
// and constants with equal bytes share one range); loading from a memory map without reading the
// tensor bytes; shared variables that never write through to the file or to each other; the
// reading fallback for a pipe.

#include "engine/graph/op.h"
#include "engine/io/tsg.h"
#include "engine/io/tsg_binary.h"
#include "engine/ops/elemwise/elemwise.h"
#include "test_main.h"

#include <QTemporaryDir>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace tscope::engine;
using nlohmann::json;

namespace {

// A tensor of `dtype` with `n` elements of distinct bit patterns (NaN, -0 and inf among floats).
Tensor patterned(DType dtype, Shape shape, int seed) {
  Tensor t(dtype, shape);
  auto* bytes = static_cast<unsigned char*>(t.rawData());
  for (std::size_t i = 0; i < t.nbytes(); ++i)
    bytes[i] =
        static_cast<unsigned char>((i * 37 + static_cast<std::size_t>(seed) * 11 + 5) & 0xff);
  if (dtype == DType::Bool)
    for (std::size_t i = 0; i < t.nbytes(); ++i) bytes[i] &= 1;
  if (dtype == DType::Float32 && t.numel() >= 3) {
    t.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    t.data<float>()[1] = -0.0f;
    t.data<float>()[2] = std::numeric_limits<float>::infinity();
  }
  return t;
}

// A graph whose outputs compare each constant with itself; `values` become constants adopted as
// they are (views stay views), and the input carries `testValue` when it is defined.
std::unique_ptr<FunctionGraph> constantsGraph(const std::vector<Tensor>& values,
                                              const Tensor& testValue = {}) {
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim}), "x");
  if (testValue.defined()) x->setTestValue(testValue);
  std::vector<VarPtr> outputs{elemwise(ScalarOp::Neg, {x})};
  for (std::size_t i = 0; i < values.size(); ++i) {
    VarPtr c = Constant::adopt(values[i], "c" + std::to_string(i));
    outputs.push_back(elemwise(ScalarOp::Eq, {c, c}));
  }
  return std::make_unique<FunctionGraph>(std::vector<VarPtr>{x}, outputs);
}

std::vector<const Constant*> constantsOf(const FunctionGraph& fg) {
  std::vector<const Constant*> out;
  for (const Variable* v : fg.variables())
    if (auto* c = dynamic_cast<const Constant*>(v)) out.push_back(c);
  // In the order constantsGraph made them: c0 .. c9, then c10 .. (by length, then name).
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return std::pair(a->name().size(), a->name()) < std::pair(b->name().size(), b->name());
  });
  return out;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void writeFile(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A graph y = x * W + b with shared W and b, optimized = a clone (they share their weights).
// With `extra`, a constant of that value feeds one more output.
io::TsgDocument sharedWeightsDocument(std::int64_t n, const Tensor& extra = {}) {
  Tensor w = patterned(DType::Float32, {n, n}, 1);
  auto x = Variable::create(TensorType(DType::Float32, {n, n}), "x");
  auto W = SharedVariable::create(w, "W");
  auto b = SharedVariable::create(Tensor::zeros(DType::Float32, {n, n}), "b");
  auto b2 = SharedVariable::create(Tensor::zeros(DType::Float32, {n, n}), "b2");  // b's bytes
  VarPtr y = elemwise(ScalarOp::Add, {elemwise(ScalarOp::Mul, {x, W}), b});
  VarPtr z = elemwise(ScalarOp::Add, {y, b2});
  std::vector<VarPtr> outputs{z};
  if (extra.defined()) outputs.push_back(elemwise(ScalarOp::Neg, {Constant::adopt(extra, "big")}));
  io::TsgDocument doc;
  doc.original =
      std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, W, b, b2}, std::move(outputs));
  doc.optimized = doc.original->clone();
  return doc;
}

// The resident size (KiB) of the mapping that holds `address`, from /proc/self/smaps; -1 if none.
std::int64_t rssKiB(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = a >= lo && a < hi;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stoll(line.substr(4));
    }
  }
  return -1;
}

const SharedVariable& sharedNamed(const FunctionGraph& fg, const std::string& name) {
  for (const auto& in : fg.inputs())
    if (in->name() == name) return dynamic_cast<const SharedVariable&>(*in);
  throw std::logic_error("no shared variable " + name);
}

}  // namespace

class TestTsgBinary : public QObject {
  Q_OBJECT

 private slots:
  void testEveryDtypeRoundTripsExactly() {
    std::vector<Tensor> values;
    for (int d = 0; d < kDTypeCount; ++d)
      values.push_back(patterned(static_cast<DType>(d), {3, 5}, d));
    io::TsgDocument doc;
    doc.original = constantsGraph(values);
    const std::string file = io::writeTsg(doc);
    QVERIFY(io::looksLikeBinaryTsg(file));
    io::TsgDocument back = io::readTsg(file, "dtypes");
    QCOMPARE(io::writeTsg(back), file);
    auto loaded = constantsOf(*back.original);
    QCOMPARE(loaded.size(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      QVERIFY2(loaded[i]->value().bitwiseEqual(values[i]), dtypeName(values[i].dtype()).data());
      QVERIFY(loaded[i]->value().storage()->external());
      QCOMPARE(reinterpret_cast<std::uintptr_t>(loaded[i]->value().rawData()) % 64, 0u);
    }
    QCOMPARE(back.tensorStats.version, 2);
    QCOMPARE(back.tensorStats.tensors, std::uint64_t{kDTypeCount});
  }

  void testViewsAndNonContiguousWriteTheirLogicalBytes() {
    Tensor base = patterned(DType::Float64, {4, 6}, 3);
    Tensor transposed = base.transpose();                      // non-contiguous
    Tensor sliced = base.slice(1, 1, 6, 2);                    // strided
    Tensor offsetView = base.select(0, 2);                     // contiguous, at an offset
    Tensor broadcast = base.select(0, 1).broadcastTo({3, 6});  // stride 0
    QVERIFY(!transposed.isContiguous() && !sliced.isContiguous() && !broadcast.isContiguous());
    io::TsgDocument doc;
    Tensor testValue = patterned(DType::Float32, {4, 6}, 4).slice(1, 1, 6, 2).select(0, 1);
    QVERIFY(!testValue.isContiguous());
    doc.original = constantsGraph({transposed, sliced, offsetView, broadcast}, testValue);
    io::TsgDocument back = io::readTsg(io::writeTsg(doc));
    auto loaded = constantsOf(*back.original);
    QVERIFY(loaded[0]->value().bitwiseEqual(transposed));
    QVERIFY(loaded[1]->value().bitwiseEqual(sliced));
    QVERIFY(loaded[2]->value().bitwiseEqual(offsetView));
    QVERIFY(loaded[3]->value().bitwiseEqual(broadcast));
    QVERIFY(back.original->inputs()[0]->testValue()->bitwiseEqual(testValue));
    for (const Constant* c : loaded) QVERIFY(c->value().isContiguous());
  }

  void testEmptyAndScalarTensors() {
    Tensor empty0(DType::Float32, {0});
    Tensor empty2(DType::Int64, {3, 0, 2});
    Tensor scalar = Tensor::scalar(DType::Float64, -2.5);
    Tensor scalarInt = Tensor::scalar(DType::Int8, 7);
    io::TsgDocument doc;
    doc.original = constantsGraph({empty0, empty2, scalar, scalarInt}, Tensor(DType::Float32, {0}));
    const std::string file = io::writeTsg(doc);
    io::TsgDocument back = io::readTsg(file);
    QCOMPARE(io::writeTsg(back), file);
    auto loaded = constantsOf(*back.original);
    QCOMPARE(loaded[0]->value().shape(), (Shape{0}));
    QCOMPARE(loaded[1]->value().shape(), (Shape{3, 0, 2}));
    QCOMPARE(loaded[1]->value().dtype(), DType::Int64);
    QVERIFY(loaded[2]->value().bitwiseEqual(scalar));
    QVERIFY(loaded[3]->value().bitwiseEqual(scalarInt));
    QCOMPARE(back.original->inputs()[0]->testValue()->numel(), std::int64_t{0});
    // Two non-empty 8- and 1-byte scalars, each padded to 64; empty tensors take no bytes.
    QCOMPARE(back.tensorStats.tensors, std::uint64_t{2});
    QCOMPARE(back.tensorStats.tensorBytes, std::uint64_t{9});
    const io::TsgHeader h = io::parseTsgHeader(file, "t");
    QCOMPARE(h.sectionLength, std::uint64_t{128});
  }

  void testEqualTensorsAreStoredOnce() {
    const std::int64_t n = 64;  // W is 16 KiB
    io::TsgDocument doc = sharedWeightsDocument(n);
    // A test value and a constant holding W's bytes too.
    Tensor w = sharedNamed(*doc.original, "W").value();
    doc.original->inputs()[0]->setTestValue(w);
    const std::string file = io::writeTsg(doc);
    const io::TsgHeader h = io::parseTsgHeader(file, "t");
    // Stored: W and one zero block (b and b2, in both graphs): two tensors of n*n*4 bytes.
    const std::uint64_t block = static_cast<std::uint64_t>(n * n * 4);
    QCOMPARE(h.sectionLength, 2 * block);
    io::TsgDocument back = io::readTsg(file);
    const io::TsgTensorStats& s = back.tensorStats;
    QCOMPARE(s.tensors, std::uint64_t{2});
    QCOMPARE(s.tensorBytes, 2 * block);
    // References: W, b, b2 in each graph and the test value: 7 references of one block each.
    QCOMPARE(s.references, std::uint64_t{7});
    QCOMPARE(s.sharedBytes, 5 * block);
    QCOMPARE(s.sharedTensors, std::uint64_t{2});
    QCOMPARE(s.sharedBetweenGraphs, std::uint64_t{2});
    QVERIFY(sharedNamed(*back.optimized, "W").value().bitwiseEqual(w));
    QVERIFY(back.original->inputs()[0]->testValue()->bitwiseEqual(w));
    // Round trip is exact and sharing survives it.
    QCOMPARE(io::writeTsg(back), file);
    const json stats = io::tensorStatsToJson(s);
    QCOMPARE(stats["shared_bytes"].get<std::uint64_t>(), 5 * block);
  }

  // Note [Lazy tensors]: loading reads the JSON only. Corrupting the tensor BYTES after writing
  // does not stop the load, and the corruption shows when a value is read later.
  void testLoadingDoesNotReadTensorBytes() {
    QTemporaryDir dir;
    const std::filesystem::path path = dir.filePath("lazy.tsg").toStdString();
    io::TsgDocument doc = sharedWeightsDocument(32);
    doc.optimized.reset();
    io::saveTsg(doc, path);
    std::string bytes = readFile(path);
    const io::TsgHeader h = io::parseTsgHeader(bytes, "t");
    const json j = json::parse(io::tsgJson(bytes));
    std::uint64_t wOffset = 0;
    for (const json& v : j["graphs"]["original"]["variables"])
      if (v.value("name", "") == "W") wOffset = v["value"]["offset"].get<std::uint64_t>();
    const float poison = 12345.0f;
    std::memcpy(bytes.data() + h.sectionOffset + wOffset, &poison, sizeof poison);
    writeFile(path, bytes);
    io::TsgDocument back = io::loadTsg(path);  // loads: the bytes were not looked at
    const Tensor& w = sharedNamed(*back.original, "W").value();
    QVERIFY(w.storage()->external());
    QCOMPARE(w.data<float>()[0], poison);  // read now, from the file
  }

  // The pages of large tensors are not in the process after loading: the Rss of their mappings
  // (/proc/self/smaps) stays near zero until the values are read.
  void testTensorPagesAreNotTouchedWhenLoading() {
    QTemporaryDir dir;
    const std::filesystem::path path = dir.filePath("big.tsg").toStdString();
    // W: 1 MiB, shared (a map of its own); big: 8 MiB, a constant (in the file's map).
    io::TsgDocument doc = sharedWeightsDocument(512, patterned(DType::Float32, {2048, 1024}, 9));
    doc.optimized.reset();
    io::saveTsg(doc, path);
    io::TsgDocument back = io::loadTsg(path);
    const Tensor& w = sharedNamed(*back.original, "W").value();
    const Tensor* constant = nullptr;
    for (const Constant* k : constantsOf(*back.original))
      if (k->name() == "big") constant = &k->value();
    QVERIFY(constant);
    const std::int64_t wBefore = rssKiB(w.rawData());
    const std::int64_t cBefore = rssKiB(constant->rawData());
    QVERIFY(wBefore >= 0 && cBefore >= 0);
    // The file's map holds the JSON too, read while loading: its fault may map more than its pages
    // (the kernel's fault-around, or a whole 2 MiB huge page where the file's page cache has
    // large folios: FilePmdMapped in smaps), but never the 8 MiB of the constant.
    const auto jsonKiB =
        static_cast<std::int64_t>(io::parseTsgHeader(readFile(path), "t").sectionOffset / 1024);
    QVERIFY2(wBefore <= 64, qPrintable(QString::number(wBefore)));
    QVERIFY2(cBefore <= jsonKiB + 2048 + 256, qPrintable(QString::number(cBefore)));
    volatile float sink = 0;  // reads the compiler must keep
    for (std::int64_t i = 0; i < w.numel(); i += 256) sink = sink + w.data<float>()[i];
    for (std::int64_t i = 0; i < constant->numel(); i += 256)
      sink = sink + constant->data<float>()[i];
    QVERIFY(rssKiB(w.rawData()) >= 1000);  // every page read now
    QVERIFY(rssKiB(constant->rawData()) >= 8192);
    QVERIFY(sharedNamed(*back.original, "W")
                .value()
                .bitwiseEqual(sharedNamed(*doc.original, "W").value()));
  }

  // Shared variables may be updated in place; equal bytes are stored once, so each shared value
  // must be a private view: writing into one changes neither another nor the file.
  void testSharedValuesArePrivate() {
    QTemporaryDir dir;
    const std::filesystem::path path = dir.filePath("shared.tsg").toStdString();
    io::TsgDocument doc = sharedWeightsDocument(16);
    io::saveTsg(doc, path);
    const std::string before = readFile(path);
    for (bool fromMemory : {false, true}) {
      io::TsgDocument back = fromMemory ? io::readTsg(before) : io::loadTsg(path);
      const SharedVariable& b = sharedNamed(*back.original, "b");
      const SharedVariable& b2 = sharedNamed(*back.original, "b2");
      const SharedVariable& bOpt = sharedNamed(*back.optimized, "b");
      QVERIFY(!b.value().sharesStorageWith(b2.value()));
      const_cast<Tensor&>(b.value()).data<float>()[0] = 7.0f;  // an update in place
      QCOMPARE(b.value().data<float>()[0], 7.0f);
      QCOMPARE(b2.value().data<float>()[0], 0.0f);
      QCOMPARE(bOpt.value().data<float>()[0], 0.0f);
    }
    QCOMPARE(readFile(path), before);  // MAP_PRIVATE: nothing reached the file
  }

  // A pipe cannot be mapped: the loader reads it into memory and gives the same document.
  void testPipeIsRead() {
    QTemporaryDir dir;
    const std::filesystem::path fifo = dir.filePath("pipe.tsg").toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    io::TsgDocument doc = sharedWeightsDocument(8);
    const std::string file = io::writeTsg(doc);
    std::thread writer([&] {
      std::ofstream out(fifo, std::ios::binary);
      out.write(file.data(), static_cast<std::streamsize>(file.size()));
    });
    io::TsgDocument back;
    try {
      back = io::loadTsg(fifo);
    } catch (...) {
      writer.join();
      throw;
    }
    writer.join();
    QCOMPARE(io::writeTsg(back), file);
    QVERIFY(sharedNamed(*back.original, "W")
                .value()
                .bitwiseEqual(sharedNamed(*doc.original, "W").value()));
  }

  void testJsonHelpers() {
    io::TsgDocument doc = sharedWeightsDocument(4);
    const std::string file = io::writeTsg(doc);
    json j = json::parse(io::tsgJson(file));
    QCOMPARE(j["version"].get<int>(), 2);
    j["producer"]["name"] = "edited";
    io::TsgDocument edited = io::readTsg(io::withTsgJson(file, j.dump()));
    QCOMPARE(edited.producer["name"].get<std::string>(), std::string("edited"));
    QVERIFY(sharedNamed(*edited.original, "W")
                .value()
                .bitwiseEqual(sharedNamed(*doc.original, "W").value()));
  }
};

TSCOPE_TEST_MAIN(TestTsgBinary)
#include "tst_tsg_binary.moc"

// State dicts: a round trip (through .npz too), missing and unexpected keys in strict and
// non-strict mode, a wrong shape refused naming the key and both shapes with nothing loaded, dtype
// conversion; and the .npz reader on numpy's own files, on malformed and compressed archives.
#include "engine/io/npz.h"
#include "engine/nn/containers.h"
#include "engine/nn/conv_layers.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "test_main.h"

#include <QTemporaryDir>

using namespace tscope::engine;

namespace {

std::shared_ptr<nn::Sequential> makeModel() {
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Conv2d>(3, 4, 3), std::make_shared<nn::BatchNorm2d>(4),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(5, 2)});
}

bool sameState(const nn::StateDict& a, const nn::StateDict& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || !v.bitwiseEqual(it->second)) return false;
  }
  return true;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestNnStateDict : public QObject {
  Q_OBJECT

 private slots:
  void testKeys() {
    auto model = makeModel();
    std::vector<std::string> keys;
    for (const auto& [k, v] : model->stateDict()) keys.push_back(k);
    const std::vector<std::string> want{
        "0.bias",         "0.weight",      "1.bias",   "1.num_batches_tracked",
        "1.running_mean", "1.running_var", "1.weight", "3.bias",
        "3.weight"};
    QCOMPARE(keys, want);
    QCOMPARE(model->stateDict().at("1.num_batches_tracked").dtype(), DType::Int64);
    QCOMPARE(model->namedBuffers().size(), std::size_t{3});
  }

  void testRoundTrip() {
    nn::manualSeed(1);
    auto a = makeModel();
    nn::manualSeed(2);
    auto b = makeModel();
    QVERIFY(!sameState(a->stateDict(), b->stateDict()));
    const nn::LoadResult r = b->loadStateDict(a->stateDict());
    QVERIFY(r.missingKeys.empty() && r.unexpectedKeys.empty());
    QVERIFY(sameState(a->stateDict(), b->stateDict()));
    // The state dict holds copies: changing a parameter afterwards leaves it alone.
    const nn::StateDict before = a->stateDict();
    a->findState("0.weight")->setValue(Tensor::zeros(DType::Float32, {4, 3, 3, 3}));
    QVERIFY(!sameState(before, a->stateDict()));
    // Through an .npz file.
    QTemporaryDir dir;
    const std::string path = dir.filePath("state.npz").toStdString();
    io::saveNpz(b->stateDict(), path);
    nn::manualSeed(3);
    auto c = makeModel();
    c->loadStateDict(io::loadNpz(path));
    QVERIFY(sameState(b->stateDict(), c->stateDict()));
  }

  void testMissingAndUnexpected() {
    auto model = makeModel();
    nn::StateDict dict = model->stateDict();
    dict.erase("3.bias");
    dict.erase("1.running_var");
    dict["3.extra"] = Tensor::zeros(DType::Float32, {2});
    const nn::StateDict before = model->stateDict();
    const std::string msg = errorOf([&] { model->loadStateDict(dict, true); });
    QVERIFY2(msg.find("missing keys '1.running_var', '3.bias'") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("unexpected keys '3.extra'") != std::string::npos, msg.c_str());
    QVERIFY(sameState(before, model->stateDict()));  // strict refused everything

    dict["0.weight"] = Tensor::full(DType::Float32, {4, 3, 3, 3}, 0.25);
    const nn::LoadResult r = model->loadStateDict(dict, false);
    QCOMPARE(r.missingKeys, (std::vector<std::string>{"1.running_var", "3.bias"}));
    QCOMPARE(r.unexpectedKeys, std::vector<std::string>{"3.extra"});
    QCOMPARE(model->stateDict().at("0.weight").toDoubles()[7], 0.25);
    QVERIFY(model->stateDict().at("3.bias").bitwiseEqual(before.at("3.bias")));
  }

  void testWrongShapeRefused() {
    auto model = makeModel();
    nn::StateDict dict = model->stateDict();
    dict["3.weight"] = Tensor::zeros(DType::Float32, {5, 2});
    dict["0.bias"] = Tensor::zeros(DType::Float32, {7});
    const nn::StateDict before = model->stateDict();
    for (bool strict : {true, false}) {
      const std::string msg = errorOf([&] { model->loadStateDict(dict, strict); });
      QVERIFY2(msg.find("'3.weight': expected shape [2, 5] (the module's), found [5, 2]") !=
                   std::string::npos,
               msg.c_str());
      QVERIFY2(msg.find("'0.bias': expected shape [4]") != std::string::npos, msg.c_str());
      QVERIFY2(msg.find("found [7]") != std::string::npos, msg.c_str());
      QVERIFY(sameState(before, model->stateDict()));
    }
    QVERIFY_THROWS_EXCEPTION(nn::StateDictError, model->loadStateDict(dict, false));
  }

  void testDtypeConverted() {
    nn::Linear fc(2, 1);
    nn::StateDict dict;
    dict["weight"] = Tensor::fromDoubles(DType::Float64, {1, 2}, {0.5, -1.5});
    dict["bias"] = Tensor::fromDoubles(DType::Float64, {1}, {2.0});
    fc.loadStateDict(dict);
    QCOMPARE(fc.weight->value().dtype(), DType::Float32);
    QCOMPARE(fc.weight->value().toDoubles(), (std::vector<double>{0.5, -1.5}));
  }

  // numpy's own archive (np.savez: ZIP64 extra fields), from the PyTorch fixtures.
  void testNumpyArchive() {
    const io::NpzArrays a = io::loadNpz(std::string(TSCOPE_TEST_DATA_DIR) + "/nn/mlp_state.npz");
    QCOMPARE(a.size(), std::size_t{4});
    QCOMPARE(a.at("0.weight").shape(), (Shape{8, 6}));
    QCOMPARE(a.at("2.bias").shape(), Shape{3});
  }

  void testMalformedArchives() {
    io::NpzArrays arrays{{"a", Tensor::fromDoubles(DType::Float32, {2}, {1, 2})},
                         {"b", Tensor::scalar(DType::Int64, 7)}};
    const std::vector<std::byte> good = io::writeNpz(arrays);
    const io::NpzArrays back = io::readNpz(good);
    QCOMPARE(back.size(), std::size_t{2});
    QVERIFY(back.at("a").bitwiseEqual(arrays.at("a")));
    QCOMPARE(back.at("b").item(), 7.0);
    // Truncated anywhere: an NpyError, never a crash.
    for (std::size_t n = 0; n < good.size(); n += 7)
      QVERIFY_THROWS_EXCEPTION(io::NpyError, io::readNpz(std::span(good.data(), n)));
    // A deflated member (np.savez_compressed) is refused saying so.
    std::vector<std::byte> deflated = good;
    deflated[8] = std::byte{8};  // the first local header's method; the central one below
    for (std::size_t i = 0; i + 4 < deflated.size(); ++i)
      if (deflated[i] == std::byte{0x50} && deflated[i + 1] == std::byte{0x4b} &&
          deflated[i + 2] == std::byte{0x01} && deflated[i + 3] == std::byte{0x02}) {
        deflated[i + 10] = std::byte{8};
        break;
      }
    const std::string msg = errorOf([&] { io::readNpz(deflated, "x.npz"); });
    QVERIFY2(msg.find("x.npz: member 'a.npy': expected a stored member") != std::string::npos,
             msg.c_str());
    QVERIFY2(msg.find("np.savez_compressed") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestNnStateDict)
#include "tst_nn_state_dict.moc"

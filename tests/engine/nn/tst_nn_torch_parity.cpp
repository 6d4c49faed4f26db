// The layers against PyTorch: each fixture of tests/data/nn (make_torch_state_dicts.py) is a small
// model's state_dict and PyTorch's outputs on an input; the matching nn::Module loads the state
// dict strictly (PyTorch's keys) and must reproduce the outputs in eval mode.
#include "engine/compile/function.h"
#include "engine/io/npz.h"
#include "engine/nn/attention.h"
#include "engine/nn/containers.h"
#include "engine/nn/conv_layers.h"
#include "engine/nn/layers.h"
#include "engine/nn/recurrent.h"
#include "test_main.h"

using namespace tscope::engine;

namespace {

using Modules = std::vector<nn::ModulePtr>;

std::string fixture(const std::string& name) {
  return std::string(TSCOPE_TEST_DATA_DIR) + "/nn/" + name;
}

VarPtr inputLike(const Tensor& t, const std::string& name) {
  return Variable::create(TensorType(t.dtype(), std::vector<std::int64_t>(t.ndim(), kUnknownDim)),
                          name);
}

// Loads <name>_state.npz strictly, calls the module on the io file's inputs in eval mode, and
// compares each output with the io file's array of that key.
void checkAgainstTorch(const std::string& name, nn::Module& module,
                       const std::vector<std::string>& inputKeys,
                       const std::vector<std::string>& outputKeys) {
  const nn::LoadResult r = module.loadStateDict(io::loadNpz(fixture(name + "_state.npz")), true);
  QVERIFY(r.missingKeys.empty() && r.unexpectedKeys.empty());
  module.eval();
  const io::NpzArrays io = io::loadNpz(fixture(name + "_io.npz"));
  std::vector<VarPtr> ins;
  std::vector<Tensor> args;
  for (const std::string& k : inputKeys) {
    ins.push_back(inputLike(io.at(k), k));
    args.push_back(io.at(k));
  }
  std::vector<VarPtr> call = ins;
  if (name == "mha") call.push_back(ins[1]);  // key and value are the same array
  const std::vector<VarPtr> outs = module.call(call);
  QVERIFY(outs.size() >= outputKeys.size());
  CompileOptions options;
  options.mode = Mode::FastRun;
  Function f = compile(
      ins, std::vector<VarPtr>(outs.begin(), outs.begin() + static_cast<long>(outputKeys.size())),
      {}, options);
  const std::vector<Tensor> got = f(args);
  for (std::size_t i = 0; i < outputKeys.size(); ++i) {
    const Tensor& want = io.at(outputKeys[i]);
    const std::string what = name + ": " + outputKeys[i];
    QVERIFY2(got[i].shape() == want.shape(), what.c_str());
    QVERIFY2(got[i].allClose(want, 1e-4, 1e-5),
             (what + "\n" + got[i].toString() + "\nwant\n" + want.toString()).c_str());
  }
}

}  // namespace

class TestNnTorchParity : public QObject {
  Q_OBJECT

 private slots:
  void testMlp() {
    nn::Sequential m(Modules{std::make_shared<nn::Linear>(6, 8), std::make_shared<nn::ReLU>(),
                             std::make_shared<nn::Linear>(8, 3)});
    checkAgainstTorch("mlp", m, {"input"}, {"output"});
  }

  void testCnn() {
    nn::Sequential m(
        Modules{std::make_shared<nn::Conv2d>(3, 4, 3, nn::Conv2dOptions{.padding = {1, 1}}),
                std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
                std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(4, 6, 3),
                std::make_shared<nn::AvgPool2d>(2)});
    checkAgainstTorch("cnn", m, {"input"}, {"output"});
  }

  void testLayerNormGelu() {
    nn::Sequential m(Modules{std::make_shared<nn::Linear>(5, 8),
                             std::make_shared<nn::LayerNorm>(std::vector<std::int64_t>{8}),
                             std::make_shared<nn::GELU>()});
    checkAgainstTorch("ln_gelu", m, {"input"}, {"output"});
  }

  void testLstm() {
    nn::LSTM m(5, 7, 2);
    checkAgainstTorch("lstm", m, {"input"}, {"output", "h_n", "c_n"});
  }

  void testGru() {
    nn::GRU m(5, 7, 2);
    checkAgainstTorch("gru", m, {"input"}, {"output", "h_n"});
  }

  void testMultiheadAttention() {
    nn::MultiheadAttention m(8, 2);
    checkAgainstTorch("mha", m, {"query", "key"}, {"output", "weights"});
  }

  void testEmbedding() {
    nn::Embedding m(10, 4);
    checkAgainstTorch("embedding", m, {"input"}, {"output"});
  }
};

TSCOPE_TEST_MAIN(TestNnTorchParity)
#include "tst_nn_torch_parity.moc"

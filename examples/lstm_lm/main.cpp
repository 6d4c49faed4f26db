// An LSTM language model (Zaremba et al. 2014, the recurrent benchmark of the Theano paper) built
// from nn modules, Embedding -> LSTM (2 layers) -> Linear, trained with SGD and gradient clipping
// on synthetic text: a first-order Markov chain over a small vocabulary in which each word is
// followed by one of a few likely successors, so the loss can fall well below log(vocab). Each
// batch starts from zero states (no state carried across batches). It prints the loss and the
// words per second, and saves the training graph with test values (the first batch) as .tsg.
//   example_lstm_lm [--config small|medium|large] [--steps N] [--seed S] [--vocab V]
//                   [--lr LR] [--threads N] [--out OUT.tsg] [--expected DIR] [--profile ROWS]
//   configurations (hidden units x 2 layers, unrolled steps, dropout): small 200, 20, 0;
//   medium 650, 35, 0.5; large 1500, 35, 0.65; batch 20, learning rate 1 (--lr), gradients clipped
//   to 5. Defaults: small, 300 steps, seed 1, vocabulary 32, examples/graphs/lstm_lm.tsg.

#include "../common/training.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/threads.h"
#include "engine/grad/grad.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/nn/recurrent.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/reshape.h"
#include "engine/ops/shape/subtensor.h"
#include "profiling/profiler.h"
#include "profiling/report.h"

#include <chrono>
#include <cstring>

using namespace tscope::engine;
using namespace tscope::examples;

namespace {

struct Config {
  const char* name;
  std::int64_t hidden, steps;
  double dropout;
};
constexpr Config kConfigs[] = {
    {"small", 200, 20, 0.0}, {"medium", 650, 35, 0.5}, {"large", 1500, 35, 0.65}};
constexpr std::int64_t kBatch = 20, kSuccessors = 3;
constexpr double kMaxNorm = 5.0;

// Words of the synthetic text: word w is followed by one of its kSuccessors successors
// (probabilities 0.6, 0.3, 0.1).
class MarkovText {
 public:
  MarkovText(std::int64_t vocab, std::uint32_t seed) : m_vocab(vocab), m_rng(seed) {
    std::uniform_int_distribution<std::int64_t> word(0, vocab - 1);
    for (std::int64_t w = 0; w < vocab * kSuccessors; ++w) m_next.push_back(word(m_rng));
  }
  // (steps + 1, batch) int64 words: inputs are rows [0, steps), targets rows [1, steps + 1).
  Tensor batch(std::int64_t steps) {
    Tensor t = Tensor::empty(DType::Int64, {steps + 1, kBatch});
    std::int64_t* p = t.data<std::int64_t>();
    std::uniform_int_distribution<std::int64_t> word(0, m_vocab - 1);
    std::discrete_distribution<int> pick({0.6, 0.3, 0.1});
    for (std::int64_t b = 0; b < kBatch; ++b) p[b] = word(m_rng);
    for (std::int64_t s = 1; s <= steps; ++s)
      for (std::int64_t b = 0; b < kBatch; ++b)
        p[s * kBatch + b] =
            m_next[static_cast<std::size_t>(p[(s - 1) * kBatch + b] * kSuccessors + pick(m_rng))];
    return t;
  }

 private:
  std::int64_t m_vocab;
  std::mt19937 m_rng;
  std::vector<std::int64_t> m_next;
};

class LanguageModel final : public nn::Module {
 public:
  LanguageModel(std::int64_t vocab, const Config& c) : Module("LanguageModel"), m_hidden(c.hidden) {
    embed = registerModule("embed", std::make_shared<nn::Embedding>(vocab, c.hidden));
    dropIn = registerModule("drop_in", std::make_shared<nn::Dropout>(c.dropout));
    lstm =
        registerModule("lstm", std::make_shared<nn::LSTM>(c.hidden, c.hidden, 2, true, c.dropout));
    dropOut = registerModule("drop_out", std::make_shared<nn::Dropout>(c.dropout));
    decoder = registerModule("decoder", std::make_shared<nn::Linear>(c.hidden, vocab));
    // Zaremba's initialization: every weight in [-0.1, 0.1].
    for (auto& [n, p] : namedParameters()) p->setValue(nn::uniformTensor(p->value().shape(), 0.1));
  }
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::Dropout> dropIn, dropOut;
  std::shared_ptr<nn::LSTM> lstm;
  std::shared_ptr<nn::Linear> decoder;

 protected:
  // words (T, B) int64 -> logits (T * B, vocab).
  std::vector<VarPtr> forward(const std::vector<VarPtr>& in) override {
    VarPtr h = (*dropOut)(lstm->call({(*dropIn)((*embed)(in[0]))})[0]);
    return {(*decoder)(reshape(h, std::vector<std::int64_t>{-1, m_hidden}))};
  }

 private:
  std::int64_t m_hidden;
};

}  // namespace

int run(int argc, char** argv) {
  const Config* config = &kConfigs[0];
  int steps = 300;
  std::uint32_t seed = 1;
  std::int64_t vocab = 32;
  std::string path = "examples/graphs/lstm_lm.tsg", expected;
  int profileRows = 0;
  double learningRate = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!value) {
      std::fprintf(stderr, "example_lstm_lm: %s needs a value\n", arg.c_str());
      return 2;
    }
    ++i;
    if (arg == "--config") {
      config = nullptr;
      for (const Config& c : kConfigs)
        if (std::strcmp(c.name, value) == 0) config = &c;
      if (!config) {
        std::fprintf(stderr, "example_lstm_lm: --config expects small, medium or large, found %s\n",
                     value);
        return 2;
      }
    } else if (arg == "--steps") {
      steps = std::atoi(value);
    } else if (arg == "--seed") {
      seed = static_cast<std::uint32_t>(std::atoi(value));
    } else if (arg == "--vocab") {
      vocab = std::atoi(value);
    } else if (arg == "--out") {
      path = value;
    } else if (arg == "--lr") {
      learningRate = std::atof(value);
    } else if (arg == "--threads") {
      tscope::engine::cpu::setIntraOpThreads(std::atoi(value));
      tscope::engine::cpu::setGemmThreads(std::atoi(value));
    } else if (arg == "--profile") {
      profileRows = std::atoi(value);
    } else if (arg == "--expected") {
      expected = value;
    } else {
      std::fprintf(stderr, "example_lstm_lm: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  if (steps < 1 || vocab < 2) {
    std::fprintf(stderr, "example_lstm_lm: expected --steps >= 1 and --vocab >= 2\n");
    return 2;
  }
  nn::manualSeed(seed);
  MarkovText text(vocab, seed);
  auto model = std::make_shared<LanguageModel>(vocab, *config);
  model->setName("lm");

  const std::int64_t T = config->steps;
  auto words = Variable::create(TensorType(DType::Int64, {T + 1, kBatch}), "words");
  const Tensor first = text.batch(T);
  words->setTestValue(first);
  VarPtr inputs = slice(words, 0, 0, T), targets = flatten(slice(words, 0, 1, T + 1));
  VarPtr logits = (*model)(inputs);
  VarPtr loss;
  {
    NameScope scope("loss");
    loss = mean(softmaxCrossEntropyWithLogits(logits, targets));
  }
  loss->setName("loss");
  const std::vector<std::shared_ptr<SharedVariable>> params = model->parameters();
  std::vector<VarPtr> grads;
  std::vector<Update> updates;
  {
    NameScope scope("grad");
    grads = grad(loss, std::vector<VarPtr>(params.begin(), params.end()));
  }
  {
    // Clipping by the global norm: g * min(1, kMaxNorm / |g|).
    NameScope scope("sgd");
    VarPtr squares;
    for (const VarPtr& g : grads) squares = squares ? squares + sum(g * g) : sum(g * g);
    VarPtr scale = minimum(kMaxNorm / (sqrt(squares) + 1e-6), scalarLike(1.0, squares));
    for (std::size_t i = 0; i < params.size(); ++i)
      updates.push_back({params[i], params[i] - grads[i] * scale * learningRate});
  }
  for (const Update& u : model->updates()) updates.push_back(u);  // the dropout generators

  {
    CompileOptions options;
    options.mode = Mode::FastRun;
    options.keepBuffers = true;
    // --profile: the profiler's report after training (its scope tree is the module tree).
    auto profiler = std::make_shared<tscope::prof::Profiler>();
    if (profileRows > 0) options.observers.push_back(profiler);
    Function train = compile({words}, {loss}, updates, options);
    std::printf("LSTM LM, config %s: 2 x %lld units, %lld steps, batch %lld, vocabulary %lld\n",
                config->name, static_cast<long long>(config->hidden), static_cast<long long>(T),
                static_cast<long long>(kBatch), static_cast<long long>(vocab));
    double firstLoss = 0, window = 0, lastWindow = 0;
    const int report = std::max(1, std::min(50, steps / 4));
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      if (step == 1) profiler->setMeasuring(true);  // the first call is a warm-up
      const double l = train({step == 0 ? first : text.batch(T)})[0].item();
      if (step == 0) firstLoss = l;
      window += l;
      if ((step + 1) % report == 0) {
        lastWindow = window / report;
        std::printf("step %d: loss %.4f\n", step + 1, lastWindow);
        window = 0;
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (lastWindow == 0) lastWindow = window / steps;
    if (profileRows > 0) {
      tscope::prof::ReportOptions report;
      report.rows = static_cast<std::size_t>(profileRows);
      std::printf("%s", tscope::prof::reportText(profiler->snapshot(train), report).c_str());
    }
    std::printf("%d steps in %.2f s: %.0f words/s; loss %.4f -> %.4f (log(vocab) = %.4f)\n", steps,
                seconds, static_cast<double>(steps * T * kBatch) / seconds, firstLoss, lastWindow,
                std::log(static_cast<double>(vocab)));
    saveTrainingGraph({words}, {loss}, updates, path, expected, "example_lstm_lm");
    std::printf("wrote %s\n", path.c_str());
    if (!(lastWindow < firstLoss)) {
      std::fprintf(stderr, "example_lstm_lm: the loss did not fall (%.4f -> %.4f)\n", firstLoss,
                   lastWindow);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_lstm_lm: %s\n", e.what());
    return 1;
  }
}

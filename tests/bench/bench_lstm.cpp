// LSTM figures (issue 23): words per second of a two-layer nn::LSTM, forward + backward (the
// gradients of sum(output) wrt every parameter and the input, no update), at the Zaremba
// configurations of the Theano paper's benchmark: small (200 units, 20 steps) and medium (650
// units, 35 steps), batch 20, float32, one thread. "words/s" counts steps x batch per call, as
// PyTorch's peer does (tests/bench/peers/bench_lstm_peers.py runs torch.nn.LSTM on the same sizes).
// /0 forward only, /1 forward + backward. words/s is per CPU second of the benchmark's thread (the
// engine runs on it alone), so a machine shared with other work still gives comparable figures;
// the peer prints both its wall and its CPU figures.
//   bench_lstm [--benchmark_filter=...]

#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/threads.h"
#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/nn/init.h"
#include "engine/nn/recurrent.h"
#include "engine/ops/reduce/reduce.h"

#include <benchmark/benchmark.h>
#include <random>

using namespace tscope::engine;

namespace {

constexpr std::int64_t kBatch = 20;

void BM_Lstm(benchmark::State& state) {
  cpu::setGemmThreads(1);
  cpu::setIntraOpThreads(1);
  const std::int64_t hidden = state.range(0), steps = state.range(1);
  const bool backward = state.range(2) != 0;
  nn::manualSeed(1);
  nn::LSTM lstm(hidden, hidden, 2);
  auto x = Variable::create(TensorType(DType::Float32, {steps, kBatch, hidden}), "x");
  VarPtr y = lstm.call({x})[0];
  std::vector<VarPtr> outputs{y};
  if (backward) {
    std::vector<VarPtr> wrt{x};
    for (const auto& p : lstm.parameters()) wrt.push_back(p);
    outputs = grad(sum(y), wrt);
  }
  CompileOptions options;
  options.mode = Mode::FastRun;
  options.keepBuffers = true;
  Function f = compile({x}, outputs, {}, options);
  const std::vector<Tensor> args{nn::uniformTensor({steps, kBatch, hidden}, 1.0)};
  f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  state.counters["words/s"] = benchmark::Counter(
      static_cast<double>(steps * kBatch) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(hidden == 200 ? "small" : "medium") +
                 (backward ? " fwd+bwd" : " fwd"));
}
BENCHMARK(BM_Lstm)
    ->Args({200, 20, 0})
    ->Args({200, 20, 1})
    ->Args({650, 35, 0})
    ->Args({650, 35, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();

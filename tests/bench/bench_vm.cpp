// VM figures: per-node dispatch overhead on a chain of 0-d float adds (buffers kept between calls,
// so each node is one virtual call plus the add), and one SGD step of the MLP 784-500-10 at batch
// 128 in float32 (the PyTorch peer is tests/bench/peers/mlp_step_torch.py).
//   bench_vm [--benchmark_filter=...]

#include "engine/backends/cpu/gemm.h"
#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>

using namespace tscope::engine;

namespace {

void BM_DispatchScalarAddChain(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  auto x = Variable::create(TensorType(DType::Float32, {}), "x");
  auto one = constant(1.0, DType::Float32);
  VarPtr y = x;
  for (int i = 0; i < n; ++i) y = add(y, one);
  CompileOptions opts;
  opts.keepBuffers = true;
  Function f = compile({x}, {y}, {}, opts);
  std::vector<Tensor> args{Tensor::scalar(DType::Float32, 0)};
  f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  // Seconds per node (printed with an SI prefix: "40n" is 40 ns).
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(n) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DispatchScalarAddChain)->Arg(10000)->Unit(benchmark::kMicrosecond);

Tensor uniform(std::mt19937& rng, Shape shape, float limit) {
  std::uniform_real_distribution<float> d(-limit, limit);
  Tensor t = Tensor::empty(DType::Float32, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

void BM_MlpSgdStep(benchmark::State& state) {
  constexpr std::int64_t kIn = 784, kHidden = 500, kOut = 10, kBatch = 128;
  std::mt19937 rng(1);
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kIn}), "x");
  auto y = Variable::create(TensorType(DType::Int64, {kUnknownDim}), "y");
  auto W1 = SharedVariable::create(uniform(rng, {kIn, kHidden}, 0.07f), "W1");
  auto b1 = SharedVariable::create(Tensor::zeros(DType::Float32, {kHidden}), "b1");
  auto W2 = SharedVariable::create(uniform(rng, {kHidden, kOut}, 0.1f), "W2");
  auto b2 = SharedVariable::create(Tensor::zeros(DType::Float32, {kOut}), "b2");
  auto h = tanh(dot(x, W1) + b1);
  auto loss = mean(softmaxCrossEntropyWithLogits(dot(h, W2) + b2, y));
  auto g = grad(loss, std::vector<VarPtr>{W1, b1, W2, b2});
  std::vector<Update> updates{{W1, W1 - g[0] * 0.01}, {b1, b1 - g[1] * 0.01}, {W2, W2 - g[2] * 0.01},
                              {b2, b2 - g[3] * 0.01}};
  CompileOptions opts;
  opts.keepBuffers = true;
  opts.mode = state.range(0) == 0 ? Mode::None : Mode::FastRun;  // /0: as built, /1: fast_run
  Function step = compile({x, y}, {loss}, updates, opts);
  Tensor xb = uniform(rng, {kBatch, kIn}, 1.0f);
  Tensor yb = Tensor::empty(DType::Int64, {kBatch});
  for (std::int64_t i = 0; i < kBatch; ++i) yb.data<std::int64_t>()[i] = i % kOut;
  std::vector<Tensor> args{xb, yb};
  step(args);
  for (auto _ : state) benchmark::DoNotOptimize(step(args));
  state.counters["nodes"] = static_cast<double>(step.graph().nodeCount());
}
BENCHMARK(BM_MlpSgdStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

// One BLAS thread, as the PyTorch peer runs with torch.set_num_threads(1).
int main(int argc, char** argv) {
  tscope::engine::cpu::setGemmThreads(1);
  std::printf("GEMM backend: %s, 1 thread\n", tscope::engine::cpu::gemmBackendName().c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

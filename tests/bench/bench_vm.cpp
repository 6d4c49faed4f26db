// VM figures: per-node dispatch overhead on a chain of 0-d float adds (buffers kept between calls,
// so each node is one virtual call plus the add) with no observer (/0), with one observer that
// does nothing (/1), with the VM's timing flag (/2) and with a correlation sink that does nothing
// (/3: the cost of the VM's push/pop brackets, Note [Correlation]); one SGD step of the MLP
// 784-500-10 at batch 128 in float32 (the PyTorch peer is tests/bench/peers/mlp_step_torch.py); and
// a non-inline OpFromGraph whose body is an elementwise chain, compiled with mode none (/0: the
// body runs as written) and fast_run (/1: the body runs optimized, fused, as a VM frame).
//   bench_vm [--benchmark_filter=...]

#include "engine/backends/cpu/gemm.h"
#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/graph/op_from_graph.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/vm/correlation.h"
#include "mlp_step.h"

#include <benchmark/benchmark.h>
#include <cstdio>
#include <random>

using namespace tscope::engine;

namespace {

// An observer that does nothing: the cost of the observer path itself.
struct NullObserver final : ExecutionObserver {
  void beforeNode(VM&, const NodeEvent&) override {}
  void afterNode(VM&, const NodeEvent&) override {}
};

// A correlation sink that does nothing: the cost of the brackets themselves.
struct NullSink final : CorrelationSink {
  void push(std::span<const std::int64_t>, std::int64_t) override {}
  void pop() override {}
};

void BM_DispatchScalarAddChain(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  auto x = Variable::create(TensorType(DType::Float32, {}), "x");
  auto one = constant(1.0, DType::Float32);
  VarPtr y = x;
  for (int i = 0; i < n; ++i) y = add(y, one);
  CompileOptions opts;
  opts.keepBuffers = true;
  Function f = compile({x}, {y}, {}, opts);
  const auto variant = state.range(1);
  if (variant == 1) f.vm().addObserver(std::make_shared<NullObserver>());
  if (variant == 2) f.vm().setTiming(true);
  if (variant == 3) f.vm().setCorrelationSink(std::make_shared<NullSink>());
  std::vector<Tensor> args{Tensor::scalar(DType::Float32, 0)};
  f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  // Seconds per node (printed with an SI prefix: "40n" is 40 ns).
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(variant == 0   ? "no observer"
                 : variant == 1 ? "one observer"
                 : variant == 2 ? "timing flag"
                                : "null correlation sink");
}
BENCHMARK(BM_DispatchScalarAddChain)
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Args({10000, 2})
    ->Args({10000, 3})
    ->Unit(benchmark::kMicrosecond);

// gelu-like body of 12 elementwise nodes on 256x1024 floats, applied 4 times.
void BM_OpFromGraphBody(benchmark::State& state) {
  auto a = Variable::create(TensorType(DType::Float32, {kUnknownDim, kUnknownDim}), "a");
  VarPtr h = a;
  for (int i = 0; i < 4; ++i)
    h = tanh(h * 0.7978845608 + (h * h * h) * 0.0356774081) * 0.5 + h * 0.5;
  auto body = opFromGraph({a}, {h}, "act");
  auto x = Variable::create(TensorType(DType::Float32, {kUnknownDim, kUnknownDim}), "x");
  VarPtr y = x;
  for (int i = 0; i < 4; ++i) y = (*body)({y});
  CompileOptions opts;
  opts.mode = state.range(0) == 0 ? Mode::None : Mode::FastRun;
  Function f = compile({x}, {y}, {}, opts);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-2, 2);
  Tensor xv = Tensor::empty(DType::Float32, {256, 1024});
  for (std::int64_t i = 0; i < xv.numel(); ++i) xv.data<float>()[i] = d(rng);
  std::vector<Tensor> args{xv};
  f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  state.SetLabel(state.range(0) == 0 ? "mode none" : "fast_run");
}
BENCHMARK(BM_OpFromGraphBody)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_MlpSgdStep(benchmark::State& state) {
  tscope::bench::MlpStep mlp(0.01);
  CompileOptions opts;
  opts.keepBuffers = true;
  opts.mode = state.range(0) == 0 ? Mode::None : Mode::FastRun;  // /0: as built, /1: fast_run
  Function step = mlp.compile(opts);
  const std::vector<Tensor>& args = mlp.args;
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

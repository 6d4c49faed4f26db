// Scan figures (issue 23): the per-iteration overhead of the loop, a 1,000-step scan over a tiny
// body (one 0-d float add: s[t] = s[t-1] + x[t]), reported per step ("per_step"), compiled with
// fast_run and buffers kept (/0), with one observer that does nothing (/1, every body node's
// events), and the reference perform (/2, the body evaluated node by node without the VM); the
// same steps written out as 1,000 nodes without a loop (BM_UnrolledAdds) for comparison; and an
// RNN step h = tanh(x W + h U) of width 64 over 100 steps, forward (/0) and forward+backward (/1).
//   bench_scan [--benchmark_filter=...]

#include "engine/compile/function.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/control/scan.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/shape/subtensor.h"

#include <benchmark/benchmark.h>

using namespace tscope::engine;

namespace {

struct NullObserver final : ExecutionObserver {
  void beforeNode(VM&, const NodeEvent&) override {}
  void afterNode(VM&, const NodeEvent&) override {}
};

void BM_ScanTinyBody(benchmark::State& state) {
  const std::int64_t steps = state.range(0);
  const auto variant = state.range(1);
  auto x = Variable::create(TensorType(DType::Float32, {steps}), "x");
  auto s0 = Variable::create(TensorType(DType::Float32, {}), "s0");
  VarPtr s = scan([](const std::vector<VarPtr>& a) { return std::vector<VarPtr>{a[1] + a[0]}; },
                  {x}, {s0})[0];
  CompileOptions opts;
  opts.keepBuffers = true;
  Function f = compile({x, s0}, {s}, {}, opts);
  if (variant == 1) f.vm().addObserver(std::make_shared<NullObserver>());
  std::vector<Tensor> args{Tensor::full(DType::Float32, {steps}, 1.0),
                           Tensor::scalar(DType::Float32, 0)};
  const Apply& node = *s->owner();
  Tensor nSteps = Tensor::scalar(DType::Int64, -1);
  const std::vector<const Tensor*> performIns{&nSteps, &args[0], &args[1]};
  Tensor out;
  const std::vector<Tensor*> outs{&out};
  f(args);
  for (auto _ : state) {
    if (variant == 2) {
      node.op().perform(node, performIns, outs);
      benchmark::DoNotOptimize(out);
    } else {
      benchmark::DoNotOptimize(f(args));
    }
  }
  state.counters["per_step"] =
      benchmark::Counter(static_cast<double>(steps) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(variant == 0 ? "VM loop frames" : variant == 1 ? "one observer" : "perform");
}
BENCHMARK(BM_ScanTinyBody)
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Args({1000, 2})
    ->Unit(benchmark::kMicrosecond);

void BM_UnrolledAdds(benchmark::State& state) {
  const std::int64_t steps = state.range(0);
  auto x = Variable::create(TensorType(DType::Float32, {steps}), "x");
  auto s0 = Variable::create(TensorType(DType::Float32, {}), "s0");
  VarPtr s = s0;
  for (std::int64_t t = 0; t < steps; ++t) s = s + select(x, 0, t);
  CompileOptions opts;
  opts.keepBuffers = true;
  Function f = compile({x, s0}, {s}, {}, opts);
  std::vector<Tensor> args{Tensor::full(DType::Float32, {steps}, 1.0),
                           Tensor::scalar(DType::Float32, 0)};
  f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  state.counters["per_step"] =
      benchmark::Counter(static_cast<double>(steps) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_UnrolledAdds)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_ScanRnn(benchmark::State& state) {
  const std::int64_t steps = 100, width = 64, batch = 16;
  auto x = Variable::create(TensorType(DType::Float32, {steps, batch, width}), "x");
  auto h0 = Variable::create(TensorType(DType::Float32, {batch, width}), "h0");
  auto W = SharedVariable::create(Tensor::full(DType::Float32, {width, width}, 0.01), "W");
  auto U = SharedVariable::create(Tensor::full(DType::Float32, {width, width}, 0.01), "U");
  VarPtr h = scan(
      [](const std::vector<VarPtr>& a) {
        return std::vector<VarPtr>{tanh(dot(a[0], a[2]) + dot(a[1], a[3]))};
      },
      {x}, {h0}, {W, U}, {}, -1, {.label = "rnn"})[0];
  VarPtr cost = sum(h);
  std::vector<VarPtr> outputs{cost};
  if (state.range(0) == 1)
    for (const VarPtr& g : grad(cost, {W, U})) outputs.push_back(g);
  Function f = compile({x, h0}, outputs);
  std::vector<Tensor> args{Tensor::full(DType::Float32, {steps, batch, width}, 0.1),
                           Tensor::full(DType::Float32, {batch, width}, 0.0)};
  f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  state.counters["per_step"] =
      benchmark::Counter(static_cast<double>(steps) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(state.range(0) == 0 ? "forward" : "forward+backward");
}
BENCHMARK(BM_ScanRnn)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

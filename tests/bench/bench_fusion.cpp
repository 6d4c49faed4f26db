// Elementwise fusion figures (issue 4: a fused chain of 5 ops on 10M float32 elements at least 3x
// faster than unfused; fusion linear in graph size).
//   - y = tanh(x * a + b) * c - x (a transcendental in the chain: compute-bound once fused) and
//     y = relu(x * a + b) * c - x (the usual scale/shift/activation/residual tail: memory-bound)
//     on 10M float32 elements, unfused (the graph compile() builds in
//     mode none) and after fuseElementwise, both run by a VM as compile() runs them: with fresh
//     buffers each call (compile's default: every 40 MB buffer is a new allocation, paid in page
//     faults) and with kept buffers (CompileOptions::keepBuffers: only the arithmetic and the
//     memory traffic remain); with a, b, c 0-d scalars (a scale-and-shift tail) and with a, b, c
//     10M tensors (four inputs read per element).
//   - fuseElementwise on graphs of 10k and 100k nodes (layers of a dot and a 9-op elementwise
//   tail).
// main() first prints the medians of 9 alternating runs of each chain and their ratio (not when a
// --benchmark_filter is given), then runs the Google Benchmark cases (--benchmark_repetitions
// gives medians there too). The kernels are the widest instruction set the CPU runs;
// TSCOPE_CPU_KERNELS=base|avx2 measures a narrower one (Note [Kernel instruction sets]).
//   bench_fusion [--benchmark_filter=...]

#include "engine/graph/function_graph.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/rewrite/rules/fusion.h"
#include "engine/vm/vm.h"

#include <algorithm>
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

using namespace tscope::engine;

namespace {

constexpr std::int64_t kElements = 10'000'000;

Tensor uniform(std::mt19937& rng, Shape shape) {
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  Tensor t = Tensor::empty(DType::Float32, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// The chain, its graph (fused or not) and a VM over it with its input values.
struct Chain {
  std::unique_ptr<FunctionGraph> graph;
  std::unique_ptr<VM> vm;
  std::vector<Tensor> values;

  bool keep;

  Chain(bool fused, bool scalarParameters, bool keepBuffers, bool transcendental = true)
      : keep(keepBuffers) {
    const Shape param = scalarParameters ? Shape{} : Shape{kElements};
    auto x = Variable::create(TensorType(DType::Float32, {kElements}), "x");
    std::vector<VarPtr> inputs{x};
    for (const char* name : {"a", "b", "c"})
      inputs.push_back(Variable::create(TensorType(DType::Float32, param), name));
    const VarPtr pre = x * inputs[1] + inputs[2];
    auto y = (transcendental ? tanh(pre) : relu(pre)) * inputs[3] - x;
    graph = std::make_unique<FunctionGraph>(inputs, std::vector<VarPtr>{y});
    if (fused && fuseElementwise(*graph) != 1)
      throw std::logic_error("bench_fusion: expected one Composite");
    vm = std::make_unique<VM>(*graph, graph->toposort(), VMOptions{keepBuffers});
    std::mt19937 rng(1);
    values.push_back(uniform(rng, {kElements}));
    for (int i = 0; i < 3; ++i) values.push_back(uniform(rng, param));
    run();  // the first call allocates the kept buffers
  }
  void run() {
    vm->start(values);
    while (vm->run() != VM::Status::Finished) {
    }
    if (!keep)
      vm->outputValues();  // handed to the caller, as Function does: the next call allocates
  }
};

void BM_Chain(benchmark::State& state) {
  Chain chain(state.range(0) != 0, state.range(1) != 0, state.range(2) != 0, state.range(3) != 0);
  for (auto _ : state) chain.run();
  state.counters["nodes"] = static_cast<double>(chain.graph->nodeCount());
  state.SetBytesProcessed(state.iterations() * kElements * 4);
}
BENCHMARK(BM_Chain)
    ->ArgNames({"fused", "scalar_params", "keep_buffers", "tanh"})
    ->ArgsProduct({{0, 1}, {1, 0}, {0, 1}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Layers of dot(h, w) followed by 9 elementwise ops with their own constants: 10 nodes a layer.
std::unique_ptr<FunctionGraph> layeredGraph(int layers) {
  auto x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  auto w = Variable::create(TensorType(DType::Float32, {3, 3}), "w");
  VarPtr h = x;
  for (int layer = 0; layer < layers; ++layer) {
    VarPtr z = dot(h, w) * 0.5 + 1.0;
    h = sigmoid(exp(-(z * z)) + z) * 0.9 - 0.1;
  }
  return std::make_unique<FunctionGraph>(std::vector<VarPtr>{x, w}, std::vector<VarPtr>{h});
}

void BM_FuseGraph(benchmark::State& state) {
  const auto layers = static_cast<int>(state.range(0));
  auto original = layeredGraph(layers);
  std::size_t created = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto fg = original->clone();
    state.ResumeTiming();
    created = fuseElementwise(*fg);
    state.PauseTiming();
    fg.reset();  // freeing the pruned nodes is not fusion's time
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(original->nodeCount());
  state.counters["composites"] = static_cast<double>(created);
}
BENCHMARK(BM_FuseGraph)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond)->Iterations(3);

// Medians of `runs` calls of each chain, the two alternating so that both see the same load.
std::pair<double, double> medianMs(Chain& unfused, Chain& fused, int runs) {
  std::vector<double> ms[2];
  for (int i = 0; i < runs; ++i) {
    for (int k = 0; k < 2; ++k) {
      Chain& chain = k == 0 ? unfused : fused;
      const auto t0 = std::chrono::steady_clock::now();
      chain.run();
      ms[k].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  for (auto& m : ms) std::sort(m.begin(), m.end());
  return {ms[0][ms[0].size() / 2], ms[1][ms[1].size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  bool filtered = false;
  for (int i = 1; i < argc; ++i)
    filtered = filtered || std::string_view(argv[i]).starts_with("--benchmark_filter");
  for (bool transcendental : {true, false}) {
    for (bool keep : {false, true}) {
      if (filtered) break;
      for (bool scalarParameters : {true, false}) {
        Chain unfused(false, scalarParameters, keep, transcendental),
            fused(true, scalarParameters, keep, transcendental);
        const auto [u, f] = medianMs(unfused, fused, 9);
        std::printf(
            "%s(x*a+b)*c-x, 10M float32, a/b/c %s, %s buffers: unfused %.1f ms (%zu nodes), "
            "fused %.1f ms (%zu node), %.2fx\n",
            transcendental ? "tanh" : "relu", scalarParameters ? "0-d" : "10M",
            keep ? "kept" : "fresh", u, unfused.graph->nodeCount(), f, fused.graph->nodeCount(),
            u / f);
        std::fflush(stdout);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Graph-core figures: building an N-node graph, FunctionGraph construction, toposort, clone, and
// save + load of its .tsg file, at 10k and 100k nodes. After the table it prints, for each step,
// time(100k) / time(10k): under 12 means no super-linear step (issue 2's target; each step should
// also stay under 1 s at 100k).
//   bench_graph [--benchmark_filter=...]

#include "engine/graph/function_graph.h"
#include "engine/graph/traversal.h"
#include "engine/io/tsg.h"
#include "engine/ops/elemwise/elemwise.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <malloc.h>
#include <map>
#include <random>
#include <unistd.h>

using namespace tscope::engine;

namespace {

// A DNN-like DAG: n Elemwise nodes over 8 inputs, each reading one recent value and one value from
// further back (skip connections), a constant every 16 nodes, a scope per block of 50 nodes.
std::vector<VarPtr> buildGraph(std::int64_t n, std::vector<VarPtr>& inputs) {
  std::mt19937 rng(42);
  inputs.clear();
  for (int i = 0; i < 8; ++i)
    inputs.push_back(Variable::create(TensorType(DType::Float32, {kUnknownDim, 128}), "x" + std::to_string(i)));
  std::vector<VarPtr> values = inputs;
  static const ScalarOp kBinary[] = {ScalarOp::Add, ScalarOp::Mul, ScalarOp::Sub, ScalarOp::Maximum};
  static const ScalarOp kUnary[] = {ScalarOp::Tanh, ScalarOp::Exp, ScalarOp::Neg, ScalarOp::Sigmoid};
  auto half = Constant::create(Tensor::scalar(DType::Float32, 0.5));
  for (std::int64_t i = 0; i < n;) {
    NameScope block("block" + std::to_string(i / 50));
    for (int k = 0; k < 50 && i < n; ++k, ++i) {
      std::size_t size = values.size();
      const VarPtr& recent = values[size - 1 - rng() % std::min<std::size_t>(size, 4)];
      const VarPtr& far = values[size - 1 - rng() % std::min<std::size_t>(size, 200)];
      VarPtr v;
      if (i % 16 == 0) v = elemwise(ScalarOp::Mul, {recent, half});
      else if (rng() % 3 == 0) v = elemwise(kUnary[rng() % 4], {recent});
      else v = elemwise(kBinary[rng() % 4], {recent, far});
      values.push_back(std::move(v));
    }
  }
  // Outputs: the last value and every 1000th, so nothing is dead code.
  std::vector<VarPtr> outputs{values.back()};
  for (std::size_t i = inputs.size(); i + 1 < values.size(); i += 1000) outputs.push_back(values[i]);
  return outputs;
}

void BM_BuildGraph(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<VarPtr> inputs;
    auto outputs = buildGraph(state.range(0), inputs);
    benchmark::DoNotOptimize(outputs.data());
    state.PauseTiming();
    outputs.clear();  // freeing is not part of building
    state.ResumeTiming();
  }
}

void BM_FunctionGraphConstruct(benchmark::State& state) {
  std::vector<VarPtr> inputs;
  auto outputs = buildGraph(state.range(0), inputs);
  for (auto _ : state) {
    auto fg = std::make_unique<FunctionGraph>(inputs, outputs, FunctionGraph::Ownership::Clone);
    benchmark::DoNotOptimize(fg->nodeCount());
    state.PauseTiming();
    fg.reset();  // freeing the clone is not part of construction
    state.ResumeTiming();
  }
}

void BM_Toposort(benchmark::State& state) {
  std::vector<VarPtr> inputs;
  auto outputs = buildGraph(state.range(0), inputs);
  FunctionGraph fg(inputs, outputs);
  for (auto _ : state) benchmark::DoNotOptimize(fg.toposort().size());
}

void BM_Clone(benchmark::State& state) {
  std::vector<VarPtr> inputs;
  auto outputs = buildGraph(state.range(0), inputs);
  FunctionGraph fg(inputs, outputs);
  for (auto _ : state) {
    auto copy = fg.clone();
    benchmark::DoNotOptimize(copy->nodeCount());
    state.PauseTiming();
    copy.reset();
    state.ResumeTiming();
  }
}

std::filesystem::path tempPath() {
  return std::filesystem::temp_directory_path() / ("bench_graph_" + std::to_string(::getpid()) + ".tsg");
}

// A document holding the n-node graph.
io::TsgDocument documentOf(std::int64_t n) {
  std::vector<VarPtr> inputs;
  auto outputs = buildGraph(n, inputs);
  io::TsgDocument doc;
  doc.original = std::make_unique<FunctionGraph>(inputs, outputs);
  return doc;
}

void BM_SaveTsg(benchmark::State& state) {
  io::TsgDocument doc = documentOf(state.range(0));
  auto path = tempPath();
  for (auto _ : state) io::saveTsg(doc, path);
  state.counters["MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  std::filesystem::remove(path);
}

void BM_LoadTsg(benchmark::State& state) {
  auto path = tempPath();
  io::saveTsg(documentOf(state.range(0)), path);
  for (auto _ : state) {
    io::TsgDocument loaded = io::loadTsg(path);
    benchmark::DoNotOptimize(loaded.original->nodeCount());
    state.PauseTiming();
    loaded = {};
    state.ResumeTiming();
  }
  std::filesystem::remove(path);
}

// Five repetitions each; the ratios use the medians, which this shared 2-core machine's noise
// moves far less than single runs.
#define TSCOPE_GRAPH_SIZES(bm)                                                                  \
  BENCHMARK(bm)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond)->MinTime(0.2)          \
      ->Repetitions(5)->DisplayAggregatesOnly(true)
TSCOPE_GRAPH_SIZES(BM_BuildGraph);
TSCOPE_GRAPH_SIZES(BM_FunctionGraphConstruct);
TSCOPE_GRAPH_SIZES(BM_Toposort);
TSCOPE_GRAPH_SIZES(BM_Clone);
TSCOPE_GRAPH_SIZES(BM_SaveTsg);
TSCOPE_GRAPH_SIZES(BM_LoadTsg);

// Collects real times per benchmark and size to print the scaling ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Aggregate || r.aggregate_name != "median") continue;
      std::string name = r.run_name.function_name;
      m_times[name][std::stol(r.run_name.args)] = r.GetAdjustedRealTime();
    }
  }
  void printRatios() const {
    std::printf("\nscaling of the medians, time(100k) / time(10k) (target < 12; each step < 1000 ms at 100k):\n");
    for (const auto& [name, bySize] : m_times) {
      auto small = bySize.find(10'000), large = bySize.find(100'000);
      if (small == bySize.end() || large == bySize.end()) continue;
      std::printf("  %-28s %8.2f ms at 10k %9.1f ms at 100k   ratio %5.1f\n", name.c_str(), small->second,
                  large->second, large->second / small->second);
    }
  }

 private:
  std::map<std::string, std::map<long, double>> m_times;
};

}  // namespace

int main(int argc, char** argv) {
  mallopt(M_MXFAST, 0);  // as the tensorscope executable runs (gui/main.cpp)
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.printRatios();
  benchmark::Shutdown();
  return 0;
}

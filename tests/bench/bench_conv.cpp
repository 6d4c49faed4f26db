// float32 2-d convolution and pooling on the CPU kernels (engine/backends/cpu/conv.h, pool.h):
// forward, gradient wrt the input and wrt the filters of a ResNet-like 3x3 layer (N=8, 64 -> 64
// channels, 28x28, padding 1), a strided 1x1 projection and a grouped layer; max and average
// pooling 3x3 / stride 2 / padding 1 on the same activations.
//   bench_conv [--benchmark_filter=...]
// GFLOP/s counts 2 * N * O * OH * OW * C/groups * KH * KW per pass (the same for the two
// gradients).

#include "engine/backends/cpu/conv.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/pool.h"

#include <benchmark/benchmark.h>
#include <random>
#include <vector>

using namespace tscope::engine;

namespace {

std::vector<float> randomValues(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// args: N, C, H (= W), O, K (= KH = KW), stride, padding, groups.
cpu::Conv2dGeometry geometryOf(const benchmark::State& state) {
  cpu::Conv2dGeometry g;
  g.n = state.range(0), g.c = state.range(1), g.h = g.w = state.range(2), g.o = state.range(3);
  g.kh = g.kw = state.range(4);
  g.sh = g.sw = state.range(5);
  g.ph = g.pw = state.range(6);
  g.groups = state.range(7);
  g.oh = cpu::convOutputSize(g.h, g.kh, g.sh, g.ph, g.dh);
  g.ow = cpu::convOutputSize(g.w, g.kw, g.sw, g.pw, g.dw);
  return g;
}

void setFlops(benchmark::State& state, const cpu::Conv2dGeometry& g) {
  const double flops =
      2.0 * static_cast<double>(g.n * g.o * g.oh * g.ow * g.cPerGroup() * g.kh * g.kw);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

enum class Pass { Forward, GradInputs, GradWeights };

template <Pass kPass>
void BM_Conv(benchmark::State& state) {
  const cpu::Conv2dGeometry g = geometryOf(state);
  const std::vector<float> x = randomValues(g.n * g.c * g.h * g.w, 1);
  const std::vector<float> w = randomValues(g.o * g.cPerGroup() * g.kh * g.kw, 2);
  const std::vector<float> gy = randomValues(g.n * g.o * g.oh * g.ow, 3);
  std::vector<float> out(static_cast<std::size_t>(kPass == Pass::Forward      ? gy.size()
                                                  : kPass == Pass::GradInputs ? x.size()
                                                                              : w.size()));
  for (auto _ : state) {
    if constexpr (kPass == Pass::Forward) cpu::conv2dForward(g, x.data(), w.data(), out.data());
    if constexpr (kPass == Pass::GradInputs)
      cpu::conv2dGradInputs(g, w.data(), gy.data(), out.data());
    if constexpr (kPass == Pass::GradWeights)
      cpu::conv2dGradWeights(g, x.data(), gy.data(), out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  setFlops(state, g);
}

void convArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "C", "HW", "O", "K", "s", "p", "g"});
  b->Args({8, 64, 28, 64, 3, 1, 1, 1});   // ResNet 3x3 block
  b->Args({8, 64, 28, 128, 1, 2, 0, 1});  // strided 1x1 projection
  b->Args({8, 64, 28, 64, 3, 1, 1, 8});   // grouped (ResNeXt-like)
  b->Args({32, 3, 32, 32, 5, 1, 2, 1});   // first layer of a small CIFAR net
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Conv<Pass::Forward>)->Apply(convArgs);
BENCHMARK(BM_Conv<Pass::GradInputs>)->Apply(convArgs);
BENCHMARK(BM_Conv<Pass::GradWeights>)->Apply(convArgs);

template <bool kMax>
void BM_Pool(benchmark::State& state) {
  cpu::Pool2dGeometry g;
  g.n = 8, g.c = 64, g.h = g.w = 28, g.kh = g.kw = 3, g.sh = g.sw = 2, g.ph = g.pw = 1;
  g.oh = cpu::poolOutputSize(g.h, g.kh, g.sh, g.ph);
  g.ow = cpu::poolOutputSize(g.w, g.kw, g.sw, g.pw);
  const std::vector<float> x = randomValues(g.n * g.c * g.h * g.w, 4);
  std::vector<float> y(static_cast<std::size_t>(g.n * g.c * g.oh * g.ow));
  for (auto _ : state) {
    if constexpr (kMax)
      cpu::maxPool2dForward(g, x.data(), y.data());
    else
      cpu::avgPool2dForward(g, false, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(x.size() * sizeof(float)));
}
BENCHMARK(BM_Pool<true>)->Name("BM_MaxPool2d")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Pool<false>)->Name("BM_AvgPool2d")->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  cpu::setGemmThreads(1);  // figures independent of the machine's other cores (bench_gemm.cpp)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

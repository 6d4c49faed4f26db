// float32 matrix products: the CPU GEMM kernel (engine/backends/cpu/gemm.h) and Dot::perform on
// the same shapes: an MLP layer (128 x 784) . (784 x 500) and a square 512^3 product. Built once
// with -DTSCOPE_EIGEN_USE_BLAS=ON (Eigen forwards to OpenBLAS) and once with OFF (Eigen's own
// kernels) to pick the default of that option (engine/CMakeLists.txt has the figures).
//   bench_gemm [--benchmark_filter=...]
//
// Threads: main() limits OpenBLAS to one thread (setGemmThreads(1), i.e.
// openblas_set_num_threads(1)) so the two builds compare like for like and figures do not depend
// on how busy the machine's other cores are; Eigen is built without OpenMP and always runs on the
// calling thread.

#include "engine/backends/cpu/gemm.h"
#include "engine/graph/apply.h"
#include "engine/ops/blas/dot.h"
#include "engine/tensor/tensor.h"

#include <benchmark/benchmark.h>
#include <cstdio>
#include <random>
#include <vector>

using namespace tscope::engine;

namespace {

Tensor randomMatrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (double& x : v) x = dist(rng);
  return Tensor::fromDoubles(DType::Float32, {rows, cols}, v);
}

void setFlops(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// args: m, k, n (the product (m x k) . (k x n)).
void BM_Gemm(benchmark::State& state) {
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tensor a = randomMatrix(m, k, 1), b = randomMatrix(k, n, 2);
  Tensor c = Tensor::empty(DType::Float32, {m, n});
  for (auto _ : state) {
    cpu::gemm(false, false, m, n, k, 1.0f, a.data<float>(), k, b.data<float>(), n, 0.0f,
              c.data<float>(), n);
    benchmark::DoNotOptimize(c.data<float>());
    benchmark::ClobberMemory();
  }
  setFlops(state, m, n, k);
}

// The op on the same shapes, with the output buffer reused between calls as the VM does.
void BM_DotPerform(benchmark::State& state) {
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const Tensor a = randomMatrix(m, k, 1), b = randomMatrix(k, n, 2);
  const auto op = std::make_shared<Dot>();
  const ApplyPtr node = op->makeNode(
      {Variable::create(TensorType::ofValue(a)), Variable::create(TensorType::ofValue(b))});
  const Tensor* inputs[] = {&a, &b};
  Tensor out;
  Tensor* outputs[] = {&out};
  for (auto _ : state) {
    op->perform(*node, inputs, outputs);
    benchmark::DoNotOptimize(out.rawData());
    benchmark::ClobberMemory();
  }
  setFlops(state, m, n, k);
}

void shapes(benchmark::internal::Benchmark* b) {
  // An MLP layer, a square product, and a transformer encoder's projections (d 256, ff 1024,
  // sequence 128: q/k/v in-projection, feed-forward up and down).
  b->Args({128, 784, 500})
      ->Args({512, 512, 512})
      ->Args({128, 256, 768})
      ->Args({128, 256, 1024})
      ->Args({128, 1024, 256})
      ->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Gemm)->Apply(shapes);
BENCHMARK(BM_DotPerform)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  cpu::setGemmThreads(1);
  std::printf("GEMM backend: %s, 1 thread\n", cpu::gemmBackendName().c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// The cost of the debugger's checks (engine/debug/nan_guard.h), paired in one run: one SGD step of
// the MLP 784-500-10 at batch 128 (fast_run, buffers kept) and ResNet-18 inference (the ONNX
// fixture, fast_run, when ONNX is built), each with NanGuard (nan + inf + big) off (/0) and on
// (/1); and the cost of keeping parameters safe (Note [Parameters stay whole]): the MLP step with
// an observer that does nothing (/2), which makes Function copy every weight an update overwrites
// in place; the guard without the copies of inputs that inplace nodes overwrite (/3); and the
// guard scanning every output, without Note [Provably clean outputs] (/4). The scans use the
// widest vectors the processor has; TSCOPE_NAN_SCAN=sse2 or avx2 narrows them. Off and
// on run one after the other in one process; on a shared machine, repeat
// (--benchmark_repetitions=5 --benchmark_report_aggregates_only=true) and compare medians.
//   bench_debug [--benchmark_filter=...] [--benchmark_repetitions=5]

#include "engine/backends/cpu/gemm.h"
#include "engine/compile/function.h"
#include "engine/debug/nan_guard.h"
#include "engine/grad/grad.h"
#include "engine/ops/basic.h"
#include "engine/ops/blas/dot.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/reduce/reduce.h"
#include "mlp_step.h"
#ifdef TSCOPE_BENCH_WITH_ONNX
#include "engine/io/npy.h"
#include "engine/io/onnx/onnx_import.h"
#endif

#include <algorithm>
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>

// Options are written as designated initializers naming only what a case sets.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::engine;

namespace {

struct NullObserver final : ExecutionObserver {
  void afterNode(VM&, const NodeEvent&) override {}
};

std::shared_ptr<ExecutionObserver> observerFor(std::int64_t variant,
                                               std::shared_ptr<debug::NanGuard>* guard) {
  if (variant == 1) {
    *guard = std::make_shared<debug::NanGuard>(debug::NanGuardOptions{});  // nan, inf, big
    return *guard;
  }
  if (variant == 2) return std::make_shared<NullObserver>();
  if (variant == 3) {  // without Note [Inplace inputs]'s copies
    *guard = std::make_shared<debug::NanGuard>(debug::NanGuardOptions{.explainInplace = false});
    return *guard;
  }
  if (variant == 4) {  // every output scanned
    *guard = std::make_shared<debug::NanGuard>(debug::NanGuardOptions{.proveClean = false});
    return *guard;
  }
  return nullptr;
}
const char* labelFor(std::int64_t variant) {
  return variant == 0   ? "guard off"
         : variant == 1 ? "NanGuard nan+inf+big"
         : variant == 2 ? "null observer"
         : variant == 3 ? "NanGuard, explainInplace off"
                        : "NanGuard, proveClean off";
}

void BM_MlpSgdStep(benchmark::State& state) {
  tscope::bench::MlpStep mlp(0.001);
  CompileOptions opts;
  opts.keepBuffers = true;
  opts.mode = Mode::FastRun;
  std::shared_ptr<debug::NanGuard> guard;
  if (auto o = observerFor(state.range(0), &guard)) opts.observers.push_back(o);
  Function step = mlp.compile(opts);
  if (guard) guard->watch(step);
  const std::vector<Tensor>& args = mlp.args;
  step(args);
  for (auto _ : state) benchmark::DoNotOptimize(step(args));
  if (guard) {
    state.counters["values_per_step"] =
        static_cast<double>(guard->valuesChecked()) / static_cast<double>(guard->calls());
    state.counters["proven_per_step"] =
        static_cast<double>(guard->valuesProven()) / static_cast<double>(guard->calls());
    state.counters["param_copies_per_step"] =
        static_cast<double>(guard->parameterCopies()) / static_cast<double>(guard->calls());
    if (guard->eventCount() != 0) state.SkipWithError("NanGuard reported an event");
  }
  state.SetLabel(labelFor(state.range(0)));
}
BENCHMARK(BM_MlpSgdStep)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// Note [Paired timing]: on a shared machine, consecutive benchmarks see different loads; here each
// iteration times one call without and one with the observer (in alternating order) and the
// counters are the medians and the overhead of the medians.
template <class Off, class On>
void paired(benchmark::State& state, Off&& off, On&& on) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> a, b;
  bool flip = false;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (flip)
      on();
    else
      off();
    auto t1 = Clock::now();
    if (flip)
      off();
    else
      on();
    auto t2 = Clock::now();
    const double first = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double second = std::chrono::duration<double, std::milli>(t2 - t1).count();
    a.push_back(flip ? second : first);
    b.push_back(flip ? first : second);
    flip = !flip;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const double ma = median(a), mb = median(b);
  state.counters["off_ms"] = ma;
  state.counters["on_ms"] = mb;
  state.counters["overhead_pct"] = ma > 0 ? 100.0 * (mb - ma) / ma : 0.0;
  // The fastest call of each: on a machine shared with other work they move less than medians.
  const double la = a.empty() ? 0.0 : *std::min_element(a.begin(), a.end());
  const double lb = b.empty() ? 0.0 : *std::min_element(b.begin(), b.end());
  state.counters["overhead_min_pct"] = la > 0 ? 100.0 * (lb - la) / la : 0.0;
}

void BM_MlpSgdStepPaired(benchmark::State& state) {
  tscope::bench::MlpStep mlp(0.001);
  CompileOptions opts;
  opts.keepBuffers = true;
  opts.mode = Mode::FastRun;
  Function off = mlp.compile(opts);
  std::shared_ptr<debug::NanGuard> guard;
  opts.observers.push_back(observerFor(state.range(0), &guard));
  Function on = mlp.compile(opts);
  const std::vector<Tensor>& args = mlp.args;
  off(args);
  on(args);
  paired(
      state, [&] { benchmark::DoNotOptimize(off(args)); },
      [&] { benchmark::DoNotOptimize(on(args)); });
  if (guard && guard->eventCount() != 0) state.SkipWithError("NanGuard reported an event");
  state.SetLabel(labelFor(state.range(0)));
}
BENCHMARK(BM_MlpSgdStepPaired)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(4.0);

#ifdef TSCOPE_BENCH_WITH_ONNX
void BM_ResNet18Inference(benchmark::State& state) {
  const std::filesystem::path model(TSCOPE_TEST_DATA_DIR "/onnx/models/resnet18.onnx");
  static io::OnnxImportResult imported = io::loadOnnx(model);
  const FunctionGraph& graph = *imported.document.original;
  std::vector<VarPtr> inputs;
  for (const VarPtr& in : graph.inputs())
    if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
  CompileOptions opts;
  opts.mode = Mode::FastRun;
  opts.keepBuffers = true;
  std::shared_ptr<debug::NanGuard> guard;
  if (auto o = observerFor(state.range(0), &guard)) opts.observers.push_back(o);
  Function f = compile(inputs, graph.outputs(), {}, opts);
  if (guard) guard->watch(f, &graph);
  const std::vector<Tensor> args{
      io::loadNpy(model.parent_path() / (model.stem().string() + ".in0.npy"))};
  for (int i = 0; i < 3; ++i) f(args);
  for (auto _ : state) benchmark::DoNotOptimize(f(args));
  if (guard && guard->eventCount() != 0) state.SkipWithError("NanGuard reported an event");
  state.SetLabel(labelFor(state.range(0)));
}
BENCHMARK(BM_ResNet18Inference)
    ->Arg(0)
    ->Arg(1)
    ->Arg(3)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

void BM_ResNet18InferencePaired(benchmark::State& state) {
  const std::filesystem::path model(TSCOPE_TEST_DATA_DIR "/onnx/models/resnet18.onnx");
  static io::OnnxImportResult imported = io::loadOnnx(model);
  const FunctionGraph& graph = *imported.document.original;
  std::vector<VarPtr> inputs;
  for (const VarPtr& in : graph.inputs())
    if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
  CompileOptions opts;
  opts.mode = Mode::FastRun;
  opts.keepBuffers = true;
  Function off = compile(inputs, graph.outputs(), {}, opts);
  std::shared_ptr<debug::NanGuard> guard;
  opts.observers.push_back(observerFor(state.range(0), &guard));
  Function on = compile(inputs, graph.outputs(), {}, opts);
  if (guard) guard->watch(on, &graph);
  const std::vector<Tensor> args{
      io::loadNpy(model.parent_path() / (model.stem().string() + ".in0.npy"))};
  for (int i = 0; i < 3; ++i) off(args), on(args);
  paired(
      state, [&] { benchmark::DoNotOptimize(off(args)); },
      [&] { benchmark::DoNotOptimize(on(args)); });
  if (guard && guard->eventCount() != 0) state.SkipWithError("NanGuard reported an event");
  state.SetLabel(labelFor(state.range(0)));
}
BENCHMARK(BM_ResNet18InferencePaired)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(4.0);
#endif

}  // namespace

// One BLAS thread, as the other VM benchmarks.
int main(int argc, char** argv) {
  tscope::engine::cpu::setGemmThreads(1);
  std::printf("GEMM backend: %s, 1 thread\n", tscope::engine::cpu::gemmBackendName().c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

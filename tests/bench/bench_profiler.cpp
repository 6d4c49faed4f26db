// The profiler's overhead (issue 19: at most 3 % on the MLP SGD step in fast_run, at most 2 % on
// ResNet-18 inference), measured paired in one process (Note [Paired overhead]): the function
// without an observer (the VM's fast loop) against the same function with a measuring Profiler
// attached (memory hook and events on). Also prints the profiler's cost per node event, the events
// per run (what the default capture budget is sized by), and the size of a ResNet-18 Chrome trace
// (written for 20 runs, extrapolated to 1,000).
//   bench_profiler [ITERATIONS=300]
// Set OPENBLAS_CORETYPE=SkylakeX on this machine (Note [GEMM backend figures] in
// engine/backends/cpu/gemm.h).

#include "engine/backends/cpu/gemm.h"
#include "engine/compile/function.h"
#include "mlp_step.h"
#include "profiling/profile_run.h"
#include "profiling/profiler.h"
#include "profiling/trace.h"

#ifdef TSCOPE_BENCH_WITH_ONNX
#include "engine/io/npy.h"
#include "engine/io/onnx/onnx_import.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace tscope::engine;
namespace prof = tscope::prof;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of one call.
double oneCall(Function& f, const std::vector<Tensor>& args) {
  const auto start = Clock::now();
  f(args);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Note [Paired overhead]: the machine these figures come from is shared (a load of 4 to 6 on 2
// cores), so the speed of a call drifts by 2x from one second to the next. Each iteration makes
// one call of every variant back to back (in a rotating order) and keeps the ratio of each to the
// unprofiled call of the same iteration; the figure is the median of those ratios, which a drift
// slower than a few calls cannot move.
void paired(const char* name, Function& f, const std::vector<Tensor>& args, int iterations,
            double target) {
  for (int i = 0; i < 3; ++i) f(args);
  // The Profiler as shipped (the VM's clock pair around each kernel), and one that reads its own
  // steady_clock pair in beforeNode/afterNode instead (what Note [Profiler hot path] chose
  // against).
  auto profiler = std::make_shared<prof::Profiler>();
  prof::ProfilerOptions own;
  own.clock = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
  };
  auto ownClock = std::make_shared<prof::Profiler>(own);
  profiler->setMeasuring(true);
  ownClock->setMeasuring(true);
  // An observer that does nothing: what the VM's observed loop costs by itself.
  auto idle = std::make_shared<ExecutionObserver>();
  const std::shared_ptr<ExecutionObserver> observers[4] = {nullptr, profiler, ownClock, idle};
  std::vector<double> times[4], ratios[4];
  for (int it = 0; it < iterations; ++it) {
    double t[4];
    for (int k = 0; k < 4; ++k) {
      const int mode = (k + it) % 4;
      if (observers[mode]) f.vm().addObserver(observers[mode]);
      t[mode] = oneCall(f, args);
      if (observers[mode]) {
        f.vm().removeObserver(*observers[mode]);
        f.vm().setTiming(false);
      }
    }
    for (int m = 0; m < 4; ++m) {
      times[m].push_back(t[m]);
      ratios[m].push_back(t[m] / t[0]);
    }
  }
  const prof::Profile p = profiler->snapshot(f);
  const double eventsPerRun = static_cast<double>(p.capture.keptEvents + p.capture.droppedEvents) /
                              static_cast<double>(p.function.measuredRuns);
  const double a = median(times[0]), overhead = median(ratios[1]) - 1;
  std::printf(
      "%s: unprofiled %.3f ms per call (median of %d), profiled: overhead %+.2f %% "
      "(median of the paired ratios; target <= %.0f %%), %.0f node events per run, %.0f ns "
      "per event; with the profiler's own steady_clock pair instead: %+.2f %%; an observer "
      "that does nothing: %+.2f %%\n",
      name, a, iterations, overhead * 100, target, eventsPerRun, overhead * a * 1e6 / eventsPerRun,
      (median(ratios[2]) - 1) * 100, (median(ratios[3]) - 1) * 100);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 300;
  cpu::setGemmThreads(1);
  std::printf("GEMM backend: %s, 1 thread\n", cpu::gemmBackendName().c_str());
  try {
    tscope::bench::MlpStep mlp(0.001);
    Function step = mlp.compile({.mode = Mode::FastRun, .keepBuffers = true});
    paired("MLP SGD step (fast_run)", step, mlp.args, iterations, 3);
#ifdef TSCOPE_BENCH_WITH_ONNX
    const std::filesystem::path model(TSCOPE_TEST_DATA_DIR "/onnx/models/resnet18.onnx");
    const std::vector<Tensor> args{io::loadNpy(model.parent_path() / "resnet18.in0.npy")};
    io::OnnxImportResult imported = io::loadOnnx(model);
    const FunctionGraph& graph = *imported.document.original;
    std::vector<VarPtr> inputs;
    for (const VarPtr& in : graph.inputs())
      if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
    Function resnet =
        compile(inputs, graph.outputs(), {}, {.mode = Mode::FastRun, .keepBuffers = true});
    paired("ResNet-18 inference (fast_run)", resnet, args, iterations, 2);
    // The trace of 20 runs, extrapolated to 1,000.
    prof::ProfileRunOptions o;
    o.warmup = 1;
    o.runs = 20;
    const prof::Profile p = prof::profileFunction(resnet, args, o);
    const std::string path =
        (std::filesystem::temp_directory_path() / "bench_profiler_resnet18.json").string();
    prof::writeChromeTrace(p, path);
    const auto bytes = static_cast<double>(std::filesystem::file_size(path));
    std::filesystem::remove(path);
    std::printf(
        "ResNet-18 trace: %zu events per run, %.2f MB for 20 runs -> %.1f MB for 1,000 "
        "runs (limit 100 MB); 1,000 runs need %zu events (default budget %lld)\n",
        p.events.size() / 20, bytes / 1e6, bytes / 1e6 * 50, p.events.size() / 20 * 1000,
        static_cast<long long>(prof::ProfilerOptions{}.maxEvents));
    std::printf(
        "ResNet-18 memory: peak live %.2f MB, plan peak %.2f MB, without inplace %.2f "
        "MB, without freeing %.2f MB\n",
        p.memory.peakLiveBytes / 1e6, p.memory.planPeakBytes / 1e6,
        p.memory.peakWithoutInplace / 1e6, p.memory.peakWithoutFreeing / 1e6);
#else
    std::printf("ResNet-18: not built (needs the ONNX importer)\n");
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_profiler: %s\n", e.what());
    return 1;
  }
  return 0;
}

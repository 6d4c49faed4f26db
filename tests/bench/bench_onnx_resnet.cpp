// The ResNet-18 fixture (tests/data/onnx/models/resnet18.onnx: torchvision's ResNet-18 at widths
// 16/32/64/128, input 1x3x64x64) from file to answer: loading the .onnx (parse, check, ONNX shape
// inference, conversion), compiling in fast_run, the first inference, then the steady-state
// inference time (median of N calls with buffers kept), in one thread. Each phase is timed once
// per process except the steady state; run the binary a few times for the spread of the one-off
// figures. The PyTorch peer is tests/bench/peers/resnet18_torch.py (same model, same weights).
//   bench_onnx_resnet [N=200] [MODEL.onnx]
// BENCH_SCALING=T adds the thread scaling measured in pairs: N pairs of one fast_run call on one
// thread and one on T threads, alternating, and the median of the pairs' ratios (a shared VM's
// speed drifts by tens of percent within seconds; a ratio of adjacent calls drifts much less).
// BENCH_AB_RECYCLE=1 compares recycled buffers (Note [Recycled buffers]) with one buffer per value
// in pairs: N pairs of one call of each of two fast_run compilations, alternating, and the median
// of the pairs' ratios.
// BENCH_AB_BLOCKED=1 compares the same way channel-blocked chains of convolutions (Note [Channel
// blocks] in engine/ops/nn/channel_blocks.h) with channel-last convolutions, and with blocks
// reordered around each kernel (Note [Blocked direct convolutions] in dnnl_conv.h).
// BENCH_TRACE=FILE writes one line per steady-state call: its time in ms, the minor page faults
// and the involuntary context switches it took (getrusage), for telling a slow host from a slow
// engine; the host's steal time over the steady state goes to stdout.
// Set OPENBLAS_CORETYPE=SkylakeX on this machine for the fast GEMM kernels
// (Note [GEMM backend figures] in engine/backends/cpu/gemm.h); the peer wants it too.

#include "engine/backends/cpu/dnnl_conv.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/threads.h"
#include "engine/compile/function.h"
#include "engine/io/npy.h"
#include "engine/io/onnx/onnx_import.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

using namespace tscope::engine;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The largest |a - e| / (1e-5 + |e|) over the elements: how far from PyTorch's reference.
double worstRelativeError(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) return INFINITY;
  const std::vector<double> a = actual.toDoubles(), e = expected.toDoubles();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - e[i]) / (1e-5 + std::abs(e[i])));
  return worst;
}

struct SteadyState {
  double median = 0, min = 0;
};

// The host's steal time so far (the "cpu" line of /proc/stat, in clock ticks), 0 where unknown.
long long stealTicks() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long v[8] = {};
  stat >> cpu;
  for (long long& x : v) stat >> x;
  return cpu == "cpu" ? v[7] : 0;
}

SteadyState steadyState(Function& f, const std::vector<Tensor>& args, int n) {
  for (int i = 0; i < 5; ++i) f(args);  // warm the buffers and the caches
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(n));
  const char* tracePath = std::getenv("BENCH_TRACE");
  std::ofstream trace;
  if (tracePath) trace.open(tracePath, std::ios::app);
  const long long steal0 = stealTicks();
  const auto begin = Clock::now();
  for (int i = 0; i < n; ++i) {
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    const auto start = Clock::now();
    f(args);
    times.push_back(msSince(start));
    getrusage(RUSAGE_SELF, &after);
    if (trace)
      trace << times.back() << ' ' << after.ru_minflt - before.ru_minflt << ' '
            << after.ru_nivcsw - before.ru_nivcsw << '\n';
  }
  if (tracePath)
    std::printf("host steal time over the steady state: %.1f%% of one CPU\n",
                100.0 * static_cast<double>(stealTicks() - steal0) /
                    static_cast<double>(sysconf(_SC_CLK_TCK)) / (msSince(begin) / 1000.0));
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

// The median of v and its quartiles, as "m (q1-q3)".
std::string medianWithQuartiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  char text[64];
  std::snprintf(text, sizeof text, "%.3f (%.3f-%.3f)", v[v.size() / 2], v[v.size() / 4],
                v[v.size() * 3 / 4]);
  return text;
}

// Calls a and b alternately, n times each after a warm-up; prints each one's median time and the
// median of the ratios a / b of adjacent calls.
// beforeA and beforeB run before each call of A and of B, untimed (a setting to switch).
void pairedAB(
    Function& a, Function& b, const std::vector<Tensor>& args, int n, const char* what,
    const std::function<void()>& beforeA = [] {}, const std::function<void()>& beforeB = [] {}) {
  for (int i = 0; i < 5; ++i) {
    beforeA();
    a(args);
    beforeB();
    b(args);
  }
  std::vector<double> ta, tb, ratio;
  for (int i = 0; i < n; ++i) {
    beforeA();
    auto start = Clock::now();
    a(args);
    ta.push_back(msSince(start));
    beforeB();
    start = Clock::now();
    b(args);
    tb.push_back(msSince(start));
    ratio.push_back(ta.back() / tb.back());
  }
  std::printf("%s, %d pairs: A %s ms, B %s ms, A / B %s\n", what, n,
              medianWithQuartiles(ta).c_str(), medianWithQuartiles(tb).c_str(),
              medianWithQuartiles(ratio).c_str());
}

// One call on one thread, then one on `threads`, n times; the oneDNN plans of both counts are made
// in the warm-up (Note [oneDNN threads per plan]).
void pairedScaling(Function& f, const std::vector<Tensor>& args, int n, int threads) {
  threads = std::max(2, threads);
  for (const int t : {1, threads}) {
    cpu::setIntraOpThreads(t);
    for (int i = 0; i < 5; ++i) f(args);
  }
  std::vector<double> one, many, ratio;
  for (int i = 0; i < n; ++i) {
    cpu::setIntraOpThreads(1);
    auto start = Clock::now();
    f(args);
    one.push_back(msSince(start));
    cpu::setIntraOpThreads(threads);
    start = Clock::now();
    f(args);
    many.push_back(msSince(start));
    ratio.push_back(one.back() / many.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> sorted = ratio;
  std::sort(sorted.begin(), sorted.end());
  std::printf(
      "thread scaling, %d pairs: 1 thread %.3f ms, %d threads %.3f ms (medians); "
      "paired ratio median %.2fx (quartiles %.2f-%.2f), of the minima %.2fx\n",
      n, median(one), threads, median(many), median(ratio), sorted[sorted.size() / 4],
      sorted[sorted.size() * 3 / 4],
      *std::min_element(one.begin(), one.end()) / *std::min_element(many.begin(), many.end()));
}

Function compileGraph(const FunctionGraph& graph, Mode mode,
                      const std::vector<std::string>& exclude = {}) {
  std::vector<VarPtr> inputs;
  for (const VarPtr& in : graph.inputs())
    if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
  CompileOptions options;
  options.mode = mode;
  options.keepBuffers = !std::getenv("BENCH_NOKEEP");  // as a serving loop would run it
  options.exclude = exclude;
  return compile(inputs, graph.outputs(), {}, options);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  const std::filesystem::path model =
      argc > 2 ? std::filesystem::path(argv[2])
               : std::filesystem::path(TSCOPE_TEST_DATA_DIR "/onnx/models/resnet18.onnx");
  const std::filesystem::path dir = model.parent_path();
  const std::string stem = model.stem().string();

  // One thread, as the PyTorch peer runs with torch.set_num_threads(1), unless TSCOPE_NUM_THREADS
  // asks for more (the peers script's --threads N).
  cpu::setIntraOpThreads(std::getenv("TSCOPE_NUM_THREADS") ? cpu::intraOpThreads() : 1);
  std::printf("GEMM backend: %s, %d thread(s)\n", cpu::gemmBackendName().c_str(),
              cpu::intraOpThreads());
  try {
    const std::vector<Tensor> args{io::loadNpy(dir / (stem + ".in0.npy"))};
    const Tensor expected = io::loadNpy(dir / (stem + ".out0.npy"));

    auto start = Clock::now();
    io::OnnxImportResult imported = io::loadOnnx(model);
    const double loadMs = msSince(start);
    const FunctionGraph& graph = *imported.document.original;

    start = Clock::now();
    Function fastRun = compileGraph(graph, Mode::FastRun);
    const double compileMs = msSince(start);

    start = Clock::now();
    const std::vector<Tensor> first = fastRun(args);
    const double firstMs = msSince(start);
    const SteadyState fast = steadyState(fastRun, args, n);

    // BENCH_FAST_ONLY=1 skips mode none (the peers script's --paired rounds time fast_run only).
    const bool fastOnly = std::getenv("BENCH_FAST_ONLY") != nullptr;
    std::vector<Tensor> noneOut;
    SteadyState plain{};
    if (!fastOnly) {
      Function none = compileGraph(graph, Mode::None);
      noneOut = none(args);
      plain = steadyState(none, args, n);
    }

    std::printf("convolutions: %s\n", cpu::dnnlDescription().c_str());
    std::printf("model: %s (opset %d, %zu nodes imported, %zu after fast_run)\n",
                model.string().c_str(), imported.opset, graph.nodeCount(),
                fastRun.graph().nodeCount());
    std::printf("load (parse, check, infer shapes, convert): %8.2f ms\n", loadMs);
    std::printf("compile (fast_run):                          %8.2f ms\n", compileMs);
    std::printf("first inference (fast_run):                  %8.2f ms\n", firstMs);
    std::printf("load + compile + first inference:            %8.2f ms\n",
                loadMs + compileMs + firstMs);
    std::printf("steady-state inference, fast_run:            %8.3f ms (median of %d, min %.3f)\n",
                fast.median, n, fast.min);
    if (fastOnly) {
      std::printf("worst relative error vs PyTorch: fast_run %.2g\n",
                  worstRelativeError(first[0], expected));
    } else {
      std::printf(
          "steady-state inference, mode none:           %8.3f ms (median of %d, min %.3f)\n",
          plain.median, n, plain.min);
      std::printf("worst relative error vs PyTorch: fast_run %.2g, none %.2g\n",
                  worstRelativeError(first[0], expected), worstRelativeError(noneOut[0], expected));
    }
    if (std::getenv("BENCH_AB_RECYCLE")) {
      ::setenv("TSCOPE_RECYCLE_BUFFERS", "0", 1);
      Function plainBuffers = compileGraph(graph, Mode::FastRun);
      ::setenv("TSCOPE_RECYCLE_BUFFERS", "1", 1);
      Function recycled = compileGraph(graph, Mode::FastRun);
      pairedAB(recycled, plainBuffers, args, n, "A recycled buffers, B one buffer per value");
    }
    if (std::getenv("BENCH_AB_BLOCKED")) {
      const bool before = cpu::dnnlBlockedConvolutions();
      auto blocksOn = [] { cpu::setDnnlBlockedConvolutions(true); };
      auto blocksOff = [] { cpu::setDnnlBlockedConvolutions(false); };
      blocksOn();  // the channel_blocks rewrite runs while the setting is on
      Function chains = compileGraph(graph, Mode::FastRun);
      Function perKernel = compileGraph(graph, Mode::FastRun, {"channel_blocks"});
      blocksOff();
      Function channelLast = compileGraph(graph, Mode::FastRun);
      pairedAB(chains, channelLast, args, n, "A channel-blocked chains, B channel-last", blocksOn,
               blocksOff);
      pairedAB(chains, perKernel, args, n,
               "A channel-blocked chains, B blocks reordered around each kernel", blocksOn,
               blocksOn);
      cpu::setDnnlBlockedConvolutions(before);
    }
    if (const char* scaling = std::getenv("BENCH_SCALING"))
      pairedScaling(fastRun, args, n, std::atoi(scaling));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_onnx_resnet: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The machine's calibration (profiling/calibration.h) and the roofline of real graphs' nodes: it
// measures and prints the four peaks, then runs the MLP SGD step (tests/bench/mlp_step.h) and,
// when the ONNX importer is built, the ResNet-18 fixture (inference), both fast_run with one BLAS
// thread, timing every node with an observer, and prints the nodes that take the most time with
// their cost (Op::cost), achieved GFLOP/s and GB/s, intensity and the fraction of the one-thread
// roofline bound they reach, and how many nodes have an unknown cost.
//   bench_calibrate [SECONDS_PER_FIGURE=0.3] [RUNS=50]
// Set OPENBLAS_CORETYPE=SkylakeX on this machine for the fast GEMM kernels (Note [GEMM backend
// figures] in engine/backends/cpu/gemm.h).

#include "bench/mlp_step.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/compile/function.h"
#include "engine/vm/observer.h"
#include "profiling/calibration.h"
#include "profiling/roofline.h"
#ifdef TSCOPE_BENCH_WITH_ONNX
#include "engine/io/npy.h"
#include "engine/io/onnx/onnx_import.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

using namespace tscope;
using namespace tscope::engine;
using Clock = std::chrono::steady_clock;

namespace {

struct NodeRow {
  std::string op;
  double seconds = 0;  // summed over the measured runs
  std::int64_t calls = 0;
  OpCost cost;  // per call, from the last shapes
};

// Times each top-level node (inner nodes are not in these graphs) and asks its op for its cost.
struct NodeTimer final : ExecutionObserver {
  bool measuring = false;
  std::map<const Apply*, NodeRow> rows;
  std::vector<const Apply*> order;
  Clock::time_point start;

  void beforeNode(VM&, const NodeEvent&) override { start = Clock::now(); }
  void afterNode(VM&, const NodeEvent& event) override {
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!measuring) return;
    auto [it, inserted] = rows.try_emplace(&event.node);
    NodeRow& row = it->second;
    if (inserted) {
      order.push_back(&event.node);
      row.op = event.node.op().str();
      std::vector<Shape> shapes;
      for (const Tensor* t : event.inputs) shapes.push_back(t->shape());
      row.cost = event.node.op().cost(event.node, shapes);
    }
    row.seconds += s;
    ++row.calls;
  }
};

void report(const char* title, const std::vector<NodeRow>& rows, const prof::Calibration& machine,
            int top) {
  double total = 0;
  int unknown = 0;
  for (const NodeRow& r : rows) {
    total += r.seconds;
    if (!r.cost.known) ++unknown;
  }
  std::vector<NodeRow> sorted = rows;
  std::sort(sorted.begin(), sorted.end(),
            [](const NodeRow& a, const NodeRow& b) { return a.seconds > b.seconds; });
  std::printf("\n%s: %zu nodes, %d with an unknown cost; time in nodes %.3f ms per run\n", title,
              rows.size(), unknown, sorted.empty() ? 0.0 : total / sorted[0].calls * 1e3);
  std::printf("  %6s %6s %10s %10s %9s %8s %8s %7s %8s  %s\n", "time%", "ms", "MFLOP", "MB",
              "GFLOP/s", "GB/s", "flop/B", "roof%", "limit", "op");
  for (int i = 0; i < top && i < static_cast<int>(sorted.size()); ++i) {
    const NodeRow& r = sorted[static_cast<std::size_t>(i)];
    const double perCall = r.seconds / static_cast<double>(r.calls);
    const prof::RooflinePoint p = prof::roofline(r.cost, perCall, machine, /*allThreads=*/false);
    std::string op = r.op.size() > 48 ? r.op.substr(0, 45) + "..." : r.op;
    if (!r.cost.known) {
      std::printf("  %5.1f%% %6.3f %10s %10s %9s %8s %8s %7s %8s  %s\n", 100 * r.seconds / total,
                  perCall * 1e3, "?", "?", "?", "?", "?", "?", "unknown", op.c_str());
      continue;
    }
    std::printf("  %5.1f%% %6.3f %10.2f %10.3f %9.2f %8.2f %8.2f %6.1f%% %8s  %s\n",
                100 * r.seconds / total, perCall * 1e3, r.cost.flops / 1e6, r.cost.bytes() / 1e6,
                p.gflops, p.gbps, p.intensity, 100 * p.fraction,
                std::string(prof::rooflineLimitName(p.limit)).c_str(), op.c_str());
  }
}

std::vector<NodeRow> profile(const std::vector<VarPtr>& inputs, const std::vector<VarPtr>& outputs,
                             const std::vector<Update>& updates, const std::vector<Tensor>& args,
                             int runs) {
  auto timer = std::make_shared<NodeTimer>();
  CompileOptions options;
  options.mode = Mode::FastRun;
  options.keepBuffers = true;
  options.observers = {timer};
  Function f = compile(inputs, outputs, updates, options);
  for (int i = 0; i < 5; ++i) f(args);
  timer->measuring = true;
  for (int i = 0; i < runs; ++i) f(args);
  std::vector<NodeRow> rows;
  for (const Apply* node : timer->order) rows.push_back(timer->rows.at(node));
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  prof::CalibrateOptions options;
  options.secondsPerFigure = argc > 1 ? std::max(0.01, std::atof(argv[1])) : 0.3;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 50;
  std::printf("GEMM backend: %s\n", cpu::gemmBackendName().c_str());
  const auto start = Clock::now();
  const prof::Calibration machine = prof::calibrate(options);
  std::printf("calibrate() took %.2f s\n\n%s",
              std::chrono::duration<double>(Clock::now() - start).count(),
              prof::formatCalibration(machine).c_str());
  cpu::setGemmThreads(1);  // the nodes run on one thread: compare with the one-thread roof
  try {
    bench::MlpStep mlp(0.01);
    report("MLP SGD step (fast_run, batch 128)",
           profile({mlp.x, mlp.y}, {mlp.loss}, mlp.updates, mlp.args, runs), machine, 12);
#ifdef TSCOPE_BENCH_WITH_ONNX
    const std::filesystem::path model(TSCOPE_TEST_DATA_DIR "/onnx/models/resnet18.onnx");
    const std::vector<Tensor> args{io::loadNpy(model.parent_path() / "resnet18.in0.npy")};
    io::OnnxImportResult imported = io::loadOnnx(model);
    const FunctionGraph& graph = *imported.document.original;
    std::vector<VarPtr> inputs;
    for (const VarPtr& in : graph.inputs())
      if (in->kind() != Variable::Kind::Shared) inputs.push_back(in);
    report("ResNet-18 fixture inference (fast_run, 1x3x64x64)",
           profile(inputs, graph.outputs(), {}, args, runs), machine, 15);
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_calibrate: %s\n", e.what());
    return 1;
  }
  return 0;
}

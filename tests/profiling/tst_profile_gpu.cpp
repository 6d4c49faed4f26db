// GPU records in a profile (Note [GPU records of a profile] in profiling/profile_run.h), on the
// CPU through the simulated GPU source: CPU kernels standing in for GPU ones report launches, and
// profileFunction attributes each measured run's kernels and copies to their nodes (warm-up
// records dropped), the report shows GPU time per node, the .tsg section keeps the records
// exactly, and the trace has a GPU process with a track per stream and a flow from each node's
// slice to each of its kernels.
#include "engine/compile/function.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "profiling/cupti_source.h"
#include "profiling/profile_io.h"
#include "profiling/profile_run.h"
#include "profiling/report.h"
#include "profiling/simulated_gpu_source.h"
#include "profiling/trace.h"
#include "test_main.h"

#include <chrono>
#include <map>
#include <set>

using namespace tscope::prof;
namespace eng = tscope::engine;

namespace {
SimulatedGpuSource* g_gpu = nullptr;

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// x -> x + 1 on the CPU, "launching" `kernels` kernels of 100 ns each on `stream`, and one copy.
std::shared_ptr<const eng::AsOp> gpuOp(const std::string& name, int kernels, std::uint32_t stream) {
  const eng::TensorType t(eng::DType::Float32, {eng::kUnknownDim});
  return eng::asOp(name, {t}, {t}, [=](std::span<const eng::Tensor> in) {
    for (int k = 0; k < kernels; ++k) {
      KernelRecord r;
      r.name = name + "_kernel";
      r.stream = stream;
      r.startNs = nowNs();
      r.endNs = r.startNs + 100;
      g_gpu->launchKernel(r);
    }
    MemcpyRecord m;
    m.kind = MemcpyKind::DtoH;
    m.bytes = 64;
    m.startNs = nowNs();
    m.endNs = m.startNs + 10;
    g_gpu->copy(m);
    eng::Tensor out = in[0].clone();
    for (std::int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] += 1.0f;
    return std::vector<eng::Tensor>{out};
  });
}
}  // namespace

class TestProfileGpu : public QObject {
  Q_OBJECT
 private slots:
  void gpuRecordsReachTheProfile() {
    SimulatedGpuSource gpu;
    g_gpu = &gpu;
    auto x = eng::Variable::create(eng::TensorType(eng::DType::Float32, {eng::kUnknownDim}), "x");
    auto a = gpuOp("A", 2, 7), b = gpuOp("B", 1, 8);
    eng::Function f = eng::compile({x}, {eng::exp((*b)({(*a)({x})}))});
    const std::vector<eng::Tensor> args{eng::Tensor::fromDoubles(eng::DType::Float32, {2}, {0, 1})};
    ProfileRunOptions options;
    options.warmup = 2;
    options.runs = 3;
    options.gpu = &gpu;
    const Profile p = profileFunction(f, args, options);
    g_gpu = nullptr;

    QVERIFY(p.gpu);
    QCOMPARE(p.gpu->source, std::string(gpu.name()));
    // Only the measured runs: 3 runs x (2 + 1) kernels, 3 x 2 copies.
    QCOMPARE(p.gpu->kernels, std::int64_t(9));
    QCOMPARE(p.gpu->memcpys, std::int64_t(6));
    QCOMPARE(p.gpu->unattributed, std::int64_t(0));
    std::map<std::string, const NodeProfile*> byOp;
    for (const NodeProfile& n : p.nodes) byOp[n.opClass] = &n;
    QVERIFY(byOp.count("A") && byOp.count("B"));
    QCOMPARE(byOp["A"]->gpuKernels, std::int64_t(6));
    // Kernels 6 x 100 ns plus copies 3 x 10 ns, summed over the runs.
    QCOMPARE(byOp["A"]->gpuSeconds, 630e-9);
    QCOMPARE(byOp["B"]->gpuKernels, std::int64_t(3));
    QCOMPARE(p.gpuEvents.size(), std::size_t(15));
    int kernelsOfA = 0;
    for (const GpuEventRecord& e : p.gpuEvents) {
      QVERIFY(e.run >= 0 && e.run < 3);
      QVERIFY(e.endNs >= e.startNs);
      if (e.kind == GpuEventRecord::Kind::Kernel && e.node >= 0 &&
          p.nodes[std::size_t(e.node)].opClass == "A") {
        ++kernelsOfA;
        QCOMPARE(e.stream, 7);
      }
    }
    QCOMPARE(kernelsOfA, 6);
    for (std::size_t i = 1; i < p.gpuEvents.size(); ++i)
      QVERIFY(p.gpuEvents[i - 1].startNs <= p.gpuEvents[i].startNs);

    // The report's GPU columns and summary.
    const std::string text = reportText(p);
    QVERIFY2(text.find("GPU (") != std::string::npos, text.c_str());
    QVERIFY2(text.find("GPU time") != std::string::npos, text.c_str());
    QCOMPARE(reportJson(p)["gpu"]["kernels"].get<int>(), 9);

    // The .tsg section keeps every record exactly.
    const Profile back = profileFromJson(profileToJson(p), "/profiles/0");
    QVERIFY(back == p);

    // The trace: a GPU process, a track per stream, a flow per kernel from its node's slice.
    const nlohmann::json t = chromeTrace(p);
    std::set<int> gpuTids;
    std::map<std::int64_t, int> flowEnds;
    int kernelSlices = 0;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] == "X" && e["pid"].get<int>() >= 100) {
        gpuTids.insert(e["tid"].get<int>());
        kernelSlices += e["cat"] == "kernel";
      }
      if (e["ph"] == "s" || e["ph"] == "f") flowEnds[e["id"].get<std::int64_t>()] += 1;
      if (e["ph"] == "f") QCOMPARE(e["bp"].get<std::string>(), std::string("e"));
      if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"].get<int>() == 100)
        QCOMPARE(e["args"]["name"].get<std::string>(), std::string("GPU 0"));
    }
    QCOMPARE(kernelSlices, 9);
    // Kernels on streams 7 and 8, the copies on stream 0: tids are stream + 1.
    QCOMPARE(gpuTids, (std::set<int>{1, 8, 9}));
    QCOMPARE(flowEnds.size(), std::size_t(9));
    for (const auto& [id, n] : flowEnds) QCOMPARE(n, 2);
    // Asking for one run keeps that run's GPU records only.
    TraceOptions one;
    one.runs = {1};
    int kernelsOfRun1 = 0;
    const nlohmann::json runOne = chromeTrace(p, one);
    for (const auto& e : runOne["traceEvents"])
      if (e["ph"] == "X" && e["cat"] == "kernel") {
        ++kernelsOfRun1;
        QCOMPARE(e["args"]["run"].get<int>(), 1);
      }
    QCOMPARE(kernelsOfRun1, 3);
  }

  void aRefusingSourceMakesNoCall() {
    // A source that cannot start (no CUPTI in this build, or no GPU here) fails before any call.
    std::unique_ptr<GpuSource> cupti;
    try {
      cupti = makeCuptiSource();
    } catch (const GpuSourceError& e) {
      QVERIFY(e.kind() == GpuSourceError::Kind::NotBuilt ||
              e.kind() == GpuSourceError::Kind::CannotLoad);
      return;
    }
    auto x = eng::Variable::create(eng::TensorType(eng::DType::Float32, {eng::kUnknownDim}), "x");
    eng::Function f = eng::compile({x}, {eng::exp(x)});
    ProfileRunOptions options;
    options.gpu = cupti.get();
    bool refused = false;
    try {
      profileFunction(f, {eng::Tensor::fromDoubles(eng::DType::Float32, {1}, {0})}, options);
    } catch (const GpuSourceError& e) {
      refused = true;
      QVERIFY(e.kind() == GpuSourceError::Kind::NoGpu ||
              e.kind() == GpuSourceError::Kind::NotBuilt ||
              e.kind() == GpuSourceError::Kind::CannotLoad);
    }
    if (!refused) QSKIP("this machine has a GPU: the CUPTI source started");
    // The function runs as before.
    QCOMPARE(f({eng::Tensor::fromDoubles(eng::DType::Float32, {1}, {0})})[0].toDoubles()[0], 1.0);
  }
};

TSCOPE_TEST_MAIN(TestProfileGpu)
#include "tst_profile_gpu.moc"

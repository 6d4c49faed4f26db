// The whole GPU correlation chain on the CPU (profiling/simulated_gpu_source.h): a VM's brackets
// reach the source's sink, CPU kernels standing in for GPU ones report launches, and correlate()
// attributes each kernel, copy and set to its node (top level and inside an OpFromGraph frame) over
// several runs; launches outside any node are unattributed; nothing is recorded before start() or
// after stop(); the key table holds one id per node however many runs; dropped counts arrive.
#include "engine/compile/function.h"
#include "engine/ops/as_op.h"
#include "engine/ops/basic.h"
#include "engine/ops/graph/op_from_graph.h"
#include "profiling/simulated_gpu_source.h"
#include "test_main.h"

using namespace tscope::prof;
namespace eng = tscope::engine;

namespace {
SimulatedGpuSource* g_gpu = nullptr;
std::int64_t g_clock = 1000;

KernelRecord kernelOf(const std::string& name, std::int64_t ns) {
  KernelRecord k;
  k.name = name;
  k.startNs = g_clock;
  k.endNs = g_clock + ns;
  g_clock += ns + 10;
  return k;
}

// x -> x + 1 on the CPU, "launching" `kernels` kernels of `ns` each and, when `bytes`, one copy.
std::shared_ptr<const eng::AsOp> gpuOp(const std::string& name, int kernels, std::int64_t ns,
                                       std::uint64_t bytes = 0) {
  const eng::TensorType t(eng::DType::Float32, {eng::kUnknownDim});
  return eng::asOp(name, {t}, {t}, [=](std::span<const eng::Tensor> in) {
    for (int k = 0; k < kernels; ++k) g_gpu->launchKernel(kernelOf(name, ns));
    if (bytes) {
      MemcpyRecord m;
      m.kind = MemcpyKind::DtoD;
      m.bytes = bytes;
      m.startNs = g_clock;
      m.endNs = g_clock + 7;
      g_clock += 17;
      g_gpu->copy(m);
    }
    eng::Tensor out = in[0].clone();
    for (std::int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] += 1.0f;
    return std::vector<eng::Tensor>{out};
  });
}
}  // namespace

class TestSimulatedGpuSource : public QObject {
  Q_OBJECT

 private slots:
  void testVmRunsAttributedPerNode() {
    SimulatedGpuSource gpu;
    g_gpu = &gpu;
    auto a = eng::Variable::create(eng::TensorType(eng::DType::Float32, {eng::kUnknownDim}), "a");
    auto inner = gpuOp("InnerWork", 2, 100);
    auto body = eng::opFromGraph({a}, {eng::exp((*inner)({a}))}, "blk");
    auto x = eng::Variable::create(eng::TensorType(eng::DType::Float32, {eng::kUnknownDim}), "x");
    auto outer = gpuOp("OuterWork", 1, 50, 4096);
    eng::Function f = eng::compile({x}, {(*body)({(*outer)({x})})});
    f.vm().setCorrelationSink(gpu.correlationSink());
    const std::vector<eng::Tensor> args{eng::Tensor::fromDoubles(eng::DType::Float32, {2}, {0, 1})};
    // Before start(): the VM pushes, nothing is recorded.
    f(args);
    gpu.flush();
    QCOMPARE(gpu.takeActivity().records(), std::int64_t(0));
    gpu.start();
    for (int run = 0; run < 3; ++run) {
      f(args);
      gpu.flush();  // the end of each profiled run
    }
    gpu.launchKernel(kernelOf("stray", 5));  // outside any node
    gpu.dropRecords(2);
    gpu.stop();
    f(args);  // after stop(): nothing more
    const GpuActivity act = gpu.takeActivity();
    QCOMPARE(act.kernels().size(), std::size_t(3 * 3 + 1));
    QCOMPARE(act.counts().droppedBySource, std::int64_t(2));
    const GpuAttribution at = correlate(act, gpu.nodeKeys());
    const eng::Apply* outerNode = nullptr;
    const eng::Apply* frameNode = nullptr;
    for (const eng::Apply* n : f.program().schedule()) {
      if (n->op().name() == "OuterWork") outerNode = n;
      if (n->op().name() == "OpFromGraph") frameNode = n;
    }
    QVERIFY(outerNode && frameNode);
    const eng::Apply* innerNode = nullptr;
    for (const eng::Apply* n : f.program().children()[0]->schedule())
      if (n->op().name() == "InnerWork") innerNode = n;
    QVERIFY(innerNode);
    const NodeGpuStats* o = at.find({}, outerNode->id());
    QVERIFY(o);
    QCOMPARE(o->kernels, std::int64_t(3));
    QCOMPARE(o->kernelNs, std::int64_t(150));
    QCOMPARE(o->memcpys, std::int64_t(3));
    QCOMPARE(o->memcpyBytes, std::int64_t(3 * 4096));
    const NodeGpuStats* i = at.find({frameNode->id()}, innerNode->id());
    QVERIFY(i);
    QCOMPARE(i->kernels, std::int64_t(6));
    QCOMPARE(i->kernelNs, std::int64_t(600));
    QVERIFY(at.find({}, frameNode->id()) == nullptr);  // the frame launches nothing itself
    QCOMPARE(at.unattributed.kernels, std::int64_t(1));
    QCOMPARE(at.withoutExternal, std::int64_t(1));
    // Every kernel has its launch record.
    for (std::int64_t l : at.kernelLaunch) QVERIFY(l >= 0);
    // One external id per node that ran while recording, not per run.
    QCOMPARE(gpu.nodeKeys().size(),
             f.program().schedule().size() + f.program().children()[0]->schedule().size());
    g_gpu = nullptr;
  }

  // Note [Sink lifetime]: a VM that keeps the sink after its source is gone runs unharmed.
  void testSinkOutlivesTheSource() {
    auto x = eng::Variable::create(eng::TensorType(eng::DType::Float32, {eng::kUnknownDim}), "x");
    eng::Function f = eng::compile({x}, {eng::exp(x) + 1.0});
    std::shared_ptr<eng::CorrelationSink> sink;
    {
      SimulatedGpuSource gpu;
      gpu.start();
      sink = gpu.correlationSink();
      f.vm().setCorrelationSink(sink);
      f({eng::Tensor::fromDoubles(eng::DType::Float32, {1}, {0})});
      QCOMPARE(gpu.nodeKeys().size(), f.program().schedule().size());
    }
    const auto out = f({eng::Tensor::fromDoubles(eng::DType::Float32, {1}, {0})});
    QCOMPARE(out[0].toDoubles()[0], 2.0);
    QCOMPARE(sink.use_count(), 2L);  // ours and the VM's
  }
};

TSCOPE_TEST_MAIN(TestSimulatedGpuSource)
#include "tst_simulated_gpu_source.moc"

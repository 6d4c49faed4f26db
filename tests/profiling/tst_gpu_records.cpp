// GPU records (profiling/gpu_records.h, gpu_clock.h) on records built in memory: correlation of
// out-of-order records, records without a correlation (three reasons), zero and reversed
// timestamps, the external-correlation record and the kernel in different buffers, dropped-record
// counts (the source's and the budget's), nested frames, several kernels, copies and sets per
// node, a fused kernel mapped to the original nodes through a real NodeLineage, the launch of each
// kernel, name demangling, and the host-clock arithmetic.
#include "engine/compile/function.h"
#include "engine/debug/lineage.h"
#include "engine/graph/apply.h"
#include "engine/ops/basic.h"
#include "engine/ops/elemwise/composite.h"
#include "engine/ops/reduce/reduce.h"
#include "profiling/cupti_source.h"
#include "profiling/gpu_clock.h"
#include "profiling/gpu_records.h"
#include "profiling/profile.h"
#include "test_main.h"

#include <algorithm>
#include <thread>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

using namespace tscope::prof;
namespace eng = tscope::engine;

namespace {
KernelRecord kernel(std::int64_t start, std::int64_t end, std::uint32_t correlation,
                    std::string name = "k") {
  KernelRecord k;
  k.startNs = start;
  k.endNs = end;
  k.correlationId = correlation;
  k.name = std::move(name);
  return k;
}
ExternalCorrelationRecord ext(std::uint64_t externalId, std::uint32_t correlation) {
  return ExternalCorrelationRecord{kExternalKindCustom0, externalId, correlation};
}
ApiRecord launch(std::uint32_t correlation, std::int64_t start) {
  ApiRecord a;
  a.name = "cudaLaunchKernel";
  a.correlationId = correlation;
  a.startNs = start;
  a.endNs = start + 5;
  a.threadId = 77;
  return a;
}
}  // namespace

class TestGpuRecords : public QObject {
  Q_OBJECT

 private slots:
  void testOutOfOrderRecords() {
    NodeKeyTable table;
    const auto a = table.idFor({}, 10);
    const auto b = table.idFor({}, 20);
    GpuActivity act;
    // Kernels complete out of order, and before the external records arrive.
    QVERIFY(act.add(kernel(500, 700, 3, "b2")));
    QVERIFY(act.add(kernel(100, 150, 1, "a1")));
    QVERIFY(act.add(kernel(300, 340, 2, "b1")));
    act.add(ext(b, 3));
    act.add(ext(a, 1));
    act.add(ext(b, 2));
    const GpuAttribution at = correlate(act, table);
    QCOMPARE(at.nodes.size(), std::size_t(2));
    QCOMPARE(at.nodes[0].node, (NodeKey{{}, 10}));  // sorted by key
    const NodeGpuStats* sb = at.find({}, 20);
    QVERIFY(sb);
    QCOMPARE(sb->kernels, std::int64_t(2));
    QCOMPARE(sb->kernelNs, std::int64_t(40 + 200));
    // Its kernels in start order: b1 (index 2) then b2 (index 0).
    QCOMPARE(sb->kernelIndices, (std::vector<std::size_t>{2, 0}));
    QCOMPARE(at.find({}, 10)->kernelNs, std::int64_t(50));
    QCOMPARE(at.kernelNode[0], std::int64_t(1));
    QCOMPARE(at.kernelNode[1], std::int64_t(0));
    QCOMPARE(at.unattributed.kernels, std::int64_t(0));
    QVERIFY(at.find({}, 30) == nullptr);
  }

  void testRecordsWithoutCorrelation() {
    NodeKeyTable table;
    const auto a = table.idFor({}, 1);
    GpuActivity act;
    act.add(kernel(10, 20, 0));   // no correlation id
    act.add(kernel(30, 45, 9));   // no external record names 9
    act.add(kernel(50, 80, 4));   // external id 99 is no node's
    act.add(kernel(90, 100, 5));  // a's
    act.add(ext(99, 4));
    act.add(ext(a, 5));
    // An external record of another kind does not count.
    act.add(ExternalCorrelationRecord{kExternalKindCustom0 + 1, a, 9});
    MemcpyRecord m;
    m.startNs = 1;
    m.endNs = 3;
    m.bytes = 64;
    act.add(m);  // correlation 0
    const GpuAttribution at = correlate(act, table);
    QCOMPARE(at.withoutCorrelation, std::int64_t(2));
    QCOMPARE(at.withoutExternal, std::int64_t(1));
    QCOMPARE(at.unknownExternal, std::int64_t(1));
    QCOMPARE(at.unattributed.kernels, std::int64_t(3));
    QCOMPARE(at.unattributed.kernelNs, std::int64_t(10 + 15 + 30));
    QCOMPARE(at.unattributed.memcpys, std::int64_t(1));
    QCOMPARE(at.unattributed.memcpyBytes, std::int64_t(64));
    QCOMPARE(at.unattributed.node.id, std::int64_t(-1));
    QCOMPARE(at.nodes.size(), std::size_t(1));
    QCOMPARE(at.nodes[0].kernelNs, std::int64_t(10));
    QCOMPARE(std::count(at.kernelNode.begin(), at.kernelNode.end(), -1), std::ptrdiff_t(3));
  }

  void testZeroTimestamps() {
    NodeKeyTable table;
    const auto a = table.idFor({}, 1);
    GpuActivity act;
    act.add(kernel(0, 50, 1));   // no start
    act.add(kernel(60, 0, 1));   // no end
    act.add(kernel(90, 80, 1));  // ends before it starts
    act.add(kernel(100, 130, 1));
    act.add(ext(a, 1));
    QCOMPARE(act.counts().invalidTimestamps, std::int64_t(3));
    QVERIFY(!act.kernels()[0].timed());
    QCOMPARE(act.kernels()[2].startNs, std::int64_t(0));  // cleared, so nothing draws it
    const GpuAttribution at = correlate(act, table);
    const NodeGpuStats* s = at.find({}, 1);
    QVERIFY(s);
    QCOMPARE(s->kernels, std::int64_t(4));
    QCOMPARE(s->untimed, std::int64_t(3));
    QCOMPARE(s->kernelNs, std::int64_t(30));
    QCOMPARE(s->gpuNs(), std::int64_t(30));
  }

  void testRecordsSpanningBuffers() {
    NodeKeyTable table;
    const auto a = table.idFor({}, 7);
    // Buffer 1: the launch side (external and API records); buffer 2: the kernel that completed
    // later; buffer 3: a copy of the same launch chain.
    GpuActivity total;
    GpuActivity b1(INT64_MAX), b2(INT64_MAX), b3(INT64_MAX);
    b1.add(ext(a, 42));
    b1.add(launch(42, 1000));
    b1.countBuffer();
    b2.add(kernel(1200, 1300, 42));
    b2.addDroppedBySource(3);
    b2.countBuffer();
    MemcpyRecord m;
    m.startNs = 1400;
    m.endNs = 1450;
    m.bytes = 4096;
    m.kind = MemcpyKind::DtoH;
    m.correlationId = 42;
    b3.add(m);
    b3.countBuffer();
    total.merge(std::move(b2));  // the kernel's buffer first: order does not matter
    total.merge(std::move(b3));
    total.merge(std::move(b1));
    QCOMPARE(b1.records(), std::int64_t(0));
    QCOMPARE(total.counts().buffers, std::int64_t(3));
    QCOMPARE(total.counts().droppedBySource, std::int64_t(3));
    const GpuAttribution at = correlate(total, table);
    const NodeGpuStats* s = at.find({}, 7);
    QVERIFY(s);
    QCOMPARE(s->kernels, std::int64_t(1));
    QCOMPARE(s->memcpys, std::int64_t(1));
    QCOMPARE(s->memcpyBytes, std::int64_t(4096));
    QCOMPARE(s->gpuNs(), std::int64_t(150));
    // The kernel's launch: the API record with its correlation id.
    QCOMPARE(at.kernelLaunch.size(), std::size_t(1));
    QVERIFY(at.kernelLaunch[0] >= 0);
    QCOMPARE(total.apis()[static_cast<std::size_t>(at.kernelLaunch[0])].threadId,
             std::uint32_t(77));
  }

  void testDroppedRecordCounts() {
    GpuActivity act(3);
    QVERIFY(act.add(kernel(1, 2, 0)));
    QVERIFY(act.add(kernel(1, 2, 0)));
    QVERIFY(act.add(ext(1, 1)));
    QVERIFY(!act.add(kernel(1, 2, 0)));
    QVERIFY(!act.add(launch(1, 1)));
    QCOMPARE(act.records(), std::int64_t(3));
    QCOMPARE(act.counts().droppedByBudget, std::int64_t(2));
    act.addDroppedBySource(5);
    QCOMPARE(act.counts().droppedBySource, std::int64_t(5));
    // A merge into a full capture drops and counts what does not fit.
    GpuActivity more(INT64_MAX);
    more.add(kernel(1, 2, 0));
    more.add(kernel(1, 2, 0));
    act.merge(std::move(more));
    QCOMPARE(act.records(), std::int64_t(3));
    QCOMPARE(act.counts().droppedByBudget, std::int64_t(4));
    act.clear();
    QCOMPARE(act.records(), std::int64_t(0));
    QCOMPARE(act.counts(), GpuActivityCounts{});
    QCOMPARE(act.maxRecords(), std::int64_t(3));
  }

  void testNestedFramesAndTheKeyTable() {
    NodeKeyTable table;
    const auto top = table.idFor({}, 2);
    const std::vector<std::int64_t> p1{5}, p2{5, 7};
    const auto in1 = table.idFor(p1, 2);
    const auto in2 = table.idFor(p2, 2);
    QVERIFY(top != in1 && in1 != in2 && top != in2);
    QCOMPARE(table.idFor(p2, 2), in2);  // interned: the same node, the same id
    QCOMPARE(table.idFor({}, 2), top);
    QCOMPARE(table.size(), std::size_t(3));
    QCOMPARE(*table.keyOf(in2), (NodeKey{{5, 7}, 2}));
    QVERIFY(!table.keyOf(0));
    QVERIFY(!table.keyOf(4));
    GpuActivity act;
    act.add(kernel(10, 20, 1));
    act.add(kernel(30, 50, 2));
    act.add(ext(in2, 1));
    act.add(ext(in1, 2));
    const GpuAttribution at = correlate(act, table);
    QCOMPARE(at.find(p2, 2)->kernelNs, std::int64_t(10));
    QCOMPARE(at.find(p1, 2)->kernelNs, std::int64_t(20));
    QVERIFY(at.find({}, 2) == nullptr);
    // Interning from two threads gives one id per key.
    NodeKeyTable shared;
    auto work = [&] {
      for (std::int64_t id = 0; id < 200; ++id) shared.idFor(id % 2 ? p1 : p2, id);
    };
    std::thread t1(work), t2(work);
    t1.join();
    t2.join();
    QCOMPARE(shared.size(), std::size_t(200));
  }

  void testSeveralKernelsCopiesAndSetsPerNode() {
    NodeKeyTable table;
    const auto a = table.idFor({}, 3);
    GpuActivity act;
    for (std::uint32_t c = 1; c <= 3; ++c) {
      act.add(kernel(100 * c, 100 * c + 10 * c, c));
      act.add(ext(a, c));
    }
    MemsetRecord s;
    s.startNs = 1000;
    s.endNs = 1004;
    s.bytes = 256;
    s.correlationId = 2;
    act.add(s);
    MemcpyRecord m;
    m.startNs = 2000;
    m.endNs = 2100;
    m.bytes = 1 << 20;
    m.kind = MemcpyKind::HtoD;
    m.correlationId = 3;
    act.add(m);
    const NodeGpuStats* n = correlate(act, table).find({}, 3);
    QVERIFY(n);
    QCOMPARE(n->kernels, std::int64_t(3));
    QCOMPARE(n->kernelNs, std::int64_t(10 + 20 + 30));
    QCOMPARE(n->memsets, std::int64_t(1));
    QCOMPARE(n->memsetNs, std::int64_t(4));
    QCOMPARE(n->memsetBytes, std::int64_t(256));
    QCOMPARE(n->memcpyNs, std::int64_t(100));
    QCOMPARE(n->memcpyBytes, std::int64_t(1 << 20));
    QCOMPARE(n->gpuNs(), std::int64_t(164));
    QCOMPARE(n->records(), std::int64_t(5));
    QCOMPARE(n->kernelIndices.size(), std::size_t(3));
    QCOMPARE(memcpyKindName(MemcpyKind::HtoD), std::string_view("HtoD"));
    QCOMPARE(memcpyKindName(MemcpyKind::PtoP), std::string_view("PtoP"));
    QCOMPARE(syncKindName(SyncRecord::Kind::StreamSynchronize),
             std::string_view("stream synchronize"));
  }

  void testFusedKernelMapsToTheOriginalNodes() {
    eng::VarPtr x =
        eng::Variable::create(eng::TensorType(eng::DType::Float32, {eng::kUnknownDim}), "x");
    eng::VarPtr y = eng::tanh(eng::log(x) * 2.0 + 1.0);
    eng::VarPtr z = eng::sum(y);  // a reduction ends the fused chain
    eng::Function plain = eng::compile({x}, {z});
    eng::Function fast = eng::compile({x}, {z}, {}, {.mode = eng::Mode::FastRun});
    std::vector<std::int64_t> chain;  // the original log, mul, add, tanh
    for (const eng::Apply* n : plain.graph().nodes()) {
      const std::string s = n->op().str();
      if (s == "Elemwise{log}" || s == "Elemwise{tanh}") chain.push_back(n->id());
    }
    QCOMPARE(chain.size(), std::size_t(2));
    const eng::Apply* comp = nullptr;
    const eng::Apply* other = nullptr;
    for (const eng::Apply* n : fast.graph().nodes()) {
      if (dynamic_cast<const eng::Composite*>(&n->op()) && !comp)
        comp = n;
      else if (!dynamic_cast<const eng::Composite*>(&n->op()))
        other = n;
    }
    QVERIFY2(comp, "fast_run fuses the chain into a Composite");
    QVERIFY(other);
    eng::debug::NodeLineage lineage(fast.graph(), fast.rewriteLog());
    NodeKeyTable table;
    GpuActivity act;
    act.add(kernel(10, 30, 1, "fused_composite_0"));
    act.add(ext(table.idFor({}, comp->id()), 1));
    act.add(kernel(40, 45, 2, "reduce"));
    act.add(ext(table.idFor({}, other->id()), 2));
    const std::vector<std::int64_t> innerPath{other->id()};
    act.add(kernel(50, 52, 3, "inner"));
    act.add(ext(table.idFor(innerPath, 1234), 3));
    const GpuAttribution at = correlate(act, table);
    const auto groups = toOriginalNodes(at, lineage);
    QCOMPARE(groups.size(), std::size_t(3));
    const OriginalGpuGroup* fused = nullptr;
    for (const auto& g : groups)
      if (g.stats.node.id == comp->id() && g.stats.node.framePath.empty()) fused = &g;
    QVERIFY(fused);
    QCOMPARE(fused->originalNodes, lineage.originalNodesFor(comp->id()));
    for (std::int64_t id : chain)
      QVERIFY2(std::find(fused->originalNodes.begin(), fused->originalNodes.end(), id) !=
                   fused->originalNodes.end(),
               "every fused original node is named");
    QVERIFY(fused->originalNodes.size() >= 4);  // log, mul, add, tanh at least
    QCOMPARE(fused->stats.kernelNs, std::int64_t(20));
    // An inner-frame node stands for itself.
    for (const auto& g : groups)
      if (!g.stats.node.framePath.empty())
        QCOMPARE(g.originalNodes, std::vector<std::int64_t>{1234});
  }

  void testGpuTimesIntoTheProfile() {
    NodeKeyTable table;
    GpuActivity act;
    act.add(kernel(10, 30, 1));
    act.add(kernel(40, 100, 2));
    act.add(ext(table.idFor({}, 4), 1));
    act.add(ext(table.idFor({}, 4), 2));
    act.add(kernel(200, 203, 3));
    const std::vector<std::int64_t> path{4};
    act.add(ext(table.idFor(path, 1), 3));
    act.add(kernel(300, 301, 4));
    act.add(ext(table.idFor({}, 99), 4));  // a node the profile does not have
    Profile p;
    NodeProfile top;
    top.id = 4;
    NodeProfile inner;
    inner.framePath = path;
    inner.id = 1;
    p.nodes = {top, inner};
    QCOMPARE(addGpuTimes(p, correlate(act, table)), std::int64_t(1));
    QCOMPARE(p.nodes[0].gpuKernels, std::int64_t(2));
    QCOMPARE(p.nodes[0].gpuSeconds, 80e-9);
    QCOMPARE(p.nodes[1].gpuKernels, std::int64_t(1));
    QCOMPARE(p.nodes[1].gpuSeconds, 3e-9);
  }

  // Without CUPTI in the build the source is refused with a typed error (the CLI's one line for
  // --device cuda); with it, tst_cupti_decode covers the source.
  void testCuptiSourceAndTheBuild() {
#ifdef TSCOPE_HAVE_CUPTI
    QVERIFY(cuptiBuilt());
#else
    QVERIFY(!cuptiBuilt());
    try {
      makeCuptiSource();
      QFAIL("expected NotBuilt");
    } catch (const GpuSourceError& e) {
      QCOMPARE(e.kind(), GpuSourceError::Kind::NotBuilt);
      QVERIFY2(std::string(e.what()).find("this build has no CUPTI") != std::string::npos,
               e.what());
    }
#endif
    QCOMPARE(gpuSourceErrorKindName(GpuSourceError::Kind::NotBuilt), std::string_view("not-built"));
  }

  void testGpuSourceForADevice() {
    // The CPU needs none; a GPU profile whose CUPTI cannot be made keeps host times and says why
    // (here: a library that does not exist, or a build without CUPTI).
    std::string why = "stale";
    QVERIFY(gpuSourceFor(tscope::engine::Device::Cpu, {}, why) == nullptr);
    QVERIFY(why.empty());
    CuptiOptions options;
    options.library = "/nonexistent/libcupti.so.13";
    QVERIFY(gpuSourceFor(tscope::engine::Device::Cuda, options, why) == nullptr);
    QVERIFY2(why.starts_with("GPU kernel times are not recorded: "), why.c_str());
#ifdef TSCOPE_HAVE_CUPTI
    QVERIFY2(why.find("/nonexistent/libcupti.so.13") != std::string::npos, why.c_str());
#else
    QVERIFY2(why.find("this build has no CUPTI") != std::string::npos, why.c_str());
#endif
  }

  void testDemangle() {
    QCOMPARE(demangleKernelName("_Z3fooIfEvPfi"), std::string("void foo<float>(float*, int)"));
    QCOMPARE(demangleKernelName("ts_fused_0"), std::string("ts_fused_0"));
    QCOMPARE(demangleKernelName("_Zinvalid"), std::string("_Zinvalid"));
    QCOMPARE(demangleKernelName(""), std::string(""));
  }

  void testHostClockArithmetic() {
    HostClockMap clock;
    QVERIFY(clock.empty());
    QCOMPARE(clock.toHost(500), std::int64_t(500));  // no sample: unchanged
    QVERIFY(!clock.addSample(10, 0, 20));            // no GPU clock (no driver)
    QVERIFY(!clock.addSample(30, 5, 20));            // a reversed bracket
    QVERIFY(clock.empty());
    // Host 1000..1010 around GPU 500: offset 1005 - 500 = 505, uncertainty 5.
    QVERIFY(clock.addSample(1000, 500, 1010));
    QCOMPARE(clock.samples().front(), (HostClockMap::Sample{500, 505, 5}));
    QCOMPARE(clock.toHost(600), std::int64_t(1105));
    QCOMPARE(clock.toHost(100), std::int64_t(605));  // before the first: its offset
    QCOMPARE(clock.toHost(0), std::int64_t(0));      // invalid stays invalid
    // A wider reading close by is ignored; a narrower one replaces the sample.
    QVERIFY(clock.addSample(2000, 600, 2100));
    QCOMPARE(clock.samples().size(), std::size_t(1));
    QCOMPARE(clock.samples().front().offsetNs, std::int64_t(505));
    QVERIFY(clock.addSample(1100, 600, 1102));
    QCOMPARE(clock.samples().size(), std::size_t(1));
    QCOMPARE(clock.samples().front(), (HostClockMap::Sample{600, 501, 1}));
    // A second sample 10 ms later with offset 701: drift interpolated linearly in between.
    const std::int64_t g2 = 600 + 10'000'000;
    QVERIFY(clock.addSample(g2 + 700, g2, g2 + 702));
    QCOMPARE(clock.samples().size(), std::size_t(2));
    QCOMPARE(clock.samples().back().offsetNs, std::int64_t(701));
    QCOMPARE(clock.toHost(600 + 5'000'000), std::int64_t(600 + 5'000'000 + 601));
    QCOMPARE(clock.toHost(600 + 2'500'000), std::int64_t(600 + 2'500'000 + 551));
    QCOMPARE(clock.toHost(g2 + 1'000'000), std::int64_t(g2 + 1'000'000 + 701));  // after the last
    // Realistic magnitudes: CLOCK_REALTIME ~1.7e18 ns, steady ~1e13 ns.
    HostClockMap real;
    const std::int64_t gpu = 1'764'000'000'123'456'789;
    QVERIFY(real.addSample(9'000'000'000'000, gpu, 9'000'000'000'400));
    QCOMPARE(real.toHost(gpu + 1'000), std::int64_t(9'000'000'000'200 + 1'000));
    // An activity on the host clock: timed records move, untimed ones stay 0.
    GpuActivity act;
    act.add(kernel(gpu + 10, gpu + 30, 1));
    act.add(kernel(0, gpu, 1));
    act.add(launch(1, gpu + 2));
    act.toHostClock(real);
    QCOMPARE(act.kernels()[0].startNs, std::int64_t(9'000'000'000'210));
    QCOMPARE(act.kernels()[0].durationNs(), std::int64_t(20));
    QCOMPARE(act.kernels()[1].startNs, std::int64_t(0));
    QCOMPARE(act.apis()[0].startNs, std::int64_t(9'000'000'000'202));
  }
};

TSCOPE_TEST_MAIN(TestGpuRecords)
#include "tst_gpu_records.moc"

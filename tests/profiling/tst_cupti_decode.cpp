// The CUPTI source's CPU side (profiling/cupti/), built only with CUPTI: decoding of
// CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, API, Synchronization2, Overhead3 and
// ExternalCorrelation structs built in memory; unknown kinds and zero timestamps counted; records
// of one launch decoded from two buffers and correlated; CUPTI's result codes mapped to typed
// errors (39: another profiler, 999: no GPU, privileges); libcupti that cannot be loaded; and, on
// a machine without a GPU, the real source refusing to start with the "no GPU" error.
#include "profiling/cupti/buffer_queue.h"
#include "profiling/cupti/cupti_api.h"
#include "profiling/cupti/cupti_decode.h"
#include "profiling/cupti_source.h"
#include "test_main.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

using namespace tscope::prof;
using tscope::prof::cupti::Decoder;

namespace {
CUpti_ActivityKernel10 kernelStruct() {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'000;
  k.end = 3'500;
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 7;
  k.gridX = 128;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 1024;
  k.correlationId = 11;
  k.name = "_Z6kernelPfi";
  return k;
}
CUpti_ActivityExternalCorrelation extStruct(std::uint64_t id, std::uint32_t correlation) {
  CUpti_ActivityExternalCorrelation e;
  std::memset(&e, 0, sizeof e);
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = id;
  e.correlationId = correlation;
  return e;
}
CUpti_ActivityAPI apiStruct(std::uint32_t cbid, std::uint32_t correlation) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = 900;
  a.end = 950;
  a.processId = 5;
  a.threadId = 6;
  a.correlationId = correlation;
  return a;
}
template <class S>
const CUpti_Activity& asActivity(const S& s) {
  return reinterpret_cast<const CUpti_Activity&>(s);
}
// A buffer of records packed as CUPTI packs them (each at an 8-byte boundary), and an iterator
// over it standing in for cuptiActivityGetNextRecord.
struct PackedBuffer {
  std::uint8_t* data = static_cast<std::uint8_t*>(std::aligned_alloc(8, 4096));
  std::size_t size = 0;
  template <class S>
  void add(const S& s) {
    std::memcpy(data + size, &s, sizeof s);
    size += (sizeof s + 7) / 8 * 8;
  }
};
std::size_t recordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    default:
      return 0;
  }
}
std::atomic<int> g_iterated{0};
bool nextPacked(std::uint8_t* buffer, std::size_t validSize, CUpti_Activity*& record) {
  std::size_t at = 0;
  if (record) {
    const std::size_t size = recordSize(record->kind);
    if (size == 0) return false;
    at = static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(record) - buffer) +
         (size + 7) / 8 * 8;
  }
  if (at >= validSize) return false;
  record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  ++g_iterated;
  return true;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

class TestCuptiDecode : public QObject {
  Q_OBJECT

 private slots:
  void testKernel() {
    Decoder d;
    GpuActivity act;
    const auto k = kernelStruct();
    d.decode(asActivity(k), act);
    auto k2 = kernelStruct();
    k2.kind = CUPTI_ACTIVITY_KIND_KERNEL;  // the serialising kind has the same layout
    k2.name = "ts_fused_composite_3";
    d.decode(asActivity(k2), act);
    QCOMPARE(act.kernels().size(), std::size_t(2));
    const KernelRecord& r = act.kernels()[0];
    QCOMPARE(r.name, std::string("kernel(float*, int)"));
    QCOMPARE(r.startNs, std::int64_t(1000));
    QCOMPARE(r.endNs, std::int64_t(3500));
    QCOMPARE(r.device, std::uint32_t(1));
    QCOMPARE(r.context, std::uint32_t(2));
    QCOMPARE(r.stream, std::uint32_t(7));
    QCOMPARE(r.grid, (Dim3{128, 2, 1}));
    QCOMPARE(r.block, (Dim3{256, 1, 1}));
    QCOMPARE(r.registersPerThread, 40);
    QCOMPARE(r.staticSharedBytes, std::int64_t(4096));
    QCOMPARE(r.dynamicSharedBytes, std::int64_t(1024));
    QCOMPARE(r.correlationId, std::uint32_t(11));
    QCOMPARE(act.kernels()[1].name, std::string("ts_fused_composite_3"));
    auto unnamed = kernelStruct();
    unnamed.name = nullptr;
    d.decode(asActivity(unnamed), act);
    QCOMPARE(act.kernels()[2].name, std::string("(unnamed kernel)"));
  }

  void testCopiesAndSets() {
    Decoder d;
    GpuActivity act;
    CUpti_ActivityMemcpy6 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.bytes = 1 << 20;
    m.start = 10;
    m.end = 60;
    m.streamId = 3;
    m.correlationId = 4;
    d.decode(asActivity(m), act);
    m.copyKind = 200;  // a kind this build does not know
    d.decode(asActivity(m), act);
    CUpti_ActivityMemcpyPtoP4 p;
    std::memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.bytes = 64;
    p.start = 70;
    p.end = 80;
    p.correlationId = 5;
    d.decode(asActivity(p), act);
    CUpti_ActivityMemset4 s;
    std::memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 256;
    s.value = 0xff;
    s.start = 90;
    s.end = 95;
    s.correlationId = 6;
    d.decode(asActivity(s), act);
    QCOMPARE(act.memcpys().size(), std::size_t(3));
    QCOMPARE(act.memcpys()[0].kind, MemcpyKind::DtoH);
    QCOMPARE(act.memcpys()[0].bytes, std::uint64_t(1 << 20));
    QCOMPARE(act.memcpys()[0].durationNs(), std::int64_t(50));
    QCOMPARE(act.memcpys()[0].stream, std::uint32_t(3));
    QCOMPARE(act.memcpys()[0].correlationId, std::uint32_t(4));
    QCOMPARE(act.memcpys()[1].kind, MemcpyKind::Unknown);
    QCOMPARE(act.memcpys()[2].kind, MemcpyKind::PtoP);
    QCOMPARE(act.memcpys()[2].correlationId, std::uint32_t(5));
    QCOMPARE(act.memsets().size(), std::size_t(1));
    QCOMPARE(act.memsets()[0].bytes, std::uint64_t(256));
    QCOMPARE(act.memsets()[0].value, std::uint32_t(0xff));
    QCOMPARE(act.memsets()[0].correlationId, std::uint32_t(6));
  }

  void testApiNamesSyncOverheadAndExternal() {
    int lookups = 0;
    Decoder d([&](ApiRecord::Domain domain, std::uint32_t cbid) -> std::string {
      ++lookups;
      return domain == ApiRecord::Domain::Runtime && cbid == 211 ? "cudaLaunchKernel" : "";
    });
    GpuActivity act;
    d.decode(asActivity(apiStruct(211, 11)), act);
    d.decode(asActivity(apiStruct(211, 12)), act);
    d.decode(asActivity(apiStruct(5, 13)), act);
    QCOMPARE(act.apis().size(), std::size_t(3));
    QCOMPARE(act.apis()[0].name, std::string("cudaLaunchKernel"));
    QCOMPARE(act.apis()[0].threadId, std::uint32_t(6));
    QCOMPARE(act.apis()[0].processId, std::uint32_t(5));
    QCOMPARE(act.apis()[0].correlationId, std::uint32_t(11));
    QCOMPARE(act.apis()[0].domain, ApiRecord::Domain::Runtime);
    QCOMPARE(act.apis()[2].name, std::string("cbid 5"));
    QCOMPARE(lookups, 2);  // once per cbid
    CUpti_ActivitySynchronization2 s;
    std::memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.start = 5;
    s.end = 500;
    s.streamId = 9;
    s.correlationId = 14;
    d.decode(asActivity(s), act);
    QCOMPARE(act.syncs().size(), std::size_t(1));
    QCOMPARE(act.syncs()[0].kind, SyncRecord::Kind::StreamSynchronize);
    QCOMPARE(act.syncs()[0].stream, std::uint32_t(9));
    QCOMPARE(act.syncs()[0].durationNs(), std::int64_t(495));
    CUpti_ActivityOverhead3 o;
    std::memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.threadId = 42;
    o.start = 100;
    o.end = 130;
    d.decode(asActivity(o), act);
    QCOMPARE(act.overheads().size(), std::size_t(1));
    QCOMPARE(act.overheads()[0].kind, std::string("activity buffer flush"));
    QCOMPARE(act.overheads()[0].objectId, std::uint64_t(42));
    const auto e = extStruct(99, 11);
    d.decode(asActivity(e), act);
    QCOMPARE(act.externals().size(), std::size_t(1));
    QCOMPARE(act.externals()[0],
             (ExternalCorrelationRecord{kExternalKindCustom0, std::uint64_t(99), 11u}));
  }

  void testUnknownKindsAndZeroTimestamps() {
    Decoder d;
    GpuActivity act;
    CUpti_ActivityAPI marker = apiStruct(1, 1);
    marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
    d.decode(asActivity(marker), act);
    QCOMPARE(act.counts().unknownRecords, std::int64_t(1));
    QCOMPARE(act.records(), std::int64_t(0));
    auto k = kernelStruct();
    k.start = 0;
    d.decode(asActivity(k), act);
    auto k2 = kernelStruct();
    k2.end = 0;
    d.decode(asActivity(k2), act);
    auto k3 = kernelStruct();
    k3.start = ~std::uint64_t(0);  // not a time
    d.decode(asActivity(k3), act);
    QCOMPARE(act.kernels().size(), std::size_t(3));
    QCOMPARE(act.counts().invalidTimestamps, std::int64_t(3));
    QVERIFY(!act.kernels()[2].timed());
  }

  void testOneLaunchAcrossTwoBuffers() {
    NodeKeyTable table;
    const std::vector<std::int64_t> path{4};
    const auto id = table.idFor(path, 9);
    Decoder d;
    // Buffer 1 holds the launch (external + API records), buffer 2 the kernel, decoded
    // separately as the worker does, merged in completion order (the kernel's first).
    GpuActivity b1(INT64_MAX), b2(INT64_MAX);
    d.decode(asActivity(extStruct(id, 11)), b1);
    d.decode(asActivity(apiStruct(211, 11)), b1);
    d.decode(asActivity(kernelStruct()), b2);
    GpuActivity all;
    all.merge(std::move(b2));
    all.merge(std::move(b1));
    const GpuAttribution at = correlate(all, table);
    const NodeGpuStats* s = at.find(path, 9);
    QVERIFY(s);
    QCOMPARE(s->kernels, std::int64_t(1));
    QCOMPARE(s->kernelNs, std::int64_t(2500));
    QCOMPARE(at.kernelLaunch[0], std::int64_t(0));
    QCOMPARE(at.unattributed.kernels, std::int64_t(0));
  }

  // Note [CUPTI buffers]: completed buffers queued from any thread, decoded on the queue's worker;
  // waitIdle() is what flush() waits for; the destructor decodes what is still queued.
  void testBufferQueue() {
    NodeKeyTable table;
    const auto id = table.idFor({}, 8);
    PackedBuffer launchSide, gpuSide, empty;
    launchSide.add(extStruct(id, 11));
    launchSide.add(apiStruct(211, 11));
    gpuSide.add(kernelStruct());
    auto other = kernelStruct();
    other.correlationId = 0;
    gpuSide.add(other);
    g_iterated = 0;
    cupti::BufferQueue queue(nextPacked, Decoder(), INT64_MAX);
    std::thread a([&] { queue.enqueue(gpuSide.data, gpuSide.size, 4); });
    std::thread b([&] { queue.enqueue(launchSide.data, launchSide.size, 0); });
    a.join();
    b.join();
    queue.enqueue(empty.data, 0, 0);
    queue.waitIdle();
    QCOMPARE(g_iterated.load(), 4);
    const GpuActivity act = queue.take();
    QCOMPARE(act.counts().buffers, std::int64_t(3));
    QCOMPARE(act.counts().droppedBySource, std::int64_t(4));
    QCOMPARE(act.kernels().size(), std::size_t(2));
    const GpuAttribution at = correlate(act, table);
    QVERIFY(at.find({}, 8));
    QCOMPARE(at.find({}, 8)->kernelNs, std::int64_t(2500));
    QCOMPARE(at.withoutCorrelation, std::int64_t(1));
    QCOMPARE(queue.take().records(), std::int64_t(0));  // taken
    // The capture budget applies to what the queue keeps.
    {
      PackedBuffer big;
      for (int k = 0; k < 5; ++k) big.add(kernelStruct());
      g_iterated = 0;
      cupti::BufferQueue small(nextPacked, Decoder(), 3);
      small.enqueue(big.data, big.size, 0);
      small.waitIdle();
      const GpuActivity kept = small.take();
      QCOMPARE(kept.records(), std::int64_t(3));
      QCOMPARE(kept.counts().droppedByBudget, std::int64_t(2));
    }
    // Destroyed with a buffer still queued: decoded before the worker stops.
    g_iterated = 0;
    {
      PackedBuffer last;
      last.add(kernelStruct());
      last.add(kernelStruct());
      cupti::BufferQueue dying(nextPacked, Decoder(), INT64_MAX);
      dying.enqueue(last.data, last.size, 0);
    }
    QCOMPARE(g_iterated.load(), 2);
  }

  void testErrorMapping() {
    using Kind = GpuSourceError::Kind;
    const auto conflict = cupti::cuptiError(39, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)",
                                            "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    QCOMPARE(conflict.kind(), Kind::ProfilerConflict);
    QCOMPARE(conflict.code(), 39);
    const std::string c = conflict.what();
    QVERIFY2(contains(c, "another profiler holds CUPTI"), c.c_str());
    QVERIFY2(contains(c, "Nsight Systems/Compute"), c.c_str());
    QVERIFY2(contains(c, "compute-sanitizer"), c.c_str());
    QVERIFY2(contains(c, "Kineto"), c.c_str());
    QVERIFY2(contains(c, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)"), c.c_str());
    QVERIFY2(contains(c, ", 39)"), c.c_str());
    QVERIFY(c.find('\n') == std::string::npos);
    for (int code : {999, 15, 2}) {
      const auto e = cupti::cuptiError(code, "cuptiActivityEnable", "X");
      QCOMPARE(e.kind(), Kind::NoGpu);
      QVERIFY2(std::string(e.what()).rfind("no GPU", 0) == 0, e.what());
    }
    QCOMPARE(cupti::cuptiError(35, "f", "X").kind(), Kind::NoPermission);
    QVERIFY(
        contains(cupti::cuptiError(35, "f", "X").what(), "NVreg_RestrictProfilingToAdminUsers"));
    QCOMPARE(cupti::cuptiError(7, "f", "X").kind(), Kind::Failed);
    QCOMPARE(gpuSourceErrorKindName(Kind::NoGpu), std::string_view("no-gpu"));
    QCOMPARE(gpuSourceErrorKindName(Kind::ProfilerConflict), std::string_view("profiler-conflict"));
  }

  void testCannotLoad() {
    QVERIFY(cuptiBuilt());
    try {
      CuptiOptions o;
      o.library = "/nonexistent/libcupti.so.13";
      makeCuptiSource(o);
      QFAIL("expected CannotLoad");
    } catch (const GpuSourceError& e) {
      QCOMPARE(e.kind(), GpuSourceError::Kind::CannotLoad);
      QVERIFY2(contains(e.what(), "/nonexistent/libcupti.so.13"), e.what());
      QVERIFY2(contains(e.what(), "CUPTI cannot be loaded"), e.what());
    }
    // A library that loads but is not CUPTI.
    try {
      cupti::loadCupti({"libm.so.6"});
      QFAIL("expected CannotLoad");
    } catch (const GpuSourceError& e) {
      QCOMPARE(e.kind(), GpuSourceError::Kind::CannotLoad);
      QVERIFY2(contains(e.what(), "lacks cuptiGetVersion"), e.what());
    }
    // The default search names every file it tried.
    const auto candidates = cupti::cuptiCandidates("");
    QVERIFY(candidates.size() >= 2);
    QCOMPARE(candidates[0], "libcupti.so." + std::to_string(CUDA_VERSION / 1000));
    QCOMPARE(cupti::cuptiCandidates("/x/libcupti.so"), std::vector<std::string>{"/x/libcupti.so"});
  }

  // Note: on a machine without a GPU or driver (this project's CI) the real CUPTI refuses to
  // enable activities (999); the source must say "no GPU", leave nothing enabled, keep its sink
  // harmless, and be startable again later. With a GPU, tests/gpu covers the source.
  void testStartWithoutAGpu() {
    std::unique_ptr<GpuSource> gpu;
    try {
      gpu = makeCuptiSource();
    } catch (const GpuSourceError& e) {
      QFAIL(e.what());  // the toolkit's libcupti is on this machine
    }
    QCOMPARE(gpu->name(), std::string_view("cupti"));
    try {
      gpu->start();
    } catch (const GpuSourceError& e) {
      qInfo("%s", e.what());
      QCOMPARE(e.kind(), GpuSourceError::Kind::NoGpu);
      QVERIFY2(std::string(e.what()).rfind("no GPU", 0) == 0, e.what());
      // The sink is balanced and silent; flush, stop and take do nothing.
      auto sink = gpu->correlationSink();
      const std::vector<std::int64_t> path{1};
      sink->push(path, 3);
      sink->pop();
      sink->pop();  // an extra pop is ignored
      gpu->flush();
      gpu->stop();
      QCOMPARE(gpu->takeActivity().records(), std::int64_t(0));
      QCOMPARE(gpu->nodeKeys().size(), std::size_t(0));
      // Starting again fails the same way (no state was left behind), and so does a new source.
      try {
        gpu->start();
        QFAIL("expected no GPU again");
      } catch (const GpuSourceError& again) {
        QCOMPARE(again.kind(), GpuSourceError::Kind::NoGpu);
      }
      gpu.reset();
      auto second = makeCuptiSource();
      try {
        second->start();
        QFAIL("expected no GPU for a second source");
      } catch (const GpuSourceError& again) {
        QCOMPARE(again.kind(), GpuSourceError::Kind::NoGpu);
      }
      return;
    }
    gpu->stop();
    QSKIP("a GPU is present: tests/gpu/tst_cupti_source covers the started source");
  }
};

TSCOPE_TEST_MAIN(TestCuptiDecode)
#include "tst_cupti_decode.moc"

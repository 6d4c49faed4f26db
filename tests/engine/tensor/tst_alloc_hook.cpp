// The allocation hook (engine/tensor/alloc_hook.h): nothing is counted without counters; with
// them every Storage's bytes are counted when it is built (zeroed or not) and when it dies; live
// and peak follow; the counters are per thread; the scoped guard restores the previous counters;
// views share their storage and count nothing.
#include "engine/tensor/alloc_hook.h"
#include "engine/tensor/tensor.h"
#include "test_main.h"

#include <thread>

using namespace tscope::engine;

class TestAllocHook : public QObject {
  Q_OBJECT

 private slots:
  void testNothingIsCountedWithoutCounters() {
    QVERIFY(allocationCounters() == nullptr);
    AllocationCounters c;
    { Tensor t = Tensor::empty(DType::Float32, {100}); }
    QCOMPARE(c.allocatedBytes, std::int64_t(0));
    QVERIFY(allocationCounters() == nullptr);
  }

  void testAllocationsAndFreesAreCounted() {
    AllocationCounters c;
    {
      ScopedAllocationCounters hook(&c);
      QVERIFY(allocationCounters() == &c);
      Tensor a = Tensor::empty(DType::Float32, {100});  // 400 bytes, uninitialised
      QCOMPARE(c.allocatedBytes, std::int64_t(400));
      QCOMPARE(c.live, std::int64_t(400));
      {
        Tensor b = Tensor::zeros(DType::Float64, {10});  // 80 bytes, zeroed
        QCOMPARE(c.allocatedBytes, std::int64_t(480));
        QCOMPARE(c.live, std::int64_t(480));
        Tensor view = b;  // shares the storage: nothing allocated
        QCOMPARE(c.allocations, std::int64_t(2));
      }
      QCOMPARE(c.freedBytes, std::int64_t(80));
      QCOMPARE(c.frees, std::int64_t(1));
      QCOMPARE(c.live, std::int64_t(400));
      QCOMPARE(c.peakLive, std::int64_t(480));
      c.resetPeak();
      QCOMPARE(c.peakLive, std::int64_t(400));
    }
    QVERIFY(allocationCounters() == nullptr);
    QCOMPARE(c.freedBytes, std::int64_t(480));
    QCOMPARE(c.live, std::int64_t(0));
  }

  void testStorageFromBeforeShowsAsFreed() {
    Tensor old = Tensor::empty(DType::Int8, {64});
    AllocationCounters c;
    ScopedAllocationCounters hook(&c);
    old = Tensor();
    QCOMPARE(c.freedBytes, std::int64_t(64));
    QCOMPARE(c.live, std::int64_t(-64));
  }

  void testCountersArePerThread() {
    AllocationCounters mine;
    ScopedAllocationCounters hook(&mine);
    std::int64_t otherThreadSaw = -1;
    std::thread t([&] {
      otherThreadSaw = allocationCounters() == nullptr ? 0 : 1;
      Tensor x = Tensor::empty(DType::Float32, {1000});
    });
    t.join();
    QCOMPARE(otherThreadSaw, std::int64_t(0));
    QCOMPARE(mine.allocatedBytes, std::int64_t(0));
    // The thread's own counters outlive any user of them.
    AllocationCounters& own = threadAllocationCounters();
    QVERIFY(&own == &threadAllocationCounters());
  }

  void testGuardsNest() {
    AllocationCounters outer, inner;
    ScopedAllocationCounters a(&outer);
    {
      ScopedAllocationCounters b(&inner);
      Tensor x = Tensor::empty(DType::Float32, {4});
      QCOMPARE(inner.allocatedBytes, std::int64_t(16));
    }
    QVERIFY(allocationCounters() == &outer);
    QCOMPARE(outer.allocatedBytes, std::int64_t(0));
    QCOMPARE(inner.freedBytes, std::int64_t(16));
  }
};

TSCOPE_TEST_MAIN(TestAllocHook)
#include "tst_alloc_hook.moc"

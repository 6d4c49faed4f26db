// CachingDeviceAllocator: the bookkeeping of the CUDA backend's device memory, on a fake raw
// allocator that hands out addresses without memory (Note [Caching allocator]): rounding, reuse
// after warm-up, splitting and merging, per-stream free lists, statistics, emptyCache and
// running out of memory.
#include "engine/tensor/caching_allocator.h"
#include "test_main.h"

#include <set>
#include <vector>

using namespace tscope::engine;

namespace {
// Addresses from a counter (aligned like cudaMalloc's), an optional limit on the bytes held.
class FakeRaw final : public RawDeviceAllocator {
 public:
  void* allocate(std::size_t nbytes) override {
    ++calls;
    if (limit != 0 && held + nbytes > limit) return nullptr;
    held += nbytes;
    const std::uintptr_t address = next;
    next += (nbytes + 255) / 256 * 256 + 4096;  // a gap: neighbouring segments never touch
    sizes[address] = nbytes;
    return reinterpret_cast<void*>(address);
  }
  void free(void* ptr) override {
    auto it = sizes.find(reinterpret_cast<std::uintptr_t>(ptr));
    QVERIFY2(it != sizes.end(), "the cache freed a pointer the raw allocator never gave");
    held -= it->second;
    sizes.erase(it);
    ++frees;
  }
  std::uintptr_t next = 0x7f0000000000;
  std::size_t held = 0, limit = 0;
  int calls = 0, frees = 0;
  std::map<std::uintptr_t, std::size_t> sizes;
};

constexpr std::size_t kMiB = std::size_t(1) << 20;
std::uintptr_t addr(void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}
}  // namespace

class TestCachingAllocator : public QObject {
  Q_OBJECT
 private slots:
  void testRoundSize_data();
  void testRoundSize();
  void testNoRawAllocationAfterWarmUp();
  void testSmallBlocksShareOneSegment();
  void testFreedNeighboursMergeAndEmptyCacheReleases();
  void testLargeBlocksSplitOnlyWhenTheRestIsLarge();
  void testStreamsKeepTheirOwnFreeLists();
  void testStatistics();
  void testOutOfMemoryEmptiesTheCacheFirst();
  void testOutOfMemoryMessage();
  void testFreeOfAnUnknownPointerThrows();
  void testDestructorReturnsEverySegment();
};

void TestCachingAllocator::testRoundSize_data() {
  QTest::addColumn<qulonglong>("request");
  QTest::addColumn<qulonglong>("served");
  QTest::newRow("0") << 0ull << 512ull;
  QTest::newRow("1") << 1ull << 512ull;
  QTest::newRow("512") << 512ull << 512ull;
  QTest::newRow("513") << 513ull << 1024ull;
  QTest::newRow("1 MiB + 1") << qulonglong(kMiB + 1) << qulonglong(kMiB + 512);
}

void TestCachingAllocator::testRoundSize() {
  QFETCH(qulonglong, request);
  QFETCH(qulonglong, served);
  QCOMPARE(qulonglong(CachingDeviceAllocator::roundSize(request)), served);
}

void TestCachingAllocator::testNoRawAllocationAfterWarmUp() {
  // A training step's pattern: the same sizes allocated and freed call after call.
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  const std::vector<std::size_t> sizes{4000, 128 * 500 * 4, 3 * kMiB, 40, 10 * kMiB, 500 * 4};
  auto step = [&] {
    std::vector<void*> live;
    for (std::size_t s : sizes) live.push_back(cache.allocate(s));
    for (void* p : live) cache.free(p);
  };
  step();
  const int warm = raw.calls;
  QVERIFY(warm > 0);
  for (int i = 0; i < 20; ++i) step();
  QCOMPARE(raw.calls, warm);
  QCOMPARE(cache.stats().rawAllocations, std::int64_t(warm));
  QCOMPARE(cache.stats().allocations, std::int64_t(21 * sizes.size()));
  QCOMPARE(cache.stats().cacheHits, std::int64_t(21 * sizes.size()) - warm);
}

void TestCachingAllocator::testSmallBlocksShareOneSegment() {
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  std::set<std::uintptr_t> seen;
  void* first = cache.allocate(100);
  for (int i = 0; i < 100; ++i) {
    void* p = cache.allocate(1000);
    QVERIFY(seen.insert(addr(p)).second);
    QVERIFY(addr(p) >= addr(first) &&
            addr(p) < addr(first) + CachingDeviceAllocator::kSegmentBytes);
  }
  QCOMPARE(raw.calls, 1);
  QCOMPARE(raw.sizes.begin()->second, CachingDeviceAllocator::kSegmentBytes);
}

void TestCachingAllocator::testFreedNeighboursMergeAndEmptyCacheReleases() {
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  void* a = cache.allocate(512);
  void* b = cache.allocate(512);
  void* c = cache.allocate(512);
  QCOMPARE(addr(b), addr(a) + 512);
  QCOMPARE(addr(c), addr(b) + 512);
  cache.free(b);
  // Something in use: emptyCache keeps the segment.
  cache.emptyCache();
  QCOMPARE(raw.frees, 0);
  cache.free(a);
  cache.free(c);
  // a, b, c and the rest merged back into one free block: a request for the whole segment fits.
  void* whole = cache.allocate(CachingDeviceAllocator::kSmallLimit);
  QCOMPARE(addr(whole), addr(a));
  QCOMPARE(raw.calls, 1);
  cache.free(whole);
  cache.emptyCache();
  QCOMPARE(raw.frees, 1);
  QCOMPARE(raw.held, std::size_t(0));
  QCOMPARE(cache.stats().cachedBytes, std::size_t(0));
  QCOMPARE(cache.stats().rawFrees, std::int64_t(1));
}

void TestCachingAllocator::testLargeBlocksSplitOnlyWhenTheRestIsLarge() {
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  // 3 MiB rounds its segment up to 4 MiB; the 1 MiB rest is no large block: not split off.
  void* p = cache.allocate(3 * kMiB);
  QCOMPARE(raw.sizes.begin()->second, 4 * kMiB);
  QCOMPARE(cache.stats().allocatedBytes, 4 * kMiB);
  cache.free(p);
  // 10 MiB then 3 MiB from its free 10 MiB: split, the 7 MiB rest serves the next request.
  void* big = cache.allocate(10 * kMiB);
  cache.free(big);
  const int calls = raw.calls;
  void* q = cache.allocate(3 * kMiB);  // best fit: the 4 MiB segment
  void* r = cache.allocate(3 * kMiB);  // from the 10 MiB one, split
  void* s = cache.allocate(6 * kMiB);  // the 7 MiB rest
  QCOMPARE(raw.calls, calls);
  QVERIFY(addr(q) != addr(r) && addr(r) != addr(s));
  cache.free(q);
  cache.free(r);
  cache.free(s);
}

void TestCachingAllocator::testStreamsKeepTheirOwnFreeLists() {
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  void* p = cache.allocate(4096, /*stream=*/1);
  cache.free(p);
  // Stream 2 may not take stream 1's block: work queued on 1 may still read it.
  void* q = cache.allocate(4096, 2);
  QVERIFY(addr(q) != addr(p));
  QCOMPARE(raw.calls, 2);
  // Stream 1 gets its block back.
  void* r = cache.allocate(4096, 1);
  QCOMPARE(addr(r), addr(p));
  QCOMPARE(raw.calls, 2);
  cache.free(q);
  cache.free(r);
}

void TestCachingAllocator::testStatistics() {
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  void* a = cache.allocate(1000);      // 1024 bytes of a 2 MiB small segment
  void* b = cache.allocate(2 * kMiB);  // a 2 MiB large segment of its own
  DeviceMemoryStats s = cache.stats();
  QCOMPARE(s.allocatedBytes, 1024 + 2 * kMiB);
  QCOMPARE(s.requestedBytes, 1000 + 2 * kMiB);
  QCOMPARE(s.cachedBytes, 4 * kMiB);
  QCOMPARE(s.peakAllocatedBytes, s.allocatedBytes);
  QCOMPARE(s.allocations, std::int64_t(2));
  QCOMPARE(s.rawAllocations, std::int64_t(2));
  cache.free(b);
  s = cache.stats();
  QCOMPARE(s.allocatedBytes, std::size_t(1024));
  QCOMPARE(s.peakAllocatedBytes, 1024 + 2 * kMiB);
  QCOMPARE(s.cachedBytes, 4 * kMiB);  // freed blocks stay cached
  QCOMPARE(s.frees, std::int64_t(1));
  cache.resetPeak();
  QCOMPARE(cache.stats().peakAllocatedBytes, std::size_t(1024));
  cache.emptyCache();
  s = cache.stats();
  QCOMPARE(s.cachedBytes, 2 * kMiB);  // the small segment holds a
  QCOMPARE(s.peakCachedBytes, 4 * kMiB);
  cache.free(a);
}

void TestCachingAllocator::testOutOfMemoryEmptiesTheCacheFirst() {
  FakeRaw raw;
  raw.limit = 8 * kMiB;
  CachingDeviceAllocator cache(raw);
  void* p = cache.allocate(6 * kMiB);
  cache.free(p);  // cached: 6 MiB of the 8 held
  // 7 MiB (an 8 MiB segment) does not fit beside the cached 6 MiB: the cache gives its free segment
  // back and retries.
  void* q = cache.allocate(7 * kMiB);
  QVERIFY(q != nullptr);
  QCOMPARE(raw.frees, 1);
  QCOMPARE(cache.stats().cachedBytes, 8 * kMiB);
  cache.free(q);
}

void TestCachingAllocator::testOutOfMemoryMessage() {
  FakeRaw raw;
  raw.limit = 4 * kMiB;
  CachingDeviceAllocator cache(raw);
  void* p = cache.allocate(3 * kMiB);
  try {
    cache.allocate(5 * kMiB);
    QFAIL("expected DeviceOutOfMemory");
  } catch (const DeviceOutOfMemory& e) {
    const QString what = QString::fromStdString(e.what());
    QVERIFY2(what.contains("CUDA out of memory: expected room for a block of 5242880 bytes"),
             qPrintable(what));
    QVERIFY2(what.contains("allocated 4.0 MiB, cached 4.0 MiB"), qPrintable(what));
  }
  cache.free(p);
}

void TestCachingAllocator::testFreeOfAnUnknownPointerThrows() {
  FakeRaw raw;
  CachingDeviceAllocator cache(raw);
  void* p = cache.allocate(10);
  cache.free(p);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.free(p));
  int local = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.free(&local));
}

void TestCachingAllocator::testDestructorReturnsEverySegment() {
  FakeRaw raw;
  {
    CachingDeviceAllocator cache(raw);
    cache.allocate(100);
    void* p = cache.allocate(5 * kMiB);
    cache.free(p);
  }
  QCOMPARE(raw.held, std::size_t(0));
  QCOMPARE(raw.frees, raw.calls);
}

TSCOPE_TEST_MAIN(TestCachingAllocator)
#include "tst_caching_allocator.moc"

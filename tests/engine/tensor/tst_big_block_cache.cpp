// Note [Big block cache]: freed storage of 4 MiB and more is reused by the next storage of the same
// size, within a byte budget and an age limit.
#include "engine/tensor/big_block_cache.h"
#include "engine/tensor/tensor.h"
#include "test_main.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/resource.h>
#include <thread>
#include <vector>

using namespace tscope::engine;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::byte* block(std::size_t bytes) {
  return static_cast<std::byte*>(std::malloc(bytes));
}

long minorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

class TestBigBlockCache : public QObject {
  Q_OBJECT

 private slots:
  void reusesOnlyTheExactSize() {
    BigBlockCache cache(64 * kMiB, 10s);
    std::byte* a = block(8 * kMiB);
    cache.give(a, 8 * kMiB);
    QCOMPARE(cache.cachedBytes(), 8 * kMiB);
    QVERIFY(cache.take(4 * kMiB) == nullptr);
    QVERIFY(cache.take(10 * kMiB) == nullptr);
    QCOMPARE(cache.take(8 * kMiB), a);
    QCOMPARE(cache.cachedBytes(), std::size_t{0});
    QVERIFY(cache.take(8 * kMiB) == nullptr);
    std::free(a);
  }

  void mostRecentlyFreedFirst() {
    BigBlockCache cache(64 * kMiB, 10s);
    std::byte* a = block(8 * kMiB);
    std::byte* b = block(8 * kMiB);
    cache.give(a, 8 * kMiB);
    cache.give(b, 8 * kMiB);
    QCOMPARE(cache.take(8 * kMiB), b);
    QCOMPARE(cache.take(8 * kMiB), a);
    std::free(a);
    std::free(b);
  }

  void budgetDropsTheOldest() {
    BigBlockCache cache(20 * kMiB, 10s);
    std::byte* a = block(8 * kMiB);
    std::byte* b = block(8 * kMiB);
    std::byte* c = block(8 * kMiB);
    cache.give(a, 8 * kMiB);
    cache.give(b, 8 * kMiB);
    cache.give(c, 8 * kMiB);  // 24 MiB would exceed 20: a goes back to the system
    QCOMPARE(cache.cachedBlocks(), std::size_t{2});
    QCOMPARE(cache.cachedBytes(), 16 * kMiB);
    QCOMPARE(cache.take(8 * kMiB), c);
    QCOMPARE(cache.take(8 * kMiB), b);
    QVERIFY(cache.take(8 * kMiB) == nullptr);
    std::free(b);
    std::free(c);
  }

  void blockLargerThanTheBudgetIsNotKept() {
    BigBlockCache cache(16 * kMiB, 10s);
    cache.give(block(32 * kMiB), 32 * kMiB);
    QCOMPARE(cache.cachedBlocks(), std::size_t{0});
    QCOMPARE(cache.cachedBytes(), std::size_t{0});
  }

  void unusedBlocksExpire() {
    BigBlockCache cache(64 * kMiB, 30ms);
    cache.give(block(8 * kMiB), 8 * kMiB);
    QCOMPARE(cache.cachedBlocks(), std::size_t{1});
    std::this_thread::sleep_for(60ms);
    QVERIFY(cache.take(4 * kMiB) == nullptr);  // any call frees what has expired
    QCOMPARE(cache.cachedBlocks(), std::size_t{0});
  }

  void clearFreesEverything() {
    BigBlockCache cache(64 * kMiB, 10s);
    cache.give(block(8 * kMiB), 8 * kMiB);
    cache.give(block(6 * kMiB), 6 * kMiB);
    cache.clear();
    QCOMPARE(cache.cachedBlocks(), std::size_t{0});
    QVERIFY(cache.take(8 * kMiB) == nullptr);
  }

  void concurrentGiveAndTake() {
    BigBlockCache cache(256 * kMiB, 10s);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&cache] {
        for (int i = 0; i < 200; ++i) {
          std::byte* p = cache.take(4 * kMiB);
          if (p == nullptr) p = block(4 * kMiB);
          p[0] = std::byte{1};
          cache.give(p, 4 * kMiB);
        }
      });
    for (auto& t : threads) t.join();
    QVERIFY(cache.cachedBlocks() >= 1 && cache.cachedBlocks() <= 4);
    QCOMPARE(cache.cachedBytes(), cache.cachedBlocks() * 4 * kMiB);
  }

  // Storage: a fresh 40 MB tensor after one of the same size was freed takes its block, whose pages
  // are mapped already, and a zero-filled tensor on a reused block is zero.
  void storageReusesFreedBlocks() {
    const std::int64_t n = 10'000'000;
    const void* first = nullptr;
    {
      Tensor t = Tensor::empty(DType::Float32, {n});
      first = t.rawData();
      float* data = t.data<float>();
      for (std::int64_t i = 0; i < n; ++i) data[i] = 1.0f;
    }
    Tensor second = Tensor::empty(DType::Float32, {n});
    QCOMPARE(static_cast<const void*>(second.rawData()), first);
    const long before = minorFaults();
    std::memset(second.rawData(), 2, static_cast<std::size_t>(n) * 4);
    const long faults = minorFaults() - before;
    QVERIFY2(faults < 100,
             qPrintable(QString("writing a reused 40 MB block took %1 page faults").arg(faults)));
    second = Tensor();
    Tensor zeros(DType::Float32, {n});
    QCOMPARE(static_cast<const void*>(zeros.rawData()), first);
    const float* z = zeros.data<float>();
    std::int64_t nonzero = 0;
    for (std::int64_t i = 0; i < n; ++i) nonzero += z[i] != 0.0f;
    QCOMPARE(nonzero, std::int64_t{0});
  }
};

TSCOPE_TEST_MAIN(TestBigBlockCache)
#include "tst_big_block_cache.moc"

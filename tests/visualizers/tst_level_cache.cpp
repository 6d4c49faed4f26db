#include "gui_test_main.h"
#include "visualizers/layout/level_cache.h"

using namespace tscope::vis::layout;

namespace {

std::shared_ptr<const LevelLayout> layoutOfNodes(int nodes) {
  auto layout = std::make_shared<LevelLayout>();
  layout->nodes.assign(static_cast<std::size_t>(nodes), QRectF(0, 0, 10, 10));
  return layout;
}

}  // namespace

class TestLevelCache : public QObject {
  Q_OBJECT

 private slots:
  void testFindInsert();
  void testEvictsLeastRecentlyUsed();
  void testClear();
};

void TestLevelCache::testFindInsert() {
  LevelCache cache;
  QVERIFY(!cache.find("a"));
  const auto a = layoutOfNodes(3);
  cache.insert("a", a);
  QCOMPARE(cache.find("a"), a);
  // Re-inserting a key replaces its entry and its bytes.
  const std::size_t bytes = cache.bytes();
  cache.insert("a", layoutOfNodes(3));
  QCOMPARE(cache.size(), 1u);
  QCOMPARE(cache.bytes(), bytes);
}

void TestLevelCache::testEvictsLeastRecentlyUsed() {
  const std::size_t one = std::string("k0").size() + layoutOfNodes(100)->approximateBytes();
  LevelCache cache(3 * one);  // room for three entries
  for (int i = 0; i < 3; ++i) cache.insert("k" + std::to_string(i), layoutOfNodes(100));
  QVERIFY(cache.find("k0"));  // k0 is now the most recently used; k1 the least
  cache.insert("k3", layoutOfNodes(100));
  QCOMPARE(cache.size(), 3u);
  QVERIFY(!cache.find("k1"));
  QVERIFY(cache.find("k0") && cache.find("k2") && cache.find("k3"));
  QVERIFY(cache.bytes() <= 3 * one);
  // An entry bigger than the whole bound still stays (alone).
  cache.insert("huge", layoutOfNodes(1000));
  QCOMPARE(cache.size(), 1u);
  QVERIFY(cache.find("huge"));
}

void TestLevelCache::testClear() {
  LevelCache cache;
  cache.insert("a", layoutOfNodes(1));
  cache.clear();
  QCOMPARE(cache.size(), 0u);
  QCOMPARE(cache.bytes(), 0u);
  QVERIFY(!cache.find("a"));
}

TSCOPE_GUI_TEST_MAIN(TestLevelCache)
#include "tst_level_cache.moc"

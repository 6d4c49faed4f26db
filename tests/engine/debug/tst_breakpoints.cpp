// Breakpoint specs (engine/debug/breakpoints.h): parsing and printing every target, condition and
// hit count; malformed specs refused with a message naming what was expected and found;
// conditions on values; tensor statistics (engine/debug/value_stats.h); the cancellation seam of
// the CPU GEMM (engine/vm/cancel.h).
#include "engine/backends/cpu/gemm.h"
#include "engine/debug/breakpoints.h"
#include "engine/debug/value_stats.h"
#include "engine/vm/cancel.h"
#include "test_main.h"

#include <cmath>
#include <limits>

using namespace tscope::engine;
using namespace tscope::engine::debug;

namespace {
Tensor ft(Shape shape, std::initializer_list<double> v) {
  return Tensor::fromDoubles(DType::Float32, std::move(shape), v);
}
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
}  // namespace

class TestBreakpoints : public QObject {
  Q_OBJECT
 private slots:
  void testParse_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("target");
    QTest::addColumn<QString>("key");
    QTest::addColumn<int>("kind");
    QTest::addColumn<double>("k");
    QTest::addColumn<int>("hits");
    QTest::addColumn<QString>("printed");
    using K = BreakCondition::Kind;
    using T = BreakpointSpec::Target;
    QTest::newRow("node") << "node:12" << int(T::Node) << "12" << int(K::Always) << 0.0 << 1
                          << "node:12";
    QTest::newRow("var nan") << "var:loss@nan" << int(T::Variable) << "loss" << int(K::AnyNan)
                             << 0.0 << 1 << "var:loss@nan";
    QTest::newRow("op braces") << "op:Elemwise{log}@inf#3" << int(T::OpType) << "Elemwise{log}"
                               << int(K::AnyInf) << 0.0 << 3 << "op:Elemwise{log}@inf#3";
    QTest::newRow("scope max") << "scope:encoder/attn@max>1e4" << int(T::Scope) << "encoder/attn"
                               << int(K::MaxGt) << 1e4 << 1 << "scope:encoder/attn@max>10000";
    QTest::newRow("min") << "node:3@min<-2.5" << int(T::Node) << "3" << int(K::MinLt) << -2.5 << 1
                         << "node:3@min<-2.5";
    QTest::newRow("norm hit") << "var:h@norm>10#2" << int(T::Variable) << "h" << int(K::NormGt)
                              << 10.0 << 2 << "var:h@norm>10#2";
    QTest::newRow("changed") << "op:Dot@changed>0.5" << int(T::OpType) << "Dot" << int(K::ChangedBy)
                             << 0.5 << 1 << "op:Dot@changed>0.5";
    QTest::newRow("hit only") << "op:Dot#5" << int(T::OpType) << "Dot" << int(K::Always) << 0.0 << 5
                              << "op:Dot#5";
  }
  void testParse() {
    QFETCH(QString, text);
    const BreakpointSpec s = parseBreakSpec(text.toStdString());
    QFETCH(int, target);
    QFETCH(QString, key);
    QFETCH(int, kind);
    QFETCH(double, k);
    QFETCH(int, hits);
    QFETCH(QString, printed);
    QCOMPARE(int(s.target), target);
    QCOMPARE(QString::fromStdString(s.key), key);
    QCOMPARE(int(s.condition.kind), kind);
    QCOMPARE(s.condition.k, k);
    QCOMPARE(s.hitCount, hits);
    QCOMPARE(QString::fromStdString(toString(s)), printed);
    QVERIFY(parseBreakSpec(toString(s)) == s);  // the printed form reads back
  }

  void testMalformed_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");  // a part of the message
    QTest::newRow("no colon") << "loss"
                              << "found no ':'";
    QTest::newRow("bad target") << "nod:3"
                                << "found 'nod'";
    QTest::newRow("empty key") << "var:"
                               << "found nothing";
    QTest::newRow("node not a number") << "node:abc"
                                       << "expected a node id";
    QTest::newRow("negative node") << "node:-1"
                                   << "expected a node id";
    QTest::newRow("bad condition") << "var:h@big"
                                   << "found '@big'";
    QTest::newRow("condition without number") << "var:h@max>"
                                              << "expected a number";
    QTest::newRow("condition bad number") << "var:h@max>x1"
                                          << "found 'x1'";
    QTest::newRow("nan with tail") << "var:h@nanx"
                                   << "found '@nanx'";
    QTest::newRow("hit zero") << "var:h#0"
                              << "N >= 1";
    QTest::newRow("hit text") << "var:h#two"
                              << "found '#two'";
    QTest::newRow("hit then more") << "var:h#2@nan"
                                   << "found '#2@nan'";
  }
  void testMalformed() {
    QFETCH(QString, text);
    QFETCH(QString, message);
    try {
      parseBreakSpec(text.toStdString());
      QFAIL("expected std::invalid_argument");
    } catch (const std::invalid_argument& e) {
      const QString what = QString::fromUtf8(e.what());
      QVERIFY2(what.contains(message), qPrintable(what));
      QVERIFY2(what.contains(text), qPrintable(what));  // names the spec
      QVERIFY(!what.contains('\n'));
    }
  }

  void testConditions() {
    using K = BreakCondition::Kind;
    const Tensor fine = ft({3}, {1, -2, 3});
    const Tensor bad = ft({3}, {1, kNan, -kInf});
    QVERIFY(!conditionHolds({K::AnyNan}, fine));
    QVERIFY(conditionHolds({K::AnyNan}, bad));
    QVERIFY(conditionHolds({K::AnyInf}, bad));
    QVERIFY(conditionHolds({K::MaxGt, 2.5}, fine));
    QVERIFY(!conditionHolds({K::MaxGt, 3}, fine));
    QVERIFY(conditionHolds({K::MinLt, -1}, fine));
    QVERIFY(conditionHolds({K::MinLt, 0}, bad));  // -inf is below every bound
    QVERIFY(conditionHolds({K::NormGt, 3.7}, fine));
    QVERIFY(!conditionHolds({K::NormGt, 3.8}, fine));  // sqrt(14) = 3.74
    const Tensor moved = ft({3}, {1, -2, 3.6});
    QVERIFY(!conditionHolds({K::ChangedBy, 0.5}, moved, nullptr));  // no previous run
    QVERIFY(conditionHolds({K::ChangedBy, 0.5}, moved, &fine));
    QVERIFY(!conditionHolds({K::ChangedBy, 0.7}, moved, &fine));
    QVERIFY(conditionHolds({K::ChangedBy, 1e30}, bad, &fine));  // a NaN appearing is a change
    // Integer values: no NaN condition applies; comparisons do.
    const Tensor ints = Tensor::fromDoubles(DType::Int64, {2}, {5, 7});
    QVERIFY(!conditionApplies({K::AnyNan}, DType::Int64));
    QVERIFY(conditionApplies({K::MaxGt, 1}, DType::Int64));
    QVERIFY(!conditionApplies({K::MaxGt, 1}, DType::Bool));
    QVERIFY(conditionHolds({K::MaxGt, 6}, ints));
  }

  void testScopeMatches() {
    QVERIFY(scopeMatches("encoder/attn/mask", "encoder/attn"));
    QVERIFY(scopeMatches("encoder/attn", "encoder/attn/"));
    QVERIFY(!scopeMatches("encoder/attention", "encoder/attn"));
    QVERIFY(!scopeMatches("dec/encoder/attn", "encoder/attn"));
    QVERIFY(scopeMatches("anything", ""));
  }

  void testStats() {
    const TensorStats s = statsOf(ft({2, 3}, {1, 2, kNan, kInf, -kInf, -3}));
    QCOMPARE(s.size, std::int64_t(6));
    QCOMPARE(s.nan, std::int64_t(1));
    QCOMPARE(s.posInf, std::int64_t(1));
    QCOMPARE(s.negInf, std::int64_t(1));
    QCOMPARE(s.min, -3.0);
    QCOMPARE(s.max, 2.0);
    QCOMPARE(s.mean, 0.0);
    QCOMPARE(s.norm, std::sqrt(14.0));
    QVERIFY(QString::fromStdString(toString(s)).contains("nan 1"));
    // Strided views and integer dtypes.
    const Tensor m = ft({2, 2}, {1, 2, 3, 4}).transpose();
    QCOMPARE(statsOf(m.slice(0, 0, 1)).max, 3.0);
    const TensorStats i = statsOf(Tensor::fromDoubles(DType::Int32, {3}, {-1, 5, 2}));
    QCOMPARE(i.min, -1.0);
    QCOMPARE(i.max, 5.0);
    QCOMPARE(i.nan, std::int64_t(0));
    const TensorStats allBad = statsOf(ft({1}, {kNan}));
    QVERIFY(std::isnan(allBad.max));
    QCOMPARE(allBad.finite(), std::int64_t(0));
  }

  // Note [Cancellable products]: a product large enough to be split stops at a block boundary
  // when the thread's cancellation flag is set; a small one never looks at it; without a flag
  // the split product equals the plain one.
  void testGemmCancellation() {
    const std::int64_t m = 1024, n = 512, k = 1024;  // 537M multiply-adds: split
    std::vector<float> a(static_cast<std::size_t>(m * k), 1.0f),
        b(static_cast<std::size_t>(k * n), 0.5f), c(static_cast<std::size_t>(m * n), -1.0f);
    std::atomic<bool> flag{true};
    {
      CancellationScope scope(&flag);
      QVERIFY(cancellationRequested());
      bool cancelled = false;
      try {
        cpu::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      } catch (const ExecutionCancelled&) {
        cancelled = true;
      }
      QVERIFY(cancelled);
      QCOMPARE(c[0], -1.0f);  // the first block never ran
      float small = 0;
      cpu::gemm(false, false, 1, 1, 1, 1.0f, a.data(), 1, b.data(), 1, 0.0f, &small, 1);
      QCOMPARE(small, 0.5f);
    }
    QVERIFY(!cancellationRequested());
    cpu::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    QCOMPARE(c[0], 512.0f);
    QCOMPARE(c[static_cast<std::size_t>(m * n - 1)], 512.0f);
    // transA: op(A) rows are columns of the stored matrix.
    std::vector<float> at(static_cast<std::size_t>(k * m));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) at[static_cast<std::size_t>(p * m + i)] = float(i % 3);
    cpu::gemm(true, false, m, n, k, 1.0f, at.data(), m, b.data(), n, 0.0f, c.data(), n);
    QCOMPARE(c[static_cast<std::size_t>((m - 1) * n)], float((m - 1) % 3) * 0.5f * k);
  }
};

TSCOPE_TEST_MAIN(TestBreakpoints)
#include "tst_breakpoints.moc"

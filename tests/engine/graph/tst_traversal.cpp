// graphInputs: the free variables outputs depend on, each once, in depth-first order of first
// use; constants excluded, shared variables included; deep graphs walked without recursion.
#include "engine/graph/apply.h"
#include "engine/graph/traversal.h"
#include "engine/ops/elemwise/elemwise.h"
#include "graph_test_support.h"
#include "test_main.h"

#include <functional>
#include <memory>
#include <vector>

using namespace tscope::engine;
using namespace tscope::engine::testing;

namespace {
VarPtr constant(std::string name) {
  return Constant::create(Tensor::full(DType::Float32, {3}, 2), std::move(name));
}
VarPtr shared(std::string name) {
  return SharedVariable::create(Tensor(DType::Float32, {3}), std::move(name));
}

// The outputs to walk, and the names graphInputs must find, in order.
struct Case {
  std::vector<VarPtr> outputs;
  QStringList expected;
};
using Builder = std::function<Case()>;

QStringList names(const std::vector<VarPtr>& vars) {
  QStringList out;
  for (const auto& v : vars) out << qs(v->name());
  return out;
}
}  // namespace

Q_DECLARE_METATYPE(Builder)

class TestTraversal : public QObject {
  Q_OBJECT

 private slots:
  void testGraphInputs_data();
  void testGraphInputs();
  void testSharedVariablesAreInputs();
  void testReturnsTheVariablesThemselves();
  void testDeepChain();
};

void TestTraversal::testGraphInputs_data() {
  QTest::addColumn<Builder>("build");
  QTest::newRow("first use order") << Builder([] {
    const VarPtr a = fv("a"), b = fv("b"), c = fv("c");
    return Case{{add(mul(a, b), c)}, {"a", "b", "c"}};
  });
  QTest::newRow("operand order decides") << Builder([] {
    const VarPtr a = fv("a"), b = fv("b"), c = fv("c");
    return Case{{add(c, mul(b, a))}, {"c", "b", "a"}};
  });
  QTest::newRow("outputs in order") << Builder([] {
    const VarPtr a = fv("a"), b = fv("b"), c = fv("c");
    return Case{{neg(c), add(a, b), neg(a)}, {"c", "a", "b"}};
  });
  QTest::newRow("each once") << Builder([] {
    const VarPtr a = fv("a"), b = fv("b");
    const VarPtr s = add(a, a);
    return Case{{mul(s, add(b, s)), a}, {"a", "b"}};
  });
  QTest::newRow("depth first") << Builder([] {
    // The whole left operand is explored before the right one: d is found before b.
    const VarPtr a = fv("a"), b = fv("b"), c = fv("c"), d = fv("d");
    return Case{{add(mul(a, neg(add(c, d))), b)}, {"a", "c", "d", "b"}};
  });
  QTest::newRow("constants excluded") << Builder([] {
    const VarPtr a = fv("a"), k = constant("k"), k2 = constant("k2");
    return Case{{add(k, mul(a, k2)), k}, {"a"}};
  });
  QTest::newRow("only constants") << Builder([] {
    const VarPtr k = constant("k");
    return Case{{neg(k), k}, {}};
  });
  QTest::newRow("shared included") << Builder([] {
    const VarPtr x = fv("x"), w = shared("w"), b = shared("b");
    return Case{{add(mul(w, x), b)}, {"w", "x", "b"}};
  });
  QTest::newRow("output is an input") << Builder([] {
    const VarPtr a = fv("a"), b = fv("b");
    return Case{{b, neg(a), b}, {"b", "a"}};
  });
  QTest::newRow("no outputs") << Builder([] { return Case{{}, {}}; });
}

void TestTraversal::testGraphInputs() {
  QFETCH(Builder, build);
  const Case c = build();
  const std::vector<VarPtr> found = graphInputs(c.outputs);
  QCOMPARE(names(found), c.expected);
  for (const auto& v : found) {
    QVERIFY(v->owner() == nullptr);
    QVERIFY(v->kind() != Variable::Kind::Constant);
  }
}

void TestTraversal::testSharedVariablesAreInputs() {
  const VarPtr x = fv("x"), w = shared("w"), k = constant("k");
  const std::vector<VarPtr> outputs{add(mul(x, w), k)};
  const std::vector<VarPtr> found = graphInputs(outputs);
  QCOMPARE(found.size(), std::size_t{2});
  QCOMPARE(found[1]->kind(), Variable::Kind::Shared);
  QCOMPARE(found[1], w);
}

void TestTraversal::testReturnsTheVariablesThemselves() {
  const VarPtr a = fv("a"), b = fv("b");
  const std::vector<VarPtr> outputs{mul(a, b)};
  QCOMPARE(graphInputs(outputs), (std::vector<VarPtr>{a, b}));
  // The walk leaves the graph as it was.
  QCOMPARE(outputs[0]->owner()->inputs(), (std::vector<VarPtr>{a, b}));
}

void TestTraversal::testDeepChain() {
  const VarPtr root = fv("root"), side = fv("side");
  const auto negOp = std::make_shared<Elemwise>(ScalarOp::Neg);
  VarPtr v = root;
  for (int i = 0; i < 100'000; ++i) v = Apply::create(negOp, {v}, {kVec})->output(0);
  const std::vector<VarPtr> outputs{add(v, side)};
  QCOMPARE(names(graphInputs(outputs)), (QStringList{"root", "side"}));
}

TSCOPE_TEST_MAIN(TestTraversal)
#include "tst_traversal.moc"

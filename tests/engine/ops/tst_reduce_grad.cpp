// Gradients of the reductions: verifyGrad (finite differences) for sum, prod (with no zero, one
// zero and two zeros in a group), max, min, mean, var, stddev and logsumexp in float32 and float64
// on 2x3x4 inputs; checkRopLop for sum and max (their own pushforwards); the gradients' types;
// all/any/argmax disconnected; integer inputs.
#include "engine/graph/errors.h"
#include "engine/ops/reduce/reduce.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

using Unary = std::function<VarPtr(const VarPtr&)>;

struct Case {
  const char* name;
  Unary f;
  double lo = -2, hi = 2;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"sum (0,2)",
       [](const VarPtr& x) {
         return sum(x, {0, 2});
       }},
      {"sum all", [](const VarPtr& x) { return sum(x); }},
      {"sum -1 keepdims", [](const VarPtr& x) { return sum(x, {-1}, true); }},
      {"prod (1,)", [](const VarPtr& x) { return prod(x, {1}); }, 0.5, 1.5},
      {"prod (0,2)",
       [](const VarPtr& x) {
         return prod(x, {0, 2});
       },
       0.8, 1.2},
      {"prod all", [](const VarPtr& x) { return prod(x); }, 0.8, 1.2},
      {"max (1,)", [](const VarPtr& x) { return max(x, {1}); }},
      {"max all keepdims", [](const VarPtr& x) { return max(x, {}, true); }},
      {"min (0,2)",
       [](const VarPtr& x) {
         return min(x, {0, 2});
       }},
      {"mean (0,2)",
       [](const VarPtr& x) {
         return mean(x, {0, 2});
       }},
      {"mean all", [](const VarPtr& x) { return mean(x); }},
      {"var (1,)", [](const VarPtr& x) { return var(x, {1}); }},
      {"var all ddof 1", [](const VarPtr& x) { return var(x, {}, false, 1); }},
      {"stddev (2,) keepdims", [](const VarPtr& x) { return stddev(x, {2}, true); }},
      {"logsumexp (1,)", [](const VarPtr& x) { return logsumexp(x, {1}); }},
      {"logsumexp all", [](const VarPtr& x) { return logsumexp(x); }},
      {"logsumexp large", [](const VarPtr& x) { return logsumexp(x * 100.0, {-1}); }},
  };
  return kCases;
}

}  // namespace

class TestReduceGrad : public QObject {
  Q_OBJECT

 private slots:
  void testVerifyGrad_data();
  void testVerifyGrad();
  void testProdWithZeros_data();
  void testProdWithZeros();
  void testRopLop_data();
  void testRopLop();
  void testGradientTypes();
  void testDiscreteInputs();
};

void TestReduceGrad::testVerifyGrad_data() {
  QTest::addColumn<int>("index");
  QTest::addColumn<DType>("dtype");
  for (std::size_t i = 0; i < cases().size(); ++i)
    for (DType dtype : {DType::Float32, DType::Float64})
      QTest::addRow("%s %s", cases()[i].name, std::string(dtypeName(dtype)).c_str())
          << static_cast<int>(i) << dtype;
}

void TestReduceGrad::testVerifyGrad() {
  QFETCH(int, index);
  QFETCH(DType, dtype);
  const Case& c = cases()[static_cast<std::size_t>(index)];
  const Tensor x =
      randomTensor(dtype, {2, 3, 4}, 100 + static_cast<std::uint64_t>(index), c.lo, c.hi);
  TSCOPE_CHECK(
      verifyGrad([&](const std::vector<VarPtr>& in) { return std::vector{c.f(in[0])}; }, {x}));
}

void TestReduceGrad::testProdWithZeros_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<int>("zeros");
  for (DType dtype : {DType::Float32, DType::Float64})
    for (int zeros : {1, 2, 3})
      QTest::addRow("%s %d zeros", std::string(dtypeName(dtype)).c_str(), zeros) << dtype << zeros;
}

void TestReduceGrad::testProdWithZeros() {
  QFETCH(DType, dtype);
  QFETCH(int, zeros);
  // Theano's zero-safe product gradient: prod / x would divide by zero here.
  Tensor x = randomTensor(dtype, {2, 3, 4}, 7, 0.5, 1.5);
  x.set({0, 1, 2}, 0.0);                  // group (0, :, 2) of prod over axis 1 has one zero ...
  if (zeros >= 2) x.set({1, 0, 3}, 0.0);  // ... (1, :, 3) one, and with 3, two
  if (zeros >= 3) x.set({1, 2, 3}, 0.0);
  TSCOPE_CHECK(
      verifyGrad([](const std::vector<VarPtr>& in) { return std::vector{prod(in[0], {1})}; }, {x}));
  TSCOPE_CHECK(verifyGrad(
      [](const std::vector<VarPtr>& in) {
        return std::vector{prod(in[0], {0, 1})};
      },
      {x}));
  // The exact values: with one zero in a group, d/dx at the zero is the product of the others.
  const auto g = evaluate(
      [](const std::vector<VarPtr>& in) { return std::vector{grad(sum(prod(in[0], {1})), in[0])}; },
      {x});
  const double others = x.at({0, 0, 2}) * x.at({0, 2, 2});
  QVERIFY(std::abs(g[0].at({0, 1, 2}) - others) < 1e-5 * std::max(1.0, std::abs(others)));
  QCOMPARE(g[0].at({0, 0, 2}), 0.0);
  if (zeros >= 3) {
    QCOMPARE(g[0].at({1, 0, 3}), 0.0);  // two zeros: every derivative of the group is 0
    QCOMPARE(g[0].at({1, 1, 3}), 0.0);
  }
  for (double v : g[0].toDoubles()) QVERIFY(std::isfinite(v));
}

void TestReduceGrad::testRopLop_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<DType>("dtype");
  const char* names[] = {"sum (0,2)", "sum all", "max (1,)", "min all", "max (0,2) keepdims"};
  for (int i = 0; i < 5; ++i)
    for (DType dtype : {DType::Float32, DType::Float64})
      QTest::addRow("%s %s", names[i], std::string(dtypeName(dtype)).c_str()) << i << dtype;
}

void TestReduceGrad::testRopLop() {
  QFETCH(int, which);
  QFETCH(DType, dtype);
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 31, -2, 2);
  TSCOPE_CHECK(checkRopLop(
      [which](const std::vector<VarPtr>& in) {
        switch (which) {
          case 0:
            return std::vector{sum(in[0], {0, 2})};
          case 1:
            return std::vector{sum(in[0])};
          case 2:
            return std::vector{max(in[0], {1})};
          case 3:
            return std::vector{min(in[0])};
          default:
            return std::vector{max(in[0], {0, 2}, true)};
        }
      },
      {x}));
  // The R-op of sum and max is the op's own pushforward (no double-pullback fallback).
  const VarPtr v = Variable::create(TensorType(dtype, {2, 3, 4}));
  const VarPtr t = Variable::create(TensorType(dtype, {2, 3, 4}));
  for (const VarPtr& r : {sum(v, {1}), max(v, {0, 2})}) {
    const auto pf = r->owner()->op().pushforward(*r->owner(), std::vector<VarPtr>{t});
    QVERIFY(pf.has_value());
    QCOMPARE((*pf)[0]->type().dtype(), dtype);
    QCOMPARE((*pf)[0]->type().shape(), r->type().shape());
  }
}

void TestReduceGrad::testGradientTypes() {
  // Each gradient has its input's type, whatever the reduction's output dtype.
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3, 4}), "x");
  for (const VarPtr& cost : {sum(sum(x, {1}, false, DType::Float64)), sum(prod(x, {0, 2})), max(x),
                             mean(x), sum(var(x, {1})), logsumexp(x)}) {
    const VarPtr g = grad(cost, x);
    QCOMPARE(g->type().dtype(), DType::Float32);
    QCOMPARE(g->type().ndim(), 3);
  }
}

void TestReduceGrad::testDiscreteInputs() {
  const VarPtr x = Variable::create(TensorType(DType::Float32, {2, 3}), "x");
  // all/any and argmax depend on x but have no gradient: grad raises for a disconnected input.
  for (const VarPtr& cost : {sum(cast(all(gt(x, scalarLike(0.0, x)), {1}), DType::Float32)),
                             sum(cast(argmax(x, 1), DType::Float32))}) {
    bool raised = false;
    try {
      grad(cost, x);
    } catch (const GradientError&) {
      raised = true;
    }
    QVERIFY(raised);
    GradOptions ignore;
    ignore.disconnected = DisconnectedPolicy::Ignore;
    const auto g =
        evaluate({x}, {grad(cost, x, ignore)}, {randomTensor(DType::Float32, {2, 3}, 1)});
    QVERIFY(closeTo(g[0], Tensor::zeros(DType::Float32, {2, 3})));
  }
  // An integer input is disconnected, as in Elemwise: there is no gradient to follow.
  const VarPtr i = Variable::create(TensorType(DType::Int32, {2, 3}), "i");
  const VarPtr s = sum(i, {1});
  const auto grads = s->owner()->op().pullback(*s->owner(), std::vector<VarPtr>{onesLike(s)});
  QVERIFY(grads[0].kind == Grad::Kind::Disconnected);
}

TSCOPE_TEST_MAIN(TestReduceGrad)
#include "tst_reduce_grad.moc"

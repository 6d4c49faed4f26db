// CategoricalCrossEntropy, SoftmaxCrossEntropyWithLogits, SoftmaxCrossEntropyGrad and OneHot:
// values for class-index and distribution targets against direct loops, stability with large
// logits, inferShape, gradients (targets disconnected when integer), R-op, bad inputs, props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/nn/crossentropy.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

constexpr std::int64_t N = 3, K = 5;

// Rows of positive numbers summing to 1.
Tensor probabilities(DType dtype, std::uint64_t seed) {
  std::vector<double> v = randomTensor(DType::Float64, {N, K}, seed, 0.1, 1.0).toDoubles();
  for (std::int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < K; ++j) s += v[static_cast<std::size_t>(i * K + j)];
    for (std::int64_t j = 0; j < K; ++j) v[static_cast<std::size_t>(i * K + j)] /= s;
  }
  return Tensor::fromDoubles(dtype, {N, K}, v);
}

Tensor classes(DType dtype = DType::Int64) {
  return Tensor::fromDoubles(dtype, {N}, {4, 0, 2});
}

VarPtr symbolic(DType dtype, Shape shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}

double lse(const Tensor& z, std::int64_t i) {
  double m = -INFINITY, s = 0;
  for (std::int64_t j = 0; j < K; ++j) m = std::max(m, z.at({i, j}));
  for (std::int64_t j = 0; j < K; ++j) s += std::exp(z.at({i, j}) - m);
  return m + std::log(s);
}

double tol(DType d) {
  return d == DType::Float32 ? 1e-5 : 1e-12;
}

}  // namespace

class TestNnCrossEntropy : public QObject {
  Q_OBJECT

 private slots:
  void testOneHot();
  void testCategoricalValues_data();
  void testCategoricalValues();
  void testWithLogitsValues_data();
  void testWithLogitsValues();
  void testWithLogitsIsStable();
  void testGradOpValues();
  void testInferShape();
  void testGrad_data();
  void testGrad();
  void testGradThroughSoftmaxOutput();
  void testGradOfGradOp();
  void testIntegerTargetsAreDisconnected();
  void testRopLop();
  void testBadInputs();
  void testProps();
};

void TestNnCrossEntropy::testOneHot() {
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{oneHot(in[0], constantInt(K))};
      },
      {classes(DType::Int32)});
  QCOMPARE(out[0].dtype(), DType::Float32);
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(DType::Float32, {N, K},
                                              {0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0})));
  VarPtr t = symbolic(DType::Int64, {kUnknownDim});
  QCOMPARE(oneHot(t, constantInt(K), DType::Bool)->type(),
           TensorType(DType::Bool, {kUnknownDim, K}));
}

void TestNnCrossEntropy::testCategoricalValues_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<bool>("distribution");
  for (DType d : {DType::Float32, DType::Float64}) {
    QTest::newRow((std::string(dtypeName(d)) + " classes").c_str()) << d << false;
    QTest::newRow((std::string(dtypeName(d)) + " distribution").c_str()) << d << true;
  }
}

void TestNnCrossEntropy::testCategoricalValues() {
  QFETCH(DType, dtype);
  QFETCH(bool, distribution);
  const Tensor p = probabilities(dtype, 1);
  const Tensor t = distribution ? probabilities(dtype, 2) : classes(DType::Int32);
  std::vector<double> expected;
  for (std::int64_t i = 0; i < N; ++i) {
    if (!distribution) {
      expected.push_back(-std::log(p.at({i, static_cast<std::int64_t>(t.at({i}))})));
    } else {
      double s = 0;
      for (std::int64_t j = 0; j < K; ++j) s -= t.at({i, j}) * std::log(p.at({i, j}));
      expected.push_back(s);
    }
  }
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{categoricalCrossEntropy(in[0], in[1])};
      },
      {p, t});
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, {N}, expected), 1e-5, tol(dtype)));
}

void TestNnCrossEntropy::testWithLogitsValues_data() {
  testCategoricalValues_data();
}

void TestNnCrossEntropy::testWithLogitsValues() {
  QFETCH(DType, dtype);
  QFETCH(bool, distribution);
  const Tensor z = randomTensor(dtype, {N, K}, 3, -4.0, 4.0);
  const Tensor t = distribution ? probabilities(dtype, 4) : classes();
  std::vector<double> loss, sm;
  for (std::int64_t i = 0; i < N; ++i) {
    const double l = lse(z, i);
    for (std::int64_t j = 0; j < K; ++j) sm.push_back(std::exp(z.at({i, j}) - l));
    if (!distribution) {
      loss.push_back(l - z.at({i, static_cast<std::int64_t>(t.at({i}))}));
    } else {
      double s = 0;
      for (std::int64_t j = 0; j < K; ++j) s += t.at({i, j}) * (l - z.at({i, j}));
      loss.push_back(s);
    }
  }
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        return softmaxCrossEntropyWithLogitsAndSoftmax(in[0], in[1]);
      },
      {z, t});
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, {N}, loss), 1e-5, tol(dtype)));
  QVERIFY(closeTo(out[1], Tensor::fromDoubles(dtype, {N, K}, sm), 1e-5, tol(dtype)));
  // Equal to the unfused graph: categorical_crossentropy(softmax(z), t).
  const auto unfused = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{categoricalCrossEntropy(softmax(in[0]), in[1])};
      },
      {z, t});
  QVERIFY(closeTo(unfused[0], out[0], 1e-4, 1e-5));
}

// With logits 1000 apart, softmax underflows to 0 and log(softmax) is -inf: the fused op stays
// exact.
void TestNnCrossEntropy::testWithLogitsIsStable() {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor z = Tensor::fromDoubles(dtype, {2, 3}, {1000, 0, -1000, 3000, 3001, 2999});
    const Tensor t = Tensor::fromDoubles(DType::Int64, {2}, {2, 0});
    const auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{softmaxCrossEntropyWithLogits(in[0], in[1])};
        },
        {z, t});
    const double l1 =
        1.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));  // lse(3000,3001,2999) - 3000
    // float32 spacing at 3000 is 2.4e-4: lse - z keeps a few units of it.
    const double atol = dtype == DType::Float32 ? 1e-3 : 1e-9;
    QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, {2}, {2000.0, l1}), 1e-6, atol));
  }
}

void TestNnCrossEntropy::testGradOpValues() {
  const Tensor g = randomTensor(DType::Float64, {N}, 5);
  const Tensor sm = probabilities(DType::Float64, 6);
  const Tensor q =
      randomTensor(DType::Float64, {N, K}, 7, 0.0, 1.0);  // not normalised: sum(q) matters
  const Tensor t = classes();
  std::vector<double> e1, e2;
  for (std::int64_t i = 0; i < N; ++i) {
    double sq = 0;
    for (std::int64_t j = 0; j < K; ++j) sq += q.at({i, j});
    for (std::int64_t j = 0; j < K; ++j) {
      const double oh = j == static_cast<std::int64_t>(t.at({i})) ? 1.0 : 0.0;
      e1.push_back(g.at({i}) * (sm.at({i, j}) - oh));
      e2.push_back(g.at({i}) * (sm.at({i, j}) * sq - q.at({i, j})));
    }
  }
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmaxCrossEntropyGrad(in[0], in[1], in[2]),
                                   softmaxCrossEntropyGrad(in[0], in[1], in[3])};
      },
      {g, sm, t, q});
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(DType::Float64, {N, K}, e1), 1e-12, 1e-12));
  QVERIFY(closeTo(out[1], Tensor::fromDoubles(DType::Float64, {N, K}, e2), 1e-12, 1e-12));
}

void TestNnCrossEntropy::testInferShape() {
  const Tensor z = randomTensor(DType::Float64, {N, K}, 8), q = probabilities(DType::Float64, 9);
  const Tensor g = randomTensor(DType::Float64, {N}, 10);
  TSCOPE_CHECK(checkInferShape(
      [](const std::vector<VarPtr>& in) {
        std::vector<VarPtr> fused = softmaxCrossEntropyWithLogitsAndSoftmax(in[0], in[2]);
        std::vector<VarPtr> fusedQ = softmaxCrossEntropyWithLogitsAndSoftmax(in[0], in[1]);
        return std::vector<VarPtr>{categoricalCrossEntropy(in[1], in[2]),
                                   categoricalCrossEntropy(in[1], in[1]),
                                   fused[0],
                                   fused[1],
                                   fusedQ[0],
                                   softmaxCrossEntropyGrad(in[3], in[1], in[2]),
                                   softmaxCrossEntropyGrad(in[3], in[1], in[1]),
                                   oneHot(in[2], shapeI(in[0], 1))};
      },
      {z, q, classes(), g}));
}

void TestNnCrossEntropy::testGrad_data() {
  testCategoricalValues_data();
}

void TestNnCrossEntropy::testGrad() {
  QFETCH(DType, dtype);
  QFETCH(bool, distribution);
  const Tensor p = probabilities(dtype, 11);
  const Tensor z = randomTensor(dtype, {N, K}, 12, -2.0, 2.0);
  const Tensor t = distribution ? probabilities(dtype, 13) : classes();
  TSCOPE_CHECK(verifyGrad(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{categoricalCrossEntropy(in[0], in[1])};
      },
      {p, t}));
  TSCOPE_CHECK(verifyGrad(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmaxCrossEntropyWithLogits(in[0], in[1])};
      },
      {z, t}));
}

// A cost that uses both outputs of the fused op: the softmax's gradient joins the loss's.
void TestNnCrossEntropy::testGradThroughSoftmaxOutput() {
  const Tensor z = randomTensor(DType::Float64, {N, K}, 14, -2.0, 2.0);
  const Tensor w = randomTensor(DType::Float64, {N, K}, 15);
  for (const Tensor& t : {classes(), probabilities(DType::Float64, 16)}) {
    TSCOPE_CHECK(verifyGrad(
        [&](const std::vector<VarPtr>& in) {
          std::vector<VarPtr> out = softmaxCrossEntropyWithLogitsAndSoftmax(in[0], in[1]);
          return std::vector<VarPtr>{out[0], out[1] * in[2]};
        },
        {z, t, w}));
  }
}

void TestNnCrossEntropy::testGradOfGradOp() {
  const Tensor g = randomTensor(DType::Float64, {N}, 17);
  const Tensor sm = probabilities(DType::Float64, 18);
  const Tensor q = probabilities(DType::Float64, 19);
  TSCOPE_CHECK(verifyGrad(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmaxCrossEntropyGrad(in[0], in[1], in[2])};
      },
      {g, sm, classes()}));
  TSCOPE_CHECK(verifyGrad(
      [](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmaxCrossEntropyGrad(in[0], in[1], in[2])};
      },
      {g, sm, q}));
  // Second order through the fused loss: the gradient of the logits' gradient.
  const Tensor z = randomTensor(DType::Float64, {N, K}, 20);
  TSCOPE_CHECK(verifyGrad(
      [](const std::vector<VarPtr>& in) {
        VarPtr cost = sum(softmaxCrossEntropyWithLogits(in[0], in[1]));
        return std::vector<VarPtr>{grad(cost, in[0])};
      },
      {z, classes()}));
}

void TestNnCrossEntropy::testIntegerTargetsAreDisconnected() {
  VarPtr z = symbolic(DType::Float64, {kUnknownDim, K}, "z");
  VarPtr t = symbolic(DType::Int64, {kUnknownDim}, "t");
  VarPtr cost = sum(softmaxCrossEntropyWithLogits(z, t));
  QVERIFY_THROWS_EXCEPTION(GradientError, grad(cost, t));
  GradOptions ignore;
  ignore.disconnected = DisconnectedPolicy::Ignore;
  QVERIFY(grad(cost, std::vector<VarPtr>{z, t}, ignore)[0] != nullptr);
  VarPtr p = symbolic(DType::Float64, {kUnknownDim, K}, "p");
  QVERIFY_THROWS_EXCEPTION(GradientError, grad(sum(categoricalCrossEntropy(p, t)), t));
}

void TestNnCrossEntropy::testRopLop() {
  const Tensor z = randomTensor(DType::Float64, {N, K}, 21);
  const Tensor p = probabilities(DType::Float64, 22), q = probabilities(DType::Float64, 23);
  // Both outputs of the fused op: its R-op is derived from the pullback (the double-pullback
  // trick), which differentiates with respect to the zero output gradients (Note [Zero output
  // gradients]).
  TSCOPE_CHECK(checkRopLop(
      [](const std::vector<VarPtr>& in) {
        std::vector<VarPtr> fused = softmaxCrossEntropyWithLogitsAndSoftmax(in[0], in[2]);
        return std::vector<VarPtr>{categoricalCrossEntropy(in[1], in[2]), fused[0], fused[1]};
      },
      {z, p, q}));
}

void TestNnCrossEntropy::testBadInputs() {
  auto expectTypeError = [](auto&& build, std::initializer_list<const char*> parts) {
    try {
      build();
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      const QString msg = QString::fromStdString(e.what());
      for (const char* part : parts) QVERIFY2(msg.contains(QLatin1String(part)), qPrintable(msg));
    }
  };
  expectTypeError(
      [] {
        categoricalCrossEntropy(symbolic(DType::Float32, {K}, "p"), symbolic(DType::Int64, {N}));
      },
      {"CategoricalCrossEntropy", "input 0 ('p')", "2-d float32 or float64", "(5,)"});
  expectTypeError(
      [] {
        categoricalCrossEntropy(symbolic(DType::Float32, {N, K}),
                                symbolic(DType::Float32, {N}, "t"));
      },
      {"input 1 ('t')", "class indices (a 1-d integer tensor)", "2-d float32"});
  expectTypeError(
      [] {
        categoricalCrossEntropy(symbolic(DType::Float32, {N, K}),
                                symbolic(DType::Int64, {N, K}, "t"));
      },
      {"input 1 ('t')", "int64"});
  expectTypeError(
      [] {
        softmaxCrossEntropyWithLogits(symbolic(DType::Float64, {N, K}),
                                      symbolic(DType::Float64, {N, K + 1}, "q"));
      },
      {"SoftmaxCrossEntropyWithLogits", "input 1 ('q')", "(3, 6)", "(3, 5)"});
  expectTypeError(
      [] {
        softmaxCrossEntropyWithLogits(symbolic(DType::Float64, {N, K}),
                                      symbolic(DType::Int64, {N + 1}));
      },
      {"input 1", "(4,)"});
  // A class index outside [0, K) at run time.
  VarPtr z = symbolic(DType::Float64, {kUnknownDim, kUnknownDim}),
         t = symbolic(DType::Int64, {kUnknownDim});
  Function f = compile({z, t}, {softmaxCrossEntropyWithLogits(z, t)});
  try {
    f({randomTensor(DType::Float64, {N, K}, 1), Tensor::fromDoubles(DType::Int64, {N}, {0, 5, 1})});
    QFAIL("expected an error");
  } catch (const std::exception& e) {
    const QString msg = QString::fromStdString(e.what());
    QVERIFY2(msg.contains("class index 5 of row 1 is outside [0, 5)"), qPrintable(msg));
  }
}

void TestNnCrossEntropy::testProps() {
  const OpRegistry& reg = defaultOpRegistry();
  for (const char* name :
       {"CategoricalCrossEntropy", "SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyGrad"}) {
    QCOMPARE(QString::fromStdString(reg.make(name, nlohmann::json::object())->name()),
             QString::fromLatin1(name));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make(name, {{"axis", 1}}));
  }
  QVERIFY(reg.make("OneHot", {{"dtype", "int8"}})->equals(OneHot(DType::Int8)));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("OneHot", {{"dtype", "float128"}}));
}

TSCOPE_TEST_MAIN(TestNnCrossEntropy)
#include "tst_nn_crossentropy.moc"

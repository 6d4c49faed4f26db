// Softmax, LogSoftmax and their gradient ops: values against direct loops along every axis,
// stability with large logits, inferShape, gradients (first and second order), R-op, bad inputs,
// props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/nn/softmax.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

// Applies f to every 1-d slice of x along axis (x contiguous, values in double).
template <class F>
Tensor alongAxis(const Tensor& x, int axis, F&& f) {
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[static_cast<std::size_t>(i)];
  for (int i = axis + 1; i < x.ndim(); ++i) inner *= s[static_cast<std::size_t>(i)];
  const std::int64_t len = s[static_cast<std::size_t>(axis)];
  std::vector<double> v = x.toDoubles(), out(v.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<double> row(static_cast<std::size_t>(len));
      for (std::int64_t k = 0; k < len; ++k)
        row[static_cast<std::size_t>(k)] = v[static_cast<std::size_t>((o * len + k) * inner + i)];
      std::vector<double> r = f(row);
      for (std::int64_t k = 0; k < len; ++k)
        out[static_cast<std::size_t>((o * len + k) * inner + i)] = r[static_cast<std::size_t>(k)];
    }
  return Tensor::fromDoubles(DType::Float64, s, out);
}

std::vector<double> softmaxRow(const std::vector<double>& r) {
  double m = -INFINITY, s = 0;
  for (double v : r) m = std::max(m, v);
  std::vector<double> out;
  for (double v : r) s += std::exp(v - m);
  for (double v : r) out.push_back(std::exp(v - m) / s);
  return out;
}

std::vector<double> logSoftmaxRow(const std::vector<double>& r) {
  double m = -INFINITY, s = 0;
  for (double v : r) m = std::max(m, v);
  for (double v : r) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : r) out.push_back(v - m - std::log(s));
  return out;
}

VarPtr symbolic(DType dtype, Shape shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}

double tol(DType d) {
  return d == DType::Float32 ? 1e-5 : 1e-12;
}

}  // namespace

class TestNnSoftmax : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data();
  void testValues();
  void testLargeLogits();
  void testLongRows();
  void testGradOpValues_data();
  void testGradOpValues();
  void testInferShape_data();
  void testInferShape();
  void testGrad_data();
  void testGrad();
  void testGradOfGradOps();
  void testRopLop();
  void testBadInputs();
  void testProps();
};

void TestNnSoftmax::testValues_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<int>("axis");
  for (DType d : {DType::Float32, DType::Float64})
    for (int axis : {-1, 0, 1, 2}) {
      const std::string name = std::string(dtypeName(d)) + " axis " + std::to_string(axis);
      QTest::newRow(name.c_str()) << d << axis;
    }
}

void TestNnSoftmax::testValues() {
  QFETCH(DType, dtype);
  QFETCH(int, axis);
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 1, -3.0, 3.0);
  const int a = axis < 0 ? axis + 3 : axis;
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmax(in[0], axis), logSoftmax(in[0], axis)};
      },
      {x});
  QVERIFY(closeTo(out[0], alongAxis(x, a, softmaxRow).astype(dtype), tol(dtype), tol(dtype)));
  QVERIFY(closeTo(out[1], alongAxis(x, a, logSoftmaxRow).astype(dtype), tol(dtype), tol(dtype)));
  // Every slice along the axis sums to 1.
  const Tensor sums = alongAxis(out[0].astype(DType::Float64), a, [](const std::vector<double>& r) {
    double s = 0;
    for (double v : r) s += v;
    return std::vector<double>(r.size(), s);
  });
  QVERIFY(closeTo(sums, Tensor::full(DType::Float64, x.shape(), 1.0), 1e-5, 1e-5));
}

// exp(1000) overflows; subtracting the maximum keeps softmax exact and log_softmax finite.
void TestNnSoftmax::testLargeLogits() {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = Tensor::fromDoubles(dtype, {2, 3}, {1000, 1001, 1002, -1000, -1001, -1050});
    const Tensor shifted = Tensor::fromDoubles(dtype, {2, 3}, {0, 1, 2, 0, -1, -50});
    const auto out = evaluate(
        [&](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{softmax(in[0]), logSoftmax(in[0]), softmax(in[1]),
                                     logSoftmax(in[1])};
        },
        {x, shifted});
    QVERIFY(closeTo(out[0], out[2], 1e-6, 1e-7));
    // log_softmax is shift-invariant too; compare at the shifted values' precision.
    QVERIFY(closeTo(out[1], out[3], 1e-6, 1e-4));
    for (double v : out[1].toDoubles()) QVERIFY(std::isfinite(v));
    QCOMPARE(out[1].at({1, 2}) < -45.0, true);  // far from 0, not -inf
  }
}

// Rows longer than the lanes of the row max and sum (Note [Row reductions in lanes]), with a tail:
// values against the direct loop; a NaN reaches its whole row and only that row; -inf entries
// give exact zeros.
void TestNnSoftmax::testLongRows() {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (std::int64_t len : {16, 37, 128, 131}) {
      Tensor x = randomTensor(dtype, {3, len}, 7, -4.0, 4.0);
      x.set({1, len - 1}, 9.0);  // the max in the tail
      x.set({2, 0}, -INFINITY);
      Tensor withNan = x.clone();
      withNan.set({0, len / 2}, NAN);
      const auto out = evaluate(
          [&](const std::vector<VarPtr>& in) {
            return std::vector<VarPtr>{softmax(in[0]), logSoftmax(in[0]), softmax(in[1])};
          },
          {x, withNan});
      QVERIFY(closeTo(out[0], alongAxis(x, 1, softmaxRow).astype(dtype), tol(dtype), tol(dtype)));
      QVERIFY(
          closeTo(out[1], alongAxis(x, 1, logSoftmaxRow).astype(dtype), tol(dtype), tol(dtype)));
      QCOMPARE(out[0].at({2, 0}), 0.0);
      for (std::int64_t k = 0; k < len; ++k) {
        QVERIFY(std::isnan(out[2].at({0, k})));
        QCOMPARE(out[2].at({1, k}), out[0].at({1, k}));
      }
    }
}

void TestNnSoftmax::testGradOpValues_data() {
  testValues_data();
}

void TestNnSoftmax::testGradOpValues() {
  QFETCH(DType, dtype);
  QFETCH(int, axis);
  const int a = axis < 0 ? axis + 3 : axis;
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 2, -2.0, 2.0);
  const Tensor g = randomTensor(dtype, {2, 3, 4}, 3);
  const Tensor y = alongAxis(x, a, softmaxRow), ly = alongAxis(x, a, logSoftmaxRow);
  // Expected: y * (g - sum(g * y)) and g - exp(ly) * sum(g), slice by slice.
  const std::vector<double> gv = g.toDoubles(), yv = y.toDoubles(), lyv = ly.toDoubles();
  const Tensor gy = Tensor::fromDoubles(DType::Float64, x.shape(), [&] {
    std::vector<double> p(gv.size());
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = gv[i] * yv[i];
    return p;
  }());
  const Tensor sumGy = alongAxis(gy, a, [](const std::vector<double>& r) {
    double s = 0;
    for (double v : r) s += v;
    return std::vector<double>(r.size(), s);
  });
  const Tensor sumG = alongAxis(g, a, [](const std::vector<double>& r) {
    double s = 0;
    for (double v : r) s += v;
    return std::vector<double>(r.size(), s);
  });
  std::vector<double> e1(gv.size()), e2(gv.size());
  const std::vector<double> sgy = sumGy.toDoubles(), sg = sumG.toDoubles();
  for (std::size_t i = 0; i < gv.size(); ++i) {
    e1[i] = yv[i] * (gv[i] - sgy[i]);
    e2[i] = gv[i] - std::exp(lyv[i]) * sg[i];
  }
  const Tensor yIn = y.astype(dtype), lyIn = ly.astype(dtype);
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmaxGrad(in[0], in[1], axis),
                                   logSoftmaxGrad(in[0], in[2], axis)};
      },
      {g, yIn, lyIn});
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(dtype, x.shape(), e1), 1e-5, 1e-5));
  QVERIFY(closeTo(out[1], Tensor::fromDoubles(dtype, x.shape(), e2), 1e-5, 1e-5));
}

void TestNnSoftmax::testInferShape_data() {
  testValues_data();
}

void TestNnSoftmax::testInferShape() {
  QFETCH(DType, dtype);
  QFETCH(int, axis);
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 4), g = randomTensor(dtype, {2, 3, 4}, 5);
  TSCOPE_CHECK(checkInferShape(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmax(in[0], axis), logSoftmax(in[0], axis),
                                   softmaxGrad(in[1], in[0], axis),
                                   logSoftmaxGrad(in[1], in[0], axis)};
      },
      {x, g}));
}

void TestNnSoftmax::testGrad_data() {
  testValues_data();
}

void TestNnSoftmax::testGrad() {
  QFETCH(DType, dtype);
  QFETCH(int, axis);
  const Tensor x = randomTensor(dtype, {2, 3, 4}, 6, -2.0, 2.0);
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{softmax(in[0], axis)}; },
      {x}));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{logSoftmax(in[0], axis)}; },
      {x}));
}

void TestNnSoftmax::testGradOfGradOps() {
  const Tensor g = randomTensor(DType::Float64, {3, 4}, 7);
  const Tensor y = randomTensor(DType::Float64, {3, 4}, 8, 0.1, 0.9);
  const Tensor ly = randomTensor(DType::Float64, {3, 4}, 9, -3.0, -0.5);
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{softmaxGrad(in[0], in[1])}; },
      {g, y}));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{logSoftmaxGrad(in[0], in[1], 0)};
      },
      {g, ly}));
  // The Hessian-vector path: grad of (grad of sum(softmax(x) * w)) wrt x.
  const Tensor x = randomTensor(DType::Float64, {3, 4}, 10);
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        VarPtr s = softmax(in[0]);
        return std::vector<VarPtr>{softmaxGrad(s, s)};
      },
      {x}));
}

void TestNnSoftmax::testRopLop() {
  const Tensor x = randomTensor(DType::Float64, {3, 4}, 11);
  const Tensor g = randomTensor(DType::Float64, {3, 4}, 12);
  TSCOPE_CHECK(checkRopLop(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{softmax(in[0], 0), logSoftmax(in[0], 1)};
      },
      {x}));
  TSCOPE_CHECK(checkRopLop(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{logSoftmaxGrad(in[1], logSoftmax(in[0])),
                                   softmaxGrad(in[1], softmax(in[0]))};
      },
      {x, g}));
}

void TestNnSoftmax::testBadInputs() {
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
        softmax(symbolic(DType::Int32, {2, 3}, "x"));
      },
      {"Softmax{axis=-1}", "input 0 ('x')", "float32 or float64", "int32"});
  expectTypeError(
      [] {
        logSoftmax(symbolic(DType::Float32, {2, 3}), 2);
      },
      {"LogSoftmax{axis=2}", "with an axis 2", "(2, 3)"});
  expectTypeError([] { softmax(symbolic(DType::Float32, {}), -1); },
                  {"Softmax", "with an axis -1"});
  expectTypeError(
      [] {
        softmaxGrad(symbolic(DType::Float64, {2, 3}, "g"), symbolic(DType::Float32, {2, 3}));
      },
      {"SoftmaxGrad", "input 0 ('g')", "float32", "float64"});
}

void TestNnSoftmax::testProps() {
  const OpRegistry& reg = defaultOpRegistry();
  for (OpPtr op :
       {OpPtr(std::make_shared<Softmax>(1)), OpPtr(std::make_shared<LogSoftmax>(-2)),
        OpPtr(std::make_shared<SoftmaxGrad>(0)), OpPtr(std::make_shared<LogSoftmaxGrad>(-1))}) {
    QVERIFY(reg.make(op->name(), op->props())->equals(*op));
  }
  QCOMPARE(QString::fromStdString(Softmax().str()), QStringLiteral("Softmax{axis=-1}"));
  QVERIFY(!Softmax(0).equals(Softmax(1)));
  QVERIFY(reg.make("Softmax", nlohmann::json::object())->equals(Softmax(-1)));  // the default axis
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("Softmax", {{"axis", "1"}}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("Softmax", {{"axis", 1000}}));
}

TSCOPE_TEST_MAIN(TestNnSoftmax)
#include "tst_nn_softmax.moc"

// BatchNormTrain and BatchNormInference: values against hand computation (NCHW over [0, 2, 3] and
// (N, F) over [0]), running statistics, inferShape, gradients wrt x, scale, shift (and the
// statistics), R-op, bad inputs, props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/nn/batchnorm.h"
#include "engine/ops/reduce/reduce.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Shape)
Q_DECLARE_METATYPE(std::vector<int>)

namespace {

Shape statShape(Shape s, const std::vector<int>& axes) {
  for (int a : axes) s[static_cast<std::size_t>(a)] = 1;
  return s;
}

// Mean and biased variance per statistic by direct loops over every element.
struct Stats {
  Tensor mean, var;
};
Stats naiveStats(const Tensor& x, const std::vector<int>& axes) {
  const Shape ss = statShape(x.shape(), axes);
  Tensor sum(DType::Float64, ss), sq(DType::Float64, ss), count(DType::Float64, ss);
  const std::int64_t n = x.numel();
  auto statIndex = [&](std::int64_t flat) {
    std::vector<std::int64_t> idx(x.shape().size());
    for (int d = x.ndim() - 1; d >= 0; --d) {
      idx[static_cast<std::size_t>(d)] = flat % x.shape()[static_cast<std::size_t>(d)];
      flat /= x.shape()[static_cast<std::size_t>(d)];
    }
    std::vector<std::int64_t> full = idx;
    for (int a : axes) idx[static_cast<std::size_t>(a)] = 0;
    return std::pair{full, idx};
  };
  for (std::int64_t f = 0; f < n; ++f) {
    auto [full, s] = statIndex(f);
    sum.set(s, sum.at(s) + x.at(full));
    count.set(s, count.at(s) + 1);
  }
  std::vector<double> m = sum.toDoubles();
  const std::vector<double> c = count.toDoubles();
  for (std::size_t i = 0; i < m.size(); ++i) m[i] /= c[i];
  const Tensor mean = Tensor::fromDoubles(DType::Float64, ss, m);
  for (std::int64_t f = 0; f < n; ++f) {
    auto [full, s] = statIndex(f);
    const double d = x.at(full) - mean.at(s);
    sq.set(s, sq.at(s) + d * d);
  }
  std::vector<double> v = sq.toDoubles();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] /= c[i];
  return {mean, Tensor::fromDoubles(DType::Float64, ss, v)};
}

// y = (x - mean) / sqrt(var + eps) * scale + shift, element by element with broadcasting.
Tensor naiveNormalize(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& mean,
                      const Tensor& var, const std::vector<int>& axes, double eps) {
  Tensor y(DType::Float64, x.shape());
  const std::int64_t n = x.numel();
  for (std::int64_t f = 0; f < n; ++f) {
    std::vector<std::int64_t> idx(x.shape().size());
    std::int64_t r = f;
    for (int d = x.ndim() - 1; d >= 0; --d) {
      idx[static_cast<std::size_t>(d)] = r % x.shape()[static_cast<std::size_t>(d)];
      r /= x.shape()[static_cast<std::size_t>(d)];
    }
    std::vector<std::int64_t> s = idx;
    for (int a : axes) s[static_cast<std::size_t>(a)] = 0;
    y.set(idx, (x.at(idx) - mean.at(s)) / std::sqrt(var.at(s) + eps) * scale.at(s) + shift.at(s));
  }
  return y;
}

VarPtr symbolic(DType dtype, Shape shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}

double tol(DType d) {
  return d == DType::Float32 ? 1e-5 : 1e-10;
}

}  // namespace

class TestNnBatchNorm : public QObject {
  Q_OBJECT

 private slots:
  void testTrainValues_data();
  void testTrainValues();
  void testInferenceValues_data();
  void testInferenceValues();
  void testHandComputed();
  void testRunningStats();
  void testInferShape_data();
  void testInferShape();
  void testGrad_data();
  void testGrad();
  void testGradThroughStatistics();
  void testRopLop();
  void testBadInputs();
  void testProps();
};

void TestNnBatchNorm::testTrainValues_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Shape>("xShape");
  QTest::addColumn<std::vector<int>>("axes");
  for (DType d : {DType::Float32, DType::Float64}) {
    const std::string s(dtypeName(d));
    QTest::newRow((s + " NCHW").c_str()) << d << Shape{2, 3, 4, 5} << std::vector<int>{0, 2, 3};
    QTest::newRow((s + " NF").c_str()) << d << Shape{4, 3} << std::vector<int>{0};
    QTest::newRow((s + " middle axis").c_str()) << d << Shape{2, 4, 3} << std::vector<int>{1};
  }
}

void TestNnBatchNorm::testTrainValues() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(std::vector<int>, axes);
  const Shape ss = statShape(xShape, axes);
  const Tensor x = randomTensor(dtype, xShape, 1, -2.0, 5.0);
  const Tensor scale = randomTensor(dtype, ss, 2, 0.5, 1.5), shift = randomTensor(dtype, ss, 3);
  const double eps = 1e-3;
  const Stats st = naiveStats(x, axes);
  const Tensor y = naiveNormalize(x, scale, shift, st.mean, st.var, axes, eps);
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[2], axes, eps);
        return std::vector<VarPtr>{r.y, r.mean, r.var};
      },
      {x, scale, shift});
  QVERIFY(closeTo(out[0], y.astype(dtype), 1e-4, tol(dtype)));
  QVERIFY(closeTo(out[1], st.mean.astype(dtype), 1e-5, tol(dtype)));
  QVERIFY(closeTo(out[2], st.var.astype(dtype), 1e-5, tol(dtype)));
}

void TestNnBatchNorm::testInferenceValues_data() {
  testTrainValues_data();
}

void TestNnBatchNorm::testInferenceValues() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(std::vector<int>, axes);
  const Shape ss = statShape(xShape, axes);
  const Tensor x = randomTensor(dtype, xShape, 4, -2.0, 5.0);
  const Tensor scale = randomTensor(dtype, ss, 5), shift = randomTensor(dtype, ss, 6);
  const Tensor mean = randomTensor(dtype, ss, 7), var = randomTensor(dtype, ss, 8, 0.2, 2.0);
  const Tensor y = naiveNormalize(x, scale, shift, mean, var, axes, 1e-5);
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{batchNormInference(in[0], in[1], in[2], in[3], in[4], axes)};
      },
      {x, scale, shift, mean, var});
  QVERIFY(closeTo(out[0], y.astype(dtype), 1e-4, tol(dtype)));
}

// One feature, four samples 1, 2, 3, 6: mean 3, biased var (4 + 1 + 0 + 9) / 4 = 3.5.
void TestNnBatchNorm::testHandComputed() {
  const Tensor x = Tensor::fromDoubles(DType::Float64, {4, 1}, {1, 2, 3, 6});
  const Tensor scale = Tensor::fromDoubles(DType::Float64, {1, 1}, {2});
  const Tensor shift = Tensor::fromDoubles(DType::Float64, {1, 1}, {0.5});
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[2], {0}, 0.0);
        return std::vector<VarPtr>{r.y, r.mean, r.var};
      },
      {x, scale, shift});
  const double sd = std::sqrt(3.5);
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(DType::Float64, {4, 1},
                                              {2 * (1 - 3) / sd + 0.5, 2 * (2 - 3) / sd + 0.5, 0.5,
                                               2 * 3 / sd + 0.5})));
  QVERIFY(closeTo(out[1], Tensor::fromDoubles(DType::Float64, {1, 1}, {3})));
  QVERIFY(closeTo(out[2], Tensor::fromDoubles(DType::Float64, {1, 1}, {3.5})));
}

void TestNnBatchNorm::testRunningStats() {
  const Tensor x = Tensor::fromDoubles(DType::Float64, {4, 1}, {1, 2, 3, 6});
  const Tensor one = Tensor::fromDoubles(DType::Float64, {1, 1}, {1});
  const Tensor zero = Tensor::fromDoubles(DType::Float64, {1, 1}, {0});
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[2], {0});
        BatchNormRunningStats s = batchNormRunningStats(in[0], r, in[2], in[1], {0}, 0.25);
        return std::vector<VarPtr>{s.mean, s.var};
      },
      {x, one, zero});
  // mean' = 0.75 * 0 + 0.25 * 3; var' = 0.75 * 1 + 0.25 * (3.5 * 4 / 3)
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(DType::Float64, {1, 1}, {0.75})));
  QVERIFY(closeTo(out[1], Tensor::fromDoubles(DType::Float64, {1, 1}, {0.75 + 0.25 * 14.0 / 3.0})));
}

void TestNnBatchNorm::testInferShape_data() {
  testTrainValues_data();
}

void TestNnBatchNorm::testInferShape() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(std::vector<int>, axes);
  const Shape ss = statShape(xShape, axes);
  const Tensor x = randomTensor(dtype, xShape, 9), s = randomTensor(dtype, ss, 10, 0.5, 1.0);
  TSCOPE_CHECK(checkInferShape(
      [&](const std::vector<VarPtr>& in) {
        BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[1], axes);
        return std::vector<VarPtr>{r.y, r.mean, r.var,
                                   batchNormInference(in[0], in[1], in[1], in[1], in[1], axes)};
      },
      {x, s}));
}

void TestNnBatchNorm::testGrad_data() {
  testTrainValues_data();
}

void TestNnBatchNorm::testGrad() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(std::vector<int>, axes);
  const Shape ss = statShape(xShape, axes);
  const Tensor x = randomTensor(dtype, xShape, 11, -1.0, 2.0);
  const Tensor scale = randomTensor(dtype, ss, 12, 0.5, 1.5), shift = randomTensor(dtype, ss, 13);
  const Tensor mean = randomTensor(dtype, ss, 14), var = randomTensor(dtype, ss, 15, 0.5, 2.0);
  // Every output moves when one x moves (through the batch statistics), so float32 finite
  // differences carry the rounding of all 120 outputs: twice the default float32 tolerance.
  VerifyGradOptions options;
  if (dtype == DType::Float32) options.absTol = options.relTol = 2e-2;
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{batchNormTrain(in[0], in[1], in[2], axes).y};
      },
      {x, scale, shift}, options));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{batchNormInference(in[0], in[1], in[2], in[3], in[4], axes)};
      },
      {x, scale, shift, mean, var}));
}

// A cost that also reads the batch statistics (as a running-average update would).
void TestNnBatchNorm::testGradThroughStatistics() {
  const Tensor x = randomTensor(DType::Float64, {2, 3, 4, 5}, 16);
  const Tensor scale = randomTensor(DType::Float64, {1, 3, 1, 1}, 17, 0.5, 1.5);
  const Tensor shift = randomTensor(DType::Float64, {1, 3, 1, 1}, 18);
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[2], {0, 2, 3});
        return std::vector<VarPtr>{r.y, r.mean, r.var};
      },
      {x, scale, shift}));
  // Second order: the gradient of the x-gradient.
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        VarPtr cost = sum(sqr(batchNormTrain(in[0], in[1], in[2], {0, 2, 3}).y));
        return std::vector<VarPtr>{grad(cost, in[0])};
      },
      {x, scale, shift}));
}

void TestNnBatchNorm::testRopLop() {
  const Tensor x = randomTensor(DType::Float64, {4, 3}, 19);
  const Tensor scale = randomTensor(DType::Float64, {1, 3}, 20, 0.5, 1.5),
               shift = randomTensor(DType::Float64, {1, 3}, 21);
  const Tensor mean = randomTensor(DType::Float64, {1, 3}, 22),
               var = randomTensor(DType::Float64, {1, 3}, 23, 0.5, 2.0);
  TSCOPE_CHECK(checkRopLop(
      [&](const std::vector<VarPtr>& in) {
        BatchNormTrainResult r = batchNormTrain(in[0], in[1], in[2], {0});
        return std::vector<VarPtr>{r.y, r.mean, r.var,
                                   batchNormInference(in[0], in[1], in[2], in[3], in[4], {0})};
      },
      {x, scale, shift, mean, var}));
}

void TestNnBatchNorm::testBadInputs() {
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
        batchNormTrain(symbolic(DType::Float32, {4, 3}), symbolic(DType::Float32, {3}, "scale"),
                       symbolic(DType::Float32, {1, 3}), {0});
      },
      {"BatchNormTrain", "input 1 ('scale')", "(1, 3)", "(3,)"});
  expectTypeError(
      [] {
        batchNormTrain(symbolic(DType::Int32, {4, 3}, "x"), symbolic(DType::Int32, {1, 3}),
                       symbolic(DType::Int32, {1, 3}), {0});
      },
      {"input 0 ('x')", "float32 or float64", "int32"});
  expectTypeError(
      [] {
        batchNormTrain(symbolic(DType::Float32, {4, 3}), symbolic(DType::Float32, {1, 3}),
                       symbolic(DType::Float32, {1, 3}), {2});
      },
      {"at least 3 axes"});
  expectTypeError(
      [] {
        batchNormInference(symbolic(DType::Float64, {4, 3}), symbolic(DType::Float64, {1, 3}),
                           symbolic(DType::Float64, {1, 3}),
                           symbolic(DType::Float64, {1, 4}, "mean"),
                           symbolic(DType::Float64, {1, 3}), {0});
      },
      {"BatchNormInference", "input 3 ('mean')", "(1, 4)"});
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchNormTrain({}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchNormTrain({0, 0}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, BatchNormTrain({0}, -1.0));
}

void TestNnBatchNorm::testProps() {
  const OpRegistry& reg = defaultOpRegistry();
  for (OpPtr op : {OpPtr(std::make_shared<BatchNormTrain>(std::vector<int>{2, 0, 3}, 1e-3)),
                   OpPtr(std::make_shared<BatchNormInference>(std::vector<int>{0}))}) {
    QVERIFY(reg.make(op->name(), op->props())->equals(*op));
  }
  QCOMPARE(BatchNormTrain({2, 0, 3}).props()["axes"], nlohmann::json({0, 2, 3}));  // kept sorted
  for (const nlohmann::json& bad : {nlohmann::json::object(), nlohmann::json{{"axes", {-1}}},
                                    nlohmann::json{{"axes", {0}}, {"epsilon", "small"}},
                                    nlohmann::json{{"axes", {0}}, {"momentum", 0.1}}}) {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("BatchNormTrain", bad));
  }
}

TSCOPE_TEST_MAIN(TestNnBatchNorm)
#include "tst_nn_batchnorm.moc"

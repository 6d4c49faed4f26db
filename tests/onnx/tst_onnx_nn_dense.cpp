// The converters of MatMul, Gemm, Softmax, LogSoftmax, BatchNormalization, LayerNormalization and
// InstanceNormalization: tiny models built with onnx_builder.h, imported, run in modes none and
// fast_run and compared with naive references written below (numpy's matmul with 1-d operands and
// broadcast batch dims, row-wise softmax and normalization), one row per variant: transposes,
// alpha / beta and each shape of Gemm's C, the opset < 13 softmax that flattens at its axis,
// BatchNormalization's spatial and training attributes of each opset. Rows that name an engine op
// check that the ONNX node became exactly one such node. The windowed ops: tst_onnx_nn.cpp.
#include "onnx_builder.h"
#include "test_main.h"

#include <cmath>
#include <functional>
#include <numeric>

using namespace tscope::engine;
using namespace tscope::test::onnx;

Q_DECLARE_METATYPE(tscope::engine::Shape)

namespace {

// Integers in [-5, 5] (int dtypes) or uniform [-1, 1) values.
Tensor values(const Shape& shape, std::uint64_t seed, DType dtype) {
  if (isFloat(dtype)) return randomTensor(shape, seed, dtype);
  std::vector<double> v = randomTensor(shape, seed, DType::Float64).toDoubles();
  for (double& x : v) x = std::round(x * 5);
  return Tensor::fromDoubles(dtype, shape, v);
}

// Positive values (variances).
Tensor positive(const Shape& shape, std::uint64_t seed) {
  std::vector<double> v = randomTensor(shape, seed).toDoubles();
  for (double& x : v) x = std::abs(x) + 0.5;
  return Tensor::fromDoubles(DType::Float32, shape, v);
}

// numpy's matmul.
Tensor refMatMul(const Tensor& a, const Tensor& b) {
  const Tensor a2 = a.ndim() == 1 ? a.reshape({1, a.shape()[0]}) : a;
  const Tensor b2 = b.ndim() == 1 ? b.reshape({b.shape()[0], 1}) : b;
  const std::int64_t m = a2.shape()[a2.ndim() - 2], k = a2.shape()[a2.ndim() - 1],
                     n = b2.shape()[b2.ndim() - 1];
  Shape ab(a2.shape().begin(), a2.shape().end() - 2), bb(b2.shape().begin(), b2.shape().end() - 2);
  Shape batch(std::max(ab.size(), bb.size()), 1);
  for (std::size_t i = 0; i < ab.size(); ++i) batch[batch.size() - ab.size() + i] = ab[i];
  for (std::size_t i = 0; i < bb.size(); ++i)
    batch[batch.size() - bb.size() + i] = std::max(batch[batch.size() - bb.size() + i], bb[i]);
  const Tensor a3 = a2.broadcastTo(cat(batch, {m, k})), b3 = b2.broadcastTo(cat(batch, {k, n}));
  Tensor y(a.dtype(), cat(batch, {m, n}));
  forEachIndex(y.shape(), [&](const Shape& i) {
    double acc = 0;
    Shape ai = i, bi = i;
    for (std::int64_t j = 0; j < k; ++j) {
      ai[ai.size() - 1] = j;
      bi[bi.size() - 2] = j;
      acc += a3.at(ai) * b3.at(bi);
    }
    y.set(i, acc);
  });
  Shape final = batch;
  if (a.ndim() > 1) final.push_back(m);
  if (b.ndim() > 1) final.push_back(n);
  return y.reshape(final);
}

// Softmax (or log-softmax) of each row of x viewed as (rows, cols).
Tensor refSoftmaxRows(const Tensor& x, std::int64_t cols, bool logarithm) {
  Tensor y = x.contiguous().reshape({-1, cols}).astype(DType::Float64).clone();
  for (std::int64_t r = 0; r < y.shape()[0]; ++r) {
    double m = -INFINITY, s = 0;
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, y.at({r, c}));
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(y.at({r, c}) - m);
    for (std::int64_t c = 0; c < cols; ++c)
      y.set({r, c}, logarithm ? y.at({r, c}) - m - std::log(s) : std::exp(y.at({r, c}) - m) / s);
  }
  return y.reshape(x.shape()).astype(x.dtype());
}

// (x - mean) / sqrt(var + eps) of each row of x viewed as (rows, cols), then row element j
// scaled by scale(j) and shifted by shift(j) (channel-wise callers map j themselves).
Tensor refNormalizeRows(const Tensor& x, std::int64_t cols, double eps,
                        const std::function<double(std::int64_t, std::int64_t)>& scale,
                        const std::function<double(std::int64_t, std::int64_t)>& shift) {
  Tensor y = x.contiguous().reshape({-1, cols}).astype(DType::Float64).clone();
  for (std::int64_t r = 0; r < y.shape()[0]; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t c = 0; c < cols; ++c) mean += y.at({r, c}) / double(cols);
    for (std::int64_t c = 0; c < cols; ++c) var += std::pow(y.at({r, c}) - mean, 2) / double(cols);
    for (std::int64_t c = 0; c < cols; ++c)
      y.set({r, c}, (y.at({r, c}) - mean) / std::sqrt(var + eps) * scale(r, c) + shift(r, c));
  }
  return y.reshape(x.shape()).astype(x.dtype());
}

}  // namespace

class TestOnnxNnDense : public QObject {
  Q_OBJECT

 private slots:
  void testMatMul_data();
  void testMatMul();
  void testGemm_data();
  void testGemm();
  void testSoftmax_data();
  void testSoftmax();
  void testBatchNormalization_data();
  void testBatchNormalization();
  void testLayerNormalization();
  void testInstanceNormalization();
  void testRefused();
};

void TestOnnxNnDense::testMatMul_data() {
  QTest::addColumn<Shape>("a");
  QTest::addColumn<Shape>("b");
  QTest::addColumn<int>("dtype");
  const auto f32 = static_cast<int>(DType::Float32);
  QTest::newRow("1d x 1d") << Shape{4} << Shape{4} << f32;
  QTest::newRow("1d x 2d") << Shape{4} << Shape{4, 3} << f32;
  QTest::newRow("2d x 1d") << Shape{3, 4} << Shape{4} << f32;
  QTest::newRow("2d x 2d") << Shape{3, 4} << Shape{4, 5} << f32;
  QTest::newRow("3d x 2d") << Shape{2, 3, 4} << Shape{4, 5} << f32;
  QTest::newRow("1d x 3d") << Shape{4} << Shape{2, 4, 3} << f32;
  QTest::newRow("batch broadcast") << Shape{2, 1, 3, 4} << Shape{5, 4, 2} << f32;
  QTest::newRow("float64") << Shape{2, 3, 4} << Shape{2, 4, 2} << static_cast<int>(DType::Float64);
  QTest::newRow("int64") << Shape{3, 4} << Shape{4, 2} << static_cast<int>(DType::Int64);
  QTest::newRow("int32") << Shape{2, 3} << Shape{3} << static_cast<int>(DType::Int32);
}

void TestOnnxNnDense::testMatMul() {
  QFETCH(Shape, a);
  QFETCH(Shape, b);
  QFETCH(int, dtype);
  const auto dt = static_cast<DType>(dtype);
  ModelBuilder m(13);
  const Tensor av = values(a, 1, dt), bv = values(b, 2, dt);
  m.input("a", av);
  m.initializer("b", bv);
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y", dt);
  checkModel(m, {refMatMul(av, bv)}, "Dot", dt == DType::Float64 ? 1e-9 : 1e-4);
}

void TestOnnxNnDense::testGemm_data() {
  QTest::addColumn<Shape>("a");
  QTest::addColumn<Shape>("b");
  QTest::addColumn<bool>("hasC");
  QTest::addColumn<Shape>("c");
  QTest::addColumn<bool>("transA");
  QTest::addColumn<bool>("transB");
  QTest::addColumn<double>("alpha");
  QTest::addColumn<double>("beta");
  QTest::addColumn<int>("opset");
  QTest::addColumn<QString>("directOp");
  QTest::newRow("linear (bias row)") << Shape{3, 4} << Shape{5, 4} << true << Shape{5} << false
                                     << true << 1.0 << 1.0 << 13 << "Dot";
  QTest::newRow("full C one Gemm") << Shape{4, 3} << Shape{4, 5} << true << Shape{3, 5} << true
                                   << false << 0.5 << 2.0 << 13 << "Gemm";
  QTest::newRow("C column") << Shape{3, 4} << Shape{4, 5} << true << Shape{3, 1} << false << false
                            << 2.0 << 0.5 << 13 << "Dot";
  QTest::newRow("C scalar both transposed") << Shape{4, 3} << Shape{5, 4} << true << Shape{} << true
                                            << true << 1.0 << -1.0 << 13 << "Dot";
  QTest::newRow("no C opset 11") << Shape{3, 4} << Shape{4, 5} << false << Shape{} << false << false
                                 << 1.5 << 1.0 << 11 << "Dot";
  QTest::newRow("beta 0") << Shape{3, 4} << Shape{4, 5} << true << Shape{3, 5} << false << false
                          << 1.0 << 0.0 << 13 << "Dot";
  QTest::newRow("opset 6") << Shape{3, 4} << Shape{4, 5} << true << Shape{3, 5} << false << false
                           << 1.0 << 1.0 << 6 << "Gemm";
}

void TestOnnxNnDense::testGemm() {
  QFETCH(Shape, a);
  QFETCH(Shape, b);
  QFETCH(bool, hasC);
  QFETCH(Shape, c);
  QFETCH(bool, transA);
  QFETCH(bool, transB);
  QFETCH(double, alpha);
  QFETCH(double, beta);
  QFETCH(int, opset);
  QFETCH(QString, directOp);
  ModelBuilder m(opset);
  const Tensor av = randomTensor(a, 1), bv = randomTensor(b, 2), cv = randomTensor(c, 3);
  m.input("a", av);
  m.initializer("b", bv);
  std::vector<std::string> ins{"a", "b"};
  if (hasC) m.initializer("c", cv), ins.push_back("c");
  auto& n = m.node("Gemm", ins, {"y"});
  if (transA) attrInt(n, "transA", 1);
  if (transB) attrInt(n, "transB", 1);
  attrFloat(n, "alpha", alpha);
  attrFloat(n, "beta", beta);
  m.output("y", DType::Float32);
  const Tensor ta = transA ? av.transpose().contiguous() : av,
               tb = transB ? bv.transpose().contiguous() : bv;
  Tensor y = refMatMul(ta.astype(DType::Float64), tb.astype(DType::Float64));
  forEachIndex(y.shape(), [&](const Shape& i) {
    double v = alpha * y.at(i);
    if (hasC) v += beta * cv.broadcastTo(y.shape()).at(i);
    y.set(i, v);
  });
  checkModel(m, {y.astype(DType::Float32)}, directOp.toStdString());
}

void TestOnnxNnDense::testSoftmax_data() {
  QTest::addColumn<QString>("op");
  QTest::addColumn<int>("opset");
  QTest::addColumn<bool>("hasAxis");
  QTest::addColumn<int>("axis");
  QTest::addColumn<QString>("directOp");
  QTest::newRow("opset 11 axis 1 flattens") << "Softmax" << 11 << true << 1 << "Softmax";
  QTest::newRow("opset 11 default axis") << "Softmax" << 11 << false << 0 << "Softmax";
  QTest::newRow("opset 11 axis -1") << "Softmax" << 11 << true << -1 << "Softmax";
  QTest::newRow("opset 13 default axis") << "Softmax" << 13 << false << 0 << "Softmax";
  QTest::newRow("opset 13 axis 1") << "Softmax" << 13 << true << 1 << "Softmax";
  QTest::newRow("log opset 11 axis 0") << "LogSoftmax" << 11 << true << 0 << "LogSoftmax";
  QTest::newRow("log opset 13 axis 0") << "LogSoftmax" << 13 << true << 0 << "LogSoftmax";
  QTest::newRow("log opset 6 default axis") << "LogSoftmax" << 6 << false << 0 << "LogSoftmax";
}

void TestOnnxNnDense::testSoftmax() {
  QFETCH(QString, op);
  QFETCH(int, opset);
  QFETCH(bool, hasAxis);
  QFETCH(int, axis);
  QFETCH(QString, directOp);
  const Shape shape{2, 3, 4};
  const Tensor x = randomTensor(shape, 4);
  ModelBuilder m(opset);
  m.input("x", x);
  auto& n = m.node(op.toStdString(), {"x"}, {"y"});
  if (hasAxis) attrInt(n, "axis", axis);
  m.output("y", DType::Float32);
  const bool logarithm = op == "LogSoftmax";
  int a = hasAxis ? axis : (opset >= 13 ? -1 : 1);
  if (a < 0) a += 3;
  Tensor expected;
  if (opset < 13) {  // rows: the axes before `axis`; columns: the rest
    expected = refSoftmaxRows(
        x, std::accumulate(shape.begin() + a, shape.end(), std::int64_t{1}, std::multiplies<>()),
        logarithm);
  } else {  // `axis` moved last and back
    std::vector<int> perm{0, 1, 2};
    perm.erase(perm.begin() + a);
    perm.push_back(a);
    std::vector<int> inverse(3);
    for (int i = 0; i < 3; ++i)
      inverse[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
    expected = refSoftmaxRows(x.transpose(perm).contiguous(), shape[static_cast<std::size_t>(a)],
                              logarithm)
                   .transpose(inverse)
                   .contiguous();
  }
  checkModel(m, {expected}, directOp.toStdString());
}

void TestOnnxNnDense::testBatchNormalization_data() {
  QTest::addColumn<int>("opset");
  QTest::addColumn<Shape>("x");
  QTest::addColumn<bool>("perActivation");  // spatial=0 (opsets < 9)
  QTest::addColumn<bool>("training");       // is_test=0 (opset 6) or training_mode=1 (>= 14)
  QTest::newRow("opset 15 NCHW") << 15 << Shape{2, 3, 4, 5} << false << false;
  QTest::newRow("opset 9 NC") << 9 << Shape{4, 3} << false << false;
  QTest::newRow("opset 7 spatial 0") << 7 << Shape{2, 3, 2, 2} << true << false;
  QTest::newRow("opset 6 is_test 1") << 6 << Shape{2, 3, 3} << false << false;
  QTest::newRow("opset 6 is_test 0") << 6 << Shape{3, 2, 3} << false << true;
  QTest::newRow("opset 15 training_mode") << 15 << Shape{2, 3, 4, 5} << false << true;
}

void TestOnnxNnDense::testBatchNormalization() {
  QFETCH(int, opset);
  QFETCH(Shape, x);
  QFETCH(bool, perActivation);
  QFETCH(bool, training);
  const Shape stat = perActivation ? Shape(x.begin() + 1, x.end()) : Shape{x[1]};
  const Tensor xv = randomTensor(x, 1), scale = randomTensor(stat, 2),
               shift = randomTensor(stat, 3), mean = randomTensor(stat, 4), var = positive(stat, 5);
  ModelBuilder m(opset);
  m.input("x", xv);
  m.initializer("scale", scale);
  m.initializer("b", shift);
  m.initializer("mean", mean);
  m.initializer("var", var);
  auto& n = m.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y"});
  attrFloat(n, "epsilon", 1e-3);
  if (opset < 9 && perActivation) attrInt(n, "spatial", 0);
  if (opset < 7) attrInt(n, "is_test", training ? 0 : 1);
  if (opset >= 14 && training) attrInt(n, "training_mode", 1);
  m.output("y", DType::Float32);
  // The statistic's index of an element: its channel, or (channel, spatial...) per activation.
  const auto statIndex = [&](const Shape& i) {
    return perActivation ? Shape(i.begin() + 1, i.end()) : Shape{i[1]};
  };
  Tensor mu(DType::Float64, stat), sigma2(DType::Float64, stat);
  if (training) {  // the batch's statistics, biased variance
    const double count = double(shapeNumel(x)) / double(shapeNumel(stat));
    forEachIndex(
        x, [&](const Shape& i) { mu.set(statIndex(i), mu.at(statIndex(i)) + xv.at(i) / count); });
    forEachIndex(x, [&](const Shape& i) {
      sigma2.set(statIndex(i),
                 sigma2.at(statIndex(i)) + std::pow(xv.at(i) - mu.at(statIndex(i)), 2) / count);
    });
  } else {
    mu = mean.astype(DType::Float64);
    sigma2 = var.astype(DType::Float64);
  }
  Tensor y(DType::Float64, x);
  forEachIndex(x, [&](const Shape& i) {
    const Shape s = statIndex(i);
    y.set(i, (xv.at(i) - mu.at(s)) / std::sqrt(sigma2.at(s) + 1e-3) * scale.at(s) + shift.at(s));
  });
  checkModel(m, {y.astype(DType::Float32)}, training ? "BatchNormTrain" : "BatchNormInference");
}

void TestOnnxNnDense::testLayerNormalization() {
  const Shape shape{2, 3, 4};
  const Tensor x = randomTensor(shape, 1);
  for (int axis : {-1, 1}) {
    const bool withBias = axis == -1;
    const Shape normalized(shape.begin() + (axis < 0 ? axis + 3 : axis), shape.end());
    const std::int64_t cols = shapeNumel(normalized);
    const Tensor scale = randomTensor(normalized, 2), bias = randomTensor(normalized, 3);
    ModelBuilder m(17);
    m.input("x", x);
    m.initializer("scale", scale);
    std::vector<std::string> ins{"x", "scale"};
    if (withBias) m.initializer("b", bias), ins.push_back("b");
    const std::vector<std::string> outs =
        withBias ? std::vector<std::string>{"y"} : std::vector<std::string>{"y", "mean", "inv"};
    auto& n = m.node("LayerNormalization", ins, outs);
    attrInt(n, "axis", axis);
    attrFloat(n, "epsilon", 1e-3);
    for (const auto& o : outs) m.output(o, DType::Float32);
    const std::vector<double> s = scale.toDoubles(), b = bias.toDoubles();
    std::vector<Tensor> expected{refNormalizeRows(
        x, cols, 1e-3, [&](std::int64_t, std::int64_t c) { return s[static_cast<std::size_t>(c)]; },
        [&](std::int64_t, std::int64_t c) {
          return withBias ? b[static_cast<std::size_t>(c)] : 0.0;
        })};
    if (!withBias) {  // Mean and InvStdDev, shaped (2, 1, 1)
      const Tensor rows = x.reshape({-1, cols});
      Tensor mu(DType::Float32, {2, 1, 1}), inv(DType::Float32, {2, 1, 1});
      for (std::int64_t r = 0; r < 2; ++r) {
        double sum = 0, sq = 0;
        for (std::int64_t c = 0; c < cols; ++c) sum += rows.at({r, c});
        for (std::int64_t c = 0; c < cols; ++c)
          sq += std::pow(rows.at({r, c}) - sum / double(cols), 2);
        mu.set({r, 0, 0}, sum / double(cols));
        inv.set({r, 0, 0}, 1.0 / std::sqrt(sq / double(cols) + 1e-3));
      }
      expected.push_back(mu);
      expected.push_back(inv);
    }
    checkModel(m, expected);
  }
}

void TestOnnxNnDense::testInstanceNormalization() {
  const Shape shape{2, 3, 4, 5};
  const Tensor x = randomTensor(shape, 1), scale = randomTensor({3}, 2),
               bias = randomTensor({3}, 3);
  ModelBuilder m(13);
  m.input("x", x);
  m.initializer("scale", scale);
  m.initializer("b", bias);
  attrFloat(m.node("InstanceNormalization", {"x", "scale", "b"}, {"y"}), "epsilon", 1e-3);
  m.output("y", DType::Float32);
  checkModel(m, {refNormalizeRows(
                    x, 20, 1e-3, [&](std::int64_t r, std::int64_t) { return scale.at({r % 3}); },
                    [&](std::int64_t r, std::int64_t) { return bias.at({r % 3}); })});
}

void TestOnnxNnDense::testRefused() {
  {
    // Opset 14's training mode with running statistics is converted (tst_onnx_node runs ONNX's
    // cases); the older form with its five outputs is not.
    ModelBuilder m(13);
    m.input("x", randomTensor({2, 3, 4}, 1));
    for (const char* name : {"scale", "b", "mean"}) m.initializer(name, randomTensor({3}, 2));
    m.initializer("var", positive({3}, 3));
    m.node("BatchNormalization", {"x", "scale", "b", "mean", "var"}, {"y", "rm", "rv"});
    for (const char* name : {"y", "rm", "rv"}) m.output(name, DType::Float32);
    checkRefused(m,
                 "BatchNormalization in training mode with its statistics outputs before opset 14 "
                 "is not supported");
  }
  {
    ModelBuilder m(13);
    m.input("a", randomTensor({4}, 1));
    m.initializer("b", randomTensor({4, 2}, 2));
    m.node("Gemm", {"a", "b"}, {"y"});
    m.output("y", DType::Float32);
    checkRefused(m,
                 "(Gemm): expected matrices A and B, found TensorType(float32, (4,)) and "
                 "TensorType(float32, (4, 2))");
  }
  {
    ModelBuilder m(13);
    m.input("x", values({2, 3}, 1, DType::Int64));
    m.node("Softmax", {"x"}, {"y"});
    m.output("y", DType::Int64);
    checkRefused(m, "Softmax on int64 tensors is not supported");
  }
}

TSCOPE_TEST_MAIN(TestOnnxNnDense)
#include "tst_onnx_nn_dense.moc"

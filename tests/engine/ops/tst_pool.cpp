// MaxPool2d, AvgPool2d and their gradient ops: values against direct loops (padding, strides,
// non-square windows), tie-breaking, inferShape, gradients, R-op, bad inputs and props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/nn/pool2d.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

#include <cmath>
#include <limits>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Pool2dParams)
Q_DECLARE_METATYPE(tscope::engine::Shape)

namespace {

Pool2dParams params(std::array<std::int64_t, 2> kernel, std::array<std::int64_t, 2> stride,
                    std::array<std::int64_t, 2> padding, bool includePad = true) {
  Pool2dParams p;
  p.kernel = kernel;
  p.stride = stride;
  p.padding = padding;
  p.includePad = includePad;
  return p;
}

// The direct definition: for every window, its max (first of ties) or mean, and the routes of a
// given gy back to x.
struct Naive {
  Tensor maxY, avgY, maxGx, avgGx, maxGgy;  // maxGgy: gx-like input gathered at the argmax
};
Naive naivePool(const Tensor& x, const Pool2dParams& p, const Tensor* gy = nullptr,
                const Tensor* ggx = nullptr) {
  const auto& s = x.shape();
  const std::int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const std::int64_t OH = (H + 2 * p.padding[0] - p.kernel[0]) / p.stride[0] + 1;
  const std::int64_t OW = (W + 2 * p.padding[1] - p.kernel[1]) / p.stride[1] + 1;
  const Shape ys{N, C, OH, OW};
  Naive r{Tensor(DType::Float64, ys), Tensor(DType::Float64, ys), Tensor(DType::Float64, s),
          Tensor(DType::Float64, s), Tensor(DType::Float64, ys)};
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t oy = 0; oy < OH; ++oy)
        for (std::int64_t ox = 0; ox < OW; ++ox) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          std::int64_t by = -1, bx = -1, count = 0;
          for (std::int64_t i = 0; i < p.kernel[0]; ++i)
            for (std::int64_t j = 0; j < p.kernel[1]; ++j) {
              const std::int64_t iy = oy * p.stride[0] - p.padding[0] + i,
                                 ix = ox * p.stride[1] - p.padding[1] + j;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              const double v = x.at({n, c, iy, ix});
              sum += v;
              ++count;
              if (v > best) best = v, by = iy, bx = ix;
            }
          const double div = p.includePad ? static_cast<double>(p.kernel[0] * p.kernel[1])
                                          : static_cast<double>(count);
          r.maxY.set({n, c, oy, ox}, best);
          r.avgY.set({n, c, oy, ox}, sum / div);
          if (gy) {
            const double g = gy->at({n, c, oy, ox});
            r.maxGx.set({n, c, by, bx}, r.maxGx.at({n, c, by, bx}) + g);
            for (std::int64_t i = 0; i < p.kernel[0]; ++i)
              for (std::int64_t j = 0; j < p.kernel[1]; ++j) {
                const std::int64_t iy = oy * p.stride[0] - p.padding[0] + i,
                                   ix = ox * p.stride[1] - p.padding[1] + j;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                r.avgGx.set({n, c, iy, ix}, r.avgGx.at({n, c, iy, ix}) + g / div);
              }
          }
          if (ggx) r.maxGgy.set({n, c, oy, ox}, ggx->at({n, c, by, bx}));
        }
  return r;
}

VarPtr symbolic(DType dtype, Shape shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}

double tol(DType d) {
  return d == DType::Float32 ? 1e-5 : 1e-12;
}

}  // namespace

class TestPool : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data();
  void testValues();
  void testTiesGoToTheFirst();
  void testNaNPropagates();
  void testChannelLastInput_data();
  void testChannelLastInput();
  void testInferShape_data();
  void testInferShape();
  void testGrad_data();
  void testGrad();
  void testGradOfGradOps();
  void testRopLop();
  void testStaticOutputType();
  void testBadInputs();
  void testProps();
};

void TestPool::testValues_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Shape>("xShape");
  QTest::addColumn<Pool2dParams>("p");
  for (DType d : {DType::Float32, DType::Float64}) {
    const std::string s(dtypeName(d));
    QTest::newRow((s + " 2x2").c_str()) << d << Shape{2, 3, 4, 6} << Pool2dParams::window(2, 2);
    QTest::newRow((s + " 3x2 pad, incl").c_str())
        << d << Shape{2, 3, 5, 7} << params({3, 2}, {2, 1}, {1, 1}, true);
    QTest::newRow((s + " 3x2 pad, excl").c_str())
        << d << Shape{2, 3, 5, 7} << params({3, 2}, {2, 1}, {1, 1}, false);
    QTest::newRow((s + " 3x3 s2 p2 excl").c_str())
        << d << Shape{1, 2, 6, 5} << params({3, 3}, {2, 2}, {2, 2}, false);
    QTest::newRow((s + " overlapping").c_str())
        << d << Shape{1, 2, 5, 4} << params({2, 3}, {1, 1}, {0, 1}, true);
  }
}

void TestPool::testValues() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Pool2dParams, p);
  const Tensor x = randomTensor(dtype, xShape, 1);
  const Tensor gy = randomTensor(dtype, naivePool(x, p).maxY.shape(), 2);
  const Tensor ggx = randomTensor(dtype, xShape, 3);
  const Naive e = naivePool(x, p, &gy, &ggx);
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2d(in[0], p), avgPool2d(in[0], p),
                                   maxPool2dGrad(in[0], in[1], p),
                                   avgPool2dGrad(in[1], shapeI(in[0], 2), shapeI(in[0], 3), p),
                                   maxPool2dGradGrad(in[0], in[2], p)};
      },
      {x, gy, ggx});
  QVERIFY(closeTo(out[0], e.maxY.astype(dtype), tol(dtype), tol(dtype)));
  QVERIFY(closeTo(out[1], e.avgY.astype(dtype), tol(dtype), tol(dtype)));
  QVERIFY(closeTo(out[2], e.maxGx.astype(dtype), tol(dtype), tol(dtype)));
  QVERIFY(closeTo(out[3], e.avgGx.astype(dtype), tol(dtype), tol(dtype)));
  QVERIFY(closeTo(out[4], e.maxGgy.astype(dtype), tol(dtype), tol(dtype)));
}

void TestPool::testTiesGoToTheFirst() {
  // One 2x3 plane, all equal except a later duplicate maximum: windows of 2x2, stride 1.
  const Tensor x = Tensor::fromDoubles(DType::Float64, {1, 1, 2, 3}, {5, 7, 7, 1, 7, 2});
  const Tensor gy = Tensor::fromDoubles(DType::Float64, {1, 1, 1, 2}, {10, 100});
  const Pool2dParams p = params({2, 2}, {1, 1}, {0, 0});
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2d(in[0], p), maxPool2dGrad(in[0], in[1], p)};
      },
      {x, gy});
  QVERIFY(closeTo(out[0], Tensor::fromDoubles(DType::Float64, {1, 1, 1, 2}, {7, 7})));
  // Window 0 covers (0,0),(0,1),(1,0),(1,1): the first 7 is (0,1). Window 1:
  // (0,1),(0,2),(1,1),(1,2): again (0,1), so both gradients land there.
  QVERIFY(closeTo(out[1], Tensor::fromDoubles(DType::Float64, {1, 1, 2, 3}, {0, 110, 0, 0, 0, 0})));
}

// As numpy's max: a NaN in a window makes its max NaN, and the gradient goes to the NaN.
void TestPool::testNaNPropagates() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = Tensor::fromDoubles(DType::Float64, {1, 1, 2, 4}, {1, 9, 2, 3, nan, 4, 5, 6});
  const Tensor gy = Tensor::fromDoubles(DType::Float64, {1, 1, 1, 2}, {10, 100});
  const auto out = evaluate(
      [](const std::vector<VarPtr>& in) {
        const Pool2dParams p = Pool2dParams::window(2, 2);
        return std::vector<VarPtr>{maxPool2d(in[0], p), maxPool2dGrad(in[0], in[1], p)};
      },
      {x, gy});
  QVERIFY(std::isnan(out[0].at({0, 0, 0, 0})));
  QCOMPARE(out[0].at({0, 0, 0, 1}), 6.0);
  QVERIFY(closeTo(out[1],
                  Tensor::fromDoubles(DType::Float64, {1, 1, 2, 4}, {0, 0, 0, 0, 10, 0, 0, 100})));
}

void TestPool::testChannelLastInput_data() {
  testValues_data();
  QTest::newRow("float32 resnet stem 3x3 s2 p1, 20 channels")
      << DType::Float32 << Shape{2, 20, 9, 11} << params({3, 3}, {2, 2}, {1, 1});
  QTest::newRow("float32 3x3 s2 p1, 64 channels")
      << DType::Float32 << Shape{1, 64, 14, 14} << params({3, 3}, {2, 2}, {1, 1});
  QTest::newRow("float64 1x1") << DType::Float64 << Shape{1, 17, 3, 4}
                               << params({1, 1}, {1, 1}, {0, 0});
}

// Note [Separable channel-last max pooling]: a channel-last input (a convolution's output, Note
// [Channel-last activations]) is pooled by its own kernel into a channel-last output, with the
// values of the plane kernel on the same input made contiguous: every max exact, NaN where a
// window holds one.
void TestPool::testChannelLastInput() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Pool2dParams, p);
  const Shape nhwc{xShape[0], xShape[2], xShape[3], xShape[1]};
  std::vector<double> values = randomTensor(DType::Float64, nhwc, 7).toDoubles();
  for (std::size_t k = 3; k < values.size(); k += 37) values[k] = std::nan("");
  const Tensor stored = Tensor::fromDoubles(dtype, nhwc, values);
  const std::vector<int> toNchw{0, 3, 1, 2};
  const Tensor x = stored.transpose(toNchw);  // logical NCHW, channel-last in memory
  QVERIFY(!x.isContiguous());
  const VarPtr in = symbolic(dtype, xShape);
  const VarPtr y = maxPool2d(in, p);
  Tensor got;
  const Tensor* inputs[1] = {&x};
  Tensor* outputs[1] = {&got};
  y->owner()->op().perform(*y->owner(), inputs, outputs);
  const Tensor want = evaluate(
      [&](const std::vector<VarPtr>& v) { return std::vector<VarPtr>{maxPool2d(v[0], p)}; },
      {x.contiguous()})[0];
  QCOMPARE(got.shape(), want.shape());
  QCOMPARE(got.strides()[1], std::int64_t{1});  // the output stays channel-last
  const std::vector<double> g = got.toDoubles(), e = want.toDoubles();
  std::size_t nans = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    QCOMPARE(std::isnan(g[k]), std::isnan(e[k]));
    nans += std::isnan(e[k]);
    if (!std::isnan(e[k])) QCOMPARE(g[k], e[k]);
  }
  QVERIFY(nans > 0);
}

void TestPool::testInferShape_data() {
  testValues_data();
}

void TestPool::testInferShape() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Pool2dParams, p);
  const Tensor x = randomTensor(dtype, xShape, 1);
  const Tensor gy = randomTensor(dtype, naivePool(x, p).maxY.shape(), 2);
  InferShapeOptions quiet;
  quiet.warnOnSquareInputs = false;
  TSCOPE_CHECK(checkInferShape(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2d(in[0], p), avgPool2d(in[0], p),
                                   maxPool2dGrad(in[0], in[1], p),
                                   avgPool2dGrad(in[1], shapeI(in[0], 2), shapeI(in[0], 3), p),
                                   maxPool2dGradGrad(in[0], in[0], p)};
      },
      {x, gy}, quiet));
}

void TestPool::testGrad_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Pool2dParams>("p");
  for (DType d : {DType::Float64, DType::Float32}) {
    const std::string s(dtypeName(d));
    QTest::newRow((s + " pad incl").c_str()) << d << params({3, 2}, {2, 1}, {1, 1}, true);
    QTest::newRow((s + " pad excl").c_str()) << d << params({3, 2}, {2, 1}, {1, 1}, false);
    QTest::newRow((s + " 2x2").c_str()) << d << Pool2dParams::window(2, 2);
  }
}

void TestPool::testGrad() {
  QFETCH(DType, dtype);
  QFETCH(Pool2dParams, p);
  // Distinct values spaced well beyond the finite-difference step, so no window's argmax moves.
  std::vector<double> values(2 * 3 * 5 * 6);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((i * 37) % values.size()) * 0.05;
  const Tensor x = Tensor::fromDoubles(dtype, {2, 3, 5, 6}, values);
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{maxPool2d(in[0], p)}; },
      {x}));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{avgPool2d(in[0], p)}; },
      {x}));
}

void TestPool::testGradOfGradOps() {
  const Pool2dParams p = params({3, 2}, {2, 1}, {1, 1}, false);
  std::vector<double> values(2 * 3 * 5 * 6);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((i * 37) % values.size()) * 0.05;
  const Tensor x = Tensor::fromDoubles(DType::Float64, {2, 3, 5, 6}, values);
  const Tensor gy = randomTensor(DType::Float64, naivePool(x, p).maxY.shape(), 4);
  const Tensor ggx = randomTensor(DType::Float64, x.shape(), 5);
  VerifyGradOptions xFixed;
  xFixed.constantInputs = {0};
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2dGrad(in[0], in[1], p)};
      },
      {x, gy}, xFixed));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2dGradGrad(in[0], in[1], p)};
      },
      {x, ggx}, xFixed));
  // The x-gradient of the max gradient ops is zero: verifyGrad agrees with finite differences too.
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2dGrad(in[0], in[1], p)};
      },
      {x, gy}));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{avgPool2dGrad(in[0], constantInt(5), constantInt(6), p)};
      },
      {gy}));
}

void TestPool::testRopLop() {
  const Pool2dParams p = params({3, 2}, {2, 1}, {1, 1}, false);
  std::vector<double> values(2 * 3 * 5 * 6);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<double>((i * 37) % values.size()) * 0.05;
  const Tensor x = Tensor::fromDoubles(DType::Float64, {2, 3, 5, 6}, values);
  TSCOPE_CHECK(checkRopLop(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{maxPool2d(in[0], p), avgPool2d(in[0], p)};
      },
      {x}));
}

void TestPool::testStaticOutputType() {
  VarPtr y = maxPool2d(symbolic(DType::Float32, {2, 3, 5, 7}), params({3, 2}, {2, 1}, {1, 1}));
  QCOMPARE(y->type(), TensorType(DType::Float32, {2, 3, 3, 8}));
  VarPtr g = avgPool2dGrad(symbolic(DType::Float64, {2, 3, 3, 8}), constantInt(5), constantInt(7),
                           params({3, 2}, {2, 1}, {1, 1}));
  QCOMPARE(g->type(), TensorType(DType::Float64, {2, 3, 5, 7}));
}

void TestPool::testBadInputs() {
  auto expectTypeError = [](auto&& build, std::initializer_list<const char*> parts) {
    try {
      build();
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      const QString msg = QString::fromStdString(e.what());
      for (const char* part : parts) QVERIFY2(msg.contains(QLatin1String(part)), qPrintable(msg));
    }
  };
  const Pool2dParams p = Pool2dParams::window(2, 2);
  expectTypeError(
      [&] {
        maxPool2d(symbolic(DType::Float32, {3, 4, 6}, "x"), p);
      },
      {"MaxPool2d", "input 0 ('x')", "4-d float32 or float64", "(3, 4, 6)"});
  expectTypeError(
      [&] {
        avgPool2d(symbolic(DType::Int64, {1, 3, 4, 6}), p);
      },
      {"AvgPool2d", "int64"});
  expectTypeError(
      [&] {
        maxPool2d(symbolic(DType::Float32, {1, 3, 1, 6}), p);
      },
      {"holds the kernel (2, 2)", "(1, 3, 1, 6)"});
  expectTypeError(
      [&] {
        maxPool2dGrad(symbolic(DType::Float32, {1, 3, 4, 6}),
                      symbolic(DType::Float32, {1, 3, 3, 3}, "gy"), p);
      },
      {"input 1 ('gy')", "(1, 3, 2, 3)", "(1, 3, 3, 3)"});
  expectTypeError(
      [&] {
        avgPool2dGrad(symbolic(DType::Float32, {1, 3, 2, 3}), constantInt(4),
                      constant(6.0, DType::Float64), p);
      },
      {"input 2", "width (a 0-d int64 tensor)"});
  // Padding must stay below the kernel.
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, MaxPool2d(params({2, 2}, {1, 1}, {2, 0})));
  // At run time: a gradient whose shape does not fit.
  VarPtr x = Variable::create(TensorType::ofRank(DType::Float64, 4), "x");
  VarPtr gy = Variable::create(TensorType::ofRank(DType::Float64, 4), "gy");
  Function f = compile({x, gy}, {maxPool2dGrad(x, gy, p)});
  try {
    f({randomTensor(DType::Float64, {1, 2, 4, 6}, 1),
       randomTensor(DType::Float64, {1, 2, 3, 3}, 2)});
    QFAIL("expected an error");
  } catch (const std::exception& e) {
    const QString msg = QString::fromStdString(e.what());
    QVERIFY2(msg.contains("(1, 2, 3, 3)") && msg.contains("(1, 2, 2, 3)"), qPrintable(msg));
  }
}

void TestPool::testProps() {
  const OpRegistry& reg = defaultOpRegistry();
  const Pool2dParams p = params({3, 2}, {2, 1}, {1, 1}, false);
  for (OpPtr op :
       {OpPtr(std::make_shared<MaxPool2d>(p)), OpPtr(std::make_shared<MaxPool2dGrad>(p)),
        OpPtr(std::make_shared<MaxPool2dGradGrad>(p)), OpPtr(std::make_shared<AvgPool2d>(p)),
        OpPtr(std::make_shared<AvgPool2dGrad>(p))}) {
    OpPtr back = reg.make(op->name(), op->props());
    QVERIFY2(back->equals(*op), qPrintable(QString::fromStdString(op->str())));
  }
  QVERIFY(!MaxPool2d(p).props().contains("include_pad"));
  QCOMPARE(AvgPool2d(p).props()["include_pad"], nlohmann::json(false));
  // The stride defaults to the kernel.
  OpPtr d = reg.make("MaxPool2d", {{"kernel", {3, 2}}});
  QCOMPARE(static_cast<const MaxPool2d&>(*d).params().stride, (std::array<std::int64_t, 2>{3, 2}));
  for (const nlohmann::json& bad : {nlohmann::json::object(), nlohmann::json{{"kernel", 0}},
                                    nlohmann::json{{"kernel", 2}, {"padding", 2}},
                                    nlohmann::json{{"kernel", 2}, {"include_pad", true}}}) {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("MaxPool2d", bad));
  }
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           reg.make("AvgPool2d", {{"kernel", 2}, {"include_pad", 1}}));
}

TSCOPE_TEST_MAIN(TestPool)
#include "tst_pool.moc"

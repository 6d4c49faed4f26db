// Conv2d, Conv2dGradInputs and Conv2dGradWeights: values against a direct 7-loop convolution
// (stride, padding, dilation and groups on non-square shapes), inferShape, gradients (including the
// gradients of the gradient ops), R-op, bad inputs and props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/nn/conv2d.h"
#include "engine/ops/register_ops.h"
#include "op_test_support.h"
#include "test_main.h"

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)
Q_DECLARE_METATYPE(tscope::engine::Conv2dParams)
Q_DECLARE_METATYPE(tscope::engine::Shape)

namespace {

Conv2dParams params(std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
                    std::array<std::int64_t, 2> dilation, std::int64_t groups) {
  Conv2dParams p;
  p.stride = stride;
  p.padding = padding;
  p.dilation = dilation;
  p.groups = groups;
  return p;
}

std::int64_t outSize(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                     std::int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// The direct definition, in double: y[n][o][oy][ox] = sum over the group's channels and the filter
// taps of x at (oy*s - p + i*d, ox*s - p + j*d) times w[o][c][i][j]. Also the two adjoints for a
// given gy, accumulated in the same loop.
struct Naive {
  Tensor y, gx, gw;
};
Naive naiveConv(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                const Tensor* gy = nullptr) {
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2],
                     KW = ws[3];
  const std::int64_t OG = O / p.groups;
  const std::int64_t OH = outSize(H, KH, p.stride[0], p.padding[0], p.dilation[0]);
  const std::int64_t OW = outSize(W, KW, p.stride[1], p.padding[1], p.dilation[1]);
  Naive r{Tensor(DType::Float64, {N, O, OH, OW}), Tensor(DType::Float64, xs),
          Tensor(DType::Float64, ws)};
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t oy = 0; oy < OH; ++oy)
        for (std::int64_t ox = 0; ox < OW; ++ox) {
          double acc = 0;
          const double g = gy ? gy->at({n, o, oy, ox}) : 0.0;
          for (std::int64_t c = 0; c < CG; ++c)
            for (std::int64_t i = 0; i < KH; ++i)
              for (std::int64_t j = 0; j < KW; ++j) {
                const std::int64_t iy = oy * p.stride[0] - p.padding[0] + i * p.dilation[0];
                const std::int64_t ix = ox * p.stride[1] - p.padding[1] + j * p.dilation[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const std::int64_t ci = (o / OG) * CG + c;
                acc += x.at({n, ci, iy, ix}) * w.at({o, c, i, j});
                if (gy) {
                  r.gx.set({n, ci, iy, ix}, r.gx.at({n, ci, iy, ix}) + g * w.at({o, c, i, j}));
                  r.gw.set({o, c, i, j}, r.gw.at({o, c, i, j}) + g * x.at({n, ci, iy, ix}));
                }
              }
          r.y.set({n, o, oy, ox}, acc);
        }
  (void)C;
  return r;
}

double tolerance(DType dtype) {
  return dtype == DType::Float32 ? 1e-4 : 1e-10;
}

VarPtr symbolic(DType dtype, Shape shape, std::string name = {}) {
  return Variable::create(TensorType(dtype, std::move(shape)), std::move(name));
}

}  // namespace

class TestConv : public QObject {
  Q_OBJECT

 private slots:
  void testForward_data();
  void testForward();
  void testGradOpValues_data();
  void testGradOpValues();
  void testGradInputsStrideAmbiguity();
  void testInferShape_data();
  void testInferShape();
  void testGrad_data();
  void testGrad();
  void testGradOfGradOps();
  void testRopLop();
  void testStaticOutputType();
  void testBadInputs();
  void testBadRuntimeShapes();
  void testProps();
};

void TestConv::testForward_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Shape>("xShape");
  QTest::addColumn<Shape>("wShape");
  QTest::addColumn<Conv2dParams>("p");
  for (DType d : {DType::Float32, DType::Float64}) {
    const std::string s(dtypeName(d));
    QTest::newRow((s + " stride2 pad1 dil2 groups2").c_str())
        << d << Shape{2, 4, 5, 7} << Shape{6, 2, 3, 2} << params({2, 2}, {1, 1}, {2, 2}, 2);
    QTest::newRow((s + " plain").c_str())
        << d << Shape{2, 3, 5, 4} << Shape{4, 3, 2, 3} << params({1, 1}, {0, 0}, {1, 1}, 1);
    QTest::newRow((s + " 1x1").c_str())
        << d << Shape{2, 3, 4, 5} << Shape{5, 3, 1, 1} << params({1, 1}, {0, 0}, {1, 1}, 1);
    QTest::newRow((s + " 1x1 strided").c_str())
        << d << Shape{1, 4, 5, 6} << Shape{2, 2, 1, 1} << params({2, 3}, {0, 0}, {1, 1}, 2);
    QTest::newRow((s + " per-axis").c_str())
        << d << Shape{1, 2, 6, 5} << Shape{3, 2, 3, 2} << params({1, 2}, {2, 0}, {1, 3}, 1);
    QTest::newRow((s + " depthwise").c_str())
        << d << Shape{2, 3, 4, 5} << Shape{6, 1, 2, 2} << params({1, 1}, {1, 1}, {1, 1}, 3);
  }
}

void TestConv::testForward() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Shape, wShape);
  QFETCH(Conv2dParams, p);
  const Tensor x = randomTensor(dtype, xShape, 1), w = randomTensor(dtype, wShape, 2);
  const Tensor expected = naiveConv(x, w, p).y.astype(dtype);
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{conv2d(in[0], in[1], p)}; },
      {x, w});
  QVERIFY(closeTo(out[0], expected, tolerance(dtype), tolerance(dtype)));
}

void TestConv::testGradOpValues_data() {
  testForward_data();
}

void TestConv::testGradOpValues() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Shape, wShape);
  QFETCH(Conv2dParams, p);
  const Tensor x = randomTensor(dtype, xShape, 3), w = randomTensor(dtype, wShape, 4);
  const Shape yShape = naiveConv(x, w, p).y.shape();
  const Tensor gy = randomTensor(dtype, yShape, 5);
  const Naive expected = naiveConv(x, w, p, &gy);
  const auto out = evaluate(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{
            conv2dGradInputs(in[1], in[2], shapeI(in[0], 2), shapeI(in[0], 3), p),
            conv2dGradWeights(in[0], in[2], shapeI(in[1], 2), shapeI(in[1], 3), p)};
      },
      {x, w, gy});
  QVERIFY(closeTo(out[0], expected.gx.astype(dtype), tolerance(dtype), tolerance(dtype)));
  QVERIFY(closeTo(out[1], expected.gw.astype(dtype), tolerance(dtype), tolerance(dtype)));
}

// With stride 2, inputs of height 5 and 6 both give OH = 3: the explicit H decides gx's shape, and
// the extra row (never read by the convolution) gets a zero gradient.
void TestConv::testGradInputsStrideAmbiguity() {
  const Conv2dParams p = params({2, 2}, {1, 1}, {1, 1}, 1);
  const Tensor w = randomTensor(DType::Float64, {2, 3, 3, 3}, 6);
  for (std::int64_t h : {5, 6}) {
    const Tensor x = randomTensor(DType::Float64, {1, 3, h, 7}, 7);
    const Tensor gy = randomTensor(DType::Float64, {1, 2, 3, 4}, 8);
    const Naive expected = naiveConv(x, w, p, &gy);
    QCOMPARE(expected.y.shape(), (Shape{1, 2, 3, 4}));
    const auto out = evaluate(
        [&](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{
              conv2dGradInputs(in[0], in[1], constantInt(h), constantInt(7), p)};
        },
        {w, gy});
    QVERIFY(closeTo(out[0], expected.gx, 1e-10, 1e-10));
  }
}

void TestConv::testInferShape_data() {
  testForward_data();
}

void TestConv::testInferShape() {
  QFETCH(DType, dtype);
  QFETCH(Shape, xShape);
  QFETCH(Shape, wShape);
  QFETCH(Conv2dParams, p);
  const Tensor x = randomTensor(dtype, xShape, 1), w = randomTensor(dtype, wShape, 2);
  const Tensor gy = randomTensor(dtype, naiveConv(x, w, p).y.shape(), 3);
  InferShapeOptions quiet;
  quiet.warnOnSquareInputs = false;  // the filters are square on purpose in some cases
  TSCOPE_CHECK(checkInferShape(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{
            conv2d(in[0], in[1], p),
            conv2dGradInputs(in[1], in[2], shapeI(in[0], 2), shapeI(in[0], 3), p),
            conv2dGradWeights(in[0], in[2], shapeI(in[1], 2), shapeI(in[1], 3), p)};
      },
      {x, w, gy}, quiet));
}

void TestConv::testGrad_data() {
  QTest::addColumn<DType>("dtype");
  QTest::addColumn<Conv2dParams>("p");
  for (DType d : {DType::Float64, DType::Float32}) {
    const std::string s(dtypeName(d));
    QTest::newRow((s + " stride2 pad1 dil2 groups2").c_str())
        << d << params({2, 2}, {1, 1}, {2, 2}, 2);
    QTest::newRow((s + " plain").c_str()) << d << params({1, 1}, {0, 0}, {1, 1}, 1);
  }
}

void TestConv::testGrad() {
  QFETCH(DType, dtype);
  QFETCH(Conv2dParams, p);
  const Tensor x = randomTensor(dtype, {2, 4, 5, 7}, 11),
               w = randomTensor(dtype, {6, 4 / p.groups, 3, 2}, 12);
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{conv2d(in[0], in[1], p)}; },
      {x, w}));
}

// The gradient ops are bilinear; their gradients are the other two ops.
void TestConv::testGradOfGradOps() {
  const Conv2dParams p = params({2, 1}, {1, 0}, {1, 2}, 2);
  const Tensor x = randomTensor(DType::Float64, {2, 4, 5, 7}, 13);
  const Tensor w = randomTensor(DType::Float64, {6, 2, 3, 2}, 14);
  const Tensor gy = randomTensor(DType::Float64, naiveConv(x, w, p).y.shape(), 15);
  const std::int64_t H = 5, W = 7, KH = 3, KW = 2;
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{
            conv2dGradInputs(in[0], in[1], constantInt(H), constantInt(W), p)};
      },
      {w, gy}));
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{
            conv2dGradWeights(in[0], in[1], constantInt(KH), constantInt(KW), p)};
      },
      {x, gy}));
  // Second order through conv2d itself: d/dx of sum(grad(sum(conv(x, w)^2), w)).
  TSCOPE_CHECK(verifyGrad(
      [&](const std::vector<VarPtr>& in) {
        VarPtr y = conv2d(in[0], in[1], p);
        VarPtr gw = conv2dGradWeights(in[0], y, shapeI(in[1], 2), shapeI(in[1], 3), p);
        return std::vector<VarPtr>{gw};
      },
      {x, w}));
}

void TestConv::testRopLop() {
  const Conv2dParams p = params({2, 2}, {1, 1}, {2, 2}, 2);
  const Tensor x = randomTensor(DType::Float64, {2, 4, 5, 7}, 16);
  const Tensor w = randomTensor(DType::Float64, {6, 2, 3, 2}, 17);
  TSCOPE_CHECK(checkRopLop(
      [&](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{conv2d(in[0], in[1], p)}; },
      {x, w}));
  const Tensor gy = randomTensor(DType::Float64, naiveConv(x, w, p).y.shape(), 18);
  TSCOPE_CHECK(checkRopLop(
      [&](const std::vector<VarPtr>& in) {
        return std::vector<VarPtr>{
            conv2dGradInputs(in[0], in[1], constantInt(5), constantInt(7), p),
            conv2dGradWeights(in[2], in[1], constantInt(3), constantInt(2), p)};
      },
      {w, gy, x}));
}

void TestConv::testStaticOutputType() {
  // H: (5 + 2 - 2*2 - 1) / 2 + 1 = 2; W: (7 + 2 - 2*1 - 1) / 2 + 1 = 4.
  const Conv2dParams p = params({2, 2}, {1, 1}, {2, 2}, 2);
  VarPtr y =
      conv2d(symbolic(DType::Float32, {2, 4, 5, 7}), symbolic(DType::Float32, {6, 2, 3, 2}), p);
  QCOMPARE(y->type(), TensorType(DType::Float32, {2, 6, 2, 4}));
  VarPtr yu = conv2d(symbolic(DType::Float32, {kUnknownDim, 4, kUnknownDim, 7}),
                     symbolic(DType::Float32, {6, 2, 3, 2}), p);
  QCOMPARE(yu->type(), TensorType(DType::Float32, {kUnknownDim, 6, kUnknownDim, 4}));
  VarPtr gx =
      conv2dGradInputs(symbolic(DType::Float64, {6, 2, 3, 2}),
                       symbolic(DType::Float64, {2, 6, 2, 4}), constantInt(5), constantInt(7), p);
  QCOMPARE(gx->type(), TensorType(DType::Float64, {2, 4, 5, 7}));
  VarPtr gw =
      conv2dGradWeights(symbolic(DType::Float64, {2, 4, 5, 7}),
                        symbolic(DType::Float64, {2, 6, 2, 4}), constantInt(3), constantInt(2), p);
  QCOMPARE(gw->type(), TensorType(DType::Float64, {6, 2, 3, 2}));
}

void TestConv::testBadInputs() {
  const Conv2dParams p = params({1, 1}, {0, 0}, {1, 1}, 2);
  auto expectTypeError = [](auto&& build, std::initializer_list<const char*> parts) {
    try {
      build();
      QFAIL("expected a TypeError");
    } catch (const TypeError& e) {
      const QString msg = QString::fromStdString(e.what());
      for (const char* part : parts) QVERIFY2(msg.contains(QLatin1String(part)), qPrintable(msg));
    }
  };
  // Channels that do not fit the groups: the message names both types.
  expectTypeError(
      [&] {
        conv2d(symbolic(DType::Float32, {2, 4, 5, 7}, "x"),
               symbolic(DType::Float32, {6, 3, 3, 2}, "w"), p);
      },
      {"Conv2d", "input 1 ('w')", "(O, 2, KH, KW)", "(2, 4, 5, 7)", "(6, 3, 3, 2)"});
  // O not divisible by groups.
  expectTypeError(
      [&] {
        conv2d(symbolic(DType::Float32, {2, 4, 5, 7}), symbolic(DType::Float32, {5, 2, 3, 2}), p);
      },
      {"divisible by groups=2", "(5, 2, 3, 2)"});
  // Wrong rank, dtype mismatch, integer input.
  expectTypeError(
      [&] {
        conv2d(symbolic(DType::Float32, {4, 5, 7}, "x"), symbolic(DType::Float32, {6, 2, 3, 2}));
      },
      {"input 0 ('x')", "4-d float32 or float64", "(4, 5, 7)"});
  expectTypeError(
      [&] {
        conv2d(symbolic(DType::Float32, {2, 4, 5, 7}), symbolic(DType::Float64, {6, 4, 3, 2}, "w"));
      },
      {"input 1 ('w')", "4-d float32", "float64"});
  expectTypeError(
      [&] {
        conv2d(symbolic(DType::Int32, {2, 4, 5, 7}), symbolic(DType::Int32, {6, 4, 3, 2}));
      },
      {"input 0", "int32"});
  // Filters larger than the padded input.
  expectTypeError(
      [&] {
        conv2d(symbolic(DType::Float32, {2, 4, 2, 7}), symbolic(DType::Float32, {6, 4, 3, 2}));
      },
      {"no larger than the padded input", "(2, 4, 2, 7)"});
  // Gradient ops: sizes must be 0-d int64; O must match.
  expectTypeError(
      [&] {
        conv2dGradInputs(symbolic(DType::Float32, {6, 2, 3, 2}),
                         symbolic(DType::Float32, {2, 6, 3, 6}), constant(5.0, DType::Float32),
                         constantInt(7), p);
      },
      {"input 2", "height (a 0-d int64 tensor)"});
  expectTypeError(
      [&] {
        conv2dGradInputs(symbolic(DType::Float32, {6, 2, 3, 2}),
                         symbolic(DType::Float32, {2, 5, 3, 6}, "gy"), constantInt(5),
                         constantInt(7), p);
      },
      {"input 1 ('gy')", "O matching the filters", "(2, 5, 3, 6)"});
  expectTypeError(
      [&] {
        conv2dGradWeights(symbolic(DType::Float32, {2, 4, 5, 7}),
                          symbolic(DType::Float32, {3, 6, 3, 6}, "gy"), constantInt(3),
                          constantInt(2), p);
      },
      {"input 1 ('gy')", "N matching the input"});
}

void TestConv::testBadRuntimeShapes() {
  // Unknown static shapes: the mismatch surfaces when the function runs, naming both shapes.
  const Conv2dParams p = params({1, 1}, {0, 0}, {1, 1}, 2);
  VarPtr x = Variable::create(TensorType::ofRank(DType::Float64, 4), "x");
  VarPtr w = Variable::create(TensorType::ofRank(DType::Float64, 4), "w");
  Function f = compile({x, w}, {conv2d(x, w, p)});
  try {
    f({randomTensor(DType::Float64, {2, 4, 5, 7}, 1),
       randomTensor(DType::Float64, {6, 3, 3, 2}, 2)});
    QFAIL("expected an error");
  } catch (const std::exception& e) {
    const QString msg = QString::fromStdString(e.what());
    QVERIFY2(
        msg.contains("(2, 4, 5, 7)") && msg.contains("(6, 3, 3, 2)") && msg.contains("groups=2"),
        qPrintable(msg));
  }
}

void TestConv::testProps() {
  const Conv2dParams p = params({2, 1}, {1, 0}, {1, 3}, 2);
  const OpRegistry& reg = defaultOpRegistry();
  for (OpPtr op : {OpPtr(std::make_shared<Conv2d>(p)), OpPtr(std::make_shared<Conv2dGradInputs>(p)),
                   OpPtr(std::make_shared<Conv2dGradWeights>(p))}) {
    OpPtr back = reg.make(op->name(), op->props());
    QVERIFY2(back->equals(*op), qPrintable(QString::fromStdString(op->str())));
  }
  QCOMPARE(QString::fromStdString(Conv2d(p).str()),
           QStringLiteral("Conv2d{dilation=[1,3],groups=2,padding=[1,0],stride=[2,1]}"));
  // Missing keys take the defaults; an integer reads as a pair.
  OpPtr d = reg.make("Conv2d", {{"stride", 2}});
  QCOMPARE(static_cast<const Conv2d&>(*d).params().stride, (std::array<std::int64_t, 2>{2, 2}));
  QCOMPARE(static_cast<const Conv2d&>(*d).params().groups, std::int64_t{1});
  for (const nlohmann::json& bad :
       {nlohmann::json{{"stride", 0}}, nlohmann::json{{"padding", -1}},
        nlohmann::json{{"dilation", {1, 2, 3}}}, nlohmann::json{{"groups", "2"}},
        nlohmann::json{{"strides", 1}}, nlohmann::json::array()}) {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reg.make("Conv2d", bad));
  }
}

TSCOPE_TEST_MAIN(TestConv)
#include "tst_conv.moc"

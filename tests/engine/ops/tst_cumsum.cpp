// CumSum: values against a plain loop on 3x4x5 tensors for every axis, exclusive and reverse, in
// float32, float64, int32 and float16; a strided input; int8 wrapping like int8 additions;
// inferShape on unknown dims; the gradient (the running sum the other way) and R-op in float32
// and float64; bad axis and bool input.
#include "engine/graph/errors.h"
#include "engine/ops/reduce/reduce.h"
#include "shape_test_support.h"
#include "test_main.h"

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

// Per line along axis, the running sum in double, in the order and with the offset the flags say.
Tensor referenceCumsum(const Tensor& x, int axis, bool exclusive, bool reverse) {
  Tensor out(DType::Float64, x.shape());
  const std::int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  Shape lines = x.shape();
  lines[static_cast<std::size_t>(axis)] = 1;
  for (std::int64_t flat = 0; flat < shapeNumel(lines); ++flat) {
    std::vector<std::int64_t> at(lines.size());
    for (std::size_t d = lines.size(), rest = static_cast<std::size_t>(flat); d-- > 0;) {
      at[d] = static_cast<std::int64_t>(rest) % lines[d];
      rest /= static_cast<std::size_t>(lines[d]);
    }
    double acc = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      at[static_cast<std::size_t>(axis)] = reverse ? n - 1 - s : s;
      const double v = x.at(at);
      if (!exclusive) acc += v;
      out.set(at, acc);
      if (exclusive) acc += v;
    }
  }
  return out.astype(x.dtype());
}

}  // namespace

class TestCumSum : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::Float32;
    QTest::newRow("float64") << DType::Float64;
    QTest::newRow("int32") << DType::Int32;
    QTest::newRow("float16") << DType::Float16;
  }
  void testValues() {
    QFETCH(DType, dtype);
    // Small integers: every partial sum is exact in each dtype, so the comparison is exact.
    const Tensor x =
        randomTensor(DType::Float64, {3, 4, 5}, 11, -4.0, 4.0).astype(DType::Int32).astype(dtype);
    for (int axis = -3; axis < 3; ++axis)
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          auto out = evaluate(
              [&](const std::vector<VarPtr>& in) {
                return std::vector<VarPtr>{cumsum(in[0], axis, exclusive, reverse)};
              },
              {x});
          QVERIFY2(
              closeTo(out[0], referenceCumsum(x, axis < 0 ? axis + 3 : axis, exclusive, reverse), 0,
                      0),
              (std::to_string(axis) + (exclusive ? " exclusive" : "") + (reverse ? " reverse" : ""))
                  .c_str());
        }
  }

  void testStridedAndWrapping() {
    const Tensor x = values(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
    // A transposed (strided) input: axis 0 of x.T runs along x's rows.
    VarPtr w = symbol(DType::Float32, {3, 2}, "w");
    QCOMPARE(performNode(cumsum(w, 0), {x.transpose()})[0].toDoubles(),
             (std::vector<double>{1, 4, 3, 9, 6, 15}));
    // int8 sums wrap as int8 additions would: 100 + 100 = -56.
    VarPtr b = symbol(DType::Int8, {3}, "b");
    QCOMPARE(performNode(cumsum(b, 0), {values(DType::Int8, {3}, {100, 100, 100})})[0].toDoubles(),
             (std::vector<double>{100, -56, 44}));
  }

  void testInferShapeGradRop_data() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::Float32;
    QTest::newRow("float64") << DType::Float64;
  }
  void testInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {3, 4, 5}, 5);
    for (int axis = 0; axis < 3; ++axis)
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          GraphBuilder build = [=](const std::vector<VarPtr>& in) {
            return std::vector<VarPtr>{cumsum(in[0], axis, exclusive, reverse) * 1.5};
          };
          TSCOPE_CHECK(checkInferShape(build, {x}));
          TSCOPE_CHECK(verifyGrad(build, {x}));
          TSCOPE_CHECK(checkRopLop(build, {x}));
        }
    // Unknown dims keep their symbolic sizes.
    VarPtr u = symbol(DType::Float32, {kUnknownDim, 4}, "u");
    QCOMPARE(cumsum(u, 1)->type(), u->type());
  }

  void testErrors() {
    VarPtr x = symbol(DType::Float32, {3, 4}, "x");
    QVERIFY(messageOf([&] { cumsum(x, 2); }).find("axis 2 is out of range") != std::string::npos);
    QVERIFY(messageOf([&] { cumsum(x, -3); }).find("axis -3 is out of range") != std::string::npos);
    QVERIFY(messageOf([&] { cumsum(symbol(DType::Bool, {3}), 0); }).find("a numeric tensor") !=
            std::string::npos);
  }
};

TSCOPE_TEST_MAIN(TestCumSum)
#include "tst_cumsum.moc"

// NonZero: positions against a row-major scan on 3x4x5 tensors in float32, float64, int32,
// float16 and bool (NaN counts as non-zero); a 1-d input; no non-zero element gives (rank, 0); a
// strided input; no inferShape (the count depends on the values); x[mask] built on it, whose
// gradient and R-op reach x through the gather while NonZero stays disconnected; 0-d input.
#include "engine/graph/errors.h"
#include "engine/ops/basic.h"
#include "engine/ops/shape/nonzero.h"
#include "engine/ops/shape/shape.h"
#include "shape_test_support.h"
#include "test_main.h"

#include <cmath>
#include <limits>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

// The coordinates of every non-zero element in row-major order, as rows of a (rank, count) matrix.
Tensor referenceNonzero(const Tensor& x) {
  std::vector<std::vector<std::int64_t>> found;
  const Shape& shape = x.shape();
  for (std::int64_t flat = 0; flat < x.numel(); ++flat) {
    std::vector<std::int64_t> at(shape.size());
    for (std::size_t d = shape.size(), rest = static_cast<std::size_t>(flat); d-- > 0;) {
      at[d] = static_cast<std::int64_t>(rest) % shape[d];
      rest /= static_cast<std::size_t>(shape[d]);
    }
    const double v = x.at(at);
    if (v != 0 || std::isnan(v)) found.push_back(at);
  }
  const auto count = static_cast<std::int64_t>(found.size());
  std::vector<double> flat;
  for (std::size_t a = 0; a < shape.size(); ++a)
    for (const auto& at : found) flat.push_back(static_cast<double>(at[a]));
  return values(DType::Int64, {static_cast<std::int64_t>(shape.size()), count}, flat);
}

}  // namespace

class TestNonZero : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::Float32;
    QTest::newRow("float64") << DType::Float64;
    QTest::newRow("int32") << DType::Int32;
    QTest::newRow("float16") << DType::Float16;
    QTest::newRow("bool") << DType::Bool;
  }
  void testValues() {
    QFETCH(DType, dtype);
    // Integers from -2 to 2: about two in five are zero.
    Tensor x = randomTensor(DType::Float64, {3, 4, 5}, 7, -2.4, 2.4).astype(DType::Int32);
    if (isFloat(dtype)) x = x.astype(DType::Float64);
    if (isFloat(dtype)) x.set({1, 2, 3}, std::numeric_limits<double>::quiet_NaN());
    x = x.astype(dtype);
    const auto out = evaluate(
        [](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{nonzero(in[0])}; }, {x});
    QVERIFY(closeTo(out[0], referenceNonzero(x), 0, 0));
    if (isFloat(dtype)) QVERIFY(out[0].shape()[1] > 0);
  }

  void testShapesAndStrides() {
    VarPtr v = symbol(DType::Float32, {6}, "v");
    QCOMPARE(
        performNode(nonzero(v), {values(DType::Float32, {6}, {0, 3, 0, -1, 0, 2})})[0].toDoubles(),
        (std::vector<double>{1, 3, 5}));
    VarPtr z = symbol(DType::Float32, {2, 3}, "z");
    const Tensor none =
        performNode(nonzero(z), {values(DType::Float32, {2, 3}, {0, 0, 0, 0, 0, 0})})[0];
    QCOMPARE(none.shape(), (Shape{2, 0}));
    // A transposed (strided) input: positions are row-major in the transposed view.
    const Tensor x = values(DType::Float32, {2, 3}, {1, 0, 2, 0, 3, 0});
    VarPtr w = symbol(DType::Float32, {3, 2}, "w");
    QCOMPARE(performNode(nonzero(w), {x.transpose()})[0].toDoubles(),
             (std::vector<double>{0, 1, 2, 0, 1, 0}));
    QCOMPARE(nonzero(symbol(DType::Float32, {kUnknownDim, 4}))->type(),
             TensorType(DType::Int64, {2, kUnknownDim}));
  }

  void testInferShapeAndMaskGrad_data() {
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float32") << DType::Float32;
    QTest::newRow("float64") << DType::Float64;
  }
  void testInferShapeAndMaskGrad() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {3, 4, 5}, 5);
    // The column count is data: inferShape declines, and ShapeFeature reads it at run time.
    const VarPtr at = nonzero(symbol(dtype, {3, 4, 5}));
    const std::vector<ShapeExpr> shapes{{constantInt(3), constantInt(4), constantInt(5)}};
    QVERIFY_THROWS_EXCEPTION(NotImplementedError,
                             at->owner()->op().inferShape(*at->owner(), shapes));
    // x[x > 0.2] * 1.5: the gradient flows through the gather; the mask is held fixed.
    GraphBuilder masked = [](const std::vector<VarPtr>& in) {
      const VarPtr at = nonzero(gt(in[0], scalarLike(0.2, in[0])));
      std::vector<AdvIdx> index;
      for (int a = 0; a < 3; ++a) index.emplace_back(select(at, 0, IdxBound(std::int64_t{a})));
      return std::vector<VarPtr>{advancedSubtensor(in[0], index) * 1.5};
    };
    TSCOPE_CHECK(verifyGrad(masked, {x}));
    TSCOPE_CHECK(checkRopLop(masked, {x}));
  }

  void testErrors() {
    QVERIFY(messageOf([&] {
              nonzero(symbol(DType::Float32, {}));
            }).find("expected a tensor of rank 1 or more, found") != std::string::npos);
  }
};

TSCOPE_TEST_MAIN(TestNonZero)
#include "tst_nonzero.moc"

// TopK: values and indices against a stable sort on 3x5x4 tensors for every axis, largest and
// smallest; ties keep the lower index first; NaN counts as the largest; integer dtypes; strided
// input; inferShape on unknown dims; the gradient (scattered back to the chosen positions) and
// R-op in float32 and float64; bad k and axis.
#include "engine/graph/errors.h"
#include "engine/ops/shape/shape.h"
#include "engine/ops/shape/topk.h"
#include "shape_test_support.h"
#include "test_main.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The reference: per line along axis, positions stably sorted by value (NaN largest).
std::pair<Tensor, Tensor> referenceTopk(const Tensor& x, std::int64_t k, int axis, bool largest) {
  Shape outShape = x.shape();
  outShape[static_cast<std::size_t>(axis)] = k;
  Tensor values(x.dtype(), outShape), indices(DType::Int64, outShape);
  const std::int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  Shape lines = x.shape();
  lines[static_cast<std::size_t>(axis)] = 1;
  for (std::int64_t flat = 0; flat < shapeNumel(lines); ++flat) {
    std::vector<std::int64_t> at(lines.size());
    for (std::size_t d = lines.size(), rest = static_cast<std::size_t>(flat); d-- > 0;) {
      at[d] = static_cast<std::int64_t>(rest) % lines[d];
      rest /= static_cast<std::size_t>(lines[d]);
    }
    auto value = [&](std::int64_t j) {
      at[static_cast<std::size_t>(axis)] = j;
      return x.at(at);
    };
    auto key = [&](std::int64_t j) {  // larger key first (the data has no infinities)
      const double v = value(j);
      if (std::isnan(v)) return largest ? kInf : -kInf;
      return largest ? v : -v;
    };
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t a, std::int64_t b) { return key(a) > key(b); });
    for (std::int64_t j = 0; j < k; ++j) {
      const double v = value(order[static_cast<std::size_t>(j)]);
      at[static_cast<std::size_t>(axis)] = j;
      values.set(at, v);
      indices.set(at, static_cast<double>(order[static_cast<std::size_t>(j)]));
    }
  }
  return {values, indices};
}

void addFloatRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}

}  // namespace

class TestTopK : public QObject {
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
    // Few distinct values, so every line has ties.
    const Tensor x =
        randomTensor(dtype, {3, 5, 4}, 7, -3.0, 3.0).astype(DType::Int32).astype(dtype);
    for (int axis = 0; axis < 3; ++axis)
      for (bool largest : {true, false})
        for (std::int64_t k : {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}}) {
          auto out = evaluate(
              [&](const std::vector<VarPtr>& in) {
                auto [v, i] = topk(in[0], k, axis, largest);
                return std::vector<VarPtr>{v, i};
              },
              {x});
          auto [values, indices] = referenceTopk(x, k, axis, largest);
          QVERIFY(closeTo(out[0], values, 0, 0));
          QVERIFY(closeTo(out[1], indices, 0, 0));
        }
  }

  void testNanAndStrided() {
    Tensor x = values(DType::Float32, {2, 4}, {1, NAN, 3, 3, -1, -2, NAN, 0});
    VarPtr v = symbol(DType::Float32, {2, 4}, "x");
    auto [top, at] = topk(v, 2, 1);
    std::vector<Tensor> out = performNode(top, {x});
    QCOMPARE(out[1].toDoubles(), (std::vector<double>{1, 2, 2, 3}));
    QVERIFY(std::isnan(out[0].at({0, 0})));
    QCOMPARE(out[0].at({0, 1}), 3.0);
    auto [low, lowAt] = topk(v, 3, 1, false);
    QCOMPARE(performNode(low, {x})[1].toDoubles(), (std::vector<double>{0, 2, 3, 1, 0, 3}));
    // A transposed (strided) input: axis 0 of x.T is x's axis 1.
    VarPtr w = symbol(DType::Float32, {4, 2}, "w");
    auto [colTop, colAt] = topk(w, 1, 0);
    std::vector<Tensor> cols = performNode(colTop, {x.transpose()});
    QCOMPARE(cols[1].toDoubles(), (std::vector<double>{1, 2}));
  }

  void testInferShapeGradRop_data() { addFloatRows(); }
  void testInferShapeGradRop() {
    QFETCH(DType, dtype);
    // Distinct values, so the chosen positions do not move under the finite differences.
    Tensor x = iota(dtype, {3, 5, 4}, 0.37);
    const std::vector<double> shuffled = [&] {
      std::vector<double> v = x.toDoubles();
      std::mt19937 rng(3);
      std::shuffle(v.begin(), v.end(), rng);
      return v;
    }();
    x = Tensor::fromDoubles(dtype, {3, 5, 4}, shuffled);
    for (int axis = 0; axis < 3; ++axis) {
      GraphBuilder build = [axis](const std::vector<VarPtr>& in) {
        auto [v, i] = topk(in[0], 2, axis, axis != 1);
        return std::vector<VarPtr>{v * 1.5};
      };
      TSCOPE_CHECK(checkInferShape(build, {x}));
      TSCOPE_CHECK(verifyGrad(build, {x}));
      TSCOPE_CHECK(checkRopLop(build, {x}));
    }
    GraphBuilder indices = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{topk(in[0], 3, -1).second};
    };
    TSCOPE_CHECK(checkInferShape(indices, {x}));
  }

  void testErrors() {
    VarPtr x = symbol(DType::Float32, {3, 4}, "x");
    QVERIFY(messageOf([&] { topk(x, 5, 1); }).find("at least 5 elements along axis 1") !=
            std::string::npos);
    QVERIFY(messageOf([&] { topk(x, 1, 2); }).find("axis 2 is out of range") != std::string::npos);
    QVERIFY(messageOf([&] { topk(x, -1, 0); }).find("k must be >= 0") != std::string::npos);
    QVERIFY(messageOf([&] { topk(symbol(DType::Bool, {3}), 1, 0); }).find("a numeric tensor") !=
            std::string::npos);
    // An unknown axis size is checked when the op runs.
    VarPtr u = symbol(DType::Float32, {kUnknownDim}, "u");
    auto [v, i] = topk(u, 4, 0);
    QVERIFY(messageOf([&] {
              performNode(v, {randomTensor(DType::Float32, {3}, 1)});
            }).find("larger than axis 0") != std::string::npos);
  }
};

TSCOPE_TEST_MAIN(TestTopK)
#include "tst_topk.moc"

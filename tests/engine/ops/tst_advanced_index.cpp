// AdvancedSubtensor / AdvancedIncSubtensor (numpy's advanced indexing with several integer arrays
// broadcast together, mixed with slices): values against numpy's rules written out as loops on a
// 2x3x4 tensor (adjacent arrays stay in place, separated ones go first), duplicates, bounds and
// broadcast messages, inferShape, gradients and R-ops in float32 and float64, props.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/shape/shape.h"
#include "shape_test_support.h"
#include "test_main.h"

using namespace tscope::test;

Q_DECLARE_METATYPE(tscope::engine::DType)

namespace {
void addFloatRows() {
  QTest::addColumn<DType>("dtype");
  QTest::newRow("float32") << DType::Float32;
  QTest::newRow("float64") << DType::Float64;
}

const auto none = std::nullopt;

Tensor ints(Shape shape, std::vector<double> v) {
  return Tensor::fromDoubles(DType::Int64, std::move(shape), v);
}

// The index patterns of the tests, on inputs (x, i, j).
std::vector<VarPtr> patterns(const std::vector<VarPtr>& in) {
  const VarPtr &x = in[0], &i = in[1], &j = in[2];
  return {advancedSubtensor(x, {i, Idx::all(), j}),                     // x[i, :, j]: B first
          advancedSubtensor(x, {Idx::all(), i, j}),                     // x[:, i, j]: B in place
          advancedSubtensor(x, {Idx::slice(none, none, -1), i}),        // x[::-1, i]
          advancedSubtensor(x, {Idx::all(), Idx::slice(1, none), j})};  // x[:, 1:, j]
}
}  // namespace

class TestAdvancedIndex : public QObject {
  Q_OBJECT

 private slots:
  void testValues_data() { addFloatRows(); }
  void testValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    const std::vector<std::int64_t> i{1, 0, -1};  // axis of size 2 or 3 depending on the pattern
    const Tensor iv = ints({3}, {1, 0, -1}), jv = ints({2, 1}, {3, 0});
    auto out = evaluate(patterns, {x, iv, jv});
    // x[i, :, j]: B = (2, 3) (j (2, 1) with i (3,)), separated by a slice: out[a, b, m] = x[i[b],
    // m, j[a]].
    std::vector<double> e0;
    const std::int64_t jj[] = {3, 0};
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int m = 0; m < 3; ++m) e0.push_back(x.at({(i[b] + 2) % 2, m, jj[a]}));
    QVERIFY(closeTo(out[0], values(dtype, {2, 3, 3}, e0)));
    // x[:, i, j]: adjacent, B in place: out[n, a, b] = x[n, i[b], j[a]].
    std::vector<double> e1;
    for (int n = 0; n < 2; ++n)
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 3; ++b) e1.push_back(x.at({n, (i[b] + 3) % 3, jj[a]}));
    QVERIFY(closeTo(out[1], values(dtype, {2, 2, 3}, e1)));
    // x[::-1, i]: out[n, b, k] = x[1 - n, i[b], k].
    std::vector<double> e2;
    for (int n = 0; n < 2; ++n)
      for (int b = 0; b < 3; ++b)
        for (int k = 0; k < 4; ++k) e2.push_back(x.at({1 - n, (i[b] + 3) % 3, k}));
    QVERIFY(closeTo(out[2], values(dtype, {2, 3, 4}, e2)));
    // x[:, 1:, j]: out[n, m, a, 0] = x[n, 1 + m, j[a]].
    std::vector<double> e3;
    for (int n = 0; n < 2; ++n)
      for (int m = 0; m < 2; ++m)
        for (int a = 0; a < 2; ++a) e3.push_back(x.at({n, 1 + m, jj[a]}));
    QVERIFY(closeTo(out[3], values(dtype, {2, 2, 2, 1}, e3)));
  }

  void testZeroDimArrayAndStrided() {
    // A 0-d array indexes like an integer (B = ()); a transposed x takes its strides into account.
    const Tensor x = iota(DType::Float64, {4, 3, 2}).transpose();  // (2, 3, 4)
    VarPtr v = symbol(DType::Float64, {2, 3, 4}, "x"), k = symbol(DType::Int64, {}, "k");
    Tensor out = performNode(advancedSubtensor(v, {Idx::all(), k}),
                             {x, Tensor::scalar(DType::Int64, -1)})[0];
    QCOMPARE(out.shape(), (Shape{2, 4}));
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t m = 0; m < 4; ++m) QCOMPARE(out.at({n, m}), x.at({n, 2, m}));
  }

  void testStaticTypes() {
    VarPtr x = symbol(DType::Float32, {2, 3, 4}, "x");
    VarPtr i = symbol(DType::Int64, {5}, "i"), j = symbol(DType::Int32, {kUnknownDim, 1}, "j");
    QCOMPARE(advancedSubtensor(x, {i, Idx::all(), j})->type().shape(),
             (std::vector<std::int64_t>{kUnknownDim, 5, 3}));
    QCOMPARE(advancedSubtensor(x, {Idx::slice(none, none, 2), i})->type().shape(),
             (std::vector<std::int64_t>{1, 5, 4}));
    std::string msg = messageOf([&] { advancedSubtensor(x, {i, symbol(DType::Int64, {3}, "k")}); });
    QVERIFY2(msg.find("the index arrays cannot be broadcast together: TensorType(int64, (5,)), "
                      "TensorType(int64, (3,))") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { advancedSubtensor(x, {symbol(DType::Float32, {3}, "f")}); });
    QVERIFY2(msg.find("index array 0 ('f'): expected an integer tensor") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { advancedSubtensor(x, {Idx::all()}); });
    QVERIFY2(msg.find("needs at least one index array") != std::string::npos, msg.c_str());
  }

  void testRuntimeErrors() {
    GraphBuilder build = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{advancedSubtensor(in[0], {Idx::all(), in[1], in[2]})};
    };
    const Tensor x = iota(DType::Float32, {2, 3, 4});
    std::string msg = messageOf([&] {
      evaluate(build, {x, ints({2}, {0, 3}), ints({2}, {0, 0})});
    });
    QVERIFY2(msg.find("index 3 is out of bounds for axis 1 with size 3") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { evaluate(build, {x, ints({2}, {0, 1}), ints({3}, {0, 0, 0})}); });
    QVERIFY2(msg.find("the index arrays of shapes (2), (3) cannot be broadcast together") !=
                     std::string::npos ||
                 msg.find("the index arrays of shapes (2,), (3,) cannot be broadcast together") !=
                     std::string::npos,
             msg.c_str());
  }

  void testInferShapeGradRop_data() { addFloatRows(); }
  void testInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 3, 4}, 101);
    const Tensor iv = ints({3}, {1, 0, -1}), jv = ints({2, 1}, {3, 3});  // duplicates in j
    TSCOPE_CHECK(checkInferShape(patterns, {x, iv, jv}));
    TSCOPE_CHECK(verifyGrad(patterns, {x, iv, jv}));
    TSCOPE_CHECK(checkRopLop(patterns, {x, iv, jv}));
  }

  // --- AdvancedIncSubtensor ----------------------------------------------------------------------

  void testIncSetValues_data() { addFloatRows(); }
  void testIncSetValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {2, 3, 4});
    const Tensor iv = ints({3}, {1, 0, 1}), jv = ints({3}, {2, 2, 0});  // (1, 2) twice
    const Tensor y = iota(dtype, {2, 3}, 1.0, 100.0);  // x[:, i, j] has shape (2, 3)
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{
              advancedIncSubtensor(in[0], in[3], {Idx::all(), in[1], in[2]}),
              advancedSetSubtensor(in[0], in[3], {Idx::all(), in[1], in[2]}),
              setSubtensor(advancedSubtensor(in[0], {Idx::all(), in[1], in[2]}),
                           constant(-1.0, in[0]->type().dtype()))};
        },
        {x, iv, jv, y});
    std::vector<double> inc = x.toDoubles(), set = x.toDoubles(), fill = x.toDoubles();
    const int is[] = {1, 0, 1}, js[] = {2, 2, 0};
    for (int n = 0; n < 2; ++n)
      for (int b = 0; b < 3; ++b) {
        const auto flat = static_cast<std::size_t>(n * 12 + is[b] * 4 + js[b]);
        inc[flat] += y.at({n, b});
        set[flat] = y.at({n, b});
        fill[flat] = -1;
      }
    QVERIFY(closeTo(out[0], values(dtype, {2, 3, 4}, inc)));
    QVERIFY(closeTo(out[1], values(dtype, {2, 3, 4}, set)));
    QVERIFY(closeTo(out[2], values(dtype, {2, 3, 4}, fill)));
  }

  void testInplace() {
    const AdvancedIndex pattern({AdvEntry{true, {}, {}, {}}});
    auto op = std::make_shared<AdvancedIncSubtensor>(pattern, false, true);
    QCOMPARE(op->destroyMap(), (DestroyMap{{0, {0}}}));
    QCOMPARE(op->str(), std::string("AdvancedIncSubtensor{[],inplace}"));
    VarPtr v = symbol(DType::Float32, {3, 2}, "x"), y = symbol(DType::Float32, {}, "y"),
           i = symbol(DType::Int64, {2}, "i");
    Tensor x = iota(DType::Float32, {3, 2});
    Tensor out = performNode(op->operator()({v, y, i}),
                             {x, Tensor::scalar(DType::Float32, 1.0), ints({2}, {2, 2})})[0];
    QVERIFY(out.sharesStorageWith(x));
    QVERIFY(closeTo(x, values(DType::Float32, {3, 2}, {0, 1, 2, 3, 6, 7})));
  }

  void testIncInferShapeGradRop_data() { addFloatRows(); }
  void testIncInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {2, 5, 4}, 111);
    const Tensor iv = ints({3}, {1, 0, 1}), jv = ints({3}, {2, 2, 0});
    GraphBuilder inc = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{
          advancedIncSubtensor(in[0], in[3], {in[1], Idx::all(), in[2]})};  // (3, 5)
    };
    const Tensor y = randomTensor(dtype, {3, 5}, 112);
    TSCOPE_CHECK(checkInferShape(inc, {x, iv, jv, y}));
    TSCOPE_CHECK(verifyGrad(inc, {x, iv, jv, y}));
    TSCOPE_CHECK(checkRopLop(inc, {x, iv, jv, y}));
    // Set on distinct positions; y broadcast (one row for every selected position).
    GraphBuilder set = [](const std::vector<VarPtr>& in) {
      return std::vector<VarPtr>{
          advancedSetSubtensor(in[0], in[3], {Idx::all(), in[1], in[2]})};  // (2, 3)
    };
    const Tensor distinct = ints({3}, {0, 1, 2}), row = randomTensor(dtype, {3}, 113);
    TSCOPE_CHECK(verifyGrad(set, {x, distinct, jv, row}));
    TSCOPE_CHECK(checkRopLop(set, {x, distinct, jv, row}));
  }

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    VarPtr x = symbol(DType::Float32, {2, 3, 4}, "x"), i = symbol(DType::Int64, {3}, "i");
    VarPtr sub = advancedSubtensor(x, {Idx::slice(1, none, 2), i});
    const auto& op = static_cast<const AdvancedSubtensor&>(sub->owner()->op());
    QCOMPARE(op.str(), std::string("AdvancedSubtensor{1::2,[]}"));
    QVERIFY(registry.make("AdvancedSubtensor", op.props())->equals(op));
    const OpPtr inc = std::make_shared<AdvancedIncSubtensor>(op.index(), true, true);
    QVERIFY(registry.make("AdvancedIncSubtensor", inc->props())->equals(*inc));
    std::string msg = messageOf([&] {
      registry.make("AdvancedSubtensor", {{"idx_list", {"array", {{"start", "?"}}}}});
    });
    QVERIFY2(msg.find("a slice bound must be null or an integer, found \"?\"") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { registry.make("AdvancedSubtensor", {{"idx_list", {{{"start", 1}}}}}); });
    QVERIFY2(msg.find("needs at least one index array") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestAdvancedIndex)
#include "tst_advanced_index.moc"

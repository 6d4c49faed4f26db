// AdvancedSubtensor1 (x[idx] along axis 0, take along any axis) and AdvancedIncSubtensor1
// (inc/set with duplicate indices): values against loops, negative indices, bounds messages,
// inferShape, gradients and R-ops in float32 and float64, inplace, props through the registry.
#include "engine/graph/errors.h"
#include "engine/graph/op_registry.h"
#include "engine/ops/reduce/reduce.h"
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

Tensor indices(std::vector<double> v, DType dtype = DType::Int64) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::fromDoubles(dtype, {n}, v);
}

GraphBuilder binary(std::function<VarPtr(const VarPtr&, const VarPtr&)> f) {
  return [f](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{f(in[0], in[1])}; };
}
GraphBuilder ternary(std::function<VarPtr(const VarPtr&, const VarPtr&, const VarPtr&)> f) {
  return [f](const std::vector<VarPtr>& in) { return std::vector<VarPtr>{f(in[0], in[1], in[2])}; };
}
}  // namespace

class TestAdvancedSubtensor : public QObject {
  Q_OBJECT

 private slots:
  void testGatherValues_data() { addFloatRows(); }
  void testGatherValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {4, 2, 3});
    const std::vector<double> idx{3, -4, 0, 3, 1};
    auto out =
        evaluate(binary([](const VarPtr& v, const VarPtr& i) { return advancedSubtensor1(v, i); }),
                 {x, indices(idx)});
    std::vector<double> expected;
    for (double r : idx) {
      const std::int64_t row =
          r < 0 ? static_cast<std::int64_t>(r) + 4 : static_cast<std::int64_t>(r);
      for (std::int64_t j = 0; j < 2; ++j)
        for (std::int64_t k = 0; k < 3; ++k) expected.push_back(x.at({row, j, k}));
    }
    QVERIFY(closeTo(out[0], values(dtype, {5, 2, 3}, expected)));
    // A strided input (transposed) and an int32 index vector.
    const Tensor xt = iota(dtype, {3, 2, 4}).transpose();  // (4, 2, 3), not contiguous
    VarPtr v = symbol(dtype, {4, 2, 3}, "x"), i = symbol(DType::Int32, {kUnknownDim}, "i");
    Tensor strided = performNode(advancedSubtensor1(v, i), {xt, indices({2, 0}, DType::Int32)})[0];
    QCOMPARE(strided.shape(), (Shape{2, 2, 3}));
    QCOMPARE(strided.at({0, 1, 2}), xt.at({2, 1, 2}));
    QCOMPARE(strided.at({1, 0, 1}), xt.at({0, 0, 1}));
  }

  void testTake() {
    const Tensor x = iota(DType::Float64, {2, 3, 4});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{take(in[0], in[1], 1), take(in[0], in[1], -1)};
        },
        {x, indices({2, 0, 2, 1, 1})});
    QCOMPARE(out[0].shape(), (Shape{2, 5, 4}));
    QCOMPARE(out[0].at({1, 0, 3}), x.at({1, 2, 3}));
    QCOMPARE(out[0].at({0, 3, 2}), x.at({0, 1, 2}));
    QCOMPARE(out[1].shape(), (Shape{2, 3, 5}));
    QCOMPARE(out[1].at({1, 2, 1}), x.at({1, 2, 0}));
    TSCOPE_CHECK(
        checkInferShape(binary([](const VarPtr& v, const VarPtr& i) { return take(v, i, 1); }),
                        {x, indices({2, 0, 2, 1, 1})}));
  }

  void testGatherInferShapeGradRop_data() { addFloatRows(); }
  void testGatherInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {4, 2, 3}, 61);
    const Tensor idx = indices({3, -1, 0, 3, 1});  // duplicates: their gradients add up
    GraphBuilder build =
        binary([](const VarPtr& v, const VarPtr& i) { return advancedSubtensor1(v, i); });
    TSCOPE_CHECK(checkInferShape(build, {x, idx}));
    TSCOPE_CHECK(verifyGrad(build, {x, idx}));
    TSCOPE_CHECK(checkRopLop(build, {x, idx}));
    GraphBuilder taken = binary([](const VarPtr& v, const VarPtr& i) { return take(v, i, 2); });
    TSCOPE_CHECK(verifyGrad(taken, {x, indices({2, 2, 0})}));
    TSCOPE_CHECK(checkRopLop(taken, {x, indices({2, 2, 0})}));
  }

  void testGatherGradAccumulatesDuplicates() {
    VarPtr v = symbol(DType::Float64, {kUnknownDim, kUnknownDim}, "x"),
           i = symbol(DType::Int64, {kUnknownDim}, "i");
    VarPtr g = grad(sum(advancedSubtensor1(v, i)), v);
    auto out = evaluate({v, i}, {g}, {iota(DType::Float64, {3, 2}), indices({2, 0, 2, -1})});
    QVERIFY(closeTo(out[0], values(DType::Float64, {3, 2}, {1, 1, 0, 0, 3, 3})));
  }

  void testOutOfBounds() {
    GraphBuilder build =
        binary([](const VarPtr& v, const VarPtr& i) { return advancedSubtensor1(v, i); });
    std::string msg = messageOf([&] {
      evaluate(build, {iota(DType::Float32, {4, 2}), indices({0, 7})});
    });
    QVERIFY2(msg.find("AdvancedSubtensor1: index 7 is out of bounds for axis 0 with size 4") !=
                 std::string::npos,
             msg.c_str());
    msg = messageOf([&] { evaluate(build, {iota(DType::Float32, {4, 2}), indices({-5})}); });
    QVERIFY2(msg.find("index -5 is out of bounds for axis 0 with size 4") != std::string::npos,
             msg.c_str());
    GraphBuilder inc = ternary([](const VarPtr& v, const VarPtr& y, const VarPtr& i) {
      return advancedIncSubtensor1(v, y, i);
    });
    msg = messageOf([&] {
      evaluate(inc, {iota(DType::Float32, {4, 2}), iota(DType::Float32, {2}), indices({4})});
    });
    QVERIFY2(msg.find("AdvancedIncSubtensor1: index 4 is out of bounds for axis 0 with size 4") !=
                 std::string::npos,
             msg.c_str());
  }

  void testBadTypes() {
    VarPtr x = symbol(DType::Float32, {4, 2}, "x");
    std::string msg = messageOf([&] { advancedSubtensor1(x, symbol(DType::Float32, {3}, "f")); });
    QVERIFY2(msg.find("input 1 ('f'): expected a 1-d integer index vector, found "
                      "TensorType(float32, (3,))") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] { advancedSubtensor1(x, symbol(DType::Int64, {3, 1}, "m")); });
    QVERIFY2(msg.find("expected a 1-d integer index vector") != std::string::npos, msg.c_str());
    msg = messageOf([&] {
      advancedSubtensor1(symbol(DType::Float32, {}, "s"), symbol(DType::Int64, {3}, "i"));
    });
    QVERIFY2(msg.find("input 0 ('s'): expected a tensor of rank 1 or more") != std::string::npos,
             msg.c_str());
    msg = messageOf([&] {
      advancedIncSubtensor1(x, symbol(DType::Float32, {3}, "y"), symbol(DType::Int64, {5}, "i"));
    });
    QVERIFY2(
        msg.find("input 1 ('y'): expected a tensor that broadcasts to x[idx] of shape (5, 2)") !=
            std::string::npos,
        msg.c_str());
  }

  // --- AdvancedIncSubtensor1 ---------------------------------------------------------------------

  void testIncSetValues_data() { addFloatRows(); }
  void testIncSetValues() {
    QFETCH(DType, dtype);
    const Tensor x = iota(dtype, {4, 3});
    const Tensor y = iota(dtype, {4, 3}, 1.0, 100.0);
    const Tensor idx = indices({1, -1, 1, 0});
    auto out = evaluate(
        [](const std::vector<VarPtr>& in) {
          return std::vector<VarPtr>{advancedIncSubtensor1(in[0], in[1], in[2]),
                                     advancedSetSubtensor1(in[0], in[1], in[2]),
                                     advancedIncSubtensor1(in[0], in[3], in[2]),
                                     incSubtensor(advancedSubtensor1(in[0], in[2]), in[1])};
        },
        {x, y, idx, values(dtype, {3}, {1, 2, 3})});
    std::vector<double> inc = x.toDoubles(), set = x.toDoubles(), row = x.toDoubles();
    const int rows[] = {1, 3, 1, 0};
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) {
        const auto flat = static_cast<std::size_t>(rows[k] * 3 + j);
        inc[flat] += y.at({k, j});
        set[flat] = y.at({k, j});  // rows in order: the last write to a row wins
        row[flat] += j + 1;
      }
    QVERIFY(closeTo(out[0], values(dtype, {4, 3}, inc)));
    QVERIFY(closeTo(out[1], values(dtype, {4, 3}, set)));
    QVERIFY(closeTo(out[2], values(dtype, {4, 3}, row)));
    QVERIFY(closeTo(out[3], values(dtype, {4, 3}, inc)));
  }

  void testIncStridedAndMixedDtypes() {
    // A non-contiguous x and an int32 y added into float64 take the general path.
    VarPtr v = symbol(DType::Float64, {3, 2}, "x"), y = symbol(DType::Int32, {2, 2}, "y");
    VarPtr i = symbol(DType::Int64, {2}, "i");
    const Tensor xt = iota(DType::Float64, {2, 3}).transpose();
    Tensor out =
        performNode(advancedIncSubtensor1(v, y, i),
                    {xt, values(DType::Int32, {2, 2}, {10, 20, 30, 40}), indices({2, 2})})[0];
    // xt = [[0, 3], [1, 4], [2, 5]]; row 2 gets both rows of y.
    QVERIFY(closeTo(out, values(DType::Float64, {3, 2}, {0, 3, 1, 4, 42, 65})));
  }

  void testInplace() {
    auto op = std::make_shared<AdvancedIncSubtensor1>(false, true);
    QCOMPARE(op->destroyMap(), (DestroyMap{{0, {0}}}));
    QCOMPARE(op->str(), std::string("AdvancedIncSubtensor1{inplace}"));
    VarPtr v = symbol(DType::Float32, {3, 2}, "x"), y = symbol(DType::Float32, {}, "y"),
           i = symbol(DType::Int64, {2}, "i");
    Tensor x = iota(DType::Float32, {3, 2});
    Tensor out = performNode(op->operator()({v, y, i}),
                             {x, Tensor::scalar(DType::Float32, 1.0), indices({0, 0})})[0];
    QVERIFY(out.sharesStorageWith(x));
    QVERIFY(closeTo(x, values(DType::Float32, {3, 2}, {2, 3, 2, 3, 4, 5})));
    QVERIFY(std::make_shared<AdvancedIncSubtensor1>(true)->destroyMap().empty());
  }

  void testIncInferShapeGradRop_data() { addFloatRows(); }
  void testIncInferShapeGradRop() {
    QFETCH(DType, dtype);
    const Tensor x = randomTensor(dtype, {4, 3}, 71), y = randomTensor(dtype, {5, 3}, 72);
    const Tensor idx = indices({2, 0, -2, 3, 0});
    GraphBuilder inc = ternary([](const VarPtr& v, const VarPtr& w, const VarPtr& i) {
      return advancedIncSubtensor1(v, w, i);
    });
    GraphBuilder set = ternary([](const VarPtr& v, const VarPtr& w, const VarPtr& i) {
      return advancedSetSubtensor1(v, w, i);
    });
    TSCOPE_CHECK(checkInferShape(inc, {x, y, idx}));
    TSCOPE_CHECK(verifyGrad(inc, {x, y, idx}));
    TSCOPE_CHECK(checkRopLop(inc, {x, y, idx}));
    // Set without duplicate rows (with duplicates only the last write reaches the output).
    const Tensor distinct = indices({2, 0, -1});
    const Tensor z = randomTensor(dtype, {3, 3}, 73);
    TSCOPE_CHECK(verifyGrad(set, {x, z, distinct}));
    TSCOPE_CHECK(checkRopLop(set, {x, z, distinct}));
    // y broadcast to every selected row: its gradient sums the rows.
    const Tensor row = randomTensor(dtype, {3}, 74);
    TSCOPE_CHECK(verifyGrad(inc, {x, row, idx}));
  }

  void testPropsRoundTrip() {
    const OpRegistry& registry = defaultOpRegistry();
    const OpPtr ops[] = {std::make_shared<AdvancedSubtensor1>(),
                         std::make_shared<AdvancedIncSubtensor1>(true, true),
                         std::make_shared<AdvancedIncSubtensor1>(false)};
    for (const OpPtr& op : ops)
      QVERIFY2(registry.make(op->name(), op->props())->equals(*op), op->str().c_str());
    std::string msg = messageOf([&] { registry.make("AdvancedIncSubtensor1", {{"set", true}}); });
    QVERIFY2(msg.find("unknown prop \"set\"") != std::string::npos, msg.c_str());
  }
};

TSCOPE_TEST_MAIN(TestAdvancedSubtensor)
#include "tst_advanced_subtensor.moc"
